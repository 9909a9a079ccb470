// SPDX-License-Identifier: GPL-2.0
/*
 * test_nat.c - the source-NAT datapath of xdpr_main against the real kernel
 * FIB, one BPF_PROG_TEST_RUN per frame: translation both ways, checksums,
 * TCP state, ICMP echo and errors, mapping and filtering, what must not
 * leave untranslated, exhaustion, limits, expiry, hairpin, pools, a full
 * table.  The namespace, the frames and the checks every step makes are
 * the NAT table's (nat_table.h); test_nat2 holds the regression cases of
 * issue 10.  TAP on stdout; exit 1 if any case failed.
 */
#define _GNU_SOURCE
#include "nat_table.h"

/* ---- cases ---- */

/* Outbound UDP that stays set up for the next case (the reply). */
static bool t_udp_out(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt x = snat(k, OUTA, 5000, true);
	struct frame f, w;
	bool ok;

	fresh();
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	ok = step("udp 10.0.1.2:5000 -> 10.0.2.2:53", "r0", &f, XDPR_FWD, &w,
		  EV(XOUT, NEW, KEPT));
	ok &= check_sess("session", &(struct sess){ IN2, REM, OUTA, 5000, 53, 5000, IPPROTO_UDP,
						    XDPR_CT_SEEN_OUT, 1, 1 });
	ok &= expect(host_nsess(IN2) == 1, "xdpr_nat_hosts[10.0.1.2].nsess %u, expected 1",
		     host_nsess(IN2));
	return ok;
}

static bool t_udp_reply(void)
{
	struct pkt k = { .src = REM, .dst = OUTA, .sport = 53, .dport = 5000 };
	struct pkt x = dnat(k, IN2, 5000, true);
	struct frame f, w;
	bool ok;

	in_frame(&f, "r1", &k);
	fwd_frame(&w, "r0", &x);
	ok = step("udp reply 10.0.2.2:53 -> 10.0.2.1:5000", "r1", &f, XDPR_FWD, &w, EV(XIN));
	ok &= check_sess("session", &(struct sess){ IN2, REM, OUTA, 5000, 53, 5000, IPPROTO_UDP,
						    XDPR_CT_SEEN_OUT | XDPR_CT_SEEN_IN, 1, 1 });
	return ok;
}

static bool t_udp_nocsum(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5001, .dport = 53, .nocsum = true };
	struct pkt x = snat(k, OUTA, 5001, true);
	struct pkt r = { .src = REM, .dst = OUTA, .sport = 53, .dport = 5001, .nocsum = true };
	struct frame f, w;
	bool ok;

	fresh();
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	ok = step("out, checksum 0", "r0", &f, XDPR_FWD, &w, EV(XOUT, NEW, KEPT));
	in_frame(&f, "r1", &r);
	x = dnat(r, IN2, 5001, true);
	fwd_frame(&w, "r0", &x);
	ok &= step("reply, checksum 0", "r1", &f, XDPR_FWD, &w, EV(XIN));
	return ok;
}

/* The payload word that makes the translated datagram's checksum compute to 0. */
static bool t_udp_csum_ffff(void)
{
	__u8 pay[2];
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5002, .dport = 53, .plen = 2,
			 .data = pay };
	struct pkt x = snat(k, OUTA, 5002, true);
	struct frame f, w;
	__u8 b[64];
	int v, n;

	for (v = 0; v < 0x10000; v++) {
		__u32 psum;

		put16(pay, v);
		n = build_ip(b, &x);
		psum = sum16(b + 12, 8, IPPROTO_UDP + n - 20);
		put16(b + 20 + 6, 0);
		if (fold(sum16(b + 20, n - 20, psum)) == 0xffff)
			break; /* the checksum computes to 0x0000 */
	}
	if (v == 0x10000)
		die("no payload makes the UDP checksum 0");
	fresh();
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	if (get16(w.b + ETH_HLEN + 26) != 0xffff)
		die("test bug: checksum 0x%04x, not 0xffff", get16(w.b + ETH_HLEN + 26));
	note("payload 0x%04x; checksum in 0x%04x, out must be 0xffff", v,
	     get16(f.b + ETH_HLEN + 26));
	return step("out, checksum computes to 0", "r0", &f, XDPR_FWD, &w, EV(XOUT, NEW, KEPT));
}

static bool tcp_step(const char *what, bool out, __u8 flags, int plen, struct evs ev)
{
	struct pkt k = { .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 40001, .dport = 80,
			 .flags = flags, .plen = plen };
	struct pkt r = { .src = REM, .dst = OUTA, .proto = IPPROTO_TCP, .sport = 80, .dport = 40001,
			 .flags = flags, .plen = plen };
	struct pkt x;
	struct frame f, w;

	if (out) {
		x = snat(k, OUTA, 40001, true);
		in_frame(&f, "r0", &k);
		fwd_frame(&w, "r1", &x);
	} else {
		x = dnat(r, IN2, 40001, true);
		in_frame(&f, "r1", &r);
		fwd_frame(&w, "r0", &x);
	}
	return step(what, out ? "r0" : "r1", &f, XDPR_FWD, &w, ev);
}

static bool tcp_state(const char *what, __u8 state)
{
	return check_sess(what, &(struct sess){ IN2, REM, OUTA, 40001, 80, 40001, IPPROTO_TCP,
						state, 1, 1 });
}

static bool t_tcp(void)
{
	bool ok;

	fresh();
	ok = tcp_step("SYN out", true, TCP_SYN, NONE, EV(XOUT, NEW, KEPT));
	ok &= tcp_state("after SYN", XDPR_CT_SEEN_OUT);
	ok &= tcp_step("SYN-ACK in", false, TCP_SYN | TCP_ACK, NONE, EV(XIN));
	ok &= tcp_state("after SYN-ACK", XDPR_CT_SEEN_OUT | XDPR_CT_SEEN_IN);
	ok &= tcp_step("data out", true, TCP_PSH | TCP_ACK, 100, EV(XOUT));
	ok &= tcp_step("data in", false, TCP_PSH | TCP_ACK, 333, EV(XIN));
	ok &= tcp_state("established", XDPR_CT_SEEN_OUT | XDPR_CT_SEEN_IN);
	return ok;
}

static bool t_tcp_fin(void)
{
	__u8 est = XDPR_CT_SEEN_OUT | XDPR_CT_SEEN_IN;
	bool ok;

	ok = tcp_step("FIN out", true, TCP_FIN | TCP_ACK, NONE, EV(XOUT));
	ok &= tcp_state("after FIN out", est | XDPR_CT_FIN_OUT);
	ok &= tcp_step("FIN in", false, TCP_FIN | TCP_ACK, NONE, EV(XIN));
	ok &= tcp_state("after FIN in", est | XDPR_CT_FIN_OUT | XDPR_CT_FIN_IN);
	ok &= tcp_step("last ACK out", true, TCP_ACK, NONE, EV(XOUT));
	return ok;
}

static struct pkt echo(const char *src, const char *dst, __u8 type, __u16 id)
{
	return (struct pkt){ .src = src, .dst = dst, .proto = IPPROTO_ICMP, .type = type,
			     .sport = id, .dport = 7, .plen = 56 };
}

static bool echo_out(const char *what, const char *in, __u16 id, __u16 outid, struct evs ev)
{
	struct pkt k = echo(in, REM, 8, id), x = snat(k, OUTA, outid, true);
	struct frame f, w;

	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	return step(what, "r0", &f, XDPR_FWD, &w, ev);
}

