/* SPDX-License-Identifier: GPL-2.0 */
/* csum.h - Internet checksum helpers (RFC 1071, incremental per RFC 1624). */
#ifndef XDPR_CSUM_H
#define XDPR_CSUM_H

#include <linux/types.h>

static __always_inline __u16 csum_fold32(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/*
 * RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m').  Values are in network order;
 * the one's complement sum is byte-order independent, so no swapping.
 * The one helper every header rewrite goes through.
 */
static __always_inline void csum_replace16(__u16 *check, __u16 old, __u16 new)
{
	__u32 sum = (__u16)~*check;

	sum += (__u16)~old;
	sum += new;
	*check = ~csum_fold32(sum);
}

/* Sum of an IPv4 header without options; 0 (after fold and invert) when valid. */
static __always_inline __u16 ip4_hdr_csum20(const void *hdr)
{
	const __u16 *w = hdr;
	__u32 sum = 0;

#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	return (__u16)~csum_fold32(sum);
}

#endif /* XDPR_CSUM_H */
