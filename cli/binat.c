// SPDX-License-Identifier: GPL-2.0
/*
 * binat.c - xdpr nat { add | del } binat ...: 1:1 NAT rules (loader/binat.c),
 * and their lines in "nat show" and "stats" (print_binat_rules).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "cli.h"
#include "out.h"

#define USAGE(...) (snprintf(err, len, __VA_ARGS__), EXIT_USAGE)

int parse_binat(int argc, char **argv, struct binat_args *a, bool del, char *err, size_t len)
{
	__be32 imask = 0, omask = 0;
	bool in_given = false, out_given = false;

	memset(a, 0, sizeof(*a));
	a->plen = -1;
	if (argc < 1 || !*argv[0] || strlen(argv[0]) >= IF_NAMESIZE)
		return del ? USAGE("expected \"del binat DEV [inside PREFIX]\"")
			   : USAGE("expected \"add binat DEV inside PREFIX outside PREFIX\"");
	a->dev = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *kw = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		bool in = !strcmp(kw, "inside");

		if (!in && (del || strcmp(kw, "outside")))
			return USAGE("unknown 1:1 NAT word \"%s\" (expected %s)", kw,
				     del ? "inside PREFIX" : "inside PREFIX outside PREFIX");
		if (in ? in_given : out_given)
			return USAGE("\"%s\" given twice", kw);
		if (!val)
			return USAGE("\"%s\" needs a prefix", kw);
		if (parse_prefix4(val, in ? &a->in_net : &a->out_net, in ? &imask : &omask, err, len))
			return EXIT_USAGE;
		*(in ? &in_given : &out_given) = true;
		i++;
	}
	if (del) {
		if (in_given)
			a->plen = __builtin_popcount(imask);
		return 0;
	}
	if (!in_given || !out_given)
		return USAGE("a 1:1 rule needs \"inside PREFIX\" and \"outside PREFIX\"");
	if (imask != omask)
		return USAGE("inside /%d and outside /%d differ in length: 1:1 NAT maps prefixes of one length",
			     __builtin_popcount(imask), __builtin_popcount(omask));
	if (!imask)
		return USAGE("a /0 prefix is every address: 1:1 NAT maps /1 to /32");
	a->plen = __builtin_popcount(imask);
	return 0;
}

int do_binat(const char *cmd, int argc, char **argv)
{
	static struct xdpr x;
	bool del = strcmp(cmd, "add") != 0;
	struct binat_args a;
	char err[256];
	int ret;

	if (parse_binat(argc, argv, &a, del, err, sizeof(err)))
		return fail(EXIT_USAGE, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	if (del)
		ret = xdpr_binat_del(&x, a.dev, a.in_net, a.plen);
	else
		ret = xdpr_binat_add(&x, a.dev, a.in_net, a.out_net, a.plen);
	ret = ret ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

void fmt_binat(const struct xdpr_binat_rule *r, char *buf, size_t len)
{
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &r->in_net, a, sizeof(a));
	inet_ntop(AF_INET, &r->out_net, b, sizeof(b));
	snprintf(buf, len, "binat %.16s inside %s/%u outside %s/%u", r->ifname, a, r->plen, b, r->plen);
}

/* In the array print_nat_rules opened: one object per rule, "kind": "binat". */
int print_binat_rules(struct xdpr *x)
{
	static struct xdpr_binat_info bi[XDPR_BINAT_MAX];
	int n = xdpr_binat_list(x, bi, XDPR_BINAT_MAX), ncpu = xdpr_ncpus();
	char a[INET_ADDRSTRLEN];

	if (ncpu > XDPR_MAX_CPUS)
		ncpu = XDPR_MAX_CPUS;
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		const struct xdpr_binat_rule *r = &bi[i].r;

		out_obj_open(NULL);
		out_str("kind", NULL, "binat");
		out_u64("id", "binat rule %llu: ", r->id);
		out_str("dev", "out %s", r->ifname);
		out_str("state", NULL, bi[i].gone ? "waiting" : "applied");
		out_str("inside", " inside %s", inet_ntop(AF_INET, &r->in_net, a, sizeof(a)));
		out_u64("len", "/%llu", r->plen);
		out_str("outside", " outside %s", inet_ntop(AF_INET, &r->out_net, a, sizeof(a)));
		out_text("/%u", r->plen);
		if (bi[i].gone)
			out_text(" (%s is not attached: its inside sources are dropped)", r->ifname);
		out_text("\n");
		out_obj_open("counters");
		for (int e = 0; e < XDPR_BE_MAX; e++) {
			const char *name = xdpr_binat_event_name(e);

			if (opts.detail >= 2) {
				out_obj_open(name);
				out_text("  %-22s", name);
				out_u64("total", " %14llu\n", bi[i].ev[e]);
				out_arr_open("cpus");
				for (int c = 0; c < ncpu; c++) {
					out_obj_open(NULL);
					out_u64("cpu", "    cpu%-17llu", c);
					out_u64("count", " %14llu\n", bi[i].cpu_ev[c][e]);
					out_obj_close();
				}
				out_arr_close();
				out_obj_close();
			} else {
				out_text("  %-22s", name);
				out_u64(name, " %14llu\n", bi[i].ev[e]);
			}
		}
		out_obj_close();
		out_obj_close();
	}
	return 0;
}

