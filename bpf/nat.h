/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nat.h - IPv4 source NAT in the fast path (masquerade and address pools).
 *
 * A session is a pair of xdpr_nat_ct entries (see xdpr_shared.h).  It is
 * created by the first outbound packet: the inbound half first, with
 * BPF_NOEXIST (that claims the outside 5-tuple), then the outbound half;
 * a failure undoes what was done.  Outside ports belong to bindings
 * (xdpr_nat_bind, claimed with BPF_NOEXIST, reclaimed with cmpxchg on a
 * generation), found again from the inside endpoint through xdpr_nat_eim:
 * endpoint-independent mapping.  Atomics are used per flow (binding and host
 * reference counts), never per packet; per-packet state writes go to the half
 * of the direction being handled, so two CPUs never write the same entry.
 *
 * Expiry needs no daemon: timestamps are checked on every hit; the slot a
 * new session takes in a ring of recent sessions is swept on the way; idle
 * bindings are reclaimed when their port is needed; a full table evicts the
 * idlest of the oldest sessions; and xdpr_nat_gc (run by the CLI through
 * BPF_PROG_TEST_RUN) sweeps the whole table with the same code.
 */
#ifndef XDPR_NAT_H
#define XDPR_NAT_H

#include <linux/bpf.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "csum.h"
#include "parse.h"

#ifndef EEXIST
#define EEXIST 17
#endif
#ifndef E2BIG
#define E2BIG 7
#endif
#ifndef ENOMEM
#define ENOMEM 12
#endif

#define NSEC 1000000000ULL

/* nat4_snat / nat4_reverse: "create the session in scratch, then translate" */
#define NAT_CREATE_OUT 1000
#define NAT_CREATE_IN  1001
#define BIND_DYING 0x80000000U

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpr_cfg);
} xdpr_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_NAT_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xdpr_nat_rule);
} xdpr_nat_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPR_NAT_MAX_RULES * XDPR_NE_MAX);
	__type(key, __u32);
	__type(value, __u64);
} xdpr_nat_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * XDPR_NAT_MAX_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_ct_key);
	__type(value, struct xdpr_ct_val);
} xdpr_nat_ct SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_NAT_MAX_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_bind_key);
	__type(value, struct xdpr_bind);
} xdpr_nat_bind SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_NAT_MAX_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdpr_eim_key);
	__type(value, struct xdpr_eim_val);
} xdpr_nat_eim SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPR_NAT_MAX_SESS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __be32);
	__type(value, struct xdpr_host);
} xdpr_nat_hosts SEC(".maps");

/* Recent sessions (outbound keys) in creation order; [0] of _ringhd is the head. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPR_NAT_RING);
	__type(key, __u32);
	__type(value, struct xdpr_ct_key);
} xdpr_nat_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} xdpr_nat_ringhd SEC(".maps");

/* Per-CPU allocator cursor: CPUs start their port searches apart. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xdpr_nat_cursor SEC(".maps");

/* The L3/L4 view of an IPv4 packet the NAT works on. */
struct nat4 {
	struct iphdr *iph;
	void *l4;          /* transport header, NULL when not present (later fragment) */
	void *end;
	__be16 sport;      /* key ports: TCP/UDP ports, ICMP echo id (see xdpr_ct_key) */
	__be16 dport;
	__u8 proto;
	__u8 frag;         /* any fragment */
	__u8 icmp_err;     /* ICMP destination unreachable / time exceeded / parameter problem */
	__u8 reversed;     /* destination translated back to an inside host */
};

static __always_inline void nat_count(__u32 rule, __u32 event)
{
	__u32 key = rule * XDPR_NE_MAX + event;
	__u64 *v = bpf_map_lookup_elem(&xdpr_nat_stats, &key);

	if (v)
		*v += 1;
}

static __always_inline void csum_replace32(__u16 *check, __be32 old, __be32 new)
{
	csum_replace16(check, (__u16)old, (__u16)new);
	csum_replace16(check, (__u16)(old >> 16), (__u16)(new >> 16));
}

/* A UDP checksum of 0 means "none" and stays 0; a computed 0 is sent as 0xffff. */
static __always_inline void udp_csum_fixup(__u16 *check)
{
	if (*check == 0)
		*check = 0xffff;
}

static __always_inline __u64 nat_timeout(const struct xdpr_cfg *cfg, __u8 proto, __u8 state)
{
	__u32 s;

	if (proto == IPPROTO_TCP) {
		if ((state & XDPR_CT_RST) ||
		    ((state & XDPR_CT_FIN_OUT) && (state & XDPR_CT_FIN_IN)))
			s = cfg->tcp_trans;
		else if ((state & XDPR_CT_SEEN_OUT) && (state & XDPR_CT_SEEN_IN))
			s = cfg->tcp_est;
		else
			s = cfg->tcp_trans;
	} else if (proto == IPPROTO_UDP) {
		s = cfg->udp;
	} else {
		s = cfg->icmp;
	}
	return (__u64)s * NSEC;
}

/* Longest any session of this protocol can live idle: a binding older than that is dead. */
static __always_inline __u64 nat_max_timeout(const struct xdpr_cfg *cfg, __u8 proto)
{
	__u32 s = proto == IPPROTO_TCP ? (cfg->tcp_est > cfg->tcp_trans ? cfg->tcp_est : cfg->tcp_trans)
		: proto == IPPROTO_UDP ? cfg->udp : cfg->icmp;

	return (__u64)s * NSEC;
}

