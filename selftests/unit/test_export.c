// SPDX-License-Identifier: GPL-2.0
/*
 * test_export.c - the flow exporter (daemon/export.c) fed synthetic flows
 * with a fake clock; no BPF, no privileges.
 *
 *   test_export                      TAP: the cache rules, the messages as
 *                                    received on a UDP socket of its own
 *                                    (headers, sequence numbers, sizes,
 *                                    templates), unreachable collectors
 *   test_export send {ipfix|netflow9} ADDR:PORT
 *                                    the oracle scenario to a collector
 *                                    (selftests/unit/export.t decodes it
 *                                    with nfdump and tshark)
 *
 * The oracle scenario (mono T0 = 1000 s is wall 2026-01-01 00:00:00 UTC):
 *   C  v4 TCP 192.168.1.10:33000 -> 203.0.113.80:80, NAT source
 *      198.51.100.1:61000, SYN|ACK|FIN: 7 packets 700 bytes (tick T0, FIN)
 *   A  v4 UDP 10.1.0.2:5000 -> 198.51.100.7:53: 15 packets 1500 bytes
 *      (T0+31, active timeout), then 3 packets 300 bytes (T0+56, inactive)
 *   B  v6 TCP [2001:db8:1::2]:40000 -> [2001:db8:2::9]:443, PSH|ACK:
 *      20 packets 30000 bytes (T0+31, inactive)
 *   D  v4 ICMP echo 10.1.0.2 -> 198.51.100.7 (dport 0x0800): 3 packets 252
 *      bytes (T0+31, inactive)
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "../tap.h"
#include "../../daemon/export.h"

struct cli_opts opts; /* the CLI's library (conf_addr_port) wants them */

int fail(int code, const char *fmt, ...)
{
	(void)fmt;
	return code;
}

#define S 1000000000ULL
#define T0 (1000 * S)
#define WALL0 (1767225600ULL * S)

/* ---- a flow table of the test's own ---- */

#define NF 512
static struct xdpr_flow table[NF];
static bool present[NF];
static int deletes;

static int t_foreach(void *ctx, int (*cb)(const struct xdpr_flow *f, void *arg), void *arg)
{
	(void)ctx;
	for (int i = 0; i < NF; i++)
		if (present[i] && cb(&table[i], arg))
			break;
	return 0;
}

static int t_del(void *ctx, const struct xdpr_flow *f)
{
	(void)ctx;
	for (int i = 0; i < NF; i++)
		if (present[i] && !memcmp(table[i].key, f->key, sizeof(f->key))) {
			present[i] = false;
			deletes++;
			return 0;
		}
	return -ENOENT;
}

static const struct export_source src = { t_foreach, t_del, NULL };

static void flow4(int i, __u8 proto, const char *s, __u16 sp, const char *dd, __u16 dp)
{
	struct xdpr_flow *f = &table[i];

	memset(f, 0, sizeof(*f));
	f->family = AF_INET;
	f->proto = proto;
	inet_pton(AF_INET, s, f->src);
	inet_pton(AF_INET, dd, f->dst);
	f->sport = sp;
	f->dport = dp;
	memcpy(f->xsrc, f->src, 16);
	memcpy(f->xdst, f->dst, 16);
	f->xsport = sp;
	f->xdport = dp;
	f->in_ifindex = 2;
	f->out_ifindex = 3;
	memcpy(f->key, &i, sizeof(i));
	present[i] = true;
}

static void flow6(int i, __u8 proto, const char *s, __u16 sp, const char *dd, __u16 dp)
{
	flow4(i, proto, "0.0.0.0", sp, "0.0.0.0", dp);
	table[i].family = AF_INET6;
	inet_pton(AF_INET6, s, table[i].src);
	inet_pton(AF_INET6, dd, table[i].dst);
	memcpy(table[i].xsrc, table[i].src, 16);
	memcpy(table[i].xdst, table[i].dst, 16);
}

static void counts(int i, __u64 pkts, __u64 bytes, __u64 first, __u64 last)
{
	table[i].packets = pkts;
	table[i].bytes = bytes;
	table[i].first_ns = first;
	table[i].last_ns = last;
}

static struct export_clock at(__u64 mono)
{
	return (struct export_clock){ mono, WALL0 + (mono - T0) };
}

/* ---- the oracle scenario ---- */

