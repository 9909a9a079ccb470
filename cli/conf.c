// SPDX-License-Identifier: GPL-2.0
/*
 * conf.c - the whole configuration of a router in the CLI's words.
 *
 * A file holds the commands that build the state, one a line:
 *
 *   link attach DEV... [mode {native|skb}] [force]
 *   nat limit ... | nat timeout ... | nat add out DEV ... | nat add in DEV ...
 *   nat add npt DEV inside PREFIX outside PREFIX
 *   route add PREFIX ...
 *   set add NAME PREFIX...
 *   filter policy {accept|drop} | filter add RULE
 *   on-stop {keep|detach}                (xdprd only)
 *   on-reload {guard|force}              (xdprd only)
 *   export {ipfix|netflow9} ADDR:PORT | export {active-timeout|inactive-timeout} S |
 *   export sample N | export nat-events on|off  (xdprd only: daemon/export.c)
 *   ddos protect PREFIX | ddos threshold {pps|mbps} N | ddos window S | ddos ban-time S |
 *   ddos action {drop|blackhole|both} | ddos blackhole-table N | ddos sample N |
 *   ddos ban-sources on|off              (xdprd only: daemon/ddos.c)
 *
 * and is the whole state: what it does not say is the default (no rule,
 * no route, policy accept, default timeouts and sizes).  xdpr save prints
 * the running state this way; conf_apply makes the running state equal to
 * a file by changing only what differs, in an order that adds before it
 * removes (attach, sizes, NAT rules, routes, filter, then NAT rules and
 * interfaces no longer wanted), and undoes its changes when the kernel
 * refuses one.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "conf.h"
#include "out.h"
#include "npt.h"

#define ERR(...) (snprintf(err, len, __VA_ARGS__), EXIT_FAIL)

/* The knobs a file may set, in conf->knob_line order (parse_knobs checks the values). */
static const struct {
	const char *cmd, *word;
	size_t off;
	__u32 def;
} knob[] = {
	{ "limit",   "sessions",  offsetof(struct xdpr_cfg, nat_sess),   XDPR_NAT_DEF_SESS },
	{ "limit",   "host",      offsetof(struct xdpr_cfg, host_limit), XDPR_DEF_HOST_LIMIT },
	{ "timeout", "tcp-est",   offsetof(struct xdpr_cfg, tcp_est),    XDPR_DEF_TCP_EST },
	{ "timeout", "tcp-trans", offsetof(struct xdpr_cfg, tcp_trans),  XDPR_DEF_TCP_TRANS },
	{ "timeout", "udp",       offsetof(struct xdpr_cfg, udp),        XDPR_DEF_UDP },
	{ "timeout", "icmp",      offsetof(struct xdpr_cfg, icmp),       XDPR_DEF_ICMP },
	{ "timeout", "holddown",  offsetof(struct xdpr_cfg, holddown),   XDPR_DEF_HOLDDOWN },
};
#define NKNOBS (sizeof(knob) / sizeof(knob[0]))

static __u32 *knob_at(struct xdpr_cfg *c, size_t k)
{
	return (__u32 *)((char *)c + knob[k].off);
}

static __u32 knob_get(const struct xdpr_cfg *c, size_t k)
{
	return *(const __u32 *)((const char *)c + knob[k].off);
}

void conf_init(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t k = 0; k < NKNOBS; k++)
		*knob_at(&c->knobs, k) = knob[k].def;
	c->flt.policy = XDPR_FLT_ACCEPT;
	c->exp.active = CONF_EXPORT_ACTIVE;
	c->exp.inactive = CONF_EXPORT_INACTIVE;
	c->exp.sample = 1;
	c->ddos.pps = CONF_DDOS_PPS;
	c->ddos.mbps = CONF_DDOS_MBPS;
	c->ddos.window = CONF_DDOS_WINDOW;
	c->ddos.ban_time = CONF_DDOS_BAN;
	c->ddos.sample = 1;
	c->ddos.table = CONF_DDOS_TABLE;
	c->ddos.action = XDPR_DDOS_F_DROP;
}

void conf_free(struct conf *c)
{
	free(c->route);
	free(c->route_line);
	free(c->flt_line);
	xdpr_flt_list_free(&c->flt);
	conf_init(c);
}

/* ---- reading a file ---- */

/* Split a line into words in place: *w grows (malloc'd); returns the count or -1. */
static int split(char *line, char ***w, size_t *cap)
{
	char *save = NULL;
	size_t n = 0;

	for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == *cap) {
			size_t nc = *cap ? 2 * *cap : 64;
			char **m = realloc(*w, nc * sizeof(*m));

			if (!m)
				return -1;
			*w = m;
			*cap = nc;
		}
		(*w)[n++] = t;
	}
	return (int)n;
}

static int grow(void **p, size_t size, size_t *cap, size_t need)
{
	void *m;
	size_t nc;

	if (need <= *cap)
		return 0;
	nc = *cap ? 2 * *cap : 256;
	while (nc < need)
		nc *= 2;
	m = realloc(*p, nc * size);
	if (!m)
		return -ENOMEM;
	*p = m;
	*cap = nc;
	return 0;
}

