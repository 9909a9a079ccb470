// SPDX-License-Identifier: GPL-2.0
/*
 * gen.bpf.c - the bench's traffic generator (bench only, not part of xdpr).
 *
 * xbench runs it with BPF_PROG_TEST_RUN and BPF_F_TEST_XDP_LIVE_FRAMES on
 * g0: every XDP_TX leaves g0 for the router's r0.  Pages are recycled
 * without being rewritten, and the router rewrites what it forwards, so
 * each run rebuilds the whole header from the templates in cfg: Ethernet,
 * IP, L4, then the flow's source port and address, lengths and checksums.
 * The payload is never written and stays zero (the template page).
 *
 * Where the kernel refuses live frames (EPERM: seen on a Firecracker guest
 * kernel), xbench runs the loop instead: a veth pair A-B beside g0, a few
 * seed frames sent into it, and xb_loop on both ends: it builds the next
 * frame's header in each frame that comes round, as xb_gen does, then
 * sends it two ways at once (a devmap broadcast): on round the loop, and a
 * copy out of g0.  Frames reach r0 as XDP frames from g0, as they do from
 * live frames; the loop runs in the NAPI of A and B, on the CPU that sent
 * the seeds.
 */
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "bench.h"

/* Writable global (not const volatile: see NOTES), set through the skeleton before load. */
struct gen_cfg cfg;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_ctr);
} gen_ctr SEC(".maps");

/* One's complement sum of a constant number of 16-bit words (network order in, network order out). */
#define SUM16(p, words) ({                                  \
	const __u16 *__w = (const void *)(p);               \
	__u32 __s = 0;                                      \
	_Pragma("unroll")                                   \
	for (int __i = 0; __i < (words); __i++)             \
		__s += __w[__i];                            \
	__s; })

/* bpf_loop's callback: 1 (stop) once the clock reaches *due. */
static long wait_cb(__u64 i, void *due)
{
	(void)i;
	return bpf_ktime_get_ns() >= *(__u64 *)due;
}

/*
 * The schedule pace() and xb_loop share: 1 when a frame at now is early
 * (its time c->due not come; nothing moves), else 0 and the next frame's
 * time set a gap on (from now when the schedule restarts).
 */
static __always_inline int pace_early(struct gen_ctr *c, __u64 now)
{
	if (!c->due || now > c->due + 64 * cfg.gap_ns)
		c->due = now;
	else if (now < c->due)
		return 1;
	c->due += cfg.gap_ns;
	return 0;
}

/*
 * A capped rate: each frame waits for its time, gap_ns after the one
 * before.  xbench paces by system calls too, but a live-frames call costs
 * ~25 ms of set-up on this kernel (its page pool), so small calls cannot
 * carry a rate: 50 frames a call gave 2,600 frames/s for 50,000 asked.
 * Calls are now long and the program spaces the frames.  A frame more
 * than a batch late (the gap between two calls) goes at once and the
 * schedule restarts from it: no burst to catch up, which a veth ring of
 * 256 frames would drop.
 */
static __always_inline void pace(struct gen_ctr *c)
{
	if (pace_early(c, bpf_ktime_get_ns())) {
		__u64 due = c->due; /* bpf_loop's context lives on the stack */

		bpf_loop(1 << 23, wait_cb, &due, 0);
		c->due += cfg.gap_ns;
	}
}

/*
 * Frame seq's headers, written whole into the frame at ctx (resized to its
 * size): 0, or -1 when it cannot be (counted as aborted).
 */
