// SPDX-License-Identifier: GPL-2.0
/*
 * xbench - the bench's C helper, driven by bench/run (bench only).
 *
 *   xbench gen DEV [KEY VAL]...       live XDP frames out of DEV, report JSON
 *       smac MAC dmac MAC src ADDR dst ADDR   (required; IPv4 or IPv6)
 *       proto udp|tcp  dport N  ttl N  size BYTES|imix  flows N|new
 *       dports 4096|1  reverse 0|1  secs S  count N  rate PPS  cpus LIST  batch N
 *       loop A,B   a veth pair for the loop, where the kernel refuses live
 *                  frames (gen.bpf.c; one CPU, the first of cpus)
 *   xbench attach sink DEV [KEY VAL]...
 *   xbench attach minfwd DEV [DEV]...  minimal forwarder, redirect map = the DEVs
 *   xbench detach DEV [DEV]...
 *   xbench read DEV [PID]...          sink counters on DEV + CPU time of PIDs, JSON
 *   xbench progstat PROG_ID SECS      run_cnt/run_time_ns delta with BPF stats on
 *   xbench testrun PROG_ID DEV [KEY VAL]...   the program's run time on prepared frames
 *       smac MAC dmac MAC src ADDR dst ADDR (IPv4, required)  dport N  sport N
 *       count N  flows new|same      BPF_PROG_TEST_RUN once per frame, ingress DEV;
 *       new: every frame another source port (a new flow); same: one flow throughout
 *   xbench mtrun PROG_ID DEV [KEY VAL]...     the same on several CPUs at once, JSON
 *       smac dmac src dst (IPv4, required)  dport sport  flows N  mode shared|disjoint|new
 *       cpus LIST  secs S  count N (runs a thread, at most)   one pinned thread per CPU,
 *       kernel-measured ns per run
 *
 * Device names are resolved in the caller's network namespace: bench/run
 * calls every command through `ip netns exec`.  Errors: one line on stderr,
 * "Error: ...", exit 1 (2 for usage).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/in.h>
#include <net/if.h>
#include <sys/socket.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bench.h"
#include "gen.skel.h"
#include "sink.skel.h"
#include "min_fwd.skel.h"

#define GEN_MAX_THREADS 8

static int fail(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("Error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int dev_index(const char *dev, __u32 *ifindex)
{
	*ifindex = if_nametoindex(dev);
	return *ifindex ? 0 : fail(1, "device \"%s\": %s", dev, strerror(errno));
}

static int parse_mac(const char *s, __u8 *mac)
{
	return s && sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3],
			   &mac[4], &mac[5]) == 6 ? 0 : -1;
}

/* "ADDR" or "ADDR/PLEN"; v6 set by the address family. */
static int parse_addr(const char *s, __u8 *addr, int *v6, int *plen)
{
	char buf[64], *slash;

	if (!s || strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = 0;
	*v6 = strchr(buf, ':') != NULL;
	if (inet_pton(*v6 ? AF_INET6 : AF_INET, buf, addr) != 1)
		return -1;
	if (plen) {
		*plen = slash ? atoi(slash) : (*v6 ? 128 : 32);
		if (*plen < 0 || *plen > (*v6 ? 128 : 32))
			return -1;
	}
	return 0;
}

static int parse_proto(const char *s, __u8 *proto)
{
	if (s && !strcmp(s, "udp"))
		*proto = IPPROTO_UDP;
	else if (s && !strcmp(s, "tcp"))
		*proto = IPPROTO_TCP;
	else
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ gen */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct gen_thread {
	pthread_t tid;
	int cpu, prog_fd, err;
	__u32 ifindex, len, batch;
	double rate, secs; /* per thread; rate 0 = as fast as possible */
	__u64 count;       /* frames to send, 0: until secs have passed */
	void *frame;
	__u64 runs;
};

static void *gen_run(void *arg)
{
	struct gen_thread *t = arg;
	struct xdp_md md = { .data = 0, .data_end = t->len, .ingress_ifindex = t->ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = t->frame, .data_size_in = t->len,
		    .ctx_in = &md, .ctx_size_in = sizeof(md), .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		    .batch_size = t->batch);
	double start, end, ahead;
	cpu_set_t set;
	__u32 chunk;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	if ((t->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set)))
		return NULL;
	/*
	 * Capped: about half a second of frames a call, which the program
	 * spaces (gen.bpf.c, pace: a call's set-up costs ~25 ms, so short calls
	 * cannot carry a rate); 64k frames a call otherwise.
	 */
	chunk = t->rate ? (__u32)(t->rate / 2) : 65536;
	if (chunk < t->batch)
		chunk = t->batch;
	start = now();
	end = start + t->secs;
	while (!stop && now() < end && (!t->count || t->runs < t->count)) {
		if (t->count && t->count - t->runs < chunk)
			chunk = t->count - t->runs;
		o.repeat = chunk;
		if (bpf_prog_test_run_opts(t->prog_fd, &o)) {
			if (errno == EINTR)
				break;
			t->err = errno;
			return NULL;
		}
		t->runs += chunk;
		/*
		 * The program keeps to the rate within a call; this only waits
		 * when it ran ahead, which it does when a frame's wait outlasts
		 * its bpf_loop (under ~5 frames/s).
		 */
		if (t->rate) {
			ahead = start + t->runs / t->rate - now();
			if (ahead > 0)
				usleep((useconds_t)(ahead * 1e6));
		}
	}
	return NULL;
}

/*
 * Does the kernel run live frames?  0, or the errno of a one-frame run of
 * xb_drop (which sends nothing).
 */
static int gen_live_errno(struct xb_gen_bpf *skel, __u32 ifindex)
{
	char frame[64] = {};
	struct xdp_md md = { .data = 0, .data_end = sizeof(frame), .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = sizeof(frame),
		    .ctx_in = &md, .ctx_size_in = sizeof(md), .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		    .repeat = 1);

	return bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xb_drop), &o) ? errno : 0;
}

