/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fib.h - route a parsed IPv4/IPv6 packet with bpf_fib_lookup and, when the
 * fast path can finish it, rewrite it and set up the redirect.
 */
#ifndef XDPR_FIB_H
#define XDPR_FIB_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "parse.h"
#include "csum.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif
#define IP_MF     0x2000
#define IP_OFFSET 0x1fff
#define IPV6_FLOWINFO_MASK bpf_htonl(0x0FFFFFFF)

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

#include "nat.h"
#include "route.h"

static __always_inline int fib_reason(int rc)
{
	switch (rc) {
	case BPF_FIB_LKUP_RET_BLACKHOLE:    return XDPR_PASS_FIB_BLACKHOLE;
	case BPF_FIB_LKUP_RET_UNREACHABLE:  return XDPR_PASS_FIB_UNREACH;
	case BPF_FIB_LKUP_RET_PROHIBIT:     return XDPR_PASS_FIB_PROHIBIT;
	case BPF_FIB_LKUP_RET_NOT_FWDED:    return XDPR_PASS_FIB_NOT_FWDED;
	case BPF_FIB_LKUP_RET_FWD_DISABLED: return XDPR_PASS_FIB_FWD_DISABLED;
	case BPF_FIB_LKUP_RET_UNSUPP_LWT:   return XDPR_PASS_FIB_UNSUPP_LWT;
	case BPF_FIB_LKUP_RET_NO_NEIGH:     return XDPR_PASS_FIB_NO_NEIGH;
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:  return XDPR_PASS_FIB_FRAG_NEEDED;
	}
	return XDPR_PASS_FIB_OTHER;
}

/*
 * The FIB found a next hop: can the fast path transmit there?  Claims the
 * redirect before anything in the frame is changed, so a frame that goes to
 * the kernel instead is handed over exactly as it arrived.
 */
static __always_inline int claim_egress(const struct xdpr_iface *in, __u32 egress)
{
	struct xdpr_iface *out = bpf_map_lookup_elem(&xdpr_ifaces, &egress);

	if (!out)
		return XDPR_PASS_EGRESS_NOT_XDPR;
	/* Generic-mode ingress transmits through the stack: any device works. */
	if (!(in->flags & XDPR_IF_GENERIC) && !(out->flags & XDPR_IF_XMIT))
		return XDPR_PASS_EGRESS_NO_XMIT;
	if (bpf_redirect_map(&xdpr_tx_ports, egress, XDP_PASS) != XDP_REDIRECT)
		return XDPR_PASS_EGRESS_NOT_XDPR;
	return XDPR_FWD;
}

static __always_inline void rewrite_l2(struct ethhdr *eth, const struct bpf_fib_lookup *fib)
{
	__builtin_memcpy(eth->h_dest, fib->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib->smac, ETH_ALEN);
}

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

/* Ports (or ICMP echo identifier) as NAT keys and the FIB's hash want them. */
static __always_inline void ip4_l4(struct nat4 *p)
{
	if (!p->l4)
		return;
	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) {
		__be16 *ports = p->l4;

		if ((void *)(ports + 2) <= p->end) {
			p->sport = ports[0];
			p->dport = ports[1];
		}
	} else if (p->proto == IPPROTO_ICMP) {
		struct icmp4hdr *ic = p->l4;

		if ((void *)(ic + 1) > p->end)
			return;
		if (ic->type == ICMP_ECHO)
			p->sport = ic->id;
		else if (ic->type == ICMP_ECHOREPLY)
			p->dport = ic->id;
		else if (ic->type == ICMP_DEST_UNREACH || ic->type == ICMP_TIME_EXCEEDED ||
			 ic->type == ICMP_PARAMETERPROB)
			p->icmp_err = 1;
	}
}

/* FIB lookup toward dst, as arriving on ifindex (or, with OUTPUT, leaving through it). */
static __always_inline int ip4_fib(struct xdp_md *ctx, struct bpf_fib_lookup *fib, struct nat4 *p,
				   __u32 flags, __u16 size, __be32 dst, __u32 ifindex)
{
	struct iphdr *iph = p->iph;
	int rc;

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
	rc = bpf_fib_lookup(ctx, fib, sizeof(*fib), flags);
	if (rc == BPF_FIB_LKUP_RET_NO_SRC_ADDR && (flags & BPF_FIB_LOOKUP_SRC)) {
		/* no address to masquerade to: route all the same, NAT will drop */
		fib->ipv4_src = 0;
		fib->ipv4_dst = dst;
		fib->tot_len = size;
		fib->ifindex = ifindex;
		rc = bpf_fib_lookup(ctx, fib, sizeof(*fib), flags & ~BPF_FIB_LOOKUP_SRC);
		fib->ipv4_src = 0;
	}
	return rc;
}

