// SPDX-License-Identifier: GPL-2.0
/*
 * test_filter.c - the filter's rule parser and its compiler; no privileges.
 *
 *  - every malformed rule is a usage error with its exact message;
 *  - the canonical form (what "filter show" prints) parses back to the same
 *    rule, one rule per line through the "filter load" reader too;
 *  - the stored form (the control map's encoding) decodes to the same list;
 *  - the compiler (loader/filter.c) against a linear first-match reference:
 *    random rule lists (prefixes of every length, sets, port ranges up to
 *    the bounds, protocols, states, interfaces, both policies) compiled into
 *    memory, random packets classified by an emulation of the datapath's
 *    lookup exactly as xdpr_shared.h specifies it, and by the reference:
 *    the same rule (or the policy) must decide every packet;
 *  - the size and compile time of 30,000 rules.
 *
 * XDPR_TEST_SEED picks another random sequence (the seed is printed).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "../tap.h"
#include "cli.h"
#include "out.h"

struct cli_opts opts;

int fail(int code, const char *fmt, ...)
{
	(void)fmt;
	return code;
}

/* ---- random numbers (xorshift: the same sequence on every machine) ---- */

static __u64 rng_state;

static __u64 rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static __u32 below(__u32 n)
{
	return n ? rnd() % n : 0;
}

static bool chance(int percent)
{
	return below(100) < (__u32)percent;
}

/* ---- parser ---- */

static int parse_line(const char *line, struct xdpr_flt_spec *r, char *err, size_t len)
{
	static char buf[1024];
	char *w[64], *save = NULL;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *t = strtok_r(buf, " ", &save); t && n < 64; t = strtok_r(NULL, " ", &save))
		w[n++] = t;
	return parse_filter_rule(n, w, r, err, len);
}

static const struct {
	const char *rule, *msg;
} bad[] = {
	{ "", "a rule ends with its action: accept, drop or reject" },
	{ "proto tcp", "a rule ends with its action: accept, drop or reject" },
	{ "drop proto tcp", "unexpected \"proto\" after \"drop\"" },
	{ "frob 1 drop", "unknown filter word \"frob\"" },
	{ "src drop", "\"src\" needs a value" },
	{ "proto", "\"proto\" needs a value" },
	{ "src 10.0.0.0/8 src 10.0.0.0/8 drop", "\"src\" given twice" },
	{ "src 10.0.0.1/8 drop", "host bits set in \"10.0.0.1/8\"" },
	{ "dst 2001:db8::1/64 accept", "host bits set in \"2001:db8::1/64\"" },
	{ "src 10.0.0.0/33 drop", "invalid prefix length in \"10.0.0.0/33\"" },
	{ "src ::/129 drop", "invalid prefix length in \"::/129\"" },
	{ "src 10.0.0/8 drop", "invalid prefix \"10.0.0/8\"" },
	{ "src @ drop", "invalid set name \"@\" (1-31 of A-Z a-z 0-9 _ . -)" },
	{ "src @a/b drop", "invalid set name \"@a/b\" (1-31 of A-Z a-z 0-9 _ . -)" },
	{ "src @abcdefghijklmnopqrstuvwxyz012345 drop",
	  "invalid set name \"@abcdefghijklmnopqrstuvwxyz012345\" (1-31 of A-Z a-z 0-9 _ . -)" },
	{ "in averyveryverylongname0 drop", "invalid device name \"averyveryverylongname0\"" },
	{ "proto tcpx drop", "unknown protocol \"tcpx\" (expected tcp, udp, icmp, icmpv6 or 0-255)" },
	{ "proto 256 drop", "unknown protocol \"256\" (expected tcp, udp, icmp, icmpv6 or 0-255)" },
	{ "proto -1 drop", "unknown protocol \"-1\" (expected tcp, udp, icmp, icmpv6 or 0-255)" },
	{ "dport 22 drop", "\"dport\" needs proto tcp or udp" },
	{ "proto icmp sport 1 drop", "\"sport\" needs proto tcp or udp" },
	{ "proto 47 dport 1 drop", "\"dport\" needs proto tcp or udp" },
	{ "icmp-type 8 drop", "\"icmp-type\" needs proto icmp or icmpv6" },
	{ "proto tcp icmp-code 0 drop", "\"icmp-code\" needs proto icmp or icmpv6" },
	{ "proto tcp dport 9-1 drop", "invalid dport \"9-1\" (low port above high)" },
	{ "proto tcp dport 65536 drop", "invalid dport \"65536\" (PORT or LO-HI within 0-65535)" },
	{ "proto udp sport 1-65536 drop", "invalid sport \"1-65536\" (PORT or LO-HI within 0-65535)" },
	{ "proto udp sport -5 drop", "invalid sport \"-5\" (PORT or LO-HI within 0-65535)" },
	{ "proto udp sport 5- drop", "invalid sport \"5-\" (PORT or LO-HI within 0-65535)" },
	{ "proto tcp dport http drop", "invalid dport \"http\" (PORT or LO-HI within 0-65535)" },
	{ "proto icmp icmp-type 256 drop", "invalid icmp-type \"256\" (0-255)" },
	{ "proto icmp icmp-code x drop", "invalid icmp-code \"x\" (0-255)" },
	{ "state bogus drop", "unknown state \"bogus\" (expected new, established, related or invalid)" },
	{ "state new,,invalid drop", "invalid state \"new,,invalid\" (STATE[,STATE...])" },
	{ "state ,new drop", "invalid state \",new\" (STATE[,STATE...])" },
	{ "state new, drop", "invalid state \"new,\" (STATE[,STATE...])" },
	{ "src 10.0.0.0/8 dst 2001:db8::/32 drop",
	  "src \"10.0.0.0/8\" and dst \"2001:db8::/32\" are of different families" },
	{ "src 2001:db8::/32 proto icmp drop", "IPv6 prefix \"2001:db8::/32\" with proto icmp (use icmpv6)" },
	{ "dst 10.0.0.0/8 proto icmpv6 drop", "IPv4 prefix \"10.0.0.0/8\" with proto icmpv6 (use icmp)" },
	{ "dst 10.0.0.0/8 proto 58 drop", "IPv4 prefix \"10.0.0.0/8\" with proto icmpv6 (use icmp)" },
};

