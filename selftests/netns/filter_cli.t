#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# filter_cli.t - `xdpr filter` and `xdpr set` as a user meets them on an
# attached router: add/insert/del/flush/policy keep the numbering a user
# expects, `filter show` (text and -j, parsed with jq) lists the rules in
# their canonical words with their JSON members, and what it prints `filter
# load` reads back to the same list; the rule that matched a packet counts
# it (packets and bytes).  Every bad input (unknown word, missing action,
# bad prefix or host bits, reversed port range, ports or icmp-type without
# their protocol, families mixed, a rule number beyond the list, unknown
# device or set) exits 2 (usage) or 1 (runtime) with one "Error: " line and
# leaves `filter show -j` as it was; `filter load` of a file with an error on
# line 3 applies nothing and names line 3.  Sets: add/show/del of members
# and sets, a set in use cannot be deleted, and a change of a set applies to
# the rules that name it.
. "$(dirname "$0")/filter_lib.sh"

flt_topo_create fc
MAC_R0=$(mac "$R" r0)

# unchanged BEFORE DESC: `filter show -j` (counters aside) is what it was.
unchanged() {
	is "$(flt_rules)" "$1" "$2: filter show -j unchanged"
}

# jx JQ ARGS...: `xdpr -j ARGS` through jq (compact, sorted keys, strings
# raw); a failure prints "exit N: what it said" instead.
jx() {
	local f=$1 out
	shift
	if out=$(xdpr -j "$@" 2>&1); then
		jq -r -c -S "$f" <<<"$out" 2>&1
	else
		echo "exit $?: $out"
	fi
}

# rules: the rule list as "NUM: RULE" lines (from -j).
rules() {
	jx '.rules[] | "\(.num): \(.rule)"' filter show
}

# rule_ctr N FIELD: packets or bytes of rule N.
rule_ctr() {
	local v
	v=$(xdpr -j filter show 2>/dev/null | jq -r --argjson n "$1" --arg f "$2" '.rules[$n - 1][$f]' 2>/dev/null)
	echo "${v:-none}"
}

flt_attach

# ---- empty
cli "$R" -j filter show
is "$RC" 0 "-j filter show with no rule exits 0"
is "$(jq -c '[.rules, .policy, .nrules]' <<<"$OUT" 2>&1)" '[[],"accept",0]' \
	"-j filter show: no rules, policy accept, nrules 0"
cli "$R" filter show
like "$OUT" '^policy accept' "filter show (text): policy accept"

# ---- add, insert, numbering
ok "filter add proto tcp dport 22 accept" xdpr filter add proto tcp dport 22 accept
ok "filter add src 10.0.1.0/24 proto udp dport 53 drop" xdpr filter add src 10.0.1.0/24 proto udp dport 53 drop
ok "filter insert 1 proto icmp icmp-type 8 accept" xdpr filter insert 1 proto icmp icmp-type 8 accept
ok "filter insert 4 (count + 1: appends) dst 2001:db8:2::/64 proto tcp sport 1024-65535 reject" \
	xdpr filter insert 4 dst 2001:db8:2::/64 proto tcp sport 1024-65535 reject
ok "filter insert 2 in r0 out r1 proto 47 drop" xdpr filter insert 2 in r0 out r1 proto 47 drop
is "$(rules)" "1: proto icmp icmp-type 8 accept
2: in r0 out r1 proto 47 drop
3: proto tcp dport 22 accept
4: src 10.0.1.0/24 proto udp dport 53 drop
5: dst 2001:db8:2::/64 proto tcp sport 1024-65535 reject" "-j filter show: the rules in order, numbered 1-5"
cli "$R" filter show
is "$(grep -E '^[0-9]+:' <<<"$OUT" | sed -E 's/  packets.*//')" "$(rules)" \
	"filter show (text) lists the same rules as -j"
j=$(flt_show)
is "$(jq -c '.rules[0] | [.action, .proto, .icmp_type]' <<<"$j")" '["accept","icmp",8]' \
	"-j: rule 1's members: action accept, proto icmp, icmp_type 8"
is "$(jq -c '.rules[1] | [.in, .out, .proto, .action]' <<<"$j")" '["r0","r1","47","drop"]' \
	"-j: rule 2's members: in r0, out r1, proto 47, drop"
