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

/* FIB parameters live off the 512-byte stack, which the NAT calls need. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpf_fib_lookup);
} xdpr_fib_scr SEC(".maps");

static __always_inline int xdpr_forward(struct xdp_md *ctx, struct cursor c,
					const struct xdpr_iface *in)
{
	struct bpf_fib_lookup *fib;
	struct ethhdr *eth;
	__u32 zero = 0;

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
	fib = bpf_map_lookup_elem(&xdpr_fib_scr, &zero);
	if (!fib)
		return XDPR_PASS_FIB_OTHER;
	if (eth->h_proto == bpf_htons(ETH_P_IP))
		return fwd_ip4(ctx, &c, eth, in, fib);
	return fwd_ip6(ctx, &c, eth, in, fib);
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

struct bpf_map;

/* ---- programs the CLI runs with BPF_PROG_TEST_RUN, never attached ---- */

static long gc_ct_cb(struct bpf_map *map, struct xdpr_ct_key *k, struct xdpr_ct_val *v,
		     struct sweep_ctx *s)
{
	if (k->dir != XDPR_CT_OUT)
		return 0;
	s->seen++;
	if (s->op == XDPR_GC_ALL || (s->op == XDPR_GC_RULE && v->rule == s->rule)) {
		if (nat_sess_delete(k, v, s->now))
			s->deleted++;
	} else if (nat_sweep_key(k, v, s->now, s->cfg, 0)) {
		s->deleted++;
	}
	return 0;
}

static long gc_bind_cb(struct bpf_map *map, struct xdpr_bind_key *k, struct xdpr_bind *b,
		       struct sweep_ctx *s)
{
	struct xdpr_eim_key ek = {};
	struct xdpr_eim_val *e;
	__u64 idle = s->now > b->last_active ? s->now - b->last_active : 0;

	if (b->nsess != 0 || idle <= (__u64)s->cfg->holddown * NSEC)
		return 0;
	/* no one can take a reference once DYING is set */
	if (__sync_val_compare_and_swap(&b->nsess, 0, BIND_DYING) != 0)
		return 0;
	ek.in_addr = b->in_addr;
	ek.in_port = b->in_port;
	ek.proto = k->proto;
	ek.rule = b->rule;
	e = bpf_map_lookup_elem(&xdpr_nat_eim, &ek);
	if (e && e->gen == b->gen)
		bpf_map_delete_elem(&xdpr_nat_eim, &ek);
	bpf_map_delete_elem(&xdpr_nat_bind, k);
	s->binds_freed++;
	return 0;
}

/* Sweep the session table: expired sessions (or all, or one rule's), idle bindings. */
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
	bpf_for_each_map_elem(&xdpr_nat_ct, gc_ct_cb, &s, 0);
	bpf_for_each_map_elem(&xdpr_nat_bind, gc_bind_cb, &s, 0);
	cmd->deleted = s.deleted;
	cmd->seen = s.seen;
	cmd->binds_freed = s.binds_freed;
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

char _license[] SEC("license") = "GPL";
