// SPDX-License-Identifier: GPL-2.0
/*
 * test_binat.c - 1:1 NAT (bpf/binat.h) in xdpr_main against the real kernel
 * FIB, one BPF_PROG_TEST_RUN per frame, in the NAT table's namespace
 * (nat_table.h: inside r0 10.0.1.0/24, outside r1 10.0.2.0/24).
 *
 * Rules on r1, written the way loader/binat.c writes them (slot, inbound
 * entry, outbound entry, router flag, interface flag):
 *   1  inside 10.0.1.0/24  outside 192.0.2.0/24     (netmap: host bits kept)
 *   2  inside 10.0.3.5/32  outside 198.51.100.7/32  (one address)
 * and, as in every NAT table case, masquerade rule 1 on r1 for 0.0.0.0/0:
 * a source a 1:1 rule covers must not meet it (its events stay still), a
 * source none covers (10.0.3.6) is masqueraded as before.
 *
 * Every step checks the verdict, exactly one reason counter, the bytes out
 * against a frame built from scratch with the translated addresses (every
 * checksum computed from nothing), every checksum of the output again, the
 * masquerade rule's NAT events, and the 1:1 rule's four counters.
 */
#define _GNU_SOURCE
#include "nat_table.h"

#define B_IN2  "192.0.2.2"     /* 10.0.1.2 outside */
#define B_IN3  "192.0.2.3"
#define H32    "10.0.3.5"      /* the /32 rule's inside host */
#define H32_MAC "02:00:00:00:01:05"
#define B_H32  "198.51.100.7"
#define MASQ   "10.0.3.6"      /* no 1:1 rule: masqueraded */
#define MASQ_MAC "02:00:00:00:01:06"

static int binat_fd, bin_fd, bout_fd, bst_fd;

struct bev {
	__u64 n[XDPR_BE_MAX];
};

#define BE(...) ((struct bev){ .n = { __VA_ARGS__ } })
#define BOUT  [XDPR_BE_OUT] = 1
#define BIN   [XDPR_BE_IN] = 1
#define BICMP [XDPR_BE_ICMP_ERR] = 1
#define BDROP [XDPR_BE_DROPPED] = 1

static void binat_rule(__u32 id, const char *in, const char *out, __u32 plen)
{
	struct xdpr_binat_rule r = { .ifindex = dev_get("r1")->ifindex, .id = id, .in_net = ip(in),
				     .out_net = ip(out), .mask = htonl(~0u << (32 - plen)), .plen = plen };
	struct xdpr_binat_key ki = { 32 + plen, r.ifindex, r.out_net }, ko = { 32 + plen, r.ifindex, r.in_net };
	__u64 *z = calloc(ncpus, sizeof(*z));

	snprintf(r.ifname, sizeof(r.ifname), "r1");
	for (__u32 e = 0; z && e < XDPR_BE_MAX; e++) {
		__u32 key = id * XDPR_BE_MAX + e;

		if (bpf_map_update_elem(bst_fd, &key, z, BPF_ANY))
			die("cannot zero xdpr_binat_st: %s", strerror(errno));
	}
	free(z);
	if (bpf_map_update_elem(binat_fd, &id, &r, BPF_ANY) || bpf_map_update_elem(bin_fd, &ki, &r, BPF_ANY) ||
	    bpf_map_update_elem(bout_fd, &ko, &r, BPF_ANY))
		die("cannot write 1:1 rule %u: %s", id, strerror(errno));
}

static void read_bev(__u32 id, struct bev *b)
{
	__u64 *v = calloc(ncpus, sizeof(*v));

	if (!v)
		die("out of memory");
	for (int e = 0; e < XDPR_BE_MAX; e++) {
		__u32 key = id * XDPR_BE_MAX + e;

		if (bpf_map_lookup_elem(bst_fd, &key, v))
			die("cannot read xdpr_binat_st[%u]", key);
		b->n[e] = 0;
		for (int c = 0; c < ncpus; c++)
			b->n[e] += v[c];
	}
	free(v);
}

/* step() and the 1:1 rule's counters: exactly want moved. */
static bool bstep(const char *what, const char *dev, const struct frame *in, int reason, const struct frame *want,
		  struct evs ev, __u32 id, struct bev bw)
{
	struct bev a, b;
	bool ok;

