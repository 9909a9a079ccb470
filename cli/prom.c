// SPDX-License-Identifier: GPL-2.0
/*
 * prom.c - the router's counters in the Prometheus text exposition format
 * (version 0.0.4): what xdprd serves on /metrics and `xdpr stats -o
 * prometheus` prints for node_exporter's textfile collector.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "prom.h"

/* A label value: backslash, double quote and newline escaped. */
static void label(FILE *f, const char *name, const char *v, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Attached interfaces and gone ones (kept counters), as one list. */
struct plink {
	const char *name;
	enum xdpr_mode mode;
	__u32 slot;
	bool gone;
};

static int links_write(FILE *f, struct xdpr *x, const struct plink *pl, int npl, bool per_cpu,
		       char *err, size_t len)
{
	int ncpu = xdpr_ncpus();
	struct xdpr_slot *cpu = calloc(ncpu > 0 ? ncpu : 1, sizeof(*cpu));
	struct xdpr_slot *sum = calloc(npl ? npl : 1, sizeof(*sum));
	struct xdpr_slot *all = calloc((size_t)(npl ? npl : 1) * (ncpu > 0 ? ncpu : 1),
				       sizeof(*all));
	static const char *what[2] = { "packets", "bytes" };
	int ret = 0;

	if (!cpu || !sum || !all || ncpu <= 0) {
		ret = -ENOMEM;
		snprintf(err, len, "out of memory");
		goto out;
	}
	for (int i = 0; i < npl; i++) {
		if (xdpr_stats_read(x, pl[i].slot, &all[(size_t)i * ncpu])) {
			ret = -EIO;
			snprintf(err, len, "%s", x->err);
			goto out;
		}
		for (int c = 0; c < ncpu; c++)
			for (int r = 0; r < XDPR_REASON_MAX; r++) {
				sum[i].reason[r].packets += all[(size_t)i * ncpu + c].reason[r].packets;
				sum[i].reason[r].bytes += all[(size_t)i * ncpu + c].reason[r].bytes;
			}
	}
	head(f, "xdpr_link_info", "gauge", "An interface xdpr is attached to, or was and keeps counters for (state gone).");
	for (int i = 0; i < npl; i++) {
		fputs("xdpr_link_info{", f);
		label(f, "dev", pl[i].name, true);
		label(f, "mode", xdpr_mode_name(pl[i].mode), false);
		label(f, "state", pl[i].gone ? "gone" : "attached", false);
		fprintf(f, "} 1\n");
	}
	for (int w = 0; w < 2; w++) {
		char name[64];

		snprintf(name, sizeof(name), "xdpr_%s_total", what[w]);
		head(f, name, "counter", w ? "Bytes of the packets the fast path handled, by "
		     "arriving interface and reason (its verdict)." : "Packets the fast path handled, "
		     "by arriving interface and reason (its verdict).");
		for (int i = 0; i < npl; i++)
			for (int r = 0; r < XDPR_REASON_MAX; r++) {
				fprintf(f, "%s{", name);
				label(f, "dev", pl[i].name, true);
				label(f, "reason", xdpr_reason_name(r), false);
				fprintf(f, "} %llu\n", (unsigned long long)(w ? sum[i].reason[r].bytes
									: sum[i].reason[r].packets));
			}
	}
	if (!per_cpu)
		goto out;
	for (int w = 0; w < 2; w++) {
		char name[64];

		snprintf(name, sizeof(name), "xdpr_cpu_%s_total", what[w]);
		head(f, name, "counter", w ? "xdpr_bytes_total per CPU." : "xdpr_packets_total per CPU.");
		for (int i = 0; i < npl; i++)
			for (int c = 0; c < ncpu; c++)
				for (int r = 0; r < XDPR_REASON_MAX; r++) {
					const struct xdpr_ctr *k = &all[(size_t)i * ncpu + c].reason[r];
					char cs[16];

					if (!k->packets)
						continue; /* per CPU: only what happened */
					snprintf(cs, sizeof(cs), "%d", c);
					fprintf(f, "%s{", name);
					label(f, "dev", pl[i].name, true);
					label(f, "reason", xdpr_reason_name(r), false);
					label(f, "cpu", cs, false);
					fprintf(f, "} %llu\n", (unsigned long long)(w ? k->bytes : k->packets));
				}
	}
out:
	free(cpu);
	free(sum);
	free(all);
	return ret;
}

static int links_metrics(FILE *f, struct xdpr *x, bool per_cpu, char *err, size_t len)
{
	struct plink pl[2 * XDPR_MAX_IFACES];
	int npl = 0;

	for (int i = 0; i < x->nlinks; i++)
		if (x->links[i].has_cfg)
			pl[npl++] = (struct plink){ x->links[i].name, x->links[i].mode, x->links[i].cfg.slot, false };
	for (int i = 0; i < x->ngone; i++)
		pl[npl++] = (struct plink){ x->gone[i].name, x->gone[i].mode, x->gone[i].slot, true };
	return links_write(f, x, pl, npl, per_cpu, err, len);
}

static int nat_metrics(FILE *f, struct xdpr *x, char *err, size_t len)
{
	static struct xdpr_rule_info ri[XDPR_NAT_MAX_RULES];
	static const char *pname[3] = { "tcp", "udp", "icmp" };
	struct xdpr_held *held = NULL;
	struct xdpr_nat_mem m;
	int n = xdpr_nat_list(x, ri, XDPR_NAT_MAX_RULES), nh = 0;
	char a[INET_ADDRSTRLEN], id[16];

	if (n > 0)
		nh = xdpr_nat_held(x, &held);
	if (n < 0 || nh < 0 || xdpr_nat_mem(x, &m)) {
		free(held);
		snprintf(err, len, "%s", x->err);
		return -EIO;
	}
	head(f, "xdpr_nat_sessions", "gauge", "NAT sessions in the table now (expired ones not yet swept included).");
	fprintf(f, "xdpr_nat_sessions %llu\n", (unsigned long long)(m.entries / 2));
	head(f, "xdpr_nat_sessions_limit", "gauge", "NAT sessions the tables hold (nat limit sessions).");
	fprintf(f, "xdpr_nat_sessions_limit %u\n", m.sessions);
	head(f, "xdpr_nat_memory_bytes", "gauge", "Bytes the NAT tables take now.");
	fprintf(f, "xdpr_nat_memory_bytes %llu\n", (unsigned long long)m.in_use);
	head(f, "xdpr_nat_rule_events_total", "counter", "NAT events by rule (translations, sessions, refusals).");
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%u", ri[i].id);
		for (int e = 0; e < XDPR_NE_MAX; e++) {
			fputs("xdpr_nat_rule_events_total{", f);
			label(f, "rule", id, true);
			label(f, "dev", ri[i].dev, false);
			label(f, "event", xdpr_nat_event_name(e), false);
			fprintf(f, "} %llu\n", (unsigned long long)ri[i].ev[e]);
		}
	}
	head(f, "xdpr_nat_ports_in_use", "gauge", "Outside ports (ICMP: echo ids) held per rule, outside address and protocol.");
	for (int i = 0; i < nh; i++) {
		inet_ntop(AF_INET, &held[i].addr, a, sizeof(a));
		snprintf(id, sizeof(id), "%u", held[i].rule);
		for (int p = 0; p < 3; p++) {
			fputs("xdpr_nat_ports_in_use{", f);
			label(f, "rule", id, true);
			label(f, "addr", a, false);
			label(f, "proto", pname[p], false);
			fprintf(f, "} %u\n", held[i].ports[p]);
		}
	}
	free(held);
	return 0;
}