/* ---- configuration files (cli/conf.c): save, restore, xdprd ---- */
#include "conf.h"

int conf_add_binat(struct conf *c, int argc, char **argv, size_t line, char *err, size_t len)
{
	struct conf_binat *b;
	struct binat_args a;

	if (parse_binat(argc, argv, &a, false, err, len))
		return EXIT_USAGE;
	for (int k = 0; k < c->nbinat; k++)
		if (!strcmp(c->binat[k].r.ifname, a.dev) && c->binat[k].r.in_net == a.in_net &&
		    c->binat[k].r.plen == (__u32)a.plen)
			return USAGE("a 1:1 rule for %s with this inside prefix is already on line %zu", a.dev,
				     c->binat[k].line);
	if (c->nbinat >= XDPR_BINAT_MAX - 1)
		return snprintf(err, len, "at most %d 1:1 NAT rules", XDPR_BINAT_MAX - 1), EXIT_FAIL;
	b = &c->binat[c->nbinat++];
	memset(b, 0, sizeof(*b));
	snprintf(b->r.ifname, sizeof(b->r.ifname), "%s", a.dev);
	b->r.in_net = a.in_net;
	b->r.out_net = a.out_net;
	b->r.plen = a.plen;
	b->line = line;
	return 0;
}

int conf_read_binat(struct xdpr *x, struct conf *c)
{
	static struct xdpr_binat_info bi[XDPR_BINAT_MAX];
	int n = xdpr_binat_list(x, bi, XDPR_BINAT_MAX);

	if (n < 0) {
		snprintf(x->err, sizeof(x->err), "cannot list the 1:1 NAT rules: %s", strerror(-n));
		return n;
	}
	c->nbinat = 0;
	for (int i = 0; i < n; i++) {
		c->binat[c->nbinat].r = bi[i].r;
		c->binat[c->nbinat++].line = 0;
	}
	return 0;
}

void conf_print_binat(FILE *f, const struct conf *c)
{
	char buf[128];

	for (int i = 0; i < c->nbinat; i++) {
		fmt_binat(&c->binat[i].r, buf, sizeof(buf));
		fprintf(f, "nat add %s\n", buf);
	}
}

static const struct conf_binat *binat_in(const struct conf *c, const struct xdpr_binat_rule *r)
{
	for (int i = 0; i < c->nbinat; i++)
		if (!strncmp(c->binat[i].r.ifname, r->ifname, IF_NAMESIZE) && c->binat[i].r.in_net == r->in_net &&
		    c->binat[i].r.out_net == r->out_net && c->binat[i].r.plen == r->plen)
			return &c->binat[i];
	return NULL;
}

int conf_change_binat(struct xdpr *x, const struct conf *want, const struct conf *have, bool add,
		      struct conf_diff *d, char *err, size_t len)
{
	const struct conf *from = add ? want : have, *other = add ? have : want;

	for (int i = 0; i < from->nbinat; i++) {
		const struct xdpr_binat_rule *r = &from->binat[i].r;
		char buf[128];

		if (binat_in(other, r))
			continue;
		if (add ? xdpr_binat_add(x, r->ifname, r->in_net, r->out_net, r->plen)
			: xdpr_binat_del(x, r->ifname, r->in_net, r->plen)) {
			fmt_binat(r, buf, sizeof(buf));
			if (add && from->binat[i].line)
				return snprintf(err, len, "%sline %zu: %s", want->name, from->binat[i].line, x->err),
				       EXIT_FAIL;
			return snprintf(err, len, "nat %s %s: %s", add ? "add" : "del", buf, x->err), EXIT_FAIL;
		}
		*(add ? &d->nat_added : &d->nat_deleted) += 1;
	}
	return 0;
}