	read_bev(id, &a);
	ok = step(what, dev, in, reason, want, ev);
	read_bev(id, &b);
	cur_step = what;
	for (int e = 0; e < XDPR_BE_MAX; e++)
		if (b.n[e] - a.n[e] != bw.n[e]) {
			note("1:1 rule %u counter %s: +%llu, expected +%llu", id, xdpr_binat_event_name(e),
			     (unsigned long long)(b.n[e] - a.n[e]), (unsigned long long)bw.n[e]);
			ok = false;
		}
	cur_step = NULL;
	return ok;
}

static void frame_to(struct frame *f, const char *dev, const char *mac, const struct pkt *k)
{
	__u8 nh[6];

	mac_parse(mac, nh);
	mkframe(f, nh, dev_get(dev)->hw, k);
}

/* Outbound from r0 (translated source), and its reply inbound on r1 (translated back). */
static bool both_ways(const char *what, struct pkt k, const char *out, __u32 id)
{
	struct pkt x = k, r = k, rx;
	struct frame f, w;
	char name[128];
	bool ok;

	x.src = out;
	x.ttl = (k.ttl ?: 64) - 1;
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	snprintf(name, sizeof(name), "%s out", what);
	ok = bstep(name, "r0", &f, XDPR_FWD, &w, NOEV, id, BE(BOUT));

	r.src = k.dst, r.dst = out, r.sport = k.dport, r.dport = k.sport;
	if (k.proto == IPPROTO_ICMP)
		r.type = 0, r.sport = k.sport, r.dport = k.dport;
	rx = r;
	rx.dst = k.src;
	rx.ttl = (r.ttl ?: 64) - 1;
	in_frame(&f, "r1", &r);
	if (!strcmp(k.src, H32))
		frame_to(&w, "r0", H32_MAC, &rx);
	else
		fwd_frame(&w, "r0", &rx);
	snprintf(name, sizeof(name), "%s reply in", what);
	ok &= bstep(name, "r1", &f, XDPR_FWD, &w, NOEV, id, BE(BIN));
	return ok;
}

static bool t_udp(void)
{
	return both_ways("udp 10.0.1.2:5000 -> 10.0.2.2:53 as 192.0.2.2",
			 (struct pkt){ .src = IN2, .dst = REM, .sport = 5000, .dport = 53 }, B_IN2, 1);
}

static bool t_udp_nocsum(void)
{
	return both_ways("udp without checksum (0 stays 0)",
			 (struct pkt){ .src = IN3, .dst = REM, .sport = 5001, .dport = 53, .nocsum = true },
			 B_IN3, 1);
}

static bool t_tcp(void)
{
	bool ok;

	ok = both_ways("tcp SYN 10.0.1.2:40001 -> 10.0.2.2:80",
		       (struct pkt){ .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 40001, .dport = 80,
				     .flags = TCP_SYN, .plen = NONE }, B_IN2, 1);
	ok &= both_ways("tcp data, 333 bytes",
			(struct pkt){ .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 40001, .dport = 80,
				      .plen = 333 }, B_IN2, 1);
	return ok;
}

static bool t_echo(void)
{
	return both_ways("icmp echo id 0x1234 (kept: no state, no id rewrite)",
			 (struct pkt){ .src = IN2, .dst = REM, .proto = IPPROTO_ICMP, .type = 8, .sport = 0x1234,
				       .dport = 7, .plen = 56 }, B_IN2, 1);
}

static bool t_gre(void)
{
	return both_ways("GRE (47): IP header only",
			 (struct pkt){ .src = IN2, .dst = REM, .proto = 47, .plen = 24 }, B_IN2, 1);
}

static bool t_sctp(void)
{
	/* SCTP's CRC32c covers no pseudo-header: its bytes stay as they are */
	return both_ways("SCTP (132): IP header only",
			 (struct pkt){ .src = IN3, .dst = REM3, .proto = 132, .plen = 28 }, B_IN3, 1);
}

static bool t_slash32(void)
{
	return both_ways("/32: udp 10.0.3.5:7000 -> 10.0.2.2:53 as 198.51.100.7",
			 (struct pkt){ .src = H32, .dst = REM, .sport = 7000, .dport = 53 }, B_H32, 2);
}

