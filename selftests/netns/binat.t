#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# binat.t - 1:1 NAT (netmap) end to end, against the kernel doing the same.
#
#   C1 10.0.1.2 (inside 10.0.1.0/24 <-> outside 198.51.100.0/24, /24 netmap)
#   C2 10.0.3.2 (inside 10.0.3.2/32 <-> outside 192.0.2.9/32)
#   R  (r1 outside)  H 10.0.2.2 (routes both outside prefixes to R)  S 10.0.4.2
#
# A corpus of flows runs twice: first with the kernel translating (nft
# netmap: snat/dnat "ip prefix to ... map"), then with xdpr (nat add binat);
# the inside hosts and the outside server must see the same addresses both
# times (TCP, UDP, ICMP echo both ways, GRE sent with scapy both ways,
# unsolicited inbound, traceroute both ways: ICMP errors translated).  With
# xdpr, byte-exact TCP transfers both ways leave the kernel's forwarding
# counter flat (it went through XDP), no inside address reaches the outside
# link, the filter sees inside addresses both ways, a masquerade rule of r1
# does not take 1:1 sources, save/restore keep the rules, and bad input is
# refused with nothing changed.
. "$(dirname "$0")/nat_lib.sh"

need nft traceroute
"$NAT_PY" -c 'import scapy.all' 2>/dev/null || skip_all "python3-scapy not installed"

nat_topo_create bn
# upstream (H) routes the outside prefixes to R; R's default route points upstream, as an edge
# router's does
ip -n "$H" route add 192.0.2.0/24 via 10.0.2.1
ip -n "$R" route add default via 10.0.2.2

# servers: every one answers with the address it sees
tcp_echo "$S" 7000 || abort "tcp echo server on S did not start"
udp_echo "$S" 7000 || fail "UDP echo server on S port 7000 did not start"
tcp_echo "$C1" 7001 || abort "tcp echo server on C1 did not start"
udp_echo "$C2" 7002 || fail "UDP echo server on C2 port 7002 did not start"

# gre NS DST: one GRE packet (protocol 47, payload "binat") from NS to DST, sent with scapy
gre() {
	T_TIMEOUT=20 in_ns "$1" "$NAT_PY" -c "
from scapy.all import IP, Raw, send
send(IP(dst='$2', proto=47) / Raw(b'\x00\x00\x08\x00binat'), verbose=0)" 2>"$T_TMP/gre.err"
}

# gre_seen NAME NS DEV SRC_NS DST: the addresses of the GRE packet SRC_NS
# sends to DST, as a capture on DEV in NS sees them ("SRC>DST", or why not).
gre_seen() {
	cap_start "$1" "$2" "$3" 'ip proto 47' || { echo "capture did not start"; return; }
	gre "$4" "$5" || echo "scapy failed: $(tail -n1 "$T_TMP/gre.err")"
	cap_stop "$1" || { echo "capture failed"; return; }
	cap_json "$1" | jq -r '[.[] | select(.proto == 47) | "\(.src)>\(.dst)"] | join(" ")'
}

# hops NS DST: the addresses traceroute (UDP) finds on the way, one a line.
hops() {
	T_TIMEOUT=40 in_ns "$1" traceroute -n -q 1 -w 2 -m 5 "$2" 2>/dev/null | awk 'NR > 1 { print $2 }' |
		paste -sd' '
}

# corpus FILE: every flow, what each end sees, one line each.
corpus() {
	{
		echo "udp C1->S: $(udp "$C1" ask 40123 3 10.0.4.2:7000)"
		echo "udp C2->S: $(udp "$C2" ask 40124 3 10.0.4.2:7000)"
		echo "tcp C1->S: $(tcp_ask "$C1" 10.0.4.2 7000 | cut -d: -f1)"
		echo "tcp C2->S: $(tcp_ask "$C2" 10.0.4.2 7000 | cut -d: -f1)"
		echo "tcp S->198.51.100.2 (unsolicited): $(tcp_ask "$S" 198.51.100.2 7001 | cut -d: -f1)"
		echo "udp S->192.0.2.9 (unsolicited): $(udp "$S" ask 40125 3 192.0.2.9:7002)"
		echo "ping C1->S: $(ping4 "$C1" 10.0.4.2 3 && echo ok || echo lost)"
		echo "ping S->198.51.100.2: $(ping4 "$S" 198.51.100.2 3 && echo ok || echo lost)"
		echo "ping S->192.0.2.9: $(ping4 "$S" 192.0.2.9 3 && echo ok || echo lost)"
		echo "gre C1->S at s0: $(gre_seen gre1 "$S" s0 "$C1" 10.0.4.2)"
		echo "gre S->198.51.100.2 at c1: $(gre_seen gre2 "$C1" c1 "$S" 198.51.100.2)"
		echo "traceroute C1->S: $(hops "$C1" 10.0.4.2)"
		echo "traceroute S->198.51.100.2: $(hops "$S" 198.51.100.2)"
		echo "traceroute S->192.0.2.9: $(hops "$S" 192.0.2.9)"
	} >"$1"
}

