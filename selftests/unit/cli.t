#!/bin/bash
# Unit tier: C tests of parsing and output, then the xdpr binary's usage errors
# (exit 2, one "Error:" line on stderr), none of which needs privileges.
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
X=$B/xdpr
"$B/selftests/test_cli" | sed -n '/^1\.\./!p' > /tmp/xdpr-unit.$$; rc=${PIPESTATUS[0]}
cases=(
	"2|unknown object \"bogus\"|bogus"
	"2|missing OBJECT|"
	"2|unknown option \"-Z\"|-Z link show"
	"2|unknown link command \"frob\"|link frob"
	"2|unknown mode \"turbo\" (expected native or skb)|link attach eth0 mode turbo"
	"2|\"link attach\" needs at least one device|link attach"
	"2|\"link detach\" needs device names or \"all\"|link detach"
	"2|invalid interval \"abc\"|stats interval abc"
	"2|unknown stats argument \"frob\"|stats frob"
	"2|\"count\" goes with \"interval\"|stats count 2"
	"2|unknown nat command \"frob\"|nat frob"
	"2|a rule needs exactly one of \"masquerade\" and \"to ADDR[-ADDR]\"|nat add out eth0"
	"2|invalid port range \"9-1\"|nat add out eth0 masquerade ports 9-1"
	"2|expected \"del out DEV [src PREFIX]\"|nat del eth0"
	"2|unknown timeout \"tcp\"|nat timeout tcp 5"
	"2|unknown route command \"frob\"|route frob"
	"2|host bits set in \"10.0.0.1/8\"|route add 10.0.0.1/8 blackhole"
	"2|expected \"route del PREFIX\"|route del"
)
n=$(grep -c '^\(not \)\?ok' /tmp/xdpr-unit.$$)
# every command the bash completion offers for an object (cli/xdpr.bash-completion)
objs=$(sed -n 's/^\t\([a-z]*\)) w="\([^"]*\)" ;;$/\1 \2/p' cli/xdpr.bash-completion)
echo "1..$((n + ${#cases[@]} * 2 + 4 + $(wc -l <<< "$objs")))"
cat /tmp/xdpr-unit.$$; rm -f /tmp/xdpr-unit.$$
i=$n
for c in "${cases[@]}"; do
	IFS='|' read -r code msg args <<< "$c"
	err=$($X $args 2>&1 >/dev/null); got=$?
	i=$((i + 1))
	[ "$got" = "$code" ] && echo "ok $i - xdpr $args: exit $code" ||
		{ echo "not ok $i - xdpr $args: exit $got, expected $code"; rc=1; }
	i=$((i + 1))
	last=$(printf '%s\n' "$err" | grep '^Error: ')
	if [ "$(printf '%s\n' "$err" | grep -c '^Error: ')" = 1 ] && [[ "$last" == "Error: $msg"* ]]; then
		echo "ok $i - xdpr $args: one error line naming the problem"
	else
		echo "not ok $i - xdpr $args: stderr was: $err"; rc=1
	fi
done
i=$((i + 1)); $X help | grep -q 'link attach DEV' && echo "ok $i - help shows the grammar" ||
	{ echo "not ok $i - help"; rc=1; }
i=$((i + 1)); $X -V | grep -q '^xdpr ' && echo "ok $i - -V prints the version" ||
	{ echo "not ok $i - version"; rc=1; }
# the datapath's build id, the same in xdprd (both embed the one BPF object)
v=$($X -V | sed -n 2p); d=$($B/xdprd -V 2>&1 | sed -n 2p)
i=$((i + 1)); [[ "$v" =~ ^datapath\ build\ [0-9a-f]{16}$ && "$d" == "$v" ]] &&
	echo "ok $i - xdpr -V and xdprd -V name the datapath build ($v)" ||
	{ echo "not ok $i - -V: \"$v\", xdprd -V: \"$d\""; rc=1; }
# -h names every command of every object, as the completion offers them
help=$($X -h)
while read -r obj words; do
	miss=
	for w in $words; do
		[ "$w" = help ] && continue
		case $obj in
		top) grep -q "xdpr \[OPTIONS\] top .*\b$w\b" <<< "$help" ;;
		*) grep -q "xdpr \[OPTIONS\] $obj\( .*[{|] \| \)$w\b" <<< "$help" ;;
		esac || miss="$miss $w"
	done
	i=$((i + 1))
	[ -z "$miss" ] && echo "ok $i - -h: $obj $words" ||
		{ echo "not ok $i - -h does not name $obj:$miss"; rc=1; }
done <<< "$objs"
i=$((i + 1)); grep -q 'xdpr \[OPTIONS\] stats -o { prometheus | text }' <<< "$help" &&
	echo "ok $i - -h: stats -o" || { echo "not ok $i - -h does not name stats -o"; rc=1; }
exit $rc
