// SPDX-License-Identifier: GPL-2.0
/*
 * test_flow.c - the flow meter (bpf/flow.h) of xdpr_main, one
 * BPF_PROG_TEST_RUN per frame against the real kernel FIB of the NAT
 * table's namespace (nat_table.h: inside r0, outside r1 with a masquerade
 * rule), plus IPv6 on both (2001:db8:1::/64 on r0, 2001:db8:2::/64 on r1).
 *
 * Every IPv4 step is the NAT table's full check (verdict, exactly one
 * reason counter moved, bytes out against a frame built from scratch,
 * checksums, NAT events); then the metered flow is read back through the
 * loader (xdpr_flow_foreach, per-CPU shares merged) and every field
 * compared: key as it arrived, tuple as it left, ingress and egress,
 * packets, L3 bytes, the OR of TCP flags, first/last times.  Meter off:
 * no entry.  Sampling 1 in 4 on one CPU: exactly a quarter.  A full
 * table: the packet is still forwarded, counted as unmetered.
 */
#define _GNU_SOURCE
#include "nat_table.h"
#include <linux/ipv6.h>

static struct xdpr lib; /* the loader's view of the test's maps */
static int flows_fd;

/* Meter on (sample N) or off, NAT on or off; the rest of xdpr_cfg as fresh() wrote it. */
static void meter(bool on, __u32 sample, bool nat)
{
	struct xdpr_cfg c;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(cfg_fd, &zero, &c))
		die("cannot read xdpr_cfg: %s", strerror(errno));
	c.flags = (c.flags & ~(XDPR_CFG_FLOWS | XDPR_CFG_NAT)) | (on ? XDPR_CFG_FLOWS : 0) |
		  (nat ? XDPR_CFG_NAT : 0);
	c.flow_sample = sample;
	if (bpf_map_update_elem(cfg_fd, &zero, &c, BPF_ANY))
		die("cannot write xdpr_cfg: %s", strerror(errno));
}

static void flows_clear(void)
{
	if (xdpr_flow_flush(&lib) < 0)
		die("xdpr_flow_flush: %s", lib.err);
}

/* An independent case: fresh NAT state (nat_table.h), the meter set, no flow. */
static void start(bool on, __u32 sample, bool nat)
{
	fresh();
	meter(on, sample, nat);
	flows_clear();
}

struct found {
	int n;
	struct xdpr_flow f[8];
};

static int collect(const struct xdpr_flow *f, void *arg)
{
	struct found *r = arg;

	if (r->n < 8)
		r->f[r->n] = *f;
	r->n++;
	return 0;
}

static struct found flows(void)
{
	struct found r = {};

	if (xdpr_flow_foreach(&lib, collect, &r))
		die("xdpr_flow_foreach: %s", lib.err);
	return r;
}

/* The meter's clock: bpf_ktime_get_coarse_ns reads the one CLOCK_MONOTONIC_COARSE does. */
static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* What a metered flow must say. */
struct want {
	int family;
	const char *src, *dst, *xsrc, *xdst; /* xsrc/xdst NULL: as src/dst */
	__u16 sport, dport, xsport, xdport;  /* x*: 0 means as sport/dport */
	__u8 proto, tcp_flags, xlated;
	const char *in, *out;
	__u64 packets, bytes;
};

