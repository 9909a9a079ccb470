#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# slowpath.t - what the fast path hands to the kernel still works, and is
# counted under its reason: expiring TTL (traceroute), next hops whose MAC is
# not resolved, packets bigger than the egress MTU (PMTU discovery), and an
# egress veth that cannot transmit XDP frames (no GRO on its peer).
. "$(dirname "$0")/lib.sh"
need traceroute

topo_create sp
ok "link attach r0 r1" xdpr link attach r0 r1 || abort "cannot attach: nothing else can be tested"

# ---- TTL / hop limit expiry: the kernel answers Time Exceeded
t0=$(ctr "$R" r0 pass_ttl)
out=$(T_TIMEOUT=20 in_ns "$C" traceroute -n -q1 -w1 -m3 10.0.2.2 2>&1)
like "$out" '^ *1 +10\.0\.1\.1 ' "traceroute: hop 1 is the router (10.0.1.1)"
like "$out" '^ *2 +10\.0\.2\.2 ' "traceroute: hop 2 is the server (10.0.2.2)"
num "$(grown "$t0" "$R" r0 pass_ttl)" -ge 1 "r0 pass_ttl grew"

t0=$(ctr "$R" r0 pass_ttl)
out=$(T_TIMEOUT=20 in_ns "$C" traceroute -6 -n -q1 -w1 -m3 2001:db8:2::2 2>&1)
like "$out" '^ *1 +2001:db8:1::1 ' "traceroute -6: hop 1 is the router (2001:db8:1::1)"
like "$out" '^ *2 +2001:db8:2::2 ' "traceroute -6: hop 2 is the server (2001:db8:2::2)"
num "$(grown "$t0" "$R" r0 pass_ttl)" -ge 1 "r0 pass_ttl grew (hop limit)"

# ---- next hop not resolved: the kernel resolves it, then the fast path takes over
# The server must not re-teach the router its address behind the test's back
# (an ARP request or NS from S creates the router's entry for S): give S
# permanent entries for the router.
r1_mac=$(ip -j -n "$R" link show r1 | jq -r '.[0].address')
ip -n "$S" neigh replace 10.0.2.1 lladdr "$r1_mac" dev s0 nud permanent
ip -n "$S" neigh replace 2001:db8:2::1 lladdr "$r1_mac" dev s0 nud permanent
ip -n "$R" -4 neigh flush dev r1
is "$(ip -n "$R" neigh show dev r1 to 10.0.2.2 nud reachable nud stale nud delay nud probe)" "" \
	"router has no neighbour entry for 10.0.2.2 after flush"
n0=$(ctr "$R" r0 pass_no_neigh)
f0=$(ctr "$R" r0 forwarded)
ok "IPv4 ping C -> S with the neighbour flushed" ping4 "$C" 10.0.2.2 1
num "$(grown "$n0" "$R" r0 pass_no_neigh)" -ge 1 "r0 pass_no_neigh grew"
n0=$(ctr "$R" r0 pass_no_neigh)
f0=$(ctr "$R" r0 forwarded)
ok "IPv4 ping C -> S again (5 echoes)" ping4 "$C" 10.0.2.2 5
num "$(grown "$f0" "$R" r0 forwarded)" -ge 5 "r0 forwarded grew by >= 5 once the neighbour is known"
num "$(grown "$n0" "$R" r0 pass_no_neigh)" -eq 0 "r0 pass_no_neigh did not grow any more"

ip -n "$R" -6 neigh flush dev r1
n0=$(ctr "$R" r0 pass_no_neigh)
ok "IPv6 ping C -> S with the neighbour flushed" ping6 "$C" 2001:db8:2::2 1
num "$(grown "$n0" "$R" r0 pass_no_neigh)" -ge 1 "r0 pass_no_neigh grew (IPv6)"
n0=$(ctr "$R" r0 pass_no_neigh)
f0=$(ctr "$R" r0 forwarded)
ok "IPv6 ping C -> S again (5 echoes)" ping6 "$C" 2001:db8:2::2 5
num "$(grown "$f0" "$R" r0 forwarded)" -ge 5 "r0 forwarded grew by >= 5 (IPv6)"
num "$(grown "$n0" "$R" r0 pass_no_neigh)" -eq 0 "r0 pass_no_neigh did not grow any more (IPv6)"

# ---- PMTU: the server side link gets MTU 1280
ip -n "$R" link set r1 mtu 1280
ip -n "$S" link set s0 mtu 1280
# The MTU change is seen by the program only through the FIB: nothing to re-attach.

m0=$(ctr "$R" r0 pass_frag_needed)
out=$(T_TIMEOUT=10 in_ns "$C" ping -c 2 -i 0.2 -W 1 -M "do" -s 1400 10.0.2.2 2>&1)
like "$out" 'Frag needed and DF set \(mtu = 1280\)|message too long, mtu=1280' \
	"IPv4 ping -M do -s 1400: told the MTU is 1280"
num "$(grown "$m0" "$R" r0 pass_frag_needed)" -ge 1 "r0 pass_frag_needed grew"
f0=$(ctr "$R" r0 forwarded)
ok "IPv4 ping -M do -s 1200 fits and gets through" ping4 "$C" 10.0.2.2 3 -M "do" -s 1200
num "$(grown "$f0" "$R" r0 forwarded)" -ge 3 "r0 forwarded grew by >= 3 (1228-byte packets)"

m0=$(ctr "$R" r0 pass_frag_needed)
out=$(T_TIMEOUT=10 in_ns "$C" ping -6 -c 2 -i 0.2 -W 1 -s 1400 2001:db8:2::2 2>&1)
like "$out" 'Packet too big: ?mtu ?= ?1280' "IPv6 ping -s 1400: Packet too big, mtu 1280"
num "$(grown "$m0" "$R" r0 pass_frag_needed)" -ge 1 "r0 pass_frag_needed grew (IPv6)"

ip -n "$R" link set r1 mtu 1500
ip -n "$S" link set s0 mtu 1500

# ---- an egress that cannot transmit XDP frames: the kernel forwards instead
ok "link detach r1" xdpr link detach r1
in_ns "$S" ethtool -K s0 gro off >/dev/null 2>&1
ok "link attach r1 with GRO off on its peer" xdpr link attach r1
is "$(link_json "$R" | jq -r '.[] | select(.dev == "r1") | .xdp_xmit')" false \
	"link show: r1 cannot transmit XDP frames"
x0=$(ctr "$R" r0 pass_egress_no_xmit)
f1=$(ctr "$R" r1 forwarded)
ok "IPv4 ping C -> S through the kernel" ping4 "$C" 10.0.2.2 5
num "$(grown "$x0" "$R" r0 pass_egress_no_xmit)" -ge 5 "r0 pass_egress_no_xmit grew by >= 5"
num "$(grown "$f1" "$R" r1 forwarded)" -ge 5 "r1 still forwards the replies to r0 in XDP"

done_testing
