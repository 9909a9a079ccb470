// SPDX-License-Identifier: GPL-2.0
/*
 * rtindex.c - the route table as the packet path reads it.
 *
 * The index is a multibit trie in flat arrays (controlled prefix
 * expansion): the first level covers 16 address bits (65536 entries, blocks
 * 0-255 for IPv4, 256-511 for IPv6), every further level one byte (a group
 * of 256 entries in its own block).  A prefix of length L is written into
 * every entry its range covers at level ceil((L - 16) / 8); prefixes are
 * inserted shortest first, so a longer one simply overwrites, and a group
 * starts as 256 copies of the entry it replaces.  A lookup costs one block
 * read per level the destination's longest match sits at (IPv4: at most
 * 3), whatever the number of routes; the price is memory: one 1 KiB block
 * per distinct /16, /24 (IPv4) or longer byte boundary that has a longer
 * prefix below it.  The router's own addresses that fall inside a route are
 * added as host entries (XDPR_DIR_LOCAL), so their traffic stays the
 * kernel's without a per-packet check.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include "core.h"

struct dir {
	struct xdpr_dir_block *b;
	size_t n, cap;
};

/* A new group block whose 256 entries all say what entry e said. */
static int dir_group(struct dir *d, __u32 e, __u32 *blk)
{
	if (d->n >= XDPR_DIR_MAX_BLOCKS)
		return -E2BIG;
	if (d->n == d->cap) {
		size_t cap = d->cap * 2;
		struct xdpr_dir_block *nb = realloc(d->b, cap * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		d->b = nb;
		d->cap = cap;
	}
	for (int i = 0; i < 256; i++)
		d->b[d->n].e[i] = e;
	*blk = d->n++;
	return 0;
}

/* Fill count entries from first (an entry index: block * 256 + slot) with v. */
static int dir_fill(struct dir *d, size_t first, size_t count, __u32 v)
{
	for (size_t i = first; i < first + count; i++) {
		__u32 *e = &d->b[i / 256].e[i % 256];

		/* shortest first: nothing longer can have made a group here yet */
		if (*e & XDPR_DIR_GROUP)
			return -EINVAL;
		*e = v;
	}
	return 0;
}

static int dir_insert(struct dir *d, const struct xdpr_rtent *r, __u32 v)
{
	size_t base = (r->family == AF_INET6 ? XDPR_DIR_V6 : XDPR_DIR_V4) * 256;
	size_t top = (size_t)r->addr[0] << 8 | r->addr[1], ent;
	unsigned int rem, byte = 2;
	int err;

	if (r->plen <= 16) {
		size_t span = (size_t)1 << (16 - r->plen);

		return dir_fill(d, base + (top & ~(span - 1)), span, v);
	}
	ent = base + top;
	for (rem = r->plen - 16;; rem -= 8, byte++) {
		__u32 *e = &d->b[ent / 256].e[ent % 256], blk;

		if (!(*e & XDPR_DIR_GROUP)) {
			__u32 old = *e;

			err = dir_group(d, old, &blk); /* may move d->b: e is stale after */
			if (err)
				return err;
			d->b[ent / 256].e[ent % 256] = XDPR_DIR_GROUP | blk;
		} else {
			blk = *e & ~XDPR_DIR_GROUP;
		}
		if (rem <= 8) {
			size_t span = (size_t)1 << (8 - rem);

			return dir_fill(d, (size_t)blk * 256 + (r->addr[byte] & ~(span - 1)), span, v);
		}
		ent = (size_t)blk * 256 + r->addr[byte];
	}
}

/* What a lookup of the address finds (the packet path's walk). */
static __u32 dir_find(const struct dir *d, int family, const __u8 *a)
{
	unsigned int len = family == AF_INET6 ? 16 : 4;
	__u32 e = d->b[(family == AF_INET6 ? XDPR_DIR_V6 : XDPR_DIR_V4) + a[0]].e[a[1]];

	for (unsigned int i = 2; i < len && (e & XDPR_DIR_GROUP); i++)
		e = d->b[e & ~XDPR_DIR_GROUP].e[a[i]];
	return e;
}

int xdpr_rt_index(const struct xdpr_rtent *rec, size_t n, const struct xdpr_rtent *local,
		  size_t nlocal, struct xdpr_dir_block **blocks, size_t *nblocks)
{
	struct dir d = { .n = XDPR_DIR_GROUPS, .cap = XDPR_DIR_GROUPS + 64 };
	size_t *order, cnt[130] = { 0 };
	int err = 0;

	d.b = calloc(d.cap, sizeof(*d.b));
	order = malloc((n ? n : 1) * sizeof(*order));
	if (!d.b || !order) {
		free(d.b);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && !err; i++)
		if ((rec[i].family != AF_INET && rec[i].family != AF_INET6) ||
		    rec[i].plen > (rec[i].family == AF_INET6 ? 128 : 32) || i + 1 >= XDPR_DIR_GROUP)
			err = -EINVAL;
	if (err) {
		free(d.b);
		free(order);
		return err;
	}
	/* counting sort by prefix length: shortest first */
	for (size_t i = 0; i < n; i++)
		cnt[rec[i].plen + 1]++;
	for (int l = 1; l < 130; l++)
		cnt[l] += cnt[l - 1];
	for (size_t i = 0; i < n; i++)
		order[cnt[rec[i].plen]++] = i;
	for (size_t i = 0; i < n && !err; i++)
		err = dir_insert(&d, &rec[order[i]], (__u32)order[i] + 1);
	/* the router's addresses that a route covers: host entries saying so */
	for (size_t i = 0; i < nlocal && !err; i++) {
		struct xdpr_rtent h = { .family = local[i].family };
		__u32 e;

		if (h.family != AF_INET && h.family != AF_INET6)
			continue;
		h.plen = h.family == AF_INET6 ? 128 : 32;
		memcpy(h.addr, local[i].addr, h.family == AF_INET6 ? 16 : 4);
		e = dir_find(&d, h.family, h.addr);
		if (e && e != XDPR_DIR_LOCAL)
			err = dir_insert(&d, &h, XDPR_DIR_LOCAL);
	}
	free(order);
	if (err) {
		free(d.b);
		return err;
	}
	*blocks = d.b;
	*nblocks = d.n;
	return 0;
}

/* Copy len bytes into a fresh mmap-able array map. */
static int fill_map(int fd, const void *src, size_t len)
{
	void *m;

	if (!len)
		return 0;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	memcpy(m, src, len);
	munmap(m, len);
	return 0;
}

/* Do the used pool entries from at on hold r's next hops? */
static bool same_list(const struct xdpr_rtnh *pool, size_t used, size_t at, const struct xdpr_route *r)
{
	if (at + r->nnh > used)
		return false;
	for (int k = 0; k < r->nnh; k++)
		if (memcmp(&pool[at + k].nh, &r->nh[k], sizeof(r->nh[k])))
			return false;
	return true;
}

/*
 * The compact records (ent) and their next hops (nh, *nnh of them) for n
 * routes: routes with the same next hop list share one copy of it.
 */
static int compact(const struct xdpr_rtrec *rec, size_t n, struct xdpr_rtent *ent,
		   struct xdpr_rtnh **nh, size_t *nnh)
{
	size_t tsize = 16, cap = 16, used = 0;
	__u32 *table;
	struct xdpr_rtnh *pool;

	while (tsize < 2 * n)
		tsize *= 2;
	table = calloc(tsize, sizeof(*table)); /* pool index + 1 of a list's first next hop */
	pool = calloc(cap, sizeof(*pool));
	if (!table || !pool)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		const struct xdpr_route *r = &rec[i].r;
		size_t len = (size_t)r->nnh * sizeof(r->nh[0]), h = 2166136261u, slot;
		const __u8 *p = (const __u8 *)r->nh;

		ent[i] = (struct xdpr_rtent){ .id = r->id, .action = r->action, .nnh = r->nnh,
					      .family = rec[i].family, .plen = rec[i].plen };
		memcpy(ent[i].addr, rec[i].addr, 16);
		if (r->nnh > XDPR_RT_MAX_NH) {
			free(table);
			free(pool);
			return -EINVAL;
		}
		if (!r->nnh)
			continue;
		for (size_t b = 0; b < len; b++)
			h = (h ^ p[b]) * 16777619u;
		h ^= r->nnh;
		for (slot = h & (tsize - 1); table[slot]; slot = (slot + 1) & (tsize - 1))
			if (same_list(pool, used, table[slot] - 1, r)) {
				ent[i].nh = table[slot] - 1;
				break;
			}
		if (table[slot])
			continue;
		if (used + r->nnh > cap) {
			struct xdpr_rtnh *np;

			cap = cap * 2 + r->nnh;
			np = realloc(pool, cap * sizeof(*pool));
			if (!np)
				goto nomem;
			pool = np;
		}
		for (int k = 0; k < r->nnh; k++)
			pool[used + k] = (struct xdpr_rtnh){ .nh = r->nh[k] };
		ent[i].nh = used;
		table[slot] = used + 1;
		used += r->nnh;
	}
	free(table);
	*nh = pool;
	*nnh = used;
	return 0;
nomem:
	free(table);
	free(pool);
	return -ENOMEM;
}

