// SPDX-License-Identifier: GPL-2.0
/*
 * export.c - flow records from xdprd to IPFIX (RFC 7011/7012) and NetFlow
 * v9 (RFC 3954) collectors.
 *
 * Why our own encoder and not libfixbuf (Debian: libfixbuf-dev): fixbuf
 * speaks IPFIX only, so NetFlow v9 would still need an encoder of its own;
 * it brings glib into a daemon that has none, and its session and buffer
 * model (blocking writers, its own template bookkeeping) sits badly beside
 * a one-second tick that must never block on a dead collector.  What both
 * formats need here is small: three fixed templates, big-endian fields, a
 * set header, a message header; one encoder below writes both (the formats
 * differ in the headers, the template set id and the time fields), and the
 * tests check it against real decoders (nfdump, tshark).
 *
 * The rules (one export_tick a second):
 *   - a new flow is remembered; nothing is sent for it yet;
 *   - active timeout: a flow that lasts is reported every active-timeout
 *     seconds (the packets and bytes since the last record: delta counts);
 *   - inactive timeout: a flow idle that long is reported (if anything is
 *     left to report) and deleted from the flow table;
 *   - TCP FIN or RST seen: reported at once, deleted once idle 2 s (the
 *     packets after the first record go in a last one then).
 * Times: flowStart/EndMilliseconds (IPFIX) are wall-clock, from the
 * monotonic ns of the fast path; FIRST/LAST_SWITCHED (v9) are sysUptime ms,
 * the monotonic clock, with sysUptime and unix_secs chosen so that
 * unix_secs * 1000 - sysUptime is the wall-clock time of monotonic 0 to the
 * millisecond (a collector gets exact times although unix_secs is whole).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "export.h"

#define NS_PER_MS 1000000ULL
#define NS_PER_S  1000000000ULL
#define TCP_FIN   0x01
#define TCP_RST   0x04

/* ---- the cache ---- */

struct export_entry {
	struct export_entry *next;
	/* the flow as it arrived */
	__u8 family, proto;
	__u16 sport, dport;
	__u32 in_ifindex;
	__u8 src[16], dst[16];
	/* what was reported: the flow table's counters then */
	__u64 packets, bytes, last_ns, first_ns;
	__u64 active_since;     /* mono ns: the active timeout counts from here */
	bool reported, fin_reported;
	__u32 gen;              /* the tick that last saw it */
};

static bool same_flow(const struct export_entry *e, const struct xdpr_flow *f)
{
	return e->family == f->family && e->proto == f->proto && e->sport == f->sport &&
	       e->dport == f->dport && e->in_ifindex == f->in_ifindex &&
	       !memcmp(e->src, f->src, 16) && !memcmp(e->dst, f->dst, 16);
}

static size_t flow_hash(const struct xdpr_flow *f, size_t size)
{
	__u64 h = 1469598103934665603ULL; /* FNV-1a */
	__u8 k[44];

	k[0] = f->family;
	k[1] = f->proto;
	memcpy(k + 2, &f->sport, 2);
	memcpy(k + 4, &f->dport, 2);
	memcpy(k + 6, &f->in_ifindex, 4);
	memcpy(k + 10, f->src, 16);
	memcpy(k + 26, f->dst, 16);
	for (size_t i = 0; i < 42; i++)
		h = (h ^ k[i]) * 1099511628211ULL;
	return (size_t)(h % size);
}

static struct export_entry **find_slot(struct exporter *ex, const struct xdpr_flow *f)
{
	struct export_entry **p = &ex->tab[flow_hash(f, ex->tab_size)];

	while (*p && !same_flow(*p, f))
		p = &(*p)->next;
	return p;
}

/* Twice the buckets once there are more flows than buckets. */
static void grow_cache(struct exporter *ex)
{
	size_t n = ex->tab_size * 2;
	struct export_entry **t = calloc(n, sizeof(*t));

	if (!t)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < ex->tab_size; i++)
		for (struct export_entry *e = ex->tab[i], *next; e; e = next) {
			struct xdpr_flow k = { .family = e->family, .proto = e->proto, .sport = e->sport,
					       .dport = e->dport, .in_ifindex = e->in_ifindex };
			size_t h;

			next = e->next;
			memcpy(k.src, e->src, 16);
			memcpy(k.dst, e->dst, 16);
			h = flow_hash(&k, n);
			e->next = t[h];
			t[h] = e;
		}
	free(ex->tab);
	ex->tab = t;
	ex->tab_size = n;
}