static bool same_flow(const char *what, const struct xdpr_flow *f, const struct want *w, __u64 t0)
{
	__u8 src[16], dst[16], xsrc[16], xdst[16];
	__u16 xsp = w->xsport ?: w->sport, xdp = w->xdport ?: w->dport;
	bool ok = true;

	cur_step = what;
	addr_of(w->family, w->src, src);
	addr_of(w->family, w->dst, dst);
	addr_of(w->family, w->xsrc ?: w->src, xsrc);
	addr_of(w->family, w->xdst ?: w->dst, xdst);
#define FIELD(cond, ...) do { if (!(cond)) { note(__VA_ARGS__); ok = false; } } while (0)
	FIELD(f->family == w->family, "family %u, expected %d", f->family, w->family);
	FIELD(f->proto == w->proto, "proto %u, expected %u", f->proto, w->proto);
	FIELD(!memcmp(f->src, src, 16) && !memcmp(f->dst, dst, 16), "key addresses are not %s -> %s",
	      w->src, w->dst);
	FIELD(f->sport == w->sport && f->dport == w->dport, "key ports %u -> %u, expected %u -> %u",
	      f->sport, f->dport, w->sport, w->dport);
	FIELD(!memcmp(f->xsrc, xsrc, 16) && !memcmp(f->xdst, xdst, 16), "left-as addresses are not %s -> %s",
	      w->xsrc ?: w->src, w->xdst ?: w->dst);
	FIELD(f->xsport == xsp && f->xdport == xdp, "left-as ports %u -> %u, expected %u -> %u", f->xsport,
	      f->xdport, xsp, xdp);
	FIELD(f->xlated == w->xlated, "xlated %u, expected %u", f->xlated, w->xlated);
	FIELD(f->in_ifindex == dev_get(w->in)->ifindex, "in_ifindex %u, expected %u (%s)", f->in_ifindex,
	      dev_get(w->in)->ifindex, w->in);
	FIELD(f->out_ifindex == dev_get(w->out)->ifindex, "out_ifindex %u, expected %u (%s)", f->out_ifindex,
	      dev_get(w->out)->ifindex, w->out);
	FIELD(f->packets == w->packets, "packets %llu, expected %llu", (unsigned long long)f->packets,
	      (unsigned long long)w->packets);
	FIELD(f->bytes == w->bytes, "bytes %llu, expected %llu (L3)", (unsigned long long)f->bytes,
	      (unsigned long long)w->bytes);
	FIELD(f->tcp_flags == w->tcp_flags, "tcp_flags 0x%02x, expected 0x%02x", f->tcp_flags, w->tcp_flags);
	FIELD(f->first_ns >= t0 && f->first_ns <= f->last_ns && f->last_ns <= mono_ns(),
	      "first %llu last %llu not within the run (from %llu)", (unsigned long long)f->first_ns,
	      (unsigned long long)f->last_ns, (unsigned long long)t0);
#undef FIELD
	cur_step = NULL;
	return ok;
}

/* The one flow there must be now. */
static bool one_flow(const char *what, const struct want *w, __u64 t0)
{
	struct found r = flows();

	if (r.n != 1) {
		cur_step = what;
		note("%d flows metered, expected 1", r.n);
		cur_step = NULL;
		return false;
	}
	return same_flow(what, &r.f[0], w, t0);
}

/* An IPv4 step without NAT: forwarded from dev to out, TTL - 1. */
static bool fwd4(const char *what, const char *dev, const char *out, const struct pkt *k)
{
	struct pkt x = snat(*k, k->src, k->sport, true);
	struct frame f, w;

	in_frame(&f, dev, k);
	fwd_frame(&w, out, &x);
	return step(what, dev, &f, XDPR_FWD, &w, NOEV);
}

static int ip4_len(const struct pkt *k)
{
	__u8 b[FRAME_MAX];

	return build_ip(b, k);
}

/* ---- IPv6 frames (no NAT): only what the meter reads must be right ---- */

struct pkt6 {
	const char *src, *dst;
	__u8 proto, flags, type;
	__u16 sport, dport;
	int plen;                      /* payload after the transport header */
};

static int frame6(struct frame *f, const char *dev, const struct pkt6 *k)
{
	struct dev *d = dev_get(dev);
	struct ipv6hdr *h = (struct ipv6hdr *)(f->b + ETH_HLEN);
	__u8 *l4 = (__u8 *)(h + 1), peer[6];
	int hl = k->proto == IPPROTO_TCP ? 20 : 8, len = hl + k->plen;

	memset(f, 0, sizeof(*f));
	mac_parse(d->peer_mac, peer);
	memcpy(f->b, d->hw, 6);
	memcpy(f->b + 6, peer, 6);
	put16(f->b + 12, ETH_P_IPV6);
	h->version = 6;
	h->payload_len = htons(len);
	h->nexthdr = k->proto;
	h->hop_limit = 64;
	addr_of(AF_INET6, k->src, h->saddr.s6_addr);
	addr_of(AF_INET6, k->dst, h->daddr.s6_addr);
	if (k->proto == IPPROTO_ICMPV6) {
		l4[0] = k->type;
		put16(l4 + 4, k->sport); /* echo id */
	} else {
		put16(l4, k->sport), put16(l4 + 2, k->dport);
		if (k->proto == IPPROTO_TCP)
			l4[12] = 5 << 4, l4[13] = k->flags;
		else
			put16(l4 + 4, len);
	}
	f->len = ETH_HLEN + sizeof(*h) + len;
	return sizeof(*h) + len;
}

