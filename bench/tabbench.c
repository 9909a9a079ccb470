// SPDX-License-Identifier: GPL-2.0
/*
 * tabbench - the cost of one session lookup (and last-seen write) as the
 * number of established sessions grows, for three table layouts: the
 * kernel's hash table, as the NAT session table is today, and one array
 * of 64-byte slots (issue 16: "one lookup per packet in the common
 * direction, entries that fit a cache line"), probed linearly (open) or in
 * two candidate slots with the kernel's table as the overflow (two).
 *
 *   tabbench {hash|open|two|chunk} WORK [--fill N] [--cap N] [--runs N] [--rounds N]
 *                                 [--cpu C] [--overlap 1] [--max-probe N]
 *
 * WORK sessions (a power of two) are walked in a scrambled order, one
 * lookup a BPF_PROG_TEST_RUN repetition, on CPU C (default 0).  The table
 * holds --fill keys (default 2 x WORK: a NAT session has an entry each
 * way; the walk looks up one of them, as the common direction does) in
 * room for --cap (hash: max_entries, default 2^21, the tables of
 * `nat limit sessions 1048576`; open, two: slots, default 2^22, load 1/2
 * at 2M keys, 256 MiB; two's overflow table holds up to a quarter as
 * many).  Prints one JSON line: the kernel's ns per run for each round,
 * their median, and the lookups found (all must be).  Each lookup waits
 * for the one before (tabbench.bpf.c), as packets handled one after the
 * other do; --overlap 1 lets the CPU overlap them instead.  open
 * --max-probe N: a key probes at most N slots, else it lives in the
 * kernel's table (as two's overflow).  chunk: open's probing (--max-probe,
 * default 4) over slots in small kmalloc'd arrays of TB_CHUNK_SLOTS slots
 * (tabbench.h), --cap slots in all, found through an array of maps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tabbench.h"
#include "tabbench.skel.h"

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "tabbench: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static unsigned long num(const char *s)
{
	char *e;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &e, 0);
	if (errno || *e || !*s)
		die("not a number: %s", s);
	return v;
}

/*
 * libbpf's messages, but for the chunk template's: the inner array map is
 * declared with a value size and no BTF type (clang leaves a struct named
 * only there as a forward declaration), and libbpf says so while it
 * retries without BTF, which works.
 */
