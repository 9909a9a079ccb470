/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ddos.h - DDoS meters and bans (xdpr_shared.h, "DDoS meters and bans"):
 * per-host packet and byte counters of traffic to protected prefixes, and
 * drops of banned hosts' traffic, before anything else is done with a
 * packet that arrived to be forwarded.
 *
 * One global function, verified once, called from xdpr_forward only when
 * XDPR_CFG_DDOS or XDPR_CFG_BANS is set: with both off, a packet pays the
 * test of two flag bits.  No shared writes per packet: meter values, ban
 * drop counters and the statistics are per CPU, added to without atomics.
 * A host's meter is this CPU's slot of its hash (xdpr_ddos_slots, an array
 * read) when free or its own; only a host whose slot another live host
 * holds goes to the hash tables, whose first packet inserts its entry (the
 * hash's own locking).
 */
#ifndef XDPR_DDOS_H
#define XDPR_DDOS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "parse.h"
#include "stats.h"

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 2 * XDPR_DDOS_PROT_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_ddos_prot_key);
	__type(value, __u32);
} xdpr_ddos_prot SEC(".maps");

/* Preallocated (the loader may size it): one entry per destination host seen. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, XDPR_DDOS_HOSTS);
	__type(key, struct xdpr_ddos_key);
	__type(value, struct xdpr_ddos_ctr);
} xdpr_ddos_to SEC(".maps");

/* Sources: LRU, so spoofed floods evict old entries instead of filling it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, XDPR_DDOS_SOURCES);
	__type(key, struct xdpr_ddos_key);
	__type(value, struct xdpr_ddos_ctr);
} xdpr_ddos_from SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, XDPR_DDOS_BAN_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_ddos_key);
	__type(value, struct xdpr_ddos_ban);
} xdpr_ddos_bans SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpr_ddos_stat);
} xdpr_ddos_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_DDOS_BITS_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} xdpr_ddos_bits SEC(".maps");

/* The meters' fast table: one slot per hash, per CPU (xdpr_shared.h); the loader sizes it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_DDOS_SLOTS);
	__type(key, __u32);
	__type(value, struct xdpr_ddos_slot);
} xdpr_ddos_slots SEC(".maps");

/* May the key of hash h be banned?  Its bit in xdpr_ddos_bits (a ban sets it). */
static __always_inline int ddos_maybe(__u32 h)
{
	__u32 b = h & (XDPR_DDOS_BITS_WORDS * 64 - 1), w = b / 64;
	__u64 *v = bpf_map_lookup_elem(&xdpr_ddos_bits, &w);

	return v && (*v >> (b % 64) & 1);
}

/* A live ban of k that drops: its counters, 1; else 0 (a hash lookup: ask ddos_maybe first). */
static __always_inline int ddos_banned(const struct xdpr_ddos_key *k, __u64 now, __u32 len)
{
	struct xdpr_ddos_ban *b = bpf_map_lookup_elem(&xdpr_ddos_bans, k);

	if (!b || !(b->flags & XDPR_DDOS_F_DROP) || now >= b->until_ns)
		return 0;
	b->dropped_pkts++;
	b->dropped_bytes += len;
	return 1;
}

static __always_inline void ddos_count(struct xdpr_ddos_ctr *v, __u64 now, __u32 len, __u32 w)
{
	v->packets += w;
	v->bytes += (__u64)len * w;
	v->last_ns = now;
}

/* This CPU's share of the host's meter in a hash table, w packets of len bytes: 1, or 0 when it has none. */
static __always_inline int ddos_add(void *map, const struct xdpr_ddos_key *k, __u64 now, __u32 len, __u32 w)
{
	struct xdpr_ddos_ctr *v = bpf_map_lookup_elem(map, k);

	if (!v)
		return 0;
	ddos_count(v, now, len, w);
	return 1;
}

