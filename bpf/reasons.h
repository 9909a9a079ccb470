/* SPDX-License-Identifier: GPL-2.0 */
/*
 * reasons.h - every way a frame leaves the program, in one list: the enum
 * (xdpr_shared.h), the verdict (xdpr_reason_verdict), the name `xdpr stats`
 * prints and its description (loader/reasons.c) are all made from it.
 *
 *   X(ENUM, VERDICT, "name", "description")   one reason a row
 *
 * VERDICT is REDIRECT, PASS, DROP or TX.  A row's place is its number, and
 * numbers are ABI (the per-CPU counters are indexed by them): append only.
 */
#ifndef XDPR_REASONS_H
#define XDPR_REASONS_H

#define XDPR_REASONS(X) \
	X(XDPR_FWD, REDIRECT, "forwarded", "redirected to the egress interface in XDP") \
	/* handed to the kernel (XDP_PASS) */ \
	X(XDPR_PASS_NOT_IP, PASS, "pass_not_ip", "not IPv4/IPv6 (ARP, LLDP, ...)") \
	X(XDPR_PASS_VLAN, PASS, "pass_vlan", "802.1Q tag of no attached VLAN (unknown VID, VID 0, VLAN down)") \
	X(XDPR_PASS_L2_OTHER, PASS, "pass_l2_other", "L2 broadcast/multicast or not this interface's MAC") \
	X(XDPR_PASS_IP4_HDR_ERR, PASS, "pass_ip4_hdr_err", "IPv4 version, IHL or total length invalid") \
	X(XDPR_PASS_IP4_CSUM, PASS, "pass_ip4_csum", "IPv4 header checksum invalid") \
	X(XDPR_PASS_IP4_OPTIONS, PASS, "pass_ip4_options", "IPv4 options present") \
	X(XDPR_PASS_IP4_FRAG, PASS, "pass_ip4_frag", "IPv4 fragment") \
	X(XDPR_PASS_IP6_HDR_ERR, PASS, "pass_ip6_hdr_err", "IPv6 version or payload length invalid") \
	X(XDPR_PASS_IP6_EXTHDR, PASS, "pass_ip6_exthdr", "IPv6 extension header") \
	X(XDPR_PASS_MARTIAN, PASS, "pass_martian", "loopback, link-local, unspecified or multicast source address") \
	X(XDPR_PASS_TTL, PASS, "pass_ttl", "TTL / hop limit would expire") \
	X(XDPR_PASS_FIB_BLACKHOLE, PASS, "pass_blackhole", "FIB: blackhole route") \
	X(XDPR_PASS_FIB_UNREACH, PASS, "pass_unreachable", "FIB: unreachable route") \
	X(XDPR_PASS_FIB_PROHIBIT, PASS, "pass_prohibit", "FIB: prohibit route") \
	X(XDPR_PASS_FIB_NOT_FWDED, PASS, "pass_not_fwded", "FIB: local, broadcast or multicast destination, or no route") \
	X(XDPR_PASS_FIB_FWD_DISABLED, PASS, "pass_fwd_disabled", "FIB: forwarding disabled on the ingress interface") \
	X(XDPR_PASS_FIB_UNSUPP_LWT, PASS, "pass_unsupp_lwt", "FIB: route needs a lightweight tunnel") \
	X(XDPR_PASS_FIB_NO_NEIGH, PASS, "pass_no_neigh", "FIB: next hop's MAC not resolved") \
	X(XDPR_PASS_FIB_FRAG_NEEDED, PASS, "pass_frag_needed", "larger than the egress MTU") \
	X(XDPR_PASS_FIB_OTHER, PASS, "pass_fib_other", "FIB: other lookup failure") \
	X(XDPR_PASS_EGRESS_NOT_XDPR, PASS, "pass_egress_not_xdpr", "egress interface not attached to xdpr") \
	X(XDPR_PASS_EGRESS_NO_XMIT, PASS, "pass_egress_no_xmit", "egress driver cannot transmit XDP frames") \
	X(XDPR_PASS_NO_IFACE, PASS, "pass_no_iface", "ingress interface not registered (an attach or detach cut short)") \
	X(XDPR_PASS_NAT_FILTERED, PASS, "pass_nat_filtered", "to a NAT binding from a remote it never addressed") \
	X(XDPR_PASS_ROUTE, PASS, "pass_route", "route map: pass route") \
	X(XDPR_PASS_ROUTE_GW, PASS, "pass_route_gw", "route map: gateway not reachable on its device") \
	/* dropped (XDP_DROP) */ \
	X(XDPR_DROP_SHORT, DROP, "drop_short", "frame shorter than its headers") \
	X(XDPR_DROP_NAT_NO_PORT, DROP, "drop_nat_no_port", "NAT: no free outside port in the rule's range") \
	X(XDPR_DROP_NAT_FULL, DROP, "drop_nat_full", "NAT: session table full") \
	X(XDPR_DROP_NAT_HOST_LIMIT, DROP, "drop_nat_host_limit", "NAT: inside host at its session limit") \
	X(XDPR_DROP_NAT_UNTRANSLATABLE, DROP, "drop_nat_untranslatable", "NAT: cannot be translated (fragment, protocol, ICMP error without session)") \
	X(XDPR_DROP_ROUTE_BLACKHOLE, DROP, "drop_blackhole", "route map: blackhole route") \
	X(XDPR_DROP_NAT_IF_GONE, DROP, "drop_nat_if_gone", "NAT: inside source whose outside interface is gone (rule not yet re-bound)") \
	X(XDPR_DROP_NAT_IN_NO_NEIGH, DROP, "drop_nat_in_no_neigh", "NAT: reply for an inside host whose MAC is unknown") \
	X(XDPR_DROP_NAT_IN_NO_ROUTE, DROP, "drop_nat_in_no_route", "NAT: reply for an inside host with no route") \
	X(XDPR_DROP_NAT_ICMP_LIMIT, DROP, "drop_nat_icmp_limit", "NAT: ICMP error from XDP over its rate limit") \
	X(XDPR_DROP_NAT_BUSY, DROP, "drop_nat_busy", "NAT: another CPU held the mapping being created too long") \
	X(XDPR_DROP_NAT_RESIZING, DROP, "drop_nat_resizing", "NAT: new session while the tables were copied to a new size") \
	/* answered in XDP (XDP_TX): ICMP errors about packets to a NAT binding, quoting the packet as it arrived */ \
	X(XDPR_TX_ICMP_FRAG, TX, "tx_icmp_frag", "NAT: fragmentation needed sent back from XDP (PMTUD to an inside host)") \
	X(XDPR_TX_ICMP_TTL, TX, "tx_icmp_ttl", "NAT: time exceeded sent back from XDP (packet to an inside host)") \
	/* the filter (filter.h), forwarded traffic only */ \
	X(XDPR_DROP_FILTER, DROP, "drop_filter", "filter: a drop rule matched") \
	X(XDPR_DROP_FILTER_POLICY, DROP, "drop_filter_policy", "filter: no rule matched, policy drop") \
	X(XDPR_DROP_FILTER_HDR, DROP, "drop_filter_hdr", "filter: cannot be classified (tiny first fragment, IPv6 header chain too long)") \
	X(XDPR_DROP_FILTER_REJECT_LIMIT, DROP, "drop_filter_reject_limit", "filter: a reject rule matched, answer over its rate limit") \
	X(XDPR_TX_FILTER_REJECT, TX, "tx_filter_reject", "filter: a reject rule matched, TCP RST or ICMP prohibited sent back") \
	/* VLANs */ \
	X(XDPR_PASS_VLAN_QINQ, PASS, "pass_vlan_qinq", "802.1ad outer tag or stacked VLAN tags") \
	X(XDPR_DROP_VLAN_PUSH, DROP, "drop_vlan_push", "no headroom to put the egress VLAN tag on") \
	/* DDoS defence */ \
	X(XDPR_DROP_DDOS_BAN, DROP, "drop_ddos_ban", "DDoS: its source or destination is banned") \
	/* netfilter rules XDP would bypass */ \
	X(XDPR_PASS_NFT_POLICY, PASS, "pass_nft_policy", "netfilter has forward rules XDP would bypass: the kernel forwards it (translated)") \
	/* neighbours */ \
	X(XDPR_TX_ICMP_HOST_UNREACH, TX, "tx_icmp_host_unreach", "NAT: host unreachable sent back from XDP (the next hop failed to resolve)")

#endif /* XDPR_REASONS_H */
