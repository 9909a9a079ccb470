/* SPDX-License-Identifier: GPL-2.0 */
/*
 * oracle.h - the fuzzed datapath: the real xdpr_main (the skeleton of
 * build/xdpr.bpf.o, verified by this kernel) in a private network namespace
 * with a FIB, neighbours, two NAT rules (masquerade, a pool), route map
 * entries and a filter, and the invariants checked after every
 * BPF_PROG_TEST_RUN.  Shared by the libFuzzer harness (selftests/fuzz/fuzz.c)
 * and the replay table of the bpf tier (selftests/bpf/test_fuzz.c); include
 * after harness.h.
 *
 * An input is up to FZ_RECORDS frames, each a record
 *     [device byte] [length, 2 bytes big endian] [frame bytes]
 * (the length is clamped to what is left; the low 3 bits of the device byte
 * pick the ingress interface, devs[] below).  Every input starts from empty
 * NAT tables and flow states, so it reproduces alone; the frames of one input
 * share state (an outbound packet, then its reply, then an ICMP error quoting
 * it).
 *
 * The oracle knows reasons only through xdpr_shared.h: XDPR_REASON_MAX and
 * xdpr_reason_verdict().  The few reasons named below are named for what
 * they promise (the kernel does not forward such a packet).
 */
#ifndef XDPR_FUZZ_ORACLE_H
#define XDPR_FUZZ_ORACLE_H

#include <sched.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdpr_shared.h"
#include "libxdpr.h"
#include "xdpr.skel.h"

#define FZ_RECORDS   6
#define FZ_FRAME_MAX 1600
#define FZ_ETH_MIN   14
#define FZ_DF        0x4000 /* IPv4 don't fragment, more fragments */
#define FZ_MF        0x2000  /* BPF_PROG_TEST_RUN refuses less than an Ethernet header */

/* ---- the router ---- */

struct fz_dev {
	const char *name, *peer, *mac, *peer_mac;
	__u32 slot;      /* 0: not attached (not in xdpr_ifaces) */
	__u32 ifindex;
	__u8 hw[6];
	/* VLANs only: the port they are a VLAN of, their VID, QoS maps (struct xdpr_iface) */
	const char *parent;
	__u16 vid;
	__u8 in_prio[8]; /* ingress-qos-map: PCP -> priority */
	__u8 pcp[17];    /* egress-qos-map: priority 0..15 (16: above) -> PCP */
	__u8 trunk;      /* ports with VLANs: their row of xdpr_vlans */
};

/*
 * 0-4: ports, index = the low 3 bits of a record's device byte (5-7: lo, no
 * xdpr_ifaces entry).  5-7: 802.1Q VLANs of r0, the trunk, enrolled as the
 * loader enrols them; their frames arrive on r0 tagged.  The host kernel has
 * no 802.1Q: veths stand in for the VLAN devices (addresses, routes and
 * neighbours for the FIB; the program never redirects to them, xdpr_tx_ports
 * has an entry for each as for a VLAN).
 */
static struct fz_dev fz_devs[] = {
	{ .name = "r0", .peer = "c0", .mac = "02:00:00:00:01:01", .peer_mac = "02:00:00:00:01:09", .slot = 1 }, /* inside, the trunk */
	{ .name = "r1", .peer = "s1", .mac = "02:00:00:00:02:01", .peer_mac = "02:00:00:00:02:09", .slot = 2 }, /* NAT: masquerade */
	{ .name = "r2", .peer = "s2", .mac = "02:00:00:00:03:01", .peer_mac = "02:00:00:00:03:09", .slot = 3 }, /* NAT: pool */
	{ .name = "r3", .peer = "s3", .mac = "02:00:00:00:04:01", .peer_mac = "02:00:00:00:04:09", .slot = 4 }, /* plain */
	{ .name = "r4", .peer = "s4", .mac = "02:00:00:00:05:01", .peer_mac = "02:00:00:00:05:09", .slot = 0 }, /* not xdpr's */
	/* inside, with QoS maps: ingress-qos-map 1:2 3:6 5:4 7:1, egress-qos-map 0:1 2:3 4:5 6:7 9:2 */
	{ .name = "v100", .peer = "w100", .mac = "02:00:00:00:0a:01", .peer_mac = "02:00:00:00:0a:09", .slot = 5,
	  .parent = "r0", .vid = 100, .in_prio = { 0, 2, 0, 6, 0, 4, 0, 1 },
	  .pcp = { 1, 0, 3, 0, 5, 0, 7, 0, 0, 2 } },
	/* NAT: masquerade (rule 3); egress-qos-map 2:2 4:4 6:6, ingress-qos-map 4:6 */
	{ .name = "v200", .peer = "w200", .mac = "02:00:00:00:14:01", .peer_mac = "02:00:00:00:14:09", .slot = 6,
	  .parent = "r0", .vid = 200, .in_prio = { 0, 0, 0, 0, 6, 0, 0, 0 }, .pcp = { 0, 0, 2, 0, 4, 0, 6 } },
	/* plain, named by filter rules (in, out); no QoS maps */
	{ .name = "v300", .peer = "w300", .mac = "02:00:00:00:1e:01", .peer_mac = "02:00:00:00:1e:09", .slot = 7,
	  .parent = "r0", .vid = 300 },
};
#define FZ_NDEVS ((int)(sizeof(fz_devs) / sizeof(fz_devs[0])))
#define FZ_NIN   5 /* ingress devices a record can name: fz_devs[0..4] */
#define FZ_V100  5
#define FZ_V200  6
#define FZ_V300  7
#define FZ_OTHER_IFINDEX 1 /* lo: a device the router has nothing for */

static const char *const fz_setup[] = {
	"ip link set lo up",
	"ip addr add 10.0.1.1/24 dev r0",
	"ip addr add 10.0.2.1/24 dev r1",
	"ip addr add 10.0.3.1/24 dev r2",
	"ip addr add 10.0.5.1/24 dev r3",
	"ip addr add 10.0.7.1/24 dev r4",
	"ip -6 addr add 2001:db8:1::1/64 dev r0 nodad",
	"ip -6 addr add 2001:db8:2::1/64 dev r1 nodad",
	"ip -6 addr add 2001:db8:5::1/64 dev r3 nodad",
	"ip neigh replace 10.0.1.2 lladdr 02:00:00:00:01:02 dev r0 nud permanent",
	"ip neigh replace 10.0.1.3 lladdr 02:00:00:00:01:03 dev r0 nud permanent",
	"ip neigh replace 10.0.1.66 lladdr 02:00:00:00:01:66 dev r0 nud permanent",
	"ip neigh replace 10.0.2.2 lladdr 02:00:00:00:02:02 dev r1 nud permanent",
	"ip neigh replace 10.0.3.2 lladdr 02:00:00:00:03:02 dev r2 nud permanent",
	"ip neigh replace 10.0.5.2 lladdr 02:00:00:00:04:02 dev r3 nud permanent",
	"ip neigh replace 10.0.7.2 lladdr 02:00:00:00:05:02 dev r4 nud permanent",
	"ip -6 neigh replace 2001:db8:1::2 lladdr 02:00:00:00:01:02 dev r0 nud permanent",
	"ip -6 neigh replace 2001:db8:1::66 lladdr 02:00:00:00:01:66 dev r0 nud permanent",
	"ip -6 neigh replace 2001:db8:2::2 lladdr 02:00:00:00:02:02 dev r1 nud permanent",
	"ip -6 neigh replace 2001:db8:5::2 lladdr 02:00:00:00:04:02 dev r3 nud permanent",
	"ip route add default via 10.0.2.2 dev r1",
	"ip -6 route add default via 2001:db8:2::2 dev r1",
	"ip route add 203.0.113.0/24 via 10.0.3.2 dev r2",
	"ip route add 10.0.6.0/24 via 10.0.5.2 dev r3",
	"ip route add 10.9.4.0/24 via 10.0.2.2 dev r1 mtu lock 1280",
	"ip -6 route add 2001:db8:9::/48 via 2001:db8:5::2 dev r3 mtu lock 1280",
	/* the VLANs of r0 (stand-ins) */
	"ip addr add 10.0.10.1/24 dev v100",
	"ip addr add 172.20.0.1/24 dev v200",
	"ip addr add 10.0.30.1/24 dev v300",
	"ip -6 addr add 2001:db8:10::1/64 dev v100 nodad",
	"ip -6 addr add 2001:db8:20::1/64 dev v200 nodad",
	"ip -6 addr add 2001:db8:30::1/64 dev v300 nodad",
	"ip neigh replace 10.0.10.2 lladdr 02:00:00:00:0a:02 dev v100 nud permanent",
	"ip neigh replace 10.0.10.66 lladdr 02:00:00:00:0a:66 dev v100 nud permanent",
	"ip neigh replace 172.20.0.2 lladdr 02:00:00:00:14:02 dev v200 nud permanent",
	"ip neigh replace 10.0.30.2 lladdr 02:00:00:00:1e:02 dev v300 nud permanent",
	"ip -6 neigh replace 2001:db8:10::2 lladdr 02:00:00:00:0a:02 dev v100 nud permanent",
	"ip -6 neigh replace 2001:db8:20::2 lladdr 02:00:00:00:14:02 dev v200 nud permanent",
	"ip -6 neigh replace 2001:db8:30::2 lladdr 02:00:00:00:1e:02 dev v300 nud permanent",
	"ip route add 192.168.200.0/24 via 172.20.0.2 dev v200",
	"ip route add 10.0.31.0/24 via 10.0.30.2 dev v300",
	"ip route add 10.9.30.0/24 via 10.0.30.2 dev v300 mtu lock 1280",
	"ip -6 route add 2001:db8:31::/48 via 2001:db8:30::2 dev v300",
	"ip -6 route add 2001:db8:21::/48 via 2001:db8:20::2 dev v200",
};

/* The NAT rules (ids 1 and 2), what "xdpr nat add" would write. */
#define FZ_MASQ_ADDR  "10.0.2.1"  /* r1's address */
#define FZ_MASQ_SRC   "10.0.0.0"  /* rule 1: out r1 src 10.0.0.0/8 masquerade */
#define FZ_MASQ_PLEN  8
#define FZ_POOL_FIRST "198.51.100.10" /* rule 2: out r2 src 10.0.1.0/24 to .10-.13 ports 20000-20003 eif */
#define FZ_POOL_N     4
#define FZ_POOL_SRC   "10.0.1.0"
#define FZ_POOL_PLEN  24
#define FZ_VMASQ_ADDR "172.20.0.1" /* rule 3: out v200 src 10.0.0.0/8 masquerade (v200's address) */

/* The trunk's tags: a VLAN's VID with a PCP, and VIDs r0 has no VLAN for. */
#define FZ_TCI(vid, pcp) ((vid) | (pcp) << 13)
#define FZ_VID_UNKNOWN 999

/* Route map, slot 0 (the FIB is asked for everything else). */
static const struct { const char *prefix; int action; const char *gw, *dev; __u32 id; } fz_routes[] = {
	{ "198.18.0.0/16", XDPR_RT_VIA, "10.0.5.2", "r3", 1 },
	{ "198.19.0.0/16", XDPR_RT_BLACKHOLE, NULL, NULL, 2 },
	{ "198.20.0.0/16", XDPR_RT_PASS, NULL, NULL, 3 },
	{ "198.21.0.0/16", XDPR_RT_VIA, "10.0.2.2", "r1", 4 },   /* into the masquerade */
	{ "198.22.0.0/16", XDPR_RT_VIA, "10.0.7.2", "r4", 5 },   /* egress not xdpr's */
	{ "198.23.0.0/16", XDPR_RT_VIA, "10.0.5.3", "r3", 6 },   /* no neighbour */
	{ "2001:db8:77::/48", XDPR_RT_VIA, "2001:db8:5::2", "r3", 7 },
	{ "2001:db8:78::/48", XDPR_RT_BLACKHOLE, NULL, NULL, 8 },
};
#define FZ_NROUTES ((int)(sizeof(fz_routes) / sizeof(fz_routes[0])))

/*
 * The filter.  The oracle judges the drop rules itself (fz_filter_drops):
 * a rule naming state established makes every packet meet the rules
 * (XDPR_FLT_SEE_EST), so a matching packet must never leave forwarded.
 */