/*
 * A new host's entry in a hash table; when another CPU made it meanwhile,
 * that one is counted in.  0, or -1 when the table is full (the
 * preallocated "to" hash; the LRU one evicts).
 */
static __always_inline int ddos_insert(void *map, const struct xdpr_ddos_key *k, __u64 now, __u32 len, __u32 w)
{
	struct xdpr_ddos_ctr n = { .packets = w, .bytes = (__u64)len * w, .last_ns = now };
	long err = bpf_map_update_elem(map, k, &n, BPF_NOEXIST);

	if (err == -17 /* EEXIST */ && ddos_add(map, k, now, len, w))
		return 0;
	return err ? -1 : 0;
}

/*
 * a == b.  Word 0 holds family and direction, 1-4 the address: an IPv4
 * key's words 2-4 are zero in every key made (the datapath's from a zeroed
 * key, the loader's), so two IPv4 keys differ in words 0-1 or not at all.
 */
static __always_inline int ddos_key_eq(const struct xdpr_ddos_key *a, const struct xdpr_ddos_key *b)
{
	const __u32 *x = (const __u32 *)a, *y = (const __u32 *)b;

	if (x[0] != y[0] || x[1] != y[1])
		return 0;
	return b->family == AF_INET || (x[2] == y[2] && x[3] == y[3] && x[4] == y[4]);
}

/* Is the "to" key k inside a protected prefix?  (The LPM trie: a new host's first packet only.) */
static __always_inline int ddos_protected(const struct xdpr_ddos_key *k)
{
	struct xdpr_ddos_prot_key pk = { .plen = k->family == AF_INET ? 8 + 32 : 8 + 128, .family = k->family };

	__builtin_memcpy(pk.addr, k->addr, 16);
	return bpf_map_lookup_elem(&xdpr_ddos_prot, &pk) != NULL;
}

/*
 * Count w packets of len bytes in key k's meter (hash h): this CPU's slot
 * when k holds it or it is free (or marked not protected, or its host
 * idle), else the hash table map.
 * Only this CPU writes its slots (userspace clears them), so no atomics.
 * "to" keys (to set) are metered only inside a protected prefix: a host
 * that holds a slot or an entry is protected (deleting a prefix deletes
 * its hosts), a new one is looked up.  1: counted; 0: not protected; -1:
 * the hash table is full (untracked).
 */
static __always_inline int ddos_meter(void *map, const struct xdpr_ddos_key *k, __u32 h, int to, __u64 now,
				      __u32 len, __u32 w)
{
	__u32 i = bpf_get_smp_processor_id() << XDPR_DDOS_SLOT_BITS | h >> (32 - XDPR_DDOS_SLOT_BITS);
	struct xdpr_ddos_slot *s = bpf_map_lookup_elem(&xdpr_ddos_slots, &i);

	if (s && ddos_key_eq(&s->key, k)) {
		if (!(s->flags & XDPR_DDOS_SLOT_OUT)) {
			ddos_count(&s->ctr, now, len, w);
			return 1;
		}
		if (now - s->ctr.last_ns < XDPR_DDOS_OUT_NS)
			return 0; /* found not protected less than a second ago */
	}
	/* another's (or no slot for this CPU): the hash table */
	if (!s || (s->key.family && !(s->flags & XDPR_DDOS_SLOT_OUT) && now - s->ctr.last_ns < XDPR_DDOS_IDLE_NS)) {
		if (ddos_add(map, k, now, len, w))
			return 1;
		if (to && !ddos_protected(k))
			return 0;
		return ddos_insert(map, k, now, len, w) ? -1 : 1;
	}
	__builtin_memcpy(&s->key, k, sizeof(*k));
	if (to && !ddos_protected(k)) { /* remembered for a second: its next packets skip the trie */
		s->flags = XDPR_DDOS_SLOT_OUT;
		s->ctr.last_ns = now;
		return 0;
	}
	s->flags = 0;
	s->ctr.packets = w;
	s->ctr.bytes = (__u64)len * w;
	s->ctr.last_ns = now;
	return 1;
}

