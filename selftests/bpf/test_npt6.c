// SPDX-License-Identifier: GPL-2.0
/*
 * test_npt6.c - NPTv6 (RFC 6296) in xdpr_main, one BPF_PROG_TEST_RUN per
 * frame against the real kernel FIB of a private network namespace:
 *
 *   r0 fd01:203:405:1::1/64 (inside; fd02:0:0:1::/64, fd03:0:0:100::/56 and
 *      fd09::/64 routed to fd01:203:405:1::2 too)
 *   r1 2001:db8:ff::1/64 (outside; 2001:db8:4::/64 via 2001:db8:ff::2)
 *
 * Rules on r1: fd01:203:405::/48 <-> 2001:db8:1::/48, fd02:0:0:1::/64 <->
 * 2001:db8:2:5::/64, fd03:0:0:100::/56 <-> 2001:db8:3:aa00::/56.  Every
 * expected address below was computed apart from xdpr (python, RFC 6296
 * 3.2-3.7, in the commit that added this file); every expected frame is the
 * input with the MACs the FIB names, the hop limit one less and that
 * address: the same L4 checksum, which the test also recomputes from the
 * expected bytes (the checksum-neutral property).
 */
#define _GNU_SOURCE
#pragma GCC diagnostic ignored "-Wunused-function" /* harness.h, frame.h helpers this test does not use */
#include <sched.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include "harness.h"
#include "frame.h"
#include "xdpr.skel.h"
#include "libxdpr.h"

#define MAC_R0 "02:00:00:00:00:01"
#define MAC_C  "02:00:00:00:00:02"
#define MAC_R1 "02:00:00:00:01:01"
#define MAC_H  "02:00:00:00:01:02"

static struct xdpr_bpf *skel;
static int prog_fd, cfg_fd, npt_fd, nstats_fd, ncpus;
static __u32 if_r0, if_r1;

static void setup_netns(void)
{
	if (unshare(CLONE_NEWNET))
		die("unshare(CLONE_NEWNET): %s", strerror(errno));
	if (sh("/sbin/ip link set lo up") ||
	    sh("/sbin/ip link add r0 address " MAC_R0 " type veth peer name p0") ||
	    sh("/sbin/ip link add r1 address " MAC_R1 " type veth peer name p1") ||
	    sh("/sbin/ip link set r0 up && /sbin/ip link set p0 up && /sbin/ip link set r1 up && /sbin/ip link set p1 up") ||
	    sh("/sbin/ip -6 addr add fd01:203:405:1::1/64 dev r0 nodad") ||
	    sh("/sbin/ip -6 addr add 2001:db8:ff::1/64 dev r1 nodad") ||
	    sh("/sbin/ip -6 neigh replace fd01:203:405:1::2 lladdr " MAC_C " dev r0 nud permanent") ||
	    sh("/sbin/ip -6 neigh replace 2001:db8:ff::2 lladdr " MAC_H " dev r1 nud permanent") ||
	    sh("/sbin/ip -6 route add 2001:db8:4::/64 via 2001:db8:ff::2") ||
	    sh("/sbin/ip -6 route add fd01:203:405::/48 via fd01:203:405:1::2") ||
	    sh("/sbin/ip -6 route add fd02:0:0:1::/64 via fd01:203:405:1::2") ||
	    sh("/sbin/ip -6 route add fd03:0:0:100::/56 via fd01:203:405:1::2") ||
	    sh("/sbin/ip -6 route add fd09::/64 via fd01:203:405:1::2"))
		die("cannot build the test namespace");
	sysctl_set("net/ipv6/conf/all/forwarding", "1");
	if_r0 = if_nametoindex("r0");
	if_r1 = if_nametoindex("r1");
}

static void register_devs(void)
{
	int ifaces = bpf_map__fd(skel->maps.xdpr_ifaces), tx = bpf_map__fd(skel->maps.xdpr_tx_ports);
	__u32 ids[2] = { if_r0, if_r1 };
	const char *macs[2] = { MAC_R0, MAC_R1 };

	for (int i = 0; i < 2; i++) {
		struct xdpr_iface c = { .slot = i + 1, .flags = XDPR_IF_XMIT };

		mac_parse(macs[i], c.mac);
		if (bpf_map_update_elem(ifaces, &ids[i], &c, BPF_ANY) ||
		    bpf_map_update_elem(tx, &ids[i], &ids[i], BPF_ANY))
			die("cannot register the devices: %s", strerror(errno));
	}
	ifaces_changed(bpf_map__fd(skel->maps.xdpr_if_gen));
}

