/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libxdpr - load, attach, find and read the xdpr fast path.
 *
 * State lives in the kernel, not in files: the maps of a router are found
 * through the xdpr programs attached to the interfaces of the caller's
 * network namespace.  That works from any mount namespace (every
 * `ip netns exec` call gets a fresh one without bpffs), and two routers in
 * two network namespaces never see each other's state.
 *
 * No printing here: functions return 0 or a negative errno and leave a one
 * line explanation in x->err.
 */
#ifndef LIBXDPR_H
#define LIBXDPR_H

#include <stdbool.h>
#include <stddef.h>
#include <net/if.h>
#include <linux/types.h>
#include "xdpr_shared.h"

enum xdpr_mode {
	XDPR_MODE_NATIVE = 1, /* driver mode */
	XDPR_MODE_SKB    = 2, /* generic mode */
};

enum xdpr_xmit {
	XDPR_XMIT_UNKNOWN = 0, /* kernel does not report xdp-features */
	XDPR_XMIT_NO,
	XDPR_XMIT_YES,
};

struct xdpr_link {
	char name[IF_NAMESIZE];
	__u32 ifindex;
	enum xdpr_mode mode;
	__u32 prog_id;
	char prog_tag[17];  /* the kernel's tag of the program (hex) */
	char build[24];     /* the build id its loader wrote (xdpr_build_id()); "": an older build */
	__u64 since;        /* attach time, Unix seconds */
	bool dispatcher;    /* attached through libxdp's dispatcher */
	bool forced;        /* attached with XDPR_F_FORCE */
	struct xdpr_iface cfg;
	bool has_cfg;       /* cfg read from xdpr_ifaces */
	/*
	 * A VLAN of an attached port (cfg.flags & XDPR_IF_VLAN): no program of
	 * its own (mode, prog_id, dispatcher are its port's), it comes and
	 * goes with its port (xdpr_vlan_sync).
	 */
	__u32 parent;       /* its port's ifindex, 0: a port */
	__u16 vid;
	char parent_name[IF_NAMESIZE];
};

/* A VLAN device of the namespace, as rtnetlink describes it (vlandev.c). */
struct xdpr_vlan_dev {
	char name[IF_NAMESIZE];
	__u32 ifindex;
	__u32 parent;       /* its port (IFLA_LINK) */
	__u16 vid;
	bool up;
	bool dot1q;         /* 802.1Q; 802.1ad VLANs are left to the kernel */
	bool other_ns;      /* its port is in another network namespace */
	__u8 mac[6];
	__u8 in_prio[8];    /* ingress-qos-map: PCP -> priority (16: above 15) */
	__u8 pcp[17];       /* egress-qos-map: priority 0..15 -> PCP ([16]: 0) */
};

/* Every VLAN device of the namespace: a malloc'd array, its length, or -errno. */
int xdpr_vlan_devs(struct xdpr_vlan_dev **out);
/* Is name a VLAN device?  1 (and *v), 0, or -errno. */
int xdpr_vlan_of(const char *name, struct xdpr_vlan_dev *v);
/* Receive VLAN offload (ethtool rxvlan); set: -EOPNOTSUPP when the driver keeps it. */
int xdpr_rxvlan_get(const char *dev, bool *on);
int xdpr_rxvlan_set(const char *dev, bool on);

/*
 * Every map the library knows, in one list: X(ID, "name", KIND).  PROG: a
 * map of the program, which every program instance shares (the name is its
 * kernel name, <= 15 characters).  OWN: the library's own, bound to the
 * program (no packet reads them) and absent on routers of older versions
 * (or, XM_FLT_CTL, until the first filter change): XM_SINCE, attach times by
 * slot, XM_FLT_CTL, the filter's rule lists and sets, one per filter slot
 * (loader/filter.c), XM_SLOTS, the name each counter slot was attached
 * under (struct xdpr_slot_name); and XM_BSS, the program's global data (the
 * skeleton names it).  enum xdpr_map, xdpr_map_name() and which maps a
 * router may lack are made from it.
 */
#define XDPR_MK_PROG 0
#define XDPR_MK_OWN  1
#define XDPR_MAPS(X) \
	X(XM_STATS, "xdpr_stats", PROG) \
	X(XM_IFACES, "xdpr_ifaces", PROG) \
	X(XM_TX, "xdpr_tx_ports", PROG) \
	X(XM_CFG, "xdpr_cfg", PROG) \
	X(XM_RULES, "xdpr_nat_rules", PROG) \
	X(XM_NSTATS, "xdpr_nat_stats", PROG) \
	X(XM_CT, "xdpr_nat_ct", PROG) \
	X(XM_BIND, "xdpr_nat_bind", PROG) \
	X(XM_EIM, "xdpr_nat_eim", PROG) \
	X(XM_HOSTS, "xdpr_nat_hosts", PROG) \
	X(XM_RING, "xdpr_nat_ring", PROG) \
	X(XM_RINGHD, "xdpr_nat_ringhd", PROG) \
	X(XM_CURSOR, "xdpr_nat_cursor", PROG) \
	X(XM_RTDIR, "xdpr_rtdir", PROG) \
	X(XM_RTREC, "xdpr_rtrec", PROG) \
	X(XM_RTNH, "xdpr_rtnh", PROG) \
	X(XM_RTSTATS, "xdpr_rt_stats", PROG) \
	X(XM_FLT_WORD, "xdpr_flt_word", PROG) \
	X(XM_FLT_DESC, "xdpr_flt_desc", PROG) \
	X(XM_FLT_VAL, "xdpr_flt_val", PROG) \
	X(XM_FLT_RULE, "xdpr_flt_rule", PROG) \
	X(XM_FLT_LPM4, "xdpr_flt_lpm4", PROG) \
	X(XM_FLT_LPM6, "xdpr_flt_lpm6", PROG) \
	X(XM_FLT_IF, "xdpr_flt_if", PROG) \
	X(XM_FLT_HDR, "xdpr_flt_hdr", PROG) \
	X(XM_FLT_STATS, "xdpr_flt_stats", PROG) \
	X(XM_FLOWS, "xdpr_flt_flows", PROG) \
	X(XM_FLT_FRAGS, "xdpr_flt_frags", PROG) \
	X(XM_VLANS, "xdpr_vlans", PROG) \
	X(XM_VLAN_CFG, "xdpr_vlan_cfg", PROG) \
	X(XM_FWD, "xdpr_nat_fwd", PROG) \
	X(XM_NPT, "xdpr_npt", PROG) \
	X(XM_NPT_STATS, "xdpr_npt_stats", PROG) \
	X(XM_BINAT, "xdpr_binat", PROG) \
	X(XM_BINAT_IN, "xdpr_binat_in", PROG) \
	X(XM_BINAT_OUT, "xdpr_binat_out", PROG) \
	X(XM_BINAT_ST, "xdpr_binat_st", PROG) \
	X(XM_METER, "xdpr_flows", PROG) \
	X(XM_METER_PC, "xdpr_flow_pcpu", PROG) \
	X(XM_DDOS_PROT, "xdpr_ddos_prot", PROG) \
	X(XM_DDOS_TO, "xdpr_ddos_to", PROG) \
	X(XM_DDOS_FROM, "xdpr_ddos_from", PROG) \
	X(XM_DDOS_BANS, "xdpr_ddos_bans", PROG) \
	X(XM_DDOS_STATS, "xdpr_ddos_stats", PROG) \
	X(XM_DDOS_BITS, "xdpr_ddos_bits", PROG) \
	X(XM_DDOS_SLOTS, "xdpr_ddos_slots", PROG) \
	X(XM_NATLOG, "xdpr_natlog", PROG) \
	X(XM_CTA, "xdpr_nat_cta", PROG) \
	X(XM_IF_GEN, "xdpr_if_gen", PROG) \
	X(XM_NBR_REQ, "xdpr_nbr_req", PROG) \
	X(XM_NBR_DEAD, "xdpr_nbr_dead", PROG) \
	X(XM_SINCE, "xdpr_since", OWN) \
	X(XM_FLT_CTL, "xdpr_flt_ctl", OWN) \
	X(XM_SLOTS, "xdpr_slot_names", OWN) \
	X(XM_BSS, "xdpr_bpf.bss", OWN)

