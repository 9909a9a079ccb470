// SPDX-License-Identifier: GPL-2.0
/*
 * flow.c - xdpr flow { meter | show | flush }: the flow meter (bpf/flow.h),
 * per-flow counters of forwarded packets, the ones IPFIX / NetFlow export.
 *
 *   flow meter on [sample N]    count 1 in N forwarded packets per CPU (default 1)
 *   flow meter off
 *   flow show                   the meter's state and every metered flow
 *   flow flush                  forget every metered flow
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include "cli.h"
#include "out.h"

#define FLOW_SAMPLE_MAX XDPR_SAMPLE_MAX

static void flow_usage(void)
{
	fprintf(stderr,
		"Usage: xdpr flow meter on [sample N]   (meter 1 in N forwarded packets per CPU, N 1..%d)\n"
		"       xdpr flow meter off\n"
		"       xdpr flow show\n"
		"       xdpr flow flush\n", FLOW_SAMPLE_MAX);
}

/* "on [sample N]" or "off": 0, or EXIT_USAGE with the message in err. */
static int parse_meter(int argc, char **argv, bool *on, __u32 *sample, char *err, size_t len)
{
	unsigned long n = 1;

	if (argc < 1) {
		snprintf(err, len, "expected \"flow meter on [sample N]\" or \"flow meter off\"");
		return EXIT_USAGE;
	}
	if (!strcmp(argv[0], "off")) {
		if (argc != 1) {
			snprintf(err, len, "unexpected \"%s\" after \"flow meter off\"", argv[1]);
			return EXIT_USAGE;
		}
		*on = false;
		*sample = 1;
		return 0;
	}
	if (strcmp(argv[0], "on")) {
		snprintf(err, len, "expected \"on\" or \"off\", not \"%s\"", argv[0]);
		return EXIT_USAGE;
	}
	if (argc == 3 && !strcmp(argv[1], "sample")) {
		if (parse_uint(argv[2], 1, FLOW_SAMPLE_MAX, &n)) {
			snprintf(err, len, "invalid sample \"%s\" (1 in N packets, N 1..%d)", argv[2],
				 FLOW_SAMPLE_MAX);
			return EXIT_USAGE;
		}
	} else if (argc == 2 && !strcmp(argv[1], "sample")) {
		snprintf(err, len, "\"sample\" needs a value");
		return EXIT_USAGE;
	} else if (argc != 1) {
		snprintf(err, len, "unknown meter argument \"%s\"", argv[1]);
		return EXIT_USAGE;
	}
	*on = true;
	*sample = n;
	return 0;
}

static int flow_meter(int argc, char **argv)
{
	static struct xdpr x;
	char err[256];
	__u32 sample;
	bool on;
	int ret;

	if (parse_meter(argc, argv, &on, &sample, err, sizeof(err)))
		return fail(EXIT_USAGE, "%s", err);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	ret = xdpr_flow_set(&x, on, sample) ? fail(EXIT_FAIL, "%s", x.err) : EXIT_OK;
	xdpr_close(&x);
	return ret;
}

static const char *proto_text(__u8 p, char *buf, size_t len)
{
	switch (p) {
	case IPPROTO_TCP: return "tcp";
	case IPPROTO_UDP: return "udp";
	case IPPROTO_ICMP: return "icmp";
	case IPPROTO_ICMPV6: return "icmpv6";
	}
	snprintf(buf, len, "%u", p);
	return buf;
}

static bool is_icmp(const struct xdpr_flow *f)
{
	return f->proto == IPPROTO_ICMP || f->proto == IPPROTO_ICMPV6;
}

static bool has_ports(const struct xdpr_flow *f)
{
	return f->proto == IPPROTO_TCP || f->proto == IPPROTO_UDP;
}

/* ADDR:PORT, [ADDR]:PORT (IPv6), or ADDR (no ports). */
static void endpoint(const struct xdpr_flow *f, const __u8 *a, __u16 port, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(f->family, a, s, sizeof(s));
	if (!has_ports(f))
		snprintf(buf, len, "%s", s);
	else
		snprintf(buf, len, f->family == AF_INET6 ? "[%s]:%u" : "%s:%u", s, port);
}

/* "SYN,ACK,FIN" (IPFIX tcpControlBits order, lowest first); "-" when none. */
static void tcp_flags_text(__u8 fl, char *buf, size_t len)
{
	static const char *const name[8] = { "FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR" };
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; i < 8 && n < len; i++)
		if (fl & (1u << i))
			n += snprintf(buf + n, len - n, "%s%s", n ? "," : "", name[i]);
	if (!buf[0])
		snprintf(buf, len, "-");
}

static void dev_name(__u32 ifindex, char *buf)
{
	if (!ifindex || !if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "%u", ifindex);
}

struct show_ctx {
	__u64 now;
	__u64 n;
};

static void addr_out(const char *key, const struct xdpr_flow *f, const __u8 *a)
{
	char s[INET6_ADDRSTRLEN];

	out_str(key, NULL, inet_ntop(f->family, a, s, sizeof(s)));
}