static struct export_entry *cache_get(struct exporter *ex, const struct xdpr_flow *f, __u64 now)
{
	struct export_entry **p = find_slot(ex, f), *e = *p;

	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->family = f->family;
	e->proto = f->proto;
	e->sport = f->sport;
	e->dport = f->dport;
	e->in_ifindex = f->in_ifindex;
	memcpy(e->src, f->src, 16);
	memcpy(e->dst, f->dst, 16);
	e->first_ns = f->first_ns;
	/* the active timeout counts from the first packet (an old flow is reported at once) */
	e->active_since = f->first_ns && f->first_ns <= now ? f->first_ns : now;
	*p = e;
	if (++ex->nflows > ex->tab_size)
		grow_cache(ex);
	return e;
}

static void cache_del(struct exporter *ex, const struct xdpr_flow *f)
{
	struct export_entry **p = find_slot(ex, f), *e = *p;

	if (!e)
		return;
	*p = e->next;
	free(e);
	ex->nflows--;
}

/* ---- the encoder ---- */

struct field {
	__u16 ie, len;
};

/* IPFIX information elements (the same numbers in NetFlow v9, but for the times) */
enum {
	IE_OCTETS = 1, IE_PACKETS = 2, IE_PROTO = 4, IE_TCP_FLAGS = 6, IE_SPORT = 7,
	IE_SRC4 = 8, IE_IN_IF = 10, IE_DPORT = 11, IE_DST4 = 12, IE_OUT_IF = 14,
	IE_V9_LAST = 21, IE_V9_FIRST = 22, IE_SRC6 = 27, IE_DST6 = 28,
	IE_ICMP4 = 32, IE_ICMP6 = 139, IE_START_MS = 152, IE_END_MS = 153,
	IE_XSRC4 = 225, IE_XDST4 = 226, IE_XSPORT = 227, IE_XDPORT = 228,
	/* NAT events (RFC 8158; IPFIX only) */
	IE_NAT_EVENT = 230, IE_NAT_POOL = 283, IE_OBS_MS = 323, IE_QUOTA_EVENT = 466,
	IE_MAX_PER_USER = 473,
};

#define COMMON_FIELDS                                                               \
	{ IE_SPORT, 2 }, { IE_DPORT, 2 }, { IE_PROTO, 1 }, { IE_TCP_FLAGS, 1 },       \
	{ IE_IN_IF, 4 }, { IE_OUT_IF, 4 }, { IE_PACKETS, 8 }, { IE_OCTETS, 8 },       \
	{ IE_START_MS, 8 }, { IE_END_MS, 8 }

/* ICMP type << 8 | code: in the destination port too (what v5-era collectors read), and in 32/139 */
static const struct field f_ip4[] = { { IE_SRC4, 4 }, { IE_DST4, 4 }, COMMON_FIELDS, { IE_ICMP4, 2 } };
static const struct field f_ip6[] = { { IE_SRC6, 16 }, { IE_DST6, 16 }, COMMON_FIELDS, { IE_ICMP6, 2 } };
static const struct field f_nat4[] = { { IE_SRC4, 4 }, { IE_DST4, 4 }, COMMON_FIELDS,
	{ IE_XSRC4, 4 }, { IE_XDST4, 4 }, { IE_XSPORT, 2 }, { IE_XDPORT, 2 }, { IE_ICMP4, 2 } };

/* NAT events: a session's (create, delete) and ports exhausted; quota exceeded adds its two */
#define NAT_EVENT_FIELDS                                                            \
	{ IE_OBS_MS, 8 }, { IE_NAT_EVENT, 1 }, { IE_PROTO, 1 }, { IE_SRC4, 4 },         \
	{ IE_SPORT, 2 }, { IE_XSRC4, 4 }, { IE_XSPORT, 2 }, { IE_DST4, 4 },             \
	{ IE_DPORT, 2 }, { IE_NAT_POOL, 4 }
static const struct field f_natev4[] = { NAT_EVENT_FIELDS };
static const struct field f_natq4[] = { NAT_EVENT_FIELDS, { IE_QUOTA_EVENT, 4 }, { IE_MAX_PER_USER, 4 } };