enum xdpr_map {
#define XDPR_M_ENUM(id, name, kind) id,
	XDPR_MAPS(XDPR_M_ENUM)
#undef XDPR_M_ENUM
	XM_MAX
};

/* A map's name, as the kernel (bpftool map show) knows it. */
const char *xdpr_map_name(enum xdpr_map m);

/*
 * An interface that was attached and is no longer there under that name
 * (deleted, or deleted and re-created: a new ifindex xdpr is not on).  Its
 * counter slot is kept for it: attaching the name again continues its
 * counters; "link detach NAME" forgets it.
 */
struct xdpr_gone {
	char name[IF_NAMESIZE];
	__u32 old_ifindex;
	enum xdpr_mode mode;
	__u32 slot;
	bool recreated;     /* a device of that name exists again */
	bool forced;        /* it was attached with XDPR_F_FORCE */
	bool vlan;          /* a VLAN of a port (deleted): back on an attached port, it
	                       continues its counters */
	__u32 parent;       /* a VLAN's port, as it was */
};

/* XM_SLOTS values: which interface a counter slot belongs to. */
struct xdpr_slot_name {
	char name[IF_NAMESIZE];
	__u32 ifindex;
	__u32 mode;         /* enum xdpr_mode, | XDPR_SLOT_FORCED, | XDPR_SLOT_VLAN */
	__u32 parent;       /* XDPR_SLOT_VLAN: the VLAN's port */
};
#define XDPR_SLOT_FORCED 0x100u /* attached with "force" (xdpr save says so) */
#define XDPR_SLOT_VLAN   0x200u /* a VLAN of a port, not attached on its own */

struct xdpr {
	int fd[XM_MAX];     /* -1 until found or created */
	int lock_fd;
	int nlinks;
	struct xdpr_link links[XDPR_MAX_IFACES];
	int ngone;
	struct xdpr_gone gone[XDPR_MAX_IFACES];
	char err[512];
	char note[512];     /* warnings worth showing after a successful change, one a line */
	char info[2048];    /* what a change did besides, one a line (VLANs enrolled, ...) */
	bool nf_followed;   /* xdpr_nf_follow() ran since xdpr_open() */
};

#define XDPR_F_FORCE 1u /* replace a foreign XDP program */
#define XDPR_F_SET_CHECKED 4u /* detach: the caller checked the whole set being detached
                                 (xdpr_detach_check) and detaches it a piece at a time */
#define XDPR_F_KEEP_RULES 2u /* detach: an interface's NAT rules stay, waiting for it (its
                                inside sources dropped meanwhile: drop_nat_if_gone) */

/* Outcome of one attach call, for the caller to report. */
struct xdpr_attach_info {
	int n;
	struct {
		char name[IF_NAMESIZE];
		bool dispatcher;         /* false: libxdp fell back to (or was told to use) a plain attach */
		char why[128];           /* libxdp's reason for not using its dispatcher */
		bool replaced_foreign;   /* force removed another program */
		enum xdpr_xmit xmit;
		bool rxvlan_off;         /* receive VLAN offload was on: xdpr turned it off */
		bool rxvlan_stuck;       /* it is on and cannot be turned off (attached with force) */
	} dev[XDPR_MAX_IFACES];
};

#define XDPR_O_LOCK 1u /* serialise with other mutations in this netns first */

/*
 * Find the router of this network namespace.  -ENOENT: nothing attached
 * (x is still usable for xdpr_attach).  XDPR_O_LOCK takes a flock under
 * /run/xdpr, one per network namespace, held until xdpr_close().
 */
int xdpr_open(struct xdpr *x, unsigned int flags);
void xdpr_close(struct xdpr *x);
/* Find the router again (links attached or detached since), keeping the lock. */
int xdpr_refresh(struct xdpr *x);

int xdpr_attach(struct xdpr *x, char *const *ifnames, int n, enum xdpr_mode mode,
		unsigned int flags, struct xdpr_attach_info *info);
/*
 * n == 0: every attached interface.  An interface with NAT rules is refused
 * unless XDPR_F_FORCE (its rules and their sessions are then removed).
 */
int xdpr_detach(struct xdpr *x, char *const *ifnames, int n, unsigned int flags);
/*
 * Ports detached while other interfaces keep xdpr: the kernel forwards
 * their traffic by its own rules, out of a NAT interface untranslated and
 * past the filter.  So xdpr_detach() refuses (-EBUSY, x->err says why and
 * the ways out), unless XDPR_F_FORCE, while an interface that stays
 * translates (NAT, forwards, 1:1, NPTv6 rules, rules waiting for it) or
 * the filter is in force; a detach of every interface is allowed.  The
 * ports go in the order that keeps translating the longest: those that
 * translate first.  xdpr_detach_check() is that check for a caller that
 * detaches a set a piece at a time (then XDPR_F_SET_CHECKED): ifnames
 * reordered in place (attached ports in that order first).
 */
int xdpr_detach_check(struct xdpr *x, char **ifnames, int n);

/*
 * The MAC of every attached interface written again where it changed
 * (ip link set DEV address ...): how many changed, or -errno with x->err.
 */
