// SPDX-License-Identifier: GPL-2.0
/*
 * ddos.c - DDoS meters and bans (bpf/ddos.h): protected prefixes, the
 * per-host meters with their per-CPU shares summed, and the ban table,
 * written the same on every CPU (the datapath adds only to its own CPU's
 * drop counters, which a replaced ban keeps).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "core.h"

__u64 xdpr_ddos_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

const char *xdpr_ddos_reason_name(__u32 reason)
{
	switch (reason) {
	case XDPR_DDOS_R_MANUAL: return "manual";
	case XDPR_DDOS_R_PPS: return "pps";
	case XDPR_DDOS_R_BPS: return "bps";
	}
	return "?";
}

static int alen(int family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

static int cfg_flag(struct xdpr *x, __u32 flag, bool on)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (err)
		return err;
	if (!!(c.flags & flag) == on)
		return 0;
	if (on)
		c.flags |= flag;
	else
		c.flags &= ~flag;
	return xdpr_cfg_set(x, &c);
}

int xdpr_ddos_set(struct xdpr *x, bool on)
{
	return cfg_flag(x, XDPR_CFG_DDOS, on);
}

int xdpr_ddos_set_sample(struct xdpr *x, __u32 n)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (err)
		return err;
	c.ddos_sample = n ? n : 1;
	return xdpr_cfg_set(x, &c);
}

int xdpr_ddos_get_sample(struct xdpr *x, __u32 *n)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (!err)
		*n = c.ddos_sample ? c.ddos_sample : 1;
	return err;
}

/* Set the bit of k in xdpr_ddos_bits (a ban is about to be made). */
static int bit_set(struct xdpr *x, const struct xdpr_ddos_key *k)
{
	__u32 b = xdpr_ddos_bit(k), w = b / 64;
	int fd = x->fd[XM_DDOS_BITS];
	__u64 v;

	if (bpf_map_lookup_elem(fd, &w, &v))
		goto fail;
	if (v >> (b % 64) & 1)
		return 0;
	v |= 1ULL << (b % 64);
	if (!bpf_map_update_elem(fd, &w, &v, BPF_ANY))
		return 0;
fail:
	seterr(x, "cannot write the ban bitmap: %s", strerror(errno));
	return -errno;
}

static int bits_of(const struct xdpr_ddos_ban_info *b, void *arg)
{
	struct xdpr_ddos_key k = { .family = b->family, .dir = b->dir };
	__u64 *bits = arg;
	__u32 i;

	memcpy(k.addr, b->addr, sizeof(k.addr));
	i = xdpr_ddos_bit(&k);
	bits[i / 64] |= 1ULL << (i % 64);
	return 0;
}

/*
 * After bans were removed: every word of the bitmap rewritten from the bans
 * that remain (a word is written whole, the bits of those bans in it stay
 * set throughout).
 */
static int bits_rebuild(struct xdpr *x)
{
	__u64 *want = calloc(XDPR_DDOS_BITS_WORDS, sizeof(*want)), *have = calloc(XDPR_DDOS_BITS_WORDS, sizeof(*have));
	__u32 *keys = calloc(XDPR_DDOS_BITS_WORDS, sizeof(*keys)), n = XDPR_DDOS_BITS_WORDS, out;
	int fd = x->fd[XM_DDOS_BITS], err;

	if (!want || !have || !keys) {
		seterr(x, "cannot rebuild the ban bitmap: %s", strerror(ENOMEM));
		err = -ENOMEM;
		goto out;
	}
	err = xdpr_ddos_ban_foreach(x, bits_of, want);
	/* the words as they are, in one call where the kernel can (word by word where not) */
	if (!err) {
		int r = bpf_map_lookup_batch(fd, NULL, &out, keys, have, &n, NULL);

		if ((r && errno != ENOENT) || n != XDPR_DDOS_BITS_WORDS)
			for (__u32 w = 0; w < XDPR_DDOS_BITS_WORDS && !err; w++)
				if (bpf_map_lookup_elem(fd, &w, &have[w]))
					err = -errno;
	}
	for (__u32 w = 0; !err && w < XDPR_DDOS_BITS_WORDS; w++)
		if (have[w] != want[w] && bpf_map_update_elem(fd, &w, &want[w], BPF_ANY))
			err = -errno;
	if (err && err != -ENOMEM)
		seterr(x, "cannot rebuild the ban bitmap: %s", strerror(-err));
out:
	free(want);
	free(have);
	free(keys);
	return err;
}

