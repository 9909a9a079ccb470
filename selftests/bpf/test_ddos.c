// SPDX-License-Identifier: GPL-2.0
/*
 * test_ddos.c - DDoS meters and bans (bpf/ddos.h) of xdpr_main, one
 * BPF_PROG_TEST_RUN per frame against the real kernel FIB of the NAT
 * table's namespace (nat_table.h: 10.0.1.0/24 on r0, 10.0.2.0/24 on r1; NAT
 * off here), plus IPv6 (2001:db8:1::/64 on r0, 2001:db8:2::/64 on r1).
 *
 * Every step checks the verdict, that exactly one reason counter moved
 * (fwd or drop_ddos_ban) and the bytes out; then the meters and bans are
 * read back through the loader (per-CPU shares summed) and compared with
 * what was sent: packets, L3 bytes, which hosts (destination inside a
 * protected prefix: a "to" meter; its source: a "from" meter), drops per
 * ban, expiry read by the datapath itself, prefix edges (/0, /32, /128,
 * host bits), a full table (untracked, still forwarded), two CPUs.
 */
#define _GNU_SOURCE
#include "nat_table.h"
#include <linux/ipv6.h>

static struct xdpr lib; /* the loader's view of the test's maps */

/* An independent case: NAT off, meters on or off, no protected prefix, host or ban. */
static void start(bool meters)
{
	struct xdpr_cfg c;
	__u32 zero = 0;

	fresh();
	if (xdpr_ddos_flush(&lib, XDPR_DDOS_FLUSH_HOSTS | XDPR_DDOS_FLUSH_BANS | XDPR_DDOS_FLUSH_PROTECT) < 0)
		die("xdpr_ddos_flush: %s", lib.err);
	if (bpf_map_lookup_elem(cfg_fd, &zero, &c))
		die("cannot read xdpr_cfg: %s", strerror(errno));
	c.flags &= ~(XDPR_CFG_NAT | XDPR_CFG_DDOS | XDPR_CFG_BANS);
	if (bpf_map_update_elem(cfg_fd, &zero, &c, BPF_ANY))
		die("cannot write xdpr_cfg: %s", strerror(errno));
	if (xdpr_ddos_set(&lib, meters))
		die("xdpr_ddos_set: %s", lib.err);
}

static void protect(int family, const char *a, int plen)
{
	__u8 b[16];

	addr_of(family, a, b);
	if (xdpr_ddos_protect(&lib, family, b, plen, true))
		die("xdpr_ddos_protect %s/%d: %s", a, plen, lib.err);
}

static __u32 cfg_now(void)
{
	struct xdpr_cfg c;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(cfg_fd, &zero, &c))
		die("cannot read xdpr_cfg: %s", strerror(errno));
	return c.flags;
}

/* ---- what the loader reads back ---- */

struct hosts {
	int n;
	struct xdpr_ddos_host h[16];
};

static int host_cb(const struct xdpr_ddos_host *h, void *arg)
{
	struct hosts *r = arg;

	if (r->n < 16)
		r->h[r->n] = *h;
	r->n++;
	return 0;
}

static struct hosts hosts(void)
{
	struct hosts r = {};

	if (xdpr_ddos_host_foreach(&lib, host_cb, &r))
		die("xdpr_ddos_host_foreach: %s", lib.err);
	return r;
}

/* The meter of addr in direction dir, NULL when there is none. */
static const struct xdpr_ddos_host *host_of(const struct hosts *r, int family, int dir, const char *addr)
{
	__u8 a[16];

	addr_of(family, addr, a);
	for (int i = 0; i < r->n && i < 16; i++)
		if (r->h[i].family == family && r->h[i].dir == dir && !memcmp(r->h[i].addr, a, 16))
			return &r->h[i];
	return NULL;
}

static bool host_is(const char *what, const struct hosts *r, int family, int dir, const char *addr,
		    __u64 packets, __u64 bytes)
{
	const struct xdpr_ddos_host *h = host_of(r, family, dir, addr);

	return expect(h && h->packets == packets && h->bytes == bytes,
		      "%s: %s meter of %s: %llu packets %llu bytes, expected %llu %llu", what,
		      dir == XDPR_DDOS_TO ? "to" : "from", addr, h ? (unsigned long long)h->packets : 0ULL,
		      h ? (unsigned long long)h->bytes : 0ULL, (unsigned long long)packets,
		      (unsigned long long)bytes);
}

struct bans {
	int n;
	struct xdpr_ddos_ban_info b[8];
};

static int ban_cb(const struct xdpr_ddos_ban_info *b, void *arg)
{
	struct bans *r = arg;

	if (r->n < 8)
		r->b[r->n] = *b;
	r->n++;
	return 0;
}

static struct bans bans(void)
{
	struct bans r = {};

	if (xdpr_ddos_ban_foreach(&lib, ban_cb, &r))
		die("xdpr_ddos_ban_foreach: %s", lib.err);
	return r;
}

static struct xdpr_ddos_stats dstats(void)
{
	struct xdpr_ddos_stats s;

	if (xdpr_ddos_stats(&lib, &s))
		die("xdpr_ddos_stats: %s", lib.err);
	return s;
}

