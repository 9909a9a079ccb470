// SPDX-License-Identifier: GPL-2.0
/*
 * npt.c - NPTv6 rules (RFC 6296), the tables bpf/npt6.h reads.
 *
 * xdpr_npt holds two tables; xdpr_cfg.flags says which one is live
 * (XDPR_CFG_NPT_SLOT) and whether there are rules at all (XDPR_CFG_NPT).
 * A change copies the live table, edits the copy, writes it whole into the
 * spare slot (no packet reads that one: every run that could have read it
 * before the last flip has ended, xdpr_packets_settled) and then flips the
 * bit: the commit, one word.  A killed command leaves at most a spare slot
 * nobody reads.  A rule keeps its index (its counters) while it exists; a
 * new rule's counters are zeroed before the commit.
 *
 * The adjustment (RFC 6296 3.2-3.7): the one's complement sum of the inside
 * prefix minus that of the outside prefix, added to word 3 (bits 48-63)
 * for prefixes of 48 bits or fewer, else to the first word of the
 * interface identifier (words 4-7) that is not 0xffff; a result of 0xffff
 * is written 0x0000.  Addresses whose word is 0xffff (all four, for longer
 * prefixes) have no mapping and are dropped by the packet path.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include "core.h"

#define ERR(...) (snprintf(err, len, __VA_ARGS__), -EINVAL)

static __u16 ocsum_add(__u32 a, __u32 b)
{
	__u32 s = a + b;

	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

/* One's complement sum of the 16-bit words of the first 64 bits, network order read. */
static __u16 pfx_sum(const __be32 *p)
{
	const __u8 *b = (const __u8 *)p;
	__u32 s = 0;

	for (int i = 0; i < 8; i += 2)
		s = ocsum_add(s, (b[i] << 8) | b[i + 1]);
	return s;
}

static const char *reserved(const __u8 *a)
{
	static const __u8 zero[16];

	if (a[0] == 0xff)
		return "multicast";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return "link-local";
	if (!memcmp(a, zero, 8))
		return "unspecified or loopback (::/64)";
	return NULL;
}

int xdpr_npt_make(struct xdpr_npt_rule *r, const __u8 *inside, unsigned int inside_len,
		  const __u8 *outside, unsigned int outside_len, char *err, size_t len)
{
	const __u8 *p[2] = { inside, outside };
	char a[INET6_ADDRSTRLEN];
	unsigned int plen = inside_len;
	__u64 m;

	memset(r, 0, sizeof(*r));
	if (inside_len != outside_len)
		return ERR("the prefixes differ in length (/%u and /%u): NPTv6 maps prefixes of one length",
			   inside_len, outside_len);
	if (plen < 1 || plen > 64)
		return ERR("prefix length /%u: NPTv6 maps prefixes of 1 to 64 bits", plen);
	m = plen == 64 ? ~0ULL : ~(~0ULL >> plen);
	r->mask[0] = htonl(m >> 32);
	r->mask[1] = htonl((__u32)m);
	for (int k = 0; k < 2; k++) {
		__be32 w[4];
		const char *why;

		memcpy(w, p[k], 16);
		inet_ntop(AF_INET6, p[k], a, sizeof(a));
		if ((w[0] & ~r->mask[0]) || (w[1] & ~r->mask[1]) || w[2] || w[3])
			return ERR("host bits set in %s prefix %s/%u", k ? "outside" : "inside", a, plen);
		if ((why = reserved(p[k])))
			return ERR("%s prefix %s/%u is %s: not a prefix a router can translate",
				   k ? "outside" : "inside", a, plen, why);
		memcpy(k ? r->outside : r->inside, w, 8);
	}
	if (!memcmp(r->inside, r->outside, 8))
		return ERR("the inside and outside prefixes are the same");
	r->plen = plen;
	r->word = plen <= 48 ? 3 : 4;
	/* out: + sum(inside) - sum(outside); in: the other way (one's complement) */
	r->adj_out = ocsum_add(pfx_sum(r->inside), (__u16)~pfx_sum(r->outside));
	r->adj_in = ocsum_add(pfx_sum(r->outside), (__u16)~pfx_sum(r->inside));
	return 0;
}

/* Does a/alen overlap b/blen (first 64 bits)? */
static bool overlaps(const __be32 *a, const __be32 *b, const __be32 *am, const __be32 *bm)
{
	__be32 m0 = am[0] & bm[0], m1 = am[1] & bm[1];

	return !((a[0] ^ b[0]) & m0) && !((a[1] ^ b[1]) & m1);
}

static int live_slot(struct xdpr *x, struct xdpr_cfg *cfg, __u32 *slot)
{
	__u32 zero = 0;

	if (x->fd[XM_NPT] < 0 || x->fd[XM_NPT_STATS] < 0 || x->fd[XM_CFG] < 0) {
		seterr(x, "this router has no NPTv6 tables (attached by an older xdpr: detach and attach again)");
		return -ENOENT;
	}
	if (bpf_map_lookup_elem(x->fd[XM_CFG], &zero, cfg)) {
		seterr(x, "cannot read the configuration: %s", strerror(errno));
		return -errno;
	}
	*slot = cfg->flags & XDPR_CFG_NPT_SLOT ? 1 : 0;
	return 0;
}

