/* SPDX-License-Identifier: GPL-2.0 */
/*
 * binat.h - 1:1 NAT (IPv4 binat, netmap style): an inside prefix always
 * appears as an outside prefix of the same length on one outside
 * interface, host bits kept, both directions, every protocol, no state.
 *
 *   binat4_ingress  arriving on the outside interface for an outside
 *                   address: destination to the inside one, before the
 *                   route lookup (so the filter and the FIB see the inside
 *                   address); an ICMP error's embedded source too
 *   binat4_egress   leaving through the outside interface from an inside
 *                   source: the filter first (it sees inside addresses),
 *                   then the source to the outside address; an inside
 *                   host's ICMP error's embedded destination too.  Source
 *                   NAT rules of that interface do not see the packet.
 *   binat4_leak     the kernel would forward an inside source out of the
 *                   interface untranslated (route map hand-overs): drop
 *
 * Checksums: IPv4 header; TCP, UDP (a zero UDP checksum stays zero),
 * UDP-Lite and DCCP over their pseudo-header; ICMP has none; other
 * protocols (GRE, SCTP, ESP, ...) carry nothing that covers the address.
 * A later fragment only has its IP header changed, which is exactly right
 * for a stateless translation (the first fragment's L4 checksum covers
 * the whole datagram and was fixed incrementally).
 *
 * The steps are global functions (verified once, small frames); the
 * wrappers inlined into the packet path only gate them on the interface's
 * XDPR_IF_BINAT flag, so interfaces without 1:1 rules pay one flag test.
 */
#ifndef XDPR_BINAT_H
#define XDPR_BINAT_H

#include <linux/bpf.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "parse.h"
#include "csum.h"
#include "step.h"
#include "nat_xlate.h"
#include "filter.h"
#include "reject.h"
#include "icmp.h"

/* Rules by id: the control plane's list (the packet path reads the tries). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_BINAT_MAX);
	__type(key, __u32);
	__type(value, struct xdpr_binat_rule);
} xdpr_binat SEC(".maps");

/* (outside interface, outside prefix) -> rule: inbound destinations. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XDPR_BINAT_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_binat_key);
	__type(value, struct xdpr_binat_rule);
} xdpr_binat_in SEC(".maps");

/* (outside interface, inside prefix) -> rule: outbound sources. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XDPR_BINAT_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_binat_key);
	__type(value, struct xdpr_binat_rule);
} xdpr_binat_out SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_BINAT_MAX * XDPR_BE_MAX);
	__type(key, __u32);
	__type(value, __u64);
} xdpr_binat_st SEC(".maps");

#ifndef IPPROTO_DCCP
#define IPPROTO_DCCP 33
#endif
#ifndef IPPROTO_UDPLITE
#define IPPROTO_UDPLITE 136
#endif

static __always_inline void binat_count(__u32 id, __u32 ev)
{
	__u32 key = (id % XDPR_BINAT_MAX) * XDPR_BE_MAX + ev;
	__u64 *v = bpf_map_lookup_elem(&xdpr_binat_st, &key);

	if (v)
		*v += 1;
}

static __always_inline const struct xdpr_binat_rule *binat_find(void *trie, __u32 ifindex, __be32 addr)
{
	struct xdpr_binat_key k = { .prefixlen = 64, .ifindex = ifindex, .addr = addr };

	return bpf_map_lookup_elem(trie, &k);
}

/*
 * Slow paths only (a drop for a gone interface, a kernel hand-over): is
 * the rule still in its slot?  A trie entry a killed deletion left behind
 * drops nothing then.  (Reading xdpr_binat also binds it to the program,
 * which is how a later command finds it.)
 */
static __always_inline int binat_live(const struct xdpr_binat_rule *r)
{
	__u32 id = r->id;
	const struct xdpr_binat_rule *s = bpf_map_lookup_elem(&xdpr_binat, &id);

	return s && s->ifindex == r->ifindex && s->in_net == r->in_net;
}

/* The prefix's address for addr's host bits. */
static __always_inline __be32 binat_map(__be32 addr, __be32 net, __be32 mask)
{
	return (addr & ~mask) | net;
}

/* An ICMP error (the packet embeds the one it is about)? */
static __always_inline int binat_icmp_err(const struct pkt4 *p)
{
	struct icmp4hdr *ic = p->l4;

	if (p->proto != IPPROTO_ICMP || !ic || !pkt4_has(p, ic, sizeof(*ic)))
		return 0;
	return ic->type == ICMP_DEST_UNREACH || ic->type == ICMP_TIME_EXCEEDED ||
	       ic->type == ICMP_PARAMETERPROB || ic->type == 4 /* source quench */ ||
	       ic->type == 5 /* redirect */;
}

/*
 * The L4 checksum covering a pseudo-header with this address, or NULL
 * (none, a zero UDP checksum, a later fragment).  -1 in *cut: the header
 * is cut short (within the frame or the IP length).
 */