static void test_parser(void)
{
	struct xdpr_flt_spec r;
	char err[256], text[512];
	int n_ok = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;

		err[0] = 0;
		rc = parse_line(bad[i].rule, &r, err, sizeof(err));
		tap_ok(rc == EXIT_USAGE && !strncmp(err, bad[i].msg, strlen(bad[i].msg)),
		       "parse \"%s\": usage error \"%s\" (got %d \"%s\")", bad[i].rule, bad[i].msg, rc, err);
	}

	/* accepted forms and their canonical text */
	static const struct {
		const char *in, *canon;
	} good[] = {
		{ "drop", "drop" },
		{ "accept", "accept" },
		{ "reject", "reject" },
		{ "proto tcp dport 22 in eth0 accept", "in eth0 proto tcp dport 22 accept" },
		{ "src 10.0.0.1 drop", "src 10.0.0.1/32 drop" },
		{ "src 0.0.0.0/0 drop", "src 0.0.0.0/0 drop" },
		{ "dst ::/0 accept", "dst ::/0 accept" },
		{ "dst 2001:DB8::/32 accept", "dst 2001:db8::/32 accept" },
		{ "src @blk dst @allow-v6_2.x accept", "src @blk dst @allow-v6_2.x accept" },
		{ "proto 6 sport 0-65535 dport 0 accept", "proto tcp sport 0-65535 dport 0 accept" },
		{ "proto udp dport 53-53 accept", "proto udp dport 53 accept" },
		{ "proto 1 icmp-type 8 icmp-code 0 accept", "proto icmp icmp-type 8 icmp-code 0 accept" },
		{ "proto icmpv6 icmp-code 4 accept", "proto icmpv6 icmp-code 4 accept" },
		{ "proto 47 accept", "proto 47 accept" },
		{ "proto 0 accept", "proto 0 accept" },
		{ "state invalid,new,new drop", "state new,invalid drop" },
		{ "state established,related,new,invalid accept",
		  "state new,established,related,invalid accept" },
		{ "out eth1 in eth0 src 192.0.2.0/24 dst 198.51.100.0/24 proto udp sport 1-2 dport 3-4 "
		  "state new reject",
		  "in eth0 out eth1 src 192.0.2.0/24 dst 198.51.100.0/24 proto udp sport 1-2 dport 3-4 "
		  "state new reject" },
		{ "src 2001:db8::/32 proto icmpv6 accept", "src 2001:db8::/32 proto icmpv6 accept" },
		{ "src @s proto icmp accept", "src @s proto icmp accept" },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int rc = parse_line(good[i].in, &r, err, sizeof(err));

		text[0] = 0;
		if (!rc)
			fmt_filter_rule(&r, text, sizeof(text));
		tap_ok(!rc && !strcmp(text, good[i].canon), "parse \"%s\" -> \"%s\" (got %d \"%s\" \"%s\")",
		       good[i].in, good[i].canon, rc, text, rc ? err : "");
		n_ok++;
	}
	(void)n_ok;
}

/* ---- random rules ---- */

#define NIF 6            /* interfaces "if1".."if6" are ifindex 1..6; "gone" is missing */

struct universe {
	struct xdpr_flt_set sets[6];
	size_t nsets;
};

