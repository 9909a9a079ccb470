// SPDX-License-Identifier: GPL-2.0
/*
 * test_rtindex.c - the route lookup index (loader/rtindex.c) against a plain
 * longest-prefix match.  Random tables of nested prefixes of every length,
 * both families, are built with xdpr_rt_index; then addresses inside and
 * around those prefixes are looked up by walking the blocks the way
 * bpf/route.h does and by scanning every route; the answers must agree.
 * The router's own addresses inside a route must read "local".  Also: the
 * empty table, default routes, the index's size for a table of /24s, and
 * the errors.  No kernel needed.  TAP on stdout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "xdpr_shared.h"
#include "libxdpr.h"
#include "../tap.h"

/* The packet path's walk (bpf/route.h rt_lookup): record index + 1, or 0. */
static __u32 walk(const struct xdpr_dir_block *b, size_t nb, int family, const __u8 *a)
{
	unsigned int len = family == AF_INET6 ? 16 : 4, i;
	__u32 e = b[(family == AF_INET6 ? XDPR_DIR_V6 : XDPR_DIR_V4) + a[0]].e[a[1]];

	for (i = 2; i < len && (e & XDPR_DIR_GROUP); i++) {
		__u32 blk = e & ~XDPR_DIR_GROUP;

		if (blk >= nb)
			return 0xffffffff; /* a group pointing outside the index */
		e = b[blk].e[a[i]];
	}
	return e & XDPR_DIR_GROUP ? 0xfffffffe : e;
}

static bool covers(const struct xdpr_rtent *r, int family, const __u8 *a)
{
	unsigned int full = r->plen / 8, rest = r->plen % 8;

	if (r->family != family || memcmp(r->addr, a, full))
		return false;
	return !rest || !((r->addr[full] ^ a[full]) & (0xff00 >> rest));
}

/* Longest match by scanning every route: record index + 1, or 0. */
static __u32 scan(const struct xdpr_rtent *rec, size_t n, int family, const __u8 *a)
{
	int best = -1;
	__u32 idx = 0;

	for (size_t i = 0; i < n; i++)
		if (covers(&rec[i], family, a) && (int)rec[i].plen > best) {
			best = rec[i].plen;
			idx = i + 1;
		}
	return idx;
}

static void set_prefix(struct xdpr_rtent *r, int family, const __u8 *a, unsigned int plen)
{
	memset(r, 0, sizeof(*r));
	r->family = family;
	r->plen = plen;
	memcpy(r->addr, a, family == AF_INET6 ? 16 : 4);
	for (unsigned int bit = plen; bit < 128; bit++)
		r->addr[bit / 8] &= ~(0x80 >> (bit % 8));
}

/* Give address a the prefix bits of r (its host bits stay). */
static void put_inside(__u8 *a, const struct xdpr_rtent *r)
{
	for (unsigned int bit = 0; bit < r->plen; bit++)
		if (r->addr[bit / 8] & (0x80 >> (bit % 8)))
			a[bit / 8] |= 0x80 >> (bit % 8);
		else
			a[bit / 8] &= ~(0x80 >> (bit % 8));
}

static bool same_prefix(const struct xdpr_rtent *x, const struct xdpr_rtent *y)
{
	return x->family == y->family && x->plen == y->plen && !memcmp(x->addr, y->addr, 16);
}

/*
 * n distinct prefixes of a family, lengths 0..max, most of them inside a
 * few "hot" /12s (v4) or /32s (v6) so they nest at every level.
 */
static size_t random_table(struct xdpr_rtent *rec, size_t n, int family)
{
	unsigned int max = family == AF_INET6 ? 128 : 32, len = max / 8;
	size_t k = 0;

	while (k < n) {
		__u8 a[16] = { 0 };
		unsigned int plen = rand() % (max + 1);
		bool dup = false;

		for (unsigned int i = 0; i < len; i++)
			a[i] = rand();
		if (rand() % 8) { /* hot areas */
			a[0] = family == AF_INET6 ? 0x20 : 10 + rand() % 3;
			a[1] = family == AF_INET6 ? 0x01 : (a[1] & 0x0f);
			if (family == AF_INET6) {
				a[2] = 0x0d;
				a[3] = 0xb8 + rand() % 2;
				a[4] = rand() % 4;
			}
		}
		set_prefix(&rec[k], family, a, plen);
		for (size_t j = 0; j < k && !dup; j++)
			dup = same_prefix(&rec[j], &rec[k]);
		if (!dup)
			k++;
	}
	return k;
}

/* The router's addresses the index was built with (see check). */
static const struct xdpr_rtent *locals;
static size_t nlocals;

static bool is_local(int family, const __u8 *a)
{
	for (size_t i = 0; i < nlocals; i++)
		if (locals[i].family == family && !memcmp(locals[i].addr, a, family == AF_INET6 ? 16 : 4))
			return true;
	return false;
}

