// SPDX-License-Identifier: GPL-2.0
/*
 * filter.c - xdpr filter { show | add | insert | delete | flows | flush | policy | load }
 *            and xdpr set { show | add | delete | flush }.
 *
 * Commands are found by prefix in a table (the first one the word starts,
 * in table order: "d" is delete), like bpftool's.  A rule is parsed here into
 * the library's struct xdpr_flt_spec and printed back from it in one
 * canonical order: what "filter show" prints is what "filter load" reads.
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

static const char *const state_names[XDPR_FS_MAX] = {
	[XDPR_FS_NEW] = "new", [XDPR_FS_ESTABLISHED] = "established",
	[XDPR_FS_RELATED] = "related", [XDPR_FS_INVALID] = "invalid",
};

static const char *action_name(int a)
{
	return a == XDPR_FLT_ACCEPT ? "accept" : a == XDPR_FLT_DROP ? "drop"
	       : a == XDPR_FLT_REJECT ? "reject" : "?";
}

static int action_of(const char *w)
{
	return !strcmp(w, "accept") ? XDPR_FLT_ACCEPT : !strcmp(w, "drop") ? XDPR_FLT_DROP
	       : !strcmp(w, "reject") ? XDPR_FLT_REJECT : 0;
}

static const struct {
	const char *name;
	__u8 num;
} protos[] = {
	{ "tcp", IPPROTO_TCP }, { "udp", IPPROTO_UDP }, { "icmp", IPPROTO_ICMP },
	{ "icmpv6", IPPROTO_ICMPV6 },
};

static void proto_str(__u8 p, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (protos[i].num == p) {
			snprintf(buf, len, "%s", protos[i].name);
			return;
		}
	snprintf(buf, len, "%u", p);
}

/* Set names: 1-31 of [A-Za-z0-9_.-]. */
bool set_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= XDPR_SET_NAMESZ)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* PREFIX or @SET (src, dst). */
static int parse_addr(const char *kw, const char *s, struct xdpr_flt_addr *a, char *err, size_t len)
{
	struct xdpr_route_spec rs;

	memset(a, 0, sizeof(*a));
	if (s[0] == '@') {
		if (!set_name_ok(s + 1))
			return USAGE("invalid set name \"%s\" (1-%d of A-Z a-z 0-9 _ . -)", s,
				     XDPR_SET_NAMESZ - 1);
		a->kind = XDPR_FA_SET;
		snprintf(a->set, sizeof(a->set), "%s", s + 1);
		return 0;
	}
	if (parse_prefix(s, &rs, err, len))
		return EXIT_USAGE;
	(void)kw;
	a->kind = XDPR_FA_PREFIX;
	a->family = rs.family;
	a->plen = rs.plen;
	memcpy(a->addr, rs.addr, 16);
	return 0;
}

/* PORT or LO-HI within 0-65535. */
static int parse_range(const char *kw, const char *s, __u16 r[2], char *err, size_t len)
{
	char buf[16], *dash;
	unsigned long lo, hi;

	if (strlen(s) >= sizeof(buf))
		return USAGE("invalid %s \"%s\" (PORT or LO-HI within 0-65535)", kw, s);
	strcpy(buf, s);
	dash = strchr(buf, '-');
	if (dash)
		*dash++ = 0;
	if (parse_uint(buf, 0, 65535, &lo) || parse_uint(dash ? dash : buf, 0, 65535, &hi))
		return USAGE("invalid %s \"%s\" (PORT or LO-HI within 0-65535)", kw, s);
	if (lo > hi)
		return USAGE("invalid %s \"%s\" (low port above high)", kw, s);
	r[0] = lo;
	r[1] = hi;
	return 0;
}

static int parse_states(const char *s, __u8 *out, char *err, size_t len)
{
	char buf[64], *save = NULL;

	if (strlen(s) >= sizeof(buf) || !*s || s[0] == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,"))
		return USAGE("invalid state \"%s\" (STATE[,STATE...])", s);
	strcpy(buf, s);
	*out = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < XDPR_FS_MAX && strcmp(t, state_names[k]); k++)
			;
		if (k == XDPR_FS_MAX)
			return USAGE("unknown state \"%s\" (expected new, established, related or invalid)", t);
		*out |= 1u << k;
	}
	return 0;
}