#define GEN_LOOP_SEEDS 200 /* frames in the loop: enough for a NAPI budget, within a veth ring (256) */

/* Send n frames of len bytes (zeros: xb_loop writes them) into the loop at A. */
static int gen_loop_seed(int fd, __u32 ia, const void *frame, __u32 len, int n)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = ia, .sll_halen = 6 };

	for (int i = 0; i < n; i++)
		if (sendto(fd, frame, len, 0, (struct sockaddr *)&sll, sizeof(sll)) != (ssize_t)len)
			return fail(1, "gen: seed the loop: %s", strerror(errno));
	return 0;
}

/*
 * The loop (gen.bpf.c): xb_loop on A and B, copies out of out_if; seeded
 * from this thread, pinned to cpu (bench/run pins A's and B's NAPI threads
 * there).  Until secs have passed, count frames went (0: no count), or a
 * signal; seeded again when it dies out (a full ring drops its frames).
 * *t0, *t1: when it started and stopped.
 */
static int gen_loop(struct xb_gen_bpf *skel, const char *devs, __u32 out_if, __u32 len, int cpu,
		    double secs, __u64 count, double *t0, double *t1)
{
	struct bpf_link *la = NULL, *lb = NULL;
	char a[IF_NAMESIZE] = "", *b, *frame = NULL;
	__u32 ia, ib, key;
	__u64 rounds = 0;
	double moved;
	int fd = -1, err = 1, seeds = 0;
	struct timespec ts;
	cpu_set_t set;

	b = strchr(devs, ',');
	if (!b || b == devs || (size_t)(b - devs) >= sizeof(a) || !b[1])
		return fail(2, "gen: loop needs two devices, \"loop A,B\"");
	memcpy(a, devs, b - devs);
	b++;
	if (dev_index(a, &ia) || dev_index(b, &ib))
		return 1;
	key = 0;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.gen_out_a), &key, &ia, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.gen_out_b), &key, &ib, BPF_ANY))
		return fail(1, "gen: loop maps: %s", strerror(errno));
	key = 1;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.gen_out_a), &key, &out_if, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.gen_out_b), &key, &out_if, BPF_ANY))
		return fail(1, "gen: loop maps (out): %s", strerror(errno));
	skel->bss->loop_a = ia;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return fail(1, "gen: CPU %d: %s", cpu, strerror(errno));
	frame = calloc(1, len);
	if (!frame)
		return fail(1, "out of memory");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	skel->bss->loop_end_ns = ts.tv_sec * 1000000000ull + ts.tv_nsec + (__u64)(secs * 1e9);
	skel->bss->loop_count = count;
	skel->bss->loop_stop = 0;
	la = bpf_program__attach_xdp(skel->progs.xb_loop, ia);
	if (!la) {
		fail(1, "gen: attach the loop to \"%s\": %s", a, strerror(errno));
		goto out;
	}
	lb = bpf_program__attach_xdp(skel->progs.xb_loop, ib);
	if (!lb) {
		fail(1, "gen: attach the loop to \"%s\": %s", b, strerror(errno));
		goto out;
	}
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		fail(1, "gen: packet socket: %s", strerror(errno));
		goto out;
	}
	*t0 = moved = now();
	if (gen_loop_seed(fd, ia, frame, len, GEN_LOOP_SEEDS))
		goto out;
	while (!stop && !skel->bss->loop_stop && now() < *t0 + secs) {
		usleep(10000);
		if (skel->bss->loop_rounds != rounds) {
			rounds = skel->bss->loop_rounds;
			moved = now();
		} else if (now() - moved > 0.1) {
			/* died out: the veth rings dropped every frame in it */
			if (++seeds > 100) {
				fail(1, "gen: the loop %s does not keep going (seeded 100 times)", devs);
				goto out;
			}
			if (gen_loop_seed(fd, ia, frame, len, GEN_LOOP_SEEDS))
				goto out;
			moved = now();
		}
	}
	*t1 = now();
	err = 0;
out:
	skel->bss->loop_stop = 1;
	usleep(10000); /* what is in the rings drops */
	bpf_link__destroy(lb);
	bpf_link__destroy(la);
	if (fd >= 0)
		close(fd);
	free(frame);
	return err;
}

static const __u32 imix[GEN_MAX_SIZES] = { 64, 64, 64, 64, 64, 64, 64, 576, 576, 576, 576, 1500 };

