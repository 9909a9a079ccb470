// SPDX-License-Identifier: GPL-2.0
/*
 * nat_tab.c - the size of the NAT tables (`xdpr nat limit sessions N`):
 * the memory they take, by the kernel's own count, and may take when full;
 * and a change of size, live.
 *
 * The tables (sessions, bindings, mappings, hosts, ring) are inner maps of
 * two-slot outer maps; xdpr_cfg.nat_slot names the live slot.  A new size:
 *   1. new tables of that size are created (refused first if the machine,
 *      or the memory cgroup of the caller, could not hold them full);
 *   2. the live tables are frozen: xdpr_cfg.nat_frozen_until, a deadline
 *      the packet path honours on every creation and deletion (new flows
 *      drop as drop_nat_resizing, established ones go on translating), and
 *      every program run that may not have seen it is waited for;
 *   3. every entry is copied (the deadline is pushed on while copying);
 *   4. one xdpr_cfg update makes the new tables (installed in the idle
 *      slots before the freeze) live; once no run can hold the old slot the
 *      freeze is lifted and the old slot gets XDPR_NAT_TINY-entry tables,
 *      so the kernel frees the old ones.
 * A command killed at any step leaves the old tables live or the new ones,
 * whole, and a freeze that ends at its deadline (10 s at most) or when the
 * next command takes the lock (core.c, lift_dead_freeze);
 * killed between 2 and 4, the new tables stay in the idle slot (memory,
 * nothing reads them) until the next resize replaces them.
 * What a frozen table does not record: last-seen refreshes (the copy may
 * be older by the copy's duration) and FIN/RST bits seen during the copy.
 *
 * Test hook: XDPR_CRASH_AT=limit:STEP kills the command (SIGKILL) at STEP:
 * created (new tables made, nothing frozen), frozen, copied (not
 * switched), switched (new tables live, still frozen).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core.h"

#define FREEZE_NS   (10ULL * 1000000000ULL) /* a freeze lasts this long unless pushed on */
#define COPY_CHUNK  8192

static const __u32 zero_key;

static void crash_point(const char *step)
{
	xdpr_crash_point("limit", step);
}

/*
 * Every XDP run that may have read xdpr_cfg before now has ended: XDP runs
 * in RCU read-side sections, and MEMBARRIER_CMD_GLOBAL is synchronize_rcu().
 * Where it is refused (nohz_full), an update of an array of maps from
 * userspace waits for a grace period too: the idle slot of outer is
 * written again with what it holds.
 */
static bool settle(int outer, __u32 idle)
{
	__u32 id;
	int fd;
	bool ok;

	if (xdpr_packets_settled())
		return true;
	if (bpf_map_lookup_elem(outer, &idle, &id) || (fd = bpf_map_get_fd_by_id(id)) < 0)
		return false;
	ok = !bpf_map_update_elem(outer, &idle, &fd, BPF_ANY);
	close(fd);
	return ok;
}

/* ------------------------------------------------------------- memory */

