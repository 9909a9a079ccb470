// SPDX-License-Identifier: GPL-2.0
/*
 * filter.c - the filter of forwarded traffic: rule lists and prefix sets,
 * compiled into the datapath's bit-vector classifier (layout: xdpr_shared.h,
 * "filter"; maps: bpf/filter_maps.h).
 *
 * A filter is a list of rules in order, the named prefix sets they may
 * refer to, and the policy.  Every change builds a whole slot aside: the
 * classifier's inner maps, the slot's header and, in the library's own
 * control map (xdpr_flt_ctl, bound to the program: no packet reads it), the
 * list itself, encoded.  Then one xdpr_cfg update switches flt_slot and the
 * XDPR_CFG_FILTER flag.  The list a later command reads is the one stored
 * in the live slot: the classifier and its source are switched together,
 * so a command killed at any point leaves the old filter (and its list) or
 * the new one, never a mix and never a list that disagrees with what
 * packets meet.  Nothing a packet may be reading is ever written: before
 * the idle slot is rebuilt, and after a switch, the change waits until
 * every program run that may have read the old flt_slot has finished.
 *
 * Rule ids (counter index in xdpr_flt_stats) stay with their rule across
 * changes to other rules; new ones are handed out round robin, avoiding the
 * ids of the list being replaced while others are free, and their counters
 * are zeroed before the switch (no live rule counts on them then).
 *
 * The compiler (xdpr_flt_compile) is a pure function from a list to the
 * slot's contents, tested against a linear first-match reference
 * (selftests/unit/test_filter.c).
 *
 * Test hook (environment; never set it on a router in service):
 *   XDPR_CRASH_AT=filter:STEP  the command kills itself (SIGKILL) at STEP:
 *     counters  new rule ids' counters zeroed, nothing else written
 *     built     idle slot complete (maps, header, stored list), not live
 *     switched  xdpr_cfg names the new slot, the old one not yet released
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <xdp/libxdp.h>
#include "core.h"

#define W_DENSE       (XDPR_FF_MAX * XDPR_FLT_WORDS) /* words of the W_f bitmaps */
#define MAX_CLASSIFIER (256u << 20) /* bytes of words and descriptors one slot may take */
#define BLOB_MAGIC    0x31544c46u   /* "FLT1" */
#define BLOB_VERSION  2u
#ifndef ENOTSUPP
#define ENOTSUPP      524 /* the kernel's, for operations a map type lacks */
#endif

static void crash_point(const char *step)
{
	xdpr_crash_point("filter", step);
}

static void fmt_member(int family, const __u8 *addr, unsigned int plen, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(family, addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, plen);
}

static size_t alen(int family)
{
	return family == AF_INET6 ? 16 : 4;
}

/* ---- lists and sets ---- */

void xdpr_flt_list_free(struct xdpr_flt_list *l)
{
	for (size_t i = 0; i < l->nsets; i++)
		free(l->sets[i].m);
	free(l->sets);
	free(l->r);
	memset(l, 0, sizeof(*l));
}

struct xdpr_flt_set *xdpr_flt_set_find(const struct xdpr_flt_list *l, const char *name)
{
	for (size_t i = 0; i < l->nsets; i++)
		if (!strcmp(l->sets[i].name, name))
			return &l->sets[i];
	return NULL;
}

/* Set members in order: family, address, length. */
static int member_cmp(const void *a, const void *b)
{
	const struct xdpr_flt_member *x = a, *y = b;
	int d;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	d = memcmp(x->addr, y->addr, 16);
	if (d)
		return d;
	return (int)x->plen - (int)y->plen;
}

static int copy_list(const struct xdpr_flt_list *src, struct xdpr_flt_list *dst, size_t extra_rules)
{
	memset(dst, 0, sizeof(*dst));
	dst->policy = src->policy;
	dst->next_id = src->next_id;
	dst->info = src->info;
	dst->r = calloc(src->n + extra_rules + 1, sizeof(*dst->r));
	dst->sets = calloc(src->nsets + 1, sizeof(*dst->sets));
	if (!dst->r || !dst->sets)
		goto nomem;
	memcpy(dst->r, src->r, src->n * sizeof(*dst->r));
	dst->n = src->n;
	for (size_t i = 0; i < src->nsets; i++) {
		struct xdpr_flt_set *s = &dst->sets[i];

		*s = src->sets[i];
		s->m = malloc((s->n ? s->n : 1) * sizeof(*s->m));
		if (!s->m) {
			dst->nsets = i;
			goto nomem;
		}
		memcpy(s->m, src->sets[i].m, s->n * sizeof(*s->m));
	}
	dst->nsets = src->nsets;
	return 0;
nomem:
	xdpr_flt_list_free(dst);
	return -ENOMEM;
}

/* ---- the stored form (control map) ---- */

struct blob_hdr {
	__u32 magic;
	__u32 version;
	__u64 bytes;             /* the whole encoding */
	__u32 nrules, nsets, next_id;
	__u8 policy, pad[3];
	struct xdpr_flt_info info;
};

struct blob_rule {
	__u32 id;
	__u8 action, proto, states, icmp_type, icmp_code, pad;
	__u16 has;
	__u16 sport[2], dport[2];
	__u32 in_ifindex, out_ifindex;
};

struct wbuf {
	__u8 *p;
	size_t len, cap;
	int err;
};