static bool echo_reply(const char *what, __u16 outid, const char *in, __u16 id)
{
	struct pkt k = echo(REM, OUTA, 0, outid), x = dnat(k, in, id, true);
	struct frame f, w;

	in_frame(&f, "r1", &k);
	fwd_frame(&w, "r0", &x);
	return step(what, "r1", &f, XDPR_FWD, &w, EV(XIN));
}

static bool t_icmp_echo(void)
{
	bool ok;

	fresh();
	ok = echo_out("echo request out, id 0x1234", IN2, 0x1234, 0x1234, EV(XOUT, NEW, KEPT));
	ok &= check_sess("session", &(struct sess){ IN2, REM, OUTA, 0x1234, 0, 0x1234, IPPROTO_ICMP,
						    XDPR_CT_SEEN_OUT, 1, 1 });
	ok &= echo_reply("echo reply in", 0x1234, IN2, 0x1234);
	return ok;
}

static bool t_icmp_two_hosts(void)
{
	__u16 id3 = 0;
	bool ok;

	/* continues t_icmp_echo: 10.0.1.2 holds id 0x1234 outside */
	{
		struct pkt k = echo(IN3, REM, 8, 0x1234);
		struct frame f, w;
		struct result *r = calloc(1, sizeof(*r));
		struct pkt x;

		if (!r)
			die("out of memory");
		in_frame(&f, "r0", &k);
		run("r0", &f, r);
		ok = out_of(IN3, REM, 0x1234, 0, IPPROTO_ICMP, NULL, &id3);
		ok &= expect(id3 != 0x1234 && id3 >= 1024, "10.0.1.3's outside id 0x%04x: must differ "
			     "from 0x1234 and be in 1024-65535", id3);
		x = snat(k, OUTA, id3, true);
		fwd_frame(&w, "r1", &x);
		ok &= check("echo request out from 10.0.1.3, same id", r, XDPR_FWD, &w,
			    EV(XOUT, NEW));
		free(r);
	}
	note("10.0.1.3 id 0x1234 -> outside id 0x%04x", id3);
	ok &= echo_reply("reply to 10.0.1.3's id", id3, IN3, 0x1234);
	ok &= echo_reply("reply to 10.0.1.2's id", 0x1234, IN2, 0x1234);
	return ok;
}

/* Two remotes, one inside endpoint: one outside port (RFC 4787 REQ-1). */
static bool eim(__u16 inp, bool kept)
{
	struct pkt k1 = { .src = IN2, .dst = REM, .sport = inp, .dport = 1000 };
	struct pkt k2 = { .src = IN2, .dst = REM3, .sport = inp, .dport = 1000 };
	struct result *r = calloc(1, sizeof(*r));
	struct frame f, w;
	struct pkt x;
	__u16 p1 = 0, p2 = 0;
	bool ok;

	if (!r)
		die("out of memory");
	fresh();
	in_frame(&f, "r0", &k1);
	run("r0", &f, r);
	ok = out_of(IN2, REM, inp, 1000, IPPROTO_UDP, NULL, &p1);
	x = snat(k1, OUTA, p1, true);
	fwd_frame(&w, "r1", &x);
	ok &= check("to 10.0.2.2:1000", r, XDPR_FWD, &w,
		    kept ? EV(XOUT, NEW, KEPT) : EV(XOUT, NEW));
	ok &= expect(!kept || p1 == inp, "outside port %u, expected %u (preserved)", p1, inp);

	in_frame(&f, "r0", &k2);
	run("r0", &f, r);
	ok &= out_of(IN2, REM3, inp, 1000, IPPROTO_UDP, NULL, &p2);
	ok &= expect(p1 == p2, "outside port to 10.0.2.3 %u, to 10.0.2.2 %u: must be the same",
		     p2, p1);
	x = snat(k2, OUTA, p1, true);
	fwd_frame(&w, "r1", &x);
	ok &= check("to 10.0.2.3:1000", r, XDPR_FWD, &w, EV(XOUT, NEW));
	ok &= check_sess("second session", &(struct sess){ IN2, REM3, OUTA, inp, 1000, p1,
							   IPPROTO_UDP, XDPR_CT_SEEN_OUT, 1, 2 });
	free(r);
	note("inside port %u -> outside port %u for both remotes", inp, p1);
	return ok;
}

static bool t_eim(void) { return eim(6000, true); }
static bool t_eim_unpreserved(void) { return eim(600, false); }

static bool t_port_taken(void)
{
	struct pkt k1 = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt k2 = { .src = IN3, .dst = REM, .sport = 5000, .dport = 53 };
	struct result *r = calloc(1, sizeof(*r));
	struct frame f, w;
	struct pkt x;
	__u16 p = 0;
	bool ok;

	if (!r)
		die("out of memory");
	fresh();
	in_frame(&f, "r0", &k1);
	x = snat(k1, OUTA, 5000, true);
	fwd_frame(&w, "r1", &x);
	ok = step("10.0.1.2:5000 binds 10.0.2.1:5000", "r0", &f, XDPR_FWD, &w,
		  EV(XOUT, NEW, KEPT));
	in_frame(&f, "r0", &k2);
	run("r0", &f, r);
	ok &= out_of(IN3, REM, 5000, 53, IPPROTO_UDP, NULL, &p);
	ok &= expect(p != 5000 && p >= 1024, "10.0.1.3:5000 got outside port %u: must not be 5000",
		     p);
	x = snat(k2, OUTA, p, true);
	fwd_frame(&w, "r1", &x);
	ok &= check("10.0.1.3:5000 to the same remote", r, XDPR_FWD, &w, EV(XOUT, NEW));
	ok &= check_sess("its session", &(struct sess){ IN3, REM, OUTA, 5000, 53, p, IPPROTO_UDP,
							XDPR_CT_SEEN_OUT, 1, 1 });
	note("10.0.1.3:5000 -> outside port %u", p);
	/* the reply to each goes to its own host */
	{
		struct pkt r1 = { .src = REM, .dst = OUTA, .sport = 53, .dport = p };

		in_frame(&f, "r1", &r1);
		x = dnat(r1, IN3, 5000, true);
		fwd_frame(&w, "r0", &x);
		ok &= step("reply to 10.0.1.3's port", "r1", &f, XDPR_FWD, &w, EV(XIN));
	}
	free(r);
	return ok;
}

static bool t_filter_apdf(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt s = { .src = REM3, .dst = OUTA, .sport = 1234, .dport = 5000 };
	struct pkt s2 = { .src = REM, .dst = OUTA, .sport = 54, .dport = 5000 };
	struct pkt x = snat(k, OUTA, 5000, true);
	struct frame f, w;
	bool ok;

	fresh();
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	ok = step("mapping 10.0.1.2:5000 -> 10.0.2.2:53", "r0", &f, XDPR_FWD, &w,
		  EV(XOUT, NEW, KEPT));
	in_frame(&f, "r1", &s);
	ok &= step("from 10.0.2.3:1234 (never addressed)", "r1", &f, XDPR_PASS_NAT_FILTERED, NULL,
		   EV([XDPR_NE_FILTERED] = 1));
	in_frame(&f, "r1", &s2);
	ok &= step("from 10.0.2.2:54 (address addressed, port not)", "r1", &f,
		   XDPR_PASS_NAT_FILTERED, NULL, EV([XDPR_NE_FILTERED] = 1));
	ok &= no_sess("no session", IN2, REM3, 5000, 1234, IPPROTO_UDP);
	return ok;
}

