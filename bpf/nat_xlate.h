/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nat_xlate.h - rewriting a packet for NAT: addresses, ports and every
 * checksum that covers them (RFC 1624 increments through csum.h), ICMP
 * errors' embedded packets, and the key a packet is looked up by.
 * Everything reads within the IP total length (pkt4_has), never padding.
 */
#ifndef XDPR_NAT_XLATE_H
#define XDPR_NAT_XLATE_H

#include <linux/tcp.h>
#include <linux/udp.h>
#include "nat_base.h"
#include "csum.h"
#include "parse.h"

static __always_inline void csum_replace32(__u16 *check, __be32 old, __be32 new)
{
	csum_replace16(check, (__u16)old, (__u16)new);
	csum_replace16(check, (__u16)(old >> 16), (__u16)(new >> 16));
}

/* A UDP checksum of 0 means "none" and stays 0; a computed 0 is sent as 0xffff. */
static __always_inline void udp_csum_fixup(__u16 *check)
{
	if (*check == 0)
		*check = 0xffff;
}

/* Ports (or ICMP echo identifier) as NAT keys and the FIB's hash want them. */
static __always_inline void pkt4_ports(struct pkt4 *p)
{
	if (!p->l4)
		return;
	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) {
		__be16 *ports = p->l4;

		if (pkt4_has(p, ports, 4)) {
			p->sport = ports[0];
			p->dport = ports[1];
		}
	} else if (p->proto == IPPROTO_ICMP) {
		struct icmp4hdr *ic = p->l4;

		if (!pkt4_has(p, ic, sizeof(*ic)))
			return;
		if (ic->type == ICMP_ECHO)
			p->sport = ic->id;
		else if (ic->type == ICMP_ECHOREPLY)
			p->dport = ic->id;
		else if (ic->type == ICMP_DEST_UNREACH || ic->type == ICMP_TIME_EXCEEDED ||
			 ic->type == ICMP_PARAMETERPROB)
			p->icmp_err = 1;
	}
}

/* L4 checksum field and the port (or echo id) to rewrite for a direction. */
static __always_inline int nat4_l4_fields(struct pkt4 *p, int dir, __u16 **csum, __be16 **port)
{
	void *l4 = p->l4;

	if (!l4)
		return -1;
	if (p->proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if (!pkt4_has(p, th, sizeof(*th)))
			return -1;
		*csum = (__u16 *)&th->check;
		*port = dir == XDPR_CT_OUT ? &th->source : &th->dest;
	} else if (p->proto == IPPROTO_UDP) {
		struct udphdr *uh = l4;

		if (!pkt4_has(p, uh, sizeof(*uh)))
			return -1;
		*csum = (__u16 *)&uh->check;
		*port = dir == XDPR_CT_OUT ? &uh->source : &uh->dest;
	} else {
		struct icmp4hdr *ic = l4;

		if (!pkt4_has(p, ic, sizeof(*ic)))
			return -1;
		*csum = (__u16 *)&ic->check;
		*port = &ic->id;
	}
	return 0;
}

/* Rewrite source (OUT) or destination (IN) address and port with their checksums. */
static __always_inline void nat4_rewrite(struct pkt4 *p, int dir, __be32 addr, __be16 port)
{
	struct iphdr *iph = p->iph;
	__be32 old_addr = dir == XDPR_CT_OUT ? iph->saddr : iph->daddr;
	__u16 *csum;
	__be16 *pp;

	if (dir == XDPR_CT_OUT)
		iph->saddr = addr;
	else
		iph->daddr = addr;
	csum_replace32(&iph->check, old_addr, addr);

	if (nat4_l4_fields(p, dir, &csum, &pp))
		return; /* later fragment: address only */
	if (p->proto == IPPROTO_UDP && *csum == 0) {
		*pp = port; /* no UDP checksum: keep none */
		return;
	}

	if (p->proto != IPPROTO_ICMP)
		csum_replace32(csum, old_addr, addr); /* pseudo-header */
	csum_replace16(csum, *pp, port);
	*pp = port;
	if (p->proto == IPPROTO_UDP)
		udp_csum_fixup(csum);
}

/* Rewrite, and keep the packet's key ports in step. */
static __always_inline void nat4_xlate(struct pkt4 *p, int dir, __be32 addr, __be16 port)
{
	nat4_rewrite(p, dir, addr, port);
	if (dir == XDPR_CT_OUT)
		p->sport = port;
	else
		p->dport = port;
}

/*
 * The packet embedded in an ICMP error: which of its addresses and ports to
 * change, and every checksum that covers them (embedded IP, embedded L4 when
 * it is in the quote, the ICMP checksum over all of it, the outer IP header).
 *   IN  (error about a packet we sent out): embedded source out -> in
 *   OUT (error from inside about a packet we brought in): embedded dest in -> out
 */
static __always_inline int nat4_icmp_err_rewrite(struct pkt4 *p, int dir, __be32 addr, __be16 port,
						 struct iphdr *e, void *el4)
{
	struct icmp4hdr *ic = p->l4;
	__u16 *icsum = (__u16 *)&ic->check;
	__be32 *ea = dir == XDPR_CT_IN ? &e->saddr : &e->daddr;
	__be32 old_addr = *ea;
	__u16 old_ecsum = e->check;
	__be16 *ep, old_port;
	__u16 *l4c = NULL;

