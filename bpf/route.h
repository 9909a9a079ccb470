/* SPDX-License-Identifier: GPL-2.0 */
/*
 * route.h - the route map: longest-prefix match consulted before the kernel
 * FIB.  Two LPM tries per family sit in a two-slot array of maps; the live
 * slot is xdpr_cfg.rt_slot, so a bulk load or flush fills the other slot and
 * switches both families with one update.  Per-route counters are per CPU.
 */
#ifndef XDPR_ROUTE_H
#define XDPR_ROUTE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xdpr_shared.h"

struct rt4_trie {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XDPR_RT_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct xdpr_rt4_key)); /* libbpf 1.1: sizes, not types, in inner maps */
	__uint(value_size, sizeof(struct xdpr_route));
};

struct rt6_trie {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XDPR_RT_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct xdpr_rt6_key));
	__uint(value_size, sizeof(struct xdpr_route));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct rt4_trie);
} xdpr_rt4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct rt6_trie);
} xdpr_rt6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_RT_IDS);
	__type(key, __u32);
	__type(value, struct xdpr_ctr);
} xdpr_rt_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct xdpr_local_key);
	__type(value, __u8);
} xdpr_local SEC(".maps");

/* Is this one of the router's own addresses (kept by the CLI)? */
static __always_inline int rt_is_local(__u32 family, const void *addr)
{
	struct xdpr_local_key k = { .family = family };

	__builtin_memcpy(k.addr, addr, family == AF_INET ? 4 : 16);
	return bpf_map_lookup_elem(&xdpr_local, &k) != NULL;
}

/* Returned by the route step when no route matched: ask the FIB. */
#define RT_NONE (-1)
/* A via route filled the FIB result (return code in *fibrc). */
#define RT_FIB  (-2)

static __always_inline void rt_count(__u32 id, __u64 bytes)
{
	struct xdpr_ctr *c = bpf_map_lookup_elem(&xdpr_rt_stats, &id);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
}

/* Flow hash for ECMP: the same 5-tuple always picks the same next hop. */
static __always_inline __u32 rt_hash(__u32 a, __u32 b, __u32 ports, __u32 proto)
{
	__u32 h = a * 0x9e3779b1 ^ b;

	h = (h ^ (h >> 15)) * 0x85ebca6b ^ ports;
	h = (h ^ (h >> 13)) * 0xc2b2ae35 ^ proto;
	return h ^ (h >> 16);
}

_Static_assert((XDPR_RT_MAX_NH & (XDPR_RT_MAX_NH - 1)) == 0, "next hop count is a power of two");

static __always_inline const struct xdpr_nh *rt_pick(const struct xdpr_route *r, __u32 hash)
{
	__u32 n = r->nnh, i;

	if (n == 0 || n > XDPR_RT_MAX_NH)
		return NULL;
	i = hash % n;
	/*
	 * i < n <= XDPR_RT_MAX_NH: the mask changes nothing but tells the
	 * verifier so; the empty asm keeps clang from dropping it.
	 */
	asm volatile("" : "+r"(i));
	return &r->nh[i & (XDPR_RT_MAX_NH - 1)];
}

/* The action's verdict for blackhole/pass, or RT_FIB after resolving a next hop. */
static __always_inline int rt_act(const struct xdpr_route *r, __u64 bytes)
{
	rt_count(r->id, bytes);
	if (r->action == XDPR_RT_BLACKHOLE)
		return XDPR_DROP_ROUTE_BLACKHOLE;
	if (r->action != XDPR_RT_VIA || r->nnh == 0)
		return XDPR_PASS_ROUTE;
	return RT_FIB;
}

/* After the FIB resolved the gateway: it must leave through the route's device. */
static __always_inline int rt_check_nh(int rc, const struct bpf_fib_lookup *fib, const struct xdpr_nh *nh)
{
	if (rc == BPF_FIB_LKUP_RET_SUCCESS && fib->ifindex != nh->ifindex)
		return XDPR_PASS_ROUTE_GW;
	if (rc == BPF_FIB_LKUP_RET_NOT_FWDED || rc == BPF_FIB_LKUP_RET_BLACKHOLE ||
	    rc == BPF_FIB_LKUP_RET_UNREACHABLE || rc == BPF_FIB_LKUP_RET_PROHIBIT)
		return XDPR_PASS_ROUTE_GW;
	return -1;
}

/*
 * A gateway bpf_fib_lookup cannot resolve (IPv6 link-local: "never
 * forwarded"): MAC from the route, source MAC from the egress interface,
 * MTU from bpf_check_mtu.  Fills fib like a successful lookup would.
 */
static __always_inline int rt_static_nh(struct xdp_md *ctx, struct bpf_fib_lookup *fib,
					const struct xdpr_nh *nh)
{
	__u32 ifindex = nh->ifindex, mtu_len = 0;
	struct xdpr_iface *out = bpf_map_lookup_elem(&xdpr_ifaces, &ifindex);

	if (!out)
		return XDPR_PASS_EGRESS_NOT_XDPR;
	/* the frame as it is against the egress MTU */
	if (bpf_check_mtu(ctx, ifindex, &mtu_len, 0, 0))
		return XDPR_PASS_FIB_FRAG_NEEDED;
	fib->ifindex = ifindex;
	__builtin_memcpy(fib->dmac, nh->mac, 6);
	__builtin_memcpy(fib->smac, out->mac, 6);
	return -1;
}

static __always_inline struct xdpr_route *rt4_lookup(const struct xdpr_cfg *cfg, __be32 daddr)
{
	struct xdpr_rt4_key k = { .prefixlen = 32, .addr = daddr };
	__u32 slot = cfg->rt_slot & 1;
	void *trie = bpf_map_lookup_elem(&xdpr_rt4, &slot);

	return trie ? bpf_map_lookup_elem(trie, &k) : NULL;
}

static __always_inline struct xdpr_route *rt6_lookup(const struct xdpr_cfg *cfg, const void *daddr)
{
	struct xdpr_rt6_key k = { .prefixlen = 128 };
	__u32 slot = cfg->rt_slot & 1;
	void *trie = bpf_map_lookup_elem(&xdpr_rt6, &slot);

	__builtin_memcpy(k.addr, daddr, 16);
	return trie ? bpf_map_lookup_elem(trie, &k) : NULL;
}

#endif /* XDPR_ROUTE_H */
