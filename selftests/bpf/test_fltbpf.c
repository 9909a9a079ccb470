// SPDX-License-Identifier: GPL-2.0
/*
 * test_fltbpf.c - the filter step of xdpr_main, one BPF_PROG_TEST_RUN per
 * packet, against the real kernel FIB in a private network namespace.
 *
 * Each case is a rule list (compiled by the library's xdpr_flt_compile, the
 * compiler the CLI uses, and installed into a slot the way the loader
 * does), a policy, and a sequence of packets, each with the reason it must
 * leave with.  The flow states carry over between the packets of a case
 * (that is how state is tested) and are cleared between cases.  Checked
 * per packet: the verdict, that exactly its reason counter moved, and the
 * rule counters; for reject, the answer's bytes (addresses, ports, flags,
 * sequence numbers, every checksum recomputed).
 * TAP on stdout; exit 1 if any case failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdpr_shared.h"
#include "libxdpr.h"
#include "core.h"
#include "xdpr.skel.h"
#include "harness.h"
#include "frame.h"

#define PEER_MAC "02:00:00:00:01:02"

struct dev {
	const char *name, *peer, *mac, *peer_mac;
	__u32 slot, ifindex;
	__u8 hw[6];
};

static struct dev devs[] = {
	{ .name = "r0", .peer = "c0", .mac = "02:00:00:00:01:01", .peer_mac = PEER_MAC, .slot = 1 },
	{ .name = "r1", .peer = "s0", .mac = "02:00:00:00:02:01", .peer_mac = "02:00:00:00:02:09", .slot = 2 },
	{ .name = "r2", .peer = "c2", .mac = "02:00:00:00:03:01", .peer_mac = "02:00:00:00:03:09", .slot = 3 },
};

static const char *const setup_cmds[] = {
	"ip addr add 10.0.1.1/24 dev r0",
	"ip addr add 10.0.2.1/24 dev r1",
	"ip addr add 10.0.3.1/24 dev r2",
	"ip -6 addr add 2001:db8:1::1/64 dev r0 nodad",
	"ip -6 addr add 2001:db8:2::1/64 dev r1 nodad",
	"ip neigh replace 10.0.1.2 lladdr " PEER_MAC " dev r0 nud permanent",
	"ip neigh replace 10.0.2.2 lladdr 02:00:00:00:02:02 dev r1 nud permanent",
	"ip neigh replace 10.0.2.3 lladdr 02:00:00:00:02:03 dev r1 nud permanent",
	"ip neigh replace 10.0.3.2 lladdr 02:00:00:00:03:02 dev r2 nud permanent",
	"ip -6 neigh replace 2001:db8:2::2 lladdr 02:00:00:00:02:02 dev r1 nud permanent",
	"ip -6 neigh replace 2001:db8:1::2 lladdr " PEER_MAC " dev r0 nud permanent",
};

static struct xdpr_bpf *skel;
static int prog_fd, stats_fd, ncpus, flows_fd;

enum { NOFRAG, FRAG_FIRST, FRAG_LATER };

struct pkt {
	const char *in;       /* ingress device, default r0 */
	int ip;               /* 4 (default) or 6 */
	const char *src, *dst;
	__u8 proto;           /* default UDP */
	__u32 sport, dport;   /* default 40000, 53 (Z: port 0); ICMP: the type in sport */
	__u8 tcp;             /* TCP flags, default SYN */
	int frag;             /* IPv4 fragments */
	__u16 frag_id;
	int exthdrs;          /* IPv6: this many destination-options headers first */
	__u16 l4len;          /* transport bytes, default header + 16 */
	int reason;
	int rule;             /* 1-based rule that must count it; 0: none; -1: the policy */
	/* before the packet: the flow table emptied as "filter flows flush" does (FLUSH), or
	   without telling the CPUs' copies, as an eviction would (FORGET); the next state this
	   CPU makes starts churn (CHURN); the UDP timeout under XDPR_FLT_HOT_LONG_TIMEOUT
	   (SHORT, until the case ends); then wait_ms */
	int before;
	int wait_ms;
	bool hot;             /* after it, a CPU holds a copy of its flow's state */
	bool cold;            /* after it, no CPU holds a live copy of its flow's state */
	int way;              /* 1-4: source port way_port[way - 1], four flows of one copy set */
};

#define FLUSH  1
#define FORGET 2
#define FUTURE 3 /* every state's last_seen 2 s ahead: another CPU refreshed it after this packet read the clock */
#define CHURN  4
#define SHORT  5

struct fcase {
	const char *name;
	int policy;           /* XDPR_FLT_ACCEPT (default) or XDPR_FLT_DROP */
	const char *rules[8];
	struct pkt p[8];
};

#define ACCEPT XDPR_FLT_ACCEPT
#define DROP   XDPR_FLT_DROP
#define Z      0x10000 /* port 0 (0 is "the default") */
#define TCPF_S 0x02
#define TCPF_A 0x10
#define TCPF_R 0x04
#define TCPF_F 0x01

