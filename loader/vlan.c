// SPDX-License-Identifier: GPL-2.0
/*
 * vlan.c - the VLANs of attached ports, kept as the kernel has them.
 *
 * A port's 802.1Q VLAN devices are not attached on their own: the program
 * on the port sees their tagged frames (bpf/vlan.h).  Each VLAN gets what
 * an attached interface has (an xdpr_ifaces entry, a counter slot with its
 * name, NAT rules, a redirect entry the kernel removes with the device)
 * plus what the program finds it by at ingress (xdpr_shared.h): a copy of
 * its settings in xdpr_vlan_cfg by its counter slot, and its VID entry in
 * the port's row of xdpr_vlans (a trunk number the port gets with its
 * first VLAN), which leads to that slot only while the VLAN is up: a frame
 * for a VLAN that is down goes to the kernel, which drops it, as it would
 * without XDP.
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

/* The slot port p's VID entry for vid leads to (0: none), or -errno. */
static long vid_get(struct xdpr *x, const struct ent *p, __u32 vid)
{
	long key = xdpr_vid_key(p->cfg.trunk, vid);
	__u32 k = key, cur;

	if (key < 0)
		return 0;
	return bpf_map_lookup_elem(x->fd[XM_VLANS], &k, &cur) ? -errno : (long)cur;
}

/* Port p's VID entry for vid: to slot, or (slot 0) none. */
static int vid_set(struct xdpr *x, const struct ent *p, __u32 vid, __u32 slot)
{
	long key = xdpr_vid_key(p->cfg.trunk, vid);
	__u32 k = key;

	if (key < 0)
		return slot ? -EINVAL : 0;
	return bpf_map_update_elem(x->fd[XM_VLANS], &k, &slot, BPF_ANY) ? -errno : 0;
}

/* Trunk t's row of xdpr_vlans emptied (a row a detached port, or a killed command, left). */
static int clear_row(struct xdpr *x, __u32 t)
{
	static __u32 keys[XDPR_VIDS], zero[XDPR_VIDS];
	__u32 n = XDPR_VIDS;

	for (__u32 v = 0; v < XDPR_VIDS; v++)
		keys[v] = xdpr_vid_key(t, v);
	if (!bpf_map_update_batch(x->fd[XM_VLANS], keys, zero, &n, NULL))
		return 0;
	for (__u32 v = 0; v < XDPR_VIDS; v++) /* no batches: one at a time */
		if (bpf_map_update_elem(x->fd[XM_VLANS], &keys[v], &zero[v], BPF_ANY))
			return -errno;
	return 0;
}

/* Trunk t's row of xdpr_vlans, VID by VID, into slots; 0 or -errno. */
static int read_row(struct xdpr *x, __u32 t, __u32 slots[XDPR_VIDS])
{
	static __u32 keys[XDPR_VIDS];
	__u32 n = XDPR_VIDS, prev = xdpr_vid_key(t, 0) - 1, out;
	int err;

	err = bpf_map_lookup_batch(x->fd[XM_VLANS], t > 1 ? &prev : NULL, &out, keys, slots, &n, NULL);
	if ((!err || errno == ENOENT) && n == XDPR_VIDS && keys[0] == (__u32)xdpr_vid_key(t, 0))
		return 0;
	for (__u32 v = 0; v < XDPR_VIDS; v++) { /* no batches: one at a time */
		__u32 k = xdpr_vid_key(t, v);

		if (bpf_map_lookup_elem(x->fd[XM_VLANS], &k, &slots[v]))
			return -errno;
	}
	return 0;
}

/*
 * Port p's trunk number, its VLANs' row in xdpr_vlans: given now, to an
 * emptied row no other port has, if it has none.  Written last, so the
 * program never reads a row before it is the port's.
 */
static int port_trunk(struct xdpr *x, struct sync *s, struct ent *p)
{
	bool used[XDPR_MAX_TRUNKS + 1] = { false };
	struct xdpr_iface c;
	char name[IF_NAMESIZE] = "?";
	__u32 t;
	int err;

	if (p->cfg.trunk && p->cfg.trunk <= XDPR_MAX_TRUNKS)
		return 0;
	for (int i = 0; i < s->ne; i++)
		if (!(s->e[i].cfg.flags & XDPR_IF_VLAN) && s->e[i].cfg.trunk <= XDPR_MAX_TRUNKS)
			used[s->e[i].cfg.trunk] = true;
	for (t = 1; t <= XDPR_MAX_TRUNKS && used[t]; t++)
		;
	if_indextoname(p->ifindex, name);
	if (t > XDPR_MAX_TRUNKS) {
		seterr(x, "cannot take the VLANs of \"%s\": %d ports with VLANs is the most", name,
		       XDPR_MAX_TRUNKS);
		return -E2BIG;
	}
	err = clear_row(x, t);
	if (!err && bpf_map_lookup_elem(x->fd[XM_IFACES], &p->ifindex, &c))
		err = -errno;
	if (!err) {
		c.trunk = t;
		err = xdpr_iface_put(x, p->ifindex, &c, BPF_EXIST);
	}
	if (err) {
		seterr(x, "cannot take the VLANs of \"%s\": %s", name, strerror(-err));
		return err;
	}
	p->cfg = c;
	return 0;
}

