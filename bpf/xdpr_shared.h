/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xdpr_shared.h - types, limits and reason codes shared by the XDP program
 * and userspace.  uapi types only: this header is compiled by clang -target
 * bpf and by gcc for the loader, CLI and tests.
 */
#ifndef XDPR_SHARED_H
#define XDPR_SHARED_H

#include <linux/types.h>
#include "reasons.h"

/*
 * Interfaces one router can hold, ports and their VLANs together (counter
 * slots; slot 0 is "unknown").
 */
#define XDPR_MAX_IFACES 1024

/*
 * Per-interface settings, in xdpr_ifaces (hash, key = ifindex in the
 * router's network namespace).  Written by the loader before the program is
 * attached to the interface, removed after it is detached.
 */
enum xdpr_iface_flags {
	XDPR_IF_GENERIC = 1 << 0, /* attached in generic (skb) mode            */
	XDPR_IF_XMIT    = 1 << 1, /* driver can transmit redirected XDP frames */
	XDPR_IF_NAT_PENDING = 1 << 2, /* attached while NAT rules wait for its name: until
	                                 they are bound to it, their inside sources are
	                                 dropped here too (drop_nat_if_gone) */
	XDPR_IF_VLAN    = 1 << 3, /* an 802.1Q VLAN of an attached port (parent): its frames
	                             arrive and leave tagged through the port */
	XDPR_IF_RXVLAN_OFF = 1 << 4, /* port: xdpr turned its receive VLAN offload off (a
	                                tag stripped in hardware would hide the VLAN);
	                                detach turns it on again */
	XDPR_IF_FWD     = 1 << 5, /* port forwards arrive here (an applied forward rule names
	                             it): its inbound packets look for them, and the replies
	                             of their sessions are translated on the way out even
	                             where no source NAT rule covers the inside host */
	XDPR_IF_BINAT   = 1 << 6, /* outside interface of 1:1 NAT rules (bpf/binat.h) */
};

/* Source NAT rules an outside interface can carry. */
#define XDPR_NAT_IF_RULES 8

struct xdpr_iface {
	__u32 slot;    /* index into xdpr_stats, 1..XDPR_MAX_IFACES-1 */
	__u32 flags;   /* enum xdpr_iface_flags */
	__u8  mac[6];  /* the interface's address: unicast frames to others are not ours */
	__u8  nrules;  /* NAT rules on this (outside) interface */
	__u8  trunk;   /* port: its VLANs' row in xdpr_vlans, 1..XDPR_MAX_TRUNKS; 0: none */
	__u8  rules[XDPR_NAT_IF_RULES]; /* their ids, index into xdpr_nat_rules */
	/* VLANs (XDPR_IF_VLAN) only; zero on ports */
	__u32 parent;  /* the port (ifindex) its frames arrive and leave through */
	__u16 vid;     /* its VLAN id, 1..4094 */
	__u8  in_prio[8]; /* ingress-qos-map: PCP -> packet priority (16: above 15) */
	__u8  pcp[17]; /* egress-qos-map: packet priority 0..15 (16: above) -> PCP */
	__u8  pad2;
};

/*
 * The packet path's own copies of xdpr_ifaces entries (bpf/maps.h,
 * iface_get): per CPU, XDPR_IFC_SETS a lookup site, entry ifindex mod
 * XDPR_IFC_SETS, an array read instead of a hash lookup.  A copy holds
 * while xdpr_if_gen[0] is the generation it was made under, and for the
 * kernel tick it was made in.  The loader adds one to the generation after
 * every change to xdpr_ifaces (loader/core.c, xdpr_ifaces_changed), so the
 * next packet on every CPU reads the hash again; the tick bounds how long a
 * change whose writer was killed before it moved the generation goes
 * unseen (a tick: 4 ms at HZ=250), and costs a CPU one hash lookup a tick
 * per interface it sends through.
 */
#define XDPR_IFC_SETS 64
enum xdpr_ifc_use { XDPR_IFC_IN, XDPR_IFC_OUT, XDPR_IFC_NAT, XDPR_IFC_USES };

struct xdpr_if_cached {
	__u32 ifindex;      /* 0: empty */
	__u32 gen;          /* xdpr_if_gen[0] when it was copied */
	__u32 tick;         /* jiffies (low 32 bits) when it was copied */
	__u32 pad;
	struct xdpr_iface cfg;
};

/*
 * A port's VLANs, found with two array lookups (no hash on the way in):
 * xdpr_vlans, ARRAY, key (trunk - 1) * XDPR_VIDS + VID, trunk the port's
 * xdpr_iface.trunk, value the VLAN's counter slot (0: no VLAN of that VID,
 * or it is down); xdpr_vlan_cfg, ARRAY by counter slot: the VLAN's ifindex
 * and a copy of its xdpr_ifaces entry, written with it (loader/core.c
 * xdpr_iface_put).  The program checks that the copy is a VLAN of that
 * port and VID, so an entry left behind can only lead to the right VLAN.
 */
#define XDPR_MAX_TRUNKS 32 /* ports with VLANs at once */
#define XDPR_VIDS 4096

struct xdpr_vlan_cfg {
	__u32 ifindex; /* the VLAN; 0: the slot holds no VLAN */
	__u32 pad;
	struct xdpr_iface cfg;
};

/*
 * Why a frame left the program the way it did (reasons.h, the one list).
 * Every exit counts exactly one reason; the verdict follows from the reason
 * (xdpr_reason_verdict()).
 */
enum xdpr_reason {
#define XDPR_R_ENUM(e, v, n, d) e,
	XDPR_REASONS(XDPR_R_ENUM)
#undef XDPR_R_ENUM
	XDPR_REASON_MAX
};

/* One counter cell; xdpr_stats is a per-CPU array of struct xdpr_slot. */
struct xdpr_ctr {
	__u64 packets;
	__u64 bytes;
};

struct xdpr_slot {
	struct xdpr_ctr reason[XDPR_REASON_MAX];
};

/* Verdict for a reason: 0 aborted, 1 drop, 2 pass, 3 tx, 4 redirect (enum xdp_action). */
#define XDPR_RV_DROP     1
#define XDPR_RV_PASS     2
#define XDPR_RV_TX       3
#define XDPR_RV_REDIRECT 4
/* the reasons of one verdict as a bit mask, constant-folded from the list */
#define XDPR_R_IS_DROP(e, v, n, d)     | (XDPR_RV_##v == XDPR_RV_DROP ? 1ULL << (e) : 0)
#define XDPR_R_IS_TX(e, v, n, d)       | (XDPR_RV_##v == XDPR_RV_TX ? 1ULL << (e) : 0)
#define XDPR_R_IS_REDIRECT(e, v, n, d) | (XDPR_RV_##v == XDPR_RV_REDIRECT ? 1ULL << (e) : 0)
#define XDPR_DROP_REASONS     (0ULL XDPR_REASONS(XDPR_R_IS_DROP))
#define XDPR_TX_REASONS       (0ULL XDPR_REASONS(XDPR_R_IS_TX))
#define XDPR_REDIRECT_REASONS (0ULL XDPR_REASONS(XDPR_R_IS_REDIRECT))
_Static_assert(XDPR_REASON_MAX <= 64, "a reason's verdict is a bit of a 64-bit mask");
_Static_assert(XDPR_FWD == 0 && XDPR_REDIRECT_REASONS == 1, "forwarded is reason 0, the one redirect");

static inline int xdpr_reason_verdict(int reason)
{
	if (reason < 0 || reason >= XDPR_REASON_MAX)
		return XDPR_RV_PASS;
	if (XDPR_REDIRECT_REASONS >> reason & 1)
		return XDPR_RV_REDIRECT;
	if (XDPR_TX_REASONS >> reason & 1)
		return XDPR_RV_TX;
	if (XDPR_DROP_REASONS >> reason & 1)
		return XDPR_RV_DROP;
	return XDPR_RV_PASS;
}

/* Names of the BPF objects userspace looks for (<= 15 characters). */
#define XDPR_PROG_NAME   "xdpr_main"
#define XDPR_PROG_GC     "xdpr_nat_gc"
#define XDPR_PROG_FLT_GC  "xdpr_flt_gc"

/* ---- source NAT (IPv4) ---- */

#define XDPR_NAT_MAX_RULES 64      /* rule ids 1..63; 0 is "no rule"          */
/*
 * Sessions the NAT tables hold, set at run time (`xdpr nat limit sessions`,
 * xdpr_cfg.nat_sess): two session halves each (xdpr_nat_cta slots, or
 * xdpr_nat_ct, the overflow); as many bindings,
 * mappings, host entries and ring slots.  The tables are inner maps of
 * two-slot outer maps (the live one is xdpr_cfg.nat_slot), so a new size is
 * a new set of tables filled aside and switched in.
 */
#define XDPR_NAT_DEF_SESS  65536
#define XDPR_NAT_MIN_SESS  1024
#define XDPR_NAT_MAX_SESS  16777216

