// SPDX-License-Identifier: GPL-2.0
/*
 * test_route.c - the route map (xdpr_rtdir / xdpr_rtrec) in xdpr_main, one
 * BPF_PROG_TEST_RUN per case, against the real kernel FIB.
 *
 * In a private network namespace: veths r0 (ingress), r1 and r2 (egress,
 * xdpr's) and r3 (not xdpr's), static neighbours, kernel routes that the
 * route map overrides or leaves alone.  The test builds each slot's table
 * with the loader's own builder (xdpr_rt_make_slot: lookup index and
 * records), installs it in xdpr_rtdir/xdpr_rtrec and sets XDPR_CFG_ROUTES.  Each case crafts one
 * frame, runs the program once and checks
 *   - the verdict and that exactly its reason counter moved (ingress slot),
 *   - that exactly the route it names counted it (one packet, the frame's
 *     bytes, summed over CPUs) and no other route moved,
 *   - the bytes out: forwarded frames carry the gateway's MAC, the egress
 *     MAC, TTL / hop limit - 1 and a valid IPv4 checksum, and are otherwise
 *     identical; anything else comes back untouched.
 * Then: ECMP spread and stickiness, the live slot switch, the XDPR_CFG_ROUTES
 * switch, and per-CPU route counters.  TAP on stdout; exit 1 on failure.
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

#define PAYLOAD   32
#define PEER_MAC  "02:00:00:00:01:02"  /* c0: where test frames come from */
#define NH_A      "02:00:00:00:02:02"  /* 10.0.2.2, 2001:db8:2::2 on r1 */
#define NH_B      "02:00:00:00:02:04"  /* 10.0.2.4, 2001:db8:2::4 on r1 */
#define NH_LL     "02:00:00:00:02:0e"  /* fe80::2 on r1 */
#define NH_C      "02:00:00:00:03:02"  /* 10.0.3.2, 2001:db8:3::2 on r2 */
#define NH_D      "02:00:00:00:04:02"  /* 10.0.4.2 on r3 (not xdpr's) */
#define NH8_FMT   "02:00:00:00:08:%02x" /* 10.0.2.(16+i) on r1: eight ECMP next hops */

struct dev {
	const char *name, *peer, *mac, *peer_mac;
	__u32 slot;  /* 0: not registered in xdpr_ifaces */
	__u32 ifindex;
	__u8 hw[6];
};

static struct dev devs[] = {
#define DEV(n, p, m, pm, s) { .name = n, .peer = p, .mac = m, .peer_mac = pm, .slot = s }
	DEV("r0", "c0", "02:00:00:00:01:01", PEER_MAC, 1),            /* ingress */
	DEV("r1", "s1", "02:00:00:00:02:01", "02:00:00:00:02:09", 2), /* egress A, B, LL */
	DEV("r2", "s2", "02:00:00:00:03:01", "02:00:00:00:03:09", 3), /* egress C */
	DEV("r3", "s3", "02:00:00:00:04:01", "02:00:00:00:04:09", 0), /* not xdpr's */
};
#define NDEVS ((int)(sizeof(devs) / sizeof(devs[0])))

static const char *const setup_cmds[] = {
	"ip addr add 10.0.1.1/24 dev r0",
	"ip addr add 10.0.2.1/24 dev r1",
	"ip addr add 10.0.3.1/24 dev r2",
	"ip addr add 10.0.4.1/24 dev r3",
	"ip -6 addr add 2001:db8:1::1/64 dev r0 nodad",
	"ip -6 addr add 2001:db8:2::1/64 dev r1 nodad",
	"ip -6 addr add 2001:db8:3::1/64 dev r2 nodad",
	"ip neigh replace 10.0.2.2 lladdr " NH_A " dev r1 nud permanent",
	"ip neigh replace 10.0.2.4 lladdr " NH_B " dev r1 nud permanent",
	"ip neigh replace 10.0.3.2 lladdr " NH_C " dev r2 nud permanent",
	"ip neigh replace 10.0.4.2 lladdr " NH_D " dev r3 nud permanent",
	"ip -6 neigh replace 2001:db8:2::2 lladdr " NH_A " dev r1 nud permanent",
	"ip -6 neigh replace 2001:db8:2::4 lladdr " NH_B " dev r1 nud permanent",
	"ip -6 neigh replace fe80::2 lladdr " NH_LL " dev r1 nud permanent",
	"ip -6 neigh replace 2001:db8:3::2 lladdr " NH_C " dev r2 nud permanent",
	/* kernel routes: some the route map overrides, some it leaves to the FIB */
	"ip route add 203.0.113.0/24 via 10.0.2.2 dev r1",   /* map: blackhole */
	"ip route add 100.64.1.0/24 via 10.0.2.2 dev r1",    /* map: pass */
	"ip route add 192.0.2.0/24 via 10.0.3.2 dev r2",     /* map: 192.0.2.0/25 via A */
	"ip -6 route add 2001:db8:dead::/48 via 2001:db8:2::2 dev r1",
	"ip -6 route add 2001:db8:ff::/48 via 2001:db8:2::2 dev r1",
	"ip -6 route add 2001:db8:400::/48 via 2001:db8:3::2 dev r2", /* map: /56 via A */
};

/* ---- the route map ---- */

/*
 * Given to the table builder as the router's own addresses: inside map
 * routes (192.0.2.0/25 via A, 2001:db8:100:1::/64 via B), so the map must
 * leave them to the FIB.
 */
#define ROUTER_ADDR4 "192.0.2.2"
#define ROUTER_ADDR6 "2001:db8:100:1::5"

struct rdef {
	const char *prefix;
	int action;               /* enum xdpr_rt_action */
	const char *nh[XDPR_RT_MAX_NH][2]; /* gateway, device */
	__u32 id;                 /* counter slot */
};

#define VIA1(g, d) XDPR_RT_VIA, { { g, d } }
#define VIA2(g1, d1, g2, d2) XDPR_RT_VIA, { { g1, d1 }, { g2, d2 } }
#define BLACKHOLE XDPR_RT_BLACKHOLE, { { NULL } }
#define PASS XDPR_RT_PASS, { { NULL } }

