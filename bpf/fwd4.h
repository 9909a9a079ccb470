/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fwd4.h - the IPv4 packet path:
 *   checks (RFC 1812) -> reverse NAT -> route map / FIB -> source NAT or
 *   hairpin -> TTL, egress claim -> rewrite (TTL, checksum, MACs)
 * A packet translated back to an inside host never reaches the kernel in a
 * state the kernel would answer with an ICMP error quoting the inside
 * address: such errors come from XDP (icmp.h), or the packet is dropped.
 */
#ifndef XDPR_FWD4_H
#define XDPR_FWD4_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "parse.h"
#include "csum.h"
#include "fib.h"
#include "route.h"
#include "nat.h"
#include "hairpin.h"
#include "nat_fwd.h"
#include "icmp.h"
#include "filter.h"
#include "reject.h"
#include "binat.h"
#include "flow.h"
#include "neigh.h"

static __always_inline int ip4_martian(__be32 saddr, __be32 daddr)
{
	__u32 s = bpf_ntohl(saddr), d = bpf_ntohl(daddr);

	/* 0/8, 127/8 either side; multicast, class E or broadcast as source */
	return (s >> 24) == 0 || (s >> 24) == 127 || (s >> 28) >= 0xe ||
	       (d >> 24) == 0 || (d >> 24) == 127;
}

/* Header checksum over IHL words, options included; 0 when valid. */
static __always_inline __u16 ip4_hdr_csum(struct iphdr *iph, void *end)
{
	__u16 *w = (__u16 *)iph;
	__u32 sum = 0, n = iph->ihl * 2;

	if (n == 10)
		return ip4_hdr_csum20(iph);
	for (__u32 i = 0; i < 30; i++) {
		if (i >= n || (void *)(w + i + 1) > end)
			break;
		sum += w[i];
	}
	return (__u16)~csum_fold32(sum);
}

/* The view of a checked IPv4 header (tot_len within the frame), its ports found. */
static __always_inline void pkt4_init(struct pkt4 *p, struct iphdr *iph, void *end, __u32 tot_len)
{
	p->iph = iph;
	p->end = end;
	p->ip_end = (void *)iph + tot_len;
	p->proto = iph->protocol;
	p->frag = (iph->frag_off & bpf_htons(IP_MF | IP_OFFSET)) != 0;
	if (!(iph->frag_off & bpf_htons(IP_OFFSET)))
		p->l4 = (void *)iph + (iph->ihl & 0xf) * 4;
	pkt4_ports(p);
}

/*
 * FIB lookup toward dst, as arriving on ifindex (or, with OUTPUT, leaving
 * through it).  With BPF_FIB_LOOKUP_SRC, fib->ipv4_src is the source
 * address the kernel would pick for the route (0: the device has none).
 */
static __always_inline int ip4_fib(struct xdp_md *ctx, struct bpf_fib_lookup *fib, struct pkt4 *p,
				   __u32 flags, __u16 size, __be32 dst, __u32 ifindex)
{
	struct iphdr *iph = p->iph;

	__builtin_memset(fib, 0, sizeof(*fib));
	fib->family = AF_INET;
	fib->tos = iph->tos;
	fib->l4_protocol = iph->protocol;
	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) {
		fib->sport = p->sport;
		fib->dport = p->dport;
	}
	fib->tot_len = size; /* the helper compares it with the MTU */
	fib->ipv4_src = iph->saddr;
	fib->ipv4_dst = dst;
	fib->ifindex = ifindex;
	return bpf_fib_lookup(ctx, fib, sizeof(*fib), flags);
}

/*
 * Source NAT for a packet the FIB sends out of an interface with NAT rules.
 * Whatever the kernel will forward must leave translated: translate before
 * handing over (no neighbour, oversize without DF).  What the kernel only
 * answers (TTL expiring, oversize with DF) goes untranslated, so its ICMP
 * reaches the inside host.  Returns STEP_NEXT to go on, or an xdpr_reason.
 */
