// SPDX-License-Identifier: GPL-2.0
/*
 * test_fuzz.c - the fuzzer's regression table (selftests/fuzz/): the seed
 * corpus and every saved failure (selftests/fuzz/regress/, raw inputs or
 * .hex text), each replayed through the real xdpr_main with the fuzzer's
 * invariants (oracle.h), one TAP line each.  A failure listed in
 * selftests/fuzz/xfail.txt is a known datapath defect waiting for its fix:
 * reported as TODO (prove does not fail on it, and says when it passes).
 *
 * The oracle is tested too: with the program's set-up broken on purpose
 * (a drop rule gone, a NAT rule gone, a VLAN's egress-qos-map changed) the
 * seeds that exercise them must
 * break the invariant that watches them.  And the seeds must reach every
 * verdict and many reasons, so a corpus that rots into one reason fails.
 * TAP on stdout; exit 1 if any case failed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <ctype.h>
#pragma GCC diagnostic ignored "-Wunused-function" /* harness.h: not every helper is used */
#include "harness.h"
#include "../fuzz/oracle.h"

#define REGRESS "selftests/fuzz/regress"
#define XFAIL   "selftests/fuzz/xfail.txt"

static struct fz_seed seeds[FZ_SEEDS_MAX];
static int nseeds;

/* A saved input: .hex files are hex digits (whitespace and # comments ignored), others raw. */
static size_t load(const char *path, __u8 *b, size_t max)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	int c, hi = -1;
	bool hex = strlen(path) > 4 && !strcmp(path + strlen(path) - 4, ".hex");

	if (!f)
		die("cannot read %s: %s", path, strerror(errno));
	while (n < max && (c = fgetc(f)) != EOF) {
		if (!hex) {
			b[n++] = c;
			continue;
		}
		if (c == '#') {
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (!isxdigit(c))
			continue;
		c = isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
		if (hi < 0) {
			hi = c;
		} else {
			b[n++] = hi << 4 | c;
			hi = -1;
		}
	}
	fclose(f);
	if (n == 0)
		die("%s is empty: a saved failure must hold its input", path);
	return n;
}

static bool xfailed(const char *name)
{
	char line[512];
	FILE *f = fopen(XFAIL, "r");
	bool found = false;

	if (!f)
		die("cannot read %s: %s", XFAIL, strerror(errno));
	while (!found && fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "#\r\n");

		while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
			n--;
		line[n] = 0;
		found = n && !strcmp(line, name);
	}
	fclose(f);
	return found;
}