static bool t_filter_eif(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt s = { .src = REM3, .dst = OUTA, .sport = 1234, .dport = 5000 };
	struct pkt x = snat(k, OUTA, 5000, true);
	struct frame f, w;
	bool ok;

	fresh();
	rule_write(1, XDPR_NAT_MASQ | XDPR_NAT_EIF, "0.0.0.0", 0, NULL, 0, 1024, 65535);
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	ok = step("mapping 10.0.1.2:5000 -> 10.0.2.2:53", "r0", &f, XDPR_FWD, &w,
		  EV(XOUT, NEW, KEPT));
	in_frame(&f, "r1", &s);
	x = dnat(s, IN2, 5000, true);
	fwd_frame(&w, "r0", &x);
	ok &= step("from 10.0.2.3:1234 with EIF", "r1", &f, XDPR_FWD, &w, EV(XIN, NEW));
	ok &= check_sess("session opened from outside", &(struct sess){ IN2, REM3, OUTA, 5000, 1234,
		5000, IPPROTO_UDP, XDPR_CT_SEEN_IN, 1, 2 });
	/* and the inside host's answer uses it */
	{
		struct pkt a = { .src = IN2, .dst = REM3, .sport = 5000, .dport = 1234 };

		in_frame(&f, "r0", &a);
		x = snat(a, OUTA, 5000, true);
		fwd_frame(&w, "r1", &x);
		ok &= step("answer to 10.0.2.3:1234", "r0", &f, XDPR_FWD, &w, EV(XOUT));
	}
	return ok;
}

/*
 * An outbound flow of inside port inp, then an ICMP error about it from
 * outside (the quoted packet as it left: translated), cut to quote bytes.
 */
static bool icmp_err_in(const char *what, const struct pkt *orig, const char *from, __u8 type,
			__u8 code, int quote, struct evs first)
{
	struct result *r = calloc(1, sizeof(*r));
	__u8 qb[FRAME_MAX], wb[FRAME_MAX];
	struct pkt q, e, x;
	struct frame f, w;
	__u16 outp = 0;
	bool ok;
	__u16 rem_port = orig->proto == IPPROTO_ICMP ? 0 : orig->dport;

	if (!r)
		die("out of memory");
	fresh();
	in_frame(&f, "r0", orig);
	run("r0", &f, r);
	ok = out_of(orig->src, orig->dst, orig->sport, rem_port, orig->proto ?: IPPROTO_UDP, NULL,
		    &outp);
	x = snat(*orig, OUTA, outp, true);
	fwd_frame(&w, "r1", &x);
	ok &= check("the flow out", r, XDPR_FWD, &w, first);
	note("inside port/id %u -> outside %u", orig->sport, outp);

	/* what the remote side saw, quoted back; ttl as it expired or arrived */
	q = x;
	if (type == 11)
		q.ttl = 1;
	e = icmp_err(from, OUTA, type, code, &q, quote, qb);
	in_frame(&f, "r1", &e);
	/* expected: outer to the inside host, the quote as the inside host sent it */
	q = snat(q, orig->src, orig->sport, false);
	x = icmp_err(from, orig->src, type, code, &q, quote, wb);
	x.ttl = 63;
	fwd_frame(&w, "r0", &x);
	ok &= step(what, "r1", &f, XDPR_FWD, &w, EV([XDPR_NE_ICMP_ERR_IN] = 1));
	free(r);
	return ok;
}

static bool t_icmp_err_in_udp(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };

	return icmp_err_in("port unreachable quoting the whole datagram", &k, REM, 3, 3, 0,
			   EV(XOUT, NEW, KEPT));
}

static bool t_icmp_err_in_udp_port(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 700, .dport = 53 };

	return icmp_err_in("port unreachable, outside port != inside port", &k, REM, 3, 3, 0,
			   EV(XOUT, NEW));
}

static bool t_icmp_err_in_tcp(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 800, .dport = 80,
			 .flags = TCP_SYN, .plen = NONE };

	return icmp_err_in("time exceeded from 10.0.2.9 quoting a whole TCP SYN", &k, HOP, 11, 0, 0,
			   EV(XOUT, NEW));
}

static bool t_icmp_err_in_tcp_part(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 800, .dport = 80,
			 .plen = 200 };

	/* IP + the 20-byte TCP header + 8 of 200 payload bytes: checksum covers more than is quoted */
	return icmp_err_in("time exceeded quoting IP + 28 bytes of a TCP segment", &k, HOP, 11, 0,
			   48, EV(XOUT, NEW));
}

static bool t_icmp_err_in_tcp_8(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 800, .dport = 80,
			 .plen = 200 };

	/* RFC 792 minimum: IP + 8 bytes (ports and sequence number, no checksum field) */
	return icmp_err_in("host unreachable quoting IP + 8 bytes of TCP", &k, HOP, 3, 1, 28,
			   EV(XOUT, NEW));
}

static bool t_icmp_err_in_echo(void)
{
	struct pkt k = echo(IN2, REM, 8, 0x77);

	return icmp_err_in("host unreachable quoting an echo request", &k, HOP, 3, 1, 0,
			   EV(XOUT, NEW));
}

/* An inbound flow's packet, answered with an ICMP error by the inside host. */
static bool icmp_err_out(const char *what, __u16 inp)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = inp, .dport = 53 };
	struct result *r = calloc(1, sizeof(*r));
	__u8 qb[FRAME_MAX], wb[FRAME_MAX];
	struct pkt q, e, x;
	struct frame f, w;
	__u16 outp = 0;
	bool ok;

	if (!r)
		die("out of memory");
	fresh();
	in_frame(&f, "r0", &k);
	run("r0", &f, r);
	ok = out_of(IN2, REM, inp, 53, IPPROTO_UDP, NULL, &outp);
	x = snat(k, OUTA, outp, true);
	fwd_frame(&w, "r1", &x);
	ok &= check("the flow out", r, XDPR_FWD, &w,
		    inp == outp ? EV(XOUT, NEW, KEPT) : EV(XOUT, NEW));
	/* the reply as delivered inside: 10.0.2.2:53 -> 10.0.1.2:inp */
	q = (struct pkt){ .src = REM, .dst = IN2, .sport = 53, .dport = inp, .ttl = 63 };
	e = icmp_err(IN2, REM, 3, 3, &q, 0, qb);
	in_frame(&f, "r0", &e);
	/* leaving: from the outside address, about 10.0.2.2:53 -> 10.0.2.1:outp */
	q.dst = OUTA, q.dport = outp;
	x = icmp_err(OUTA, REM, 3, 3, &q, 0, wb);
	x.ttl = 63;
	fwd_frame(&w, "r1", &x);
	ok &= step(what, "r0", &f, XDPR_FWD, &w, EV([XDPR_NE_ICMP_ERR_OUT] = 1));
	free(r);
	note("inside port %u, outside port %u", inp, outp);
	return ok;
}

static bool t_icmp_err_out(void) { return icmp_err_out("port unreachable out", 5000); }
static bool t_icmp_err_out_port(void)
{
	return icmp_err_out("port unreachable out, outside port != inside port", 700);
}

static bool t_icmp_err_out_nosess(void)
{
	struct pkt q = { .src = REM, .dst = IN2, .sport = 53, .dport = 5999, .ttl = 63 };
	__u8 qb[FRAME_MAX];
	struct pkt e = icmp_err(IN2, REM, 3, 3, &q, 0, qb);
	struct frame f;

	fresh();
	in_frame(&f, "r0", &e);
	return step("port unreachable about no session", "r0", &f, XDPR_DROP_NAT_UNTRANSLATABLE,
		    NULL, EV([XDPR_NE_UNTRANSLATABLE] = 1));
}

