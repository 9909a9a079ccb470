// SPDX-License-Identifier: GPL-2.0
/*
 * loader.c - attach xdpr to interfaces and detach it.
 *
 * One program, verified once, attached to every interface of the router.
 * A new router's maps are created (core.c) and handed to a fresh instance
 * with bpf_map__reuse_fd() before it is loaded; its first attach loads it,
 * the other interfaces of that call get the same program, and a later
 * call attaches the program it finds on the router's interfaces (struct
 * shared).  An interface is added or removed with map updates and one
 * attach, never a reload.  The helper programs (NAT sweep, FIB probe) are
 * loaded on demand by xdpr_run_prog().
 *
 * Order of operations (no window in which a frame is lost):
 *   attach: xdpr_ifaces entry (not yet a transmit target) -> program on the
 *           device -> devmap entry -> xdpr_ifaces entry with XDPR_IF_XMIT
 *   detach: devmap entry -> program off the device -> xdpr_ifaces entry
 * A frame that meets a half-configured device goes to the kernel
 * (pass_no_iface or pass_egress_not_xdpr), never to a black hole, and every
 * frame the program sees on a device is counted on that device's slot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <net/if_arp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "core.h"
#include "xdpr.skel.h"

#define XDPR_PIN_ROOT "/sys/fs/bpf/xdpr"

/* A line more in x->note (warnings the caller shows after a successful change). */
static void add_note(struct xdpr *x, const char *line)
{
	size_t used = strlen(x->note);

	snprintf(x->note + used, sizeof(x->note) - used, "%s%s", used ? "\n" : "", line);
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

/* Router-wide settings for a new router: defaults and the FIB source probe. */
static int init_cfg(struct xdpr *x)
{
	struct xdpr_cfg c = {
		.tcp_est = XDPR_DEF_TCP_EST, .tcp_trans = XDPR_DEF_TCP_TRANS, .udp = XDPR_DEF_UDP,
		.icmp = XDPR_DEF_ICMP, .holddown = XDPR_DEF_HOLDDOWN, .host_limit = XDPR_DEF_HOST_LIMIT,
		.nat_sess = XDPR_NAT_DEF_SESS,
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
		for (int i = 0; i < x->ngone; i++) /* kept for its name until detached */
			used |= x->gone[i].slot == s;
		if (!used)
			return s;
	}
	return 0;
}

/*
 * Take xdpr off one interface in the gap-free order: no longer a redirect
 * target, then the program off.  Its settings stay for the caller to
 * remove once nothing can bring the interface back.  A failure puts the
 * redirect entry back: the interface is left as it was.
 */
static int unplug(struct xdpr *x, __u32 ifindex, const char *name)
{
	bool target = x->fd[XM_TX] >= 0 && !bpf_map_delete_elem(x->fd[XM_TX], &ifindex);
	struct xdp_multiprog *mp = xdpr_get_multiprog(ifindex);
	struct xdp_program *p = mp ? xdpr_find_ours(mp) : NULL;
	int err;

	if (!p) {
		seterr(x, "xdpr is not attached to \"%s\"", name);
		err = -ENOENT;
	} else if (xdpr_fault("detach", name)) {
		err = -EIO;
	} else if (xdp_multiprog__is_legacy(mp)) {
		err = xdp_multiprog__detach(mp);
	} else {
		err = xdp_program__detach(p, ifindex, xdp_multiprog__attach_mode(mp), 0);
	}
	xdp_multiprog__close(mp);
	if (err && p)
		seterr(x, "cannot detach from \"%s\": %s", name, strerror(-err));
	if (err && p && target)
		bpf_map_update_elem(x->fd[XM_TX], &ifindex, &ifindex, BPF_ANY);
	return err;
}

/* Remove xdpr from one interface, settings included. */
static int detach_one(struct xdpr *x, __u32 ifindex, const char *name)
{
	int err = unplug(x, ifindex, name);

	/* -ENOENT: no program left to count on the settings either */
	if ((!err || err == -ENOENT) && x->fd[XM_IFACES] >= 0)
		xdpr_iface_del(x, ifindex);
	return err;
}

/*
 * Undo unplug(): the program (held by prog_fd) back on the interface in its
 * mode, then a redirect target again (its settings never went).
 */
static int replug(struct xdpr *x, const struct xdpr_link *l, int prog_fd)
{
	struct xdp_program *p = xdp_program__from_fd(prog_fd);
	int err = libxdp_get_error(p);

	if (!err)
		err = xdp_program__attach(p, l->ifindex,
					  l->mode == XDPR_MODE_SKB ? XDP_MODE_SKB : XDP_MODE_NATIVE, 0);
	if (!err && x->fd[XM_TX] >= 0 &&
	    bpf_map_update_elem(x->fd[XM_TX], &l->ifindex, &l->ifindex, BPF_ANY))
		err = -errno;
	if (!libxdp_get_error(p))
		xdp_program__close(p);
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
	static const int pinned[] = { XM_STATS, XM_IFACES, XM_TX, XM_CFG, XM_RULES, XM_NSTATS, XM_CT, XM_CTA };
	char dir[64], path[96];
	unsigned long ino = 0;
	struct statfs fs;

	if (statfs("/sys/fs/bpf", &fs) || fs.f_type != BPF_FS_MAGIC || xdpr_netns_ino(&ino))
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

/* Another XDP program found on a device ("force"): enough to put it back. */
struct foreign {
	int fd;           /* a reference of our own: it cannot go away meanwhile */
	__u32 flags;      /* XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE or XDP_FLAGS_HW_MODE */
};

struct pending {
	__u32 ifindex;
	__u32 slot;
	int nforeign;
	struct foreign foreign[2];  /* driver or generic, and offloaded */
	bool replaced;              /* ours replaced foreign[0] in one step */
	bool keep_counters;         /* the slot of a gone interface of this name, reused */
	bool forced;                /* XDPR_F_FORCE: recorded with its slot's name */
	bool rxvlan_on;             /* receive VLAN offload on before the attach */
	struct xdpr_iface cfg;
};

/*
 * Receive VLAN offload off before the program goes on: a NIC that strips
 * tags (igb, e1000e, ... whenever the feature is on) hands XDP the frame of
 * a VLAN as an untagged one, which would be routed as the port's.  Refused
 * when it cannot be turned off, unless "force".
 */
static int rxvlan_off(struct xdpr *x, struct pending *pd, const char *name, bool *off, bool *stuck)
{
	int err;

	if (!pd->rxvlan_on)
		return 0;
	err = xdpr_rxvlan_set(name, false);
	if (!err) {
		*off = true;
		return 0;
	}
	pd->cfg.flags &= ~XDPR_IF_RXVLAN_OFF; /* nothing to put back (the last write says so) */
	if (pd->forced) {
		*stuck = true;
		return 0;
	}
	seterr(x, "\"%s\" strips VLAN tags in hardware (receive VLAN offload) and it cannot be "
		  "turned off (%s): a tagged frame would reach XDP untagged and be routed as "
		  "\"%s\"'s; use \"force\" to attach anyway", name, strerror(-err), name);
	return err;
}

/* The offload back on, where xdpr turned it off (cfg says so); best effort, noted. */
static void rxvlan_restore(struct xdpr *x, const struct xdpr_iface *cfg, const char *name)
{
	char line[160];
	int err;

	if (!(cfg->flags & XDPR_IF_RXVLAN_OFF))
		return;
	err = xdpr_rxvlan_set(name, true);
	if (err && err != -ENODEV) {
		snprintf(line, sizeof(line), "%s: cannot turn receive VLAN offload on again: %s", name,
			 strerror(-err));
		add_note(x, line);
	}
}

static __u32 mode_flags(enum xdp_attach_mode m)
{
	return m == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : m == XDP_MODE_HW ? XDP_FLAGS_HW_MODE
									 : XDP_FLAGS_DRV_MODE;
}

/* Note the programs on a device that are not ours; -errno if one cannot be held. */
static int hold_foreign(struct pending *pd, struct xdp_multiprog *mp)
{
	struct xdp_program *progs[2] = { xdp_multiprog__main_prog(mp), xdp_multiprog__hw_prog(mp) };

	for (int i = 0; i < 2; i++) {
		struct foreign *f = &pd->foreign[pd->nforeign];

		if (!progs[i])
			continue;
		f->fd = bpf_prog_get_fd_by_id(xdp_program__id(progs[i]));
		if (f->fd < 0)
			return -errno;
		f->flags = i ? XDP_FLAGS_HW_MODE : mode_flags(xdp_multiprog__attach_mode(mp));
		pd->nforeign++;
	}
	return 0;
}

/* Put the first n foreign programs of a device back where they were (ours is off). */
static int restore_foreign(const struct pending *pd, int n)
{
	int err = 0;

	for (int i = 0; i < n; i++) {
		int e = bpf_xdp_attach(pd->ifindex, pd->foreign[i].fd,
				       pd->foreign[i].flags | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);

		if (e && !err)
			err = e;
	}
	return err;
}


/*
 * The one XDP program every interface gets: the one already attached in
 * this namespace when there is one, else a fresh instance on the shared
 * maps, verified by the first attach of this call and attached as it is
 * to the others.  A program inside a libxdp dispatcher is an extension of
 * that dispatcher and cannot be attached on its own: it is not reused
 * (libxdp reuses it itself within one call).
 */
struct shared {
	struct xdpr_bpf *skel;     /* the fresh instance; NULL when reusing */
	struct xdp_program *prog;
	char why[128];             /* libxdp's first reason in this call for a direct attach */
};

static int shared_get(struct xdpr *x, struct shared *sh)
{
	int err;

	if (sh->prog)
		return 0;
	for (int i = 0; i < x->nlinks; i++) {
		struct xdp_program *p;
		int fd;

		if (x->links[i].dispatcher || (fd = bpf_prog_get_fd_by_id(x->links[i].prog_id)) < 0)
			continue;
		/*
		 * Not xdp_program__from_id: before libxdp 1.4.1 it keeps the
		 * descriptor it opened as well as its duplicate (one leaked per
		 * call).  xdp_program__from_fd duplicates (libxdp >= 1.3.0).
		 */
		p = xdp_program__from_fd(fd);
		close(fd);
		if (!libxdp_get_error(p)) {
			sh->prog = p;
			return 0;
		}
	}
	sh->skel = xdpr_bpf__open();
	if (!sh->skel) {
		seterr(x, "cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	xdpr_skel_prepare(sh->skel);
	err = xdpr_reuse_maps(x, sh->skel->obj);
	if (err)
		return err;
	/* the helper programs are loaded on demand (xdpr_run_prog), not with this one */
	bpf_program__set_autoload(sh->skel->progs.xdpr_nat_gc, false);
	bpf_program__set_autoload(sh->skel->progs.xdpr_probe, false);
	{
		DECLARE_LIBXDP_OPTS(xdp_program_opts, po, .obj = sh->skel->obj,
				    .prog_name = XDPR_PROG_NAME);

		sh->prog = xdp_program__create(&po);
	}
	err = libxdp_get_error(sh->prog);
	if (err) {
		sh->prog = NULL;
		seterr(x, "cannot prepare the XDP program: %s", strerror(-err));
	}
	return err;
}

static void shared_put(struct shared *sh)
{
	xdp_program__close(sh->prog);
	xdpr_bpf__destroy(sh->skel);
}

/* A loaded program of type XDP (not a dispatcher's extension): libxdp attaches it directly. */
static bool plain_xdp(int prog_fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return prog_fd >= 0 && !bpf_obj_get_info_by_fd(prog_fd, &info, &len) &&
	       info.type == BPF_PROG_TYPE_XDP;
}

/*
 * The shared program as a loaded plain XDP program, for a netlink attach
 * that replaces another program: its fd, or -EOPNOTSUPP when it is a
 * dispatcher's extension.  A fresh instance nothing has loaded yet is
 * loaded here (libxdp cannot replace a program it did not attach).
 */
static int plain_fd(struct xdpr *x, struct shared *sh)
{
	struct xdp_program *p;
	int fd = xdp_program__fd(sh->prog), err;

	if (fd >= 0)
		return plain_xdp(fd) ? fd : -EOPNOTSUPP;
	xdpr_lib_clear();
	err = xdpr_bpf__load(sh->skel);
	if (err) {
		seterr(x, "cannot load the XDP program: %s%s%s", strerror(-err),
		       *xdpr_lib_warning() ? ": " : "", xdpr_lib_warning());
		return err;
	}
	p = xdp_program__from_fd(bpf_program__fd(sh->skel->progs.xdpr_main));
	err = libxdp_get_error(p);
	if (err) {
		seterr(x, "cannot prepare the XDP program: %s", strerror(-err));
		return err;
	}
	xdp_program__close(sh->prog);
	sh->prog = p;
	return xdp_program__fd(p);
}

/*
 * The dispatcher refused the program: kernels from 6.13 (and 6.12 stable)
 * refuse an extension that changes packet data (xdpr sends ICMP errors
 * from XDP, bpf_xdp_adjust_head/tail) in a dispatcher slot that does not.
 * The failed load used up the object: load a fresh one as a plain XDP
 * program, which libxdp attaches directly.
 */
static int attach_plain(struct xdpr *x, struct shared *sh, __u32 ifindex, enum xdp_attach_mode xm)
{
	int fd;

	xdp_program__close(sh->prog);
	xdpr_bpf__destroy(sh->skel);
	sh->prog = NULL;
	sh->skel = xdpr_bpf__open();
	if (!sh->skel)
		return -errno;
	xdpr_skel_prepare(sh->skel);
	if (xdpr_reuse_maps(x, sh->skel->obj))
		return -EINVAL;
	bpf_program__set_autoload(sh->skel->progs.xdpr_nat_gc, false);
	bpf_program__set_autoload(sh->skel->progs.xdpr_probe, false);
	fd = plain_fd(x, sh);
	if (fd < 0)
		return fd;
	snprintf(sh->why, sizeof(sh->why), "%s",
		 "the dispatcher refuses a program that resizes packets (ICMP errors sent from XDP)");
	return xdp_program__attach(sh->prog, ifindex, xm, 0);
}

/*
 * Put the shared program on a device.  Another program there is replaced
 * in one step when it is alone and in our mode (XDP_FLAGS_REPLACE names
 * the program expected, so a concurrent change fails instead of being
 * overwritten); otherwise it is taken off first and put back if ours then
 * fails to attach.  Either way, a failure leaves the device as it was.
 */
static int put_prog(struct xdpr *x, struct shared *sh, struct pending *pd, const char *name,
		    enum xdpr_mode mode)
{
	enum xdp_attach_mode xm = mode == XDPR_MODE_SKB ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	int err, fd = -EOPNOTSUPP, i;

	xdpr_lib_clear();
	if (pd->nforeign == 1 && pd->foreign[0].flags == mode_flags(xm)) {
		fd = plain_fd(x, sh);
		if (fd < 0 && fd != -EOPNOTSUPP)
			return fd;
	}
	if (fd >= 0) {
		LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = pd->foreign[0].fd);

		err = xdpr_fault("attach", name) ? -EIO
			: bpf_xdp_attach(pd->ifindex, fd, mode_flags(xm) | XDP_FLAGS_REPLACE, &o);
		if (err) {
			seterr(x, "cannot replace the XDP program on \"%s\": %s", name, strerror(-err));
			return err;
		}
		pd->replaced = true;
		return 0;
	}

	for (i = 0; i < pd->nforeign; i++) {
		LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = pd->foreign[i].fd);

		err = bpf_xdp_detach(pd->ifindex, pd->foreign[i].flags | XDP_FLAGS_REPLACE, &o);
		if (err) {
			seterr(x, "cannot remove the XDP program on \"%s\": %s", name, strerror(-err));
			restore_foreign(pd, i);
			return err;
		}
	}
	err = xdpr_fault("attach", name) ? -EIO : xdp_program__attach(sh->prog, pd->ifindex, xm, 0);
	if (err == -EINVAL && xdp_program__fd(sh->prog) < 0 && !getenv("LIBXDP_SKIP_DISPATCHER"))
		err = attach_plain(x, sh, pd->ifindex, xm);
	if (!err)
		return 0;
	if (err == -EOPNOTSUPP && mode == XDPR_MODE_NATIVE)
		seterr(x, "\"%s\" does not support native XDP; use \"mode skb\"", name);
	else
		seterr(x, "cannot attach to \"%s\" in %s mode: %s%s%s", name, xdpr_mode_name(mode),
		       strerror(-err), *xdpr_lib_warning() ? ": " : "", xdpr_lib_warning());
	i = restore_foreign(pd, pd->nforeign);
	if (i) {
		size_t len = strlen(x->err);

		snprintf(x->err + len, sizeof(x->err) - len,
			 "; its previous XDP program could not be put back: %s", strerror(-i));
	}
	return err;
}

/*
 * Undo a complete attach_one() in the gap-free order: no longer a redirect
 * target, program off (or the previous one back in one step), settings.
 */
static int take_back(struct xdpr *x, struct shared *sh, struct pending *pd, const char *name)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = xdp_program__fd(sh->prog));
	int err;

	if (!pd->replaced) {
		err = detach_one(x, pd->ifindex, name);
		if (!err)
			rxvlan_restore(x, &pd->cfg, name);
		return err ? err : restore_foreign(pd, pd->nforeign);
	}
	bpf_map_delete_elem(x->fd[XM_TX], &pd->ifindex);
	err = bpf_xdp_attach(pd->ifindex, pd->foreign[0].fd, pd->foreign[0].flags | XDP_FLAGS_REPLACE,
			     &o);
	if (!err) {
		xdpr_iface_del(x, pd->ifindex);
		rxvlan_restore(x, &pd->cfg, name);
	} else /* ours stays: a redirect target again */
		bpf_map_update_elem(x->fd[XM_TX], &pd->ifindex, &pd->ifindex, BPF_ANY);
	return err;
}

