/* SPDX-License-Identifier: GPL-2.0 */
/*
 * filter.h - the filter step: forwarded packets only, after the route is
 * known and before anything hands the packet on (redirect, or XDP_PASS to
 * the kernel's forward path), so a packet the filter drops reaches neither.
 *
 *   state:     a flow state (xdpr_flt_flows, or the NAT session: the NAT
 *              step only asks when it is about to create one) makes the
 *              packet established, an ICMP error quoting one related; they
 *              pass without meeting the rules (unless a rule names those
 *              states: then everything is classified, as an nft chain is).
 *   classify:  the compiled rule list (xdpr_shared.h "filter"): one
 *              descriptor per field, AND of the rule bitmaps, the first
 *              match of each shape group, the lowest position.
 *              The cost grows with the candidate words, not the rule count.
 *   act:       accept (a new flow gets its state), drop, or reject.
 *
 * Global functions, verified once: the callers hand over offsets.
 */
#ifndef XDPR_FILTER_H
#define XDPR_FILTER_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "filter_maps.h"
#include "parse.h"
#include "nat_base.h"
#include "step.h"

#define TCPF_FIN 0x01
#define TCPF_SYN 0x02
#define TCPF_RST 0x04
#define TCPF_ACK 0x10

#define ICMP6_DST_UNREACH   1
#define ICMP6_PKT_TOOBIG    2
#define ICMP6_TIME_EXCEED   3
#define ICMP6_PARAMPROB     4
#define ICMP6_ECHO_REQUEST  128
#define ICMP6_ECHO_REPLY    129
#define ICMP6_NI_QUERY      139

/* The packet as the filter sees it (inside addresses), per CPU. */
struct flt_pkt {
	__u8 src[16];       /* IPv4: first 4 bytes, the rest zero */
	__u8 dst[16];
	__u8 isrc[16];      /* an ICMP error's quoted packet (iproto != 0) */
	__u8 idst[16];
	__u16 sport;        /* field values, host order: ports, or ICMP type / code */
	__u16 dport;
	__be16 ksport;      /* flow key ports: TCP/UDP ports, ICMP echo id on both */
	__be16 kdport;
	__be16 iksport;     /* the quoted packet's */
	__be16 ikdport;
	__u32 out_if;
	__u8 family;        /* 4 or 6 */
	__u8 proto;
	__u8 iproto;        /* quoted packet's protocol; 0: no usable quote */
	__u8 tcp_flags;
	__u8 nat;           /* 1: a NAT session is about to be this flow's state */
	__u8 nokey;         /* 1: no ports to key a flow by (a later fragment) */
	__u8 icmp_err;      /* an ICMP / ICMPv6 error */
	__u8 frag;          /* IPv4: a fragment; frag_key says which */
	__u8 fill6;         /* IPv6: the state flt_track found or made has seen this direction: copy it */
	__u8 fill6_bits;    /* that state's bits (its copy's life) */
	__u32 bytes;        /* frame length, for the rule counters */
	__u8 keyed;         /* flt_track: key holds this packet's flow (a new one gets state) */
	__u8 from_a;        /* flt_track: the packet comes from key's endpoint a */
	__u8 stale;         /* flt_track: key's entry exists, expired or closed (replaced, not added) */
	__u8 made;          /* filter_run: this packet's verdict kept key's state (flt_unkeep4) */
	__u64 stale_created; /* flt_track: that entry's creation time */
	struct xdpr_flow_key key;
	struct xdpr_flow_key ikey; /* flt_track: the quoted packet's flow */
	__u64 cand[XDPR_FLT_SUMM]; /* flt_classify: candidate words left */
	__u64 ssumm[XDPR_FF_MAX][XDPR_FLT_SUMM]; /* flt_classify: S_f's summaries */
	__u64 wsumm[XDPR_FF_MAX][XDPR_FLT_SUMM]; /* flt_classify: W_f's summaries */
	__u32 sbase[XDPR_FF_MAX];  /* flt_classify: S_f's first stored word */
	__u16 srank[XDPR_FF_MAX][XDPR_FLT_SUMM]; /* flt_classify: S_f's ranks */
	__u32 best;         /* flt_classify: position of the best match so far */
	__u16 skip;         /* flt_classify: words before this one are done */
	__u16 pad5;
	__s32 pos;          /* flt_classify: the deciding rule's bit, -1: none, -2: list incomplete */
	__s32 cont;         /* fwd_ip6 -> fwd6_finish: the exit once accepted, -1: the path's end */
	__u16 l4off;        /* IPv6: transport header offset (reject6) */
	__u8 exthdr;        /* IPv6: extension headers (the kernel forwards it) */
	__u8 pad3[5];
	/* keys and values built off the stack (the classifier's call chain needs it) */
	struct xdpr_flt_lpm4 k4;
	struct xdpr_flt_lpm6 k6;
	struct xdpr_flt_flow nv;
	struct xdpr_frag_key frag_key;
	__u32 hot_gen;      /* flt_track: xdpr_cfg.flt_gen before the flow table was read */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flt_pkt);
} xdpr_flt_scr SEC(".maps");

static __always_inline int flt_active(const struct xdpr_cfg *cfg)
{
	return cfg && (cfg->flags & XDPR_CFG_FILTER);
}

/* Does the FIB's answer send the packet on (in XDP or through the kernel)? */
static __always_inline int fib_forwards(int fibrc)
{
	return fibrc == BPF_FIB_LKUP_RET_SUCCESS || fibrc == BPF_FIB_LKUP_RET_NO_NEIGH ||
	       fibrc == BPF_FIB_LKUP_RET_FRAG_NEEDED;
}

/* Reasons with which the kernel forwards the packet it is handed. */
static __always_inline int reason_kernel_forwards(int r)
{
	return r == XDPR_PASS_ROUTE || r == XDPR_PASS_ROUTE_GW || r == XDPR_PASS_FIB_NO_NEIGH ||
	       r == XDPR_PASS_FIB_FRAG_NEEDED || r == XDPR_PASS_EGRESS_NOT_XDPR ||
	       r == XDPR_PASS_EGRESS_NO_XMIT || r == XDPR_PASS_IP4_OPTIONS || r == XDPR_PASS_IP4_FRAG ||
	       r == XDPR_PASS_IP6_EXTHDR || r == XDPR_PASS_NFT_POLICY;
}

static __always_inline struct flt_pkt *flt_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xdpr_flt_scr, &zero);
}

/* ---- flow states ---- */

