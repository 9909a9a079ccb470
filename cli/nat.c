// SPDX-License-Identifier: GPL-2.0
/* nat.c - xdpr nat { add | replace | del | show | sessions | flush | gc | timeout | limit }. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "cli.h"
#include "out.h"
#include "npt.h"

static void nat_usage(void)
{
	fprintf(stderr,
		"Usage: xdpr nat add out DEV masquerade [src PREFIX] [ports LO-HI] [filter {apdf|eif}]\n"
		"       xdpr nat add out DEV [src PREFIX] to ADDR[-ADDR] [ports LO-HI] [filter {apdf|eif}]\n"
		"       xdpr nat replace out DEV ...   (same words as add; matched by DEV and src)\n"
		"       xdpr nat del out DEV [src PREFIX]\n"
		"       xdpr nat add in DEV [proto {tcp|udp}] [addr ADDR] dport P[-P] to ADDR[:P[-P]]\n"
		"       xdpr nat del in DEV [proto {tcp|udp}] [addr ADDR] dport P[-P]\n"
		"       xdpr nat add npt DEV inside PREFIX outside PREFIX   (NPTv6, DEV the outside interface)\n"
		"       xdpr nat del npt DEV [inside PREFIX]\n"
		"       xdpr nat add binat DEV inside PREFIX outside PREFIX   (1:1, same length)\n"
		"       xdpr nat del binat DEV [inside PREFIX]\n"
		"       xdpr nat show\n"
		"       xdpr nat sessions [src ADDR] [proto {tcp|udp|icmp}]\n"
		"       xdpr nat flush [sessions]\n"
		"       xdpr nat gc\n"
		"       xdpr nat timeout [tcp-est SECS] [tcp-trans SECS] [udp SECS] [icmp SECS] [holddown SECS]\n"
		"       xdpr nat limit [host N] [sessions N]\n");
}

#define USAGE(...) (snprintf(err, len, __VA_ARGS__), EXIT_USAGE)

int parse_prefix4(const char *s, __be32 *net, __be32 *mask, char *err, size_t len)
{
	char buf[32], *slash;
	unsigned long plen = 32;
	struct in_addr a;

	if (!s || strlen(s) >= sizeof(buf))
		return USAGE("invalid prefix \"%s\"", s ? s : "");
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash) {
		*slash = 0;
		if (parse_uint(slash + 1, 0, 32, &plen))
			return USAGE("invalid prefix length in \"%s\"", s);
	}
	if (inet_pton(AF_INET, buf, &a) != 1)
		return USAGE("invalid IPv4 prefix \"%s\"", s);
	*mask = plen ? htonl(~0U << (32 - plen)) : 0;
	if (a.s_addr & ~*mask)
		return USAGE("host bits set in \"%s\"", s);
	*net = a.s_addr;
	return 0;
}

int parse_nat_rule(int argc, char **argv, struct nat_rule_args *a, char *err, size_t len)
{
	unsigned long lo, hi;

	memset(a, 0, sizeof(*a));
	a->r.port_min = 1024;
	a->r.port_max = 65535;
	if (argc < 2 || strcmp(argv[0], "out"))
		return USAGE("expected \"out DEV\"");
	a->dev = argv[1];
	if (!*a->dev || strlen(a->dev) >= IF_NAMESIZE)
		return USAGE("invalid device name \"%s\"", a->dev);
	for (int i = 2; i < argc; i++) {
		static const char *const once[] = { "masquerade", "src", "to", "ports", "filter" };
		const char *kw = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		for (int k = 0; k < (int)(sizeof(once) / sizeof(once[0])); k++)
			if (!strcmp(kw, once[k])) {
				for (int j = 2; j < i; j++)
					if (!strcmp(argv[j], kw))
						return USAGE("\"%s\" given twice", kw);
			}
		if (!strcmp(kw, "masquerade")) {
			a->r.flags |= XDPR_NAT_MASQ;
			continue;
		}
		if (!val)
			return USAGE("\"%s\" needs a value", kw);
		i++;
		if (!strcmp(kw, "src")) {
			if (parse_prefix4(val, &a->r.src_net, &a->r.src_mask, err, len))
				return EXIT_USAGE;
		} else if (!strcmp(kw, "to")) {
			char buf[40], *dash;
			struct in_addr first, last;

			snprintf(buf, sizeof(buf), "%s", val);
			dash = strchr(buf, '-');
			if (dash)
				*dash++ = 0;
			if (inet_pton(AF_INET, buf, &first) != 1 ||
			    inet_pton(AF_INET, dash ? dash : buf, &last) != 1)
				return USAGE("invalid address range \"%s\"", val);
			if (ntohl(last.s_addr) < ntohl(first.s_addr) ||
			    ntohl(last.s_addr) - ntohl(first.s_addr) >= 65536)
				return USAGE("invalid address range \"%s\" (first <= last, at most 65536)", val);
			a->r.pool_first = first.s_addr;
			a->r.pool_count = ntohl(last.s_addr) - ntohl(first.s_addr) + 1;
		} else if (!strcmp(kw, "ports")) {
			char buf[16], *dash;

			snprintf(buf, sizeof(buf), "%s", val);
			dash = strchr(buf, '-');
			if (dash)
				*dash++ = 0;
			if (parse_uint(buf, 1, 65535, &lo) || parse_uint(dash ? dash : buf, 1, 65535, &hi) ||
			    hi < lo)
				return USAGE("invalid port range \"%s\" (LO-HI within 1-65535)", val);
			a->r.port_min = lo;
			a->r.port_max = hi;
		} else if (!strcmp(kw, "filter")) {
			if (!strcmp(val, "eif"))
				a->r.flags |= XDPR_NAT_EIF;
			else if (strcmp(val, "apdf"))
				return USAGE("unknown filter \"%s\" (expected apdf or eif)", val);
		} else {
			return USAGE("unknown NAT rule word \"%s\"", kw);
		}
	}
	if (!(a->r.flags & XDPR_NAT_MASQ) == !a->r.pool_count)
		return USAGE("a rule needs exactly one of \"masquerade\" and \"to ADDR[-ADDR]\"");
	return 0;
}

static char *ip4(__be32 a, char *buf)
{
	inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
	return buf;
}

/* "P" or "P-Q" within 1-65535. */
static int parse_ports(const char *s, unsigned long *lo, unsigned long *hi)
{
	char buf[16], *dash;

	if (!s || strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	dash = strchr(buf, '-');
	if (dash)
		*dash++ = 0;
	if (parse_uint(buf, 1, 65535, lo) || parse_uint(dash ? dash : buf, 1, 65535, hi) || *hi < *lo)
		return -1;
	return 0;
}

int parse_nat_fwd(int argc, char **argv, struct nat_rule_args *a, bool del, char *err, size_t len)
{
	unsigned long lo = 0, hi = 0, tlo = 0, thi = 0;
	bool have_to = false;

	memset(a, 0, sizeof(*a));
	if (argc < 2 || strcmp(argv[0], "in"))
		return USAGE("expected \"in DEV\"");
	a->dev = argv[1];
	if (!*a->dev || strlen(a->dev) >= IF_NAMESIZE)
		return USAGE("invalid device name \"%s\"", a->dev);
	for (int i = 2; i < argc; i++) {
		const char *kw = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		struct in_addr in;

		for (int j = 2; j < i; j += 2)
			if (!strcmp(argv[j], kw))
				return USAGE("\"%s\" given twice", kw);
		if (strcmp(kw, "proto") && strcmp(kw, "addr") && strcmp(kw, "dport") && (del || strcmp(kw, "to")))
			return USAGE("unknown forward word \"%s\"", kw);
		if (!val)
			return USAGE("\"%s\" needs a value", kw);
		i++;
		if (!strcmp(kw, "proto")) {
			if (!strcmp(val, "tcp"))
				a->r.fwd_proto = IPPROTO_TCP;
			else if (!strcmp(val, "udp"))
				a->r.fwd_proto = IPPROTO_UDP;
			else
				return USAGE("a forward's proto is tcp or udp, not \"%s\"", val);
		} else if (!strcmp(kw, "addr")) {
			if (inet_pton(AF_INET, val, &in) != 1)
				return USAGE("invalid IPv4 address \"%s\"", val);
			a->r.pool_first = in.s_addr;
			a->addr_zero = !in.s_addr;
		} else if (!strcmp(kw, "dport")) {
			if (parse_ports(val, &lo, &hi))
				return USAGE("invalid port range \"%s\" (P or LO-HI within 1-65535)", val);
		} else {
			char buf[48], *colon;

			snprintf(buf, sizeof(buf), "%s", val);
			colon = strchr(buf, ':');
			if (colon)
				*colon++ = 0;
			if (strlen(val) >= sizeof(buf) || inet_pton(AF_INET, buf, &in) != 1)
				return USAGE("invalid inside address \"%s\" (ADDR[:P[-P]])", val);
			if (colon && parse_ports(colon, &tlo, &thi))
				return USAGE("invalid inside port range \"%s\" (P or LO-HI within 1-65535)", colon);
			a->r.fwd_to = in.s_addr;
			have_to = true;
		}
	}
	if (!lo)
		return USAGE("a forward needs \"dport P[-P]\"");
	if (!del && !have_to)
		return USAGE("a forward needs \"to ADDR[:P[-P]]\"");
	a->r.port_min = lo;
	a->r.port_max = hi;
	if (tlo) {
		if (thi != tlo && thi - tlo != hi - lo)
			return USAGE("inside ports %lu-%lu: a range must be as long as dport %lu-%lu "
				     "(or one port)", tlo, thi, lo, hi);
		a->r.fwd_port = tlo;
		a->r.fwd_one = thi == tlo && hi != lo;
	}
	a->r.flags = XDPR_NAT_FWD;
	return 0;
}

static int nat_fwd(int argc, char **argv, bool del)
{
	static struct xdpr x;
	struct nat_rule_args a;
	char err[256];
	int ret;

	if (parse_nat_fwd(argc, argv, &a, del, err, sizeof(err)))
		return fail(EXIT_USAGE, "%s", err);
	if (a.addr_zero) /* as the loader refuses any other address of 0.0.0.0/8 */
		return fail(EXIT_FAIL, "cannot forward from 0.0.0.0: it is a \"this network\" address (0.0.0.0/8)");
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	if (del)
		ret = xdpr_nat_fwd_del(&x, a.dev, &a.r) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	else
		ret = xdpr_nat_fwd_add(&x, a.dev, &a.r, false) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	if (!ret)
		print_warnings(x.note);
	xdpr_close(&x);
	return ret;
}

static int nat_add(int argc, char **argv, bool replace)
{
	static struct xdpr x;
	struct nat_rule_args a;
	char err[256];
	int ret;

	if (parse_nat_rule(argc, argv, &a, err, sizeof(err))) {
		return fail(EXIT_USAGE, "%s", err);
	}
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	ret = xdpr_nat_add(&x, a.dev, &a.r, replace) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	if (!ret)
		print_warnings(x.note);
	xdpr_close(&x);
	return ret;
}

static int nat_del(int argc, char **argv)
{
	static struct xdpr x;
	__be32 net = 0, mask = 0;
	char err[256];
	int ret;

	if (argc < 2 || strcmp(argv[0], "out") || (argc != 2 && argc != 4) ||
	    (argc == 4 && strcmp(argv[2], "src"))) {
		return fail(EXIT_USAGE, "expected \"del out DEV [src PREFIX]\"");
	}
	if (argc == 4 && parse_prefix4(argv[3], &net, &mask, err, sizeof(err)))
		return fail(EXIT_USAGE, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	ret = xdpr_nat_del(&x, argv[1], net, mask) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

/* Outside ports a rule holds, one line per outside address (not in "xdpr stats"). */
static void print_held(const struct xdpr_held *h, int nh, __u32 rule)
{
	static const char *const proto[] = { [XDPR_HELD_TCP] = "tcp", [XDPR_HELD_UDP] = "udp",
					     [XDPR_HELD_ICMP] = "icmp" };
	static const char *const fmt[] = { [XDPR_HELD_TCP] = "tcp %llu", [XDPR_HELD_UDP] = "udp %llu",
					   [XDPR_HELD_ICMP] = "icmp %llu" };
	char a[INET_ADDRSTRLEN];

	out_arr_open("held");
	for (int i = 0; i < nh; i++) {
		const char *sep = " (";
		__u64 n;

		if (h[i].rule != rule)
			continue;
		out_obj_open(NULL);
		out_str("addr", "  held %s:", ip4(h[i].addr, a));
		n = h[i].ports[0] + h[i].ports[1] + h[i].ports[2];
		out_u64("ports", " %llu", n);
		out_text(n == 1 ? " port" : " ports");
		for (int p = 0; p < 3; p++) {
			if (!out_is_json() && !h[i].ports[p])
				continue;
			out_text("%s", sep);
			out_u64(proto[p], fmt[p], h[i].ports[p]);
			sep = ", ";
		}
		out_text(")");
		out_u64("holddown", ", %llu in hold-down\n", h[i].holddown);
		out_obj_close();
	}
	out_arr_close();
}

/* A forward's line: "in DEV tcp ADDR dport LO-HI to INSIDE:LO-HI". */
static void print_fwd(const struct xdpr_rule_info *ri)
{
	const struct xdpr_nat_rule *r = &ri->r;
	__u32 tlo = r->fwd_port ? r->fwd_port : r->port_min;
	__u32 thi = r->fwd_one ? tlo : tlo + (r->port_max - r->port_min);
	char a[INET_ADDRSTRLEN];

	out_str("dev", "in %s", ri->dev);
	out_str("state", NULL, ri->waiting ? "waiting" : "applied");
	out_str("action", NULL, "forward");
	out_str("proto", " %s", r->fwd_proto == IPPROTO_TCP ? "tcp" : r->fwd_proto == IPPROTO_UDP ? "udp" : "tcp+udp");
	out_str("addr", " %s", ip4(r->pool_first, a));
	out_bool("addr_follows", NULL, r->flags & XDPR_NAT_FWD_IFADDR); /* given no addr: DEV's */
	out_u64("port_min", " dport %llu", r->port_min);
	out_u64("port_max", r->port_max != r->port_min ? "-%llu" : NULL, r->port_max);
	out_str("to", " to %s", ip4(r->fwd_to, a));
	out_u64("to_port_min", ":%llu", tlo);
	out_u64("to_port_max", thi != tlo ? "-%llu" : NULL, thi);
	if (ri->waiting)
		out_text(" (waiting for %s)", ri->dev);
	out_text("\n");
}

/* Rules with their counters; shared with "xdpr stats" (nat section).  0, or -errno before any output. */
int print_nat_rules(struct xdpr *x, bool counters_only)
{
	static struct xdpr_rule_info ri[XDPR_NAT_MAX_RULES];
	int n = xdpr_nat_list(x, ri, XDPR_NAT_MAX_RULES), ncpu = xdpr_ncpus(), nh = 0;
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	struct xdpr_held *held = NULL;

	if (ncpu > XDPR_MAX_CPUS)
		ncpu = XDPR_MAX_CPUS;
	if (!counters_only && n > 0)
		nh = xdpr_nat_held(x, &held);
	if (n < 0 || nh < 0)
		return n < 0 ? n : nh;
	out_arr_open(counters_only ? "nat" : NULL);
	for (int i = 0; i < n; i++) {
		const struct xdpr_nat_rule *r = &ri[i].r;

		out_obj_open(NULL);
		out_u64("id", "nat rule %llu: ", ri[i].id);
		if (r->flags & XDPR_NAT_FWD) {
			print_fwd(&ri[i]);
			goto counters;
		}
		out_str("dev", "out %s", ri[i].dev);
		out_str("state", NULL, ri[i].waiting ? "waiting" : "applied");
		out_text(" src %s/%d", ip4(r->src_net, a), __builtin_popcount(r->src_mask));
		out_str("src", NULL, ip4(r->src_net, a));
		out_u64("src_len", NULL, __builtin_popcount(r->src_mask));
		if (r->flags & XDPR_NAT_MASQ) {
			out_str("action", " %s", "masquerade");
		} else {
			out_str("action", NULL, "pool");
			out_str("pool_first", " to %s", ip4(r->pool_first, a));
			out_str("pool_last", "-%s",
				ip4(htonl(ntohl(r->pool_first) + r->pool_count - 1), b));
		}
		out_u64("port_min", " ports %llu", r->port_min);
		out_u64("port_max", "-%llu", r->port_max);
		out_str("filter", " filter %s", r->flags & XDPR_NAT_EIF ? "eif" : "apdf");
		if (ri[i].waiting) /* gone, or not attached: applied again once it is */
			out_text(" (waiting for %s)", ri[i].dev);
		out_text("\n");
		if (!counters_only)
			print_held(held, nh, ri[i].id);
counters:
		out_obj_open("counters");
		for (int e = 0; e < XDPR_NE_MAX; e++) {
			if (!out_is_json() && !ri[i].ev[e] && opts.detail < 1)
				continue;
			if (opts.detail >= 2) {
				out_obj_open(xdpr_nat_event_name(e));
				out_text("  %-22s", xdpr_nat_event_name(e));
				out_u64("total", " %14llu\n", ri[i].ev[e]);
				out_arr_open("cpus");
				for (int c = 0; c < ncpu; c++) {
					out_obj_open(NULL);
					out_u64("cpu", "    cpu%-17llu", c);
					out_u64("count", " %14llu\n", ri[i].cpu_ev[c][e]);
					out_obj_close();
				}
				out_arr_close();
				out_obj_close();
			} else {
				out_text("  %-22s", xdpr_nat_event_name(e));
				out_u64(xdpr_nat_event_name(e), " %14llu\n", ri[i].ev[e]);
			}
		}
		out_obj_close();
		out_obj_close();
	}
	if ((nh = print_npt_rules(x, counters_only))) /* NPTv6 rules (cli/npt.c) */
		return free(held), nh;
	print_binat_rules(x); /* 1:1 NAT rules (cli/binat.c); none on an older router */
	out_arr_close();
	free(held);
	return 0;
}

/* The tables' size and memory: "memory" in -j, a line of text. */
static int print_nat_mem(struct xdpr *x)
{
	struct xdpr_nat_mem m;

	if (xdpr_nat_mem(x, &m))
		return -1;
	out_obj_open("memory");
	out_u64("sessions", "session table: %llu sessions", m.sessions);
	out_u64("session_halves", " (%llu halves in use)", m.entries);
	out_u64("in_use", NULL, m.in_use);
	out_u64("fixed", NULL, m.fixed);
	out_u64("full", NULL, m.full);
	out_text(", %.1f MiB in use, up to %.1f MiB when full", m.in_use / 1048576.0, m.full / 1048576.0);
	out_bool("frozen", NULL, m.frozen);
	out_text("%s\n", m.frozen ? " (being resized)" : "");
	out_obj_close();
	return 0;
}

static int nat_show(int argc, char **argv)
{
	static struct xdpr x;
	int ret;

	(void)argv;
	if (argc) {
		return fail(EXIT_USAGE, "\"nat show\" takes no arguments");
	}
	if ((ret = open_router(&x, 0)))
		return ret;
	if (!out_is_json() && print_nat_mem(&x)) {
		ret = fail(EXIT_FAIL, "%s", x.err);
		xdpr_close(&x);
		return ret;
	}
	if (print_nat_rules(&x, false)) {
		ret = fail(EXIT_FAIL, "%s", x.err);
		xdpr_close(&x);
		return ret;
	}
	out_flush_doc();
	xdpr_close(&x);
	return EXIT_OK;
}

struct sess_filter {
	__be32 src;
	bool has_src;
	__u8 proto;
	unsigned long count;
};

static const char *proto_name(__u8 p)
{
	return p == IPPROTO_TCP ? "tcp" : p == IPPROTO_UDP ? "udp" : p == IPPROTO_ICMP ? "icmp" : "?";
}

static const char *state_name(__u8 proto, __u8 st)
{
	if (proto != IPPROTO_TCP)
		return (st & XDPR_CT_SEEN_IN) ? "replied" : "new";
	if (st & XDPR_CT_RST)
		return "reset";
	if ((st & XDPR_CT_FIN_OUT) && (st & XDPR_CT_FIN_IN))
		return "closing";
	if (st & (XDPR_CT_FIN_OUT | XDPR_CT_FIN_IN))
		return "fin-wait";
	return (st & XDPR_CT_SEEN_IN) ? "established" : "syn-sent";
}

static int print_session(const struct xdpr_session *s, void *arg)
{
	struct sess_filter *f = arg;
	char a[INET_ADDRSTRLEN], ep[48];
	bool icmp = s->key.proto == IPPROTO_ICMP;

	if ((f->has_src && s->key.saddr != f->src) || (f->proto && s->key.proto != f->proto))
		return 0;
	f->count++;
	out_obj_open(NULL);
	out_str("proto", "%-4s ", proto_name(s->key.proto));
	snprintf(ep, sizeof(ep), "%s:%u", ip4(s->key.saddr, a), ntohs(s->key.sport));
	out_text("%-21s ", ep);
	out_str("inside", NULL, ip4(s->key.saddr, a));
	out_u64(icmp ? "inside_id" : "inside_port", NULL, ntohs(s->key.sport));
	snprintf(ep, sizeof(ep), "%s:%u", ip4(s->out.xaddr, a), ntohs(s->out.xport));
	out_text("%-21s ", ep);
	out_str("outside", NULL, ip4(s->out.xaddr, a));
	out_u64(icmp ? "outside_id" : "outside_port", NULL, ntohs(s->out.xport));
	snprintf(ep, sizeof(ep), icmp ? "%s" : "%s:%u", ip4(s->key.daddr, a), ntohs(s->key.dport));
	out_text("%-21s ", ep);
	out_str("remote", NULL, ip4(s->key.daddr, a));
	if (!icmp)
		out_u64("remote_port", NULL, ntohs(s->key.dport));
	out_str("state", "%-11s ", state_name(s->key.proto, s->state));
	out_u64("idle", "%6llus ", s->idle_ns / 1000000000ULL);
	out_u64("timeout", "%6llus ", s->timeout_ns / 1000000000ULL);
	out_u64("rule", "%4llu", s->out.rule);
	out_bool("paired", NULL, s->has_in);
	out_text("%s\n", s->has_in ? "" : "  (inbound half missing)");
	out_obj_close();
	return 0;
}

static int nat_sessions(int argc, char **argv)
{
	static struct xdpr x;
	struct sess_filter f = {};
	char err[256];
	__be32 mask;
	int ret;

	for (int i = 0; i < argc; i += 2) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val) {
			return fail(EXIT_USAGE, "\"%s\" needs a value", argv[i]);
		}
		if (!strcmp(argv[i], "src")) {
			if (parse_prefix4(val, &f.src, &mask, err, sizeof(err)) || mask != 0xffffffff)
				return fail(EXIT_USAGE, "invalid address \"%s\"", val);
			f.has_src = true;
		} else if (!strcmp(argv[i], "proto")) {
			f.proto = !strcmp(val, "tcp") ? IPPROTO_TCP : !strcmp(val, "udp") ? IPPROTO_UDP
				: !strcmp(val, "icmp") ? IPPROTO_ICMP : 0;
			if (!f.proto)
				return fail(EXIT_USAGE, "unknown protocol \"%s\" (tcp, udp or icmp)", val);
		} else {
			return fail(EXIT_USAGE, "unknown sessions argument \"%s\"", argv[i]);
		}
	}
	if ((ret = open_router(&x, 0)))
		return ret;
	out_arr_open(NULL);
	out_text("%-4s %-21s %-21s %-21s %-11s %7s %7s %4s\n", "PROT", "INSIDE", "OUTSIDE", "REMOTE",
		 "STATE", "IDLE", "TIMEOUT", "RULE");
	ret = xdpr_nat_sessions(&x, print_session, &f);
	out_arr_close();
	out_flush_doc();
	if (ret)
		ret = fail(EXIT_FAIL, "%s", x.err);
	xdpr_close(&x);
	return ret;
}

static void print_gc(const struct xdpr_gc_cmd *r)
{
	out_obj_open(NULL);
	out_u64("sessions_removed", "sessions removed: %llu", r->deleted);
	out_u64("sessions_seen", " of %llu", r->seen);
	out_u64("bindings_freed", ", idle bindings freed: %llu\n", r->binds_freed);
	out_obj_close();
	out_flush_doc();
}

static int nat_flush(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_gc_cmd res = {};
	bool rules = true;
	int ret;

	if (argc == 1 && !strcmp(argv[0], "sessions"))
		rules = false;
	else if (argc) {
		return fail(EXIT_USAGE, "expected \"nat flush [sessions]\"");
	}
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	/* every rule: source NAT and forwards, then 1:1 and NPTv6 */
	if (xdpr_nat_flush(&x, rules, &res) || (rules && (xdpr_binat_flush(&x) || xdpr_npt_flush(&x))))
		ret = fail(EXIT_FAIL, "%s", x.err);
	else
		print_gc(&res);
	xdpr_close(&x);
	return ret;
}

static int nat_gc(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_gc_cmd res = {};
	int ret;

	(void)argv;
	if (argc) {
		return fail(EXIT_USAGE, "\"nat gc\" takes no arguments");
	}
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	if (xdpr_nat_gc(&x, XDPR_GC_EXPIRED, 0, &res))
		ret = fail(EXIT_FAIL, "%s", x.err);
	else
		print_gc(&res);
	xdpr_close(&x);
	return ret;
}

/* timeout and limit: "KEY VALUE ..." pairs onto struct xdpr_cfg fields. */
static const struct {
	const char *cmd, *word;
	size_t off;
	unsigned long min, max;
} knobs[] = {
	{ "timeout", "tcp-est",   offsetof(struct xdpr_cfg, tcp_est),   1, 7 * 86400 },
	{ "timeout", "tcp-trans", offsetof(struct xdpr_cfg, tcp_trans), 1, 7 * 86400 },
	{ "timeout", "udp",       offsetof(struct xdpr_cfg, udp),       1, 7 * 86400 },
	{ "timeout", "icmp",      offsetof(struct xdpr_cfg, icmp),      1, 7 * 86400 },
	{ "timeout", "holddown",  offsetof(struct xdpr_cfg, holddown),  0, 86400 },
	{ "limit",   "host",      offsetof(struct xdpr_cfg, host_limit), 1, XDPR_NAT_MAX_SESS },
	{ "limit",   "sessions",  offsetof(struct xdpr_cfg, nat_sess), XDPR_NAT_MIN_SESS, XDPR_NAT_MAX_SESS },
};

int parse_knobs(const char *cmd, int argc, char **argv, struct xdpr_cfg *c, char *err, size_t len)
{
	unsigned long v;

	if (argc % 2)
		return USAGE("\"%s\" needs a value", argv[argc - 1]);
	for (int i = 0; i < argc; i += 2) {
		size_t k;

		for (k = 0; k < sizeof(knobs) / sizeof(knobs[0]); k++)
			if (!strcmp(knobs[k].cmd, cmd) && !strcmp(knobs[k].word, argv[i]))
				break;
		if (k == sizeof(knobs) / sizeof(knobs[0]))
			return USAGE("unknown %s \"%s\"", cmd, argv[i]);
		for (int j = 0; j < i; j += 2)
			if (!strcmp(argv[j], argv[i]))
				return USAGE("\"%s\" given twice", argv[i]);
		if (parse_uint(argv[i + 1], knobs[k].min, knobs[k].max, &v))
			return USAGE("invalid %s \"%s\" (%lu to %lu)", argv[i], argv[i + 1], knobs[k].min,
				     knobs[k].max);
		*(__u32 *)((char *)c + knobs[k].off) = v;
	}
	return 0;
}

static int nat_knobs(const char *cmd, int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_cfg c, want = {};
	struct xdpr_nat_resize rs;
	bool resized = false;
	char err[256];
	int ret;

	/* words and values first: a usage error never depends on the router */
	if (parse_knobs(cmd, argc, argv, &want, err, sizeof(err))) {
		return fail(EXIT_USAGE, "%s", err);
	}
	if ((ret = open_router(&x, argc ? XDPR_O_LOCK : 0)))
		return ret;
	ret = EXIT_FAIL;
	if (xdpr_cfg_get(&x, &c))
		goto out;
	want = c;
	if (parse_knobs(cmd, argc, argv, &want, err, sizeof(err))) {
		ret = fail(EXIT_USAGE, "%s", err);
		goto done;
	}
	if (want.nat_sess != c.nat_sess) {
		/* new tables: they rewrite the configuration, the other words go on top */
		if (xdpr_nat_resize(&x, want.nat_sess, &rs))
			goto out;
		resized = true;
		if (xdpr_cfg_get(&x, &want))
			goto out;
		parse_knobs(cmd, argc, argv, &want, err, sizeof(err));
	}
	if (argc && xdpr_cfg_set(&x, &want))
		goto out;
	out_obj_open(NULL);
	for (size_t k = 0; k < sizeof(knobs) / sizeof(knobs[0]); k++) {
		if (strcmp(knobs[k].cmd, cmd))
			continue;
		out_text("%-10s", knobs[k].word);
		out_u64(knobs[k].word, " %llu\n", *(__u32 *)((char *)&want + knobs[k].off));
	}
	if (!strcmp(cmd, "limit") && print_nat_mem(&x))
		goto out;
	if (resized) {
		out_obj_open("resized");
		out_u64("from", "resized    from %llu", rs.old_sessions);
		out_u64("to", " to %llu sessions", rs.sessions);
		out_u64("sessions_moved", ", %llu sessions moved", rs.copied[XDPR_NT_CT] / 2);
		out_u64("bindings_moved", ", %llu bindings", rs.copied[XDPR_NT_BIND]);
		out_u64("frozen_ms", "; new sessions waited %llu ms\n", rs.frozen_ns / 1000000);
		out_obj_close();
	}
	out_obj_close();
	out_flush_doc();
	ret = EXIT_OK;
	goto done;
out:
	ret = fail(EXIT_FAIL, "%s", x.err);
done:
	xdpr_close(&x);
	return ret;
}

int do_nat(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "binat") &&
	    (!strcmp(argv[0], "add") || !strcmp(argv[0], "del") || !strcmp(argv[0], "delete")))
		return do_binat(argv[0], argc - 2, argv + 2); /* 1:1 NAT: cli/binat.c */
	if (argc < 1 || !strcmp(argv[0], "show") || !strcmp(argv[0], "list"))
		return nat_show(argc ? argc - 1 : 0, argv + (argc ? 1 : 0));
	if (!strcmp(argv[0], "add") && argc > 1 && !strcmp(argv[1], "in"))
		return nat_fwd(argc - 1, argv + 1, false);
	if ((!strcmp(argv[0], "del") || !strcmp(argv[0], "delete")) && argc > 1 && !strcmp(argv[1], "in"))
		return nat_fwd(argc - 1, argv + 1, true);
	if ((!strcmp(argv[0], "add") || !strcmp(argv[0], "del") || !strcmp(argv[0], "delete")) && argc > 1 &&
	    !strcmp(argv[1], "npt"))
		return npt_cmd(argv[0], argc - 1, argv + 1); /* NPTv6 (cli/npt.c) */
	if (!strcmp(argv[0], "add"))
		return nat_add(argc - 1, argv + 1, false);
	if (!strcmp(argv[0], "replace"))
		return nat_add(argc - 1, argv + 1, true);
	if (!strcmp(argv[0], "del") || !strcmp(argv[0], "delete"))
		return nat_del(argc - 1, argv + 1);
	if (!strcmp(argv[0], "sessions"))
		return nat_sessions(argc - 1, argv + 1);
	if (!strcmp(argv[0], "flush"))
		return nat_flush(argc - 1, argv + 1);
	if (!strcmp(argv[0], "gc"))
		return nat_gc(argc - 1, argv + 1);
	if (!strcmp(argv[0], "timeout") || !strcmp(argv[0], "limit"))
		return nat_knobs(argv[0], argc - 1, argv + 1);
	if (!strcmp(argv[0], "help")) {
		nat_usage();
		return EXIT_OK;
	}
	return fail(EXIT_USAGE, "unknown nat command \"%s\"", argv[0]);
}