/* A prefix near a small pool of addresses (so that rules and packets meet). */
static void rand_prefix(int family, __u8 *addr, __u8 *plen)
{
	static const __u8 v4[][4] = { { 10, 0, 0, 0 }, { 10, 1, 2, 0 }, { 192, 0, 2, 0 },
				      { 198, 51, 100, 7 }, { 255, 255, 255, 255 }, { 0, 0, 0, 0 } };
	static const __u8 v6[][16] = { { 0x20, 0x01, 0x0d, 0xb8 }, { 0x20, 0x01, 0x0d, 0xb8, 0, 1 },
				       { 0xfe, 0x80 },
				       { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
	unsigned int max = family == AF_INET ? 32 : 128, len;

	memset(addr, 0, 16);
	if (family == AF_INET)
		memcpy(addr, v4[below(6)], 4);
	else
		memcpy(addr, v6[below(4)], 16);
	if (chance(30)) /* a bit somewhere */
		addr[below(max / 8)] ^= 1u << below(8);
	switch (below(6)) {
	case 0: len = 0; break;
	case 1: len = max; break;
	case 2: len = max - below(4); break;
	default: len = below(max + 1); break;
	}
	for (unsigned int b = len; b < max; b++)
		addr[b / 8] &= ~(0x80 >> (b % 8));
	*plen = len;
}

static int member_cmp(const void *a, const void *b)
{
	const struct xdpr_flt_member *x = a, *y = b;
	int d;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	d = memcmp(x->addr, y->addr, 16);
	return d ? d : (int)x->plen - (int)y->plen;
}

static void rand_sets(struct universe *u, struct xdpr_flt_list *l)
{
	u->nsets = below(5);
	for (size_t i = 0; i < u->nsets; i++) {
		struct xdpr_flt_set *s = &u->sets[i];
		size_t n = below(i == 0 ? 200 : 20), k = 0;

		snprintf(s->name, sizeof(s->name), "set%zu", i);
		s->m = calloc(n + 1, sizeof(*s->m));
		for (size_t j = 0; j < n; j++) {
			struct xdpr_flt_member *m = &s->m[k];

			m->family = chance(60) ? AF_INET : AF_INET6;
			rand_prefix(m->family, m->addr, &m->plen);
			k++;
		}
		qsort(s->m, k, sizeof(*s->m), member_cmp);
		s->n = 0;
		for (size_t j = 0; j < k; j++) /* unique, like the library keeps them */
			if (!s->n || member_cmp(&s->m[s->n - 1], &s->m[j]))
				s->m[s->n++] = s->m[j];
	}
	l->sets = u->sets;
	l->nsets = u->nsets;
}

static __u16 rand_port(void)
{
	static const __u16 p[] = { 0, 1, 2, 22, 53, 80, 443, 1023, 1024, 65534, 65535 };

	return chance(70) ? p[below(sizeof(p) / sizeof(p[0]))] : below(65536);
}

static void rand_range(__u16 r[2])
{
	__u16 a = rand_port(), b = chance(50) ? a : rand_port();

	r[0] = a < b ? a : b;
	r[1] = a < b ? b : a;
}

static void rand_addr(const struct universe *u, int family, struct xdpr_flt_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (u->nsets && chance(30)) {
		a->kind = XDPR_FA_SET;
		snprintf(a->set, sizeof(a->set), "%s", u->sets[below(u->nsets)].name);
		return;
	}
	a->kind = XDPR_FA_PREFIX;
	a->family = family;
	rand_prefix(family, a->addr, &a->plen);
}

static void rand_dev(char *name, __u32 *ifindex)
{
	__u32 i = below(NIF + 1);

	if (!i) {
		strcpy(name, "gone"); /* named, missing at compile time */
		*ifindex = 0;
	} else {
		snprintf(name, IF_NAMESIZE, "if%u", i);
		*ifindex = i;
	}
}

static void rand_rule(const struct universe *u, struct xdpr_flt_spec *r)
{
	int family = below(3) == 0 ? 0 : chance(50) ? AF_INET : AF_INET6;

	memset(r, 0, sizeof(*r));
	r->action = 1 + below(3);
	if (chance(25))
		rand_dev(r->in, &r->in_ifindex);
	if (chance(25))
		rand_dev(r->out, &r->out_ifindex);
	if (family && chance(60))
		rand_addr(u, family, &r->src);
	else if (!family && u->nsets && chance(20))
		rand_addr(u, AF_INET, &r->src); /* may be a set: no family */
	if (r->src.kind == XDPR_FA_PREFIX)
		family = r->src.family;
	if (family && chance(50))
		rand_addr(u, family, &r->dst);
	if (r->src.kind != XDPR_FA_PREFIX && r->dst.kind == XDPR_FA_PREFIX)
		family = r->dst.family;
	if (chance(60)) {
		static const __u8 any[] = { IPPROTO_TCP, IPPROTO_UDP, 47, 0, 255 };

		r->has |= XDPR_FH_PROTO;
		switch (below(4)) {
		case 0:
			r->proto = family == AF_INET6 ? IPPROTO_ICMPV6
				 : family == AF_INET ? IPPROTO_ICMP
				 : chance(50) ? IPPROTO_ICMP : IPPROTO_ICMPV6;
			break;
		default:
			r->proto = any[below(sizeof(any) / sizeof(any[0]))];
			break;
		}
		if (r->proto == IPPROTO_TCP || r->proto == IPPROTO_UDP) {
			if (chance(50)) {
				rand_range(r->sport);
				r->has |= XDPR_FH_SPORT;
			}
			if (chance(60)) {
				rand_range(r->dport);
				r->has |= XDPR_FH_DPORT;
			}
		}
		if (r->proto == IPPROTO_ICMP || r->proto == IPPROTO_ICMPV6) {
			if (chance(50)) {
				r->icmp_type = chance(80) ? below(4) * 3 : below(256);
				r->has |= XDPR_FH_ICMP_TYPE;
			}
			if (chance(30)) {
				r->icmp_code = below(3);
				r->has |= XDPR_FH_ICMP_CODE;
			}
		}
	}
	if (chance(30)) {
		r->states = 1 + below((1u << XDPR_FS_MAX) - 1);
		r->has |= XDPR_FH_STATE;
	}
}

/* ---- packets ---- */

struct pkt {
	int family;
	__u8 src[16], dst[16];
	__u8 proto;
	__u16 sport, dport;      /* TCP/UDP ports; ICMP(v6): type and code; else 0 */
	__u8 state;
	__u32 in, out;
};

static bool is_icmp(const struct pkt *p)
{
	return (p->family == AF_INET && p->proto == IPPROTO_ICMP) ||
	       (p->family == AF_INET6 && p->proto == IPPROTO_ICMPV6);
}

static void addr_in(const __u8 *pa, __u8 plen, int family, __u8 *out)
{
	unsigned int max = family == AF_INET ? 32 : 128;

	memset(out, 0, 16);
	for (unsigned int b = 0; b < max; b++) {
		bool bit = b < plen ? (pa[b / 8] >> (7 - b % 8)) & 1 : below(4) == 0;

		if (bit)
			out[b / 8] |= 0x80 >> (b % 8);
	}
}

static void pick_addr(const struct xdpr_flt_list *l, const struct xdpr_flt_addr *a, int family, __u8 *out)
{
	__u8 p[16], plen;

	if (a && a->kind == XDPR_FA_PREFIX && a->family == family) {
		addr_in(a->addr, a->plen, family, out);
		return;
	}
	if (a && a->kind == XDPR_FA_SET) {
		const struct xdpr_flt_set *s = xdpr_flt_set_find(l, a->set);

		for (int t = 0; s && s->n && t < 8; t++) {
			const struct xdpr_flt_member *m = &s->m[below(s->n)];

			if (m->family == family) {
				addr_in(m->addr, m->plen, family, out);
				return;
			}
		}
	}
	rand_prefix(family, p, &plen);
	addr_in(p, plen, family, out);
}

static __u16 in_range(const __u16 r[2])
{
	return r[0] + below((__u32)r[1] - r[0] + 1);
}

/* A packet near rule r (or a random one without), perturbed now and then. */
static void rand_pkt(const struct xdpr_flt_list *l, const struct xdpr_flt_spec *r, struct pkt *p)
{
	static const __u8 protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_ICMPV6, 47, 0, 255 };

	memset(p, 0, sizeof(*p));
	p->family = chance(50) ? AF_INET : AF_INET6;
	if (r && r->src.kind == XDPR_FA_PREFIX)
		p->family = r->src.family;
	else if (r && r->dst.kind == XDPR_FA_PREFIX)
		p->family = r->dst.family;
	else if (r && (r->has & XDPR_FH_PROTO) && r->proto == IPPROTO_ICMP)
		p->family = AF_INET;
	else if (r && (r->has & XDPR_FH_PROTO) && r->proto == IPPROTO_ICMPV6)
		p->family = AF_INET6;
	if (chance(5))
		p->family = p->family == AF_INET ? AF_INET6 : AF_INET;
	pick_addr(l, r ? &r->src : NULL, p->family, p->src);
	pick_addr(l, r ? &r->dst : NULL, p->family, p->dst);
	p->proto = r && (r->has & XDPR_FH_PROTO) && chance(90) ? r->proto : protos[below(7)];
	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) {
		p->sport = r && (r->has & XDPR_FH_SPORT) && chance(85) ? in_range(r->sport) : rand_port();
		p->dport = r && (r->has & XDPR_FH_DPORT) && chance(85) ? in_range(r->dport) : rand_port();
	} else if (is_icmp(p)) {
		p->sport = r && (r->has & XDPR_FH_ICMP_TYPE) && chance(85) ? r->icmp_type : below(12);
		p->dport = r && (r->has & XDPR_FH_ICMP_CODE) && chance(85) ? r->icmp_code : below(3);
	}
	p->state = below(XDPR_FS_MAX);
	if (r && (r->has & XDPR_FH_STATE) && chance(85))
		while (!(r->states & (1u << p->state)))
			p->state = below(XDPR_FS_MAX);
	p->in = r && r->in_ifindex && chance(85) ? r->in_ifindex : 1 + below(NIF + 1);
	p->out = r && r->out_ifindex && chance(85) ? r->out_ifindex : 1 + below(NIF + 1);
}

