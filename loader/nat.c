// SPDX-License-Identifier: GPL-2.0
/*
 * nat.c - source NAT rules, settings, sessions and garbage collection.
 *
 * Rules live in an array (xdpr_nat_rules) and are referenced by id from the
 * outside interface's xdpr_ifaces entry.  A change writes the new rule into
 * a free slot first and then replaces the interface entry in one update
 * (a hash update is an RCU swap), so packets see the old rule set or the
 * new one, never a mix.  Rule ids are handed out round robin so that a
 * freshly freed id is not reused while stragglers may still count on it.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core.h"

static __u32 zero_key;

int xdpr_cfg_get(struct xdpr *x, struct xdpr_cfg *c)
{
	if (bpf_map_lookup_elem(x->fd[XM_CFG], &zero_key, c)) {
		seterr(x, "cannot read the configuration: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

int xdpr_cfg_set(struct xdpr *x, const struct xdpr_cfg *c)
{
	if (bpf_map_update_elem(x->fd[XM_CFG], &zero_key, c, BPF_ANY)) {
		seterr(x, "cannot write the configuration: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* Primary IPv4 address of a device (masquerade without BPF_FIB_LOOKUP_SRC). */
static __be32 dev_ipv4(const char *dev)
{
	struct ifaddrs *ifa, *i;
	__be32 a = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && !a; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, dev))
			a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
	freeifaddrs(ifa);
	return a;
}

static void fmt_prefix(__be32 net, __be32 mask, char *buf, size_t len)
{
	char a[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &net, a, sizeof(a));
	snprintf(buf, len, "%s/%d", a, __builtin_popcount(mask));
}

int xdpr_nat_list(struct xdpr *x, struct xdpr_rule_info *out, int max)
{
	int ncpu = xdpr_ncpus(), n = 0;
	__u64 *vals;

	if (ncpu <= 0)
		return ncpu;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 id = 1; id < XDPR_NAT_MAX_RULES && n < max; id++) {
		struct xdpr_rule_info *ri = &out[n];

		memset(ri, 0, sizeof(*ri));
		if (bpf_map_lookup_elem(x->fd[XM_RULES], &id, &ri->r) || !ri->r.ifindex ||
		    (ri->r.flags & XDPR_NAT_RETIRED))
			continue;
		ri->id = id;
		if (!if_indextoname(ri->r.ifindex, ri->dev))
			snprintf(ri->dev, sizeof(ri->dev), "if%u", ri->r.ifindex);
		for (int e = 0; e < XDPR_NE_MAX; e++) {
			__u32 key = id * XDPR_NE_MAX + e;

			if (bpf_map_lookup_elem(x->fd[XM_NSTATS], &key, vals))
				continue;
			for (int c = 0; c < ncpu && c < XDPR_MAX_CPUS; c++) {
				ri->ev[e] += vals[c];
				ri->cpu_ev[c][e] = vals[c];
			}
		}
		n++;
	}
	free(vals);
	return n;
}

static int zero_rule_counters(struct xdpr *x, __u32 id)
{
	int ncpu = xdpr_ncpus();
	__u64 *zero = calloc(ncpu > 0 ? ncpu : 1, sizeof(*zero));
	int err = 0;

	if (!zero)
		return -ENOMEM;
	for (int e = 0; e < XDPR_NE_MAX && !err; e++) {
		__u32 key = id * XDPR_NE_MAX + e;

		if (bpf_map_update_elem(x->fd[XM_NSTATS], &key, zero, BPF_ANY))
			err = -errno;
	}
	free(zero);
	return err;
}

static bool overlap(const struct xdpr_nat_rule *a, const struct xdpr_nat_rule *b)
{
	__be32 m = a->src_mask & b->src_mask;

	return (a->src_net & m) == (b->src_net & m);
}