/* Endpoints in canonical order; *from_a: the packet comes from endpoint a. */
static __always_inline void flow_key(struct xdpr_flow_key *k, const __u8 *s, const __u8 *d,
				     __be16 sp, __be16 dp, __u8 proto, __u8 family, int *from_a)
{
	const __u32 *s32 = (const __u32 *)s, *d32 = (const __u32 *)d;
	int c = 0, n = family == 6 ? 4 : 1;

#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u32 x = bpf_ntohl(s32[i]), y = bpf_ntohl(d32[i]);

		if (i < n && c == 0)
			c = x < y ? -1 : x > y ? 1 : 0;
	}
	if (c == 0)
		c = bpf_ntohs(sp) < bpf_ntohs(dp) ? -1 : bpf_ntohs(sp) > bpf_ntohs(dp) ? 1 : 0;
	*from_a = c <= 0;
	__builtin_memset(k, 0, sizeof(*k));
	if (*from_a) {
		__builtin_memcpy(k->a, s, 16);
		__builtin_memcpy(k->b, d, 16);
		k->pa = sp;
		k->pb = dp;
	} else {
		__builtin_memcpy(k->a, d, 16);
		__builtin_memcpy(k->b, s, 16);
		k->pa = dp;
		k->pb = sp;
	}
	k->proto = proto;
	k->family = family;
}

/*
 * A state unseen for longer than its timeout at now.  A last_seen later
 * than now (another CPU refreshed it after this packet, or a sweep, read
 * the clock) is live, as the NAT sweep takes it (nat_sess.h).
 */
static __always_inline int flow_expired(const struct xdpr_cfg *cfg, const struct xdpr_flt_flow *f, __u8 proto,
					__u64 now)
{
	__u64 seen = f->last_seen;

	return now > seen && now - seen > nat_timeout(cfg, proto, f->state);
}

/* TCP state bits a packet adds, from the originator (out) or the responder. */
static __always_inline __u8 flow_bits(__u8 proto, __u8 tcp_flags, int out)
{
	__u8 b = out ? XDPR_CT_SEEN_OUT : XDPR_CT_SEEN_IN;

	if (proto == IPPROTO_TCP) {
		if (tcp_flags & TCPF_RST)
			b |= XDPR_CT_RST;
		if (tcp_flags & TCPF_FIN)
			b |= out ? XDPR_CT_FIN_OUT : XDPR_CT_FIN_IN;
	}
	return b;
}

/* ---- per-CPU copies of established IPv4 flows (xdpr_shared.h, xdpr_flt_hot) ---- */

/* The kernel's tick rate, set by the loader before the program loads (xdpr_kernel_hz). */
const volatile __u32 xdpr_hz = XDPR_HZ_UNKNOWN;
/* States a CPU makes in a tenth of a second that start churn (xdpr_shared.h), set by the loader. */
const volatile __u32 xdpr_flt_churn_n = XDPR_FLT_CHURN_N(64);
/*
 * Churn, shared by the CPUs: xdpr_flt_epoch is added to xdpr_cfg.flt_gen in
 * a copy set's generation, and moves when churn starts (every copy
 * lapses); copies made before jiffies xdpr_flt_churn_until (64 bits: no
 * wrap) are short.  Written only by a CPU that crossed xdpr_flt_churn_n (at
 * most ten times a second each); the epoch is read by every packet a copy
 * passes.
 */
__u32 xdpr_flt_epoch;
__u64 xdpr_flt_churn_until;

/* This CPU's copy set k: NULL on a CPU beyond the map's regions (the flow table decides). */
static __always_inline struct xdpr_flt_hot_set *hot_set(__u32 k)
{
	__u32 i = bpf_get_smp_processor_id() << XDPR_FLT_HOT_BITS | k;

	return bpf_map_lookup_elem(&xdpr_flt_hot, &i);
}

/* The generation copies are made and read under: a flush, or churn starting, moves it. */
static __always_inline __u32 hot_gen_now(const struct xdpr_cfg *cfg)
{
	return cfg->flt_gen + xdpr_flt_epoch;
}

/*
 * A state was just made on this CPU: count it in the current tenth of a
 * second; the xdpr_flt_churn_n-th starts churn (or keeps it on for a
 * second more).  churn_until is written before the epoch moves, so that a
 * CPU which reads the new epoch before the table mostly makes short copies
 * after it (x86 keeps stores in order; elsewhere a copy or two may be long).
 */
static __always_inline void flt_churn_note(void)
{
	struct xdpr_flt_churn *c;
	__u64 now = bpf_jiffies64();
	__u32 zero = 0;
	int start;

	c = bpf_map_lookup_elem(&xdpr_flt_churn, &zero);
	if (!c)
		return;
	if ((now - c->win) * XDPR_FLT_HOT_HZ_DIV >= xdpr_hz) {
		c->win = now;
		c->n = 0;
	}
	if (++c->n != xdpr_flt_churn_n)
		return;
	start = now >= xdpr_flt_churn_until;
	xdpr_flt_churn_until = now + xdpr_hz;
	if (start)
		xdpr_flt_epoch++; /* every flow reads the table with its next packet */
}

/* A copy's life in jiffies from now: a second, or a tenth while the table churns or the timeout is short. */
static __always_inline __u32 hot_life(const struct xdpr_cfg *cfg, __u8 proto, __u8 bits, __u64 now)
{
	__u32 tenth = xdpr_hz / XDPR_FLT_HOT_HZ_DIV;

	if (now < xdpr_flt_churn_until || nat_timeout(cfg, proto, bits) < (__u64)XDPR_FLT_HOT_LONG_TIMEOUT * NSEC)
		return tenth ? tenth : 1;
	return xdpr_hz;
}

static __always_inline int hot_is(const struct xdpr_flt_hot *e, __be32 s, __be32 d, __u32 ports, __u8 proto)
{
	return e->s == s && e->d == d && e->ports == ports && e->proto == proto;
}

/* A copy still live at jiffies now? */
static __always_inline int hot_live(const struct xdpr_flt_hot *e, __u32 now)
{
	return xdpr_flt_hot_live(e->until, now, xdpr_hz);
}

/*
 * Copy a state this CPU found (or made) in the flow table, read under
 * generation gen (hot_gen_now), for the direction of the packet that read
 * it (from_a: from the canonical key's endpoint a), if the state has seen
 * that direction: into its own way, else a free or lapsed one (the other
 * lapsed ways freed); not when every way holds another live copy, nor
 * when the set already holds a later generation's copies.
 */
