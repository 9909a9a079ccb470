#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# npt6.t - NPTv6 (RFC 6296) on the outside interface r1:
#
#   C1 c1 fd01:203:405:1::2/64 -- r0 fd01:203:405:1::1  R  r1 2001:db8:ff::1/64 -- h0 2001:db8:ff::2  H
#                                                             H h1 2001:db8:4::1/64 -- s0 2001:db8:4::2  S
#
# inside fd01:203:405::/48 <-> outside 2001:db8:1::/48 (then a /64 rule).  H
# routes only the outside prefix to R: an untranslated inside source gets no
# answer.  The mapping is computed here (python, RFC 6296 3.2-3.7), never by
# xdpr; on H's side of r1 every packet from C1 carries it, with the TCP/UDP/
# ICMPv6 checksums C1 sent (checksum-neutral); ping6, TCP (1 MB, SHA-256),
# UDP and a traceroute6 (time exceeded from H and S quoted back to C1) work;
# the counters say XDP did it; bad input is refused with nothing changed.
. "$(dirname "$0")/nat_lib.sh"
need traceroute6

INP=fd01:203:405::/48 OUTP=2001:db8:1::/48 C1A=fd01:203:405:1::2

# npt_map ADDR FROM/LEN TO/LEN: RFC 6296's mapping of ADDR, or "none".
npt_map() {
	"$NAT_PY" - "$@" <<'PY'
import ipaddress, sys
a = int(ipaddress.IPv6Address(sys.argv[1]))
f, t = ipaddress.IPv6Network(sys.argv[2]), ipaddress.IPv6Network(sys.argv[3])
n = f.prefixlen
def words(x): return [(x >> (112 - 16 * i)) & 0xffff for i in range(8)]
def osum(ws):
    s = 0
    for w in ws:
        s += w
        s = (s & 0xffff) + (s >> 16)
    return s
adj = osum([osum(words(int(f.network_address))), 0xffff ^ osum(words(int(t.network_address)))])
mask = ((1 << 128) - 1) ^ ((1 << (128 - n)) - 1)
b = words((a & ~mask) | int(t.network_address))
idx = 3 if n <= 48 else next((i for i in range(4, 8) if b[i] != 0xffff), None)
if idx is None or b[idx] == 0xffff:
    print("none"); sys.exit()
v = osum([b[idx], adj])
b[idx] = 0 if v == 0xffff else v
print(ipaddress.IPv6Address(sum(w << (112 - 16 * i) for i, w in enumerate(b))))
PY
}

npt_topo() {
	local ns i
	C1="xdpr-$T_ID-np-c1" R="xdpr-$T_ID-np-r" H="xdpr-$T_ID-np-h" S="xdpr-$T_ID-np-s"
	for ns in "$C1" "$R" "$H" "$S"; do
		ip netns add "$ns" || bail_out "cannot create namespace $ns"
		T_NS_MADE+=("$ns")
		ip -n "$ns" link set lo up
		in_ns "$ns" sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0 \
			net.ipv6.icmp.ratelimit=0 net.ipv6.conf.all.forwarding=1 >/dev/null
	done
	ip -n "$R" link add r0 type veth peer name c1 netns "$C1" || bail_out "veth r0/c1"
	ip -n "$R" link add r1 type veth peer name h0 netns "$H" || bail_out "veth r1/h0"
	ip -n "$H" link add h1 type veth peer name s0 netns "$S" || bail_out "veth h1/s0"
	ip -n "$C1" addr add $C1A/64 dev c1 nodad
	ip -n "$R" addr add fd01:203:405:1::1/64 dev r0 nodad
	ip -n "$R" addr add 2001:db8:ff::1/64 dev r1 nodad
	ip -n "$H" addr add 2001:db8:ff::2/64 dev h0 nodad
	ip -n "$H" addr add 2001:db8:4::1/64 dev h1 nodad
	ip -n "$S" addr add 2001:db8:4::2/64 dev s0 nodad
	in_ns "$C1" ethtool -K c1 gro on tx off >/dev/null 2>&1 || bail_out "ethtool c1"
	in_ns "$H" ethtool -K h0 gro on tx off >/dev/null 2>&1 || bail_out "ethtool h0"
	in_ns "$H" ethtool -K h1 tx off >/dev/null 2>&1
	in_ns "$S" ethtool -K s0 tx off >/dev/null 2>&1
	for i in r0 r1; do in_ns "$R" ethtool -K $i tx off >/dev/null 2>&1; ip -n "$R" link set $i up; done
	ip -n "$C1" link set c1 up; ip -n "$H" link set h0 up; ip -n "$H" link set h1 up; ip -n "$S" link set s0 up
	ip -n "$C1" -6 route add default via fd01:203:405:1::1
	ip -n "$R" -6 route add 2001:db8:4::/64 via 2001:db8:ff::2
	ip -n "$H" -6 route add 2001:db8:1::/48 via 2001:db8:ff::1
	ip -n "$S" -6 route add default via 2001:db8:4::1
	for ((i = 0; i < 10; i++)); do
		T_TIMEOUT=5 in_ns "$C1" ping -6 -c1 -W1 -q fd01:203:405:1::1 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$R" ping -6 -c1 -W1 -q 2001:db8:4::2 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$H" ping -6 -c1 -W1 -q 2001:db8:ff::1 >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	bail_out "topology: links or routes do not work"
}