/* Attach the shared program to one interface and register it in the maps. */
static int attach_one(struct xdpr *x, struct shared *sh, const char *name, struct pending *pd,
		      enum xdpr_mode mode, bool *dispatcher, char *why, size_t whylen,
		      enum xdpr_xmit *xmit, bool *rxv_off, bool *rxv_stuck)
{
	struct xdp_multiprog *mp;
	__u32 key = pd->ifindex;
	bool loaded;
	int err;

	err = shared_get(x, sh);
	if (err)
		return err;
	loaded = plain_xdp(xdp_program__fd(sh->prog));
	/*
	 * The interface's settings go in before the program (not yet a
	 * transmit target), so that every frame it sees is counted on its
	 * interface, none on the "(unattached)" slot.
	 */
	/* the offload's change is recorded before it is made: a detach then puts it back */
	if (pd->rxvlan_on)
		pd->cfg.flags |= XDPR_IF_RXVLAN_OFF;
	{
		struct xdpr_iface early = pd->cfg;

		early.flags &= ~XDPR_IF_XMIT;
		err = xdpr_iface_put(x, key, &early, BPF_ANY);
		if (err) {
			seterr(x, "cannot register \"%s\" in the maps: %s", name, strerror(-err));
			return err;
		}
	}
	err = rxvlan_off(x, pd, name, rxv_off, rxv_stuck);
	if (err) {
		xdpr_iface_del(x, key);
		return err;
	}
	err = put_prog(x, sh, pd, name, mode);
	if (err) {
		xdpr_iface_del(x, key);
		rxvlan_restore(x, &pd->cfg, name);
		return err;
	}
	xdpr_since_set(x, xdp_program__fd(sh->prog), pd->slot);
	xdpr_slot_name_set(x, xdp_program__fd(sh->prog), pd->slot, name, pd->ifindex,
			   (mode == XDPR_MODE_SKB ? XDPR_MODE_SKB : XDPR_MODE_NATIVE) |
			   (pd->forced ? XDPR_SLOT_FORCED : 0));
	mp = xdpr_get_multiprog(pd->ifindex);
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
	/*
	 * libxdp gives its reason once per process (it remembers that its
	 * dispatcher failed), and none when an already loaded plain program
	 * cannot go into a dispatcher.
	 */
	if (!*sh->why && *xdpr_lib_fallback())
		snprintf(sh->why, sizeof(sh->why), "%s", xdpr_lib_fallback());
	if (!*dispatcher)
		snprintf(why, whylen, "%s",
			 pd->replaced ? "a direct attach replaces the previous program in one step"
			 : getenv("LIBXDP_SKIP_DISPATCHER") ? "LIBXDP_SKIP_DISPATCHER is set"
			 : *sh->why ? sh->why
			 : loaded ? "xdpr's program is attached without a dispatcher elsewhere"
			 : "not available");