/* A device left out (CONF_P_PRESENT): named once in c->waiting. */
static void wait_for(struct conf *c, const char *dev)
{
	size_t used = strlen(c->waiting), n = strlen(dev);
	const char *p = c->waiting;

	while ((p = strstr(p, dev))) {
		if ((p == c->waiting || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return;
		p += n;
	}
	if (used + n + 2 < sizeof(c->waiting))
		snprintf(c->waiting + used, sizeof(c->waiting) - used, "%s%s", used ? " " : "", dev);
}

static int add_links(struct conf *c, int argc, char **argv, size_t line, char *err, size_t len)
{
	struct attach_args a;

	if (parse_attach(argc, argv, &a, err, len))
		return EXIT_USAGE;
	for (int i = 0; i < a.ndev; i++) {
		for (int k = 0; k < c->nlink; k++)
			if (!strcmp(c->link[k].name, a.devs[i]))
				return snprintf(err, len, "device \"%s\" is already attached on line %zu",
						a.devs[i], c->link[k].line), EXIT_USAGE;
		if (c->nlink >= XDPR_MAX_IFACES - 1)
			return snprintf(err, len, "too many devices"), EXIT_USAGE;
		struct conf_link *l;

		if ((c->flags & CONF_P_PRESENT) && !if_nametoindex(a.devs[i])) {
			wait_for(c, a.devs[i]);
			continue;
		}
		l = &c->link[c->nlink++];

		snprintf(l->name, sizeof(l->name), "%s", a.devs[i]);
		l->mode = a.mode;
		l->force = a.force;
		l->line = line;
	}
	return 0;
}

static int add_knobs(struct conf *c, const char *cmd, int argc, char **argv, size_t line,
		     char *err, size_t len)
{
	if (!argc)
		return snprintf(err, len, "\"nat %s\" needs KEY VALUE pairs", cmd), EXIT_USAGE;
	if (parse_knobs(cmd, argc, argv, &c->knobs, err, len))
		return EXIT_USAGE;
	for (int i = 0; i < argc; i += 2)
		for (size_t k = 0; k < NKNOBS; k++) {
			if (strcmp(knob[k].cmd, cmd) || strcmp(knob[k].word, argv[i]))
				continue;
			if (c->knob_line[k])
				return snprintf(err, len, "\"%s\" is already set on line %zu", argv[i],
						c->knob_line[k]), EXIT_USAGE;
			c->knob_line[k] = line;
		}
	return 0;
}

/* Two forwards on one address whose protocols and ports meet. */
static bool fwd_overlap(const struct xdpr_nat_rule *a, const struct xdpr_nat_rule *b)
{
	return a->pool_first == b->pool_first && (!a->fwd_proto || !b->fwd_proto || a->fwd_proto == b->fwd_proto) &&
	       a->port_min <= b->port_max && b->port_min <= a->port_max;
}

/* ---- NPTv6 rules: the same rule is the same DEV, prefixes and length ---- */

static bool npt_same(const struct conf_npt *a, const struct conf_npt *b)
{
	return !strcmp(a->dev, b->dev) && a->r.plen == b->r.plen && !memcmp(a->r.inside, b->r.inside, 8) &&
	       !memcmp(a->r.outside, b->r.outside, 8);
}

static bool npt_in(const struct conf *c, const struct conf_npt *n)
{
	for (int i = 0; i < c->nnpt; i++)
		if (npt_same(&c->npt[i], n))
			return true;
	return false;
}

static int add_npt(struct conf *c, int argc, char **argv, size_t line, char *err, size_t len)
{
	struct npt_args a;
	struct conf_npt *n;

	if (parse_npt_rule(argc, argv, &a, err, len))
		return EXIT_USAGE;
	if (c->nnpt >= XDPR_NPT_MAX)
		return snprintf(err, len, "at most %d NPTv6 rules", XDPR_NPT_MAX), EXIT_FAIL;
	n = &c->npt[c->nnpt];
	snprintf(n->dev, sizeof(n->dev), "%s", a.dev);
	n->r = a.r;
	n->line = line;
	for (int k = 0; k < c->nnpt; k++)
		if (npt_same(&c->npt[k], n))
			return snprintf(err, len, "this NPTv6 rule is already on line %zu", c->npt[k].line),
			       EXIT_USAGE;
	c->nnpt++;
	return 0;
}

/* Rules no longer wanted out, then the new ones in (their devices are attached by now). */
static int apply_npt(struct xdpr *x, const struct conf *want, const struct conf *have, struct conf_diff *d,
		     char *err, size_t len)
{
	for (int i = 0; i < have->nnpt; i++) {
		if (npt_in(want, &have->npt[i]))
			continue;
		if (xdpr_npt_del(x, have->npt[i].dev, (const __u8 *)have->npt[i].r.inside, have->npt[i].r.plen))
			return ERR("nat del npt %s: %s", have->npt[i].dev, x->err);
		d->nat_deleted++;
	}
	for (int i = 0; i < want->nnpt; i++) {
		if (npt_in(have, &want->npt[i]))
			continue;
		if (xdpr_npt_add(x, want->npt[i].dev, &want->npt[i].r))
			return ERR("%sline %zu: %s", want->name, want->npt[i].line, x->err);
		d->nat_added++;
	}
	return 0;
}

static int add_nat(struct conf *c, int argc, char **argv, size_t line, char *err, size_t len)
{
	bool fwd = argc > 0 && !strcmp(argv[0], "in");
	struct nat_rule_args a;
	struct conf_nat *n;

	if (fwd ? parse_nat_fwd(argc, argv, &a, false, err, len) : parse_nat_rule(argc, argv, &a, err, len))
		return EXIT_USAGE;
	for (int k = 0; k < c->nnat; k++)
		if (fwd && (c->nat[k].r.flags & XDPR_NAT_FWD) && !strcmp(c->nat[k].dev, a.dev) &&
		    fwd_overlap(&c->nat[k].r, &a.r))
			return snprintf(err, len, "a forward of these ports on in %s is already on line %zu",
					a.dev, c->nat[k].line), EXIT_USAGE;
	for (int k = 0; k < c->nnat && !fwd; k++)
		if (!(c->nat[k].r.flags & XDPR_NAT_FWD) && !strcmp(c->nat[k].dev, a.dev) &&
		    c->nat[k].r.src_net == a.r.src_net &&
		    c->nat[k].r.src_mask == a.r.src_mask)
			return snprintf(err, len, "a rule for out %s with this src is already on line %zu",
					a.dev, c->nat[k].line), EXIT_USAGE;
	if (c->nnat >= XDPR_NAT_MAX_RULES - 1)
		return snprintf(err, len, "at most %d NAT rules", XDPR_NAT_MAX_RULES - 1), EXIT_FAIL;
	n = &c->nat[c->nnat++];
	snprintf(n->dev, sizeof(n->dev), "%s", a.dev);
	n->r = a.r;
	n->line = line;
	if ((c->flags & CONF_P_PRESENT) && !if_nametoindex(a.dev))
		wait_for(c, a.dev); /* the rule waits for it in the kernel (conf_apply) */
	return 0;
}

static int add_route(struct conf *c, int argc, char **argv, size_t line, char *err, size_t len)
{
	size_t cap = c->route_cap;
	int ret;

	if (grow((void **)&c->route, sizeof(*c->route), &c->route_cap, c->nroute + 1))
		return ERR("out of memory");
	if (c->route_cap != cap || !c->route_line) {
		size_t *m = realloc(c->route_line, c->route_cap * sizeof(*m));

		if (!m)
			return ERR("out of memory");
		c->route_line = m;
	}
	ret = parse_route(argc, argv, &c->route[c->nroute], err, len);
	if (ret == EXIT_FAIL && (c->flags & CONF_P_PRESENT)) {
		/* the only EXIT_FAIL: a next hop's device is missing */
		for (int i = 0; i + 3 < argc; i++)
			if (!strcmp(argv[i + 2], "dev") && !if_nametoindex(argv[i + 3]))
				wait_for(c, argv[i + 3]);
		return 0;
	}
	if (ret)
		return ret;
	c->route_line[c->nroute++] = line;
	return 0;
}

static struct xdpr_flt_set *set_get(struct conf *c, const char *name)
{
	struct xdpr_flt_set *s = xdpr_flt_set_find(&c->flt, name), *m;

	if (s)
		return s;
	m = realloc(c->flt.sets, (c->flt.nsets + 1) * sizeof(*m));
	if (!m)
		return NULL;
	c->flt.sets = m;
	s = &m[c->flt.nsets++];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	return s;
}

static int add_set(struct conf *c, int argc, char **argv, char *err, size_t len)
{
	struct xdpr_flt_member *m;
	struct xdpr_flt_set *s;

	if (argc < 1) /* a set without members: "set add NAME" */
		return snprintf(err, len, "\"set add\" needs a set name"), EXIT_USAGE;
	if (!set_name_ok(argv[0]))
		return snprintf(err, len, "invalid set name \"%s\" (1-%d of A-Z a-z 0-9 _ . -)",
				argv[0], XDPR_SET_NAMESZ - 1), EXIT_USAGE;
	if (!xdpr_flt_set_find(&c->flt, argv[0]) && c->flt.nsets >= XDPR_FLT_MAX_SETS)
		return ERR("at most %d sets", XDPR_FLT_MAX_SETS);
	s = set_get(c, argv[0]);
	if (!s)
		return ERR("out of memory");
	m = realloc(s->m, (s->n + argc) * sizeof(*m));
	if (!m)
		return ERR("out of memory");
	s->m = m;
	for (int i = 1; i < argc; i++)
		if (parse_member(argv[i], &s->m[s->n++], err, len))
			return EXIT_USAGE;
	return 0;
}

static int add_filter(struct conf *c, int argc, char **argv, size_t line, char *err, size_t len)
{
	int ret;

	if (c->flt.n >= XDPR_FLT_MAX_RULES)
		return ERR("the filter holds at most %d rules", XDPR_FLT_MAX_RULES);
	if (c->flt.n == c->flt_cap) {
		size_t nc = c->flt_cap ? 2 * c->flt_cap : 256;
		struct xdpr_flt_spec *r = realloc(c->flt.r, nc * sizeof(*r));
		size_t *l = r ? realloc(c->flt_line, nc * sizeof(*l)) : NULL;

		if (r)
			c->flt.r = r;
		if (l)
			c->flt_line = l;
		if (!r || !l)
			return ERR("out of memory");
		c->flt_cap = nc;
	}
	ret = parse_filter_rule(argc, argv, &c->flt.r[c->flt.n], err, len);
	if (ret)
		return ret;
	c->flt_line[c->flt.n++] = line;
	return 0;
}

static int once(size_t *where, size_t line, const char *what, char *err, size_t len)
{
	if (*where)
		return snprintf(err, len, "%s is already given on line %zu", what, *where), EXIT_USAGE;
	*where = line;
	return 0;
}

int conf_addr_port(const char *s, struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN + 2], *colon;
	unsigned long port;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	colon = strrchr(s, ':');
	if (!colon)
		return -1;
	if (parse_uint(colon + 1, 1, 65535, &port))
		return -2;
	hl = (size_t)(colon - s);
	if (hl >= sizeof(host))
		return -3;
	memcpy(host, s, hl);
	host[hl] = 0;
	if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		host[hl - 1] = 0;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		return inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1 ? 0 : -3;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	return inet_pton(AF_INET, host, &s4->sin_addr) == 1 ? 0 : -3;
}

bool conf_export_same(const struct conf_export *a, const struct conf_export *b)
{
	if (a->n != b->n || a->active != b->active || a->inactive != b->inactive || a->sample != b->sample ||
	    a->nat_events != b->nat_events)
		return false;
	for (int i = 0; i < a->n; i++)
		if (a->coll[i].fmt != b->coll[i].fmt || strcmp(a->coll[i].text, b->coll[i].text))
			return false;
	return true;
}

static const char *export_fmt_name(enum conf_export_fmt f)
{
	return f == CONF_EXPORT_IPFIX ? "ipfix" : "netflow9";
}

/* "export ..." (the words after "export") */
static int add_export(struct conf *c, int argc, char **argv, size_t line, char *err, size_t len)
{
	static const char usage[] = "expected \"export { ipfix | netflow9 } ADDR:PORT\", \"export "
				    "{ active-timeout | inactive-timeout } SECONDS\", \"export sample N\" "
				    "or \"export nat-events { on | off }\"";
	struct conf_export *e = &c->exp;
	unsigned long v;

	if (argc != 2)
		return snprintf(err, len, "%s", usage), EXIT_USAGE;
	if (!strcmp(argv[0], "ipfix") || !strcmp(argv[0], "netflow9")) {
		enum conf_export_fmt fmt = argv[0][0] == 'i' ? CONF_EXPORT_IPFIX : CONF_EXPORT_NF9;
		struct conf_collector *k;
		struct sockaddr_storage ss;
		char a[INET6_ADDRSTRLEN];
		int r = conf_addr_port(argv[1], &ss);

		if (r == -1 || r == -2)
			return snprintf(err, len, "invalid collector \"%s\" (ADDR:PORT or [ADDR]:PORT, "
					"port 1-65535)", argv[1]), EXIT_USAGE;
		if (r)
			return snprintf(err, len, "invalid collector address in \"%s\" (an IPv4 or "
					"[IPv6] address, not a name)", argv[1]), EXIT_USAGE;
		if (ss.ss_family == AF_INET ?
		    ((struct sockaddr_in *)&ss)->sin_addr.s_addr == INADDR_ANY :
		    IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&ss)->sin6_addr))
			return snprintf(err, len, "invalid collector address in \"%s\" (unspecified)",
					argv[1]), EXIT_USAGE;
		if (e->n >= CONF_EXPORT_MAX)
			return snprintf(err, len, "at most %d collectors", CONF_EXPORT_MAX), EXIT_USAGE;
		k = &e->coll[e->n];
		k->fmt = fmt;
		k->addr = ss;
		k->line = line;
		if (ss.ss_family == AF_INET)
			snprintf(k->text, sizeof(k->text), "%s:%u",
				 inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, a, sizeof(a)),
				 ntohs(((struct sockaddr_in *)&ss)->sin_port));
		else
			snprintf(k->text, sizeof(k->text), "[%s]:%u",
				 inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, a, sizeof(a)),
				 ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
		for (int i = 0; i < e->n; i++)
			if (e->coll[i].fmt == fmt && !strcmp(e->coll[i].text, k->text))
				return snprintf(err, len, "export %s %s is already on line %zu", argv[0],
						k->text, e->coll[i].line), EXIT_USAGE;
		e->n++;
		return 0;
	}
	if (!strcmp(argv[0], "active-timeout") || !strcmp(argv[0], "inactive-timeout")) {
		bool act = argv[0][0] == 'a';

		if (parse_uint(argv[1], 1, CONF_EXPORT_TMAX, &v))
			return snprintf(err, len, "invalid %s \"%s\" (seconds, 1 to %d)", argv[0], argv[1],
					CONF_EXPORT_TMAX), EXIT_USAGE;
		*(act ? &e->active : &e->inactive) = v;
		return once(act ? &e->active_line : &e->inactive_line, line, act ? "export active-timeout" :
			    "export inactive-timeout", err, len);
	}
	if (!strcmp(argv[0], "sample")) {
		if (parse_uint(argv[1], 1, 65535, &v))
			return snprintf(err, len, "invalid sample \"%s\" (1:N sampling, N 1 to 65535)",
					argv[1]), EXIT_USAGE;
		e->sample = v;
		return once(&e->sample_line, line, "export sample", err, len);
	}
	if (!strcmp(argv[0], "nat-events")) {
		if (strcmp(argv[1], "on") && strcmp(argv[1], "off"))
			return snprintf(err, len, "invalid nat-events \"%s\" (on or off)", argv[1]), EXIT_USAGE;
		e->nat_events = !strcmp(argv[1], "on");
		return once(&e->nat_events_line, line, "export nat-events", err, len);
	}
	return snprintf(err, len, "%s", usage), EXIT_USAGE;
}

