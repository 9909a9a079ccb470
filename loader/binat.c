// SPDX-License-Identifier: GPL-2.0
/*
 * binat.c - 1:1 NAT rules (IPv4 binat / netmap; the packet path is
 * bpf/binat.h).
 *
 * A rule lives in three places: its slot in xdpr_binat (the list), and one
 * entry in each trie (xdpr_binat_out by interface and inside prefix,
 * xdpr_binat_in by interface and outside prefix).  The interface's
 * XDPR_IF_BINAT flag gates both steps: it is the commit point of the first
 * rule of an interface and goes with the last one.  Adding writes the slot
 * and the inbound entry first and the outbound one last, so no inside host
 * is translated before its replies can come back; deleting takes the
 * outbound entry away first.  Every change is all or nothing: a failed write
 * takes back what this call wrote.  Callers hold the router's lock.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include "core.h"

static const char *const event_names[XDPR_BE_MAX] = {
	[XDPR_BE_OUT] = "translated_out",
	[XDPR_BE_IN] = "translated_in",
	[XDPR_BE_ICMP_ERR] = "icmp_errors",
	[XDPR_BE_DROPPED] = "dropped",
};

const char *xdpr_binat_event_name(int e)
{
	return e >= 0 && e < XDPR_BE_MAX ? event_names[e] : "?";
}

static __be32 plen_mask(__u32 plen)
{
	return plen ? htonl(~0U << (32 - plen)) : 0;
}

static void fmt_net(__be32 net, __u32 plen, char *buf, size_t len)
{
	char a[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &net, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, plen);
}

static bool ranges_meet(__u32 alo, __u32 ahi, __u32 blo, __u32 bhi)
{
	return alo <= bhi && blo <= ahi;
}

static void range_of(__be32 net, __u32 plen, __u32 *lo, __u32 *hi)
{
	*lo = ntohl(net);
	*hi = *lo | ~ntohl(plen_mask(plen));
}

static int maps_ok(struct xdpr *x)
{
	for (int m = XM_BINAT; m <= XM_BINAT_ST; m++)
		if (x->fd[m] < 0) {
			seterr(x, "this router's program has no 1:1 NAT maps (attached by an older xdpr): "
				  "detach and attach again");
			return -EOPNOTSUPP;
		}
	return 0;
}

/* Addresses that are never a packet's source on the wire (as for pool rules). */
static const struct {
	__u32 net;
	int plen;
	const char *what;
} never[] = {
	{ 0x00000000, 8, "\"this network\" (0.0.0.0/8)" },
	{ 0x7f000000, 8, "loopback (127.0.0.0/8)" },
	{ 0xe0000000, 4, "multicast (224.0.0.0/4)" },
	{ 0xf0000000, 4, "reserved (240.0.0.0/4)" },
};

static int check_usable(struct xdpr *x, const char *side, __be32 net, __u32 plen)
{
	char p[40];
	__u32 lo, hi;

	range_of(net, plen, &lo, &hi);
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		__u32 blo = never[i].net, bhi = blo | (0xffffffffu >> never[i].plen);

		if (!ranges_meet(lo, hi, blo, bhi))
			continue;
		fmt_net(net, plen, p, sizeof(p));
		seterr(x, "%s prefix \"%s\" holds %s addresses, never a packet's source", side, p, never[i].what);
		return -EINVAL;
	}
	return 0;
}

/* An outside address the router has itself: 1:1 would take the router's own traffic. */
static int check_not_ours(struct xdpr *x, __be32 net, __u32 plen)
{
	struct ifaddrs *ifa, *i;
	__u32 lo, hi;
	int err = 0;

	if (getifaddrs(&ifa))
		return 0;
	range_of(net, plen, &lo, &hi);
	for (i = ifa; i && !err; i = i->ifa_next) {
		char a[INET_ADDRSTRLEN], p[40];
		__be32 addr;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		addr = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
		if (ntohl(addr) < lo || ntohl(addr) > hi)
			continue;
		fmt_net(net, plen, p, sizeof(p));
		seterr(x, "outside prefix \"%s\" holds %s, an address of this router (%s): "
			  "1:1 NAT would take its traffic", p, inet_ntop(AF_INET, &addr, a, sizeof(a)), i->ifa_name);
		err = -EADDRINUSE;
	}
	freeifaddrs(ifa);
	return err;
}