static void put(struct wbuf *b, const void *v, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		__u8 *p;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

static void put_u8(struct wbuf *b, __u8 v)
{
	put(b, &v, 1);
}

static void put_str(struct wbuf *b, const char *s)
{
	size_t n = strlen(s);

	put_u8(b, n);
	put(b, s, n);
}

static void put_addr(struct wbuf *b, const struct xdpr_flt_addr *a)
{
	put_u8(b, a->kind);
	if (a->kind == XDPR_FA_PREFIX) {
		put_u8(b, a->family);
		put_u8(b, a->plen);
		put(b, a->addr, alen(a->family));
	} else if (a->kind == XDPR_FA_SET) {
		put_str(b, a->set);
	}
}

int xdpr_flt_encode(const struct xdpr_flt_list *l, void **buf, size_t *len)
{
	struct blob_hdr h = {
		.magic = BLOB_MAGIC, .version = BLOB_VERSION, .nrules = l->n, .nsets = l->nsets,
		.next_id = l->next_id, .policy = l->policy, .info = l->info,
	};
	struct wbuf b = {};

	put(&b, &h, sizeof(h));
	for (size_t i = 0; i < l->n; i++) {
		const struct xdpr_flt_spec *r = &l->r[i];
		struct blob_rule br = {
			.id = r->id, .action = r->action, .proto = r->proto, .states = r->states,
			.icmp_type = r->icmp_type, .icmp_code = r->icmp_code, .has = r->has,
			.sport = { r->sport[0], r->sport[1] }, .dport = { r->dport[0], r->dport[1] },
			.in_ifindex = r->in_ifindex, .out_ifindex = r->out_ifindex,
		};

		put(&b, &br, sizeof(br));
		put_addr(&b, &r->src);
		put_addr(&b, &r->dst);
		put_str(&b, r->in);
		put_str(&b, r->out);
	}
	for (size_t i = 0; i < l->nsets; i++) {
		const struct xdpr_flt_set *s = &l->sets[i];
		__u32 n = s->n;

		put_str(&b, s->name);
		put(&b, &n, sizeof(n));
		for (size_t k = 0; k < s->n; k++) {
			put_u8(&b, s->m[k].family);
			put_u8(&b, s->m[k].plen);
			put(&b, s->m[k].addr, alen(s->m[k].family));
		}
	}
	/* zeros up to the next 8 bytes, not counted: the map holds whole 8-byte words */
	put(&b, "\0\0\0\0\0\0\0", 7);
	b.len -= 7;
	if (b.err) {
		free(b.p);
		return b.err;
	}
	((struct blob_hdr *)b.p)->bytes = b.len;
	*buf = b.p;
	*len = b.len;
	return 0;
}

struct rbuf {
	const __u8 *p;
	size_t len, off;
	int err;
};

static void get(struct rbuf *b, void *v, size_t n)
{
	if (b->err || b->len - b->off < n) {
		b->err = -EPROTO;
		memset(v, 0, n);
		return;
	}
	memcpy(v, b->p + b->off, n);
	b->off += n;
}

static __u8 get_u8(struct rbuf *b)
{
	__u8 v;

	get(b, &v, 1);
	return v;
}

static void get_str(struct rbuf *b, char *s, size_t size)
{
	size_t n = get_u8(b);

	if (n >= size) {
		b->err = -EPROTO;
		n = 0;
	}
	get(b, s, n);
	s[n] = 0;
	if (strlen(s) != n)
		b->err = -EPROTO;
}

static bool family_ok(int family, unsigned int plen)
{
	return (family == AF_INET && plen <= 32) || (family == AF_INET6 && plen <= 128);
}

static void get_addr(struct rbuf *b, struct xdpr_flt_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->kind = get_u8(b);
	if (a->kind == XDPR_FA_PREFIX) {
		a->family = get_u8(b);
		a->plen = get_u8(b);
		if (!family_ok(a->family, a->plen))
			b->err = -EPROTO;
		else
			get(b, a->addr, alen(a->family));
	} else if (a->kind == XDPR_FA_SET) {
		get_str(b, a->set, sizeof(a->set));
	} else if (a->kind != XDPR_FA_ANY) {
		b->err = -EPROTO;
	}
}

int xdpr_flt_decode(const void *buf, size_t len, struct xdpr_flt_list *l)
{
	struct rbuf b = { .p = buf, .len = len };
	struct blob_hdr h;

	memset(l, 0, sizeof(*l));
	get(&b, &h, sizeof(h));
	if (b.err || h.magic != BLOB_MAGIC || h.version != BLOB_VERSION || h.bytes > len ||
	    h.nrules > XDPR_FLT_MAX_RULES || h.nsets > XDPR_FLT_MAX_SETS)
		return -EPROTO;
	b.len = h.bytes;
	l->policy = h.policy;
	l->next_id = h.next_id;
	l->info = h.info;
	l->r = calloc(h.nrules + 1, sizeof(*l->r));
	l->sets = calloc(h.nsets + 1, sizeof(*l->sets));
	if (!l->r || !l->sets) {
		xdpr_flt_list_free(l);
		return -ENOMEM;
	}
	for (__u32 i = 0; i < h.nrules && !b.err; i++) {
		struct xdpr_flt_spec *r = &l->r[i];
		struct blob_rule br;

		get(&b, &br, sizeof(br));
		if (br.id > XDPR_FLT_MAX_RULES)
			b.err = -EPROTO;
		r->id = br.id;
		r->action = br.action;
		r->proto = br.proto;
		r->states = br.states;
		r->icmp_type = br.icmp_type;
		r->icmp_code = br.icmp_code;
		r->has = br.has;
		memcpy(r->sport, br.sport, sizeof(r->sport));
		memcpy(r->dport, br.dport, sizeof(r->dport));
		r->in_ifindex = br.in_ifindex;
		r->out_ifindex = br.out_ifindex;
		get_addr(&b, &r->src);
		get_addr(&b, &r->dst);
		get_str(&b, r->in, sizeof(r->in));
		get_str(&b, r->out, sizeof(r->out));
		l->n++;
	}
	for (__u32 i = 0; i < h.nsets && !b.err; i++) {
		struct xdpr_flt_set *s = &l->sets[i];
		__u32 n = 0;

		get_str(&b, s->name, sizeof(s->name));
		get(&b, &n, sizeof(n));
		if (n > XDPR_SET_MAX) {
			b.err = -EPROTO;
			break;
		}
		s->m = calloc(n ? n : 1, sizeof(*s->m));
		if (!s->m) {
			b.err = -ENOMEM;
			break;
		}
		l->nsets++;
		for (__u32 k = 0; k < n && !b.err; k++) {
			struct xdpr_flt_member *m = &s->m[k];

			m->family = get_u8(&b);
			m->plen = get_u8(&b);
			if (!family_ok(m->family, m->plen))
				b.err = -EPROTO;
			else
				get(&b, m->addr, alen(m->family));
			s->n++;
		}
	}
	if (b.err)
		xdpr_flt_list_free(l);
	return b.err;
}

/* ---- the compiler ---- */

/* The family a rule can match (AF_INET, AF_INET6), or 0: both. */
static int rule_family(const struct xdpr_flt_spec *r)
{
	if (r->src.kind == XDPR_FA_PREFIX)
		return r->src.family;
	if (r->dst.kind == XDPR_FA_PREFIX)
		return r->dst.family;
	if (r->has & XDPR_FH_PROTO) {
		if (r->proto == IPPROTO_ICMP)
			return AF_INET;
		if (r->proto == IPPROTO_ICMPV6)
			return AF_INET6;
	}
	return 0;
}

/* Does the rule constrain field f (else it is in W_f)? */
static bool constrains(const struct xdpr_flt_spec *r, int f)
{
	switch (f) {
	case XDPR_FF_SRC:   return r->src.kind != XDPR_FA_ANY;
	case XDPR_FF_DST:   return r->dst.kind != XDPR_FA_ANY;
	case XDPR_FF_SPORT: return r->has & (XDPR_FH_SPORT | XDPR_FH_ICMP_TYPE);
	case XDPR_FF_DPORT: return r->has & (XDPR_FH_DPORT | XDPR_FH_ICMP_CODE);
	/* a prefix's family needs no PROTO bits: its address field holds it (one trie a family) */
	case XDPR_FF_PROTO: return r->has & XDPR_FH_PROTO;
	case XDPR_FF_IN:    return r->in[0];
	case XDPR_FF_OUT:   return r->out[0];
	case XDPR_FF_STATE: return (r->has & XDPR_FH_STATE) && r->states;
	}
	return false;
}

/* Compile state: the image being built and the descriptor dedup table. */
struct cc {
	struct xdpr_flt_image *img;
	const struct xdpr_flt_list *l;
	size_t nw;               /* rule words in use (the layout's) */
	__u32 *bit;              /* layout: bit of the rule at each position */
	__u16 *gend;             /* layout: the word after that rule's group */
	size_t wcap, dcap;
	__u32 *tab;              /* open addressing: descriptor ids, 0 = free */
	__u64 *thash;
	size_t tcap, tused;
	char *err;
	size_t errlen;
};

#define CC_ERR(cc, code, ...) (snprintf((cc)->err, (cc)->errlen, __VA_ARGS__), (code))

static __u64 bits_hash(const __u64 *bm, size_t nw)
{
	__u64 h = 0x84222325cbf29ce4ULL;

	for (size_t i = 0; i < nw; i++) {
		h ^= bm[i] + i;
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h | 1; /* never 0 */
}

static bool bits_zero(const __u64 *bm, size_t nw)
{
	for (size_t i = 0; i < nw; i++)
		if (bm[i])
			return false;
	return true;
}

/* Is descriptor d exactly bitmap bm? */
static bool desc_is(const struct cc *cc, __u32 d, const __u64 *bm)
{
	const struct xdpr_flt_desc *e = &cc->img->desc[d];
	const __u64 *w = cc->img->word + e->base;

	for (size_t i = 0; i < cc->nw; i++) {
		bool stored = (e->summ[i / 64] >> (i % 64)) & 1;

		if (stored != (bm[i] != 0))
			return false;
		if (stored && *w++ != bm[i])
			return false;
	}
	return true;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 1024;
	void *n;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	n = realloc(*p, c * size);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}

static int tab_grow(struct cc *cc)
{
	size_t cap = cc->tcap ? cc->tcap * 2 : 4096;
	__u32 *tab = calloc(cap, sizeof(*tab));
	__u64 *th = calloc(cap, sizeof(*th));

	if (!tab || !th) {
		free(tab);
		free(th);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cc->tcap; i++) {
		size_t k;

		if (!cc->tab[i])
			continue;
		for (k = cc->thash[i] & (cap - 1); tab[k]; k = (k + 1) & (cap - 1))
			;
		tab[k] = cc->tab[i];
		th[k] = cc->thash[i];
	}
	free(cc->tab);
	free(cc->thash);
	cc->tab = tab;
	cc->thash = th;
	cc->tcap = cap;
	return 0;
}

/*
 * The descriptor of rule set bm (cc->nw words): EMPTY for no rule, else the
 * one descriptor of that content, made when new.  id, or -errno.
 */
static long intern(struct cc *cc, const __u64 *bm)
{
	struct xdpr_flt_image *img = cc->img;
	struct xdpr_flt_desc *d;
	size_t k, stored = 0;
	__u64 h;

	if (bits_zero(bm, cc->nw))
		return XDPR_FLT_DESC_EMPTY;
	if (2 * (cc->tused + 1) > cc->tcap && tab_grow(cc))
		return -ENOMEM;
	h = bits_hash(bm, cc->nw);
	for (k = h & (cc->tcap - 1); cc->tab[k]; k = (k + 1) & (cc->tcap - 1))
		if (cc->thash[k] == h && desc_is(cc, cc->tab[k], bm))
			return cc->tab[k];
	for (size_t i = 0; i < cc->nw; i++)
		stored += bm[i] != 0;
	if ((img->nword + stored) * sizeof(__u64) + (img->ndesc + 1) * sizeof(*d) > MAX_CLASSIFIER)
		return CC_ERR(cc, -E2BIG, "the rule list needs more than %u MiB of classifier "
			      "(many overlapping port ranges or nested prefixes)", MAX_CLASSIFIER >> 20);
	if (grow((void **)&img->word, &cc->wcap, img->nword + stored, sizeof(__u64)) ||
	    grow((void **)&img->desc, &cc->dcap, img->ndesc + 1, sizeof(*d)))
		return -ENOMEM;
	d = &img->desc[img->ndesc];
	memset(d, 0, sizeof(*d));
	d->base = img->nword;
	for (size_t i = 0; i < cc->nw; i++)
		if (bm[i]) {
			d->summ[i / 64] |= 1ULL << (i % 64);
			img->word[img->nword++] = bm[i];
		}
	for (int i = 1; i < XDPR_FLT_SUMM; i++)
		d->rank[i] = d->rank[i - 1] + __builtin_popcountll(d->summ[i - 1]);
	cc->tab[k] = img->ndesc;
	cc->thash[k] = h;
	cc->tused++;
	return img->ndesc++;
}

static void bit_set(__u64 *bm, size_t p)
{
	bm[p / 64] |= 1ULL << (p % 64);
}

/* One prefix an address field holds for a rule, or for the rules naming a set. */
struct lpm_src {
	__u8 addr[16];
	__u8 plen;
	__u32 rule;              /* the rule's bit (layout), or (when set) index into sets[] */
	bool set;
};

static int lpm_src_cmp(const void *a, const void *b)
{
	const struct lpm_src *x = a, *y = b;
	int d = memcmp(x->addr, y->addr, 16);

	return d ? d : (int)x->plen - (int)y->plen;
}

static bool prefix_contains(const __u8 *qa, unsigned int qlen, const __u8 *pa, unsigned int plen)
{
	unsigned int full = qlen / 8, rest = qlen % 8;

	if (qlen > plen || memcmp(qa, pa, full))
		return false;
	return !rest || !((qa[full] ^ pa[full]) & (0xff00 >> rest));
}

/*
 * The LPM entries of one address field and family: for each distinct
 * prefix P that a rule or a set a rule names holds, the rules whose prefix
 * contains P (a packet's longest match then yields exactly the rules
 * matching its address).  Prefixes sorted by address then length put every
 * prefix after those containing it; a stack holds the chain of containing
 * prefixes with their rule sets.
 */
static int compile_lpm(struct cc *cc, int field, int family)
{
	const struct xdpr_flt_list *l = cc->l;
	struct xdpr_flt_image *img = cc->img;
	size_t n = 0, cap = 0, nsets = l->nsets, nprefix = 0, depth = 0;
	struct lpm_src *src = NULL;
	__u64 **users = calloc(nsets + 1, sizeof(*users)); /* per set: rules naming it here */
	__u64 *stack = NULL;
	struct { __u8 addr[16]; __u8 plen; } *chain = NULL;
	int err = users ? 0 : -ENOMEM;

	for (size_t p = 0; p < l->n && !err; p++) {
		const struct xdpr_flt_spec *r = &l->r[p];
		const struct xdpr_flt_addr *a = field == XDPR_FF_SRC ? &r->src : &r->dst;
		int rf = rule_family(r);

		if (a->kind == XDPR_FA_PREFIX && a->family == family) {
			err = grow((void **)&src, &cap, n + 1, sizeof(*src));
			if (err)
				break;
			memset(&src[n], 0, sizeof(src[n]));
			memcpy(src[n].addr, a->addr, 16);
			src[n].plen = a->plen;
			src[n++].rule = cc->bit[p];
		} else if (a->kind == XDPR_FA_SET && (!rf || rf == family)) {
			struct xdpr_flt_set *s = xdpr_flt_set_find(l, a->set);
			size_t si;

			if (!s) {
				err = CC_ERR(cc, -ENOENT, "cannot find set \"%s\"", a->set);
				break;
			}
			si = s - l->sets;
			if (!users[si]) {
				users[si] = calloc(XDPR_FLT_WORDS, sizeof(__u64));
				if (!users[si]) {
					err = -ENOMEM;
					break;
				}
				for (size_t k = 0; k < s->n && !err; k++) {
					if (s->m[k].family != family)
						continue;
					err = grow((void **)&src, &cap, n + 1, sizeof(*src));
					if (err)
						break;
					memset(&src[n], 0, sizeof(src[n]));
					memcpy(src[n].addr, s->m[k].addr, 16);
					src[n].plen = s->m[k].plen;
					src[n].rule = si;
					src[n++].set = true;
				}
			}
			bit_set(users[si], cc->bit[p]);
		}
	}
	if (err || !n)
		goto out;
	qsort(src, n, sizeof(*src), lpm_src_cmp);
	for (size_t i = 0; i < n; i++)
		nprefix += !i || lpm_src_cmp(&src[i - 1], &src[i]);
	if (nprefix > XDPR_FLT_LPM_MAX) {
		err = CC_ERR(cc, -ENOSPC, "too many %s %s prefixes (%zu, at most %d counting set members)",
			     family == AF_INET ? "IPv4" : "IPv6", field == XDPR_FF_SRC ? "src" : "dst",
			     nprefix, XDPR_FLT_LPM_MAX);
		goto out;
	}
	if (family == AF_INET) {
		void *k = realloc(img->lpm4, (img->nlpm4 + nprefix) * sizeof(*img->lpm4));
		void *v = k ? realloc(img->lpm4_val, (img->nlpm4 + nprefix) * sizeof(__u32)) : NULL;

		img->lpm4 = k ? k : img->lpm4;
		img->lpm4_val = v ? v : img->lpm4_val;
		err = v ? 0 : -ENOMEM;
	} else {
		void *k = realloc(img->lpm6, (img->nlpm6 + nprefix) * sizeof(*img->lpm6));
		void *v = k ? realloc(img->lpm6_val, (img->nlpm6 + nprefix) * sizeof(__u32)) : NULL;

		img->lpm6 = k ? k : img->lpm6;
		img->lpm6_val = v ? v : img->lpm6_val;
		err = v ? 0 : -ENOMEM;
	}
	if (err)
		goto out;
	stack = calloc((size_t)(8 * alen(family) + 2) * XDPR_FLT_WORDS, sizeof(__u64));
	chain = calloc(8 * alen(family) + 2, sizeof(*chain));
	if (!stack || !chain) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && !err;) {
		size_t j = i;
		__u64 *cur;
		long id;

		while (depth && !prefix_contains(chain[depth - 1].addr, chain[depth - 1].plen,
						 src[i].addr, src[i].plen))
			depth--;
		cur = stack + depth * XDPR_FLT_WORDS;
		if (depth)
			memcpy(cur, cur - XDPR_FLT_WORDS, cc->nw * sizeof(__u64));
		else
			memset(cur, 0, cc->nw * sizeof(__u64));
		for (; j < n && !lpm_src_cmp(&src[i], &src[j]); j++) {
			if (!src[j].set) {
				bit_set(cur, src[j].rule);
				continue;
			}
			for (size_t w = 0; w < cc->nw; w++)
				cur[w] |= users[src[j].rule][w];
		}
		memcpy(chain[depth].addr, src[i].addr, 16);
		chain[depth].plen = src[i].plen;
		depth++;
		id = intern(cc, cur);
		if (id < 0) {
			err = id;
			break;
		}
		if (family == AF_INET) {
			struct xdpr_flt_lpm4 *k = &img->lpm4[img->nlpm4];

			memset(k, 0, sizeof(*k));
			k->prefixlen = 8 + src[i].plen;
			k->field = field;
			memcpy(k->addr, src[i].addr, 4);
			img->lpm4_val[img->nlpm4++] = id;
		} else {
			struct xdpr_flt_lpm6 *k = &img->lpm6[img->nlpm6];

			memset(k, 0, sizeof(*k));
			k->prefixlen = 8 + src[i].plen;
			k->field = field;
			memcpy(k->addr, src[i].addr, 16);
			img->lpm6_val[img->nlpm6++] = id;
		}
		i = j;
	}
out:
	for (size_t i = 0; users && i < nsets; i++)
		free(users[i]);
	free(users);
	free(src);
	free(stack);
	free(chain);
	return err;
}

/* A range of a value field (SPORT, DPORT) a rule accepts: an event at each end. */
struct val_ev {
	__u32 at;                /* first value of the range, or the one after it */
	__u32 rule;
	bool end;
};

static int val_ev_cmp(const void *a, const void *b)
{
	const struct val_ev *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * SPORT or DPORT (65536 values each: ports, or ICMP type / code): sweep the
 * range ends in order; between two of them the rule set is constant.
 */
static int compile_ports(struct cc *cc, int field)
{
	const struct xdpr_flt_list *l = cc->l;
	__u32 base = field == XDPR_FF_SPORT ? XDPR_FV_SPORT : XDPR_FV_DPORT;
	struct val_ev *ev = calloc(2 * l->n + 1, sizeof(*ev));
	__u64 *cur = calloc(XDPR_FLT_WORDS, sizeof(__u64));
	size_t n = 0;
	int err = 0;

	if (!ev || !cur) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t p = 0; p < l->n; p++) {
		const struct xdpr_flt_spec *r = &l->r[p];
		__u32 lo, hi;

		if (field == XDPR_FF_SPORT && (r->has & XDPR_FH_SPORT))
			lo = r->sport[0], hi = r->sport[1];
		else if (field == XDPR_FF_SPORT && (r->has & XDPR_FH_ICMP_TYPE))
			lo = hi = r->icmp_type;
		else if (field == XDPR_FF_DPORT && (r->has & XDPR_FH_DPORT))
			lo = r->dport[0], hi = r->dport[1];
		else if (field == XDPR_FF_DPORT && (r->has & XDPR_FH_ICMP_CODE))
			lo = hi = r->icmp_code;
		else
			continue;
		ev[n++] = (struct val_ev){ lo, cc->bit[p], false };
		ev[n++] = (struct val_ev){ hi + 1, cc->bit[p], true };
	}
	qsort(ev, n, sizeof(*ev), val_ev_cmp);
	for (size_t i = 0; i < n && !err;) {
		__u32 at = ev[i].at, next;
		long id;

		for (; i < n && ev[i].at == at; i++) {
			__u64 bit = 1ULL << (ev[i].rule % 64);

			if (ev[i].end)
				cur[ev[i].rule / 64] &= ~bit;
			else
				cur[ev[i].rule / 64] |= bit;
		}
		if (at > 65535)
			break;
		next = i < n ? ev[i].at : 65536;
		if (next > 65536)
			next = 65536;
		id = intern(cc, cur);
		if (id < 0) {
			err = id;
			break;
		}
		for (__u32 v = at; v < next; v++)
			cc->img->val[base + v] = id;
	}
out:
	free(ev);
	free(cur);
	return err;
}

/* n rule bitmaps (XDPR_FLT_WORDS words apart) as the descriptors of values base.. base+n-1. */
static int intern_vals(struct cc *cc, const __u64 *bm, int n, __u32 base)
{
	for (int v = 0; v < n; v++) {
		long id = intern(cc, bm + (size_t)v * XDPR_FLT_WORDS);

		if (id < 0)
			return id;
		cc->img->val[base + v] = id;
	}
	return 0;
}

/*
 * PROTO: a named protocol is that value in the rule's family, or in both
 * (icmp only IPv4, icmpv6 only IPv6).  A rule without one leaves PROTO
 * alone: a prefix's family is already that of the trie holding it.
 */
static int compile_proto(struct cc *cc)
{
	const struct xdpr_flt_list *l = cc->l;
	__u64 *bm = calloc((size_t)512 * XDPR_FLT_WORDS, sizeof(__u64));
	int err = bm ? 0 : -ENOMEM;

	for (size_t p = 0; p < l->n && !err; p++) {
		const struct xdpr_flt_spec *r = &l->r[p];
		int fam = rule_family(r);

		if (!constrains(r, XDPR_FF_PROTO))
			continue;
		for (int v6 = 0; v6 < 2; v6++) {
			if (!fam || fam == (v6 ? AF_INET6 : AF_INET))
				bit_set(bm + (size_t)(256 * v6 + r->proto) * XDPR_FLT_WORDS, cc->bit[p]);
		}
	}
	if (!err)
		err = intern_vals(cc, bm, 512, XDPR_FV_PROTO);
	free(bm);
	return err;
}

static int compile_state(struct cc *cc)
{
	const struct xdpr_flt_list *l = cc->l;
	__u64 *bm = calloc((size_t)XDPR_FS_MAX * XDPR_FLT_WORDS, sizeof(__u64));
	int err = bm ? 0 : -ENOMEM;

	for (size_t p = 0; p < l->n && !err; p++)
		for (int s = 0; s < XDPR_FS_MAX; s++)
			if (constrains(&l->r[p], XDPR_FF_STATE) && (l->r[p].states & (1u << s)))
				bit_set(bm + (size_t)s * XDPR_FLT_WORDS, cc->bit[p]);
	if (!err)
		err = intern_vals(cc, bm, XDPR_FS_MAX, XDPR_FV_STATE);
	free(bm);
	return err;
}

struct if_ref {
	struct xdpr_flt_ifkey k;
	__u32 rule;
};

static int if_ref_cmp(const void *a, const void *b)
{
	const struct if_ref *x = a, *y = b;

	if (x->k.field != y->k.field)
		return x->k.field < y->k.field ? -1 : 1;
	return x->k.ifindex < y->k.ifindex ? -1 : x->k.ifindex > y->k.ifindex;
}

/* IN and OUT: one entry per device named (as resolved); a missing device has none. */
static int compile_ifs(struct cc *cc)
{
	const struct xdpr_flt_list *l = cc->l;
	struct xdpr_flt_image *img = cc->img;
	struct if_ref *ref = calloc(2 * l->n + 1, sizeof(*ref));
	__u64 *cur = calloc(XDPR_FLT_WORDS, sizeof(__u64));
	size_t n = 0, groups = 0;
	int err = ref && cur ? 0 : -ENOMEM;

	for (size_t p = 0; p < l->n && !err; p++) {
		const struct xdpr_flt_spec *r = &l->r[p];

		if (r->in[0] && r->in_ifindex)
			ref[n++] = (struct if_ref){ { r->in_ifindex, XDPR_FF_IN }, cc->bit[p] };
		if (r->out[0] && r->out_ifindex)
			ref[n++] = (struct if_ref){ { r->out_ifindex, XDPR_FF_OUT }, cc->bit[p] };
	}
	if (err || !n)
		goto out;
	qsort(ref, n, sizeof(*ref), if_ref_cmp);
	for (size_t i = 0; i < n; i++)
		groups += !i || if_ref_cmp(&ref[i - 1], &ref[i]);
	if (groups > 2 * XDPR_MAX_IFACES_FLT) {
		err = CC_ERR(cc, -ENOSPC, "rules name %zu interfaces (at most %d in each direction)",
			     groups, XDPR_MAX_IFACES_FLT);
		goto out;
	}
	img->ifk = calloc(groups, sizeof(*img->ifk));
	img->if_val = calloc(groups, sizeof(*img->if_val));
	if (!img->ifk || !img->if_val) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && !err;) {
		size_t j;
		long id;

		memset(cur, 0, cc->nw * sizeof(__u64));
		for (j = i; j < n && !if_ref_cmp(&ref[i], &ref[j]); j++)
			bit_set(cur, ref[j].rule);
		id = intern(cc, cur);
		if (id < 0) {
			err = id;
			break;
		}
		img->ifk[img->nif] = ref[i].k;
		img->if_val[img->nif++] = id;
		i = j;
	}
out:
	free(ref);
	free(cur);
	return err;
}

