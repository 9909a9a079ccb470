# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# filter_lib.sh - topology and helpers for the filter end-to-end tests
# (selftests/netns/filter_*.t).  Sources nat_lib.sh, and through it lib.sh
# (TAP, clean-up, CLI wrappers; captures, the UDP tool, TCP echo servers).
#
#   C  c0 10.0.1.2/24 ---- r0 10.0.1.1 .       . r1 10.0.2.1 ---- s0 10.0.2.2/24  S
#                                       >  R  <
#      c2 10.0.3.2/24 ---- r2 10.0.3.1 '       ' r3 10.0.4.1 ---- s2 10.0.4.2/24
#
#   IPv6: 2001:db8:N::/64 on each link (N = 1 3 2 4 for c0 c2 s0 s2), ::1 on R,
#   ::2 on C and S.
#
# lib.sh's topo_create makes C, R, S and the c0/r0 and r1/s0 links (C and S
# route by default through those); flt_topo_create adds c2/r2 and r3/s2, with
# routes in C and S that send traffic between 10.0.3/24 and 10.0.4/24 over
# them (and the IPv6 equivalents).  For filter_diff.t's flows R also routes
# 172.16/13, 198.51.100/24, 2001:db8:100::/40 and 2001:db8:300::/48 to S via
# s0, and 172.24/13, 203.0.113/24, 2001:db8:200::/40, 2001:db8:400::/48 via
# s2; S owns none of those addresses (with forwarding off it drops them
# quietly: a flow's one packet gets no answer).  R has no reverse path
# filter (the flows' sources are everywhere) and permanent neighbour entries
# for S's two ends (the fast path never waits for a neighbour).  ICMP rate
# limits are off everywhere.  The peers of router interfaces have GRO on and
# every veth where traffic starts has tx checksum offload off (NOTES.md).

. "$(dirname "${BASH_SOURCE[0]}")/nat_lib.sh"

FLT_PY=/usr/bin/python3
FLT_FLOWS=$XDPR_ROOT/selftests/netns/filter_flows.py
# scapy is what sends the tests' hand-made packets and reads their captures:
# without it the filter tests cannot test anything, and say so (a failure,
# not a skip).
if ! "$FLT_PY" -c 'import scapy.all' >/dev/null 2>&1; then
	fail "python3-scapy is importable by $FLT_PY (apt-get install -y python3-scapy)"
	done_testing
fi
need nft

# flt_topo_create TAG: C, R, S as drawn above (names in $C $R $S).
flt_topo_create() {
	local tag=$1 ns i mac0 mac2
	topo_create "$tag"
	for ns in "$C" "$R" "$S"; do
		in_ns "$ns" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_msgs_per_sec=100000 \
			net.ipv6.icmp.ratelimit=0 >/dev/null
	done
	ip -n "$R" link add r2 type veth peer name c2 netns "$C" || bail_out "cannot create veth r2/c2"
	ip -n "$R" link add r3 type veth peer name s2 netns "$S" || bail_out "cannot create veth r3/s2"
	ip -n "$C" addr add 10.0.3.2/24 dev c2
	ip -n "$C" addr add 2001:db8:3::2/64 dev c2 nodad
	ip -n "$R" addr add 10.0.3.1/24 dev r2
	ip -n "$R" addr add 2001:db8:3::1/64 dev r2 nodad
	ip -n "$R" addr add 10.0.4.1/24 dev r3
	ip -n "$R" addr add 2001:db8:4::1/64 dev r3 nodad
	ip -n "$S" addr add 10.0.4.2/24 dev s2
	ip -n "$S" addr add 2001:db8:4::2/64 dev s2 nodad
	in_ns "$C" ethtool -K c2 gro on tx off >/dev/null 2>&1 || bail_out "ethtool on c2 failed"
	in_ns "$S" ethtool -K s2 gro on tx off >/dev/null 2>&1 || bail_out "ethtool on s2 failed"
	in_ns "$R" ethtool -K r2 tx off >/dev/null 2>&1
	in_ns "$R" ethtool -K r3 tx off >/dev/null 2>&1
	ip -n "$C" link set c2 up
	ip -n "$R" link set r2 up
	ip -n "$R" link set r3 up
	ip -n "$S" link set s2 up
	ip -n "$C" route add 10.0.4.0/24 via 10.0.3.1
	ip -n "$C" -6 route add 2001:db8:4::/64 via 2001:db8:3::1
	ip -n "$S" route add 10.0.3.0/24 via 10.0.4.1
	ip -n "$S" -6 route add 2001:db8:3::/64 via 2001:db8:4::1

	# no reverse path filter: the effective value is the larger of "all" and the device's
	for i in all default r0 r1 r2 r3; do
		in_ns "$R" sysctl -qw "net.ipv4.conf.$i.rp_filter=0" >/dev/null
	done
	ip -n "$R" route add 172.16.0.0/13 via 10.0.2.2
	ip -n "$R" route add 198.51.100.0/24 via 10.0.2.2
	ip -n "$R" route add 172.24.0.0/13 via 10.0.4.2
	ip -n "$R" route add 203.0.113.0/24 via 10.0.4.2
	ip -n "$R" -6 route add 2001:db8:100::/40 via 2001:db8:2::2
	ip -n "$R" -6 route add 2001:db8:300::/48 via 2001:db8:2::2
	ip -n "$R" -6 route add 2001:db8:200::/40 via 2001:db8:4::2
	ip -n "$R" -6 route add 2001:db8:400::/48 via 2001:db8:4::2
	mac0=$(ip -n "$S" -j link show s0 | jq -r '.[0].address')
	mac2=$(ip -n "$S" -j link show s2 | jq -r '.[0].address')
	ip -n "$R" neigh replace 10.0.2.2 lladdr "$mac0" dev r1 nud permanent
	ip -n "$R" neigh replace 2001:db8:2::2 lladdr "$mac0" dev r1 nud permanent
	ip -n "$R" neigh replace 10.0.4.2 lladdr "$mac2" dev r3 nud permanent
	ip -n "$R" neigh replace 2001:db8:4::2 lladdr "$mac2" dev r3 nud permanent

	for ((i = 0; i < 10; i++)); do
		T_TIMEOUT=5 in_ns "$C" ping -c1 -W1 -q 10.0.4.2 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$C" ping -6 -c1 -W1 -q 2001:db8:4::2 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$S" ping -c1 -W1 -q 10.0.3.2 >/dev/null 2>&1 &&
			return 0
		sleep 0.5
	done
	bail_out "topology $tag: no connectivity C->S over c2/r2/r3/s2 without xdpr"
}