static int print_flow(const struct xdpr_flow *f, void *arg)
{
	struct show_ctx *s = arg;
	char src[64], dst[64], in[IF_NAMESIZE], out[IF_NAMESIZE], fl[40], pb[8];

	s->n++;
	dev_name(f->in_ifindex, in);
	dev_name(f->out_ifindex, out);
	out_obj_open(NULL);
	out_str("family", NULL, f->family == AF_INET6 ? "ipv6" : "ipv4");
	out_str("proto", "%-6s ", proto_text(f->proto, pb, sizeof(pb)));
	endpoint(f, f->src, f->sport, src, sizeof(src));
	endpoint(f, f->dst, f->dport, dst, sizeof(dst));
	out_text("%-21s %-21s ", src, dst);
	addr_out("src", f, f->src);
	out_u64("sport", NULL, f->sport);
	addr_out("dst", f, f->dst);
	out_u64("dport", NULL, f->dport);
	if (is_icmp(f)) {
		out_u64("icmp_type", NULL, f->dport >> 8);
		out_u64("icmp_code", NULL, f->dport & 0xff);
	}
	out_str("in", "%-8s ", in);
	out_u64("in_ifindex", NULL, f->in_ifindex);
	out_str("out", "%-8s ", out);
	out_u64("out_ifindex", NULL, f->out_ifindex);
	out_u64("packets", "%10llu ", f->packets);
	out_u64("bytes", "%12llu ", f->bytes);
	tcp_flags_text(f->tcp_flags, fl, sizeof(fl));
	out_u64("tcp_flags", NULL, f->tcp_flags);
	out_str("tcp_flags_text", "%-15s ", f->proto == IPPROTO_TCP ? fl : "-");
	out_u64("idle_ms", "%7llu", s->now > f->last_ns ? (s->now - f->last_ns) / 1000000 : 0);
	out_u64("duration_ms", NULL, (f->last_ns - f->first_ns) / 1000000);
	out_u64("first_ns", NULL, f->first_ns);
	out_u64("last_ns", NULL, f->last_ns);
	out_bool("src_translated", NULL, f->xlated & XDPR_FLOW_XSRC);
	out_bool("dst_translated", NULL, f->xlated & XDPR_FLOW_XDST);
	addr_out("xsrc", f, f->xsrc);
	out_u64("xsport", NULL, f->xsport);
	addr_out("xdst", f, f->xdst);
	out_u64("xdport", NULL, f->xdport);
	if (f->xlated) {
		endpoint(f, f->xsrc, f->xsport, src, sizeof(src));
		endpoint(f, f->xdst, f->xdport, dst, sizeof(dst));
		out_text("\n       left as %s %s", src, dst);
	}
	out_text("\n");
	out_obj_close();
	return 0;
}

static int flow_show(int argc, char **argv)
{
	static struct xdpr x;
	struct show_ctx s = {};
	__u64 unmetered, count, max;
	__u32 sample;
	struct timespec ts;
	bool on;
	int ret;

	if (argc)
		return fail(EXIT_USAGE, "unexpected \"%s\" after \"flow show\"", argv[0]);
	if ((ret = open_router(&x, 0)))
		return ret;
	if (xdpr_flow_get(&x, &on, &sample, &unmetered, &count, &max)) {
		ret = fail(EXIT_FAIL, "%s", x.err);
		xdpr_close(&x);
		return ret;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s.now = (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	out_obj_open(NULL);
	out_obj_open("meter");
	out_str("state", "meter %s", on ? "on" : "off");
	out_u64("sample", ", sample 1 in %llu", sample);
	out_u64("flows", ", %llu flows", count);
	out_u64("max", " of %llu", max);
	out_u64("unmetered", ", %llu packets unmetered (table full)\n", unmetered);
	out_obj_close();
	out_arr_open("flows");
	if (count)
		out_text("%-6s %-21s %-21s %-8s %-8s %10s %12s %-15s %7s\n", "PROTO", "SOURCE", "DESTINATION",
			 "IN", "OUT", "PACKETS", "BYTES", "TCP-FLAGS", "IDLE-MS");
	ret = xdpr_flow_foreach(&x, print_flow, &s);
	out_arr_close();
	out_obj_close();
	out_flush_doc();
	if (ret)
		ret = fail(EXIT_FAIL, "%s", x.err);
	xdpr_close(&x);
	return ret;
}

static int flow_flush(int argc, char **argv)
{
	static struct xdpr x;
	long n;
	int ret;

	if (argc)
		return fail(EXIT_USAGE, "unexpected \"%s\" after \"flow flush\"", argv[0]);
	if ((ret = open_router(&x, XDPR_O_LOCK)))
		return ret;
	n = xdpr_flow_flush(&x);
	if (n < 0) {
		ret = fail(EXIT_FAIL, "%s", x.err);
	} else {
		out_obj_open(NULL);
		out_u64("flows_removed", "flows removed: %llu\n", n);
		out_obj_close();
		out_flush_doc();
	}
	xdpr_close(&x);
	return ret;
}

static int flow_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	flow_usage();
	return EXIT_OK;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} flow_cmds[] = {
	{ "meter", flow_meter },
	{ "show",  flow_show },
	{ "list",  flow_show },
	{ "flush", flow_flush },
	{ "help",  flow_help },
};

int do_flow(int argc, char **argv)
{
	if (argc < 1)
		return flow_show(0, argv);
	for (size_t i = 0; i < sizeof(flow_cmds) / sizeof(flow_cmds[0]); i++)
		if (!strcmp(argv[0], flow_cmds[i].name))
			return flow_cmds[i].fn(argc - 1, argv + 1);
	return fail(EXIT_USAGE, "unknown flow command \"%s\" (meter, show, flush)", argv[0]);
}
