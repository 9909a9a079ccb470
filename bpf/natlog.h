/* SPDX-License-Identifier: GPL-2.0 */
/*
 * natlog.h - the NAT event log (xdpr_shared.h, "NAT event log"): one
 * record on the xdpr_natlog ring per session created or deleted, per
 * "no free port" and per "host at its limit", for xdprd to export as IPFIX
 * NAT events (RFC 8158).  Off unless xdpr_cfg.flags has XDPR_CFG_NATLOG.
 *
 * One global function writes every record, straight into the ring's
 * memory (nothing on the stack: it sits at the end of the NAT call chains,
 * the deepest of which the BPF stack limit bounds).  A full ring costs the
 * record, counted (XDPR_NE_LOG_LOST), never the packet.  "No port" and
 * "host limit" come with every packet of a flood: those two are logged at
 * most once a second per rule and CPU (xdpr_natlog_rl), so a flood cannot
 * fill the ring with them; the drop counters count them all.
 */
#ifndef XDPR_NATLOG_H
#define XDPR_NATLOG_H

#include "nat_base.h"

/* The ring; the loader sets its size (XDPR_NATLOG_BYTES) when it creates the shared maps. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} xdpr_natlog SEC(".maps");

/* Per CPU, per rule: when "no port" and "host limit" were last logged (ns). */
struct natlog_rl {
	__u64 ports;
	__u64 quota;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_NAT_MAX_RULES);
	__type(key, __u32);
	__type(value, struct natlog_rl);
} xdpr_natlog_rl SEC(".maps");

/*
 * Log event (enum xdpr_natlog_event) about the session with outbound key
 * k (inside source, remote, ports, protocol), outside address xaddr and
 * port xport (network order, 0: none) under rule.  For XDPR_NL_QUOTA the
 * record carries the host limit in force.  1 if a record was written, 0
 * if not (logging off, rate limited, ring full).  Global: verified once.
 */
__noinline int natlog_put(__u32 event, const struct xdpr_ct_key *k, __be32 xaddr, __u32 xport, __u32 rule)
{
	struct xdpr_natlog_rec *r;
	struct xdpr_cfg *cfg;
	__u32 zero = 0;
	__u64 now;

	if (!k)
		return 0;
	cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!cfg || !(cfg->flags & XDPR_CFG_NATLOG))
		return 0;
	now = bpf_ktime_get_coarse_ns();
	if (event == XDPR_NL_PORTS || event == XDPR_NL_QUOTA) {
		struct natlog_rl *rl = bpf_map_lookup_elem(&xdpr_natlog_rl, &rule);
		__u64 *last;

		if (!rl)
			return 0;
		last = event == XDPR_NL_PORTS ? &rl->ports : &rl->quota;
		if (*last && now - *last < NSEC)
			return 0;
		*last = now;
	}
	r = bpf_ringbuf_reserve(&xdpr_natlog, sizeof(*r), 0);
	if (!r) {
		nat_count(rule, XDPR_NE_LOG_LOST);
		return 0;
	}
	r->ts_ns = now;
	r->event = event;
	r->rule = rule;
	r->proto = k->proto;
	r->family = 2; /* AF_INET */
	r->src = k->saddr;
	r->xsrc = xaddr;
	r->dst = k->daddr;
	r->sport = k->sport;
	r->xsport = xport;
	r->dport = k->dport;
	r->pad = 0;
	r->limit = event == XDPR_NL_QUOTA ? cfg->host_limit : 0;
	r->pad2 = 0;
	bpf_ringbuf_submit(r, 0);
	return 1;
}

#endif /* XDPR_NATLOG_H */
