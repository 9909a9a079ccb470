// SPDX-License-Identifier: GPL-2.0
/* test_cli.c - command-line parsing, JSON writer and reason table; no privileges. */
#include <stdlib.h>
#include <string.h>
#include "../tap.h"
#include "cli.h"
#include "out.h"
#include "xdpr.skel.h"
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>

struct cli_opts opts;

int fail(int code, const char *fmt, ...)
{
	(void)fmt;
	return code;
}

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(fn, st, ...) fn(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), st, err, sizeof(err))

static char *capture(void (*emit)(void), bool json, bool pretty)
{
	static char buf[4096];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	out_init(f, json, pretty);
	emit();
	fclose(f);
	return buf;
}

static void emit_sample(void)
{
	out_obj_open(NULL);
	out_str("dev", "%s:", "r\"0\n");
	out_u64("packets", " %llu pkts", 18446744073709551615ULL);
	out_arr_open("cpus");
	out_obj_open(NULL);
	out_u64("cpu", " cpu%llu", 0);
	out_obj_close();
	out_obj_open(NULL);
	out_bool("up", " %s", true);
	out_obj_close();
	out_arr_close();
	out_arr_open("none");
	out_arr_close();
	out_double("rate", " %.1f\n", 2.5);
	out_obj_close();
	out_flush_doc();
}

