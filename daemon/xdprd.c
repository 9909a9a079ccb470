// SPDX-License-Identifier: GPL-2.0
/*
 * xdprd - the xdpr router as a service.
 *
 *   xdprd [--config FILE] [--metrics ADDR:PORT|none] [--gc SECS] [--foreground]
 *
 * A client of libxdpr like the CLI, not a second source of truth: the
 * state stays in the kernel's maps.  It
 *   - applies its file (the CLI's words, cli/conf.c) at start and on SIGHUP,
 *     as a difference against the running state;
 *   - follows nftables (its NFNLGRP_NFTABLES notifications, and every sweep
 *     for iptables-legacy, which sends none): rules XDP would bypass send
 *     forwarded traffic through the kernel until they are gone
 *     (xdpr_nf_follow), said in the log;
 *   - asks every port again whether it can transmit XDP frames (a veth's
 *     peer gains or loses GRO without a notification here) every sweep
 *     and on link events;
 *   - follows the kernel over rtnetlink (libmnl): an address added or
 *     removed rebuilds the router's own-address exemptions, a configured
 *     interface that appears again (deleted and re-created) is attached
 *     again and its routes re-resolved, a MAC change is written to the
 *     maps, a neighbour change refreshes the routes that keep a gateway's MAC;
 *   - has the kernel resolve the neighbours the fast path asks for, keeps
 *     them resolved, and marks next hops that fail to (daemon/neigh.c);
 *   - sweeps expired NAT sessions, idle bindings and flow states every
 *     --gc seconds;
 *   - exports flow records (IPFIX, NetFlow v9: daemon/export.c) to the
 *     file's "export" collectors, reading the flow meter every second;
 *   - serves Prometheus metrics (libmicrohttpd) on --metrics;
 *   - tells systemd where it is (sd_notify: READY, RELOADING, STOPPING).
 * It takes the router's lock only while it changes something, so the CLI
 * works beside it.  Stopping it leaves the fast path running (on-stop keep,
 * the default) or detaches every interface (on-stop detach).
 */
#define _GNU_SOURCE /* accept4, struct ucred */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/netfilter/nfnetlink.h>
#include <libmnl/libmnl.h>
#include <microhttpd.h>
#include <systemd/sd-daemon.h>
#include "conf.h"
#include "export.h"
#include "ddos.h"
#include "neigh.h"
#include "out.h"
#include "prom.h"

#include "version.h" /* XDPR_VERSION, XDPR_BPF_ID (Makefile) */

#define DEF_CONFIG  "/etc/xdpr/xdpr.conf"
#define DEF_METRICS "127.0.0.1:9477"
#define DEF_GC      10          /* seconds between sweeps */
#define SETTLE_MS   100         /* netlink events are gathered this long before acting */
#define EXPORT_MS   1000        /* the flow exporter's tick */

struct cli_opts opts; /* the CLI's options: xdprd prints nothing through out.c */

int fail(int code, const char *fmt, ...)
{
	(void)fmt;
	return code;
}

static struct {
	const char *config;
	const char *metrics;        /* ADDR:PORT or "none" */
	unsigned int gc_secs;
	bool foreground;
	bool journal;               /* stderr is the journal: lines carry a priority */
	char *text;                 /* the file as last read (start, SIGHUP) */
	size_t text_len;
	enum conf_on_stop on_stop;
	char waiting[512];
	pthread_mutex_t mu;         /* one router action at a time: main loop or a scrape */
	/* the daemon's own counters (metrics) */
	unsigned long long applies, apply_errors, events[3], gc_runs, gc_sessions, gc_bindings,
			   gc_flows, gc_errors, follows, scrapes, gc_last_ms;
	bool config_ok;
	/* flow export: the exporter of the file's "export" lines (NULL: none) */
	struct exporter *exp;
	struct conf_export exp_conf;
	bool meter_pending;         /* the meter is still to be turned on (sample exp_conf.sample) */
	bool meter_ours;            /* xdprd turned it on: off again when the file stops exporting */
	int meter_err;              /* the last error turning it on (logged once) */
} d = { .config = DEF_CONFIG, .metrics = DEF_METRICS, .gc_secs = DEF_GC,
	.mu = PTHREAD_MUTEX_INITIALIZER };

enum { EV_ADDR, EV_LINK, EV_NEIGH };

/* One line per event: stderr, which systemd gives to the journal. */
static void vlogm(int prio, const char *fmt, va_list ap)
{
	char line[2048];

	vsnprintf(line, sizeof(line), fmt, ap);
	/* control characters (a device name, a file's words) never reach the log raw */
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = '?';
	if (d.journal)
		fprintf(stderr, "<%d>%s\n", prio, line);
	else
		fprintf(stderr, "xdprd: %s\n", line);
}

__attribute__((format(printf, 2, 3)))
static void logm(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlogm(prio, fmt, ap);
	va_end(ap);
}

/* daemon/neigh.c's log */
void neigh_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlogm(prio, fmt, ap);
	va_end(ap);
}

static int read_config(char **text, size_t *len, char *err, size_t elen)
{
	FILE *f = fopen(d.config, "r");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return snprintf(err, elen, "cannot open \"%s\": %s", d.config, strerror(errno)), -1;
	for (;;) {
		if (n + 4096 > cap) {
			char *m = realloc(buf, cap = cap ? 2 * cap : 65536);

			if (!m) {
				free(buf);
				fclose(f);
				return snprintf(err, elen, "out of memory"), -1;
			}
			buf = m;
		}
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err, elen, "cannot read \"%s\": %s", d.config, strerror(errno));
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	*text = buf;
	*len = n;
	return 0;
}

/* The last file read, parsed now (devices resolved now). */
static int parse_buf(const char *text, size_t text_len, struct conf *c, char *err, size_t len)
{
	/* an empty file is read as one empty line (fmemopen takes no empty buffer) */
	FILE *f = fmemopen(text_len ? (char *)text : "\n", text_len ? text_len : 1, "r");
	int ret;

	if (!f)
		return snprintf(err, len, "cannot read the configuration: %s", strerror(errno)), -1;
	ret = conf_parse(f, d.config, CONF_P_PRESENT, c, err, len);
	fclose(f);
	return ret;
}

static int parse_text(struct conf *c, char *err, size_t len)
{
	return parse_buf(d.text, d.text_len, c, err, len);
}

/*
 * The devices the file names and the ifindex each had when last looked
 * at: a link notification for one of them matters only when that changed
 * (created, re-created), not for the ones an attach or a detach of its
 * own sends.
 */
#define MAX_KNOWN 512
static struct {
	char name[IF_NAMESIZE];
	__u32 ifindex;
} known[MAX_KNOWN];
static int nknown;

static void know(const char *name)
{
	int i;

	for (i = 0; i < nknown && strcmp(known[i].name, name); i++)
		;
	if (i == nknown) {
		if (nknown == MAX_KNOWN)
			return;
		snprintf(known[nknown++].name, IF_NAMESIZE, "%s", name);
	}
	known[i].ifindex = if_nametoindex(name);
}

static void know_all(const struct conf *c)
{
	char w[sizeof(c->waiting)], *save = NULL, dev[IF_NAMESIZE];

	nknown = 0; /* the names of this file only (a reload may drop some) */
	for (int i = 0; i < c->nlink; i++)
		know(c->link[i].name);
	for (int i = 0; i < c->nnat; i++)
		know(c->nat[i].dev);
	for (size_t i = 0; i < c->nroute; i++)
		for (int k = 0; k < c->route[i].r.nnh && k < XDPR_RT_MAX_NH; k++)
			if (if_indextoname(c->route[i].r.nh[k].ifindex, dev))
				know(dev);
	snprintf(w, sizeof(w), "%s", c->waiting);
	for (char *t = strtok_r(w, " ", &save); t; t = strtok_r(NULL, " ", &save))
		know(t);
}

