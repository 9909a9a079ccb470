/* SPDX-License-Identifier: GPL-2.0 */
/*
 * filter_maps.h - the filter's maps (layout: xdpr_shared.h, "filter").
 * A compiled rule list is one slot of each xdpr_flt_* outer map; the CLI
 * builds the idle slot whole and switches xdpr_cfg.flt_slot, so packets see
 * the old list or the new one, never a mix.  Flow states and per-rule
 * counters are outside the slots.
 */
#ifndef XDPR_FILTER_MAPS_H
#define XDPR_FILTER_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xdpr_shared.h"
#include "maps.h"

/* Inner maps: sizes vary with the rule list (BPF_F_INNER_MAP); the definitions are the smallest. */
struct flt_word {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_FF_MAX * XDPR_FLT_WORDS);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u64));
};

struct flt_desc {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_FLT_DESC_EMPTY + 1);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xdpr_flt_desc));
};

struct flt_val {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_FV_MAX);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
};

struct flt_rule {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xdpr_flt_rule));
};

struct flt_lpm4 {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 2 * XDPR_FLT_LPM_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct xdpr_flt_lpm4));
	__uint(value_size, sizeof(__u32));
};

struct flt_lpm6 {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 2 * XDPR_FLT_LPM_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct xdpr_flt_lpm6));
	__uint(value_size, sizeof(__u32));
};

struct flt_if {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * XDPR_MAX_IFACES_FLT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct xdpr_flt_ifkey));
	__uint(value_size, sizeof(__u32));
};

#define FLT_OUTER(name, inner)                        \
	struct {                                      \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS); \
		__uint(max_entries, 2);               \
		__type(key, __u32);                   \
		__array(values, struct inner);        \
	} name SEC(".maps")

FLT_OUTER(xdpr_flt_word, flt_word);
FLT_OUTER(xdpr_flt_desc, flt_desc);
FLT_OUTER(xdpr_flt_val, flt_val);
FLT_OUTER(xdpr_flt_rule, flt_rule);
FLT_OUTER(xdpr_flt_lpm4, flt_lpm4);
FLT_OUTER(xdpr_flt_lpm6, flt_lpm6);
FLT_OUTER(xdpr_flt_if, flt_if);

/* One header per slot: rule count, policy, flags. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct xdpr_flt_hdr);
} xdpr_flt_hdr SEC(".maps");

/* Packets and bytes each rule decided (index = rule id; 0 = the policy), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_FLT_IDS);
	__type(key, __u32);
	__type(value, struct xdpr_ctr);
} xdpr_flt_stats SEC(".maps");

/*
 * Flow states of accepted forwarded flows without a NAT session.  Each CPU
 * evicts from its own LRU list (no list lock shared between CPUs when a
 * new flow needs room); a state is found from any CPU.  Sized and switched
 * with the NAT tables (maps.h: slot xdpr_cfg.nat_slot, max(XDPR_FLT_FLOWS,
 * nat_sess) entries).
 */
struct flt_flows_tab {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XDPR_FLT_FLOWS);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(key_size, sizeof(struct xdpr_flow_key));
	__uint(value_size, sizeof(struct xdpr_flt_flow));
};

NAT_OUTER(xdpr_flt_flows, flt_flows_tab);

/*
 * Per-CPU copies of established IPv4 flow states (xdpr_shared.h, struct
 * xdpr_flt_hot): CPU c's set k at c << XDPR_FLT_HOT_BITS | k, the loader
 * sizes it for every possible CPU (xdpr_skel_prepare; one CPU's without).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE); /* values page-aligned: a set is one cache line */
	__uint(max_entries, 1 << XDPR_FLT_HOT_BITS);
	__type(key, __u32);
	__type(value, struct xdpr_flt_hot_set);
} xdpr_flt_hot SEC(".maps");

/* The IPv6 copies (xdpr_shared.h, struct xdpr_flt_hot6), sized as xdpr_flt_hot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XDPR_FLT_HOT6_WAYS << XDPR_FLT_HOT6_BITS);
	__type(key, __u32);
	__type(value, struct xdpr_flt_hot6);
} xdpr_flt_hot6 SEC(".maps");

/* This CPU's count of flow states made in the current tenth of a second (xdpr_shared.h, struct xdpr_flt_churn). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpr_flt_churn);
} xdpr_flt_churn SEC(".maps");

/*
 * IPv4 first fragments the filter accepted, for their later fragments
 * (which carry no ports): key = fragment identity (RFC 791), value = when.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XDPR_FLT_FRAGS);
	__type(key, struct xdpr_frag_key);
	__type(value, __u64);
} xdpr_flt_frags SEC(".maps");

#endif /* XDPR_FILTER_MAPS_H */