enum { FA, FB, FC, FD };

static void scenario_flows(void)
{
	memset(present, 0, sizeof(present));
	flow4(FA, IPPROTO_UDP, "10.1.0.2", 5000, "198.51.100.7", 53);
	counts(FA, 10, 1000, T0 - 30 * S, T0 - 1 * S);
	flow6(FB, IPPROTO_TCP, "2001:db8:1::2", 40000, "2001:db8:2::9", 443);
	counts(FB, 20, 30000, T0 - 20 * S, T0 - 1 * S);
	table[FB].tcp_flags = 0x18;
	flow4(FC, IPPROTO_TCP, "192.168.1.10", 33000, "203.0.113.80", 80);
	counts(FC, 7, 700, T0 - 5 * S, T0 - 1 * S);
	table[FC].tcp_flags = 0x13;
	table[FC].xlated = 1;
	inet_pton(AF_INET, "198.51.100.1", table[FC].xsrc);
	table[FC].xsport = 61000;
	flow4(FD, IPPROTO_ICMP, "10.1.0.2", 0, "198.51.100.7", 8 << 8);
	counts(FD, 3, 252, T0 - 3 * S, T0 - 1 * S);
}

/* The four ticks; after each, check(tick) (NULL: none). */
static void scenario(struct exporter *ex, void (*check)(struct exporter *ex, int tick))
{
	struct export_clock c;

	scenario_flows();
	c = at(T0);
	export_tick(ex, &c, &src);
	if (check)
		check(ex, 1);
	counts(FA, 15, 1500, T0 - 30 * S, T0 + 30 * S);
	c = at(T0 + 31 * S);
	export_tick(ex, &c, &src);
	if (check)
		check(ex, 2);
	counts(FA, 18, 1800, T0 - 30 * S, T0 + 40 * S);
	c = at(T0 + 50 * S);
	export_tick(ex, &c, &src);
	if (check)
		check(ex, 3);
	c = at(T0 + 56 * S);
	export_tick(ex, &c, &src);
	if (check)
		check(ex, 4);
}

static int send_mode(const char *fmt, const char *addr)
{
	struct conf_export ce = { .n = 1, .active = 60, .inactive = 15, .sample = 1 };
	struct exporter *ex;
	char err[256];

	ce.coll[0].fmt = !strcmp(fmt, "ipfix") ? CONF_EXPORT_IPFIX : CONF_EXPORT_NF9;
	if (conf_addr_port(addr, &ce.coll[0].addr)) {
		fprintf(stderr, "bad address %s\n", addr);
		return 2;
	}
	snprintf(ce.coll[0].text, sizeof(ce.coll[0].text), "%s", addr);
	ex = export_create(&ce, err, sizeof(err));
	if (!ex) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	scenario(ex, NULL);
	printf("records %llu messages %llu errors %llu\n", (unsigned long long)ex->coll[0].records,
	       (unsigned long long)ex->coll[0].messages, (unsigned long long)ex->coll[0].send_errors);
	export_destroy(ex);
	return 0;
}

/* ---- receiving what was sent ---- */

static int rx_fd;
static struct sockaddr_in rx_addr;