bool conf_ddos_same(const struct conf_ddos *a, const struct conf_ddos *b)
{
	if (a->nprot != b->nprot || a->pps != b->pps || a->mbps != b->mbps || a->window != b->window ||
	    a->ban_time != b->ban_time || a->sample != b->sample || a->table != b->table ||
	    a->action != b->action || a->sources != b->sources)
		return false;
	for (int i = 0; i < a->nprot; i++)
		if (a->prot[i].family != b->prot[i].family || a->prot[i].plen != b->prot[i].plen ||
		    memcmp(a->prot[i].addr, b->prot[i].addr, 16))
			return false;
	return true;
}

/* "ddos ..." (the words after "ddos") */
static int add_ddos(struct conf *c, int argc, char **argv, size_t line, char *err, size_t len)
{
	static const char usage[] = "expected \"ddos protect PREFIX\", \"ddos threshold { pps | mbps } N\", "
				    "\"ddos window SECONDS\", \"ddos ban-time SECONDS\", \"ddos action { drop | "
				    "blackhole | both }\", \"ddos blackhole-table N\", \"ddos sample N\" or "
				    "\"ddos ban-sources { on | off }\"";
	struct conf_ddos *d = &c->ddos;
	unsigned long v;

	if (argc == 2 && !strcmp(argv[0], "protect")) {
		struct xdpr_route_spec rs;
		struct conf_ddos_prot *p;

		if (parse_prefix(argv[1], &rs, err, len))
			return EXIT_USAGE;
		for (int i = 0; i < d->nprot; i++)
			if (d->prot[i].family == rs.family && d->prot[i].plen == (int)rs.plen &&
			    !memcmp(d->prot[i].addr, rs.addr, 16))
				return snprintf(err, len, "ddos protect %s is already on line %zu", argv[1],
						d->prot[i].line), EXIT_USAGE;
		if (d->nprot >= CONF_DDOS_PROT_MAX)
			return snprintf(err, len, "at most %d protected prefixes", CONF_DDOS_PROT_MAX), EXIT_USAGE;
		p = &d->prot[d->nprot++];
		p->family = rs.family;
		memcpy(p->addr, rs.addr, 16);
		p->plen = rs.plen;
		p->line = line;
		return 0;
	}
	if (argc == 3 && !strcmp(argv[0], "threshold") && (!strcmp(argv[1], "pps") || !strcmp(argv[1], "mbps"))) {
		bool pps = argv[1][0] == 'p';

		if (parse_uint(argv[2], 0, pps ? 1000000000UL : 1000000UL, &v))
			return snprintf(err, len, "invalid threshold %s \"%s\" (0: none, up to %s)", argv[1], argv[2],
					pps ? "1000000000" : "1000000"), EXIT_USAGE;
		*(pps ? &d->pps : &d->mbps) = v;
		return once(pps ? &d->pps_line : &d->mbps_line, line, pps ? "ddos threshold pps" :
			    "ddos threshold mbps", err, len);
	}
	if (argc == 2 && !strcmp(argv[0], "window")) {
		if (parse_uint(argv[1], 1, CONF_DDOS_WINDOW_MAX, &v))
			return snprintf(err, len, "invalid window \"%s\" (seconds, 1 to %d)", argv[1],
					CONF_DDOS_WINDOW_MAX), EXIT_USAGE;
		d->window = v;
		return once(&d->window_line, line, "ddos window", err, len);
	}
	if (argc == 2 && !strcmp(argv[0], "ban-time")) {
		if (parse_uint(argv[1], 1, CONF_DDOS_BAN_MAX, &v))
			return snprintf(err, len, "invalid ban-time \"%s\" (seconds, 1 to %d)", argv[1],
					CONF_DDOS_BAN_MAX), EXIT_USAGE;
		d->ban_time = v;
		return once(&d->ban_line, line, "ddos ban-time", err, len);
	}
	if (argc == 2 && !strcmp(argv[0], "action")) {
		if (!strcmp(argv[1], "drop"))
			d->action = XDPR_DDOS_F_DROP;
		else if (!strcmp(argv[1], "blackhole"))
			d->action = XDPR_DDOS_F_BLACKHOLE;
		else if (!strcmp(argv[1], "both"))
			d->action = XDPR_DDOS_F_DROP | XDPR_DDOS_F_BLACKHOLE;
		else
			return snprintf(err, len, "invalid action \"%s\" (drop, blackhole or both)", argv[1]),
			       EXIT_USAGE;
		return once(&d->action_line, line, "ddos action", err, len);
	}
	if (argc == 2 && !strcmp(argv[0], "blackhole-table")) {
		if (parse_uint(argv[1], 1, 0xffffffffUL, &v) || v == 253 || v == 254 || v == 255)
			return snprintf(err, len, "invalid blackhole-table \"%s\" (1 to 4294967295, not 253-255: "
					"default, main, local)", argv[1]), EXIT_USAGE;
		d->table = v;
		return once(&d->table_line, line, "ddos blackhole-table", err, len);
	}
	if (argc == 2 && !strcmp(argv[0], "sample")) {
		if (parse_uint(argv[1], 1, 1024, &v))
			return snprintf(err, len, "invalid sample \"%s\" (1 in N packets, N 1 to 1024)", argv[1]),
			       EXIT_USAGE;
		d->sample = v;
		return once(&d->sample_line, line, "ddos sample", err, len);
	}
	if (argc == 2 && !strcmp(argv[0], "ban-sources")) {
		if (strcmp(argv[1], "on") && strcmp(argv[1], "off"))
			return snprintf(err, len, "invalid ban-sources \"%s\" (on or off)", argv[1]), EXIT_USAGE;
		d->sources = argv[1][1] == 'n';
		return once(&d->sources_line, line, "ddos ban-sources", err, len);
	}
	return snprintf(err, len, "%s", usage), EXIT_USAGE;
}

