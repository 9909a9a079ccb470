/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nat_sess.h - the session table: pairs of halves (nat_ct.h), per-host
 * counts, expiry, eviction, sweeping and creation.
 *
 * A session is created by the first outbound packet: the inbound half first
 * with BPF_NOEXIST (that claims the outside 5-tuple), then the outbound
 * half; a failure undoes what was done.  Two CPUs creating the same session
 * at once: the loser finds the winner's half and adopts it (same mapping,
 * nothing dropped).  Deletion removes the inbound half first, so no packet
 * is ever translated one way only.
 *
 * Expiry needs no daemon: timestamps are checked on every hit; the slot a
 * new session takes in a ring of recent sessions is swept on the way; a
 * host at its limit, or an exhausted port range, runs a sweep (at most once
 * a second, router-wide, of the first 131,072 entries of each table: all of a
 * default-sized one); a full table evicts, from the
 * greediest host first; and xdpr_nat_gc (run by the CLI) sweeps everything.
 */
#ifndef XDPR_NAT_SESS_H
#define XDPR_NAT_SESS_H

#include "nat_bind.h"
#include "natlog.h"

#define EVICT_SCAN 32
#define HELD_SCAN 1024 /* bindings a full binding table's walk for a held-down port looks at */
#define EVICT_TRIES 8 /* evictions a creation may run: other CPUs may take the room first */
#define HOST_TRIES 16
#define SWEEP_CAP (2 * XDPR_NAT_DEF_SESS) /* entries a sweep under pressure looks at, per table */

/* The other half's key: OUT {in, rem, inp, remp} -> out  <->  IN {rem, out, remp, outp} -> in */
static __always_inline void ct_other_key(const struct xdpr_ct_key *k, const struct xdpr_ct_val *v,
					 struct xdpr_ct_key *o)
{
	if (k->dir == XDPR_CT_OUT) {
		o->saddr = k->daddr;
		o->daddr = v->xaddr;
		o->sport = k->dport;
		o->dport = v->xport;
	} else {
		o->saddr = v->xaddr;
		o->daddr = k->saddr;
		o->sport = v->xport;
		o->dport = k->sport;
	}
	o->proto = k->proto;
	o->dir = !k->dir;
	o->pad[0] = o->pad[1] = 0;
}

/* ----------------------------------------------------------- host counts */

/*
 * A host entry's word: count (with XDPR_HOST_DYING) and the host's address,
 * as one __u64 (struct xdpr_host).  Hash map elements are reused at once
 * when deleted, even while another CPU still holds a pointer from its
 * lookup: a 32-bit CAS on the count alone can then land on another host's
 * fresh entry (a count taken on, or an entry marked dying for, the wrong
 * host).  With the address in the word, such a CAS fails.
 */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_WORD(addr, n) (((__u64)(addr) << 32) | (__u32)(n))
#define HOST_WORD_ADDR(w) ((__be32)((w) >> 32))
#define HOST_WORD_N(w)    ((__u32)(w))
#else
#define HOST_WORD(addr, n) (((__u64)(__u32)(n) << 32) | (__u32)(addr))
#define HOST_WORD_ADDR(w) ((__be32)(w))
#define HOST_WORD_N(w)    ((__u32)((w) >> 32))
#endif

static __always_inline __u64 *host_word(struct xdpr_host *h)
{
	return (__u64 *)h;
}

static long host_wait_cb(__u32 i, __be32 *addr)
{
	struct xdpr_host *h = nat_lookup(&xdpr_nat_hosts, addr);

	return !h || !(READ_ONCE_U32(h->nsess) & XDPR_HOST_DYING);
}

static __always_inline void host_wait(__be32 addr)
{
	bpf_loop(256, host_wait_cb, &addr, 0);
}

/*
 * One more session for an inside host.  The count is changed only by CAS
 * of the host word; the last session's release marks the entry DYING and
 * deletes it, so the hosts map holds hosts with sessions only.  Returns
 * NAT_OK (taken; the count with it in the scratch request's host_n), or an
 * enum xdpr_nat_event.  Global.
 */