enum xdpr_nat_rule_flags {
	XDPR_NAT_MASQ = 1 << 0, /* outside address = the egress interface's own      */
	XDPR_NAT_EIF  = 1 << 1, /* endpoint-independent filtering (default: APDF)     */
	XDPR_NAT_RETIRED = 1 << 2, /* replaced: matches no new packet, its sessions live on
	                              until they end or the interface's rule is deleted */
	XDPR_NAT_FWD  = 1 << 3, /* a port forward (`nat add in`): inbound, see struct xdpr_fwd */
	XDPR_NAT_FWD_IFADDR = 1 << 4, /* a forward given no addr: pool_first follows its interface's
	                                 primary IPv4 address (0: it has none; loader/nat.c) */
};

/* A waiting rule's ifindex when its interface was never attached: no device has it. */
#define XDPR_NAT_IF_NONE 0xffffffffu

struct xdpr_nat_rule {
	__u32 ifindex;      /* outside interface; 0 = unused slot, XDPR_NAT_IF_NONE: waiting */
	__u32 flags;        /* enum xdpr_nat_rule_flags */
	union {
		struct {
			__be32 src_net;  /* inside sources translated by this rule */
			__be32 src_mask;
		};
		struct {                 /* XDPR_NAT_FWD: the inside host and its ports */
			__be32 fwd_to;
			__u16 fwd_port;  /* first inside port, host order (0: the outside ones) */
			__u8 fwd_proto;  /* IPPROTO_TCP, IPPROTO_UDP, or 0: both */
			__u8 fwd_one;    /* every outside port to fwd_port (range to one port) */
		};
	};
	__be32 pool_first;  /* pool rules: first outside address; forwards: the outside address */
	__u32 pool_count;   /* pool rules: number of addresses */
	__be32 masq_addr;   /* masquerade without BPF_FIB_LOOKUP_SRC: address kept by the CLI */
	__u16 port_min;     /* outside port (ICMP id) range, host order; forwards: the forwarded ones */
	__u16 port_max;
	char ifname[16];    /* outside interface by name (IFNAMSIZ): the rule follows it when the
	                       interface is deleted and re-created (new ifindex) */
	__u32 pending;      /* control plane only: the change in flight on this slot, 0 when none
	                       (loader/nat.c); the packet path ignores it */
	__u32 pad;
};

/* xdpr_cfg.flags: router-wide switches, every bit of them here (numbers are ABI). */
enum xdpr_cfg_flags {
	XDPR_CFG_NAT      = 1u << 0,  /* at least one NAT rule exists */
	XDPR_CFG_FIB_SRC  = 1u << 1,  /* kernel supports BPF_FIB_LOOKUP_SRC */
	XDPR_CFG_ROUTES   = 1u << 2,  /* the route map has routes */
	XDPR_CFG_FILTER   = 1u << 3,  /* the filter has rules or policy drop: forwarded packets meet it */
	XDPR_CFG_BINAT    = 1u << 4,  /* at least one 1:1 NAT rule exists (the NAT steps run) */
	XDPR_CFG_FLOWS    = 1u << 5,  /* the flow meter counts forwarded packets (bpf/flow.h) */
	XDPR_CFG_NATLOG   = 1u << 6,  /* NAT events go to xdpr_natlog (NAT event logging, below) */
	XDPR_CFG_DDOS     = 1u << 7,  /* the DDoS meters count (DDoS defence, below) */
	XDPR_CFG_NPT      = 1u << 8,  /* NPTv6 rules exist (below) */
	XDPR_CFG_NPT_SLOT = 1u << 9,  /* the live xdpr_npt slot */
	XDPR_CFG_BANS     = 1u << 10, /* the DDoS ban table is not empty */
	/* bits 11-13: free */
	/*
	 * netfilter has rules forwarded packets would bypass through XDP (an
	 * nft forward policy added after attach, loader/core.c xdpr_nf_follow)
	 * and no port was attached with "force": what the fast path would
	 * redirect goes to the kernel instead (pass_nft_policy), after NAT
	 */
	XDPR_CFG_NFT_POLICY = 1u << 14,
};

/* xdpr_cfg[0]: router-wide settings. */
struct xdpr_cfg {
	__u32 flags;            /* enum xdpr_cfg_flags */
	__u32 tcp_est;          /* timeouts, seconds: RFC 5382 >= 7440 */
	__u32 tcp_trans;        /* RFC 5382 >= 240 */
	__u32 udp;              /* RFC 4787 >= 120 */
	__u32 icmp;             /* RFC 5508 >= 60 */
	__u32 holddown;         /* a freed port is not given to another host for this long */
	__u32 host_limit;       /* sessions per inside host (RFC 6888) */
	__u32 next_rule;        /* userspace: rule ids are handed out round robin */
	__u32 rt_slot;          /* live route table: xdpr_rtdir/xdpr_rtrec slot 0 or 1 */
	__u32 flt_slot;         /* live filter: slot 0 or 1 of the xdpr_flt_* maps (bit 0), and
	                           XDPR_FLT_SLOT_SEE_EST: that slot's header has XDPR_FLT_SEE_EST
	                           (one word: a packet reads the slot and its flag together) */
	__u32 flt_gen;          /* bumped after flow states are deleted: the per-CPU copies lapse */
	__u32 nat_slot;         /* live NAT tables: slot 0 or 1 of xdpr_nat_cta, _ct, _bind, _eim, _hosts, _ring */
	__u32 nat_sess;         /* sessions they hold (the ring's length) */
	__u64 nat_frozen_until; /* ns (CLOCK_MONOTONIC): till then the NAT tables are being copied,
	                           no session is created or deleted (drop_nat_resizing); a copy
	                           that dies leaves a freeze that ends by itself */
	__u32 flow_sample;      /* XDPR_CFG_FLOWS: meter 1 packet in N per CPU (0, 1: every one) */
	__u32 ddos_sample;      /* XDPR_CFG_DDOS: meter 1 packet in N per CPU (random gaps), counted N times (0, 1: every one) */
};

#define XDPR_DEF_TCP_EST   7440
#define XDPR_DEF_TCP_TRANS 240
#define XDPR_DEF_UDP       300
#define XDPR_DEF_ICMP      60
#define XDPR_DEF_HOLDDOWN  120
#define XDPR_DEF_HOST_LIMIT 4096

enum xdpr_ct_dir { XDPR_CT_OUT = 0, XDPR_CT_IN = 1 };

/*
 * A session is two halves (session table entries), one per direction, each
 * keyed by the 5-tuple as it arrives and holding what to write:
 *   OUT {inside, remote, inside port, remote port} -> outside addr/port (new source)
 *   IN  {remote, outside, remote port, outside port} -> inside addr/port (new dest)
 * ICMP echo uses the identifier as the local "port" and 0 as the remote one.
 */
struct xdpr_ct_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 dir;           /* enum xdpr_ct_dir */
	__u8 pad[2];
};

enum xdpr_ct_state {    /* bits, OR-ed over both halves */
	XDPR_CT_SEEN_OUT = 1 << 0,
	XDPR_CT_SEEN_IN  = 1 << 1,
	XDPR_CT_FIN_OUT  = 1 << 2,
	XDPR_CT_FIN_IN   = 1 << 3,
	XDPR_CT_RST      = 1 << 4,
};

struct xdpr_ct_val {
	__be32 xaddr;       /* address to write (OUT: new source, IN: new destination) */
	__be16 xport;
	__u8 state;         /* enum xdpr_ct_state bits seen in this direction */
	__u8 rule;
	__u64 last_seen;    /* ns, CLOCK_MONOTONIC (coarse), this direction */
	__u64 created;
	__u64 bind_gen;     /* generation of the binding this session holds */
};

/*
 * The session table proper (xdpr_nat_cta): open addressing over an array of
 * 64-byte slots, key and value in one cache line, so that an established
 * packet's lookup costs one line where the kernel's hash table costs two
 * (its bucket array, then the element).  A half lives in the first free of
 * XDPR_CT_PROBES slots from slot (xdpr_ct_hash(key) & mask); when all of
 * them are taken it goes to the kernel's hash table xdpr_nat_ct instead
 * (the overflow).  Array index 0 is the header (read only once made),
 * index 1 the count of halves held (its own line: written per session made
 * or deleted), slots from XDPR_CT_FIRST.
 *
 * A slot's state word is gen << 2 | enum xdpr_cts.  Slots go EMPTY -> BUSY
 * -> LIVE -> TOMB -> BUSY ... and never back to EMPTY while the table
 * lives, so a lookup stops at an EMPTY slot, and looks in the overflow only
 * when none of its slots is EMPTY.  A half is inserted with its first
 * slot's lock word held (so two CPUs cannot insert one key twice; a key
 * whose window has no EMPTY slot is looked for in the overflow first, since
 * a TOMB there may be newer than the key's move to the overflow), deleted
 * by compare-and-swap of the whole state word (gen: a slot freed and taken
 * again in between does not match).  A deleted slot is taken again at once,
 * as the kernel's hash table reuses a deleted element at once: a value
 * pointer a CPU still holds may by then be another session's.
 */
