// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz.c - libFuzzer (clang 14, libclang-rt-14-dev) on the real xdpr_main:
 * every input runs through BPF_PROG_TEST_RUN in a private network namespace
 * and the invariants of oracle.h are checked after every frame.
 *
 * An input that breaks an invariant is written to $XDPR_FUZZ_FAILURES
 * (default build/fuzz/failures) as INVARIANT-HASH.bin with a .txt saying
 * what broke, and fuzzing goes on; a crash of the harness is libFuzzer's
 * own artifact (-artifact_prefix).  $XDPR_FUZZ_SEEDS: a folder the seed
 * corpus is written to at start.  `make fuzz` sets all of this up.
 *
 * What libFuzzer sees as coverage: this harness's edges, plus extra
 * counters for what the BPF program did (reason x ingress device, state
 * created), which it cannot see itself.
 *
 * The mutator knows the record format: it mutates one record (its frame,
 * its device byte), adds or drops one, and usually rewrites the frame's
 * checksums afterwards, so that mutated frames get past the header checks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#pragma GCC diagnostic ignored "-Wunused-function" /* harness.h: not every helper is used */
#include "../bpf/harness.h"
#include "oracle.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);

__attribute__((section("__libfuzzer_extra_counters"))) static uint8_t extra[8192];

static const char *fail_dir;
static unsigned long failures, runs;

static void write_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(b, 1, n, f) != n || fclose(f))
		fprintf(stderr, "xdpr-fuzz: cannot write %s: %s\n", path, strerror(errno));
}

static void write_seeds(const char *dir)
{
	static struct fz_seed s[FZ_SEEDS_MAX];
	int n = fz_seeds(s, FZ_SEEDS_MAX);
	char path[512];

	mkdir(dir, 0755);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/seed-%02d", dir, i);
		write_file(path, s[i].b, s[i].len);
	}
	fprintf(stderr, "xdpr-fuzz: %d seeds in %s\n", n, dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	if (geteuid() != 0) {
		fprintf(stderr, "xdpr-fuzz: needs root (a network namespace, BPF)\n");
		exit(1);
	}
	fail_dir = getenv("XDPR_FUZZ_FAILURES") ?: "build/fuzz/failures";
	mkdir(fail_dir, 0755);
	fz_setup_all();
	fz_cov = extra;
	fz_cov_len = sizeof(extra);
	if (getenv("XDPR_FUZZ_SEEDS"))
		write_seeds(getenv("XDPR_FUZZ_SEEDS"));
	return 0;
}

static __u64 fnv(const uint8_t *d, size_t n)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 0x100000001b3ULL;
	return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *bad = fz_input(data, size);
	char path[512], txt[1024];
	struct stat st;

	runs++;
	if (!bad)
		return 0;
	/* one file per input; the first of each invariant is also said on stderr */
	snprintf(path, sizeof(path), "%s/%s-%016llx.bin", fail_dir, bad, (unsigned long long)fnv(data, size));
	for (char *p = path + strlen(fail_dir) + 1; *p; p++)
		if (*p == ' ')
			*p = '_';
	if (stat(path, &st) == 0)
		return 0;
	write_file(path, data, size);
	snprintf(txt, sizeof(txt), "invariant: %s\n%s\n", bad, fz_why);
	strcpy(path + strlen(path) - 3, "txt");
	write_file(path, txt, strlen(txt));
	failures++;
	fprintf(stderr, "xdpr-fuzz: invariant \"%s\" broken: %s (%s)\n", bad, fz_why, path);
	return 0;
}

/* ---- structure-aware mutation ---- */

struct mrec {
	__u8 dev;
	__u16 len;
	__u8 b[FZ_FRAME_MAX];
};

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
	static struct mrec r[FZ_RECORDS];
	struct fz_rec in[FZ_RECORDS];
	int n = fz_split(data, size, in), k;
	unsigned int x = seed;
	size_t out = 0;

#define RND() (x = x * 1103515245u + 12345u, x >> 8)
	if (n == 0 || RND() % 16 == 0)
		return LLVMFuzzerMutate(data, size, max);
	for (int i = 0; i < n; i++) {
		r[i].dev = in[i].dev;
		r[i].len = in[i].len;
		memcpy(r[i].b, in[i].b, in[i].len);
	}
	k = RND() % n;
	switch (RND() % 8) {
	case 0: /* another ingress */
		r[k].dev = RND() % 8;
		break;
	case 1: /* a copy of a record, appended (the same flow again, its reply to be) */
		if (n < FZ_RECORDS) {
			r[n] = r[k];
			k = n++;
		}
		/* fall through: and mutate it */
	default:
		r[k].len = LLVMFuzzerMutate(r[k].b, r[k].len, FZ_FRAME_MAX);
		break;
	case 2: /* drop a record */
		if (n > 1) {
			memmove(&r[k], &r[k + 1], (n - k - 1) * sizeof(r[0]));
			n--;
			k = 0;
		}
		break;
	}
	if (RND() % 4 != 0)
		fz_fix(r[k].b, r[k].len);
	for (int i = 0; i < n; i++) {
		if (out + 3 + r[i].len > max)
			break;
		data[out] = r[i].dev;
		put16(data + out + 1, r[i].len);
		memcpy(data + out + 3, r[i].b, r[i].len);
		out += 3 + r[i].len;
	}
#undef RND
	return out ?: LLVMFuzzerMutate(data, size, max);
}

__attribute__((destructor)) static void bye(void)
{
	if (runs)
		fprintf(stderr, "xdpr-fuzz: %lu inputs, %lu new invariant failures in %s\n", runs, failures,
			fail_dir ?: "?");
}
