/* SPDX-License-Identifier: GPL-2.0 */
/*
 * testrun.h - what the BPF_PROG_TEST_RUN benchmarks (vlanbench, binatbench)
 * share: fatal errors, shell commands, sorting.
 */
#ifndef XDPR_TESTRUN_H
#define XDPR_TESTRUN_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/types.h>

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "Error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0 ? 0 : -1;
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

#endif /* XDPR_TESTRUN_H */