void xdpr_flt_image_free(struct xdpr_flt_image *img)
{
	free(img->word);
	free(img->desc);
	free(img->val);
	free(img->rule);
	free(img->lpm4);
	free(img->lpm4_val);
	free(img->lpm6);
	free(img->lpm6_val);
	free(img->ifk);
	free(img->if_val);
	memset(img, 0, sizeof(*img));
}

static __u64 page_up(__u64 b)
{
	return (b + 4095) & ~4095ULL;
}

/*
 * What the slot's maps take: arrays exactly (page-rounded, they are
 * mmap-able); LPM tries 140 bytes a prefix (a leaf and the intermediate
 * nodes above it: 137 bytes of slab measured on 6.18 for 300,000 random
 * IPv4 /32s), hash entries 96 bytes.
 */
static __u64 image_memory(const struct xdpr_flt_image *img)
{
	return page_up(img->nword * sizeof(__u64)) + page_up(img->ndesc * sizeof(*img->desc)) +
	       page_up((__u64)XDPR_FV_MAX * 8) /* u32 values, 8-byte elements */ +
	       page_up(img->nrule * sizeof(*img->rule)) +
	       (img->nlpm4 + img->nlpm6) * 140 + img->nif * 96;
}

/*
 * The bit layout (xdpr_shared.h): rules that constrain the same fields (a
 * shape) form a group, each group in list order from a word of its own, so
 * that a word's summaries speak for one shape.  Groups are merged, the
 * smallest first, only when padding would not fit XDPR_FLT_WORDS.
 * Sets cc->bit[p], cc->gend[p] (the word after p's group) and cc->nw.
 */
