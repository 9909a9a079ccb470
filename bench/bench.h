/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bench.h - structs shared by the bench's BPF programs (gen, sink, min_fwd)
 * and build/bench/xbench.  uapi types only.
 */
#ifndef XDPR_BENCH_H
#define XDPR_BENCH_H

#include <linux/types.h>

/* Fold a 32-bit one's complement sum to 16 bits (RFC 1071). */
static inline __u16 xb_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

#define GEN_MAX_SIZES 12      /* IMIX pattern length */
#define GEN_PORT_SPAN 50000   /* source ports 10000..59999 (see gen.bpf.c for what steps next) */
#define GEN_PORT_BASE 10000

/*
 * Generator settings, written by xbench before load.  The frame is built
 * from scratch on every run: Ethernet, IP and L4 headers are copied from the
 * templates, then ports, addresses, lengths and checksums are filled in.
 * The payload is never written: it stays as the zero-filled template page.
 */
struct gen_cfg {
	__u8  eth[14];        /* dst MAC, src MAC, ethertype */
	__u8  ipv6;           /* 0: IPv4, 1: IPv6 */
	__u8  proto;          /* IPPROTO_UDP or IPPROTO_TCP */
	__u8  ip[40];         /* IPv4 (20 bytes) or IPv6 (40 bytes) header, lengths/csum zero */
	__u8  l4[20];         /* UDP (8) or TCP (20) header, ports/lengths/csum zero */
	__u16 dport;          /* first destination port, network order */
	__u8  flags;          /* enum gen_flags */
	__u8  pad;
	__u32 flows;          /* > 0: cycle over this many flows; 0: new flow every frame */
	__u32 addr_mask;      /* source-address steps (after 4096 dports) wrap at this mask */
	__u32 dsts;           /* > 0: IPv4 destination steps through this many /24s, frame by frame */
	__u32 nsizes;         /* frame sizes, cycled: 1 (fixed) or GEN_MAX_SIZES (IMIX) */
	__u32 sizes[16];      /* first nsizes used; 16 for a cheap index mask */
	__u64 gap_ns;         /* > 0: a frame every gap_ns at most (rate), paced by the program */
};

enum gen_flags {
	/* flows step the source address after the source port, never the
	   destination port: one destination port (the filter bench's rules) */
	GEN_F_ONE_DPORT = 1 << 0,
	/* the reverse direction (sink to generator): the flow's ports and
	   address step go to the destination side, the fixed port to the source */
	GEN_F_REVERSE   = 1 << 1,
};

/* Per-CPU generator counters (one entry). */
struct gen_ctr {
	__u64 seq;            /* runs of the program on this CPU */
	__u64 packets;        /* frames returned with XDP_TX */
	__u64 bytes;
	__u64 due;            /* paced: when this CPU's next frame may go (ktime ns) */
};

/*
 * Sink settings.  A frame "of the bench" is IPv4/IPv6 with the configured
 * protocol and destination address; anything else is counted as other.
 * Every sample_mask+1-th frame of the bench is checked in full.
 */
struct sink_cfg {
	__u8  dmac[6];        /* expected destination MAC (s0) */
	__u8  smac[6];        /* expected source MAC (r1) */
	__u8  ipv6;
	__u8  proto;
	__u8  ttl;            /* expected TTL / hop limit on arrival */
	__u8  src_plen;       /* expected source prefix length */
	__u8  src[16];        /* expected source prefix (IPv4 in the first 4 bytes) */
	__u8  dst[16];        /* bench destination (IPv4 in the first 4 bytes) */
	__u32 sample_mask;    /* 2^k - 1 */
	__u32 dst_mask;       /* IPv4: frames to dst/this mask are the bench's (network order) */
};

enum sink_bad {
	SINK_BAD_LEN,         /* truncated, or IP length does not match the frame */
	SINK_BAD_MAC,
	SINK_BAD_TTL,
	SINK_BAD_IP_CSUM,
	SINK_BAD_L4_CSUM,
	SINK_BAD_SRC,
	SINK_BAD_MAX
};

struct sink_ctr {
	__u64 packets;        /* frames of the bench (good or wrong) */
	__u64 bytes;
	__u64 other;          /* frames that are not the bench's traffic */
	__u64 checked;        /* sampled frames validated in full */
	__u64 wrong;          /* sampled frames with at least one fault */
	__u64 bad[SINK_BAD_MAX];
};

/* A wrong frame as the sink saw it (its first bytes). */
struct sink_frame {
	__u32 len;
	__u32 bad;            /* mask of enum sink_bad */
	__u8  data[96];
};

_Static_assert(sizeof(struct gen_cfg) == 168, "gen_cfg layout");
_Static_assert(sizeof(struct sink_cfg) == 56, "sink_cfg layout");

#endif /* XDPR_BENCH_H */
