#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# filter_state.t - the filter is stateful.  Under `filter policy drop` with
# one rule `proto tcp dport 5201 accept`: 4 MB each way over TCP (IPv4) and 2
# MB over IPv6 arrive intact, every packet through XDP (R's kernel forwards
# none) and the rule counts only the first packet of each connection; other
# ports are dropped and counted exactly; unsolicited "replies" from the
# server side (SYN+ACK, bare ACK, UDP, echo reply) are dropped and counted;
# ICMP echo needs its rule and then its replies pass on state.  `reject`
# answers from XDP: a TCP connect to port 23 is refused at once (an RST with
# a valid checksum, the listener on S never sees the SYN), a UDP datagram to
# a rejected port gets ICMP type 3 code 13 (IPv6: type 1 code 1) quoting it,
# counted as tx_filter_reject.  Last, NAT: with `nat add out r1 masquerade`
# the accepted flows go through the NAT (S sees 10.0.2.1), the rest stays
# dropped.
. "$(dirname "$0")/filter_lib.sh"
need clang

flt_topo_create fs
# c0 gets an XDP program that passes everything: a veth sends an XDP_TX
# frame (a reject's answer) into its peer's queue but wakes the peer only
# if the peer has an XDP program (veth_xdp_flush); with GRO alone the RST
# waits on c0 until another frame comes along (seen: 0.4 to 5 s late).
if ! obj=$(xdp_pass_obj) || ! ip -n "$C" link set dev c0 xdpdrv obj "$obj" sec xdp; then
	bail_out "cannot attach a pass-all XDP program to c0"
fi
MAC_R0=$(mac "$R" r0)
MAC_R1=$(mac "$R" r1)

# flt_pkts N: packets rule N decided, from `-j filter show` ("none": unreadable).
flt_pkts() {
	local v
	v=$(xdpr -j filter show 2>/dev/null | jq -r --argjson n "$1" \
		'(if type == "array" then . else .rules end) | .[$n - 1] | (.packets // .counters.packets)' 2>/dev/null)
	echo "${v:-none}"
}

# tcp_try NS ADDR PORT: one TCP connect (3 s at most); sets TRY_OUT to
# what socat said on failure ("connected" otherwise) and TRY_MS to how long
# it took.
tcp_try() {
	local t0 tcp=TCP4
	[[ "$2" == *:* ]] && tcp=TCP6 && set -- "$1" "[$2]" "$3"
	t0=$(date +%s%N)
	if TRY_OUT=$(T_TIMEOUT=10 in_ns "$1" socat -T 1 - "$tcp:$2:$3,connect-timeout=3" </dev/null 2>&1); then
		TRY_OUT=connected
	fi
	TRY_MS=$((($(date +%s%N) - t0) / 1000000))
}

flt_attach

# ---- the premise: without rules everything passes
tcp_echo "$S" 5202 || diag "TCP echo server on 5202 did not start"
tcp_echo "$S" 23 || diag "TCP echo server on 23 did not start"
like "$(tcp_ask "$C" 10.0.2.2 5202)" '^10\.0\.1\.2:[0-9]+$' "no filter: TCP C -> S:5202 works"
ok "no filter: ping C -> S works" ping4 "$C" 10.0.2.2 2

ok "filter policy drop" xdpr filter policy drop
ok "filter add proto tcp dport 5201 accept" xdpr filter add proto tcp dport 5201 accept

# ---- TCP both ways on the accepted port, all through XDP
make_file "$T_TMP/up" 4
make_file "$T_TMP/down" 4
make_file "$T_TMP/up6" 2
k0=$(kfwd)
f0=$(ctr "$R" r0 forwarded)
f1=$(ctr "$R" r1 forwarded)
n0=$(flt_pkts 1)
ok "upload: 4 MB C -> S:5201 arrive with the same SHA-256" tcp_send "$C" "$S" 10.0.2.2 5201 "$T_TMP/up"
ok "download: 4 MB S:5201 -> C arrive with the same SHA-256" tcp_fetch "$C" "$S" 10.0.2.2 5201 "$T_TMP/down"
# (lib.sh's tcp_send puts the address into socat's words as it is: brackets for IPv6)
ok "IPv6 upload: 2 MB C -> [2001:db8:2::2]:5201 arrive with the same SHA-256" \
	tcp_send "$C" "$S" "[2001:db8:2::2]" 5201 "$T_TMP/up6"
