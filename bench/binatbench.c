// SPDX-License-Identifier: GPL-2.0
/*
 * binatbench - what 1:1 NAT (bpf/binat.h) costs xdpr_main against plain
 * forwarding, under BPF_PROG_TEST_RUN, side by side in one run:
 *   fwd-out    10.0.1.2 -> 10.0.2.2, no 1:1 rule anywhere (router flag off)
 *   fwd-in     10.0.2.2 -> 10.0.1.2, the same
 *   binat-out  10.0.1.2 -> 10.0.2.2 out of u1 with "inside 10.0.1.0/24
 *              outside 192.0.2.0/24": source rewritten
 *   binat-in   10.0.2.2 -> 192.0.2.2 arriving on u1: destination rewritten
 *   fwd-flag   10.0.1.2 -> 10.0.2.2 with the router flag on but the egress
 *              without a rule (what routers with 1:1 elsewhere pay)
 * UDP, 64-byte frames.  One test run per frame (repeat 1: a repeated run
 * would see its own rewrite), the kernel's duration of each run (ns, the
 * program only), median over runs, then over rounds; configurations
 * interleaved, the order rotating every round.  Every verdict is checked
 * (XDP_REDIRECT).  Usage: binatbench [--rounds N] [--runs N] [--cpu C].
 * Exit 1 only when the set-up fails or a configuration does not forward.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdpr_shared.h"
#include "xdpr.skel.h"
#include "testrun.h"
#include "trnet.h"

struct cfg {
	const char *name;
	int in;            /* devs[] index it arrives on */
	const char *src, *dst;
	int binat;         /* 1: the router flag on; 2: and u1's interface flag */
	__u8 b[64];
	int len;
	double med[64];
	int wrong;
};

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int rounds = 5, runs = 20000, cpu = 1, ifs, cfgfd, zero = 0, one = 1;
	struct cfg cfgs[] = {
		{ .name = "fwd-out", .in = 0, .src = "10.0.1.2", .dst = "10.0.2.2", .binat = 0 },
		{ .name = "binat-out", .in = 0, .src = "10.0.1.2", .dst = "10.0.2.2", .binat = 2 },
		{ .name = "fwd-in", .in = 1, .src = "10.0.2.2", .dst = "10.0.1.2", .binat = 0 },
		{ .name = "binat-in", .in = 1, .src = "10.0.2.2", .dst = "192.0.2.2", .binat = 2 },
		{ .name = "fwd-flag", .in = 0, .src = "10.0.1.2", .dst = "10.0.2.2", .binat = 1 },
	};
	int n = sizeof(cfgs) / sizeof(cfgs[0]);
	struct xdpr_bpf *skel;
	struct xdpr_binat_rule r = {};
	struct xdpr_binat_key k;
	cpu_set_t set;
	__u32 *ns;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--cpu"))
			cpu = atoi(argv[i + 1]);
		else
			die("usage: binatbench [--rounds N] [--runs N] [--cpu C]");
	}
	if (rounds < 1 || rounds > 64 || runs < 100)
		die("--rounds 1..64, --runs >= 100");
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	skel = xdpr_bpf__open_and_load();
	if (!skel)
		die("cannot load xdpr_main: %s", strerror(errno));
	devs_setup(skel);
	ifs = bpf_map__fd(skel->maps.xdpr_ifaces);
	cfgfd = bpf_map__fd(skel->maps.xdpr_cfg);
	/* the rule, as loader/binat.c writes it */
	r.ifindex = devs[1].ifindex, r.id = 1, r.plen = 24, r.mask = htonl(0xffffff00);
	inet_pton(AF_INET, "10.0.1.0", &r.in_net);
	inet_pton(AF_INET, "192.0.2.0", &r.out_net);
	k = (struct xdpr_binat_key){ 56, r.ifindex, r.out_net };
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_binat), &one, &r, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_binat_in), &k, &r, BPF_ANY))
		die("cannot write the rule");
	k.addr = r.in_net;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_binat_out), &k, &r, BPF_ANY))
		die("cannot write the rule");
	ns = calloc(runs, sizeof(*ns));
	for (int i = 0; i < n; i++)
		cfgs[i].len = udp_frame(cfgs[i].b, cfgs[i].in, cfgs[i].src, cfgs[i].dst);
	for (int rd = 0; rd < rounds; rd++)
		for (int j = 0; j < n; j++) {
			struct cfg *c = &cfgs[(j + rd) % n];
			struct xdpr_cfg g = { .flags = c->binat ? XDPR_CFG_BINAT : 0 };
			struct xdpr_iface ic;
			struct xdp_md md = { .data_end = c->len, .ingress_ifindex = devs[c->in].ifindex };
			__u8 out[128];

			if (bpf_map_update_elem(cfgfd, &zero, &g, BPF_ANY) ||
			    bpf_map_lookup_elem(ifs, &devs[1].ifindex, &ic))
				die("cannot set the configuration");
			ic.flags = c->binat == 2 ? ic.flags | XDPR_IF_BINAT : ic.flags & ~XDPR_IF_BINAT;
			if (bpf_map_update_elem(ifs, &devs[1].ifindex, &ic, BPF_EXIST))
				die("cannot set the interface flag");
			for (int i = 0; i < runs; i++) {
				LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = c->b, .data_size_in = c->len,
					    .data_out = out, .data_size_out = sizeof(out), .ctx_in = &md,
					    .ctx_size_in = sizeof(md), .repeat = 1);

				if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xdpr_main), &o))
					die("BPF_PROG_TEST_RUN: %s", strerror(errno));
				c->wrong += o.retval != XDP_REDIRECT;
				ns[i] = o.duration;
			}
			qsort(ns, runs, sizeof(*ns), cmp_u32);
			c->med[rd] = ns[runs / 2];
		}
	printf("%-10s %10s %10s\n", "config", "ns/packet", "vs fwd");
	for (int i = 0; i < n; i++) {
		struct cfg *c = &cfgs[i];
		double m, base;
		double b[64];

		qsort(c->med, rounds, sizeof(double), cmp_d);
		m = c->med[rounds / 2];
		memcpy(b, cfgs[c->in == 0 ? 0 : 2].med, sizeof(b));
		base = b[rounds / 2];
		printf("%-10s %10.0f %9.2fx%s\n", c->name, m, m / base, c->wrong ? "  NOT FORWARDED" : "");
	}
	for (int i = 0; i < n; i++)
		if (cfgs[i].wrong)
			return 1;
	return 0;
}
