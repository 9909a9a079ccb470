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

/*
 * Sampling 1 packet in n (n > 1) on average with this CPU's counter *gap
 * (packets left until the next sampled one, this one included): 1 when
 * this packet is sampled.  The next gap is drawn at random, 1 to 2n - 1
 * packets (mean n): a fixed 1-in-n count would alias with traffic of
 * period n (hosts or flows sent to in turn), giving one every sample and
 * the others none.  n <= XDPR_SAMPLE_MAX (the loader's bound), so 2n - 1
 * fits.  The DDoS meters (ddos.h) and the flow meter (flow.h) use it.
 */
static __always_inline int sample_take(__u32 *gap, __u32 n)
{
	if (*gap > 1) {
		(*gap)--;
		return 0;
	}
	*gap = 1 + bpf_get_prandom_u32() % (2 * n - 1);
	return 1;
}

#endif /* XDPR_STATS_H */
