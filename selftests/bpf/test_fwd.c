// SPDX-License-Identifier: GPL-2.0
/*
 * test_fwd.c - xdpr_main against the real kernel FIB, one BPF_PROG_TEST_RUN per case.
 *
 * In a private network namespace: veths r0 (ingress), r1 (egress), r2 (not
 * xdpr's) and r3 (xdpr's, no XDPR_IF_XMIT), static neighbours, and a route for
 * every FIB outcome.  Each case crafts one frame, runs the program once
 * (repeat 1: repeats reuse the rewritten buffer) and checks
 *   - the verdict,
 *   - that exactly its reason counter moved, by one packet and the frame's
 *     bytes, in the ingress interface's slot (summed over CPUs),
 *   - the bytes out: a forwarded frame carries the next hop's MAC, the egress
 *     MAC, TTL / hop limit - 1 and a recomputed IPv4 checksum, and is
 *     otherwise identical; any other frame must come back untouched.
 * Plus one ECMP check: source ports alone must spread flows over two next hops,
 * and two on the program's per-CPU copies of the interfaces' settings: r3's
 * ifindex is r1's + XDPR_IFC_SETS (both take the same copy), a change to
 * r1's settings reaches every CPU's next frame, and one whose writer never
 * moved the generation reaches them after a kernel tick.
 * TAP on stdout; exit 1 if any case failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdpr_shared.h"
#include "libxdpr.h"
#include "xdpr.skel.h"
#include "harness.h"
#include "frame.h"

#define PAYLOAD   32               /* default L4 payload bytes */
#define PEER_MAC  "02:00:00:00:01:02" /* c0: where test frames come from */
#define NH_R1     "02:00:00:00:02:02" /* 10.0.2.2, 2001:db8:2::2 on r1 */
#define NH_R1B    "02:00:00:00:02:04" /* 10.0.2.4 on r1 (second ECMP next hop) */
#define NH_R3     "02:00:00:00:04:02" /* 10.0.4.2 on r3 */

struct dev {
	const char *name, *peer, *mac, *peer_mac;
	__u32 slot;  /* 0: not registered in xdpr_ifaces */
	__u32 flags;
	__u32 ifindex;
	__u8 hw[6];
	const char *copy_of; /* made with the ifindex whose settings' copy it shares */
};

#define DEV(n, p, m, pm, s, fl) \
	{ .name = n, .peer = p, .mac = m, .peer_mac = pm, .slot = s, .flags = fl }
static struct dev devs[] = {
	DEV("r0", "c0", "02:00:00:00:01:01", PEER_MAC, 1, XDPR_IF_XMIT),            /* ingress */
	DEV("r1", "s0", "02:00:00:00:02:01", "02:00:00:00:02:09", 2, XDPR_IF_XMIT), /* egress */
	DEV("r2", "c2", "02:00:00:00:03:01", "02:00:00:00:03:09", 0, 0), /* not xdpr's */
	/* cannot transmit; its settings' copy is r1's (struct xdpr_if_cached) */
	{ .name = "r3", .peer = "c3", .mac = "02:00:00:00:04:01", .peer_mac = "02:00:00:00:04:09",
	  .slot = 3, .flags = 0, .copy_of = "r1" },
};

static const char *const setup_cmds[] = {
	"ip addr add 10.0.1.1/24 dev r0",
	"ip addr add 10.0.2.1/24 dev r1",
	"ip addr add 10.0.3.1/24 dev r2",
	"ip addr add 10.0.4.1/24 dev r3",
	"ip -6 addr add 2001:db8:1::1/64 dev r0 nodad",
	"ip -6 addr add 2001:db8:2::1/64 dev r1 nodad",
	"ip neigh replace 10.0.2.2 lladdr " NH_R1 " dev r1 nud permanent",
	"ip neigh replace 10.0.2.4 lladdr " NH_R1B " dev r1 nud permanent",
	"ip neigh replace 10.0.3.2 lladdr 02:00:00:00:03:02 dev r2 nud permanent",
	"ip neigh replace 10.0.4.2 lladdr " NH_R3 " dev r3 nud permanent",
	"ip -6 neigh replace 2001:db8:2::2 lladdr " NH_R1 " dev r1 nud permanent",
	"ip route add blackhole 10.9.1.0/24",
	"ip route add unreachable 10.9.2.0/24",
	"ip route add prohibit 10.9.3.0/24",
	"ip route add 10.9.4.0/24 via 10.0.2.2 dev r1 mtu lock 1280",
	"ip route add 10.9.5.0/24 nexthop via 10.0.2.2 dev r1 nexthop via 10.0.2.4 dev r1",
	"ip -6 route add blackhole 2001:db8:9:1::/64",
	"ip -6 route add 2001:db8:9:4::/64 via 2001:db8:2::2 dev r1 mtu lock 1280",
};