#define XDPR_CT_PROBES   4
#define XDPR_CT_FIRST    2
#define XDPR_CT_MAX_SLOTS (1u << 24) /* 1 GiB, for 8M sessions; more overflow more */

enum xdpr_cts { XDPR_CTS_EMPTY = 0, XDPR_CTS_BUSY = 1, XDPR_CTS_LIVE = 2, XDPR_CTS_TOMB = 3 };

struct xdpr_ct_slot {
	__u32 lock;         /* held by the CPU inserting a key whose first slot this is */
	__u32 state;        /* gen << 2 | enum xdpr_cts */
	__u64 pad;
	struct xdpr_ct_key key;
	struct xdpr_ct_val val;
};

/* Index 0 of xdpr_nat_cta (the rest of the line unused); index 1 holds the count. */
struct xdpr_ct_hdr {
	__u32 mask;         /* slots - 1 (a power of two) */
	__u32 limit;        /* halves the table and its overflow hold at most */
	__u64 count;        /* index 1 only: halves held, array and overflow */
	__u64 pad[6];
};

/*
 * Slots for a table of that many sessions: a slot per half (a power of two
 * at least that).  Half full, ~3% of halves find their window taken and go
 * to the overflow; full, ~18% (measured with bench/tabbench).
 */
static inline __u32 xdpr_ct_slots(__u32 sessions)
{
	__u64 want = 2ULL * sessions, n = 4;

	while (n < want && n < XDPR_CT_MAX_SLOTS)
		n <<= 1;
	return (__u32)n;
}

/* A key's first slot (before masking).  The key's pad bytes must be 0. */
static inline __u32 xdpr_ct_hash(const struct xdpr_ct_key *k)
{
	const __u32 *w = (const __u32 *)k;
	__u64 h = (__u64)w[0] * 0x9e3779b97f4a7c15ULL;

	h = (h ^ w[1]) * 0xc2b2ae3d27d4eb4fULL;
	h = (h ^ w[2]) * 0x9e3779b97f4a7c15ULL;
	h = (h ^ w[3]) * 0xc2b2ae3d27d4eb4fULL;
	return (__u32)(h >> 32);
}

/* Outside address/port ownership (the EIM binding, reverse side). */
struct xdpr_bind_key {
	__be32 out_addr;
	__be16 out_port;
	__u8 proto;
	__u8 pad;
};

struct xdpr_bind {
	__be32 in_addr;
	__be16 in_port;
	__u8 rule;
	__u8 pad;
	__u64 state;        /* generation << 32 | dying | references: one word, changed
	                       only by compare-and-swap (bpf/nat_bind.h says why) */
	__u64 last_active;  /* ns: refreshed by its sessions' traffic (at most once a
	                       second), set when the last reference goes */
	__u64 pad2;
};

#define XDPR_BIND_DYING     (1ULL << 31)
#define XDPR_BIND_REFS(s)   ((__u32)((s) & 0x7fffffffULL))
#define XDPR_BIND_GEN(s)    ((__u32)((s) >> 32))

/* Inside endpoint -> its binding (endpoint-independent mapping, RFC 4787 REQ-1). */
struct xdpr_eim_key {
	__be32 in_addr;
	__be16 in_port;
	__u8 proto;
	__u8 rule;
};

struct xdpr_eim_val {
	__be32 out_addr;
	__be16 out_port;
	__u16 pad;
	__u64 gen;          /* generation of the binding; 0 while one CPU claims the
	                       endpoint (the others wait or adopt what it publishes) */
};

struct xdpr_host {
	__u32 nsess;        /* sessions, | XDPR_HOST_DYING while the entry is deleted */
	__be32 addr;        /* the host again (= the key).  nsess and addr are one 64-bit
	                       word, changed only by compare-and-swap (per flow): a CPU
	                       holding a pointer to an entry that was deleted and reused
	                       for another host sees another addr, and its CAS fails */
};

#define XDPR_HOST_DYING 0x80000000U

/*
 * Port forwards (`nat add in`): xdpr_nat_fwd, hash, one entry per outside
 * address, port and protocol a forward claims (key struct xdpr_bind_key,
 * as a binding's), to the inside endpoint and the forward's rule.  Live
 * only while that rule is an applied forward of the arrival interface
 * (XDPR_NAT_FWD, no change pending): the rule slot is the commit point.
 * The allocator never hands out a port that has an entry here.  A
 * forward's sessions are created by inbound packets and hold no binding
 * and no host count (bind_gen 0).
 */
#define XDPR_FWD_MAX 131072

struct xdpr_fwd {
	__be32 in_addr;
	__be16 in_port;
	__u8 rule;
	__u8 pad;
};

/* NAT events, counted per CPU per rule in xdpr_nat_stats[rule * XDPR_NE_MAX + event]. */
enum xdpr_nat_event {
	XDPR_NE_XLATE_OUT = 0,  /* packets translated outbound */
	XDPR_NE_XLATE_IN,       /* packets translated back inbound */
	XDPR_NE_SESS_NEW,       /* sessions created */
	XDPR_NE_SESS_EXPIRED,   /* sessions removed after their timeout */
	XDPR_NE_SESS_EVICTED,   /* sessions removed early because the table was full */
	XDPR_NE_PORT_PRESERVED, /* new bindings that kept the inside port */
	XDPR_NE_PORT_REUSED,    /* bindings reclaimed from an idle host */
	XDPR_NE_NO_PORT,
	XDPR_NE_TABLE_FULL,
	XDPR_NE_HOST_LIMIT,
	XDPR_NE_UNTRANSLATABLE,
	XDPR_NE_FILTERED,
	XDPR_NE_ICMP_ERR_OUT,   /* ICMP errors translated outbound */
	XDPR_NE_ICMP_ERR_IN,    /* ICMP errors translated inbound */
	XDPR_NE_HAIRPIN,
	XDPR_NE_ADDR_CHANGED,   /* masquerade address moved: session re-created */
	XDPR_NE_PAIR_REPAIRED,  /* half session found alone and dropped/re-created */
	XDPR_NE_ADOPTED,        /* another CPU created the mapping or session first: used */
	XDPR_NE_PORT_SHADOWED,  /* outside ports skipped: a socket of the router holds them */
	XDPR_NE_NO_ADDR,        /* masquerade: the interface has no IPv4 address */
	XDPR_NE_SWEEPS,         /* whole-table sweeps run by the fast path under pressure */
	XDPR_NE_BUSY,           /* another CPU held the endpoint or key too long: dropped */
	XDPR_NE_PROBES,         /* ports looked at by searches that found none (<= 64 a packet) */
	XDPR_NE_RESIZING,       /* sessions not created: the tables were being resized */
	XDPR_NE_LOG_LOST,       /* NAT event records not logged: the ring (xdpr_natlog) was full */
	XDPR_NE_MAX
};

/* ---- route map (consulted before the kernel FIB) ---- */

#define XDPR_RT_MAX     262144  /* routes per family (per slot) */
#define XDPR_RT_IDS     (2 * XDPR_RT_MAX) /* route ids, counter slots; 0 unused */
#define XDPR_RT_MAX_NH  8       /* ECMP next hops per route */

enum xdpr_rt_action {
	XDPR_RT_VIA       = 1, /* forward via next hop(s) */
	XDPR_RT_BLACKHOLE = 2, /* drop in the driver */
	XDPR_RT_PASS      = 3, /* hand to the kernel */
};

enum xdpr_nh_flags {
	XDPR_NH_MAC = 1 << 0, /* mac is the gateway's (IPv6 link-local: no FIB lookup) */
};

struct xdpr_nh {
	__u32 ifindex;
	__u8 gw[16];        /* IPv4 in the first 4 bytes for IPv4 routes */
	__u8 mac[6];        /* XDPR_NH_MAC: resolved by the CLI from the neighbour table */
	__u16 flags;        /* enum xdpr_nh_flags */
};

struct xdpr_route {
	__u32 id;           /* index into xdpr_rt_stats */
	__u8 action;        /* enum xdpr_rt_action */
	__u8 nnh;           /* next hops in use (via) */
	__u16 pad;
	struct xdpr_nh nh[XDPR_RT_MAX_NH];
};

/*
 * The packet path's view of a route table: a multibit trie in flat arrays
 * (controlled prefix expansion, strides 16-8-8...), one inner map of 1 KiB
 * blocks per slot.  Blocks 0-255 are IPv4's first level (indexed by the top
 * 16 address bits), 256-511 IPv6's; groups of 256 entries, one address byte
 * each, follow.  An entry is 0 (no route: ask the FIB), XDPR_DIR_GROUP | block
 * (look at the next byte there), XDPR_DIR_LOCAL (an address of the router
 * inside a route: ask the FIB) or record index + 1 into the slot's
 * xdpr_rtrec array (struct xdpr_rtent).  A lookup reads at most 3 blocks for IPv4 and 15 for IPv6
 * whatever the table size.  Tables are built whole by the CLI and swapped in.
 */
