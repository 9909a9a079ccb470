#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_slowpath.t - NAT for packets the fast path does not simply redirect,
# and the "never leak" rule for them: UDP without checksum keeps none; IPv4
# fragments from inside are dropped and counted; a datagram larger than the
# outside MTU without DF is translated before the kernel fragments it, with
# DF the kernel's "fragmentation needed" reaches the inside host (TCP keeps
# working through PMTU discovery); the first packets to an unresolved
# neighbour and packets with IP options go through the kernel translated.
# A capture on the outside link over the whole file sees no inside address.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create sp
leak_start
nat_attach
udp_echo "$S" 7000
tcp_echo "$S" 7001 || diag "tcp echo server did not start"

# ---- UDP without checksum
timeout 15 ip netns exec "$H" tcpdump -Z root -i h0 -n -vv -U -c 1 -w "$T_TMP/nocsum.pcap" \
	'udp and dst port 7000 and src port 40124' 2>"$T_TMP/nocsum.err" &
td=$!
wait_file_line "$T_TMP/nocsum.err" 'listening on' || diag_file "$T_TMP/nocsum.err"
is "$(NAT_UDP_NOCSUM=1 udp "$C1" ask 40124 3 10.0.4.2:7000)" "10.0.2.1:40124" \
	"UDP without checksum (SO_NO_CHECK) from C1: answered, S sees 10.0.2.1:40124"
wait "$td"
dump=$(timeout 10 tcpdump -r "$T_TMP/nocsum.pcap" -n -vv 2>/dev/null)
like "$dump" '10\.0\.2\.1\.40124 > 10\.0\.4\.2\.7000: \[no cksum\]' \
	"on the outside link the translated datagram still has no checksum (0)"
is "$(csum_errors "$S")" "0/0" "S: TcpInCsumErrors/UdpInCsumErrors are 0/0"

# ---- fragments from inside: dropped and counted, never forwarded
u0=$(ctr "$R" r0 drop_nat_untranslatable)
n0=$(nat_ctr untranslatable)
ok "ping -s 3000 (each echo in 3 fragments) from C1 gets no answer" not ping4 "$C1" 10.0.4.2 2 -s 3000
num "$(grown "$u0" "$R" r0 drop_nat_untranslatable)" -ge 6 "r0 drop_nat_untranslatable grew by >= 6"
num "$(nat_grown "$n0" untranslatable)" -ge 6 "rule counter untranslatable grew by >= 6"
ok "a 1000-byte ping (no fragments) still works" ping4 "$C1" 10.0.4.2 2 -s 1000

# ---- outside MTU 1400
ip -n "$R" link set r1 mtu 1400
ip -n "$H" link set h0 mtu 1400
fn0=$(ctr "$R" r0 pass_frag_needed)
is "$(NAT_UDP_SIZE=1450 NAT_UDP_DF=0 udp "$C1" ask 40125 3 10.0.4.2:7000)" "10.0.2.1:40125" \
	"1450-byte UDP without DF, outside MTU 1400: translated, fragmented by the kernel, answered"
num "$(grown "$fn0" "$R" r0 pass_frag_needed)" -ge 1 "r0 pass_frag_needed grew (handed to the kernel)"
du0=$(snmp "$C1" Icmp InDestUnreachs)
is "$(NAT_UDP_SIZE=1450 udp "$C1" ask 40126 2 10.0.4.2:7000)" "timeout" \
	"1450-byte UDP with DF, outside MTU 1400: not forwarded"
num "$(($(snmp "$C1" Icmp InDestUnreachs) - du0))" -ge 1 "... and C1 gets the router's \"fragmentation needed\""
make_file "$T_TMP/pmtu" 2
ok "TCP with DF, outside MTU 1400: 2 MB from C1 to S intact (PMTU discovery)" \
	tcp_send "$C1" "$S" 10.0.4.2 5003 "$T_TMP/pmtu"
make_file "$T_TMP/pmtu_down" 2
ok "TCP, outside MTU 1400: 2 MB from S to C1 intact" \
	tcp_fetch "$C1" "$S" 10.0.4.2 5004 "$T_TMP/pmtu_down"
ip -n "$R" link set r1 mtu 1500
ip -n "$H" link set h0 mtu 1500

# ---- next hop not resolved: the first packets go through the kernel, translated
nn0=$(ctr "$R" r0 pass_no_neigh)
ip -n "$R" neigh flush dev r1
is "$(udp "$C1" ask 40127 3 10.0.4.2:7000)" "10.0.2.1:40127" "UDP with the next hop's MAC unknown: answered from 10.0.2.1"
ip -n "$R" neigh flush dev r1
like "$(tcp_ask "$C2" 10.0.4.2 7001)" '^10\.0\.2\.1:[0-9]+$' "TCP with the next hop's MAC unknown: S sees 10.0.2.1"
num "$(grown "$nn0" "$R" r0 pass_no_neigh)" -ge 1 "r0 pass_no_neigh grew (handed to the kernel)"
ip -n "$R" neigh flush dev r1
ok "ping with the next hop's MAC unknown" ping4 "$C1" 10.0.4.2 2

# ---- IPv4 options
po0=$(ctr "$R" r0 pass_ip4_options)
is "$(NAT_UDP_IPOPT=1 udp "$C1" ask 40128 3 10.0.4.2:7000)" "10.0.2.1:40128" \
	"UDP with IPv4 options (4 NOPs): answered, S sees 10.0.2.1:40128"
num "$(grown "$po0" "$R" r0 pass_ip4_options)" -ge 1 "r0 pass_ip4_options grew (handed to the kernel)"

for ns in C1 C2 S; do
	is "$(csum_errors "${!ns}")" "0/0" "$ns: TcpInCsumErrors/UdpInCsumErrors are 0/0"
done
leak_check "checksum-less UDP, fragments, MTU, unresolved neighbours and IP options"
done_testing
