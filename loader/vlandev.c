// SPDX-License-Identifier: GPL-2.0
/*
 * vlandev.c - what the kernel says about VLAN devices and receive VLAN
 * offload (a leaf: nothing of the library below it).
 *
 * VLANs come from one RTM_GETLINK dump (libmnl): kind "vlan", its port
 * (IFLA_LINK), VID, protocol and the ingress/egress QoS maps, which become
 * the tables the datapath reads (struct xdpr_iface in_prio, pcp).  Receive
 * VLAN offload is ethtool's rxvlan flag (NETIF_F_HW_VLAN_CTAG_RX), read and
 * set with the ETHTOOL_GFLAGS/SFLAGS ioctl.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/if_ether.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <libmnl/libmnl.h>
#include "libxdpr.h"

struct dump {
	struct xdpr_vlan_dev *v;
	int n, cap;
	const char *only; /* one device by name, NULL: all */
};

static int attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, IFLA_MAX) >= 0)
		tb[type] = a;
	return MNL_CB_OK;
}

static int info_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, IFLA_INFO_MAX) >= 0)
		tb[type] = a;
	return MNL_CB_OK;
}

static int vlan_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, IFLA_VLAN_MAX) >= 0)
		tb[type] = a;
	return MNL_CB_OK;
}

/* The QoS maps as the datapath's tables: PCP -> priority, priority -> PCP. */
static void qos_maps(struct xdpr_vlan_dev *v, const struct nlattr *in, const struct nlattr *eg)
{
	const struct nlattr *m;

	if (in)
		mnl_attr_for_each_nested(m, in) {
			const struct ifla_vlan_qos_mapping *q = mnl_attr_get_payload(m);

			if (mnl_attr_get_type(m) != IFLA_VLAN_QOS_MAPPING ||
			    mnl_attr_get_payload_len(m) < sizeof(*q) || q->from > 7)
				continue;
			v->in_prio[q->from] = q->to > 15 ? 16 : q->to;
		}
	if (eg)
		mnl_attr_for_each_nested(m, eg) {
			const struct ifla_vlan_qos_mapping *q = mnl_attr_get_payload(m);

			if (mnl_attr_get_type(m) != IFLA_VLAN_QOS_MAPPING ||
			    mnl_attr_get_payload_len(m) < sizeof(*q))
				continue;
			/* priorities above 15 are one cell: no exact match for them (vlan.h) */
			if (q->from <= 15)
				v->pcp[q->from] = q->to & 7;
		}
}

static int link_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[IFLA_MAX + 1] = {}, *ti[IFLA_INFO_MAX + 1] = {};
	const struct nlattr *tv[IFLA_VLAN_MAX + 1] = {};
	const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
	struct dump *d = arg;
	struct xdpr_vlan_dev *v;
	const char *name;

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*ifm), attr_cb, tb);
	if (!tb[IFLA_IFNAME] || !tb[IFLA_LINKINFO])
		return MNL_CB_OK;
	name = mnl_attr_get_str(tb[IFLA_IFNAME]);
	if (d->only && strcmp(d->only, name))
		return MNL_CB_OK;
	mnl_attr_parse_nested(tb[IFLA_LINKINFO], info_cb, ti);
	if (!ti[IFLA_INFO_KIND] || strcmp(mnl_attr_get_str(ti[IFLA_INFO_KIND]), "vlan") ||
	    !ti[IFLA_INFO_DATA])
		return MNL_CB_OK;
	mnl_attr_parse_nested(ti[IFLA_INFO_DATA], vlan_cb, tv);
	if (!tv[IFLA_VLAN_ID])
		return MNL_CB_OK;
	if (d->n == d->cap) {
		int cap = d->cap ? 2 * d->cap : 64;
		void *p = realloc(d->v, cap * sizeof(*d->v));

		if (!p)
			return MNL_CB_ERROR;
		d->v = p;
		d->cap = cap;
	}
	v = &d->v[d->n++];
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", name);
	v->ifindex = ifm->ifi_index;
	v->up = ifm->ifi_flags & IFF_UP;
	v->parent = tb[IFLA_LINK] ? mnl_attr_get_u32(tb[IFLA_LINK]) : 0;
	v->other_ns = tb[IFLA_LINK_NETNSID] != NULL;
	v->vid = mnl_attr_get_u16(tv[IFLA_VLAN_ID]);
	v->dot1q = !tv[IFLA_VLAN_PROTOCOL] ||
		   mnl_attr_get_u16(tv[IFLA_VLAN_PROTOCOL]) == htons(ETH_P_8021Q);
	if (tb[IFLA_ADDRESS] && mnl_attr_get_payload_len(tb[IFLA_ADDRESS]) == 6)
		memcpy(v->mac, mnl_attr_get_payload(tb[IFLA_ADDRESS]), 6);
	qos_maps(v, tv[IFLA_VLAN_INGRESS_QOS], tv[IFLA_VLAN_EGRESS_QOS]);
	return MNL_CB_OK;
}

/* One dump of the namespace's links; the VLANs in d. */
static int dump_links(struct dump *d)
{
	char buf[MNL_SOCKET_BUFFER_SIZE * 2];
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	struct nlmsghdr *nlh;
	struct rtgenmsg *g;
	unsigned int seq = time(NULL), port;
	int ret = 0;

	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out;
	}
	port = mnl_socket_get_portid(nl);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->rtgen_family = AF_UNSPEC;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		ssize_t len = mnl_socket_recvfrom(nl, buf, sizeof(buf));

		if (len < 0) {
			ret = -errno;
			break;
		}
		ret = mnl_cb_run(buf, len, seq, port, link_cb, d);
		if (ret <= MNL_CB_STOP) {
			ret = ret < 0 ? (errno ? -errno : -EIO) : 0;
			break;
		}
	}
out:
	mnl_socket_close(nl);
	return ret;
}

int xdpr_vlan_devs(struct xdpr_vlan_dev **out)
{
	struct dump d = {};
	int err = dump_links(&d);

	if (err) {
		free(d.v);
		*out = NULL;
		return err;
	}
	*out = d.v;
	return d.n;
}

int xdpr_vlan_of(const char *name, struct xdpr_vlan_dev *v)
{
	struct dump d = { .only = name };
	int err = dump_links(&d);

	if (!err && d.n)
		*v = d.v[0];
	free(d.v);
	return err ? err : d.n > 0;
}

static int ethtool(const char *dev, struct ethtool_value *ev)
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	ifr.ifr_data = (void *)ev;
	if (ioctl(fd, SIOCETHTOOL, &ifr))
		err = -errno;
	close(fd);
	return err;
}

int xdpr_rxvlan_get(const char *dev, bool *on)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_GFLAGS };
	int err = ethtool(dev, &ev);

	if (!err)
		*on = ev.data & ETH_FLAG_RXVLAN;
	return err;
}

int xdpr_rxvlan_set(const char *dev, bool on)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_GFLAGS };
	int err = ethtool(dev, &ev);
	bool now;

	if (err)
		return err;
	ev.cmd = ETHTOOL_SFLAGS;
	ev.data = on ? ev.data | ETH_FLAG_RXVLAN : ev.data & ~ETH_FLAG_RXVLAN;
	err = ethtool(dev, &ev);
	if (err)
		return err;
	/* the driver may keep it (a feature it cannot change alone) */
	err = xdpr_rxvlan_get(dev, &now);
	return err ? err : now == on ? 0 : -EOPNOTSUPP;
}