#define FZ_BAD4  "10.0.1.66"
#define FZ_BAD6  "2001:db8:1::66"
#define FZ_UDP_DROP 9999
#define FZ_TCP_REJECT 23
#define FZ_UDP_DROP_IN  7300 /* drop in v300 udp dport 7300 */
#define FZ_TCP_DROP_OUT 7301 /* drop out v300 tcp dport 7301 */

/* ---- state ---- */

static struct xdpr_bpf *fz_skel;
static int fz_prog, fz_stats, fz_ct, fz_bind, fz_eim, fz_hosts, fz_ring, fz_flows, fz_cfg, fz_ncpus;
static bool fz_fib_src;
static struct xdpr_slot *fz_pc;            /* per-CPU scratch for one slot */
static const char *fz_fail;                /* the invariant the last input broke, or NULL */
static char fz_why[512];

/* Counters a libFuzzer build hands to libFuzzer (its extra counters); NULL elsewhere. */
static __u8 *fz_cov;
static size_t fz_cov_len;

static void fz_covhit(size_t k)
{
	if (fz_cov && fz_cov_len)
		fz_cov[k % fz_cov_len]++;
}

static void fz_failf(const char *inv, const char *fmt, ...)
{
	va_list ap;

	if (fz_fail)
		return; /* the first broken invariant is the one reported */
	fz_fail = inv;
	va_start(ap, fmt);
	vsnprintf(fz_why, sizeof(fz_why), fmt, ap);
	va_end(ap);
}

static __be32 fz_ip4(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		die("bad address %s in the fuzz set-up", s);
	return a.s_addr;
}

/* ---- frames as the oracle reads them ---- */

struct fz_view {
	int ok;          /* an IPv4 or IPv6 packet whose header fits the frame */
	int tags;        /* 802.1Q/802.1ad tags before it */
	int l3, l4;      /* offsets; l4 = 0 when not found (later fragment, ext header chain too long) */
	int family;      /* 4 or 6 */
	int l4len;       /* transport bytes inside the IP length */
	__u8 proto;      /* IPv6: after extension headers */
	__u8 ttl;
	int frag;        /* IPv4 MF or offset; IPv6 fragment header */
	int later;       /* not the first fragment */
	int ip_csum_ok;  /* IPv4 header checksum (IPv6: 1) */
	int exthdr;      /* IPv6 extension headers, IPv4 options */
	__u8 s[16], d[16];
};

static int fz_is_tag(__u16 t) { return t == 0x8100 || t == 0x88a8; }

static void fz_parse(const __u8 *b, int len, int max_tags, struct fz_view *v)
{
	int off = 12;
	__u16 type;

	memset(v, 0, sizeof(*v));
	if (len < 14)
		return;
	type = get16(b + 12);
	while (fz_is_tag(type) && v->tags < max_tags && off + 6 <= len) {
		off += 4;
		v->tags++;
		type = get16(b + off);
	}
	off += 2;
	v->l3 = off;
	if (type == ETH_P_IP) {
		const struct iphdr *ip = (const void *)(b + off);
		int hl, tl;

		if (off + 20 > len || ip->version != 4 || ip->ihl < 5)
			return;
		hl = ip->ihl * 4;
		tl = ntohs(ip->tot_len);
		if (tl < hl || off + tl > len)
			return;
		v->ok = 1;
		v->family = 4;
		v->proto = ip->protocol;
		v->ttl = ip->ttl;
		v->frag = (ntohs(ip->frag_off) & 0x3fff) != 0;
		v->later = (ntohs(ip->frag_off) & 0x1fff) != 0;
		v->exthdr = hl > 20;
		v->ip_csum_ok = fold(sum16(ip, hl, 0)) == 0xffff;
		memcpy(v->s, &ip->saddr, 4);
		memcpy(v->d, &ip->daddr, 4);
		if (!v->later) {
			v->l4 = off + hl;
			v->l4len = tl - hl;
		}
	} else if (type == ETH_P_IPV6) {
		const struct ipv6hdr *ip = (const void *)(b + off);
		int end, p, n;
		__u8 nh;

		if (off + 40 > len || ip->version != 6)
			return;
		end = off + 40 + ntohs(ip->payload_len);
		if (end > len)
			return;
		v->ok = 1;
		v->family = 6;
		v->ttl = ip->hop_limit;
		v->ip_csum_ok = 1;
		memcpy(v->s, &ip->saddr, 16);
		memcpy(v->d, &ip->daddr, 16);
		nh = ip->nexthdr;
		p = off + 40;
		for (n = 0; n < 8; n++) {
			if (nh == 0 || nh == 43 || nh == 60) {
				if (p + 8 > end)
					return;
				v->exthdr = 1;
				nh = b[p];
				p += (b[p + 1] + 1) * 8;
			} else if (nh == 44) {
				if (p + 8 > end)
					return;
				v->exthdr = v->frag = 1;
				v->later = (get16(b + p + 2) & 0xfff8) != 0;
				nh = b[p];
				p += 8;
				if (v->later)
					return;
			} else {
				break;
			}
		}
		if (n == 8 || p > end)
			return;
		v->proto = nh;
		v->l4 = p;
		v->l4len = end - p;
	}
}

/* The transport checksum of a whole, unfragmented packet: 1 valid, 0 not, -1 cannot tell. */
static int fz_l4_csum(const __u8 *b, const struct fz_view *v)
{
	const __u8 *l4 = b + v->l4;
	__u32 ps = 0;
	int ck;

	if (!v->ok || !v->l4 || v->frag)
		return -1;
	switch (v->proto) {
	case IPPROTO_TCP: ck = 16; if (v->l4len < 20) return -1; break;
	case IPPROTO_UDP: ck = 6; if (v->l4len < 8) return -1; break;
	case IPPROTO_ICMP: ck = 2; if (v->family != 4 || v->l4len < 8) return -1; break;
	case IPPROTO_ICMPV6: ck = 2; if (v->family != 6 || v->l4len < 8) return -1; break;
	default: return -1;
	}
	(void)ck;
	if (v->proto == IPPROTO_UDP && v->family == 4 && get16(l4 + 6) == 0)
		return 1; /* no checksum */
	if (v->proto != IPPROTO_ICMP) {
		int alen = v->family == 4 ? 4 : 16;

		ps = sum16(v->s, alen, 0);
		ps = sum16(v->d, alen, ps);
		ps += v->proto + v->l4len;
	}
	return fold(sum16(l4, v->l4len, ps)) == 0xffff;
}

/* Write every checksum of a packet (the mutator's fix-up, the seeds' builder). */
static void fz_fix(__u8 *b, int len)
{
	struct fz_view v;
	__u8 *l4;
	int ck, alen;
	__u32 ps = 0;

	fz_parse(b, len, 2, &v);
	if (!v.ok)
		return;
	if (v.family == 4) {
		struct iphdr *ip = (void *)(b + v.l3);

		ip->check = 0;
		ip->check = htons(~fold(sum16(ip, ip->ihl * 4, 0)));
	}
	if (!v.l4 || v.frag)
		return;
	l4 = b + v.l4;
	switch (v.proto) {
	case IPPROTO_TCP: ck = 16; if (v.l4len < 20) return; break;
	case IPPROTO_UDP: ck = 6; if (v.l4len < 8) return; break;
	case IPPROTO_ICMP: case IPPROTO_ICMPV6: ck = 2; if (v.l4len < 4) return; break;
	default: return;
	}
	if (v.proto == IPPROTO_ICMP && v.l4len >= 8 + 20 && (l4[0] == 3 || l4[0] == 11 || l4[0] == 12)) {
		/* the quoted header's checksum too */
		struct iphdr *q = (void *)(l4 + 8);

		if (q->version == 4 && q->ihl >= 5 && 8 + q->ihl * 4 <= v.l4len) {
			q->check = 0;
			q->check = htons(~fold(sum16(q, q->ihl * 4, 0)));
		}
	}
	put16(l4 + ck, 0);
	if (v.proto != IPPROTO_ICMP) {
		alen = v.family == 4 ? 4 : 16;
		ps = sum16(v.s, alen, 0);
		ps = sum16(v.d, alen, ps);
		ps += v.proto + v.l4len;
	}
	put16(l4 + ck, ~fold(sum16(l4, v.l4len, ps)) ?: (v.proto == IPPROTO_UDP ? 0xffff : 0));
}

/* ---- set-up ---- */

static struct fz_dev *fz_dev(const char *name)
{
	for (int i = 0; i < FZ_NDEVS; i++)
		if (!strcmp(fz_devs[i].name, name))
			return &fz_devs[i];
	die("no device %s in the fuzz set-up", name);
	return NULL;
}

static void fz_inner(struct bpf_map *outer, __u32 slot, int fd)
{
	if (fd < 0 || bpf_map_update_elem(bpf_map__fd(outer), &slot, &fd, BPF_ANY))
		die("cannot give %s[%u] its table: %s", bpf_map__name(outer), slot, strerror(errno));
	close(fd);
}

/* An inner array holding n values of vsize bytes. */
static int fz_array(const char *name, __u32 vsize, size_t n, __u32 flags, const void *vals)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, 4, vsize, n ? n : 1, &o);

	for (__u32 i = 0; fd >= 0 && i < n; i++)
		if (bpf_map_update_elem(fd, &i, (const char *)vals + i * vsize, BPF_ANY))
			die("cannot fill %s: %s", name, strerror(errno));
	return fd;
}

static int fz_keyed(enum bpf_map_type type, const char *name, __u32 ksize, __u32 max, const void *keys,
		    const __u32 *vals, size_t n)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(type, name, ksize, sizeof(__u32), max, &o);

	for (size_t i = 0; fd >= 0 && i < n; i++)
		if (bpf_map_update_elem(fd, (const char *)keys + i * ksize, &vals[i], BPF_ANY))
			die("cannot fill %s: %s", name, strerror(errno));
	return fd;
}

static struct xdpr_flt_spec fz_rule_dev(__u8 action, const char *in, const char *out, int proto, int dport)
{
	struct xdpr_flt_spec r = { .action = action, .has = XDPR_FH_PROTO | XDPR_FH_DPORT, .proto = proto };

	snprintf(r.in, sizeof(r.in), "%s", in ?: "");
	snprintf(r.out, sizeof(r.out), "%s", out ?: "");
	r.dport[0] = r.dport[1] = dport;
	/* what the library resolves before it compiles (loader/filter.c resolve) */
	r.in_ifindex = in ? fz_dev(in)->ifindex : 0;
	r.out_ifindex = out ? fz_dev(out)->ifindex : 0;
	return r;
}

static struct xdpr_flt_spec fz_rule(__u8 action, const char *src, int proto, int dport, __u8 states)
{
	struct xdpr_flt_spec r = { .action = action };

	if (src) {
		r.src.kind = XDPR_FA_PREFIX;
		r.src.family = strchr(src, ':') ? AF_INET6 : AF_INET;
		r.src.plen = r.src.family == AF_INET ? 32 : 128;
		if (inet_pton(r.src.family, src, r.src.addr) != 1)
			die("bad filter address %s", src);
	}
	if (proto) {
		r.has |= XDPR_FH_PROTO;
		r.proto = proto;
	}
	if (dport) {
		r.has |= XDPR_FH_DPORT;
		r.dport[0] = r.dport[1] = dport;
	}
	if (states) {
		r.has |= XDPR_FH_STATE;
		r.states = states;
	}
	return r;
}