/* Slot 0, the live table.  Ids are spread out, up to the last one. */
static struct rdef routes[] = {
	{ "198.51.0.0/16", VIA1("10.0.2.2", "r1"), 11 },
	{ "198.51.100.0/24", VIA1("10.0.2.4", "r1"), 12 },
	{ "198.51.100.99/32", VIA1("10.0.3.2", "r2"), 13 },
	{ "192.0.2.0/25", VIA1("10.0.2.2", "r1"), 14 },
	{ "203.0.113.0/24", BLACKHOLE, 15 },
	{ "100.64.1.0/24", PASS, 16 },
	{ "100.64.2.0/24", VIA1("10.0.2.3", "r1"), 17 },      /* no neighbour */
	{ "100.64.3.0/24", VIA1("10.0.3.2", "r1"), 18 },      /* gateway is behind r2 */
	{ "100.64.5.0/24", VIA1("10.77.0.1", "r1"), 19 },     /* gateway nowhere */
	{ "100.64.6.0/24", VIA1("10.0.4.2", "r3"), 20 },      /* egress not xdpr's */
	{ "100.64.4.0/24", VIA2("10.0.2.2", "r1", "10.0.3.2", "r2"), 21 },   /* ECMP, 2 devices */
	{ "100.64.7.0/24", VIA2("10.0.2.2", "r1", "10.0.2.4", "r1"), 22 },   /* ECMP, 1 link */
	{ "100.64.8.0/24", XDPR_RT_VIA, { { "10.0.2.16", "r1" }, { "10.0.2.17", "r1" },
	  { "10.0.2.18", "r1" }, { "10.0.2.19", "r1" }, { "10.0.2.20", "r1" }, { "10.0.2.21", "r1" },
	  { "10.0.2.22", "r1" }, { "10.0.2.23", "r1" } }, 23 },               /* ECMP, 8 */
	{ "100.64.9.0/24", BLACKHOLE, XDPR_RT_IDS - 1 },                   /* the last id */
	/* across the index's strides: shorter than its 16-bit first level, inside a group, a /31 */
	{ "172.16.0.0/12", BLACKHOLE, 24 },
	{ "172.20.0.0/20", VIA1("10.0.2.2", "r1"), 25 },
	{ "172.20.7.0/31", VIA1("10.0.3.2", "r2"), 26 },
	{ "2001:db8:500::/40", BLACKHOLE, 41 },
	{ "2001:db8:500:8000::/49", VIA1("2001:db8:2::2", "r1"), 42 },
	{ "2001:db8:100::/48", VIA1("2001:db8:2::2", "r1"), 31 },
	{ "2001:db8:100:1::/64", VIA1("2001:db8:2::4", "r1"), 32 },
	{ "2001:db8:100:1::99/128", VIA1("2001:db8:3::2", "r2"), 33 },
	{ "2001:db8:101::/48", VIA1("fe80::2", "r1"), 34 },              /* link-local gateway */
	{ "2001:db8:400::/56", VIA1("2001:db8:2::2", "r1"), 35 },
	{ "2001:db8:dead::/48", BLACKHOLE, 36 },
	{ "2001:db8:ff::/48", PASS, 37 },
	{ "2001:db8:200::/48", VIA1("2001:db8:2::3", "r1"), 38 },        /* no neighbour */
	{ "2001:db8:201::/48", VIA1("2001:db8:3::2", "r1"), 39 },        /* gateway behind r2 */
	{ "2001:db8:300::/48", VIA2("2001:db8:2::2", "r1", "2001:db8:3::2", "r2"), 40 },
};
#define NROUTES ((int)(sizeof(routes) / sizeof(routes[0])))

/* Slot 1: what a bulk load would swap in. */
static struct rdef routes1[] = {
	{ "198.51.0.0/16", BLACKHOLE, 101 },
	{ "2001:db8:100::/48", BLACKHOLE, 102 },
};
#define NROUTES1 ((int)(sizeof(routes1) / sizeof(routes1[0])))

struct tcase {
	const char *name;
	int ip;                    /* 4 or 6 */
	const char *src, *dst;
	__u8 proto;                /* IPPROTO_UDP (default), TCP, ICMP, ICMPV6 */
	__u8 ttl;                  /* default 64 */
	__u16 sport;               /* default 40000 */
	__u16 csum_in;             /* IPv4: force this input header checksum */
	int reason;
	const char *nh, *out;      /* forwarded: next hop MAC and egress device */
	const char *route;         /* the route that must count the frame; NULL: none */
	int rslot;                 /* ... in the slot 0 table (routes) or slot 1 (routes1) */
};

/* ---- network namespace ---- */

static struct dev *dev_get(const char *name)
{
	for (int i = 0; i < NDEVS; i++)
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
		{ "net/ipv6/conf/all/accept_dad", "0" },
		{ "net/ipv6/conf/default/accept_dad", "0" },
	};

	if (unshare(CLONE_NEWNET))
		die("unshare(CLONE_NEWNET): %s", strerror(errno));
	for (size_t i = 0; i < sizeof(sysctls) / sizeof(sysctls[0]); i++)
		if (sysctl_set(sysctls[i][0], sysctls[i][1]))
			die("cannot set %s", sysctls[i][0]);
	if (sh("/sbin/ip link set lo up"))
		die("cannot bring lo up");
	for (int i = 0; i < NDEVS; i++) {
		struct dev *d = &devs[i];

		if (sh("/sbin/ip link add %s address %s type veth peer name %s address %s",
		       d->name, d->mac, d->peer, d->peer_mac) ||
		    sh("/sbin/ip link set %s up && /sbin/ip link set %s up", d->name, d->peer))
			die("cannot create veth %s", d->name);
		d->ifindex = if_nametoindex(d->name);
		dev_mac(d->name, d->hw);
	}
	for (size_t i = 0; i < sizeof(setup_cmds) / sizeof(setup_cmds[0]); i++)
		if (sh("/sbin/%s", setup_cmds[i]))
			die("setup failed: %s", setup_cmds[i]);
	for (int i = 0; i < XDPR_RT_MAX_NH; i++)
		if (sh("/sbin/ip neigh replace 10.0.2.%d lladdr " NH8_FMT " dev r1 nud permanent",
		       16 + i, 0x10 + i))
			die("cannot add the neighbour 10.0.2.%d", 16 + i);
	/* the link-local route of r1 must be there for the fe80::2 gateway */
	for (int i = 0; i < 50 && sh("/sbin/ip -6 route show dev r1 | grep -q '^fe80::/64'"); i++)
		usleep(100 * 1000);
}