static const char *family_name(int f)
{
	return f == AF_INET ? "IPv4" : "IPv6";
}

/*
 * The words after "filter add": [in DEV] [out DEV] [src A] [dst A] [proto P]
 * [sport R] [dport R] [icmp-type N] [icmp-code N] [state S,...], in any
 * order, then the action.  0 or EXIT_USAGE with the message in err.
 */
int parse_filter_rule(int argc, char **argv, struct xdpr_flt_spec *r, char *err, size_t len)
{
	static const char *const words[] = { "in", "out", "src", "dst", "proto", "sport", "dport",
					      "icmp-type", "icmp-code", "state" };
	char src_s[64] = "", dst_s[64] = "";
	unsigned int seen = 0;
	unsigned long v;
	int fam = 0;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < argc; i++) {
		const char *kw = argv[i], *val;
		size_t k;

		if (action_of(kw)) {
			if (i != argc - 1)
				return USAGE("unexpected \"%s\" after \"%s\"", argv[i + 1], kw);
			r->action = action_of(kw);
			break;
		}
		for (k = 0; k < sizeof(words) / sizeof(words[0]) && strcmp(kw, words[k]); k++)
			;
		if (k == sizeof(words) / sizeof(words[0]))
			return USAGE("unknown filter word \"%s\"", kw);
		if (seen & (1u << k))
			return USAGE("\"%s\" given twice", kw);
		seen |= 1u << k;
		if (i + 1 >= argc || action_of(argv[i + 1]))
			return USAGE("\"%s\" needs a value", kw);
		val = argv[++i];
		switch (k) {
		case 0: case 1: {
			char *dev = k ? r->out : r->in;

			if (!*val || strlen(val) >= IF_NAMESIZE || strchr(val, '/') || strchr(val, ' '))
				return USAGE("invalid device name \"%s\"", val);
			strcpy(dev, val);
			break;
		}
		case 2:
			if (parse_addr(kw, val, &r->src, err, len))
				return EXIT_USAGE;
			snprintf(src_s, sizeof(src_s), "%s", val);
			break;
		case 3:
			if (parse_addr(kw, val, &r->dst, err, len))
				return EXIT_USAGE;
			snprintf(dst_s, sizeof(dst_s), "%s", val);
			break;
		case 4: {
			size_t p;

			for (p = 0; p < sizeof(protos) / sizeof(protos[0]) && strcmp(val, protos[p].name); p++)
				;
			if (p < sizeof(protos) / sizeof(protos[0]))
				v = protos[p].num;
			else if (parse_uint(val, 0, 255, &v))
				return USAGE("unknown protocol \"%s\" (expected tcp, udp, icmp, icmpv6 or 0-255)",
					     val);
			r->proto = v;
			r->has |= XDPR_FH_PROTO;
			break;
		}
		case 5:
			if (parse_range(kw, val, r->sport, err, len))
				return EXIT_USAGE;
			r->has |= XDPR_FH_SPORT;
			break;
		case 6:
			if (parse_range(kw, val, r->dport, err, len))
				return EXIT_USAGE;
			r->has |= XDPR_FH_DPORT;
			break;
		case 7: case 8:
			if (parse_uint(val, 0, 255, &v))
				return USAGE("invalid %s \"%s\" (0-255)", kw, val);
			if (k == 7)
				r->icmp_type = v;
			else
				r->icmp_code = v;
			r->has |= k == 7 ? XDPR_FH_ICMP_TYPE : XDPR_FH_ICMP_CODE;
			break;
		case 9:
			if (parse_states(val, &r->states, err, len))
				return EXIT_USAGE;
			r->has |= XDPR_FH_STATE;
			break;
		}
	}
	if (!r->action)
		return USAGE("a rule ends with its action: accept, drop or reject");
	/* the words together */
	if ((r->has & (XDPR_FH_SPORT | XDPR_FH_DPORT)) &&
	    (!(r->has & XDPR_FH_PROTO) || (r->proto != IPPROTO_TCP && r->proto != IPPROTO_UDP)))
		return USAGE("\"%s\" needs proto tcp or udp", r->has & XDPR_FH_SPORT ? "sport" : "dport");
	if ((r->has & (XDPR_FH_ICMP_TYPE | XDPR_FH_ICMP_CODE)) &&
	    (!(r->has & XDPR_FH_PROTO) || (r->proto != IPPROTO_ICMP && r->proto != IPPROTO_ICMPV6)))
		return USAGE("\"%s\" needs proto icmp or icmpv6",
			     r->has & XDPR_FH_ICMP_TYPE ? "icmp-type" : "icmp-code");
	if (r->src.kind == XDPR_FA_PREFIX && r->dst.kind == XDPR_FA_PREFIX &&
	    r->src.family != r->dst.family)
		return USAGE("src \"%s\" and dst \"%s\" are of different families", src_s, dst_s);
	if (r->src.kind == XDPR_FA_PREFIX)
		fam = r->src.family;
	else if (r->dst.kind == XDPR_FA_PREFIX)
		fam = r->dst.family;
	if (fam && (r->has & XDPR_FH_PROTO) &&
	    ((r->proto == IPPROTO_ICMP && fam == AF_INET6) || (r->proto == IPPROTO_ICMPV6 && fam == AF_INET)))
		return USAGE("%s prefix \"%s\" with proto %s (use %s)", family_name(fam),
			     r->src.kind == XDPR_FA_PREFIX ? src_s : dst_s,
			     r->proto == IPPROTO_ICMP ? "icmp" : "icmpv6",
			     r->proto == IPPROTO_ICMP ? "icmpv6" : "icmp");
	return 0;
}

