#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_mapping.t - how outside endpoints are chosen: endpoint-independent
# mapping (one inside socket, two servers, one outside port), hairpinning
# (an inside host reaches another through the outside address), a pool rule
# (address from the pool, the same for every flow of a host), a range of 4
# ports with 6 flows (4 work, 2 dropped and counted as no_port, no stall),
# and the per-host session limit.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create nm
leak_start
nat_attach filter eif
udp_echo "$H" 7000 || fail "UDP echo server on H port 7000 did not start"
udp_echo "$S" 7000 || fail "UDP echo server on S port 7000 did not start"

# ---- endpoint-independent mapping
out=$(udp "$C1" ask 40000 3 10.0.4.2:7000 10.0.2.2:7000)
is "$(tr '\n' ' ' <<<"$out")" "10.0.2.1:40000 10.0.2.1:40000 " \
	"one C1 socket (port 40000) to S and to H: both see 10.0.2.1:40000"
# C2 uses the same inside port: it cannot keep it, but keeps one mapping
out=$(udp "$C2" ask 40000 3 10.0.4.2:7000 10.0.2.2:7000)
a=$(sed -n 1p <<<"$out")
b=$(sed -n 2p <<<"$out")
like "$a" '^10\.0\.2\.1:[0-9]+$' "C2 port 40000 to S: seen from 10.0.2.1"
ok "C2's outside port is not C1's 40000 ($a)" test "$a" != "10.0.2.1:40000"
is "$b" "$a" "one C2 socket (port 40000) to S and to H: both see the same outside endpoint"
s=$(sessions proto udp)
is "$(jq -r '[.[] | select(.inside == "10.0.1.2" and .inside_port == 40000) | "\(.remote)=\(.outside):\(.outside_port)"] | sort | join(" ")' <<<"$s")" \
	"10.0.2.2=10.0.2.1:40000 10.0.4.2=10.0.2.1:40000" "nat sessions: C1's two sessions share 10.0.2.1:40000"

# ---- hairpinning: C2 -> 10.0.2.1:<C1's outside port> reaches C1
hp0=$(nat_ctr hairpinned)
udp "$C1" hairpin 40100 8 10.0.4.2:7000 >"$T_TMP/hairpin.out" 2>&1 &
hp=$!
wait_file_line "$T_TMP/hairpin.out" '.' || diag "C1's hairpin tool printed nothing"
m=$(head -n1 "$T_TMP/hairpin.out")
is "$m" "10.0.2.1:40100" "C1 port 40100 is mapped to 10.0.2.1:40100"
out=$(udp "$C2" ask 40101 3 "$m")
wait "$hp"
like "$(sed -n 2p "$T_TMP/hairpin.out")" '^got 10\.0\.2\.1:40101 ping$' \
	"C1 receives C2's datagram to $m, from C2's outside endpoint 10.0.2.1:40101" ||
	diag_file "$T_TMP/hairpin.out"
is "$out" "c1 saw 10.0.2.1:40101" "C2 gets C1's answer back from $m (hairpin both ways)"
num "$(nat_grown "$hp0" hairpinned)" -ge 2 "hairpinned grew by >= 2"

# ---- filtering: "filter eif" lets any outside host reach a mapping, the default (apdf) does not
udp "$C1" hairpin 40200 6 10.0.4.2:7000 >"$T_TMP/eif.out" 2>&1 &
hp=$!
wait_file_line "$T_TMP/eif.out" '.' || diag "C1's tool printed nothing"
out=$(udp "$H" ask 9999 3 10.0.2.1:40200)
wait "$hp"
is "$(sed -n 2p "$T_TMP/eif.out")" "got 10.0.2.2:9999 ping" \
	"filter eif: H (never addressed by C1) reaches C1's mapping 10.0.2.1:40200" || diag_file "$T_TMP/eif.out"
is "$out" "c1 saw 10.0.2.2:9999" "filter eif: H gets C1's answer"
ok "nat replace out r1 masquerade (filter apdf, the default)" xdpr nat replace out r1 masquerade
is "$(xdpr -j nat show | jq -r '.[] | "\(.dev) \(.action) \(.filter)"')" "r1 masquerade apdf" \
	"nat show: one rule, masquerade, apdf"
fl0=$(nat_ctr filtered)
pf0=$(ctr "$R" r1 pass_nat_filtered)
udp "$C1" hairpin 40300 3 10.0.4.2:7000 >"$T_TMP/apdf.out" 2>&1 &
hp=$!
wait_file_line "$T_TMP/apdf.out" '.' || diag "C1's tool printed nothing"
out=$(udp "$H" ask 9999 1 10.0.2.1:40300)
wait "$hp"
is "$(head -n1 "$T_TMP/apdf.out")" "10.0.2.1:40300" "C1 port 40300 is mapped to 10.0.2.1:40300"
is "$(sed -n 2p "$T_TMP/apdf.out")" "nothing received" \
	"filter apdf: H's datagram to C1's mapping is not delivered" || diag_file "$T_TMP/apdf.out"