static const struct fcase cases[] = {
	{ "policy drop, no rule: dropped as policy", DROP, { NULL },
	  { { .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 }, { .ip = 6, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 } } },
	{ "port range bounds 1000-2000", ACCEPT, { "proto udp dport 1000-2000 drop" },
	  { { .dport = 999, .reason = XDPR_FWD, .rule = -1 }, { .dport = 1000, .reason = XDPR_DROP_FILTER, .rule = 1 },
	    { .dport = 2000, .reason = XDPR_DROP_FILTER, .rule = 1 }, { .dport = 2001, .reason = XDPR_FWD, .rule = -1 } } },
	{ "port 0 and 65535 bounds", ACCEPT, { "proto udp sport 0 drop", "proto udp dport 65535 drop" },
	  { { .sport = Z, .dport = 100, .reason = XDPR_DROP_FILTER, .rule = 1 },
	    { .sport = 1, .dport = 65535, .reason = XDPR_DROP_FILTER, .rule = 2 },
	    { .sport = 65535, .dport = 65534, .reason = XDPR_FWD, .rule = -1 },
	    { .sport = 1, .dport = Z, .reason = XDPR_FWD, .rule = -1 } } },
	{ "first match wins", ACCEPT, { "dst 10.0.2.0/24 accept", "dst 10.0.2.2/32 drop" },
	  { { .reason = XDPR_FWD, .rule = 1 } } },
	{ "first match wins, other order", ACCEPT, { "dst 10.0.2.2/32 drop", "dst 10.0.2.0/24 accept" },
	  { { .reason = XDPR_DROP_FILTER, .rule = 1 }, { .dst = "10.0.2.3", .reason = XDPR_FWD, .rule = 2 } } },
	{ "/0 of IPv4 never matches IPv6", DROP, { "src 0.0.0.0/0 accept" },
	  { { .reason = XDPR_FWD, .rule = 1 }, { .ip = 6, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 } } },
	{ "/32 and /128 exact", ACCEPT, { "src 10.0.1.2/32 proto udp dport 53 drop", "src 2001:db8:1::2/128 proto udp dport 53 drop" },
	  { { .reason = XDPR_DROP_FILTER, .rule = 1 }, { .src = "10.0.1.3", .reason = XDPR_FWD, .rule = -1 },
	    { .ip = 6, .reason = XDPR_DROP_FILTER, .rule = 2 }, { .ip = 6, .src = "2001:db8:1::3", .reason = XDPR_FWD, .rule = -1 } } },
	{ "IPv6 prefix and port", DROP, { "src 2001:db8:1::/64 proto tcp dport 22 accept" },
	  { { .ip = 6, .proto = IPPROTO_TCP, .dport = 22, .reason = XDPR_FWD, .rule = 1 },
	    { .ip = 6, .proto = IPPROTO_TCP, .dport = 23, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 },
	    { .proto = IPPROTO_TCP, .dport = 22, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 } } },
	{ "icmp-type: echo request accepted, timestamp not", DROP, { "proto icmp icmp-type 8 accept" },
	  { { .proto = IPPROTO_ICMP, .sport = 8, .reason = XDPR_FWD, .rule = 1 },
	    { .proto = IPPROTO_ICMP, .sport = 13, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 } } },
	{ "in and out devices", ACCEPT, { "in r0 out r2 drop", "in r2 drop", "in r0 out r1 proto udp drop" },
	  { { .reason = XDPR_DROP_FILTER, .rule = 3 }, { .dst = "10.0.3.2", .reason = XDPR_DROP_FILTER, .rule = 1 },
	    { .proto = IPPROTO_TCP, .reason = XDPR_FWD, .rule = -1 } } },
	{ "stateful: replies pass on state, unsolicited replies do not", DROP, { "proto tcp dport 80 accept" },
	  { { .proto = IPPROTO_TCP, .dport = 80, .tcp = TCPF_S, .reason = XDPR_FWD, .rule = 1 },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .proto = IPPROTO_TCP, .sport = 80, .dport = 40000,
	      .tcp = TCPF_S | TCPF_A, .reason = XDPR_FWD },
	    { .proto = IPPROTO_TCP, .dport = 80, .tcp = TCPF_A, .reason = XDPR_FWD },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .proto = IPPROTO_TCP, .sport = 80, .dport = 40001,
	      .tcp = TCPF_S | TCPF_A, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000,
	      .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 } } },
	{ "stateful UDP and ICMP echo", DROP, { "proto udp dport 53 accept", "proto icmp icmp-type 8 accept" },
	  { { .reason = XDPR_FWD, .rule = 1 },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000, .reason = XDPR_FWD },
	    { .proto = IPPROTO_ICMP, .sport = 8, .reason = XDPR_FWD, .rule = 2 },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .proto = IPPROTO_ICMP, .sport = 0, .reason = XDPR_FWD } } },
	{ "state invalid drop: SYN+ACK without state", ACCEPT, { "state invalid drop" },
	  { { .proto = IPPROTO_TCP, .tcp = TCPF_S | TCPF_A, .reason = XDPR_DROP_FILTER, .rule = 1 },
	    { .proto = IPPROTO_TCP, .tcp = TCPF_R, .reason = XDPR_DROP_FILTER, .rule = 1 },
	    { .proto = IPPROTO_TCP, .tcp = TCPF_A, .reason = XDPR_FWD, .rule = -1 },
	    { .proto = IPPROTO_ICMP, .sport = 0, .reason = XDPR_DROP_FILTER, .rule = 1 } } },
	{ "a rule naming established sees established packets", ACCEPT,
	  { "proto tcp dport 81 state new accept", "state established drop" },
	  { { .proto = IPPROTO_TCP, .dport = 81, .tcp = TCPF_S, .reason = XDPR_FWD, .rule = 1 },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .proto = IPPROTO_TCP, .sport = 81, .dport = 40000,
	      .tcp = TCPF_S | TCPF_A, .reason = XDPR_DROP_FILTER, .rule = 2 },
	    /* a copy exists (the SYN made it), but rules that see established packets classify them */
	    { .proto = IPPROTO_TCP, .dport = 81, .tcp = TCPF_A, .reason = XDPR_DROP_FILTER, .rule = 2 } } },
	{ "reject: TCP RST, UDP ICMP prohibited, IPv6 both", ACCEPT,
	  { "proto tcp dport 23 reject", "proto udp dport 69 reject" },
	  { { .proto = IPPROTO_TCP, .dport = 23, .tcp = TCPF_S, .reason = XDPR_TX_FILTER_REJECT, .rule = 1 },
	    { .proto = IPPROTO_TCP, .dport = 23, .tcp = TCPF_A, .reason = XDPR_TX_FILTER_REJECT, .rule = 1 },
	    { .proto = IPPROTO_TCP, .dport = 23, .tcp = TCPF_R, .reason = XDPR_DROP_FILTER, .rule = 1 },
	    { .dport = 69, .reason = XDPR_TX_FILTER_REJECT, .rule = 2 },
	    { .ip = 6, .proto = IPPROTO_TCP, .dport = 23, .tcp = TCPF_S, .reason = XDPR_TX_FILTER_REJECT, .rule = 1 },
	    { .ip = 6, .dport = 69, .reason = XDPR_TX_FILTER_REJECT, .rule = 2 },
	    { .ip = 6, .dport = 69, .l4len = 25, .reason = XDPR_TX_FILTER_REJECT, .rule = 2 } } },
	{ "fragments follow their first fragment", DROP, { "proto udp dport 53 accept" },
	  { { .frag = FRAG_FIRST, .frag_id = 7, .reason = XDPR_PASS_IP4_FRAG, .rule = 1 },
	    { .frag = FRAG_LATER, .frag_id = 7, .reason = XDPR_PASS_IP4_FRAG },
	    { .frag = FRAG_LATER, .frag_id = 8, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 },
	    { .frag = FRAG_FIRST, .frag_id = 9, .l4len = 4, .reason = XDPR_DROP_FILTER_HDR } } },
	{ "IPv6 extension headers do not hide the transport header", ACCEPT, { "proto tcp dport 22 drop" },
	  { { .ip = 6, .proto = IPPROTO_TCP, .dport = 22, .exthdrs = 1, .reason = XDPR_DROP_FILTER, .rule = 1 },
	    { .ip = 6, .proto = IPPROTO_TCP, .dport = 80, .exthdrs = 2, .reason = XDPR_PASS_IP6_EXTHDR, .rule = -1 },
	    { .ip = 6, .proto = IPPROTO_TCP, .dport = 80, .exthdrs = 9, .reason = XDPR_DROP_FILTER_HDR } } },
	{ "an ICMP error is related only through its quote", DROP, { "proto icmp icmp-type 13 accept" },
	  { { .proto = IPPROTO_ICMP, .sport = 13, .reason = XDPR_FWD, .rule = 1 },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .proto = IPPROTO_ICMP, .sport = 3,
	      .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 } } },
	{ "IPv4 UDP: established packets pass on the CPU's copy; a flush voids it, an eviction after a second", DROP,
	  { "proto udp dport 53 accept" },
	  { { .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000, .reason = XDPR_FWD,
	      .hot = true },
	    { .before = FORGET, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000,
	      .reason = XDPR_FWD },
	    { .before = FLUSH, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000,
	      .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 },
	    { .reason = XDPR_FWD, .rule = 1 },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000, .reason = XDPR_FWD },
	    { .before = FORGET, .wait_ms = 1100, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53,
	      .dport = 40000, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 } } },
	{ "IPv4: a copy lives a second while the table is quiet, a tenth when its state's timeout is short", DROP,
	  { "proto udp dport 53 accept" },
	  { { .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000, .reason = XDPR_FWD,
	      .hot = true },
	    { .before = FORGET, .wait_ms = 200, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53,
	      .dport = 40000, .reason = XDPR_FWD },
	    { .wait_ms = 900, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000,
	      .reason = XDPR_DROP_FILTER_POLICY, .rule = -1, .cold = true },
	    { .before = SHORT, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000, .reason = XDPR_FWD,
	      .hot = true },
	    { .before = FORGET, .wait_ms = 200, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53,
	      .dport = 40000, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1, .cold = true } } },
	{ "IPv4: churn voids every copy and makes them a tenth of a second long", DROP,
	  { "proto udp dport 53 accept" },
	  { { .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000, .reason = XDPR_FWD,
	      .hot = true },
	    { .before = CHURN, .sport = 40001, .reason = XDPR_FWD, .rule = 1 },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40001, .reason = XDPR_FWD,
	      .hot = true },
	    { .before = FORGET, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000,
	      .reason = XDPR_DROP_FILTER_POLICY, .rule = -1, .cold = true },
	    { .wait_ms = 200, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40001,
	      .reason = XDPR_DROP_FILTER_POLICY, .rule = -1, .cold = true } } },
	{ "IPv4 TCP: SYN, FIN and RST always ask the flow table", DROP, { "proto tcp dport 80 accept" },
	  { { .proto = IPPROTO_TCP, .dport = 80, .tcp = TCPF_S, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .proto = IPPROTO_TCP, .sport = 80, .dport = 40000,
	      .tcp = TCPF_S | TCPF_A, .reason = XDPR_FWD },
	    { .proto = IPPROTO_TCP, .dport = 80, .tcp = TCPF_A, .reason = XDPR_FWD, .hot = true },
	    { .before = FORGET, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .proto = IPPROTO_TCP, .sport = 80,
	      .dport = 40000, .tcp = TCPF_A, .reason = XDPR_FWD },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .proto = IPPROTO_TCP, .sport = 80, .dport = 40000,
	      .tcp = TCPF_F | TCPF_A, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .proto = IPPROTO_TCP, .sport = 80, .dport = 40000,
	      .tcp = TCPF_R, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 },
	    { .proto = IPPROTO_TCP, .dport = 80, .tcp = TCPF_S, .reason = XDPR_FWD, .rule = 1 } } },
	{ "IPv4: a copy knows the directions its flow has shown", DROP, { "proto udp dport 53 accept" },
	  { { .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .before = FORGET, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000,
	      .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 } } },
	{ "IPv4: three copies a set; a fourth flow of the set asks the table while they live, then takes a lapsed way",
	  DROP, { "proto udp dport 53 accept" },
	  { { .way = 1, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .way = 2, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .way = 3, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .way = 4, .reason = XDPR_FWD, .rule = 1, .cold = true },
	    { .way = 1, .reason = XDPR_FWD, .hot = true },
	    { .way = 4, .reason = XDPR_FWD, .cold = true },
	    { .way = 4, .wait_ms = 1100, .reason = XDPR_FWD, .hot = true },
	    { .way = 1, .reason = XDPR_FWD, .hot = true } } },
	{ "IPv4: a lapsed copy asks the table again: kept while the state lives, gone with it", DROP,
	  { "proto udp dport 53 accept" },
	  { { .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .wait_ms = 1100, .reason = XDPR_FWD, .hot = true },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000, .reason = XDPR_FWD,
	      .hot = true },
	    { .before = FORGET, .wait_ms = 1100, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53,
	      .dport = 40000, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1, .cold = true } } },
	{ "IPv4: a reply's lapsed copy asks the table and is made again for the reply's direction", DROP,
	  { "proto udp dport 53 accept" },
	  { { .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000, .reason = XDPR_FWD,
	      .hot = true },
	    { .wait_ms = 1100, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000,
	      .reason = XDPR_FWD, .hot = true } } },
	{ "a state refreshed after the packet read the clock (last_seen ahead of now) is live, not expired", DROP,
	  { "proto udp dport 53 accept" },
	  { { .reason = XDPR_FWD, .rule = 1 },
	    { .before = FUTURE, .in = "r1", .src = "10.0.2.2", .dst = "10.0.1.2", .sport = 53, .dport = 40000,
	      .reason = XDPR_FWD } } },
	{ "traffic for the router itself never meets the filter", DROP, { NULL },
	  { { .dst = "10.0.2.1", .reason = XDPR_PASS_FIB_NOT_FWDED }, { .ip = 6, .dst = "2001:db8:1::1", .reason = XDPR_PASS_FIB_NOT_FWDED } } },
	{ "IPv6 UDP: established packets pass on the CPU's copy; a flush voids it, an eviction after a second", DROP,
	  { "proto udp dport 53 accept" },
	  { { .ip = 6, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .ip = 6, .in = "r1", .src = "2001:db8:2::2", .dst = "2001:db8:1::2", .sport = 53, .dport = 40000,
	      .reason = XDPR_FWD, .hot = true },
	    { .ip = 6, .before = FORGET, .in = "r1", .src = "2001:db8:2::2", .dst = "2001:db8:1::2", .sport = 53,
	      .dport = 40000, .reason = XDPR_FWD },
	    { .ip = 6, .before = FLUSH, .in = "r1", .src = "2001:db8:2::2", .dst = "2001:db8:1::2", .sport = 53,
	      .dport = 40000, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1, .cold = true },
	    { .ip = 6, .reason = XDPR_FWD, .rule = 1 },
	    { .ip = 6, .in = "r1", .src = "2001:db8:2::2", .dst = "2001:db8:1::2", .sport = 53, .dport = 40000,
	      .reason = XDPR_FWD, .hot = true },
	    { .ip = 6, .before = FORGET, .wait_ms = 1100, .in = "r1", .src = "2001:db8:2::2", .dst = "2001:db8:1::2",
	      .sport = 53, .dport = 40000, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1, .cold = true } } },
	{ "IPv6: a copy knows the directions its flow has shown; extension headers always ask the flow table", DROP,
	  { "proto udp dport 53 accept" },
	  { { .ip = 6, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .ip = 6, .before = FORGET, .in = "r1", .src = "2001:db8:2::2", .dst = "2001:db8:1::2", .sport = 53,
	      .dport = 40000, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1, .cold = true },
	    { .ip = 6, .reason = XDPR_FWD },
	    { .ip = 6, .exthdrs = 1, .reason = XDPR_PASS_IP6_EXTHDR, .rule = 1 } } },
	{ "IPv6 TCP: SYN, FIN and RST always ask the flow table", DROP, { "proto tcp dport 80 accept" },
	  { { .ip = 6, .proto = IPPROTO_TCP, .dport = 80, .tcp = TCPF_S, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .ip = 6, .in = "r1", .src = "2001:db8:2::2", .dst = "2001:db8:1::2", .proto = IPPROTO_TCP, .sport = 80,
	      .dport = 40000, .tcp = TCPF_S | TCPF_A, .reason = XDPR_FWD },
	    { .ip = 6, .proto = IPPROTO_TCP, .dport = 80, .tcp = TCPF_A, .reason = XDPR_FWD, .hot = true },
	    { .ip = 6, .before = FORGET, .in = "r1", .src = "2001:db8:2::2", .dst = "2001:db8:1::2",
	      .proto = IPPROTO_TCP, .sport = 80, .dport = 40000, .tcp = TCPF_A, .reason = XDPR_FWD },
	    { .ip = 6, .in = "r1", .src = "2001:db8:2::2", .dst = "2001:db8:1::2", .proto = IPPROTO_TCP, .sport = 80,
	      .dport = 40000, .tcp = TCPF_F | TCPF_A, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 },
	    { .ip = 6, .in = "r1", .src = "2001:db8:2::2", .dst = "2001:db8:1::2", .proto = IPPROTO_TCP, .sport = 80,
	      .dport = 40000, .tcp = TCPF_R, .reason = XDPR_DROP_FILTER_POLICY, .rule = -1 },
	    { .ip = 6, .proto = IPPROTO_TCP, .dport = 80, .tcp = TCPF_S, .reason = XDPR_FWD, .rule = 1 } } },
	{ "IPv6: two copies a set; a third flow of the set asks the table while they live, then takes a lapsed way",
	  DROP, { "proto udp dport 53 accept" },
	  { { .ip = 6, .way = 1, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .ip = 6, .way = 2, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .ip = 6, .way = 3, .reason = XDPR_FWD, .rule = 1, .cold = true },
	    { .ip = 6, .way = 1, .reason = XDPR_FWD, .hot = true },
	    { .ip = 6, .way = 3, .reason = XDPR_FWD, .cold = true },
	    { .ip = 6, .way = 3, .wait_ms = 1100, .reason = XDPR_FWD, .hot = true },
	    { .ip = 6, .before = FORGET, .way = 3, .reason = XDPR_FWD },
	    { .ip = 6, .way = 1, .reason = XDPR_FWD, .rule = 1 } } },
	/* their states forgotten, only a copy passes a packet without rule 1 counting it */
	{ "IPv4: each of a set's three ways passes its own flow, and no other", DROP, { "proto udp dport 53 accept" },
	  { { .way = 1, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .way = 2, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .way = 3, .reason = XDPR_FWD, .rule = 1, .hot = true },
	    { .before = FORGET, .way = 3, .reason = XDPR_FWD },
	    { .way = 2, .reason = XDPR_FWD },
	    { .way = 1, .reason = XDPR_FWD },
	    { .way = 4, .reason = XDPR_FWD, .rule = 1 } } },
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* ---- rules: the words of "filter add", parsed just enough for these tables ---- */

