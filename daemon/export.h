/* SPDX-License-Identifier: GPL-2.0 */
/*
 * export.h - flow export (IPFIX, NetFlow v9) from xdprd: a cache of what
 * was reported per flow, delta records on timeouts and TCP FIN/RST, one
 * encoder for both formats, one non-blocking UDP socket per collector.
 * export_tick reads its flows through a source callback: the daemon's is
 * the loader's flow table (xdpr_flow_foreach), a test's is a table of its own.
 */
#ifndef XDPR_EXPORT_H
#define XDPR_EXPORT_H

#include <stdbool.h>
#include <linux/types.h>
#include "libxdpr.h"
#include "conf.h"

/* What export_tick and the encoder take as the time: both clocks, read together. */
struct export_clock {
	__u64 mono_ns;  /* CLOCK_MONOTONIC (xdpr_flow.first_ns/last_ns are its coarse reading, within a tick) */
	__u64 real_ns;  /* CLOCK_REALTIME */
};

/* Where the flows come from (xdpr_flow_foreach / xdpr_flow_delete, or a test's). */
struct export_source {
	int (*foreach)(void *ctx, int (*cb)(const struct xdpr_flow *f, void *arg), void *arg);
	int (*del)(void *ctx, const struct xdpr_flow *f);   /* may be NULL */
	void *ctx;
};

#define EXPORT_MSG_MAX     1400      /* bytes of a message (the UDP payload), at most */
#define EXPORT_TMPL_SECS   60        /* templates again after this many seconds ... */
#define EXPORT_TMPL_MSGS   20        /* ... or this many messages without them */
#define EXPORT_FIN_IDLE_NS 2000000000ULL /* a TCP flow with FIN or RST is deleted once idle this long */
#define EXPORT_LOG_NS      60000000000ULL /* one log line per collector per minute, at most */
#define EXPORT_DOMAIN      1         /* IPFIX observation domain, NetFlow v9 source id */

/* IPFIX / NetFlow v9 template ids (both formats: data set id = template id) */
enum { EXPORT_T_IP4 = 256, EXPORT_T_IP6 = 257, EXPORT_T_NAT4 = 258 };

struct export_collector {
	struct conf_collector conf;
	int fd;                 /* non-blocking UDP, connected */
	bool connected;
	__u32 seq;              /* IPFIX: data records sent; NetFlow v9: messages sent */
	__u64 tmpl_ns;          /* templates last sent (mono ns; 0: never) */
	unsigned int tmpl_msgs; /* messages since */
	/* counters (metrics) */
	__u64 records, messages, bytes, send_errors;
	/* errors since the last log line, and when that was */
	__u64 unlogged, log_ns;
	int last_errno;
	__u64 nat_records;      /* NAT event records sent (in records too) */
};

struct export_entry;

struct exporter {
	struct conf_export conf;
	int ncoll;
	struct export_collector coll[CONF_EXPORT_MAX];
	/* the cache: every flow seen, what was reported of it */
	struct export_entry **tab;
	size_t tab_size, nflows;
	__u32 gen;
	/* counters (metrics) */
	__u64 ticks, tick_errors, flows_deleted, delete_errors;
	/* log lines (prio as syslog's); NULL: none */
	void (*log)(int prio, const char *msg);
	int last_source_err;    /* logged once until it changes */
	__u64 nat_events_in;    /* NAT event records handed to export_nat_events */
};

/* An exporter for c's collectors (sockets opened); NULL with err. */
struct exporter *export_create(const struct conf_export *c, char *err, size_t len);
void export_destroy(struct exporter *ex);
/* What from reported of each flow to to (a reload: a flow's next record stays a delta); from's is to's. */
void export_take_cache(struct exporter *to, struct exporter *from);
/*
 * Read every flow from src, send what the rules say is due (active and
 * inactive timeout, FIN/RST), delete from src the flows that ended.  Never
 * blocks; 0, or the source's negative errno (nothing sent then).
 */
int export_tick(struct exporter *ex, const struct export_clock *now, const struct export_source *src);

/*
 * NAT events (the fast path's ring, loader/natlog.c) as IPFIX NAT event
 * records, RFC 8158 (templates EXPORT_T_NATEV4, and EXPORT_T_NATQ4 for
 * quota exceeded), to every IPFIX collector when conf.nat_events is on;
 * NetFlow v9 collectors get none (the natEvent IEs are IPFIX's).  Sent at
 * once, never queued; never blocks.
 */
enum { EXPORT_T_NATEV4 = 259, EXPORT_T_NATQ4 = 260 };
void export_nat_events(struct exporter *ex, const struct export_clock *now, const struct xdpr_natlog_rec *r,
		       size_t n);

#endif