static void fmt_addr(const struct xdpr_flt_addr *a, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN];

	if (a->kind == XDPR_FA_SET) {
		snprintf(buf, len, "@%s", a->set);
		return;
	}
	inet_ntop(a->family, a->addr, s, sizeof(s));
	snprintf(buf, len, "%s/%u", s, a->plen);
}

static void fmt_range(const __u16 r[2], char *buf, size_t len)
{
	if (r[0] == r[1])
		snprintf(buf, len, "%u", r[0]);
	else
		snprintf(buf, len, "%u-%u", r[0], r[1]);
}

static void fmt_states(__u8 st, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int k = 0; k < XDPR_FS_MAX && used < len; k++)
		if (st & (1u << k))
			used += snprintf(buf + used, len - used, "%s%s", used ? "," : "", state_names[k]);
}

/* The rule in canonical words (what parse_filter_rule reads back to the same rule). */
void fmt_filter_rule(const struct xdpr_flt_spec *r, char *buf, size_t len)
{
	char v[96];
	size_t used = 0;

#define WORD(...) (used < len ? (used += snprintf(buf + used, len - used, __VA_ARGS__)) : 0)
	buf[0] = 0;
	if (r->in[0])
		WORD("in %s ", r->in);
	if (r->out[0])
		WORD("out %s ", r->out);
	if (r->src.kind) {
		fmt_addr(&r->src, v, sizeof(v));
		WORD("src %s ", v);
	}
	if (r->dst.kind) {
		fmt_addr(&r->dst, v, sizeof(v));
		WORD("dst %s ", v);
	}
	if (r->has & XDPR_FH_PROTO) {
		proto_str(r->proto, v, sizeof(v));
		WORD("proto %s ", v);
	}
	if (r->has & XDPR_FH_SPORT) {
		fmt_range(r->sport, v, sizeof(v));
		WORD("sport %s ", v);
	}
	if (r->has & XDPR_FH_DPORT) {
		fmt_range(r->dport, v, sizeof(v));
		WORD("dport %s ", v);
	}
	if (r->has & XDPR_FH_ICMP_TYPE)
		WORD("icmp-type %u ", r->icmp_type);
	if (r->has & XDPR_FH_ICMP_CODE)
		WORD("icmp-code %u ", r->icmp_code);
	if (r->has & XDPR_FH_STATE) {
		fmt_states(r->states, v, sizeof(v));
		WORD("state %s ", v);
	}
	WORD("%s", action_name(r->action));
#undef WORD
}

/* Split a line into words in place; returns the count (at most max). */
static int split_words(char *line, char **w, int max)
{
	int n = 0;
	char *save = NULL;

	for (char *t = strtok_r(line, " \t\r\n", &save); t && n < max; t = strtok_r(NULL, " \t\r\n", &save))
		w[n++] = t;
	return n;
}