#define IP_DF 0x4000

/*
 * Source NAT for a packet the FIB sends out of an interface with NAT rules.
 * Whatever the kernel will forward must leave translated: translate before
 * handing over (no neighbour, oversize without DF).  What the kernel only
 * answers (TTL expiring, oversize with DF) goes untranslated, so its ICMP
 * reaches the inside host.  Returns -1 to go on, or an xdpr_reason.
 */
static __always_inline int ip4_snat(struct xdp_md *ctx, struct bpf_fib_lookup *fib, struct nat4 *p,
				    int rc, const struct xdpr_cfg *cfg, __u64 now, __u32 flags,
				    __be32 dst, __u32 ifindex)
{
	struct xdpr_iface *out;
	__u32 egress;

	if (rc == BPF_FIB_LKUP_RET_FRAG_NEEDED) {
		/* the helper stops before naming the egress: ask again without the size */
		if (p->iph->frag_off & bpf_htons(IP_DF))
			return XDPR_PASS_FIB_FRAG_NEEDED;
		rc = ip4_fib(ctx, fib, p, flags, sizeof(struct iphdr), dst, ifindex);
		if (rc != BPF_FIB_LKUP_RET_SUCCESS && rc != BPF_FIB_LKUP_RET_NO_NEIGH)
			return -1;
	} else if (rc != BPF_FIB_LKUP_RET_SUCCESS && rc != BPF_FIB_LKUP_RET_NO_NEIGH) {
		return -1;
	}
	egress = fib->ifindex;
	out = bpf_map_lookup_elem(&xdpr_ifaces, &egress);
	if (!out || !out->nrules)
		return -1;
	if (p->iph->ttl <= 1)
		return XDPR_PASS_TTL;
	return nat4_finish(p, nat4_snat(p, out, flags & BPF_FIB_LOOKUP_SRC ? fib->ipv4_src : 0, cfg, now));
}

static __always_inline int fwd_ip4(struct xdp_md *ctx, struct cursor *c, struct ethhdr *eth,
				   const struct xdpr_iface *in, struct bpf_fib_lookup *fib)
{
	struct nat4 p = {};
	struct xdpr_cfg *cfg;
	struct iphdr *iph;
	__u32 zero = 0, flags = 0, fib_if;
	__be32 fib_dst;
	__u32 tot_len;
	__u16 old;
	__u64 now = 0;
	int rc, nat, routed = 0;

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

	p.iph = iph;
	p.end = c->end;
	p.proto = iph->protocol;
	p.frag = (iph->frag_off & bpf_htons(IP_MF | IP_OFFSET)) != 0;
	if (!(iph->frag_off & bpf_htons(IP_OFFSET)))
		p.l4 = (void *)iph + (iph->ihl & 0xf) * 4;
	ip4_l4(&p);

	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	nat = cfg && (cfg->flags & XDPR_CFG_NAT);
	if (nat) {
		now = bpf_ktime_get_coarse_ns();
		if (in->nrules) {
			rc = nat4_finish(&p, nat4_reverse(&p, cfg, now));
			if (rc >= 0)
				return rc;
		}
		if (!p.reversed && (cfg->flags & XDPR_CFG_FIB_SRC))
			flags = BPF_FIB_LOOKUP_SRC;
	} else if (iph->ihl != 5) {
		return XDPR_PASS_IP4_OPTIONS;
	} else if (p.frag) {
		return XDPR_PASS_IP4_FRAG;
	}

	fib_dst = iph->daddr;
	fib_if = ctx->ingress_ifindex;
	if (cfg && (cfg->flags & XDPR_CFG_ROUTES)) {
		__u32 slot = cfg->rt_slot & 1; /* read once: route and next hop from one table */
		struct xdpr_rtent *rt = rt4_lookup(slot, iph->daddr);
		const struct xdpr_nh *nh;

		if (rt) {
			rc = rt_act(rt, c->end - (void *)eth);
			if (rc >= 0)
				return rc;
			nh = rt_pick(slot, rt, rt_hash(iph->saddr, iph->daddr, (p.sport << 16) | p.dport, p.proto));
			if (!nh)
				return XDPR_PASS_ROUTE_GW;
			fib_dst = *(__be32 *)nh->gw;
			fib_if = nh->ifindex;
			flags |= BPF_FIB_LOOKUP_OUTPUT;
			rc = ip4_fib(ctx, fib, &p, flags, tot_len, fib_dst, fib_if);
			routed = rt_check_nh(rc, fib, nh);
			if (routed >= 0)
				return routed;
			routed = 1;
		}
	}
	if (!routed)
		rc = ip4_fib(ctx, fib, &p, flags, tot_len, fib_dst, fib_if);
	if (nat && !p.reversed) {
		if (rc == BPF_FIB_LKUP_RET_NOT_FWDED && !in->nrules && !routed) {
			/* an inside host addressing a NAT binding of the router */
			int r2 = nat4_hairpin(&p, cfg, now);

			if (r2 >= 0)
				return r2;
			if (p.reversed)
				rc = ip4_fib(ctx, fib, &p, 0, tot_len, iph->daddr, ctx->ingress_ifindex);
		} else {
			int r2 = ip4_snat(ctx, fib, &p, rc, cfg, now, flags, fib_dst, fib_if);

			if (r2 >= 0)
				return r2;
		}
	}
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return fib_reason(rc);
	if (iph->ihl != 5)
		return XDPR_PASS_IP4_OPTIONS; /* translated already if NAT applied */
	if (p.frag)
		return XDPR_PASS_IP4_FRAG;
	if (iph->ttl <= 1)
		return XDPR_PASS_TTL;
	rc = claim_egress(in, fib->ifindex);
	if (rc != XDPR_FWD)
		return rc;

	/* TTL shares a 16-bit checksum word with the protocol byte. */
	old = *(__u16 *)&iph->ttl;
	iph->ttl--;
	csum_replace16(&iph->check, old, *(__u16 *)&iph->ttl);
	rewrite_l2(eth, fib);
	return XDPR_FWD;
}

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