/* Lightweight-tunnel routes this kernel may or may not support: the first that works. */
static const char *const lwt_cmds[] = {
	"ip route add 10.9.6.0/24 encap mpls 100 via 10.0.2.2 dev r1",
	"ip route add 10.9.6.0/24 encap ip id 100 dst 10.0.2.2 via 10.0.2.2 dev r1",
	"ip route add 10.9.6.0/24 encap seg6 mode encap segs 2001:db8:2::2 via 10.0.2.2 dev r1",
};
static const char *lwt_route;

struct tcase {
	const char *name;
	const char *in;            /* ingress device (default r0) */
	int ip;                    /* 4, 6, or 0: Ethernet header only, mut builds the rest */
	const char *src, *dst;
	__u8 proto;                /* IPPROTO_UDP (default), TCP, ICMP, ICMPV6 */
	__u8 ttl;                  /* default 64 */
	__u16 len;                 /* IP packet bytes, default headers + PAYLOAD */
	__u16 sport;               /* default 40000 */
	void (*mut)(struct frame *f); /* the one thing wrong (or special) with the frame */
	int reason;
	const char *nh, *out;      /* forwarded: next hop MAC and egress device */
	__u16 csum_in, csum_out;   /* IPv4: force the input checksum, expect this one out */
	__u32 in_flags;            /* ingress xdpr_ifaces flags for this case only */
	const char *off;           /* sysctl set to 0 for this case only */
	bool lwt;                  /* needs a lightweight-tunnel route */
};

/* ---- network namespace ---- */

/* /proc/sys/net is the caller's network namespace. */

/* The address the kernel reports (SIOCGIFHWADDR), as the loader registers it. */

static struct dev *dev_get(const char *name)
{
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		if (!strcmp(devs[i].name, name))
			return &devs[i];
	die("no device %s in the test", name);
	return NULL;
}

static void setup_netns(void)
{
	static const char *const sysctls[][2] = {
		{ "net/ipv4/ip_forward", "1" },
		{ "net/ipv6/conf/all/forwarding", "1" },
		{ "net/ipv4/fib_multipath_hash_policy", "1" }, /* L4: ports pick the path */
	};

	if (unshare(CLONE_NEWNET))
		die("unshare(CLONE_NEWNET): %s", strerror(errno));
	for (size_t i = 0; i < sizeof(sysctls) / sizeof(sysctls[0]); i++)
		if (sysctl_set(sysctls[i][0], sysctls[i][1]))
			die("cannot set %s", sysctls[i][0]);
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		struct dev *d = &devs[i];

		char index[32] = "";

		if (d->copy_of)
			snprintf(index, sizeof(index), "index %u", dev_get(d->copy_of)->ifindex + XDPR_IFC_SETS);
		if (sh("/sbin/ip link add %s %s address %s type veth peer name %s address %s",
		       d->name, index, d->mac, d->peer, d->peer_mac) ||
		    sh("/sbin/ip link set %s up && /sbin/ip link set %s up", d->name, d->peer))
			die("cannot create veth %s", d->name);
		d->ifindex = if_nametoindex(d->name);
		if (d->copy_of && d->ifindex != dev_get(d->copy_of)->ifindex + XDPR_IFC_SETS)
			die("%s has ifindex %u, not %s", d->name, d->ifindex, index);
		dev_mac(d->name, d->hw);
	}
	for (size_t i = 0; i < sizeof(setup_cmds) / sizeof(setup_cmds[0]); i++)
		if (sh("/sbin/%s", setup_cmds[i]))
			die("setup failed: %s", setup_cmds[i]);
	for (size_t i = 0; i < sizeof(lwt_cmds) / sizeof(lwt_cmds[0]) && !lwt_route; i++)
		if (!sh("/sbin/%s 2>/dev/null", lwt_cmds[i]))
			lwt_route = lwt_cmds[i];
}

/* Register interfaces the way the loader does: devmap entry, then xdpr_ifaces. */
static void register_devs(struct xdpr_bpf *skel)
{
	int tx = bpf_map__fd(skel->maps.xdpr_tx_ports), ifs = bpf_map__fd(skel->maps.xdpr_ifaces);

	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		struct dev *d = &devs[i];
		struct xdpr_iface cfg = { .slot = d->slot, .flags = d->flags };

		if (!d->slot)
			continue;
		memcpy(cfg.mac, d->hw, 6);
		if (bpf_map_update_elem(tx, &d->ifindex, &d->ifindex, BPF_ANY) ||
		    bpf_map_update_elem(ifs, &d->ifindex, &cfg, BPF_ANY))
			die("cannot register %s: %s", d->name, strerror(errno));
	}
	ifaces_changed(bpf_map__fd(skel->maps.xdpr_if_gen));
}