static __always_inline int ip4_snat(struct xdp_md *ctx, struct bpf_fib_lookup *fib, struct pkt4 *p,
				    struct pkt4_io *io, int fibrc, __u64 now, __u32 flags, __be32 dst,
				    __u32 ifindex)
{
	struct xdpr_iface *out;
	__u32 egress;
	__be32 saddr;
	int step;

	if (fibrc == BPF_FIB_LKUP_RET_FRAG_NEEDED) {
		/* the helper stops before naming the egress: ask again without the size */
		if (p->iph->frag_off & bpf_htons(IP_DF))
			return XDPR_PASS_FIB_FRAG_NEEDED;
		fibrc = ip4_fib(ctx, fib, p, flags, sizeof(struct iphdr), dst, ifindex);
	}
	if (fibrc != BPF_FIB_LKUP_RET_SUCCESS && fibrc != BPF_FIB_LKUP_RET_NO_NEIGH)
		return STEP_NEXT;
	egress = fib->ifindex;
	out = iface_get(egress, XDPR_IFC_NAT);
	if ((step = binat4_egress(ctx, p, io, out, egress)) != STEP_NEXT)
		return step == STEP_BINAT ? STEP_NEXT : step; /* 1:1 first (bpf/binat.h) */
	if (!out)
		return nat_if_gone(p->iph->saddr, 0) ? XDPR_DROP_NAT_IF_GONE : STEP_NEXT;
	if (!out->nrules) { /* rules waiting for it are not bound yet: nothing inside leaves */
		if ((out->flags & XDPR_IF_NAT_PENDING) && nat_if_gone(p->iph->saddr, egress))
			return XDPR_DROP_NAT_IF_GONE;
		if (!(out->flags & XDPR_IF_FWD))
			return STEP_NEXT; /* else a forward's inside host may be replying */
	}
	if (p->iph->ttl <= 1)
		return XDPR_PASS_TTL;
	pkt4_to_io(p, sizeof(struct ethhdr), io);
	pkt4_io_rules(io, out);
	saddr = p->iph->saddr;
	io->snat_sport = p->sport;
	step = nat4_snat(ctx, io, flags & BPF_FIB_LOOKUP_SRC ? fib->ipv4_src : 0, now);
	if (step == STEP_NAT_NORULE)
		step = nat4_fwd_reply(ctx, io, now);
	if (p->iph->saddr != saddr)
		io->filtered = 1; /* translated: its NAT session is its state */
	if (step == STEP_NAT_CREATE && io->flt) {
		/* a new flow: the filter decides before it gets a session (its state) */
		int f = filter4(ctx, io, egress, 1);

		io->filtered = 1;
		if (f == STEP_FLT_REJECT)
			return reject_exit(reject4(ctx));
		if (f >= 0)
			return f;
	}
	io->snat_new = step == STEP_NAT_CREATE;
	if (step == STEP_NAT_CREATE)
		step = nat4_create(ctx, io);
	pkt4_from_io(p, io);
	if (step == STEP_NEXT && (fibrc == BPF_FIB_LKUP_RET_NO_NEIGH || io->snat_new)) {
		/* neighbours (neigh.h): a next hop that failed, a new session's inside host */
		step = nbr4_snat(ctx, io, saddr, fibrc);
		if (step == STEP_NBR_DEAD) { /* the frame is no longer the packet after it: an exit for sure */
			step = nbr4_unreach(ctx, io, saddr);
			return step < 0 ? XDPR_DROP_SHORT : step;
		}
	}
	return step;
}

/*
 * The filter for a forwarded packet no NAT session carries, before it is
 * redirected or handed to the kernel: STEP_NEXT, or the exit.  The egress
 * is the FIB's; an oversize packet asks again without its size (the
 * helper stops before naming the egress).  fib is overwritten then.
 */
static __always_inline int ip4_filter(struct xdp_md *ctx, struct bpf_fib_lookup *fib, struct pkt4 *p,
				      struct pkt4_io *io, int fibrc, __u32 flags, __be32 dst, __u32 ifindex)
{
	struct xdpr_cfg *cfg;
	__u32 zero = 0;
	int step;