static int layout(struct cc *cc)
{
	const struct xdpr_flt_list *l = cc->l;
	int gid_of[1 << XDPR_FF_MAX], up[1 << XDPR_FF_MAX];
	size_t cnt[1 << XDPR_FF_MAX] = {}, next[1 << XDPR_FF_MAX], end[1 << XDPR_FF_MAX];
	__u8 *gid = malloc(l->n + 1);
	int ng = 0, live;
	size_t words, w = 0;

	cc->bit = calloc(l->n + 1, sizeof(*cc->bit));
	cc->gend = calloc(l->n + 1, sizeof(*cc->gend));
	if (!gid || !cc->bit || !cc->gend) {
		free(gid);
		return -ENOMEM;
	}
	for (int m = 0; m < 1 << XDPR_FF_MAX; m++)
		gid_of[m] = -1;
	for (size_t p = 0; p < l->n; p++) {
		__u32 m = 0;

		for (int f = 0; f < XDPR_FF_MAX; f++)
			if (constrains(&l->r[p], f))
				m |= 1u << f;
		if (gid_of[m] < 0) {
			up[ng] = ng;
			gid_of[m] = ng++;
		}
		gid[p] = gid_of[m];
		cnt[gid[p]]++;
	}
	/* merge the two smallest groups while the padded layout is too long */
	for (live = ng;; live--) {
		int a = -1, b = -1;

		words = 0;
		for (int g = 0; g < ng; g++)
			if (up[g] == g)
				words += (cnt[g] + 63) / 64;
		if (words <= XDPR_FLT_WORDS || live < 2)
			break;
		for (int g = 0; g < ng; g++) {
			if (up[g] != g)
				continue;
			if (a < 0 || cnt[g] < cnt[a]) {
				b = a;
				a = g;
			} else if (b < 0 || cnt[g] < cnt[b]) {
				b = g;
			}
		}
		if (a > b) {
			int t = a;

			a = b;
			b = t;
		}
		up[b] = a; /* into the one first seen: groups keep first-appearance order */
		cnt[a] += cnt[b];
		cnt[b] = 0;
		for (int g = 0; g < ng; g++)
			if (up[g] == b)
				up[g] = a;
	}
	for (int g = 0; g < ng; g++) {
		if (up[g] != g)
			continue;
		next[g] = w * 64;
		w += (cnt[g] + 63) / 64;
		end[g] = w;
	}
	for (size_t p = 0; p < l->n; p++) {
		int g = up[gid[p]];

		cc->bit[p] = next[g]++;
		cc->gend[p] = end[g];
	}
	cc->nw = w;
	cc->img->hdr.ngroups = live;
	free(gid);
	return 0;
}

int xdpr_flt_compile(struct xdpr_flt_list *l, struct xdpr_flt_image *img, char *err, size_t len)
{
	struct cc cc = { .img = img, .l = l, .err = err, .errlen = len };
	int e = 0;

	memset(img, 0, sizeof(*img));
	if (len)
		err[0] = 0;
	if (l->n > XDPR_FLT_MAX_RULES) {
		snprintf(err, len, "the filter holds at most %d rules", XDPR_FLT_MAX_RULES);
		return -ENOSPC;
	}
	e = layout(&cc);
	if (e)
		goto out;
	img->nrule = cc.nw ? cc.nw * 64 : 1;
	img->rule = calloc(img->nrule, sizeof(*img->rule));
	img->val = malloc(XDPR_FV_MAX * sizeof(*img->val));
	e = grow((void **)&img->word, &cc.wcap, W_DENSE, sizeof(__u64));
	if (!e)
		e = grow((void **)&img->desc, &cc.dcap, XDPR_FLT_DESC_EMPTY + 1, sizeof(*img->desc));
	if (e || !img->rule || !img->val) {
		e = -ENOMEM;
		goto out;
	}
	/* W_f dense, their summaries, the empty descriptor */
	memset(img->word, 0, W_DENSE * sizeof(__u64));
	memset(img->desc, 0, (XDPR_FLT_DESC_EMPTY + 1) * sizeof(*img->desc));
	img->nword = W_DENSE;
	img->ndesc = XDPR_FLT_DESC_EMPTY + 1;
	for (size_t p = 0; p < l->n; p++) {
		const struct xdpr_flt_spec *r = &l->r[p];

		struct xdpr_flt_rule *ir = &img->rule[cc.bit[p]];

		for (int f = 0; f < XDPR_FF_MAX; f++)
			if (!constrains(r, f))
				bit_set(img->word + f * XDPR_FLT_WORDS, cc.bit[p]);
		ir->id = r->id;
		ir->action = r->action;
		ir->pos = p;
		ir->gend = cc.gend[p];
		if ((r->has & XDPR_FH_STATE) &&
		    (r->states & ((1u << XDPR_FS_ESTABLISHED) | (1u << XDPR_FS_RELATED))))
			img->hdr.flags |= XDPR_FLT_SEE_EST;
	}
	for (int f = 0; f < XDPR_FF_MAX; f++)
		for (size_t w = 0; w < cc.nw; w++)
			if (img->word[f * XDPR_FLT_WORDS + w])
				img->desc[f].summ[w / 64] |= 1ULL << (w % 64);
	for (__u32 v = 0; v < XDPR_FV_MAX; v++)
		img->val[v] = XDPR_FLT_DESC_EMPTY;

	e = compile_lpm(&cc, XDPR_FF_SRC, AF_INET);
	if (!e)
		e = compile_lpm(&cc, XDPR_FF_DST, AF_INET);
	if (!e)
		e = compile_lpm(&cc, XDPR_FF_SRC, AF_INET6);
	if (!e)
		e = compile_lpm(&cc, XDPR_FF_DST, AF_INET6);
	if (!e)
		e = compile_ports(&cc, XDPR_FF_SPORT);
	if (!e)
		e = compile_ports(&cc, XDPR_FF_DPORT);
	if (!e)
		e = compile_proto(&cc);
	if (!e)
		e = compile_state(&cc);
	if (!e)
		e = compile_ifs(&cc);
	if (e)
		goto out;
	img->hdr.nrules = l->n;
	img->hdr.policy = l->policy;
	l->info.ndesc = img->ndesc;
	l->info.nwords = img->nword;
	l->info.ngroups = img->hdr.ngroups;
	l->info.nbits = cc.nw * 64;
	l->info.nlpm4 = img->nlpm4;
	l->info.nlpm6 = img->nlpm6;
	l->info.nif = img->nif;
	l->info.flags = img->hdr.flags;
	l->info.memory = image_memory(img);
out:
	if (e == -ENOMEM && len && !err[0])
		snprintf(err, len, "out of memory compiling the filter");
	if (e && len && !err[0])
		snprintf(err, len, "cannot compile the filter: %s", strerror(-e));
	free(cc.tab);
	free(cc.thash);
	free(cc.bit);
	free(cc.gend);
	if (e)
		xdpr_flt_image_free(img);
	return e;
}

/* ---- checks ---- */

static bool host_bits_zero(const __u8 *a, unsigned int plen, unsigned int max)
{
	for (unsigned int b = plen; b < max; b++)
		if (a[b / 8] & (0x80 >> (b % 8)))
			return false;
	return true;
}

static bool name_ok(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (!n || n >= size)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && !strchr("_.-", s[i]))
			return false;
	return true;
}

static bool addr_ok(const struct xdpr_flt_addr *a)
{
	if (a->kind == XDPR_FA_ANY)
		return true;
	if (a->kind == XDPR_FA_SET)
		return name_ok(a->set, sizeof(a->set));
	return a->kind == XDPR_FA_PREFIX && family_ok(a->family, a->plen) &&
	       host_bits_zero(a->addr, a->plen, a->family == AF_INET ? 32 : 128) &&
	       (a->family == AF_INET6 || bits_zero((const __u64 *)(a->addr + 8), 1));
}

/*
 * What the compiler relies on (the CLI's parser says the same to users in
 * its own words): a rule that passes can be compiled as the semantics say.
 */
static int spec_check(struct xdpr *x, const struct xdpr_flt_spec *r)
{
	bool ports = (r->has & XDPR_FH_PROTO) && (r->proto == IPPROTO_TCP || r->proto == IPPROTO_UDP);
	bool icmp = (r->has & XDPR_FH_PROTO) &&
		    (r->proto == IPPROTO_ICMP || r->proto == IPPROTO_ICMPV6);
	const char *why = NULL;

	if (r->action < XDPR_FLT_ACCEPT || r->action > XDPR_FLT_REJECT)
		why = "no action";
	else if (!addr_ok(&r->src) || !addr_ok(&r->dst))
		why = "invalid prefix or set name";
	else if (r->src.kind == XDPR_FA_PREFIX && r->dst.kind == XDPR_FA_PREFIX &&
		 r->src.family != r->dst.family)
		why = "src and dst of different families";
	else if (rule_family(r) && (r->has & XDPR_FH_PROTO) &&
		 ((r->proto == IPPROTO_ICMP && rule_family(r) != AF_INET) ||
		  (r->proto == IPPROTO_ICMPV6 && rule_family(r) != AF_INET6)))
		why = "ICMP protocol of the other family";
	else if ((r->has & (XDPR_FH_SPORT | XDPR_FH_DPORT)) && !ports)
		why = "ports without proto tcp or udp";
	else if ((r->has & (XDPR_FH_ICMP_TYPE | XDPR_FH_ICMP_CODE)) && !icmp)
		why = "ICMP type or code without proto icmp or icmpv6";
	else if (r->sport[0] > r->sport[1] || r->dport[0] > r->dport[1])
		why = "port range low > high";
	else if ((r->has & XDPR_FH_STATE) && (!r->states || r->states >> XDPR_FS_MAX))
		why = "invalid states";
	else if (strnlen(r->in, IF_NAMESIZE) >= IF_NAMESIZE ||
		 strnlen(r->out, IF_NAMESIZE) >= IF_NAMESIZE)
		why = "invalid device name";
	if (why) {
		seterr(x, "invalid rule: %s", why);
		return -EINVAL;
	}
	return 0;
}