int xdpr_link_sync(struct xdpr *x);
/*
 * The XDP transmit capability of every attached port probed again (a veth
 * takes redirected frames only while its peer has GRO or XDP) and written
 * where it changed, its VLANs' too: how many changed, a line each in
 * x->info, or -errno with x->err.  link sync, an attach of an attached
 * interface and xdprd's link events call it.
 */
int xdpr_link_reprobe(struct xdpr *x);
/*
 * The VLANs of the attached ports as the kernel has them now: 802.1Q VLAN
 * devices of a port are enrolled (own settings and counters, frames of
 * their VID routed as theirs), changed ones (MAC, QoS maps, up or down)
 * written again, deleted ones and those of detached ports taken out; NAT
 * rules waiting for a new VLAN's name are bound.  Ports whose receive VLAN
 * offload xdpr turned off and someone turned on again get it off again.
 * Hold the lock.  What changed goes to x->info, a line each (warnings to
 * x->note); returns how many changes, or -errno with x->err.
 */
int xdpr_vlan_sync(struct xdpr *x);

/* Find a link by name; NULL if that interface is not attached. */
const struct xdpr_link *xdpr_link_find(const struct xdpr *x, const char *name);

/*
 * The kernel's tick rate (CONFIG_HZ from /boot/config-RELEASE or
 * /proc/config.gz, where libbpf looks), or XDPR_HZ_UNKNOWN when neither
 * says: the datapath's clock for its per-CPU flow copies is jiffies.
 */
unsigned int xdpr_kernel_hz(void);

/* Counters of one interface slot: ncpu entries of struct xdpr_slot. */
int xdpr_ncpus(void);
int xdpr_stats_read(struct xdpr *x, __u32 slot, struct xdpr_slot *percpu);

/* XDP_ACT feature probe through the netdev generic netlink family. */
int xdpr_probe_xdp_features(__u32 ifindex, __u64 *features);
enum xdpr_xmit xdpr_probe_xmit(__u32 ifindex);

/* Internal to the library and its tests (the rest of the internals: core.h). */
/* The inner maps of a route table slot, in the order of xdpr_rt_make_slot's fds. */
enum { XDPR_RT_DIR, XDPR_RT_REC, XDPR_RT_NH, XDPR_RT_MAPS };

/* The NAT tables, each an inner map of a two-slot outer map (xdpr_cfg.nat_slot). */
enum xdpr_nat_tab {
	XDPR_NT_CT, XDPR_NT_BIND, XDPR_NT_EIM, XDPR_NT_HOSTS, XDPR_NT_RING,
	XDPR_NT_FLOWS, /* the filter's flow states (xdpr_flt_flows), sized and switched with them */
	XDPR_NT_CTA,   /* the session slots (xdpr_nat_cta); XDPR_NT_CT holds their overflow */
	XDPR_NT_MAPS
};

/*
 * A session table as userspace reads and writes it: the slot array
 * (mmap-ed) and its overflow hash table (loader/nat_ct.c).  Writes are for
 * a table no packet creates or deletes in (a frozen copy, a test); reads
 * may race the packet path like any map read.
 */
struct xdpr_ct_tab {
	struct xdpr_ct_slot *slot; /* the array, header included */
	size_t len;                /* bytes mapped */
	__u32 mask;
	int ov;                    /* the overflow's fd (not owned) */
};
/* Map the table of these two fds: 0 or -errno. */
int xdpr_ct_open(int cta_fd, int ov_fd, struct xdpr_ct_tab *t);
void xdpr_ct_close(struct xdpr_ct_tab *t);
/* Write the header of a new slot array: slots (a power of two), limit (halves). */
int xdpr_ct_init(int cta_fd, __u32 slots, __u32 limit);
/* Half k's value: 0, or -ENOENT. */
int xdpr_ct_get(const struct xdpr_ct_tab *t, const struct xdpr_ct_key *k, struct xdpr_ct_val *v);
/* Insert (BPF_NOEXIST: -EEXIST, -E2BIG at the limit) or replace (BPF_EXIST: -ENOENT) half k. */
int xdpr_ct_put(struct xdpr_ct_tab *t, const struct xdpr_ct_key *k, const struct xdpr_ct_val *v, __u64 flags);
/* Delete half k: 0, or -ENOENT. */
int xdpr_ct_del(struct xdpr_ct_tab *t, const struct xdpr_ct_key *k);
/*
 * Call cb for every half held (slots, then the overflow), each once while
 * others come and go; stops at the first nonzero return, which it returns.
 */
int xdpr_ct_each(const struct xdpr_ct_tab *t, int (*cb)(const struct xdpr_ct_key *, const struct xdpr_ct_val *, void *),
		 void *arg);
/*
 * Every half held: *n of them in malloc'd *keys and *vals (either may be
 * NULL; NULL when none); 0 or -errno.
 */
int xdpr_ct_dump(const struct xdpr_ct_tab *t, struct xdpr_ct_key **keys, struct xdpr_ct_val **vals, size_t *n);
/* Halves held as the header counts them. */
__u64 xdpr_ct_count(const struct xdpr_ct_tab *t);
/* Empty the table (slots, overflow, count): 0 or -errno. */
int xdpr_ct_clear(struct xdpr_ct_tab *t);
/* A route with its prefix as the library handles it (the maps hold it compacted). */
struct xdpr_rtrec {
	struct xdpr_route r;
	__u8 family;             /* AF_INET / AF_INET6 */
	__u8 plen;
	__u8 addr[16];           /* host bits zero */
};
/*
 * The lookup index of n records (unique prefixes, host bits zero; index i
 * is found as i + 1) and the router's own addresses (family and addr of
 * each local entry; those inside a route are found as XDPR_DIR_LOCAL):
 * *blocks (malloc'd, *nblocks of them) as the packet path reads them.
 */
int xdpr_rt_index(const struct xdpr_rtent *rec, size_t n, const struct xdpr_rtent *local,
		  size_t nlocal, struct xdpr_dir_block **blocks, size_t *nblocks);
/* The inner maps of a slot holding these routes, filled: 0 or -errno with x->err. */
int xdpr_rt_make_slot(struct xdpr *x, const struct xdpr_rtrec *rec, size_t n,
		      const struct xdpr_rtent *local, size_t nlocal, int fd[XDPR_RT_MAPS]);

/* ---- source NAT ---- */
#define XDPR_MAX_CPUS 64  /* per-CPU detail kept for this many CPUs */

struct xdpr_rule_info {
	__u32 id;
	struct xdpr_nat_rule r;
	char dev[IF_NAMESIZE];                 /* the rule's interface by name */
	bool waiting;                          /* that interface is gone or not attached: not applied */
	__u64 ev[XDPR_NE_MAX];                 /* enum xdpr_nat_event, summed */
	__u64 cpu_ev[XDPR_MAX_CPUS][XDPR_NE_MAX];
};

