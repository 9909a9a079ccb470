// SPDX-License-Identifier: GPL-2.0
/* route.c - xdpr route { add | replace | del | flush | show | load }. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "cli.h"
#include "out.h"

static void route_usage(void)
{
	fprintf(stderr,
		"Usage: xdpr route add PREFIX { blackhole | pass | via GW dev DEV [via GW dev DEV ...] }\n"
		"       xdpr route replace PREFIX ...\n"
		"       xdpr route del PREFIX\n"
		"       xdpr route flush\n"
		"       xdpr route show [PREFIX]\n"
		"       xdpr route load FILE     (one route per line, the words after \"route add\"; # comments)\n");
}

#define USAGE(...) (snprintf(err, len, __VA_ARGS__), EXIT_USAGE)

/* "2001:db8::/32" or "192.0.2.0/24": family, address, length; host bits refused. */
int parse_prefix(const char *s, struct xdpr_route_spec *rs, char *err, size_t len)
{
	char buf[64], *slash;
	unsigned long plen;
	int max;

	if (!s || strlen(s) >= sizeof(buf))
		return USAGE("invalid prefix \"%s\"", s ? s : "");
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	memset(rs->addr, 0, sizeof(rs->addr));
	if (inet_pton(AF_INET, buf, rs->addr) == 1)
		rs->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, rs->addr) == 1)
		rs->family = AF_INET6;
	else
		return USAGE("invalid prefix \"%s\"", s);
	max = rs->family == AF_INET ? 32 : 128;
	plen = max;
	if (slash && parse_uint(slash + 1, 0, max, &plen))
		return USAGE("invalid prefix length in \"%s\"", s);
	rs->plen = plen;
	for (int b = plen; b < max; b++)
		if (rs->addr[b / 8] & (0x80 >> (b % 8)))
			return USAGE("host bits set in \"%s\"", s);
	return 0;
}

/*
 * PREFIX { blackhole | pass | via GW dev DEV ... }.  Devices are resolved
 * here (ifindex in this namespace): an unknown one is a usage error only in
 * the sense of the words; the caller reports it as the runtime error it is.
 */
int parse_route(int argc, char **argv, struct xdpr_route_spec *rs, char *err, size_t len)
{
	memset(rs, 0, sizeof(*rs));
	if (argc < 2)
		return USAGE("a route needs a prefix and an action");
	if (parse_prefix(argv[0], rs, err, len))
		return EXIT_USAGE;
	if (!strcmp(argv[1], "blackhole") || !strcmp(argv[1], "pass")) {
		if (argc != 2)
			return USAGE("unexpected \"%s\" after \"%s\"", argv[2], argv[1]);
		rs->r.action = argv[1][0] == 'b' ? XDPR_RT_BLACKHOLE : XDPR_RT_PASS;
		return 0;
	}
	rs->r.action = XDPR_RT_VIA;
	for (int i = 1; i < argc; i += 4) {
		struct xdpr_nh *nh;
		__u8 gw[16] = {};

		if (strcmp(argv[i], "via"))
			return USAGE("unknown route word \"%s\" (expected blackhole, pass or via)", argv[i]);
		if (i + 3 >= argc || strcmp(argv[i + 2], "dev"))
			return USAGE("\"via\" needs \"GW dev DEV\"");
		if (inet_pton(rs->family, argv[i + 1], gw) != 1)
			return USAGE("invalid gateway \"%s\" for an %s route", argv[i + 1],
				     rs->family == AF_INET ? "IPv4" : "IPv6");
		if (rs->r.nnh >= XDPR_RT_MAX_NH)
			return USAGE("at most %d next hops", XDPR_RT_MAX_NH);
		if (!*argv[i + 3] || strlen(argv[i + 3]) >= IF_NAMESIZE)
			return USAGE("invalid device name \"%s\"", argv[i + 3]);
		nh = &rs->r.nh[rs->r.nnh++];
		memcpy(nh->gw, gw, sizeof(gw));
		nh->ifindex = if_nametoindex(argv[i + 3]);
		if (!nh->ifindex)
			return snprintf(err, len, "cannot find device \"%s\"", argv[i + 3]), EXIT_FAIL;
	}
	return 0;
}