int main(void)
{
	struct attach_args a;
	struct detach_args d;
	struct stats_args s;
	unsigned long v;
	char err[256];
	int names_ok = 1;

	tap_plan(68);

	tap_ok(PARSE(parse_attach, &a, "eth1", "eth2") == 0 && a.ndev == 2 &&
	       a.mode == XDPR_MODE_NATIVE && !a.force, "attach: two devices, native by default");
	tap_ok(PARSE(parse_attach, &a, "eth1", "mode", "skb", "force") == 0 && a.ndev == 1 &&
	       a.mode == XDPR_MODE_SKB && a.force, "attach: mode skb and force");
	tap_ok(PARSE(parse_attach, &a, "dev", "eth1", "mode", "native") == 0 &&
	       !strcmp(a.devs[0], "eth1"), "attach: 'dev' keyword");
	tap_ok(PARSE(parse_attach, &a, "eth1", "mode", "turbo") == EXIT_USAGE &&
	       strstr(err, "unknown mode \"turbo\""), "attach: bad mode is a usage error naming it");
	tap_ok(PARSE(parse_attach, &a, "eth1", "mode") == EXIT_USAGE, "attach: mode without value");
	tap_ok(PARSE(parse_attach, &a, "force") == EXIT_USAGE && strstr(err, "at least one device"),
	       "attach: no device");
	tap_ok(PARSE(parse_attach, &a, "averyveryverylongname0") == EXIT_USAGE &&
	       strstr(err, "invalid device name"), "attach: device name longer than IFNAMSIZ");
	tap_ok(PARSE(parse_attach, &a, "a/b") == EXIT_USAGE, "attach: '/' in a device name");

	tap_ok(PARSE(parse_detach, &d, "all") == 0 && d.ndev == 0, "detach: all");
	tap_ok(PARSE(parse_detach, &d, "eth1", "eth2") == 0 && d.ndev == 2, "detach: two devices");
	tap_ok(PARSE(parse_detach, &d, "eth1", "all") == EXIT_USAGE, "detach: all mixed with names");
	tap_ok(parse_detach(0, ARGV(NULL), &d, err, sizeof(err)) == EXIT_USAGE,
	       "detach: nothing named");

	tap_ok(parse_stats(0, ARGV(NULL), &s, err, sizeof(err)) == 0 && !s.dev && !s.interval,
	       "stats: no arguments");
	tap_ok(PARSE(parse_stats, &s, "show", "dev", "r0") == 0 && !strcmp(s.dev, "r0"),
	       "stats: show dev");
	tap_ok(PARSE(parse_stats, &s, "interval", "2", "count", "3") == 0 && s.interval == 2 &&
	       s.count == 3, "stats: interval and count");
	tap_ok(PARSE(parse_stats, &s, "interval", "0") == EXIT_USAGE &&
	       strstr(err, "invalid interval \"0\""), "stats: interval 0 refused");
	tap_ok(PARSE(parse_stats, &s, "interval", "1x") == EXIT_USAGE, "stats: interval 1x refused");
	tap_ok(PARSE(parse_stats, &s, "interval") == EXIT_USAGE, "stats: interval without value");
	tap_ok(PARSE(parse_stats, &s, "count", "3") == EXIT_USAGE, "stats: count without interval");
	tap_ok(PARSE(parse_stats, &s, "bogus") == EXIT_USAGE && strstr(err, "\"bogus\""),
	       "stats: unknown word named in the error");

	tap_ok(parse_uint("42", 1, 100, &v) == 0 && v == 42, "uint: in range");
	tap_ok(parse_uint("-1", 0, 100, &v) != 0, "uint: negative");
	tap_ok(parse_uint("101", 0, 100, &v) != 0, "uint: above max");
	tap_ok(parse_uint("99999999999999999999999", 0, ~0UL, &v) != 0, "uint: overflow");
	tap_ok(parse_uint("", 0, 100, &v) != 0, "uint: empty");

	tap_ok(!strcmp(capture(emit_sample, true, false),
		       "{\"dev\":\"r\\\"0\\n\",\"packets\":18446744073709551615,\"cpus\":[{\"cpu\":0},"
		       "{\"up\":true}],\"none\":[],\"rate\":2.500}\n"),
	       "json: compact document, escaping, u64 max, empty array");
	tap_ok(!strcmp(capture(emit_sample, false, false),
		       "r\"0\n: 18446744073709551615 pkts cpu0 yes 2.5\n"),
	       "text: the same calls print the text formats");
	tap_ok(strstr(capture(emit_sample, true, true), "{\n  \"dev\": \"r\\\"0\\n\",\n") != NULL,
	       "json: pretty output indents members");
	{
		char *p = capture(emit_sample, true, true);
		tap_ok(strstr(p, "\"none\": []") != NULL, "json: pretty empty array stays on one line");
	}

	for (int r = 0; r < XDPR_REASON_MAX; r++) {
		if (!strcmp(xdpr_reason_name(r), "unknown") || !strcmp(xdpr_reason_desc(r), "unknown"))
			names_ok = 0;
		for (int q = 0; q < r; q++)
			if (!strcmp(xdpr_reason_name(r), xdpr_reason_name(q)))
				names_ok = 0;
	}
	tap_ok(names_ok, "reasons: every reason has a unique name and a description");
	tap_ok(!strcmp(xdpr_reason_name(XDPR_REASON_MAX), "unknown"), "reasons: out of range");
	tap_ok(xdpr_reason_verdict(XDPR_FWD) == 4, "verdict: forwarded redirects");
	tap_ok(xdpr_reason_verdict(XDPR_PASS_TTL) == 2 &&
	       xdpr_reason_verdict(XDPR_PASS_NO_IFACE) == 2, "verdict: pass reasons pass");
	tap_ok(xdpr_reason_verdict(XDPR_DROP_SHORT) == 1, "verdict: drop reasons drop");
	tap_ok(xdpr_reason_verdict(XDPR_TX_ICMP_HOST_UNREACH) == 3 &&
	       xdpr_reason_verdict(XDPR_TX_FILTER_REJECT) == 3 &&
	       xdpr_reason_verdict(XDPR_PASS_NFT_POLICY) == 2 &&
	       xdpr_reason_verdict(XDPR_DROP_DDOS_BAN) == 1, "verdict: appended reasons keep their own");
	{
		/* the map list against the program built: each of its maps is there, by that name */
		static const bool prog[XM_MAX] = {
#define M_PROG(id, name, kind) [id] = XDPR_MK_##kind == XDPR_MK_PROG,
			XDPR_MAPS(M_PROG)
#undef M_PROG
		};
		struct xdpr_bpf *skel = xdpr_bpf__open();
		int missing = skel ? 0 : -1;

		for (int m = 0; skel && m < XM_MAX; m++)
			if (strlen(xdpr_map_name(m)) > 15 ||
			    (prog[m] && !bpf_object__find_map_by_name(skel->obj, xdpr_map_name(m)))) {
				printf("# map %s: not in the program, or its name too long\n", xdpr_map_name(m));
				missing++;
			}
		tap_ok(missing == 0, "maps: every map of the list the program has is in it, by that name");
		xdpr_bpf__destroy(skel);
	}
	tap_ok(!strcmp(xdpr_mode_name(XDPR_MODE_SKB), "skb") &&
	       !strcmp(xdpr_mode_name(XDPR_MODE_NATIVE), "native"), "mode names");
	{
		char t[32];
		fmt_time(0, t, sizeof(t));
		tap_ok(!strcmp(t, "1970-01-01T00:00:00Z"), "time: ISO 8601 UTC");
	}
	/* NAT rule grammar */
	{
		struct nat_rule_args n;
		__be32 net, mask;
		struct xdpr_cfg c = { .udp = 300 };

		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "masquerade") == 0 && !strcmp(n.dev, "eth2") &&
		       (n.r.flags & XDPR_NAT_MASQ) && n.r.src_mask == 0 && n.r.port_min == 1024 &&
		       n.r.port_max == 65535, "nat: masquerade with defaults (any source, ports 1024-65535)");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "src", "10.0.0.0/8", "to",
			     "198.51.100.10-198.51.100.13", "ports", "20000-60000") == 0 &&
		       n.r.src_net == htonl(0x0a000000) && n.r.src_mask == htonl(0xff000000) &&
		       n.r.pool_first == htonl(0xc633640a) && n.r.pool_count == 4 &&
		       n.r.port_min == 20000 && n.r.port_max == 60000, "nat: pool rule with range and ports");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "masquerade", "filter", "eif") == 0 &&
		       (n.r.flags & XDPR_NAT_EIF), "nat: filter eif");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "to", "192.0.2.1") == 0 && n.r.pool_count == 1,
		       "nat: single pool address");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2") == EXIT_USAGE && strstr(err, "exactly one"),
		       "nat: neither masquerade nor to");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "masquerade", "to", "192.0.2.1") == EXIT_USAGE,
		       "nat: both masquerade and to");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "masquerade", "ports", "5000-4000") ==
		       EXIT_USAGE && strstr(err, "invalid port range \"5000-4000\""), "nat: reversed port range");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "masquerade", "ports", "0-10") == EXIT_USAGE,
		       "nat: port 0");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "to", "10.0.0.5-10.0.0.1") == EXIT_USAGE &&
		       strstr(err, "invalid address range"), "nat: reversed address range");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "masquerade", "src", "10.0.1.1/24") ==
		       EXIT_USAGE && strstr(err, "host bits set in \"10.0.1.1/24\""), "nat: host bits set");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "masquerade", "src", "10.0.0.0/33") ==
		       EXIT_USAGE, "nat: prefix length 33");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "masquerade", "filter", "full") == EXIT_USAGE &&
		       strstr(err, "unknown filter \"full\""), "nat: unknown filter");
		tap_ok(PARSE(parse_nat_rule, &n, "in", "eth2", "masquerade") == EXIT_USAGE,
		       "nat: only 'out' rules");
		tap_ok(PARSE(parse_nat_rule, &n, "out", "eth2", "masquerade", "bogus", "x") == EXIT_USAGE &&
		       strstr(err, "\"bogus\""), "nat: unknown word named");
		tap_ok(parse_prefix4("0.0.0.0/0", &net, &mask, err, sizeof(err)) == 0 && mask == 0,
		       "prefix: default route");
		tap_ok(parse_prefix4("192.0.2.7", &net, &mask, err, sizeof(err)) == 0 && mask == 0xffffffff,
		       "prefix: bare address is a /32");
		tap_ok(parse_knobs("timeout", 1, ARGV("udp"), &c, err, sizeof(err)) == EXIT_USAGE &&
		       strstr(err, "needs a value"), "knobs: a word without its value");
		tap_ok(parse_knobs("timeout", 4, ARGV("udp", "120", "holddown", "0"), &c, err, sizeof(err)) == 0 &&
		       c.udp == 120 && c.holddown == 0, "knobs: timeout udp and holddown");
		tap_ok(parse_knobs("timeout", 2, ARGV("udp", "0"), &c, err, sizeof(err)) == EXIT_USAGE &&
		       c.udp == 120, "knobs: udp 0 refused, value unchanged");
		tap_ok(parse_knobs("limit", 2, ARGV("udp", "5"), &c, err, sizeof(err)) == EXIT_USAGE &&
		       strstr(err, "unknown limit \"udp\""), "knobs: words belong to their command");
	}
	/* route grammar (devices resolved: "lo" exists everywhere) */
	{
		struct xdpr_route_spec rs;

		tap_ok(PARSE(parse_route, &rs, "192.0.2.0/24", "blackhole") == 0 && rs.family == AF_INET &&
		       rs.plen == 24 && rs.r.action == XDPR_RT_BLACKHOLE, "route: blackhole");
		tap_ok(PARSE(parse_route, &rs, "2001:db8::/32", "pass") == 0 && rs.family == AF_INET6 &&
		       rs.plen == 32 && rs.r.action == XDPR_RT_PASS, "route: IPv6 pass");
		tap_ok(PARSE(parse_route, &rs, "10.0.0.0/8", "via", "127.0.0.2", "dev", "lo", "via",
			     "127.0.0.3", "dev", "lo") == 0 && rs.r.action == XDPR_RT_VIA && rs.r.nnh == 2 &&
		       rs.r.nh[1].gw[3] == 3 && rs.r.nh[0].ifindex == if_nametoindex("lo"),
		       "route: two next hops");
		tap_ok(PARSE(parse_route, &rs, "10.0.0.1/8", "blackhole") == EXIT_USAGE &&
		       strstr(err, "host bits set in \"10.0.0.1/8\""), "route: host bits set");
		tap_ok(PARSE(parse_route, &rs, "2001:db8::1/129", "pass") == EXIT_USAGE,
		       "route: IPv6 prefix length 129");
		tap_ok(PARSE(parse_route, &rs, "10.0.0.0/8", "via", "2001:db8::1", "dev", "lo") == EXIT_USAGE &&
		       strstr(err, "invalid gateway"), "route: IPv6 gateway for an IPv4 route");
		tap_ok(PARSE(parse_route, &rs, "10.0.0.0/8", "via", "127.0.0.2") == EXIT_USAGE &&
		       strstr(err, "needs \"GW dev DEV\""), "route: via without dev");
		tap_ok(PARSE(parse_route, &rs, "10.0.0.0/8", "via", "127.0.0.2", "dev", "nosuch0") == EXIT_FAIL &&
		       strstr(err, "cannot find device \"nosuch0\""), "route: unknown device is a runtime error");
		tap_ok(PARSE(parse_route, &rs, "10.0.0.0/8", "blackhole", "now") == EXIT_USAGE,
		       "route: words after blackhole");
		tap_ok(PARSE(parse_route, &rs, "10.0.0.0/8", "drop") == EXIT_USAGE &&
		       strstr(err, "unknown route word \"drop\""), "route: unknown action");
	}
	return tap_done();
}