static int write_sysctl(const char *dev, const char *knob, const char *val)
{
	char path[128];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/%s", dev, knob);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fputs(val, f) < 0)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static int read_sysctl(const char *dev, const char *knob)
{
	char path[128];
	int v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/%s", dev, knob);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * A masqueraded packet the fast path hands to the kernel (next hop not
 * resolved yet) carries one of the router's own addresses as its source;
 * the kernel drops such packets as martians unless accept_local is set on
 * the interface they arrive on.  Set it on every attached interface while
 * NAT rules exist.  Strict reverse-path filtering would still drop them:
 * say so.
 */
int xdpr_nat_prepare_dev(struct xdpr *x, const char *dev)
{
	int err = write_sysctl(dev, "accept_local", "1");

	if (err) {
		seterr(x, "cannot set net.ipv4.conf.%s.accept_local: %s", dev, strerror(-err));
		return err;
	}
	if (read_sysctl(dev, "rp_filter") == 1 || read_sysctl("all", "rp_filter") == 1)
		snprintf(x->note, sizeof(x->note),
			 "rp_filter is strict (1) for \"%s\": translated packets waiting for a "
			 "neighbour are dropped by the kernel; use rp_filter 0 or 2", dev);
	return 0;
}

static int set_nat_flag(struct xdpr *x)
{
	struct xdpr_rule_info *ri = calloc(XDPR_NAT_MAX_RULES, sizeof(*ri));
	struct xdpr_cfg c;
	int n, err;

	if (!ri)
		return -ENOMEM;
	n = xdpr_nat_list(x, ri, XDPR_NAT_MAX_RULES);
	free(ri);
	if (n < 0)
		return n;
	err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	for (int i = 0; n && i < x->nlinks; i++) {
		err = xdpr_nat_prepare_dev(x, x->links[i].name);
		if (err)
			return err;
	}
	if (n)
		c.flags |= XDPR_CFG_NAT;
	else
		c.flags &= ~XDPR_CFG_NAT;
	return xdpr_cfg_set(x, &c);
}

int xdpr_nat_add(struct xdpr *x, const char *dev, struct xdpr_nat_rule *nr, bool replace)
{
	const struct xdpr_link *l = xdpr_link_find(x, dev);
	struct xdpr_iface ifc;
	struct xdpr_nat_rule cur;
	struct xdpr_cfg c;
	__u32 id = 0, old_id = 0;
	int slot = -1, err;
	char p1[32], p2[32];

	if (!l) {
		if (!if_nametoindex(dev))
			seterr(x, "cannot find device \"%s\"", dev);
		else
			seterr(x, "xdpr is not attached to \"%s\": attach it first", dev);
		return -ENODEV;
	}
	if (bpf_map_lookup_elem(x->fd[XM_IFACES], &l->ifindex, &ifc)) {
		seterr(x, "\"%s\" is being attached or detached; try again", dev);
		return -EAGAIN;
	}
	nr->ifindex = l->ifindex;
	nr->masq_addr = (nr->flags & XDPR_NAT_MASQ) ? dev_ipv4(dev) : 0;
	err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	if ((nr->flags & XDPR_NAT_MASQ) && !nr->masq_addr && !(c.flags & XDPR_CFG_FIB_SRC)) {
		seterr(x, "\"%s\" has no IPv4 address to masquerade to", dev);
		return -EADDRNOTAVAIL;
	}

	/* Same interface, overlapping sources: only an exact replace is allowed. */
	for (int i = 0; i < ifc.nrules && i < XDPR_NAT_IF_RULES; i++) {
		__u32 rid = ifc.rules[i];

		if (bpf_map_lookup_elem(x->fd[XM_RULES], &rid, &cur) || !cur.ifindex)
			continue;
		if (!overlap(&cur, nr))
			continue;
		if (replace && cur.src_net == nr->src_net && cur.src_mask == nr->src_mask) {
			old_id = rid;
			slot = i;
			continue;
		}
		fmt_prefix(cur.src_net, cur.src_mask, p1, sizeof(p1));
		fmt_prefix(nr->src_net, nr->src_mask, p2, sizeof(p2));
		seterr(x, "src %s overlaps rule %u (src %s) on \"%s\"", p2, rid, p1, dev);
		return -EEXIST;
	}
	if (replace && !old_id) {
		fmt_prefix(nr->src_net, nr->src_mask, p2, sizeof(p2));
		seterr(x, "no NAT rule for src %s on \"%s\" to replace", p2, dev);
		return -ENOENT;
	}
	if (!replace && ifc.nrules >= XDPR_NAT_IF_RULES) {
		seterr(x, "\"%s\" has %d NAT rules already", dev, XDPR_NAT_IF_RULES);
		return -ENOSPC;
	}

	/* A free id, round robin. */
	for (__u32 k = 0; k < XDPR_NAT_MAX_RULES - 1 && !id; k++) {
		__u32 cand = 1 + (c.next_rule + k) % (XDPR_NAT_MAX_RULES - 1);

		if (bpf_map_lookup_elem(x->fd[XM_RULES], &cand, &cur) || !cur.ifindex)
			id = cand;
	}
	if (!id) {
		seterr(x, "all %d NAT rule slots are in use", XDPR_NAT_MAX_RULES - 1);
		return -ENOSPC;
	}

	/* New rule first, then the interface entry that makes it live. */
	err = zero_rule_counters(x, id);
	if (!err && bpf_map_update_elem(x->fd[XM_RULES], &id, nr, BPF_ANY))
		err = -errno;
	if (err) {
		seterr(x, "cannot write the NAT rule: %s", strerror(-err));
		return err;
	}
	if (slot >= 0)
		ifc.rules[slot] = id;
	else
		ifc.rules[ifc.nrules++] = id;
	if (bpf_map_update_elem(x->fd[XM_IFACES], &l->ifindex, &ifc, BPF_EXIST)) {
		err = -errno;
		memset(&cur, 0, sizeof(cur));
		bpf_map_update_elem(x->fd[XM_RULES], &id, &cur, BPF_ANY);
		seterr(x, "cannot activate the NAT rule on \"%s\": %s", dev, strerror(-err));
		return err;
	}
	c.next_rule = id;
	if (old_id && !bpf_map_lookup_elem(x->fd[XM_RULES], &old_id, &cur)) {
		/* the replaced rule's sessions keep their mappings until they end */
		cur.flags |= XDPR_NAT_RETIRED;
		bpf_map_update_elem(x->fd[XM_RULES], &old_id, &cur, BPF_ANY);
	}
	err = xdpr_cfg_set(x, &c);
	return err ? err : set_nat_flag(x);
}

int xdpr_nat_gc(struct xdpr *x, __u32 op, __u32 rule, struct xdpr_gc_cmd *res)
{
	struct xdpr_gc_cmd cmd[2] = { { .op = op, .rule = rule } }; /* >= ETH_HLEN of input */
	int err = xdpr_run_prog(x, XDPR_PROG_GC, cmd, sizeof(cmd), 0);

	if (!err && res)
		*res = cmd[0];
	return err;
}

/* Take rule ids off their interfaces; ids == NULL: every rule. */
static int unlink_rules(struct xdpr *x, const __u32 *ids, int nids)
{
	for (int i = 0; i < x->nlinks; i++) {
		struct xdpr_iface ifc;
		int kept = 0;

		if (bpf_map_lookup_elem(x->fd[XM_IFACES], &x->links[i].ifindex, &ifc) || !ifc.nrules)
			continue;
		for (int r = 0; r < ifc.nrules && r < XDPR_NAT_IF_RULES; r++) {
			bool drop = !ids;

			for (int k = 0; ids && k < nids; k++)
				drop |= ifc.rules[r] == ids[k];
			if (!drop)
				ifc.rules[kept++] = ifc.rules[r];
		}
		if (kept == ifc.nrules)
			continue;
		ifc.nrules = kept;
		if (bpf_map_update_elem(x->fd[XM_IFACES], &x->links[i].ifindex, &ifc, BPF_EXIST)) {
			seterr(x, "cannot update \"%s\": %s", x->links[i].name, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

int xdpr_nat_del(struct xdpr *x, const char *dev, __be32 net, __be32 mask)
{
	struct xdpr_rule_info *ri = calloc(XDPR_NAT_MAX_RULES, sizeof(*ri));
	struct xdpr_nat_rule empty = {}, r;
	__u32 id = 0, ifindex = 0;
	int n, err;
	char p[32];

	if (!ri)
		return -ENOMEM;
	n = xdpr_nat_list(x, ri, XDPR_NAT_MAX_RULES);
	for (int i = 0; i < n; i++)
		if (!strcmp(ri[i].dev, dev) && ri[i].r.src_net == net && ri[i].r.src_mask == mask) {
			id = ri[i].id;
			ifindex = ri[i].r.ifindex;
		}
	free(ri);
	if (n < 0)
		return n;
	if (!id) {
		fmt_prefix(net, mask, p, sizeof(p));
		if (!xdpr_link_find(x, dev))
			seterr(x, if_nametoindex(dev) ? "xdpr is not attached to \"%s\""
						     : "cannot find device \"%s\"", dev);
		else
			seterr(x, "no NAT rule for src %s on \"%s\"", p, dev);
		return -ENOENT;
	}
	err = unlink_rules(x, &id, 1);
	/* its flows end now: its own sessions and those of rules it replaced here */
	for (__u32 k = 1; !err && k < XDPR_NAT_MAX_RULES; k++) {
		if (bpf_map_lookup_elem(x->fd[XM_RULES], &k, &r) || r.ifindex != ifindex ||
		    (k != id && !(r.flags & XDPR_NAT_RETIRED)))
			continue;
		err = xdpr_nat_gc(x, XDPR_GC_RULE, k, NULL);
		if (!err && bpf_map_update_elem(x->fd[XM_RULES], &k, &empty, BPF_ANY))
			err = -errno;
	}
	return err ? err : set_nat_flag(x);
}

int xdpr_nat_flush(struct xdpr *x, bool rules, struct xdpr_gc_cmd *res)
{
	struct xdpr_nat_rule empty = {};
	int err = 0;

	if (rules) {
		err = unlink_rules(x, NULL, 0);
		for (__u32 id = 1; !err && id < XDPR_NAT_MAX_RULES; id++)
			if (bpf_map_update_elem(x->fd[XM_RULES], &id, &empty, BPF_ANY))
				err = -errno;
		if (!err)
			err = set_nat_flag(x);
	}
	return err ? err : xdpr_nat_gc(x, XDPR_GC_ALL, 0, res);
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Session timeout as the datapath computes it (nat_timeout in bpf/nat.h). */
__u64 xdpr_nat_timeout_ns(const struct xdpr_cfg *c, __u8 proto, __u8 state)
{
	__u32 s;

	if (proto == IPPROTO_TCP) {
		if ((state & XDPR_CT_RST) || ((state & XDPR_CT_FIN_OUT) && (state & XDPR_CT_FIN_IN)))
			s = c->tcp_trans;
		else if ((state & XDPR_CT_SEEN_OUT) && (state & XDPR_CT_SEEN_IN))
			s = c->tcp_est;
		else
			s = c->tcp_trans;
	} else {
		s = proto == IPPROTO_UDP ? c->udp : c->icmp;
	}
	return (__u64)s * 1000000000ULL;
}

int xdpr_nat_sessions(struct xdpr *x, int (*cb)(const struct xdpr_session *, void *), void *arg)
{
	struct xdpr_ct_key k, next, *prev = NULL;
	struct xdpr_cfg c;
	__u64 now = mono_ns();
	int err;

	err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	while (!bpf_map_get_next_key(x->fd[XM_CT], prev, &next)) {
		struct xdpr_session s = {};
		struct xdpr_ct_key ik;
		__u64 last;

		k = next;
		prev = &k;
		if (k.dir != XDPR_CT_OUT || bpf_map_lookup_elem(x->fd[XM_CT], &k, &s.out))
			continue;
		s.key = k;
		ik = (struct xdpr_ct_key){ .saddr = k.daddr, .daddr = s.out.xaddr, .sport = k.dport,
					   .dport = s.out.xport, .proto = k.proto, .dir = XDPR_CT_IN };
		s.has_in = !bpf_map_lookup_elem(x->fd[XM_CT], &ik, &s.in);
		s.state = s.out.state | (s.has_in ? s.in.state : 0);
		last = s.out.last_seen;
		if (s.has_in && s.in.last_seen > last)
			last = s.in.last_seen;
		s.idle_ns = now > last ? now - last : 0;
		s.timeout_ns = xdpr_nat_timeout_ns(&c, k.proto, s.state);
		if (s.idle_ns > s.timeout_ns)
			continue; /* expired, waiting for a sweep: not a live session */
		err = cb(&s, arg);
		if (err)
			return err;
	}
	return 0;
}
