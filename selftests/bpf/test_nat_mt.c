// SPDX-License-Identifier: GPL-2.0
/*
 * test_nat_mt.c - the source NAT of xdpr_main on both CPUs at once.
 *
 * The single-CPU tables (test_nat) cannot see races between CPUs.  Here two
 * threads, pinned to CPU 0 and CPU 1 and released together from a spinning
 * start line, call BPF_PROG_TEST_RUN on the real xdpr_main (repeat 1, each
 * with its own frame buffers) in a private network namespace: inside veth
 * r0 (10.0.1.1/24), outside veth r1 (10.0.2.1/24, remotes 10.0.2.2 and
 * 10.0.2.3, 10.9.0.0/16 behind 10.0.2.2), static neighbours, a masquerade
 * rule on r1 written to the maps as loader/nat.c does.
 *
 *   a. one inside endpoint to 64 remote peers, 32 from each CPU: one outside
 *      port (RFC 4787 REQ-1), every frame forwarded, nothing dropped;
 *   b. one 5-tuple from both CPUs: one session, identical translations, no
 *      drop, no eviction;
 *      in a and b the one drop allowed is drop_nat_busy while the other CPU
 *      was stopped inside a run (every run is timed: one of RUN_STALL or
 *      more overlapping the dropped frame's), each noted;
 *   c. churn for a few seconds with compressed timeouts, a small port range
 *      and xdpr_nat_gc running, then every table dumped: ownership and
 *      reference counts must add up; long-lived flows set up first keep
 *      their ports, and a busy drop needs the other CPU stopped in a run;
 *   d. the host limit recovers once a host's sessions expired, and a flush
 *      leaves no host entries;
 *   e. a second of established traffic, 16 flows both ways from both CPUs:
 *      every map the CPUs share is dumped before and after and must be the
 *      same but for the refreshes bpf/nat.h documents (a session half's
 *      last_seen at most every quarter second, sampled every 20 ms meanwhile;
 *      a binding's last_active); a new session afterwards must show in the
 *      dumps (the comparison sees writes).
 * Rounds of a and b start from empty NAT tables.  A thread that did not
 * start, did not run on its CPU, or saw a BPF_PROG_TEST_RUN error fails the
 * case, and each concurrent case checks in the per-CPU counters that both
 * CPUs forwarded packets.  TAP on stdout; exit 1 if any case failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdpr_shared.h"
#include "libxdpr.h"
#include "xdpr.skel.h"
#include "harness.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* frame.h helpers this test has no use for */
#include "frame.h"
#pragma GCC diagnostic pop

#define OUTA  "10.0.2.1"   /* r1's address: the masquerade address */
#define REM   "10.0.2.2"   /* remote, and the gateway to 10.9.0.0/16 */
#define REM3  "10.0.2.3"
#define IN2   "10.0.1.2"
#define RULE  1

#define MAX_NOTES 4        /* rounds or entries noted per kind of failure */

/* ---- what the test reads from struct xdpr_bind and struct xdpr_host ---- */

/* Every read of a binding's ownership word (xdpr_shared.h) goes through these helpers. */
static __u64 bind_gen(const struct xdpr_bind *b)
{
	return XDPR_BIND_GEN(b->state);
}

static __u32 bind_refs(const struct xdpr_bind *b)
{
	return XDPR_BIND_REFS(b->state);
}

static bool bind_dying(const struct xdpr_bind *b)
{
	return b->state & XDPR_BIND_DYING;
}

static __u32 host_refs(const struct xdpr_host *h)
{
	return h->nsess & ~XDPR_HOST_DYING;
}

/* ---- network namespace ---- */

static __u32 r0_if, r1_if;
static __u8 r0_mac[6], r1_mac[6], c0_mac[6], rem_mac[6];

static const char *const setup_cmds[] = {
	"ip link add r0 address 02:00:00:00:01:01 type veth peer name c0 address 02:00:00:00:01:09",
	"ip link add r1 address 02:00:00:00:02:01 type veth peer name s0 address 02:00:00:00:02:09",
	"ip link set lo up",
	"ip link set r0 up",
	"ip link set c0 up",
	"ip link set r1 up",
	"ip link set s0 up",
	"ip addr add 10.0.1.1/24 dev r0",
	"ip addr add 10.0.2.1/24 dev r1",
	"ip neigh replace 10.0.2.2 lladdr 02:00:00:00:02:02 dev r1 nud permanent",
	"ip neigh replace 10.0.2.3 lladdr 02:00:00:00:02:03 dev r1 nud permanent",
	"ip neigh replace 10.0.1.2 lladdr 02:00:00:00:01:09 dev r0 nud permanent", /* replies (e) */
	"ip route add 10.9.0.0/16 via 10.0.2.2 dev r1",
};

static __be32 ip(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		die("bad IPv4 address \"%s\" in the test", s);
	return a.s_addr;
}

/* 10.0.1.n, 10.9.0.n, ... */
static __be32 ip_n(const char *net24, int n)
{
	return htonl(ntohl(ip(net24)) + n);
}

static const char *ipstr(__be32 a)
{
	static char buf[8][INET_ADDRSTRLEN];
	static int i;

	i = (i + 1) % 8;
	inet_ntop(AF_INET, &a, buf[i], sizeof(buf[i]));
	return buf[i];
}

static void setup_netns(void)
{
	if (unshare(CLONE_NEWNET))
		die("unshare(CLONE_NEWNET): %s", strerror(errno));
	if (sysctl_set("net/ipv4/ip_forward", "1"))
		die("cannot set net.ipv4.ip_forward");
	for (size_t i = 0; i < sizeof(setup_cmds) / sizeof(setup_cmds[0]); i++)
		if (sh("/sbin/%s", setup_cmds[i]))
			die("setup failed: %s", setup_cmds[i]);
	r0_if = if_nametoindex("r0");
	r1_if = if_nametoindex("r1");
	if (!r0_if || !r1_if)
		die("no r0/r1 after setup");
	dev_mac("r0", r0_mac);
	dev_mac("r1", r1_mac);
	mac_parse("02:00:00:00:01:09", c0_mac);
	mac_parse("02:00:00:00:02:02", rem_mac);
}

/* ---- BPF side ---- */

static struct xdpr_bpf *skel;
static int prog_fd, gc_fd, stats_fd, ifaces_fd, cfg_fd, rules_fd, nstats_fd;
static int ct_fd, bind_fd, eim_fd, hosts_fd, ring_fd, ringhd_fd, ncpus;
static size_t ring_vsz;
static __u32 cfg_flags;
static __u32 cfg_udp = XDPR_DEF_UDP; /* the UDP timeout last written */

/* A map the test needs, by its name; its sizes must be the ones the test reads. */
static int map_fd(const char *name, size_t ksz, size_t vsz)
{
	struct bpf_map *m = bpf_object__find_map_by_name(skel->obj, name);

	if (!m)
		die("the BPF object has no map %s", name);
	if ((ksz && bpf_map__key_size(m) != ksz) || (vsz && bpf_map__value_size(m) != vsz))
		die("map %s has %u-byte keys and %u-byte values, the test reads %zu and %zu: "
		    "update it (bind_gen/bind_refs)", name, bpf_map__key_size(m),
		    bpf_map__value_size(m), ksz, vsz);
	return bpf_map__fd(m);
}

static int prog_by_name(const char *name)
{
	struct bpf_program *p = bpf_object__find_program_by_name(skel->obj, name);

	if (!p)
		die("the BPF object has no program %s", name);
	return bpf_program__fd(p);
}

static void register_devs(void)
{
	int tx = bpf_map__fd(skel->maps.xdpr_tx_ports);
	const struct { __u32 ifindex, slot; const __u8 *mac; } d[] = {
		{ r0_if, 1, r0_mac }, { r1_if, 2, r1_mac },
	};

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		struct xdpr_iface c = { .slot = d[i].slot, .flags = XDPR_IF_XMIT };

		memcpy(c.mac, d[i].mac, 6);
		if (bpf_map_update_elem(tx, &d[i].ifindex, &d[i].ifindex, BPF_ANY) ||
		    bpf_map_update_elem(ifaces_fd, &d[i].ifindex, &c, BPF_ANY))
			die("cannot register ifindex %u: %s", d[i].ifindex, strerror(errno));
	}
	ifaces_changed(map_fd(xdpr_map_name(XM_IF_GEN), 4, 4));
}

