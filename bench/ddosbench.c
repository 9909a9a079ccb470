// SPDX-License-Identifier: GPL-2.0
/*
 * ddosbench - what the DDoS meters and bans (bpf/ddos.h) cost xdpr_main
 * against plain forwarding, under BPF_PROG_TEST_RUN, side by side in one run
 * (trnet.h's router; 10.0.1.2 -> 10.0.2.2, UDP, 64-byte frames):
 *   fwd          meters and bans off (the flags clear)
 *   meters       xdpr ddos on, 10.0.2.0/24 protected, HOSTS idle hosts tracked (hash tables)
 *                each way (198.18.0.0/15) besides the two the frame meets
 *   meters-s8    the same, sampled 1 in 8 (each metered packet counted 8 times)
 *   meters-new   meters, with the frame's meters deleted before every run: the
 *                first packet of a host (LPM lookup, insert)
 *   bans         meters off, BANS bans of other hosts (their bits set in the
 *                ban bitmap): every packet tests its destination's and source's bit
 *   meters-bans  both
 *   banned       the frame's destination banned: the drop (XDP_DROP)
 * One test run per frame, the kernel's duration of each (ns, the program
 * only), median over runs, then over rounds; configurations interleaved,
 * the order rotating every round.  Every verdict is checked.
 * Usage: ddosbench [--rounds N] [--runs N] [--cpu C] [--hosts N] [--bans N].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdpr_shared.h"
#include "xdpr.skel.h"
#include "testrun.h"
#include "trnet.h"

enum { C_FWD, C_METERS, C_SAMPLED, C_NEW, C_BANS, C_BOTH, C_BANNED, C_N };
static const char *const names[C_N] = { "fwd", "meters", "meters-s8", "meters-new", "bans", "meters-bans", "banned" };

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct xdpr_ddos_key key4(int dir, const char *a)
{
	struct xdpr_ddos_key k = { .family = AF_INET, .dir = dir };

	inet_pton(AF_INET, a, k.addr);
	return k;
}

static int bitsfd = -1; /* set: the bans' bits are set as the loader sets them */

static void bit_set(const struct xdpr_ddos_key *k)
{
	__u32 b = xdpr_ddos_bit(k), w = b / 64;
	__u64 v;

	if (bpf_map_lookup_elem(bitsfd, &w, &v))
		die("cannot read the ban bitmap: %s", strerror(errno));
	v |= 1ULL << (b % 64);
	if (bpf_map_update_elem(bitsfd, &w, &v, BPF_ANY))
		die("cannot write the ban bitmap: %s", strerror(errno));
}

static void fill(int fd, int dir, long n, long first, const void *v, bool bans)
{
	for (long i = 0; i < n; i++) {
		struct xdpr_ddos_key k = { .family = AF_INET, .dir = dir };
		__u32 a = htonl(0xc6120000u + (__u32)(first + i) + 1);

		memcpy(k.addr, &a, 4);
		if (bpf_map_update_elem(fd, &k, v, BPF_ANY))
			die("cannot fill a DDoS table: %s", strerror(errno));
		if (bans)
			bit_set(&k);
	}
}

