#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_live.t - NAT rules changing under traffic: rules added, replaced and
# deleted while a TCP stream runs (the stream completes intact, no reset);
# the outside address changing (new flows, and old ones, follow it); `nat
# del` ending every session of the rule.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create nl
leak_start
nat_attach
udp_echo "$S" 7000
tcp_echo "$S" 7001 || diag "tcp echo server did not start"

# ---- rule changes while a TCP stream runs
# ~4.5 MB in 64 KiB pieces every 0.1 s: a ~7 s stream.
stream_start "$C1" "$S" 10.0.4.2 5010 70
client=$STREAM_CLIENT data=$STREAM_DATA

sleep 1.5
o0=$(nat_ctr translated_out)
sleep 0.5
num "$(nat_grown "$o0" translated_out)" -ge 50 "the stream runs through the NAT (translated_out grows)"
ok "during the stream: nat add out r2 src 192.168.0.0/16 masquerade (unrelated rule)" \
	xdpr nat add out r2 src 192.168.0.0/16 masquerade
sleep 1
ok "during the stream: nat replace out r1 masquerade ports 30000-40000" \
	xdpr nat replace out r1 masquerade ports 30000-40000
is "$(xdpr -j nat show | jq -r '.[] | select(.dev == "r1") | "\(.action) \(.port_min)-\(.port_max)"')" \
	"masquerade 30000-40000" "nat show: r1's rule has the new port range"
sleep 0.5
o0=$(nat_ctr translated_out)
sleep 1
num "$(nat_grown "$o0" translated_out)" -ge 50 "after replace the stream is still translated (the new rule counts it)"
like "$(udp "$C1" ask 45000 3 10.0.4.2:7000)" '^10\.0\.2\.1:(3[0-9]{4}|40000)$' \
	"a new flow after replace gets a port in 30000-40000"
ok "during the stream: nat del out r2 src 192.168.0.0/16" xdpr nat del out r2 src 192.168.0.0/16
is "$(xdpr -j nat show | jq -r 'map(.dev) | join(",")')" "r1" "nat show: only r1's rule left"
ok "the stream was still running after the last change" kill -0 "$client"
s=$(sessions proto tcp)
is "$(jq -r '.[] | select(.remote_port == 5010) | "\(.outside) \(.state) \(.paired)"' <<<"$s")" \
	"10.0.2.1 established true" "nat sessions: the stream's session is established and paired"
stream_check
is "$(snmp "$C1" Tcp EstabResets)/$(snmp "$S" Tcp EstabResets)" "0/0" \
	"no connection reset on either side (Tcp EstabResets)"
is "$(csum_errors "$S")" "0/0" "server: TcpInCsumErrors/UdpInCsumErrors are 0/0"
ok "nat replace out r1 masquerade (back to the default port range)" xdpr nat replace out r1 masquerade

# ---- the outside address changes
is "$(udp "$C1" ask 46000 3 10.0.4.2:7000)" "10.0.2.1:46000" "before the change: S sees 10.0.2.1:46000"
ac0=$(nat_ctr addr_changed)
ok "ip addr add 10.0.2.5/24 dev r1" ip -n "$R" addr add 10.0.2.5/24 dev r1
ok "ip addr del 10.0.2.1/24 dev r1" ip -n "$R" addr del 10.0.2.1/24 dev r1
ip -n "$R" route replace 10.0.4.0/24 via 10.0.2.2 2>/dev/null
is "$(ip -n "$R" -4 -j addr show dev r1 | jq -r '[.[0].addr_info[].local] | join(",")')" "10.0.2.5" \
	"r1's only IPv4 address is 10.0.2.5"
is "$(udp "$C1" ask 46001 3 10.0.4.2:7000)" "10.0.2.5:46001" "a new UDP flow: S sees 10.0.2.5"
like "$(tcp_ask "$C2" 10.0.4.2 7001)" '^10\.0\.2\.5:[0-9]+$' "a new TCP connection: S sees 10.0.2.5"
is "$(udp "$C1" ask 46000 3 10.0.4.2:7000)" "10.0.2.5:46000" "the flow from before the change: S now sees 10.0.2.5"
num "$(nat_grown "$ac0" addr_changed)" -ge 1 "addr_changed grew"
ok "ping C1 -> S after the change" ping4 "$C1" 10.0.4.2 3

# ---- nat del ends every session of the rule, those it inherited by replace included
n=$(sessions | jq -r 'length')
num "$n" -ge 3 "sessions before nat del: $n (the stream's, from the replaced rule, and newer ones)"
ok "nat del out r1" xdpr nat del out r1
is "$(sessions)" "[]" "after nat del out r1: nat sessions lists nothing" ||
	diag "$(xdpr nat sessions 2>&1)"
is "$(xdpr -j nat show | jq -c .)" "[]" "nat show: no rule"

leak_check "rule changes and address change"
done_testing