static void prefix(const char *s, struct xdpr_flt_addr *a)
{
	char buf[64], *slash;

	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = 0;
	a->kind = XDPR_FA_PREFIX;
	a->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(a->family, buf, a->addr) != 1)
		die("bad prefix \"%s\"", s);
	a->plen = slash ? atoi(slash) : a->family == AF_INET ? 32 : 128;
}

static void range(const char *s, __u16 r[2])
{
	r[0] = atoi(s);
	r[1] = strchr(s, '-') ? atoi(strchr(s, '-') + 1) : r[0];
}

static struct xdpr_flt_spec rule(const char *words, __u32 id)
{
	struct xdpr_flt_spec r = { .id = id };
	char buf[256], *save, *w;

	snprintf(buf, sizeof(buf), "%s", words);
	for (w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *v = NULL;

		if (!strcmp(w, "accept") || !strcmp(w, "drop") || !strcmp(w, "reject")) {
			r.action = w[0] == 'a' ? XDPR_FLT_ACCEPT : w[0] == 'd' ? XDPR_FLT_DROP : XDPR_FLT_REJECT;
			continue;
		}
		v = strtok_r(NULL, " ", &save);
		if (!v)
			die("rule \"%s\": \"%s\" needs a value", words, w);
		if (!strcmp(w, "src")) {
			prefix(v, &r.src);
		} else if (!strcmp(w, "dst")) {
			prefix(v, &r.dst);
		} else if (!strcmp(w, "proto")) {
			r.has |= XDPR_FH_PROTO;
			r.proto = !strcmp(v, "tcp") ? 6 : !strcmp(v, "udp") ? 17 : !strcmp(v, "icmp") ? 1 :
				  !strcmp(v, "icmpv6") ? 58 : atoi(v);
		} else if (!strcmp(w, "sport")) {
			r.has |= XDPR_FH_SPORT;
			range(v, r.sport);
		} else if (!strcmp(w, "dport")) {
			r.has |= XDPR_FH_DPORT;
			range(v, r.dport);
		} else if (!strcmp(w, "icmp-type")) {
			r.has |= XDPR_FH_ICMP_TYPE;
			r.icmp_type = atoi(v);
		} else if (!strcmp(w, "in") || !strcmp(w, "out")) {
			char *name = w[0] == 'i' ? r.in : r.out;

			snprintf(name, IF_NAMESIZE, "%s", v);
			*(w[0] == 'i' ? &r.in_ifindex : &r.out_ifindex) = if_nametoindex(v);
		} else if (!strcmp(w, "state")) {
			r.has |= XDPR_FH_STATE;
			for (char *s2, *st = strtok_r(v, ",", &s2); st; st = strtok_r(NULL, ",", &s2))
				r.states |= 1 << (!strcmp(st, "new") ? XDPR_FS_NEW :
						  !strcmp(st, "established") ? XDPR_FS_ESTABLISHED :
						  !strcmp(st, "related") ? XDPR_FS_RELATED : XDPR_FS_INVALID);
		} else {
			die("rule \"%s\": unknown word \"%s\"", words, w);
		}
	}
	if (!r.action)
		die("rule \"%s\" has no action", words);
	return r;
}

