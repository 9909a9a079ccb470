/* SPDX-License-Identifier: GPL-2.0 */
/* stats.h - per-CPU, per-interface, per-reason counters; no atomics. */
#ifndef XDPR_STATS_H
#define XDPR_STATS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xdpr_shared.h"
#include "maps.h"

/* Count one frame under its reason and return the verdict that goes with it. */
static __always_inline int count_exit(__u32 slot, int reason, __u64 bytes)
{
	struct xdpr_slot *s;

	s = bpf_map_lookup_elem(&xdpr_stats, &slot);
	if (s && reason >= 0 && reason < XDPR_REASON_MAX) {
		s->reason[reason].packets++;
		s->reason[reason].bytes += bytes;
	}
	return xdpr_reason_verdict(reason);
}

#endif /* XDPR_STATS_H */