__noinline int host_get(__be32 addr, __u32 limit)
{
	struct nat_scratch *sc = nat_scratch();

	if (!sc)
		return XDPR_NE_TABLE_FULL;
	for (int i = 0; i < HOST_TRIES; i++) {
		struct xdpr_host *h = nat_lookup(&xdpr_nat_hosts, &addr);
		__u64 w;
		__u32 c;

		if (!h) {
			struct xdpr_host zero = { .addr = addr };
			int err = nat_update(&xdpr_nat_hosts, &addr, &zero, BPF_NOEXIST);

			if (err && err != -EEXIST)
				return XDPR_NE_TABLE_FULL;
			continue;
		}
		w = READ_ONCE_U64(*host_word(h));
		if (HOST_WORD_ADDR(w) != addr)
			continue; /* deleted and reused for another host since the lookup */
		c = HOST_WORD_N(w);
		if (c & XDPR_HOST_DYING) {
			host_wait(addr); /* being deleted (the deleter is one helper call away): insert anew */
			continue;
		}
		if (c >= limit)
			return XDPR_NE_HOST_LIMIT;
		if (__sync_val_compare_and_swap(host_word(h), w, HOST_WORD(addr, c + 1)) == w) {
			sc->q.host_n = c + 1;
			return NAT_OK;
		}
	}
	return XDPR_NE_BUSY;
}

/*
 * One session fewer; the last one marks the entry DYING (never 0 and alive)
 * and deletes it.  Global (verified once: it is called from every delete).
 */
__noinline int host_put(__be32 addr)
{
	for (int i = 0; i < HOST_TRIES; i++) {
		struct xdpr_host *h = nat_lookup(&xdpr_nat_hosts, &addr);
		__u64 w, nw;
		__u32 c;

		if (!h)
			return 0;
		w = READ_ONCE_U64(*host_word(h));
		if (HOST_WORD_ADDR(w) != addr)
			continue;
		c = HOST_WORD_N(w);
		if (!c || (c & XDPR_HOST_DYING))
			return 0; /* nothing counted here to give back */
		nw = HOST_WORD(addr, c == 1 ? XDPR_HOST_DYING : c - 1);
		if (__sync_val_compare_and_swap(host_word(h), w, nw) == w) {
			/* only the CPU that marked it deletes it: the key still names this entry */
			if (c == 1)
				nat_delete(&xdpr_nat_hosts, &addr);
			return 1;
		}
	}
	return 0;
}

static __always_inline __u32 host_count(__be32 addr)
{
	struct xdpr_host *h = nat_lookup(&xdpr_nat_hosts, &addr);

	return h ? h->nsess & ~XDPR_HOST_DYING : 0;
}

/*
 * Give back what a session held: binding reference, host count.  A port
 * forward's session (gen 0; bindings never have generation 0) held neither.
 */
static __always_inline void nat_release(__be32 in_addr, __be32 out_addr, __be16 out_port, __u8 proto,
					__u32 gen, __u64 now)
{
	struct xdpr_bind *b;

	if (!gen)
		return;
	b = bind_lookup(out_addr, out_port, proto);
	if (b)
		bind_put(b, gen, now);
	host_put(in_addr);
}

/* -------------------------------------------------------------- expiry */

/*
 * Delete a session given its outbound half.  Inbound half first, so no
 * packet can be translated one way only; whoever deletes the outbound half
 * releases the references.  Returns 1 if this call removed it.  okey must
 * be a copy (stack or scratch), never a map element's key: an element can
 * be deleted by another CPU and reused for another session at any moment.
 * Callers outside session creation check nat_frozen() first.
 */
static __always_inline int nat_sess_delete(const struct xdpr_ct_key *okey, const struct xdpr_ct_val *oval,
					   __u64 now)
{
	struct xdpr_ct_key ik;
	__be32 xaddr = oval->xaddr;
	__be16 xport = oval->xport;
	__u32 gen = oval->bind_gen, rule = oval->rule;

	ct_other_key(okey, oval, &ik);
	ct_delete(&ik);
	if (ct_delete(okey))
		return 0;
	nat_release(okey->saddr, xaddr, xport, okey->proto, gen, now);
	natlog_put(XDPR_NL_DELETE, okey, xaddr, xport, rule); /* oval may be another session's now */
	return 1;
}

/* Idle time of a session: the fresher of its two halves (state: both halves' bits). */
static __always_inline __u64 nat_idle(const struct xdpr_ct_key *okey, const struct xdpr_ct_val *oval,
				      __u64 now, __u8 *state)
{
	struct xdpr_ct_key ik;
	struct xdpr_ct_val *iv;
	__u64 last = oval->last_seen;

	ct_other_key(okey, oval, &ik);
	iv = ct_lookup(&ik);
	*state = oval->state;
	if (iv) {
		if (iv->last_seen > last)
			last = iv->last_seen;
		*state |= iv->state;
	}
	return now > last ? now - last : 0;
}

