/* SPDX-License-Identifier: GPL-2.0 */
/*
 * step.h - what a step of the packet path returns: an enum xdpr_reason
 * (>= 0: the packet leaves with that reason) or one of these (< 0: the
 * packet goes on, and what to do next).  FIB return codes are never
 * returned as either; they stay in their own variables.
 */
#ifndef XDPR_STEP_H
#define XDPR_STEP_H

enum xdpr_step {
	STEP_NEXT       = -1, /* go on to the next step */
	STEP_RT_FIB     = -2, /* route4: a via route; the FIB resolved its next hop */
	STEP_HAIRPIN    = -3, /* nat4_hairpin: translate through the binding's interface */
	STEP_NAT_CREATE = -4, /* a NAT step's request for a session is ready: nat4_create */
	STEP_FLT_REJECT = -5, /* the filter: a reject rule matched, answer the packet */
	STEP_FILTER     = -6, /* fwd_ip6: the filter's view is ready, run the filter */
	STEP_NAT_FWD    = -7, /* nat4_fwd_lookup: a port forward's new flow (request in the scratch) */
	STEP_NAT_NORULE = -8, /* nat4_snat: no rule covers the source (a forward's reply may: nat4_fwd_reply) */
	STEP_BINAT      = -9, /* binat4_out: translated by a 1:1 rule (no source NAT after it) */
	STEP_BINAT_FLT  = -10, /* binat4_out: a 1:1 rule applies; the filter first, untranslated */
	STEP_NBR_DEAD   = -11, /* nbr4_snat: the next hop failed to resolve: nbr4_unreach answers */
};

#endif /* XDPR_STEP_H */