static int read_tab(struct xdpr *x, struct xdpr_cfg *cfg, struct xdpr_npt_tab *t)
{
	__u32 slot;
	int err = live_slot(x, cfg, &slot);

	if (err)
		return err;
	if (!(cfg->flags & XDPR_CFG_NPT)) {
		memset(t, 0, sizeof(*t));
		return 0;
	}
	if (bpf_map_lookup_elem(x->fd[XM_NPT], &slot, t)) {
		seterr(x, "cannot read the NPTv6 rules: %s", strerror(errno));
		return -errno;
	}
	if (t->n > XDPR_NPT_MAX)
		t->n = XDPR_NPT_MAX;
	return 0;
}

/* Write t into the spare slot, then make it live: the commit. */
static int commit(struct xdpr *x, struct xdpr_cfg *cfg, struct xdpr_npt_tab *t)
{
	__u32 zero = 0, spare = cfg->flags & XDPR_CFG_NPT_SLOT ? 0 : 1, used = 0;

	while (t->n && !t->r[t->n - 1].ifindex)
		t->n--;
	for (__u32 i = 0; i < t->n; i++)
		used += t->r[i].ifindex != 0;
	/* a run that read the spare slot before the last flip has ended */
	xdpr_packets_settled();
	if (bpf_map_update_elem(x->fd[XM_NPT], &spare, t, BPF_ANY)) {
		seterr(x, "cannot write the NPTv6 rules: %s", strerror(errno));
		return -errno;
	}
	cfg->flags = (cfg->flags & ~(XDPR_CFG_NPT | XDPR_CFG_NPT_SLOT)) | (spare ? XDPR_CFG_NPT_SLOT : 0) |
		     (used ? XDPR_CFG_NPT : 0);
	if (bpf_map_update_elem(x->fd[XM_CFG], &zero, cfg, BPF_ANY)) {
		seterr(x, "cannot write the configuration: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* An address of this host in the first 64 bits of prefix p/m: its text in buf. */
static bool own_address_in(const __be32 *p, const __be32 *m, char *buf, size_t len, char *dev)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		const struct sockaddr_in6 *s = (const void *)i->ifa_addr;
		__be32 a[4];

		if (!s || s->sin6_family != AF_INET6)
			continue;
		memcpy(a, &s->sin6_addr, 16);
		if (overlaps(a, p, m, m)) {
			inet_ntop(AF_INET6, &s->sin6_addr, buf, len);
			snprintf(dev, IF_NAMESIZE, "%s", i->ifa_name);
			found = true;
		}
	}
	freeifaddrs(ifa);
	return found;
}

static void fmt_pfx(const __be32 *p, unsigned int plen, char *buf, size_t len)
{
	__u8 a[16] = {};
	char s[INET6_ADDRSTRLEN];

	memcpy(a, p, 8);
	inet_ntop(AF_INET6, a, s, sizeof(s));
	snprintf(buf, len, "%s/%u", s, plen);
}

int xdpr_npt_add(struct xdpr *x, const char *dev, const struct xdpr_npt_rule *nr)
{
	static struct xdpr_npt_tab t;
	struct xdpr_npt_rule r = *nr;
	char a[INET6_ADDRSTRLEN], b[64], c[64], odev[IF_NAMESIZE];
	struct xdpr_cfg cfg;
	__u32 ifindex = 0, slot = XDPR_NPT_MAX;
	int err, ncpu = xdpr_ncpus();
	void *zeros;

	for (int i = 0; i < x->nlinks; i++)
		if (!strcmp(x->links[i].name, dev))
			ifindex = x->links[i].ifindex;
	if (!ifindex) {
		seterr(x, "\"%s\" is not attached to xdpr (attach it first: NPTv6 rules name an attached "
			  "outside interface)", dev);
		return -ENODEV;
	}
	err = read_tab(x, &cfg, &t);
	if (err)
		return err;
	for (__u32 i = 0; i < t.n; i++) {
		const struct xdpr_npt_rule *o = &t.r[i];

		if (!o->ifindex)
			continue;
		if (o->ifindex == ifindex && !memcmp(o->inside, r.inside, 8) && o->plen == r.plen) {
			fmt_pfx(r.inside, r.plen, b, sizeof(b));
			seterr(x, "\"%s\" has an NPTv6 rule for inside %s already (delete it first)", dev, b);
			return -EEXIST;
		}
		if (overlaps(o->inside, r.inside, o->mask, r.mask) || overlaps(o->outside, r.outside, o->mask, r.mask) ||
		    overlaps(o->inside, r.outside, o->mask, r.mask) || overlaps(o->outside, r.inside, o->mask, r.mask)) {
			fmt_pfx(o->inside, o->plen, b, sizeof(b));
			fmt_pfx(o->outside, o->plen, c, sizeof(c));
			seterr(x, "the prefixes overlap those of the NPTv6 rule on \"%s\" (inside %s outside %s)",
			       o->ifname, b, c);
			return -EBUSY;
		}
	}
	if (overlaps(r.inside, r.outside, r.mask, r.mask)) {
		seterr(x, "the inside and outside prefixes overlap");
		return -EBUSY;
	}
	if (own_address_in(r.outside, r.mask, a, sizeof(a), odev)) {
		fmt_pfx(r.outside, r.plen, b, sizeof(b));
		seterr(x, "outside prefix %s holds %s, an address of this router (on \"%s\"): its traffic "
			  "would be translated", b, a, odev);
		return -EADDRINUSE;
	}
	for (__u32 i = 0; i < XDPR_NPT_MAX && slot == XDPR_NPT_MAX; i++)
		if (i >= t.n || !t.r[i].ifindex)
			slot = i;
	if (slot == XDPR_NPT_MAX) {
		seterr(x, "no room for another NPTv6 rule (at most %d)", XDPR_NPT_MAX);
		return -ENOSPC;
	}
	r.ifindex = ifindex;
	snprintf(r.ifname, sizeof(r.ifname), "%s", dev);
	/* its counters start at zero */
	zeros = calloc(ncpu > 0 ? ncpu : 1, sizeof(struct xdpr_npt_ctr));
	if (!zeros || bpf_map_update_elem(x->fd[XM_NPT_STATS], &slot, zeros, BPF_ANY)) {
		err = zeros ? -errno : -ENOMEM;
		free(zeros);
		seterr(x, "cannot reset the NPTv6 counters: %s", strerror(-err));
		return err;
	}
	free(zeros);
	t.r[slot] = r;
	if (slot >= t.n)
		t.n = slot + 1;
	return commit(x, &cfg, &t);
}

int xdpr_npt_del(struct xdpr *x, const char *dev, const __u8 *inside, unsigned int plen)
{
	static struct xdpr_npt_tab t;
	struct xdpr_cfg cfg;
	int err, gone = 0;
	__be32 in[2] = {};

	if (inside)
		memcpy(in, inside, 8);
	err = read_tab(x, &cfg, &t);
	if (err)
		return err;
	for (__u32 i = 0; i < t.n; i++) {
		struct xdpr_npt_rule *o = &t.r[i];
		char now[IF_NAMESIZE];
		bool named;

		if (!o->ifindex)
			continue;
		named = !strncmp(o->ifname, dev, IF_NAMESIZE) ||
			(if_indextoname(o->ifindex, now) && !strcmp(now, dev));
		if (!named || (inside && (o->plen != plen || memcmp(o->inside, in, 8))))
			continue;
		memset(o, 0, sizeof(*o));
		gone++;
	}
	if (!gone) {
		seterr(x, "no NPTv6 rule on \"%s\"%s", dev, inside ? " for that inside prefix" : "");
		return -ENOENT;
	}
	return commit(x, &cfg, &t);
}

int xdpr_npt_flush(struct xdpr *x)
{
	static struct xdpr_npt_tab t;
	struct xdpr_cfg cfg;
	int err;

	if (x->fd[XM_NPT] < 0)
		return 0; /* an older router: none */
	err = read_tab(x, &cfg, &t);
	if (err || !t.n)
		return err;
	memset(&t, 0, sizeof(t));
	return commit(x, &cfg, &t);
}

int xdpr_npt_list(struct xdpr *x, struct xdpr_npt_info *out, int max)
{
	static struct xdpr_npt_tab t;
	struct xdpr_cfg cfg;
	int err, n = 0, ncpu = xdpr_ncpus();
	struct xdpr_npt_ctr *pc;

	err = read_tab(x, &cfg, &t);
	if (err)
		return err;
	pc = calloc(ncpu > 0 ? ncpu : 1, sizeof(*pc));
	if (!pc) {
		seterr(x, "out of memory");
		return -ENOMEM;
	}
	for (__u32 i = 0; i < t.n && n < max; i++) {
		struct xdpr_npt_info *o = &out[n];
		const struct xdpr_npt_rule *r = &t.r[i];

		if (!r->ifindex)
			continue;
		memset(o, 0, sizeof(*o));
		o->index = i;
		o->r = *r;
		if (!if_indextoname(r->ifindex, o->dev))
			snprintf(o->dev, sizeof(o->dev), "%s", r->ifname);
		for (int k = 0; k < x->nlinks; k++)
			if (x->links[k].ifindex == r->ifindex)
				o->attached = true;
		memcpy(o->inside, r->inside, 8);
		memcpy(o->outside, r->outside, 8);
		if (bpf_map_lookup_elem(x->fd[XM_NPT_STATS], &i, pc)) {
			err = -errno;
			seterr(x, "cannot read the NPTv6 counters: %s", strerror(-err));
			free(pc);
			return err;
		}
		for (int c = 0; c < ncpu; c++) {
			o->c.out += pc[c].out;
			o->c.in += pc[c].in;
			o->c.icmp += pc[c].icmp;
			o->c.pass += pc[c].pass;
			o->c.drop += pc[c].drop;
			if (c < XDPR_MAX_CPUS)
				o->cpu[c] = pc[c];
		}
		n++;
	}
	free(pc);
	return n;
}
