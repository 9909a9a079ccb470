/* SPDX-License-Identifier: GPL-2.0 */
/* parse.h - bounds-checked header cursor over an XDP frame. */
#ifndef XDPR_PARSE_H
#define XDPR_PARSE_H

#include <linux/types.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/bpf.h>
#include <bpf/bpf_endian.h>
#include "xdpr_shared.h"

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

#define IP_MF     0x2000
#define IP_DF     0x4000
#define IP_OFFSET 0x1fff

/*
 * An IPv4 packet as the NAT steps see it.  Pointers are checked against
 * end (the frame, for the verifier) and ip_end (the IP total length, so
 * Ethernet padding is never parsed or rewritten): pkt4_has() checks both.
 */
struct pkt4 {
	struct iphdr *iph;
	void *l4;          /* transport header, NULL when not present (later fragment) */
	void *end;         /* data_end */
	void *ip_end;      /* iph + total length (<= end) */
	__be16 sport;      /* key ports: TCP/UDP ports, ICMP echo id (see xdpr_ct_key) */
	__be16 dport;
	__u8 proto;
	__u8 frag;         /* any fragment */
	__u8 icmp_err;     /* ICMP destination unreachable / time exceeded / parameter problem */
	__u8 reversed;     /* destination translated back to an inside host */
};

#define pkt4_has(p, ptr, len) \
	((void *)(ptr) + (len) <= (p)->end && (void *)(ptr) + (len) <= (p)->ip_end)

/*
 * The same packet as offsets from the frame start: what crosses into a
 * global (verified-once) function, which takes no packet pointers and
 * rebuilds its view from the context (pkt4_view).
 */
struct pkt4_io {
	__u16 l3;          /* IPv4 header offset */
	__u16 l4;          /* transport header offset, 0: none */
	__u16 ip_end;      /* end of the IP packet (offset) */
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 frag;
	__u8 icmp_err;
	__u8 reversed;
	__be16 orig_dport; /* as it arrived, before an inbound translation */
	__be32 orig_daddr;
	__u8 out_nrules;   /* source NAT: the egress interface's rules (struct xdpr_iface), */
	__u8 out_rules[XDPR_NAT_IF_RULES]; /* copied by whoever looked it up */
	__u8 filtered;     /* the filter has judged this packet (or its NAT session stands for it) */
	__u8 flt;          /* the filter is on (XDPR_CFG_FILTER) */
	__u8 out_fwd;      /* the egress interface has port forwards (XDPR_IF_FWD) */
	__be32 hp_addr;    /* hairpin: the binding's address and rule */
	__u32 hp_rule;
	/*
	 * The IPv4 path's own state (fwd_ip4_path), kept here rather than in
	 * its frame: it lives across every step the path calls, and the
	 * path's frame is on every call chain (6.1 counts them within 512).
	 */
	__s32 fib_rc;      /* the FIB's answer (route map: for the next hop), */
	__be32 fib_dst;    /* the address it asked about (route map: the next hop) */
	__u32 fib_if;      /* and through which interface */
	__u32 fib_flags;   /* BPF_FIB_LOOKUP_* of the path's lookups */
	__u64 now;         /* NAT's clock for this packet (0: NAT off) */
	__u16 tot_len;     /* the IPv4 total length */
	__u8 nat;          /* NAT is on (XDPR_CFG_NAT) */
	__u8 routed;       /* a route map "via" route gave the next hop (fib_*), not the kernel FIB */
	__u32 fwd_if;      /* port forwards of this interface apply to the packet (0: none) */
	__u8 fwd_new;      /* a forward's new flow: translated, its session not made yet */
	__u8 flt_ran;      /* the filter step took this packet's view (filter4_view): flt_pkt.made is its own */
	__u8 snat_new;     /* source NAT made this packet's session (ip4_snat) */
	__u8 pad2;
	__be16 snat_sport; /* source NAT: the source port before translation */
	__u16 pad3;
};

/* The offsets of p, whose IPv4 header starts l3 bytes into the frame. */
static __always_inline void pkt4_to_io(const struct pkt4 *p, __u16 l3, struct pkt4_io *io)
{
	io->l3 = l3;
	io->l4 = p->l4 ? l3 + p->iph->ihl * 4 : 0;
	io->ip_end = l3 + bpf_ntohs(p->iph->tot_len);
	io->sport = p->sport;
	io->dport = p->dport;
	io->proto = p->proto;
	io->frag = p->frag;
	io->icmp_err = p->icmp_err;
	io->reversed = p->reversed;
}

/* The egress interface's NAT rules, for nat4_snat (which takes no pointers). */
static __always_inline void pkt4_io_rules(struct pkt4_io *io, const struct xdpr_iface *out)
{
	io->out_nrules = out->nrules;
	io->out_fwd = !!(out->flags & XDPR_IF_FWD);
	__builtin_memcpy(io->out_rules, out->rules, sizeof(io->out_rules));
}

/* Back from a global function: what it may have changed. */
static __always_inline void pkt4_from_io(struct pkt4 *p, const struct pkt4_io *io)
{
	p->sport = io->sport;
	p->dport = io->dport;
	p->reversed = io->reversed;
}

/* Inside a global function: the pointer view of io; 0, or -1 if it does not fit the frame. */
static __always_inline int pkt4_view(struct xdp_md *ctx, const struct pkt4_io *io, struct pkt4 *p)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u32 l3 = io->l3 & 0x3f, l4 = io->l4 & 0xff, ip_end = io->ip_end;

	p->iph = data + l3;
	if ((void *)(p->iph + 1) > end)
		return -1;
	p->end = end;
	p->ip_end = data + ip_end;
	if (p->ip_end > end)
		return -1;
	p->l4 = l4 ? data + l4 : NULL;
	p->sport = io->sport;
	p->dport = io->dport;
	p->proto = io->proto;
	p->frag = io->frag;
	p->icmp_err = io->icmp_err;
	p->reversed = io->reversed;
	return 0;
}

static __always_inline void pkt4_back(const struct pkt4 *p, struct pkt4_io *io)
{
	io->sport = p->sport;
	io->dport = p->dport;
	io->reversed = p->reversed;
}

#endif /* XDPR_PARSE_H */
