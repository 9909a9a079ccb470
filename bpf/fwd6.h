/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fwd6.h - the IPv6 packet path: checks -> NPTv6 inbound -> route map /
 * FIB -> filter -> hop limit, egress claim -> rewrite (hop limit, MACs) ->
 * NPTv6 outbound (npt6.h; fwd6_exit, from the entry point, after the
 * filter).  Without NPTv6 rules IPv6 is forwarded as it is.
 */
#ifndef XDPR_FWD6_H
#define XDPR_FWD6_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "parse.h"
#include "fib.h"
#include "route.h"
#include "filter.h"
#include "reject.h"
#include "npt6.h"
#include "flow.h"

#define IPV6_FLOWINFO_MASK bpf_htonl(0x0FFFFFFF)

static __always_inline int ip6_martian(const struct ipv6hdr *ip6h)
{
	__u8 s0 = ip6h->saddr.in6_u.u6_addr8[0], s1 = ip6h->saddr.in6_u.u6_addr8[1];
	__u8 d0 = ip6h->daddr.in6_u.u6_addr8[0], d1 = ip6h->daddr.in6_u.u6_addr8[1];
	const __u32 *s = ip6h->saddr.in6_u.u6_addr32, *d = ip6h->daddr.in6_u.u6_addr32;

	/* link-local either side (the kernel answers "beyond scope"), multicast source */
	if ((s0 == 0xfe && (s1 & 0xc0) == 0x80) || (d0 == 0xfe && (d1 & 0xc0) == 0x80) ||
	    s0 == 0xff)
		return 1;
	/* :: and ::1 either side */
	if (!(s[0] | s[1] | s[2]) && (s[3] == 0 || s[3] == bpf_htonl(1)))
		return 1;
	if (!(d[0] | d[1] | d[2]) && (d[3] == 0 || d[3] == bpf_htonl(1)))
		return 1;
	return 0;
}

/* The end of the path: hop limit, egress claim, rewrite, for the FIB's answer in fib. */
static __always_inline int fwd6_tail(struct ethhdr *eth, struct ipv6hdr *ip6h, struct bpf_fib_lookup *fib,
				     __u32 in_flags, int exthdr)
{
	struct xdpr_iface inf = { .flags = in_flags };
	int step;

	if (exthdr)
		return XDPR_PASS_IP6_EXTHDR;
	if (ip6h->hop_limit <= 1)
		return XDPR_PASS_TTL;
	step = claim_egress(&inf, fib->ifindex, -1);
	if (step != XDPR_FWD)
		return step;

	ip6h->hop_limit--; /* no IPv6 header checksum */
	rewrite_l2(eth, fib);
	return XDPR_FWD;
}

/*
 * After the filter accepted a packet fwd_ip6 handed it (STEP_FILTER): the
 * exit fwd_ip6 left in the filter's view, or the rest of the path.
 */
__noinline int fwd6_finish(struct xdp_md *ctx, __u32 in_flags)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6h = data + sizeof(*eth);
	struct bpf_fib_lookup *fib;
	struct flt_pkt *fp = flt_scratch();
	__u32 zero = 0;

	fib = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);
	if (!ctx || !fp || !fib || (void *)(ip6h + 1) > end)
		return XDPR_DROP_SHORT;
	if (fp->cont >= 0)
		return fp->cont;
	return fwd6_tail(eth, ip6h, fib, in_flags, fp->exthdr);
}

/*
 * A global function (verified once, its own stack): the frame is an
 * Ethernet header and IPv6; in_flags are the ingress interface's.
 * STEP_FILTER: the filter's view of it is ready; the caller runs the
 * filter (filter_run, from the top frame: its call chain needs the
 * stack), then fwd6_finish.
 */
