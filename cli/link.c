// SPDX-License-Identifier: GPL-2.0
/* link.c - xdpr link { attach | detach | show }. */
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "out.h"

static void link_usage(void)
{
	fprintf(stderr,
		"Usage: xdpr link attach DEV [DEV ...] [mode {native|skb}] [force]\n"
		"       xdpr link detach { DEV [DEV ...] | all } [force]\n"
		"       xdpr link show [DEV]\n"
		"       xdpr link sync\n"
		"A port's 802.1Q VLANs come with it: attach the port; \"link sync\" enrols VLANs\n"
		"       created (and takes out those deleted) since, as xdprd does at once;\n"
		"       it also writes changed MACs and asks every port again whether it can\n"
		"       transmit XDP frames (XMIT)\n"
		"attach ... force: replace another XDP program on DEV, and attach although\n"
		"       netfilter has forward rules (nftables, iptables) or ingress/egress\n"
		"       chains on DEV, which packets forwarded by XDP bypass\n"
		"detach ... force: detach although DEV has NAT rules (they are removed), or\n"
		"       another interface translates or the filter is in force (the kernel\n"
		"       then forwards DEV's traffic untranslated and unfiltered)\n");
}

#define USAGE(...) (snprintf(err, len, __VA_ARGS__), EXIT_USAGE)

/* "DEV" or "dev DEV" at argv[*i] onto devs[]; advances *i past a "dev". */
static int take_dev(int argc, char **argv, int *i, char **devs, int *ndev, char *err, size_t len)
{
	char *d = argv[*i];

	if (!strcmp(d, "dev")) {
		if (++*i >= argc)
			return USAGE("\"dev\" needs a device name");
		d = argv[*i];
	}
	if (!*d || strlen(d) >= IF_NAMESIZE || strchr(d, '/') || strchr(d, ' '))
		return USAGE("invalid device name \"%s\"", d);
	if (*ndev >= XDPR_MAX_IFACES - 1)
		return USAGE("too many devices");
	for (int k = 0; k < *ndev; k++)
		if (!strcmp(devs[k], d))
			return USAGE("device \"%s\" given twice", d);
	devs[(*ndev)++] = d;
	return 0;
}

int parse_attach(int argc, char **argv, struct attach_args *a, char *err, size_t len)
{
	memset(a, 0, sizeof(*a));
	a->mode = XDPR_MODE_NATIVE;
	bool mode = false;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "mode")) {
			if (mode)
				return USAGE("\"mode\" given twice");
			mode = true;
			if (++i >= argc)
				return USAGE("\"mode\" needs native or skb");
			if (!strcmp(argv[i], "native") || !strcmp(argv[i], "drv"))
				a->mode = XDPR_MODE_NATIVE;
			else if (!strcmp(argv[i], "skb") || !strcmp(argv[i], "generic"))
				a->mode = XDPR_MODE_SKB;
			else
				return USAGE("unknown mode \"%s\" (expected native or skb)", argv[i]);
		} else if (!strcmp(argv[i], "force")) {
			if (a->force)
				return USAGE("\"force\" given twice");
			a->force = true;
		} else if (take_dev(argc, argv, &i, a->devs, &a->ndev, err, len)) {
			return EXIT_USAGE;
		}
	}
	if (!a->ndev)
		return USAGE("\"link attach\" needs at least one device");
	return 0;
}

int parse_detach(int argc, char **argv, struct detach_args *a, char *err, size_t len)
{
	memset(a, 0, sizeof(*a));
	if (argc > 0 && !strcmp(argv[argc - 1], "force")) {
		a->force = true;
		argc--;
	}
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "force"))
			return USAGE("\"force\" goes last, once");
	if (argc == 1 && !strcmp(argv[0], "all"))
		return 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "all"))
			return USAGE("\"all\" cannot be combined with device names");
		if (take_dev(argc, argv, &i, a->devs, &a->ndev, err, len))
			return EXIT_USAGE;
	}
	if (!a->ndev)
		return USAGE("\"link detach\" needs device names or \"all\"");
	return 0;
}

static const char *xmit_name(enum xdpr_xmit x)
{
	return x == XDPR_XMIT_YES ? "yes" : x == XDPR_XMIT_NO ? "no" : "unknown";
}