# ---- the kernel: nft netmap
nft_rules() {
	in_ns "$R" nft -f - <<'EOF'
table ip bn {
	chain post {
		type nat hook postrouting priority srcnat;
		oifname "r1" snat ip prefix to ip saddr map { 10.0.1.0/24 : 198.51.100.0/24 }
		oifname "r1" ip saddr 10.0.3.2 snat to 192.0.2.9
	}
	chain pre {
		type nat hook prerouting priority dstnat;
		iifname "r1" dnat ip prefix to ip daddr map { 198.51.100.0/24 : 10.0.1.0/24 }
		iifname "r1" ip daddr 192.0.2.9 dnat to 10.0.3.2
	}
}
EOF
}
ok "kernel: nft netmap rules on R" nft_rules || abort "nft refused the netmap rules"
kf0=$(snmp "$R" Ip ForwDatagrams)
corpus "$T_TMP/kernel.txt"
num $(($(snmp "$R" Ip ForwDatagrams) - kf0)) -gt 50 "kernel: R's kernel forwarded the corpus (ForwDatagrams grew)"
ok "kernel: nft table removed" in_ns "$R" nft delete table ip bn

# ---- xdpr: nat add binat
leak_start
ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
ok "nat add binat r1 inside 10.0.1.0/24 outside 198.51.100.0/24" \
	xdpr nat add binat r1 inside 10.0.1.0/24 outside 198.51.100.0/24 || abort "cannot add the /24 rule"
ok "nat add binat r1 inside 10.0.3.2/32 outside 192.0.2.9/32" \
	xdpr nat add binat r1 inside 10.0.3.2/32 outside 192.0.2.9/32 || abort "cannot add the /32 rule"
binat_ctr() { # FIELD INSIDE: a 1:1 rule's counter ("none" when unreadable)
	local v
	v=$(xdpr -j nat show 2>/dev/null | jq -r --arg f "$1" --arg i "$2" \
		'.[] | select(.kind == "binat" and .inside == $i) | .counters[$f] | numbers' 2>/dev/null)
	echo "${v:-none}"
}
o0=$(binat_ctr translated_out 10.0.1.0)
i0=$(binat_ctr translated_in 10.0.1.0)
e0=$(binat_ctr icmp_errors 10.0.1.0)
corpus "$T_TMP/xdpr.txt"
ok "xdpr and the kernel: both ends see the same addresses for every flow of the corpus" \
	diff -u "$T_TMP/kernel.txt" "$T_TMP/xdpr.txt" || diag "$(diff -u "$T_TMP/kernel.txt" "$T_TMP/xdpr.txt")"