	if (bpf_map_update_elem(x->fd[XM_TX], &key, &key, BPF_ANY))
		err = -errno;
	else
		err = xdpr_iface_put(x, key, &pd->cfg, BPF_ANY);
	if (err) {
		char keep[sizeof(x->err)];

		seterr(x, "cannot register \"%s\" in the maps: %s", name, strerror(-err));
		memcpy(keep, x->err, sizeof(keep));
		take_back(x, sh, pd, name);
		memcpy(x->err, keep, sizeof(keep));
	}
	return err;
}

int xdpr_attach(struct xdpr *x, char *const *ifnames, int n, enum xdpr_mode mode,
		unsigned int flags, struct xdpr_attach_info *info)
{
	struct pending pd[XDPR_MAX_IFACES] = {};
	struct shared sh = {};
	__u32 slots[XDPR_MAX_IFACES];
	int err, done;

	xdpr_quiet_libs();
	if (n <= 0 || n + x->nlinks >= XDPR_MAX_IFACES) {
		seterr(x, "can attach at most %d interfaces", XDPR_MAX_IFACES - 1);
		return -E2BIG;
	}
	memset(info, 0, sizeof(*info));
	/* settings of deleted interfaces go before new ones are written */
	xdpr_prune_dead_ifaces(x);

	/* Validate everything before touching anything. */
	for (done = 0; done < n; done++) {
		int i = done;
		struct xdp_multiprog *mp;

		pd[i].ifindex = if_nametoindex(ifnames[i]);
		if (!pd[i].ifindex) {
			seterr(x, "cannot find device \"%s\"", ifnames[i]);
			err = -ENODEV;
			goto out;
		}
		for (int j = 0; j < i; j++)
			if (pd[j].ifindex == pd[i].ifindex) {
				seterr(x, "device \"%s\" given twice", ifnames[i]);
				err = -EINVAL;
				goto out;
			}
		{
			struct xdpr_vlan_dev vd;
			char port[IF_NAMESIZE] = "?";

			if (xdpr_vlan_of(ifnames[i], &vd) == 1) {
				if_indextoname(vd.parent, port);
				seterr(x, "\"%s\" is a VLAN of \"%s\": attach \"%s\", its VLANs come "
					  "with it", ifnames[i], port, port);
				err = -EINVAL;
				goto out;
			}
		}
		if (xdpr_link_find(x, ifnames[i])) {
			const struct xdpr_link *l;
			int again = xdpr_link_reprobe(x); /* what an attach would probe, refreshed */

			l = xdpr_link_find(x, ifnames[i]);
			if (again >= 0 && l->has_cfg)
				seterr(x, "xdpr is already attached to \"%s\" (XDP transmit probed again: "
					  "%s)", ifnames[i], (l->cfg.flags & XDPR_IF_XMIT) ? "yes" : "no");
			else
				seterr(x, "xdpr is already attached to \"%s\"", ifnames[i]);
			err = -EEXIST;
			goto out;
		}
		mp = xdpr_get_multiprog(pd[i].ifindex);
		err = 0;
		if (mp && (xdp_multiprog__main_prog(mp) || xdp_multiprog__hw_prog(mp))) {
			if (!(flags & XDPR_F_FORCE)) {
				seterr(x, "\"%s\" already has an XDP program; use \"force\" to replace it",
				       ifnames[i]);
				err = -EBUSY;
			} else if ((err = hold_foreign(&pd[i], mp))) {
				seterr(x, "cannot read the XDP program on \"%s\": %s", ifnames[i],
				       strerror(-err));
			}
		}
		xdp_multiprog__close(mp);
		if (err)
			goto out;
		err = iface_mac(ifnames[i], pd[i].cfg.mac);
		if (err) {
			seterr(x, "\"%s\" is not an Ethernet device", ifnames[i]);
			err = err == -EPROTONOSUPPORT ? -EINVAL : err;
			goto out;
		}
		pd[i].slot = 0;
		pd[i].forced = flags & XDPR_F_FORCE;
		if (xdpr_rxvlan_get(ifnames[i], &pd[i].rxvlan_on))
			pd[i].rxvlan_on = false; /* no ethtool flags: nothing strips tags */
		for (int g = 0; g < x->ngone; g++) /* the same name again: its counters go on */
			if (!strcmp(x->gone[g].name, ifnames[i])) {
				pd[i].slot = x->gone[g].slot;
				pd[i].keep_counters = true;
			}
		if (!pd[i].slot)
			pd[i].slot = free_slot(x, slots, i);
		slots[i] = pd[i].slot;
		pd[i].cfg.slot = pd[i].slot;
		/* XDPR_IF_XMIT is probed once our program is attached (attach_one) */
		pd[i].cfg.flags = mode == XDPR_MODE_SKB ? XDPR_IF_GENERIC : 0;
		{ /* attached again: its VLANs keep their row (vlan.c) */
			struct xdpr_iface old;

			if (x->fd[XM_IFACES] >= 0 && !bpf_map_lookup_elem(x->fd[XM_IFACES], &pd[i].ifindex, &old) &&
			    !(old.flags & XDPR_IF_VLAN))
				pd[i].cfg.trunk = old.trunk;
		}
		/* rules waiting for this name: nothing inside leaves it until they are bound */
		if (x->fd[XM_RULES] >= 0 && xdpr_nat_waits_for(x, ifnames[i]))
			pd[i].cfg.flags |= XDPR_IF_NAT_PENDING;
		if (xdpr_binat_names(x, pd[i].ifindex)) /* attached again: its 1:1 rules apply */
			pd[i].cfg.flags |= XDPR_IF_BINAT;
		snprintf(info->dev[i].name, sizeof(info->dev[i].name), "%s", ifnames[i]);
		info->dev[i].replaced_foreign = pd[i].nforeign > 0;
	}

	if (x->fd[XM_STATS] < 0) {
		err = xdpr_create_maps(x);
		if (!err)
			err = init_cfg(x);
		if (err)
			goto out;
	}
	for (done = 0; done < n; done++) {
		err = pd[done].keep_counters ? 0 : zero_slot(x, pd[done].slot);
		if (!err)
			err = attach_one(x, &sh, ifnames[done], &pd[done], mode,
					 &info->dev[done].dispatcher, info->dev[done].why,
					 sizeof(info->dev[done].why), &info->dev[done].xmit,
					 &info->dev[done].rxvlan_off, &info->dev[done].rxvlan_stuck);
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
		/* pins of a replaced libxdp dispatcher go once nothing can bring it back */
		for (int i = 0; i < n; i++)
			if (pd[i].nforeign)
				libxdp_clean_references(pd[i].ifindex);
		xdpr_local_sync(x);
		/* the filter's maps bound to the program, its device names resolved again */
		if (xdpr_flt_relink(x, ifnames, n))
			add_note(x, x->err);
		/* their VLANs come with them (a failure leaves the ports attached: link sync) */
		if (xdpr_vlan_sync(x) < 0)
			add_note(x, x->err);
		sync_pins(x, true);
		goto out;
	}

	/* All or nothing: take back what this call attached, previous programs included. */
	for (int i = 0; i < done; i++) {
		char keep[sizeof(x->err)];

		memcpy(keep, x->err, sizeof(keep));
		take_back(x, &sh, &pd[i], ifnames[i]);
		memcpy(x->err, keep, sizeof(keep));
	}
	info->n = 0;
out:
	shared_put(&sh);
	for (int i = 0; i < n; i++)
		for (int f = 0; f < pd[i].nforeign; f++)
			close(pd[i].foreign[f].fd);
	return err;
}

