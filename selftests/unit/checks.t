#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unit tier: the tests of the tests.  The netns tier's checks that read a
# capture or a counter or need a tool must fail when the capture did not
# start (or died), the counter cannot be read or the tool the set-up
# installs is missing, never pass (or skip) by accident.
# Each helper runs here against what a failed capture leaves (no file, an
# empty one, one that is not a capture, a cut header) and must fail; against
# a real capture with no frames (0) and one frame (1) it must count them.
# The helpers are the netns tier's own code (check_lib.sh; cap_read,
# cap_stop, leak_check, cap_json, cap_count and nat_pcap.py taken from
# route_lib.sh and nat_lib.sh; ctr and grown from lib.sh), not copies.  A
# read of the CLI's state that failed (json_of) never equals another.
cd "$(dirname "$0")/../.." || exit 1
T=$(mktemp -d)
# subshells that exit (cap_read's, leak_check's) must not run it: only this shell
trap '[ "$BASHPID" = '"$$"' ] && rm -rf "$T"' EXIT
i=0
rc=0
. "$(dirname "$0")/tap.sh"

if ! command -v tcpdump >/dev/null; then
	echo "Bail out! tcpdump is not installed (the set-up installs it: scripts/deps.sh)"
	exit 1
fi
. selftests/netns/check_lib.sh

# pcap files: a header only (a capture that started and saw nothing), and one frame
hdr='\xd4\xc3\xb2\xa1\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x06\x00\x00\x01\x00\x00\x00'
frame='\xff\xff\xff\xff\xff\xff\x02\x00\x00\x00\x00\x01\x08\x06\x00\x01\x08\x00\x06\x04\x00\x01\x02\x00\x00\x00\x00\x01\x0a\x00\x00\x01\x00\x00\x00\x00\x00\x00\x0a\x00\x00\x02'
printf "$hdr" >"$T/none.pcap"
{ printf "$hdr"; printf '\x01\x00\x00\x00\x00\x00\x00\x00\x2a\x00\x00\x00\x2a\x00\x00\x00'; printf "$frame"; } >"$T/one.pcap"
: >"$T/empty.pcap"
echo "tcpdump: eth9: No such device exists" >"$T/text.pcap"
head -c 10 "$T/none.pcap" >"$T/cut.pcap"

# ---- pcap_read / pcap_count
for bad in missing empty text cut; do
	out=$(pcap_count "$T/$bad.pcap" 2>"$T/err")
	st=$?
	[ "$st" -ne 0 ] && [ -z "$out" ] && [ -s "$T/err" ]
	tap $? "pcap_count fails on a capture that did not start ($bad), says why, prints no count" \
		"status $st, printed \"$out\", said \"$(cat "$T/err")\""
	[ "$(pcap_count "$T/$bad.pcap" 2>/dev/null)" != 0 ]
	tap $? "so is \"\$(pcap_count F)\" 0 cannot pass on it ($bad)" "it printed 0"
done
out=$(pcap_count "$T/none.pcap" 2>"$T/err")
tap $? "pcap_count on a capture with no frames succeeds" "$(cat "$T/err")"
[ "$out" = 0 ]
tap $? "and says 0" "it said \"$out\""
out=$(pcap_count "$T/one.pcap" 2>"$T/err")
[ "$out" = 1 ]
tap $? "pcap_count on a capture of one frame says 1" "it said \"$out\" ($(cat "$T/err"))"
out=$(pcap_read "$T/one.pcap" -e 2>&1)
grep -q '02:00:00:00:00:01 > ff:ff:ff:ff:ff:ff' <<<"$out"
tap $? "pcap_read passes tcpdump's options on (-e: the MACs)" "it said \"$out\""
pcap_read "$T/missing.pcap" >/dev/null 2>&1
[ $? -ne 0 ]
tap $? "pcap_read fails on a missing capture" "it succeeded"

