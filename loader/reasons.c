// SPDX-License-Identifier: GPL-2.0
/* reasons.c - user-visible names of the datapath's exit reasons. */
#include "libxdpr.h"

static const struct {
	const char *name;
	const char *desc;
} reasons[XDPR_REASON_MAX] = {
	[XDPR_FWD]                   = { "forwarded",        "redirected to the egress interface in XDP" },
	[XDPR_PASS_NOT_IP]           = { "pass_not_ip",      "not IPv4/IPv6 (ARP, LLDP, ...)" },
	[XDPR_PASS_VLAN]             = { "pass_vlan",        "802.1Q tag of no attached VLAN (unknown VID, VID 0, VLAN down)" },
	[XDPR_PASS_L2_OTHER]         = { "pass_l2_other",    "L2 broadcast/multicast or not this interface's MAC" },
	[XDPR_PASS_IP4_HDR_ERR]      = { "pass_ip4_hdr_err", "IPv4 version, IHL or total length invalid" },
	[XDPR_PASS_IP4_CSUM]         = { "pass_ip4_csum",    "IPv4 header checksum invalid" },
	[XDPR_PASS_IP4_OPTIONS]      = { "pass_ip4_options", "IPv4 options present" },
	[XDPR_PASS_IP4_FRAG]         = { "pass_ip4_frag",    "IPv4 fragment" },
	[XDPR_PASS_IP6_HDR_ERR]      = { "pass_ip6_hdr_err", "IPv6 version or payload length invalid" },
	[XDPR_PASS_IP6_EXTHDR]       = { "pass_ip6_exthdr",  "IPv6 extension header" },
	[XDPR_PASS_MARTIAN]          = { "pass_martian",     "loopback, link-local, unspecified or multicast source address" },
	[XDPR_PASS_TTL]              = { "pass_ttl",         "TTL / hop limit would expire" },
	[XDPR_PASS_FIB_BLACKHOLE]    = { "pass_blackhole",   "FIB: blackhole route" },
	[XDPR_PASS_FIB_UNREACH]      = { "pass_unreachable", "FIB: unreachable route" },
	[XDPR_PASS_FIB_PROHIBIT]     = { "pass_prohibit",    "FIB: prohibit route" },
	[XDPR_PASS_FIB_NOT_FWDED]    = { "pass_not_fwded",   "FIB: local, broadcast or multicast destination, or no route" },
	[XDPR_PASS_FIB_FWD_DISABLED] = { "pass_fwd_disabled","FIB: forwarding disabled on the ingress interface" },
	[XDPR_PASS_FIB_UNSUPP_LWT]   = { "pass_unsupp_lwt",  "FIB: route needs a lightweight tunnel" },
	[XDPR_PASS_FIB_NO_NEIGH]     = { "pass_no_neigh",    "FIB: next hop's MAC not resolved" },
	[XDPR_PASS_FIB_FRAG_NEEDED]  = { "pass_frag_needed", "larger than the egress MTU" },
	[XDPR_PASS_FIB_OTHER]        = { "pass_fib_other",   "FIB: other lookup failure" },
	[XDPR_PASS_EGRESS_NOT_XDPR]  = { "pass_egress_not_xdpr", "egress interface not attached to xdpr" },
	[XDPR_PASS_EGRESS_NO_XMIT]   = { "pass_egress_no_xmit",  "egress driver cannot transmit XDP frames" },
	[XDPR_PASS_NO_IFACE]         = { "pass_no_iface",    "ingress interface not registered (an attach or detach cut short)" },
	[XDPR_PASS_NAT_FILTERED]     = { "pass_nat_filtered", "to a NAT binding from a remote it never addressed" },
	[XDPR_PASS_ROUTE]            = { "pass_route",       "route map: pass route" },
	[XDPR_PASS_ROUTE_GW]         = { "pass_route_gw",    "route map: gateway not reachable on its device" },
	[XDPR_DROP_SHORT]            = { "drop_short",       "frame shorter than its headers" },
	[XDPR_DROP_NAT_NO_PORT]      = { "drop_nat_no_port", "NAT: no free outside port in the rule's range" },
	[XDPR_DROP_NAT_FULL]         = { "drop_nat_full",    "NAT: session table full" },
	[XDPR_DROP_NAT_HOST_LIMIT]   = { "drop_nat_host_limit", "NAT: inside host at its session limit" },
	[XDPR_DROP_NAT_UNTRANSLATABLE] = { "drop_nat_untranslatable", "NAT: cannot be translated (fragment, protocol, ICMP error without session)" },
	[XDPR_DROP_ROUTE_BLACKHOLE]  = { "drop_blackhole",   "route map: blackhole route" },
	[XDPR_DROP_NAT_IF_GONE]      = { "drop_nat_if_gone", "NAT: inside source whose outside interface is gone (rule not yet re-bound)" },
	[XDPR_DROP_NAT_IN_NO_NEIGH]  = { "drop_nat_in_no_neigh", "NAT: reply for an inside host whose MAC is unknown" },
	[XDPR_DROP_NAT_IN_NO_ROUTE]  = { "drop_nat_in_no_route", "NAT: reply for an inside host with no route" },
	[XDPR_DROP_NAT_ICMP_LIMIT]   = { "drop_nat_icmp_limit", "NAT: ICMP error from XDP over its rate limit" },
	[XDPR_DROP_NAT_BUSY]         = { "drop_nat_busy",    "NAT: another CPU held the mapping being created too long" },
	[XDPR_DROP_NAT_RESIZING]     = { "drop_nat_resizing", "NAT: new session while the tables were copied to a new size" },
	[XDPR_TX_ICMP_FRAG]          = { "tx_icmp_frag",     "NAT: fragmentation needed sent back from XDP (PMTUD to an inside host)" },
	[XDPR_TX_ICMP_TTL]           = { "tx_icmp_ttl",      "NAT: time exceeded sent back from XDP (packet to an inside host)" },
	[XDPR_DROP_FILTER]           = { "drop_filter",      "filter: a drop rule matched" },
	[XDPR_DROP_FILTER_POLICY]    = { "drop_filter_policy", "filter: no rule matched, policy drop" },
	[XDPR_DROP_FILTER_HDR]       = { "drop_filter_hdr",  "filter: cannot be classified (tiny first fragment, IPv6 header chain too long)" },
	[XDPR_DROP_FILTER_REJECT_LIMIT] = { "drop_filter_reject_limit", "filter: a reject rule matched, answer over its rate limit" },
	[XDPR_TX_FILTER_REJECT]      = { "tx_filter_reject", "filter: a reject rule matched, TCP RST or ICMP prohibited sent back" },
	[XDPR_PASS_VLAN_QINQ]        = { "pass_vlan_qinq",   "802.1ad outer tag or stacked VLAN tags" },
	[XDPR_DROP_VLAN_PUSH]        = { "drop_vlan_push",   "no headroom to put the egress VLAN tag on" },
	[XDPR_DROP_DDOS_BAN]         = { "drop_ddos_ban",    "DDoS: its source or destination is banned" },
	[XDPR_PASS_NFT_POLICY]       = { "pass_nft_policy",  "netfilter has forward rules XDP would bypass: the kernel forwards it (translated)" },
	[XDPR_TX_ICMP_HOST_UNREACH]  = { "tx_icmp_host_unreach", "NAT: host unreachable sent back from XDP (the next hop failed to resolve)" },
};