/* ---- a compiled slot into the program's maps, as the loader puts it ---- */

/* Array elements sit 8-byte aligned in the map (and its mmap), whatever their size. */
static int inner_array(const char *name, __u32 vsize, size_t n, __u32 flags, const void *vals)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, 4, vsize, n ? n : 1, &o);
	size_t stride = (vsize + 7) & ~7u, bytes = stride * n;
	char *m;

	if (fd < 0)
		die("cannot create %s: %s", name, strerror(errno));
	if (!n)
		return fd;
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		die("cannot mmap %s: %s", name, strerror(errno));
	for (size_t i = 0; i < n; i++)
		memcpy(m + i * stride, (const char *)vals + i * vsize, vsize);
	munmap(m, bytes);
	return fd;
}

static int inner_keyed(enum bpf_map_type type, const char *name, __u32 ksize, __u32 max, const void *keys,
		       const __u32 *vals, size_t n)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(type, name, ksize, sizeof(__u32), max, &o);

	if (fd < 0)
		die("cannot create %s: %s", name, strerror(errno));
	for (size_t i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, (const char *)keys + i * ksize, &vals[i], BPF_ANY))
			die("cannot fill %s: %s", name, strerror(errno));
	return fd;
}

static void set_inner(struct bpf_map *outer, __u32 slot, int fd)
{
	if (bpf_map_update_elem(bpf_map__fd(outer), &slot, &fd, BPF_ANY))
		die("cannot put the %s inner map in slot %u: %s", bpf_map__name(outer), slot, strerror(errno));
	close(fd);
}

static void clear_map(int fd, __u32 ksize)
{
	char key[64], next[64];

	while (!bpf_map_get_next_key(fd, NULL, next)) {
		memcpy(key, next, ksize);
		if (bpf_map_delete_elem(fd, key))
			die("cannot clear a map: %s", strerror(errno));
	}
}

/* Date every flow state's last_seen to now + ahead_ns (the program's clock); how many. */
static int date_flows(__s64 ahead_ns)
{
	struct xdpr_flow_key key, next;
	struct xdpr_flt_flow f;
	struct timespec ts;
	void *prev = NULL;
	int n = 0;

	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts))
		die("cannot read the clock: %s", strerror(errno));
	while (!bpf_map_get_next_key(flows_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(flows_fd, &key, &f))
			continue;
		f.last_seen = ts.tv_sec * 1000000000ULL + ts.tv_nsec + ahead_ns;
		if (bpf_map_update_elem(flows_fd, &key, &f, BPF_EXIST))
			die("cannot date a flow state: %s", strerror(errno));
		n++;
	}
	return n;
}