static int cmd_gen(int argc, char **argv)
{
	const char *dev = argv[0], *cpus = "0", *loop = NULL, *mode = "live";
	struct gen_thread th[GEN_MAX_THREADS] = {};
	__u8 smac[6], dmac[6], saddr[16], daddr[16], ttl = 64, *frame = NULL;
	int v6 = -1, dv6, nth = 0, hdr, err = 1, ncpu, live;
	double secs = 5, rate = 0, t0 = 0, t1 = 0;
	struct gen_ctr *ctr = NULL, sum = {};
	struct xb_gen_bpf *skel = NULL;
	struct gen_cfg *cfg;
	__u32 ifindex, maxlen = 0, batch = 64, key = 0;
	bool have_smac = false, have_dmac = false, have_dst = false;
	long flows = 1;
	unsigned long long count = 0;
	char *tok, list[128];

	skel = xb_gen_bpf__open();
	if (!skel)
		return fail(1, "open generator: %s", strerror(errno));
	cfg = &skel->bss->cfg;
	cfg->proto = IPPROTO_UDP;
	cfg->dport = htons(9);
	cfg->nsizes = 1;
	cfg->sizes[0] = 64;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "smac"))
			have_smac = !parse_mac(v, smac);
		else if (!strcmp(k, "dmac"))
			have_dmac = !parse_mac(v, dmac);
		else if (!strcmp(k, "src") && !parse_addr(v, saddr, &v6, NULL))
			;
		else if (!strcmp(k, "dst") && !parse_addr(v, daddr, &dv6, NULL))
			have_dst = true;
		else if (!strcmp(k, "proto") && !parse_proto(v, &cfg->proto))
			;
		else if (!strcmp(k, "dport"))
			cfg->dport = htons(atoi(v));
		else if (!strcmp(k, "ttl"))
			ttl = atoi(v);
		else if (!strcmp(k, "flows"))
			flows = !strcmp(v, "new") ? 0 : atol(v);
		else if (!strcmp(k, "dsts"))
			cfg->dsts = atol(v);
		else if (!strcmp(k, "dports") && (!strcmp(v, "1") || !strcmp(v, "4096")))
			cfg->flags = (cfg->flags & ~GEN_F_ONE_DPORT) | (v[0] == '1' ? GEN_F_ONE_DPORT : 0);
		else if (!strcmp(k, "reverse") && (!strcmp(v, "0") || !strcmp(v, "1")))
			cfg->flags = (cfg->flags & ~GEN_F_REVERSE) | (v[0] == '1' ? GEN_F_REVERSE : 0);
		else if (!strcmp(k, "size") && !strcmp(v, "imix")) {
			cfg->nsizes = GEN_MAX_SIZES;
			memcpy(cfg->sizes, imix, sizeof(imix));
		} else if (!strcmp(k, "size"))
			cfg->sizes[0] = atoi(v);
		else if (!strcmp(k, "secs"))
			secs = atof(v);
		else if (!strcmp(k, "count"))
			count = strtoull(v, NULL, 10);
		else if (!strcmp(k, "rate"))
			rate = atof(v);
		else if (!strcmp(k, "batch"))
			batch = atoi(v);
		else if (!strcmp(k, "cpus") && strlen(v) < sizeof(list))
			cpus = v;
		else if (!strcmp(k, "loop"))
			loop = v;
		else {
			err = fail(2, "gen: bad argument \"%s %s\"", k, v);
			goto out;
		}
	}
	if (!(argc & 1) || !have_smac || !have_dmac || v6 < 0 || !have_dst || v6 != dv6 ||
	    flows < 0 || secs <= 0 || secs > 3600 || rate < 0 || !batch || batch > 256 ||
	    ((cfg->flags & GEN_F_REVERSE) && cfg->dsts)) {
		err = fail(2, "gen: needs smac, dmac, src and dst of one family; see bench/README.md");
		goto out;
	}
	if (dev_index(dev, &ifindex))
		goto out;

	/* Templates: lengths, ports and checksums are filled in per frame. */
	hdr = 14 + (v6 ? 40 : 20) + (cfg->proto == IPPROTO_TCP ? 20 : 8);
	memcpy(cfg->eth, dmac, 6);
	memcpy(cfg->eth + 6, smac, 6);
	cfg->eth[12] = v6 ? 0x86 : 0x08;
	cfg->eth[13] = v6 ? 0xdd : 0x00;
	cfg->ipv6 = v6;
	if (v6) {
		cfg->ip[0] = 0x60;
		cfg->ip[6] = cfg->proto;
		cfg->ip[7] = ttl;
		memcpy(cfg->ip + 8, saddr, 16);
		memcpy(cfg->ip + 24, daddr, 16);
	} else {
		cfg->ip[0] = 0x45;
		cfg->ip[6] = 0x40; /* DF */
		cfg->ip[8] = ttl;
		cfg->ip[9] = cfg->proto;
		memcpy(cfg->ip + 12, saddr, 4);
		memcpy(cfg->ip + 16, daddr, 4);
	}
	if (cfg->proto == IPPROTO_TCP) {
		cfg->l4[7] = 1;        /* seq 1 */
		cfg->l4[11] = 1;       /* ack 1 */
		cfg->l4[12] = 5 << 4;  /* data offset */
		cfg->l4[13] = 0x18;    /* PSH ACK: data of an established connection */
		cfg->l4[14] = 0xff;    /* window */
	}
	cfg->flows = flows;
	cfg->addr_mask = 0xffff; /* new flows: 2^16 source addresses */
	for (__u32 i = 0; i < cfg->nsizes; i++) {
		/* IMIX's 64-byte frames: as small as the headers allow (IPv6 + TCP: 74) */
		if (cfg->nsizes > 1 && cfg->sizes[i] < (__u32)hdr)
			cfg->sizes[i] = hdr;
		if (cfg->sizes[i] < (__u32)hdr || cfg->sizes[i] > 1514) {
			err = fail(2, "gen: frame size %u outside %d..1514", cfg->sizes[i], hdr);
			goto out;
		}
		if (cfg->sizes[i] > maxlen)
			maxlen = cfg->sizes[i];
	}
	if ((err = xb_gen_bpf__load(skel))) {
		err = fail(1, "load generator: %s", strerror(-err));
		goto out;
	}
	err = 1;
	/* The template page: zeros; the program writes the headers, never the payload. */
	frame = calloc(1, maxlen);
	ncpu = libbpf_num_possible_cpus();
	ctr = calloc(ncpu, sizeof(*ctr));
	if (!frame || !ctr || ncpu <= 0) {
		fail(1, "out of memory");
		goto out;
	}

	strcpy(list, cpus);
	for (tok = strtok(list, ","); tok && nth < GEN_MAX_THREADS; tok = strtok(NULL, ","))
		th[nth++].cpu = atoi(tok);
	if (count && nth != 1) {
		err = fail(2, "gen: \"count\" goes with one CPU");
		goto out;
	}
	/* each thread's share of the rate, spaced by the program (gen.bpf.c, pace) */
	skel->bss->cfg.gap_ns = rate > 0 ? (__u64)(1e9 * nth / rate) : 0;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if ((live = gen_live_errno(skel, ifindex)) == EPERM && loop) {
		if (nth != 1) {
			err = fail(2, "gen: the loop (this kernel refuses live frames) runs on one CPU, not \"%s\"",
				   cpus);
			goto out;
		}
		mode = "loop";
		if (gen_loop(skel, loop, ifindex, maxlen, th[0].cpu, secs, count, &t0, &t1))
			goto out;
		goto report;
	}
	if (live) {
		fail(1, "gen: live XDP frames (BPF_F_TEST_XDP_LIVE_FRAMES): %s%s", strerror(live),
		     live == EPERM ? "; this kernel refuses them: give \"loop A,B\" (bench/README.md)" : "");
		goto out;
	}
	t0 = now();
	for (int i = 0; i < nth; i++) {
		th[i].prog_fd = bpf_program__fd(skel->progs.xb_gen);
		th[i].ifindex = ifindex;
		th[i].len = maxlen;
		th[i].batch = batch;
		th[i].frame = frame;
		th[i].secs = secs;
		th[i].rate = rate / nth;
		th[i].count = count;
		if ((th[i].err = pthread_create(&th[i].tid, NULL, gen_run, &th[i]))) {
			nth = i;
			stop = 1;
			break;
		}
	}
	for (int i = 0; i < nth; i++)
		pthread_join(th[i].tid, NULL);
	t1 = now();
	for (int i = 0; i < nth; i++)
		if (th[i].err) {
			fail(1, "generator thread on CPU %d: %s", th[i].cpu, strerror(th[i].err));
			goto out;
		}
