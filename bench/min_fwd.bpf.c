// SPDX-License-Identifier: GPL-2.0
/*
 * min_fwd.bpf.c - BENCH BASELINE ONLY, not part of xdpr: the least an XDP
 * forwarder does (as xdp-tools' xdp_fwd): parse Ethernet + IPv4/IPv6,
 * bpf_fib_lookup, decrement TTL / hop limit, rewrite MACs, redirect through
 * a DEVMAP_HASH.  No martian, checksum, option, fragment or VLAN checks and
 * no counters: it shows what the kernel's helpers cost on their own, the
 * floor xdpr's extra work is measured against.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define AF_INET  2
#define AF_INET6 10

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xb_min_tx SEC(".maps");

/* Rewrite MACs and redirect; the L3 change is done by the caller. */
static __always_inline int finish(struct ethhdr *eth, struct bpf_fib_lookup *fib)
{
	__builtin_memcpy(eth->h_dest, fib->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib->smac, ETH_ALEN);
	return bpf_redirect_map(&xb_min_tx, fib->ifindex, 0);
}

static __always_inline int fwd4(struct xdp_md *ctx, struct ethhdr *eth, void *end)
{
	struct iphdr *ip = (void *)(eth + 1);
	struct bpf_fib_lookup fib = {};
	__u32 check;

	if ((void *)(ip + 1) > end)
		return XDP_DROP;
	if (ip->ttl <= 1)
		return XDP_PASS;
	fib.family = AF_INET;
	fib.tos = ip->tos;
	fib.l4_protocol = ip->protocol;
	fib.tot_len = bpf_ntohs(ip->tot_len);
	fib.ipv4_src = ip->saddr;
	fib.ipv4_dst = ip->daddr;
	fib.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS ||
	    !bpf_map_lookup_elem(&xb_min_tx, &fib.ifindex))
		return XDP_PASS;
	/* TTL is the high byte of its checksum word: add 0x0100 back (RFC 1624). */
	check = ip->check + bpf_htons(0x0100);
	ip->check = check + (check >= 0xffff);
	ip->ttl--;
	return finish(eth, &fib);
}

static __always_inline int fwd6(struct xdp_md *ctx, struct ethhdr *eth, void *end)
{
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	struct bpf_fib_lookup fib = {};

	if ((void *)(ip6 + 1) > end)
		return XDP_DROP;
	if (ip6->hop_limit <= 1)
		return XDP_PASS;
	fib.family = AF_INET6;
	fib.l4_protocol = ip6->nexthdr;
	fib.tot_len = sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
	__builtin_memcpy(fib.ipv6_src, &ip6->saddr, 16);
	__builtin_memcpy(fib.ipv6_dst, &ip6->daddr, 16);
	fib.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS ||
	    !bpf_map_lookup_elem(&xb_min_tx, &fib.ifindex))
		return XDP_PASS;
	ip6->hop_limit--;
	return finish(eth, &fib);
}

SEC("xdp")
int xb_min_fwd(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETH_P_IP))
		return fwd4(ctx, eth, end);
	if (eth->h_proto == bpf_htons(ETH_P_IPV6))
		return fwd6(ctx, eth, end);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