static bool t_leak_mf(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5003, .dport = 53, .frag = 0x2000 };
	struct frame f;

	fresh();
	in_frame(&f, "r0", &k);
	return step("first fragment (MF) out", "r0", &f, XDPR_DROP_NAT_UNTRANSLATABLE, NULL,
		    EV([XDPR_NE_UNTRANSLATABLE] = 1)) &
	       no_sess("no session", IN2, REM, 5003, 53, IPPROTO_UDP);
}

static bool t_leak_fragoff(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5003, .dport = 53, .frag = 185 };
	struct frame f;

	fresh();
	in_frame(&f, "r0", &k);
	return step("later fragment (offset 1480) out", "r0", &f, XDPR_DROP_NAT_UNTRANSLATABLE,
		    NULL, EV([XDPR_NE_UNTRANSLATABLE] = 1));
}

static bool t_leak_gre(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .proto = 47, .plen = 24 };
	struct frame f;

	fresh();
	in_frame(&f, "r0", &k);
	return step("GRE out", "r0", &f, XDPR_DROP_NAT_UNTRANSLATABLE, NULL,
		    EV([XDPR_NE_UNTRANSLATABLE] = 1));
}

static bool t_leak_ttl(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5004, .dport = 53, .ttl = 1 };
	struct frame f;

	fresh();
	in_frame(&f, "r0", &k);
	return step("TTL 1 out", "r0", &f, XDPR_PASS_TTL, NULL, NOEV) &
	       no_sess("no session", IN2, REM, 5004, 53, IPPROTO_UDP);
}

static bool t_leak_df(void)
{
	struct pkt k = { .src = IN2, .dst = "10.9.4.1", .sport = 5005, .dport = 53,
			 .frag = 0x4000, .plen = 1372 };
	struct frame f;

	fresh();
	in_frame(&f, "r0", &k);
	return step("1400 bytes DF via 'mtu lock 1280'", "r0", &f, XDPR_PASS_FIB_FRAG_NEEDED, NULL,
		    NOEV) &
	       no_sess("no session", IN2, "10.9.4.1", 5005, 53, IPPROTO_UDP);
}

static bool t_leak_nodf(void)
{
	struct pkt k = { .src = IN2, .dst = "10.9.4.1", .sport = 5006, .dport = 53, .plen = 1372 };
	struct pkt x = snat(k, OUTA, 5006, false);
	struct frame f, w;

	fresh();
	in_frame(&f, "r0", &k);
	in_frame(&w, "r0", &x); /* the kernel fragments it: translated, L2 and TTL as they came */
	return step("1400 bytes without DF via 'mtu lock 1280'", "r0", &f,
		    XDPR_PASS_FIB_FRAG_NEEDED, &w, EV(XOUT, NEW, KEPT));
}

static bool t_leak_noneigh(void)
{
	struct pkt k = { .src = IN2, .dst = "10.0.2.4", .sport = 5007, .dport = 53 };
	struct pkt x = snat(k, OUTA, 5007, false);
	struct frame f, w;

	fresh();
	in_frame(&f, "r0", &k);
	in_frame(&w, "r0", &x);
	return step("to 10.0.2.4 (no neighbour)", "r0", &f, XDPR_PASS_FIB_NO_NEIGH, &w,
		    EV(XOUT, NEW, KEPT));
}

static bool t_exhaustion(void)
{
	struct result *r = calloc(1, sizeof(*r));
	bool ok = true, seen[4] = {};
	char what[64];

	if (!r)
		die("out of memory");
	fresh();
	rule_write(1, XDPR_NAT_MASQ, "0.0.0.0", 0, NULL, 0, 20000, 20003);
	for (int i = 0; i < 6; i++) {
		struct pkt k = { .src = IN2, .dst = REM, .sport = 30001 + i, .dport = 53 };
		struct frame f, w;
		struct pkt x;
		__u16 p = 0;

		snprintf(what, sizeof(what), "flow %d (inside port %u)", i + 1, k.sport);
		in_frame(&f, "r0", &k);
		run("r0", &f, r);
		if (i < 4) {
			cur_step = what;
			if (out_of(IN2, REM, k.sport, 53, IPPROTO_UDP, NULL, &p)) {
				ok &= expect(p >= 20000 && p <= 20003 && !seen[p - 20000],
					     "outside port %u: not in 20000-20003 or given twice", p);
				if (p >= 20000 && p <= 20003)
					seen[p - 20000] = true;
			} else {
				ok = false;
			}
			cur_step = NULL;
			x = snat(k, OUTA, p, true);
			fwd_frame(&w, "r1", &x);
			ok &= check(what, r, XDPR_FWD, &w, EV(XOUT, NEW));
		} else if (i == 4) {
			/* one bounded search (64 probes, wrapping the range) finds nothing... */
			ok &= check(what, r, XDPR_DROP_NAT_NO_PORT, NULL,
				    EV([XDPR_NE_NO_PORT] = 1, [XDPR_NE_PROBES] = 64));
			ok &= no_sess(what, IN2, REM, k.sport, 53, IPPROTO_UDP);
		} else {
			/* ... and the range, probed whole in vain, gets 4 probes a packet for a second */
			ok &= check(what, r, XDPR_DROP_NAT_NO_PORT, NULL,
				    EV([XDPR_NE_NO_PORT] = 1, [XDPR_NE_PROBES] = 4));
			ok &= no_sess(what, IN2, REM, k.sport, 53, IPPROTO_UDP);
		}
	}
	ok &= expect(host_nsess(IN2) == 4, "xdpr_nat_hosts[10.0.1.2].nsess %u, expected 4",
		     host_nsess(IN2));
	ok &= expect(map_count(bind_fd) == 4, "%d bindings, expected 4", map_count(bind_fd));
	free(r);
	return ok;
}

static bool t_host_limit(void)
{
	struct frame f, w;
	struct pkt x;
	bool ok = true;

	fresh();
	cfg_write(XDPR_DEF_UDP, XDPR_DEF_HOLDDOWN, 2);
	for (int i = 0; i < 2; i++) {
		struct pkt k = { .src = IN2, .dst = REM, .sport = 5101 + i, .dport = 53 };

		in_frame(&f, "r0", &k);
		x = snat(k, OUTA, k.sport, true);
		fwd_frame(&w, "r1", &x);
		ok &= step(i ? "second flow" : "first flow", "r0", &f, XDPR_FWD, &w,
			   EV(XOUT, NEW, KEPT));
	}
	{
		struct pkt k = { .src = IN2, .dst = REM, .sport = 5103, .dport = 53 };

		in_frame(&f, "r0", &k);
		ok &= step("third flow", "r0", &f, XDPR_DROP_NAT_HOST_LIMIT, NULL,
			   EV([XDPR_NE_HOST_LIMIT] = 1));
		ok &= no_sess("third flow", IN2, REM, 5103, 53, IPPROTO_UDP);
	}
	{
		struct pkt k = { .src = IN2, .dst = REM, .sport = 5101, .dport = 53 };

		in_frame(&f, "r0", &k);
		x = snat(k, OUTA, k.sport, true);
		fwd_frame(&w, "r1", &x);
		ok &= step("first flow again (existing session)", "r0", &f, XDPR_FWD, &w, EV(XOUT));
	}
	{
		struct pkt k = { .src = IN3, .dst = REM, .sport = 5103, .dport = 53 };

		in_frame(&f, "r0", &k);
		x = snat(k, OUTA, k.sport, true);
		fwd_frame(&w, "r1", &x);
		ok &= step("another host", "r0", &f, XDPR_FWD, &w, EV(XOUT, NEW, KEPT));
	}
	ok &= expect(host_nsess(IN2) == 2, "xdpr_nat_hosts[10.0.1.2].nsess %u, expected 2",
		     host_nsess(IN2));
	cfg_defaults();
	return ok;
}