static int conf_line(struct conf *c, int n, char **w, size_t line, char *err, size_t len)
{
#define IS(a, b) (n >= 2 && !strcmp(w[0], a) && !strcmp(w[1], b))
	if (IS("link", "attach"))
		return add_links(c, n - 2, w + 2, line, err, len);
	if (IS("nat", "add") && n > 2 && !strcmp(w[2], "npt"))
		return add_npt(c, n - 2, w + 2, line, err, len);
	if (IS("nat", "add") && n >= 3 && !strcmp(w[2], "binat"))
		return conf_add_binat(c, n - 3, w + 3, line, err, len); /* cli/binat.c */
	if (IS("nat", "add"))
		return add_nat(c, n - 2, w + 2, line, err, len);
	if (IS("nat", "timeout") || IS("nat", "limit"))
		return add_knobs(c, w[1], n - 2, w + 2, line, err, len);
	if (IS("route", "add"))
		return add_route(c, n - 2, w + 2, line, err, len);
	if (IS("set", "add"))
		return add_set(c, n - 2, w + 2, err, len);
	if (IS("filter", "add"))
		return add_filter(c, n - 2, w + 2, line, err, len);
	if (IS("filter", "policy")) {
		if (n != 3 || (strcmp(w[2], "accept") && strcmp(w[2], "drop")))
			return snprintf(err, len, "expected \"filter policy { accept | drop }\""), EXIT_USAGE;
		c->flt.policy = w[2][0] == 'a' ? XDPR_FLT_ACCEPT : XDPR_FLT_DROP;
		return once(&c->policy_line, line, "the filter policy", err, len);
	}
	if (!strcmp(w[0], "on-stop")) {
		if (n != 2 || (strcmp(w[1], "keep") && strcmp(w[1], "detach")))
			return snprintf(err, len, "expected \"on-stop { keep | detach }\""), EXIT_USAGE;
		c->on_stop = w[1][0] == 'k' ? CONF_STOP_KEEP : CONF_STOP_DETACH;
		return once(&c->on_stop_line, line, "on-stop", err, len);
	}
	if (!strcmp(w[0], "on-reload")) {
		if (n != 2 || (strcmp(w[1], "guard") && strcmp(w[1], "force")))
			return snprintf(err, len, "expected \"on-reload { guard | force }\""), EXIT_USAGE;
		c->on_reload = w[1][0] == 'g' ? CONF_RELOAD_GUARD : CONF_RELOAD_FORCE;
		return once(&c->on_reload_line, line, "on-reload", err, len);
	}
	if (!strcmp(w[0], "export"))
		return add_export(c, n - 1, w + 1, line, err, len);
	if (!strcmp(w[0], "ddos"))
		return add_ddos(c, n - 1, w + 1, line, err, len);
#undef IS
	return snprintf(err, len, "\"%s%s%s\" is not a configuration command (link attach, nat add, "
			"nat limit, nat timeout, route add, set add, filter add, filter policy, on-stop, "
			"on-reload, export, ddos)",
			w[0], n > 1 ? " " : "", n > 1 ? w[1] : ""), EXIT_USAGE;
}

