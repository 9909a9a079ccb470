// SPDX-License-Identifier: GPL-2.0
/*
 * ddos.c - DDoS detection and mitigation in xdprd.
 *
 * The fast path counts (bpf/ddos.h); this decides.  Each tick (1 s) every
 * host's cumulative meter is read and kept as a sample; a host's rate is
 * the difference between its newest sample and the oldest within the
 * window, over their time apart (FastNetMon's "average over N seconds").
 * A protected destination ("to") above the packet or bit threshold is
 * banned for the ban time, with the action of the file (drop in XDP,
 * announce a blackhole route, both); a source ("from") only with
 * "ddos ban-sources on".  The ban table is the truth: ended bans (the
 * fast path already ignores them) are removed here, and the blackhole
 * routes are made equal to the live "to" bans carrying the blackhole flag,
 * manual ones included, every tick.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <arpa/inet.h>
#include "ddos.h"

#define SAMPLES (CONF_DDOS_WINDOW_MAX + 1)

struct host {
	struct host *next;
	__u8 family, dir, addr[16];
	__u64 gen;              /* the tick that last saw it */
	int head, n;            /* ring of samples: newest at head */
	__u64 pk[SAMPLES], by[SAMPLES], t[SAMPLES];
	__u64 pps, bps;         /* the last tick's averages */
};

#define NBUCKETS 16384

static struct {
	bool on;                /* the file has "ddos protect" lines */
	bool pending;           /* to be applied once the router is there */
	struct conf_ddos conf;
	struct host *tab[NBUCKETS];
	size_t nhosts;
	__u64 gen;
	__u32 table;            /* where the blackhole routes are (0: none made yet) */
	struct bh_stats bh;
	unsigned long long bans[3], unbans, deleted, errors, ticks;
	size_t live;            /* live bans after the last tick */
	int err;                /* the last error (logged once) */
} g;

bool ddos_active(void)
{
	return g.on || g.table;
}

static const char *addr_str(int family, const __u8 *a, char *buf)
{
	return inet_ntop(family, a, buf, INET6_ADDRSTRLEN) ? buf : "?";
}

static void error_once(int e, const char *what, const char *msg)
{
	g.errors++;
	if (e != g.err)
		ddos_log(LOG_ERR, "ddos: %s: %s", what, msg);
	g.err = e;
}

static int prot_cb(int family, const void *addr, int plen, void *arg)
{
	const struct conf_ddos *want = arg;

	for (int i = 0; i < want->nprot; i++)
		if (want->prot[i].family == family && want->prot[i].plen == plen &&
		    !memcmp(want->prot[i].addr, addr, family == AF_INET ? 4 : 16))
			return 0;
	return 1; /* one the file does not have */
}

void ddos_configure(struct xdpr *x, const struct conf_ddos *want, const char *why)
{
	bool on = want->nprot > 0, changed = false;

	if (!on && !g.on)
		return; /* the file never had ddos lines: the meters are the CLI's */
	if (!x->nlinks) { /* nothing attached yet: the tick applies it once there is */
		g.on = on;
		g.conf = *want;
		g.pending = on;
		return;
	}
	g.pending = false;
	/* the running prefixes made the file's: one it does not name, and it starts again */
	if (xdpr_ddos_protect_foreach(x, prot_cb, (void *)want) == 1) {
		if (xdpr_ddos_flush(x, XDPR_DDOS_FLUSH_PROTECT) < 0)
			ddos_log(LOG_ERR, "%s: ddos: %s", why, x->err);
		changed = true;
	}
	for (int i = 0; i < want->nprot; i++) {
		__u8 a[16];
		int e;

		memcpy(a, want->prot[i].addr, 16);
		e = xdpr_ddos_protect(x, want->prot[i].family, a, want->prot[i].plen, true);
		if (!e)
			changed = true;
		else if (e != -EEXIST)
			ddos_log(LOG_ERR, "%s: ddos protect: %s", why, x->err);
	}
	if (xdpr_ddos_set_sample(x, want->sample) || xdpr_ddos_set(x, on))
		ddos_log(LOG_ERR, "%s: ddos: cannot turn the meters %s: %s", why, on ? "on" : "off", x->err);
	if (on && (!g.on || !conf_ddos_same(&g.conf, want) || changed))
		ddos_log(LOG_INFO, "%s: ddos: %d prefixes protected, %llu pps / %llu Mbit/s over %u s, ban %u s, "
			 "action %s%s, sample 1 in %u", why, want->nprot, (unsigned long long)want->pps,
			 (unsigned long long)want->mbps, want->window, want->ban_time,
			 want->action == XDPR_DDOS_F_DROP ? "drop" : want->action == XDPR_DDOS_F_BLACKHOLE ?
			 "blackhole" : "drop and blackhole", want->sources ? ", sources too" : "", want->sample);
	else if (!on && g.on)
		ddos_log(LOG_INFO, "%s: ddos: no prefix protected: meters off", why);
	if (g.on && want->window != g.conf.window) /* the samples kept were for another window */
		for (size_t b = 0; b < NBUCKETS; b++)
			for (struct host *h = g.tab[b]; h; h = h->next)
				h->n = 0;
	if (g.table && g.table != want->table) { /* the routes move: none left in the old table */
		blackhole_reconcile(g.table, NULL, 0, &g.bh, NULL);
		g.table = 0;
	}
	g.on = on;
	g.conf = *want;
}