/* Forwarded: XDP_REDIRECT, fwd counted once in dev's slot, the hop limit one less. */
static bool fwd6(const char *what, const char *dev, const struct pkt6 *k)
{
	struct result *r = calloc(1, sizeof(*r));
	struct frame f;
	bool ok;

	if (!r)
		die("out of memory");
	frame6(&f, dev, k);
	run(dev, &f, r);
	cur_step = what;
	ok = expect(!r->err && r->verdict == XDP_REDIRECT, "run %d, verdict %u, expected XDP_REDIRECT",
		    r->err, r->verdict);
	ok &= expect(r->after[XDPR_FWD].packets - r->before[XDPR_FWD].packets == 1, "fwd counted %llu times",
		     (unsigned long long)(r->after[XDPR_FWD].packets - r->before[XDPR_FWD].packets));
	ok &= expect(r->out.len == f.len && r->out.b[ETH_HLEN + 7] == 63, "out: %d bytes, hop limit %u",
		     r->out.len, r->out.b[ETH_HLEN + 7]);
	cur_step = NULL;
	free(r);
	return ok;
}

/* ---- cases ---- */

static bool t_off(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct found r;
	__u64 count = 1;
	bool on = true, ok;

	start(false, 1, false);
	ok = fwd4("udp, meter off", "r0", "r1", &k);
	r = flows();
	ok &= expect(r.n == 0, "%d flows metered with the meter off", r.n);
	ok &= expect(!xdpr_flow_get(&lib, &on, NULL, NULL, &count, NULL) && !on && count == 0,
		     "xdpr_flow_get: on %d, count %llu (expected off, 0)", on, (unsigned long long)count);
	return ok;
}

static bool t_udp4(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	__u64 t0 = mono_ns(), bytes = 0;
	bool ok = true;

	start(true, 1, false);
	for (int i = 0; i < 3; i++) {
		k.plen = 16 + 100 * i;
		ok &= fwd4("udp 10.0.1.2:5000 -> 10.0.2.2:53", "r0", "r1", &k);
		bytes += ip4_len(&k);
	}
	ok &= one_flow("udp flow", &(struct want){ AF_INET, IN2, REM, NULL, NULL, 5000, 53, 0, 0,
						   IPPROTO_UDP, 0, 0, "r0", "r1", 3, bytes }, t0);
	return ok;
}

static bool t_tcp4(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .proto = IPPROTO_TCP, .sport = 40000, .dport = 80 };
	static const __u8 fl[3] = { TCP_SYN, TCP_PSH | TCP_ACK, TCP_FIN | TCP_ACK };
	__u64 t0 = mono_ns(), bytes = 0;
	bool ok = true;

	start(true, 1, false);
	for (int i = 0; i < 3; i++) {
		k.flags = fl[i];
		k.plen = i == 1 ? 1000 : NONE;
		ok &= fwd4("tcp 10.0.1.2:40000 -> 10.0.2.2:80", "r0", "r1", &k);
		bytes += ip4_len(&k);
	}
	ok &= one_flow("tcp flow", &(struct want){ AF_INET, IN2, REM, NULL, NULL, 40000, 80, 0, 0,
						   IPPROTO_TCP, TCP_SYN | TCP_PSH | TCP_ACK | TCP_FIN, 0,
						   "r0", "r1", 3, bytes }, t0);
	return ok;
}

