/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hairpin.h - an inside host addressing a NAT binding of the router (the
 * FIB calls the destination local): the packet is translated as if it left
 * through the binding's interface (source) and then arrived there
 * (destination), RFC 4787 REQ-9.  This step only decides; the packet path
 * runs the two NAT steps (nat4_snat, nat4_reverse) itself.  A port forward
 * of the router is reflected the same way (pf's reflection): the inside
 * host's source is translated by its source NAT rule on the forward's
 * interface, then the forward takes the packet to its inside host, whose
 * replies come back to the router and hairpin through the client's binding.
 */
#ifndef XDPR_HAIRPIN_H
#define XDPR_HAIRPIN_H

#include "nat.h"

/*
 * Returns STEP_HAIRPIN (io->hp_*, io->out_rules set), STEP_NEXT (not a binding), or an
 * xdpr_reason (filtered).  Global: verified once, its own stack.
 */
__noinline int nat4_hairpin(struct xdp_md *ctx, struct pkt4_io *io)
{
	struct xdpr_bind_key bk = {};
	struct pkt4 pk, *p = &pk;
	struct xdpr_iface *out;
	struct xdpr_nat_rule *r;
	struct xdpr_bind *b;
	__u32 rid, ifindex;
	int err = 0;

	if (!ctx || !io || pkt4_view(ctx, io, p))
		return STEP_NEXT;
	if (p->proto == IPPROTO_ICMP && p->icmp_err) {
		/*
		 * An inside host's error about a hairpinned flow (a reflected
		 * forward's server, say) goes to the binding its quoted packet
		 * came from.  No filtering: the two NAT steps translate an error
		 * only for the sessions it quotes.
		 */
		struct icmp4hdr *ic = p->l4;
		struct iphdr *e = (void *)(ic + 1);
		__be16 *ports = (void *)(e + 1);

		if (!ic || !pkt4_has(p, ic, sizeof(*ic)) || !pkt4_has(p, e, sizeof(*e)) || e->ihl != 5 ||
		    (e->protocol != IPPROTO_TCP && e->protocol != IPPROTO_UDP) || !pkt4_has(p, ports, 4) ||
		    e->saddr != p->iph->daddr)
			return STEP_NEXT;
		bk.out_addr = e->saddr;
		bk.out_port = ports[0];
		bk.proto = e->protocol;
		b = nat_lookup(&xdpr_nat_bind, &bk);
		if (!b)
			return STEP_NEXT;
		err = 1;
		goto bound;
	}
	if (!nat4_keyable(p, XDPR_CT_OUT) || p->proto == IPPROTO_ICMP)
		return STEP_NEXT;
	bk.out_addr = p->iph->daddr;
	bk.out_port = p->dport;
	bk.proto = p->proto;
	b = nat_lookup(&xdpr_nat_bind, &bk);
	if (!b) {
		struct xdpr_fwd *f = bpf_map_lookup_elem(&xdpr_nat_fwd, &bk);

		if (!f)
			return STEP_NEXT;
		rid = f->rule;
		r = bpf_map_lookup_elem(&xdpr_nat_rules, &rid);
		if (!r || !(r->flags & XDPR_NAT_FWD) || r->pending || (r->flags & XDPR_NAT_RETIRED))
			return STEP_NEXT;
		ifindex = r->ifindex;
		out = bpf_map_lookup_elem(&xdpr_ifaces, &ifindex);
		if (!out)
			return STEP_NEXT;
		pkt4_io_rules(io, out);
		io->fwd_if = ifindex; /* the forward applies as if it arrived there */
		io->hp_addr = bk.out_addr;
		io->hp_rule = rid;
		return STEP_HAIRPIN;
	}
bound:
	rid = b->rule;
	r = bpf_map_lookup_elem(&xdpr_nat_rules, &rid);
	if (!r)
		return STEP_NEXT;
	ifindex = r->ifindex;
	out = bpf_map_lookup_elem(&xdpr_ifaces, &ifindex);
	if (!out)
		return STEP_NEXT;
	/*
	 * Filtering first, so a refused packet goes to the kernel untouched:
	 * without EIF, the binding must already talk to this host's outside
	 * endpoint (its mapping under the same rule).  An error is not filtered.
	 */
	if (!err && !(r->flags & XDPR_NAT_EIF)) {
		struct xdpr_eim_key ek = { .in_addr = p->iph->saddr, .in_port = p->sport,
					   .proto = p->proto, .rule = rid };
		struct xdpr_eim_val *e;
		struct xdpr_ct_key ik = {};

		/* a session of this very flow (a reflected forward's server replying): allowed */
		nat4_key(p, XDPR_CT_OUT, &ik);
		if (ct_lookup(&ik))
			goto allowed;
		__builtin_memset(&ik, 0, sizeof(ik));
		e = nat_lookup(&xdpr_nat_eim, &ek);
		if (e) {
			ik.saddr = e->out_addr;
			ik.daddr = bk.out_addr;
			ik.sport = e->out_port;
			ik.dport = bk.out_port;
			ik.proto = p->proto;
			ik.dir = XDPR_CT_IN;
		}
		if (!e || !ct_lookup(&ik)) {
			nat_count(rid, XDPR_NE_FILTERED);
			return XDPR_PASS_NAT_FILTERED;
		}
	}
allowed:
	pkt4_io_rules(io, out);
	io->fwd_if = 0;
	io->hp_addr = bk.out_addr; /* the masquerade address the FIB would give */
	io->hp_rule = rid;
	return STEP_HAIRPIN;
}

#endif /* XDPR_HAIRPIN_H */
