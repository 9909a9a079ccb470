// SPDX-License-Identifier: GPL-2.0
/*
 * nat_ct.c - the session table from userspace: the slot array
 * xdpr_nat_cta, mapped whole, and its overflow hash table xdpr_nat_ct,
 * with the rules of bpf/nat_ct.h (layout: struct xdpr_ct_slot).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "libxdpr.h"

#define CT_ST(w) ((w) & 3)

int xdpr_ct_open(int cta_fd, int ov_fd, struct xdpr_ct_tab *t)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);
	void *mem;

	memset(t, 0, sizeof(*t));
	if (bpf_obj_get_info_by_fd(cta_fd, &info, &len))
		return -errno;
	if (info.value_size != sizeof(struct xdpr_ct_slot) || info.max_entries <= XDPR_CT_FIRST)
		return -EINVAL;
	t->len = ((size_t)info.max_entries * sizeof(struct xdpr_ct_slot) + page - 1) / page * page;
	mem = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, cta_fd, 0);
	if (mem == MAP_FAILED)
		return -errno;
	t->slot = mem;
	t->mask = ((struct xdpr_ct_hdr *)mem)->mask;
	/* a header xdpr_ct_init wrote: slots a power of two, at least a window, within the array */
	if (t->mask < XDPR_CT_PROBES - 1 || (t->mask & (t->mask + 1)) ||
	    (__u64)t->mask + 1 + XDPR_CT_FIRST > info.max_entries) {
		xdpr_ct_close(t);
		return -EINVAL;
	}
	t->ov = ov_fd;
	return 0;
}

void xdpr_ct_close(struct xdpr_ct_tab *t)
{
	if (t->slot)
		munmap(t->slot, t->len);
	t->slot = NULL;
}

int xdpr_ct_init(int cta_fd, __u32 slots, __u32 limit)
{
	struct xdpr_ct_hdr h = { .mask = slots - 1, .limit = limit };
	__u32 zero = 0;

	return bpf_map_update_elem(cta_fd, &zero, &h, BPF_ANY) ? -errno : 0;
}

static __u64 *ct_count(const struct xdpr_ct_tab *t)
{
	return &((struct xdpr_ct_hdr *)&t->slot[1])->count;
}

static struct xdpr_ct_slot *ct_at(const struct xdpr_ct_tab *t, __u32 h, __u32 p)
{
	return &t->slot[XDPR_CT_FIRST + ((h + p) & t->mask)];
}

/*
 * The live slot holding k, *w the state word it was found under; NULL, with
 * *empty set if the window has an EMPTY slot.
 */
static struct xdpr_ct_slot *ct_find(const struct xdpr_ct_tab *t, const struct xdpr_ct_key *k, bool *empty,
				    __u32 *w)
{
	__u32 h = xdpr_ct_hash(k);

	*empty = false;
	for (__u32 p = 0; p < XDPR_CT_PROBES; p++) {
		struct xdpr_ct_slot *s = ct_at(t, h, p);
		__u32 sw = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (CT_ST(sw) == XDPR_CTS_EMPTY) {
			*empty = true;
			return NULL;
		}
		if (CT_ST(sw) == XDPR_CTS_LIVE && !memcmp(&s->key, k, sizeof(*k)) &&
		    __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == sw) {
			*w = sw;
			return s;
		}
	}
	return NULL;
}

int xdpr_ct_get(const struct xdpr_ct_tab *t, const struct xdpr_ct_key *k, struct xdpr_ct_val *v)
{
	bool empty;
	__u32 w;
	struct xdpr_ct_slot *s = ct_find(t, k, &empty, &w);

	if (s) {
		*v = s->val;
		/* deleted or taken again while read: gone (as a lookup a moment later would say) */
		return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == w ? 0 : -ENOENT;
	}
	if (empty)
		return -ENOENT;
	return bpf_map_lookup_elem(t->ov, k, v) ? -errno : 0;
}

int xdpr_ct_put(struct xdpr_ct_tab *t, const struct xdpr_ct_key *k, const struct xdpr_ct_val *v, __u64 flags)
{
	__u32 h = xdpr_ct_hash(k);
	struct xdpr_ct_slot *s, *free_slot = NULL;
	bool empty;
	__u32 w;

	s = ct_find(t, k, &empty, &w);
	if (s || (!empty && !bpf_map_lookup_elem(t->ov, k, &(struct xdpr_ct_val){}))) {
		if (flags == BPF_NOEXIST)
			return -EEXIST;
		if (s) {
			s->val = *v;
			return 0;
		}
		return bpf_map_update_elem(t->ov, k, v, BPF_EXIST) ? -errno : 0;
	}
	if (flags == BPF_EXIST)
		return -ENOENT;
	if (*ct_count(t) >= ((struct xdpr_ct_hdr *)t->slot)->limit)
		return -E2BIG;
	for (__u32 p = 0; p < XDPR_CT_PROBES && !free_slot; p++) {
		s = ct_at(t, h, p);
		if (CT_ST(s->state) == XDPR_CTS_EMPTY || CT_ST(s->state) == XDPR_CTS_TOMB)
			free_slot = s;
	}
	if (free_slot) {
		__u32 w = free_slot->state;

		free_slot->key = *k;
		free_slot->val = *v;
		__atomic_store_n(&free_slot->state, (((w >> 2) + 1) << 2) | XDPR_CTS_LIVE, __ATOMIC_RELEASE);
	} else if (bpf_map_update_elem(t->ov, k, v, BPF_NOEXIST)) {
		return -errno;
	}
	__atomic_fetch_add(ct_count(t), 1, __ATOMIC_RELAXED);
	return 0;
}