num "$(grown "$f0" "$R" r0 forwarded)" -ge 4300 "r0 forwarded grew by >= 4300 (upload data segments, IPv4 and IPv6)"
num "$(grown "$f1" "$R" r1 forwarded)" -ge 2800 "r1 forwarded grew by >= 2800 (download data segments)"
is "$(delta "$k0" "$(kfwd)")" 0 "R's kernel forwarded none of it (ForwDatagrams, Ip6OutForwDatagrams flat)"
is "$(delta "$n0" "$(flt_pkts 1)")" 3 "rule 1 decided 3 packets: the first of each connection (the rest passed on state)"
for ns in C S; do
	is "$(csum_errors "${!ns}")" "0/0" "$ns: TcpInCsumErrors/UdpInCsumErrors are 0/0"
done

# ---- another port: dropped by the policy, counted exactly
p0=$(rsum drop_filter_policy r0)
tcp_try "$C" 10.0.2.2 5202
out=$TRY_OUT
like "$out" 'timed out|Connection timed out|Operation now in progress' "TCP C -> S:5202 (a listener is there) does not connect" ||
	diag "socat said: $out"
num "$(delta "$p0" "$(rsum drop_filter_policy r0)")" -ge 1 "drop_filter_policy on r0 counted its SYNs"
cap_start s5202 "$S" s0 'tcp port 5202' || fail "capture on s0 starts"
p0=$(rsum drop_filter_policy r0)
pkt "$C" c0 "$MAC_R0" 5 "IP(src='10.0.1.2', dst='10.0.2.2')/TCP(sport=41000, dport=5202, flags='S', seq=1)" ||
	diag "sending SYNs failed"
sleep 0.3
is "$(delta "$p0" "$(rsum drop_filter_policy r0)")" 5 "5 SYNs to S:5202: drop_filter_policy on r0 grew by 5"
ok "capture on s0 complete" cap_stop s5202
is "$(cap_count s5202 'true')" 0 "none of them reached S"

# ---- unsolicited "replies" from the server side
cap_start c0 "$C" c0 'ip and not arp' || fail "capture on c0 starts"
p1=$(rsum drop_filter_policy r1)
pkt "$S" s0 "$MAC_R1" 3 "IP(src='10.0.2.2', dst='10.0.1.2')/TCP(sport=5201, dport=40001, flags='SA', seq=7, ack=9)"
pkt "$S" s0 "$MAC_R1" 3 "IP(src='10.0.2.2', dst='10.0.1.2')/TCP(sport=5201, dport=40002, flags='A', seq=7, ack=9)"
pkt "$S" s0 "$MAC_R1" 3 "IP(src='10.0.2.2', dst='10.0.1.2')/UDP(sport=5201, dport=40003)/Raw(b'reply?')"
pkt "$S" s0 "$MAC_R1" 3 "IP(src='10.0.2.2', dst='10.0.1.2')/ICMP(type=0, id=4711, seq=1)"
sleep 0.3
is "$(delta "$p1" "$(rsum drop_filter_policy r1)")" 12 \
	"3 each of SYN+ACK, ACK, UDP, echo reply from S with no state: drop_filter_policy on r1 grew by 12"
ok "capture on c0 complete" cap_stop c0
is "$(cap_count c0 '(.sport == 5201) or (.icmp_type == 0)')" 0 "none of them reached C"