static bool t_icmp4(void)
{
	/* r1 -> r0: host unreachable about a packet of 10.0.1.2; sport 0, dport type << 8 | code */
	struct pkt q = { .src = IN2, .dst = REM3, .sport = 5000, .dport = 53 };
	__u8 quote[FRAME_MAX];
	struct pkt k = icmp_err(REM, IN2, 3, 1, &q, 0, quote);
	__u64 t0 = mono_ns();
	bool ok;

	start(true, 1, false);
	ok = fwd4("icmp host unreachable 10.0.2.2 -> 10.0.1.2", "r1", "r0", &k);
	ok &= fwd4("icmp host unreachable 10.0.2.2 -> 10.0.1.2", "r1", "r0", &k);
	ok &= one_flow("icmp flow", &(struct want){ AF_INET, REM, IN2, NULL, NULL, 0, 3 << 8 | 1, 0, 0,
						    IPPROTO_ICMP, 0, 0, "r1", "r0", 2, 2 * ip4_len(&k) }, t0);
	k = (struct pkt){ .src = IN2, .dst = REM, .proto = IPPROTO_ICMP, .type = 8, .sport = 77, .dport = 1 };
	flows_clear();
	meter(true, 1, false);
	ok &= fwd4("icmp echo 10.0.1.2 -> 10.0.2.2", "r0", "r1", &k);
	ok &= one_flow("echo flow", &(struct want){ AF_INET, IN2, REM, NULL, NULL, 0, 8 << 8, 0, 0,
						    IPPROTO_ICMP, 0, 0, "r0", "r1", 1, ip4_len(&k) }, t0);
	return ok;
}

/* Masquerade: the flow is keyed as it arrived and says how it left. */
static bool t_masq(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt x = snat(k, OUTA, 5000, true);
	struct pkt b = { .src = REM, .dst = OUTA, .sport = 53, .dport = 5000 };
	struct pkt bx = dnat(b, IN2, 5000, true);
	struct frame f, w;
	struct found r;
	__u64 t0 = mono_ns();
	bool ok;

	start(true, 1, true);
	in_frame(&f, "r0", &k);
	fwd_frame(&w, "r1", &x);
	ok = step("masqueraded udp 10.0.1.2:5000 -> 10.0.2.2:53", "r0", &f, XDPR_FWD, &w, EV(XOUT, NEW, KEPT));
	ok &= one_flow("outbound flow", &(struct want){ AF_INET, IN2, REM, OUTA, NULL, 5000, 53, 5000, 0,
							IPPROTO_UDP, 0, XDPR_FLOW_XSRC, "r0", "r1", 1,
							ip4_len(&k) }, t0);
	in_frame(&f, "r1", &b);
	fwd_frame(&w, "r0", &bx);
	ok &= step("reply 10.0.2.2:53 -> 10.0.2.1:5000", "r1", &f, XDPR_FWD, &w, EV(XIN));
	r = flows();
	ok &= expect(r.n == 2, "%d flows after the reply, expected 2", r.n);
	for (int i = 0; i < r.n && i < 8; i++)
		if (r.f[i].in_ifindex == dev_get("r1")->ifindex)
			ok &= same_flow("reply flow", &r.f[i],
					&(struct want){ AF_INET, REM, OUTA, NULL, IN2, 53, 5000, 0, 5000,
							IPPROTO_UDP, 0, XDPR_FLOW_XDST, "r1", "r0", 1,
							ip4_len(&b) }, t0);
	return ok;
}