/* What the kernel counts for a map (fdinfo "memlock"), 0 if it does not say. */
static __u64 map_memlock(int fd)
{
	char path[64], line[128];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static __u64 pow2_up(__u64 v)
{
	__u64 p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* The kmalloc size class an allocation of n bytes takes. */
static __u64 slab_size(__u64 n)
{
	static const __u64 cls[] = { 8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096 };

	for (size_t i = 0; i < sizeof(cls) / sizeof(cls[0]); i++)
		if (n <= cls[i])
			return cls[i];
	return (n + 4095) & ~4095ULL;
}

#define R8(n) (((__u64)(n) + 7) & ~7ULL)
#define HTAB_ELEM 48   /* struct htab_elem before the key (x86-64) */
#define HTAB_BUCKET 16 /* struct bucket */
#define LLIST_NODE 8   /* bpf_mem_alloc's header per object */

/*
 * Bytes one entry of a NAT table takes when used (the hash tables that
 * allocate per entry; the ring and the preallocated flow LRU take theirs
 * at creation).
 */
static __u64 entry_bytes(int which)
{
	__u32 k, v;
	bool hash, alloc;

	xdpr_nat_shape(which, &k, &v, &hash, &alloc);
	return alloc ? slab_size(HTAB_ELEM + R8(k) + R8(v) + LLIST_NODE) : 0;
}

/* Bytes a NAT table takes before it holds anything: buckets (and preallocated entries), or the ring. */
static __u64 fixed_bytes(int which, __u32 sessions)
{
	__u32 k, v, n = xdpr_nat_entries(which, sessions);
	bool hash, alloc;

	xdpr_nat_shape(which, &k, &v, &hash, &alloc);
	if (!hash)
		return (__u64)R8(v) * n;
	return HTAB_BUCKET * pow2_up(n) + (alloc ? 0 : (__u64)n * (HTAB_ELEM + R8(k) + R8(v)));
}

__u64 xdpr_nat_bytes(struct xdpr *x, __u32 sessions, __u64 *fixed)
{
	__u64 f = 0, full = 0;

	if (xdpr_nat_protos(x))
		return 0;
	for (int t = 0; t < XDPR_NT_MAPS; t++) {
		f += fixed_bytes(t, sessions);
		full += fixed_bytes(t, sessions) + entry_bytes(t) * xdpr_nat_entries(t, sessions);
	}
	if (fixed)
		*fixed = f;
	return full;
}

/* A field of a cgroup's memory.stat (v2 "inactive_file", v1 "total_inactive_file"), 0 if none. */
static unsigned long long cg_stat(const char *dir, const char *field)
{
	char path[4400], line[256];
	unsigned long long v = 0;
	size_t n = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ' ') {
			sscanf(line + n + 1, "%llu", &v);
			break;
		}
	if (f)
		fclose(f);
	return v;
}

/*
 * min over dir and its parents up to root of limit - usage (files of those
 * names), usage less the inactive page cache (stat: the memory.stat field)
 * the kernel reclaims before it refuses; ULLONG_MAX: no limit.
 */
static __u64 cg_walk(char *dir, size_t root, const char *limit, const char *usage, const char *stat)
{
	unsigned long long room = ULLONG_MAX, max, cur;
	char path[4400];

	for (;;) {
		char *slash;
		FILE *m, *c;

		snprintf(path, sizeof(path), "%s/%s", dir, limit);
		m = fopen(path, "r");
		snprintf(path, sizeof(path), "%s/%s", dir, usage);
		c = fopen(path, "r");
		/* "max" (v2) reads as no number: no limit here */
		if (m && c && fscanf(m, "%llu", &max) == 1 && fscanf(c, "%llu", &cur) == 1) {
			unsigned long long cache = cg_stat(dir, stat);

			cur = cur > cache ? cur - cache : 0;
			if (max - (cur < max ? cur : max) < room)
				room = max - (cur < max ? cur : max);
		}
		if (m)
			fclose(m);
		if (c)
			fclose(c);
		slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < root)
			break;
		*slash = 0;
	}
	return room;
}

/*
 * The room the memory cgroups of this process leave (BPF maps are charged
 * to the creator's): cgroup v2 (memory.max - memory.current) and v1
 * (memory.limit_in_bytes - memory.usage_in_bytes), over every ancestor.
 * Under `ip netns exec` /sys is a new sysfs without them: no limit is seen
 * (the kernel still refuses what the cgroup cannot hold when the tables
 * are made, but not what they may take later as they fill).
 */
static __u64 cgroup_room(void)
{
	char line[4096], dir[4200], base[128];
	__u64 room = ULLONG_MAX, r;
	FILE *f = fopen("/proc/self/cgroup", "r");
	const char *top = "";

	while (f && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!path)
			continue;
		*path++ = 0;
		ctl++;
		path[strcspn(path, "\n")] = 0;
		if (!*ctl) { /* v2: at /sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1 */
			snprintf(base, sizeof(base), "%s/sys/fs/cgroup/cgroup.controllers", top);
			snprintf(base, sizeof(base), access(base, F_OK) ? "%s/sys/fs/cgroup/unified" :
				 "%s/sys/fs/cgroup", top);
			snprintf(dir, sizeof(dir), "%s%s", base, path);
			r = cg_walk(dir, strlen(base), "memory.max", "memory.current", "inactive_file");
		} else if (!strcmp(ctl, "memory") || strstr(ctl, "memory,") || strstr(ctl, ",memory")) {
			snprintf(base, sizeof(base), "%s/sys/fs/cgroup/memory", top);
			snprintf(dir, sizeof(dir), "%s%s", base, path);
			r = cg_walk(dir, strlen(base), "memory.limit_in_bytes", "memory.usage_in_bytes",
				    "total_inactive_file");
		} else {
			continue;
		}
		if (r < room)
			room = r;
	}
	if (f)
		fclose(f);
	return room;
}

