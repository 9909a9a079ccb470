/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nat.h - the two source-NAT steps of the packet path (IPv4):
 *   nat4_reverse  a packet arriving on a NAT interface for a binding:
 *                 translate the destination back to the inside host
 *   nat4_snat     a packet leaving through a NAT interface: find or create
 *                 the session, translate the source
 * and the guard that keeps inside sources off an interface whose NAT rule
 * lost its device (nat_if_gone).  The steps are global functions, verified
 * once whatever calls them; they see the packet through struct pkt4_io.
 * The session table is nat_sess.h, ports nat_bind.h, rewriting nat_xlate.h.
 */
#ifndef XDPR_NAT_H
#define XDPR_NAT_H

#include "nat_sess.h"
#include "nat_xlate.h"
#include "step.h"


/*
 * After a session's packet: refresh it (at most 4 times a second) and,
 * once a bind_period, its binding; new state bits to both halves.
 */
static __always_inline void nat_touch(const struct xdpr_cfg *cfg, const struct xdpr_ct_key *k,
				      struct xdpr_ct_val *v, __u8 bits, int reopen, __u64 now)
{
	struct xdpr_ct_key o;
	struct xdpr_ct_val *ov;
	__u8 old = v->state;

	/* write only what changed: a busy flow does not dirty the entry per packet */
	if (now - v->last_seen > NSEC / 4) {
		__u64 period = bind_period(cfg, k->proto);

		if (now / period != v->last_seen / period) {
			if (k->dir == XDPR_CT_OUT)
				bind_refresh(v->xaddr, v->xport, k->proto, v->bind_gen, now);
			else
				bind_refresh(k->daddr, k->dport, k->proto, v->bind_gen, now);
		}
		v->last_seen = now;
	}
	/* a SYN on a closed connection reopens it: its old FIN/RST bits go */
	if (reopen && (old & (XDPR_CT_FIN_OUT | XDPR_CT_FIN_IN | XDPR_CT_RST))) {
		v->state = bits;
		ct_other_key(k, v, &o);
		ov = ct_lookup(&o);
		if (ov)
			ov->state = 0;
		return;
	}
	if ((old | bits) == old)
		return;
	v->state = old | bits;
	ct_other_key(k, v, &o);
	ov = ct_lookup(&o);
	if (ov && (ov->state | bits) != ov->state)
		ov->state |= bits;
}

static __always_inline int nat_event_reason(int ev)
{
	switch (ev) {
	case XDPR_NE_NO_PORT:    return XDPR_DROP_NAT_NO_PORT;
	case XDPR_NE_HOST_LIMIT: return XDPR_DROP_NAT_HOST_LIMIT;
	case XDPR_NE_TABLE_FULL: return XDPR_DROP_NAT_FULL;
	case XDPR_NE_BUSY:       return XDPR_DROP_NAT_BUSY;
	case XDPR_NE_RESIZING:   return XDPR_DROP_NAT_RESIZING;
	}
	return XDPR_DROP_NAT_UNTRANSLATABLE;
}

/*
 * Inbound: a packet to a NAT binding.  Translates the destination back
 * (existing session, or a new one where the rule filters endpoint-
 * independently).  A packet for a session whose TTL runs out here returns
 * XDPR_TX_ICMP_TTL, untranslated: the caller answers it (icmp4_send).
 * Returns STEP_NEXT to go on routing (io->reversed when translated; io->orig_*
 * keep the destination as it arrived), STEP_NAT_CREATE, or an xdpr_reason.
 */