static __always_inline void flt4_hot_fill(const struct xdpr_cfg *cfg, const struct xdpr_flow_key *k, __u8 bits,
					  __u8 orig_b, int from_a, __u32 gen)
{
	__be32 a = *(const __be32 *)k->a, b = *(const __be32 *)k->b;
	__u64 now = bpf_jiffies64();
	__u32 t = now, i, ports;
	struct xdpr_flt_hot_set *set;
	struct xdpr_flt_hot *e;
	__be32 s, d;
	int use = -1;

	if (k->family != 4 || (k->proto != IPPROTO_TCP && k->proto != IPPROTO_UDP))
		return;
	if (!(bits & (from_a ^ orig_b ? XDPR_CT_SEEN_OUT : XDPR_CT_SEEN_IN)))
		return; /* not seen this way yet: its first packet marks it in the table */
	s = from_a ? a : b;
	d = from_a ? b : a;
	ports = from_a ? xdpr_flt_hot_ports(k->pa, k->pb) : xdpr_flt_hot_ports(k->pb, k->pa);
	i = xdpr_flt_hot_set_of(s, d, ports, k->proto);
	set = hot_set(i);
	if (!set)
		return;
	if (set->gen != gen) {
		if ((__s32)(gen - set->gen) < 0)
			return; /* a flush since this state was read: the copy would be void */
		set->gen = gen; /* the other ways are an earlier generation's: void */
#pragma unroll
		for (int w = 0; w < XDPR_FLT_HOT_WAYS; w++)
			set->e[w].proto = 0;
	}
#pragma unroll
	for (int w = 0; w < XDPR_FLT_HOT_WAYS; w++) {
		e = &set->e[w];
		if (hot_is(e, s, d, ports, k->proto)) {
			use = w;
		} else if (e->proto && !hot_live(e, t)) {
			e->proto = 0; /* lapsed: free, and never live again after its clock wraps */
		}
	}
	if (use < 0) {
#pragma unroll
		for (int w = XDPR_FLT_HOT_WAYS - 1; w >= 0; w--)
			if (!set->e[w].proto)
				use = w;
	}
	if (use < 0 || use >= XDPR_FLT_HOT_WAYS)
		return; /* three live copies of other flows: they stay */
	e = &set->e[use];
	e->s = s;
	e->d = d;
	e->ports = ports;
	e->until = t + hot_life(cfg, k->proto, bits, now);
	e->proto = k->proto;
	e->pad[0] = 0;
	e->pad[1] = 0;
	e->pad[2] = 0;
}

/*
 * The packet (saddr, daddr, the ports word as in the packet, proto) has a
 * copy on this CPU that lapsed, or none in a set full of other live
 * copies: the flow table decides as flt_track would for a packet that
 * changes nothing (flt4_hot's kind).  Its state still there, not expired,
 * this direction seen: the state's last_seen refreshed as flt_track does,
 * the copy made again, 1 (the packet passes); else 0 and the filter step
 * decides.  A global function: verified once, its key on a stack of its
 * own rather than in the forwarding path's frame.
 */
__noinline int flt4_renew(__u32 s, __u32 d, __u32 ports, __u32 proto)
{
	struct xdpr_flow_key key;
	struct xdpr_flt_flow *f;
	struct xdpr_flt_hot h = { .ports = ports };
	struct xdpr_cfg *cfg;
	__u64 now = bpf_ktime_get_coarse_ns();
	__u32 zero = 0, gen, sa[4] = { s }, da[4] = { d };
	int from_a;
	__u8 bit;

	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!cfg)
		return 0;
	gen = hot_gen_now(cfg); /* before the table, as flt_track reads it */
	flow_key(&key, (const __u8 *)sa, (const __u8 *)da, h.sp, h.dp, proto & 0xff, 4, &from_a);
	f = nat_lookup(&xdpr_flt_flows, &key);
	if (!f || flow_expired(cfg, f, key.proto, now))
		return 0;
	bit = from_a ^ f->orig_b ? XDPR_CT_SEEN_OUT : XDPR_CT_SEEN_IN;
	if (!(f->state & bit))
		return 0;
	if (now - f->last_seen > NSEC)
		f->last_seen = now; /* a shared line: at most once a second */
	flt4_hot_fill(cfg, &key, f->state, f->orig_b, from_a, gen);
	return 1;
}

/*
 * This CPU's copy of the packet's direction of its flow: 1 when the packet
 * passes on it (established, changes nothing), 0 when the flow table must
 * decide.
 */
static __always_inline int flt4_hot(const struct xdpr_cfg *cfg, const struct pkt4 *p)
{
	const struct xdpr_flt_hot_set *set;
	__u8 *l4 = p->l4;
	__u32 k, ports, now;
	__be32 s, d;
	int ask = 1; /* no copy and a full set, or a lapsed copy */

	if (p->frag || !l4)
		return 0;
	if (p->proto == IPPROTO_TCP) {
		if (!pkt4_has(p, l4, 20) || (l4[13] & (TCPF_SYN | TCPF_FIN | TCPF_RST)))
			return 0; /* may start, end or reopen a connection */
	} else if (p->proto != IPPROTO_UDP || !pkt4_has(p, l4, 8)) {
		return 0;
	}
	if (cfg->flt_slot & XDPR_FLT_SLOT_SEE_EST)
		return 0; /* rules see established packets: they are classified */
	s = p->iph->saddr;
	d = p->iph->daddr;
	ports = *(const __u32 *)l4;
	k = xdpr_flt_hot_set_of(s, d, ports, p->proto);
	set = hot_set(k);
	if (!set || set->gen != hot_gen_now(cfg))
		return 0;
	now = bpf_jiffies64();
#pragma unroll
	for (int w = 0; w < XDPR_FLT_HOT_WAYS; w++) {
		const struct xdpr_flt_hot *e = &set->e[w];

		if (hot_is(e, s, d, ports, p->proto)) {
			if (hot_live(e, now))
				return 1;
			ask = 1; /* lapsed: the table, without the filter step's view of the packet */
			break;
		}
		if (!e->proto || !hot_live(e, now))
			ask = 0;
	}
	/*
	 * No copy: with a free or lapsed way the direction would most likely
	 * have one if it were established here, so the filter step decides.
	 * With every way another live copy (more than ways in the set), it may
	 * well be: the table first, as for a lapsed copy.
	 */
	return ask ? flt4_renew(s, d, ports, p->proto) : 0;
}

/* ---- per-CPU copies of established IPv6 flows (xdpr_shared.h, xdpr_flt_hot6) ---- */

/* This CPU's way w of IPv6 copy set k: NULL on a CPU beyond the map's regions. */
static __always_inline struct xdpr_flt_hot6 *hot6_way(__u32 k, __u32 w)
{
	__u32 i = ((bpf_get_smp_processor_id() << XDPR_FLT_HOT6_BITS | k) << 1) | (w & 1);

	return bpf_map_lookup_elem(&xdpr_flt_hot6, &i);
}

/*
 * The packet's tuple for a copy: IPv6 whose transport header (TCP, or UDP)
 * follows the fixed header, and for a check (check) not a TCP segment with
 * SYN, FIN or RST; 0 when it is not one.
 */
static __always_inline int hot6_tuple(struct xdp_md *ctx, struct ipv6hdr **ip6, __u32 *ports, int check)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6h = data + sizeof(struct ethhdr);
	__u8 *l4 = (__u8 *)(ip6h + 1);
	__u32 plen;

	if ((void *)(ip6h + 1) > end)
		return 0;
	plen = bpf_ntohs(ip6h->payload_len); /* the caller checked it against the frame */
	if (ip6h->nexthdr == IPPROTO_TCP) {
		if (plen < 20 || (void *)(l4 + 20) > end || (check && (l4[13] & (TCPF_SYN | TCPF_FIN | TCPF_RST))))
			return 0; /* cut short, or may start, end or reopen a connection */
	} else if (ip6h->nexthdr != IPPROTO_UDP || plen < 8 || (void *)(l4 + 8) > end) {
		return 0;
	}
	*ip6 = ip6h;
	*ports = *(const __u32 *)l4;
	return 1;
}