/* A ban of addr (dir) for ms milliseconds (0: forever) with flags. */
static void ban(int family, int dir, const char *addr, __u64 ms, __u32 flags)
{
	struct xdpr_ddos_ban_info b = { .family = family, .dir = dir, .flags = flags,
					.reason = XDPR_DDOS_R_PPS, .pps = 123456, .bps = 7890000 };

	addr_of(family, addr, b.addr);
	b.since_ns = xdpr_ddos_now_ns();
	b.until_ns = ms ? b.since_ns + ms * 1000000ULL : XDPR_DDOS_FOREVER;
	if (xdpr_ddos_ban(&lib, &b))
		die("xdpr_ddos_ban %s: %s", addr, lib.err);
}

/* ---- IPv4 steps (NAT off: forwarded with TTL - 1) ---- */

static bool fwd4(const char *what, const char *dev, const char *out, const struct pkt *k)
{
	struct pkt x = snat(*k, k->src, k->sport, true);
	struct frame f, w;

	in_frame(&f, dev, k);
	fwd_frame(&w, out, &x);
	return step(what, dev, &f, XDPR_FWD, &w, NOEV);
}

static bool banned4(const char *what, const char *dev, const struct pkt *k)
{
	struct frame f;

	in_frame(&f, dev, k);
	return step(what, dev, &f, XDPR_DROP_DDOS_BAN, NULL, NOEV);
}

static int ip4_len(const struct pkt *k)
{
	__u8 b[FRAME_MAX];

	return build_ip(b, k);
}

/* ---- IPv6: a UDP frame; verdict and the one reason counter ---- */

static int frame6(struct frame *f, const char *dev, const char *src, const char *dst, int plen)
{
	struct dev *d = dev_get(dev);
	struct ipv6hdr *h = (struct ipv6hdr *)(f->b + ETH_HLEN);
	__u8 *l4 = (__u8 *)(h + 1), peer[6];
	int len = 8 + plen;

	memset(f, 0, sizeof(*f));
	mac_parse(d->peer_mac, peer);
	memcpy(f->b, d->hw, 6);
	memcpy(f->b + 6, peer, 6);
	put16(f->b + 12, ETH_P_IPV6);
	h->version = 6;
	h->payload_len = htons(len);
	h->nexthdr = IPPROTO_UDP;
	h->hop_limit = 64;
	addr_of(AF_INET6, src, h->saddr.s6_addr);
	addr_of(AF_INET6, dst, h->daddr.s6_addr);
	put16(l4, 6000), put16(l4 + 2, 53), put16(l4 + 4, len);
	f->len = ETH_HLEN + sizeof(*h) + len;
	return sizeof(*h) + len;
}

static bool step6(const char *what, const char *dev, const char *src, const char *dst, int reason)
{
	struct result *r = calloc(1, sizeof(*r));
	struct frame f;
	bool ok;

	if (!r)
		die("out of memory");
	frame6(&f, dev, src, dst, 32);
	run(dev, &f, r);
	cur_step = what;
	ok = expect(!r->err && r->verdict == (__u32)xdpr_reason_verdict(reason), "run %d, verdict %u, expected %d",
		    r->err, r->verdict, xdpr_reason_verdict(reason));
	for (int i = 0; i < XDPR_REASON_MAX; i++) {
		__u64 d = r->after[i].packets - r->before[i].packets;

		ok &= expect(d == (i == reason), "reason %s counted %llu times", xdpr_reason_name(i),
			     (unsigned long long)d);
	}
	cur_step = NULL;
	free(r);
	return ok;
}

/* ---- cases ---- */

static bool t_off(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct xdpr_ddos_stats s;
	bool ok;

	start(false);
	protect(AF_INET, "10.0.2.0", 24);
	ok = fwd4("udp to a protected host, meters off", "r0", "r1", &k);
	ok &= expect(hosts().n == 0, "%d hosts metered with the meters off", hosts().n);
	s = dstats();
	ok &= expect(s.metered == 0 && s.banned == 0, "metered %llu banned %llu, expected 0",
		     (unsigned long long)s.metered, (unsigned long long)s.banned);
	return ok;
}

static bool t_meter4(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt k3 = { .src = IN3, .dst = REM, .sport = 5001, .dport = 53 };
	struct pkt back = { .src = REM, .dst = IN2, .sport = 53, .dport = 5000 };
	__u64 bytes = 0;
	struct hosts r;
	bool ok = true;

	start(true);
	protect(AF_INET, "10.0.2.0", 24);
	for (int i = 0; i < 3; i++) {
		k.plen = 16 + 100 * i;
		ok &= fwd4("udp 10.0.1.2 -> 10.0.2.2 (protected)", "r0", "r1", &k);
		bytes += ip4_len(&k);
	}
	ok &= fwd4("udp 10.0.1.3 -> 10.0.2.2 (protected)", "r0", "r1", &k3);
	ok &= fwd4("reply 10.0.2.2 -> 10.0.1.2 (not protected)", "r1", "r0", &back);
	r = hosts();
	ok &= expect(r.n == 3, "%d meters, expected 3 (to 10.0.2.2, from 10.0.1.2, from 10.0.1.3)", r.n);
	ok &= host_is("to", &r, AF_INET, XDPR_DDOS_TO, REM, 4, bytes + ip4_len(&k3));
	ok &= host_is("from", &r, AF_INET, XDPR_DDOS_FROM, IN2, 3, bytes);
	ok &= host_is("from", &r, AF_INET, XDPR_DDOS_FROM, IN3, 1, ip4_len(&k3));
	ok &= expect(!host_of(&r, AF_INET, XDPR_DDOS_TO, IN2), "the reply's destination is metered");
	ok &= expect(dstats().metered == 4, "metered %llu, expected 4", (unsigned long long)dstats().metered);
	return ok;
}