static int member_order(const void *a, const void *b)
{
	const struct xdpr_flt_member *x = a, *y = b;

	if (x->family != y->family)
		return x->family - y->family;
	if (x->plen != y->plen)
		return x->plen - y->plen;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

static int route_order(const void *a, const void *b)
{
	const struct xdpr_route_spec *x = a, *y = b;

	if (x->family != y->family)
		return x->family - y->family;
	if (x->plen != y->plen)
		return x->plen < y->plen ? -1 : 1;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

/* Route indexes by prefix, then by line (the earlier one first). */
static const struct xdpr_route_spec *route_base;

static int index_order(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = route_order(&route_base[x], &route_base[y]);

	return c ? c : x < y ? -1 : x > y;
}

static void fmt_prefix(int family, const __u8 *addr, unsigned int plen, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(family, addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, plen);
}

/* What a file says across lines: sets named by rules exist, nothing given twice. */
static int conf_check(struct conf *c, const char *name, char *err, size_t len)
{
	char p[64];

	for (size_t i = 0; i < c->flt.n; i++) {
		const struct xdpr_flt_addr *a[2] = { &c->flt.r[i].src, &c->flt.r[i].dst };

		for (int k = 0; k < 2; k++)
			if (a[k]->kind == XDPR_FA_SET && !xdpr_flt_set_find(&c->flt, a[k]->set))
				return ERR("%s line %zu: no \"set add %s\" line for this rule", name,
					   c->flt_line[i], a[k]->set);
	}
	for (size_t i = 0; i < c->flt.nsets; i++) {
		struct xdpr_flt_set *s = &c->flt.sets[i];

		qsort(s->m, s->n, sizeof(*s->m), member_order);
		for (size_t k = 1; k < s->n; k++)
			if (!member_order(&s->m[k - 1], &s->m[k])) {
				fmt_prefix(s->m[k].family, s->m[k].addr, s->m[k].plen, p, sizeof(p));
				return ERR("%s: %s is listed twice in set \"%s\"", name, p, s->name);
			}
		if (s->n > XDPR_SET_MAX)
			return ERR("%s: set \"%s\" has %zu members (at most %d)", name, s->name, s->n,
				   XDPR_SET_MAX);
	}
	/* a prefix listed twice: name both lines */
	if (c->nroute > 1) {
		size_t *ord = malloc(c->nroute * sizeof(*ord));

		if (!ord)
			return ERR("out of memory");
		for (size_t i = 0; i < c->nroute; i++)
			ord[i] = i;
		route_base = c->route;
		qsort(ord, c->nroute, sizeof(*ord), index_order);
		for (size_t i = 1; i < c->nroute; i++) {
			const struct xdpr_route_spec *a = &c->route[ord[i - 1]], *b = &c->route[ord[i]];

			if (route_order(a, b))
				continue;
			fmt_prefix(b->family, b->addr, b->plen, p, sizeof(p));
			snprintf(err, len, "%s line %zu: route %s is already on line %zu", name,
				 c->route_line[ord[i]], p, c->route_line[ord[i - 1]]);
			free(ord);
			return EXIT_FAIL;
		}
		free(ord);
	}
	return 0;
}

/* A line's bytes for an error message: printable ASCII as is, the rest as \xNN; at most 48 of them. */
static const char *escaped(const char *p, ssize_t n, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	for (ssize_t i = 0; i < n && i < 48 && at + 8 < len; i++) {
		unsigned char b = p[i];

		if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\')
			buf[at++] = b;
		else
			at += snprintf(buf + at, len - at, "\\x%02x", b);
	}
	if (n > 48 && at + 4 < len)
		at += snprintf(buf + at, len - at, "...");
	buf[at] = 0;
	return buf;
}

int conf_parse(FILE *f, const char *name, unsigned int flags, struct conf *c, char *err, size_t len)
{
	char *line = NULL, **w = NULL, e[1024];
	size_t lcap = 0, wcap = 0, lineno = 0;
	ssize_t got;
	int ret = 0;

	conf_init(c);
	c->flags = flags;
	snprintf(c->name, sizeof(c->name), "%s ", name);
	while ((got = getline(&line, &lcap, f)) >= 0) {
		char *hash = memchr(line, '#', got), *start = line;
		int n;

		lineno++;
		if (hash) {
			*hash = 0;
			got = hash - line;
		}
		/* a UTF-8 byte order mark (some editors write one) starts the file */
		if (lineno == 1 && got >= 3 && !memcmp(line, "\xef\xbb\xbf", 3)) {
			start += 3;
			got -= 3;
		}
		/* words are printable ASCII (comments may hold anything) */
		for (ssize_t i = 0; i < got; i++) {
			unsigned char b = start[i];

			if ((b >= 0x20 && b < 0x7f) || b == '\t' || b == '\r' || b == '\n')
				continue;
			snprintf(err, len, "%s line %zu: byte \\x%02x at column %zd: a configuration is "
				 "printable ASCII outside comments: \"%s\"", name, lineno, b, i + 1,
				 escaped(start, got, e, sizeof(e)));
			ret = EXIT_USAGE;
			break;
		}
		if (ret)
			break;
		n = split(start, &w, &wcap);
		if (n < 0) {
			ret = ERR("%s line %zu: out of memory", name, lineno);
			break;
		}
		if (!n)
			continue;
		ret = conf_line(c, n, w, lineno, e, sizeof(e));
		if (ret) {
			snprintf(err, len, "%s line %zu: %s", name, lineno, e);
			break;
		}
	}
	if (!ret && ferror(f))
		ret = ERR("cannot read \"%s\": %s", name, strerror(errno));
	if (!ret)
		ret = conf_check(c, name, err, len);
	free(line);
	free(w);
	if (ret)
		conf_free(c);
	return ret;
}

/* ---- the running state ---- */

struct route_acc {
	struct conf *c;
	int err;
};

static int take_route(const struct xdpr_route_info *ri, void *arg)
{
	struct route_acc *ra = arg;
	struct conf *c = ra->c;

	if (grow((void **)&c->route, sizeof(*c->route), &c->route_cap, c->nroute + 1)) {
		ra->err = -ENOMEM;
		return 1;
	}
	c->route[c->nroute++] = ri->spec;
	return 0;
}

int conf_read(struct xdpr *x, struct conf *c, char *err, size_t len)
{
	static struct xdpr_rule_info ri[XDPR_NAT_MAX_RULES];
	struct route_acc ra = { c, 0 };
	struct xdpr_cfg cfg;
	int n;

	conf_init(c);
	/* ports: their VLANs come with them, never in a file of their own */
	for (int i = 0; i < x->nlinks; i++) {
		struct conf_link *l = &c->link[c->nlink];

		if (x->links[i].parent)
			continue;
		snprintf(l->name, sizeof(l->name), "%s", x->links[i].name);
		l->mode = x->links[i].mode;
		l->force = x->links[i].forced;
		c->nlink++;
	}
	if (!x->nlinks)
		return 0;
	/* gone interfaces were attached and are expected back: saved by name */
	for (int i = 0; i < x->ngone && c->nlink < XDPR_MAX_IFACES; i++) {
		struct conf_link *l;

		if (x->gone[i].vlan)
			continue;
		l = &c->link[c->nlink++];

		snprintf(l->name, sizeof(l->name), "%s", x->gone[i].name);
		l->mode = x->gone[i].mode;
		l->force = x->gone[i].forced;
		l->gone = true;
		l->old_ifindex = x->gone[i].old_ifindex;
	}
	if (xdpr_cfg_get(x, &cfg))
		goto fail;
	for (size_t k = 0; k < NKNOBS; k++)
		*knob_at(&c->knobs, k) = knob_get(&cfg, k);
	n = xdpr_nat_list(x, ri, XDPR_NAT_MAX_RULES);
	if (n < 0)
		goto fail;
	for (int i = 0; i < n; i++) {
		snprintf(c->nat[i].dev, sizeof(c->nat[i].dev), "%s", ri[i].dev);
		c->nat[i].r = ri[i].r;
	}
	c->nnat = n;
	{ /* NPTv6 rules */
		static struct xdpr_npt_info ni[XDPR_NPT_MAX];

		n = xdpr_npt_list(x, ni, XDPR_NPT_MAX);
		if (n < 0)
			goto fail;
		for (int i = 0; i < n; i++) {
			snprintf(c->npt[i].dev, sizeof(c->npt[i].dev), "%s", ni[i].dev);
			c->npt[i].r = ni[i].r;
		}
		c->nnpt = n;
	}
	if (conf_read_binat(x, c)) /* cli/binat.c */
		goto fail;
	if (xdpr_route_foreach(x, NULL, take_route, &ra))
		goto fail;
	if (ra.err) {
		conf_free(c);
		return ERR("out of memory");
	}
	xdpr_flt_list_free(&c->flt);
	if (xdpr_flt_get(x, &c->flt))
		goto fail;
	return 0;
fail:
	conf_free(c);
	return ERR("%s", x->err);
}

/* ---- printing ---- */

static void print_nat(FILE *f, const struct conf_nat *n)
{
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	const struct xdpr_nat_rule *r = &n->r;

	if (r->flags & XDPR_NAT_FWD) {
		char w[160];

		xdpr_fwd_format(r, w, sizeof(w));
		fprintf(f, "nat add in %s %s\n", n->dev, w);
		return;
	}
	fprintf(f, "nat add out %s", n->dev);
	if (r->flags & XDPR_NAT_MASQ) {
		fprintf(f, " masquerade");
	} else {
		__be32 last = htonl(ntohl(r->pool_first) + r->pool_count - 1);

		inet_ntop(AF_INET, &r->pool_first, a, sizeof(a));
		inet_ntop(AF_INET, &last, b, sizeof(b));
		if (r->pool_count == 1)
			fprintf(f, " to %s", a);
		else
			fprintf(f, " to %s-%s", a, b);
	}
	if (r->src_mask) {
		inet_ntop(AF_INET, &r->src_net, a, sizeof(a));
		fprintf(f, " src %s/%d", a, __builtin_popcount(r->src_mask));
	}
	if (r->port_min != 1024 || r->port_max != 65535)
		fprintf(f, " ports %u-%u", r->port_min, r->port_max);
	if (r->flags & XDPR_NAT_EIF)
		fprintf(f, " filter eif");
	fputc('\n', f);
}

/* A next hop's device by name: a gone interface's under the ifindex it had. */
static void nh_dev(const struct conf *c, __u32 ifindex, char *dev)
{
	if (if_indextoname(ifindex, dev))
		return;
	for (int i = 0; i < c->nlink; i++)
		if (c->link[i].gone && c->link[i].old_ifindex == ifindex) {
			snprintf(dev, IF_NAMESIZE, "%s", c->link[i].name);
			return;
		}
	snprintf(dev, IF_NAMESIZE, "if%u", ifindex);
}

static void print_route(FILE *f, const struct conf *c, const struct xdpr_route_spec *s)
{
	char p[INET6_ADDRSTRLEN + 8], a[INET6_ADDRSTRLEN], dev[IF_NAMESIZE];

	fmt_prefix(s->family, s->addr, s->plen, p, sizeof(p));
	fprintf(f, "route add %s", p);
	if (s->r.action == XDPR_RT_BLACKHOLE) {
		fprintf(f, " blackhole\n");
		return;
	}
	if (s->r.action == XDPR_RT_PASS) {
		fprintf(f, " pass\n");
		return;
	}
	for (int i = 0; i < s->r.nnh && i < XDPR_RT_MAX_NH; i++) {
		inet_ntop(s->family, s->r.nh[i].gw, a, sizeof(a));
		nh_dev(c, s->r.nh[i].ifindex, dev);
		fprintf(f, " via %s dev %s", a, dev);
	}
	fputc('\n', f);
}

void conf_print(FILE *f, const struct conf *c)
{
	char buf[512];

	/* one line per mode (and force), in attach order */
	for (int m = 0; m < 4; m++) {
		enum xdpr_mode mode = m & 1 ? XDPR_MODE_SKB : XDPR_MODE_NATIVE;
		bool force = m & 2;
		int k = 0;

		for (int i = 0; i < c->nlink; i++) {
			if (c->link[i].mode != mode || c->link[i].force != force)
				continue;
			fprintf(f, "%s %s", k++ ? "" : "link attach", c->link[i].name);
		}
		if (k)
			fprintf(f, "%s%s\n", mode == XDPR_MODE_SKB ? " mode skb" : "", force ? " force" : "");
	}
	for (const char *cmd = "limit"; cmd; cmd = !strcmp(cmd, "limit") ? "timeout" : NULL) {
		int k = 0;

		for (size_t i = 0; i < NKNOBS; i++) {
			if (strcmp(knob[i].cmd, cmd) || knob_get(&c->knobs, i) == knob[i].def)
				continue;
			fprintf(f, "%s %s %u", k++ ? "" : !strcmp(cmd, "limit") ? "nat limit" : "nat timeout",
				knob[i].word, knob_get(&c->knobs, i));
		}
		if (k)
			fputc('\n', f);
	}
	/* source NAT rules, then forwards: the same file whichever was added first */
	for (int fwd = 0; fwd < 2; fwd++)
		for (int i = 0; i < c->nnat; i++)
			if (!(c->nat[i].r.flags & XDPR_NAT_FWD) == !fwd)
				print_nat(f, &c->nat[i]);
	for (int i = 0; i < c->nnpt; i++) { /* NPTv6 */
		__u8 a[16] = {}, b[16] = {};
		char sa[INET6_ADDRSTRLEN], sb[INET6_ADDRSTRLEN];

		memcpy(a, c->npt[i].r.inside, 8);
		memcpy(b, c->npt[i].r.outside, 8);
		fprintf(f, "nat add npt %s inside %s/%u outside %s/%u\n", c->npt[i].dev,
			inet_ntop(AF_INET6, a, sa, sizeof(sa)), c->npt[i].r.plen,
			inet_ntop(AF_INET6, b, sb, sizeof(sb)), c->npt[i].r.plen);
	}
	conf_print_binat(f, c); /* cli/binat.c */
	{
		/* routes in prefix order: the same file whatever order they were added in */
		struct xdpr_route_spec *rs = malloc((c->nroute ? c->nroute : 1) * sizeof(*rs));

		if (rs) {
			memcpy(rs, c->route, c->nroute * sizeof(*rs));
			qsort(rs, c->nroute, sizeof(*rs), route_order);
			for (size_t i = 0; i < c->nroute; i++)
				print_route(f, c, &rs[i]);
			free(rs);
		} else {
			for (size_t i = 0; i < c->nroute; i++)
				print_route(f, c, &c->route[i]);
		}
	}
	/* sets: 32 members a line */
	for (size_t i = 0; i < c->flt.nsets; i++) {
		const struct xdpr_flt_set *s = &c->flt.sets[i];

		if (!s->n)
			fprintf(f, "set add %s\n", s->name);
		for (size_t k = 0; k < s->n; k++) {
			if (!(k % 32))
				fprintf(f, "set add %s", s->name);
			fmt_prefix(s->m[k].family, s->m[k].addr, s->m[k].plen, buf, sizeof(buf));
			fprintf(f, " %s", buf);
			if (k % 32 == 31 || k + 1 == s->n)
				fputc('\n', f);
		}
	}
	if (c->flt.policy == XDPR_FLT_DROP)
		fprintf(f, "filter policy drop\n");
	for (size_t i = 0; i < c->flt.n; i++) {
		fmt_filter_rule(&c->flt.r[i], buf, sizeof(buf));
		fprintf(f, "filter add %s\n", buf);
	}
	/* flow export: a file's only (the running state has none: it is xdprd's) */
	for (int i = 0; i < c->exp.n; i++)
		fprintf(f, "export %s %s\n", export_fmt_name(c->exp.coll[i].fmt), c->exp.coll[i].text);
	if (c->exp.active != CONF_EXPORT_ACTIVE)
		fprintf(f, "export active-timeout %u\n", c->exp.active);
	if (c->exp.inactive != CONF_EXPORT_INACTIVE)
		fprintf(f, "export inactive-timeout %u\n", c->exp.inactive);
	if (c->exp.sample != 1)
		fprintf(f, "export sample %u\n", c->exp.sample);
	if (c->exp.nat_events)
		fprintf(f, "export nat-events on\n");
	/* DDoS detection: a file's only, like export */
	for (int i = 0; i < c->ddos.nprot; i++) {
		char a[INET6_ADDRSTRLEN];

		fprintf(f, "ddos protect %s/%d\n", inet_ntop(c->ddos.prot[i].family, c->ddos.prot[i].addr, a,
							     sizeof(a)), c->ddos.prot[i].plen);
	}
	if (c->ddos.pps != CONF_DDOS_PPS)
		fprintf(f, "ddos threshold pps %llu\n", (unsigned long long)c->ddos.pps);
	if (c->ddos.mbps != CONF_DDOS_MBPS)
		fprintf(f, "ddos threshold mbps %llu\n", (unsigned long long)c->ddos.mbps);
	if (c->ddos.window != CONF_DDOS_WINDOW)
		fprintf(f, "ddos window %u\n", c->ddos.window);
	if (c->ddos.ban_time != CONF_DDOS_BAN)
		fprintf(f, "ddos ban-time %u\n", c->ddos.ban_time);
	if (c->ddos.action != XDPR_DDOS_F_DROP)
		fprintf(f, "ddos action %s\n", c->ddos.action == XDPR_DDOS_F_BLACKHOLE ? "blackhole" : "both");
	if (c->ddos.table != CONF_DDOS_TABLE)
		fprintf(f, "ddos blackhole-table %u\n", c->ddos.table);
	if (c->ddos.sample != 1)
		fprintf(f, "ddos sample %u\n", c->ddos.sample);
	if (c->ddos.sources)
		fprintf(f, "ddos ban-sources on\n");
}

/* ---- applying ---- */

static const struct conf_link *link_in(const struct conf *c, const char *name)
{
	for (int i = 0; i < c->nlink; i++)
		if (!strcmp(c->link[i].name, name))
			return &c->link[i];
	return NULL;
}

/* Attached now (a gone interface is listed, not attached). */
static const struct conf_link *attached_in(const struct conf *c, const char *name)
{
	const struct conf_link *l = link_in(c, name);

	return l && !l->gone ? l : NULL;
}

/* A forward given no addr (in a file, or running): it follows its interface's address. */
static bool fwd_follows(const struct xdpr_nat_rule *r)
{
	return !r->pool_first || (r->flags & XDPR_NAT_FWD_IFADDR);
}

/* A forward's outside address: the one given, else its interface's primary IPv4 address. */
static __be32 fwd_addr(const struct conf_nat *n)
{
	struct ifaddrs *ifa, *i;
	__be32 a = fwd_follows(&n->r) ? 0 : n->r.pool_first;

	if (a || getifaddrs(&ifa))
		return a;
	for (i = ifa; i && !a; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, n->dev))
			a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
	freeifaddrs(ifa);
	return a;
}

static const struct conf_nat *nat_in(const struct conf *c, const struct conf_nat *n)
{
	bool fwd = n->r.flags & XDPR_NAT_FWD;

	for (int i = 0; i < c->nnat; i++) {
		const struct xdpr_nat_rule *r = &c->nat[i].r;

		if (strcmp(c->nat[i].dev, n->dev) || !(r->flags & XDPR_NAT_FWD) != !fwd)
			continue;
		if (fwd ? fwd_addr(&c->nat[i]) == fwd_addr(n) && r->fwd_proto == n->r.fwd_proto &&
			  r->port_min == n->r.port_min && r->port_max == n->r.port_max :
			  r->src_net == n->r.src_net && r->src_mask == n->r.src_mask)
			return &c->nat[i];
	}
	return NULL;
}

/* Two sources overlap when the shorter prefix holds the longer. */
static bool nat_overlap(const struct xdpr_nat_rule *a, const struct xdpr_nat_rule *b)
{
	__be32 m = a->src_mask & b->src_mask;

	return (a->src_net & m) == (b->src_net & m);
}

static bool nat_same(const struct xdpr_nat_rule *a, const struct xdpr_nat_rule *b)
{
	__u32 f = XDPR_NAT_MASQ | XDPR_NAT_EIF;

	if (a->flags & XDPR_NAT_FWD) /* nat_in matched the address, protocol and outside ports */
		return a->fwd_to == b->fwd_to && a->fwd_port == b->fwd_port && a->fwd_one == b->fwd_one &&
		       fwd_follows(a) == fwd_follows(b);

	return (a->flags & f) == (b->flags & f) && a->port_min == b->port_min &&
	       a->port_max == b->port_max && (a->flags & XDPR_NAT_MASQ ||
	       (a->pool_first == b->pool_first && a->pool_count == b->pool_count));
}

static bool route_same(const struct xdpr_route_spec *a, const struct xdpr_route_spec *b)
{
	if (a->r.action != b->r.action || a->r.nnh != b->r.nnh)
		return false;
	for (int i = 0; i < a->r.nnh && i < XDPR_RT_MAX_NH; i++)
		if (a->r.nh[i].ifindex != b->r.nh[i].ifindex ||
		    memcmp(a->r.nh[i].gw, b->r.nh[i].gw, sizeof(a->r.nh[i].gw)))
			return false;
	return true;
}

/* Sorted copies of both route lists (malloc'd). */
static int sorted_routes(const struct conf *c, struct xdpr_route_spec **out)
{
	*out = malloc((c->nroute ? c->nroute : 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, c->route, c->nroute * sizeof(**out));
	qsort(*out, c->nroute, sizeof(**out), route_order);
	return 0;
}

/* Above this many single changes the route table is rebuilt in one load. */
#define CONF_ROUTE_STEPS 32

static int apply_routes(struct xdpr *x, const struct conf *want, const struct conf *have,
			struct conf_diff *d, char *err, size_t len)
{
	struct xdpr_route_spec *w = NULL, *h = NULL, *ops = NULL;
	size_t i = 0, j = 0, nops = 0, total = 0;
	char p[64];
	int ret = 0;

	if (sorted_routes(want, &w) || sorted_routes(have, &h) ||
	    !(ops = malloc((CONF_ROUTE_STEPS + 1) * sizeof(*ops)))) {
		ret = ERR("out of memory");
		goto out;
	}
	/* ops: a spec to add or replace, or (action 0xff) a prefix to delete; all counted */
	while (i < want->nroute || j < have->nroute) {
		int c = i == want->nroute ? 1 : j == have->nroute ? -1 : route_order(&w[i], &h[j]);

		if (!c && route_same(&w[i], &h[j])) {
			i++, j++;
			continue;
		}
		if (nops > CONF_ROUTE_STEPS) { /* a load: only counted from here */
			total++;
			i += c <= 0;
			j += c >= 0;
			continue;
		}
		total++;
		if (c <= 0) {
			ops[nops] = w[i++];
			ops[nops++].r.id = c ? 0 : 1; /* 1: replace */
			if (!c)
				j++;
		} else {
			ops[nops] = h[j++];
			ops[nops++].r.action = 0xff;
		}
	}
	if (!nops)
		goto out;
	if (nops > CONF_ROUTE_STEPS) {
		if (xdpr_route_load(x, w, (int)want->nroute)) {
			ret = ERR("%s", x->err);
			goto out;
		}
		d->routes_loaded = true;
		d->routes_changed = (int)total;
		goto out;
	}
	for (size_t k = 0; k < nops && !ret; k++) {
		struct xdpr_route_spec *s = &ops[k];
		int e;

		fmt_prefix(s->family, s->addr, s->plen, p, sizeof(p));
		if (s->r.action == 0xff) {
			e = xdpr_route_del(x, s);
		} else {
			bool replace = s->r.id == 1;

			s->r.id = 0;
			e = xdpr_route_add(x, s, replace);
		}
		if (e)
			ret = ERR("%s", x->err);
		else
			d->routes_changed++;
	}
out:
	free(w);
	free(h);
	free(ops);
	return ret;
}

/* Before any change: what the kernel would refuse that can be known now. */
static int precheck(struct xdpr *x, const struct conf *want, const struct conf *have, char *err,
		    size_t len)
{
	static struct xdpr_nf_report nf;
	struct xdpr_route_spec *h = NULL;
	char *devs[XDPR_MAX_IFACES];
	int n = 0, ret = 0;
	bool force = false;

	if (!want->nlink && (want->nnat || want->nroute || want->flt.n || want->flt.nsets ||
			     want->policy_line))
		return want->waiting[0] ?
		       ERR("no interface the file attaches exists yet (waiting for %s): the fast path "
			   "holds no state until one is attached", want->waiting) :
		       ERR("no \"link attach\" line: the fast path holds no state until it is attached");
	for (int i = 0; i < want->nlink; i++) {
		const struct conf_link *l = &want->link[i], *o = attached_in(have, l->name);

		if (o && o->mode != l->mode)
			return ERR("%sline %zu: %s is attached in %s mode (detach it to change the mode)",
				   want->name, l->line, l->name, xdpr_mode_name(o->mode));
		if (o)
			continue;
		if (!if_nametoindex(l->name))
			return ERR("%sline %zu: cannot find device \"%s\"", want->name, l->line, l->name);
		devs[n++] = (char *)l->name;
		force |= l->force;
	}
	if (n && (ret = attach_guard(x, devs, n, force, &nf, err, len)))
		return ret;
	/* routes new or changed: devices and gateways */
	if (sorted_routes(have, &h)) {
		ret = ERR("out of memory");
		goto out;
	}
	for (size_t i = 0; i < want->nroute; i++) {
		const struct xdpr_route_spec *o = bsearch(&want->route[i], h, have->nroute, sizeof(*h),
							  route_order);

		if (o && route_same(o, &want->route[i]))
			continue;
		if (xdpr_route_check(x, &want->route[i])) {
			ret = ERR("%sline %zu: %s", want->name, want->route_line ? want->route_line[i] : 0,
				  x->err);
			goto out;
		}
	}
out:
	free(h);
	return ret;
}

/* The NAT rules of every kind (out, in, npt, binat) on dev; dev NULL: all of them. */
static int nat_rules_on(const struct conf *c, const char *dev)
{
	int n = 0;

	for (int i = 0; i < c->nnat; i++)
		n += !dev || !strcmp(c->nat[i].dev, dev);
	for (int i = 0; i < c->nnpt; i++)
		n += !dev || !strcmp(c->npt[i].dev, dev);
	for (int i = 0; i < c->nbinat; i++)
		n += !dev || !strncmp(c->binat[i].r.ifname, dev, IF_NAMESIZE);
	return n;
}

/*
 * CONF_P_GUARD: what want would do that a reload must not do by mistake (a
 * device name mistyped, a file emptied): detach an interface that has NAT
 * rules (the CLI asks for "force" there), delete every NAT rule, delete
 * every filter rule.  0, or EXIT_FAIL with err saying all it would do.
 */
static int guard(const struct conf *want, const struct conf *have, char *err, size_t len)
{
	char ifs[256] = "", what[3][320];
	int all_nat = nat_rules_on(have, NULL), all_flt = have->flt.n, nifs = 0, n = 0;
	size_t o = 0;

	if (!(want->flags & CONF_P_GUARD) || want->on_reload == CONF_RELOAD_FORCE)
		return 0;
	for (int i = 0; i < have->nlink; i++) {
		const struct conf_link *l = &have->link[i];

		if (l->gone || link_in(want, l->name) || !nat_rules_on(have, l->name))
			continue;
		o += snprintf(ifs + o, o < sizeof(ifs) ? sizeof(ifs) - o : 0, "%s%s", nifs++ ? ", " : "",
			      l->name);
	}
	/* a file that attaches nothing detaches everything: every rule goes with the router */
	if (want->nlink && nat_rules_on(want, NULL))
		all_nat = 0;
	if (want->nlink && want->flt.n)
		all_flt = 0;
	if (nifs)
		snprintf(what[n++], sizeof(what[0]), "detach %s (%s with NAT rules)", ifs,
			 nifs == 1 ? "an interface" : "interfaces");
	if (all_nat)
		snprintf(what[n++], sizeof(what[0]), "delete every NAT rule (%d)", all_nat);
	if (all_flt)
		snprintf(what[n++], sizeof(what[0]), "delete every filter rule (%d)", all_flt);
	if (!n)
		return 0;
	return ERR("the file would %s%s%s%s%s: a mistyped device name or an emptied file? "
		   "\"on-reload force\" in the file applies it", what[0],
		   n == 3 ? ", " : n == 2 ? " and " : "", n >= 2 ? what[1] : "",
		   n == 3 ? " and " : "", n == 3 ? what[2] : "");
}

static int attach_new(struct xdpr *x, const struct conf *want, const struct conf *have,
		      struct conf_diff *d, char *err, size_t len)
{
	static struct xdpr_attach_info info;

	for (int m = XDPR_MODE_NATIVE; m <= XDPR_MODE_SKB; m++) {
		char *devs[XDPR_MAX_IFACES];
		unsigned int flags = 0;
		int n = 0;

		for (int i = 0; i < want->nlink; i++) {
			const struct conf_link *l = &want->link[i];

			if (l->mode != (enum xdpr_mode)m || attached_in(have, l->name))
				continue;
			devs[n++] = (char *)l->name;
			if (l->force)
				flags |= XDPR_F_FORCE;
		}
		if (!n)
			continue;
		if (xdpr_attach(x, devs, n, m, flags, &info))
			return ERR("link attach %s: %s", devs[0], x->err);
		d->attached += n;
		/* the handle learns the new links (the lock stays held) */
		if (xdpr_refresh(x))
			return ERR("%s", x->err);
	}
	return 0;
}

static int apply_knobs(struct xdpr *x, const struct conf *want, struct conf_diff *d, char *err,
		       size_t len)
{
	struct xdpr_nat_resize rs;
	struct xdpr_cfg c, nc;

	if (xdpr_cfg_get(x, &c))
		return ERR("%s", x->err);
	if (c.nat_sess != want->knobs.nat_sess) {
		if (xdpr_nat_resize(x, want->knobs.nat_sess, &rs))
			return ERR("nat limit sessions %u: %s", want->knobs.nat_sess, x->err);
		d->resized = true;
		if (xdpr_cfg_get(x, &c))
			return ERR("%s", x->err);
	}
	nc = c;
	for (size_t k = 1; k < NKNOBS; k++) /* 0, the size, is done */
		*knob_at(&nc, k) = knob_get(&want->knobs, k);
	if (!memcmp(&nc, &c, sizeof(c)))
		return 0;
	if (xdpr_cfg_set(x, &nc))
		return ERR("nat timeout/limit: %s", x->err);
	d->knobs = true;
	return 0;
}

/* Delete a running rule or forward (of have). */
static int nat_del_one(struct xdpr *x, const struct conf_nat *n)
{
	if (n->r.flags & XDPR_NAT_FWD)
		return xdpr_nat_fwd_del(x, n->dev, &n->r);
	return xdpr_nat_del(x, n->dev, n->r.src_net, n->r.src_mask);
}

/* want onto the router as it is (have): the steps, stopping at the first refused. */
static int change(struct xdpr *x, const struct conf *want, const struct conf *have,
		  struct conf_diff *d, char *err, size_t len)
{
	char *devs[XDPR_MAX_IFACES];
	bool gone_nat[XDPR_NAT_MAX_RULES] = {};
	int ret, n = 0;
	long bad;

	if ((ret = attach_new(x, want, have, d, err, len)))
		return ret;
	if (!want->nlink)
		goto detach;
	if ((ret = apply_knobs(x, want, d, err, len)))
		return ret;
	if ((ret = conf_change_binat(x, want, have, false, d, err, len))) /* 1:1 rules no longer wanted */
		return ret;
	/*
	 * A rule no longer wanted that overlaps a new one on its interface
	 * (its src changed) goes first: two overlapping rules cannot coexist.
	 */
	for (int i = 0; i < have->nnat; i++) {
		bool in_way = false;

		const struct conf_nat *h = &have->nat[i];
		bool fwd = h->r.flags & XDPR_NAT_FWD;

		if (nat_in(want, h))
			continue;
		for (int k = 0; k < want->nnat && !in_way; k++) {
			const struct conf_nat *w = &want->nat[k];
			struct xdpr_nat_rule wr = w->r;

			wr.pool_first = fwd_addr(w);
			if (strcmp(w->dev, h->dev) || !(w->r.flags & XDPR_NAT_FWD) != !fwd || nat_in(have, w))
				continue;
			in_way = fwd ? fwd_overlap(&wr, &h->r) : nat_overlap(&w->r, &h->r);
		}
		if (!in_way)
			continue;
		if (nat_del_one(x, h))
			return ERR("nat del %s %s: %s", fwd ? "in" : "out", h->dev, x->err);
		gone_nat[i] = true;
		d->nat_deleted++;
	}
	for (int i = 0; i < want->nnat; i++) {
		const struct conf_nat *o = nat_in(have, &want->nat[i]);
		struct xdpr_nat_rule r = want->nat[i].r;
		bool attached = xdpr_link_find(x, want->nat[i].dev) != NULL;

		if (o && nat_same(&o->r, &r))
			continue;
		if (r.flags & XDPR_NAT_FWD) {
			/* a forward changes by going and coming back (its sessions go with it) */
			if (o && nat_del_one(x, o))
				return ERR("%sline %zu: %s", want->name, want->nat[i].line, x->err);
			if (xdpr_nat_fwd_add(x, want->nat[i].dev, &r, !attached))
				return ERR("%sline %zu: %s", want->name, want->nat[i].line, x->err);
			*(o ? &d->nat_replaced : &d->nat_added) += 1;
			continue;
		}
		if (!attached) {
			/*
			 * Its interface is missing or not attached: a waiting rule, so
			 * that nothing from its inside leaves untranslated meanwhile
			 * (a changed one is put in again: a waiting rule has no sessions).
			 */
			if (o && xdpr_nat_del(x, o->dev, o->r.src_net, o->r.src_mask))
				return ERR("%sline %zu: %s", want->name, want->nat[i].line, x->err);
			if (xdpr_nat_add_waiting(x, want->nat[i].dev, &r))
				return ERR("%sline %zu: %s", want->name, want->nat[i].line, x->err);
		} else if (xdpr_nat_add(x, want->nat[i].dev, &r, o != NULL)) {
			return ERR("%sline %zu: %s", want->name, want->nat[i].line, x->err);
		}
		*(o ? &d->nat_replaced : &d->nat_added) += 1;
	}
	if ((ret = apply_routes(x, want, have, d, err, len)))
		return ret;
	if (!xdpr_flt_same(&want->flt, &have->flt)) {
		if (xdpr_flt_replace(x, &want->flt, want->flags & CONF_P_PRESENT, &bad)) {
			if (bad >= 0 && want->flt_line)
				return ERR("%sline %zu: %s", want->name, want->flt_line[bad], x->err);
			return ERR("filter: %s", x->err);
		}
		d->filter = true;
	}
	if ((ret = apply_npt(x, want, have, d, err, len)))
		return ret;
	for (int i = 0; i < have->nnat; i++) {
		if (gone_nat[i] || nat_in(want, &have->nat[i]))
			continue;
		if (nat_del_one(x, &have->nat[i]))
			return ERR("nat del %s %s: %s", have->nat[i].r.flags & XDPR_NAT_FWD ? "in" : "out",
				   have->nat[i].dev, x->err);
		d->nat_deleted++;
	}
	if ((ret = conf_change_binat(x, want, have, true, d, err, len))) /* new 1:1 rules */
		return ret;
detach:
	for (int i = 0; i < have->nlink; i++)
		if (!link_in(want, have->link[i].name))
			devs[n++] = (char *)have->link[i].name;
	if (!n)
		return 0;
	/* the interfaces that stay keep their NAT and filter (as link detach) */
	if (xdpr_detach_check(x, devs, n))
		return ERR("link detach %s: %s", devs[0], x->err);
	/*
	 * Their NAT rules went above, unless the file keeps one: it stays,
	 * waiting for the interface (its inside sources are dropped meanwhile).
	 */
	for (int i = 0; i < n; i++) {
		unsigned int flags = XDPR_F_FORCE | XDPR_F_SET_CHECKED;

		for (int k = 0; k < want->nnat; k++)
			if (!strcmp(want->nat[k].dev, devs[i]))
				flags = XDPR_F_KEEP_RULES | XDPR_F_SET_CHECKED;
		for (int k = 0; k < want->nbinat; k++)
			if (!strncmp(want->binat[k].r.ifname, devs[i], IF_NAMESIZE))
				flags = XDPR_F_KEEP_RULES | XDPR_F_SET_CHECKED;
		if (xdpr_detach(x, &devs[i], 1, flags)) {
			char e[sizeof(x->err)];

			memcpy(e, x->err, sizeof(e));
			xdpr_refresh(x);
			return ERR("link detach %s: %s", devs[i], e);
		}
		d->detached++;
	}
	if (!want->nlink) {
		/* the router is gone, and every rule and route with it: counted as what they were */
		d->nat_deleted += nat_rules_on(have, NULL);
		d->routes_changed += have->nroute;
		d->filter |= have->flt.n || have->flt.nsets || have->flt.policy != XDPR_FLT_ACCEPT;
	}
	if (xdpr_refresh(x))
		return ERR("%s", x->err);
	return 0;
}

int conf_apply(struct xdpr *x, const struct conf *want, struct conf_diff *d, char *err, size_t len)
{
	struct conf have, now;
	struct conf_diff undo = {};
	char e2[512];
	int ret;

	memset(d, 0, sizeof(*d));
	if (conf_read(x, &have, err, len))
		return EXIT_FAIL;
	ret = guard(want, &have, err, len);
	if (!ret)
		ret = precheck(x, want, &have, err, len);
	if (!ret)
		ret = change(x, want, &have, d, err, len);
	if (ret && (d->attached || d->detached || d->nat_added || d->nat_replaced || d->nat_deleted ||
		    d->routes_changed || d->knobs || d->resized || d->filter)) {
		/* back to what ran before, the same way */
		size_t used = strlen(err);

		have.flags |= CONF_P_PRESENT; /* what ran may name devices that are gone now */
		conf_init(&now); /* freed below even when it is never read */
		int gone = xdpr_refresh(x) ? (snprintf(e2, sizeof(e2), "%s", x->err), -1) : 0;

		if (gone || conf_read(x, &now, e2, sizeof(e2)) ||
		    change(x, &have, &now, &undo, e2, sizeof(e2))) {
			snprintf(err + used, len > used ? len - used : 0,
				 "; undoing the changes made before it failed too: %s", e2);
			d->undo_failed = true;
		} else {
			d->rolled_back = true;
		}
		conf_free(&now);
	}
	conf_free(&have);
	return ret;
}

/* ---- commands ---- */

int do_save(int argc, char **argv)
{
	static struct xdpr x;
	static struct conf c;
	char err[1024];
	int ret;

	(void)argv;
	if (argc)
		return fail(EXIT_USAGE, "\"save\" takes no arguments");
	ret = xdpr_open(&x, 0);
	if (ret && ret != -ENOENT) {
		xdpr_close(&x);
		return fail(EXIT_FAIL, "%s", x.err);
	}
	ret = conf_read(&x, &c, err, sizeof(err));
	xdpr_close(&x);
	if (ret)
		return fail(EXIT_FAIL, "%s", err);
	if (out_is_json()) {
		/* {"config": the text restore reads, "commands": its lines that are not comments} */
		char *text = NULL, *save = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);

		if (!m) {
			conf_free(&c);
			return fail(EXIT_FAIL, "cannot write: %s", strerror(errno));
		}
		conf_print(m, &c);
		fclose(m);
		out_obj_open(NULL);
		out_str("config", NULL, text ? text : "");
		out_arr_open("commands");
		for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			if (*l != '#')
				out_str(NULL, NULL, l);
		out_arr_close();
		out_obj_close();
		out_flush_doc();
		free(text);
	} else {
		conf_print(stdout, &c);
	}
	conf_free(&c);
	if (fflush(stdout) || ferror(stdout))
		return fail(EXIT_FAIL, "cannot write: %s", strerror(errno));
	return EXIT_OK;
}

int do_restore(int argc, char **argv)
{
	static struct xdpr x;
	static struct conf c;
	struct conf_diff d;
	char err[4096];
	FILE *f;
	int ret;

	if (argc != 1)
		return fail(EXIT_USAGE, "expected \"restore { FILE | - }\"");
	f = !strcmp(argv[0], "-") ? stdin : fopen(argv[0], "r");
	if (!f)
		return fail(EXIT_FAIL, "cannot open \"%s\": %s", argv[0], strerror(errno));
	ret = conf_parse(f, !strcmp(argv[0], "-") ? "stdin" : argv[0], 0, &c, err, sizeof(err));
	if (f != stdin)
		fclose(f);
	if (ret)
		return fail(ret, "%s (nothing applied)", err);
	ret = xdpr_open(&x, XDPR_O_LOCK);
	if (!ret) /* finish or undo what a killed command left */
		ret = xdpr_nat_repair(&x, NULL, 0);
	if (!ret) /* the VLANs as the kernel has them: rules may name them */
		ret = sync_vlans(&x);
	if (ret && ret != -ENOENT) {
		xdpr_close(&x);
		conf_free(&c);
		return fail(EXIT_FAIL, "%s", x.err);
	}
	ret = conf_apply(&x, &c, &d, err, sizeof(err));
	xdpr_close(&x);
	conf_free(&c);
	if (ret)
		return fail(EXIT_FAIL, "%s (%s)", err, d.rolled_back ? "nothing applied: undone" :
			    d.undo_failed ? "applied in part: see \"xdpr save\"" : "nothing applied");
	print_warnings(x.note);
	out_obj_open(NULL);
	out_u64("attached", "attached %llu", d.attached);
	out_u64("detached", ", detached %llu", d.detached);
	out_u64("nat_added", "; NAT rules added %llu", d.nat_added);
	out_u64("nat_replaced", ", replaced %llu", d.nat_replaced);
	out_u64("nat_deleted", ", deleted %llu", d.nat_deleted);
	out_u64("routes_changed", "; routes changed %llu", d.routes_changed);
	out_bool("routes_reloaded", NULL, d.routes_loaded);
	out_bool("filter_changed", "; filter changed %s", d.filter);
	out_bool("nat_resized", "; NAT tables resized %s", d.resized);
	out_bool("nat_settings_changed", "; NAT settings changed %s\n", d.knobs);
	out_obj_close();
	out_flush_doc();
	return EXIT_OK;
}