static __always_inline __u8 tcp_state_bits(const struct tcphdr *th, int dir)
{
	__u8 bits = dir == XDPR_CT_OUT ? XDPR_CT_SEEN_OUT : XDPR_CT_SEEN_IN;

	if (th->fin)
		bits |= dir == XDPR_CT_OUT ? XDPR_CT_FIN_OUT : XDPR_CT_FIN_IN;
	if (th->rst)
		bits |= XDPR_CT_RST;
	return bits;
}

static __always_inline void ct_other_key(const struct xdpr_ct_key *k, const struct xdpr_ct_val *v,
					 struct xdpr_ct_key *o)
{
	/* OUT {in, rem, inp, remp} -> out  <->  IN {rem, out, remp, outp} -> in */
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

/* Give back what a session held: binding reference, host count. */
static __always_inline void nat_release(__be32 in_addr, __be32 out_addr, __be16 out_port,
					__u8 proto, __u64 gen, __u64 now)
{
	struct xdpr_bind_key bk = { .out_addr = out_addr, .out_port = out_port, .proto = proto };
	struct xdpr_bind *b = bpf_map_lookup_elem(&xdpr_nat_bind, &bk);
	struct xdpr_host *h;

	if (b && b->gen == gen) {
		if (__sync_fetch_and_add(&b->nsess, -1) == 1)
			b->last_active = now; /* the hold-down starts now */
	}
	h = bpf_map_lookup_elem(&xdpr_nat_hosts, &in_addr);
	if (h)
		__sync_fetch_and_add(&h->nsess, -1);
}

/*
 * Delete a session given its outbound half.  Inbound half first, so no
 * packet can be translated one way only; whoever deletes the outbound half
 * releases the references.  Returns 1 if this call removed it.
 */
static __always_inline int nat_sess_delete(const struct xdpr_ct_key *okey, const struct xdpr_ct_val *oval,
					   __u64 now)
{
	struct xdpr_ct_key k = *okey, ik;
	struct xdpr_ct_val v = *oval;

	ct_other_key(&k, &v, &ik);
	bpf_map_delete_elem(&xdpr_nat_ct, &ik);
	if (bpf_map_delete_elem(&xdpr_nat_ct, &k))
		return 0;
	nat_release(k.saddr, v.xaddr, v.xport, k.proto, v.bind_gen, now);
	return 1;
}

/* Idle time of a session: the fresher of its two halves. */
static __always_inline __u64 nat_idle(const struct xdpr_ct_key *okey, const struct xdpr_ct_val *oval,
				      __u64 now, __u8 *state)
{
	struct xdpr_ct_key ik;
	struct xdpr_ct_val *iv;
	__u64 last = oval->last_seen;

	ct_other_key(okey, oval, &ik);
	iv = bpf_map_lookup_elem(&xdpr_nat_ct, &ik);
	*state = oval->state;
	if (iv) {
		if (iv->last_seen > last)
			last = iv->last_seen;
		*state |= iv->state;
	}
	return now > last ? now - last : 0;
}

struct sweep_ctx {
	__u64 now;
	const struct xdpr_cfg *cfg;
	__u32 op;         /* enum xdpr_gc_op */
	__u32 rule;
	__u32 deleted;
	__u32 seen;
	__u32 binds_freed;
};

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
	idx = __sync_fetch_and_add(hd, 1) % XDPR_NAT_RING;
	slot = bpf_map_lookup_elem(&xdpr_nat_ring, &idx);
	if (!slot)
		return;
	if (slot->proto) {
		struct xdpr_ct_key old = *slot;

		v = bpf_map_lookup_elem(&xdpr_nat_ct, &old);
		if (v)
			nat_sweep_key(&old, v, now, cfg, 0);
	}
	*slot = *okey;
}

#define EVICT_SCAN 16

struct evict_ctx {
	__u64 now;
	__u64 head;
	__u64 best_idle;
	struct xdpr_ct_key best;
	int found;
};

static long evict_cb(__u32 i, struct evict_ctx *e)
{
	__u32 idx = (e->head + i) % XDPR_NAT_RING;
	struct xdpr_ct_key *k = bpf_map_lookup_elem(&xdpr_nat_ring, &idx);
	struct xdpr_ct_val *v;
	__u64 idle;
	__u8 st;

	if (!k || !k->proto)
		return 0;
	v = bpf_map_lookup_elem(&xdpr_nat_ct, k);
	if (!v)
		return 0;
	idle = nat_idle(k, v, e->now, &st);
	if (!e->found || idle > e->best_idle) {
		e->best_idle = idle;
		e->best = *k;
		e->found = 1;
	}
	return 0;
}

/* Table full: evict the idlest among the oldest sessions.  1 if one went. */
static __noinline int nat_evict(__u64 now, const struct xdpr_cfg *cfg)
{
	struct evict_ctx e = { .now = now };
	struct xdpr_ct_val *v;
	__u32 zero = 0;
	__u64 *hd;

	hd = bpf_map_lookup_elem(&xdpr_nat_ringhd, &zero);
	if (!hd)
		return 0;
	e.head = *hd; /* the slot about to be reused holds the oldest session */
	bpf_loop(EVICT_SCAN, evict_cb, &e, 0);
	if (!e.found)
		return 0;
	v = bpf_map_lookup_elem(&xdpr_nat_ct, &e.best);
	return v ? nat_sweep_key(&e.best, v, now, cfg, 1) : 0;
}