/* A link notification worth following: a known name with another ifindex (or none before). */
static bool link_changed(const char *name, __u32 ifindex)
{
	for (int i = 0; i < nknown; i++)
		if (!strcmp(known[i].name, name))
			return known[i].ifindex != ifindex;
	return false; /* not a device the file names */
}

static void log_lines(int prio, const char *why, const char *text);

/*
 * Open the router under the lock, finishing what a killed command left
 * (and moving port forwards onto their interface's address: logged).
 */
static int open_locked(struct xdpr *x, char *err, size_t len)
{
	int ret = xdpr_open(x, XDPR_O_LOCK);

	/* netfilter is followed by its notifications and the sweeps (nft_follow), not every close */
	x->nf_followed = true;
	if (!ret)
		ret = xdpr_nat_repair(x, NULL, 0);
	if (!ret) {
		log_lines(LOG_WARNING, NULL, x->note);
		log_lines(LOG_INFO, NULL, x->info);
		x->note[0] = x->info[0] = 0;
	}
	if (ret && ret != -ENOENT) {
		snprintf(err, len, "%s", x->err);
		xdpr_close(x);
		return -1;
	}
	return 0;
}

static void note_waiting(const struct conf *c)
{
	if (strcmp(c->waiting, d.waiting)) {
		if (c->waiting[0])
			logm(LOG_WARNING, "waiting for %s: the lines that need %s apply once %s",
			     c->waiting, strchr(c->waiting, ' ') ? "them" : "it",
			     strchr(c->waiting, ' ') ? "they exist" : "it exists");
		else if (d.waiting[0])
			logm(LOG_INFO, "no device is missing any more");
		snprintf(d.waiting, sizeof(d.waiting), "%s", c->waiting);
	}
}

/* Each line of text as one log message, after "why: " when why is given. */
static void log_lines(int prio, const char *why, const char *text)
{
	for (const char *p = text, *nl; p && *p; p = nl ? nl + 1 : p + strlen(p)) {
		nl = strchr(p, '\n');
		logm(prio, "%s%s%.*s", why ? why : "", why ? ": " : "", nl ? (int)(nl - p) : (int)strlen(p), p);
	}
}

/* ---- flow export ---- */

static void export_log(int prio, const char *msg)
{
	logm(prio, "%s", msg);
}

/* The meter on (the file exports) or off (it no longer does, and xdprd turned it on). */
static void meter_set(struct xdpr *x)
{
	int e;

	if (!d.meter_pending)
		return;
	e = d.exp ? xdpr_flow_set(x, true, d.exp_conf.sample) : xdpr_flow_set(x, false, 1);
	if (e) {
		if (e != d.meter_err)
			logm(LOG_ERR, "export: cannot turn the flow meter %s: %s", d.exp ? "on" : "off", x->err);
		d.meter_err = e;
		return; /* tried again at the next tick */
	}
	if (d.exp)
		logm(LOG_INFO, "export: flow meter on, sampling 1:%u", d.exp_conf.sample);
	d.meter_ours = d.exp != NULL;
	d.meter_pending = false;
	d.meter_err = 0;
}

/* ---- NAT event log: the fast path's ring (loader/natlog.c) to the IPFIX collectors ---- */

#define NATLOG_BATCH 256
static struct {
	struct xdpr_natlog *rd;   /* reader of the router's ring; NULL: none */
	bool ours;                /* xdprd turned logging on: off again when the file stops */
	int err;                  /* the last error (logged once) */
	struct xdpr_natlog_rec buf[NATLOG_BATCH];
	size_t n;
	unsigned long long read, lost; /* records read; lost in the fast path (ring full) */
} natlog;

/* Logging wanted: "export nat-events on" and an IPFIX collector to get the records. */
static bool natlog_wanted(void)
{
	for (int i = 0; d.exp && d.exp_conf.nat_events && i < d.exp_conf.n; i++)
		if (d.exp_conf.coll[i].fmt == CONF_EXPORT_IPFIX)
			return true;
	return false;
}

static void natlog_flush(void)
{
	struct export_clock now;
	struct timespec m, r;

	if (!natlog.n)
		return;
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	now.mono_ns = m.tv_sec * 1000000000ULL + m.tv_nsec;
	now.real_ns = r.tv_sec * 1000000000ULL + r.tv_nsec;
	if (d.exp)
		export_nat_events(d.exp, &now, natlog.buf, natlog.n);
	natlog.n = 0;
}

static int natlog_rec(const struct xdpr_natlog_rec *r, void *arg)
{
	(void)arg;
	natlog.read++;
	natlog.buf[natlog.n++] = *r;
	if (natlog.n == NATLOG_BATCH)
		natlog_flush();
	return 0;
}

/* Every record waiting, to the collectors (d.mu held). */
static void natlog_drain(void)
{
	if (!natlog.rd)
		return;
	xdpr_natlog_consume(natlog.rd);
	natlog_flush();
}

static void natlog_error(struct xdpr *x, int e, const char *what)
{
	if (e != natlog.err)
		logm(LOG_ERR, "export: cannot %s NAT event logging: %s", what, x->err);
	natlog.err = e;
}

/* Logging on with a reader of the router's ring, or off (x opened and locked). */
static void natlog_apply(struct xdpr *x)
{
	int e;

	if (!natlog_wanted()) {
		natlog_drain();
		xdpr_natlog_close(natlog.rd);
		natlog.rd = NULL;
		if (natlog.ours && x->nlinks) {
			e = xdpr_natlog_set(x, false);
			if (e) {
				natlog_error(x, e, "turn off");
				return;
			}
			logm(LOG_INFO, "export: NAT event logging off");
		}
		natlog.ours = false;
		natlog.err = 0;
		return;
	}
	if (!x->nlinks)
		return; /* nothing attached: no ring yet */
	if (!xdpr_natlog_is(natlog.rd, x)) { /* the first, or the router was attached anew */
		natlog_drain();
		xdpr_natlog_close(natlog.rd);
		natlog.rd = xdpr_natlog_open(x, natlog_rec, NULL);
		if (!natlog.rd) {
			natlog_error(x, -errno, "start");
			return;
		}
	}
	e = xdpr_natlog_set(x, true);
	if (e) {
		natlog_error(x, e, "turn on");
		return;
	}
	if (!natlog.ours)
		logm(LOG_INFO, "export: NAT event logging on (IPFIX collectors only)");
	natlog.ours = true;
	natlog.err = 0;
}

/* A tick: is the state as wanted (reader of this router's ring, flag on)?  If not, fix it. */
static void natlog_tick(void)
{
	static struct xdpr x;
	char err[512];
	bool on = false;

	if (!natlog_wanted() && !natlog.ours && !natlog.rd)
		return;
	if (xdpr_open(&x, 0)) {
		xdpr_close(&x);
		natlog_drain();
		return; /* nothing attached (or unreadable): nothing to change */
	}
	xdpr_natlog_lost(&x, &natlog.lost);
	if (natlog_wanted() && xdpr_natlog_is(natlog.rd, &x) && !xdpr_natlog_get(&x, &on) && on) {
		xdpr_close(&x);
		natlog_drain();
		return;
	}
	xdpr_close(&x);
	if (open_locked(&x, err, sizeof(err)))
		return;
	natlog_apply(&x);
	xdpr_close(&x);
	natlog_drain();
}