report:
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.gen_ctr), &key, ctr)) {
		fail(1, "read generator counters: %s", strerror(errno));
		goto out;
	}
	for (int c = 0; c < ncpu; c++) {
		sum.seq += ctr[c].seq;
		sum.packets += ctr[c].packets;
		sum.bytes += ctr[c].bytes;
	}
	printf("{\"sent\":%llu,\"bytes\":%llu,\"runs\":%llu,\"aborted\":%llu,\"secs\":%.6f,"
	       "\"pps\":%.0f,\"threads\":%d,\"mode\":\"%s\"}\n",
	       sum.packets, sum.bytes, sum.seq, sum.seq - sum.packets, t1 - t0,
	       sum.packets / (t1 - t0), nth, mode);
	err = 0;
out:
	free(ctr);
	free(frame);
	xb_gen_bpf__destroy(skel);
	return err;
}

/* ------------------------------------------------------------------ attach */

static int attach(const char *dev, int prog_fd)
{
	__u32 ifindex;
	int err;

	if (dev_index(dev, &ifindex))
		return 1;
	err = bpf_xdp_attach(ifindex, prog_fd, XDP_FLAGS_DRV_MODE, NULL);
	return err ? fail(1, "attach to \"%s\" (native mode): %s", dev, strerror(-err)) : 0;
}

static int attach_sink(int argc, char **argv)
{
	struct xb_sink_bpf *skel = xb_sink_bpf__open();
	struct sink_cfg *cfg;
	int v6, plen, err = 2;
	long sample = 16;
	int dplen = 32;

	if (!skel)
		return fail(1, "open sink: %s", strerror(errno));
	cfg = &skel->bss->cfg;
	cfg->proto = IPPROTO_UDP;
	cfg->ttl = 63;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "dmac") && !parse_mac(v, cfg->dmac))
			;
		else if (!strcmp(k, "smac") && !parse_mac(v, cfg->smac))
			;
		else if (!strcmp(k, "src") && !parse_addr(v, cfg->src, &v6, &plen))
			cfg->src_plen = plen;
		else if (!strcmp(k, "dst") && !parse_addr(v, cfg->dst, &v6, &dplen))
			cfg->ipv6 = v6;
		else if (!strcmp(k, "proto") && !parse_proto(v, &cfg->proto))
			;
		else if (!strcmp(k, "ttl"))
			cfg->ttl = atoi(v);
		else if (!strcmp(k, "sample") && (sample = atol(v)) > 0 && !(sample & (sample - 1)))
			;
		else {
			fail(2, "attach sink: bad argument \"%s %s\"", k, v);
			goto out;
		}
	}
	if (!(argc & 1)) {
		fail(2, "attach sink: KEY without VALUE");
		goto out;
	}
	cfg->sample_mask = sample - 1;
	/* dst may be a prefix (a destination sweep): the sink takes the whole of it */
	cfg->dst_mask = htonl(dplen ? ~0U << (32 - (dplen > 32 ? 32 : dplen)) : 0);
	if ((err = xb_sink_bpf__load(skel))) {
		err = fail(1, "load sink: %s", strerror(-err));
		goto out;
	}
	err = attach(argv[0], bpf_program__fd(skel->progs.xb_sink));
out:
	xb_sink_bpf__destroy(skel);
	return err;
}