/* Sweep one session (by outbound key): delete it if expired (or if force). */
static __always_inline int nat_sweep_key(const struct xdpr_ct_key *okey, const struct xdpr_ct_val *oval,
					 __u64 now, const struct xdpr_cfg *cfg, int force)
{
	__u8 state;
	__u64 idle = nat_idle(okey, oval, now, &state);

	if (!force && idle <= nat_timeout(cfg, okey->proto, state))
		return 0;
	if (!nat_sess_delete(okey, oval, now))
		return 0;
	nat_count(oval->rule, force ? XDPR_NE_SESS_EVICTED : XDPR_NE_SESS_EXPIRED);
	return 1;
}

/* ---------------------------------------------- whole-table sweeps (GC) */

struct bpf_map;

struct sweep_ctx {
	__u64 now;
	const struct xdpr_cfg *cfg;
	__u16 op;         /* enum xdpr_gc_op */
	__u16 rule;
	__u32 deleted;
	__u32 seen;
	__u32 binds_freed;
	__u32 hosts_freed;
	__u32 budget;     /* entries the walk under way may still look at */
	__u32 visits;     /* slots of xdpr_nat_cta it may still visit (most are free) */
};

/* The walk has looked at enough: stop it (1 ends bpf_for_each_map_elem). */
static __always_inline int sweep_enough(struct sweep_ctx *s)
{
	if (!s->budget)
		return 1;
	s->budget--;
	return 0;
}

/*
 * Judge one session half, from copies of its key and value.  Global (its
 * two walks' callbacks stay small for the verifier), so it reads the
 * configuration itself rather than through s->cfg.
 */
__noinline long gc_ct_judge(struct xdpr_ct_key *kc, struct xdpr_ct_val *vc, struct sweep_ctx *s)
{
	const struct xdpr_cfg *cfg = bpf_map_lookup_elem(&xdpr_cfg, (const void *)&nat_slot_key[0]);

	if (!kc || !vc || !s || !cfg)
		return 0;
	if (kc->dir != XDPR_CT_OUT) {
		struct xdpr_ct_key o;

		/*
		 * A lone inbound half (its pair went in an interrupted delete).  A
		 * session being created has its inbound half alone for a moment, with
		 * last_seen from a clock read after this sweep's now: not "old".
		 */
		ct_other_key(kc, vc, &o);
		if (!ct_lookup(&o) && s->now > vc->last_seen + NSEC)
			ct_delete(kc);
		return 0;
	}
	s->seen++;
	if (s->op == XDPR_GC_ALL || (s->op == XDPR_GC_RULE && vc->rule == s->rule)) {
		if (nat_sess_delete(kc, vc, s->now))
			s->deleted++;
	} else if (nat_sweep_key(kc, vc, s->now, cfg, 0)) {
		s->deleted++;
	}
	return 0;
}

/* The sweeps' copy of the half they judge: per CPU, off the callbacks' frames. */
struct gc_copy {
	struct xdpr_ct_key k;
	struct xdpr_ct_val v;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gc_copy);
} xdpr_gc_scr SEC(".maps");

/*
 * k and v point into the element: another CPU may delete it meanwhile, and
 * a deleted element is reused at once for the next session inserted.  So
 * the callback works on a copy (key, value, key again: a key that changed
 * means the element was taken for another session while being read), and
 * deletes by the copied key what it judged, never by the element's key.
 * This walks the overflow (xdpr_nat_ct); the next, the slots.
 */
static long gc_ct_cb(struct bpf_map *map, struct xdpr_ct_key *k, struct xdpr_ct_val *v,
		     struct sweep_ctx *s)
{
	struct gc_copy *c = bpf_map_lookup_elem(&xdpr_gc_scr, (const void *)&nat_slot_key[0]);

	if (sweep_enough(s))
		return 1;
	if (!c)
		return 0;
	c->k = *k;
	asm volatile("" ::: "memory");
	c->v = *v;
	asm volatile("" ::: "memory");
	if (!elem_key_kept(k, &c->k, sizeof(c->k) / 8))
		return 0;
	return gc_ct_judge(&c->k, &c->v, s);
}

/*
 * A slot of xdpr_nat_cta: judged on a copy as above, the state word (with
 * its generation) read again after it tells whether the slot was deleted or
 * taken again meanwhile.  Empty slots cost the walk a visit, not budget.
 */