/* One session to create (outbound key) and what it turned into. */
struct nat_req {
	struct xdpr_ct_key key;
	struct xdpr_nat_rule r;    /* copies: pointers do not survive map memory */
	struct xdpr_cfg cfg;
	__u64 now;
	__u64 gen;                 /* binding generation */
	__be32 out_addr;
	__be16 port;               /* outside port (network order) */
	__u8 rule_id;
	__u8 state;
	struct xdpr_ct_val out;    /* the outbound half created */
};

/*
 * Per-CPU scratch for session creation, off the 512-byte BPF stack.  XDP
 * does not nest on a CPU, and creation is never re-entered within a packet.
 */
struct nat_scratch {
	struct nat_req q;
	struct xdpr_ct_key ik;
	struct xdpr_ct_val iv;
	struct xdpr_bind_key bkey; /* allocator: candidate port */
	struct xdpr_bind nb;       /* allocator: the binding to install */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nat_scratch);
} xdpr_nat_scr SEC(".maps");

/* Every field a creation reads is written before it (no per-packet memset). */
static __always_inline struct nat_scratch *nat_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xdpr_nat_scr, &zero);
}

/* ---------------------------------------------------------------- ports */

struct alloc_ctx {
	struct nat_scratch *sc;    /* key and new binding live there */
	__u64 now;
	__u64 holddown;
	__u64 dead_after;
	__u32 min;
	__u32 range;
	__u32 start;
	__u32 port;                /* out: host order, 0 = none */
	__u8 full;
	__u8 reclaimed;
};

static long alloc_cb(__u32 i, struct alloc_ctx *a)
{
	struct nat_scratch *sc = a->sc;
	struct xdpr_bind *b;
	__u64 idle, old;
	int err;

	if (a->range == 0)
		return 1;
	sc->bkey.out_port = bpf_htons(a->min + (a->start + i) % a->range);
	b = bpf_map_lookup_elem(&xdpr_nat_bind, &sc->bkey);
	if (!b) {
		err = bpf_map_update_elem(&xdpr_nat_bind, &sc->bkey, &sc->nb, BPF_NOEXIST);
		if (!err) {
			a->port = bpf_ntohs(sc->bkey.out_port);
			return 1;
		}
		if (err != -EEXIST) {
			a->full = 1;
			return 1;
		}
		return 0;
	}
	if (b->nsess & BIND_DYING)
		return 0;
	idle = a->now > b->last_active ? a->now - b->last_active : 0;
	/*
	 * Free for another host: no session and past the hold-down, or
	 * sessions that can only have expired unswept.
	 */
	if (!((b->nsess == 0 && idle > a->holddown) || idle > a->dead_after + a->holddown))
		return 0;
	old = b->gen;
	if (__sync_val_compare_and_swap(&b->gen, old, sc->nb.gen) != old)
		return 0;
	b->in_addr = sc->nb.in_addr;
	b->in_port = sc->nb.in_port;
	b->rule = sc->nb.rule;
	b->nsess = 1;
	b->last_active = a->now;
	a->port = bpf_ntohs(sc->bkey.out_port);
	a->reclaimed = 1;
	return 1;
}

/*
 * A binding for the request's inside endpoint on out_addr: keep the inside
 * port when it is in range and free, else walk the range from this CPU's
 * cursor.  Bounded by the range (bpf_loop); fails only when no port is free.
 * Returns -1 with q->port and q->gen set, or an xdpr_nat_event.
 */
static __noinline int nat_alloc(struct nat_scratch *sc)
{
	struct nat_req *q = &sc->q;
	const struct xdpr_nat_rule *r = &q->r;
	struct alloc_ctx a = {};
	__u32 zero = 0, ip = bpf_ntohs(q->key.sport), *cur;

	__builtin_memset(&sc->bkey, 0, sizeof(sc->bkey));
	__builtin_memset(&sc->nb, 0, sizeof(sc->nb));
	sc->bkey.out_addr = q->out_addr;
	sc->bkey.proto = q->key.proto;
	sc->nb.in_addr = q->key.saddr;
	sc->nb.in_port = q->key.sport;
	sc->nb.rule = q->rule_id;
	sc->nb.gen = (q->now << 8) | (bpf_get_smp_processor_id() & 0xff) | 1;
	sc->nb.last_active = q->now;
	sc->nb.nsess = 1;
	a.sc = sc;
	a.now = q->now;
	a.holddown = (__u64)q->cfg.holddown * NSEC;
	a.dead_after = nat_max_timeout(&q->cfg, q->key.proto);
	a.min = r->port_min;
	a.range = r->port_max >= r->port_min ? r->port_max - r->port_min + 1 : 0;
	if (a.range == 0 || a.range > 65536)
		return XDPR_NE_NO_PORT;

	cur = bpf_map_lookup_elem(&xdpr_nat_cursor, &zero);
	if (ip >= a.min && ip <= r->port_max) {
		a.start = ip - a.min; /* port preservation */
	} else if (cur) {
		*cur += 7919; /* a prime stride spreads consecutive flows */
		a.start = (*cur + bpf_get_smp_processor_id() * (a.range / 2 + 1)) % a.range;
	}
	bpf_loop(a.range, alloc_cb, &a, 0);
	if (a.full)
		return XDPR_NE_TABLE_FULL;
	if (!a.port)
		return XDPR_NE_NO_PORT;
	if (a.port == ip)
		nat_count(q->rule_id, XDPR_NE_PORT_PRESERVED);
	if (a.reclaimed)
		nat_count(q->rule_id, XDPR_NE_PORT_REUSED);
	q->port = bpf_htons(a.port);
	q->gen = sc->nb.gen;
	return -1;
}

