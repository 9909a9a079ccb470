#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_noaddr.t - "masquerade without an address never leaves untranslated"
# (issue 10): masquerade on r1, then r1 loses its only IPv4 address while a
# route (10.0.2.0/24 dev r1) and a static neighbour keep the FIB sending
# C1's traffic out of r1 (then, without the neighbour, the slow path).  As
# with the kernel's own masquerade (inet_select_addr), the source the FIB
# gives is then another address of the router (r0's 10.0.1.1): C1's
# packets leave as the router, and nothing with C1's inside source
# 10.0.1.2 may appear on h0, in XDP or through the kernel.  (The router
# with no address at all to give is the BPF tier's case: dropped, counted
# as no_address.)  With the address back, the same rule translates again.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create na
nat_attach
udp_echo "$H" 7000
tcp_echo "$H" 7001 || diag "H's TCP echo did not start"
is "$(udp "$C1" ask 40900 3 10.0.2.2:7000)" "10.0.2.1:40900" "before: UDP from C1 port 40900, H sees 10.0.2.1:40900"
cap_start na "$H" h0 ip || abort "capture on h0 did not start"

# ---- r1 without an IPv4 address, still the route to H
hmac=$(ip -n "$H" -j link show h0 | jq -r '.[0].address')
ok "ip addr flush dev r1" ip -n "$R" -4 addr flush dev r1
is "$(ip -n "$R" -4 -j addr show dev r1 | jq -r '[.[].addr_info[]?.local] | length')" 0 "r1 has no IPv4 address"
ok "route 10.0.2.0/24 dev r1 kept" ip -n "$R" route replace 10.0.2.0/24 dev r1
ok "static neighbour 10.0.2.2 on r1" ip -n "$R" neigh replace 10.0.2.2 lladdr "$hmac" dev r1 nud permanent
like "$(in_ns "$R" ip route get 10.0.2.2 from 10.0.1.2 iif r0)" ' dev r1 ' "the FIB sends C1's traffic for H out of r1"
sleep 0.5 # the CLI's view of addresses is not needed: the datapath asks the FIB per packet

f0=$(ctr "$R" r0 forwarded)
is "$(udp "$C1" ask 40901 2 10.0.2.2:7000)" "timeout" "a new UDP flow from C1 (port 40901) gets no answer (H has no route back to 10.0.1.1)"
is "$(udp "$C1" ask 40900 2 10.0.2.2:7000)" "timeout" "the flow from before (port 40900) gets no answer"
ok "ping from C1 to H gets no answer" not ping4 "$C1" 10.0.2.2 3
is "$(tcp_ask "$C1" 10.0.2.2 7001)" "" "TCP from C1 to H gets no answer"
num "$(grown "$f0" "$R" r0 forwarded)" -ge 7 \
	"r0 forwarded >= 7 (2 datagrams, 3 echo requests, SYNs), translated to the router's other address"
num "$(nat_ctr addr_changed)" -ge 1 "the flow from before was re-created on the new address (addr_changed)"

# the slow path: no neighbour for H, the FIB says "no neighbour" (the kernel ARPs and forwards)
ok "neighbour 10.0.2.2 on r1 deleted" ip -n "$R" neigh del 10.0.2.2 dev r1
f1=$(ctr "$R" r0 pass_no_neigh)
is "$(udp "$C1" ask 40903 2 10.0.2.2:7000)" "timeout" "without a neighbour: a new UDP flow from C1 (port 40903) gets no answer"
num "$(grown "$f1" "$R" r0 pass_no_neigh)" -ge 1 "... handed to the kernel translated (pass_no_neigh)"

# H's markers (broadcast: no ARP to wait for): the capture runs to the end
T_TIMEOUT=5 in_ns "$H" "$NAT_PY" -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
for i in range(3):
    s.sendto(b"marker", ("10.0.2.255", 9))' 2>/dev/null
cap_stop na || fail "capture on h0 incomplete"
cap=$(cap_json na)
is "$(jq '[.[] | select(.src == "10.0.2.2" and .text == "marker")] | length' <<<"$cap")" 3 \
	"h0 capture: H's 3 markers sent at the end are there"
is "$(jq -c '[.[] | select(.src == "10.0.1.2") | {src, dst, proto, sport, dport}]' <<<"$cap")" "[]" \
	"h0 capture: no packet with C1's source 10.0.1.2"
is "$(jq -c '[.[] | select(.src != null and (.src | test("^10\\.0\\.[13]\\.")) and .src != "10.0.1.1") | {src, dst, proto, sport, dport}] | unique' <<<"$cap")" "[]" \
	"h0 capture: no packet with an inside host's source (10.0.1.0/24, 10.0.3.0/24 but the router's 10.0.1.1)"
num "$(jq '[.[] | select(.src == "10.0.1.1" and .dst == "10.0.2.2")] | length' <<<"$cap")" -ge 5 \
	"h0 capture: C1's packets left as the router's 10.0.1.1"

# ---- the address comes back: the same rule translates again
ip -n "$R" route del 10.0.2.0/24 dev r1 2>/dev/null
ok "ip addr add 10.0.2.1/24 dev r1" ip -n "$R" addr add 10.0.2.1/24 dev r1
like "$(udp "$C1" ask 40902 3 10.0.2.2:7000)" '^10\.0\.2\.1:40902$' "after: UDP from C1 port 40902, H sees 10.0.2.1:40902" ||
	diag "$(xdpr -j stats | jq -c '.interfaces[] | {dev, r: (.reasons | with_entries(select(.value.packets > 0)) | map_values(.packets))}')
$(xdpr nat sessions)
$(ip -n "$H" neigh)
$(ip -n "$R" route)"
ok "after: ping from C1 to H" ping4 "$C1" 10.0.2.2 2
done_testing