static long gc_cta_cb(struct bpf_map *map, __u32 *idx, struct xdpr_ct_slot *sl, struct sweep_ctx *s)
{
	struct gc_copy *c;
	__u32 w;

	if (!s->visits)
		return 1;
	s->visits--;
	if (*idx < XDPR_CT_FIRST)
		return 0;
	w = READ_ONCE_U32(sl->state);
	if (CT_ST(w) != XDPR_CTS_LIVE)
		return 0;
	if (sweep_enough(s))
		return 1;
	c = bpf_map_lookup_elem(&xdpr_gc_scr, (const void *)&nat_slot_key[0]);
	if (!c)
		return 0;
	c->k = sl->key;
	asm volatile("" ::: "memory");
	c->v = sl->val;
	asm volatile("" ::: "memory");
	if (READ_ONCE_U32(sl->state) != w)
		return 0;
	return gc_ct_judge(&c->k, &c->v, s);
}

static long gc_bind_cb(struct bpf_map *map, struct xdpr_bind_key *k, struct xdpr_bind *b,
		       struct sweep_ctx *s)
{
	__u64 st;

	if (sweep_enough(s))
		return 1;
	if (s->op == XDPR_GC_ALL) {
		/* every session went (`nat flush`): their ports too, hold-down or not */
		st = READ_ONCE_U64(b->state);
		if (!(st & XDPR_BIND_DYING) && !XDPR_BIND_REFS(st) && bind_free(k, b, st))
			s->binds_freed++;
		return 0;
	}
	if (bind_try_free(k, b, s->now, (__u64)s->cfg->holddown * NSEC))
		s->binds_freed++;
	return 0;
}

/* Hosts whose count is 0 (inserted by a creation that then failed): delete. */
static long gc_host_cb(struct bpf_map *map, __be32 *k, struct xdpr_host *h, struct sweep_ctx *s)
{
	__be32 key = *k;

	if (sweep_enough(s))
		return 1;
	/* the key and the word must name the same host: the entry may be reused meanwhile */
	if (__sync_val_compare_and_swap(host_word(h), HOST_WORD(key, 0), HOST_WORD(key, XDPR_HOST_DYING)) ==
	    HOST_WORD(key, 0)) {
		nat_delete(&xdpr_nat_hosts, &key);
		s->hosts_freed++;
	}
	return 0;
}

/* Walk every table, looking at cap entries of each at most. */
static __always_inline void nat_gc_all(struct sweep_ctx *s, __u32 cap)
{
	void *m;

	s->budget = cap;
	s->visits = cap > 0xffffffff / 4 ? 0xffffffff : 4 * cap;
	m = nat_tab(&xdpr_nat_cta);
	if (m)
		bpf_for_each_map_elem(m, gc_cta_cb, s, 0);
	s->budget = cap;
	m = nat_tab(&xdpr_nat_ct);
	if (m)
		bpf_for_each_map_elem(m, gc_ct_cb, s, 0);
	/* the verifier takes *s as written by gc_ct_judge (global): name the configuration again */
	s->cfg = bpf_map_lookup_elem(&xdpr_cfg, (const void *)&nat_slot_key[0]);
	if (!s->cfg)
		return;
	s->budget = cap;
	m = nat_tab(&xdpr_nat_bind);
	if (m)
		bpf_for_each_map_elem(m, gc_bind_cb, s, 0);
	s->budget = cap;
	m = nat_tab(&xdpr_nat_hosts);
	if (m)
		bpf_for_each_map_elem(m, gc_host_cb, s, 0);
}

/*
 * A slot of the ring in a sweep under pressure (s->budget: the first slot
 * of the walk): its session goes if it expired.
 */
static long ring_sweep_cb(__u32 i, struct sweep_ctx *s)
{
	__u32 idx = s->budget + i;
	struct xdpr_ct_key k, *kp;
	struct xdpr_ct_val *v;

	if (idx >= s->cfg->nat_sess)
		idx -= s->cfg->nat_sess;
	kp = nat_lookup(&xdpr_nat_ring, &idx);
	if (!kp || !kp->proto)
		return 0;
	k = *kp;
	v = ct_lookup(&k);
	if (v && nat_sweep_key(&k, v, s->now, s->cfg, 0))
		s->deleted++;
	return 0;
}