/* ---- the reference: the rules in order, as the semantics say ---- */

static bool contains(const __u8 *pa, unsigned int plen, const __u8 *a)
{
	for (unsigned int b = 0; b < plen; b++)
		if (((pa[b / 8] ^ a[b / 8]) >> (7 - b % 8)) & 1)
			return false;
	return true;
}

static bool addr_match(const struct xdpr_flt_list *l, const struct xdpr_flt_addr *a, int family,
		       const __u8 *addr)
{
	const struct xdpr_flt_set *s;

	if (a->kind == XDPR_FA_ANY)
		return true;
	if (a->kind == XDPR_FA_PREFIX)
		return a->family == family && contains(a->addr, a->plen, addr);
	s = xdpr_flt_set_find(l, a->set);
	for (size_t i = 0; s && i < s->n; i++)
		if (s->m[i].family == family && contains(s->m[i].addr, s->m[i].plen, addr))
			return true;
	return false;
}

static bool ref_match(const struct xdpr_flt_list *l, const struct xdpr_flt_spec *r, const struct pkt *p)
{
	if (!addr_match(l, &r->src, p->family, p->src) || !addr_match(l, &r->dst, p->family, p->dst))
		return false;
	if (r->has & XDPR_FH_PROTO) {
		if (r->proto != p->proto)
			return false;
		if ((r->proto == IPPROTO_ICMP && p->family != AF_INET) ||
		    (r->proto == IPPROTO_ICMPV6 && p->family != AF_INET6))
			return false;
	}
	if ((r->has & XDPR_FH_SPORT) && (p->sport < r->sport[0] || p->sport > r->sport[1]))
		return false;
	if ((r->has & XDPR_FH_DPORT) && (p->dport < r->dport[0] || p->dport > r->dport[1]))
		return false;
	if ((r->has & XDPR_FH_ICMP_TYPE) && (!is_icmp(p) || p->sport != r->icmp_type))
		return false;
	if ((r->has & XDPR_FH_ICMP_CODE) && (!is_icmp(p) || p->dport != r->icmp_code))
		return false;
	if ((r->has & XDPR_FH_STATE) && !(r->states & (1u << p->state)))
		return false;
	if (r->in[0] && (!r->in_ifindex || r->in_ifindex != p->in))
		return false;
	if (r->out[0] && (!r->out_ifindex || r->out_ifindex != p->out))
		return false;
	return true;
}

/* Position of the deciding rule, or -1: the policy. */
static long ref_classify(const struct xdpr_flt_list *l, const struct pkt *p)
{
	for (size_t i = 0; i < l->n; i++)
		if (ref_match(l, &l->r[i], p))
			return i;
	return -1;
}

/* ---- the datapath's lookup, as xdpr_shared.h specifies it ---- */

static __u32 emu_lpm(const struct xdpr_flt_image *img, int field, const struct pkt *p)
{
	const __u8 *a = field == XDPR_FF_SRC ? p->src : p->dst;
	__u32 best = XDPR_FLT_DESC_EMPTY;
	long bestlen = -1;

	if (p->family == AF_INET) {
		for (size_t i = 0; i < img->nlpm4; i++) {
			const struct xdpr_flt_lpm4 *k = &img->lpm4[i];

			if (k->field == field && (long)k->prefixlen > bestlen &&
			    contains(k->addr, k->prefixlen - 8, a)) {
				best = img->lpm4_val[i];
				bestlen = k->prefixlen;
			}
		}
	} else {
		for (size_t i = 0; i < img->nlpm6; i++) {
			const struct xdpr_flt_lpm6 *k = &img->lpm6[i];

			if (k->field == field && (long)k->prefixlen > bestlen &&
			    contains(k->addr, k->prefixlen - 8, a)) {
				best = img->lpm6_val[i];
				bestlen = k->prefixlen;
			}
		}
	}
	return best;
}