# and what they see is the mapping (the kernel is the oracle, these say what it said)
want="udp C1->S: 198.51.100.2:40123
udp C2->S: 192.0.2.9:40124
tcp C1->S: 198.51.100.2
tcp C2->S: 192.0.2.9
tcp S->198.51.100.2 (unsolicited): 10.0.4.2
udp S->192.0.2.9 (unsolicited): 10.0.4.2:40125
ping C1->S: ok
ping S->198.51.100.2: ok
ping S->192.0.2.9: ok
gre C1->S at s0: 198.51.100.2>10.0.4.2
gre S->198.51.100.2 at c1: 10.0.4.2>10.0.1.2
traceroute C1->S: 10.0.1.1 10.0.2.2 10.0.4.2
traceroute S->198.51.100.2: 10.0.4.1 198.51.100.2 198.51.100.2
traceroute S->192.0.2.9: 10.0.4.1 192.0.2.9 192.0.2.9"
is "$(cat "$T_TMP/xdpr.txt")" "$want" "xdpr: the corpus sees the 1:1 mapping, host bits kept (/24) and the /32"
num "$(($(binat_ctr translated_out 10.0.1.0) - o0))" -ge 20 "10.0.1.0/24 rule: translated_out grew"
num "$(($(binat_ctr translated_in 10.0.1.0) - i0))" -ge 20 "10.0.1.0/24 rule: translated_in grew"
num "$(($(binat_ctr icmp_errors 10.0.1.0) - e0))" -ge 3 "10.0.1.0/24 rule: icmp_errors grew (traceroute both ways)"
num "$(binat_ctr translated_out 10.0.3.2)" -ge 5 "10.0.3.2/32 rule: translated_out counted"

# ---- byte-exact TCP both ways, through XDP only
make_file "$T_TMP/up" 4
make_file "$T_TMP/down" 4
kf0=$(snmp "$R" Ip ForwDatagrams)
f0=$(ctr "$R" r0 forwarded)
ok "TCP: 4 MB from C1 to S (10.0.4.2) arrive with the same SHA-256" tcp_send "$C1" "$S" 10.0.4.2 5001 "$T_TMP/up"
ok "TCP: 4 MB from S to 198.51.100.2 (C1 listening) arrive with the same SHA-256" \
	tcp_send "$S" "$C1" 198.51.100.2 5002 "$T_TMP/down"
ok "TCP: 4 MB fetched by C2 (as 192.0.2.9) from S arrive with the same SHA-256" \
	tcp_fetch "$C2" "$S" 10.0.4.2 5003 "$T_TMP/down"
is "$(($(snmp "$R" Ip ForwDatagrams) - kf0))" 0 "R's kernel forwarded none of it (ForwDatagrams flat)"
num "$(grown "$f0" "$R" r0 forwarded)" -ge 2500 "r0 forwarded (XDP) grew by >= 2500"
for ns in C1 C2 S; do
	is "$(csum_errors "${!ns}")" "0/0" "$ns: TcpInCsumErrors/UdpInCsumErrors are 0/0"
done

# ---- 1:1 first: a masquerade rule of r1 does not take a 1:1 source
ok "nat add out r1 masquerade" xdpr nat add out r1 masquerade
is "$(udp "$C1" ask 40200 3 10.0.4.2:7000)" "198.51.100.2:40200" "with masquerade on r1 too: C1 is still 198.51.100.2"
is "$(tcp_ask "$C2" 10.0.4.2 7000 | cut -d: -f1)" "192.0.2.9" "with masquerade on r1 too: C2 is still 192.0.2.9"
is "$(xdpr -j nat show | jq '[.[] | select(.kind == null) | .counters.sessions_new] | add')" 0 \
	"the masquerade rule made no session"
ok "nat del out r1" xdpr nat del out r1

# ---- the filter sees inside addresses, both ways
ok "filter add state established,related accept" xdpr filter add state established,related accept
ok "filter add in r0 out r1 src 10.0.1.2 accept" xdpr filter add in r0 out r1 src 10.0.1.2 accept
ok "filter add in r2 out r1 src 10.0.3.2 accept" xdpr filter add in r2 out r1 src 10.0.3.2 accept
ok "filter add in r1 dst 10.0.1.2 proto tcp dport 7001 accept" xdpr filter add in r1 dst 10.0.1.2 proto tcp dport 7001 accept
ok "filter policy drop" xdpr filter policy drop
is "$(tcp_ask "$C1" 10.0.4.2 7000 | cut -d: -f1)" "198.51.100.2" "filter: C1 -> S accepted by 'src 10.0.1.2' (inside address, before translation)"
is "$(tcp_ask "$S" 198.51.100.2 7001 | cut -d: -f1)" "10.0.4.2" "filter: S -> 198.51.100.2:7001 accepted by 'dst 10.0.1.2' (inside address, after translation)"
is "$(udp "$S" ask 40126 2 192.0.2.9:7002)" "timeout" "filter: S -> 192.0.2.9 udp 7002 matches no rule: dropped (policy)"
is "$(udp "$C2" ask 40127 3 10.0.4.2:7000)" "192.0.2.9:40127" "filter: C2's reply came back as established (state keyed by inside addresses)"
ok "filter flush" xdpr filter flush
ok "filter policy accept" xdpr filter policy accept