static int attach_minfwd(int argc, char **argv)
{
	struct xb_min_fwd_bpf *skel = xb_min_fwd_bpf__open_and_load();
	__u32 ifindex[64];
	int err = 1;

	if (!skel)
		return fail(1, "load min_fwd: %s", strerror(errno));
	if (argc > 64) {
		err = fail(2, "attach minfwd: too many devices");
		goto out;
	}
	/* Fill the redirect map from this namespace before any traffic can use it. */
	for (int i = 0; i < argc; i++) {
		if (dev_index(argv[i], &ifindex[i]))
			goto out;
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.xb_min_tx), &ifindex[i], &ifindex[i], 0)) {
			fail(1, "redirect map entry for \"%s\": %s", argv[i], strerror(errno));
			goto out;
		}
	}
	for (int i = 0; i < argc; i++)
		if (attach(argv[i], bpf_program__fd(skel->progs.xb_min_fwd)))
			goto out;
	err = 0;
out:
	xb_min_fwd_bpf__destroy(skel);
	return err;
}

static int cmd_attach(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[0], "sink"))
		return attach_sink(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[0], "minfwd"))
		return attach_minfwd(argc - 1, argv + 1);
	return fail(2, "attach: expected sink DEV ... or minfwd DEV...");
}

static int cmd_detach(int argc, char **argv)
{
	__u32 ifindex;
	int err;

	for (int i = 0; i < argc; i++) {
		if (dev_index(argv[i], &ifindex))
			return 1;
		err = bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
		if (err)
			return fail(1, "detach from \"%s\": %s", argv[i], strerror(-err));
	}
	return 0;
}

/* ------------------------------------------------------------------ read */

/* The map called name of the XDP program attached (native) to ifindex. */
static int attached_map(__u32 ifindex, const char *name)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), ids[16], prog_id = 0;
	int fd, map_fd = -1;

	if (bpf_xdp_query_id(ifindex, XDP_FLAGS_DRV_MODE, &prog_id) || !prog_id)
		return -ENOENT;
	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0)
		return -errno;
	info.nr_map_ids = 16;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		close(fd);
		return -errno;
	}
	close(fd);
	for (__u32 i = 0; i < info.nr_map_ids && i < 16 && map_fd < 0; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int m = bpf_map_get_fd_by_id(ids[i]);

		if (m < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(m, &mi, &mlen) && !strcmp(mi.name, name))
			map_fd = m;
		else
			close(m);
	}
	return map_fd >= 0 ? map_fd : -ENOENT;
}

static const char *const bad_names[SINK_BAD_MAX] = {
	[SINK_BAD_LEN] = "len", [SINK_BAD_MAC] = "mac", [SINK_BAD_TTL] = "ttl",
	[SINK_BAD_IP_CSUM] = "ip_csum", [SINK_BAD_L4_CSUM] = "l4_csum", [SINK_BAD_SRC] = "src",
};

static int cmd_read(int argc, char **argv)
{
	int ncpu = libbpf_num_possible_cpus(), fd;
	struct sink_ctr *v, s = {};
	struct sink_frame frame = {};
	unsigned long long cpu_ns = 0, x;
	__u32 ifindex, key = 0;
	double t;

	if (argc < 1)
		return fail(2, "read: expected DEV [PID]...");
	if (dev_index(argv[0], &ifindex))
		return 1;
	fd = attached_map(ifindex, "sink_ctr");
	if (fd < 0)
		return fail(1, "no sink on \"%s\": %s", argv[0], strerror(-fd));
	v = calloc(ncpu, sizeof(*v));
	if (!v || bpf_map_lookup_elem(fd, &key, v)) {
		close(fd);
		free(v);
		return fail(1, "read sink counters: %s", strerror(errno));
	}
	t = now();
	for (int i = 1; i < argc; i++) {
		char path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%s/schedstat", argv[i]);
		f = fopen(path, "r");
		if (!f || fscanf(f, "%llu", &x) != 1) {
			if (f)
				fclose(f);
			close(fd);
			free(v);
			return fail(1, "%s: %s", path, strerror(errno ?: EIO));
		}
		fclose(f);
		cpu_ns += x;
	}
	for (int c = 0; c < ncpu; c++) {
		s.packets += v[c].packets;
		s.bytes += v[c].bytes;
		s.other += v[c].other;
		s.checked += v[c].checked;
		s.wrong += v[c].wrong;
		for (int b = 0; b < SINK_BAD_MAX; b++)
			s.bad[b] += v[c].bad[b];
	}
	printf("{\"t\":%.6f,\"packets\":%llu,\"bytes\":%llu,\"other\":%llu,\"checked\":%llu,"
	       "\"wrong\":%llu,\"cpu_ns\":%llu,\"bad\":{",
	       t, s.packets, s.bytes, s.other, s.checked, s.wrong, cpu_ns);
	for (int b = 0; b < SINK_BAD_MAX; b++)
		printf("%s\"%s\":%llu", b ? "," : "", bad_names[b], s.bad[b]);
	printf("}");
	close(fd);
	/* The last wrong frame, in hex (only once there was one). */
	fd = attached_map(ifindex, "sink_bad_frame");
	if (fd >= 0 && !bpf_map_lookup_elem(fd, &key, &frame) && frame.len &&
	    frame.len <= sizeof(frame.data)) {
		printf(",\"bad_frame\":\"");
		for (__u32 i = 0; i < frame.len; i++)
			printf("%02x", frame.data[i]);
		printf("\"");
	}
	if (fd >= 0)
		close(fd);
	printf("}\n");
	free(v);
	return 0;
}

/* ------------------------------------------------------------------ progstat */

static int prog_runs(int fd, __u64 *cnt, __u64 *ns)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	*cnt = info.run_cnt;
	*ns = info.run_time_ns;
	return 0;
}

