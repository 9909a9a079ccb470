/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nat_bind.h - who owns an outside port: bindings, the endpoint-independent
 * mapping that finds them again, and the port allocator.
 *
 * A binding (xdpr_nat_bind, keyed by outside address/port/protocol) names
 * the inside endpoint that owns the port.  Its ownership is one 64-bit word,
 * state = generation << 32 | DYING | references, and every change of
 * ownership is a compare-and-swap of that word from a value just read:
 *
 *   get      gen matches, not DYING        -> references + 1
 *   put      gen matches, references > 0   -> references - 1
 *   free     references 0, not DYING       -> DYING, then the entry is deleted
 *   reclaim  not DYING and dead (below)    -> gen + 1, one reference (new owner)
 *
 * Why each is safe: a CAS succeeds only on the exact word it judged, so a
 * reference is never taken on a binding that was freed or handed over since
 * (its gen or DYING changed the word); a put names the generation it got,
 * so an old owner's put can never land on the new owner's count; DYING is
 * final, so neither get nor reclaim can revive what free is deleting; and
 * reclaim from a word with references only happens when the binding has been
 * idle longer than any of its sessions can live plus a bind_period
 * (last_active is set when a session takes a reference and refreshed by the
 * sessions' traffic once a bind_period), so a live session never loses its
 * port however old it is.  The old owner's sessions keep the old gen:
 * their lookups find their own halves expired, and their puts are ignored.
 *
 * The mapping (xdpr_nat_eim) is claimed the same way: an entry with gen 0
 * is being claimed by one CPU (inserted with BPF_NOEXIST, or CAS from a
 * stale generation); others wait for it to publish (a bounded spin) and
 * adopt that binding, so one endpoint gets one outside port on every CPU.
 *
 * Allocation happens once per flow and may use atomics; no per-packet path
 * writes here except the refresh of last_active, once a bind_period.
 */
#ifndef XDPR_NAT_BIND_H
#define XDPR_NAT_BIND_H

#include "nat_base.h"

#define BIND_STATE(gen, refs) (((__u64)(gen) << 32) | (refs))
#define BIND_REFRESH NSEC          /* last_active is refreshed at most this often */
#define ALLOC_PROBES 64            /* candidate ports a packet may look at */
#define EXHAUSTED_PROBES 4         /* ... once the whole range was probed in vain */
#define EIM_SPIN 32768             /* lookups while another CPU publishes a mapping (~1 ms:
                                      a VM's vCPU can be preempted mid-claim) */

/* Take a reference on generation gen.  1 taken, 0 stale, -1 lost every race (busy). */
static __always_inline int bind_get(struct xdpr_bind *b, __u32 gen)
{
	for (int i = 0; i < 8; i++) {
		__u64 s = READ_ONCE_U64(b->state);

		if (XDPR_BIND_GEN(s) != gen || (s & XDPR_BIND_DYING))
			return 0;
		if (__sync_val_compare_and_swap(&b->state, s, s + 1) == s)
			return 1;
	}
	return -1;
}

/* Give back a reference of generation gen; the last one starts the hold-down. */
static __always_inline void bind_put(struct xdpr_bind *b, __u32 gen, __u64 now)
{
	for (int i = 0; i < 8; i++) {
		__u64 s = READ_ONCE_U64(b->state);

		if (XDPR_BIND_GEN(s) != gen || XDPR_BIND_REFS(s) == 0)
			return; /* handed over: the reference went with it */
		if (__sync_val_compare_and_swap(&b->state, s, s - 1) == s) {
			if (XDPR_BIND_REFS(s) == 1)
				b->last_active = now;
			return;
		}
	}
}

static __always_inline struct xdpr_bind *bind_lookup(__be32 addr, __be16 port, __u8 proto)
{
	struct xdpr_bind_key bk = { .out_addr = addr, .out_port = port, .proto = proto };

	return nat_lookup(&xdpr_nat_bind, &bk);
}

/*
 * How often a session's traffic refreshes its binding: a quarter of the
 * longest a session of the protocol can live idle, 1 s to 64 s.  A binding
 * with references is reclaimed only when idle for that longest time plus a
 * grace that includes this period (alloc_try), so a live session never
 * loses its port; and a session refreshing its binding once in a period
 * instead of at every refresh of its own spares a second hash lookup on
 * most packets of a big table.
 */
static __always_inline __u64 bind_period(const struct xdpr_cfg *cfg, __u8 proto)
{
	__u64 p = nat_max_timeout(cfg, proto) / 4;

	return p < NSEC ? NSEC : p > 64 * NSEC ? 64 * NSEC : p;
}

/* A session's traffic keeps its binding alive (called once a bind_period per half). */
static __always_inline void bind_refresh(__be32 addr, __be16 port, __u8 proto, __u32 gen, __u64 now)
{
	struct xdpr_bind *b = bind_lookup(addr, port, proto);

	if (b && XDPR_BIND_GEN(b->state) == gen && now - b->last_active > BIND_REFRESH)
		b->last_active = now;
}

/* Forget the mapping of an endpoint if it still names generation gen. */
static __always_inline void eim_forget(__be32 in_addr, __be16 in_port, __u8 proto, __u8 rule, __u32 gen)
{
	struct xdpr_eim_key ek = { .in_addr = in_addr, .in_port = in_port, .proto = proto, .rule = rule };
	struct xdpr_eim_val *e = nat_lookup(&xdpr_nat_eim, &ek);

	if (e && gen && __sync_val_compare_and_swap(&e->gen, gen, 0) == gen)
		nat_delete(&xdpr_nat_eim, &ek);
}

/* Delete a binding whose state word was s (no reference): 1 if this call did. */
static __always_inline int bind_free(const struct xdpr_bind_key *k, struct xdpr_bind *b, __u64 s)
{
	struct xdpr_bind_key key = *k;

	if (__sync_val_compare_and_swap(&b->state, s, s | XDPR_BIND_DYING) != s)
		return 0;
	eim_forget(b->in_addr, b->in_port, key.proto, b->rule, XDPR_BIND_GEN(s));
	nat_delete(&xdpr_nat_bind, &key);
	return 1;
}

/* free: no reference, past the hold-down.  1 if this call deleted the binding. */
static __always_inline int bind_try_free(const struct xdpr_bind_key *k, struct xdpr_bind *b, __u64 now,
					 __u64 holddown)
{
	__u64 s = READ_ONCE_U64(b->state);
	__u64 idle = now > b->last_active ? now - b->last_active : 0;

	if ((s & XDPR_BIND_DYING) || XDPR_BIND_REFS(s) || idle <= holddown)
		return 0;
	return bind_free(k, b, s);
}

/*
 * A full table gives up a hold-down: the binding of generation gen goes
 * now if no session holds it any more.  1 if this call deleted it.
 */
static __always_inline int bind_free_now(__be32 addr, __be16 port, __u8 proto, __u32 gen)
{
	struct xdpr_bind_key k = { .out_addr = addr, .out_port = port, .proto = proto };
	struct xdpr_bind *b = nat_lookup(&xdpr_nat_bind, &k);
	__u64 s;

	if (!b || !gen)
		return 0;
	s = READ_ONCE_U64(b->state);
	if ((s & XDPR_BIND_DYING) || XDPR_BIND_REFS(s) || XDPR_BIND_GEN(s) != gen)
		return 0;
	return bind_free(&k, b, s);
}

enum eim_result { EIM_HIT, EIM_MISS, EIM_STALE, EIM_CLAIMING };

/* The endpoint's binding, if it still holds: takes a reference (EIM_HIT, q->port, q->gen). */
static __always_inline int eim_get(struct nat_req *q, __u32 *stale_gen)
{
	struct xdpr_eim_key ek = { .in_addr = q->key.saddr, .in_port = q->key.sport,
				   .proto = q->key.proto, .rule = q->rule_id };
	struct xdpr_eim_val *e = nat_lookup(&xdpr_nat_eim, &ek);
	struct xdpr_bind *b;
	__u32 gen;
	__be16 port;
	int got;

	if (!e)
		return EIM_MISS;
	gen = READ_ONCE_U64(e->gen);
	*stale_gen = gen;
	if (!gen)
		return EIM_CLAIMING;
	port = e->out_port;
	if (e->out_addr != q->out_addr)
		return EIM_STALE; /* masquerade address moved */
	b = bind_lookup(q->out_addr, port, q->key.proto);
	if (!b || b->in_addr != q->key.saddr || b->in_port != q->key.sport)
		return EIM_STALE;
	got = bind_get(b, gen);
	if (got <= 0)
		return got < 0 ? EIM_CLAIMING : EIM_STALE; /* busy: try again, never take it over */
	/* a new session on it: fresh from now (its own refreshes come once a bind_period) */
	if (q->now - b->last_active > BIND_REFRESH)
		b->last_active = q->now;
	q->port = port;
	q->gen = gen;
	return EIM_HIT;
}

/*
 * Claim the endpoint's mapping for this CPU: 1 if claimed (entry left with
 * gen 0), 0 if another CPU holds it, -1 if the mapping table is full.
 */
static __always_inline int eim_claim(struct nat_req *q, int res, __u32 stale_gen)
{
	struct xdpr_eim_key ek = { .in_addr = q->key.saddr, .in_port = q->key.sport,
				   .proto = q->key.proto, .rule = q->rule_id };
	struct xdpr_eim_val *e, claim = {};

	if (res == EIM_MISS) {
		int err = nat_update(&xdpr_nat_eim, &ek, &claim, BPF_NOEXIST);

		return !err ? 1 : err == -EEXIST ? 0 : -1;
	}
	if (res != EIM_STALE)
		return 0;
	e = nat_lookup(&xdpr_nat_eim, &ek);
	return e && __sync_val_compare_and_swap(&e->gen, stale_gen, 0) == stale_gen;
}

/* Publish (or, with gen 0, withdraw) this CPU's claim. */
static __always_inline void eim_publish(struct nat_req *q, __u32 gen)
{
	struct xdpr_eim_key ek = { .in_addr = q->key.saddr, .in_port = q->key.sport,
				   .proto = q->key.proto, .rule = q->rule_id };
	struct xdpr_eim_val *e = nat_lookup(&xdpr_nat_eim, &ek);

	if (!e)
		return;
	if (!gen) {
		nat_delete(&xdpr_nat_eim, &ek); /* gen 0 entries are the claimer's alone */
		return;
	}
	e->out_addr = q->out_addr;
	e->out_port = q->port;
	__sync_val_compare_and_swap(&e->gen, 0, gen);
}

struct eim_wait {
	struct xdpr_eim_key ek;
	int done;
};

static long eim_wait_cb(__u32 i, struct eim_wait *w)
{
	struct xdpr_eim_val *e = nat_lookup(&xdpr_nat_eim, &w->ek);

	if (!e || READ_ONCE_U64(e->gen)) {
		w->done = 1;
		return 1;
	}
	return 0;
}

/* Another CPU is claiming the mapping: wait (bounded) until it publishes or gives up. */
static __always_inline int eim_wait(const struct nat_req *q)
{
	struct eim_wait w = { .ek = { .in_addr = q->key.saddr, .in_port = q->key.sport,
				      .proto = q->key.proto, .rule = q->rule_id } };

	bpf_loop(EIM_SPIN, eim_wait_cb, &w, 0);
	return w.done;
}

/* ---------------------------------------------------------------- ports */

/* Does a socket of the router hold this address/port?  (Mappings must not shadow it.) */
static __always_inline int port_shadowed(struct xdp_md *ctx, const struct nat_req *q, __be16 port)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;

	t.ipv4.saddr = q->key.daddr;
	t.ipv4.sport = q->key.dport;
	t.ipv4.daddr = q->out_addr;
	t.ipv4.dport = port;
	if (q->key.proto == IPPROTO_TCP)
		sk = bpf_sk_lookup_tcp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	else if (q->key.proto == IPPROTO_UDP)
		sk = bpf_sk_lookup_udp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	else
		return 0;
	if (!sk)
		return 0;
	bpf_sk_release(sk);
	return 1;
}