/* The binding of an inside endpoint, if it still holds; takes a reference. */
static __always_inline int nat_eim_get(__be32 in_addr, __be16 in_port, __u8 proto, struct nat_req *q)
{
	struct xdpr_eim_key ek = { .in_addr = in_addr, .in_port = in_port, .proto = proto,
				   .rule = q->rule_id };
	struct xdpr_eim_val *e = bpf_map_lookup_elem(&xdpr_nat_eim, &ek);
	struct xdpr_bind_key bk = {};
	struct xdpr_bind *b;

	if (!e || e->out_addr != q->out_addr)
		return 0;
	bk.out_addr = e->out_addr;
	bk.out_port = e->out_port;
	bk.proto = proto;
	b = bpf_map_lookup_elem(&xdpr_nat_bind, &bk);
	if (!b || b->gen != e->gen || b->in_addr != in_addr || b->in_port != in_port)
		return 0;
	if (__sync_fetch_and_add(&b->nsess, 1) & BIND_DYING) {
		__sync_fetch_and_add(&b->nsess, -1);
		return 0;
	}
	b->last_active = q->now;
	q->port = e->out_port;
	q->gen = e->gen;
	return 1;
}

/* ------------------------------------------------------------- sessions */

/* Outside address for an inside host under a rule: pools are paired (RFC 4787 REQ-2). */
static __always_inline __be32 nat_pool_addr(const struct xdpr_nat_rule *r, __be32 in_addr)
{
	__u32 h = bpf_ntohl(in_addr);

	if (r->pool_count <= 1)
		return r->pool_first;
	h ^= h >> 16;
	h *= 0x45d9f3b;
	h ^= h >> 16;
	return bpf_htonl(bpf_ntohl(r->pool_first) + h % r->pool_count);
}

/*
 * Create the session for an outbound packet: host limit, binding (EIM or
 * new), then inbound half (NOEXIST), then outbound half.  Returns -1 with
 * q->out set, or an enum xdpr_nat_event saying why not.
 */
static __noinline int nat_create(struct nat_scratch *sc)
{
	struct nat_req *q = &sc->q;
	struct xdpr_ct_key *ik = &sc->ik;
	struct xdpr_ct_val *v = &sc->iv;
	struct xdpr_host *h;
	__be32 in_addr = q->key.saddr;
	int err, ev;

	h = bpf_map_lookup_elem(&xdpr_nat_hosts, &in_addr);
	if (!h) {
		struct xdpr_host zero_host = {};

		bpf_map_update_elem(&xdpr_nat_hosts, &in_addr, &zero_host, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&xdpr_nat_hosts, &in_addr);
		if (!h)
			return XDPR_NE_TABLE_FULL;
	}
	if (__sync_fetch_and_add(&h->nsess, 1) >= q->cfg.host_limit) {
		__sync_fetch_and_add(&h->nsess, -1);
		return XDPR_NE_HOST_LIMIT;
	}

	if (!nat_eim_get(q->key.saddr, q->key.sport, q->key.proto, q)) {
		struct xdpr_eim_key ek = { .in_addr = q->key.saddr, .in_port = q->key.sport,
					   .proto = q->key.proto, .rule = q->rule_id };
		struct xdpr_eim_val e = {};

		ev = nat_alloc(sc);
		if (ev >= 0) {
			__sync_fetch_and_add(&h->nsess, -1);
			return ev;
		}
		e.out_addr = q->out_addr;
		e.out_port = q->port;
		e.gen = q->gen;
		bpf_map_update_elem(&xdpr_nat_eim, &ek, &e, BPF_ANY);
	}

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

	err = bpf_map_update_elem(&xdpr_nat_ct, ik, v, BPF_NOEXIST);
	if (err) {
		/*
		 * EEXIST: the remote endpoint already talks to this outside
		 * port, through a session of another inside endpoint.
		 */
		ev = err == -EEXIST ? XDPR_NE_NO_PORT : XDPR_NE_TABLE_FULL;
		goto undo;
	}
	v->xaddr = q->out_addr;
	v->xport = q->port;
	err = bpf_map_update_elem(&xdpr_nat_ct, &q->key, v, BPF_NOEXIST);
	if (err) {
		bpf_map_delete_elem(&xdpr_nat_ct, ik);
		ev = XDPR_NE_TABLE_FULL;
		goto undo;
	}
	q->out = *v;
	nat_count(q->rule_id, XDPR_NE_SESS_NEW);
	nat_ring_push(&q->key, &q->cfg, q->now);
	return -1;
undo:
	nat_release(q->key.saddr, q->out_addr, q->port, q->key.proto, q->gen, q->now);
	return ev;
}

/* Create, and when the table is full evict the idlest old session and try once more. */
static __always_inline int nat_create_evict(struct nat_scratch *sc)
{
	int ev = nat_create(sc);

	if (ev == XDPR_NE_TABLE_FULL && nat_evict(sc->q.now, &sc->q.cfg))
		ev = nat_create(sc);
	return ev;
}

/* ------------------------------------------------------------ rewriting */

