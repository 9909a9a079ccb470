// SPDX-License-Identifier: GPL-2.0
/*
 * vlanbench - what 802.1Q VLANs cost xdpr_main: untagged forwarding against
 * untagged -> VLAN (push), VLAN -> untagged (pop) and VLAN -> VLAN on one
 * trunk (rewrite), IPv4 and IPv6, under BPF_PROG_TEST_RUN.  Run by
 * `bench/run vlan`; method and results in bench/README.md ("VLANs").
 *
 * One BPF_PROG_TEST_RUN per frame (repeat 1): the kernel copies data_in
 * afresh into every run, so each run sees the frame as built, where a
 * repeated run would see its own rewrite (a pushed tag is a tagged frame on
 * a port without VLANs the next time, a popped one an untagged frame for
 * another MAC).  The kernel's duration of a run (ns, the program between
 * two clock reads, not the syscall) is collected for every frame; a
 * one-instruction XDP_PASS program run the same way is the harness's own
 * cost, subtracted.  Configurations interleaved (the order rotates every
 * round), medians over frames and then over rounds.  Every run's verdict
 * is checked (XDP_REDIRECT): a configuration that does not forward is
 * reported, never timed silently.
 *
 * In a private network namespace: untagged ports u0, w0, trunk t0 with
 * VLANs v100 and v200 (veths standing in for VLAN devices, described to
 * the program as the loader describes VLANs: xdpr_ifaces with
 * XDPR_IF_VLAN, parent, VID; xdpr_vlans), static neighbours.
 *
 * Usage: vlanbench [--rounds N] [--runs N] [--cpu C]
 * Benchmarks never fail on a timing: exit 1 only when the set-up fails or
 * a configuration's frames are not forwarded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
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
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdpr_shared.h"
#include "xdpr.skel.h"
#include "testrun.h"

#define MAX_ROUNDS 50

struct dev {
	const char *name, *peer, *mac, *parent;
	__u16 vid;
	__u32 slot;
	const char *addr4, *addr6, *host4, *host6, *host_mac;
	__u32 ifindex;
	__u8 hw[6];
};

static struct dev devs[] = {
	{ "u0", "u0p", "02:00:00:00:01:01", NULL, 0, 1, "10.0.1.1/24", "2001:db8:1::1/64",
	  "10.0.1.2", "2001:db8:1::2", "02:00:00:00:01:02", 0, {} },
	{ "w0", "w0p", "02:00:00:00:02:01", NULL, 0, 2, "10.0.2.1/24", "2001:db8:2::1/64",
	  "10.0.2.2", "2001:db8:2::2", "02:00:00:00:02:02", 0, {} },
	{ "t0", "t0p", "02:00:00:00:10:01", NULL, 0, 3, "10.1.0.1/24", "2001:db8:10::1/64",
	  "10.1.0.2", "2001:db8:10::2", "02:00:00:00:10:02", 0, {} },
	{ "v100", "v100p", "02:00:00:00:64:01", "t0", 100, 4, "10.100.0.1/24", "2001:db8:100::1/64",
	  "10.100.0.2", "2001:db8:100::2", "02:00:00:00:64:02", 0, {} },
	{ "v200", "v200p", "02:00:00:00:c8:01", "t0", 200, 5, "10.200.0.1/24", "2001:db8:200::1/64",
	  "10.200.0.2", "2001:db8:200::2", "02:00:00:00:c8:02", 0, {} },
};
#define NDEVS ((int)(sizeof(devs) / sizeof(devs[0])))

static struct dev *dev_get(const char *name)
{
	for (int i = 0; i < NDEVS; i++)
		if (!strcmp(devs[i].name, name))
			return &devs[i];
	die("no device %s", name);
	return NULL;
}

static void setup(struct xdpr_bpf *skel)
{
	int tx = bpf_map__fd(skel->maps.xdpr_tx_ports), ifs = bpf_map__fd(skel->maps.xdpr_ifaces);
	int vls = bpf_map__fd(skel->maps.xdpr_vlans), vcfg = bpf_map__fd(skel->maps.xdpr_vlan_cfg);
	FILE *f;

	for (int i = 0; i < NDEVS; i++) {
		struct dev *d = &devs[i];
		struct ifreq ifr = {};
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		if (sh("ip link add %s address %s type veth peer name %s", d->name, d->mac, d->peer) ||
		    sh("ip link set %s up && ip link set %s up", d->name, d->peer) ||
		    sh("ip addr add %s dev %s", d->addr4, d->name) ||
		    sh("ip -6 addr add %s dev %s nodad", d->addr6, d->name) ||
		    sh("ip neigh replace %s lladdr %s dev %s nud permanent", d->host4, d->host_mac, d->name) ||
		    sh("ip -6 neigh replace %s lladdr %s dev %s nud permanent", d->host6, d->host_mac, d->name))
			die("cannot set up %s", d->name);
		d->ifindex = if_nametoindex(d->name);
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", d->name);
		if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr))
			die("cannot read the MAC of %s: %s", d->name, strerror(errno));
		memcpy(d->hw, ifr.ifr_hwaddr.sa_data, 6);
		close(fd);
	}
	f = fopen("/proc/sys/net/ipv4/ip_forward", "w");
	if (!f || fputs("1", f) < 0 || fclose(f))
		die("cannot turn IPv4 forwarding on");
	f = fopen("/proc/sys/net/ipv6/conf/all/forwarding", "w");
	if (!f || fputs("1", f) < 0 || fclose(f))
		die("cannot turn IPv6 forwarding on");
	/*
	 * as the loader: ports into the devmap and xdpr_ifaces, each a trunk
	 * number (its position); VLANs into xdpr_ifaces, their settings' copy
	 * into xdpr_vlan_cfg and their port's row of xdpr_vlans
	 */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < NDEVS; i++) {
			struct dev *d = &devs[i];
			struct xdpr_iface c = { .slot = d->slot, .flags = XDPR_IF_XMIT };

			if (!d->parent != !pass)
				continue;
			memcpy(c.mac, d->hw, 6);
			if (d->parent) {
				struct xdpr_vlan_cfg vc = { .ifindex = d->ifindex };
				struct xdpr_iface pc;
				__u32 k;

				c.flags |= XDPR_IF_VLAN;
				c.parent = dev_get(d->parent)->ifindex;
				c.vid = d->vid;
				vc.cfg = c;
				if (bpf_map_lookup_elem(ifs, &c.parent, &pc))
					die("VLAN %s: its port is not registered", d->name);
				k = (pc.trunk - 1) * XDPR_VIDS + d->vid;
				if (bpf_map_update_elem(ifs, &d->ifindex, &c, BPF_ANY) ||
				    bpf_map_update_elem(vcfg, &c.slot, &vc, BPF_ANY) ||
				    bpf_map_update_elem(vls, &k, &c.slot, BPF_ANY))
					die("cannot register VLAN %s: %s", d->name, strerror(errno));
				continue;
			}
			c.trunk = i + 1;
			if (bpf_map_update_elem(tx, &d->ifindex, &d->ifindex, BPF_ANY) ||
			    bpf_map_update_elem(ifs, &d->ifindex, &c, BPF_ANY))
				die("cannot register %s: %s", d->name, strerror(errno));
		}
}