/* Does bpf_fib_lookup take BPF_FIB_LOOKUP_SRC?  (-EINVAL: no) */
static int probe_fib_src(void)
{
	__s32 buf[16] = { -1 };
	struct xdp_md ctx = { .data_end = sizeof(buf), .ingress_ifindex = 1 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = buf, .data_size_in = sizeof(buf),
		    .data_out = buf, .data_size_out = sizeof(buf), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	if (bpf_prog_test_run_opts(prog_by_name("xdpr_probe"), &o))
		die("cannot run xdpr_probe: %s", strerror(errno));
	return buf[0];
}

static void cfg_write(__u32 udp, __u32 holddown, __u32 host_limit)
{
	struct xdpr_cfg c = {
		.flags = cfg_flags, .tcp_est = XDPR_DEF_TCP_EST, .tcp_trans = XDPR_DEF_TCP_TRANS,
		.udp = udp, .icmp = XDPR_DEF_ICMP, .holddown = holddown, .host_limit = host_limit,
		.nat_sess = XDPR_NAT_DEF_SESS,
	};
	__u32 zero = 0;

	if (bpf_map_update_elem(cfg_fd, &zero, &c, BPF_ANY))
		die("cannot write xdpr_cfg: %s", strerror(errno));
	cfg_udp = udp;
}

/* Masquerade 10.0.1.0/24 to r1's address, outside ports pmin-pmax; on r1 as its only rule. */
static void rule_install(__u16 pmin, __u16 pmax)
{
	struct xdpr_nat_rule r = {
		.ifindex = r1_if, .flags = XDPR_NAT_MASQ, .src_net = ip("10.0.1.0"),
		.src_mask = htonl(0xffffff00), .masq_addr = ip(OUTA), .port_min = pmin,
		.port_max = pmax,
	};
	struct xdpr_iface c;
	__u32 id = RULE;

	if (bpf_map_update_elem(rules_fd, &id, &r, BPF_ANY))
		die("cannot write NAT rule %u: %s", id, strerror(errno));
	if (bpf_map_lookup_elem(ifaces_fd, &r1_if, &c))
		die("cannot read xdpr_ifaces[r1]: %s", strerror(errno));
	memset(c.rules, 0, sizeof(c.rules));
	c.nrules = 1;
	c.rules[0] = RULE;
	if (bpf_map_update_elem(ifaces_fd, &r1_if, &c, BPF_EXIST))
		die("cannot write xdpr_ifaces[r1]: %s", strerror(errno));
	ifaces_changed(map_fd(xdpr_map_name(XM_IF_GEN), 4, 4));
}

/* Every key of a hash map (quiescent), in a malloc'ed array; returns the count. */
static size_t map_keys(int fd, size_t ksz, __u8 **out)
{
	size_t cap = 1024, n = 0;
	__u8 *keys = malloc(cap * ksz);

	if (!keys)
		die("out of memory");
	while (!bpf_map_get_next_key(fd, n ? keys + (n - 1) * ksz : NULL, keys + n * ksz)) {
		if (++n == cap) {
			keys = realloc(keys, (cap *= 2) * ksz);
			if (!keys)
				die("out of memory");
		}
		if (n > 4 * (size_t)XDPR_NAT_DEF_SESS)
			die("a NAT map walk does not end");
	}
	*out = keys;
	return n;
}

static size_t map_count(int fd, size_t ksz)
{
	__u8 *keys;
	size_t n = map_keys(fd, ksz, &keys);

	free(keys);
	return n;
}

/* Empty a hash map; collect the keys first (deleting while walking restarts the walk). */
static void map_clear(int fd, size_t ksz)
{
	for (int pass = 0; pass < 8; pass++) {
		__u8 *keys;
		size_t n = map_keys(fd, ksz, &keys);

		for (size_t i = 0; i < n; i++)
			if (bpf_map_delete_elem(fd, keys + i * ksz) && errno != ENOENT)
				die("cannot delete a NAT map entry: %s", strerror(errno));
		free(keys);
		if (!n)
			return;
	}
	die("a NAT map does not empty");
}

/*
 * The ring of recent sessions as after load: the slots used so far zeroed
 * and the head back at 0 (or, without a head map, every slot zeroed).
 */
static void ring_reset(void)
{
	__u32 zero = 0, n = XDPR_NAT_DEF_SESS;
	__u64 hd = 0;
	__u8 *z;

	if (ring_fd < 0)
		return;
	if (ringhd_fd >= 0) {
		if (bpf_map_lookup_elem(ringhd_fd, &zero, &hd))
			die("cannot read xdpr_nat_ringhd: %s", strerror(errno));
		n = hd < XDPR_NAT_DEF_SESS ? hd : XDPR_NAT_DEF_SESS;
	}
	z = calloc(1, ring_vsz);
	if (!z)
		die("out of memory");
	for (__u32 i = 0; i < n; i++)
		if (bpf_map_update_elem(ring_fd, &i, z, BPF_ANY))
			die("cannot clear xdpr_nat_ring[%u]: %s", i, strerror(errno));
	free(z);
	hd = 0;
	if (ringhd_fd >= 0 && bpf_map_update_elem(ringhd_fd, &zero, &hd, BPF_ANY))
		die("cannot reset xdpr_nat_ringhd: %s", strerror(errno));
}

/* Fresh NAT state: empty tables, these timeouts and limit, the rule with this port range. */
static void fresh(__u32 udp, __u32 holddown, __u32 host_limit, __u16 pmin, __u16 pmax)
{
	ct_clear();
	map_clear(bind_fd, sizeof(struct xdpr_bind_key));
	map_clear(eim_fd, sizeof(struct xdpr_eim_key));
	map_clear(hosts_fd, sizeof(__be32));
	ring_reset();
	cfg_write(udp, holddown, host_limit);
	rule_install(pmin, pmax);
}

/* Run xdpr_nat_gc as the CLI does (loader/nat.c xdpr_nat_gc): 0 or -errno / -EPROTO. */
static int run_gc(__u32 op, struct xdpr_gc_cmd *res)
{
	struct xdpr_gc_cmd cmd[2] = { { .op = op } }, out[2] = {}; /* >= ETH_HLEN of input */
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = cmd, .data_size_in = sizeof(cmd),
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	if (bpf_prog_test_run_opts(gc_fd, &o))
		return -errno;
	if (o.retval != XDP_PASS)
		return -EPROTO;
	if (res)
		*res = out[0];
	return 0;
}

/* ---- counters ---- */

struct evs {
	__u64 n[XDPR_NE_MAX];
};

static void read_ev(struct evs *e)
{
	__u64 *v = calloc(ncpus, sizeof(*v));

	if (!v)
		die("out of memory");
	for (int i = 0; i < XDPR_NE_MAX; i++) {
		__u32 key = RULE * XDPR_NE_MAX + i;

		if (bpf_map_lookup_elem(nstats_fd, &key, v))
			die("cannot read xdpr_nat_stats[%u]: %s", key, strerror(errno));
		e->n[i] = 0;
		for (int c = 0; c < ncpus; c++)
			e->n[i] += v[c];
	}
	free(v);
}

/* Inside interface counters, summed over CPUs, and packets per CPU. */
struct snap {
	struct xdpr_ctr r[XDPR_REASON_MAX];
	struct evs ev;
	__u64 cpu_pk[2];
};

static void snap_take(struct snap *s)
{
	struct xdpr_slot *pc = calloc(ncpus, sizeof(*pc));
	__u32 slot = 1;

	if (!pc || bpf_map_lookup_elem(stats_fd, &slot, pc))
		die("cannot read xdpr_stats slot 1: %s", strerror(errno));
	read_slot_sum(stats_fd, ncpus, slot, s->r);
	for (int c = 0; c < 2 && c < ncpus; c++) {
		s->cpu_pk[c] = 0;
		for (int r = 0; r < XDPR_REASON_MAX; r++)
			s->cpu_pk[c] += pc[c].reason[r].packets;
	}
	free(pc);
	read_ev(&s->ev);
}

static __u64 rdelta(const struct snap *a, const struct snap *b, int reason)
{
	return b->r[reason].packets - a->r[reason].packets;
}

static __u64 edelta(const struct snap *a, const struct snap *b, int ev)
{
	return b->ev.n[ev] - a->ev.n[ev];
}

/* Reasons that moved other than those allowed (bits), as "name +n, ..."; true if none. */
static bool only_reasons(const struct snap *a, const struct snap *b, __u64 allowed, char *buf,
			 size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (int i = 0; i < XDPR_REASON_MAX; i++) {
		__u64 d = rdelta(a, b, i);

		if (d && !(allowed & (1ULL << i)) && o < len)
			o += snprintf(buf + o, len - o, "%s%s +%llu", o ? ", " : "",
				      xdpr_reason_name(i), (unsigned long long)d);
	}
	return !buf[0];
}

/* These NAT events must not have moved: the ones a race turns a good packet into. */
static const int bad_events[] = {
	XDPR_NE_SESS_EVICTED, XDPR_NE_TABLE_FULL, XDPR_NE_NO_PORT, XDPR_NE_HOST_LIMIT,
	XDPR_NE_UNTRANSLATABLE, XDPR_NE_PAIR_REPAIRED,
};

static bool no_bad_events(const struct snap *a, const struct snap *b, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(bad_events) / sizeof(bad_events[0]); i++) {
		__u64 d = edelta(a, b, bad_events[i]);

		if (d && o < len)
			o += snprintf(buf + o, len - o, "%s%s +%llu", o ? ", " : "",
				      xdpr_nat_event_name(bad_events[i]), (unsigned long long)d);
	}
	return !buf[0];
}

/* Both CPUs forwarded through the inside interface between a and b. */
static bool both_cpus(const struct snap *a, const struct snap *b)
{
	__u64 d0 = b->cpu_pk[0] - a->cpu_pk[0], d1 = b->cpu_pk[1] - a->cpu_pk[1];

	note("per-CPU xdpr_stats slot 1: CPU 0 +%llu packets, CPU 1 +%llu packets",
	     (unsigned long long)d0, (unsigned long long)d1);
	if (d0 && d1)
		return true;
	note("the per-CPU counters do not show packets on both CPUs");
	return false;
}

/* ---- frames ---- */

#define PAYLOAD 16

/* UDP sport -> dst port 7 (frame.h build_l4) with every checksum from scratch. */
static void udp4(struct frame *f, const __u8 dmac[6], const __u8 smac[6], __be32 s, __u16 sport,
		 __be32 d, __u8 ttl)
{
	int len = 8 + PAYLOAD;
	struct iphdr *iph;

	memset(f, 0, sizeof(*f));
	memcpy(f->b, dmac, 6);
	memcpy(f->b + 6, smac, 6);
	put16(f->b + 12, ETH_P_IP);
	f->l3 = ETH_HLEN;
	f->l4 = ETH_HLEN + 20;
	f->len = f->l4 + len;
	iph = ip4(f);
	iph->version = 4;
	iph->ihl = 5;
	iph->tot_len = htons(20 + len);
	iph->id = htons(0x4d54);
	iph->ttl = ttl;
	iph->protocol = IPPROTO_UDP;
	iph->saddr = s;
	iph->daddr = d;
	ip4_fix(f);
	build_l4(f, IPPROTO_UDP, sport, len, sum16(&iph->saddr, 8, IPPROTO_UDP + len));
}

/* As it arrives on r0 from an inside host. */
static void frame_in(struct frame *f, __be32 src, __u16 sport, __be32 dst)
{
	udp4(f, r0_mac, c0_mac, src, sport, dst, 64);
}

/* As it must leave r1 translated to OUTA:port, to the neighbour nh. */
static void frame_out(struct frame *f, __u16 port, __be32 dst, const __u8 nh[6])
{
	udp4(f, nh, r1_mac, ip(OUTA), port, dst, 63);
}

static __u16 out_sport(const struct frame *f)
{
	return f->len >= f->l4 + 2 ? get16(f->b + f->l4) : 0;
}

/* ---- two threads, one per CPU ---- */

struct worker;
typedef void (*job_fn)(struct worker *w);

struct worker {
	int cpu;                /* CPU it must run on */
	job_fn job;
	void *arg;              /* the case's state for this thread */
	pthread_t th;
	bool created;           /* pthread_create succeeded */
	int pin_err;            /* pthread_setaffinity_np result */
	int cpu_start, cpu_end; /* sched_getcpu() before and after the job */
	bool released;          /* the other thread reached the start line too */
	bool ran;               /* the job ran to its end */
	long runs;              /* BPF_PROG_TEST_RUN calls */
	long errs;              /* of those, failed (or wrong program return for gc) */
	int first_err;          /* errno of the first failure */
};

static atomic_int start_line, start_abort;

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker_main(void *p)
{
	struct worker *w = p;
	double deadline = mono() + 5;
	cpu_set_t set;
	long spins = 0;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	w->pin_err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	w->cpu_start = sched_getcpu();
	/* start together: the second to arrive releases the first, which spins */
	atomic_fetch_add(&start_line, 1);
	while (atomic_load(&start_line) < 2 && !atomic_load(&start_abort))
		if (++spins % 4096 == 0 && mono() > deadline)
			break;
	w->released = atomic_load(&start_line) >= 2 && !atomic_load(&start_abort);
	if (w->released && !w->pin_err && w->cpu_start == w->cpu) {
		w->job(w);
		w->ran = true;
	}
	w->cpu_end = sched_getcpu();
	return NULL;
}

/* One run of xdpr_main from a worker; false (counted) on a syscall error. */
static bool w_run(struct worker *w, const struct frame *in, struct frame *out, __u32 *verdict)
{
	int err = run_frame(prog_fd, r0_if, in, out, verdict);

	w->runs++;
	if (err) {
		if (!w->errs++)
			w->first_err = -err;
		return false;
	}
	return true;
}

/*
 * drop_nat_busy is the datapath's answer when a CPU's bounded wait for a
 * claim runs out (eim_wait: ~1 ms of lookups) while the other CPU holds
 * it.  Between two runs of a microsecond each that can only be because the
 * holder was stopped inside its run: preempted, or its vCPU descheduled by
 * the host.  A run this long (s) is such a stop: longer than the shortest
 * bounded wait of the datapath, and a hundred times a run's usual length.
 */
#define RUN_STALL 100e-6

/* One run of xdpr_main on a CPU: when it started and ended (mono()). */
struct run_span {
	double t0, t1;
};

/* w_run, timed into sp. */
static bool w_run_timed(struct worker *w, const struct frame *in, struct frame *out, __u32 *verdict,
			struct run_span *sp)
{
	bool ok;

	sp->t0 = mono();
	ok = w_run(w, in, out, verdict);
	sp->t1 = mono();
	return ok;
}

/* The longest of the n runs in o that overlapped [t0, t1] (s); 0 if none did. */
static double run_overlap_longest(const struct run_span *o, int n, double t0, double t1)
{
	double longest = 0;

	for (int i = 0; i < n; i++)
		if (o[i].t0 <= t1 && o[i].t1 >= t0 && o[i].t1 - o[i].t0 > longest)
			longest = o[i].t1 - o[i].t0;
	return longest;
}

/*
 * The frames of a round that were not redirected: each must have been
 * dropped behind a stopped run of the other CPU (one of RUN_STALL or more
 * overlapping its own), and drop_nat_busy must count them all.  CPU c ran
 * n frames: verdicts v[c][i], ran r[c][i], spans sp[c][i].  Returns the
 * frames so excused (noted, and added to *stalled), or -1 with the first
 * unexcused one in why (the runs' lengths: the evidence either way).
 */