static __always_inline int fwd_ip6(struct xdp_md *ctx, struct cursor *c, struct ethhdr *eth,
				   const struct xdpr_iface *in, struct bpf_fib_lookup *fib)
{
	struct xdpr_cfg *cfg;
	struct ipv6hdr *ip6h;
	struct l4_ports ports;
	__u32 plen, zero = 0;
	int rc, routed = 0;

	ip6h = cursor_take(c, sizeof(*ip6h));
	if (!ip6h)
		return XDPR_DROP_SHORT;
	plen = bpf_ntohs(ip6h->payload_len);
	asm volatile("%0 &= 0xffff" : "+r"(plen)); /* bounded for older verifiers (6.1, 6.12) */
	if (ip6h->version != 6 || (void *)(ip6h + 1) + plen > c->end)
		return XDPR_PASS_IP6_HDR_ERR;
	if (ip6_is_exthdr(ip6h->nexthdr))
		return XDPR_PASS_IP6_EXTHDR;
	if (ip6_martian(ip6h))
		return XDPR_PASS_MARTIAN;

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
	fib->ifindex = ctx->ingress_ifindex;

	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (cfg && (cfg->flags & XDPR_CFG_ROUTES)) {
		__u32 slot = cfg->rt_slot & 1;
		struct xdpr_rtent *rt = rt6_lookup(slot, &ip6h->daddr);

		if (rt) {
			const __u32 *s6 = ip6h->saddr.in6_u.u6_addr32, *d6 = ip6h->daddr.in6_u.u6_addr32;
			const struct xdpr_nh *nh;

			rc = rt_act(rt, c->end - (void *)eth);
			if (rc >= 0)
				return rc;
			nh = rt_pick(slot, rt, rt_hash(s6[0] ^ s6[1] ^ s6[2] ^ s6[3], d6[0] ^ d6[1] ^ d6[2] ^ d6[3],
						 ((__u32)ports.sport << 16) | ports.dport, ip6h->nexthdr));
			if (!nh)
				return XDPR_PASS_ROUTE_GW;
			if (nh->flags & XDPR_NH_MAC) {
				/* link-local gateway: the FIB never resolves those */
				routed = rt_static_nh(ctx, fib, nh);
				if (routed >= 0)
					return routed;
				rc = BPF_FIB_LKUP_RET_SUCCESS;
			} else {
				__builtin_memcpy(fib->ipv6_dst, nh->gw, sizeof(fib->ipv6_dst));
				fib->ifindex = nh->ifindex;
				rc = bpf_fib_lookup(ctx, fib, sizeof(*fib), BPF_FIB_LOOKUP_OUTPUT);
				routed = rt_check_nh(rc, fib, nh);
				if (routed >= 0)
					return routed;
			}
			routed = 1;
		}
	}
	if (!routed)
		rc = bpf_fib_lookup(ctx, fib, sizeof(*fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return fib_reason(rc);
	if (ip6h->hop_limit <= 1)
		return XDPR_PASS_TTL;
	rc = claim_egress(in, fib->ifindex);
	if (rc != XDPR_FWD)
		return rc;

	ip6h->hop_limit--; /* no IPv6 header checksum */
	rewrite_l2(eth, fib);
	return XDPR_FWD;
}

#endif /* XDPR_FIB_H */
