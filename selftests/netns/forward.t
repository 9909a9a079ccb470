#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# forward.t - the fast path forwards IPv4 and IPv6 between two veths, native
# and skb mode: ICMP and TCP arrive intact, TTL / hop limit is decremented,
# and the `forwarded` counters of both ingress interfaces count the frames.
. "$(dirname "$0")/lib.sh"
need tcpdump

topo_create fw

ok "link attach r0 r1 (native mode)" xdpr link attach r0 r1 ||
	abort "cannot attach: nothing else can be tested"
is "$(link_json "$R" | jq -r 'map(.dev + ":" + .mode) | sort | join(",")')" \
	"r0:native,r1:native" "link show: r0 and r1 attached in native mode"
is "$(link_json "$R" | jq -r 'map(.dev + ":" + (.xdp_xmit | tostring)) | sort | join(",")')" \
	"r0:true,r1:true" "link show: r0 and r1 can transmit XDP frames (GRO on the peers)"

# ---- ICMP, both families, counted on both ingress interfaces
b0=$(ctr "$R" r0 forwarded bytes)
f0=$(ctr "$R" r0 forwarded)
f1=$(ctr "$R" r1 forwarded)
ok "IPv4 ping C -> S (10 echoes)" ping4 "$C" 10.0.2.2 10
num "$(grown "$f0" "$R" r0 forwarded)" -ge 10 "r0 forwarded grew by >= 10 (echo requests)"
num "$(grown "$f1" "$R" r1 forwarded)" -ge 10 "r1 forwarded grew by >= 10 (echo replies)"
num "$(grown "$b0" "$R" r0 forwarded bytes)" -ge 980 \
	"r0 forwarded bytes grew by >= 10 x 98 (Ethernet + IPv4 + ICMP + 56 data)"

f0=$(ctr "$R" r0 forwarded)
f1=$(ctr "$R" r1 forwarded)
ok "IPv6 ping C -> S (10 echoes)" ping6 "$C" 2001:db8:2::2 10
num "$(grown "$f0" "$R" r0 forwarded)" -ge 10 "r0 forwarded grew by >= 10 (IPv6 echo requests)"
num "$(grown "$f1" "$R" r1 forwarded)" -ge 10 "r1 forwarded grew by >= 10 (IPv6 echo replies)"

# ---- bytes on the wire: TTL and hop limit decremented once
cap=$T_TMP/s0.pcap
timeout 20 ip netns exec "$S" tcpdump -Z root -i s0 -n -U -c 6 -w "$cap" \
	'(icmp and icmp[icmptype] == icmp-echo) or (icmp6 and ip6[40] == 128)' \
	2>"$T_TMP/tcpdump.err" &
tcpdump_pid=$!
if wait_file_line "$T_TMP/tcpdump.err" 'listening on'; then
	ping4 "$C" 10.0.2.2 3
	ping6 "$C" 2001:db8:2::2 3
	wait "$tcpdump_pid"
	ok "tcpdump on s0 captured 6 echo requests" test $? -eq 0
	dump=$(pcap_read "$cap" -v) || fail "the capture on s0 can be read"
	is "$(grep -Ec '^[0-9:.]+ IP \(.*ttl 63,.*proto ICMP' <<<"$dump")" 3 \
		"3 IPv4 echo requests from the client arrive with TTL 63"
	is "$(grep -Ec '^[0-9:.]+ IP \(.*ttl [0-9]+' <<<"$dump")" 3 "no IPv4 packet with another TTL"
	is "$(grep -Ec '^[0-9:.]+ IP6 \(.*hlim 63,.*2001:db8:1::2 > 2001:db8:2::2' <<<"$dump")" 3 \
		"3 IPv6 echo requests from the client arrive with hop limit 63"
	is "$(grep -Ec '^[0-9:.]+ IP6 \(.*hlim [0-9]+' <<<"$dump")" 3 "no IPv6 packet with another hop limit"
	[ "$T_FAILED" -eq 0 ] || diag "$dump"
else
	diag_file "$T_TMP/tcpdump.err"
	fail "tcpdump did not start: the 5 checks of the capture were not made"
fi

# ---- TCP: 5 MB from C to S through the fast path, intact
make_file "$T_TMP/data" 5
f0=$(ctr "$R" r0 forwarded)
f1=$(ctr "$R" r1 forwarded)
ok "TCP: 5 MB from C to S arrive with the same SHA-256" \
	tcp_send "$C" "$S" 10.0.2.2 5001 "$T_TMP/data"
num "$(grown "$f0" "$R" r0 forwarded)" -ge 3000 "r0 forwarded grew by >= 3000 (data segments)"
num "$(grown "$f1" "$R" r1 forwarded)" -ge 100 "r1 forwarded grew by >= 100 (ACKs)"
is "$(snmp "$S" Tcp InCsumErrors)" 0 "server: TcpInCsumErrors is 0"
is "$(snmp "$C" Tcp InCsumErrors)" 0 "client: TcpInCsumErrors is 0"

make_file "$T_TMP/data6" 2
f0=$(ctr "$R" r0 forwarded)
ok "TCP over IPv6: 2 MB from C to S intact" \
	tcp_send "$C" "$S" '[2001:db8:2::2]' 5002 "$T_TMP/data6"
num "$(grown "$f0" "$R" r0 forwarded)" -ge 1000 "r0 forwarded grew by >= 1000 (IPv6 data segments)"

# ---- skb (generic) mode
ok "link detach all" xdpr link detach all
ok "link attach r0 r1 mode skb" xdpr link attach r0 r1 mode skb
is "$(link_json "$R" | jq -r 'map(.dev + ":" + .mode) | sort | join(",")')" \
	"r0:skb,r1:skb" "link show: r0 and r1 attached in skb mode"
f0=$(ctr "$R" r0 forwarded)
f1=$(ctr "$R" r1 forwarded)
ok "skb mode: IPv4 ping C -> S" ping4 "$C" 10.0.2.2 5
ok "skb mode: IPv6 ping C -> S" ping6 "$C" 2001:db8:2::2 5
num "$(grown "$f0" "$R" r0 forwarded)" -ge 10 "skb mode: r0 forwarded grew by >= 10"
num "$(grown "$f1" "$R" r1 forwarded)" -ge 10 "skb mode: r1 forwarded grew by >= 10"
make_file "$T_TMP/data_skb" 2
f0=$(ctr "$R" r0 forwarded)
ok "skb mode: TCP 2 MB from C to S intact" \
	tcp_send "$C" "$S" 10.0.2.2 5003 "$T_TMP/data_skb"
num "$(grown "$f0" "$R" r0 forwarded)" -ge 1000 "skb mode: r0 forwarded grew by >= 1000"
is "$(snmp "$S" Tcp InCsumErrors)" 0 "skb mode: server TcpInCsumErrors is still 0"

done_testing