/*
 * The transmit capability of every attached port asked again (a veth can
 * take redirected frames once its peer has GRO or XDP: that comes and
 * goes), written where it changed, its VLANs' copies too.  How many
 * changed (a line each in x->info), or -errno with x->err.
 */
int xdpr_link_reprobe(struct xdpr *x)
{
	int changed = 0, err;

	for (int i = 0; i < x->nlinks && x->fd[XM_IFACES] >= 0; i++) {
		struct xdpr_link *l = &x->links[i];
		struct xdpr_iface cfg;
		enum xdpr_xmit xm;
		__u32 key = l->ifindex, flag;
		char line[128];
		size_t used;

		if (l->parent || !l->has_cfg || bpf_map_lookup_elem(x->fd[XM_IFACES], &key, &cfg))
			continue;
		xm = xdpr_probe_xmit(key);
		/* as attach_one decides it */
		flag = xm == XDPR_XMIT_YES || (xm == XDPR_XMIT_UNKNOWN && l->mode == XDPR_MODE_NATIVE)
			? XDPR_IF_XMIT : 0;
		if ((cfg.flags & XDPR_IF_XMIT) == flag)
			continue;
		cfg.flags = (cfg.flags & ~XDPR_IF_XMIT) | flag;
		if ((err = xdpr_iface_put(x, key, &cfg, BPF_EXIST))) {
			seterr(x, "cannot update \"%s\": %s", l->name, strerror(-err));
			return err;
		}
		l->cfg.flags = cfg.flags;
		for (int k = 0; k < x->nlinks; k++) { /* its VLANs transmit through it */
			struct xdpr_link *v = &x->links[k];
			struct xdpr_iface vc;

			if (v->parent != key || bpf_map_lookup_elem(x->fd[XM_IFACES], &v->ifindex, &vc))
				continue;
			vc.flags = (vc.flags & ~XDPR_IF_XMIT) | flag;
			if ((err = xdpr_iface_put(x, v->ifindex, &vc, BPF_EXIST))) {
				seterr(x, "cannot update \"%s\": %s", v->name, strerror(-err));
				return err;
			}
			v->cfg.flags = vc.flags;
		}
		snprintf(line, sizeof(line), "%s: XDP transmit %s (probed again)", l->name,
			 flag ? "yes" : "no");
		used = strlen(x->info);
		snprintf(x->info + used, sizeof(x->info) - used, "%s%s", used ? "\n" : "", line);
		changed++;
	}
	return changed;
}

