// SPDX-License-Identifier: GPL-2.0
/*
 * route.c - the route map: validation, live changes, bulk load and listing.
 *
 * Single changes go to the live table (one LPM trie update is atomic for
 * packets).  A load or flush builds new tries in the idle slot of
 * xdpr_rt4/xdpr_rt6 and then switches xdpr_cfg.rt_slot: packets see the
 * whole old table or the whole new one, both families at once.
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
#include "libxdpr.h"

#define KEY_SIZE(v6) ((v6) ? sizeof(struct xdpr_rt6_key) : sizeof(struct xdpr_rt4_key))

static void make_key(const struct xdpr_route_spec *rs, void *key)
{
	struct xdpr_rt6_key *k = key; /* same layout: prefixlen, then the address */

	k->prefixlen = rs->plen;
	memcpy(k->addr, rs->addr, rs->family == AF_INET6 ? 16 : 4);
}

/* fd of the trie in a slot of xdpr_rt4 (v6 == 0) or xdpr_rt6. */
static int trie_fd(struct xdpr *x, int v6, __u32 slot)
{
	__u32 id;
	int fd;

	if (bpf_map_lookup_elem(x->fd[v6 ? XM_RT6 : XM_RT4], &slot, &id)) {
		seterr(x, "cannot read the route table: %s", strerror(errno));
		return -errno;
	}
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0) {
		seterr(x, "cannot open the route table: %s", strerror(errno));
		return -errno;
	}
	return fd;
}

/*
 * Call cb(key, route, arg) for every entry of one trie; stops when cb
 * returns non-zero and passes that on.
 */
static int trie_walk(int fd, int (*cb)(const void *key, const struct xdpr_route *r, void *arg), void *arg)
{
	__u8 k[sizeof(struct xdpr_rt6_key)], next[sizeof(struct xdpr_rt6_key)];
	struct xdpr_route r;
	void *prev = NULL;
	int ret = 0;

	while (!ret && !bpf_map_get_next_key(fd, prev, next)) {
		memcpy(k, next, sizeof(k));
		prev = k;
		if (!bpf_map_lookup_elem(fd, k, &r))
			ret = cb(k, &r, arg);
	}
	return ret;
}

static int live_slot(struct xdpr *x, struct xdpr_cfg *c)
{
	int err = xdpr_cfg_get(x, c);

	return err ? err : (int)(c->rt_slot & 1);
}

/* The live trie of a route's family, its key, and the router settings. */
static int live_trie(struct xdpr *x, const struct xdpr_route_spec *rs, struct xdpr_cfg *c, void *key)
{
	int slot = live_slot(x, c);

	if (slot < 0)
		return slot;
	make_key(rs, key);
	return trie_fd(x, rs->family == AF_INET6, slot);
}

static void fmt_prefix(const struct xdpr_route_spec *rs, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(rs->family, rs->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, rs->plen);
}

