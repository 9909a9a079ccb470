// SPDX-License-Identifier: GPL-2.0
/*
 * test_natfwd.c - IPv4 port forwards (`nat add in`, bpf/nat_fwd.h) in
 * xdpr_main against the real kernel FIB, one BPF_PROG_TEST_RUN per frame,
 * in the NAT table's namespace (nat_table.h: inside r0 10.0.1.0/24, outside
 * r1 10.0.2.0/24, r1's address 10.0.2.1).
 *
 * Forwards on r1, outside address 10.0.2.1, written the way
 * loader/nat.c's xdpr_nat_fwd_add writes them (counters zeroed, slot marked
 * pending, port entries, XDPR_IF_FWD on r1, the slot unmarked: the commit):
 *   2  tcp+udp dport 2222           to 10.0.1.2       (port to the same port)
 *   3  udp     dport 5300-5309      to 10.0.1.3:6300-6309  (range to range)
 *   4  tcp     dport 7300-7309      to 10.0.1.2:7400  (range to one port)
 *   5  tcp     dport 8080           to 10.0.1.2:80
 *   6  tcp     dport 6000           to 10.0.1.77      (no neighbour)
 *   7  tcp+udp 198.51.100.7 dport 443 to 10.0.1.3:8443 (an address not r1's)
 * and, as in every NAT table case, masquerade rule 1 on r1 for 0.0.0.0/0.
 *
 * Every step checks the verdict, exactly one reason counter, the bytes out
 * against a frame built from scratch with the translated addresses and
 * ports (every checksum computed from nothing), every checksum of the
 * output again (quoted packets too), the NAT events of the masquerade rule
 * and of every forward rule (the expected ones moved by the expected
 * amount, the others not at all).  Sessions are read back where a case
 * is about them.
 */
#define _GNU_SOURCE
#include "nat_table.h"

#define NONB    "10.0.1.77" /* on r0, no neighbour entry */
#define OTHER   "198.51.100.7" /* not the router's: the upstream routes it to r1 */
#define R_SAME  2
#define R_RANGE 3
#define R_ONE   4
#define R_TCP   5
#define R_NONB  6
#define R_OTHER 7
#define R_PEND  8   /* written, never committed (t_uncommitted) */
#define R_FIRST R_SAME
#define R_LAST  R_PEND
#define NFR     (R_LAST - R_FIRST + 1)

struct fwd_rule {
	__u32 id;
	__u8 proto;         /* 0: tcp and udp */
	__u16 pmin, pmax;   /* outside ports */
	const char *to;
	__u16 tport;        /* first inside port; 0: the outside ones */
	__u8 one;           /* every outside port to tport */
	const char *addr;   /* outside address; NULL: r1's, 10.0.2.1 */
};

static const struct fwd_rule fwds[] = {
	{ R_SAME, 0, 2222, 2222, IN2, 0, 0, NULL },
	{ R_RANGE, IPPROTO_UDP, 5300, 5309, IN3, 6300, 0, NULL },
	{ R_ONE, IPPROTO_TCP, 7300, 7309, IN2, 7400, 1, NULL },
	{ R_TCP, IPPROTO_TCP, 8080, 8080, IN2, 80, 0, NULL },
	{ R_NONB, IPPROTO_TCP, 6000, 6000, NONB, 0, 0, NULL },
	{ R_OTHER, 0, 443, 443, IN3, 8443, 0, OTHER },
};

static const struct fwd_rule pend = { R_PEND, IPPROTO_TCP, 9000, 9000, IN2, 0, 0, NULL };

/* The outside address of forward rule id. */
static const char *fwd_out(__u32 id)
{
	for (size_t i = 0; i < sizeof(fwds) / sizeof(fwds[0]); i++)
		if (fwds[i].id == id)
			return fwds[i].addr ?: OUTA;
	return OUTA;
}

static int fwd_fd;

static struct xdpr_nat_rule fwd_slot(const struct fwd_rule *f)
{
	struct xdpr_nat_rule r = {
		.ifindex = dev_get("r1")->ifindex, .flags = XDPR_NAT_FWD, .fwd_to = ip(f->to),
		.fwd_port = f->tport, .fwd_proto = f->proto, .fwd_one = f->one, .pool_first = ip(f->addr ?: OUTA),
		.pool_count = 1, .port_min = f->pmin, .port_max = f->pmax, .pending = 1,
	};

	snprintf(r.ifname, sizeof(r.ifname), "r1");
	return r;
}

/* xdpr_nat_fwd_add's writes, in its order; commit: unmark the slot at the end. */
static void fwd_add(const struct fwd_rule *f, bool commit)
{
	static const __u8 protos[] = { IPPROTO_TCP, IPPROTO_UDP };
	struct xdpr_nat_rule r = fwd_slot(f);
	__u64 *z = calloc(ncpus, sizeof(*z));

	for (__u32 e = 0; z && e < XDPR_NE_MAX; e++) {
		__u32 key = f->id * XDPR_NE_MAX + e;

		if (bpf_map_update_elem(nstats_fd, &key, z, BPF_ANY))
			die("cannot zero xdpr_nat_stats[%u]: %s", key, strerror(errno));
	}
	free(z);
	if (bpf_map_update_elem(rules_fd, &f->id, &r, BPF_ANY))
		die("cannot write forward %u: %s", f->id, strerror(errno));
	for (size_t k = 0; k < sizeof(protos); k++) {
		if (f->proto && f->proto != protos[k])
			continue;
		for (__u32 p = f->pmin; p <= f->pmax; p++) {
			struct xdpr_bind_key key = { .out_addr = r.pool_first, .out_port = htons(p),
						     .proto = protos[k] };
			struct xdpr_fwd v = { .in_addr = r.fwd_to,
					      .in_port = htons(!f->tport ? p : f->one ? f->tport
										: f->tport + (p - f->pmin)),
					      .rule = f->id };

			if (bpf_map_update_elem(fwd_fd, &key, &v, BPF_NOEXIST))
				die("cannot write port %u of forward %u: %s", p, f->id, strerror(errno));
		}
	}
	iface_flag("r1", XDPR_IF_FWD, true);
	if (!commit)
		return;
	r.pending = 0;
	if (bpf_map_update_elem(rules_fd, &f->id, &r, BPF_ANY))
		die("cannot commit forward %u: %s", f->id, strerror(errno));
}

/* Independent case: fresh() (empty tables, masquerade rule 1), the forwards of fwds[] committed. */
static void fresh_fwd(void)
{
	fresh();
	map_clear(fwd_fd, sizeof(struct xdpr_bind_key));
	for (__u32 id = R_FIRST; id <= R_LAST; id++)
		rule_clear(id);
	for (size_t i = 0; i < sizeof(fwds) / sizeof(fwds[0]); i++)
		fwd_add(&fwds[i], true);
}

/* The events of every forward rule, summed over CPUs. */
static void read_fev(struct evs e[NFR])
{
	for (__u32 id = R_FIRST; id <= R_LAST; id++)
		read_ev(id, &e[id - R_FIRST]);
}

/*
 * step() (rule 1's events: masq) and the forward rules' events: fid's
 * moved by exactly fev, every other forward's not at all.
 */