static const struct tmpl {
	__u16 id;
	const struct field *f;
	int n;
} tmpls[] = {
	{ EXPORT_T_IP4, f_ip4, sizeof(f_ip4) / sizeof(f_ip4[0]) },
	{ EXPORT_T_IP6, f_ip6, sizeof(f_ip6) / sizeof(f_ip6[0]) },
	{ EXPORT_T_NAT4, f_nat4, sizeof(f_nat4) / sizeof(f_nat4[0]) },
	/* sent only to IPFIX collectors of an exporter with nat-events on (tmpl_count) */
	{ EXPORT_T_NATEV4, f_natev4, sizeof(f_natev4) / sizeof(f_natev4[0]) },
	{ EXPORT_T_NATQ4, f_natq4, sizeof(f_natq4) / sizeof(f_natq4[0]) },
};
#define NTMPL (sizeof(tmpls) / sizeof(tmpls[0]))
#define NTMPL_FLOWS 3 /* the flow templates: the first three */

/* A field as the format has it: NetFlow v9 times are 4-byte sysUptime ms. */
static struct field fmt_field(struct field f, bool v9)
{
	if (v9 && f.ie == IE_START_MS)
		return (struct field){ IE_V9_FIRST, 4 };
	if (v9 && f.ie == IE_END_MS)
		return (struct field){ IE_V9_LAST, 4 };
	return f;
}

static const struct tmpl *tmpl_of(const struct xdpr_flow *f)
{
	if (f->family == AF_INET6)
		return &tmpls[1];
	return f->xlated ? &tmpls[2] : &tmpls[0];
}

static size_t rec_len(const struct tmpl *t, bool v9)
{
	size_t n = 0;

	for (int i = 0; i < t->n; i++)
		n += fmt_field(t->f[i], v9).len;
	return n;
}

static void put16(__u8 *p, __u16 v) { p[0] = v >> 8; p[1] = v; }
static void put32(__u8 *p, __u32 v) { put16(p, v >> 16); put16(p + 2, v); }
static void put64(__u8 *p, __u64 v) { put32(p, v >> 32); put32(p + 4, v); }

/* The wall-clock ms of a monotonic ns. */
static __u64 wall_ms(const struct export_clock *now, __u64 mono_ns)
{
	return (__u64)((__s64)now->real_ns + ((__s64)mono_ns - (__s64)now->mono_ns)) / NS_PER_MS;
}

/*
 * NetFlow v9's header times: unix_secs the wall clock rounded up to the
 * second, sysUptime the monotonic ms plus what was rounded: then
 * unix_secs * 1000 - sysUptime is the wall clock at monotonic 0, exactly,
 * and no LAST_SWITCHED is after sysUptime.
 */
static void v9_times(const struct export_clock *now, __u32 *uptime, __u32 *secs)
{
	__u64 real_ms = now->real_ns / NS_PER_MS, s = (real_ms + 999) / 1000;

	*secs = (__u32)s;
	*uptime = (__u32)(now->mono_ns / NS_PER_MS + (s * 1000 - real_ms));
}

static void put_field(__u8 *p, struct field fl, const struct xdpr_flow *r, const struct export_clock *now)
{
	switch (fl.ie) {
	case IE_SRC4: memcpy(p, r->src, 4); break;
	case IE_DST4: memcpy(p, r->dst, 4); break;
	case IE_SRC6: memcpy(p, r->src, 16); break;
	case IE_DST6: memcpy(p, r->dst, 16); break;
	case IE_XSRC4: memcpy(p, r->xsrc, 4); break;
	case IE_XDST4: memcpy(p, r->xdst, 4); break;
	case IE_SPORT: put16(p, r->sport); break;
	case IE_DPORT: put16(p, r->dport); break;
	case IE_XSPORT: put16(p, r->xsport); break;
	case IE_XDPORT: put16(p, r->xdport); break;
	case IE_ICMP4:
	case IE_ICMP6:
		put16(p, r->proto == IPPROTO_ICMP || r->proto == IPPROTO_ICMPV6 ? r->dport : 0);
		break;
	case IE_PROTO: *p = r->proto; break;
	case IE_TCP_FLAGS: *p = r->proto == IPPROTO_TCP ? r->tcp_flags : 0; break;
	case IE_IN_IF: put32(p, r->in_ifindex); break;
	case IE_OUT_IF: put32(p, r->out_ifindex); break;
	case IE_PACKETS: put64(p, r->packets); break;
	case IE_OCTETS: put64(p, r->bytes); break;
	case IE_START_MS: put64(p, wall_ms(now, r->first_ns)); break;
	case IE_END_MS: put64(p, wall_ms(now, r->last_ns)); break;
	case IE_V9_FIRST: put32(p, (__u32)(r->first_ns / NS_PER_MS)); break;
	case IE_V9_LAST: put32(p, (__u32)(r->last_ns / NS_PER_MS)); break;
	}
}

