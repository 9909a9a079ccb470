/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nat_fwd.h - port forwards (`nat add in`): a new inbound TCP/UDP flow to a
 * forwarded outside address/port gets a session whose inbound half takes
 * it to the inside host, as nft's dnat would.  The steps, in the order the
 * packet path calls them:
 *   nat4_fwd_lookup  no session, no binding: is it a forward? (request in
 *                    the NAT scratch, as for any new session)
 *   nat4_fwd_xlate   the destination rewritten to the inside host, before
 *                    the FIB and the filter see the packet
 *   nat4_fwd_create  the session, once the filter has accepted the flow
 *   nat4_fwd_reply   the inside host's packets of such a session, leaving
 *                    through an interface none of whose source NAT rules
 *                    covers the host: translated back all the same
 * A forward's session holds neither a binding nor a host count (bind_gen
 * 0): the forward owns its ports for as long as it exists.
 */
#ifndef XDPR_NAT_FWD_H
#define XDPR_NAT_FWD_H

#include "nat.h"

/* The forward rule id names, if it is live on the interface fwd_if. */
static __always_inline struct xdpr_nat_rule *fwd_rule(__u32 rid, __u32 fwd_if)
{
	struct xdpr_nat_rule *r = bpf_map_lookup_elem(&xdpr_nat_rules, &rid);

	if (!r || !(r->flags & XDPR_NAT_FWD) || (r->flags & XDPR_NAT_RETIRED) || r->pending ||
	    !fwd_if || r->ifindex != fwd_if)
		return NULL;
	return r;
}

/*
 * A packet arriving on io->fwd_if (an interface forwards name) that no
 * session or binding claims.  Returns STEP_NAT_FWD (the request is in the
 * scratch, q->from_in = NAT_FROM_FWD), STEP_NEXT (not forwarded), or
 * XDPR_TX_ICMP_TTL (its TTL runs out here: answered untranslated).
 */
__noinline int nat4_fwd_lookup(struct xdp_md *ctx, struct pkt4_io *io, __u64 now)
{
	struct xdpr_bind_key bk = {};
	struct pkt4 pk, *p = &pk;
	struct xdpr_nat_rule *r;
	struct nat_scratch *sc;
	struct xdpr_cfg *cfg;
	struct xdpr_fwd *f;
	struct nat_req *q;
	__u32 zero = 0;
	int reopen;

	if (!ctx || !io || pkt4_view(ctx, io, p))
		return STEP_NEXT;
	if ((p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP) || !nat4_keyable(p, XDPR_CT_IN))
		return STEP_NEXT;
	bk.out_addr = p->iph->daddr;
	bk.out_port = p->dport;
	bk.proto = p->proto;
	f = bpf_map_lookup_elem(&xdpr_nat_fwd, &bk);
	if (!f)
		return STEP_NEXT;
	r = fwd_rule(f->rule, io->fwd_if);
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	sc = nat_scratch();
	if (!r || !cfg || !sc)
		return STEP_NEXT;
	if (p->iph->ttl <= 1)
		return XDPR_TX_ICMP_TTL;
	q = &sc->q;
	q->key.saddr = f->in_addr;
	q->key.daddr = p->iph->saddr;
	q->key.sport = f->in_port;
	q->key.dport = p->sport;
	q->key.proto = p->proto;
	q->key.dir = XDPR_CT_OUT;
	q->key.pad[0] = q->key.pad[1] = 0; /* keys are hashed whole */
	q->r = *r;
	q->cfg = *cfg;
	q->now = now;
	q->out_addr = bk.out_addr;
	q->port = bk.out_port;
	q->gen = 0;
	q->rule_id = f->rule;
	q->state = nat4_state_bits(p, XDPR_CT_IN, &reopen);
	q->from_in = NAT_FROM_FWD;
	q->rescan = 0;
	return STEP_NAT_FWD;
}

