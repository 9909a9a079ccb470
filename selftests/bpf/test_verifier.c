// SPDX-License-Identifier: GPL-2.0
/*
 * test_verifier - the verifier's budget for each program of xdpr.bpf.o.
 *
 * Loads the object with verifier statistics (log level 4) and reads the
 * "processed N insns (limit 1000000)" line of every program.  The packet
 * program must stay under half the limit, so the features still to come
 * (filter, VLANs, inbound NAT) have room; the numbers are printed so a
 * change that grows them shows in the test output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "xdpr_shared.h"
#include "xdpr.skel.h"

#define LIMIT 1000000
#define LOG_SIZE (64u << 20)

static long processed(const char *log)
{
	const char *p = strstr(log, "processed ");
	long n;

	if (!p || sscanf(p, "processed %ld insns", &n) != 1)
		return -1;
	return n;
}

static int tap_n, tap_failed;

static void tap(int ok, const char *name)
{
	printf("%s %d - %s\n", ok ? "ok" : "not ok", ++tap_n, name);
	tap_failed += !ok;
}

int main(void)
{
	struct xdpr_bpf *skel;
	struct bpf_program *prog;
	static char *logs[4];
	const char *names[4];
	int n = 0, err;

	libbpf_set_print(NULL);
	skel = xdpr_bpf__open();
	if (!skel) {
		printf("Bail out! cannot open the BPF object: %s\n", strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(prog, skel->obj) {
		if (n == 4) {
			printf("Bail out! more programs than this test knows\n");
			return 1;
		}
		names[n] = bpf_program__name(prog);
		logs[n] = calloc(1, LOG_SIZE);
		if (!logs[n]) {
			printf("Bail out! out of memory\n");
			return 1;
		}
		bpf_program__set_log_level(prog, getenv("XDPR_VERIFIER_LOG") ? (getenv("XDPR_VERIFIER_HEAD") ? 2 | 4 | 8 : 1 | 4) : 4);
		bpf_program__set_log_buf(prog, logs[n], LOG_SIZE);
		n++;
	}
	err = xdpr_bpf__load(skel);
	printf("1..%d\n", n + 1);
	tap(!err, "the object loads");
	if (getenv("XDPR_VERIFIER_LOG") && getenv("XDPR_VERIFIER_LOG")[0] == '/') {
		FILE *f = fopen(getenv("XDPR_VERIFIER_LOG"), "w");

		for (int i = 0; f && i < n; i++)
			fprintf(f, "==== %s\n%s\n", names[i], logs[i]);
		if (f)
			fclose(f);
	}
	for (int i = 0; err && i < n; i++) {
		/* the end of the log says where the verifier gave up */
		size_t len = strlen(logs[i]);
		const char *tail = logs[i] + (len > 3000 ? len - 3000 : 0);

		printf("# %s, end of the verifier log:\n", names[i]);
		for (const char *l = tail; *l; ) {
			const char *nl = strchr(l, '\n');
			int w = nl ? (int)(nl - l) : (int)strlen(l);

			printf("#   %.*s\n", w, l);
			l += w + (nl ? 1 : 0);
		}
	}
	for (int i = 0; i < n; i++) {
		long insns = processed(logs[i]);
		long cap = !strcmp(names[i], XDPR_PROG_NAME) ? LIMIT / 2 : LIMIT / 4;

		tap(!err && insns > 0 && insns <= cap, names[i]);
		printf("# %s: %ld instructions processed (cap %ld, limit %d)\n", names[i], insns, cap, LIMIT);
	}
	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