#define XDPR_DIR_V4         0
#define XDPR_DIR_V6         256
#define XDPR_DIR_GROUPS     512
#define XDPR_DIR_GROUP      0x80000000u
#define XDPR_DIR_LOCAL      0x7fffffffu /* one of the router's own addresses: the FIB's */
#define XDPR_DIR_MAX_BLOCKS (1u << 20)  /* 1 GiB of index */

struct xdpr_dir_block {
	__u32 e[256];
};

/*
 * One route in a slot's record array (xdpr_rtrec).  Its next hops are nnh
 * consecutive entries of the slot's xdpr_rtnh from index nh; routes with
 * the same next hops share them.
 */
struct xdpr_rtent {
	__u32 id;           /* index into xdpr_rt_stats */
	__u8 action;        /* enum xdpr_rt_action */
	__u8 nnh;
	__u8 family;        /* AF_INET / AF_INET6; 0: unused record */
	__u8 plen;
	__u32 nh;
	__u32 pad;
	__u8 addr[16];      /* host bits zero */
};

struct xdpr_rtnh {
	struct xdpr_nh nh;
	__u32 pad;          /* array elements are 8-byte aligned: say so */
};

/* ---- filter (forwarded traffic; bpf/filter.h, loader/filter.c) ----
 *
 * A first-match rule list compiled into a bit-vector classifier.  Each rule
 * has a bit (layout below), bit k%64 of word k/64 of a rule bitmap.  Each
 * of the XDPR_FF_MAX fields maps a packet's value to a descriptor: the set
 * of rules that constrain that field and accept that value (S).  The rules
 * that do not constrain the field at all (W_f) are one dense bitmap per
 * field.  A packet matches the rules in  AND over f of (W_f | S_f(value)),
 * and the first of them in list order decides; none: the policy.
 *
 * Storage per slot (two slots, switched by xdpr_cfg.flt_slot like routes):
 *   xdpr_flt_word  u64 array.  Words 0 .. XDPR_FF_MAX*XDPR_FLT_WORDS-1 are
 *                  W_f dense: word w of W_f at f*XDPR_FLT_WORDS + w.
 *                  Then the stored (non-zero) words of every S descriptor.
 *   xdpr_flt_desc  struct xdpr_flt_desc array.  Entry f < XDPR_FF_MAX
 *                  summarises W_f (summ only; its words are dense as above).
 *                  Entry XDPR_FLT_DESC_EMPTY is all zero (no rule).  Others: S sets.
 *   xdpr_flt_val   u32 array of XDPR_FV_MAX descriptor ids: ports, protocol,
 *                  state (XDPR_FV_*).
 *   xdpr_flt_lpm4/6 LPM tries: struct xdpr_flt_lpm4/6 -> u32 descriptor id
 *                  for the address fields (src, dst); no match: EMPTY.
 *   xdpr_flt_if    hash struct xdpr_flt_ifkey -> u32 descriptor id; none: EMPTY.
 *   xdpr_flt_rule  struct xdpr_flt_rule array, by bit (below).
 *   xdpr_flt_hdr   plain array of 2 struct xdpr_flt_hdr, one per slot.
 *
 * Word w of an S descriptor d:  i = w / 64, b = w % 64;
 *   (d.summ[i] >> b) & 1 ?  word[d.base + d.rank[i] + popcount(d.summ[i] & ((1 << b) - 1))] : 0
 * Candidate words: bit w of  AND over f of (desc[f].summ | desc[S_f].summ).
 *
 * Bit layout: a rule's bit is not its position.  Rules that constrain the
 * same set of fields (a shape) form a group; each group's rules take
 * consecutive bits in list order, from a word of its own (the compiler
 * merges the smallest groups, in list order, only if padding would not fit
 * XDPR_FLT_WORDS).  A word then holds one shape, so W_f is empty there for
 * each field the shape constrains and the summaries' AND keeps a word only
 * if every such field has a rule there accepting the packet's value.  The
 * rules array is indexed by bit; its entry says the rule's position (the
 * lowest position of all matching bits decides) and where its group ends
 * (once a group has a match, its later words cannot do better).
 *
 * A packet's field values: TCP/UDP ports in SPORT/DPORT; ICMP and ICMPv6
 * type in SPORT and code in DPORT; every other protocol, and later
 * fragments, 0 and 0 (rules with ports or types always name their protocol,
 * so these never meet).  PROTO: (IPv6 ? 256 : 0) + IP protocol (IPv6: the
 * transport header's, after extension headers).  STATE: enum xdpr_flt_state.
 * IN/OUT: ifindex of the ingress / egress interface.
 */
#define XDPR_FLT_MAX_RULES  32768
#define XDPR_FLT_WORDS      (XDPR_FLT_MAX_RULES / 64)  /* 512 words of 64 rules */
#define XDPR_FLT_SUMM       (XDPR_FLT_WORDS / 64)      /* 8 summary words */
#define XDPR_FLT_FLOWS      262144  /* flow states of forwarded non-NAT flows (LRU) */
#define XDPR_FLT_IDS        (XDPR_FLT_MAX_RULES + 1)   /* counter ids: 0 = the policy */
#define XDPR_FLT_LPM_MAX    262144  /* prefixes per family (rules and set members) */
#define XDPR_MAX_IFACES_FLT 1024    /* interfaces rules can name, each direction */

enum xdpr_flt_field {
	XDPR_FF_SRC = 0,
	XDPR_FF_DST,
	XDPR_FF_SPORT,
	XDPR_FF_DPORT,
	XDPR_FF_PROTO,
	XDPR_FF_IN,
	XDPR_FF_OUT,
	XDPR_FF_STATE,
	XDPR_FF_MAX
};
#define XDPR_FLT_DESC_EMPTY XDPR_FF_MAX /* descriptor of a value no rule names */

#define XDPR_FV_SPORT  0
#define XDPR_FV_DPORT  65536
#define XDPR_FV_PROTO  131072   /* + (IPv6 ? 256 : 0) + protocol */
#define XDPR_FV_STATE  131584   /* + enum xdpr_flt_state */
#define XDPR_FV_MAX    131588

/* Connection state of a packet, as a rule's "state" word names it. */
enum xdpr_flt_state {
	XDPR_FS_NEW = 0,     /* no state; may start a flow (TCP SYN or bare ACK: picked up),
	                        UDP, ICMP echo request, other protocols */
	XDPR_FS_ESTABLISHED, /* a flow with state (filter flow, NAT session), either direction */
	XDPR_FS_RELATED,     /* ICMP error quoting a flow with state */
	XDPR_FS_INVALID,     /* no state and cannot start one (SYN+ACK, FIN, RST, echo reply,
	                        ICMP error about nothing known) */
	XDPR_FS_MAX
};

enum xdpr_flt_action {
	XDPR_FLT_ACCEPT = 1,
	XDPR_FLT_DROP   = 2,
	XDPR_FLT_REJECT = 3, /* TCP: RST; others: ICMP / ICMPv6 administratively prohibited */
};

enum xdpr_flt_hdr_flags {
	/* some rule names state established or related: packets with state are
	   classified like any other (as an nft chain sees them); otherwise they
	   pass on their state without meeting the rules */
	XDPR_FLT_SEE_EST = 1 << 0,
};

/* xdpr_cfg.flt_slot: bit 0 the live slot; this bit, its header's XDPR_FLT_SEE_EST */
#define XDPR_FLT_SLOT_SEE_EST 2u

struct xdpr_flt_desc {
	__u64 summ[XDPR_FLT_SUMM];  /* bit b of summ[i]: word 64*i+b of the set is stored */
	__u16 rank[XDPR_FLT_SUMM];  /* words stored for summ[0..i-1] */
	__u32 base;                 /* first stored word in xdpr_flt_word */
	__u32 pad;
};

struct xdpr_flt_rule {
	__u32 id;           /* counter index in xdpr_flt_stats (1..XDPR_FLT_MAX_RULES); 0: no rule */
	__u8 action;        /* enum xdpr_flt_action */
	__u8 pad;
	__u16 gend;         /* the word after the last of this rule's group */
	__u32 pos;          /* position in the list, 0 = first */
	__u32 pad2;
};

struct xdpr_flt_hdr {
	__u32 nrules;       /* rules in this slot (bits 0..nrules-1) */
	__u8 policy;        /* XDPR_FLT_ACCEPT or XDPR_FLT_DROP */
	__u8 flags;         /* enum xdpr_flt_hdr_flags */
	__u16 ngroups;      /* groups of the bit layout (below), for show */
	__u32 gen;          /* incremented by every change (userspace) */
	__u32 pad;
};

