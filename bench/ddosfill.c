// SPDX-License-Identifier: GPL-2.0
/*
 * ddosfill - fill the DDoS meter tables of the router in this network
 * namespace with N idle hosts of 198.18.0.0/15 (RFC 2544's benchmark range,
 * never the bench's traffic), "to" and "from" each (in their slots where
 * free, as the datapath would put them, else in the hash tables), and
 * optionally B bans of other such hosts, so that a bench run measures the meters' per-packet cost
 * with that many hosts tracked (bench only; bench/run's xdpr-ddos rows).
 *
 *   ddosfill HOSTS [BANS]      0 on success; "Error: ..." and 1 on failure
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "libxdpr.h"

/*
 * Host k as the datapath would meter it: in its slot on every CPU when the
 * slot is free (a filler claimed first), else in its hash table.
 */
static int fill(struct xdpr *x, __u8 *taken, int ncpu, const struct xdpr_ddos_key *k, struct xdpr_ddos_ctr *v)
{
	struct xdpr_ddos_slot s = { .key = *k, .ctr = { .last_ns = v[0].last_ns } };
	__u32 i = xdpr_ddos_slot_of(k);

	if (!taken[i]) {
		taken[i] = 1;
		for (int c = 0; c < ncpu; c++) {
			__u32 e = (__u32)c * XDPR_DDOS_SLOTS + i;

			if (bpf_map_update_elem(x->fd[XM_DDOS_SLOTS], &e, &s, BPF_ANY))
				return -1;
		}
		return 0;
	}
	return bpf_map_update_elem(x->fd[k->dir == XDPR_DDOS_TO ? XM_DDOS_TO : XM_DDOS_FROM], k, v, BPF_ANY);
}

int main(int argc, char **argv)
{
	static struct xdpr x;
	long hosts = argc > 1 ? atol(argv[1]) : -1, bans = argc > 2 ? atol(argv[2]) : 0;
	int ncpu = xdpr_ncpus();
	__u8 *taken;
	struct xdpr_ddos_ctr *v;

	if (argc < 2 || argc > 3 || hosts < 0 || hosts > 100000 || bans < 0 || bans > 10000) {
		fprintf(stderr, "Usage: ddosfill HOSTS [BANS]   (HOSTS <= 100000, BANS <= 10000)\n");
		return 2;
	}
	if (ncpu <= 0 || !(v = calloc(ncpu, sizeof(*v))) ||
	    !(taken = calloc(XDPR_DDOS_SLOTS, 1))) {
		fprintf(stderr, "Error: cannot count CPUs or allocate\n");
		return 1;
	}
	if (xdpr_open(&x, XDPR_O_LOCK)) {
		fprintf(stderr, "Error: %s\n", x.err);
		return 1;
	}
	/* seen now: live for XDPR_DDOS_IDLE_NS, so no packet of the bench takes a filler's slot over */
	for (int c = 0; c < ncpu; c++)
		v[c].last_ns = xdpr_ddos_now_ns();
	for (long i = 0; i < hosts + bans; i++) {
		struct xdpr_ddos_key k = { .family = AF_INET };
		__u32 a = htonl(0xc6120000u + (__u32)i + 1); /* 198.18.0.1 ... */

		memcpy(k.addr, &a, 4);
		if (i < hosts) {
			for (int dir = XDPR_DDOS_TO; dir <= XDPR_DDOS_FROM; dir++) {
				k.dir = dir;
				if (fill(&x, taken, ncpu, &k, v)) {
					fprintf(stderr, "Error: cannot add host %ld: %s\n", i, strerror(errno));
					return 1;
				}
			}
		} else {
			struct xdpr_ddos_ban_info b = { .family = AF_INET, .dir = XDPR_DDOS_TO,
							.flags = XDPR_DDOS_F_DROP, .until_ns = XDPR_DDOS_FOREVER };

			memcpy(b.addr, &a, 4);
			if (xdpr_ddos_ban(&x, &b)) {
				fprintf(stderr, "Error: %s\n", x.err);
				return 1;
			}
		}
	}
	xdpr_close(&x);
	return 0;
}