num "$(nat_grown "$fl0" filtered)" -ge 1 "rule counter filtered grew"
num "$(grown "$pf0" "$R" r1 pass_nat_filtered)" -ge 1 "r1 pass_nat_filtered grew"

# ---- pool rule
ok "nat del out r1" xdpr nat del out r1
ok "nat add out r1 to 198.51.100.10-198.51.100.13" xdpr nat add out r1 to 198.51.100.10-198.51.100.13
is "$(xdpr -j nat show | jq -r '.[] | "\(.dev) \(.action) \(.pool_first)-\(.pool_last)"')" \
	"r1 pool 198.51.100.10-198.51.100.13" "nat show: the pool rule"
a=$(udp "$C1" ask 40010 3 10.0.4.2:7000)
b=$(udp "$C1" ask 40011 3 10.0.4.2:7000)
c=$(udp "$C2" ask 40012 3 10.0.4.2:7000)
like "$a" '^198\.51\.100\.1[0-3]:40010$' "C1 flow 1: S sees an address in the pool ($a)"
like "$b" '^198\.51\.100\.1[0-3]:40011$' "C1 flow 2: S sees an address in the pool ($b)"
is "${b%:*}" "${a%:*}" "both flows of C1 use the same pool address (paired)"
like "$c" '^198\.51\.100\.1[0-3]:40012$' "C2: S sees an address in the pool ($c)"
tcp_echo "$S" 7001 || diag "tcp echo server did not start"
pa=${a%:*}
like "$(tcp_ask "$C1" 10.0.4.2 7001)" "^${pa//./\\.}:[0-9]+\$" "TCP from C1: S sees C1's pool address too"

# ---- 4 ports, 6 flows
ok "nat replace out r1 to 198.51.100.10-198.51.100.13 ports 20000-20003" \
	xdpr nat replace out r1 to 198.51.100.10-198.51.100.13 ports 20000-20003
np0=$(ctr "$R" r0 drop_nat_no_port)
good=0
bad=0
start=$SECONDS
for p in 41001 41002 41003 41004 41005 41006; do
	r=$(udp "$C1" ask "$p" 1 10.0.4.2:7000)
	if [[ "$r" =~ ^198\.51\.100\.1[0-3]:2000[0-3]$ ]]; then
		good=$((good + 1))
	else
		bad=$((bad + 1))
		diag "flow from port $p: $r"
	fi
done
is "$good/$bad" "4/2" "6 UDP flows through 4 ports: 4 answered from ports 20000-20003, 2 not"
num "$((SECONDS - start))" -le 10 "the 6 flows took <= 10 s (nothing hangs)"
num "$(nat_ctr no_port)" -ge 2 "rule counter no_port >= 2"
num "$(grown "$np0" "$R" r0 drop_nat_no_port)" -ge 2 "r0 drop_nat_no_port grew by >= 2"
s=$(sessions src 10.0.1.2 proto udp)
is "$(jq -r '[.[] | select(.inside_port > 41000 and .inside_port < 41007) | .outside_port] | sort | join(",")' <<<"$s")" \
	"20000,20001,20002,20003" "nat sessions: the 4 flows hold ports 20000-20003, one each"
# the 4 sessions still answer (nothing was broken by the refused ones)
r=$(udp "$C1" ask 41001 2 10.0.4.2:7000)
like "$r" '^198\.51\.100\.1[0-3]:2000[0-3]$' "flow from port 41001 still works ($r)"

# ---- per-host session limit
ok "nat flush sessions" xdpr nat flush sessions
ok "nat replace out r1 masquerade" xdpr nat replace out r1 masquerade
is "$(xdpr -j nat limit host 3 | jq -r .host)" 3 "nat limit host 3"
hl0=$(ctr "$R" r2 drop_nat_host_limit)
hc0=$(nat_ctr host_limit)
good=0
for p in 42001 42002 42003 42004 42005; do
	r=$(udp "$C2" ask "$p" 1 10.0.4.2:7000) && good=$((good + 1))
done
is "$good" 3 "host limit 3: 3 of 5 UDP flows from C2 work"
num "$(nat_grown "$hc0" host_limit)" -ge 2 "rule counter host_limit grew by >= 2"
num "$(grown "$hl0" "$R" r2 drop_nat_host_limit)" -ge 2 "r2 drop_nat_host_limit grew by >= 2"
is "$(udp "$C1" ask 42006 2 10.0.4.2:7000)" "10.0.2.1:42006" "C1 is not limited by C2's sessions"
is "$(xdpr -j nat limit host 4096 | jq -r .host)" 4096 "nat limit host 4096"
like "$(udp "$C2" ask 42007 2 10.0.4.2:7000)" '^10\.0\.2\.1:42007$' "with the limit raised, C2 gets a new session"

for ns in C1 C2 S; do
	is "$(csum_errors "${!ns}")" "0/0" "$ns: TcpInCsumErrors/UdpInCsumErrors are 0/0"
done
leak_check "mapping, hairpin, pool, port range and host limit"
done_testing
