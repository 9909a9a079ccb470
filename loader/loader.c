// SPDX-License-Identifier: GPL-2.0
/*
 * loader.c - attach, detach and find the xdpr fast path.
 *
 * One program image, loaded once per interface, all instances sharing one
 * set of maps.  The maps are created here before the first program is
 * loaded and handed to every later load with bpf_map__reuse_fd(), so an
 * interface is added or removed with map updates and one attach, never a
 * reload of the others.
 *
 * Order of operations (no window in which a frame is lost):
 *   attach: program on the device -> devmap entry -> xdpr_ifaces entry
 *   detach: xdpr_ifaces entry -> devmap entry -> program off the device
 * A frame that meets a half-configured device goes to the kernel
 * (pass_no_iface or pass_egress_not_xdpr), never to a black hole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <net/if_arp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "libxdpr.h"
#include "xdpr.skel.h"

#define XDPR_RUN_DIR "/run/xdpr"
#define XDPR_PIN_ROOT "/sys/fs/bpf/xdpr"

const char *const map_names[XM_MAX] = {
	[XM_STATS] = XDPR_MAP_STATS,   [XM_IFACES] = XDPR_MAP_IFACES, [XM_TX] = XDPR_MAP_TX,
	[XM_CFG] = XDPR_MAP_CFG,       [XM_RULES] = XDPR_MAP_RULES,   [XM_NSTATS] = XDPR_MAP_NSTATS,
	[XM_CT] = XDPR_MAP_CT,         [XM_BIND] = XDPR_MAP_BIND,     [XM_EIM] = XDPR_MAP_EIM,
	[XM_HOSTS] = XDPR_MAP_HOSTS,   [XM_RING] = XDPR_MAP_RING,     [XM_RINGHD] = "xdpr_nat_ringhd",
	[XM_CURSOR] = "xdpr_nat_cursor", [XM_RTDIR] = "xdpr_rtdir",  [XM_RTREC] = "xdpr_rtrec",
	[XM_RTNH] = "xdpr_rtnh",
	[XM_RTSTATS] = "xdpr_rt_stats",
};

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

static void quiet_libs(void)
{
	libxdp_set_print(lib_print);
	libbpf_set_print(bpf_print);
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

/* Adopt the maps of a running instance (first one found wins). */
static int adopt_maps(struct xdpr *x, int prog_fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), ids[32], i;

	info.nr_map_ids = 32;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	for (i = 0; i < info.nr_map_ids && i < 32; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]), *slot = NULL;

		if (fd < 0)
			return -errno;
		if (bpf_obj_get_info_by_fd(fd, &mi, &mlen)) {
			close(fd);
			return -errno;
		}
		for (int m = 0; m < XM_MAX; m++)
			if (!strcmp(mi.name, map_names[m]))
				slot = &x->fd[m];
		if (slot && *slot < 0)
			*slot = fd;
		else
			close(fd);
	}
	return 0;
}

/* Our program on this interface, directly or inside a dispatcher. */
static struct xdp_program *find_ours(struct xdp_multiprog *mp)
{
	struct xdp_program *p = xdp_multiprog__main_prog(mp);

	if (xdp_multiprog__is_legacy(mp))
		return p && !strcmp(xdp_program__name(p), XDPR_PROG_NAME) ? p : NULL;
	for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
		if (!strcmp(xdp_program__name(p), XDPR_PROG_NAME))
			return p;
	return NULL;
}

static struct xdp_multiprog *get_multiprog(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);

	if (libxdp_get_error(mp))
		return NULL;
	return mp;
}

static int netns_ino(unsigned long *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st))
		return -errno;
	*ino = st.st_ino;
	return 0;
}

static int lock_netns(struct xdpr *x)
{
	unsigned long ino = 0;
	char path[64];
	int fd, err;

	/* One lock per network namespace: its inode names it uniquely while it lives. */
	err = netns_ino(&ino);
	if (err) {
		seterr(x, "cannot identify the network namespace: %s", strerror(-err));
		return err;
	}
	if (mkdir(XDPR_RUN_DIR, 0700) && errno != EEXIST) {
		seterr(x, "cannot create %s: %s", XDPR_RUN_DIR, strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), XDPR_RUN_DIR "/netns-%lu.lock", ino);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		seterr(x, "cannot lock %s: %s", path, strerror(-err));
		return err;
	}
	x->lock_fd = fd;
	return 0;
}