static long count_keys(int fd, void *k, size_t ksize)
{
	char prev[64];
	long n = 0;

	if (ksize > sizeof(prev))
		return -EINVAL;
	for (void *p = NULL; !bpf_map_get_next_key(fd, p, k); p = prev, n++)
		memcpy(prev, k, ksize);
	return n;
}

int xdpr_ddos_stats(struct xdpr *x, struct xdpr_ddos_stats *s)
{
	int ncpu = xdpr_ncpus(), err = 0;
	struct xdpr_ddos_stat *pc;
	__u32 zero = 0;

	memset(s, 0, sizeof(*s));
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	pc = calloc(ncpu, sizeof(*pc));
	if (!pc || bpf_map_lookup_elem(x->fd[XM_DDOS_STATS], &zero, pc)) {
		err = pc ? -errno : -ENOMEM;
		seterr(x, "cannot read the DDoS counters: %s", strerror(-err));
		free(pc);
		return err;
	}
	for (int i = 0; i < ncpu; i++) {
		s->metered += pc[i].metered;
		s->untracked += pc[i].untracked;
		s->banned += pc[i].banned;
	}
	free(pc);
	return 0;
}

int xdpr_ddos_get(struct xdpr *x, bool *on, __u64 *untracked, __u64 *hosts, __u64 *max)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (err)
		return err;
	if (on)
		*on = c.flags & XDPR_CFG_DDOS;
	if (untracked) {
		struct xdpr_ddos_stats s;

		err = xdpr_ddos_stats(x, &s);
		if (err)
			return err;
		*untracked = s.untracked;
	}
	if (hosts) {
		struct xdpr_ddos_key k;

		*hosts = count_keys(x->fd[XM_DDOS_TO], &k, sizeof(k));
	}
	return max ? xdpr_map_max(x, XM_DDOS_TO, "the DDoS meter table's size", max) : 0;
}

static void prot_key(struct xdpr_ddos_prot_key *k, int family, const void *addr, int plen)
{
	memset(k, 0, sizeof(*k));
	k->plen = 8 + plen;
	k->family = family;
	memcpy(k->addr, addr, alen(family));
}

static bool in_prefix(const __u8 *a, const __u8 *net, int plen)
{
	for (int b = 0; b < plen; b++)
		if ((a[b / 8] ^ net[b / 8]) & (0x80 >> (b % 8)))
			return false;
	return true;
}

/*
 * The "to" meters of hosts in family's net/plen, deleted: the datapath
 * counts a host that has a meter without asking whether it is protected.
 * Once packets in flight settled, so that none that found the prefix
 * before it went makes a meter after the walk.  0 or -errno.
 */
static int unmeter(struct xdpr *x, int family, const __u8 *net, int plen)
{
	struct xdpr_ddos_key k, next;
	int fd = x->fd[XM_DDOS_TO], more;

	xdpr_packets_settled();
	more = !bpf_map_get_next_key(fd, NULL, &k);
	while (more) {
		more = !bpf_map_get_next_key(fd, &k, &next);
		if (k.family == family && in_prefix(k.addr, net, plen) && bpf_map_delete_elem(fd, &k) &&
		    errno != ENOENT) {
			seterr(x, "cannot delete a DDoS meter: %s", strerror(errno));
			return -errno;
		}
		k = next;
	}
	return 0;
}

