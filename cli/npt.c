// SPDX-License-Identifier: GPL-2.0
/*
 * npt.c - xdpr nat { add | del } npt DEV ...: NPTv6 (RFC 6296) rules,
 * and their objects in "nat show" and "xdpr stats" (xdpr save: cli/conf.c).
 *
 *   nat add npt DEV inside PREFIX outside PREFIX
 *   nat del npt DEV [inside PREFIX]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "cli.h"
#include "out.h"
#include "npt.h"

#define USAGE(...) (snprintf(err, len, __VA_ARGS__), EXIT_USAGE)

/* An IPv6 prefix ADDR/LEN (LEN required). */
static int parse_prefix6(const char *s, __u8 *a, unsigned int *plen, char *err, size_t len)
{
	char buf[64], *slash;
	unsigned long l;

	if (!s || strlen(s) >= sizeof(buf))
		return USAGE("invalid IPv6 prefix \"%s\"", s ? s : "");
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (!slash)
		return USAGE("\"%s\" needs a prefix length (ADDR/LEN)", s);
	*slash = 0;
	if (parse_uint(slash + 1, 0, 128, &l))
		return USAGE("invalid prefix length in \"%s\"", s);
	if (inet_pton(AF_INET6, buf, a) != 1)
		return USAGE("invalid IPv6 prefix \"%s\"", s);
	*plen = l;
	return 0;
}

int parse_npt_rule(int argc, char **argv, struct npt_args *a, char *err, size_t len)
{
	__u8 in[16], out[16];
	unsigned int il, ol;
	int r;

	memset(a, 0, sizeof(*a));
	if (argc != 6 || strcmp(argv[0], "npt") || strcmp(argv[2], "inside") || strcmp(argv[4], "outside"))
		return USAGE("expected \"add npt DEV inside PREFIX outside PREFIX\"");
	a->dev = argv[1];
	if (!*a->dev || strlen(a->dev) >= IF_NAMESIZE)
		return USAGE("invalid device name \"%s\"", a->dev);
	if ((r = parse_prefix6(argv[3], in, &il, err, len)) || (r = parse_prefix6(argv[5], out, &ol, err, len)))
		return r;
	if (xdpr_npt_make(&a->r, in, il, out, ol, err, len))
		return EXIT_USAGE;
	return 0;
}

static int npt_add(int argc, char **argv)
{
	static struct xdpr x;
	struct npt_args a;
	char err[256];
	int ret;

	if (parse_npt_rule(argc, argv, &a, err, sizeof(err)))
		return fail(EXIT_USAGE, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	ret = xdpr_npt_add(&x, a.dev, &a.r) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

static int npt_del(int argc, char **argv)
{
	static struct xdpr x;
	__u8 in[16];
	unsigned int plen = 0;
	char err[256];
	int ret;

	if ((argc != 2 && argc != 4) || strcmp(argv[0], "npt") || (argc == 4 && strcmp(argv[2], "inside")))
		return fail(EXIT_USAGE, "expected \"del npt DEV [inside PREFIX]\"");
	if (argc == 4 && parse_prefix6(argv[3], in, &plen, err, sizeof(err)))
		return fail(EXIT_USAGE, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	ret = xdpr_npt_del(&x, argv[1], argc == 4 ? in : NULL, plen) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

int npt_cmd(const char *verb, int argc, char **argv)
{
	if (argc < 1 || strcmp(argv[0], "npt"))
		return -1;
	if (!strcmp(verb, "add"))
		return npt_add(argc, argv);
	if (!strcmp(verb, "del") || !strcmp(verb, "delete"))
		return npt_del(argc, argv);
	return -1;
}

static void pfx_text(const __u8 *a, unsigned int plen, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, a, s, sizeof(s));
	snprintf(buf, len, "%s/%u", s, plen);
}

static const struct {
	const char *name;
	size_t off;
} ctr[] = {
	{ "translated_out", offsetof(struct xdpr_npt_ctr, out) },
	{ "translated_in",  offsetof(struct xdpr_npt_ctr, in) },
	{ "icmp_errors",    offsetof(struct xdpr_npt_ctr, icmp) },
	{ "passed_out",     offsetof(struct xdpr_npt_ctr, pass) },
	{ "dropped",        offsetof(struct xdpr_npt_ctr, drop) },
};

static __u64 ctr_at(const struct xdpr_npt_ctr *c, int k)
{
	return *(const __u64 *)((const char *)c + ctr[k].off);
}

/* Inside the array print_nat_rules has open: one object per NPTv6 rule. */
int print_npt_rules(struct xdpr *x, bool counters_only)
{
	static struct xdpr_npt_info ri[XDPR_NPT_MAX];
	int n = xdpr_npt_list(x, ri, XDPR_NPT_MAX), ncpu = xdpr_ncpus();
	char a[64], b[64];

	(void)counters_only;
	if (n < 0)
		return n == -ENOENT ? 0 : n; /* a router without the tables has no such rules */
	if (ncpu > XDPR_MAX_CPUS)
		ncpu = XDPR_MAX_CPUS;
	for (int i = 0; i < n; i++) {
		pfx_text(ri[i].inside, ri[i].r.plen, a, sizeof(a));
		pfx_text(ri[i].outside, ri[i].r.plen, b, sizeof(b));
		out_obj_open(NULL);
		out_str("kind", "%s ", "npt");
		out_u64("id", "rule %llu: ", ri[i].index);
		out_str("dev", "dev %s", ri[i].dev);
		out_str("state", NULL, ri[i].attached ? "applied" : "detached");
		out_str("inside", " inside %s", a);
		out_str("outside", " outside %s", b);
		out_u64("prefix_len", NULL, ri[i].r.plen);
		out_u64("adjustment_word", NULL, ri[i].r.word);
		out_text(" (adjustment 0x%04x %s)", ri[i].r.adj_out,
			 ri[i].r.word == 3 ? "at bits 48-63" : "at the identifier's first word not 0xffff");
		out_u64("adjustment", NULL, ri[i].r.adj_out);
		if (!ri[i].attached)
			out_text(" (%s is not attached)", ri[i].dev);
		out_text("\n");
		out_obj_open("counters");
		for (int k = 0; k < (int)(sizeof(ctr) / sizeof(ctr[0])); k++) {
			__u64 v = ctr_at(&ri[i].c, k);

			if (!out_is_json() && !v && opts.detail < 1)
				continue;
			if (opts.detail >= 2) {
				out_obj_open(ctr[k].name);
				out_text("  %-22s", ctr[k].name);
				out_u64("total", " %14llu\n", v);
				out_arr_open("cpus");
				for (int c = 0; c < ncpu; c++) {
					out_obj_open(NULL);
					out_u64("cpu", "    cpu%-17llu", c);
					out_u64("count", " %14llu\n", ctr_at(&ri[i].cpu[c], k));
					out_obj_close();
				}
				out_arr_close();
				out_obj_close();
			} else {
				out_text("  %-22s", ctr[k].name);
				out_u64(ctr[k].name, " %14llu\n", v);
			}
		}
		out_obj_close();
		out_obj_close();
	}
	return 0;
}
