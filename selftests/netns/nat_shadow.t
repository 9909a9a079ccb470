#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_shadow.t - "port shadowing of the router's own services" (issue 10):
# the router runs a UDP and a TCP service on 10.0.2.1:2222 (socat).  C1
# sends UDP and opens TCP from source port 2222: the NAT must not preserve
# that port (H sees another one, on the wire too), and H's datagrams and
# connections to 10.0.2.1:2222 must reach the router's services, never C1:
# with the default filter (the UDP probe comes from the very endpoint C1
# talks to) and with `filter eif` (any outside host may reach a mapping,
# for TCP too).  ports_shadowed counts the skipped port.
. "$(dirname "$0")/nat_lib.sh"

SVC=2222

nat_topo_create sh
leak_start
nat_attach filter eif

# ---- the router's own services on 10.0.2.1:2222: UDP echo, TCP "router"
timeout 120 ip netns exec "$R" socat -d -d -T 1 "UDP4-RECVFROM:$SVC,bind=10.0.2.1,fork" PIPE \
	2>"$T_TMP/svc_udp.err" &
timeout 120 ip netns exec "$R" socat "TCP4-LISTEN:$SVC,bind=10.0.2.1,reuseaddr,fork" SYSTEM:'echo router' \
	2>"$T_TMP/svc_tcp.err" &
wait_listen "$R" "$SVC" || diag "the router's TCP service did not start"
for ((i = 0; i < 50; i++)); do
	[ -n "$(in_ns "$R" ss -Huln "sport = :$SVC" 2>/dev/null)" ] && break
	sleep 0.1
done
is "$(in_ns "$R" ss -Hltun "sport = :$SVC" | awk '{print $1 " " $5}' | sort | tr '\n' ' ')" \
	"tcp 10.0.2.1:$SVC udp 10.0.2.1:$SVC " "router: UDP and TCP services on 10.0.2.1:$SVC"
tcp_echo "$H" 7001 || diag "H's TCP echo did not start"
# 7002: tells the peer what it sees, then holds the connection 5 s
# shellcheck disable=SC2016 # expanded by the shell socat starts
timeout 120 ip netns exec "$H" socat "TCP4-LISTEN:7002,reuseaddr,fork" \
	SYSTEM:'echo $SOCAT_PEERADDR\:$SOCAT_PEERPORT; sleep 5' 2>/dev/null &
wait_listen "$H" 7002 || diag "H's TCP server on 7002 did not start"

