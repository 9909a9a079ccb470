/* SPDX-License-Identifier: GPL-2.0 */
/*
 * npt6.h - NPTv6 (RFC 6296): stateless, checksum-neutral prefix
 * translation on an outside interface (rules: struct xdpr_npt_rule).
 *
 *   npt6_in   a packet arriving on the outside interface for the outside
 *             prefix: its destination (and the quoted source of an ICMPv6
 *             error) mapped to the inside prefix, before the FIB lookup and
 *             the filter, so every later exit (the fast path or a hand-over
 *             to the kernel) carries the inside address
 *   npt6_out  the exit of the IPv6 path, after the filter: a packet leaving
 *             through the outside interface (redirected by XDP, or handed to
 *             the kernel to forward there) with a source in the inside prefix
 *             gets it mapped to the outside prefix (and the quoted
 *             destination of an ICMPv6 error)
 *
 * The filter therefore sees inside addresses both ways, as an nft forward
 * chain behind a prefix translator on the outside would, and its flow
 * states are keyed by them.  A mapping changes only the prefix and one
 * 16-bit word (xdpr_npt_rule.word) so that the one's complement sum of the
 * address stays the same: no L4 checksum changes, and an ICMPv6 error stays
 * valid when both its addresses and the quoted ones are mapped.
 */
#ifndef XDPR_NPT6_H
#define XDPR_NPT6_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ipv6.h>
#include <linux/icmpv6.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "step.h"

#ifndef AF_INET6
#define AF_INET6 10
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct xdpr_npt_tab);
} xdpr_npt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_NPT_MAX);
	__type(key, __u32);
	__type(value, struct xdpr_npt_ctr);
} xdpr_npt_stats SEC(".maps");

/* Is NPTv6 on?  One bit of the configuration the IPv6 path has at hand. */
static __always_inline int npt6_on(const struct xdpr_cfg *cfg)
{
	return cfg && (cfg->flags & XDPR_CFG_NPT);
}

static __always_inline struct xdpr_npt_tab *npt6_tab(void)
{
	__u32 zero = 0, slot;
	struct xdpr_cfg *cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);

	if (!npt6_on(cfg))
		return NULL;
	slot = cfg->flags & XDPR_CFG_NPT_SLOT ? 1 : 0;
	return bpf_map_lookup_elem(&xdpr_npt, &slot);
}

/* Do the first 64 bits of a (in the packet) fall in prefix p (mask m)? */
static __always_inline int npt6_match(const __be32 *a, const __be32 *p, const __be32 *m)
{
	return (((a[0] ^ p[0]) & m[0]) | ((a[1] ^ p[1]) & m[1])) == 0;
}

/*
 * Map address a (16 bytes in the packet) to prefix to: the prefix bits
 * replaced, then adj added (one's complement) to the word RFC 6296 names.
 * 0, or -1 when the address has no mapping (that word is 0xffff; longer
 * prefixes: every word of the interface identifier is): nothing changed.
 */
static __always_inline int npt6_map(__be32 *a, const struct xdpr_npt_rule *r, const __be32 *to, __u16 adj)
{
	__u16 *w = (__u16 *)a;
	__u32 idx = 3, v;

	if (r->word == 3) {
		if (w[3] == 0xffff)
			return -1;
	} else if (w[4] != 0xffff) {
		idx = 4;
	} else if (w[5] != 0xffff) {
		idx = 5;
	} else if (w[6] != 0xffff) {
		idx = 6;
	} else if (w[7] != 0xffff) {
		idx = 7;
	} else {
		return -1;
	}
	a[0] = (a[0] & ~r->mask[0]) | to[0];
	a[1] = (a[1] & ~r->mask[1]) | to[1];
	v = (__u32)bpf_ntohs(w[idx]) + adj;
	v = (v & 0xffff) + (v >> 16);
	if (v == 0xffff) /* the one's complement zero written as 0x0000 (RFC 6296 3.2) */
		v = 0;
	w[idx & 7] = bpf_htons((__u16)v);
	return 0;
}