static __always_inline int hot6_is(const struct xdpr_flt_hot6 *e, const struct ipv6hdr *ip6h, __u32 ports)
{
	const __be32 *s = ip6h->saddr.in6_u.u6_addr32, *d = ip6h->daddr.in6_u.u6_addr32;

	return e->proto == ip6h->nexthdr && e->ports == ports && e->s[0] == s[0] && e->s[1] == s[1] &&
	       e->s[2] == s[2] && e->s[3] == s[3] && e->d[0] == d[0] && e->d[1] == d[1] && e->d[2] == d[2] &&
	       e->d[3] == d[3];
}

/*
 * An IPv6 packet the filter would judge (its view not built yet): 1 when it
 * passes on this CPU's live copy of its direction's state (established,
 * changes nothing), 0 when the filter step decides.  Global: its own
 * stack, off the filter's call chain.
 */
__noinline int flt6_hot(struct xdp_md *ctx)
{
	struct ipv6hdr *ip6h = NULL;
	struct xdpr_cfg *cfg;
	__u32 zero = 0, ports = 0, k, gen, now;

	if (!ctx || !hot6_tuple(ctx, &ip6h, &ports, 1) || !ip6h)
		return 0;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!cfg || (cfg->flt_slot & XDPR_FLT_SLOT_SEE_EST))
		return 0; /* rules see established packets: they are classified */
	k = xdpr_flt_hot6_set_of(ip6h->saddr.in6_u.u6_addr32, ip6h->daddr.in6_u.u6_addr32, ports, ip6h->nexthdr);
	gen = hot_gen_now(cfg);
	now = bpf_jiffies64();
#pragma unroll
	for (int w = 0; w < XDPR_FLT_HOT6_WAYS; w++) {
		const struct xdpr_flt_hot6 *e = hot6_way(k, w);

		if (e && e->gen == gen && hot6_is(e, ip6h, ports))
			return xdpr_flt_hot_live(e->until, now, xdpr_hz);
	}
	return 0;
}

/* flt_track found or made an IPv6 state (bits, orig_b) for a packet from key's endpoint a or not: ask for its copy. */
static __always_inline void flt6_note(struct flt_pkt *fp, __u8 bits, __u8 orig_b, int from_a)
{
	if (fp->family == 6 && (bits & (from_a ^ orig_b ? XDPR_CT_SEEN_OUT : XDPR_CT_SEEN_IN))) {
		fp->fill6 = 1;
		fp->fill6_bits = bits;
	}
}

/*
 * After the filter step accepted an IPv6 packet: the copy flt_track asked
 * for (flt_pkt.fill6), into the packet's own way, else the first free one
 * (void, lapsed or never used: each such way is freed, so that a lapsed
 * copy never reads live again when its clock wraps); none when both hold
 * other live copies, or the generation moved since the table was read.
 */
__noinline int flt6_hot_fill(struct xdp_md *ctx)
{
	struct flt_pkt *fp = flt_scratch();
	struct xdpr_flt_hot6 *e, *use = NULL, *free = NULL;
	struct ipv6hdr *ip6h = NULL;
	struct xdpr_cfg *cfg;
	__u32 zero = 0, ports = 0, k, gen;
	__u64 now = bpf_jiffies64();
	__u32 t = now;

	if (!ctx || !fp || !fp->fill6)
		return 0;
	fp->fill6 = 0;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!cfg || !hot6_tuple(ctx, &ip6h, &ports, 0) || !ip6h || ip6h->nexthdr != fp->proto)
		return 0;
	gen = hot_gen_now(cfg);
	if (gen != fp->hot_gen)
		return 0; /* a flush since the state was read: the copy would be void */
	k = xdpr_flt_hot6_set_of(ip6h->saddr.in6_u.u6_addr32, ip6h->daddr.in6_u.u6_addr32, ports, ip6h->nexthdr);
#pragma unroll
	for (int w = 0; w < XDPR_FLT_HOT6_WAYS; w++) {
		e = hot6_way(k, w);
		if (!e)
			return 0;
		if (hot6_is(e, ip6h, ports)) {
			use = e;
			continue;
		}
		if (e->proto && e->gen == gen && xdpr_flt_hot_live(e->until, t, xdpr_hz))
			continue; /* another flow's live copy */
		e->proto = 0;
		if (!free)
			free = e;
	}
	if (!use)
		use = free;
	if (!use)
		return 0; /* two live copies of other flows: they stay */
	use->gen = gen;
	use->until = t + hot_life(cfg, ip6h->nexthdr, fp->fill6_bits, now);
	use->ports = ports;
	use->proto = ip6h->nexthdr;
	__builtin_memcpy(use->s, &ip6h->saddr, 16);
	__builtin_memcpy(use->d, &ip6h->daddr, 16);
	return 1;
}

/* ---- classification ---- */

struct flt_cls {
	struct flt_pkt *fp; /* cand[], the fields' summaries, pos */
	__u32 slot;
	__u32 pad;
};

static __always_inline __u64 flt_word(void *words, __u32 idx)
{
	__u64 *w = bpf_map_lookup_elem(words, &idx);

	return w ? *w : 0;
}

static __always_inline __u32 ctz64(__u64 x)
{
	return __builtin_popcountll((x & -x) - 1);
}


/*
 * Word w = 64*i+b of W_f | S_f, where = slot << 16 | f << 12 | w.  Global:
 * one verification, whatever the caller's path (the branches per field
 * would multiply otherwise).
 */
__noinline __u64 flt_fword(__u32 where)
{
	__u32 slot = (where >> 16) & 1, f = (where >> 12) & 7, i = (where >> 6) & 7, b = where & 63;
	void *words = bpf_map_lookup_elem(&xdpr_flt_word, &slot);
	struct flt_pkt *fp = flt_scratch();
	__u64 v = 0, s;

	if (!words || !fp)
		return 0;
	/* W_f's and S_f's summaries, S_f's base and ranks: copied by flt_classify */
	if ((fp->wsumm[f][i] >> b) & 1)
		v = flt_word(words, f * XDPR_FLT_WORDS + i * 64 + b);
	s = fp->ssumm[f][i];
	if ((s >> b) & 1)
		v |= flt_word(words, fp->sbase[f] + fp->srank[f][i] + __builtin_popcountll(s & ((1ULL << b) - 1)));
	return v;
}

