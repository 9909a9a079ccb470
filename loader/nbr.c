// SPDX-License-Identifier: GPL-2.0
/*
 * nbr.c - neighbours the fast path needs (bpf/neigh.h): a reader of its
 * request ring for xdprd, the marks of next hops that failed to resolve,
 * and the request counts.  Like the NAT event ring's reader (natlog.c),
 * the reader keeps duplicates of the maps' fds, so it outlives the struct
 * xdpr it was opened from.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "core.h"

struct xdpr_nbr {
	struct ring_buffer *rb;
	int fd;                 /* our duplicate of the ring's fd */
	int dead_fd;            /* and of xdpr_nbr_dead's */
	__u32 id;               /* the ring's id: is it still the router's? */
	xdpr_nbr_cb cb;
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
	struct xdpr_nbr *l = ctx;

	if (size < sizeof(struct xdpr_nbr_rec))
		return 0;
	return l->cb(data, l->arg);
}

struct xdpr_nbr *xdpr_nbr_open(struct xdpr *x, xdpr_nbr_cb cb, void *arg)
{
	struct xdpr_nbr *l;
	int err;

	if (x->fd[XM_NBR_REQ] < 0 || x->fd[XM_NBR_DEAD] < 0) {
		seterr(x, "the router has no neighbour request ring (attached by an older xdpr?)");
		errno = ENOENT;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		seterr(x, "cannot read the neighbour requests: %s", strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	l->cb = cb;
	l->arg = arg;
	l->fd = fcntl(x->fd[XM_NBR_REQ], F_DUPFD_CLOEXEC, 0);
	l->dead_fd = fcntl(x->fd[XM_NBR_DEAD], F_DUPFD_CLOEXEC, 0);
	if (l->fd < 0 || l->dead_fd < 0) {
		err = errno;
		seterr(x, "cannot read the neighbour requests: %s", strerror(err));
		goto fail;
	}
	l->id = map_id(l->fd);
	l->rb = ring_buffer__new(l->fd, on_sample, l, NULL);
	if (!l->rb) {
		err = errno;
		seterr(x, "cannot map the neighbour request ring: %s", strerror(err));
		goto fail;
	}
	return l;
fail:
	if (l->fd >= 0)
		close(l->fd);
	if (l->dead_fd >= 0)
		close(l->dead_fd);
	free(l);
	errno = err;
	return NULL;
}

int xdpr_nbr_fd(const struct xdpr_nbr *l)
{
	return ring_buffer__epoll_fd(l->rb);
}

int xdpr_nbr_consume(struct xdpr_nbr *l)
{
	return ring_buffer__consume(l->rb);
}

bool xdpr_nbr_is(const struct xdpr_nbr *l, struct xdpr *x)
{
	return l && x->fd[XM_NBR_REQ] >= 0 && map_id(x->fd[XM_NBR_REQ]) == l->id;
}

void xdpr_nbr_close(struct xdpr_nbr *l)
{
	if (!l)
		return;
	ring_buffer__free(l->rb);
	close(l->fd);
	close(l->dead_fd);
	free(l);
}

int xdpr_nbr_mark(struct xdpr_nbr *l, const struct xdpr_nbr_key *k, __u64 until_ns)
{
	return bpf_map_update_elem(l->dead_fd, k, &until_ns, BPF_ANY) ? -errno : 0;
}

int xdpr_nbr_unmark(struct xdpr_nbr *l, const struct xdpr_nbr_key *k)
{
	if (bpf_map_delete_elem(l->dead_fd, k))
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

bool xdpr_nbr_marked(struct xdpr_nbr *l, const struct xdpr_nbr_key *k, __u64 now_ns)
{
	__u64 until;

	return !bpf_map_lookup_elem(l->dead_fd, k, &until) && now_ns < until;
}

int xdpr_nbr_sweep(struct xdpr_nbr *l, __u64 now_ns)
{
	struct xdpr_nbr_key k, next, *prev = NULL;
	int n = 0;

	/* deleting the key just read: the walk goes on from the next one */
	while (!bpf_map_get_next_key(l->dead_fd, prev, &next)) {
		__u64 until;

		k = next;
		prev = &k;
		if (!bpf_map_lookup_elem(l->dead_fd, &k, &until) && until <= now_ns &&
		    !bpf_map_delete_elem(l->dead_fd, &k))
			n++;
	}
	return n;
}

/* The offset of global variable name in the program's .bss (BTF of the map), or -1. */
static long bss_offset(int fd, const char *name, __u32 *vsize)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	struct btf *btf;
	long off = -1;
	int sec;

	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.btf_id)
		return -1;
	*vsize = info.value_size;
	btf = btf__load_from_kernel_by_id(info.btf_id);
	if (!btf)
		return -1;
	sec = btf__find_by_name_kind(btf, ".bss", BTF_KIND_DATASEC);
	if (sec > 0) {
		const struct btf_type *t = btf__type_by_id(btf, sec);
		const struct btf_var_secinfo *v = btf_var_secinfos(t);

		for (int i = 0; i < btf_vlen(t); i++, v++)
			if (!strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, v->type)->name_off), name) &&
			    v->size == XDPR_NB_MAX * sizeof(__u64))
				off = v->offset;
	}
	btf__free(btf);
	return off;
}

int xdpr_nbr_counts(struct xdpr *x, __u64 out[XDPR_NB_MAX])
{
	__u32 zero = 0, vsize = 0;
	long off;
	char *buf;
	int err = 0;

	memset(out, 0, XDPR_NB_MAX * sizeof(*out));
	if (x->fd[XM_BSS] < 0)
		return -ENOENT;
	off = bss_offset(x->fd[XM_BSS], "xdpr_nbr_ctr", &vsize);
	if (off < 0 || off + XDPR_NB_MAX * sizeof(__u64) > vsize)
		return -ENOENT;
	buf = calloc(1, vsize);
	if (!buf)
		return -ENOMEM;
	if (bpf_map_lookup_elem(x->fd[XM_BSS], &zero, buf))
		err = -errno;
	else
		memcpy(out, buf + off, XDPR_NB_MAX * sizeof(*out));
	free(buf);
	return err;
}