/* An ICMPv6 error right after the IPv6 header: the packet it quotes, whole header in the frame. */
static __always_inline struct ipv6hdr *npt6_quoted(struct ipv6hdr *ip6h, void *end)
{
	struct icmp6hdr *ic = (void *)(ip6h + 1);
	struct ipv6hdr *q = (void *)(ic + 1);

	if (ip6h->nexthdr != IPPROTO_ICMPV6 || (void *)(q + 1) > end || ic->icmp6_type >= 128)
		return NULL;
	return q;
}

/*
 * The rule for this packet: ifindex (ingress) non-zero, the rule of that
 * interface whose outside prefix holds the destination; 0, the rule whose
 * inside prefix holds the source.  Its index, or XDPR_NPT_MAX.  A function
 * of its own: what its callers do with the index is verified once, not
 * once per index.  Unused entries are zero (ifindex 0) and never match.
 */
__noinline __u32 npt6_find(struct xdp_md *ctx, __u32 ifindex)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6h = data + sizeof(struct ethhdr);
	struct xdpr_npt_tab *t = npt6_tab();
	__u32 a0, a1, i;

	if (!ctx || !t || (void *)(ip6h + 1) > end)
		return XDPR_NPT_MAX;
	a0 = ifindex ? ip6h->daddr.in6_u.u6_addr32[0] : ip6h->saddr.in6_u.u6_addr32[0];
	a1 = ifindex ? ip6h->daddr.in6_u.u6_addr32[1] : ip6h->saddr.in6_u.u6_addr32[1];
	for (i = 0; i < XDPR_NPT_MAX; i++) {
		const struct xdpr_npt_rule *r = &t->r[i];
		const __be32 *p = ifindex ? r->outside : r->inside;
		__u32 miss = ((a0 ^ p[0]) & r->mask[0]) | ((a1 ^ p[1]) & r->mask[1]) |
			     (ifindex ? r->ifindex ^ ifindex : !r->ifindex);

		if (!miss)
			return i;
	}
	return XDPR_NPT_MAX;
}

/*
 * Arrived for the outside prefix of rule hit (npt6_find with the ingress
 * interface; XDPR_NPT_MAX: none): mapped to the inside one.  STEP_NEXT
 * (translated, or not ours), or XDPR_DROP_NAT_UNTRANSLATABLE.  Called with
 * the index, not finding it itself: one frame less on the stack chain.
 */
__noinline int npt6_in(struct xdp_md *ctx, __u32 hit)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6h = data + sizeof(struct ethhdr), *q;
	struct xdpr_npt_tab *t = npt6_tab();
	const struct xdpr_npt_rule *r;
	struct xdpr_npt_ctr *ctr;

	if (!ctx || !t || (void *)(ip6h + 1) > end)
		return STEP_NEXT;
	if (hit >= XDPR_NPT_MAX)
		return STEP_NEXT;
	/*
	 * Expiring here: left as it came, the kernel's time exceeded quotes
	 * what the sender sent.  Translated, it would quote the inside address
	 * to the outside (the reply leaves through the kernel, past npt6_out).
	 */
	if (ip6h->hop_limit <= 1)
		return STEP_NEXT;
	r = &t->r[hit];
	ctr = bpf_map_lookup_elem(&xdpr_npt_stats, &hit);
	q = npt6_quoted(ip6h, end);
	/* an error quotes what left translated: its source back to the inside, or nothing changes */
	if (q && npt6_match(q->saddr.in6_u.u6_addr32, r->outside, r->mask)) {
		if (npt6_map(q->saddr.in6_u.u6_addr32, r, r->inside, r->adj_in))
			goto unmappable;
		if (ctr)
			ctr->icmp++;
	}
	if (npt6_map(ip6h->daddr.in6_u.u6_addr32, r, r->inside, r->adj_in))
		goto unmappable;
	if (ctr)
		ctr->in++;
	return STEP_NEXT;
