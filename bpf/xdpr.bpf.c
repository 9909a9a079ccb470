// SPDX-License-Identifier: GPL-2.0
/*
 * xdpr.bpf.c - the xdpr fast path: one program on every router interface.
 *
 *   parse L2, VLAN tag off (vlan.h) -> DDoS bans, meters (ddos.h) -> IPv4 (fwd4.h) or IPv6 (fwd6.h):
 *   checks -> reverse NAT -> route map / FIB -> filter -> source NAT -> TTL,
 *   egress claim -> rewrite -> tag on (vlan.h) -> flow meter (flow.h) -> redirect
 *
 * Every exit is one enum xdpr_reason, counted per CPU per ingress interface
 * in one place (count_exit); the verdict follows from the reason.
 *
 * Where things are: maps.h (every map but the route map's), parse.h (frame
 * cursor, packet views), fib.h (FIB results, egress), route.h (route map),
 * nat.h (the NAT steps), nat_sess.h (sessions), nat_bind.h (ports and
 * mappings), nat_xlate.h (rewriting), icmp.h (errors sent from XDP),
 * hairpin.h, filter.h (the filter step, before any hand-over of a forwarded
 * packet), filter_maps.h, reject.h (its answers), stats.h, csum.h,
 * flow.h (the flow meter: forwarded packets counted per flow for export),
 * ddos.h (per-host meters of protected prefixes, bans dropped first).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "parse.h"
#include "stats.h"
#include "fwd4.h"
#include "fwd6.h"
#include "filter.h"
#include "vlan.h"
#include "flow.h"
#include "ddos.h"

static __always_inline int l2_for_us(const struct ethhdr *eth, const struct xdpr_iface *in)
{
	const __u16 *a = (const __u16 *)eth->h_dest, *b = (const __u16 *)in->mac;

	return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2])) == 0;
}

/* The IPv6 path; the filter runs from this frame when it hands the packet over. */
static __always_inline int fwd6_filtered(struct xdp_md *ctx, __u32 in_flags)
{
	int r = fwd_ip6(ctx, in_flags);
	struct flt_pkt *fp;

	if (r != STEP_FILTER)
		return fwd6_exit(ctx, r); /* NPTv6 outbound, after the filter */
	r = filter_run(ctx);
	if (r == STEP_FLT_REJECT) {
		fp = flt_scratch();
		return fp ? reject_exit(reject6(ctx, fp->l4off, fp->proto)) : XDPR_DROP_FILTER;
	}
	if (r >= 0)
		return r;
	flt6_hot_fill(ctx); /* accepted: this CPU's copy of its state, if the flow table found one */
	return fwd6_exit(ctx, fwd6_finish(ctx, in_flags));
}

static __always_inline int xdpr_forward(struct xdp_md *ctx, struct cursor c,
					const struct xdpr_iface *in)
{
	struct bpf_fib_lookup *fib;
	struct xdpr_cfg *cfg;
	struct ethhdr *eth;
	__u32 zero = 0;

	eth = cursor_take(&c, sizeof(*eth));
	if (!eth)
		return XDPR_DROP_SHORT;
	if (eth->h_proto != bpf_htons(ETH_P_IP) && eth->h_proto != bpf_htons(ETH_P_IPV6))
		return XDPR_PASS_NOT_IP;
	if (!in)
		return XDPR_PASS_NO_IFACE;
	if (!l2_for_us(eth, in))
		return XDPR_PASS_L2_OTHER;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (cfg && (cfg->flags & (XDPR_CFG_DDOS | XDPR_CFG_BANS))) {
		__u32 w = ddos_weight(cfg);

		if ((w || (cfg->flags & XDPR_CFG_BANS)) && ddos_step(ctx, cfg->flags, w))
			return XDPR_DROP_DDOS_BAN;
	}
	fib = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);
	if (!fib)
		return XDPR_PASS_FIB_OTHER;
	if (eth->h_proto == bpf_htons(ETH_P_IP))
		return fwd_ip4(ctx, &c, eth, in, fib);
	return fwd6_filtered(ctx, in->flags);
}