/* MemAvailable, or less if a memory cgroup of this process has less room. */
static __u64 mem_available(void)
{
	unsigned long long kb = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");
	__u64 room, avail;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	avail = (__u64)kb * 1024;
	room = cgroup_room();
	return room < avail ? room : avail;
}

int xdpr_nat_mem(struct xdpr *x, struct xdpr_nat_mem *m)
{
	struct xdpr_cfg c;
	int err;

	memset(m, 0, sizeof(*m));
	err = xdpr_nat_protos(x);
	if (!err)
		err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	m->sessions = c.nat_sess;
	m->full = xdpr_nat_bytes(x, c.nat_sess, &m->fixed);
	m->frozen = c.nat_frozen_until > xdpr_mono_ns();
	for (int t = 0; t < XDPR_NT_MAPS; t++) {
		int fd = xdpr_nat_tab_fd(x, t, c.nat_slot & 1);
		__u64 used;

		if (fd < 0)
			return fd;
		used = map_memlock(fd);
		m->in_use += used;
		if (t == XDPR_NT_CTA) {
			struct xdpr_ct_hdr h;
			__u32 one = 1;

			if (bpf_map_lookup_elem(fd, &one, &h)) {
				err = -errno;
				seterr(x, "cannot read the session count: %s", strerror(-err));
				close(fd);
				return err;
			}
			m->entries = h.count;
		}
		close(fd);
	}
	return 0;
}

/* ------------------------------------------------------------- resize */

/* Push the freeze's deadline on when it is near; false if it passed (the packet path went on). */
static bool freeze_hold(struct xdpr *x, struct xdpr_cfg *c)
{
	__u64 now = xdpr_mono_ns();

	if (now >= c->nat_frozen_until) {
		seterr(x, "the copy outlasted its freeze (%llu s): nothing changed",
		       FREEZE_NS / 1000000000ULL);
		return false;
	}
	if (c->nat_frozen_until - now > FREEZE_NS / 2)
		return true;
	c->nat_frozen_until = now + FREEZE_NS;
	return !xdpr_cfg_set(x, c);
}

/*
 * The CPUs this process may run on, for filling a per-CPU LRU: an insert
 * from a syscall takes a free entry from the calling CPU's own list (a
 * 1/ncpus share of the table), evicting from it silently when that share is
 * used up, so the copy moves from CPU to CPU between batches.
 */
struct cpu_spread {
	cpu_set_t orig;
	int cpu[CPU_SETSIZE], n, next;
};

static void spread_init(struct cpu_spread *s)
{
	s->n = s->next = 0;
	if (sched_getaffinity(0, sizeof(s->orig), &s->orig))
		return;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &s->orig))
			s->cpu[s->n++] = c;
}

static void spread_next(struct cpu_spread *s)
{
	cpu_set_t one;

	if (s->n < 2)
		return;
	CPU_ZERO(&one);
	CPU_SET(s->cpu[s->next++ % s->n], &one);
	sched_setaffinity(0, sizeof(one), &one);
}

static void spread_done(struct cpu_spread *s)
{
	if (s->n >= 2)
		sched_setaffinity(0, sizeof(s->orig), &s->orig);
}

/* Entries in a hash map, counted in batches; -errno on failure. */
static long long count_entries(int fd, __u32 ksz, __u32 vsz)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	void *keys = malloc((size_t)COPY_CHUNK * ksz), *vals = malloc((size_t)COPY_CHUNK * vsz);
	__u64 in = 0, out = 0;
	long long n = 0;
	bool first = true;
	__u32 cnt;
	int err;

	if (!keys || !vals) {
		n = -ENOMEM;
		goto out;
	}
	for (;;) {
		cnt = COPY_CHUNK;
		err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys, vals, &cnt, &o);
		if (err && errno != ENOENT) {
			n = -errno;
			break;
		}
		n += cnt;
		if (err)
			break;
		in = out;
		first = false;
	}
out:
	free(keys);
	free(vals);
	return n;
}