/* ---- frames ---- */

static void build(struct frame *f, const struct tcase *c, const struct dev *in)
{
	__u8 proto = c->proto ?: IPPROTO_UDP;
	__u16 sport = c->sport ?: 40000;
	int hl = c->ip == 6 ? 40 : 20, len = c->len ?: hl + l4_hdr_len(proto) + PAYLOAD;

	memset(f, 0, sizeof(*f));
	memcpy(f->b, in->hw, 6);
	mac_parse(PEER_MAC, f->b + 6);
	f->l3 = ETH_HLEN;
	f->l4 = f->l3 + hl;
	f->len = f->l3 + (c->ip ? len : 0);
	if (c->ip == 4) {
		struct iphdr *ip = ip4(f);

		put16(f->b + 12, ETH_P_IP);
		ip->version = 4, ip->ihl = 5, ip->tot_len = htons(len), ip->id = htons(0x4242);
		ip->ttl = c->ttl ?: 64, ip->protocol = proto;
		if (inet_pton(AF_INET, c->src ?: "10.0.1.2", &ip->saddr) != 1 ||
		    inet_pton(AF_INET, c->dst, &ip->daddr) != 1)
			die("bad IPv4 address in case \"%s\"", c->name);
		build_l4(f, proto, sport, len - hl, sum16(&ip->saddr, 8, proto + len - hl));
		ip4_fix(f);
		if (c->csum_in)
			ip4_force_csum(f, c->csum_in);
	} else if (c->ip == 6) {
		struct ipv6hdr *ip = ip6(f);

		put16(f->b + 12, ETH_P_IPV6);
		ip->version = 6, ip->payload_len = htons(len - hl), ip->nexthdr = proto;
		ip->hop_limit = c->ttl ?: 64;
		if (inet_pton(AF_INET6, c->src ?: "2001:db8:1::2", &ip->saddr) != 1 ||
		    inet_pton(AF_INET6, c->dst, &ip->daddr) != 1)
			die("bad IPv6 address in case \"%s\"", c->name);
		build_l4(f, proto, sport, len - hl, sum16(&ip->saddr, 32, proto + len - hl));
	}
	if (c->mut)
		c->mut(f);
}

/* What a forwarded frame must look like: computed from scratch, not incrementally. */
static void expect_fwd(struct frame *e, const struct frame *in, const __u8 nh[6], const __u8 src[6])
{
	*e = *in;
	memcpy(e->b, nh, 6);
	memcpy(e->b + 6, src, 6);
	if (get16(e->b + 12) == ETH_P_IP) {
		ip4(e)->ttl--;
		ip4_fix(e);
	} else {
		ip6(e)->hop_limit--;
	}
}

/* ---- mutations: one defect (or feature) each ---- */

static void insert(struct frame *f, int at, const void *data, int n)
{
	memmove(f->b + at + n, f->b + at, f->len - at);
	memcpy(f->b + at, data, n);
	f->len += n;
	f->l3 += at < f->l3 ? n : 0;
	f->l4 += at <= f->l4 ? n : 0;
}

static void mut_arp(struct frame *f)
{
	static const __u8 arp[28] = { 0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 1, 2, 10, 0, 1, 2,
				      0, 0, 0, 0, 0, 0, 10, 0, 1, 1 };

	memset(f->b, 0xff, 6);
	put16(f->b + 12, ETH_P_ARP);
	memcpy(f->b + ETH_HLEN, arp, sizeof(arp));
	f->len = ETH_HLEN + sizeof(arp);
}

static void mut_vlan(struct frame *f) { insert(f, 12, (__u8[]){ 0x81, 0x00, 0, 100 }, 4); }
static void mut_qinq(struct frame *f) /* outer 802.1ad, inner 802.1Q */
{
	mut_vlan(f);
	insert(f, 12, (__u8[]){ 0x88, 0xa8, 0, 9 }, 4);
}

static void mut_vlan_short(struct frame *f) { mut_vlan(f), f->len = ETH_HLEN + 2; }
static void mut_qinq_short(struct frame *f) { mut_qinq(f), f->len = ETH_HLEN + 4 + 2; }
/* test_run refuses frames under 14 bytes: send 14, the program sees 10, the rest is a fragment */
static void mut_short10(struct frame *f) { f->len = ETH_HLEN, f->linear = 10; }
static void mut_ip4_short(struct frame *f) { f->len = ETH_HLEN + 10; }
static void mut_ip6_short(struct frame *f) { f->len = ETH_HLEN + 20; }
static void mut_other_mac(struct frame *f) { mac_parse("02:00:00:00:00:77", f->b); }
static void mut_bcast(struct frame *f) { memset(f->b, 0xff, 6); }
static void mut_pad10(struct frame *f) { memset(f->b + f->len, 0, 10), f->len += 10; }
static void mut_ver5(struct frame *f) { ip4(f)->version = 5, ip4_fix(f); }
static void mut_ihl4(struct frame *f) { ip4(f)->ihl = 4, ip4_fix(f); }
static void mut_bad_csum(struct frame *f) { ip4(f)->check ^= htons(0x0100); }
static void mut_mf(struct frame *f) { ip4(f)->frag_off = htons(0x2000), ip4_fix(f); }
static void mut_fragoff(struct frame *f) { ip4(f)->frag_off = htons(185), ip4_fix(f); }
static void mut_df(struct frame *f) { ip4(f)->frag_off = htons(0x4000), ip4_fix(f); }
static void mut_ip6_ver(struct frame *f) { ip6(f)->version = 4; }

