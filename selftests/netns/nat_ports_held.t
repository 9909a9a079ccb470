#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_ports_held.t - issue 10: "capacity after holddown": after expiry and
# `nat gc`, new source ports of the same host still got drop_nat_no_port
# until the hold-down expired, while the README said ports are held for the
# host.  Now they are: during the hold-down a held port goes back to its
# last inside host, from any of its ports, and another host waits.  `nat
# show` counts the ports held per outside address (text and -j), hold-down
# included.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create ph
ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
ok "nat add out r1 src 10.0.1.0/24 to 198.51.100.10 ports 5000-5002 (3 ports)" \
	xdpr nat add out r1 src 10.0.1.0/24 to 198.51.100.10 ports 5000-5002
ok "nat add out r1 src 10.0.3.0/24 masquerade" xdpr nat add out r1 src 10.0.3.0/24 masquerade
ok "nat timeout udp 3 holddown 30" xdpr nat timeout udp 3 holddown 30
udp_echo "$S" 7000 || abort "no UDP server on S"

# held RULE: rule RULE's held ports from -j nat show, "ADDR ports tcp/udp/icmp holddown; ..."
held() {
	xdpr -j nat show | jq -r --argjson id "$1" \
		'.[] | select(.id == $id) | [.held[] | "\(.addr) \(.ports) \(.tcp)/\(.udp)/\(.icmp) \(.holddown)"] | join("; ")'
}

declare -A port
for p in 40001 40002 40003; do
	a=$(udp "$C1" ask "$p" 2 10.0.4.2:7000)
	like "$a" '^198\.51\.100\.10:500[0-2]$' "C1:$p -> S leaves as 198.51.100.10 with a port of 5000-5002"
	port[$p]=${a#*:}
done
is "$(printf '%s\n' "${port[@]}" | sort -u | wc -l)" 3 "the three flows hold the three ports"
like "$(udp "$C2" ask 40001 2 10.0.4.2:7000)" '^10\.0\.2\.1:40001$' "C2:40001 -> S leaves as 10.0.2.1:40001"
ok "ping C2 -> S" ping4 "$C2" 10.0.4.2 1

is "$(held 1)" "198.51.100.10 3 0/3/0 0" "-j nat show: rule 1 holds 3 UDP ports of 198.51.100.10, none in hold-down"
is "$(held 2)" "10.0.2.1 2 0/1/1 0" "-j nat show: rule 2 holds 1 UDP port and 1 ICMP id of 10.0.2.1"
# after RULE: the line under "nat rule RULE:" in the text output
after() {
	xdpr nat show | grep -A1 "^nat rule $1:" | tail -n +2
}
is "$(after 1)" "  held 198.51.100.10: 3 ports (udp 3), 0 in hold-down" "nat show (text): the held line under rule 1"
is "$(after 2)" "  held 10.0.2.1: 2 ports (udp 1, icmp 1), 0 in hold-down" "nat show (text): the held line under rule 2"

# ---- sessions expire: the ports stay with their inside address:port
sleep 4
cli "$R" -j nat gc
is "$RC:$(jq -r '"\(.sessions_removed) \(.bindings_freed)"' <<<"$OUT")" "0:4 0" \
	"after 4 s: nat gc removes the 4 expired UDP sessions and frees no binding" ||
	diag "$OUT"
is "$(held 1)" "198.51.100.10 3 0/3/0 3" "-j nat show: the 3 ports of 198.51.100.10 are held in hold-down"
is "$(after 1)" "  held 198.51.100.10: 3 ports (udp 3), 3 in hold-down" "nat show (text): 3 in hold-down"

# another inside host of the rule (10.0.1.3, also in C1) waits for the hold-down
ip -n "$C1" addr add 10.0.1.3/24 dev c1
ok "R knows 10.0.1.3's MAC (ping from it)" ping4 "$C1" 10.0.1.1 1 -I 10.0.1.3
no_port=$(nat_ctr no_port)
is "$(NAT_UDP_BIND=10.0.1.3 udp "$C1" ask 40001 1 10.0.4.2:7000)" timeout \
	"10.0.1.3:40001 (another host) gets no outside port during the hold-down"
is "$(nat_grown "$no_port" no_port)" 1 "and is counted as no_port"
reclaimed=$(nat_ctr ports_reclaimed)
like "$(udp "$C1" ask 40004 2 10.0.4.2:7000)" '^198\.51\.100\.10:500[0-2]$' \
	"C1:40004 (same host, new port) gets one of its held ports"
is "$(nat_grown "$reclaimed" ports_reclaimed)" 1 "counted as ports_reclaimed"
is "$(held 1)" "198.51.100.10 3 0/3/0 2" "-j nat show: 3 held, 2 in hold-down"

# ---- after the hold-down the ports are anyone's
ok "nat timeout holddown 1" xdpr nat timeout holddown 1
sleep 2
like "$(NAT_UDP_BIND=10.0.1.3 udp "$C1" ask 40001 2 10.0.4.2:7000)" '^198\.51\.100\.10:500[0-2]$' \
	"after the hold-down 10.0.1.3:40001 gets a port"
done_testing
