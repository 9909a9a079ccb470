// SPDX-License-Identifier: GPL-2.0
/*
 * test_natlog.c - the NAT event log of the fast path (bpf/natlog.h), one
 * BPF_PROG_TEST_RUN per frame in the namespace and with the checks of the
 * NAT table (nat_table.h): verdict, reason and NAT counters, the output
 * frame byte for byte.  What each case adds: the records on the
 * xdpr_natlog ring, field by field.  Logging off writes none; a create, a
 * delete (the GC program, as `xdpr nat flush` runs it), a host at its
 * limit and a range without a port write one each, the last two at most
 * once a second per rule and CPU; a full ring costs records (counted
 * log_lost), never a packet.  The process stays on CPU 0 (the rate limit
 * is per CPU).  TAP on stdout; exit 1 if any case failed.
 */
#define _GNU_SOURCE
#include "nat_table.h"

#define MAXREC 4096
static struct xdpr_natlog_rec recs[MAXREC];
static int nrecs;
static struct ring_buffer *rb;

static int on_rec(void *ctx, void *data, size_t size)
{
	(void)ctx;
	if (size == sizeof(struct xdpr_natlog_rec) && nrecs < MAXREC)
		memcpy(&recs[nrecs], data, size);
	nrecs++;
	return 0;
}

/* Every record waiting: how many (recs[] holds them). */
static int drain(void)
{
	nrecs = 0;
	if (ring_buffer__consume(rb) < 0)
		die("cannot read the ring: %s", strerror(errno));
	return nrecs;
}

static void logging(bool on)
{
	cfg_flags = on ? cfg_flags | XDPR_CFG_NATLOG : cfg_flags & ~XDPR_CFG_NATLOG;
	cfg_defaults();
}

/* One record as expected (ts between t0 and t1; xport 0: none). */
static bool rec_is(const char *what, const struct xdpr_natlog_rec *r, __u8 ev, __u8 rule, const char *src,
		   __u16 sport, const char *xsrc, __u16 xport, __u16 dport, __u32 limit, __u64 t0, __u64 t1)
{
	bool ok = r->event == ev && r->rule == rule && r->proto == IPPROTO_UDP && r->family == AF_INET &&
		  r->src == ip(src) && r->sport == htons(sport) && r->xsrc == ip(xsrc) &&
		  r->xsport == htons(xport) && r->dst == ip(REM) && r->dport == htons(dport) &&
		  r->limit == limit && r->ts_ns >= t0 && r->ts_ns <= t1 && !r->pad && !r->pad2;
	char a[16], b[16], c[16];

	if (!ok) {
		snprintf(a, sizeof(a), "%s", ipstr(r->src));
		snprintf(b, sizeof(b), "%s", ipstr(r->xsrc));
		snprintf(c, sizeof(c), "%s", ipstr(r->dst));
		note("%s: got event %u rule %u proto %u family %u %s:%u -> %s:%u -> %s:%u limit %u ts %+lld ns "
		     "from the step; expected event %u rule %u %s:%u -> %s:%u -> %s:%u limit %u", what,
		     r->event, r->rule, r->proto, r->family, a, ntohs(r->sport), b, ntohs(r->xsport), c,
		     ntohs(r->dport), r->limit, (long long)(r->ts_ns - t0), ev, rule, src, sport, xsrc, xport,
		     REM, dport, limit);
	}
	return ok;
}

/* UDP from 10.0.1.2:sport to 10.0.2.2:53, translated to 10.0.2.1:xport: a new session or not. */
static bool udp_out(const char *what, __u16 sport, __u16 xport, bool fresh_sess)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = sport, .dport = 53 };
	struct pkt x = snat(k, OUTA, xport, true);
	struct frame f, w;

	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	return step(what, "r0", &f, XDPR_FWD, &w,
		    !fresh_sess ? EV(XOUT) : sport == xport ? EV(XOUT, NEW, KEPT) : EV(XOUT, NEW));
}

static bool udp_new(const char *what, __u16 sport, __u16 xport)
{
	return udp_out(what, sport, xport, true);
}

