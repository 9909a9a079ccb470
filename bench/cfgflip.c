// SPDX-License-Identifier: GPL-2.0
/*
 * cfgflip - switch one step of the router in this network namespace on or
 * off by its xdpr_cfg flag alone, every map left as it is, so that bench/run's
 * toggle mode can measure the same set-up with the step and without it,
 * alternating in one run of the generator (bench only).
 *
 *   cfgflip filter|ddos on|off     0 on success; "Error: ..." and 1 on failure
 *
 * filter: XDPR_CFG_FILTER (the filter step: rules, flow states, their copies);
 * ddos: XDPR_CFG_DDOS (the DDoS meters).  Only the bit changes: "on" is
 * meaningful for a set-up that had switched the step on itself.
 */
#include <stdio.h>
#include <string.h>
#include "libxdpr.h"

int main(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_cfg c;
	__u32 bit;
	int on;

	if (argc != 3 || (strcmp(argv[2], "on") && strcmp(argv[2], "off"))) {
		fprintf(stderr, "Usage: cfgflip filter|ddos on|off\n");
		return 2;
	}
	if (!strcmp(argv[1], "filter")) {
		bit = XDPR_CFG_FILTER;
	} else if (!strcmp(argv[1], "ddos")) {
		bit = XDPR_CFG_DDOS;
	} else {
		fprintf(stderr, "Usage: cfgflip filter|ddos on|off\n");
		return 2;
	}
	on = !strcmp(argv[2], "on");
	if (xdpr_open(&x, XDPR_O_LOCK)) {
		fprintf(stderr, "Error: %s\n", x.err);
		return 1;
	}
	if (xdpr_cfg_get(&x, &c)) {
		fprintf(stderr, "Error: cannot read xdpr_cfg: %s\n", x.err);
		xdpr_close(&x);
		return 1;
	}
	if (on)
		c.flags |= bit;
	else
		c.flags &= ~bit;
	if (xdpr_cfg_set(&x, &c)) {
		fprintf(stderr, "Error: cannot write xdpr_cfg: %s\n", x.err);
		xdpr_close(&x);
		return 1;
	}
	xdpr_close(&x);
	return 0;
}