/* The filter's sweep (xdpr_flt_gc, XDPR_GC_EXPIRED): how many states it deleted. */
static __u32 sweep_expired(void)
{
	struct xdpr_flt_gc_cmd cmd = { .op = XDPR_GC_EXPIRED };
	unsigned char in[64] = { 0 }, out[64];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = sizeof(in), .data_out = out,
		    .data_size_out = sizeof(out), .repeat = 1);

	memcpy(in, &cmd, sizeof(cmd));
	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xdpr_flt_gc), &o) || o.retval != XDP_PASS)
		die("cannot run xdpr_flt_gc: %s", strerror(errno));
	memcpy(&cmd, out, sizeof(cmd));
	return cmd.deleted;
}

/* Empty the flow table; lapse: and void the CPUs' copies, as "filter flows flush" does. */
static void forget_flows(bool lapse)
{
	struct xdpr_cfg cfg;
	__u32 zero = 0;

	clear_map(flows_fd, sizeof(struct xdpr_flow_key));
	if (!lapse)
		return;
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.xdpr_cfg), &zero, &cfg))
		die("cannot read xdpr_cfg: %s", strerror(errno));
	cfg.flt_gen++;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_cfg), &zero, &cfg, BPF_ANY))
		die("cannot write xdpr_cfg: %s", strerror(errno));
}

static void install(const struct fcase *c, __u32 slot)
{
	struct xdpr_flt_spec spec[8];
	struct xdpr_flt_list l = { .policy = c->policy ?: ACCEPT };
	struct xdpr_flt_image img = {};
	struct xdpr_cfg cfg;
	char err[256] = "";
	__u32 zero = 0;
	int n = 0;

	while (n < 8 && c->rules[n]) {
		spec[n] = rule(c->rules[n], n + 1);
		n++;
	}
	l.n = n;
	l.r = spec;
	if (xdpr_flt_compile(&l, &img, err, sizeof(err)))
		die("case \"%s\": compile: %s", c->name, err);
	set_inner(skel->maps.xdpr_flt_word, slot,
		  inner_array("flt_word", 8, img.nword, BPF_F_MMAPABLE | BPF_F_INNER_MAP, img.word));
	set_inner(skel->maps.xdpr_flt_desc, slot,
		  inner_array("flt_desc", sizeof(*img.desc), img.ndesc, BPF_F_MMAPABLE | BPF_F_INNER_MAP, img.desc));
	set_inner(skel->maps.xdpr_flt_val, slot, inner_array("flt_val", 4, XDPR_FV_MAX, BPF_F_MMAPABLE, img.val));
	set_inner(skel->maps.xdpr_flt_rule, slot,
		  inner_array("flt_rule", sizeof(*img.rule), img.nrule, BPF_F_MMAPABLE | BPF_F_INNER_MAP, img.rule));
	set_inner(skel->maps.xdpr_flt_lpm4, slot,
		  inner_keyed(BPF_MAP_TYPE_LPM_TRIE, "flt_lpm4", sizeof(*img.lpm4), 2 * XDPR_FLT_LPM_MAX, img.lpm4,
			      img.lpm4_val, img.nlpm4));
	set_inner(skel->maps.xdpr_flt_lpm6, slot,
		  inner_keyed(BPF_MAP_TYPE_LPM_TRIE, "flt_lpm6", sizeof(*img.lpm6), 2 * XDPR_FLT_LPM_MAX, img.lpm6,
			      img.lpm6_val, img.nlpm6));
	set_inner(skel->maps.xdpr_flt_if, slot,
		  inner_keyed(BPF_MAP_TYPE_HASH, "flt_if", sizeof(*img.ifk), 2 * XDPR_MAX_IFACES_FLT, img.ifk,
			      img.if_val, img.nif));
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_flt_hdr), &slot, &img.hdr, BPF_ANY) ||
	    bpf_map_lookup_elem(bpf_map__fd(skel->maps.xdpr_cfg), &zero, &cfg))
		die("cannot set the filter header: %s", strerror(errno));
	cfg.flags |= XDPR_CFG_FILTER;
	cfg.flt_slot = slot | (img.hdr.flags & XDPR_FLT_SEE_EST ? XDPR_FLT_SLOT_SEE_EST : 0);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_cfg), &zero, &cfg, BPF_ANY))
		die("cannot switch the filter on: %s", strerror(errno));
	xdpr_flt_image_free(&img);
	forget_flows(true);
	clear_map(bpf_map__fd(skel->maps.xdpr_flt_frags), sizeof(struct xdpr_frag_key));
}

/*
 * Source ports whose flows to port 53 (UDP) have their copies in one set
 * (the datapath's hashes, xdpr_shared.h): four from 10.0.1.2 to 10.0.2.2,
 * three from 2001:db8:1::2 to 2001:db8:2::2 (its sets have two ways).
 */
static __u32 way_port[4], way6_port[3];

/* The set of the copy of a flow from port to 53 (UDP) between the tests' default addresses. */
static __u32 way_set(int ip, __u32 port)
{
	__u32 ports = xdpr_flt_hot_ports(htons(port), htons(53));
	struct in6_addr s6, d6;
	struct in_addr s, d;

	if (ip == 6) {
		inet_pton(AF_INET6, "2001:db8:1::2", &s6);
		inet_pton(AF_INET6, "2001:db8:2::2", &d6);
		return xdpr_flt_hot6_set_of(s6.s6_addr32, d6.s6_addr32, ports, IPPROTO_UDP);
	}
	inet_pton(AF_INET, "10.0.1.2", &s);
	inet_pton(AF_INET, "10.0.2.2", &d);
	return xdpr_flt_hot_set_of(s.s_addr, d.s_addr, ports, IPPROTO_UDP);
}

static void find_way_ports(int ip, __u32 *out, int want)
{
	__u32 set = way_set(ip, 40001);
	int n = 0;

	for (__u32 port = 40001; port < 65536 && n < want; port++)
		if (way_set(ip, port) == set)
			out[n++] = port;
	if (n < want)
		die("no %d ports share an IPv%d copy set", want, ip);
}

static __u32 pkt_sport(const struct pkt *p)
{
	if (p->way)
		return p->ip == 6 ? way6_port[(p->way - 1) % 3] : way_port[p->way - 1];
	return p->sport;
}

/* The kernel's tick count now: the program's clock for the copies (bpf_jiffies64). */
static __u64 jiffies_now(void)
{
	FILE *f = fopen("/proc/timer_list", "r");
	char line[256];
	__u64 j = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "jiffies: %llu", (unsigned long long *)&j) == 1)
			break;
	if (f)
		fclose(f);
	if (!j)
		die("cannot read jiffies from /proc/timer_list");
	return j;
}

/*
 * Which CPUs (a bit each, the first 64) hold a live copy of the state of
 * the packet's direction of its flow?  One read a CPU: the set the datapath
 * puts it in (the hash of its tuple as it appears; IPv6: both ways), in
 * that CPU's region, so that the check takes milliseconds and the copies
 * checked do not lapse (a tenth of a second at the shortest) while a case
 * runs.
 */