static void fz_filter_install(void)
{
	struct xdpr_flt_spec spec[] = {
		fz_rule(XDPR_FLT_DROP, FZ_BAD4, 0, 0, 0),
		fz_rule(XDPR_FLT_DROP, FZ_BAD6, 0, 0, 0),
		fz_rule(XDPR_FLT_DROP, NULL, IPPROTO_UDP, FZ_UDP_DROP, 0),
		fz_rule(XDPR_FLT_REJECT, NULL, IPPROTO_TCP, FZ_TCP_REJECT, 0),
		fz_rule_dev(XDPR_FLT_DROP, "v300", NULL, IPPROTO_UDP, FZ_UDP_DROP_IN),
		fz_rule_dev(XDPR_FLT_DROP, NULL, "v300", IPPROTO_TCP, FZ_TCP_DROP_OUT),
		fz_rule(XDPR_FLT_ACCEPT, NULL, 0, 0, 1 << XDPR_FS_ESTABLISHED | 1 << XDPR_FS_RELATED),
	};
	struct xdpr_flt_list l = { .policy = XDPR_FLT_ACCEPT, .n = sizeof(spec) / sizeof(spec[0]), .r = spec };
	struct xdpr_flt_image img = {};
	char err[256] = "";
	__u32 slot = 0;

	for (size_t i = 0; i < l.n; i++)
		spec[i].id = i + 1;
	if (xdpr_flt_compile(&l, &img, err, sizeof(err)))
		die("cannot compile the fuzz filter: %s", err);
	if (!(img.hdr.flags & XDPR_FLT_SEE_EST))
		die("the fuzz filter must see established packets (its oracle assumes it)");
	fz_inner(fz_skel->maps.xdpr_flt_word, slot,
		 fz_array("flt_word", 8, img.nword, BPF_F_MMAPABLE | BPF_F_INNER_MAP, img.word));
	fz_inner(fz_skel->maps.xdpr_flt_desc, slot,
		 fz_array("flt_desc", sizeof(*img.desc), img.ndesc, BPF_F_MMAPABLE | BPF_F_INNER_MAP, img.desc));
	fz_inner(fz_skel->maps.xdpr_flt_val, slot, fz_array("flt_val", 4, XDPR_FV_MAX, BPF_F_MMAPABLE, img.val));
	fz_inner(fz_skel->maps.xdpr_flt_rule, slot,
		 fz_array("flt_rule", sizeof(*img.rule), img.nrule, BPF_F_MMAPABLE | BPF_F_INNER_MAP, img.rule));
	fz_inner(fz_skel->maps.xdpr_flt_lpm4, slot,
		 fz_keyed(BPF_MAP_TYPE_LPM_TRIE, "flt_lpm4", sizeof(*img.lpm4), 2 * XDPR_FLT_LPM_MAX, img.lpm4,
			  img.lpm4_val, img.nlpm4));
	fz_inner(fz_skel->maps.xdpr_flt_lpm6, slot,
		 fz_keyed(BPF_MAP_TYPE_LPM_TRIE, "flt_lpm6", sizeof(*img.lpm6), 2 * XDPR_FLT_LPM_MAX, img.lpm6,
			  img.lpm6_val, img.nlpm6));
	fz_inner(fz_skel->maps.xdpr_flt_if, slot,
		 fz_keyed(BPF_MAP_TYPE_HASH, "flt_if", sizeof(*img.ifk), 2 * XDPR_MAX_IFACES_FLT, img.ifk,
			  img.if_val, img.nif));
	if (bpf_map_update_elem(bpf_map__fd(fz_skel->maps.xdpr_flt_hdr), &slot, &img.hdr, BPF_ANY))
		die("cannot write the filter header: %s", strerror(errno));
	xdpr_flt_image_free(&img);
}

static void fz_routes_install(void)
{
	int outer[XDPR_RT_MAPS] = { bpf_map__fd(fz_skel->maps.xdpr_rtdir), bpf_map__fd(fz_skel->maps.xdpr_rtrec),
				    bpf_map__fd(fz_skel->maps.xdpr_rtnh) };
	struct xdpr_rtrec rec[FZ_NROUTES];
	struct xdpr_rtent local[1] = { { .family = AF_INET } };
	struct xdpr x = {};
	int fd[XDPR_RT_MAPS];
	__u32 slot = 0;

	local[0].addr[0] = 127; /* nothing of the router's lies inside a route */
	for (int i = 0; i < FZ_NROUTES; i++) {
		char buf[64], *slash;

		memset(&rec[i], 0, sizeof(rec[i]));
		snprintf(buf, sizeof(buf), "%s", fz_routes[i].prefix);
		slash = strchr(buf, '/');
		*slash = 0;
		rec[i].family = strchr(buf, ':') ? AF_INET6 : AF_INET;
		rec[i].plen = atoi(slash + 1);
		if (inet_pton(rec[i].family, buf, rec[i].addr) != 1)
			die("bad route %s", fz_routes[i].prefix);
		rec[i].r.id = fz_routes[i].id;
		rec[i].r.action = fz_routes[i].action;
		if (fz_routes[i].gw) {
			rec[i].r.nnh = 1;
			rec[i].r.nh[0].ifindex = fz_dev(fz_routes[i].dev)->ifindex;
			if (inet_pton(rec[i].family, fz_routes[i].gw, rec[i].r.nh[0].gw) != 1)
				die("bad gateway %s", fz_routes[i].gw);
		}
	}
	if (xdpr_rt_make_slot(&x, rec, FZ_NROUTES, local, 1, fd))
		die("cannot build the fuzz route table: %s", x.err);
	for (int i = 0; i < XDPR_RT_MAPS; i++) {
		if (bpf_map_update_elem(outer[i], &slot, &fd[i], BPF_ANY))
			die("cannot install the fuzz route table: %s", strerror(errno));
		close(fd[i]);
	}
}

/*
 * What the loader's xdpr_iface_put writes: the interface's settings, and for
 * a VLAN their copy in xdpr_vlan_cfg by its counter slot.
 */
static void fz_iface_put(const struct fz_dev *d, const struct xdpr_iface *c, __u64 flags)
{
	struct xdpr_vlan_cfg vc = { .ifindex = d->ifindex, .cfg = *c };

	if (bpf_map_update_elem(bpf_map__fd(fz_skel->maps.xdpr_ifaces), &d->ifindex, c, flags) ||
	    ((c->flags & XDPR_IF_VLAN) &&
	     bpf_map_update_elem(bpf_map__fd(fz_skel->maps.xdpr_vlan_cfg), &c->slot, &vc, BPF_ANY)))
		die("cannot write the settings of %s: %s", d->name, strerror(errno));
	ifaces_changed(bpf_map__fd(fz_skel->maps.xdpr_if_gen));
}

static void fz_nat_install(void)
{
	int rules = bpf_map__fd(fz_skel->maps.xdpr_nat_rules), ifs = bpf_map__fd(fz_skel->maps.xdpr_ifaces);
	struct xdpr_nat_rule r1 = {
		.ifindex = fz_dev("r1")->ifindex, .flags = XDPR_NAT_MASQ, .src_net = fz_ip4(FZ_MASQ_SRC),
		.src_mask = htonl(~0u << (32 - FZ_MASQ_PLEN)), .masq_addr = fz_ip4(FZ_MASQ_ADDR),
		.port_min = 1024, .port_max = 65535, .ifname = "r1",
	};
	struct xdpr_nat_rule r2 = {
		.ifindex = fz_dev("r2")->ifindex, .flags = XDPR_NAT_EIF, .src_net = fz_ip4(FZ_POOL_SRC),
		.src_mask = htonl(~0u << (32 - FZ_POOL_PLEN)), .pool_first = fz_ip4(FZ_POOL_FIRST),
		.pool_count = FZ_POOL_N, .port_min = 20000, .port_max = 20003, .ifname = "r2",
	};
	struct xdpr_nat_rule r3 = {
		.ifindex = fz_dev("v200")->ifindex, .flags = XDPR_NAT_MASQ, .src_net = fz_ip4(FZ_MASQ_SRC),
		.src_mask = htonl(~0u << (32 - FZ_MASQ_PLEN)), .masq_addr = fz_ip4(FZ_VMASQ_ADDR),
		.port_min = 1024, .port_max = 65535, .ifname = "v200",
	};
	const struct xdpr_nat_rule *r[] = { &r1, &r2, &r3 };
	const char *on[] = { "r1", "r2", "v200" };

	for (__u32 k = 1; k <= 3; k++) {
		struct fz_dev *d = fz_dev(on[k - 1]);
		struct xdpr_iface c;

		if (bpf_map_update_elem(rules, &k, r[k - 1], BPF_ANY))
			die("cannot write the NAT rules: %s", strerror(errno));
		if (bpf_map_lookup_elem(ifs, &d->ifindex, &c))
			die("cannot read xdpr_ifaces[%s]", d->name);
		c.nrules = 1;
		c.rules[0] = k;
		fz_iface_put(d, &c, BPF_EXIST);
	}
}

/*
 * The attach: ports first (a port with VLANs gets the next trunk number),
 * then each VLAN as the loader enrols it (loader/vlan.c): its settings with
 * XDPR_IF_VLAN, parent, VID and QoS maps, their copy by slot, a devmap entry
 * of its own (never a redirect target) and its slot in its port's row of
 * xdpr_vlans.
 */
static void fz_register(void)
{
	int tx = bpf_map__fd(fz_skel->maps.xdpr_tx_ports), vlans = bpf_map__fd(fz_skel->maps.xdpr_vlans);
	__u8 trunks = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < FZ_NDEVS; i++) {
			struct fz_dev *d = &fz_devs[i];
			struct xdpr_iface c = { .slot = d->slot, .flags = XDPR_IF_XMIT };

			if (!d->slot || !d->parent != !pass)
				continue;
			memcpy(c.mac, d->hw, 6);
			if (d->parent) {
				struct fz_dev *p = fz_dev(d->parent);

				if (!p->trunk || !p->slot)
					die("VLAN %s: its port %s is not attached", d->name, p->name);
				c.flags |= XDPR_IF_VLAN;
				c.parent = p->ifindex;
				c.vid = d->vid;
				memcpy(c.in_prio, d->in_prio, sizeof(c.in_prio));
				memcpy(c.pcp, d->pcp, sizeof(c.pcp));
			} else {
				bool has = false;

				for (int v = 0; v < FZ_NDEVS; v++)
					has |= fz_devs[v].parent && !strcmp(fz_devs[v].parent, d->name);
				if (has)
					d->trunk = c.trunk = ++trunks;
			}
			if (bpf_map_update_elem(tx, &d->ifindex, &d->ifindex, BPF_ANY))
				die("cannot give %s its devmap entry: %s", d->name, strerror(errno));
			fz_iface_put(d, &c, BPF_ANY);
			if (d->parent) {
				__u32 k = (fz_dev(d->parent)->trunk - 1) * XDPR_VIDS + d->vid;

				if (bpf_map_update_elem(vlans, &k, &c.slot, BPF_ANY))
					die("cannot enrol VLAN %s: %s", d->name, strerror(errno));
			}
		}
}

static void fz_cfg_write(void)
{
	struct xdpr_cfg c = {
		.flags = XDPR_CFG_NAT | XDPR_CFG_ROUTES | XDPR_CFG_FILTER | (fz_fib_src ? XDPR_CFG_FIB_SRC : 0),
		.tcp_est = XDPR_DEF_TCP_EST, .tcp_trans = XDPR_DEF_TCP_TRANS, .udp = XDPR_DEF_UDP,
		.icmp = XDPR_DEF_ICMP, .holddown = XDPR_DEF_HOLDDOWN, .host_limit = XDPR_DEF_HOST_LIMIT,
		.nat_sess = XDPR_NAT_DEF_SESS,
	};
	__u32 zero = 0;

	if (bpf_map_update_elem(fz_cfg, &zero, &c, BPF_ANY))
		die("cannot write xdpr_cfg: %s", strerror(errno));
}

static int fz_probe_fib_src(void)
{
	__s32 buf[16] = { -1 };
	struct xdp_md ctx = { .data_end = sizeof(buf), .ingress_ifindex = 1 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = buf, .data_size_in = sizeof(buf), .data_out = buf,
		    .data_size_out = sizeof(buf), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);

	if (bpf_prog_test_run_opts(bpf_program__fd(fz_skel->progs.xdpr_probe), &o))
		die("cannot run xdpr_probe: %s", strerror(errno));
	return buf[0];
}