void ddos_log(int prio, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	logm(prio, "%s", msg);
}

/* The DDoS tick (daemon/ddos.c), under the lock of the router's namespace. */
static void ddos_run(void)
{
	static struct xdpr x;
	char err[512];

	if (!ddos_active())
		return;
	if (open_locked(&x, err, sizeof(err)))
		return;
	ddos_tick(&x);
	xdpr_close(&x);
}

/* The file's export lines (x opened and locked by apply): a new exporter when they changed. */
static void export_configure(struct xdpr *x, const struct conf_export *want, const char *why)
{
	char err[512];

	if (d.exp && conf_export_same(&d.exp_conf, want))
		return;
	if (!d.exp && !want->n)
		return;
	struct exporter *old = d.exp;

	d.exp = NULL;
	d.exp_conf = *want;
	if (want->n) {
		d.exp = export_create(want, err, sizeof(err));
	}
	if (want->n && !d.exp) {
		logm(LOG_ERR, "%s: export: %s", why, err);
	} else if (want->n) {
		d.exp->log = export_log;
		/* what was reported stays reported: the next records stay deltas */
		if (old)
			export_take_cache(d.exp, old);
		for (int i = 0; i < want->n; i++)
			logm(LOG_INFO, "%s: exporting flows to %s %s (active timeout %u s, inactive %u s)",
			     why, want->coll[i].fmt == CONF_EXPORT_IPFIX ? "ipfix" : "netflow9",
			     want->coll[i].text, want->active, want->inactive);
	} else {
		logm(LOG_INFO, "%s: flow export stopped", why);
	}
	if (want->nat_events && !natlog_wanted())
		logm(LOG_WARNING, "%s: export nat-events on, but no IPFIX collector: NetFlow v9 collectors "
		     "get no NAT events", why);
	natlog_drain(); /* the old exporter's collectors get what is waiting */
	export_destroy(old);
	d.meter_pending = d.exp || d.meter_ours;
	meter_set(x);
	natlog_apply(x);
}

/* The metered counts scaled by the sampling rate: records estimate what passed (1:N packet sampling). */
struct scaled {
	int (*cb)(const struct xdpr_flow *f, void *arg);
	void *arg;
	__u32 n;
};

static int flow_scaled(const struct xdpr_flow *f, void *arg)
{
	struct scaled *sc = arg;
	struct xdpr_flow g;

	if (sc->n <= 1)
		return sc->cb(f, sc->arg);
	g = *f;
	g.packets *= sc->n;
	g.bytes *= sc->n;
	return sc->cb(&g, sc->arg);
}

static int flow_source_foreach(void *ctx, int (*cb)(const struct xdpr_flow *f, void *arg), void *arg)
{
	struct scaled sc = { cb, arg, d.exp_conf.sample };

	return xdpr_flow_foreach(ctx, flow_scaled, &sc);
}

static int flow_source_del(void *ctx, const struct xdpr_flow *f)
{
	return xdpr_flow_delete(ctx, f);
}

/* A tick: the meter's flows to the collectors (never blocks on them: non-blocking UDP). */
static void export_run(void)
{
	static struct xdpr x;
	struct export_source src = { flow_source_foreach, flow_source_del, &x };
	struct export_clock now;
	struct timespec m, r;
	char err[512];
	int ret;

	if (!d.exp && !d.meter_pending)
		return;
	if (d.meter_pending) { /* the meter is set under the lock, like any change */
		if (open_locked(&x, err, sizeof(err)))
			return;
		meter_set(&x);
		xdpr_close(&x);
	}
	if (!d.exp)
		return;
	ret = xdpr_open(&x, 0);
	if (ret) {
		xdpr_close(&x);
		return; /* nothing attached: no flows */
	}
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	now.mono_ns = m.tv_sec * 1000000000ULL + m.tv_nsec;
	now.real_ns = r.tv_sec * 1000000000ULL + r.tv_nsec;
	export_tick(d.exp, &now, &src);
	xdpr_close(&x);
}

static void nft_follow(struct xdpr *x);

/*
 * The whole file onto the router (start, SIGHUP).  Past the start, a file
 * that would detach an interface with NAT rules or delete every NAT or
 * filter rule is refused unless it says "on-reload force" (CONF_P_GUARD).
 */
static int apply(const char *why, bool reload)
{
	static struct xdpr x;
	static struct conf c;
	struct conf_diff df;
	char err[4096];
	int ret;

	d.applies++;
	if (parse_text(&c, err, sizeof(err))) {
		logm(LOG_ERR, "%s: configuration not applied: %s", why, err);
		d.apply_errors++;
		d.config_ok = false;
		return -1;
	}
	if (reload)
		c.flags |= CONF_P_GUARD;
	d.on_stop = c.on_stop;
	know_all(&c);
	if (open_locked(&x, err, sizeof(err))) {
		logm(LOG_ERR, "%s: configuration not applied: %s", why, err);
		conf_free(&c);
		d.apply_errors++;
		d.config_ok = false;
		return -1;
	}
	/*
	 * The VLANs as the kernel has them first, as "xdpr restore" does: the
	 * file's rules may name one, and VLANs created or deleted while xdprd
	 * was not running send no notification it could follow.
	 */
	if (sync_vlans(&x) < 0)
		logm(LOG_ERR, "%s: VLANs: %s", why, x.err);
	log_lines(LOG_WARNING, why, x.note);
	log_lines(LOG_INFO, why, x.info);
	x.note[0] = x.info[0] = 0;
	ret = conf_apply(&x, &c, &df, err, sizeof(err));
	if (!ret && x.note[0])
		logm(LOG_WARNING, "%s: %s", why, x.note);
	if (!ret && x.nlinks)
		nft_follow(&x);
	if (!ret)
		export_configure(&x, &c.exp, why);
	if (!ret)
		ddos_configure(&x, &c.ddos, why);
	if (!ret)
		note_waiting(&c); /* a refused file waits for nothing */
	neigh_sync(&x);
	xdpr_close(&x);
	conf_free(&c);
	if (ret) {
		logm(LOG_ERR, "%s: configuration not applied: %s (%s)", why, err,
		     df.rolled_back ? "the changes made before it were undone" :
		     df.undo_failed ? "applied in part: see xdpr save" : "nothing changed");
		d.apply_errors++;
		d.config_ok = false;
		return -1;
	}
	d.config_ok = true;
	if (df.attached || df.detached || df.nat_added || df.nat_replaced || df.nat_deleted ||
	    df.routes_changed || df.filter || df.resized || df.knobs)
		logm(LOG_INFO, "%s: configuration applied: attached %d, detached %d; NAT rules added %d, "
		     "replaced %d, deleted %d; routes changed %d; filter %s; NAT tables %s; NAT "
		     "settings %s", why, df.attached, df.detached, df.nat_added, df.nat_replaced,
		     df.nat_deleted, df.routes_changed, df.filter ? "changed" : "unchanged",
		     df.resized ? "resized" : "kept", df.knobs ? "changed" : "unchanged");
	else
		logm(LOG_INFO, "%s: configuration applied: the router already ran it", why);
	return 0;
}

/* ---- following the kernel ---- */