static bool fstep(const char *what, const char *dev, const struct frame *in, int reason,
		  const struct frame *want, struct evs masq, __u32 fid, struct evs fev)
{
	struct evs a[NFR], b[NFR];
	bool ok;

	read_fev(a);
	ok = step(what, dev, in, reason, want, masq);
	read_fev(b);
	cur_step = what;
	for (__u32 id = R_FIRST; id <= R_LAST; id++)
		for (int i = 0; i < XDPR_NE_MAX; i++) {
			__u64 d = b[id - R_FIRST].n[i] - a[id - R_FIRST].n[i];
			__u64 w = id == fid ? fev.n[i] : 0;

			if (d != w) {
				note("forward rule %u event %s: +%llu, expected +%llu", id,
				     xdpr_nat_event_name(i), (unsigned long long)d, (unsigned long long)w);
				ok = false;
			}
		}
	cur_step = NULL;
	return ok;
}

/* Nothing happens anywhere but the reason counter: the frame goes on untouched. */
static bool untouched(const char *what, const char *dev, const struct frame *in, int reason)
{
	return fstep(what, dev, in, reason, NULL, NOEV, 0, NOEV);
}

/*
 * A forward's session: both halves (no binding generation: the forward
 * owns the port), no binding on the outside port, no host count.
 */
static bool fwd_sess(const char *what, const char *in, __u16 inp, const char *rem, __u16 remp, __u8 proto,
		     __u16 outp, __u32 rule, __u8 state)
{
	struct xdpr_ct_key ko = ct_key(in, rem, inp, remp, proto, XDPR_CT_OUT);
	const char *out = fwd_out(rule);
	struct xdpr_ct_key ki = ct_key(rem, out, remp, outp, proto, XDPR_CT_IN);
	struct xdpr_bind_key bk = { .out_addr = ip(out), .out_port = htons(outp), .proto = proto };
	struct xdpr_ct_val vo, vi;
	struct xdpr_bind b;
	bool ok = true;

	cur_step = what;
	if (!ct_get(&ko, &vo)) {
		note("no outbound half {%s, %s, %u, %u, proto %u, dir 0}", in, rem, inp, remp, proto);
		ok = false;
	} else if (vo.xaddr != ip(out) || ntohs(vo.xport) != outp || vo.rule != rule || vo.bind_gen ||
		   vo.state != state || !vo.created || !vo.last_seen) {
		note("outbound half: %s:%u rule %u gen %llu state 0x%x; expected %s:%u rule %u gen 0 state 0x%x",
		     ipstr(vo.xaddr), ntohs(vo.xport), vo.rule, (unsigned long long)vo.bind_gen, vo.state, out,
		     outp, rule, state);
		ok = false;
	}
	if (!ct_get(&ki, &vi)) {
		note("no inbound half {%s, %s, %u, %u, proto %u, dir 1}", rem, out, remp, outp, proto);
		ok = false;
	} else if (vi.xaddr != ip(in) || ntohs(vi.xport) != inp || vi.rule != rule || vi.bind_gen ||
		   vi.state != state) {
		note("inbound half: %s:%u rule %u gen %llu state 0x%x; expected %s:%u rule %u gen 0 state 0x%x",
		     ipstr(vi.xaddr), ntohs(vi.xport), vi.rule, (unsigned long long)vi.bind_gen, vi.state, in, inp,
		     rule, state);
		ok = false;
	}
	if (!bpf_map_lookup_elem(bind_fd, &bk, &b)) {
		note("a binding on the forwarded port %s:%u: %s:%u rule %u", out, outp, ipstr(b.in_addr),
		     ntohs(b.in_port), b.rule);
		ok = false;
	}
	if (host_nsess(in)) {
		note("xdpr_nat_hosts[%s].nsess %u, expected 0", in, host_nsess(in));
		ok = false;
	}
	cur_step = NULL;
	return ok;
}

/* ---- one forwarded flow: in from the client, out from the server ---- */

struct flow {
	const char *rem;     /* the outside client */
	__u16 remp;
	__u8 proto;
	__u16 outp;          /* the forwarded outside port on 10.0.2.1 */
	const char *in;      /* the inside server and its port */
	__u16 inp;
	__u32 rule;
};

/* Client -> 10.0.2.1:outp arriving on r1, leaving r0 to in:inp. */
static bool flow_in(const char *what, const struct flow *fl, __u8 flags, int plen, struct evs fev)
{
	struct pkt k = { .src = fl->rem, .dst = fwd_out(fl->rule), .proto = fl->proto, .sport = fl->remp,
			 .dport = fl->outp,
			 .flags = flags, .plen = plen };
	struct pkt x = dnat(k, fl->in, fl->inp, true);
	struct frame f, w;

	in_frame(&f, "r1", &k);
	fwd_frame(&w, "r0", &x);
	return fstep(what, "r1", &f, XDPR_FWD, &w, NOEV, fl->rule, fev);
}

/* Server in:inp -> client arriving on r0, leaving r1 from 10.0.2.1:outp. */
static bool flow_out(const char *what, const struct flow *fl, __u8 flags, int plen, struct evs fev)
{
	struct pkt k = { .src = fl->in, .dst = fl->rem, .proto = fl->proto, .sport = fl->inp, .dport = fl->remp,
			 .flags = flags, .plen = plen };
	struct pkt x = snat(k, fwd_out(fl->rule), fl->outp, true);
	struct frame f, w;

	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	return fstep(what, "r0", &f, XDPR_FWD, &w, NOEV, fl->rule, fev);
}

/* New flow in, the reply out, then one more packet each way (the established path). */
static bool flow_both(const char *what, const struct flow *fl)
{
	bool tcp = fl->proto == IPPROTO_TCP;
	__u8 both = XDPR_CT_SEEN_IN | XDPR_CT_SEEN_OUT;
	char name[160];
	bool ok;

	snprintf(name, sizeof(name), "%s: %s in", what, tcp ? "SYN" : "first datagram");
	ok = flow_in(name, fl, tcp ? TCP_SYN : 0, tcp ? NONE : 0, EV(NEW, XIN));
	ok &= fwd_sess(name, fl->in, fl->inp, fl->rem, fl->remp, fl->proto, fl->outp, fl->rule, XDPR_CT_SEEN_IN);
	snprintf(name, sizeof(name), "%s: %s out", what, tcp ? "SYN-ACK" : "reply");
	ok &= flow_out(name, fl, tcp ? TCP_SYN | TCP_ACK : 0, tcp ? NONE : 40, EV(XOUT));
	ok &= fwd_sess(name, fl->in, fl->inp, fl->rem, fl->remp, fl->proto, fl->outp, fl->rule, both);
	snprintf(name, sizeof(name), "%s: established, in", what);
	ok &= flow_in(name, fl, tcp ? TCP_ACK : 0, 200, EV(XIN));
	snprintf(name, sizeof(name), "%s: established, out", what);
	ok &= flow_out(name, fl, tcp ? TCP_PSH | TCP_ACK : 0, 333, EV(XOUT));
	ok &= fwd_sess(name, fl->in, fl->inp, fl->rem, fl->remp, fl->proto, fl->outp, fl->rule, both);
	return ok;
}

/* ---- cases ---- */

static bool t_tcp_same(void)
{
	fresh_fwd();
	return flow_both("tcp 10.0.2.2:40000 -> 10.0.2.1:2222 => 10.0.1.2:2222",
			 &(struct flow){ REM, 40000, IPPROTO_TCP, 2222, IN2, 2222, R_SAME });
}