__noinline int nat4_reverse(struct xdp_md *ctx, struct pkt4_io *io, __u64 now)
{
	struct xdpr_cfg *cfg;
	struct xdpr_ct_key k;
	struct xdpr_ct_val *v;
	struct pkt4 pk, *p = &pk;
	__u32 zero = 0;
	int reopen;
	__u8 bits, state;

	if (!ctx || !io || pkt4_view(ctx, io, p))
		return STEP_NEXT;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!cfg)
		return STEP_NEXT;
	io->orig_daddr = p->iph->daddr;
	io->orig_dport = p->dport;
	if (p->proto == IPPROTO_ICMP && p->icmp_err) {
		if (p->iph->ttl > 1 && nat4_icmp_err(p, XDPR_CT_IN) > 0)
			p->reversed = 1;
		pkt4_back(p, io);
		return STEP_NEXT;
	}
	if (!nat4_keyable(p, XDPR_CT_IN))
		return STEP_NEXT;
	nat4_key(p, XDPR_CT_IN, &k);
	v = ct_lookup(&k);
	if (v) {
		bits = nat4_state_bits(p, XDPR_CT_IN, &reopen);
		if (now - v->last_seen > nat_timeout(cfg, k.proto, v->state | bits)) {
			struct xdpr_ct_key ok;
			struct xdpr_ct_val *ov;

			ct_other_key(&k, v, &ok);
			ov = ct_lookup(&ok);
			if (!ov) {
				/* a lone inbound half cannot be trusted */
				if (!nat_frozen()) {
					ct_delete(&k);
					nat_count(v->rule, XDPR_NE_PAIR_REPAIRED);
				}
				return STEP_NEXT;
			}
			if (nat_idle(&ok, ov, now, &state) > nat_timeout(cfg, k.proto, state | bits)) {
				if (!nat_frozen())
					nat_sweep_key(&ok, ov, now, cfg, 0);
				return STEP_NEXT;
			}
		}
		if (p->iph->ttl <= 1)
			return XDPR_TX_ICMP_TTL; /* the kernel would answer as the router itself */
		nat_touch(cfg, &k, v, bits, reopen, now);
		nat4_xlate(p, XDPR_CT_IN, v->xaddr, v->xport);
		nat_count(v->rule, XDPR_NE_XLATE_IN);
		p->reversed = 1;
		pkt4_back(p, io);
		return STEP_NEXT;
	}

	/* No session: is it a binding, and does its rule let strangers in? */
	if (p->proto != IPPROTO_ICMP) {
		struct xdpr_bind *b = bind_lookup(k.daddr, k.dport, k.proto);
		struct nat_scratch *sc;
		struct xdpr_nat_rule *r;
		struct nat_req *q;
		__u32 rid;

		if (!b || (READ_ONCE_U64(b->state) & XDPR_BIND_DYING))
			return STEP_NEXT;
		rid = b->rule;
		r = bpf_map_lookup_elem(&xdpr_nat_rules, &rid);
		if (!r || !(r->flags & XDPR_NAT_EIF)) {
			nat_count(rid, XDPR_NE_FILTERED);
			return XDPR_PASS_NAT_FILTERED;
		}
		if (p->iph->ttl <= 1)
			return XDPR_TX_ICMP_TTL;
		/* endpoint-independent filtering: open the session from this side */
		sc = nat_scratch();
		if (!sc)
			return STEP_NEXT;
		q = &sc->q;
		q->key.saddr = b->in_addr;
		q->key.daddr = k.saddr;
		q->key.sport = b->in_port;
		q->key.dport = k.sport;
		q->key.proto = k.proto;
		q->key.dir = XDPR_CT_OUT;
		q->key.pad[0] = q->key.pad[1] = 0; /* keys are hashed whole */
		q->r = *r;
		q->cfg = *cfg;
		q->now = now;
		q->out_addr = k.daddr;
		q->rule_id = rid;
		q->state = nat4_state_bits(p, XDPR_CT_IN, &reopen);
		q->from_in = 1;
		return STEP_NAT_CREATE;
	}
	return STEP_NEXT;
}

/*
 * Outbound: the packet leaves through an interface with NAT rules (copied
 * into io->out_rules by the caller, which looked the interface up).  Finds
 * the rule for its source, then the session (or creates it), and rewrites
 * the source.  fib_src is the masquerade address the FIB gave
 * (0 if none).  Returns STEP_NEXT to go on, STEP_NAT_CREATE (the request for a new
 * session is in the scratch: nat4_create), STEP_NAT_NORULE (no rule covers
 * the source and the interface has port forwards: nat4_fwd_reply), or an
 * xdpr_reason (drops are counted per rule too).
 */
