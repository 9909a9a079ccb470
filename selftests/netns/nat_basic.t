#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_basic.t - masquerade on the outside interface: TCP and UDP servers see
# the router's outside address; 5 MB both ways over TCP arrive intact with no
# checksum error on either end; the NAT counters show the fast path did the
# work; ICMP echo from two inside hosts with the same identifier gets both
# their replies; nothing leaves with an inside source address.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create nb

# ---- without NAT the outside cannot answer the inside (the premise of every check below)
ok "without NAT: C1 -> S ping gets no answer (S has no route to the inside)" not ping4 "$C1" 10.0.4.2 1

leak_start
nat_attach

# ---- TCP and UDP: the server sees 10.0.2.1
tcp_echo "$S" 7000 || diag "tcp echo server did not start"
udp_echo "$S" 7000 || fail "UDP echo server on S port 7000 did not start"
x0=$(nat_ctr translated_out)
n0=$(nat_ctr sessions_new)
like "$(tcp_ask "$C1" 10.0.4.2 7000)" '^10\.0\.2\.1:[0-9]+$' "TCP from C1: the server sees 10.0.2.1"
like "$(tcp_ask "$C2" 10.0.4.2 7000)" '^10\.0\.2\.1:[0-9]+$' "TCP from C2: the server sees 10.0.2.1"
like "$(udp "$C1" ask 0 3 10.0.4.2:7000)" '^10\.0\.2\.1:[0-9]+$' "UDP from C1: the server sees 10.0.2.1"
like "$(udp "$C2" ask 0 3 10.0.4.2:7000)" '^10\.0\.2\.1:[0-9]+$' "UDP from C2: the server sees 10.0.2.1"
pp0=$(nat_ctr ports_preserved)
is "$(udp "$C1" ask 40123 3 10.0.4.2:7000)" "10.0.2.1:40123" "UDP from C1 port 40123: the server sees 10.0.2.1:40123 (port kept)"
num "$(nat_grown "$pp0" ports_preserved)" -ge 1 "ports_preserved grew"
num "$(nat_grown "$n0" sessions_new)" -ge 5 "sessions_new grew by >= 5"
num "$(nat_grown "$x0" translated_out)" -ge 8 "translated_out grew"

s=$(sessions proto tcp)
like "$(jq -r '.[] | "\(.inside) \(.outside) \(.remote):\(.remote_port)"' <<<"$s")" \
	'^10\.0\.1\.2 10\.0\.2\.1 10\.0\.4\.2:7000$' "nat sessions proto tcp: C1's connection to S:7000 via 10.0.2.1"
is "$(jq -r '[.[] | .proto] | unique | join(",")' <<<"$s")" "tcp" "nat sessions proto tcp lists only TCP"
s=$(sessions src 10.0.3.2 proto udp)
is "$(jq -r '.[] | "\(.inside) \(.outside) \(.remote):\(.remote_port) \(.paired)"' <<<"$s" | sort -u)" \
	"10.0.3.2 10.0.2.1 10.0.4.2:7000 true" "nat sessions src 10.0.3.2 proto udp: C2's UDP session, paired"

# ---- 5 MB each way through the NAT
make_file "$T_TMP/up" 5
make_file "$T_TMP/down" 5
o0=$(nat_ctr translated_out)
i0=$(nat_ctr translated_in)
f0=$(ctr "$R" r0 forwarded)
ok "TCP upload: 5 MB from C1 to S arrive with the same SHA-256" \
	tcp_send "$C1" "$S" 10.0.4.2 5001 "$T_TMP/up"
num "$(nat_grown "$o0" translated_out)" -ge 3000 "upload: translated_out grew by >= 3000 (data segments)"
num "$(nat_grown "$i0" translated_in)" -ge 100 "upload: translated_in grew by >= 100 (ACKs)"
num "$(grown "$f0" "$R" r0 forwarded)" -ge 3000 "upload: r0 forwarded (XDP) grew by >= 3000"
o0=$(nat_ctr translated_out)
i0=$(nat_ctr translated_in)
f1=$(ctr "$R" r1 forwarded)
ok "TCP download: 5 MB from S to C2 arrive with the same SHA-256" \
	tcp_fetch "$C2" "$S" 10.0.4.2 5002 "$T_TMP/down"