static void register_devs(struct xdpr_bpf *skel)
{
	int tx = bpf_map__fd(skel->maps.xdpr_tx_ports), ifs = bpf_map__fd(skel->maps.xdpr_ifaces);

	for (int i = 0; i < NDEVS; i++) {
		struct dev *d = &devs[i];
		struct xdpr_iface cfg = { .slot = d->slot, .flags = XDPR_IF_XMIT };

		if (!d->slot)
			continue;
		memcpy(cfg.mac, d->hw, 6);
		if (bpf_map_update_elem(tx, &d->ifindex, &d->ifindex, BPF_ANY) ||
		    bpf_map_update_elem(ifs, &d->ifindex, &cfg, BPF_ANY))
			die("cannot register %s: %s", d->name, strerror(errno));
	}
	ifaces_changed(bpf_map__fd(skel->maps.xdpr_if_gen));
}

/* ---- route tables ---- */

static int prog_fd, stats_fd, cfg_fd, rtstats_fd, ncpus;

/* The prefix of a route of the test into a record; returns 1 for IPv6. */
static int rdef_rec(const struct rdef *r, struct xdpr_rtrec *rec)
{
	char buf[64], *slash;
	int v6;

	snprintf(buf, sizeof(buf), "%s", r->prefix);
	slash = strchr(buf, '/');
	if (!slash)
		die("route %s has no length", r->prefix);
	*slash = 0;
	memset(rec, 0, sizeof(*rec));
	rec->plen = atoi(slash + 1);
	v6 = strchr(buf, ':') != NULL;
	rec->family = v6 ? AF_INET6 : AF_INET;
	if (inet_pton(rec->family, buf, rec->addr) != 1)
		die("bad prefix %s in the test", r->prefix);
	return v6;
}