/* The namespace, the program and its maps; dies on any failure (Bail out!). */
static void fz_setup_all(void)
{
	cpu_set_t one;

	if (unshare(CLONE_NEWNET))
		die("unshare(CLONE_NEWNET): %s", strerror(errno));
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one)) /* per-CPU state (flow copies, rates) on one CPU */
		die("cannot pin to CPU 0: %s", strerror(errno));
	if (sysctl_set("net/ipv4/ip_forward", "1") || sysctl_set("net/ipv6/conf/all/forwarding", "1"))
		die("cannot enable forwarding");
	for (int i = 0; i < FZ_NDEVS; i++) {
		struct fz_dev *d = &fz_devs[i];

		if (sh("/sbin/ip link add %s address %s type veth peer name %s address %s", d->name, d->mac,
		       d->peer, d->peer_mac) ||
		    sh("/sbin/ip link set %s up && /sbin/ip link set %s up", d->name, d->peer))
			die("cannot create veth %s", d->name);
		d->ifindex = if_nametoindex(d->name);
		dev_mac(d->name, d->hw);
	}
	for (size_t i = 0; i < sizeof(fz_setup) / sizeof(fz_setup[0]); i++)
		if (sh("/sbin/%s", fz_setup[i]))
			die("set-up failed: %s", fz_setup[i]);
	fz_skel = xdpr_bpf__open_and_load();
	if (!fz_skel)
		die("cannot load the XDP program: %s", strerror(errno));
	fz_prog = bpf_program__fd(fz_skel->progs.xdpr_main);
	fz_stats = bpf_map__fd(fz_skel->maps.xdpr_stats);
	fz_cfg = bpf_map__fd(fz_skel->maps.xdpr_cfg);
	nat_tabs_init(fz_skel->obj, &fz_ct, &fz_bind, &fz_eim, &fz_hosts, &fz_ring, &fz_flows);
	fz_ncpus = libbpf_num_possible_cpus();
	if (fz_ncpus < 1)
		die("cannot count CPUs");
	fz_pc = calloc(fz_ncpus, sizeof(*fz_pc));
	if (!fz_pc)
		die("out of memory");
	fz_register();
	fz_fib_src = fz_probe_fib_src() >= 0;
	fz_cfg_write();
	fz_nat_install();
	fz_routes_install();
	fz_filter_install();
}

/* ---- per input: a fresh start ---- */

static int fz_clear(int fd, __u32 ksize)
{
	__u8 key[64], next[64];
	int n = 0;

	while (!bpf_map_get_next_key(fd, NULL, next) && n < 100000) {
		memcpy(key, next, ksize);
		if (bpf_map_delete_elem(fd, key))
			die("cannot clear a map: %s", strerror(errno));
		n++;
	}
	return n;
}

static void fz_reset(void)
{
	struct xdpr_cfg c;
	__u32 zero = 0;

	ct_clear();
	fz_clear(fz_bind, sizeof(struct xdpr_bind_key));
	fz_clear(fz_eim, sizeof(struct xdpr_eim_key));
	fz_clear(fz_hosts, sizeof(__be32));
	fz_clear(fz_flows, sizeof(struct xdpr_flow_key));
	fz_clear(bpf_map__fd(fz_skel->maps.xdpr_flt_frags), sizeof(struct xdpr_frag_key));
	/* the CPUs' copies of flow states lapse with the generation */
	if (bpf_map_lookup_elem(fz_cfg, &zero, &c))
		die("cannot read xdpr_cfg");
	c.flt_gen++;
	if (bpf_map_update_elem(fz_cfg, &zero, &c, BPF_ANY))
		die("cannot write xdpr_cfg");
}

/* ---- counters ---- */

#define FZ_SLOTS 8 /* slot 0 (unknown ingress), the four attached ports, the three VLANs */

struct fz_ctrs {
	struct xdpr_ctr c[FZ_SLOTS][XDPR_REASON_MAX];
};

static void fz_read_ctrs(struct fz_ctrs *s)
{
	for (__u32 slot = 0; slot < FZ_SLOTS; slot++) {
		if (bpf_map_lookup_elem(fz_stats, &slot, fz_pc))
			die("cannot read xdpr_stats[%u]: %s", slot, strerror(errno));
		for (int r = 0; r < XDPR_REASON_MAX; r++) {
			s->c[slot][r].packets = s->c[slot][r].bytes = 0;
			for (int cpu = 0; cpu < fz_ncpus; cpu++) {
				s->c[slot][r].packets += fz_pc[cpu].reason[r].packets;
				s->c[slot][r].bytes += fz_pc[cpu].reason[r].bytes;
			}
		}
	}
}

/* ---- state tables: the keys of a small hash map ---- */

#define FZ_KEYS 64

struct fz_keys {
	int n;
	__u8 k[FZ_KEYS][40];
};

static void fz_keys_read(int fd, __u32 ksize, struct fz_keys *s)
{
	__u8 next[64];
	void *prev = NULL;

	s->n = 0;
	while (s->n < FZ_KEYS && !bpf_map_get_next_key(fd, prev, next)) {
		memcpy(s->k[s->n], next, ksize);
		prev = s->k[s->n++];
	}
}

/* The session halves' keys (slots and overflow). */
static void fz_ct_read(struct fz_keys *s)
{
	struct xdpr_ct_key *k;
	size_t n = ct_dump(&k, NULL);

	s->n = 0;
	for (size_t i = 0; i < n && s->n < FZ_KEYS; i++)
		memcpy(s->k[s->n++], &k[i], sizeof(*k));
	free(k);
}

static bool fz_keys_has(const struct fz_keys *s, const void *k, __u32 ksize)
{
	for (int i = 0; i < s->n; i++)
		if (!memcmp(s->k[i], k, ksize))
			return true;
	return false;
}

/* ---- the oracle's own judgements ---- */

static bool fz_in4(const __u8 *a, const char *net, int plen)
{
	__u32 x, n = ntohl(fz_ip4(net));

	memcpy(&x, a, 4);
	x = ntohl(x);
	return plen == 0 || (x >> (32 - plen)) == (n >> (32 - plen));
}

static bool fz_eq4(const __u8 *a, const char *s)
{
	__be32 x = fz_ip4(s);

	return !memcmp(a, &x, 4);
}

static bool fz_eq6(const __u8 *a, const char *s)
{
	struct in6_addr x;

	inet_pton(AF_INET6, s, &x);
	return !memcmp(a, &x, 16);
}

/* An outside address of the NAT rules (the masquerade address or one of the pool). */
static bool fz_nat_addr(const __u8 *a)
{
	__u32 x, first = ntohl(fz_ip4(FZ_POOL_FIRST));

	memcpy(&x, a, 4);
	x = ntohl(x);
	return fz_eq4(a, FZ_MASQ_ADDR) || fz_eq4(a, FZ_VMASQ_ADDR) || (x >= first && x < first + FZ_POOL_N);
}

/*
 * Does a rule of the fuzz filter drop (or reject) this packet as it arrived
 * on dev (the VLAN for a frame of one), leaving through eg (-1: not known)?
 */
static bool fz_filter_drops(const __u8 *b, const struct fz_view *v, int dev, int eg)
{
	if (!v->ok)
		return false;
	if (v->family == 4 ? fz_eq4(v->s, FZ_BAD4) : fz_eq6(v->s, FZ_BAD6))
		return true;
	/* ports as they arrived: only where no reverse NAT rewrites them first (r1, r2, v200) */
	if (dev == 1 || dev == 2 || dev == FZ_V200 || !v->l4 || v->frag)
		return false;
	if (v->proto == IPPROTO_UDP && v->l4len >= 8 && get16(b + v->l4 + 2) == FZ_UDP_DROP)
		return true;
	if (dev == FZ_V300 && v->proto == IPPROTO_UDP && v->l4len >= 8 && get16(b + v->l4 + 2) == FZ_UDP_DROP_IN)
		return true;
	if (eg == FZ_V300 && v->proto == IPPROTO_TCP && v->l4len >= 20 && get16(b + v->l4 + 2) == FZ_TCP_DROP_OUT)
		return true;
	return v->proto == IPPROTO_TCP && v->l4len >= 20 && get16(b + v->l4 + 2) == FZ_TCP_REJECT;
}

/* ---- VLANs: which one a frame is of, the tags it must leave with (bpf/vlan.h) ---- */

/* The VLAN (index into fz_devs) a frame arriving on port dev is of, -1: none (it is the port's). */
static int fz_vlan_of(int dev, const __u8 *b, int len)
{
	__u16 vid;

	/* one 802.1Q tag, not two, and whole (the EtherType after it is there) */
	if (dev < 0 || dev >= FZ_NIN || !fz_devs[dev].trunk || len < 18 || get16(b + 12) != ETH_P_8021Q ||
	    fz_is_tag(get16(b + 16)))
		return -1;
	vid = get16(b + 14) & 0xfff;
	for (int i = 0; i < FZ_NDEVS; i++)
		if (fz_devs[i].parent && !strcmp(fz_devs[i].parent, fz_devs[dev].name) && fz_devs[i].vid == vid)
			return i;
	return -1;
}

/* The kernel's ip_tos2prio (net/ipv4/route.c): TOS bits 4-1 -> packet priority. */
static const __u8 fz_tos2prio[16] = { 0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4 };

/*
 * The PCP the kernel gives a packet leaving through VLAN eg: the egress-qos-map
 * of its priority, for IPv4 rt_tos2priority of its TOS (ip_forward), for IPv6
 * the ingress VLAN's ingress-qos-map of the PCP it came with (vin: -1 untagged,
 * priority 0).  Priorities above 15 match no egress map entry: PCP 0.
 */
static int fz_pcp(int eg, const __u8 *b, const struct fz_view *v, int vin, int in_pcp)
{
	int prio;

	if (v->family == 4)
		prio = fz_tos2prio[(b[v->l3 + 1] & 0x1e) >> 1];
	else
		prio = vin >= 0 ? fz_devs[vin].in_prio[in_pcp & 7] : 0;
	return prio > 15 ? 0 : fz_devs[eg].pcp[prio] & 7;
}

/*
 * The L2 header of a frame leaving through device eg (its VLAN's tag with
 * that PCP, or none out of a port); NULL when right, else what is wrong.
 */
static const char *fz_tag_check(const __u8 *out, int olen, int eg, int pcp, char *why, size_t n)
{
	if (eg < 0 || !fz_devs[eg].parent) {
		if (olen >= 14 && fz_is_tag(get16(out + 12)))
			snprintf(why, n, "out of port %s with a tag (TPID %04x TCI %04x)", eg < 0 ? "?" : fz_devs[eg].name,
				 get16(out + 12), olen >= 16 ? get16(out + 14) : 0);
		else
			return NULL;
		return why;
	}
	if (olen < 18 || get16(out + 12) != ETH_P_8021Q || fz_is_tag(get16(out + 16)))
		snprintf(why, n, "out of VLAN %s without exactly one 802.1Q tag", fz_devs[eg].name);
	else if ((get16(out + 14) & 0xfff) != fz_devs[eg].vid || get16(out + 14) >> 13 != pcp ||
		 (get16(out + 14) & 0x1000))
		snprintf(why, n, "out of VLAN %s tagged VID %u PCP %u DEI %u, expected VID %u PCP %d DEI 0",
			 fz_devs[eg].name, get16(out + 14) & 0xfff, get16(out + 14) >> 13, (get16(out + 14) >> 12) & 1,
			 fz_devs[eg].vid, pcp);
	else
		return NULL;
	return why;
}

/*
 * Reasons after which the kernel does not forward the packet (it drops it,
 * answers it or keeps it): the filter need not have seen those.  Every other
 * XDP_PASS may be forwarded by the kernel.
 */
static bool fz_pass_stays(int r)
{
	switch (r) {
	case XDPR_PASS_NOT_IP: case XDPR_PASS_VLAN: case XDPR_PASS_L2_OTHER: case XDPR_PASS_IP4_HDR_ERR:
	case XDPR_PASS_IP4_CSUM: case XDPR_PASS_IP6_HDR_ERR: case XDPR_PASS_MARTIAN: case XDPR_PASS_TTL:
	case XDPR_PASS_FIB_BLACKHOLE: case XDPR_PASS_FIB_UNREACH: case XDPR_PASS_FIB_PROHIBIT:
	case XDPR_PASS_FIB_NOT_FWDED: case XDPR_PASS_FIB_FWD_DISABLED: case XDPR_PASS_NO_IFACE:
	/* a tag of no enrolled VLAN: the kernel's (an 802.1ad or unknown VLAN is none of xdpr's) */
	case XDPR_PASS_VLAN_QINQ:
		return true;
	}
	return false;
}