/* The pool rules' addresses (loader/nat.c rules): an outside address is one owner's. */
static int check_pools(struct xdpr *x, __be32 net, __u32 plen)
{
	__u32 lo, hi;

	if (x->fd[XM_RULES] < 0)
		return 0;
	range_of(net, plen, &lo, &hi);
	for (__u32 id = 1; id < XDPR_NAT_MAX_RULES; id++) {
		struct xdpr_nat_rule r;
		__u32 plo;
		char p[40], a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
		__be32 last;

		if (bpf_map_lookup_elem(x->fd[XM_RULES], &id, &r) || !r.ifindex || (r.flags & XDPR_NAT_MASQ) ||
		    !r.pool_count)
			continue;
		plo = ntohl(r.pool_first);
		if (!ranges_meet(lo, hi, plo, plo + r.pool_count - 1))
			continue;
		fmt_net(net, plen, p, sizeof(p));
		last = htonl(plo + r.pool_count - 1);
		inet_ntop(AF_INET, &r.pool_first, a, sizeof(a));
		inet_ntop(AF_INET, &last, b, sizeof(b));
		seterr(x, "outside prefix \"%s\" overlaps the pool %s-%s of NAT rule %u (out %.16s)", p, a, b, id,
		       r.ifname);
		return -EADDRINUSE;
	}
	return 0;
}

static int read_rule(struct xdpr *x, __u32 id, struct xdpr_binat_rule *r)
{
	return bpf_map_lookup_elem(x->fd[XM_BINAT], &id, r) ? -errno : 0;
}

static void trie_key(struct xdpr_binat_key *k, __u32 ifindex, __be32 addr, __u32 plen)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = 32 + plen;
	k->ifindex = ifindex;
	k->addr = addr;
}

static int rules_of(struct xdpr *x, __u32 ifindex, __u32 except)
{
	int n = 0;

	for (__u32 id = 1; id < XDPR_BINAT_MAX; id++) {
		struct xdpr_binat_rule r;

		if (id != except && !read_rule(x, id, &r) && r.ifindex == ifindex)
			n++;
	}
	return n;
}

static int any_rule(struct xdpr *x, __u32 except)
{
	for (__u32 id = 1; id < XDPR_BINAT_MAX; id++) {
		struct xdpr_binat_rule r;

		if (id != except && !read_rule(x, id, &r) && r.ifindex)
			return 1;
	}
	return 0;
}

bool xdpr_binat_names(struct xdpr *x, __u32 ifindex)
{
	return x->fd[XM_BINAT] >= 0 && rules_of(x, ifindex, 0) > 0;
}

/* The interface's flag (on: rules to apply), written only when it changes. */
static int set_if_flag(struct xdpr *x, __u32 ifindex, bool on)
{
	struct xdpr_iface c;
	int err;

	if (bpf_map_lookup_elem(x->fd[XM_IFACES], &ifindex, &c))
		return on ? -errno : 0; /* not attached: nothing to gate */
	if (!(c.flags & XDPR_IF_BINAT) == !on)
		return 0;
	c.flags ^= XDPR_IF_BINAT;
	err = xdpr_iface_put(x, ifindex, &c, BPF_EXIST);
	if (err)
		seterr(x, "cannot update the interface's settings: %s", strerror(-err));
	return err;
}

static int set_cfg_flag(struct xdpr *x, bool on)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (err || !(c.flags & XDPR_CFG_BINAT) == !on)
		return err;
	c.flags ^= XDPR_CFG_BINAT;
	return xdpr_cfg_set(x, &c);
}

static int zero_counters(struct xdpr *x, __u32 id)
{
	return xdpr_percpu_zero(x->fd[XM_BINAT_ST], id * XDPR_BE_MAX, XDPR_BE_MAX);
}