static int busy_excused(const __u32 *const v[2], const bool *const r[2], const struct run_span *const sp[2],
			int n, __u64 busy, int round, int *stalled, char *why, size_t len)
{
	int excused = 0;

	why[0] = 0;
	for (int c = 0; c < 2; c++)
		for (int i = 0; i < n; i++) {
			const struct run_span *s = &sp[c][i];
			double other;

			if (!r[c][i] || v[c][i] == XDP_REDIRECT)
				continue;
			other = run_overlap_longest(sp[1 - c], n, s->t0, s->t1);
			if (other < RUN_STALL) {
				snprintf(why, len, "CPU %d frame %d (verdict %u, its run %.0f us): the "
					 "other CPU's longest overlapping run %.0f us, under %.0f us",
					 c, i, v[c][i], (s->t1 - s->t0) * 1e6, other * 1e6, RUN_STALL * 1e6);
				return -1;
			}
			excused++;
		}
	if ((__u64)excused != busy) {
		snprintf(why, len, "%d frames dropped behind a stopped run, drop_nat_busy +%llu", excused,
			 (unsigned long long)busy);
		return -1;
	}
	if (excused)
		note("round %d: %d frame%s dropped as drop_nat_busy while the other CPU was stopped in a "
		     "run (the datapath's bounded wait)", round, excused, excused == 1 ? "" : "s");
	*stalled += excused;
	return excused;
}

static bool w_gc(struct worker *w, struct xdpr_gc_cmd *res)
{
	int err = run_gc(XDPR_GC_EXPIRED, res);

	w->runs++;
	if (err) {
		if (!w->errs++)
			w->first_err = -err;
		return false;
	}
	return true;
}

/* Start job on CPU 0 and CPU 1 together (arg0/arg1 their states), wait for both. */
static void run_pair(struct worker w[2], job_fn job, void *arg0, void *arg1)
{
	void *args[2] = { arg0, arg1 };

	atomic_store(&start_line, 0);
	atomic_store(&start_abort, 0);
	for (int i = 0; i < 2; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].cpu = i;
		w[i].job = job;
		w[i].arg = args[i];
		w[i].cpu_start = w[i].cpu_end = -1;
	}
	for (int i = 0; i < 2; i++) {
		int err = pthread_create(&w[i].th, NULL, worker_main, &w[i]);

		w[i].created = !err;
		if (err) {
			w[i].first_err = err;
			atomic_store(&start_abort, 1);
			break;
		}
	}
	for (int i = 0; i < 2; i++)
		if (w[i].created)
			pthread_join(w[i].th, NULL);
}

/* Did both threads start, run on their CPUs to the end, without a syscall error? */
static bool pair_ok(const struct worker w[2], const char *what)
{
	bool ok = true;

	for (int i = 0; i < 2; i++) {
		const struct worker *t = &w[i];

		if (!t->created) {
			note("%s: thread for CPU %d not created: %s", what, t->cpu,
			     strerror(t->first_err));
			ok = false;
			continue;
		}
		if (t->pin_err)
			note("%s: pthread_setaffinity_np(CPU %d): %s", what, t->cpu,
			     strerror(t->pin_err));
		if (t->cpu_start != t->cpu || t->cpu_end != t->cpu)
			note("%s: thread for CPU %d ran on CPU %d (start) / %d (end)", what, t->cpu,
			     t->cpu_start, t->cpu_end);
		if (!t->released)
			note("%s: thread for CPU %d was never joined at the start line", what, t->cpu);
		if (t->errs)
			note("%s: thread on CPU %d: %ld of %ld BPF_PROG_TEST_RUN calls failed, first: %s",
			     what, t->cpu, t->errs, t->runs, strerror(t->first_err));
		if (t->pin_err || t->cpu_start != t->cpu || t->cpu_end != t->cpu || !t->released ||
		    !t->ran || t->errs || !t->runs)
			ok = false;
	}
	return ok;
}

/* ---- a. one endpoint, 64 peers, both CPUs ---- */

#define A_ROUNDS 200
#define A_PEERS  64
#define A_SPORT  5000

struct a_thread {
	int n;
	struct frame in[A_PEERS / 2], out[A_PEERS / 2];
	__u32 verdict[A_PEERS / 2];
	bool ran[A_PEERS / 2];
	struct run_span sp[A_PEERS / 2];
};

static void a_job(struct worker *w)
{
	struct a_thread *t = w->arg;

	for (int i = 0; i < t->n; i++)
		t->ran[i] = w_run_timed(w, &t->in[i], &t->out[i], &t->verdict[i], &t->sp[i]);
}

static __be32 a_peer(int i)
{
	return ip_n("10.9.0.0", 1 + i);
}

static bool t_eim_two_cpus(void)
{
	struct a_thread *t = calloc(2, sizeof(*t));
	struct worker w[2];
	struct snap s0, s1, c0, c1;
	int bad_rounds = 0, split_rounds = 0, max_ports = 0, noted = 0, stalled = 0;
	long frames = 0, not_fwd = 0, wrong_bytes = 0, not_run = 0;
	bool ok = true, threads_ok = true;
	char buf[512], why[256];
	const __u32 *v[2];
	const bool *r[2];
	const struct run_span *sp[2];

	if (!t)
		die("out of memory");
	for (int c = 0; c < 2; c++) {
		v[c] = t[c].verdict; /* busy_excused's view of both threads */
		r[c] = t[c].ran;
		sp[c] = t[c].sp;
		t[c].n = A_PEERS / 2;
		for (int i = 0; i < t[c].n; i++)
			frame_in(&t[c].in[i], ip(IN2), A_SPORT, a_peer(c * (A_PEERS / 2) + i));
	}
	snap_take(&c0);
	for (int round = 0; round < A_ROUNDS; round++) {
		__u16 ports[A_PEERS];
		int nports = 0, cnt[A_PEERS] = { 0 };
		struct frame want;
		bool round_ok = true, bytes_bad = false;
		struct xdpr_eim_key ek = { .in_addr = ip(IN2), .in_port = htons(A_SPORT),
					   .proto = IPPROTO_UDP, .rule = RULE };
		struct xdpr_eim_val ev;
		size_t nct;
		int drops, peers;

		fresh(XDPR_DEF_UDP, XDPR_DEF_HOLDDOWN, XDPR_DEF_HOST_LIMIT, 1024, 65535);
		snap_take(&s0);
		run_pair(w, a_job, &t[0], &t[1]);
		snap_take(&s1);
		if (!pair_ok(w, "round")) {
			note("stopped at round %d: the two threads did not both run as required",
			     round + 1);
			threads_ok = false;
			break;
		}
		for (int c = 0; c < 2; c++)
			for (int i = 0; i < t[c].n; i++) {
				const struct frame *o = &t[c].out[i];
				__u16 p = out_sport(o);
				int k;

				frames++;
				if (!t[c].ran[i]) {
					not_run++;
					round_ok = false;
					continue;
				}
				if (t[c].verdict[i] != XDP_REDIRECT) {
					not_fwd++;
					continue; /* judged below: a busy drop behind a stopped run, or a failure */
				}
				for (k = 0; k < nports && ports[k] != p; k++)
					;
				if (k == nports)
					ports[nports++] = p;
				cnt[k]++;
				frame_out(&want, p, a_peer(c * (A_PEERS / 2) + i), rem_mac);
				if (t[c].verdict[i] == XDP_REDIRECT &&
				    (want.len != o->len || memcmp(want.b, o->b, want.len))) {
					wrong_bytes++;
					bytes_bad = true;
				}
			}
		if (nports > max_ports)
			max_ports = nports;
		if (nports != 1) {
			split_rounds++;
			round_ok = false;
		}
		if (bytes_bad)
			round_ok = false;
		/* a frame not redirected: only a busy drop while the other CPU was stopped */
		drops = busy_excused(v, r, sp, A_PEERS / 2, rdelta(&s0, &s1, XDPR_DROP_NAT_BUSY), round + 1,
				     &stalled, why, sizeof(why));
		if (drops < 0) {
			round_ok = false;
			drops = 0;
		}
		peers = A_PEERS - drops;
		nct = ct_halves();
		if (nct != 2 * (size_t)peers)
			round_ok = false;
		if (bpf_map_lookup_elem(eim_fd, &ek, &ev) ||
		    (nports == 1 && ntohs(ev.out_port) != ports[0]))
			round_ok = false;
		if (rdelta(&s0, &s1, XDPR_FWD) != (__u64)peers ||
		    !only_reasons(&s0, &s1, 1ULL << XDPR_FWD | 1ULL << XDPR_DROP_NAT_BUSY, buf, 256))
			round_ok = false;
		if (!no_bad_events(&s0, &s1, buf + 256, 256))
			round_ok = false;
		if (nports == 1) {
			struct xdpr_bind_key bk = { .out_addr = ip(OUTA), .out_port = htons(ports[0]),
						    .proto = IPPROTO_UDP };
			struct xdpr_bind b;

			if (bpf_map_lookup_elem(bind_fd, &bk, &b) || bind_refs(&b) != (__u32)peers ||
			    b.in_addr != ip(IN2) || ntohs(b.in_port) != A_SPORT)
				round_ok = false;
		}
		if (round_ok)
			continue;
		bad_rounds++;
		if (noted++ < MAX_NOTES) {
			char pl[256], ml[64];
			size_t o = 0;

			for (int k = 0; k < nports && o < sizeof(pl); k++)
				o += snprintf(pl + o, sizeof(pl) - o, "%s%u x%d", k ? ", " : "",
					      ports[k], cnt[k]);
			pl[sizeof(pl) - 1] = 0;
			only_reasons(&s0, &s1, 1ULL << XDPR_FWD, buf, 256);
			no_bad_events(&s0, &s1, buf + 256, 256);
			note("round %d: %d outside port%s for 10.0.1.2:5000 (%s); fwd +%llu of %d; "
			     "other reasons: %s; events: %s; %zu ct entries (want %d); mapping -> %s%s%s",
			     round + 1, nports, nports == 1 ? "" : "s", pl,
			     (unsigned long long)rdelta(&s0, &s1, XDPR_FWD), A_PEERS,
			     buf[0] ? buf : "none", buf[256] ? buf + 256 : "none", nct, 2 * peers,
			     bpf_map_lookup_elem(eim_fd, &ek, &ev) ? "none" :
			     (snprintf(ml, sizeof(ml), "%s:%u", ipstr(ev.out_addr),
				       ntohs(ev.out_port)), ml), why[0] ? "; " : "", why);
		}
	}
	snap_take(&c1);
	ok &= threads_ok;
	ok &= both_cpus(&c0, &c1);
	note("%d rounds x %d peers (32 per CPU): %d round%s not clean, %d with the endpoint on "
	     "more than one outside port (at most %d), %ld of %ld frames not redirected (%d of "
	     "them busy drops behind a stopped run), %ld redirected with wrong bytes, %ld runs "
	     "missing", A_ROUNDS, A_PEERS, bad_rounds, bad_rounds == 1 ? "" : "s", split_rounds,
	     max_ports, not_fwd, frames, stalled, wrong_bytes, not_run);
	ok &= bad_rounds == 0 && frames == (long)A_ROUNDS * A_PEERS;
	free(t);
	return ok;
}

/* ---- b. one 5-tuple from both CPUs ---- */

#define B_ROUNDS 400
#define B_SENDS  4
#define B_SPORT  6000

struct b_thread {
	const struct frame *in;
	struct frame out[B_SENDS];
	__u32 verdict[B_SENDS];
	bool ran[B_SENDS];
	struct run_span sp[B_SENDS];
};

static void b_job(struct worker *w)
{
	struct b_thread *t = w->arg;

	for (int i = 0; i < B_SENDS; i++)
		t->ran[i] = w_run_timed(w, t->in, &t->out[i], &t->verdict[i], &t->sp[i]);
}