struct route_w {
	FILE *f;
	int pass;
};

static int route_line(const struct xdpr_route_info *ri, void *arg)
{
	struct route_w *rw = arg;
	char a[INET6_ADDRSTRLEN], p[INET6_ADDRSTRLEN + 8];

	inet_ntop(ri->spec.family, ri->spec.addr, a, sizeof(a));
	snprintf(p, sizeof(p), "%s/%u", a, ri->spec.plen);
	fprintf(rw->f, "xdpr_route_%s_total{", rw->pass ? "bytes" : "packets");
	label(rw->f, "prefix", p, true);
	fprintf(rw->f, "} %llu\n", (unsigned long long)(rw->pass ? ri->sum.bytes : ri->sum.packets));
	return 0;
}

static int route_metrics(FILE *f, struct xdpr *x, char *err, size_t len)
{
	struct route_w rw = { f, 0 };

	for (rw.pass = 0; rw.pass < 2; rw.pass++) {
		head(f, rw.pass ? "xdpr_route_bytes_total" : "xdpr_route_packets_total", "counter",
		     rw.pass ? "Bytes that took a route-map route." : "Packets that took a route-map route.");
		if (xdpr_route_foreach(x, NULL, route_line, &rw)) {
			snprintf(err, len, "%s", x->err);
			return -EIO;
		}
	}
	return 0;
}

