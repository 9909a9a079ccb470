/* SPDX-License-Identifier: GPL-2.0 */
/* tap.h - minimal TAP producer for C tests. */
#ifndef XDPR_TAP_H
#define XDPR_TAP_H

#include <stdio.h>

static int tap_n, tap_failed;

#define tap_plan(n) printf("1..%d\n", (n))
#define tap_ok(cond, ...) do {                                        \
	int __c = !!(cond);                                           \
	printf("%s %d - ", __c ? "ok" : "not ok", ++tap_n);           \
	printf(__VA_ARGS__);                                          \
	printf("\n");                                                 \
	if (!__c) {                                                   \
		tap_failed++;                                         \
		printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	}                                                             \
} while (0)
#define tap_done() (fflush(stdout), tap_failed ? 1 : 0)

#endif