	io->filtered = 1;
	if (fibrc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
		fibrc = ip4_fib(ctx, fib, p, flags, sizeof(struct iphdr), dst, ifindex);
	if (fibrc != BPF_FIB_LKUP_RET_SUCCESS && fibrc != BPF_FIB_LKUP_RET_NO_NEIGH)
		return STEP_NEXT; /* the kernel does not forward it either */
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (cfg && flt4_hot(cfg, p))
		return STEP_NEXT; /* established, on this CPU's copy of its state */
	pkt4_to_io(p, sizeof(struct ethhdr), io);
	step = filter4(ctx, io, fib->ifindex, 0);
	if (step == STEP_FLT_REJECT)
		return reject_exit(reject4(ctx));
	return step;
}


/*
 * A packet translated back to an inside host that the fast path cannot
 * forward.  Oversize with DF: "fragmentation needed" from XDP, quoting the
 * packet as it arrived (PMTUD through the NAT).  Oversize without DF: the
 * kernel fragments and forwards it.  Otherwise the kernel would answer with
 * an error quoting the inside address: drop, counted; without a neighbour,
 * xdprd is asked to have the kernel resolve it (neigh.h).
 */
static __always_inline int ip4_reversed_fail(struct xdp_md *ctx, struct bpf_fib_lookup *fib, struct pkt4 *p,
					     const struct pkt4_io *io, int fibrc)
{
	if (fibrc == BPF_FIB_LKUP_RET_FRAG_NEEDED) {
		__u16 mtu = fib->mtu_result;

		if (!(p->iph->frag_off & bpf_htons(IP_DF)))
			return XDPR_PASS_FIB_FRAG_NEEDED;
		if (p->icmp_err)
			return XDPR_DROP_NAT_IN_NO_ROUTE; /* no error about an error */
		nat4_rewrite(p, XDPR_CT_IN, io->orig_daddr, io->orig_dport);
		return icmp4_send(ctx, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED, mtu, XDPR_TX_ICMP_FRAG);
	}
	if (fibrc == BPF_FIB_LKUP_RET_NO_NEIGH) {
		nbr4_ask(fib->ifindex, fib->ipv4_dst, XDPR_NBR_REPLY); /* xdprd has the kernel resolve it */
		return XDPR_DROP_NAT_IN_NO_NEIGH;
	}
	return XDPR_DROP_NAT_IN_NO_ROUTE;
}

/*
 * A port forward's new flow, translated to its inside host and routed
 * there: the filter judges it as an nft forward chain would after dnat
 * (inside addresses), then it gets its session.  Without a neighbour for
 * the inside host the kernel forwards it, translated (it resolves the
 * neighbour; the session takes the next packets).  Routed there (FIB
 * success or no neighbour) only.  Returns STEP_NEXT to go on, or the exit.
 */
static __always_inline int ip4_fwd_new(struct xdp_md *ctx, struct bpf_fib_lookup *fib, struct pkt4 *p,
				       struct pkt4_io *io)
{
	int step;

	io->filtered = 1; /* from here on its session is its state */
	if (io->flt) {
		pkt4_to_io(p, sizeof(struct ethhdr), io);
		step = filter4(ctx, io, fib->ifindex, 1);
		if (step == STEP_FLT_REJECT) {
			/* answered as the packet arrived, from the outside address */
			nat4_rewrite(p, XDPR_CT_IN, io->orig_daddr, io->orig_dport);
			return reject_exit(reject4(ctx));
		}
		if (step >= 0)
			return step;
	}
	step = nat4_fwd_create(ctx);
	if (step >= 0)
		return step;
	return io->fib_rc == BPF_FIB_LKUP_RET_NO_NEIGH ? XDPR_PASS_FIB_NO_NEIGH : STEP_NEXT;
}

/*
 * The route map (route.h) for an IPv4 packet.  STEP_NEXT: no route, ask the
 * FIB; STEP_RT_FIB: a via route, the FIB resolved its next hop (io->fib_*, the
 * result in the FIB scratch); or an xdpr_reason.  Global: its own stack.
 */
__noinline int route4(struct xdp_md *ctx, struct pkt4_io *io, __u32 flags)
{
	struct bpf_fib_lookup *fib;
	const struct xdpr_nh *nh;
	struct pkt4 pk, *p = &pk;
	struct xdpr_rtent *rt;
	struct xdpr_cfg *cfg;
	__u32 zero = 0, slot;
	int step, fibrc;

	if (!ctx || !io || pkt4_view(ctx, io, p))
		return STEP_NEXT;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	fib = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);
	if (!cfg || !fib || !(cfg->flags & XDPR_CFG_ROUTES))
		return STEP_NEXT;
	slot = cfg->rt_slot & 1; /* read once: route and next hop from one table */
	rt = rt4_lookup(slot, p->iph->daddr);
	if (!rt)
		return STEP_NEXT;
	step = rt_act(rt, p->end - (void *)(long)ctx->data);
	if (step >= 0)
		return step;
	nh = rt_pick(slot, rt, rt_hash(p->iph->saddr, p->iph->daddr, (p->sport << 16) | p->dport, p->proto));
	if (!nh)
		return XDPR_PASS_ROUTE_GW;
	io->fib_dst = *(__be32 *)nh->gw;
	io->fib_if = nh->ifindex;
	fibrc = ip4_fib(ctx, fib, p, flags | BPF_FIB_LOOKUP_OUTPUT, bpf_ntohs(p->iph->tot_len),
			io->fib_dst, io->fib_if);
	step = rt_check_nh(fibrc, fib, nh);
	if (step >= 0)
		return step;
	io->fib_rc = fibrc;
	return STEP_RT_FIB;
}

