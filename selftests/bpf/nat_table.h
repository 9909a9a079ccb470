/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nat_table.h - the machinery of the source-NAT tables (test_nat,
 * test_nat2): xdpr_main against the real kernel FIB, one BPF_PROG_TEST_RUN
 * per frame.
 *
 * In a private network namespace: inside veth r0 (10.0.1.1/24, hosts
 * 10.0.1.2 and 10.0.1.3), outside veth r1 (10.0.2.1/24, remotes 10.0.2.2 and
 * 10.0.2.3; 10.0.2.4 has no neighbour), a route with `mtu lock 1280`, static
 * neighbours.  A masquerade rule (id 1) sits on r1, installed the way
 * loader/nat.c does it.  Every frame is built from scratch (repeat 1: a
 * repeated run would see its own rewrite) and every step checks
 *   - the verdict, and that exactly its reason counter moved by one packet
 *     in the ingress interface's slot (summed over CPUs),
 *   - the bytes out against a frame built from scratch with the translated
 *     addresses and ports (checksums computed from nothing, not
 *     incrementally); a frame the program hands to the kernel or drops
 *     untranslated must come back untouched,
 *   - every checksum of the output recomputed from scratch: IPv4 header,
 *     TCP/UDP with the pseudo-header, ICMP over the whole message, and the
 *     IP header and transport checksum of a packet quoted in an ICMP error,
 *   - the NAT event counters of the rule (all of them: the expected ones
 *     moved by the expected amount, the others not at all).
 * Session, binding and mapping entries are read back where a case is about
 * them.  The NAT tables are emptied between independent cases (fresh()).
 * Included first by exactly one .c file per test program, _GNU_SOURCE
 * defined before it.
 */
#ifndef XDPR_TEST_NAT_TABLE_H
#define XDPR_TEST_NAT_TABLE_H

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdpr_shared.h"
#include "libxdpr.h"
#include "xdpr.skel.h"
#include "harness.h"

/* Not every table uses every helper. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

#define FRAME_MAX 2048
#define NONE      -1       /* pkt.plen: no payload at all */

#define IN2  "10.0.1.2"    /* inside hosts */
#define IN3  "10.0.1.3"
#define REM  "10.0.2.2"    /* remotes */
#define REM3 "10.0.2.3"
#define HOP  "10.0.2.9"    /* a router on the way: sends ICMP errors */
#define OUTA "10.0.2.1"    /* r1's address: the masquerade address */

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10

struct dev {
	const char *name, *peer, *mac, *peer_mac;
	__u32 slot;
	__u32 ifindex;
	__u8 hw[6];
};

static struct dev devs[] = {
	{ "r0", "c0", "02:00:00:00:01:01", "02:00:00:00:01:09", 1, 0, {} }, /* inside */
	{ "r1", "s0", "02:00:00:00:02:01", "02:00:00:00:02:09", 2, 0, {} }, /* outside */
};

/* Neighbours: where forwarded frames must be addressed. */
static const struct {
	const char *ip, *mac, *dev;
} neighs[] = {
	{ IN2, "02:00:00:00:01:02", "r0" },
	{ IN3, "02:00:00:00:01:03", "r0" },
	{ REM, "02:00:00:00:02:02", "r1" },
	{ REM3, "02:00:00:00:02:03", "r1" },
};

static const char *const setup_cmds[] = {
	"ip link set lo up",
	"ip addr add 10.0.1.1/24 dev r0",
	"ip addr add 10.0.2.1/24 dev r1",
	"ip route add 10.9.4.0/24 via 10.0.2.2 dev r1 mtu lock 1280",
};

/* ---- network namespace ---- */

static struct dev *dev_get(const char *name)
{
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		if (!strcmp(devs[i].name, name))
			return &devs[i];
	die("no device %s in the test", name);
	return NULL;
}

static __be32 ip(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		die("bad IPv4 address \"%s\" in the test", s);
	return a.s_addr;
}

static const char *ipstr(__be32 a)
{
	static char buf[4][INET_ADDRSTRLEN];
	static int i;

	i = (i + 1) % 4;
	inet_ntop(AF_INET, &a, buf[i], sizeof(buf[i]));
	return buf[i];
}

static void neigh_mac(const char *addr, __u8 mac[6])
{
	for (size_t i = 0; i < sizeof(neighs) / sizeof(neighs[0]); i++)
		if (!strcmp(neighs[i].ip, addr)) {
			mac_parse(neighs[i].mac, mac);
			return;
		}
	die("no neighbour %s in the test", addr);
}

