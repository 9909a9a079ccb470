// SPDX-License-Identifier: GPL-2.0
/*
 * core.c - the bottom of libxdpr: find a router's state, errors, the shared
 * maps and the helper programs that run on them (see core.h).
 *
 * State lives in the kernel: the maps of a router are found through the
 * xdpr programs attached in the caller's network namespace (xdpr_open), or
 * created from the BPF object's own definitions for a new router.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <linux/membarrier.h>
#include <zlib.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "core.h"
#include "xdpr.skel.h"
#include "version.h" /* XDPR_BPF_ID */

#define XDPR_RUN_DIR "/run/xdpr"
#define XDPR_PIN_DIR "/sys/fs/bpf/xdpr"

const char *const map_names[XM_MAX] = {
#define XDPR_M_NAME(id, name, kind) [id] = name,
	XDPR_MAPS(XDPR_M_NAME)
#undef XDPR_M_NAME
};

const char *xdpr_map_name(enum xdpr_map m)
{
	return m >= 0 && m < XM_MAX ? map_names[m] : "unknown";
}

/* The library's own maps (bound to the program): a router may lack them. */
static bool map_optional(int m)
{
	static const bool own[XM_MAX] = {
#define XDPR_M_IS_OWN(id, name, kind) [id] = XDPR_MK_##kind,
		XDPR_MAPS(XDPR_M_IS_OWN)
#undef XDPR_M_IS_OWN
	};

	return m >= 0 && m < XM_MAX && own[m];
}

void xdpr_crash_point(const char *op, const char *step)
{
	const char *at = getenv("XDPR_CRASH_AT");
	size_t n = strlen(op);

	if (at && !strncmp(at, op, n) && at[n] == ':' && !strcmp(at + n + 1, step))
		raise(SIGKILL);
}

__u64 xdpr_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

bool xdpr_packets_settled(void)
{
	return syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0;
}

void seterr(struct xdpr *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
}

/*
 * libxdp and libbpf talk on stderr by default; keep their last warning
 * instead, and the reason libxdp gave before falling back to a plain attach.
 */
static char lib_msg[256], lib_fallback[256];

static int lib_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	if (getenv("XDPR_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	if (level == LIBXDP_WARN) {
		size_t n;

		vsnprintf(lib_msg, sizeof(lib_msg), fmt, ap);
		n = strlen(lib_msg);
		while (n && lib_msg[n - 1] == '\n')
			lib_msg[--n] = 0;
		if (!strncmp(lib_msg, "Falling back", 12))
			return 0;
		memcpy(lib_fallback, lib_msg, sizeof(lib_fallback));
	}
	return 0;
}

static int bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return lib_print(level == LIBBPF_WARN ? LIBXDP_WARN : LIBXDP_DEBUG, fmt, ap);
}

void xdpr_quiet_libs(void)
{
	libxdp_set_print(lib_print);
	libbpf_set_print(bpf_print);
}

void xdpr_lib_clear(void)
{
	lib_msg[0] = lib_fallback[0] = 0;
}

const char *xdpr_lib_warning(void)
{
	return lib_msg;
}

const char *xdpr_lib_fallback(void)
{
	return lib_fallback;
}

static __u64 prog_since(int prog_fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct timespec boot, real;

	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return 0;
	clock_gettime(CLOCK_BOOTTIME, &boot);
	clock_gettime(CLOCK_REALTIME, &real);
	/* load_time is nanoseconds since boot; subtract before rounding */
	return (real.tv_sec * 1000000000ULL + real.tv_nsec - boot.tv_sec * 1000000000ULL -
		boot.tv_nsec + info.load_time) / 1000000000ULL;
}

/*
 * What a running program is: its kernel tag (hex), and the build id its
 * loader wrote into its .rodata (xdpr_build; "" if it has none: an older
 * build's).
 */
static void prog_ident(int prog_fd, struct xdpr_link *l)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), ids[64], n;
	const size_t off = offsetof(struct xdpr_bpf__rodata, xdpr_build);

	l->prog_tag[0] = l->build[0] = 0;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return;
	for (int i = 0; i < 8; i++)
		snprintf(l->prog_tag + 2 * i, 3, "%02x", info.tag[i]);
	n = info.nr_map_ids < 64 ? info.nr_map_ids : 64;
	memset(&info, 0, sizeof(info));
	len = sizeof(info);
	info.nr_map_ids = n;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return;
	for (__u32 i = 0; i < info.nr_map_ids && i < n && !l->build[0]; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi), zero = 0;
		int fd = bpf_map_get_fd_by_id(ids[i]);
		char *v;

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &mi, &mlen) && !strcmp(mi.name, "xdpr_bpf.rodata") &&
		    mi.value_size >= off + sizeof(l->build) && (v = calloc(1, mi.value_size))) {
			if (!bpf_map_lookup_elem(fd, &zero, v))
				snprintf(l->build, sizeof(l->build), "%.*s", (int)sizeof(l->build) - 1, v + off);
			free(v);
		}
		close(fd);
	}
}

const char *xdpr_build_id(void)
{
	return XDPR_BPF_ID;
}

/*
 * Adopt the maps of a running instance (first one found wins).  The
 * program's map ids are asked for twice: how many, then which (the
 * datapath's maps and those bound to it; more than a fixed array holds).
 */
static int adopt_maps(struct xdpr *x, int prog_fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), *ids, n, i;
	int err = 0;

	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	n = info.nr_map_ids;
	ids = calloc(n ? n : 1, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	memset(&info, 0, sizeof(info));
	len = sizeof(info);
	info.nr_map_ids = n;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len)) {
		free(ids);
		return -errno;
	}
	/* bound meanwhile: the first n are enough, the next call sees the rest */
	for (i = 0; i < info.nr_map_ids && i < n && !err; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]), *slot = NULL;

		if (fd < 0) {
			err = -errno;
			break;
		}
		if (bpf_obj_get_info_by_fd(fd, &mi, &mlen)) {
			err = -errno;
			close(fd);
			break;
		}
		for (int m = 0; m < XM_MAX; m++)
			if (!strcmp(mi.name, map_names[m]))
				slot = &x->fd[m];
		if (slot && *slot < 0)
			*slot = fd;
		else
			close(fd);
	}
	free(ids);
	return err;
}

struct xdp_program *xdpr_find_ours(struct xdp_multiprog *mp)
{
	struct xdp_program *p = xdp_multiprog__main_prog(mp);

	if (xdp_multiprog__is_legacy(mp))
		return p && !strcmp(xdp_program__name(p), XDPR_PROG_NAME) ? p : NULL;
	for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
		if (!strcmp(xdp_program__name(p), XDPR_PROG_NAME))
			return p;
	return NULL;
}

/* The BPF program id an open descriptor refers to (0: not a program, or closed). */
static __u32 fd_prog_id(int fd)
{
	char path[64], line[128];
	__u32 id = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "prog_id: %u", &id) == 1)
			break;
	if (f)
		fclose(f);
	return id;
}

#define MAX_SEEN_FDS 65536 /* descriptors above are never looked at (8 KiB a set) */

