// SPDX-License-Identifier: GPL-2.0
/*
 * nfguard.c - netfilter rules that packets forwarded by XDP would skip.
 *
 * A frame xdpr redirects from one interface to another never becomes a
 * forwarded skb: netfilter's forward hook, and the ingress and egress hooks
 * of both devices, never see it.  Before an attach opens that bypass,
 * xdpr_nf_check() lists what the caller's network namespace has there:
 *
 *   - nftables base chains (families ip, ip6, inet) on the forward hook
 *     with a rule or a policy other than accept; iptables-nft creates such
 *     tables, so its FORWARD chains are found here too.  Read with
 *     libnftables ("list ruleset" in its JSON schema, libnftables-json(5))
 *     and jansson.  A kernel without netfilter's netlink interface has no
 *     nftables rules; on a modular kernel, reading may load nf_tables, as
 *     `nft list ruleset` does.
 *   - netdev (ingress, egress) and inet (ingress) base chains of the devices
 *     named, likewise.  libnftables 1.0.6 (Debian 12) leaves a chain's
 *     devices out of its JSON listing: a chain whose devices are not
 *     listed is counted, as possibly on one of these devices.
 *   - iptables-legacy and ip6tables-legacy FORWARD chains, in every table
 *     that has one (filter, mangle, security), with a rule or a policy other
 *     than ACCEPT.  Read with libiptc, and only in tables that are already
 *     there (/proc/net/ip{,6}_tables_names): asking for another one would
 *     load its module or create it in this namespace.
 *
 * Leaf of the library: it uses no other part of it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/netlink.h>
#include <linux/capability.h>
#include "libxdpr.h"
/* after libxdpr.h: <linux/if.h> (from ip_tables.h) must follow <net/if.h> */
#include <jansson.h>
#include <nftables/libnftables.h>
#include <libiptc/libiptc.h>
#include <libiptc/libip6tc.h>

