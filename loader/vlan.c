// SPDX-License-Identifier: GPL-2.0
/*
 * vlan.c - the VLANs of attached ports, kept as the kernel has them.
 *
 * A port's 802.1Q VLAN devices are not attached on their own: the program
 * on the port sees their tagged frames (bpf/vlan.h).  Each VLAN gets what
 * an attached interface has (an xdpr_ifaces entry, a counter slot with its
 * name, NAT rules, a redirect entry the kernel removes with the device)
 * plus its entry in xdpr_vlans, (port, VID) -> VLAN, which exists only
 * while the VLAN is up: a frame for a VLAN that is down goes to the
 * kernel, which drops it, as it would without XDP.
 *
 * The state is rebuilt from the maps and one rtnetlink dump every time, so
 * a command killed half-way leaves nothing the next sync does not finish.
 * Order (no frame meets half a VLAN): settings before the VID entry when
 * adding, the VID entry before the settings when removing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include "core.h"

struct ent {
	__u32 ifindex;
	struct xdpr_iface cfg;
};

struct sync {
	struct ent *e;          /* xdpr_ifaces as it is */
	int ne;
	struct xdpr_vlan_dev *d; /* VLAN devices of the namespace */
	int nd;
	bool taken[XDPR_MAX_IFACES];
	char *added[XDPR_MAX_IFACES]; /* names of VLANs enrolled now */
	int nadded;
	int changes;
};

/* A line more in buf (x->info or x->note). */
static void __attribute__((format(printf, 3, 4))) line(char *buf, size_t size, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 2 >= size)
		return;
	if (used)
		buf[used++] = '\n', buf[used] = 0;
	va_start(ap, fmt);
	vsnprintf(buf + used, size - used, fmt, ap);
	va_end(ap);
}

#define info(x, ...) line((x)->info, sizeof((x)->info), __VA_ARGS__)
#define warn(x, ...) line((x)->note, sizeof((x)->note), __VA_ARGS__)

static struct ent *find_ent(struct sync *s, __u32 ifindex)
{
	for (int i = 0; i < s->ne; i++)
		if (s->e[i].ifindex == ifindex)
			return &s->e[i];
	return NULL;
}

/* An attached port (not a VLAN) by ifindex. */
static struct ent *find_port(struct sync *s, __u32 ifindex)
{
	struct ent *p = find_ent(s, ifindex);

	return p && !(p->cfg.flags & XDPR_IF_VLAN) ? p : NULL;
}

static int read_state(struct xdpr *x, struct sync *s)
{
	__u32 key, *prev = NULL;

	s->e = calloc(XDPR_MAX_IFACES, sizeof(*s->e));
	if (!s->e)
		return -ENOMEM;
	while (s->ne < XDPR_MAX_IFACES && !bpf_map_get_next_key(x->fd[XM_IFACES], prev, &key)) {
		struct ent *e = &s->e[s->ne];

		if (!bpf_map_lookup_elem(x->fd[XM_IFACES], &key, &e->cfg)) {
			e->ifindex = key;
			if (e->cfg.slot < XDPR_MAX_IFACES)
				s->taken[e->cfg.slot] = true;
			s->ne++;
		}
		prev = &key;
	}
	for (__u32 slot = 1; slot < XDPR_MAX_IFACES && x->fd[XM_SLOTS] >= 0; slot++) {
		struct xdpr_slot_name sn;

		if (!bpf_map_lookup_elem(x->fd[XM_SLOTS], &slot, &sn) && sn.name[0])
			s->taken[slot] = true;
	}
	s->taken[0] = true;
	s->nd = xdpr_vlan_devs(&s->d);
	if (s->nd < 0) {
		seterr(x, "cannot list the VLAN devices: %s", strerror(-s->nd));
		return s->nd;
	}
	return 0;
}

/* The counter slot of a deleted VLAN of this name (its counters go on), or 0. */
static __u32 gone_slot(struct xdpr *x, const struct xdpr_vlan_dev *d)
{
	for (__u32 slot = 1; slot < XDPR_MAX_IFACES && x->fd[XM_SLOTS] >= 0; slot++) {
		struct xdpr_slot_name sn;

		if (!bpf_map_lookup_elem(x->fd[XM_SLOTS], &slot, &sn) && (sn.mode & XDPR_SLOT_VLAN) &&
		    !strncmp(sn.name, d->name, IF_NAMESIZE) && sn.ifindex != d->ifindex)
			return slot;
	}
	return 0;
}