int parse_filter_file(FILE *f, struct xdpr_flt_spec **out, size_t **lines, size_t *n,
		      size_t *errline, char *err, size_t len)
{
	struct xdpr_flt_spec *r = NULL;
	size_t cap = 0, lineno = 0, *ln = NULL, lcap = 0;
	char *line = NULL;
	int ret = 0;

	*n = 0;
	*errline = 0;
	while (getline(&line, &lcap, f) >= 0) {
		char *w[64], *hash = strchr(line, '#');
		int nw;

		lineno++;
		if (hash)
			*hash = 0;
		nw = split_words(line, w, sizeof(w) / sizeof(w[0]));
		if (!nw)
			continue;
		if (nw == (int)(sizeof(w) / sizeof(w[0]))) {
			ret = USAGE("too many words");
			break;
		}
		if (*n == XDPR_FLT_MAX_RULES) {
			snprintf(err, len, "the filter holds at most %d rules", XDPR_FLT_MAX_RULES);
			ret = EXIT_FAIL;
			break;
		}
		if (*n == cap) {
			size_t ncap = cap ? 2 * cap : 1024;
			struct xdpr_flt_spec *m = realloc(r, ncap * sizeof(*r));
			size_t *l = m ? realloc(ln, ncap * sizeof(*ln)) : NULL;

			if (m)
				r = m;
			if (l)
				ln = l;
			if (!m || !l) {
				snprintf(err, len, "out of memory");
				ret = EXIT_FAIL;
				break;
			}
			cap = ncap;
		}
		ret = parse_filter_rule(nw, w, &r[*n], err, len);
		if (ret)
			break;
		ln[(*n)++] = lineno;
	}
	if (!ret && ferror(f)) {
		snprintf(err, len, "cannot read the rules: %s", strerror(errno));
		ret = EXIT_FAIL;
	}
	free(line);
	if (ret) {
		*errline = lineno;
		free(r);
		free(ln);
		*n = 0;
		return ret;
	}
	*out = r;
	*lines = ln;
	return 0;
}

/* A set member: a prefix (host bits zero), either family. */
int parse_member(const char *s, struct xdpr_flt_member *m, char *err, size_t len)
{
	struct xdpr_route_spec rs;

	if (parse_prefix(s, &rs, err, len))
		return EXIT_USAGE;
	memset(m, 0, sizeof(*m));
	m->family = rs.family;
	m->plen = rs.plen;
	memcpy(m->addr, rs.addr, 16);
	return 0;
}

/* ---- commands ---- */

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
};

/* The command argv[0] begins (first in table order), or the first (show) without one. */
static int dispatch(const char *obj, const struct cmd *cmds, size_t n, int argc, char **argv)
{
	if (argc < 1)
		return cmds[0].fn(0, argv);
	for (size_t i = 0; *argv[0] && i < n; i++)
		if (!strncmp(argv[0], cmds[i].name, strlen(argv[0])))
			return cmds[i].fn(argc - 1, argv + 1);
	return fail(EXIT_USAGE, "unknown %s command \"%s\"", obj, argv[0]);
}

static int done(struct xdpr *x, int err)
{
	int ret = err ? fail(EXIT_FAIL, "%s", x->err) : EXIT_OK;

	if (!err)
		print_warnings(x->note);
	xdpr_close(x);
	return ret;
}

static int filter_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr,
		"Usage: xdpr filter add RULE\n"
		"       xdpr filter insert N RULE      (becomes rule N; N = count+1 appends)\n"
		"       xdpr filter del N\n"
		"       xdpr filter flush              (every rule; the policy stays)\n"
		"       xdpr filter policy { accept | drop }\n"
		"       xdpr filter load { FILE | - }  (one RULE a line; # comments; all or nothing)\n"
		"       xdpr filter show\n"
		"       xdpr filter flows [flush]     (flow states of accepted flows; flush: delete them all)\n"
		"RULE := [in DEV] [out DEV] [src ADDR] [dst ADDR] [proto PROTO]\n"
		"        [sport PORT[-PORT]] [dport PORT[-PORT]] [icmp-type N] [icmp-code N]\n"
		"        [state STATE[,STATE...]] { accept | drop | reject }\n"
		"ADDR  := { PREFIX | @SET }\n"
		"PROTO := { tcp | udp | icmp | icmpv6 | 0-255 }\n"
		"STATE := { new | established | related | invalid }\n");
	return EXIT_OK;
}