static bool t_expiry(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5200, .dport = 53 };
	struct xdpr_ct_key ko = ct_key(IN2, REM, 5200, 53, IPPROTO_UDP, XDPR_CT_OUT);
	struct xdpr_ct_key ki = ct_key(REM, OUTA, 53, 5200, IPPROTO_UDP, XDPR_CT_IN);
	struct xdpr_bind_key bk = { .out_addr = ip(OUTA), .out_port = htons(5200),
				    .proto = IPPROTO_UDP };
	struct xdpr_eim_key ek = { .in_addr = ip(IN2), .in_port = htons(5200),
				   .proto = IPPROTO_UDP, .rule = 1 };
	struct pkt x = snat(k, OUTA, 5200, true);
	struct xdpr_gc_cmd res = {};
	struct xdpr_ct_val v;
	struct xdpr_bind b;
	struct xdpr_eim_val e;
	struct evs e0, e1;
	struct frame f, w;
	int err;
	bool ok;

	fresh();
	cfg_write(1, XDPR_DEF_HOLDDOWN, XDPR_DEF_HOST_LIMIT);
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	ok = step("udp session, timeout 1 s", "r0", &f, XDPR_FWD, &w, EV(XOUT, NEW, KEPT));
	sleep_ms(2200);
	read_ev(1, &e0);
	err = gc(XDPR_GC_EXPIRED, &res);
	read_ev(1, &e1);
	if (err) {
		note("xdpr_nat_gc: %s", strerror(-err));
		return false;
	}
	note("gc: deleted %u seen %u binds_freed %u", res.deleted, res.seen, res.binds_freed);
	ok &= expect(res.deleted >= 1 && res.seen >= 1, "gc deleted %u of %u seen, expected >= 1",
		     res.deleted, res.seen);
	ok &= expect(res.binds_freed == 0, "gc freed %u bindings inside the hold-down",
		     res.binds_freed);
	ok &= ev_delta("gc", &e0, &e1, EV([XDPR_NE_SESS_EXPIRED] = 1));
	ok &= expect(!ct_get(&ko, &v), "outbound half still there after gc");
	ok &= expect(!ct_get(&ki, &v), "inbound half still there after gc");
	ok &= expect(!bpf_map_lookup_elem(bind_fd, &bk, &b),
		     "binding 10.0.2.1:5200 gone at once: the hold-down must keep it");
	if (!bpf_map_lookup_elem(bind_fd, &bk, &b))
		ok &= expect(XDPR_BIND_REFS(b.state) == 0, "binding refs %u after its session expired",
			     XDPR_BIND_REFS(b.state));
	ok &= expect(!bpf_map_lookup_elem(eim_fd, &ek, &e),
		     "mapping removed while its binding is held down");
	ok &= expect(host_nsess(IN2) == 0, "xdpr_nat_hosts[10.0.1.2].nsess %u, expected 0",
		     host_nsess(IN2));

	cfg_write(1, 1, XDPR_DEF_HOST_LIMIT);
	sleep_ms(1500);
	err = gc(XDPR_GC_EXPIRED, &res);
	if (err) {
		note("xdpr_nat_gc: %s", strerror(-err));
		return false;
	}
	note("gc after the hold-down: deleted %u seen %u binds_freed %u", res.deleted, res.seen,
	     res.binds_freed);
	ok &= expect(res.binds_freed >= 1, "gc freed %u bindings after the hold-down",
		     res.binds_freed);
	ok &= expect(bpf_map_lookup_elem(bind_fd, &bk, &b) != 0, "binding still there");
	ok &= expect(bpf_map_lookup_elem(eim_fd, &ek, &e) != 0, "mapping still there");
	cfg_defaults();
	return ok;
}

static bool t_hairpin(void)
{
	struct pkt a = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt bp = { .src = IN3, .dst = OUTA, .sport = 7000, .dport = 5000 };
	struct pkt x = snat(a, OUTA, 5000, true);
	struct result *r = calloc(1, sizeof(*r));
	struct frame f, w;
	__u16 pb = 0;
	bool ok;

	if (!r)
		die("out of memory");
	fresh();
	rule_write(1, XDPR_NAT_MASQ | XDPR_NAT_EIF, "0.0.0.0", 0, NULL, 0, 1024, 65535);
	in_frame(&f, "r0", &a);
	fwd_frame(&w, "r1", &x);
	ok = step("A 10.0.1.2:5000 maps to 10.0.2.1:5000", "r0", &f, XDPR_FWD, &w,
		  EV(XOUT, NEW, KEPT));

	in_frame(&f, "r0", &bp);
	run("r0", &f, r);
	ok &= out_of(IN3, OUTA, 7000, 5000, IPPROTO_UDP, NULL, &pb);
	x = snat(bp, OUTA, pb, true);
	x = dnat(x, IN2, 5000, false);
	fwd_frame(&w, "r0", &x);
	ok &= check("B 10.0.1.3:7000 -> 10.0.2.1:5000", r, XDPR_FWD, &w,
		    EV(XOUT, XIN, [XDPR_NE_SESS_NEW] = 2, KEPT, [XDPR_NE_HAIRPIN] = 1));
	note("B's outside port %u", pb);

	/* A answers B's outside endpoint */
	{
		struct pkt ra = { .src = IN2, .dst = OUTA, .sport = 5000, .dport = pb };

		in_frame(&f, "r0", &ra);
		x = snat(ra, OUTA, 5000, true);
		x = dnat(x, IN3, 7000, false);
		fwd_frame(&w, "r0", &x);
		ok &= step("A answers 10.0.2.1:<B's port>", "r0", &f, XDPR_FWD, &w,
			   EV(XOUT, XIN, [XDPR_NE_HAIRPIN] = 1));
	}
	free(r);
	return ok;
}

/*
 * Hairpin to a binding whose rule filters (the default, APDF): the binding
 * never addressed B's outside endpoint, so nothing is translated; the frame
 * goes to the kernel exactly as it came (the router answers B) and B gets
 * no session out of it.
 */
static bool t_hairpin_filtered(void)
{
	struct pkt a = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt bp = { .src = IN3, .dst = OUTA, .sport = 7000, .dport = 5000 };
	struct pkt x = snat(a, OUTA, 5000, true);
	struct frame f, w;
	bool ok;

	fresh();
	in_frame(&f, "r0", &a);
	fwd_frame(&w, "r1", &x);
	ok = step("A 10.0.1.2:5000 maps to 10.0.2.1:5000", "r0", &f, XDPR_FWD, &w,
		  EV(XOUT, NEW, KEPT));
	in_frame(&f, "r0", &bp);
	ok &= step("B 10.0.1.3:7000 -> 10.0.2.1:5000, rule without EIF", "r0", &f,
		   XDPR_PASS_NAT_FILTERED, NULL, EV([XDPR_NE_FILTERED] = 1));
	ok &= no_sess("B", IN3, OUTA, 7000, 5000, IPPROTO_UDP);
	return ok;
}