static bool t_udp_same(void)
{
	fresh_fwd();
	return flow_both("udp 10.0.2.3:5555 -> 10.0.2.1:2222 => 10.0.1.2:2222",
			 &(struct flow){ REM3, 5555, IPPROTO_UDP, 2222, IN2, 2222, R_SAME });
}

static bool t_udp_range(void)
{
	bool ok;

	fresh_fwd();
	ok = flow_both("udp 10.0.2.2:4000 -> 10.0.2.1:5305 => 10.0.1.3:6305",
		       &(struct flow){ REM, 4000, IPPROTO_UDP, 5305, IN3, 6305, R_RANGE });
	ok &= flow_both("udp 10.0.2.2:4000 -> 10.0.2.1:5300 (first) => 10.0.1.3:6300",
			&(struct flow){ REM, 4000, IPPROTO_UDP, 5300, IN3, 6300, R_RANGE });
	ok &= flow_both("udp 10.0.2.3:4001 -> 10.0.2.1:5309 (last) => 10.0.1.3:6309",
			&(struct flow){ REM3, 4001, IPPROTO_UDP, 5309, IN3, 6309, R_RANGE });
	return ok;
}

static bool t_tcp_one(void)
{
	bool ok;

	fresh_fwd();
	ok = flow_both("tcp 10.0.2.2:41000 -> 10.0.2.1:7304 => 10.0.1.2:7400",
		       &(struct flow){ REM, 41000, IPPROTO_TCP, 7304, IN2, 7400, R_ONE });
	/* a second client flow on another port of the range, to the same inside port */
	ok &= flow_both("tcp 10.0.2.2:41001 -> 10.0.2.1:7309 => 10.0.1.2:7400",
			&(struct flow){ REM, 41001, IPPROTO_TCP, 7309, IN2, 7400, R_ONE });
	return ok;
}

static bool t_tcp_port(void)
{
	fresh_fwd();
	return flow_both("tcp 10.0.2.3:50000 -> 10.0.2.1:8080 => 10.0.1.2:80",
			 &(struct flow){ REM3, 50000, IPPROTO_TCP, 8080, IN2, 80, R_TCP });
}

/* No forward entry: no NAT step claims it, the FIB calls 10.0.2.1 local, the kernel gets it as it came. */
static bool not_fwd(const char *what, __u8 proto, __u16 dport)
{
	struct pkt k = { .src = REM, .dst = OUTA, .proto = proto, .sport = 4000, .dport = dport,
			 .flags = proto == IPPROTO_TCP ? TCP_SYN : 0, .plen = proto == IPPROTO_TCP ? NONE : 0 };
	struct frame f;
	bool ok;

	in_frame(&f, "r1", &k);
	ok = untouched(what, "r1", &f, XDPR_PASS_FIB_NOT_FWDED);
	ok &= expect(ct_halves() == 0, "%s: %d session halves, expected none", what, ct_halves());
	return ok;
}

static bool t_out_of_range(void)
{
	bool ok;

	fresh_fwd();
	ok = not_fwd("udp to 10.0.2.1:5310 (forward 5300-5309) -> pass_fib_not_fwded", IPPROTO_UDP, 5310);
	ok &= not_fwd("udp to 10.0.2.1:5299 (forward 5300-5309) -> pass_fib_not_fwded", IPPROTO_UDP, 5299);
	ok &= not_fwd("tcp to 10.0.2.1:7310 (forward 7300-7309) -> pass_fib_not_fwded", IPPROTO_TCP, 7310);
	ok &= not_fwd("tcp to 10.0.2.1:8081 (forward 8080) -> pass_fib_not_fwded", IPPROTO_TCP, 8081);
	return ok;
}

static bool t_wrong_proto(void)
{
	bool ok;

	fresh_fwd();
	ok = not_fwd("udp to 10.0.2.1:7300 (tcp-only forward) -> pass_fib_not_fwded", IPPROTO_UDP, 7300);
	ok &= not_fwd("udp to 10.0.2.1:8080 (tcp-only forward) -> pass_fib_not_fwded", IPPROTO_UDP, 8080);
	ok &= not_fwd("tcp to 10.0.2.1:5305 (udp-only forward) -> pass_fib_not_fwded", IPPROTO_TCP, 5305);
	return ok;
}

/*
 * The inside server's ICMP error about a forwarded flow (the quoted packet
 * as it was delivered to it): outer source and quoted destination to
 * 10.0.2.1:outside port.
 */
static bool err_from_server(const char *what, const struct flow *fl, __u8 type, __u8 code, int quote)
{
	__u8 qb[FRAME_MAX], wb[FRAME_MAX];
	struct pkt q = { .src = fl->rem, .dst = fl->in, .proto = fl->proto, .sport = fl->remp, .dport = fl->inp,
			 .ttl = 63, .plen = 64 }, qx = q, e, x;
	struct frame f, w;

	qx.dst = fwd_out(fl->rule);
	qx.dport = fl->outp;
	e = icmp_err(fl->in, fl->rem, type, code, &q, quote, qb);
	x = icmp_err(fwd_out(fl->rule), fl->rem, type, code, &qx, quote, wb);
	x.ttl = 63;
	in_frame(&f, "r0", &e);
	fwd_frame(&w, "r1", &x);
	return fstep(what, "r0", &f, XDPR_FWD, &w, NOEV, fl->rule, EV([XDPR_NE_ICMP_ERR_OUT] = 1));
}

/*
 * From outside about a reply of the server (the quoted packet as it left:
 * from 10.0.2.1:outside port): outer destination and quoted source to the
 * server.
 */
static bool err_about_reply(const char *what, const struct flow *fl, const char *from, __u8 type, __u8 code,
			    int quote)
{
	__u8 qb[FRAME_MAX], wb[FRAME_MAX];
	struct pkt q = { .src = fwd_out(fl->rule), .dst = fl->rem, .proto = fl->proto, .sport = fl->outp,
			 .dport = fl->remp,
			 .ttl = type == 11 ? 1 : 63, .plen = 64 }, qx = q, e, x;
	struct frame f, w;

	qx.src = fl->in;
	qx.sport = fl->inp;
	e = icmp_err(from, fwd_out(fl->rule), type, code, &q, quote, qb);
	x = icmp_err(from, fl->in, type, code, &qx, quote, wb);
	x.ttl = 63;
	in_frame(&f, "r1", &e);
	fwd_frame(&w, "r0", &x);
	return fstep(what, "r1", &f, XDPR_FWD, &w, NOEV, fl->rule, EV([XDPR_NE_ICMP_ERR_IN] = 1));
}

static bool t_icmp_errs(void)
{
	struct flow u = { REM, 4000, IPPROTO_UDP, 5305, IN3, 6305, R_RANGE };
	struct flow t = { REM, 41000, IPPROTO_TCP, 7304, IN2, 7400, R_ONE };
	bool ok;

	fresh_fwd();
	ok = flow_in("udp 10.0.2.2:4000 -> 10.0.2.1:5305 in", &u, 0, 0, EV(NEW, XIN));
	ok &= err_from_server("10.0.1.3 port unreachable about it, whole datagram quoted", &u, 3, 3, 0);
	ok &= flow_out("reply 10.0.1.3:6305 out", &u, 0, 0, EV(XOUT));
	ok &= err_about_reply("port unreachable from 10.0.2.2 about the reply, whole datagram quoted", &u, REM, 3,
			      3, 0);
	ok &= flow_in("tcp SYN 10.0.2.2:41000 -> 10.0.2.1:7304 in", &t, TCP_SYN, NONE, EV(NEW, XIN));
	ok &= err_from_server("10.0.1.2 host unreachable about it, IP + 28 bytes of tcp quoted", &t, 3, 1, 48);
	ok &= flow_out("SYN-ACK 10.0.1.2:7400 out", &t, TCP_SYN | TCP_ACK, NONE, EV(XOUT));
	ok &= err_about_reply("time exceeded from 10.0.2.9 about the SYN-ACK, IP + 8 bytes quoted", &t, HOP, 11,
			      0, 28);
	ok &= err_about_reply("frag needed from 10.0.2.9 about the SYN-ACK, whole segment quoted", &t, HOP, 3, 4,
			      0);
	return ok;
}

