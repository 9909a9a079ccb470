// SPDX-License-Identifier: GPL-2.0
/*
 * natlog.c - the NAT event log's ring (bpf/natlog.h): a reader for xdprd,
 * and the switch.  The ring is a shared map like the others (created with
 * the router, XDPR_NATLOG_BYTES); the reader maps it with libbpf's
 * ring_buffer on a duplicate of its fd, so it outlives the struct xdpr it
 * was opened from (xdprd opens and closes one per action).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core.h"

struct xdpr_natlog {
	struct ring_buffer *rb;
	int fd;                 /* our duplicate of the map's fd */
	__u32 id;               /* the map's id: is it still the router's? */
	xdpr_natlog_cb cb;
	void *arg;
};

static __u32 map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) ? info.id : 0;
}

static int on_sample(void *ctx, void *data, size_t size)
{
	struct xdpr_natlog *l = ctx;

	if (size < sizeof(struct xdpr_natlog_rec))
		return 0; /* not ours: a newer program's shorter record cannot be */
	return l->cb(data, l->arg);
}

struct xdpr_natlog *xdpr_natlog_open(struct xdpr *x, xdpr_natlog_cb cb, void *arg)
{
	struct xdpr_natlog *l;
	int err;

	if (x->fd[XM_NATLOG] < 0) {
		seterr(x, "the router has no NAT event ring (attached by an older xdpr?)");
		errno = ENOENT;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		seterr(x, "cannot read the NAT event ring: %s", strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	l->cb = cb;
	l->arg = arg;
	l->fd = fcntl(x->fd[XM_NATLOG], F_DUPFD_CLOEXEC, 0);
	if (l->fd < 0) {
		err = errno;
		seterr(x, "cannot read the NAT event ring: %s", strerror(err));
		free(l);
		errno = err;
		return NULL;
	}
	l->id = map_id(l->fd);
	l->rb = ring_buffer__new(l->fd, on_sample, l, NULL);
	if (!l->rb) {
		err = errno;
		seterr(x, "cannot map the NAT event ring: %s", strerror(err));
		close(l->fd);
		free(l);
		errno = err;
		return NULL;
	}
	return l;
}

int xdpr_natlog_fd(const struct xdpr_natlog *l)
{
	return ring_buffer__epoll_fd(l->rb);
}

int xdpr_natlog_consume(struct xdpr_natlog *l)
{
	return ring_buffer__consume(l->rb);
}

bool xdpr_natlog_is(const struct xdpr_natlog *l, struct xdpr *x)
{
	return l && x->fd[XM_NATLOG] >= 0 && map_id(x->fd[XM_NATLOG]) == l->id;
}

void xdpr_natlog_close(struct xdpr_natlog *l)
{
	if (!l)
		return;
	ring_buffer__free(l->rb);
	close(l->fd);
	free(l);
}

int xdpr_natlog_set(struct xdpr *x, bool on)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (err)
		return err;
	if (on == !!(c.flags & XDPR_CFG_NATLOG))
		return 0;
	if (on)
		c.flags |= XDPR_CFG_NATLOG;
	else
		c.flags &= ~XDPR_CFG_NATLOG;
	return xdpr_cfg_set(x, &c);
}

int xdpr_natlog_get(struct xdpr *x, bool *on)
{
	struct xdpr_cfg c;
	int err = xdpr_cfg_get(x, &c);

	if (!err)
		*on = c.flags & XDPR_CFG_NATLOG;
	return err;
}

int xdpr_natlog_lost(struct xdpr *x, __u64 *lost)
{
	int ncpu = xdpr_ncpus(), err = 0;
	__u64 *vals;

	*lost = 0;
	if (x->fd[XM_NSTATS] < 0)
		return 0;
	vals = ncpu > 0 ? calloc(ncpu, sizeof(*vals)) : NULL;
	if (!vals) {
		seterr(x, "cannot read the NAT counters: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (__u32 id = 0; id < XDPR_NAT_MAX_RULES; id++) {
		__u32 key = id * XDPR_NE_MAX + XDPR_NE_LOG_LOST;

		if (bpf_map_lookup_elem(x->fd[XM_NSTATS], &key, vals)) {
			err = -errno;
			seterr(x, "cannot read the NAT counters: %s", strerror(-err));
			break;
		}
		for (int c = 0; c < ncpu; c++)
			*lost += vals[c];
	}
	free(vals);
	return err;
}