static int filter_insert_at(int argc, char **argv, size_t pos)
{
	static struct xdpr x;
	struct xdpr_flt_spec r;
	char err[256];
	int ret;

	ret = parse_filter_rule(argc, argv, &r, err, sizeof(err));
	if (ret)
		return fail(ret, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	return done(&x, xdpr_flt_insert(&x, &r, pos));
}

static int filter_add(int argc, char **argv)
{
	return filter_insert_at(argc, argv, XDPR_FLT_APPEND);
}

static int filter_insert(int argc, char **argv)
{
	unsigned long n;

	if (argc < 1 || parse_uint(argv[0], 1, XDPR_FLT_MAX_RULES, &n))
		return fail(EXIT_USAGE, "\"filter insert\" needs a rule number (1-%d) before the rule",
			    XDPR_FLT_MAX_RULES);
	return filter_insert_at(argc - 1, argv + 1, n - 1);
}

static int filter_del(int argc, char **argv)
{
	static struct xdpr x;
	unsigned long n;
	int ret;

	if (argc != 1 || parse_uint(argv[0], 1, XDPR_FLT_MAX_RULES, &n))
		return fail(EXIT_USAGE, "expected \"filter del N\" (a rule number, 1-%d)", XDPR_FLT_MAX_RULES);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	return done(&x, xdpr_flt_del(&x, n - 1));
}

static int filter_flush(int argc, char **argv)
{
	static struct xdpr x;
	int ret;

	(void)argv;
	if (argc)
		return fail(EXIT_USAGE, "\"filter flush\" takes no arguments");
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	return done(&x, xdpr_flt_flush(&x));
}

static int filter_policy(int argc, char **argv)
{
	static struct xdpr x;
	int ret, a = argc == 1 ? action_of(argv[0]) : 0;

	if (a != XDPR_FLT_ACCEPT && a != XDPR_FLT_DROP)
		return fail(EXIT_USAGE, "expected \"filter policy { accept | drop }\"");
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	return done(&x, xdpr_flt_policy(&x, a));
}

static int filter_load(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_flt_spec *r = NULL;
	size_t n = 0, *lines = NULL, errline;
	char err[256];
	long bad = -1;
	int ret;
	FILE *f;

	if (argc != 1)
		return fail(EXIT_USAGE, "expected \"filter load { FILE | - }\"");
	f = !strcmp(argv[0], "-") ? stdin : fopen(argv[0], "r");
	if (!f)
		return fail(EXIT_FAIL, "cannot open \"%s\": %s", argv[0], strerror(errno));
	/* the whole file is checked before anything is applied */
	ret = parse_filter_file(f, &r, &lines, &n, &errline, err, sizeof(err));
	if (f != stdin)
		fclose(f);
	if (ret)
		return fail(ret, "line %zu: %s (nothing applied)", errline, err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		goto out;
	if (xdpr_flt_load(&x, r, n, &bad)) {
		if (bad >= 0 && (size_t)bad < n)
			ret = fail(EXIT_FAIL, "line %zu: %s (nothing applied)", lines[bad], x.err);
		else
			ret = fail(EXIT_FAIL, "%s (nothing applied)", x.err);
		xdpr_close(&x);
		goto out;
	}
	print_warnings(x.note);
	out_obj_open(NULL);
	out_u64("loaded", "%llu rules loaded\n", n);
	out_obj_close();
	out_flush_doc();
	xdpr_close(&x);
out:
	free(r);
	free(lines);
	return ret;
}

/* Why a rule naming a device may not do what it says now (NULL: it does). */
static const char *dev_warning(const struct xdpr *x, const struct xdpr_flt_spec *r)
{
	const char *dev[2] = { r->in, r->out };
	const __u32 idx[2] = { r->in_ifindex, r->out_ifindex };

	for (int i = 0; i < 2; i++) {
		__u32 now;

		if (!dev[i][0])
			continue;
		now = if_nametoindex(dev[i]);
		if (!now)
			return "device missing";
		if (now != idx[i])
			return "device re-created: attach it again to apply the rule to it";
	}
	if (r->in[0] && !xdpr_link_find(x, r->in))
		return "xdpr not attached to its in device";
	return NULL;
}

static void print_ctr(const struct xdpr_ctr *v, int ncpu)
{
	struct xdpr_ctr sum = {};

	for (int c = 0; c < ncpu; c++) {
		sum.packets += v[c].packets;
		sum.bytes += v[c].bytes;
	}
	out_u64("packets", "  packets %llu", sum.packets);
	out_u64("bytes", " bytes %llu", sum.bytes);
}

static void print_cpus(const struct xdpr_ctr *v, int ncpu)
{
	if (opts.detail < 2)
		return;
	out_arr_open("cpus");
	for (int c = 0; c < ncpu; c++) {
		out_obj_open(NULL);
		out_u64("cpu", "    cpu%-4llu", c);
		out_u64("packets", " packets %llu", v[c].packets);
		out_u64("bytes", " bytes %llu\n", v[c].bytes);
		out_obj_close();
	}
	out_arr_close();
}

/* The rule's words as JSON members too (text: the canonical line only). */
static void rule_members(const struct xdpr_flt_spec *r)
{
	char v[96];

	if (!out_is_json())
		return;
	out_str("action", NULL, action_name(r->action));
	if (r->in[0])
		out_str("in", NULL, r->in);
	if (r->out[0])
		out_str("out", NULL, r->out);
	if (r->src.kind) {
		fmt_addr(&r->src, v, sizeof(v));
		out_str("src", NULL, v);
	}
	if (r->dst.kind) {
		fmt_addr(&r->dst, v, sizeof(v));
		out_str("dst", NULL, v);
	}
	if (r->has & XDPR_FH_PROTO) {
		proto_str(r->proto, v, sizeof(v));
		out_str("proto", NULL, v);
	}
	if (r->has & XDPR_FH_SPORT) {
		out_u64("sport_min", NULL, r->sport[0]);
		out_u64("sport_max", NULL, r->sport[1]);
	}
	if (r->has & XDPR_FH_DPORT) {
		out_u64("dport_min", NULL, r->dport[0]);
		out_u64("dport_max", NULL, r->dport[1]);
	}
	if (r->has & XDPR_FH_ICMP_TYPE)
		out_u64("icmp_type", NULL, r->icmp_type);
	if (r->has & XDPR_FH_ICMP_CODE)
		out_u64("icmp_code", NULL, r->icmp_code);
	if (r->has & XDPR_FH_STATE) {
		out_arr_open("state");
		for (int k = 0; k < XDPR_FS_MAX; k++)
			if (r->states & (1u << k))
				out_str(NULL, NULL, state_names[k]);
		out_arr_close();
	}
}

static int filter_show(int argc, char **argv)
{
	static struct xdpr x;
	static char text[512];
	struct xdpr_ctr *ctr = NULL;
	struct xdpr_flt_list l;
	__u64 flows = 0, expired = 0, flows_max = 0;
	int ret, ncpu = 0;

	(void)argv;
	if (argc)
		return fail(EXIT_USAGE, "\"filter show\" takes no arguments");
	if ((ret = open_router(&x, 0)))
		return ret;
	if (xdpr_flt_get(&x, &l))
		return done(&x, -1);
	if (xdpr_flt_counters(&x, &ctr, &ncpu) || xdpr_flt_flows(&x, &flows, &expired, &flows_max)) {
		xdpr_flt_list_free(&l);
		free(ctr);
		return done(&x, -1);
	}
	out_obj_open(NULL);
	out_arr_open("rules");
	for (size_t i = 0; i < l.n; i++) {
		const struct xdpr_flt_spec *r = &l.r[i];
		const char *warn = dev_warning(&x, r);

		out_obj_open(NULL);
		out_u64("num", "%llu:", i + 1);
		fmt_filter_rule(r, text, sizeof(text));
		out_str("rule", " %s", text);
		rule_members(r);
		out_u64("id", opts.detail ? "  id %llu" : NULL, r->id);
		print_ctr(ctr + (size_t)r->id * ncpu, ncpu);
		if (warn)
			out_str("warning", "  (%s)", warn);
		out_text("\n");
		print_cpus(ctr + (size_t)r->id * ncpu, ncpu);
		out_obj_close();
	}
	out_arr_close();
	out_str("policy", "policy %s", action_name(l.policy));
	print_ctr(ctr, ncpu);
	out_text("\n");
	if (opts.detail >= 2) {
		out_obj_open("policy_counters");
		print_cpus(ctr, ncpu);
		out_obj_close();
	}
	out_u64("flows", "flows %llu", flows);
	out_u64("flows_max", " of %llu", flows_max);
	out_u64("flows_expired", expired ? " (and %llu expired)" : NULL, expired);
	out_u64("nrules", ", rules %llu", l.n);
	out_u64("rules_max", " of %llu", XDPR_FLT_MAX_RULES);
	out_u64("memory", NULL, l.info.memory);
	out_text(", memory %.1f MiB\n", l.info.memory / 1048576.0);
	if (opts.detail) {
		out_obj_open("slot");
		out_u64("slot", "slot %llu", l.info.slot);
		out_u64("gen", " gen %llu", l.info.gen);
		out_u64("descriptors", ": %llu descriptors", l.info.ndesc);
		out_u64("words", ", %llu words", l.info.nwords);
		out_u64("shape_groups", ", %llu rule shape groups", l.info.ngroups);
		out_u64("rule_bits", " in %llu bits", l.info.nbits);
		out_u64("lpm4", ", %llu IPv4 and", l.info.nlpm4);
		out_u64("lpm6", " %llu IPv6 prefixes", l.info.nlpm6);
		out_u64("ifaces", ", %llu interface entries", l.info.nif);
		out_bool("see_established", ", sees established: %s\n",
			 l.info.flags & XDPR_FLT_SEE_EST);
		out_obj_close();
	}
	out_obj_close();
	out_flush_doc();
	xdpr_flt_list_free(&l);
	free(ctr);
	xdpr_close(&x);
	return EXIT_OK;
}

/* flows [flush]: the flow states accepted flows hold, or delete them all. */
static int filter_flows(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_flt_gc_cmd res = {};
	__u64 live = 0, expired = 0, max = 0;
	bool flush = argc == 1 && !strcmp(argv[0], "flush");
	int ret;

	if (argc && !flush)
		return fail(EXIT_USAGE, "expected \"filter flows [flush]\"");
	if ((ret = open_router(&x, flush ? XDPR_O_LOCK : 0)))
		return ret;
	if (flush ? xdpr_flt_flows_flush(&x, &res) : xdpr_flt_flows(&x, &live, &expired, &max))
		return done(&x, -1);
	out_obj_open(NULL);
	if (flush) {
		out_u64("removed", "flows removed: %llu", res.deleted);
		out_u64("seen", " of %llu\n", res.seen);
	} else {
		out_u64("flows", "flows %llu", live);
		out_u64("expired", " (and %llu expired, reused or swept later)", expired);
		out_u64("flows_max", " of %llu\n", max);
	}
	out_obj_close();
	out_flush_doc();
	return done(&x, 0);
}

int do_filter(int argc, char **argv)
{
	static const struct cmd cmds[] = {
		{ "show", filter_show },     { "list", filter_show },   { "add", filter_add },
		{ "insert", filter_insert }, { "delete", filter_del },  { "flows", filter_flows },
		{ "flush", filter_flush },   { "policy", filter_policy }, { "load", filter_load },
		{ "help", filter_help },
	};

	return dispatch("filter", cmds, sizeof(cmds) / sizeof(cmds[0]), argc, argv);
}

/* ---- sets ---- */

static int set_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr,
		"Usage: xdpr set add NAME PREFIX [PREFIX...]   (creates the set when new)\n"
		"       xdpr set del NAME [PREFIX...]          (no prefix: the set itself)\n"
		"       xdpr set flush NAME\n"
		"       xdpr set show [NAME]\n"
		"A rule names a set as src @NAME or dst @NAME; changing a set recompiles the filter.\n");
	return EXIT_OK;
}