/* The descriptors of this process that refer to BPF programs, by number (bitmap). */
static void prog_fds(unsigned char *set)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	memset(set, 0, MAX_SEEN_FDS / 8);
	while (d && (e = readdir(d))) {
		int fd = atoi(e->d_name);
		char path[64], target[64];
		ssize_t n;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd >= MAX_SEEN_FDS || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n > 0 && (target[n] = 0, !strcmp(target, "anon_inode:bpf-prog")))
			set[fd / 8] |= 1 << (fd % 8);
	}
	if (d)
		closedir(d);
}

static bool mp_holds(struct xdp_multiprog *mp, int fd)
{
	struct xdp_program *p;

	if (xdp_program__fd(xdp_multiprog__main_prog(mp)) == fd ||
	    xdp_program__fd(xdp_multiprog__hw_prog(mp)) == fd)
		return true;
	for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
		if (xdp_program__fd(p) == fd)
			return true;
	return false;
}

/*
 * libxdp before 1.4.1 (Debian 12 ships 1.3.1) keeps a duplicate of the
 * program descriptor it opened by id and never closes the original: one
 * descriptor, and a hold on the program, lost per call.  The descriptors
 * that appeared during the call, refer to a program of the interface and
 * are not the ones the multiprog holds are those: closed here.  Nothing is
 * closed with a libxdp that does not leak.  libxdpr is single-threaded per
 * process (xdprd serialises every call): no other thread opens one meanwhile.
 */
struct xdp_multiprog *xdpr_get_multiprog(int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	unsigned char before[MAX_SEEN_FDS / 8], after[MAX_SEEN_FDS / 8];
	struct xdp_multiprog *mp;

	if (bpf_xdp_query(ifindex, 0, &q))
		return NULL;
	if (!q.prog_id && !q.drv_prog_id && !q.skb_prog_id && !q.hw_prog_id) {
		errno = ENOENT;
		return NULL; /* nothing attached: libxdp is not asked (nor opens anything) */
	}
	prog_fds(before);
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (libxdp_get_error(mp))
		mp = NULL;
	prog_fds(after);
	for (int fd = 0; fd < MAX_SEEN_FDS; fd++) {
		__u32 id;

		if (!(after[fd / 8] & ~before[fd / 8] & 1 << (fd % 8)) || (mp && mp_holds(mp, fd)))
			continue;
		id = fd_prog_id(fd);
		if (id && (id == q.prog_id || id == q.drv_prog_id || id == q.skb_prog_id ||
			   id == q.hw_prog_id))
			close(fd);
	}
	return mp;
}

/*
 * xdpr's program on an interface: a descriptor of it (the caller closes it)
 * with l's mode, prog_id and dispatcher set, or -1.  A plain attach is
 * recognised from the kernel's answer alone; libxdp is asked only about its
 * dispatcher, whose components it knows.
 */
static int find_ours(int ifindex, struct xdpr_link *l)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), id;
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	int fd;

	if (bpf_xdp_query(ifindex, 0, &q))
		return -1;
	id = q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id;
	if (!id || (fd = bpf_prog_get_fd_by_id(id)) < 0)
		return -1;
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		close(fd);
		return -1;
	}
	if (!strcmp(info.name, XDPR_PROG_NAME)) {
		l->mode = id == q.drv_prog_id ? XDPR_MODE_NATIVE : XDPR_MODE_SKB;
		l->prog_id = id;
		l->dispatcher = false;
		return fd;
	}
	close(fd);
	if (strcmp(info.name, "xdp_dispatcher"))
		return -1; /* another program */
	mp = xdpr_get_multiprog(ifindex);
	p = mp ? xdpr_find_ours(mp) : NULL;
	fd = p ? fcntl(xdp_program__fd(p), F_DUPFD_CLOEXEC, 3) : -1;
	if (fd >= 0) {
		l->mode = xdp_multiprog__attach_mode(mp) == XDP_MODE_SKB ? XDPR_MODE_SKB : XDPR_MODE_NATIVE;
		l->prog_id = xdp_program__id(p);
		l->dispatcher = !xdp_multiprog__is_legacy(mp);
	}
	xdp_multiprog__close(mp);
	return fd;
}

int xdpr_netns_ino(unsigned long *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st))
		return -errno;
	*ino = st.st_ino;
	return 0;
}

/* Whether a network namespace of that inode is alive (a process in it, or an ip netns name). */
static bool netns_alive(unsigned long ino, const unsigned long *live, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (live[i] == ino)
			return true;
	return false;
}

static bool push_ino(unsigned long **v, size_t *n, size_t *cap, unsigned long ino)
{
	if (*n == *cap) {
		unsigned long *m = realloc(*v, (*cap *= 2) * sizeof(**v));

		if (!m)
			return false;
		*v = m;
	}
	(*v)[(*n)++] = ino;
	return true;
}

/*
 * The inodes of the network namespaces in use now: *out malloc'd, the
 * count returned.  *complete: every one could be looked at (a process with
 * more capabilities than ours, PID 1 in a container say, cannot: EACCES).
 */
static size_t live_netns(unsigned long **out, bool *complete)
{
	size_t n = 0, cap = 256;
	const char *dirs[2] = { "/proc", "/run/netns" };
	char line[1024], mnt[512];
	FILE *mi;

	*complete = true;
	*out = malloc(cap * sizeof(**out));
	if (!*out)
		return 0;
	for (int k = 0; k < 2; k++) {
		DIR *d = opendir(dirs[k]);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			char path[300];
			struct stat st;

			if (e->d_name[0] == '.' || (!k && (e->d_name[0] < '0' || e->d_name[0] > '9')))
				continue;
			snprintf(path, sizeof(path), k ? "%s/%s" : "%s/%s/ns/net", dirs[k], e->d_name);
			if (stat(path, &st)) {
				if (errno != ENOENT && errno != ESRCH) /* exited meanwhile: gone */
					*complete = false;
				continue;
			}
			if (!push_ino(out, &n, &cap, st.st_ino)) {
				closedir(d);
				*complete = false;
				return n;
			}
		}
		if (d)
			closedir(d);
	}
	/* namespaces kept by a bind mount only (ip netns add elsewhere, container runtimes) */
	mi = fopen("/proc/self/mountinfo", "r");
	while (mi && fgets(line, sizeof(line), mi)) {
		struct stat st;

		if (!strstr(line, " - nsfs ") || sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1 ||
		    stat(mnt, &st))
			continue;
		if (!push_ino(out, &n, &cap, st.st_ino)) {
			*complete = false;
			break;
		}
	}
	if (mi)
		fclose(mi);
	return n;
}

/* The lock of namespace ino taken without waiting: its fd, or -1 (held, or no file). */
static int lock_nb(unsigned long ino, bool create)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), XDPR_RUN_DIR "/netns-%lu.lock", ino);
	fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void remove_pins(const char *path)
{
	DIR *pd = opendir(path);
	struct dirent *pe;

	while (pd && (pe = readdir(pd))) {
		char pin[600];

		if (pe->d_name[0] == '.')
			continue;
		snprintf(pin, sizeof(pin), "%s/%s", path, pe->d_name);
		unlink(pin);
	}
	if (pd)
		closedir(pd);
	rmdir(path);
}

