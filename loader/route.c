// SPDX-License-Identifier: GPL-2.0
/*
 * route.c - the route map: validation, live changes, bulk load and listing.
 *
 * Every change builds a whole table (both families: lookup index and
 * records, see rtindex.c) in the idle slot of xdpr_rtdir/xdpr_rtrec and
 * then switches xdpr_cfg.rt_slot: packets see the old table or the new one,
 * never a mix, and nothing a packet may be reading is ever written.  The
 * records of the live slot are the table's only copy: add, del and replace
 * read them, change one, and build the next table from the result.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include "core.h"

static int live_slot(struct xdpr *x, struct xdpr_cfg *c)
{
	int err = xdpr_cfg_get(x, c);

	return err ? err : (int)(c->rt_slot & 1);
}

/* Order of records: family, address, length (the order of route show). */
static int rec_cmp(const void *a, const void *b)
{
	const struct xdpr_rtrec *x = a, *y = b;
	int d = memcmp(x->addr, y->addr, 16);

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	if (d)
		return d;
	return (int)x->plen - (int)y->plen;
}

static void spec_to_rec(const struct xdpr_route_spec *rs, struct xdpr_rtrec *r)
{
	memset(r, 0, sizeof(*r));
	r->r = rs->r;
	r->family = rs->family;
	r->plen = rs->plen;
	memcpy(r->addr, rs->addr, rs->family == AF_INET6 ? 16 : 4);
}

static void rec_to_spec(const struct xdpr_rtrec *r, struct xdpr_route_spec *rs)
{
	memset(rs, 0, sizeof(*rs));
	rs->r = r->r;
	rs->family = r->family;
	rs->plen = r->plen;
	memcpy(rs->addr, r->addr, 16);
}

/* A malloc'd copy of the inner map in a slot of outer map xm; *n entries of size. */
static void *read_inner(struct xdpr *x, int xm, __u32 slot, size_t size, size_t *n)
{
	struct bpf_map_info info;
	void *v;

	if (xdpr_inner_copy(x, x->fd[xm], slot, "the route table", &v, &info))
		return NULL;
	if (info.value_size != size || !info.max_entries) {
		seterr(x, "route table map %s has %u entries of %u bytes, expected %zu-byte entries",
		       map_names[xm], info.max_entries, info.value_size, size);
		free(v);
		return NULL;
	}
	*n = info.max_entries;
	return v;
}

