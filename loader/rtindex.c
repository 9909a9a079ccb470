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
 * prefix below it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include "libxdpr.h"

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

static int dir_insert(struct dir *d, const struct xdpr_rtrec *r, __u32 v)
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

int xdpr_rt_index(const struct xdpr_rtrec *rec, size_t n, struct xdpr_dir_block **blocks,
		  size_t *nblocks)
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
	/* counting sort by prefix length: shortest first */
	for (size_t i = 0; i < n; i++)
		cnt[rec[i].plen + 1]++;
	for (int l = 1; l < 130; l++)
		cnt[l] += cnt[l - 1];
	for (size_t i = 0; i < n; i++)
		order[cnt[rec[i].plen]++] = i;
	for (size_t i = 0; i < n && !err; i++) {
		const struct xdpr_rtrec *r = &rec[order[i]];

		if (r->plen > (r->family == AF_INET6 ? 128 : 32) || order[i] + 1 >= XDPR_DIR_GROUP)
			err = -EINVAL;
		else
			err = dir_insert(&d, r, (__u32)order[i] + 1);
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

int xdpr_rt_make_slot(struct xdpr *x, const struct xdpr_rtrec *rec, size_t n, int *dir_fd, int *rec_fd)
{
	struct xdpr_dir_block *blocks;
	size_t nblocks;
	int err, dfd, rfd = -1;

	err = xdpr_rt_index(rec, n, &blocks, &nblocks);
	if (err) {
		if (err == -E2BIG)
			seterr(x, "route table too large: its lookup index needs more than %u KiB",
			       XDPR_DIR_MAX_BLOCKS);
		else
			seterr(x, "cannot build the route lookup index: %s", strerror(-err));
		return err;
	}
	dfd = xdpr_rt_new_map(x, XDPR_RT_DIR, nblocks);
	if (dfd >= 0)
		rfd = xdpr_rt_new_map(x, XDPR_RT_REC, n ? n : 1);
	if (dfd < 0 || rfd < 0) {
		err = dfd < 0 ? dfd : rfd;
		goto fail;
	}
	err = fill_map(dfd, blocks, nblocks * sizeof(*blocks));
	if (!err)
		err = fill_map(rfd, rec, n * sizeof(*rec));
	if (err) {
		seterr(x, "cannot write the route table: %s", strerror(-err));
		goto fail;
	}
	free(blocks);
	*dir_fd = dfd;
	*rec_fd = rfd;
	return 0;
fail:
	free(blocks);
	if (dfd >= 0)
		close(dfd);
	if (rfd >= 0)
		close(rfd);
	return err;
}