static void mut_totlen_big(struct frame *f) { ip4(f)->tot_len += htons(1), ip4_fix(f); }

static void mut_options(struct frame *f)
{
	insert(f, f->l3 + 20, (__u8[]){ 1, 1, 1, 0 }, 4); /* NOP NOP NOP EOL */
	ip4(f)->ihl = 6;
	ip4(f)->tot_len = htons(ntohs(ip4(f)->tot_len) + 4);
	ip4_fix(f);
}

static void mut_totlen_19(struct frame *f) { ip4(f)->tot_len = htons(19), ip4_fix(f); }
static void mut_plen_big(struct frame *f) { ip6(f)->payload_len += htons(1); }

static void ip6_ext(struct frame *f, __u8 type, __u8 *hdr)
{
	hdr[0] = ip6(f)->nexthdr;
	insert(f, f->l3 + 40, hdr, 8);
	ip6(f)->nexthdr = type;
	ip6(f)->payload_len = htons(ntohs(ip6(f)->payload_len) + 8);
}

static void mut_hbh(struct frame *f) { ip6_ext(f, 0, (__u8[]){ 0, 0, 1, 4, 0, 0, 0, 0 }); }
static void mut_frag6(struct frame *f) { ip6_ext(f, 44, (__u8[]){ 0, 0, 0, 1, 0, 0, 0, 7 }); }

/* ---- cases ---- */

/* Shorthands: the usual IPv4 / IPv6 destination behind r1, and "forwarded to it". */
#define TO4     .ip = 4, .dst = "10.0.2.2"
#define TO6     .ip = 6, .dst = "2001:db8:2::2"
#define VIA(m, d) .reason = XDPR_FWD, .nh = m, .out = d
#define FWD_R1  VIA(NH_R1, "r1")
#define R(x)    .reason = XDPR_##x