/* The routes of the live table (malloc'd, sorted; *n of them). */
static int live_records(struct xdpr *x, struct xdpr_cfg *c, struct xdpr_rtrec **out, size_t *n)
{
	int slot = live_slot(x, c), err = 0;
	struct xdpr_rtent *ent = NULL;
	struct xdpr_rtnh *nh = NULL;
	struct xdpr_rtrec *v = NULL;
	size_t nent = 0, nnh = 0, k = 0;

	if (slot < 0)
		return slot;
	ent = read_inner(x, XM_RTREC, slot, sizeof(*ent), &nent);
	if (ent)
		nh = read_inner(x, XM_RTNH, slot, sizeof(*nh), &nnh);
	if (nh)
		v = calloc(nent, sizeof(*v));
	if (!v) {
		err = -EIO;
		if (ent && nh)
			seterr(x, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nent; i++) {
		const struct xdpr_rtent *e = &ent[i];

		if (!e->family)
			continue;
		if (e->nnh > XDPR_RT_MAX_NH || (e->nnh && e->nh + e->nnh > nnh)) {
			seterr(x, "the route table is inconsistent (record %zu)", i);
			err = -EPROTO;
			goto out;
		}
		v[k].r.id = e->id;
		v[k].r.action = e->action;
		v[k].r.nnh = e->nnh;
		for (int j = 0; j < e->nnh; j++)
			v[k].r.nh[j] = nh[e->nh + j].nh;
		v[k].family = e->family;
		v[k].plen = e->plen;
		memcpy(v[k].addr, e->addr, 16);
		k++;
	}
	/* tables are stored sorted: sort only what is not (a 100k sort costs 0.1 s) */
	for (size_t i = 1; i < k; i++)
		if (rec_cmp(&v[i - 1], &v[i]) > 0) {
			qsort(v, k, sizeof(*v), rec_cmp);
			break;
		}
	*out = v;
	*n = k;
	v = NULL;
out:
	free(ent);
	free(nh);
	free(v);
	return err;
}

/* The address bytes of an AF_INET or AF_INET6 socket address. */
static const __u8 *sa_bytes(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? (const __u8 *)&((const struct sockaddr_in *)sa)->sin_addr
					: (const __u8 *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
}

/* This namespace's addresses (family and addr of each entry; malloc'd). */
static int local_addrs(struct xdpr *x, struct xdpr_rtent **out, size_t *n)
{
	struct ifaddrs *ifa, *i;
	struct xdpr_rtent *v;
	size_t k = 0, cap = 0;

	if (getifaddrs(&ifa)) {
		seterr(x, "cannot list the router's addresses: %s", strerror(errno));
		return -errno;
	}
	for (i = ifa; i; i = i->ifa_next)
		cap++;
	v = calloc(cap ? cap : 1, sizeof(*v));
	if (!v) {
		freeifaddrs(ifa);
		seterr(x, "out of memory");
		return -ENOMEM;
	}
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		v[k].family = i->ifa_addr->sa_family;
		memcpy(v[k].addr, sa_bytes(i->ifa_addr), v[k].family == AF_INET ? 4 : 16);
		k++;
	}
	freeifaddrs(ifa);
	*out = v;
	*n = k;
	return 0;
}


/*
 * Make recs (sorted, unique) the live table, with the router's current
 * addresses exempt: build it in the idle slot,
 * switch in one xdpr_cfg update, then, once no packet can still be in the
 * old table, give the old slot empty maps so the kernel frees it.  Where
 * that cannot be known, the old table stays in the idle slot until the
 * next change replaces it.
 */
static int commit(struct xdpr *x, struct xdpr_cfg *c, const struct xdpr_rtrec *recs, size_t n)
{
	__u32 slot = c->rt_slot & 1, idle = !slot;
	int fd[XDPR_RT_MAPS], err, xm[XDPR_RT_MAPS] = { XM_RTDIR, XM_RTREC, XM_RTNH };
	struct xdpr_rtent *local = NULL;
	size_t nlocal = 0;

	err = local_addrs(x, &local, &nlocal);
	if (err)
		return err;
	err = xdpr_rt_make_slot(x, recs, n, local, nlocal, fd);
	free(local);
	if (err)
		return err;
	for (int i = 0; i < XDPR_RT_MAPS && !err; i++)
		if (bpf_map_update_elem(x->fd[xm[i]], &idle, &fd[i], BPF_ANY)) {
			err = -errno;
			seterr(x, "cannot install the new route table: %s", strerror(-err));
		}
	for (int i = 0; i < XDPR_RT_MAPS; i++)
		close(fd[i]);
	if (err)
		return err;
	c->rt_slot = idle;
	if (n)
		c->flags |= XDPR_CFG_ROUTES;
	else
		c->flags &= ~XDPR_CFG_ROUTES;
	err = xdpr_cfg_set(x, c);
	if (err || !xdpr_packets_settled())
		return err;
	for (int i = 0; i < XDPR_RT_MAPS; i++) {
		int e = xdpr_rt_new_map(x, i, 0);

		if (e >= 0) {
			bpf_map_update_elem(x->fd[xm[i]], &slot, &e, BPF_ANY);
			close(e);
		}
	}
	return 0;
}

/* Routes of a family in recs. */
static size_t family_count(const struct xdpr_rtrec *recs, size_t n, int family)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += recs[i].family == family;
	return k;
}

static void fmt_prefix(const struct xdpr_route_spec *rs, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(rs->family, rs->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, rs->plen);
}

/* Is gw on a network connected to dev (IPv6 link-local counts)? */
enum gw_verdict { GW_OK, GW_UNCONNECTED, GW_OWN, GW_NETWORK, GW_BROADCAST };

/*
 * What the kernel would say of a gateway on dev: on one of its subnets and
 * not one of the router's own addresses (on any interface), nor an IPv4
 * subnet's network or broadcast address.
 */
static enum gw_verdict gw_check(int family, const __u8 *gw, const char *dev)
{
	enum gw_verdict v = GW_UNCONNECTED;
	struct ifaddrs *ifa, *i;
	int n = family == AF_INET ? 4 : 16;

	if (getifaddrs(&ifa))
		return GW_UNCONNECTED;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == family && !memcmp(sa_bytes(i->ifa_addr), gw, n)) {
			freeifaddrs(ifa);
			return GW_OWN;
		}
	if (family == AF_INET6 && gw[0] == 0xfe && (gw[1] & 0xc0) == 0x80) {
		freeifaddrs(ifa);
		return GW_OK;
	}
	for (i = ifa; i && v != GW_OK; i = i->ifa_next) {
		const __u8 *a, *m;
		int b, plen = 0;
		bool net = true, bcast = true;

		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != family ||
		    strcmp(i->ifa_name, dev))
			continue;
		a = sa_bytes(i->ifa_addr);
		m = sa_bytes(i->ifa_netmask);
		for (b = 0; b < n && (a[b] & m[b]) == (gw[b] & m[b]); b++)
			;
		if (b != n)
			continue;
		for (b = 0; b < n; b++) {
			plen += __builtin_popcount(m[b]);
			net &= !(gw[b] & ~m[b]);
			bcast &= (__u8)(gw[b] | m[b]) == 0xff;
		}
		if (family == AF_INET && plen <= 30 && (net || bcast))
			v = net ? GW_NETWORK : GW_BROADCAST;
		else
			v = GW_OK;
	}
	freeifaddrs(ifa);
	return v;
}