static bool t_tuple_two_cpus(void)
{
	struct b_thread *t = calloc(2, sizeof(*t));
	struct frame in, want;
	struct worker w[2];
	struct snap s0, s1, c0, c1;
	int bad_rounds = 0, noted = 0, two_ports = 0, not_one_sess = 0, dropped_rounds = 0;
	int ev_rounds = 0, ref_rounds = 0, stalled = 0;
	bool ok = true, threads_ok = true;
	struct evs evsum = {};
	__u64 rsum[XDPR_REASON_MAX] = { 0 };
	char buf[512], why[256];
	const __u32 *v[2];
	const bool *r[2];
	const struct run_span *sp[2];

	if (!t)
		die("out of memory");
	for (int c = 0; c < 2; c++) { /* busy_excused's view of both threads */
		v[c] = t[c].verdict;
		r[c] = t[c].ran;
		sp[c] = t[c].sp;
	}
	frame_in(&in, ip(IN2), B_SPORT, ip(REM));
	t[0].in = t[1].in = &in;
	snap_take(&c0);
	for (int round = 0; round < B_ROUNDS; round++) {
		struct xdpr_ct_key ko = { .saddr = ip(IN2), .daddr = ip(REM), .sport = htons(B_SPORT),
					  .dport = htons(7), .proto = IPPROTO_UDP, .dir = XDPR_CT_OUT };
		struct xdpr_ct_key ki;
		struct xdpr_ct_val vo, vi;
		struct xdpr_bind_key bk;
		struct xdpr_bind b;
		struct xdpr_host h;
		__be32 in_addr = ip(IN2);
		__u16 port = 0, p2 = 0;
		bool round_ok = true, diff = false, have_o, have_i = false, have_b = false;
		size_t nct;
		int nfwd = 0, drops;

		fresh(XDPR_DEF_UDP, XDPR_DEF_HOLDDOWN, XDPR_DEF_HOST_LIMIT, 1024, 65535);
		snap_take(&s0);
		run_pair(w, b_job, &t[0], &t[1]);
		snap_take(&s1);
		if (!pair_ok(w, "round")) {
			note("stopped at round %d: the two threads did not both run as required",
			     round + 1);
			threads_ok = false;
			break;
		}
		for (int c = 1; c >= 0; c--) /* the first forwarded frame sets the port */
			for (int i = B_SENDS - 1; i >= 0; i--)
				if (t[c].ran[i] && t[c].verdict[i] == XDP_REDIRECT)
					port = out_sport(&t[c].out[i]);
		frame_out(&want, port, ip(REM), rem_mac);
		for (int c = 0; c < 2; c++)
			for (int i = 0; i < B_SENDS; i++) {
				const struct frame *o = &t[c].out[i];

				if (!t[c].ran[i]) {
					round_ok = false;
					continue;
				}
				if (t[c].verdict[i] != XDP_REDIRECT)
					continue; /* judged below: a busy drop behind a stopped run, or a failure */
				nfwd++;
				if (out_sport(o) != port) {
					diff = true;
					p2 = out_sport(o);
				}
				if (want.len != o->len || memcmp(want.b, o->b, want.len))
					diff = true;
			}
		if (diff) {
			two_ports++;
			round_ok = false;
		}
		/* a frame not redirected: only a busy drop while the other CPU was stopped */
		drops = busy_excused(v, r, sp, B_SENDS, rdelta(&s0, &s1, XDPR_DROP_NAT_BUSY), round + 1,
				     &stalled, why, sizeof(why));
		if (drops < 0) {
			dropped_rounds++;
			round_ok = false;
			drops = 0;
		}
		if (nfwd + drops != 2 * B_SENDS)
			round_ok = false;
		nct = ct_halves();
		have_o = !ct_read(&ko, &vo);
		if (have_o) {
			ki = (struct xdpr_ct_key){ .saddr = ip(REM), .daddr = vo.xaddr, .sport = htons(7),
						   .dport = vo.xport, .proto = IPPROTO_UDP,
						   .dir = XDPR_CT_IN };
			have_i = !ct_read(&ki, &vi);
			bk = (struct xdpr_bind_key){ .out_addr = vo.xaddr, .out_port = vo.xport,
						     .proto = IPPROTO_UDP };
			have_b = !bpf_map_lookup_elem(bind_fd, &bk, &b);
		}
		if (nct != 2 || !have_o || !have_i || ntohs(vo.xport) != port ||
		    vi.xaddr != in_addr || ntohs(vi.xport) != B_SPORT) {
			not_one_sess++;
			round_ok = false;
		}
		if (!only_reasons(&s0, &s1, 1ULL << XDPR_FWD | 1ULL << XDPR_DROP_NAT_BUSY, buf, 256) ||
		    rdelta(&s0, &s1, XDPR_FWD) != (__u64)nfwd)
			round_ok = false;
		if (!no_bad_events(&s0, &s1, buf + 256, 256) ||
		    edelta(&s0, &s1, XDPR_NE_SESS_NEW) != 1) {
			ev_rounds++;
			round_ok = false;
		}
		if (!have_b || bind_refs(&b) != 1 || bpf_map_lookup_elem(hosts_fd, &in_addr, &h) ||
		    host_refs(&h) != 1) {
			ref_rounds++;
			round_ok = false;
		}
		for (int i = 0; i < XDPR_REASON_MAX; i++)
			rsum[i] += rdelta(&s0, &s1, i);
		for (int i = 0; i < XDPR_NE_MAX; i++)
			evsum.n[i] += edelta(&s0, &s1, i);
		if (round_ok)
			continue;
		bad_rounds++;
		/* the first rounds, and the first few of the rarer kinds */
		if (noted < MAX_NOTES || (noted < 2 * MAX_NOTES && (diff || nct != 2))) {
			char pp[32] = "";

			if (p2)
				snprintf(pp, sizeof(pp), " and %u", p2);
			noted++;
			only_reasons(&s0, &s1, 1ULL << XDPR_FWD, buf, 256); /* busy drops named too */
			note("round %d: %d of %d frames redirected; translations %s (port %u%s); "
			     "%zu ct entries (want 2), session port %d; sessions_new +%llu; "
			     "other reasons: %s; events: %s; binding refs %d, host refs %d (want 1, 1)%s%s",
			     round + 1, nfwd, 2 * B_SENDS, diff ? "DIFFER" : "identical", port, pp,
			     nct, have_o ? ntohs(vo.xport) : -1,
			     (unsigned long long)edelta(&s0, &s1, XDPR_NE_SESS_NEW),
			     buf[0] ? buf : "none", buf[256] ? buf + 256 : "none",
			     have_b ? (int)bind_refs(&b) : -1,
			     bpf_map_lookup_elem(hosts_fd, &in_addr, &h) ? -1 : (int)host_refs(&h),
			     why[0] ? "; " : "", why);
		}
	}
	snap_take(&c1);
	ok &= threads_ok;
	ok &= both_cpus(&c0, &c1);
	note("%d rounds x %d frames per CPU: %d round%s not clean: %d with a drop not explained "
	     "by a stopped CPU, %d with differing translations, %d without exactly one session, "
	     "%d with drop/eviction events or sessions_new != 1, %d with binding/host refs != 1; "
	     "%d busy drops behind a stopped run", B_ROUNDS, B_SENDS, bad_rounds,
	     bad_rounds == 1 ? "" : "s", dropped_rounds, two_ports, not_one_sess, ev_rounds,
	     ref_rounds, stalled);
	note("over all rounds: drop_nat_no_port +%llu, drop_nat_full +%llu, sessions_evicted "
	     "+%llu, table_full +%llu, no_port +%llu, sessions_new +%llu",
	     (unsigned long long)rsum[XDPR_DROP_NAT_NO_PORT],
	     (unsigned long long)rsum[XDPR_DROP_NAT_FULL],
	     (unsigned long long)evsum.n[XDPR_NE_SESS_EVICTED],
	     (unsigned long long)evsum.n[XDPR_NE_TABLE_FULL],
	     (unsigned long long)evsum.n[XDPR_NE_NO_PORT],
	     (unsigned long long)evsum.n[XDPR_NE_SESS_NEW]);
	ok &= bad_rounds == 0;
	free(t);
	return ok;
}

/* ---- c. churn, then every table must add up ---- */

#define C_SECS      5.0
#define C_PMIN      1024
#define C_PMAX      1279   /* 256 outside ports */
#define C_HOSTS     4      /* 10.0.1.2 - 10.0.1.5 */
#define C_PORTS     2000   /* inside ports 10000 - 11999 of each */
#define C_ENDPOINTS (C_HOSTS * C_PORTS)
#define C_WINDOW    640    /* endpoints active at once ... */
#define C_SHIFT     320    /* ... moving on by this many every C_STEP s */
#define C_STEP      0.2
#define C_LL        8      /* long-lived flows per CPU (10.0.1.6), sent every C_LL_EVERY */
#define C_LL_EVERY  32
#define C_GC_EVERY  0.02   /* s between xdpr_nat_gc runs on each CPU */
#define C_SAMPLE    64     /* churn runs between reads of this CPU's drop_nat_busy counter */
#define C_STALL     RUN_STALL
#define C_SLOW      50e-6  /* after a run this long, look at busy at once: a run that gave up waiting is slow */
#define C_MAX_SPANS 1024

static double c_t0;
static atomic_int c_ll_line;

/* A stretch of time on one CPU: a long run, or a sample window in which busy moved. */
struct c_span {
	double t0, t1;
	long n;                 /* busy windows: drop_nat_busy in it */
};

struct c_thread {
	__be32 rem;             /* this CPU's remote: the same endpoints, other peers */
	long fwd, drop, other;  /* verdicts of the churn flows */
	long ll_moved, ll_not_fwd;    /* long-lived flows: port changed, not forwarded */
	long ll_unset;          /* long-lived flows not forwarded before the churn began */
	bool ll_line_late;      /* the other CPU never set up its long-lived flows */
	__u16 ll_port[C_LL];
	long gc_runs, gc_deleted, gc_freed;
	long busy;              /* drop_nat_busy on this CPU while the job ran */
	__u64 busy_last;        /* this CPU's drop_nat_busy at the last sample ... */
	double t_sample;        /* ... taken then */
	double longest;         /* its longest run of xdpr_main (s) */
	long nstall, nbusyw;    /* spans noted (more may have happened: counted, not kept) */
	struct c_span stall[C_MAX_SPANS], busyw[C_MAX_SPANS];
	struct xdpr_slot *pc;   /* per-CPU read buffer for xdpr_stats */
	struct frame in, out, ll_in[C_LL];
};

static __be32 c_host(int e) { return ip_n("10.0.1.0", 2 + e % C_HOSTS); }
static __u16 c_port(int e) { return 10000 + e / C_HOSTS; }

static void c_span_add(struct c_span *sp, long *n, double t0, double t1, long cnt)
{
	if (*n < C_MAX_SPANS)
		sp[*n] = (struct c_span){ .t0 = t0, .t1 = t1, .n = cnt };
	++*n;
}

/* This CPU's drop_nat_busy count (inside interface slot). */
static __u64 c_busy_now(struct worker *w)
{
	struct c_thread *t = w->arg;
	__u32 slot = 1;

	if (bpf_map_lookup_elem(stats_fd, &slot, t->pc))
		die("cannot read xdpr_stats slot 1: %s", strerror(errno));
	return t->pc[w->cpu].reason[XDPR_DROP_NAT_BUSY].packets;
}

/* Read this CPU's busy count; a rise is noted as having happened in [t0, t1]. */
static void c_sample(struct worker *w, double t0, double t1)
{
	struct c_thread *t = w->arg;
	__u64 b = c_busy_now(w);

	if (b != t->busy_last)
		c_span_add(t->busyw, &t->nbusyw, t0, t1, b - t->busy_last);
	t->busy_last = b;
	t->t_sample = t1;
}

/*
 * A run of xdpr_main, timed.  Test runs execute with bottom halves
 * disabled: a run that takes far longer than the few microseconds a packet
 * takes had its CPU stopped under it (by the hypervisor: vCPU steal; a
 * pressure sweep also takes a few ms, at most once a second), and whatever
 * it held meanwhile (an endpoint being claimed, a host entry being deleted)
 * stayed held.  xdpr_nat_gc runs are not counted: they take milliseconds
 * by themselves (a walk of every bucket) and hold nothing anyone waits for.
 */