leak_check "every flow above"

# ---- listing, text and JSON
cli "$R" nat show
like "$OUT" '^binat rule [0-9]+: out r1 inside 10\.0\.1\.0/24 outside 198\.51\.100\.0/24$' "nat show: the /24 rule"
like "$OUT" '^binat rule [0-9]+: out r1 inside 10\.0\.3\.2/32 outside 192\.0\.2\.9/32$' "nat show: the /32 rule"
like "$OUT" '^  translated_out +[1-9][0-9]*$' "nat show: counters under the rule"
is "$(xdpr -j nat show | jq -c '[.[] | select(.kind == "binat") | {dev, state, inside, len, outside}]')" \
	'[{"dev":"r1","state":"applied","inside":"10.0.1.0","len":24,"outside":"198.51.100.0"},{"dev":"r1","state":"applied","inside":"10.0.3.2","len":32,"outside":"192.0.2.9"}]' \
	"-j nat show: kind binat, dev, inside, len, outside"
is "$(xdpr -j stats | jq -c '[.nat[] | select(.kind == "binat") | .counters | keys]')" \
	'[["dropped","icmp_errors","translated_in","translated_out"],["dropped","icmp_errors","translated_in","translated_out"]]' \
	"-j stats: the rules with their four counters"

# ---- bad input: exit 2 (usage) or 1 (refused), one Error line, nothing changed
before=$(nat_rules)
cli_fails "different lengths" 2 "inside /24 and outside /25 differ in length" "$R" nat add binat r1 inside 10.0.5.0/24 outside 203.0.113.0/25
cli_fails "host bits" 2 'host bits set in "203.0.113.1/24"' "$R" nat add binat r1 inside 10.0.5.0/24 outside 203.0.113.1/24
cli_fails "/0" 2 "a /0 prefix is every address" "$R" nat add binat r1 inside 0.0.0.0/0 outside 0.0.0.0/0
cli_fails "no outside" 2 'needs "inside PREFIX" and "outside PREFIX"' "$R" nat add binat r1 inside 10.0.5.0/24
cli_fails "unknown word" 2 'unknown 1:1 NAT word "to"' "$R" nat add binat r1 inside 10.0.5.0/24 to 203.0.113.0/24
cli_fails "outside overlaps a 1:1 rule" 1 'outside "198.51.100.128/25" overlaps 1:1 rule' "$R" nat add binat r1 inside 10.0.6.0/25 outside 198.51.100.128/25
cli_fails "inside overlaps a 1:1 rule of r1" 1 'inside "10.0.1.0/25" overlaps 1:1 rule' "$R" nat add binat r1 inside 10.0.1.0/25 outside 203.0.113.0/25
cli_fails "the same rule again" 1 'overlaps 1:1 rule' "$R" nat add binat r1 inside 10.0.1.0/24 outside 198.51.100.0/24
cli_fails "outside holds the router's address" 1 "holds 10.0.2.1, an address of this router (r1)" "$R" nat add binat r1 inside 10.0.5.0/24 outside 10.0.2.0/24
cli_fails "outside loopback" 1 'outside prefix "127.0.0.0/24" holds loopback (127.0.0.0/8) addresses' "$R" nat add binat r1 inside 10.0.5.0/24 outside 127.0.0.0/24
cli_fails "inside multicast" 1 'inside prefix "224.1.1.0/24" holds multicast' "$R" nat add binat r1 inside 224.1.1.0/24 outside 203.0.113.0/24
cli_fails "inside and outside overlap" 1 'inside "10.0.5.0/24" and outside "10.0.5.0/24" overlap' "$R" nat add binat r1 inside 10.0.5.0/24 outside 10.0.5.0/24
cli_fails "not attached" 1 'cannot find device "nosuch0"' "$R" nat add binat nosuch0 inside 10.0.5.0/24 outside 203.0.113.0/24
is "$(nat_rules)" "$before" "nat show unchanged by the refused commands"
cli_fails "a pool overlapping a 1:1 outside prefix" 1 "overlaps the outside prefix 198.51.100.0/24 of 1:1 rule" "$R" nat add out r1 src 10.0.7.0/24 to 198.51.100.50-198.51.100.60
ok "a pool rule 203.0.113.5" xdpr nat add out r1 src 10.0.7.0/24 to 203.0.113.5
before=$(nat_rules)
cli_fails "a 1:1 outside prefix overlapping a pool" 1 "overlaps the pool 203.0.113.5-203.0.113.5 of NAT rule" "$R" nat add binat r1 inside 10.0.5.0/24 outside 203.0.113.0/24
cli_fails "del: no such rule" 1 'no 1:1 rule on "r1" for inside "10.0.9.0/24"' "$R" nat del binat r1 inside 10.0.9.0/24
cli_fails "del: bad word" 2 'unknown 1:1 NAT word "outside"' "$R" nat del binat r1 outside 198.51.100.0/24
is "$(nat_rules)" "$before" "nat show unchanged by every refused command"
ok "nat del out r1 src 10.0.7.0/24 (the pool rule)" xdpr nat del out r1 src 10.0.7.0/24
cli_fails "detach r1 with 1:1 rules" 1 '"r1" has 1:1 NAT rules' "$R" link detach r1