static __u32 emu_if(const struct xdpr_flt_image *img, int field, __u32 ifindex)
{
	for (size_t i = 0; i < img->nif; i++)
		if (img->ifk[i].ifindex == ifindex && img->ifk[i].field == (__u32)field)
			return img->if_val[i];
	return XDPR_FLT_DESC_EMPTY;
}

/* Word w of descriptor d: the rank/popcount access of the comment. */
static __u64 emu_word(const struct xdpr_flt_image *img, __u32 d, __u32 w)
{
	const struct xdpr_flt_desc *e = &img->desc[d];
	__u32 i = w / 64, b = w % 64;

	if (!((e->summ[i] >> b) & 1))
		return 0;
	return img->word[e->base + e->rank[i] + __builtin_popcountll(e->summ[i] & ((1ULL << b) - 1))];
}

static long emu_classify(const struct xdpr_flt_image *img, const struct pkt *p, bool *bad)
{
	__u32 d[XDPR_FF_MAX];
	__u16 sport = 0, dport = 0;

	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP || is_icmp(p)) {
		sport = p->sport;
		dport = p->dport;
	}
	d[XDPR_FF_SRC] = emu_lpm(img, XDPR_FF_SRC, p);
	d[XDPR_FF_DST] = emu_lpm(img, XDPR_FF_DST, p);
	d[XDPR_FF_SPORT] = img->val[XDPR_FV_SPORT + sport];
	d[XDPR_FF_DPORT] = img->val[XDPR_FV_DPORT + dport];
	d[XDPR_FF_PROTO] = img->val[XDPR_FV_PROTO + (p->family == AF_INET6 ? 256 : 0) + p->proto];
	d[XDPR_FF_STATE] = img->val[XDPR_FV_STATE + p->state];
	d[XDPR_FF_IN] = emu_if(img, XDPR_FF_IN, p->in);
	d[XDPR_FF_OUT] = emu_if(img, XDPR_FF_OUT, p->out);
	for (int f = 0; f < XDPR_FF_MAX; f++)
		if (d[f] < XDPR_FLT_DESC_EMPTY || d[f] >= img->ndesc) {
			*bad = true;
			return -2;
		}
	/* as the packet path does: candidate words in order, a group's first match, the lowest position */
	long best = -1;
	__u32 skip = 0;

	for (__u32 i = 0; i < XDPR_FLT_SUMM; i++) {
		__u64 cand = ~0ULL;

		for (int f = 0; f < XDPR_FF_MAX; f++)
			cand &= img->desc[f].summ[i] | img->desc[d[f]].summ[i];
		while (cand) {
			__u32 w = 64 * i + __builtin_ctzll(cand);
			__u64 m = ~0ULL;
			const struct xdpr_flt_rule *r;

			cand &= cand - 1;
			if (w < skip)
				continue;
			for (int f = 0; f < XDPR_FF_MAX; f++)
				m &= img->word[f * XDPR_FLT_WORDS + w] | emu_word(img, d[f], w);
			if (!m)
				continue;
			if (64 * w + __builtin_ctzll(m) >= img->nrule) {
				*bad = true;
				return -2;
			}
			r = &img->rule[64 * w + __builtin_ctzll(m)];
			if (best < 0 || r->pos < img->rule[best].pos)
				best = 64 * w + __builtin_ctzll(m);
			skip = r->gend;
		}
	}
	return best < 0 ? -1 : (long)img->rule[best].pos;
}

/* ---- image structure ---- */

