/* SPDX-License-Identifier: GPL-2.0 */
/*
 * reject.h - answers to packets a "reject" rule matched, sent back out of
 * the interface the packet came in on (XDP_TX): a TCP RST for TCP (RFC 9293
 * 3.10.7.1: seq from the segment's ACK, or ACK of everything it carried),
 * ICMP destination unreachable "administratively prohibited" (code 13,
 * RFC 1812 5.2.7.1) or ICMPv6 code 1 (RFC 4443 3.1) for the rest.  Never
 * an answer to an RST or to an ICMP error.  The answer comes from the
 * packet's destination address.  It shares the per-CPU rate of icmp.h.
 */
#ifndef XDPR_REJECT_H
#define XDPR_REJECT_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "parse.h"
#include "csum.h"
#include "icmp.h"
#include "filter.h"

#define ICMP_PKT_FILTERED   13 /* code of ICMP_DEST_UNREACH */
#define ICMP6_ADM_PROHIBITED 1 /* code of ICMPv6 destination unreachable */
#define ICMP6_QUOTE_MAX     184 /* bytes of the packet quoted (IPv6 header first) */

struct rst_in {
	__u8 smac[ETH_ALEN], dmac[ETH_ALEN];
	__be16 sport, dport;  /* of the answer */
	__be32 seq, ack;
	__u8 flags;
};

/* The answer's TCP header after the IP header at th, checksum seeded with the pseudo header sum. */
static __always_inline void rst_fill(struct tcphdr *th, const struct rst_in *in, __u32 paylen, __u32 psum)
{
	__u16 *w = (__u16 *)th;
	__u32 sum = psum;

	__builtin_memset(th, 0, sizeof(*th));
	th->source = in->sport;
	th->dest = in->dport;
	th->doff = 5;
	th->rst = 1;
	if (in->flags & TCPF_ACK) {
		th->seq = in->ack;
	} else {
		th->ack = 1;
		th->ack_seq = bpf_htonl(bpf_ntohl(in->seq) + paylen + !!(in->flags & TCPF_SYN) +
					!!(in->flags & TCPF_FIN));
	}
#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	th->check = ~csum_fold32(sum);
}