/*
 * One candidate word a round, the lowest left; 1 (stop) when none are left.
 * A word holds rules of one group in list order (xdpr_shared.h, bit
 * layout): its first matching bit is the group's best, so the group's
 * later words are skipped and the lowest position over the groups wins.
 */
static long flt_cand_cb(__u32 idx, void *arg)
{
	struct flt_cls *c = arg;
	struct flt_pkt *fp = c->fp;
	struct xdpr_flt_rule *r;
	__u32 i = XDPR_FLT_SUMM, b, w, bit;
	__u64 m = ~0ULL, x = 0;
	void *rules;

	if (!fp)
		return 1;
#pragma unroll
	for (int k = XDPR_FLT_SUMM - 1; k >= 0; k--)
		if (fp->cand[k]) {
			i = k;
			x = fp->cand[k];
		}
	if (i >= XDPR_FLT_SUMM)
		return 1;
	b = ctz64(x) & 63;
	fp->cand[i & 7] = x & (x - 1);
	w = i * 64 + b;
	if (w < fp->skip)
		return 0;
	/* the fields with rules here first: they are what a candidate fails on */
#pragma unroll
	for (int f = 0; f < XDPR_FF_MAX; f++)
		if ((fp->ssumm[f][i & 7] >> b) & 1) {
			m &= flt_fword(c->slot << 16 | f << 12 | w);
			if (!m)
				return 0;
		}
#pragma unroll
	for (int f = 0; f < XDPR_FF_MAX; f++)
		if (!((fp->ssumm[f][i & 7] >> b) & 1)) {
			m &= flt_fword(c->slot << 16 | f << 12 | w);
			if (!m)
				return 0;
		}
	bit = w * 64 + ctz64(m);
	rules = bpf_map_lookup_elem(&xdpr_flt_rule, &c->slot);
	r = rules ? bpf_map_lookup_elem(rules, &bit) : NULL;
	if (!r) {
		fp->pos = -2; /* a list half there: fail closed */
		return 1;
	}
	if (fp->pos < 0 || r->pos < fp->best) {
		fp->best = r->pos;
		fp->pos = bit;
	}
	fp->skip = r->gend;
	return 0;
}

static __always_inline __u32 flt_val(void *vals, __u32 idx)
{
	__u32 *v = bpf_map_lookup_elem(vals, &idx);

	return v ? *v : XDPR_FLT_DESC_EMPTY;
}

static __always_inline __u32 flt_if(void *ifs, __u32 ifindex, __u32 field)
{
	struct xdpr_flt_ifkey k = { .ifindex = ifindex, .field = field };
	__u32 *v = bpf_map_lookup_elem(ifs, &k);

	return v ? *v : XDPR_FLT_DESC_EMPTY;
}

static __always_inline __u32 flt_addr(__u32 slot, struct flt_pkt *fp, __u32 field, const __u8 *a)
{
	__u32 *v;

	if (fp->family == 4) {
		void *m = bpf_map_lookup_elem(&xdpr_flt_lpm4, &slot);

		if (!m)
			return XDPR_FLT_DESC_EMPTY;
		__builtin_memset(&fp->k4, 0, sizeof(fp->k4));
		fp->k4.prefixlen = 40;
		fp->k4.field = field;
		__builtin_memcpy(fp->k4.addr, a, 4);
		v = bpf_map_lookup_elem(m, &fp->k4);
	} else {
		void *m = bpf_map_lookup_elem(&xdpr_flt_lpm6, &slot);

		if (!m)
			return XDPR_FLT_DESC_EMPTY;
		__builtin_memset(&fp->k6, 0, sizeof(fp->k6));
		fp->k6.prefixlen = 136;
		fp->k6.field = field;
		__builtin_memcpy(fp->k6.addr, a, 16);
		v = bpf_map_lookup_elem(m, &fp->k6);
	}
	return v ? *v : XDPR_FLT_DESC_EMPTY;
}

/*
 * The first rule of the slot's list that matches: its bit (the rules
 * array's index), -1 when none does, -2 when the slot is incomplete (fail
 * closed).
 */
__noinline int flt_classify(struct xdp_md *ctx, __u32 slot, __u32 state)
{
	struct flt_pkt *fp = flt_scratch(); /* a map value: its fields may be map keys (6.1) */
	void *descs = bpf_map_lookup_elem(&xdpr_flt_desc, &slot);
	void *vals = bpf_map_lookup_elem(&xdpr_flt_val, &slot);
	void *ifs = bpf_map_lookup_elem(&xdpr_flt_if, &slot);
	struct flt_cls c = { .slot = slot };
	__u32 id;

	if (!ctx || !fp || !descs || !vals || !ifs)
		return -2;
	c.fp = fp;
#pragma unroll
	for (int i = 0; i < XDPR_FLT_SUMM; i++)
		fp->cand[i] = ~0ULL;
#define FLT_DESC(f, idexpr)                                  \
	do {                                                 \
		__u32 wf = f;                                \
		const struct xdpr_flt_desc *w, *sd;          \
		id = idexpr;                                 \
		w = bpf_map_lookup_elem(descs, &wf);         \
		sd = bpf_map_lookup_elem(descs, &id);        \
		if (!w || !sd)                               \
			return -2;                           \
		fp->sbase[f] = sd->base;                     \
		_Pragma("unroll")                            \
		for (int i = 0; i < XDPR_FLT_SUMM; i++) {    \
			fp->cand[i] &= w->summ[i] | sd->summ[i]; \
			fp->ssumm[f][i] = sd->summ[i];       \
			fp->wsumm[f][i] = w->summ[i];        \
			fp->srank[f][i] = sd->rank[i];       \
		}                                            \
	} while (0)
	FLT_DESC(XDPR_FF_SRC, flt_addr(slot, fp, XDPR_FF_SRC, fp->src));
	FLT_DESC(XDPR_FF_DST, flt_addr(slot, fp, XDPR_FF_DST, fp->dst));
	FLT_DESC(XDPR_FF_SPORT, flt_val(vals, XDPR_FV_SPORT + fp->sport));
	FLT_DESC(XDPR_FF_DPORT, flt_val(vals, XDPR_FV_DPORT + fp->dport));
	FLT_DESC(XDPR_FF_PROTO, flt_val(vals, XDPR_FV_PROTO + (fp->family == 6 ? 256 : 0) + fp->proto));
	FLT_DESC(XDPR_FF_IN, flt_if(ifs, in_ifindex(ctx), XDPR_FF_IN));
	FLT_DESC(XDPR_FF_OUT, flt_if(ifs, fp->out_if, XDPR_FF_OUT));
	FLT_DESC(XDPR_FF_STATE, flt_val(vals, XDPR_FV_STATE + (state & 3)));
#undef FLT_DESC
	fp->pos = -1;
	fp->skip = 0;
	bpf_loop(XDPR_FLT_WORDS, flt_cand_cb, &c, 0);
	return fp->pos;
}