# flt_attach: xdpr on r0 r1 r2 r3 (one test).
flt_attach() {
	ok "link attach r0 r1 r2 r3" xdpr_attach r0 r1 r2 r3 || abort "cannot attach xdpr"
}

# ---------------------------------------------------------------- counters

# rsum REASON DEV...: packets counted under REASON, summed over the ingress
# interfaces DEV... (one `-j stats` call; "none" when unreadable).
rsum() {
	local reason=$1 v
	shift
	v=$(xdpr -j stats 2>/dev/null | jq -r --arg r "$reason" --args '
		[.interfaces[] | select(.dev as $d | $ARGS.positional | index($d)) | .reasons[$r].packets]
		| if length == 0 or any(. == null) then "none" else add end' "$@" 2>/dev/null)
	echo "${v:-none}"
}

# kfwd: datagrams R's kernel forwarded so far, IPv4 + IPv6 (Ip ForwDatagrams
# of /proc/net/snmp, Ip6OutForwDatagrams of /proc/net/snmp6).
kfwd() {
	local v4 v6
	v4=$(snmp "$R" Ip ForwDatagrams)
	v6=$(in_ns "$R" cat /proc/net/snmp6 | awk '$1 == "Ip6OutForwDatagrams" { print $2 }')
	if [[ "$v4" =~ ^[0-9]+$ && "$v6" =~ ^[0-9]+$ ]]; then
		echo $((v4 + v6))
	else
		echo none
	fi
}

# delta BEFORE NOW: NOW - BEFORE, or "none".
delta() {
	if [[ "$1" =~ ^[0-9]+$ && "$2" =~ ^[0-9]+$ ]]; then
		echo $(($2 - $1))
	else
		echo none
	fi
}

# ---------------------------------------------------------------- filter state

# flt_show: `-j filter show`, compact ("" when it fails).
flt_show() {
	xdpr -j filter show 2>/dev/null | jq -c . 2>/dev/null
}

# flt_rules: the rule list without counters, normalised (for "unchanged"
# checks); "unreadable (TIME): ..." when it fails (json_of: never equal to
# another read).
flt_rules() {
	json_of 'walk(if type == "object" then del(.packets, .bytes, .counters) else . end)' xdpr -j filter show
}

# ---------------------------------------------------------------- packets

# mac NS DEV: DEV's MAC address.
mac() {
	ip -n "$1" -j link show "$2" | jq -r '.[0].address'
}

# pkt NS DEV DST_MAC COUNT SCAPY_EXPR: send COUNT copies of a frame built by
# scapy (Ether(src=DEV's MAC, dst=DST_MAC) / SCAPY_EXPR) out of DEV in NS.
pkt() {
	T_TIMEOUT=30 in_ns "$1" "$FLT_PY" "$FLT_FLOWS" packet "$2" "$3" "$4" "$5"
}