static __always_inline int rst_take(struct rst_in *in, struct ethhdr *eth, struct tcphdr *th)
{
	__u8 *b = (__u8 *)th;

	in->flags = b[13];
	if (in->flags & TCPF_RST)
		return XDPR_DROP_FILTER;
	if (!icmp_budget_take())
		return XDPR_DROP_FILTER_REJECT_LIMIT;
	__builtin_memcpy(in->smac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(in->dmac, eth->h_source, ETH_ALEN);
	in->sport = th->dest;
	in->dport = th->source;
	in->seq = th->seq;
	in->ack = th->ack_seq;
	return STEP_NEXT;
}

/* Cut the frame to len bytes (it is at least that long). */
static __always_inline int frame_cut(struct xdp_md *ctx, __u32 len)
{
	long have = (long)ctx->data_end - (long)ctx->data;

	asm volatile("" : "+r"(have)); /* a scalar from here: no 32-bit pointer arithmetic */
	return bpf_xdp_adjust_tail(ctx, (int)len - (int)have);
}

static __always_inline int tcp4_rst(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct tcphdr *th;
	struct rst_in in;
	__be32 saddr, daddr;
	__u32 paylen, psum;
	int step;

	if ((void *)(ip + 1) > end)
		return XDPR_DROP_FILTER;
	th = (void *)ip + (ip->ihl & 0xf) * 4;
	if ((void *)(th + 1) > end)
		return XDPR_DROP_FILTER;
	step = rst_take(&in, eth, th);
	if (step >= 0)
		return step;
	paylen = bpf_ntohs(ip->tot_len) - (ip->ihl & 0xf) * 4 - th->doff * 4;
	saddr = ip->daddr;
	daddr = ip->saddr;
	if (frame_cut(ctx, sizeof(*eth) + sizeof(*ip) + sizeof(*th)))
		return XDPR_DROP_FILTER_REJECT_LIMIT;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	ip = data + sizeof(*eth);
	th = (void *)(ip + 1);
	if ((void *)(th + 1) > end)
		return XDPR_DROP_SHORT;
	__builtin_memcpy(eth->h_dest, in.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, in.smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 0;
	ip->tot_len = bpf_htons(sizeof(*ip) + sizeof(*th));
	ip->id = 0;
	ip->frag_off = bpf_htons(IP_DF);
	ip->ttl = 64;
	ip->protocol = IPPROTO_TCP;
	ip->check = 0;
	ip->saddr = saddr;
	ip->daddr = daddr;
	ip->check = ip4_hdr_csum20(ip);
	psum = (saddr >> 16) + (saddr & 0xffff) + (daddr >> 16) + (daddr & 0xffff) +
	       bpf_htons(IPPROTO_TCP) + bpf_htons(sizeof(*th));
	rst_fill(th, &in, paylen, psum);
	return XDPR_TX_FILTER_REJECT;
}

/* Sum of an IPv6 pseudo header's addresses (RFC 8200 8.1). */
static __always_inline __u32 ip6_addr_sum(const struct in6_addr *a, const struct in6_addr *b)
{
	const __u16 *x = (const __u16 *)a, *y = (const __u16 *)b;
	__u32 sum = 0;

#pragma unroll
	for (int i = 0; i < 8; i++)
		sum += x[i] + y[i];
	return sum;
}

static __always_inline void ip6_hdr_fill(struct ipv6hdr *ip6, const struct in6_addr *src,
					 const struct in6_addr *dst, __u16 plen, __u8 nexthdr)
{
	__builtin_memset(ip6, 0, 8);
	ip6->version = 6;
	ip6->payload_len = bpf_htons(plen);
	ip6->nexthdr = nexthdr;
	ip6->hop_limit = 64;
	__builtin_memcpy(&ip6->saddr, src, 16);
	__builtin_memcpy(&ip6->daddr, dst, 16);
}

static __always_inline int tcp6_rst(struct xdp_md *ctx, __u32 l4off)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = data + sizeof(*eth);
	struct in6_addr src, dst;
	struct tcphdr *th;
	struct rst_in in;
	__u32 paylen, psum;
	int step;

	th = data + (l4off & 0x3ff);
	if ((void *)(ip6 + 1) > end || (void *)(th + 1) > end)
		return XDPR_DROP_FILTER;
	step = rst_take(&in, eth, th);
	if (step >= 0)
		return step;
	paylen = sizeof(*ip6) + bpf_ntohs(ip6->payload_len) - (l4off - sizeof(*eth)) - th->doff * 4;
	__builtin_memcpy(&src, &ip6->daddr, 16);
	__builtin_memcpy(&dst, &ip6->saddr, 16);
	if (frame_cut(ctx, sizeof(*eth) + sizeof(*ip6) + sizeof(*th)))
		return XDPR_DROP_FILTER_REJECT_LIMIT;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	ip6 = data + sizeof(*eth);
	th = (void *)(ip6 + 1);
	if ((void *)(th + 1) > end)
		return XDPR_DROP_SHORT;
	__builtin_memcpy(eth->h_dest, in.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, in.smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IPV6);
	ip6_hdr_fill(ip6, &src, &dst, sizeof(*th), IPPROTO_TCP);
	psum = ip6_addr_sum(&src, &dst) + bpf_htons(sizeof(*th)) + bpf_htons(IPPROTO_TCP);
	rst_fill(th, &in, paylen, psum);
	return XDPR_TX_FILTER_REJECT;
}

/* ICMPv6 destination unreachable, administratively prohibited, quoting the packet. */
static __always_inline int icmp6_prohibited(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	const __u32 hdrs = sizeof(struct ipv6hdr) + 8;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = data + sizeof(*eth);
	__u8 smac[ETH_ALEN], dmac[ETH_ALEN];
	struct in6_addr src, dst;
	__u32 quote, sum;
	__u8 *ic;
	__u16 *w;

	if ((void *)(ip6 + 1) > end)
		return XDPR_DROP_FILTER;
	quote = (long)end - (long)ip6;
	if (quote > ICMP6_QUOTE_MAX)
		quote = ICMP6_QUOTE_MAX;
	quote &= ~1u; /* whole 16-bit words: the checksum loop sums no half word */
	if (!icmp_budget_take())
		return XDPR_DROP_FILTER_REJECT_LIMIT;
	__builtin_memcpy(smac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(dmac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(&src, &ip6->daddr, 16);
	__builtin_memcpy(&dst, &ip6->saddr, 16);
	if (bpf_xdp_adjust_head(ctx, -(int)hdrs))
		return XDPR_DROP_FILTER_REJECT_LIMIT;
	if (frame_cut(ctx, sizeof(*eth) + hdrs + quote))
		return XDPR_DROP_FILTER_REJECT_LIMIT;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	ip6 = data + sizeof(*eth);
	ic = (void *)(ip6 + 1);
	if ((void *)(ic + 8) > end)
		return XDPR_DROP_SHORT;
	__builtin_memcpy(eth->h_dest, dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IPV6);
	ip6_hdr_fill(ip6, &src, &dst, 8 + quote, IPPROTO_ICMPV6);
	__builtin_memset(ic, 0, 8);
	ic[0] = ICMP6_DST_UNREACH;
	ic[1] = ICMP6_ADM_PROHIBITED;
	sum = ip6_addr_sum(&src, &dst) + bpf_htons(8 + quote) + bpf_htons(IPPROTO_ICMPV6);
	w = (__u16 *)ic;
	for (__u32 i = 0; i < (8 + ICMP6_QUOTE_MAX) / 2; i++) {
		if (i * 2 >= 8 + quote || (void *)(w + i + 1) > end)
			break;
		sum += w[i];
	}
	((__u16 *)ic)[1] = ~csum_fold32(csum_fold32(sum));
	return XDPR_TX_FILTER_REJECT;
}

/*
 * The answer moved the packet: nothing may read it after.  Says so to the
 * verifier: the exit is a reason, never a step.
 */
static __always_inline int reject_exit(int r)
{
	return r < 0 ? XDPR_DROP_FILTER : r;
}

/* A reject rule's answer to the IPv4 packet after the Ethernet header. */
__noinline int reject4(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);
	int r;

	if (!ctx || (void *)(ip + 1) > end)
		return XDPR_DROP_FILTER;
	if (ip->frag_off & bpf_htons(IP_OFFSET))
		return XDPR_DROP_FILTER; /* only the first fragment is answered */
	if (ip->protocol == IPPROTO_TCP)
		return tcp4_rst(ctx);
	if (ip->protocol == IPPROTO_ICMP) {
		__u8 *ic = (void *)ip + (ip->ihl & 0xf) * 4;

		if ((void *)(ic + 1) > end || (ic[0] != ICMP_ECHO && ic[0] != 13 && ic[0] != 15 && ic[0] != 17))
			return XDPR_DROP_FILTER; /* no error about an error, nor a reply */
	}
	r = icmp4_send(ctx, ICMP_DEST_UNREACH, ICMP_PKT_FILTERED, 0, XDPR_TX_FILTER_REJECT);
	return r == XDPR_DROP_NAT_ICMP_LIMIT ? XDPR_DROP_FILTER_REJECT_LIMIT : r;
}

/* The same for IPv6; l4off and proto as filter6 had them. */
__noinline int reject6(struct xdp_md *ctx, __u32 l4off, __u32 proto)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;

	if (!ctx || !l4off)
		return XDPR_DROP_FILTER;
	if (proto == IPPROTO_TCP)
		return tcp6_rst(ctx, l4off);
	if (proto == IPPROTO_ICMPV6) {
		__u8 *ic = data + (l4off & 0x3ff);

		if ((void *)(ic + 1) > end || ic[0] < ICMP6_ECHO_REQUEST)
			return XDPR_DROP_FILTER; /* no error about an error */
	}
	return icmp6_prohibited(ctx);
}

#endif /* XDPR_REJECT_H */
