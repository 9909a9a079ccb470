#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# save_restore.t - issue 12: `xdpr restore FILE` makes the running state the
# file's (every kind of line: links, NAT sizes, timeouts and rules, routes,
# sets, filter policy and rules), all or nothing with the line named in the
# error; `xdpr save` prints it back in the same words, and `save | restore -`
# on a fresh router gives the identical `save`.  A changed file changes only
# what differs: an unchanged filter rule keeps its counter, a TCP transfer
# through the NAT stays intact, and a file the kernel refuses half way is
# undone (the NAT rule it had replaced is back).  A rule whose src changes
# replaces the overlapping old one; a rule for an interface not attached
# waits and drops its inside sources.  An empty file detaches.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create sr

CONF=$T_TMP/xdpr.conf
cat >"$CONF" <<'EOF'
# a router: two inside interfaces, one outside
link attach r0 r2 r1
nat limit sessions 131072 host 512
nat timeout udp 90 icmp 30
nat add out r1 masquerade src 10.0.1.0/24
nat add out r1 to 10.0.2.100-10.0.2.101 src 10.0.3.0/24 ports 20000-29999 filter eif
route add 203.0.113.0/24 blackhole
route add 2001:db8:77::/48 pass   # a comment after words
set add blocked 192.0.2.0/24 198.18.0.0/15
set add blocked 2001:db8:dead::/48
filter add src @blocked drop
filter add proto udp dport 9999 drop
filter add proto tcp accept
EOF
# what save prints for it: one attach line, sizes and timeouts that are not
# the defaults, rules in order, routes by prefix, a set's members on one line
cat >"$T_TMP/want.save" <<'EOF'
link attach r0 r2 r1
nat limit sessions 131072 host 512
nat timeout udp 90 icmp 30
nat add out r1 masquerade src 10.0.1.0/24
nat add out r1 to 10.0.2.100-10.0.2.101 src 10.0.3.0/24 ports 20000-29999 filter eif
route add 203.0.113.0/24 blackhole
route add 2001:db8:77::/48 pass
set add blocked 192.0.2.0/24 198.18.0.0/15 2001:db8:dead::/48
filter add src @blocked drop
filter add proto udp dport 9999 drop
filter add proto tcp accept
EOF

# ---- restore on a router with nothing attached
cli "$R" restore "$CONF"
is "$RC" 0 "restore FILE on a fresh router: exit 0" || diag "$ERR"
like "$OUT" '^attached 3, detached 0; NAT rules added 2, replaced 0, deleted 0; routes changed 2; filter changed yes; NAT tables resized yes; NAT settings changed yes$' \
	"restore says what it changed"
cli "$R" save
is "$RC" 0 "save: exit 0"
is "$OUT" "$(cat "$T_TMP/want.save")" "save prints the running state in the file's words"
printf '%s\n' "$OUT" >"$T_TMP/saved"
cli "$R" -j save
is "$RC" 0 "-j save: exit 0"
is "$(jq -r .config <<<"$OUT" 2>&1)" "$(cat "$T_TMP/saved")" "-j save: .config is what save prints"
is "$(jq -r '.commands | join("\n")' <<<"$OUT" 2>&1)" "$(grep -v '^#' "$T_TMP/saved")" \
	"-j save: .commands are its lines that are not comments"
is "$(xdpr -j nat limit | jq -c '[.sessions, .host]')" "[131072,512]" "nat limit: sessions 131072, host 512 applied"
is "$(xdpr -j nat timeout | jq -c '[."tcp-est", .udp, .icmp]')" "[7440,90,30]" "nat timeout: udp 90 icmp 30 applied, tcp-est default"
is "$(xdpr -j link show | jq -r '[.[].dev] | sort | join(" ")')" "r0 r1 r2" "link show: r0 r1 r2 attached"

# the state works: NAT (S sees the outside address), the filter drops UDP to 9999
tcp_echo "$S" 7000 || diag "tcp echo server did not start"
udp_echo "$S" 9999
like "$(tcp_ask "$C1" 10.0.4.2 7000)" '^10\.0\.2\.1:[0-9]+$' "after restore: TCP from C1 is masqueraded (S sees 10.0.2.1)"
d0=$(xdpr -j filter show | jq '.rules[1].packets')
is "$(udp "$C1" ask 0 1 10.0.4.2:9999)" "timeout" "after restore: UDP to port 9999 gets no answer (filter rule 2)"
num "$(xdpr -j filter show | jq '.rules[1].packets')" -gt "$d0" "filter rule 2 counted the dropped datagram"