/*
 * The server is no inside host of r1's source NAT rules (rule 1 covers
 * 10.0.9.0/24 only, or r1 lists no rule at all): its replies and errors are
 * translated back all the same (nat4_fwd_reply); another inside host's
 * packet goes out as it is.
 */
static bool reply_uncovered(const char *what, bool no_rules)
{
	struct flow t = { REM, 40000, IPPROTO_TCP, 2222, IN2, 2222, R_SAME };
	struct flow u = { REM3, 4000, IPPROTO_UDP, 5305, IN3, 6305, R_RANGE };
	struct pkt o = { .src = IN3, .dst = REM, .sport = 999, .dport = 53 };
	struct pkt x = snat(o, IN3, 999, true);
	char name[160];
	struct frame f, w;
	bool ok;

	fresh_fwd();
	if (no_rules)
		iface_rules("r1", 0);
	else
		rule_write(1, XDPR_NAT_MASQ, "10.0.9.0", 24, NULL, 0, 1024, 65535);
	snprintf(name, sizeof(name), "%s, tcp 2222", what);
	ok = flow_both(name, &t);
	snprintf(name, sizeof(name), "%s, udp 5305 => 6305", what);
	ok &= flow_both(name, &u);
	snprintf(name, sizeof(name), "%s: 10.0.1.3 port unreachable about udp 5305 => 6305", what);
	ok &= err_from_server(name, &u, 3, 3, 0);
	in_frame(&f, "r0", &o);
	fwd_frame(&w, "r1", &x);
	snprintf(name, sizeof(name), "%s: 10.0.1.3:999 -> 10.0.2.2:53, no session: forwarded untranslated",
		 what);
	ok &= fstep(name, "r0", &f, XDPR_FWD, &w, NOEV, 0, NOEV);
	return ok;
}

static bool t_reply_no_cover(void)
{
	return reply_uncovered("masquerade only for 10.0.9.0/24", false);
}

static bool t_reply_no_rules(void)
{
	return reply_uncovered("r1 lists no source NAT rule", true);
}

/* Forward and masquerade on r1: a masqueraded flow goes as before, the forwards see nothing. */
static bool t_masq_beside(void)
{
	struct pkt k = { .src = IN3, .dst = REM, .proto = IPPROTO_TCP, .sport = 5000, .dport = 80, .flags = TCP_SYN,
			 .plen = NONE };
	struct pkt r = { .src = REM, .dst = OUTA, .proto = IPPROTO_TCP, .sport = 80, .dport = 5000,
			 .flags = TCP_SYN | TCP_ACK, .plen = NONE };
	struct pkt x = snat(k, OUTA, 5000, true);
	struct frame f, w;
	bool ok;

	fresh_fwd();
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	ok = fstep("masquerade: tcp SYN 10.0.1.3:5000 -> 10.0.2.2:80 as 10.0.2.1:5000", "r0", &f, XDPR_FWD, &w,
		   EV(XOUT, NEW, KEPT), 0, NOEV);
	ok &= check_sess("masqueraded session", &(struct sess){ IN3, REM, OUTA, 5000, 80, 5000, IPPROTO_TCP,
								XDPR_CT_SEEN_OUT, 1, 1 });
	in_frame(&f, "r1", &r);
	x = dnat(r, IN3, 5000, true);
	fwd_frame(&w, "r0", &x);
	ok &= fstep("masquerade: SYN-ACK in to 10.0.1.3:5000", "r1", &f, XDPR_FWD, &w, EV(XIN), 0, NOEV);
	/* and a forward's flow meanwhile */
	ok &= flow_both("forward beside it: tcp 10.0.2.2:40000 -> 10.0.2.1:2222",
			&(struct flow){ REM, 40000, IPPROTO_TCP, 2222, IN2, 2222, R_SAME });
	return ok;
}

/*
 * The allocator never hands out a forwarded port.  Rule 1's ports narrowed
 * to 5300-5310, of which the forward 3 owns 5300-5309 for udp (to
 * 10.0.1.3, whose host count the forward's sessions leave at 0): an inside
 * udp port 5305 would be kept (port preservation) and any other probe
 * lands on a forward's port or on 5310; the forward's range costs one
 * probe.  For tcp the forward owns nothing there: 5305 is kept.
 */
static bool t_alloc_skips(void)
{
	struct pkt u = { .src = IN2, .dst = REM, .sport = 5305, .dport = 53 };
	struct pkt t = { .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 5305, .dport = 80, .flags = TCP_SYN,
			 .plen = NONE };
	struct pkt x = snat(u, OUTA, 5310, true);
	struct frame f, w;
	bool ok;

	fresh_fwd();
	rule_write(1, XDPR_NAT_MASQ, "0.0.0.0", 0, NULL, 0, 5300, 5310);
	in_frame(&f, "r0", &u);
	fwd_frame(&w, "r1", &x);
	ok = fstep("udp 10.0.1.2:5305 out: not 5305 (forwarded), 10.0.2.1:5310", "r0", &f, XDPR_FWD, &w,
		   EV(XOUT, NEW, [XDPR_NE_PORT_SHADOWED] = 1), 0, NOEV);
	ok &= check_sess("udp session", &(struct sess){ IN2, REM, OUTA, 5305, 53, 5310, IPPROTO_UDP,
							XDPR_CT_SEEN_OUT, 1, 1 });
	x = snat(t, OUTA, 5305, true);
	in_frame(&f, "r0", &t);
	fwd_frame(&w, "r1", &x);
	ok &= fstep("tcp 10.0.1.2:5305 out: kept (the forward is udp only)", "r0", &f, XDPR_FWD, &w,
		    EV(XOUT, NEW, KEPT), 0, NOEV);
	/* the forward still takes its port */
	ok &= flow_both("udp 10.0.2.2:4000 -> 10.0.2.1:5305 beside it",
			&(struct flow){ REM, 4000, IPPROTO_UDP, 5305, IN3, 6305, R_RANGE });
	return ok;
}

/*
 * With rule 1's whole range (1024-65535): a server opening a flow of its
 * own from its forwarded port 2222 (no forward session: to 10.0.2.3:53)
 * is masqueraded, but not to 10.0.2.1:2222, nor to any port a forward owns.
 */