static __u64 hot_cpus(const struct pkt *p)
{
	__be16 sp = htons(pkt_sport(p) ?: 40000), dp = htons(p->dport ?: 53);
	__u32 zero = 0, k, ports = xdpr_flt_hot_ports(sp, dp), gen;
	__u8 proto = p->proto ?: IPPROTO_UDP;
	unsigned int hz = skel->rodata->xdpr_hz;
	int n = ncpus < 64 ? ncpus : 64;
	struct in6_addr s6, d6;
	struct in_addr s, d;
	struct xdpr_cfg cfg;
	__u64 now, cpus = 0;

	/* the program's generation and clock: only a live copy counts */
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.xdpr_cfg), &zero, &cfg))
		die("cannot read xdpr_cfg: %s", strerror(errno));
	gen = cfg.flt_gen + skel->bss->xdpr_flt_epoch;
	now = jiffies_now();
	if (p->ip == 6) {
		int fd = bpf_map__fd(skel->maps.xdpr_flt_hot6);

		inet_pton(AF_INET6, p->src ?: "2001:db8:1::2", &s6);
		inet_pton(AF_INET6, p->dst ?: "2001:db8:2::2", &d6);
		k = xdpr_flt_hot6_set_of(s6.s6_addr32, d6.s6_addr32, ports, proto);
		for (int c = 0; c < n; c++)
			for (__u32 w = 0; w < XDPR_FLT_HOT6_WAYS; w++) {
				__u32 i = ((__u32)c << XDPR_FLT_HOT6_BITS | k) * XDPR_FLT_HOT6_WAYS + w;
				struct xdpr_flt_hot6 e;

				if (bpf_map_lookup_elem(fd, &i, &e))
					die("cannot read CPU %d's IPv6 flow copies: %s", c, strerror(errno));
				if (e.gen == gen && e.proto == proto && e.ports == ports && !memcmp(e.s, &s6, 16) &&
				    !memcmp(e.d, &d6, 16) && xdpr_flt_hot_live(e.until, now, hz))
					cpus |= 1ULL << c;
			}
		return cpus;
	}
	inet_pton(AF_INET, p->src ?: "10.0.1.2", &s);
	inet_pton(AF_INET, p->dst ?: "10.0.2.2", &d);
	k = xdpr_flt_hot_set_of(s.s_addr, d.s_addr, ports, proto);
	for (int c = 0; c < n; c++) {
		__u32 i = (__u32)c << XDPR_FLT_HOT_BITS | k; /* CPU c's region */
		struct xdpr_flt_hot_set v;

		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.xdpr_flt_hot), &i, &v))
			die("cannot read CPU %d's flow copies: %s", c, strerror(errno));
		for (int w = 0; w < XDPR_FLT_HOT_WAYS && v.gen == gen; w++) {
			const struct xdpr_flt_hot *e = &v.e[w];

			if (e->proto == proto && e->s == s.s_addr && e->d == d.s_addr && e->ports == ports &&
			    xdpr_flt_hot_live(e->until, now, hz))
				cpus |= 1ULL << c;
		}
	}
	return cpus;
}

static bool hot_copy(const struct pkt *p)
{
	return hot_cpus(p) != 0;
}

/* ---- frames ---- */

static struct dev *dev_get(const char *name)
{
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		if (!strcmp(devs[i].name, name))
			return &devs[i];
	die("no device %s", name);
	return NULL;
}

static __u32 l4_psum(const struct frame *f, int ip, __u8 proto, int l4len)
{
	const __u8 *l3 = f->b + f->l3;

	return ip == 4 ? sum16(l3 + 12, 8, proto + l4len) : sum16(l3 + 8, 32, proto + l4len);
}

static void build(struct frame *f, const struct pkt *p)
{
	int ip = p->ip ?: 4, ext = p->exthdrs * 8;
	__u8 proto = p->proto ?: IPPROTO_UDP;
	int hl = ip == 6 ? 40 : 20;
	int l4len = p->l4len ?: l4_hdr_len(proto) + 16;
	__u8 *l4;

	memset(f, 0, sizeof(*f));
	memcpy(f->b, dev_get(p->in ?: "r0")->hw, 6);
	mac_parse(p->in && strcmp(p->in, "r0") ? dev_get(p->in)->peer_mac : PEER_MAC, f->b + 6);
	f->l3 = ETH_HLEN;
	f->l4 = f->l3 + hl + ext;
	f->len = f->l4 + l4len;
	if (ip == 4) {
		struct iphdr *h = ip4(f);

		put16(f->b + 12, ETH_P_IP);
		h->version = 4, h->ihl = 5, h->tot_len = htons(hl + l4len), h->ttl = 64, h->protocol = proto;
		h->id = htons(p->frag_id);
		if (p->frag == FRAG_FIRST)
			h->frag_off = htons(0x2000);          /* MF */
		else if (p->frag == FRAG_LATER)
			h->frag_off = htons(0x2000 | 0x00b9); /* MF, offset 1480 */
		if (inet_pton(AF_INET, p->src ?: "10.0.1.2", &h->saddr) != 1 ||
		    inet_pton(AF_INET, p->dst ?: "10.0.2.2", &h->daddr) != 1)
			die("bad IPv4 address");
	} else {
		struct ipv6hdr *h = ip6(f);

		put16(f->b + 12, ETH_P_IPV6);
		h->version = 6, h->payload_len = htons(ext + l4len), h->hop_limit = 64;
		h->nexthdr = ext ? 60 : proto;
		if (inet_pton(AF_INET6, p->src ?: "2001:db8:1::2", &h->saddr) != 1 ||
		    inet_pton(AF_INET6, p->dst ?: "2001:db8:2::2", &h->daddr) != 1)
			die("bad IPv6 address");
		for (int i = 0; i < p->exthdrs; i++) {
			__u8 *e = f->b + f->l3 + hl + i * 8;

			e[0] = i + 1 < p->exthdrs ? 60 : proto; /* next header; length 0: 8 bytes */
			e[2] = 1, e[3] = 4;                     /* PadN of 4 bytes */
		}
	}
	l4 = f->b + f->l4;
	if (l4len >= 8)
		build_l4(f, proto, 0, l4len, 0);
	if (proto == IPPROTO_UDP || proto == IPPROTO_TCP) {
		put16(l4, pkt_sport(p) ? pkt_sport(p) & 0xffff : 40000);
		put16(l4 + 2, p->dport ? p->dport & 0xffff : 53);
	}
	if (proto == IPPROTO_TCP)
		l4[13] = p->tcp ?: TCPF_S;
	if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6)
		l4[0] = p->sport;
	if (l4len >= 8) { /* the checksum again, over what changed */
		int ck = proto == IPPROTO_TCP ? 16 : proto == IPPROTO_UDP ? 6 : 2;
		__u32 ps = proto == IPPROTO_ICMP ? 0 : l4_psum(f, ip, proto, l4len);

		put16(l4 + ck, 0);
		put16(l4 + ck, ~fold(sum16(l4, l4len, ps)) ?: (proto == IPPROTO_UDP ? 0xffff : 0));
	}
	if (ip == 4)
		ip4_fix(f);
}

/* A checksum over data (with a pseudo-header sum) is right when it folds to 0xffff. */
static bool csum_ok(const __u8 *p, int len, __u32 psum)
{
	return fold(sum16(p, len, psum)) == 0xffff;
}