static int rx_open(void)
{
	socklen_t l = sizeof(rx_addr);

	rx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	rx_addr.sin_family = AF_INET;
	rx_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (rx_fd < 0 || bind(rx_fd, (struct sockaddr *)&rx_addr, sizeof(rx_addr)) ||
	    getsockname(rx_fd, (struct sockaddr *)&rx_addr, &l))
		return -1;
	{
		int big = 4 << 20;

		setsockopt(rx_fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	}
	return 0;
}

#define MAXMSG 256
static __u8 msgs[MAXMSG][2048];
static ssize_t msglen[MAXMSG];

/* Every message waiting (loopback delivers at send). */
static int rx_all(void)
{
	int n = 0;

	while (n < MAXMSG && (msglen[n] = recv(rx_fd, msgs[n], sizeof(msgs[n]), 0)) > 0)
		n++;
	return n;
}

static __u16 g16(const __u8 *p) { return p[0] << 8 | p[1]; }
static __u32 g32(const __u8 *p) { return (__u32)g16(p) << 16 | g16(p + 2); }
static __u64 g64(const __u8 *p) { return (__u64)g32(p) << 32 | g32(p + 4); }

/* A message's sets: counts of data records per template, template records, well-formed. */
struct parsed {
	bool ok;
	int tmpl_recs, data_recs, v4, v6, nat4;
	__u32 seq, count;
};

static struct parsed parse(const __u8 *b, ssize_t len, bool v9)
{
	struct parsed p = { .ok = true };
	size_t off = v9 ? 20 : 16;
	int recl[3] = { v9 ? 48 : 56, v9 ? 72 : 80, v9 ? 60 : 68 };

	if (g16(b) != (v9 ? 9 : 10) || (!v9 && g16(b + 2) != len) || g32(b + (v9 ? 16 : 12)) != EXPORT_DOMAIN)
		p.ok = false;
	p.seq = g32(b + (v9 ? 12 : 8));
	p.count = v9 ? g16(b + 2) : 0;
	while (p.ok && off + 4 <= (size_t)len) {
		__u16 id = g16(b + off), sl = g16(b + off + 2);
		size_t end = off + sl, q = off + 4;

		if (sl < 4 || end > (size_t)len || (v9 && sl % 4)) {
			p.ok = false;
			break;
		}
		if (id == (v9 ? 0 : 2)) {
			while (q + 4 <= end) {
				q += 4 + 4 * g16(b + q + 2);
				p.tmpl_recs++;
			}
		} else if (id >= 256 && id <= 258) {
			int rl = recl[id - 256];

			while (q + rl <= end) {
				q += rl;
				p.data_recs++;
				*(id == 256 ? &p.v4 : id == 257 ? &p.v6 : &p.nat4) += 1;
			}
			if (end - q >= 4)
				p.ok = false;
		} else {
			p.ok = false;
		}
		off = end;
	}
	if (off != (size_t)len)
		p.ok = false;
	return p;
}

static struct exporter *make(enum conf_export_fmt fmt, const char *addr)
{
	struct conf_export ce = { .n = 1, .active = 60, .inactive = 15, .sample = 1 };
	char err[256];

	ce.coll[0].fmt = fmt;
	conf_addr_port(addr, &ce.coll[0].addr);
	snprintf(ce.coll[0].text, sizeof(ce.coll[0].text), "%s", addr);
	return export_create(&ce, err, sizeof(err));
}

static char rx_name[64];

/* ---- the checks ---- */

static int got_del;

static void check_rules(struct exporter *ex, int tick)
{
	struct export_collector *c = &ex->coll[0];

	switch (tick) {
	case 1:
		tap_ok(c->records == 1 && ex->nflows == 4 && deletes == 0,
		       "tick 1: only the TCP flow with FIN is reported (records %llu), 4 flows cached",
		       (unsigned long long)c->records);
		break;
	case 2:
		tap_ok(c->records == 4 && deletes == 3 && ex->nflows == 1 && present[FA] && !present[FB] &&
		       !present[FC] && !present[FD],
		       "tick 2: active timeout (A), inactive (B, D) reported; B, C, D deleted (records %llu, "
		       "deletes %d, cached %zu)", (unsigned long long)c->records, deletes, ex->nflows);
		break;
	case 3:
		tap_ok(c->records == 4 && deletes == 3, "tick 3: A active 19 s, idle 10 s: nothing due");
		break;
	case 4:
		tap_ok(c->records == 5 && deletes == 4 && ex->nflows == 0 && ex->flows_deleted == 4,
		       "tick 4: A idle 16 s: its delta reported, deleted, the cache empty");
		break;
	}
	got_del = deletes;
}

/* The records of one message, decoded: the fields the test knows. */
struct rec {
	__u16 tid;
	__u8 src[16], xsrc[4];
	__u16 sport, dport, xsport;
	__u8 proto, flags;
	__u16 icmp;             /* the last field */
	__u64 pkts, bytes, start, end;
};

static int records(const __u8 *b, ssize_t len, bool v9, struct rec *out, int max)
{
	size_t off = v9 ? 20 : 16;
	int n = 0;

	while (off + 4 <= (size_t)len) {
		__u16 id = g16(b + off), sl = g16(b + off + 2);
		size_t end = off + sl, q = off + 4;

		if (sl < 4)
			break;
		if (id >= 256 && id <= 258) {
			size_t al = id == 257 ? 16 : 4, rl = (v9 ? 48 : 56) + (id == 257 ? 24 : id == 258 ? 12 : 0);

			while (q + rl <= end && n < max) {
				const __u8 *r = b + q, *t = r + 2 * al;
				struct rec *o = &out[n++];

				memset(o, 0, sizeof(*o));
				o->tid = id;
				memcpy(o->src, r, al);
				o->sport = g16(t);
				o->dport = g16(t + 2);
				o->proto = t[4];
				o->flags = t[5];
				o->pkts = g64(t + 14);
				o->bytes = g64(t + 22);
				o->start = v9 ? g32(t + 30) : g64(t + 30);
				o->end = v9 ? g32(t + 34) : g64(t + 38);
				o->icmp = g16(r + rl - 2);
				if (id == 258) { /* after the times */
					memcpy(o->xsrc, t + (v9 ? 38 : 46), 4);
					o->xsport = g16(t + (v9 ? 38 : 46) + 8);
				}
				q += rl;
			}
		}
		off = end;
	}
	return n;
}

static void test_scenario(bool v9)
{
	const char *name = v9 ? "netflow9" : "ipfix";
	struct exporter *ex = make(v9 ? CONF_EXPORT_NF9 : CONF_EXPORT_IPFIX, rx_name);
	struct rec r[16];
	int n, nr = 0, tmpl = 0;
	bool ok = true;
	__u32 seq_want = 0;

	deletes = 0;
	scenario(ex, v9 ? NULL : check_rules);
	n = rx_all();
	for (int i = 0; i < n; i++) {
		struct parsed p = parse(msgs[i], msglen[i], v9);

		ok &= p.ok && p.seq == seq_want && (!v9 || p.count == (__u32)(p.tmpl_recs + p.data_recs));
		seq_want += v9 ? 1 : (__u32)p.data_recs;
		tmpl += p.tmpl_recs;
		nr += records(msgs[i], msglen[i], v9, r + nr, 16 - nr);
	}
	tap_ok(ok && n == 3, "%s: 3 messages (ticks 1, 2, 4: those with records), well formed, sequence "
	       "numbers per RFC (%s): %d messages", name, v9 ? "messages" : "data records", n);
	tap_ok(tmpl == 3, "%s: the 3 templates once (first message): %d template records", name, tmpl);
	tap_ok(nr == 5, "%s: 5 data records: %d", name, nr);
	if (nr != 5) {
		export_destroy(ex);
		return;
	}
	/* tick 1: C; tick 2: A, D (template 256), B (257) in set order; tick 4: A */
	const struct rec *rc = &r[0], *ra1 = r[1].proto == 17 ? &r[1] : &r[2],
			 *rd = r[1].proto == 1 ? &r[1] : &r[2], *rb = &r[3], *ra2 = &r[4];
	__u64 w0 = v9 ? (T0 - 5 * S) / 1000000 : (WALL0 - 5 * S) / 1000000;

	tap_ok(rc->tid == 258 && rc->pkts == 7 && rc->bytes == 700 && rc->proto == 6 &&
	       rc->flags == 0x13 && rc->sport == 33000 && rc->dport == 80 && rc->xsport == 61000 &&
	       !memcmp(rc->xsrc, "\xc6\x33\x64\x01", 4) && rc->start == w0 && rc->end == w0 + 4000,
	       "%s: C: NAT template, 7 packets 700 bytes, post-NAT 198.51.100.1:61000, times of first and "
	       "last packet", name);
	__u64 a0 = v9 ? (T0 - 30 * S) / 1000000 : (WALL0 - 30 * S) / 1000000;

	tap_ok(ra1->tid == 256 && ra1->pkts == 15 && ra1->bytes == 1500 && ra1->start == a0 &&
	       ra1->end == a0 + 60000 && ra2->tid == 256 && ra2->pkts == 3 && ra2->bytes == 300 &&
	       ra2->start == a0 + 60000 && ra2->end == a0 + 70000 && ra2->proto == 17,
	       "%s: A: 15/1500 at the active timeout, then the delta 3/300 from its last packet", name);
	tap_ok(rd->tid == 256 && rd->proto == 1 && rd->dport == 0x0800 && rd->icmp == 0x0800 && rd->pkts == 3 &&
	       ra1->icmp == 0 && 
	       rb->tid == 257 && rb->pkts == 20 && rb->bytes == 30000 && rb->sport == 40000 &&
	       rb->src[0] == 0x20 && rb->src[15] == 2,
	       "%s: D (ICMP type 8 as dport and icmpTypeCode 0x0800), B (IPv6, 20/30000)", name);
	if (v9) { /* the header's times give the collector the wall clock of uptime 0 */
		__u32 up = g32(msgs[0] + 4), secs = g32(msgs[0] + 8);

		tap_ok((__u64)secs * 1000 - up == WALL0 / 1000000 - T0 / 1000000,
		       "netflow9: unix_secs * 1000 - sysUptime is the wall clock of monotonic 0 (%u, %u)",
		       secs, up);
	}
	export_destroy(ex);
}

static void test_sizes(bool v9)
{
	const char *name = v9 ? "netflow9" : "ipfix";
	struct exporter *ex = make(v9 ? CONF_EXPORT_NF9 : CONF_EXPORT_IPFIX, rx_name);
	struct export_clock c = at(T0);
	int n, data = 0, maxlen = 0, tmpl_at_20 = 1;
	bool ok = true;
	__u32 seq = 0;

	rx_all();
	memset(present, 0, sizeof(present));
	for (int i = 0; i < NF; i++) { /* every third v6, every fifth NAT: mixed sets */
		char a[64];

		if (i % 3 == 0) {
			snprintf(a, sizeof(a), "2001:db8::%x", i + 1);
			flow6(i, IPPROTO_UDP, a, 1000 + i, "2001:db8:ffff::1", 53);
		} else {
			snprintf(a, sizeof(a), "10.9.%d.%d", i / 250, i % 250 + 1);
			flow4(i, IPPROTO_UDP, a, 1000 + i, "192.0.2.53", 53);
			table[i].xlated = i % 5 == 0;
		}
		counts(i, 1 + i, 100 + i, T0 - 20 * S, T0 - 16 * S); /* idle 16 s: all due */
	}
	export_tick(ex, &c, &src);
	n = rx_all();
	for (int i = 0; i < n; i++) {
		struct parsed p = parse(msgs[i], msglen[i], v9);

		ok &= p.ok && p.seq == seq;
		seq += v9 ? 1 : (__u32)p.data_recs;
		data += p.data_recs;
		if (msglen[i] > maxlen)
			maxlen = msglen[i];
		if ((i % EXPORT_TMPL_MSGS == 0) != (p.tmpl_recs == 3))
			tmpl_at_20 = 0;
	}
	tap_ok(ok && data == NF && n > NF / 25, "%s: %d flows due at once: %d well-formed messages, "
	       "sequence right, %d data records", name, NF, n, data);
	tap_ok(maxlen <= EXPORT_MSG_MAX && maxlen > EXPORT_MSG_MAX - 100,
	       "%s: messages of at most %d bytes, filled (largest %d)", name, EXPORT_MSG_MAX, maxlen);
	tap_ok(tmpl_at_20 && n > EXPORT_TMPL_MSGS, "%s: the templates in message 0, 20, 40... (of %d)", name, n);
	tap_ok(ex->coll[0].records == NF && ex->coll[0].send_errors == 0 && ex->nflows == 0,
	       "%s: counters: %llu records, %llu messages, no error", name,
	       (unsigned long long)ex->coll[0].records, (unsigned long long)ex->coll[0].messages);
	/* templates again after 60 s without data */
	c = at(T0 + 59 * S);
	export_tick(ex, &c, &src);
	int quiet = rx_all();

	c = at(T0 + 61 * S);
	export_tick(ex, &c, &src);
	n = rx_all();
	tap_ok(quiet == 0 && n == 1 && parse(msgs[0], msglen[0], v9).tmpl_recs == 3 &&
	       parse(msgs[0], msglen[0], v9).data_recs == 0,
	       "%s: no message while nothing is due; the templates alone 60 s after the last", name);
	export_destroy(ex);
}

/* A reload: the new exporter takes the old one's cache, a flow's next record is still a delta. */
static void test_reload(void)
{
	struct exporter *a = make(CONF_EXPORT_IPFIX, rx_name), *b = make(CONF_EXPORT_NF9, rx_name);
	struct export_clock c = at(T0);

	rx_all();
	memset(present, 0, sizeof(present));
	flow4(0, IPPROTO_UDP, "10.7.0.1", 1, "10.7.0.2", 2);
	counts(0, 100, 10000, T0 - 61 * S, T0); /* active timeout due */
	export_tick(a, &c, &src);
	export_take_cache(b, a);
	export_destroy(a);
	counts(0, 130, 13000, T0 - 61 * S, T0 + 55 * S);
	c = at(T0 + 61 * S);
	export_tick(b, &c, &src);
	int n = rx_all();
	struct rec r[4];
	int nr = n == 2 ? records(msgs[1], msglen[1], true, r, 4) : 0;

	tap_ok(n == 2 && nr == 1 && r[0].pkts == 30 && r[0].bytes == 3000 && b->nflows == 1,
	       "a reload (the cache handed over): the next record is the delta, 30/3000 (messages %d, "
	       "records %d, packets %llu)", n, nr, nr ? (unsigned long long)r[0].pkts : 0ULL);
	export_destroy(b);
}

/* An IPv6 collector: the same messages over [::1]. */
static void test_ipv6(void)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	socklen_t l = sizeof(a6);
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	char name[64];
	__u8 b[2048];
	ssize_t len;

	if (fd < 0 || bind(fd, (struct sockaddr *)&a6, sizeof(a6)) || getsockname(fd, (struct sockaddr *)&a6, &l)) {
		tap_ok(0, "a UDP socket on [::1]: %s", strerror(errno));
		return;
	}
	snprintf(name, sizeof(name), "[::1]:%u", ntohs(a6.sin6_port));
	struct exporter *ex = make(CONF_EXPORT_IPFIX, name);
	struct export_clock c = at(T0);

	scenario_flows();
	export_tick(ex, &c, &src);
	len = recv(fd, b, sizeof(b), 0);
	tap_ok(len > 0 && parse(b, len, false).ok && parse(b, len, false).nat4 == 1 && ex->coll[0].send_errors == 0,
	       "an IPv6 collector (%s) gets the message (%zd bytes)", name, len);
	export_destroy(ex);
	close(fd);
}