# probe.py LPORT PPORT: (H) wait for one datagram on LPORT, answer it with
# the sender's address, then send "probe" from PPORT (LPORT: the same
# socket) to 10.0.2.1:2222 and print what comes back ("probe" from the
# router's echo; C1's tool would answer "c1 saw ...").
cat >"$T_TMP/probe.py" <<'EOF'
import select, socket, sys
def sock(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    return s
lport, pport = int(sys.argv[1]), int(sys.argv[2])
s = sock(lport)
if not select.select([s], [], [], 8)[0]:
    sys.exit("nothing received")
data, frm = s.recvfrom(2048)
s.sendto(b"%s:%d\n" % (frm[0].encode(), frm[1]), frm)
p = s if pport == lport else sock(pport)
p.sendto(b"probe\n", ("10.0.2.1", 2222))
got = "no answer"
if select.select([p], [], [], 3)[0]:
    data, frm = p.recvfrom(2048)
    got = "%s from %s:%d" % (data.decode(errors="replace").strip(), frm[0], frm[1])
print(got, flush=True)
EOF

# udp_case TAG PPORT: C1 -> H:7000 from port 2222 while H probes the router's service
udp_case() {
	local tag=$1 pport=$2 h c m
	T_TIMEOUT=15 in_ns "$H" "$NAT_PY" "$T_TMP/probe.py" 7000 "$pport" >"$T_TMP/probe_$tag.out" 2>&1 &
	h=$!
	for ((i = 0; i < 50; i++)); do
		[ -n "$(in_ns "$H" ss -Huln "sport = :7000" 2>/dev/null)" ] && break
		sleep 0.1
	done
	c=$(udp "$C1" hairpin "$SVC" 5 10.0.2.2:7000)
	wait "$h"
	m=$(sed -n 1p <<<"$c")
	like "$m" '^10\.0\.2\.1:[0-9]+$' "$tag: UDP from C1 port $SVC: H sees it from 10.0.2.1 ($m)"
	ok "$tag: ... from an outside port other than $SVC" test "$m" != "10.0.2.1:$SVC"
	is "$(cat "$T_TMP/probe_$tag.out")" "probe from 10.0.2.1:$SVC" \
		"$tag: H's datagram from port $pport to 10.0.2.1:$SVC is echoed by the router's service" ||
		diag_file "$T_TMP/svc_udp.err"
	is "$(sed -n 2p <<<"$c")" "nothing received" "$tag: C1 receives nothing but H's answer"
}

cap_start out "$H" h0 "host 10.0.2.1 and (udp or tcp)" || abort "capture on h0 did not start"
cap_start in "$C1" c1 "tcp[tcpflags] & tcp-syn != 0 or udp" || abort "capture on c1 did not start"
sh0=$(nat_ctr ports_shadowed)

# ---- endpoint-independent filtering (first: nothing held yet): any outside host may reach a mapping
udp_case eif 7005
T_TIMEOUT=10 in_ns "$C1" socat -u "TCP4:10.0.2.2:7002,sourceport=$SVC,reuseaddr" - >"$T_TMP/held.out" 2>&1 &
held=$!
wait_file_line "$T_TMP/held.out" . || diag "C1's connection to H:7002 said nothing"
t=$(head -n1 "$T_TMP/held.out")
like "$t" '^10\.0\.2\.1:[0-9]+$' "eif: TCP from C1 port $SVC (held open): H sees 10.0.2.1 ($t)"
ok "eif: ... from an outside port other than $SVC" test "$t" != "10.0.2.1:$SVC"
is "$(tcp_ask "$H" 10.0.2.1 "$SVC")" "router" \
	"eif: while it is open, TCP from H to 10.0.2.1:$SVC reaches the router's service"
wait "$held"

# ---- default filter (address and port dependent): the UDP probe comes from C1's peer
ok "nat flush sessions" xdpr nat flush sessions
ok "nat replace out r1 masquerade (filter apdf, the default)" xdpr nat replace out r1 masquerade
udp_case apdf 7000
t=$(T_TIMEOUT=10 in_ns "$C1" socat -t 5 -T 5 - "TCP4:10.0.2.2:7001,sourceport=$SVC,reuseaddr" </dev/null 2>&1)
like "$t" '^10\.0\.2\.1:[0-9]+$' "apdf: TCP from C1 port $SVC: H sees 10.0.2.1 ($t)"
ok "apdf: ... from an outside port other than $SVC" test "$t" != "10.0.2.1:$SVC"
is "$(tcp_ask "$H" 10.0.2.1 "$SVC")" "router" "apdf: TCP from H to 10.0.2.1:$SVC reaches the router's service"

num "$(nat_grown "$sh0" ports_shadowed)" -ge 2 "ports_shadowed grew by >= 2 (a UDP and a TCP mapping skipped port $SVC)"
cap_stop out || fail "capture on h0 incomplete"
cap_stop in || fail "capture on c1 incomplete"

# ---- the wire
out=$(cap_json out)
c1pk=$(jq -c '[.[] | select(.src == "10.0.2.1" and (.dport == 7000 or .dport == 7001 or .dport == 7002) and
	((.text // "") | startswith("probe") | not))]' <<<"$out")
num "$(jq length <<<"$c1pk")" -ge 6 "h0: C1's packets (UDP to 7000, TCP to 7001/7002): $(jq length <<<"$c1pk")"
is "$(jq -c '[.[] | .sport] | unique' <<<"$c1pk" | grep -c "\b$SVC\b")" 0 \
	"h0: none of them leaves from port $SVC (ports: $(jq -c '[.[] | .sport] | unique' <<<"$c1pk"))"
is "$(jq -r '[.[] | select(.src == "10.0.2.1" and .dport == 7000 and .text == "ping.")] | length' <<<"$out")" 2 \
	"h0: C1's two UDP datagrams (apdf, eif) are there"
is "$(jq -r '[.[] | select(.src == "10.0.2.1" and .tcp_flags == 2 and (.dport == 7001 or .dport == 7002))] | length' <<<"$out")" 2 \
	"h0: C1's two SYNs (7001, 7002) are there"
is "$(jq -r '[.[] | select(.src == "10.0.2.1" and .sport == 2222 and .proto == 17) | .text] | join(",")' <<<"$out")" \
	"probe.,probe." "h0: from 10.0.2.1:$SVC only the router's two UDP echoes"
in=$(cap_json in)
num "$(jq '[.[] | select(.src == "10.0.1.2" and .tcp_flags == 2)] | length' <<<"$in")" -ge 2 "c1: C1's own SYNs are captured"
is "$(jq -c '[.[] | select(.src != "10.0.1.2" and (.text // "" | startswith("probe")))]' <<<"$in")" "[]" "c1: no probe datagram reached C1"
is "$(jq -c '[.[] | select(.src != "10.0.1.2" and .tcp_flags == 2)]' <<<"$in")" "[]" "c1: no connection attempt reached C1"
for ns in C1 H; do
	is "$(csum_errors "${!ns}")" "0/0" "$ns: TcpInCsumErrors/UdpInCsumErrors are 0/0"
done
leak_check "port shadowing"
done_testing