static int print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || strstr(fmt, "Retrying without BTF"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * The k-th key filled: the walked keys [0, work) and the others alternate
 * (a session's two entries arrive together), so that the walked ones do
 * not all get the emptier table the first half of the fill sees.
 */
static __u32 fill_key(__u32 k, __u32 work, __u32 fill)
{
	if (fill - work >= work && k < 2 * work)
		return k & 1 ? work + (k >> 1) : k >> 1;
	return k;
}

static void fill_hash(int fd, __u32 work, __u32 fill)
{
	enum { CHUNK = 65536 };
	struct tb_key *k = calloc(CHUNK, sizeof(*k));
	struct tb_val *v = calloc(CHUNK, sizeof(*v));
	LIBBPF_OPTS(bpf_map_batch_opts, o);

	if (!k || !v)
		die("%s", "out of memory");
	for (__u32 i = 0; i < fill; i += CHUNK) {
		__u32 n = fill - i < CHUNK ? fill - i : CHUNK;

		for (__u32 j = 0; j < n; j++)
			tb_key_of(&k[j], fill_key(i + j, work, fill));
		if (bpf_map_update_batch(fd, k, v, &n, &o))
			die("cannot fill the hash table: %s", strerror(errno));
	}
	free(k);
	free(v);
}

/* Key n into the overflow table ofd, counted in *over and, when the walk looks it up, in *walked. */
static void overflow_put(int ofd, const struct tb_key *k, __u32 n, __u32 work, __u32 *over, __u32 *walked)
{
	struct tb_val v = {};

	if (bpf_map_update_elem(ofd, k, &v, BPF_NOEXIST))
		die("the overflow table is full: %s", strerror(errno));
	(*over)++;
	*walked += n < work;
}

/*
 * Two-choice: the first free of a key's two slots, else the overflow
 * table; how many overflowed, and (*walked) how many of them the walk
 * looks up.
 */
static __u32 fill_two(struct tb_slot *t, __u32 mask, __u32 work, __u32 fill, int ofd, __u32 *walked)
{
	__u32 over = 0;

	for (__u32 i = 0; i < fill; i++) {
		__u32 n = fill_key(i, work, fill), h, s;
		struct tb_key k;

		tb_key_of(&k, n);
		h = tb_hash_of(&k);
		s = h & mask;
		if (t[s].k.meta)
			s = tb_hash2(h) & mask;
		if (!t[s].k.meta) {
			t[s].k = k;
			continue;
		}
		overflow_put(ofd, &k, n, work, &over, walked);
	}
	return over;
}

/*
 * Linear probing into the mmap'd array; the longest probe sequence, or die
 * past TB_PROBES.  With max < TB_PROBES, a key whose first max slots are
 * taken goes into the overflow table ofd instead (counted in *over, and in
 * *walked when the walk looks it up).
 */
static __u32 fill_open(struct tb_slot *t, __u32 mask, __u32 work, __u32 fill, __u32 max, int ofd, __u32 *over,
		       __u32 *walked)
{
	__u32 longest = 0;

	for (__u32 i = 0; i < fill; i++) {
		__u32 n = fill_key(i, work, fill), h, p;
		struct tb_key k;

		tb_key_of(&k, n);
		h = tb_hash_of(&k);
		for (p = 0; p < TB_PROBES && p < max && t[(h + p) & mask].k.meta; p++)
			;
		if (p == max && max < TB_PROBES) {
			overflow_put(ofd, &k, n, work, over, walked);
			continue;
		}
		if (p == TB_PROBES)
			die("%s", "a probe sequence longer than TB_PROBES: more room (--cap)");
		t[(h + p) & mask].k = k;
		if (p + 1 > longest)
			longest = p + 1;
	}
	return longest;
}

/*
 * chunk: linear probing within a chunk, at most max slots, else the
 * overflow table; the chunks' values built here, then written into maps
 * of their own placed in the outer array.
 */
static __u32 fill_chunks(int outer, __u32 nslots, __u32 work, __u32 fill, __u32 max, int ofd, __u32 *over,
			 __u32 *walked)
{
	__u32 nchunks = (nslots + TB_CHUNK_SLOTS - 1) / TB_CHUNK_SLOTS, zero = 0, longest = 0;
	__u8 *buf = calloc(nchunks, TB_CHUNK_VAL);

	if (!buf)
		die("%s", "out of memory");
	for (__u32 i = 0; i < fill; i++) {
		__u32 n = fill_key(i, work, fill), g, c, j, p;
		struct tb_slot *e = NULL;
		struct tb_key k;

		tb_key_of(&k, n);
		g = tb_chunk_slot(tb_hash_of(&k), nslots);
		c = g / TB_CHUNK_SLOTS;
		j = g % TB_CHUNK_SLOTS;
		for (p = 0; p < max; p++) {
			__u32 o = (j + p) % TB_CHUNK_SLOTS;

			e = (struct tb_slot *)(buf + (size_t)c * TB_CHUNK_VAL + TB_CHUNK_OFF + o * 64);
			if (!e->k.meta)
				break;
		}
		if (p == max) {
			overflow_put(ofd, &k, n, work, over, walked);
			continue;
		}
		e->k = k;
		if (p + 1 > longest)
			longest = p + 1;
	}
	for (__u32 c = 0; c < nchunks; c++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, TB_CHUNK_VAL, 1, NULL);

		if (fd < 0)
			die("cannot make a chunk: %s", strerror(errno));
		if (bpf_map_update_elem(fd, &zero, buf + (size_t)c * TB_CHUNK_VAL, 0) ||
		    bpf_map_update_elem(outer, &c, &fd, 0))
			die("cannot fill a chunk: %s", strerror(errno));
		close(fd);
	}
	free(buf);
	return longest;
}

int main(int argc, char **argv)
{
	__u32 work, fill = 0, cap = 0, runs = 2000000, rounds = 5, cpu = 0, longest = 0, overlap = 0, ns[64];
	struct xb_tabbench_bpf *s;
	unsigned char pkt[64] = { 0 };
	cpu_set_t set;
	__u32 mode, over = 0, over_walked = 0, max_probe = TB_PROBES;
	bool open_mode;
	void *mem = NULL;

	if (argc < 3 || (strcmp(argv[1], "hash") && strcmp(argv[1], "open") && strcmp(argv[1], "two") &&
			 strcmp(argv[1], "chunk")))
		die("%s", "usage: tabbench {hash|open|two|chunk} WORK [--fill N] [--cap N] [--runs N] [--rounds N] "
			 "[--cpu C] [--overlap 1] [--max-probe N]");
	mode = !strcmp(argv[1], "open") ? 1 : !strcmp(argv[1], "two") ? 2 : !strcmp(argv[1], "chunk") ? 3 : 0;
	open_mode = mode != 0;
	if (mode == 3)
		max_probe = 4;
	work = num(argv[2]);
	if (argc % 2 == 0)
		die("an option without its value: %s", argv[argc - 1]);
	for (int i = 3; i + 1 < argc; i += 2) {
		unsigned long v = num(argv[i + 1]);

		if (!strcmp(argv[i], "--fill"))
			fill = v;
		else if (!strcmp(argv[i], "--cap"))
			cap = v;
		else if (!strcmp(argv[i], "--runs"))
			runs = v;
		else if (!strcmp(argv[i], "--rounds") && v >= 1 && v <= 64)
			rounds = v;
		else if (!strcmp(argv[i], "--cpu"))
			cpu = v;
		else if (!strcmp(argv[i], "--overlap"))
			overlap = !!v;
		else if (!strcmp(argv[i], "--max-probe") && v >= 1 && v <= TB_PROBES)
			max_probe = v;
		else
			die("unknown option or value: %s", argv[i]);
	}
	if (work < 2 || (work & (work - 1)))
		die("WORK must be a power of two, at least 2: %s", argv[2]);
	fill = fill ?: 2 * work;
	cap = cap ?: open_mode ? 1u << 22 : 1u << 21;
	if (fill < work || fill > cap || (open_mode && (cap & (cap - 1))))
		die("%s", "need WORK <= --fill <= --cap (open: --cap a power of two)");
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("cannot pin to the CPU: %s", strerror(errno));

	libbpf_set_print(print);
	s = xb_tabbench_bpf__open();
	if (!s)
		die("cannot open the program: %s", strerror(errno));
	s->rodata->tb_mode = mode;
	s->rodata->tb_work_bits = __builtin_ctz(work);
	s->rodata->tb_slots_mask = open_mode ? cap - 1 : 0;
	s->rodata->tb_overlap = overlap;
	s->rodata->tb_max_probe = max_probe;
	s->rodata->tb_nslots = cap;
	bpf_map__set_max_entries(s->maps.tb_hash, mode == 0 ? cap : mode == 2 || max_probe < TB_PROBES ? cap / 4 : 1);
	bpf_map__set_max_entries(s->maps.tb_open, mode == 1 || mode == 2 ? cap : 1);
	bpf_map__set_max_entries(s->maps.tb_chunks, mode == 3 ? (cap + TB_CHUNK_SLOTS - 1) / TB_CHUNK_SLOTS : 1);
	if (xb_tabbench_bpf__load(s))
		die("cannot load the program: %s", strerror(errno));
	if (mode == 3) {
		longest = fill_chunks(bpf_map__fd(s->maps.tb_chunks), cap, work, fill, max_probe, bpf_map__fd(s->maps.tb_hash),
			    &over, &over_walked);
	} else if (open_mode) {
		mem = mmap(NULL, (size_t)cap * sizeof(struct tb_slot), PROT_READ | PROT_WRITE, MAP_SHARED,
			   bpf_map__fd(s->maps.tb_open), 0);
		if (mem == MAP_FAILED)
			die("cannot map the array: %s", strerror(errno));
		if (mode == 2)
			over = fill_two(mem, cap - 1, work, fill, bpf_map__fd(s->maps.tb_hash), &over_walked);
		else
			longest = fill_open(mem, cap - 1, work, fill, max_probe, bpf_map__fd(s->maps.tb_hash), &over,
					    &over_walked);
	} else {
		fill_hash(bpf_map__fd(s->maps.tb_hash), work, fill);
	}

	/* a lap over the working set first, then the rounds */
	for (__u32 r = 0; r <= rounds; r++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt),
			    .repeat = r ? runs : (work > 65536 ? 2 * work : 131072));

		if (bpf_prog_test_run_opts(bpf_program__fd(s->progs.tb_lookup), &o))
			die("BPF_PROG_TEST_RUN failed: %s", strerror(errno));
		if (r)
			ns[r - 1] = o.duration;
	}
	if (s->bss->tb_missed)
		die("%s", "lookups missed: the walk and the fill disagree");
	if (s->bss->tb_unaligned)
		die("%s", "chunk slots not on cache lines: the kernel's array header changed size");
	printf("{\"layout\": \"%s\", \"work\": %u, \"fill\": %u, \"cap\": %u, \"runs\": %u, \"overlap\": %u, "
	       "\"found\": %llu, ", argv[1], work, fill, cap, runs, overlap, (unsigned long long)s->bss->tb_found);
	if (mode == 2 || max_probe < TB_PROBES)
		printf("\"max_probe\": %u, \"overflowed\": %u, \"overflowed_walked\": %u, ", mode == 2 ? 2 : max_probe,
		       over, over_walked);
	if (mode == 3) /* the direct map (kmalloc) or vmalloc space: compare with /proc/vmallocinfo */
		printf("\"chunk_addr\": \"0x%llx\", ", (unsigned long long)s->bss->tb_chunk_addr);
	if (mode == 1 || mode == 3)
		printf("\"longest_probe\": %u, \"probes_per_lookup\": %.3f, ", longest,
		       (double)s->bss->tb_probes / (double)s->bss->tb_found);
	printf("\"ns\": [");
	for (__u32 r = 0; r < rounds; r++)
		printf("%s%u", r ? ", " : "", ns[r]);
	qsort(ns, rounds, sizeof(ns[0]), cmp_u32);
	printf("], \"ns_median\": %u}\n", ns[rounds / 2]);
	if (mem)
		munmap(mem, (size_t)cap * sizeof(struct tb_slot));
	xb_tabbench_bpf__destroy(s);
	return 0;
}