static int cmd_progstat(int argc, char **argv)
{
	__u64 c0, n0, c1, n1;
	int fd, sfd;
	double secs;

	if (argc != 2 || (secs = atof(argv[1])) <= 0 || secs > 60)
		return fail(2, "progstat: expected PROG_ID SECS (0 < SECS <= 60)");
	fd = bpf_prog_get_fd_by_id(atoi(argv[0]));
	if (fd < 0)
		return fail(1, "program id %s: %s", argv[0], strerror(errno));
	/* Stats stay on only while this fd is open: no global state left behind. */
	sfd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (sfd < 0) {
		close(fd);
		return fail(1, "enable BPF run-time stats: %s", strerror(errno));
	}
	if (prog_runs(fd, &c0, &n0) == 0) {
		usleep((useconds_t)(secs * 1e6));
		if (prog_runs(fd, &c1, &n1) == 0) {
			printf("{\"run_cnt\":%llu,\"run_time_ns\":%llu,\"ns_per_run\":%.1f}\n",
			       c1 - c0, n1 - n0, c1 > c0 ? (double)(n1 - n0) / (c1 - c0) : 0.0);
			close(sfd);
			close(fd);
			return 0;
		}
	}
	close(sfd);
	close(fd);
	return fail(1, "program id %s info: %s", argv[0], strerror(errno));
}

/* ------------------------------------------------------------------ testrun */

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* A UDP/IPv4 frame of len bytes (UDP checksum 0: none), source address src (host order). */
static void frame4(__u8 *frame, size_t len, const __u8 *smac, const __u8 *dmac, __u32 src, const __u8 *daddr,
		   __u16 sport, __u16 dport)
{
	__u8 *ip = frame + 14, *udp = ip + 20;
	__u32 sum16 = 0;

	memset(frame, 0, len);
	memcpy(frame, dmac, 6);
	memcpy(frame + 6, smac, 6);
	frame[12] = 0x08;
	ip[0] = 0x45;
	ip[2] = (len - 14) >> 8;
	ip[3] = (len - 14) & 0xff;
	ip[6] = 0x40;
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	*(__u32 *)(ip + 12) = htonl(src);
	memcpy(ip + 16, daddr, 4);
	for (int w = 0; w < 10; w++)
		sum16 += ((__u16)ip[2 * w] << 8) | ip[2 * w + 1];
	sum16 = ~xb_fold(sum16) & 0xffff;
	ip[10] = sum16 >> 8;
	ip[11] = sum16 & 0xff;
	*(__u16 *)udp = htons(sport);
	*(__u16 *)(udp + 2) = htons(dport);
	*(__u16 *)(udp + 4) = htons(len - 34);
}

/* The frame words testrun and mtrun share. */
struct tr_args {
	__u8 smac[6], dmac[6], saddr[16], daddr[16];
	bool have_smac, have_dmac, have_dst;
	int v6, dv6;
	__u16 dport, sport;
};

/* KEY VAL if it is one of the shared words: 1, else 0. */
static int tr_arg(struct tr_args *a, const char *k, const char *v)
{
	if (!strcmp(k, "smac"))
		a->have_smac = !parse_mac(v, a->smac);
	else if (!strcmp(k, "dmac"))
		a->have_dmac = !parse_mac(v, a->dmac);
	else if (!strcmp(k, "src") && !parse_addr(v, a->saddr, &a->v6, NULL))
		;
	else if (!strcmp(k, "dst") && !parse_addr(v, a->daddr, &a->dv6, NULL))
		a->have_dst = true;
	else if (!strcmp(k, "dport"))
		a->dport = atoi(v);
	else if (!strcmp(k, "sport"))
		a->sport = atoi(v);
	else
		return 0;
	return 1;
}

/* All the shared words an IPv4 test run needs were given. */
static bool tr_ok(const struct tr_args *a)
{
	return a->have_smac && a->have_dmac && a->v6 == 0 && a->dv6 == 0 && a->have_dst;
}

/*
 * One BPF_PROG_TEST_RUN (repeat 1) per frame, each frame built afresh (a
 * repeated run would see its own rewrite: TTL, MACs): the kernel's duration
 * of each run, in ns, summarised.  It includes the test-run loop's own
 * overhead (timer, context set-up): compare against a run of the same
 * command on a program without the step in question.
 */
