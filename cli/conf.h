/* SPDX-License-Identifier: GPL-2.0 */
/*
 * conf.h - a router's whole configuration in the CLI's own words: read from
 * a file (xdpr restore, xdprd), read from the running router (xdpr save),
 * printed back, and applied to the router as a difference.
 */
#ifndef XDPR_CONF_H
#define XDPR_CONF_H

#include <stdio.h>
#include <sys/socket.h>
#include "cli.h"

enum conf_on_stop { CONF_STOP_KEEP = 0, CONF_STOP_DETACH = 1 };
enum conf_on_reload { CONF_RELOAD_GUARD = 0, CONF_RELOAD_FORCE = 1 };

struct conf_link {
	char name[IF_NAMESIZE];
	enum xdpr_mode mode;
	bool force;             /* "link attach ... force": attach over netfilter rules */
	size_t line;
	bool gone;              /* conf_read: attached once, not there now (kept by name) */
	__u32 old_ifindex;
};

struct conf_nat {
	char dev[IF_NAMESIZE];
	struct xdpr_nat_rule r; /* flags, src, pool, ports */
	size_t line;
};

struct conf_npt {          /* nat add npt DEV inside PREFIX outside PREFIX */
	char dev[IF_NAMESIZE];
	struct xdpr_npt_rule r; /* plen, prefixes, adjustments (xdpr_npt_make) */
	size_t line;
};

/* "nat add binat DEV inside PREFIX outside PREFIX" (cli/binat.c) */
struct conf_binat {
	struct xdpr_binat_rule r; /* ifname, in_net, out_net, plen */
	size_t line;
};

/* "export ipfix|netflow9 ADDR:PORT" and its settings (xdprd only: daemon/export.c) */
#define CONF_EXPORT_MAX      8
#define CONF_EXPORT_ACTIVE   60  /* seconds: a long flow is reported this often */
#define CONF_EXPORT_INACTIVE 15  /* seconds: a flow idle this long is reported and forgotten */
#define CONF_EXPORT_TMAX     86400

enum conf_export_fmt { CONF_EXPORT_IPFIX = 1, CONF_EXPORT_NF9 = 2 };

struct conf_collector {
	enum conf_export_fmt fmt;
	struct sockaddr_storage addr; /* AF_INET or AF_INET6, port set */
	char text[64];                /* ADDR:PORT as conf_print writes it ([ADDR]:PORT for IPv6) */
	size_t line;
};

struct conf_export {
	int n;
	struct conf_collector coll[CONF_EXPORT_MAX];
	__u32 active, inactive;       /* seconds, 1 to CONF_EXPORT_TMAX */
	__u32 sample;                 /* 1:N packet sampling of the meter */
	size_t active_line, inactive_line, sample_line;
	bool nat_events;              /* "export nat-events on": NAT event records (IPFIX) */
	size_t nat_events_line;
};

/* "ddos ..." lines (xdprd only: daemon/ddos.c) */
#define CONF_DDOS_PROT_MAX 256
#define CONF_DDOS_PPS      20000   /* FastNetMon's defaults, per host */
#define CONF_DDOS_MBPS     1000
#define CONF_DDOS_WINDOW   5       /* seconds averaged */
#define CONF_DDOS_WINDOW_MAX 60
#define CONF_DDOS_BAN      1900    /* seconds */
#define CONF_DDOS_BAN_MAX  (30 * 86400)
#define CONF_DDOS_TABLE    666     /* kernel routing table of the blackhole routes */

struct conf_ddos_prot {
	int family;
	__u8 addr[16];
	int plen;
	size_t line;
};

struct conf_ddos {
	int nprot;
	struct conf_ddos_prot prot[CONF_DDOS_PROT_MAX];
	__u64 pps, mbps;        /* thresholds per host; 0: not that one */
	__u32 window, ban_time, sample, table;
	__u32 action;           /* XDPR_DDOS_F_DROP and/or XDPR_DDOS_F_BLACKHOLE */
	bool sources;           /* "ddos ban-sources on": sources over a threshold are banned too */
	size_t pps_line, mbps_line, window_line, ban_line, sample_line, table_line, action_line,
	       sources_line;
};

bool conf_ddos_same(const struct conf_ddos *a, const struct conf_ddos *b);