# norm TEXT: the first IPv6 address in TEXT, compressed ("none": none)
norm() { "$NAT_PY" -c 'import ipaddress, re, sys
m = re.search(r"[0-9a-fA-F:]{2,}:[0-9a-fA-F:]+", sys.argv[1])
print(ipaddress.IPv6Address(m.group(0)) if m else "none")' "$1"; }

# npt_ctr FIELD: the counter of the rule on r1, summed ("none": unreadable)
npt_ctr() {
	local v
	v=$(xdpr -j nat show 2>/dev/null | jq -r --arg f "$1" \
		'[.[] | select(.kind == "npt" and .dev == "r1") | .counters[$f]] | if length == 0 then "none" else add end' 2>/dev/null)
	echo "${v:-none}"
}

# fwd6: the kernel's Ip6OutForwDatagrams in R (XDP-forwarded packets never count there)
fwd6() { in_ns "$R" awk '$1 == "Ip6OutForwDatagrams" { print $2 }' /proc/net/snmp6; }

# wire NAME: the capture as JSON lines {src, dst, proto, sport, dport, csum, payload, qsrc, qdst}
wire() {
	timeout 30 "$NAT_PY" - "$T_TMP/$1.pcap" <<'PY'
import json, sys
from scapy.all import rdpcap, IPv6, UDP, TCP, ICMPv6EchoRequest, ICMPv6EchoReply, IPerror6, Raw
for p in rdpcap(sys.argv[1]):
    if IPv6 not in p:
        continue
    ip = p[IPv6]
    d = {"src": ip.src, "dst": ip.dst, "nh": ip.nh, "hlim": ip.hlim}
    l4 = ip.payload
    d["type"] = {6: "TCP", 17: "UDP", 58: "ICMPv6"}.get(ip.nh, "other")
    if getattr(l4, "chksum", None) is not None:
        d["csum"] = l4.chksum
    if getattr(l4, "cksum", None) is not None:
        d["csum"] = l4.cksum
    if hasattr(l4, "sport"):
        d["sport"], d["dport"] = l4.sport, l4.dport
    if hasattr(l4, "type") and ip.nh == 58:
        d["icmp"] = l4.type
    if IPerror6 in p:
        d["qsrc"], d["qdst"] = p[IPerror6].src, p[IPerror6].dst
    if Raw in p:
        d["payload"] = bytes(p[Raw].load[:16]).hex()
    print(json.dumps(d))
PY
}

npt_topo

MAPPED=$(npt_map $C1A $INP $OUTP)
like "$MAPPED" "^2001:db8:1:[0-9a-f]+::2$" "RFC 6296 maps $C1A to $MAPPED (computed here: the adjustment at bits 48-63)"

ok "without NPTv6: C1 -> S ping6 gets no answer" not in_ns "$C1" ping -6 -c1 -W1 -q 2001:db8:4::2
ok "link attach r0 r1" xdpr_attach r0 r1 || abort "cannot attach"

# ---- bad input: exit codes, one Error line, nothing changed
before=$(xdpr save)
bad() { # WANT_RC ERE DESC WORDS...
	local rc=$1 re=$2 desc=$3 out
	shift 3
	out=$(xdpr "$@" 2>&1 >/dev/null); got=$?
	if [ "$got" -eq "$rc" ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -Eq "^Error: .*$re" <<<"$out"; then
		pass "$desc: exit $rc, $out"
	else
		fail "$desc"; diag "exit $got: $out"
	fi
}
bad 2 "differ in length" "prefixes of different lengths" nat add npt r1 inside $INP outside 2001:db8:1::/56
bad 2 "host bits set" "host bits set" nat add npt r1 inside fd01:203:405::1/48 outside $OUTP
bad 2 "multicast" "multicast outside prefix" nat add npt r1 inside $INP outside ff05:1::/48
bad 2 "link-local" "link-local inside prefix" nat add npt r1 inside fe80:1::/48 outside $OUTP
bad 2 "1 to 64 bits" "a /96 prefix" nat add npt r1 inside fd01:203:405::/96 outside 2001:db8:1::/96
bad 2 "expected" "missing words" nat add npt r1 inside $INP
bad 1 "not attached" "DEV not attached" nat add npt lo inside $INP outside $OUTP
bad 1 "address of this router" "outside prefix holding the router's own address" nat add npt r1 inside $INP outside 2001:db8:ff::/48
is "$(xdpr save)" "$before" "after the refusals: the running state is unchanged"

ok "nat add npt r1 inside $INP outside $OUTP" xdpr nat add npt r1 inside $INP outside $OUTP
bad 1 "overlap" "a rule overlapping it" nat add npt r1 inside fd01:203:405::/56 outside 2001:db8:2::/56
bad 1 "overlap" "a rule whose outside is the other's inside" nat add npt r1 inside 2001:db8:1::/48 outside 2001:db8:7::/48
bad 1 "no NPTv6 rule" "del of a rule that does not exist" nat del npt r1 inside 2001:db8:9::/48
diag "$(xdpr nat show 2>&1 | grep -A6 npt)"
like "$(xdpr nat show)" "^npt rule 0: dev r1 inside fd01:203:405::/48 outside 2001:db8:1::/48" "nat show lists the rule"
is "$(xdpr -j nat show | jq -r '.[] | select(.kind == "npt") | "\(.dev) \(.inside) \(.outside) \(.prefix_len)"')" \
	"r1 fd01:203:405::/48 2001:db8:1::/48 48" "-j nat show: kind npt, dev, prefixes, length"
like "$(xdpr save)" "nat add npt r1 inside fd01:203:405::/48 outside 2001:db8:1::/48" "xdpr save has the rule"

# ---- traffic, captured on both sides of R
cap_start in "$C1" c1 ip6 || fail "capture on c1"
cap_start out "$H" h0 ip6 || fail "capture on h0"
o0=$(npt_ctr translated_out) i0=$(npt_ctr translated_in) e0=$(npt_ctr icmp_errors) k0=$(fwd6)
ok "ping6 C1 -> S through NPTv6" in_ns "$C1" ping -6 -c3 -i0.2 -W2 -q 2001:db8:4::2
# (one python process answers: socat's fork server, under load, often took
# more than the client's 3 s to answer a datagram it had received)
udp_echo "$S" 7000 6 || fail "UDP server on S port 7000 did not start"
is "$(norm "$(udp "$C1" ask 0 5 2001:db8:4::2:7000)")" "$MAPPED" "UDP: S sees the source as $MAPPED"
make_file "$T_TMP/blob" 1
timeout 40 ip netns exec "$S" socat -u "OPEN:$T_TMP/blob,rdonly" TCP6-LISTEN:7002,reuseaddr 2>/dev/null &
spid=$!
wait_listen "$S" 7002 || diag "TCP server did not start"
T_TIMEOUT=30 in_ns "$C1" socat -u TCP6:[2001:db8:4::2]:7002 "CREATE:$T_TMP/blob.recv" 2>"$T_TMP/tcp.err"
wait "$spid"
is "$(sha256sum <"$T_TMP/blob.recv" 2>/dev/null)" "$(sha256sum <"$T_TMP/blob")" "TCP: 1 MB S -> C1 over TCP arrives byte-exact (SHA-256)"
tr=$(T_TIMEOUT=30 in_ns "$C1" traceroute6 -n -q1 -w2 -m5 2001:db8:4::2 2>&1)
diag "$tr"
like "$(sed -n 2p <<<"$tr")" "fd01:203:405:1::1" "traceroute6 hop 1: R itself (the kernel answers, untranslated)"
like "$(sed -n 3p <<<"$tr")" "2001:db8:ff::2" "traceroute6 hop 2: H's time exceeded, sent to $MAPPED, reached C1"
like "$(sed -n 4p <<<"$tr")" "2001:db8:4::2" "traceroute6 hop 3: S"
# from the outside, a hop limit that ends at R: the kernel's error must quote what H sent
pe=$(T_TIMEOUT=10 in_ns "$H" ping -6 -c1 -W2 -t1 "$MAPPED" 2>&1)
diag "$pe"
like "$pe" "From 2001:db8:ff::1 .*(Time exceeded|Destination unreachable)" \
	"hop limit 1 from H to $MAPPED: R answers with an ICMPv6 error"
cap_stop in || fail "capture on c1 ended badly"
cap_stop out || fail "capture on h0 ended badly"
wire in >"$T_TMP/in.json"
wire out >"$T_TMP/out.json"
num "$(jq -s '[.[] | select(.src == "'$C1A'")] | length' "$T_TMP/in.json")" -ge 10 "c1 capture: C1's packets seen"
is "$(jq -s '[.[] | select(.src == "'$C1A'" or .dst == "'$C1A'" or .qsrc == "'$C1A'" or .qdst == "'$C1A'")] | length' "$T_TMP/out.json")" 	0 "h0 capture: no inside address on the outside link (headers or quoted in errors)"
num "$(jq -s '[.[] | select(.src == "2001:db8:ff::1" and .qdst == "'$MAPPED'")] | length' "$T_TMP/out.json")" -ge 1 \
	"h0 capture: R's error about the hop-limit-1 packet quotes $MAPPED, as H sent it"
for t in ICMPv6 UDP TCP; do
	# what C1 sent beyond R (hop limit > 1; echo requests of the ICMPv6)
	a=$(jq -s -c '[.[] | select(.src == "'$C1A'" and .type == "'$t'" and .hlim > 1 and (.dst | startswith("2001:db8:4:"))
		and (.type != "ICMPv6" or .icmp == 128)) | [.csum, .payload // ""]] | sort' "$T_TMP/in.json")
	b=$(jq -s -c '[.[] | select(.src == "'$MAPPED'" and .type == "'$t'") | [.csum, .payload // ""]] | sort' "$T_TMP/out.json")
	if [ "$a" != "[]" ] && [ "$a" == "$b" ] && ! grep -q null <<<"$a"; then
		pass "$t: every packet C1 sent left with source $MAPPED and the checksum C1 gave it ($(jq length <<<"$a") packets)"
	else
		fail "$t: sources or checksums differ on the wire"; diag "c1: ${a:0:300}"; diag "h0: ${b:0:300}"
	fi
done
num "$(jq -s '[.[] | select(.dst == "'$MAPPED'" and .icmp == 3 and .qsrc == "'$MAPPED'")] | length' "$T_TMP/out.json")" -ge 1 \
	"h0: H's time exceeded goes to $MAPPED quoting $MAPPED"
num "$(jq -s '[.[] | select(.dst == "'$C1A'" and .icmp == 3 and .qsrc == "'$C1A'" and .src == "2001:db8:ff::2")] | length' "$T_TMP/in.json")" -ge 1 \
	"c1: that error arrives at $C1A quoting $C1A (the quoted packet mapped back)"
nout=$(jq -s '[.[] | select(.src == "'$MAPPED'")] | length' "$T_TMP/out.json")
# (not the one whose hop limit ends at R: it goes to the kernel as it came)
nin=$(jq -s '[.[] | select(.dst == "'$MAPPED'" and .hlim > 1)] | length' "$T_TMP/out.json")
# at least: 3 echo requests, 1 datagram, TCP's SYN, ACK and FIN and the
# traceroute's probes for hops 2 and 3 (how many ACKs the 1 MB takes
# depends on GRO: 48 to 148 in all were seen)
num "$nout" -ge 9 "h0: $nout packets from $MAPPED"
is "$(( $(npt_ctr translated_out) - o0 ))" "$nout" "translated_out grew by exactly the packets seen leaving with source $MAPPED"
is "$(( $(npt_ctr translated_in) - i0 ))" "$nin" "translated_in grew by exactly the packets H sent to $MAPPED ($nin)"
num "$(( $(npt_ctr icmp_errors) - e0 ))" -ge 1 "icmp_errors grew (time exceeded from H)"
num "$(( $(fwd6) - k0 ))" -le 20 "the kernel forwarded next to none of it (Ip6OutForwDatagrams): XDP did"

# ---- a /64 rule instead (the adjustment in the interface identifier)
ok "nat del npt r1" xdpr nat del npt r1
is "$(xdpr -j nat show | jq '[.[] | select(.kind == "npt")] | length')" 0 "the rule is gone"
ok "without the rule: ping6 C1 -> S gets no answer" not in_ns "$C1" ping -6 -c1 -W1 -q 2001:db8:4::2
ip -n "$H" -6 route add 2001:db8:1:77::/64 via 2001:db8:ff::1
M64=$(npt_map $C1A fd01:203:405:1::/64 2001:db8:1:77::/64)
ok "nat add npt r1 inside fd01:203:405:1::/64 outside 2001:db8:1:77::/64" \
	xdpr nat add npt r1 inside fd01:203:405:1::/64 outside 2001:db8:1:77::/64
is "$(norm "$(udp "$C1" ask 0 5 2001:db8:4::2:7000)")" \
	"$M64" "/64: S sees $C1A as $M64 (computed here; the adjustment in the identifier's first word)"
ok "/64: ping6 C1 -> S" in_ns "$C1" ping -6 -c2 -i0.2 -W2 -q 2001:db8:4::2

# ---- save / restore
xdpr save >"$T_TMP/saved"
ok "nat del npt r1" xdpr nat del npt r1
ok "xdpr restore puts the rule back" xdpr restore - <"$T_TMP/saved"
is "$(xdpr save)" "$(cat "$T_TMP/saved")" "after restore: the same state"
ok "after restore: ping6 C1 -> S" in_ns "$C1" ping -6 -c2 -i0.2 -W2 -q 2001:db8:4::2

# ---- the filter sees inside addresses both ways (as an nft forward chain behind the translator)
ok "filter: policy drop" xdpr filter policy drop
ok "filter: C1 may open TCP 7010 to S (rule names the inside source)" \
	xdpr filter add in r0 src fd01:203:405:1::2 proto tcp dport 7010 accept
ok "filter: S may open TCP 7011 to C1 (rule names the inside destination)" \
	xdpr filter add in r1 dst fd01:203:405:1::2 proto tcp dport 7011 accept
ok "filter: a rule naming the outside address $M64 (never matches: the filter sees inside ones)" \
	xdpr filter add dst $M64 proto udp dport 7012 accept
timeout 30 ip netns exec "$S" socat TCP6-LISTEN:7010,reuseaddr,fork SYSTEM:'echo $SOCAT_PEERADDR' 2>/dev/null &
wait_listen "$S" 7010 || diag "TCP 7010 server did not start"
timeout 30 ip netns exec "$C1" socat TCP6-LISTEN:7011,reuseaddr,fork SYSTEM:'echo from-c1' 2>/dev/null &
wait_listen "$C1" 7011 || diag "TCP 7011 server on C1 did not start"
timeout 30 ip netns exec "$C1" socat -u UDP6-RECV:7012 "CREATE:$T_TMP/udp7012" 2>/dev/null &
wait_listen "$C1" 7012 udp || fail "UDP receiver on C1 port 7012 did not start"
is "$(norm "$(T_TIMEOUT=10 in_ns "$C1" socat -t 3 -T 5 - TCP6:[2001:db8:4::2]:7010 </dev/null 2>/dev/null)")" "$M64" \
	"filter + NPTv6: C1 -> S TCP 7010 accepted out, its replies (mapped back before the filter) match its flow"
is "$(T_TIMEOUT=10 in_ns "$S" socat -t 3 -T 5 - TCP6:[$M64]:7011 </dev/null 2>/dev/null)" "from-c1" \
	"filter + NPTv6: S -> $M64 TCP 7011 meets the rule for fd01:203:405:1::2"
p0=$(xdpr -j stats 2>/dev/null | jq '[.. | objects | .drop_filter_policy? // empty | if type == "object" then .packets else . end] | add // 0')
T_TIMEOUT=5 in_ns "$S" socat -u - UDP6-SENDTO:[$M64]:7012 <<<"should-not-pass" 2>/dev/null
sleep 0.5
is "$(cat "$T_TMP/udp7012" 2>/dev/null)" "" "filter + NPTv6: UDP to $M64:7012 dropped (the rule naming the outside address does not match)"
num "$(xdpr -j filter flows | jq .flows)" -ge 2 "filter flows: the two accepted TCP flows have states (keyed by inside addresses: the replies met them)"
ok "filter policy accept, flush" eval 'xdpr filter flush && xdpr filter policy accept'
done_testing
