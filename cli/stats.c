// SPDX-License-Identifier: GPL-2.0
/* stats.c - xdpr stats: per interface, per reason, per CPU; live rates. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "out.h"
#include "prom.h"

static void stats_usage(void)
{
	fprintf(stderr, "Usage: xdpr [-j] [-s [-s]] stats [show] [dev DEV] [interval SECS [count N]]\n"
			"       xdpr [-s -s] stats -o prometheus   (every counter as Prometheus text; -s -s: per CPU too)\n");
}

#define USAGE(...) (snprintf(err, len, __VA_ARGS__), EXIT_USAGE)

int parse_stats(int argc, char **argv, struct stats_args *a, char *err, size_t len)
{
	unsigned long v;

	memset(a, 0, sizeof(*a));
	if (argc > 0 && (!strcmp(argv[0], "show") || !strcmp(argv[0], "list")))
		argc--, argv++;
	for (int i = 0; i < argc; i++) {
		const char *kw = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(kw, "-o")) {
			if (!val || (strcmp(val, "prometheus") && strcmp(val, "text")))
				return USAGE("\"-o\" needs prometheus or text");
			if (a->prom_given)
				return USAGE("\"-o\" is given twice");
			a->prom_given = true;
			a->prom = !strcmp(val, "prometheus");
		} else if (!strcmp(kw, "dev")) {
			if (a->dev)
				return USAGE("\"dev\" is given twice");
			if (!val || !*val || strlen(val) >= IF_NAMESIZE)
				return USAGE("\"dev\" needs a device name");
			a->dev = val;
		} else if (!strcmp(kw, "interval")) {
			if (a->interval)
				return USAGE("\"interval\" is given twice");
			if (parse_uint(val, 1, 3600, &v))
				return USAGE("invalid interval \"%s\" (seconds, 1 to 3600)", val ? val : "");
			a->interval = v;
		} else if (!strcmp(kw, "count")) {
			if (a->count)
				return USAGE("\"count\" is given twice");
			if (parse_uint(val, 1, 1000000000UL, &v))
				return USAGE("invalid count \"%s\" (a whole number >= 1)", val ? val : "");
			a->count = v;
		} else {
			return USAGE("unknown stats argument \"%s\"", kw);
		}
		i++;
	}
	if (a->count && !a->interval)
		return USAGE("\"count\" goes with \"interval\"");
	if (a->prom && (a->dev || a->interval))
		return USAGE("\"-o prometheus\" prints every interface once (no dev, no interval)");
	return 0;
}

/* One interface's counters: per CPU and summed. */
struct snap {
	const char *dev;
	__u32 ifindex;
	enum xdpr_mode mode;
	bool gone;            /* attached once, not there now: its kept counters */
	struct xdpr_slot sum;
	struct xdpr_slot *cpu;
};

static int take(struct xdpr *x, const struct xdpr_link **links, int n, struct snap *s, int ncpu)
{
	for (int i = 0; i < n; i++) {
		__u32 slot = links[i] ? links[i]->cfg.slot : 0;
		int err = xdpr_stats_read(x, slot, s[i].cpu);

		if (err)
			return err;
		s[i].dev = links[i] ? links[i]->name : "(unattached)";
		s[i].ifindex = links[i] ? links[i]->ifindex : 0;
		s[i].mode = links[i] ? links[i]->mode : XDPR_MODE_NATIVE;
		s[i].gone = links[i] && !links[i]->prog_id;
		memset(&s[i].sum, 0, sizeof(s[i].sum));
		for (int c = 0; c < ncpu; c++)
			for (int r = 0; r < XDPR_REASON_MAX; r++) {
				s[i].sum.reason[r].packets += s[i].cpu[c].reason[r].packets;
				s[i].sum.reason[r].bytes += s[i].cpu[c].reason[r].bytes;
			}
	}
	return 0;
}

static bool slot_empty(const struct xdpr_slot *s)
{
	for (int r = 0; r < XDPR_REASON_MAX; r++)
		if (s->reason[r].packets)
			return false;
	return true;
}

static struct xdpr *nat_x; /* NAT rules to show with a snapshot (all interfaces) */
static int nft_on;         /* forwarded traffic goes through the kernel (nft_fallback) */
static char nft_list[4096];