/* A new rule against the router: its devices and sets exist. */
static int rule_check(struct xdpr *x, const struct xdpr_flt_list *l, const struct xdpr_flt_spec *r)
{
	const struct xdpr_flt_addr *a[2] = { &r->src, &r->dst };
	const char *dev[2] = { r->in, r->out };
	int err = spec_check(x, r);

	for (int i = 0; i < 2 && !err; i++)
		if (dev[i][0] && !if_nametoindex(dev[i])) {
			seterr(x, "cannot find device \"%s\"", dev[i]);
			err = -ENODEV;
		}
	for (int i = 0; i < 2 && !err; i++)
		if (a[i]->kind == XDPR_FA_SET && !xdpr_flt_set_find(l, a[i]->set)) {
			seterr(x, "cannot find set \"%s\"", a[i]->set);
			err = -ENOENT;
		}
	return err;
}

/* A rule sees no packet arriving on an interface xdpr is not attached to: say so. */
static void note_unattached(struct xdpr *x, const struct xdpr_flt_spec *r)
{
	size_t used = strlen(x->note);

	if (!r->in[0] || xdpr_link_find(x, r->in) || strstr(x->note, r->in))
		return;
	snprintf(x->note + used, sizeof(x->note) - used,
		 "%sxdpr is not attached to \"%s\": rules with \"in %s\" see no packet until it is",
		 used ? "\n" : "", r->in, r->in);
}

/* ---- the maps ---- */


/* A control map slot's inner map: the list encoded, in 8-byte words. */
static int blob_map(size_t bytes)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	size_t words = (bytes + 7) / 8;
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xdpr_flt_list", sizeof(__u32), sizeof(__u64),
				words ? words : 1, &o);

	return fd < 0 ? -errno : fd;
}

/*
 * The control map, created when missing: two slots like the datapath's,
 * each an (empty) encoded list.  Bound to the programs by bind_all().
 */
static int ctl_map(struct xdpr *x)
{
	LIBBPF_OPTS(bpf_map_create_opts, o);
	int tfd, fd, err = 0;

	if (x->fd[XM_FLT_CTL] >= 0)
		return 0;
	tfd = blob_map(0);
	if (tfd < 0) {
		seterr(x, "cannot create the filter's control map: %s", strerror(-tfd));
		return tfd;
	}
	o.inner_map_fd = tfd;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, map_names[XM_FLT_CTL], sizeof(__u32),
			    sizeof(__u32), 2, &o);
	if (fd < 0)
		err = -errno;
	for (__u32 k = 0; k < 2 && !err; k++) {
		int ifd = blob_map(0);

		if (ifd < 0 || bpf_map_update_elem(fd, &k, &ifd, BPF_ANY))
			err = ifd < 0 ? ifd : -errno;
		if (ifd >= 0)
			close(ifd);
	}
	close(tfd);
	if (err) {
		if (fd >= 0)
			close(fd);
		seterr(x, "cannot create the filter's control map: %s", strerror(-err));
		return err;
	}
	x->fd[XM_FLT_CTL] = fd;
	return 0;
}

/*
 * Bind the filter's maps to one program: the control map (no packet reads
 * it) so that every later command finds it among the program's maps, and
 * the datapath's own (a no-op for those its code already uses).
 */
static int bind_prog(struct xdpr *x, int prog_fd)
{
	for (int m = XM_FLT_WORD; m <= XM_FLT_FRAGS; m++)
		if (x->fd[m] >= 0 && bpf_prog_bind_map(prog_fd, x->fd[m], NULL))
			return -errno;
	if (x->fd[XM_FLT_CTL] >= 0 && bpf_prog_bind_map(prog_fd, x->fd[XM_FLT_CTL], NULL))
		return -errno;
	return 0;
}

/* Bind to xdpr's program on every attached interface (and on those just attached). */
static int bind_all(struct xdpr *x, char *const *more, int nmore)
{
	int err = 0;

	for (int i = 0; i < x->nlinks + nmore && !err; i++) {
		__u32 ifindex = i < x->nlinks ? x->links[i].ifindex : if_nametoindex(more[i - x->nlinks]);
		struct xdp_multiprog *mp = ifindex ? xdpr_get_multiprog(ifindex) : NULL;
		struct xdp_program *p = mp ? xdpr_find_ours(mp) : NULL;

		/* detached meanwhile, or not ours any more: nothing to keep alive there */
		if (p)
			err = bind_prog(x, xdp_program__fd(p));
		if (err)
			seterr(x, "cannot bind the filter's maps to program %u: %s", xdp_program__id(p),
			       strerror(-err));
		xdp_multiprog__close(mp);
	}
	return err;
}

/* A malloc'd copy of the inner map in a slot of an outer map; *len bytes. */
static int read_inner(struct xdpr *x, int outer, __u32 slot, void **out, size_t *len)
{
	struct bpf_map_info info;
	int err = xdpr_inner_copy(x, outer, slot, "the filter's stored rules", out, &info);

	*len = err ? 0 : (size_t)info.max_entries * info.value_size;
	if (!err && !*len) {
		err = -EINVAL;
		seterr(x, "cannot read the filter's stored rules: %s", strerror(-err));
	}
	return err;
}

/* The list stored in one slot (an empty one, policy accept, where none is). */
static int slot_list(struct xdpr *x, __u32 slot, struct xdpr_flt_list *l)
{
	void *buf = NULL;
	size_t len = 0;
	int err = 0;

	memset(l, 0, sizeof(*l));
	if (x->fd[XM_FLT_CTL] >= 0) {
		err = read_inner(x, x->fd[XM_FLT_CTL], slot, &buf, &len);
		if (err)
			return err;
		/* a slot never written holds zeros */
		if (len >= sizeof(__u32) && *(__u32 *)buf) {
			err = xdpr_flt_decode(buf, len, l);
			if (err)
				seterr(x, "the filter's stored rules are unreadable (slot %u): %s", slot,
				       strerror(-err));
		}
		free(buf);
		if (err)
			return err;
	}
	if (!l->r || !l->sets) {
		l->r = calloc(1, sizeof(*l->r));
		l->sets = calloc(1, sizeof(*l->sets));
		if (!l->r || !l->sets) {
			xdpr_flt_list_free(l);
			seterr(x, "out of memory");
			return -ENOMEM;
		}
	}
	if (!l->policy)
		l->policy = XDPR_FLT_ACCEPT;
	l->info.slot = slot;
	return 0;
}

/*
 * The live list.  Without the lock (show) a change may switch slots and
 * release the old one while it is read: read the slot again until it
 * stayed the same around the read.
 */
static int live_list(struct xdpr *x, struct xdpr_cfg *c, struct xdpr_flt_list *l)
{
	struct xdpr_cfg again;
	int err;

	for (int tries = 0;; tries++) {
		err = xdpr_cfg_get(x, c);
		if (!err)
			err = slot_list(x, c->flt_slot & 1, l);
		if (err)
			return err;
		err = xdpr_cfg_get(x, &again);
		if (err) {
			xdpr_flt_list_free(l);
			return err;
		}
		if ((again.flt_slot & 1) == (c->flt_slot & 1) || tries == 8)
			return 0;
		xdpr_flt_list_free(l);
	}
}

int xdpr_flt_get(struct xdpr *x, struct xdpr_flt_list *l)
{
	struct xdpr_cfg c;

	return live_list(x, &c, l);
}

/*
 * n values of size bytes into a fresh mmap-able array map.  The kernel
 * keeps array elements 8-byte aligned: a smaller value (xdpr_flt_val's
 * u32s) takes 8 bytes of the mapping.
 */
static int fill_map(int fd, const void *src, size_t n, size_t size)
{
	size_t stride = (size + 7) & ~(size_t)7, len = n * stride;
	__u8 *m;

	if (!len)
		return 0;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	if (stride == size)
		memcpy(m, src, len);
	else
		for (size_t i = 0; i < n; i++)
			memcpy(m + i * stride, (const __u8 *)src + i * size, size);
	munmap(m, len);
	return 0;
}

/* n entries into a fresh hash or LPM map: in batches, one by one where that is refused. */
static int fill_keyed(int fd, const void *keys, size_t ksize, const __u32 *vals, size_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o, .elem_flags = BPF_ANY);
	__u32 cnt = n;

	if (!n)
		return 0;
	if (!bpf_map_update_batch(fd, keys, vals, &cnt, &o) && cnt == n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, (const char *)keys + i * ksize, &vals[i], BPF_ANY))
			return -errno;
	return 0;
}

/* The inner maps of a slot holding img, filled (fd[XDPR_FI_MAPS]: the stored list). */
static int make_slot(struct xdpr *x, const struct xdpr_flt_image *img, const void *blob,
		     size_t bloblen, int fd[XDPR_FI_MAPS + 1])
{
	__u32 entries[XDPR_FI_MAPS] = {
		[XDPR_FI_WORD] = img->nword, [XDPR_FI_DESC] = img->ndesc, [XDPR_FI_RULE] = img->nrule,
	};
	int err = 0;

	for (int i = 0; i <= XDPR_FI_MAPS; i++)
		fd[i] = -1;
	for (int i = 0; i < XDPR_FI_MAPS && !err; i++) {
		fd[i] = xdpr_flt_new_map(x, i, entries[i]);
		if (fd[i] < 0)
			err = fd[i];
	}
	if (err)
		goto out;
	fd[XDPR_FI_MAPS] = blob_map(bloblen);
	if (fd[XDPR_FI_MAPS] < 0) {
		err = fd[XDPR_FI_MAPS];
		seterr(x, "cannot create the filter's stored rules: %s", strerror(-err));
		goto out;
	}
	err = fill_map(fd[XDPR_FI_WORD], img->word, img->nword, sizeof(*img->word));
	if (!err)
		err = fill_map(fd[XDPR_FI_DESC], img->desc, img->ndesc, sizeof(*img->desc));
	if (!err)
		err = fill_map(fd[XDPR_FI_VAL], img->val, XDPR_FV_MAX, sizeof(*img->val));
	if (!err)
		err = fill_map(fd[XDPR_FI_RULE], img->rule, img->nrule, sizeof(*img->rule));
	if (!err)
		err = fill_map(fd[XDPR_FI_MAPS], blob, (bloblen + 7) / 8, 8);
	if (!err)
		err = fill_keyed(fd[XDPR_FI_LPM4], img->lpm4, sizeof(*img->lpm4), img->lpm4_val, img->nlpm4);
	if (!err)
		err = fill_keyed(fd[XDPR_FI_LPM6], img->lpm6, sizeof(*img->lpm6), img->lpm6_val, img->nlpm6);
	if (!err)
		err = fill_keyed(fd[XDPR_FI_IF], img->ifk, sizeof(*img->ifk), img->if_val, img->nif);
	if (err)
		seterr(x, "cannot write the filter: %s", strerror(-err));
out:
	if (err)
		for (int i = 0; i <= XDPR_FI_MAPS; i++) {
			if (fd[i] >= 0)
				close(fd[i]);
			fd[i] = -1;
		}
	return err;
}

