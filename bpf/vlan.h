/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vlan.h - 802.1Q VLANs of attached ports, in XDP.
 *
 * A tagged frame whose VID is a VLAN of its port (xdpr_vlans, two array
 * lookups from the port's trunk number: xdpr_shared.h) has its tag
 * taken off at once (vlan_in) and goes through the path as the VLAN's:
 * FIB lookup, filter, NAT and counters see the VLAN as ingress interface.
 * At the exit (vlan_out) the frame gets the tag it needs:
 *   redirected out of a VLAN   the egress VLAN's tag (push or, for a frame
 *                              that came tagged, rewrite)
 *   redirected out of a port   none (pop)
 *   handed to the kernel       the tag it came with, so the kernel sees the
 *                              frame exactly as it arrived
 *   answered (XDP_TX)          the ingress VLAN's tag
 * The PCP of a tag xdpr sets is the kernel's: the VLAN's egress-qos-map of
 * the packet's priority, which for IPv4 ip_forward derives from the TOS
 * (rt_tos2priority) and for IPv6 is the ingress VLAN's ingress-qos-map of
 * the PCP it came with (0 untagged); DEI 0.  The loader writes the maps as
 * tables (struct xdpr_iface in_prio, pcp).
 *
 * Not handled here, to the kernel and counted: VIDs the port has no VLAN
 * for, VID 0 (priority tags) and VLANs that are down (pass_vlan); 802.1ad
 * outer tags and stacked tags (pass_vlan_qinq).
 */
#ifndef XDPR_VLAN_H
#define XDPR_VLAN_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include "xdpr_shared.h"
#include "maps.h"
#include "parse.h"
#include "step.h"

#define VLAN_HLEN 4

/*
 * The 12 address bytes at p into l2->mac, or back: three 32-bit words, not
 * a byte-wise memcpy (a packet pointer has no known alignment: clang would
 * move them byte by byte, 48 instructions a move).  Needs an architecture
 * without strict alignment (x86-64, arm64): the verifier refuses the
 * program elsewhere, it never misreads.
 */
static __always_inline void macs_save(struct xdpr_l2 *l2, const void *p)
{
	const __u32 *w = p;

	l2->mac[0] = w[0];
	l2->mac[1] = w[1];
	l2->mac[2] = w[2];
}

static __always_inline void macs_put(const struct xdpr_l2 *l2, void *p)
{
	__u32 *w = p;

	w[0] = l2->mac[0];
	w[1] = l2->mac[1];
	w[2] = l2->mac[2];
}

/*
 * A tagged frame on a port (ifindex): for one of its VLANs, the tag comes off and
 * *in becomes the VLAN's settings; STEP_NEXT, or the frame's exit reason.
 */