static void pton(const char *s, void *a)
{
	if (inet_pton(AF_INET6, s, a) != 1)
		die("bad address %s", s);
}

/* The three rules on r1, live in slot 1 (the flip side of the table tested too). */
static void rules_on(bool on)
{
	static const char *const r[][3] = {
		{ "fd01:203:405::", "2001:db8:1::", "48" },
		{ "fd02:0:0:1::", "2001:db8:2:5::", "64" },
		{ "fd03:0:0:100::", "2001:db8:3:aa00::", "56" },
	};
	struct xdpr_npt_tab t = { .n = 3 };
	struct xdpr_cfg c = { 0 };
	__u32 zero = 0, one = 1;
	char err[256];
	void *z = calloc(ncpus, sizeof(struct xdpr_npt_ctr));

	for (int i = 0; i < 3; i++) {
		__u8 a[16], b[16];

		pton(r[i][0], a);
		pton(r[i][1], b);
		if (xdpr_npt_make(&t.r[i], a, atoi(r[i][2]), b, atoi(r[i][2]), err, sizeof(err)))
			die("rule %d: %s", i, err);
		t.r[i].ifindex = if_r1;
		if (!z || bpf_map_update_elem(nstats_fd, &i, z, BPF_ANY))
			die("cannot zero the counters");
	}
	free(z);
	if (bpf_map_update_elem(npt_fd, &one, &t, BPF_ANY))
		die("cannot write xdpr_npt: %s", strerror(errno));
	c.flags = on ? XDPR_CFG_NPT | XDPR_CFG_NPT_SLOT : 0;
	if (bpf_map_update_elem(cfg_fd, &zero, &c, BPF_ANY))
		die("cannot write xdpr_cfg: %s", strerror(errno));
}

static struct xdpr_npt_ctr ctr(__u32 rule)
{
	struct xdpr_npt_ctr *pc = calloc(ncpus, sizeof(*pc)), s = { 0 };

	if (!pc || bpf_map_lookup_elem(nstats_fd, &rule, pc))
		die("cannot read the NPTv6 counters");
	for (int c = 0; c < ncpus; c++) {
		s.out += pc[c].out, s.in += pc[c].in, s.icmp += pc[c].icmp;
		s.pass += pc[c].pass, s.drop += pc[c].drop;
	}
	free(pc);
	return s;
}

/* Ethernet + IPv6 (hop limit 64) + UDP 40000 -> 7 with 32 bytes, or an ICMPv6 error quoting such a packet. */
static void mkframe(struct frame *f, const char *dmac, const char *smac, const char *src, const char *dst,
		    const char *qsrc, const char *qdst)
{
	struct ethhdr *eth = (struct ethhdr *)f->b;
	struct ipv6hdr *ip;
	__u8 *l4;
	int l4len;

	memset(f, 0, sizeof(*f));
	mac_parse(dmac, eth->h_dest);
	mac_parse(smac, eth->h_source);
	eth->h_proto = htons(ETH_P_IPV6);
	f->l3 = ETH_HLEN;
	f->l4 = ETH_HLEN + 40;
	ip = ip6(f);
	ip->version = 6;
	ip->hop_limit = 64;
	pton(src, &ip->saddr);
	pton(dst, &ip->daddr);
	l4 = f->b + f->l4;
	if (!qsrc) {
		l4len = 8 + 32;
		ip->nexthdr = IPPROTO_UDP;
		for (int i = 8; i < l4len; i++)
			l4[i] = i * 7 + 1;
		put16(l4, 40000), put16(l4 + 2, 7), put16(l4 + 4, l4len);
	} else {
		struct ipv6hdr *q = (struct ipv6hdr *)(l4 + 8);
		__u8 *u = l4 + 48;

		l4len = 8 + 40 + 8 + 32;
		ip->nexthdr = IPPROTO_ICMPV6;
		l4[0] = 3; /* time exceeded, in transit */
		q->version = 6, q->hop_limit = 1, q->nexthdr = IPPROTO_UDP, q->payload_len = htons(40);
		pton(qsrc, &q->saddr);
		pton(qdst, &q->daddr);
		for (int i = 8; i < 40; i++)
			u[i] = i * 7 + 1;
		put16(u, 40000), put16(u + 2, 7), put16(u + 4, 40);
		/* the quoted datagram's own checksum, as it was sent */
		{
			__u32 ps = sum16(&q->saddr, 32, 0) + 40 + IPPROTO_UDP;

			put16(u + 6, ~fold(sum16(u, 40, ps)) ?: 0xffff);
		}
	}
	ip->payload_len = htons(l4len);
	{
		__u32 ps = sum16(&ip->saddr, 32, 0) + l4len + ip->nexthdr;
		int ck = qsrc ? 2 : 6;

		put16(l4 + ck, ~fold(sum16(l4, l4len, ps)) ?: (qsrc ? 0 : 0xffff));
	}
	f->len = f->l4 + l4len;
}