static int logged;
static char last_log[512];

static void count_log(int prio, const char *msg)
{
	(void)prio;
	logged++;
	snprintf(last_log, sizeof(last_log), "%s", msg);
}

static double secs_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_unreachable(const char *closed, const char *blackhole)
{
	struct conf_export ce = { .n = 2, .active = 60, .inactive = 15, .sample = 1 };
	struct exporter *ex;
	struct timespec t0;
	char err[256];
	double took;

	ce.coll[0].fmt = CONF_EXPORT_IPFIX;
	conf_addr_port(closed, &ce.coll[0].addr);
	snprintf(ce.coll[0].text, sizeof(ce.coll[0].text), "%s", closed);
	ce.coll[1].fmt = CONF_EXPORT_NF9;
	conf_addr_port(blackhole, &ce.coll[1].addr);
	snprintf(ce.coll[1].text, sizeof(ce.coll[1].text), "%s", blackhole);
	ex = export_create(&ce, err, sizeof(err));
	tap_ok(ex != NULL, "an exporter to a closed port and to %s: %s", blackhole, ex ? "created" : err);
	if (!ex)
		return;
	ex->log = count_log;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k < 120; k++) { /* two minutes of ticks, every flow due every tick */
		struct export_clock c = at(T0 + k * S);

		memset(present, 0, sizeof(present));
		for (int i = 0; i < 100; i++) {
			char a[32];

			snprintf(a, sizeof(a), "10.8.%d.%d", k, i + 1);
			flow4(i, IPPROTO_UDP, a, 2000, "192.0.2.1", 53);
			counts(i, 5, 500, T0 + k * S - 20 * S, T0 + k * S - 16 * S);
		}
		export_tick(ex, &c, &src);
	}
	took = secs_since(&t0);
	tap_ok(took < 5, "120 ticks of 100 records to both took %.3f s (non-blocking; loose bound 5 s)", took);
	tap_ok(ex->coll[0].send_errors > 0, "the closed port's errors are counted (%llu, %s)",
	       (unsigned long long)ex->coll[0].send_errors, strerror(ex->coll[0].last_errno));
	tap_ok(logged >= 2 && logged <= 4, "logged once a minute per failing collector, not per message: "
	       "%d lines in 2 minutes (last: %s)", logged, last_log);
	printf("# %s: %llu messages, %llu errors (%s)\n", blackhole,
	       (unsigned long long)ex->coll[1].messages, (unsigned long long)ex->coll[1].send_errors,
	       ex->coll[1].send_errors ? strerror(ex->coll[1].last_errno) : "none");
	export_destroy(ex);
}