# ---- ICMP echo: dropped until a rule accepts the requests; replies pass on state
p0=$(rsum drop_filter_policy r0)
ok "ping C -> S (3 echoes) gets no reply under policy drop" not ping4 "$C" 10.0.2.2 3
is "$(delta "$p0" "$(rsum drop_filter_policy r0)")" 3 "drop_filter_policy on r0 grew by the 3 echo requests"
ok "filter add proto icmp icmp-type 8 accept" xdpr filter add proto icmp icmp-type 8 accept
k0=$(kfwd)
f1=$(ctr "$R" r1 forwarded)
ok "ping C -> S (5 echoes): every reply comes back (they pass on the requests' state)" ping4 "$C" 10.0.2.2 5
num "$(grown "$f1" "$R" r1 forwarded)" -ge 5 "r1 forwarded grew by >= 5 (echo replies, through XDP)"
is "$(delta "$k0" "$(kfwd)")" 0 "R's kernel forwarded none of them"
p1=$(rsum drop_filter_policy r1)
pkt "$S" s0 "$MAC_R1" 2 "IP(src='10.0.2.2', dst='10.0.1.2')/ICMP(type=0, id=4712, seq=1)"
sleep 0.3
is "$(delta "$p1" "$(rsum drop_filter_policy r1)")" 2 "an echo reply nobody asked for is still dropped (policy, +2 on r1)"

# ---- reject: TCP gets an RST from XDP
ok "filter add proto tcp dport 23 reject" xdpr filter add proto tcp dport 23 reject
cap_start s23 "$S" s0 'tcp port 23' || fail "capture on s0 starts"
cap_start c23 "$C" c0 'tcp port 23' || fail "capture on c0 starts"
j0=$(rsum tx_filter_reject r0)
tcp_try "$C" 10.0.2.2 23
out=$TRY_OUT
like "$out" 'Connection refused' "TCP C -> S:23 (a listener is there): connection refused" || diag "socat said: $out"
num "$TRY_MS" -lt 1000 "refused at once (${TRY_MS} ms)"
is "$(delta "$j0" "$(rsum tx_filter_reject r0)")" 1 "tx_filter_reject on r0 grew by 1"
ok "captures on s0 and c0 complete" cap_stop s23
cap_stop c23 || diag "capture on c0 incomplete"
is "$(cap_count s23 'true')" 0 "the SYN never reached S"
j=$(cap_json c23)
is "$(jq -r '[.[] | select(.src == "10.0.2.2" and .sport == 23 and .dport > 0 and
	(.tcp_flags % 8 >= 4))] | length' <<<"$j")" 1 "C received one RST from 10.0.2.2:23" ||
	diag "$(jq -c '.[] | {src, dst, sport, dport, tcp_flags}' <<<"$j")"
is "$(jq -r '[.[] | select(.sport == 23) | .l4_csum_ok] | all' <<<"$j")" true "the RST's TCP checksum is valid"
cap_start c23v6 "$C" c0 'ip6 and tcp port 23' || fail "capture on c0 starts"
tcp_try "$C" 2001:db8:2::2 23
out=$TRY_OUT
like "$out" 'Connection refused' "IPv6: TCP C -> [2001:db8:2::2]:23: connection refused" || diag "socat said: $out"
num "$TRY_MS" -lt 1000 "refused at once (${TRY_MS} ms)"
cap_stop c23v6 || diag "capture on c0 incomplete"
j=$(timeout 30 "$FLT_PY" "$FLT_FLOWS" decode6 "$T_TMP/c23v6.pcap" 2>&1)
is "$(jq -r '[.[] | select(.src == "2001:db8:2::2" and .sport == 23 and (.tcp_flags % 8 >= 4) and .csum_ok)] | length' <<<"$j" 2>&1)" 1 \
	"C received one RST from [2001:db8:2::2]:23, TCP checksum valid" || diag "$j"

# ---- reject: UDP gets ICMP administratively prohibited
ok "filter add proto udp dport 5300 reject" xdpr filter add proto udp dport 5300 reject
cap_start u5300 "$S" s0 'udp port 5300' || fail "capture on s0 starts"
cap_start cicmp "$C" c0 'icmp or icmp6' || fail "capture on c0 starts"
j0=$(rsum tx_filter_reject r0)
pkt "$C" c0 "$MAC_R0" 1 "IP(src='10.0.1.2', dst='10.0.2.2')/UDP(sport=40500, dport=5300)/Raw(b'hello')"
pkt "$C" c0 "$MAC_R0" 1 "IPv6(src='2001:db8:1::2', dst='2001:db8:2::2')/UDP(sport=40501, dport=5300)/Raw(b'hello')"
sleep 0.3
is "$(delta "$j0" "$(rsum tx_filter_reject r0)")" 2 "tx_filter_reject on r0 grew by 2 (one IPv4, one IPv6 datagram)"
ok "capture on s0 complete" cap_stop u5300
cap_stop cicmp || diag "capture on c0 incomplete"
is "$(cap_count u5300 'true')" 0 "neither datagram reached S"
j=$(cap_json cicmp)
is "$(jq -r '[.[] | select(.icmp_type == 3 and .icmp_code == 13 and .icmp_csum_ok and .q.src == "10.0.1.2" and
	.q.dst == "10.0.2.2" and .q.sport == 40500 and .q.dport == 5300)] | length' <<<"$j")" 1 \
	"C received one ICMP type 3 code 13 quoting its datagram, checksum valid" ||
	diag "$(jq -c '.[] | {src, dst, icmp_type, icmp_code, icmp_csum_ok, q}' <<<"$j")"