/* Is gw on a network connected to dev (IPv6 link-local counts)? */
static bool gw_connected(int family, const __u8 *gw, const char *dev)
{
	struct ifaddrs *ifa, *i;
	bool ok = false;

	if (family == AF_INET6 && gw[0] == 0xfe && (gw[1] & 0xc0) == 0x80)
		return true;
	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !ok; i = i->ifa_next) {
		const __u8 *a, *m;
		int n = family == AF_INET ? 4 : 16, b;

		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != family ||
		    strcmp(i->ifa_name, dev))
			continue;
		a = family == AF_INET ? (const __u8 *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
				      : (const __u8 *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		m = family == AF_INET ? (const __u8 *)&((struct sockaddr_in *)i->ifa_netmask)->sin_addr
				      : (const __u8 *)&((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr;
		for (b = 0; b < n && (a[b] & m[b]) == (gw[b] & m[b]); b++)
			;
		ok = b == n && memcmp(a, gw, n); /* on the subnet, not our own address */
	}
	freeifaddrs(ifa);
	return ok;
}

/* Gateways checked recently: a table of 100k routes has a handful of them. */
static struct {
	int family;
	struct xdpr_nh nh;
} gw_ok[16];
static unsigned int gw_ok_next;

static bool gw_cached(int family, const struct xdpr_nh *nh)
{
	for (size_t i = 0; i < sizeof(gw_ok) / sizeof(gw_ok[0]); i++)
		if (gw_ok[i].family == family && !memcmp(&gw_ok[i].nh, nh, sizeof(*nh)))
			return true;
	return false;
}

int xdpr_route_check(struct xdpr *x, const struct xdpr_route_spec *rs)
{
	char p[64], g[INET6_ADDRSTRLEN], dev[IF_NAMESIZE];

	fmt_prefix(rs, p, sizeof(p));
	for (int i = 0; rs->r.action == XDPR_RT_VIA && i < rs->r.nnh; i++) {
		const struct xdpr_nh *nh = &rs->r.nh[i];

		if (gw_cached(rs->family, nh))
			continue;
		inet_ntop(rs->family, nh->gw, g, sizeof(g));
		if (!if_indextoname(nh->ifindex, dev)) {
			seterr(x, "route %s: device of gateway %s not found", p, g);
			return -ENODEV;
		}
		if (!gw_connected(rs->family, nh->gw, dev)) {
			seterr(x, "route %s: gateway %s is not on a network connected to \"%s\"", p, g, dev);
			return -ENETUNREACH;
		}
		gw_ok[gw_ok_next % (sizeof(gw_ok) / sizeof(gw_ok[0]))].family = rs->family;
		gw_ok[gw_ok_next++ % (sizeof(gw_ok) / sizeof(gw_ok[0]))].nh = *nh;
	}
	return 0;
}

static int mark_id(const void *key, const struct xdpr_route *r, void *bits)
{
	(void)key;
	if (r->id < XDPR_RT_IDS)
		((__u64 *)bits)[r->id / 64] |= 1ULL << (r->id % 64);
	return 0;
}

/* Route ids in use in the live table (bitmap of XDPR_RT_IDS bits). */
static int used_ids(struct xdpr *x, __u64 *bits)
{
	struct xdpr_cfg c;
	int slot = live_slot(x, &c);

	if (slot < 0)
		return slot;
	for (int v6 = 0; v6 < 2; v6++) {
		int fd = trie_fd(x, v6, slot);

		if (fd < 0)
			return fd;
		trie_walk(fd, mark_id, bits);
		close(fd);
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

static int set_routes_flag(struct xdpr *x, struct xdpr_cfg *c, bool on)
{
	if (on)
		c->flags |= XDPR_CFG_ROUTES;
	else
		c->flags &= ~XDPR_CFG_ROUTES;
	return xdpr_cfg_set(x, c);
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
	struct xdpr_local_key k, next;
	struct ifaddrs *ifa, *i;
	__u8 one = 1;

	while (!bpf_map_get_next_key(x->fd[XM_LOCAL], NULL, &next))
		if (bpf_map_delete_elem(x->fd[XM_LOCAL], &next))
			break;
	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		memset(&k, 0, sizeof(k));
		k.family = i->ifa_addr->sa_family;
		if (k.family == AF_INET)
			memcpy(k.addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		else
			memcpy(k.addr, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
		bpf_map_update_elem(x->fd[XM_LOCAL], &k, &one, BPF_ANY);
	}
	freeifaddrs(ifa);
	return 0;
}

struct find_ctx {
	const void *key;
	size_t len;
	__u32 id;
};

static int find_key(const void *key, const struct xdpr_route *r, void *arg)
{
	struct find_ctx *fc = arg;

	if (memcmp(key, fc->key, fc->len))
		return 0;
	fc->id = r->id;
	return 1;
}

int xdpr_route_add(struct xdpr *x, struct xdpr_route_spec *rs, bool replace)
{
	__u8 key[sizeof(struct xdpr_rt6_key)];
	struct xdpr_cfg c;
	int fd, err;
	char p[64];

	err = xdpr_route_check(x, rs);
	if (!err)
		err = link_local_macs(x, rs);
	if (err)
		return err;
	xdpr_local_sync(x);
	fd = live_trie(x, rs, &c, key);
	if (fd < 0)
		return fd;
	fmt_prefix(rs, p, sizeof(p));
	/* an LPM lookup returns the longest match: compare by walking keys instead */
	{
		struct find_ctx fc = { .key = key, .len = KEY_SIZE(rs->family == AF_INET6) };
		bool found = trie_walk(fd, find_key, &fc) > 0;

		if (found && !replace) {
			close(fd);
			seterr(x, "route %s exists (use \"route replace\")", p);
			return -EEXIST;
		}
		if (!found && replace) {
			close(fd);
			seterr(x, "no route %s to replace", p);
			return -ENOENT;
		}
		if (found)
			rs->r.id = fc.id; /* replace keeps the counters */
	}
	if (!replace) {
		__u64 *bits = calloc(XDPR_RT_IDS / 64, sizeof(*bits));

		if (!bits) {
			close(fd);
			return -ENOMEM;
		}
		err = used_ids(x, bits);
		rs->r.id = 0;
		for (__u32 id = 1; !err && id < XDPR_RT_IDS && !rs->r.id; id++)
			if (!(bits[id / 64] & (1ULL << (id % 64))))
				rs->r.id = id;
		free(bits);
		if (!err && !rs->r.id)
			err = -ENOSPC;
		if (!err)
			err = zero_counter(x, rs->r.id);
		if (err) {
			close(fd);
			seterr(x, "cannot allocate a route id: %s", strerror(-err));
			return err;
		}
	}
	resolve_gateways(rs);
	if (bpf_map_update_elem(fd, key, &rs->r, replace ? BPF_EXIST : BPF_NOEXIST)) {
		err = -errno;
		close(fd);
		if (err == -E2BIG || err == -ENOSPC)
			seterr(x, "route table full (%d routes per family)", XDPR_RT_MAX);
		else
			seterr(x, "cannot add route %s: %s", p, strerror(-err));
		return err;
	}
	close(fd);
	return set_routes_flag(x, &c, true);
}

int xdpr_route_del(struct xdpr *x, const struct xdpr_route_spec *rs)
{
	__u8 key[sizeof(struct xdpr_rt6_key)];
	struct xdpr_cfg c;
	int slot, fd, err = 0;
	bool any = false;
	char p[64];

	fd = live_trie(x, rs, &c, key);
	if (fd < 0)
		return fd;
	slot = c.rt_slot & 1;
	if (bpf_map_delete_elem(fd, key)) {
		err = -errno;
		fmt_prefix(rs, p, sizeof(p));
		seterr(x, err == -ENOENT ? "no route %s" : "cannot delete route %s: %s", p, strerror(-err));
	}
	close(fd);
	if (err)
		return err;
	xdpr_local_sync(x);
	for (int v6 = 0; v6 < 2 && !any; v6++) {
		__u8 next[sizeof(key)];

		fd = trie_fd(x, v6, slot);
		if (fd < 0)
			return fd;
		any = !bpf_map_get_next_key(fd, NULL, next);
		close(fd);
	}
	return set_routes_flag(x, &c, any);
}

int xdpr_route_load(struct xdpr *x, struct xdpr_route_spec *rs, int n)
{
	int fds[2] = { -1, -1 }, err = 0, slot, idle;
	struct xdpr_cfg c;
	char p[64];

	slot = live_slot(x, &c);
	if (slot < 0)
		return slot;
	idle = !slot;
	for (int v6 = 0; v6 < 2; v6++) {
		fds[v6] = xdpr_rt_new_trie(x, v6);
		if (fds[v6] < 0) {
			err = fds[v6];
			goto out;
		}
	}
	for (int i = 0; i < n; i++) {
		err = link_local_macs(x, &rs[i]);
		if (err)
			goto out;
	}
	for (int i = 0; i < n; i++) {
		__u8 key[sizeof(struct xdpr_rt6_key)];

		rs[i].r.id = i + 1;
		make_key(&rs[i], key);
		if (bpf_map_update_elem(fds[rs[i].family == AF_INET6], key, &rs[i].r, BPF_NOEXIST))
			err = -errno;
		if (err) {
			fmt_prefix(&rs[i], p, sizeof(p));
			seterr(x, err == -EEXIST ? "route %s is listed twice" : "cannot load route %s: %s",
			       p, strerror(-err));
			goto out;
		}
	}
	/* the new table is complete: only now may counters restart */
	for (int i = 0; i < n; i++) {
		err = zero_counter(x, rs[i].r.id);
		if (err) {
			seterr(x, "cannot reset route counters: %s", strerror(-err));
			goto out;
		}
	}
	xdpr_local_sync(x);
	/* the idle slot gets the new tables, then one update makes them live */
	for (int v6 = 0; v6 < 2; v6++)
		if (bpf_map_update_elem(x->fd[v6 ? XM_RT6 : XM_RT4], &idle, &fds[v6], BPF_ANY)) {
			err = -errno;
			seterr(x, "cannot install the new route table: %s", strerror(-err));
			goto out;
		}
	for (int i = 0; i < n; i++)
		if (i == 0 || memcmp(&rs[i].r.nh, &rs[i - 1].r.nh, sizeof(rs[i].r.nh)))
			resolve_gateways(&rs[i]);
	c.rt_slot = idle;
	err = set_routes_flag(x, &c, n > 0);
	if (err)
		goto out;
	/* drop the old tables' memory: the old slot gets fresh empty tries */
	for (int v6 = 0; v6 < 2; v6++) {
		int e = xdpr_rt_new_trie(x, v6);

		if (e >= 0) {
			bpf_map_update_elem(x->fd[v6 ? XM_RT6 : XM_RT4], &slot, &e, BPF_ANY);
			close(e);
		}
	}
out:
	for (int v6 = 0; v6 < 2; v6++)
		if (fds[v6] >= 0)
			close(fds[v6]);
	return err;
}

struct foreach_ctx {
	struct xdpr *x;
	int v6, ncpu;
	int (*cb)(const struct xdpr_route_info *, void *);
	void *arg;
};

static int foreach_one(const void *key, const struct xdpr_route *r, void *arg)
{
	static struct xdpr_ctr pc[XDPR_MAX_CPUS * 4];
	static struct xdpr_route_info ri;
	struct foreach_ctx *fc = arg;
	const struct xdpr_rt6_key *k = key;

	memset(&ri, 0, sizeof(ri));
	ri.spec.r = *r;
	ri.spec.family = fc->v6 ? AF_INET6 : AF_INET;
	ri.spec.plen = k->prefixlen;
	memcpy(ri.spec.addr, k->addr, fc->v6 ? 16 : 4);
	if (!bpf_map_lookup_elem(fc->x->fd[XM_RTSTATS], &r->id, pc))
		for (int cpu = 0; cpu < fc->ncpu; cpu++) {
			ri.sum.packets += pc[cpu].packets;
			ri.sum.bytes += pc[cpu].bytes;
			if (cpu < XDPR_MAX_CPUS)
				ri.cpu[cpu] = pc[cpu];
		}
	return fc->cb(&ri, fc->arg);
}

int xdpr_route_foreach(struct xdpr *x, int (*cb)(const struct xdpr_route_info *, void *), void *arg)
{
	struct foreach_ctx fc = { .x = x, .ncpu = xdpr_ncpus(), .cb = cb, .arg = arg };
	struct xdpr_cfg c;
	int slot, err = 0;

	slot = live_slot(x, &c);
	if (slot < 0)
		return slot;
	if (fc.ncpu <= 0 || fc.ncpu > XDPR_MAX_CPUS * 4)
		return -ERANGE;
	for (fc.v6 = 0; fc.v6 < 2 && !err; fc.v6++) {
		int fd = trie_fd(x, fc.v6, slot);

		if (fd < 0)
			return fd;
		err = trie_walk(fd, foreach_one, &fc);
		close(fd);
	}
	return err > 0 ? 0 : err;
}