/* LPM keys: prefixlen counts the field byte's 8 bits plus the prefix's. */
struct xdpr_flt_lpm4 {
	__u32 prefixlen;
	__u8 field;         /* XDPR_FF_SRC or XDPR_FF_DST */
	__u8 addr[4];
	__u8 pad[3];
};

struct xdpr_flt_lpm6 {
	__u32 prefixlen;
	__u8 field;
	__u8 addr[16];
	__u8 pad[3];
};

struct xdpr_flt_ifkey {
	__u32 ifindex;
	__u32 field;        /* XDPR_FF_IN or XDPR_FF_OUT */
};

/*
 * Flow state of a forwarded flow that no NAT session tracks, in
 * xdpr_flt_flows (LRU hash): one entry for both directions, keyed by the
 * endpoints in canonical order (lower address, then port, first).
 */
struct xdpr_flow_key {
	__u8 a[16];         /* IPv4: first 4 bytes, the rest zero */
	__u8 b[16];
	__be16 pa;          /* port of a (ICMP echo: the identifier on both sides) */
	__be16 pb;
	__u8 proto;
	__u8 family;        /* 4 or 6 */
	__u16 pad;
};

struct xdpr_flt_flow {
	__u64 last_seen;    /* ns, coarse monotonic; refreshed at most once a second */
	__u64 created;
	__u32 rule;         /* id of the rule that accepted its first packet (0: policy) */
	__u8 state;         /* enum xdpr_ct_state bits; OUT = from the originator */
	__u8 orig_b;        /* 1: the originator is endpoint b */
	__u16 in_if;        /* low bits of the originator's ingress ifindex (diagnostics) */
	__u64 pad;
};

/*
 * Per-CPU copies of established IPv4 TCP/UDP flow states (xdpr_flt_hot),
 * one per direction: a packet whose direction of its flow this CPU found
 * established within its copy's life passes on the copy, without the
 * shared table's hash, bucket and entry.  A copy holds the packet's own
 * addresses and ports as they appear in it (no canonical order to work
 * out per packet) and is made only for a direction the state has seen.
 * Only what cannot change the state passes on it (TCP without SYN, FIN or
 * RST); the rest asks the table, which refreshes the copy.
 *
 * A copy lives a second, or a tenth of a second (1/XDPR_FLT_HOT_HZ_DIV)
 * while the flow table churns or when its state's timeout is under
 * XDPR_FLT_HOT_LONG_TIMEOUT seconds (in jiffies, the kernel's tick clock,
 * read inline: `until`, when it lapses).  Each renewal reads the table,
 * which keeps an established flow recently used in its LRU: a CPU that
 * makes more than its share of the table's states over two seconds
 * (xdpr_flt_churn_n in a tenth of a second) starts churn, which voids
 * every copy at once (the datapath's xdpr_flt_epoch, added to a set's
 * generation) and makes copies short for the next second, so that a flood
 * of new flows cannot evict an established flow between two of its
 * renewals.  A copy also lapses when xdpr_cfg.flt_gen moves (a flush): a
 * state deleted otherwise (LRU eviction, expiry) can serve its flow as long
 * as its copy lives (and so can one deleted by a flush a CPU raced, on
 * CPUs that reorder loads: BPF has no load-acquire in clang 14).
 *
 * Three ways a set (set = hash of the packet's tuple), one generation a
 * set: a copy is made in its own way, else in a free or lapsed way; when
 * all three hold other live copies it is not made (the packet asks the
 * table until a way lapses).  Keeping live copies rather than the most
 * recent ones matters when more flows than ways take turns in a set:
 * least-recently-used replacement would then miss on every packet of all
 * of them (with two ways, 9% of 4,096 flows did), this misses only on the
 * extra flows' packets.  until: the low 32 bits of jiffies: a copy
 * untouched for 2^32 ticks (198 days at HZ 250) reads as live again for up
 * to a second, unless its set was written since (any copy made in a set
 * voids its lapsed ways).
 */
struct xdpr_flt_hot {
	__be32 s;           /* source and destination, as in the packet */
	__be32 d;
	union {
		struct {
			__be16 sp;  /* source and destination port, as in the packet */
			__be16 dp;
		};
		__u32 ports;
	};
	__u32 until;        /* when it lapses: jiffies, low 32 bits */
	__u8 proto;         /* TCP or UDP; 0: a free way */
	__u8 pad[3];
};

struct xdpr_flt_hot_set {
	__u32 gen;          /* xdpr_cfg.flt_gen + xdpr_flt_epoch read before the table was, for every way */
	struct xdpr_flt_hot e[3];
};

/*
 * 8192 sets of 3, 512 KiB per CPU, in one ARRAY (CPU c's set k at
 * c << XDPR_FLT_HOT_BITS | k) made BPF_F_MMAPABLE for its alignment: its
 * values start on a page, so each set is one cache line.  A PERCPU_ARRAY's
 * values are only 8-byte aligned: measured on 6.18, every set of one began
 * 48 bytes into a line, and a packet's check read two lines.
 */
#define XDPR_FLT_HOT_BITS   13
#define XDPR_FLT_HOT_WAYS   3
/*
 * A short copy lives 1/XDPR_FLT_HOT_HZ_DIV s (a tenth): while the table
 * churns, a flow whose packets pass on copies still reads the table (and
 * so stays recently used in its LRU) ten times a second per CPU.  A long
 * one lives a second, for states whose timeout is at least
 * XDPR_FLT_HOT_LONG_TIMEOUT seconds: a state whose flow passes on copies is
 * refreshed at least every two seconds (a copy's life, and last_seen
 * written at most once a second).
 */
#define XDPR_FLT_HOT_HZ_DIV 10
#define XDPR_FLT_HOT_LONG_TIMEOUT 4
/*
 * Churn: a CPU that makes this many flow states within a tenth of a
 * second would go through its share of the LRU table (BPF_F_NO_COMMON_LRU:
 * XDPR_FLT_FLOWS over the possible CPUs) in under two seconds, twice a
 * long copy's life.  The loader sets the program's xdpr_flt_churn_n from
 * the possible CPUs (xdpr_skel_prepare); without it, as for 64.
 */
#define XDPR_FLT_CHURN_N(cpus) (XDPR_FLT_FLOWS / 20 / (cpus) ? XDPR_FLT_FLOWS / 20 / (cpus) : 1)

/* A CPU's count of flow states made in the current tenth of a second (xdpr_flt_churn). */
struct xdpr_flt_churn {
	__u64 win;          /* jiffies when the tenth began */
	__u32 n;            /* states made since */
	__u32 pad;
};
/*
 * The tick rate assumed when the kernel's config cannot be read: the
 * lowest Linux offers, so that a copy lives at most a second (a tenth,
 * short) whatever the real rate (less at a higher one).
 */
#define XDPR_HZ_UNKNOWN     100

/* A copy lapsing at jiffies `until` still live at jiffies now, with HZ ticks a second (its longest life)? */
static inline int xdpr_flt_hot_live(__u32 until, __u32 now, __u32 hz)
{
	return (__u32)(until - now - 1) < hz;
}

/* Ports as a copy holds them: the two 16-bit fields as they lie in the packet. */
static inline __u32 xdpr_flt_hot_ports(__be16 sp, __be16 dp)
{
	struct xdpr_flt_hot e = { .sp = sp, .dp = dp };

	return e.ports;
}

/* The set of a direction's copy: a hash of its tuple (network-order words as loaded). */
static inline __u32 xdpr_flt_hot_set_of(__be32 s, __be32 d, __u32 ports, __u8 proto)
{
	__u32 h = s * 0x9e3779b1u ^ d * 0x85ebca77u ^ ports * 0xc2b2ae3du ^ proto;

	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	return h >> (32 - XDPR_FLT_HOT_BITS);
}

/*
 * IPv6 copies (xdpr_flt_hot6), as the IPv4 ones but one a cache line: the
 * addresses take 32 bytes, so each way has its own line and its own
 * generation.  Two ways a set (CPU c's set k, way w at
 * (c << XDPR_FLT_HOT6_BITS | k) * 2 + w), 8192 sets: 1 MiB per CPU, in an
 * mmapable ARRAY for its alignment.  Only a packet whose transport header
 * follows the fixed header (no extension headers) is checked or copied.
 * The check and the copy run in their own functions beside the filter step
 * (flt6_hot, flt6_hot_fill); the flow table's lookup asks for the copy
 * through the filter's scratch (flt_pkt.fill6).
 */
struct xdpr_flt_hot6 {
	__u32 gen;          /* xdpr_cfg.flt_gen + xdpr_flt_epoch read before the table was */
	__u32 until;        /* when it lapses: jiffies, low 32 bits */
	__u32 ports;        /* the ports word as in the packet */
	__u8 proto;         /* TCP or UDP; 0: a free way */
	__u8 pad[3];
	__be32 s[4];        /* source and destination, as in the packet */
	__be32 d[4];
	__u8 pad2[16];
};