int xdpr_open(struct xdpr *x, unsigned int flags)
{
	struct if_nameindex *ifs, *it;
	int err;

	memset(x, 0, sizeof(*x));
	for (int m = 0; m < XM_MAX; m++)
		x->fd[m] = -1;
	x->lock_fd = -1;
	quiet_libs();
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
		struct xdp_multiprog *mp = get_multiprog(it->if_index);
		struct xdp_program *p;
		struct xdpr_link *l;

		if (!mp)
			continue;
		p = find_ours(mp);
		if (p) {
			l = &x->links[x->nlinks++];
			snprintf(l->name, sizeof(l->name), "%s", it->if_name);
			l->ifindex = it->if_index;
			l->mode = xdp_multiprog__attach_mode(mp) == XDP_MODE_SKB ? XDPR_MODE_SKB
										 : XDPR_MODE_NATIVE;
			l->prog_id = xdp_program__id(p);
			l->since = prog_since(xdp_program__fd(p));
			l->dispatcher = !xdp_multiprog__is_legacy(mp);
			err = adopt_maps(x, xdp_program__fd(p));
			if (err) {
				xdp_multiprog__close(mp);
				if_freenameindex(ifs);
				seterr(x, "cannot read the maps of program %u on \"%s\": %s",
				       l->prog_id, l->name, strerror(-err));
				return err;
			}
		}
		xdp_multiprog__close(mp);
	}
	if_freenameindex(ifs);

	for (int i = 0; i < x->nlinks && x->fd[XM_IFACES] >= 0; i++)
		x->links[i].has_cfg = !bpf_map_lookup_elem(x->fd[XM_IFACES], &x->links[i].ifindex,
							   &x->links[i].cfg);
	for (int m = 0; m < XM_MAX && x->nlinks; m++)
		if (x->fd[m] < 0) {
			/* xdpr_detach() still works on such a router: it needs no map */
			seterr(x, "map %s not found: the attached program is of another xdpr version "
				  "(detach it with \"xdpr link detach all\")", map_names[m]);
			return -ESTALE;
		}
	if (!x->nlinks) {
		seterr(x, "xdpr is not attached to any interface in this network namespace");
		return -ENOENT;
	}
	/* under the lock: finish or undo what a killed command left (nat.c) */
	return (flags & XDPR_O_LOCK) ? xdpr_nat_repair(x, NULL, 0) : 0;
}

