/* SPDX-License-Identifier: GPL-2.0 */
/*
 * maps.h - the maps of the fast path outside the route map (route.h):
 * interfaces, redirect targets, configuration, counters and the NAT tables.
 * Their value types and sizes are in xdpr_shared.h; userspace finds them by
 * name (XDPR_MAPS in loader/libxdpr.h).
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

/*
 * Redirect targets: every attached port, key and value = ifindex.  A VLAN
 * has an entry too, never a target (its frames leave through its port):
 * the kernel removes it with the device, which nat_if_gone reads.
 */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, XDPR_MAX_IFACES);
	__type(key, __u32);
	__type(value, __u32);
} xdpr_tx_ports SEC(".maps");

/* A port's 802.1Q VLANs (xdpr_shared.h, bpf/vlan.h): (trunk, VID) -> the VLAN's counter slot, */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_MAX_TRUNKS * XDPR_VIDS);
	__type(key, __u32);
	__type(value, __u32);
} xdpr_vlans SEC(".maps");

/* and by that slot the VLAN's settings. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_MAX_IFACES);
	__type(key, __u32);
	__type(value, struct xdpr_vlan_cfg);
} xdpr_vlan_cfg SEC(".maps");

/*
 * xdpr_ifaces' generation (xdpr_shared.h, struct xdpr_if_cached): the
 * loader adds one to it, atomically through the mapping, after every change.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xdpr_if_gen SEC(".maps");

/* This CPU's copies of xdpr_ifaces entries, XDPR_IFC_SETS for each enum xdpr_ifc_use. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_IFC_USES * XDPR_IFC_SETS);
	__type(key, __u32);
	__type(value, struct xdpr_if_cached);
} xdpr_if_cache SEC(".maps");

/*
 * Interface ifindex's settings for the packet path, NULL if xdpr is not on
 * it: this CPU's copy of its xdpr_ifaces entry, copied again when the
 * generation moved, a tick began or another interface took the copy's
 * place (xdpr_shared.h, struct xdpr_if_cached).  Each use
 * (enum xdpr_ifc_use) has copies of its own, so a later lookup of the same
 * frame never overwrites one an earlier lookup returned.  Not a global
 * function: it returns a pointer into the map.
 */
static __noinline struct xdpr_iface *iface_get(__u32 ifindex, __u32 use)
{
	__u32 zero = 0, i, gen, tick = bpf_jiffies64();
	struct xdpr_if_cached *e;
	struct xdpr_iface *v;
	__u32 *g;

	g = bpf_map_lookup_elem(&xdpr_if_gen, &zero);
	if (!g || !ifindex)
		return NULL;
	gen = *(volatile __u32 *)g; /* before the hash: a change after it moves it again */
	i = use * XDPR_IFC_SETS + ifindex % XDPR_IFC_SETS; /* a use out of range: no copy, NULL */
	e = bpf_map_lookup_elem(&xdpr_if_cache, &i);
	if (!e)
		return NULL;
	if (e->ifindex == ifindex && e->gen == gen && e->tick == tick)
		return &e->cfg;
	v = bpf_map_lookup_elem(&xdpr_ifaces, &ifindex);
	if (!v)
		return NULL;
	e->cfg = *v;
	e->gen = gen;
	e->tick = tick;
	e->ifindex = ifindex;
	return &e->cfg;
}

/*
 * The frame's VLAN state, per CPU, written at the start of every frame:
 * which interface it came in on (the VLAN's for a tagged frame, whose tag
 * is taken off for the rest of the path) and which VLAN a redirect sends
 * it out of.  Steps ask in_ifindex(), never ctx->ingress_ifindex.
 */