is "$(jq -c '.rules[3] | [.src, .proto, .dport_min, .dport_max]' <<<"$j")" '["10.0.1.0/24","udp",53,53]' \
	"-j: rule 4's members: src, proto udp, dport_min = dport_max = 53"
is "$(jq -c '.rules[4] | [.dst, .sport_min, .sport_max, .action]' <<<"$j")" '["2001:db8:2::/64",1024,65535,"reject"]' \
	"-j: rule 5's members: dst, sport 1024-65535, reject"
is "$(jq -c '[.rules[] | .packets, .bytes] | unique' <<<"$j")" '[0]' "-j: every new rule counts 0 packets, 0 bytes"
is "$(jq -r '.nrules' <<<"$j")" 5 "-j: nrules 5"

# ---- del, policy
ok "filter del 2" xdpr filter del 2
is "$(rules)" "1: proto icmp icmp-type 8 accept
2: proto tcp dport 22 accept
3: src 10.0.1.0/24 proto udp dport 53 drop
4: dst 2001:db8:2::/64 proto tcp sport 1024-65535 reject" "after del 2: the rules after it move up"
ok "filter policy drop" xdpr filter policy drop
is "$(jx .policy filter show)" drop "-j filter show: policy drop"
is "$(rules | wc -l)" 4 "the policy changed no rule"
ok "filter policy accept" xdpr filter policy accept
is "$(jx .policy filter show)" accept "-j filter show: policy accept again"

# ---- the rule that matched counts the packet
s0=$(ctr "$R" r0 drop_filter)
ok "ping C -> S (3 echoes, one flow) under rule 1" ping4 "$C" 10.0.2.2 3
is "$(rule_ctr 1 packets)" 1 "rule 1 (icmp-type 8 accept) decided 1 packet: the flow's first (the rest passed on state)"
pkt "$C" c0 "$MAC_R0" 3 "IP(src='10.0.1.2', dst='10.0.2.2')/UDP(sport=40053, dport=53)/Raw(b'12345')"
sleep 0.3
is "$(rule_ctr 3 packets)/$(rule_ctr 3 bytes)" "3/141" \
	"rule 3 (udp dport 53 drop) counted the 3 datagrams it dropped: 3 packets, 3 x 47 bytes"
is "$(grown "$s0" "$R" r0 drop_filter)" 3 "stats: drop_filter on r0 grew by 3"
is "$(rule_ctr 2 packets)/$(rule_ctr 4 packets)" "0/0" "rules 2 and 4 counted nothing"

# ---- -s: rule ids and the compiled list; -s -s: per CPU
j=$(jx . -s filter show)
is "$(jq -r '[.rules[] | .id | select(type == "number" and . >= 1)] | unique | length' <<<"$j")" 4 \
	"-s -j: every rule has its own id"
is "$(jq -r '.slot.see_established' <<<"$j")" false "-s -j: no rule names a state: see_established false"
j=$(jx . -s -s filter show)
is "$(jq -r --argjson n "$(nproc)" '[.rules[] | (.cpus | length) == $n and ([.cpus[].packets] | add) == .packets
	and ([.cpus[].bytes] | add) == .bytes] + [(.policy_counters.cpus | length) == $n] | all' <<<"$j")" true \
	"-s -s -j: one counter per CPU for every rule and the policy, summing to the totals"

# ---- bad input: usage errors (exit 2), nothing changes
one=$(flt_rules)
cli_fails "unknown word" 2 'unknown filter word "allow"' "$R" filter add proto tcp dport 22 allow
cli_fails "missing action" 2 'a rule ends with its action' "$R" filter add proto tcp dport 22
cli_fails "no words at all" 2 'a rule ends with its action' "$R" filter add
cli_fails "words after the action" 2 'unexpected "drop" after "accept"' "$R" filter add accept drop
cli_fails "bad prefix" 2 'invalid prefix "10.0.1.300/24"' "$R" filter add src 10.0.1.300/24 drop
cli_fails "prefix length 33" 2 'invalid prefix length in "10.0.1.0/33"' "$R" filter add src 10.0.1.0/33 drop
cli_fails "host bits" 2 'host bits set in "10.0.1.1/24"' "$R" filter add dst 10.0.1.1/24 drop
cli_fails "port range reversed" 2 'invalid dport "2000-1000"' "$R" filter add proto tcp dport 2000-1000 drop
cli_fails "port 70000" 2 'invalid sport "70000"' "$R" filter add proto udp sport 70000 drop
cli_fails "sport without proto" 2 '"sport" needs proto tcp or udp' "$R" filter add sport 80 drop
cli_fails "dport with proto icmp" 2 '"dport" needs proto tcp or udp' "$R" filter add proto icmp dport 80 drop
cli_fails "icmp-type without proto" 2 '"icmp-type" needs proto icmp or icmpv6' "$R" filter add icmp-type 8 drop
cli_fails "icmp-type 256" 2 'invalid icmp-type "256"' "$R" filter add proto icmp icmp-type 256 drop
cli_fails "unknown protocol" 2 'unknown protocol "sctpx"' "$R" filter add proto sctpx drop
cli_fails "protocol 256" 2 'unknown protocol "256"' "$R" filter add proto 256 drop
cli_fails "src and dst of two families" 2 'of different families' \
	"$R" filter add src 10.0.0.0/8 dst 2001:db8::/32 drop
