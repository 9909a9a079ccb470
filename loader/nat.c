// SPDX-License-Identifier: GPL-2.0
/*
 * nat.c - source NAT rules, settings, sessions and garbage collection.
 *
 * Rules live in an array (xdpr_nat_rules) and are referenced by id from the
 * outside interface's xdpr_ifaces entry: the packet path applies exactly the
 * rules that entry lists.  Every change has one commit point, the update of
 * that entry (a hash update is an RCU swap: packets see the old rule set or
 * the new one, never a mix).  What comes before it is invisible, what comes
 * after it only tidies up:
 *
 *   add      counters zeroed, new slot written and marked NAT_ADDING
 *            -> the entry lists it -> unmarked
 *   replace  old slot marked NAT_REPLACED, new slot written NAT_ADDING
 *            -> the entry lists the new id in the old one's place
 *            -> old one retired (its sessions live on), new one unmarked
 *   del      slot marked NAT_DELETING -> the entry without it
 *            -> its sessions and those of the rules it replaced removed,
 *               their slots freed
 *
 * A killed command leaves a mark that says what was in flight, and the
 * entry says whether it committed: nat_settle(), run under the lock by every
 * locked command (xdpr_nat_repair), finishes what committed and undoes what
 * did not.  A rule is listed if and only if it is applied, or waiting:
 *
 * Rules follow their interface by name.  A rule whose interface was deleted
 * (or is not attached) waits: listed, not applied.  When an interface of that
 * name is attached again the rule is re-bound: that interface's entry lists
 * it (the commit), then its slot takes the new ifindex.  An unmarked rule that
 * no entry lists is such a rule (the dead interface's entry may have been
 * pruned): that is why a deletion marks the slot before it commits.
 *
 * Rule ids are handed out round robin so that a freshly freed id is not
 * reused while stragglers may still count on it.
 *
 * Test hooks (environment; never set them on a router in service):
 *   XDPR_CRASH_AT=OP:STEP  the command kills itself (SIGKILL) at that step,
 *                          so a test can check every state a killed change
 *                          leaves (selftests/netns/nat_kill9.t);
 *   XDPR_FAULT=sysctl      the sysctl writes of "nat add" fail (EROFS);
 *   XDPR_FAULT=sysctl:DEV  only those for interface DEV.
 * Steps in the order a command passes them (OP: add or replace):
 *   OP:prepared         sysctls set, no map written yet
 *   OP:counters         the new slot's counters zeroed
 *   replace:marked      the replaced rule marked NAT_REPLACED
 *   OP:slot             the new rule written to its slot (NAT_ADDING)
 *   OP:cfg              settings written (next rule id, NAT on)
 *   OP:commit           the interface entry lists the new rule: it is live
 *   del:start           nothing written yet
 *   del:marked          the rule marked NAT_DELETING (for a waiting rule that
 *                       no entry lists, this is the commit)
 *   del:commit          the interface entry without the rule
 *   iface:written       (any command) an interface entry written, the
 *                       generation of the program's copies of the entries
 *                       not yet moved (loader/core.c, xdpr_iface_put): the
 *                       copies lapse within a kernel tick, so from here on
 *                       it is as at the commit
 * and the settling steps after a commit, named after the command (add,
 * replace, del, flush, attach; "repair" when another command's repair runs
 * them): OP:retired (replaced rule retired), OP:unmarked (mark cleared),
 * OP:gc and OP:freed (a deleted rule's sessions removed, then its slot),
 * OP:orphan-gc and OP:orphan-freed (the same for a rule it had replaced),
 * OP:rebind-prepared and OP:rebind-commit (before and after the interface's
 * entry lists a waiting rule), OP:followed (a slot names its interface's new
 * ifindex or name), OP:cfg (NAT flag changed).
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core.h"

static __u32 zero_key;

/* xdpr_nat_rule.pending: the change in flight on a slot (see the top). */
enum nat_pending {
	NAT_ADDING = 1,
	NAT_REPLACED = 2,
	NAT_DELETING = 3,
};

/* What a slot is, from its contents and whether its interface's entry lists it. */
enum slot_state {
	SL_FREE,
	SL_APPLIED,  /* committed, listed by the entry of its attached interface */
	SL_WAITING,  /* committed, its interface is gone or not attached */
	SL_RETIRED,  /* replaced; its sessions live on while a rule replaces it */
	SL_ABORTED,  /* written by an add or replace that did not commit */
	SL_REPLACED, /* replaced (committed), not yet marked retired */
	SL_DELETED,  /* deleted (committed), sessions and slot not yet removed */
};

struct nat_link {
	char name[IF_NAMESIZE];
	__u32 ifindex;
};

struct nat_state {
	int nlinks;
	struct nat_link links[XDPR_MAX_IFACES];   /* attached interfaces */
	struct xdpr_nat_rule r[XDPR_NAT_MAX_RULES];
	enum slot_state st[XDPR_NAT_MAX_RULES];
	__u32 ref[XDPR_NAT_MAX_RULES];             /* ifindex of the entry listing it, 0: none */
	int link[XDPR_NAT_MAX_RULES];              /* links[] index of that interface, -1: none */
};

#define crash_point xdpr_crash_point


/* Add a line to buf (x->note or x->info), once. */
static void vaddline(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t used = strlen(buf);
	char line[sizeof(((struct xdpr *)0)->note)];

	vsnprintf(line, sizeof(line), fmt, ap);
	if (strstr(buf, line))
		return;
	snprintf(buf + used, size - used, "%s%s", used ? "\n" : "", line);
}

static void __attribute__((format(printf, 2, 3))) addnote(struct xdpr *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vaddline(x->note, sizeof(x->note), fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 2, 3))) addinfo(struct xdpr *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vaddline(x->info, sizeof(x->info), fmt, ap);
	va_end(ap);
}

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

static const char *ip4_str(__u32 host_order, char *buf)
{
	__be32 a = htonl(host_order);

	return inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
}

/* A pool as the user wrote it: "ADDR" or "FIRST-LAST". */
static void fmt_pool(const struct xdpr_nat_rule *r, char *buf, size_t len)
{
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	__u32 lo = ntohl(r->pool_first);

	if (r->pool_count <= 1)
		snprintf(buf, len, "%s", ip4_str(lo, a));
	else
		snprintf(buf, len, "%s-%s", ip4_str(lo, a), ip4_str(lo + r->pool_count - 1, b));
}

/* Addresses that are never a packet's source on the wire. */
static const struct {
	__u32 net;
	int plen;
	const char *what;
} no_source[] = {
	{ 0x00000000, 8, "a \"this network\" address (0.0.0.0/8)" },
	{ 0x7f000000, 8, "a loopback address (127.0.0.0/8)" },
	{ 0xe0000000, 4, "a multicast address (224.0.0.0/4)" },
	{ 0xf0000000, 4, "a reserved address (240.0.0.0/4)" },
};

static int check_pool(struct xdpr *x, const struct xdpr_nat_rule *r)
{
	__u64 lo = ntohl(r->pool_first), hi = lo + r->pool_count - 1;
	char pool[40], a[INET_ADDRSTRLEN];

	if (r->flags & XDPR_NAT_MASQ)
		return 0;
	for (size_t i = 0; i < sizeof(no_source) / sizeof(no_source[0]); i++) {
		__u64 blo = no_source[i].net, bhi = blo | (0xffffffffu >> no_source[i].plen);
		__u64 bad = lo > blo ? lo : blo;

		if (lo > bhi || hi < blo)
			continue;
		fmt_pool(r, pool, sizeof(pool));
		seterr(x, "cannot translate to \"%s\": %s is %s, never a source address", pool,
		       ip4_str(bad, a), bad == 0xffffffffu ? "the limited broadcast address" : no_source[i].what);
		return -EINVAL;
	}
	/* ---- 1:1 NAT (loader/binat.c): an outside address has one owner ---- */
	for (__u32 id = 1; x->fd[XM_BINAT] >= 0 && id < XDPR_BINAT_MAX; id++) {
		struct xdpr_binat_rule b;
		char pb[24];
		__u64 blo, bhi;

		if (bpf_map_lookup_elem(x->fd[XM_BINAT], &id, &b) || !b.ifindex)
			continue;
		blo = ntohl(b.out_net);
		bhi = blo | (b.plen >= 32 ? 0 : 0xffffffffu >> b.plen);
		if (lo > bhi || hi < blo)
			continue;
		fmt_pool(r, pool, sizeof(pool));
		fmt_prefix(b.out_net, b.mask, pb, sizeof(pb));
		seterr(x, "cannot translate to \"%s\": it overlaps the outside prefix %s of 1:1 rule %u (out %.16s)",
		       pool, pb, id, b.ifname);
		return -EADDRINUSE;
	}
	/* ---- end 1:1 NAT ---- */
	return 0;
}

