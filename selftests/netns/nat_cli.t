#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_cli.t - `xdpr nat` as a user meets it: every bad input (overlapping
# rules, bad ranges, host bits, unknown or unattached interface, masquerade
# and to together or neither, unknown words, deleting or replacing what does
# not exist) exits 1 (runtime) or 2 (usage) with one "Error: " line and
# changes nothing; the JSON outputs parse and carry the documented fields.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create nc

# unchanged BEFORE DESC: `nat show` (rules, counters aside) is what it was.
unchanged() {
	is "$(nat_rules)" "$1" "$2: nat show unchanged"
}

NOT_ATTACHED='Error: xdpr is not attached to any interface in this network namespace'

# ---- nothing attached
cli_fails "nat show with nothing attached" 1 "$NOT_ATTACHED" "$R" nat show
cli_fails "nat add with nothing attached" 1 "$NOT_ATTACHED" "$R" nat add out r1 masquerade
cli_fails "nat sessions with nothing attached" 1 "$NOT_ATTACHED" "$R" nat sessions

ok "link attach r0 r1 (r2 stays without xdpr)" xdpr_attach r0 r1 || abort "cannot attach"
cli "$R" -j nat show
is "$RC:$(jq -c . <<<"$OUT" 2>&1)" "0:[]" "-j nat show with no rule: [] and exit 0"

ok "nat add out r1 src 10.0.0.0/8 masquerade" xdpr nat add out r1 src 10.0.0.0/8 masquerade
one=$(nat_rules)
is "$(jq -r '.[] | "\(.id) \(.dev) \(.src)/\(.src_len) \(.action) \(.port_min)-\(.port_max) \(.filter)"' <<<"$one")" \
	"1 r1 10.0.0.0/8 masquerade 1024-65535 apdf" "-j nat show: the rule with its defaults"

# ---- overlapping rules
cli_fails "overlapping src 10.1.0.0/16 on r1" 1 'src 10.1.0.0/16 overlaps rule 1 (src 10.0.0.0/8) on "r1"' \
	"$R" nat add out r1 src 10.1.0.0/16 masquerade
unchanged "$one" "overlapping src 10.1.0.0/16"
cli_fails "overlapping: no src (0.0.0.0/0) on r1" 1 'overlaps rule 1' "$R" nat add out r1 masquerade
unchanged "$one" "overlapping 0.0.0.0/0"
cli_fails "the same src again on r1" 1 'src 10.0.0.0/8 overlaps rule 1' \
	"$R" nat add out r1 src 10.0.0.0/8 to 198.51.100.1
unchanged "$one" "the same src again"

# ---- bad ranges, prefixes and words (usage: exit 2)
cli_fails "ports 5000-4000" 2 'invalid port range "5000-4000"' \
	"$R" nat add out r1 src 172.16.0.0/12 masquerade ports 5000-4000
cli_fails "ports 0-10" 2 'invalid port range "0-10"' "$R" nat add out r1 src 172.16.0.0/12 masquerade ports 0-10
cli_fails "ports 70000" 2 'invalid port range "70000"' "$R" nat add out r1 src 172.16.0.0/12 masquerade ports 70000
cli_fails "to 10.0.0.5-10.0.0.1" 2 'invalid address range "10.0.0.5-10.0.0.1"' \
	"$R" nat add out r1 src 172.16.0.0/12 to 10.0.0.5-10.0.0.1
cli_fails "to 10.0.0.1-10.1.0.1 (more than 65536)" 2 'invalid address range "10.0.0.1-10.1.0.1"' \
	"$R" nat add out r1 src 172.16.0.0/12 to 10.0.0.1-10.1.0.1
cli_fails "to 10.0.0.300" 2 'invalid address range "10.0.0.300"' \
	"$R" nat add out r1 src 172.16.0.0/12 to 10.0.0.300
cli_fails "src 10.0.1.1/24 (host bits set)" 2 'host bits set in "10.0.1.1/24"' \
	"$R" nat add out r1 src 10.0.1.1/24 masquerade
cli_fails "src 192.168.0.0/33" 2 'invalid prefix length in "192.168.0.0/33"' \
	"$R" nat add out r1 src 192.168.0.0/33 masquerade