/* /32 protects one host; /0 every IPv4 destination (not IPv6's); host bits, duplicates refused. */
static bool t_prefixes(void)
{
	struct pkt a = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt b = { .src = IN2, .dst = REM3, .sport = 5000, .dport = 53 };
	__u8 addr[16];
	struct hosts r;
	bool ok = true;
	int err;

	start(true);
	if (!pin_cpu(0)) /* one CPU's slots: 10.0.2.2's marks it not protected */
		die("cannot pin to CPU 0: %s", strerror(errno));
	protect(AF_INET, REM3, 32);
	ok &= fwd4("to 10.0.2.2, not in 10.0.2.3/32", "r0", "r1", &a);
	ok &= fwd4("to 10.0.2.3, in 10.0.2.3/32", "r0", "r1", &b);
	r = hosts();
	ok &= expect(r.n == 2 && host_of(&r, AF_INET, XDPR_DDOS_TO, REM3) && !host_of(&r, AF_INET, XDPR_DDOS_TO, REM),
		     "/32: %d meters, 10.0.2.3 metered %d, 10.0.2.2 metered %d", r.n,
		     !!host_of(&r, AF_INET, XDPR_DDOS_TO, REM3), !!host_of(&r, AF_INET, XDPR_DDOS_TO, REM));
	addr_of(AF_INET, "10.0.2.1", addr);
	err = xdpr_ddos_protect(&lib, AF_INET, addr, 24, true);
	ok &= expect(err == -EINVAL && strstr(lib.err, "host bits"), "10.0.2.1/24: %d \"%s\", expected -EINVAL",
		     err, lib.err);
	addr_of(AF_INET, REM3, addr);
	err = xdpr_ddos_protect(&lib, AF_INET, addr, 32, true);
	ok &= expect(err == -EEXIST && strstr(lib.err, "already protected"), "twice: %d \"%s\"", err, lib.err);
	err = xdpr_ddos_protect(&lib, AF_INET, addr, 33, true);
	ok &= expect(err == -EINVAL, "/33: %d, expected -EINVAL", err);
	ok &= expect(!xdpr_ddos_protect(&lib, AF_INET, addr, 32, false), "delete 10.0.2.3/32: %s", lib.err);
	r = hosts();
	ok &= expect(!host_of(&r, AF_INET, XDPR_DDOS_TO, REM3), "10.0.2.3's meter outlived its prefix");
	ok &= fwd4("to 10.0.2.3, no longer protected", "r0", "r1", &b);
	r = hosts();
	ok &= expect(!host_of(&r, AF_INET, XDPR_DDOS_TO, REM3), "10.0.2.3 metered after its prefix went");
	err = xdpr_ddos_protect(&lib, AF_INET, addr, 32, false);
	ok &= expect(err == -ENOENT && strstr(lib.err, "not protected"), "delete again: %d \"%s\"", err, lib.err);
	/* 10.0.2.2's slot says "not protected" since its first packet: for a second, then it is looked up again */
	ok &= fwd4("to 10.0.2.2 again, still not protected", "r0", "r1", &a);
	r = hosts(); /* only the packet to 10.0.2.3 while it was protected counted its source */
	ok &= host_is("source of the protected one only", &r, AF_INET, XDPR_DDOS_FROM, IN2, 1, ip4_len(&b));
	ok &= expect(r.n == 1, "%d meters after packets to unprotected hosts, expected 1", r.n);
	protect(AF_INET, REM, 32);
	usleep(1100000); /* XDPR_DDOS_OUT_NS */
	ok &= fwd4("to 10.0.2.2, now in 10.0.2.2/32", "r0", "r1", &a);
	r = hosts();
	ok &= host_is("protected after its slot was marked", &r, AF_INET, XDPR_DDOS_TO, REM, 1, ip4_len(&a));
	addr_of(AF_INET, REM, addr);
	ok &= expect(!xdpr_ddos_protect(&lib, AF_INET, addr, 32, false), "delete 10.0.2.2/32: %s", lib.err);
	xdpr_ddos_flush(&lib, XDPR_DDOS_FLUSH_HOSTS);
	protect(AF_INET, "0.0.0.0", 0);
	ok &= fwd4("to 10.0.2.2 under 0/0", "r0", "r1", &a);
	ok &= step6("IPv6 under IPv4's 0/0: not metered", "r0", IN6, REM6, XDPR_FWD);
	r = hosts();
	ok &= expect(r.n == 2 && host_of(&r, AF_INET, XDPR_DDOS_TO, REM), "0/0: %d meters, expected 2 (IPv4 only)",
		     r.n);
	return ok;
}

