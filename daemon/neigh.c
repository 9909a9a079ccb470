// SPDX-License-Identifier: GPL-2.0
/*
 * neigh.c - the neighbours the fast path needs (bpf/neigh.h), kept by xdprd.
 *
 *   - a request on the fast path's ring (a reply translated back to an
 *     inside host was dropped for want of its MAC, or a new session's inside
 *     host has no entry): the kernel gets a "managed" entry for it
 *     (NTF_EXT_MANAGED, Linux 5.16): it resolves it now and keeps it
 *     resolved, so neighbours the fast path uses stay fresh although its
 *     packets never confirm them.  The entry carries NDA_PROTOCOL
 *     XDPR_RTPROT_XDPR ("proto 169" in `ip neigh`): xdprd knows its own.
 *   - one of those deleted by someone else (`ip neigh flush`): made again.
 *   - one that stays unresolved over two sweeps (the host is gone): deleted,
 *     also after a restart; the next request makes it again.
 *   - a next hop whose resolution failed (the kernel's own FAILED, not an
 *     administrator's delete) on an interface of the router: marked in
 *     xdpr_nbr_dead for XDPR_NBR_DEAD_NS, so the fast path answers packets
 *     through it with ICMP host unreachable; a valid entry lifts the mark.
 * An entry that is usable (a static one among them) is never touched.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <libmnl/libmnl.h>
#include "neigh.h"


#define NUD_USABLE (NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_PROBE | NUD_STALE | NUD_DELAY)
#define OWN_GONE 1024   /* entries xdprd deleted itself lately: their notifications are no flush */
#define SUSPECTS 1024   /* own entries found unresolved at the last sweep */
#define UNRESOLVED_MAX 256 /* ... and made since: above, new sessions' hosts are not asked for */

void neigh_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static struct {
	struct mnl_socket *nl;
	unsigned int seq;
	struct xdpr_nbr *rd;
	unsigned long long asked, made, remade, deleted, marked, errors, skipped;
	unsigned int fresh;     /* entries made since the last sweep */
	int last_err;
	struct xdpr_nbr_key gone[OWN_GONE];
	unsigned int ngone;
	struct xdpr_nbr_key sus[SUSPECTS], sus_next[SUSPECTS];
	unsigned int nsus, nsus_next;
} nb;

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static const char *key_str(const struct xdpr_nbr_key *k, char *buf, size_t n)
{
	char a[INET6_ADDRSTRLEN] = "?";

	inet_ntop(k->family, k->addr, a, sizeof(a));
	snprintf(buf, n, "%s (ifindex %u)", a, k->ifindex);
	return buf;
}

static void note_err(int e, const struct xdpr_nbr_key *k, const char *what)
{
	char b[80];

	nb.errors++;
	if (e == nb.last_err)
		return; /* once per kind of error, not once per packet */
	nb.last_err = e;
	neigh_log(LOG_WARNING, "neighbour %s: cannot %s: %s", key_str(k, b, sizeof(b)), what, strerror(-e));
}

/* One request to the kernel, its answer read: 0, -errno. */
static int talk(struct nlmsghdr *nh, mnl_cb_t cb, void *arg)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned int portid = mnl_socket_get_portid(nb.nl);
	ssize_t n;
	int ret;

	nh->nlmsg_seq = ++nb.seq;
	if (mnl_socket_sendto(nb.nl, nh, nh->nlmsg_len) < 0)
		return -errno;
	for (int stale = 0;;) {
		n = mnl_socket_recvfrom(nb.nl, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		ret = mnl_cb_run(buf, n, nh->nlmsg_seq, portid, cb, arg);
		/* the rest of an answer an error cut short: not ours, read on */
		if (ret < 0 && errno == EPROTO && ++stale < 64)
			continue;
		if (ret <= 0 || !(nh->nlmsg_flags & NLM_F_DUMP))
			break;
	}
	return ret < 0 ? -errno : 0;
}

static struct nlmsghdr *msg(char *buf, int type, int flags, const struct xdpr_nbr_key *k)
{
	struct nlmsghdr *nh = mnl_nlmsg_put_header(buf);
	struct ndmsg *nd;

	nh->nlmsg_type = type;
	nh->nlmsg_flags = NLM_F_REQUEST | flags;
	nd = mnl_nlmsg_put_extra_header(nh, sizeof(*nd));
	nd->ndm_family = k ? k->family : AF_UNSPEC;
	nd->ndm_ifindex = k ? k->ifindex : 0;
	if (k)
		mnl_attr_put(nh, NDA_DST, k->family == AF_INET ? 4 : 16, k->addr);
	return nh;
}

struct entry {
	struct xdpr_nbr_key k;
	__u16 state;
	__u8 proto;
	bool managed, found;
};

static int attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(a, NDA_MAX) >= 0)
		tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