/*
 * Try one candidate port: install a new binding, or take over a dead one.
 * 1 if the port is now the request's (sc->nb.state names its generation).
 */
static __always_inline int alloc_try(struct nat_scratch *sc, __u16 port, __u64 holddown, __u64 dead_after,
				     int *reclaimed, int *full)
{
	struct nat_req *q = &sc->q;
	struct xdpr_bind *b;
	__u64 s, idle, grace;
	__be32 old_in;
	__be16 old_port;
	__u8 old_rule;
	__u32 gen;
	int err;

	sc->bkey.out_port = bpf_htons(port);
	b = nat_lookup(&xdpr_nat_bind, &sc->bkey);
	if (!b) {
		err = nat_update(&xdpr_nat_bind, &sc->bkey, &sc->nb, BPF_NOEXIST);
		if (!err)
			return 1;
		if (err != -EEXIST)
			*full = 1;
		return 0;
	}
	s = READ_ONCE_U64(b->state);
	if (s & XDPR_BIND_DYING)
		return 0;
	idle = q->now > b->last_active ? q->now - b->last_active : 0;
	grace = (holddown > 2 * BIND_REFRESH ? holddown : 2 * BIND_REFRESH) + bind_period(&q->cfg, q->key.proto);
	if (XDPR_BIND_REFS(s)) {
		/* sessions that can only have expired, unswept */
		if (idle <= dead_after + grace)
			return 0;
	} else if (idle < holddown && b->in_addr != q->key.saddr) {
		return 0; /* held for its last host for the hold-down (none with hold-down 0) */
	}
	old_in = b->in_addr;
	old_port = b->in_port;
	old_rule = b->rule;
	gen = XDPR_BIND_GEN(s) + 1;
	if (!gen)
		gen = 1;
	b->last_active = q->now; /* before the claim: a racing reclaimer sees it fresh */
	if (__sync_val_compare_and_swap(&b->state, s, BIND_STATE(gen, 1)) != s)
		return 0;
	b->in_addr = q->key.saddr;
	b->in_port = q->key.sport;
	b->rule = q->rule_id;
	sc->nb.state = BIND_STATE(gen, 1);
	eim_forget(old_in, old_port, sc->bkey.proto, old_rule, XDPR_BIND_GEN(s));
	*reclaimed = 1;
	return 1;
}

