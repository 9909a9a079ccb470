#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_deadhost.t - "dead inside neighbour" (issue 10): C1 has a UDP session
# through the NAT, then disappears while H keeps sending to its mapping.
# The router has no neighbour for C1 any more; it must not hand the
# translated datagrams to its kernel, whose "host unreachable" would quote
# 10.0.1.2 to the outside.  Two ways to disappear: C1's address deleted
# (c1 stays up, nobody answers ARP for 10.0.1.2), and c1 down.  Each time
# the router's neighbour entry for C1 is flushed, H sends 30 datagrams over
# 4.5 s (longer than the kernel's 3 s of ARP attempts), and on h0 no frame
# may carry 10.0.1.2 in any byte; drop_nat_in_no_neigh counts them.
. "$(dirname "$0")/nat_lib.sh"

N=30

nat_topo_create dh
leak_start
nat_attach
udp_echo "$H" 7000
cap_start dh "$H" h0 || abort "capture on h0 did not start"

# send.py SPORT DST:PORT N TAG: N datagrams "TAG i" from SPORT, 0.15 s apart
cat >"$T_TMP/send.py" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # beside the echo server
s.bind(("0.0.0.0", int(sys.argv[1])))
h, p = sys.argv[2].rsplit(":", 1)
for i in range(int(sys.argv[3])):
    s.sendto(b"%s %d" % (sys.argv[4].encode(), i), (h, int(p)))
    time.sleep(0.15)
EOF

# gone PORT TAG WHAT CMD...: C1 has a session from PORT to H:7000,
# disappears (CMD: WHAT), H sends N datagrams to the mapping; checks the drops.
gone() {
	local port=$1 tag=$2 what=$3 nn0 nr0 du0 m
	shift 3
	m=$(udp "$C1" ask "$port" 3 10.0.2.2:7000)
	is "$m" "10.0.2.1:$port" "$tag: C1 has a session from port $port, mapped to $m"
	is "$(sessions src 10.0.1.2 proto udp | jq -r --argjson p "$port" '.[] | select(.inside_port == $p) | "\(.outside_port) \(.state)"')" \
		"$port replied" "$tag: nat sessions: the session is replied"
	ok "$tag: C1 disappears: $what" "$@"
	ip -n "$R" neigh flush dev r0
	is "$(ip -n "$R" neigh show 10.0.1.2 dev r0 | grep -cv FAILED)" 0 "$tag: the router has no valid neighbour for 10.0.1.2"
	nn0=$(ctr "$R" r1 drop_nat_in_no_neigh)
	nr0=$(ctr "$R" r1 drop_nat_in_no_route)
	du0=$(snmp "$R" Icmp OutDestUnreachs)
	T_TIMEOUT=20 ok "$tag: H sends $N datagrams to 10.0.2.1:$port 0.15 s apart" \
		in_ns "$H" "$NAT_PY" "$T_TMP/send.py" 7000 "10.0.2.1:$port" "$N" "$tag"
	sleep 1
	is "$(grown "$nn0" "$R" r1 drop_nat_in_no_neigh)" "$N" "$tag: r1 drop_nat_in_no_neigh grew by $N"
	is "$(grown "$nr0" "$R" r1 drop_nat_in_no_route)" 0 "$tag: r1 drop_nat_in_no_route did not grow"
	is "$(($(snmp "$R" Icmp OutDestUnreachs) - du0))" 0 "$tag: the router's kernel sent no destination unreachable"
	is "$(ip -n "$R" neigh show 10.0.1.2 dev r0 | grep -cv FAILED)" 0 "$tag: ... and still has no neighbour for 10.0.1.2"
}

gone 40700 addr "10.0.1.2 deleted from c1" ip -n "$C1" addr del 10.0.1.2/24 dev c1
# C1 comes back for the second way
ip -n "$C1" addr add 10.0.1.2/24 dev c1
ip -n "$C1" route add default via 10.0.1.1
ping4 "$C1" 10.0.1.1 1 || diag "C1 cannot reach the router again"
gone 40701 down "c1 set down" ip -n "$C1" link set c1 down
cap_stop dh || fail "capture on h0 incomplete"

# ---- the wire (h0)
cap=$(cap_json dh)
for t in addr down; do
	is "$(jq --arg t "$t " '[.[] | select(.src == "10.0.2.2" and .sport == 7000 and .dst == "10.0.2.1" and (.text // "" | startswith($t)))] | length' <<<"$cap")" \
		"$N" "h0 capture: H's $N datagrams of the '$t' case are there"
done
num "$(jq '[.[] | select(.src == "10.0.2.1" and .dport == 7000)] | length' <<<"$cap")" -ge 2 \
	"h0 capture: C1's translated datagrams are there"
is "$(jq '[.[] | select(.raw | test("^(..)*0a000102"))] | length' <<<"$cap")" 0 \
	"h0 capture: no frame carries 10.0.1.2 in any of its bytes ($(jq length <<<"$cap") frames)" ||
	diag "$(jq -c '.[] | select(.raw | test("^(..)*0a000102")) | {src, dst, proto, icmp_type, icmp_code, q}' <<<"$cap" | head -n 5)"
is "$(jq -c '[.[] | select(.src == "10.0.2.1" and .proto == 1) | [.icmp_type, .icmp_code]]' <<<"$cap")" "[]" \
	"h0 capture: no ICMP from the router at all"
leak_check "two dead inside hosts"
done_testing