/* Does the L4 checksum of frame f verify (0xffff over pseudo-header and payload)? */
static bool l4_ok(struct frame *f)
{
	struct ipv6hdr *ip = ip6(f);
	int l4len = ntohs(ip->payload_len);
	__u32 ps = sum16(&ip->saddr, 32, 0) + l4len + ip->nexthdr;

	return fold(sum16(f->b + f->l4, l4len, ps)) == 0xffff;
}

struct tcase {
	const char *name;
	const char *in_dev;          /* "r0" or "r1" */
	const char *src, *dst, *qsrc, *qdst;
	__u32 verdict;               /* XDP_REDIRECT, XDP_PASS, XDP_DROP */
	/* the frame as it must leave: addresses (NULL: as sent), MACs and hop limit for a redirect */
	const char *w_src, *w_dst, *w_qsrc, *w_qdst;
	int rule;                    /* counters of this rule grow (-1: no rule's) */
	__u64 d_out, d_in, d_icmp, d_pass, d_drop;
	int hop1;                    /* sent with hop limit 1 */
};

static const struct tcase cases[] = {
	{ "/48 out: fd01:203:405:1::2 -> 2001:db8:1:d550::2, adjustment 0xd54f at bits 48-63",
	  "r0", "fd01:203:405:1::2", "2001:db8:4::2", NULL, NULL, XDP_REDIRECT,
	  "2001:db8:1:d550::2", NULL, NULL, NULL, 0, 1, 0, 0, 0, 0, 0 },
	{ "/48 in: 2001:db8:1:d550::2 -> fd01:203:405:1::2",
	  "r1", "2001:db8:4::2", "2001:db8:1:d550::2", NULL, NULL, XDP_REDIRECT,
	  NULL, "fd01:203:405:1::2", NULL, NULL, 0, 0, 1, 0, 0, 0, 0 },
	{ "/48 out: the sum 0xffff is written 0x0000 (fd01:203:405:2ab0::2 -> 2001:db8:1::2)",
	  "r0", "fd01:203:405:2ab0::2", "2001:db8:4::2", NULL, NULL, XDP_REDIRECT,
	  "2001:db8:1::2", NULL, NULL, NULL, 0, 1, 0, 0, 0, 0, 0 },
	{ "/48 in: 2001:db8:1::2 -> fd01:203:405:2ab0::2 (and back)",
	  "r1", "2001:db8:4::2", "2001:db8:1::2", NULL, NULL, XDP_REDIRECT,
	  NULL, "fd01:203:405:2ab0::2", NULL, NULL, 0, 0, 1, 0, 0, 0, 0 },
	{ "/48 out: subnet 0xffff has no mapping: dropped, counted",
	  "r0", "fd01:203:405:ffff::2", "2001:db8:4::2", NULL, NULL, XDP_DROP,
	  NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, 1, 0 },
	{ "/64 out: fd02:0:0:1::2 -> 2001:db8:2:5:cf43::2 (the identifier's first word)",
	  "r0", "fd02:0:0:1::2", "2001:db8:4::2", NULL, NULL, XDP_REDIRECT,
	  "2001:db8:2:5:cf43::2", NULL, NULL, NULL, 1, 1, 0, 0, 0, 0, 0 },
	{ "/64 in: 2001:db8:2:5:cf43::2 -> fd02:0:0:1::2",
	  "r1", "2001:db8:4::2", "2001:db8:2:5:cf43::2", NULL, NULL, XDP_REDIRECT,
	  NULL, "fd02:0:0:1::2", NULL, NULL, 1, 0, 1, 0, 0, 0, 0 },
	{ "/64 out: identifier word 4 is 0xffff: word 5 takes it (-> 2001:db8:2:5:ffff:cf43:0:2)",
	  "r0", "fd02:0:0:1:ffff::2", "2001:db8:4::2", NULL, NULL, XDP_REDIRECT,
	  "2001:db8:2:5:ffff:cf43:0:2", NULL, NULL, NULL, 1, 1, 0, 0, 0, 0, 0 },
	{ "/64 out: an all-ones identifier has no mapping: dropped, counted",
	  "r0", "fd02:0:0:1:ffff:ffff:ffff:ffff", "2001:db8:4::2", NULL, NULL, XDP_DROP,
	  NULL, NULL, NULL, NULL, 1, 0, 0, 0, 0, 1, 0 },
	{ "/56 out (longer than /48): fd03:0:0:142::9 -> 2001:db8:3:aa42:2647::9",
	  "r0", "fd03:0:0:142::9", "2001:db8:4::2", NULL, NULL, XDP_REDIRECT,
	  "2001:db8:3:aa42:2647::9", NULL, NULL, NULL, 2, 1, 0, 0, 0, 0, 0 },
	{ "/56 in: 2001:db8:3:aa42:2647::9 -> fd03:0:0:142::9",
	  "r1", "2001:db8:4::2", "2001:db8:3:aa42:2647::9", NULL, NULL, XDP_REDIRECT,
	  NULL, "fd03:0:0:142::9", NULL, NULL, 2, 0, 1, 0, 0, 0, 0 },
	{ "ICMPv6 error in: time exceeded to 2001:db8:1:d550::2 quoting it -> both fd01:203:405:1::2",
	  "r1", "2001:db8:4::1", "2001:db8:1:d550::2", "2001:db8:1:d550::2", "2001:db8:4::2", XDP_REDIRECT,
	  NULL, "fd01:203:405:1::2", "fd01:203:405:1::2", NULL, 0, 0, 1, 1, 0, 0, 0 },
	{ "ICMPv6 error out: from fd01:203:405:1::2 quoting a packet to it -> both 2001:db8:1:d550::2",
	  "r0", "fd01:203:405:1::2", "2001:db8:4::2", "2001:db8:4::2", "fd01:203:405:1::2", XDP_REDIRECT,
	  "2001:db8:1:d550::2", NULL, NULL, "2001:db8:1:d550::2", 0, 1, 0, 1, 0, 0, 0 },
	{ "untouched: a source in no inside prefix (fd09::2) leaves as it is",
	  "r0", "fd09::2", "2001:db8:4::2", NULL, NULL, XDP_REDIRECT,
	  NULL, NULL, NULL, NULL, -1, 0, 0, 0, 0, 0, 0 },
	{ "untouched: to the router's own r1 address (not in an outside prefix): kernel, as it is",
	  "r1", "2001:db8:4::2", "2001:db8:ff::1", NULL, NULL, XDP_PASS,
	  NULL, NULL, NULL, NULL, -1, 0, 0, 0, 0, 0, 0 },
	{ "untouched: arriving on r0 for an outside prefix address (not the outside interface)",
	  "r0", "fd09::2", "2001:db8:1:d550::2", NULL, NULL, XDP_PASS,
	  NULL, NULL, NULL, NULL, -1, 0, 0, 0, 0, 0, 0 },
	{ "hand-over: no neighbour on r1 (2001:db8:ff::77): to the kernel already translated, counted",
	  "r0", "fd01:203:405:1::2", "2001:db8:ff::77", NULL, NULL, XDP_PASS,
	  "2001:db8:1:d550::2", NULL, NULL, NULL, 0, 1, 0, 0, 1, 0, 0 },
	{ "hand-over: hop limit 1 goes to the kernel untranslated (it answers, forwards nothing)",
	  "r0", "fd01:203:405:1::2", "2001:db8:4::2", NULL, NULL, XDP_PASS,
	  NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, 1 },
	{ "hand-over in: hop limit 1 to 2001:db8:1:d550::2 goes to the kernel untranslated (its time "
	  "exceeded quotes no inside address)",
	  "r1", "2001:db8:4::2", "2001:db8:1:d550::2", NULL, NULL, XDP_PASS,
	  NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, 1 },
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

static bool run_case(const struct tcase *t, bool hop1)
{
	static struct frame in, want, got;
	struct xdpr_npt_ctr c0 = { 0 }, c1;
	bool redirect = t->verdict == XDP_REDIRECT, out = !strcmp(t->in_dev, "r0");
	__u32 verdict = 0, ifx = out ? if_r0 : if_r1;
	struct ipv6hdr *ip;
	int err;

	mkframe(&in, out ? MAC_R0 : MAC_R1, out ? MAC_C : MAC_H, t->src, t->dst, t->qsrc, t->qdst);
	if (hop1)
		ip6(&in)->hop_limit = 1;
	want = in;
	ip = ip6(&want);
	if (t->w_src)
		pton(t->w_src, &ip->saddr);
	if (t->w_dst)
		pton(t->w_dst, &ip->daddr);
	if (t->w_qsrc)
		pton(t->w_qsrc, want.b + want.l4 + 8 + 8);
	if (t->w_qdst)
		pton(t->w_qdst, want.b + want.l4 + 8 + 24);
	if (redirect) {
		struct ethhdr *eth = (struct ethhdr *)want.b;

		mac_parse(out ? MAC_H : MAC_C, eth->h_dest);
		mac_parse(out ? MAC_R1 : MAC_R0, eth->h_source);
		ip->hop_limit--;
	}
	if (!l4_ok(&want)) {
		note("the expected frame's L4 checksum does not verify: the mapping is not checksum-neutral");
		return false;
	}
	if (t->rule >= 0)
		c0 = ctr(t->rule);
	err = run_frame(prog_fd, ifx, &in, &got, &verdict);
	if (err) {
		note("BPF_PROG_TEST_RUN: %s", strerror(-err));
		return false;
	}
	if (verdict != t->verdict) {
		note("verdict %u, expected %u", verdict, t->verdict);
		return false;
	}
	if (t->verdict != XDP_DROP && !same_bytes(&want, &got))
		return false;
	if (t->rule >= 0) {
		c1 = ctr(t->rule);
		if (c1.out - c0.out != t->d_out || c1.in - c0.in != t->d_in || c1.icmp - c0.icmp != t->d_icmp ||
		    c1.pass - c0.pass != t->d_pass || c1.drop - c0.drop != t->d_drop) {
			note("counters grew out %llu in %llu icmp %llu pass %llu drop %llu", c1.out - c0.out,
			     c1.in - c0.in, c1.icmp - c0.icmp, c1.pass - c0.pass, c1.drop - c0.drop);
			return false;
		}
	}
	return true;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 0;
	}
	setup_netns();
	skel = xdpr_bpf__open_and_load();
	if (!skel)
		die("cannot load the XDP program: %s", strerror(errno));
	nat_tabs_init(skel->obj, NULL, NULL, NULL, NULL, NULL, NULL);
	prog_fd = bpf_program__fd(skel->progs.xdpr_main);
	cfg_fd = bpf_map__fd(skel->maps.xdpr_cfg);
	npt_fd = bpf_map__fd(skel->maps.xdpr_npt);
	nstats_fd = bpf_map__fd(skel->maps.xdpr_npt_stats);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 1)
		die("cannot count CPUs");
	register_devs();
	rules_on(true);

	printf("1..%d\n", NCASES + 3);
	for (int i = 0; i < NCASES; i++) {
		cur_step = NULL;
		tap(run_case(&cases[i], cases[i].hop1), cases[i].name, NULL);
	}
	/* r1 detached (out of xdpr_ifaces), its rule kept: not applied, the kernel forwards it as it is */
	{
		static const struct tcase detached = {
			"r1 detached: fd01:203:405:1::2 to the kernel untranslated (no one would map replies in)",
			"r0", "fd01:203:405:1::2", "2001:db8:4::2", NULL, NULL, XDP_PASS, NULL, NULL, NULL, NULL,
			0, 0, 0, 0, 0, 0, 0 };
		int ifaces = bpf_map__fd(skel->maps.xdpr_ifaces);

		if (bpf_map_delete_elem(ifaces, &if_r1))
			die("cannot take r1 out of xdpr_ifaces: %s", strerror(errno));
		ifaces_changed(bpf_map__fd(skel->maps.xdpr_if_gen));
		tap(run_case(&detached, false), detached.name, NULL);
		register_devs();
	}
	/* without the cfg bit the same frame goes through as it is */
	rules_on(false);
	{
		static const struct tcase off = {
			"no NPTv6 bit: fd01:203:405:1::2 forwarded as it is", "r0", "fd01:203:405:1::2",
			"2001:db8:4::2", NULL, NULL, XDP_REDIRECT, NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, 0 };

		tap(run_case(&off, false), off.name, NULL);
	}
	{
		static const struct tcase off_in = {
			"no NPTv6 bit: to 2001:db8:1:d550::2 on r1 not translated (no route: kernel)", "r1",
			"2001:db8:4::2", "2001:db8:1:d550::2", NULL, NULL, XDP_PASS, NULL, NULL, NULL, NULL, -1,
			0, 0, 0, 0, 0, 0 };

		tap(run_case(&off_in, false), off_in.name, NULL);
	}
	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