#define XDPR_FLT_HOT6_BITS 13
#define XDPR_FLT_HOT6_WAYS 2

/* The set of an IPv6 direction's copy: the addresses folded, then as IPv4's. */
static inline __u32 xdpr_flt_hot6_set_of(const __be32 *s, const __be32 *d, __u32 ports, __u8 proto)
{
	__u32 a = s[0] ^ s[1] * 0x27d4eb2fu ^ s[2] * 0x165667b1u ^ s[3];
	__u32 b = d[0] ^ d[1] * 0x27d4eb2fu ^ d[2] * 0x165667b1u ^ d[3];
	__u32 h = a * 0x9e3779b1u ^ b * 0x85ebca77u ^ ports * 0xc2b2ae3du ^ proto;

	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	return h >> (32 - XDPR_FLT_HOT6_BITS);
}

/* An IPv4 fragment's identity (RFC 791): the filter's verdict on its first fragment applies. */
struct xdpr_frag_key {
	__be32 saddr;
	__be32 daddr;
	__be16 id;
	__u8 proto;
	__u8 pad;
};

#define XDPR_FLT_FRAGS      16384
#define XDPR_FLT_FRAG_NS    (30ULL * 1000000000ULL) /* reassembly timeout (RFC 791: 15 s upper) */

/* xdpr_filter_gc program input/output (first bytes of the test-run frame). */
struct xdpr_flt_gc_cmd {
	__u32 op;           /* enum xdpr_gc_op: EXPIRED or ALL */
	__u32 deleted;      /* out */
	__u32 seen;         /* out */
	__u32 pad;
};

/* xdpr_nat_gc program input (first bytes of the test-run frame) and output. */
enum xdpr_gc_op { XDPR_GC_EXPIRED = 0, XDPR_GC_ALL = 1, XDPR_GC_RULE = 2 };

struct xdpr_gc_cmd {
	__u32 op;           /* enum xdpr_gc_op */
	__u32 rule;         /* XDPR_GC_RULE: sessions of this rule */
	__u32 deleted;      /* out: sessions removed */
	__u32 seen;         /* out: sessions visited */
	__u32 binds_freed;  /* out: idle bindings removed */
	__u32 pad[3];
};

/* ---- 1:1 NAT (IPv4 binat / netmap, bpf/binat.h, loader/binat.c) ---- */

#define XDPR_BINAT_MAX 64          /* rule ids 1..63; 0 is "no rule" */

/*
 * A rule: on outside interface ifindex, inside prefix in_net/plen appears
 * as out_net/plen, host bits kept.  xdpr_binat holds them by id (the
 * control plane's list); each is also the value of two LPM entries, keyed
 * by interface and address: xdpr_binat_out by inside prefix (outbound
 * sources), xdpr_binat_in by outside prefix (inbound destinations).
 */
struct xdpr_binat_rule {
	__u32 ifindex;      /* 0: unused slot */
	__u32 id;
	__be32 in_net;
	__be32 out_net;
	__be32 mask;
	__u32 plen;
	char ifname[16];
};

struct xdpr_binat_key {
	__u32 prefixlen;    /* LPM: 32 (the ifindex) + the prefix length */
	__u32 ifindex;
	__be32 addr;
};

/* Per-CPU counters, xdpr_binat_st[id * XDPR_BE_MAX + event]: packets. */
enum xdpr_binat_event {
	XDPR_BE_OUT = 0,    /* translated outbound (source inside -> outside) */
	XDPR_BE_IN,         /* translated inbound (destination outside -> inside) */
	XDPR_BE_ICMP_ERR,   /* of those, ICMP errors (embedded packet translated too) */
	XDPR_BE_DROPPED,    /* untranslatable (cut short) or its interface gone: dropped */
	XDPR_BE_MAX
};

_Static_assert(sizeof(struct xdpr_ct_slot) == 64, "xdpr_ct_slot: one cache line");
_Static_assert(sizeof(struct xdpr_ct_hdr) == 64, "xdpr_ct_hdr: one cache line");
_Static_assert(sizeof(struct xdpr_binat_rule) == 40, "xdpr_binat_rule layout");
_Static_assert(sizeof(struct xdpr_binat_key) == 12, "xdpr_binat_key layout");

/* Compile-time checks on everything that crosses the user/kernel line. */
_Static_assert(sizeof(struct xdpr_iface) == 56, "xdpr_iface layout");
_Static_assert(sizeof(struct xdpr_vlan_cfg) == 64, "xdpr_vlan_cfg layout");
_Static_assert(sizeof(struct xdpr_nat_rule) == 56, "xdpr_nat_rule layout");
_Static_assert(sizeof(struct xdpr_cfg) == 72, "xdpr_cfg layout");
_Static_assert(sizeof(struct xdpr_route) == 8 + 28 * XDPR_RT_MAX_NH, "xdpr_route layout");
_Static_assert(sizeof(struct xdpr_rtent) == 32 && sizeof(struct xdpr_rtnh) == 32, "route records");
_Static_assert(sizeof(struct xdpr_dir_block) == 1024, "xdpr_dir_block layout");
_Static_assert(sizeof(struct xdpr_ct_key) == 16, "xdpr_ct_key layout");
_Static_assert(sizeof(struct xdpr_ct_val) == 32, "xdpr_ct_val layout");
_Static_assert(sizeof(struct xdpr_bind_key) == 8, "xdpr_bind_key layout");
_Static_assert(sizeof(struct xdpr_bind) == 32, "xdpr_bind layout");
_Static_assert(sizeof(struct xdpr_fwd) == 8, "xdpr_fwd layout");
_Static_assert(sizeof(struct xdpr_eim_key) == 8, "xdpr_eim_key layout");
_Static_assert(sizeof(struct xdpr_eim_val) == 16, "xdpr_eim_val layout");
_Static_assert(sizeof(struct xdpr_gc_cmd) == 32, "xdpr_gc_cmd layout");
_Static_assert(XDPR_NAT_IF_RULES <= 255 && XDPR_NAT_MAX_RULES <= 256, "rule ids fit a byte");
_Static_assert(sizeof(struct xdpr_ctr) == 16, "xdpr_ctr layout");
_Static_assert(sizeof(struct xdpr_slot) == 16 * XDPR_REASON_MAX, "xdpr_slot layout");
_Static_assert(XDPR_REASON_MAX <= 64, "reason set fits a u64 mask");
_Static_assert(sizeof(struct xdpr_flt_desc) == 88, "xdpr_flt_desc layout");
_Static_assert(sizeof(struct xdpr_flt_rule) == 16 && sizeof(struct xdpr_flt_hdr) == 16, "filter records");
_Static_assert(sizeof(struct xdpr_flt_hot) == 20 && sizeof(struct xdpr_flt_hot_set) == 64, "one cache line a set");
_Static_assert(sizeof(struct xdpr_flt_hot6) == 64, "one cache line an IPv6 copy");
_Static_assert(sizeof(struct xdpr_flt_lpm4) == 12 && sizeof(struct xdpr_flt_lpm6) == 24, "filter LPM keys");
_Static_assert(sizeof(struct xdpr_flow_key) == 40 && sizeof(struct xdpr_flt_flow) == 32, "flow state");
_Static_assert(sizeof(struct xdpr_flt_gc_cmd) == 16, "xdpr_flt_gc_cmd layout");
_Static_assert(sizeof(struct xdpr_frag_key) == 12, "xdpr_frag_key layout");
_Static_assert(XDPR_FLT_WORDS % 64 == 0, "summary words cover whole rule words");

/* ---- flow meter (bpf/flow.h, loader/flow.c; IPFIX / NetFlow export reads it) ----
 *
 * With XDPR_CFG_FLOWS set, every packet xdpr redirects (reason fwd) is
 * counted in xdpr_flows, PERCPU_HASH: key the flow as it arrived, value
 * per CPU the counters and the tuple as it left (after NAT, NPTv6).  1 in
 * xdpr_cfg.flow_sample packets per CPU is metered.  A new flow that finds
 * the table full is forwarded unmetered and counted per CPU in
 * xdpr_flow_pcpu (PERCPU_ARRAY of 1).  Ports in network order; ICMP and
 * ICMPv6: sport 0, dport type << 8 | code (IPFIX icmpTypeCode).
 */
#define XDPR_METER_MAX 262144  /* flows at most: preallocated, the loader sizes it (64 MiB of values) */

struct xdpr_meter_key {
	__u8 src[16];       /* IPv4: first 4 bytes, the rest zero */
	__u8 dst[16];
	__be16 sport;
	__be16 dport;
	__u32 in_if;        /* ingress ifindex (a VLAN's for a tagged frame) */
	__u8 proto;
	__u8 family;        /* AF_INET or AF_INET6 */
	__u16 pad;
};
#define XDPR_FLOW_KEY_LEN 44