diag "the IPv4 answer came from $(jq -r '[.[] | select(.icmp_type == 3) | .src] | join(",")' <<<"$j")"
j=$(timeout 30 "$FLT_PY" "$FLT_FLOWS" decode6 "$T_TMP/cicmp.pcap" 2>&1)
is "$(jq -r '[.[] | select(.icmp_type == 1 and .icmp_code == 1 and .q.src == "2001:db8:1::2" and
	.q.dst == "2001:db8:2::2" and .q.sport == 40501 and .q.dport == 5300)] | length' <<<"$j" 2>&1)" 1 \
	"C received one ICMPv6 type 1 code 1 (administratively prohibited) quoting its datagram" || diag "$j"
is "$(jq -r '[.[] | select(.icmp_type == 1) | .csum_ok] | all' <<<"$j" 2>&1)" true "its ICMPv6 checksum is valid" ||
	diag "$j"

# ---- state words: a rule naming established makes every packet meet the rules
ok "filter flush" xdpr filter flush
ok "filter add state invalid drop" xdpr filter add state invalid drop
ok "filter add proto tcp dport 5201 state new accept" xdpr filter add proto tcp dport 5201 state new accept
ok "filter add state established,related accept" xdpr filter add state established,related accept
is "$(xdpr -j -s filter show | jq -r .slot.see_established)" true "-s -j filter show: see_established true"
make_file "$T_TMP/est" 1
n1=$(flt_pkts 2)
n2=$(flt_pkts 3)
ok "1 MB C -> S:5201 under state rules arrive with the same SHA-256" tcp_send "$C" "$S" 10.0.2.2 5201 "$T_TMP/est"
is "$(delta "$n1" "$(flt_pkts 2)")" 1 "rule 2 (state new) decided the SYN only"
num "$(delta "$n2" "$(flt_pkts 3)")" -ge 700 "rule 3 (state established) decided every later packet (>= 700)"
d0=$(rsum drop_filter r0)
cap_start sinv "$S" s0 'tcp port 5201 and tcp[tcpflags] & tcp-syn != 0' || fail "capture on s0 starts"
pkt "$C" c0 "$MAC_R0" 2 "IP(src='10.0.1.2', dst='10.0.2.2')/TCP(sport=40010, dport=5201, flags='SA', seq=1, ack=1)"
sleep 0.3
is "$(delta "$d0" "$(rsum drop_filter r0)")" 2 "an unsolicited SYN+ACK to port 5201 is invalid: rule 1 drops it (drop_filter +2)"
ok "capture on s0 complete" cap_stop sinv
is "$(cap_count sinv 'true')" 0 "it never reached S"
ok "filter del 3 (no rule names established any more)" xdpr filter del 3
is "$(xdpr -j -s filter show | jq -r .slot.see_established)" false "see_established false again"
n1=$(flt_pkts 2)
ok "1 MB again: the flow's later packets pass on its state" tcp_send "$C" "$S" 10.0.2.2 5201 "$T_TMP/est"
is "$(delta "$n1" "$(flt_pkts 2)")" 1 "rule 2 decided the SYN only"
ok "filter add proto icmp icmp-type 8 accept (for the NAT part)" xdpr filter add proto icmp icmp-type 8 accept

