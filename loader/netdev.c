// SPDX-License-Identifier: GPL-2.0
/*
 * netdev.c - ask the kernel what a driver can do with XDP frames.
 *
 * The "netdev" generic netlink family (Linux 6.3+) reports xdp-features per
 * device.  NDO_XMIT tells whether frames redirected *to* the device can be
 * sent: e1000e cannot, a veth can only while its peer runs XDP or GRO.
 * The uapi headers on Debian 12 predate the family, so the few numbers
 * needed are defined here.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/genetlink.h>
#include <linux/rtnetlink.h>
#include <linux/neighbour.h>
#include "libxdpr.h"

#define NETDEV_FAMILY_NAME        "netdev"
#define NETDEV_CMD_DEV_GET        1
#define NETDEV_A_DEV_IFINDEX      1
#define NETDEV_A_DEV_XDP_FEATURES 3
#define NETDEV_XDP_ACT_NDO_XMIT   (1ULL << 2)

struct nlreq {
	struct nlmsghdr nh;
	struct genlmsghdr gh;
	char attrs[64];
};

static void put_attr(struct nlreq *r, __u16 type, const void *data, __u16 len)
{
	struct nlattr *a = (struct nlattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* Send one request, walk the attributes of the answer; cb returns 1 to stop. */
static int genl_call(int fd, struct nlreq *r, int (*cb)(struct nlattr *, void *), void *arg)
{
	char buf[8192];
	struct nlmsghdr *nh;
	ssize_t len;

	if (send(fd, r, r->nh.nlmsg_len, 0) < 0)
		return -errno;
	len = recv(fd, buf, sizeof(buf), 0);
	if (len < 0)
		return -errno;
	for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)len); nh = NLMSG_NEXT(nh, len)) {
		struct nlattr *a;
		int rem;

		if (nh->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(nh);

			return e->error ? e->error : -ENODATA;
		}
		a = (struct nlattr *)((char *)NLMSG_DATA(nh) + GENL_HDRLEN);
		rem = nh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;
		while (rem >= (int)NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= rem) {
			if (cb(a, arg))
				return 0;
			rem -= NLA_ALIGN(a->nla_len);
			a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
		}
	}
	return -ENODATA;
}

static int family_id_cb(struct nlattr *a, void *arg)
{
	if ((a->nla_type & NLA_TYPE_MASK) != CTRL_ATTR_FAMILY_ID)
		return 0;
	memcpy(arg, (char *)a + NLA_HDRLEN, sizeof(__u16));
	return 1;
}

static int features_cb(struct nlattr *a, void *arg)
{
	if ((a->nla_type & NLA_TYPE_MASK) != NETDEV_A_DEV_XDP_FEATURES)
		return 0;
	memcpy(arg, (char *)a + NLA_HDRLEN, sizeof(__u64));
	return 1;
}

int xdpr_probe_xdp_features(__u32 ifindex, __u64 *features)
{
	struct nlreq r = {};
	__u16 family = 0;
	int fd, err;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		return -errno;

	r.nh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r.nh.nlmsg_type = GENL_ID_CTRL;
	r.nh.nlmsg_flags = NLM_F_REQUEST;
	r.gh.cmd = CTRL_CMD_GETFAMILY;
	r.gh.version = 1;
	put_attr(&r, CTRL_ATTR_FAMILY_NAME, NETDEV_FAMILY_NAME, sizeof(NETDEV_FAMILY_NAME));
	err = genl_call(fd, &r, family_id_cb, &family);
	if (err)
		goto out;

	memset(&r, 0, sizeof(r));
	r.nh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r.nh.nlmsg_type = family;
	r.nh.nlmsg_flags = NLM_F_REQUEST;
	r.gh.cmd = NETDEV_CMD_DEV_GET;
	r.gh.version = 1;
	put_attr(&r, NETDEV_A_DEV_IFINDEX, &ifindex, sizeof(ifindex));
	*features = 0;
	err = genl_call(fd, &r, features_cb, features);
out:
	close(fd);
	return err;
}

