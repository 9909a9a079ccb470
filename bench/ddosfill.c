// SPDX-License-Identifier: GPL-2.0
/*
 * ddosfill - fill the DDoS meter tables of the router in this network
 * namespace with N idle hosts of 198.18.0.0/15 (RFC 2544's benchmark range,
 * never the bench's traffic), "to" and "from" each, and optionally B bans of
 * other such hosts, so that a bench run measures the meters' per-packet cost
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

int main(int argc, char **argv)
{
	static struct xdpr x;
	long hosts = argc > 1 ? atol(argv[1]) : -1, bans = argc > 2 ? atol(argv[2]) : 0;
	int ncpu = xdpr_ncpus();
	struct xdpr_ddos_ctr *v;

	if (argc < 2 || argc > 3 || hosts < 0 || hosts > 100000 || bans < 0 || bans > 10000) {
		fprintf(stderr, "Usage: ddosfill HOSTS [BANS]   (HOSTS <= 100000, BANS <= 10000)\n");
		return 2;
	}
	if (ncpu <= 0 || !(v = calloc(ncpu, sizeof(*v)))) {
		fprintf(stderr, "Error: cannot count CPUs\n");
		return 1;
	}
	if (xdpr_open(&x, XDPR_O_LOCK)) {
		fprintf(stderr, "Error: %s\n", x.err);
		return 1;
	}
	for (long i = 0; i < hosts + bans; i++) {
		struct xdpr_ddos_key k = { .family = AF_INET };
		__u32 a = htonl(0xc6120000u + (__u32)i + 1); /* 198.18.0.1 ... */

		memcpy(k.addr, &a, 4);
		if (i < hosts) {
			for (int dir = XDPR_DDOS_TO; dir <= XDPR_DDOS_FROM; dir++) {
				k.dir = dir;
				if (bpf_map_update_elem(x.fd[dir == XDPR_DDOS_TO ? XM_DDOS_TO : XM_DDOS_FROM], &k, v,
							BPF_ANY)) {
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
