/* SPDX-License-Identifier: GPL-2.0 */
/*
 * route.h - the route map: longest-prefix match consulted before the kernel
 * FIB.  Each of the two slots holds a whole table, both families: a
 * multibit-trie index (xdpr_rtdir, see xdpr_shared.h), the route records
 * it points to (xdpr_rtrec) and their next hops (xdpr_rtnh).  The live slot is xdpr_cfg.rt_slot: every change
 * builds the other slot and switches with one update, so packets see the
 * old table or the new one, never a mix.  Per-route counters are per CPU.
 */
#ifndef XDPR_ROUTE_H
#define XDPR_ROUTE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "step.h"

/*
 * Inner maps of a slot: sizes vary with the table (BPF_F_INNER_MAP), the
 * CLI fills them through mmap before they go live and never writes them
 * after.  The definitions are the smallest tables: empty ones.
 */
struct rt_dir {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_DIR_GROUPS);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(key_size, sizeof(__u32)); /* libbpf 1.1: sizes, not types, in inner maps */
	__uint(value_size, sizeof(struct xdpr_dir_block));
};

struct rt_rec {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xdpr_rtent));
};

struct rt_nh {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xdpr_rtnh));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct rt_dir);
} xdpr_rtdir SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct rt_nh);
} xdpr_rtnh SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct rt_rec);
} xdpr_rtrec SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_RT_IDS);
	__type(key, __u32);
	__type(value, struct xdpr_ctr);
} xdpr_rt_stats SEC(".maps");


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

/* One of the route's next hops, by flow hash, from the same slot as the route. */
static __always_inline const struct xdpr_nh *rt_pick(__u32 slot, const struct xdpr_rtent *r, __u32 hash)
{
	__u32 n = r->nnh, i;
	struct xdpr_rtnh *e;
	void *nhs;

	if (n == 0 || n > XDPR_RT_MAX_NH)
		return NULL;
	i = r->nh + hash % n;
	nhs = bpf_map_lookup_elem(&xdpr_rtnh, &slot);
	if (!nhs)
		return NULL;
	e = bpf_map_lookup_elem(nhs, &i);
	return e ? &e->nh : NULL;
}

/* The action's verdict for blackhole/pass, or STEP_RT_FIB after resolving a next hop. */
static __always_inline int rt_act(const struct xdpr_rtent *r, __u64 bytes)
{
	rt_count(r->id, bytes);
	if (r->action == XDPR_RT_BLACKHOLE)
		return XDPR_DROP_ROUTE_BLACKHOLE;
	if (r->action != XDPR_RT_VIA || r->nnh == 0)
		return XDPR_PASS_ROUTE;
	return STEP_RT_FIB;
}

/* After the FIB resolved the gateway: it must leave through the route's device. */
static __always_inline int rt_check_nh(int rc, const struct bpf_fib_lookup *fib, const struct xdpr_nh *nh)
{
	if (rc == BPF_FIB_LKUP_RET_SUCCESS && fib->ifindex != nh->ifindex)
		return XDPR_PASS_ROUTE_GW;
	if (rc == BPF_FIB_LKUP_RET_NOT_FWDED || rc == BPF_FIB_LKUP_RET_BLACKHOLE ||
	    rc == BPF_FIB_LKUP_RET_UNREACHABLE || rc == BPF_FIB_LKUP_RET_PROHIBIT)
		return XDPR_PASS_ROUTE_GW;
	return STEP_NEXT;
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
	return STEP_NEXT;
}

/*
 * Longest-prefix match of the address bytes a[0..len-1] (len 4 or 16, a
 * has 16 bytes) in a slot: one block per stride, then the record.  The
 * router's own addresses inside a route are XDPR_DIR_LOCAL entries: no
 * route, so their traffic goes to the kernel by the FIB.
 */
static __always_inline struct xdpr_rtent *rt_lookup(__u32 slot, const __u8 *a, __u32 len, __u32 base)
{
	struct xdpr_dir_block *b;
	struct xdpr_rtent *rec;
	void *dir = bpf_map_lookup_elem(&xdpr_rtdir, &slot), *recs;
	__u32 blk, e, i;

	if (!dir)
		return NULL;
	blk = base + a[0];
	b = bpf_map_lookup_elem(dir, &blk);
	if (!b)
		return NULL;
	e = b->e[a[1]];
	for (i = 2; i < len && (e & XDPR_DIR_GROUP); i++) {
		blk = e & ~XDPR_DIR_GROUP;
		b = bpf_map_lookup_elem(dir, &blk);
		if (!b)
			return NULL;
		e = b->e[a[i & 15]];
	}
	if (!e || e == XDPR_DIR_LOCAL || (e & XDPR_DIR_GROUP))
		return NULL;
	recs = bpf_map_lookup_elem(&xdpr_rtrec, &slot);
	if (!recs)
		return NULL;
	e--;
	rec = bpf_map_lookup_elem(recs, &e);
	return rec && rec->family ? rec : NULL;
}

static __always_inline struct xdpr_rtent *rt4_lookup(__u32 slot, __be32 daddr)
{
	__u8 a[16] = {};

	__builtin_memcpy(a, &daddr, 4);
	return rt_lookup(slot, a, 4, XDPR_DIR_V4);
}

static __always_inline struct xdpr_rtent *rt6_lookup(__u32 slot, const void *daddr)
{
	__u8 a[16];

	__builtin_memcpy(a, daddr, 16);
	return rt_lookup(slot, a, 16, XDPR_DIR_V6);
}

#endif /* XDPR_ROUTE_H */