static bool t_pool(void)
{
	static const struct {
		const char *in, *rem;
		__u16 sport;
	} flows[] = {
		{ IN2, REM, 5300 }, { IN2, REM, 5301 }, { IN2, REM3, 5302 }, { IN2, REM3, 700 },
		{ IN3, REM, 5300 }, { IN3, REM3, 5310 },
	};
	__be32 first = ip("198.51.100.10"), mine[2] = { 0, 0 };
	struct result *r = calloc(1, sizeof(*r));
	struct frame f, w;
	struct pkt x;
	char what[96];
	bool ok = true;

	if (!r)
		die("out of memory");
	fresh();
	/* swap in rule 2 the way loader/nat.c replaces a rule */
	rule_write(2, 0, "10.0.1.0", 24, "198.51.100.10", 4, 1024, 65535);
	iface_rules("r1", 2);
	cur_rule = 2;
	for (size_t i = 0; i < sizeof(flows) / sizeof(flows[0]); i++) {
		struct pkt k = { .src = flows[i].in, .dst = flows[i].rem, .sport = flows[i].sport,
				 .dport = 53 };
		int h = !strcmp(k.src, IN3);
		__be32 a = 0;
		__u16 p = 0;
		bool kept = k.sport >= 1024 && !(h && k.sport == 5300 && mine[0] == mine[1]);

		snprintf(what, sizeof(what), "%s:%u -> %s:53", k.src, k.sport, k.dst);
		in_frame(&f, "r0", &k);
		run("r0", &f, r);
		cur_step = what;
		if (out_of(k.src, k.dst, k.sport, 53, IPPROTO_UDP, &a, &p)) {
			__u32 off = ntohl(a) - ntohl(first);

			ok &= expect(off < 4, "outside address %s not in 198.51.100.10-13", ipstr(a));
			ok &= expect(!mine[h] || mine[h] == a, "outside address %s, earlier flows of "
				     "%s got %s: must be paired", ipstr(a), k.src, ipstr(mine[h]));
			if (!mine[h])
				mine[h] = a;
			note("outside %s:%u", ipstr(a), p);
		} else {
			ok = false;
		}
		cur_step = NULL;
		x = snat(k, ipstr(a), p, true);
		fwd_frame(&w, "r1", &x);
		ok &= check(what, r, XDPR_FWD, &w, kept && p == k.sport ? EV(XOUT, NEW, KEPT)
								 : EV(XOUT, NEW));
		if (i == 0) {
			/* and the reply to the pool address comes back */
			struct pkt rp = { .src = REM, .dst = ipstr(a), .sport = 53, .dport = p };

			in_frame(&f, "r1", &rp);
			x = dnat(rp, IN2, 5300, true);
			fwd_frame(&w, "r0", &x);
			ok &= step("reply to the pool address", "r1", &f, XDPR_FWD, &w, EV(XIN));
		}
	}
	free(r);
	return ok;
}

/* A UDP flow's outbound packet (port kept) and the events it must move. */
static bool udp_out(const char *what, const char *in, __u16 sport, struct evs ev)
{
	struct pkt k = { .src = in, .dst = REM, .sport = sport, .dport = 53 };
	struct pkt x = snat(k, OUTA, sport, true);
	struct frame f, w;

	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	return step(what, "r0", &f, XDPR_FWD, &w, ev);
}

/*
 * Outbound-only traffic keeps a session alive; the inbound half's own
 * timestamp goes stale meanwhile.  A reply must still be translated: the
 * session's idle time is that of its fresher half.
 */
static bool t_reply_after_oneway(void)
{
	struct pkt r = { .src = REM, .dst = OUTA, .sport = 53, .dport = 5220 };
	struct pkt x = dnat(r, IN2, 5220, true);
	struct frame f, w;
	bool ok;

	fresh();
	cfg_write(1, XDPR_DEF_HOLDDOWN, XDPR_DEF_HOST_LIMIT);
	ok = udp_out("out at 0 s", IN2, 5220, EV(XOUT, NEW, KEPT));
	sleep_ms(600);
	ok &= udp_out("out at 0.6 s", IN2, 5220, EV(XOUT));
	sleep_ms(600);
	ok &= udp_out("out at 1.2 s", IN2, 5220, EV(XOUT));
	sleep_ms(200);
	in_frame(&f, "r1", &r);
	fwd_frame(&w, "r0", &x);
	ok &= step("reply at 1.4 s (timeout 1 s, outbound half 0.2 s idle)", "r1", &f, XDPR_FWD,
		   &w, EV(XIN));
	ok &= check_sess("session", &(struct sess){ IN2, REM, OUTA, 5220, 53, 5220, IPPROTO_UDP,
						    XDPR_CT_SEEN_OUT | XDPR_CT_SEEN_IN, 1, 1 });
	cfg_defaults();
	return ok;
}

/* A timed-out session met by its next packet: removed as expired, made anew. */
static bool t_expired_hit(void)
{
	bool ok;

	fresh();
	cfg_write(1, XDPR_DEF_HOLDDOWN, XDPR_DEF_HOST_LIMIT);
	ok = udp_out("out", IN2, 5210, EV(XOUT, NEW, KEPT));
	sleep_ms(1500);
	ok &= udp_out("out again after 1.5 s (timeout 1 s)", IN2, 5210,
		      EV(XOUT, NEW, [XDPR_NE_SESS_EXPIRED] = 1));
	ok &= check_sess("new session", &(struct sess){ IN2, REM, OUTA, 5210, 53, 5210, IPPROTO_UDP,
							XDPR_CT_SEEN_OUT, 1, 1 });
	ok &= expect(host_nsess(IN2) == 1, "xdpr_nat_hosts[10.0.1.2].nsess %u, expected 1",
		     host_nsess(IN2));
	cfg_defaults();
	return ok;
}

/* Freeze the NAT tables until now + ms (0: thaw), as `nat limit sessions` does while it copies. */
static void cfg_freeze(long ms)
{
	struct xdpr_cfg c;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(cfg_fd, &zero, &c))
		die("cannot read xdpr_cfg: %s", strerror(errno));
	c.nat_frozen_until = ms ? now_ns() + (__u64)ms * 1000000ULL : 0;
	if (bpf_map_update_elem(cfg_fd, &zero, &c, BPF_ANY))
		die("cannot write xdpr_cfg: %s", strerror(errno));
}

/*
 * While the tables are frozen (issue 16, a resize copying them) established
 * sessions translate; nothing is created (drop_nat_resizing, counted) and an
 * expired session is not deleted (its packet waits too); after the freeze
 * the expired session is replaced as always.
 */
static bool t_frozen(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5230, .dport = 53 };
	struct xdpr_ct_key ko = ct_key(IN2, REM, 5230, 53, IPPROTO_UDP, XDPR_CT_OUT);
	struct xdpr_ct_val v0, v1;
	struct frame f;
	bool ok;

	fresh();
	cfg_write(1, XDPR_DEF_HOLDDOWN, XDPR_DEF_HOST_LIMIT);
	ok = udp_out("session A", IN2, 5230, EV(XOUT, NEW, KEPT));
	cfg_freeze(10000);
	ok &= udp_out("frozen: A translates", IN2, 5230, EV(XOUT));
	k.sport = 5231;
	in_frame(&f, "r0", &k);
	ok &= step("frozen: a new flow", "r0", &f, XDPR_DROP_NAT_RESIZING, NULL,
		   EV([XDPR_NE_RESIZING] = 1));
	ok &= no_sess("frozen: the new flow", IN2, REM, 5231, 53, IPPROTO_UDP);
	ok &= expect(ct_get(&ko, &v0), "A's outbound half is there");
	sleep_ms(1500); /* A expires (udp 1 s) */
	k.sport = 5230;
	in_frame(&f, "r0", &k);
	ok &= step("frozen: A after its timeout", "r0", &f, XDPR_DROP_NAT_RESIZING, NULL,
		   EV([XDPR_NE_RESIZING] = 1));
	ok &= expect(ct_get(&ko, &v1) && v1.created == v0.created,
		     "frozen: the expired session is not deleted (nor replaced)");
	cfg_freeze(0);
	ok &= udp_out("thawed: A again, a new session", IN2, 5230,
		      EV(XOUT, NEW, [XDPR_NE_SESS_EXPIRED] = 1));
	cfg_defaults();
	return ok;
}