/* Copy every entry of hash map from into to; *n entries copied. */
static int copy_hash(struct xdpr *x, struct xdpr_cfg *c, int from, int to, int which, __u64 *n)
{
	struct cpu_spread sp;
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	__u32 ksz, vsz, chunk = COPY_CHUNK, cnt;
	__u64 in = 0, out = 0;
	bool first = true, hash, alloc;
	void *keys = NULL, *vals = NULL;
	int err = 0;

	xdpr_nat_shape(which, &ksz, &vsz, &hash, &alloc);
	spread_init(&sp);
	for (;;) {
		if (!keys) {
			keys = malloc((size_t)chunk * ksz);
			vals = malloc((size_t)chunk * vsz);
			if (!keys || !vals) {
				err = -ENOMEM;
				seterr(x, "cannot copy the NAT tables: %s", strerror(ENOMEM));
				break;
			}
		}
		cnt = chunk;
		err = bpf_map_lookup_batch(from, first ? NULL : &in, &out, keys, vals, &cnt, &o);
		if (err && errno == ENOSPC) { /* one bucket holds more than a chunk */
			free(keys);
			free(vals);
			keys = vals = NULL;
			chunk *= 2;
			continue;
		}
		if (err && errno != ENOENT) {
			err = -errno;
			seterr(x, "cannot read %s: %s", map_names[xdpr_nat_outer[which]], strerror(-err));
			break;
		}
		if (cnt) {
			__u32 put = cnt;

			if (which == XDPR_NT_FLOWS)
				spread_next(&sp);
			if (bpf_map_update_batch(to, keys, vals, &put, &o)) {
				err = -errno;
				if (err == -E2BIG || err == -ENOMEM)
					seterr(x, "%s holds more than the new size allows (%llu copied): "
					       "nothing changed (`nat flush sessions`, or wait for sessions "
					       "and held ports to expire)",
					       map_names[xdpr_nat_outer[which]], (unsigned long long)(*n + put));
				else
					seterr(x, "cannot fill the new %s: %s", map_names[xdpr_nat_outer[which]],
					       strerror(-err));
				break;
			}
			*n += cnt;
		}
		if (err) { /* ENOENT: that was the last batch */
			err = 0;
			break;
		}
		in = out;
		first = false;
		if (!freeze_hold(x, c)) {
			err = -ETIMEDOUT;
			break;
		}
	}
	spread_done(&sp);
	free(keys);
	free(vals);
	if (!err && which == XDPR_NT_FLOWS) {
		/* an LRU makes room silently: the copy counts only if all of it is there */
		long long have = count_entries(to, ksz, vsz);

		if (have < 0 || (__u64)have < *n) {
			err = have < 0 ? (int)have : -E2BIG;
			seterr(x, "the filter's flow states do not fit the new table (%lld of %llu kept): "
			       "nothing changed", have < 0 ? 0 : have, (unsigned long long)*n);
		}
	}
	return err;
}

struct ct_copy {
	struct xdpr *x;
	struct xdpr_cfg *c;
	struct xdpr_ct_tab *to;
	__u64 *n;
	bool said;  /* the error is the callback's, and told */
};

static int copy_half(const struct xdpr_ct_key *k, const struct xdpr_ct_val *v, void *arg)
{
	struct ct_copy *cc = arg;
	int err = xdpr_ct_put(cc->to, k, v, BPF_NOEXIST);

	if (err == -E2BIG || err == -ENOMEM)
		seterr(cc->x, "%s holds more than the new size allows (%llu copied): nothing changed "
		       "(`nat flush sessions`, or wait for sessions and held ports to expire)",
		       map_names[XM_CT], (unsigned long long)*cc->n);
	else if (err)
		seterr(cc->x, "cannot fill the new session table: %s", strerror(-err));
	else if (++*cc->n % COPY_CHUNK == 0 && !freeze_hold(cc->x, cc->c))
		err = -ETIMEDOUT;
	cc->said = err != 0;
	return err;
}

/*
 * The session halves, slots and overflow, into the new slots and overflow
 * (each placed anew), streamed: nothing held but the half in hand.
 */
static int copy_ct(struct xdpr *x, struct xdpr_cfg *c, const int ofd[XDPR_NT_MAPS], const int nfd[XDPR_NT_MAPS],
		   __u64 *n)
{
	struct xdpr_ct_tab from, to;
	struct ct_copy cc = { x, c, &to, n, false };
	int err;

	err = xdpr_ct_open(ofd[XDPR_NT_CTA], ofd[XDPR_NT_CT], &from);
	if (err) {
		seterr(x, "cannot read the session table: %s", strerror(-err));
		return err;
	}
	err = xdpr_ct_open(nfd[XDPR_NT_CTA], nfd[XDPR_NT_CT], &to);
	if (err) {
		seterr(x, "cannot open the new session table: %s", strerror(-err));
		xdpr_ct_close(&from);
		return err;
	}
	err = xdpr_ct_each(&from, copy_half, &cc);
	if (err && !cc.said)
		seterr(x, "cannot read the session table: %s", strerror(-err));
	xdpr_ct_close(&to);
	xdpr_ct_close(&from);
	return err;
}