cli_fails "IPv6 prefix with proto icmp" 2 'with proto icmp (use icmpv6)' \
	"$R" filter add src 2001:db8::/32 proto icmp drop
cli_fails "a word twice" 2 '"proto" given twice' "$R" filter add proto tcp proto udp drop
cli_fails "a word without its value" 2 '"dport" needs a value' "$R" filter add proto tcp dport accept
cli_fails "unknown state" 2 'unknown state "bogus"' "$R" filter add state bogus accept
cli_fails "bad set name" 2 'invalid set name "@a/b"' "$R" filter add src @a/b accept
cli_fails "insert 0" 2 'filter insert' "$R" filter insert 0 proto tcp accept
cli_fails "insert without a number" 2 'filter insert' "$R" filter insert proto tcp accept
cli_fails "del 0" 2 'filter del N' "$R" filter del 0
cli_fails "del abc" 2 'filter del N' "$R" filter del abc
cli_fails "del with two numbers" 2 'filter del N' "$R" filter del 1 2
cli_fails "policy reject" 2 'filter policy { accept | drop }' "$R" filter policy reject
cli_fails "policy without a word" 2 'filter policy { accept | drop }' "$R" filter policy
cli_fails "flush with an argument" 2 'takes no arguments' "$R" filter flush now
cli_fails "unknown filter command" 2 'unknown filter command "frob"' "$R" filter frob
cli_fails "load without a file" 2 'filter load' "$R" filter load
unchanged "$one" "usage errors"

# ---- failures (exit 1), nothing changes
cli_fails "del 99 (4 rules)" 1 'no rule 99' "$R" filter del 99
cli_fails "insert 99 (4 rules)" 1 'cannot insert as rule 99' "$R" filter insert 99 proto tcp accept
cli_fails "in a device that does not exist" 1 'cannot find device "nosuch0"' "$R" filter add in nosuch0 accept
cli_fails "a set that does not exist" 1 'cannot find set "nosuch"' "$R" filter add src @nosuch accept
cli_fails "load of a file that does not exist" 1 'cannot open "/nonexistent/rules"' "$R" filter load /nonexistent/rules
unchanged "$one" "failures"

# ---- load: all or nothing, line numbers, comments, replaces the list
printf '%s\n' 'proto tcp dport 80 accept' 'proto udp dport 53 accept' 'proto tcp dport 99999 accept' \
	'proto icmp accept' >"$T_TMP/bad3"
cli_fails "load: line 3 has a bad port" 2 'line 3' "$R" filter load "$T_TMP/bad3"
like "$ERR" 'invalid dport "99999"' "the message says what is wrong on line 3"
unchanged "$one" "load with an error on line 3"
printf '%s\n' 'proto tcp dport 80 accept' 'src @nosuch accept' >"$T_TMP/bad2"
cli_fails "load: line 2 names a missing set" 1 'line 2' "$R" filter load "$T_TMP/bad2"
unchanged "$one" "load naming a missing set"
cat >"$T_TMP/good" <<'EOF'
# web and DNS
proto tcp dport 80-443 accept   # both ports

  proto udp   dport 53 accept