/* The hooks the findings are on, as the messages name them. */
static const char *nf_hooks(const struct xdpr_nf_report *nf)
{
	bool fwd = false, dev = false;

	for (int i = 0; i < nf->n; i++)
		*(nf->f[i].dev_hook ? &dev : &fwd) = true;
	if (fwd && dev)
		return "netfilter's forward hook and the ingress/egress hooks of their devices";
	return dev ? "netfilter's ingress/egress hooks of their devices" : "netfilter's forward hook";
}

/* The findings as one line: "A, B and 3 more". */
static void bypass_list(const struct xdpr_nf_report *nf, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int i = 0; i < nf->n && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%s", i ? ", " : "", nf->f[i].what);
	if (nf->total > nf->n && used < len)
		snprintf(buf + used, len - used, " and %d more", nf->total - nf->n);
}

int nft_fallback(struct xdpr *x, char *list, size_t len)
{
	static struct xdpr_nf_report nf;
	char *devs[XDPR_MAX_IFACES];
	struct xdpr_cfg c;
	int n = 0;

	if (len)
		list[0] = 0;
	if (!x->nlinks || xdpr_cfg_get(x, &c) || !(c.flags & XDPR_CFG_NFT_POLICY))
		return 0;
	for (int i = 0; i < x->nlinks; i++)
		devs[n++] = x->links[i].name;
	if (xdpr_nf_check(x, devs, n, &nf) < 0)
		snprintf(list, len, "(%s)", x->err);
	else if (!nf.total)
		snprintf(list, len, "none now (XDP forwards again at the next change or when xdprd looks)");
	else
		bypass_list(&nf, list, len);
	return 1;
}

/*
 * Before anything changes: netfilter rules that forwarded packets would meet
 * in the kernel and skip through XDP (on the devices being attached and those
 * already attached).  Refused unless "force"; EXIT_OK or the exit code.
 */
int attach_guard(struct xdpr *x, char *const *adevs, int nadev, bool force,
		 struct xdpr_nf_report *nf, char *err, size_t len)
{
	char *devs[2 * XDPR_MAX_IFACES];
	char list[sizeof(nf->f) + 64];
	int n = 0, ret;

	memset(nf, 0, sizeof(*nf));
	/* a missing device is the user's first error */
	for (int i = 0; i < nadev; i++) {
		if (!if_nametoindex(adevs[i]))
			return snprintf(err, len, "cannot find device \"%s\"", adevs[i]), EXIT_FAIL;
		devs[n++] = adevs[i];
	}
	for (int i = 0; i < x->nlinks; i++)
		devs[n++] = x->links[i].name;
	ret = xdpr_nf_check(x, devs, n, nf);
	if (ret < 0)
		return snprintf(err, len, "%s", x->err), EXIT_FAIL;
	if (!ret || force)
		return EXIT_OK;
	bypass_list(nf, list, sizeof(list));
	snprintf(err, len, "packets forwarded by XDP bypass %s, and this network namespace "
		 "has rules there: %s; use \"force\" to attach anyway, or express that policy "
		 "as \"xdpr filter\" rules", nf_hooks(nf), list);
	return EXIT_FAIL;
}