static __u32 hash(int family, int dir, const __u8 *a)
{
	__u32 h = 2166136261u ^ (family << 8 | dir);

	for (int i = 0; i < 16; i++)
		h = (h ^ a[i]) * 16777619u;
	return h % NBUCKETS;
}

static struct host *host_get(const struct xdpr_ddos_host *m)
{
	__u32 b = hash(m->family, m->dir, m->addr);
	struct host *h;

	for (h = g.tab[b]; h; h = h->next)
		if (h->family == m->family && h->dir == m->dir && !memcmp(h->addr, m->addr, 16))
			return h;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->family = m->family;
	h->dir = m->dir;
	memcpy(h->addr, m->addr, 16);
	h->next = g.tab[b];
	g.tab[b] = h;
	g.nhosts++;
	return h;
}

struct tick {
	struct xdpr *x;
	__u64 now;
	struct xdpr_ddos_ban_info *bans;
	size_t nbans, cap;
};

static struct xdpr_ddos_ban_info *ban_find(struct tick *t, int family, int dir, const __u8 *addr)
{
	for (size_t i = 0; i < t->nbans; i++)
		if (t->bans[i].family == family && t->bans[i].dir == dir && !memcmp(t->bans[i].addr, addr, 16))
			return &t->bans[i];
	return NULL;
}