__noinline int nat4_snat(struct xdp_md *ctx, struct pkt4_io *io, __be32 fib_src, __u64 now)
{
	struct xdpr_nat_rule *r = NULL;
	struct nat_scratch *sc;
	struct xdpr_cfg *cfg;
	struct nat_req *q;
	struct xdpr_ct_val *v;
	struct pkt4 pk, *p = &pk;
	__be32 saddr, out_addr;
	__u32 rid = 0, zero = 0;
	int reopen;
	__u8 bits;

	if (!ctx || !io || pkt4_view(ctx, io, p))
		return STEP_NEXT;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!cfg)
		return STEP_NEXT;
	saddr = p->iph->saddr;
	for (int i = 0; i < XDPR_NAT_IF_RULES; i++) {
		__u32 id;

		if (i >= io->out_nrules)
			break;
		id = io->out_rules[i];
		r = bpf_map_lookup_elem(&xdpr_nat_rules, &id);
		if (r && r->ifindex && !(r->flags & XDPR_NAT_FWD) && (saddr & r->src_mask) == r->src_net) {
			rid = id;
			break;
		}
		r = NULL;
	}
	if (!r) /* not an inside source of this interface; perhaps a forward's inside host */
		return io->out_fwd ? STEP_NAT_NORULE : STEP_NEXT;

	if (r->flags & XDPR_NAT_MASQ)
		out_addr = (cfg->flags & XDPR_CFG_FIB_SRC) ? fib_src : r->masq_addr;
	else
		out_addr = nat_pool_addr(r, saddr);
	if (!out_addr) {
		/* masquerade to an interface without an IPv4 address: never untranslated */
		nat_count(rid, XDPR_NE_NO_ADDR);
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	}
	if (saddr == out_addr)
		return STEP_NEXT;

	if (p->proto == IPPROTO_ICMP && p->icmp_err) {
		if (nat4_icmp_err(p, XDPR_CT_OUT) > 0)
			return STEP_NEXT;
		nat_count(rid, XDPR_NE_UNTRANSLATABLE);
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	}
	if (!nat4_keyable(p, XDPR_CT_OUT)) {
		nat_count(rid, XDPR_NE_UNTRANSLATABLE);
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	}
	sc = nat_scratch();
	if (!sc)
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	q = &sc->q;
	nat4_key(p, XDPR_CT_OUT, &q->key);
	bits = nat4_state_bits(p, XDPR_CT_OUT, &reopen);
	v = ct_lookup(&q->key);
	if (v) {
		int dead = 0;

		q->out = *v;
		/* a port forward's session (another rule) keeps the forward's address */
		if (q->out.xaddr != out_addr && (r->flags & XDPR_NAT_MASQ) && q->out.bind_gen) {
			nat_count(rid, XDPR_NE_ADDR_CHANGED); /* interface address moved */
			dead = 1;
		} else if (now - q->out.last_seen > nat_timeout(cfg, q->key.proto, q->out.state | bits)) {
			__u8 state;

			if (nat_idle(&q->key, &q->out, now, &state) >
			    nat_timeout(cfg, q->key.proto, state | bits))
				dead = 2;
		}
		/*
		 * No per-packet check of the inbound half: with plain hash maps
		 * halves only part during a deletion (inbound first), and the
		 * deleter removes this half right after.
		 */
		if (!dead) {
			nat_touch(cfg, &q->key, v, bits, reopen, now);
			nat4_xlate(p, XDPR_CT_OUT, q->out.xaddr, q->out.xport);
			nat_count(q->out.bind_gen ? rid : q->out.rule, XDPR_NE_XLATE_OUT);
			pkt4_back(p, io);
			return STEP_NEXT;
		}
		/* timed out: counted as expired; moved: counted above */
		if (!nat_frozen() && nat_sess_delete(&q->key, &q->out, now) && dead == 2)
			nat_count(q->out.rule, XDPR_NE_SESS_EXPIRED);
	}
	q->r = *r;
	q->cfg = *cfg;
	q->now = now;
	q->out_addr = out_addr;
	q->rule_id = rid;
	q->state = bits;
	q->from_in = 0;
	return STEP_NAT_CREATE;
}