static const struct tcase cases[] = {
	/* forwarded */
	{ "ip4 udp forwarded", TO4, FWD_R1 },
	{ "ip4 tcp forwarded", TO4, .proto = IPPROTO_TCP, FWD_R1 },
	{ "ip4 icmp forwarded", TO4, .proto = IPPROTO_ICMP, FWD_R1 },
	{ "ip6 udp forwarded", TO6, FWD_R1 },
	{ "ip6 tcp forwarded", TO6, .proto = IPPROTO_TCP, FWD_R1 },
	{ "ip6 icmpv6 forwarded", TO6, .proto = IPPROTO_ICMPV6, FWD_R1 },
	{ "ip4 ttl 2 forwarded with ttl 1", TO4, .ttl = 2, FWD_R1 },
	{ "ip6 hop limit 2 forwarded with hop limit 1", TO6, .ttl = 2, FWD_R1 },
	{ "ip4 ttl 0x80 -> 0x7f, checksum 0x1234 -> 0x1334", TO4, .ttl = 0x80, FWD_R1,
	  .csum_in = 0x1234, .csum_out = 0x1334 },
	{ "ip4 checksum 0xff80 -> 0x0081 (end-around carry)", TO4, FWD_R1,
	  .csum_in = 0xff80, .csum_out = 0x0081 },
	{ "ip4 checksum 0xfeff -> 0x0000 (RFC 1624 case)", TO4, FWD_R1,
	  .csum_in = 0xfeff, .csum_out = 0x0000 },
	{ "ip4 with 10 bytes of Ethernet padding forwarded", TO4, .mut = mut_pad10, FWD_R1 },
	{ "ip4 1280 bytes DF via 'mtu lock 1280' route forwarded", .ip = 4, .dst = "10.9.4.1",
	  .len = 1280, .mut = mut_df, FWD_R1 },
	{ "ip6 1280 bytes via 'mtu lock 1280' route forwarded", .ip = 6, .dst = "2001:db8:9:4::1",
	  .len = 1280, FWD_R1 },
	/* TTL */
	{ "ip4 ttl 1 -> pass_ttl", TO4, .ttl = 1, R(PASS_TTL) },
	{ "ip6 hop limit 1 -> pass_ttl", TO6, .ttl = 1, R(PASS_TTL) },
	{ "ip4 ttl 1 to a local address -> pass_not_fwded", .ip = 4, .dst = "10.0.2.1", .ttl = 1,
	  R(PASS_FIB_NOT_FWDED) },
	{ "ip6 hop limit 1 to a local address -> pass_not_fwded", .ip = 6, .dst = "2001:db8:2::1",
	  .ttl = 1, R(PASS_FIB_NOT_FWDED) },
	/* L2 */
	{ "arp -> pass_not_ip", .mut = mut_arp, R(PASS_NOT_IP) },
	{ "802.1Q tag -> pass_vlan", TO4, .mut = mut_vlan, R(PASS_VLAN) },
	{ "802.1ad + 802.1Q tags -> pass_vlan_qinq", TO4, .mut = mut_qinq, R(PASS_VLAN_QINQ) },
	{ "truncated 802.1Q tag -> drop_short", TO4, .mut = mut_vlan_short, R(DROP_SHORT) },
	{ "802.1ad tag + truncated inner tag -> drop_short", TO4, .mut = mut_qinq_short,
	  R(DROP_SHORT) },
	{ "10-byte frame (linear part) -> drop_short", TO4, .mut = mut_short10, R(DROP_SHORT) },
	{ "ip4 header truncated -> drop_short", TO4, .mut = mut_ip4_short, R(DROP_SHORT) },
	{ "ip6 header truncated -> drop_short", TO6, .mut = mut_ip6_short, R(DROP_SHORT) },
	{ "unicast to another MAC -> pass_l2_other", TO4, .mut = mut_other_mac, R(PASS_L2_OTHER) },
	{ "ip4 to broadcast MAC -> pass_l2_other", TO4, .mut = mut_bcast, R(PASS_L2_OTHER) },
	/* IPv4 header */
	{ "ip4 version 5 -> pass_ip4_hdr_err", TO4, .mut = mut_ver5, R(PASS_IP4_HDR_ERR) },
	{ "ip4 ihl 4 -> pass_ip4_hdr_err", TO4, .mut = mut_ihl4, R(PASS_IP4_HDR_ERR) },
	{ "ip4 total length > frame -> pass_ip4_hdr_err", TO4, .mut = mut_totlen_big,
	  R(PASS_IP4_HDR_ERR) },
	{ "ip4 total length 19 -> pass_ip4_hdr_err", TO4, .mut = mut_totlen_19, R(PASS_IP4_HDR_ERR) },
	{ "ip4 bad header checksum -> pass_ip4_csum", TO4, .mut = mut_bad_csum, R(PASS_IP4_CSUM) },
	{ "ip4 options (ihl 6) -> pass_ip4_options", TO4, .mut = mut_options,
	  R(PASS_IP4_OPTIONS) },
	{ "ip4 MF fragment -> pass_ip4_frag", TO4, .mut = mut_mf, R(PASS_IP4_FRAG) },
	{ "ip4 fragment offset 1480 -> pass_ip4_frag", TO4, .mut = mut_fragoff, R(PASS_IP4_FRAG) },
	/* IPv6 header */
	{ "ip6 version 4 -> pass_ip6_hdr_err", TO6, .mut = mut_ip6_ver, R(PASS_IP6_HDR_ERR) },
	{ "ip6 payload length > frame -> pass_ip6_hdr_err", TO6, .mut = mut_plen_big,
	  R(PASS_IP6_HDR_ERR) },
	{ "ip6 hop-by-hop header -> pass_ip6_exthdr", TO6, .mut = mut_hbh, R(PASS_IP6_EXTHDR) },
	{ "ip6 fragment header -> pass_ip6_exthdr", TO6, .mut = mut_frag6, R(PASS_IP6_EXTHDR) },
	/* martians */
	{ "ip4 source 127.0.0.1 -> pass_martian", TO4, .src = "127.0.0.1", R(PASS_MARTIAN) },
	{ "ip6 destination fe80::1 -> pass_martian", .ip = 6, .dst = "fe80::1", R(PASS_MARTIAN) },
	/* FIB */
	{ "ip4 blackhole route -> pass_blackhole", .ip = 4, .dst = "10.9.1.1",
	  R(PASS_FIB_BLACKHOLE) },
	{ "ip4 unreachable route -> pass_unreachable", .ip = 4, .dst = "10.9.2.1",
	  R(PASS_FIB_UNREACH) },
	{ "ip4 prohibit route -> pass_prohibit", .ip = 4, .dst = "10.9.3.1", R(PASS_FIB_PROHIBIT) },
	{ "ip6 blackhole route -> pass_blackhole", .ip = 6, .dst = "2001:db8:9:1::1",
	  R(PASS_FIB_BLACKHOLE) },
	{ "ip4 local destination -> pass_not_fwded", .ip = 4, .dst = "10.0.2.1",
	  R(PASS_FIB_NOT_FWDED) },
	{ "ip4 next hop without neighbour -> pass_no_neigh", .ip = 4, .dst = "10.0.2.3",
	  R(PASS_FIB_NO_NEIGH) },
	{ "ip6 next hop without neighbour -> pass_no_neigh", .ip = 6, .dst = "2001:db8:2::3",
	  R(PASS_FIB_NO_NEIGH) },
	{ "ip4 1400 bytes DF via 'mtu lock 1280' route -> pass_frag_needed", .ip = 4,
	  .dst = "10.9.4.1", .len = 1400, .mut = mut_df, R(PASS_FIB_FRAG_NEEDED) },
	/*
	 * An unlocked route "mtu" is not applied by bpf_fib_lookup (only locked
	 * ones, or with ip_forward_use_pmtu): documented in the README, not tested.
	 */
	{ "ip4 no route at all -> pass_not_fwded", .ip = 4, .dst = "192.0.2.99",
	  R(PASS_FIB_NOT_FWDED) },
	{ "ip6 1281 bytes via 'mtu lock 1280' route -> pass_frag_needed", .ip = 6,
	  .dst = "2001:db8:9:4::1", .len = 1281, R(PASS_FIB_FRAG_NEEDED) },
	{ "ip4 forwarding off on ingress -> pass_fwd_disabled", TO4,
	  .off = "net/ipv4/conf/r0/forwarding", R(PASS_FIB_FWD_DISABLED) },
	{ "ip6 forwarding off on ingress -> pass_fwd_disabled", TO6,
	  .off = "net/ipv6/conf/r0/forwarding", R(PASS_FIB_FWD_DISABLED) },
	{ "ip4 route with lwt encap -> pass_unsupp_lwt", .ip = 4, .dst = "10.9.6.1", .lwt = true,
	  R(PASS_FIB_UNSUPP_LWT) },
	/* egress and ingress registration */
	{ "egress not registered -> pass_egress_not_xdpr", .ip = 4, .dst = "10.0.3.2",
	  R(PASS_EGRESS_NOT_XDPR) },
	{ "egress without XDPR_IF_XMIT -> pass_egress_no_xmit", .ip = 4, .dst = "10.0.4.2",
	  R(PASS_EGRESS_NO_XMIT) },
	{ "egress without XDPR_IF_XMIT, generic ingress -> forwarded", .ip = 4, .dst = "10.0.4.2",
	  .in_flags = XDPR_IF_GENERIC, VIA(NH_R3, "r3") },
	{ "ingress not registered -> pass_no_iface in slot 0", .in = "r2", TO4, R(PASS_NO_IFACE) },
};

