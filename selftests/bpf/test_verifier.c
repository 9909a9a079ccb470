// SPDX-License-Identifier: GPL-2.0
/*
 * test_verifier - the verifier's budget for each program of xdpr.bpf.o.
 *
 * Loads the object with verifier statistics (log level 4) and reads the
 * "processed N insns (limit 1000000)" line of every program.  The packet
 * program must stay under half the limit, so the features still to come
 * (filter, VLANs, inbound NAT) have room; the numbers are printed so a
 * change that grows them shows in the test output.
 *
 * It also adds up the packet program's stack the way Debian 12's kernel
 * (6.1) does before it accepts a program: along every call chain from the
 * entry point, bpf_loop and bpf_for_each_map_elem callbacks counted as
 * frames of the chain, each frame rounded up to 32 bytes, at most 512 in
 * all (newer kernels round to 16 with the JIT, so a chain 6.1 takes they
 * take too).  The frames' depths are the "stack depth" line of the log (one
 * number a subprogram, in the order of their first instructions); the
 * chains come from the program's calls as loaded (libbpf's instructions);
 * the subprograms' names from the kernel's func_info.  The line's depths
 * include what inlining a bpf_loop call adds after the check (24 bytes),
 * so the sum is an upper bound of 6.1's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
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

/* ---- the stack of the deepest call chain, as 6.1 counts it */

#define STACK_LIMIT 512
#define MAX_SUBPROGS 256
#define MAX_FRAMES 8 /* MAX_CALL_FRAMES */

struct subprogs {
	int n, start[MAX_SUBPROGS], depth[MAX_SUBPROGS];
	int ncallee[MAX_SUBPROGS], callee[MAX_SUBPROGS][MAX_SUBPROGS];
	char name[MAX_SUBPROGS][64];
	int worst, worst_n, worst_chain[MAX_FRAMES], chain[MAX_FRAMES];
};

/* Target of a call to a subprogram or of a callback's address, -1 if neither. */
static int call_target(const struct bpf_insn *in, int i)
{
	if (in[i].code == (BPF_JMP | BPF_CALL) && in[i].src_reg == BPF_PSEUDO_CALL)
		return i + in[i].imm + 1;
	if (in[i].code == (BPF_LD | BPF_IMM | BPF_DW) && in[i].src_reg == BPF_PSEUDO_FUNC)
		return i + in[i].imm + 1;
	return -1;
}

static int subprog_at(const struct subprogs *s, int insn)
{
	for (int i = 0; i < s->n; i++)
		if (s->start[i] == insn)
			return i;
	return -1;
}

static int frame_6_1(int depth)
{
	return ((depth < 1 ? 1 : depth) + 31) / 32 * 32;
}

static void chain_walk(struct subprogs *s, int sp, int frame, int sum)
{
	sum += frame_6_1(s->depth[sp]);
	s->chain[frame] = sp;
	if (sum > s->worst) {
		s->worst = sum;
		s->worst_n = frame + 1;
		memcpy(s->worst_chain, s->chain, sizeof(s->chain));
	}
	if (frame + 1 >= MAX_FRAMES)
		return;
	for (int i = 0; i < s->ncallee[sp]; i++)
		chain_walk(s, s->callee[sp][i], frame + 1, sum);
}

/* 0 with s->worst*, or -1 with why in msg. */
static int stack_chains(struct bpf_object *obj, struct bpf_program *prog, const char *log,
			struct subprogs *s, char *msg, size_t len)
{
	const struct bpf_insn *in = bpf_program__insns(prog);
	int n = bpf_program__insn_cnt(prog), nfi;
	const char *line = strstr(log, "stack depth ");
	struct bpf_func_info *fi = NULL;
	struct bpf_prog_info info = {};
	__u32 ilen = sizeof(info);
	const struct btf *btf;
	char *p;

	memset(s, 0, sizeof(*s));
	if (!in || n <= 0) {
		snprintf(msg, len, "no instructions");
		return -1;
	}
	/* the subprograms: the entry and every target, in the order of their starts */
	s->start[s->n++] = 0;
	for (int i = 0; i < n; i++) {
		int t = call_target(in, i), j;

		if (t < 0 || subprog_at(s, t) >= 0)
			continue;
		if (s->n == MAX_SUBPROGS) {
			snprintf(msg, len, "more than %d subprograms", MAX_SUBPROGS);
			return -1;
		}
		for (j = s->n++; j > 0 && s->start[j - 1] > t; j--)
			s->start[j] = s->start[j - 1];
		s->start[j] = t;
	}
	for (int i = 0, sp = 0; i < n; i++) {
		int t = call_target(in, i), c, dup = 0;

		while (sp + 1 < s->n && s->start[sp + 1] <= i)
			sp++;
		if (t < 0)
			continue;
		c = subprog_at(s, t);
		for (int j = 0; j < s->ncallee[sp]; j++)
			dup |= s->callee[sp][j] == c;
		if (!dup)
			s->callee[sp][s->ncallee[sp]++] = c;
	}
	if (!line) {
		snprintf(msg, len, "no \"stack depth\" line in the log");
		return -1;
	}
	p = (char *)line + strlen("stack depth ");
	for (int i = 0; i < s->n; i++) {
		char *e;

		s->depth[i] = (int)strtol(p, &e, 10);
		if (e == p) {
			snprintf(msg, len, "the \"stack depth\" line has fewer than %d numbers", s->n);
			return -1;
		}
		p = *e == '+' ? e + 1 : e;
	}
	/* names, for the report only */
	for (int i = 0; i < s->n; i++)
		snprintf(s->name[i], sizeof(s->name[i]), "subprog#%d", i);
	btf = bpf_object__btf(obj);
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &ilen) && info.nr_func_info == (__u32)s->n &&
	    btf && (fi = calloc(s->n, sizeof(*fi)))) {
		nfi = info.nr_func_info;
		memset(&info, 0, sizeof(info));
		info.nr_func_info = nfi;
		info.func_info_rec_size = sizeof(*fi);
		info.func_info = (__u64)(unsigned long)fi;
		ilen = sizeof(info);
		if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &ilen)) {
			for (int i = 0; i < s->n; i++) {
				const struct btf_type *t = btf__type_by_id(btf, fi[i].type_id);
				const char *nm = t ? btf__name_by_offset(btf, t->name_off) : NULL;

				if (nm)
					snprintf(s->name[i], sizeof(s->name[i]), "%s", nm);
			}
		}
	}
	free(fi);
	chain_walk(s, 0, 0, 0);
	return 0;
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
	printf("1..%d\n", n + 2);
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
	for (int i = 0; i < n; i++) {
		static struct subprogs s;
		char msg[128], name[160];

		if (strcmp(names[i], XDPR_PROG_NAME))
			continue;
		bpf_object__for_each_program(prog, skel->obj)
			if (!strcmp(bpf_program__name(prog), names[i]))
				break;
		snprintf(name, sizeof(name), "%s: the deepest call chain, 6.1's sum (frames rounded up to 32), <= %d",
			 names[i], STACK_LIMIT);
		if (err || !prog || stack_chains(skel->obj, prog, logs[i], &s, msg, sizeof(msg))) {
			tap(0, name);
			printf("# %s\n", err ? "the object did not load" : !prog ? "program not found" : msg);
			continue;
		}
		tap(s.worst <= STACK_LIMIT, name);
		printf("# %s: %d bytes:", names[i], s.worst);
		for (int j = 0; j < s.worst_n; j++)
			printf(" %s(%d)", s.name[s.worst_chain[j]], s.depth[s.worst_chain[j]]);
		printf("\n");
	}
	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
