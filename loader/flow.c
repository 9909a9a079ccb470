// SPDX-License-Identifier: GPL-2.0
/*
 * flow.c - the flow meter (bpf/flow.h): on/off and sampling in xdpr_cfg,
 * the metered flows of xdpr_flows with their per-CPU shares merged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "core.h"

/* key + every CPU's share -> one flow; false when no CPU has a packet of it. */
static bool flow_merge(const struct xdpr_meter_key *k, const struct xdpr_meter_val *v, int ncpu,
		       struct xdpr_flow *f)
{
	const struct xdpr_meter_val *last = NULL;
	size_t alen = k->family == AF_INET ? 4 : 16;

	memset(f, 0, sizeof(*f));
	for (int c = 0; c < ncpu; c++) {
		const struct xdpr_meter_val *e = &v[c];

		if (!e->packets)
			continue;
		f->packets += e->packets;
		f->bytes += e->bytes;
		f->tcp_flags |= e->tcp_flags;
		if (!f->first_ns || e->first_ns < f->first_ns)
			f->first_ns = e->first_ns;
		if (!last || e->last_ns > last->last_ns)
			last = e;
	}
	if (!last)
		return false;
	f->family = k->family;
	f->proto = k->proto;
	f->in_ifindex = k->in_if;
	memcpy(f->src, k->src, sizeof(f->src));
	memcpy(f->dst, k->dst, sizeof(f->dst));
	f->sport = ntohs(k->sport);
	f->dport = ntohs(k->dport);
	f->out_ifindex = last->out_if;
	memcpy(f->xsrc, last->xsrc, sizeof(f->xsrc));
	memcpy(f->xdst, last->xdst, sizeof(f->xdst));
	f->xsport = ntohs(last->xsport);
	f->xdport = ntohs(last->xdport);
	f->last_ns = last->last_ns;
	if (memcmp(f->src, f->xsrc, alen) || f->sport != f->xsport)
		f->xlated |= XDPR_FLOW_XSRC;
	if (memcmp(f->dst, f->xdst, alen) || f->dport != f->xdport)
		f->xlated |= XDPR_FLOW_XDST;
	memcpy(f->key, k, sizeof(f->key));
	return true;
}

int xdpr_flow_foreach(struct xdpr *x, int (*cb)(const struct xdpr_flow *f, void *arg), void *arg)
{
	struct xdpr_meter_key cur, next;
	struct xdpr_meter_val *v;
	int ncpu = xdpr_ncpus(), fd = x->fd[XM_METER], err = 0, more, end;
	struct xdpr_flow f;

	if (ncpu <= 0) {
		seterr(x, "cannot count CPUs: %s", strerror(ncpu ? -ncpu : EINVAL));
		return ncpu ? ncpu : -EINVAL;
	}
	v = calloc(ncpu, sizeof(*v));
	if (!v) {
		seterr(x, "cannot read metered flows: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	/* the next key first: cb may delete this one (a missing key restarts the walk) */
	more = !bpf_map_get_next_key(fd, NULL, &cur);
	end = more ? 0 : errno;
	while (more) {
		more = !bpf_map_get_next_key(fd, &cur, &next);
		end = more ? 0 : errno;
		if (!bpf_map_lookup_elem(fd, &cur, v) && flow_merge(&cur, v, ncpu, &f)) {
			err = cb(&f, arg);
			if (err)
				break;
		}
		cur = next;
	}
	if (!err && end != ENOENT) {
		err = -end;
		seterr(x, "cannot read metered flows: %s", strerror(end));
	}
	free(v);
	return err;
}

int xdpr_flow_delete(struct xdpr *x, const struct xdpr_flow *f)
{
	if (bpf_map_delete_elem(x->fd[XM_METER], f->key)) {
		int err = -errno;

		if (err != -ENOENT)
			seterr(x, "cannot delete a metered flow: %s", strerror(-err));
		return err;
	}
	return 0;
}

long xdpr_flow_flush(struct xdpr *x)
{
	return xdpr_map_flush(x, x->fd[XM_METER], sizeof(struct xdpr_meter_key), "metered flows");
}

int xdpr_flow_set(struct xdpr *x, bool on, __u32 sample)
{
	struct xdpr_cfg c;
	int err;

	if (sample > XDPR_SAMPLE_MAX) {
		seterr(x, "sample %u: at most %d", sample, XDPR_SAMPLE_MAX);
		return -EINVAL;
	}
	err = xdpr_cfg_get(x, &c);
	if (err)
		return err;
	c.flow_sample = sample ? sample : 1;
	if (on)
		c.flags |= XDPR_CFG_FLOWS;
	else
		c.flags &= ~XDPR_CFG_FLOWS;
	return xdpr_cfg_set(x, &c);
}

int xdpr_flow_get(struct xdpr *x, bool *on, __u32 *sample, __u64 *unmetered, __u64 *count, __u64 *max)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (err)
		return err;
	if (on)
		*on = c.flags & XDPR_CFG_FLOWS;
	if (sample)
		*sample = c.flow_sample ? c.flow_sample : 1;
	if (unmetered) {
		int ncpu = xdpr_ncpus();
		struct xdpr_meter_pcpu *pc = ncpu > 0 ? calloc(ncpu, sizeof(*pc)) : NULL;
		__u32 zero = 0;

		if (!pc || bpf_map_lookup_elem(x->fd[XM_METER_PC], &zero, pc)) {
			err = pc ? -errno : -ENOMEM;
			seterr(x, "cannot read the flow meter's counters: %s", strerror(-err));
			free(pc);
			return err;
		}
		*unmetered = 0;
		for (int i = 0; i < ncpu; i++)
			*unmetered += pc[i].unmetered;
		free(pc);
	}
	if (count) {
		struct xdpr_meter_key k, *prev = NULL;

		*count = 0;
		for (; !bpf_map_get_next_key(x->fd[XM_METER], prev, &k); prev = &k)
			++*count;
	}
	return max ? xdpr_map_max(x, XM_METER, "the flow table's size", max) : 0;
}