static void rdef_value(const struct rdef *r, int v6, struct xdpr_route *v)
{
	memset(v, 0, sizeof(*v));
	v->id = r->id;
	v->action = r->action;
	for (int i = 0; i < XDPR_RT_MAX_NH && r->action == XDPR_RT_VIA && r->nh[i][0]; i++) {
		struct xdpr_nh *nh = &v->nh[v->nnh++];

		if (inet_pton(v6 ? AF_INET6 : AF_INET, r->nh[i][0], nh->gw) != 1)
			die("bad gateway %s in the test", r->nh[i][0]);
		nh->ifindex = dev_get(r->nh[i][1])->ifindex;
		/*
		 * Link-local gateways carry their MAC, as the loader resolves it
		 * from the neighbour table (bpf_fib_lookup never resolves them).
		 */
		if (v6 && nh->gw[0] == 0xfe && (nh->gw[1] & 0xc0) == 0x80) {
			unsigned int m[6];

			if (sscanf(NH_LL, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
				die("bad NH_LL");
			for (int b = 0; b < 6; b++)
				nh->mac[b] = m[b];
			nh->flags |= XDPR_NH_MAC;
		}
	}
}

static const struct rdef *route_get(const char *prefix, int slot)
{
	const struct rdef *rs = slot ? routes1 : routes;
	int n = slot ? NROUTES1 : NROUTES;

	for (int i = 0; i < n; i++)
		if (!strcmp(rs[i].prefix, prefix))
			return &rs[i];
	die("no route %s in the slot %d table of the test", prefix, slot);
	return NULL;
}

/* Sum of next hops over the distinct next hop lists of a table. */
static __u32 distinct_hops(const struct xdpr_rtrec *rec, int n)
{
	__u32 sum = 0;

	for (int i = 0; i < n; i++) {
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = rec[j].r.nnh == rec[i].r.nnh &&
			       !memcmp(rec[j].r.nh, rec[i].r.nh, rec[i].r.nnh * sizeof(rec[i].r.nh[0]));
		if (!seen)
			sum += rec[i].r.nnh;
	}
	return sum;
}

static __u32 map_entries(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		die("cannot read map info: %s", strerror(errno));
	return info.max_entries;
}

/* Next hop entries of the slot's table (its xdpr_rtnh map), set by fill_slot. */
static __u32 slot_hops[2], slot_hops_want[2];

static void fill_slot(struct xdpr_bpf *skel, __u32 slot, const struct rdef *rs, int n)
{
	int outer[XDPR_RT_MAPS] = { bpf_map__fd(skel->maps.xdpr_rtdir), bpf_map__fd(skel->maps.xdpr_rtrec),
				    bpf_map__fd(skel->maps.xdpr_rtnh) };
	struct xdpr_rtrec rec[64];
	struct xdpr x = {};
	int fd[XDPR_RT_MAPS];

	if (n > (int)(sizeof(rec) / sizeof(rec[0])))
		die("too many routes in the test");
	for (int i = 0; i < n; i++) {
		int v6 = rdef_rec(&rs[i], &rec[i]);

		rdef_value(&rs[i], v6, &rec[i].r);
	}
	/* addresses the builder is told are the router's (as local_addrs() would) */
	struct xdpr_rtent local[2] = { { .family = AF_INET }, { .family = AF_INET6 } };

	if (inet_pton(AF_INET, ROUTER_ADDR4, local[0].addr) != 1 ||
	    inet_pton(AF_INET6, ROUTER_ADDR6, local[1].addr) != 1)
		die("bad router addresses in the test");
	if (xdpr_rt_make_slot(&x, rec, n, local, 2, fd))
		die("cannot build the slot %u table: %s", slot, x.err);
	for (int i = 0; i < XDPR_RT_MAPS; i++) {
		if (bpf_map_update_elem(outer[i], &slot, &fd[i], BPF_ANY))
			die("cannot install the table in slot %u: %s", slot, strerror(errno));
		if (i == XDPR_RT_NH)
			slot_hops[slot] = map_entries(fd[i]);
		close(fd[i]);
	}
	slot_hops_want[slot] = distinct_hops(rec, n);
}

static void cfg_set(__u32 flags, __u32 slot)
{
	struct xdpr_cfg c = { .flags = flags, .tcp_est = XDPR_DEF_TCP_EST,
			      .tcp_trans = XDPR_DEF_TCP_TRANS, .udp = XDPR_DEF_UDP,
			      .icmp = XDPR_DEF_ICMP, .holddown = XDPR_DEF_HOLDDOWN,
			      .host_limit = XDPR_DEF_HOST_LIMIT, .rt_slot = slot,
			      .nat_sess = XDPR_NAT_DEF_SESS };
	__u32 zero = 0;

	if (bpf_map_update_elem(cfg_fd, &zero, &c, BPF_ANY))
		die("cannot write xdpr_cfg: %s", strerror(errno));
}

/* ---- frames ---- */

static void build(struct frame *f, const struct tcase *c)
{
	__u8 proto = c->proto ?: IPPROTO_UDP;
	__u16 sport = c->sport ?: 40000;
	int hl = c->ip == 6 ? 40 : 20, len = hl + l4_hdr_len(proto) + PAYLOAD;

	memset(f, 0, sizeof(*f));
	memcpy(f->b, dev_get("r0")->hw, 6);
	mac_parse(PEER_MAC, f->b + 6);
	f->l3 = ETH_HLEN;
	f->l4 = f->l3 + hl;
	f->len = f->l3 + len;
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
	} else {
		struct ipv6hdr *ip = ip6(f);

		put16(f->b + 12, ETH_P_IPV6);
		ip->version = 6, ip->payload_len = htons(len - hl), ip->nexthdr = proto;
		ip->hop_limit = c->ttl ?: 64;
		if (inet_pton(AF_INET6, c->src ?: "2001:db8:1::2", &ip->saddr) != 1 ||
		    inet_pton(AF_INET6, c->dst, &ip->daddr) != 1)
			die("bad IPv6 address in case \"%s\"", c->name);
		build_l4(f, proto, sport, len - hl, sum16(&ip->saddr, 32, proto + len - hl));
	}
}

/* A forwarded frame, computed from scratch (not incrementally). */
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

/* ---- running ---- */

static const char *verdict_name(__u32 v)
{
	static const char *const names[] = { "XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX",
					     "XDP_REDIRECT" };

	return v < 5 ? names[v] : "XDP_?";
}

/* One route's counters: per CPU into percpu (ncpus entries, may be NULL), summed. */
static struct xdpr_ctr read_route(__u32 id, struct xdpr_ctr *percpu)
{
	struct xdpr_ctr *pc = calloc(ncpus, sizeof(*pc)), sum = { 0, 0 };

	if (!pc || bpf_map_lookup_elem(rtstats_fd, &id, pc))
		die("cannot read xdpr_rt_stats[%u]: %s", id, strerror(errno));
	for (int c = 0; c < ncpus; c++) {
		sum.packets += pc[c].packets;
		sum.bytes += pc[c].bytes;
	}
	if (percpu)
		memcpy(percpu, pc, ncpus * sizeof(*pc));
	free(pc);
	return sum;
}

/* Every route id of both tables, in a fixed order. */
#define NALL (NROUTES + NROUTES1)
static __u32 all_id(int i) { return i < NROUTES ? routes[i].id : routes1[i - NROUTES].id; }
static const char *all_prefix(int i)
{
	return i < NROUTES ? routes[i].prefix : routes1[i - NROUTES].prefix;
}

static void read_routes(struct xdpr_ctr *c)
{
	for (int i = 0; i < NALL; i++)
		c[i] = read_route(all_id(i), NULL);
}

static int run(const struct frame *f, struct frame *out, __u32 *verdict)
{
	return run_frame(prog_fd, dev_get("r0")->ifindex, f, out, verdict);
}

static bool check_ip4_csum(struct frame *want, struct frame *got)
{
	__u16 cw = ntohs(ip4(want)->check), cg = ntohs(ip4(got)->check);
	bool valid = fold(sum16(ip4(got), 20, 0)) == 0xffff;

	if (!valid || cg != cw)
		note("ip4 checksum out: 0x%04x (%s), expected 0x%04x", cg, valid ? "valid" : "INVALID",
		     cw);
	return valid && cg == cw;
}

/* Which next hop (by MAC) a forwarded frame went to, for the notes. */
static const char *mac_str(const __u8 *m)
{
	static char s[4][18];
	static int k;

	k = (k + 1) % 4;
	snprintf(s[k], sizeof(s[k]), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
		 m[5]);
	return s[k];
}

/* Run one case, check verdict, reason counters, route counters and bytes. */
static bool run_case(const struct tcase *c)
{
	struct xdpr_ctr before[XDPR_REASON_MAX], after[XDPR_REASON_MAX];
	struct xdpr_ctr rb[NALL], ra[NALL];
	struct frame f, out, want;
	__u32 verdict = 0, want_id = 0;
	bool ok = true;
	int err;

	if (c->route)
		want_id = route_get(c->route, c->rslot)->id;
	build(&f, c);
	read_slot_sum(stats_fd, ncpus, 1, before);
	read_routes(rb);
	err = run(&f, &out, &verdict);
	read_slot_sum(stats_fd, ncpus, 1, after);
	read_routes(ra);
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
		__u64 wp = r == c->reason, wb = r == c->reason ? (__u64)f.len : 0;

		if (dp != wp || db != wb) {
			note("r0 %s: +%llu packets +%llu bytes, expected +%llu +%llu",
			     xdpr_reason_name(r), (unsigned long long)dp, (unsigned long long)db,
			     (unsigned long long)wp, (unsigned long long)wb);
			ok = false;
		}
	}
	for (int i = 0; i < NALL; i++) {
		__u64 dp = ra[i].packets - rb[i].packets, db = ra[i].bytes - rb[i].bytes;
		bool mine = want_id && all_id(i) == want_id;
		__u64 wp = mine, wb = mine ? (__u64)f.len : 0;

		if (dp != wp || db != wb) {
			note("route %s (id %u): +%llu packets +%llu bytes, expected +%llu +%llu",
			     all_prefix(i), all_id(i), (unsigned long long)dp, (unsigned long long)db,
			     (unsigned long long)wp, (unsigned long long)wb);
			ok = false;
		}
	}
	if (c->reason == XDPR_FWD) {
		__u8 nh[6];

		mac_parse(c->nh, nh);
		expect_fwd(&want, &f, nh, dev_get(c->out)->hw);
		if (out.len >= 12 && memcmp(out.b, nh, 6))
			note("went to %s from %s, expected %s from %s (%s)", mac_str(out.b),
			     mac_str(out.b + 6), c->nh, mac_str(dev_get(c->out)->hw), c->out);
		if (c->ip == 4)
			ok &= check_ip4_csum(&want, &out);
	} else {
		want = f;
	}
	ok &= same_bytes(&want, &out);
	return ok;
}

/* ---- cases ---- */

#define FWD(m, d)  .reason = XDPR_FWD, .nh = m, .out = d
#define R(x)       .reason = XDPR_##x
#define RT(p)      .route = p