static __always_inline int fwd_ip4_path(struct xdp_md *ctx, struct cursor *c, struct ethhdr *eth,
					const struct xdpr_iface *in, struct bpf_fib_lookup *fib,
					struct pkt4_io *iop, struct xdpr_cfg *cfg)
{
	struct pkt4 p = {};
	struct iphdr *iph;
	__u32 tot_len;
	__u16 old;
	int step;

	iph = cursor_take(c, sizeof(*iph));
	if (!iph)
		return XDPR_DROP_SHORT;
	if (iph->version != 4 || iph->ihl < 5)
		return XDPR_PASS_IP4_HDR_ERR;
	tot_len = bpf_ntohs(iph->tot_len);
	asm volatile("%0 &= 0xffff" : "+r"(tot_len)); /* bounded for older verifiers (6.1, 6.12) */
	if (tot_len < iph->ihl * 4 || (void *)iph + tot_len > c->end)
		return XDPR_PASS_IP4_HDR_ERR;
	if (ip4_hdr_csum(iph, c->end) != 0)
		return XDPR_PASS_IP4_CSUM;
	if (ip4_martian(iph->saddr, iph->daddr))
		return XDPR_PASS_MARTIAN;

	pkt4_init(&p, iph, c->end, tot_len);

#define io (*iop)
	io.tot_len = tot_len;
	io.fib_flags = 0;
	io.fib_rc = 0;
	io.now = 0;
	io.routed = 0;
	io.nat = cfg && (cfg->flags & (XDPR_CFG_NAT | XDPR_CFG_BINAT));
	io.fwd_new = 0;
	if (io.nat) {
		io.now = bpf_ktime_get_coarse_ns();
		if ((in->flags & XDPR_IF_BINAT) && (step = binat4_ingress(ctx, &p, &io)) >= 0)
			return step;
		io.fwd_if = (in->flags & XDPR_IF_FWD) ? in_ifindex(ctx) : 0;
		if (in->nrules || io.fwd_if) {
			pkt4_to_io(&p, sizeof(*eth), &io);
			step = nat4_reverse(ctx, &io, io.now);
			if (step == STEP_NAT_CREATE)
				step = nat4_create(ctx, &io);
			if (step == STEP_NEXT)
				step = nat4_fwd_in(ctx, &io);
			pkt4_from_io(&p, &io);
			if (step == XDPR_TX_ICMP_TTL)
				return icmp4_send(ctx, ICMP_TIME_EXCEEDED, ICMP_EXC_TTL, 0, XDPR_TX_ICMP_TTL);
			if (step >= 0)
				return step;
		}
		if (!p.reversed && (cfg->flags & XDPR_CFG_FIB_SRC))
			io.fib_flags = BPF_FIB_LOOKUP_SRC;
	} else if (iph->ihl != 5 && !io.flt) {
		return XDPR_PASS_IP4_OPTIONS;
	} else if (p.frag && !io.flt) {
		return XDPR_PASS_IP4_FRAG;
	}
	if (p.reversed && !io.fwd_new)
		io.filtered = 1; /* its NAT session is its state */