int xdpr_link_sync(struct xdpr *x)
{
	int changed = 0, err;

	for (int i = 0; i < x->nlinks; i++) {
		struct xdpr_iface cfg;
		__u8 mac[6];
		__u32 key = x->links[i].ifindex;

		if (!x->links[i].has_cfg || iface_mac(x->links[i].name, mac) ||
		    bpf_map_lookup_elem(x->fd[XM_IFACES], &key, &cfg) || !memcmp(cfg.mac, mac, 6))
			continue;
		memcpy(cfg.mac, mac, 6);
		if ((err = xdpr_iface_put(x, key, &cfg, BPF_EXIST))) {
			seterr(x, "cannot update \"%s\": %s", x->links[i].name, strerror(-err));
			return err;
		}
		memcpy(x->links[i].cfg.mac, mac, 6);
		changed++;
	}
	return changed;
}

/*
 * Does this interface translate (NAT rules, forwards, 1:1 rules, rules
 * waiting for it, NPTv6 rules)?  npt: the outside interfaces of NPTv6
 * rules, nnpt of them.
 */
static bool nat_role(struct xdpr *x, const struct xdpr_link *l, const __u32 *npt, int nnpt)
{
	if (l->has_cfg && (l->cfg.nrules ||
			   (l->cfg.flags & (XDPR_IF_FWD | XDPR_IF_BINAT | XDPR_IF_NAT_PENDING))))
		return true;
	for (int i = 0; i < nnpt; i++)
		if (npt[i] == l->ifindex)
			return true;
	return xdpr_binat_names(x, l->ifindex);
}