/* Zero the per-CPU counters of these ids (in one batch where the kernel takes it). */
static int zero_counters(struct xdpr *x, const __u32 *ids, size_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o, .elem_flags = BPF_ANY);
	int ncpu = xdpr_ncpus();
	struct xdpr_ctr *zero;
	__u32 cnt = n;
	int err = 0;

	if (!n)
		return 0;
	if (ncpu <= 0) {
		seterr(x, "cannot count CPUs: %s", strerror(-ncpu));
		return ncpu ? ncpu : -EINVAL;
	}
	zero = calloc(n * ncpu, sizeof(*zero));
	if (!zero) {
		seterr(x, "out of memory");
		return -ENOMEM;
	}
	if (bpf_map_update_batch(x->fd[XM_FLT_STATS], ids, zero, &cnt, &o) || cnt != n)
		for (size_t i = 0; i < n && !err; i++)
			if (bpf_map_update_elem(x->fd[XM_FLT_STATS], &ids[i], zero, BPF_ANY))
				err = -errno;
	if (err)
		seterr(x, "cannot reset the rule counters: %s", strerror(-err));
	free(zero);
	return err;
}

/*
 * Ids for the rules of nl that have none: round robin from nl->next_id,
 * skipping the ids nl keeps and, while others are free, those of the list
 * it replaces (live), whose counters a packet may still be adding to.
 * Their counters are zeroed: no live rule has them.
 */