static __u32 new_slot(struct sync *s)
{
	for (__u32 slot = 1; slot < XDPR_MAX_IFACES; slot++)
		if (!s->taken[slot]) {
			s->taken[slot] = true;
			return slot;
		}
	return 0;
}

static int name_slot(struct xdpr *x, __u32 slot, const struct xdpr_vlan_dev *d, const struct ent *port)
{
	struct xdpr_slot_name sn = { .ifindex = d->ifindex, .parent = d->parent,
				     .mode = ((port->cfg.flags & XDPR_IF_GENERIC) ? XDPR_MODE_SKB
										  : XDPR_MODE_NATIVE) |
					     XDPR_SLOT_VLAN };

	snprintf(sn.name, sizeof(sn.name), "%s", d->name);
	if (x->fd[XM_SLOTS] < 0)
		return 0; /* a router of an older version: no names */
	return bpf_map_update_elem(x->fd[XM_SLOTS], &slot, &sn, BPF_ANY) ? -errno : 0;
}

/* What xdpr_ifaces should say for VLAN d of port p (old: its entry now, or NULL). */
static void want_cfg(struct xdpr *x, const struct xdpr_vlan_dev *d, const struct ent *p,
		     const struct ent *old, __u32 slot, struct xdpr_iface *c)
{
	memset(c, 0, sizeof(*c));
	c->slot = slot;
	c->flags = XDPR_IF_VLAN | (p->cfg.flags & (XDPR_IF_XMIT | XDPR_IF_GENERIC));
	if (old) {
		c->flags |= old->cfg.flags & XDPR_IF_NAT_PENDING;
		c->nrules = old->cfg.nrules;
		memcpy(c->rules, old->cfg.rules, sizeof(c->rules));
	} else if (x->fd[XM_RULES] >= 0 && xdpr_nat_waits_for(x, d->name)) {
		c->flags |= XDPR_IF_NAT_PENDING; /* inside sources dropped until its rules are bound */
	}
	memcpy(c->mac, d->mac, 6);
	c->parent = d->parent;
	c->vid = d->vid;
	memcpy(c->in_prio, d->in_prio, sizeof(c->in_prio));
	memcpy(c->pcp, d->pcp, sizeof(c->pcp));
}

static int vid_entry(struct xdpr *x, const struct xdpr_vlan_dev *d, bool on)
{
	struct xdpr_vlan_key k = { .ifindex = d->parent, .vid = d->vid };
	__u32 v = d->ifindex, cur;

	if (on)
		return bpf_map_update_elem(x->fd[XM_VLANS], &k, &v, BPF_ANY) ? -errno : 0;
	if (bpf_map_lookup_elem(x->fd[XM_VLANS], &k, &cur) || cur != v)
		return 0;
	return bpf_map_delete_elem(x->fd[XM_VLANS], &k) && errno != ENOENT ? -errno : 0;
}

