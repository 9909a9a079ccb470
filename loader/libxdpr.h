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
	__u64 since;        /* attach time, Unix seconds */
	bool dispatcher;    /* attached through libxdp's dispatcher */
	struct xdpr_iface cfg;
	bool has_cfg;       /* cfg read from xdpr_ifaces */
};

/*
 * The maps every program instance shares (names in xdpr_shared.h), and
 * XM_SINCE, the library's own: attach times by slot, bound to the program
 * (no packet reads it) and absent on routers of older versions.
 */
enum xdpr_map {
	XM_STATS, XM_IFACES, XM_TX, XM_CFG, XM_RULES, XM_NSTATS, XM_CT, XM_BIND, XM_EIM,
	XM_HOSTS, XM_RING, XM_RINGHD, XM_CURSOR, XM_RTDIR, XM_RTREC, XM_RTNH, XM_RTSTATS,
	XM_SINCE,
	XM_MAX
};

struct xdpr {
	int fd[XM_MAX];     /* -1 until found or created */
	int lock_fd;
	int nlinks;
	struct xdpr_link links[XDPR_MAX_IFACES];
	char err[512];
	char note[512];     /* warnings worth showing after a successful change, one a line */
};

#define XDPR_F_FORCE 1u /* replace a foreign XDP program */

/* Outcome of one attach call, for the caller to report. */
struct xdpr_attach_info {
	int n;
	struct {
		char name[IF_NAMESIZE];
		bool dispatcher;         /* false: libxdp fell back to (or was told to use) a plain attach */
		char why[128];           /* libxdp's reason for not using its dispatcher */
		bool replaced_foreign;   /* force removed another program */
		enum xdpr_xmit xmit;
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

int xdpr_attach(struct xdpr *x, char *const *ifnames, int n, enum xdpr_mode mode,
		unsigned int flags, struct xdpr_attach_info *info);
/*
 * n == 0: every attached interface.  An interface with NAT rules is refused
 * unless XDPR_F_FORCE (its rules and their sessions are then removed).
 */
int xdpr_detach(struct xdpr *x, char *const *ifnames, int n, unsigned int flags);

/* Find a link by name; NULL if that interface is not attached. */
const struct xdpr_link *xdpr_link_find(const struct xdpr *x, const char *name);

/* Counters of one interface slot: ncpu entries of struct xdpr_slot. */
int xdpr_ncpus(void);
int xdpr_stats_read(struct xdpr *x, __u32 slot, struct xdpr_slot *percpu);

/* XDP_ACT feature probe through the netdev generic netlink family. */
int xdpr_probe_xdp_features(__u32 ifindex, __u64 *features);
enum xdpr_xmit xdpr_probe_xmit(__u32 ifindex);

/* Internal to the library and its tests (the rest of the internals: core.h). */
/* The inner maps of a route table slot, in the order of xdpr_rt_make_slot's fds. */
enum { XDPR_RT_DIR, XDPR_RT_REC, XDPR_RT_NH, XDPR_RT_MAPS };
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
/* nr: flags, src, pool, ports filled in; dev and masquerade address are set here. */
int xdpr_nat_add(struct xdpr *x, const char *dev, struct xdpr_nat_rule *nr, bool replace);
int xdpr_nat_del(struct xdpr *x, const char *dev, __be32 net, __be32 mask);
/* rules: delete every rule too; sessions always. */
int xdpr_nat_flush(struct xdpr *x, bool rules, struct xdpr_gc_cmd *res);
int xdpr_nat_gc(struct xdpr *x, __u32 op, __u32 rule, struct xdpr_gc_cmd *res);
/* Live sessions (expired ones awaiting a sweep are skipped). */
int xdpr_nat_sessions(struct xdpr *x, int (*cb)(const struct xdpr_session *, void *), void *arg);
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

const char *xdpr_reason_name(int reason);
const char *xdpr_reason_desc(int reason);
const char *xdpr_mode_name(enum xdpr_mode mode);
const char *xdpr_nat_event_name(int event);

#endif /* LIBXDPR_H */