static bool image_sane(const struct xdpr_flt_list *l, const struct xdpr_flt_image *img, char *why,
		       size_t len)
{
	size_t nw = l->info.nbits / 64;

	if (nw < (l->n + 63) / 64 || nw > XDPR_FLT_WORDS || l->info.nbits % 64)
		return snprintf(why, len, "%u bits for %zu rules", l->info.nbits, l->n), false;
	if (img->hdr.nrules != l->n || img->hdr.policy != l->policy)
		return snprintf(why, len, "header"), false;
	for (int f = 0; f < XDPR_FF_MAX; f++)
		for (size_t w = nw; w < XDPR_FLT_WORDS; w++)
			if (img->word[f * XDPR_FLT_WORDS + w])
				return snprintf(why, len, "W word beyond the rules"), false;
	for (size_t i = 0; i < sizeof(img->desc[0]); i++)
		if (((const __u8 *)&img->desc[XDPR_FLT_DESC_EMPTY])[i])
			return snprintf(why, len, "EMPTY not zero"), false;
	size_t nsets = img->ndesc;
	__u8 *seen = calloc(l->n + 1, 1);

	if (!seen)
		return snprintf(why, len, "out of memory"), false;
	/* the bit layout: every position once; a word's bits in list order; groups end after them */
	if (img->nrule != (nw ? nw * 64 : 1))
		return free(seen), snprintf(why, len, "%zu rule entries for %zu words", img->nrule, nw), false;
	for (size_t k = 0; k < img->nrule && l->n; k++) {
		const struct xdpr_flt_rule *r = &img->rule[k];

		if (!r->id)
			continue;
		if (r->pos >= l->n || seen[r->pos]++)
			return free(seen), snprintf(why, len, "bit %zu: position %u", k, r->pos), false;
		if (r->id != l->r[r->pos].id || r->action != l->r[r->pos].action)
			return free(seen), snprintf(why, len, "bit %zu: rule %u", k, r->pos), false;
		if (r->gend <= k / 64 || r->gend > nw)
			return free(seen), snprintf(why, len, "bit %zu: group end %u", k, r->gend), false;
		/* within a group (across its words too) list order; a group starts on a word,
		   right where the one before it ends */
		if (k && img->rule[k - 1].id && img->rule[k - 1].gend == r->gend && img->rule[k - 1].pos > r->pos)
			return free(seen), snprintf(why, len, "bit %zu after a later rule", k), false;
		if (k && img->rule[k - 1].id && img->rule[k - 1].gend != r->gend &&
		    (k % 64 || img->rule[k - 1].gend != k / 64))
			return free(seen), snprintf(why, len, "bit %zu: a group ends or starts mid-word", k), false;
		if (k && !img->rule[k - 1].id && k % 64)
			return free(seen), snprintf(why, len, "bit %zu: a rule after padding", k), false;
	}
	/* padding only at the end of a group's last word */
	for (size_t k = 1; k < img->nrule && l->n; k++)
		if (!img->rule[k].id && img->rule[k - 1].id && img->rule[k - 1].gend != k / 64 + 1)
			return free(seen), snprintf(why, len, "bit %zu: padding inside a group", k), false;
	for (size_t p = 0; p < l->n; p++)
		if (!seen[p])
			return free(seen), snprintf(why, len, "rule %zu has no bit", p), false;
	free(seen);
	if (img->hdr.ngroups > l->n || (l->n && !img->hdr.ngroups))
		return snprintf(why, len, "%u groups", img->hdr.ngroups), false;
	for (size_t d = XDPR_FLT_DESC_EMPTY + 1; d < nsets; d++) {
		const struct xdpr_flt_desc *e = &img->desc[d];
		size_t stored = 0;

		for (int i = 0; i < XDPR_FLT_SUMM; i++) {
			if (e->rank[i] != stored)
				return snprintf(why, len, "rank of %zu", d), false;
			stored += __builtin_popcountll(e->summ[i]);
		}
		if (!stored || e->base + stored > img->nword)
			return snprintf(why, len, "descriptor %zu words", d), false;
		for (size_t k = 0; k < stored; k++)
			if (!img->word[e->base + k])
				return snprintf(why, len, "zero word stored in %zu", d), false;
		for (size_t w = nw; w < XDPR_FLT_WORDS; w++)
			if ((e->summ[w / 64] >> (w % 64)) & 1)
				return snprintf(why, len, "descriptor %zu beyond the rules", d), false;
	}
	for (size_t v = 0; v < XDPR_FV_MAX; v++)
		if (img->val[v] < XDPR_FLT_DESC_EMPTY || img->val[v] >= img->ndesc)
			return snprintf(why, len, "value %zu -> %u", v, img->val[v]), false;
	return true;
}

/* No two descriptors with the same words (the memory bound relies on it). */
static bool desc_unique(const struct xdpr_flt_image *img)
{
	size_t n = img->ndesc;

	for (size_t a = XDPR_FLT_DESC_EMPTY + 1; a < n && a < 400; a++)
		for (size_t b = a + 1; b < n && b < 400; b++) {
			bool same = !memcmp(img->desc[a].summ, img->desc[b].summ, sizeof(img->desc[a].summ));

			for (__u32 w = 0; same && w < XDPR_FLT_WORDS; w++)
				same = emu_word(img, a, w) == emu_word(img, b, w);
			if (same)
				return false;
		}
	return true;
}

static long by_rule, by_later_rule; /* packets a rule decided, a rule after the first */

/* The fields a rule constrains (the compiler's shape), as the semantics say. */
static unsigned int shape_of(const struct xdpr_flt_spec *r)
{
	unsigned int m = 0;

	m |= (r->src.kind != XDPR_FA_ANY) << XDPR_FF_SRC;
	m |= (r->dst.kind != XDPR_FA_ANY) << XDPR_FF_DST;
	m |= !!(r->has & (XDPR_FH_SPORT | XDPR_FH_ICMP_TYPE)) << XDPR_FF_SPORT;
	m |= !!(r->has & (XDPR_FH_DPORT | XDPR_FH_ICMP_CODE)) << XDPR_FF_DPORT;
	m |= !!(r->has & XDPR_FH_PROTO) << XDPR_FF_PROTO;
	m |= !!r->in[0] << XDPR_FF_IN;
	m |= !!r->out[0] << XDPR_FF_OUT;
	m |= !!((r->has & XDPR_FH_STATE) && r->states) << XDPR_FF_STATE;
	return m;
}

/* One random list of n rules, npkt packets: the number of mismatches (diagnosed). */
static long run_case(size_t n, size_t npkt, long *cases, char *why, size_t wlen, unsigned int *shapes,
		     unsigned int *groups)
{
	struct universe u = {};
	struct xdpr_flt_list l = {};
	struct xdpr_flt_image img;
	char err[256];
	long mismatches = 0;

	rand_sets(&u, &l);
	l.r = calloc(n + 1, sizeof(*l.r));
	l.n = n;
	l.policy = chance(50) ? XDPR_FLT_ACCEPT : XDPR_FLT_DROP;
	for (size_t i = 0; i < n; i++) {
		rand_rule(&u, &l.r[i]);
		l.r[i].id = i + 1;
	}
	if (xdpr_flt_compile(&l, &img, err, sizeof(err))) {
		snprintf(why, wlen, "compile: %s", err);
		mismatches = 1;
		goto out;
	}
	if (shapes) {
		__u8 seen[1 << XDPR_FF_MAX] = {};

		*shapes = 0;
		for (size_t i = 0; i < n; i++)
			*shapes += !seen[shape_of(&l.r[i])]++;
		*groups = img.hdr.ngroups;
	}
	if (!image_sane(&l, &img, err, sizeof(err))) {
		snprintf(why, wlen, "image: %s", err);
		mismatches = 1;
		goto freeimg;
	}
	if (!desc_unique(&img)) {
		snprintf(why, wlen, "two descriptors with the same rules");
		mismatches = 1;
		goto freeimg;
	}
	for (size_t k = 0; k < npkt; k++) {
		struct pkt p;
		bool bad = false;
		long want, got;

		rand_pkt(&l, n && chance(75) ? &l.r[below(n)] : NULL, &p);
		want = ref_classify(&l, &p);
		got = emu_classify(&img, &p, &bad);
		(*cases)++;
		by_rule += want >= 0;
		by_later_rule += want > 0;
		if (want != got || bad) {
			char text[512];

			if (!mismatches) {
				if (want >= 0)
					fmt_filter_rule(&l.r[want], text, sizeof(text));
				else
					strcpy(text, "policy");
				snprintf(why, wlen, "packet %zu (family %d proto %u ports %u/%u state %u in %u "
					 "out %u): reference rule %ld (%s), classifier %ld", k, p.family,
					 p.proto, p.sport, p.dport, p.state, p.in, p.out, want + 1, text,
					 got + 1);
			}
			mismatches++;
		}
	}
freeimg:
	xdpr_flt_image_free(&img);
out:
	for (size_t i = 0; i < u.nsets; i++)
		free(u.sets[i].m);
	free(l.r);
	return mismatches;
}

