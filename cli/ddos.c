// SPDX-License-Identifier: GPL-2.0
/*
 * ddos.c - xdpr ddos { on | off | protect | show | ban | unban | flush } and
 * xdpr top: the DDoS meters and bans of bpf/ddos.h.
 *
 *   ddos on [sample N] | off              meters on protected prefixes on/off
 *   ddos protect { add | del } PREFIX     a prefix whose hosts are metered
 *   ddos show                             state, protected prefixes, bans (-s: metered hosts)
 *   ddos ban [to|from] ADDR [time S | forever] [blackhole]
 *                                         drop packets to (default) or from ADDR in XDP
 *   ddos unban [to|from] ADDR
 *   ddos flush [bans | hosts]             both when neither is named
 *   top [n N] [by pps|bps] [interval S] [count N]
 *                                         top talkers by rate, refreshed every S seconds
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "cli.h"
#include "out.h"

#define BAN_TIME_DEF 1900          /* seconds: FastNetMon's default ban time */
#define BAN_TIME_MAX (366u * 86400) /* a year; "forever" for longer */
#define DDOS_SAMPLE_MAX 1024

static void ddos_usage(void)
{
	fprintf(stderr,
		"Usage: xdpr ddos { on [sample N] | off }   (meter 1 in N packets per CPU, each counted N times)\n"
		"       xdpr ddos protect { add | del } PREFIX\n"
		"       xdpr [-j] [-s] ddos show\n"
		"       xdpr ddos ban [to | from] ADDR [time SECONDS | forever] [blackhole]\n"
		"       xdpr ddos unban [to | from] ADDR\n"
		"       xdpr ddos flush [bans | hosts]\n"
		"       xdpr [-j] top [n N] [by { pps | bps }] [interval SECONDS] [count N]\n");
}

static int parse_addr(const char *s, __u8 *family, __u8 *addr)
{
	memset(addr, 0, 16);
	if (s && inet_pton(AF_INET, s, addr) == 1)
		*family = AF_INET;
	else if (s && inet_pton(AF_INET6, s, addr) == 1)
		*family = AF_INET6;
	else
		return -EINVAL;
	return 0;
}

/* "[to|from] ADDR [time S|forever] [blackhole]" (unban: no options). */
int parse_ddos_ban(int argc, char **argv, bool unban, struct xdpr_ddos_ban_info *b, __u64 *secs,
		   char *err, size_t len)
{
	int i = 0;
	bool timed = false;

	memset(b, 0, sizeof(*b));
	b->dir = XDPR_DDOS_TO;
	b->flags = XDPR_DDOS_F_DROP;
	*secs = BAN_TIME_DEF;
	if (i < argc && (!strcmp(argv[i], "to") || !strcmp(argv[i], "from")))
		b->dir = !strcmp(argv[i++], "to") ? XDPR_DDOS_TO : XDPR_DDOS_FROM;
	if (i >= argc) {
		snprintf(err, len, "\"%s\" needs an address", unban ? "unban" : "ban");
		return EXIT_USAGE;
	}
	if (parse_addr(argv[i], &b->family, b->addr)) {
		snprintf(err, len, "invalid address \"%s\"", argv[i]);
		return EXIT_USAGE;
	}
	for (i++; i < argc; i++) {
		const char *kw = argv[i];

		if (unban) {
			snprintf(err, len, "unexpected \"%s\" after the address", kw);
			return EXIT_USAGE;
		}
		if (!strcmp(kw, "time") || !strcmp(kw, "forever")) {
			unsigned long v;

			if (timed) {
				snprintf(err, len, "the ban time is given twice");
				return EXIT_USAGE;
			}
			timed = true;
			if (!strcmp(kw, "forever")) {
				*secs = 0;
				continue;
			}
			if (i + 1 >= argc || parse_uint(argv[i + 1], 1, BAN_TIME_MAX, &v)) {
				snprintf(err, len, "invalid ban time \"%s\" (seconds, 1 to %u, or \"forever\")",
					 i + 1 < argc ? argv[i + 1] : "", BAN_TIME_MAX);
				return EXIT_USAGE;
			}
			*secs = v;
			i++;
		} else if (!strcmp(kw, "blackhole")) {
			b->flags |= XDPR_DDOS_F_BLACKHOLE;
		} else {
			snprintf(err, len, "unknown ban argument \"%s\"", kw);
			return EXIT_USAGE;
		}
	}
	return 0;
}