/* One message being written. */
struct msg {
	bool v9;
	__u8 b[EXPORT_MSG_MAX];
	size_t len;
	size_t set;             /* offset of the open set's header; 0: none open */
	__u16 set_id;
	__u32 data, recs;       /* data records; every record (v9's count: templates too) */
	bool tmpl;              /* it carries the templates */
	size_t ntmpl;           /* how many of tmpls[] its collector gets */
};

static size_t hdr_len(bool v9)
{
	return v9 ? 20 : 16;
}

static void msg_begin(struct msg *m, bool v9, size_t ntmpl)
{
	m->v9 = v9;
	m->ntmpl = ntmpl;
	m->len = hdr_len(v9);
	m->set = 0;
	m->data = m->recs = 0;
	m->tmpl = false;
}

static void set_close(struct msg *m)
{
	if (!m->set)
		return;
	if (m->v9) /* RFC 3954: flowsets padded to 4 bytes */
		while ((m->len - m->set) % 4)
			m->b[m->len++] = 0;
	put16(m->b + m->set + 2, (__u16)(m->len - m->set));
	m->set = 0;
}

static void set_open(struct msg *m, __u16 id)
{
	if (m->set && m->set_id == id)
		return;
	set_close(m);
	m->set = m->len;
	m->set_id = id;
	put16(m->b + m->len, id);
	put16(m->b + m->len + 2, 0);
	m->len += 4;
}

/* Room for n more bytes of a set id (its header when not open, v9's padding). */
static bool msg_fits(const struct msg *m, __u16 id, size_t n)
{
	size_t pad = m->v9 ? 3 : 0; /* v9: padding of this set, and of the one it closes */
	size_t need = n + pad + (m->set && m->set_id == id ? 0 : 4 + pad);

	return m->len + need <= EXPORT_MSG_MAX;
}

static void msg_templates(struct msg *m)
{
	set_open(m, m->v9 ? 0 : 2); /* v9: template flowset 0; IPFIX: template set 2 */
	for (size_t t = 0; t < m->ntmpl; t++) {
		put16(m->b + m->len, tmpls[t].id);
		put16(m->b + m->len + 2, (__u16)tmpls[t].n);
		m->len += 4;
		for (int i = 0; i < tmpls[t].n; i++) {
			struct field f = fmt_field(tmpls[t].f[i], m->v9);

			put16(m->b + m->len, f.ie);
			put16(m->b + m->len + 2, f.len);
			m->len += 4;
		}
		m->recs++;
	}
	set_close(m);
	m->tmpl = true;
}

static void msg_record(struct msg *m, const struct xdpr_flow *r, const struct export_clock *now)
{
	const struct tmpl *t = tmpl_of(r);

	set_open(m, t->id);
	for (int i = 0; i < t->n; i++) {
		struct field f = fmt_field(t->f[i], m->v9);

		put_field(m->b + m->len, f, r, now);
		m->len += f.len;
	}
	m->data++;
	m->recs++;
}

/* ---- collectors ---- */

static const char *fmt_name(const struct export_collector *c)
{
	return c->conf.fmt == CONF_EXPORT_IPFIX ? "ipfix" : "netflow9";
}

__attribute__((format(printf, 3, 4)))
static void logf_(struct exporter *ex, int prio, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!ex->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ex->log(prio, line);
}

/* A send that failed: counted always, logged at most once a minute per collector. */
static void send_error(struct exporter *ex, struct export_collector *c, int err, __u64 now)
{
	c->send_errors++;
	c->unlogged++;
	c->last_errno = err;
	if (c->log_ns && now - c->log_ns < EXPORT_LOG_NS)
		return;
	logf_(ex, LOG_WARNING, "export %s %s: cannot send: %s (%llu error%s since the last report; "
	      "records are dropped, never queued)", fmt_name(c), c->conf.text, strerror(err),
	      (unsigned long long)c->unlogged, c->unlogged == 1 ? "" : "s");
	c->unlogged = 0;
	c->log_ns = now ? now : 1;
}