/* An RTM_NEWNEIGH/DELNEIGH message as an entry; false if not an IP neighbour with an address. */
static bool parse(const struct nlmsghdr *nh, struct entry *e)
{
	const struct nlattr *tb[NDA_MAX + 1] = {};
	const struct ndmsg *nd = mnl_nlmsg_get_payload(nh);
	size_t alen = nd->ndm_family == AF_INET ? 4 : 16;

	if (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6)
		return false;
	mnl_attr_parse(nh, sizeof(*nd), attr_cb, tb);
	if (!tb[NDA_DST] || mnl_attr_get_payload_len(tb[NDA_DST]) != alen)
		return false;
	memset(e, 0, sizeof(*e));
	e->k.ifindex = nd->ndm_ifindex;
	e->k.family = nd->ndm_family;
	memcpy(e->k.addr, mnl_attr_get_payload(tb[NDA_DST]), alen);
	e->state = nd->ndm_state;
	e->proto = tb[NDA_PROTOCOL] ? mnl_attr_get_u8(tb[NDA_PROTOCOL]) : 0;
	e->managed = tb[NDA_FLAGS_EXT] && (mnl_attr_get_u32(tb[NDA_FLAGS_EXT]) & NTF_EXT_MANAGED);
	e->found = true;
	return true;
}

static int get_cb(const struct nlmsghdr *nh, void *arg)
{
	if (nh->nlmsg_type == RTM_NEWNEIGH)
		parse(nh, arg);
	return MNL_CB_OK;
}

/*
 * Have the kernel resolve k and keep it resolved: a managed entry of ours,
 * unless a usable one is there.  1 made, 0 left alone, -errno.
 */
static int manage(const struct xdpr_nbr_key *k)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct entry e = {};
	struct nlmsghdr *nh;
	struct ndmsg *nd;

	talk(msg(buf, RTM_GETNEIGH, 0, k), get_cb, &e); /* ENOENT: none */
	if (e.found && ((e.state & NUD_USABLE) || (e.proto == XDPR_RTPROT_XDPR && e.managed)))
		return 0; /* usable, or ours and being resolved */
	nh = msg(buf, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK, k);
	nd = mnl_nlmsg_get_payload(nh);
	nd->ndm_state = NUD_NONE;
	mnl_attr_put_u32(nh, NDA_FLAGS_EXT, NTF_EXT_MANAGED);
	mnl_attr_put_u8(nh, NDA_PROTOCOL, XDPR_RTPROT_XDPR);
	return talk(nh, NULL, NULL) ?: 1;
}

static int on_request(const struct xdpr_nbr_rec *r, void *arg)
{
	int ret;

	(void)arg;
	nb.asked++;
	/*
	 * New sessions from sources nobody answers for (spoofed inside
	 * addresses) must not fill the kernel's neighbour table: once many
	 * entries of ours were unresolved at the last sweep or made since,
	 * only dropped replies are answered until the next sweep.
	 */
	if (r->why == XDPR_NBR_NEW && nb.nsus + nb.fresh >= UNRESOLVED_MAX) {
		nb.skipped++;
		return 0;
	}
	ret = manage(&r->k);
	if (ret < 0)
		note_err(ret, &r->k, "have it resolved");
	nb.made += ret > 0;
	nb.fresh += ret > 0;
	return 0;
}