/* Unsolicited from outside: stateless, so a mapped address is reachable as it is. */
static bool t_unsolicited(void)
{
	struct pkt k = { .src = REM3, .dst = "192.0.2.77", .proto = IPPROTO_TCP, .sport = 33333, .dport = 22,
			 .flags = TCP_SYN, .plen = NONE };
	struct pkt x = k;
	struct frame f, w;

	if (sh("/sbin/ip neigh replace 10.0.1.77 lladdr 02:00:00:00:01:77 dev r0 nud permanent"))
		die("cannot add neighbour 10.0.1.77");
	x.dst = "10.0.1.77";
	x.ttl = 63;
	in_frame(&f, "r1", &k);
	frame_to(&w, "r0", "02:00:00:00:01:77", &x);
	return bstep("tcp SYN from 10.0.2.3 to 192.0.2.77 -> 10.0.1.77", "r1", &f, XDPR_FWD, &w, NOEV, 1,
		     BE(BIN));
}

/* A source no 1:1 rule covers still meets the masquerade rule of the interface. */
static bool t_masq_beside(void)
{
	struct pkt k = { .src = MASQ, .dst = REM, .sport = 9000, .dport = 53 };
	struct pkt x = snat(k, OUTA, 9000, true);
	struct frame f, w;

	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	return bstep("udp from 10.0.3.6: masqueraded as 10.0.2.1, not 1:1", "r0", &f, XDPR_FWD, &w,
		     EV(XOUT, NEW, KEPT), 2, BE([0] = 0));
}

/* From outside about a packet 10.0.1.2 sent: outer destination and quoted source to 10.0.1.2. */
static bool err_in(const char *what, struct pkt q, const char *from, __u8 type, __u8 code, int quote)
{
	__u8 qb[FRAME_MAX], wb[FRAME_MAX];
	struct pkt e, x, qx = q;
	struct frame f, w;

	q.src = B_IN2;
	q.ttl = 63;
	qx.ttl = 63;
	e = icmp_err(from, B_IN2, type, code, &q, quote, qb);
	x = icmp_err(from, IN2, type, code, &qx, quote, wb);
	x.ttl = 63;
	in_frame(&f, "r1", &e);
	fwd_frame(&w, "r0", &x);
	return bstep(what, "r1", &f, XDPR_FWD, &w, NOEV, 1, BE(BIN, BICMP));
}

static bool t_err_in_udp(void)
{
	return err_in("port unreachable from 10.0.2.2 quoting a whole udp datagram",
		      (struct pkt){ .src = IN2, .dst = REM, .sport = 5000, .dport = 53 }, REM, 3, 3, 0);
}

static bool t_err_in_tcp(void)
{
	return err_in("time exceeded from 10.0.2.9 quoting IP + 28 bytes of tcp (checksum quoted)",
		      (struct pkt){ .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 800, .dport = 80,
				    .plen = 200 }, HOP, 11, 0, 48);
}

static bool t_err_in_tcp8(void)
{
	return err_in("host unreachable quoting IP + 8 bytes of tcp (no checksum quoted)",
		      (struct pkt){ .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 800, .dport = 80,
				    .plen = 200 }, HOP, 3, 1, 28);
}

static bool t_err_in_echo(void)
{
	return err_in("time exceeded quoting an echo request (traceroute -I)",
		      (struct pkt){ .src = IN2, .dst = REM, .proto = IPPROTO_ICMP, .type = 8, .sport = 0x99,
				    .dport = 1, .plen = 56 }, HOP, 11, 0, 0);
}

static bool t_err_in_nocsum(void)
{
	return err_in("port unreachable quoting udp without checksum (0 stays 0)",
		      (struct pkt){ .src = IN2, .dst = REM, .sport = 5000, .dport = 53, .nocsum = true }, REM, 3, 3,
		      0);
}

/* An inside host's error about a packet it was sent: outer source and quoted destination outside. */
static bool t_err_out(void)
{
	__u8 qb[FRAME_MAX], wb[FRAME_MAX];
	struct pkt q = { .src = REM, .dst = IN2, .sport = 53, .dport = 5000, .ttl = 63 }, qx = q, e, x;
	struct frame f, w;

	qx.dst = B_IN2;
	e = icmp_err(IN2, REM, 3, 3, &q, 0, qb);
	x = icmp_err(B_IN2, REM, 3, 3, &qx, 0, wb);
	x.ttl = 63;
	in_frame(&f, "r0", &e);
	fwd_frame(&w, "r1", &x);
	return bstep("port unreachable from 10.0.1.2 about 10.0.2.2:53 -> 10.0.1.2:5000", "r0", &f, XDPR_FWD, &w,
		     NOEV, 1, BE(BOUT, BICMP));
}

