/* SPDX-License-Identifier: GPL-2.0 */
/*
 * flow.h - the flow meter (xdpr_shared.h, "flow meter"): per-CPU counters
 * of forwarded flows for IPFIX / NetFlow export.
 *
 * Two global functions, each verified once: flow_in, at the start of the
 * IPv4 and IPv6 paths when XDPR_CFG_FLOWS is set, keeps the tuple as the
 * packet arrived in this CPU's xdpr_flow_pcpu and arms the meter
 * (xdpr_l2.meter); flow_out, from xdpr_main once the path returned
 * XDPR_FWD, reads the tuple as the packet leaves and adds it to its flow.
 * With the flag off the packet path pays the test of the flag at entry and
 * of the armed byte at the exit.  No shared writes: the table's values
 * and the "table full" counter are per CPU, incremented without atomics.
 */
#ifndef XDPR_FLOW_H
#define XDPR_FLOW_H

#include <linux/bpf.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "parse.h"
#include "fib.h"
#include "stats.h"

/*
 * Preallocated (the loader sizes it, meter_size): allocated as flows came,
 * the scattered per-CPU values cost 4x more a packet at 65,536 flows
 * (bench/README.md, "Flow meter").
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, XDPR_METER_MAX);
	__type(key, struct xdpr_meter_key);
	__type(value, struct xdpr_meter_val);
} xdpr_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpr_meter_pcpu);
} xdpr_flow_pcpu SEC(".maps");

/*
 * The tuple of the Ethernet frame at data (an 802.1Q tag skipped) into addresses, ports (network order), protocol and
 * family; L3 length and TCP flags when asked.  0, or -1 when it is not an
 * IPv4 packet of 20 header bytes, not a fragment, or IPv6 without
 * extension headers: the fast path forwards no other.
 */
static __always_inline int flow_tuple(struct xdp_md *ctx, __u8 *src, __u8 *dst, __be16 *sport,
				      __be16 *dport, __u8 *proto, __u8 *family, __u32 *l3len,
				      __u8 *tcp_flags)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *l3 = eth + 1, *l4;
	__be16 h_proto;

	if ((void *)(eth + 1) > end)
		return -1;
	h_proto = eth->h_proto;
	if (h_proto == bpf_htons(ETH_P_8021Q)) { /* flow_out: the egress VLAN's tag is on */
		struct vlan_tag *t = l3;

		if ((void *)(t + 1) > end)
			return -1;
		h_proto = t->proto;
		l3 = t + 1;
	}
	if (h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = l3;

		if ((void *)(iph + 1) > end || iph->ihl != 5 ||
		    (iph->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
			return -1;
		__builtin_memcpy(src, &iph->saddr, 4);
		__builtin_memcpy(dst, &iph->daddr, 4);
		*proto = iph->protocol;
		*family = AF_INET;
		*l3len = bpf_ntohs(iph->tot_len);
		l4 = iph + 1;
	} else if (h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = l3;

		if ((void *)(ip6h + 1) > end)
			return -1;
		__builtin_memcpy(src, &ip6h->saddr, 16);
		__builtin_memcpy(dst, &ip6h->daddr, 16);
		*proto = ip6h->nexthdr;
		*family = AF_INET6;
		*l3len = sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len);
		l4 = ip6h + 1;
	} else {
		return -1;
	}
	*sport = 0;
	*dport = 0;
	*tcp_flags = 0;
	if (*proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > end)
			return -1;
		*sport = th->source;
		*dport = th->dest;
		*tcp_flags = ((__u8 *)th)[13];
	} else if (*proto == IPPROTO_UDP) {
		__be16 *p = l4;

		if ((void *)(p + 2) > end)
			return -1;
		*sport = p[0];
		*dport = p[1];
	} else if (*proto == IPPROTO_ICMP || *proto == IPPROTO_ICMPV6) {
		__u8 *t = l4;

		if ((void *)(t + 2) > end)
			return -1;
		*dport = bpf_htons((__u16)t[0] << 8 | t[1]); /* icmpTypeCode */
	}
	return 0;
}