/* The kernel FIB of the fuzz namespace for an IPv4 destination: the egress device index, -1 local. */
static int fz_kernel_route4(const __u8 *d)
{
	if (fz_in4(d, "10.0.1.0", 24))
		return fz_eq4(d, "10.0.1.1") ? -1 : 0;
	if (fz_in4(d, "10.0.2.0", 24))
		return fz_eq4(d, "10.0.2.1") ? -1 : 1;
	if (fz_in4(d, "10.0.3.0", 24))
		return fz_eq4(d, "10.0.3.1") ? -1 : 2;
	if (fz_in4(d, "10.0.5.0", 24) || fz_in4(d, "10.0.6.0", 24))
		return fz_eq4(d, "10.0.5.1") ? -1 : 3;
	if (fz_in4(d, "10.0.7.0", 24))
		return fz_eq4(d, "10.0.7.1") ? -1 : 4;
	if (fz_in4(d, "203.0.113.0", 24))
		return 2;
	if (fz_in4(d, "10.0.10.0", 24))
		return fz_eq4(d, "10.0.10.1") ? -1 : FZ_V100;
	if (fz_in4(d, "172.20.0.0", 24) || fz_in4(d, "192.168.200.0", 24))
		return fz_eq4(d, "172.20.0.1") ? -1 : FZ_V200;
	if (fz_in4(d, "10.0.30.0", 24) || fz_in4(d, "10.0.31.0", 24) || fz_in4(d, "10.9.30.0", 24))
		return fz_eq4(d, "10.0.30.1") ? -1 : FZ_V300;
	if (fz_in4(d, "127.0.0.0", 8))
		return -1;
	return 1; /* default via r1 */
}

/* An inside source of a NAT rule of that (egress) device, that is not its outside address. */
static bool fz_inside_on(int dev, const __u8 *s)
{
	if (fz_nat_addr(s))
		return false;
	if (dev == 1 || dev == FZ_V200)
		return fz_in4(s, FZ_MASQ_SRC, FZ_MASQ_PLEN);
	if (dev == 2)
		return fz_in4(s, FZ_POOL_SRC, FZ_POOL_PLEN);
	return false;
}

static int fz_dev_by_mac(const __u8 *m)
{
	for (int i = 0; i < FZ_NDEVS; i++)
		if (!memcmp(fz_devs[i].hw, m, 6))
			return i;
	return -1;
}

/* A session half of this frame: one of its addresses is one of the frame's. */
static bool fz_shares_addr(__be32 a, __be32 b, const struct fz_view *v)
{
	return !memcmp(&a, v->s, 4) || !memcmp(&a, v->d, 4) || !memcmp(&b, v->s, 4) || !memcmp(&b, v->d, 4);
}

/* An ICMPv4 error's quoted IPv4 header checksum: 1 valid, 0 not, -1 none quoted. */
static int fz_quote_csum(const __u8 *b, const struct fz_view *v)
{
	const __u8 *l4 = b + v->l4;
	const struct iphdr *q = (const void *)(l4 + 8);

	if (!v->ok || v->family != 4 || !v->l4 || v->frag || v->proto != IPPROTO_ICMP || v->l4len < 28 ||
	    !(l4[0] == 3 || l4[0] == 11 || l4[0] == 12) || q->version != 4 || q->ihl < 5 ||
	    8 + q->ihl * 4 > v->l4len)
		return -1;
	return fold(sum16(q, q->ihl * 4, 0)) == 0xffff;
}

/* The filter's "may start a flow" (README, Filter: state new). */
static bool fz_may_start(const __u8 *b, const struct fz_view *v)
{
	const __u8 *l4 = b + v->l4;

	if (v->proto == IPPROTO_TCP) {
		__u8 f = l4[13] & 0x17; /* SYN ACK RST FIN */

		return v->l4len >= 20 && (f == 0x02 || f == 0x10);
	}
	if (v->proto == IPPROTO_ICMP && v->family == 4) /* in IPv6, 1 is just another protocol */
		return v->l4len >= 8 && (l4[0] == 8 || l4[0] == 13 || l4[0] == 15 || l4[0] == 17);
	if (v->proto == IPPROTO_ICMPV6 && v->family == 6)
		return v->l4len >= 8 && (l4[0] == 128 || l4[0] == 139);
	return true;
}

/*
 * A frame handed to the kernel is the frame that arrived, its tags too (a
 * VLAN's tag taken off goes back on: bpf/vlan.h), byte for byte, but for the
 * documented exception: an IPv4 packet translated before the hand-over
 * (README, NAT: what the kernel will forward is translated first), from or to
 * a NAT address, in the same L2 header and length.  False when it is so.
 */
static bool fz_pass_changed(const __u8 *in, int len, const __u8 *out, int olen, const struct fz_view *vi,
			    const struct fz_view *vo, char *why, size_t n)
{
	int k;

	if (olen == len && !memcmp(in, out, len))
		return false;
	if (olen != len) {
		snprintf(why, n, "is %d bytes, %d arrived (%d tags in, TPID out %04x)", olen, len, vi->tags,
			 olen >= 14 ? get16(out + 12) : 0);
		return true;
	}
	for (k = 0; k < len && in[k] == out[k]; k++)
		;
	if (k < vi->l3) {
		snprintf(why, n, "with its Ethernet header or tags changed at byte %d (%02x in, %02x out)", k, in[k],
			 out[k]);
		return true;
	}
	if (vi->ok && vo->ok && vi->family == 4 && vo->family == 4 && (fz_nat_addr(vo->s) || fz_nat_addr(vi->d)))
		return false; /* translated */
	snprintf(why, n, "changed at byte %d (%02x in, %02x out), not a translation", k, in[k], out[k]);
	return true;
}

/* ---- one frame ---- */

static const char *fz_vname(int v)
{
	static const char *const n[] = { "XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT" };

	return v >= 0 && v < 5 ? n[v] : "unknown verdict";
}

/*
 * Run one frame arriving on device dev (index into fz_devs, or an unknown
 * ifindex) and check every invariant; sets fz_fail.  Returns the reason
 * the counters say (-1 when the frame could not be run).
 */
static int fz_frame(int rec, int dev, const __u8 *in, int len)
{
	static __u8 out[4096];
	static struct fz_ctrs before, after;
	struct fz_keys ct0, ct1, fl0, fl1;
	struct fz_view vi, vo;
	__u32 ifindex = dev < FZ_NIN ? fz_devs[dev].ifindex : FZ_OTHER_IFINDEX;
	/* a frame of an enrolled VLAN is the VLAN's (counters, filter, NAT), any other the port's */
	int vin = fz_vlan_of(dev, in, len), indev = vin >= 0 ? vin : dev;
	int in_pcp = vin >= 0 ? get16(in + 14) >> 13 : 0;
	__u32 slot = dev < FZ_NIN ? fz_devs[indev].slot : 0;
	char tagwhy[160];
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = len, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);
	int verdict, reason = -1, moved = 0, l4ok;

	if (len < FZ_ETH_MIN || len > FZ_FRAME_MAX)
		return -1;
	fz_parse(in, len, 2, &vi);
	l4ok = fz_l4_csum(in, &vi);
	fz_read_ctrs(&before);
	fz_ct_read(&ct0);
	fz_keys_read(fz_flows, sizeof(struct xdpr_flow_key), &fl0);
	if (bpf_prog_test_run_opts(fz_prog, &o)) {
		fz_failf("test run", "frame %d: BPF_PROG_TEST_RUN failed: %s", rec, strerror(errno));
		return -1;
	}
	verdict = o.retval;
	fz_read_ctrs(&after);
	fz_ct_read(&ct1);
	fz_keys_read(fz_flows, sizeof(struct xdpr_flow_key), &fl1);

	/* a verdict the program can return, never XDP_ABORTED */
	if (verdict <= 0 || verdict > 4) {
		fz_failf("verdict", "frame %d: %s (%d)", rec, fz_vname(verdict), verdict);
		return -1;
	}
	/* counted exactly once, under one reason whose verdict is the one returned */
	for (int s = 0; s < FZ_SLOTS; s++)
		for (int r = 0; r < XDPR_REASON_MAX; r++) {
			__u64 dp = after.c[s][r].packets - before.c[s][r].packets;
			__u64 db = after.c[s][r].bytes - before.c[s][r].bytes;

			if (!dp && !db)
				continue;
			moved++;
			if (dp != 1 || db != (__u64)len || (__u32)s != slot)
				fz_failf("counters", "frame %d: slot %d reason %d moved by %llu packets %llu bytes "
					 "(expected 1 packet, %d bytes, slot %u)", rec, s, r,
					 (unsigned long long)dp, (unsigned long long)db, len, slot);
			reason = r;
		}
	if (moved != 1) {
		fz_failf("counters", "frame %d: %d counters moved, expected exactly one", rec, moved);
		return -1;
	}
	if (xdpr_reason_verdict(reason) != verdict)
		fz_failf("verdict", "frame %d: reason %d counted but %s returned (its verdict is %s)", rec, reason,
			 fz_vname(verdict), fz_vname(xdpr_reason_verdict(reason)));
	fz_covhit((size_t)reason * 16 + (vin >= 0 ? 8 + vin : dev));

	fz_parse(out, o.data_size_out, 1, &vo);
	if (verdict == 4) {
		int eg = fz_dev_by_mac(out + 6);

		if (!vi.ok || !vo.ok || vi.family != vo.family) {
			fz_failf("redirect", "frame %d: redirected, but out is not the IPv%d packet that came in", rec,
				 vi.family);
		} else {
			if (vo.ttl != (__u8)(vi.ttl - 1) || vi.ttl <= 1)
				fz_failf("redirect", "frame %d: TTL/hop limit %u in, %u out", rec, vi.ttl, vo.ttl);
			if (!vo.ip_csum_ok)
				fz_failf("redirect", "frame %d: IPv4 header checksum wrong on the way out", rec);
			if (l4ok == 1 && fz_l4_csum(out, &vo) != 1)
				fz_failf("redirect", "frame %d: L4 (proto %u) checksum valid in, wrong out", rec, vo.proto);
			if (fz_quote_csum(in, &vi) == 1 && fz_quote_csum(out, &vo) == 0)
				fz_failf("redirect", "frame %d: quoted IPv4 header checksum valid in, wrong out", rec);
			if (eg < 0 || !fz_devs[eg].slot)
				fz_failf("redirect", "frame %d: source MAC %02x:..:%02x is no attached device's", rec,
					 out[6], out[11]);
			else if (fz_tag_check(out, o.data_size_out, eg, fz_devs[eg].parent ?
					      fz_pcp(eg, out, &vo, vin, in_pcp) : 0, tagwhy, sizeof(tagwhy)))
				fz_failf("vlan", "frame %d: redirected %s", rec, tagwhy);
			else if (vo.family == 4 && fz_inside_on(eg, vo.s))
				fz_failf("nat leak", "frame %d: leaves %s with inside source %u.%u.%u.%u", rec,
					 fz_devs[eg].name, vo.s[0], vo.s[1], vo.s[2], vo.s[3]);
			if (eg >= 0 && !memcmp(out, fz_devs[eg].hw, 6))
				fz_failf("redirect", "frame %d: sent to the router's own MAC", rec);
			if (eg >= 0)
				fz_covhit(4400 + eg * 16 + (vin + 1));
		}
	} else if (verdict == 3) {
		/* an answer made in XDP: every checksum right */
		if (!vo.ok || !vo.ip_csum_ok || fz_l4_csum(out, &vo) != 1)
			fz_failf("tx", "frame %d: XDP_TX answer is not a valid packet (ok %d ip csum %d l4 csum %d)",
				 rec, vo.ok, vo.ip_csum_ok, fz_l4_csum(out, &vo));
		/* back out of the VLAN it came from, tagged for the answer's own priority; untagged else */
		else if (fz_tag_check(out, o.data_size_out, vin >= 0 ? vin : (dev < FZ_NIN ? dev : -1),
				      vin >= 0 ? fz_pcp(vin, out, &vo, vin, in_pcp) : 0, tagwhy, sizeof(tagwhy)))
			fz_failf("vlan", "frame %d: XDP_TX answer %s", rec, tagwhy);
	} else if (verdict == 2 && fz_pass_changed(in, len, out, o.data_size_out, &vi, &vo, tagwhy, sizeof(tagwhy))) {
		fz_failf("pass", "frame %d: handed to the kernel (reason %d) %s", rec, reason, tagwhy);
	}
	if (verdict == 2 && vi.ok && vo.ok && vo.family == 4 && !fz_pass_stays(reason)) {
		/* handed to the kernel, which may forward it: translated already if it goes to a NAT interface */
		int eg = fz_kernel_route4(vo.d);
		const struct iphdr *ip = (const void *)(out + vo.l3);
		bool answers = reason == XDPR_PASS_FIB_FRAG_NEEDED && (ntohs(ip->frag_off) & FZ_DF);

		/* README, route: "Pass routes bypass NAT" (documented, not checked) */
		answers |= reason == XDPR_PASS_ROUTE;

		if (eg > 0 && !answers && fz_inside_on(eg, vo.s))
			fz_failf("nat leak", "frame %d: passed (reason %d) toward %s with inside source %u.%u.%u.%u",
				 rec, reason, fz_devs[eg].name, vo.s[0], vo.s[1], vo.s[2], vo.s[3]);
	}

	/* what the filter drops never leaves forwarded (hairpins to NAT addresses: not filtered, README) */
	if (dev < FZ_NIN && fz_devs[dev].slot && vi.ok &&
	    fz_filter_drops(in, &vi, indev, verdict == 4 ? fz_dev_by_mac(out + 6) : -1) &&
	    !(vi.family == 4 && fz_nat_addr(vi.d)) &&
	    (verdict == 4 || (verdict == 2 && !fz_pass_stays(reason))))
		fz_failf("filter", "frame %d: a drop rule matches, but it left with %s (reason %d)", rec,
			 fz_vname(verdict), reason);

	/* state only from a valid first packet, for its own addresses */
	for (int i = 0; i < ct1.n; i++) {
		const struct xdpr_ct_key *k = (const void *)ct1.k[i];

		if (fz_keys_has(&ct0, k, sizeof(*k)))
			continue;
		fz_covhit(4096 + rec);
		if (!vi.ok || vi.family != 4 || !vi.ip_csum_ok || vi.frag || !vi.l4 ||
		    vi.l4len < (vi.proto == IPPROTO_TCP ? 20 : 8))
			fz_failf("state", "frame %d: NAT session created by a frame that is not a whole first packet "
				 "(reason %d)", rec, reason);
		else if (k->proto != vi.proto || !fz_shares_addr(k->saddr, k->daddr, &vi))
			fz_failf("state", "frame %d: NAT session %08x->%08x proto %u has no address of the frame", rec,
				 ntohl(k->saddr), ntohl(k->daddr), k->proto);
	}
	for (int i = 0; i < fl1.n; i++) {
		const struct xdpr_flow_key *k = (const void *)fl1.k[i];
		int alen = vi.family == 6 ? 16 : 4;

		if (fz_keys_has(&fl0, k, sizeof(*k)))
			continue;
		fz_covhit(4200 + rec);
		if (!vi.ok || !vi.ip_csum_ok || !vi.l4 || !fz_may_start(in, &vi) || vi.ttl <= 1)
			fz_failf("state", "frame %d: flow state (proto %u) created by a frame that cannot start a flow: "
				 "IPv%d, %s, reason %d, TTL %u", rec, k->proto, vi.family,
				 !vi.ok ? "no valid IP header" : !vi.ip_csum_ok ? "bad header checksum" :
				 !vi.l4 ? "no transport header inside the IP length" :
				 !fz_may_start(in, &vi) ? "TCP flags / ICMP type that start nothing" : "TTL expiring here",
				 reason, vi.ttl);
		else if (k->proto != vi.proto || k->family != vi.family ||
			 !((!memcmp(k->a, vi.s, alen) && !memcmp(k->b, vi.d, alen)) ||
			   (!memcmp(k->a, vi.d, alen) && !memcmp(k->b, vi.s, alen))))
			fz_failf("state", "frame %d: flow state for other endpoints than the frame's", rec);
		else if (verdict == 1 || verdict == 3)
			fz_failf("state", "frame %d: flow state kept for a frame that was dropped (reason %d)", rec,
				 reason);
	}
	return reason;
}