/* L4 checksum field and the port (or echo id) to rewrite for a direction. */
static __always_inline int nat4_l4_fields(struct nat4 *p, int dir, __u16 **csum, __be16 **port)
{
	void *l4 = p->l4;

	if (!l4)
		return -1;
	if (p->proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > p->end)
			return -1;
		*csum = (__u16 *)&th->check;
		*port = dir == XDPR_CT_OUT ? &th->source : &th->dest;
	} else if (p->proto == IPPROTO_UDP) {
		struct udphdr *uh = l4;

		if ((void *)(uh + 1) > p->end)
			return -1;
		*csum = (__u16 *)&uh->check;
		*port = dir == XDPR_CT_OUT ? &uh->source : &uh->dest;
	} else {
		struct icmp4hdr *ic = l4;

		if ((void *)(ic + 1) > p->end)
			return -1;
		*csum = (__u16 *)&ic->check;
		*port = &ic->id;
	}
	return 0;
}

/* Rewrite source (OUT) or destination (IN) address and port with their checksums. */
static __always_inline void nat4_rewrite(struct nat4 *p, int dir, __be32 addr, __be16 port)
{
	struct iphdr *iph = p->iph;
	__be32 old_addr = dir == XDPR_CT_OUT ? iph->saddr : iph->daddr;
	__u16 *csum;
	__be16 *pp;

	if (dir == XDPR_CT_OUT)
		iph->saddr = addr;
	else
		iph->daddr = addr;
	csum_replace32(&iph->check, old_addr, addr);

	if (nat4_l4_fields(p, dir, &csum, &pp))
		return; /* later fragment: address only */
	if (p->proto == IPPROTO_UDP && *csum == 0) {
		*pp = port; /* no UDP checksum: keep none */
		return;
	}

	if (p->proto != IPPROTO_ICMP)
		csum_replace32(csum, old_addr, addr); /* pseudo-header */
	csum_replace16(csum, *pp, port);
	*pp = port;
	if (p->proto == IPPROTO_UDP)
		udp_csum_fixup(csum);
}

/* Rewrite, and keep the packet's key ports in step. */
static __always_inline void nat4_xlate(struct nat4 *p, int dir, __be32 addr, __be16 port)
{
	nat4_rewrite(p, dir, addr, port);
	if (dir == XDPR_CT_OUT)
		p->sport = port;
	else
		p->dport = port;
}

/*
 * The packet embedded in an ICMP error: which of its addresses and ports to
 * change, and every checksum that covers them (embedded IP, embedded L4 when
 * present, the ICMP checksum over all of it, the outer IP header).
 *   IN  (error about a packet we sent out): embedded source out -> in
 *   OUT (error from inside about a packet we brought in): embedded dest in -> out
 */
static __always_inline int nat4_icmp_err_rewrite(struct nat4 *p, int dir, __be32 addr, __be16 port,
						 struct iphdr *e, void *el4)
{
	struct icmp4hdr *ic = p->l4;
	__u16 *icsum = (__u16 *)&ic->check;
	__be32 *ea = dir == XDPR_CT_IN ? &e->saddr : &e->daddr;
	__be32 old_addr = *ea;
	__u16 old_ecsum = e->check;
	__be16 *ep, old_port;
	__u16 *l4c = NULL;

	if (e->protocol == IPPROTO_ICMP) {
		struct icmp4hdr *eic = el4;

		if ((void *)(eic + 1) > p->end)
			return -1;
		ep = &eic->id;
		l4c = (__u16 *)&eic->check;
	} else {
		__be16 *ports = el4;

		if ((void *)(ports + 2) > p->end)
			return -1;
		ep = dir == XDPR_CT_IN ? &ports[0] : &ports[1];
		if (e->protocol == IPPROTO_UDP) {
			struct udphdr *uh = el4;

			if ((void *)(uh + 1) <= p->end && uh->check)
				l4c = (__u16 *)&uh->check;
		} else {
			struct tcphdr *th = el4;

			if ((void *)(th + 1) <= p->end)
				l4c = (__u16 *)&th->check;
		}
	}

	/* outer header: the error's own destination (IN) or source (OUT) */
	{
		struct iphdr *iph = p->iph;
		__be32 *oa = dir == XDPR_CT_IN ? &iph->daddr : &iph->saddr;
		__be32 oold = *oa;

		*oa = addr;
		csum_replace32(&iph->check, oold, addr);
	}

	/* embedded header */
	*ea = addr;
	csum_replace32(&e->check, old_addr, addr);
	csum_replace32(icsum, old_addr, addr);
	csum_replace16(icsum, old_ecsum, e->check);

	old_port = *ep;
	*ep = port;
	csum_replace16(icsum, old_port, port);
	if (l4c) {
		__u16 old_l4c = *l4c;

		if (e->protocol != IPPROTO_ICMP)
			csum_replace32(l4c, old_addr, addr);
		csum_replace16(l4c, old_port, port);
		if (e->protocol == IPPROTO_UDP)
			udp_csum_fixup(l4c);
		csum_replace16(icsum, old_l4c, *l4c);
	}
	return 0;
}

/*
 * ICMP error about a translated flow.  dir IN: arrived from outside about a
 * packet we sent (embedded = our outbound packet as translated).  dir OUT:
 * an inside host's error about a packet we delivered to it.
 * Returns 1 translated, 0 not a NAT flow, -1 malformed.
 */