static const struct tcase cases[] = {
	/* IPv4: match, most specific wins, no match */
	{ "ip4 /16 route, outside its /24: via A (10.0.2.2 on r1)", .ip = 4, .dst = "198.51.7.1",
	  FWD(NH_A, "r1"), RT("198.51.0.0/16") },
	{ "ip4 inside the /24 within the /16: most specific wins, via B (10.0.2.4)", .ip = 4,
	  .dst = "198.51.100.7", FWD(NH_B, "r1"), RT("198.51.100.0/24") },
	{ "ip4 /32 inside the /24 inside the /16: via C (10.0.3.2 on r2)", .ip = 4,
	  .dst = "198.51.100.99", FWD(NH_C, "r2"), RT("198.51.100.99/32") },
	{ "ip4 next to the /32 (198.51.100.98): the /24 again", .ip = 4, .dst = "198.51.100.98",
	  FWD(NH_B, "r1"), RT("198.51.100.0/24") },
	{ "ip4 last address of the /16: via A", .ip = 4, .dst = "198.51.255.255", FWD(NH_A, "r1"),
	  RT("198.51.0.0/16") },
	{ "ip4 /12 (shorter than the first level): its last address dropped", .ip = 4,
	  .dst = "172.31.255.255", R(DROP_ROUTE_BLACKHOLE), RT("172.16.0.0/12") },
	{ "ip4 just outside the /12 (172.32.0.1): no match -> pass_not_fwded", .ip = 4,
	  .dst = "172.32.0.1", R(PASS_FIB_NOT_FWDED) },
	{ "ip4 /20 inside the /12: its last address via A", .ip = 4, .dst = "172.20.15.255",
	  FWD(NH_A, "r1"), RT("172.20.0.0/20") },
	{ "ip4 next to the /20 (172.20.16.1): the /12 drops it", .ip = 4, .dst = "172.20.16.1",
	  R(DROP_ROUTE_BLACKHOLE), RT("172.16.0.0/12") },
	{ "ip4 /31 inside the /20: its second address via C on r2", .ip = 4, .dst = "172.20.7.1",
	  FWD(NH_C, "r2"), RT("172.20.7.0/31") },
	{ "ip4 next to the /31 (172.20.7.2): the /20 again", .ip = 4, .dst = "172.20.7.2",
	  FWD(NH_A, "r1"), RT("172.20.0.0/20") },
	{ "ip4 just outside the /16 (198.52.0.1): no match, no FIB route -> pass_not_fwded",
	  .ip = 4, .dst = "198.52.0.1", R(PASS_FIB_NOT_FWDED) },
	{ "ip4 no match: falls to the FIB, forwarded via C on r2", .ip = 4, .dst = "10.0.3.2",
	  FWD(NH_C, "r2") },
	{ "ip4 map /25 over a FIB /24: inside the /25 the map wins (A on r1)", .ip = 4,
	  .dst = "192.0.2.1", FWD(NH_A, "r1"), RT("192.0.2.0/25") },
	{ "ip4 map /25 over a FIB /24: outside the /25 the FIB route (C on r2)", .ip = 4,
	  .dst = "192.0.2.200", FWD(NH_C, "r2") },
	{ "ip4 router's own address inside the /25 (" ROUTER_ADDR4 "): not the map's, FIB via C",
	  .ip = 4, .dst = ROUTER_ADDR4, FWD(NH_C, "r2") },
	{ "ip4 via route, TCP: forwarded", .ip = 4, .dst = "198.51.7.1", .proto = IPPROTO_TCP,
	  FWD(NH_A, "r1"), RT("198.51.0.0/16") },
	{ "ip4 via route, ICMP: forwarded", .ip = 4, .dst = "198.51.100.7", .proto = IPPROTO_ICMP,
	  FWD(NH_B, "r1"), RT("198.51.100.0/24") },
	{ "ip4 via route, checksum 0xfeff -> 0x0000 after the TTL decrement", .ip = 4,
	  .dst = "198.51.7.1", .csum_in = 0xfeff, FWD(NH_A, "r1"), RT("198.51.0.0/16") },
	{ "ip4 via route, TTL 2: forwarded with TTL 1", .ip = 4, .dst = "198.51.7.1", .ttl = 2,
	  FWD(NH_A, "r1"), RT("198.51.0.0/16") },
	/* IPv4 actions */
	{ "ip4 blackhole (over a FIB route): XDP_DROP drop_blackhole", .ip = 4,
	  .dst = "203.0.113.5", R(DROP_ROUTE_BLACKHOLE), RT("203.0.113.0/24") },
	{ "ip4 blackhole, TCP: XDP_DROP drop_blackhole", .ip = 4, .dst = "203.0.113.255",
	  .proto = IPPROTO_TCP, R(DROP_ROUTE_BLACKHOLE), RT("203.0.113.0/24") },
	{ "ip4 blackhole, TTL 1: still dropped", .ip = 4, .dst = "203.0.113.5", .ttl = 1,
	  R(DROP_ROUTE_BLACKHOLE), RT("203.0.113.0/24") },
	{ "ip4 blackhole counted on the last route id", .ip = 4, .dst = "100.64.9.1",
	  R(DROP_ROUTE_BLACKHOLE), RT("100.64.9.0/24") },
	{ "ip4 pass (over a FIB route): XDP_PASS pass_route", .ip = 4, .dst = "100.64.1.1",
	  R(PASS_ROUTE), RT("100.64.1.0/24") },
	{ "ip4 via gateway without neighbour: pass_no_neigh", .ip = 4, .dst = "100.64.2.1",
	  R(PASS_FIB_NO_NEIGH), RT("100.64.2.0/24") },
	{ "ip4 via gateway reached through r2, route says r1: pass_route_gw", .ip = 4,
	  .dst = "100.64.3.1", R(PASS_ROUTE_GW), RT("100.64.3.0/24") },
	{ "ip4 via gateway with no route at all: pass_route_gw", .ip = 4, .dst = "100.64.5.1",
	  R(PASS_ROUTE_GW), RT("100.64.5.0/24") },
	{ "ip4 via route out of a device xdpr does not drive: pass_egress_not_xdpr", .ip = 4,
	  .dst = "100.64.6.1", R(PASS_EGRESS_NOT_XDPR), RT("100.64.6.0/24") },
	{ "ip4 via route, TTL 1: pass_ttl (the kernel answers)", .ip = 4, .dst = "198.51.7.1",
	  .ttl = 1, R(PASS_TTL), RT("198.51.0.0/16") },
	/* IPv6 */
	{ "ip6 /48 route, outside its /64: via A (2001:db8:2::2 on r1)", .ip = 6,
	  .dst = "2001:db8:100:2::1", FWD(NH_A, "r1"), RT("2001:db8:100::/48") },
	{ "ip6 inside the /64 within the /48: most specific wins, via B", .ip = 6,
	  .dst = "2001:db8:100:1::1", FWD(NH_B, "r1"), RT("2001:db8:100:1::/64") },
	{ "ip6 /128 inside the /64: via C (2001:db8:3::2 on r2)", .ip = 6,
	  .dst = "2001:db8:100:1::99", FWD(NH_C, "r2"), RT("2001:db8:100:1::99/128") },
	/*
	 * A link-local gateway: bpf_fib_lookup answers NOT_FWDED for any
	 * fe80::/10 destination, so resolving it there cannot work.
	 */
	{ "ip6 last /64 of the /48 with the link-local gateway: via fe80::2", .ip = 6,
	  .dst = "2001:db8:101:ffff::1", FWD(NH_LL, "r1"), RT("2001:db8:101::/48") },
	{ "ip6 /49 in the /40 (2001:db8:500:8000::1): via A", .ip = 6, .dst = "2001:db8:500:8000::1",
	  FWD(NH_A, "r1"), RT("2001:db8:500:8000::/49") },
	{ "ip6 just below the /49 (2001:db8:500:7fff::1): the /40 drops it", .ip = 6,
	  .dst = "2001:db8:500:7fff::1", R(DROP_ROUTE_BLACKHOLE), RT("2001:db8:500::/40") },
	{ "ip6 last /48 of the /40 (2001:db8:5ff:ffff::1): dropped", .ip = 6,
	  .dst = "2001:db8:5ff:ffff::1", R(DROP_ROUTE_BLACKHOLE), RT("2001:db8:500::/40") },
	{ "ip6 just outside the /40 (2001:db8:600::1): no match -> pass_not_fwded", .ip = 6,
	  .dst = "2001:db8:600::1", R(PASS_FIB_NOT_FWDED) },
	{ "ip6 just outside that /48 (2001:db8:102::1): no match, no FIB route -> pass_not_fwded",
	  .ip = 6, .dst = "2001:db8:102::1", R(PASS_FIB_NOT_FWDED) },
	{ "ip6 no match: falls to the FIB, forwarded via C on r2", .ip = 6, .dst = "2001:db8:3::2",
	  FWD(NH_C, "r2") },
	{ "ip6 no match and no FIB route: pass_not_fwded", .ip = 6, .dst = "2001:db8:77::1",
	  R(PASS_FIB_NOT_FWDED) },
	{ "ip6 link-local gateway (fe80::2 dev r1): forwarded to its MAC", .ip = 6,
	  .dst = "2001:db8:101::1", FWD(NH_LL, "r1"), RT("2001:db8:101::/48") },
	{ "ip6 map /56 over a FIB /48: inside the /56 the map wins (A on r1)", .ip = 6,
	  .dst = "2001:db8:400::1", FWD(NH_A, "r1"), RT("2001:db8:400::/56") },
	{ "ip6 map /56 over a FIB /48: outside the /56 the FIB route (C on r2)", .ip = 6,
	  .dst = "2001:db8:400:100::1", FWD(NH_C, "r2") },
	{ "ip6 router's own address inside the /64 (" ROUTER_ADDR6 "): not the map's -> pass_not_fwded",
	  .ip = 6, .dst = ROUTER_ADDR6, R(PASS_FIB_NOT_FWDED) },
	{ "ip6 via route, TCP: forwarded", .ip = 6, .dst = "2001:db8:100:2::1",
	  .proto = IPPROTO_TCP, FWD(NH_A, "r1"), RT("2001:db8:100::/48") },
	{ "ip6 via route, ICMPv6: forwarded", .ip = 6, .dst = "2001:db8:100:2::1",
	  .proto = IPPROTO_ICMPV6, FWD(NH_A, "r1"), RT("2001:db8:100::/48") },
	{ "ip6 blackhole (over a FIB route): XDP_DROP drop_blackhole", .ip = 6,
	  .dst = "2001:db8:dead::1", R(DROP_ROUTE_BLACKHOLE), RT("2001:db8:dead::/48") },
	{ "ip6 pass (over a FIB route): XDP_PASS pass_route", .ip = 6, .dst = "2001:db8:ff::1",
	  R(PASS_ROUTE), RT("2001:db8:ff::/48") },
	{ "ip6 via gateway without neighbour: pass_no_neigh", .ip = 6, .dst = "2001:db8:200::1",
	  R(PASS_FIB_NO_NEIGH), RT("2001:db8:200::/48") },
	{ "ip6 via gateway reached through r2, route says r1: pass_route_gw", .ip = 6,
	  .dst = "2001:db8:201::1", R(PASS_ROUTE_GW), RT("2001:db8:201::/48") },
	{ "ip6 via route, hop limit 1: pass_ttl", .ip = 6, .dst = "2001:db8:100:2::1", .ttl = 1,
	  R(PASS_TTL), RT("2001:db8:100::/48") },
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* ---- ECMP ---- */

#define ECMP_FLOWS 64

/*
 * flows flows that differ in the source port only, each sent twice (all once,
 * then all again): every frame is forwarded to one of the route's next hops
 * (right MACs, TTL, checksum), each flow gets the same one both times, every
 * next hop gets at least min_each flows, and the route counted every frame.
 */
static bool test_ecmp(int ip, const char *dst, const char *prefix, int flows, int min_each)
{
	const struct rdef *r = route_get(prefix, 0);
	struct tcase c = { .name = "ecmp", .ip = ip, .dst = dst };
	int n = 0, seen[XDPR_RT_MAX_NH] = { 0 }, first[256];
	__u8 nh[XDPR_RT_MAX_NH][6], src[XDPR_RT_MAX_NH][6];
	struct xdpr_ctr before = read_route(r->id, NULL), after;
	struct frame f0 = {};
	bool ok = true;

	if (flows > 256)
		die("too many flows");
	for (; n < XDPR_RT_MAX_NH && r->nh[n][0]; n++) {
		char cmd[160], mac[32] = "";
		FILE *p;

		/* the gateway's MAC as the kernel has it */
		snprintf(cmd, sizeof(cmd), "/sbin/ip %s neigh show %s dev %s | awk '{print $3}'",
			 ip == 6 ? "-6" : "-4", r->nh[n][0], r->nh[n][1]);
		p = popen(cmd, "r");
		if (!p || !fgets(mac, sizeof(mac), p))
			die("no neighbour %s", r->nh[n][0]);
		pclose(p);
		mac_parse(mac, nh[n]);
		memcpy(src[n], dev_get(r->nh[n][1])->hw, 6);
	}
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < flows; i++) {
			struct frame f, out, want;
			__u32 verdict = 0;
			int k, err;

			c.sport = 20000 + i;
			build(&f, &c);
			f0 = f;
			err = run(&f, &out, &verdict);
			if (err || verdict != XDP_REDIRECT) {
				note("sport %u: %s", c.sport, err ? strerror(-err) : verdict_name(verdict));
				return false;
			}
			for (k = 0; k < n && memcmp(out.b, nh[k], 6); k++)
				;
			if (k == n) {
				note("sport %u went to %s, not one of the route's next hops", c.sport,
				     mac_str(out.b));
				return false;
			}
			expect_fwd(&want, &f, nh[k], src[k]);
			if (!same_bytes(&want, &out) || (ip == 4 && !check_ip4_csum(&want, &out))) {
				note("sport %u via next hop %d", c.sport, k);
				ok = false;
			}
			if (round == 0) {
				first[i] = k;
				seen[k]++;
			} else if (first[i] != k) {
				note("sport %u: next hop %d, then %d", c.sport, first[i], k);
				ok = false;
			}
		}
	for (int k = 0; k < n; k++) {
		note("next hop %d (%s dev %s): %d of %d flows", k, r->nh[k][0], r->nh[k][1], seen[k],
		     flows);
		ok &= seen[k] >= min_each;
	}
	after = read_route(r->id, NULL);
	if (after.packets - before.packets != (__u64)2 * flows ||
	    after.bytes - before.bytes != (__u64)2 * flows * f0.len) {
		note("route %s counted +%llu packets +%llu bytes, expected +%d +%d", prefix,
		     (unsigned long long)(after.packets - before.packets),
		     (unsigned long long)(after.bytes - before.bytes), 2 * flows, 2 * flows * f0.len);
		ok = false;
	}
	return ok;
}