struct xdpr_l2 {
	__u32 in_if;    /* ingress interface: the VLAN of a tagged frame */
	__u32 out_vlan; /* the VLAN a redirect leaves through (its ifindex), 0: none */
	__u16 in_tci;   /* the tag taken off at ingress (host order) */
	__u16 out_tci;  /* the tag a redirect out of out_vlan gets (claim_egress) */
	__u8 popped;    /* in_tci was taken off: it goes back on before a hand-over */
	__u8 in_prio;   /* the packet's priority from the ingress VLAN's ingress-qos-map */
	__u8 meter;     /* flow_in kept its tuple: flow_out counts it if it is redirected */
	__u8 pad;
	__u32 mac[3];   /* the addresses being moved, off the stack (xdpr_main's frame */
	__u32 vkey;     /* is on every call chain), and the xdpr_vlans and */
	__u32 vslot;    /* xdpr_vlan_cfg keys */
};

/*
 * The TCI for a frame leaving through VLAN vl with this packet priority:
 * its VID, its egress-qos-map's PCP (DEI 0).  The priority is the
 * kernel's: rt_tos2priority of an IPv4 TOS (bits 4-3 -> 0 best effort,
 * 2 bulk, 6 interactive, 4 interactive bulk), for IPv6 the ingress VLAN's
 * ingress-qos-map of the PCP it came with (0 untagged).
 */
static __always_inline __u16 vlan_tci_of(const struct xdpr_iface *vl, __u32 prio)
{
	if (prio > 16)
		prio = 16;
	return (vl->vid & 0xfff) | ((__u16)(vl->pcp[prio] & 7) << 13);
}

static __always_inline __u32 vlan_prio(const struct xdpr_l2 *l2, int tos)
{
	return tos >= 0 ? (0x4620 >> (((tos >> 3) & 3) * 4)) & 0xf : l2->in_prio;
}

/* ICMP errors sent from XDP, per CPU: window start (ns) and count in it. */
struct icmp_budget {
	__u64 window;
	__u64 sent;
};

/*
 * Per CPU, off the 512-byte stack: the FIB parameters (first: a lookup of
 * xdpr_fib_scr is a struct bpf_fib_lookup), the L2 state of the frame, and
 * the ICMP budget (kept across packets).  One map for the three: a program
 * uses at most 64 maps.
 */
struct cpu_scr {
	struct bpf_fib_lookup fib;
	struct xdpr_l2 l2;
	struct icmp_budget icmp;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_scr);
} xdpr_fib_scr SEC(".maps");

static __always_inline struct xdpr_l2 *l2_scratch(void)
{
	__u32 zero = 0;
	struct cpu_scr *s = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);

	return s ? &s->l2 : NULL;
}

/*
 * The interface the frame came in on, a VLAN's for a tagged frame.  The
 * scratch is always there (an array's only key: xdpr_main stops without
 * it); 0, no interface, otherwise.  Not ctx->ingress_ifindex: clang keeps
 * &ctx->ingress_ifindex in a register across the path, and 6.1's verifier,
 * which does not know the lookup cannot fail, refuses that "modified ctx".
 */
static __always_inline __u32 in_ifindex(struct xdp_md *ctx)
{
	struct xdpr_l2 *l2 = l2_scratch();

	/*
	 * Never NULL (one per-CPU entry).  Not ctx->ingress_ifindex as the
	 * fallback: clang keeps ctx + 12 in a register for it, which 6.12's
	 * verifier refuses to load through.
	 */
	(void)ctx;
	return l2 ? l2->in_if : 0;
}

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

/*
 * The live table of a NAT outer map (xdpr_nat_ct, ...), NULL if none: the
 * caller then does nothing it would have done with the table.
 */
static const volatile __u32 nat_slot_key[2] = { 0, 1 }; /* keys off the stack (.rodata) */

static __always_inline void *nat_tab(void *outer)
{
	struct xdpr_cfg *c = bpf_map_lookup_elem(&xdpr_cfg, (const void *)&nat_slot_key[0]);

	if (!c)
		return NULL;
	return bpf_map_lookup_elem(outer, (const void *)&nat_slot_key[c->nat_slot & 1]);
}

#ifndef ENOENT
#define ENOENT 2
#endif
#ifndef ENOMEM
#define ENOMEM 12
#endif