#define MAX_PEND 64
#define MAX_GONE_NEIGH 256
static struct {
	bool local, macs, neigh, all, vlans, nft;
	int nlinks;
	char links[MAX_PEND][IF_NAMESIZE]; /* configured devices that appeared */
	int nneigh;
	struct {                           /* neighbour entries the kernel deleted */
		int family;
		__u32 ifindex;
		__u8 addr[16];
	} gone[MAX_GONE_NEIGH];
	bool armed;
} pend;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static long long pend_due;

static void arm(void)
{
	if (!pend.armed) {
		pend.armed = true;
		pend_due = now_ms() + SETTLE_MS;
	}
}

static int attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, IFLA_MAX > NDA_MAX ? IFLA_MAX : NDA_MAX) < 0)
		return MNL_CB_OK;
	tb[type] = a;
	return MNL_CB_OK;
}

static int nl_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[(IFLA_MAX > NDA_MAX ? IFLA_MAX : NDA_MAX) + 1] = {};

	(void)data;
	switch (nlh->nlmsg_type) {
	case RTM_NEWADDR:
	case RTM_DELADDR:
		d.events[EV_ADDR]++;
		pend.local = true;
		arm();
		break;
	case RTM_NEWLINK: {
		const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
		const char *name;

		d.events[EV_LINK]++;
		mnl_attr_parse(nlh, sizeof(*ifm), attr_cb, tb);
		if (!tb[IFLA_IFNAME])
			break;
		name = mnl_attr_get_str(tb[IFLA_IFNAME]);
		pend.macs = true; /* cheap: only changed MACs are written */
		pend.vlans = true; /* a VLAN created, up, down, its QoS maps; a port's offload */
		arm();
		if (!link_changed(name, ifm->ifi_index))
			break; /* not the file's, or the same device (an attach, a detach, a MAC change) */
		if (pend.nlinks < MAX_PEND) {
			bool dup = false;

			for (int i = 0; i < pend.nlinks; i++)
				dup |= !strcmp(pend.links[i], name);
			if (!dup)
				snprintf(pend.links[pend.nlinks++], IF_NAMESIZE, "%s", name);
		} else {
			pend.all = true;
		}
		break;
	}
	case RTM_DELLINK:
		d.events[EV_LINK]++;
		pend.local = true;
		pend.vlans = true;
		arm();
		break;
	case RTM_DELNEIGH: {
		const struct ndmsg *nd = mnl_nlmsg_get_payload(nlh);
		size_t alen = nd->ndm_family == AF_INET ? 4 : 16;

		/* kept: a MAC change flushes the device's neighbours (see follow) */
		mnl_attr_parse(nlh, sizeof(*nd), attr_cb, tb);
		if (tb[NDA_DST] && pend.nneigh < MAX_GONE_NEIGH &&
		    (nd->ndm_family == AF_INET || nd->ndm_family == AF_INET6) &&
		    mnl_attr_get_payload_len(tb[NDA_DST]) == alen) {
			pend.gone[pend.nneigh].family = nd->ndm_family;
			pend.gone[pend.nneigh].ifindex = nd->ndm_ifindex;
			memcpy(pend.gone[pend.nneigh++].addr, mnl_attr_get_payload(tb[NDA_DST]), alen);
		}
	}
		/* fall through */
	case RTM_NEWNEIGH:
		neigh_event(nlh);
		d.events[EV_NEIGH]++;
		pend.neigh = true;
		arm();
		break;
	}
	return MNL_CB_OK;
}

struct route_find {
	const struct xdpr_route_spec *want;
	int found; /* 1: the prefix, 2: the same route */
};

static int find_route(const struct xdpr_route_info *ri, void *arg)
{
	struct route_find *rf = arg;
	const struct xdpr_route_spec *a = &ri->spec, *b = rf->want;
	bool same = a->r.action == b->r.action && a->r.nnh == b->r.nnh;

	if (a->family != b->family || a->plen != b->plen || memcmp(a->addr, b->addr, 16))
		return 0;
	for (int k = 0; same && k < a->r.nnh && k < XDPR_RT_MAX_NH; k++)
		same = a->r.nh[k].ifindex == b->r.nh[k].ifindex &&
		       !memcmp(a->r.nh[k].gw, b->r.nh[k].gw, sizeof(a->r.nh[k].gw));
	rf->found = same ? 2 : 1;
	return 1;
}

/*
 * Netfilter looked at again (xdpr_nf_follow), the outcome logged when it
 * changes: rules XDP would bypass send forwarded traffic through the
 * kernel until they are gone.
 */
static void nft_follow(struct xdpr *x)
{
	static struct xdpr_nf_report nf;
	static int seen = -1;    /* the last outcome: 0, 1, 2, or -1 (unreadable) */
	char list[1024];
	size_t used = 0;
	int r = xdpr_nf_follow(x, &nf);

	if (r < 0) {
		if (seen != -1)
			logm(LOG_ERR, "netfilter: %s (forwarding stays as it was)", x->err);
		seen = -1;
		return;
	}
	if (r == seen)
		return;
	list[0] = 0;
	for (int i = 0; i < nf.n && used < sizeof(list); i++)
		used += snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", nf.f[i].what);
	if (nf.total > nf.n && used < sizeof(list))
		snprintf(list + used, sizeof(list) - used, " and %d more", nf.total - nf.n);
	if (r == 1)
		logm(LOG_WARNING, "netfilter has rules XDP would bypass: %s; forwarded traffic goes "
		     "through the kernel (pass_nft_policy) until they are gone", list);
	else if (r == 2)
		logm(LOG_WARNING, "netfilter has rules XDP bypasses (attached with force): %s", list);
	else if (seen == 1)
		logm(LOG_INFO, "netfilter has no rules XDP would bypass any more: XDP forwards again");
	seen = r;
}

/* Every port asked again whether it can transmit XDP frames; changes logged. */
static void xmit_follow(struct xdpr *x)
{
	int n;

	x->info[0] = 0;
	n = xdpr_link_reprobe(x);
	if (n < 0)
		logm(LOG_ERR, "XDP transmit: %s", x->err);
	else
		log_lines(LOG_INFO, NULL, x->info);
	x->info[0] = 0;
}

/*
 * A configured device is there (again): attach it if the file does and it
 * is not, and give the routes through it its ifindex now.  NAT rules and
 * filter rules follow the name by themselves once it is attached.
 */
static void follow_link(struct xdpr *x, struct conf *c, const char *name)
{
	static struct xdpr_attach_info info;
	const struct conf_link *l = NULL;
	__u32 idx = if_nametoindex(name);
	int routes = 0;
	char err[512];

	if (!idx)
		return;
	for (int i = 0; i < c->nlink; i++)
		if (!strcmp(c->link[i].name, name))
			l = &c->link[i];
	if (l && !xdpr_link_find(x, name)) {
		char *dev = (char *)name;

		if (xdpr_attach(x, &dev, 1, l->mode, l->force ? XDPR_F_FORCE : 0, &info)) {
			logm(LOG_ERR, "%s appeared: cannot attach it: %s", name, x->err);
			return;
		}
		d.follows++;
		if (xdpr_refresh(x)) {
			snprintf(err, sizeof(err), "%s", x->err);
			logm(LOG_ERR, "%s appeared: %s", name, err);
			return;
		}
		logm(LOG_INFO, "%s appeared (ifindex %u): attached in %s mode; its NAT and filter rules "
		     "apply again", name, idx, xdpr_mode_name(l->mode));
	}
	for (size_t i = 0; i < c->nroute; i++) {
		struct xdpr_route_spec rs = c->route[i];
		bool via = false;

		for (int k = 0; k < rs.r.nnh; k++)
			via |= rs.r.nh[k].ifindex == idx;
		if (!via)
			continue;
		struct route_find rf = { &c->route[i], 0 };

		xdpr_route_foreach(x, &c->route[i], find_route, &rf);
		if (rf.found == 2)
			continue; /* the same already */
		/* replace when the prefix is there (with a dead ifindex), add when not */
		if (xdpr_route_add(x, &rs, rf.found == 1))
			logm(LOG_ERR, "%s appeared: route not re-resolved: %s", name, x->err);
		else
			routes++;
	}
	if (routes)
		logm(LOG_INFO, "%s: %d route%s through it re-resolved", name, routes, routes == 1 ? "" : "s");
}