/* The answer to a rejected packet: addresses, ports, flags, sequence numbers, checksums. */
static bool check_reject(const struct frame *in, const struct frame *out, const struct pkt *p)
{
	int ip = p->ip ?: 4, hl = ip == 6 ? 40 : 20;
	__u8 proto = p->proto ?: IPPROTO_UDP, ans = out->b[ip == 6 ? ETH_HLEN + 6 : ETH_HLEN + 9];
	const __u8 *oi = in->b + in->l3, *oo = out->b + ETH_HLEN, *l4 = oo + hl;
	int alen = ip == 6 ? 16 : 4, aoff = ip == 6 ? 8 : 12, l4len;
	bool ok = true;

	if (memcmp(out->b, in->b + 6, 6) || memcmp(out->b + 6, in->b, 6)) {
		note("answer's MACs are not the packet's swapped");
		ok = false;
	}
	if (memcmp(oo + aoff, oi + aoff + alen, alen) || memcmp(oo + aoff + alen, oi + aoff, alen)) {
		note("answer's addresses are not the packet's swapped");
		ok = false;
	}
	if (ip == 4 && !csum_ok(oo, 20, 0)) {
		note("answer's IPv4 header checksum is wrong");
		ok = false;
	}
	l4len = out->len - ETH_HLEN - hl;
	if (proto == IPPROTO_TCP) {
		const __u8 *ot = in->b + in->l4;
		__u32 seq = (__u32)get16(ot + 4) << 16 | get16(ot + 6);
		__u32 ack = (__u32)get16(ot + 8) << 16 | get16(ot + 10);
		__u32 aseq = (__u32)get16(l4 + 4) << 16 | get16(l4 + 6);
		__u32 aack = (__u32)get16(l4 + 8) << 16 | get16(l4 + 10);
		int paylen = in->len - in->l4 - 20;

		if (ans != IPPROTO_TCP || l4len != 20) {
			note("answer is not a bare TCP segment (protocol %u, %d bytes)", ans, l4len);
			return false;
		}
		if (get16(l4) != get16(ot + 2) || get16(l4 + 2) != get16(ot)) {
			note("RST ports are not the packet's swapped");
			ok = false;
		}
		if (p->tcp & TCPF_A) {
			if (l4[13] != TCPF_R || aseq != ack) {
				note("RST to an ACK: flags 0x%02x (want 0x04), seq %u (want the ACK %u)", l4[13], aseq, ack);
				ok = false;
			}
		} else if (l4[13] != (TCPF_R | TCPF_A) || aack != seq + paylen + 1 || aseq != 0) {
			note("RST to a SYN: flags 0x%02x (want 0x14), seq %u ack %u (want 0, %u)", l4[13], aseq, aack,
			     seq + paylen + 1);
			ok = false;
		}
		if (!csum_ok(l4, 20, ip == 4 ? sum16(oo + 12, 8, IPPROTO_TCP + 20) : sum16(oo + 8, 32, IPPROTO_TCP + 20))) {
			note("RST checksum is wrong");
			ok = false;
		}
		return ok;
	}
	if (ip == 4) {
		int quote = in->len - in->l3 > 28 ? 28 : in->len - in->l3;

		if (ans != IPPROTO_ICMP || l4[0] != 3 || l4[1] != 13) {
			note("answer is not ICMP 3/13 (protocol %u, type %u code %u)", ans, l4[0], l4[1]);
			return false;
		}
		if (memcmp(l4 + 8, oi, quote) || !csum_ok(l4, l4len, 0)) {
			note("ICMP quote or checksum wrong");
			ok = false;
		}
	} else {
		int quote = l4len - 8;

		if (ans != IPPROTO_ICMPV6 || l4[0] != 1 || l4[1] != 1) {
			note("answer is not ICMPv6 1/1 (next header %u, type %u code %u)", ans, l4[0], l4[1]);
			return false;
		}
		if (quote <= 0 || quote > in->len - in->l3 || memcmp(l4 + 8, oi, quote) ||
		    !csum_ok(l4, l4len, sum16(oo + 8, 32, IPPROTO_ICMPV6 + l4len))) {
			note("ICMPv6 quote (%d bytes) or checksum wrong", quote);
			ok = false;
		}
	}
	return ok;
}

static void rule_counts(__u64 *pk)
{
	struct xdpr_ctr *v = calloc(ncpus, sizeof(*v));

	if (!v)
		die("out of memory");
	for (__u32 id = 0; id < 9; id++) {
		pk[id] = 0;
		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.xdpr_flt_stats), &id, v))
			die("cannot read rule counters: %s", strerror(errno));
		for (int c = 0; c < ncpus; c++)
			pk[id] += v[c].packets;
	}
	free(v);
}

/* The UDP timeout in xdpr_cfg (the others as the loader sets them). */
static void set_udp_timeout(__u32 secs)
{
	struct xdpr_cfg cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.xdpr_cfg), &zero, &cfg))
		die("cannot read xdpr_cfg: %s", strerror(errno));
	cfg.udp = secs;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_cfg), &zero, &cfg, BPF_ANY))
		die("cannot write xdpr_cfg: %s", strerror(errno));
}

/*
 * Every CPU's count of states made in this tenth of a second (now: jiffies)
 * set to n, and churn over: n = xdpr_flt_churn_n - 1 makes the next state
 * start churn.
 */
static void set_churn(__u64 now, __u32 n)
{
	struct xdpr_flt_churn *v = calloc(ncpus, sizeof(*v));
	__u32 zero = 0;

	if (!v)
		die("out of memory");
	for (int c = 0; c < ncpus; c++)
		v[c] = (struct xdpr_flt_churn){ .win = now, .n = n };
	skel->bss->xdpr_flt_churn_until = 0;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_flt_churn), &zero, v, BPF_ANY))
		die("cannot write xdpr_flt_churn: %s", strerror(errno));
	free(v);
}

static bool run_pkt(const struct fcase *c, int k)
{
	const struct pkt *p = &c->p[k];
	struct dev *in = dev_get(p->in ?: "r0");
	struct xdpr_ctr before[XDPR_REASON_MAX], after[XDPR_REASON_MAX];
	__u64 rb[9], ra[9];
	struct frame f, out;
	__u32 verdict = 0;
	bool ok = true;
	int err;

	if (p->before == FUTURE && date_flows(2000000000LL) < 1) {
		note("packet %d: no flow state to date", k + 1);
		return false;
	}
	if (p->before == FLUSH || p->before == FORGET)
		forget_flows(p->before == FLUSH);
	if (p->before == SHORT)
		set_udp_timeout(XDPR_FLT_HOT_LONG_TIMEOUT - 1);
	if (p->wait_ms)
		usleep(p->wait_ms * 1000);
	build(&f, p);
	read_slot_sum(stats_fd, ncpus, in->slot, before);
	rule_counts(rb);
	if (p->before == CHURN) /* last: the tenth must not end before the packet */
		set_churn(jiffies_now(), skel->rodata->xdpr_flt_churn_n - 1);
	err = run_frame(prog_fd, in->ifindex, &f, &out, &verdict);
	if (err) {
		note("packet %d: BPF_PROG_TEST_RUN: %s", k + 1, strerror(-err));
		return false;
	}
	read_slot_sum(stats_fd, ncpus, in->slot, after);
	rule_counts(ra);
	if (verdict != (__u32)xdpr_reason_verdict(p->reason)) {
		note("packet %d: verdict %u, expected %d (%s)", k + 1, verdict, xdpr_reason_verdict(p->reason),
		     xdpr_reason_name(p->reason));
		ok = false;
	}
	for (int r = 0; r < XDPR_REASON_MAX; r++) {
		__u64 d = after[r].packets - before[r].packets;

		if (d != (r == p->reason)) {
			note("packet %d: reason %s moved by %llu (expected %s)", k + 1, xdpr_reason_name(r),
			     (unsigned long long)d, xdpr_reason_name(p->reason));
			ok = false;
		}
	}
	for (int id = 0; id < 9; id++) {
		__u64 want = (p->rule > 0 && id == p->rule) || (p->rule < 0 && id == 0);

		if (ra[id] - rb[id] != want) {
			note("packet %d: %s %d counted %llu, expected %llu", k + 1, id ? "rule" : "policy", id,
			     (unsigned long long)(ra[id] - rb[id]), (unsigned long long)want);
			ok = false;
		}
	}
	if (verdict == 2 && !same_bytes(&f, &out)) { /* the kernel gets it as it arrived */
		note("packet %d: handed to the kernel changed", k + 1);
		ok = false;
	}
	if (p->hot && !hot_copy(p)) {
		note("packet %d: no CPU holds a copy of its flow's state", k + 1);
		ok = false;
	}
	if (p->cold && hot_copy(p)) {
		note("packet %d: a CPU holds a live copy of its flow's state", k + 1);
		ok = false;
	}
	if (ok && p->reason == XDPR_TX_FILTER_REJECT && !check_reject(&f, &out, p)) {
		note("packet %d: the reject answer is wrong", k + 1);
		ok = false;
	}
	return ok;
}