/* Warn about pool addresses no interface of this router has: no one answers ARP for them. */
static void note_unowned(struct xdpr *x, const struct xdpr_nat_rule *r)
{
	__u32 lo = ntohl(r->pool_first), hi = lo + r->pool_count - 1, owned = 0, seen[64];
	struct ifaddrs *ifa, *i;
	char pool[40];
	int nseen = 0;

	if ((r->flags & XDPR_NAT_MASQ) || getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		__u32 a;
		bool dup = false;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		if (a < lo || a > hi)
			continue;
		for (int k = 0; k < nseen; k++)
			dup |= seen[k] == a;
		if (dup)
			continue;
		if (nseen < (int)(sizeof(seen) / sizeof(seen[0])))
			seen[nseen++] = a;
		owned++;
	}
	freeifaddrs(ifa);
	if (owned >= r->pool_count)
		return;
	fmt_pool(r, pool, sizeof(pool));
	if (r->pool_count == 1)
		addnote(x, "%s is not an address of this router: nothing answers ARP for it unless "
			   "the upstream routes it to the router", pool);
	else
		addnote(x, "%u of the %u addresses of %s are not addresses of this router: nothing "
			   "answers ARP for them unless the upstream routes them to the router",
			r->pool_count - owned, r->pool_count, pool);
}

/* ---------------------------------------------------------------- slot state */

static bool committed(enum slot_state st)
{
	return st == SL_APPLIED || st == SL_WAITING;
}

static bool same_src(const struct xdpr_nat_rule *a, const struct xdpr_nat_rule *b)
{
	return a->src_net == b->src_net && a->src_mask == b->src_mask;
}

static bool same_iface(const struct xdpr_nat_rule *a, const struct xdpr_nat_rule *b)
{
	return a->ifindex == b->ifindex || (a->ifname[0] && !strncmp(a->ifname, b->ifname, IF_NAMESIZE));
}

/*
 * The listed rule a retired one was replaced by (same interface, same
 * sources), 0 if none is left.
 */
static __u32 successor(const struct nat_state *s, __u32 id)
{
	for (__u32 k = 1; k < XDPR_NAT_MAX_RULES; k++)
		if (k != id && committed(s->st[k]) && same_src(&s->r[k], &s->r[id]) &&
		    same_iface(&s->r[k], &s->r[id]))
			return k;
	return 0;
}

/* Does the xdpr_ifaces entry of ifindex list rule id? */
static bool lists(struct xdpr *x, __u32 ifindex, __u32 id)
{
	struct xdpr_iface e;

	if (bpf_map_lookup_elem(x->fd[XM_IFACES], &ifindex, &e))
		return false;
	for (int k = 0; k < e.nrules && k < XDPR_NAT_IF_RULES; k++)
		if (e.rules[k] == id)
			return true;
	return false;
}

static void classify(struct xdpr *x, struct nat_state *s, __u32 id)
{
	struct xdpr_nat_rule *r = &s->r[id];
	int own = -1, named = -1;

	s->link[id] = -1;
	s->ref[id] = 0;
	if (!r->ifindex) {
		s->st[id] = SL_FREE;
		return;
	}
	for (int i = 0; i < s->nlinks; i++) {
		if (s->links[i].ifindex == r->ifindex)
			own = i;
		else if (r->ifname[0] && !strncmp(s->links[i].name, r->ifname, IF_NAMESIZE))
			named = i;
	}
	/*
	 * A port forward is listed by no entry: its slot is its commit point
	 * (written NAT_ADDING, live once unmarked; NAT_DELETING ends it), and
	 * it applies while its ifindex is an attached interface's.
	 */
	if (r->flags & XDPR_NAT_FWD) {
		s->link[id] = own;
		s->st[id] = r->pending == NAT_ADDING ? SL_ABORTED : r->pending == NAT_DELETING ? SL_DELETED :
			    own >= 0 ? SL_APPLIED : SL_WAITING;
		return;
	}
	/*
	 * Listed by its attached interface; or re-bound to the interface of its
	 * name, the slot not updated yet; or listed by the stale entry of a
	 * deleted interface (waiting).
	 */
	if (own >= 0 && lists(x, r->ifindex, id)) {
		s->ref[id] = r->ifindex;
		s->link[id] = own;
	} else if (named >= 0 && lists(x, s->links[named].ifindex, id)) {
		s->ref[id] = s->links[named].ifindex;
		s->link[id] = named;
	} else if (own < 0 && lists(x, r->ifindex, id)) {
		s->ref[id] = r->ifindex;
	}
	if (r->flags & XDPR_NAT_RETIRED)
		s->st[id] = SL_RETIRED;
	else if (!s->ref[id] && r->pending == NAT_ADDING)
		s->st[id] = SL_ABORTED;
	else if (!s->ref[id] && r->pending == NAT_REPLACED)
		s->st[id] = SL_REPLACED;
	else if (!s->ref[id] && r->pending == NAT_DELETING)
		s->st[id] = SL_DELETED;
	else
		s->st[id] = s->ref[id] && s->link[id] >= 0 ? SL_APPLIED : SL_WAITING;
}

/* Read every slot; attached: x->links plus these names (just attached). */
static int nat_load(struct xdpr *x, struct nat_state *s, char *const *attached, int n)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < x->nlinks; i++) {
		snprintf(s->links[i].name, IF_NAMESIZE, "%s", x->links[i].name);
		s->links[i].ifindex = x->links[i].ifindex;
	}
	s->nlinks = x->nlinks;
	for (int i = 0; i < n && s->nlinks < XDPR_MAX_IFACES; i++) {
		__u32 ifindex = if_nametoindex(attached[i]);
		bool known = false;

		for (int k = 0; k < s->nlinks; k++)
			known |= s->links[k].ifindex == ifindex;
		if (!ifindex || known)
			continue;
		snprintf(s->links[s->nlinks].name, IF_NAMESIZE, "%s", attached[i]);
		s->links[s->nlinks++].ifindex = ifindex;
	}
	for (__u32 id = 1; id < XDPR_NAT_MAX_RULES; id++) {
		if (bpf_map_lookup_elem(x->fd[XM_RULES], &id, &s->r[id])) {
			seterr(x, "cannot read NAT rule %u: %s", id, strerror(errno));
			return -errno;
		}
		classify(x, s, id);
	}
	return 0;
}

static struct nat_state *nat_state_new(struct xdpr *x, char *const *attached, int n, int *err)
{
	struct nat_state *s = malloc(sizeof(*s));

	*err = s ? nat_load(x, s, attached, n) : -ENOMEM;
	if (*err) {
		free(s);
		return NULL;
	}
	return s;
}