	if (e->protocol == IPPROTO_ICMP) {
		struct icmp4hdr *eic = el4;

		if (!pkt4_has(p, eic, sizeof(*eic)))
			return -1;
		ep = &eic->id;
		l4c = (__u16 *)&eic->check;
	} else {
		__be16 *ports = el4;

		if (!pkt4_has(p, ports, 4))
			return -1;
		ep = dir == XDPR_CT_IN ? &ports[0] : &ports[1];
		if (e->protocol == IPPROTO_UDP) {
			struct udphdr *uh = el4;

			if (pkt4_has(p, uh, sizeof(*uh)) && uh->check)
				l4c = (__u16 *)&uh->check;
		} else {
			struct tcphdr *th = el4;

			if (pkt4_has(p, th, sizeof(*th)))
				l4c = (__u16 *)&th->check;
		}
	}

	/* outer header: the error's own destination (IN) or source (OUT) */
	{
		struct iphdr *iph = p->iph;
		__be32 *oa = dir == XDPR_CT_IN ? &iph->daddr : &iph->saddr;
		__be32 oold = *oa;

		*oa = addr;
		csum_replace32(&iph->check, oold, addr);
	}

	/* embedded header */
	*ea = addr;
	csum_replace32(&e->check, old_addr, addr);
	csum_replace32(icsum, old_addr, addr);
	csum_replace16(icsum, old_ecsum, e->check);

	old_port = *ep;
	*ep = port;
	csum_replace16(icsum, old_port, port);
	if (l4c) {
		__u16 old_l4c = *l4c;

		if (e->protocol != IPPROTO_ICMP)
			csum_replace32(l4c, old_addr, addr);
		csum_replace16(l4c, old_port, port);
		if (e->protocol == IPPROTO_UDP)
			udp_csum_fixup(l4c);
		csum_replace16(icsum, old_l4c, *l4c);
	}
	return 0;
}

/*
 * ICMP error about a translated flow.  dir IN: arrived from outside about a
 * packet we sent (embedded = our outbound packet as translated).  dir OUT:
 * an inside host's error about a packet we delivered to it.
 * Returns 1 translated, 0 not a NAT flow, -1 malformed.
 */
static __always_inline int nat4_icmp_err(struct pkt4 *p, int dir)
{
	struct icmp4hdr *ic = p->l4;
	struct xdpr_ct_key k = {};
	struct xdpr_ct_val *v;
	struct iphdr *e;
	void *el4;

	if (!ic || !pkt4_has(p, ic, sizeof(*ic)))
		return -1;
	e = (void *)(ic + 1);
	if (!pkt4_has(p, e, sizeof(*e)) || e->ihl != 5)
		return -1;
	el4 = (void *)(e + 1);
	if (!pkt4_has(p, el4, 8))
		return -1;
	k.proto = e->protocol;
	if (k.proto == IPPROTO_ICMP) {
		struct icmp4hdr *eic = el4;

		/* only errors about echo requests we sent carry a NAT identifier */
		if (dir != XDPR_CT_IN || eic->type != ICMP_ECHO)
			return 0;
		k.sport = 0;
		k.dport = eic->id;
	} else if (k.proto == IPPROTO_TCP || k.proto == IPPROTO_UDP) {
		__be16 *ports = el4;

		/* the embedded packet travelled the other way: swap */
		k.sport = ports[1];
		k.dport = ports[0];
	} else {
		return 0;
	}
	k.saddr = e->daddr;
	k.daddr = e->saddr;
	k.dir = dir;
	v = ct_lookup(&k);
	if (!v)
		return 0;
	if (nat4_icmp_err_rewrite(p, dir, v->xaddr, v->xport, e, el4))
		return -1;
	nat_count(v->rule, dir == XDPR_CT_IN ? XDPR_NE_ICMP_ERR_IN : XDPR_NE_ICMP_ERR_OUT);
	return 1;
}

/* Key of this packet in the direction it travels (see xdpr_ct_key). */
static __always_inline void nat4_key(const struct pkt4 *p, int dir, struct xdpr_ct_key *k)
{
	k->saddr = p->iph->saddr;
	k->daddr = p->iph->daddr;
	k->sport = p->sport;
	k->dport = p->dport;
	k->proto = p->proto;
	k->dir = dir;
	k->pad[0] = k->pad[1] = 0;
}

/* Can this packet carry a NAT key?  TCP/UDP with ports, ICMP echo. */
static __always_inline int nat4_keyable(const struct pkt4 *p, int dir)
{
	struct icmp4hdr *ic = p->l4;

	if (!p->l4 || p->frag)
		return 0;
	/* the whole header: a packet cut inside it would be translated half-way */
	if (p->proto == IPPROTO_TCP)
		return pkt4_has(p, p->l4, sizeof(struct tcphdr));
	if (p->proto == IPPROTO_UDP)
		return pkt4_has(p, p->l4, sizeof(struct udphdr));
	if (p->proto != IPPROTO_ICMP || !pkt4_has(p, ic, sizeof(*ic)))
		return 0;
	return ic->type == (dir == XDPR_CT_OUT ? ICMP_ECHO : ICMP_ECHOREPLY);
}

/* State bits a packet brings (enum xdpr_ct_state); *reopen: a TCP SYN without ACK. */
static __always_inline __u8 nat4_state_bits(const struct pkt4 *p, int dir, int *reopen)
{
	__u8 bits = dir == XDPR_CT_OUT ? XDPR_CT_SEEN_OUT : XDPR_CT_SEEN_IN;
	struct tcphdr *th = p->l4;

	*reopen = 0;
	if (p->proto != IPPROTO_TCP || !th || !pkt4_has(p, th, sizeof(*th)))
		return bits;
	if (th->fin)
		bits |= dir == XDPR_CT_OUT ? XDPR_CT_FIN_OUT : XDPR_CT_FIN_IN;
	if (th->rst)
		bits |= XDPR_CT_RST;
	*reopen = th->syn && !th->ack;
	return bits;
}

#endif /* XDPR_NAT_XLATE_H */