/*
 * Lock files and bpffs pins of network namespaces that are gone.  A lock
 * file is unlinked only while this process holds it, and a locker checks
 * that the file it locked is still the one the path names (lock_netns):
 * safe even if the namespace lives on unseen.  Pins are removed only when
 * every namespace could be seen, under that namespace's lock, and after
 * looking again (an inode is reused at once by a new namespace).
 */
static void sweep_dead_netns(unsigned long self)
{
	static const char *dirs[2] = { XDPR_RUN_DIR, XDPR_PIN_DIR };
	unsigned long *live;
	bool complete;
	size_t nlive = live_netns(&live, &complete);

	if (!live || !nlive) {
		free(live);
		return;
	}
	for (int k = 0; k < 2; k++) {
		DIR *d = k && !complete ? NULL : opendir(dirs[k]);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			char path[300], tail[16] = "";
			unsigned long ino;
			int fd;

			if (sscanf(e->d_name, "netns-%lu%15s", &ino, tail) < 1 || ino == self ||
			    netns_alive(ino, live, nlive) || (!k && strcmp(tail, ".lock")) || (k && tail[0]))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dirs[k], e->d_name);
			fd = lock_nb(ino, k);
			if (fd < 0)
				continue;
			if (k) {
				unsigned long *again;
				bool all;
				size_t n2 = live_netns(&again, &all);

				if (again && all && n2 && !netns_alive(ino, again, n2))
					remove_pins(path);
				free(again);
			}
			snprintf(path, sizeof(path), XDPR_RUN_DIR "/netns-%lu.lock", ino);
			unlink(path);
			close(fd);
		}
		if (d)
			closedir(d);
	}
	free(live);
}

static int lock_netns(struct xdpr *x)
{
	unsigned long ino = 0;
	char path[64];
	int fd = -1, err;

	/* One lock per network namespace: its inode names it uniquely while it lives. */
	err = xdpr_netns_ino(&ino);
	if (err) {
		seterr(x, "cannot identify the network namespace: %s", strerror(-err));
		return err;
	}
	if (mkdir(XDPR_RUN_DIR, 0700) && errno != EEXIST) {
		seterr(x, "cannot create %s: %s", XDPR_RUN_DIR, strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), XDPR_RUN_DIR "/netns-%lu.lock", ino);
	for (int tries = 0; tries < 100; tries++) {
		struct stat a, b;

		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0 || flock(fd, LOCK_EX)) {
			err = -errno;
			if (fd >= 0)
				close(fd);
			seterr(x, "cannot lock %s: %s", path, strerror(-err));
			return err;
		}
		/* the file locked is still the one named (a sweep unlinks only what it holds) */
		if (!fstat(fd, &a) && !stat(path, &b) && a.st_ino == b.st_ino)
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		seterr(x, "cannot lock %s: it keeps being replaced", path);
		return -EAGAIN;
	}
	x->lock_fd = fd;
	sweep_dead_netns(ino);
	return 0;
}

/*
 * A NAT table freeze left by a resize that died (loader/nat_tab.c): a
 * resize holds the lock from start to end, so with the lock taken none is
 * running.  The packet path would end it at its deadline; end it now.
 */
static void lift_dead_freeze(struct xdpr *x)
{
	static const __u32 zero;
	struct xdpr_cfg c;

	if (x->fd[XM_CFG] < 0 || bpf_map_lookup_elem(x->fd[XM_CFG], &zero, &c) || !c.nat_frozen_until)
		return;
	c.nat_frozen_until = 0;
	if (!bpf_map_update_elem(x->fd[XM_CFG], &zero, &c, BPF_ANY))
		snprintf(x->note, sizeof(x->note), "a NAT table resize that did not finish left a freeze: lifted");
}

/* CAP_SYS_ADMIN in the effective set: without it the router's programs cannot be found. */
static bool privileged(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	unsigned long long eff = 0;
	char line[256];
	bool found = false;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			found = true;
			break;
		}
	if (f)
		fclose(f);
	if (!found) /* no /proc: let the kernel decide */
		return true;
	return eff >> 21 & 1; /* finding the router: BPF_PROG_GET_FD_BY_ID and map ids */
}