/* The export lines through conf_parse and back through conf_print. */
static void test_conf_roundtrip(void)
{
	static const char in[] = "export ipfix 192.0.2.10:4739\n"
				 "export netflow9 [2001:db8::0:1]:2055   # a comment\n"
				 "export ipfix [2001:db8::1]:4740\n"
				 "export active-timeout 120\nexport inactive-timeout 30\nexport sample 10\n"
				 "export nat-events on\n";
	static const char want[] = "export ipfix 192.0.2.10:4739\n"
				   "export netflow9 [2001:db8::1]:2055\n"
				   "export ipfix [2001:db8::1]:4740\n"
				   "export active-timeout 120\nexport inactive-timeout 30\nexport sample 10\n"
				   "export nat-events on\n";
	static struct conf c, c2;
	char err[512], out[1024] = "", out2[1024] = "";
	FILE *f = fmemopen((char *)in, sizeof(in) - 1, "r"), *o = fmemopen(out, sizeof(out), "w");
	int r = conf_parse(f, "t.conf", 0, &c, err, sizeof(err));

	fclose(f);
	if (!r)
		conf_print(o, &c);
	fclose(o);
	f = fmemopen(out, strlen(out) ? strlen(out) : 1, "r");
	o = fmemopen(out2, sizeof(out2), "w");
	if (!r && !conf_parse(f, "t2.conf", 0, &c2, err, sizeof(err)))
		conf_print(o, &c2);
	fclose(f);
	fclose(o);
	tap_ok(!r && !strcmp(out, want) && !strcmp(out2, want) && conf_export_same(&c.exp, &c2.exp) &&
	       c.exp.n == 3 && c.exp.coll[1].fmt == CONF_EXPORT_NF9 && c.exp.coll[1].addr.ss_family == AF_INET6 &&
	       c2.exp.nat_events,
	       "export lines parse, print and parse back the same (%s)", r ? err : strcmp(out, want) ? "printed otherwise" : "7 lines");
	conf_free(&c);
	conf_free(&c2);
}