static bool c_run(struct worker *w, const struct frame *in, struct frame *out, __u32 *v)
{
	struct c_thread *t = w->arg;
	double t0 = mono(), t1;
	bool ok = w_run(w, in, out, v);

	t1 = mono();
	if (t1 - t0 > t->longest)
		t->longest = t1 - t0;
	if (t1 - t0 >= C_STALL)
		c_span_add(t->stall, &t->nstall, t0, t1, 0);
	/* a busy drop comes from a run that waited: pin it to that run */
	if (t1 - t0 >= C_SLOW)
		c_sample(w, t0, t1);
	return ok;
}

static void c_job(struct worker *w)
{
	struct c_thread *t = w->arg;
	double now = mono(), next_gc = now + C_GC_EVERY * (1 + w->cpu) / 2, deadline = now + 5;
	__u64 busy0 = c_busy_now(w);
	__u32 v;

	t->busy_last = busy0;
	t->t_sample = now;

	/*
	 * The long-lived flows first, on both CPUs, then the churn.  Started
	 * together, a CPU stopped for a millisecond at the start (vCPU steal)
	 * would find all 256 ports taken by the other CPU's churn, and its
	 * long-lived flows would rightly get none: that is no loss of a live
	 * session, which is what this case looks for.
	 */
	for (int i = 0; i < C_LL; i++)
		if (c_run(w, &t->ll_in[i], &t->out, &v) && v == XDP_REDIRECT)
			t->ll_port[i] = out_sport(&t->out);
		else
			t->ll_unset++;
	atomic_fetch_add(&c_ll_line, 1);
	while (atomic_load(&c_ll_line) < 2)
		if (mono() > deadline) {
			t->ll_line_late = true;
			break;
		}
	now = mono();
	for (long j = 0; now < c_t0 + C_SECS; j++) {
		long base = (long)((now - c_t0) / C_STEP) * C_SHIFT;
		int e = (base + j % C_WINDOW) % C_ENDPOINTS;

		frame_in(&t->in, c_host(e), c_port(e), t->rem);
		if (!c_run(w, &t->in, &t->out, &v))
			;
		else if (v == XDP_REDIRECT)
			t->fwd++;
		else if (v == XDP_DROP)
			t->drop++;
		else
			t->other++;
		if (j % C_SAMPLE == 0)
			c_sample(w, t->t_sample, mono());
		if (j % C_LL_EVERY)
			continue;
		for (int i = 0; i < C_LL; i++) {
			if (!c_run(w, &t->ll_in[i], &t->out, &v))
				continue;
			if (v != XDP_REDIRECT) {
				t->ll_not_fwd++;
				continue;
			}
			if (!t->ll_port[i])
				t->ll_port[i] = out_sport(&t->out);
			else if (t->ll_port[i] != out_sport(&t->out))
				t->ll_moved++;
		}
		now = mono();
		if (now >= next_gc) {
			struct xdpr_gc_cmd res = {};

			if (w_gc(w, &res)) {
				t->gc_runs++;
				t->gc_deleted += res.deleted;
				t->gc_freed += res.binds_freed;
			}
			next_gc = now + C_GC_EVERY;
		}
	}
	c_sample(w, t->t_sample, mono());
	t->busy = t->busy_last - busy0;
}

/*
 * drop_nat_busy is the datapath's answer when another CPU holds what a
 * packet needs (an endpoint it is claiming, a host entry it is deleting)
 * longer than the bounded wait.  Here that may only happen while the other
 * CPU was stopped inside a run: every window in which a CPU's busy count
 * moved must overlap a long run of the other CPU.  Returns the busy drops
 * without such a cause (-1: too many windows to tell).
 */
static long c_busy_unexplained(const struct c_thread t[2])
{
	long bad = 0;

	for (int c = 0; c < 2; c++) {
		const struct c_thread *o = &t[1 - c];

		if (t[c].nbusyw > C_MAX_SPANS || (t[c].nbusyw && o->nstall > C_MAX_SPANS))
			return -1;
		for (long i = 0; i < t[c].nbusyw; i++) {
			const struct c_span *bw = &t[c].busyw[i];
			const struct c_span *st = NULL;

			for (long k = 0; k < o->nstall && !st; k++)
				if (o->stall[k].t0 <= bw->t1 && o->stall[k].t1 >= bw->t0)
					st = &o->stall[k];
			if (st) {
				note("CPU %d: drop_nat_busy +%ld at %.6f-%.6f s: CPU %d was in one run for "
				     "%.3f ms then (%.6f-%.6f s)", c, bw->n, bw->t0 - c_t0,
				     bw->t1 - c_t0, 1 - c, (st->t1 - st->t0) * 1e3, st->t0 - c_t0,
				     st->t1 - c_t0);
			} else {
				note("CPU %d: drop_nat_busy +%ld at %.6f-%.6f s with no long run of CPU %d "
				     "then", c, bw->n, bw->t0 - c_t0, bw->t1 - c_t0, 1 - c);
				bad += bw->n;
			}
		}
	}
	return bad;
}

/* One session as dumped: its outbound half and what the tables say about it. */
struct out_half {
	struct xdpr_ct_key k;
	struct xdpr_ct_val v;
	bool live;
};

static int cmp_by_port(const void *a, const void *b)
{
	const struct out_half *x = a, *y = b;

	if (x->v.xaddr != y->v.xaddr)
		return x->v.xaddr < y->v.xaddr ? -1 : 1;
	if (x->v.xport != y->v.xport)
		return x->v.xport < y->v.xport ? -1 : 1;
	if (x->k.proto != y->k.proto)
		return x->k.proto < y->k.proto ? -1 : 1;
	if (x->k.saddr != y->k.saddr)
		return x->k.saddr < y->k.saddr ? -1 : 1;
	if (x->k.sport != y->k.sport)
		return x->k.sport < y->k.sport ? -1 : 1;
	return 0;
}

static int cmp_by_endpoint(const void *a, const void *b)
{
	const struct out_half *x = a, *y = b;

	if (x->k.saddr != y->k.saddr)
		return x->k.saddr < y->k.saddr ? -1 : 1;
	if (x->k.sport != y->k.sport)
		return x->k.sport < y->k.sport ? -1 : 1;
	if (x->k.proto != y->k.proto)
		return x->k.proto < y->k.proto ? -1 : 1;
	if (x->v.rule != y->v.rule)
		return x->v.rule < y->v.rule ? -1 : 1;
	if (x->v.xaddr != y->v.xaddr)
		return x->v.xaddr < y->v.xaddr ? -1 : 1;
	if (x->v.xport != y->v.xport)
		return x->v.xport < y->v.xport ? -1 : 1;
	return 0;
}

static bool same_port(const struct out_half *x, const struct out_half *y)
{
	return x->v.xaddr == y->v.xaddr && x->v.xport == y->v.xport && x->k.proto == y->k.proto;
}

static bool same_endpoint(const struct out_half *x, const struct out_half *y)
{
	return x->k.saddr == y->k.saddr && x->k.sport == y->k.sport && x->k.proto == y->k.proto &&
	       x->v.rule == y->v.rule;
}

static __u64 coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* bpf_ktime_get_coarse_ns's clock */
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#define CNOTE(count, ...) do { if ((count)++ < MAX_NOTES) note(__VA_ARGS__); } while (0)

/*
 * The tables after the run, with no packet in flight:
 *  1. every outbound half has its inbound half, which points back, and no
 *     inbound half is alone;
 *  2. a live session's binding exists and names its inside endpoint, rule
 *     and generation;
 *  3. no two live sessions of different inside endpoints share an outside
 *     address:port:proto;
 *  4. all live sessions of an inside endpoint use one outside port, the one
 *     its mapping (xdpr_nat_eim) names (REQ-1);
 *  5. every mapping names a binding that names the same inside endpoint,
 *     rule and generation;
 *  6. a host's count is the number of its outbound halves;
 *  7. a binding's reference count is the number of outbound halves holding
 *     its generation, and no binding is left dying.
 * "Live": idle (fresher half) within the UDP timeout at the end of the run.
 */