int xdpr_open(struct xdpr *x, unsigned int flags)
{
	struct if_nameindex *ifs, *it;
	int err;

	memset(x, 0, sizeof(*x));
	for (int m = 0; m < XM_MAX; m++)
		x->fd[m] = -1;
	x->lock_fd = -1;
	xdpr_quiet_libs();
	if (!privileged()) {
		/* unprivileged, the programs of the interfaces cannot be seen: never say "not attached" */
		seterr(x, "xdpr needs root: finding the router's programs and maps takes "
			  "CAP_SYS_ADMIN");
		return -EPERM;
	}
	if (flags & XDPR_O_LOCK) {
		err = lock_netns(x);
		if (err)
			return err;
	}

	ifs = if_nameindex();
	if (!ifs) {
		err = -errno;
		seterr(x, "cannot list interfaces: %s", strerror(-err));
		return err;
	}
	for (it = ifs; it->if_index && x->nlinks < XDPR_MAX_IFACES; it++) {
		struct xdpr_link *l = &x->links[x->nlinks];
		int fd;

		memset(l, 0, sizeof(*l));
		fd = find_ours(it->if_index, l);
		if (fd < 0)
			continue;
		x->nlinks++;
		snprintf(l->name, sizeof(l->name), "%s", it->if_name);
		l->ifindex = it->if_index;
		prog_ident(fd, l);
		l->since = prog_since(fd);
		err = adopt_maps(x, fd);
		close(fd);
		if (err) {
			if_freenameindex(ifs);
			seterr(x, "cannot read the maps of program %u on \"%s\": %s",
			       l->prog_id, l->name, strerror(-err));
			return err;
		}
	}
	if_freenameindex(ifs);

	for (int i = 0; i < x->nlinks && x->fd[XM_IFACES] >= 0; i++) {
		struct xdpr_link *l = &x->links[i];
		__u64 t = 0;

		l->has_cfg = !bpf_map_lookup_elem(x->fd[XM_IFACES], &l->ifindex, &l->cfg);
		/* one program serves every interface: its load time is the first attach's */
		if (l->has_cfg && x->fd[XM_SINCE] >= 0 &&
		    !bpf_map_lookup_elem(x->fd[XM_SINCE], &l->cfg.slot, &t) && t)
			l->since = t;
	}
	/* the VLANs of those ports: their settings say so (xdpr_vlan_sync keeps them) */
	for (__u32 key, *prev = NULL, n = x->nlinks; x->fd[XM_IFACES] >= 0 && x->nlinks < XDPR_MAX_IFACES &&
	     !bpf_map_get_next_key(x->fd[XM_IFACES], prev, &key); prev = &key) {
		struct xdpr_link *l = &x->links[x->nlinks], *port = NULL;
		__u64 t = 0;

		memset(l, 0, sizeof(*l));
		if (bpf_map_lookup_elem(x->fd[XM_IFACES], &key, &l->cfg) || !(l->cfg.flags & XDPR_IF_VLAN) ||
		    !if_indextoname(key, l->name))
			continue;
		for (__u32 i = 0; i < n && !port; i++)
			if (x->links[i].ifindex == l->cfg.parent)
				port = &x->links[i];
		if (!port)
			continue; /* its port is not attached (any more): the next sync takes it out */
		l->ifindex = key;
		l->has_cfg = true;
		l->mode = port->mode;
		l->prog_id = port->prog_id;
		memcpy(l->prog_tag, port->prog_tag, sizeof(l->prog_tag));
		memcpy(l->build, port->build, sizeof(l->build));
		l->dispatcher = port->dispatcher;
		l->since = port->since;
		l->parent = port->ifindex;
		l->vid = l->cfg.vid;
		memcpy(l->parent_name, port->name, sizeof(l->parent_name));
		if (x->fd[XM_SINCE] >= 0 && !bpf_map_lookup_elem(x->fd[XM_SINCE], &l->cfg.slot, &t) && t)
			l->since = t;
		x->nlinks++;
	}
	/* slots named for an interface that is not attached now: gone, or re-created */
	for (__u32 slot = 1; slot < XDPR_MAX_IFACES && x->fd[XM_SLOTS] >= 0; slot++) {
		struct xdpr_slot_name sn;
		bool live = false;

		if (bpf_map_lookup_elem(x->fd[XM_SLOTS], &slot, &sn) || !sn.name[0])
			continue;
		sn.name[IF_NAMESIZE - 1] = 0;
		for (int i = 0; i < x->nlinks && !live; i++)
			if (x->links[i].has_cfg && x->links[i].cfg.slot == slot) {
				live = true;
				x->links[i].forced = sn.mode & XDPR_SLOT_FORCED;
			}
		if (live)
			continue;
		struct xdpr_gone *g = &x->gone[x->ngone++];

		snprintf(g->name, sizeof(g->name), "%s", sn.name);
		g->old_ifindex = sn.ifindex;
		g->mode = (sn.mode & 0xff) == XDPR_MODE_SKB ? XDPR_MODE_SKB : XDPR_MODE_NATIVE;
		g->forced = sn.mode & XDPR_SLOT_FORCED;
		g->slot = slot;
		g->recreated = if_nametoindex(sn.name) != 0;
		g->vlan = sn.mode & XDPR_SLOT_VLAN;
		g->parent = sn.parent;
	}
	for (int m = 0; m < XM_MAX && x->nlinks; m++)
		if (x->fd[m] < 0 && !map_optional(m)) {
			/* xdpr_detach() still works on such a router: it needs no map */
			seterr(x, "map %s not found: the attached program is of another xdpr version "
				  "(detach it with \"xdpr link detach all\")", map_names[m]);
			return -ESTALE;
		}
	if (!x->nlinks) {
		seterr(x, "xdpr is not attached to any interface in this network namespace");
		return -ENOENT;
	}
	if (x->lock_fd >= 0) {
		/*
		 * A command killed between writing xdpr_ifaces and moving its
		 * generation left CPUs on their copies of the old settings: the
		 * next one under the lock moves it (best effort, as below).
		 */
		xdpr_ifaces_changed(x);
		xdpr_prune_dead_ifaces(x); /* best effort: the next command tries again */
		lift_dead_freeze(x);
	}
	return 0;
}

bool xdpr_fault(const char *point, const char *dev)
{
	const char *p = getenv("XDPR_FAULT");
	size_t plen = strlen(point), dlen = strlen(dev);

	for (; p && *p; p += *p == ',') {
		size_t len = strcspn(p, ",");

		if (len >= plen && !strncmp(p, point, plen) &&
		    (len == plen || (len == plen + 1 + dlen && p[plen] == ':' &&
				     !strncmp(p + plen + 1, dev, dlen))))
			return true;
		p += len;
	}
	return false;
}

int xdpr_ifaces_changed(struct xdpr *x)
{
	long page = sysconf(_SC_PAGESIZE);
	__u32 gen, zero = 0;
	void *p;

	if (x->fd[XM_IF_GEN] < 0)
		return 0; /* no map: no program that reads copies */
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, x->fd[XM_IF_GEN], 0);
	if (p != MAP_FAILED) {
		/* atomic: two processes that change interfaces at once both move it */
		__atomic_add_fetch((__u32 *)p, 1, __ATOMIC_SEQ_CST);
		munmap(p, page);
		return 0;
	}
	if (bpf_map_lookup_elem(x->fd[XM_IF_GEN], &zero, &gen) == 0) {
		gen++;
		if (bpf_map_update_elem(x->fd[XM_IF_GEN], &zero, &gen, BPF_ANY) == 0)
			return 0;
	}
	gen = errno;
	seterr(x, "cannot move the interface settings' generation: %s", strerror(gen));
	errno = gen;
	return -(int)gen;
}

int xdpr_iface_del(struct xdpr *x, __u32 ifindex)
{
	int err = 0, moved;

	if (bpf_map_delete_elem(x->fd[XM_IFACES], &ifindex))
		err = -errno;
	if (err && err != -ENOENT)
		return err;
	moved = xdpr_ifaces_changed(x);
	return moved ? moved : err;
}

int xdpr_iface_put(struct xdpr *x, __u32 ifindex, const struct xdpr_iface *c, __u64 flags)
{
	struct xdpr_vlan_cfg v = { .ifindex = ifindex, .cfg = *c };
	__u32 slot = c->slot;
	int err;

	if (bpf_map_update_elem(x->fd[XM_IFACES], &ifindex, c, flags))
		return -errno;
	xdpr_crash_point("iface", "written"); /* before the generation moves (nat_kill9.t) */
	err = xdpr_ifaces_changed(x);
	if (err)
		return err;
	if (!(c->flags & XDPR_IF_VLAN) || !slot || slot >= XDPR_MAX_IFACES || x->fd[XM_VLAN_CFG] < 0)
		return 0;
	return bpf_map_update_elem(x->fd[XM_VLAN_CFG], &slot, &v, BPF_ANY) ? -errno : 0;
}

int xdpr_vlan_unset(struct xdpr *x, __u32 ifindex, const struct xdpr_iface *c)
{
	struct xdpr_iface port;
	struct xdpr_vlan_cfg v;
	__u32 slot = c->slot, cur, zero = 0;
	long key;

	if (!(c->flags & XDPR_IF_VLAN) || !slot || slot >= XDPR_MAX_IFACES || x->fd[XM_VLAN_CFG] < 0)
		return 0;
	if (x->fd[XM_VLANS] >= 0 && !bpf_map_lookup_elem(x->fd[XM_IFACES], &c->parent, &port) &&
	    !(port.flags & XDPR_IF_VLAN) && (key = xdpr_vid_key(port.trunk, c->vid)) >= 0) {
		__u32 k = key;

		if (!bpf_map_lookup_elem(x->fd[XM_VLANS], &k, &cur) && cur == slot &&
		    bpf_map_update_elem(x->fd[XM_VLANS], &k, &zero, BPF_ANY))
			return -errno;
	}
	if (bpf_map_lookup_elem(x->fd[XM_VLAN_CFG], &slot, &v) || v.ifindex != ifindex)
		return 0;
	memset(&v, 0, sizeof(v));
	return bpf_map_update_elem(x->fd[XM_VLAN_CFG], &slot, &v, BPF_ANY) ? -errno : 0;
}