# ---- flows flush: a flow's state goes at once, with every CPU's copy of it
# Replies stream from S every 4 ms; `filter flows flush` in the middle.  No
# reply may reach C once the command has returned (a CPU's copy of the state
# would otherwise carry the flow for up to a second).
ok "filter add proto udp dport 7100 accept" xdpr filter add proto udp dport 7100 accept
pkt "$C" c0 "$MAC_R0" 1 "IP(src='10.0.1.2', dst='10.0.2.2')/UDP(sport=40710, dport=7100)/Raw(b'open')"
cap_start ffl "$C" c0 'udp and src port 7100' || fail "capture on c0 starts"
T_TIMEOUT=30 in_ns "$S" "$FLT_PY" "$FLT_FLOWS" stream s0 "$MAC_R1" 1.6 4 \
	"IP(src='10.0.2.2', dst='10.0.1.2')/UDP(sport=7100, dport=40710)/Raw(b'reply')" >"$T_TMP/ffl.sent" \
	2>"$T_TMP/ffl.err" &
spid=$!
wait_file_line "$T_TMP/ffl.err" '^sending$' ||
	{ fail "the reply stream from S starts"; diag_file "$T_TMP/ffl.err"; }
sleep 0.4 # ~100 replies pass on the flow's state first
p0=$(rsum drop_filter_policy r1)
ok "filter flows flush while the replies stream" xdpr filter flows flush
tf=$(date +%s.%N)
wait "$spid"
ok "the reply stream ran" test "$?" -eq 0 || diag_file "$T_TMP/ffl.err"
sent=$(cat "$T_TMP/ffl.sent")
ok "capture on c0 complete" cap_stop ffl
ok "the capture on c0 can be read" eval 'pcap_read "$T_TMP/ffl.pcap" -tt >"$T_TMP/ffl.txt"'
awk '{ print $1 }' "$T_TMP/ffl.txt" >"$T_TMP/ffl.ts"
before=$(awk -v t="$tf" '$1 <= t' "$T_TMP/ffl.ts" | wc -l)
late=$(awk -v t="$tf" '$1 > t + 0.005' "$T_TMP/ffl.ts" | wc -l)
num "$before" -ge 50 "replies passed on the flow's state before the flush ($before of $sent)"
is "$late" 0 "no reply reached C more than 5 ms after filter flows flush returned"
num "$(delta "$p0" "$(rsum drop_filter_policy r1)")" -ge 100 "the replies after it: drop_filter_policy on r1 (>= 100)"

# ---- NAT under the filter: accepted flows are translated, the rest stays dropped
ok "nat add out r1 masquerade" xdpr nat add out r1 masquerade
ok "filter add proto udp dport 7000 accept" xdpr filter add proto udp dport 7000 accept
k0=$(kfwd)
make_file "$T_TMP/nat" 2
ok "2 MB C -> S:5201 through the NAT arrive with the same SHA-256" tcp_send "$C" "$S" 10.0.2.2 5201 "$T_TMP/nat"
tcp_echo "$S" 5201 || diag "TCP echo server on 5201 did not start"
udp_echo "$S" 7000
like "$(tcp_ask "$C" 10.0.2.2 5201)" '^10\.0\.2\.1:[0-9]+$' "TCP C -> S:5201 through the NAT: S sees 10.0.2.1"
like "$(udp "$C" ask 0 3 10.0.2.2:7000)" '^10\.0\.2\.1:[0-9]+$' "UDP C -> S:7000 through the NAT: S sees 10.0.2.1"
ok "ping C -> S through the NAT (3 echoes)" ping4 "$C" 10.0.2.2 3
is "$(delta "$k0" "$(kfwd)")" 0 "R's kernel forwarded none of the NAT'ed traffic"
num "$(nat_ctr sessions_new)" -ge 4 "the NAT made sessions for them (sessions_new >= 4)"
p0=$(rsum drop_filter_policy r0)
tcp_try "$C" 10.0.2.2 5202
out=$TRY_OUT
like "$out" 'timed out|Operation now in progress' "TCP C -> S:5202 with NAT on: still dropped" || diag "socat said: $out"
num "$(delta "$p0" "$(rsum drop_filter_policy r0)")" -ge 1 "drop_filter_policy on r0 counted it"
is "$(xdpr -j nat sessions 2>/dev/null | jq '[.[] | select(.remote_port == 5202)] | length')" 0 \
	"no NAT session for the dropped flow"

done_testing