/* The name a committed rule is listed under. */
static void rule_dev(const struct nat_state *s, __u32 id, char *buf)
{
	const struct xdpr_nat_rule *r = &s->r[id];

	if (s->st[id] == SL_APPLIED)
		snprintf(buf, IF_NAMESIZE, "%s", s->links[s->link[id]].name);
	else if (r->ifname[0])
		snprintf(buf, IF_NAMESIZE, "%.*s", IF_NAMESIZE - 1, r->ifname);
	else if (!if_indextoname(r->ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "if%u", r->ifindex);
}

static int put_rule(struct xdpr *x, __u32 id, const struct xdpr_nat_rule *r)
{
	if (bpf_map_update_elem(x->fd[XM_RULES], &id, r, BPF_ANY)) {
		seterr(x, "cannot write NAT rule %u: %s", id, strerror(errno));
		return -errno;
	}
	return 0;
}

static int fwd_unmap(struct xdpr *x, __u32 id);
static int fwd_map(struct xdpr *x, __u32 id, const struct xdpr_nat_rule *r);

static int free_rule(struct xdpr *x, struct nat_state *s, __u32 id)
{
	if (s->r[id].flags & XDPR_NAT_FWD) {
		int err = fwd_unmap(x, id); /* its ports first: the slot is what says they are stale */

		if (err)
			return err;
	}
	memset(&s->r[id], 0, sizeof(s->r[id]));
	s->st[id] = SL_FREE;
	return put_rule(x, id, &s->r[id]);
}

static int put_iface(struct xdpr *x, __u32 ifindex, const struct xdpr_iface *e, const char *dev)
{
	int err = xdpr_iface_put(x, ifindex, e, BPF_EXIST);

	if (err)
		seterr(x, "cannot update the NAT rules of \"%s\": %s", dev, strerror(-err));
	return err;
}

/* Take rule ids off the entry of ifindex: one update (the commit of a deletion). */
static int unlink_ids(struct xdpr *x, __u32 ifindex, const bool *drop, const char *dev)
{
	struct xdpr_iface e;
	int kept = 0;

	if (bpf_map_lookup_elem(x->fd[XM_IFACES], &ifindex, &e))
		return 0;
	for (int k = 0; k < e.nrules && k < XDPR_NAT_IF_RULES; k++)
		if (e.rules[k] >= XDPR_NAT_MAX_RULES || !drop[e.rules[k]])
			e.rules[kept++] = e.rules[k];
	if (kept == e.nrules)
		return 0;
	e.nrules = kept;
	return put_iface(x, ifindex, &e, dev);
}

static bool overlap(const struct xdpr_nat_rule *a, const struct xdpr_nat_rule *b)
{
	__be32 m = a->src_mask & b->src_mask;

	if ((a->flags | b->flags) & XDPR_NAT_FWD)
		return false; /* forwards have no sources (fwd_overlap) */

	return (a->src_net & m) == (b->src_net & m);
}

/*
 * Waiting rules named after an attached interface go back on it: its entry
 * lists them, one update per interface (the commit); then their slots, and
 * those of the rules they replaced, take its ifindex (follow()).  In that
 * order the packet path never meets a slot naming a live interface that no
 * entry lists: until the commit the slot names the dead ifindex, and the
 * sources of such a rule are dropped, not sent out untranslated
 * (drop_nat_if_gone).
 */
static int rebind(struct xdpr *x, struct nat_state *s, const char *op)
{
	for (int i = 0; i < s->nlinks; i++) {
		const struct nat_link *l = &s->links[i];
		__u32 ids[XDPR_NAT_IF_RULES + 1];
		struct xdpr_iface e;
		int n = 0, err;

		for (__u32 id = 1; id < XDPR_NAT_MAX_RULES; id++) {
			struct xdpr_nat_rule *r = &s->r[id];

			if (s->st[id] != SL_WAITING || strncmp(r->ifname, l->name, IF_NAMESIZE))
				continue;
			if (!(r->flags & XDPR_NAT_FWD)) {
				if (n <= XDPR_NAT_IF_RULES)
					ids[n++] = id;
				continue;
			}
			/* a forward: its slot naming the interface is the commit */
			r->ifindex = l->ifindex;
			err = put_rule(x, id, r);
			if (err)
				return err;
			crash_point(op, "rebind-commit");
			s->st[id] = SL_APPLIED;
			s->link[id] = i;
		}
		if (!n || bpf_map_lookup_elem(x->fd[XM_IFACES], &l->ifindex, &e))
			continue;
		for (int k = 0; k < e.nrules && k < XDPR_NAT_IF_RULES; k++)
			for (int w = 0; w < n && e.rules[k] < XDPR_NAT_MAX_RULES; w++)
				if (s->st[e.rules[k]] != SL_FREE && overlap(&s->r[e.rules[k]], &s->r[ids[w]]))
					n = -1;
		if (n < 0 || e.nrules + n > XDPR_NAT_IF_RULES) {
			addnote(x, "NAT rules waiting for \"%s\" stay waiting: they would overlap its "
				   "rules or exceed %d rules", l->name, XDPR_NAT_IF_RULES);
			continue;
		}
		/* masquerade without BPF_FIB_LOOKUP_SRC translates to the address kept here */
		for (int w = 0; w < n; w++) {
			struct xdpr_nat_rule *r = &s->r[ids[w]];
			__be32 a = (r->flags & XDPR_NAT_MASQ) ? dev_ipv4(l->name) : 0;

			if (!a || a == r->masq_addr)
				continue;
			r->masq_addr = a;
			err = put_rule(x, ids[w], r);
			if (err)
				return err;
		}
		crash_point(op, "rebind-prepared");
		for (int w = 0; w < n; w++)
			e.rules[e.nrules++] = ids[w];
		e.flags &= ~XDPR_IF_NAT_PENDING; /* bound: its rules translate from here on */
		err = put_iface(x, l->ifindex, &e, l->name);
		if (err)
			return err;
		crash_point(op, "rebind-commit");
		for (int w = 0; w < n; w++) {
			s->st[ids[w]] = SL_APPLIED;
			s->ref[ids[w]] = l->ifindex;
			s->link[ids[w]] = i;
		}
	}
	return 0;
}

/*
 * The slot of an applied rule names its interface as it is now: the
 * ifindex after a re-bind, the name after a rename; a retired rule
 * follows the rule that replaced it.
 */
static int follow(struct xdpr *x, struct nat_state *s, const char *op)
{
	for (int pass = 0; pass < 2; pass++)
		for (__u32 id = 1; id < XDPR_NAT_MAX_RULES; id++) {
			struct xdpr_nat_rule *r = &s->r[id];
			__u32 k = pass ? successor(s, id) : id;
			__u32 ifindex;
			const char *name;
			int err;

			if ((pass ? s->st[id] != SL_RETIRED : s->st[id] != SL_APPLIED) ||
			    !k || s->st[k] != SL_APPLIED)
				continue;
			ifindex = s->links[s->link[k]].ifindex;
			name = s->links[s->link[k]].name;
			if (r->ifindex == ifindex && !strncmp(r->ifname, name, IF_NAMESIZE))
				continue;
			r->ifindex = ifindex;
			memset(r->ifname, 0, sizeof(r->ifname));
			snprintf(r->ifname, sizeof(r->ifname), "%s", name);
			err = put_rule(x, id, r);
			if (err)
				return err;
			crash_point(op, "followed");
		}
	return 0;
}

/*
 * A forward given no addr follows its interface's primary IPv4 address,
 * as masquerade does: when the address changed, its ports leave the old
 * address (and its sessions, all on the old one, end), then are written
 * for the new one, then the slot names it.  Each step is redone by the
 * next settle while the slot names another address than the interface
 * has.  An interface without an IPv4 address leaves the forward with no
 * ports (address 0) until it gets one.  A failure is a note: the other
 * rules settle all the same.
 */
static int fwd_follow(struct xdpr *x, struct nat_state *s, const char *op)
{
	for (__u32 id = 1; id < XDPR_NAT_MAX_RULES; id++) {
		struct xdpr_nat_rule *r = &s->r[id], nr;
		char was[INET_ADDRSTRLEN], now[INET_ADDRSTRLEN];
		const char *name;
		__be32 a;
		int err;

		if (s->st[id] != SL_APPLIED || r->pending || (r->flags & (XDPR_NAT_FWD | XDPR_NAT_FWD_IFADDR)) !=
		    (XDPR_NAT_FWD | XDPR_NAT_FWD_IFADDR) || s->link[id] < 0)
			continue;
		name = s->links[s->link[id]].name;
		a = dev_ipv4(name);
		if (a == r->pool_first)
			continue;
		inet_ntop(AF_INET, &r->pool_first, was, sizeof(was));
		inet_ntop(AF_INET, &a, now, sizeof(now));
		for (__u32 k = 1; a && k < XDPR_NAT_MAX_RULES; k++) {
			const struct xdpr_nat_rule *o = &s->r[k];

			if (k == id || !committed(s->st[k]) || !(o->flags & XDPR_NAT_FWD) || o->pool_first != a ||
			    (o->fwd_proto && r->fwd_proto && o->fwd_proto != r->fwd_proto) ||
			    o->port_max < r->port_min || o->port_min > r->port_max)
				continue;
			addnote(x, "forward %u on \"%s\" stays on %s: its ports on the new address %s are "
				   "rule %u's", id, name, was, now, k);
			a = r->pool_first;
			break;
		}
		if (a == r->pool_first)
			continue;
		err = fwd_unmap(x, id);
		if (!err)
			crash_point(op, "fwd-unmapped");
		if (!err)
			err = xdpr_nat_gc(x, XDPR_GC_RULE, id, NULL);
		nr = *r;
		nr.pool_first = a;
		if (!err && a)
			err = fwd_map(x, id, &nr);
		if (!err)
			crash_point(op, "fwd-remapped");
		if (!err)
			err = put_rule(x, id, &nr);
		if (err) {
			addnote(x, "forward %u on \"%s\" cannot follow its address from %s to %s: %s", id, name,
				was, now, x->err);
			fwd_unmap(x, id); /* neither address forwards; the next command tries again */
			continue;
		}
		crash_point(op, "fwd-followed");
		*r = nr;
		addinfo(x, "forward %u on \"%s\" follows its address: %s to %s", id, name, was, now);
	}
	return 0;
}

/* NAT on in the settings while any rule (listed or retired) is left. */
static int set_nat_flag(struct xdpr *x, const struct nat_state *s, const char *op)
{
	bool want = false;
	struct xdpr_cfg c;
	int err;

	for (__u32 id = 1; id < XDPR_NAT_MAX_RULES; id++)
		want |= committed(s->st[id]) || s->st[id] == SL_RETIRED;
	err = xdpr_cfg_get(x, &c);
	if (err || !(c.flags & XDPR_CFG_NAT) == !want)
		return err;
	c.flags ^= XDPR_CFG_NAT;
	err = xdpr_cfg_set(x, &c);
	if (!err)
		crash_point(op, "cfg");
	return err;
}

/* A deleted rule goes: its sessions, then its slot (orphan: a rule it had replaced). */
static int remove_rule(struct xdpr *x, struct nat_state *s, __u32 id, const char *op, bool orphan)
{
	int err = xdpr_nat_gc(x, XDPR_GC_RULE, id, NULL);

	if (!err)
		crash_point(op, orphan ? "orphan-gc" : "gc");
	if (!err)
		err = free_rule(x, s, id);
	if (!err)
		crash_point(op, orphan ? "orphan-freed" : "freed");
	return err;
}

/*
 * XDPR_IF_FWD on exactly the attached interfaces an applied forward names:
 * their packets look for forwards.  Set after a forward commits (until
 * then it takes no packet anyway), cleared after the last one went.
 */
static int fwd_flags(struct xdpr *x, struct nat_state *s)
{
	for (int i = 0; i < s->nlinks; i++) {
		bool want = false;
		struct xdpr_iface e;

		for (__u32 id = 1; id < XDPR_NAT_MAX_RULES && !want; id++)
			want = s->st[id] == SL_APPLIED && (s->r[id].flags & XDPR_NAT_FWD) && s->link[id] == i;
		if (bpf_map_lookup_elem(x->fd[XM_IFACES], &s->links[i].ifindex, &e) ||
		    !(e.flags & XDPR_IF_FWD) == !want)
			continue;
		int err;

		e.flags ^= XDPR_IF_FWD;
		err = put_iface(x, s->links[i].ifindex, &e, s->links[i].name);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Finish what committed and undo what did not (see the top of this file),
 * re-bind waiting rules, bring slots up to date, set the NAT flag.  Every step is idempotent: a
 * settle killed halfway is finished by the next one.
 */
static int nat_settle(struct xdpr *x, struct nat_state *s, const char *op)
{
	int err = 0;

	for (__u32 id = 1; id < XDPR_NAT_MAX_RULES && !err; id++) {
		struct xdpr_nat_rule *r = &s->r[id];

		switch (s->st[id]) {
		case SL_APPLIED:
		case SL_WAITING:
			if (r->pending) {
				r->pending = 0;
				err = put_rule(x, id, r);
				if (!err)
					crash_point(op, "unmarked");
			}
			break;
		case SL_REPLACED:
			r->flags |= XDPR_NAT_RETIRED;
			r->pending = 0;
			s->st[id] = SL_RETIRED;
			err = put_rule(x, id, r);
			if (!err)
				crash_point(op, "retired");
			break;
		case SL_ABORTED:
			err = free_rule(x, s, id);
			break;
		case SL_DELETED:
			err = remove_rule(x, s, id, op, false);
			break;
		default:
			break;
		}
	}
	/* retired rules whose replacement is gone: their sessions end too */
	for (__u32 id = 1; id < XDPR_NAT_MAX_RULES && !err; id++) {
		if (s->st[id] == SL_RETIRED && !successor(s, id))
			err = remove_rule(x, s, id, op, true);
	}
	if (!err)
		err = rebind(x, s, op);
	if (!err)
		err = follow(x, s, op);
	if (!err)
		err = fwd_follow(x, s, op);
	if (!err)
		err = fwd_flags(x, s);
	return err ? err : set_nat_flag(x, s, op);
}

static int settle_again(struct xdpr *x, const char *op, char *const *attached, int n)
{
	int err;
	struct nat_state *s = nat_state_new(x, attached, n, &err);

	if (s)
		err = nat_settle(x, s, op);
	free(s);
	return err;
}

bool xdpr_nat_waits_for(struct xdpr *x, const char *name)
{
	for (__u32 id = 1; id < XDPR_NAT_MAX_RULES && x->fd[XM_RULES] >= 0; id++) {
		struct xdpr_nat_rule r;

		if (!bpf_map_lookup_elem(x->fd[XM_RULES], &id, &r) && r.ifindex &&
		    !(r.flags & XDPR_NAT_RETIRED) && !strncmp(r.ifname, name, IF_NAMESIZE))
			return true;
	}
	return false;
}

int xdpr_nat_repair(struct xdpr *x, char *const *attached, int n)
{
	return settle_again(x, n ? "attach" : "repair", attached, n);
}

/* ---------------------------------------------------------------- rules */

int xdpr_nat_list(struct xdpr *x, struct xdpr_rule_info *out, int max)
{
	int ncpu = xdpr_ncpus(), n = 0, err;
	struct nat_state *s;
	__u64 *vals;

	if (ncpu <= 0)
		return ncpu;
	s = nat_state_new(x, NULL, 0, &err);
	if (!s)
		return err;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals) {
		free(s);
		return -ENOMEM;
	}
	for (__u32 id = 1; id < XDPR_NAT_MAX_RULES && n < max; id++) {
		struct xdpr_rule_info *ri = &out[n];

		if (!committed(s->st[id]))
			continue;
		memset(ri, 0, sizeof(*ri));
		ri->id = id;
		ri->r = s->r[id];
		ri->waiting = s->st[id] == SL_WAITING;
		rule_dev(s, id, ri->dev);
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
	free(s);
	return n;
}

static int zero_rule_counters(struct xdpr *x, __u32 id)
{
	return xdpr_percpu_zero(x->fd[XM_NSTATS], id * XDPR_NE_MAX, XDPR_NE_MAX);
}

static int write_sysctl(const char *dev, const char *knob, const char *val)
{
	char path[128];
	FILE *f;
	int err = 0;

	if (xdpr_fault("sysctl", dev))
		return -EROFS;
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
	int err = read_sysctl(dev, "accept_local") == 1 ? 0 : write_sysctl(dev, "accept_local", "1");

	if (err) {
		seterr(x, "cannot set net.ipv4.conf.%s.accept_local: %s", dev, strerror(-err));
		return err;
	}
	if ((read_sysctl(dev, "rp_filter") == 1 || read_sysctl("all", "rp_filter") == 1) &&
	    !strstr(x->note, "rp_filter"))
		addnote(x, "rp_filter is strict (1) for \"%s\": translated packets waiting for a "
			   "neighbour are dropped by the kernel; use rp_filter 0 or 2", dev);
	return 0;
}

/* accept_local everywhere before a rule goes live; on failure, set back what was changed. */
static int prepare_links(struct xdpr *x)
{
	int old[XDPR_MAX_IFACES], err = 0, i;

	for (i = 0; i < x->nlinks && !err; i++) {
		old[i] = read_sysctl(x->links[i].name, "accept_local");
		err = xdpr_nat_prepare_dev(x, x->links[i].name);
	}
	for (int k = 0; err && k < i - 1; k++)
		if (old[k] == 0)
			write_sysctl(x->links[k].name, "accept_local", "0");
	return err;
}

/*
 * Rules on the same interface with overlapping sources: refused (-EEXIST),
 * except, with replace, the applied rule of the same sources (*old_id).
 */
static int overlap_check(struct xdpr *x, const struct nat_state *s, const struct xdpr_nat_rule *nr,
			 const char *dev, bool replace, __u32 *old_id)
{
	char p1[32], p2[32];

	for (__u32 rid = 1; rid < XDPR_NAT_MAX_RULES; rid++) {
		const struct xdpr_nat_rule *cur = &s->r[rid];

		if (!committed(s->st[rid]) || !same_iface(cur, nr) || !overlap(cur, nr))
			continue;
		if (replace && same_src(cur, nr) && s->st[rid] == SL_APPLIED) {
			*old_id = rid;
			continue;
		}
		fmt_prefix(cur->src_net, cur->src_mask, p1, sizeof(p1));
		fmt_prefix(nr->src_net, nr->src_mask, p2, sizeof(p2));
		seterr(x, "src %s overlaps rule %u (src %s) on \"%s\"", p2, rid, p1, dev);
		return -EEXIST;
	}
	return 0;
}

/* A free rule id, round robin from the configuration's next one; 0 (x->err) when none. */
static __u32 free_id(struct xdpr *x, const struct nat_state *s, const struct xdpr_cfg *c)
{
	for (__u32 k = 0; k < XDPR_NAT_MAX_RULES - 1; k++) {
		__u32 cand = 1 + (c->next_rule + k) % (XDPR_NAT_MAX_RULES - 1);

		if (s->st[cand] == SL_FREE)
			return cand;
	}
	seterr(x, "all %d NAT rule slots are in use", XDPR_NAT_MAX_RULES - 1);
	return 0;
}

int xdpr_nat_add(struct xdpr *x, const char *dev, struct xdpr_nat_rule *nr, bool replace)
{
	const char *op = replace ? "replace" : "add";
	const struct xdpr_link *l = xdpr_link_find(x, dev);
	struct xdpr_nat_rule old_rule;
	struct nat_state *s = NULL;
	struct xdpr_iface ifc;
	struct xdpr_cfg c, c0;
	__u32 id = 0, old_id = 0;
	int slot = -1, err, wrote = 0;
	char p2[32], keep[sizeof(x->err)];

	enum { W_OLD = 1, W_NEW = 2, W_CFG = 4 };

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
	err = check_pool(x, nr);
	if (err)
		return err;
	nr->ifindex = l->ifindex;
	memset(nr->ifname, 0, sizeof(nr->ifname));
	snprintf(nr->ifname, sizeof(nr->ifname), "%s", dev);
	nr->masq_addr = (nr->flags & XDPR_NAT_MASQ) ? dev_ipv4(dev) : 0;
	nr->flags &= ~XDPR_NAT_RETIRED;
	nr->pending = NAT_ADDING;
	err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	c0 = c;
	if ((nr->flags & XDPR_NAT_MASQ) && !nr->masq_addr && !(c.flags & XDPR_CFG_FIB_SRC)) {
		seterr(x, "\"%s\" has no IPv4 address to masquerade to", dev);
		return -EADDRNOTAVAIL;
	}
	s = nat_state_new(x, NULL, 0, &err);
	if (!s)
		return err;

	/* Same interface, overlapping sources: only an exact replace is allowed. */
	err = overlap_check(x, s, nr, dev, replace, &old_id);
	if (err)
		goto out;
	for (int i = 0; old_id && i < ifc.nrules && i < XDPR_NAT_IF_RULES; i++)
		if (ifc.rules[i] == old_id)
			slot = i;
	if (replace && slot < 0) {
		fmt_prefix(nr->src_net, nr->src_mask, p2, sizeof(p2));
		seterr(x, "no NAT rule for src %s on \"%s\" to replace", p2, dev);
		err = -ENOENT;
		goto out;
	}
	if (!replace && ifc.nrules >= XDPR_NAT_IF_RULES) {
		seterr(x, "\"%s\" has %d NAT rules already", dev, XDPR_NAT_IF_RULES);
		err = -ENOSPC;
		goto out;
	}

	id = free_id(x, s, &c);
	if (!id) {
		err = -ENOSPC;
		goto out;
	}

	/* Everything that can fail for reasons of its own, before any map is written. */
	err = prepare_links(x);
	if (err)
		goto out;
	note_unowned(x, nr);
	crash_point(op, "prepared");

	/* Invisible until the commit: nothing lists the new slot yet. */
	err = zero_rule_counters(x, id);
	if (err) {
		seterr(x, "cannot reset the counters of NAT rule %u: %s", id, strerror(-err));
		goto undo;
	}
	crash_point(op, "counters");
	if (old_id) {
		old_rule = s->r[old_id];
		old_rule.pending = NAT_REPLACED;
		err = put_rule(x, old_id, &old_rule);
		if (err)
			goto undo;
		wrote |= W_OLD;
		crash_point(op, "marked");
	}
	err = put_rule(x, id, nr);
	if (err)
		goto undo;
	wrote |= W_NEW;
	crash_point(op, "slot");
	c.next_rule = id;
	c.flags |= XDPR_CFG_NAT;
	err = xdpr_cfg_set(x, &c);
	if (err)
		goto undo;
	wrote |= W_CFG;
	crash_point(op, "cfg");

	/* The commit. */
	if (slot >= 0)
		ifc.rules[slot] = id;
	else
		ifc.rules[ifc.nrules++] = id;
	err = put_iface(x, l->ifindex, &ifc, dev);
	if (err)
		goto undo;
	crash_point(op, "commit");

	/* Live: the marks are only tidied up now (by the next command if this fails). */
	if (settle_again(x, op, NULL, 0))
		addnote(x, "the rule is applied, but %s; the next xdpr command finishes the change",
			x->err);
	err = 0;
	goto out;
undo:
	memcpy(keep, x->err, sizeof(keep));
	if (wrote & W_CFG)
		xdpr_cfg_set(x, &c0);
	if (wrote & W_NEW)
		free_rule(x, s, id);
	if (wrote & W_OLD)
		put_rule(x, old_id, &s->r[old_id]);
	memcpy(x->err, keep, sizeof(keep));
out:
	free(s);
	return err;
}

int xdpr_nat_add_waiting(struct xdpr *x, const char *dev, struct xdpr_nat_rule *nr)
{
	struct nat_state *s;
	struct xdpr_cfg c, c0;
	__u32 id = 0;
	int err;

	if (!*dev || strlen(dev) >= IF_NAMESIZE) {
		seterr(x, "invalid device name \"%s\"", dev);
		return -EINVAL;
	}
	if (xdpr_link_find(x, dev)) {
		seterr(x, "xdpr is attached to \"%s\": its rules apply at once", dev);
		return -EEXIST;
	}
	err = check_pool(x, nr);
	if (err)
		return err;
	/* no device has that ifindex: a rule that waits, as one whose device was deleted */
	nr->ifindex = XDPR_NAT_IF_NONE;
	memset(nr->ifname, 0, sizeof(nr->ifname));
	snprintf(nr->ifname, sizeof(nr->ifname), "%s", dev);
	nr->masq_addr = 0; /* masquerade: the address is read when it is bound */
	nr->flags &= ~XDPR_NAT_RETIRED;
	nr->pending = 0;
	err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	c0 = c;
	s = nat_state_new(x, NULL, 0, &err);
	if (!s)
		return err;
	err = overlap_check(x, s, nr, dev, false, NULL);
	if (err)
		goto out;
	id = free_id(x, s, &c);
	if (!id) {
		err = -ENOSPC;
		goto out;
	}
	err = zero_rule_counters(x, id);
	if (err) {
		seterr(x, "cannot reset the counters of NAT rule %u: %s", id, strerror(-err));
		goto out;
	}
	/* the datapath looks for waiting rules only with XDPR_CFG_NAT: that first */
	c.next_rule = id;
	c.flags |= XDPR_CFG_NAT;
	err = xdpr_cfg_set(x, &c);
	if (!err)
		err = put_rule(x, id, nr);
	if (err)
		xdpr_cfg_set(x, &c0);
out:
	free(s);
	return err;
}

int xdpr_nat_gc(struct xdpr *x, __u32 op, __u32 rule, struct xdpr_gc_cmd *res)
{
	struct xdpr_gc_cmd cmd[2] = { { .op = op, .rule = rule } }; /* >= ETH_HLEN of input */
	int err = xdpr_run_prog(x, XDPR_PROG_GC, cmd, sizeof(cmd), 0);

	if (!err && res)
		*res = cmd[0];
	return err;
}

/* Mark a committed rule NAT_DELETING: until its entry is updated, that is undone. */
static int mark_deleting(struct xdpr *x, struct nat_state *s, __u32 id)
{
	struct xdpr_nat_rule r = s->r[id];

	r.pending = NAT_DELETING;
	return put_rule(x, id, &r);
}

int xdpr_nat_del(struct xdpr *x, const char *dev, __be32 net, __be32 mask)
{
	bool drop[XDPR_NAT_MAX_RULES] = {};
	struct nat_state *s;
	char p[32], name[IF_NAMESIZE];
	__u32 id = 0;
	int err;

	s = nat_state_new(x, NULL, 0, &err);
	if (!s)
		return err;
	for (__u32 k = 1; k < XDPR_NAT_MAX_RULES && !id; k++) {
		if (!committed(s->st[k]) || (s->r[k].flags & XDPR_NAT_FWD) || s->r[k].src_net != net ||
		    s->r[k].src_mask != mask)
			continue;
		rule_dev(s, k, name);
		if (!strcmp(name, dev))
			id = k;
	}
	if (!id) {
		fmt_prefix(net, mask, p, sizeof(p));
		if (!xdpr_link_find(x, dev))
			seterr(x, if_nametoindex(dev) ? "xdpr is not attached to \"%s\""
						     : "cannot find device \"%s\"", dev);
		else
			seterr(x, "no NAT rule for src %s on \"%s\"", p, dev);
		free(s);
		return -ENOENT;
	}
	crash_point("del", "start");
	err = mark_deleting(x, s, id);
	if (!err)
		crash_point("del", "marked");
	drop[id] = true;
	if (!err && s->ref[id]) {
		err = unlink_ids(x, s->ref[id], drop, dev);
		if (err)
			put_rule(x, id, &s->r[id]); /* not deleted: unmark */
		else
			crash_point("del", "commit");
	}
	free(s);
	/* its flows end now: its own sessions and those of the rules it replaced */
	return err ? err : settle_again(x, "del", NULL, 0);
}

int xdpr_nat_flush(struct xdpr *x, bool rules, struct xdpr_gc_cmd *res)
{
	bool drop[XDPR_NAT_MAX_RULES] = {};
	struct nat_state *s;
	int err = 0;

	if (rules) {
		s = nat_state_new(x, NULL, 0, &err);
		if (!s)
			return err;
		/* each rule is deleted as "nat del" would: marked, then off its entry */
		for (__u32 id = 1; id < XDPR_NAT_MAX_RULES && !err; id++) {
			drop[id] = committed(s->st[id]);
			if (drop[id])
				err = mark_deleting(x, s, id);
		}
		for (__u32 id = 1; id < XDPR_NAT_MAX_RULES && !err; id++) {
			char name[IF_NAMESIZE];

			if (!drop[id] || !s->ref[id])
				continue;
			rule_dev(s, id, name);
			err = unlink_ids(x, s->ref[id], drop, name);
		}
		free(s);
		if (!err)
			err = settle_again(x, "flush", NULL, 0);
	}
	return err ? err : xdpr_nat_gc(x, XDPR_GC_ALL, 0, res);
}

/* ---------------------------------------------------------------- tables */


struct hash_dump {
	void *keys;
	void *vals;
	size_t n;
};

/*
 * Every entry of a hash map, read with BPF_MAP_LOOKUP_BATCH.  The kernel
 * hands out the table bucket by bucket, each bucket whole, and continues
 * from the next bucket: an entry is seen once even while the packet path or
 * a sweep adds and deletes others.  (BPF_MAP_GET_NEXT_KEY restarts from the
 * first bucket when the key it continues from was deleted, listing entries
 * again.)
 */
static int dump_hash(struct xdpr *x, int fd, const char *what, struct hash_dump *d)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), in = 0, out = 0, cnt;
	size_t cap = 0;
	bool first = true, grow = true;
	int err = 0;

	memset(d, 0, sizeof(*d));
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		seterr(x, "cannot read %s: %s", what, strerror(errno));
		return -errno;
	}
	for (;;) {
		if (grow || cap - d->n < 1024) {
			size_t ncap = cap ? cap * 2 : (info.max_entries < 65536 ? info.max_entries : 65536) + 1024;
			void *k = realloc(d->keys, ncap * info.key_size), *v;

			if (k)
				d->keys = k;
			v = k ? realloc(d->vals, ncap * info.value_size) : NULL;
			if (!v) {
				err = -ENOMEM;
				break;
			}
			d->vals = v;
			cap = ncap;
			grow = false;
		}
		cnt = cap - d->n;
		err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out,
					   (char *)d->keys + d->n * info.key_size,
					   (char *)d->vals + d->n * info.value_size, &cnt, &o);
		if (err && errno == ENOSPC) { /* one bucket holds more than the room left */
			grow = true;
			continue;
		}
		if (err && errno != ENOENT) {
			err = -errno;
			break;
		}
		d->n += cnt;
		if (err) { /* ENOENT: that was the last bucket */
			err = 0;
			break;
		}
		in = out;
		first = false;
	}
	if (err) {
		seterr(x, "cannot read %s: %s", what, strerror(-err));
		free(d->keys);
		free(d->vals);
		memset(d, 0, sizeof(*d));
	}
	return err;
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
	struct xdpr_ct_key *keys = NULL;
	struct xdpr_ct_val *vals = NULL;
	struct xdpr_ct_tab t = {};
	struct xdpr_cfg c;
	__u64 now = xdpr_mono_ns();
	int err, ct = -1, cta = -1;
	size_t n = 0;

	err = xdpr_cfg_get(x, &c);
	if (!err && (ct = xdpr_nat_tab_fd(x, XDPR_NT_CT, c.nat_slot & 1)) < 0)
		err = ct;
	if (!err && (cta = xdpr_nat_tab_fd(x, XDPR_NT_CTA, c.nat_slot & 1)) < 0)
		err = cta;
	if (!err && (err = xdpr_ct_open(cta, ct, &t)))
		seterr(x, "cannot read the session table: %s", strerror(-err));
	if (!err && (err = xdpr_ct_dump(&t, &keys, &vals, &n)))
		seterr(x, "cannot read the session table: %s", strerror(-err));
	for (size_t i = 0; i < n && !err; i++) {
		const struct xdpr_ct_key *k = &keys[i];
		struct xdpr_session s = {};
		struct xdpr_ct_key ik;
		__u64 last;

		if (k->dir != XDPR_CT_OUT)
			continue;
		s.key = *k;
		s.out = vals[i];
		ik = (struct xdpr_ct_key){ .saddr = k->daddr, .daddr = s.out.xaddr, .sport = k->dport,
					   .dport = s.out.xport, .proto = k->proto, .dir = XDPR_CT_IN };
		s.has_in = !xdpr_ct_get(&t, &ik, &s.in);
		s.state = s.out.state | (s.has_in ? s.in.state : 0);
		last = s.out.last_seen;
		if (s.has_in && s.in.last_seen > last)
			last = s.in.last_seen;
		s.idle_ns = now > last ? now - last : 0;
		s.timeout_ns = xdpr_nat_timeout_ns(&c, k->proto, s.state);
		if (s.idle_ns > s.timeout_ns)
			continue; /* expired, waiting for a sweep: not a live session */
		err = cb(&s, arg);
	}
	xdpr_ct_close(&t);
	if (ct >= 0)
		close(ct);
	if (cta >= 0)
		close(cta);
	free(keys);
	free(vals);
	return err;
}