/*
 * Addresses to ask: inside each route with random host bits, and fully
 * random ones.  The answer must be the longest prefix's record, or
 * "local" for a router address inside a route.
 */
static int check(const struct xdpr_rtent *rec, size_t n, const struct xdpr_dir_block *b, size_t nb,
		 int family, int probes, __u32 *first_bad)
{
	unsigned int len = family == AF_INET6 ? 16 : 4;
	int bad = 0;
	__u32 want;

	for (int p = 0; p < probes; p++) {
		__u8 a[16] = { 0 };

		for (unsigned int i = 0; i < len; i++)
			a[i] = rand();
		if (n && p % 4) {
			const struct xdpr_rtent *r = &rec[rand() % n];

			put_inside(a, r);
		}
		want = scan(rec, n, family, a);
		if (want && is_local(family, a))
			want = XDPR_DIR_LOCAL;
		if (walk(b, nb, family, a) != want && !bad++)
			*first_bad = p;
	}
	return bad;
}

int main(void)
{
	static struct xdpr_rtent rec[12000];
	struct xdpr_dir_block *b;
	size_t nb, n4, n6;
	__u32 fb = 0;
	int err, bad;

	srand(20261130);

	/* empty: just the two first levels, nothing found */
	err = xdpr_rt_index(rec, 0, NULL, 0, &b, &nb);
	tap_ok(!err && nb == XDPR_DIR_GROUPS, "empty table: %zu blocks (the two first levels)", nb);
	if (!err) {
		bad = check(rec, 0, b, nb, AF_INET, 1000, &fb) + check(rec, 0, b, nb, AF_INET6, 1000, &fb);
		tap_ok(!bad, "empty table: 2000 lookups find nothing (%d wrong)", bad);
		free(b);
	}

	/* default routes: everything matches, nothing more is needed */
	{
		__u8 z[16] = { 0 };

		set_prefix(&rec[0], AF_INET, z, 0);
		set_prefix(&rec[1], AF_INET6, z, 0);
		err = xdpr_rt_index(rec, 2, NULL, 0, &b, &nb);
		tap_ok(!err && nb == XDPR_DIR_GROUPS, "0.0.0.0/0 and ::/0: %zu blocks", nb);
		if (!err) {
			bad = check(rec, 2, b, nb, AF_INET, 1000, &fb) + check(rec, 2, b, nb, AF_INET6, 1000, &fb);
			tap_ok(!bad, "default routes: every lookup finds its family's (%d wrong)", bad);
			free(b);
		}
	}

	/* random nested tables: the index agrees with a scan of every route */
	for (int round = 0; round < 3; round++) {
		n4 = random_table(rec, 6000, AF_INET);
		n6 = random_table(rec + n4, 6000, AF_INET6);
		err = xdpr_rt_index(rec, n4 + n6, NULL, 0, &b, &nb);
		tap_ok(!err, "random table %d: %zu IPv4 + %zu IPv6 prefixes of lengths 0-32/0-128 "
		       "indexed in %zu blocks", round + 1, n4, n6, nb);
		if (err)
			continue;
		bad = check(rec, n4 + n6, b, nb, AF_INET, 15000, &fb);
		tap_ok(!bad, "random table %d: 15000 IPv4 lookups match the longest prefix (%d wrong, "
		       "first at probe %u)", round + 1, bad, fb);
		bad = check(rec, n4 + n6, b, nb, AF_INET6, 15000, &fb);
		tap_ok(!bad, "random table %d: 15000 IPv6 lookups match the longest prefix (%d wrong, "
		       "first at probe %u)", round + 1, bad, fb);
		free(b);
	}

	/*
	 * The router's own addresses: those a route covers become host entries
	 * saying "local" (the packet path leaves them to the FIB), the others
	 * change nothing; every other address still finds its longest prefix.
	 */
	{
		static struct xdpr_rtent local[400];
		size_t nl = 0, covered = 0, nb0;
		int wrong = 0;

		n4 = random_table(rec, 3000, AF_INET);
		n6 = random_table(rec + n4, 3000, AF_INET6);
		for (size_t i = 0; i < 400; i++) {
			struct xdpr_rtent *l = &local[nl++];
			int fam = i % 2 ? AF_INET6 : AF_INET;
			unsigned int len = fam == AF_INET6 ? 16 : 4;

			memset(l, 0, sizeof(*l));
			l->family = fam;
			for (unsigned int k = 0; k < len; k++)
				l->addr[k] = rand();
			if (i % 4 < 2) { /* half of them inside a route of their family */
				const struct xdpr_rtent *r = &rec[fam == AF_INET ? rand() % n4 : n4 + rand() % n6];

				put_inside(l->addr, r);
			}
		}
		err = xdpr_rt_index(rec, n4 + n6, NULL, 0, &b, &nb0);
		if (!err)
			free(b);
		err = err ? err : xdpr_rt_index(rec, n4 + n6, local, nl, &b, &nb);
		tap_ok(!err, "random table with 400 router addresses indexed (%zu blocks, %zu without them)",
		       nb, nb0);
		if (!err) {
			for (size_t i = 0; i < nl; i++) {
				__u32 want = scan(rec, n4 + n6, local[i].family, local[i].addr);

				covered += want != 0;
				wrong += walk(b, nb, local[i].family, local[i].addr) != (want ? XDPR_DIR_LOCAL : 0);
			}
			tap_ok(!wrong && covered >= 200, "router addresses: the %zu inside a route read \"local\", "
			       "the %zu outside any no route (%d wrong)", covered, nl - covered, wrong);
			locals = local;
			nlocals = nl;
			bad = check(rec, n4 + n6, b, nb, AF_INET, 15000, &fb) +
			      check(rec, n4 + n6, b, nb, AF_INET6, 15000, &fb);
			locals = NULL;
			nlocals = 0;
			tap_ok(!bad, "... and 30000 lookups around them find the longest prefix, or \"local\" "
			       "for a router address (%d wrong)", bad);
			free(b);
		}
	}

	/* one /8 and two router addresses, one inside it: only that one costs blocks */
	{
		struct xdpr_rtent l[2] = { { .family = AF_INET, .addr = { 10, 1, 2, 3 } },
					   { .family = AF_INET, .addr = { 192, 168, 1, 1 } } };
		__u8 net[4] = { 10 };

		set_prefix(&rec[0], AF_INET, net, 8);
		err = xdpr_rt_index(rec, 1, l, 2, &b, &nb);
		tap_ok(!err && nb == XDPR_DIR_GROUPS + 2 && walk(b, nb, AF_INET, l[0].addr) == XDPR_DIR_LOCAL &&
		       walk(b, nb, AF_INET, l[1].addr) == 0 && walk(b, nb, AF_INET, (__u8[]){ 10, 1, 2, 4 }) == 1,
		       "10.0.0.0/8 with router addresses 10.1.2.3 and 192.168.1.1: 10.1.2.3 \"local\" "
		       "(2 blocks more), 192.168.1.1 no route, 10.1.2.4 the /8");
		if (!err)
			free(b);
	}

	/*
	 * Size: 4096 /24s over 100.0.0.0/12 need one group per /16 they
	 * fall in (16), whatever their number; the /32 of one more adds two.
	 */
	for (int i = 0; i < 4096; i++) {
		__u8 a[4] = { 100, i >> 8, i & 0xff, 0 };

		set_prefix(&rec[i], AF_INET, a, 24);
	}
	{
		__u8 h[4] = { 100, 0, 7, 9 };

		set_prefix(&rec[4096], AF_INET, h, 32);
	}
	err = xdpr_rt_index(rec, 4096, NULL, 0, &b, &nb);
	tap_ok(!err && nb == XDPR_DIR_GROUPS + 16, "4096 /24s in 16 /16s: %zu blocks (512 + 16)", nb);
	if (!err)
		free(b);
	err = xdpr_rt_index(rec, 4097, NULL, 0, &b, &nb);
	tap_ok(!err && nb == XDPR_DIR_GROUPS + 17, "... plus a /32 inside one of them: %zu blocks (one more)",
	       nb);
	if (!err) {
		__u8 in[4] = { 100, 0, 7, 9 }, next[4] = { 100, 0, 7, 10 };

		tap_ok(walk(b, nb, AF_INET, in) == 4097 && walk(b, nb, AF_INET, next) == 8 /* 100.0.7.0/24 is rec[7] */,
		       "... 100.0.7.9 finds the /32, 100.0.7.10 its /24");
		free(b);
	}

	/* a length the family cannot have is refused */
	{
		__u8 a[16] = { 10 };

		set_prefix(&rec[0], AF_INET, a, 32);
		rec[0].plen = 33;
		err = xdpr_rt_index(rec, 1, NULL, 0, &b, &nb);
		tap_ok(err == -EINVAL, "IPv4 /33: -EINVAL (got %d)", err);
		if (!err)
			free(b);
		rec[0].plen = 200;
		err = xdpr_rt_index(rec, 1, NULL, 0, &b, &nb);
		tap_ok(err == -EINVAL, "IPv4 /200: -EINVAL (got %d)", err);
		if (!err)
			free(b);
		rec[0].family = AF_INET6;
		rec[0].plen = 129;
		err = xdpr_rt_index(rec, 1, NULL, 0, &b, &nb);
		tap_ok(err == -EINVAL, "IPv6 /129: -EINVAL (got %d)", err);
		if (!err)
			free(b);
		rec[0].family = 0;
		rec[0].plen = 8;
		err = xdpr_rt_index(rec, 1, NULL, 0, &b, &nb);
		tap_ok(err == -EINVAL, "a record of no family: -EINVAL (got %d)", err);
		if (!err)
			free(b);
	}
	tap_plan(tap_n);
	return tap_done();
}