static void setup_netns(void)
{
	if (unshare(CLONE_NEWNET))
		die("unshare(CLONE_NEWNET): %s", strerror(errno));
	if (sysctl_set("net/ipv4/ip_forward", "1"))
		die("cannot set net.ipv4.ip_forward");
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
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
	for (size_t i = 0; i < sizeof(neighs) / sizeof(neighs[0]); i++)
		if (sh("/sbin/ip neigh replace %s lladdr %s dev %s nud permanent", neighs[i].ip,
		       neighs[i].mac, neighs[i].dev))
			die("cannot add neighbour %s", neighs[i].ip);
}

/* ---- BPF side ---- */

static struct xdpr_bpf *skel;
static int prog_fd, gc_fd, stats_fd, ifaces_fd, cfg_fd, rules_fd, nstats_fd;
static int ct_fd, bind_fd, eim_fd, hosts_fd, ncpus, ring_tab_fd;
static __u32 cfg_flags;  /* XDPR_CFG_NAT, plus XDPR_CFG_FIB_SRC when the kernel has it */
static __u32 cur_rule;   /* rule whose NAT events the steps check */

static void register_devs(void)
{
	int tx = bpf_map__fd(skel->maps.xdpr_tx_ports);

	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		struct dev *d = &devs[i];
		struct xdpr_iface c = { .slot = d->slot, .flags = XDPR_IF_XMIT };

		memcpy(c.mac, d->hw, 6);
		if (bpf_map_update_elem(tx, &d->ifindex, &d->ifindex, BPF_ANY) ||
		    bpf_map_update_elem(ifaces_fd, &d->ifindex, &c, BPF_ANY))
			die("cannot register %s: %s", d->name, strerror(errno));
	}
	ifaces_changed(bpf_map__fd(skel->maps.xdpr_if_gen));
}

/* xdpr_probe: does bpf_fib_lookup take BPF_FIB_LOOKUP_SRC?  (-EINVAL: no) */
static int probe_fib_src(void)
{
	__s32 buf[16] = { -1 };
	struct xdp_md ctx = { .data_end = sizeof(buf), .ingress_ifindex = 1 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = buf, .data_size_in = sizeof(buf),
		    .data_out = buf, .data_size_out = sizeof(buf), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xdpr_probe), &o))
		die("cannot run xdpr_probe: %s", strerror(errno));
	return buf[0];
}

static __u32 cfg_sess = XDPR_NAT_DEF_SESS; /* the tables' size (ring length) cfg_write says */

static void cfg_write(__u32 udp, __u32 holddown, __u32 host_limit)
{
	struct xdpr_cfg c = {
		.flags = cfg_flags, .tcp_est = XDPR_DEF_TCP_EST, .tcp_trans = XDPR_DEF_TCP_TRANS,
		.udp = udp, .icmp = XDPR_DEF_ICMP, .holddown = holddown, .host_limit = host_limit,
		.nat_sess = cfg_sess,
	};
	__u32 zero = 0;

	if (bpf_map_update_elem(cfg_fd, &zero, &c, BPF_ANY))
		die("cannot write xdpr_cfg: %s", strerror(errno));
}

static void cfg_defaults(void)
{
	cfg_write(XDPR_DEF_UDP, XDPR_DEF_HOLDDOWN, XDPR_DEF_HOST_LIMIT);
}

/* A rule in xdpr_nat_rules[id]; pool == NULL: masquerade to r1's address. */
static void rule_write(__u32 id, __u32 flags, const char *net, int plen, const char *pool,
		       __u32 pool_count, __u16 pmin, __u16 pmax)
{
	struct xdpr_nat_rule r = {
		.ifindex = dev_get("r1")->ifindex, .flags = flags, .src_net = ip(net),
		.src_mask = plen ? htonl(~0u << (32 - plen)) : 0,
		.pool_first = pool ? ip(pool) : 0, .pool_count = pool_count,
		.masq_addr = pool ? 0 : ip(OUTA), .port_min = pmin, .port_max = pmax,
	};

	if (bpf_map_update_elem(rules_fd, &id, &r, BPF_ANY))
		die("cannot write NAT rule %u: %s", id, strerror(errno));
}

static void rule_clear(__u32 id)
{
	struct xdpr_nat_rule r = {};

	if (bpf_map_update_elem(rules_fd, &id, &r, BPF_ANY))
		die("cannot clear NAT rule %u: %s", id, strerror(errno));
}

/* A flag of an interface's xdpr_ifaces entry on or off (XDPR_IF_BINAT, XDPR_IF_FWD). */
static void iface_flag(const char *name, __u32 flag, bool on)
{
	struct dev *d = dev_get(name);
	struct xdpr_iface c;

	if (bpf_map_lookup_elem(ifaces_fd, &d->ifindex, &c))
		die("cannot read xdpr_ifaces[%s]", name);
	c.flags = on ? c.flags | flag : c.flags & ~flag;
	if (bpf_map_update_elem(ifaces_fd, &d->ifindex, &c, BPF_EXIST))
		die("cannot write xdpr_ifaces[%s]", name);
	ifaces_changed(bpf_map__fd(skel->maps.xdpr_if_gen));
}