struct xdpr_session {
	struct xdpr_ct_key key;  /* outbound: inside -> remote */
	struct xdpr_ct_val out;  /* outside address/port */
	struct xdpr_ct_val in;
	bool has_in;
	__u8 state;              /* both halves */
	__u64 idle_ns;
	__u64 timeout_ns;
};

/* Outside ports held on one outside address under one listed rule. */
struct xdpr_held {
	__u32 rule;              /* listed rule (bindings of the rules it replaced count here) */
	__be32 addr;             /* outside address */
	__u32 ports[3];          /* bindings by protocol: XDPR_HELD_TCP, _UDP, _ICMP (echo ids) */
	__u32 holddown;          /* of those, without a session: kept for their inside endpoint */
};
enum { XDPR_HELD_TCP, XDPR_HELD_UDP, XDPR_HELD_ICMP };

int xdpr_cfg_get(struct xdpr *x, struct xdpr_cfg *c);
int xdpr_cfg_set(struct xdpr *x, const struct xdpr_cfg *c);
/* Rules in id order with their counters; returns how many. */
int xdpr_nat_list(struct xdpr *x, struct xdpr_rule_info *out, int max);
/*
 * Ports held per listed rule and outside address (in use or in hold-down),
 * sorted by rule then address: *out is malloc'd; returns how many.
 */
int xdpr_nat_held(struct xdpr *x, struct xdpr_held **out);
/*
 * Settle NAT rule state under the lock (xdpr_open with XDPR_O_LOCK calls it;
 * xdpr_attach calls it with the interfaces it just attached): finish or undo
 * what a killed command left, and re-bind rules whose interface was deleted
 * and is attached again under its name.  0 or -errno with x->err.
 */
int xdpr_nat_repair(struct xdpr *x, char *const *attached, int n);
/* A NAT rule (committed, not retired) names that interface. */
bool xdpr_nat_waits_for(struct xdpr *x, const char *name);
/* nr: flags, src, pool, ports filled in; dev and masquerade address are set here. */
int xdpr_nat_add(struct xdpr *x, const char *dev, struct xdpr_nat_rule *nr, bool replace);
int xdpr_nat_del(struct xdpr *x, const char *dev, __be32 net, __be32 mask);
/*
 * Port forwards (`nat add in`): nr holds fwd_to, fwd_port, fwd_proto,
 * fwd_one, port_min/port_max (the outside ports) and pool_first (the
 * outside address; 0: dev's primary IPv4 address).  Refused (-EEXIST,
 * -EADDRINUSE, -EINVAL, ...) with x->err when it overlaps another forward,
 * a NAT mapping holds one of its ports, or an address cannot be used.
 * Delete matches dev, fwd_proto, the outside ports and (when not 0) the
 * address.  xdpr_fwd_format: the words after "nat add in DEV".
 * waiting: dev is not attached (a configuration file's forward): the
 * forward waits for it, as a rule of a deleted interface does (its
 * address must be given).
 */
int xdpr_nat_fwd_add(struct xdpr *x, const char *dev, struct xdpr_nat_rule *nr, bool waiting);
int xdpr_nat_fwd_del(struct xdpr *x, const char *dev, const struct xdpr_nat_rule *m);
void xdpr_fwd_format(const struct xdpr_nat_rule *r, char *buf, size_t len);
/*
 * A rule for an interface xdpr is not attached to (missing, or not yet
 * attached): it waits, as the rule of a deleted interface does.  Its inside
 * sources are dropped rather than forwarded untranslated wherever they
 * would leave (drop_nat_if_gone), and it is bound when DEV is attached.
 */
int xdpr_nat_add_waiting(struct xdpr *x, const char *dev, struct xdpr_nat_rule *nr);
/* rules: delete every rule too; sessions always. */
int xdpr_nat_flush(struct xdpr *x, bool rules, struct xdpr_gc_cmd *res);
int xdpr_nat_gc(struct xdpr *x, __u32 op, __u32 rule, struct xdpr_gc_cmd *res);
/* Live sessions (expired ones awaiting a sweep are skipped). */
int xdpr_nat_sessions(struct xdpr *x, int (*cb)(const struct xdpr_session *, void *), void *arg);

/* The NAT tables' size and memory (loader/nat_tab.c). */
struct xdpr_nat_mem {
	__u32 sessions;     /* the size: sessions the tables hold */
	__u64 entries;      /* session halves in the table now (its own count, slots and overflow) */
	__u64 in_use;       /* bytes, the kernel's count for the live tables */
	__u64 fixed;        /* bytes taken however empty (buckets, ring) */
	__u64 full;         /* bytes when every table is full */
	bool frozen;        /* a resize is copying them (or died within the last 10 s) */
};
int xdpr_nat_mem(struct xdpr *x, struct xdpr_nat_mem *m);
/* Bytes the tables for that many sessions take when full (*fixed: when empty). */
__u64 xdpr_nat_bytes(struct xdpr *x, __u32 sessions, __u64 *fixed);

struct xdpr_nat_resize {
	__u32 old_sessions, sessions;
	__u64 copied[XDPR_NT_MAPS]; /* entries per table (enum xdpr_nat_tab; the ring is not counted;
	                               [XDPR_NT_CT]: every session half, slots and overflow) */
	__u64 frozen_ns;    /* how long new sessions waited */
};
/* New tables for that many sessions, every entry moved, live (see nat_tab.c). */
int xdpr_nat_resize(struct xdpr *x, __u32 sessions, struct xdpr_nat_resize *res);
__u64 xdpr_nat_timeout_ns(const struct xdpr_cfg *c, __u8 proto, __u8 state);
/* accept_local on an interface NAT-ed traffic may arrive on (see nat.c). */
int xdpr_nat_prepare_dev(struct xdpr *x, const char *dev);

/* ---- route map ---- */
struct xdpr_route_spec {
	int family;              /* AF_INET or AF_INET6 */
	__u8 addr[16];
	__u32 plen;
	struct xdpr_route r;     /* action, next hops (id is assigned by the library) */
};

struct xdpr_route_info {
	struct xdpr_route_spec spec;
	struct xdpr_ctr sum;
	struct xdpr_ctr cpu[XDPR_MAX_CPUS];
};

/* Checks devices and gateways, resolves gateways' neighbours; replace keeps the id. */
int xdpr_route_add(struct xdpr *x, struct xdpr_route_spec *rs, bool replace);
int xdpr_route_del(struct xdpr *x, const struct xdpr_route_spec *rs);
/* Build a whole new table aside and switch to it in one update (n == 0: flush). */
int xdpr_route_load(struct xdpr *x, struct xdpr_route_spec *rs, int n);
/*
 * Every route of the live table (only: just that prefix, if there), with
 * counters, in route show order; cb returns non-zero to stop.
 */
int xdpr_route_foreach(struct xdpr *x, const struct xdpr_route_spec *only,
		       int (*cb)(const struct xdpr_route_info *, void *), void *arg);