static __always_inline void flt_count(__u32 id, __u64 bytes)
{
	struct xdpr_ctr *c = bpf_map_lookup_elem(&xdpr_flt_stats, &id);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
}

/* State of a packet no flow state knows (enum xdpr_flt_state). */
static __always_inline __u32 flt_new_state(const struct flt_pkt *fp)
{
	__u8 t = fp->sport; /* ICMP: the type */

	if (fp->proto == IPPROTO_TCP) {
		__u8 f = fp->tcp_flags & (TCPF_SYN | TCPF_ACK | TCPF_RST | TCPF_FIN);

		/* a SYN, or a bare ACK: a flow picked up mid-stream, as conntrack does */
		return f == TCPF_SYN || f == TCPF_ACK ? XDPR_FS_NEW : XDPR_FS_INVALID;
	}
	if (fp->proto == IPPROTO_ICMP && fp->family == 4)
		return t == ICMP_ECHO || t == 13 || t == 15 || t == 17 ? XDPR_FS_NEW : XDPR_FS_INVALID;
	if (fp->proto == IPPROTO_ICMPV6 && fp->family == 6)
		return t == ICMP6_ECHO_REQUEST || t == ICMP6_NI_QUERY ? XDPR_FS_NEW : XDPR_FS_INVALID;
	return XDPR_FS_NEW;
}

/*
 * The packet's state, from the flow states: FLT_PASS when it passes on its
 * state now, else an enum xdpr_flt_state to classify it with.  Sets
 * fp->keyed (and fp->key) when a new flow accepted now gets a state.
 */
#define FLT_PASS 0x100

__noinline int flt_track(__u32 see_est, __u64 now)
{
	struct flt_pkt *fp = flt_scratch(); /* a map value: its fields may be map keys (6.1) */
	struct xdpr_cfg *cfg;
	struct xdpr_flt_flow *f;
	__u32 zero = 0;
	int from_a = 1;

	if (!fp)
		return XDPR_FS_INVALID;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!cfg)
		return XDPR_FS_INVALID;
	fp->keyed = 0;
	fp->stale = 0;
	fp->made = 0;
	fp->hot_gen = hot_gen_now(cfg); /* before the table: a flush between them voids the copy */
	/* an ICMP error is never a flow of its own: only its quote can relate it */
	if (!fp->nat && !fp->nokey && !fp->icmp_err) {
		flow_key(&fp->key, fp->src, fp->dst, fp->ksport, fp->kdport, fp->proto, fp->family, &from_a);
		fp->from_a = from_a;
		fp->keyed = 1;
		f = nat_lookup(&xdpr_flt_flows, &fp->key);
		if (f && !flow_expired(cfg, f, fp->proto, now)) {
			int out = from_a ^ f->orig_b;
			__u8 bits = flow_bits(fp->proto, fp->tcp_flags, out);
			__u8 closed = f->state & (XDPR_CT_RST | XDPR_CT_FIN_OUT);

			/* a new connection over a closed one's ports starts afresh */
			if (!(fp->proto == IPPROTO_TCP && out && closed &&
			      (fp->tcp_flags & (TCPF_SYN | TCPF_ACK)) == TCPF_SYN)) {
				if ((f->state | bits) != f->state)
					f->state |= bits;
				if (now - f->last_seen > NSEC)
					f->last_seen = now; /* a shared line: at most once a second */
				fp->keyed = 0;
				if (!see_est) {
					flt4_hot_fill(cfg, &fp->key, f->state, f->orig_b, from_a, fp->hot_gen);
					flt6_note(fp, f->state, f->orig_b, from_a);
				}
				return see_est ? XDPR_FS_ESTABLISHED : FLT_PASS;
			}
		}
		if (f) {
			fp->stale = 1;
			fp->stale_created = f->created;
		}
	}
	if (!fp->icmp_err)
		return flt_new_state(fp);
	fp->keyed = 0;
	if (fp->iproto) {
		int ia;

		flow_key(&fp->ikey, fp->isrc, fp->idst, fp->iksport, fp->ikdport, fp->iproto, fp->family, &ia);
		f = nat_lookup(&xdpr_flt_flows, &fp->ikey);
		if (f && !flow_expired(cfg, f, fp->iproto, now))
			return see_est ? XDPR_FS_RELATED : FLT_PASS;
	}
	return XDPR_FS_INVALID;
}

/* The state V of fp->key was just kept: counted for churn, copied for this CPU, marked as this packet's. */
static __always_inline void flt_state_made(const struct xdpr_cfg *cfg, struct flt_pkt *fp,
					   const struct xdpr_flt_flow *v)
{
	flt_churn_note();
	flt4_hot_fill(cfg, &fp->key, v->state, v->orig_b, fp->from_a, fp->hot_gen);
	flt6_note(fp, v->state, v->orig_b, fp->from_a);
	fp->made = 1;
}

/*
 * Keep the state V of the new flow in fp->key.  Another CPU may have
 * classified the flow's first packet at the same instant and kept its
 * state first, and the reply may already have marked it: that state is
 * kept and only this packet's bits are added (an overwrite would forget
 * the reply had been seen).  An expired or closed entry (fp->stale) is
 * replaced, unless another CPU replaced it since flt_track saw it.
 */
static __always_inline void flt_add_state(const struct xdpr_cfg *cfg, struct flt_pkt *fp, struct xdpr_flt_flow *v,
					  __u64 now)
{
	struct xdpr_flt_flow *f;
	__u8 bits;

	if (fp->stale) {
		f = nat_lookup(&xdpr_flt_flows, &fp->key);
		if (!f || f->created == fp->stale_created) {
			if (!nat_update(&xdpr_flt_flows, &fp->key, v, BPF_ANY))
				flt_state_made(cfg, fp, v);
			return;
		}
	} else if (!nat_update(&xdpr_flt_flows, &fp->key, v, BPF_NOEXIST)) {
		flt_state_made(cfg, fp, v);
		return;
	} else {
		f = nat_lookup(&xdpr_flt_flows, &fp->key);
		if (!f)
			return; /* a full table (or gone again): the verdict stands, no state */
	}
	bits = flow_bits(fp->proto, fp->tcp_flags, fp->from_a ^ f->orig_b);
	if ((f->state | bits) != f->state)
		f->state |= bits;
}

/*
 * The filter's verdict on the packet in the per-CPU flt_pkt: STEP_NEXT
 * (accepted: go on), STEP_FLT_REJECT (answer it: the caller builds the
 * answer), or the drop reason.
 */