enum xdpr_xmit xdpr_probe_xmit(__u32 ifindex)
{
	__u64 f;

	if (xdpr_probe_xdp_features(ifindex, &f))
		return XDPR_XMIT_UNKNOWN;
	return (f & NETDEV_XDP_ACT_NDO_XMIT) ? XDPR_XMIT_YES : XDPR_XMIT_NO;
}

struct neigh_req {
	struct nlmsghdr nh;
	struct ndmsg nd;
	char attrs[32];
};

/* An rtnetlink neighbour message about addr on ifindex. */
static void neigh_msg(struct neigh_req *r, __u16 type, __u16 flags, int family, const void *addr,
		      __u32 ifindex)
{
	int len = family == AF_INET6 ? 16 : 4;
	struct nlattr *a;

	memset(r, 0, sizeof(*r));
	r->nh.nlmsg_len = NLMSG_LENGTH(sizeof(r->nd));
	r->nh.nlmsg_type = type;
	r->nh.nlmsg_flags = NLM_F_REQUEST | flags;
	r->nd.ndm_family = family;
	r->nd.ndm_ifindex = ifindex;
	a = (struct nlattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));
	a->nla_type = NDA_DST;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, addr, len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

#define NUD_USABLE (NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_PROBE | NUD_STALE | NUD_DELAY)

/*
 * Does the kernel have a usable entry for this neighbour?  1 yes (and its
 * MAC in mac, when given), 0 no, <0 error.
 */
static int neigh_valid(int fd, int family, const void *addr, __u32 ifindex, __u8 *mac)
{
	struct neigh_req r;
	char buf[1024];
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	struct nlattr *a;
	ssize_t n;

	neigh_msg(&r, RTM_GETNEIGH, 0, family, addr, ifindex);
	if (send(fd, &r, r.nh.nlmsg_len, 0) < 0)
		return -errno;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0)
		return -errno;
	if (!NLMSG_OK(nh, (size_t)n) || nh->nlmsg_type != RTM_NEWNEIGH)
		return 0; /* NLMSG_ERROR: no such entry */
	if (!(((struct ndmsg *)NLMSG_DATA(nh))->ndm_state & NUD_USABLE))
		return 0;
	if (mac) {
		int rem = nh->nlmsg_len - NLMSG_LENGTH(sizeof(struct ndmsg));

		a = (struct nlattr *)((char *)NLMSG_DATA(nh) + NLMSG_ALIGN(sizeof(struct ndmsg)));
		for (; rem >= (int)NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= rem;
		     rem -= NLA_ALIGN(a->nla_len), a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))
			if ((a->nla_type & NLA_TYPE_MASK) == NDA_LLADDR && a->nla_len == NLA_HDRLEN + 6) {
				memcpy(mac, (char *)a + NLA_HDRLEN, 6);
				return 1;
			}
		return 0; /* usable but no Ethernet address */
	}
	return 1;
}

int xdpr_neigh_mac(int family, const void *addr, __u32 ifindex, __u8 mac[6])
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), ret;

	if (fd < 0)
		return -errno;
	ret = neigh_valid(fd, family, addr, ifindex, mac);
	close(fd);
	return ret;
}

/*
 * Make the kernel resolve a neighbour now, so a route map gateway the kernel
 * itself never talks to gets a MAC address.  An entry that is already usable
 * (static ones included) is left alone: NTF_USE goes through neigh_update on
 * current kernels and would reset it.
 */
int xdpr_neigh_use(int family, const void *addr, __u32 ifindex)
{
	struct neigh_req r;
	int fd, err;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	err = neigh_valid(fd, family, addr, ifindex, NULL);
	if (err != 0) {
		close(fd);
		return err < 0 ? err : 0;
	}
	neigh_msg(&r, RTM_NEWNEIGH, NLM_F_CREATE, family, addr, ifindex);
	r.nd.ndm_state = NUD_NONE;
	r.nd.ndm_flags = NTF_USE;
	if (send(fd, &r, r.nh.nlmsg_len, 0) < 0)
		err = -errno;
	close(fd);
	return err;
}
