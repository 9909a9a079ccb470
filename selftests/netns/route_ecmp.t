#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# route_ecmp.t - a route with two next hops spreads flows by their 5-tuple and
# keeps each flow on one next hop.  64 UDP flows (source ports 20000..20063),
# three datagrams each, interleaved:
#   - IPv4 and IPv6 over two devices (S1 behind r1, S2 behind r2, both
#     holding the destination address): captures on s1 and s2 tell which;
#   - IPv4 over two gateways on one link with static neighbours (made-up MACs):
#     the destination MAC in a capture on s1 tells which; the add leaves the
#     static neighbours as they were.
# Both next hops get flows, no flow is split, the route counts every datagram.
. "$(dirname "$0")/route_lib.sh"
need tcpdump python3

FLOWS=64
PER=3
SPORT0=20000

rt_topo_create re
rt_serve "$S1" 198.18.0.1/32 2001:db8:300::1/128 198.18.1.1/32
rt_serve "$S2" 198.18.0.1/32 2001:db8:300::1/128
rt_attach
R1MAC=$(mac "$R" r1)
R2MAC=$(mac "$R" r2)
S1MAC=$(mac "$S1" s1)
S2MAC=$(mac "$S2" s2)

# sports FILE: "sport count" per source port of the UDP datagrams in a capture.
sports() {
	cap_read "$1" -q | grep -Eo '(\.|\b)[0-9]+ > [0-9a-f:.]+\.9000: UDP' |
		sed -E 's/^\.?([0-9]+) >.*/\1/' | sort -n | uniq -c | awk '{print $2, $1}'
}

# check_split DESC FILE_A FILE_B: the flows as seen at two next hops.
check_split() {
	local desc=$1 a b both n_a n_b bad
	a=$(sports "$2")
	b=$(sports "$3")
	n_a=$(grep -c . <<<"$a")
	n_b=$(grep -c . <<<"$b")
	is "$((n_a + n_b))" "$FLOWS" "$desc: all $FLOWS flows arrived, each at one next hop only"
	both=$(join <(cut -d' ' -f1 <<<"$a" | sort) <(cut -d' ' -f1 <<<"$b" | sort))
	is "$both" "" "$desc: no flow was seen at both next hops"
	bad=$(printf '%s\n%s\n' "$a" "$b" | awk -v per="$PER" 'NF && $2 != per')
	is "$bad" "" "$desc: every flow has its $PER datagrams at its one next hop"
	num "$n_a" -ge 8 "$desc: next hop 1 got >= 8 flows ($n_a)"
	num "$n_b" -ge 8 "$desc: next hop 2 got >= 8 flows ($n_b)"
}

# ---- IPv4 over r1 and r2
ok "route add 198.18.0.0/24 via 10.0.2.2 dev r1 via 10.0.3.2 dev r2" \
	xdpr route add 198.18.0.0/24 via 10.0.2.2 dev r1 via 10.0.3.2 dev r2
is "$(xdpr -j route show 198.18.0.0/24 | jq -c '.[0].nexthops')" \
	'[{"gateway":"10.0.2.2","dev":"r1"},{"gateway":"10.0.3.2","dev":"r2"}]' \
	"route show -j: both next hops, in order"
like "$(xdpr route show 198.18.0.0/24)" '^198\.18\.0\.0/24 +via 10\.0\.2\.2 dev r1 via 10\.0\.3\.2 dev r2 ' \
	"route show (text): both next hops"
f0=$(ctr "$R" r0 forwarded)
if cap_start "$S1" s1 "$T_TMP/e4a.pcap" 'udp dst port 9000' &&
	{ pa=$CAP_PID; cap_start "$S2" s2 "$T_TMP/e4b.pcap" 'udp dst port 9000'; }; then
	pb=$CAP_PID
	ok "send $FLOWS UDP flows x $PER datagrams to 198.18.0.1" \
		udp_flows "$C" 198.18.0.1 9000 "$FLOWS" "$PER" "$SPORT0"
	cap_stop "$pa"
	cap_stop "$pb"
	check_split "ip4 over r1/r2" "$T_TMP/e4a.pcap" "$T_TMP/e4b.pcap"
	is "$(cap_read "$T_TMP/e4a.pcap" | grep -Evc "^[0-9:.]+ $R1MAC > $S1MAC, ethertype IPv4 .*ttl 63,|^ ")" 0 \
		"ip4 at s1: every datagram from r1's MAC to s1's, TTL 63"
	is "$(cap_read "$T_TMP/e4b.pcap" | grep -Evc "^[0-9:.]+ $R2MAC > $S2MAC, ethertype IPv4 .*ttl 63,|^ ")" 0 \
		"ip4 at s2: every datagram from r2's MAC to s2's, TTL 63"
else
	fail "tcpdump did not start: the 8 checks of the capture were not made"
fi
is "$(rt_ctr 198.18.0.0/24)" $((FLOWS * PER)) "route 198.18.0.0/24 counted the $((FLOWS * PER)) datagrams"
num "$(grown "$f0" "$R" r0 forwarded)" -ge $((FLOWS * PER)) "r0 forwarded grew by >= $((FLOWS * PER))"