/* The outside interfaces of NPTv6 rules into npt (XDPR_NPT_MAX): how many (0 when unreadable). */
static int npt_ifaces(struct xdpr *x, __u32 *npt)
{
	struct xdpr_npt_info *r;
	char keep[sizeof(x->err)];
	int n;

	if (x->fd[XM_NPT] < 0 || !(r = calloc(XDPR_NPT_MAX, sizeof(*r))))
		return 0;
	memcpy(keep, x->err, sizeof(keep));
	n = xdpr_npt_list(x, r, XDPR_NPT_MAX);
	memcpy(x->err, keep, sizeof(keep));
	for (int i = 0; i < n; i++)
		npt[i] = r[i].r.ifindex;
	free(r);
	return n > 0 ? n : 0;
}

/*
 * Ports detached while others stay: their traffic is then forwarded by the
 * kernel, by its own rules.  Out of an interface that translates it would
 * leave untranslated (xdpr's NAT state is not the kernel's), and it would
 * skip xdpr's filter.  Refused while another attached interface does NAT
 * or the filter is in force; the ports of todo[0..cnt) (VLANs follow their
 * ports) are put in the order that keeps xdpr's translation the longest:
 * those that translate first.  0 or -EBUSY with x->err.
 */
static int lone_check(struct xdpr *x, const struct xdpr_link **todo, int cnt, bool refuse)
{
	__u32 npt[XDPR_NPT_MAX];
	int nnpt = npt_ifaces(x, npt), ports = 0;
	const struct xdpr_link *stay_nat = NULL, *first = NULL;
	bool stays = false;
	struct xdpr_cfg c;

	while (ports < cnt && !todo[ports]->parent)
		ports++;
	/* stable: the translating ports to the front */
	for (int i = 1, k = 0; i < ports; i++) {
		const struct xdpr_link *l = todo[i];

		while (k < i && nat_role(x, todo[k], npt, nnpt))
			k++;
		if (k < i && nat_role(x, l, npt, nnpt)) {
			memmove(&todo[k + 1], &todo[k], (i - k) * sizeof(todo[0]));
			todo[k] = l;
		}
	}
	for (int i = 0; i < x->nlinks; i++) {
		const struct xdpr_link *l = &x->links[i];
		bool going = false;

		for (int k = 0; k < cnt; k++)
			going |= todo[k] == l || (l->parent && todo[k]->ifindex == l->parent);
		if (going)
			continue;
		stays = true;
		if (!stay_nat && nat_role(x, l, npt, nnpt))
			stay_nat = l;
	}
	for (int k = 0; k < ports && !first; k++)
		if (!nat_role(x, todo[k], npt, nnpt))
			first = todo[k];
	if (!refuse || !stays || !ports)
		return 0;
	if (!first)
		first = todo[0];
	if (stay_nat) {
		seterr(x, "without xdpr, \"%s\"'s traffic would leave NAT interface \"%s\" untranslated "
			  "(the kernel forwards it); detach \"%s\" first, or every interface (\"link "
			  "detach all\"), or use \"force\"", first->name, stay_nat->name, stay_nat->name);
		return -EBUSY;
	}
	if (!xdpr_cfg_get(x, &c) && (c.flags & XDPR_CFG_FILTER)) {
		seterr(x, "without xdpr, \"%s\"'s traffic would skip the filter (the kernel forwards "
			  "it); empty the filter first (filter flush, filter policy accept), or detach "
			  "every interface (\"link detach all\"), or use \"force\"", first->name);
		return -EBUSY;
	}
	return 0;
}