static socklen_t addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

/* Connected: the kernel reports ICMP errors (port or host unreachable) on the next send. */
static int coll_connect(struct export_collector *c)
{
	if (c->connected)
		return 0;
	if (connect(c->fd, (struct sockaddr *)&c->conf.addr, addr_len(&c->conf.addr)))
		return -errno;
	c->connected = true;
	return 0;
}

/* Send m to c: true if the kernel took it. */
static bool msg_send(struct exporter *ex, struct export_collector *c, struct msg *m,
		     const struct export_clock *now)
{
	ssize_t r;
	int e;

	set_close(m);
	if (m->v9) {
		__u32 up, secs;

		v9_times(now, &up, &secs);
		put16(m->b, 9);
		put16(m->b + 2, (__u16)m->recs);
		put32(m->b + 4, up);
		put32(m->b + 8, secs);
		put32(m->b + 12, c->seq);      /* RFC 3954: export packets sent before this one */
		put32(m->b + 16, EXPORT_DOMAIN);
		c->seq++;
	} else {
		put16(m->b, 10);
		put16(m->b + 2, (__u16)m->len);
		put32(m->b + 4, (__u32)(now->real_ns / NS_PER_S));
		put32(m->b + 8, c->seq);       /* RFC 7011: data records sent before this message */
		put32(m->b + 12, EXPORT_DOMAIN);
		c->seq += m->data;
	}
	if (m->tmpl) {
		c->tmpl_ns = now->mono_ns ? now->mono_ns : 1;
		c->tmpl_msgs = 0;
	} else {
		c->tmpl_msgs++;
	}
	e = coll_connect(c);
	if (e) {
		send_error(ex, c, -e, now->mono_ns);
		return false;
	}
	r = send(c->fd, m->b, m->len, MSG_DONTWAIT);
	if (r < 0 && errno == ECONNREFUSED) {
		/* the error of an earlier message (an ICMP port unreachable): this one was not sent */
		send_error(ex, c, errno, now->mono_ns);
		r = send(c->fd, m->b, m->len, MSG_DONTWAIT);
	}
	if (r < 0) {
		send_error(ex, c, errno, now->mono_ns);
		return false;
	}
	c->messages++;
	c->records += m->data;
	c->bytes += m->len;
	return true;
}

/* The templates a collector gets: the NAT event ones too when it gets NAT events. */
static size_t tmpl_count(const struct exporter *ex, const struct export_collector *c)
{
	return ex->conf.nat_events && c->conf.fmt == CONF_EXPORT_IPFIX ? NTMPL : NTMPL_FLOWS;
}

static bool tmpl_due(const struct export_collector *c, __u64 now)
{
	return !c->tmpl_ns || now - c->tmpl_ns >= EXPORT_TMPL_SECS * NS_PER_S ||
	       c->tmpl_msgs + 1 >= EXPORT_TMPL_MSGS;
}

/* A new message to c, with the templates when they are due. */
static void msg_start(struct exporter *ex, struct export_collector *c, struct msg *m,
		      const struct export_clock *now)
{
	msg_begin(m, c->conf.fmt == CONF_EXPORT_NF9, tmpl_count(ex, c));
	if (tmpl_due(c, now->mono_ns))
		msg_templates(m);
}

/* The records of a tick to one collector, in as few messages as fit. */
static void emit(struct exporter *ex, struct export_collector *c, const struct xdpr_flow *r, size_t n,
		 const struct export_clock *now)
{
	bool v9 = c->conf.fmt == CONF_EXPORT_NF9;
	struct msg m;

	if (!n && !tmpl_due(c, now->mono_ns))
		return;
	msg_start(ex, c, &m, now);
	for (size_t i = 0; i < n; i++) {
		const struct tmpl *t = tmpl_of(&r[i]);

		if (!msg_fits(&m, t->id, rec_len(t, v9))) {
			msg_send(ex, c, &m, now);
			msg_start(ex, c, &m, now);
		}
		msg_record(&m, &r[i], now);
	}
	if (m.recs)
		msg_send(ex, c, &m, now);
}

struct exporter *export_create(const struct conf_export *conf, char *err, size_t len)
{
	struct exporter *ex = calloc(1, sizeof(*ex));

