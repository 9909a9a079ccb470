// SPDX-License-Identifier: GPL-2.0
/*
 * ddos.c - DDoS meters and bans (bpf/ddos.h): protected prefixes, the
 * per-host meters with their per-CPU shares summed, and the ban table,
 * written the same on every CPU (the datapath adds only to its own CPU's
 * drop counters, which a replaced ban keeps).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "core.h"

__u64 xdpr_ddos_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

const char *xdpr_ddos_reason_name(__u32 reason)
{
	switch (reason) {
	case XDPR_DDOS_R_MANUAL: return "manual";
	case XDPR_DDOS_R_PPS: return "pps";
	case XDPR_DDOS_R_BPS: return "bps";
	}
	return "?";
}

static int alen(int family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

static long meters_count(struct xdpr *x, int dir);
#define SLOTS_HOSTS 1u /* slots_clear: the slots of metered hosts */
#define SLOTS_OUT   2u /* slots_clear: the slots marked XDPR_DDOS_SLOT_OUT */
static long slots_clear(struct xdpr *x, unsigned int which,
			bool (*match)(const struct xdpr_ddos_key *k, const void *arg), const void *arg);

static int cfg_flag(struct xdpr *x, __u32 flag, bool on)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (err)
		return err;
	if (!!(c.flags & flag) == on)
		return 0;
	if (on)
		c.flags |= flag;
	else
		c.flags &= ~flag;
	return xdpr_cfg_set(x, &c);
}

int xdpr_ddos_set(struct xdpr *x, bool on)
{
	return cfg_flag(x, XDPR_CFG_DDOS, on);
}

int xdpr_ddos_set_sample(struct xdpr *x, __u32 n)
{
	struct xdpr_cfg c;
	int err;

	if (n > XDPR_SAMPLE_MAX) {
		seterr(x, "sample %u: at most %d", n, XDPR_SAMPLE_MAX);
		return -EINVAL;
	}
	err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	c.ddos_sample = n ? n : 1;
	return xdpr_cfg_set(x, &c);
}

int xdpr_ddos_get_sample(struct xdpr *x, __u32 *n)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (!err)
		*n = c.ddos_sample ? c.ddos_sample : 1;
	return err;
}

/* Set the bit of k in xdpr_ddos_bits (a ban is about to be made). */
static int bit_set(struct xdpr *x, const struct xdpr_ddos_key *k)
{
	__u32 b = xdpr_ddos_bit(k), w = b / 64;
	int fd = x->fd[XM_DDOS_BITS];
	__u64 v;

	if (bpf_map_lookup_elem(fd, &w, &v))
		goto fail;
	if (v >> (b % 64) & 1)
		return 0;
	v |= 1ULL << (b % 64);
	if (!bpf_map_update_elem(fd, &w, &v, BPF_ANY))
		return 0;
fail:
	seterr(x, "cannot write the ban bitmap: %s", strerror(errno));
	return -errno;
}

static int bits_of(const struct xdpr_ddos_ban_info *b, void *arg)
{
	struct xdpr_ddos_key k = { .family = b->family, .dir = b->dir };
	__u64 *bits = arg;
	__u32 i;

	memcpy(k.addr, b->addr, sizeof(k.addr));
	i = xdpr_ddos_bit(&k);
	bits[i / 64] |= 1ULL << (i % 64);
	return 0;
}

/*
 * After bans were removed: every word of the bitmap rewritten from the bans
 * that remain (a word is written whole, the bits of those bans in it stay
 * set throughout).
 */
