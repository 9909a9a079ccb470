/* SPDX-License-Identifier: GPL-2.0 */
/*
 * harness.h - what the BPF_PROG_TEST_RUN tiers share: TAP with
 * diagnostics, shell and sysctl helpers, MAC parsing, checksum sums.
 * Included by exactly one .c file per test program.
 */
#ifndef XDPR_TEST_HARNESS_H
#define XDPR_TEST_HARNESS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <errno.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdpr_shared.h"
#include "libxdpr.h"

/*
 * A program loaded straight from its skeleton has empty NAT outer maps:
 * give slot 0 tables of the default size (slot 1 64-entry ones), as
 * xdpr_create_maps does for a router.  The fds of the slot-0 tables go to
 * ct, bind, eim, hosts, ring and flows (the filter's flow states).
 */
/*
 * The live session table (slot 0's slots and overflow) of the program
 * nat_tabs_init gave tables to, when it was asked for ct; the ct_* helpers
 * below read and write it as a user would see it.
 */
static struct xdpr_ct_tab ct_tab;

/* A session slot array for that many sessions, its header written (as loader/core.c makes it). */
static inline int cta_create(__u32 sessions)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__u32 slots = xdpr_ct_slots(sessions);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xdpr_nat_tab", sizeof(__u32), sizeof(struct xdpr_ct_slot),
				XDPR_CT_FIRST + slots, &o);

	if (fd < 0 || xdpr_ct_init(fd, slots, 2 * sessions)) {
		printf("Bail out! cannot make a session slot array: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

/* Point ct_tab at these tables (the slot array's fd stays open for it). */
static inline void ct_tab_open(int cta_fd, int ct_fd)
{
	int err;

	xdpr_ct_close(&ct_tab);
	err = xdpr_ct_open(cta_fd, ct_fd, &ct_tab);
	if (err) {
		printf("Bail out! cannot map the session table: %s\n", strerror(-err));
		exit(1);
	}
}

/* Every session half: n of them in malloc'd *keys (values too, if vals). */
static inline size_t ct_dump(struct xdpr_ct_key **keys, struct xdpr_ct_val **vals)
{
	size_t n = 0;
	int err = xdpr_ct_dump(&ct_tab, keys, vals, &n);

	if (err) {
		printf("Bail out! cannot read the session table: %s\n", strerror(-err));
		exit(1);
	}
	return n;
}

/* Session halves held; -1 when the table's own count says otherwise. */
static inline int ct_halves(void)
{
	struct xdpr_ct_key *k;
	size_t n = ct_dump(&k, NULL);

	free(k);
	return xdpr_ct_count(&ct_tab) == n ? (int)n : -1;
}

/* Half k: 0 and *v, or -ENOENT. */
static inline int ct_read(const struct xdpr_ct_key *k, struct xdpr_ct_val *v)
{
	return xdpr_ct_get(&ct_tab, k, v);
}

/* Replace half k's value: 0, or -ENOENT. */
static inline int ct_set(const struct xdpr_ct_key *k, const struct xdpr_ct_val *v)
{
	return xdpr_ct_put(&ct_tab, k, v, BPF_EXIST);
}

static inline void ct_clear(void)
{
	int err = xdpr_ct_clear(&ct_tab);

	if (err) {
		printf("Bail out! cannot empty the session table: %s\n", strerror(-err));
		exit(1);
	}
}

#define XDPR_NAT_TINY_SESS 32 /* an idle slot's sessions (loader/core.h: XDPR_NAT_TINY halves) */

static inline void nat_tabs_init(struct bpf_object *obj, int *ct, int *bind, int *eim, int *hosts, int *ring,
				 int *flows)
{
	int dummy[6], *fd[6] = { ct ? ct : &dummy[0], bind ? bind : &dummy[1], eim ? eim : &dummy[2],
				 hosts ? hosts : &dummy[3], ring ? ring : &dummy[4], flows ? flows : &dummy[5] };

	/* libbpf drops the inner definitions once the outer maps exist: the shapes of bpf/maps.h */
	static const struct { enum xdpr_map outer; enum bpf_map_type type; __u32 key, value, max, flags; } t[6] = {
		{ XM_CT, BPF_MAP_TYPE_HASH, sizeof(struct xdpr_ct_key), sizeof(struct xdpr_ct_val),
		  2 * XDPR_NAT_DEF_SESS, BPF_F_NO_PREALLOC },
		{ XM_BIND, BPF_MAP_TYPE_HASH, sizeof(struct xdpr_bind_key), sizeof(struct xdpr_bind),
		  XDPR_NAT_DEF_SESS, BPF_F_NO_PREALLOC },
		{ XM_EIM, BPF_MAP_TYPE_HASH, sizeof(struct xdpr_eim_key), sizeof(struct xdpr_eim_val),
		  XDPR_NAT_DEF_SESS, BPF_F_NO_PREALLOC },
		{ XM_HOSTS, BPF_MAP_TYPE_HASH, sizeof(__be32), sizeof(struct xdpr_host),
		  XDPR_NAT_DEF_SESS, BPF_F_NO_PREALLOC },
		{ XM_RING, BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(struct xdpr_ct_key),
		  XDPR_NAT_DEF_SESS, BPF_F_INNER_MAP },
		{ XM_FLOWS, BPF_MAP_TYPE_LRU_HASH, sizeof(struct xdpr_flow_key), sizeof(struct xdpr_flt_flow),
		  XDPR_FLT_FLOWS, BPF_F_NO_COMMON_LRU },
	};

	for (int i = 0; i < 6; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, xdpr_map_name(t[i].outer));

		if (!m) {
			printf("Bail out! no map %s\n", xdpr_map_name(t[i].outer));
			exit(1);
		}
		for (__u32 slot = 0; slot < 2; slot++) {
			LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = t[i].flags);
			int ifd = bpf_map_create(t[i].type, "xdpr_nat_tab", t[i].key, t[i].value,
						 slot ? 64 : t[i].max, &o);

			if (ifd < 0 || bpf_map_update_elem(bpf_map__fd(m), &slot, &ifd, BPF_ANY)) {
				printf("Bail out! cannot give %s[%u] a table: %s\n", xdpr_map_name(t[i].outer), slot,
				       strerror(errno));
				exit(1);
			}
			if (slot)
				close(ifd);
			else
				*fd[i] = ifd;
		}
	}
	{
		struct bpf_map *m = bpf_object__find_map_by_name(obj, xdpr_map_name(XM_CTA));

		for (__u32 slot = 0; m && slot < 2; slot++) {
			int ifd = cta_create(slot ? XDPR_NAT_TINY_SESS : XDPR_NAT_DEF_SESS);

			if (bpf_map_update_elem(bpf_map__fd(m), &slot, &ifd, BPF_ANY)) {
				printf("Bail out! cannot give %s[%u] a table: %s\n", xdpr_map_name(XM_CTA), slot,
				       strerror(errno));
				exit(1);
			}
			if (slot || !ct)
				close(ifd);
			else
				ct_tab_open(ifd, *ct);
		}
		if (!m) {
			printf("Bail out! no map %s\n", xdpr_map_name(XM_CTA));
			exit(1);
		}
	}
}