# ---- the same flows again: each goes where it went before
if cap_start "$S1" s1 "$T_TMP/e4a2.pcap" 'udp dst port 9000' &&
	{ pa=$CAP_PID; cap_start "$S2" s2 "$T_TMP/e4b2.pcap" 'udp dst port 9000'; }; then
	pb=$CAP_PID
	ok "send the same $FLOWS flows again" udp_flows "$C" 198.18.0.1 9000 "$FLOWS" "$PER" "$SPORT0"
	cap_stop "$pa"
	cap_stop "$pb"
	is "$(sports "$T_TMP/e4a2.pcap" | cut -d' ' -f1 | tr '\n' ' ')" \
		"$(sports "$T_TMP/e4a.pcap" | cut -d' ' -f1 | tr '\n' ' ')" \
		"ip4: the second time, s1 gets exactly the flows it got the first time"
	is "$(sports "$T_TMP/e4b2.pcap" | cut -d' ' -f1 | tr '\n' ' ')" \
		"$(sports "$T_TMP/e4b.pcap" | cut -d' ' -f1 | tr '\n' ' ')" \
		"ip4: ... and s2 exactly the flows it got the first time"
else
	fail "tcpdump did not start: the 3 checks of the capture were not made"
fi

# ---- IPv6 over r1 and r2
ok "route add 2001:db8:300::/48 via 2001:db8:2::2 dev r1 via 2001:db8:3::2 dev r2" \
	xdpr route add 2001:db8:300::/48 via 2001:db8:2::2 dev r1 via 2001:db8:3::2 dev r2
if cap_start "$S1" s1 "$T_TMP/e6a.pcap" 'udp dst port 9000' &&
	{ pa=$CAP_PID; cap_start "$S2" s2 "$T_TMP/e6b.pcap" 'udp dst port 9000'; }; then
	pb=$CAP_PID
	ok "send $FLOWS UDP flows x $PER datagrams to 2001:db8:300::1" \
		udp_flows "$C" 2001:db8:300::1 9000 "$FLOWS" "$PER" "$SPORT0"
	cap_stop "$pa"
	cap_stop "$pb"
	check_split "ip6 over r1/r2" "$T_TMP/e6a.pcap" "$T_TMP/e6b.pcap"
	is "$(cap_read "$T_TMP/e6a.pcap" | grep -Evc "^[0-9:.]+ $R1MAC > $S1MAC, ethertype IPv6 .*hlim 63,")" 0 \
		"ip6 at s1: every datagram from r1's MAC to s1's, hop limit 63"
	is "$(cap_read "$T_TMP/e6b.pcap" | grep -Evc "^[0-9:.]+ $R2MAC > $S2MAC, ethertype IPv6 .*hlim 63,")" 0 \
		"ip6 at s2: every datagram from r2's MAC to s2's, hop limit 63"
else
	fail "tcpdump did not start: the 8 checks of the capture were not made"
fi
is "$(rt_ctr 2001:db8:300::/48)" $((FLOWS * PER)) "route 2001:db8:300::/48 counted the $((FLOWS * PER)) datagrams"

# ---- IPv4 over two gateways on one link (static neighbours, made-up MACs)
GWA_MAC=02:00:00:00:aa:01
GWB_MAC=02:00:00:00:aa:02
ip -n "$R" neigh replace 10.0.2.10 lladdr $GWA_MAC dev r1 nud permanent
ip -n "$R" neigh replace 10.0.2.11 lladdr $GWB_MAC dev r1 nud permanent
ok "route add 198.18.1.0/24 via 10.0.2.10 dev r1 via 10.0.2.11 dev r1" \
	xdpr route add 198.18.1.0/24 via 10.0.2.10 dev r1 via 10.0.2.11 dev r1
# resolving the gateways must not touch neighbours the operator set by hand
is "$(ip -n "$R" -j -4 neigh show dev r1 | jq -r 'map(select(.dst | test("^10\\.0\\.2\\.1[01]$")) |
	"\(.dst) \(.lladdr // "-") \(.state | join(","))") | sort | join(" ")')" \
	"10.0.2.10 $GWA_MAC PERMANENT 10.0.2.11 $GWB_MAC PERMANENT" \
	"after the add, both static neighbours are still there and PERMANENT"
if cap_start "$S1" s1 "$T_TMP/e1.pcap" 'udp dst port 9000'; then
	ok "send $FLOWS UDP flows x $PER datagrams to 198.18.1.1" \
		udp_flows "$C" 198.18.1.1 9000 "$FLOWS" "$PER" "$SPORT0"
	cap_stop "$CAP_PID"
	# split the capture by destination MAC
	timeout 10 tcpdump -r "$T_TMP/e1.pcap" -w "$T_TMP/e1a.pcap" "ether dst $GWA_MAC" 2>/dev/null
	timeout 10 tcpdump -r "$T_TMP/e1.pcap" -w "$T_TMP/e1b.pcap" "ether dst $GWB_MAC" 2>/dev/null
	check_split "ip4 over two gateways on r1" "$T_TMP/e1a.pcap" "$T_TMP/e1b.pcap"
	is "$(cap_read "$T_TMP/e1.pcap" | grep -Evc "^[0-9:.]+ $R1MAC > ($GWA_MAC|$GWB_MAC), ethertype IPv4 .*ttl 63,|^ ")" 0 \
		"every datagram from r1's MAC to one of the two gateways' MACs, TTL 63"
else
	fail "tcpdump did not start: the 7 checks of the capture were not made"
fi
is "$(rt_ctr 198.18.1.0/24)" $((FLOWS * PER)) "route 198.18.1.0/24 counted the $((FLOWS * PER)) datagrams"

done_testing