static int cmd_testrun(int argc, char **argv)
{
	struct tr_args a = { .v6 = -1, .dv6 = -1, .dport = 9, .sport = GEN_PORT_BASE };
	__u8 frame[64] = {};
	long count = 1000;
	int fd, same = 0, err = 1;
	__u32 ifindex, *ns = NULL, rets[8] = {};
	double sum = 0;
	struct xdp_md md = {};

	fd = bpf_prog_get_fd_by_id(atoi(argv[0]));
	if (fd < 0)
		return fail(1, "program id %s: %s", argv[0], strerror(errno));
	for (int i = 2; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (tr_arg(&a, k, v))
			;
		else if (!strcmp(k, "count"))
			count = atol(v);
		else if (!strcmp(k, "flows") && (!strcmp(v, "new") || !strcmp(v, "same")))
			same = !strcmp(v, "same");
		else {
			err = fail(2, "testrun: bad argument \"%s %s\"", k, v);
			goto out;
		}
	}
	if ((argc & 1) || !tr_ok(&a) || count < 1 || count > 1000000) {
		err = fail(2, "testrun: needs PROG_ID DEV smac, dmac, src and dst (IPv4), count 1..1000000");
		goto out;
	}
	if (dev_index(argv[1], &ifindex))
		goto out;
	ns = calloc(count, sizeof(*ns));
	if (!ns) {
		fail(1, "out of memory");
		goto out;
	}
	md.data_end = sizeof(frame);
	md.ingress_ifindex = ifindex;
	for (long n = 0; n < count; n++) {
		__u16 sp = same ? a.sport : (__u16)(a.sport + n % GEN_PORT_SPAN);
		__u32 src = ntohl(*(__u32 *)a.saddr) + (same ? 0 : n / GEN_PORT_SPAN);
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = sizeof(frame),
			    .data_out = NULL, .ctx_in = &md, .ctx_size_in = sizeof(md), .repeat = 1);

		frame4(frame, sizeof(frame), a.smac, a.dmac, src, a.daddr, sp, a.dport);
		/* UDP checksum 0: none (IPv4) */
		if (bpf_prog_test_run_opts(fd, &o)) {
			fail(1, "test run: %s", strerror(errno));
			goto out;
		}
		ns[n] = o.duration;
		rets[o.retval < 7 ? o.retval : 7]++;
	}
	for (long n = 0; n < count; n++)
		sum += ns[n];
	qsort(ns, count, sizeof(*ns), cmp_u32);
	printf("{\"runs\":%ld,\"flows\":\"%s\",\"ns_mean\":%.1f,\"ns_med\":%u,\"ns_p10\":%u,"
	       "\"ns_p90\":%u,\"ret\":{\"aborted\":%u,\"drop\":%u,\"pass\":%u,\"tx\":%u,"
	       "\"redirect\":%u,\"other\":%u}}\n",
	       count, same ? "same" : "new", sum / count, ns[count / 2], ns[count / 10],
	       ns[count * 9 / 10], rets[XDP_ABORTED], rets[XDP_DROP], rets[XDP_PASS], rets[XDP_TX],
	       rets[XDP_REDIRECT], rets[5] + rets[6] + rets[7]);
	err = 0;
out:
	free(ns);
	close(fd);
	return err;
}

/*
 * mtrun: the program on one or more CPUs at once, one thread pinned to
 * each, every thread running BPF_PROG_TEST_RUN (repeat 1, a frame built
 * afresh each time) for secs seconds after a warm-up lap over its flows.
 * Flows: "shared", every thread the same flows; "disjoint", each thread
 * flows of its own (another source port range); "new", every frame a flow
 * never seen (source port, then address, stepping per thread).  Reports
 * per thread the kernel's mean duration per run (the program, without the
 * syscall) and the verdicts; pps = sum over threads of 1e9 / ns_mean.
 */
enum { MT_SHARED, MT_DISJOINT, MT_NEW };

struct mt_thread {
	pthread_t tid;
	int cpu, prog_fd, err, idx, mode;
	__u32 ifindex, flows, src;
	const __u8 *smac, *dmac, *daddr;
	__u16 sport, dport;
	double secs;
	__u64 count;            /* runs at most, 0: until secs have passed */
	pthread_barrier_t *bar;
	__u64 runs, ns, rets[8];
};

static void mt_flow(const struct mt_thread *t, __u64 n, __u32 *src, __u16 *sport, __u16 *dport)
{
	*dport = t->dport;
	if (t->mode == MT_NEW) {
		/*
		 * thread idx: source addresses src + idx * 4096 + n / SPAN, ports
		 * stepping from a start of its own (idx * SPAN / 2): threads
		 * asking for the same source ports in lock-step would make every
		 * session of all but the first CPU search for a port (masquerade
		 * keeps a session's source port when it is free), where hosts
		 * picking ports at random rarely collide until the ports run out.
		 */
		*sport = GEN_PORT_BASE + (n + (__u64)t->idx * (GEN_PORT_SPAN / 2)) % GEN_PORT_SPAN;
		*src = t->src + t->idx * 4096 + (__u32)(n / GEN_PORT_SPAN);
		return;
	}
	/*
	 * flow f: source port sport + f % 32768, destination port dport + f / 32768
	 * (32768 inside endpoints at most, each with up to 128 remotes: one
	 * outside address has the ports for them)
	 */
	__u64 f = (t->mode == MT_DISJOINT ? (__u64)t->idx * t->flows : 0) + n % t->flows;

	*src = t->src;
	*sport = t->sport + f % 32768;
	*dport = t->dport + f / 32768;
}

static int mt_one(struct mt_thread *t, __u8 *frame, size_t len, __u64 n, bool count)
{
	struct xdp_md md = { .data_end = len, .ingress_ifindex = t->ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .ctx_in = &md,
		    .ctx_size_in = sizeof(md), .repeat = 1);
	__u32 src;
	__u16 sp, dp;

	mt_flow(t, n, &src, &sp, &dp);
	frame4(frame, len, t->smac, t->dmac, src, t->daddr, sp, dp);
	if (bpf_prog_test_run_opts(t->prog_fd, &o))
		return -errno;
	if (count) {
		t->runs++;
		t->ns += o.duration;
		t->rets[o.retval < 7 ? o.retval : 7]++;
	}
	return 0;
}

static void *mt_run(void *arg)
{
	struct mt_thread *t = arg;
	__u8 frame[64];
	cpu_set_t set;
	double end;
	__u64 n = 0;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	t->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	/* the warm-up lap: established modes create their states here */
	for (__u32 i = 0; !t->err && t->mode != MT_NEW && i < t->flows; i++)
		t->err = -mt_one(t, frame, sizeof(frame), i, false);
	pthread_barrier_wait(t->bar);
	if (t->err)
		return NULL;
	end = now() + t->secs;
	while (!stop && !t->err && (!t->count || n < t->count)) {
		/* the clock every 64 runs: its cost stays out of the runs' own */
		for (int k = 0; k < 64 && !t->err && (!t->count || n < t->count); k++, n++)
			t->err = -mt_one(t, frame, sizeof(frame), t->mode == MT_NEW ? n : n % t->flows, true);
		if (now() >= end)
			break;
	}
	return NULL;
}