static char diag[16384];
static size_t diag_len;
static const char *cur_step; /* prefix of the notes of the step being checked */
static int tap_n, tap_failed;

static void die(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

/*
 * A test that writes xdpr_ifaces straight does what the loader's
 * xdpr_iface_put and xdpr_iface_del do after it: moves xdpr_if_gen on, so
 * the program's per-CPU copies of the entries are made again (xdpr_shared.h,
 * struct xdpr_if_cached).  gen_fd: the skeleton's xdpr_if_gen.
 */
static inline void ifaces_changed(int gen_fd)
{
	__u32 zero = 0, gen;

	if (bpf_map_lookup_elem(gen_fd, &zero, &gen))
		die("cannot read xdpr_if_gen: %s", strerror(errno));
	gen++;
	if (bpf_map_update_elem(gen_fd, &zero, &gen, BPF_ANY))
		die("cannot write xdpr_if_gen: %s", strerror(errno));
}

/* One diagnostic line, printed under the next TAP line. */
static void note(const char *fmt, ...)
{
	va_list ap;

	if (diag_len >= sizeof(diag) - 1)
		return;
	diag_len += snprintf(diag + diag_len, sizeof(diag) - diag_len, "# %s%s", cur_step ?: "",
			     cur_step ? ": " : "");
	if (diag_len >= sizeof(diag) - 1)
		return;
	va_start(ap, fmt);
	diag_len += vsnprintf(diag + diag_len, sizeof(diag) - diag_len, fmt, ap);
	va_end(ap);
	if (diag_len < sizeof(diag) - 1)
		diag[diag_len++] = '\n', diag[diag_len] = 0;
}

/* TAP line for one case (skip: the reason it was skipped, or NULL), then its notes. */
static void tap(bool ok, const char *name, const char *skip)
{
	printf("%s %d - %s%s%s\n", ok ? "ok" : "not ok", ++tap_n, name, skip ? " # SKIP " : "",
	       skip ? skip : "");
	if (diag_len >= sizeof(diag))
		diag_len = sizeof(diag) - 1;
	diag[diag_len] = 0;
	fputs(diag, stdout);
	diag_len = 0;
	diag[0] = 0;
	tap_failed += !ok;
	fflush(stdout);
}

static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0 ? 0 : -1;
}

static int sysctl_set(const char *key, const char *val)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/%s", key);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(val, f);
	return fclose(f) ? -1 : 0;
}

static void mac_parse(const char *s, __u8 mac[6])
{
	if (sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3],
		   &mac[4], &mac[5]) != 6)
		die("bad MAC \"%s\" in the test", s);
}

static void dev_mac(const char *name, __u8 mac[6])
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr))
		die("cannot read the MAC of %s: %s", name, strerror(errno));
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
}

static void put16(__u8 *p, __u16 v) { p[0] = v >> 8; p[1] = v; }

static __u16 get16(const __u8 *p) { return p[0] << 8 | p[1]; }

static __u32 sum16(const void *data, size_t n, __u32 sum)
{
	const __u8 *p = data;

	for (; n > 1; n -= 2, p += 2)
		sum += get16(p);
	if (n)
		sum += p[0] << 8;
	return sum;
}

static __u16 fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* One interface's counters in xdpr_stats (fd), summed over ncpus CPUs. */
static void read_slot_sum(int fd, int ncpus, __u32 slot, struct xdpr_ctr sum[XDPR_REASON_MAX])
{
	struct xdpr_slot *pc = calloc(ncpus, sizeof(*pc));

	if (!pc || bpf_map_lookup_elem(fd, &slot, pc))
		die("cannot read xdpr_stats slot %u: %s", slot, strerror(errno));
	memset(sum, 0, sizeof(struct xdpr_ctr) * XDPR_REASON_MAX);
	for (int c = 0; c < ncpus; c++)
		for (int r = 0; r < XDPR_REASON_MAX; r++) {
			sum[r].packets += pc[c].reason[r].packets;
			sum[r].bytes += pc[c].reason[r].bytes;
		}
	free(pc);
}

#endif /* XDPR_TEST_HARNESS_H */