/*
 * Under pressure (a host at its limit, a range without a free port): sweep
 * expired sessions, idle bindings and empty hosts now, at most once a
 * second router-wide (the CPU that wins the CAS does it).  The cost is one
 * walk of the tables per second at most, capped at SWEEP_CAP entries each
 * (milliseconds).  The cap makes a walk of a bigger table cover the same
 * first part each time, so there the sweep also walks SWEEP_CAP / 2 slots
 * of the ring of recent sessions from where the last one stopped
 * (xdpr_nat_sweep[1]): in N / 65,536 seconds of pressure every session
 * still in the ring has been looked at.
 * Returns 1 if this call swept and freed a binding or a session, 0 if not.
 */
__noinline int nat_pressure_sweep(__u64 now)
{
	struct sweep_ctx s = { .now = now, .op = XDPR_GC_EXPIRED };
	__u32 zero = 0;
	__u64 *last = bpf_map_lookup_elem(&xdpr_nat_sweep, &zero), old;

	s.cfg = bpf_map_lookup_elem(&xdpr_cfg, &zero);
	if (!last || !s.cfg)
		return 0;
	old = *last;
	if (now - old < NSEC || __sync_val_compare_and_swap(last, old, now) != old)
		return 0;
	nat_gc_all(&s, SWEEP_CAP); /* names s.cfg again (NULL if it could not) */
	if (s.cfg && s.cfg->nat_sess > XDPR_NAT_DEF_SESS) {
		__u32 one = 1;
		__u64 *at = bpf_map_lookup_elem(&xdpr_nat_sweep, &one);

		if (at) {
			s.budget = *at % s.cfg->nat_sess;
			*at = s.budget + SWEEP_CAP / 2;
			bpf_loop(SWEEP_CAP / 2, ring_sweep_cb, &s, 0);
		}
	}
	nat_count(0, XDPR_NE_SWEEPS);
	return s.deleted || s.binds_freed;
}

/* -------------------------------------------------------- ring, eviction */

/* Remember a new session; sweep the session whose ring slot it takes. */
static __always_inline void nat_ring_push(const struct xdpr_ct_key *okey, const struct xdpr_cfg *cfg,
					  __u64 now)
{
	__u32 zero = 0, idx;
	struct xdpr_ct_key *slot;
	struct xdpr_ct_val *v;
	__u64 *hd;

	hd = bpf_map_lookup_elem(&xdpr_nat_ringhd, &zero);
	if (!hd)
		return;
	if (!cfg->nat_sess)
		return;
	idx = __sync_fetch_and_add(hd, 1) % cfg->nat_sess;
	slot = nat_lookup(&xdpr_nat_ring, &idx);
	if (!slot)
		return;
	if (slot->proto) {
		struct xdpr_ct_key old = *slot;

		v = ct_lookup(&old);
		if (v)
			nat_sweep_key(&old, v, now, cfg, 0);
	}
	*slot = *okey;
}

/* nat_ring_push for the request in the scratch; global, off nat4_create's frame. */
__noinline int nat_ring_add(void)
{
	struct nat_scratch *sc = nat_scratch();

	if (!sc)
		return 0;
	nat_ring_push(&sc->q.key, &sc->q.cfg, sc->q.now);
	return 0;
}

struct evict_ctx {
	__u64 now;
	__u32 head;          /* the ring's oldest slot */
	__u32 ring;          /* its length */
	const struct xdpr_cfg *cfg;
	__be32 requester;    /* the inside host asking */
	__u32 requester_n;   /* its sessions, the new one included */
	__u32 best_n;
	int found;
	__u64 best_idle;
	struct xdpr_ct_key best;
};

/* Session k (outbound half, v its value): the best pick so far? */
static __always_inline void evict_consider(struct evict_ctx *e, const struct xdpr_ct_key *k,
					   const struct xdpr_ct_val *v)
{
	__u64 idle;
	__u32 n;
	__u8 st;

	idle = nat_idle(k, v, e->now, &st);
	/* expired sessions go first, whoever owns them */
	n = idle > nat_timeout(e->cfg, k->proto, st) ? 0xffffffff : host_count(k->saddr);
	/* a host never loses sessions to another with as many or more */
	if (n != 0xffffffff && n <= e->requester_n && k->saddr != e->requester)
		return;
	if (!e->found || n > e->best_n || (n == e->best_n && idle > e->best_idle)) {
		e->best_n = n;
		e->best_idle = idle;
		e->best = *k;
		e->found = 1;
	}
}

static long evict_cb(__u32 i, struct evict_ctx *e)
{
	__u32 idx = e->head + i;
	struct xdpr_ct_key *k;
	struct xdpr_ct_val *v;

	if (idx >= e->ring)
		idx -= e->ring;
	k = nat_lookup(&xdpr_nat_ring, &idx);
	if (!k || !k->proto)
		return 0;
	v = ct_lookup(k);
	if (v)
		evict_consider(e, k, v);
	return 0;
}