static __always_inline int nat4_icmp_err(struct nat4 *p, int dir, __u64 now)
{
	struct icmp4hdr *ic = p->l4;
	struct xdpr_ct_key k = {};
	struct xdpr_ct_val *v;
	struct iphdr *e;
	void *el4;

	if (!ic || (void *)(ic + 1) > p->end)
		return -1;
	e = (void *)(ic + 1);
	if ((void *)(e + 1) > p->end || e->ihl != 5)
		return -1;
	el4 = (void *)(e + 1);
	if (el4 + 8 > p->end)
		return -1;
	k.proto = e->protocol;
	if (k.proto == IPPROTO_ICMP) {
		struct icmp4hdr *eic = el4;

		/* only errors about echo requests we sent carry a NAT identifier */
		if (dir != XDPR_CT_IN || eic->type != ICMP_ECHO)
			return 0;
		k.sport = 0;
		k.dport = eic->id;
	} else if (k.proto == IPPROTO_TCP || k.proto == IPPROTO_UDP) {
		__be16 *ports = el4;

		/* the embedded packet travelled the other way: swap */
		k.sport = ports[1];
		k.dport = ports[0];
	} else {
		return 0;
	}
	k.saddr = e->daddr;
	k.daddr = e->saddr;
	k.dir = dir;
	v = bpf_map_lookup_elem(&xdpr_nat_ct, &k);
	if (!v)
		return 0;
	if (nat4_icmp_err_rewrite(p, dir, v->xaddr, v->xport, e, el4))
		return -1;
	nat_count(v->rule, dir == XDPR_CT_IN ? XDPR_NE_ICMP_ERR_IN : XDPR_NE_ICMP_ERR_OUT);
	return 1;
}

/* Key of this packet in the direction it travels (see xdpr_ct_key). */
static __always_inline void nat4_key(const struct nat4 *p, int dir, struct xdpr_ct_key *k)
{
	k->saddr = p->iph->saddr;
	k->daddr = p->iph->daddr;
	k->sport = p->sport;
	k->dport = p->dport;
	k->proto = p->proto;
	k->dir = dir;
	k->pad[0] = k->pad[1] = 0;
}

static __always_inline void nat_touch(struct xdpr_ct_val *v, __u8 bits, __u64 now)
{
	/* write only what changed: a busy flow does not dirty the entry per packet */
	if (now - v->last_seen > NSEC / 4)
		v->last_seen = now;
	if ((v->state | bits) != v->state)
		v->state |= bits;
}

/* Share new state bits with the other half (rare: SYN, FIN, RST, first reply). */
static __always_inline void nat_share_state(const struct xdpr_ct_key *k, struct xdpr_ct_val *v, __u8 bits)
{
	struct xdpr_ct_key o;
	struct xdpr_ct_val *ov;

	if ((v->state | bits) == v->state)
		return;
	ct_other_key(k, v, &o);
	ov = bpf_map_lookup_elem(&xdpr_nat_ct, &o);
	if (ov && (ov->state | bits) != ov->state)
		ov->state |= bits;
}

static __always_inline __u8 nat4_state_bits(struct nat4 *p, int dir)
{
	if (p->proto == IPPROTO_TCP && p->l4 && p->l4 + sizeof(struct tcphdr) <= p->end)
		return tcp_state_bits(p->l4, dir);
	return dir == XDPR_CT_OUT ? XDPR_CT_SEEN_OUT : XDPR_CT_SEEN_IN;
}

/* Can this packet carry a NAT key?  TCP/UDP with ports, ICMP echo. */
static __always_inline int nat4_keyable(const struct nat4 *p, int dir)
{
	struct icmp4hdr *ic = p->l4;

	if (!p->l4 || p->frag)
		return 0;
	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP)
		return 1;
	if (p->proto != IPPROTO_ICMP || (void *)(ic + 1) > p->end)
		return 0;
	return ic->type == (dir == XDPR_CT_OUT ? ICMP_ECHO : ICMP_ECHOREPLY);
}

/*
 * Inbound: a packet to a NAT binding.  Translates the destination back
 * (existing session, or a new one where the rule filters endpoint-
 * independently).  Returns -1 to go on routing, or an xdpr_reason.
 */