static int bits_rebuild(struct xdpr *x)
{
	__u64 *want = calloc(XDPR_DDOS_BITS_WORDS, sizeof(*want)), *have = calloc(XDPR_DDOS_BITS_WORDS, sizeof(*have));
	__u32 *keys = calloc(XDPR_DDOS_BITS_WORDS, sizeof(*keys)), n = XDPR_DDOS_BITS_WORDS, out;
	int fd = x->fd[XM_DDOS_BITS], err;

	if (!want || !have || !keys) {
		seterr(x, "cannot rebuild the ban bitmap: %s", strerror(ENOMEM));
		err = -ENOMEM;
		goto out;
	}
	err = xdpr_ddos_ban_foreach(x, bits_of, want);
	/* the words as they are, in one call where the kernel can (word by word where not) */
	if (!err) {
		int r = bpf_map_lookup_batch(fd, NULL, &out, keys, have, &n, NULL);

		if ((r && errno != ENOENT) || n != XDPR_DDOS_BITS_WORDS)
			for (__u32 w = 0; w < XDPR_DDOS_BITS_WORDS && !err; w++)
				if (bpf_map_lookup_elem(fd, &w, &have[w]))
					err = -errno;
	}
	for (__u32 w = 0; !err && w < XDPR_DDOS_BITS_WORDS; w++)
		if (have[w] != want[w] && bpf_map_update_elem(fd, &w, &want[w], BPF_ANY))
			err = -errno;
	if (err && err != -ENOMEM)
		seterr(x, "cannot rebuild the ban bitmap: %s", strerror(-err));
out:
	free(want);
	free(have);
	free(keys);
	return err;
}

int xdpr_ddos_stats(struct xdpr *x, struct xdpr_ddos_stats *s)
{
	int ncpu = xdpr_ncpus(), err = 0;
	struct xdpr_ddos_stat *pc;
	__u32 zero = 0;

	memset(s, 0, sizeof(*s));
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	pc = calloc(ncpu, sizeof(*pc));
	if (!pc || bpf_map_lookup_elem(x->fd[XM_DDOS_STATS], &zero, pc)) {
		err = pc ? -errno : -ENOMEM;
		seterr(x, "cannot read the DDoS counters: %s", strerror(-err));
		free(pc);
		return err;
	}
	for (int i = 0; i < ncpu; i++) {
		s->metered += pc[i].metered;
		s->untracked += pc[i].untracked;
		s->banned += pc[i].banned;
	}
	free(pc);
	return 0;
}

int xdpr_ddos_get(struct xdpr *x, bool *on, __u64 *untracked, __u64 *hosts, __u64 *max)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (err)
		return err;
	if (on)
		*on = c.flags & XDPR_CFG_DDOS;
	if (untracked) {
		struct xdpr_ddos_stats s;

		err = xdpr_ddos_stats(x, &s);
		if (err)
			return err;
		*untracked = s.untracked;
	}
	if (hosts) {
		long n = meters_count(x, XDPR_DDOS_TO);

		if (n < 0)
			return n;
		*hosts = n;
	}
	if (max) {
		err = xdpr_map_max(x, XM_DDOS_TO, "the DDoS meter table's size", max);
		if (!err)
			*max += XDPR_DDOS_SLOTS;
	}
	return err;
}

static void prot_key(struct xdpr_ddos_prot_key *k, int family, const void *addr, int plen)
{
	memset(k, 0, sizeof(*k));
	k->plen = 8 + plen;
	k->family = family;
	memcpy(k->addr, addr, alen(family));
}

static bool in_prefix(const __u8 *a, const __u8 *net, int plen)
{
	for (int b = 0; b < plen; b++)
		if ((a[b / 8] ^ net[b / 8]) & (0x80 >> (b % 8)))
			return false;
	return true;
}

struct prefix {
	int family, plen;
	const __u8 *net;
};

static bool to_in_prefix(const struct xdpr_ddos_key *k, const void *arg)
{
	const struct prefix *p = arg;

	return k->dir == XDPR_DDOS_TO && k->family == p->family && in_prefix(k->addr, p->net, p->plen);
}

/*
 * The "to" meters of hosts in family's net/plen, deleted (slots and hash):
 * the datapath counts a host that has a meter without asking whether it is
 * protected.  Once packets in flight settled, so that none that found the
 * prefix before it went makes a meter after the walk.  0 or -errno.
 */
static int unmeter(struct xdpr *x, int family, const __u8 *net, int plen)
{
	struct prefix p = { family, plen, net };
	struct xdpr_ddos_key k, next;
	int fd = x->fd[XM_DDOS_TO], more;
	long n;

	xdpr_packets_settled();
	more = !bpf_map_get_next_key(fd, NULL, &k);
	while (more) {
		more = !bpf_map_get_next_key(fd, &k, &next);
		if (to_in_prefix(&k, &p) && bpf_map_delete_elem(fd, &k) && errno != ENOENT) {
			seterr(x, "cannot delete a DDoS meter: %s", strerror(errno));
			return -errno;
		}
		k = next;
	}
	n = slots_clear(x, SLOTS_HOSTS, to_in_prefix, &p);
	return n < 0 ? (int)n : 0;
}

