/* SPDX-License-Identifier: GPL-2.0 */
/* blackhole.h - xdprd's blackhole routes for banned hosts (daemon/blackhole.c). */
#ifndef XDPR_BLACKHOLE_H
#define XDPR_BLACKHOLE_H

#include <stddef.h>
#include "libxdpr.h"

/* rtm_protocol of xdprd's routes: free in Debian 12's /etc/iproute2/rt_protos */
#define BLACKHOLE_PROTO 252

struct bh_stats {
	unsigned long long added, withdrawn, errors;
	size_t routes;          /* announced after the last reconcile */
};

/*
 * Make table's blackhole routes of BLACKHOLE_PROTO exactly the hosts of
 * want[0..n) (their family and address): add the missing, delete the rest.
 * log (may be NULL) hears of each change (added 1 or 0, its error).  0, or
 * the last -errno.
 */
int blackhole_reconcile(__u32 table, const struct xdpr_ddos_ban_info *want, size_t n, struct bh_stats *st,
			void (*log)(int added, int family, const __u8 *addr, int err));

#endif