struct held_one {
	__u32 rule;
	__be32 addr;
	int proto;     /* XDPR_HELD_* */
	bool holddown;
};

static int held_cmp(const void *a, const void *b)
{
	const struct held_one *x = a, *y = b;

	if (x->rule != y->rule)
		return x->rule < y->rule ? -1 : 1;
	if (x->addr != y->addr)
		return ntohl(x->addr) < ntohl(y->addr) ? -1 : 1;
	return 0;
}

int xdpr_nat_held(struct xdpr *x, struct xdpr_held **out)
{
	__u32 owner[XDPR_NAT_MAX_RULES] = {};
	struct held_one *one = NULL;
	struct xdpr_held *h = NULL;
	struct nat_state *s;
	struct hash_dump d = {};
	struct xdpr_cfg c;
	__u64 now = xdpr_mono_ns();
	size_t n = 0, nh = 0;
	int err;

	*out = NULL;
	s = nat_state_new(x, NULL, 0, &err);
	if (!s)
		return err;
	/* bindings of a retired rule are shown with the rule that replaced it */
	for (__u32 id = 1; id < XDPR_NAT_MAX_RULES; id++)
		owner[id] = committed(s->st[id]) ? id : s->st[id] == SL_RETIRED ? successor(s, id) : 0;
	free(s);
	err = xdpr_cfg_get(x, &c);
	if (!err) {
		int fd = xdpr_nat_tab_fd(x, XDPR_NT_BIND, c.nat_slot & 1);

		err = fd < 0 ? fd : dump_hash(x, fd, "the binding table", &d);
		if (fd >= 0)
			close(fd);
	}
	if (err)
		return err;
	one = calloc(d.n + 1, sizeof(*one));
	h = calloc(d.n + 1, sizeof(*h));
	if (!one || !h) {
		seterr(x, "cannot count the ports held: %s", strerror(ENOMEM));
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < d.n; i++) {
		const struct xdpr_bind_key *k = (const struct xdpr_bind_key *)d.keys + i;
		const struct xdpr_bind *b = (const struct xdpr_bind *)d.vals + i;
		__u64 idle = now > b->last_active ? now - b->last_active : 0;
		bool hold = XDPR_BIND_REFS(b->state) == 0;

		if ((b->state & XDPR_BIND_DYING) || b->rule >= XDPR_NAT_MAX_RULES || !owner[b->rule])
			continue;
		if (hold && idle > (__u64)c.holddown * 1000000000ULL)
			continue; /* free for anyone, waiting for a sweep */
		one[n++] = (struct held_one){ owner[b->rule], k->out_addr,
					      k->proto == IPPROTO_TCP ? XDPR_HELD_TCP :
					      k->proto == IPPROTO_UDP ? XDPR_HELD_UDP : XDPR_HELD_ICMP, hold };
	}
	qsort(one, n, sizeof(*one), held_cmp);
	for (size_t i = 0; i < n; i++) {
		if (!nh || h[nh - 1].rule != one[i].rule || h[nh - 1].addr != one[i].addr)
			h[nh++] = (struct xdpr_held){ .rule = one[i].rule, .addr = one[i].addr };
		h[nh - 1].ports[one[i].proto]++;
		h[nh - 1].holddown += one[i].holddown;
	}
	*out = h;
	h = NULL;
out:
	free(one);
	free(h);
	free(d.keys);
	free(d.vals);
	return err ? err : (int)nh;
}