/*
 * A slot of the session array, from where e->head says (a random place):
 * the fallback when the oldest sessions of the ring are all gone, or live
 * ones are no longer in the ring (a ring slot is reused when its turn comes,
 * whether its session still lives or not).  The key is copied and the
 * state word read again after: a slot taken meanwhile is passed over.
 */
static long evict_slot_cb(__u32 i, struct evict_ctx *e)
{
	void *m = nat_tab(&xdpr_nat_cta);
	__u32 idx = XDPR_CT_FIRST + ((e->head + i) & e->ring), w;
	struct xdpr_ct_slot *sl;
	struct gc_copy *c;

	if (!m)
		return 1;
	sl = bpf_map_lookup_elem(m, &idx);
	c = bpf_map_lookup_elem(&xdpr_gc_scr, (const void *)&nat_slot_key[0]); /* off the stack */
	if (!sl || !c)
		return 0;
	w = READ_ONCE_U32(sl->state);
	if (CT_ST(w) != XDPR_CTS_LIVE || sl->key.dir != XDPR_CT_OUT)
		return 0;
	c->k = sl->key;
	c->v = sl->val;
	asm volatile("" ::: "memory");
	if (READ_ONCE_U32(sl->state) == w)
		evict_consider(e, &c->k, &c->v);
	return 0;
}

/*
 * Table full (sessions, mappings or bindings: they hold as many): evict
 * among the oldest sessions (or, when the ring's oldest are gone, among
 * 64 slots of the session array from a random place), expired ones first, then from the greediest
 * host (most sessions), the idlest of its sessions; never from another
 * host with no more sessions than the one asking (a host that fills the
 * table evicts its own).  Its binding goes with it when no other session
 * holds it (no hold-down: no room for one).  1 if one went (or another
 * CPU removed it first: try again, with skip one more).  Global; the
 * request is in the per-CPU scratch.
 */
__noinline int nat_evict(__u32 skip)
{
	struct nat_scratch *sc = nat_scratch();
	struct evict_ctx e = {};
	struct xdpr_ct_val *v;
	struct nat_req *q;
	__u32 zero = 0, gen;
	__be32 xaddr;
	__be16 xport;
	__u64 *hd;

	if (!sc)
		return 0;
	q = &sc->q;
	e.now = q->now;
	e.cfg = &q->cfg;
	e.requester = q->key.saddr;
	e.requester_n = q->host_n;
	hd = bpf_map_lookup_elem(&xdpr_nat_ringhd, &zero);
	if (!hd)
		return 0;
	e.ring = q->cfg.nat_sess;
	if (!e.ring)
		return 0;
	/*
	 * The slot about to be reused holds the oldest session; a try after
	 * one whose pick another CPU took (both CPUs pick the oldest) looks
	 * past that many slots, or it could lose to the same CPU every time.
	 */
	e.head = (*hd + skip) % e.ring;
	bpf_loop(EVICT_SCAN, evict_cb, &e, 0);
	if (!e.found) {
		void *m = nat_tab(&xdpr_nat_cta);
		struct xdpr_ct_hdr *hdr = m ? bpf_map_lookup_elem(m, (const void *)&ct_idx[0]) : NULL;

		if (!hdr)
			return 0;
		e.ring = hdr->mask; /* e.head and e.ring: where in the slot array, and its mask */
		e.head = bpf_get_prandom_u32();
		bpf_loop(2 * EVICT_SCAN, evict_slot_cb, &e, 0);
	}
	if (!e.found)
		return 0;
	v = ct_lookup(&e.best);
	if (!v)
		return 1; /* another CPU removed it first: there was room; try again */
	xaddr = v->xaddr;
	xport = v->xport;
	gen = v->bind_gen;
	if (!nat_sweep_key(&e.best, v, q->now, &q->cfg, e.best_n != 0xffffffff))
		return 1; /* another CPU removed it first: there was room; try again */
	/* its port has no room for a hold-down either: the binding goes with its last session */
	bind_free_now(xaddr, xport, e.best.proto, gen);
	return 1;
}