static bool t_alloc_own_flow(void)
{
	struct pkt k = { .src = IN2, .dst = REM3, .sport = 2222, .dport = 53 };
	struct result *r = calloc(1, sizeof(*r));
	struct frame f, w;
	struct pkt x;
	__u16 p = 0;
	bool ok;

	if (!r)
		die("out of memory");
	fresh_fwd();
	in_frame(&f, "r0", &k);
	run("r0", &f, r);
	ok = out_of(IN2, REM3, 2222, 53, IPPROTO_UDP, NULL, &p);
	note("outside port %u", p);
	ok &= expect(p != 2222 && !(p >= 5300 && p <= 5309) && p != 443,
		     "outside port %u is a forwarded udp port", p);
	x = snat(k, OUTA, p, true);
	fwd_frame(&w, "r1", &x);
	ok &= check("udp 10.0.1.2:2222 -> 10.0.2.3:53, no forward session: masqueraded elsewhere", r, XDPR_FWD,
		    &w, EV(XOUT, NEW, [XDPR_NE_PORT_SHADOWED] = 1));
	free(r);
	return ok;
}

/*
 * Reflection: 10.0.1.3:7000 -> 10.0.2.1:2222 from inside.  Its source is
 * masqueraded by rule 1 (10.0.2.1:7000, port kept), then forward 2 takes
 * it to 10.0.1.2:2222: hairpinned, counted on the forward.  The server's
 * reply to 10.0.2.1:7000 hairpins back through the client's binding
 * (counted on rule 1) from 10.0.2.1:2222.
 */
static bool reflect_step(const char *what, __u8 proto, bool from_client, __u8 flags, int plen,
			 struct evs masq, struct evs fev)
{
	struct pkt c = { .src = IN3, .dst = OUTA, .proto = proto, .sport = 7000, .dport = 2222,
			 .flags = flags, .plen = plen };
	struct pkt s = { .src = IN2, .dst = OUTA, .proto = proto, .sport = 2222, .dport = 7000,
			 .flags = flags, .plen = plen };
	struct pkt k = from_client ? c : s;
	struct pkt x = snat(k, OUTA, k.sport, true);
	struct frame f, w;

	x = dnat(x, from_client ? IN2 : IN3, k.dport, false);
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r0", &x);
	return fstep(what, "r0", &f, XDPR_FWD, &w, masq, R_SAME, fev);
}

static bool t_reflect(void)
{
	bool ok;

	fresh_fwd();
	ok = reflect_step("SYN 10.0.1.3:7000 -> 10.0.2.1:2222 => from 10.0.2.1:7000 to 10.0.1.2:2222", IPPROTO_TCP,
			  true, TCP_SYN, NONE, EV(XOUT, NEW, KEPT), EV(NEW, XIN, [XDPR_NE_HAIRPIN] = 1));
	ok &= fwd_sess("reflected session", IN2, 2222, OUTA, 7000, IPPROTO_TCP, 2222, R_SAME, XDPR_CT_SEEN_IN);
	ok &= check_sess("client's session", &(struct sess){ IN3, OUTA, OUTA, 7000, 2222, 7000, IPPROTO_TCP,
							     XDPR_CT_SEEN_OUT, 1, 1 });
	ok &= reflect_step("SYN-ACK 10.0.1.2:2222 -> 10.0.2.1:7000 => from 10.0.2.1:2222 to 10.0.1.3:7000",
			   IPPROTO_TCP, false, TCP_SYN | TCP_ACK, NONE, EV(XIN, [XDPR_NE_HAIRPIN] = 1), EV(XOUT));
	ok &= reflect_step("established: ACK from the client", IPPROTO_TCP, true, TCP_ACK, 100, EV(XOUT),
			   EV(XIN, [XDPR_NE_HAIRPIN] = 1));
	ok &= reflect_step("established: data from the server", IPPROTO_TCP, false, TCP_PSH | TCP_ACK, 333,
			   EV(XIN, [XDPR_NE_HAIRPIN] = 1), EV(XOUT));
	return ok;
}

static bool t_reflect_udp(void)
{
	bool ok;

	fresh_fwd();
	ok = reflect_step("udp 10.0.1.3:7000 -> 10.0.2.1:2222 => from 10.0.2.1:7000 to 10.0.1.2:2222", IPPROTO_UDP,
			  true, 0, 0, EV(XOUT, NEW, KEPT), EV(NEW, XIN, [XDPR_NE_HAIRPIN] = 1));
	ok &= reflect_step("reply 10.0.1.2:2222 -> 10.0.2.1:7000 => from 10.0.2.1:2222 to 10.0.1.3:7000",
			   IPPROTO_UDP, false, 0, 40, EV(XIN, [XDPR_NE_HAIRPIN] = 1), EV(XOUT));
	ok &= reflect_step("again from the client", IPPROTO_UDP, true, 0, 100, EV(XOUT),
			   EV(XIN, [XDPR_NE_HAIRPIN] = 1));
	ok &= reflect_step("again from the server", IPPROTO_UDP, false, 0, 333, EV(XIN, [XDPR_NE_HAIRPIN] = 1),
			   EV(XOUT));
	return ok;
}

/*
 * A forward on 198.51.100.7, an address the upstream routes to r1: from
 * outside both ways (the server's replies keep the forward's address,
 * though rule 1 masquerades it as 10.0.2.1), an ICMP error from the
 * server; from inside, the FIB sends the packet to the upstream
 * (masqueraded), which sends it back to r1, where the forward takes it;
 * the server's reply to 10.0.2.1 hairpins to the client from
 * 198.51.100.7:443.
 */
static bool t_other_addr(void)
{
	struct flow fl = { REM, 40000, IPPROTO_TCP, 443, IN3, 8443, R_OTHER };
	struct flow u = { REM3, 4000, IPPROTO_UDP, 443, IN3, 8443, R_OTHER };
	struct pkt c = { .src = IN2, .dst = OTHER, .proto = IPPROTO_TCP, .sport = 7100, .dport = 443,
			 .flags = TCP_SYN, .plen = NONE };
	struct pkt x = snat(c, OUTA, 7100, true), back, sv;
	struct frame f, w;
	__u8 gw[6];
	bool ok;

	fresh_fwd();
	ok = flow_both("tcp 10.0.2.2:40000 -> 198.51.100.7:443 => 10.0.1.3:8443", &fl);
	ok &= flow_in("udp 10.0.2.3:4000 -> 198.51.100.7:443 => 10.0.1.3:8443", &u, 0, 0, EV(NEW, XIN));
	ok &= err_from_server("10.0.1.3 port unreachable about it: from 198.51.100.7", &u, 3, 3, 0);
	in_frame(&f, "r0", &c);
	neigh_mac(REM, gw); /* the default route's gateway */
	mkframe(&w, gw, dev_get("r1")->hw, &x);
	ok &= fstep("inside: SYN 10.0.1.2:7100 -> 198.51.100.7:443 -> upstream, masqueraded", "r0", &f, XDPR_FWD,
		    &w, EV(XOUT, NEW, KEPT), 0, NOEV);
	back = x;
	in_frame(&f, "r1", &back);
	x = dnat(back, IN3, 8443, true);
	fwd_frame(&w, "r0", &x);
	ok &= fstep("back from upstream: 10.0.2.1:7100 -> 198.51.100.7:443 => 10.0.1.3:8443", "r1", &f, XDPR_FWD,
		    &w, NOEV, R_OTHER, EV(NEW, XIN));
	sv = (struct pkt){ .src = IN3, .dst = OUTA, .proto = IPPROTO_TCP, .sport = 8443, .dport = 7100,
			   .flags = TCP_SYN | TCP_ACK, .plen = NONE };
	in_frame(&f, "r0", &sv);
	x = dnat(snat(sv, OTHER, 443, true), IN2, 7100, false);
	fwd_frame(&w, "r0", &x);
	ok &= fstep("SYN-ACK 10.0.1.3:8443 -> 10.0.2.1:7100 => from 198.51.100.7:443 to 10.0.1.2:7100 (hairpin)",
		    "r0", &f, XDPR_FWD, &w, EV(XIN, [XDPR_NE_HAIRPIN] = 1), R_OTHER, EV(XOUT));
	return ok;
}