cli_fails "masquerade and to" 2 'exactly one of "masquerade" and "to ADDR[-ADDR]"' \
	"$R" nat add out r1 src 172.16.0.0/12 masquerade to 198.51.100.1
cli_fails "neither masquerade nor to" 2 'exactly one of "masquerade" and "to ADDR[-ADDR]"' \
	"$R" nat add out r1 src 172.16.0.0/12
cli_fails "unknown word" 2 'unknown NAT rule word "bogus"' "$R" nat add out r1 src 172.16.0.0/12 masquerade bogus 1
cli_fails "word without a value" 2 '"ports" needs a value' "$R" nat add out r1 src 172.16.0.0/12 masquerade ports
cli_fails "unknown filter" 2 'unknown filter "xyz"' "$R" nat add out r1 src 172.16.0.0/12 masquerade filter xyz
cli_fails "missing \"out\"" 2 'expected "out DEV"' "$R" nat add r1 masquerade
cli_fails "unknown nat command" 2 'unknown nat command "frob"' "$R" nat frob
cli_fails "nat del without out" 2 'Error: ' "$R" nat del r1
cli_fails "nat del out r1 src (no prefix)" 2 'Error: ' "$R" nat del out r1 src
cli_fails "nat flush bogus" 2 'Error: ' "$R" nat flush bogus
cli_fails "nat show extra" 2 'Error: ' "$R" nat show extra
cli_fails "nat sessions proto sctp" 2 'unknown protocol "sctp"' "$R" nat sessions proto sctp
cli_fails "nat sessions src 10.0.0.0/8 (not an address)" 2 'invalid address "10.0.0.0/8"' \
	"$R" nat sessions src 10.0.0.0/8
cli_fails "nat timeout udp 0" 2 'invalid udp "0"' "$R" nat timeout udp 0
cli_fails "nat timeout bogus 5" 2 'unknown timeout "bogus"' "$R" nat timeout bogus 5
cli_fails "nat timeout udp (no value)" 2 '"udp" needs a value' "$R" nat timeout udp
cli_fails "nat limit host 0" 2 'invalid host "0"' "$R" nat limit host 0
unchanged "$one" "usage errors"

# ---- interfaces (runtime: exit 1)
cli_fails "unknown interface" 1 'cannot find device "nosuch"' "$R" nat add out nosuch masquerade
cli_fails "interface without xdpr (r2)" 1 'xdpr is not attached to "r2"' "$R" nat add out r2 masquerade
unchanged "$one" "bad interfaces"

# ---- deleting or replacing what does not exist
cli_fails "nat del of a rule that does not exist" 1 'no NAT rule for src 172.16.0.0/12 on "r1"' \
	"$R" nat del out r1 src 172.16.0.0/12
cli_fails "nat del on r0 (no rule there)" 1 'no NAT rule for src 0.0.0.0/0 on "r0"' "$R" nat del out r0
cli_fails "nat del out nosuch" 1 'cannot find device "nosuch"' "$R" nat del out nosuch
cli_fails "nat del out r2 (no xdpr)" 1 'xdpr is not attached to "r2"' "$R" nat del out r2
cli_fails "nat replace of a rule that does not exist" 1 'no NAT rule for src 172.16.0.0/12 on "r1" to replace' \
	"$R" nat replace out r1 src 172.16.0.0/12 masquerade
unchanged "$one" "del/replace of missing rules"

# ---- what is allowed: disjoint sources on one interface, one source on two interfaces
ok "nat add out r1 src 172.16.0.0/12 to 198.51.100.10-198.51.100.13 ports 20000-20099 filter eif" \
	xdpr nat add out r1 src 172.16.0.0/12 to 198.51.100.10-198.51.100.13 ports 20000-20099 filter eif
ok "nat add out r0 src 10.0.0.0/8 to 198.51.100.20 (same src, other interface)" \
	xdpr nat add out r0 src 10.0.0.0/8 to 198.51.100.20
cli "$R" nat show
is "$RC" 0 "nat show exits 0"
like "$(head -n1 <<<"$OUT")" '^session table: 65536 sessions \([0-9]+ halves in use\), [0-9.]+ MiB in use, up to [0-9.]+ MiB when full$' \
	"nat show (text): the session table first"