struct neigh_ctx {
	struct xdpr *x;
	int refreshed;
};

/* A route whose gateway's MAC is kept (IPv6 link-local): read it again if it changed. */
static int neigh_route(const struct xdpr_route_info *ri, void *arg)
{
	struct neigh_ctx *nc = arg;
	bool stale = false;

	for (int k = 0; k < ri->spec.r.nnh; k++) {
		const struct xdpr_nh *nh = &ri->spec.r.nh[k];
		__u8 mac[6];

		if (nh->flags & XDPR_NH_MAC)
			stale |= xdpr_neigh_mac(ri->spec.family, nh->gw, nh->ifindex, mac) == 1 &&
				 memcmp(mac, nh->mac, 6);
	}
	if (stale) {
		struct xdpr_route_spec rs = ri->spec;

		for (int k = 0; k < rs.r.nnh; k++)
			rs.r.nh[k].flags &= ~XDPR_NH_MAC;
		if (nc->refreshed < 0 || xdpr_route_add(nc->x, &rs, true))
			return 0;
		nc->refreshed++;
	}
	return 0;
}

static void follow(void)
{
	static struct xdpr x;
	static struct conf c;
	char err[4096];
	int n;

	/* the file did not apply (a device it needs was missing?): the whole file again */
	if ((pend.nlinks || pend.all) && !d.config_ok)
		apply("interface appeared", true);
	if (open_locked(&x, err, sizeof(err))) {
		logm(LOG_ERR, "following the kernel: %s", err);
		return;
	}
	/* VLANs first: a re-created device's routes may go through one */
	if (x.nlinks && pend.vlans) {
		n = xdpr_vlan_sync(&x);
		log_lines(LOG_WARNING, NULL, x.note);
		log_lines(LOG_INFO, NULL, x.info);
		if (n < 0)
			logm(LOG_ERR, "VLANs: %s", x.err);
		else if (n && xdpr_refresh(&x))
			logm(LOG_ERR, "VLANs: %s", x.err);
		x.note[0] = x.info[0] = 0;
	}
	if ((pend.nlinks || pend.all) && d.config_ok && !parse_text(&c, err, sizeof(err))) {
		if (pend.all) {
			for (int i = 0; i < c.nlink; i++)
				follow_link(&x, &c, c.link[i].name);
		} else {
			for (int i = 0; i < pend.nlinks; i++) /* names of the file (link_changed) */
				follow_link(&x, &c, pend.links[i]);
		}
		note_waiting(&c);
		know_all(&c);
		conf_free(&c);
	}
	if (x.nlinks && pend.local) {
		if (xdpr_local_sync(&x))
			logm(LOG_ERR, "the router's addresses changed: %s", x.err);
	}
	if (x.nlinks && pend.macs) {
		n = xdpr_link_sync(&x);
		if (n < 0)
			logm(LOG_ERR, "MAC change: %s", x.err);
		else if (n) {
			int again = 0;

			/*
			 * The kernel flushed the neighbours of a device whose MAC
			 * changed; packets translated back to inside hosts need
			 * them (drop_nat_in_no_neigh otherwise): resolve them again.
			 */
			for (int i = 0; i < pend.nneigh; i++)
				for (int k = 0; k < x.nlinks; k++)
					if (x.links[k].ifindex == pend.gone[i].ifindex &&
					    !xdpr_neigh_use(pend.gone[i].family, pend.gone[i].addr,
							    pend.gone[i].ifindex))
						again++;
			logm(LOG_INFO, "%d interface MAC%s changed: written to the fast path; %d "
			     "neighbour%s resolved again", n, n == 1 ? "" : "s", again, again == 1 ? "" : "s");
		}
	}
	if (x.nlinks && pend.macs)
		xmit_follow(&x);
	if (x.nlinks && pend.nft)
		nft_follow(&x);
	if (x.nlinks && pend.neigh) {
		struct neigh_ctx nc = { &x, 0 };

		xdpr_route_foreach(&x, NULL, neigh_route, &nc);
		if (nc.refreshed)
			logm(LOG_INFO, "%d route%s with a kept gateway MAC refreshed", nc.refreshed,
			     nc.refreshed == 1 ? "" : "s");
	}
	xdpr_close(&x);
	memset(&pend, 0, sizeof(pend));
}

/* ---- garbage collection ---- */

static void gc(void)
{
	static struct xdpr x;
	struct xdpr_gc_cmd res = {};
	struct xdpr_flt_gc_cmd fres = {};
	char err[512];

	if (open_locked(&x, err, sizeof(err))) {
		d.gc_errors++;
		logm(LOG_ERR, "sweep: %s", err);
		return;
	}
	if (x.nlinks) {
		d.gc_runs++;
		if (xdpr_nat_gc(&x, XDPR_GC_EXPIRED, 0, &res) || xdpr_flt_flows_gc(&x, &fres)) {
			d.gc_errors++;
			logm(LOG_ERR, "sweep: %s", x.err);
		}
		d.gc_sessions += res.deleted;
		d.gc_bindings += res.binds_freed;
		d.gc_flows += fres.deleted;
		xmit_follow(&x);
		nft_follow(&x); /* iptables-legacy sends no notification */
		neigh_sync(&x);
		neigh_gc();
	}
	xdpr_close(&x);
}

/* ---- metrics ---- */