/* A client no source NAT rule of r1 covers is not reflected: the kernel gets the packet as it came. */
static bool t_reflect_uncovered(void)
{
	struct pkt c = { .src = IN3, .dst = OUTA, .proto = IPPROTO_TCP, .sport = 7000, .dport = 2222,
			 .flags = TCP_SYN, .plen = NONE };
	struct frame f;
	bool ok;

	fresh_fwd();
	rule_write(1, XDPR_NAT_MASQ, "10.0.9.0", 24, NULL, 0, 1024, 65535);
	in_frame(&f, "r0", &c);
	ok = untouched("SYN 10.0.1.3:7000 -> 10.0.2.1:2222, masquerade for 10.0.9.0/24 only -> "
		       "pass_fib_not_fwded", "r0", &f, XDPR_PASS_FIB_NOT_FWDED);
	ok &= expect(ct_halves() == 0, "%d session halves, expected none", ct_halves());
	return ok;
}

/*
 * XDP's time exceeded about k arriving on dev (icmp4_send): from the
 * address k was sent to, back to its sender's MAC, TOS 0xc0, ID 0, TTL 64,
 * quoting the packet as it arrived (IP header + 8 bytes).
 */
static void ttl_answer(struct frame *w, const char *dev, const struct pkt *k)
{
	__u8 qb[FRAME_MAX], peer[6], *b = w->b + ETH_HLEN;
	struct pkt e = icmp_err(k->dst, k->src, 11, 0, k, 28, qb);

	mac_parse(dev_get(dev)->peer_mac, peer);
	mkframe(w, peer, dev_get(dev)->hw, &e);
	b[1] = 0xc0;
	put16(b + 4, 0);
	put16(b + 10, 0);
	put16(b + 10, ~fold(sum16(b, 20, 0)));
}

/* k arriving on dev with TTL 1: answered from XDP before any translation; no session, no binding. */
static bool ttl1(const char *what, const char *dev, const struct pkt *k)
{
	struct frame f, w;
	bool ok;

	fresh_fwd();
	in_frame(&f, dev, k);
	ttl_answer(&w, dev, k);
	ok = fstep(what, dev, &f, XDPR_TX_ICMP_TTL, &w, NOEV, 0, NOEV);
	ok &= expect(ct_halves() == 0, "%d session halves, expected none", ct_halves());
	ok &= expect(map_count(bind_fd) == 0, "%d bindings, expected none", map_count(bind_fd));
	return ok;
}

static bool t_ttl1(void)
{
	return ttl1("tcp SYN TTL 1 to 10.0.2.1:2222 -> time exceeded from 10.0.2.1 (XDP_TX), quoting it untranslated",
		    "r1", &(struct pkt){ .src = REM, .dst = OUTA, .proto = IPPROTO_TCP, .sport = 40000, .dport = 2222,
					 .flags = TCP_SYN, .plen = NONE, .ttl = 1 });
}

/*
 * Range to one port, one client socket on two ports of the range: both are
 * the same inside flow (10.0.1.2:7400 <-> 10.0.2.2:42000), the second is
 * dropped (README: drop_nat_busy, where the kernel remaps the port).
 */
static bool t_one_clash(void)
{
	struct flow a = { REM, 42000, IPPROTO_TCP, 7300, IN2, 7400, R_ONE };
	struct pkt k = { .src = REM, .dst = OUTA, .proto = IPPROTO_TCP, .sport = 42000, .dport = 7301,
			 .flags = TCP_SYN, .plen = NONE };
	struct pkt x = dnat(k, IN2, 7400, false);
	struct frame f, w;
	bool ok;

	fresh_fwd();
	ok = flow_in("SYN 10.0.2.2:42000 -> 10.0.2.1:7300 => 10.0.1.2:7400", &a, TCP_SYN, NONE, EV(NEW, XIN));
	in_frame(&f, "r1", &k);
	/* dropped after its translation (the session comes last): the bytes never leave */
	in_frame(&w, "r1", &x);
	ok &= fstep("SYN 10.0.2.2:42000 -> 10.0.2.1:7301, the same inside flow -> drop_nat_busy", "r1", &f,
		    XDPR_DROP_NAT_BUSY, &w, NOEV, R_ONE, EV([XDPR_NE_BUSY] = 1));
	ok &= fwd_sess("the first session kept", IN2, 7400, REM, 42000, IPPROTO_TCP, 7300, R_ONE, XDPR_CT_SEEN_IN);
	return ok;
}

/*
 * A reflected packet whose TTL runs out here: as a forward's packet from
 * outside (t_ttl1) and as nft's dnat + forward would, time exceeded to the
 * client from 10.0.2.1, quoting the packet as it came; no session, no
 * binding made for it.
 */
static bool t_reflect_ttl1(void)
{
	return ttl1("reflected SYN 10.0.1.3:7000 -> 10.0.2.1:2222 TTL 1 -> time exceeded from 10.0.2.1, untranslated",
		    "r0", &(struct pkt){ .src = IN3, .dst = OUTA, .proto = IPPROTO_TCP, .sport = 7000, .dport = 2222,
					 .flags = TCP_SYN, .plen = NONE, .ttl = 1 });
}

/*
 * The server's ICMP error about a reflected flow (udp to a closed port):
 * translated as its data is, back to the client: from 10.0.2.1, quoting
 * the datagram as the client sent it (10.0.1.3:7000 -> 10.0.2.1:2222).
 */
static bool t_reflect_err(void)
{
	struct pkt c = { .src = IN3, .dst = OUTA, .sport = 7000, .dport = 2222 };
	struct pkt x = dnat(snat(c, OUTA, 7000, true), IN2, 2222, false);
	struct pkt q = x, qc = c, e, ex;
	__u8 qb[FRAME_MAX], wb[FRAME_MAX];
	struct frame f, w;
	bool ok;

	fresh_fwd();
	in_frame(&f, "r0", &c);
	fwd_frame(&w, "r0", &x);
	ok = fstep("udp 10.0.1.3:7000 -> 10.0.2.1:2222 => from 10.0.2.1:7000 to 10.0.1.2:2222", "r0", &f, XDPR_FWD,
		   &w, EV(XOUT, NEW, KEPT), R_SAME, EV(NEW, XIN, [XDPR_NE_HAIRPIN] = 1));
	/* 10.0.1.2 answers port unreachable, quoting what it got */
	e = icmp_err(IN2, OUTA, 3, 3, &q, 0, qb);
	qc.ttl = 63;
	ex = icmp_err(OUTA, IN3, 3, 3, &qc, 0, wb);
	ex.ttl = 63;
	in_frame(&f, "r0", &e);
	fwd_frame(&w, "r0", &ex);
	ok &= fstep("10.0.1.2 port unreachable about it -> to 10.0.1.3 from 10.0.2.1, quoting the client's datagram",
		    "r0", &f, XDPR_FWD, &w, EV([XDPR_NE_ICMP_ERR_IN] = 1, [XDPR_NE_HAIRPIN] = 1), R_SAME,
		    EV([XDPR_NE_ICMP_ERR_OUT] = 1));
	return ok;
}