int xdpr_prune_dead_ifaces(struct xdpr *x)
{
	__u32 dead[XDPR_MAX_IFACES], key, *prev = NULL;
	int ndead = 0, nvlan = 0, err = 0, e;

	if (x->fd[XM_IFACES] < 0)
		return 0;
	/* collect first: deleting while walking with get_next_key restarts or repeats the walk */
	while (ndead < XDPR_MAX_IFACES && !bpf_map_get_next_key(x->fd[XM_IFACES], prev, &key)) {
		char name[IF_NAMESIZE];

		if (!if_indextoname(key, name) && errno == ENXIO)
			dead[ndead++] = key;
		prev = &key;
	}
	for (int i = 0; i < ndead; i++) {
		struct xdpr_iface c;

		/* a deleted VLAN is xdpr_vlan_sync's: it takes it out in order and says so */
		if (!bpf_map_lookup_elem(x->fd[XM_IFACES], &dead[i], &c) && (c.flags & XDPR_IF_VLAN)) {
			nvlan++;
			continue;
		}
		e = xdpr_iface_del(x, dead[i]);
		if (e && e != -ENOENT && !err) {
			err = e;
			seterr(x, "cannot remove the settings of deleted interface %u: %s", dead[i],
			       strerror(-err));
		}
	}
	return err ? err : ndead - nvlan;
}

int xdpr_refresh(struct xdpr *x)
{
	int lock = x->lock_fd, err;

	x->lock_fd = -1; /* kept: the caller still holds it */
	xdpr_close(x);
	err = xdpr_open(x, 0);
	x->lock_fd = lock;
	return err == -ENOENT ? 0 : err;
}

int xdpr_nf_follow(struct xdpr *x, struct xdpr_nf_report *nf)
{
	static struct xdpr_nf_report scratch;
	char *devs[XDPR_MAX_IFACES];
	bool acked = true;
	struct xdpr_cfg c;
	__u32 zero = 0, want;
	int n = 0, ret, ports = 0;

	if (!nf)
		nf = &scratch;
	memset(nf, 0, sizeof(*nf));
	x->nf_followed = true;
	if (x->fd[XM_CFG] < 0 || !x->nlinks)
		return 0;
	for (int i = 0; i < x->nlinks; i++) {
		devs[n++] = x->links[i].name;
		if (!x->links[i].parent) {
			ports++;
			acked &= x->links[i].forced;
		}
	}
	ret = xdpr_nf_check(x, devs, n, nf);
	if (ret < 0)
		return ret; /* unreadable: the fast path stays as it was */
	want = ret > 0 && !(acked && ports) ? XDPR_CFG_NFT_POLICY : 0;
	if (bpf_map_lookup_elem(x->fd[XM_CFG], &zero, &c)) {
		seterr(x, "cannot read the configuration: %s", strerror(errno));
		return -errno;
	}
	if ((c.flags & XDPR_CFG_NFT_POLICY) != want) {
		c.flags = (c.flags & ~XDPR_CFG_NFT_POLICY) | want;
		if (bpf_map_update_elem(x->fd[XM_CFG], &zero, &c, BPF_EXIST)) {
			seterr(x, "cannot write the configuration: %s", strerror(errno));
			return -errno;
		}
	}
	return want ? 1 : ret > 0 ? 2 : 0;
}

/*
 * The end of a change under the lock: netfilter looked at again on the
 * router as it is now (a view of its own: x stays as the caller left it,
 * its messages included).  Best effort: a ruleset that cannot be read
 * leaves the fast path as it was.
 */
static void nf_follow_now(const struct xdpr *x)
{
	struct xdpr *v = calloc(1, sizeof(*v));

	if (!v)
		return;
	if (!xdpr_open(v, 0) && v->fd[XM_CFG] >= 0 && x->fd[XM_CFG] >= 0)
		xdpr_nf_follow(v, NULL);
	xdpr_close(v);
	free(v);
}

void xdpr_close(struct xdpr *x)
{
	if (x->lock_fd >= 0 && !x->nf_followed && x->fd[XM_CFG] >= 0)
		nf_follow_now(x);
	for (int m = 0; m < XM_MAX; m++) {
		if (x->fd[m] >= 0)
			close(x->fd[m]);
		x->fd[m] = -1;
	}
	if (x->lock_fd >= 0)
		close(x->lock_fd);
	x->lock_fd = -1;
}

const struct xdpr_link *xdpr_link_find(const struct xdpr *x, const char *name)
{
	for (int i = 0; i < x->nlinks; i++)
		if (!strcmp(x->links[i].name, name))
			return &x->links[i];
	return NULL;
}

int xdpr_ncpus(void)
{
	return libbpf_num_possible_cpus();
}

unsigned int xdpr_kernel_hz(void)
{
	static unsigned int hz;
	char path[128], line[256];
	struct utsname u;
	gzFile f = NULL;

	if (hz)
		return hz;
	/* where libbpf looks for the kernel's config; gzopen reads plain files too */
	if (!uname(&u)) {
		snprintf(path, sizeof(path), "/boot/config-%s", u.release);
		f = gzopen(path, "re");
	}
	if (!f)
		f = gzopen("/proc/config.gz", "re");
	while (f && gzgets(f, line, sizeof(line)))
		if (sscanf(line, "CONFIG_HZ=%u", &hz) == 1)
			break;
	if (f)
		gzclose(f);
	if (!hz || hz > 100000)
		hz = XDPR_HZ_UNKNOWN;
	return hz;
}

/*
 * Before the program loads: the tick rate, the churn threshold for this
 * machine's CPUs and the size of their copy sets (xdpr_shared.h).
 */
void xdpr_skel_prepare(struct xdpr_bpf *skel)
{
	int cpus = xdpr_ncpus();
	__u32 regions = cpus > 0 ? cpus : 1;

	skel->rodata->xdpr_hz = xdpr_kernel_hz();
	snprintf((char *)skel->rodata->xdpr_build, sizeof(skel->rodata->xdpr_build), "%s", XDPR_BPF_ID);
	if (cpus > 0)
		skel->rodata->xdpr_flt_churn_n = XDPR_FLT_CHURN_N(cpus);
	/* a region of copy sets for each possible CPU (xdpr_shared.h, xdpr_flt_hot, xdpr_flt_hot6) */
	bpf_map__set_max_entries(skel->maps.xdpr_flt_hot, regions << XDPR_FLT_HOT_BITS);
	bpf_map__set_max_entries(skel->maps.xdpr_flt_hot6, (regions << XDPR_FLT_HOT6_BITS) * XDPR_FLT_HOT6_WAYS);
}