const char *xdpr_reason_name(int r)
{
	return r >= 0 && r < XDPR_REASON_MAX && reasons[r].name ? reasons[r].name : "unknown";
}

const char *xdpr_reason_desc(int r)
{
	return r >= 0 && r < XDPR_REASON_MAX && reasons[r].desc ? reasons[r].desc : "unknown";
}

static const char *const nat_events[XDPR_NE_MAX] = {
	[XDPR_NE_XLATE_OUT]      = "translated_out",
	[XDPR_NE_XLATE_IN]       = "translated_in",
	[XDPR_NE_SESS_NEW]       = "sessions_new",
	[XDPR_NE_SESS_EXPIRED]   = "sessions_expired",
	[XDPR_NE_SESS_EVICTED]   = "sessions_evicted",
	[XDPR_NE_PORT_PRESERVED] = "ports_preserved",
	[XDPR_NE_PORT_REUSED]    = "ports_reclaimed",
	[XDPR_NE_NO_PORT]        = "no_port",
	[XDPR_NE_TABLE_FULL]     = "table_full",
	[XDPR_NE_HOST_LIMIT]     = "host_limit",
	[XDPR_NE_UNTRANSLATABLE] = "untranslatable",
	[XDPR_NE_FILTERED]       = "filtered",
	[XDPR_NE_ICMP_ERR_OUT]   = "icmp_errors_out",
	[XDPR_NE_ICMP_ERR_IN]    = "icmp_errors_in",
	[XDPR_NE_HAIRPIN]        = "hairpinned",
	[XDPR_NE_ADDR_CHANGED]   = "addr_changed",
	[XDPR_NE_PAIR_REPAIRED]  = "pairs_repaired",
	[XDPR_NE_ADOPTED]        = "adopted",
	[XDPR_NE_PORT_SHADOWED]  = "ports_shadowed",
	[XDPR_NE_NO_ADDR]        = "no_address",
	[XDPR_NE_SWEEPS]         = "sweeps",
	[XDPR_NE_BUSY]           = "busy",
	[XDPR_NE_PROBES]         = "failed_probes",
	[XDPR_NE_RESIZING]       = "resizing",
	[XDPR_NE_LOG_LOST]       = "log_lost",
};

const char *xdpr_nat_event_name(int e)
{
	return e >= 0 && e < XDPR_NE_MAX && nat_events[e] ? nat_events[e] : "unknown";
}

const char *xdpr_mode_name(enum xdpr_mode mode)
{
	return mode == XDPR_MODE_SKB ? "skb" : "native";
}