/* The outside interface's rule list (one rule), as loader/nat.c swaps it in. */
static void iface_rules(const char *name, __u8 id)
{
	struct dev *d = dev_get(name);
	struct xdpr_iface c;

	if (bpf_map_lookup_elem(ifaces_fd, &d->ifindex, &c))
		die("cannot read xdpr_ifaces[%s]: %s", name, strerror(errno));
	memset(c.rules, 0, sizeof(c.rules));
	c.nrules = id ? 1 : 0;
	c.rules[0] = id;
	if (bpf_map_update_elem(ifaces_fd, &d->ifindex, &c, BPF_EXIST))
		die("cannot write xdpr_ifaces[%s]: %s", name, strerror(errno));
	ifaces_changed(bpf_map__fd(skel->maps.xdpr_if_gen));
}

/* Empty a hash map: collect the keys first (deleting while walking restarts the walk). */
static int map_clear(int fd, size_t key_size)
{
	size_t cap = 1024, n;
	int total = 0;
	__u8 *keys;

	keys = malloc(cap * key_size);
	if (!keys)
		die("out of memory");
	do {
		n = 0;
		for (void *prev = NULL; !bpf_map_get_next_key(fd, prev, keys + n * key_size);
		     prev = keys + n * key_size, n++) {
			if (n + 1 == cap) {
				keys = realloc(keys, (cap *= 2) * key_size);
				if (!keys)
					die("out of memory");
			}
		}
		for (size_t i = 0; i < n; i++)
			if (bpf_map_delete_elem(fd, keys + i * key_size) && errno != ENOENT)
				die("cannot delete a NAT map entry: %s", strerror(errno));
		total += n;
		if (total > 8 * XDPR_NAT_DEF_SESS)
			die("NAT map does not empty");
	} while (n);
	free(keys);
	return total;
}

/* Independent case: empty NAT tables, default settings, the masquerade rule 1 on r1. */
static void fresh(void)
{
	ct_clear();
	map_clear(bind_fd, sizeof(struct xdpr_bind_key));
	map_clear(eim_fd, sizeof(struct xdpr_eim_key));
	map_clear(hosts_fd, sizeof(__be32));
	cfg_defaults();
	rule_write(1, XDPR_NAT_MASQ, "0.0.0.0", 0, NULL, 0, 1024, 65535);
	rule_clear(2);
	iface_rules("r1", 1);
	cur_rule = 1;
}

/* ---- frames ---- */

static void put32(__u8 *p, __u32 v) { put16(p, v >> 16), put16(p + 2, v); }

/* One IPv4 packet, described by what matters to the NAT. */
struct pkt {
	const char *src, *dst;
	__u8 proto;            /* default UDP */
	__u16 sport, dport;    /* TCP/UDP ports; ICMP: bytes 4-7 (echo id, sequence) */
	__u8 type, code;       /* ICMP */
	__u8 ttl;              /* default 64 */
	__u16 frag;            /* frag_off, host order */
	__u8 flags;            /* TCP, default PSH|ACK */
	int plen;              /* payload bytes; 0: 16, NONE: none */
	const __u8 *data;      /* payload; NULL: a pattern */
	bool nocsum;           /* UDP sent without a checksum */
	bool opts;             /* 4 bytes of IPv4 options (NOP NOP NOP EOL) */
};

static int l4_hlen(__u8 proto)
{
	return proto == IPPROTO_TCP ? 20 : proto == IPPROTO_UDP || proto == IPPROTO_ICMP ? 8 : 0;
}