int xdpr_rt_make_slot(struct xdpr *x, const struct xdpr_rtrec *rec, size_t n,
		      const struct xdpr_rtent *local, size_t nlocal, int fd[XDPR_RT_MAPS])
{
	struct xdpr_dir_block *blocks = NULL;
	struct xdpr_rtent *ent = calloc(n ? n : 1, sizeof(*ent));
	struct xdpr_rtnh *nh = NULL;
	size_t nblocks = 0, nnh = 0;
	int err = ent ? compact(rec, n, ent, &nh, &nnh) : -ENOMEM;

	for (int i = 0; i < XDPR_RT_MAPS; i++)
		fd[i] = -1;
	if (!err)
		err = xdpr_rt_index(ent, n, local, nlocal, &blocks, &nblocks);
	if (err) {
		if (err == -E2BIG)
			seterr(x, "route table too large: its lookup index needs more than %u KiB",
			       XDPR_DIR_MAX_BLOCKS);
		else
			seterr(x, "cannot build the route lookup index: %s", strerror(-err));
		goto out;
	}
	{
		__u32 entries[XDPR_RT_MAPS] = { [XDPR_RT_DIR] = nblocks, [XDPR_RT_REC] = n ? n : 1,
						[XDPR_RT_NH] = nnh ? nnh : 1 };

		for (int i = 0; i < XDPR_RT_MAPS && !err; i++) {
			int f = xdpr_rt_new_map(x, i, entries[i]);

			if (f < 0)
				err = f;
			else
				fd[i] = f;
		}
		if (err)
			goto out;
	}
	err = fill_map(fd[XDPR_RT_DIR], blocks, nblocks * sizeof(*blocks));
	if (!err)
		err = fill_map(fd[XDPR_RT_REC], ent, n * sizeof(*ent));
	if (!err)
		err = fill_map(fd[XDPR_RT_NH], nh, nnh * sizeof(*nh));
	if (err)
		seterr(x, "cannot write the route table: %s", strerror(-err));
out:
	if (err)
		for (int i = 0; i < XDPR_RT_MAPS; i++) {
			if (fd[i] >= 0)
				close(fd[i]);
			fd[i] = -1;
		}
	free(blocks);
	free(ent);
	free(nh);
	return err;
}