void xdpr_close(struct xdpr *x)
{
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

int xdpr_stats_read(struct xdpr *x, __u32 slot, struct xdpr_slot *percpu)
{
	if (bpf_map_lookup_elem(x->fd[XM_STATS], &slot, percpu)) {
		seterr(x, "cannot read counters: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int zero_slot(struct xdpr *x, __u32 slot)
{
	int n = xdpr_ncpus();
	struct xdpr_slot *zero = calloc(n, sizeof(*zero));
	int err = 0;

	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(x->fd[XM_STATS], &slot, zero, BPF_ANY))
		err = -errno;
	free(zero);
	return err;
}

static int map_index(const char *name)
{
	for (int m = 0; m < XM_MAX; m++)
		if (!strcmp(name, map_names[m]))
			return m;
	return -1;
}

/* Shape of the route table inner maps (from the skeleton), for building new ones. */
struct map_proto {
	enum bpf_map_type type;
	__u32 key, value, max, flags;
};
static struct map_proto rt_proto[XDPR_RT_MAPS];

static void set_proto(struct map_proto *p, const struct bpf_map *in)
{
	*p = (struct map_proto){ bpf_map__type(in), bpf_map__key_size(in), bpf_map__value_size(in),
				 bpf_map__max_entries(in), bpf_map__map_flags(in) };
}

/* A map of that shape with that many entries (0: the definition's); fd or -errno. */
static int proto_create(const struct map_proto *p, __u32 entries)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = p->flags);
	int fd = bpf_map_create(p->type, "xdpr_rt_inner", p->key, p->value, entries ? entries : p->max, &o);

	return fd < 0 ? -errno : fd;
}

/* A map like an inner map definition. */
static int create_like(struct bpf_map *m)
{
	struct map_proto p;

	set_proto(&p, m);
	return proto_create(&p, 0);
}

/* The route table inner map definitions of an opened (not loaded) skeleton. */
static void set_rt_protos(struct xdpr_bpf *skel)
{
	set_proto(&rt_proto[XDPR_RT_DIR], bpf_map__inner_map(skel->maps.xdpr_rtdir));
	set_proto(&rt_proto[XDPR_RT_REC], bpf_map__inner_map(skel->maps.xdpr_rtrec));
	set_proto(&rt_proto[XDPR_RT_NH], bpf_map__inner_map(skel->maps.xdpr_rtnh));
}

/*
 * A new inner map for a route table slot: XDPR_RT_DIR (index blocks),
 * XDPR_RT_REC (records) or XDPR_RT_NH (next hops) with that many entries;
 * 0 entries: the definition's (an empty table).
 */
int xdpr_rt_new_map(struct xdpr *x, int which, __u32 entries)
{
	struct map_proto *p = &rt_proto[which];
	int fd;

	if (!p->key) {
		struct xdpr_bpf *skel = xdpr_bpf__open();

		if (!skel) {
			seterr(x, "cannot open the BPF object: %s", strerror(errno));
			return -errno;
		}
		set_rt_protos(skel);
		xdpr_bpf__destroy(skel);
	}
	fd = proto_create(p, entries);
	if (fd < 0)
		seterr(x, "cannot create a route table of %u entries: %s", entries ? entries : p->max,
		       strerror(-fd));
	return fd;
}

/* Create the shared maps from the skeleton's own definitions. */
static int create_maps(struct xdpr *x)
{
	struct xdpr_bpf *skel = xdpr_bpf__open();
	struct bpf_map *m;
	int err = 0;

	if (!skel) {
		seterr(x, "cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	bpf_object__for_each_map(m, skel->obj) {
		LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = bpf_map__map_flags(m));
		struct bpf_map *inner = bpf_map__inner_map(m);
		int i = map_index(bpf_map__name(m)), fd, tfd = -1;

		if (i < 0)
			continue; /* per-instance (internal) map */
		if (inner) {
			tfd = create_like(inner);
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
			int ifd = create_like(inner);

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
		set_rt_protos(skel);
	xdpr_bpf__destroy(skel);
	return err;
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

/* Router-wide settings for a new router: defaults and the FIB source probe. */
static int init_cfg(struct xdpr *x)
{
	struct xdpr_cfg c = {
		.tcp_est = XDPR_DEF_TCP_EST, .tcp_trans = XDPR_DEF_TCP_TRANS, .udp = XDPR_DEF_UDP,
		.icmp = XDPR_DEF_ICMP, .holddown = XDPR_DEF_HOLDDOWN, .host_limit = XDPR_DEF_HOST_LIMIT,
	};
	__u32 zero = 0;
	__s32 probe[16] = { -1 };
	int err;

	err = xdpr_run_prog(x, "xdpr_probe", probe, sizeof(probe), 1);
	if (err)
		return err;
	/* -EINVAL: the kernel refused the flag; anything else is a lookup result */
	if (probe[0] >= 0)
		c.flags |= XDPR_CFG_FIB_SRC;
	if (bpf_map_update_elem(x->fd[XM_CFG], &zero, &c, BPF_ANY)) {
		seterr(x, "cannot write the configuration: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int iface_mac(const char *name, __u8 mac[6])
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -errno;
	else if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
		err = -EPROTONOSUPPORT;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return err;
}

static __u32 free_slot(struct xdpr *x, const __u32 *taken, int ntaken)
{
	for (__u32 s = 1; s < XDPR_MAX_IFACES; s++) {
		bool used = false;

		for (int i = 0; i < x->nlinks; i++)
			used |= x->links[i].has_cfg && x->links[i].cfg.slot == s;
		for (int i = 0; i < ntaken; i++)
			used |= taken[i] == s;
		if (!used)
			return s;
	}
	return 0;
}

/* Remove xdpr from one interface in the gap-free order. */
static int detach_one(struct xdpr *x, __u32 ifindex, const char *name)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	int err;

	/* no longer a redirect target first; its settings go once the program is off */
	if (x->fd[XM_TX] >= 0)
		bpf_map_delete_elem(x->fd[XM_TX], &ifindex);

	mp = get_multiprog(ifindex);
	p = mp ? find_ours(mp) : NULL;
	if (!p) {
		xdp_multiprog__close(mp);
		if (x->fd[XM_IFACES] >= 0) /* no program left to count on it */
			bpf_map_delete_elem(x->fd[XM_IFACES], &ifindex);
		seterr(x, "xdpr is not attached to \"%s\"", name);
		return -ENOENT;
	}
	if (xdp_multiprog__is_legacy(mp))
		err = xdp_multiprog__detach(mp);
	else
		err = xdp_program__detach(p, ifindex, xdp_multiprog__attach_mode(mp), 0);
	xdp_multiprog__close(mp);
	if (err)
		seterr(x, "cannot detach from \"%s\": %s", name, strerror(-err));
	else if (x->fd[XM_IFACES] >= 0)
		bpf_map_delete_elem(x->fd[XM_IFACES], &ifindex);
	return err;
}

/*
 * Mirror the maps as pins in /sys/fs/bpf/xdpr/netns-INODE/ (0700) for bpftool
 * and other readers, when this mount namespace has a bpffs there.  The CLI
 * never needs them: under `ip netns exec` there is no bpffs, and state is
 * found through the attached programs instead.  Best effort by design.
 */
static void sync_pins(struct xdpr *x, bool present)
{
	static const int pinned[] = { XM_STATS, XM_IFACES, XM_TX, XM_CFG, XM_RULES, XM_NSTATS, XM_CT };
	char dir[64], path[96];
	unsigned long ino = 0;
	struct statfs fs;

	if (statfs("/sys/fs/bpf", &fs) || fs.f_type != BPF_FS_MAGIC || netns_ino(&ino))
		return;
	snprintf(dir, sizeof(dir), XDPR_PIN_ROOT "/netns-%lu", ino);
	for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, map_names[pinned[i]]);
		unlink(path);
	}
	if (!present) {
		rmdir(dir);
		rmdir(XDPR_PIN_ROOT); /* only when no other namespace has pins */
		return;
	}
	if ((mkdir(XDPR_PIN_ROOT, 0700) && errno != EEXIST) || (mkdir(dir, 0700) && errno != EEXIST))
		return;
	for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, map_names[pinned[i]]);
		if (x->fd[pinned[i]] >= 0)
			bpf_obj_pin(x->fd[pinned[i]], path);
	}
}

struct pending {
	__u32 ifindex;
	__u32 slot;
	bool foreign;
	struct xdpr_iface cfg;
};

/* Load one instance on the shared maps and attach it. */
static int attach_one(struct xdpr *x, const char *name, struct pending *pd, enum xdpr_mode mode,
		      bool *dispatcher, char *why, size_t whylen, enum xdpr_xmit *xmit)
{
	struct xdp_program *prog = NULL;
	struct xdp_multiprog *mp;
	struct xdpr_bpf *skel;
	__u32 key = pd->ifindex;
	int err;

	skel = xdpr_bpf__open();
	if (!skel) {
		seterr(x, "cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	err = xdpr_reuse_maps(x, skel->obj);
	if (err)
		goto out;
	/* the helper programs are loaded on demand (xdpr_run_prog), not per interface */
	bpf_program__set_autoload(skel->progs.xdpr_nat_gc, false);
	bpf_program__set_autoload(skel->progs.xdpr_probe, false);
	{
		DECLARE_LIBXDP_OPTS(xdp_program_opts, po, .obj = skel->obj, .prog_name = XDPR_PROG_NAME);

		prog = xdp_program__create(&po);
	}
	err = libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		seterr(x, "cannot prepare the XDP program: %s", strerror(-err));
		goto out;
	}
	if (pd->foreign) {
		mp = get_multiprog(pd->ifindex);
		err = mp ? xdp_multiprog__detach(mp) : 0;
		xdp_multiprog__close(mp);
		if (err) {
			seterr(x, "cannot remove the XDP program on \"%s\": %s", name, strerror(-err));
			goto out;
		}
	}
	/*
	 * The interface's settings go in before the program (not yet a
	 * transmit target), so that every frame it sees is counted on its
	 * interface, none on the "(unattached)" slot.
	 */
	{
		struct xdpr_iface early = pd->cfg;

		early.flags &= ~XDPR_IF_XMIT;
		if (bpf_map_update_elem(x->fd[XM_IFACES], &key, &early, BPF_ANY)) {
			err = -errno;
			seterr(x, "cannot register \"%s\" in the maps: %s", name, strerror(-err));
			goto out;
		}
	}
	lib_msg[0] = lib_fallback[0] = 0;
	err = xdp_program__attach(prog, pd->ifindex,
				  mode == XDPR_MODE_SKB ? XDP_MODE_SKB : XDP_MODE_NATIVE, 0);
	if (err) {
		if (err == -EOPNOTSUPP && mode == XDPR_MODE_NATIVE)
			seterr(x, "\"%s\" does not support native XDP; use \"mode skb\"", name);
		else
			seterr(x, "cannot attach to \"%s\" in %s mode: %s%s%s", name,
			       xdpr_mode_name(mode), strerror(-err), lib_msg[0] ? ": " : "", lib_msg);
		bpf_map_delete_elem(x->fd[XM_IFACES], &key);
		goto out;
	}
	mp = get_multiprog(pd->ifindex);
	*dispatcher = mp && !xdp_multiprog__is_legacy(mp);
	xdp_multiprog__close(mp);
	/*
	 * Probe again now that our program is on the device: some drivers
	 * (igb) take redirected frames only while a native program is attached.
	 */
	*xmit = xdpr_probe_xmit(pd->ifindex);
	pd->cfg.flags &= ~XDPR_IF_XMIT;
	/*
	 * Kernels without xdp-features (before 6.3) do not say: a native
	 * program implies the driver's XDP transmit path; a generic-mode port
	 * has none to offer (redirected frames would be dropped).
	 */
	if (*xmit == XDPR_XMIT_YES || (*xmit == XDPR_XMIT_UNKNOWN && mode == XDPR_MODE_NATIVE))
		pd->cfg.flags |= XDPR_IF_XMIT;
	if (!*dispatcher)
		snprintf(why, whylen, "%s", getenv("LIBXDP_SKIP_DISPATCHER") ? "LIBXDP_SKIP_DISPATCHER is set"
					   : lib_fallback[0] ? lib_fallback : "not available");

	if (bpf_map_update_elem(x->fd[XM_TX], &key, &key, BPF_ANY) ||
	    bpf_map_update_elem(x->fd[XM_IFACES], &key, &pd->cfg, BPF_ANY)) {
		err = -errno;
		seterr(x, "cannot register \"%s\" in the maps: %s", name, strerror(-err));
		detach_one(x, pd->ifindex, name);
	}
out:
	xdp_program__close(prog);
	xdpr_bpf__destroy(skel);
	return err;
}

int xdpr_attach(struct xdpr *x, char *const *ifnames, int n, enum xdpr_mode mode,
		unsigned int flags, struct xdpr_attach_info *info)
{
	struct pending pd[XDPR_MAX_IFACES] = {};
	__u32 slots[XDPR_MAX_IFACES];
	int err, done;

	quiet_libs();
	if (n <= 0 || n + x->nlinks >= XDPR_MAX_IFACES) {
		seterr(x, "can attach at most %d interfaces", XDPR_MAX_IFACES - 1);
		return -E2BIG;
	}
	memset(info, 0, sizeof(*info));

	/* Validate everything before touching anything. */
	for (int i = 0; i < n; i++) {
		struct xdp_multiprog *mp;

		pd[i].ifindex = if_nametoindex(ifnames[i]);
		if (!pd[i].ifindex) {
			seterr(x, "cannot find device \"%s\"", ifnames[i]);
			return -ENODEV;
		}
		for (int j = 0; j < i; j++)
			if (pd[j].ifindex == pd[i].ifindex) {
				seterr(x, "device \"%s\" given twice", ifnames[i]);
				return -EINVAL;
			}
		if (xdpr_link_find(x, ifnames[i])) {
			seterr(x, "xdpr is already attached to \"%s\"", ifnames[i]);
			return -EEXIST;
		}
		mp = get_multiprog(pd[i].ifindex);
		if (mp && (xdp_multiprog__main_prog(mp) || xdp_multiprog__hw_prog(mp))) {
			if (!(flags & XDPR_F_FORCE)) {
				xdp_multiprog__close(mp);
				seterr(x, "\"%s\" already has an XDP program; use \"force\" to replace it",
				       ifnames[i]);
				return -EBUSY;
			}
			pd[i].foreign = true;
		}
		xdp_multiprog__close(mp);
		err = iface_mac(ifnames[i], pd[i].cfg.mac);
		if (err) {
			seterr(x, "\"%s\" is not an Ethernet device", ifnames[i]);
			return err == -EPROTONOSUPPORT ? -EINVAL : err;
		}
		pd[i].slot = slots[i] = free_slot(x, slots, i);
		pd[i].cfg.slot = pd[i].slot;
		/* XDPR_IF_XMIT is probed once our program is attached (attach_one) */
		pd[i].cfg.flags = mode == XDPR_MODE_SKB ? XDPR_IF_GENERIC : 0;
		snprintf(info->dev[i].name, sizeof(info->dev[i].name), "%s", ifnames[i]);
		info->dev[i].replaced_foreign = pd[i].foreign;
	}

	if (x->fd[XM_STATS] < 0) {
		err = create_maps(x);
		if (!err)
			err = init_cfg(x);
		if (err)
			return err;
	}
	for (done = 0; done < n; done++) {
		err = zero_slot(x, pd[done].slot);
		if (!err)
			err = attach_one(x, ifnames[done], &pd[done], mode,
					 &info->dev[done].dispatcher, info->dev[done].why,
					 sizeof(info->dev[done].why), &info->dev[done].xmit);
		if (err)
			break;
		info->n++;
	}
	if (done == n) {
		struct xdpr_cfg c;

		for (int i = 0; i < n && !xdpr_cfg_get(x, &c) && (c.flags & XDPR_CFG_NAT); i++)
			xdpr_nat_prepare_dev(x, ifnames[i]);
		if (xdpr_nat_repair(x, ifnames, n)) /* NAT rules waiting for these names */
			snprintf(x->note, sizeof(x->note), "%s", x->err);
		xdpr_local_sync(x);
		sync_pins(x, true);
		return 0;
	}

	/* All or nothing: take back what this call attached. */
	for (int i = 0; i < done; i++) {
		char keep[sizeof(x->err)];

		memcpy(keep, x->err, sizeof(keep));
		detach_one(x, pd[i].ifindex, ifnames[i]);
		memcpy(x->err, keep, sizeof(keep));
	}
	info->n = 0;
	return err;
}

int xdpr_detach(struct xdpr *x, char *const *ifnames, int n, unsigned int flags)
{
	const struct xdpr_link *todo[XDPR_MAX_IFACES];
	int cnt = 0, err = 0, nat_rules = 0;

	quiet_libs();
	if (n == 0) {
		for (int i = 0; i < x->nlinks; i++)
			todo[cnt++] = &x->links[i];
	}
	for (int i = 0; i < n; i++) {
		const struct xdpr_link *l = xdpr_link_find(x, ifnames[i]);

		if (!l) {
			if (!if_nametoindex(ifnames[i]))
				seterr(x, "cannot find device \"%s\"", ifnames[i]);
			else
				seterr(x, "xdpr is not attached to \"%s\"", ifnames[i]);
			return -ENOENT;
		}
		todo[cnt++] = l;
	}
	/* NAT rules on an interface: without xdpr there, its traffic would leave untranslated. */
	for (int i = 0; i < cnt; i++) {
		const struct xdpr_link *l = todo[i];

		if (!l->has_cfg || !l->cfg.nrules)
			continue;
		if (!(flags & XDPR_F_FORCE)) {
			seterr(x, "\"%s\" has NAT rules: without xdpr its traffic would leave untranslated; "
				  "delete them first (xdpr nat del out %s ...) or use \"force\"",
			       l->name, l->name);
			return -EBUSY;
		}
		nat_rules += l->cfg.nrules;
	}
	for (int i = 0; i < cnt && nat_rules; i++) {
		const struct xdpr_link *l = todo[i];

		for (int r = 0; l->has_cfg && r < l->cfg.nrules && r < XDPR_NAT_IF_RULES; r++) {
			struct xdpr_nat_rule rule;
			__u32 id = l->cfg.rules[r];

			if (bpf_map_lookup_elem(x->fd[XM_RULES], &id, &rule) || !rule.ifindex)
				continue;
			err = xdpr_nat_del(x, l->name, rule.src_net, rule.src_mask);
			if (err)
				return err;
		}
	}
	for (int i = 0; i < cnt; i++) {
		int e = detach_one(x, todo[i]->ifindex, todo[i]->name);

		if (e && !err)
			err = e;
	}
	sync_pins(x, cnt < x->nlinks);
	return err;
}
