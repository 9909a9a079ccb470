/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nat_ct.h - lookup, insert and delete of session halves: the slot array
 * xdpr_nat_cta first, the hash table xdpr_nat_ct for what it has no slot
 * for (the layout and its rules: struct xdpr_ct_slot, xdpr_shared.h).
 *
 * The three keep the kernel hash table's contract, which the session code
 * was written against: an insert fails with -EEXIST if the key is there
 * (one of two CPUs inserting the same key wins), -E2BIG when the table
 * holds its limit; a delete returns 0 to exactly one of two CPUs deleting
 * the same half; a value pointer stays valid memory, but its slot may be
 * taken by another half at once after a delete.
 */
#ifndef XDPR_NAT_CT_H
#define XDPR_NAT_CT_H

#ifndef E2BIG
#define E2BIG 7
#endif
#ifndef EAGAIN
#define EAGAIN 11
#endif
#ifndef EBUSY
#define EBUSY 16
#endif

#define CT_ST(w)       ((w) & 3)
#define CT_NEXT(w, st) ((((w) >> 2) + 1) << 2 | (st)) /* a new generation */
#define CT_LOCK_SPINS  1024 /* an insert holds the lock for a few hundred ns */
#define CT_CLAIM_TRIES 3

static const volatile __u32 ct_idx[2] = { 0, 1 }; /* header, count (off the stack) */