/* ---- the table switches ---- */

/* rt_slot 1 makes the other table live at once, both families; back to 0 restores. */
static void test_slots(void)
{
	static const struct tcase s1[] = {
		{ "rt_slot 1: 198.51.100.7 hits slot 1's /16 blackhole", .ip = 4,
		  .dst = "198.51.100.7", R(DROP_ROUTE_BLACKHOLE), RT("198.51.0.0/16"), .rslot = 1 },
		{ "rt_slot 1: 203.0.113.5 (a blackhole in slot 0 only) goes to the FIB, via A",
		  .ip = 4, .dst = "203.0.113.5", FWD(NH_A, "r1") },
		{ "rt_slot 1: 2001:db8:100:1::1 hits slot 1's /48 blackhole", .ip = 6,
		  .dst = "2001:db8:100:1::1", R(DROP_ROUTE_BLACKHOLE), RT("2001:db8:100::/48"),
		  .rslot = 1 },
		{ "rt_slot 1: 2001:db8:dead::1 (slot 0 only) goes to the FIB, via A", .ip = 6,
		  .dst = "2001:db8:dead::1", FWD(NH_A, "r1") },
	};
	static const struct tcase s0[] = {
		{ "rt_slot 0 again: 198.51.100.7 via B", .ip = 4, .dst = "198.51.100.7",
		  FWD(NH_B, "r1"), RT("198.51.100.0/24") },
		{ "rt_slot 0 again: 2001:db8:dead::1 dropped", .ip = 6, .dst = "2001:db8:dead::1",
		  R(DROP_ROUTE_BLACKHOLE), RT("2001:db8:dead::/48") },
	};
	static const struct tcase off[] = {
		{ "XDPR_CFG_ROUTES off: 203.0.113.5 ignores the blackhole, FIB via A", .ip = 4,
		  .dst = "203.0.113.5", FWD(NH_A, "r1") },
		{ "XDPR_CFG_ROUTES off: 100.64.1.1 ignores the pass route, FIB via A", .ip = 4,
		  .dst = "100.64.1.1", FWD(NH_A, "r1") },
		{ "XDPR_CFG_ROUTES off: 198.51.100.7 (map only) -> pass_not_fwded", .ip = 4,
		  .dst = "198.51.100.7", R(PASS_FIB_NOT_FWDED) },
		{ "XDPR_CFG_ROUTES off: 2001:db8:dead::1 ignores the blackhole, FIB via A", .ip = 6,
		  .dst = "2001:db8:dead::1", FWD(NH_A, "r1") },
	};

	cfg_set(XDPR_CFG_ROUTES, 1);
	for (size_t i = 0; i < sizeof(s1) / sizeof(s1[0]); i++)
		tap(run_case(&s1[i]), s1[i].name, NULL);
	cfg_set(XDPR_CFG_ROUTES, 0);
	for (size_t i = 0; i < sizeof(s0) / sizeof(s0[0]); i++)
		tap(run_case(&s0[i]), s0[i].name, NULL);
	cfg_set(0, 0);
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		tap(run_case(&off[i]), off[i].name, NULL);
	cfg_set(XDPR_CFG_ROUTES, 0);
}