/* Builds the packet at b with every checksum computed from scratch; returns its length. */
static int build_ip(__u8 *b, const struct pkt *k)
{
	struct iphdr *iph = (struct iphdr *)b;
	int ihl = k->opts ? 24 : 20;
	__u8 proto = k->proto ?: IPPROTO_UDP, *l4 = b + ihl;
	int plen = k->plen == NONE ? 0 : k->plen ?: 16, hl = l4_hlen(proto), len = hl + plen;
	__u32 psum;
	__u16 c;

	if (ihl + len > FRAME_MAX - ETH_HLEN)
		die("packet too big for the test");
	memset(b, 0, ihl + hl);
	if (k->opts)
		b[20] = 1, b[21] = 1, b[22] = 1, b[23] = 0;
	iph->version = 4, iph->ihl = ihl / 4, iph->tot_len = htons(ihl + len);
	iph->id = htons(0x4242);
	iph->frag_off = htons(k->frag), iph->ttl = k->ttl ?: 64, iph->protocol = proto;
	iph->saddr = ip(k->src), iph->daddr = ip(k->dst);
	for (int i = 0; i < plen; i++)
		l4[hl + i] = k->data ? k->data[i] : i * 7 + 1;
	psum = sum16(&iph->saddr, 8, proto + len);
	switch (proto) {
	case IPPROTO_UDP:
		put16(l4, k->sport), put16(l4 + 2, k->dport), put16(l4 + 4, len);
		c = ~fold(sum16(l4, len, psum));
		if (!k->nocsum)
			put16(l4 + 6, c ? c : 0xffff);
		break;
	case IPPROTO_TCP:
		put16(l4, k->sport), put16(l4 + 2, k->dport), put32(l4 + 4, 1000);
		l4[13] = k->flags ?: TCP_PSH | TCP_ACK;
		put32(l4 + 8, l4[13] & TCP_ACK ? 5000 : 0);
		l4[12] = 5 << 4, put16(l4 + 14, 65535);
		put16(l4 + 16, ~fold(sum16(l4, len, psum)));
		break;
	case IPPROTO_ICMP:
		l4[0] = k->type, l4[1] = k->code, put16(l4 + 4, k->sport), put16(l4 + 6, k->dport);
		put16(l4 + 2, ~fold(sum16(l4, len, 0)));
		break;
	}
	put16((__u8 *)&iph->check, ~fold(sum16(b, ihl, 0)));
	return ihl + len;
}

struct frame {
	__u8 b[FRAME_MAX];
	int len;
};

static void mkframe(struct frame *f, const __u8 dst[6], const __u8 src[6], const struct pkt *k)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->b, dst, 6);
	memcpy(f->b + 6, src, 6);
	put16(f->b + 12, ETH_P_IP);
	f->len = ETH_HLEN + build_ip(f->b + ETH_HLEN, k);
}

/* As it arrives on dev from its peer. */
static void in_frame(struct frame *f, const char *dev, const struct pkt *k)
{
	struct dev *d = dev_get(dev);
	__u8 peer[6];

	mac_parse(d->peer_mac, peer);
	mkframe(f, d->hw, peer, k);
}

/* As it must leave through dev to its destination's neighbour. */
static void fwd_frame(struct frame *f, const char *dev, const struct pkt *k)
{
	__u8 nh[6];

	neigh_mac(k->dst, nh);
	mkframe(f, nh, dev_get(dev)->hw, k);
}

/* k with a new source (outbound translation); dec: as forwarded, TTL - 1. */
static struct pkt snat(struct pkt k, const char *addr, __u16 port, bool dec)
{
	k.src = addr;
	k.sport = port;
	if (dec)
		k.ttl = (k.ttl ?: 64) - 1;
	return k;
}

/* k with a new destination (inbound translation); ICMP: the echo id. */
static struct pkt dnat(struct pkt k, const char *addr, __u16 port, bool dec)
{
	k.dst = addr;
	if (k.proto == IPPROTO_ICMP)
		k.sport = port;
	else
		k.dport = port;
	if (dec)
		k.ttl = (k.ttl ?: 64) - 1;
	return k;
}

/* An ICMP error quoting q, cut to quote bytes (0: all of it); buf keeps the quote. */
static struct pkt icmp_err(const char *src, const char *dst, __u8 type, __u8 code,
			   const struct pkt *q, int quote, __u8 *buf)
{
	int n = build_ip(buf, q);

	if (quote && quote < n)
		n = quote;
	return (struct pkt){ .src = src, .dst = dst, .proto = IPPROTO_ICMP, .type = type,
			     .code = code, .plen = n, .data = buf };
}

/* ---- checking ---- */

static const char *verdict_name(__u32 v)
{
	static const char *const names[] = { "XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX",
					     "XDP_REDIRECT" };

	return v < 5 ? names[v] : "XDP_?";
}

static const char *where(const struct frame *f, int off)
{
	static char s[48];
	const __u8 *iph = f->b + ETH_HLEN;
	int l4 = ETH_HLEN + (iph[0] & 0xf) * 4;

	if (off < 6)
		return "eth dst";
	if (off < 12)
		return "eth src";
	if (off < ETH_HLEN)
		return "eth type";
	if (off < l4) {
		snprintf(s, sizeof(s), "ip +%d", off - ETH_HLEN);
	} else if (iph[9] == IPPROTO_ICMP && f->b[l4] != 0 && f->b[l4] != 8 && off >= l4 + 8) {
		/* an ICMP error: say where in the quoted packet */
		if (off < l4 + 28)
			snprintf(s, sizeof(s), "quoted ip +%d", off - l4 - 8);
		else
			snprintf(s, sizeof(s), "quoted l4 +%d", off - l4 - 28);
	} else {
		snprintf(s, sizeof(s), "l4 +%d", off - l4);
	}
	return s;
}