/*
 * The ring of recent sessions in its new length: the newest sessions, in
 * order, from slot 0; the head after them.  Only the slots kept are read.
 */
static int copy_ring(struct xdpr *x, int from, int to, __u32 nlen, __u64 *new_head)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info), olen, cnt, *keys = NULL;
	struct xdpr_ct_key *nr = NULL;
	__u64 head = 0, keep;
	int err = 0;

	if (bpf_obj_get_info_by_fd(from, &info, &ilen) ||
	    bpf_map_lookup_elem(x->fd[XM_RINGHD], &zero_key, &head)) {
		err = -errno;
		seterr(x, "cannot read the NAT ring: %s", strerror(-err));
		return err;
	}
	olen = info.max_entries;
	keep = head < olen ? head : olen;
	if (keep > nlen)
		keep = nlen;
	nr = calloc(keep ? keep : 1, sizeof(*nr));
	keys = calloc(keep ? keep : 1, sizeof(*keys));
	if (!nr || !keys) {
		err = -ENOMEM;
		seterr(x, "cannot copy the NAT ring: %s", strerror(ENOMEM));
		goto out;
	}
	/*
	 * The kept slots are at most two runs of the old ring: read them in
	 * batches.  An array's batch starts after in_batch (the previous key).
	 */
	for (__u64 i = 0; i < keep; ) {
		__u32 at = (head - keep + i) % olen, in = at - 1, next;

		cnt = olen - at < keep - i ? olen - at : keep - i;
		if (cnt > COPY_CHUNK)
			cnt = COPY_CHUNK;
		if (bpf_map_lookup_batch(from, at ? &in : NULL, &next, keys + i, nr + i, &cnt, &o) &&
		    errno != ENOENT) {
			err = -errno;
			seterr(x, "cannot read the NAT ring: %s", strerror(-err));
			goto out;
		}
		if (!cnt || keys[i] != at) {
			err = -EIO;
			seterr(x, "cannot read the NAT ring: slot %u came back as %u", at, cnt ? keys[i] : 0);
			goto out;
		}
		i += cnt;
	}
	for (__u64 i = 0; i < keep; i++)
		keys[i] = i;
	cnt = keep;
	if (keep && bpf_map_update_batch(to, keys, nr, &cnt, &o)) {
		err = -errno;
		seterr(x, "cannot fill the new NAT ring: %s", strerror(-err));
		goto out;
	}
	*new_head = keep;
out:
	free(nr);
	free(keys);
	return err;
}

/* The new ring's head could not be written: pushes start over its oldest slots. */
static void addnote_ring(struct xdpr *x)
{
	snprintf(x->note, sizeof(x->note), "the NAT ring's head was not moved: %s", strerror(errno));
}

/* Put fd[t] into slot of every NAT outer map. */
static int put_slot(struct xdpr *x, __u32 slot, const int fd[XDPR_NT_MAPS])
{
	for (int t = 0; t < XDPR_NT_MAPS; t++)
		if (bpf_map_update_elem(x->fd[xdpr_nat_outer[t]], &slot, &fd[t], BPF_ANY)) {
			seterr(x, "cannot install the new NAT tables: %s", strerror(errno));
			return -errno;
		}
	return 0;
}

static void close_all(int fd[XDPR_NT_MAPS])
{
	for (int t = 0; t < XDPR_NT_MAPS; t++) {
		if (fd[t] >= 0)
			close(fd[t]);
		fd[t] = -1;
	}
}

/* Give slot XDPR_NAT_TINY-entry tables, so that the kernel frees the ones it held (best effort). */
static void empty_slot(struct xdpr *x, __u32 slot)
{
	int fd[XDPR_NT_MAPS];
	bool made = true;

	for (int t = 0; t < XDPR_NT_MAPS; t++) {
		fd[t] = xdpr_nat_new_map(x, t, 0);
		made &= fd[t] >= 0;
	}
	if (made)
		put_slot(x, slot, fd);
	close_all(fd);
}