static void export_metrics(FILE *f)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} per[] = {
		{ "xdprd_export_records_total", "Flow records sent, by collector.",
		  offsetof(struct export_collector, records) },
		{ "xdprd_export_messages_total", "IPFIX or NetFlow v9 messages sent, by collector.",
		  offsetof(struct export_collector, messages) },
		{ "xdprd_export_send_errors_total", "Messages a collector did not get (unreachable, "
		  "refused, socket full), by collector.", offsetof(struct export_collector, send_errors) },
		{ "xdprd_nat_events_sent_total", "NAT event records sent (IPFIX collectors; in "
		  "xdprd_export_records_total too), by collector.", offsetof(struct export_collector, nat_records) },
	};
	struct exporter *ex = d.exp;

	fprintf(f, "# HELP xdprd_export_flows Flows the exporter follows (its cache).\n"
		"# TYPE xdprd_export_flows gauge\nxdprd_export_flows %zu\n", ex ? ex->nflows : 0);
	fprintf(f, "# HELP xdprd_export_flows_deleted_total Ended flows the exporter deleted from the flow table.\n"
		"# TYPE xdprd_export_flows_deleted_total counter\nxdprd_export_flows_deleted_total %llu\n",
		ex ? (unsigned long long)ex->flows_deleted : 0ULL);
	fprintf(f, "# HELP xdprd_export_read_errors_total Ticks that could not read the flow table.\n"
		"# TYPE xdprd_export_read_errors_total counter\nxdprd_export_read_errors_total %llu\n",
		ex ? (unsigned long long)ex->tick_errors : 0ULL);
	fprintf(f, "# HELP xdprd_nat_events_read_total NAT event records read from the fast path's ring.\n"
		"# TYPE xdprd_nat_events_read_total counter\nxdprd_nat_events_read_total %llu\n", natlog.read);
	fprintf(f, "# HELP xdprd_nat_events_lost_total NAT event records the fast path could not log (its ring "
		"was full; xdpr_nat_rule_events_total{event=\"log_lost\"} by rule).\n"
		"# TYPE xdprd_nat_events_lost_total counter\nxdprd_nat_events_lost_total %llu\n", natlog.lost);
	neigh_metrics(f);
	for (size_t k = 0; k < sizeof(per) / sizeof(per[0]); k++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", per[k].name, per[k].help, per[k].name);
		for (int i = 0; ex && i < ex->ncoll; i++)
			fprintf(f, "%s{format=\"%s\",collector=\"%s\"} %llu\n", per[k].name,
				ex->coll[i].conf.fmt == CONF_EXPORT_IPFIX ? "ipfix" : "netflow9",
				ex->coll[i].conf.text,
				*(unsigned long long *)((char *)&ex->coll[i] + per[k].off));
	}
}

static void daemon_metrics(FILE *f)
{
	static const char *ev[3] = { "address", "link", "neighbour" };

	fprintf(f, "# HELP xdprd_config_ok Whether the last configuration applied (1) or was refused (0).\n"
		"# TYPE xdprd_config_ok gauge\nxdprd_config_ok %d\n", d.config_ok);
	fprintf(f, "# HELP xdprd_config_applies_total Configuration applications (start, reload).\n"
		"# TYPE xdprd_config_applies_total counter\nxdprd_config_applies_total %llu\n", d.applies);
	fprintf(f, "# HELP xdprd_config_errors_total Configuration applications refused.\n"
		"# TYPE xdprd_config_errors_total counter\nxdprd_config_errors_total %llu\n", d.apply_errors);
	fprintf(f, "# HELP xdprd_netlink_events_total Kernel notifications received, by kind.\n"
		"# TYPE xdprd_netlink_events_total counter\n");
	for (int i = 0; i < 3; i++)
		fprintf(f, "xdprd_netlink_events_total{kind=\"%s\"} %llu\n", ev[i], d.events[i]);
	fprintf(f, "# HELP xdprd_reattached_total Configured interfaces attached again after they appeared.\n"
		"# TYPE xdprd_reattached_total counter\nxdprd_reattached_total %llu\n", d.follows);
	fprintf(f, "# HELP xdprd_gc_runs_total Sweeps of expired state.\n"
		"# TYPE xdprd_gc_runs_total counter\nxdprd_gc_runs_total %llu\n", d.gc_runs);
	fprintf(f, "# HELP xdprd_gc_last_seconds How long the last sweep took (the next waits at least 9 times that).\n"
		"# TYPE xdprd_gc_last_seconds gauge\nxdprd_gc_last_seconds %.3f\n", d.gc_last_ms / 1000.0);
	fprintf(f, "# HELP xdprd_gc_errors_total Sweeps that failed.\n"
		"# TYPE xdprd_gc_errors_total counter\nxdprd_gc_errors_total %llu\n", d.gc_errors);
	fprintf(f, "# HELP xdprd_gc_removed_total Expired entries the sweeps removed, by table.\n"
		"# TYPE xdprd_gc_removed_total counter\n"
		"xdprd_gc_removed_total{table=\"nat_sessions\"} %llu\n"
		"xdprd_gc_removed_total{table=\"nat_bindings\"} %llu\n"
		"xdprd_gc_removed_total{table=\"filter_flows\"} %llu\n",
		d.gc_sessions, d.gc_bindings, d.gc_flows);
	export_metrics(f);
	ddos_metrics(f);
}

static enum MHD_Result respond(struct MHD_Connection *con, unsigned int code, const char *type,
			       char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(con, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_http(void *cls, struct MHD_Connection *con, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_len, void **state)
{
	static struct xdpr x;
	const char *cpu;
	char *body = NULL, err[512];
	size_t len = 0;
	FILE *f;
	int ret;

	(void)cls, (void)version, (void)upload;
	if (!*state) { /* the first call only announces the request */
		*state = con;
		return MHD_YES;
	}
	if (*upload_len)
		return MHD_NO;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return respond(con, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
			       strdup("only GET\n"), strlen("only GET\n"));
	if (strcmp(url, "/metrics")) {
		static const char page[] = "xdprd: the metrics are at /metrics (per CPU: /metrics?cpu=1)\n";

		return respond(con, strcmp(url, "/") ? MHD_HTTP_NOT_FOUND : MHD_HTTP_OK, "text/plain",
			       strdup(page), strlen(page));
	}
	cpu = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "cpu");
	f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	pthread_mutex_lock(&d.mu);
	d.scrapes++;
	ret = xdpr_open(&x, 0);
	if (!ret || ret == -ENOENT)
		ret = prom_write(f, &x, cpu && strcmp(cpu, "0"), err, sizeof(err));
	else
		snprintf(err, sizeof(err), "%s", x.err);
	xdpr_close(&x);
	if (!ret)
		daemon_metrics(f);
	pthread_mutex_unlock(&d.mu);
	fclose(f);
	if (ret) {
		free(body);
		snprintf(err + strlen(err), sizeof(err) - strlen(err), "\n");
		return respond(con, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", strdup(err), strlen(err));
	}
	return respond(con, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

static struct MHD_Daemon *start_metrics(char *err, size_t len)
{
	struct sockaddr_storage ss;
	int r;

	if (!strcmp(d.metrics, "none"))
		return NULL;
	r = conf_addr_port(d.metrics, &ss);
	if (r == -1)
		return snprintf(err, len, "--metrics needs ADDR:PORT (or none), not \"%s\"", d.metrics), NULL;
	if (r == -2)
		return snprintf(err, len, "invalid port in --metrics \"%s\"", d.metrics), NULL;
	if (r)
		return snprintf(err, len, "invalid address in --metrics \"%s\"", d.metrics), NULL;
	__u16 port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
			   ((struct sockaddr_in6 *)&ss)->sin6_port);
	struct MHD_Daemon *m = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		(uint16_t)port, NULL, NULL, on_http, NULL,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_CONNECTION_LIMIT, 16u,
		MHD_OPTION_CONNECTION_TIMEOUT, 10u,
		MHD_OPTION_END);

	if (!m)
		snprintf(err, len, "cannot serve metrics on %s: %s", d.metrics, strerror(errno ? errno : EADDRINUSE));
	return m;
}

/* ---- start: privileges, one daemon per router ---- */

/*
 * The capabilities xdprd cannot work without, missing from its effective
 * set: "" when it has them.  CAP_SYS_ADMIN finds the router's programs and
 * maps (and implies CAP_BPF, CAP_PERFMON); CAP_NET_ADMIN attaches, follows
 * netlink and reads netfilter.
 */
static void caps_missing(char *out, size_t len)
{
	static const struct {
		int bit;
		const char *name;
	} need[] = { { 21, "CAP_SYS_ADMIN" }, { 12, "CAP_NET_ADMIN" } };
	FILE *f = fopen("/proc/self/status", "re");
	unsigned long long eff = ~0ULL; /* no /proc: the kernel decides */
	char line[256];
	size_t n = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	if (f)
		fclose(f);
	out[0] = 0;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!(eff >> need[i].bit & 1))
			n += snprintf(out + n, n < len ? len - n : 0, "%s%s", n ? " and " : "", need[i].name);
}

/*
 * One xdprd per router: an abstract UNIX socket bound by name.  Abstract
 * names belong to the network namespace, whatever the mount namespace (each
 * `ip netns exec` has its own /run and bpffs, not its own network), and the
 * kernel frees the name when the process ends, killed or not.  bind() here
 * takes the name; hold_listen() in the process that stays makes it answer
 * with that process's pid.  The fd, or -1 with err.
 */
#define DAEMON_LOCK "xdpr/xdprd"

static socklen_t lock_addr(struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path + 1, DAEMON_LOCK, strlen(DAEMON_LOCK));
	return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(DAEMON_LOCK);
}