static __always_inline int vlan_in(struct xdp_md *ctx, __u32 port, struct xdpr_l2 *l2,
				   struct xdpr_iface **in)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct vlan_tag *tag = data + sizeof(*eth);
	struct xdpr_vlan_cfg *vc;
	struct xdpr_iface *vl;
	__u32 vif, vid, trunk, *v;
	__u16 tci;

	if ((void *)(eth + 1) > end || !eth_proto_is_vlan(eth->h_proto))
		return STEP_NEXT;
	if ((void *)(tag + 1) > end)
		return XDPR_DROP_SHORT;
	if (eth_proto_is_vlan(tag->proto)) /* both tags must really be there */
		return (void *)(tag + 2) > end ? XDPR_DROP_SHORT : XDPR_PASS_VLAN_QINQ;
	if (eth->h_proto != bpf_htons(ETH_P_8021Q))
		return XDPR_PASS_VLAN_QINQ;
	tci = bpf_ntohs(tag->tci);
	asm volatile("%0 &= 0xffff" : "+r"(tci)); /* bounded for older verifiers (6.1: in_prio[tci >> 13]) */
	vid = tci & 0xfff;
	trunk = *in ? (*in)->trunk : 0;
	if (!trunk || trunk > XDPR_MAX_TRUNKS)
		return XDPR_PASS_VLAN;
	l2->vkey = (trunk - 1) * XDPR_VIDS + vid;
	v = bpf_map_lookup_elem(&xdpr_vlans, &l2->vkey);
	if (!v || !*v)
		return XDPR_PASS_VLAN;
	l2->vslot = *v;
	vc = bpf_map_lookup_elem(&xdpr_vlan_cfg, &l2->vslot);
	/* an entry left behind leads nowhere but to this port's VLAN of this VID */
	if (!vc || !vc->ifindex || vc->cfg.parent != port || vc->cfg.vid != vid)
		return XDPR_PASS_VLAN;
	vif = vc->ifindex;
	vl = &vc->cfg;
	/* the addresses move up over the tag */
	macs_save(l2, eth);
	if (bpf_xdp_adjust_head(ctx, VLAN_HLEN))
		return XDPR_PASS_VLAN;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + sizeof(l2->mac) > end)
		return XDPR_DROP_SHORT; /* cannot be: 14 bytes are left of 18 */
	macs_put(l2, data);
	l2->in_if = vif;
	l2->in_tci = tci;
	l2->popped = 1;
	{
		__u32 pcp = tci >> 13;

		barrier_var(pcp); /* 6.12 refills a spilled tci unbounded: the mask must stay */
		l2->in_prio = vl->in_prio[pcp & 7];
	}
	*in = vl;
	return STEP_NEXT;
}

/* The tag of an answer (XDP_TX) out of VLAN vl: the PCP for the answer's own priority. */
static __always_inline __u16 vlan_tci(struct xdp_md *ctx, const struct xdpr_iface *vl,
				      const struct xdpr_l2 *l2)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	int tos = -1;

	if ((void *)(ip + 1) <= end && eth->h_proto == bpf_htons(ETH_P_IP))
		tos = ip->tos;
	return vlan_tci_of(vl, vlan_prio(l2, tos));
}

/* Put an 802.1Q tag in front of the frame's EtherType; 0, or -1 without headroom. */
static __always_inline int vlan_push(struct xdp_md *ctx, struct xdpr_l2 *l2, __u16 tci)
{
	void *data, *end;
	__be16 *t;

	if (bpf_xdp_adjust_head(ctx, -VLAN_HLEN))
		return -1;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + sizeof(struct ethhdr) + VLAN_HLEN > end)
		return -1;
	macs_save(l2, data + VLAN_HLEN);
	macs_put(l2, data);
	/* TPID and TCI after the addresses; the EtherType stays where it was, after them */
	t = data + sizeof(l2->mac);
	t[0] = bpf_htons(ETH_P_8021Q);
	t[1] = bpf_htons(tci);
	return 0;
}

/* The frame's tag for its exit (see the top of this file); the reason, or drop_vlan_push. */
static __always_inline int vlan_out(struct xdp_md *ctx, struct xdpr_l2 *l2, int reason)
{
	int verdict = xdpr_reason_verdict(reason);
	struct xdpr_iface *vl;
	__u32 vif;
	__u16 tci;

	if (verdict == XDP_REDIRECT && l2->out_vlan)
		tci = l2->out_tci; /* claim_egress's */
	else if (l2->popped && verdict == XDP_PASS)
		tci = l2->in_tci;
	else if (!l2->popped || verdict != XDP_TX)
		return reason;
	else { /* an answer out of the ingress VLAN */
		vif = l2->in_if;
		vl = bpf_map_lookup_elem(&xdpr_ifaces, &vif);
		if (!vl)
			return XDPR_DROP_VLAN_PUSH; /* removed meanwhile: no tag to give it */
		tci = vlan_tci(ctx, vl, l2);
	}
	return vlan_push(ctx, l2, tci) ? XDPR_DROP_VLAN_PUSH : reason;
}

#endif /* XDPR_VLAN_H */
