#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unit tier: the filter's parser, stored form and compiler (test_filter: the
# compiler against a linear first-match reference), then the xdpr binary's
# filter and set usage errors (exit 2, one "Error:" line, nothing needs a
# router or privileges).
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
X=$B/xdpr
"$B/selftests/test_filter" | sed -n '/^1\.\./!p' > /tmp/xdpr-filter.$$; rc=${PIPESTATUS[0]}
# CODE|MESSAGE (a prefix; cut before any "|")|ARGS
cases=(
	"2|unknown filter command \"frob\"|filter frob"
	"2|unknown set command \"frob\"|set frob"
	"2|a rule ends with its action: accept, drop or reject|filter add proto tcp"
	"2|\"dport\" needs proto tcp or udp|filter add dport 22 accept"
	"2|\"icmp-type\" needs proto icmp or icmpv6|filter add proto udp icmp-type 3 drop"
	"2|IPv4 prefix \"10.0.0.0/8\" with proto icmpv6 (use icmp)|filter add src 10.0.0.0/8 proto icmpv6 drop"
	"2|src \"10.0.0.0/8\" and dst \"::/0\" are of different families|filter add src 10.0.0.0/8 dst ::/0 drop"
	"2|host bits set in \"10.0.0.1/8\"|filter add src 10.0.0.1/8 drop"
	"2|invalid dport \"2-1\" (low port above high)|filter add proto tcp dport 2-1 drop"
	"2|unknown state \"old\"|filter add state old drop"
	"2|\"filter insert\" needs a rule number (1-32768) before the rule|filter insert x drop"
	"2|\"filter insert\" needs a rule number (1-32768) before the rule|filter insert 0 drop"
	"2|expected \"filter del N\"|filter del"
	"2|expected \"filter del N\"|filter del 1 2"
	"2|expected \"filter policy { accept |filter policy reject"
	"2|expected \"filter load { FILE |filter load"
	"2|\"filter flush\" takes no arguments|filter flush all"
	"2|\"filter show\" takes no arguments|filter show 1"
	"2|expected \"filter flows [flush]\"|filter flows bogus"
	"2|\"set add\" needs a set name and at least one prefix|set add blk"
	"2|invalid set name \"a/b\"|set add a/b 10.0.0.0/8"
	"2|host bits set in \"192.0.2.1/24\"|set add blk 192.0.2.1/24"
	"2|expected \"set flush NAME\"|set flush"
	"1|cannot open \"/nonexistent\"|filter load /nonexistent"
)
n=$(grep -c '^\(not \)\?ok' /tmp/xdpr-filter.$$)
echo "1..$((n + ${#cases[@]} * 2 + 3))"
cat /tmp/xdpr-filter.$$; rm -f /tmp/xdpr-filter.$$
i=$n
. "$(dirname "$0")/tap.sh"
for c in "${cases[@]}"; do
	IFS='|' read -r code msg args <<< "$c"
	# shellcheck disable=SC2086 # the arguments are words
	err=$($X $args 2>&1 >/dev/null); got=$?
	[ "$got" = "$code" ]
	tap $? "xdpr $args: exit $code" "exit $got"
	last=$(printf '%s\n' "$err" | grep '^Error: ')
	[ "$(printf '%s\n' "$err" | grep -c '^Error: ')" = 1 ] && [[ "$last" == "Error: $msg"* ]]
	tap $? "xdpr $args: one error line naming the problem" "stderr was: $err"
done
# a bad line in a load file: named, exit 2, before any router is looked for
tmp=$(mktemp); printf 'drop\n# c\n\nproto tcp dport 1-99999 accept\n' > "$tmp"
err=$($X filter load "$tmp" 2>&1 >/dev/null); got=$?
rm -f "$tmp"
[ "$got" = 2 ] && [[ "$err" == 'Error: line 4: invalid dport "1-99999"'* ]]
tap $? "filter load: a bad line is named (line 4), exit 2" "exit $got: $err"
err=$(printf 'drop extra\n' | $X filter load - 2>&1 >/dev/null); got=$?
[ "$got" = 2 ] && [[ "$err" == 'Error: line 1: unexpected "extra" after "drop"'* ]]
tap $? "filter load -: reads standard input" "exit $got: $err"
$X filter help 2>&1 | grep -q 'RULE := \[in DEV\]' && $X help | grep -q 'filter {'
tap $? "help shows the filter grammar" "not found"
exit "$rc"