int xdpr_binat_add(struct xdpr *x, const char *dev, __be32 in_net, __be32 out_net, __u32 plen)
{
	const struct xdpr_link *l = xdpr_link_find(x, dev);
	struct xdpr_binat_rule nr = {};
	struct xdpr_binat_key kin, kout;
	__be32 mask = plen_mask(plen);
	__u32 id = 0, ilo, ihi, olo, ohi;
	char pi[40], po[40];
	int err;

	fmt_net(in_net, plen, pi, sizeof(pi));
	fmt_net(out_net, plen, po, sizeof(po));
	if (!l) {
		if (!if_nametoindex(dev))
			seterr(x, "cannot find device \"%s\"", dev);
		else
			seterr(x, "xdpr is not attached to \"%s\": attach it first", dev);
		return -ENODEV;
	}
	if ((err = maps_ok(x)))
		return err;
	if (!plen || plen > 32 || (in_net & ~mask) || (out_net & ~mask)) {
		seterr(x, "1:1 NAT maps two prefixes of one length (/1 to /32), host bits clear");
		return -EINVAL;
	}
	range_of(in_net, plen, &ilo, &ihi);
	range_of(out_net, plen, &olo, &ohi);
	if (ranges_meet(ilo, ihi, olo, ohi)) {
		seterr(x, "inside \"%s\" and outside \"%s\" overlap", pi, po);
		return -EINVAL;
	}
	if ((err = check_usable(x, "inside", in_net, plen)) || (err = check_usable(x, "outside", out_net, plen)) ||
	    (err = check_not_ours(x, out_net, plen)) || (err = check_pools(x, out_net, plen)))
		return err;
	for (__u32 i = 1; i < XDPR_BINAT_MAX; i++) {
		struct xdpr_binat_rule r;
		__u32 lo, hi;
		char p[40];

		if (read_rule(x, i, &r) || !r.ifindex) {
			if (!id && !read_rule(x, i, &r))
				id = i;
			continue;
		}
		range_of(r.out_net, r.plen, &lo, &hi);
		if (ranges_meet(olo, ohi, lo, hi)) {
			fmt_net(r.out_net, r.plen, p, sizeof(p));
			seterr(x, "outside \"%s\" overlaps 1:1 rule %u (out %.16s, outside %s)", po, i, r.ifname, p);
			return r.ifindex == l->ifindex && r.in_net == in_net && r.plen == plen ? -EEXIST : -EADDRINUSE;
		}
		range_of(r.in_net, r.plen, &lo, &hi);
		if (r.ifindex == l->ifindex && ranges_meet(ilo, ihi, lo, hi)) {
			fmt_net(r.in_net, r.plen, p, sizeof(p));
			seterr(x, "inside \"%s\" overlaps 1:1 rule %u of %s (inside %s)", pi, i, dev, p);
			return -EADDRINUSE;
		}
	}
	if (!id) {
		seterr(x, "all %d 1:1 NAT rule slots are in use", XDPR_BINAT_MAX - 1);
		return -ENOSPC;
	}

	nr.ifindex = l->ifindex;
	nr.id = id;
	nr.in_net = in_net;
	nr.out_net = out_net;
	nr.mask = mask;
	nr.plen = plen;
	snprintf(nr.ifname, sizeof(nr.ifname), "%s", dev);
	trie_key(&kin, l->ifindex, out_net, plen);
	trie_key(&kout, l->ifindex, in_net, plen);
	if ((err = zero_counters(x, id))) {
		seterr(x, "cannot zero the rule's counters: %s", strerror(-err));
		return err;
	}
	if (bpf_map_update_elem(x->fd[XM_BINAT], &id, &nr, BPF_ANY)) {
		err = -errno;
		seterr(x, "cannot write 1:1 rule %u: %s", id, strerror(-err));
		return err;
	}
	if (bpf_map_update_elem(x->fd[XM_BINAT_IN], &kin, &nr, BPF_NOEXIST)) {
		err = -errno;
		seterr(x, "cannot write the inbound entry of 1:1 rule %u: %s", id, strerror(-err));
		goto undo_slot;
	}
	if (bpf_map_update_elem(x->fd[XM_BINAT_OUT], &kout, &nr, BPF_NOEXIST)) {
		err = -errno;
		seterr(x, "cannot write the outbound entry of 1:1 rule %u: %s", id, strerror(-err));
		goto undo_in;
	}
	if ((err = set_cfg_flag(x, true)))
		goto undo_out;
	if ((err = set_if_flag(x, l->ifindex, true))) /* the commit */
		goto undo_cfg;
	return 0;

undo_cfg:
	if (!any_rule(x, id))
		set_cfg_flag(x, false);
undo_out:
	bpf_map_delete_elem(x->fd[XM_BINAT_OUT], &kout);
undo_in:
	bpf_map_delete_elem(x->fd[XM_BINAT_IN], &kin);
undo_slot:
	memset(&nr, 0, sizeof(nr));
	bpf_map_update_elem(x->fd[XM_BINAT], &id, &nr, BPF_ANY);
	return err;
}