# ---- cap_read (route tier): every count over it must be off
eval "$(sed -n '/^cap_read() {/,/^}/p' selftests/netns/route_lib.sh)"
for bad in missing empty text; do
	n=$(cap_read "$T/$bad.pcap" -q 2>/dev/null | grep -c .)
	[ "$n" != 0 ]
	tap $? "cap_read on a capture that did not start ($bad): \"nothing arrived\" (grep -c . = 0) cannot pass" \
		"grep -c . said $n"
	n=$(cap_read "$T/$bad.pcap" 2>/dev/null | grep -Evc "^[0-9:.]+ .*ttl 63,|^ ")
	[ "$n" != 0 ]
	tap $? "cap_read ($bad): \"no frame with another TTL\" (grep -Evc = 0) cannot pass" "grep -Evc said $n"
done
n=$(cap_read "$T/none.pcap" -q 2>/dev/null | grep -c .)
[ "$n" = 0 ]
tap $? "cap_read on a capture that started and saw nothing: 0 lines" "it gave $n"

# ---- leak_check (NAT tier): a capture that did not start is not "no leak"
eval "$(sed -n '/^leak_check() {/,/^}/p' selftests/netns/nat_lib.sh)"
# the TAP line leak_check would print: its "is" records what it compares
is() { LEAK_SAW=$1; [ "$1" == "$2" ]; }
diag() { :; }
sleep() { :; }
kill() { :; }
TCPDUMP_EXIT=0
wait() { return "$TCPDUMP_EXIT"; } # the capture's tcpdump, as it exits on SIGINT
LEAK_PID=1
for bad in missing empty text cut; do
	T_TMP=$T/leak-$bad
	mkdir -p "$T_TMP"
	[ "$bad" = missing ] || cp "$T/$bad.pcap" "$T_TMP/leak.pcap"
	printf '0 packets captured\n0 packets received by filter\n0 packets dropped by kernel\n' >"$T_TMP/leak.err"
	LEAK_SAW=
	leak_check "unit" >/dev/null 2>&1
	[ -n "$LEAK_SAW" ] && [ "$LEAK_SAW" != 0 ]
	tap $? "leak_check fails on a capture that did not start ($bad)" "it saw \"$LEAK_SAW\" leaks"
done
T_TMP=$T/leak-none
mkdir -p "$T_TMP"
cp "$T/none.pcap" "$T_TMP/leak.pcap"
printf '0 packets captured\n0 packets received by filter\n0 packets dropped by kernel\n' >"$T_TMP/leak.err"
LEAK_SAW=
leak_check "unit" >/dev/null 2>&1
[ "$LEAK_SAW" = 0 ]
tap $? "leak_check passes on a capture that ran and saw nothing" "it saw \"$LEAK_SAW\""
printf '3 packets captured\n5 packets received by filter\n2 packets dropped by kernel\n' >"$T_TMP/leak.err"
LEAK_SAW=
leak_check "unit" >/dev/null 2>&1
[ -n "$LEAK_SAW" ] && [ "$LEAK_SAW" != 0 ]
tap $? "leak_check fails when the capture lost packets" "it saw \"$LEAK_SAW\""
TCPDUMP_EXIT=1
LEAK_SAW=
leak_check "unit" >/dev/null 2>&1
[ -n "$LEAK_SAW" ] && [ "$LEAK_SAW" != 0 ]
tap $? "leak_check fails when tcpdump did not exit cleanly" "it saw \"$LEAK_SAW\""
unset -f is diag sleep kill wait