/* A flow the NAT refuses (dropped, untranslated): the counter it moves, +1. */
static bool udp_refused(const char *what, __u16 sport, int reason, int event)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = sport, .dport = 53 };
	struct result *r = calloc(1, sizeof(*r));
	struct frame f;
	bool ok;

	if (!r)
		die("out of memory");
	in_frame(&f, "r0", &k);
	run("r0", &f, r);
	cur_step = what;
	ok = expect(!r->err && r->verdict == (__u32)xdpr_reason_verdict(reason) &&
		    r->after[reason].packets - r->before[reason].packets == 1 &&
		    r->ev1.n[event] - r->ev0.n[event] == 1 && same_bytes(&f, &r->out),
		    "%s: verdict %u, %s +%llu, %s +%llu (expected +1 each, the frame untouched)", what,
		    r->verdict, xdpr_reason_name(reason),
		    (unsigned long long)(r->after[reason].packets - r->before[reason].packets),
		    xdpr_nat_event_name(event), (unsigned long long)(r->ev1.n[event] - r->ev0.n[event]));
	cur_step = NULL;
	free(r);
	return ok;
}

/* ---- cases ---- */

static bool t_off(void)
{
	bool ok;

	logging(false);
	fresh();
	drain();
	ok = udp_new("udp 10.0.1.2:5300 -> 10.0.2.2:53 with logging off", 5300, 5300);
	ok &= expect(drain() == 0, "%d records with logging off, expected 0", nrecs);
	return ok;
}

static bool t_create_delete(void)
{
	struct xdpr_gc_cmd res = {};
	__u64 t0, t1;
	bool ok;

	logging(true);
	fresh();
	drain();
	t0 = now_ns();
	ok = udp_new("udp 10.0.1.2:5301 -> 10.0.2.2:53", 5301, 5301);
	t1 = now_ns();
	ok &= expect(drain() == 1, "%d records after a new session, expected 1", nrecs);
	if (nrecs == 1)
		ok &= rec_is("create", &recs[0], XDPR_NL_CREATE, 1, IN2, 5301, OUTA, 5301, 53, 0, t0, t1);
	ok &= udp_out("the same session's next packet", 5301, 5301, false);
	ok &= expect(drain() == 0, "%d records after a packet of the session, expected 0", nrecs);
	t0 = now_ns();
	ok &= expect(!gc(XDPR_GC_ALL, &res) && res.deleted == 1, "gc: %u sessions deleted, expected 1",
		     res.deleted);
	t1 = now_ns();
	ok &= expect(drain() == 1, "%d records after gc (flush), expected 1", nrecs);
	if (nrecs == 1)
		ok &= rec_is("delete", &recs[0], XDPR_NL_DELETE, 1, IN2, 5301, OUTA, 5301, 53, 0, t0, t1);
	logging(false);
	return ok;
}

/*
 * A new flow from sport (its session: outside port xport), then two that
 * the NAT refuses (reason, event) in the same second: the create and one
 * record nl (limit: the host limit it carries), the second refusal none.
 */
static bool refused_twice(__u16 sport, __u16 xport, int reason, int event, __u8 nl, __u32 limit)
{
	__u64 t0, t1;
	bool ok;

	drain();
	sleep_ms(1100); /* a second since any earlier record of this kind, CPU and rule */
	t0 = now_ns();
	ok = udp_new("first flow", sport, xport);
	ok &= udp_refused("second flow: refused", sport + 1, reason, event);
	t1 = now_ns();
	ok &= udp_refused("third flow, the same second", sport + 2, reason, event);
	ok &= expect(drain() == 2, "%d records, expected 2 (the create, one %s)", nrecs,
		     nl == XDPR_NL_QUOTA ? "quota exceeded" : "ports exhausted");
	if (nrecs == 2) {
		ok &= rec_is("create", &recs[0], XDPR_NL_CREATE, 1, IN2, sport, OUTA, xport, 53, 0, t0, t1);
		ok &= rec_is("refused", &recs[1], nl, 1, IN2, sport + 1, OUTA, 0, 53, limit, t0, t1);
	}
	return ok;
}

