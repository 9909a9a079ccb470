// SPDX-License-Identifier: GPL-2.0
/*
 * tabbench.bpf.c - one session-table lookup a run, for comparing table
 * layouts at 64 and at a million established sessions (issue 16; driven
 * by tabbench.c under BPF_PROG_TEST_RUN).  Each run looks up the next key
 * of a scrambled walk over the working set, as a NAT session lookup would
 * for a packet of one of that many flows, and writes the entry's last-seen
 * word, as the datapath does when a flow's packets come more than a
 * quarter of a second apart (every packet, at a million flows).
 *
 *   mode 0: the kernel's hash table (BPF_MAP_TYPE_HASH, BPF_F_NO_PREALLOC,
 *           16-byte key, 32-byte value: the NAT session table's shape).
 *   mode 1: open addressing in one array of 64-byte slots (key and value
 *           in one cache line), linear probing; with tb_max_probe, a key
 *           that finds its first tb_max_probe slots taken lives in the
 *           kernel's hash table instead (a bounded probe).
 *   mode 2: two-choice: a key lives in one of two slots of that array (two
 *           hashes), both read at once, else in the kernel's hash table as
 *           an overflow (a bounded probe: two lines, then one table).
 *   mode 3: chunk: linear probing (at most tb_max_probe slots, within a
 *           chunk, then the kernel's hash table) over slots kept in many
 *           small kmalloc'd arrays (tabbench.h, TB_CHUNK_*) reached through
 *           an array of maps: one more (cached) pointer read a lookup, and
 *           the slot in the direct map's huge pages.
 *
 * The next run's key depends on a word this run read from the entry (a
 * zero the CPU cannot know in advance): lookups follow one another as a
 * packet's follows the previous packet's, not overlapped by the CPU as
 * independent loads in a tight loop would be.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "tabbench.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 64); /* set by tabbench.c */
	__type(key, struct tb_key);
	__type(value, struct tb_val);
} tb_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 64); /* set by tabbench.c: a power of two */
	__type(key, __u32);
	__type(value, struct tb_slot);
} tb_open SEC(".maps");

struct tb_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__uint(value_size, TB_CHUNK_VAL); /* no BTF type: libbpf retries the template without BTF */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* set by tabbench.c: the chunks */
	__type(key, __u32);
	__array(values, struct tb_chunk);
} tb_chunks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tb_step SEC(".maps");

const volatile __u32 tb_mode;
const volatile __u32 tb_work_bits; /* keys walked: 2^tb_work_bits */
const volatile __u32 tb_slots_mask;
const volatile __u32 tb_max_probe = TB_PROBES; /* open: slots probed before the overflow table */
const volatile __u32 tb_overlap; /* 1: no dependency between runs (the CPU overlaps the lookups) */
const volatile __u32 tb_nslots; /* chunk: slots in all (TB_CHUNK_SLOTS a chunk) */
__u64 tb_found, tb_missed, tb_probes, tb_unaligned, tb_chunk_addr; /* a chunk's address: which map of kernel memory */

/* 0 from a word of the entry, which the next key then waits for (unless tb_overlap) */
static __always_inline __u64 tb_dep(__u64 w)
{
	if (tb_overlap)
		return 0;
	asm volatile("%0 &= 0" : "+r"(w));
	return w;
}

static __always_inline int tb_key_eq(const struct tb_key *e, const struct tb_key *k)
{
	return e->a == k->a && e->b == k->b && e->ports == k->ports && e->meta == k->meta;
}

/* Found: the next run waits for a word of the entry; its last-seen word written. */
static __always_inline int tb_hit(__u64 *step, struct tb_val *v)
{
	*step += tb_dep(v->w[1]);
	v->w[0] = *step;
	tb_found++;
	return XDP_PASS;
}

/* The kernel's hash table: the whole table (mode 0) or the overflow (modes 1 and 2). */
static __always_inline int tb_in_hash(__u64 *step, const struct tb_key *k)
{
	struct tb_val *v = bpf_map_lookup_elem(&tb_hash, k);

	if (!v) {
		tb_missed++;
		return XDP_DROP;
	}
	return tb_hit(step, v);
}

SEC("xdp")
int tb_lookup(struct xdp_md *ctx)
{
	struct tb_key k = {};
	__u32 zero = 0, i;
	__u64 *step;

	(void)ctx;
	step = bpf_map_lookup_elem(&tb_step, &zero);
	if (!step)
		return XDP_ABORTED;
	i = tb_walk((*step)++, tb_work_bits);
	tb_key_of(&k, i);
	if (tb_mode == 0)
		return tb_in_hash(step, &k);
	i = tb_hash_of(&k);
	if (tb_mode == 3) {
		__u32 g = tb_chunk_slot(i, tb_nslots), c = g / TB_CHUNK_SLOTS, j = g % TB_CHUNK_SLOTS;
		void *inner = bpf_map_lookup_elem(&tb_chunks, &c);
		__u8 *base;

		if (!inner)
			return XDP_ABORTED;
		base = bpf_map_lookup_elem(inner, &zero);
		if (!base)
			return XDP_ABORTED;
		if (((unsigned long)base + TB_CHUNK_OFF) & 63)
			tb_unaligned++;
		tb_chunk_addr = (unsigned long)base;
		for (int p = 0; p < TB_PROBES && p < tb_max_probe; p++) {
			__u32 o = j + p < TB_CHUNK_SLOTS ? j + p : j + p - TB_CHUNK_SLOTS;
			struct tb_slot *e;

			if (o >= TB_CHUNK_SLOTS)
				return XDP_ABORTED;
			e = (struct tb_slot *)(base + TB_CHUNK_OFF + o * 64);
			tb_probes++;
			if (tb_key_eq(&e->k, &k))
				return tb_hit(step, &e->v);
			if (!e->k.meta) {
				tb_missed++;
				return XDP_DROP;
			}
		}
		return tb_in_hash(step, &k);
	}
	if (tb_mode == 2) {
		__u32 s1 = i & tb_slots_mask, s2 = tb_hash2(i) & tb_slots_mask;
		struct tb_slot *e1 = bpf_map_lookup_elem(&tb_open, &s1);
		struct tb_slot *e2 = bpf_map_lookup_elem(&tb_open, &s2);

		if (!e1 || !e2)
			return XDP_ABORTED;
		/* both lines requested before either is compared */
		(void)*(volatile __u32 *)&e1->k.a;
		(void)*(volatile __u32 *)&e2->k.a;
		if (tb_key_eq(&e1->k, &k))
			return tb_hit(step, &e1->v);
		if (tb_key_eq(&e2->k, &k))
			return tb_hit(step, &e2->v);
		return tb_in_hash(step, &k);
	}
	for (int p = 0; p < TB_PROBES && p < tb_max_probe; p++) {
		__u32 s = (i + p) & tb_slots_mask;
		struct tb_slot *e = bpf_map_lookup_elem(&tb_open, &s);

		if (!e)
			break;
		tb_probes++;
		if (tb_key_eq(&e->k, &k))
			return tb_hit(step, &e->v);
		if (!e->k.meta) {
			tb_missed++; /* an empty slot ends the probe sequence */
			return XDP_DROP;
		}
	}
	if (tb_max_probe < TB_PROBES)
		return tb_in_hash(step, &k);
	tb_missed++;
	return XDP_DROP;
}