__noinline int fwd_ip6(struct xdp_md *ctx, __u32 in_flags)
{
	struct cursor cur = {
		.pos = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	}, *c = &cur;
	struct bpf_fib_lookup *fib;
	struct ethhdr *eth;
	struct xdpr_cfg *cfg;
	struct ipv6hdr *ip6h;
	struct l4_ports ports;
	__u32 plen, zero = 0, l4off = 0;
	int fibrc = 0, step = STEP_NEXT, routed = 0, flt, exthdr = 0;
	__u8 l4proto = 0;

	if (!ctx)
		return XDPR_DROP_SHORT;
	eth = cursor_take(c, sizeof(*eth));
	ip6h = cursor_take(c, sizeof(*ip6h));
	fib = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);
	if (!eth || !ip6h || !fib)
		return XDPR_DROP_SHORT;
	plen = bpf_ntohs(ip6h->payload_len);
	asm volatile("%0 &= 0xffff" : "+r"(plen)); /* bounded for older verifiers (6.1, 6.12) */
	if (ip6h->version != 6 || (void *)(ip6h + 1) + plen > c->end)
		return XDPR_PASS_IP6_HDR_ERR;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (cfg && (cfg->flags & XDPR_CFG_FLOWS))
		flow_in(ctx); /* the tuple as it arrived, before NPTv6 (flow.h) */
	flt = flt_active(cfg);
	/* NPTv6: for the outside prefix, to the inside one before anything looks at it */
	if (npt6_on(cfg) && (step = npt6_in(ctx, npt6_find(ctx, in_ifindex(ctx)))) >= 0)
		return step;
	step = STEP_NEXT;
	if (ip6_is_exthdr(ip6h->nexthdr)) {
		if (!flt)
			return XDPR_PASS_IP6_EXTHDR;
		exthdr = 1; /* the kernel forwards it, once the filter has seen it */
	}
	if (ip6_martian(ip6h))
		return XDPR_PASS_MARTIAN;
	if (flt) {
		int l4 = ip6_l4(ctx);

		if (l4 < 0)
			return XDPR_DROP_FILTER_HDR;
		l4proto = l4 >> 16;
		l4off = l4 & 0xffff;
	}

	parse_ports(c, ip6h->nexthdr, &ports);
	__builtin_memset(fib, 0, sizeof(*fib));
	fib->family = AF_INET6;
	fib->flowinfo = *(__be32 *)ip6h & IPV6_FLOWINFO_MASK;
	fib->l4_protocol = ip6h->nexthdr;
	fib->sport = ports.sport;
	fib->dport = ports.dport;
	/* The whole packet, header included: the helper checks it against the MTU. */
	fib->tot_len = sizeof(*ip6h) + plen;
	__builtin_memcpy(fib->ipv6_src, &ip6h->saddr, sizeof(fib->ipv6_src));
	__builtin_memcpy(fib->ipv6_dst, &ip6h->daddr, sizeof(fib->ipv6_dst));
	fib->ifindex = in_ifindex(ctx);

	if (cfg && (cfg->flags & XDPR_CFG_ROUTES)) {
		__u32 slot = cfg->rt_slot & 1;
		struct xdpr_rtent *rt = rt6_lookup(slot, &ip6h->daddr);

		if (rt) {
			const __u32 *s6 = ip6h->saddr.in6_u.u6_addr32, *d6 = ip6h->daddr.in6_u.u6_addr32;
			const struct xdpr_nh *nh;

			step = rt_act(rt, c->end - (void *)eth);
			if (step == STEP_RT_FIB) {
				step = STEP_NEXT;
				routed = 1;
				nh = rt_pick(slot, rt, rt_hash(s6[0] ^ s6[1] ^ s6[2] ^ s6[3],
							 d6[0] ^ d6[1] ^ d6[2] ^ d6[3],
							 ((__u32)ports.sport << 16) | ports.dport, ip6h->nexthdr));
				if (!nh) {
					step = XDPR_PASS_ROUTE_GW;
				} else if (nh->flags & XDPR_NH_MAC) {
					/* link-local gateway: the FIB never resolves those */
					step = rt_static_nh(ctx, fib, nh);
					fibrc = BPF_FIB_LKUP_RET_SUCCESS;
				} else {
					__builtin_memcpy(fib->ipv6_dst, nh->gw, sizeof(fib->ipv6_dst));
					fib->ifindex = nh->ifindex;
					fibrc = bpf_fib_lookup(ctx, fib, sizeof(*fib), BPF_FIB_LOOKUP_OUTPUT);
					step = rt_check_nh(fibrc, fib, nh);
				}
			}
		}
	}
	if (step < 0 && !routed)
		fibrc = bpf_fib_lookup(ctx, fib, sizeof(*fib), 0);
	/* expiring here: the kernel answers it and forwards nothing, so it starts no flow */
	if (flt && (step < 0 ? fib_forwards(fibrc) : reason_kernel_forwards(step)) && ip6h->hop_limit <= 1)
		return XDPR_PASS_TTL;
	if (flt && (step < 0 ? fib_forwards(fibrc) : reason_kernel_forwards(step))) {
		/* the filter, on the egress; ask the kernel's FIB where the route map did not say */
		int redo = step >= 0 || (fibrc != BPF_FIB_LKUP_RET_SUCCESS && fibrc != BPF_FIB_LKUP_RET_NO_NEIGH);
		__u32 out_if = fib->ifindex;
		int f;

		if (redo) {
			__builtin_memcpy(fib->ipv6_dst, &ip6h->daddr, sizeof(fib->ipv6_dst));
			fib->ifindex = in_ifindex(ctx);
			fib->tot_len = sizeof(*ip6h);
			f = bpf_fib_lookup(ctx, fib, sizeof(*fib), 0);
			out_if = f == BPF_FIB_LKUP_RET_SUCCESS || f == BPF_FIB_LKUP_RET_NO_NEIGH ? fib->ifindex : 0;
		}
		if (out_if && (exthdr || !flt6_hot(ctx))) {
			struct flt_pkt *fp;

			f = filter6_view(ctx, l4off, l4proto, out_if);
			fp = flt_scratch();
			if (f >= 0 || !fp)
				return f >= 0 ? f : XDPR_DROP_FILTER_HDR;
			/* after the filter: the route map's exit, the FIB's (no neighbour: the kernel
			   resolves it), or the rest of the path only for a FIB success */
			fp->cont = step >= 0 ? step : fibrc != BPF_FIB_LKUP_RET_SUCCESS ? fib_reason(fibrc) : -1;
			fp->exthdr = exthdr;
			fp->l4off = l4off;
			return STEP_FILTER;
		}
		/* with an egress, from here: established, on this CPU's copy of its state, on as fwd6_finish sends it */
		if (!out_if && redo)
			return step >= 0 ? step : fib_reason(fibrc);
	}
	if (step >= 0)
		return step;
	if (fibrc != BPF_FIB_LKUP_RET_SUCCESS)
		return fib_reason(fibrc);
	return fwd6_tail(eth, ip6h, fib, in_flags, exthdr);
}

/* Every exit of the IPv6 path, after the filter: NPTv6 outbound when there are rules. */
static __always_inline int fwd6_exit(struct xdp_md *ctx, int r)
{
	__u32 zero = 0;

	if (r == STEP_FILTER || !npt6_on(bpf_map_lookup_elem(&xdpr_cfg, &zero)))
		return r;
	return npt6_out(ctx, r);
}

#endif /* XDPR_FWD6_H */