static int link_attach(int argc, char **argv)
{
	static struct xdpr x, view;
	static struct xdpr_attach_info info;
	static struct xdpr_nf_report nf;
	struct attach_args a;
	char err[256], list[sizeof(nf.f) + 64], warn[sizeof(list) + 128];
	static char gerr[sizeof(list) + 512];
	int ret;

	if (parse_attach(argc, argv, &a, err, sizeof(err))) {
		return fail(EXIT_USAGE, "%s", err);
	}
	ret = xdpr_open(&x, XDPR_O_LOCK);
	if (!ret) /* finish or undo what a killed command left */
		ret = xdpr_nat_repair(&x, NULL, 0);
	if (ret && ret != -ENOENT) {
		xdpr_close(&x);
		return fail(EXIT_FAIL, "%s", x.err);
	}
	ret = attach_guard(&x, a.devs, a.ndev, a.force, &nf, gerr, sizeof(gerr));
	if (ret) {
		xdpr_close(&x);
		return fail(ret, "%s", gerr);
	}
	ret = xdpr_attach(&x, a.devs, a.ndev, a.mode, a.force ? XDPR_F_FORCE : 0, &info);
	xdpr_close(&x);
	if (ret)
		return fail(EXIT_FAIL, "%s", x.err);
	print_warnings(x.note);
	/* the view with the new ports, for their VLANs (x.err/note are kept above) */
	if (xdpr_open(&view, 0))
		view.nlinks = 0;
	if (nf.total) { /* attached with force: say what is bypassed */
		bypass_list(&nf, list, sizeof(list));
		snprintf(warn, sizeof(warn), "packets forwarded by XDP bypass %s: %s", nf_hooks(&nf),
			 list);
		print_warnings(warn);
	}

	out_arr_open(NULL);
	for (int i = 0; i < info.n; i++) {
		out_obj_open(NULL);
		out_str("dev", "%s: attached", info.dev[i].name);
		out_str("mode", " in %s mode", xdpr_mode_name(a.mode));
		out_bool("dispatcher", NULL, info.dev[i].dispatcher);
		if (!info.dev[i].dispatcher)
			out_str("direct_attach_reason", " (direct attach, no libxdp dispatcher: %s)",
				info.dev[i].why);
		out_bool("replaced_foreign", NULL, info.dev[i].replaced_foreign);
		if (info.dev[i].replaced_foreign)
			out_text(", replaced the previous XDP program");
		out_str("xdp_xmit", NULL, xmit_name(info.dev[i].xmit));
		out_arr_open("netfilter_bypassed");
		for (int k = 0; k < nf.n; k++)
			out_str(NULL, NULL, nf.f[k].what);
		out_arr_close();
		out_bool("rx_vlan_offload_turned_off", NULL, info.dev[i].rxvlan_off);
		if (info.dev[i].rxvlan_off)
			out_text(", receive VLAN offload turned off (on again at detach)");
		out_bool("rx_vlan_offload_stuck", NULL, info.dev[i].rxvlan_stuck);
		if (info.dev[i].rxvlan_stuck)
			out_text(", receive VLAN offload stays on (cannot be turned off: VLAN frames "
				 "arrive untagged and are routed as %s's)", info.dev[i].name);
		{
			const struct xdpr_link *p = xdpr_link_find(&view, info.dev[i].name);
			int nv = 0;

			out_arr_open("vlans");
			for (int k = 0; p && k < view.nlinks; k++)
				if (view.links[k].parent == p->ifindex) {
					out_str(NULL, nv ? ", %s" : ", VLANs %s", view.links[k].name);
					nv++;
				}
			out_arr_close();
		}
		out_text("\n");
		if (info.dev[i].xmit == XDPR_XMIT_NO && a.mode == XDPR_MODE_NATIVE)
			out_text("  note: the %s driver cannot transmit XDP frames now: traffic routed "
				 "out of %s goes through the kernel (veth: enable GRO or XDP on the "
				 "peer, then \"xdpr link sync\")\n",
				 info.dev[i].name, info.dev[i].name);
		out_obj_close();
	}
	out_arr_close();
	out_flush_doc();
	xdpr_close(&view);
	return EXIT_OK;
}

static int link_detach(int argc, char **argv)
{
	static struct xdpr x;
	struct detach_args a;
	char err[256];
	int ret;

	if (parse_detach(argc, argv, &a, err, sizeof(err))) {
		return fail(EXIT_USAGE, "%s", err);
	}
	ret = xdpr_open(&x, XDPR_O_LOCK);
	/* -ESTALE: programs of another xdpr version; they can still be removed */
	if (!ret || ret == -ESTALE)
		ret = xdpr_detach(&x, a.devs, a.ndev, a.force ? XDPR_F_FORCE : 0);
	xdpr_close(&x);
	return ret ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
}

/* link show: forwarded traffic goes through the kernel (nft_fallback), and why */
static int nft_on;
static char nft_list[sizeof(((struct xdpr_nf_report *)0)->f) + 64];