#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))
#define ECMP_FLOWS 32

/* ---- running ---- */

static int prog_fd, stats_fd, ifaces_fd, if_gen_fd, ncpus;

static const char *verdict_name(__u32 v)
{
	static const char *const names[] = { "XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX",
					     "XDP_REDIRECT" };

	return v < 5 ? names[v] : "XDP_?";
}

/* IPv4 checksum of a forwarded frame: valid, and the exact value expected. */
static bool check_ip4_csum(const struct tcase *c, struct frame *want, struct frame *got)
{
	__u16 cw = ntohs(ip4(want)->check), cg = ntohs(ip4(got)->check);
	bool valid = fold(sum16(ip4(got), 20, 0)) == 0xffff;

	if (c->csum_out && cw != c->csum_out)
		note("test bug: recomputed checksum 0x%04x, table says 0x%04x", cw, c->csum_out);
	if (!valid || cg != cw)
		note("ip4 checksum out: 0x%04x (%s), expected 0x%04x", cg,
		     valid ? "valid" : "INVALID", cw);
	return valid && cg == cw;
}

static bool run_case(const struct tcase *c)
{
	struct dev *in = dev_get(c->in ?: "r0");
	struct xdpr_ctr before[XDPR_REASON_MAX], after[XDPR_REASON_MAX];
	struct xdpr_iface cfg, saved;
	struct frame f, out, want;
	__u32 slot = 0, verdict = 0;
	bool ok = true, registered;
	int err;

	build(&f, c, in);
	registered = !bpf_map_lookup_elem(ifaces_fd, &in->ifindex, &saved);
	if (registered)
		slot = saved.slot;
	if (c->in_flags) {
		cfg = saved;
		cfg.flags = c->in_flags;
		if (!registered || bpf_map_update_elem(ifaces_fd, &in->ifindex, &cfg, BPF_EXIST))
			die("cannot set the flags of %s", in->name);
		ifaces_changed(if_gen_fd);
	}
	if (c->off && sysctl_set(c->off, "0"))
		die("cannot clear %s", c->off);

	read_slot_sum(stats_fd, ncpus, slot, before);
	err = run_frame(prog_fd, in->ifindex, &f, &out, &verdict);
	read_slot_sum(stats_fd, ncpus, slot, after);

	if (c->off && sysctl_set(c->off, "1"))
		die("cannot restore %s", c->off);
	if (c->in_flags && bpf_map_update_elem(ifaces_fd, &in->ifindex, &saved, BPF_EXIST))
		die("cannot restore the flags of %s", in->name);
	if (c->in_flags)
		ifaces_changed(if_gen_fd);

	if (err) {
		note("BPF_PROG_TEST_RUN: %s", strerror(-err));
		return false;
	}
	if (verdict != (__u32)xdpr_reason_verdict(c->reason)) {
		note("verdict: expected %s, got %s", verdict_name(xdpr_reason_verdict(c->reason)),
		     verdict_name(verdict));
		ok = false;
	}
	for (int r = 0; r < XDPR_REASON_MAX; r++) {
		__u64 dp = after[r].packets - before[r].packets, db = after[r].bytes - before[r].bytes;
		__u64 wp = r == c->reason, wb = r == c->reason ? (__u64)(f.linear ?: f.len) : 0;

		if (dp != wp || db != wb) {
			note("slot %u %s: +%llu packets +%llu bytes, expected +%llu +%llu", slot,
			     xdpr_reason_name(r), (unsigned long long)dp, (unsigned long long)db,
			     (unsigned long long)wp, (unsigned long long)wb);
			ok = false;
		}
	}
	if (c->reason == XDPR_FWD) {
		__u8 nh[6];

		mac_parse(c->nh, nh);
		expect_fwd(&want, &f, nh, dev_get(c->out)->hw);
		if (c->ip == 4)
			ok &= check_ip4_csum(c, &want, &out);
	} else {
		want = f; /* handed to the kernel exactly as it arrived */
	}
	ok &= same_bytes(&want, &out);
	return ok;
}