int xdpr_ddos_protect(struct xdpr *x, int family, const void *addr, int plen, bool add)
{
	struct xdpr_ddos_prot_key k;
	const __u8 *a = addr;
	int max = alen(family) * 8;
	__u32 one = 1;

	if (!max || plen < 0 || plen > max) {
		seterr(x, "invalid protected prefix (family %d, length %d)", family, plen);
		return -EINVAL;
	}
	for (int b = plen; b < max; b++)
		if (a[b / 8] & (0x80 >> (b % 8))) {
			seterr(x, "host bits set in the protected prefix");
			return -EINVAL;
		}
	prot_key(&k, family, addr, plen);
	if (add ? bpf_map_update_elem(x->fd[XM_DDOS_PROT], &k, &one, BPF_NOEXIST)
		: bpf_map_delete_elem(x->fd[XM_DDOS_PROT], &k)) {
		int err = -errno;
		char s[INET6_ADDRSTRLEN];

		inet_ntop(family, addr, s, sizeof(s));
		if (err == -EEXIST)
			seterr(x, "%s/%d is already protected", s, plen);
		else if (err == -ENOENT)
			seterr(x, "%s/%d is not protected", s, plen);
		else if (err == -ENOSPC || err == -E2BIG)
			seterr(x, "cannot protect %s/%d: the table of protected prefixes is full (%d)", s,
			       plen, 2 * XDPR_DDOS_PROT_MAX);
		else
			seterr(x, "cannot %s protected prefix %s/%d: %s", add ? "add" : "delete", s, plen,
			       strerror(-err));
		return err == -E2BIG ? -ENOSPC : err;
	}
	return add ? 0 : unmeter(x, family, addr, plen);
}

int xdpr_ddos_protect_foreach(struct xdpr *x, int (*cb)(int family, const void *addr, int plen, void *arg),
			      void *arg)
{
	struct xdpr_ddos_prot_key k, prev;
	int fd = x->fd[XM_DDOS_PROT], err = 0;

	for (void *p = NULL; !bpf_map_get_next_key(fd, p, &k); p = &prev) {
		err = cb(k.family, k.addr, (int)k.plen - 8, arg);
		if (err)
			return err;
		prev = k;
	}
	if (errno != ENOENT) {
		err = -errno;
		seterr(x, "cannot read the protected prefixes: %s", strerror(-err));
	}
	return err;
}

/* Walk a per-CPU hash of struct xdpr_ddos_key: the next key first, cb may delete this one. */
static int walk(struct xdpr *x, int fd, size_t vsize, const char *what,
		int (*each)(const struct xdpr_ddos_key *k, const void *v, int ncpu, void *ctx), void *ctx)
{
	int ncpu = xdpr_ncpus(), err = 0, more, end;
	struct xdpr_ddos_key cur, next;
	size_t stride = (vsize + 7) & ~7ul;
	void *v;

	if (ncpu <= 0) {
		seterr(x, "cannot count CPUs: %s", strerror(ncpu ? -ncpu : EINVAL));
		return ncpu ? ncpu : -EINVAL;
	}
	v = calloc(ncpu, stride);
	if (!v) {
		seterr(x, "cannot read %s: %s", what, strerror(ENOMEM));
		return -ENOMEM;
	}
	more = !bpf_map_get_next_key(fd, NULL, &cur);
	end = more ? 0 : errno;
	while (more) {
		more = !bpf_map_get_next_key(fd, &cur, &next);
		end = more ? 0 : errno;
		if (!bpf_map_lookup_elem(fd, &cur, v)) {
			err = each(&cur, v, ncpu, ctx);
			if (err)
				break;
		}
		cur = next;
	}
	if (!err && end != ENOENT) {
		err = -end;
		seterr(x, "cannot read %s: %s", what, strerror(end));
	}
	free(v);
	return err;
}

struct host_walk {
	int (*cb)(const struct xdpr_ddos_host *h, void *arg);
	void *arg;
};