/* One outside port: a freed binding is not another host's until the hold-down passes. */
static bool t_holddown_reclaim(void)
{
	struct pkt ka = { .src = IN2, .dst = REM, .sport = 30001, .dport = 53 };
	struct pkt kb = { .src = IN3, .dst = REM, .sport = 30002, .dport = 53 };
	struct xdpr_gc_cmd res = {};
	struct frame f, w;
	struct pkt x;
	bool ok;

	fresh();
	rule_write(1, XDPR_NAT_MASQ, "0.0.0.0", 0, NULL, 0, 20000, 20000);
	cfg_write(1, 2, XDPR_DEF_HOST_LIMIT);
	in_frame(&f, "r0", &ka);
	x = snat(ka, OUTA, 20000, true);
	fwd_frame(&w, "r1", &x);
	ok = step("A takes the one port", "r0", &f, XDPR_FWD, &w, EV(XOUT, NEW));
	sleep_ms(1200);
	if (gc(XDPR_GC_EXPIRED, &res))
		die("cannot run xdpr_nat_gc: %s", strerror(errno));
	ok &= expect(res.deleted == 1 && res.binds_freed == 0,
		     "gc deleted %u sessions, freed %u bindings; expected 1, 0", res.deleted,
		     res.binds_freed);
	in_frame(&f, "r0", &kb);
	ok &= step("B within the hold-down (2 s)", "r0", &f, XDPR_DROP_NAT_NO_PORT, NULL,
		   EV([XDPR_NE_NO_PORT] = 1, [XDPR_NE_PROBES] = 64));
	sleep_ms(2300);
	in_frame(&f, "r0", &kb);
	x = snat(kb, OUTA, 20000, true);
	fwd_frame(&w, "r1", &x);
	ok &= step("B after the hold-down", "r0", &f, XDPR_FWD, &w,
		   EV(XOUT, NEW, [XDPR_NE_PORT_REUSED] = 1));
	ok &= check_sess("B's session", &(struct sess){ IN3, REM, OUTA, 30002, 53, 20000,
							IPPROTO_UDP, XDPR_CT_SEEN_OUT, 1, 1 });
	in_frame(&f, "r0", &ka);
	ok &= step("A again: its port is B's now", "r0", &f, XDPR_DROP_NAT_NO_PORT, NULL,
		   EV([XDPR_NE_NO_PORT] = 1, [XDPR_NE_PROBES] = 64));
	cfg_defaults();
	return ok;
}

static bool t_icmp_err_in_nocsum(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 700, .dport = 53, .nocsum = true };

	return icmp_err_in("port unreachable quoting a datagram without checksum", &k, REM, 3, 3,
			   0, EV(XOUT, NEW));
}

/* The quoted datagram's checksum, translated back, computes to 0: it must read 0xffff. */
static bool t_icmp_err_in_ffff(void)
{
	static __u8 pay[2];
	struct pkt k = { .src = IN2, .dst = REM, .sport = 700, .dport = 53, .plen = 2,
			 .data = pay };
	__u8 b[64];
	int v, n;

	for (v = 0; v < 0x10000; v++) {
		put16(pay, v);
		n = build_ip(b, &k);
		put16(b + 26, 0);
		if (fold(sum16(b + 20, n - 20, sum16(b + 12, 8, IPPROTO_UDP + n - 20))) == 0xffff)
			break;
	}
	if (v == 0x10000)
		die("no payload makes the UDP checksum 0");
	n = build_ip(b, &k);
	note("payload 0x%04x: inside datagram checksum 0x%04x", v, get16(b + 26));
	return icmp_err_in("port unreachable; quoted checksum translates back to 0xffff", &k, REM,
			   3, 3, 0, EV(XOUT, NEW));
}

/*
 * Session table full: the next new flow evicts the idlest of the oldest
 * sessions instead of being dropped, and the run ends (bounded search).
 */
static bool t_table_full(void)
{
	const int nflows = XDPR_NAT_DEF_SESS + 512;
	struct xdpr_ctr before[XDPR_REASON_MAX], after[XDPR_REASON_MAX];
	struct frame f;
	struct evs e0, e1;
	int fwd = 0, first_evict = -1, ct;
	bool ok = true;

	fresh();
	cfg_write(XDPR_DEF_UDP, XDPR_DEF_HOLDDOWN, 1u << 30);
	read_slot_sum(stats_fd, ncpus, 1, before);
	read_ev(1, &e0);
	for (int i = 0; i < nflows; i++) {
		struct pkt k = { .src = IN2, .dst = i < 60000 ? REM : REM3, .sport = 5000,
				 .dport = 1 + i % 60000, .plen = NONE };
		struct xdp_md ctx = { .ingress_ifindex = dev_get("r0")->ifindex };
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f.b, .ctx_in = &ctx,
			    .ctx_size_in = sizeof(ctx), .repeat = 1);

		in_frame(&f, "r0", &k);
		ctx.data_end = f.len;
		o.data_size_in = f.len;
		if (bpf_prog_test_run_opts(prog_fd, &o))
			die("BPF_PROG_TEST_RUN: %s", strerror(errno));
		fwd += o.retval == XDP_REDIRECT;
		if (first_evict < 0 && i >= XDPR_NAT_DEF_SESS - 256 && i % 16 == 0) {
			struct evs e;

			read_ev(1, &e);
			if (e.n[XDPR_NE_SESS_EVICTED] != e0.n[XDPR_NE_SESS_EVICTED])
				first_evict = i;
		}
	}
	read_slot_sum(stats_fd, ncpus, 1, after);
	read_ev(1, &e1);
	ct = ct_halves();
	note("%d flows: %d forwarded, first eviction seen by flow %d, %llu evicted, %d ct entries",
	     nflows, fwd, first_evict,
	     (unsigned long long)(e1.n[XDPR_NE_SESS_EVICTED] - e0.n[XDPR_NE_SESS_EVICTED]), ct);
	ok &= expect(fwd == nflows, "%d of %d flows not forwarded", nflows - fwd, nflows);
	ok &= expect(after[XDPR_FWD].packets - before[XDPR_FWD].packets == (__u64)nflows,
		     "fwd counter moved by %llu", (unsigned long long)(after[XDPR_FWD].packets -
								before[XDPR_FWD].packets));
	ok &= expect(e1.n[XDPR_NE_SESS_EVICTED] > e0.n[XDPR_NE_SESS_EVICTED], "nothing evicted");
	ok &= expect(e1.n[XDPR_NE_SESS_NEW] - e0.n[XDPR_NE_SESS_NEW] == (__u64)nflows,
		     "sessions_new +%llu, expected +%d",
		     (unsigned long long)(e1.n[XDPR_NE_SESS_NEW] - e0.n[XDPR_NE_SESS_NEW]), nflows);
	ok &= expect(e1.n[XDPR_NE_TABLE_FULL] == e0.n[XDPR_NE_TABLE_FULL],
		     "table_full +%llu: a flow was dropped",
		     (unsigned long long)(e1.n[XDPR_NE_TABLE_FULL] - e0.n[XDPR_NE_TABLE_FULL]));
	ok &= expect(ct <= 2 * XDPR_NAT_DEF_SESS && ct % 2 == 0, "%d ct entries", ct);
	ok &= expect(host_nsess(IN2) * 2 == (__u32)ct, "host count %u for %d ct entries",
		     host_nsess(IN2), ct);
	fresh();
	return ok;
}

