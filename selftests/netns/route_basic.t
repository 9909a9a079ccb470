#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# route_basic.t - each route map action, proven on the wire and in counters:
# "via" forwards in the fast path (TTL / hop limit 63 at the server, the
# router's MAC as source, the server's as destination), including a
# link-local IPv6 gateway and a gateway the router had not resolved yet (a
# gateway that never answers goes to the kernel as pass_no_neigh);
# "blackhole" drops (ping fails, drop_blackhole and the route's counter grow);
# "pass" hands to the kernel, which routes it (pass_route grows, the fast
# path's forwarded does not).  IPv4 and IPv6.  `route del` puts the kernel's
# routing back.  A default route in the map leaves the router's own
# addresses alone.
. "$(dirname "$0")/route_lib.sh"
need tcpdump python3

rt_topo_create rb
rt_serve "$S1" 192.0.2.1/32 198.51.100.1/32 203.0.113.1/32 100.64.0.1/32 \
	2001:db8:100::1/128 2001:db8:101::1/128 2001:db8:102::1/128 2001:db8:dead::1/128 \
	2001:db8:ff::1/128
# the kernel routes the blackhole and pass prefixes: the map must override it
ip -n "$R" route add 203.0.113.0/24 via 10.0.2.2
ip -n "$R" route add 198.51.100.0/24 via 10.0.2.2
ip -n "$R" -6 route add 2001:db8:dead::/48 via 2001:db8:2::2
ip -n "$R" -6 route add 2001:db8:ff::/48 via 2001:db8:2::2
rt_attach
R1MAC=$(mac "$R" r1)
S1MAC=$(mac "$S1" s1)

is "$(rt_json)" "[]" "route show -j: a new router has an empty route table"

# ---- via, IPv4: R's kernel has no route to 192.0.2.0/24, only the map does
ok "without a route, 192.0.2.1 is unreachable from C" fails ping4 "$C" 192.0.2.1 1
ok "route add 192.0.2.0/24 via 10.0.2.2 dev r1" xdpr route add 192.0.2.0/24 via 10.0.2.2 dev r1
is "$(xdpr -j route show | jq -c '.[] | select(.prefix == "192.0.2.0/24") | [.action, .nexthops, .packets, .bytes]')" \
	'["via",[{"gateway":"10.0.2.2","dev":"r1"}],0,0]' "route show -j: the route as added, counters 0"
like "$(xdpr route show 192.0.2.0/24)" '^192\.0\.2\.0/24 +via 10\.0\.2\.2 dev r1 +packets 0 bytes 0$' \
	"route show PREFIX (text): prefix, next hop, counters"