static int one_per_router(char *err, size_t len)
{
	struct sockaddr_un a;
	socklen_t alen = lock_addr(&a);
	struct ucred cr = { .pid = 0 };
	socklen_t crlen = sizeof(cr);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return snprintf(err, len, "cannot make the daemon's lock socket: %s", strerror(errno)), -1;
	if (!bind(fd, (struct sockaddr *)&a, alen))
		return fd;
	if (errno != EADDRINUSE) {
		snprintf(err, len, "cannot bind the daemon's lock socket: %s", strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	/* who holds it: the pid of the process listening, when it answers */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && (connect(fd, (struct sockaddr *)&a, alen) ||
			getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen)))
		cr.pid = 0;
	if (fd >= 0)
		close(fd);
	if (cr.pid > 0)
		snprintf(err, len, "another xdprd (pid %d) runs on this router: one daemon per network "
			 "namespace", (int)cr.pid);
	else
		snprintf(err, len, "another xdprd runs on this router: one daemon per network namespace");
	return -1;
}

/* The lock answers from here on (with this process's pid); its callers are let go at once. */
static void hold_listen(int fd)
{
	if (listen(fd, 16))
		logm(LOG_WARNING, "the daemon's lock socket does not answer: %s", strerror(errno));
}

static void lock_accept(int fd)
{
	int c;

	while ((c = accept4(fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(c);
}

/* ---- main ---- */

static void usage(FILE *f)
{
	fprintf(f, "Usage: xdprd [--config FILE] [--metrics ADDR:PORT|none] [--gc SECS] [--foreground]\n"
		"       defaults: --config " DEF_CONFIG " --metrics " DEF_METRICS " --gc %d\n", DEF_GC);
}

static int notify(const char *what)
{
	return sd_notify(0, what);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "gc", required_argument, NULL, 'g' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct MHD_Daemon *mhd = NULL;
	struct mnl_socket *nl = NULL, *nfnl = NULL;
	struct pollfd pfd[6];
	sigset_t sigs;
	char err[4096];
	int c, sfd, lock, ready[2] = { -1, -1 }, ret = 1;
	unsigned long v;
	long long next_gc, next_export;
	bool stop = false;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:m:g:fVh", lo, NULL)) != -1) {
		switch (c) {
		case 'c': d.config = optarg; break;
		case 'm': d.metrics = optarg; break;
		case 'g':
			if (parse_uint(optarg, 1, 3600, &v)) {
				fprintf(stderr, "Error: invalid --gc \"%s\" (seconds, 1 to 3600)\n", optarg);
				return EXIT_USAGE;
			}
			d.gc_secs = v;
			break;
		case 'f': d.foreground = true; break;
		case 'V': printf("xdprd %s\ndatapath build %s\n", XDPR_VERSION, XDPR_BPF_ID); return 0;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "Error: unknown option \"%s\"\n", argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "Error: unexpected argument \"%s\"\n", argv[optind]);
		return EXIT_USAGE;
	}
	d.journal = getenv("JOURNAL_STREAM") != NULL;
	/* the file must read and parse before anything starts */
	if (read_config(&d.text, &d.text_len, err, sizeof(err))) {
		fprintf(stderr, "Error: %s\n", err);
		return EXIT_FAIL;
	}
	{
		struct conf cc;

		if (parse_text(&cc, err, sizeof(err))) {
			fprintf(stderr, "Error: %s (nothing applied)\n", err);
			return EXIT_FAIL;
		}
		conf_free(&cc);
	}
	/* then what it needs to run: its privileges, the router to itself */
	caps_missing(err, sizeof(err));
	if (err[0]) {
		fprintf(stderr, "Error: xdprd lacks %s: run it as root\n", err);
		return EXIT_FAIL;
	}
	lock = one_per_router(err, sizeof(err));
	if (lock < 0) {
		fprintf(stderr, "Error: %s\n", err);
		return EXIT_FAIL;
	}
	if (!d.foreground) {
		/* the parent returns once the child is ready (or has failed) */
		pid_t pid;
		char b = 1;

		if (pipe(ready) || (pid = fork()) < 0) {
			fprintf(stderr, "Error: cannot start in the background: %s\n", strerror(errno));
			return EXIT_FAIL;
		}
		if (pid) {
			close(ready[1]);
			return read(ready[0], &b, 1) == 1 && b == 0 ? 0 : EXIT_FAIL;
		}
		close(ready[0]);
		setsid();
	}
	hold_listen(lock);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* before the HTTP thread starts */
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (sfd < 0 || !nl ||
	    mnl_socket_bind(nl, RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_NEIGH,
			    MNL_SOCKET_AUTOPID) < 0) {
		logm(LOG_ERR, "cannot listen to the kernel's netlink notifications: %s", strerror(errno));
		goto out;
	}
	{
		int big = 4 << 20; /* a burst of changes (many neighbours) must not overflow */

		setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	}
	/* nftables changes (none without nf_tables: then every sweep looks) */
	nfnl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (nfnl) {
		int grp = NFNLGRP_NFTABLES;

		if (mnl_socket_bind(nfnl, 0, MNL_SOCKET_AUTOPID) < 0 ||
		    mnl_socket_setsockopt(nfnl, NETLINK_ADD_MEMBERSHIP, &grp, sizeof(grp)) < 0) {
			logm(LOG_WARNING, "cannot follow nftables changes (%s): netfilter is looked at "
			     "every sweep", strerror(errno));
			mnl_socket_close(nfnl);
			nfnl = NULL;
		}
	}
	if (neigh_open(err, sizeof(err)))
		logm(LOG_WARNING, "%s: neighbours the fast path needs are not resolved for it", err);
	err[0] = 0;
	mhd = start_metrics(err, sizeof(err));
	if (!mhd && err[0]) {
		logm(LOG_ERR, "%s", err);
		goto out;
	}
	pthread_mutex_lock(&d.mu);
	apply("start", false);
	pthread_mutex_unlock(&d.mu);
	logm(LOG_INFO, "xdprd %s running: config %s, metrics %s, sweeps every %u s", XDPR_VERSION,
	     d.config, mhd ? d.metrics : "off", d.gc_secs);
	notify(d.config_ok ? "READY=1\nSTATUS=configuration applied" :
	       "READY=1\nSTATUS=configuration refused (see the log); waiting for a reload");
	if (ready[1] >= 0) {
		char b = 0;

		if (write(ready[1], &b, 1) != 1)
			logm(LOG_WARNING, "cannot tell the starting process: %s", strerror(errno));
		close(ready[1]);
		ready[1] = -1;
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			close(null);
		}
	}
	next_gc = now_ms() + d.gc_secs * 1000LL;
	next_export = now_ms() + EXPORT_MS;
	pfd[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = mnl_socket_get_fd(nl), .events = POLLIN };
	pfd[5] = (struct pollfd){ .fd = lock, .events = POLLIN };
	while (!stop) {
		long long now = now_ms(), until = next_gc;
		int n;

		if (pend.armed && pend_due < until)
			until = pend_due;
		if ((d.exp || d.meter_pending || natlog.ours || natlog.rd || ddos_active()) && next_export < until)
			until = next_export;
		/* the NAT event ring's epoll fd: readable when records wait (-1: ignored) */
		pfd[2] = (struct pollfd){ .fd = natlog.rd ? xdpr_natlog_fd(natlog.rd) : -1, .events = POLLIN };
		pfd[3] = (struct pollfd){ .fd = nfnl ? mnl_socket_get_fd(nfnl) : -1, .events = POLLIN };
		/* the neighbour request ring's: readable when the fast path asked (-1: ignored) */
		pfd[4] = (struct pollfd){ .fd = neigh_fd(), .events = POLLIN };
		n = poll(pfd, 6, until > now ? (int)(until - now) : 0);
		if (n < 0 && errno != EINTR) {
			logm(LOG_ERR, "poll: %s", strerror(errno));
			break;
		}
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					char *text;
					size_t len;
					char msg[128];

					snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
						 (unsigned long long)now_ms() * 1000ULL);
					notify(msg);
					pthread_mutex_lock(&d.mu);
					if (read_config(&text, &len, err, sizeof(err))) {
						logm(LOG_ERR, "reload: %s (the running state is kept)", err);
						d.apply_errors++;
					} else {
						struct conf cc;

						/* a file that does not parse never replaces the one followed */
						if (parse_buf(text, len, &cc, err, sizeof(err))) {
							logm(LOG_ERR, "reload: configuration not applied: %s "
							     "(the running state is kept)", err);
							d.apply_errors++;
							d.config_ok = false;
							free(text);
						} else {
							conf_free(&cc);
							free(d.text);
							d.text = text;
							d.text_len = len;
							apply("reload", true);
						}
					}
					pthread_mutex_unlock(&d.mu);
					notify(d.config_ok ? "READY=1\nSTATUS=configuration applied" :
					       "READY=1\nSTATUS=configuration refused (see the log)");
				} else {
					stop = true;
				}
			}
		}
		if (n > 0 && (pfd[1].revents & POLLIN)) {
			char buf[1 << 16];
			ssize_t r;

			pthread_mutex_lock(&d.mu); /* the counters nl_cb bumps are served */
			while ((r = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0)
				mnl_cb_run(buf, r, 0, 0, nl_cb, NULL);
			pthread_mutex_unlock(&d.mu);
			if (r < 0 && errno == ENOBUFS) { /* notifications were lost: look at everything */
				logm(LOG_WARNING, "netlink notifications were lost: checking every interface");
				pend.all = pend.local = pend.macs = pend.neigh = pend.vlans = true;
				arm();
			}
		}
		if (n > 0 && (pfd[3].revents & (POLLIN | POLLERR))) {
			char buf[1 << 16];

			/* what changed does not matter: the ruleset is read whole (xdpr_nf_follow) */
			ssize_t r;

			while ((r = mnl_socket_recvfrom(nfnl, buf, sizeof(buf))) > 0 || (r < 0 && errno == ENOBUFS))
				;
			pend.nft = true;
			arm();
		}
		if (n > 0 && (pfd[4].revents & POLLIN)) {
			pthread_mutex_lock(&d.mu); /* its counters are served */
			neigh_drain();
			pthread_mutex_unlock(&d.mu);
		}
		if (n > 0 && (pfd[5].revents & POLLIN))
			lock_accept(lock); /* a second xdprd asked who runs */
		if (n > 0 && (pfd[2].revents & POLLIN)) {
			pthread_mutex_lock(&d.mu);
			natlog_drain();
			pthread_mutex_unlock(&d.mu);
		}
		now = now_ms();
		if (pend.armed && now >= pend_due) {
			pthread_mutex_lock(&d.mu);
			follow();
			pthread_mutex_unlock(&d.mu);
		}
		if (now >= next_export) {
			pthread_mutex_lock(&d.mu);
			export_run();
			natlog_tick();
			ddos_run();
			pthread_mutex_unlock(&d.mu);
			/* one a second, not a burst after a long stall */
			next_export = now + EXPORT_MS;
		}
		if (now >= next_gc) {
			long long t0 = now_ms(), took, wait;

			pthread_mutex_lock(&d.mu);
			gc();
			pthread_mutex_unlock(&d.mu);
			/*
			 * A sweep walks every table whole (huge ones take seconds of a
			 * CPU): the next waits at least 9 times as long as this one
			 * took, so sweeping never takes more than a tenth of a CPU.
			 */
			took = now_ms() - t0;
			wait = d.gc_secs * 1000LL > 9 * took ? d.gc_secs * 1000LL : 9 * took;
			d.gc_last_ms = took;
			next_gc = now_ms() + wait;
		}
	}
	notify("STOPPING=1");
	pthread_mutex_lock(&d.mu);
	ddos_stop();
	pthread_mutex_unlock(&d.mu);
	if (d.on_stop == CONF_STOP_DETACH) {
		static struct xdpr x;
		static struct conf none;
		struct conf_diff df;

		pthread_mutex_lock(&d.mu);
		conf_init(&none);
		if (open_locked(&x, err, sizeof(err)) || conf_apply(&x, &none, &df, err, sizeof(err)))
			logm(LOG_ERR, "stopping (on-stop detach): %s", err);
		else
			logm(LOG_INFO, "stopping (on-stop detach): detached %d interface%s", df.detached,
			     df.detached == 1 ? "" : "s");
		xdpr_close(&x);
		pthread_mutex_unlock(&d.mu);
	} else {
		logm(LOG_INFO, "stopping: the fast path keeps running with its state (on-stop keep)");
		if (natlog.ours) { /* no one reads the NAT event ring any more */
			static struct xdpr x;

			pthread_mutex_lock(&d.mu);
			natlog_drain();
			if (!open_locked(&x, err, sizeof(err)) && xdpr_natlog_set(&x, false))
				logm(LOG_ERR, "stopping: cannot turn NAT event logging off: %s", x.err);
			xdpr_close(&x);
			pthread_mutex_unlock(&d.mu);
		}
		if (d.meter_ours) { /* no one reads the flow table any more */
			static struct xdpr x;

			pthread_mutex_lock(&d.mu);
			if (!open_locked(&x, err, sizeof(err)) && xdpr_flow_set(&x, false, 1))
				logm(LOG_ERR, "stopping: cannot turn the flow meter off: %s", x.err);
			xdpr_close(&x);
			pthread_mutex_unlock(&d.mu);
		}
	}
	ret = 0;
out:
	if (mhd)
		MHD_stop_daemon(mhd);
	if (nl)
		mnl_socket_close(nl);
	if (nfnl)
		mnl_socket_close(nfnl);
	neigh_close();
	if (ready[1] >= 0) {
		char b = 1;

		if (write(ready[1], &b, 1) < 0)
			ret = 1;
	}
	xdpr_natlog_close(natlog.rd);
	export_destroy(d.exp);
	free(d.text);
	return ret;
}