int xdpr_ddos_protect(struct xdpr *x, int family, const void *addr, int plen, bool add)
{
	struct xdpr_ddos_prot_key k;
	const __u8 *a = addr;
	int max = alen(family) * 8;
	__u32 one = 1;

	if (!max || plen < 0 || plen > max) {
		seterr(x, "invalid protected prefix (family %d, length %d)", family, plen);
		return -EINVAL;
	}
	for (int b = plen; b < max; b++)
		if (a[b / 8] & (0x80 >> (b % 8))) {
			seterr(x, "host bits set in the protected prefix");
			return -EINVAL;
		}
	prot_key(&k, family, addr, plen);
	if (add ? bpf_map_update_elem(x->fd[XM_DDOS_PROT], &k, &one, BPF_NOEXIST)
		: bpf_map_delete_elem(x->fd[XM_DDOS_PROT], &k)) {
		int err = -errno;
		char s[INET6_ADDRSTRLEN];

		inet_ntop(family, addr, s, sizeof(s));
		if (err == -EEXIST)
			seterr(x, "%s/%d is already protected", s, plen);
		else if (err == -ENOENT)
			seterr(x, "%s/%d is not protected", s, plen);
		else if (err == -ENOSPC || err == -E2BIG)
			seterr(x, "cannot protect %s/%d: the table of protected prefixes is full (%d)", s,
			       plen, 2 * XDPR_DDOS_PROT_MAX);
		else
			seterr(x, "cannot %s protected prefix %s/%d: %s", add ? "add" : "delete", s, plen,
			       strerror(-err));
		return err == -E2BIG ? -ENOSPC : err;
	}
	return add ? 0 : unmeter(x, family, addr, plen);
}

int xdpr_ddos_protect_foreach(struct xdpr *x, int (*cb)(int family, const void *addr, int plen, void *arg),
			      void *arg)
{
	struct xdpr_ddos_prot_key k, prev;
	int fd = x->fd[XM_DDOS_PROT], err = 0;

	for (void *p = NULL; !bpf_map_get_next_key(fd, p, &k); p = &prev) {
		err = cb(k.family, k.addr, (int)k.plen - 8, arg);
		if (err)
			return err;
		prev = k;
	}
	if (errno != ENOENT) {
		err = -errno;
		seterr(x, "cannot read the protected prefixes: %s", strerror(-err));
	}
	return err;
}

/* Walk a per-CPU hash of struct xdpr_ddos_key: the next key first, cb may delete this one. */
static int walk(struct xdpr *x, int fd, size_t vsize, const char *what,
		int (*each)(const struct xdpr_ddos_key *k, const void *v, int ncpu, void *ctx), void *ctx)
{
	int ncpu = xdpr_ncpus(), err = 0, more, end;
	struct xdpr_ddos_key cur, next;
	size_t stride = (vsize + 7) & ~7ul;
	void *v;

	if (ncpu <= 0) {
		seterr(x, "cannot count CPUs: %s", strerror(ncpu ? -ncpu : EINVAL));
		return ncpu ? ncpu : -EINVAL;
	}
	v = calloc(ncpu, stride);
	if (!v) {
		seterr(x, "cannot read %s: %s", what, strerror(ENOMEM));
		return -ENOMEM;
	}
	more = !bpf_map_get_next_key(fd, NULL, &cur);
	end = more ? 0 : errno;
	while (more) {
		more = !bpf_map_get_next_key(fd, &cur, &next);
		end = more ? 0 : errno;
		if (!bpf_map_lookup_elem(fd, &cur, v)) {
			err = each(&cur, v, ncpu, ctx);
			if (err)
				break;
		}
		cur = next;
	}
	if (!err && end != ENOENT) {
		err = -end;
		seterr(x, "cannot read %s: %s", what, strerror(end));
	}
	free(v);
	return err;
}

/* ---- the meters: slots of every CPU (the fast table) and the two hash tables, summed by key ---- */

struct rows {
	struct xdpr_ddos_host *h;
	size_t n, cap;
};