static bool t_v6(void)
{
	struct pkt6 u = { IN6, REM6, IPPROTO_UDP, 0, 0, 6000, 53, 100 };
	struct pkt6 t1 = { IN6, REM6, IPPROTO_TCP, TCP_SYN, 0, 41000, 443, 0 };
	struct pkt6 t2 = { IN6, REM6, IPPROTO_TCP, TCP_ACK | TCP_RST, 0, 41000, 443, 0 };
	struct pkt6 e = { REM6, IN6, IPPROTO_ICMPV6, 0, 129, 99, 0, 56 };
	struct frame f;
	struct found r;
	__u64 t0 = mono_ns();
	bool ok = true, seen[3] = {};

	start(true, 1, false);
	ok &= fwd6("udp6 [2001:db8:1::2]:6000 -> [2001:db8:2::2]:53", "r0", &u);
	ok &= fwd6("udp6 again", "r0", &u);
	ok &= fwd6("tcp6 SYN", "r0", &t1);
	ok &= fwd6("tcp6 RST|ACK", "r0", &t2);
	ok &= fwd6("icmpv6 echo reply 2001:db8:2::2 -> 2001:db8:1::2", "r1", &e);
	r = flows();
	ok &= expect(r.n == 3, "%d IPv6 flows, expected 3", r.n);
	for (int i = 0; i < r.n && i < 8; i++) {
		const struct xdpr_flow *g = &r.f[i];

		if (g->proto == IPPROTO_UDP)
			seen[0] = true, ok &= same_flow("udp6 flow", g, &(struct want){
				AF_INET6, IN6, REM6, NULL, NULL, 6000, 53, 0, 0, IPPROTO_UDP, 0, 0, "r0", "r1", 2,
				2 * frame6(&f, "r0", &u) }, t0);
		else if (g->proto == IPPROTO_TCP)
			seen[1] = true, ok &= same_flow("tcp6 flow", g, &(struct want){
				AF_INET6, IN6, REM6, NULL, NULL, 41000, 443, 0, 0, IPPROTO_TCP,
				TCP_SYN | TCP_ACK | TCP_RST, 0, "r0", "r1", 2,
				frame6(&f, "r0", &t1) + frame6(&f, "r0", &t2) }, t0);
		else
			seen[2] = true, ok &= same_flow("icmpv6 flow", g, &(struct want){
				AF_INET6, REM6, IN6, NULL, NULL, 0, 129 << 8, 0, 0, IPPROTO_ICMPV6, 0, 0, "r1",
				"r0", 1, frame6(&f, "r1", &e) }, t0);
	}
	ok &= expect(seen[0] && seen[1] && seen[2], "flows seen: udp %d tcp %d icmpv6 %d", seen[0], seen[1],
		     seen[2]);
	return ok;
}

/*
 * Sample 4 on one CPU: 4,000 packets of four flows in turn, about a quarter
 * metered (gaps drawn from 1 to 7), every flow its share: a fixed 1-in-4
 * count would meter one flow only (the traffic's period is the sample's).
 */
static bool t_sample(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5002, .dport = 53 };
	const int n = 4000;
	__u64 total = 0;
	struct found r;
	bool ok = true;

	start(true, 4, false);
	if (!pin_cpu(0))
		die("cannot pin to CPU 0: %s", strerror(errno));
	for (int i = 0; i < n; i++) {
		k.sport = 5002 + i % 4;
		ok &= fwd4("udp, sample 4", "r0", "r1", &k); /* every one forwarded */
	}
	r = flows();
	ok &= expect(r.n == 4, "sample 4, 4 flows in turn: %d flows metered, expected 4", r.n);
	for (int i = 0; i < r.n && i < 4; i++) {
		ok &= expect(r.f[i].packets >= 150 && r.f[i].packets <= 350 &&
				     r.f[i].bytes == r.f[i].packets * ip4_len(&k),
			     "flow %d of every 4th packet: %llu packets %llu bytes metered, expected 150-350, %d bytes each",
			     i, (unsigned long long)r.f[i].packets, (unsigned long long)r.f[i].bytes, ip4_len(&k));
		total += r.f[i].packets;
	}
	ok &= expect(total >= 900 && total <= 1100, "%d packets, sample 4: %llu metered, expected 900-1100", n,
		     (unsigned long long)total);
	return ok;
}