static __always_inline int ct_key_eq(const struct xdpr_ct_key *a, const struct xdpr_ct_key *b)
{
	const __u32 *x = (const __u32 *)a, *y = (const __u32 *)b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

static __always_inline struct xdpr_ct_slot *ct_slot(void *m, __u32 mask, __u32 h, __u32 p)
{
	__u32 idx = XDPR_CT_FIRST + ((h + p) & mask);

	return bpf_map_lookup_elem(m, &idx);
}

/* The live session half of key k, NULL if none. */
static __noinline struct xdpr_ct_val *ct_lookup(const struct xdpr_ct_key *k)
{
	void *m = nat_tab(&xdpr_nat_cta);
	struct xdpr_ct_hdr *hdr;
	__u32 h;

	if (!m || !k)
		return NULL;
	hdr = bpf_map_lookup_elem(m, (const void *)&ct_idx[0]);
	if (!hdr)
		return NULL;
	h = xdpr_ct_hash(k);
#pragma clang loop unroll(disable)
	for (int p = 0; p < XDPR_CT_PROBES; p++) {
		struct xdpr_ct_slot *s = ct_slot(m, hdr->mask, h, p);
		__u32 st;

		if (!s)
			return NULL;
		st = CT_ST(READ_ONCE_U32(s->state));
		if (st == XDPR_CTS_EMPTY)
			return NULL; /* nor in the overflow: it had room here */
		if (st == XDPR_CTS_LIVE && ct_key_eq(&s->key, k))
			return &s->val;
	}
	return nat_lookup(&xdpr_nat_ct, k);
}

/*
 * Take a slot's insert lock: 1 if taken.  A bounded spin (its holder runs on
 * another CPU, for a few hundred ns), inline rather than a bpf_loop callback:
 * a callback's frame would put the creation's call chain over 512 bytes.
 */
static __always_inline int ct_lock(struct xdpr_ct_slot *s)
{
#pragma clang loop unroll(disable)
	for (int i = 0; i < CT_LOCK_SPINS; i++)
		if (!READ_ONCE_U32(s->lock) && __sync_val_compare_and_swap(&s->lock, 0, 1) == 0)
			return 1;
	return 0;
}

struct ct_ins {
	void *m;
	__u32 mask, h;
	struct xdpr_ct_slot *slot; /* the free slot found, and its state word */
	__u32 slot_st;
	int empty;                 /* a slot of the window is EMPTY */
};

/* Look through k's window: -EEXIST if k is there; else the first free slot in c. */
static __always_inline int ct_scan(const struct xdpr_ct_key *k, struct ct_ins *c)
{
	c->slot = NULL;
	c->empty = 0;
	for (int p = 0; p < XDPR_CT_PROBES; p++) {
		struct xdpr_ct_slot *s = ct_slot(c->m, c->mask, c->h, p);
		__u32 w, st;

		if (!s)
			return -ENOENT;
		w = READ_ONCE_U32(s->state);
		st = CT_ST(w);
		if (st == XDPR_CTS_LIVE) {
			if (ct_key_eq(&s->key, k))
				return -EEXIST;
			continue;
		}
		if (st == XDPR_CTS_BUSY)
			continue; /* being filled, for a key of another first slot */
		if (!c->slot) {
			c->slot = s;
			c->slot_st = w;
		}
		if (st == XDPR_CTS_EMPTY) {
			c->empty = 1;
			return 0; /* nothing of this window lies beyond */
		}
	}
	return 0;
}

/* Claim c's free slot and fill it; 0, or -EAGAIN if another CPU took it first. */
static __always_inline int ct_claim(const struct xdpr_ct_key *k, const struct xdpr_ct_val *v,
				    struct ct_ins *c)
{
	struct xdpr_ct_slot *s = c->slot;
	__u32 w = c->slot_st;

	if (!s || __sync_val_compare_and_swap(&s->state, w, CT_NEXT(w, XDPR_CTS_BUSY)) != w)
		return -EAGAIN;
	s->key = *k;
	s->val = *v;
	__sync_lock_test_and_set(&s->state, CT_NEXT(w, XDPR_CTS_LIVE)); /* after the fill */
	return 0;
}

static __always_inline int ct_insert_locked(const struct xdpr_ct_key *k, const struct xdpr_ct_val *v,
					    struct ct_ins *c, struct xdpr_ct_hdr *hdr, __u64 *count)
{
	int err = 0, counted = 0, checked = 0;

	for (int t = 0; t < CT_CLAIM_TRIES; t++) {
		err = ct_scan(k, c);
		if (err)
			goto undo;
		/*
		 * No EMPTY slot in the window: k may be in the overflow, though a
		 * TOMB is free here now (deleted since k went there).  k enters the
		 * overflow only under this lock, so looking once is enough.
		 */
		if (!c->empty && !checked) {
			checked = 1;
			if (nat_lookup(&xdpr_nat_ct, k)) {
				err = -EEXIST;
				goto undo;
			}
		}
		if (!c->slot)
			break; /* the window is full: the overflow */
		if (!counted) {
			counted = 1;
			if (__sync_fetch_and_add(count, 1) >= hdr->limit) {
				err = -E2BIG;
				goto undo;
			}
		}
		err = ct_claim(k, v, c);
		if (!err)
			return 0;
	}
	if (c->slot) {
		err = -EBUSY; /* free slots taken under our feet each time */
		goto undo;
	}
	if (!counted) {
		counted = 1;
		if (__sync_fetch_and_add(count, 1) >= hdr->limit) {
			err = -E2BIG;
			goto undo;
		}
	}
	err = nat_update(&xdpr_nat_ct, k, v, BPF_NOEXIST);
	if (!err)
		return 0;
undo:
	if (counted)
		__sync_fetch_and_add(count, -1);
	return err;
}

/*
 * Insert half k (BPF_NOEXIST): 0, -EEXIST, -E2BIG (at the limit), -EBUSY
 * (the key's first slot stayed locked, or free slots kept being taken).
 */
__noinline long ct_insert(const struct xdpr_ct_key *k, const struct xdpr_ct_val *v)
{
	struct ct_ins c = {};
	struct xdpr_ct_hdr *hdr, *cnt;
	struct xdpr_ct_slot *home;
	int err;

	if (!k || !v)
		return -ENOENT;
	c.m = nat_tab(&xdpr_nat_cta);
	if (!c.m)
		return -ENOENT;
	hdr = bpf_map_lookup_elem(c.m, (const void *)&ct_idx[0]);
	cnt = bpf_map_lookup_elem(c.m, (const void *)&ct_idx[1]);
	if (!hdr || !cnt)
		return -ENOENT;
	c.mask = hdr->mask;
	c.h = xdpr_ct_hash(k);
	home = ct_slot(c.m, c.mask, c.h, 0);
	if (!home)
		return -ENOENT;
	if (!ct_lock(home))
		return -EBUSY;
	err = ct_insert_locked(k, v, &c, hdr, &cnt->count);
	__sync_lock_test_and_set(&home->lock, 0);
	return err;
}

/* Delete half k: 0 if this call deleted it, -ENOENT if it was not there. */
__noinline long ct_delete(const struct xdpr_ct_key *k)
{
	void *m = nat_tab(&xdpr_nat_cta);
	struct xdpr_ct_hdr *hdr, *cnt;
	__u32 h;

	if (!m || !k)
		return -ENOENT;
	hdr = bpf_map_lookup_elem(m, (const void *)&ct_idx[0]);
	cnt = bpf_map_lookup_elem(m, (const void *)&ct_idx[1]);
	if (!hdr || !cnt)
		return -ENOENT;
	h = xdpr_ct_hash(k);
	for (int t = 0; t < 2; t++) {
		int found = 0;

		for (int p = 0; p < XDPR_CT_PROBES; p++) {
			struct xdpr_ct_slot *s = ct_slot(m, hdr->mask, h, p);
			__u32 w;

			if (!s)
				return -ENOENT;
			w = READ_ONCE_U32(s->state);
			if (CT_ST(w) == XDPR_CTS_EMPTY)
				return -ENOENT;
			if (CT_ST(w) != XDPR_CTS_LIVE || !ct_key_eq(&s->key, k))
				continue;
			if (__sync_val_compare_and_swap(&s->state, w, (w & ~3u) | XDPR_CTS_TOMB) == w) {
				__sync_fetch_and_add(&cnt->count, -1);
				return 0;
			}
			found = 1; /* deleted, or taken again, meanwhile: look once more */
			break;
		}
		if (!found)
			break;
	}
	if (nat_delete(&xdpr_nat_ct, k))
		return -ENOENT;
	__sync_fetch_and_add(&cnt->count, -1);
	return 0;
}

#endif /* XDPR_NAT_CT_H */