/* Enrol VLAN d of port p, or write its settings again where they changed. */
static int keep_vlan(struct xdpr *x, struct sync *s, const struct xdpr_vlan_dev *d, struct ent *p)
{
	struct ent *old = find_ent(s, d->ifindex);
	struct xdpr_iface c;
	__u32 slot = old ? old->cfg.slot : 0, cur;
	struct xdpr_vlan_key k = { .ifindex = d->parent, .vid = d->vid };
	bool fresh = false, vid_ok;
	int err;

	if (!slot) {
		slot = gone_slot(x, d);
		if (!slot) {
			slot = new_slot(s);
			fresh = true;
		}
		if (!slot) {
			seterr(x, "cannot enrol VLAN \"%s\": all %d interface slots are in use", d->name,
			       XDPR_MAX_IFACES - 1);
			return -E2BIG;
		}
	}
	want_cfg(x, d, p, old, slot, &c);
	if (!old || memcmp(&c, &old->cfg, sizeof(c))) {
		if (fresh) { /* a slot nobody's counters are in */
			int n = xdpr_ncpus();
			struct xdpr_slot *zero = calloc(n, sizeof(*zero));

			err = !zero ? -ENOMEM
			      : bpf_map_update_elem(x->fd[XM_STATS], &slot, zero, BPF_ANY) ? -errno : 0;
			free(zero);
			if (err)
				goto fail;
		}
		if (bpf_map_update_elem(x->fd[XM_IFACES], &d->ifindex, &c, BPF_ANY)) {
			err = -errno;
			goto fail;
		}
		if (!old) {
			char pname[IF_NAMESIZE] = "?";

			xdpr_since_set(x, -1, slot);
			if_indextoname(p->ifindex, pname);
			info(x, "%s: VLAN %u of %s enrolled%s", d->name, d->vid, pname,
			     d->up ? "" : " (down: its frames go to the kernel until it is up)");
			s->added[s->nadded++] = (char *)d->name;
		}
		s->changes++;
	}
	/*
	 * What a command killed half-way may have left out, made sure of every
	 * time: its slot's name, and a redirect entry of its own, never used as
	 * a target (its frames leave through its port): the kernel removes it
	 * with the device, which is how the NAT knows a rule's VLAN is gone
	 * (nat_if_gone).
	 */
	{
		struct xdpr_slot_name sn;

		if (x->fd[XM_SLOTS] >= 0 && (bpf_map_lookup_elem(x->fd[XM_SLOTS], &slot, &sn) ||
					     sn.ifindex != d->ifindex || strncmp(sn.name, d->name, IF_NAMESIZE)))
			name_slot(x, slot, d, p);
	}
	if (bpf_map_lookup_elem(x->fd[XM_TX], &d->ifindex, &cur) &&
	    bpf_map_update_elem(x->fd[XM_TX], &d->ifindex, &d->ifindex, BPF_ANY)) {
		err = -errno;
		goto fail;
	}
	vid_ok = !bpf_map_lookup_elem(x->fd[XM_VLANS], &k, &cur) && cur == d->ifindex;
	if (vid_ok != d->up) {
		err = vid_entry(x, d, d->up);
		if (err)
			goto fail;
		if (old)
			info(x, "%s: %s", d->name, d->up ? "up: its frames are routed in XDP"
							 : "down: its frames go to the kernel");
		s->changes++;
	}
	return 0;
fail:
	seterr(x, "cannot enrol VLAN \"%s\": %s", d->name, strerror(-err));
	return err;
}

/* Take a VLAN out: VID entry, then settings; its slot keeps its name while forget is false. */
static int drop_vlan(struct xdpr *x, const struct ent *e, bool forget)
{
	struct xdpr_vlan_dev d = { .ifindex = e->ifindex, .parent = e->cfg.parent, .vid = e->cfg.vid };
	int err = vid_entry(x, &d, false);

	if (!err && bpf_map_delete_elem(x->fd[XM_TX], &e->ifindex) && errno != ENOENT)
		err = -errno;
	if (!err && bpf_map_delete_elem(x->fd[XM_IFACES], &e->ifindex) && errno != ENOENT)
		err = -errno;
	if (!err && forget && x->fd[XM_SLOTS] >= 0)
		xdpr_slot_name_set(x, -1, e->cfg.slot, NULL, 0, 0);
	return err;
}

static const struct xdpr_vlan_dev *find_dev(const struct sync *s, __u32 ifindex)
{
	for (int i = 0; i < s->nd; i++)
		if (s->d[i].ifindex == ifindex)
			return &s->d[i];
	return NULL;
}

/* A VLAN device xdpr enrols: 802.1Q, on an attached port of this namespace. */
static struct ent *its_port(struct sync *s, const struct xdpr_vlan_dev *d)
{
	return d && d->dot1q && !d->other_ns && d->vid ? find_port(s, d->parent) : NULL;
}

/* The name a counter slot keeps for ifindex (a deleted VLAN's), or "". */
static void slot_name_of(struct xdpr *x, __u32 ifindex, char name[IF_NAMESIZE])
{
	name[0] = 0;
	for (__u32 slot = 1; slot < XDPR_MAX_IFACES && x->fd[XM_SLOTS] >= 0; slot++) {
		struct xdpr_slot_name sn;

		if (!bpf_map_lookup_elem(x->fd[XM_SLOTS], &slot, &sn) && sn.ifindex == ifindex &&
		    (sn.mode & XDPR_SLOT_VLAN)) {
			snprintf(name, IF_NAMESIZE, "%.*s", IF_NAMESIZE - 1, sn.name);
			return;
		}
	}
}