/* ---------------------------------------------------------------- port forwards */

static const char *fwd_proto_name(__u8 proto)
{
	return proto == IPPROTO_TCP ? "tcp" : proto == IPPROTO_UDP ? "udp" : "tcp+udp";
}

/* The inside port of outside port p under forward r (host order). */
static __u16 fwd_in_port(const struct xdpr_nat_rule *r, __u32 p)
{
	if (!r->fwd_port)
		return p;
	return r->fwd_one ? r->fwd_port : r->fwd_port + (p - r->port_min);
}

/* A forward as the user wrote it (the words after "nat add in DEV"; no addr: DEV's). */
void xdpr_fwd_format(const struct xdpr_nat_rule *r, char *buf, size_t len)
{
	bool follows = !r->pool_first || (r->flags & XDPR_NAT_FWD_IFADDR);
	char a[INET_ADDRSTRLEN], to[INET_ADDRSTRLEN], ports[16] = "", tp[24] = "";

	inet_ntop(AF_INET, &r->pool_first, a, sizeof(a));
	inet_ntop(AF_INET, &r->fwd_to, to, sizeof(to));
	if (r->port_max != r->port_min)
		snprintf(ports, sizeof(ports), "-%u", r->port_max);
	if (r->fwd_port && (r->fwd_one || r->port_max == r->port_min))
		snprintf(tp, sizeof(tp), ":%u", r->fwd_port);
	else if (r->fwd_port)
		snprintf(tp, sizeof(tp), ":%u-%u", r->fwd_port, r->fwd_port + (r->port_max - r->port_min));
	snprintf(buf, len, "%s%s%s%s%s%sdport %u%s to %s%s", r->fwd_proto ? "proto " : "",
		 r->fwd_proto ? fwd_proto_name(r->fwd_proto) : "", r->fwd_proto ? " " : "",
		 follows ? "" : "addr ", follows ? "" : a, follows ? "" : " ", r->port_min, ports, to, tp);
}