static bool c_tables_add_up(__u64 now)
{
	__u8 *keys;
	size_t nct = ct_dump((struct xdpr_ct_key **)&keys, NULL), nout = 0, nlive = 0;
	struct out_half *o = calloc(nct + 1, sizeof(*o)), *s = calloc(nct + 1, sizeof(*s));
	int lone_out = 0, bad_back = 0, lone_in = 0, bad_bind = 0, shared = 0, split = 0;
	int bad_map = 0, bad_eim = 0, bad_host = 0, bad_refs = 0, dying = 0, no_host = 0;
	__u64 tmo = (__u64)cfg_udp * 1000000000ULL;
	size_t nb, ne, nh;
	bool ok = true;

	if (!o || !s)
		die("out of memory");
	for (size_t i = 0; i < nct; i++) {
		struct xdpr_ct_key *k = (void *)(keys + i * sizeof(*k)), other;
		struct xdpr_ct_val v, ov;
		__u64 last;

		if (ct_read(k, &v))
			continue;
		if (k->dir == XDPR_CT_IN) {
			/* the outbound half of IN {rem, out, remp, outp} -> in */
			other = (struct xdpr_ct_key){ .saddr = v.xaddr, .daddr = k->saddr,
						       .sport = v.xport, .dport = k->sport,
						       .proto = k->proto, .dir = XDPR_CT_OUT };
			if (ct_read(&other, &ov))
				CNOTE(lone_in, "inbound half %s:%u -> %s:%u alone (its outbound half "
				      "%s:%u -> %s:%u is missing)", ipstr(k->saddr), ntohs(k->sport),
				      ipstr(k->daddr), ntohs(k->dport), ipstr(v.xaddr),
				      ntohs(v.xport), ipstr(k->saddr), ntohs(k->sport));
			continue;
		}
		o[nout].k = *k;
		o[nout].v = v;
		last = v.last_seen;
		other = (struct xdpr_ct_key){ .saddr = k->daddr, .daddr = v.xaddr, .sport = k->dport,
					       .dport = v.xport, .proto = k->proto, .dir = XDPR_CT_IN };
		if (ct_read(&other, &ov)) {
			CNOTE(lone_out, "session %s:%u -> %s:%u (outside %s:%u): no inbound half",
			      ipstr(k->saddr), ntohs(k->sport), ipstr(k->daddr), ntohs(k->dport),
			      ipstr(v.xaddr), ntohs(v.xport));
		} else {
			if (ov.xaddr != k->saddr || ov.xport != k->sport || ov.bind_gen != v.bind_gen ||
			    ov.rule != v.rule)
				CNOTE(bad_back, "session %s:%u -> %s:%u: inbound half points to %s:%u "
				      "gen %llu rule %u, outbound half holds gen %llu rule %u",
				      ipstr(k->saddr), ntohs(k->sport), ipstr(k->daddr),
				      ntohs(k->dport), ipstr(ov.xaddr), ntohs(ov.xport),
				      (unsigned long long)ov.bind_gen, ov.rule,
				      (unsigned long long)v.bind_gen, v.rule);
			if (ov.last_seen > last)
				last = ov.last_seen;
		}
		o[nout].live = now <= last || now - last <= tmo;
		nlive += o[nout].live;
		nout++;
	}
	free(keys);

	/* 2: live sessions and their bindings */
	for (size_t i = 0; i < nout; i++) {
		struct xdpr_bind_key bk = { .out_addr = o[i].v.xaddr, .out_port = o[i].v.xport,
					    .proto = o[i].k.proto };
		struct xdpr_bind b;

		if (!o[i].live)
			continue;
		if (bpf_map_lookup_elem(bind_fd, &bk, &b))
			CNOTE(bad_bind, "live session %s:%u -> %s:%u on %s:%u: no binding",
			      ipstr(o[i].k.saddr), ntohs(o[i].k.sport), ipstr(o[i].k.daddr),
			      ntohs(o[i].k.dport), ipstr(bk.out_addr), ntohs(bk.out_port));
		else if (b.in_addr != o[i].k.saddr || b.in_port != o[i].k.sport ||
			 b.rule != o[i].v.rule || bind_gen(&b) != o[i].v.bind_gen)
			CNOTE(bad_bind, "live session %s:%u -> %s:%u (gen %llu) on %s:%u, whose "
			      "binding names %s:%u rule %u gen %llu", ipstr(o[i].k.saddr),
			      ntohs(o[i].k.sport), ipstr(o[i].k.daddr), ntohs(o[i].k.dport),
			      (unsigned long long)o[i].v.bind_gen, ipstr(bk.out_addr),
			      ntohs(bk.out_port), ipstr(b.in_addr), ntohs(b.in_port), b.rule,
			      (unsigned long long)bind_gen(&b));
	}

	/* 3: an outside port, one inside endpoint (among live sessions) */
	nlive = 0;
	for (size_t i = 0; i < nout; i++)
		if (o[i].live)
			s[nlive++] = o[i];
	qsort(s, nlive, sizeof(*s), cmp_by_port);
	for (size_t i = 1; i < nlive; i++)
		if (same_port(&s[i - 1], &s[i]) &&
		    (s[i - 1].k.saddr != s[i].k.saddr || s[i - 1].k.sport != s[i].k.sport))
			CNOTE(shared, "outside %s:%u used by live sessions of %s:%u and %s:%u",
			      ipstr(s[i].v.xaddr), ntohs(s[i].v.xport), ipstr(s[i - 1].k.saddr),
			      ntohs(s[i - 1].k.sport), ipstr(s[i].k.saddr), ntohs(s[i].k.sport));

	/* 4: an inside endpoint, one outside port, the one its mapping names */
	qsort(s, nlive, sizeof(*s), cmp_by_endpoint);
	for (size_t i = 0; i < nlive; i++) {
		struct xdpr_eim_key ek = { .in_addr = s[i].k.saddr, .in_port = s[i].k.sport,
					   .proto = s[i].k.proto, .rule = s[i].v.rule };
		struct xdpr_eim_val e;

		if (i && same_endpoint(&s[i - 1], &s[i]) && !same_port(&s[i - 1], &s[i]))
			CNOTE(split, "inside %s:%u has live sessions on outside ports %u and %u",
			      ipstr(s[i].k.saddr), ntohs(s[i].k.sport), ntohs(s[i - 1].v.xport),
			      ntohs(s[i].v.xport));
		if (i && same_endpoint(&s[i - 1], &s[i]) && same_port(&s[i - 1], &s[i]))
			continue;
		if (bpf_map_lookup_elem(eim_fd, &ek, &e))
			CNOTE(bad_map, "inside %s:%u has live sessions on %s:%u but no mapping",
			      ipstr(ek.in_addr), ntohs(ek.in_port), ipstr(s[i].v.xaddr),
			      ntohs(s[i].v.xport));
		else if (e.out_addr != s[i].v.xaddr || e.out_port != s[i].v.xport)
			CNOTE(bad_map, "inside %s:%u has live sessions on %s:%u, its mapping says "
			      "%s:%u", ipstr(ek.in_addr), ntohs(ek.in_port), ipstr(s[i].v.xaddr),
			      ntohs(s[i].v.xport), ipstr(e.out_addr), ntohs(e.out_port));
	}

	/* 5: every mapping names a binding that names the same endpoint */
	{
		size_t n = map_keys(eim_fd, sizeof(struct xdpr_eim_key), &keys);

		ne = n;
		for (size_t i = 0; i < n; i++) {
			struct xdpr_eim_key *ek = (void *)(keys + i * sizeof(*ek));
			struct xdpr_eim_val e;
			struct xdpr_bind_key bk;
			struct xdpr_bind b;

			if (bpf_map_lookup_elem(eim_fd, ek, &e))
				continue;
			bk = (struct xdpr_bind_key){ .out_addr = e.out_addr, .out_port = e.out_port,
						     .proto = ek->proto };
			if (bpf_map_lookup_elem(bind_fd, &bk, &b))
				CNOTE(bad_eim, "mapping %s:%u -> %s:%u gen %llu: no such binding",
				      ipstr(ek->in_addr), ntohs(ek->in_port), ipstr(e.out_addr),
				      ntohs(e.out_port), (unsigned long long)e.gen);
			else if (b.in_addr != ek->in_addr || b.in_port != ek->in_port ||
				 b.rule != ek->rule || bind_gen(&b) != e.gen)
				CNOTE(bad_eim, "mapping %s:%u -> %s:%u gen %llu: the binding names "
				      "%s:%u rule %u gen %llu", ipstr(ek->in_addr), ntohs(ek->in_port),
				      ipstr(e.out_addr), ntohs(e.out_port), (unsigned long long)e.gen,
				      ipstr(b.in_addr), ntohs(b.in_port), b.rule,
				      (unsigned long long)bind_gen(&b));
		}
		free(keys);
	}

	/* 6: host counts (outbound halves sorted by endpoint: grouped by host) */
	memcpy(s, o, nout * sizeof(*s));
	qsort(s, nout, sizeof(*s), cmp_by_endpoint);
	nh = map_keys(hosts_fd, sizeof(__be32), &keys);
	for (size_t i = 0; i < nh; i++) {
		__be32 a = *(__be32 *)(keys + i * sizeof(a));
		struct xdpr_host h;
		__u32 n = 0;

		if (bpf_map_lookup_elem(hosts_fd, &a, &h))
			continue;
		for (size_t j = 0; j < nout; j++)
			n += s[j].k.saddr == a;
		if (host_refs(&h) != n)
			CNOTE(bad_host, "host %s: count %u, %u outbound halves", ipstr(a),
			      host_refs(&h), n);
	}
	for (size_t j = 0; j < nout; j++) {
		struct xdpr_host h;

		if ((!j || s[j - 1].k.saddr != s[j].k.saddr) &&
		    bpf_map_lookup_elem(hosts_fd, &s[j].k.saddr, &h))
			CNOTE(no_host, "host %s has sessions but no xdpr_nat_hosts entry",
			      ipstr(s[j].k.saddr));
	}
	free(keys);

	/* 7: binding reference counts (outbound halves sorted by outside port) */
	qsort(s, nout, sizeof(*s), cmp_by_port);
	nb = map_keys(bind_fd, sizeof(struct xdpr_bind_key), &keys);
	for (size_t i = 0; i < nb; i++) {
		struct xdpr_bind_key *bk = (void *)(keys + i * sizeof(*bk));
		struct xdpr_bind b;
		__u32 n = 0, all = 0;

		if (bpf_map_lookup_elem(bind_fd, bk, &b))
			continue;
		for (size_t j = 0; j < nout; j++)
			if (s[j].v.xaddr == bk->out_addr && s[j].v.xport == bk->out_port &&
			    s[j].k.proto == bk->proto) {
				all++;
				n += s[j].v.bind_gen == bind_gen(&b);
			}
		if (bind_dying(&b))
			CNOTE(dying, "binding %s:%u (%s:%u) left dying after the run",
			      ipstr(bk->out_addr), ntohs(bk->out_port), ipstr(b.in_addr),
			      ntohs(b.in_port));
		if (bind_refs(&b) != n)
			CNOTE(bad_refs, "binding %s:%u of %s:%u gen %llu: %u references, %u "
			      "sessions hold that generation (%u on the port)", ipstr(bk->out_addr),
			      ntohs(bk->out_port), ipstr(b.in_addr), ntohs(b.in_port),
			      (unsigned long long)bind_gen(&b), bind_refs(&b), n, all);
	}
	free(keys);

	note("tables after the run: %zu ct entries, %zu sessions (%zu live), %zu bindings, %zu "
	     "mappings, %zu hosts", nct, nout, nlive, nb, ne, nh);
#define C_CHECK(n, what) do { if (n) { note("FAIL %s: %d", what, n); ok = false; } } while (0)
	C_CHECK(lone_out, "sessions without their inbound half");
	C_CHECK(bad_back, "inbound halves not pointing back to their outbound half");
	C_CHECK(lone_in, "inbound halves alone");
	C_CHECK(bad_bind, "live sessions whose binding is gone or names another endpoint/gen");
	C_CHECK(shared, "outside ports shared by live sessions of different inside endpoints");
	C_CHECK(split, "inside endpoints with live sessions on two outside ports");
	C_CHECK(bad_map, "inside endpoints whose mapping is missing or names another port");
	C_CHECK(bad_eim, "mappings whose binding is gone or names another endpoint/gen");
	C_CHECK(bad_host, "hosts whose count differs from their sessions");
	C_CHECK(no_host, "hosts with sessions and no host entry");
	C_CHECK(bad_refs, "bindings whose reference count differs from their sessions");
	C_CHECK(dying, "bindings left dying");
#undef C_CHECK
	free(o);
	free(s);
	return ok;
}

static bool t_churn(void)
{
	struct c_thread *t = calloc(2, sizeof(*t));
	struct worker w[2];
	struct snap s0, s1;
	__u64 allowed = 1ULL << XDPR_FWD | 1ULL << XDPR_DROP_NAT_NO_PORT;
	bool ok = true;
	char buf[512];
	long unexplained;
	__u64 now;

	if (!t)
		die("out of memory");
	for (int c = 0; c < 2; c++) {
		t[c].pc = calloc(ncpus, sizeof(*t[c].pc));
		if (!t[c].pc)
			die("out of memory");
	}
	t[0].rem = ip(REM);
	t[1].rem = ip(REM3);
	for (int c = 0; c < 2; c++)
		for (int i = 0; i < C_LL; i++)
			frame_in(&t[c].ll_in[i], ip_n("10.0.1.0", 6), 20000 + 100 * c + i, t[c].rem);
	fresh(1, 1, XDPR_DEF_HOST_LIMIT, C_PMIN, C_PMAX);
	snap_take(&s0);
	atomic_store(&c_ll_line, 0);
	c_t0 = mono();
	run_pair(w, c_job, &t[0], &t[1]);
	now = coarse_ns();
	snap_take(&s1);
	ok &= pair_ok(w, "churn");
	ok &= both_cpus(&s0, &s1);
	for (int c = 0; c < 2; c++)
		note("CPU %d: %ld runs: %ld redirected, %ld dropped, %ld other; long-lived flows: "
		     "%ld port changes, %ld not redirected; gc %ld runs, %ld sessions, %ld bindings",
		     c, w[c].runs, t[c].fwd, t[c].drop, t[c].other, t[c].ll_moved, t[c].ll_not_fwd,
		     t[c].gc_runs, t[c].gc_deleted, t[c].gc_freed);
	for (int c = 0; c < 2; c++)
		note("CPU %d: longest run of xdpr_main %.3f ms, %ld runs of %.0f us or more; "
		     "drop_nat_busy +%ld", c, t[c].longest * 1e3, t[c].nstall, C_STALL * 1e6,
		     t[c].busy);
	note("rule 1: sessions_new +%llu, sessions_expired +%llu, port_reused +%llu, no_port "
	     "+%llu, port_preserved +%llu",
	     (unsigned long long)edelta(&s0, &s1, XDPR_NE_SESS_NEW),
	     (unsigned long long)edelta(&s0, &s1, XDPR_NE_SESS_EXPIRED),
	     (unsigned long long)edelta(&s0, &s1, XDPR_NE_PORT_REUSED),
	     (unsigned long long)edelta(&s0, &s1, XDPR_NE_NO_PORT),
	     (unsigned long long)edelta(&s0, &s1, XDPR_NE_PORT_PRESERVED));
	for (int c = 0; c < 2; c++) {
		if (t[c].other) {
			note("FAIL CPU %d: %ld verdicts neither redirect nor drop", c, t[c].other);
			ok = false;
		}
		if (t[c].ll_unset || t[c].ll_line_late) {
			note("FAIL CPU %d: %ld of %d long-lived flows not forwarded on empty tables%s", c,
			     t[c].ll_unset, C_LL, t[c].ll_line_late ? "; the other CPU never joined" : "");
			ok = false;
		}
		if (t[c].ll_moved || t[c].ll_not_fwd) {
			note("FAIL CPU %d: long-lived flows changed port %ld times, %ld not redirected",
			     c, t[c].ll_moved, t[c].ll_not_fwd);
			ok = false;
		}
	}
	/* every busy drop is seen by the samples, each with a stopped other CPU */
	if ((__u64)(t[0].busy + t[1].busy) != rdelta(&s0, &s1, XDPR_DROP_NAT_BUSY)) {
		note("FAIL drop_nat_busy +%llu, the CPUs' samples saw %ld",
		     (unsigned long long)rdelta(&s0, &s1, XDPR_DROP_NAT_BUSY), t[0].busy + t[1].busy);
		ok = false;
	}
	unexplained = c_busy_unexplained(t);
	if (unexplained) {
		note("FAIL %s drop_nat_busy without the other CPU held up in a run",
		     unexplained < 0 ? "too many windows of" : (snprintf(buf, sizeof(buf), "%ld",
								      unexplained), buf));
		ok = false;
	} else {
		allowed |= 1ULL << XDPR_DROP_NAT_BUSY;
	}
	if (!only_reasons(&s0, &s1, allowed, buf, sizeof(buf))) {
		note("FAIL reasons other than fwd, drop_nat_no_port (and drop_nat_busy while the "
		     "other CPU was stopped) moved: %s", buf);
		ok = false;
	}
	/* the run must have recycled ports, or it tested nothing */
	if (edelta(&s0, &s1, XDPR_NE_PORT_REUSED) + t[0].gc_freed + t[1].gc_freed == 0 ||
	    !t[0].fwd || !t[1].fwd) {
		note("FAIL no port was recycled (port_reused + bindings freed by gc = 0) or a CPU "
		     "forwarded nothing");
		ok = false;
	}
	ok &= c_tables_add_up(now);
	for (int c = 0; c < 2; c++)
		free(t[c].pc);
	free(t);
	return ok;
}