/*
 * The search's state lives in the scratch (nat_alloc_state), not on the
 * stack: the verifier then sees the same loop state at every iteration and
 * checks the callback once, not once per probe.
 */
struct alloc_ctx {
	struct xdp_md *ctx;        /* for the socket lookups */
};

static long alloc_cb(__u32 i, struct alloc_ctx *c)
{
	struct nat_scratch *sc = nat_scratch();
	struct nat_alloc_state *a;
	struct xdpr_fwd *f;
	__u32 port;

	if (!sc)
		return 1;
	a = &sc->a;
	a->probes++;
	/* probe 0: the inside port itself (port preservation) */
	if (i == 0) {
		if (a->ip < a->min || a->ip > a->max)
			return 0;
		port = a->ip;
	} else {
		if (a->range == 0)
			return 1;
		port = a->min + (a->start + a->jump + i - 1) % a->range;
	}
	/* a port forward's port, or one a socket of the router holds: never a mapping's */
	sc->bkey.out_port = bpf_htons(port);
	f = bpf_map_lookup_elem(&xdpr_nat_fwd, &sc->bkey);
	if (f) {
		__u32 rid = f->rule;
		struct xdpr_nat_rule *fr = bpf_map_lookup_elem(&xdpr_nat_rules, &rid);

		/* the next probe goes past the forward's ports (within this range): one probe for all */
		if (i && fr && (fr->flags & XDPR_NAT_FWD) && fr->port_max > port)
			a->jump += (fr->port_max < a->max ? fr->port_max : a->max) - port;
		a->shadowed++;
		return 0;
	}
	if (port_shadowed(c->ctx, &sc->q, bpf_htons(port))) {
		a->shadowed++;
		return 0;
	}
	if (alloc_try(sc, port, a->holddown, a->dead_after, &a->reclaimed, &a->full)) {
		a->port = port;
		return 1;
	}
	return a->full ? 1 : 0;
}