static void put16(__u8 *p, __u16 v) { p[0] = v >> 8; p[1] = v; }

static __u16 csum(const __u8 *p, int n, __u32 sum)
{
	for (; n > 1; n -= 2, p += 2)
		sum += p[0] << 8 | p[1];
	if (n)
		sum += p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* A 64-byte UDP frame (68 tagged) to dev's neighbour, for MAC to, tagged vid (0: untagged). */
static int frame(__u8 *b, int v6, const char *to, __u16 vid, const char *dst_dev)
{
	struct dev *d = dev_get(dst_dev);
	int off = 12, hl = v6 ? 40 : 20, l4len = 64 - ETH_HLEN - hl;
	__u8 *ip, *u;
	__u32 psum;

	memset(b, 0, 128);
	memcpy(b, dev_get(to)->hw, 6);
	memcpy(b + 6, "\x02\x00\x00\x00\xee\x01", 6);
	if (vid)
		put16(b + off, ETH_P_8021Q), put16(b + off + 2, vid), off += 4;
	put16(b + off, v6 ? ETH_P_IPV6 : ETH_P_IP);
	ip = b + off + 2;
	u = ip + hl;
	if (v6) {
		ip[0] = 0x60, put16(ip + 4, l4len), ip[6] = 17, ip[7] = 64;
		inet_pton(AF_INET6, "2001:db8:77::7", ip + 8);
		inet_pton(AF_INET6, d->host6, ip + 24);
		psum = 17 + l4len;
		for (int i = 0; i < 32; i += 2)
			psum += ip[8 + i] << 8 | ip[9 + i];
	} else {
		ip[0] = 0x45, put16(ip + 2, hl + l4len), ip[8] = 64, ip[9] = 17;
		inet_pton(AF_INET, "192.0.2.7", ip + 12);
		inet_pton(AF_INET, d->host4, ip + 16);
		put16(ip + 10, csum(ip, 20, 0));
		psum = 17 + l4len;
		for (int i = 0; i < 8; i += 2)
			psum += ip[12 + i] << 8 | ip[13 + i];
	}
	put16(u, 40000), put16(u + 2, 9), put16(u + 4, l4len);
	put16(u + 6, csum(u, l4len, psum) ?: 0xffff);
	return off + 2 + hl + l4len;
}

struct cfg {
	const char *name;         /* what it measures */
	int v6;
	const char *in, *to;      /* port it arrives on, interface it is addressed to */
	__u16 vid;                /* its tag, 0: none */
	const char *out;          /* the interface the route leaves through */
	int base;                 /* the harness: the XDP_PASS program */
	__u8 b[128];
	int len;
	__u32 med[MAX_ROUNDS];    /* median ns/run of each round */
	__u64 wrong;              /* runs with another verdict than expected */
};

static struct cfg cfgs[] = {
	{ "harness (XDP_PASS)", 0, "u0", "u0", 0, "w0", 1, {}, 0, {}, 0 },
	{ "untagged -> untagged", 0, "u0", "u0", 0, "w0", 0, {}, 0, {}, 0 },
	{ "untagged -> VLAN (push)", 0, "u0", "u0", 0, "v100", 0, {}, 0, {}, 0 },
	{ "VLAN -> untagged (pop)", 0, "t0", "v100", 100, "w0", 0, {}, 0, {}, 0 },
	{ "VLAN -> VLAN (rewrite)", 0, "t0", "v100", 100, "v200", 0, {}, 0, {}, 0 },
	{ "untagged -> untagged", 1, "u0", "u0", 0, "w0", 0, {}, 0, {}, 0 },
	{ "untagged -> VLAN (push)", 1, "u0", "u0", 0, "v100", 0, {}, 0, {}, 0 },
	{ "VLAN -> untagged (pop)", 1, "t0", "v100", 100, "w0", 0, {}, 0, {}, 0 },
	{ "VLAN -> VLAN (rewrite)", 1, "t0", "v100", 100, "v200", 0, {}, 0, {}, 0 },
};
#define NCFGS ((int)(sizeof(cfgs) / sizeof(cfgs[0])))

static double median_d(double *v, int n)
{
	for (int i = 1; i < n; i++) /* insertion sort: n is the number of rounds */
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1], v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* runs frames of c, one test run each: the median of the kernel's durations. */
static __u32 measure(struct cfg *c, int prog, int pass_prog, int runs, __u32 *ns)
{
	struct xdp_md md = { .data_end = c->len, .ingress_ifindex = dev_get(c->in)->ifindex };
	__u8 out[256];

	for (int i = 0; i < runs; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = c->b, .data_size_in = c->len, .data_out = out,
			    .data_size_out = sizeof(out), .ctx_in = &md, .ctx_size_in = sizeof(md), .repeat = 1);

		if (bpf_prog_test_run_opts(c->base ? pass_prog : prog, &o))
			die("BPF_PROG_TEST_RUN: %s", strerror(errno));
		c->wrong += o.retval != (c->base ? XDP_PASS : XDP_REDIRECT);
		ns[i] = o.duration;
	}
	qsort(ns, runs, sizeof(*ns), cmp_u32);
	return ns[runs / 2];
}