static bool t_ban(void)
{
	struct pkt to = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt other = { .src = IN2, .dst = REM3, .sport = 5000, .dport = 53 };
	struct pkt from = { .src = IN3, .dst = REM3, .sport = 5000, .dport = 53 };
	struct bans r;
	bool ok = true;
	int err;
	__u8 a[16];

	start(false); /* bans drop with the meters off too */
	ok &= expect(!(cfg_now() & XDPR_CFG_BANS), "XDPR_CFG_BANS set with no ban");
	ban(AF_INET, XDPR_DDOS_TO, REM, 0, XDPR_DDOS_F_DROP);
	ban(AF_INET, XDPR_DDOS_FROM, IN3, 0, XDPR_DDOS_F_DROP | XDPR_DDOS_F_BLACKHOLE);
	ok &= expect(cfg_now() & XDPR_CFG_BANS, "XDPR_CFG_BANS not set after a ban");
	for (int i = 0; i < 3; i++)
		ok &= banned4("to banned 10.0.2.2", "r0", &to);
	ok &= fwd4("to 10.0.2.3, not banned", "r0", "r1", &other);
	ok &= banned4("from banned 10.0.1.3", "r0", &from);
	r = bans();
	ok &= expect(r.n == 2, "%d bans listed, expected 2", r.n);
	for (int i = 0; i < r.n && i < 8; i++) {
		const struct xdpr_ddos_ban_info *b = &r.b[i];
		__u64 want = b->dir == XDPR_DDOS_TO ? 3 : 1;
		int len = ip4_len(&to);

		ok &= expect(b->dropped_pkts == want && b->dropped_bytes == want * len && b->pps == 123456 &&
			     b->bps == 7890000 && b->reason == XDPR_DDOS_R_PPS && b->until_ns == XDPR_DDOS_FOREVER,
			     "ban %s: dropped %llu/%llu, pps %llu, reason %u", b->dir == XDPR_DDOS_TO ? "to" : "from",
			     (unsigned long long)b->dropped_pkts, (unsigned long long)b->dropped_bytes,
			     (unsigned long long)b->pps, b->reason);
	}
	ok &= expect(dstats().banned == 4, "banned %llu, expected 4", (unsigned long long)dstats().banned);
	/* replaced: its counters kept */
	ban(AF_INET, XDPR_DDOS_TO, REM, 0, XDPR_DDOS_F_DROP);
	r = bans();
	ok &= expect(r.n == 2 && (r.b[0].dir == XDPR_DDOS_TO ? r.b[0] : r.b[1]).dropped_pkts == 3,
		     "a replaced ban lost its drop counters");
	addr_of(AF_INET, REM, a);
	ok &= expect(!xdpr_ddos_unban(&lib, AF_INET, XDPR_DDOS_TO, a), "unban 10.0.2.2: %s", lib.err);
	ok &= fwd4("to 10.0.2.2 after unban", "r0", "r1", &to);
	err = xdpr_ddos_unban(&lib, AF_INET, XDPR_DDOS_TO, a);
	ok &= expect(err == -ENOENT && strstr(lib.err, "not banned"), "unban again: %d \"%s\"", err, lib.err);
	ok &= expect(cfg_now() & XDPR_CFG_BANS, "XDPR_CFG_BANS cleared with a ban left");
	addr_of(AF_INET, IN3, a);
	ok &= expect(!xdpr_ddos_unban(&lib, AF_INET, XDPR_DDOS_FROM, a), "unban from 10.0.1.3: %s", lib.err);
	ok &= expect(!(cfg_now() & XDPR_CFG_BANS), "XDPR_CFG_BANS still set with no ban left");
	ok &= fwd4("from 10.0.1.3 after unban", "r0", "r1", &from);
	return ok;
}

/* A ban ends by itself (the datapath reads its end); one without XDPR_DDOS_F_DROP drops nothing. */
static bool t_expiry(void)
{
	struct pkt to = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt other = { .src = IN2, .dst = REM3, .sport = 5000, .dport = 53 };
	struct bans r;
	bool ok = true;

	start(false);
	ban(AF_INET, XDPR_DDOS_TO, REM, 300, XDPR_DDOS_F_DROP);
	ban(AF_INET, XDPR_DDOS_TO, REM3, 0, XDPR_DDOS_F_BLACKHOLE);
	ok &= banned4("to 10.0.2.2, banned for 300 ms", "r0", &to);
	ok &= fwd4("to 10.0.2.3, a blackhole-only ban", "r0", "r1", &other);
	sleep_ms(400);
	ok &= fwd4("to 10.0.2.2, 400 ms later", "r0", "r1", &to);
	r = bans();
	ok &= expect(r.n == 2, "%d bans listed, expected 2 (an expired one is listed until removed)", r.n);
	for (int i = 0; i < r.n && i < 8; i++)
		ok &= expect(r.b[i].dropped_pkts == (r.b[i].until_ns != XDPR_DDOS_FOREVER),
			     "ban %d dropped %llu", i, (unsigned long long)r.b[i].dropped_pkts);
	return ok;
}