int main(int argc, char **argv)
{
	int rounds = 5, runs = 20000, cpu = 1, zero = 0, ncpu = libbpf_num_possible_cpus();
	long hosts = 10000, nbans = 1000;
	int cfgfd, tofd, slotfd, fromfd, bansfd, protfd, prog;
	struct xdpr_ddos_key kto = key4(XDPR_DDOS_TO, "10.0.2.2"), kfrom = key4(XDPR_DDOS_FROM, "10.0.1.2");
	struct xdpr_ddos_prot_key pk = { .plen = 8 + 24, .family = AF_INET };
	struct xdpr_ddos_ban *bv;
	struct xdpr_ddos_ctr *cv;
	double med[C_N][64];
	int wrong[C_N] = {};
	struct xdpr_bpf *skel;
	__u8 frame[64], out[128];
	cpu_set_t set;
	__u32 *ns, one = 1;
	int len;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--cpu"))
			cpu = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--hosts"))
			hosts = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--bans"))
			nbans = atol(argv[i + 1]);
		else
			die("usage: ddosbench [--rounds N] [--runs N] [--cpu C] [--hosts N] [--bans N]");
	}
	if (rounds < 1 || rounds > 64 || runs < 100 || hosts < 0 || hosts > 60000 || nbans < 0 || nbans > 60000)
		die("--rounds 1..64, --runs >= 100, --hosts 0..60000, --bans 0..60000");
	if (ncpu < 1)
		die("cannot count CPUs");
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	skel = xdpr_bpf__open();
	if (!skel)
		die("cannot open xdpr_main: %s", strerror(errno));
	bpf_map__set_max_entries(skel->maps.xdpr_ddos_slots, XDPR_DDOS_SLOTS * ncpu); /* as the loader does */
	if (xdpr_bpf__load(skel))
		die("cannot load xdpr_main: %s", strerror(errno));
	devs_setup(skel);
	prog = bpf_program__fd(skel->progs.xdpr_main);
	cfgfd = bpf_map__fd(skel->maps.xdpr_cfg);
	tofd = bpf_map__fd(skel->maps.xdpr_ddos_to);
	slotfd = bpf_map__fd(skel->maps.xdpr_ddos_slots);
	fromfd = bpf_map__fd(skel->maps.xdpr_ddos_from);
	bansfd = bpf_map__fd(skel->maps.xdpr_ddos_bans);
	protfd = bpf_map__fd(skel->maps.xdpr_ddos_prot);
	bitsfd = bpf_map__fd(skel->maps.xdpr_ddos_bits);
	cv = calloc(ncpu, sizeof(*cv));
	bv = calloc(ncpu, sizeof(*bv));
	ns = calloc(runs, sizeof(*ns));
	if (!cv || !bv || !ns)
		die("out of memory");
	inet_pton(AF_INET, "10.0.2.0", pk.addr);
	if (bpf_map_update_elem(protfd, &pk, &one, BPF_ANY))
		die("cannot protect 10.0.2.0/24: %s", strerror(errno));
	fill(tofd, XDPR_DDOS_TO, hosts, 0, cv, false);
	fill(fromfd, XDPR_DDOS_FROM, hosts, 0, cv, false);
	for (int c = 0; c < ncpu; c++)
		bv[c] = (struct xdpr_ddos_ban){ .until_ns = XDPR_DDOS_FOREVER, .flags = XDPR_DDOS_F_DROP };
	fill(bansfd, XDPR_DDOS_TO, nbans, hosts, bv, true);
	len = udp_frame(frame, 0, "10.0.1.2", "10.0.2.2");
	for (int rd = 0; rd < rounds; rd++)
		for (int j = 0; j < C_N; j++) {
			int c = (j + rd) % C_N;
			struct xdpr_cfg g = {};
			struct xdp_md md = { .data_end = len, .ingress_ifindex = devs[0].ifindex };
			__u32 want = c == C_BANNED ? XDP_DROP : XDP_REDIRECT;

			if (c == C_METERS || c == C_SAMPLED || c == C_NEW || c == C_BOTH)
				g.flags |= XDPR_CFG_DDOS;
			g.ddos_sample = c == C_SAMPLED ? 8 : 1;
			if (c == C_BANS || c == C_BOTH || c == C_BANNED)
				g.flags |= XDPR_CFG_BANS;
			if (bpf_map_update_elem(cfgfd, &zero, &g, BPF_ANY))
				die("cannot set the configuration");
			if (c == C_BANNED) {
				if (bpf_map_update_elem(bansfd, &kto, bv, BPF_ANY))
					die("cannot ban: %s", strerror(errno));
				bit_set(&kto);
			}
			for (int i = 0; i < runs; i++) {
				LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len,
					    .data_out = out, .data_size_out = sizeof(out), .ctx_in = &md,
					    .ctx_size_in = sizeof(md), .repeat = 1);

				if (c == C_NEW) { /* the frame's hosts new: their slots on this CPU free, no entries */
					struct xdpr_ddos_slot none = {};
					__u32 st = cpu * XDPR_DDOS_SLOTS + xdpr_ddos_slot_of(&kto),
					      sf = cpu * XDPR_DDOS_SLOTS + xdpr_ddos_slot_of(&kfrom);

					bpf_map_update_elem(slotfd, &st, &none, BPF_ANY);
					bpf_map_update_elem(slotfd, &sf, &none, BPF_ANY);
					bpf_map_delete_elem(tofd, &kto);
					bpf_map_delete_elem(fromfd, &kfrom);
				}
				if (bpf_prog_test_run_opts(prog, &o))
					die("BPF_PROG_TEST_RUN: %s", strerror(errno));
				wrong[c] += o.retval != want;
				ns[i] = o.duration;
			}
			if (c == C_BANNED)
				bpf_map_delete_elem(bansfd, &kto);
			qsort(ns, runs, sizeof(*ns), cmp_u32);
			med[c][rd] = ns[runs / 2];
		}
	printf("%d rounds x %d runs, %ld idle hosts tracked each way, %ld bans of other hosts\n", rounds, runs,
	       hosts, nbans);
	printf("%-12s %10s %10s\n", "config", "ns/packet", "vs fwd");
	qsort(med[C_FWD], rounds, sizeof(double), cmp_d);
	for (int c = 0; c < C_N; c++) {
		double m;

		if (c != C_FWD)
			qsort(med[c], rounds, sizeof(double), cmp_d);
		m = med[c][rounds / 2];
		printf("%-12s %10.0f %9.2fx%s\n", names[c], m, m / med[C_FWD][rounds / 2],
		       wrong[c] ? "  WRONG VERDICT" : "");
	}
	for (int c = 0; c < C_N; c++)
		if (wrong[c])
			return 1;
	return 0;
}
