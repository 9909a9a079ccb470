#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_fwd.t - port forwarding (issue 14): `xdpr nat add in DEV [proto P]
# [addr A] dport P[-P] to ADDR[:P[-P]]` on the NAT topology (nat_lib.sh).
# C1 (10.0.1.2) is the inside server, C2 (10.0.3.2) the inside client, H
# (10.0.2.2) and S (10.0.4.2) the outside clients; r1 (10.0.2.1) the
# outside interface.
#
#   - nat show / -j nat show list each forward as documented; nat sessions
#     lists a forwarded flow (inside 10.0.1.2:port, outside 10.0.2.1:port);
#   - outside clients reach the inside server, which sees their own address
#     (no source translation inbound), with no masquerade rule at all;
#     replies come from the outside address and port they were sent to;
#   - 2 MB each way over TCP through a forward, SHA-256 equal, the router's
#     kernel forwarding nothing (Ip ForwDatagrams flat), XDP counters grown;
#   - UDP; tcp+udp (proto omitted); range to range, in order; range to one
#     port (replies from each outside port as addressed);
#   - forward and masquerade on r1 at once: masquerade ports overlapping the
#     forward's, 70 outbound flows and a preserved-port request: no
#     outbound session gets a forwarded port; the forward still works;
#   - reflection: C2 reaches C1 through 10.0.2.1:forwarded port, C1 sees
#     10.0.2.1, counted (hairpinned);
#   - ICMP errors both ways: port unreachable from C1 reaches H quoting H's
#     packet as H sent it (outside addresses); port unreachable from H
#     reaches C1 quoting C1's packet (inside addresses);
#   - the filter sees forwarded flows with inside addresses;
#   - bad input: overlapping forwards, ports held by a live binding, usage
#     errors, addresses no packet can use: exit 1/2, one Error line,
#     nothing changed;
#   - nat del in; save/restore round trip.
# Nothing leaves r1 with an inside source or quoting an inside address
# (h0 capture over the whole file).
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create nf

# ---------------------------------------------------------------- helpers

# fails_like DESC RC ERE NS ARGS...: exit RC, stderr exactly one line
# "Error: ..." matching ERE, stdout empty (one test).
fails_like() {
	local desc=$1 want_rc=$2 ere=$3
	shift 3
	cli "$@"
	if [ "$RC" -eq "$want_rc" ] && [ "$(printf '%s' "$ERR" | grep -c '')" -eq 1 ] &&
		[[ "$ERR" == "Error: "* ]] && grep -Eq -- "$ere" <<<"$ERR" && [ -z "$OUT" ]; then
		pass "$desc: exit $want_rc, one Error line ($ERR)"
	else
		fail "$desc: exit $want_rc, one Error line matching /$ere/"
		diag "command: xdpr ${*:2}"
		diag "got exit $RC, stderr: $ERR"
		[ -n "$OUT" ] && diag "stdout: $OUT"
		return 1
	fi
}


# fwd_id PORT_MIN: id of the forward on r1 whose outside range starts there.
fwd_id() {
	xdpr -j nat show 2>/dev/null | jq -r --argjson p "$1" \
		'[.[] | select(.action == "forward" and .port_min == $p) | .id][0] // "none"'
}

# fwd_ctr ID FIELD: one counter of one rule ("none" if unreadable).
fwd_ctr() {
	local v
	v=$(xdpr -j nat show 2>/dev/null | jq -r --argjson i "$1" --arg f "$2" \
		'.[] | select(.id == $i) | .counters[$f] | numbers' 2>/dev/null)
	echo "${v:-none}"
}

delta() {
	if [[ "$1" =~ ^[0-9]+$ && "$2" =~ ^[0-9]+$ ]]; then echo $(($2 - $1)); else echo none; fi
}

# tcp_echo2 NS PORT: TCP server printing "PEERADDR:PEERPORT/LOCALPORT".
tcp_echo2() {
	# shellcheck disable=SC2016 # expanded by the shell socat starts
	timeout 300 ip netns exec "$1" socat "TCP4-LISTEN:$2,reuseaddr,fork" \
		SYSTEM:'echo $SOCAT_PEERADDR\:$SOCAT_PEERPORT/$SOCAT_SOCKPORT' 2>/dev/null &
	wait_listen "$1" "$2"
}