static int ddos_onoff(bool on, int argc, char **argv)
{
	static struct xdpr x;
	unsigned long sample = 1;
	int ret;

	if (on && argc >= 1 && !strcmp(argv[0], "sample")) {
		if (argc < 2)
			return fail(EXIT_USAGE, "\"sample\" needs a value");
		if (parse_uint(argv[1], 1, DDOS_SAMPLE_MAX, &sample))
			return fail(EXIT_USAGE, "invalid sample \"%s\" (1 in N packets, N 1..%d)", argv[1],
				    DDOS_SAMPLE_MAX);
		argc -= 2;
		argv += 2;
	}
	if (argc)
		return fail(EXIT_USAGE, "unexpected \"%s\" after \"ddos %s\"", argv[0], on ? "on" : "off");
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	ret = (on && xdpr_ddos_set_sample(&x, sample)) || xdpr_ddos_set(&x, on) ? fail(EXIT_FAIL, "%s", x.err)
										 : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

static int ddos_on(int argc, char **argv) { return ddos_onoff(true, argc, argv); }
static int ddos_off(int argc, char **argv) { return ddos_onoff(false, argc, argv); }

static int ddos_protect(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_route_spec rs;
	char err[256];
	bool add;
	int ret;

	if (argc < 1 || (strcmp(argv[0], "add") && strcmp(argv[0], "del")))
		return fail(EXIT_USAGE, "expected \"ddos protect add PREFIX\" or \"ddos protect del PREFIX\"");
	add = !strcmp(argv[0], "add");
	if (argc < 2)
		return fail(EXIT_USAGE, "\"protect %s\" needs a prefix", argv[0]);
	if (argc > 2)
		return fail(EXIT_USAGE, "unexpected \"%s\" after the prefix", argv[2]);
	if (parse_prefix(argv[1], &rs, err, sizeof(err)))
		return fail(EXIT_USAGE, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	ret = xdpr_ddos_protect(&x, rs.family, rs.addr, rs.plen, add) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

static const char *addr_text(int family, const __u8 *a, char *buf, size_t len)
{
	return inet_ntop(family, a, buf, len) ? buf : "?";
}

static int print_prot(int family, const void *addr, int plen, void *arg)
{
	char s[INET6_ADDRSTRLEN], p[INET6_ADDRSTRLEN + 8];

	(*(int *)arg)++;
	snprintf(p, sizeof(p), "%s/%d", addr_text(family, addr, s, sizeof(s)), plen);
	out_str(NULL, "  %s\n", p);
	return 0;
}

static int print_ban(const struct xdpr_ddos_ban_info *b, void *arg)
{
	__u64 now = *(__u64 *)arg;
	char s[INET6_ADDRSTRLEN], left[32];
	bool forever = b->until_ns == XDPR_DDOS_FOREVER, expired = !forever && b->until_ns <= now;

	if (forever)
		snprintf(left, sizeof(left), "forever");
	else if (expired)
		snprintf(left, sizeof(left), "expired");
	else
		snprintf(left, sizeof(left), "%llus", (b->until_ns - now + 999999999ULL) / 1000000000ULL);
	out_obj_open(NULL);
	out_str("dir", "  %-4s ", b->dir == XDPR_DDOS_TO ? "to" : "from");
	out_str("family", NULL, b->family == AF_INET6 ? "ipv6" : "ipv4");
	out_str("addr", "%-39s ", addr_text(b->family, b->addr, s, sizeof(s)));
	out_str("reason", "%-6s ", xdpr_ddos_reason_name(b->reason));
	out_u64("pps", "%10llu ", b->pps);
	out_double("mbps", "%9.1f ", b->bps / 1e6);
	out_str("left", "%-9s ", left);
	if (!forever)
		out_u64("left_s", NULL, expired ? 0 : (b->until_ns - now + 999999999ULL) / 1000000000ULL);
	out_bool("forever", NULL, forever);
	out_bool("expired", NULL, expired);
	out_u64("age_s", NULL, now > b->since_ns ? (now - b->since_ns) / 1000000000ULL : 0);
	out_bool("drop", NULL, b->flags & XDPR_DDOS_F_DROP);
	out_bool("blackhole", NULL, b->flags & XDPR_DDOS_F_BLACKHOLE);
	out_text("%-15s ", (b->flags & XDPR_DDOS_F_DROP) && (b->flags & XDPR_DDOS_F_BLACKHOLE) ?
		 "drop,blackhole" : b->flags & XDPR_DDOS_F_DROP ? "drop" :
		 b->flags & XDPR_DDOS_F_BLACKHOLE ? "blackhole" : "-");
	out_u64("dropped_packets", "%12llu ", b->dropped_pkts);
	out_u64("dropped_bytes", "%14llu\n", b->dropped_bytes);
	out_obj_close();
	return 0;
}

static int print_host(const struct xdpr_ddos_host *h, void *arg)
{
	__u64 now = *(__u64 *)arg;
	char s[INET6_ADDRSTRLEN];

	out_obj_open(NULL);
	out_str("dir", "  %-4s ", h->dir == XDPR_DDOS_TO ? "to" : "from");
	out_str("family", NULL, h->family == AF_INET6 ? "ipv6" : "ipv4");
	out_str("addr", "%-39s ", addr_text(h->family, h->addr, s, sizeof(s)));
	out_u64("packets", "%12llu ", h->packets);
	out_u64("bytes", "%14llu ", h->bytes);
	out_u64("idle_ms", "%8llu\n", now > h->last_ns ? (now - h->last_ns) / 1000000 : 0);
	out_obj_close();
	return 0;
}

static int ddos_show(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_ddos_stats st;
	__u64 hosts, max, now;
	int ret, nprot = 0;
	__u32 sample;
	bool on;

	if (argc)
		return fail(EXIT_USAGE, "unexpected \"%s\" after \"ddos show\"", argv[0]);
	if ((ret = open_router(&x, 0)))
		return ret;
	if (xdpr_ddos_get(&x, &on, NULL, &hosts, &max) || xdpr_ddos_stats(&x, &st) ||
	    xdpr_ddos_get_sample(&x, &sample)) {
		ret = fail(EXIT_FAIL, "%s", x.err);
		xdpr_close(&x);
		return ret;
	}
	now = xdpr_ddos_now_ns();
	out_obj_open(NULL);
	out_bool("meters", NULL, on);
	out_text("meters %s", on ? "on" : "off");
	out_u64("sample", ", sample 1 in %llu", sample);
	out_u64("hosts", ", %llu hosts metered", hosts);
	out_u64("hosts_max", " of %llu", max);
	out_u64("metered", ", %llu packets metered", st.metered);
	out_u64("untracked", ", %llu untracked (table full)", st.untracked);
	out_u64("banned", ", %llu dropped by bans\n", st.banned);
	out_text("protected:\n");
	out_arr_open("protected");
	ret = xdpr_ddos_protect_foreach(&x, print_prot, &nprot);
	if (!nprot)
		out_text("  (none)\n");
	out_arr_close();
	out_text("bans:\n  %-4s %-39s %-6s %10s %9s %-9s %-15s %12s %14s\n", "DIR", "ADDRESS", "REASON", "PPS",
		 "MBIT/S", "LEFT", "ACTION", "DROPPED-PKTS", "DROPPED-BYTES");
	out_arr_open("bans");
	if (!ret)
		ret = xdpr_ddos_ban_foreach(&x, print_ban, &now);
	out_arr_close();
	if (opts.detail && !ret) {
		out_text("hosts:\n  %-4s %-39s %12s %14s %8s\n", "DIR", "ADDRESS", "PACKETS", "BYTES", "IDLE-MS");
		out_arr_open("host_meters");
		ret = xdpr_ddos_host_foreach(&x, print_host, &now);
		out_arr_close();
	}
	out_obj_close();
	out_flush_doc();
	if (ret)
		ret = fail(EXIT_FAIL, "%s", x.err);
	xdpr_close(&x);
	return ret;
}

static int ddos_ban(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_ddos_ban_info b;
	char err[256];
	__u64 secs;
	int ret;

	if ((ret = parse_ddos_ban(argc, argv, false, &b, &secs, err, sizeof(err))))
		return fail(ret, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	b.reason = XDPR_DDOS_R_MANUAL;
	b.since_ns = xdpr_ddos_now_ns();
	b.until_ns = secs ? b.since_ns + secs * 1000000000ULL : XDPR_DDOS_FOREVER;
	ret = xdpr_ddos_ban(&x, &b) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

static int ddos_unban(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_ddos_ban_info b;
	char err[256];
	__u64 secs;
	int ret;

	if ((ret = parse_ddos_ban(argc, argv, true, &b, &secs, err, sizeof(err))))
		return fail(ret, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	ret = xdpr_ddos_unban(&x, b.family, b.dir, b.addr) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

static int ddos_flush(int argc, char **argv)
{
	static struct xdpr x;
	unsigned int what = XDPR_DDOS_FLUSH_BANS | XDPR_DDOS_FLUSH_HOSTS;
	long n;
	int ret;

	if (argc > 1)
		return fail(EXIT_USAGE, "unexpected \"%s\" after \"ddos flush %s\"", argv[1], argv[0]);
	if (argc == 1) {
		if (!strcmp(argv[0], "bans"))
			what = XDPR_DDOS_FLUSH_BANS;
		else if (!strcmp(argv[0], "hosts"))
			what = XDPR_DDOS_FLUSH_HOSTS;
		else
			return fail(EXIT_USAGE, "expected \"bans\" or \"hosts\", not \"%s\"", argv[0]);
	}
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	n = xdpr_ddos_flush(&x, what);
	if (n < 0) {
		ret = fail(EXIT_FAIL, "%s", x.err);
	} else {
		out_obj_open(NULL);
		out_u64("removed", "entries removed: %llu\n", n);
		out_obj_close();
		out_flush_doc();
	}
	xdpr_close(&x);
	return ret;
}

static int ddos_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ddos_usage();
	return EXIT_OK;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} ddos_cmds[] = {
	{ "on", ddos_on },       { "off", ddos_off },     { "protect", ddos_protect },
	{ "show", ddos_show },   { "list", ddos_show },   { "ban", ddos_ban },
	{ "unban", ddos_unban }, { "flush", ddos_flush }, { "help", ddos_help },
};

int do_ddos(int argc, char **argv)
{
	if (argc < 1)
		return ddos_show(0, argv);
	for (size_t i = 0; i < sizeof(ddos_cmds) / sizeof(ddos_cmds[0]); i++)
		if (!strcmp(argv[0], ddos_cmds[i].name))
			return ddos_cmds[i].fn(argc - 1, argv + 1);
	return fail(EXIT_USAGE, "unknown ddos command \"%s\" (on, off, protect, show, ban, unban, flush)", argv[0]);
}

/* ---- xdpr top ---- */

struct top_snap {
	struct xdpr_ddos_host *h;
	size_t n, cap;
};

static int host_cmp(const void *a, const void *b)
{
	const struct xdpr_ddos_host *x = a, *y = b;

	if (x->dir != y->dir)
		return x->dir - y->dir;
	if (x->family != y->family)
		return x->family - y->family;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

static int snap_add(const struct xdpr_ddos_host *h, void *arg)
{
	struct top_snap *s = arg;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		struct xdpr_ddos_host *n = realloc(s->h, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->h = n;
		s->cap = cap;
	}
	s->h[s->n++] = *h;
	return 0;
}

struct top_row {
	const struct xdpr_ddos_host *h;
	double pps, bps;
};

static int by_bps;

static int row_cmp(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;
	double u = by_bps ? x->bps : x->pps, v = by_bps ? y->bps : y->pps;

	return u < v ? 1 : u > v ? -1 : host_cmp(x->h, y->h);
}

static volatile sig_atomic_t top_stop;

static void on_top_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

/* Rates of cur against prev over secs, the top n of each direction printed. */
static void top_print(const struct top_snap *prev, const struct top_snap *cur, double secs, unsigned long n,
		      struct top_row *rows)
{
	size_t nr = 0;
	char s[INET6_ADDRSTRLEN];

	for (size_t i = 0; i < cur->n; i++) {
		const struct xdpr_ddos_host *c = &cur->h[i];
		const struct xdpr_ddos_host *p = bsearch(c, prev->h, prev->n, sizeof(*c), host_cmp);
		__u64 dp = c->packets, db = c->bytes;

		if (p && p->packets <= c->packets && p->bytes <= c->bytes) {
			dp -= p->packets;
			db -= p->bytes;
		}
		if (!dp)
			continue;
		rows[nr].h = c;
		rows[nr].pps = dp / secs;
		rows[nr].bps = db * 8.0 / secs;
		nr++;
	}
	qsort(rows, nr, sizeof(*rows), row_cmp);
	if (!out_is_json() && isatty(STDOUT_FILENO))
		out_text("\033[H\033[2J");
	out_obj_open(NULL);
	out_text("top talkers by %s", by_bps ? "bit rate" : "packet rate");
	out_str("by", NULL, by_bps ? "bps" : "pps");
	out_double("interval", " over %.1f s\n", secs);
	for (int dir = XDPR_DDOS_TO; dir <= XDPR_DDOS_FROM; dir++) {
		unsigned long shown = 0;

		out_text("%s\n  %-39s %12s %10s %14s %14s\n",
			 dir == XDPR_DDOS_TO ? "to protected hosts:" : "from sources:", "ADDRESS", "PPS",
			 "MBIT/S", "PACKETS", "BYTES");
		out_arr_open(dir == XDPR_DDOS_TO ? "to" : "from");
		for (size_t i = 0; i < nr && shown < n; i++) {
			const struct xdpr_ddos_host *h = rows[i].h;

			if (h->dir != dir)
				continue;
			shown++;
			out_obj_open(NULL);
			out_str("family", NULL, h->family == AF_INET6 ? "ipv6" : "ipv4");
			out_str("addr", "  %-39s ", addr_text(h->family, h->addr, s, sizeof(s)));
			out_double("pps", "%12.0f ", rows[i].pps);
			out_double("bps", NULL, rows[i].bps);
			out_text("%10.1f ", rows[i].bps / 1e6);
			out_u64("packets", "%14llu ", h->packets);
			out_u64("bytes", "%14llu\n", h->bytes);
			out_obj_close();
		}
		if (!shown)
			out_text("  (none)\n");
		out_arr_close();
	}
	out_obj_close();
	out_flush_doc();
	fflush(stdout);
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int snap_take(struct xdpr *x, struct top_snap *s)
{
	int err;

	s->n = 0;
	err = xdpr_ddos_host_foreach(x, snap_add, s);
	if (err == -ENOMEM)
		snprintf(x->err, sizeof(x->err), "cannot read DDoS meters: %s", strerror(ENOMEM));
	if (!err)
		qsort(s->h, s->n, sizeof(*s->h), host_cmp);
	return err;
}

int do_top(int argc, char **argv)
{
	static struct xdpr x;
	struct top_snap a = {}, b = {}, *prev = &a, *cur = &b, *t;
	unsigned long n = 10, interval = 1, count = 0, done = 0;
	struct sigaction sa = { .sa_handler = on_top_signal };
	struct top_row *rows = NULL, *nrows;
	__u64 t0, t1;
	int ret;

	for (int i = 0; i < argc; i += 2) {
		const char *kw = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(kw, "help")) {
			ddos_usage();
			return EXIT_OK;
		}
		if (!val)
			return fail(EXIT_USAGE, "\"%s\" needs a value", kw);
		if (!strcmp(kw, "n")) {
			if (parse_uint(val, 1, 100000, &n))
				return fail(EXIT_USAGE, "invalid n \"%s\" (1 to 100000 hosts)", val);
		} else if (!strcmp(kw, "interval")) {
			if (parse_uint(val, 1, 3600, &interval))
				return fail(EXIT_USAGE, "invalid interval \"%s\" (seconds, 1 to 3600)", val);
		} else if (!strcmp(kw, "count")) {
			if (parse_uint(val, 1, 1000000000, &count))
				return fail(EXIT_USAGE, "invalid count \"%s\"", val);
		} else if (!strcmp(kw, "by")) {
			if (strcmp(val, "pps") && strcmp(val, "bps"))
				return fail(EXIT_USAGE, "expected \"by pps\" or \"by bps\", not \"by %s\"", val);
			by_bps = !strcmp(val, "bps");
		} else {
			return fail(EXIT_USAGE, "unknown top argument \"%s\"", kw);
		}
	}
	if ((ret = open_router(&x, 0)))
		return ret;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	t0 = mono_ns();
	if (snap_take(&x, prev))
		goto err;
	while (!top_stop && (!count || done < count)) {
		struct timespec left = { .tv_sec = interval };

		while (!top_stop && nanosleep(&left, &left) && errno == EINTR)
			;
		if (top_stop)
			break;
		t1 = mono_ns();
		if (snap_take(&x, cur))
			goto err;
		nrows = realloc(rows, (cur->n ? cur->n : 1) * sizeof(*rows));
		if (!nrows) {
			snprintf(x.err, sizeof(x.err), "cannot rank hosts: %s", strerror(ENOMEM));
			goto err;
		}
		rows = nrows;
		top_print(prev, cur, (t1 - t0) / 1e9, n, rows);
		done++;
		t = prev;
		prev = cur;
		cur = t;
		t0 = t1;
	}
	ret = EXIT_OK;
	goto out;
err:
	ret = fail(EXIT_FAIL, "%s", x.err);
out:
	free(a.h);
	free(b.h);
	free(rows);
	xdpr_close(&x);
	return ret;
}