/* ---- one input ---- */

struct fz_rec {
	int dev;
	const __u8 *b;
	int len;
};

static int fz_split(const __u8 *data, size_t size, struct fz_rec r[FZ_RECORDS])
{
	size_t p = 0;
	int n = 0;

	while (n < FZ_RECORDS && p + 3 <= size) {
		size_t len = get16(data + p + 1);

		r[n].dev = data[p] & 7;
		p += 3;
		if (len > size - p)
			len = size - p;
		if (len > FZ_FRAME_MAX)
			len = FZ_FRAME_MAX;
		r[n].b = data + p;
		r[n].len = len;
		p += len;
		n++;
	}
	return n;
}

/* Run a whole input from a fresh state; NULL when every invariant held. */
static const char *fz_input(const __u8 *data, size_t size)
{
	struct fz_rec r[FZ_RECORDS];
	int n = fz_split(data, size, r);
	static __u8 buf[FZ_FRAME_MAX];

	fz_fail = NULL;
	fz_why[0] = 0;
	fz_reset();
	for (int i = 0; i < n && !fz_fail; i++) {
		memcpy(buf, r[i].b, r[i].len); /* the program may write the frame: never the input */
		fz_frame(i, r[i].dev >= FZ_NIN ? FZ_NIN : r[i].dev, buf, r[i].len);
	}
	return fz_fail;
}

/* ---- seeds: valid frames of every kind the program handles ---- */

#define FZ_SEEDS_MAX 128

struct fz_seed {
	const char *name;
	__u8 b[FZ_RECORDS * (FZ_FRAME_MAX + 3)];
	size_t len;
};

struct fz_pkt {
	int dev;                 /* ingress */
	int family;              /* 4 (default) or 6 */
	const char *src, *dst;
	__u8 proto;              /* default UDP */
	__u16 sport, dport;
	__u8 flags;              /* TCP */
	__u8 type, code;         /* ICMP */
	__u8 ttl;                /* default 64 */
	int plen;                /* payload bytes; default 16 */
	int opts;                /* IPv4 option bytes (NOPs + end) */
	int mf, fragoff;         /* IPv4 fragment: MF, offset in 8-byte units */
	int ext;                 /* IPv6: hop-by-hop (1), destination options (2), fragment (3) */
	__u16 tag, tag2;         /* 802.1Q / QinQ TCIs (tag2: outer 802.1ad); VID 0: FZ_TCI(0, pcp) */
	__u16 tpid2;             /* of the outer tag, default 802.1ad (0x8100: two stacked 802.1Q) */
	__u8 tos;                /* IPv4 TOS, IPv6 traffic class */
	int trunc;               /* cut the frame to this many bytes (a truncated tag) */
	int df;
	const __u8 *quote;       /* ICMP error: the packet it quotes (from its IP header) */
	int quote_len;
	const __u8 *dmac;        /* default: the ingress device's */
};

/* Build an Ethernet frame for p into b; returns its length. */
static int fz_build(__u8 *b, const struct fz_pkt *p)
{
	const struct fz_dev *in = &fz_devs[p->dev < FZ_NIN ? p->dev : 0];
	int fam = p->family ?: 4, off = 12, l4, l4len, hl;
	__u8 proto = p->proto ?: IPPROTO_UDP;
	int plen = p->plen ?: 16;

	/* a frame of one of the port's VLANs: between the VLAN's address and its neighbour's */
	for (int i = 0; p->tag && !p->tag2 && i < FZ_NDEVS; i++)
		if (fz_devs[i].parent && !strcmp(fz_devs[i].parent, in->name) && fz_devs[i].vid == (p->tag & 0xfff))
			in = &fz_devs[i];

	memset(b, 0, FZ_FRAME_MAX);
	if (p->dmac)
		memcpy(b, p->dmac, 6);
	else
		mac_parse(in->mac, b);
	mac_parse(in->peer_mac, b + 6);
	if (p->tag2) {
		put16(b + off, p->tpid2 ?: 0x88a8), put16(b + off + 2, p->tag2);
		off += 4;
	}
	if (p->tag) {
		put16(b + off, 0x8100), put16(b + off + 2, p->tag);
		off += 4;
	}
	put16(b + off, fam == 4 ? ETH_P_IP : ETH_P_IPV6);
	off += 2;
	if (fam == 4) {
		struct iphdr *ip = (void *)(b + off);

		hl = 20 + ((p->opts + 3) & ~3);
		ip->version = 4;
		ip->ihl = hl / 4;
		ip->tos = p->tos;
		ip->ttl = p->ttl ?: 64;
		ip->protocol = proto;
		ip->id = htons(0x1234);
		ip->frag_off = htons((p->df ? FZ_DF : 0) | (p->mf ? FZ_MF : 0) | p->fragoff);
		inet_pton(AF_INET, p->src, &ip->saddr);
		inet_pton(AF_INET, p->dst, &ip->daddr);
		for (int i = 20; i < hl; i++)
			b[off + i] = i + 1 < hl ? 1 : 0; /* NOPs, then end of options */
		l4 = off + hl;
	} else {
		struct ipv6hdr *ip = (void *)(b + off);
		__u8 *nh = &ip->nexthdr;

		ip->version = 6;
		ip->priority = p->tos >> 4;
		ip->flow_lbl[0] = (p->tos & 0xf) << 4;
		ip->hop_limit = p->ttl ?: 64;
		inet_pton(AF_INET6, p->src, &ip->saddr);
		inet_pton(AF_INET6, p->dst, &ip->daddr);
		l4 = off + 40;
		if (p->ext) {
			*nh = p->ext == 1 ? 0 : p->ext == 2 ? 60 : 44;
			nh = b + l4;
			if (p->ext == 1 || p->ext == 2)
				b[l4 + 2] = 1, b[l4 + 3] = 4; /* PadN */
			else
				put16(b + l4 + 2, (p->fragoff << 3) | (p->mf ? 1 : 0)), put16(b + l4 + 6, 0x77);
			l4 += 8;
		}
		*nh = proto;
	}
	switch (proto) {
	case IPPROTO_TCP:
		put16(b + l4, p->sport), put16(b + l4 + 2, p->dport);
		put16(b + l4 + 4, 0x1000), put16(b + l4 + 10, 1);
		b[l4 + 12] = 5 << 4, b[l4 + 13] = p->flags ?: 0x02, put16(b + l4 + 14, 65535);
		l4len = 20 + plen;
		break;
	case IPPROTO_UDP:
		put16(b + l4, p->sport), put16(b + l4 + 2, p->dport);
		l4len = 8 + plen;
		put16(b + l4 + 4, l4len);
		break;
	default: /* ICMP, ICMPv6: echo (id in sport) or an error quoting a packet */
		b[l4] = p->type, b[l4 + 1] = p->code;
		if (p->quote) {
			memcpy(b + l4 + 8, p->quote, p->quote_len);
			l4len = 8 + p->quote_len;
		} else {
			put16(b + l4 + 4, p->sport), put16(b + l4 + 6, 1);
			l4len = 8 + plen;
		}
	}
	for (int i = l4 + l4len - plen; i < l4 + l4len && !p->quote; i++)
		b[i] = i * 7 + 1;
	if (fam == 4)
		put16(b + off + 2, l4 - off + l4len);
	else
		put16(b + off + 4, l4 - off - 40 + l4len);
	fz_fix(b, l4 + l4len);
	return p->trunc && p->trunc < l4 + l4len ? p->trunc : l4 + l4len;
}

/* A seed of n packets: records as fz_split reads them. */
static void fz_seed_add(struct fz_seed *s, int *ns, int max, const char *name, const struct fz_pkt *p, int n)
{
	struct fz_seed *d;
	__u8 f[FZ_FRAME_MAX];

	if (*ns >= max)
		die("too many seeds");
	d = &s[(*ns)++];
	d->name = name;
	d->len = 0;
	for (int i = 0; i < n && i < FZ_RECORDS; i++) {
		int len = fz_build(f, &p[i]);

		d->b[d->len] = p[i].dev;
		put16(d->b + d->len + 1, len);
		memcpy(d->b + d->len + 3, f, len);
		d->len += 3 + len;
	}
}