# tcp_try NS ADDR PORT: like tcp_ask, connect timeout 3 s.
tcp_try() {
	T_TIMEOUT=10 in_ns "$1" socat -t 3 -T 3 - "TCP4:$2:$3,connect-timeout=3" </dev/null 2>/dev/null
}

# Multi-port UDP server and ICMP probes (python3, one process each).
#   serve PORT...      answer each datagram with "PEERADDR:PEERPORT/LOCALPORT"
#   probe SPORT DST:PORT   connected socket; send one datagram; print
#                      "refused" (ICMP port unreachable came back), "timeout"
#                      or "answer ..."
cat >"$T_TMP/fwd_udp.py" <<'EOF'
import select, socket, sys

a = sys.argv[1:]
if a[0] == "serve":
    socks = {}
    for p in a[1:]:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", int(p)))
        socks[s] = int(p)
    while True:
        for s in select.select(list(socks), [], [])[0]:
            data, frm = s.recvfrom(65536)
            try:
                s.sendto(("%s:%d/%d\n" % (frm[0], frm[1], socks[s])).encode(), frm)
            except OSError:
                pass
elif a[0] == "probe":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", int(a[1])))
    host, port = a[2].rsplit(":", 1)
    s.connect((host, int(port)))
    s.send(b"probe\n")
    s.settimeout(3)
    try:
        print("answer " + s.recv(2048).decode(errors="replace").strip())
    except ConnectionRefusedError:
        print("refused")
    except socket.timeout:
        print("timeout")
EOF

# udp_multi NS PORT...: background multi-port UDP server (all ports bound).
udp_multi() {
	local ns=$1 p i up
	shift
	timeout 300 ip netns exec "$ns" "$NAT_PY" "$T_TMP/fwd_udp.py" serve "$@" 2>/dev/null &
	for ((i = 0; i < 50; i++)); do
		up=1
		for p in "$@"; do
			[ -n "$(in_ns "$ns" ss -Huln "sport = :$p" 2>/dev/null)" ] || { up=0; break; }
		done
		[ "$up" = 1 ] && return 0
		sleep 0.1
	done
	diag "UDP server on $* did not start"
	return 1
}

# ---------------------------------------------------------------- premise

tcp_echo2 "$C1" 80 || abort "tcp server on C1:80 did not start"
tcp_echo2 "$C1" 7000 || abort "tcp server on C1:7000 did not start"
udp_multi "$C1" 7000 || abort "udp server on C1:7000 did not start"
ok "without xdpr: H cannot reach C1 through 10.0.2.1:8080 (nothing forwards it)" \
	not tcp_try "$H" 10.0.2.1 8080

leak_start
ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"

# ---------------------------------------------------------------- phase A: forwards, no masquerade

ok "nat add in r1 proto tcp dport 8080 to 10.0.1.2:80" xdpr nat add in r1 proto tcp dport 8080 to 10.0.1.2:80
ok "nat add in r1 proto tcp dport 5001-5002 to 10.0.1.2 (same ports)" \
	xdpr nat add in r1 proto tcp dport 5001-5002 to 10.0.1.2
ok "nat add in r1 proto udp dport 5353 to 10.0.1.2:7000" xdpr nat add in r1 proto udp dport 5353 to 10.0.1.2:7000
ok "nat add in r1 dport 6000 to 10.0.1.2:7000 (tcp and udp)" xdpr nat add in r1 dport 6000 to 10.0.1.2:7000
ok "nat add in r1 proto udp dport 7100-7109 to 10.0.1.2:7200-7209 (range to range)" \
	xdpr nat add in r1 proto udp dport 7100-7109 to 10.0.1.2:7200-7209
ok "nat add in r1 proto udp dport 7300-7309 to 10.0.1.2:7400 (range to one port)" \
	xdpr nat add in r1 proto udp dport 7300-7309 to 10.0.1.2:7400
ok "nat add in r1 proto tcp dport 7500-7502 to 10.0.1.2:7600-7602 (tcp range to range)" \
	xdpr nat add in r1 proto tcp dport 7500-7502 to 10.0.1.2:7600-7602