static void test_compiler(void)
{
	static const struct {
		size_t lists, rules, packets;
	} rounds[] = {
		{ 400, 0, 200 },   /* 0..8 rules: every field alone */
		{ 400, 40, 400 },
		{ 60, 300, 1500 },
		{ 6, 3000, 3000 },
		{ 2, XDPR_FLT_MAX_RULES, 1500 }, /* shapes padded to words would not fit */
	};
	long total = 0;

	for (size_t r = 0; r < sizeof(rounds) / sizeof(rounds[0]); r++) {
		long cases = 0, bad_lists = 0;
		unsigned int shapes = 0, groups = 0;
		char why[1200] = "";

		for (size_t i = 0; i < rounds[r].lists; i++) {
			size_t n = rounds[r].rules ? 1 + below(rounds[r].rules) : below(9);
			char w[1024];

			if (r == 3)
				n = rounds[r].rules + below(rounds[r].rules);
			if (r == 4)
				n = i ? 31000 : XDPR_FLT_MAX_RULES; /* all merged; some merged */
			if (run_case(n, rounds[r].packets, &cases, w, sizeof(w), r == 4 ? &shapes : NULL, &groups)) {
				if (!bad_lists)
					snprintf(why, sizeof(why), "list %zu (%zu rules): %s", i, n, w);
				bad_lists++;
			}
		}
		total += cases;
		if (r == 4) {
			tap_ok(!bad_lists && groups && groups < shapes,
			       "compiler = reference at %d and 31000 rules, %ld packets: at 31000 %u shapes "
			       "in %u groups of the bit layout (merged to fit)%s%s", XDPR_FLT_MAX_RULES, cases, shapes, groups,
			       bad_lists ? ": " : "", why);
			continue;
		}
		tap_ok(!bad_lists, "compiler = reference: %zu lists of up to %zu rules, %ld packets%s%s",
		       rounds[r].lists, r == 3 ? 2 * rounds[r].rules : rounds[r].rules ? rounds[r].rules : 8,
		       cases, bad_lists ? ": " : "", why);
	}
	printf("# %ld packets classified both ways: %ld decided by a rule (%ld not the first), "
	       "%ld by the policy\n", total, by_rule, by_later_rule, total - by_rule);
}

/* ---- the stored form ---- */

static bool spec_eq(const struct xdpr_flt_spec *a, const struct xdpr_flt_spec *b)
{
	char x[512], y[512];

	fmt_filter_rule(a, x, sizeof(x));
	fmt_filter_rule(b, y, sizeof(y));
	return !strcmp(x, y) && a->id == b->id && a->in_ifindex == b->in_ifindex &&
	       a->out_ifindex == b->out_ifindex;
}

static void test_roundtrips(void)
{
	int bad_text = 0, bad_blob = 0, n_text = 0;
	char text[512], err[256], first[1024] = "";

	for (int t = 0; t < 200; t++) {
		struct universe u = {};
		struct xdpr_flt_list l = {}, back;
		size_t n = below(60);
		void *buf = NULL;
		size_t len;

		rand_sets(&u, &l);
		l.r = calloc(n + 1, sizeof(*l.r));
		l.n = n;
		l.policy = 1 + below(2);
		l.next_id = 1 + below(XDPR_FLT_MAX_RULES);
		l.info.gen = t;
		l.info.memory = rnd();
		for (size_t i = 0; i < n; i++) {
			struct xdpr_flt_spec r;

			rand_rule(&u, &l.r[i]);
			l.r[i].id = 1 + below(XDPR_FLT_MAX_RULES);
			/* canonical text parses back to the same rule */
			fmt_filter_rule(&l.r[i], text, sizeof(text));
			n_text++;
			if (parse_line(text, &r, err, sizeof(err))) {
				if (!bad_text++)
					snprintf(first, sizeof(first), "\"%s\": %s", text, err);
				continue;
			}
			r.id = l.r[i].id;
			r.in_ifindex = l.r[i].in_ifindex;
			r.out_ifindex = l.r[i].out_ifindex;
			if (!spec_eq(&r, &l.r[i]) || memcmp(&r.src, &l.r[i].src, sizeof(r.src)) ||
			    memcmp(&r.dst, &l.r[i].dst, sizeof(r.dst)) || r.has != l.r[i].has)
				if (!bad_text++)
					snprintf(first, sizeof(first), "\"%s\" parses to another rule", text);
		}
		if (xdpr_flt_encode(&l, &buf, &len) || xdpr_flt_decode(buf, len, &back)) {
			bad_blob++;
		} else {
			bool same = back.n == l.n && back.nsets == l.nsets && back.policy == l.policy &&
				    back.next_id == l.next_id && back.info.gen == l.info.gen &&
				    back.info.memory == l.info.memory;

			for (size_t i = 0; same && i < n; i++)
				same = spec_eq(&back.r[i], &l.r[i]) &&
				       !memcmp(&back.r[i].src, &l.r[i].src, sizeof(l.r[i].src)) &&
				       !memcmp(&back.r[i].dst, &l.r[i].dst, sizeof(l.r[i].dst));
			for (size_t i = 0; same && i < l.nsets; i++)
				same = !strcmp(back.sets[i].name, l.sets[i].name) &&
				       back.sets[i].n == l.sets[i].n &&
				       !memcmp(back.sets[i].m, l.sets[i].m, l.sets[i].n * sizeof(*l.sets[i].m));
			bad_blob += !same;
			/* a cut encoding is refused, never half read */
			if (xdpr_flt_decode(buf, len - 1 - below(len > 64 ? 64 : 1), &back) == 0) {
				bad_blob++;
				xdpr_flt_list_free(&back);
			}
			xdpr_flt_list_free(&back);
		}
		free(buf);
		for (size_t i = 0; i < u.nsets; i++)
			free(u.sets[i].m);
		free(l.r);
	}
	tap_ok(!bad_text, "canonical text of %d random rules parses back to the same rule%s%s", n_text,
	       bad_text ? ": " : "", first);
	tap_ok(!bad_blob, "200 random lists encode and decode to the same list; cut encodings are refused");
}