/* xdpr_vlans entries that lead nowhere now (a VLAN deleted with its entry left). */
static void sweep_vids(struct xdpr *x, struct sync *s)
{
	struct xdpr_vlan_key k, dead[64], *prev = NULL;
	int n = 0;

	while (n < 64 && !bpf_map_get_next_key(x->fd[XM_VLANS], prev, &k)) {
		__u32 v;
		const struct xdpr_vlan_dev *d;

		if (!bpf_map_lookup_elem(x->fd[XM_VLANS], &k, &v)) {
			d = find_dev(s, v);
			if (!d || !its_port(s, d) || d->parent != k.ifindex || d->vid != k.vid || !d->up)
				dead[n++] = k;
		}
		prev = &k;
	}
	for (int i = 0; i < n; i++) {
		char name[IF_NAMESIZE];
		__u32 v;

		if (bpf_map_lookup_elem(x->fd[XM_VLANS], &dead[i], &v) ||
		    bpf_map_delete_elem(x->fd[XM_VLANS], &dead[i]))
			continue;
		s->changes++;
		if (find_dev(s, v))
			continue; /* a VLAN that is there: keep_vlan said what changed */
		slot_name_of(x, v, name);
		if (name[0])
			info(x, "%s: VLAN %u deleted: taken out (listed as gone with its counters until "
				"it is back)", name, dead[i].vid);
		else
			info(x, "VLAN %u of ifindex %u deleted: taken out", dead[i].vid, dead[i].ifindex);
	}
}

/* Ports whose offload xdpr turned off: off again if someone turned it on. */
static void recheck_rxvlan(struct xdpr *x, struct sync *s)
{
	for (int i = 0; i < s->ne; i++) {
		char name[IF_NAMESIZE];
		bool on;

		if (!(s->e[i].cfg.flags & XDPR_IF_RXVLAN_OFF) || (s->e[i].cfg.flags & XDPR_IF_VLAN) ||
		    !if_indextoname(s->e[i].ifindex, name) || xdpr_rxvlan_get(name, &on) || !on)
			continue;
		if (xdpr_rxvlan_set(name, false))
			warn(x, "%s: receive VLAN offload was turned on again and cannot be turned off: "
				"tagged frames arrive untagged and are routed as %s's", name, name);
		else
			info(x, "%s: receive VLAN offload was turned on again: off again (a tag stripped "
				"by the NIC would hide the VLAN)", name);
		s->changes++;
	}
}

int xdpr_vlan_sync(struct xdpr *x)
{
	struct sync *s;
	int err = 0;

	if (x->fd[XM_IFACES] < 0 || x->fd[XM_VLANS] < 0)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = read_state(x, s);
	/* VLANs that are no longer a VLAN of an attached port */
	for (int i = 0; i < s->ne && !err; i++) {
		const struct ent *e = &s->e[i];
		const struct xdpr_vlan_dev *d;
		char name[IF_NAMESIZE];
		bool gone;

		if (!(e->cfg.flags & XDPR_IF_VLAN))
			continue;
		d = find_dev(s, e->ifindex);
		if (d && its_port(s, d) && d->parent == e->cfg.parent && d->vid == e->cfg.vid)
			continue;
		/* deleted: its name and counters stay, for the day it is back; else forgotten */
		gone = !if_indextoname(e->ifindex, name);
		err = drop_vlan(x, e, !gone || !find_port(s, e->cfg.parent));
		if (!err)
			s->changes++;
		if (!err && !gone)
			info(x, "%s: no longer a VLAN of an attached port: taken out", name);
		else if (!err) {
			slot_name_of(x, e->ifindex, name);
			info(x, "%s: VLAN %u deleted: taken out", name[0] ? name : "?", e->cfg.vid);
		}
	}
	/* re-read: a removed entry's VID may belong to a new VLAN now */
	if (!err) {
		free(s->e);
		free(s->d);
		s->e = NULL;
		s->d = NULL;
		s->ne = s->nd = 0;
		memset(s->taken, 0, sizeof(s->taken));
		err = read_state(x, s);
	}
	for (int i = 0; i < s->nd && !err; i++) {
		struct ent *p = its_port(s, &s->d[i]);

		if (p)
			err = keep_vlan(x, s, &s->d[i], p);
	}
	if (!err)
		sweep_vids(x, s);
	if (!err)
		recheck_rxvlan(x, s);
	if (!err && s->nadded) {
		struct xdpr_cfg c;

		if (!xdpr_cfg_get(x, &c) && (c.flags & XDPR_CFG_NAT))
			for (int i = 0; i < s->nadded; i++)
				xdpr_nat_prepare_dev(x, s->added[i]);
		/* NAT rules waiting for these names; a failure is the next command's to repair */
		if (xdpr_nat_repair(x, s->added, s->nadded))
			warn(x, "%s", x->err);
	}
	if (!err && s->changes) {
		if (xdpr_flt_relink(x, NULL, 0)) /* filter rules naming a VLAN resolved again */
			warn(x, "%s", x->err);
		xdpr_local_sync(x);
	}
	free(s->e);
	free(s->d);
	err = err ? err : s->changes;
	free(s);
	return err;
}