static long held_cb(struct bpf_map *map, struct xdpr_bind_key *k, struct xdpr_bind *b, int *freed)
{
	struct nat_scratch *sc = nat_scratch();
	__u64 st;
	__u32 rule;

	if (!sc || !sc->held_budget)
		return 1;
	sc->held_budget--;
	st = READ_ONCE_U64(b->state);
	if ((st & XDPR_BIND_DYING) || XDPR_BIND_REFS(st))
		return 0;
	rule = b->rule;
	if (!bind_free(k, b, st))
		return 0;
	nat_count(rule, XDPR_NE_PORT_REUSED);
	*freed = 1;
	return 1;
}

/*
 * The mapping or binding table full of ports in their hold-down (their
 * sessions gone), nothing to evict: the first such binding of a walk of
 * HELD_SCAN bindings goes back to the pool now (`ports_reclaimed`): no
 * room for its hold-down.  1 if one went.  Global.
 */
__noinline int nat_free_held(void)
{
	struct nat_scratch *sc = nat_scratch();
	void *m = nat_tab(&xdpr_nat_bind);
	int freed = 0;

	if (!sc || !m)
		return 0;
	sc->held_budget = HELD_SCAN;
	bpf_for_each_map_elem(m, held_cb, &freed, 0);
	return freed;
}

/* ------------------------------------------------------------ creation */

/*
 * ct_insert, tried again while it finds the key's slot locked (-EBUSY).
 * The lock's holder, another CPU inserting a half with the same first
 * slot (often the same session: both CPUs saw its first packets), holds it
 * for a few hundred ns, but an interrupt or the host can stop it there for
 * tens of microseconds, longer than one ct_insert's spin (a few us): each
 * try spins again, CT_BUSY_TRIES of them ~1 ms.  Inline: a frame of its own
 * would put the creation's call chain over 512 bytes.
 */
#define CT_BUSY_TRIES 512

static __always_inline long ct_insert_wait(const struct xdpr_ct_key *k, const struct xdpr_ct_val *v)
{
	long err = -EBUSY;

	for (int i = 0; i < CT_BUSY_TRIES && err == -EBUSY; i++)
		err = ct_insert(k, v);
	return err;
}

/*
 * Insert the two halves of the request's session.  NAT_OK (q->out set),
 * or an event.  EEXIST is never "table full": the same session from
 * another CPU is adopted; an expired session of a former owner of the port
 * is swept and the insert tried once more.  Global, like the next two.
 */
__noinline int nat_insert(void)
{
	struct nat_scratch *sc = nat_scratch();
	struct xdpr_ct_key *ik;
	struct xdpr_ct_val *v, *old;
	struct nat_req *q;
	int err = 0;

	if (!sc)
		return XDPR_NE_TABLE_FULL;
	q = &sc->q;
	ik = &sc->ik;
	v = &sc->iv;

	ik->saddr = q->key.daddr;
	ik->daddr = q->out_addr;
	ik->sport = q->key.dport;
	ik->dport = q->port;
	ik->proto = q->key.proto;
	ik->dir = XDPR_CT_IN;
	ik->pad[0] = ik->pad[1] = 0;
	v->xaddr = q->key.saddr;
	v->xport = q->key.sport;
	v->state = q->state;
	v->rule = q->rule_id;
	v->last_seen = q->now;
	v->created = q->now;
	v->bind_gen = q->gen;

	for (int tries = 0; tries < 2; tries++) {
		err = ct_insert_wait(ik, v);
		if (err != -EEXIST)
			break;
		old = ct_lookup(ik);
		if (!old)
			continue;
		if (old->xaddr == q->key.saddr && old->xport == q->key.sport) {
			/* this very session, created by another CPU */
			q->out = *v;
			q->out.xaddr = q->out_addr;
			q->out.xport = q->port;
			return XDPR_NE_ADOPTED;
		}
		{
			/* a former owner's session to the same remote: expired, or the port is not ours */
			struct xdpr_ct_key ok;
			struct xdpr_ct_val *ov;

			ct_other_key(ik, old, &ok);
			ov = ct_lookup(&ok);
			if (!ov || !nat_sweep_key(&ok, ov, q->now, &q->cfg, 0))
				return XDPR_NE_NO_PORT;
		}
	}
	if (err)
		return err == -EEXIST ? XDPR_NE_NO_PORT : err == -EBUSY ? XDPR_NE_BUSY : XDPR_NE_TABLE_FULL;
	v->xaddr = q->out_addr;
	v->xport = q->port;
	err = ct_insert_wait(&q->key, v);
	if (err == -EEXIST) {
		old = ct_lookup(&q->key);
		if (old && old->xaddr == q->out_addr && old->xport == q->port) {
			q->out = *old; /* the other CPU's; our inbound half is the same key as its */
			return XDPR_NE_ADOPTED;
		}
	}
	if (err) {
		ct_delete(ik);
		return err == -EEXIST || err == -EBUSY ? XDPR_NE_BUSY : XDPR_NE_TABLE_FULL;
	}
	q->out = *v;
	return NAT_OK;
}