src 192.0.2.0/24 drop
EOF
ok "filter policy drop (load keeps it)" xdpr filter policy drop
cli "$R" filter load "$T_TMP/good"
is "$RC/$OUT" "0/3 rules loaded" "load of 3 rules with comments and blank lines: \"3 rules loaded\""
is "$(rules)" "1: proto tcp dport 80-443 accept
2: proto udp dport 53 accept
3: src 192.0.2.0/24 drop" "the loaded rules replace the list, in file order"
is "$(jx .policy filter show)" drop "load kept the policy"
is "$(jx . filter load "$T_TMP/good")" '{"loaded":3}' "-j filter load: {\"loaded\":3}"
jx '.rules[].rule' filter show >"$T_TMP/roundtrip"
ok "filter load - (stdin) of what filter show prints" \
	bash -c "timeout 20 ip netns exec '$R' '$XDPR' filter load - <'$T_TMP/roundtrip'"
is "$(rules)" "1: proto tcp dport 80-443 accept
2: proto udp dport 53 accept
3: src 192.0.2.0/24 drop" "what show prints, load reads back to the same list"

# ---- flush keeps the policy
ok "filter flush" xdpr filter flush
is "$(jx '[.rules, .policy]' filter show)" '[[],"drop"]' "after flush: no rules, policy still drop"
ok "filter policy accept" xdpr filter policy accept

# ---- sets
cli "$R" -j set show
is "$RC/$(jq -c . <<<"$OUT" 2>&1)" "0/[]" "-j set show with no set: []"
ok "set add web 10.0.2.0/24 2001:db8:2::/64" xdpr set add web 10.0.2.0/24 2001:db8:2::/64
ok "set add web 10.9.0.0/16 (a member more)" xdpr set add web 10.9.0.0/16
is "$(jx '.[] | [.name, .count, .ipv4, .ipv6, (.members | sort)]' set show web)" \
	'["web",3,2,1,["10.0.2.0/24","10.9.0.0/16","2001:db8:2::/64"]]' "-j set show web: 3 members, 2 IPv4, 1 IPv6"
ok "set del web 10.9.0.0/16" xdpr set del web 10.9.0.0/16
is "$(jx '.[0].members | sort' set show web)" '["10.0.2.0/24","2001:db8:2::/64"]' "the member is gone"
cli_fails "set add: a member already there" 1 'already in set "web"' "$R" set add web 10.0.2.0/24
cli_fails "set del: a member not there" 1 'not in set "web"' "$R" set del web 10.8.0.0/16
cli_fails "set add: bad name" 2 'invalid set name "a/b"' "$R" set add a/b 10.0.0.0/8
cli_fails "set add: no member" 2 'needs a set name and at least one prefix' "$R" set add web2
cli_fails "set add: host bits" 2 'host bits set in "10.0.0.1/8"' "$R" set add web2 10.0.0.1/8
cli_fails "set show: no such set" 1 'cannot find set "nosuch"' "$R" set show nosuch
cli_fails "set del: no such set" 1 'cannot find set "nosuch"' "$R" set del nosuch
cli_fails "unknown set command" 2 'unknown set command "frob"' "$R" set frob

ok "filter policy drop" xdpr filter policy drop
ok "filter add dst @web proto icmp icmp-type 8 accept" xdpr filter add dst @web proto icmp icmp-type 8 accept
is "$(rules)" "1: dst @web proto icmp icmp-type 8 accept" "the rule names the set as @web"
is "$(jx '.[0].rules' set show web)" '[1]' "-j set show web: used by rule 1"
ok "ping C -> S (10.0.2.2 is in @web)" ping4 "$C" 10.0.2.2 2
one=$(flt_rules)
sets=$(jx . set show)
cli_fails "set del web while rule 1 uses it" 1 'set "web" is used by' "$R" set del web
unchanged "$one" "deleting a set in use"
is "$(jx . set show)" "$sets" "the set is still there, unchanged"
ok "set del web 10.0.2.0/24 (the member the ping matched)" xdpr set del web 10.0.2.0/24
ok "ping C -> S no longer passes (the rule's set changed)" not ping4 "$C" 10.0.2.2 2
ok "set add web 10.0.2.0/24 again" xdpr set add web 10.0.2.0/24
ok "ping C -> S passes again" ping4 "$C" 10.0.2.2 2
ok "filter del 1" xdpr filter del 1
ok "set del web (no longer used)" xdpr set del web
is "$(jx . set show)" '[]' "-j set show: no set left"
ok "filter policy accept" xdpr filter policy accept

done_testing