/*
 * Handed to the kernel to forward, translated (L2 and TTL as they came),
 * reason: from 10.0.2.2:40000 arriving on r1 to 10.0.2.1:k->dport, now to
 * in:inp; its session made.  k: the rest of the packet.
 */
static bool to_kernel(const char *what, struct pkt k, const char *in, __u16 inp, __u32 rule, int reason)
{
	struct pkt x;
	struct frame f, w;
	bool ok;

	k.src = REM, k.dst = OUTA, k.sport = 40000;
	x = dnat(k, in, inp, false);
	fresh_fwd();
	in_frame(&f, "r1", &k);
	in_frame(&w, "r1", &x);
	ok = fstep(what, "r1", &f, reason, &w, NOEV, rule, EV(NEW, XIN));
	ok &= fwd_sess(what, in, inp, REM, 40000, k.proto ?: IPPROTO_UDP, k.dport, rule, XDPR_CT_SEEN_IN);
	return ok;
}

/* The inside host's MAC unknown: the kernel resolves the neighbour and forwards it. */
static bool t_no_neigh(void)
{
	return to_kernel("SYN to 10.0.2.1:6000 => 10.0.1.77:6000, no neighbour -> pass_fib_no_neigh, translated",
			 (struct pkt){ .proto = IPPROTO_TCP, .dport = 6000, .flags = TCP_SYN, .plen = NONE }, NONB,
			 6000, R_NONB, XDPR_PASS_FIB_NO_NEIGH);
}

static bool t_options(void)
{
	return to_kernel("SYN with options to 10.0.2.1:7305 => 10.0.1.2:7400 -> pass_ip4_options, translated",
			 (struct pkt){ .proto = IPPROTO_TCP, .dport = 7305, .flags = TCP_SYN, .plen = NONE,
				       .opts = true }, IN2, 7400, R_ONE, XDPR_PASS_IP4_OPTIONS);
}

/*
 * A udp datagram in fragments to a forwarded port.  The kernel (nft dnat)
 * reassembles and forwards it to 10.0.1.2:2222.  Handed to the kernel
 * untranslated, it is reassembled for the router itself (port unreachable
 * from 10.0.2.1).  Expected: the first fragment, which has the ports,
 * translated and handed to the kernel to forward, its session made.
 */
static bool t_frag_in(void)
{
	return to_kernel("first fragment (MF) of udp to 10.0.2.1:2222 -> pass_ip4_frag, to 10.0.1.2:2222",
			 (struct pkt){ .dport = 2222, .frag = 0x2000, .plen = 64 }, IN2, 2222, R_SAME,
			 XDPR_PASS_IP4_FRAG);
}

/*
 * A frame cut inside its IPv4 header, run as step() would, but with no
 * checksum of the output to recompute: it must come back as it went in.
 */
static bool short_step(const char *what, const char *dev, const struct frame *f, int reason)
{
	struct result *r = calloc(1, sizeof(*r));
	struct evs a[NFR], b[NFR];
	bool ok;

	if (!r)
		die("out of memory");
	read_fev(a);
	run(dev, f, r);
	read_fev(b);
	cur_step = what;
	ok = expect(!r->err, "BPF_PROG_TEST_RUN: %s", strerror(-r->err));
	ok &= expect(r->verdict == (__u32)xdpr_reason_verdict(reason), "verdict: expected %s, got %s",
		     verdict_name(xdpr_reason_verdict(reason)), verdict_name(r->verdict));
	for (int i = 0; i < XDPR_REASON_MAX; i++)
		ok &= expect(r->after[i].packets - r->before[i].packets == (i == reason),
			     "reason %s: +%llu packets", xdpr_reason_name(i),
			     (unsigned long long)(r->after[i].packets - r->before[i].packets));
	ok &= ev_delta(what, &r->ev0, &r->ev1, NOEV);
	for (int k = 0; k < NFR; k++)
		for (int i = 0; i < XDPR_NE_MAX; i++)
			ok &= expect(a[k].n[i] == b[k].n[i], "forward rule %d event %s moved", k + R_FIRST,
				     xdpr_nat_event_name(i));
	cur_step = what;
	ok &= same_bytes(f, &r->out);
	cur_step = NULL;
	free(r);
	return ok;
}

/*
 * Cut frames to a forwarded port get what they get without the forward:
 * each is run with forward 2 in place and again with r1's XDPR_IF_FWD
 * off and the port's entries gone; both runs must give reason and bytes
 * and make no session.
 */
static bool cut_both(const char *what, const char *dev, const struct frame *f, int reason, struct evs masq)
{
	bool hdr = f->len < ETH_HLEN + 20;
	struct xdpr_bind_key kt = { .out_addr = ip(OUTA), .out_port = htons(2222), .proto = IPPROTO_TCP };
	struct xdpr_bind_key ku = { .out_addr = ip(OUTA), .out_port = htons(2222), .proto = IPPROTO_UDP };
	struct xdpr_fwd vt, vu;
	char name[200];
	bool ok;

	snprintf(name, sizeof(name), "%s, forward 2222 in place", what);
	ok = hdr ? short_step(name, dev, f, reason) : fstep(name, dev, f, reason, NULL, masq, 0, NOEV);
	ok &= expect(ct_halves() == 0, "%s: %d session halves, expected none", name, ct_halves());
	if (bpf_map_lookup_elem(fwd_fd, &kt, &vt) || bpf_map_lookup_elem(fwd_fd, &ku, &vu) ||
	    bpf_map_delete_elem(fwd_fd, &kt) || bpf_map_delete_elem(fwd_fd, &ku))
		die("cannot take port 2222 out of xdpr_nat_fwd");
	iface_flag("r1", XDPR_IF_FWD, false);
	snprintf(name, sizeof(name), "%s, no forward", what);
	ok &= hdr ? short_step(name, dev, f, reason) : fstep(name, dev, f, reason, NULL, masq, 0, NOEV);
	iface_flag("r1", XDPR_IF_FWD, true);
	if (bpf_map_update_elem(fwd_fd, &kt, &vt, BPF_NOEXIST) || bpf_map_update_elem(fwd_fd, &ku, &vu, BPF_NOEXIST))
		die("cannot put port 2222 back");
	return ok;
}

/* k's frame, its IP total length set to tot (header checksum fixed), cut to frame bytes (0: as built). */
static void cut_frame(struct frame *f, const char *dev, const struct pkt *k, int tot, int frame)
{
	__u8 *b = f->b + ETH_HLEN;

	in_frame(f, dev, k);
	put16(b + 2, tot);
	put16(b + 10, 0);
	put16(b + 10, ~fold(sum16(b, 20, 0)));
	if (frame)
		f->len = frame;
}

