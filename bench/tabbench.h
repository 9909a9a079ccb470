/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tabbench.h - what tabbench.bpf.c and tabbench.c share: a session key of
 * the NAT table's size (16 bytes), its 32-byte value, the 64-byte slot of
 * the open-addressing layout, and the walk and hash both sides compute.
 */
#ifndef TABBENCH_H
#define TABBENCH_H

#include <linux/types.h>

struct tb_key {
	__u32 a;
	__u32 b;
	__u32 ports;
	__u32 meta;   /* protocol and direction; 0 marks an empty slot */
};

struct tb_val {
	__u64 w[4];   /* w[0]: last seen */
};

struct tb_slot {
	struct tb_key k;
	struct tb_val v;
	__u64 pad[2];
};

#define TB_PROBES 128

/*
 * chunk: the slots in many small arrays, each one value of an ARRAY map of
 * one entry, few enough bytes that the kernel kmallocs the map (up to 32
 * KiB with its 312-byte header): memory of the direct map, which the
 * kernel maps with huge pages, where one big array is vmalloc'd in 4 KiB
 * pages.  The value starts 56 bytes into a cache line (the header's
 * size), so slot j is at byte TB_CHUNK_OFF + 64 j of it: line-aligned.
 */
#define TB_CHUNK_SLOTS 507
#define TB_CHUNK_OFF   8
#define TB_CHUNK_VAL   (TB_CHUNK_OFF + 64 * TB_CHUNK_SLOTS)

/* The global slot of hash h among n (multiply-shift: n need not be a power of two). */
static inline __u32 tb_chunk_slot(__u32 h, __u32 n)
{
	return (__u32)(((__u64)h * n) >> 32);
}

/* The key of session i: 2^14 ports of one inside address, then the next address. */
static inline void tb_key_of(struct tb_key *k, __u32 i)
{
	k->a = 0x0a000000u + (i >> 14);
	k->b = 0xc0000201u;
	k->ports = (i & 0x3fff) << 16 | 443;
	k->meta = 17 | 1u << 8;
}

/* murmur3's finaliser: every input bit reaches every output bit */
static inline __u32 tb_mix(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static inline __u32 tb_hash_of(const struct tb_key *k)
{
	return tb_mix(k->a * 0x9e3779b1u ^ tb_mix(k->ports ^ k->b * 0x85ebca77u ^ k->meta));
}

/* The second candidate slot of two-choice hashing, from the first hash. */
static inline __u32 tb_hash2(__u32 h)
{
	return tb_mix(h + 0x9e3779b9u);
}

/*
 * The step-th key of a walk over [0, 2^bits) that jumps about: the top
 * bits of step times 2^64 over the golden ratio, so that consecutive steps
 * land far apart and every key comes back about 2^bits steps later
 * (bits >= 1).
 */
static inline __u32 tb_walk(__u64 step, __u32 bits)
{
	return (__u32)(step * 0x9e3779b97f4a7c15ull >> (64 - bits));
}

#endif
