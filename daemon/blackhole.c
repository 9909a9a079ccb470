// SPDX-License-Identifier: GPL-2.0
/*
 * blackhole.c - the blackhole routes xdprd announces for banned hosts: one
 * RTN_BLACKHOLE /32 or /128 per host in a routing table of the operator's
 * choice, with a routing protocol number of xdprd's own (BLACKHOLE_PROTO),
 * for a BGP speaker to learn and send upstream with the BLACKHOLE community
 * (RFC 7999; docs/bird-blackhole.conf).  The set wanted is reconciled with
 * what the table holds every time: routes missing are added, routes of
 * xdprd's protocol no longer wanted are deleted, so a restart or a manual
 * unban leaves nothing behind.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include "blackhole.h"

struct bh_route {
	int family;
	__u8 addr[16];
};

struct dump {
	__u32 table;
	struct bh_route *r;
	size_t n, cap;
};

static int attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int t = mnl_attr_get_type(a);

	if (t <= RTA_MAX)
		tb[t] = a;
	return MNL_CB_OK;
}

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct rtmsg *rt = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[RTA_MAX + 1] = {};
	struct dump *d = data;
	__u32 table = rt->rtm_table;
	int alen = rt->rtm_family == AF_INET ? 4 : 16;

	if (rt->rtm_protocol != BLACKHOLE_PROTO || rt->rtm_type != RTN_BLACKHOLE || rt->rtm_dst_len != alen * 8)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*rt), attr_cb, tb);
	if (tb[RTA_TABLE])
		table = mnl_attr_get_u32(tb[RTA_TABLE]);
	if (table != d->table || !tb[RTA_DST] || mnl_attr_get_payload_len(tb[RTA_DST]) != (size_t)alen)
		return MNL_CB_OK;
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		struct bh_route *n = realloc(d->r, cap * sizeof(*n));

		if (!n)
			return MNL_CB_ERROR;
		d->r = n;
		d->cap = cap;
	}
	memset(&d->r[d->n], 0, sizeof(d->r[d->n]));
	d->r[d->n].family = rt->rtm_family;
	memcpy(d->r[d->n].addr, mnl_attr_get_payload(tb[RTA_DST]), alen);
	d->n++;
	return MNL_CB_OK;
}

/* One request, its answer(s) through cb: 0 or -errno. */
static int talk(struct mnl_socket *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	__u32 seq = nlh->nlmsg_seq, port = mnl_socket_get_portid(nl);
	int n;

	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	while ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		n = mnl_cb_run(buf, n, seq, port, cb, data);
		if (n <= MNL_CB_STOP)
			break;
	}
	return n < 0 ? -errno : 0;
}

static int route_msg(struct mnl_socket *nl, int type, __u32 table, const struct bh_route *r)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rt;
	int alen = r->family == AF_INET ? 4 : 16;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (type == RTM_NEWROUTE ? NLM_F_CREATE | NLM_F_REPLACE : 0);
	nlh->nlmsg_seq = time(NULL) ^ (unsigned)getpid() ^ (unsigned)random();
	rt = mnl_nlmsg_put_extra_header(nlh, sizeof(*rt));
	rt->rtm_family = r->family;
	rt->rtm_dst_len = alen * 8;
	rt->rtm_table = table < 256 ? table : RT_TABLE_UNSPEC;
	rt->rtm_protocol = BLACKHOLE_PROTO;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_BLACKHOLE;
	mnl_attr_put_u32(nlh, RTA_TABLE, table);
	mnl_attr_put(nlh, RTA_DST, alen, r->addr);
	return talk(nl, nlh, NULL, NULL);
}

static int dump_table(struct mnl_socket *nl, int family, struct dump *d)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rt;
	int err;

	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = time(NULL) ^ (unsigned)random();
	rt = mnl_nlmsg_put_extra_header(nlh, sizeof(*rt));
	rt->rtm_family = family;
	/* with NETLINK_GET_STRICT_CHK the kernel dumps only this table's routes of our protocol */
	rt->rtm_protocol = BLACKHOLE_PROTO;
	rt->rtm_type = RTN_BLACKHOLE;
	mnl_attr_put_u32(nlh, RTA_TABLE, d->table);
	err = talk(nl, nlh, route_cb, d);
	return err == -ENOENT ? 0 : err; /* a table that does not exist yet holds no route */
}

static bool has(const struct bh_route *r, size_t n, int family, const __u8 *addr)
{
	int alen = family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < n; i++)
		if (r[i].family == family && !memcmp(r[i].addr, addr, alen))
			return true;
	return false;
}

int blackhole_reconcile(__u32 table, const struct xdpr_ddos_ban_info *want, size_t n, struct bh_stats *st,
			void (*log)(int added, int family, const __u8 *addr, int err))
{
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	struct dump d = { .table = table };
	int err = 0, e;

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		goto out;
	}
	mnl_socket_setsockopt(nl, NETLINK_GET_STRICT_CHK, &(int){ 1 }, sizeof(int)); /* a filter, if it can */
	if ((err = dump_table(nl, AF_INET, &d)) || (err = dump_table(nl, AF_INET6, &d)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct bh_route r = { .family = want[i].family };

		memcpy(r.addr, want[i].addr, sizeof(r.addr));
		if (has(d.r, d.n, r.family, r.addr))
			continue;
		e = route_msg(nl, RTM_NEWROUTE, table, &r);
		if (log)
			log(1, r.family, r.addr, e);
		if (e)
			err = e, st->errors++;
		else
			st->added++;
	}
	for (size_t i = 0; i < d.n; i++) {
		bool wanted = false;

		for (size_t j = 0; j < n && !wanted; j++)
			wanted = want[j].family == d.r[i].family &&
				 !memcmp(want[j].addr, d.r[i].addr, d.r[i].family == AF_INET ? 4 : 16);
		if (wanted)
			continue;
		e = route_msg(nl, RTM_DELROUTE, table, &d.r[i]);
		if (log)
			log(0, d.r[i].family, d.r[i].addr, e);
		if (e && e != -ESRCH)
			err = e, st->errors++;
		else
			st->withdrawn++;
	}
	st->routes = n;
out:
	free(d.r);
	if (nl)
		mnl_socket_close(nl);
	return err;
}