int xdpr_detach_check(struct xdpr *x, char **ifnames, int n)
{
	const struct xdpr_link *todo[XDPR_MAX_IFACES];
	char *order[XDPR_MAX_IFACES];
	int cnt = 0, k = 0, err;

	for (int i = 0; i < n && i < XDPR_MAX_IFACES; i++) {
		const struct xdpr_link *l = xdpr_link_find(x, ifnames[i]);

		if (l && !l->parent)
			todo[cnt++] = l;
	}
	err = lone_check(x, todo, cnt, true);
	if (err)
		return err;
	/* attached ports first, in the safe order, then the other names as they were */
	for (int i = 0; i < cnt; i++)
		order[k++] = (char *)todo[i]->name;
	for (int i = 0; i < n && i < XDPR_MAX_IFACES; i++) {
		const struct xdpr_link *l = xdpr_link_find(x, ifnames[i]);

		if (!l || l->parent)
			order[k++] = ifnames[i];
	}
	/* todo's names are x's: copy them back into the caller's pointers */
	for (int i = 0; i < k; i++)
		for (int j = 0; j < n; j++)
			if (!strcmp(ifnames[j], order[i])) {
				order[i] = ifnames[j];
				break;
			}
	memcpy(ifnames, order, k * sizeof(char *));
	return 0;
}