static int route_add(int argc, char **argv, bool replace)
{
	static struct xdpr x;
	struct xdpr_route_spec rs;
	char err[256];
	int ret;

	ret = parse_route(argc, argv, &rs, err, sizeof(err));
	if (ret)
		return fail(ret, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	ret = xdpr_route_add(&x, &rs, replace) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

static int route_del(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_route_spec rs = {};
	char err[256];
	int ret;

	if (argc != 1)
		return fail(EXIT_USAGE, "expected \"route del PREFIX\"");
	if (parse_prefix(argv[0], &rs, err, sizeof(err)))
		return fail(EXIT_USAGE, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	ret = xdpr_route_del(&x, &rs) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

/* Order for finding duplicate prefixes in a load file. */
static const struct xdpr_route_spec *sort_base;

static int cmp_prefix(const void *a, const void *b)
{
	const struct xdpr_route_spec *x = &sort_base[*(const size_t *)a], *y = &sort_base[*(const size_t *)b];

	if (x->family != y->family)
		return x->family - y->family;
	if (x->plen != y->plen)
		return x->plen < y->plen ? -1 : 1;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

/* Split a line into words in place; returns the count (at most max). */
static int split_words(char *line, char **w, int max)
{
	int n = 0;

	for (char *t = strtok(line, " \t\r\n"); t && n < max; t = strtok(NULL, " \t\r\n"))
		w[n++] = t;
	return n;
}

static int route_load(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_route_spec *rs = NULL;
	size_t cap = 0, n = 0, lineno = 0, *lines = NULL, *order = NULL;
	char *line = NULL, err[256];
	size_t lcap = 0;
	int ret = EXIT_OK;
	FILE *f;

	if (argc != 1)
		return fail(EXIT_USAGE, "expected \"route load FILE\"");
	f = !strcmp(argv[0], "-") ? stdin : fopen(argv[0], "r");
	if (!f)
		return fail(EXIT_FAIL, "cannot open \"%s\": %s", argv[0], strerror(errno));
	/* the whole file is checked before anything is applied */
	while (getline(&line, &lcap, f) >= 0) {
		char *w[4 + 4 * XDPR_RT_MAX_NH], *hash = strchr(line, '#');
		int nw;

		lineno++;
		if (hash)
			*hash = 0;
		nw = split_words(line, w, sizeof(w) / sizeof(w[0]));
		if (!nw)
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 4096;
			struct xdpr_route_spec *m = realloc(rs, ncap * sizeof(*rs));
			size_t *l = m ? realloc(lines, ncap * sizeof(*lines)) : NULL;

			if (m)
				rs = m;
			if (l)
				lines = l;
			if (!m || !l) {
				ret = fail(EXIT_FAIL, "out of memory at line %zu", lineno);
				goto out;
			}
			cap = ncap;
		}
		ret = parse_route(nw, w, &rs[n], err, sizeof(err));
		if (ret) {
			ret = fail(ret, "%s line %zu: %s (nothing applied)", argv[0], lineno, err);
			goto out;
		}
		lines[n++] = lineno;
	}
	if (ferror(f)) {
		ret = fail(EXIT_FAIL, "cannot read \"%s\": %s", argv[0], strerror(errno));
		goto out;
	}
	/* a prefix listed twice: report the later line */
	order = malloc((n ? n : 1) * sizeof(*order));
	if (!order) {
		ret = fail(EXIT_FAIL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	sort_base = rs;
	qsort(order, n, sizeof(*order), cmp_prefix);
	for (size_t i = 1; i < n; i++)
		if (!cmp_prefix(&order[i - 1], &order[i])) {
			size_t a = order[i - 1], b = order[i], first = lines[a] < lines[b] ? a : b;
			char p[INET6_ADDRSTRLEN];

			inet_ntop(rs[a].family, rs[a].addr, p, sizeof(p));
			ret = fail(EXIT_FAIL, "%s line %zu: route %s/%u is already on line %zu (nothing applied)",
				   argv[0], lines[first == a ? b : a], p, rs[a].plen, lines[first]);
			goto out;
		}
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		goto out;
	for (size_t i = 0; i < n && !ret; i++)
		if (xdpr_route_check(&x, &rs[i]))
			ret = fail(EXIT_FAIL, "%s line %zu: %s (nothing applied)", argv[0], lines[i], x.err);
	if (!ret && xdpr_route_load(&x, rs, n))
		ret = fail(EXIT_FAIL, "%s: %s (nothing applied)", argv[0], x.err);
	if (!ret) {
		out_obj_open(NULL);
		out_u64("loaded", "%llu routes loaded\n", n);
		out_obj_close();
		out_flush_doc();
	}
	xdpr_close(&x);
out:
	free(line);
	free(rs);
	free(lines);
	free(order);
	if (f != stdin)
		fclose(f);
	return ret;
}

struct show_ctx {
	struct xdpr_route_spec want;
	bool filter;
	int ncpu;
	unsigned long count;
};

static int show_route(const struct xdpr_route_info *ri, void *arg)
{
	struct show_ctx *sc = arg;
	const struct xdpr_route_spec *s = &ri->spec;
	char a[INET6_ADDRSTRLEN], pfx[INET6_ADDRSTRLEN + 8], dev[IF_NAMESIZE];

	if (sc->filter && (s->family != sc->want.family || s->plen != sc->want.plen ||
			   memcmp(s->addr, sc->want.addr, 16)))
		return 0;
	sc->count++;
	inet_ntop(s->family, s->addr, a, sizeof(a));
	snprintf(pfx, sizeof(pfx), "%s/%u", a, s->plen);
	out_obj_open(NULL);
	out_str("prefix", "%s", pfx);
	out_str("action", " %s", s->r.action == XDPR_RT_BLACKHOLE ? "blackhole"
				 : s->r.action == XDPR_RT_PASS ? "pass" : "via");
	if (s->r.action == XDPR_RT_VIA) {
		out_arr_open("nexthops");
		for (int i = 0; i < s->r.nnh && i < XDPR_RT_MAX_NH; i++) {
			inet_ntop(s->family, s->r.nh[i].gw, a, sizeof(a));
			if (!if_indextoname(s->r.nh[i].ifindex, dev))
				snprintf(dev, sizeof(dev), "if%u", s->r.nh[i].ifindex);
			out_obj_open(NULL);
			out_str("gateway", i ? " via %s" : " %s", a);
			out_str("dev", " dev %s", dev);
			if (s->r.nh[i].flags & XDPR_NH_MAC) { /* kept by the route (IPv6 link-local) */
				const __u8 *m = s->r.nh[i].mac;
				char mac[18];

				snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
					 m[3], m[4], m[5]);
				out_str("mac", opts.detail ? " lladdr %s" : NULL, mac);
			}
			out_obj_close();
		}
		out_arr_close();
	}
	out_u64("packets", "  packets %llu", ri->sum.packets);
	out_u64("bytes", " bytes %llu\n", ri->sum.bytes);
	if (opts.detail >= 2) {
		out_arr_open("cpus");
		for (int c = 0; c < sc->ncpu && c < XDPR_MAX_CPUS; c++) {
			out_obj_open(NULL);
			out_u64("cpu", "    cpu%-4llu", c);
			out_u64("packets", " packets %llu", ri->cpu[c].packets);
			out_u64("bytes", " bytes %llu\n", ri->cpu[c].bytes);
			out_obj_close();
		}
		out_arr_close();
	}
	out_obj_close();
	return 0;
}

static int route_show(int argc, char **argv)
{
	static struct xdpr x;
	struct show_ctx sc = { .ncpu = xdpr_ncpus() };
	char err[256];
	int ret;

	if (argc > 1)
		return fail(EXIT_USAGE, "\"route show\" takes at most one prefix");
	if (argc == 1) {
		if (parse_prefix(argv[0], &sc.want, err, sizeof(err)))
			return fail(EXIT_USAGE, "%s", err);
		sc.filter = true;
	}
	if ((ret = open_router(&x, 0)))
		return ret;
	out_arr_open(NULL);
	ret = xdpr_route_foreach(&x, sc.filter ? &sc.want : NULL, show_route, &sc);
	out_arr_close();
	out_flush_doc();
	if (ret)
		ret = fail(EXIT_FAIL, "%s", x.err);
	else if (sc.filter && !sc.count)
		ret = fail(EXIT_FAIL, "no route %s", argv[0]);
	xdpr_close(&x);
	return ret;
}

int do_route(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "show") || !strcmp(argv[0], "list"))
		return route_show(argc ? argc - 1 : 0, argv + (argc ? 1 : 0));
	if (!strcmp(argv[0], "add"))
		return route_add(argc - 1, argv + 1, false);
	if (!strcmp(argv[0], "replace"))
		return route_add(argc - 1, argv + 1, true);
	if (!strcmp(argv[0], "del") || !strcmp(argv[0], "delete"))
		return route_del(argc - 1, argv + 1);
	if (!strcmp(argv[0], "load"))
		return route_load(argc - 1, argv + 1);
	if (!strcmp(argv[0], "flush")) {
		static struct xdpr x;
		int ret;

		if (argc != 1)
			return fail(EXIT_USAGE, "\"route flush\" takes no arguments");
		if ((ret = open_router(&x, XDPR_O_LOCK)))
			return ret;
		ret = xdpr_route_load(&x, NULL, 0) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
		xdpr_close(&x);
		return ret;
	}
	if (!strcmp(argv[0], "help")) {
		route_usage();
		return EXIT_OK;
	}
	return fail(EXIT_USAGE, "unknown route command \"%s\"", argv[0]);
}