static int nf_err(struct xdpr *x, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int nf_err(struct xdpr *x, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
	return err;
}

static void add(struct xdpr_nf_report *r, bool dev_hook, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add(struct xdpr_nf_report *r, bool dev_hook, const char *fmt, ...)
{
	va_list ap;

	r->total++;
	if (r->n >= XDPR_NF_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(r->f[r->n].what, sizeof(r->f[r->n].what), fmt, ap);
	va_end(ap);
	r->f[r->n].dev_hook = dev_hook;
	r->n++;
}

static const char *plural(long n)
{
	return n == 1 ? "" : "s";
}

/* ---- nftables */

static const char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/*
 * The first of devs the chain is on ("" when the listing names no device:
 * it may be on any), or NULL when it is on none of them.
 */
static const char *chain_dev(json_t *chain, char *const *devs, int n)
{
	json_t *dev = json_object_get(chain, "dev");
	json_t *d;
	size_t i;

	if (!dev)
		dev = json_object_get(chain, "devices");
	if (json_is_string(dev)) {
		for (int k = 0; k < n; k++)
			if (!strcmp(json_string_value(dev), devs[k]))
				return devs[k];
		return NULL;
	}
	if (!json_is_array(dev) || !json_array_size(dev))
		return "";
	json_array_foreach(dev, i, d)
		for (int k = 0; k < n && json_is_string(d); k++)
			if (!strcmp(json_string_value(d), devs[k]))
				return devs[k];
	return NULL;
}

/* Rules of chain (family, table, name) in the listing. */
static long count_rules(json_t *list, const char *family, const char *table, const char *name)
{
	json_t *item, *rule;
	long n = 0;
	size_t i;

	json_array_foreach(list, i, item) {
		rule = json_object_get(item, "rule");
		if (rule && !strcmp(jstr(rule, "family"), family) &&
		    !strcmp(jstr(rule, "table"), table) && !strcmp(jstr(rule, "chain"), name))
			n++;
	}
	return n;
}

static int nft_findings(json_t *list, char *const *devs, int n, struct xdpr_nf_report *r)
{
	json_t *item, *chain;
	size_t i;

	json_array_foreach(list, i, item) {
		const char *family, *table, *name, *hook, *policy, *on = NULL;
		bool fwd, dev_hook;
		long rules;

		chain = json_object_get(item, "chain");
		if (!chain || !json_object_get(chain, "hook"))
			continue; /* not a base chain: reached only from one */
		family = jstr(chain, "family");
		table = jstr(chain, "table");
		name = jstr(chain, "name");
		hook = jstr(chain, "hook");
		policy = json_object_get(chain, "policy") ? jstr(chain, "policy") : "accept";
		fwd = !strcmp(hook, "forward") &&
		      (!strcmp(family, "ip") || !strcmp(family, "ip6") || !strcmp(family, "inet"));
		dev_hook = (!strcmp(family, "netdev") &&
			    (!strcmp(hook, "ingress") || !strcmp(hook, "egress"))) ||
			   (!strcmp(family, "inet") && !strcmp(hook, "ingress"));
		if (dev_hook) {
			on = chain_dev(chain, devs, n);
			if (!on)
				continue;
		} else if (!fwd) {
			continue;
		}
		rules = count_rules(list, family, table, name);
		if (!rules && !strcmp(policy, "accept"))
			continue;
		if (fwd)
			add(r, false, "table %s %s chain %s (policy %s, %ld rule%s)", family, table,
			    name, policy, rules, plural(rules));
		else
			add(r, true, "table %s %s chain %s (%s hook of %s, policy %s, %ld rule%s)",
			    family, table, name, hook, *on ? on : "devices libnftables does not name",
			    policy, rules, plural(rules));
	}
	return 0;
}

/* libnftables' message: its first line, without "netlink: Error: " and the like. */
static void nft_msg(const char *buf, char *out, size_t len)
{
	const char *p, *e;

	if (!buf || !*buf) {
		snprintf(out, len, "no reason given");
		return;
	}
	p = buf;
	while ((e = strstr(p, "Error: ")) && e < p + strcspn(p, "\n"))
		p = e + strlen("Error: ");
	snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
}

/*
 * Reading netfilter takes CAP_NET_ADMIN.  Checked first: without it,
 * libnftables 1.0.6 also prints "... (you must be root)" on stderr, past
 * its error buffer.
 */
static bool net_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};

	if (syscall(SYS_capget, &h, d))
		return true; /* unknown: let netfilter answer */
	return d[CAP_NET_ADMIN / 32].effective & (1u << (CAP_NET_ADMIN % 32));
}

/*
 * 1 when the kernel has netfilter's netlink interface (nftables' way in);
 * 0 when it has none (no module either): then there is no nftables rule.
 */
static int nfnetlink_present(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);

	if (fd < 0)
		return errno == EPROTONOSUPPORT ? 0 : -errno;
	close(fd);
	return 1;
}

static int check_nft(struct xdpr *x, char *const *devs, int n, struct xdpr_nf_report *r)
{
	struct nft_ctx *ctx;
	json_error_t jerr;
	json_t *root = NULL, *list;
	char why[256];
	int err = 0;

	if (!net_admin())
		return nf_err(x, -EPERM, "cannot read the nftables ruleset: %s (CAP_NET_ADMIN needed)",
			      strerror(EPERM));
	err = nfnetlink_present();
	if (err <= 0)
		return err ? nf_err(x, err, "cannot read the nftables ruleset: %s", strerror(-err)) : 0;
	err = 0;
	ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!ctx)
		return nf_err(x, -ENOMEM, "cannot read the nftables ruleset: libnftables failed to start");
	nft_ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_JSON | NFT_CTX_OUTPUT_TERSE);
	if (nft_ctx_buffer_output(ctx) || nft_ctx_buffer_error(ctx)) {
		err = nf_err(x, -ENOMEM, "cannot read the nftables ruleset: cannot buffer its output");
		goto out;
	}
	if (nft_run_cmd_from_buffer(ctx, "list ruleset")) {
		nft_msg(nft_ctx_get_error_buffer(ctx), why, sizeof(why));
		err = nf_err(x, strstr(why, "not permitted") ? -EPERM : -EIO,
			     "cannot read the nftables ruleset: %s", why);
		goto out;
	}
	root = json_loads(nft_ctx_get_output_buffer(ctx), 0, &jerr);
	list = json_object_get(root, "nftables");
	if (!json_is_array(list)) {
		err = nf_err(x, -EPROTO, "cannot read the nftables ruleset: %s",
			     root ? "no \"nftables\" array in libnftables' JSON" : jerr.text);
		goto out;
	}
	err = nft_findings(list, devs, n, r);