# ---- restoring the same file again changes nothing
cli "$R" -j restore "$CONF"
is "$(jq -c '[.attached,.detached,.nat_added,.nat_replaced,.nat_deleted,.routes_changed,.filter_changed,.nat_resized,.nat_settings_changed]' <<<"$OUT")" \
	"[0,0,0,0,0,0,false,false,false]" "the same file again: -j says nothing changed"

# ---- a UTF-8 byte order mark before the first line is no part of it
{ printf '\xef\xbb\xbf'; cat "$CONF"; } >"$T_TMP/bom"
cli "$R" -j restore "$T_TMP/bom"
is "$RC:$(jq -c '[.attached,.detached,.nat_added,.nat_deleted,.routes_changed,.filter_changed]' <<<"$OUT")" \
	"0:[0,0,0,0,0,false]" "the same file after a UTF-8 BOM: exit 0, nothing changed"

# ---- bad files: the line is named, nothing is applied
# fails_exactly DESC RC LINE ARGS...: exit RC, stderr exactly LINE, stdout empty
fails_exactly() {
	local desc=$1 rc=$2 want=$3
	shift 3
	cli "$R" "$@"
	is "$RC|$ERR|$OUT" "$rc|$want|" "$desc: exit $rc, exactly one Error line, escaped"
}
printf 'link attach r0 r2 r1\nnat add out r1 masquerade\nroute add 10.9.0.0/16 blakhole\n' >"$T_TMP/bad1"
cli_fails "an unknown route word" 2 "bad1 line 3: unknown route word \"blakhole\"" "$R" restore "$T_TMP/bad1"
printf 'link attach r0\nfrobnicate all\n' >"$T_TMP/bad2"
cli_fails "a line that is not a configuration command" 2 'line 2: "frobnicate all" is not a configuration command' "$R" restore "$T_TMP/bad2"
printf 'link attach r0 r1\nroute add 10.9.0.0/16 blackhole\n\nroute add 10.9.0.0/16 pass\n' >"$T_TMP/bad3"
cli_fails "a route given twice" 1 "line 4: route 10.9.0.0/16 is already on line 2" "$R" restore "$T_TMP/bad3"
printf 'link attach r0 nosuch0\n' >"$T_TMP/bad4"
cli_fails "a device that does not exist" 1 "bad4 line 1: cannot find device \"nosuch0\"" "$R" restore "$T_TMP/bad4"
printf 'link attach r0 r1\nnat timeout udp 60\nnat timeout udp 70\n' >"$T_TMP/bad5"
cli_fails "a timeout set twice" 2 "line 3: \"udp\" is already set on line 2" "$R" restore "$T_TMP/bad5"
printf 'link attach r0 r1\nfilter add src @nosuch drop\n' >"$T_TMP/bad6"
cli_fails "a rule naming a set no line adds" 1 "line 2: no \"set add nosuch\" line for this rule" "$R" restore "$T_TMP/bad6"
printf 'link attach r0 r1\nnat add out r1 \x01masq\xc3\x28\x00x # \xff comment\n' >"$T_TMP/bad7"
fails_exactly "binary bytes in a line" 2 \
	"Error: $T_TMP/bad7 line 2: byte \\x01 at column 16: a configuration is printable ASCII outside comments: \"nat add out r1 \\x01masq\\xc3(\\x00x \" (nothing applied)" \
	restore "$T_TMP/bad7"
printf '\xef\xbb\xbf\xef\xbb\xbflink attach r0\n' >"$T_TMP/bad8"
fails_exactly "a second BOM" 2 \
	"Error: $T_TMP/bad8 line 1: byte \\xef at column 1: a configuration is printable ASCII outside comments: \"\\xef\\xbb\\xbflink attach r0\" (nothing applied)" \
	restore "$T_TMP/bad8"
cli_fails "restore without a file" 2 'expected "restore { FILE | - }"' "$R" restore
cli_fails "save with an argument" 2 '"save" takes no arguments' "$R" save now
cli "$R" save
is "$OUT" "$(cat "$T_TMP/saved")" "after the refused files the running state is unchanged"

# ---- refused before any change: a gateway the kernel cannot reach
sed -e 's/ports 20000-29999/ports 30000-39999/' "$CONF" >"$T_TMP/gw"
echo 'route add 192.0.2.128/25 via 10.77.0.1 dev r0' >>"$T_TMP/gw"
cli_fails "a gateway not on r0's network" 1 "gw line 14: route 192.0.2.128/25: gateway 10.77.0.1 is not on a network connected to \"r0\"" "$R" restore "$T_TMP/gw"
cli "$R" save
is "$OUT" "$(cat "$T_TMP/saved")" "the refused file left the running state as it was"