/* Validate one route against this namespace (devices, gateways); 0 or -errno with x->err. */
int xdpr_route_check(struct xdpr *x, const struct xdpr_route_spec *rs);
/* Ask the kernel to resolve a neighbour (RTM_NEWNEIGH with NTF_USE). */
int xdpr_neigh_use(int family, const void *addr, __u32 ifindex);
/* The neighbour's MAC if the kernel has a usable entry: 1, 0 (none), <0 error. */
int xdpr_neigh_mac(int family, const void *addr, __u32 ifindex, __u8 mac[6]);
/*
 * Rebuild the route table with this namespace's current addresses (they
 * are never taken by a map route); nothing to do without routes.
 */
int xdpr_local_sync(struct xdpr *x);

/* ---- filter (forwarded traffic) and prefix sets ---- */
#define XDPR_SET_NAMESZ   32      /* set names: 1-31 of [A-Za-z0-9_.-] */
#define XDPR_FLT_MAX_SETS 1024
#define XDPR_SET_MAX      XDPR_FLT_LPM_MAX /* members of one set */

enum xdpr_flt_addr_kind { XDPR_FA_ANY = 0, XDPR_FA_PREFIX = 1, XDPR_FA_SET = 2 };

/* A rule's src or dst: any address, a prefix, or a named set ("@NAME"). */
struct xdpr_flt_addr {
	__u8 kind;               /* enum xdpr_flt_addr_kind */
	__u8 family;             /* prefix: AF_INET or AF_INET6 */
	__u8 plen;
	__u8 addr[16];           /* host bits zero */
	char set[XDPR_SET_NAMESZ];
};

/* The optional words a rule has (src, dst, in, out: by their own fields). */
enum xdpr_flt_has {
	XDPR_FH_PROTO     = 1 << 0,
	XDPR_FH_SPORT     = 1 << 1,
	XDPR_FH_DPORT     = 1 << 2,
	XDPR_FH_ICMP_TYPE = 1 << 3,
	XDPR_FH_ICMP_CODE = 1 << 4,
	XDPR_FH_STATE     = 1 << 5,
};

/* One rule as the user wrote it (canonical: cli/filter.c prints it back). */
struct xdpr_flt_spec {
	__u32 id;                /* counter index in xdpr_flt_stats, assigned by the library */
	__u8 action;             /* enum xdpr_flt_action */
	__u8 proto;              /* IP protocol; 1 is icmp (IPv4 only), 58 icmpv6 (IPv6 only) */
	__u8 states;             /* bit 1 << enum xdpr_flt_state for each state named */
	__u8 icmp_type, icmp_code;
	__u16 has;               /* enum xdpr_flt_has */
	__u16 sport[2], dport[2]; /* low, high (inclusive) */
	struct xdpr_flt_addr src, dst;
	char in[IF_NAMESIZE], out[IF_NAMESIZE]; /* "" when not given */
	__u32 in_ifindex, out_ifindex; /* as resolved by the last compile; 0: device missing */
};

struct xdpr_flt_member {
	__u8 family;             /* AF_INET or AF_INET6 */
	__u8 plen;
	__u8 addr[16];           /* host bits zero */
};

struct xdpr_flt_set {
	char name[XDPR_SET_NAMESZ];
	size_t n;
	struct xdpr_flt_member *m; /* sorted (family, address, length), unique */
};

/* What a compiled slot holds (filled by the compiler, kept with the list). */
struct xdpr_flt_info {
	__u32 slot, gen;
	__u32 ndesc, nwords;     /* descriptors and rule words of the classifier */
	__u32 ngroups, nbits;    /* rule shapes of its bit layout, bits they take */
	__u32 nlpm4, nlpm6, nif; /* LPM and interface entries */
	__u32 flags;             /* enum xdpr_flt_hdr_flags */
	__u64 memory;            /* bytes the slot's maps take (LPM and hash nodes estimated) */
};

/* A whole filter: rules in order, the sets they may name, the policy. */
struct xdpr_flt_list {
	__u8 policy;             /* XDPR_FLT_ACCEPT or XDPR_FLT_DROP */
	__u32 next_id;           /* rule ids are handed out round robin from here */
	size_t n;
	struct xdpr_flt_spec *r;
	size_t nsets;
	struct xdpr_flt_set *sets;
	struct xdpr_flt_info info;
};

void xdpr_flt_list_free(struct xdpr_flt_list *l);
/* The set of that name in l, or NULL. */
struct xdpr_flt_set *xdpr_flt_set_find(const struct xdpr_flt_list *l, const char *name);

/*
 * The live filter (rules, sets, policy, what the slot holds); an empty list
 * with policy accept on a router that never had one.  0 or -errno with x->err.
 */
int xdpr_flt_get(struct xdpr *x, struct xdpr_flt_list *l);
/*
 * Changes.  Each validates fully (devices, sets, limits: -ENODEV, -ENOENT,
 * -ENOSPC...), builds the other slot and switches to it in one update:
 * nothing is changed on failure.  pos is 0-based; pos == n, or
 * XDPR_FLT_APPEND, appends.
 */
#define XDPR_FLT_APPEND ((size_t)-1)
int xdpr_flt_insert(struct xdpr *x, struct xdpr_flt_spec *r, size_t pos);
int xdpr_flt_del(struct xdpr *x, size_t pos);
int xdpr_flt_flush(struct xdpr *x);
int xdpr_flt_policy(struct xdpr *x, __u8 policy);
/* Replace every rule; *bad: index of the rule an error is about, else -1. */
int xdpr_flt_load(struct xdpr *x, struct xdpr_flt_spec *r, size_t n, long *bad);
/*
 * Make want (rules, sets, policy) the live filter in one switch; a rule
 * equal to a live one keeps its id and counter.  missing_ok: a device a
 * rule names may not exist (xdprd: it is waited for).  *bad: the rule an
 * error is about, else -1.
 */
int xdpr_flt_replace(struct xdpr *x, const struct xdpr_flt_list *want, bool missing_ok, long *bad);
/* The same filter: policy, rules in order as written, sets and members. */
bool xdpr_flt_same(const struct xdpr_flt_list *a, const struct xdpr_flt_list *b);
/* Members into a set (created when new); the filter is recompiled. */
int xdpr_set_add(struct xdpr *x, const char *name, const struct xdpr_flt_member *m, size_t n);
/* Members out of a set; n == 0: the set itself (refused while a rule names it). */
int xdpr_set_del(struct xdpr *x, const char *name, const struct xdpr_flt_member *m, size_t n);
int xdpr_set_flush(struct xdpr *x, const char *name);
/*
 * Rule counters of every id: *out (malloc'd) holds XDPR_FLT_IDS * *ncpu
 * entries, [id * ncpu + cpu].
 */