	if (!ex || !(ex->tab = calloc(ex->tab_size = 1024, sizeof(*ex->tab)))) {
		free(ex);
		snprintf(err, len, "out of memory");
		return NULL;
	}
	ex->conf = *conf;
	for (int i = 0; i < conf->n; i++) {
		struct export_collector *c = &ex->coll[ex->ncoll];

		c->conf = conf->coll[i];
		c->fd = socket(c->conf.addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c->fd < 0) {
			snprintf(err, len, "export %s %s: cannot open a UDP socket: %s", fmt_name(c),
				 c->conf.text, strerror(errno));
			export_destroy(ex);
			return NULL;
		}
		ex->ncoll++;
		coll_connect(c); /* no route now: tried again at each send */
	}
	return ex;
}

void export_take_cache(struct exporter *to, struct exporter *from)
{
	struct export_entry **t = to->tab;
	size_t size = to->tab_size, n = to->nflows;

	to->tab = from->tab;
	to->tab_size = from->tab_size;
	to->nflows = from->nflows;
	to->gen = from->gen;
	from->tab = t;
	from->tab_size = size;
	from->nflows = n;
}

void export_destroy(struct exporter *ex)
{
	if (!ex)
		return;
	for (int i = 0; i < ex->ncoll; i++)
		close(ex->coll[i].fd);
	for (size_t i = 0; i < ex->tab_size; i++)
		for (struct export_entry *e = ex->tab[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	free(ex->tab);
	free(ex);
}

/* ---- a tick ---- */

struct flows {
	struct xdpr_flow *v;
	size_t n, cap;
};

static int flows_push(struct flows *l, const struct xdpr_flow *f)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? 2 * l->cap : 64;
		struct xdpr_flow *m = realloc(l->v, nc * sizeof(*m));

		if (!m)
			return -ENOMEM;
		l->v = m;
		l->cap = nc;
	}
	l->v[l->n++] = *f;
	return 0;
}

struct tick {
	struct exporter *ex;
	__u64 now;
	struct flows rec, del;
	int err;
};

static int on_flow(const struct xdpr_flow *f, void *arg)
{
	struct tick *t = arg;
	struct exporter *ex = t->ex;
	struct export_entry *e = cache_get(ex, f, t->now);
	__u64 idle, act = ex->conf.active * NS_PER_S, inact = ex->conf.inactive * NS_PER_S;
	bool fin, del, due;

	if (!e) {
		t->err = -ENOMEM;
		return 1;
	}
	e->gen = ex->gen;
	if (f->packets < e->packets || f->bytes < e->bytes || (e->reported && f->first_ns > e->last_ns)) {
		/* deleted and metered again between two ticks: a new flow */
		memset(&e->packets, 0, sizeof(*e) - offsetof(struct export_entry, packets));
		e->first_ns = f->first_ns;
		e->active_since = f->first_ns <= t->now ? f->first_ns : t->now;
		e->gen = ex->gen;
	}
	idle = t->now > f->last_ns ? t->now - f->last_ns : 0;
	fin = f->proto == IPPROTO_TCP && (f->tcp_flags & (TCP_FIN | TCP_RST));
	del = idle >= (fin ? EXPORT_FIN_IDLE_NS : inact);
	due = del || (fin && !e->fin_reported) || t->now - e->active_since >= act;
	if (!due)
		return 0;
	if (f->packets > e->packets) {
		struct xdpr_flow r = *f;

		r.packets = f->packets - e->packets;
		r.bytes = f->bytes - e->bytes;
		/* a later record starts after the last packet of the one before */
		if (e->reported && e->last_ns > r.first_ns)
			r.first_ns = e->last_ns;
		if (flows_push(&t->rec, &r)) {
			t->err = -ENOMEM;
			return 1;
		}
		e->packets = f->packets;
		e->bytes = f->bytes;
		e->last_ns = f->last_ns;
		e->reported = true;
	}
	e->fin_reported |= fin;
	e->active_since = t->now;
	if (del && flows_push(&t->del, f)) {
		t->err = -ENOMEM;
		return 1;
	}
	return 0;
}

/* Records of the same template next to each other: fewer set headers. */
static int rec_order(const void *a, const void *b)
{
	return (int)tmpl_of(a)->id - (int)tmpl_of(b)->id;
}