# ---- refused half way: the NAT rule and a route were changed before the
# filter named a missing device; both undone
sed -e 's/ports 20000-29999/ports 30000-39999/' -e 's/^filter add proto tcp accept$/filter add in nosuch0 drop/' \
	"$CONF" >"$T_TMP/half"
echo 'route add 198.18.99.0/24 blackhole' >>"$T_TMP/half"
cli_fails "a filter rule on a missing device" 1 "half line 13: cannot find device \"nosuch0\"" "$R" restore "$T_TMP/half"
like "$ERR" '\(nothing applied: undone\)$' "the error says the changes before it were undone"
cli "$R" save
is "$OUT" "$(cat "$T_TMP/saved")" "the running state is as it was: ports 20000-29999, no route 198.18.99.0/24"

# ---- a changed file under traffic: only what differs changes
xdpr filter show >/dev/null
udp "$C1" ask 0 1 10.0.4.2:9999 >/dev/null
r2_pkts=$(xdpr -j filter show | jq '.rules[1].packets')
num "$r2_pkts" -ge 2 "rule 2 (udp dport 9999 drop) has counted packets"
stream_start "$C1" "$S" 10.0.4.2 5201 40
sleep 1
sed -e '/203.0.113.0/d' -e 's/^nat timeout udp 90 icmp 30$/nat timeout udp 120/' \
	-e 's/^filter add proto tcp accept$/filter add proto udp dport 5353 drop\nfilter add proto tcp accept/' \
	"$CONF" >"$T_TMP/changed"
echo 'route add 198.18.77.0/24 blackhole' >>"$T_TMP/changed"
cli "$R" -j restore "$T_TMP/changed"
is "$RC" 0 "a changed file under traffic: exit 0" || diag "$ERR"
is "$(jq -c '[.attached,.detached,.nat_added,.nat_replaced,.nat_deleted,.routes_changed,.filter_changed,.nat_resized,.nat_settings_changed]' <<<"$OUT")" \
	"[0,0,0,0,0,2,true,false,true]" "it changed two routes, the filter and the timeouts, nothing else"
stream_check
is "$(xdpr -j filter show | jq '.rules[1].packets')" "$r2_pkts" "the unchanged rule 2 kept its counter"
is "$(xdpr -j filter show | jq '.rules[2].rule' -r)" "proto udp dport 5353 drop" "the new rule is rule 3"
is "$(xdpr -j nat timeout | jq .udp)" 120 "udp timeout 120 is live"
like "$(xdpr route show)" '198\.18\.77\.0/24 blackhole' "the new route is live"
ok "the removed route is gone" not grep -q 203.0.113 <<<"$(xdpr route show)"

# ---- a NAT rule whose src changes (it overlaps the old one): the old one goes first
sed -e 's|^nat add out r1 masquerade src 10.0.1.0/24$|nat add out r1 masquerade src 10.0.0.0/22|' \
	-e '/to 10.0.2.100-10.0.2.101/d' "$T_TMP/changed" >"$T_TMP/src"
cli "$R" -j restore "$T_TMP/src"
is "$RC" 0 "a rule's src widened to 10.0.0.0/22 (overlapping the old one): exit 0" || diag "$ERR"
is "$(jq -c '[.nat_added,.nat_replaced,.nat_deleted]' <<<"$OUT")" "[1,0,2]" "one rule added, two deleted"
is "$(xdpr -j nat show | jq -r '.[] | "\(.dev) \(.src)/\(.src_len)"')" "r1 10.0.0.0/22" "nat show: the one rule, src 10.0.0.0/22"
like "$(tcp_ask "$C1" 10.0.4.2 7000)" '^10\.0\.2\.1:[0-9]+$' "C1 is masqueraded by it"

# ---- a NAT rule for an interface the file does not attach: it waits, and its inside is dropped
# (with the filter kept, leaving r1 out is refused: r1's traffic would skip it, as link detach says)
grep -v '^link attach' "$T_TMP/src" >"$T_TMP/wait_flt"
echo 'link attach r0 r2' >>"$T_TMP/wait_flt"
cli "$R" restore "$T_TMP/wait_flt"
is "$RC" 1 "r1 left out, the filter kept: exit 1"
like "$ERR" '^Error: link detach r1: without xdpr, "r1"'"'"'s traffic would skip the filter' \
	"... r1's traffic would skip the filter"
