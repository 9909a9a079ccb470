/* SPDX-License-Identifier: GPL-2.0 */
/*
 * trnet.h - the two-interface router the BPF_PROG_TEST_RUN benchmarks
 * (binatbench, ddosbench) run xdpr_main on: u0 10.0.1.1/24 (host 10.0.1.2),
 * u1 10.0.2.1/24 (host 10.0.2.2), in a network namespace of their own.
 * Include after xdpr.skel.h and testrun.h.
 */
#ifndef XDPR_TRNET_H
#define XDPR_TRNET_H

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>

struct dev {
	const char *name, *mac, *addr, *host, *host_mac;
	__u32 slot, ifindex;
	__u8 hw[6];
};

static struct dev devs[2] = {
	{ "u0", "02:00:00:00:01:01", "10.0.1.1/24", "10.0.1.2", "02:00:00:00:01:02", 1, 0, {} },
	{ "u1", "02:00:00:00:02:01", "10.0.2.1/24", "10.0.2.2", "02:00:00:00:02:02", 2, 0, {} },
};

static __u16 fold(__u32 s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

static __u32 sum16(const __u8 *p, int n, __u32 s)
{
	for (int i = 0; i + 1 < n; i += 2)
		s += p[i] << 8 | p[i + 1];
	return s;
}

/* A 64-byte UDP frame src:5000 -> dst:53 as it arrives on devs[in]; its length. */
static int udp_frame(__u8 *b, int in, const char *src, const char *dst)
{
	struct dev *d = &devs[in];
	__u8 *ip = b + 14, *udp = ip + 20;
	struct in_addr s, t;

	memset(b, 0, 64);
	memcpy(b, d->hw, 6);
	memcpy(b + 6, "\x02\x00\x00\x00\xff\x01", 6);
	b[12] = 0x08;
	inet_pton(AF_INET, src, &s);
	inet_pton(AF_INET, dst, &t);
	ip[0] = 0x45, ip[3] = 50, ip[8] = 64, ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &s, 4);
	memcpy(ip + 16, &t, 4);
	ip[10] = 0, ip[11] = 0;
	{
		__u16 k = ~fold(sum16(ip, 20, 0));

		ip[10] = k >> 8, ip[11] = k;
	}
	udp[0] = 0x13, udp[1] = 0x88, udp[3] = 53, udp[5] = 30;
	{
		__u16 k = ~fold(sum16(udp, 30, sum16(ip + 12, 8, IPPROTO_UDP + 30)));

		udp[6] = k >> 8, udp[7] = k;
	}
	return 64;
}

/*
 * A fresh network namespace with the two devices (veth pairs), their hosts'
 * neighbours, IPv4 forwarding on, and both registered in the program's
 * maps as `xdpr link attach` registers them.
 */
static void devs_setup(struct xdpr_bpf *skel)
{
	int ifs = bpf_map__fd(skel->maps.xdpr_ifaces);

	if (unshare(CLONE_NEWNET))
		die("unshare: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		struct dev *d = &devs[i];
		struct xdpr_iface c = { .slot = d->slot, .flags = XDPR_IF_XMIT };
		struct ifreq ifr = {};
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		if (sh("ip link add %s address %s type veth peer name %sp", d->name, d->mac, d->name) ||
		    sh("ip link set %s up && ip link set %sp up", d->name, d->name) ||
		    sh("ip addr add %s dev %s", d->addr, d->name) ||
		    sh("ip neigh replace %s lladdr %s dev %s nud permanent", d->host, d->host_mac, d->name))
			die("cannot set up %s", d->name);
		d->ifindex = if_nametoindex(d->name);
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", d->name);
		if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr))
			die("cannot read the MAC of %s", d->name);
		memcpy(d->hw, ifr.ifr_hwaddr.sa_data, 6);
		memcpy(c.mac, d->hw, 6);
		close(fd);
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_tx_ports), &d->ifindex, &d->ifindex, BPF_ANY) ||
		    bpf_map_update_elem(ifs, &d->ifindex, &c, BPF_ANY))
			die("cannot register %s", d->name);
	}
	if (sh("sysctl -qw net.ipv4.ip_forward=1"))
		die("cannot turn forwarding on");
}

#endif /* XDPR_TRNET_H */
