/* SPDX-License-Identifier: GPL-2.0 */
/*
 * maps.h - the maps of the fast path outside the route map (route.h):
 * interfaces, redirect targets, configuration, counters and the NAT tables.
 * Their value types and sizes are in xdpr_shared.h; userspace finds them by
 * name (XDPR_MAP_* there, map_names in the loader).
 */
#ifndef XDPR_MAPS_H
#define XDPR_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xdpr_shared.h"
#include "parse.h"

/* Per-interface settings, key = ifindex in the router's namespace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_MAX_IFACES);
	__type(key, __u32);
	__type(value, struct xdpr_iface);
} xdpr_ifaces SEC(".maps");

/* Redirect targets: every attached interface, key and value = ifindex. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, XDPR_MAX_IFACES);
	__type(key, __u32);
	__type(value, __u32);
} xdpr_tx_ports SEC(".maps");

/* Exit reasons, per CPU, per interface slot. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_MAX_IFACES);
	__type(key, __u32);
	__type(value, struct xdpr_slot);
} xdpr_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpr_cfg);
} xdpr_cfg SEC(".maps");

/* FIB parameters live off the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpf_fib_lookup);
} xdpr_fib_scr SEC(".maps");

/*
 * The packet as offsets (struct pkt4_io, parse.h), per CPU: what the IPv4
 * path hands to its global steps, off the stack (their call chains share
 * 512 bytes).  Every field is written before it is read.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pkt4_io);
} xdpr_io_scr SEC(".maps");

/* ---- source NAT ---- */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_NAT_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xdpr_nat_rule);
} xdpr_nat_rules SEC(".maps");

/* NAT events per CPU per rule: [rule * XDPR_NE_MAX + event]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_NAT_MAX_RULES * XDPR_NE_MAX);
	__type(key, __u32);
	__type(value, __u64);
} xdpr_nat_stats SEC(".maps");

/* Sessions: two halves each (xdpr_ct_key.dir). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * XDPR_NAT_MAX_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_ct_key);
	__type(value, struct xdpr_ct_val);
} xdpr_nat_ct SEC(".maps");

/* Outside address/port/protocol -> the inside endpoint that owns it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_NAT_MAX_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_bind_key);
	__type(value, struct xdpr_bind);
} xdpr_nat_bind SEC(".maps");

/* Inside endpoint (per rule) -> its binding: endpoint-independent mapping. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_NAT_MAX_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_eim_key);
	__type(value, struct xdpr_eim_val);
} xdpr_nat_eim SEC(".maps");

/* Sessions per inside host (host limit); an entry lives while it has sessions. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_NAT_MAX_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __be32);
	__type(value, struct xdpr_host);
} xdpr_nat_hosts SEC(".maps");

/* Recent sessions (outbound keys) in creation order; [0] of _ringhd is the head. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_NAT_RING);
	__type(key, __u32);
	__type(value, struct xdpr_ct_key);
} xdpr_nat_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} xdpr_nat_ringhd SEC(".maps");

/* Allocator state per CPU, per rule and protocol (see nat_bind.h). */
struct nat_cursor {
	__u32 next;            /* where the next search starts */
	__u32 scanned;         /* ports probed since the last success */
	__u64 exhausted_until; /* ns: the whole range was probed in vain */
	__u16 min;             /* the range this is about (a rule id is reused) */
	__u16 max;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_NAT_MAX_RULES * 4);
	__type(key, __u32);
	__type(value, struct nat_cursor);
} xdpr_nat_cursor SEC(".maps");

/*
 * Rate limits shared by all CPUs, touched only on rare paths:
 * [0] the last whole-table sweep under pressure (ns), [1..] unused.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} xdpr_nat_sweep SEC(".maps");

/* ICMP errors sent from XDP, per CPU: window start (ns) and count in it. */
struct icmp_budget {
	__u64 window;
	__u64 sent;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct icmp_budget);
} xdpr_icmp_rl SEC(".maps");

#endif /* XDPR_MAPS_H */