static bool t_v6(void)
{
	struct hosts r;
	bool ok = true;

	start(true);
	protect(AF_INET6, "2001:db8:2::", 64);
	protect(AF_INET, "10.0.2.0", 24);
	ok &= step6("udp 2001:db8:1::2 -> 2001:db8:2::2 (protected)", "r0", IN6, REM6, XDPR_FWD);
	ok &= step6("again", "r0", IN6, REM6, XDPR_FWD);
	ok &= step6("back, not protected", "r1", REM6, IN6, XDPR_FWD);
	r = hosts();
	ok &= expect(r.n == 2, "%d meters, expected 2", r.n);
	ok &= host_is("to", &r, AF_INET6, XDPR_DDOS_TO, REM6, 2, 2 * (40 + 8 + 32));
	ok &= host_is("from", &r, AF_INET6, XDPR_DDOS_FROM, IN6, 2, 2 * (40 + 8 + 32));
	ban(AF_INET6, XDPR_DDOS_TO, REM6, 0, XDPR_DDOS_F_DROP);
	ok &= step6("to banned 2001:db8:2::2", "r0", IN6, REM6, XDPR_DROP_DDOS_BAN);
	ok &= step6("from it, not banned (to)", "r1", REM6, IN6, XDPR_FWD);
	ban(AF_INET6, XDPR_DDOS_FROM, "2001:db8:1::2", 0, XDPR_DDOS_F_DROP);
	ok &= step6("to 2001:db8:1::2, banned as a source only: forwarded", "r1", REM6, IN6, XDPR_FWD);
	return ok;
}

/* One host's packets on two CPUs: per-CPU shares, summed by the loader. */
static bool t_two_cpus(void)
{
	struct pkt k = { .src = IN3, .dst = REM3, .sport = 7000, .dport = 7001 };
	struct xdpr_ddos_slot *v = calloc(ncpus, sizeof(*v));
	struct xdpr_ddos_key key = { .family = AF_INET, .dir = XDPR_DDOS_TO };
	struct hosts r;
	bool ok = true;
	__u32 i;

	if (!v)
		die("out of memory");
	start(true);
	protect(AF_INET, "10.0.2.0", 24);
	for (int c = 0; c < 2; c++) {
		if (!pin_cpu(c))
			die("cannot pin to CPU %d: %s", c, strerror(errno));
		for (int i = 0; i <= c * 2; i++) /* 1 on CPU 0, 3 on CPU 1 */
			ok &= fwd4("udp 10.0.1.3 -> 10.0.2.3", "r0", "r1", &k);
	}
	pin_cpu(0);
	addr_of(AF_INET, REM3, key.addr);
	i = xdpr_ddos_slot_of(&key);
	for (int c = 0; c < 2; c++) {
		__u32 e = c * XDPR_DDOS_SLOTS + i;

		if (bpf_map_lookup_elem(lib.fd[XM_DDOS_SLOTS], &e, &v[c]))
			die("cannot read DDoS slot %u: %s", e, strerror(errno));
	}
	ok &= expect(!memcmp(&v[0].key, &key, sizeof(key)) && !memcmp(&v[1].key, &key, sizeof(key)) &&
		     v[0].ctr.packets == 1 && v[1].ctr.packets == 3,
		     "per CPU, slot %u: %llu and %llu packets, expected 1 and 3", i,
		     (unsigned long long)v[0].ctr.packets, (unsigned long long)v[1].ctr.packets);
	r = hosts();
	ok &= host_is("summed", &r, AF_INET, XDPR_DDOS_TO, REM3, 4, 4ULL * ip4_len(&k));
	free(v);
	return ok;
}

/*
 * Put a host nobody sends to (another address of the same slot) in the
 * slot of addr's dir meter on every CPU, last seen at last_ns; its key.
 */
static struct xdpr_ddos_key hold_slot(int family, int dir, const char *addr, __u64 last_ns)
{
	struct xdpr_ddos_key k = { .family = family, .dir = dir }, o = k;
	struct xdpr_ddos_slot v = {};
	int alen = family == AF_INET ? 4 : 16;
	__u32 i;

	addr_of(family, addr, k.addr);
	i = xdpr_ddos_slot_of(&k);
	o = k;
	for (__u32 n = 1; n; n++) { /* another host of the same slot */
		memcpy(o.addr + alen - 4, &n, 4);
		if (xdpr_ddos_slot_of(&o) == i && memcmp(&o, &k, sizeof(k)))
			break;
	}
	v.key = o;
	v.ctr.last_ns = last_ns;
	for (int c = 0; c < ncpus; c++) {
		__u32 e = c * XDPR_DDOS_SLOTS + i;

		if (bpf_map_update_elem(lib.fd[XM_DDOS_SLOTS], &e, &v, BPF_ANY))
			die("cannot write DDoS slot %u: %s", e, strerror(errno));
	}
	return o;
}

