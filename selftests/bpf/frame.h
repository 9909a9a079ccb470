/* SPDX-License-Identifier: GPL-2.0 */
/*
 * frame.h - a test frame, its IP and transport headers with valid
 * checksums, one BPF_PROG_TEST_RUN of it, and byte-exact comparison with
 * the first difference named; shared by the forwarding and route-map
 * tables.  Include after harness.h.
 */
#ifndef XDPR_TEST_FRAME_H
#define XDPR_TEST_FRAME_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/libbpf.h>

#define FRAME_MAX 2048

struct frame {
	__u8 b[FRAME_MAX];
	int len;     /* Ethernet frame bytes */
	int linear;  /* bytes in the linear area the program sees; 0: all of them */
	int l3, l4;  /* header offsets */
};

/* One BPF_PROG_TEST_RUN of one frame; out gets the frame as the program left it. */
static int run_frame(int prog_fd, __u32 ifindex, const struct frame *f, struct frame *out, __u32 *verdict)
{
	struct xdp_md ctx = { .data_end = f->linear ?: f->len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = f->len,
		    .data_out = out->b, .data_size_out = sizeof(out->b), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	if (bpf_prog_test_run_opts(prog_fd, &o))
		return -errno;
	*verdict = o.retval;
	out->len = o.data_size_out;
	out->l3 = f->l3;
	out->l4 = f->l4;
	return 0;
}

static const char *where(const struct frame *f, int off)
{
	static char s[32];

	if (off < 6)
		return "eth dst";
	if (off < 12)
		return "eth src";
	if (off < f->l3)
		return "eth type / tags";
	if (off < f->l4)
		snprintf(s, sizeof(s), "l3 header +%d", off - f->l3);
	else
		snprintf(s, sizeof(s), "l4 +%d", off - f->l4);
	return s;
}

/* Compare frames; note the first difference. */
static inline bool same_bytes(const struct frame *want, const struct frame *got)
{
	int n = want->len < got->len ? want->len : got->len;

	if (want->len != got->len)
		note("frame length: expected %d, got %d", want->len, got->len);
	for (int i = 0; i < n; i++)
		if (want->b[i] != got->b[i]) {
			note("first differing byte at offset %d (%s): expected 0x%02x, got 0x%02x", i,
			     where(want, i), want->b[i], got->b[i]);
			return false;
		}
	return want->len == got->len;
}

static struct iphdr *ip4(struct frame *f) { return (struct iphdr *)(f->b + f->l3); }
static struct ipv6hdr *ip6(struct frame *f) { return (struct ipv6hdr *)(f->b + f->l3); }

/* Full (not incremental) IPv4 header checksum. */
static void ip4_fix(struct frame *f)
{
	struct iphdr *ip = ip4(f);

	ip->check = 0;
	ip->check = htons(~fold(sum16(ip, ip->ihl > 5 ? ip->ihl * 4 : 20, 0)));
}

/* Choose the IP ID so that the header checksum comes out as want. */
static inline void ip4_force_csum(struct frame *f, __u16 want)
{
	struct iphdr *ip = ip4(f);

	ip->id = 0;
	ip->check = 0;
	ip->id = htons(fold((__u16)~want + (__u16)~fold(sum16(ip, 20, 0))));
	ip4_fix(f);
	if (ntohs(ip->check) != want)
		die("cannot make a header with checksum 0x%04x", want);
}

static int l4_hdr_len(__u8 proto)
{
	return proto == IPPROTO_TCP ? 20 : 8;
}

/* Transport header, payload and checksum; psum: the pseudo-header sum. */
static void build_l4(struct frame *f, __u8 proto, __u16 sport, int len, __u32 psum)
{
	__u8 *p = f->b + f->l4;
	int ck = 6;

	for (int i = l4_hdr_len(proto); i < len; i++)
		p[i] = i * 7 + 1;
	switch (proto) {
	case IPPROTO_UDP:
		put16(p, sport), put16(p + 2, 7), put16(p + 4, len);
		break;
	case IPPROTO_TCP:
		put16(p, sport), put16(p + 2, 80), p[7] = 1, p[11] = 1;
		p[12] = 5 << 4, p[13] = 0x18 /* PSH|ACK */, put16(p + 14, 65535);
		ck = 16;
		break;
	default: /* ICMP / ICMPv6 echo request */
		p[0] = proto == IPPROTO_ICMP ? 8 : 128, put16(p + 4, 1), put16(p + 6, 1);
		ck = 2;
		if (proto == IPPROTO_ICMP)
			psum = 0;
	}
	put16(p + ck, ~fold(sum16(p, len, psum)) ?: (proto == IPPROTO_UDP ? 0xffff : 0));
}

#endif /* XDPR_TEST_FRAME_H */