/* ---- d. host limit and host entries ---- */

static bool run1(const struct frame *in, struct frame *out, __u32 *verdict)
{
	int err = run_frame(prog_fd, r0_if, in, out, verdict);

	if (err)
		note("BPF_PROG_TEST_RUN: %s", strerror(-err));
	return !err;
}

/* Sessions (outbound halves) of an inside address. */
static int out_halves_of(__be32 a)
{
	__u8 *keys;
	size_t n = ct_dump((struct xdpr_ct_key **)&keys, NULL);
	int c = 0;

	for (size_t i = 0; i < n; i++) {
		struct xdpr_ct_key *k = (void *)(keys + i * sizeof(*k));

		c += k->dir == XDPR_CT_OUT && k->saddr == a;
	}
	free(keys);
	return c;
}

static int host_count(__be32 a)
{
	struct xdpr_host h;

	return bpf_map_lookup_elem(hosts_fd, &a, &h) ? -1 : (int)host_refs(&h);
}

#define D_LIMIT 8

static bool t_host_limit_recovers(void)
{
	struct frame in, out, want;
	struct snap s0, s1;
	__be32 a = ip(IN2);
	bool ok = true;
	__u32 v;
	char buf[256];
	int fwd = 0;

	fresh(1, XDPR_DEF_HOLDDOWN, D_LIMIT, 1024, 65535);
	for (int i = 0; i < D_LIMIT; i++) {
		frame_in(&in, a, 7000 + i, ip(REM));
		if (!run1(&in, &out, &v))
			return false;
		fwd += v == XDP_REDIRECT;
	}
	if (fwd != D_LIMIT || host_count(a) != D_LIMIT) {
		note("setup: %d of %d flows forwarded, host count %d", fwd, D_LIMIT, host_count(a));
		return false;
	}
	sleep(2); /* the 8 sessions expire (udp timeout 1 s); nothing sweeps them */
	frame_in(&in, a, 7000 + D_LIMIT, ip(REM));
	snap_take(&s0);
	if (!run1(&in, &out, &v))
		return false;
	snap_take(&s1);
	frame_out(&want, out_sport(&out), ip(REM), rem_mac);
	note("host 10.0.1.2 at its limit of %d with every session expired 1 s ago: new flow "
	     "%s, reasons %s; host count now %d, %d sessions", D_LIMIT,
	     v == XDP_REDIRECT ? "redirected" : v == XDP_DROP ? "DROPPED" : "not redirected",
	     (only_reasons(&s0, &s1, 0, buf, sizeof(buf)), buf), host_count(a),
	     out_halves_of(a));
	if (v != XDP_REDIRECT || rdelta(&s0, &s1, XDPR_FWD) != 1 ||
	    !only_reasons(&s0, &s1, 1ULL << XDPR_FWD, buf, sizeof(buf))) {
		note("FAIL the new flow was not forwarded: drop_nat_host_limit +%llu, "
		     "host_limit event +%llu",
		     (unsigned long long)rdelta(&s0, &s1, XDPR_DROP_NAT_HOST_LIMIT),
		     (unsigned long long)edelta(&s0, &s1, XDPR_NE_HOST_LIMIT));
		ok = false;
	} else if (want.len != out.len || memcmp(want.b, out.b, want.len) ||
		   out_sport(&out) == 0) {
		note("FAIL the new flow left with wrong bytes (source port %u)", out_sport(&out));
		ok = false;
	}
	if (ok && edelta(&s0, &s1, XDPR_NE_HOST_LIMIT)) {
		note("FAIL forwarded, yet the host_limit event moved +%llu",
		     (unsigned long long)edelta(&s0, &s1, XDPR_NE_HOST_LIMIT));
		ok = false;
	}
	if (host_count(a) != out_halves_of(a)) {
		note("FAIL host count %d, %d sessions of the host", host_count(a), out_halves_of(a));
		ok = false;
	}
	cfg_write(XDPR_DEF_UDP, XDPR_DEF_HOLDDOWN, XDPR_DEF_HOST_LIMIT);
	return ok;
}

#define D_HOSTS 200

static bool t_flush_frees_hosts(void)
{
	struct xdpr_gc_cmd res = {};
	struct frame in, out;
	size_t nh, nct;
	int fwd = 0, err;
	bool ok = true;
	__u32 v;

	fresh(XDPR_DEF_UDP, XDPR_DEF_HOLDDOWN, XDPR_DEF_HOST_LIMIT, 1024, 65535);
	for (int i = 0; i < D_HOSTS; i++) {
		frame_in(&in, ip_n("10.0.1.0", 10 + i), 8000, ip(REM));
		if (!run1(&in, &out, &v))
			return false;
		fwd += v == XDP_REDIRECT;
	}
	nh = map_count(hosts_fd, sizeof(__be32));
	nct = ct_halves();
	if (fwd != D_HOSTS || nct != 2 * D_HOSTS) {
		note("setup: %d of %d hosts' flows forwarded, %zu ct entries", fwd, D_HOSTS, nct);
		return false;
	}
	err = run_gc(XDPR_GC_ALL, &res); /* what `xdpr nat flush` runs */
	if (err) {
		note("xdpr_nat_gc XDPR_GC_ALL: %s", strerror(-err));
		return false;
	}
	note("%d hosts, one flow each: %zu host entries before the flush; gc: %u sessions "
	     "deleted of %u seen, %u bindings freed; after: %zu host entries, %zu ct entries",
	     D_HOSTS, nh, res.deleted, res.seen, res.binds_freed,
	     map_count(hosts_fd, sizeof(__be32)), ct_halves());
	if (res.deleted != D_HOSTS || ct_halves()) {
		note("FAIL the flush did not delete the %d sessions", D_HOSTS);
		ok = false;
	}
	if (map_count(hosts_fd, sizeof(__be32))) {
		note("FAIL %zu host entries left after the flush (want 0)",
		     map_count(hosts_fd, sizeof(__be32)));
		ok = false;
	}
	return ok;
}

/* ---- e. established flows write no shared line per packet ---- */

/*
 * Every map the program shares between CPUs (not per-CPU, not a program
 * array), dumped key by key: an image to compare before and after traffic.
 */
struct mdump {
	const char *name;
	__u32 ksz, vsz, n;
	__u8 *kv;               /* n records of key then value */
};

struct mimage {
	int n;
	struct mdump m[64];
};

static bool map_shared(enum bpf_map_type t)
{
	return t != BPF_MAP_TYPE_PERCPU_ARRAY && t != BPF_MAP_TYPE_PERCPU_HASH &&
	       t != BPF_MAP_TYPE_LRU_PERCPU_HASH && t != BPF_MAP_TYPE_PROG_ARRAY &&
	       t != BPF_MAP_TYPE_RINGBUF && t != BPF_MAP_TYPE_PERF_EVENT_ARRAY;
}

/* Every entry of the map at fd into a new dump named name. */
static void image_add(struct mimage *im, const char *name, int fd, __u32 ksz, __u32 vsz)
{
	__u8 *k, *next, *prev = NULL;
	struct mdump *d;
	size_t cap = 0;

	if (im->n == (int)(sizeof(im->m) / sizeof(im->m[0])))
		die("more shared maps than the image holds");
	d = &im->m[im->n++];
	d->name = name;
	d->ksz = ksz;
	d->vsz = vsz;
	k = malloc(d->ksz);
	next = malloc(d->ksz);
	if (!k || !next)
		die("out of memory");
	while (!bpf_map_get_next_key(fd, prev, next)) {
		if ((d->n + 1) * (size_t)(d->ksz + d->vsz) > cap) {
			cap = cap ? 2 * cap : 64 * (size_t)(d->ksz + d->vsz);
			d->kv = realloc(d->kv, cap);
			if (!d->kv)
				die("out of memory");
		}
		__u8 *rec = d->kv + d->n * (size_t)(d->ksz + d->vsz);

		memcpy(rec, next, d->ksz);
		if (bpf_map_lookup_elem(fd, next, rec + d->ksz)) {
			memcpy(k, next, d->ksz);
			prev = k;
			continue; /* gone between the two calls */
		}
		d->n++;
		memcpy(k, next, d->ksz);
		prev = k;
	}
	free(k);
	free(next);
}

/*
 * Every shared map, and of every array of maps the map in each slot (under
 * the outer map's name: the NAT tables, the route table, the filter).
 */
static void image_take(struct mimage *im)
{
	struct bpf_map *m;

	memset(im, 0, sizeof(*im));
	bpf_object__for_each_map(m, skel->obj) {
		int fd = bpf_map__fd(m);

		if (!map_shared(bpf_map__type(m)) || fd < 0 || (bpf_map__map_flags(m) & BPF_F_RDONLY_PROG))
			continue;
		if (bpf_map__type(m) != BPF_MAP_TYPE_ARRAY_OF_MAPS) {
			image_add(im, bpf_map__name(m), fd, bpf_map__key_size(m), bpf_map__value_size(m));
			continue;
		}
		for (__u32 slot = 0; slot < bpf_map__max_entries(m); slot++) {
			struct bpf_map_info info = {};
			__u32 id, len = sizeof(info);
			int ifd;

			if (bpf_map_lookup_elem(fd, &slot, &id))
				continue; /* an empty slot */
			ifd = bpf_map_get_fd_by_id(id);
			if (ifd < 0 || bpf_obj_get_info_by_fd(ifd, &info, &len))
				die("cannot open %s[%u]: %s", bpf_map__name(m), slot, strerror(errno));
			image_add(im, bpf_map__name(m), ifd, info.key_size, info.value_size);
			close(ifd);
		}
	}
}

static void image_free(struct mimage *im)
{
	for (int i = 0; i < im->n; i++)
		free(im->m[i].kv);
}