static int filter_metrics(FILE *f, struct xdpr *x, char *err, size_t len)
{
	struct xdpr_flt_list l;
	struct xdpr_ctr *ctr = NULL;
	__u64 live, expired, max;
	int ncpu, ret = 0;
	char num[16];

	if (xdpr_flt_get(x, &l)) {
		snprintf(err, len, "%s", x->err);
		return -EIO;
	}
	if (xdpr_flt_counters(x, &ctr, &ncpu) || xdpr_flt_flows(x, &live, &expired, &max)) {
		snprintf(err, len, "%s", x->err);
		ret = -EIO;
		goto out;
	}
	for (int w = 0; w < 2; w++) {
		const char *name = w ? "xdpr_filter_rule_bytes_total" : "xdpr_filter_rule_packets_total";

		head(f, name, "counter", w ? "Bytes of the packets each filter rule decided (rule: its place in the list; 0: the policy)."
		     : "Packets each filter rule decided (rule: its place in the list; 0: the policy).");
		for (size_t i = 0; i <= l.n; i++) {
			__u32 id = i ? l.r[i - 1].id : 0;
			unsigned long long v = 0;

			for (int c = 0; c < ncpu; c++)
				v += w ? ctr[(size_t)id * ncpu + c].bytes : ctr[(size_t)id * ncpu + c].packets;
			snprintf(num, sizeof(num), "%zu", i);
			fprintf(f, "%s{", name);
			label(f, "rule", num, true);
			fprintf(f, "} %llu\n", v);
		}
	}
	head(f, "xdpr_filter_flows", "gauge", "Flow states of accepted flows (live).");
	fprintf(f, "xdpr_filter_flows %llu\n", (unsigned long long)live);
	head(f, "xdpr_filter_flows_limit", "gauge", "Flow states the table holds.");
	fprintf(f, "xdpr_filter_flows_limit %llu\n", (unsigned long long)max);
out:
	free(ctr);
	xdpr_flt_list_free(&l);
	return ret;
}

int prom_write(FILE *f, struct xdpr *x, bool per_cpu, char *err, size_t len)
{
	int ret;

	head(f, "xdpr_links_attached", "gauge", "Interfaces xdpr is attached to.");
	fprintf(f, "xdpr_links_attached %d\n", x->nlinks);
	if (!x->nlinks)
		return 0;
	{
		struct xdpr_cfg c;

		head(f, "xdpr_nft_policy", "gauge", "1 while forwarded traffic goes through the kernel "
		     "because netfilter has rules XDP would bypass (pass_nft_policy), else 0.");
		fprintf(f, "xdpr_nft_policy %d\n", !xdpr_cfg_get(x, &c) && (c.flags & XDPR_CFG_NFT_POLICY));
	}
	ret = links_metrics(f, x, per_cpu, err, len);
	if (!ret)
		ret = nat_metrics(f, x, err, len);
	if (!ret)
		ret = route_metrics(f, x, err, len);
	if (!ret)
		ret = filter_metrics(f, x, err, len);
	return ret;
}