/* A lookup, update or delete in the live table of a NAT outer map. */
static __always_inline void *nat_lookup(void *outer, const void *key)
{
	void *m = nat_tab(outer);

	return m ? bpf_map_lookup_elem(m, key) : NULL;
}

static __always_inline long nat_update(void *outer, const void *key, const void *val, __u64 flags)
{
	void *m = nat_tab(outer);

	return m ? bpf_map_update_elem(m, key, val, flags) : -ENOMEM;
}

static __always_inline long nat_delete(void *outer, const void *key)
{
	void *m = nat_tab(outer);

	return m ? bpf_map_delete_elem(m, key) : -ENOENT;
}

/* Tables are being copied (`nat limit sessions`): nothing is created or deleted. */
static __always_inline int nat_frozen(void)
{
	struct xdpr_cfg *c = bpf_map_lookup_elem(&xdpr_cfg, (const void *)&nat_slot_key[0]);

	return !c || (c->nat_frozen_until && bpf_ktime_get_coarse_ns() < c->nat_frozen_until);
}

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

/*
 * The NAT tables.  Each is an inner map of a two-slot outer map; the live
 * slot is xdpr_cfg.nat_slot and their size xdpr_cfg.nat_sess, both chosen
 * at run time (`nat limit sessions`: new tables filled aside, switched in).
 * The definitions below are the shapes (and the default size).
 */

/*
 * Sessions: two halves each (xdpr_ct_key.dir), in slots of an array
 * (xdpr_ct_slot, xdpr_shared.h says how), mmap-able so that userspace
 * reads it whole; the halves that find no free slot go to the hash table.
 */
struct nat_cta_tab {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_CT_FIRST + 2 * XDPR_NAT_DEF_SESS);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xdpr_ct_slot));
};

/* The halves the array had no slot for (the overflow). */
struct nat_ct_tab {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * XDPR_NAT_DEF_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct xdpr_ct_key)); /* libbpf 1.1: sizes, not types, in inner maps */
	__uint(value_size, sizeof(struct xdpr_ct_val));
};

/* Outside address/port/protocol -> the inside endpoint that owns it. */
struct nat_bind_tab {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_NAT_DEF_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct xdpr_bind_key));
	__uint(value_size, sizeof(struct xdpr_bind));
};

/* Inside endpoint (per rule) -> its binding: endpoint-independent mapping. */
struct nat_eim_tab {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_NAT_DEF_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct xdpr_eim_key));
	__uint(value_size, sizeof(struct xdpr_eim_val));
};

/* Sessions per inside host (host limit); an entry lives while it has sessions. */
struct nat_hosts_tab {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_NAT_DEF_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(__be32));
	__uint(value_size, sizeof(struct xdpr_host));
};

/* Recent sessions (outbound keys) in creation order; [0] of _ringhd is the head. */
struct nat_ring_tab {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_NAT_DEF_SESS);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xdpr_ct_key));
};

#define NAT_OUTER(name, tab)                          \
	struct {                                      \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS); \
		__uint(max_entries, 2);               \
		__type(key, __u32);                   \
		__array(values, struct tab);          \
	} name SEC(".maps")

NAT_OUTER(xdpr_nat_ct, nat_ct_tab);
NAT_OUTER(xdpr_nat_cta, nat_cta_tab);
NAT_OUTER(xdpr_nat_bind, nat_bind_tab);
NAT_OUTER(xdpr_nat_eim, nat_eim_tab);
NAT_OUTER(xdpr_nat_hosts, nat_hosts_tab);
NAT_OUTER(xdpr_nat_ring, nat_ring_tab);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} xdpr_nat_ringhd SEC(".maps");

/* Port forwards: outside address/port/protocol -> inside endpoint (xdpr_shared.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_FWD_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_bind_key);
	__type(value, struct xdpr_fwd);
} xdpr_nat_fwd SEC(".maps");

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
 * [0] the last whole-table sweep under pressure (ns), [1] where its walk
 * of the ring starts next (tables bigger than the default).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} xdpr_nat_sweep SEC(".maps");

#endif /* XDPR_MAPS_H */