/* One rule out: outbound entry, inbound entry, slot; flags when it was the last. */
static int del_one(struct xdpr *x, const struct xdpr_binat_rule *r)
{
	struct xdpr_binat_rule empty = {};
	struct xdpr_binat_key k;
	__u32 id = r->id;
	int err;

	if (!rules_of(x, r->ifindex, id) && (err = set_if_flag(x, r->ifindex, false)))
		return err;
	trie_key(&k, r->ifindex, r->in_net, r->plen);
	if (bpf_map_delete_elem(x->fd[XM_BINAT_OUT], &k) && errno != ENOENT)
		goto fail;
	trie_key(&k, r->ifindex, r->out_net, r->plen);
	if (bpf_map_delete_elem(x->fd[XM_BINAT_IN], &k) && errno != ENOENT)
		goto fail;
	if (bpf_map_update_elem(x->fd[XM_BINAT], &id, &empty, BPF_ANY))
		goto fail;
	return any_rule(x, 0) ? 0 : set_cfg_flag(x, false);
fail:
	err = -errno;
	seterr(x, "cannot delete 1:1 rule %u: %s", id, strerror(-err));
	return err;
}

int xdpr_binat_del(struct xdpr *x, const char *dev, __be32 in_net, int plen)
{
	int err, n = 0;
	char p[40];

	if ((err = maps_ok(x)))
		return err;
	for (__u32 id = 1; id < XDPR_BINAT_MAX; id++) {
		struct xdpr_binat_rule r;

		if (read_rule(x, id, &r) || !r.ifindex || strncmp(r.ifname, dev, sizeof(r.ifname)))
			continue;
		if (plen >= 0 && (r.in_net != in_net || r.plen != (__u32)plen))
			continue;
		if ((err = del_one(x, &r)))
			return err;
		n++;
	}
	if (n)
		return 0;
	if (plen >= 0) {
		fmt_net(in_net, plen, p, sizeof(p));
		seterr(x, "no 1:1 rule on \"%s\" for inside \"%s\"", dev, p);
	} else {
		seterr(x, "no 1:1 rule on \"%s\"", dev);
	}
	return -ENOENT;
}

int xdpr_binat_flush(struct xdpr *x)
{
	int err;

	if (x->fd[XM_BINAT] < 0)
		return 0; /* an older router: none */
	if ((err = maps_ok(x)))
		return err;
	for (__u32 id = 1; id < XDPR_BINAT_MAX; id++) {
		struct xdpr_binat_rule r;

		if (read_rule(x, id, &r) || !r.ifindex)
			continue;
		if ((err = del_one(x, &r)))
			return err;
	}
	return 0;
}

int xdpr_binat_list(struct xdpr *x, struct xdpr_binat_info *out, int max)
{
	int ncpu = xdpr_ncpus(), n = 0;
	__u64 *vals;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	if (x->fd[XM_BINAT] < 0)
		return 0; /* an older router: none */
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 id = 1; id < XDPR_BINAT_MAX && n < max; id++) {
		struct xdpr_binat_info *bi = &out[n];
		struct xdpr_iface c;

		memset(bi, 0, sizeof(*bi));
		if (read_rule(x, id, &bi->r) || !bi->r.ifindex)
			continue;
		bi->gone = bpf_map_lookup_elem(x->fd[XM_IFACES], &bi->r.ifindex, &c) || !(c.flags & XDPR_IF_BINAT);
		for (int e = 0; e < XDPR_BE_MAX && x->fd[XM_BINAT_ST] >= 0; e++) {
			__u32 key = id * XDPR_BE_MAX + e;

			if (bpf_map_lookup_elem(x->fd[XM_BINAT_ST], &key, vals))
				continue;
			for (int cpu = 0; cpu < ncpu; cpu++) {
				bi->ev[e] += vals[cpu];
				if (cpu < XDPR_MAX_CPUS)
					bi->cpu_ev[cpu][e] = vals[cpu];
			}
		}
		n++;
	}
	free(vals);
	return n;
}