/* One TAP line; a known defect (xfail) is a TODO: prove neither fails on it nor hides it. */
static void todo(const char *bad, const char *name, bool xf)
{
	if (!xf) {
		tap(!bad, name, NULL);
		return;
	}
	printf("%s %d - %s # TODO known defect (selftests/fuzz/xfail.txt), waiting for its fix\n",
	       bad ? "not ok" : "ok", ++tap_n, name);
	fputs(diag, stdout);
	diag_len = 0;
	diag[0] = 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* The last frame's reason and verdict of a seed (run again: fz_input keeps only the failure). */
static int last_reason(const struct fz_seed *s)
{
	struct fz_rec r[FZ_RECORDS];
	int n = fz_split(s->b, s->len, r), reason = -1;
	static __u8 buf[FZ_FRAME_MAX];

	fz_fail = NULL;
	fz_reset();
	for (int i = 0; i < n; i++) {
		memcpy(buf, r[i].b, r[i].len);
		reason = fz_frame(i, r[i].dev >= FZ_NIN ? FZ_NIN : r[i].dev, buf, r[i].len);
	}
	return reason;
}

static const struct fz_seed *seed(const char *name)
{
	for (int i = 0; i < nseeds; i++)
		if (!strcmp(seeds[i].name, name))
			return &seeds[i];
	die("no seed \"%s\"", name);
	return NULL;
}

/* With the filter's drop rules gone, the oracle must say a dropped frame left. */
static bool sabotage_filter(void)
{
	struct xdpr_flt_hdr none = { .policy = XDPR_FLT_ACCEPT };
	struct xdpr_flt_hdr keep;
	__u32 slot = 0;
	int fd = bpf_map__fd(fz_skel->maps.xdpr_flt_hdr);
	const char *bad;

	if (bpf_map_lookup_elem(fd, &slot, &keep) || bpf_map_update_elem(fd, &slot, &none, BPF_ANY))
		die("cannot empty the filter: %s", strerror(errno));
	bad = fz_input(seed("filter drop src")->b, seed("filter drop src")->len);
	if (bpf_map_update_elem(fd, &slot, &keep, BPF_ANY))
		die("cannot put the filter back: %s", strerror(errno));
	note("with no rules: %s", bad ? fz_why : "no invariant broken");
	return bad && !strcmp(bad, "filter");
}

/* With r1's NAT rule unbound, the oracle must see the inside source leave. */
static bool sabotage_nat(void)
{
	int fd = bpf_map__fd(fz_skel->maps.xdpr_ifaces);
	struct xdpr_iface keep, none;
	__u32 ifi = fz_devs[1].ifindex;
	const char *bad;

	if (bpf_map_lookup_elem(fd, &ifi, &keep))
		die("cannot read xdpr_ifaces[r1]");
	none = keep;
	none.nrules = 0;
	memset(none.rules, 0, sizeof(none.rules));
	if (bpf_map_update_elem(fd, &ifi, &none, BPF_EXIST))
		die("cannot write xdpr_ifaces[r1]");
	ifaces_changed(bpf_map__fd(fz_skel->maps.xdpr_if_gen));
	bad = fz_input(seed("udp4 masq + reply")->b, seed("udp4 masq + reply")->len);
	if (bpf_map_update_elem(fd, &ifi, &keep, BPF_EXIST))
		die("cannot put xdpr_ifaces[r1] back");
	ifaces_changed(bpf_map__fd(fz_skel->maps.xdpr_if_gen));
	note("with r1's rule unbound: %s", bad ? fz_why : "no invariant broken");
	return bad && !strcmp(bad, "nat leak");
}

/* With v100's egress-qos-map changed behind the oracle's back, it must see the wrong PCP. */
static bool sabotage_vlan(void)
{
	int fd = bpf_map__fd(fz_skel->maps.xdpr_ifaces);
	struct xdpr_iface keep, bad;
	__u32 ifi = fz_devs[FZ_V100].ifindex;
	const char *why;

	if (bpf_map_lookup_elem(fd, &ifi, &keep))
		die("cannot read xdpr_ifaces[v100]");
	bad = keep;
	for (size_t i = 0; i < sizeof(bad.pcp); i++)
		bad.pcp[i] = (keep.pcp[i] + 1) & 7;
	if (bpf_map_update_elem(fd, &ifi, &bad, BPF_EXIST))
		die("cannot write xdpr_ifaces[v100]");
	ifaces_changed(bpf_map__fd(fz_skel->maps.xdpr_if_gen));
	why = fz_input(seed("vlan icmp4 echo r3 -> v100 (push)")->b, seed("vlan icmp4 echo r3 -> v100 (push)")->len);
	if (bpf_map_update_elem(fd, &ifi, &keep, BPF_EXIST))
		die("cannot put xdpr_ifaces[v100] back");
	ifaces_changed(bpf_map__fd(fz_skel->maps.xdpr_if_gen));
	note("with v100's egress-qos-map shifted: %s", why ? fz_why : "no invariant broken");
	return why && !strcmp(why, "vlan");
}

/* test_fuzz FILE...: each input's frames, reasons and the frames the program left, for a write-up. */
static int show(int argc, char **argv)
{
	static __u8 buf[FZ_RECORDS * (FZ_FRAME_MAX + 3)], out[4096];
	int bad = 0;

	fz_setup_all();
	for (int a = 1; a < argc; a++) {
		size_t len = load(argv[a], buf, sizeof(buf));
		struct fz_rec r[FZ_RECORDS];
		int n = fz_split(buf, len, r);
		const char *why = fz_input(buf, len);

		printf("%s: %s%s%s\n", argv[a], why ?: "every invariant holds", why ? ": " : "", why ? fz_why : "");
		bad |= why != NULL;
		fz_reset();
		for (int i = 0; i < n; i++) {
			struct xdp_md ctx = { .data_end = r[i].len,
					      .ingress_ifindex = r[i].dev < FZ_NIN ? fz_devs[r[i].dev].ifindex : 1 };
			LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = r[i].b, .data_size_in = r[i].len, .data_out = out,
				    .data_size_out = sizeof(out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);

			printf("  frame %d on %s, %d bytes:\n    in  ", i, r[i].dev < FZ_NIN ? fz_devs[r[i].dev].name : "lo",
			       r[i].len);
			for (int k = 0; k < r[i].len; k++)
				printf("%02x", r[i].b[k]);
			if (r[i].len < FZ_ETH_MIN || bpf_prog_test_run_opts(fz_prog, &o)) {
				printf("\n    not run\n");
				continue;
			}
			printf("\n    %s, out ", fz_vname(o.retval));
			for (__u32 k = 0; k < o.data_size_out; k++)
				printf("%02x", out[k]);
			printf("\n");
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	struct dirent **ents = NULL;
	int nents, verdicts = 0, nreasons = 0;
	static __u8 buf[FZ_RECORDS * (FZ_FRAME_MAX + 3)];
	bool reached[XDPR_REASON_MAX] = {};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 0;
	}
	if (argc > 1)
		return show(argc, argv);
	nents = scandir(REGRESS, &ents, NULL, by_name);
	if (nents < 0)
		die("cannot list %s: %s", REGRESS, strerror(errno));
	fz_setup_all();
	nseeds = fz_seeds(seeds, FZ_SEEDS_MAX);
	{
		int nreg = 0;

		for (int i = 0; i < nents; i++)
			nreg += ents[i]->d_name[0] != '.' && strcmp(ents[i]->d_name, "README");
		printf("1..%d\n", nseeds + nreg + 4);
	}
	for (int i = 0; i < nseeds; i++) {
		const char *bad = fz_input(seeds[i].b, seeds[i].len);
		char name[128];
		int r;

		if (bad)
			note("%s: %s", bad, fz_why);
		snprintf(name, sizeof(name), "seed %s", seeds[i].name);
		r = last_reason(&seeds[i]);
		if (r >= 0 && !reached[r]) {
			reached[r] = true;
			nreasons++;
			verdicts |= 1 << xdpr_reason_verdict(r);
		}
		note("last frame: reason %d (%s)", r, r >= 0 ? fz_vname(xdpr_reason_verdict(r)) : "not run");
		todo(bad, name, xfailed(name));
	}
	note("%d reasons reached, verdicts mask 0x%x", nreasons, verdicts);
	tap(verdicts == (1 << 1 | 1 << 2 | 1 << 3 | 1 << 4) && nreasons >= 20,
	    "the seeds reach drop, pass, tx and redirect, and at least 20 reasons", NULL);
	tap(sabotage_filter(), "the oracle catches a frame the filter should have dropped", NULL);
	tap(sabotage_nat(), "the oracle catches an inside source leaving a NAT interface", NULL);
	tap(sabotage_vlan(), "the oracle catches a frame leaving a VLAN with a PCP the kernel would not give it", NULL);

	for (int i = 0; i < nents; i++) {
		const char *n = ents[i]->d_name;
		char path[512], name[600];
		const char *bad;
		bool xf;
		size_t len;

		if (n[0] == '.' || !strcmp(n, "README"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", REGRESS, n);
		len = load(path, buf, sizeof(buf));
		bad = fz_input(buf, len);
		xf = xfailed(n);
		if (bad)
			note("%s: %s", bad, fz_why);
		snprintf(name, sizeof(name), "regress %s", n);
		todo(bad, name, xf);
	}
	for (int i = 0; i < nents; i++)
		free(ents[i]);
	free(ents);
	xdpr_bpf__destroy(fz_skel);
	return tap_failed ? 1 : 0;
}