SEC("xdp")
int xdpr_main(struct xdp_md *ctx)
{
	__u64 bytes = ctx->data_end - ctx->data;
	__u32 ifindex = ctx->ingress_ifindex;
	struct xdpr_l2 *l2 = l2_scratch();
	struct xdpr_iface *in;
	int r;

	in = iface_get(ifindex, XDPR_IFC_IN);
	if (!l2)
		return count_exit(in ? in->slot : 0, XDPR_PASS_FIB_OTHER, bytes);
	l2->in_if = ifindex;
	l2->out_vlan = 0;
	l2->popped = 0;
	l2->in_prio = 0;
	r = vlan_in(ctx, ifindex, l2, &in); /* a tagged frame of a VLAN: in is the VLAN's from here */
	if (r == STEP_NEXT) {
		struct cursor c = {
			.pos = (void *)(long)ctx->data,
			.end = (void *)(long)ctx->data_end,
		};

		r = xdpr_forward(ctx, c, in);
		if (l2->popped || l2->out_vlan)
			r = vlan_out(ctx, l2, r);
	}
	if (l2->meter) { /* the flow meter (flow.h) is on and took this packet's tuple */
		l2->meter = 0;
		if (r == XDPR_FWD)
			return flow_out(ctx, in ? in->slot : 0, bytes);
	}
	return count_exit(in ? in->slot : 0, r, bytes);
}

/* ---- programs the CLI runs with BPF_PROG_TEST_RUN, never attached ---- */

/* Sweep the session table: expired sessions (or all, or one rule's), idle bindings, empty hosts. */
SEC("xdp")
int xdpr_nat_gc(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct xdpr_gc_cmd *cmd = data;
	struct sweep_ctx s = {};
	__u32 zero = 0;

	if ((void *)(cmd + 1) > end)
		return XDP_ABORTED;
	s.cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!s.cfg)
		return XDP_ABORTED;
	s.now = bpf_ktime_get_coarse_ns();
	s.op = cmd->op;
	s.rule = cmd->rule;
	nat_gc_all(&s, 0xffffffff);
	cmd->deleted = s.deleted;
	cmd->seen = s.seen;
	cmd->binds_freed = s.binds_freed;
	return XDP_PASS;
}

struct flt_gc_ctx {
	struct xdpr_cfg *cfg;
	__u64 now;
	__u32 op;
	__u32 deleted;
	__u32 seen;
};

/*
 * k and f point into the element: another CPU may evict it and reuse it
 * for a new flow at any moment (an LRU table).  So the callback judges a
 * copy (key, state, key again: a key that changed means the element went
 * to another flow while being read, and the sweep leaves it) and deletes
 * by the copied key, as gc_ct_cb does for the NAT sessions.
 */
static long flt_gc_cb(void *map, struct xdpr_flow_key *k, struct xdpr_flt_flow *f, void *arg)
{
	struct flt_gc_ctx *g = arg;
	struct xdpr_flow_key key = *k;
	struct xdpr_flt_flow v;

	g->seen++;
	asm volatile("" ::: "memory");
	v = *f;
	asm volatile("" ::: "memory");
	if (!elem_key_kept(k, &key, sizeof(key) / 8))
		return 0;
	if (g->op == XDPR_GC_ALL || flow_expired(g->cfg, &v, key.proto, g->now)) {
		if (!bpf_map_delete_elem(map, &key))
			g->deleted++;
	}
	return 0;
}

/* Sweep the filter's flow states: expired ones, or all. */
SEC("xdp")
int xdpr_flt_gc(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct xdpr_flt_gc_cmd *cmd = data;
	struct flt_gc_ctx g = {};
	__u32 zero = 0;
	void *flows;

	if ((void *)(cmd + 1) > end)
		return XDP_ABORTED;
	g.cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!g.cfg)
		return XDP_ABORTED;
	g.now = bpf_ktime_get_coarse_ns();
	g.op = cmd->op;
	flows = nat_tab(&xdpr_flt_flows);
	if (flows)
		bpf_for_each_map_elem(flows, flt_gc_cb, &g, 0);
	cmd->deleted = g.deleted;
	cmd->seen = g.seen;
	return XDP_PASS;
}

/* Does this kernel take BPF_FIB_LOOKUP_SRC (6.7+)?  Writes the helper's return code. */
SEC("xdp")
int xdpr_probe(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct bpf_fib_lookup fib = {};
	__s32 *out = data;

	if ((void *)(out + 1) > end)
		return XDP_ABORTED;
	fib.family = AF_INET;
	fib.ipv4_dst = bpf_htonl(0x7f000001);
	fib.ifindex = ctx->ingress_ifindex;
	*out = bpf_fib_lookup(ctx, &fib, sizeof(fib), BPF_FIB_LOOKUP_SRC);
	return XDP_PASS;
}

/* The build of this program, written by its loader (loader/core.c: xdpr_skel_prepare; `link show`). */
const volatile char xdpr_build[24] = {};

char _license[] SEC("license") = "GPL";
