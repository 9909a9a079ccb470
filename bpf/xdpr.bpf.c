// SPDX-License-Identifier: GPL-2.0
/*
 * xdpr.bpf.c - the xdpr fast path: one program on every router interface.
 *
 *   parse L2 -> IPv4 / IPv6 checks -> bpf_fib_lookup -> TTL -> egress claim
 *   -> rewrite (TTL/hop limit, checksum, MACs) -> XDP_REDIRECT
 *
 * Every exit is one enum xdpr_reason, counted per CPU per ingress interface
 * in one place (count_exit); the verdict follows from the reason.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xdpr_shared.h"
#include "parse.h"
#include "stats.h"
#include "fib.h"

static __always_inline int l2_for_us(const struct ethhdr *eth, const struct xdpr_iface *in)
{
	const __u16 *a = (const __u16 *)eth->h_dest, *b = (const __u16 *)in->mac;

	return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2])) == 0;
}

static __always_inline int xdpr_forward(struct xdp_md *ctx, struct cursor c,
					const struct xdpr_iface *in)
{
	struct ethhdr *eth;

	eth = cursor_take(&c, sizeof(*eth));
	if (!eth)
		return XDPR_DROP_SHORT;
	if (eth_proto_is_vlan(eth->h_proto)) {
		/* One or two tags: make sure they are really there, then let the kernel have it. */
		struct vlan_tag *tag = cursor_take(&c, sizeof(*tag));

		if (!tag)
			return XDPR_DROP_SHORT;
		if (eth_proto_is_vlan(tag->proto) && !cursor_take(&c, sizeof(*tag)))
			return XDPR_DROP_SHORT;
		return XDPR_PASS_VLAN;
	}
	if (eth->h_proto != bpf_htons(ETH_P_IP) && eth->h_proto != bpf_htons(ETH_P_IPV6))
		return XDPR_PASS_NOT_IP;
	if (!in)
		return XDPR_PASS_NO_IFACE;
	if (!l2_for_us(eth, in))
		return XDPR_PASS_L2_OTHER;
	if (eth->h_proto == bpf_htons(ETH_P_IP))
		return fwd_ip4(ctx, &c, eth, in);
	return fwd_ip6(ctx, &c, eth, in);
}

SEC("xdp")
int xdpr_main(struct xdp_md *ctx)
{
	struct cursor c = {
		.pos = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	__u64 bytes = c.end - c.pos;
	__u32 ifindex = ctx->ingress_ifindex;
	struct xdpr_iface *in;

	in = bpf_map_lookup_elem(&xdpr_ifaces, &ifindex);
	return count_exit(in ? in->slot : 0, xdpr_forward(ctx, c, in), bytes);
}

char _license[] SEC("license") = "GPL";