static int host_each(const struct xdpr_ddos_key *k, const void *v, int ncpu, void *ctx)
{
	const struct xdpr_ddos_ctr *c = v;
	struct host_walk *w = ctx;
	struct xdpr_ddos_host h = { .family = k->family, .dir = k->dir };

	memcpy(h.addr, k->addr, sizeof(h.addr));
	for (int i = 0; i < ncpu; i++) {
		h.packets += c[i].packets;
		h.bytes += c[i].bytes;
		if (c[i].last_ns > h.last_ns)
			h.last_ns = c[i].last_ns;
	}
	return h.packets ? w->cb(&h, w->arg) : 0;
}

int xdpr_ddos_host_foreach(struct xdpr *x, int (*cb)(const struct xdpr_ddos_host *h, void *arg), void *arg)
{
	struct host_walk w = { cb, arg };
	int err = walk(x, x->fd[XM_DDOS_TO], sizeof(struct xdpr_ddos_ctr), "DDoS meters", host_each, &w);

	return err ? err : walk(x, x->fd[XM_DDOS_FROM], sizeof(struct xdpr_ddos_ctr), "DDoS meters",
				host_each, &w);
}

static void ban_key(struct xdpr_ddos_key *k, int family, int dir, const void *addr)
{
	memset(k, 0, sizeof(*k));
	k->family = family;
	k->dir = dir;
	memcpy(k->addr, addr, alen(family));
}

int xdpr_ddos_host_delete(struct xdpr *x, const struct xdpr_ddos_host *h)
{
	struct xdpr_ddos_key k;

	ban_key(&k, h->family, h->dir, h->addr);
	if (bpf_map_delete_elem(x->fd[h->dir == XDPR_DDOS_TO ? XM_DDOS_TO : XM_DDOS_FROM], &k)) {
		int err = -errno;

		if (err != -ENOENT)
			seterr(x, "cannot delete a DDoS meter: %s", strerror(-err));
		return err;
	}
	return 0;
}