is "$(tail -n +2 <<<"$OUT")" "nat rule 1: out r1 src 10.0.0.0/8 masquerade ports 1024-65535 filter apdf
nat rule 2: out r1 src 172.16.0.0/12 to 198.51.100.10-198.51.100.13 ports 20000-20099 filter eif
nat rule 3: out r0 src 10.0.0.0/8 to 198.51.100.20-198.51.100.20 ports 1024-65535 filter apdf" \
	"nat show (text): one line per rule"
three=$(nat_rules)
is "$(jq -r '.[] | select(.id == 2) | "\(.action) \(.pool_first)-\(.pool_last) \(.port_min)-\(.port_max) \(.filter)"' <<<"$three")" \
	"pool 198.51.100.10-198.51.100.13 20000-20099 eif" "-j nat show: the pool rule's fields"
ok "nat replace out r1 src 172.16.0.0/12 masquerade ports 30000-30999" \
	xdpr nat replace out r1 src 172.16.0.0/12 masquerade ports 30000-30999
is "$(nat_rules | jq -r '[.[] | select(.dev == "r1") | "\(.src)/\(.src_len) \(.action) \(.port_min)-\(.port_max) \(.filter)"] | sort | join(", ")')" \
	"10.0.0.0/8 masquerade 1024-65535 apdf, 172.16.0.0/12 masquerade 30000-30999 apdf" \
	"replace changed the matching rule only (r1)"

# ---- at most 8 rules on one interface
for i in 1 2 3 4 5 6; do
	xdpr nat add out r1 src "192.168.$i.0/24" masquerade || fail "nat add out r1 src 192.168.$i.0/24"
done
eight=$(nat_rules)
is "$(jq '[.[] | select(.dev == "r1")] | length' <<<"$eight")" 8 "r1 has 8 rules"
cli_fails "a 9th rule on r1" 1 '"r1" has 8 NAT rules already' "$R" nat add out r1 src 192.168.9.0/24 masquerade
unchanged "$eight" "a 9th rule"
for i in 1 2 3 4 5 6; do
	xdpr nat del out r1 src "192.168.$i.0/24" || fail "nat del out r1 src 192.168.$i.0/24"
done
ok "nat del out r0 src 10.0.0.0/8" xdpr nat del out r0 src 10.0.0.0/8
ok "nat del out r1 src 172.16.0.0/12" xdpr nat del out r1 src 172.16.0.0/12
is "$(nat_rules | jq -r 'map("\(.dev) \(.src)/\(.src_len)") | join(",")')" "r1 10.0.0.0/8" \
	"after the deletions: only the first rule is left"

# ---- JSON outputs
ok "link attach r2" xdpr_attach r2
udp_echo "$S" 7000
ok "ping C1 -> S through the rule" ping4 "$C1" 10.0.4.2 2
like "$(udp "$C1" ask 40000 3 10.0.4.2:7000)" '^10\.0\.2\.1:40000$' "UDP C1 -> S through the rule"

cli "$R" -j nat show
is "$RC" 0 "-j nat show exits 0"
is "$(jq -r '.[0] | keys_unsorted | join(",")' <<<"$OUT" 2>&1)" \
	"id,dev,state,src,src_len,action,port_min,port_max,filter,held,counters" "-j nat show: rule fields (masquerade)"
COUNTERS="translated_out,translated_in,sessions_new,sessions_expired,sessions_evicted,ports_preserved,ports_reclaimed,no_port,table_full,host_limit,untranslatable,filtered,icmp_errors_out,icmp_errors_in,hairpinned,addr_changed,pairs_repaired,adopted,ports_shadowed,no_address,sweeps,busy,failed_probes,resizing,log_lost"
is "$(jq -r '.[0].counters | keys_unsorted | join(",")' <<<"$OUT" 2>&1)" "$COUNTERS" \
	"-j nat show: the counters"
is "$(jq -r '[.[0].counters[] | type] | unique | join(",")' <<<"$OUT" 2>&1)" "number" "counters are numbers"

