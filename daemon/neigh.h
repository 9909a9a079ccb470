/* SPDX-License-Identifier: GPL-2.0 */
/*
 * neigh.h - xdprd's part in the neighbours the fast path needs
 * (bpf/neigh.h): it has the kernel resolve what the datapath asks for, and
 * keep it resolved; it marks next hops that fail to resolve.
 */
#ifndef XDPRD_NEIGH_H
#define XDPRD_NEIGH_H

#include <stdio.h>
#include <linux/netlink.h>
#include "libxdpr.h"

int neigh_open(char *err, size_t elen);     /* at start: its netlink socket */
void neigh_close(void);
void neigh_sync(struct xdpr *x);            /* with the router open: (re)open its ring */
int neigh_fd(void);                         /* readable when requests wait; -1: none */
void neigh_drain(void);                     /* answer them */
void neigh_event(const struct nlmsghdr *nlh); /* RTM_NEWNEIGH, RTM_DELNEIGH */
void neigh_gc(void);                        /* the sweep's tick */
void neigh_metrics(FILE *f);                /* its counters, Prometheus text */

#endif /* XDPRD_NEIGH_H */