__noinline int filter_run(struct xdp_md *ctx)
{
	struct flt_pkt *fp = flt_scratch();
	struct xdpr_flt_hdr *hdr;
	struct xdpr_flt_rule *r;
	struct xdpr_cfg *cfg;
	__u32 zero = 0, slot, id = 0;
	__u64 now = bpf_ktime_get_coarse_ns();
	int pos = -1, state;
	void *rules;

	if (!ctx || !fp)
		return XDPR_DROP_FILTER_HDR;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!cfg)
		return XDPR_DROP_FILTER_POLICY;
	slot = cfg->flt_slot & 1; /* read once: header, maps and rules from one list */
	hdr = bpf_map_lookup_elem(&xdpr_flt_hdr, &slot);
	if (!hdr)
		return XDPR_DROP_FILTER_POLICY;
	if (fp->frag && fp->nokey) {
		/* a later fragment: what its first fragment got (no ports to judge by) */
		__u64 *t = bpf_map_lookup_elem(&xdpr_flt_frags, &fp->frag_key);

		if (t && now - *t < XDPR_FLT_FRAG_NS)
			return STEP_NEXT;
	}
	state = flt_track(hdr->flags & XDPR_FLT_SEE_EST, now);
	if (state == FLT_PASS)
		goto accept;
	if (hdr->nrules)
		pos = flt_classify(ctx, slot, state);
	if (pos == -2)
		return XDPR_DROP_FILTER_POLICY; /* a list half there: fail closed */
	if (pos >= 0) {
		__u32 p = pos;

		rules = bpf_map_lookup_elem(&xdpr_flt_rule, &slot);
		r = rules ? bpf_map_lookup_elem(rules, &p) : NULL;
		if (!r)
			return XDPR_DROP_FILTER_POLICY;
		id = r->id;
		flt_count(id, fp->bytes);
		if (r->action == XDPR_FLT_DROP)
			return XDPR_DROP_FILTER;
		if (r->action == XDPR_FLT_REJECT)
			return STEP_FLT_REJECT;
	} else {
		flt_count(0, fp->bytes);
		if (hdr->policy != XDPR_FLT_ACCEPT)
			return XDPR_DROP_FILTER_POLICY;
	}
accept:
	if (fp->frag && !fp->nokey)
		bpf_map_update_elem(&xdpr_flt_frags, &fp->frag_key, &now, BPF_ANY);
	if (fp->keyed && state == XDPR_FS_NEW) {
		struct xdpr_flt_flow *v = &fp->nv;

		__builtin_memset(v, 0, sizeof(*v));
		v->last_seen = now;
		v->created = now;
		v->rule = id;
		v->orig_b = !fp->from_a;
		v->in_if = in_ifindex(ctx);
		v->state = flow_bits(fp->proto, fp->tcp_flags, 1);
		/* the tables being copied (nat limit sessions): the verdict stands, no state is kept */
		if (!nat_frozen())
			flt_add_state(cfg, fp, v, now);
	}
	return STEP_NEXT;
}

/*
 * A packet the filter accepted as a new flow's first, then dropped further
 * on (drop_nat_untranslatable): the state its verdict kept goes again, and
 * this CPU's copy of it, for no packet of that flow was forwarded.  Only
 * if the filter's last packet on this CPU was this one's flow.
 */
static __always_inline void flt_unkeep4(const struct iphdr *iph)
{
	struct flt_pkt *fp = flt_scratch();
	struct xdpr_flt_hot_set *set;
	struct pkt4_io *io;
	__u32 i, zero = 0, ports;

	/* made is this packet's only if the filter step took its view: a packet
	   that passed on its flow's copy, or whose NAT session stood for its
	   state, left the last filtered packet's there */
	io = bpf_map_lookup_elem(&xdpr_io_scr, &zero);
	if (!io || !io->flt_ran)
		return;
	if (!fp || !fp->made || fp->family != 4 || fp->proto != iph->protocol ||
	    *(__be32 *)fp->src != iph->saddr || *(__be32 *)fp->dst != iph->daddr)
		return;
	fp->made = 0;
	nat_delete(&xdpr_flt_flows, &fp->key);
	/* the copy made was of this packet's direction */
	ports = fp->from_a ? xdpr_flt_hot_ports(fp->key.pa, fp->key.pb) : xdpr_flt_hot_ports(fp->key.pb, fp->key.pa);
	i = xdpr_flt_hot_set_of(iph->saddr, iph->daddr, ports, fp->key.proto);
	set = hot_set(i);
	if (!set)
		return;
	for (int w = 0; w < XDPR_FLT_HOT_WAYS; w++)
		if (hot_is(&set->e[w], iph->saddr, iph->daddr, ports, fp->key.proto))
			set->e[w].proto = 0; /* void: a free way */
}

/* ---- the packet, IPv4 and IPv6 ---- */


/* L4 fields of a packet or of a quoted one; -1 when a header the filter needs is cut short. */
static __always_inline int flt_l4(void *l4, void *end, void *lim, __u8 proto, __u8 icmp_proto, __u16 *sport,
				  __u16 *dport, __be16 *ks, __be16 *kd, __u8 *flags, int quoted)
{
	__u8 *b = l4;

	*sport = *dport = 0;
	*ks = *kd = 0;
	if (proto == IPPROTO_TCP || proto == IPPROTO_UDP) {
		/* a quote holds 8 bytes; a packet its whole header (RFC 1858: no tiny fragments) */
		if (proto == IPPROTO_TCP && !quoted) {
			if (l4 + 20 > end || l4 + 20 > lim)
				return -1;
			*flags = b[13];
		} else if (l4 + 8 > end || l4 + 8 > lim) {
			return -1;
		}
		*ks = *(__be16 *)b;
		*kd = *(__be16 *)(b + 2);
		*sport = bpf_ntohs(*ks);
		*dport = bpf_ntohs(*kd);
		return 0;
	}
	if (proto == icmp_proto) {
		if (l4 + 8 > end || l4 + 8 > lim)
			return -1;
		*sport = b[0];
		*dport = b[1];
		if ((icmp_proto == IPPROTO_ICMP && (b[0] == ICMP_ECHO || b[0] == ICMP_ECHOREPLY)) ||
		    (icmp_proto == IPPROTO_ICMPV6 &&
		     (b[0] == ICMP6_ECHO_REQUEST || b[0] == ICMP6_ECHO_REPLY)))
			*ks = *kd = *(__be16 *)(b + 4);
	}
	return 0;
}

/*
 * IPv4: the packet at io (as the NAT steps see it), leaving through out_if,
 * into the filter's view (flt_pkt): STEP_NEXT, then filter_run judges it.
 * nat: a NAT session is about to be created for it (no flow state of ours).
 */