static void print_snapshot(const struct snap *s, int n, int ncpu)
{
	out_obj_open(NULL);
	out_str("forwarding", NULL, nft_on ? "kernel" : "xdp");
	out_arr_open("nft_policy");
	if (nft_on)
		out_str(NULL, "forwarded traffic goes through the kernel (pass_nft_policy): netfilter "
			"has rules XDP would bypass: %s\n", nft_list);
	out_arr_close();
	out_arr_open("interfaces");
	for (int i = 0; i < n; i++) {
		/* slot 0 only matters when something landed there */
		if (!s[i].ifindex && slot_empty(&s[i].sum))
			continue;
		out_obj_open(NULL);
		out_str("dev", "%s", s[i].dev);
		out_u64("ifindex", " (ifindex %llu", s[i].ifindex);
		out_str("mode", ", %s", xdpr_mode_name(s[i].mode));
		out_str("state", s[i].gone ? ", %s)\n" : NULL, s[i].gone ? "gone" : "attached");
		if (!s[i].gone)
			out_text(")\n");
		out_obj_open("reasons");
		for (int r = 0; r < XDPR_REASON_MAX; r++) {
			const struct xdpr_ctr *c = &s[i].sum.reason[r];

			if (!out_is_json() && !c->packets && opts.detail < 1)
				continue;
			out_obj_open(xdpr_reason_name(r));
			out_text("  %-22s", xdpr_reason_name(r));
			out_u64("packets", " %14llu pkts", c->packets);
			out_u64("bytes", " %16llu bytes\n", c->bytes);
			if (opts.detail >= 2) {
				out_arr_open("cpus");
				for (int k = 0; k < ncpu; k++) {
					out_obj_open(NULL);
					out_u64("cpu", "    cpu%-17llu", k);
					out_u64("packets", " %14llu pkts", s[i].cpu[k].reason[r].packets);
					out_u64("bytes", " %16llu bytes\n", s[i].cpu[k].reason[r].bytes);
					out_obj_close();
				}
				out_arr_close();
			}
			out_obj_close();
		}
		out_obj_close();
		out_obj_close();
	}
	out_arr_close();
	if (nat_x) {
		__u64 nb[XDPR_NB_MAX];

		/* the program's requests to xdprd for neighbours it lacked (since it was loaded) */
		if (!xdpr_nbr_counts(nat_x, nb) && (out_is_json() || nb[XDPR_NB_ASKED] || nb[XDPR_NB_LOST])) {
			out_obj_open("neighbours");
			out_u64("asked", "\nneighbours asked for (xdprd resolves them): %llu", nb[XDPR_NB_ASKED]);
			out_u64("lost", ", not asked (ring full) %llu\n", nb[XDPR_NB_LOST]);
			out_obj_close();
		}
		out_text("\n");
		print_nat_rules(nat_x, true);
	}
	out_obj_close();
	out_flush_doc();
}