# ---- nat show
show=$(xdpr nat show 2>&1)
lines=$(grep '^nat rule [0-9]*: in ' <<<"$show" | sed 's/^nat rule [0-9]*: //')
# README "Port forwards": a single port is printed alone ("dport 8080 to 10.0.1.2:80")
is "$lines" "in r1 tcp 10.0.2.1 dport 8080 to 10.0.1.2:80
in r1 tcp 10.0.2.1 dport 5001-5002 to 10.0.1.2:5001-5002
in r1 udp 10.0.2.1 dport 5353 to 10.0.1.2:7000
in r1 tcp+udp 10.0.2.1 dport 6000 to 10.0.1.2:7000
in r1 udp 10.0.2.1 dport 7100-7109 to 10.0.1.2:7200-7209
in r1 udp 10.0.2.1 dport 7300-7309 to 10.0.1.2:7400
in r1 tcp 10.0.2.1 dport 7500-7502 to 10.0.1.2:7600-7602" \
	"nat show: seven forward lines as the README shows them (addr omitted = r1's 10.0.2.1)" || diag "$show"
j=$(xdpr -j nat show 2>&1)
is "$(jq -r '[.[] | select(.action == "forward") | "\(.dev) \(.state) \(.proto) \(.addr) \(.port_min)-\(.port_max) \(.to) \(.to_port_min)-\(.to_port_max) \(.counters | type)"] | join(";")' <<<"$j" 2>&1)" \
	"r1 applied tcp 10.0.2.1 8080-8080 10.0.1.2 80-80 object;r1 applied tcp 10.0.2.1 5001-5002 10.0.1.2 5001-5002 object;r1 applied udp 10.0.2.1 5353-5353 10.0.1.2 7000-7000 object;r1 applied tcp+udp 10.0.2.1 6000-6000 10.0.1.2 7000-7000 object;r1 applied udp 10.0.2.1 7100-7109 10.0.1.2 7200-7209 object;r1 applied udp 10.0.2.1 7300-7309 10.0.1.2 7400-7400 object;r1 applied tcp 10.0.2.1 7500-7502 10.0.1.2 7600-7602 object" \
	"-j nat show: the forwards' fields" || diag "$j"
F1=$(fwd_id 8080)
F3=$(fwd_id 5353)
like "$F1/$F3" '^[0-9]+/[0-9]+$' "-j nat show: forwards have numeric ids"

# ---- TCP: the server sees the outside client's own address
x0=$(fwd_ctr "$F1" translated_in)
n0=$(fwd_ctr "$F1" sessions_new)
like "$(tcp_try "$H" 10.0.2.1 8080)" '^10\.0\.2\.2:[0-9]+/80$' "TCP H -> 10.0.2.1:8080: C1:80 answers, sees H's 10.0.2.2"
like "$(tcp_try "$S" 10.0.2.1 8080)" '^10\.0\.4\.2:[0-9]+/80$' "TCP S -> 10.0.2.1:8080: C1:80 answers, sees S's 10.0.4.2"
num "$(delta "$n0" "$(fwd_ctr "$F1" sessions_new)")" -ge 2 "forward 8080: sessions_new grew by >= 2"
num "$(delta "$x0" "$(fwd_ctr "$F1" translated_in)")" -ge 6 "forward 8080: translated_in grew by >= 6"

# a connection that stays open while we look at the session table
T_TIMEOUT=20 in_ns "$H" socat -T 10 "TCP4:10.0.2.1:8080,bind=10.0.2.2:43210" EXEC:'sleep 4' >/dev/null 2>&1 &
hold=$!
sleep 1
s=$(sessions proto tcp)
is "$(jq -r --argjson r "$F1" '[.[] | select(.remote_port == 43210) | "\(.proto) \(.inside):\(.inside_port) \(.outside):\(.outside_port) \(.remote):\(.remote_port) \(.rule == $r)"] | join(";")' <<<"$s" 2>&1)" \
	"tcp 10.0.1.2:80 10.0.2.1:8080 10.0.2.2:43210 true" \
	"nat sessions: H:43210's forwarded connection, inside 10.0.1.2:80, outside 10.0.2.1:8080, rule = the forward" ||
	diag "$s"
wait "$hold"

# ---- 2 MB each way; the kernel forwards none of it
make_file "$T_TMP/up" 2
make_file "$T_TMP/down" 2
k0=$(snmp "$R" Ip ForwDatagrams)
f1=$(ctr "$R" r1 forwarded)
f0=$(ctr "$R" r0 forwarded)
ok "TCP: 2 MB from H to C1 through 10.0.2.1:5001 arrive with the same SHA-256" \
	tcp_send "$H" "$C1" 10.0.2.1 5001 "$T_TMP/up"
ok "TCP: 2 MB from C1 to H through 10.0.2.1:5002 arrive with the same SHA-256" \
	tcp_fetch "$H" "$C1" 10.0.2.1 5002 "$T_TMP/down"
is "$(delta "$k0" "$(snmp "$R" Ip ForwDatagrams)")" 0 "R's kernel forwarded none of the transfers (Ip ForwDatagrams flat)"
num "$(grown "$f1" "$R" r1 forwarded)" -ge 1400 "r1 forwarded (XDP) grew by >= 1400 (upload data, download ACKs)"
num "$(grown "$f0" "$R" r0 forwarded)" -ge 1400 "r0 forwarded (XDP) grew by >= 1400 (download data, upload ACKs)"
for ns in C1 H; do
	is "$(csum_errors "${!ns}")" "0/0" "$ns: TcpInCsumErrors/UdpInCsumErrors 0/0"
done

# ---- UDP, tcp+udp
like "$(udp "$H" ask 0 3 10.0.2.1:5353)" '^10\.0\.2\.2:[0-9]+/7000$' \
	"UDP H -> 10.0.2.1:5353: C1:7000 answers from 10.0.2.1:5353, sees 10.0.2.2"
like "$(udp "$S" ask 0 3 10.0.2.1:5353)" '^10\.0\.4\.2:[0-9]+/7000$' "UDP S -> 10.0.2.1:5353: answered, sees 10.0.4.2"
like "$(tcp_try "$H" 10.0.2.1 6000)" '^10\.0\.2\.2:[0-9]+/7000$' "forward without proto: TCP to 6000 reaches C1:7000"
like "$(udp "$H" ask 0 3 10.0.2.1:6000)" '^10\.0\.2\.2:[0-9]+/7000$' "forward without proto: UDP to 6000 reaches C1:7000"
like "$(tcp_try "$H" 10.0.2.1 5353; echo "rc=$?")" '^rc=[1-9]' "proto udp forward 5353: TCP to 5353 is not forwarded"

# ---- ranges
udp_multi "$C1" $(seq 7200 7209) 7400 || diag "range servers did not start"
got="" want=""
for i in $(seq 0 9); do
	got+="$(udp "$H" ask 0 3 "10.0.2.1:$((7100 + i))" | sed 's/^10\.0\.2\.2:[0-9]*\//ok\//') "
	want+="ok/$((7200 + i)) "
done
is "$got" "$want" "range to range: 10.0.2.1:7100+i reaches C1:7200+i, answered from 10.0.2.1:7100+i"
got="" want=""
for i in $(seq 0 9); do
	got+="$(udp "$H" ask 0 3 "10.0.2.1:$((7300 + i))" | sed 's/^10\.0\.2\.2:[0-9]*\//ok\//') "
	want+="ok/7400 "
done
is "$got" "$want" "range to one: 10.0.2.1:7300+i reaches C1:7400, answered from 10.0.2.1:7300+i"
# one client socket to two outside ports of the range-to-one forward
# A known limit (README "Port forwards"): both flows would be the same inside
# flow (C1:7400 <-> H:port); xdpr keeps the first and drops the second
# (drop_nat_busy), where the kernel would remap the client's port.
b0=$(ctr "$R" r1 drop_nat_busy)
is "$(udp "$H" ask 0 3 10.0.2.1:7305 10.0.2.1:7306 | sed 's/^10\.0\.2\.2:[0-9]*\//ok\//' | tr '\n' ' ')" "ok/7400 timeout " \
	"range to one, one client socket to 7305 and 7306: the first answered, the second (the same inside flow) not"
num "$(grown "$b0" "$R" r1 drop_nat_busy)" -ge 1 "range to one: the second flow's packet is counted as drop_nat_busy"
for p in 7600 7601 7602; do tcp_echo2 "$C1" "$p" || diag "tcp server $p did not start"; done
is "$(for p in 7500 7501 7502; do tcp_try "$H" 10.0.2.1 "$p" | sed 's/^10\.0\.2\.2:[0-9]*\//ok\//'; done | tr '\n' ' ')" \
	"ok/7600 ok/7601 ok/7602 " "TCP range to range: 7500, 7501, 7502 reach C1:7600, 7601, 7602"

# ---- nat del in
ok "nat del in r1 proto udp dport 7100-7109" xdpr nat del in r1 proto udp dport 7100-7109
is "$(udp "$H" ask 0 2 10.0.2.1:7100)" "timeout" "after del: UDP to 10.0.2.1:7100 is no longer forwarded"
fails_like "nat del in r1 proto udp dport 7100-7109 again" 1 '7100' "$R" nat del in r1 proto udp dport 7100-7109
for w in "proto tcp dport 5001-5002" "dport 6000" "proto udp dport 7300-7309" "proto tcp dport 7500-7502"; do
	# shellcheck disable=SC2086 # words
	ok "nat del in r1 $w" xdpr nat del in r1 $w
done
is "$(xdpr -j nat show | jq -r '[.[] | select(.action == "forward") | .port_min] | join(",")')" "8080,5353" \
	"nat show: the two forwards left (8080, 5353)"

# ---------------------------------------------------------------- phase B: with masquerade

ok "nat add in r1 proto udp dport 5400 to 10.0.1.2:5401 (closed port on C1)" \
	xdpr nat add in r1 proto udp dport 5400 to 10.0.1.2:5401
ok "nat add in r1 proto udp dport 5402 to 10.0.1.2:5403" xdpr nat add in r1 proto udp dport 5402 to 10.0.1.2:5403
ok "nat add out r1 masquerade ports 20000-20199" xdpr nat add out r1 masquerade ports 20000-20199
ok "nat add in r1 dport 20000-20099 to 10.0.1.2:7000 (inside the masquerade's ports)" \
	xdpr nat add in r1 dport 20000-20099 to 10.0.1.2:7000
ok "nat add in r1 proto tcp addr 198.51.100.7 dport 80 to 10.0.1.2:80 (a pool address H routes to R)" \
	xdpr nat add in r1 proto tcp addr 198.51.100.7 dport 80 to 10.0.1.2:80

udp_echo "$S" 7000 || fail "UDP echo server on S port 7000 did not start"
tcp_echo "$S" 7000 || fail "TCP echo server on S port 7000 did not start"
like "$(tcp_ask "$C1" 10.0.4.2 7000)" '^10\.0\.2\.1:201[0-9][0-9]$' "C1 -> S: masqueraded to 10.0.2.1, a port in 20100-20199 (the inside server's own outbound flow)"
like "$(udp "$H" ask 0 3 10.0.2.1:20050)" '^10\.0\.2\.2:[0-9]+/7000$' "with masquerade on r1: H -> 10.0.2.1:20050 still reaches C1:7000"
like "$(tcp_try "$H" 10.0.2.1 8080)" '^10\.0\.2\.2:[0-9]+/80$' "with masquerade on r1: TCP H -> 10.0.2.1:8080 still reaches C1:80 unmasqueraded"
like "$(tcp_try "$H" 198.51.100.7 80)" '^10\.0\.2\.2:[0-9]+/80$' "pool address forward: H -> 198.51.100.7:80 reaches C1:80"
pres=$(udp "$C2" ask 20010 3 10.0.4.2:7000)
like "$pres" '^10\.0\.2\.1:[0-9]+$' "C2 from port 20010 (a forwarded port) -> S: masqueraded" &&
	num "${pres##*:}" -ge 20100 "C2 from port 20010: not given its own port 20010, which a forward holds (got ${pres##*:})"
ok "60 UDP flows from C2 (ports 30000-30059) to S" udp_spray "$C2" 10.0.4.2:7000 30000 30059
ok "10 TCP connections from C2 to S" bash -c "for i in \$(seq 10); do timeout 5 ip netns exec '$C2' socat -t 2 -T 2 - TCP4:10.0.4.2:7000 </dev/null >/dev/null || exit 1; done"
s=$(sessions src 10.0.3.2)
is "$(jq -r 'length >= 70' <<<"$s")" "true" "nat sessions: >= 70 sessions of C2" || diag "$(jq length <<<"$s")"
is "$(jq -r '[.[] | select(.outside == "10.0.2.1" and .outside_port >= 20000 and .outside_port <= 20099)] | length' <<<"$s")" 0 \
	"none of C2's outbound sessions has an outside port in 20000-20099 (the forward's)" ||
	diag "$(jq -c '[.[] | select(.outside_port >= 20000 and .outside_port <= 20099)][:5]' <<<"$s")"
is "$(jq -r '[.[] | select(.outside_port < 20100 or .outside_port > 20199)] | length' <<<"$s")" 0 \
	"all of them in 20100-20199"
like "$(udp "$H" ask 0 3 10.0.2.1:20099)" '^10\.0\.2\.2:[0-9]+/7000$' "after the outbound flows: H -> 10.0.2.1:20099 still reaches C1"

# ---- reflection
h0=$(fwd_ctr "$F1" hairpinned)
ha=$(nat_ctr hairpinned)
like "$(tcp_try "$C2" 10.0.2.1 8080)" '^10\.0\.2\.1:[0-9]+/80$' "reflection: C2 -> 10.0.2.1:8080 reaches C1:80, which sees 10.0.2.1 (the router's outside address)"
like "$(udp "$C2" ask 0 3 10.0.2.1:5353)" '^10\.0\.2\.1:[0-9]+/7000$' "reflection: UDP C2 -> 10.0.2.1:5353 answered from 10.0.2.1:5353, C1 sees 10.0.2.1"
num "$(nat_grown "$ha" hairpinned)" -ge 2 "reflection: hairpinned grew on r1's rules (>= 2)"
num "$(delta "$h0" "$(fwd_ctr "$F1" hairpinned)")" -ge 1 "reflection: the forward's own hairpinned grew" ||
	diag "$(xdpr nat show)"

# ---- ICMP errors both ways
cap_start icmp_h "$H" h0 icmp || fail "capture on h0 starts"
is "$(T_TIMEOUT=10 in_ns "$H" "$NAT_PY" "$T_TMP/fwd_udp.py" probe 42000 10.0.2.1:5400)" "refused" \
	"H -> 10.0.2.1:5400 (to C1's closed 5401): H's socket gets ECONNREFUSED (the ICMP error matches its flow)"
if cap_stop icmp_h; then
	j=$(cap_json icmp_h)
	is "$(jq -r '[.[] | select(.icmp_type == 3 and .icmp_code == 3) | "\(.src)>\(.dst) csum \(.icmp_csum_ok) ip \(.ip_csum_ok) q \(.q.src):\(.q.sport)>\(.q.dst):\(.q.dport) p\(.q.proto)"] | join(";")' <<<"$j")" \
		"10.0.2.1>10.0.2.2 csum true ip true q 10.0.2.2:42000>10.0.2.1:5400 p17" \
		"at H: one port unreachable from 10.0.2.1, quoting H's datagram as sent (10.0.2.2:42000 > 10.0.2.1:5400), checksums good" ||
		diag "$(jq -c '.[] | del(.raw)' <<<"$j" | head -5)"
	is "$(jq -r '[.[] | select(.raw | test("0a000102"))] | length' <<<"$j")" 0 "at H: 10.0.1.2 appears in no ICMP frame's bytes"
else
	fail "capture on h0 complete"
fi
cap_start icmp_c1 "$C1" c1 icmp || fail "capture on c1 starts"
T_TIMEOUT=20 in_ns "$C1" "$NAT_PY" "$T_TMP/nat_udp.py" refuse 5403 8 >"$T_TMP/refuse.out" 2>&1 &
rp=$!
wait_listen "$C1" 5403 udp || fail "UDP refuse server on C1 port 5403 did not start"
udp_spray "$H" 10.0.2.1:5402 42001 42001
wait "$rp"
is "$(tr '\n' ' ' <"$T_TMP/refuse.out")" "from 10.0.2.2:42001 refused " \
	"H's closed port: C1 (connected to H via the forward) gets ECONNREFUSED from H's port unreachable"
if cap_stop icmp_c1; then
	j=$(cap_json icmp_c1)
	is "$(jq -r '[.[] | select(.icmp_type == 3 and .icmp_code == 3) | "\(.src)>\(.dst) csum \(.icmp_csum_ok) q \(.q.src):\(.q.sport)>\(.q.dst):\(.q.dport)"] | unique | join(";")' <<<"$j")" \
		"10.0.2.2>10.0.1.2 csum true q 10.0.1.2:5403>10.0.2.2:42001" \
		"at C1: port unreachable from 10.0.2.2 quoting C1's datagram with inside addresses (10.0.1.2:5403 > 10.0.2.2:42001)" ||
		diag "$(jq -c '.[] | del(.raw)' <<<"$j" | head -5)"
else
	fail "capture on c1 complete"
fi

# ---------------------------------------------------------------- bad input
rules=$(nat_rules)
unchanged() {
	is "$(nat_rules)" "$rules" "$1: nat show unchanged"
}
fails_like "overlapping forward (tcp 8000-8100 over tcp 8080)" 1 'overlap|rule [0-9]+|8080' \
	"$R" nat add in r1 proto tcp dport 8000-8100 to 10.0.1.3
unchanged "overlapping tcp 8000-8100"
fails_like "overlapping forward (tcp+udp 8080 over tcp 8080)" 1 'overlap|rule [0-9]+|8080' \
	"$R" nat add in r1 dport 8080 to 10.0.1.3
unchanged "overlapping tcp+udp 8080"
fails_like "overlapping forward (udp 20050 over tcp+udp 20000-20099)" 1 'overlap|rule [0-9]+|20000' \
	"$R" nat add in r1 proto udp addr 10.0.2.1 dport 20050 to 10.0.1.3
unchanged "overlapping udp 20050"
held=$(jq -r '[.[] | select(.proto == "udp") | .outside_port][0] // "none"' <<<"$(sessions src 10.0.3.2 proto udp)")
like "$held" '^[0-9]+$' "a live UDP binding of C2's (outside port $held)"
fails_like "forward over a port a live binding holds (udp $held)" 1 "$held|in use|held|binding" \
	"$R" nat add in r1 proto udp dport "$held" to 10.0.1.2:7000
unchanged "forward over a held port"
fails_like "forward over a range with a held port (tcp+udp 20100-20199)" 1 'in use|held|binding|201[0-9][0-9]' \
	"$R" nat add in r1 dport 20100-20199 to 10.0.1.2:7000
unchanged "forward over a held range"
ok "a udp forward on 8080 does not overlap the tcp one" xdpr nat add in r1 proto udp dport 8080 to 10.0.1.2:7000 &&
	ok "and is deleted again" xdpr nat del in r1 proto udp dport 8080
rules=$(nat_rules)

usage() {
	local desc=$1 ere=$2
	shift 2
	fails_like "$desc" 2 "$ere" "$R" nat "$@"
	unchanged "$desc"
}
usage "missing dport" 'dport' add in r1 proto tcp to 10.0.1.2:80
usage "missing to" 'to' add in r1 proto tcp dport 9000
usage "dport 0" '0' add in r1 proto tcp dport 0 to 10.0.1.2
usage "dport 9010-9000" '9010-9000' add in r1 proto tcp dport 9010-9000 to 10.0.1.2
usage "dport 70000" '70000' add in r1 proto tcp dport 70000 to 10.0.1.2
usage "dport 9000- (cut)" '9000-' add in r1 proto tcp dport 9000- to 10.0.1.2
usage "to range of another length (10 ports to 6)" '9100-9105|length' \
	add in r1 proto tcp dport 9000-9009 to 10.0.1.2:9100-9105
usage "to port 0" '10.0.1.2:0|"0"|port' add in r1 proto tcp dport 9000 to 10.0.1.2:0
usage "to port range 9105-9100" '9105-9100' add in r1 proto tcp dport 9000-9005 to 10.0.1.2:9105-9100
usage "to 10.0.1.300" '10.0.1.300' add in r1 proto tcp dport 9000 to 10.0.1.300
usage "proto icmp" 'icmp' add in r1 proto icmp dport 9000 to 10.0.1.2
usage "unknown word" 'bogus' add in r1 proto tcp dport 9000 to 10.0.1.2 bogus
usage "addr 10.0.2.300" '10.0.2.300' add in r1 proto tcp addr 10.0.2.300 dport 9000 to 10.0.1.2
usage "nat del in without dport" 'dport' del in r1 proto tcp
for a in 0.0.0.0 127.0.0.1 224.0.0.1 255.255.255.255; do
	fails_like "addr $a" 1 "$a" "$R" nat add in r1 proto tcp addr "$a" dport 9000 to 10.0.1.2
	unchanged "addr $a"
done
for a in 0.0.0.0 127.0.0.1 224.0.0.1 255.255.255.255; do
	fails_like "to $a" 1 "$a" "$R" nat add in r1 proto tcp dport 9000 to "$a"
	unchanged "to $a"
done
fails_like "unknown interface" 1 'cannot find device "nosuch"' "$R" nat add in nosuch proto tcp dport 9000 to 10.0.1.2
unchanged "unknown interface"

# ---------------------------------------------------------------- filter
ok "filter policy drop; accept dst 10.0.1.2 proto tcp dport 80" bash -c \
	"printf '%s\n' 'dst 10.0.1.2 proto tcp dport 80 accept' | timeout 20 ip netns exec '$R' '$XDPR' filter load - &&
	 timeout 20 ip netns exec '$R' '$XDPR' filter policy drop"
like "$(tcp_try "$H" 10.0.2.1 8080)" '^10\.0\.2\.2:[0-9]+/80$' "filter (inside dport 80 accepted): H -> 10.0.2.1:8080 gets through"
is "$(udp "$H" ask 0 2 10.0.2.1:5353)" "timeout" "filter: UDP 5353 -> C1:7000 (no rule) is dropped by the policy"
ok "filter: accept dst 10.0.1.2 proto tcp dport 8080 only" bash -c \
	"printf '%s\n' 'dst 10.0.1.2 proto tcp dport 8080 accept' | timeout 20 ip netns exec '$R' '$XDPR' filter load -"
is "$(tcp_try "$H" 10.0.2.1 8080)" "" "filter (dport 8080 accepted, the outside port): H -> 10.0.2.1:8080 does not get through"
ok "filter: accept dst 10.0.2.1 proto tcp dport 8080 only" bash -c \
	"printf '%s\n' 'dst 10.0.2.1 proto tcp dport 8080 accept' | timeout 20 ip netns exec '$R' '$XDPR' filter load -"
is "$(tcp_try "$H" 10.0.2.1 8080)" "" "filter (outside address and port accepted): H -> 10.0.2.1:8080 does not get through"
ok "filter flush; policy accept" bash -c "timeout 20 ip netns exec '$R' '$XDPR' filter flush &&
	timeout 20 ip netns exec '$R' '$XDPR' filter policy accept"

# ---------------------------------------------------------------- save / restore
xdpr save >"$T_TMP/save1" 2>&1
is "$(grep -c '^nat add in ' "$T_TMP/save1")" 6 "xdpr save: six 'nat add in' lines" || diag_file "$T_TMP/save1"
grep -v '^nat add in ' "$T_TMP/save1" >"$T_TMP/save0"
ok "restore without the forwards" xdpr restore "$T_TMP/save0"
is "$(xdpr -j nat show | jq '[.[] | select(.action == "forward")] | length')" 0 "restore: the forwards are gone"
is "$(tcp_try "$H" 10.0.2.1 8080)" "" "without the forwards: H -> 10.0.2.1:8080 gets nowhere"
ok "restore the saved file" xdpr restore "$T_TMP/save1"
xdpr save >"$T_TMP/save2" 2>&1
ok "xdpr save after restore is identical" diff -u "$T_TMP/save1" "$T_TMP/save2" || diag "$(diff "$T_TMP/save1" "$T_TMP/save2")"
like "$(tcp_try "$H" 10.0.2.1 8080)" '^10\.0\.2\.2:[0-9]+/80$' "after restore: H -> 10.0.2.1:8080 reaches C1:80 again"
like "$(udp "$H" ask 0 3 10.0.2.1:20000)" '^10\.0\.2\.2:[0-9]+/7000$' "after restore: UDP 20000 reaches C1:7000"

leak_check "forwards, reflection, ICMP errors"
done_testing