/* A later fragment: the IP header only, translated before the kernel gets it. */
static bool t_frag_out(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .proto = IPPROTO_UDP, .frag = 185, .plen = 64 };
	struct pkt x = k;
	struct frame f, w;
	__u8 *b;

	in_frame(&f, "r0", &k);
	/* a later fragment has no UDP header: its first 8 bytes are payload, left as they are */
	x.src = B_IN2;
	in_frame(&w, "r0", &x);
	b = w.b + ETH_HLEN;
	memcpy(b + 20, f.b + ETH_HLEN + 20, k.plen + 8);
	put16(b + 10, 0);
	put16(b + 10, ~fold(sum16(b, 20, 0)));
	return bstep("later fragment out -> pass_ip4_frag, source already 192.0.2.2", "r0", &f,
		     XDPR_PASS_IP4_FRAG, &w, NOEV, 1, BE(BOUT));
}

/* XDP's time exceeded: from the address the packet was sent to, quoting it as it arrived (nft netmap's answer). */
static void ttl_answer(struct frame *w, const struct frame *in, const char *src, const char *dst)
{
	const __u8 *q = in->b + ETH_HLEN;
	int qlen = (q[0] & 0xf) * 4 + 8;
	__u8 *iph = w->b + ETH_HLEN, *ic = iph + 20, peer[6];
	__be32 s = ip(src), d = ip(dst);

	memset(w, 0, sizeof(*w));
	mac_parse(dev_get("r1")->peer_mac, peer);
	memcpy(w->b, peer, 6);
	memcpy(w->b + 6, dev_get("r1")->hw, 6);
	put16(w->b + 12, ETH_P_IP);
	iph[0] = 0x45, iph[1] = 0xc0, iph[8] = 64, iph[9] = IPPROTO_ICMP;
	put16(iph + 2, 20 + 8 + qlen);
	memcpy(iph + 12, &s, 4);
	memcpy(iph + 16, &d, 4);
	put16(iph + 10, ~fold(sum16(iph, 20, 0)));
	ic[0] = 11;
	memcpy(ic + 8, q, qlen);
	put16(ic + 2, ~fold(sum16(ic, 8 + qlen, 0)));
	w->len = ETH_HLEN + 20 + 8 + qlen;
}

static bool t_ttl1_in(void)
{
	struct pkt k = { .src = REM, .dst = B_IN2, .sport = 53, .dport = 5000, .ttl = 1 };
	struct frame f, w;

	in_frame(&f, "r1", &k);
	ttl_answer(&w, &f, B_IN2, REM);
	return bstep("TTL 1 to 192.0.2.2 -> time exceeded from 192.0.2.2 (XDP_TX), quoting it untranslated", "r1",
		     &f, XDPR_TX_ICMP_TTL, &w, NOEV, 1, BE([0] = 0));
}

static bool t_ttl1_out(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53, .ttl = 1 };
	struct frame f;

	in_frame(&f, "r0", &k);
	return bstep("TTL 1 from 10.0.1.2 -> pass_ttl untranslated (the kernel answers the inside host)", "r0",
		     &f, XDPR_PASS_TTL, NULL, NOEV, 1, BE([0] = 0));
}

static bool t_cut(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 1, .dport = 2, .plen = NONE };
	struct frame f;
	__u8 *b;

	in_frame(&f, "r0", &k);
	/* an IP length that ends inside the TCP header: its checksum cannot be fixed */
	b = f.b + ETH_HLEN;
	put16(b + 2, 20 + 12);
	put16(b + 10, 0);
	put16(b + 10, ~fold(sum16(b, 20, 0)));
	f.len = ETH_HLEN + 32;
	return bstep("tcp cut inside its header -> drop_nat_untranslatable, counted dropped", "r0", &f,
		     XDPR_DROP_NAT_UNTRANSLATABLE, NULL, NOEV, 1, BE(BDROP));
}