static bool t_cut(void)
{
	struct pkt t = { .src = REM, .dst = OUTA, .proto = IPPROTO_TCP, .sport = 40000, .dport = 2222,
			 .flags = TCP_SYN, .plen = NONE };
	struct pkt u = { .src = REM, .dst = OUTA, .sport = 4000, .dport = 2222, .plen = NONE };
	struct pkt s = { .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 2222, .dport = 40000,
			 .flags = TCP_SYN | TCP_ACK, .plen = NONE };
	struct frame f;
	bool ok;

	fresh_fwd();
	cut_frame(&f, "r1", &t, 40, ETH_HLEN + 12);
	ok = cut_both("tcp to 10.0.2.1:2222, frame ends 12 bytes into the IPv4 header -> drop_short", "r1", &f,
		      XDPR_DROP_SHORT, NOEV);
	cut_frame(&f, "r1", &t, 40, ETH_HLEN + 30);
	ok &= cut_both("tcp to 10.0.2.1:2222, total length 40 in a 30-byte packet -> pass_ip4_hdr_err", "r1", &f,
		       XDPR_PASS_IP4_HDR_ERR, NOEV);
	cut_frame(&f, "r1", &t, 32, ETH_HLEN + 32);
	ok &= cut_both("tcp to 10.0.2.1:2222, total length ends 12 bytes into the tcp header -> "
		       "pass_fib_not_fwded (to the kernel, untranslated)", "r1", &f, XDPR_PASS_FIB_NOT_FWDED, NOEV);
	cut_frame(&f, "r1", &u, 24, ETH_HLEN + 24);
	ok &= cut_both("udp to 10.0.2.1:2222, total length ends 4 bytes into the udp header -> "
		       "pass_fib_not_fwded (to the kernel, untranslated)", "r1", &f, XDPR_PASS_FIB_NOT_FWDED, NOEV);
	/* the server's side: rule 1 covers it and cannot translate it */
	cut_frame(&f, "r0", &s, 32, ETH_HLEN + 32);
	ok &= cut_both("tcp from 10.0.1.2:2222, total length ends 12 bytes into the tcp header -> "
		       "drop_nat_untranslatable", "r0", &f, XDPR_DROP_NAT_UNTRANSLATABLE,
		       EV([XDPR_NE_UNTRANSLATABLE] = 1));
	return ok;
}

/*
 * A forward whose slot is still marked (a `nat add in` killed before its
 * commit: ports and interface flag written) takes nothing, inbound or
 * reflected; committed, the same frame is forwarded.
 */
static bool t_uncommitted(void)
{
	struct pkt k = { .src = REM, .dst = OUTA, .proto = IPPROTO_TCP, .sport = 40000, .dport = 9000,
			 .flags = TCP_SYN, .plen = NONE };
	struct pkt c = { .src = IN3, .dst = OUTA, .proto = IPPROTO_TCP, .sport = 7000, .dport = 9000,
			 .flags = TCP_SYN, .plen = NONE };
	struct xdpr_nat_rule r = fwd_slot(&pend);
	struct frame f;
	bool ok;

	fresh_fwd();
	fwd_add(&pend, false);
	in_frame(&f, "r1", &k);
	ok = untouched("SYN 10.0.2.2:40000 -> 10.0.2.1:9000, slot not committed -> pass_fib_not_fwded", "r1", &f,
		       XDPR_PASS_FIB_NOT_FWDED);
	in_frame(&f, "r0", &c);
	ok &= untouched("SYN 10.0.1.3:7000 -> 10.0.2.1:9000 (reflection), slot not committed -> "
			"pass_fib_not_fwded", "r0", &f, XDPR_PASS_FIB_NOT_FWDED);
	ok &= expect(ct_halves() == 0, "%d session halves, expected none", ct_halves());
	r.pending = 0;
	if (bpf_map_update_elem(rules_fd, &pend.id, &r, BPF_ANY))
		die("cannot commit forward %u: %s", pend.id, strerror(errno));
	ok &= flow_in("committed: the same SYN => 10.0.1.2:9000", &(struct flow){ REM, 40000, IPPROTO_TCP, 9000,
		      IN2, 9000, R_PEND }, TCP_SYN, NONE, EV(NEW, XIN));
	return ok;
}

static const struct {
	const char *name;
	bool (*fn)(void);
	const char *todo;   /* a known defect: TAP "# TODO" with this message */
} cases[] = {
	{ "tcp port to same port: SYN in, SYN-ACK out, established both ways", t_tcp_same, NULL },
	{ "udp port to same port: both ways twice", t_udp_same, NULL },
	{ "udp range to range (offset 1000): middle, first, last port", t_udp_range, NULL },
	{ "tcp range to one port: two ports of the range, same inside port", t_tcp_one, NULL },
	{ "tcp one port to another (8080 -> 80)", t_tcp_port, NULL },
	{ "ports just outside a forward's range: not translated", t_out_of_range, NULL },
	{ "another protocol than the forward's: not translated", t_wrong_proto, NULL },
	{ "icmp errors: from the server (quoted dst) and from outside about its replies (quoted src)",
	  t_icmp_errs, NULL },
	{ "server no source NAT rule covers: replies and errors translated back", t_reply_no_cover, NULL },
	{ "r1 without source NAT rules: replies and errors translated back", t_reply_no_rules, NULL },
	{ "forward beside masquerade: the masqueraded flow as before", t_masq_beside, NULL },
	{ "the allocator skips forwarded ports (udp), not another protocol's (tcp)", t_alloc_skips, NULL },
	{ "the server's own flow from its forwarded port: masqueraded to another port", t_alloc_own_flow, NULL },
	{ "a forward on an address the upstream routes to the router", t_other_addr, NULL },
	{ "reflection: client -> 10.0.2.1:2222 reaches 10.0.1.2, replies back, hairpinned", t_reflect, NULL },
	{ "reflection, udp: both ways twice", t_reflect_udp, NULL },
	{ "reflection of a client no source NAT rule covers: to the kernel", t_reflect_uncovered, NULL },
	{ "reflection, TTL 1: time exceeded, untranslated, no session", t_reflect_ttl1, NULL },
	{ "reflection: the server's icmp error back to the client", t_reflect_err, NULL },
	{ "TTL 1 to a forwarded port: time exceeded from XDP, untranslated", t_ttl1, NULL },
	{ "inside host without neighbour: to the kernel translated, session made", t_no_neigh, NULL },
	{ "range to one port, one client socket on two ports: the second dropped", t_one_clash, NULL },
	{ "cut frames to (and from) a forwarded port: as without the forward", t_cut, NULL },
	{ "IPv4 options: to the kernel translated, session made", t_options, NULL },
	{ "first fragment of a udp datagram to a forwarded port", t_frag_in,
	  "gap: inbound fragments are never translated (nat4_keyable refuses fragments): pass_fib_not_fwded "
	  "untouched, the kernel reassembles it for the router; later fragments would need tracking too" },
	{ "a forward whose slot is not committed is ignored", t_uncommitted, NULL },
};

#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 0;
	}
	table_init();
	fwd_fd = bpf_map__fd(skel->maps.xdpr_nat_fwd);
	/* the upstream: everything else, 198.51.100.7 included, is behind 10.0.2.2 */
	if (sh("/sbin/ip route add default via %s dev r1", REM))
		die("cannot add the default route");
	printf("1..%d\n", NCASES);
	for (int i = 0; i < NCASES; i++) {
		bool ok = cases[i].fn();

		if (!cases[i].todo) {
			tap(ok, cases[i].name, NULL);
			continue;
		}
		/* TAP TODO: reported, not counted as a failure */
		printf("%s %d - %s # TODO %s\n", ok ? "ok" : "not ok", ++tap_n, cases[i].name, cases[i].todo);
		fputs(diag, stdout);
		diag_len = 0;
		diag[0] = 0;
	}
	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