static __always_inline __u16 *binat_l4_csum(const struct pkt4 *p, void *l4, __u8 proto, int quoted, int *cut)
{
	*cut = 0;
	if (!l4)
		return NULL;
	if (proto == IPPROTO_TCP) {
		/* a quote may end before the checksum (8 bytes are all RFC 792 asks) */
		if (!pkt4_has(p, l4, quoted ? 18 : sizeof(struct tcphdr))) {
			*cut = !quoted;
			return NULL;
		}
		return (__u16 *)(l4 + 16);
	}
	if (proto == IPPROTO_UDP || proto == IPPROTO_UDPLITE || proto == IPPROTO_DCCP) {
		__u16 *c = l4 + 6;

		if (!pkt4_has(p, l4, 8)) {
			*cut = !quoted;
			return NULL;
		}
		return proto == IPPROTO_UDP && *c == 0 ? NULL : c;
	}
	return NULL;
}

/* Source (dst 0) or destination (dst 1) to addr, with every checksum over it. */
static __always_inline int binat4_rewrite(struct pkt4 *p, int dst, __be32 addr)
{
	struct iphdr *iph = p->iph;
	__be32 old = dst ? iph->daddr : iph->saddr;
	__u16 *c;
	int cut;

	c = binat_l4_csum(p, p->l4, p->proto, 0, &cut);
	if (cut)
		return -1;
	if (c) {
		csum_replace32(c, old, addr);
		if (p->proto == IPPROTO_UDP)
			udp_csum_fixup(c);
	}
	if (dst)
		iph->daddr = addr;
	else
		iph->saddr = addr;
	csum_replace32(&iph->check, old, addr);
	return 0;
}

/*
 * An ICMP error: its own address (inbound: destination, outbound: source)
 * to addr, and the embedded packet's opposite one (inbound: its source,
 * the packet we sent; outbound: its destination, the packet we delivered)
 * when it is in the rule's prefix, with the embedded IP and L4 checksums
 * and the ICMP checksum over all of it.  -1: cut short.
 */
static __always_inline int binat4_err_rewrite(struct pkt4 *p, int in, __be32 addr,
					      const struct xdpr_binat_rule *r)
{
	struct iphdr *iph = p->iph;
	struct icmp4hdr *ic = p->l4;
	__be32 from = in ? r->out_net : r->in_net, to = in ? r->in_net : r->out_net;
	__be32 old, na, oo;
	struct iphdr *e;
	__u16 *ec, old_ipc;
	int cut;

	if (p->frag || !ic || !pkt4_has(p, ic, sizeof(*ic)))
		return -1;
	e = (void *)(ic + 1);
	if (!pkt4_has(p, e, sizeof(*e)) || e->ihl < 5)
		return -1;
	old = in ? e->saddr : e->daddr;
	if ((old & r->mask) == from) {
		void *el4 = (e->frag_off & bpf_htons(IP_OFFSET)) ? NULL : (void *)e + (e->ihl & 0xf) * 4;

		na = binat_map(old, to, r->mask);
		ec = binat_l4_csum(p, el4, e->protocol, 1, &cut);
		if (ec) {
			__u16 was = *ec;

			csum_replace32(ec, old, na);
			if (e->protocol == IPPROTO_UDP)
				udp_csum_fixup(ec);
			csum_replace16(&ic->check, was, *ec);
		}
		old_ipc = e->check;
		if (in)
			e->saddr = na;
		else
			e->daddr = na;
		csum_replace32(&e->check, old, na);
		csum_replace32(&ic->check, old, na);
		csum_replace16(&ic->check, old_ipc, e->check);
	}
	/* the error's own header: ICMP has no pseudo-header */
	oo = in ? iph->daddr : iph->saddr;
	if (in)
		iph->daddr = addr;
	else
		iph->saddr = addr;
	csum_replace32(&iph->check, oo, addr);
	return 0;
}

/*
 * Rewrite p to addr under rule r (in: its destination, else its source; an
 * ICMP error with its quoted packet), counted.  -1 done, or the drop reason.
 */
static __always_inline int binat_apply(struct pkt4 *p, const struct xdpr_binat_rule *r, int in, int icmp,
				       __be32 addr)
{
	__u32 id = r->id;
	int err = icmp ? binat4_err_rewrite(p, in, addr, r) : binat4_rewrite(p, in, addr);

	if (err) {
		binat_count(id, XDPR_BE_DROPPED);
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	}
	binat_count(id, in ? XDPR_BE_IN : XDPR_BE_OUT);
	if (icmp)
		binat_count(id, XDPR_BE_ICMP_ERR);
	return -1;
}

/*
 * Inbound, on outside interface ifindex: a destination in a rule's outside
 * prefix becomes the inside address.  One expiring here (TTL <= 1) is not
 * translated: XDPR_TX_ICMP_TTL asks the caller to answer it from XDP, from
 * the outside address and quoting the packet as it arrived, as the kernel's
 * netmap does (its conntrack turns its own error's source back into the
 * address the packet was sent to).  An ICMP error expiring here is the
 * kernel's (it answers no error).  STEP_NEXT, or an xdpr_reason.
 */