static bool same_bytes(const struct frame *want, const struct frame *got)
{
	int n = want->len < got->len ? want->len : got->len;
	bool ok = want->len == got->len;

	if (!ok)
		note("frame length: expected %d, got %d", want->len, got->len);
	for (int i = 0; i < n; i++)
		if (want->b[i] != got->b[i]) {
			int j = i & ~1;

			note("first differing byte at offset %d (%s): expected 0x%02x, got 0x%02x "
			     "(16-bit word at %d: expected 0x%04x, got 0x%04x)", i, where(want, i),
			     want->b[i], got->b[i], j, get16(want->b + j), get16(got->b + j));
			return false;
		}
	return ok;
}

/*
 * Every checksum of the IPv4 packet at p (avail bytes present), recomputed
 * from scratch; for an ICMP error, those of the quoted packet too (its
 * transport checksum only when the quote holds all of it).
 */
static bool csums_valid(const __u8 *p, int avail, const char *what)
{
	const struct iphdr *iph = (const void *)p;
	int tot, len;
	int ihl = iph->ihl * 4;
	const __u8 *l4 = p + ihl;
	__u32 psum;
	bool ok = true;

	if (avail < 20 || ihl < 20 || avail < ihl) {
		note("%s: no IPv4 header", what);
		return false;
	}
	if (fold(sum16(p, ihl, 0)) != 0xffff) {
		note("%s IPv4 header checksum 0x%04x INVALID", what, get16((const __u8 *)&iph->check));
		ok = false;
	}
	tot = ntohs(iph->tot_len);
	if (tot > avail || (ntohs(iph->frag_off) & 0x3fff))
		return ok; /* quoted in part, or a fragment: no transport checksum to check */
	len = tot - ihl;
	psum = sum16(&iph->saddr, 8, iph->protocol + len);
	switch (iph->protocol) {
	case IPPROTO_UDP:
		if (len < 8 || !get16(l4 + 6))
			break; /* no checksum */
		if (fold(sum16(l4, len, psum)) != 0xffff) {
			note("%s UDP checksum 0x%04x INVALID", what, get16(l4 + 6));
			ok = false;
		}
		break;
	case IPPROTO_TCP:
		if (len >= 20 && fold(sum16(l4, len, psum)) != 0xffff) {
			note("%s TCP checksum 0x%04x INVALID", what, get16(l4 + 16));
			ok = false;
		}
		break;
	case IPPROTO_ICMP:
		if (len < 8)
			break;
		if (fold(sum16(l4, len, 0)) != 0xffff) {
			note("%s ICMP checksum 0x%04x INVALID", what, get16(l4 + 2));
			ok = false;
		}
		if (l4[0] == 3 || l4[0] == 11 || l4[0] == 12)
			ok &= csums_valid(l4 + 8, len - 8, "quoted");
		break;
	}
	return ok;
}

struct evs {
	__u64 n[XDPR_NE_MAX];
};

#define EV(...) ((struct evs){ .n = { __VA_ARGS__ } })
#define NOEV    EV([0] = 0)
#define XOUT    [XDPR_NE_XLATE_OUT] = 1
#define XIN     [XDPR_NE_XLATE_IN] = 1
#define NEW     [XDPR_NE_SESS_NEW] = 1
#define KEPT    [XDPR_NE_PORT_PRESERVED] = 1

/* NAT events of a rule, summed over CPUs. */
static void read_ev(__u32 rule, struct evs *e)
{
	__u64 *v = calloc(ncpus, sizeof(*v));

	if (!v)
		die("out of memory");
	for (int i = 0; i < XDPR_NE_MAX; i++) {
		__u32 key = rule * XDPR_NE_MAX + i;

		if (bpf_map_lookup_elem(nstats_fd, &key, v))
			die("cannot read xdpr_nat_stats[%u]: %s", key, strerror(errno));
		e->n[i] = 0;
		for (int c = 0; c < ncpus; c++)
			e->n[i] += v[c];
	}
	free(v);
}

/* What one run did. */
struct result {
	const struct frame *in;
	const char *dev;
	__u32 verdict;
	int err;
	struct frame out;
	struct xdpr_ctr before[XDPR_REASON_MAX], after[XDPR_REASON_MAX];
	struct evs ev0, ev1;
};