cli "$R" -j nat sessions
is "$RC" 0 "-j nat sessions exits 0"
is "$(jq -r '[.[] | select(.proto == "udp")][0] | keys_unsorted | join(",")' <<<"$OUT" 2>&1)" \
	"proto,inside,inside_port,outside,outside_port,remote,remote_port,state,idle,timeout,rule,paired" \
	"-j nat sessions: UDP session fields"
is "$(jq -r '[.[] | select(.proto == "icmp")][0] | keys_unsorted | join(",")' <<<"$OUT" 2>&1)" \
	"proto,inside,inside_id,outside,outside_id,remote,state,idle,timeout,rule,paired" \
	"-j nat sessions: ICMP session fields"
is "$(jq -r '.[] | select(.proto == "udp") | "\(.inside):\(.inside_port) \(.outside):\(.outside_port) \(.remote):\(.remote_port) \(.state) \(.rule) \(.paired)"' <<<"$OUT")" \
	"10.0.1.2:40000 10.0.2.1:40000 10.0.4.2:7000 replied 1 true" "-j nat sessions: the UDP session's values"
cli "$R" nat sessions
like "$(head -n1 <<<"$OUT")" '^PROT +INSIDE +OUTSIDE +REMOTE +STATE +IDLE +TIMEOUT +RULE$' "nat sessions (text): header"
like "$OUT" 'udp +10\.0\.1\.2:40000 +10\.0\.2\.1:40000 +10\.0\.4\.2:7000 +replied ' "nat sessions (text): the UDP session"

cli "$R" -j stats
is "$RC" 0 "-j stats exits 0"
is "$(jq -r '.nat | map(.dev + " " + .src + "/" + (.src_len | tostring)) | join(",")' <<<"$OUT" 2>&1)" \
	"r1 10.0.0.0/8" "-j stats: nat section with the rule"
for r in drop_nat_no_port drop_nat_untranslatable pass_nat_filtered drop_nat_host_limit drop_nat_full; do
	is "$(jq -r --arg r "$r" '[.interfaces[] | .reasons[$r].packets | type] | unique | join(",")' <<<"$OUT" 2>&1)" \
		"number" "-j stats: every interface has reason $r"
done
cli "$R" stats
like "$OUT" 'translated_out' "stats (text) shows the NAT counters"

cli "$R" -j nat timeout
is "$RC:$(jq -r 'keys_unsorted | join(",")' <<<"$OUT" 2>&1)" "0:tcp-est,tcp-trans,udp,icmp,holddown" \
	"-j nat timeout: its fields"
ok "default timeouts meet RFC 5382/4787 (tcp-est >= 7440, tcp-trans >= 240, udp >= 120, holddown >= 120)" \
	jq -e '."tcp-est" >= 7440 and ."tcp-trans" >= 240 and .udp >= 120 and .holddown >= 120' <<<"$OUT"
cli "$R" -j nat limit
is "$RC:$(jq -c '{host, sessions}' <<<"$OUT" 2>&1)" '0:{"host":4096,"sessions":65536}' "-j nat limit: host 4096, sessions 65536"
is "$(jq -c '.memory | keys' <<<"$OUT")" '["fixed","frozen","full","in_use","session_halves","sessions"]' \
	"-j nat limit: the tables' memory"
cli "$R" -j nat gc
is "$RC:$(jq -r 'keys_unsorted | join(",")' <<<"$OUT" 2>&1)" "0:sessions_removed,sessions_seen,bindings_freed" \
	"-j nat gc: its fields"
rules=$(nat_rules)
cli "$R" -j nat flush sessions
is "$RC:$(jq -r '.sessions_removed' <<<"$OUT" 2>&1)" "0:2" "-j nat flush sessions: removes the 2 sessions"
is "$(sessions)" "[]" "nat sessions: none left"
unchanged "$rules" "flush sessions"
cli "$R" nat flush
is "$RC" 0 "nat flush exits 0"
is "$(xdpr -j nat show | jq -c .)" "[]" "nat flush removes every rule"
ok "without rules, C1 -> S ping gets no answer again" not ping4 "$C1" 10.0.4.2 1

done_testing
