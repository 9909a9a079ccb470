#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_noaddr.t - "masquerade without an address never leaves untranslated"
# (issue 10): masquerade on r1, then r1 loses its only IPv4 address while a
# route (10.0.2.0/24 dev r1) and a static neighbour keep the FIB sending
# C1's traffic out of r1 (then, without the neighbour, the slow path).  There is no address to masquerade to: C1's
# packets (a new UDP flow, the flow from before, ping, TCP) must be dropped
# and counted (drop_nat_untranslatable on r0, no_address on the rule), and
# nothing with an inside source - C1's 10.0.1.2, or any address of the
# inside networks - may appear on h0.  With the address back, the same
# rule translates again.
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

un0=$(ctr "$R" r0 drop_nat_untranslatable)
na0=$(nat_ctr no_address)
f0=$(ctr "$R" r0 forwarded)
f1=$(ctr "$R" r0 pass_no_neigh)
is "$(udp "$C1" ask 40901 2 10.0.2.2:7000)" "timeout" "a new UDP flow from C1 (port 40901) gets no answer"
is "$(udp "$C1" ask 40900 2 10.0.2.2:7000)" "timeout" "the flow from before (port 40900) gets no answer"
ok "ping from C1 to H gets no answer" not ping4 "$C1" 10.0.2.2 3
is "$(tcp_ask "$C1" 10.0.2.2 7001)" "" "TCP from C1 to H gets no answer"
num "$(grown "$un0" "$R" r0 drop_nat_untranslatable)" -ge 7 \
	"r0 drop_nat_untranslatable grew by >= 7 (2 datagrams, 3 echo requests, SYNs)"
num "$(nat_grown "$na0" no_address)" -ge 7 "the rule's no_address grew by >= 7"
is "$(grown "$f0" "$R" r0 forwarded)/$(grown "$f1" "$R" r0 pass_no_neigh)" "0/0" \
	"r0 forwarded and pass_no_neigh did not grow (nothing went out, fast or slow path)"

# the slow path: no neighbour for H, the FIB says "no neighbour" (the kernel would ARP and forward)
ok "neighbour 10.0.2.2 on r1 deleted" ip -n "$R" neigh del 10.0.2.2 dev r1
un0=$(ctr "$R" r0 drop_nat_untranslatable)
f1=$(ctr "$R" r0 pass_no_neigh)
is "$(udp "$C1" ask 40903 2 10.0.2.2:7000)" "timeout" "without a neighbour: a new UDP flow from C1 (port 40903) gets no answer"
num "$(grown "$un0" "$R" r0 drop_nat_untranslatable)" -ge 1 "... r0 drop_nat_untranslatable grew"
is "$(grown "$f1" "$R" r0 pass_no_neigh)" 0 "... r0 pass_no_neigh did not grow (not handed to the kernel)"

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
is "$(jq -c '[.[] | select(.src != null and (.src | test("^10\\.0\\.[13]\\."))) | {src, dst, proto, sport, dport}] | unique' <<<"$cap")" "[]" \
	"h0 capture: no packet with any inside-network source (10.0.1.0/24, 10.0.3.0/24)"

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
