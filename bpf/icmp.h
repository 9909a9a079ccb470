/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icmp.h - ICMP errors answered from XDP (XDP_TX), for packets to a NAT
 * binding that the kernel must not answer: its error would quote the packet
 * after translation, with the inside address.  The error quotes the packet
 * as it arrived (IP header + 8 bytes, RFC 792), comes from the address the
 * packet was sent to, and goes back out of the interface it came in on.
 * Rate-limited per CPU like the kernel's icmp_msgs_per_sec.
 */
#ifndef XDPR_ICMP_H
#define XDPR_ICMP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "parse.h"
#include "csum.h"

#define ICMP_FRAG_NEEDED   4  /* code of ICMP_DEST_UNREACH */
#define ICMP_EXC_TTL       0  /* code of ICMP_TIME_EXCEEDED */
#define ICMP_PER_SEC       1000
#define ICMP_HDRS          (sizeof(struct iphdr) + sizeof(struct icmp4hdr))
#define ICMP_QUOTE_MAX     (60 + 8)

static __always_inline int icmp_budget_take(void)
{
	__u32 zero = 0;
	struct cpu_scr *s = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);
	__u64 now = bpf_ktime_get_coarse_ns();
	struct icmp_budget *b;

	if (!s)
		return 0;
	b = &s->icmp;
	if (now - b->window > 1000000000ULL) {
		b->window = now;
		b->sent = 0;
	}
	if (b->sent >= ICMP_PER_SEC)
		return 0;
	b->sent++;
	return 1;
}

/*
 * Turn the frame (an IPv4 packet right after the Ethernet header) into the
 * ICMP error tc (type << 8 | code) about it, with next-hop MTU mtu for
 * "fragmentation needed", from address src (0: the packet's destination).
 * Returns the reason to exit with (tx_reason when sent).  After this call
 * the frame is no longer the packet it was.
 */
__noinline int icmp4_err(struct xdp_md *ctx, __u32 tc, __u32 mtu, __be32 src, __u32 tx_reason)
{
	__u32 type = tc >> 8, code = tc & 0xff;
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *oip = data + sizeof(*eth), *ip;
	struct icmp4hdr *ic;
	__u8 smac[ETH_ALEN], dmac[ETH_ALEN];
	__u32 quote, len, sum = 0;
	long have;
	__be32 dst;
	__u16 *w;

	if (!ctx || (void *)(oip + 1) > end)
		return XDPR_DROP_SHORT;
	quote = oip->ihl * 4 + 8;
	if (quote > ICMP_QUOTE_MAX || (void *)oip + quote > end)
		return XDPR_DROP_SHORT;
	if (!icmp_budget_take())
		return XDPR_DROP_NAT_ICMP_LIMIT;
	__builtin_memcpy(smac, eth->h_dest, ETH_ALEN);  /* ours */
	__builtin_memcpy(dmac, eth->h_source, ETH_ALEN);
	if (!src)
		src = oip->daddr;
	dst = oip->saddr;

	/* room in front for the new IP and ICMP headers; the old packet becomes the quote */
	if (bpf_xdp_adjust_head(ctx, -(int)ICMP_HDRS))
		return XDPR_DROP_NAT_ICMP_LIMIT;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	len = sizeof(*eth) + ICMP_HDRS + quote;
	have = (long)end - (long)data;
	asm volatile("" : "+r"(have)); /* a scalar from here: no 32-bit pointer arithmetic */
	if (bpf_xdp_adjust_tail(ctx, (int)len - (int)have))
		return XDPR_DROP_NAT_ICMP_LIMIT;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	ip = data + sizeof(*eth);
	ic = (void *)(ip + 1);
	if ((void *)(ic + 1) > end)
		return XDPR_DROP_SHORT;

	__builtin_memcpy(eth->h_dest, dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 0xc0;  /* internetwork control, as the kernel's ICMP */
	ip->tot_len = bpf_htons(ICMP_HDRS + quote);
	ip->id = 0;
	ip->frag_off = 0;
	ip->ttl = 64;
	ip->protocol = IPPROTO_ICMP;
	ip->check = 0;
	ip->saddr = src;
	ip->daddr = dst;
	ip->check = ip4_hdr_csum20(ip);

	ic->type = type;
	ic->code = code;
	ic->check = 0;
	ic->id = 0;                       /* unused */
	ic->seq = bpf_htons(type == ICMP_DEST_UNREACH ? mtu : 0); /* next-hop MTU (RFC 1191) */
	w = (__u16 *)ic;
	for (__u32 i = 0; i < (sizeof(*ic) + ICMP_QUOTE_MAX) / 2; i++) {
		if (i * 2 >= sizeof(*ic) + quote || (void *)(w + i + 1) > end)
			break;
		sum += w[i];
	}
	ic->check = ~csum_fold32(sum);
	return tx_reason;
}

/* The error from the address the packet was sent to. */
static __always_inline int icmp4_send(struct xdp_md *ctx, __u32 type, __u32 code, __u32 mtu, __u32 tx_reason)
{
	return icmp4_err(ctx, type << 8 | code, mtu, 0, tx_reason);
}

/* The error from address src (the router's own, toward the packet's source). */
static __always_inline int icmp4_send_from(struct xdp_md *ctx, __u32 type, __u32 code, __be32 src,
					   __u32 tx_reason)
{
	return icmp4_err(ctx, type << 8 | code, 0, src, tx_reason);
}

#endif /* XDPR_ICMP_H */