static __noinline int nat4_reverse(struct nat4 *p, const struct xdpr_cfg *cfg, __u64 now)
{
	struct xdpr_ct_key k;
	struct xdpr_ct_val *v;
	__u8 bits, state;

	if (p->iph->ttl <= 1)
		return -1; /* the router answers; nothing is translated */
	if (p->proto == IPPROTO_ICMP && p->icmp_err) {
		int rc = nat4_icmp_err(p, XDPR_CT_IN, now);

		if (rc > 0)
			p->reversed = 1;
		return -1;
	}
	if (!nat4_keyable(p, XDPR_CT_IN))
		return -1;
	nat4_key(p, XDPR_CT_IN, &k);
	v = bpf_map_lookup_elem(&xdpr_nat_ct, &k);
	if (v) {
		bits = nat4_state_bits(p, XDPR_CT_IN);
		if (now - v->last_seen > nat_timeout(cfg, k.proto, v->state | bits)) {
			struct xdpr_ct_key ok;
			struct xdpr_ct_val *ov;
			__u64 idle;

			ct_other_key(&k, v, &ok);
			ov = bpf_map_lookup_elem(&xdpr_nat_ct, &ok);
			if (!ov) {
				/* a lone inbound half cannot be trusted */
				bpf_map_delete_elem(&xdpr_nat_ct, &k);
				nat_count(v->rule, XDPR_NE_PAIR_REPAIRED);
				return -1;
			}
			idle = nat_idle(&ok, ov, now, &state);
			if (idle > nat_timeout(cfg, k.proto, state | bits)) {
				nat_sweep_key(&ok, ov, now, cfg, 0);
				return -1;
			}
		}
		nat_share_state(&k, v, bits);
		nat_touch(v, bits, now);
		nat4_xlate(p, XDPR_CT_IN, v->xaddr, v->xport);
		nat_count(v->rule, XDPR_NE_XLATE_IN);
		p->reversed = 1;
		return -1;
	}

	/* No session: is it a binding, and does its rule let strangers in? */
	if (p->proto != IPPROTO_ICMP) {
		struct xdpr_bind_key bk = { .out_addr = k.daddr, .out_port = k.dport, .proto = k.proto };
		struct xdpr_bind *b = bpf_map_lookup_elem(&xdpr_nat_bind, &bk);
		struct xdpr_nat_rule *r;
		struct nat_scratch *sc = nat_scratch();
		struct nat_req *q;
		__u32 rid;

		if (!b || (b->nsess & BIND_DYING))
			return -1;
		rid = b->rule;
		r = bpf_map_lookup_elem(&xdpr_nat_rules, &rid);
		if (!r || !(r->flags & XDPR_NAT_EIF)) {
			nat_count(rid, XDPR_NE_FILTERED);
			return XDPR_PASS_NAT_FILTERED;
		}
		/* endpoint-independent filtering: open the session from this side */
		if (!sc)
			return -1;
		q = &sc->q;
		q->key.saddr = b->in_addr;
		q->key.daddr = k.saddr;
		q->key.sport = b->in_port;
		q->key.dport = k.sport;
		q->key.proto = k.proto;
		q->key.dir = XDPR_CT_OUT;
		q->key.pad[0] = q->key.pad[1] = 0; /* keys are hashed whole */
		q->r = *r;
		q->cfg = *cfg;
		q->now = now;
		q->out_addr = k.daddr;
		q->rule_id = rid;
		q->state = nat4_state_bits(p, XDPR_CT_IN);
		return NAT_CREATE_IN;
	}
	return -1;
}

static __always_inline int nat_event_reason(int ev)
{
	switch (ev) {
	case XDPR_NE_NO_PORT:    return XDPR_DROP_NAT_NO_PORT;
	case XDPR_NE_HOST_LIMIT: return XDPR_DROP_NAT_HOST_LIMIT;
	case XDPR_NE_TABLE_FULL: return XDPR_DROP_NAT_FULL;
	}
	return XDPR_DROP_NAT_UNTRANSLATABLE;
}

/*
 * Outbound: the packet leaves through an interface with NAT rules.  Finds
 * the rule for its source, then the session (or creates it), and rewrites
 * the source.  out_addr is the masquerade address the FIB gave (0 if none).
 * Returns -1 to go on, or an xdpr_reason (drops are counted per rule too).
 */
static __noinline int nat4_snat(struct nat4 *p, const struct xdpr_iface *out, __be32 fib_src,
				const struct xdpr_cfg *cfg, __u64 now)
{
	struct xdpr_nat_rule *r = NULL;
	struct nat_scratch *sc;
	struct nat_req *q;
	struct xdpr_ct_val *v;
	__be32 saddr = p->iph->saddr, out_addr;
	__u32 rid = 0;
	__u8 bits;

	for (int i = 0; i < XDPR_NAT_IF_RULES; i++) {
		__u32 id;

		if (i >= out->nrules)
			break;
		id = out->rules[i];
		r = bpf_map_lookup_elem(&xdpr_nat_rules, &id);
		if (r && r->ifindex && (saddr & r->src_mask) == r->src_net) {
			rid = id;
			break;
		}
		r = NULL;
	}
	if (!r)
		return -1; /* not an inside source of this interface */

	if (r->flags & XDPR_NAT_MASQ)
		out_addr = (cfg->flags & XDPR_CFG_FIB_SRC) && fib_src ? fib_src : r->masq_addr;
	else
		out_addr = nat_pool_addr(r, saddr);
	if (!out_addr || saddr == out_addr)
		return -1;

	if (p->proto == IPPROTO_ICMP && p->icmp_err) {
		if (nat4_icmp_err(p, XDPR_CT_OUT, now) > 0)
			return -1;
		nat_count(rid, XDPR_NE_UNTRANSLATABLE);
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	}
	if (!nat4_keyable(p, XDPR_CT_OUT)) {
		nat_count(rid, XDPR_NE_UNTRANSLATABLE);
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	}
	sc = nat_scratch();
	if (!sc)
		return XDPR_DROP_NAT_UNTRANSLATABLE;
	q = &sc->q;
	nat4_key(p, XDPR_CT_OUT, &q->key);
	bits = nat4_state_bits(p, XDPR_CT_OUT);
	v = bpf_map_lookup_elem(&xdpr_nat_ct, &q->key);
	if (v) {
		int dead = 0;

		q->out = *v;
		if (q->out.xaddr != out_addr && (r->flags & XDPR_NAT_MASQ)) {
			nat_count(rid, XDPR_NE_ADDR_CHANGED); /* interface address moved */
			dead = 1;
		} else if (now - q->out.last_seen > nat_timeout(cfg, q->key.proto, q->out.state | bits)) {
			__u8 state;

			if (nat_idle(&q->key, &q->out, now, &state) >
			    nat_timeout(cfg, q->key.proto, state | bits))
				dead = 2;
		}
		/*
		 * No per-packet check of the inbound half: with plain hash maps
		 * halves only part during a deletion (inbound first), and the
		 * deleter removes this half right after.
		 */
		if (!dead) {
			nat_share_state(&q->key, v, bits);
			nat_touch(v, bits, now);
			nat4_xlate(p, XDPR_CT_OUT, q->out.xaddr, q->out.xport);
			nat_count(rid, XDPR_NE_XLATE_OUT);
			return -1;
		}
		/* timed out: counted as expired; moved or broken: counted above */
		if (dead == 2 && nat_sess_delete(&q->key, &q->out, now))
			nat_count(q->out.rule, XDPR_NE_SESS_EXPIRED);
		else if (dead == 1)
			nat_sess_delete(&q->key, &q->out, now);
	}
	q->r = *r;
	q->cfg = *cfg;
	q->now = now;
	q->out_addr = out_addr;
	q->rule_id = rid;
	q->state = bits;
	return NAT_CREATE_OUT;
}

