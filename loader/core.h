/* SPDX-License-Identifier: GPL-2.0 */
/*
 * core.h - the bottom of libxdpr (internal, not installed).
 *
 * What every other part of the library stands on: finding a router's state
 * (xdpr_open), errors, the shared maps (names, creation, hand-over to a new
 * program instance), helper programs run on those maps, and the libxdp /
 * libbpf message capture.  Every call goes down this list, never up:
 *
 *     loader.c   attach, detach            vlan.c, filter.c, nat.c, route.c, core.c, leaves
 *     vlan.c     VLANs of attached ports   filter.c, nat.c, route.c, core.c, leaves
 *     filter.c   the filter, sets          nat.c, core.c
 *     route.c    the route map             rtindex.c, nat.c, core.c, leaves
 *     nat_tab.c  NAT tables' size, memory  nat.c, core.c
 *     binat.c    1:1 NAT rules             nat.c (settings), core.c
 *     flow.c     the flow meter            nat.c (settings), core.c
 *     ddos.c     DDoS meters, bans         nat.c (settings), core.c
 *     natlog.c   the NAT event ring        nat.c (settings), core.c
 *     nbr.c      neighbour requests, marks core.c
 *     nat.c      NAT, router settings      core.c
 *                (xdpr_cfg_get/set)
 *     rtindex.c  route lookup index        core.c
 *     npt.c      NPTv6 rules               core.c
 *     core.c     state, maps, errors       nothing of the library
 *     netdev.c   netlink probes, neighbours  (leaves: they use nothing)
 *     vlandev.c  VLAN devices, rx offload
 *     reasons.c  names of reasons and modes
 *     nfguard.c  netfilter rules XDP would bypass
 *     nat_ct.c   the session table's slots and overflow, as userspace reads them
 * (selftests/unit/layers.t checks this table against the objects.)
 */
#ifndef XDPR_CORE_H
#define XDPR_CORE_H

#include "libxdpr.h"

struct bpf_object;
struct xdp_multiprog;
struct xdp_program;

extern const char *const map_names[XM_MAX];