static void print_rates(const struct snap *a, const struct snap *b, int n, int ncpu, double secs)
{
	char now[32];

	fmt_time(time(NULL), now, sizeof(now));
	out_obj_open(NULL);
	out_str("time", "--- %s", now);
	out_double("interval", " (%.1f s)\n", secs);
	out_arr_open("interfaces");
	for (int i = 0; i < n; i++) {
		if (!b[i].ifindex && slot_empty(&b[i].sum))
			continue;
		out_obj_open(NULL);
		out_str("dev", NULL, b[i].dev);
		out_obj_open("reasons");
		for (int r = 0; r < XDPR_REASON_MAX; r++) {
			__u64 dp = b[i].sum.reason[r].packets - a[i].sum.reason[r].packets;
			__u64 db = b[i].sum.reason[r].bytes - a[i].sum.reason[r].bytes;

			/* live text view: only what moved; JSON keeps every key */
			if (!out_is_json() && !dp)
				continue;
			out_obj_open(xdpr_reason_name(r));
			out_text("%-15s %-22s", b[i].dev, xdpr_reason_name(r));
			out_double("pps", " %14.0f pps", dp / secs);
			out_double("mbps", " %12.3f Mbit/s\n", db * 8 / secs / 1e6);
			if (opts.detail >= 2) {
				out_arr_open("cpus");
				for (int k = 0; k < ncpu; k++) {
					__u64 cp = b[i].cpu[k].reason[r].packets -
						   a[i].cpu[k].reason[r].packets;
					__u64 cb = b[i].cpu[k].reason[r].bytes - a[i].cpu[k].reason[r].bytes;

					out_obj_open(NULL);
					out_u64("cpu", "                  cpu%-19llu", k);
					out_double("pps", " %14.0f pps", cp / secs);
					out_double("mbps", " %12.3f Mbit/s\n", cb * 8 / secs / 1e6);
					out_obj_close();
				}
				out_arr_close();
			}
			out_obj_close();
		}
		out_obj_close();
		out_obj_close();
	}
	out_arr_close();
	out_obj_close();
	out_flush_doc();
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run_interval(struct xdpr *x, const struct xdpr_link **links, int n,
			struct snap *s[2], int ncpu, const struct stats_args *a)
{
	struct sigaction sa = { .sa_handler = on_signal };
	double t0, t1;
	int cur = 0, err;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if ((err = take(x, links, n, s[cur], ncpu)))
		return err;
	t0 = now_s();
	for (unsigned long k = 0; !stop && (!a->count || k < a->count); k++) {
		struct timespec left = { .tv_sec = a->interval };

		while (!stop && nanosleep(&left, &left) && errno == EINTR)
			;
		if (stop)
			break;
		if ((err = take(x, links, n, s[!cur], ncpu)))
			return err;
		t1 = now_s();
		print_rates(s[cur], s[!cur], n, ncpu, t1 - t0);
		cur = !cur;
		t0 = t1;
	}
	return 0;
}

static int stats_prom(struct xdpr *x)
{
	char err[512];
	int ret = xdpr_open(x, 0);

	if (ret && ret != -ENOENT) { /* nothing attached: xdpr_links_attached 0 */
		xdpr_close(x);
		return fail(EXIT_FAIL, "%s", x->err);
	}
	ret = prom_write(stdout, x, opts.detail >= 2, err, sizeof(err));
	xdpr_close(x);
	if (ret)
		return fail(EXIT_FAIL, "%s", err);
	if (fflush(stdout) || ferror(stdout))
		return fail(EXIT_FAIL, "cannot write: %s", strerror(errno));
	return EXIT_OK;
}

int do_stats(int argc, char **argv)
{
	static struct xdpr x;
	const struct xdpr_link *links[XDPR_MAX_IFACES + 1];
	static struct xdpr_link gone_links[XDPR_MAX_IFACES];
	struct stats_args a;
	struct snap *s[2] = {};
	int ncpu, n = 0, ret = EXIT_FAIL, err;
	char msg[256];

	if (argc == 1 && !strcmp(argv[0], "help")) {
		stats_usage();
		return EXIT_OK;
	}
	if (parse_stats(argc, argv, &a, msg, sizeof(msg))) {
		return fail(EXIT_USAGE, "%s", msg);
	}
	if (a.prom)
		return stats_prom(&x);
	if (xdpr_open(&x, 0)) {
		xdpr_close(&x);
		return fail(EXIT_FAIL, "%s", x.err);
	}
	if (a.dev) {
		links[n] = xdpr_link_find(&x, a.dev);
		if (!links[n]) {
			ret = fail(EXIT_FAIL, if_nametoindex(a.dev) ? "xdpr is not attached to \"%s\""
								    : "cannot find device \"%s\"", a.dev);
			goto out;
		}
		n++;
	} else {
		for (int i = 0; i < x.nlinks; i++)
			if (x.links[i].has_cfg)
				links[n++] = &x.links[i];
		/* gone interfaces keep their counters (link show) */
		for (int i = 0; i < x.ngone && n < XDPR_MAX_IFACES; i++) {
			struct xdpr_link *l = &gone_links[i];

			memset(l, 0, sizeof(*l));
			snprintf(l->name, sizeof(l->name), "%s", x.gone[i].name);
			l->ifindex = x.gone[i].old_ifindex;
			l->mode = x.gone[i].mode;
			l->has_cfg = true;
			l->cfg.slot = x.gone[i].slot;
			links[n++] = l;
		}
		if (n < XDPR_MAX_IFACES + 1)
			links[n++] = NULL; /* slot 0: frames on a device whose attach or detach was cut short */
	}

	ncpu = xdpr_ncpus();
	if (ncpu <= 0) {
		ret = fail(EXIT_FAIL, "cannot count CPUs: %s", strerror(-ncpu));
		goto out;
	}
	for (int k = 0; k < 2; k++) {
		s[k] = calloc(n, sizeof(struct snap));
		if (!s[k]) {
			ret = fail(EXIT_FAIL, "out of memory");
			goto out;
		}
		for (int i = 0; i < n; i++) {
			s[k][i].cpu = calloc(ncpu, sizeof(struct xdpr_slot));
			if (!s[k][i].cpu) {
				ret = fail(EXIT_FAIL, "out of memory");
				goto out;
			}
		}
	}

	if (a.interval)
		err = run_interval(&x, links, n, s, ncpu, &a);
	else if (!(err = take(&x, links, n, s[0], ncpu))) {
		nat_x = a.dev ? NULL : &x;
		nft_on = nft_fallback(&x, nft_list, sizeof(nft_list));
		print_snapshot(s[0], n, ncpu);
	}
	ret = err ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
out:
	for (int k = 0; k < 2; k++) {
		for (int i = 0; s[k] && i < n; i++)
			free(s[k][i].cpu);
		free(s[k]);
	}
	xdpr_close(&x);
	return ret;
}