static void run(const char *dev, const struct frame *f, struct result *r)
{
	struct dev *d = dev_get(dev);
	struct xdp_md ctx = { .data_end = f->len, .ingress_ifindex = d->ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = f->len,
		    .data_out = r->out.b, .data_size_out = sizeof(r->out.b), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	r->in = f;
	r->dev = dev;
	read_slot_sum(stats_fd, ncpus, d->slot, r->before);
	read_ev(cur_rule, &r->ev0);
	r->err = bpf_prog_test_run_opts(prog_fd, &o) ? -errno : 0;
	r->verdict = o.retval;
	r->out.len = o.data_size_out;
	read_slot_sum(stats_fd, ncpus, d->slot, r->after);
	read_ev(cur_rule, &r->ev1);
}

/*
 * The checks every step makes.  want == NULL: the frame must come back as
 * it went in (handed to the kernel or dropped untranslated).
 */
static bool check(const char *what, const struct result *r, int reason, const struct frame *want,
		  struct evs ev)
{
	bool ok = true;

	cur_step = what;
	if (r->err) {
		note("BPF_PROG_TEST_RUN: %s", strerror(-r->err));
		cur_step = NULL;
		return false;
	}
	if (r->verdict != (__u32)xdpr_reason_verdict(reason)) {
		note("verdict: expected %s, got %s", verdict_name(xdpr_reason_verdict(reason)),
		     verdict_name(r->verdict));
		ok = false;
	}
	for (int i = 0; i < XDPR_REASON_MAX; i++) {
		__u64 dp = r->after[i].packets - r->before[i].packets;
		__u64 db = r->after[i].bytes - r->before[i].bytes;
		__u64 wp = i == reason, wb = i == reason ? (__u64)r->in->len : 0;

		if (dp != wp || db != wb) {
			note("slot %u reason %s: +%llu packets +%llu bytes, expected +%llu +%llu",
			     dev_get(r->dev)->slot, xdpr_reason_name(i), (unsigned long long)dp,
			     (unsigned long long)db, (unsigned long long)wp, (unsigned long long)wb);
			ok = false;
		}
	}
	for (int i = 0; i < XDPR_NE_MAX; i++) {
		__u64 d = r->ev1.n[i] - r->ev0.n[i];

		if (d != ev.n[i]) {
			note("rule %u event %s: +%llu, expected +%llu", cur_rule, xdpr_nat_event_name(i),
			     (unsigned long long)d, (unsigned long long)ev.n[i]);
			ok = false;
		}
	}
	ok &= same_bytes(want ?: r->in, &r->out);
	if (r->out.len > ETH_HLEN)
		ok &= csums_valid(r->out.b + ETH_HLEN, r->out.len - ETH_HLEN, "out");
	cur_step = NULL;
	return ok;
}

static bool step(const char *what, const char *dev, const struct frame *in, int reason,
		 const struct frame *want, struct evs ev)
{
	struct result *r = calloc(1, sizeof(*r));
	bool ok;

	if (!r)
		die("out of memory");
	run(dev, in, r);
	ok = check(what, r, reason, want, ev);
	free(r);
	return ok;
}

/* ---- sessions ---- */

static struct xdpr_ct_key ct_key(const char *s, const char *d, __u16 sp, __u16 dp, __u8 proto,
				 int dir)
{
	return (struct xdpr_ct_key){ .saddr = ip(s), .daddr = ip(d), .sport = htons(sp),
				     .dport = htons(dp), .proto = proto, .dir = dir };
}

static bool ct_get(const struct xdpr_ct_key *k, struct xdpr_ct_val *v)
{
	return !ct_read(k, v);
}

/* Outside address/port of the session in -> rem (its outbound half); false if none. */
static bool out_of(const char *in, const char *rem, __u16 inp, __u16 remp, __u8 proto,
		   __be32 *addr, __u16 *port)
{
	struct xdpr_ct_key k = ct_key(in, rem, inp, remp, proto, XDPR_CT_OUT);
	struct xdpr_ct_val v;

	if (!ct_get(&k, &v)) {
		note("no session %s:%u -> %s:%u proto %u (outbound half)", in, inp, rem, remp, proto);
		return false;
	}
	if (addr)
		*addr = v.xaddr;
	*port = ntohs(v.xport);
	return true;
}

/* A session as it must be in the tables: both halves, binding, mapping. */
struct sess {
	const char *in, *rem, *out;
	__u16 inp, remp, outp;
	__u8 proto, state, rule;
	int nsess;            /* sessions expected on the binding; -1: do not check */
};

static bool check_sess(const char *what, const struct sess *s)
{
	struct xdpr_ct_key ko = ct_key(s->in, s->rem, s->inp, s->remp, s->proto, XDPR_CT_OUT);
	struct xdpr_ct_key ki = ct_key(s->rem, s->out, s->remp, s->outp, s->proto, XDPR_CT_IN);
	struct xdpr_bind_key bk = { .out_addr = ip(s->out), .out_port = htons(s->outp),
				    .proto = s->proto };
	struct xdpr_eim_key ek = { .in_addr = ip(s->in), .in_port = htons(s->inp),
				   .proto = s->proto, .rule = s->rule };
	struct xdpr_ct_val vo, vi;
	struct xdpr_bind b;
	struct xdpr_eim_val e;
	bool ok = true;

	cur_step = what;
	if (!ct_get(&ko, &vo)) {
		note("no outbound half {%s, %s, %u, %u, proto %u, dir 0}", s->in, s->rem, s->inp,
		     s->remp, s->proto);
		cur_step = NULL;
		return false;
	}
	if (vo.xaddr != ip(s->out) || ntohs(vo.xport) != s->outp || vo.state != s->state ||
	    vo.rule != s->rule || !vo.last_seen || !vo.created || !vo.bind_gen) {
		note("outbound half: xaddr %s xport %u state 0x%x rule %u last_seen %llu created %llu "
		     "gen %llu; expected %s %u state 0x%x rule %u, times and gen set",
		     ipstr(vo.xaddr), ntohs(vo.xport), vo.state, vo.rule,
		     (unsigned long long)vo.last_seen, (unsigned long long)vo.created,
		     (unsigned long long)vo.bind_gen, s->out, s->outp, s->state, s->rule);
		ok = false;
	}
	if (!ct_get(&ki, &vi)) {
		note("no inbound half {%s, %s, %u, %u, proto %u, dir 1}", s->rem, s->out, s->remp,
		     s->outp, s->proto);
		ok = false;
	} else if (vi.xaddr != ip(s->in) || ntohs(vi.xport) != s->inp || vi.state != s->state ||
		   vi.rule != s->rule || vi.bind_gen != vo.bind_gen || !vi.created) {
		note("inbound half: xaddr %s xport %u state 0x%x rule %u gen %llu; expected %s %u "
		     "state 0x%x rule %u gen %llu", ipstr(vi.xaddr), ntohs(vi.xport), vi.state, vi.rule,
		     (unsigned long long)vi.bind_gen, s->in, s->inp, s->state, s->rule,
		     (unsigned long long)vo.bind_gen);
		ok = false;
	}
	if (bpf_map_lookup_elem(bind_fd, &bk, &b)) {
		note("no binding %s:%u proto %u", s->out, s->outp, s->proto);
		ok = false;
	} else if (b.in_addr != ip(s->in) || ntohs(b.in_port) != s->inp || b.rule != s->rule ||
		   XDPR_BIND_GEN(b.state) != vo.bind_gen ||
		   (s->nsess >= 0 && XDPR_BIND_REFS(b.state) != (__u32)s->nsess)) {
		note("binding %s:%u: %s:%u rule %u gen %u refs %u; expected %s:%u rule %u gen %llu "
		     "refs %d", s->out, s->outp, ipstr(b.in_addr), ntohs(b.in_port), b.rule,
		     XDPR_BIND_GEN(b.state), XDPR_BIND_REFS(b.state), s->in, s->inp, s->rule,
		     (unsigned long long)vo.bind_gen, s->nsess);
		ok = false;
	}
	if (bpf_map_lookup_elem(eim_fd, &ek, &e)) {
		note("no mapping for %s:%u proto %u rule %u", s->in, s->inp, s->proto, s->rule);
		ok = false;
	} else if (e.out_addr != ip(s->out) || ntohs(e.out_port) != s->outp || e.gen != vo.bind_gen) {
		note("mapping %s:%u -> %s:%u gen %llu; expected %s:%u gen %llu", s->in, s->inp,
		     ipstr(e.out_addr), ntohs(e.out_port), (unsigned long long)e.gen, s->out, s->outp,
		     (unsigned long long)vo.bind_gen);
		ok = false;
	}
	cur_step = NULL;
	return ok;
}

static bool no_sess(const char *what, const char *in, const char *rem, __u16 inp, __u16 remp,
		    __u8 proto)
{
	struct xdpr_ct_key k = ct_key(in, rem, inp, remp, proto, XDPR_CT_OUT);
	struct xdpr_ct_val v;

	if (!ct_get(&k, &v))
		return true;
	cur_step = what;
	note("a session %s:%u -> %s:%u was created: outside %s:%u", in, inp, rem, remp,
	     ipstr(v.xaddr), ntohs(v.xport));
	cur_step = NULL;
	return false;
}

static int map_count(int fd)
{
	__u8 key[64], next[64];
	int n = 0;

	for (void *k = NULL; !bpf_map_get_next_key(fd, k, next); k = key, n++)
		memcpy(key, next, sizeof(next));
	return n;
}

static __u32 host_nsess(const char *in)
{
	__be32 a = ip(in);
	struct xdpr_host h = {};

	bpf_map_lookup_elem(hosts_fd, &a, &h);
	return h.nsess;
}

static int gc(__u32 op, struct xdpr_gc_cmd *res)
{
	struct xdpr_gc_cmd cmd[2] = { { .op = op } }, out[2] = {};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = cmd, .data_size_in = sizeof(cmd),
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	if (bpf_prog_test_run_opts(gc_fd, &o))
		return -errno;
	if (o.retval != XDP_PASS)
		return -EPROTO;
	*res = out[0];
	return 0;
}

/* A rule's events, and a way to check them outside a step (gc). */
static bool ev_delta(const char *what, const struct evs *a, const struct evs *b, struct evs want)
{
	bool ok = true;

	cur_step = what;
	for (int i = 0; i < XDPR_NE_MAX; i++)
		if (b->n[i] - a->n[i] != want.n[i]) {
			note("rule %u event %s: +%llu, expected +%llu", cur_rule, xdpr_nat_event_name(i),
			     (unsigned long long)(b->n[i] - a->n[i]), (unsigned long long)want.n[i]);
			ok = false;
		}
	cur_step = NULL;
	return ok;
}

static bool expect(bool cond, const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	if (cond)
		return true;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	note("%s", buf);
	return false;
}

/* The datapath's clock (bpf_ktime_get_coarse_ns). */
static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Root, or a TAP skip (exit 0); then stay on CPU 0 (the per-CPU state a case counts on). */
static void need_root_on_cpu0(void)
{
	cpu_set_t cpus;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		exit(0);
	}
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus))
		die("cannot stay on CPU 0: %s", strerror(errno));
}