int xdpr_detach(struct xdpr *x, char *const *ifnames, int n, unsigned int flags)
{
	const struct xdpr_link *todo[XDPR_MAX_IFACES];
	int prog[XDPR_MAX_IFACES];
	int cnt = 0, err = 0, nat_rules = 0, off;

	xdpr_quiet_libs();
	if (n == 0) {
		for (int i = 0; i < x->nlinks; i++)
			if (!x->links[i].parent)
				todo[cnt++] = &x->links[i];
	}
	int forgot = 0;

	for (int i = 0; i < n; i++) {
		const struct xdpr_link *l = xdpr_link_find(x, ifnames[i]);
		bool gone = false;

		if (l && l->parent) {
			seterr(x, "\"%s\" is a VLAN of \"%s\": detach \"%s\", its VLANs go with it",
			       l->name, l->parent_name, l->parent_name);
			return -EINVAL;
		}

		for (int g = 0; g < x->ngone && !l; g++)
			gone |= !strcmp(x->gone[g].name, ifnames[i]);
		if (gone) { /* nothing to take off: forget it below */
			forgot++;
			continue;
		}
		if (!l) {
			if (!if_nametoindex(ifnames[i]))
				seterr(x, "cannot find device \"%s\"", ifnames[i]);
			else
				seterr(x, "xdpr is not attached to \"%s\"", ifnames[i]);
			return -ENOENT;
		}
		todo[cnt++] = l;
	}
	/* the VLANs of those ports go with them */
	for (int i = 0, ports = cnt; i < x->nlinks; i++)
		for (int k = 0; k < ports && x->links[i].parent; k++)
			if (x->links[i].parent == todo[k]->ifindex && cnt < XDPR_MAX_IFACES)
				todo[cnt++] = &x->links[i];
	/* NAT rules on an interface: without xdpr there, its traffic would leave untranslated. */
	for (int i = 0; i < cnt; i++) {
		const struct xdpr_link *l = todo[i];

		if (!l->has_cfg || !l->cfg.nrules || (flags & XDPR_F_KEEP_RULES))
			continue;
		if (!(flags & XDPR_F_FORCE)) {
			seterr(x, "\"%s\" has NAT rules: without xdpr its traffic would leave untranslated; "
				  "delete them first (xdpr nat del out %s ...) or use \"force\"",
			       l->name, l->name);
			return -EBUSY;
		}
		nat_rules += l->cfg.nrules;
	}
	/* ---- 1:1 NAT rules (loader/binat.c): the same ---- */
	for (int i = 0; i < cnt && !(flags & (XDPR_F_KEEP_RULES | XDPR_F_FORCE)); i++)
		if (xdpr_binat_names(x, todo[i]->ifindex)) {
			seterr(x, "\"%s\" has 1:1 NAT rules: without xdpr its traffic would leave untranslated; "
				  "delete them first (xdpr nat del binat %s) or use \"force\"",
			       todo[i]->name, todo[i]->name);
			return -EBUSY;
		}

	/* the rest of the router keeps its NAT and its filter (unless "force"); the safe order */
	err = lone_check(x, todo, cnt, !(flags & (XDPR_F_FORCE | XDPR_F_SET_CHECKED)));
	if (err)
		return err;

	/*
	 * All or nothing: every interface off, or none.  The programs are held
	 * so that one detached here can be put back when a later one fails.
	 */
	for (int i = 0; i < cnt; i++)
		prog[i] = todo[i]->parent ? -1 : bpf_prog_get_fd_by_id(todo[i]->prog_id);
	/* ports only (the VLANs follow them in todo): a VLAN has no program to take off */
	for (off = 0; off < cnt && !todo[off]->parent && !err; off++)
		err = unplug(x, todo[off]->ifindex, todo[off]->name);
	if (err) {
		/* our program vanished from it meanwhile: nothing counts on its settings */
		if (err == -ENOENT && x->fd[XM_IFACES] >= 0)
			xdpr_iface_del(x, todo[off - 1]->ifindex);
		for (int i = 0; i < off - 1; i++) {
			int e = prog[i] < 0 ? -ENOENT : replug(x, todo[i], prog[i]);
			size_t len = strlen(x->err);

			if (e)
				snprintf(x->err + len, sizeof(x->err) - len,
					 "; \"%s\" stays detached: %s", todo[i]->name, strerror(-e));
		}
		goto out;
	}

	/*
	 * Nothing is brought back from here on.  Rules go once their outside
	 * interface is off: the rest of the router still translates what it
	 * hands to the kernel for it meanwhile.
	 */
	for (int i = 0; i < cnt && nat_rules && !err; i++) {
		const struct xdpr_link *l = todo[i];

		for (int r = 0; l->has_cfg && r < l->cfg.nrules && r < XDPR_NAT_IF_RULES && !err; r++) {
			struct xdpr_nat_rule rule;
			__u32 id = l->cfg.rules[r];

			if (bpf_map_lookup_elem(x->fd[XM_RULES], &id, &rule) || !rule.ifindex)
				continue;
			err = xdpr_nat_del(x, l->name, rule.src_net, rule.src_mask);
		}
	}
	/* its port forwards go with it (kept, waiting, only when its rules are) */
	for (int i = 0; i < cnt && !(flags & XDPR_F_KEEP_RULES) && x->fd[XM_RULES] >= 0 && !err; i++)
		for (__u32 id = 1; id < XDPR_NAT_MAX_RULES && !err; id++) {
			struct xdpr_nat_rule rule;

			if (!bpf_map_lookup_elem(x->fd[XM_RULES], &id, &rule) && (rule.flags & XDPR_NAT_FWD) &&
			    !rule.pending && rule.ifindex == todo[i]->ifindex)
				err = xdpr_nat_fwd_del(x, todo[i]->name, &rule);
		}
	for (int i = 0; i < cnt && (flags & XDPR_F_FORCE) && !(flags & XDPR_F_KEEP_RULES) && !err; i++)
		if (xdpr_binat_names(x, todo[i]->ifindex)) /* 1:1 NAT: forced off, its rules go */
			err = xdpr_binat_del(x, todo[i]->name, 0, -1);
	for (int i = 0; i < cnt && x->fd[XM_IFACES] >= 0; i++) {
		if (todo[i]->parent) { /* its VID entry before its settings */
			if (todo[i]->has_cfg)
				xdpr_vlan_unset(x, todo[i]->ifindex, &todo[i]->cfg);
			bpf_map_delete_elem(x->fd[XM_TX], &todo[i]->ifindex);
		}
		if (todo[i]->has_cfg && x->fd[XM_SLOTS] >= 0)
			xdpr_slot_name_set(x, -1, todo[i]->cfg.slot, NULL, 0, 0);
		xdpr_iface_del(x, todo[i]->ifindex);
		if (!todo[i]->parent && todo[i]->has_cfg)
			rxvlan_restore(x, &todo[i]->cfg, todo[i]->name);
	}
	/*
	 * Gone interfaces named (or every one, for "all"), and deleted VLANs of
	 * the ports detached: their slots are free again.
	 */
	for (int g = 0; g < x->ngone && x->fd[XM_SLOTS] >= 0; g++) {
		bool named = n == 0;

		for (int i = 0; i < n; i++)
			named |= !strcmp(x->gone[g].name, ifnames[i]);
		for (int i = 0; i < cnt && x->gone[g].vlan; i++)
			named |= !todo[i]->parent && x->gone[g].parent == todo[i]->ifindex;
		for (int i = 0; i < x->ngone && x->gone[g].vlan; i++) /* of a gone port forgotten */
			for (int k = 0; k < n; k++)
				named |= !x->gone[i].vlan && !strcmp(x->gone[i].name, ifnames[k]) &&
					 x->gone[g].parent == x->gone[i].old_ifindex;
		if (named)
			xdpr_slot_name_set(x, -1, x->gone[g].slot, NULL, 0, 0);
	}
	/* filter rules naming a device are compiled again (it may be a new one by now) */
	if (!err && cnt < x->nlinks && xdpr_flt_relink(x, NULL, 0))
		add_note(x, x->err);
	sync_pins(x, cnt < x->nlinks);
out:
	for (int i = 0; i < cnt; i++)
		if (prog[i] >= 0)
			close(prog[i]);
	return err;
}