/* Whether addr is one of this namespace's own addresses. */
static bool own_address(int family, const __u8 *addr)
{
	struct ifaddrs *ifa, *i;
	bool own = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !own; i = i->ifa_next)
		own = i->ifa_addr && i->ifa_addr->sa_family == family &&
		      !memcmp(sa_bytes(i->ifa_addr), addr, family == AF_INET ? 4 : 16);
	freeifaddrs(ifa);
	return own;
}

/*
 * Gateways checked in the last second: a table of 100k routes has a
 * handful of them (a long-lived caller, xdprd, sees addresses change).
 */
static struct {
	int family;
	struct xdpr_nh nh;
	__u64 at;
} gw_ok[16];
static unsigned int gw_ok_next;

static bool gw_cached(int family, const struct xdpr_nh *nh)
{
	__u64 now = xdpr_mono_ns();

	for (size_t i = 0; i < sizeof(gw_ok) / sizeof(gw_ok[0]); i++)
		if (gw_ok[i].family == family && now - gw_ok[i].at < 1000000000ULL &&
		    !memcmp(&gw_ok[i].nh, nh, sizeof(*nh)))
			return true;
	return false;
}

int xdpr_route_check(struct xdpr *x, const struct xdpr_route_spec *rs)
{
	char p[64], g[INET6_ADDRSTRLEN], dev[IF_NAMESIZE];

	fmt_prefix(rs, p, sizeof(p));
	if (rs->plen == (rs->family == AF_INET ? 32u : 128u) && own_address(rs->family, rs->addr)) {
		seterr(x, "route %s: that is one of this router's own addresses: packets to it always "
			  "go to the kernel, the route would never match", p);
		return -EINVAL;
	}
	for (int i = 0; rs->r.action == XDPR_RT_VIA && i < rs->r.nnh; i++) {
		const struct xdpr_nh *nh = &rs->r.nh[i];
		enum gw_verdict v;

		if (gw_cached(rs->family, nh))
			continue;
		inet_ntop(rs->family, nh->gw, g, sizeof(g));
		if (!if_indextoname(nh->ifindex, dev)) {
			seterr(x, "route %s: device of gateway %s not found", p, g);
			return -ENODEV;
		}
		v = gw_check(rs->family, nh->gw, dev);
		if (v == GW_OWN) {
			seterr(x, "route %s: gateway %s is one of this router's own addresses", p, g);
			return -EINVAL;
		}
		if (v == GW_NETWORK || v == GW_BROADCAST) {
			seterr(x, "route %s: gateway %s is the %s address of a network on \"%s\"", p, g,
			       v == GW_NETWORK ? "network" : "broadcast", dev);
			return -EINVAL;
		}
		if (v != GW_OK) {
			seterr(x, "route %s: gateway %s is not on a network connected to \"%s\"", p, g, dev);
			return -ENETUNREACH;
		}
		gw_ok[gw_ok_next % (sizeof(gw_ok) / sizeof(gw_ok[0]))].family = rs->family;
		gw_ok[gw_ok_next % (sizeof(gw_ok) / sizeof(gw_ok[0]))].at = xdpr_mono_ns();
		gw_ok[gw_ok_next++ % (sizeof(gw_ok) / sizeof(gw_ok[0]))].nh = *nh;
	}
	return 0;
}

static int zero_counter(struct xdpr *x, __u32 id)
{
	static struct xdpr_ctr zero[XDPR_MAX_CPUS * 4];
	int ncpu = xdpr_ncpus();

	if (ncpu <= 0 || ncpu > (int)(sizeof(zero) / sizeof(zero[0])))
		return -ERANGE;
	return bpf_map_update_elem(x->fd[XM_RTSTATS], &id, zero, BPF_ANY) ? -errno : 0;
}

static void resolve_gateways(const struct xdpr_route_spec *rs)
{
	for (int i = 0; rs->r.action == XDPR_RT_VIA && i < rs->r.nnh; i++)
		xdpr_neigh_use(rs->family, rs->r.nh[i].gw, rs->r.nh[i].ifindex);
}