/*
 * The namespace, the program and its maps, the interfaces registered.
 * Returns what xdpr_probe said about BPF_FIB_LOOKUP_SRC (cfg_flags has it).
 */
/* ---- shared by the tests with IPv6 too (test_flow, test_ddos) ---- */

#define IN6  "2001:db8:1::2"
#define REM6 "2001:db8:2::2"

/* IPv6 on both sides: 2001:db8:1::/64 on r0, 2001:db8:2::/64 on r1, a neighbour each. */
static void setup_v6(void)
{
	if (sysctl_set("net/ipv6/conf/all/forwarding", "1") ||
	    sh("/sbin/ip -6 addr add 2001:db8:1::1/64 dev r0 nodad") ||
	    sh("/sbin/ip -6 addr add 2001:db8:2::1/64 dev r1 nodad") ||
	    sh("/sbin/ip -6 neigh replace " IN6 " lladdr 02:00:00:00:01:02 dev r0 nud permanent") ||
	    sh("/sbin/ip -6 neigh replace " REM6 " lladdr 02:00:00:00:02:02 dev r1 nud permanent"))
		die("cannot set up IPv6 in the test namespace");
}

static void addr_of(int family, const char *s, __u8 a[16])
{
	memset(a, 0, 16);
	if (inet_pton(family, s, a) != 1)
		die("bad address \"%s\" in the test", s);
}