# ---- cap_json / cap_count (NAT and filter tiers): a capture that did not
# start, or died, is not "no such frame"
T_TMP=$T/cj
mkdir -p "$T_TMP"
NAT_PY=/usr/bin/python3
sed -n "/^cat >\"\\\$T_TMP\/nat_pcap.py\" <<'EOF'\$/,/^EOF\$/p" selftests/netns/nat_lib.sh | sed '1d;$d' >"$T_TMP/nat_pcap.py"
[ -s "$T_TMP/nat_pcap.py" ]
tap $? "nat_pcap.py is taken from nat_lib.sh" "the heredoc was not found"
eval "$(sed -n '/^cap_json() {/,/^}/p;/^cap_count() {/,/^}/p' selftests/netns/nat_lib.sh)"
# a capture cut in its last frame (tcpdump killed while writing)
head -c 50 "$T/one.pcap" >"$T/cutframe.pcap"
for bad in missing empty text cut cutframe; do
	[ "$bad" = missing ] || cp "$T/$bad.pcap" "$T_TMP/$bad.pcap"
	n=$(cap_count "$bad" 'true' 2>/dev/null)
	st=$?
	[ "$st" -ne 0 ] && [ "$n" != 0 ]
	tap $? "cap_count fails on a capture that did not start or was cut ($bad)" "status $st, it said \"$n\""
	n=$(cap_count "$bad" '.proto == 17' 2>/dev/null)
	[ "$n" != 0 ]
	tap $? "so is \"\$(cap_count F COND)\" 0, \"no such frame\", cannot pass on it ($bad)" "it said $n"
	j=$(cap_json "$bad" 2>/dev/null)
	[ -n "$(jq -c '[.[] | select(.proto == 17)]' <<<"$j" 2>/dev/null)" ] &&
		[ "$(jq -c '[.[] | select(.proto == 17)]' <<<"$j")" = "[]" ]
	[ $? -ne 0 ]
	tap $? "nor does a check over cap_json's output see \"[]\" ($bad)" "cap_json printed \"$j\""
done
cp "$T/none.pcap" "$T/one.pcap" "$T_TMP/"
n=$(cap_count none 'true' 2>&1)
[ "$n" = 0 ]
tap $? "cap_count on a capture that started and saw nothing: 0" "it said \"$n\""
n=$(cap_count one '.ethertype == 2054' 2>&1)
[ "$n" = 1 ]
tap $? "cap_count on a capture of one ARP frame: 1 (ethertype 0x0806)" "it said \"$n\""