static int assign_ids(struct xdpr *x, const struct xdpr_flt_list *live, struct xdpr_flt_list *nl)
{
	__u64 *keep = calloc(XDPR_FLT_IDS / 64 + 1, sizeof(__u64));
	__u64 *old = calloc(XDPR_FLT_IDS / 64 + 1, sizeof(__u64));
	__u32 *order = calloc(XDPR_FLT_MAX_RULES, sizeof(__u32)), *fresh = calloc(nl->n + 1, sizeof(__u32));
	__u32 next = nl->next_id >= 1 && nl->next_id <= XDPR_FLT_MAX_RULES ? nl->next_id : 1;
	size_t norder = 0, nfresh = 0;
	int err = 0;

	if (!keep || !old || !order || !fresh) {
		seterr(x, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nl->n; i++)
		if (nl->r[i].id)
			bit_set(keep, nl->r[i].id);
	for (size_t i = 0; i < live->n; i++)
		bit_set(old, live->r[i].id);
	/* the free ids in the order they are handed out: round robin, the replaced list's last */
	for (int pass = 0; pass < 2; pass++)
		for (__u32 k = 0; k < XDPR_FLT_MAX_RULES; k++) {
			__u32 c = (next - 1 + k) % XDPR_FLT_MAX_RULES + 1;
			bool was = (old[c / 64] >> (c % 64)) & 1;

			if (!((keep[c / 64] >> (c % 64)) & 1) && was == (pass == 1))
				order[norder++] = c;
		}
	for (size_t i = 0; i < nl->n; i++) {
		if (nl->r[i].id)
			continue;
		if (nfresh == norder) { /* more rules than ids: checked before */
			seterr(x, "no free rule id");
			err = -ENOSPC;
			goto out;
		}
		nl->r[i].id = order[nfresh];
		fresh[nfresh++] = nl->r[i].id;
	}
	if (nfresh)
		next = fresh[nfresh - 1] % XDPR_FLT_MAX_RULES + 1;
	nl->next_id = next;
	err = zero_counters(x, fresh, nfresh);
out:
	free(keep);
	free(old);
	free(order);
	free(fresh);
	return err;
}

/* A few devices' ifindexes, for one compile (lists name few devices often). */
struct dev_cache {
	struct {
		char name[IF_NAMESIZE];
		__u32 ifindex;
	} seen[16];
	unsigned int next;
};

/* A device's ifindex now (0: missing). */
static __u32 dev_index(struct dev_cache *dc, const char *name)
{
	__u32 idx;

	for (size_t i = 0; i < sizeof(dc->seen) / sizeof(dc->seen[0]); i++)
		if (dc->seen[i].name[0] && !strcmp(dc->seen[i].name, name))
			return dc->seen[i].ifindex;
	idx = if_nametoindex(name);
	snprintf(dc->seen[dc->next].name, sizeof(dc->seen[dc->next].name), "%s", name);
	dc->seen[dc->next].ifindex = idx;
	dc->next = (dc->next + 1) % (sizeof(dc->seen) / sizeof(dc->seen[0]));
	return idx;
}

/* Device names to this namespace's ifindexes, now (0: missing). */
static void resolve(struct xdpr_flt_list *l)
{
	struct dev_cache dc = {}; /* now: a long-lived caller (xdprd) sees devices re-created */

	for (size_t i = 0; i < l->n; i++) {
		l->r[i].in_ifindex = l->r[i].in[0] ? dev_index(&dc, l->r[i].in) : 0;
		l->r[i].out_ifindex = l->r[i].out[0] ? dev_index(&dc, l->r[i].out) : 0;
	}
}

/*
 * Make nl the live filter (see the top): ids, compile, the idle slot built
 * whole, one xdpr_cfg update, then the old slot released once no packet
 * can be in it.
 */
static int commit(struct xdpr *x, struct xdpr_cfg *c, const struct xdpr_flt_list *live,
		  struct xdpr_flt_list *nl)
{
	static const int outer[XDPR_FI_MAPS + 1] = {
		[XDPR_FI_WORD] = XM_FLT_WORD, [XDPR_FI_DESC] = XM_FLT_DESC, [XDPR_FI_VAL] = XM_FLT_VAL,
		[XDPR_FI_RULE] = XM_FLT_RULE, [XDPR_FI_LPM4] = XM_FLT_LPM4, [XDPR_FI_LPM6] = XM_FLT_LPM6,
		[XDPR_FI_IF] = XM_FLT_IF, [XDPR_FI_MAPS] = XM_FLT_CTL,
	};
	__u32 slot = c->flt_slot & 1, idle = !slot;
	struct xdpr_flt_hdr hdr_live = {};
	struct xdpr_flt_image img;
	int fd[XDPR_FI_MAPS + 1], err;
	char why[256];
	size_t len = 0;
	void *blob = NULL;

	if (nl->n > XDPR_FLT_MAX_RULES) {
		seterr(x, "the filter holds at most %d rules", XDPR_FLT_MAX_RULES);
		return -ENOSPC;
	}
	err = ctl_map(x);
	if (!err)
		err = bind_all(x, NULL, 0);
	if (!err)
		err = assign_ids(x, live, nl);
	if (err)
		return err;
	crash_point("counters");
	resolve(nl);
	bpf_map_lookup_elem(x->fd[XM_FLT_HDR], &slot, &hdr_live);
	err = xdpr_flt_compile(nl, &img, why, sizeof(why));
	if (err) {
		seterr(x, "%s", why);
		return err;
	}
	img.hdr.gen = hdr_live.gen + 1;
	nl->info.slot = idle;
	nl->info.gen = img.hdr.gen;
	err = xdpr_flt_encode(nl, &blob, &len);
	if (err) {
		seterr(x, "out of memory");
		goto out;
	}
	nl->info.memory += page_up(len);
	((struct blob_hdr *)blob)->info.memory = nl->info.memory;
	/* a killed change may have switched without waiting: nothing may still read the idle slot */
	xdpr_packets_settled();
	err = make_slot(x, &img, blob, len, fd);
	if (err)
		goto out;
	for (int i = 0; i <= XDPR_FI_MAPS && !err; i++)
		if (bpf_map_update_elem(x->fd[outer[i]], &idle, &fd[i], BPF_ANY)) {
			err = -errno;
			seterr(x, "cannot install the new filter: %s", strerror(-err));
		}
	for (int i = 0; i <= XDPR_FI_MAPS; i++)
		close(fd[i]);
	if (!err && bpf_map_update_elem(x->fd[XM_FLT_HDR], &idle, &img.hdr, BPF_ANY)) {
		err = -errno;
		seterr(x, "cannot install the new filter: %s", strerror(-err));
	}
	/*
	 * A slot never switched to has a zero header; a packet that reads the
	 * new flags with the old slot (xdpr_cfg is copied, not swapped) must
	 * find an empty filter that accepts there, as it did without one.
	 */
	if (!err && !hdr_live.policy) {
		struct xdpr_flt_hdr h = { .policy = XDPR_FLT_ACCEPT, .gen = hdr_live.gen };

		if (bpf_map_update_elem(x->fd[XM_FLT_HDR], &slot, &h, BPF_ANY)) {
			err = -errno;
			seterr(x, "cannot install the new filter: %s", strerror(-err));
		}
	}
	if (err)
		goto out;
	crash_point("built");
	/* the commit point: the slot and its header's flag in one word (flt4_hot reads no header) */
	c->flt_slot = idle | (img.hdr.flags & XDPR_FLT_SEE_EST ? XDPR_FLT_SLOT_SEE_EST : 0);
	if (nl->n || nl->policy == XDPR_FLT_DROP)
		c->flags |= XDPR_CFG_FILTER;
	else
		c->flags &= ~XDPR_CFG_FILTER;
	err = xdpr_cfg_set(x, c);
	if (err)
		goto out;
	crash_point("switched");
	if (!xdpr_packets_settled())
		goto out; /* the old slot stays until the next change replaces it */
	for (int i = 0; i <= XDPR_FI_MAPS; i++) {
		int e;

		if (i == XDPR_FI_VAL)
			continue; /* fixed size: a fresh one takes as much */
		e = i == XDPR_FI_MAPS ? blob_map(0) : xdpr_flt_new_map(x, i, 0);
		if (e >= 0) {
			bpf_map_update_elem(x->fd[outer[i]], &slot, &e, BPF_ANY);
			close(e);
		}
	}
out:
	free(blob);
	xdpr_flt_image_free(&img);
	return err;
}

/* Copy the live list with room for one more rule; the caller commits it. */
static int begin(struct xdpr *x, struct xdpr_cfg *c, struct xdpr_flt_list *live,
		 struct xdpr_flt_list *nl, size_t extra)
{
	int err = live_list(x, c, live);

	if (err)
		return err;
	if (copy_list(live, nl, extra)) {
		xdpr_flt_list_free(live);
		seterr(x, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int finish(struct xdpr *x, struct xdpr_cfg *c, struct xdpr_flt_list *live,
		  struct xdpr_flt_list *nl, int err)
{
	if (!err)
		err = commit(x, c, live, nl);
	xdpr_flt_list_free(live);
	xdpr_flt_list_free(nl);
	return err;
}

int xdpr_flt_insert(struct xdpr *x, struct xdpr_flt_spec *r, size_t pos)
{
	struct xdpr_flt_list live, nl;
	struct xdpr_cfg c;
	int err = begin(x, &c, &live, &nl, 1);

	if (err)
		return err;
	if (pos == XDPR_FLT_APPEND)
		pos = nl.n;
	if (pos > nl.n) {
		seterr(x, "cannot insert as rule %zu: the filter has %zu rule%s", pos + 1, nl.n,
		       nl.n == 1 ? "" : "s");
		err = -ERANGE;
	} else if (nl.n >= XDPR_FLT_MAX_RULES) {
		seterr(x, "the filter holds at most %d rules", XDPR_FLT_MAX_RULES);
		err = -ENOSPC;
	} else {
		err = rule_check(x, &nl, r);
	}
	if (!err) {
		memmove(&nl.r[pos + 1], &nl.r[pos], (nl.n - pos) * sizeof(*nl.r));
		nl.r[pos] = *r;
		nl.r[pos].id = 0;
		nl.n++;
		note_unattached(x, r);
	}
	return finish(x, &c, &live, &nl, err);
}

int xdpr_flt_del(struct xdpr *x, size_t pos)
{
	struct xdpr_flt_list live, nl;
	struct xdpr_cfg c;
	int err = begin(x, &c, &live, &nl, 0);

	if (err)
		return err;
	if (pos >= nl.n) {
		seterr(x, "no rule %zu (the filter has %zu rule%s)", pos + 1, nl.n, nl.n == 1 ? "" : "s");
		err = -ENOENT;
	} else {
		memmove(&nl.r[pos], &nl.r[pos + 1], (nl.n - pos - 1) * sizeof(*nl.r));
		nl.n--;
	}
	return finish(x, &c, &live, &nl, err);
}

int xdpr_flt_flush(struct xdpr *x)
{
	struct xdpr_flt_list live, nl;
	struct xdpr_cfg c;
	int err = begin(x, &c, &live, &nl, 0);

	if (err)
		return err;
	nl.n = 0;
	return finish(x, &c, &live, &nl, 0);
}

int xdpr_flt_policy(struct xdpr *x, __u8 policy)
{
	struct xdpr_flt_list live, nl;
	struct xdpr_cfg c;
	int err;

	if (policy != XDPR_FLT_ACCEPT && policy != XDPR_FLT_DROP) {
		seterr(x, "the policy is accept or drop");
		return -EINVAL;
	}
	err = begin(x, &c, &live, &nl, 0);
	if (err)
		return err;
	nl.policy = policy;
	return finish(x, &c, &live, &nl, 0);
}

int xdpr_flt_load(struct xdpr *x, struct xdpr_flt_spec *r, size_t n, long *bad)
{
	struct xdpr_flt_list live, nl;
	struct xdpr_cfg c;
	int err;

	*bad = -1;
	if (n > XDPR_FLT_MAX_RULES) {
		*bad = XDPR_FLT_MAX_RULES;
		seterr(x, "the filter holds at most %d rules", XDPR_FLT_MAX_RULES);
		return -ENOSPC;
	}
	err = begin(x, &c, &live, &nl, n);
	if (err)
		return err;
	for (size_t i = 0; i < n && !err; i++) {
		err = rule_check(x, &nl, &r[i]);
		if (err)
			*bad = i;
		else
			note_unattached(x, &r[i]);
	}
	if (!err) {
		for (size_t i = 0; i < n; i++) {
			nl.r[i] = r[i];
			nl.r[i].id = 0; /* a new list: its counters start at zero */
		}
		nl.n = n;
	}
	return finish(x, &c, &live, &nl, err);
}

/* ---- sets ---- */

static int set_args(struct xdpr *x, const char *name, const struct xdpr_flt_member *m, size_t n)
{
	char p[64];

	if (!name_ok(name, XDPR_SET_NAMESZ)) {
		seterr(x, "invalid set name \"%s\"", name);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (!family_ok(m[i].family, m[i].plen) ||
		    !host_bits_zero(m[i].addr, m[i].plen, m[i].family == AF_INET ? 32 : 128)) {
			fmt_member(m[i].family == AF_INET6 ? AF_INET6 : AF_INET, m[i].addr, m[i].plen, p,
				   sizeof(p));
			seterr(x, "invalid set member %s", p);
			return -EINVAL;
		}
	return 0;
}

/* Sorted copy of n members; -EEXIST (with *dup) when one is given twice. */
static struct xdpr_flt_member *sorted(const struct xdpr_flt_member *m, size_t n, size_t *dup)
{
	struct xdpr_flt_member *s = malloc((n ? n : 1) * sizeof(*s));

	*dup = n;
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		s[i] = m[i];
		memset(s[i].addr + alen(s[i].family), 0, 16 - alen(s[i].family));
	}
	qsort(s, n, sizeof(*s), member_cmp);
	for (size_t i = 1; i < n && *dup == n; i++)
		if (!member_cmp(&s[i - 1], &s[i]))
			*dup = i;
	return s;
}

/* The members sorted into *out (malloc'd): 0, or -errno with x->err (one given twice). */
static int sorted_once(struct xdpr *x, const struct xdpr_flt_member *m, size_t n, struct xdpr_flt_member **out)
{
	size_t dup;
	char p[64];

	*out = sorted(m, n, &dup);
	if (!*out) {
		seterr(x, "out of memory");
		return -ENOMEM;
	}
	if (dup < n) {
		fmt_member((*out)[dup].family, (*out)[dup].addr, (*out)[dup].plen, p, sizeof(p));
		seterr(x, "%s is given twice", p);
		return -EEXIST;
	}
	return 0;
}

int xdpr_set_add(struct xdpr *x, const char *name, const struct xdpr_flt_member *m, size_t n)
{
	struct xdpr_flt_list live, nl;
	struct xdpr_flt_member *add = NULL, *merged = NULL;
	struct xdpr_flt_set *s;
	struct xdpr_cfg c;
	size_t k = 0, i = 0, j = 0;
	char p[64];
	int err = set_args(x, name, m, n);

	if (err)
		return err;
	err = begin(x, &c, &live, &nl, 0);
	if (err)
		return err;
	err = sorted_once(x, m, n, &add);
	if (err)
		goto out;
	s = xdpr_flt_set_find(&nl, name);
	if (!s) {
		if (nl.nsets >= XDPR_FLT_MAX_SETS) {
			seterr(x, "at most %d sets", XDPR_FLT_MAX_SETS);
			err = -ENOSPC;
			goto out;
		}
		s = &nl.sets[nl.nsets++]; /* copy_list left room for one */
		memset(s, 0, sizeof(*s));
		snprintf(s->name, sizeof(s->name), "%s", name);
	}
	if (s->n + n > XDPR_SET_MAX) {
		seterr(x, "set \"%s\" would hold %zu members (at most %d)", name, s->n + n, XDPR_SET_MAX);
		err = -ENOSPC;
		goto out;
	}
	merged = malloc((s->n + n + 1) * sizeof(*merged));
	if (!merged) {
		seterr(x, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	while (i < s->n || j < n) {
		int d = i == s->n ? 1 : j == n ? -1 : member_cmp(&s->m[i], &add[j]);

		if (!d) {
			fmt_member(add[j].family, add[j].addr, add[j].plen, p, sizeof(p));
			seterr(x, "%s is already in set \"%s\"", p, name);
			err = -EEXIST;
			goto out;
		}
		merged[k++] = d < 0 ? s->m[i++] : add[j++];
	}
	free(s->m);
	s->m = merged;
	s->n = k;
	merged = NULL;
out:
	free(add);
	free(merged);
	return finish(x, &c, &live, &nl, err);
}

/* "rule 3" or "rules 3, 7 and 9": the rules that name set name (at most a few listed). */
static size_t set_users(const struct xdpr_flt_list *l, const char *name, char *buf, size_t len)
{
	size_t nu = 0, used = 0;
	size_t first[4];

	for (size_t i = 0; i < l->n; i++)
		if ((l->r[i].src.kind == XDPR_FA_SET && !strcmp(l->r[i].src.set, name)) ||
		    (l->r[i].dst.kind == XDPR_FA_SET && !strcmp(l->r[i].dst.set, name))) {
			if (nu < 4)
				first[nu] = i + 1;
			nu++;
		}
	if (!nu)
		return 0;
	used = snprintf(buf, len, "rule%s", nu > 1 ? "s" : "");
	for (size_t i = 0; i < nu && i < 4 && used < len; i++)
		used += snprintf(buf + used, len - used, "%s %zu",
				 !i ? "" : (i == nu - 1 && nu <= 4) ? " and" : ",", first[i]);
	if (nu > 4 && used < len)
		snprintf(buf + used, len - used, " and %zu more", nu - 4);
	return nu;
}

int xdpr_set_del(struct xdpr *x, const char *name, const struct xdpr_flt_member *m, size_t n)
{
	struct xdpr_flt_list live, nl;
	struct xdpr_flt_member *del = NULL;
	struct xdpr_flt_set *s;
	struct xdpr_cfg c;
	size_t k = 0, j = 0;
	char p[64], users[128];
	int err = set_args(x, name, m, n);

	if (err)
		return err;
	err = begin(x, &c, &live, &nl, 0);
	if (err)
		return err;
	s = xdpr_flt_set_find(&nl, name);
	if (!s) {
		seterr(x, "cannot find set \"%s\"", name);
		err = -ENOENT;
		goto out;
	}
	if (!n) {
		if (set_users(&nl, name, users, sizeof(users))) {
			seterr(x, "set \"%s\" is used by %s", name, users);
			err = -EBUSY;
			goto out;
		}
		free(s->m);
		memmove(s, s + 1, (nl.nsets - (s - nl.sets) - 1) * sizeof(*s));
		nl.nsets--;
		goto out;
	}
	err = sorted_once(x, m, n, &del);
	if (err)
		goto out;
	for (size_t i = 0; i < s->n; i++) {
		int d = j < n ? member_cmp(&s->m[i], &del[j]) : -1;

		while (d > 0) { /* passed it: not a member */
			fmt_member(del[j].family, del[j].addr, del[j].plen, p, sizeof(p));
			seterr(x, "%s is not in set \"%s\"", p, name);
			err = -ENOENT;
			goto out;
		}
		if (!d)
			j++;
		else
			s->m[k++] = s->m[i];
	}
	if (j < n) {
		fmt_member(del[j].family, del[j].addr, del[j].plen, p, sizeof(p));
		seterr(x, "%s is not in set \"%s\"", p, name);
		err = -ENOENT;
		goto out;
	}
	s->n = k;
out:
	free(del);
	return finish(x, &c, &live, &nl, err);
}

int xdpr_set_flush(struct xdpr *x, const char *name)
{
	struct xdpr_flt_list live, nl;
	struct xdpr_flt_set *s;
	struct xdpr_cfg c;
	int err;

	if (!name_ok(name, XDPR_SET_NAMESZ)) {
		seterr(x, "invalid set name \"%s\"", name);
		return -EINVAL;
	}
	err = begin(x, &c, &live, &nl, 0);
	if (err)
		return err;
	s = xdpr_flt_set_find(&nl, name);
	if (!s) {
		seterr(x, "cannot find set \"%s\"", name);
		err = -ENOENT;
	} else {
		s->n = 0;
	}
	return finish(x, &c, &live, &nl, err);
}

/* ---- counters, flows, links ---- */

/* ---- whole filters (xdpr restore, xdprd) ---- */

static struct xdpr_flt_member *sorted(const struct xdpr_flt_member *m, size_t n, size_t *dup);

static bool addr_same(const struct xdpr_flt_addr *a, const struct xdpr_flt_addr *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == XDPR_FA_SET)
		return !strcmp(a->set, b->set);
	return a->kind == XDPR_FA_ANY ||
	       (a->family == b->family && a->plen == b->plen && !memcmp(a->addr, b->addr, 16));
}

/* The same rule as written (ids and resolved ifindexes aside). */
static bool spec_same(const struct xdpr_flt_spec *a, const struct xdpr_flt_spec *b)
{
	if (a->action != b->action || a->has != b->has || strcmp(a->in, b->in) ||
	    strcmp(a->out, b->out) || !addr_same(&a->src, &b->src) || !addr_same(&a->dst, &b->dst))
		return false;
	if ((a->has & XDPR_FH_PROTO) && a->proto != b->proto)
		return false;
	if ((a->has & XDPR_FH_STATE) && a->states != b->states)
		return false;
	if ((a->has & XDPR_FH_SPORT) && memcmp(a->sport, b->sport, sizeof(a->sport)))
		return false;
	if ((a->has & XDPR_FH_DPORT) && memcmp(a->dport, b->dport, sizeof(a->dport)))
		return false;
	if ((a->has & XDPR_FH_ICMP_TYPE) && a->icmp_type != b->icmp_type)
		return false;
	return !(a->has & XDPR_FH_ICMP_CODE) || a->icmp_code == b->icmp_code;
}

bool xdpr_flt_same(const struct xdpr_flt_list *a, const struct xdpr_flt_list *b)
{
	if (a->policy != b->policy || a->n != b->n || a->nsets != b->nsets)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!spec_same(&a->r[i], &b->r[i]))
			return false;
	for (size_t i = 0; i < a->nsets; i++) {
		const struct xdpr_flt_set *s = xdpr_flt_set_find(b, a->sets[i].name);
		struct xdpr_flt_member *ma, *mb;
		bool same;
		size_t dup;

		if (!s || s->n != a->sets[i].n)
			return false;
		/* members in any order (a file lists them as written) */
		ma = sorted(a->sets[i].m, s->n, &dup);
		mb = sorted(s->m, s->n, &dup);
		same = ma && mb && !memcmp(ma, mb, s->n * sizeof(*ma));
		free(ma);
		free(mb);
		if (!same)
			return false;
	}
	return true;
}

int xdpr_flt_replace(struct xdpr *x, const struct xdpr_flt_list *want, bool missing_ok, long *bad)
{
	struct xdpr_flt_list live, nl;
	struct xdpr_cfg c;
	bool *taken = NULL;
	int err;

	*bad = -1;
	if (want->policy != XDPR_FLT_ACCEPT && want->policy != XDPR_FLT_DROP) {
		seterr(x, "the policy is accept or drop");
		return -EINVAL;
	}
	if (want->n > XDPR_FLT_MAX_RULES || want->nsets > XDPR_FLT_MAX_SETS) {
		seterr(x, want->n > XDPR_FLT_MAX_RULES ? "the filter holds at most %d rules"
			  : "at most %d sets", want->n > XDPR_FLT_MAX_RULES ? XDPR_FLT_MAX_RULES
			  : XDPR_FLT_MAX_SETS);
		return -ENOSPC;
	}
	err = live_list(x, &c, &live);
	if (err)
		return err;
	memset(&nl, 0, sizeof(nl));
	nl.policy = want->policy;
	nl.next_id = live.next_id;
	nl.r = calloc(want->n + 1, sizeof(*nl.r));
	nl.sets = calloc(want->nsets + 1, sizeof(*nl.sets));
	taken = calloc(live.n + 1, sizeof(*taken));
	if (!nl.r || !nl.sets || !taken) {
		seterr(x, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < want->nsets && !err; i++) {
		const struct xdpr_flt_set *s = &want->sets[i];

		err = set_args(x, s->name, s->m, s->n);
		if (!err && xdpr_flt_set_find(&nl, s->name)) {
			seterr(x, "set \"%s\" is given twice", s->name);
			err = -EEXIST;
		}
		if (!err && s->n > XDPR_SET_MAX) {
			seterr(x, "set \"%s\" would hold %zu members (at most %d)", s->name, s->n,
			       XDPR_SET_MAX);
			err = -ENOSPC;
		}
		if (!err) {
			nl.sets[i] = *s;
			err = sorted_once(x, s->m, s->n, &nl.sets[i].m);
			nl.nsets = i + 1;
		}
	}
	for (size_t i = 0; i < want->n && !err; i++) {
		err = rule_check(x, &nl, &want->r[i]);
		if (err == -ENODEV && missing_ok)
			err = 0; /* named, resolved when it exists (a rule on it matches nothing till then) */
		if (err) {
			*bad = i;
			break;
		}
		nl.r[i] = want->r[i];
		nl.r[i].id = 0;
		/* an unchanged rule keeps its id, and so its counter */
		for (size_t k = 0; k < live.n; k++)
			if (!taken[k] && spec_same(&live.r[k], &want->r[i])) {
				taken[k] = true;
				nl.r[i].id = live.r[k].id;
				break;
			}
		nl.n = i + 1;
	}
	free(taken);
	return finish(x, &c, &live, &nl, err);
out:
	free(taken);
	xdpr_flt_list_free(&live);
	xdpr_flt_list_free(&nl);
	return err;
}

int xdpr_flt_counters(struct xdpr *x, struct xdpr_ctr **out, int *ncpu)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	int n = xdpr_ncpus(), err = 0;
	__u32 *keys, cnt = XDPR_FLT_IDS, batch = 0;
	struct xdpr_ctr *v;

	if (n <= 0) {
		seterr(x, "cannot count CPUs: %s", strerror(n ? -n : EINVAL));
		return n ? n : -EINVAL;
	}
	keys = calloc(XDPR_FLT_IDS, sizeof(*keys));
	v = calloc((size_t)XDPR_FLT_IDS * n, sizeof(*v));
	if (!keys || !v) {
		free(keys);
		free(v);
		seterr(x, "out of memory");
		return -ENOMEM;
	}
	/* one batch reads the whole array (in key order); else one lookup per id */
	err = bpf_map_lookup_batch(x->fd[XM_FLT_STATS], NULL, &batch, keys, v, &cnt, &o) ? -errno : 0;
	for (__u32 i = 0; i < cnt && !err; i++)
		if (keys[i] != i)
			err = -EPROTO;
	if ((err && err != -ENOENT) || cnt != XDPR_FLT_IDS) {
		err = 0;
		for (__u32 id = 0; id < XDPR_FLT_IDS && !err; id++)
			if (bpf_map_lookup_elem(x->fd[XM_FLT_STATS], &id, v + (size_t)id * n))
				err = -errno;
	} else {
		err = 0;
	}
	free(keys);
	if (err) {
		free(v);
		seterr(x, "cannot read the filter's counters: %s", strerror(-err));
		return err;
	}
	*out = v;
	*ncpu = n;
	return 0;
}

int xdpr_flt_flows(struct xdpr *x, __u64 *live, __u64 *expired, __u64 *max)
{
	enum { CHUNK = 4096 };
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	struct xdpr_flow_key *keys = calloc(CHUNK, sizeof(*keys));
	struct xdpr_flt_flow *vals = calloc(CHUNK, sizeof(*vals));
	struct xdpr_cfg c;
	struct bpf_map_info info = {};
	__u32 batch = 0, cnt, ilen = sizeof(info);
	void *in = NULL;
	int err, fd = -1;
	__u64 now;

	*live = *expired = *max = 0;
	err = xdpr_cfg_get(x, &c);
	if (err)
		goto out;
	fd = xdpr_nat_tab_fd(x, XDPR_NT_FLOWS, c.nat_slot & 1); /* the live table */
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &ilen)) {
		err = fd < 0 ? fd : -errno;
		goto out;
	}
	*max = info.max_entries;
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	now = xdpr_mono_ns();
	/* batches, bucket by bucket: each entry once while the packet path changes others */
	for (bool last = false; !last;) {
		cnt = CHUNK;
		if (bpf_map_lookup_batch(fd, in, &batch, keys, vals, &cnt, &o)) {
			if (errno != ENOENT) {
				err = -errno;
				break;
			}
			last = true;
		}
		for (__u32 i = 0; i < cnt; i++) {
			/* the datapath's test (bpf/filter.h flow_expired) */
			bool old = now > vals[i].last_seen &&
				   now - vals[i].last_seen > xdpr_nat_timeout_ns(&c, keys[i].proto, vals[i].state);

			*expired += old;
			*live += !old;
		}
		in = &batch;
	}
out:
	if (fd >= 0)
		close(fd);
	free(keys);
	free(vals);
	if (err)
		seterr(x, "cannot count flows: %s", strerror(-err));
	return err;
}

int xdpr_flt_flows_flush(struct xdpr *x, struct xdpr_flt_gc_cmd *res)
{
	struct xdpr_flt_gc_cmd cmd[4] = { { .op = XDPR_GC_ALL } }; /* >= ETH_HLEN of input */
	int err = xdpr_run_prog(x, XDPR_PROG_FLT_GC, cmd, sizeof(cmd), 0);
	struct xdpr_cfg c;

	if (err)
		return err;
	*res = cmd[0];
	/* after the table: a CPU's copy of a state then lapses (xdpr_shared.h, xdpr_flt_hot) */
	err = xdpr_cfg_get(x, &c);
	if (!err) {
		c.flt_gen++;
		err = xdpr_cfg_set(x, &c);
	}
	return err;
}

int xdpr_flt_flows_gc(struct xdpr *x, struct xdpr_flt_gc_cmd *res)
{
	struct xdpr_flt_gc_cmd cmd[4] = { { .op = XDPR_GC_EXPIRED } }; /* >= ETH_HLEN of input */
	int err = xdpr_run_prog(x, XDPR_PROG_FLT_GC, cmd, sizeof(cmd), 0);

	if (!err)
		*res = cmd[0];
	return err;
}

int xdpr_flt_relink(struct xdpr *x, char *const *attached, int n)
{
	struct xdpr_flt_list live, nl;
	struct xdpr_cfg c;
	bool stale = false;
	int err;

	if (x->fd[XM_FLT_WORD] < 0 || x->fd[XM_FLT_HDR] < 0)
		return 0;
	err = bind_all(x, attached, n);
	if (err || x->fd[XM_FLT_CTL] < 0)
		return err;
	err = live_list(x, &c, &live);
	if (err)
		return err;
	for (size_t i = 0; i < live.n; i++) {
		const struct xdpr_flt_spec *r = &live.r[i];

		stale |= r->in[0] && if_nametoindex(r->in) != r->in_ifindex;
		stale |= r->out[0] && if_nametoindex(r->out) != r->out_ifindex;
	}
	if (!stale) {
		xdpr_flt_list_free(&live);
		return 0;
	}
	if (copy_list(&live, &nl, 0)) {
		xdpr_flt_list_free(&live);
		seterr(x, "out of memory");
		return -ENOMEM;
	}
	return finish(x, &c, &live, &nl, 0);
}
