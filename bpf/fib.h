/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fib.h - what both forwarding paths share: bpf_fib_lookup results as
 * reasons, the egress claim and the L2 rewrite.
 */
#ifndef XDPR_FIB_H
#define XDPR_FIB_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include "xdpr_shared.h"
#include "maps.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif

static __always_inline int fib_reason(int rc)
{
	switch (rc) {
	case BPF_FIB_LKUP_RET_BLACKHOLE:    return XDPR_PASS_FIB_BLACKHOLE;
	case BPF_FIB_LKUP_RET_UNREACHABLE:  return XDPR_PASS_FIB_UNREACH;
	case BPF_FIB_LKUP_RET_PROHIBIT:     return XDPR_PASS_FIB_PROHIBIT;
	case BPF_FIB_LKUP_RET_NOT_FWDED:    return XDPR_PASS_FIB_NOT_FWDED;
	case BPF_FIB_LKUP_RET_FWD_DISABLED: return XDPR_PASS_FIB_FWD_DISABLED;
	case BPF_FIB_LKUP_RET_UNSUPP_LWT:   return XDPR_PASS_FIB_UNSUPP_LWT;
	case BPF_FIB_LKUP_RET_NO_NEIGH:     return XDPR_PASS_FIB_NO_NEIGH;
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:  return XDPR_PASS_FIB_FRAG_NEEDED;
	}
	return XDPR_PASS_FIB_OTHER;
}

/*
 * The FIB found a next hop: can the fast path transmit there?  Claims the
 * redirect before anything in the frame is changed, so a frame that goes to
 * the kernel instead is handed over exactly as it arrived.
 */
static __always_inline int claim_egress(const struct xdpr_iface *in, __u32 egress, int tos)
{
	struct xdpr_iface *out = iface_get(egress, XDPR_IFC_OUT);
	struct xdpr_l2 *l2 = l2_scratch();
	struct xdpr_cfg *cfg;
	__u32 port = egress, zero = 0;

	if (!out || !l2)
		return XDPR_PASS_EGRESS_NOT_XDPR;
	/* Generic-mode ingress transmits through the stack: any device works. */
	if (!(in->flags & XDPR_IF_GENERIC) && !(out->flags & XDPR_IF_XMIT))
		return XDPR_PASS_EGRESS_NO_XMIT;
	/* netfilter's forward rules would be bypassed: the kernel forwards it, where they apply */
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (cfg && (cfg->flags & XDPR_CFG_NFT_POLICY))
		return XDPR_PASS_NFT_POLICY;
	/* a VLAN's frames leave through its port, tagged on the way out (vlan_out) */
	if (out->flags & XDPR_IF_VLAN)
		port = out->parent;
	if (bpf_redirect_map(&xdpr_tx_ports, port, XDP_PASS) != XDP_REDIRECT)
		return XDPR_PASS_EGRESS_NOT_XDPR;
	l2->out_vlan = port != egress ? egress : 0;
	if (port != egress) /* the tag now, while out is at hand (nothing after changes the TOS) */
		l2->out_tci = vlan_tci_of(out, vlan_prio(l2, tos));
	return XDPR_FWD;
}

static __always_inline void rewrite_l2(struct ethhdr *eth, const struct bpf_fib_lookup *fib)
{
	__builtin_memcpy(eth->h_dest, fib->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib->smac, ETH_ALEN);
}

#endif /* XDPR_FIB_H */