/* NAME PREFIX...: the name checked, members parsed (malloc'd). */
static int set_words(const char *cmd, int argc, char **argv, bool need_members,
		     struct xdpr_flt_member **m, size_t *n)
{
	char err[256];

	*m = NULL;
	*n = 0;
	if (argc < 1 || (need_members && argc < 2))
		return fail(EXIT_USAGE, "\"set %s\" needs a set name%s", cmd,
			    need_members ? " and at least one prefix" : "");
	if (!set_name_ok(argv[0]))
		return fail(EXIT_USAGE, "invalid set name \"%s\" (1-%d of A-Z a-z 0-9 _ . -)", argv[0],
			    XDPR_SET_NAMESZ - 1);
	*m = calloc(argc, sizeof(**m));
	if (!*m)
		return fail(EXIT_FAIL, "out of memory");
	for (int i = 1; i < argc; i++)
		if (parse_member(argv[i], &(*m)[i - 1], err, sizeof(err))) {
			free(*m);
			*m = NULL;
			return fail(EXIT_USAGE, "%s", err);
		}
	*n = argc - 1;
	return 0;
}

static int set_change(const char *cmd, int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_flt_member *m;
	size_t n;
	int ret, err;

	if (!strcmp(cmd, "flush") && argc != 1)
		return fail(EXIT_USAGE, "expected \"set flush NAME\"");
	ret = set_words(cmd, argc, argv, !strcmp(cmd, "add"), &m, &n);
	if (ret)
		return ret;
	if ((ret = open_router(&x, XDPR_O_LOCK))) {
		free(m);
		return ret;
	}
	err = !strcmp(cmd, "add") ? xdpr_set_add(&x, argv[0], m, n)
	      : !strcmp(cmd, "del") ? xdpr_set_del(&x, argv[0], m, n)
	      : xdpr_set_flush(&x, argv[0]);
	free(m);
	return done(&x, err);
}