int xdpr_flt_counters(struct xdpr *x, struct xdpr_ctr **out, int *ncpu);
/* Flow states: live, and expired ones not yet reused or swept. */
int xdpr_flt_flows(struct xdpr *x, __u64 *live, __u64 *expired, __u64 *max);
/* Delete the expired flow states (XDPR_GC_EXPIRED; an expired state passes nothing). */
int xdpr_flt_flows_gc(struct xdpr *x, struct xdpr_flt_gc_cmd *res);
/* Delete every flow state (the xdpr_flt_gc program, XDPR_GC_ALL): res says how many. */
int xdpr_flt_flows_flush(struct xdpr *x, struct xdpr_flt_gc_cmd *res);
/*
 * After interfaces were attached or detached (loader.c): bind the filter's
 * maps to the program on every interface, and recompile a filter that has
 * rules so that device names are resolved again (a re-created interface
 * has a new ifindex).  attached: the interfaces just attached.
 */
int xdpr_flt_relink(struct xdpr *x, char *const *attached, int n);

/* Internal to the library and its tests: the compiler, a pure function. */
enum xdpr_flt_inner {
	XDPR_FI_WORD, XDPR_FI_DESC, XDPR_FI_VAL, XDPR_FI_RULE, XDPR_FI_LPM4, XDPR_FI_LPM6,
	XDPR_FI_IF, XDPR_FI_MAPS
};

/* A compiled filter slot, as the packet path reads it (layout: xdpr_shared.h). */
struct xdpr_flt_image {
	struct xdpr_flt_hdr hdr;
	__u64 *word;
	size_t nword;            /* >= XDPR_FF_MAX * XDPR_FLT_WORDS */
	struct xdpr_flt_desc *desc;
	size_t ndesc;            /* >= XDPR_FLT_DESC_EMPTY + 1 */
	__u32 *val;              /* XDPR_FV_MAX descriptor ids */
	struct xdpr_flt_rule *rule;
	size_t nrule;
	struct xdpr_flt_lpm4 *lpm4;
	__u32 *lpm4_val;
	size_t nlpm4;
	struct xdpr_flt_lpm6 *lpm6;
	__u32 *lpm6_val;
	size_t nlpm6;
	struct xdpr_flt_ifkey *ifk;
	__u32 *if_val;
	size_t nif;
};

/*
 * Compile a list whose rules have their ids and resolved ifindexes (0:
 * device missing) into img; l->info gets the sizes.  0, or -errno with
 * the reason in err (limits: -ENOSPC; a set a rule names is missing: -ENOENT).
 */
int xdpr_flt_compile(struct xdpr_flt_list *l, struct xdpr_flt_image *img, char *err, size_t len);
void xdpr_flt_image_free(struct xdpr_flt_image *img);
/* The list as the control map stores it (*buf malloc'd, *len bytes, zeros after to 8), and back. */
int xdpr_flt_encode(const struct xdpr_flt_list *l, void **buf, size_t *len);
int xdpr_flt_decode(const void *buf, size_t len, struct xdpr_flt_list *l);

/* ---- netfilter guard ---- */
#define XDPR_NF_MAX 16  /* findings kept in a report */

struct xdpr_nf_report {
	int n;              /* findings kept, at most XDPR_NF_MAX */
	int total;          /* findings in all (more than n: the rest are left out) */
	struct {
		char what[192];  /* "table inet fw chain forward (policy drop, 3 rules)" */
		bool dev_hook;   /* an ingress/egress chain of the devices, not the forward hook */
	} f[XDPR_NF_MAX];
};

/*
 * Netfilter rules of this network namespace that packets forwarded by XDP
 * between devs (the devices being attached and those already attached)
 * would bypass: nftables forward chains (ip, ip6, inet; iptables-nft's
 * too), nftables ingress/egress chains of devs, iptables-legacy and
 * ip6tables-legacy FORWARD chains in the tables already loaded.  A chain
 * counts when it has a rule or a policy other than accept.  Changes
 * nothing, creates no iptables table.  Returns how many were found (0:
 * none), or -errno with x->err (a ruleset that cannot be read is an error,
 * never a pass).
 */
int xdpr_nf_check(struct xdpr *x, char *const *devs, int n, struct xdpr_nf_report *r);
/*
 * Netfilter rules added after the attach (an nft forward policy): the
 * same check on the attached interfaces.  While it finds some and not
 * every port was attached with "force" (which accepts the bypass), the
 * fast path forwards nothing itself: what it would redirect goes to the
 * kernel, translated where NAT applied, where those rules apply
 * (XDPR_CFG_NFT_POLICY, pass_nft_policy); once they are gone, XDP forwards
 * again.  Returns 1 (through the kernel), 2 (rules bypassed: attached with
 * force), 0 (nothing to bypass), or -errno with x->err (unreadable: left as
 * it was); the findings in *nf (may be NULL).  Hold the lock.
 * xdpr_close() of a router opened with XDPR_O_LOCK runs it on the router
 * as it is then, unless the caller did since xdpr_open(): every change
 * looks again.
 */
int xdpr_nf_follow(struct xdpr *x, struct xdpr_nf_report *nf);

const char *xdpr_reason_name(int reason);
const char *xdpr_reason_desc(int reason);
const char *xdpr_mode_name(enum xdpr_mode mode);
/* The build id of the datapath this library loads (struct xdpr_link.build of what it attached). */
const char *xdpr_build_id(void);
const char *xdpr_nat_event_name(int event);

/*
 * NPTv6, RFC 6296 (loader/npt.c): prefix translation on an outside
 * interface.  Changes are all or nothing, under the lock (xdpr_open with
 * XDPR_O_LOCK): the spare table slot is written whole, then made live.
 */
struct xdpr_npt_info {
	__u32 index;                     /* the rule's counter index */
	char dev[IF_NAMESIZE];           /* the outside interface (its name now, or as added) */
	bool attached;                   /* that interface is attached to xdpr */
	__u8 inside[16], outside[16];    /* the prefixes (the first 64 bits are the rule's) */
	struct xdpr_npt_rule r;
	struct xdpr_npt_ctr c;           /* summed over CPUs */
	struct xdpr_npt_ctr cpu[XDPR_MAX_CPUS];
};
/*
 * A rule from its prefixes (16 bytes each) and lengths: the mask, the
 * adjustment word and both adjustments.  Pure; 0, or -EINVAL with the
 * reason in err (lengths differ or are outside 1..64, host bits set,
 * multicast, link-local, loopback or unspecified prefix, inside = outside).
 */
int xdpr_npt_make(struct xdpr_npt_rule *r, const __u8 *inside, unsigned int inside_len,
		  const __u8 *outside, unsigned int outside_len, char *err, size_t len);