/* The IP packet (from its header) of a frame as the router sent it: what an ICMP error quotes. */
static int fz_quote_of(const struct fz_pkt *p, __u8 *q, int max)
{
	__u8 f[FZ_FRAME_MAX];
	int len = fz_build(f, p), l3 = 14 + (p->tag ? 4 : 0) + (p->tag2 ? 4 : 0);
	int n = len - l3 < max ? len - l3 : max;

	memcpy(q, f + l3, n);
	return n;
}

static int fz_seeds(struct fz_seed *s, int max)
{
	static __u8 q1[64], q2[64], q3[64], q4[64], q5[64];
	int n = 0, ql;
	const __u8 bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

#define SEED(name, ...) do { struct fz_pkt _p[] = { __VA_ARGS__ }; \
	fz_seed_add(s, &n, max, name, _p, sizeof(_p) / sizeof(_p[0])); } while (0)

	/* forwarding, no NAT: inside to the plain interface and back, every transport */
	SEED("udp4 fwd", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .sport = 4000, .dport = 53 });
	SEED("tcp4 syn fwd", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .proto = IPPROTO_TCP, .sport = 4001, .dport = 80 });
	SEED("icmp4 echo fwd", { .dev = 3, .src = "10.0.5.2", .dst = "10.0.1.2", .proto = IPPROTO_ICMP, .type = 8, .sport = 7 });
	SEED("udp6 fwd", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:5::2", .sport = 4000, .dport = 53 });
	SEED("tcp6 fwd", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:2::2", .proto = IPPROTO_TCP, .sport = 4000, .dport = 443 });
	SEED("icmp6 echo fwd", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:5::2", .proto = IPPROTO_ICMPV6, .type = 128, .sport = 9 });
	SEED("tcp4 handshake no nat", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .proto = IPPROTO_TCP, .sport = 4002, .dport = 80 },
	     { .dev = 3, .src = "10.0.6.9", .dst = "10.0.1.2", .proto = IPPROTO_TCP, .sport = 80, .dport = 4002, .flags = 0x12 },
	     { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .proto = IPPROTO_TCP, .sport = 4002, .dport = 80, .flags = 0x11 });

	/* masquerade out of r1, its reply, an ICMP error quoting the translated flow */
	SEED("udp4 masq + reply", { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.7", .sport = 5000, .dport = 53 },
	     { .dev = 1, .src = "192.0.2.7", .dst = FZ_MASQ_ADDR, .sport = 53, .dport = 5000 });
	SEED("tcp4 masq handshake", { .dev = 0, .src = "10.0.1.3", .dst = "192.0.2.8", .proto = IPPROTO_TCP, .sport = 40000, .dport = 80 },
	     { .dev = 1, .src = "192.0.2.8", .dst = FZ_MASQ_ADDR, .proto = IPPROTO_TCP, .sport = 80, .dport = 40000, .flags = 0x12 },
	     { .dev = 0, .src = "10.0.1.3", .dst = "192.0.2.8", .proto = IPPROTO_TCP, .sport = 40000, .dport = 80, .flags = 0x10 },
	     { .dev = 1, .src = "192.0.2.8", .dst = FZ_MASQ_ADDR, .proto = IPPROTO_TCP, .sport = 80, .dport = 40000, .flags = 0x04 });
	SEED("icmp4 echo masq + reply", { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.9", .proto = IPPROTO_ICMP, .type = 8, .sport = 2077 },
	     { .dev = 1, .src = "192.0.2.9", .dst = FZ_MASQ_ADDR, .proto = IPPROTO_ICMP, .type = 0, .sport = 2077 });
	ql = fz_quote_of(&(struct fz_pkt){ .dev = 1, .src = FZ_MASQ_ADDR, .dst = "192.0.2.7", .sport = 5000, .dport = 53, .ttl = 63 }, q1, 28);
	SEED("icmp4 error in, quoting masq udp", { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.7", .sport = 5000, .dport = 53 },
	     { .dev = 1, .src = "10.0.2.2", .dst = FZ_MASQ_ADDR, .proto = IPPROTO_ICMP, .type = 3, .code = 3, .quote = q1, .quote_len = ql });
	ql = fz_quote_of(&(struct fz_pkt){ .dev = 1, .src = FZ_MASQ_ADDR, .dst = "192.0.2.8", .proto = IPPROTO_TCP, .sport = 40000, .dport = 80, .ttl = 63 }, q2, 48);
	SEED("icmp4 frag needed in, quoting masq tcp", { .dev = 0, .src = "10.0.1.3", .dst = "192.0.2.8", .proto = IPPROTO_TCP, .sport = 40000, .dport = 80 },
	     { .dev = 1, .src = "10.0.2.2", .dst = FZ_MASQ_ADDR, .proto = IPPROTO_ICMP, .type = 3, .code = 4, .quote = q2, .quote_len = ql });
	ql = fz_quote_of(&(struct fz_pkt){ .dev = 1, .src = "192.0.2.7", .dst = "10.0.1.2", .sport = 53, .dport = 5000, .ttl = 63 }, q3, 28);
	SEED("icmp4 error out, quoting a reply", { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.7", .sport = 5000, .dport = 53 },
	     { .dev = 1, .src = "192.0.2.7", .dst = FZ_MASQ_ADDR, .sport = 53, .dport = 5000 },
	     { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.7", .proto = IPPROTO_ICMP, .type = 3, .code = 3, .quote = q3, .quote_len = ql });
	SEED("ttl expiring in, to a masq session", { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.7", .sport = 5001, .dport = 53 },
	     { .dev = 1, .src = "192.0.2.7", .dst = FZ_MASQ_ADDR, .sport = 53, .dport = 5001, .ttl = 1 });
	SEED("oversize DF in, to a masq session", { .dev = 0, .src = "10.0.1.2", .dst = "10.9.4.7", .sport = 5002, .dport = 53 },
	     { .dev = 1, .src = "10.9.4.7", .dst = FZ_MASQ_ADDR, .sport = 53, .dport = 5002, .df = 1, .plen = 1400 });
	SEED("hairpin to the masq address", { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.7", .sport = 5003, .dport = 53 },
	     { .dev = 0, .src = "10.0.1.3", .dst = FZ_MASQ_ADDR, .sport = 53, .dport = 5003 });

	/* the pool on r2 (endpoint-independent filtering, four ports) */
	SEED("udp4 pool + eif in", { .dev = 0, .src = "10.0.1.2", .dst = "203.0.113.5", .sport = 6000, .dport = 53 },
	     { .dev = 2, .src = "203.0.113.99", .dst = FZ_POOL_FIRST, .sport = 1234, .dport = 20000 });
	SEED("pool exhaustion", { .dev = 0, .src = "10.0.1.2", .dst = "203.0.113.5", .sport = 6001, .dport = 53 },
	     { .dev = 0, .src = "10.0.1.2", .dst = "203.0.113.5", .sport = 6002, .dport = 53 },
	     { .dev = 0, .src = "10.0.1.2", .dst = "203.0.113.5", .sport = 6003, .dport = 53 },
	     { .dev = 0, .src = "10.0.1.2", .dst = "203.0.113.5", .sport = 6004, .dport = 53 },
	     { .dev = 0, .src = "10.0.1.2", .dst = "203.0.113.5", .sport = 6005, .dport = 53 });
	ql = fz_quote_of(&(struct fz_pkt){ .dev = 2, .src = "198.51.100.11", .dst = "203.0.113.5", .proto = IPPROTO_ICMP, .type = 8, .sport = 20000, .ttl = 63 }, q4, 28);
	SEED("icmp4 error in, quoting pool echo", { .dev = 0, .src = "10.0.1.2", .dst = "203.0.113.5", .proto = IPPROTO_ICMP, .type = 8, .sport = 99 },
	     { .dev = 2, .src = "10.0.3.2", .dst = "198.51.100.11", .proto = IPPROTO_ICMP, .type = 11, .quote = q4, .quote_len = ql });

	/* the route map */
	SEED("route via", { .dev = 0, .src = "10.0.1.2", .dst = "198.18.1.1", .sport = 7000, .dport = 53 });
	SEED("route blackhole", { .dev = 0, .src = "10.0.1.2", .dst = "198.19.1.1", .sport = 7000, .dport = 53 });
	SEED("route pass", { .dev = 0, .src = "10.0.1.2", .dst = "198.20.1.1", .sport = 7000, .dport = 53 });
	SEED("route into masq", { .dev = 3, .src = "10.0.5.2", .dst = "198.21.1.1", .proto = IPPROTO_TCP, .sport = 7001, .dport = 22 });
	SEED("route to a device not xdpr's", { .dev = 3, .src = "172.16.0.5", .dst = "198.22.1.1", .sport = 7000, .dport = 53 });
	SEED("route no neighbour", { .dev = 3, .src = "172.16.0.5", .dst = "198.23.1.1", .sport = 7000, .dport = 53 });
	SEED("route6 via", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:77::1", .sport = 7000, .dport = 53 });
	SEED("route6 blackhole", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:78::1", .sport = 7000, .dport = 53 });

	/* the filter */
	SEED("filter drop src", { .dev = 0, .src = FZ_BAD4, .dst = "10.0.6.9", .sport = 1, .dport = 2 });
	SEED("filter drop src6", { .dev = 0, .family = 6, .src = FZ_BAD6, .dst = "2001:db8:5::2", .sport = 1, .dport = 2 });
	SEED("filter drop udp port", { .dev = 3, .src = "10.0.5.2", .dst = "10.0.1.2", .sport = 1, .dport = FZ_UDP_DROP });
	SEED("filter reject tcp", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .proto = IPPROTO_TCP, .sport = 1, .dport = FZ_TCP_REJECT });
	SEED("filter reject tcp6", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:5::2", .proto = IPPROTO_TCP, .sport = 1, .dport = FZ_TCP_REJECT });
	SEED("filter reject tcp via masq", { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.1", .proto = IPPROTO_TCP, .sport = 2, .dport = FZ_TCP_REJECT });

	/* what goes to the kernel: fragments, options, extension headers, tags, TTL, martians */
	SEED("ipv4 first fragment", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .sport = 8000, .dport = 53, .mf = 1, .plen = 64 });
	SEED("ipv4 later fragment", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .proto = 200, .fragoff = 10, .plen = 32 });
	SEED("ipv4 fragment to masq", { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.7", .sport = 8000, .dport = 53, .mf = 1, .plen = 64 });
	SEED("ipv4 options", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .sport = 8001, .dport = 53, .opts = 4 });
	SEED("ipv4 options to masq", { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.7", .sport = 8001, .dport = 53, .opts = 8 });
	SEED("ipv6 hop-by-hop", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:5::2", .sport = 1, .dport = 53, .ext = 1 });
	SEED("ipv6 dest opts", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:5::2", .proto = IPPROTO_TCP, .sport = 1, .dport = 80, .ext = 2 });
	SEED("ipv6 fragment", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:5::2", .sport = 1, .dport = 53, .ext = 3, .mf = 1 });
	SEED("ttl 1", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .sport = 1, .dport = 53, .ttl = 1 });
	SEED("hop limit 1", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:5::2", .sport = 1, .dport = 53, .ttl = 1 });
	SEED("martian", { .dev = 0, .src = "127.0.0.1", .dst = "10.0.6.9", .sport = 1, .dport = 53 });
	SEED("to the router", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.1.1", .sport = 1, .dport = 53 });
	SEED("no neighbour", { .dev = 3, .src = "10.0.5.2", .dst = "10.0.5.3", .sport = 1, .dport = 53 });
	SEED("no neighbour6", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:5::77", .sport = 1, .dport = 53 });
	SEED("no neighbour masq", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.2.77", .sport = 1, .dport = 53 });
	SEED("oversize", { .dev = 0, .src = "10.0.1.2", .dst = "10.9.4.8", .sport = 1, .dport = 53, .plen = 1400 });
	SEED("oversize DF", { .dev = 0, .src = "10.0.1.2", .dst = "10.9.4.8", .sport = 1, .dport = 53, .plen = 1400, .df = 1 });
	SEED("oversize6", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:9::1", .sport = 1, .dport = 53, .plen = 1400 });
	SEED("broadcast", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.1.255", .sport = 1, .dport = 53, .dmac = bcast });
	SEED("ingress not xdpr's", { .dev = 4, .src = "10.0.7.2", .dst = "10.0.1.2", .sport = 1, .dport = 53 });
	SEED("ingress lo", { .dev = 5, .src = "10.0.1.2", .dst = "10.0.6.9", .sport = 1, .dport = 53 });
	SEED("gre to masq", { .dev = 0, .src = "10.0.1.2", .dst = "192.0.2.7", .proto = 47, .plen = 20 });

	/* VLANs of r0: pop (VLAN to port), push (port to VLAN), rewrite (VLAN to VLAN), PCPs */
#define V(vid, pcp) .dev = 0, .tag = FZ_TCI(vid, pcp)
	SEED("vlan udp4 v100 -> r3 (pop)", { V(100, 3), .src = "10.0.10.2", .dst = "10.0.6.9", .sport = 4100, .dport = 53, .tos = 0x10 });
	SEED("vlan tcp4 v100 -> v300 (rewrite)", { V(100, 5), .src = "10.0.10.2", .dst = "10.0.31.5", .proto = IPPROTO_TCP, .sport = 4101, .dport = 80, .tos = 0x08 });
	SEED("vlan tcp4 v300 -> v100, PCP from TOS", { V(300, 0), .src = "10.0.30.2", .dst = "10.0.10.2", .proto = IPPROTO_TCP, .sport = 4102, .dport = 80, .tos = 0x10 });
	SEED("vlan icmp4 echo r3 -> v100 (push)", { .dev = 3, .src = "10.0.5.2", .dst = "10.0.10.2", .proto = IPPROTO_ICMP, .type = 8, .sport = 11, .tos = 0x18 });
	SEED("vlan icmp4 echo v100 -> v300", { V(100, 7), .src = "10.0.10.2", .dst = "10.0.30.2", .proto = IPPROTO_ICMP, .type = 8, .sport = 12 });
	SEED("vlan udp4 DEI set v100 -> v300", { .dev = 0, .tag = FZ_TCI(100, 1) | 0x1000, .src = "10.0.10.2", .dst = "10.0.31.5", .sport = 4103, .dport = 53 });
	SEED("vlan udp6 v100 -> r3 (pop)", { V(100, 3), .family = 6, .src = "2001:db8:10::2", .dst = "2001:db8:5::2", .sport = 4104, .dport = 53 });
	SEED("vlan tcp6 v100 -> v300", { V(100, 5), .family = 6, .src = "2001:db8:10::2", .dst = "2001:db8:31::1", .proto = IPPROTO_TCP, .sport = 4105, .dport = 80 });
	SEED("vlan icmp6 r0 -> v100 (push)", { .dev = 0, .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:10::2", .proto = IPPROTO_ICMPV6, .type = 128, .sport = 13 });
	SEED("vlan icmp6 v200 -> v100, ingress map", { V(200, 4), .family = 6, .src = "2001:db8:20::2", .dst = "2001:db8:10::2", .proto = IPPROTO_ICMPV6, .type = 128, .sport = 14 });
	SEED("vlan udp6 v300 -> v200", { V(300, 6), .family = 6, .src = "2001:db8:30::2", .dst = "2001:db8:21::9", .sport = 4106, .dport = 53, .tos = 0xb8 });

	/* masquerade out of v200 (from a VLAN and from the untagged port), out of r1 from a VLAN */
	SEED("vlan udp4 v100 -> v200 masq + reply", { V(100, 0), .src = "10.0.10.2", .dst = "192.168.200.5", .sport = 5100, .dport = 53, .tos = 0x10 },
	     { V(200, 4), .src = "192.168.200.5", .dst = FZ_VMASQ_ADDR, .sport = 53, .dport = 5100 });
	SEED("vlan tcp4 r0 -> v200 masq handshake", { .dev = 0, .src = "10.0.1.2", .dst = "192.168.200.6", .proto = IPPROTO_TCP, .sport = 40100, .dport = 80 },
	     { V(200, 0), .src = "192.168.200.6", .dst = FZ_VMASQ_ADDR, .proto = IPPROTO_TCP, .sport = 80, .dport = 40100, .flags = 0x12 },
	     { .dev = 0, .src = "10.0.1.2", .dst = "192.168.200.6", .proto = IPPROTO_TCP, .sport = 40100, .dport = 80, .flags = 0x10 });
	SEED("vlan icmp4 echo v300 -> v200 masq, a reply to its old id", { V(300, 0), .src = "10.0.30.2", .dst = "192.168.200.7", .proto = IPPROTO_ICMP, .type = 8, .sport = 77 },
	     { V(200, 0), .src = "192.168.200.7", .dst = FZ_VMASQ_ADDR, .proto = IPPROTO_ICMP, .type = 0, .sport = 77 });
	SEED("vlan udp4 v100 -> r1 masq + reply (push)", { V(100, 2), .src = "10.0.10.2", .dst = "192.0.2.7", .sport = 5101, .dport = 53 },
	     { .dev = 1, .src = "192.0.2.7", .dst = FZ_MASQ_ADDR, .sport = 53, .dport = 5101, .tos = 0x08 });
	ql = fz_quote_of(&(struct fz_pkt){ .dev = 0, .src = FZ_VMASQ_ADDR, .dst = "192.168.200.5", .sport = 5102, .dport = 53, .ttl = 63 }, q5, 28);
	SEED("vlan icmp4 error in v200, quoting masq udp", { V(100, 0), .src = "10.0.10.2", .dst = "192.168.200.5", .sport = 5102, .dport = 53 },
	     { V(200, 0), .src = "172.20.0.2", .dst = FZ_VMASQ_ADDR, .proto = IPPROTO_ICMP, .type = 3, .code = 3, .quote = q5, .quote_len = ql });
	SEED("vlan ttl expiring in v200, to a masq session (answer tagged)", { V(100, 0), .src = "10.0.10.2", .dst = "192.168.200.8", .sport = 5103, .dport = 53 },
	     { V(200, 4), .src = "192.168.200.8", .dst = FZ_VMASQ_ADDR, .sport = 53, .dport = 5103, .ttl = 1 });
	SEED("vlan hairpin to the v200 masq address", { .dev = 0, .src = "10.0.1.2", .dst = "192.168.200.9", .sport = 5104, .dport = 53 },
	     { V(100, 0), .src = "10.0.10.2", .dst = FZ_VMASQ_ADDR, .sport = 53, .dport = 5104 });

	/* the filter on VLANs: reject answered tagged, in v300 and out v300 rules */
	SEED("vlan filter reject tcp v100 (answer tagged)", { V(100, 5), .src = "10.0.10.2", .dst = "10.0.6.9", .proto = IPPROTO_TCP, .sport = 3, .dport = FZ_TCP_REJECT, .tos = 0x10 });
	SEED("vlan filter reject tcp6 v200 (answer tagged)", { V(200, 4), .family = 6, .src = "2001:db8:20::2", .dst = "2001:db8:5::2", .proto = IPPROTO_TCP, .sport = 3, .dport = FZ_TCP_REJECT });
	SEED("vlan filter drop in v300", { V(300, 0), .src = "10.0.30.2", .dst = "10.0.6.9", .sport = 3, .dport = FZ_UDP_DROP_IN });
	SEED("vlan filter in v300 rule, from v100", { V(100, 0), .src = "10.0.10.2", .dst = "10.0.6.9", .sport = 3, .dport = FZ_UDP_DROP_IN });
	SEED("vlan filter drop out v300", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.31.5", .proto = IPPROTO_TCP, .sport = 3, .dport = FZ_TCP_DROP_OUT });
	SEED("vlan filter drop out v300, from v100", { V(100, 1), .src = "10.0.10.2", .dst = "10.0.31.5", .proto = IPPROTO_TCP, .sport = 3, .dport = FZ_TCP_DROP_OUT });
	SEED("vlan filter drop src v100", { V(100, 0), .src = FZ_BAD4, .dst = "10.0.6.9", .sport = 3, .dport = 4 });

	/* to the kernel with the tag it came with */
	SEED("vlan oversize DF v100 -> v300", { V(100, 3), .src = "10.0.10.2", .dst = "10.9.30.5", .sport = 4107, .dport = 53, .plen = 1400, .df = 1 });
	SEED("vlan oversize v100 -> v300", { V(100, 3), .src = "10.0.10.2", .dst = "10.9.30.5", .sport = 4108, .dport = 53, .plen = 1400 });
	SEED("vlan ipv4 options v100", { V(100, 3), .src = "10.0.10.2", .dst = "10.0.6.9", .sport = 4109, .dport = 53, .opts = 4 });
	SEED("vlan ipv6 hop-by-hop v100", { V(100, 3), .family = 6, .src = "2001:db8:10::2", .dst = "2001:db8:5::2", .sport = 4110, .dport = 53, .ext = 1 });
	SEED("vlan ipv4 fragment v300 -> v200 masq", { V(300, 2), .src = "10.0.30.2", .dst = "192.168.200.5", .sport = 4111, .dport = 53, .mf = 1, .plen = 64 });
	SEED("vlan to the router v100", { V(100, 3), .src = "10.0.10.2", .dst = "10.0.10.1", .sport = 4112, .dport = 53 });
	SEED("vlan ttl 1 v100", { V(100, 3), .src = "10.0.10.2", .dst = "10.0.6.9", .sport = 4113, .dport = 53, .ttl = 1 });
	SEED("vlan no neighbour v300", { V(300, 0), .src = "10.0.30.2", .dst = "10.0.30.77", .sport = 4114, .dport = 53 });
	SEED("vlan broadcast v100", { V(100, 0), .src = "10.0.10.2", .dst = "10.0.10.255", .sport = 4115, .dport = 53, .dmac = bcast });
	SEED("vlan unknown VID", { V(FZ_VID_UNKNOWN, 2), .src = "10.0.1.2", .dst = "10.0.6.9", .sport = 1, .dport = 53 });
	SEED("vlan unknown VID ipv6", { V(FZ_VID_UNKNOWN, 0), .family = 6, .src = "2001:db8:1::2", .dst = "2001:db8:5::2", .sport = 1, .dport = 53 });
	SEED("vlan VID 0 (priority tag)", { V(0, 3), .src = "10.0.1.2", .dst = "10.0.6.9", .sport = 1, .dport = 53 });
	SEED("vlan tagged on a port without VLANs", { .dev = 3, .tag = FZ_TCI(100, 0), .src = "10.0.5.2", .dst = "10.0.1.2", .sport = 1, .dport = 53 });
	SEED("QinQ 802.1ad", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .sport = 1, .dport = 53, .tag = 100, .tag2 = 200 });
	SEED("QinQ stacked 802.1Q", { .dev = 0, .src = "10.0.10.2", .dst = "10.0.6.9", .sport = 1, .dport = 53, .tag = 100, .tag2 = 100, .tpid2 = 0x8100 });
	SEED("802.1ad alone", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .sport = 1, .dport = 53, .tag2 = 100 });
	SEED("vlan truncated tag", { V(100, 0), .src = "10.0.10.2", .dst = "10.0.6.9", .sport = 1, .dport = 53, .trunc = 16 });
	SEED("vlan tag and no more", { V(100, 0), .src = "10.0.10.2", .dst = "10.0.6.9", .sport = 1, .dport = 53, .trunc = 18 });
	SEED("vlan truncated ipv4 header", { V(100, 0), .src = "10.0.10.2", .dst = "10.0.6.9", .sport = 1, .dport = 53, .trunc = 30 });
	SEED("QinQ truncated inner tag", { .dev = 0, .src = "10.0.1.2", .dst = "10.0.6.9", .sport = 1, .dport = 53, .tag = 100, .tag2 = 100, .tpid2 = 0x8100, .trunc = 20 });
#undef V
#undef SEED
	return n;
}

#endif /* XDPR_FUZZ_ORACLE_H */