/* IPv4 options: the kernel forwards it, so it must be handed over translated. */
static bool t_leak_options(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5008, .dport = 53, .opts = true };
	struct pkt x = snat(k, OUTA, 5008, false);
	struct frame f, w;

	fresh();
	in_frame(&f, "r0", &k);
	in_frame(&w, "r0", &x);
	return step("udp with IPv4 options out", "r0", &f, XDPR_PASS_IP4_OPTIONS, &w,
		    EV(XOUT, NEW, KEPT));
}

/* The masquerade address moves (the FIB now gives another source): the session follows. */
static bool t_masq_moved(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5230, .dport = 53 };
	struct pkt x = snat(k, OUTA, 5230, true);
	struct frame f, w;
	bool ok;

	fresh();
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	ok = step("out via 10.0.2.1", "r0", &f, XDPR_FWD, &w, EV(XOUT, NEW, KEPT));
	if (sh("/sbin/ip addr add 10.0.2.100/32 dev r1 && "
	       "/sbin/ip route add 10.0.2.2/32 dev r1 src 10.0.2.100"))
		die("cannot add 10.0.2.100 and its route");
	x = snat(k, "10.0.2.100", 5230, true);
	fwd_frame(&w, "r1", &x);
	ok &= step("out after the route's source became 10.0.2.100", "r0", &f, XDPR_FWD, &w,
		   EV(XOUT, NEW, KEPT, [XDPR_NE_ADDR_CHANGED] = 1));
	ok &= check_sess("session", &(struct sess){ IN2, REM, "10.0.2.100", 5230, 53, 5230,
						    IPPROTO_UDP, XDPR_CT_SEEN_OUT, 1, 1 });
	if (sh("/sbin/ip route del 10.0.2.2/32 dev r1 && /sbin/ip addr del 10.0.2.100/32 dev r1"))
		die("cannot remove 10.0.2.100");
	return ok;
}

static const struct {
	const char *name;
	bool (*fn)(void);
} cases[] = {
	{ "udp out: 10.0.1.2:5000 -> 10.0.2.2:53 leaves as 10.0.2.1:5000, session pair", t_udp_out },
	{ "udp reply in: 10.0.2.2:53 -> 10.0.2.1:5000 goes to 10.0.1.2:5000", t_udp_reply },
	{ "udp checksum 0 stays 0 both ways", t_udp_nocsum },
	{ "udp checksum computing to 0 leaves as 0xffff", t_udp_csum_ffff },
	{ "tcp SYN out, SYN-ACK in, data both ways; SEEN_OUT|SEEN_IN", t_tcp },
	{ "tcp FIN both ways: FIN_OUT|FIN_IN in both halves", t_tcp_fin },
	{ "icmp echo id 0x1234 kept outside, reply translated back", t_icmp_echo },
	{ "icmp same echo id from two hosts: second id differs, replies to the right host",
	  t_icmp_two_hosts },
	{ "endpoint-independent mapping: one outside port for two remotes (port 6000)", t_eim },
	{ "endpoint-independent mapping with a port outside the range (600)", t_eim_unpreserved },
	{ "inside port taken by another host: different outside port", t_port_taken },
	{ "filtering: unaddressed remote -> pass_nat_filtered, untouched", t_filter_apdf },
	{ "filtering EIF: unaddressed remote translated, session created", t_filter_eif },
	{ "icmp error in: port unreachable about udp (port kept)", t_icmp_err_in_udp },
	{ "icmp error in: port unreachable about udp (port translated)", t_icmp_err_in_udp_port },
	{ "icmp error in: time exceeded about a whole tcp segment", t_icmp_err_in_tcp },
	{ "icmp error in: time exceeded about a tcp segment quoted in part",
	  t_icmp_err_in_tcp_part },
	{ "icmp error in: quoting only 8 bytes of tcp", t_icmp_err_in_tcp_8 },
	{ "icmp error in: host unreachable about an echo request", t_icmp_err_in_echo },
	{ "icmp error out: inside host's port unreachable (port kept)", t_icmp_err_out },
	{ "icmp error out: inside host's port unreachable (port translated)", t_icmp_err_out_port },
	{ "icmp error out without session -> drop_nat_untranslatable", t_icmp_err_out_nosess },
	{ "leak: MF fragment out -> drop_nat_untranslatable", t_leak_mf },
	{ "leak: later fragment out -> drop_nat_untranslatable", t_leak_fragoff },
	{ "leak: GRE out -> drop_nat_untranslatable", t_leak_gre },
	{ "leak: TTL 1 out -> pass_ttl untranslated", t_leak_ttl },
	{ "leak: oversize DF out -> pass_frag_needed untranslated", t_leak_df },
	{ "leak: oversize without DF -> pass_frag_needed translated", t_leak_nodf },
	{ "leak: no neighbour -> pass_no_neigh translated", t_leak_noneigh },
	{ "leak: IPv4 options out -> pass_ip4_options translated", t_leak_options },
	{ "port exhaustion: 4 ports, 6 flows -> 2 x drop_nat_no_port, the search bounded", t_exhaustion },
	{ "host limit 2: third flow -> drop_nat_host_limit", t_host_limit },
	{ "expiry: gc removes a timed-out session, binding held down, then freed", t_expiry },
	{ "hairpin (EIF): inside B to A's outside endpoint and back", t_hairpin },
	{ "hairpin to a filtering (APDF) binding -> pass_nat_filtered, untouched",
	  t_hairpin_filtered },
	{ "pool 198.51.100.10-13: paired address per inside host, in range", t_pool },
	{ "reply after outbound-only traffic outlived the inbound half's timeout",
	  t_reply_after_oneway },
	{ "timed-out session hit by a packet: counted expired, made anew", t_expired_hit },
	{ "hold-down: freed port refused to another host, then reclaimed", t_holddown_reclaim },
	{ "icmp error in: quoted datagram without checksum keeps 0", t_icmp_err_in_nocsum },
	{ "icmp error in: quoted checksum translating to 0 reads 0xffff", t_icmp_err_in_ffff },
	{ "masquerade address moved: session re-created on the new address", t_masq_moved },
	{ "session table full: new flows evict, none dropped, no hang", t_table_full },
	{ "frozen tables (a resize copying them): sessions translate, nothing is created or deleted",
	  t_frozen },
};

#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(void)
{
	int probe;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 0;
	}
	probe = table_init();

	printf("1..%d\n", NCASES);
	printf("# xdpr_probe: bpf_fib_lookup(BPF_FIB_LOOKUP_SRC) = %d: %s\n", probe,
	       probe >= 0 ? "supported" : "not supported, masquerading to masq_addr");
	for (int i = 0; i < NCASES; i++)
		tap(cases[i].fn(), cases[i].name, NULL);

	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