# ---- ctr / grown (every tier's counters): a counter that cannot be read,
# or a reason stats does not have, is never a number
eval "$(sed -n '/^ctr() {/,/^}/p;/^grown() {/,/^}/p' selftests/netns/lib.sh)"
STATS='{"interfaces":[{"dev":"r0","reasons":{"forwarded":{"packets":7,"bytes":700},"drop_x":{"packets":0,"bytes":0}}}]}'
xdpr_ns() { [ -n "$STATS" ] && echo "$STATS"; [ -n "$STATS" ]; }
[ "$(ctr R r0 forwarded)/$(ctr R r0 forwarded bytes)/$(ctr R r0 drop_x)" = 7/700/0 ]
tap $? "ctr reads a counter (packets, bytes, a zero)" "it said $(ctr R r0 forwarded)/$(ctr R r0 forwarded bytes)/$(ctr R r0 drop_x)"
[ "$(grown 5 R r0 forwarded)" = 2 ]
tap $? "grown: 5 -> 7 is 2" "it said $(grown 5 R r0 forwarded)"
for what in "no such reason:drop_nosuch" "no such device:forwarded:r9"; do
	reason=${what#*:} dev=r0
	[[ "$reason" == *:* ]] && dev=${reason#*:} reason=${reason%%:*}
	a=$(ctr R "$dev" "$reason")
	b=$(grown 0 R "$dev" "$reason")
	[ "$a" = none ] && [ "$b" = none ]
	tap $? "ctr and grown say none for ${what%%:*} ($reason on $dev)" "ctr said \"$a\", grown \"$b\""
done
STATS=
a=$(ctr R r0 forwarded)
[ "$a" = none ] && [ "$(grown 0 R r0 forwarded)" = none ] && [ "$(grown "$a" R r0 forwarded)" = none ]
tap $? "ctr and grown say none when stats fails, so \"did not grow\" (grown = 0) cannot pass" "ctr said \"$a\""
unset -f xdpr_ns

# ---- cap_stop / cap_read (route tier): a capture that died or lost frames is refused
eval "$(sed -n '/^cap_stop() {/,/^}/p' selftests/netns/route_lib.sh)"
declare -A CAP_FILE
diag() { :; }
sleep() { :; }
k=0
for case in "0:0 packets dropped by kernel:ok" "3:0 packets dropped by kernel:died (exit 3)" \
	"0:2 packets dropped by kernel:lost 2 frames" "0::printed no statistics"; do
	IFS=: read -r st line what <<<"$case"
	k=$((k + 1))
	f=$T/route-$k.pcap
	cp "$T/none.pcap" "$f"
	rm -f "$f.bad"
	printf 'listening on s1\n%s\n' "$line" >"$f.err"
	# the capture's tcpdump, as it runs under timeout and exits on SIGINT
	rm -f "$T/ready"
	timeout 10 sh -c 'trap "kill \$p 2>/dev/null; exit $1" INT; sleep 5 & p=$!; : >"$2"; wait' _ "$st" "$T/ready" &
	pid=$!
	for ((w = 0; w < 250; w++)); do
		[ -e "$T/ready" ] && break
		command sleep 0.02
	done
	CAP_FILE[$pid]=$f
	cap_stop "$pid"
	stop=$?
	n=$(cap_read "$f" -q 2>/dev/null | grep -c .)
	if [ "$what" = ok ]; then
		[ "$stop" = 0 ] && [ "$n" = 0 ]
		tap $? "cap_stop and cap_read: a capture that ran to the end and saw nothing is 0 lines" "cap_stop $stop, $n lines"
	else
		[ "$stop" != 0 ] && [ "$n" != 0 ]
		tap $? "cap_stop fails on a capture whose tcpdump $what, and \"nothing arrived\" over it cannot pass" \
			"cap_stop $stop, grep -c . said $n"
	fi
done
unset -f diag sleep

# ---- json_of (link_json, rt_json, nat_rules, flt_rules): a failed read is
# never equal to anything, another failed read included
T_TMP=$T/jo
mkdir -p "$T_TMP"
fake_show() { [ "$1" = ok ] && echo '{"b":[1,2],"a":"x"}'; [ "$1" = text ] && echo "Error: no"; [ "$1" = ok ]; }
out=$(json_of . fake_show ok)
[ "$out" = '{"a":"x","b":[1,2]}' ]
tap $? "json_of: a read that works is CMD's JSON through jq -S -c" "it said \"$out\""
for what in fails:text "prints nothing:none" "prints no JSON (exit 0):textok"; do
	how=${what#*:}
	fake() { case $1 in text) echo "Error: no"; return 1 ;; none) return 1 ;; textok) echo "Error: no" ;; esac; }
	a=$(json_of . fake "$how")
	sta=$?
	b=$(json_of . fake "$how")
	[ "$sta" -ne 0 ] && [[ "$a" == unreadable* ]] && [ "$a" != "$b" ]
	tap $? "json_of: a command that ${what%%:*} is unreadable, and two such reads differ (\"unchanged\" cannot pass)" \
		"status $sta, \"$a\" and \"$b\""
done
unset -f fake fake_show
eval "$(sed -n '/^link_json() {/,/^}/p' selftests/netns/lib.sh)"
xdpr_ns() { echo "Error: xdpr is not attached" >&2; return 1; }
a=$(link_json R 2>/dev/null)
b=$(link_json R 2>/dev/null)
[ "$a" != "$b" ]
tap $? "link_json: with link show failing, two reads differ (\"link show unchanged\" cannot pass)" \
	"\"$a\" and \"$b\""
unset -f xdpr_ns

# ---- need: a tool the set-up installs is never a skip
out=$(
	bail_out() { echo "bail: $1"; exit 255; }
	skip_all() { echo "skip: $1"; exit 0; }
	PATH=/nonexistent need tcpdump
)
[[ "$out" == bail:* ]]
tap $? "need bails out when tcpdump (in scripts/packages.txt) is missing" "it said \"$out\""
out=$(
	bail_out() { echo "bail: $1"; exit 255; }
	skip_all() { echo "skip: $1"; exit 0; }
	PATH=/nonexistent need promtool
)
[[ "$out" == bail:* ]]
tap $? "need bails out when promtool (package prometheus) is missing" "it said \"$out\""
out=$(
	bail_out() { echo "bail: $1"; exit 255; }
	skip_all() { echo "skip: $1"; exit 0; }
	PATH=/nonexistent need xdpr-no-such-tool
)
[[ "$out" == skip:* ]]
tap $? "need skips when a tool the set-up does not install is missing" "it said \"$out\""

echo "1..$i"
exit $rc
