/* SPDX-License-Identifier: GPL-2.0 */
/*
 * neigh.h - neighbours the fast path needs and the kernel does not have
 * (xdpr_shared.h, "neighbours the fast path needs").
 *
 *   nbr4_ask      a reply to an inside host is dropped for want of its MAC,
 *                 or a new session's inside host has no entry: ask xdprd
 *                 (xdpr_nbr_req) to have the kernel resolve it
 *   nbr4_dead     is this next hop marked as failing to resolve?
 *   nbr4_unreach  answer a packet for such a next hop with ICMP host
 *                 unreachable from the router's inside address
 *
 * Only exceptional paths come here (no neighbour, a new session): the
 * ring's reservation (a spin lock across CPUs) never meets a forwarded
 * packet.  An address is asked for at most every XDPR_NBR_ASK_NS (nearly:
 * the CPUs share the record of it without locks), so a stream of replies to an unresolved host costs a
 * few ring records a second, not one a packet.
 */
#ifndef XDPR_NEIGH_H
#define XDPR_NEIGH_H

#include <linux/bpf.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "parse.h"
#include "fib.h"
#include "icmp.h"
#include "nat_xlate.h"
#include "step.h"

#define ICMP_HOST_UNREACH_CODE 1 /* code of ICMP_DEST_UNREACH */
#define NBR_RL_SLOTS           64
#define NBR_SEEN_BITS          8
#define NBR_SEEN_SLOTS         (1 << NBR_SEEN_BITS)
#define NBR_SEEN_NS            1000000000ULL

/* Requests to xdprd; the loader sets its size (XDPR_NBR_REQ_BYTES) when it creates the shared maps. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XDPR_NBR_REQ_BYTES);
} xdpr_nbr_req SEC(".maps");

/* Next hops that failed to resolve -> when the mark lapses (ns, CLOCK_MONOTONIC); xdprd writes it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XDPR_NBR_DEAD_MAX);
	__type(key, struct xdpr_nbr_key);
	__type(value, __u64);
} xdpr_nbr_dead SEC(".maps");

/*
 * Which address each slot last asked for, and when; and the counts (enum
 * xdpr_nbr_stat).  Shared by the CPUs, in the program's global data: these
 * paths are exceptional (a race costs one more request at most).
 */
struct xdpr_nbr_rl xdpr_nbr_rl[NBR_RL_SLOTS];
struct xdpr_nbr_rl xdpr_nbr_seen[NBR_SEEN_SLOTS]; /* new sessions' hosts looked at lately */
__u64 xdpr_nbr_ctr[XDPR_NB_MAX];

static __always_inline void nbr_count(__u32 what)
{
	if (what < XDPR_NB_MAX)
		__sync_fetch_and_add(&xdpr_nbr_ctr[what], 1);
}

/*
 * Ask for IPv4 neighbour addr on ifindex (the FIB's egress and next hop),
 * why: enum xdpr_nbr_why.
 * 1 asked, 0 not (asked lately, ring full: counted).  Global: verified once.
 */
__noinline int nbr4_ask(__u32 ifindex, __be32 addr, __u32 why)
{
	__u32 slot = (bpf_ntohl(addr) ^ ifindex * 0x9e3779b1u) % NBR_RL_SLOTS;
	__u64 now = bpf_ktime_get_coarse_ns();
	struct xdpr_nbr_rec *r;
	struct xdpr_nbr_rl *rl = &xdpr_nbr_rl[slot];

	if (!ifindex)
		return 0;
	if (rl->ifindex == ifindex && rl->addr == addr && now - rl->at < XDPR_NBR_ASK_NS)
		return 0;
	rl->ifindex = ifindex;
	rl->addr = addr;
	rl->at = now;
	r = bpf_ringbuf_reserve(&xdpr_nbr_req, sizeof(*r), 0);
	if (!r) {
		nbr_count(XDPR_NB_LOST);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->k.ifindex = ifindex;
	r->k.family = AF_INET;
	__builtin_memcpy(r->k.addr, &addr, 4);
	r->ts_ns = now;
	r->why = why;
	bpf_ringbuf_submit(r, 0);
	nbr_count(XDPR_NB_ASKED);
	return 1;
}

/*
 * A new session from inside host saddr, which arrived on ifindex: does the
 * kernel know its MAC?  Asked for when not, so that the first reply finds
 * it.  A host is looked at once a second at most (a FIB lookup costs about
 * as much as a tenth of the session's making).  Global: its own frame.
 */
__noinline int nbr4_prime(struct xdp_md *ctx, __be32 saddr, __u32 ifindex)
{
	__u32 slot = (bpf_ntohl(saddr) * 0x9e3779b1u) >> (32 - NBR_SEEN_BITS);
	struct xdpr_nbr_rl *seen = &xdpr_nbr_seen[slot & (NBR_SEEN_SLOTS - 1)];
	__u64 now = bpf_ktime_get_coarse_ns();
	struct bpf_fib_lookup fib = {};

	if (!ctx)
		return 0;
	/* a host's sessions look once a second, not once each */
	if (seen->addr == saddr && seen->ifindex == ifindex && now - seen->at < NBR_SEEN_NS)
		return 0;
	seen->addr = saddr;
	seen->ifindex = ifindex;
	seen->at = now;
	fib.family = AF_INET;
	fib.ipv4_dst = saddr;
	fib.ifindex = ifindex;
	fib.tot_len = sizeof(struct iphdr);
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_NO_NEIGH)
		return 0;
	return nbr4_ask(fib.ifindex, fib.ipv4_dst, XDPR_NBR_NEW);
}