/* This CPU's (0's) share of addr's meter in dir in its slot: packets, 0 when the slot is another's. */
static __u64 slot_packets(int family, int dir, const char *addr)
{
	struct xdpr_ddos_key k = { .family = family, .dir = dir };
	struct xdpr_ddos_slot v;
	__u32 i;

	addr_of(family, addr, k.addr);
	i = xdpr_ddos_slot_of(&k); /* CPU 0's */
	if (bpf_map_lookup_elem(lib.fd[XM_DDOS_SLOTS], &i, &v))
		die("cannot read DDoS slot %u: %s", i, strerror(errno));
	return memcmp(&v.key, &k, sizeof(k)) ? 0 : v.ctr.packets;
}

/* addr's dir meter in its hash table (CPU 0's share): packets, 0 when it has none. */
static __u64 hash_packets(int family, int dir, const char *addr)
{
	struct xdpr_ddos_key k = { .family = family, .dir = dir };
	struct xdpr_ddos_ctr *v = calloc(ncpus, sizeof(*v));
	__u64 n = 0;

	if (!v)
		die("out of memory");
	addr_of(family, addr, k.addr);
	if (!bpf_map_lookup_elem(lib.fd[dir == XDPR_DDOS_TO ? XM_DDOS_TO : XM_DDOS_FROM], &k, v))
		n = v[0].packets;
	free(v);
	return n;
}

/*
 * The slots: a host whose slot another live host holds is metered in the
 * hash table; when that host has been idle for XDPR_DDOS_IDLE_NS the slot
 * is taken over; the loader sums slot and hash; delete and protect del
 * clear both.
 */
static bool t_slots(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct xdpr_ddos_host h = { .family = AF_INET, .dir = XDPR_DDOS_TO };
	struct hosts r;
	bool ok = true;
	__u8 net[16];

	start(true);
	protect(AF_INET, "10.0.2.0", 24);
	if (!pin_cpu(0))
		die("cannot pin to CPU 0: %s", strerror(errno));
	hold_slot(AF_INET, XDPR_DDOS_TO, REM, xdpr_ddos_now_ns());
	hold_slot(AF_INET, XDPR_DDOS_FROM, IN2, xdpr_ddos_now_ns());
	for (int i = 0; i < 3; i++)
		ok &= fwd4("to 10.0.2.2, its slots held", "r0", "r1", &k);
	ok &= expect(hash_packets(AF_INET, XDPR_DDOS_TO, REM) == 3 && !slot_packets(AF_INET, XDPR_DDOS_TO, REM),
		     "to: %llu in the hash, %llu in the slot, expected 3 and 0",
		     (unsigned long long)hash_packets(AF_INET, XDPR_DDOS_TO, REM),
		     (unsigned long long)slot_packets(AF_INET, XDPR_DDOS_TO, REM));
	ok &= expect(hash_packets(AF_INET, XDPR_DDOS_FROM, IN2) == 3, "from: %llu in the LRU hash, expected 3",
		     (unsigned long long)hash_packets(AF_INET, XDPR_DDOS_FROM, IN2));
	/* the holders idle past XDPR_DDOS_IDLE_NS: the next packet takes the slots over */
	hold_slot(AF_INET, XDPR_DDOS_TO, REM, xdpr_ddos_now_ns() - XDPR_DDOS_IDLE_NS - 1000000000ULL);
	hold_slot(AF_INET, XDPR_DDOS_FROM, IN2, xdpr_ddos_now_ns() - XDPR_DDOS_IDLE_NS - 1000000000ULL);
	for (int i = 0; i < 2; i++)
		ok &= fwd4("to 10.0.2.2, its slots' holders idle", "r0", "r1", &k);
	ok &= expect(slot_packets(AF_INET, XDPR_DDOS_TO, REM) == 2 && hash_packets(AF_INET, XDPR_DDOS_TO, REM) == 3,
		     "to: %llu in the slot, %llu in the hash, expected 2 and 3",
		     (unsigned long long)slot_packets(AF_INET, XDPR_DDOS_TO, REM),
		     (unsigned long long)hash_packets(AF_INET, XDPR_DDOS_TO, REM));
	r = hosts(); /* the holders have no packets: not listed */
	ok &= expect(r.n == 2, "%d hosts listed, expected 2", r.n);
	ok &= host_is("slot + hash", &r, AF_INET, XDPR_DDOS_TO, REM, 5, 5ULL * ip4_len(&k));
	ok &= host_is("slot + hash", &r, AF_INET, XDPR_DDOS_FROM, IN2, 5, 5ULL * ip4_len(&k));
	addr_of(AF_INET, IN2, h.addr);
	h.dir = XDPR_DDOS_FROM;
	ok &= expect(!xdpr_ddos_host_delete(&lib, &h), "delete from 10.0.1.2: %s", lib.err);
	ok &= expect(xdpr_ddos_host_delete(&lib, &h) == -ENOENT, "delete it again: not -ENOENT");
	r = hosts();
	ok &= expect(r.n == 1 && !slot_packets(AF_INET, XDPR_DDOS_FROM, IN2) &&
			     !hash_packets(AF_INET, XDPR_DDOS_FROM, IN2),
		     "after delete: %d hosts, from 10.0.1.2 in slot %llu, hash %llu", r.n,
		     (unsigned long long)slot_packets(AF_INET, XDPR_DDOS_FROM, IN2),
		     (unsigned long long)hash_packets(AF_INET, XDPR_DDOS_FROM, IN2));
	addr_of(AF_INET, "10.0.2.0", net);
	if (xdpr_ddos_protect(&lib, AF_INET, net, 24, false))
		die("xdpr_ddos_protect del: %s", lib.err);
	r = hosts();
	ok &= expect(r.n == 0 && !slot_packets(AF_INET, XDPR_DDOS_TO, REM), "protect del left %d hosts", r.n);
	ok &= fwd4("to 10.0.2.2, not protected", "r0", "r1", &k);
	ok &= expect(hosts().n == 0, "metered after its prefix went");
	return ok;
}