static bool t_quota(void)
{
	__u64 t0, t1;
	bool ok;

	logging(true);
	fresh();
	cfg_write(XDPR_DEF_UDP, XDPR_DEF_HOLDDOWN, 1);
	ok = refused_twice(5400, 5400, XDPR_DROP_NAT_HOST_LIMIT, XDPR_NE_HOST_LIMIT, XDPR_NL_QUOTA, 1);
	sleep_ms(1100);
	t0 = now_ns();
	ok &= udp_refused("fourth flow, a second later", 5403, XDPR_DROP_NAT_HOST_LIMIT, XDPR_NE_HOST_LIMIT);
	t1 = now_ns();
	ok &= expect(drain() == 1, "%d records a second later, expected 1", nrecs);
	if (nrecs == 1)
		ok &= rec_is("quota exceeded again", &recs[0], XDPR_NL_QUOTA, 1, IN2, 5403, OUTA, 0, 53, 1, t0, t1);
	logging(false);
	return ok;
}

static bool t_ports(void)
{
	bool ok;

	logging(true);
	fresh();
	rule_write(1, XDPR_NAT_MASQ, "0.0.0.0", 0, NULL, 0, 20000, 20000);
	ok = refused_twice(5500, 20000, XDPR_DROP_NAT_NO_PORT, XDPR_NE_NO_PORT, XDPR_NL_PORTS, 0);
	logging(false);
	return ok;
}

static bool t_ring_full(void)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), slots;
	struct evs e0, e1;
	int fails = 0, n = 1400;
	bool ok;

	logging(true);
	fresh();
	drain();
	if (bpf_obj_get_info_by_fd(bpf_map__fd(skel->maps.xdpr_natlog), &info, &len))
		die("cannot read the ring's size: %s", strerror(errno));
	slots = info.max_entries / (sizeof(struct xdpr_natlog_rec) + 8);
	read_ev(1, &e0);
	for (int i = 0; i < n; i++) {
		struct pkt k = { .src = IN2, .dst = REM, .sport = 10000 + i, .dport = 53 };
		struct result *r = calloc(1, sizeof(*r));
		struct frame f;

		if (!r)
			die("out of memory");
		in_frame(&f, "r0", &k);
		run("r0", &f, r);
		fails += r->err || r->verdict != (__u32)xdpr_reason_verdict(XDPR_FWD);
		free(r);
	}
	read_ev(1, &e1);
	ok = expect(fails == 0, "%d of %d new flows not forwarded", fails, n);
	ok &= expect(e1.n[XDPR_NE_SESS_NEW] - e0.n[XDPR_NE_SESS_NEW] == (__u64)n, "%llu sessions made, expected %d",
		     (unsigned long long)(e1.n[XDPR_NE_SESS_NEW] - e0.n[XDPR_NE_SESS_NEW]), n);
	ok &= expect(drain() == (int)slots, "%d records on a ring of %u bytes, expected %u", nrecs,
		     info.max_entries, slots);
	ok &= expect(e1.n[XDPR_NE_LOG_LOST] - e0.n[XDPR_NE_LOG_LOST] == (__u64)(n - slots),
		     "log_lost +%llu, expected %u", (unsigned long long)(e1.n[XDPR_NE_LOG_LOST] - e0.n[XDPR_NE_LOG_LOST]),
		     n - slots);
	note("ring of %u bytes: %u records kept, %d lost", info.max_entries, slots, n - (int)slots);
	logging(false);
	return ok;
}

static const struct {
	const char *name;
	bool (*fn)(void);
} cases[] = {
	{ "logging off: a new session writes no record", t_off },
	{ "create and delete (gc, as nat flush): one record each, the tuple, post-NAT, rule, time", t_create_delete },
	{ "host limit 1: quota exceeded (limit 1), once a second per rule and CPU", t_quota },
	{ "one port, two flows: ports exhausted (port 0), once a second per rule and CPU", t_ports },
	{ "the ring full: every flow forwarded, the records that did not fit counted log_lost", t_ring_full },
};

#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(void)
{
	need_root_on_cpu0();
	table_init();
	rb = ring_buffer__new(bpf_map__fd(skel->maps.xdpr_natlog), on_rec, NULL, NULL);
	if (!rb)
		die("cannot map the NAT event ring: %s", strerror(errno));
	printf("1..%d\n", NCASES);
	for (int i = 0; i < NCASES; i++)
		tap(cases[i].fn(), cases[i].name, NULL);
	ring_buffer__free(rb);
	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