f0=$(ctr "$R" r0 forwarded)
if cap_start "$S1" s1 "$T_TMP/via4.pcap" 'icmp and icmp[icmptype] == icmp-echo'; then
	ok "ping 192.0.2.1 through the via route (10 echoes)" ping4 "$C" 192.0.2.1 10
	cap_stop "$CAP_PID"
	dump=$(cap_read "$T_TMP/via4.pcap")
	is "$(grep -c 'ethertype IPv4' <<<"$dump")" 10 "s1 saw the 10 echo requests"
	is "$(grep -Ec "^[0-9:.]+ $R1MAC > $S1MAC, ethertype IPv4 .*\(tos 0x0, ttl 63," <<<"$dump")" 10 \
		"each one from r1's MAC to s1's MAC with TTL 63"
	[ "$T_FAILED" -eq 0 ] || diag "$dump"
else
	fail "tcpdump did not start: the 3 checks of the capture were not made"
fi
num "$(grown "$f0" "$R" r0 forwarded)" -ge 10 "r0 forwarded grew by >= 10 (fast path)"
is "$(rt_ctr 192.0.2.0/24)" 10 "route 192.0.2.0/24 counted the 10 echo requests"
is "$(rt_ctr 192.0.2.0/24 bytes)" 980 "... and their 980 bytes (10 x 98)"
like "$(xdpr route show 192.0.2.0/24)" 'packets 10 bytes 980$' "route show (text) has the counters"
pc=$(xdpr -j -s -s route show 192.0.2.0/24)
is "$(jq '.[0].cpus | length' <<<"$pc")" "$(nproc --all)" "route show -s -s: one entry per CPU"
is "$(jq '[.[0].cpus[].packets] | add' <<<"$pc")/$(jq '[.[0].cpus[].bytes] | add' <<<"$pc")" \
	"10/980" "route show -s -s: the per-CPU counters add up to the route's"

# ---- via, IPv6
ok "without a route, 2001:db8:100::1 is unreachable from C" fails ping6 "$C" 2001:db8:100::1 1
ok "route add 2001:db8:100::/48 via 2001:db8:2::2 dev r1" \
	xdpr route add 2001:db8:100::/48 via 2001:db8:2::2 dev r1
f0=$(ctr "$R" r0 forwarded)
if cap_start "$S1" s1 "$T_TMP/via6.pcap" 'icmp6 and ip6[40] == 128'; then
	ok "ping 2001:db8:100::1 through the via route (10 echoes)" ping6 "$C" 2001:db8:100::1 10
	cap_stop "$CAP_PID"
	dump=$(cap_read "$T_TMP/via6.pcap")
	is "$(grep -c 'ethertype IPv6' <<<"$dump")" 10 "s1 saw the 10 IPv6 echo requests"
	is "$(grep -Ec "^[0-9:.]+ $R1MAC > $S1MAC, ethertype IPv6 .*hlim 63,.* 2001:db8:1::2 > 2001:db8:100::1" <<<"$dump")" \
		10 "each one from r1's MAC to s1's MAC with hop limit 63"
	[ "$T_FAILED" -eq 0 ] || diag "$dump"
else
	fail "tcpdump did not start: the 3 checks of the capture were not made"
fi
num "$(grown "$f0" "$R" r0 forwarded)" -ge 10 "r0 forwarded grew by >= 10 (IPv6, fast path)"
is "$(rt_ctr 2001:db8:100::/48)/$(rt_ctr 2001:db8:100::/48 bytes)" 10/1180 \
	"route 2001:db8:100::/48 counted 10 packets, 1180 bytes (10 x 118)"

# ---- via a link-local IPv6 gateway
ll=$(lladdr "$S1" s1)
if [ -n "$ll" ]; then
	ok "route add 2001:db8:101::/48 via $ll dev r1 (s1's link-local address)" \
		xdpr route add 2001:db8:101::/48 via "$ll" dev r1
	s1mac=$(ip -n "$S1" -j link show s1 | jq -r '.[0].address')
	is "$(xdpr -j route show 2001:db8:101::/48 | jq -c '.[0].nexthops')" \
		"[{\"gateway\":\"$ll\",\"dev\":\"r1\",\"mac\":\"$s1mac\"}]" \
		"route show: the link-local gateway, its device and the MAC the route keeps (s1's)"
	f0=$(ctr "$R" r0 forwarded)
	g0=$(ctr "$R" r0 pass_route_gw)
	if cap_start "$S1" s1 "$T_TMP/ll.pcap" 'icmp6 and ip6[40] == 128'; then
		ok "ping 2001:db8:101::1 via the link-local gateway (5 echoes)" \
			ping6 "$C" 2001:db8:101::1 5
		cap_stop "$CAP_PID"
		is "$(cap_read "$T_TMP/ll.pcap" | grep -Ec "^[0-9:.]+ $R1MAC > $S1MAC, ethertype IPv6 .*hlim 63,")" \
			5 "s1 saw 5 echo requests from r1's MAC with hop limit 63"
	else
		fail "tcpdump did not start: the 2 checks of the capture were not made"
	fi
	num "$(grown "$f0" "$R" r0 forwarded)" -ge 5 "r0 forwarded grew by >= 5 (link-local gateway, fast path)"
	is "$(grown "$g0" "$R" r0 pass_route_gw)" 0 "r0 pass_route_gw did not grow"
	is "$(rt_ctr 2001:db8:101::/48)" 5 "route 2001:db8:101::/48 counted the 5 echo requests"
else
	skip 7 "s1 has no link-local address"
fi

# ---- via a gateway R has not resolved: the CLI asks the kernel to resolve it
ip -n "$S1" addr add 10.0.2.3/24 dev s1
ip -n "$S1" -6 addr add 2001:db8:2::3/64 dev s1 nodad
is "$(ip -n "$R" neigh show 10.0.2.3 dev r1)" "" "R has no neighbour entry for 10.0.2.3 yet"
ok "route add 100.64.0.0/24 via 10.0.2.3 dev r1" xdpr route add 100.64.0.0/24 via 10.0.2.3 dev r1
ok "the add resolved 10.0.2.3 (R's neighbour table has its MAC within 5 s)" \
	wait_until 5 bash -c "ip -n '$R' neigh show 10.0.2.3 dev r1 | grep -q 'lladdr $S1MAC'"
ok "route add 2001:db8:102::/48 via 2001:db8:2::3 dev r1" \
	xdpr route add 2001:db8:102::/48 via 2001:db8:2::3 dev r1
ok "the add resolved 2001:db8:2::3 (within 5 s)" \
	wait_until 5 bash -c "ip -n '$R' -6 neigh show 2001:db8:2::3 dev r1 | grep -q 'lladdr $S1MAC'"
f0=$(ctr "$R" r0 forwarded)
ok "ping 100.64.0.1 via the newly resolved gateway (5 echoes)" ping4 "$C" 100.64.0.1 5
ok "ping 2001:db8:102::1 via the newly resolved gateway (5 echoes)" ping6 "$C" 2001:db8:102::1 5
num "$(grown "$f0" "$R" r0 forwarded)" -ge 10 "r0 forwarded grew by >= 10"
is "$(rt_ctr 100.64.0.0/24)/$(rt_ctr 2001:db8:102::/48)" 5/5 "both routes counted their 5 echo requests"

# ---- via a gateway that never answers: to the kernel as pass_no_neigh, counted
ok "route add 100.64.9.0/24 via 10.0.2.99 dev r1 (no host has 10.0.2.99)" \
	xdpr route add 100.64.9.0/24 via 10.0.2.99 dev r1
n0=$(ctr "$R" r0 pass_no_neigh)
f0=$(ctr "$R" r0 forwarded)
ok "ping 100.64.9.1 fails (3 echoes)" fails ping4 "$C" 100.64.9.1 3
is "$(grown "$n0" "$R" r0 pass_no_neigh)" 3 "r0 pass_no_neigh grew by 3"
is "$(grown "$f0" "$R" r0 forwarded)" 0 "r0 forwarded did not grow"
is "$(rt_ctr 100.64.9.0/24)" 3 "route 100.64.9.0/24 counted the 3 echo requests all the same"
ok "route del 100.64.9.0/24" xdpr route del 100.64.9.0/24

# ---- blackhole, IPv4 and IPv6: the kernel has a route, the map drops anyway
ok "before the blackhole: ping 203.0.113.1 works (kernel route)" ping4 "$C" 203.0.113.1 2
ok "before the blackhole: ping 2001:db8:dead::1 works (kernel route)" ping6 "$C" 2001:db8:dead::1 2
ok "route add 203.0.113.0/24 blackhole" xdpr route add 203.0.113.0/24 blackhole
ok "route add 2001:db8:dead::/48 blackhole" xdpr route add 2001:db8:dead::/48 blackhole
d0=$(ctr "$R" r0 drop_blackhole)
b0=$(ctr "$R" r0 drop_blackhole bytes)
if cap_start "$S1" s1 "$T_TMP/bh.pcap" 'host 203.0.113.1 or host 2001:db8:dead::1'; then
	ok "ping 203.0.113.1 fails (5 echoes, all dropped)" fails ping4 "$C" 203.0.113.1 5
	ok "ping 2001:db8:dead::1 fails (5 echoes, all dropped)" fails ping6 "$C" 2001:db8:dead::1 5
	cap_stop "$CAP_PID"
	is "$(cap_read "$T_TMP/bh.pcap" -q | grep -c .)" 0 "nothing to the blackholed addresses reached s1"
else
	fail "tcpdump did not start: the 3 checks of the capture were not made"
fi
is "$(grown "$d0" "$R" r0 drop_blackhole)" 10 "r0 drop_blackhole grew by 10"
is "$(grown "$b0" "$R" r0 drop_blackhole bytes)" $((5 * 98 + 5 * 118)) \
	"r0 drop_blackhole bytes grew by 5 x 98 + 5 x 118"
is "$(rt_ctr 203.0.113.0/24)/$(rt_ctr 203.0.113.0/24 bytes)" 5/490 "route 203.0.113.0/24: 5 packets, 490 bytes"
is "$(rt_ctr 2001:db8:dead::/48)/$(rt_ctr 2001:db8:dead::/48 bytes)" 5/590 \
	"route 2001:db8:dead::/48: 5 packets, 590 bytes"
is "$(xdpr -j route show 203.0.113.0/24 | jq -c '.[0] | [.action, .nexthops]')" '["blackhole",null]' \
	"route show -j: action blackhole, no next hops"
ok "route del 203.0.113.0/24" xdpr route del 203.0.113.0/24
ok "route del 2001:db8:dead::/48" xdpr route del 2001:db8:dead::/48
ok "after del: ping 203.0.113.1 works again (kernel route)" ping4 "$C" 203.0.113.1 2
ok "after del: ping 2001:db8:dead::1 works again" ping6 "$C" 2001:db8:dead::1 2

# ---- pass: to the kernel, which has a route
ok "route add 198.51.100.0/24 pass" xdpr route add 198.51.100.0/24 pass
ok "route add 2001:db8:ff::/48 pass" xdpr route add 2001:db8:ff::/48 pass
f0=$(ctr "$R" r0 forwarded)
p0=$(ctr "$R" r0 pass_route)
if cap_start "$S1" s1 "$T_TMP/pass.pcap" 'icmp and icmp[icmptype] == icmp-echo'; then
	ok "ping 198.51.100.1 through the kernel (5 echoes)" ping4 "$C" 198.51.100.1 5
	cap_stop "$CAP_PID"
	is "$(cap_read "$T_TMP/pass.pcap" | grep -Ec "^[0-9:.]+ $R1MAC > $S1MAC, .*ttl 63,")" 5 \
		"s1 saw the 5 echo requests, TTL 63 (the kernel forwarded them)"
else
	fail "tcpdump did not start: the 2 checks of the capture were not made"
fi
ok "ping 2001:db8:ff::1 through the kernel (5 echoes)" ping6 "$C" 2001:db8:ff::1 5
is "$(grown "$p0" "$R" r0 pass_route)" 10 "r0 pass_route grew by 10"
is "$(grown "$f0" "$R" r0 forwarded)" 0 "r0 forwarded did not grow (nothing took the fast path)"
is "$(rt_ctr 198.51.100.0/24)/$(rt_ctr 2001:db8:ff::/48)" 5/5 "both pass routes counted their 5 echo requests"
is "$(xdpr -j route show 198.51.100.0/24 | jq -r '.[0].action')" pass "route show -j: action pass"

# ---- del: back to the kernel's routing
ok "route del 192.0.2.0/24" xdpr route del 192.0.2.0/24
ok "after del: 192.0.2.1 unreachable again (the kernel has no route)" fails ping4 "$C" 192.0.2.1 1
ok "route del 2001:db8:100::/48" xdpr route del 2001:db8:100::/48
ok "after del: 2001:db8:100::1 unreachable again" fails ping6 "$C" 2001:db8:100::1 1
is "$(xdpr -j route show | jq -r 'map(.prefix) | sort | join(" ")')" \
	"100.64.0.0/24 198.51.100.0/24 2001:db8:101::/48 2001:db8:102::/48 2001:db8:ff::/48" \
	"route show: the routes left"

# ---- a map route that covers the router's own addresses: they stay the router's
# (the map otherwise wins over every FIB route, connected ones included)
ok "route add 0.0.0.0/0 via 10.0.2.2 dev r1" xdpr route add 0.0.0.0/0 via 10.0.2.2 dev r1
ok "route add ::/0 via 2001:db8:2::2 dev r1" xdpr route add ::/0 via 2001:db8:2::2 dev r1
ok "with a default route in the map, R still answers a ping to its own 10.0.1.1" ping4 "$C" 10.0.1.1 2
ok "... and to its own 10.0.2.1" ping4 "$C" 10.0.2.1 2
ok "... and to its own 2001:db8:1::1" ping6 "$C" 2001:db8:1::1 2
# an address the router gets after the routes: its own from the next route command on
ip -n "$R" addr add 10.0.1.77/32 dev r0
ok "route add 192.0.2.99/32 blackhole (any route command takes in new addresses)" \
	xdpr route add 192.0.2.99/32 blackhole
ok "R answers a ping to 10.0.1.77, added after the default route" ping4 "$C" 10.0.1.77 2
ok "route del 192.0.2.99/32" xdpr route del 192.0.2.99/32
ok "route del 0.0.0.0/0" xdpr route del 0.0.0.0/0
ok "route del ::/0" xdpr route del ::/0

done_testing