/* The "to" table full: forwarded all the same, counted untracked; metered hosts go on. */
static bool t_full(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	struct pkt old = { .src = IN2, .dst = REM3, .sport = 5000, .dport = 53 };
	struct xdpr_ddos_ctr *v = calloc(ncpus, sizeof(*v));
	struct xdpr_ddos_key key = { .family = AF_INET6, .dir = XDPR_DDOS_TO };
	__u64 max = 0, n = 0, untracked0, untracked1;
	struct hosts r;
	bool ok = true;
	long flushed;

	if (!v)
		die("out of memory");
	start(true);
	protect(AF_INET, "10.0.2.0", 24);
	ok &= fwd4("to 10.0.2.3 before the table fills", "r0", "r1", &old);
	if (xdpr_ddos_get(&lib, NULL, &untracked0, NULL, &max))
		die("xdpr_ddos_get: %s", lib.err);
	max -= XDPR_DDOS_SLOTS; /* the hash table's share of the room */
	for (__u32 i = 0; n < max; i++) { /* fill the hash with IPv6 hosts nobody sends to (10.0.2.3: a slot) */
		memcpy(key.addr + 12, &i, 4);
		if (!bpf_map_update_elem(lib.fd[XM_DDOS_TO], &key, v, BPF_NOEXIST))
			n++;
		else if (errno != EEXIST)
			break;
	}
	hold_slot(AF_INET, XDPR_DDOS_TO, REM, xdpr_ddos_now_ns()); /* its slot another live host's */
	ok &= fwd4("to 10.0.2.2, the table full", "r0", "r1", &k);
	ok &= fwd4("to 10.0.2.3, metered before", "r0", "r1", &old);
	xdpr_ddos_get(&lib, NULL, &untracked1, &n, NULL);
	ok &= expect(untracked1 - untracked0 == 1, "untracked +%llu, expected +1",
		     (unsigned long long)(untracked1 - untracked0));
	ok &= expect(n == max + 2, "%llu hosts in a table of %llu and two slots", (unsigned long long)n,
		     (unsigned long long)max);
	r = hosts(); /* the filler has no packets: not listed */
	ok &= host_is("old", &r, AF_INET, XDPR_DDOS_TO, REM3, 2, 2ULL * ip4_len(&old));
	ok &= expect(!host_of(&r, AF_INET, XDPR_DDOS_TO, REM), "10.0.2.2 metered in a full table");
	flushed = xdpr_ddos_flush(&lib, XDPR_DDOS_FLUSH_HOSTS);
	ok &= expect(flushed == (long)max + 3, "flush removed %ld, expected %llu (table + 3 slots' hosts)",
		     flushed, (unsigned long long)max + 3);
	free(v);
	return ok;
}

/*
 * Sample 4 on one CPU: 4,000 packets from four sources in turn, about a
 * quarter metered (gaps drawn from 1 to 7), each counted 4 times; every
 * source gets its share (a fixed 1-in-4 count would give one source every
 * sample: the traffic's period is the sample's); bans still see every packet.
 */
static bool t_sample(void)
{
	static const char *const src[4] = { "10.0.1.2", "10.0.1.3", "10.0.1.4", "10.0.1.5" };
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	const struct xdpr_ddos_host *h;
	__u64 m0, len, from = 0;
	const int n = 4000;
	struct hosts r;
	bool ok = true;

	start(true);
	m0 = dstats().metered;
	if (xdpr_ddos_set_sample(&lib, 4))
		die("xdpr_ddos_set_sample: %s", lib.err);
	protect(AF_INET, "10.0.2.0", 24);
	if (!pin_cpu(0))
		die("cannot pin to CPU 0: %s", strerror(errno));
	len = ip4_len(&k);
	for (int i = 0; i < n; i++) {
		k.src = src[i % 4];
		ok &= fwd4("udp, sample 4", "r0", "r1", &k);
	}
	r = hosts();
	h = host_of(&r, AF_INET, XDPR_DDOS_TO, REM);
	ok &= expect(h && h->packets % 4 == 0 && h->packets >= 4 * 900 && h->packets <= 4 * 1100 &&
			     h->bytes == h->packets * len,
		     "%d packets, sample 4: to meter %llu packets %llu bytes, expected 3600-4400 in fours, bytes %llu each",
		     n, h ? (unsigned long long)h->packets : 0ULL, h ? (unsigned long long)h->bytes : 0ULL,
		     (unsigned long long)len);
	ok &= expect(h && dstats().metered - m0 == h->packets, "metered +%llu, the to meter %llu",
		     (unsigned long long)(dstats().metered - m0), h ? (unsigned long long)h->packets : 0ULL);
	for (int i = 0; i < 4; i++) {
		const struct xdpr_ddos_host *f = host_of(&r, AF_INET, XDPR_DDOS_FROM, src[i]);
		__u64 p = f ? f->packets : 0;

		ok &= expect(p % 4 == 0 && p >= 4 * 150 && p <= 4 * 350,
			     "source %s of every 4th packet: from meter %llu packets, expected 600-1400", src[i],
			     (unsigned long long)p);
		from += p;
	}
	ok &= expect(h && from == h->packets, "from meters %llu packets in all, the to meter %llu",
		     (unsigned long long)from, h ? (unsigned long long)h->packets : 0ULL);
	ban(AF_INET, XDPR_DDOS_TO, REM, 0, XDPR_DDOS_F_DROP);
	for (int i = 0; i < 8; i++)
		ok &= banned4("banned, sample 4: every packet dropped", "r0", &k);
	{
		__u32 s = 0;

		ok &= expect(xdpr_ddos_set_sample(&lib, XDPR_SAMPLE_MAX + 1) == -EINVAL &&
				     xdpr_ddos_set_sample(&lib, 0x80000001u) == -EINVAL &&
				     !xdpr_ddos_get_sample(&lib, &s) && s == 4,
			     "samples above %d: not refused, or the sample changed to %u", XDPR_SAMPLE_MAX, s);
	}
	if (xdpr_ddos_set_sample(&lib, 1))
		die("xdpr_ddos_set_sample: %s", lib.err);
	return ok;
}