static bool pin_cpu(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return !sched_setaffinity(0, sizeof(s), &s);
}

static int table_init(void)
{
	int probe;

	setup_netns();
	skel = xdpr_bpf__open();
	if (!skel)
		die("cannot open the XDP program: %s", strerror(errno));
	/* as xdpr_create_maps sizes it: every CPU's slots */
	bpf_map__set_max_entries(skel->maps.xdpr_ddos_slots, XDPR_DDOS_SLOTS * libbpf_num_possible_cpus());
	if (xdpr_bpf__load(skel))
		die("cannot load the XDP program: %s", strerror(errno));
	prog_fd = bpf_program__fd(skel->progs.xdpr_main);
	gc_fd = bpf_program__fd(skel->progs.xdpr_nat_gc);
	stats_fd = bpf_map__fd(skel->maps.xdpr_stats);
	ifaces_fd = bpf_map__fd(skel->maps.xdpr_ifaces);
	cfg_fd = bpf_map__fd(skel->maps.xdpr_cfg);
	rules_fd = bpf_map__fd(skel->maps.xdpr_nat_rules);
	nstats_fd = bpf_map__fd(skel->maps.xdpr_nat_stats);
	nat_tabs_init(skel->obj, &ct_fd, &bind_fd, &eim_fd, &hosts_fd, &ring_tab_fd, NULL);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 1)
		die("cannot count CPUs: %s", strerror(-ncpus));
	register_devs();
	probe = probe_fib_src();
	cfg_flags = XDPR_CFG_NAT | (probe >= 0 ? XDPR_CFG_FIB_SRC : 0);
	return probe;
}

#pragma GCC diagnostic pop

#endif /* XDPR_TEST_NAT_TABLE_H */