grep -v '^filter ' "$T_TMP/wait_flt" >"$T_TMP/wait"
leak_start
cli "$R" -j restore "$T_TMP/wait"
is "$RC" 0 "r1 left out, its rule kept: exit 0" || diag "$ERR"
is "$(xdpr -j nat show | jq -r '.[] | "\(.dev) \(.state)"')" "r1 waiting" "nat show: the rule waits for r1"
g0=$(ctr "$R" r0 drop_nat_if_gone)
udp "$C1" ask 33020 1 10.0.4.2:7000 >/dev/null
num "$(grown "$g0" "$R" r0 drop_nat_if_gone)" -ge 1 "C1's datagram to S is dropped (drop_nat_if_gone), not sent untranslated"
leak_check "the waiting rule"
cli "$R" restore "$T_TMP/src"
is "$RC" 0 "r1 attached again by the file: exit 0" || diag "$ERR"
is "$(xdpr -j nat show | jq -r '.[] | "\(.dev) \(.state)"')" "r1 applied" "the rule is applied again"
like "$(tcp_ask "$C1" 10.0.4.2 7000)" '^10\.0\.2\.1:[0-9]+$' "C1 is masqueraded again"

# ---- save | restore - on a fresh router: the identical save
cli "$R" save
printf '%s\n' "$OUT" >"$T_TMP/saved2"
printf '' >"$T_TMP/empty"
cli "$R" restore "$T_TMP/empty"
is "$RC" 0 "an empty file: exit 0" || diag "$ERR"
like "$OUT" '^attached 0, detached 3;' "an empty file detaches every interface"
is "$(xdpr -j link show | jq length)" 0 "link show: nothing attached"
cli "$R" save
is "$OUT" "" "save on a router with nothing attached prints nothing"
xdpr_ns "$R" restore - <"$T_TMP/saved2" >/dev/null 2>"$T_TMP/err"
is "$?" 0 "restore - (the saved text on stdin): exit 0" || diag_file "$T_TMP/err"
cli "$R" save
is "$OUT" "$(cat "$T_TMP/saved2")" "save | restore - on a fresh router: save prints the same text"
like "$(tcp_ask "$C1" 10.0.4.2 7000)" '^10\.0\.2\.1:[0-9]+$' "and the restored router masquerades again"

# ---- /run/xdpr: lock files of namespaces that are gone are removed, one in use is not
touch /run/xdpr/netns-999999001.lock
exec {LFD}>/run/xdpr/netns-999999002.lock # this shell holds it
ok "this test holds a lock file of a namespace that is gone" flock -n "$LFD"
ok "a locked command" xdpr nat gc
ok "the lock file of a namespace that is gone was removed" not test -e /run/xdpr/netns-999999001.lock
ok "a lock file someone holds stays" test -e /run/xdpr/netns-999999002.lock
ok "the router's own lock file stays" test -e "/run/xdpr/netns-$(in_ns "$R" stat -L -c %i /proc/self/ns/net).lock"
exec {LFD}>&-
rm -f /run/xdpr/netns-999999002.lock

# ---- operator details: repeated words are usage errors, control characters are quoted
cli_fails "nat add ... masquerade masquerade" 2 '"masquerade" given twice' "$R" nat add out r1 masquerade masquerade
cli_fails "nat add ... ports twice" 2 '"ports" given twice' "$R" nat add out r1 masquerade ports 2000-3000 ports 4000-5000
cli_fails "nat timeout udp twice" 2 '"udp" given twice' "$R" nat timeout udp 60 udp 70
cli_fails "link attach mode twice" 2 '"mode" given twice' "$R" link attach r0 mode skb mode native
cli_fails "a control character in an argument" 2 'invalid IPv4 prefix "10.0.0.0\x1b[31m"' "$R" nat add out r1 masquerade src $'10.0.0.0\e[31m'
cli_fails "a route via the router's own address" 1 'gateway 10.0.2.1 is one of this router'"'"'s own addresses' "$R" route add 198.18.9.0/24 via 10.0.2.1 dev r1
cli_fails "a route via a network address" 1 'gateway 10.0.2.0 is the network address of a network on "r1"' "$R" route add 198.18.9.0/24 via 10.0.2.0 dev r1
cli_fails "a route via a broadcast address" 1 'gateway 10.0.2.255 is the broadcast address of a network on "r1"' "$R" route add 198.18.9.0/24 via 10.0.2.255 dev r1
cli_fails "a map route for the router's own address" 1 "route 10.0.1.1/32: that is one of this router's own addresses" "$R" route add 10.0.1.1/32 blackhole
# unprivileged: say that root is needed, never "not attached"
for c in "link show" "stats" "save"; do
	# shellcheck disable=SC2086 # words
	in_ns "$R" setpriv --reuid=nobody --regid=nogroup --clear-groups "$XDPR" $c >/dev/null 2>"$T_TMP/np.err"
	rc=$?
	is "$rc $(head -c 22 "$T_TMP/np.err")" "1 Error: xdpr needs root" "unprivileged xdpr $c: exit 1, \"xdpr needs root\""
done

done_testing