static int ban_add(struct tick *t, const struct xdpr_ddos_ban_info *b)
{
	if (t->nbans == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct xdpr_ddos_ban_info *n = realloc(t->bans, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->bans = n;
		t->cap = cap;
	}
	t->bans[t->nbans++] = *b;
	return 0;
}

/* The live bans into t; the ended ones removed. */
static int ban_cb(const struct xdpr_ddos_ban_info *b, void *arg)
{
	struct tick *t = arg;
	char a[INET6_ADDRSTRLEN];

	if (b->until_ns != XDPR_DDOS_FOREVER && b->until_ns <= t->now) {
		if (xdpr_ddos_unban(t->x, b->family, b->dir, b->addr) && errno != ENOENT) {
			error_once(-errno, "unban", t->x->err);
			return 0;
		}
		g.unbans++;
		ddos_log(LOG_NOTICE, "ddos: ban of %s %s ended after %llu s (%llu packets, %llu bytes dropped)",
			 b->dir == XDPR_DDOS_TO ? "traffic to" : "traffic from", addr_str(b->family, b->addr, a),
			 (unsigned long long)((b->until_ns - b->since_ns) / 1000000000ULL),
			 (unsigned long long)b->dropped_pkts, (unsigned long long)b->dropped_bytes);
		return 0;
	}
	return ban_add(t, b);
}

/* A host's sample, its averages; a ban when it is above a threshold. */
static int host_cb(const struct xdpr_ddos_host *m, void *arg)
{
	struct tick *t = arg;
	const struct conf_ddos *c = &g.conf;
	struct host *h;
	char a[INET6_ADDRSTRLEN];
	int old, k;

	if (t->now > m->last_ns && t->now - m->last_ns > DDOS_IDLE_S * 1000000000ULL) {
		if (!xdpr_ddos_host_delete(t->x, m))
			g.deleted++;
		return 0;
	}
	h = host_get(m);
	if (!h)
		return -ENOMEM;
	h->gen = g.gen;
	if (h->n && (m->packets < h->pk[h->head] || m->bytes < h->by[h->head]))
		h->n = 0; /* the meter was deleted and made again: start over */
	h->head = (h->head + 1) % SAMPLES;
	h->pk[h->head] = m->packets;
	h->by[h->head] = m->bytes;
	h->t[h->head] = t->now;
	if (h->n < SAMPLES)
		h->n++;
	h->pps = h->bps = 0;
	/* the oldest sample within the window */
	old = -1;
	for (k = 1; k < h->n; k++) {
		int i = (h->head - k + SAMPLES) % SAMPLES;

		if (t->now - h->t[i] > c->window * 1000000000ULL + 500000000ULL)
			break;
		old = i;
	}
	if (old < 0 || t->now <= h->t[old])
		return 0;
	h->pps = (h->pk[h->head] - h->pk[old]) * 1000000000ULL / (t->now - h->t[old]);
	h->bps = (h->by[h->head] - h->by[old]) * 8000000000ULL / (t->now - h->t[old]);
	if (h->dir == XDPR_DDOS_FROM && !c->sources)
		return 0;
	if (!(c->pps && h->pps > c->pps) && !(c->mbps && h->bps > c->mbps * 1000000ULL))
		return 0;
	if (ban_find(t, h->family, h->dir, h->addr))
		return 0;
	{
		struct xdpr_ddos_ban_info b = {
			.family = h->family, .dir = h->dir, .flags = c->action,
			.reason = c->pps && h->pps > c->pps ? XDPR_DDOS_R_PPS : XDPR_DDOS_R_BPS,
			.since_ns = t->now, .until_ns = t->now + c->ban_time * 1000000000ULL,
			.pps = h->pps, .bps = h->bps,
		};

		memcpy(b.addr, h->addr, 16);
		if (xdpr_ddos_ban(t->x, &b)) {
			error_once(-errno, "ban", t->x->err);
			return 0;
		}
		g.bans[b.reason]++;
		ddos_log(LOG_WARNING, "ddos: banned %s %s for %u s (%s): %llu pps, %.1f Mbit/s over %u s "
			 "(thresholds %llu pps, %llu Mbit/s)", h->dir == XDPR_DDOS_TO ? "traffic to" : "traffic from",
			 addr_str(h->family, h->addr, a), c->ban_time,
			 c->action == XDPR_DDOS_F_DROP ? "drop" : c->action == XDPR_DDOS_F_BLACKHOLE ? "blackhole" :
			 "drop, blackhole", (unsigned long long)h->pps, h->bps / 1e6, c->window,
			 (unsigned long long)c->pps, (unsigned long long)c->mbps);
		return ban_add(t, &b);
	}
}

static void bh_log(int added, int family, const __u8 *addr, int err)
{
	char a[INET6_ADDRSTRLEN];

	if (err)
		ddos_log(LOG_ERR, "ddos: cannot %s the blackhole route of %s: %s", added ? "add" : "withdraw",
			 addr_str(family, addr, a), strerror(-err));
	else
		ddos_log(LOG_NOTICE, "ddos: blackhole route %s/%d %s table %u", addr_str(family, addr, a),
			 family == AF_INET ? 32 : 128, added ? "added to" : "withdrawn from", g.conf.table);
}

void ddos_tick(struct xdpr *x)
{
	struct tick t = { .x = x, .now = xdpr_ddos_now_ns() };
	struct xdpr_ddos_ban_info *bh;
	size_t nbh = 0;
	int e;

	if (!x->nlinks)
		return;
	if (g.on) { /* the file's, still?  A router attached again starts with empty maps */
		bool on = false;

		if (g.pending || (!xdpr_ddos_get(x, &on, NULL, NULL, NULL) && !on))
			ddos_configure(x, &g.conf, "ddos");
	}
	g.gen++;
	g.ticks++;
	e = xdpr_ddos_ban_foreach(x, ban_cb, &t);
	if (e)
		error_once(e, "reading the bans", x->err);
	if (g.on) {
		e = xdpr_ddos_host_foreach(x, host_cb, &t);
		if (e)
			error_once(e, "reading the meters", e == -ENOMEM ? strerror(ENOMEM) : x->err);
	}
	/* hosts no longer metered (deleted, flushed) are forgotten */
	for (size_t b = 0; b < NBUCKETS; b++)
		for (struct host **p = &g.tab[b]; *p;) {
			struct host *h = *p;

			if (h->gen == g.gen) {
				p = &h->next;
				continue;
			}
			*p = h->next;
			free(h);
			g.nhosts--;
		}
	g.live = t.nbans;
	/* the blackhole routes: the live "to" bans that carry the flag */
	bh = t.bans;
	for (size_t i = 0; i < t.nbans; i++)
		if (t.bans[i].dir == XDPR_DDOS_TO && (t.bans[i].flags & XDPR_DDOS_F_BLACKHOLE))
			bh[nbh++] = t.bans[i];
	if (nbh || g.table) {
		e = blackhole_reconcile(g.conf.table ? g.conf.table : CONF_DDOS_TABLE, bh, nbh, &g.bh, bh_log);
		if (e)
			error_once(e, "blackhole routes", strerror(-e));
		g.table = nbh ? (g.conf.table ? g.conf.table : CONF_DDOS_TABLE) : (e ? g.table : 0);
		if (!nbh && !e)
			g.bh.routes = 0;
	}
	if (!e)
		g.err = 0;
	free(t.bans);
}

void ddos_stop(void)
{
	if (g.table && !blackhole_reconcile(g.table, NULL, 0, &g.bh, bh_log))
		g.table = 0;
}

void ddos_metrics(FILE *f)
{
	static const char *const reason[3] = { "manual", "pps", "bps" };

	fprintf(f, "# HELP xdprd_ddos_bans_total Bans xdprd made, by the threshold crossed.\n"
		"# TYPE xdprd_ddos_bans_total counter\n");
	for (int i = 1; i < 3; i++)
		fprintf(f, "xdprd_ddos_bans_total{reason=\"%s\"} %llu\n", reason[i], g.bans[i]);
	fprintf(f, "# HELP xdprd_ddos_unbans_total Bans removed after they ended.\n"
		"# TYPE xdprd_ddos_unbans_total counter\nxdprd_ddos_unbans_total %llu\n", g.unbans);
	fprintf(f, "# HELP xdprd_ddos_bans Live bans (any origin) after the last tick.\n"
		"# TYPE xdprd_ddos_bans gauge\nxdprd_ddos_bans %zu\n", g.live);
	fprintf(f, "# HELP xdprd_ddos_hosts Hosts whose rates xdprd follows.\n"
		"# TYPE xdprd_ddos_hosts gauge\nxdprd_ddos_hosts %zu\n", g.nhosts);
	fprintf(f, "# HELP xdprd_ddos_hosts_deleted_total Idle hosts deleted from the meters.\n"
		"# TYPE xdprd_ddos_hosts_deleted_total counter\nxdprd_ddos_hosts_deleted_total %llu\n", g.deleted);
	fprintf(f, "# HELP xdprd_ddos_blackhole_routes Blackhole routes announced.\n"
		"# TYPE xdprd_ddos_blackhole_routes gauge\nxdprd_ddos_blackhole_routes %zu\n", g.bh.routes);
	fprintf(f, "# HELP xdprd_ddos_blackhole_changes_total Blackhole routes added and withdrawn.\n"
		"# TYPE xdprd_ddos_blackhole_changes_total counter\n"
		"xdprd_ddos_blackhole_changes_total{change=\"added\"} %llu\n"
		"xdprd_ddos_blackhole_changes_total{change=\"withdrawn\"} %llu\n", g.bh.added, g.bh.withdrawn);
	fprintf(f, "# HELP xdprd_ddos_errors_total Reads, bans, unbans and route changes that failed.\n"
		"# TYPE xdprd_ddos_errors_total counter\nxdprd_ddos_errors_total %llu\n", g.errors + g.bh.errors);
}