/* Is IPv4 next hop addr on ifindex marked as failing to resolve (and the mark not lapsed)? */
static __always_inline int nbr4_dead(__u32 ifindex, __be32 addr)
{
	struct xdpr_nbr_key k = { .ifindex = ifindex, .family = AF_INET };
	__u64 *until;

	__builtin_memcpy(k.addr, &addr, 4);
	until = bpf_map_lookup_elem(&xdpr_nbr_dead, &k);
	return until && bpf_ktime_get_coarse_ns() < *until;
}

/*
 * A packet source NAT translated (its source was saddr, its source port
 * io->snat_sport) for a next hop marked dead: back to its inside source,
 * and answered with ICMP host unreachable (RFC 1812 4.3.3.1) from the
 * router's address toward the inside host, out of the interface it came
 * in on, as the kernel would have done had it not been translated.  Never
 * about an ICMP error or a later fragment: those go on to the kernel
 * (pass_no_neigh, translated, as without the mark).  Global: an exit
 * (the frame changes size), called only where the path ends.
 */
__noinline int nbr4_unreach(struct xdp_md *ctx, struct pkt4_io *io, __be32 saddr)
{
	struct bpf_fib_lookup *fib;
	struct pkt4 pk, *p = &pk;
	struct xdpr_cfg *cfg;
	__u32 zero = 0;
	__be32 src;

	if (!ctx || !io || pkt4_view(ctx, io, p))
		return XDPR_PASS_FIB_NO_NEIGH;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	fib = bpf_map_lookup_elem(&xdpr_fib_scr, &zero); /* an exit: the path needs it no more */
	if (!cfg || !fib || !(cfg->flags & XDPR_CFG_FIB_SRC) || p->icmp_err ||
	    (p->iph->frag_off & bpf_htons(IP_OFFSET)))
		return XDPR_PASS_FIB_NO_NEIGH;
	/* the router's own address toward the inside host: the error's source */
	__builtin_memset(fib, 0, sizeof(*fib));
	fib->family = AF_INET;
	fib->ipv4_dst = saddr;
	fib->ifindex = in_ifindex(ctx);
	fib->tot_len = sizeof(struct iphdr);
	bpf_fib_lookup(ctx, fib, sizeof(*fib), BPF_FIB_LOOKUP_SRC); /* the source comes before the neighbour */
	src = fib->ipv4_src;
	if (!src)
		return XDPR_PASS_FIB_NO_NEIGH; /* translated still: the kernel's turn, as before */
	if (p->iph->saddr != saddr)
		nat4_rewrite(p, XDPR_CT_OUT, saddr, io->snat_sport);
	return icmp4_send_from(ctx, ICMP_DEST_UNREACH, ICMP_HOST_UNREACH_CODE, src, XDPR_TX_ICMP_HOST_UNREACH);
}

/*
 * ip4_snat, a packet translated (or not: no rule) that goes on: the FIB's
 * answer fibrc is in the FIB scratch.  Without a neighbour, a next hop
 * marked dead gets the inside host its host unreachable; a new session
 * whose inside host (source saddr) the kernel has no entry for asks for
 * it.  STEP_NEXT, or STEP_NBR_DEAD (nbr4_unreach).  Global: its own frame.
 */
__noinline int nbr4_snat(struct xdp_md *ctx, struct pkt4_io *io, __be32 saddr, int fibrc)
{
	struct bpf_fib_lookup *fib;
	__u32 zero = 0;

	if (!ctx || !io)
		return STEP_NEXT;
	fib = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);
	if (!fib)
		return STEP_NEXT;
	if (fibrc == BPF_FIB_LKUP_RET_NO_NEIGH && nbr4_dead(fib->ifindex, fib->ipv4_dst))
		return STEP_NBR_DEAD;
	if (io->snat_new)
		nbr4_prime(ctx, saddr, in_ifindex(ctx));
	return STEP_NEXT;
}

#endif /* XDPR_NEIGH_H */