/* One flow's packets on two CPUs: two per-CPU shares, one flow. */
static bool t_two_cpus(void)
{
	struct pkt k = { .src = IN3, .dst = REM3, .sport = 7000, .dport = 7001 };
	struct xdpr_meter_val *v = calloc(ncpus, sizeof(*v));
	struct found r;
	int on = 0;
	bool ok = true;

	if (!v)
		die("out of memory");
	start(true, 1, false);
	for (int c = 0; c < 2; c++) {
		if (!pin_cpu(c))
			die("cannot pin to CPU %d: %s", c, strerror(errno));
		for (int i = 0; i <= c * 2; i++) /* 1 on CPU 0, 3 on CPU 1 */
			ok &= fwd4("udp 10.0.1.3:7000 -> 10.0.2.3:7001", "r0", "r1", &k);
	}
	pin_cpu(0);
	r = flows();
	ok &= expect(r.n == 1, "%d flows, expected 1", r.n);
	if (r.n == 1 && !bpf_map_lookup_elem(flows_fd, r.f[0].key, v)) {
		ok &= expect(v[0].packets == 1 && v[1].packets == 3, "per CPU: %llu and %llu packets, expected 1 and 3",
			     (unsigned long long)v[0].packets, (unsigned long long)v[1].packets);
		for (int c = 0; c < ncpus; c++)
			on += v[c].packets > 0;
		ok &= expect(on == 2, "%d CPUs hold packets of the flow, expected 2", on);
	}
	ok &= r.n == 1 && same_flow("merged", &r.f[0], &(struct want){ AF_INET, IN3, REM3, NULL, NULL, 7000,
								 7001, 0, 0, IPPROTO_UDP, 0, 0, "r0", "r1",
								 4, 4ULL * ip4_len(&k) }, 0);
	free(v);
	return ok;
}

/* Table full: forwarded all the same, counted as unmetered; its flows still count. */
static bool t_full(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5003, .dport = 53 };
	struct pkt old = { .src = IN2, .dst = REM, .sport = 5004, .dport = 53 };
	struct xdpr_meter_val *v = calloc(ncpus, sizeof(*v));
	__u64 un0 = 0, un1 = 0, count = 0, max = 0;
	struct xdpr_meter_key key = { .family = AF_INET, .proto = IPPROTO_UDP };
	struct found r;
	long n;
	bool ok = true;

	if (!v)
		die("out of memory");
	start(true, 1, false);
	pin_cpu(0);
	ok &= fwd4("udp, an old flow", "r0", "r1", &old);
	if (xdpr_flow_get(&lib, NULL, NULL, &un0, NULL, &max))
		die("xdpr_flow_get: %s", lib.err);
	/* fill the rest of the table from userspace (192.0.2.0/24 sources, every port) */
	v[0].packets = 1;
	for (__u32 i = 1; i < max; i++) {
		__be32 a = htonl(0xc0000200u | (i >> 16));

		memcpy(key.src, &a, 4);
		key.sport = htons(i & 0xffff);
		int tries = 0;

		/* no preallocation: the allocator's per-CPU cache refills in the background */
		while (bpf_map_update_elem(flows_fd, &key, v, BPF_NOEXIST))
			if (errno != ENOMEM || ++tries > 1000)
				die("cannot fill xdpr_flows (entry %u): %s", i, strerror(errno));
			else
				usleep(50);
	}
	ok &= fwd4("udp, a new flow, table full", "r0", "r1", &k);
	ok &= fwd4("udp, the old flow, table full", "r0", "r1", &old);
	if (xdpr_flow_get(&lib, NULL, NULL, &un1, &count, NULL))
		die("xdpr_flow_get: %s", lib.err);
	ok &= expect(un1 - un0 == 1, "unmetered +%llu, expected +1", (unsigned long long)(un1 - un0));
	ok &= expect(count == max, "%llu flows in a table of %llu", (unsigned long long)count,
		     (unsigned long long)max);
	n = xdpr_flow_flush(&lib);
	ok &= expect(n == (long)max, "flush removed %ld, expected %llu", n, (unsigned long long)max);
	r = flows();
	ok &= expect(r.n == 0, "%d flows after the flush", r.n);
	free(v);
	return ok;
}

static bool t_delete(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5005, .dport = 53 };
	struct found r;
	int e1, e2;
	bool ok;

	start(true, 1, false);
	ok = fwd4("udp", "r0", "r1", &k);
	r = flows();
	if (r.n != 1)
		return expect(false, "%d flows, expected 1", r.n);
	e1 = xdpr_flow_delete(&lib, &r.f[0]);
	e2 = xdpr_flow_delete(&lib, &r.f[0]);
	ok &= expect(e1 == 0 && e2 == -ENOENT, "delete: %d then %d, expected 0 then -ENOENT", e1, e2);
	ok &= expect(flows().n == 0, "the flow is still there");
	return ok;
}