	io.fib_dst = iph->daddr;
	io.fib_if = in_ifindex(ctx);
	if (cfg && (cfg->flags & XDPR_CFG_ROUTES)) {
		pkt4_to_io(&p, sizeof(*eth), &io);
		step = route4(ctx, &io, io.fib_flags);
		if (step >= 0)
			return p.reversed ? XDPR_DROP_NAT_IN_NO_ROUTE : step;
		if (step == STEP_RT_FIB) {
			io.routed = 1;
			io.fib_flags |= BPF_FIB_LOOKUP_OUTPUT;
		}
	}
	if (!io.routed)
		io.fib_rc = ip4_fib(ctx, fib, &p, io.fib_flags, io.tot_len, io.fib_dst, io.fib_if);
	if (p.reversed) {
		if (io.fib_rc != BPF_FIB_LKUP_RET_SUCCESS &&
		    !(io.fwd_new && io.fib_rc == BPF_FIB_LKUP_RET_NO_NEIGH))
			return ip4_reversed_fail(ctx, fib, &p, &io, io.fib_rc);
		if (io.fwd_new) {
			step = ip4_fwd_new(ctx, fib, &p, &io);
			if (step >= 0)
				return step;
		}
	} else if (io.nat) {
		if (io.fib_rc == BPF_FIB_LKUP_RET_NOT_FWDED && !in->nrules && !io.routed) {
			/* an inside host addressing a NAT binding of the router */
			int r2;

			pkt4_to_io(&p, sizeof(*eth), &io);
			r2 = nat4_hairpin(ctx, &io);
			if (r2 >= 0)
				return r2;
			/* expiring here: answered as it came, before either translation makes state */
			if (r2 == STEP_HAIRPIN && iph->ttl <= 1)
				return icmp4_send(ctx, ICMP_TIME_EXCEEDED, ICMP_EXC_TTL, 0, XDPR_TX_ICMP_TTL);
			if (r2 == STEP_HAIRPIN) {
				__be32 saddr = iph->saddr;

				r2 = nat4_snat(ctx, &io, io.hp_addr, io.now);
				if (r2 == STEP_NAT_NORULE)
					r2 = nat4_fwd_reply(ctx, &io, io.now);
				if (r2 == STEP_NAT_CREATE)
					r2 = nat4_create(ctx, &io);
				pkt4_from_io(&p, &io);
				if (r2 >= 0)
					return r2;
				/* not an inside host of that rule: the router's business */
				if (iph->saddr != saddr) {
					r2 = nat4_reverse(ctx, &io, io.now);
					if (r2 == STEP_NAT_CREATE)
						r2 = nat4_create(ctx, &io);
					if (r2 == STEP_NEXT)
						r2 = nat4_fwd_in(ctx, &io);
					if (r2 == STEP_NEXT && io.fwd_new) {
						/* reflection: not filtered, as any hairpin */
						io.fwd_new = 0;
						r2 = nat4_fwd_create(ctx);
					}
					pkt4_from_io(&p, &io);
					if (r2 >= 0)
						return r2 == XDPR_TX_ICMP_TTL ? XDPR_PASS_TTL : r2;
				}
			}
			if (p.reversed) {
				io.filtered = 1; /* not filtered: see README, "Filter" */
				nat_count(io.hp_rule, XDPR_NE_HAIRPIN);
				io.fib_rc = ip4_fib(ctx, fib, &p, 0, io.tot_len, iph->daddr, in_ifindex(ctx));
			}
		} else {
			int r2 = ip4_snat(ctx, fib, &p, &io, io.fib_rc, io.now, io.fib_flags, io.fib_dst, io.fib_if);

			if (r2 >= 0)
				return r2;
		}
	}
	/* expiring here: the kernel answers it and forwards nothing, so it starts no flow */
	if (io.flt && !io.filtered && fib_forwards(io.fib_rc) && iph->ttl <= 1)
		return XDPR_PASS_TTL;
	if (io.flt && !io.filtered && fib_forwards(io.fib_rc)) {
		step = ip4_filter(ctx, fib, &p, &io, io.fib_rc, io.fib_flags, io.fib_dst, io.fib_if);
		if (step >= 0)
			return step;
		if (io.fib_rc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
			return XDPR_PASS_FIB_FRAG_NEEDED; /* fib was overwritten */
	}
	if (io.fib_rc != BPF_FIB_LKUP_RET_SUCCESS)
		return fib_reason(io.fib_rc);
	if (iph->ihl != 5)
		return XDPR_PASS_IP4_OPTIONS; /* translated already if NAT applied */
	if (p.frag)
		return XDPR_PASS_IP4_FRAG;
	if (iph->ttl <= 1)
		return XDPR_PASS_TTL;
	step = claim_egress(in, fib->ifindex, iph->tos);
	if (step != XDPR_FWD)
		return step;

	/* TTL shares a 16-bit checksum word with the protocol byte. */
	old = *(__u16 *)&iph->ttl;
	iph->ttl--;
	csum_replace16(&iph->check, old, *(__u16 *)&iph->ttl);
	rewrite_l2(eth, fib);
	return XDPR_FWD;
#undef io
}

/*
 * The backstop's view: the packet as it arrived into io, and the kernel
 * FIB's egress for it (0: the kernel would not forward it).
 */
__noinline __u32 filter4_late_view(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct iphdr *iph = data + sizeof(struct ethhdr);
	struct bpf_fib_lookup *fib;
	struct pkt4_io *io;
	struct pkt4 p = {};
	__u32 zero = 0, tot_len;
	int fibrc;

	if (!ctx || (void *)(iph + 1) > end)
		return 0;
	tot_len = bpf_ntohs(iph->tot_len);
	asm volatile("%0 &= 0xffff" : "+r"(tot_len));
	/* expiring here: the kernel answers it and forwards nothing, so it starts no flow */
	if (iph->ihl < 5 || (void *)iph + tot_len > end || iph->ttl <= 1)
		return 0;
	fib = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);
	io = bpf_map_lookup_elem(&xdpr_io_scr, &zero);
	if (!fib || !io)
		return 0;
	pkt4_init(&p, iph, end, tot_len);
	fibrc = ip4_fib(ctx, fib, &p, 0, sizeof(struct iphdr), iph->daddr, in_ifindex(ctx));
	if (fibrc != BPF_FIB_LKUP_RET_SUCCESS && fibrc != BPF_FIB_LKUP_RET_NO_NEIGH)
		return 0;
	pkt4_to_io(&p, sizeof(struct ethhdr), io);
	return fib->ifindex;
}