/* May byte off of a value of map name change with traffic?  The refreshes xdpr documents. */
static bool refresh_field(const char *name, __u32 off)
{
	if (!strcmp(name, xdpr_map_name(XM_CT)))
		return off >= offsetof(struct xdpr_ct_val, last_seen) &&
		       off < offsetof(struct xdpr_ct_val, last_seen) + 8;
	if (!strcmp(name, xdpr_map_name(XM_CTA)))
		return off >= offsetof(struct xdpr_ct_slot, val.last_seen) &&
		       off < offsetof(struct xdpr_ct_slot, val.last_seen) + 8;
	if (!strcmp(name, xdpr_map_name(XM_BIND)))
		return off >= offsetof(struct xdpr_bind, last_active) &&
		       off < offsetof(struct xdpr_bind, last_active) + 8;
	return false;
}

/* Differences between a and b outside the refresh fields: noted, counted. */
static int image_diff(const struct mimage *a, const struct mimage *b, bool note_them)
{
	int diffs = 0;

	for (int i = 0; i < a->n && i < b->n; i++) {
		const struct mdump *x = &a->m[i], *y = &b->m[i];
		size_t rs = x->ksz + x->vsz;

		if (x->n != y->n) {
			if (note_them)
				note("%s: %u entries, then %u", x->name, x->n, y->n);
			diffs++;
			continue;
		}
		for (__u32 r = 0; r < x->n; r++) {
			const __u8 *rx = x->kv + r * rs, *ry = NULL;

			/* the same key, wherever the iteration put it */
			for (__u32 q = 0; q < y->n && !ry; q++)
				if (!memcmp(y->kv + ((r + q) % y->n) * rs, rx, x->ksz))
					ry = y->kv + ((r + q) % y->n) * rs;
			if (!ry) {
				if (note_them)
					note("%s: an entry went away", x->name);
				diffs++;
				continue;
			}
			for (__u32 o = 0; o < x->vsz; o++)
				if (rx[x->ksz + o] != ry[x->ksz + o] && !refresh_field(x->name, o)) {
					if (note_them)
						note("%s: value byte %u of an entry changed (%02x -> %02x)", x->name,
						     o, rx[x->ksz + o], ry[x->ksz + o]);
					diffs++;
					break;
				}
		}
	}
	return diffs;
}

#define E_FLOWS 16
#define E_SPORT 6000
#define E_SECS  1.0

struct e_thread {
	struct frame in[2 * E_FLOWS];  /* outbound, then the replies */
	long fwd, other;
};

static atomic_int e_stop;

/* The timer: E_SECS of traffic, the halves' last_seen read every 20 ms meanwhile. */
struct e_sampler {
	struct xdpr_ct_key k[2 * E_FLOWS];
	__u64 seen[2 * E_FLOWS][64];
	int nseen[2 * E_FLOWS];
	int missing;
};

static void e_job(struct worker *w)
{
	struct e_thread *t = w->arg;
	struct frame out;
	__u32 v;

	for (long n = 0; !atomic_load(&e_stop); n++) {
		const struct frame *f = &t->in[n % (2 * E_FLOWS)];
		int err = run_frame(prog_fd, n % (2 * E_FLOWS) < E_FLOWS ? r0_if : r1_if, f, &out, &v);

		w->runs++;
		if (err) {
			if (!w->errs++)
				w->first_err = -err;
			break;
		}
		if (v == XDP_REDIRECT)
			t->fwd++;
		else
			t->other++;
	}
}

static void *e_timer(void *p)
{
	struct e_sampler *sm = p;
	double end = mono() + E_SECS;

	while (mono() < end) {
		usleep(20000);
		for (int h = 0; h < 2 * E_FLOWS; h++) {
			struct xdpr_ct_val v;
			int k;

			if (ct_read(&sm->k[h], &v)) {
				sm->missing++;
				continue;
			}
			for (k = 0; k < sm->nseen[h] && sm->seen[h][k] != v.last_seen; k++)
				;
			if (k == sm->nseen[h] && k < 64)
				sm->seen[h][sm->nseen[h]++] = v.last_seen;
		}
	}
	atomic_store(&e_stop, 1);
	return NULL;
}

static bool t_no_shared_writes(void)
{
	struct e_thread *t = calloc(2, sizeof(*t));
	struct e_sampler *sm = calloc(1, sizeof(*sm));
	struct mimage *a = calloc(3, sizeof(*a)), *b = a + 1, *c = a + 2;
	struct frame out, nf;
	struct worker w[2];
	__u16 port[E_FLOWS];
	int worst = 0, diffs, ctl;
	struct xdpr_ctr r_before[XDPR_REASON_MAX], r_after[XDPR_REASON_MAX];
	pthread_t timer;
	bool ok = true;
	__u32 v;

	if (!t || !sm || !a)
		die("out of memory");
	fresh(XDPR_DEF_UDP, XDPR_DEF_HOLDDOWN, XDPR_DEF_HOST_LIMIT, 1024, 65535);
	/* 16 sessions, each answered once: established both ways */
	for (int i = 0; i < E_FLOWS; i++) {
		frame_in(&t[0].in[i], ip(IN2), E_SPORT + i, ip(REM));
		if (!run1(&t[0].in[i], &out, &v) || v != XDP_REDIRECT)
			return note("flow %d: not forwarded (verdict %u)", i, v), free(t), free(sm), free(a), false;
		port[i] = out_sport(&out);
		udp4(&t[0].in[E_FLOWS + i], r1_mac, rem_mac, ip(REM), 7, ip(OUTA), 64);
		put16(t[0].in[E_FLOWS + i].b + t[0].in[E_FLOWS + i].l4 + 2, port[i]);
		put16(t[0].in[E_FLOWS + i].b + t[0].in[E_FLOWS + i].l4 + 6, 0); /* no UDP checksum */
		read_slot_sum(stats_fd, ncpus, 2, r_before);
		if (run_frame(prog_fd, r1_if, &t[0].in[E_FLOWS + i], &out, &v) || v != XDP_REDIRECT) {
			read_slot_sum(stats_fd, ncpus, 2, r_after);
			for (int r = 0; r < XDPR_REASON_MAX; r++)
				if (r_after[r].packets != r_before[r].packets)
					note("reply to flow %d: %s", i, xdpr_reason_name(r));
			return note("reply to flow %d: not forwarded (verdict %u)", i, v), free(t), free(sm), free(a),
			       false;
		}
	}
	memcpy(t[1].in, t[0].in, sizeof(t[0].in));
	for (int i = 0; i < E_FLOWS; i++) {
		sm->k[i] = (struct xdpr_ct_key){ .saddr = ip(IN2), .daddr = ip(REM), .sport = htons(E_SPORT + i),
						 .dport = htons(7), .proto = IPPROTO_UDP, .dir = XDPR_CT_OUT };
		sm->k[E_FLOWS + i] = (struct xdpr_ct_key){ .saddr = ip(REM), .daddr = ip(OUTA), .sport = htons(7),
							   .dport = htons(port[i]), .proto = IPPROTO_UDP,
							   .dir = XDPR_CT_IN };
	}
	image_take(a);
	/* both CPUs, every flow both ways, for E_SECS; the halves' last_seen sampled meanwhile */
	atomic_store(&e_stop, 0);
	if (pthread_create(&timer, NULL, e_timer, sm))
		die("cannot start the timer thread");
	run_pair(w, e_job, &t[0], &t[1]);
	atomic_store(&e_stop, 1);
	pthread_join(timer, NULL);
	image_take(b);
	ok &= pair_ok(w, "established traffic");
	for (int i = 0; i < 2; i++)
		if (t[i].other || !t[i].fwd) {
			note("CPU %d: %ld forwarded, %ld not", i, t[i].fwd, t[i].other);
			ok = false;
		}
	diffs = image_diff(a, b, true);
	if (diffs) {
		note("%d shared map entries written by established traffic (%ld packets)", diffs,
		     w[0].runs + w[1].runs);
		ok = false;
	}
	/* last_seen: refreshed at most once a quarter second (bpf/nat.h), plus the value it had */
	for (int h = 0; h < 2 * E_FLOWS; h++)
		if (sm->nseen[h] > worst)
			worst = sm->nseen[h];
	if (sm->missing || worst > 2 + (int)(E_SECS * 4)) {
		note("a session half showed %d last_seen values in %.1f s (at most %d), %d reads missed", worst,
		     E_SECS, 2 + (int)(E_SECS * 4), sm->missing);
		ok = false;
	}

	/* control: the comparison sees a new session */
	frame_in(&nf, ip(IN2), E_SPORT + E_FLOWS, ip(REM));
	if (!run1(&nf, &out, &v) || v != XDP_REDIRECT) {
		note("the control flow was not forwarded");
		ok = false;
	}
	image_take(c);
	ctl = image_diff(b, c, false);
	if (!ctl) {
		note("a new session changed no shared map: the comparison sees nothing");
		ok = false;
	}
	printf("# %ld established packets from 2 CPUs in %.1f s: %d shared entries changed beyond "
	       "last_seen / last_active (at most %d last_seen values a half); a new session changed %d\n",
	       w[0].runs + w[1].runs, E_SECS, diffs, worst, ctl);
	for (int i = 0; i < 3; i++)
		image_free(&a[i]);
	free(a);
	free(sm);
	free(t);
	return ok;
}

static const struct {
	const char *name;
	bool (*fn)(void);
} cases[] = {
	{ "two CPUs: one endpoint to 64 peers gets one outside port (REQ-1), all forwarded but "
	  "busy drops behind a stopped CPU",
	  t_eim_two_cpus },
	{ "two CPUs: one 5-tuple at once gives one session, same translation, no drop but "
	  "busy drops behind a stopped CPU",
	  t_tuple_two_cpus },
	{ "two CPUs: churn with udp 1 s, holddown 1 s, 256 ports and gc: ownership and "
	  "reference counts add up", t_churn },
	{ "host limit 8: a host whose sessions expired unswept opens a new flow",
	  t_host_limit_recovers },
	{ "flush (gc all) after 200 hosts leaves no host entries", t_flush_frees_hosts },
	{ "two CPUs: a second of established traffic writes no shared map value but the "
	  "documented refreshes", t_no_shared_writes },
};

#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(void)
{
	int probe;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 0;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("1..0 # SKIP needs CPUs 0 and 1 online\n");
		return 0;
	}
	setup_netns();
	skel = xdpr_bpf__open_and_load();
	if (!skel)
		die("cannot load the XDP program: %s", strerror(errno));
	prog_fd = prog_by_name(XDPR_PROG_NAME);
	gc_fd = prog_by_name(XDPR_PROG_GC);
	stats_fd = map_fd(xdpr_map_name(XM_STATS), 4, sizeof(struct xdpr_slot));
	ifaces_fd = map_fd(xdpr_map_name(XM_IFACES), 4, sizeof(struct xdpr_iface));
	cfg_fd = map_fd(xdpr_map_name(XM_CFG), 4, sizeof(struct xdpr_cfg));
	rules_fd = map_fd(xdpr_map_name(XM_RULES), 4, sizeof(struct xdpr_nat_rule));
	nstats_fd = map_fd(xdpr_map_name(XM_NSTATS), 4, 8);
	nat_tabs_init(skel->obj, &ct_fd, &bind_fd, &eim_fd, &hosts_fd, &ring_fd, NULL);
	ring_vsz = sizeof(struct xdpr_ct_key);
	ringhd_fd = bpf_object__find_map_by_name(skel->obj, "xdpr_nat_ringhd") ?
		    map_fd("xdpr_nat_ringhd", 4, 8) : -1;
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 2)
		die("libbpf counts %d possible CPUs", ncpus);
	register_devs();

	printf("1..%d\n", NCASES);
	probe = probe_fib_src();
	cfg_flags = XDPR_CFG_NAT | (probe >= 0 ? XDPR_CFG_FIB_SRC : 0);
	printf("# xdpr_probe: bpf_fib_lookup(BPF_FIB_LOOKUP_SRC) = %d; %d possible CPUs\n", probe,
	       ncpus);
	for (int i = 0; i < NCASES; i++)
		tap(cases[i].fn(), cases[i].name, NULL);

	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