/*
 * ECMP: with fib_multipath_hash_policy 1 the path depends on the ports, so
 * flows that differ only in the source port must reach both next hops,
 * proving the program hands the ports to the FIB.
 */
static bool test_ecmp(void)
{
	struct tcase c = { .ip = 4, .dst = "10.9.5.1", .name = "ecmp" };
	__u8 nh[2][6];
	int seen[2] = { 0, 0 };
	bool ok = true;

	mac_parse(NH_R1, nh[0]);
	mac_parse(NH_R1B, nh[1]);
	for (int i = 0; i < ECMP_FLOWS && ok; i++) {
		struct frame f, out, want;
		__u32 verdict = 0;
		int k, err;

		c.sport = 1024 + i * 997;
		build(&f, &c, dev_get("r0"));
		err = run_frame(prog_fd, dev_get("r0")->ifindex, &f, &out, &verdict);
		if (err || verdict != XDP_REDIRECT) {
			note("sport %u: %s", c.sport, err ? strerror(-err) : verdict_name(verdict));
			return false;
		}
		k = !memcmp(out.b, nh[1], 6);
		seen[k]++;
		expect_fwd(&want, &f, nh[k], dev_get("r1")->hw);
		ok = same_bytes(&want, &out);
	}
	note("%d flows via 10.0.2.2, %d via 10.0.2.4", seen[0], seen[1]);
	return ok && seen[0] && seen[1];
}

/* The frames the settings-copy checks send: to r1, a transmit target or (its XDPR_IF_XMIT off) not. */
static const struct tcase to_r1 = { "to r1", .ip = 4, .dst = "10.0.2.2", VIA(NH_R1, "r1") };
static const struct tcase to_r1_no_xmit = { "to r1, no XDPR_IF_XMIT", .ip = 4, .dst = "10.0.2.2",
					    R(PASS_EGRESS_NO_XMIT) };

/* Write r1's xdpr_ifaces entry (the generation is the caller's). */
static void r1_settings(const struct xdpr_iface *c)
{
	__u32 r1 = dev_get("r1")->ifindex;

	if (bpf_map_update_elem(ifaces_fd, &r1, c, BPF_EXIST))
		die("cannot write xdpr_ifaces[r1]: %s", strerror(errno));
}

/* r1's entry as it is, and with XDPR_IF_XMIT off. */
static void r1_read(struct xdpr_iface *keep, struct xdpr_iface *off)
{
	__u32 r1 = dev_get("r1")->ifindex;

	if (bpf_map_lookup_elem(ifaces_fd, &r1, keep))
		die("cannot read xdpr_ifaces[r1]: %s", strerror(errno));
	*off = *keep;
	off->flags &= ~XDPR_IF_XMIT;
}