num "$(nat_grown "$i0" translated_in)" -ge 3000 "download: translated_in grew by >= 3000 (data segments)"
num "$(nat_grown "$o0" translated_out)" -ge 100 "download: translated_out grew by >= 100 (ACKs)"
num "$(grown "$f1" "$R" r1 forwarded)" -ge 3000 "download: r1 forwarded (XDP) grew by >= 3000"
ok "UDP: 200 datagrams from C1, one socket, all answered" \
	bash -c "for i in \$(seq 200); do echo 10.0.4.2:7000; done | xargs timeout 30 ip netns exec '$C1' '$NAT_PY' '$T_TMP/nat_udp.py' ask 0 2"
for ns in C1 C2 S; do
	is "$(csum_errors "${!ns}")" "0/0" "$ns: TcpInCsumErrors/UdpInCsumErrors are 0/0"
done
is "$(snmp "$C1" Tcp EstabResets)/$(snmp "$C2" Tcp EstabResets)/$(snmp "$S" Tcp EstabResets)" "0/0/0" \
	"no TCP connection was reset (EstabResets on C1/C2/S)"

# ---- ICMP echo: two inside hosts, one identifier
i0=$(nat_ctr translated_in)
T_TIMEOUT=20 in_ns "$C1" ping -q -c 10 -i 0.2 -W 2 -e 4242 10.0.4.2 >"$T_TMP/ping1" 2>&1 &
p1=$!
T_TIMEOUT=20 in_ns "$C2" ping -q -c 10 -i 0.2 -W 2 -e 4242 10.0.4.2 >"$T_TMP/ping2" 2>&1 &
p2=$!
sleep 1
s=$(sessions proto icmp)
wait "$p1"
r1=$?
wait "$p2"
r2=$?
like "$(cat "$T_TMP/ping1")" ' 10 received, 0% packet loss' "ping -e 4242 from C1: 10 of 10 replies" ||
	diag_file "$T_TMP/ping1"
like "$(cat "$T_TMP/ping2")" ' 10 received, 0% packet loss' "ping -e 4242 from C2: 10 of 10 replies" ||
	diag_file "$T_TMP/ping2"
is "$r1/$r2" "0/0" "both pings exit 0"
is "$(jq -r '[.[] | select(.inside_id == 4242 and .remote == "10.0.4.2") | .inside] | sort | join(",")' <<<"$s")" \
	"10.0.1.2,10.0.3.2" "nat sessions: echo id 4242 of C1 and of C2, one session each"
is "$(jq -r '[.[] | select(.inside_id == 4242 and .remote == "10.0.4.2") | .outside_id] | unique | length' <<<"$s")" \
	2 "the two sessions have different outside identifiers" || diag "$s"
num "$(nat_grown "$i0" translated_in)" -ge 20 "translated_in grew by >= 20 (echo replies)"

# ---- the XDP path, not the kernel, did it: reasons on the interfaces
is "$(ctr "$R" r0 drop_nat_untranslatable)/$(ctr "$R" r0 drop_nat_no_port)" "0/0" \
	"r0: no NAT drops (drop_nat_untranslatable/drop_nat_no_port)"
st=$(xdpr -j stats)
is "$(jq -r '.nat | map(.dev + ":" + .action) | join(",")' <<<"$st")" "r1:masquerade" \
	"-j stats has the nat section: one masquerade rule on r1"
num "$(jq -r '.nat[0].counters.translated_out' <<<"$st")" -ge 3000 "-j stats: the rule's translated_out >= 3000"

leak_check "TCP, UDP, ICMP and 10 MB of transfers"
done_testing