/* ---- per-CPU route counters ---- */

static bool on_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0;
}

/*
 * Frames run on a chosen CPU (test_run executes on the calling CPU): each
 * CPU's cell of the route counts exactly the frames run there, and the sum
 * over CPUs is the total.  Run for a via route (forwarded) and a blackhole.
 */
static bool test_percpu(const char *dst, int ip, const char *prefix, int per_cpu[2], int ncpu_used,
			int reason)
{
	const struct rdef *r = route_get(prefix, 0);
	struct xdpr_ctr *b = calloc(ncpus, sizeof(*b)), *a = calloc(ncpus, sizeof(*a)), sb, sa;
	struct tcase c = { .name = "percpu", .ip = ip, .dst = dst };
	int cpus[2] = { 0, 1 }, len = 0;
	__u64 total = 0;
	bool ok = true;

	if (!a || !b)
		die("out of memory");
	sb = read_route(r->id, b);
	for (int k = 0; k < ncpu_used; k++) {
		if (!on_cpu(cpus[k]))
			die("cannot move to CPU %d: %s", cpus[k], strerror(errno));
		for (int i = 0; i < per_cpu[k]; i++) {
			struct frame f, out;
			__u32 verdict;

			c.sport = 30000 + 100 * k + i;
			build(&f, &c);
			len = f.len;
			if (run(&f, &out, &verdict) || verdict != (__u32)xdpr_reason_verdict(reason)) {
				note("CPU %d frame %d: %s", cpus[k], i, verdict_name(verdict));
				ok = false;
			}
		}
		total += per_cpu[k];
	}
	sa = read_route(r->id, a);
	for (int cpu = 0; cpu < ncpus; cpu++) {
		__u64 wp = 0, dp = a[cpu].packets - b[cpu].packets, db = a[cpu].bytes - b[cpu].bytes;

		for (int k = 0; k < ncpu_used; k++)
			if (cpus[k] == cpu)
				wp = per_cpu[k];
		note("cpu%d: +%llu packets +%llu bytes (expected +%llu +%llu)", cpu,
		     (unsigned long long)dp, (unsigned long long)db, (unsigned long long)wp,
		     (unsigned long long)wp * len);
		if (dp != wp || db != wp * len)
			ok = false;
	}
	if (sa.packets - sb.packets != total || sa.bytes - sb.bytes != total * len) {
		note("sum over CPUs: +%llu packets +%llu bytes, expected +%llu +%llu",
		     (unsigned long long)(sa.packets - sb.packets),
		     (unsigned long long)(sa.bytes - sb.bytes), (unsigned long long)total,
		     (unsigned long long)total * len);
		ok = false;
	}
	free(a);
	free(b);
	return ok;
}