/*
 * The packet as it arrived, when this CPU meters it (1 in flow_sample):
 * its tuple into the per-CPU state, the meter armed.  Returns 1 armed, 0
 * not (the caller ignores it: a global function's result that clang could
 * prove constant would be folded into the caller).
 */
__noinline int flow_in(struct xdp_md *ctx)
{
	struct xdpr_meter_pcpu *m;
	struct xdpr_l2 *l2;
	struct xdpr_cfg *cfg;
	__u32 zero = 0, l3len;
	__u8 fl;

	m = bpf_map_lookup_elem(&xdpr_flow_pcpu, &zero);
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	l2 = l2_scratch();
	if (!ctx || !m || !cfg || !l2)
		return 0;
	if (cfg->flow_sample > 1 && !sample_take(&m->tick, cfg->flow_sample))
		return 0;
	__builtin_memset(&m->key, 0, sizeof(m->key));
	if (flow_tuple(ctx, m->key.src, m->key.dst, &m->key.sport, &m->key.dport, &m->key.proto,
		       &m->key.family, &l3len, &fl))
		return 0;
	m->key.in_if = l2->in_if;
	l2->meter = 1;
	return 1;
}

/* This CPU's share of the flow of the packet flow_in took, as it leaves. */
static __always_inline void flow_count(struct xdp_md *ctx)
{
	struct xdpr_meter_pcpu *m;
	struct xdpr_meter_val *v;
	struct bpf_fib_lookup *fib;
	__u32 zero = 0, l3len = 0;
	__u8 xsrc[16] = {}, xdst[16] = {}, proto, family, fl = 0;
	__be16 xsport, xdport;
	__u64 now;
	long err;

	m = bpf_map_lookup_elem(&xdpr_flow_pcpu, &zero);
	fib = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);
	if (!m || !fib || flow_tuple(ctx, xsrc, xdst, &xsport, &xdport, &proto, &family, &l3len, &fl))
		return;
	now = bpf_ktime_get_coarse_ns();
	v = bpf_map_lookup_elem(&xdpr_flows, &m->key);
	if (!v) {
		v = &m->val;
		__builtin_memset(v, 0, sizeof(*v));
	}
	if (!v->packets)
		v->first_ns = now;
	v->packets++;
	v->bytes += l3len;
	v->last_ns = now;
	v->tcp_flags |= fl;
	__builtin_memcpy(v->xsrc, xsrc, sizeof(xsrc));
	__builtin_memcpy(v->xdst, xdst, sizeof(xdst));
	v->xsport = xsport;
	v->xdport = xdport;
	v->out_if = fib->ifindex;
	if (v != &m->val)
		return;
	err = bpf_map_update_elem(&xdpr_flows, &m->key, v, BPF_NOEXIST);
	if (err == -17 /* EEXIST: another CPU made it meanwhile, this CPU's share is zero */) {
		v = bpf_map_lookup_elem(&xdpr_flows, &m->key);
		if (v) {
			*v = m->val;
			return;
		}
	}
	if (err)
		m->unmetered++;
}

/*
 * The exit of a packet redirected (XDPR_FWD) after flow_in armed the
 * meter, counted (count_exit, slot and bytes as xdpr_main's): first its
 * flow, from the frame as it leaves (its VLAN tag on, if any) and the
 * egress, the FIB's answer in xdpr_fib_scr (claim_egress redirected to
 * it).  A new flow that finds the table full is counted as unmetered.
 * xdpr_main leaves through here so that nothing of its own stays live
 * across the call (its frame is on the deepest call chain).
 */
__noinline int flow_out(struct xdp_md *ctx, __u32 slot, __u64 bytes)
{
	if (ctx)
		flow_count(ctx);
	return count_exit(slot, XDPR_FWD, bytes);
}

#endif /* XDPR_FLOW_H */