static void show_one(const struct xdpr *x, const struct xdpr_link *l)
{
	char since[32];
	bool rxv;

	fmt_time(l->since, since, sizeof(since));
	out_obj_open(NULL);
	out_str("dev", "%-15s ", l->name);
	out_u64("ifindex", "%7llu  ", l->ifindex);
	out_str("mode", "%-6s  ", xdpr_mode_name(l->mode));
	out_u64("prog_id", "%7llu  ", l->prog_id);
	out_str("prog_tag", NULL, l->prog_tag);
	out_str("build", NULL, l->build);
	out_bool("this_build", NULL, !strcmp(l->build, xdpr_build_id()));
	out_bool("dispatcher", "%-10s  ", l->dispatcher);
	out_bool("xdp_xmit", "%-4s  ", l->has_cfg && (l->cfg.flags & XDPR_IF_XMIT));
	out_u64("slot", "%4llu  ", l->has_cfg ? l->cfg.slot : 0);
	out_str("since", "%s", since);
	out_str("state", NULL, "attached");
	out_str("forwarding", NULL, nft_on ? "kernel" : "xdp");
	out_arr_open("nft_policy");
	if (nft_on)
		out_str(NULL, NULL, nft_list);
	out_arr_close();
	if (l->parent) {
		out_str("kind", NULL, "vlan");
		out_str("parent", "  vlan %s", l->parent_name);
		out_u64("vid", "/%llu", l->vid);
	} else {
		int nv = 0;

		out_str("kind", NULL, "port");
		if (!xdpr_rxvlan_get(l->name, &rxv)) {
			out_str("rx_vlan_offload", NULL, rxv ? "on" : "off");
			if (rxv)
				out_text("  rx VLAN offload ON: VLAN frames arrive untagged, routed as %s's",
					 l->name);
		}
		out_bool("rx_vlan_offload_by_xdpr", NULL, l->has_cfg && (l->cfg.flags & XDPR_IF_RXVLAN_OFF));
		out_arr_open("vlans");
		for (int k = 0; k < x->nlinks; k++)
			if (x->links[k].parent == l->ifindex)
				nv++, out_str(NULL, NULL, x->links[k].name);
		out_arr_close();
		if (nv)
			out_text("  %d VLAN%s", nv, nv > 1 ? "s" : "");
	}
	out_text("\n");
	out_obj_close();
}

static int link_show(int argc, char **argv)
{
	static struct xdpr x;
	const char *dev = NULL;
	int ret;

	if (argc > 0 && !strcmp(argv[0], "dev"))
		argc--, argv++;
	if (argc > 1 || (argc == 1 && !*argv[0])) {
		return fail(EXIT_USAGE, "\"link show\" takes at most one device");
	}
	if (argc == 1)
		dev = argv[0];
	ret = xdpr_open(&x, 0);
	if (ret && ret != -ENOENT) {
		xdpr_close(&x);
		return fail(EXIT_FAIL, "%s", x.err);
	}
	bool gone = false;

	for (int i = 0; dev && i < x.ngone; i++)
		gone |= !strcmp(x.gone[i].name, dev);
	if (dev && !gone && !xdpr_link_find(&x, dev)) {
		xdpr_close(&x);
		if (!if_nametoindex(dev))
			return fail(EXIT_FAIL, "cannot find device \"%s\"", dev);
		return fail(EXIT_FAIL, "xdpr is not attached to \"%s\"", dev);
	}
	nft_on = nft_fallback(&x, nft_list, sizeof(nft_list));
	out_arr_open(NULL);
	if (x.nlinks || x.ngone)
		out_text("%-15s %7s  %-6s  %7s  %-10s  %-4s  %4s  %s\n", "DEV", "IFINDEX", "MODE",
			 "PROG", "DISPATCHER", "XMIT", "SLOT", "SINCE");
	/* ports, each followed by its VLANs */
	for (int i = 0; i < x.nlinks; i++) {
		if (x.links[i].parent)
			continue;
		if (!dev || !strcmp(dev, x.links[i].name))
			show_one(&x, &x.links[i]);
		for (int k = 0; k < x.nlinks; k++)
			if (x.links[k].parent == x.links[i].ifindex &&
			    (!dev || !strcmp(dev, x.links[k].name)))
				show_one(&x, &x.links[k]);
	}
	/* attached once and not there now: kept (with counters) until back or detached */
	for (int i = 0; i < x.ngone; i++) {
		const struct xdpr_gone *g = &x.gone[i];

		if (dev && strcmp(dev, g->name))
			continue;
		out_obj_open(NULL);
		out_str("dev", "%-15s ", g->name);
		out_u64("ifindex", "%7llu  ", g->old_ifindex);
		out_str("mode", "%-6s  ", xdpr_mode_name(g->mode));
		out_text("%7s  %-10s  %-4s  ", "-", "-", "-");
		out_u64("slot", "%4llu  ", g->slot);
		out_str("state", "%s", "gone");
		out_bool("recreated", NULL, g->recreated);
		out_str("kind", NULL, g->vlan ? "vlan" : "port");
		if (g->vlan)
			out_text(" (VLAN deleted: back on an attached port, it continues its counters; "
				 "\"xdpr link detach %s\" forgets it)\n", g->name);
		else if (g->recreated)
			out_text(" (re-created, not attached: \"xdpr link attach %s\" continues its "
				 "counters, \"xdpr link detach %s\" forgets it)\n", g->name, g->name);
		else
			out_text(" (deleted: once it is back, \"xdpr link attach %s\" continues its "
				 "counters; \"xdpr link detach %s\" forgets it)\n", g->name, g->name);
		out_obj_close();
	}
	/* each program running: its tag, and whether it is this xdpr's build */
	for (int i = 0; i < x.nlinks; i++) {
		const struct xdpr_link *l = &x.links[i];
		bool seen = false;

		for (int k = 0; k < i; k++)
			seen |= x.links[k].prog_id == l->prog_id;
		if (seen || l->parent || (dev && strcmp(dev, l->name)))
			continue;
		if (!strcmp(l->build, xdpr_build_id()))
			out_text("prog %u: tag %s, build %s (this xdpr's)\n", l->prog_id, l->prog_tag, l->build);
		else
			out_text("prog %u: tag %s, build %s (another build: this xdpr's is %s)\n", l->prog_id,
				 l->prog_tag, *l->build ? l->build : "unknown", xdpr_build_id());
	}
	if (nft_on && !dev)
		out_text("forwarded traffic goes through the kernel (pass_nft_policy): netfilter has "
			 "rules XDP would bypass: %s; XDP forwards again once they are gone\n", nft_list);
	out_arr_close();
	out_flush_doc();
	xdpr_close(&x);
	return EXIT_OK;
}