# ---- save and restore
xdpr save >"$T_TMP/saved.conf" 2>&1
like "$(cat "$T_TMP/saved.conf")" '^nat add binat r1 inside 10\.0\.1\.0/24 outside 198\.51\.100\.0/24$' "save: the /24 rule"
like "$(cat "$T_TMP/saved.conf")" '^nat add binat r1 inside 10\.0\.3\.2/32 outside 192\.0\.2\.9/32$' "save: the /32 rule"
ok "nat del binat r1 inside 10.0.3.2/32" xdpr nat del binat r1 inside 10.0.3.2/32
is "$(udp "$C2" ask 40300 2 10.0.4.2:7000)" "timeout" "without its rule C2 leaves untranslated (S cannot answer 10.0.3.2)"
ok "restore the saved file" xdpr restore "$T_TMP/saved.conf"
is "$(udp "$C2" ask 40301 3 10.0.4.2:7000)" "192.0.2.9:40301" "restored: C2 is 192.0.2.9 again"
xdpr save >"$T_TMP/saved2.conf" 2>&1
ok "save after restore: the same file" diff -u "$T_TMP/saved.conf" "$T_TMP/saved2.conf"
ok "nat del binat r1 (every rule of r1)" xdpr nat del binat r1
is "$(xdpr -j nat show | jq '[.[] | select(.kind == "binat")] | length')" 0 "no 1:1 rule left"
is "$(udp "$C1" ask 40302 2 10.0.4.2:7000)" "timeout" "C1 untranslated again: S cannot answer"

# ---- nat flush: every rule of every kind (source NAT and forwards, 1:1, NPTv6)
ok "nat add binat r1 inside 10.0.1.0/24 outside 198.51.100.0/24 (again)" \
	xdpr nat add binat r1 inside 10.0.1.0/24 outside 198.51.100.0/24
ok "nat add out r1 masquerade" xdpr nat add out r1 masquerade
ok "nat add npt r1 inside fd01:203:405::/48 outside 2001:db8:1::/48" \
	xdpr nat add npt r1 inside fd01:203:405::/48 outside 2001:db8:1::/48
is "$(xdpr -j nat show | jq -r '[.[] | .kind // "nat"] | sort | join(" ")')" "binat nat npt" "a rule of each kind listed"
is "$(udp "$C1" ask 40303 3 10.0.4.2:7000)" "198.51.100.2:40303" "C1 is 198.51.100.2 (1:1 first)"
ok "nat flush" xdpr nat flush
is "$(xdpr -j nat show | jq -c .)" "[]" "nat flush: no rule of any kind left (1:1 and NPTv6 too)"
is "$(xdpr save | grep -c '^nat ')" 0 "save: no nat line left"
is "$(udp "$C1" ask 40304 2 10.0.4.2:7000)" "timeout" "after nat flush C1 leaves untranslated: S cannot answer"
ok "link detach r1 needs no force: no 1:1 rule names it" xdpr link detach r1

done_testing