__noinline int filter4_view(struct xdp_md *ctx, struct pkt4_io *io, __u32 out_if, __u32 nat)
{
	struct flt_pkt *fp = flt_scratch();
	struct pkt4 pk, *p = &pk;
	void *end;

	if (!ctx || !io || !fp || pkt4_view(ctx, io, p))
		return XDPR_DROP_FILTER_HDR;
	end = p->end;
	__builtin_memset(fp, 0, offsetof(struct flt_pkt, keyed)); /* the view; the rest is written before read */
	fp->made = 0; /* a later fragment's filter_run returns before flt_track clears it */
	io->flt_ran = 1;
	fp->family = 4;
	fp->proto = p->iph->protocol;
	__builtin_memcpy(fp->src, &p->iph->saddr, 4);
	__builtin_memcpy(fp->dst, &p->iph->daddr, 4);
	fp->out_if = out_if;
	fp->nat = nat;
	fp->bytes = (long)ctx->data_end - (long)ctx->data;
	if (p->frag) {
		fp->frag = 1;
		fp->frag_key.saddr = p->iph->saddr;
		fp->frag_key.daddr = p->iph->daddr;
		fp->frag_key.id = p->iph->id;
		fp->frag_key.proto = p->iph->protocol;
		fp->frag_key.pad = 0;
	}
	if (!p->l4) {
		fp->nokey = 1; /* a later fragment: portless */
		return STEP_NEXT;
	}
	if (flt_l4(p->l4, end, p->ip_end, fp->proto, IPPROTO_ICMP, &fp->sport, &fp->dport, &fp->ksport, &fp->kdport,
		   &fp->tcp_flags, 0))
		return XDPR_DROP_FILTER_HDR;
	if (fp->proto == IPPROTO_ICMP &&
	    (fp->sport == ICMP_DEST_UNREACH || fp->sport == ICMP_TIME_EXCEEDED ||
	     fp->sport == ICMP_PARAMETERPROB || fp->sport == 4 || fp->sport == 5)) {
		struct iphdr *in = p->l4 + 8;
		__u16 s, d;
		__u8 fl = 0;

		fp->icmp_err = 1;
		if ((void *)(in + 1) <= end && (void *)(in + 1) <= p->ip_end && in->version == 4 && in->ihl >= 5 &&
		    !(in->frag_off & bpf_htons(IP_OFFSET))) {
			void *il4 = (void *)in + (in->ihl & 0xf) * 4;

			if (!flt_l4(il4, end, p->ip_end, in->protocol, IPPROTO_ICMP, &s, &d, &fp->iksport, &fp->ikdport,
				    &fl, 1)) {
				fp->iproto = in->protocol;
				__builtin_memcpy(fp->isrc, &in->saddr, 4);
				__builtin_memcpy(fp->idst, &in->daddr, 4);
			}
		}
	}
	return STEP_NEXT;
}

/*
 * IPv6: the packet right after the Ethernet header; l4 is the transport
 * header's offset (0: a later fragment) and proto its protocol, as the
 * extension header walk (ip6_l4) found them.
 */
__noinline int filter6_view(struct xdp_md *ctx, __u32 l4off, __u32 proto, __u32 out_if)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct flt_pkt *fp = flt_scratch();
	struct ipv6hdr *ip6h = data + sizeof(struct ethhdr);
	void *ip_end, *l4;
	__u32 plen;

	if (!ctx || !fp || (void *)(ip6h + 1) > end)
		return XDPR_DROP_FILTER_HDR;
	plen = bpf_ntohs(ip6h->payload_len);
	asm volatile("%0 &= 0xffff" : "+r"(plen)); /* bounded for older verifiers (6.1, 6.12) */
	ip_end = (void *)(ip6h + 1) + plen;
	if (ip_end > end)
		return XDPR_DROP_FILTER_HDR;
	__builtin_memset(fp, 0, offsetof(struct flt_pkt, keyed)); /* the view; the rest is written before read */
	fp->family = 6;
	fp->proto = proto;
	__builtin_memcpy(fp->src, &ip6h->saddr, 16);
	__builtin_memcpy(fp->dst, &ip6h->daddr, 16);
	fp->out_if = out_if;
	fp->bytes = end - data;
	if (!l4off) {
		fp->nokey = 1;
		return STEP_NEXT;
	}
	l4 = data + (l4off & 0x3ff);
	if (flt_l4(l4, end, ip_end, proto, IPPROTO_ICMPV6, &fp->sport, &fp->dport, &fp->ksport, &fp->kdport,
		   &fp->tcp_flags, 0))
		return XDPR_DROP_FILTER_HDR;
	if (proto == IPPROTO_ICMPV6 && fp->sport >= ICMP6_DST_UNREACH && fp->sport <= ICMP6_PARAMPROB) {
		struct ipv6hdr *in = l4 + 8;
		__u16 s, d;
		__u8 fl = 0;

		fp->icmp_err = 1;
		/* the quote's transport header right after its fixed header (no extension walk) */
		if ((void *)(in + 1) <= end && (void *)(in + 1) <= ip_end && !ip6_is_exthdr(in->nexthdr) &&
		    !flt_l4(in + 1, end, ip_end, in->nexthdr, IPPROTO_ICMPV6, &s, &d, &fp->iksport, &fp->ikdport,
			    &fl, 1)) {
			fp->iproto = in->nexthdr;
			__builtin_memcpy(fp->isrc, &in->saddr, 16);
			__builtin_memcpy(fp->idst, &in->daddr, 16);
		}
	}
	return STEP_NEXT;
}

/*
 * The transport header of an IPv6 packet behind its extension headers (at
 * most 8): proto << 16 | its offset from the frame start (offset 0: a later
 * fragment, no transport header), or -1 when the chain is cut short or too
 * long.  Global: its many paths end here, once.
 */
__noinline int ip6_l4(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6h = data + sizeof(struct ethhdr);
	__u32 plen;
	__u8 nh;
	void *pos;

	if (!ctx || (void *)(ip6h + 1) > end)
		return -1;
	/* the chain ends within the payload length, not in what follows it (padding) */
	plen = bpf_ntohs(ip6h->payload_len);
	asm volatile("%0 &= 0xffff" : "+r"(plen));
	plen += sizeof(struct ethhdr) + sizeof(*ip6h); /* from here: where the packet ends */
	nh = ip6h->nexthdr;
	pos = ip6h + 1;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		__u8 *h = pos;
		__u32 len;

		if (pos - data > 1000)
			return -1;
		if (nh != 0 && nh != 43 && nh != 60 && nh != 44 && nh != 51)
			return pos - data > plen ? -1 : (__u32)nh << 16 | (__u32)(pos - data);
		if ((void *)(h + 8) > end || pos - data + 8 > plen)
			return -1;
		if (nh == 44) {
			/* fragment header: offset != 0 means no transport header here */
			if ((bpf_ntohs(*(__be16 *)(h + 2)) & 0xfff8) != 0)
				return (__u32)h[0] << 16;
			len = 8;
		} else if (nh == 51) {
			len = (h[1] + 2) * 4;
		} else {
			len = (h[1] + 1) * 8;
		}
		nh = h[0];
		pos += len;
	}
	return -1;
}

/* Each call from the program's top frame: the classifier's call chain needs the stack. */
#define filter4(ctx, io, out_if, nat) ({                          \
	int __r = filter4_view(ctx, io, out_if, nat);             \
	__r == STEP_NEXT ? filter_run(ctx) : __r; })


#endif /* XDPR_FILTER_H */