static bool protos_meet(__u8 a, __u8 b)
{
	return !a || !b || a == b;
}

/* Delete the port entries of forward id (all of them: a killed add may have left some). */
static int fwd_unmap(struct xdpr *x, __u32 id)
{
	struct hash_dump d;
	int err;

	if (x->fd[XM_FWD] < 0)
		return 0;
	err = dump_hash(x, x->fd[XM_FWD], "the port forwards", &d);
	if (err)
		return err;
	for (size_t i = 0; i < d.n && !err; i++) {
		const struct xdpr_fwd *f = (const struct xdpr_fwd *)d.vals + i;

		if (f->rule == id && bpf_map_delete_elem(x->fd[XM_FWD], (struct xdpr_bind_key *)d.keys + i) &&
		    errno != ENOENT) {
			err = -errno;
			seterr(x, "cannot delete the ports of forward %u: %s", id, strerror(errno));
		}
	}
	free(d.keys);
	free(d.vals);
	return err;
}

/* Write forward id's port entries.  -EEXIST: a port has an entry already (x->err says which). */
static int fwd_map(struct xdpr *x, __u32 id, const struct xdpr_nat_rule *r)
{
	static const __u8 protos[] = { IPPROTO_TCP, IPPROTO_UDP };
	char a[INET_ADDRSTRLEN];

	for (size_t k = 0; k < sizeof(protos); k++) {
		if (r->fwd_proto && r->fwd_proto != protos[k])
			continue;
		for (__u32 p = r->port_min; p <= r->port_max; p++) {
			struct xdpr_bind_key key = { .out_addr = r->pool_first, .out_port = htons(p),
						     .proto = protos[k] };
			struct xdpr_fwd v = { .in_addr = r->fwd_to, .in_port = htons(fwd_in_port(r, p)),
					      .rule = id };

			if (!bpf_map_update_elem(x->fd[XM_FWD], &key, &v, BPF_NOEXIST))
				continue;
			inet_ntop(AF_INET, &r->pool_first, a, sizeof(a));
			if (errno == EEXIST)
				seterr(x, "port %u/%s of %s is forwarded already", p, fwd_proto_name(protos[k]), a);
			else if (errno == E2BIG || errno == ENOMEM || errno == ENOSPC)
				seterr(x, "port forwards hold at most %d ports (protocols counted apart)", XDPR_FWD_MAX);
			else
				seterr(x, "cannot write port %u/%s of %s: %s", p, fwd_proto_name(protos[k]), a,
				       strerror(errno));
			return -errno;
		}
	}
	return 0;
}