/*
 * The packet of a session nat4_create just made (or adopted): translate it
 * (outbound: its source; opened from outside: its destination).  Global:
 * the packet view and the rewrite stay off nat4_create's frame, which is
 * on the call chain of every creation step.  Returns STEP_NEXT, or an
 * xdpr_reason.
 */
__noinline int nat4_xlate_new(struct xdp_md *ctx, struct pkt4_io *io)
{
	struct nat_scratch *sc = nat_scratch();
	struct pkt4 pk, *p = &pk;
	struct nat_req *q;

	if (!ctx || !io || !sc || pkt4_view(ctx, io, p))
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	q = &sc->q;
	if (q->from_in) {
		nat4_xlate(p, XDPR_CT_IN, q->key.saddr, q->key.sport);
		nat_count(q->rule_id, XDPR_NE_XLATE_IN);
		p->reversed = 1;
	} else {
		nat4_xlate(p, XDPR_CT_OUT, q->out.xaddr, q->out.xport);
		nat_count(q->rule_id, XDPR_NE_XLATE_OUT);
	}
	pkt4_back(p, io);
	return STEP_NEXT;
}

/*
 * Second half of a NAT step that asked for a session (STEP_NAT_CREATE): create
 * the session the scratch request describes, then translate the packet
 * (nat4_xlate_new).  Kept apart from the steps so that no call chain nests
 * deeper than the BPF stack allows; its own frame holds little more than
 * its arguments, every step it calls being global (6.1 adds each frame of
 * a chain, rounded up to 32 bytes, bpf_loop callbacks included, within
 * 512).  Returns STEP_NEXT to go on, or an xdpr_reason.
 */
__noinline int nat4_create(struct xdp_md *ctx, struct pkt4_io *io)
{
	struct nat_scratch *sc = nat_scratch();
	struct nat_req *q;
	int ev;

	if (!ctx || !io || !sc)
		return XDPR_DROP_NAT_FULL;
	q = &sc->q;
	ev = nat_create(ctx);
	if (ev == XDPR_NE_ADOPTED) {
		nat_count(q->rule_id, XDPR_NE_ADOPTED);
	} else if (ev >= 0) {
		if (q->from_in)
			return XDPR_PASS_NAT_FILTERED;
		nat_count(q->rule_id, ev);
		if (ev == XDPR_NE_NO_PORT || ev == XDPR_NE_HOST_LIMIT) /* rate limited: natlog.h */
			natlog_put(ev == XDPR_NE_NO_PORT ? XDPR_NL_PORTS : XDPR_NL_QUOTA, &q->key,
				   q->out_addr, 0, q->rule_id);
		return nat_event_reason(ev);
	}
	return nat4_xlate_new(ctx, io);
}

/*
 * A packet the kernel would forward out of an interface xdpr does not
 * translate: is its source inside a NAT rule whose interface is gone
 * (deleted; the kernel dropped its redirect entry)?  Until the CLI re-binds
 * the rule to the interface of the same name, such a source must not leave
 * untranslated.  egress: an interface attached while rules wait for its
 * name (XDPR_IF_NAT_PENDING), so a rule still naming its ifindex (one
 * re-created with the same ifindex) counts as gone too; 0 otherwise.  Only
 * on the slow path; 1 if the packet must be dropped.
 */
__noinline int nat_if_gone(__be32 saddr, __u32 egress)
{
	for (int id = 1; id < XDPR_NAT_MAX_RULES; id++) {
		__u32 key = id, ifindex;
		struct xdpr_nat_rule *r = bpf_map_lookup_elem(&xdpr_nat_rules, &key);

		if (!r || !r->ifindex || (r->flags & (XDPR_NAT_RETIRED | XDPR_NAT_FWD)) ||
		    (saddr & r->src_mask) != r->src_net)
			continue;
		ifindex = r->ifindex;
		if ((egress && ifindex == egress) || !bpf_map_lookup_elem(&xdpr_tx_ports, &ifindex))
			return 1;
	}
	return 0;
}

#endif /* XDPR_NAT_H */