/* Enrol VLAN d of port p, or write its settings again where they changed. */
static int keep_vlan(struct xdpr *x, struct sync *s, const struct xdpr_vlan_dev *d, struct ent *p)
{
	struct ent *old = find_ent(s, d->ifindex);
	struct xdpr_iface c;
	struct xdpr_vlan_cfg vc;
	__u32 slot = old ? old->cfg.slot : 0, cur;
	bool fresh = false, vid_ok;
	long at;
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
	err = port_trunk(x, s, p);
	if (err)
		return err;
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
		err = xdpr_iface_put(x, d->ifindex, &c, BPF_ANY);
		if (err)
			goto fail;
		if (!old) {
			char pname[IF_NAMESIZE] = "?";

			xdpr_since_set(x, -1, slot);
			if_indextoname(p->ifindex, pname);
			info(x, "%s: VLAN %u of %s enrolled%s", d->name, d->vid, pname,
			     d->up ? "" : " (down: its frames go to the kernel until it is up)");
			s->added[s->nadded++] = (char *)d->name;
		}
		s->changes++;
		/* as the maps are now (sweep_vids reads it) */
		if (old) {
			old->cfg = c;
		} else if (s->ne < XDPR_MAX_IFACES) {
			s->e[s->ne].ifindex = d->ifindex;
			s->e[s->ne++].cfg = c;
		}
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
	/* the copy the program reads, as the settings are */
	if (bpf_map_lookup_elem(x->fd[XM_VLAN_CFG], &slot, &vc) || vc.ifindex != d->ifindex ||
	    memcmp(&vc.cfg, &c, sizeof(c))) {
		err = xdpr_iface_put(x, d->ifindex, &c, BPF_EXIST);
		if (err)
			goto fail;
	}
	at = vid_get(x, p, d->vid);
	if (at < 0) {
		err = at;
		goto fail;
	}
	vid_ok = at == slot;
	if (vid_ok != d->up) {
		err = vid_set(x, p, d->vid, d->up ? slot : 0);
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
	int err = xdpr_vlan_unset(x, e->ifindex, &e->cfg);

	if (!err && bpf_map_delete_elem(x->fd[XM_TX], &e->ifindex) && errno != ENOENT)
		err = -errno;
	if (!err && (err = xdpr_iface_del(x, e->ifindex)) == -ENOENT)
		err = 0;
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

/* The name of the VLAN counter slot slot is kept for, or "". */
static void slot_vlan_name(struct xdpr *x, __u32 slot, char name[IF_NAMESIZE])
{
	struct xdpr_slot_name sn;

	name[0] = 0;
	if (x->fd[XM_SLOTS] >= 0 && slot < XDPR_MAX_IFACES && !bpf_map_lookup_elem(x->fd[XM_SLOTS], &slot, &sn) &&
	    (sn.mode & XDPR_SLOT_VLAN))
		snprintf(name, IF_NAMESIZE, "%.*s", IF_NAMESIZE - 1, sn.name);
}

/* The enrolled VLAN in counter slot slot, or NULL. */
static const struct ent *slot_vlan(const struct sync *s, __u32 slot)
{
	for (int i = 0; i < s->ne; i++)
		if ((s->e[i].cfg.flags & XDPR_IF_VLAN) && s->e[i].cfg.slot == slot)
			return &s->e[i];
	return NULL;
}

/*
 * VID entries that lead nowhere now (a VLAN deleted, or down, with its
 * entry left: a command killed half-way), and settings' copies of VLANs no
 * longer enrolled.
 */
static void sweep_vids(struct xdpr *x, struct sync *s)
{
	static __u32 row[XDPR_VIDS];
	static struct xdpr_vlan_cfg copies[XDPR_MAX_IFACES];
	__u32 keys[XDPR_MAX_IFACES], n = XDPR_MAX_IFACES, out;

	for (int i = 0; i < s->ne; i++) {
		const struct ent *p = &s->e[i];

		if ((p->cfg.flags & XDPR_IF_VLAN) || !p->cfg.trunk || read_row(x, p->cfg.trunk, row))
			continue;
		for (__u32 vid = 0; vid < XDPR_VIDS; vid++) {
			const struct ent *v = row[vid] ? slot_vlan(s, row[vid]) : NULL;
			const struct xdpr_vlan_dev *d = v ? find_dev(s, v->ifindex) : NULL;
			char name[IF_NAMESIZE];

			if (!row[vid] || (d && its_port(s, d) == p && d->vid == vid && d->up))
				continue;
			if (vid_set(x, p, vid, 0))
				continue;
			s->changes++;
			if (d)
				continue; /* a VLAN that is there: keep_vlan said what changed */
			slot_vlan_name(x, row[vid], name);
			if (name[0])
				info(x, "%s: VLAN %u deleted: taken out (listed as gone with its counters until "
					"it is back)", name, vid);
			else
				info(x, "VLAN %u of ifindex %u deleted: taken out", vid, p->ifindex);
		}
	}
	if (bpf_map_lookup_batch(x->fd[XM_VLAN_CFG], NULL, &out, keys, copies, &n, NULL) && errno != ENOENT)
		return;
	for (__u32 i = 0; i < n; i++) {
		const struct ent *v = copies[i].ifindex ? slot_vlan(s, keys[i]) : NULL;

		if (copies[i].ifindex && (!v || v->ifindex != copies[i].ifindex)) {
			struct xdpr_vlan_cfg none = { 0 };

			bpf_map_update_elem(x->fd[XM_VLAN_CFG], &keys[i], &none, BPF_ANY);
		}
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

	if (x->fd[XM_IFACES] < 0 || x->fd[XM_VLANS] < 0 || x->fd[XM_VLAN_CFG] < 0)
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
			slot_vlan_name(x, e->cfg.slot, name);
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
		if (err == -E2BIG) { /* no room for this one: the others, and the command, go on */
			warn(x, "%s (its frames go to the kernel)", x->err);
			x->err[0] = 0;
			err = 0;
		}
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