static bool t_flush(void)
{
	struct pkt k = { .src = IN2, .dst = REM, .sport = 5000, .dport = 53 };
	bool ok = true;
	long n;

	start(true);
	protect(AF_INET, "10.0.2.0", 24);
	protect(AF_INET6, "2001:db8:2::", 64);
	ok &= fwd4("metered", "r0", "r1", &k);
	ban(AF_INET, XDPR_DDOS_TO, REM3, 0, XDPR_DDOS_F_DROP);
	n = xdpr_ddos_flush(&lib, XDPR_DDOS_FLUSH_BANS);
	ok &= expect(n == 1 && !(cfg_now() & XDPR_CFG_BANS), "flush bans: %ld, flag %u", n,
		     cfg_now() & XDPR_CFG_BANS);
	n = xdpr_ddos_flush(&lib, XDPR_DDOS_FLUSH_HOSTS);
	ok &= expect(n == 2 && hosts().n == 0, "flush hosts: %ld, expected 2", n);
	n = xdpr_ddos_flush(&lib, XDPR_DDOS_FLUSH_PROTECT);
	ok &= expect(n == 2, "flush protected: %ld, expected 2", n);
	ok &= fwd4("not protected any more", "r0", "r1", &k);
	ok &= expect(hosts().n == 0, "metered with no protected prefix");
	return ok;
}

static const struct {
	const char *name;
	bool (*fn)(void);
} cases[] = {
	{ "meters off: forwarded, nothing metered", t_off },
	{ "IPv4: to meter of the protected destination, from meters of its sources, L3 bytes", t_meter4 },
	{ "prefixes: /32, /0 (IPv4 only), host bits, duplicates, delete", t_prefixes },
	{ "bans: to and from dropped and counted per ban, others forwarded; replace keeps counters; unban", t_ban },
	{ "a ban ends by itself; a blackhole-only ban drops nothing", t_expiry },
	{ "IPv6: meters of a /64, a ban of a /128", t_v6 },
	{ "one host on two CPUs: per-CPU shares summed by the loader", t_two_cpus },
	{ "slots: a host whose slot is held goes to the hash, an idle holder is replaced, summed, deleted", t_slots },
	{ "table full: forwarded, untracked counted, old hosts go on; flush empties it", t_full },
	{ "sample 4: about a quarter metered at random gaps, each counted 4 times, every source its share; bans see every packet", t_sample },
	{ "flush bans, hosts, protected prefixes", t_flush },
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
	lib.fd[XM_DDOS_PROT] = bpf_map__fd(skel->maps.xdpr_ddos_prot);
	lib.fd[XM_DDOS_TO] = bpf_map__fd(skel->maps.xdpr_ddos_to);
	lib.fd[XM_DDOS_FROM] = bpf_map__fd(skel->maps.xdpr_ddos_from);
	lib.fd[XM_DDOS_BANS] = bpf_map__fd(skel->maps.xdpr_ddos_bans);
	lib.fd[XM_DDOS_STATS] = bpf_map__fd(skel->maps.xdpr_ddos_stats);
	lib.fd[XM_DDOS_BITS] = bpf_map__fd(skel->maps.xdpr_ddos_bits);
	lib.fd[XM_DDOS_SLOTS] = bpf_map__fd(skel->maps.xdpr_ddos_slots);

	printf("1..%d\n", NCASES);
	for (int i = 0; i < NCASES; i++) {
		if (cases[i].fn == t_two_cpus && ncpus < 2) {
			tap(true, cases[i].name, "needs 2 CPUs");
			continue;
		}
		tap(cases[i].fn(), cases[i].name, NULL);
	}
	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