/*
 * VLANs as the kernel has them now, the MACs, and the XDP transmit
 * capability of every port: what xdprd does on every link event.
 */
static int link_sync(int argc, char **argv)
{
	static struct xdpr x;
	int ret, macs, xmit;

	(void)argv;
	if (argc)
		return fail(EXIT_USAGE, "\"link sync\" takes no arguments");
	ret = xdpr_open(&x, XDPR_O_LOCK);
	if (ret) {
		xdpr_close(&x);
		return fail(EXIT_FAIL, "%s", x.err);
	}
	/* what a killed command left; forwards onto their interface's address (x.info) */
	ret = xdpr_nat_repair(&x, NULL, 0);
	if (!ret || ret == -ENOENT)
		ret = xdpr_vlan_sync(&x);
	macs = ret < 0 ? 0 : xdpr_link_sync(&x);
	xmit = ret < 0 || macs < 0 ? 0 : xdpr_link_reprobe(&x);
	xdpr_close(&x);
	if (ret < 0 || macs < 0 || xmit < 0)
		return fail(EXIT_FAIL, "%s", x.err);
	ret += xmit; /* its lines are in x.info */
	print_warnings(x.note);
	out_obj_open(NULL);
	out_u64("changes", NULL, ret + macs);
	out_arr_open("what");
	for (const char *p = x.info, *nl; *p; p = nl ? nl + 1 : p + strlen(p)) {
		char line[256];

		nl = strchr(p, '\n');
		snprintf(line, sizeof(line), "%.*s", nl ? (int)(nl - p) : (int)strlen(p), p);
		out_str(NULL, "%s\n", line);
	}
	out_arr_close();
	if (macs)
		out_text("%d MAC address%s written again\n", macs, macs > 1 ? "es" : "");
	if (!ret && !macs && !x.info[0])
		out_text("nothing to change\n");
	out_obj_close();
	out_flush_doc();
	return EXIT_OK;
}

int do_link(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "show") || !strcmp(argv[0], "list"))
		return link_show(argc ? argc - 1 : 0, argv + (argc ? 1 : 0));
	if (!strcmp(argv[0], "attach"))
		return link_attach(argc - 1, argv + 1);
	if (!strcmp(argv[0], "detach"))
		return link_detach(argc - 1, argv + 1);
	if (!strcmp(argv[0], "sync"))
		return link_sync(argc - 1, argv + 1);
	if (!strcmp(argv[0], "help")) {
		link_usage();
		return EXIT_OK;
	}
	return fail(EXIT_USAGE, "unknown link command \"%s\"", argv[0]);
}