unmappable:
	if (ctr)
		ctr->drop++;
	return XDPR_DROP_NAT_UNTRANSLATABLE;
}

/* Exits with which the kernel forwards the packet (the kernel answers the others itself). */
static __always_inline int npt6_kernel_forwards(int r)
{
	return r == XDPR_PASS_ROUTE || r == XDPR_PASS_ROUTE_GW || r == XDPR_PASS_FIB_NO_NEIGH ||
	       r == XDPR_PASS_EGRESS_NOT_XDPR || r == XDPR_PASS_EGRESS_NO_XMIT || r == XDPR_PASS_IP6_EXTHDR ||
	       r == XDPR_PASS_NFT_POLICY;
}

/*
 * The IPv6 path's exit r: a packet leaving through a rule's outside
 * interface with a source in its inside prefix is mapped.  Redirected
 * (XDPR_FWD): the egress is the FIB's answer in xdpr_fib_scr.  Handed to
 * the kernel to forward: the kernel's FIB says where it goes.  Returns r,
 * or XDPR_DROP_NAT_UNTRANSLATABLE: never out untranslated.
 */
__noinline int npt6_out(struct xdp_md *ctx, int r)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6h = data + sizeof(struct ethhdr), *q;
	const struct xdpr_npt_rule *rule;
	struct xdpr_npt_ctr *ctr;
	struct xdpr_npt_tab *t;
	__u32 hit, egress = 0, zero = 0;

	if (!ctx || (r != XDPR_FWD && !npt6_kernel_forwards(r)))
		return r;
	t = npt6_tab();
	if (!t || (void *)(ip6h + 1) > end || ((struct ethhdr *)data)->h_proto != bpf_htons(ETH_P_IPV6))
		return r;
	/* inside prefixes never overlap: one rule at most */
	hit = npt6_find(ctx, 0);
	if (hit >= XDPR_NPT_MAX)
		return r;
	rule = &t->r[hit];
	if (r == XDPR_FWD) {
		struct bpf_fib_lookup *fib = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);

		egress = fib ? fib->ifindex : 0;
	} else {
		struct bpf_fib_lookup fib = {};
		int rc;

		fib.family = AF_INET6;
		fib.l4_protocol = ip6h->nexthdr;
		fib.tot_len = sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len);
		__builtin_memcpy(fib.ipv6_src, &ip6h->saddr, sizeof(fib.ipv6_src));
		__builtin_memcpy(fib.ipv6_dst, &ip6h->daddr, sizeof(fib.ipv6_dst));
		fib.ifindex = in_ifindex(ctx);
		rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
		if (rc == BPF_FIB_LKUP_RET_SUCCESS || rc == BPF_FIB_LKUP_RET_NO_NEIGH ||
		    rc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
			egress = fib.ifindex;
	}
	if (egress != rule->ifindex)
		return r;
	/* a detached outside interface: nothing would map the replies back in */
	if (r != XDPR_FWD && !bpf_map_lookup_elem(&xdpr_ifaces, &egress))
		return r;
	ctr = bpf_map_lookup_elem(&xdpr_npt_stats, &hit);
	q = npt6_quoted(ip6h, end);
	/* an error about a packet that came in translated: its destination out again */
	if (q && npt6_match(q->daddr.in6_u.u6_addr32, rule->inside, rule->mask)) {
		if (npt6_map(q->daddr.in6_u.u6_addr32, rule, rule->outside, rule->adj_out))
			goto unmappable;
		if (ctr)
			ctr->icmp++;
	}
	if (npt6_map(ip6h->saddr.in6_u.u6_addr32, rule, rule->outside, rule->adj_out))
		goto unmappable;
	if (ctr) {
		ctr->out++;
		if (r != XDPR_FWD)
			ctr->pass++;
	}
	return r;
unmappable:
	if (ctr)
		ctr->drop++;
	return XDPR_DROP_NAT_UNTRANSLATABLE;
}

#endif /* XDPR_NPT6_H */