int main(int argc, char **argv)
{
	int rounds = 5, runs = 20000, cpu = 1, prog, pass_prog, rc = 0;
	struct bpf_insn pass[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct xdpr_bpf *skel;
	cpu_set_t set;
	__u32 *ns;

	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--runs"))
			runs = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--cpu"))
			cpu = atoi(argv[++i]);
		else {
			fprintf(stderr, "Usage: vlanbench [--rounds N] [--runs N] [--cpu C]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || runs < 100 || runs > 10000000 || cpu < 0 || cpu >= CPU_SETSIZE) {
		fprintf(stderr, "Error: rounds 1..%d, runs 100..10000000, cpu a CPU number\n", MAX_ROUNDS);
		return 2;
	}
	if (geteuid())
		die("needs root (a network namespace, BPF)");
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("cannot pin to CPU %d: %s", cpu, strerror(errno));
	if (unshare(CLONE_NEWNET) || sh("ip link set lo up"))
		die("cannot make a network namespace: %s", strerror(errno));
	skel = xdpr_bpf__open_and_load();
	if (!skel)
		die("cannot load xdpr_main: %s", strerror(errno));
	setup(skel);
	prog = bpf_program__fd(skel->progs.xdpr_main);
	pass_prog = bpf_prog_load(BPF_PROG_TYPE_XDP, "xb_pass", "GPL", pass, 2, NULL);
	if (pass_prog < 0)
		die("cannot load the XDP_PASS program: %s", strerror(errno));
	ns = calloc(runs, sizeof(*ns));
	if (!ns)
		die("out of memory");
	for (int i = 0; i < NCFGS; i++)
		cfgs[i].len = frame(cfgs[i].b, cfgs[i].v6, cfgs[i].to, cfgs[i].vid, cfgs[i].out);

	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < NCFGS; k++) {
			struct cfg *c = &cfgs[(k + r) % NCFGS];

			measure(c, prog, pass_prog, runs / 10, ns); /* warm: caches, per-CPU scratch */
			c->wrong = 0;
			c->med[r] = measure(c, prog, pass_prog, runs, ns);
		}
		fprintf(stderr, "round %d/%d done\n", r + 1, rounds);
	}

	printf("xdpr_main under BPF_PROG_TEST_RUN, one fresh frame a run (64 bytes untagged, 68 tagged),\n"
	       "kernel ns per run: median over %d frames, then over %d rounds [min-max of the rounds];\n"
	       "net = minus the harness (XDP_PASS program) of the same round; ratio = net / net of\n"
	       "untagged -> untagged of the same family and round, median over rounds; CPU %d\n\n",
	       runs, rounds, cpu);
	printf("%-4s %-26s %8s %13s %8s %7s %9s\n", "fam", "path", "ns/run", "[min-max]", "net ns", "ratio",
	       "target");
	for (int i = 0; i < NCFGS; i++) {
		struct cfg *c = &cfgs[i], *fwd = NULL;
		double net[MAX_ROUNDS], ratio[MAX_ROUNDS], raw[MAX_ROUNDS];
		__u32 lo = ~0u, hi = 0;

		for (int j = 0; j < NCFGS; j++)
			if (!cfgs[j].base && cfgs[j].v6 == c->v6 && !strcmp(cfgs[j].name, "untagged -> untagged"))
				fwd = &cfgs[j];
		for (int r = 0; r < rounds; r++) {
			raw[r] = c->med[r];
			net[r] = (double)c->med[r] - cfgs[0].med[r];
			ratio[r] = net[r] / ((double)fwd->med[r] - cfgs[0].med[r]);
			lo = c->med[r] < lo ? c->med[r] : lo;
			hi = c->med[r] > hi ? c->med[r] : hi;
		}
		if (c->base) {
			printf("%-4s %-26s %8.0f %6u-%-6u %8s %7s %9s\n", "-", c->name, median_d(raw, rounds), lo, hi,
			       "-", "-", "");
			continue;
		}
		{
			double m = median_d(ratio, rounds);
			bool is_fwd = c == fwd;

			printf("%-4s %-26s %8.0f %6u-%-6u %8.0f %7.2f %9s%s\n", c->v6 ? "ip6" : "ip4", c->name,
			       median_d(raw, rounds), lo, hi, median_d(net, rounds), m,
			       is_fwd ? "(base)" : m <= 1.15 ? "<=1.15 met" : "<=1.15 NOT",
			       c->wrong ? "  WRONG VERDICTS" : "");
		}
		if (c->wrong) {
			fprintf(stderr, "Error: %s (IPv%d): %llu runs of the last round not forwarded\n", c->name,
				c->v6 ? 6 : 4, (unsigned long long)c->wrong);
			rc = 1;
		}
	}
	free(ns);
	close(pass_prog);
	xdpr_bpf__destroy(skel);
	return rc;
}