static void test_load_file(void)
{
	static const char good[] =
		"# a comment\n"
		"\n"
		"in eth0 proto tcp dport 22 accept   # trailing comment\n"
		"\t src 10.0.0.0/8   drop\r\n"
		"state established,related accept\n";
	static const char bad_file[] = "drop\n\n# x\nproto tcp dport 99999 accept\ndrop\n";
	struct xdpr_flt_spec *r = NULL;
	size_t n = 0, *lines = NULL, errline = 0;
	char err[256], text[512];
	FILE *f = fmemopen((void *)good, sizeof(good) - 1, "r");
	int rc = parse_filter_file(f, &r, &lines, &n, &errline, err, sizeof(err));

	fclose(f);
	tap_ok(rc == 0 && n == 3 && lines[0] == 3 && lines[1] == 4 && lines[2] == 5,
	       "load file: comments and blank lines skipped, rules keep their line numbers");
	if (rc == 0 && n == 3) {
		fmt_filter_rule(&r[1], text, sizeof(text));
		tap_ok(!strcmp(text, "src 10.0.0.0/8 drop"), "load file: tabs and CR are blanks");
	} else {
		tap_ok(0, "load file: tabs and CR are blanks");
	}
	free(r);
	free(lines);
	f = fmemopen((void *)bad_file, sizeof(bad_file) - 1, "r");
	rc = parse_filter_file(f, &r, &lines, &n, &errline, err, sizeof(err));
	fclose(f);
	tap_ok(rc == EXIT_USAGE && errline == 4 && strstr(err, "invalid dport \"99999\"") && n == 0,
	       "load file: the bad line is named (line %zu: %s), nothing returned", errline, err);
}

/* ---- size and time ---- */

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void test_scale(void)
{
	struct xdpr_flt_list l = {};
	struct xdpr_flt_image img;
	char err[256];
	size_t classifier;
	double t0;
	int rc;

	l.n = XDPR_FLT_MAX_RULES;
	l.r = calloc(l.n + 1, sizeof(*l.r));
	l.policy = XDPR_FLT_DROP;
	for (size_t i = 0; i < 30000; i++) {
		struct xdpr_flt_spec *r = &l.r[i];

		r->id = i + 1;
		r->action = XDPR_FLT_ACCEPT;
		r->src.kind = XDPR_FA_PREFIX;
		r->src.family = AF_INET;
		r->src.plen = 32;
		r->src.addr[0] = 10;
		r->src.addr[1] = i >> 16;
		r->src.addr[2] = i >> 8;
		r->src.addr[3] = i;
		r->has = XDPR_FH_PROTO | XDPR_FH_DPORT;
		r->proto = IPPROTO_TCP;
		r->dport[0] = r->dport[1] = 1000 + i;
	}
	l.n = 30000;
	t0 = now();
	rc = xdpr_flt_compile(&l, &img, err, sizeof(err));
	classifier = rc ? 0 : img.ndesc * sizeof(*img.desc) + img.nword * sizeof(*img.word);
	printf("# 30000 rules, distinct /32 sources and ports: compiled in %.3f s, %u descriptors, "
	       "%zu words: classifier %.2f MiB, slot %.2f MiB with the LPM tries\n", now() - t0,
	       l.info.ndesc, rc ? 0 : img.nword, classifier / 1048576.0, l.info.memory / 1048576.0);
	tap_ok(!rc && classifier < (4u << 20) && l.info.ndesc < 30100,
	       "30000 rules with distinct /32 sources and ports: %u descriptors (one per rule, shared by "
	       "its source and port), classifier %.2f MiB (< 4)", l.info.ndesc, classifier / 1048576.0);
	if (!rc)
		xdpr_flt_image_free(&img);

	l.n = XDPR_FLT_MAX_RULES + 1;
	rc = xdpr_flt_compile(&l, &img, err, sizeof(err));
	tap_ok(rc == -ENOSPC && strstr(err, "32768"), "more than 32768 rules: refused with the limit");
	free(l.r);
}

int main(void)
{
	const char *seed = getenv("XDPR_TEST_SEED");

	rng_state = seed ? strtoull(seed, NULL, 0) : 0x9e3779b97f4a7c15ULL;
	if (!rng_state)
		rng_state = 1;
	tap_plan((int)(sizeof(bad) / sizeof(bad[0])) + 20 + 3 + 2 + 5 + 2);
	printf("# seed %#llx\n", (unsigned long long)rng_state);
	test_parser();
	test_load_file();
	test_roundtrips();
	test_compiler();
	test_scale();
	return tap_done();
}