int xdpr_nat_resize(struct xdpr *x, __u32 sessions, struct xdpr_nat_resize *res)
{
	int nfd[XDPR_NT_MAPS], ofd[XDPR_NT_MAPS], err;
	__u64 need, fixed, avail, t0, head = 0;
	struct xdpr_nat_mem m;
	struct xdpr_cfg c;
	__u32 live, idle;

	memset(res, 0, sizeof(*res));
	for (int t = 0; t < XDPR_NT_MAPS; t++)
		nfd[t] = ofd[t] = -1;
	if (sessions < XDPR_NAT_MIN_SESS || sessions > XDPR_NAT_MAX_SESS) {
		seterr(x, "sessions %u: from %u to %u", sessions, XDPR_NAT_MIN_SESS, XDPR_NAT_MAX_SESS);
		return -EINVAL;
	}
	err = xdpr_nat_protos(x);
	if (!err)
		err = xdpr_nat_mem(x, &m);
	if (!err)
		err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	res->old_sessions = c.nat_sess;
	if (sessions == c.nat_sess)
		return 0;
	/*
	 * Room: for the new tables when full, once the old ones are freed after
	 * the switch; and, while both exist, for the new ones empty plus a copy
	 * of what the old ones hold.
	 */
	need = xdpr_nat_bytes(x, sessions, &fixed);
	avail = mem_available();
	if (need > avail + m.in_use || fixed + (m.in_use > m.fixed ? m.in_use - m.fixed : 0) > avail) {
		seterr(x, "%u sessions need up to %.1f MiB when the tables are full; %.1f MiB is "
		       "available (MemAvailable, memory cgroup limits): nothing changed",
		       sessions, need / 1048576.0, (avail + m.in_use) / 1048576.0);
		return -ENOMEM;
	}
	for (int t = 0; t < XDPR_NT_MAPS; t++) {
		nfd[t] = xdpr_nat_new_map(x, t, sessions);
		if (nfd[t] < 0) {
			err = nfd[t];
			goto fail;
		}
	}
	crash_point("created");
	live = c.nat_slot & 1;
	idle = !live;
	for (int t = 0; t < XDPR_NT_MAPS; t++) {
		ofd[t] = xdpr_nat_tab_fd(x, t, live);
		if (ofd[t] < 0) {
			err = ofd[t];
			goto fail;
		}
	}

	/* the idle slots: no run reads them until xdpr_cfg names them */
	err = put_slot(x, idle, nfd);
	if (err)
		goto fail;

	/* freeze, and wait for every run that may not have seen it */
	t0 = xdpr_mono_ns();
	c.nat_frozen_until = t0 + FREEZE_NS;
	err = xdpr_cfg_set(x, &c);
	if (err)
		goto fail;
	if (!settle(x->fd[XM_CT], idle)) {
		err = -EOPNOTSUPP;
		seterr(x, "cannot wait for the packet path (membarrier, map update): nothing changed");
		goto thaw;
	}
	crash_point("frozen");
	for (int t = 0; t < XDPR_NT_MAPS && !err; t++) {
		if (t == XDPR_NT_RING)
			err = copy_ring(x, ofd[t], nfd[t], sessions, &head);
		else if (t == XDPR_NT_CT)
			err = copy_ct(x, &c, ofd, nfd, &res->copied[t]);
		else if (t != XDPR_NT_CTA)
			err = copy_hash(x, &c, ofd[t], nfd[t], t, &res->copied[t]);
	}
	if (!err && !freeze_hold(x, &c))
		err = -ETIMEDOUT;
	if (err)
		goto thaw;
	crash_point("copied");

	/* switch: the new tables live, still frozen until no run holds the old slot */
	c.nat_slot = idle;
	c.nat_sess = sessions;
	c.flt_gen++; /* the per-CPU copies of flow states name the old table's */
	err = xdpr_cfg_set(x, &c);
	if (err)
		goto thaw;
	/* the ring's head goes with the new ring (nothing pushes while frozen) */
	if (bpf_map_update_elem(x->fd[XM_RINGHD], &zero_key, &head, BPF_ANY))
		addnote_ring(x);
	crash_point("switched");
	settle(x->fd[XM_CT], live);
	c.nat_frozen_until = 0;
	err = xdpr_cfg_set(x, &c);
	res->frozen_ns = xdpr_mono_ns() - t0;
	res->sessions = sessions;
	close_all(nfd);
	close_all(ofd);
	empty_slot(x, live); /* the old tables go */
	return err;

thaw:
	/* nothing switched: the old tables stay live, the freeze goes, the idle slot is emptied */
	if (!xdpr_cfg_get(x, &c)) {
		c.nat_frozen_until = 0;
		xdpr_cfg_set(x, &c);
	}
	close_all(nfd);
	empty_slot(x, idle);
fail:
	close_all(nfd);
	close_all(ofd);
	return err;
}