__noinline int binat4_in(struct xdp_md *ctx, struct pkt4_io *io, __u32 ifindex)
{
	const struct xdpr_binat_rule *r;
	struct pkt4 pk, *p = &pk;
	int err, icmp;

	if (!ctx || !io || pkt4_view(ctx, io, p))
		return STEP_NEXT;
	r = binat_find(&xdpr_binat_in, ifindex, p->iph->daddr);
	if (!r)
		return STEP_NEXT;
	icmp = binat_icmp_err(p);
	if (p->iph->ttl <= 1)
		return icmp ? STEP_NEXT : XDPR_TX_ICMP_TTL;
	err = binat_apply(p, r, 1, icmp, binat_map(p->iph->daddr, r->in_net, r->mask));
	return err >= 0 ? err : STEP_NEXT;
}

/*
 * Outbound through egress: a source in a rule's inside prefix becomes the
 * outside address.  gone: egress is no interface of the router (detached
 * or deleted with the rule left): drop (drop_nat_if_gone), never send it
 * untranslated.  filter: the filter has not seen it; STEP_BINAT_FLT asks
 * the caller to run it first, nothing changed.  STEP_NEXT: no rule;
 * STEP_BINAT: translated; or an xdpr_reason.
 */
__noinline int binat4_out(struct xdp_md *ctx, struct pkt4_io *io, __u32 egress, __u32 gone, __u32 filter)
{
	const struct xdpr_binat_rule *r;
	struct pkt4 pk, *p = &pk;
	int err, icmp;
	__u32 id;

	if (!ctx || !io || pkt4_view(ctx, io, p))
		return STEP_NEXT;
	r = binat_find(&xdpr_binat_out, egress, p->iph->saddr);
	if (!r)
		return STEP_NEXT;
	id = r->id;
	if (gone) {
		if (!binat_live(r))
			return STEP_NEXT;
		binat_count(id, XDPR_BE_DROPPED);
		return XDPR_DROP_NAT_IF_GONE;
	}
	if (filter)
		return STEP_BINAT_FLT;
	icmp = binat_icmp_err(p);
	err = binat_apply(p, r, 0, icmp, binat_map(p->iph->saddr, r->out_net, r->mask));
	return err >= 0 ? err : STEP_BINAT;
}

/*
 * The kernel would forward a packet from saddr out of ifindex on its own
 * (a route map hand-over): 1 if a 1:1 rule of that interface covers the
 * source (it would leave untranslated: the caller drops it), else 0.
 */
__noinline int binat4_leak(__u32 ifindex, __be32 saddr)
{
	const struct xdpr_binat_rule *r = binat_find(&xdpr_binat_out, ifindex, saddr);

	if (!r || !binat_live(r))
		return 0;
	binat_count(r->id, XDPR_BE_DROPPED);
	return 1;
}

/* Established on this CPU's copy of its flow state (the filter's fast answer)?  1 or 0. */
__noinline int binat4_hot(struct xdp_md *ctx, struct pkt4_io *io)
{
	struct pkt4 pk, *p = &pk;
	struct xdpr_cfg *cfg;
	__u32 zero = 0;

	if (!ctx || !io || pkt4_view(ctx, io, p))
		return 0;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	return cfg && flt4_hot(cfg, p);
}

/* fwd_ip4_path: a packet arrived on an interface with 1:1 rules (in->flags). */
static __always_inline int binat4_ingress(struct xdp_md *ctx, struct pkt4 *p, struct pkt4_io *io)
{
	int step;

	pkt4_to_io(p, sizeof(struct ethhdr), io);
	step = binat4_in(ctx, io, in_ifindex(ctx));
	if (step == XDPR_TX_ICMP_TTL) {
		/* the frame is no longer the packet: an exit for sure (never "go on") */
		step = icmp4_send(ctx, ICMP_TIME_EXCEEDED, ICMP_EXC_TTL, 0, XDPR_TX_ICMP_TTL);
		return step < 0 ? XDPR_DROP_SHORT : step;
	}
	return step;
}

/*
 * ip4_snat: the FIB sends the packet out of egress (out: its settings, NULL
 * when it is no interface of the router).  STEP_NEXT: no 1:1 rule, source
 * NAT goes on; STEP_BINAT: translated (filtered first when the filter is
 * on); or the exit.  One expiring here is left alone: the kernel answers
 * it and forwards nothing.
 */
static __always_inline int binat4_egress(struct xdp_md *ctx, struct pkt4 *p, struct pkt4_io *io,
					 const struct xdpr_iface *out, __u32 egress)
{
	int step;

	if ((out && !(out->flags & XDPR_IF_BINAT)) || p->iph->ttl <= 1)
		return STEP_NEXT;
	pkt4_to_io(p, sizeof(struct ethhdr), io);
	step = binat4_out(ctx, io, egress, !out, io->flt && !io->filtered);
	if (step == STEP_BINAT_FLT) {
		if (!binat4_hot(ctx, io)) {
			int f = filter4(ctx, io, egress, 0);

			if (f == STEP_FLT_REJECT)
				return reject_exit(reject4(ctx));
			if (f >= 0)
				return f;
		}
		step = binat4_out(ctx, io, egress, 0, 0);
	}
	if (step == STEP_BINAT)
		io->filtered = 1;
	return step;
}

#endif /* XDPR_BINAT_H */