/* The loader's switch: flag and sample in xdpr_cfg, the rest untouched. */
static bool t_set(void)
{
	struct xdpr_cfg a, b;
	__u32 zero = 0, sample = 0;
	bool on = false, ok = true;

	fresh();
	bpf_map_lookup_elem(cfg_fd, &zero, &a);
	ok &= expect(!xdpr_flow_set(&lib, true, 8), "xdpr_flow_set: %s", lib.err);
	bpf_map_lookup_elem(cfg_fd, &zero, &b);
	ok &= expect((b.flags & XDPR_CFG_FLOWS) && b.flow_sample == 8, "flags 0x%x sample %u", b.flags,
		     b.flow_sample);
	b.flags &= ~XDPR_CFG_FLOWS;
	b.flow_sample = a.flow_sample;
	ok &= expect(!memcmp(&a, &b, sizeof(a)), "xdpr_flow_set changed other settings");
	ok &= expect(!xdpr_flow_get(&lib, &on, &sample, NULL, NULL, NULL) && on && sample == 8,
		     "xdpr_flow_get: on %d sample %u", on, sample);
	ok &= expect(!xdpr_flow_set(&lib, false, 0) && !xdpr_flow_get(&lib, &on, &sample, NULL, NULL, NULL) &&
		     !on && sample == 1, "off: on %d sample %u", on, sample);
	bpf_map_lookup_elem(cfg_fd, &zero, &a);
	ok &= expect(xdpr_flow_set(&lib, true, XDPR_SAMPLE_MAX + 1) == -EINVAL && strstr(lib.err, "at most"),
		     "sample %d: not refused (%s)", XDPR_SAMPLE_MAX + 1, lib.err);
	ok &= expect(xdpr_flow_set(&lib, true, 0x80000001u) == -EINVAL, "sample 0x80000001: not refused");
	bpf_map_lookup_elem(cfg_fd, &zero, &b);
	ok &= expect(!memcmp(&a, &b, sizeof(a)), "a refused sample changed the settings");
	return ok;
}

static const struct {
	const char *name;
	bool (*fn)(void);
} cases[] = {
	{ "meter off: forwarded, nothing metered", t_off },
	{ "UDP over IPv4: key, egress, 3 packets, L3 bytes", t_udp4 },
	{ "TCP over IPv4: flags OR-ed (SYN, PSH|ACK, FIN|ACK)", t_tcp4 },
	{ "ICMP: sport 0, dport type << 8 | code (error and echo)", t_icmp4 },
	{ "masquerade: keyed as it arrived, source (out) / destination (back) as it left", t_masq },
	{ "IPv6: UDP, TCP flags, ICMPv6 type", t_v6 },
	{ "sample 4: about a quarter metered at random gaps, every flow its share, all forwarded", t_sample },
	{ "one flow on two CPUs: per-CPU shares, merged by the loader", t_two_cpus },
	{ "table full: forwarded, counted unmetered; old flows go on; flush empties it", t_full },
	{ "xdpr_flow_delete, then -ENOENT", t_delete },
	{ "xdpr_flow_set / get: the flag and the sample only", t_set },
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 0;
	}
	table_init();
	setup_v6();
	for (int m = 0; m < XM_MAX; m++)
		lib.fd[m] = -1;
	lib.fd[XM_CFG] = cfg_fd;
	lib.fd[XM_METER] = flows_fd = bpf_map__fd(skel->maps.xdpr_flows);
	lib.fd[XM_METER_PC] = bpf_map__fd(skel->maps.xdpr_flow_pcpu);

	printf("1..%d\n", NCASES);
	for (int i = 0; i < NCASES; i++) {
		if (cases[i].fn == t_two_cpus && ncpus < 2) {
			tap(true, cases[i].name, "needs 2 CPUs");
			continue;
		}
		tap(cases[i].fn(), cases[i].name, NULL);
	}
	flows_clear();
	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