struct xdpr_meter_val {  /* one CPU's share of a flow */
	__u64 packets;      /* 0: this CPU met none of it (the rest is zero too) */
	__u64 bytes;        /* IP total length (L3) */
	__u64 first_ns;     /* bpf_ktime_get_coarse_ns (CLOCK_MONOTONIC_COARSE, a tick) of this CPU's first and last packet */
	__u64 last_ns;
	__u8 xsrc[16];      /* the tuple as it left, at this CPU's last packet */
	__u8 xdst[16];
	__be16 xsport;
	__be16 xdport;
	__u32 out_if;       /* egress ifindex (the VLAN's for a VLAN) */
	__u8 tcp_flags;     /* OR of this CPU's packets' TCP flags */
	__u8 pad[7];
};

struct xdpr_meter_pcpu {
	struct xdpr_meter_key key; /* the packet being metered, as it arrived */
	__u32 tick;         /* sampling: packets left until the next one metered (random gaps) */
	__u64 unmetered;    /* packets not metered: new flow, table full */
	struct xdpr_meter_val val; /* a new entry, built here (off the stack) */
};

_Static_assert(sizeof(struct xdpr_meter_key) == XDPR_FLOW_KEY_LEN, "xdpr_meter_key layout");
_Static_assert(sizeof(struct xdpr_meter_val) == 80, "xdpr_meter_val layout");
_Static_assert(sizeof(struct xdpr_meter_pcpu) == 136, "xdpr_meter_pcpu layout");

/* ---- NPTv6, RFC 6296 (bpf/npt6.h, loader/npt.c) ---- */

/*
 * Stateless prefix translation on an outside interface: a packet the FIB
 * sends out of it with a source in the inside prefix leaves with that
 * source in the outside prefix; a packet arriving on it for the outside
 * prefix is delivered to the inside one.  Checksum-neutral: one 16-bit
 * word of the address takes an adjustment (word 3 for /48 and shorter,
 * the first word of the interface identifier that is not 0xffff for
 * longer prefixes), so no L4 checksum changes.
 *
 * xdpr_npt, ARRAY of 2 struct xdpr_npt_tab: the live one is slot
 * (xdpr_cfg.flags & XDPR_CFG_NPT_SLOT ? 1 : 0); a change writes the other
 * slot whole, then flips the bit.  XDPR_CFG_NPT: the live table has rules
 * (without it IPv6 packets pay one bit test).  xdpr_npt_stats,
 * PERCPU_ARRAY by rule index (the same index in both slots: a rule keeps
 * its index while it exists; a new rule's counters are zeroed).
 */
#define XDPR_NPT_MAX 16

struct xdpr_npt_rule {
	__u32 ifindex;      /* the outside interface; 0: no rule at this index */
	__u8  plen;         /* prefix length, 1..64, the same for both prefixes */
	__u8  word;         /* 16-bit word that takes the adjustment: 3 (plen <= 48); 4: the
	                       first of words 4..7 that is not 0xffff */
	__u16 adj_out;      /* one's complement adjustment inside -> outside (host order) */
	__u16 adj_in;       /* outside -> inside */
	__u16 pad;
	__be32 mask[2];     /* the prefix length as a mask of the first 64 bits */
	__be32 inside[2];   /* prefixes, first 64 bits, host bits zero */
	__be32 outside[2];
	char ifname[16];    /* the outside interface's name when the rule was made */
};

struct xdpr_npt_tab {
	__u32 n;            /* rules at indexes 0..n-1 are looked at (ifindex 0: a hole) */
	__u32 pad;
	struct xdpr_npt_rule r[XDPR_NPT_MAX];
};

/* Per rule, per CPU. */
struct xdpr_npt_ctr {
	__u64 out;          /* packets whose source was mapped inside -> outside */
	__u64 in;           /* packets whose destination was mapped outside -> inside */
	__u64 icmp;         /* of those, ICMPv6 errors whose quoted packet was mapped too */
	__u64 pass;         /* of "out", handed to the kernel (translated) to forward */
	__u64 drop;         /* not mappable (word 0xffff, all-ones identifier): dropped,
	                       drop_nat_untranslatable */
};

_Static_assert(sizeof(struct xdpr_npt_rule) == 52, "xdpr_npt_rule layout");
_Static_assert(sizeof(struct xdpr_npt_tab) == 8 + 52 * XDPR_NPT_MAX, "xdpr_npt_tab layout");
_Static_assert(sizeof(struct xdpr_npt_ctr) == 40, "xdpr_npt_ctr layout");

/* ---- DDoS meters and bans (bpf/ddos.h, loader/ddos.c) ----
 *
 * With XDPR_CFG_DDOS, every packet arriving to be forwarded whose
 * destination is inside a protected prefix (xdpr_ddos_prot, LPM) is counted
 * per CPU for its destination host ("to" meter) and for its source host
 * ("from" meter): in this CPU's slot of the host's hash (xdpr_ddos_slots,
 * below) when it is free or the host's, else in a hash table (xdpr_ddos_to:
 * preallocated, one entry per host; xdpr_ddos_from: LRU, a flood of
 * spoofed sources evicts old ones, never fails).  Counters are cumulative;
 * userspace sums a host's shares and takes rates from two reads.
 * With XDPR_CFG_BANS, every forwarded packet looks its destination up as a
 * "to" ban and its source as a "from" ban (xdpr_ddos_bans); a live ban with
 * XDPR_DDOS_F_DROP drops it (drop_ddos_ban), counted per CPU in the ban.  A
 * ban holds until until_ns, read against the coarse monotonic clock by the
 * datapath itself, so a ban ends even when no daemon is running.
 */

#define XDPR_DDOS_PROT_MAX  4096     /* protected prefixes (each family) */
#define XDPR_DDOS_HOSTS     65536    /* "to" meters: destination hosts (default) */
#define XDPR_DDOS_SOURCES   65536    /* "from" meters: source hosts (LRU, default) */
#define XDPR_DDOS_BAN_MAX   65536    /* bans */

enum xdpr_ddos_dir { XDPR_DDOS_TO = 0, XDPR_DDOS_FROM = 1 };
enum xdpr_ddos_reason { XDPR_DDOS_R_MANUAL = 0, XDPR_DDOS_R_PPS = 1, XDPR_DDOS_R_BPS = 2 };
#define XDPR_DDOS_F_DROP      1u  /* drop the ban's packets in XDP */
#define XDPR_DDOS_F_BLACKHOLE 2u  /* userspace: announce the host upstream (xdprd) */
#define XDPR_DDOS_FOREVER     (~0ULL) /* until_ns of a ban without an end */

/* Meter and ban key: IPv4 in addr[0..3], the rest zero. */
struct xdpr_ddos_key {
	__u8 family;        /* AF_INET, AF_INET6 */
	__u8 dir;           /* enum xdpr_ddos_dir */
	__u8 pad[2];
	__u8 addr[16];
};

/* xdpr_ddos_prot key: an LPM trie key (prefixlen covers family + address). */
struct xdpr_ddos_prot_key {
	__u32 plen;         /* 8 + prefix length (the family byte is matched whole) */
	__u8 family;
	__u8 addr[16];
	__u8 pad[3];
};

/* Meter value, per CPU. */
struct xdpr_ddos_ctr {
	__u64 packets;
	__u64 bytes;        /* L3 bytes, as the packet arrived */
	__u64 last_ns;      /* coarse clock (bpf_ktime_get_coarse_ns) of its last packet */
};

/*
 * Ban value, per CPU: userspace writes the same until/since/rates/reason/
 * flags on every CPU; the datapath only adds to its CPU's dropped counters.
 */
struct xdpr_ddos_ban {
	__u64 until_ns;     /* coarse clock; XDPR_DDOS_FOREVER: no end */
	__u64 since_ns;
	__u64 pps;          /* the rates that caused it (0 for manual bans) */
	__u64 bps;
	__u32 reason;       /* enum xdpr_ddos_reason */
	__u32 flags;        /* XDPR_DDOS_F_* */
	__u64 dropped_pkts;
	__u64 dropped_bytes;
};

/* xdpr_ddos_stats[0], per CPU. */
struct xdpr_ddos_stat {
	__u64 metered;      /* packets counted in a "to" meter (sampled: each counts ddos_sample) */
	__u64 untracked;    /* packets to a protected host without a meter: table full */
	__u64 banned;       /* packets dropped by a ban */
	__u32 tick;         /* the datapath's sample gap: packets left until the next one metered */
	__u32 pad;
};

/*
 * xdpr_ddos_bits: a bitmap (ARRAY of XDPR_DDOS_BITS_WORDS u64, 2^20 bits) with the bit
 * xdpr_ddos_bit(key) set for every ban, kept by userspace: a packet looks a
 * ban up only when its key's bit is set, so traffic of hosts without a ban
 * pays two array reads, not two hash lookups.  Bits of removed bans are
 * cleared by rewriting each word from the bans that remain.
 */
#define XDPR_DDOS_BITS_WORDS 16384 /* 2^20 bits, 128 KiB: 1,000 bans leave a 0.1% chance of a needless lookup */