/*
 * The packet at data (an Ethernet frame, its VLAN tag already off) as it
 * arrived to be forwarded: 1 when a ban drops it, else 0 (metered when its
 * destination is protected and w is not 0).  flags: xdpr_cfg.flags; w:
 * what the packet counts for in the meters, ddos_weight's (0: not metered).
 * Anything not IPv4 or IPv6 with its whole fixed header passes untouched:
 * the packet path checks and counts it.
 */
__noinline int ddos_step(struct xdp_md *ctx, __u32 flags, __u32 w)
{
	struct xdpr_ddos_key src __attribute__((aligned(8))) = {}, dst __attribute__((aligned(8))) = {};
	struct xdpr_ddos_stat *st;
	void *data, *end;
	struct ethhdr *eth;
	__u32 zero = 0, len, hs, hd;
	__u64 now;
	int r;

	if (!ctx)
		return 0;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return 0;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = (void *)(eth + 1);

		if ((void *)(iph + 1) > end)
			return 0;
		__builtin_memcpy(src.addr, &iph->saddr, 4);
		__builtin_memcpy(dst.addr, &iph->daddr, 4);
		src.family = dst.family = AF_INET;
		len = bpf_ntohs(iph->tot_len);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);

		if ((void *)(ip6h + 1) > end)
			return 0;
		__builtin_memcpy(src.addr, &ip6h->saddr, 16);
		__builtin_memcpy(dst.addr, &ip6h->daddr, 16);
		src.family = dst.family = AF_INET6;
		len = sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len);
	} else {
		return 0;
	}
	src.dir = XDPR_DDOS_FROM;
	dst.dir = XDPR_DDOS_TO;
	hd = xdpr_ddos_hash(&dst);
	hs = xdpr_ddos_hash(&src);
	if (flags & XDPR_CFG_BANS) {
		int d = ddos_maybe(hd), s = ddos_maybe(hs);

		if (d | s) {
			now = bpf_ktime_get_coarse_ns();
			if ((d && ddos_banned(&dst, now, len)) || (s && ddos_banned(&src, now, len))) {
				st = bpf_map_lookup_elem(&xdpr_ddos_stats, &zero);
				if (st)
					st->banned++;
				return 1;
			}
		}
	}
	if (!w)
		return 0;
	st = bpf_map_lookup_elem(&xdpr_ddos_stats, &zero);
	if (!st)
		return 0;
	now = bpf_ktime_get_coarse_ns();
	r = ddos_meter(&xdpr_ddos_to, &dst, hd, 1, now, len, w);
	if (r <= 0) {
		if (r < 0)
			st->untracked += w;
		return 0;
	}
	st->metered += w;
	ddos_meter(&xdpr_ddos_from, &src, hs, 0, now, len, w);
	return 0;
}

/*
 * What this packet counts for in the meters: 0 when they are off or the
 * packet is not sampled, else xdpr_cfg.ddos_sample (1 in N packets metered
 * per CPU on average, at random gaps (stats.h, sample_take), each counted
 * N times: the meters estimate the traffic at 1/N of the cost; the bans
 * see every packet).  Inline in
 * xdpr_forward, so that a packet the sample skips costs no call when there
 * is no ban either.
 */
static __always_inline __u32 ddos_weight(const struct xdpr_cfg *cfg)
{
	struct xdpr_ddos_stat *st;
	__u32 zero = 0, n = cfg->ddos_sample;

	if (!(cfg->flags & XDPR_CFG_DDOS))
		return 0;
	if (n <= 1)
		return 1;
	st = bpf_map_lookup_elem(&xdpr_ddos_stats, &zero);
	return st && sample_take(&st->tick, n) ? n : 0;
}

#endif /* XDPR_DDOS_H */