/*
 * A binding for the request's inside endpoint on out_addr: the inside port
 * when it is in range and free, else up to ALLOC_PROBES ports from this
 * CPU's cursor for the rule, which moves on, so consecutive searches cover
 * the whole range.  When a whole range has been probed in vain the rule is
 * "exhausted" on this CPU for a second: packets then probe only
 * EXHAUSTED_PROBES ports each (the cursor still moves on, so a port freed
 * meanwhile, or a host's own held-down port, is still found).
 * Ports a socket of the router holds are skipped.  Returns NAT_OK with q->port
 * and q->gen set, or an enum xdpr_nat_event.  A global function (verified
 * once); the request is in the per-CPU scratch.
 */
__noinline int nat_alloc(struct xdp_md *ctx)
{
	struct nat_scratch *sc = nat_scratch();
	struct alloc_ctx c = { .ctx = ctx };
	const struct xdpr_nat_rule *r;
	struct nat_alloc_state *ap;
	struct nat_cursor *cur;
	struct nat_req *q;
	__u32 key;

	if (!ctx || !sc)
		return XDPR_NE_NO_PORT;
	q = &sc->q;
	r = &q->r;
	ap = &sc->a;
	__builtin_memset(ap, 0, sizeof(*ap));
#define a (*ap)
	a.ip = bpf_ntohs(q->key.sport);
	a.min = r->port_min;
	a.max = r->port_max;
	a.range = r->port_max >= r->port_min ? r->port_max - r->port_min + 1 : 0;
	if (a.range == 0 || a.range > 65536)
		return XDPR_NE_NO_PORT;
	a.holddown = (__u64)q->cfg.holddown * NSEC;
	a.dead_after = nat_max_timeout(&q->cfg, q->key.proto);
	key = q->rule_id * 4 + (q->key.proto == IPPROTO_TCP ? 0 : q->key.proto == IPPROTO_UDP ? 1 : 2);
	cur = bpf_map_lookup_elem(&xdpr_nat_cursor, &key);
	if (!cur)
		return XDPR_NE_NO_PORT;
	if (cur->min != a.min || cur->max != a.max) {
		cur->min = a.min;
		cur->max = a.max;
		cur->next = bpf_get_prandom_u32() % a.range; /* CPUs start apart */
		cur->scanned = 0;
		cur->exhausted_until = 0;
	}
	/*
	 * A range probed whole in vain: a few probes a packet until a search
	 * succeeds or a second has passed, so a host that may reuse its
	 * held-down ports still finds them while others fail cheaply.
	 */
	a.budget = q->now < cur->exhausted_until && !q->rescan ? EXHAUSTED_PROBES : ALLOC_PROBES;
	a.start = cur->next;

	__builtin_memset(&sc->bkey, 0, sizeof(sc->bkey));
	__builtin_memset(&sc->nb, 0, sizeof(sc->nb));
	sc->bkey.out_addr = q->out_addr;
	sc->bkey.proto = q->key.proto;
	sc->nb.in_addr = q->key.saddr;
	sc->nb.in_port = q->key.sport;
	sc->nb.rule = q->rule_id;
	sc->nb.state = BIND_STATE(bpf_get_prandom_u32() | 1, 1);
	sc->nb.last_active = q->now;

	bpf_loop(a.budget, alloc_cb, &c, 0);
	if (a.shadowed)
		nat_count(q->rule_id, XDPR_NE_PORT_SHADOWED);
	if (a.full)
		return XDPR_NE_TABLE_FULL;
	if (!a.port) {
		nat_count_n(q->rule_id, XDPR_NE_PROBES, a.probes);
		cur->next = (a.start + a.jump + a.budget - 1) % a.range;
		cur->scanned += a.budget - 1 + a.jump;
		if (cur->scanned >= a.range) {
			cur->scanned = 0;
			if (q->now >= cur->exhausted_until)
				cur->exhausted_until = q->now + NSEC;
		}
		return XDPR_NE_NO_PORT;
	}
	if (a.port != a.ip)
		cur->next = (a.port - a.min + 1) % a.range;
	cur->scanned = 0;
	cur->exhausted_until = 0;
	if (a.port == a.ip)
		nat_count(q->rule_id, XDPR_NE_PORT_PRESERVED);
	if (a.reclaimed)
		nat_count(q->rule_id, XDPR_NE_PORT_REUSED);
	q->port = bpf_htons(a.port);
	q->gen = XDPR_BIND_GEN(sc->nb.state);
	return NAT_OK;
#undef a
}

#endif /* XDPR_NAT_BIND_H */