/*
 * A packet a route map "via" route hands to the kernel (gateway without a
 * neighbour, egress xdpr does not drive): the kernel forwards it by its
 * own FIB.  Would that be out of a NAT interface whose rule translates its
 * source?  Then it must not go (drop_nat_untranslatable): it would leave
 * untranslated.  Else its reason, as it was.  Global: off xdpr_main's frame.
 */
__noinline int nat4_kernel_leak(struct xdp_md *ctx, int reason)
{
	struct xdpr_cfg *cfg;
	struct iphdr *iph;
	struct xdpr_iface *o;
	__u32 ifindex, zero = 0;
	__be32 saddr;

	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	/* pass routes bypass NAT on purpose (README, "route"); nothing else may */
	if (!ctx || !cfg || !(cfg->flags & (XDPR_CFG_NAT | XDPR_CFG_BINAT)) || reason == XDPR_PASS_ROUTE ||
	    !reason_kernel_forwards(reason))
		return reason;
	ifindex = filter4_late_view(ctx);
	iph = (void *)(long)ctx->data + sizeof(struct ethhdr);
	if (!ifindex || (void *)(iph + 1) > (void *)(long)ctx->data_end)
		return reason;
	saddr = iph->saddr;
	if (binat4_leak(ifindex, saddr)) {
		flt_unkeep4(iph);
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	}
	o = bpf_map_lookup_elem(&xdpr_ifaces, &ifindex);
	if (!o)
		return reason;
	for (int i = 0; i < XDPR_NAT_IF_RULES; i++) {
		struct xdpr_nat_rule *r;
		__u32 id;

		if (i >= o->nrules)
			break;
		id = o->rules[i];
		r = bpf_map_lookup_elem(&xdpr_nat_rules, &id);
		if (r && r->ifindex && !(r->flags & XDPR_NAT_RETIRED) && (saddr & r->src_mask) == r->src_net) {
			flt_unkeep4(iph);
			return XDPR_DROP_NAT_UNTRANSLATABLE;
		}
	}
	return reason;
}

/*
 * The IPv4 path, and the filter's backstop: a packet the kernel will
 * forward that no step filtered (route map "pass", a gateway off its
 * device) is filtered here, on the kernel FIB's egress.
 */
static __always_inline int fwd_ip4(struct xdp_md *ctx, struct cursor *c, struct ethhdr *eth,
				   const struct xdpr_iface *in, struct bpf_fib_lookup *fib)
{
	struct pkt4_io *iop;
	struct xdpr_cfg *cfg;
	__u32 zero = 0;
	int r;

	iop = bpf_map_lookup_elem(&xdpr_io_scr, &zero);
	if (!iop)
		return XDPR_PASS_FIB_OTHER;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (cfg && (cfg->flags & XDPR_CFG_FLOWS))
		flow_in(ctx); /* the tuple as it arrived (flow.h) */
	iop->flt = flt_active(cfg);
	iop->filtered = 0;
	iop->flt_ran = 0;
	r = fwd_ip4_path(ctx, c, eth, in, fib, iop, cfg);
	if (iop->routed)
		r = nat4_kernel_leak(ctx, r);
	if (iop->flt && !iop->filtered && reason_kernel_forwards(r)) {
		__u32 out_if = filter4_late_view(ctx);
		int f = out_if ? filter4(ctx, iop, out_if, 0) : STEP_NEXT;

		if (f == STEP_FLT_REJECT)
			return reject_exit(reject4(ctx));
		if (f >= 0)
			return f;
	}
	return r;
}

#endif /* XDPR_FWD4_H */