/*
 * r1 and r3 take the same copy of their settings (r3's ifindex is r1's +
 * XDPR_IFC_SETS): frames to each in turn find their own interface's, r1 a
 * transmit target, r3 not.
 */
static bool test_copy_shared(void)
{
	static const struct tcase to_r3 = { "to r3", .ip = 4, .dst = "10.0.4.2", R(PASS_EGRESS_NO_XMIT) };
	bool ok = true;

	note("r1 ifindex %u, r3 %u", dev_get("r1")->ifindex, dev_get("r3")->ifindex);
	for (int i = 0; i < 4 && ok; i++) {
		ok &= run_case(&to_r1);
		ok &= run_case(&to_r3);
	}
	return ok;
}

/* Case c with the test pinned to CPU cpu. */
static bool run_case_on(const struct tcase *c, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		note("cannot run on CPU %d: %s", cpu, strerror(errno));
		return false;
	}
	return run_case(c);
}

/*
 * r1's settings changed (XDPR_IF_XMIT off) after frames on two CPUs copied
 * them, then put back: each CPU's next frame follows each change.
 */
static bool test_copy_change(void)
{
	struct xdpr_iface keep, off;
	int cpus[2], n = 0;
	bool ok = true;
	cpu_set_t mask;

	if (sched_getaffinity(0, sizeof(mask), &mask))
		die("sched_getaffinity: %s", strerror(errno));
	for (int cpu = 0; cpu < CPU_SETSIZE && n < 2; cpu++)
		if (CPU_ISSET(cpu, &mask))
			cpus[n++] = cpu;
	if (n < 2)
		note("one CPU to run on: the change is checked on CPU %d only", cpus[0]);
	r1_read(&keep, &off);
	for (int i = 0; i < n; i++)
		ok &= run_case_on(&to_r1, cpus[i]);
	r1_settings(&off);
	ifaces_changed(if_gen_fd);
	for (int i = 0; i < n; i++)
		ok &= run_case_on(&to_r1_no_xmit, cpus[i]);
	r1_settings(&keep);
	ifaces_changed(if_gen_fd);
	for (int i = 0; i < n; i++)
		ok &= run_case_on(&to_r1, cpus[i]);
	if (sched_setaffinity(0, sizeof(mask), &mask))
		die("cannot restore the CPU mask: %s", strerror(errno));
	return ok;
}

/*
 * r1's settings changed by a writer that never moved the generation (killed
 * between the two): the copies lapse within a kernel tick, so a frame 50 ms
 * later (5 ticks at HZ=100), on the CPU that copied them, follows the change.
 */
static bool test_copy_tick(void)
{
	int cpu = sched_getcpu();
	struct xdpr_iface keep, off;
	cpu_set_t mask;
	bool ok;

	if (cpu < 0 || sched_getaffinity(0, sizeof(mask), &mask))
		die("cannot tell the CPU: %s", strerror(errno));
	r1_read(&keep, &off);
	ok = run_case_on(&to_r1, cpu);
	r1_settings(&off);
	usleep(50000);
	ok &= run_case_on(&to_r1_no_xmit, cpu);
	r1_settings(&keep);
	ifaces_changed(if_gen_fd);
	ok &= run_case_on(&to_r1, cpu);
	if (sched_setaffinity(0, sizeof(mask), &mask))
		die("cannot restore the CPU mask: %s", strerror(errno));
	return ok;
}

int main(void)
{
	struct xdpr_bpf *skel;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 0;
	}
	setup_netns();
	skel = xdpr_bpf__open_and_load();
	if (!skel)
		die("cannot load the XDP program: %s", strerror(errno));
	prog_fd = bpf_program__fd(skel->progs.xdpr_main);
	stats_fd = bpf_map__fd(skel->maps.xdpr_stats);
	ifaces_fd = bpf_map__fd(skel->maps.xdpr_ifaces);
	if_gen_fd = bpf_map__fd(skel->maps.xdpr_if_gen);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 1)
		die("cannot count CPUs: %s", strerror(-ncpus));
	register_devs(skel);

	printf("1..%d\n", NCASES + 4);
	for (int i = 0; i < NCASES; i++) {
		if (cases[i].lwt && !lwt_route) {
			tap(true, cases[i].name, "no LWT encap (mpls, ip, seg6) accepted by this kernel");
			continue;
		}
		if (cases[i].lwt)
			note("%s", lwt_route);
		tap(run_case(&cases[i]), cases[i].name, NULL);
	}
	tap(test_ecmp(), "ip4 ecmp: source ports spread flows over both next hops", NULL);
	tap(test_copy_shared(), "r1 and r3 share a settings copy: frames to each in turn find their own", NULL);
	tap(test_copy_change(), "r1's settings changed and put back: each CPU's next frame follows", NULL);
	tap(test_copy_tick(), "r1's settings changed, the generation not moved: followed after a tick", NULL);

	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