static bool is_ll(int family, const __u8 *a)
{
	return family == AF_INET6 && a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

/*
 * bpf_fib_lookup never resolves IPv6 link-local addresses, so those
 * gateways carry their MAC, read from the kernel's neighbour table now
 * (asking for resolution and waiting up to a second).
 */
static int link_local_macs(struct xdpr *x, struct xdpr_route_spec *rs)
{
	for (int i = 0; rs->r.action == XDPR_RT_VIA && i < rs->r.nnh; i++) {
		struct xdpr_nh *nh = &rs->r.nh[i];
		char g[INET6_ADDRSTRLEN], dev[IF_NAMESIZE] = "?";
		int ok = 0;

		if (!is_ll(rs->family, nh->gw))
			continue;
		for (int t = 0; t < 20 && ok == 0; t++) {
			ok = xdpr_neigh_mac(AF_INET6, nh->gw, nh->ifindex, nh->mac);
			if (ok == 0) {
				xdpr_neigh_use(AF_INET6, nh->gw, nh->ifindex);
				usleep(50000);
			}
		}
		if (ok <= 0) {
			inet_ntop(AF_INET6, nh->gw, g, sizeof(g));
			if_indextoname(nh->ifindex, dev);
			seterr(x, "link-local gateway %s on \"%s\" did not answer neighbour discovery "
				  "(its MAC is needed when the route is added)", g, dev);
			return -EHOSTUNREACH;
		}
		nh->flags |= XDPR_NH_MAC;
	}
	return 0;
}

int xdpr_local_sync(struct xdpr *x)
{
	struct xdpr_rtrec *recs = NULL;
	struct xdpr_cfg c;
	size_t n = 0;
	int err = xdpr_cfg_get(x, &c);

	if (err || !(c.flags & XDPR_CFG_ROUTES))
		return err;
	err = live_records(x, &c, &recs, &n);
	if (!err)
		err = commit(x, &c, recs, n);
	free(recs);
	return err;
}

/* A route id no record uses (ids index xdpr_rt_stats; 0 is never used). */
static __u32 free_id(const struct xdpr_rtrec *recs, size_t n)
{
	__u64 *bits = calloc(XDPR_RT_IDS / 64, sizeof(*bits));
	__u32 id = 0;

	if (!bits)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (recs[i].r.id < XDPR_RT_IDS)
			bits[recs[i].r.id / 64] |= 1ULL << (recs[i].r.id % 64);
	for (__u32 i = 1; i < XDPR_RT_IDS && !id; i++)
		if (!(bits[i / 64] & (1ULL << (i % 64))))
			id = i;
	free(bits);
	return id;
}

int xdpr_route_add(struct xdpr *x, struct xdpr_route_spec *rs, bool replace)
{
	struct xdpr_rtrec key, *recs = NULL, *at, *nr;
	struct xdpr_cfg c;
	size_t n, pos;
	char p[64];
	int err;

	err = xdpr_route_check(x, rs);
	if (!err)
		err = link_local_macs(x, rs);
	if (!err)
		err = live_records(x, &c, &recs, &n);
	if (err)
		return err;
	fmt_prefix(rs, p, sizeof(p));
	spec_to_rec(rs, &key);
	at = bsearch(&key, recs, n, sizeof(*recs), rec_cmp);
	if (at && !replace) {
		seterr(x, "route %s exists (use \"route replace\")", p);
		err = -EEXIST;
		goto out;
	}
	if (!at && replace) {
		seterr(x, "no route %s to replace", p);
		err = -ENOENT;
		goto out;
	}
	if (at) {
		rs->r.id = at->r.id; /* replace keeps the counters */
		spec_to_rec(rs, at);
	} else {
		if (family_count(recs, n, rs->family) >= XDPR_RT_MAX) {
			seterr(x, "route table full (%d routes per family)", XDPR_RT_MAX);
			err = -ENOSPC;
			goto out;
		}
		rs->r.id = free_id(recs, n);
		err = rs->r.id ? zero_counter(x, rs->r.id) : -ENOSPC;
		if (err) {
			seterr(x, "cannot allocate a route id: %s", strerror(-err));
			goto out;
		}
		nr = realloc(recs, (n + 1) * sizeof(*recs));
		if (!nr) {
			err = -ENOMEM;
			seterr(x, "out of memory");
			goto out;
		}
		recs = nr;
		for (pos = 0; pos < n && rec_cmp(&recs[pos], &key) < 0; pos++)
			;
		memmove(&recs[pos + 1], &recs[pos], (n - pos) * sizeof(*recs));
		spec_to_rec(rs, &recs[pos]);
		n++;
	}
	resolve_gateways(rs);
	err = commit(x, &c, recs, n);
out:
	free(recs);
	return err;
}

int xdpr_route_del(struct xdpr *x, const struct xdpr_route_spec *rs)
{
	struct xdpr_rtrec key, *recs = NULL, *at;
	struct xdpr_cfg c;
	size_t n;
	char p[64];
	int err;

	err = live_records(x, &c, &recs, &n);
	if (err)
		return err;
	spec_to_rec(rs, &key);
	at = bsearch(&key, recs, n, sizeof(*recs), rec_cmp);
	if (!at) {
		fmt_prefix(rs, p, sizeof(p));
		seterr(x, "no route %s", p);
		free(recs);
		return -ENOENT;
	}
	memmove(at, at + 1, (n - (at - recs) - 1) * sizeof(*recs));
	err = commit(x, &c, recs, n - 1);
	free(recs);
	return err;
}

int xdpr_route_load(struct xdpr *x, struct xdpr_route_spec *rs, int n)
{
	struct xdpr_rtrec *recs = calloc(n ? n : 1, sizeof(*recs));
	struct xdpr_cfg c;
	char p[64];
	int err;

	if (!recs) {
		seterr(x, "out of memory");
		return -ENOMEM;
	}
	err = live_slot(x, &c);
	if (err < 0)
		goto out;
	err = 0;
	for (int i = 0; i < n && !err; i++)
		err = link_local_macs(x, &rs[i]);
	if (err)
		goto out;
	for (int i = 0; i < n; i++) {
		rs[i].r.id = i + 1;
		spec_to_rec(&rs[i], &recs[i]);
	}
	qsort(recs, n, sizeof(*recs), rec_cmp);
	for (int i = 1; i < n; i++)
		if (!rec_cmp(&recs[i - 1], &recs[i])) {
			struct xdpr_route_spec d;

			rec_to_spec(&recs[i], &d);
			fmt_prefix(&d, p, sizeof(p));
			seterr(x, "route %s is listed twice", p);
			err = -EEXIST;
			goto out;
		}
	for (int f = 0; f < 2; f++)
		if (family_count(recs, n, f ? AF_INET6 : AF_INET) > XDPR_RT_MAX) {
			seterr(x, "route table full (%d routes per family)", XDPR_RT_MAX);
			err = -ENOSPC;
			goto out;
		}
	/* the new table is complete: only now may counters restart */
	for (int i = 0; i < n; i++) {
		err = zero_counter(x, rs[i].r.id);
		if (err) {
			seterr(x, "cannot reset route counters: %s", strerror(-err));
			goto out;
		}
	}
	for (int i = 0; i < n; i++)
		if (i == 0 || memcmp(&rs[i].r.nh, &rs[i - 1].r.nh, sizeof(rs[i].r.nh)))
			resolve_gateways(&rs[i]);
	err = commit(x, &c, recs, n);
out:
	free(recs);
	return err;
}

int xdpr_route_foreach(struct xdpr *x, const struct xdpr_route_spec *only,
		       int (*cb)(const struct xdpr_route_info *, void *), void *arg)
{
	static struct xdpr_ctr pc[XDPR_MAX_CPUS * 4];
	static struct xdpr_route_info ri;
	int ncpu = xdpr_ncpus(), err;
	struct xdpr_rtrec *recs = NULL, key;
	size_t n = 0, first = 0;
	struct xdpr_cfg c;

	if (ncpu <= 0 || ncpu > XDPR_MAX_CPUS * 4)
		return -ERANGE;
	err = live_records(x, &c, &recs, &n);
	if (!err && only) {
		/* one route: found in the sorted records, one counter read */
		struct xdpr_rtrec *at;

		spec_to_rec(only, &key);
		at = bsearch(&key, recs, n, sizeof(*recs), rec_cmp);
		first = at ? (size_t)(at - recs) : n;
		n = at ? first + 1 : n;
	}
	for (size_t i = first; !err && i < n; i++) {
		memset(&ri, 0, sizeof(ri));
		rec_to_spec(&recs[i], &ri.spec);
		if (!bpf_map_lookup_elem(x->fd[XM_RTSTATS], &recs[i].r.id, pc))
			for (int cpu = 0; cpu < ncpu; cpu++) {
				ri.sum.packets += pc[cpu].packets;
				ri.sum.bytes += pc[cpu].bytes;
				if (cpu < XDPR_MAX_CPUS)
					ri.cpu[cpu] = pc[cpu];
			}
		err = cb(&ri, arg);
	}
	free(recs);
	return err > 0 ? 0 : err;
}