int xdpr_ddos_ban(struct xdpr *x, const struct xdpr_ddos_ban_info *b)
{
	int ncpu = xdpr_ncpus(), fd = x->fd[XM_DDOS_BANS], err;
	struct xdpr_ddos_ban *v;
	struct xdpr_ddos_key k;
	bool had;

	if (!alen(b->family) || (b->dir != XDPR_DDOS_TO && b->dir != XDPR_DDOS_FROM)) {
		seterr(x, "invalid ban (family %u, direction %u)", b->family, b->dir);
		return -EINVAL;
	}
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	v = calloc(ncpu, sizeof(*v));
	if (!v) {
		seterr(x, "cannot ban: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	ban_key(&k, b->family, b->dir, b->addr);
	had = !bpf_map_lookup_elem(fd, &k, v);
	for (int i = 0; i < ncpu; i++) {
		v[i].until_ns = b->until_ns;
		v[i].since_ns = b->since_ns;
		v[i].pps = b->pps;
		v[i].bps = b->bps;
		v[i].reason = b->reason;
		v[i].flags = b->flags;
		if (!had)
			v[i].dropped_pkts = v[i].dropped_bytes = 0;
	}
	/* the flag and the bit first: a ban in the table is looked at from its first packet */
	err = cfg_flag(x, XDPR_CFG_BANS, true);
	if (!err)
		err = bit_set(x, &k);
	if (!err && bpf_map_update_elem(fd, &k, v, BPF_ANY)) {
		err = -errno;
		if (err == -E2BIG || err == -ENOSPC) {
			seterr(x, "cannot ban: the ban table is full (%d)", XDPR_DDOS_BAN_MAX);
			err = -ENOSPC;
		} else {
			seterr(x, "cannot ban: %s", strerror(-err));
		}
	}
	free(v);
	return err;
}

int xdpr_ddos_unban(struct xdpr *x, int family, int dir, const void *addr)
{
	struct xdpr_ddos_key k, any;
	int fd = x->fd[XM_DDOS_BANS];

	if (!alen(family)) {
		seterr(x, "invalid address family %d", family);
		return -EINVAL;
	}
	ban_key(&k, family, dir, addr);
	if (bpf_map_delete_elem(fd, &k)) {
		int err = -errno;
		char s[INET6_ADDRSTRLEN];

		inet_ntop(family, addr, s, sizeof(s));
		if (err == -ENOENT)
			seterr(x, "%s is not banned %s", s, dir == XDPR_DDOS_TO ? "(to)" : "(from)");
		else
			seterr(x, "cannot unban %s: %s", s, strerror(-err));
		return err;
	}
	if (bpf_map_get_next_key(fd, NULL, &any) && errno == ENOENT)
		return cfg_flag(x, XDPR_CFG_BANS, false) ?: bits_rebuild(x);
	return bits_rebuild(x);
}

struct ban_walk {
	int (*cb)(const struct xdpr_ddos_ban_info *b, void *arg);
	void *arg;
};

static int ban_each(const struct xdpr_ddos_key *k, const void *v, int ncpu, void *ctx)
{
	const struct xdpr_ddos_ban *c = v;
	struct ban_walk *w = ctx;
	struct xdpr_ddos_ban_info b = {
		.family = k->family, .dir = k->dir, .reason = c[0].reason, .flags = c[0].flags,
		.until_ns = c[0].until_ns, .since_ns = c[0].since_ns, .pps = c[0].pps, .bps = c[0].bps,
	};

	memcpy(b.addr, k->addr, sizeof(b.addr));
	for (int i = 0; i < ncpu; i++) {
		b.dropped_pkts += c[i].dropped_pkts;
		b.dropped_bytes += c[i].dropped_bytes;
	}
	return w->cb(&b, w->arg);
}

int xdpr_ddos_ban_foreach(struct xdpr *x, int (*cb)(const struct xdpr_ddos_ban_info *b, void *arg), void *arg)
{
	struct ban_walk w = { cb, arg };

	return walk(x, x->fd[XM_DDOS_BANS], sizeof(struct xdpr_ddos_ban), "the ban table", ban_each, &w);
}

long xdpr_ddos_flush(struct xdpr *x, unsigned int what)
{
	long n, total = 0;

	if (what & XDPR_DDOS_FLUSH_HOSTS) {
		if ((n = xdpr_map_flush(x, x->fd[XM_DDOS_TO], sizeof(struct xdpr_ddos_key), "DDoS meters")) < 0)
			return n;
		total += n;
		if ((n = xdpr_map_flush(x, x->fd[XM_DDOS_FROM], sizeof(struct xdpr_ddos_key), "DDoS meters")) < 0)
			return n;
		total += n;
	}
	if (what & XDPR_DDOS_FLUSH_BANS) {
		if ((n = xdpr_map_flush(x, x->fd[XM_DDOS_BANS], sizeof(struct xdpr_ddos_key), "bans")) < 0)
			return n;
		total += n;
		n = cfg_flag(x, XDPR_CFG_BANS, false) ?: bits_rebuild(x);
		if (n < 0)
			return n;
	}
	if (what & XDPR_DDOS_FLUSH_PROTECT) {
		n = xdpr_map_flush(x, x->fd[XM_DDOS_PROT], sizeof(struct xdpr_ddos_prot_key), "protected prefixes");
		if (n < 0)
			return n;
		total += n;
		/* no prefix left: no "to" meter may stay (it would go on counting) */
		xdpr_packets_settled();
		if (!(what & XDPR_DDOS_FLUSH_HOSTS) &&
		    (n = xdpr_map_flush(x, x->fd[XM_DDOS_TO], sizeof(struct xdpr_ddos_key), "DDoS meters")) < 0)
			return n;
	}
	return total;
}