int export_tick(struct exporter *ex, const struct export_clock *now, const struct export_source *src)
{
	struct tick t = { .ex = ex, .now = now->mono_ns };
	int ret;

	ex->ticks++;
	ex->gen++;
	ret = src->foreach(src->ctx, on_flow, &t);
	if (!ret)
		ret = t.err;
	if (ret) {
		ex->tick_errors++;
		if (ret != ex->last_source_err)
			logf_(ex, LOG_ERR, "export: cannot read the flow table: %s", strerror(-ret));
		ex->last_source_err = ret;
		goto out;
	}
	ex->last_source_err = 0;
	/* flows gone from the table (flushed): forgotten */
	for (size_t i = 0; i < ex->tab_size; i++)
		for (struct export_entry **p = &ex->tab[i]; *p;) {
			struct export_entry *e = *p;

			if (e->gen == ex->gen) {
				p = &e->next;
				continue;
			}
			*p = e->next;
			free(e);
			ex->nflows--;
		}
	qsort(t.rec.v, t.rec.n, sizeof(*t.rec.v), rec_order);
	for (int i = 0; i < ex->ncoll; i++)
		emit(ex, &ex->coll[i], t.rec.v, t.rec.n, now);
	/* after the records: a flow is never deleted unreported */
	for (size_t i = 0; i < t.del.n; i++) {
		int e = src->del ? src->del(src->ctx, &t.del.v[i]) : 0;

		if (e && e != -ENOENT) {
			ex->delete_errors++;
			continue; /* kept: deleted at a later tick */
		}
		ex->flows_deleted++;
		cache_del(ex, &t.del.v[i]);
	}
out:
	free(t.rec.v);
	free(t.del.v);
	return ret;
}

/* ---- NAT events (RFC 8158), IPFIX only ---- */

static const struct tmpl *nat_tmpl_of(const struct xdpr_natlog_rec *r)
{
	return &tmpls[r->event == XDPR_NL_QUOTA ? 4 : 3];
}

static void put_nat_field(__u8 *p, struct field fl, const struct xdpr_natlog_rec *r,
			  const struct export_clock *now)
{
	switch (fl.ie) {
	case IE_OBS_MS: put64(p, wall_ms(now, r->ts_ns)); break;
	case IE_NAT_EVENT: *p = r->event; break;
	case IE_PROTO: *p = r->proto; break;
	case IE_SRC4: memcpy(p, &r->src, 4); break;
	case IE_XSRC4: memcpy(p, &r->xsrc, 4); break;
	case IE_DST4: memcpy(p, &r->dst, 4); break;
	case IE_SPORT: memcpy(p, &r->sport, 2); break;   /* network order already */
	case IE_XSPORT: memcpy(p, &r->xsport, 2); break;
	case IE_DPORT: memcpy(p, &r->dport, 2); break;
	case IE_NAT_POOL: put32(p, r->rule); break;
	case IE_QUOTA_EVENT: put32(p, 3); break;         /* maximum entries per user */
	case IE_MAX_PER_USER: put32(p, r->limit); break;
	}
}

static void msg_nat_record(struct msg *m, const struct xdpr_natlog_rec *r, const struct export_clock *now)
{
	const struct tmpl *t = nat_tmpl_of(r);

	set_open(m, t->id);
	for (int i = 0; i < t->n; i++) {
		put_nat_field(m->b + m->len, t->f[i], r, now);
		m->len += t->f[i].len;
	}
	m->data++;
	m->recs++;
}

void export_nat_events(struct exporter *ex, const struct export_clock *now, const struct xdpr_natlog_rec *r,
		       size_t n)
{
	ex->nat_events_in += n;
	if (!ex->conf.nat_events)
		return;
	for (int k = 0; k < ex->ncoll; k++) {
		struct export_collector *c = &ex->coll[k];
		__u64 sent = 0;
		struct msg m;

		if (c->conf.fmt != CONF_EXPORT_IPFIX || !n)
			continue;
		msg_start(ex, c, &m, now);
		for (size_t i = 0; i < n; i++) {
			const struct tmpl *t = nat_tmpl_of(&r[i]);

			if (r[i].family != AF_INET)
				continue;
			if (!msg_fits(&m, t->id, rec_len(t, false))) {
				sent += msg_send(ex, c, &m, now) ? m.data : 0;
				msg_start(ex, c, &m, now);
			}
			msg_nat_record(&m, &r[i], now);
		}
		if (m.recs)
			sent += msg_send(ex, c, &m, now) ? m.data : 0;
		c->nat_records += sent;
	}
}