/* The interface flag gates both steps: off, the source meets the masquerade rule again. */
static bool t_flag_off(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5600, .dport = 53 };
	struct pkt x = snat(k, OUTA, 5600, true);
	struct frame f, w;
	bool ok;

	iface_flag("r1", XDPR_IF_BINAT, false);
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	ok = bstep("flag off: 10.0.1.2 masqueraded as 10.0.2.1, 1:1 counters still", "r0", &f, XDPR_FWD, &w,
		   EV(XOUT, NEW, KEPT), 1, BE([0] = 0));
	iface_flag("r1", XDPR_IF_BINAT, true);
	return ok;
}

/* The outside interface is no interface of the router any more (detached, rules kept): its inside sources drop. */
static bool t_if_gone(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5700, .dport = 53 };
	struct dev *d = dev_get("r1");
	struct xdpr_iface c;
	struct frame f;
	bool ok;

	if (bpf_map_lookup_elem(ifaces_fd, &d->ifindex, &c) || bpf_map_delete_elem(ifaces_fd, &d->ifindex))
		die("cannot take r1 out of xdpr_ifaces");
	ifaces_changed(bpf_map__fd(skel->maps.xdpr_if_gen));
	in_frame(&f, "r0", &k);
	ok = bstep("r1 gone: 10.0.1.2 -> 10.0.2.2 -> drop_nat_if_gone, untranslated", "r0", &f,
		   XDPR_DROP_NAT_IF_GONE, NULL, NOEV, 1, BE(BDROP));
	if (bpf_map_update_elem(ifaces_fd, &d->ifindex, &c, BPF_NOEXIST))
		die("cannot put r1 back");
	ifaces_changed(bpf_map__fd(skel->maps.xdpr_if_gen));
	return ok;
}

static const struct {
	const char *name;
	bool (*fn)(void);
} cases[] = {
	{ "udp both ways, /24 netmap", t_udp },
	{ "udp zero checksum both ways", t_udp_nocsum },
	{ "tcp SYN and data both ways", t_tcp },
	{ "icmp echo both ways, id kept", t_echo },
	{ "GRE both ways: IP header only", t_gre },
	{ "SCTP both ways: IP header only", t_sctp },
	{ "/32 rule both ways", t_slash32 },
	{ "unsolicited inbound to a mapped address", t_unsolicited },
	{ "a source no 1:1 rule covers: masquerade rule as before", t_masq_beside },
	{ "icmp error in about udp", t_err_in_udp },
	{ "icmp error in about tcp, checksum in the quote", t_err_in_tcp },
	{ "icmp error in about tcp, 8-byte quote", t_err_in_tcp8 },
	{ "icmp error in about an echo request", t_err_in_echo },
	{ "icmp error in about udp without checksum", t_err_in_nocsum },
	{ "icmp error out from an inside host", t_err_out },
	{ "later fragment out: translated, handed to the kernel", t_frag_out },
	{ "TTL 1 in: time exceeded from the outside address, from XDP", t_ttl1_in },
	{ "TTL 1 out: untranslated", t_ttl1_out },
	{ "cut tcp header: dropped", t_cut },
	{ "interface flag off: not translated (masquerade rule applies)", t_flag_off },
	{ "outside interface gone: inside sources dropped, counted", t_if_gone },
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
	binat_fd = bpf_map__fd(skel->maps.xdpr_binat);
	bin_fd = bpf_map__fd(skel->maps.xdpr_binat_in);
	bout_fd = bpf_map__fd(skel->maps.xdpr_binat_out);
	bst_fd = bpf_map__fd(skel->maps.xdpr_binat_st);
	/* upstream routes the outside prefixes to r1; the router's default route points back out */
	if (sh("/sbin/ip route add 10.0.3.0/24 dev r0") || sh("/sbin/ip route add default via %s dev r1", REM) ||
	    sh("/sbin/ip neigh replace %s lladdr %s dev r0 nud permanent", H32, H32_MAC) ||
	    sh("/sbin/ip neigh replace %s lladdr %s dev r0 nud permanent", MASQ, MASQ_MAC))
		die("cannot set up 10.0.3.0/24");
	cfg_flags |= XDPR_CFG_BINAT;
	fresh(); /* masquerade rule 1 on r1, the settings with XDPR_CFG_BINAT */
	binat_rule(1, "10.0.1.0", "192.0.2.0", 24);
	binat_rule(2, H32, B_H32, 32);
	iface_flag("r1", XDPR_IF_BINAT, true);

	printf("1..%d\n", NCASES);
	for (int i = 0; i < NCASES; i++)
		tap(cases[i].fn(), cases[i].name, NULL);
	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