static __always_inline int gen_frame(struct xdp_md *ctx, struct gen_ctr *c, __u64 seq)
{
	__u32 size, l4len, step, pseudo;
	void *data, *end, *l4;
	__u64 idx;
	__be16 sport, dport;
	int delta;

	size = cfg.sizes[0];
	if (cfg.nsizes > 1)
		size = cfg.sizes[(seq % cfg.nsizes) & 15];
	delta = (int)size - (int)(ctx->data_end - ctx->data);
	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return -1;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;

	/*
	 * Source port first, then the destination port (4096 of them), then
	 * the source address.  With one source address even 65536 flows fit a
	 * NAT with one outside address; new flows (flows = 0) make every frame
	 * a new 5-tuple, the first 50000 also a new inside endpoint.
	 * GEN_F_ONE_DPORT: the source address steps right after the source
	 * port (50000 x 2^16 tuples to one destination port).  GEN_F_REVERSE:
	 * the same flows seen from the other end (ports and address step on the
	 * destination side), for the replies that make a flow established.
	 */
	idx = cfg.flows ? seq % cfg.flows : seq;
	sport = bpf_htons(GEN_PORT_BASE + idx % GEN_PORT_SPAN);
	idx /= GEN_PORT_SPAN;
	if (cfg.flags & GEN_F_ONE_DPORT) {
		dport = cfg.dport;
		step = idx & cfg.addr_mask;
	} else {
		dport = bpf_htons(bpf_ntohs(cfg.dport) + (idx & 0xfff));
		step = (idx >> 12) & cfg.addr_mask;
	}
	if (cfg.flags & GEN_F_REVERSE) {
		__be16 t = sport;

		sport = dport;
		dport = t;
	}

	if (data + 14 > end)
		return -1;
	__builtin_memcpy(data, cfg.eth, 14);

	if (!cfg.ipv6) {
		struct iphdr *ip = data + 14;

		if ((void *)(ip + 1) > end)
			return -1;
		__builtin_memcpy(ip, cfg.ip, sizeof(*ip));
		ip->tot_len = bpf_htons(size - 14);
		if (cfg.flags & GEN_F_REVERSE)
			ip->daddr = bpf_htonl(bpf_ntohl(ip->daddr) + step);
		else
			ip->saddr = bpf_htonl(bpf_ntohl(ip->saddr) + step);
		if (cfg.dsts) /* a destination sweep: the next /24 every frame */
			ip->daddr = bpf_htonl(bpf_ntohl(ip->daddr) + ((__u32)(seq % cfg.dsts) << 8));
		ip->check = 0;
		ip->check = ~xb_fold(SUM16(ip, 10));
		l4 = ip + 1;
		l4len = size - 14 - sizeof(*ip);
		pseudo = SUM16(&ip->saddr, 4);
	} else {
		struct ipv6hdr *ip6 = data + 14;

		if ((void *)(ip6 + 1) > end)
			return -1;
		__builtin_memcpy(ip6, cfg.ip, sizeof(*ip6));
		l4len = size - 14 - sizeof(*ip6);
		ip6->payload_len = bpf_htons(l4len);
		if (cfg.flags & GEN_F_REVERSE)
			ip6->daddr.in6_u.u6_addr32[3] =
				bpf_htonl(bpf_ntohl(ip6->daddr.in6_u.u6_addr32[3]) + step);
		else
			ip6->saddr.in6_u.u6_addr32[3] =
				bpf_htonl(bpf_ntohl(ip6->saddr.in6_u.u6_addr32[3]) + step);
		l4 = ip6 + 1;
		pseudo = SUM16(&ip6->saddr, 16);
	}
	pseudo += bpf_htons(cfg.proto) + bpf_htons(l4len);

	if (cfg.proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;
		__u16 csum;

		if ((void *)(udp + 1) > end)
			return -1;
		__builtin_memcpy(udp, cfg.l4, sizeof(*udp));
		udp->source = sport;
		udp->dest = dport;
		udp->len = bpf_htons(l4len);
		udp->check = 0;
		csum = ~xb_fold(pseudo + SUM16(udp, 4));
		udp->check = csum ?: 0xffff; /* 0 means "no checksum" (RFC 768) */
	} else {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > end)
			return -1;
		__builtin_memcpy(tcp, cfg.l4, sizeof(*tcp));
		tcp->source = sport;
		tcp->dest = dport;
		tcp->check = 0;
		tcp->check = ~xb_fold(pseudo + SUM16(tcp, 10));
	}
	c->packets++;
	c->bytes += size;
	return 0;
}

SEC("xdp")
int xb_gen(struct xdp_md *ctx)
{
	struct gen_ctr *c;
	__u32 key = 0;
	__u64 seq;

	c = bpf_map_lookup_elem(&gen_ctr, &key);
	if (!c)
		return XDP_ABORTED;
	seq = c->seq++;
	if (cfg.gap_ns)
		pace(c);
	return gen_frame(ctx, c, seq) ? XDP_ABORTED : XDP_TX;
}

/* ---- the loop (no live frames) ---- */

/*
 * Where a frame goes from A (gen_out_a: A itself, so to B, and g0) and from
 * B (gen_out_b: B, so to A, and g0): both ends of the loop send a frame out
 * of g0 and one on round the loop.
 */
struct gen_out {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
};
struct gen_out gen_out_a SEC(".maps"), gen_out_b SEC(".maps");

/* Set by xbench (the skeleton's mapped .bss): the loop ends at end_ns, after count frames (0: none), or at stop. */
__u64 loop_end_ns;
__u64 loop_count;
__u64 loop_rounds; /* frames through xb_loop: xbench seeds again when it stops moving */
__u32 loop_stop;
__u32 loop_a; /* A's ifindex */

/* For the probe: live frames allowed? (a run of it sends nothing) */
SEC("xdp")
int xb_drop(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_DROP;
}

/*
 * A frame came round: its time not come yet (the rate), once more round
 * the loop; else the next frame's headers written into it and it goes out
 * of g0, a copy back into the loop.  The schedule is pace()'s
 * (pace_early), without the wait: going round is the wait.
 */
SEC("xdp")
int xb_loop(struct xdp_md *ctx)
{
	struct gen_ctr *c;
	__u32 key = 0;
	__u64 now;

	c = bpf_map_lookup_elem(&gen_ctr, &key);
	if (!c || loop_stop)
		return XDP_DROP;
	loop_rounds++; /* one CPU: the NAPIs of A and B */
	now = bpf_ktime_get_ns();
	if (now >= loop_end_ns || (loop_count && c->packets >= loop_count)) {
		loop_stop = 1;
		return XDP_DROP;
	}
	if (cfg.gap_ns && pace_early(c, now))
		return XDP_TX;
	if (gen_frame(ctx, c, c->seq++))
		return XDP_TX; /* counted as aborted; the frame stays in the loop */
	if (ctx->ingress_ifindex == loop_a)
		return bpf_redirect_map(&gen_out_a, 0, BPF_F_BROADCAST);
	return bpf_redirect_map(&gen_out_b, 0, BPF_F_BROADCAST);
}

char _license[] SEC("license") = "GPL";