/* The packet of the request nat4_fwd_lookup made, to the inside host.  STEP_NEXT. */
__noinline int nat4_fwd_xlate(struct xdp_md *ctx, struct pkt4_io *io)
{
	struct nat_scratch *sc = nat_scratch();
	struct pkt4 pk, *p = &pk;

	if (!ctx || !io || !sc || pkt4_view(ctx, io, p))
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	nat4_xlate(p, XDPR_CT_IN, sc->q.key.saddr, sc->q.key.sport);
	p->reversed = 1;
	pkt4_back(p, io);
	return STEP_NEXT;
}

/*
 * After nat4_reverse left the packet as it was: a port forward's new flow?
 * Translated then (io->fwd_new set; its session comes once the filter has
 * judged it).  STEP_NEXT, or an exit (XDPR_TX_ICMP_TTL: answer it).
 */
__noinline int nat4_fwd_in(struct xdp_md *ctx, struct pkt4_io *io)
{
	int step;

	if (!ctx || !io || !io->fwd_if || io->reversed)
		return STEP_NEXT;
	step = nat4_fwd_lookup(ctx, io, io->now);
	if (step != STEP_NAT_FWD)
		return step;
	step = nat4_fwd_xlate(ctx, io);
	if (step == STEP_NEXT)
		io->fwd_new = 1;
	return step;
}

/*
 * The session of the request (the packet is translated already).
 * STEP_NEXT, or the drop reason (counted per rule).
 */
__noinline int nat4_fwd_create(struct xdp_md *ctx)
{
	struct nat_scratch *sc = nat_scratch();
	int ev;

	if (!ctx || !sc)
		return XDPR_DROP_NAT_FULL;
	ev = nat_create(ctx);
	if (ev == XDPR_NE_ADOPTED)
		nat_count(sc->q.rule_id, XDPR_NE_ADOPTED);
	else if (ev >= 0) {
		nat_count(sc->q.rule_id, ev);
		return nat_event_reason(ev);
	}
	nat_count(sc->q.rule_id, XDPR_NE_XLATE_IN);
	return STEP_NEXT;
}

/*
 * Outbound through an interface forwards arrive on, from a source none of
 * its source NAT rules covers: a forward's session (or an ICMP error about
 * one) is translated back; anything else goes on as it is.  STEP_NEXT.
 */
__noinline int nat4_fwd_reply(struct xdp_md *ctx, struct pkt4_io *io, __u64 now)
{
	struct pkt4 pk, *p = &pk;
	struct xdpr_ct_val *v;
	struct xdpr_ct_key k;
	struct xdpr_cfg *cfg;
	__u32 zero = 0;
	int reopen;
	__u8 bits, state;

	if (!ctx || !io || pkt4_view(ctx, io, p))
		return STEP_NEXT;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!cfg)
		return STEP_NEXT;
	if (p->proto == IPPROTO_ICMP && p->icmp_err) {
		nat4_icmp_err(p, XDPR_CT_OUT);
		return STEP_NEXT;
	}
	if ((p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP) || !nat4_keyable(p, XDPR_CT_OUT))
		return STEP_NEXT;
	nat4_key(p, XDPR_CT_OUT, &k);
	v = ct_lookup(&k);
	if (!v || v->bind_gen)
		return STEP_NEXT; /* not a forward's */
	bits = nat4_state_bits(p, XDPR_CT_OUT, &reopen);
	if (now - v->last_seen > nat_timeout(cfg, k.proto, v->state | bits) &&
	    nat_idle(&k, v, now, &state) > nat_timeout(cfg, k.proto, state | bits)) {
		struct xdpr_ct_val ov = *v;

		if (!nat_frozen() && nat_sess_delete(&k, &ov, now))
			nat_count(ov.rule, XDPR_NE_SESS_EXPIRED);
		return STEP_NEXT;
	}
	nat_touch(cfg, &k, v, bits, reopen, now);
	nat4_xlate(p, XDPR_CT_OUT, v->xaddr, v->xport);
	nat_count(v->rule, XDPR_NE_XLATE_OUT);
	pkt4_back(p, io);
	return STEP_NEXT;
}

#endif /* XDPR_NAT_FWD_H */