int xdpr_percpu_zero(int fd, __u32 first, __u32 n)
{
	int ncpu = xdpr_ncpus(), err = 0;
	__u64 *z;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	z = calloc(ncpu, sizeof(*z));
	if (!z)
		return -ENOMEM;
	for (__u32 k = first; k < first + n && !err; k++)
		if (bpf_map_update_elem(fd, &k, z, BPF_ANY))
			err = -errno;
	free(z);
	return err;
}

int xdpr_stats_read(struct xdpr *x, __u32 slot, struct xdpr_slot *percpu)
{
	if (bpf_map_lookup_elem(x->fd[XM_STATS], &slot, percpu)) {
		seterr(x, "cannot read counters: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* A shared map's index, by name; -1 for the rest (the program's own, its global data among them). */
static int map_index(const char *name)
{
	for (int m = 0; m < XM_MAX; m++)
		if (m != XM_BSS && !strcmp(name, map_names[m]))
			return m;
	return -1;
}

/* Shape of the route table and filter inner maps (from the skeleton), for building new ones. */
struct map_proto {
	enum bpf_map_type type;
	__u32 key, value, max, flags;
	const char *name;
};
static struct map_proto rt_proto[XDPR_RT_MAPS], flt_proto[XDPR_FI_MAPS], nat_proto[XDPR_NT_MAPS];

/* The NAT outer maps, by enum xdpr_nat_tab. */
const int xdpr_nat_outer[XDPR_NT_MAPS] = { XM_CT, XM_BIND, XM_EIM, XM_HOSTS, XM_RING, XM_FLOWS, XM_CTA };

/* Is outer map name one of the NAT tables'? */
static bool nat_outer_name(const char *name)
{
	for (int t = 0; t < XDPR_NT_MAPS; t++)
		if (!strcmp(name, map_names[xdpr_nat_outer[t]]))
			return true;
	return false;
}

static void set_proto(struct map_proto *p, const struct bpf_map *in, const char *name)
{
	*p = (struct map_proto){ bpf_map__type(in), bpf_map__key_size(in), bpf_map__value_size(in),
				 bpf_map__max_entries(in), bpf_map__map_flags(in), name };
}

/* A map of that shape with that many entries (0: the definition's); fd or -errno. */
static int proto_create(const struct map_proto *p, __u32 entries)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = p->flags);
	int fd = bpf_map_create(p->type, p->name, p->key, p->value, entries ? entries : p->max, &o);

	return fd < 0 ? -errno : fd;
}

/*
 * A session slot array of shape p for that many sessions (0: an idle
 * slot's, room for XDPR_NAT_TINY halves), its header written; fd or -errno.
 */
static int cta_create(const struct map_proto *p, __u32 sessions)
{
	__u32 room = sessions ? sessions : XDPR_NAT_TINY / 2;
	int fd = proto_create(p, xdpr_nat_entries(XDPR_NT_CTA, room)), err;

	if (fd >= 0 && (err = xdpr_ct_init(fd, xdpr_ct_slots(room), 2 * room))) {
		close(fd);
		return err;
	}
	return fd;
}

/*
 * A map like the inner map definition of outer map m, for its slot: a NAT
 * table's idle slot gets an XDPR_NAT_TINY-entry table (it is replaced whole
 * when used).
 */
static int create_like(struct bpf_map *m, __u32 slot)
{
	const char *name = bpf_map__name(m);
	bool nat = nat_outer_name(name);
	struct map_proto p;

	set_proto(&p, bpf_map__inner_map(m),
		  nat ? "xdpr_nat_tab" : strncmp(name, "xdpr_flt", 8) ? "xdpr_rt_inner" : "xdpr_flt_inner");
	if (!strcmp(name, map_names[XM_CTA]))
		return cta_create(&p, slot ? 0 : XDPR_NAT_DEF_SESS);
	return proto_create(&p, nat && slot ? XDPR_NAT_TINY : 0);
}

/* The route table and filter inner map definitions of an opened (not loaded) skeleton. */
static void set_protos(struct xdpr_bpf *skel)
{
	static const char rt[] = "xdpr_rt_inner", flt[] = "xdpr_flt_inner";

	set_proto(&rt_proto[XDPR_RT_DIR], bpf_map__inner_map(skel->maps.xdpr_rtdir), rt);
	set_proto(&rt_proto[XDPR_RT_REC], bpf_map__inner_map(skel->maps.xdpr_rtrec), rt);
	set_proto(&rt_proto[XDPR_RT_NH], bpf_map__inner_map(skel->maps.xdpr_rtnh), rt);
	set_proto(&flt_proto[XDPR_FI_WORD], bpf_map__inner_map(skel->maps.xdpr_flt_word), flt);
	set_proto(&flt_proto[XDPR_FI_DESC], bpf_map__inner_map(skel->maps.xdpr_flt_desc), flt);
	set_proto(&flt_proto[XDPR_FI_VAL], bpf_map__inner_map(skel->maps.xdpr_flt_val), flt);
	set_proto(&flt_proto[XDPR_FI_RULE], bpf_map__inner_map(skel->maps.xdpr_flt_rule), flt);
	set_proto(&flt_proto[XDPR_FI_LPM4], bpf_map__inner_map(skel->maps.xdpr_flt_lpm4), flt);
	set_proto(&flt_proto[XDPR_FI_LPM6], bpf_map__inner_map(skel->maps.xdpr_flt_lpm6), flt);
	set_proto(&flt_proto[XDPR_FI_IF], bpf_map__inner_map(skel->maps.xdpr_flt_if), flt);
	set_proto(&nat_proto[XDPR_NT_CT], bpf_map__inner_map(skel->maps.xdpr_nat_ct), "xdpr_nat_tab");
	set_proto(&nat_proto[XDPR_NT_BIND], bpf_map__inner_map(skel->maps.xdpr_nat_bind), "xdpr_nat_tab");
	set_proto(&nat_proto[XDPR_NT_EIM], bpf_map__inner_map(skel->maps.xdpr_nat_eim), "xdpr_nat_tab");
	set_proto(&nat_proto[XDPR_NT_HOSTS], bpf_map__inner_map(skel->maps.xdpr_nat_hosts), "xdpr_nat_tab");
	set_proto(&nat_proto[XDPR_NT_RING], bpf_map__inner_map(skel->maps.xdpr_nat_ring), "xdpr_nat_tab");
	set_proto(&nat_proto[XDPR_NT_FLOWS], bpf_map__inner_map(skel->maps.xdpr_flt_flows), "xdpr_nat_tab");
	set_proto(&nat_proto[XDPR_NT_CTA], bpf_map__inner_map(skel->maps.xdpr_nat_cta), "xdpr_nat_tab");
}

/* The inner map prototypes, read from the BPF object once. */
static int need_protos(struct xdpr *x)
{
	struct xdpr_bpf *skel;

	if (rt_proto[0].key)
		return 0;
	skel = xdpr_bpf__open();
	if (!skel) {
		seterr(x, "cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	set_protos(skel);
	xdpr_bpf__destroy(skel);
	return 0;
}

/*
 * A new inner map for a route table slot: XDPR_RT_DIR (index blocks),
 * XDPR_RT_REC (records) or XDPR_RT_NH (next hops) with that many entries;
 * 0 entries: the definition's (an empty table).
 */
int xdpr_rt_new_map(struct xdpr *x, int which, __u32 entries)
{
	struct map_proto *p = &rt_proto[which];
	int fd = need_protos(x);

	if (fd)
		return fd;
	fd = proto_create(p, entries);
	if (fd < 0)
		seterr(x, "cannot create a route table of %u entries: %s", entries ? entries : p->max,
		       strerror(-fd));
	return fd;
}

/*
 * A new inner map for a filter slot (enum xdpr_flt_inner) with that many
 * entries; 0, and always for the fixed-size ones (value array, LPM tries,
 * interface hash): the definition's.
 */
int xdpr_flt_new_map(struct xdpr *x, int which, __u32 entries)
{
	struct map_proto *p = &flt_proto[which];
	int fd = need_protos(x);

	if (fd)
		return fd;
	if (!(p->flags & BPF_F_INNER_MAP))
		entries = 0; /* its size is part of the outer map's type */
	fd = proto_create(p, entries);
	if (fd < 0)
		seterr(x, "cannot create a filter map of %u entries: %s", entries ? entries : p->max,
		       strerror(-fd));
	return fd;
}

int xdpr_nat_protos(struct xdpr *x)
{
	return need_protos(x);
}

/* A NAT table's entries for a table of that many sessions (xdpr_nat_tab). */
__u32 xdpr_nat_entries(int which, __u32 sessions)
{
	if (which == XDPR_NT_FLOWS)
		return sessions > XDPR_FLT_FLOWS ? sessions : XDPR_FLT_FLOWS;
	if (which == XDPR_NT_CTA)
		return XDPR_CT_FIRST + xdpr_ct_slots(sessions);
	return which == XDPR_NT_CT ? 2 * sessions : sessions;
}

/*
 * A new NAT table (enum xdpr_nat_tab) for that many sessions (0: a table of
 * XDPR_NAT_TINY entries, for an idle slot); fd or -errno.
 */
int xdpr_nat_new_map(struct xdpr *x, int which, __u32 sessions)
{
	int fd = need_protos(x);

	if (fd)
		return fd;
	if (which == XDPR_NT_CTA)
		fd = cta_create(&nat_proto[which], sessions);
	else
		fd = proto_create(&nat_proto[which], sessions ? xdpr_nat_entries(which, sessions) : XDPR_NAT_TINY);
	if (fd < 0)
		seterr(x, "cannot create a NAT table for %u sessions: %s", sessions, strerror(-fd));
	return fd;
}

/*
 * The shape of a NAT table: key and value sizes; *alloc: a hash map that
 * allocates per entry (BPF_F_NO_PREALLOC) rather than all at creation.
 */
void xdpr_nat_shape(int which, __u32 *key, __u32 *value, bool *hash, bool *alloc)
{
	*key = nat_proto[which].key;
	*value = nat_proto[which].value;
	*hash = nat_proto[which].type != BPF_MAP_TYPE_ARRAY;
	*alloc = *hash && (nat_proto[which].flags & BPF_F_NO_PREALLOC);
}

/* The NAT table (enum xdpr_nat_tab) in slot of its outer map: a new fd, or -errno. */
int xdpr_nat_tab_fd(struct xdpr *x, int which, __u32 slot)
{
	__u32 id;
	int fd;

	if (bpf_map_lookup_elem(x->fd[xdpr_nat_outer[which]], &slot, &id) ||
	    (fd = bpf_map_get_fd_by_id(id)) < 0) {
		seterr(x, "cannot open the NAT table %s[%u]: %s", map_names[xdpr_nat_outer[which]], slot,
		       strerror(errno));
		return -errno;
	}
	return fd;
}

int xdpr_inner_copy(struct xdpr *x, int outer, __u32 slot, const char *what, void **out,
		    struct bpf_map_info *info)
{
	__u32 len = sizeof(*info), id;
	void *m, *v = NULL;
	size_t bytes;
	int fd, err = 0;

	*out = NULL;
	memset(info, 0, sizeof(*info));
	if (bpf_map_lookup_elem(outer, &slot, &id) || (fd = bpf_map_get_fd_by_id(id)) < 0) {
		err = -errno;
		seterr(x, "cannot open %s: %s", what, strerror(-err));
		return err;
	}
	if (bpf_obj_get_info_by_fd(fd, info, &len)) {
		err = -errno;
		seterr(x, "cannot read %s: %s", what, strerror(-err));
		goto out;
	}
	bytes = (size_t)info->max_entries * info->value_size;
	if (!bytes)
		goto out; /* an empty map: no copy, the caller judges */
	v = malloc(bytes);
	m = v ? mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (m == MAP_FAILED) {
		err = v ? -errno : -ENOMEM;
		seterr(x, "cannot read %s: %s", what, strerror(-err));
		free(v);
		goto out;
	}
	memcpy(v, m, bytes);
	munmap(m, bytes);
	*out = v;
out:
	close(fd);
	return err;
}

/*
 * The flow meter's table is preallocated: allocated as flows came, its
 * scattered per-CPU values cost 3.2 us a packet at 65,536 flows against
 * 0.8 us preallocated (bench/README.md, "Flow meter").  At most 64 MiB of
 * values, 16384 flows at least, XDPR_METER_MAX at most.
 */
static void meter_size(struct xdpr_bpf *skel)
{
	int n = xdpr_ncpus();
	__u64 per = (__u64)sizeof(struct xdpr_meter_val) * (n > 0 ? n : 1) + 128, max = (64ULL << 20) / per;

	if (max > XDPR_METER_MAX)
		max = XDPR_METER_MAX;
	if (max < 16384)
		max = 16384;
	bpf_map__set_max_entries(skel->maps.xdpr_flows, (__u32)max);
}

/* Create the shared maps from the skeleton's own definitions. */
int xdpr_create_maps(struct xdpr *x)
{
	struct xdpr_bpf *skel = xdpr_bpf__open();
	struct bpf_map *m;
	int err = 0;

	if (!skel) {
		seterr(x, "cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	meter_size(skel);
	bpf_map__set_max_entries(skel->maps.xdpr_natlog, XDPR_NATLOG_BYTES);
	bpf_map__set_max_entries(skel->maps.xdpr_nbr_req, XDPR_NBR_REQ_BYTES);
	bpf_map__set_max_entries(skel->maps.xdpr_ddos_slots, XDPR_DDOS_SLOTS * (xdpr_ncpus() > 0 ? xdpr_ncpus() : 1));
	bpf_object__for_each_map(m, skel->obj) {
		LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = bpf_map__map_flags(m));
		struct bpf_map *inner = bpf_map__inner_map(m);
		int i = map_index(bpf_map__name(m)), fd, tfd = -1;

		if (i < 0)
			continue; /* per-instance (internal) map */
		if (inner) {
			tfd = create_like(m, 0);
			if (tfd < 0) {
				err = tfd;
				seterr(x, "cannot create the inner map of %s: %s", bpf_map__name(m),
				       strerror(-err));
				break;
			}
			o.inner_map_fd = tfd;
		}
		fd = bpf_map_create(bpf_map__type(m), bpf_map__name(m), bpf_map__key_size(m),
				    bpf_map__value_size(m), bpf_map__max_entries(m), &o);
		if (fd < 0) {
			err = -errno;
			seterr(x, "cannot create map %s: %s", bpf_map__name(m), strerror(-err));
			if (tfd >= 0)
				close(tfd);
			break;
		}
		x->fd[i] = fd;
		/* every slot of an array of maps holds a (so far empty) map from the start */
		for (__u32 k = 0; inner && !err && k < bpf_map__max_entries(m); k++) {
			int ifd = create_like(m, k);

			if (ifd < 0 || bpf_map_update_elem(fd, &k, &ifd, BPF_ANY))
				err = ifd < 0 ? ifd : -errno;
			if (ifd >= 0)
				close(ifd);
		}
		if (tfd >= 0)
			close(tfd);
		if (err) {
			seterr(x, "cannot fill map %s: %s", bpf_map__name(m), strerror(-err));
			break;
		}
	}
	if (!err)
		set_protos(skel);
	xdpr_bpf__destroy(skel);
	return err;
}

/* The attach-time map (XM_SINCE), created when missing: fd or -errno. */
static int since_map(struct xdpr *x)
{
	if (x->fd[XM_SINCE] < 0) {
		int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, map_names[XM_SINCE], sizeof(__u32),
					sizeof(__u64), XDPR_MAX_IFACES, NULL);

		if (fd < 0)
			return -errno;
		x->fd[XM_SINCE] = fd;
	}
	return x->fd[XM_SINCE];
}

int xdpr_since_set(struct xdpr *x, int prog_fd, __u32 slot)
{
	__u64 now = time(NULL);
	int fd = since_map(x);

	/* bound to the program so that xdpr_open finds it with the others */
	if (fd < 0 || bpf_prog_bind_map(prog_fd, fd, NULL) ||
	    bpf_map_update_elem(fd, &slot, &now, BPF_ANY))
		return fd < 0 ? fd : -errno;
	return 0;
}

/* The slot-name map (XM_SLOTS), created when missing: fd or -errno. */
static int slots_map(struct xdpr *x)
{
	if (x->fd[XM_SLOTS] < 0) {
		int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, map_names[XM_SLOTS], sizeof(__u32),
					sizeof(struct xdpr_slot_name), XDPR_MAX_IFACES, NULL);

		if (fd < 0)
			return -errno;
		x->fd[XM_SLOTS] = fd;
	}
	return x->fd[XM_SLOTS];
}

int xdpr_slot_name_set(struct xdpr *x, int prog_fd, __u32 slot, const char *name, __u32 ifindex,
		       __u32 mode)
{
	struct xdpr_slot_name sn = { .ifindex = ifindex, .mode = mode };
	int fd = slots_map(x);

	snprintf(sn.name, sizeof(sn.name), "%s", name ? name : "");
	if (fd < 0 || (prog_fd >= 0 && bpf_prog_bind_map(prog_fd, fd, NULL)) ||
	    bpf_map_update_elem(fd, &slot, &sn, BPF_ANY))
		return fd < 0 ? fd : -errno;
	return 0;
}

/* Hand the shared maps to a freshly opened instance. */
int xdpr_reuse_maps(struct xdpr *x, struct bpf_object *obj)
{
	struct bpf_map *m;
	int err;

	bpf_object__for_each_map(m, obj) {
		int i = map_index(bpf_map__name(m));

		if (i < 0)
			continue;
		err = bpf_map__reuse_fd(m, x->fd[i]);
		if (err) {
			seterr(x, "cannot share map %s: %s", bpf_map__name(m), strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * Run one of the object's helper programs (never attached) on the shared
 * maps with BPF_PROG_TEST_RUN; data is its input and output.
 */
int xdpr_run_prog(struct xdpr *x, const char *name, void *data, __u32 len, __u32 ifindex)
{
	struct xdpr_bpf *skel = xdpr_bpf__open();
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = data, .data_size_in = len, .data_out = data,
		    .data_size_out = len, .repeat = 1);
	struct bpf_program *p, *run = NULL;
	int err;

	if (!skel) {
		seterr(x, "cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	if (ifindex) {
		o.ctx_in = &ctx;
		o.ctx_size_in = sizeof(ctx);
	}
	/* the program's own flow copies (a region per CPU) are no helper's business */
	bpf_map__set_max_entries(skel->maps.xdpr_flt_hot, 1);
	bpf_map__set_max_entries(skel->maps.xdpr_flt_hot6, 1);
	bpf_object__for_each_program(p, skel->obj) {
		bool me = !strcmp(bpf_program__name(p), name);

		bpf_program__set_autoload(p, me);
		if (me)
			run = p;
	}
	err = run ? xdpr_reuse_maps(x, skel->obj) : -ENOENT;
	if (!err) {
		err = xdpr_bpf__load(skel);
		if (err)
			seterr(x, "cannot load %s: %s%s%s", name, strerror(-err), lib_msg[0] ? ": " : "",
			       lib_msg);
	}
	if (!err) {
		err = bpf_prog_test_run_opts(bpf_program__fd(run), &o);
		if (err) {
			err = -errno;
			seterr(x, "cannot run %s: %s", name, strerror(-err));
		}
	}
	xdpr_bpf__destroy(skel);
	return err;
}

/*
 * A chunk of keys, then delete them: deleting while walking would restart
 * the walk at every deleted key, and asking for the first key each time
 * scans the emptied buckets again and again.
 */
long xdpr_map_flush(struct xdpr *x, int fd, size_t ksize, const char *what)
{
	enum { CHUNK = 4096 };
	char *keys = malloc(CHUNK * ksize);
	long total = 0;
	size_t n;

	if (!keys) {
		seterr(x, "cannot delete %s: %s", what, strerror(ENOMEM));
		return -ENOMEM;
	}
	do {
		n = 0;
		for (void *p = NULL; n < CHUNK && !bpf_map_get_next_key(fd, p, keys + n * ksize);
		     p = keys + n++ * ksize)
			;
		if (n < CHUNK && errno != ENOENT) {
			total = -errno;
			seterr(x, "cannot read %s: %s", what, strerror(-total));
			break;
		}
		for (size_t i = 0; i < n; i++) {
			if (!bpf_map_delete_elem(fd, keys + i * ksize))
				total++;
			else if (errno != ENOENT) {
				total = -errno;
				seterr(x, "cannot delete %s: %s", what, strerror(-total));
				n = 0;
				break;
			}
		}
	} while (n);
	free(keys);
	return total;
}

int xdpr_map_max(struct xdpr *x, int m, const char *what, __u64 *max)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(x->fd[m], &info, &len)) {
		int err = -errno;

		seterr(x, "cannot read %s: %s", what, strerror(-err));
		return err;
	}
	*max = info.max_entries;
	return 0;
}
