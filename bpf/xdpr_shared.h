/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xdpr_shared.h - types, limits and reason codes shared by the XDP program
 * and userspace.  uapi types only: this header is compiled by clang -target
 * bpf and by gcc for the loader, CLI and tests.
 */
#ifndef XDPR_SHARED_H
#define XDPR_SHARED_H

#include <linux/types.h>

/* Interfaces one router can hold (counter slots; slot 0 is "unknown"). */
#define XDPR_MAX_IFACES 256

/*
 * Per-interface settings, in xdpr_ifaces (hash, key = ifindex in the
 * router's network namespace).  Written by the loader before the program is
 * attached to the interface, removed after it is detached.
 */
enum xdpr_iface_flags {
	XDPR_IF_GENERIC = 1 << 0, /* attached in generic (skb) mode            */
	XDPR_IF_XMIT    = 1 << 1, /* driver can transmit redirected XDP frames */
};

struct xdpr_iface {
	__u32 slot;    /* index into xdpr_stats, 1..XDPR_MAX_IFACES-1 */
	__u32 flags;   /* enum xdpr_iface_flags */
	__u8  mac[6];  /* the interface's address: unicast frames to others are not ours */
	__u16 pad;
};

/*
 * Why a frame left the program the way it did.  Every exit counts exactly
 * one reason; the verdict follows from the reason (xdpr_reason_verdict()).
 * Numbers are ABI: append only.
 */
enum xdpr_reason {
	XDPR_FWD = 0,            /* redirected to the egress interface            */

	/* handed to the kernel (XDP_PASS) */
	XDPR_PASS_NOT_IP,        /* not IPv4/IPv6 (ARP, LLDP, ...)                */
	XDPR_PASS_VLAN,          /* 802.1Q / 802.1ad tagged                        */
	XDPR_PASS_L2_OTHER,      /* L2 broadcast/multicast or not our MAC          */
	XDPR_PASS_IP4_HDR_ERR,   /* version, IHL < 5 or total length vs. frame     */
	XDPR_PASS_IP4_CSUM,      /* IPv4 header checksum wrong (RFC 1812 5.2.2)    */
	XDPR_PASS_IP4_OPTIONS,   /* IPv4 options present                           */
	XDPR_PASS_IP4_FRAG,      /* IPv4 fragment (MF or offset)                   */
	XDPR_PASS_IP6_HDR_ERR,   /* version or payload length vs. frame            */
	XDPR_PASS_IP6_EXTHDR,    /* IPv6 extension header                          */
	XDPR_PASS_MARTIAN,       /* loopback, link-local, multicast source, ...:   */
	                         /* the kernel judges (and drops) those            */
	XDPR_PASS_TTL,           /* TTL / hop limit <= 1: kernel sends ICMP        */
	XDPR_PASS_FIB_BLACKHOLE,
	XDPR_PASS_FIB_UNREACH,
	XDPR_PASS_FIB_PROHIBIT,
	XDPR_PASS_FIB_NOT_FWDED, /* local, broadcast, multicast destination        */
	XDPR_PASS_FIB_FWD_DISABLED, /* forwarding disabled on the ingress device   */
	XDPR_PASS_FIB_UNSUPP_LWT,
	XDPR_PASS_FIB_NO_NEIGH,  /* next hop's MAC unknown: kernel resolves it     */
	XDPR_PASS_FIB_FRAG_NEEDED, /* bigger than the egress MTU                   */
	XDPR_PASS_FIB_OTHER,     /* any other FIB return code                      */
	XDPR_PASS_EGRESS_NOT_XDPR, /* egress interface not attached to xdpr        */
	XDPR_PASS_EGRESS_NO_XMIT,  /* egress driver cannot transmit XDP frames     */
	XDPR_PASS_NO_IFACE,      /* ingress interface not (yet/any more) set up    */

	/* dropped (XDP_DROP) */
	XDPR_DROP_SHORT,         /* frame too short for the headers it announces   */

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

/* Verdict for a reason: 0 aborted, 1 drop, 2 pass, 4 redirect (enum xdp_action). */
static inline int xdpr_reason_verdict(int reason)
{
	if (reason == XDPR_FWD)
		return 4; /* XDP_REDIRECT */
	if (reason >= XDPR_DROP_SHORT)
		return 1; /* XDP_DROP */
	return 2;         /* XDP_PASS */
}

/* Names of the BPF objects userspace looks for (<= 15 characters). */
#define XDPR_PROG_NAME   "xdpr_main"
#define XDPR_MAP_STATS   "xdpr_stats"
#define XDPR_MAP_IFACES  "xdpr_ifaces"
#define XDPR_MAP_TX      "xdpr_tx_ports"

/* Compile-time checks on everything that crosses the user/kernel line. */
_Static_assert(sizeof(struct xdpr_iface) == 16, "xdpr_iface layout");
_Static_assert(sizeof(struct xdpr_ctr) == 16, "xdpr_ctr layout");
_Static_assert(sizeof(struct xdpr_slot) == 16 * XDPR_REASON_MAX, "xdpr_slot layout");
_Static_assert(XDPR_REASON_MAX <= 64, "reason set fits a u64 mask");

#endif /* XDPR_SHARED_H */
