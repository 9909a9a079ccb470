// SPDX-License-Identifier: GPL-2.0
/* reasons.c - user-visible names of the datapath's exit reasons. */
#include "libxdpr.h"

/* the names and descriptions of bpf/reasons.h's list, by number */
static const struct {
	const char *name;
	const char *desc;
} reasons[XDPR_REASON_MAX] = {
#define XDPR_R_TEXT(e, v, n, d) [e] = { n, d },
	XDPR_REASONS(XDPR_R_TEXT)
#undef XDPR_R_TEXT
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