/*
 * Second half of nat4_snat / nat4_reverse when they asked for a session
 * (kept out of them so the call chain stays within the BPF stack).
 */
static __always_inline int nat4_finish(struct nat4 *p, int want)
{
	__u32 zero = 0;
	struct nat_scratch *sc = bpf_map_lookup_elem(&xdpr_nat_scr, &zero);
	int ev;

	if (want != NAT_CREATE_OUT && want != NAT_CREATE_IN)
		return want;
	if (!sc)
		return XDPR_DROP_NAT_FULL;
	ev = nat_create_evict(sc);
	if (want == NAT_CREATE_OUT) {
		if (ev >= 0) {
			nat_count(sc->q.rule_id, ev);
			return nat_event_reason(ev);
		}
		nat4_xlate(p, XDPR_CT_OUT, sc->q.out.xaddr, sc->q.out.xport);
		nat_count(sc->q.rule_id, XDPR_NE_XLATE_OUT);
		return -1;
	}
	if (ev >= 0)
		return XDPR_PASS_NAT_FILTERED;
	nat4_xlate(p, XDPR_CT_IN, sc->q.key.saddr, sc->q.key.sport);
	nat_count(sc->q.rule_id, XDPR_NE_XLATE_IN);
	p->reversed = 1;
	return -1;
}

/*
 * Hairpin: an inside host addressed a NAT binding (the FIB called the
 * destination local).  Translate the source as if leaving through the
 * binding's interface, then the destination as if arriving there.
 */
static __always_inline int nat4_hairpin(struct nat4 *p, const struct xdpr_cfg *cfg, __u64 now)
{
	struct xdpr_bind_key bk = {};
	struct xdpr_iface *out;
	struct xdpr_nat_rule *r;
	struct xdpr_bind *b;
	__u32 rid, ifindex;
	__be32 saddr;
	int rc;

	if (!nat4_keyable(p, XDPR_CT_OUT) || p->proto == IPPROTO_ICMP)
		return -1;
	bk.out_addr = p->iph->daddr;
	bk.out_port = p->dport;
	bk.proto = p->proto;
	b = bpf_map_lookup_elem(&xdpr_nat_bind, &bk);
	if (!b)
		return -1;
	rid = b->rule;
	r = bpf_map_lookup_elem(&xdpr_nat_rules, &rid);
	if (!r)
		return -1;
	ifindex = r->ifindex;
	out = bpf_map_lookup_elem(&xdpr_ifaces, &ifindex);
	if (!out)
		return -1;
	/*
	 * Filtering first, so a refused packet goes to the kernel untouched:
	 * without EIF, the binding must already talk to this host's outside
	 * endpoint (its mapping under the same rule).
	 */
	if (!(r->flags & XDPR_NAT_EIF)) {
		struct xdpr_eim_key ek = { .in_addr = p->iph->saddr, .in_port = p->sport,
					   .proto = p->proto, .rule = rid };
		struct xdpr_eim_val *e = bpf_map_lookup_elem(&xdpr_nat_eim, &ek);
		struct xdpr_ct_key ik = {};

		if (e) {
			ik.saddr = e->out_addr;
			ik.daddr = bk.out_addr;
			ik.sport = e->out_port;
			ik.dport = bk.out_port;
			ik.proto = p->proto;
			ik.dir = XDPR_CT_IN;
		}
		if (!e || !bpf_map_lookup_elem(&xdpr_nat_ct, &ik)) {
			nat_count(rid, XDPR_NE_FILTERED);
			return XDPR_PASS_NAT_FILTERED;
		}
	}
	/* the binding's address is the masquerade address the FIB would give */
	saddr = p->iph->saddr;
	rc = nat4_finish(p, nat4_snat(p, out, bk.out_addr, cfg, now));
	if (rc >= 0)
		return rc;
	if (p->iph->saddr == saddr)
		return -1; /* not an inside host of that rule: the router's business */
	rc = nat4_finish(p, nat4_reverse(p, cfg, now));
	if (rc >= 0)
		return rc;
	if (p->reversed)
		nat_count(rid, XDPR_NE_HAIRPIN);
	return -1;
}

#endif /* XDPR_NAT_H */