/* NAT events (export_nat_events): IPFIX only, with nat-events on; the bytes of each record. */
static struct xdpr_natlog_rec natrec(__u8 ev, __u8 proto, const char *src, __u16 sp, const char *xsrc,
				     __u16 xsp, __u32 limit)
{
	struct xdpr_natlog_rec r = { .ts_ns = T0 + 5 * S + 123456789, .event = ev, .rule = 7, .proto = proto,
				     .family = AF_INET, .sport = htons(sp), .xsport = htons(xsp),
				     .dport = htons(443), .limit = limit };

	inet_pton(AF_INET, src, &r.src);
	inet_pton(AF_INET, xsrc, &r.xsrc);
	inet_pton(AF_INET, "203.0.113.80", &r.dst);
	return r;
}

static void test_nat_events(void)
{
	struct xdpr_natlog_rec r[3] = {
		natrec(XDPR_NL_CREATE, IPPROTO_TCP, "192.168.1.10", 33000, "198.51.100.1", 61000, 0),
		natrec(XDPR_NL_QUOTA, IPPROTO_UDP, "192.168.1.11", 5000, "198.51.100.1", 0, 4096),
		natrec(XDPR_NL_DELETE, IPPROTO_TCP, "192.168.1.10", 33000, "198.51.100.1", 61000, 0),
	};
	struct export_clock c = at(T0 + 6 * S);
	struct exporter *ex = make(CONF_EXPORT_IPFIX, rx_name), *v9 = make(CONF_EXPORT_NF9, rx_name);
	const __u8 *m, *q;
	__u16 ids[8];
	int n, nt = 0;
	bool ok;

	rx_all();
	if (!ex || !v9) {
		tap_ok(0, "NAT events: exporters");
		return;
	}
	export_nat_events(ex, &c, r, 3);
	n = rx_all();
	tap_ok(n == 0 && ex->nat_events_in == 3 && ex->coll[0].nat_records == 0,
	       "NAT events with nat-events off: none sent (%d messages)", n);
	ex->conf.nat_events = v9->conf.nat_events = true;
	export_nat_events(v9, &c, r, 3);
	n = rx_all();
	tap_ok(n == 0 && v9->coll[0].nat_records == 0, "NAT events to a NetFlow v9 collector: none (%d messages)", n);
	export_nat_events(ex, &c, r, 3);
	n = rx_all();
	m = msgs[0];
	/* the templates: 256-258 as before, 259 (10 fields) and 260 (12) */
	ok = n == 1 && g16(m) == 10 && g16(m + 2) == msglen[0] && g32(m + 8) == 0 && g16(m + 16) == 2;
	for (q = m + 20; ok && q < m + 16 + g16(m + 18) && nt < 8; q += 4 + 4 * g16(q + 2))
		ids[nt++] = g16(q);
	ok = ok && nt == 5 && ids[3] == EXPORT_T_NATEV4 && ids[4] == EXPORT_T_NATQ4;
	tap_ok(ok, "NAT events: one IPFIX message, sequence 0, the 5 templates (%d messages, %d templates)", n, nt);
	/* after the template set: set 259 (create), set 260 (quota), set 259 (delete) */
	q = m + 16 + g16(m + 18);
	ok = ok && g16(q) == EXPORT_T_NATEV4 && g16(q + 2) == 4 + 32;
	ok = ok && g64(q + 4) == 1767225605123ULL && q[12] == 4 && q[13] == 6 && g32(q + 14) == 0xc0a8010a &&
	     g16(q + 18) == 33000 && g32(q + 20) == 0xc6336401 && g16(q + 24) == 61000 &&
	     g32(q + 26) == 0xcb007150 && g16(q + 30) == 443 && g32(q + 32) == 7;
	tap_ok(ok, "NAT events: the create, field by field (time ms, natEvent 4, proto, src, port, post-NAT, dst, "
	       "natPoolId 7)");
	q += g16(q + 2);
	ok = ok && g16(q) == EXPORT_T_NATQ4 && g16(q + 2) == 4 + 40 && q[12] == 13 && q[13] == 17 &&
	     g32(q + 14) == 0xc0a8010b && g16(q + 24) == 0 && g32(q + 36) == 3 && g32(q + 40) == 4096;
	q += g16(q + 2);
	ok = ok && g16(q) == EXPORT_T_NATEV4 && q[12] == 5 && q + g16(q + 2) == m + msglen[0];
	tap_ok(ok && ex->coll[0].nat_records == 3 && ex->coll[0].records == 3,
	       "NAT events: quota exceeded (natEvent 13, natQuotaExceededEvent 3, maxEntriesPerUser 4096), "
	       "then the delete (5); 3 records counted");
	export_nat_events(ex, &c, r, 1);
	n = rx_all();
	tap_ok(n == 1 && g32(msgs[0] + 8) == 3 && g16(msgs[0] + 16) == EXPORT_T_NATEV4 && msglen[0] == 16 + 36,
	       "NAT events: the next message, sequence 3, the record alone (no templates: not due)");
	export_destroy(ex);
	export_destroy(v9);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "send"))
		return send_mode(argv[2], argv[3]);
	if (argc != 1 && argc != 2) {
		fprintf(stderr, "usage: test_export [BLACKHOLE-ADDR:PORT] | test_export send FMT ADDR:PORT\n");
		return 2;
	}
	if (rx_open()) {
		printf("not ok 1 - a UDP socket on 127.0.0.1: %s\n1..1\n", strerror(errno));
		return 1;
	}
	snprintf(rx_name, sizeof(rx_name), "127.0.0.1:%u", ntohs(rx_addr.sin_port));
	test_conf_roundtrip();
	test_scenario(false);
	test_scenario(true);
	test_sizes(false);
	test_sizes(true);
	test_reload();
	test_ipv6();
	test_nat_events();
	{
		/* a closed port: a socket bound, then closed */
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t l = sizeof(a);
		char closed[64];

		bind(fd, (struct sockaddr *)&a, sizeof(a));
		getsockname(fd, (struct sockaddr *)&a, &l);
		close(fd);
		snprintf(closed, sizeof(closed), "127.0.0.1:%u", ntohs(a.sin_port));
		test_unreachable(closed, argc == 2 ? argv[1] : "192.0.2.1:2055");
	}
	printf("1..%d\n", tap_n);
	return tap_done();
}