int neigh_open(char *err, size_t elen)
{
	nb.nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nb.nl || mnl_socket_bind(nb.nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		snprintf(err, elen, "cannot open a netlink socket for neighbours: %s", strerror(errno));
		if (nb.nl)
			mnl_socket_close(nb.nl);
		nb.nl = NULL;
		return -1;
	}
	/* an answer never waited for longer than a second (the main loop waits) */
	struct timeval tv = { .tv_sec = 1 };

	setsockopt(mnl_socket_get_fd(nb.nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return 0;
}

void neigh_close(void)
{
	xdpr_nbr_close(nb.rd);
	nb.rd = NULL;
	if (nb.nl)
		mnl_socket_close(nb.nl);
	nb.nl = NULL;
}

void neigh_sync(struct xdpr *x)
{
	static int last;

	if (!nb.nl || !x->nlinks || xdpr_nbr_is(nb.rd, x))
		return;
	xdpr_nbr_close(nb.rd); /* the first, or the router was attached anew */
	nb.rd = xdpr_nbr_open(x, on_request, NULL);
	if (!nb.rd && errno != last)
		neigh_log(LOG_WARNING, "neighbours the fast path needs: %s", x->err);
	last = nb.rd ? 0 : errno;
}

int neigh_fd(void)
{
	return nb.rd ? xdpr_nbr_fd(nb.rd) : -1;
}

void neigh_drain(void)
{
	if (nb.rd)
		xdpr_nbr_consume(nb.rd);
}

static bool own_gone(const struct xdpr_nbr_key *k)
{
	for (unsigned int i = 0; i < OWN_GONE && i < nb.ngone; i++)
		if (!memcmp(&nb.gone[i], k, sizeof(*k)))
			return true;
	return false;
}

void neigh_event(const struct nlmsghdr *nlh)
{
	struct entry e;
	int ret;

	if (!nb.nl || !nb.rd || !parse(nlh, &e))
		return;
	if (nlh->nlmsg_type == RTM_NEWNEIGH) {
		if (e.state & NUD_USABLE) {
			xdpr_nbr_unmark(nb.rd, &e.k); /* resolved (again): nothing to answer */
		} else if (e.state == NUD_FAILED && nlh->nlmsg_pid == 0) {
			/* the kernel's own failure (an administrator's delete carries its port id) */
			if (!xdpr_nbr_mark(nb.rd, &e.k, mono_ns() + XDPR_NBR_DEAD_NS))
				nb.marked++;
		}
		return;
	}
	/* RTM_DELNEIGH of one of ours that no sweep of ours deleted and that did not fail: a flush */
	if (e.proto != XDPR_RTPROT_XDPR || own_gone(&e.k) || xdpr_nbr_marked(nb.rd, &e.k, mono_ns()))
		return;
	ret = manage(&e.k);
	if (ret < 0)
		note_err(ret, &e.k, "resolve it again");
	else
		nb.remade += ret;
}

static int dump_cb(const struct nlmsghdr *nh, void *arg)
{
	struct entry e;

	(void)arg;
	if (nh->nlmsg_type != RTM_NEWNEIGH || !parse(nh, &e) || e.proto != XDPR_RTPROT_XDPR ||
	    (e.state & NUD_USABLE) || nb.nsus_next >= SUSPECTS)
		return MNL_CB_OK;
	nb.sus_next[nb.nsus_next++] = e.k;
	return MNL_CB_OK;
}

void neigh_gc(void)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	static unsigned long long said_asked, said_made, said_remade, said_deleted, said_marked;
	int n;

	if (!nb.nl || !nb.rd)
		return;
	xdpr_nbr_sweep(nb.rd, mono_ns());
	/* ours, unresolved now and at the last sweep: the host is gone */
	nb.nsus_next = 0;
	if (talk(msg(buf, RTM_GETNEIGH, NLM_F_DUMP, NULL), dump_cb, NULL) < 0)
		return;
	for (unsigned int i = 0; i < nb.nsus_next; i++) {
		bool again = false;

		for (unsigned int j = 0; j < nb.nsus && !again; j++)
			again = !memcmp(&nb.sus[j], &nb.sus_next[i], sizeof(nb.sus[j]));
		if (!again)
			continue;
		nb.gone[nb.ngone++ % OWN_GONE] = nb.sus_next[i];
		if (!talk(msg(buf, RTM_DELNEIGH, NLM_F_ACK, &nb.sus_next[i]), NULL, NULL))
			nb.deleted++;
	}
	memcpy(nb.sus, nb.sus_next, nb.nsus_next * sizeof(nb.sus[0]));
	nb.nsus = nb.nsus_next;
	nb.fresh = 0;
	n = nb.asked != said_asked || nb.deleted != said_deleted || nb.marked != said_marked;
	if (n)
		neigh_log(LOG_INFO, "neighbours: %llu asked for by the fast path, %llu resolved on demand, "
			  "%llu made again after a flush, %llu deleted (unresolved), %llu next hops marked "
			  "unreachable", nb.asked - said_asked, nb.made - said_made, nb.remade - said_remade,
			  nb.deleted - said_deleted, nb.marked - said_marked);
	said_asked = nb.asked, said_made = nb.made, said_remade = nb.remade;
	said_deleted = nb.deleted, said_marked = nb.marked;
}

void neigh_metrics(FILE *f)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} m[] = {
		{ "xdprd_neighbour_requests_total", "Neighbours the fast path asked for (a reply or a new "
		  "session for an inside host the kernel had no entry for).", offsetof(typeof(nb), asked) },
		{ "xdprd_neighbours_managed_total", "Managed neighbour entries made for the fast path's "
		  "requests.", offsetof(typeof(nb), made) },
		{ "xdprd_neighbours_remade_total", "Managed entries of xdprd's made again after someone "
		  "deleted them (a flush).", offsetof(typeof(nb), remade) },
		{ "xdprd_neighbours_deleted_total", "Managed entries of xdprd's deleted: unresolved at "
		  "two sweeps running.", offsetof(typeof(nb), deleted) },
		{ "xdprd_next_hops_marked_total", "Next hops marked as failing to resolve (packets through "
		  "them answered with host unreachable).", offsetof(typeof(nb), marked) },
		{ "xdprd_neighbour_errors_total", "Neighbour requests to the kernel that failed.",
		  offsetof(typeof(nb), errors) },
		{ "xdprd_neighbour_requests_skipped_total", "Requests for new sessions' inside hosts not "
		  "acted on: too many entries of xdprd's were unresolved.", offsetof(typeof(nb), skipped) },
	};

	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++)
		fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", m[k].name, m[k].help, m[k].name,
			m[k].name, *(unsigned long long *)((char *)&nb + m[k].off));
}