/* Add a rule on attached dev (-EEXIST, -EBUSY overlap, -ENODEV, -ENOSPC, -EADDRINUSE). */
int xdpr_npt_add(struct xdpr *x, const char *dev, const struct xdpr_npt_rule *r);
/* Delete dev's rule of that inside prefix (inside NULL: all of dev's); -ENOENT when none. */
int xdpr_npt_del(struct xdpr *x, const char *dev, const __u8 *inside, unsigned int plen);
/* Delete every NPTv6 rule, in one commit (none, or no tables: 0). */
int xdpr_npt_flush(struct xdpr *x);
/* The live rules, in index order: how many, or -errno. */
int xdpr_npt_list(struct xdpr *x, struct xdpr_npt_info *out, int max);
/* ---- 1:1 NAT (IPv4 binat / netmap, loader/binat.c) ---- */
struct xdpr_binat_info {
	struct xdpr_binat_rule r;              /* r.ifname: its interface by name */
	bool gone;                             /* that interface is not attached (its inside
	                                          sources are dropped: drop_nat_if_gone) */
	__u64 ev[XDPR_BE_MAX];                 /* enum xdpr_binat_event, summed over CPUs */
	__u64 cpu_ev[XDPR_MAX_CPUS][XDPR_BE_MAX];
};
/*
 * Inside in_net/plen appears as out_net/plen on DEV (attached), both
 * directions.  Refused (-EINVAL, -EEXIST, -EADDRINUSE with x->err): host
 * bits, /0, addresses never used as a source, an outside prefix holding an
 * address of the router or overlapping another 1:1 rule's or a pool rule's
 * addresses, an inside prefix overlapping another 1:1 rule of DEV.
 */
int xdpr_binat_add(struct xdpr *x, const char *dev, __be32 in_net, __be32 out_net, __u32 plen);
/* DEV's rule for that inside prefix, or (plen < 0) every rule of DEV. */
int xdpr_binat_del(struct xdpr *x, const char *dev, __be32 in_net, int plen);
/* Delete every 1:1 rule, of every interface (none, or no maps: 0). */
int xdpr_binat_flush(struct xdpr *x);
/* Rules in id order with their counters; how many, or -errno. */
int xdpr_binat_list(struct xdpr *x, struct xdpr_binat_info *out, int max);
const char *xdpr_binat_event_name(int event);
/* Does a 1:1 rule name this interface (ifindex)?  Attach keeps its flag. */
bool xdpr_binat_names(struct xdpr *x, __u32 ifindex);
/* ---- flow meter (bpf/flow.h, loader/flow.c), read by the IPFIX / NetFlow exporter ---- */
struct xdpr_flow {              /* one metered flow, summed over CPUs */
	__u8  family;           /* AF_INET or AF_INET6 */
	__u8  proto;            /* IPPROTO_* */
	__u8  tcp_flags;        /* OR of the flags of every metered packet */
	__u8  xlated;           /* bit 0: source translated, bit 1: destination translated */
	__u32 in_ifindex, out_ifindex;
	__u8  src[16], dst[16]; /* as it arrived; IPv4 in the first 4 bytes (network order) */
	__u16 sport, dport;     /* host order; ICMP: 0, type << 8 | code */
	__u8  xsrc[16], xdst[16]; /* as it left (equal to src/dst when not translated) */
	__u16 xsport, xdport;   /* host order */
	__u64 packets, bytes;   /* bytes: IP total length (L3), as IPFIX octetDeltaCount */
	__u64 first_ns, last_ns;/* CLOCK_MONOTONIC_COARSE (bpf_ktime_get_coarse_ns) of first/last packet */
	__u8  key[XDPR_FLOW_KEY_LEN]; /* opaque: pass back to xdpr_flow_delete */
};
#define XDPR_FLOW_XSRC 1u /* xdpr_flow.xlated */
#define XDPR_FLOW_XDST 2u
/*
 * Every metered flow, per-CPU values merged (the tuple as it left and the
 * egress: the CPU's that saw the last packet); cb returns non-zero to
 * stop (then that value is returned).  cb may delete the flow it is given.
 * 0 or -errno with x->err.  Packets are the metered ones: with sampling 1
 * in N, about 1/N of those forwarded.
 */
int xdpr_flow_foreach(struct xdpr *x, int (*cb)(const struct xdpr_flow *f, void *arg), void *arg);
int xdpr_flow_delete(struct xdpr *x, const struct xdpr_flow *f);  /* -ENOENT if gone */
/*
 * The largest sample of the flow and DDoS meters: the datapath draws gaps of
 * 1 to 2N - 1 packets (bpf/ddos.h), which must fit 32 bits.
 */
#define XDPR_SAMPLE_MAX 1000000
/*
 * Meter on/off, 1 packet in sample per CPU (0: 1).  Hold the lock (XDPR_O_LOCK).
 * -EINVAL (nothing changed) above XDPR_SAMPLE_MAX.
 */
int xdpr_flow_set(struct xdpr *x, bool on, __u32 sample);
/*
 * Meter state; any pointer may be NULL: unmetered, packets of new flows that
 * found the table full (summed over CPUs, since the program was loaded);
 * count, flows in the table now; max, its size.
 */
int xdpr_flow_get(struct xdpr *x, bool *on, __u32 *sample, __u64 *unmetered, __u64 *count, __u64 *max);
/* Delete every metered flow: how many, or -errno with x->err. */
long xdpr_flow_flush(struct xdpr *x);

/* ---- DDoS meters and bans (bpf/ddos.h, loader/ddos.c) ---- */
struct xdpr_ddos_host {         /* one metered host, summed over CPUs, cumulative */
	__u8  family;           /* AF_INET or AF_INET6 */
	__u8  dir;              /* XDPR_DDOS_TO: a protected destination; _FROM: a source */
	__u8  addr[16];         /* IPv4 in the first 4 bytes (network order) */
	__u64 packets, bytes;   /* bytes: L3, as the packets arrived */
	__u64 last_ns;          /* coarse clock (xdpr_ddos_now_ns) of its last packet */
};
struct xdpr_ddos_ban_info {
	__u8  family, dir;      /* dir XDPR_DDOS_TO: packets to addr; _FROM: packets from it */
	__u8  addr[16];
	__u32 reason, flags;    /* enum xdpr_ddos_reason, XDPR_DDOS_F_* */
	__u64 until_ns, since_ns; /* coarse clock; until XDPR_DDOS_FOREVER: no end */
	__u64 pps, bps;         /* the rates that caused it (0: manual) */
	__u64 dropped_pkts, dropped_bytes; /* summed over CPUs (ignored by xdpr_ddos_ban) */
};
struct xdpr_ddos_stats {        /* struct xdpr_ddos_stat summed over CPUs, since load */
	__u64 metered, untracked, banned;
};
/* Meters on or off (XDPR_CFG_DDOS).  Hold the lock (XDPR_O_LOCK). */
int xdpr_ddos_set(struct xdpr *x, bool on);
/*
 * Meter 1 packet in n per CPU (0 or 1: every one), each metered packet
 * counted n times: meters, rates and thresholds stay in real units, an
 * estimate within the sampling's error; bans still see every packet.
 * -EINVAL (nothing changed) above XDPR_SAMPLE_MAX.
 */