static int set_add(int argc, char **argv)
{
	return set_change("add", argc, argv);
}

static int set_del(int argc, char **argv)
{
	return set_change("del", argc, argv);
}

static int set_flush(int argc, char **argv)
{
	return set_change("flush", argc, argv);
}

static bool names_set(const struct xdpr_flt_spec *r, const char *name)
{
	return (r->src.kind == XDPR_FA_SET && !strcmp(r->src.set, name)) ||
	       (r->dst.kind == XDPR_FA_SET && !strcmp(r->dst.set, name));
}

static int set_show(int argc, char **argv)
{
	static struct xdpr x;
	struct xdpr_flt_list l;
	char p[64];
	int ret;

	if (argc > 1)
		return fail(EXIT_USAGE, "\"set show\" takes at most one set name");
	if ((ret = open_router(&x, 0)))
		return ret;
	if (xdpr_flt_get(&x, &l))
		return done(&x, -1);
	if (argc && !xdpr_flt_set_find(&l, argv[0])) {
		xdpr_flt_list_free(&l);
		xdpr_close(&x);
		return fail(EXIT_FAIL, "cannot find set \"%s\"", argv[0]);
	}
	out_arr_open(NULL);
	for (size_t i = 0; i < l.nsets; i++) {
		const struct xdpr_flt_set *s = &l.sets[i];
		size_t v4 = 0, nused = 0;

		if (argc && strcmp(s->name, argv[0]))
			continue;
		for (size_t k = 0; k < s->n; k++)
			v4 += s->m[k].family == AF_INET;
		out_obj_open(NULL);
		out_str("name", "set %s:", s->name);
		out_u64("count", " %llu members", s->n);
		out_u64("ipv4", " (IPv4 %llu,", v4);
		out_u64("ipv6", " IPv6 %llu)", s->n - v4);
		out_arr_open("rules");
		for (size_t r = 0; r < l.n; r++)
			if (names_set(&l.r[r], s->name)) {
				out_u64(NULL, nused ? ", %llu" : ", used by rule %llu", r + 1);
				nused++;
			}
		out_arr_close();
		out_text("\n");
		out_arr_open("members");
		for (size_t k = 0; k < s->n; k++) {
			char a[INET6_ADDRSTRLEN];

			inet_ntop(s->m[k].family, s->m[k].addr, a, sizeof(a));
			snprintf(p, sizeof(p), "%s/%u", a, s->m[k].plen);
			out_str(NULL, "  %s\n", p);
		}
		out_arr_close();
		out_obj_close();
	}
	out_arr_close();
	out_flush_doc();
	xdpr_flt_list_free(&l);
	xdpr_close(&x);
	return EXIT_OK;
}

int do_set(int argc, char **argv)
{
	static const struct cmd cmds[] = {
		{ "show", set_show },   { "list", set_show },  { "add", set_add },
		{ "delete", set_del },  { "flush", set_flush }, { "help", set_help },
	};

	return dispatch("set", cmds, sizeof(cmds) / sizeof(cmds[0]), argc, argv);
}