out:
	json_decref(root);
	nft_ctx_free(ctx);
	return err;
}

/* ---- iptables-legacy, ip6tables-legacy */

/*
 * The FORWARD chain of one legacy table, if it has one.  libip4tc and
 * libip6tc are the same code built twice: one function per family.
 */
static int legacy4(struct xdpr *x, const char *table, struct xdpr_nf_report *r)
{
	struct xtc_handle *h = iptc_init(table);
	struct xt_counters c;
	const struct ipt_entry *e;
	const char *policy;
	long rules = 0;

	if (!h)
		return nf_err(x, errno ? -errno : -EIO, "cannot read iptables-legacy table %s: %s",
			      table, iptc_strerror(errno));
	if (iptc_is_chain("FORWARD", h)) {
		policy = iptc_get_policy("FORWARD", &c, h);
		for (e = iptc_first_rule("FORWARD", h); e; e = iptc_next_rule(e, h))
			rules++;
		if (rules || !policy || strcmp(policy, IPTC_LABEL_ACCEPT))
			add(r, false, "iptables-legacy table %s chain FORWARD (policy %s, %ld rule%s)",
			    table, policy ? policy : "unknown", rules, plural(rules));
	}
	iptc_free(h);
	return 0;
}

static int legacy6(struct xdpr *x, const char *table, struct xdpr_nf_report *r)
{
	struct xtc_handle *h = ip6tc_init(table);
	struct xt_counters c;
	const struct ip6t_entry *e;
	const char *policy;
	long rules = 0;

	if (!h)
		return nf_err(x, errno ? -errno : -EIO, "cannot read ip6tables-legacy table %s: %s",
			      table, ip6tc_strerror(errno));
	if (ip6tc_is_chain("FORWARD", h)) {
		policy = ip6tc_get_policy("FORWARD", &c, h);
		for (e = ip6tc_first_rule("FORWARD", h); e; e = ip6tc_next_rule(e, h))
			rules++;
		if (rules || !policy || strcmp(policy, IPTC_LABEL_ACCEPT))
			add(r, false, "ip6tables-legacy table %s chain FORWARD (policy %s, %ld rule%s)",
			    table, policy ? policy : "unknown", rules, plural(rules));
	}
	ip6tc_free(h);
	return 0;
}

/* Every table listed in names (/proc/net/ip_tables_names or ip6_), one a line. */
static int check_legacy(struct xdpr *x, const char *names,
			int (*one)(struct xdpr *, const char *, struct xdpr_nf_report *),
			struct xdpr_nf_report *r)
{
	char table[64];
	int err = 0;
	FILE *f;

	f = fopen(names, "re");
	if (!f) /* no legacy iptables in this kernel */
		return errno == ENOENT ? 0 : nf_err(x, -errno, "cannot read %s: %s", names,
						    strerror(errno));
	while (!err && fgets(table, sizeof(table), f)) {
		table[strcspn(table, "\n")] = 0;
		if (*table)
			err = one(x, table, r);
	}
	fclose(f);
	return err;
}

int xdpr_nf_check(struct xdpr *x, char *const *devs, int n, struct xdpr_nf_report *r)
{
	int err;

	memset(r, 0, sizeof(*r));
	err = check_nft(x, devs, n, r);
	if (!err)
		err = check_legacy(x, "/proc/net/ip_tables_names", legacy4, r);
	if (!err)
		err = check_legacy(x, "/proc/net/ip6_tables_names", legacy6, r);
	return err ? err : r->total;
}