static int row_add(struct rows *r, const struct xdpr_ddos_key *k, const struct xdpr_ddos_ctr *c)
{
	struct xdpr_ddos_host *h;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 1024;
		struct xdpr_ddos_host *n = realloc(r->h, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->h = n;
		r->cap = cap;
	}
	h = &r->h[r->n++];
	memset(h, 0, sizeof(*h));
	h->family = k->family;
	h->dir = k->dir;
	memcpy(h->addr, k->addr, sizeof(h->addr));
	h->packets = c->packets;
	h->bytes = c->bytes;
	h->last_ns = c->last_ns;
	return 0;
}

/*
 * Every CPU's slots (CPU c's slot i at c * XDPR_DDOS_SLOTS + i) into a new
 * array the caller frees: in batches where the kernel can, one by one where
 * not.  NULL with x->err.
 */
static struct xdpr_ddos_slot *slots_read(struct xdpr *x, int ncpu)
{
	__u32 total = (__u32)ncpu * XDPR_DDOS_SLOTS, batch = 0, done = 0;
	struct xdpr_ddos_slot *v = malloc((size_t)total * sizeof(*v));
	__u32 *keys = malloc((size_t)total * sizeof(*keys));
	int fd = x->fd[XM_DDOS_SLOTS], err = 0;

	if (!v || !keys) {
		err = -ENOMEM;
		goto out;
	}
	while (done < total) {
		__u32 n = total - done;
		int r = bpf_map_lookup_batch(fd, done ? &batch : NULL, &batch, keys + done, v + done, &n, NULL);

		done += n;
		if (r && errno == ENOENT)
			break;
		if (r) { /* no batches here: one by one */
			for (__u32 i = done; i < total && !err; i++)
				if (bpf_map_lookup_elem(fd, &i, &v[i]))
					err = -errno;
			done = total;
		}
	}
	if (!err && done != total)
		err = -EIO;
out:
	free(keys);
	if (err) {
		seterr(x, "cannot read the DDoS meter slots: %s", strerror(-err));
		free(v);
		return NULL;
	}
	return v;
}