struct conf {
	int nlink;
	struct conf_link link[XDPR_MAX_IFACES];
	struct xdpr_cfg knobs;  /* timeouts, host_limit, nat_sess; the rest unused */
	int nnat;
	struct conf_nat nat[XDPR_NAT_MAX_RULES];
	int nnpt;
	struct conf_npt npt[XDPR_NPT_MAX];
	int nbinat;
	struct conf_binat binat[XDPR_BINAT_MAX];
	size_t nroute, route_cap;
	struct xdpr_route_spec *route;
	size_t *route_line;
	struct xdpr_flt_list flt; /* rules, sets, policy */
	size_t *flt_line, flt_cap;
	enum conf_on_stop on_stop; /* xdprd only: what stopping the daemon does */
	enum conf_on_reload on_reload; /* xdprd only: whether a reload may drop NAT or all rules */
	struct conf_export exp;   /* xdprd only: flow export */
	struct conf_ddos ddos;    /* xdprd only: DDoS detection */
	/* where each once-only word was given (0: not given), for errors */
	size_t policy_line, on_stop_line, on_reload_line, knob_line[8];
	char name[256];         /* "FILE " for errors about a line; "" for a running state */
	unsigned int flags;     /* conf_parse's */
	char waiting[512];      /* CONF_P_PRESENT: the devices left out, space separated */
};

/* What conf_apply changed. */
struct conf_diff {
	int attached, detached, nat_added, nat_replaced, nat_deleted;
	int routes_changed;     /* routes added, replaced or deleted */
	bool routes_loaded;     /* the whole table was rebuilt (many changes) */
	bool knobs, resized, filter;
	bool rolled_back;       /* a change failed and what was done before it was undone */
	bool undo_failed;       /* ... and undoing them failed too: the state is in between */
};

/*
 * conf_parse flags.  CONF_P_PRESENT (xdprd): a device that does not exist
 * now leaves out what needs it (its link attach, routes through it) and is
 * named in c->waiting, instead of failing the file.
 */
#define CONF_P_PRESENT 1u
/*
 * CONF_P_GUARD (xdprd's reloads): conf_apply refuses, changing nothing, a
 * file that would detach an interface that has NAT rules, delete every NAT
 * rule or delete every filter rule, unless it says "on-reload force"; err
 * says what the file would do.
 */
#define CONF_P_GUARD 2u

void conf_init(struct conf *c);
void conf_free(struct conf *c);
/*
 * A configuration file (name: for errors): 0, or EXIT_USAGE / EXIT_FAIL with
 * "NAME line N: ..." in err.  Devices a route names must exist (the kernel
 * gives the route its ifindex); every other device may be missing.
 */
int conf_parse(FILE *f, const char *name, unsigned int flags, struct conf *c, char *err, size_t len);
/* The running state of an open router (x->nlinks == 0: nothing attached). */
int conf_read(struct xdpr *x, struct conf *c, char *err, size_t len);
/* c in the words conf_parse reads back (xdpr save). */
void conf_print(FILE *f, const struct conf *c);
/*
 * Make the router of x (opened with XDPR_O_LOCK, attached or not) run
 * want, changing only what differs.  Nothing is applied unless the whole
 * file checks out against this namespace; a change the kernel then
 * refuses undoes the changes made before it (d->rolled_back).  x is
 * re-opened on the way (attach); 0, or EXIT_FAIL with err.
 */
int conf_apply(struct xdpr *x, const struct conf *want, struct conf_diff *d, char *err, size_t len);

/*
 * "ADDR:PORT" or "[ADDR]:PORT" (a literal address, port 1-65535) into ss:
 * 0, -1 without ":PORT", -2 for a bad port, -3 for a bad address.
 */
int conf_addr_port(const char *s, struct sockaddr_storage *ss);
/* The same collectors (in order) and settings: nothing to restart. */
bool conf_export_same(const struct conf_export *a, const struct conf_export *b);

/* xdpr save, xdpr restore */
/* 1:1 NAT lines (cli/binat.c): parse one, read the router's, print, apply (deletions, then additions). */
int conf_add_binat(struct conf *c, int argc, char **argv, size_t line, char *err, size_t len);
int conf_read_binat(struct xdpr *x, struct conf *c);
void conf_print_binat(FILE *f, const struct conf *c);
int conf_change_binat(struct xdpr *x, const struct conf *want, const struct conf *have, bool add,
		      struct conf_diff *d, char *err, size_t len);

int do_save(int argc, char **argv);
int do_restore(int argc, char **argv);

#endif