static int cmd_mtrun(int argc, char **argv)
{
	struct tr_args a = { .v6 = -1, .dv6 = -1, .dport = 9, .sport = GEN_PORT_BASE };
	int fd, mode = MT_SHARED, err = 1, nth = 0;
	struct mt_thread th[GEN_MAX_THREADS] = {};
	char list[64] = "0", *save = NULL, *tok;
	__u32 ifindex, flows = 64;
	unsigned long long count = 0;
	pthread_barrier_t bar;
	double secs = 2, pps = 0;

	fd = bpf_prog_get_fd_by_id(atoi(argv[0]));
	if (fd < 0)
		return fail(1, "program id %s: %s", argv[0], strerror(errno));
	for (int i = 2; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (tr_arg(&a, k, v))
			;
		else if (!strcmp(k, "flows"))
			flows = atoi(v);
		else if (!strcmp(k, "secs"))
			secs = atof(v);
		else if (!strcmp(k, "count"))
			count = strtoull(v, NULL, 10);
		else if (!strcmp(k, "cpus") && strlen(v) < sizeof(list))
			strcpy(list, v);
		else if (!strcmp(k, "mode") && !strcmp(v, "shared"))
			mode = MT_SHARED;
		else if (!strcmp(k, "mode") && !strcmp(v, "disjoint"))
			mode = MT_DISJOINT;
		else if (!strcmp(k, "mode") && !strcmp(v, "new"))
			mode = MT_NEW;
		else {
			err = fail(2, "mtrun: bad argument \"%s %s\"", k, v);
			goto out;
		}
	}
	if ((argc & 1) || !tr_ok(&a) || flows < 1 || flows > 4194304 || secs <= 0 || secs > 60) {
		err = fail(2, "mtrun: needs PROG_ID DEV smac, dmac, src and dst (IPv4); flows 1..4194304, secs (0,60]");
		goto out;
	}
	if (dev_index(argv[1], &ifindex))
		goto out;
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (nth == GEN_MAX_THREADS) {
			err = fail(2, "mtrun: at most %d CPUs", GEN_MAX_THREADS);
			goto out;
		}
		th[nth] = (struct mt_thread){ .cpu = atoi(tok), .prog_fd = fd, .idx = nth, .mode = mode,
					      .ifindex = ifindex, .flows = flows, .src = ntohl(*(__u32 *)a.saddr),
					      .smac = a.smac, .dmac = a.dmac, .daddr = a.daddr, .sport = a.sport,
					      .dport = a.dport, .secs = secs, .count = count, .bar = &bar };
		nth++;
	}
	if (!nth || pthread_barrier_init(&bar, NULL, nth)) {
		err = fail(2, "mtrun: no CPUs");
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (int i = 0; i < nth; i++)
		if ((th[i].err = pthread_create(&th[i].tid, NULL, mt_run, &th[i]))) {
			fail(1, "cannot start a thread: %s", strerror(th[i].err));
			exit(1); /* the others wait at the barrier */
		}
	for (int i = 0; i < nth; i++)
		pthread_join(th[i].tid, NULL);
	pthread_barrier_destroy(&bar);
	for (int i = 0; i < nth; i++)
		if (th[i].err) {
			err = fail(1, "mtrun on CPU %d: %s", th[i].cpu, strerror(abs(th[i].err)));
			goto out;
		}
	printf("{\"mode\":\"%s\",\"flows\":%u,\"threads\":[", mode == MT_NEW ? "new" : mode == MT_DISJOINT ?
	       "disjoint" : "shared", mode == MT_NEW ? 0 : flows);
	for (int i = 0; i < nth; i++) {
		const struct mt_thread *t = &th[i];
		double ns = t->runs ? (double)t->ns / t->runs : 0;

		pps += ns > 0 ? 1e9 / ns : 0;
		printf("%s{\"cpu\":%d,\"runs\":%llu,\"ns_mean\":%.1f,\"redirect\":%llu,\"other\":%llu}", i ? "," : "",
		       t->cpu, (unsigned long long)t->runs, ns, (unsigned long long)t->rets[XDP_REDIRECT],
		       (unsigned long long)(t->runs - t->rets[XDP_REDIRECT]));
	}
	printf("],\"mpps\":%.4f}\n", pps / 1e6);
	err = 0;
out:
	close(fd);
	return err;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	int min_args;
} cmds[] = {
	{ "gen",      cmd_gen,      1 },
	{ "attach",   cmd_attach,   2 },
	{ "detach",   cmd_detach,   1 },
	{ "read",     cmd_read,     1 },
	{ "progstat", cmd_progstat, 2 },
	{ "testrun",  cmd_testrun,  2 },
	{ "mtrun",    cmd_mtrun,    2 },
};

int main(int argc, char **argv)
{
	libbpf_set_print(libbpf_quiet);
	if (argc >= 2)
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			if (!strcmp(argv[1], cmds[i].name)) {
				if (argc - 2 < cmds[i].min_args)
					break;
				return cmds[i].fn(argc - 2, argv + 2);
			}
	fprintf(stderr, "Usage: xbench { gen DEV [KEY VAL]... | attach {sink|minfwd} DEV... |\n"
			"                detach DEV... | read DEV [PID]... | progstat PROG_ID SECS |\n"
			"                testrun PROG_ID DEV [KEY VAL]... | mtrun PROG_ID DEV [KEY VAL]... }\n");
	return 2;
}