/* The key's hash: its low 20 bits are its ban bit, its high bits its meter slot. */
static inline __u32 xdpr_ddos_hash(const struct xdpr_ddos_key *k)
{
	const __u32 *w = (const __u32 *)k->addr;
	__u32 h = (w[0] * 0x9e3779b1u) ^ ((__u32)k->dir << 8 | k->family);

	if (k->family != 2 /* AF_INET */) /* IPv4's other words are zero: the same hash, fewer steps */
		h ^= (w[1] * 0x85ebca77u) ^ (w[2] * 0xc2b2ae3du) ^ (w[3] * 0x27d4eb2fu);
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 13;
	return h;
}

static inline __u32 xdpr_ddos_bit(const struct xdpr_ddos_key *k)
{
	return xdpr_ddos_hash(k) & (XDPR_DDOS_BITS_WORDS * 64 - 1);
}

/*
 * xdpr_ddos_slots: the meters' fast table, an ARRAY of 2^XDPR_DDOS_SLOT_BITS
 * slots for each CPU (CPU c's slot i at c * XDPR_DDOS_SLOTS + i; the loader
 * sizes it for every possible CPU, and a CPU beyond its end meters in the
 * hash tables), each slot holding one host (any direction) whose hash's top
 * bits are i.  A packet's meter is one array read (inlined: no hashing by
 * the kernel, no per-CPU allocator behind it) and a compare.  A CPU's slot is
 * taken by the first host to need it, or when its host has been idle for
 * XDPR_DDOS_IDLE_NS; a host whose slot another holds is metered in the hash
 * tables (xdpr_ddos_to, xdpr_ddos_from) instead.  So one host may have a
 * share in slots of several CPUs and in a hash table: userspace sums them
 * all by key.  key.family 0: the slot is free.  A destination found not
 * protected leaves its key with XDPR_DDOS_SLOT_OUT, so that its packets of
 * the next XDPR_DDOS_OUT_NS skip the LPM trie (a prefix protected since is
 * metered within that time); such a slot counts nothing and is free for
 * any host.
 */
#define XDPR_DDOS_SLOT_BITS 16
#define XDPR_DDOS_SLOTS     (1u << XDPR_DDOS_SLOT_BITS)
#define XDPR_DDOS_IDLE_NS   (60ULL * 1000000000ULL) /* a slot's host idle this long may be replaced */
#define XDPR_DDOS_OUT_NS    1000000000ULL /* how long a "not protected" mark holds */

#define XDPR_DDOS_SLOT_OUT 1u /* xdpr_ddos_slot.flags: key is a "to" key not protected */

struct xdpr_ddos_slot {
	struct xdpr_ddos_key key;
	__u32 flags;        /* XDPR_DDOS_SLOT_* */
	struct xdpr_ddos_ctr ctr;
};

static inline __u32 xdpr_ddos_slot_of(const struct xdpr_ddos_key *k)
{
	return xdpr_ddos_hash(k) >> (32 - XDPR_DDOS_SLOT_BITS);
}

_Static_assert(sizeof(struct xdpr_ddos_key) == 20, "xdpr_ddos_key layout");
_Static_assert(sizeof(struct xdpr_ddos_prot_key) == 24, "xdpr_ddos_prot_key layout");
_Static_assert(sizeof(struct xdpr_ddos_ctr) == 24, "xdpr_ddos_ctr layout");
_Static_assert(sizeof(struct xdpr_ddos_ban) == 56, "xdpr_ddos_ban layout");
_Static_assert(sizeof(struct xdpr_ddos_slot) == 48, "xdpr_ddos_slot layout");

/* ---- NAT event log (bpf/natlog.h, loader/natlog.c; xdprd exports it as IPFIX NAT events) ----
 *
 * With XDPR_CFG_NATLOG set, the NAT steps write a record to xdpr_natlog
 * (RINGBUF, sized by the loader) when a session is created or deleted
 * (expiry, eviction, sweeps, `xdpr nat flush`: every delete goes through
 * the packet path's code or the GC program), when a new session finds no
 * free port, and when an inside host is at its session limit.  The last
 * two are logged at most once a second per rule per CPU.  A record that
 * finds the ring full is counted, XDPR_NE_LOG_LOST, and the packet goes
 * on: logging never drops or delays one.  event holds the natEvent value
 * of the IANA registry (RFC 8158); Juniper's draft-02 numbering differs.
 */

enum xdpr_natlog_event {          /* IANA natEvent (RFC 8158) */
	XDPR_NL_CREATE = 4,       /* NAT44 session create */
	XDPR_NL_DELETE = 5,       /* NAT44 session delete */
	XDPR_NL_PORTS  = 12,      /* NAT ports exhausted */
	XDPR_NL_QUOTA  = 13,      /* quota exceeded (natQuotaExceededEvent 3: max entries per user) */
};

struct xdpr_natlog_rec {
	__u64 ts_ns;        /* bpf_ktime_get_coarse_ns (CLOCK_MONOTONIC_COARSE) */
	__u8 event;         /* enum xdpr_natlog_event */
	__u8 rule;          /* the NAT rule (natPoolId) */
	__u8 proto;         /* IPPROTO_*; ICMP: ports are the echo identifier (sport, xsport), 0 */
	__u8 family;        /* AF_INET */
	__be32 src;         /* inside source */
	__be32 xsrc;        /* outside (post-NAT) source; ports exhausted: the address that had none */
	__be32 dst;         /* remote */
	__be16 sport;
	__be16 xsport;      /* 0 where no port was given (ports exhausted, quota) */
	__be16 dport;
	__u16 pad;
	__u32 limit;        /* quota: the host limit (sessions per inside host) that was hit */
	__u32 pad2;
};

_Static_assert(sizeof(struct xdpr_natlog_rec) == 40, "xdpr_natlog_rec layout");

/* ---- neighbours the fast path needs (bpf/neigh.h, loader/nbr.c, daemon/neigh.c) ----
 *
 * A reply translated back to an inside host whose MAC the kernel does not
 * know cannot be handed to the kernel (its "host unreachable" would quote
 * the inside address): it is dropped (drop_nat_in_no_neigh) and the
 * neighbour is asked for on xdpr_nbr_req, a ring xdprd reads; xdprd makes
 * the kernel resolve it and keep it resolved (a managed entry).  A new NAT
 * session asks for its inside host too when the kernel has no entry, so
 * the first reply finds it.  One address is asked for at most every
 * XDPR_NBR_ASK_NS; a request the full ring cannot take is counted
 * (XDPR_NB_LOST, in the program's xdpr_nbr_ctr).
 *
 * xdpr_nbr_dead holds next hops whose resolution failed (xdprd writes
 * them from the kernel's notifications): a packet to a NAT interface
 * through such a next hop is answered with ICMP host unreachable from XDP,
 * quoting it as it arrived, until the mark lapses (XDPR_NBR_DEAD_NS) and
 * the kernel tries again.
 */
#define XDPR_NBR_REQ_BYTES (16 * 4096)    /* the ring: 1,365 requests (40 bytes + an 8-byte header) */
#define XDPR_NBR_DEAD_MAX  1024
#define XDPR_NBR_ASK_NS    200000000ULL   /* 0.2 s */
#define XDPR_NBR_DEAD_NS   10000000000ULL /* 10 s */
#define XDPR_RTPROT_XDPR   0xa9           /* NDA_PROTOCOL of the neighbour entries xdprd makes */

struct xdpr_nbr_key {
	__u32 ifindex;
	__u8 family;        /* AF_INET, AF_INET6 */
	__u8 pad[3];
	__u8 addr[16];      /* IPv4 in the first 4 bytes, the rest 0 */
};

enum xdpr_nbr_why {
	XDPR_NBR_REPLY = 1, /* a reply to it was dropped (drop_nat_in_no_neigh) */
	XDPR_NBR_NEW,       /* a new session's inside host, before its first reply */
};

struct xdpr_nbr_rec {
	struct xdpr_nbr_key k;
	__u64 ts_ns;        /* bpf_ktime_get_coarse_ns */
	__u32 why;          /* enum xdpr_nbr_why */
	__u32 pad;
};

enum xdpr_nbr_stat {        /* xdpr_nbr_ctr[], the program's global data */
	XDPR_NB_ASKED = 0,  /* neighbours asked for on the ring */
	XDPR_NB_LOST,       /* not asked for: the ring was full (no xdprd reads it?) */
	XDPR_NB_MAX
};

/* The last request of a slot (xdpr_nbr_rl[], the program's global data). */
struct xdpr_nbr_rl {
	__u32 ifindex;
	__be32 addr;
	__u64 at;
};

_Static_assert(sizeof(struct xdpr_nbr_key) == 24, "xdpr_nbr_key layout");
_Static_assert(sizeof(struct xdpr_nbr_rec) == 40, "xdpr_nbr_rec layout");

#endif /* XDPR_SHARED_H */