static int row_cmp(const void *a, const void *b)
{
	const struct xdpr_ddos_host *x = a, *y = b;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

static int hash_rows(const struct xdpr_ddos_key *k, const void *v, int ncpu, void *ctx)
{
	const struct xdpr_ddos_ctr *c = v;
	struct xdpr_ddos_ctr sum = {};

	for (int i = 0; i < ncpu; i++) {
		sum.packets += c[i].packets;
		sum.bytes += c[i].bytes;
		if (c[i].last_ns > sum.last_ns)
			sum.last_ns = c[i].last_ns;
	}
	return row_add(ctx, k, &sum);
}

/*
 * Every host with a meter (those without packets too), its shares in the
 * slots of every CPU and in the hash tables summed, sorted "to" first:
 * r->h (the caller frees it).  0 or -errno with x->err.
 */
static int meters_collect(struct xdpr *x, struct rows *r)
{
	int ncpu = xdpr_ncpus(), err;
	struct xdpr_ddos_slot *v;
	size_t out = 0;

	memset(r, 0, sizeof(*r));
	if (ncpu <= 0) {
		seterr(x, "cannot count CPUs: %s", strerror(ncpu ? -ncpu : EINVAL));
		return ncpu ? ncpu : -EINVAL;
	}
	v = slots_read(x, ncpu);
	if (!v)
		return -EIO;
	err = 0;
	for (size_t i = 0; i < (size_t)XDPR_DDOS_SLOTS * ncpu && !err; i++)
		if (v[i].key.family && !(v[i].flags & XDPR_DDOS_SLOT_OUT))
			err = row_add(r, &v[i].key, &v[i].ctr);
	free(v);
	if (err) {
		seterr(x, "cannot read the DDoS meters: %s", strerror(-err));
		goto fail;
	}
	err = walk(x, x->fd[XM_DDOS_TO], sizeof(struct xdpr_ddos_ctr), "DDoS meters", hash_rows, r);
	if (!err)
		err = walk(x, x->fd[XM_DDOS_FROM], sizeof(struct xdpr_ddos_ctr), "DDoS meters", hash_rows, r);
	if (err)
		goto fail;
	if (r->n)
		qsort(r->h, r->n, sizeof(*r->h), row_cmp);
	for (size_t i = 0; i < r->n; i++) {
		struct xdpr_ddos_host *o = &r->h[out], *h = &r->h[i];

		if (out && !row_cmp(&r->h[out - 1], h)) {
			o = &r->h[out - 1];
			o->packets += h->packets;
			o->bytes += h->bytes;
			if (h->last_ns > o->last_ns)
				o->last_ns = h->last_ns;
			continue;
		}
		if (o != h)
			*o = *h;
		out++;
	}
	r->n = out;
	return 0;
fail:
	free(r->h);
	r->h = NULL;
	r->n = 0;
	return err;
}

int xdpr_ddos_host_foreach(struct xdpr *x, int (*cb)(const struct xdpr_ddos_host *h, void *arg), void *arg)
{
	struct rows r;
	int err = meters_collect(x, &r);

	for (size_t i = 0; !err && i < r.n; i++)
		if (r.h[i].packets)
			err = cb(&r.h[i], arg);
	free(r.h);
	return err;
}

/* Hosts with a meter (without packets too) in direction dir (-1: both), or -errno with x->err. */
static long meters_count(struct xdpr *x, int dir)
{
	struct rows r;
	long n = 0;
	int err = meters_collect(x, &r);

	if (err)
		return err;
	for (size_t i = 0; i < r.n; i++)
		n += dir < 0 || r.h[i].dir == dir;
	free(r.h);
	return n;
}

static int slot_write(struct xdpr *x, __u32 i, const struct xdpr_ddos_slot *v)
{
	if (!bpf_map_update_elem(x->fd[XM_DDOS_SLOTS], &i, v, BPF_ANY))
		return 0;
	seterr(x, "cannot clear a DDoS meter slot: %s", strerror(errno));
	return -errno;
}

/*
 * Clear slot i of every CPU where k holds it.  Each CPU's slot is its own
 * array entry: a write cannot undo another CPU's counting; a packet of k
 * counted on that CPU in the same microsecond may be lost with the rest.
 * How many CPUs' slots were cleared, or -errno with x->err.
 */
static long slot_clear(struct xdpr *x, __u32 i, const struct xdpr_ddos_key *k, int ncpu)
{
	static const struct xdpr_ddos_slot zero;
	struct xdpr_ddos_slot v;
	long n = 0;

	for (int c = 0; c < ncpu; c++) {
		__u32 e = (__u32)c * XDPR_DDOS_SLOTS + i;

		if (bpf_map_lookup_elem(x->fd[XM_DDOS_SLOTS], &e, &v)) {
			seterr(x, "cannot read a DDoS meter slot: %s", strerror(errno));
			return -errno;
		}
		if (!v.key.family || (v.flags & XDPR_DDOS_SLOT_OUT) || memcmp(&v.key, k, sizeof(*k)))
			continue;
		if (slot_write(x, e, &zero))
			return -errno;
		n++;
	}
	return n;
}

static bool slot_match(const struct xdpr_ddos_slot *s, unsigned int which,
		       bool (*match)(const struct xdpr_ddos_key *k, const void *arg), const void *arg)
{
	if (!s->key.family || !(which & (s->flags & XDPR_DDOS_SLOT_OUT ? SLOTS_OUT : SLOTS_HOSTS)))
		return false;
	return !match || match(&s->key, arg);
}

/*
 * Clear every CPU's slots of the kinds in which (SLOTS_HOSTS, SLOTS_OUT)
 * whose key match accepts (match NULL: all), in one read, as slot_clear
 * does: how many metered hosts (one held by several CPUs counted once), or
 * -errno with x->err.
 */
static long slots_clear(struct xdpr *x, unsigned int which,
			bool (*match)(const struct xdpr_ddos_key *k, const void *arg), const void *arg)
{
	static const struct xdpr_ddos_slot zero;
	int ncpu = xdpr_ncpus();
	struct xdpr_ddos_slot *v;
	long hosts = 0;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	v = slots_read(x, ncpu);
	if (!v)
		return -EIO;
	for (__u32 i = 0; i < XDPR_DDOS_SLOTS; i++) {
		for (int c = 0; c < ncpu; c++) {
			__u32 e = (__u32)c * XDPR_DDOS_SLOTS + i;
			bool seen = v[e].flags & XDPR_DDOS_SLOT_OUT;

			if (!slot_match(&v[e], which, match, arg))
				continue;
			for (int d = 0; d < c && !seen; d++) {
				const struct xdpr_ddos_slot *o = &v[(size_t)d * XDPR_DDOS_SLOTS + i];

				seen = slot_match(o, which & SLOTS_HOSTS, match, arg) &&
				       !memcmp(&o->key, &v[e].key, sizeof(o->key));
			}
			hosts += !seen;
			if (slot_write(x, e, &zero)) {
				free(v);
				return -errno;
			}
		}
	}
	free(v);
	return hosts;
}

static void ban_key(struct xdpr_ddos_key *k, int family, int dir, const void *addr)
{
	memset(k, 0, sizeof(*k));
	k->family = family;
	k->dir = dir;
	memcpy(k->addr, addr, alen(family));
}

int xdpr_ddos_host_delete(struct xdpr *x, const struct xdpr_ddos_host *h)
{
	int ncpu = xdpr_ncpus(), err = 0;
	struct xdpr_ddos_key k;
	long n;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	ban_key(&k, h->family, h->dir, h->addr);
	if (bpf_map_delete_elem(x->fd[h->dir == XDPR_DDOS_TO ? XM_DDOS_TO : XM_DDOS_FROM], &k)) {
		err = -errno;
		if (err != -ENOENT) {
			seterr(x, "cannot delete a DDoS meter: %s", strerror(-err));
			return err;
		}
	}
	n = slot_clear(x, xdpr_ddos_slot_of(&k), &k, ncpu);
	if (n < 0)
		return n;
	return n ? 0 : err;
}

/*
 * Write a ban.  The ban table is not preallocated: the kernel takes a new
 * entry's per-CPU value from a cache it refills from the per-CPU allocator
 * without sleeping, which can fail for a moment after other per-CPU maps
 * came and went (bench/run saw ENOMEM on the 1,000 bans of a fresh router).
 * ENOMEM is tried again for up to 200 ms, while the allocator repopulates.
 */
static int ban_write(int fd, const struct xdpr_ddos_key *k, const struct xdpr_ddos_ban *v)
{
	struct timespec pause = { 0, 2000000 };

	for (int i = 0;; i++) {
		if (!bpf_map_update_elem(fd, k, v, BPF_ANY))
			return 0;
		if (errno != ENOMEM || i == 100)
			return -1;
		nanosleep(&pause, NULL);
	}
}

int xdpr_ddos_ban(struct xdpr *x, const struct xdpr_ddos_ban_info *b)
{
	int ncpu = xdpr_ncpus(), fd = x->fd[XM_DDOS_BANS], err;
	struct xdpr_ddos_ban *v;
	struct xdpr_ddos_key k;
	bool had;

	if (!alen(b->family) || (b->dir != XDPR_DDOS_TO && b->dir != XDPR_DDOS_FROM)) {
		seterr(x, "invalid ban (family %u, direction %u)", b->family, b->dir);
		return -EINVAL;
	}
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	v = calloc(ncpu, sizeof(*v));
	if (!v) {
		seterr(x, "cannot ban: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	ban_key(&k, b->family, b->dir, b->addr);
	had = !bpf_map_lookup_elem(fd, &k, v);
	for (int i = 0; i < ncpu; i++) {
		v[i].until_ns = b->until_ns;
		v[i].since_ns = b->since_ns;
		v[i].pps = b->pps;
		v[i].bps = b->bps;
		v[i].reason = b->reason;
		v[i].flags = b->flags;
		if (!had)
			v[i].dropped_pkts = v[i].dropped_bytes = 0;
	}
	/* the flag and the bit first: a ban in the table is looked at from its first packet */
	err = cfg_flag(x, XDPR_CFG_BANS, true);
	if (!err)
		err = bit_set(x, &k);
	if (!err && ban_write(fd, &k, v)) {
		err = -errno;
		if (err == -E2BIG || err == -ENOSPC) {
			seterr(x, "cannot ban: the ban table is full (%d)", XDPR_DDOS_BAN_MAX);
			err = -ENOSPC;
		} else {
			seterr(x, "cannot ban: %s", strerror(-err));
		}
	}
	free(v);
	return err;
}

int xdpr_ddos_unban(struct xdpr *x, int family, int dir, const void *addr)
{
	struct xdpr_ddos_key k, any;
	int fd = x->fd[XM_DDOS_BANS];

	if (!alen(family)) {
		seterr(x, "invalid address family %d", family);
		return -EINVAL;
	}
	ban_key(&k, family, dir, addr);
	if (bpf_map_delete_elem(fd, &k)) {
		int err = -errno;
		char s[INET6_ADDRSTRLEN];

		inet_ntop(family, addr, s, sizeof(s));
		if (err == -ENOENT)
			seterr(x, "%s is not banned %s", s, dir == XDPR_DDOS_TO ? "(to)" : "(from)");
		else
			seterr(x, "cannot unban %s: %s", s, strerror(-err));
		return err;
	}
	if (bpf_map_get_next_key(fd, NULL, &any) && errno == ENOENT)
		return cfg_flag(x, XDPR_CFG_BANS, false) ?: bits_rebuild(x);
	return bits_rebuild(x);
}

struct ban_walk {
	int (*cb)(const struct xdpr_ddos_ban_info *b, void *arg);
	void *arg;
};

static int ban_each(const struct xdpr_ddos_key *k, const void *v, int ncpu, void *ctx)
{
	const struct xdpr_ddos_ban *c = v;
	struct ban_walk *w = ctx;
	struct xdpr_ddos_ban_info b = {
		.family = k->family, .dir = k->dir, .reason = c[0].reason, .flags = c[0].flags,
		.until_ns = c[0].until_ns, .since_ns = c[0].since_ns, .pps = c[0].pps, .bps = c[0].bps,
	};

	memcpy(b.addr, k->addr, sizeof(b.addr));
	for (int i = 0; i < ncpu; i++) {
		b.dropped_pkts += c[i].dropped_pkts;
		b.dropped_bytes += c[i].dropped_bytes;
	}
	return w->cb(&b, w->arg);
}

int xdpr_ddos_ban_foreach(struct xdpr *x, int (*cb)(const struct xdpr_ddos_ban_info *b, void *arg), void *arg)
{
	struct ban_walk w = { cb, arg };

	return walk(x, x->fd[XM_DDOS_BANS], sizeof(struct xdpr_ddos_ban), "the ban table", ban_each, &w);
}

static bool is_to(const struct xdpr_ddos_key *k, const void *arg)
{
	(void)arg;
	return k->dir == XDPR_DDOS_TO;
}

long xdpr_ddos_flush(struct xdpr *x, unsigned int what)
{
	long n, total = 0;

	if (what & XDPR_DDOS_FLUSH_HOSTS) { /* the hosts as meters_collect counts them, then each table */
		long hosts = meters_count(x, -1);

		if (hosts < 0)
			return hosts;
		if ((n = xdpr_map_flush(x, x->fd[XM_DDOS_TO], sizeof(struct xdpr_ddos_key), "DDoS meters")) < 0 ||
		    (n = xdpr_map_flush(x, x->fd[XM_DDOS_FROM], sizeof(struct xdpr_ddos_key), "DDoS meters")) < 0 ||
		    (n = slots_clear(x, SLOTS_HOSTS | SLOTS_OUT, NULL, NULL)) < 0)
			return n;
		total += hosts;
	}
	if (what & XDPR_DDOS_FLUSH_BANS) {
		if ((n = xdpr_map_flush(x, x->fd[XM_DDOS_BANS], sizeof(struct xdpr_ddos_key), "bans")) < 0)
			return n;
		total += n;
		n = cfg_flag(x, XDPR_CFG_BANS, false) ?: bits_rebuild(x);
		if (n < 0)
			return n;
	}
	if (what & XDPR_DDOS_FLUSH_PROTECT) {
		n = xdpr_map_flush(x, x->fd[XM_DDOS_PROT], sizeof(struct xdpr_ddos_prot_key), "protected prefixes");
		if (n < 0)
			return n;
		total += n;
		/* no prefix left: no "to" meter may stay (it would go on counting) */
		xdpr_packets_settled();
		if (!(what & XDPR_DDOS_FLUSH_HOSTS) &&
		    ((n = xdpr_map_flush(x, x->fd[XM_DDOS_TO], sizeof(struct xdpr_ddos_key), "DDoS meters")) < 0 ||
		     (n = slots_clear(x, SLOTS_HOSTS, is_to, NULL)) < 0))
			return n;
	}
	return total;
}