/* Give back what the request took (nothing was created); global, like nat_ring_add. */
__noinline int nat_unclaim(void)
{
	struct nat_scratch *sc = nat_scratch();
	struct nat_req *q;

	if (!sc)
		return 0;
	q = &sc->q;
	nat_release(q->key.saddr, q->out_addr, q->port, q->key.proto, q->gen, q->now);
	return 0;
}

/* Binding for the request: the endpoint's mapping, or a new port claimed for it. */
__noinline int nat_bind(struct xdp_md *ctx)
{
	struct nat_scratch *sc = nat_scratch();
	struct nat_req *q;
	__u32 stale = 0;
	int res, ev;

	if (!ctx || !sc)
		return XDPR_NE_BUSY;
	q = &sc->q;

	for (int tries = 0; tries < 3; tries++) {
		int got;

		res = eim_get(q, &stale);
		if (res == EIM_HIT)
			return NAT_OK;
		if (q->from_in)
			return XDPR_NE_NO_PORT; /* an inbound packet never makes a new mapping */
		got = res == EIM_CLAIMING ? 0 : eim_claim(q, res, stale);
		if (got < 0)
			return XDPR_NE_TABLE_FULL; /* no room for the mapping: not another CPU's doing */
		if (!got) {
			/* another CPU claims this endpoint: adopt what it publishes */
			eim_wait(q);
			continue;
		}
		ev = nat_alloc(ctx);
		eim_publish(q, ev == NAT_OK ? q->gen : 0);
		return ev;
	}
	return XDPR_NE_BUSY;
}

/*
 * Create the session of the request in the per-CPU scratch: host count,
 * binding, both halves; when the table is full, evict and try once more.
 * Returns NAT_OK with q->out set, or an enum xdpr_nat_event saying why not
 * (XDPR_NE_ADOPTED: another CPU made the same session; q->out is it).
 */
static __always_inline int nat_create(struct xdp_md *ctx)
{
	struct nat_scratch *sc = nat_scratch();
	struct nat_req *q;
	int ev;

	if (!ctx || !sc)
		return XDPR_NE_TABLE_FULL;
	if (nat_frozen())
		return XDPR_NE_RESIZING; /* the copy would miss it */
	q = &sc->q;
	if (q->from_in == NAT_FROM_FWD)
		goto insert; /* the forward owns the port (q->port, q->gen 0); no host count */
	ev = host_get(q->key.saddr, q->cfg.host_limit);
	if ((ev == XDPR_NE_HOST_LIMIT || ev == XDPR_NE_TABLE_FULL) && nat_pressure_sweep(q->now))
		ev = host_get(q->key.saddr, q->cfg.host_limit);
	if (ev >= 0)
		return ev;
	q->rescan = 0;
	ev = nat_bind(ctx);
	if (ev == XDPR_NE_NO_PORT && !q->from_in && nat_pressure_sweep(q->now)) {
		q->rescan = 1;
		ev = nat_bind(ctx);
	}
	/*
	 * The mapping or binding table full: make room as for a full session
	 * table, again if another CPU took the room first.
	 */
	for (int tries = 0; tries < EVICT_TRIES && ev == XDPR_NE_TABLE_FULL && !q->from_in; tries++) {
		if (!nat_evict(tries) && !nat_free_held() && (tries || !nat_pressure_sweep(q->now)))
			break;
		ev = nat_bind(ctx);
	}
	if (ev >= 0) {
		host_put(q->key.saddr);
		return ev;
	}
insert:
	for (int tries = 0; tries < EVICT_TRIES; tries++) {
		ev = nat_insert();
		if (ev != XDPR_NE_TABLE_FULL || tries == EVICT_TRIES - 1 || !nat_evict(tries))
			break;
	}
	if (ev == NAT_OK) {
		nat_count(q->rule_id, XDPR_NE_SESS_NEW);
		nat_ring_add();
		natlog_put(XDPR_NL_CREATE, &q->key, q->out.xaddr, q->out.xport, q->rule_id);
		return NAT_OK;
	}
	/* nothing created: give back the host count and the binding reference */
	nat_unclaim();
	return ev;
}

#endif /* XDPR_NAT_SESS_H */