/*
 * A NAT binding (an inside host's mapping, in use or in its hold-down) on
 * one of forward r's ports: -EADDRINUSE with x->err naming it.  Run after
 * the forward's entries are written and the packet path has seen them
 * (the allocator looks for them before it claims a port): a binding made
 * before that is found here, none can be made after.
 */
static int fwd_claimed(struct xdpr *x, const struct xdpr_nat_rule *r)
{
	char a[INET_ADDRSTRLEN], in[INET_ADDRSTRLEN];
	__u64 now = xdpr_mono_ns();
	struct hash_dump d = {};
	struct xdpr_cfg c;
	int err, fd;

	err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	fd = xdpr_nat_tab_fd(x, XDPR_NT_BIND, c.nat_slot & 1);
	err = fd < 0 ? fd : dump_hash(x, fd, "the binding table", &d);
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < d.n && !err; i++) {
		const struct xdpr_bind_key *k = (const struct xdpr_bind_key *)d.keys + i;
		const struct xdpr_bind *b = (const struct xdpr_bind *)d.vals + i;
		__u64 idle = now > b->last_active ? now - b->last_active : 0;
		bool hold = XDPR_BIND_REFS(b->state) == 0;
		__u32 p = ntohs(k->out_port);

		if (k->out_addr != r->pool_first || p < r->port_min || p > r->port_max ||
		    (k->proto != IPPROTO_TCP && k->proto != IPPROTO_UDP) || !protos_meet(r->fwd_proto, k->proto) ||
		    (b->state & XDPR_BIND_DYING) || (hold && idle > (__u64)c.holddown * 1000000000ULL))
			continue;
		inet_ntop(AF_INET, &k->out_addr, a, sizeof(a));
		inet_ntop(AF_INET, &b->in_addr, in, sizeof(in));
		seterr(x, "port %u/%s of %s is %s by the NAT mapping of %s:%u (rule %u); "
			  "try again %s, or end it with \"xdpr nat flush sessions\"",
		       p, fwd_proto_name(k->proto), a, hold ? "held in its hold-down" : "in use", in,
		       ntohs(b->in_port), b->rule, hold ? "after the hold-down" : "when its sessions end");
		err = -EADDRINUSE;
	}
	free(d.keys);
	free(d.vals);
	return err;
}

/* Is a an address of an interface of this router? */
static bool own_addr(__be32 a)
{
	struct ifaddrs *ifa, *i;
	bool own = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !own; i = i->ifa_next)
		own = i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		      ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a;
	freeifaddrs(ifa);
	return own;
}

/* An address a forward can use: "" if it can, else why not. */
static const char *fwd_addr_bad(__be32 a)
{
	__u32 h = ntohl(a);

	if (h == 0xffffffffu)
		return "the limited broadcast address";
	for (size_t i = 0; i < sizeof(no_source) / sizeof(no_source[0]); i++)
		if ((h & ~(0xffffffffu >> no_source[i].plen)) == no_source[i].net)
			return no_source[i].what;
	return "";
}