void seterr(struct xdpr *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * libxdp and libbpf print nothing: their last warning is kept, and the
 * reason libxdp gave before falling back to a plain attach.
 */
void xdpr_quiet_libs(void);
void xdpr_lib_clear(void);
const char *xdpr_lib_warning(void);  /* "" when there was none */
const char *xdpr_lib_fallback(void); /* "" when libxdp gave none */

/* The XDP programs of an interface (NULL: none, or unreadable). */
struct xdp_multiprog *xdpr_get_multiprog(int ifindex);
/* Our program on that interface, directly or inside a dispatcher. */
struct xdp_program *xdpr_find_ours(struct xdp_multiprog *mp);
/* The inode of the caller's network namespace: names its lock and pins. */
int xdpr_netns_ino(unsigned long *ino);

/*
 * Remove the xdpr_ifaces entries of interfaces that no longer exist in this
 * network namespace (deleted while attached: the kernel takes their program
 * and devmap entry away, not their settings).  Call it holding the lock;
 * xdpr_open(XDPR_O_LOCK) and xdpr_attach() do.  NAT rules that name a
 * deleted ifindex are not touched, nor are deleted VLANs (xdpr_vlan_sync
 * takes them out in order and says so).  Returns how many were removed,
 * or -errno with x->err.
 */
int xdpr_prune_dead_ifaces(struct xdpr *x);

/*
 * Interface ifindex's settings into xdpr_ifaces (flags as for
 * bpf_map_update_elem), and a VLAN's into its copy in xdpr_vlan_cfg, the
 * one the program reads at ingress: every write of a VLAN's settings goes
 * through here.  0 or -errno.
 */
int xdpr_iface_put(struct xdpr *x, __u32 ifindex, const struct xdpr_iface *c, __u64 flags);

/* Delete interface ifindex's xdpr_ifaces entry (then xdpr_ifaces_changed).  0 or -errno (-ENOENT: none). */
int xdpr_iface_del(struct xdpr *x, __u32 ifindex);

/*
 * After any change to xdpr_ifaces: the generation the program's per-CPU
 * copies of its entries are made under moves on (xdpr_shared.h, struct
 * xdpr_if_cached), so every packet that starts after this returns reads
 * the change.  Every write to xdpr_ifaces calls it before anything else
 * depends on that write (xdpr_iface_put and xdpr_iface_del do).  0 or
 * -errno with x->err.
 */
int xdpr_ifaces_changed(struct xdpr *x);

/* Cells first..first+n-1 of a per-CPU array of __u64 to 0 on every CPU.  0 or -errno. */
int xdpr_percpu_zero(int fd, __u32 first, __u32 n);

/* The xdpr_vlans key of a trunk's VID, or -1 when there is none (trunk 0). */
static inline long xdpr_vid_key(unsigned int trunk, unsigned int vid)
{
	return trunk && trunk <= XDPR_MAX_TRUNKS && vid < XDPR_VIDS ? (long)(trunk - 1) * XDPR_VIDS + vid
								  : -1;
}

/*
 * Take VLAN ifindex (settings c) out of what the program finds at ingress:
 * its VID entry (if it still leads to its slot), then its settings' copy
 * (if still its).  Its xdpr_ifaces entry is the caller's.  0 or -errno.
 */
int xdpr_vlan_unset(struct xdpr *x, __u32 ifindex, const struct xdpr_iface *c);

/*
 * TEST-ONLY fault injection, for the rollback paths no real failure reaches
 * on demand (selftests/netns/link_atomic.t).  With XDPR_FAULT set to a
 * comma-separated list of POINT or POINT:DEV, that step fails with -EIO
 * instead of running (on device DEV, or on any):
 *   attach  putting xdpr's program on a device: the one-step replacement
 *           of a foreign program, or the attach after a foreign program
 *           that could not be replaced in one step was taken off
 *   detach  taking it off (the device is no longer a redirect target)
 *   sysctl  nat add's accept_local writes (loader/nat.c), with -EROFS
 * Unset, nothing changes.  Not an interface for users.
 */
bool xdpr_fault(const char *point, const char *dev);

/* Create the shared maps from the BPF object's definitions (a new router). */
int xdpr_create_maps(struct xdpr *x);
/*
 * Record now as the attach time of a slot (link show's "since"), binding
 * the attach-time map to the program on first use.  Without it (an error,
 * or a router attached by an older version) "since" is the program's load
 * time: callers may ignore the result.
 */
int xdpr_since_set(struct xdpr *x, int prog_fd, __u32 slot);
/* Name a counter slot (name NULL: free it again); prog_fd < 0: the map is bound already. */
int xdpr_slot_name_set(struct xdpr *x, int prog_fd, __u32 slot, const char *name, __u32 ifindex,
		       __u32 mode);
/* Hand the shared maps to a freshly opened instance. */
int xdpr_reuse_maps(struct xdpr *x, struct bpf_object *obj);

/* Before a freshly opened instance of the datapath loads: its read-only settings (tick rate, churn threshold). */
struct xdpr_bpf;
void xdpr_skel_prepare(struct xdpr_bpf *skel);
/* The inner maps of a route table slot, in the order of xdpr_rt_make_slot's fds. */
int xdpr_rt_new_map(struct xdpr *x, int which, __u32 entries);
/* The inner maps of a filter slot (enum xdpr_flt_inner), fixed-size ones at their size. */
int xdpr_flt_new_map(struct xdpr *x, int which, __u32 entries);
/* Run one of the object's helper programs (never attached) on the shared maps. */
int xdpr_run_prog(struct xdpr *x, const char *name, void *data, __u32 len, __u32 ifindex);

/*
 * A malloc'd copy of the mmap-able inner map in slot of outer map fd outer,
 * with that map's info (entries, value size); *out NULL when it has no
 * bytes.  0, or -errno with x->err ("cannot open WHAT: ..." / "cannot read
 * WHAT: ...").
 */
/* NAT tables (enum xdpr_nat_tab): sizes, new ones, the live ones (loader/nat_tab.c). */
extern const int xdpr_nat_outer[XDPR_NT_MAPS];
int xdpr_nat_protos(struct xdpr *x);
__u32 xdpr_nat_entries(int which, __u32 sessions);
int xdpr_nat_new_map(struct xdpr *x, int which, __u32 sessions);
void xdpr_nat_shape(int which, __u32 *key, __u32 *value, bool *hash, bool *alloc);
#define XDPR_NAT_TINY 64 /* entries of an idle slot's tables (an LRU needs some per CPU) */
int xdpr_nat_tab_fd(struct xdpr *x, int which, __u32 slot);
/*
 * XDPR_CRASH_AT=OP:STEP (a test hook, see loader/nat.c): the command kills
 * itself (SIGKILL) when it reaches that step.
 */
void xdpr_crash_point(const char *op, const char *step);
/* CLOCK_MONOTONIC in ns: the packet path's clock (bpf_ktime_get_coarse_ns) within a tick. */
__u64 xdpr_mono_ns(void);
/*
 * Every XDP run that may have read a map before now has ended:
 * MEMBARRIER_CMD_GLOBAL is synchronize_rcu(), and XDP programs run inside
 * RCU read-side sections.  false: cannot tell (nohz_full).
 */
bool xdpr_packets_settled(void);
/* Delete every key of the map fd (keys of ksize bytes; what names them in errors): how many, or -errno. */
long xdpr_map_flush(struct xdpr *x, int fd, size_t ksize, const char *what);
/* The size (max_entries) of map m of x: 0, or -errno with x->err ("cannot read WHAT"). */
int xdpr_map_max(struct xdpr *x, int m, const char *what, __u64 *max);
int xdpr_inner_copy(struct xdpr *x, int outer, __u32 slot, const char *what, void **out,
		    struct bpf_map_info *info);

#endif /* XDPR_CORE_H */