int main(void)
{
	struct xdpr_bpf *skel;
	cpu_set_t all;
	int ncpu_used;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 0;
	}
	if (sched_getaffinity(0, sizeof(all), &all))
		die("sched_getaffinity: %s", strerror(errno));
	setup_netns();
	skel = xdpr_bpf__open_and_load();
	if (!skel)
		die("cannot load the XDP program: %s", strerror(errno));
	prog_fd = bpf_program__fd(skel->progs.xdpr_main);
	stats_fd = bpf_map__fd(skel->maps.xdpr_stats);
	cfg_fd = bpf_map__fd(skel->maps.xdpr_cfg);
	rtstats_fd = bpf_map__fd(skel->maps.xdpr_rt_stats);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 1)
		die("cannot count CPUs: %s", strerror(-ncpus));
	if (bpf_map__max_entries(skel->maps.xdpr_rt_stats) != XDPR_RT_IDS)
		die("xdpr_rt_stats has %u entries, expected %u",
		    bpf_map__max_entries(skel->maps.xdpr_rt_stats), XDPR_RT_IDS);
	register_devs(skel);
	fill_slot(skel, 0, routes, NROUTES);
	fill_slot(skel, 1, routes1, NROUTES1);
	cfg_set(XDPR_CFG_ROUTES, 0);
	ncpu_used = CPU_ISSET(0, &all) && CPU_ISSET(1, &all) ? 2 : 1;

	printf("1..%d\n", 1 + NCASES + 5 + 10 + 2);
	{
		__u32 total = 0;

		for (int i = 0; i < NROUTES; i++)
			for (int k = 0; k < XDPR_RT_MAX_NH && routes[i].action == XDPR_RT_VIA && routes[i].nh[k][0]; k++)
				total++;
		note("slot 0: %d routes with %u next hops in all, %u in distinct lists, %u stored",
		     NROUTES, total, slot_hops_want[0], slot_hops[0]);
		tap(slot_hops[0] <= slot_hops_want[0] && slot_hops[0] < total,
		    "routes with the same next hops share them in the table", NULL);
	}
	for (int i = 0; i < NCASES; i++)
		tap(run_case(&cases[i]), cases[i].name, NULL);

	tap(test_ecmp(4, "100.64.4.1", "100.64.4.0/24", ECMP_FLOWS, 8),
	    "ip4 ECMP over r1 and r2: 64 flows (source ports) spread, each sticks to its next hop",
	    NULL);
	tap(test_ecmp(4, "100.64.7.1", "100.64.7.0/24", ECMP_FLOWS, 8),
	    "ip4 ECMP over two gateways on r1: 64 flows spread, each sticks", NULL);
	tap(test_ecmp(6, "2001:db8:300::1", "2001:db8:300::/48", ECMP_FLOWS, 8),
	    "ip6 ECMP over r1 and r2: 64 flows spread, each sticks", NULL);
	tap(test_ecmp(4, "100.64.8.1", "100.64.8.0/24", 256, 8),
	    "ip4 ECMP over 8 gateways: 256 flows reach every one (>= 8 each), each sticks", NULL);
	{
		/* the hash covers the addresses too: flows to many destinations, one port */
		const struct rdef *r = route_get("100.64.4.0/24", 0);
		int seen[2] = { 0, 0 };
		bool ok = true;

		for (int i = 0; i < 64 && ok; i++) {
			char dst[32];
			struct tcase c = { .name = "ecmp dst", .ip = 4, .dst = dst };
			struct frame f, out;
			__u32 verdict;

			snprintf(dst, sizeof(dst), "100.64.4.%d", i + 1);
			build(&f, &c);
			ok = !run(&f, &out, &verdict) && verdict == XDP_REDIRECT;
			seen[!memcmp(out.b + 6, dev_get("r2")->hw, 6)]++;
		}
		note("%d destinations via %s, %d via %s", seen[0], r->nh[0][0], seen[1], r->nh[1][0]);
		tap(ok && seen[0] >= 8 && seen[1] >= 8,
		    "ip4 ECMP: 64 destinations with one source port also spread over both", NULL);
	}

	test_slots();

	{
		int per_cpu[2] = { 5, 3 };
		char name[128];

		snprintf(name, sizeof(name), "per-CPU counters of a via route: %s sum to the total",
			 ncpu_used == 2 ? "5 frames on cpu0 + 3 on cpu1" : "5 frames on cpu0");
		tap(test_percpu("198.51.7.1", 4, "198.51.0.0/16", per_cpu, ncpu_used, XDPR_FWD), name,
		    NULL);
		snprintf(name, sizeof(name), "per-CPU counters of an ip6 blackhole: %s sum to the total",
			 ncpu_used == 2 ? "5 frames on cpu0 + 3 on cpu1" : "5 frames on cpu0");
		tap(test_percpu("2001:db8:dead::7", 6, "2001:db8:dead::/48", per_cpu, ncpu_used,
				XDPR_DROP_ROUTE_BLACKHOLE), name, NULL);
		sched_setaffinity(0, sizeof(all), &all);
	}

	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