int xdpr_nat_fwd_add(struct xdpr *x, const char *dev, struct xdpr_nat_rule *nr, bool waiting)
{
	const struct xdpr_link *l = xdpr_link_find(x, dev);
	char a[INET_ADDRSTRLEN], mine[96], other[96];
	struct nat_state *s = NULL;
	struct xdpr_cfg c, c0;
	struct xdpr_iface ifc;
	bool slot = false, cfg = false;
	const char *why;
	__u32 id;
	int err;

	if (waiting && (l || !*dev || strlen(dev) >= IF_NAMESIZE || !nr->pool_first)) {
		seterr(x, l ? "xdpr is attached to \"%s\": its forwards apply at once" :
			  nr->pool_first ? "invalid device name \"%s\"" :
			  "a forward for \"%s\", which is not attached, needs its \"addr\"", dev);
		return -EINVAL;
	}
	if (!l && !waiting) {
		if (!if_nametoindex(dev))
			seterr(x, "cannot find device \"%s\"", dev);
		else
			seterr(x, "xdpr is not attached to \"%s\": attach it first", dev);
		return -ENODEV;
	}
	if (l && bpf_map_lookup_elem(x->fd[XM_IFACES], &l->ifindex, &ifc)) {
		seterr(x, "\"%s\" is being attached or detached; try again", dev);
		return -EAGAIN;
	}
	if (x->fd[XM_FWD] < 0) {
		seterr(x, "the running program has no port forwards (xdpr_nat_fwd): detach and attach again");
		return -EOPNOTSUPP;
	}
	nr->flags = XDPR_NAT_FWD | (nr->pool_first ? 0 : XDPR_NAT_FWD_IFADDR);
	if (!nr->pool_first && !(nr->pool_first = dev_ipv4(dev))) {
		seterr(x, "\"%s\" has no IPv4 address to forward from: give one with \"addr\"", dev);
		return -EADDRNOTAVAIL;
	}
	inet_ntop(AF_INET, &nr->pool_first, a, sizeof(a));
	if (*(why = fwd_addr_bad(nr->pool_first))) {
		seterr(x, "cannot forward from %s: it is %s", a, why);
		return -EINVAL;
	}
	inet_ntop(AF_INET, &nr->fwd_to, a, sizeof(a));
	if (*(why = fwd_addr_bad(nr->fwd_to))) {
		seterr(x, "cannot forward to %s: it is %s", a, why);
		return -EINVAL;
	}
	if (own_addr(nr->fwd_to)) {
		seterr(x, "cannot forward to %s: it is an address of this router", a);
		return -EINVAL;
	}
	nr->ifindex = l ? l->ifindex : XDPR_NAT_IF_NONE; /* waiting: no device has that ifindex */
	memset(nr->ifname, 0, sizeof(nr->ifname));
	snprintf(nr->ifname, sizeof(nr->ifname), "%s", dev);
	nr->pool_count = 1;
	nr->masq_addr = 0;
	nr->pending = NAT_ADDING;
	err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	c0 = c;
	s = nat_state_new(x, NULL, 0, &err);
	if (!s)
		return err;
	/* another forward on the same outside address, protocol and ports */
	for (__u32 k = 1; k < XDPR_NAT_MAX_RULES; k++) {
		const struct xdpr_nat_rule *o = &s->r[k];

		if (!committed(s->st[k]) || !(o->flags & XDPR_NAT_FWD) || o->pool_first != nr->pool_first ||
		    !protos_meet(o->fwd_proto, nr->fwd_proto) || o->port_max < nr->port_min ||
		    o->port_min > nr->port_max)
			continue;
		xdpr_fwd_format(nr, mine, sizeof(mine));
		xdpr_fwd_format(o, other, sizeof(other));
		seterr(x, "%s overlaps rule %u (%s)", mine, k, other);
		err = -EEXIST;
		goto out;
	}
	id = free_id(x, s, &c);
	if (!id) {
		err = -ENOSPC;
		goto out;
	}
	if (!own_addr(nr->pool_first)) {
		inet_ntop(AF_INET, &nr->pool_first, a, sizeof(a));
		addnote(x, "%s is not an address of this router: nothing answers ARP for it unless "
			   "the upstream routes it to the router", a);
	}
	err = prepare_links(x);
	if (err)
		goto out;
	crash_point("fwd-add", "prepared");
	err = zero_rule_counters(x, id);
	if (err) {
		seterr(x, "cannot reset the counters of NAT rule %u: %s", id, strerror(-err));
		goto out;
	}
	/* Invisible until the commit: the packet path takes a forward whose slot is unmarked only. */
	err = put_rule(x, id, nr);
	if (err)
		goto undo;
	slot = true;
	s->r[id] = *nr;
	crash_point("fwd-add", "slot");
	c.next_rule = id;
	c.flags |= XDPR_CFG_NAT;
	err = xdpr_cfg_set(x, &c);
	if (err)
		goto undo;
	cfg = true;
	err = fwd_map(x, id, nr);
	if (err)
		goto undo;
	crash_point("fwd-add", "mapped");
	/* every CPU past its last look at the map without them, then no mapping may hold a port */
	if (!xdpr_packets_settled())
		usleep(10000);
	err = fwd_claimed(x, nr);
	if (err)
		goto undo;
	/*
	 * Its interface looks for forwards before the commit, so that from the
	 * commit on it applies (an aborted add's flag goes with the next settle).
	 */
	if (l && !(ifc.flags & XDPR_IF_FWD)) {
		ifc.flags |= XDPR_IF_FWD;
		err = put_iface(x, l->ifindex, &ifc, dev);
		if (err)
			goto undo;
		crash_point("fwd-add", "flagged");
	}
	/* The commit. */
	nr->pending = 0;
	err = put_rule(x, id, nr);
	if (err)
		goto undo;
	crash_point("fwd-add", "commit");
	if (settle_again(x, "fwd-add", NULL, 0))
		addnote(x, "the forward is applied, but %s; the next xdpr command finishes the change", x->err);
	err = 0;
	goto out;
undo:
	{
		char keep[sizeof(x->err)];

		memcpy(keep, x->err, sizeof(keep));
		if (slot)
			free_rule(x, s, id); /* its ports too */
		if (cfg)
			xdpr_cfg_set(x, &c0);
		settle_again(x, "fwd-add", NULL, 0); /* the interface's flag, if set */
		memcpy(x->err, keep, sizeof(keep));
	}
out:
	free(s);
	return err;
}

int xdpr_nat_fwd_del(struct xdpr *x, const char *dev, const struct xdpr_nat_rule *m)
{
	char name[IF_NAMESIZE], a[INET_ADDRSTRLEN], what[96];
	struct nat_state *s;
	__u32 id = 0;
	int err, found = 0;

	s = nat_state_new(x, NULL, 0, &err);
	if (!s)
		return err;
	for (__u32 k = 1; k < XDPR_NAT_MAX_RULES; k++) {
		const struct xdpr_nat_rule *r = &s->r[k];

		if (!committed(s->st[k]) || !(r->flags & XDPR_NAT_FWD) || r->fwd_proto != m->fwd_proto ||
		    r->port_min != m->port_min || r->port_max != m->port_max ||
		    (m->pool_first && r->pool_first != m->pool_first))
			continue;
		rule_dev(s, k, name);
		if (strcmp(name, dev))
			continue;
		id = k;
		found++;
	}
	if (found != 1) {
		free(s);
		if (found > 1) {
			seterr(x, "more than one forward of those ports on \"%s\": say which with \"addr\"", dev);
			return -EINVAL;
		}
		if (m->pool_first)
			inet_ntop(AF_INET, &m->pool_first, a, sizeof(a));
		snprintf(what, sizeof(what), "%s%sdport %u", m->fwd_proto ? fwd_proto_name(m->fwd_proto) : "",
			 m->fwd_proto ? " " : "", m->port_min);
		if (m->port_max != m->port_min)
			snprintf(what + strlen(what), sizeof(what) - strlen(what), "-%u", m->port_max);
		if (!xdpr_link_find(x, dev) && !if_nametoindex(dev))
			seterr(x, "cannot find device \"%s\"", dev);
		else
			seterr(x, "no forward of %s%s%s on \"%s\"", what, m->pool_first ? " on " : "",
			       m->pool_first ? a : "", dev);
		return -ENOENT;
	}
	crash_point("fwd-del", "start");
	err = mark_deleting(x, s, id); /* the commit: the packet path takes no new flow on it */
	if (!err)
		crash_point("fwd-del", "commit");
	free(s);
	/* its sessions end, its ports go, its slot is freed */
	return err ? err : settle_again(x, "fwd-del", NULL, 0);
}