int xdpr_ddos_set_sample(struct xdpr *x, __u32 n);
int xdpr_ddos_get_sample(struct xdpr *x, __u32 *n);
/*
 * Any pointer may be NULL: on; untracked, packets to protected hosts that
 * found their slot another's and the "to" table full (summed, since load);
 * hosts, "to" hosts metered now (in slots or the table); max, the room for
 * them: XDPR_DDOS_SLOTS slot values and the table's size.
 */
int xdpr_ddos_get(struct xdpr *x, bool *on, __u64 *untracked, __u64 *hosts, __u64 *max);
int xdpr_ddos_stats(struct xdpr *x, struct xdpr_ddos_stats *s);
/*
 * Add or delete a protected prefix: -EEXIST, -ENOENT, -EINVAL (host bits,
 * bad length or family), -ENOSPC (full), with x->err.
 */
int xdpr_ddos_protect(struct xdpr *x, int family, const void *addr, int plen, bool add);
int xdpr_ddos_protect_foreach(struct xdpr *x, int (*cb)(int family, const void *addr, int plen, void *arg),
			      void *arg);
/* Every metered host, "to" then "from"; cb non-zero stops (returned); cb may delete its host. */
int xdpr_ddos_host_foreach(struct xdpr *x, int (*cb)(const struct xdpr_ddos_host *h, void *arg), void *arg);
int xdpr_ddos_host_delete(struct xdpr *x, const struct xdpr_ddos_host *h); /* -ENOENT if gone */
/* Add or replace a ban (its drop counters kept on replace); sets XDPR_CFG_BANS.  Hold the lock. */
int xdpr_ddos_ban(struct xdpr *x, const struct xdpr_ddos_ban_info *b);
/* -ENOENT if none; clears XDPR_CFG_BANS when the table is empty.  Hold the lock. */
int xdpr_ddos_unban(struct xdpr *x, int family, int dir, const void *addr);
/* Every ban, expired ones too (until_ns < xdpr_ddos_now_ns(): they drop nothing). */
int xdpr_ddos_ban_foreach(struct xdpr *x, int (*cb)(const struct xdpr_ddos_ban_info *b, void *arg), void *arg);
#define XDPR_DDOS_FLUSH_HOSTS   1u
#define XDPR_DDOS_FLUSH_BANS    2u
#define XDPR_DDOS_FLUSH_PROTECT 4u
/* Delete what "what" names: how many entries, or -errno with x->err.  Hold the lock for bans. */
long xdpr_ddos_flush(struct xdpr *x, unsigned int what);
/* CLOCK_MONOTONIC_COARSE in ns: the datapath's clock (until_ns, last_ns). */
__u64 xdpr_ddos_now_ns(void);
const char *xdpr_ddos_reason_name(__u32 reason); /* "manual", "pps", "bps" */

/* ---- NAT event log (bpf/natlog.h, loader/natlog.c), read by xdprd's exporter ---- */
#define XDPR_NATLOG_BYTES (1u << 20) /* the ring: 21,845 records (40 bytes + an 8-byte header) */
struct xdpr_natlog;
/* A record; non-zero stops the consume call (that value is returned then). */
typedef int (*xdpr_natlog_cb)(const struct xdpr_natlog_rec *r, void *arg);
/*
 * A reader of the router's NAT event ring (the router of x, opened: it
 * needs the map only, and keeps its own reference).  NULL with errno and
 * x->err.  One reader at a time: records consumed are gone for others.
 */
struct xdpr_natlog *xdpr_natlog_open(struct xdpr *x, xdpr_natlog_cb cb, void *arg);
/* Readable (poll, epoll) when records wait. */
int xdpr_natlog_fd(const struct xdpr_natlog *l);
/* Every record waiting, to cb: how many, or -errno (or cb's non-zero). Never blocks. */
int xdpr_natlog_consume(struct xdpr_natlog *l);
/* Is l the ring of x's router (not of one detached and attached again since)? */
bool xdpr_natlog_is(const struct xdpr_natlog *l, struct xdpr *x);
void xdpr_natlog_close(struct xdpr_natlog *l);
/* Logging on/off (XDPR_CFG_NATLOG).  Hold the lock (XDPR_O_LOCK). */
int xdpr_natlog_set(struct xdpr *x, bool on);
int xdpr_natlog_get(struct xdpr *x, bool *on);
/* Records the fast path could not log (ring full), every rule, summed over CPUs. */
int xdpr_natlog_lost(struct xdpr *x, __u64 *lost);

/* ---- neighbours the fast path needs (bpf/neigh.h, loader/nbr.c), for xdprd ---- */
struct xdpr_nbr;
/* A request; non-zero stops the consume call. */
typedef int (*xdpr_nbr_cb)(const struct xdpr_nbr_rec *r, void *arg);
/* A reader of the router's request ring (one at a time), and its dead-next-hop marks.  NULL with errno, x->err. */
struct xdpr_nbr *xdpr_nbr_open(struct xdpr *x, xdpr_nbr_cb cb, void *arg);
int xdpr_nbr_fd(const struct xdpr_nbr *l);        /* readable when requests wait */
int xdpr_nbr_consume(struct xdpr_nbr *l);         /* every request waiting, to cb; never blocks */
bool xdpr_nbr_is(const struct xdpr_nbr *l, struct xdpr *x); /* the ring of x's router still? */
void xdpr_nbr_close(struct xdpr_nbr *l);
/* Mark next hop k dead until until_ns (CLOCK_MONOTONIC); unmark (1 if it was); is it marked at now_ns? */
int xdpr_nbr_mark(struct xdpr_nbr *l, const struct xdpr_nbr_key *k, __u64 until_ns);
int xdpr_nbr_unmark(struct xdpr_nbr *l, const struct xdpr_nbr_key *k);
bool xdpr_nbr_marked(struct xdpr_nbr *l, const struct xdpr_nbr_key *k, __u64 now_ns);
/* Delete the marks lapsed at now_ns: how many. */
int xdpr_nbr_sweep(struct xdpr_nbr *l, __u64 now_ns);
/* The program's request counts (enum xdpr_nbr_stat; since it was loaded).  0 or -errno. */
int xdpr_nbr_counts(struct xdpr *x, __u64 out[XDPR_NB_MAX]);

#endif /* LIBXDPR_H */
