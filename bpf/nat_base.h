/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nat_base.h - what every source-NAT step shares: event counters,
 * timeouts, and the request a new session is built from (per-CPU scratch).
 */
#ifndef XDPR_NAT_BASE_H
#define XDPR_NAT_BASE_H

#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"
#include "maps.h"

#ifndef EEXIST
#define EEXIST 17
#endif

#define NSEC 1000000000ULL

/* NAT helpers return an enum xdpr_nat_event saying why not, or this. */
#define NAT_OK (-1)

static __always_inline void nat_count_n(__u32 rule, __u32 event, __u32 n)
{
	__u32 key = rule * XDPR_NE_MAX + event;
	__u64 *v = bpf_map_lookup_elem(&xdpr_nat_stats, &key);

	if (v)
		*v += n;
}

static __always_inline void nat_count(__u32 rule, __u32 event)
{
	nat_count_n(rule, event, 1);
}

/* Idle timeout of a session in a state (enum xdpr_ct_state bits of both halves). */
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

/* Longest any session of this protocol can live idle. */
static __always_inline __u64 nat_max_timeout(const struct xdpr_cfg *cfg, __u8 proto)
{
	__u32 s = proto == IPPROTO_TCP ? (cfg->tcp_est > cfg->tcp_trans ? cfg->tcp_est : cfg->tcp_trans)
		: proto == IPPROTO_UDP ? cfg->udp : cfg->icmp;

	return (__u64)s * NSEC;
}

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

/* nat_req.from_in: how an inbound packet opens a session. */
#define NAT_FROM_EIF 1 /* to a binding whose rule filters endpoint-independently */
#define NAT_FROM_FWD 2 /* to a port forward (nat_fwd.h): no binding, no host count */

/* One session to create (outbound key) and what it turned into. */
struct nat_req {
	struct xdpr_ct_key key;
	struct xdpr_nat_rule r;    /* copies: pointers do not survive map memory */
	struct xdpr_cfg cfg;
	__u64 now;
	__u32 gen;                 /* binding generation */
	__u32 host_n;              /* the inside host's sessions, this one included */
	__be32 out_addr;
	__be16 port;               /* outside port (network order) */
	__u8 rule_id;
	__u8 state;
	__u8 from_in;              /* opened by an inbound packet: NAT_FROM_EIF, NAT_FROM_FWD */
	__u8 rescan;               /* ports were just freed: search even an "exhausted" range */
	__u8 pad[2];
	struct xdpr_ct_val out;    /* the outbound half created (or adopted) */
};

/* The port search of nat_alloc (nat_bind.h). */
struct nat_alloc_state {
	__u64 holddown;
	__u64 dead_after;
	__u32 ip;                  /* inside port, host order */
	__u32 min;
	__u32 max;
	__u32 range;
	__u32 start;
	__u32 port;                /* out: host order, 0 = none */
	int reclaimed;
	int full;
	int shadowed;
	int probes;                /* candidates looked at, preserved port included */
	__u32 budget;              /* probes this search may make */
	__u32 jump;                /* ports passed over without a probe: the rest of a
	                              port forward's range, once one of its ports is met */
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
	struct nat_alloc_state a;
	__u32 held_budget;         /* nat_free_held's walk: bindings it may still look at (off the
	                              stack: a counter there keeps the verifier from seeing the
	                              callback converge) */
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

#define READ_ONCE_U64(x) (*(volatile __u64 *)&(x))
#define READ_ONCE_U32(x) (*(volatile __u32 *)&(x))

/*
 * Does a map element's key (words 8-byte words at elem) still equal the
 * copy taken before its value was read?  An element another CPU deleted
 * is reused at once for another entry: a changed key says the value read
 * may be that entry's.  For the sweeps' callbacks, which walk elements in
 * place.
 */
static __always_inline int elem_key_kept(void *elem, const void *copy, int words)
{
	for (int i = 0; i < words; i++)
		if (READ_ONCE_U64(((__u64 *)elem)[i]) != ((const __u64 *)copy)[i])
			return 0;
	return 1;
}

#include "nat_ct.h"

#endif /* XDPR_NAT_BASE_H */
