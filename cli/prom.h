/* SPDX-License-Identifier: GPL-2.0 */
/* prom.h - the router's counters as Prometheus text (xdprd, xdpr stats -o prometheus). */
#ifndef XDPR_PROM_H
#define XDPR_PROM_H

#include <stdbool.h>
#include <stdio.h>
#include "libxdpr.h"

/*
 * Every metric of the router of x (opened; nothing attached: only
 * xdpr_links_attached) onto f; per_cpu adds xdpr_cpu_*_total.
 * 0, or -errno with the reason in err (f then holds a partial text).
 */
int prom_write(FILE *f, struct xdpr *x, bool per_cpu, char *err, size_t len);

#endif