int xdpr_ct_del(struct xdpr_ct_tab *t, const struct xdpr_ct_key *k)
{
	bool empty;
	__u32 w;
	struct xdpr_ct_slot *s = ct_find(t, k, &empty, &w);

	if (s) {
		if (!__atomic_compare_exchange_n(&s->state, &w, (w & ~3u) | XDPR_CTS_TOMB, false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return -ENOENT;
	} else if (empty || bpf_map_delete_elem(t->ov, k)) {
		return -ENOENT;
	}
	__atomic_fetch_sub(ct_count(t), 1, __ATOMIC_RELAXED);
	return 0;
}

int xdpr_ct_each(const struct xdpr_ct_tab *t, int (*cb)(const struct xdpr_ct_key *, const struct xdpr_ct_val *, void *),
		 void *arg)
{
	__u32 in = 0, out = 0;
	bool first = true;
	int err;

	for (__u64 i = 0; i <= t->mask; i++) {
		struct xdpr_ct_slot *s = &t->slot[XDPR_CT_FIRST + i];
		__u32 w = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		struct xdpr_ct_key sk;
		struct xdpr_ct_val sv;

		if (CT_ST(w) != XDPR_CTS_LIVE)
			continue;
		sk = s->key;
		sv = s->val;
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != w)
			continue; /* deleted or taken again while read */
		err = cb(&sk, &sv, arg);
		if (err)
			return err;
	}
	/*
	 * The overflow bucket by bucket (a batch walk lists every key once while
	 * others come and go; get_next_key starts over when its key is deleted).
	 */
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, o);
		struct xdpr_ct_key bk[256];
		struct xdpr_ct_val bv[256];
		__u32 cnt = 256, i;
		int e = bpf_map_lookup_batch(t->ov, first ? NULL : &in, &out, bk, bv, &cnt, &o);

		if (e && errno == ENOSPC) /* a bucket of more than 256 keys (the kernel keeps them short) */
			return -ENOSPC;
		if (e && errno != ENOENT)
			return -errno;
		for (i = 0; i < cnt; i++) {
			err = cb(&bk[i], &bv[i], arg);
			if (err)
				return err;
		}
		if (e)
			return 0; /* ENOENT: that was the last bucket */
		in = out;
		first = false;
	}
}

struct ct_dump {
	size_t cap, n;
	struct xdpr_ct_key *k;
	struct xdpr_ct_val *v;
};

static int dump_add(const struct xdpr_ct_key *k, const struct xdpr_ct_val *v, void *arg)
{
	struct ct_dump *d = arg;

	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 1024;
		void *nk = realloc(d->k, cap * sizeof(*d->k)), *nv;

		if (!nk)
			return -ENOMEM;
		d->k = nk;
		nv = realloc(d->v, cap * sizeof(*d->v));
		if (!nv)
			return -ENOMEM;
		d->v = nv;
		d->cap = cap;
	}
	d->k[d->n] = *k;
	d->v[d->n++] = *v;
	return 0;
}

int xdpr_ct_dump(const struct xdpr_ct_tab *t, struct xdpr_ct_key **keys, struct xdpr_ct_val **vals, size_t *n)
{
	struct ct_dump d = {};
	int err = xdpr_ct_each(t, dump_add, &d);

	if (err) {
		free(d.k);
		free(d.v);
		return err;
	}
	if (keys)
		*keys = d.k;
	else
		free(d.k);
	if (vals)
		*vals = d.v;
	else
		free(d.v);
	*n = d.n;
	return 0;
}

__u64 xdpr_ct_count(const struct xdpr_ct_tab *t)
{
	return __atomic_load_n(ct_count(t), __ATOMIC_RELAXED);
}

int xdpr_ct_clear(struct xdpr_ct_tab *t)
{
	struct xdpr_ct_key k;

	memset(&t->slot[XDPR_CT_FIRST], 0, ((size_t)t->mask + 1) * sizeof(struct xdpr_ct_slot));
	while (!bpf_map_get_next_key(t->ov, NULL, &k))
		if (bpf_map_delete_elem(t->ov, &k))
			return -errno;
	__atomic_store_n(ct_count(t), 0, __ATOMIC_RELAXED);
	return 0;
}
