/* SPDX-License-Identifier: GPL-2.0 */
/* parse.h - bounds-checked header cursor over an XDP frame. */
#ifndef XDPR_PARSE_H
#define XDPR_PARSE_H

#include <linux/types.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <bpf/bpf_endian.h>

struct cursor {
	void *pos;
	void *end;
};

/* Take len bytes at the cursor, or NULL if the frame is shorter. */
#define cursor_take(c, len) ({                                   \
	void *__p = (c)->pos;                                    \
	if (__p + (len) > (c)->end)                              \
		__p = NULL;                                      \
	else                                                     \
		(c)->pos = __p + (len);                          \
	__p; })

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

static __always_inline int eth_proto_is_vlan(__be16 proto)
{
	return proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD);
}

/* ICMPv4 header (linux/icmp.h drags in libc headers a BPF build cannot use). */
struct icmp4hdr {
	__u8 type;
	__u8 code;
	__sum16 check;
	__be16 id;      /* echo request / reply */
	__be16 seq;
};

#define ICMP_ECHOREPLY       0
#define ICMP_DEST_UNREACH    3
#define ICMP_ECHO            8
#define ICMP_TIME_EXCEEDED   11
#define ICMP_PARAMETERPROB   12

/* Transport ports for the FIB's multipath hash; zero when there are none. */
struct l4_ports {
	__be16 sport;
	__be16 dport;
};

static __always_inline void parse_ports(struct cursor *c, __u8 proto, struct l4_ports *p)
{
	struct l4_ports *hdr;

	p->sport = 0;
	p->dport = 0;
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP && proto != IPPROTO_SCTP &&
	    proto != IPPROTO_UDPLITE)
		return;
	hdr = cursor_take(c, sizeof(*hdr));
	if (hdr)
		*p = *hdr;
}

/* IPv6 next-header values that are extension headers (RFC 8200 4, IANA). */
static __always_inline int ip6_is_exthdr(__u8 nexthdr)
{
	switch (nexthdr) {
	case 0:   /* hop-by-hop */
	case 43:  /* routing */
	case 44:  /* fragment */
	case 51:  /* authentication header */
	case 60:  /* destination options */
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
	case 253: /* experimental */
	case 254:
		return 1;
	}
	return 0;
}

#endif /* XDPR_PARSE_H */