static void setup_netns(void)
{
	if (sysctl_set("net/ipv4/ip_forward", "1") || sysctl_set("net/ipv6/conf/all/forwarding", "1"))
		die("cannot enable forwarding");
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		struct dev *d = &devs[i];
		struct xdpr_iface cfg = { .slot = d->slot, .flags = XDPR_IF_XMIT };

		if (sh("/sbin/ip link add %s address %s type veth peer name %s address %s", d->name, d->mac,
		       d->peer, d->peer_mac) ||
		    sh("/sbin/ip link set %s up && /sbin/ip link set %s up", d->name, d->peer))
			die("cannot create veth %s", d->name);
		d->ifindex = if_nametoindex(d->name);
		dev_mac(d->name, d->hw);
		memcpy(cfg.mac, d->hw, 6);
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_tx_ports), &d->ifindex, &d->ifindex, BPF_ANY) ||
		    bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_ifaces), &d->ifindex, &cfg, BPF_ANY))
			die("cannot register %s: %s", d->name, strerror(errno));
	}
	ifaces_changed(bpf_map__fd(skel->maps.xdpr_if_gen));
	for (size_t i = 0; i < sizeof(setup_cmds) / sizeof(setup_cmds[0]); i++)
		if (sh("/sbin/%s", setup_cmds[i]))
			die("setup failed: %s", setup_cmds[i]);
	/* the timeouts the loader sets: with none, a state would expire at the next clock tick */
	{
		struct xdpr_cfg cfg;
		__u32 zero = 0;

		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.xdpr_cfg), &zero, &cfg))
			die("cannot read xdpr_cfg: %s", strerror(errno));
		cfg.tcp_est = XDPR_DEF_TCP_EST;
		cfg.tcp_trans = XDPR_DEF_TCP_TRANS;
		cfg.udp = XDPR_DEF_UDP;
		cfg.icmp = XDPR_DEF_ICMP;
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.xdpr_cfg), &zero, &cfg, BPF_ANY))
			die("cannot write xdpr_cfg: %s", strerror(errno));
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 0;
	}
	if (unshare(CLONE_NEWNET))
		die("unshare(CLONE_NEWNET): %s", strerror(errno));
	{
		/* one CPU throughout: the flow copies are per CPU */
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(0, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			die("cannot pin to CPU 0: %s", strerror(errno));
	}
	skel = xdpr_bpf__open();
	if (!skel)
		die("cannot open the XDP program: %s", strerror(errno));
	/* as the loader sets them: copies live a second (a tenth in churn), a region of sets a CPU */
	xdpr_skel_prepare(skel);
	if (xdpr_bpf__load(skel))
		die("cannot load the XDP program: %s", strerror(errno));
	prog_fd = bpf_program__fd(skel->progs.xdpr_main);
	stats_fd = bpf_map__fd(skel->maps.xdpr_stats);
	nat_tabs_init(skel->obj, NULL, NULL, NULL, NULL, NULL, &flows_fd);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 1)
		die("cannot count CPUs: %s", strerror(-ncpus));
	setup_netns();
	find_way_ports(4, way_port, 4);
	find_way_ports(6, way6_port, 3);

	printf("1..%d\n", NCASES + 2);
	for (int i = 0; i < NCASES; i++) {
		const struct fcase *c = &cases[i];
		bool ok = true;

		install(c, i & 1); /* both slots */
		set_udp_timeout(XDPR_DEF_UDP);
		set_churn(0, 0); /* no churn: copies live a second */
		for (int k = 0; k < 8 && memcmp(&c->p[k], &(struct pkt){}, sizeof(struct pkt)); k++)
			ok &= run_pkt(c, k);
		tap(ok, c->name, NULL);
	}
	{
		/* the sweep reads the clock once before its walk: a state refreshed during it is live */
		static const struct fcase one = { "sweep", ACCEPT, { "proto udp dport 53 accept" },
						  { { .reason = XDPR_FWD, .rule = 1 } } };
		__u32 ahead, behind;
		bool ok;

		install(&one, 0);
		ok = run_pkt(&one, 0) && date_flows(2000000000LL) == 1;
		ahead = ok ? sweep_expired() : 0;
		ok = ok && date_flows(-(XDPR_DEF_UDP + 10) * 1000000000LL) == 1;
		behind = ok ? sweep_expired() : 0;
		if (ok && (ahead != 0 || behind != 1))
			note("the sweep deleted %u states dated 2 s ahead (want 0), %u dated past the UDP timeout (want 1)",
			     ahead, behind);
		tap(ok && ahead == 0 && behind == 1,
		    "the sweep keeps a state whose last_seen is ahead of its clock, and deletes an expired one", NULL);
	}
	if (ncpus < 2) {
		tap(true, "each CPU's copies in its own region", "one CPU: no other region to check");
	} else {
		/* a flow accepted on CPU 1 has its copies in CPU 1's region, and none in CPU 0's */
		static const struct fcase one = { "regions", DROP, { "proto udp dport 53 accept" },
						  { { .sport = 41000, .reason = XDPR_FWD, .rule = 1 },
						    { .ip = 6, .sport = 41000, .reason = XDPR_FWD, .rule = 1 } } };
		cpu_set_t cpu1;
		__u64 m4 = 0, m6 = 0;
		bool ok;

		install(&one, 0);
		CPU_ZERO(&cpu1);
		CPU_SET(1, &cpu1);
		if (sched_setaffinity(0, sizeof(cpu1), &cpu1))
			die("cannot pin to CPU 1: %s", strerror(errno));
		ok = run_pkt(&one, 0) && run_pkt(&one, 1);
		if (ok) {
			m4 = hot_cpus(&one.p[0]);
			m6 = hot_cpus(&one.p[1]);
		}
		if (ok && (m4 != 2 || m6 != 2))
			note("copies on CPUs %#llx (IPv4), %#llx (IPv6); want 0x2", (unsigned long long)m4,
			     (unsigned long long)m6);
		tap(ok && m4 == 2 && m6 == 2, "each CPU's copies in its own region (a flow accepted on CPU 1)", NULL);
		CPU_ZERO(&cpu1);
		CPU_SET(0, &cpu1);
		if (sched_setaffinity(0, sizeof(cpu1), &cpu1))
			die("cannot pin to CPU 0: %s", strerror(errno));
	}
	xdpr_bpf__destroy(skel);
	return tap_failed ? 1 : 0;
}
