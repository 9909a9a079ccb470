/* SPDX-License-Identifier: GPL-2.0 */
/* npt.h - NPTv6 rules in the CLI (cli/npt.c). */
#ifndef XDPR_CLI_NPT_H
#define XDPR_CLI_NPT_H
#include <stdbool.h>
#include <stdio.h>
#include "libxdpr.h"

struct npt_args {
	const char *dev;
	struct xdpr_npt_rule r;
};
/* "npt DEV inside PREFIX outside PREFIX": 0, or EXIT_USAGE with the message in err. */
int parse_npt_rule(int argc, char **argv, struct npt_args *a, char *err, size_t len);
/* "nat VERB npt ...": the exit code, or -1 when argv is not an npt command. */
int npt_cmd(const char *verb, int argc, char **argv);
/* The rules as objects of the array "nat show" / "stats" has open: 0 or -errno. */
int print_npt_rules(struct xdpr *x, bool counters_only);
#endif
