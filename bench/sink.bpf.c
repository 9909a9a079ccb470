// SPDX-License-Identifier: GPL-2.0
/*
 * sink.bpf.c - the bench's receiver on s0 (bench only): count per CPU, drop.
 *
 * Frames of the bench (configured protocol and destination) are counted;
 * one in sample_mask+1 is checked in full: MACs, TTL / hop limit decremented
 * by exactly one, IPv4 header checksum, L4 checksum over the whole segment,
 * source address within the expected prefix (the generator's for plain
 * forwarding, the router's outside address behind masquerade).  Anything
 * else (neighbour discovery, MLD, ...) is counted as other.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "bench.h"

#define SINK_MAX_L4 1600 /* bytes of L4 segment the checksum loop covers */

struct sink_cfg cfg;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sink_ctr);
} sink_ctr SEC(".maps");

static __always_inline int mac_eq(const __u8 *a, const __u8 *b)
{
	const __u16 *x = (const void *)a, *y = (const void *)b;

	return !((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]));
}

/* Sum of the len bytes at p (odd tail padded with zero) into *s; -1 if the frame is shorter. */
static __always_inline int sum_bytes(void *p, void *end, __u32 len, __u32 *s)
{
	__u32 i;

	if (len > SINK_MAX_L4 || p + len > end)
		return -1;
	for (i = 0; i < SINK_MAX_L4 / 2; i++) {
		__u16 *w = p + 2 * i;

		if (2 * i + 2 > len || (void *)(w + 1) > end)
			break;
		*s += *w;
	}
	if (len & 1) {
		__u8 *b = p + (len & 2047) - 1;

		if ((void *)(b + 1) > end)
			return -1;
		*s += *b;
	}
	return 0;
}

/* Prefix match of n bytes of address a against cfg.src / cfg.src_plen. */
static __always_inline int src_ok(const __u8 *a, int n)
{
	int bits = cfg.src_plen;

#pragma unroll
	for (int i = 0; i < 16; i++) {
		__u8 mask;

		if (i >= n || bits <= 0)
			break;
		mask = bits >= 8 ? 0xff : (__u8)(0xff << (8 - bits));
		if ((a[i] ^ cfg.src[i]) & mask)
			return 0;
		bits -= 8;
	}
	return 1;
}

/* Check a sampled frame; returns a mask of enum sink_bad. */
static __always_inline __u32 check(struct ethhdr *eth, void *end)
{
	__u32 bad = 0, l4len, sum;
	void *l4;

	if (!mac_eq(eth->h_dest, cfg.dmac) || !mac_eq(eth->h_source, cfg.smac))
		bad |= 1 << SINK_BAD_MAC;
	if (!cfg.ipv6) {
		struct iphdr *ip = (void *)(eth + 1);
		const __u16 *w = (const void *)ip;
		__u32 s = 0;

		if ((void *)(ip + 1) > end || ip->ihl != 5 ||
		    (void *)ip + bpf_ntohs(ip->tot_len) != end)
			return bad | 1 << SINK_BAD_LEN;
		if (ip->ttl != cfg.ttl)
			bad |= 1 << SINK_BAD_TTL;
#pragma unroll
		for (int i = 0; i < 10; i++)
			s += w[i];
		if (xb_fold(s) != 0xffff)
			bad |= 1 << SINK_BAD_IP_CSUM;
		if (!src_ok((const __u8 *)&ip->saddr, 4))
			bad |= 1 << SINK_BAD_SRC;
		l4 = ip + 1;
		l4len = bpf_ntohs(ip->tot_len) - sizeof(*ip);
		sum = (ip->saddr >> 16) + (ip->saddr & 0xffff) +
		      (ip->daddr >> 16) + (ip->daddr & 0xffff);
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		const __u16 *a;

		if ((void *)(ip6 + 1) > end ||
		    (void *)(ip6 + 1) + bpf_ntohs(ip6->payload_len) != end)
			return bad | 1 << SINK_BAD_LEN;
		if (ip6->hop_limit != cfg.ttl)
			bad |= 1 << SINK_BAD_TTL;
		if (!src_ok(ip6->saddr.in6_u.u6_addr8, 16))
			bad |= 1 << SINK_BAD_SRC;
		l4 = ip6 + 1;
		l4len = bpf_ntohs(ip6->payload_len);
		a = (const void *)&ip6->saddr;
		sum = 0;
#pragma unroll
		for (int i = 0; i < 16; i++)
			sum += a[i];
	}
	sum += bpf_htons(cfg.proto) + bpf_htons(l4len);
	if (sum_bytes(l4, end, l4len, &sum))
		return bad | 1 << SINK_BAD_LEN;
	if (xb_fold(sum) != 0xffff)
		bad |= 1 << SINK_BAD_L4_CSUM;
	return bad;
}

/* The first bytes of the last wrong frame, for a human to look at. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sink_frame);
} sink_bad_frame SEC(".maps");

static __always_inline void keep_frame(struct xdp_md *ctx, __u32 len, __u32 bad)
{
	__u32 key = 0;
	struct sink_frame *f = bpf_map_lookup_elem(&sink_bad_frame, &key);

	if (!f)
		return;
	if (len > sizeof(f->data))
		len = sizeof(f->data);
	if (len > 0 && !bpf_xdp_load_bytes(ctx, 0, f->data, len)) {
		f->len = len;
		f->bad = bad;
	}
}

SEC("xdp")
int xb_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct sink_ctr *c;
	__u32 key = 0, bad;

	c = bpf_map_lookup_elem(&sink_ctr, &key);
	if (!c)
		return XDP_DROP;
	if ((void *)(eth + 1) > end)
		goto other;
	if (!cfg.ipv6) {
		struct iphdr *ip = (void *)(eth + 1);

		if (eth->h_proto != bpf_htons(ETH_P_IP) || (void *)(ip + 1) > end ||
		    ip->protocol != cfg.proto || (ip->daddr & cfg.dst_mask) != *(__u32 *)cfg.dst)
			goto other;
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		const __u32 *dst = (const void *)cfg.dst;

		if (eth->h_proto != bpf_htons(ETH_P_IPV6) || (void *)(ip6 + 1) > end ||
		    ip6->nexthdr != cfg.proto ||
		    ((ip6->daddr.in6_u.u6_addr32[0] ^ dst[0]) | (ip6->daddr.in6_u.u6_addr32[1] ^ dst[1]) |
		     (ip6->daddr.in6_u.u6_addr32[2] ^ dst[2]) | (ip6->daddr.in6_u.u6_addr32[3] ^ dst[3])))
			goto other;
	}
	c->packets++;
	c->bytes += end - data;
	if (c->packets & cfg.sample_mask)
		return XDP_DROP;
	c->checked++;
	bad = check(eth, end);
	if (bad) {
		keep_frame(ctx, end - data, bad);
		c->wrong++;
#pragma unroll
		for (int i = 0; i < SINK_BAD_MAX; i++)
			if (bad & (1 << i))
				c->bad[i]++;
	}
	return XDP_DROP;
other:
	c->other++;
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
