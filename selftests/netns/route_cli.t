#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# route_cli.t - `xdpr route` on bad input: every error is one "Error: " line
# on stderr with the documented exit code (2: usage, 1: failure), and the
# table is unchanged afterwards, counters included (`-j route show` compared
# before and after).  Then what a good `route load` does: comments and blank
# lines, stdin, and the table replaced as a whole.
. "$(dirname "$0")/route_lib.sh"

rt_topo_create rc
rt_serve "$S1" 192.0.2.1/32
rt_attach

ok "route add 192.0.2.0/24 via 10.0.2.2 dev r1" xdpr route add 192.0.2.0/24 via 10.0.2.2 dev r1
ok "route add 2001:db8:100::/48 via 2001:db8:2::2 dev r1" \
	xdpr route add 2001:db8:100::/48 via 2001:db8:2::2 dev r1
ok "route add 203.0.113.0/24 blackhole" xdpr route add 203.0.113.0/24 blackhole
# counters that are not zero, so that "unchanged" covers them too
ok "ping 192.0.2.1 (3 echoes) so that the route has counters" ping4 "$C" 192.0.2.1 3
T0=$(rt_json)
is "$(jq -c 'map(select(.prefix == "192.0.2.0/24") | .packets)' <<<"$T0")" "[3]" \
	"the table before the errors: 192.0.2.0/24 counted 3 packets"
diag "table: $T0"

# bad DESC RC PHRASE ARGS...: the command fails as documented (two tests)
# and leaves the table as it was (one test).
bad() {
	local desc=$1 rc=$2 phrase=$3
	shift 3
	cli_fails "$desc" "$rc" "$phrase" "$R" "$@"
	if ! is "$(rt_json)" "$T0" "$desc: table unchanged"; then
		diag "(the cases below compare with the table as it is now)"
		T0=$(rt_json)
	fi
}

# traffic: one more echo through 192.0.2.0/24, so that its counters are not 0.
traffic() {
	ping4 "$C" 192.0.2.1 1
	T0=$(rt_json)
}

# ---- add / replace / del
bad "add, gateway not on a network of the device" 1 \
	'route 198.51.100.0/24: gateway 10.0.3.2 is not on a network connected to "r1"' \
	route add 198.51.100.0/24 via 10.0.3.2 dev r1
bad "add, gateway on no network at all" 1 \
	'route 198.51.100.0/24: gateway 10.77.0.1 is not on a network connected to "r1"' \
	route add 198.51.100.0/24 via 10.77.0.1 dev r1
bad "add, gateway is the router's own address" 1 \
	"route 198.51.100.0/24: gateway 10.0.2.1 is one of this router's own addresses" \
	route add 198.51.100.0/24 via 10.0.2.1 dev r1
bad "add ip6, gateway not on a network of the device" 1 \
	'route 2001:db8:5::/48: gateway 2001:db8:3::2 is not on a network connected to "r1"' \
	route add 2001:db8:5::/48 via 2001:db8:3::2 dev r1
bad "add ECMP, second gateway not on its device's network" 1 \
	'route 198.51.100.0/24: gateway 10.0.2.2 is not on a network connected to "r2"' \
	route add 198.51.100.0/24 via 10.0.2.2 dev r1 via 10.0.2.2 dev r2
bad "add, host bits set" 2 'host bits set in "192.0.2.1/24"' route add 192.0.2.1/24 blackhole
bad "add ip6, host bits set" 2 'host bits set in "2001:db8::1/32"' route add 2001:db8::1/32 blackhole
bad "add, unknown device" 1 'cannot find device "nosuch0"' \
	route add 198.51.100.0/24 via 10.0.2.2 dev nosuch0
bad "add, duplicate" 1 'route 192.0.2.0/24 exists (use "route replace")' \
	route add 192.0.2.0/24 via 10.0.2.2 dev r1
bad "add, duplicate with another action" 1 'route 203.0.113.0/24 exists (use "route replace")' \
	route add 203.0.113.0/24 pass
bad "add ip6, duplicate" 1 'route 2001:db8:100::/48 exists (use "route replace")' \
	route add 2001:db8:100::/48 blackhole
bad "del of a route that is not there" 1 'no route 198.51.100.0/24' route del 198.51.100.0/24
bad "del of a shorter prefix than a route's" 1 'no route 192.0.0.0/16' route del 192.0.0.0/16
bad "del of a longer prefix inside a route" 1 'no route 192.0.2.0/25' route del 192.0.2.0/25
bad "replace of a route that is not there" 1 'no route 198.51.100.0/24' \
	route replace 198.51.100.0/24 blackhole
bad "replace with a gateway not on the device's network" 1 \
	'route 192.0.2.0/24: gateway 10.0.3.2 is not on a network connected to "r1"' \
	route replace 192.0.2.0/24 via 10.0.3.2 dev r1
bad "show of a route that is not there" 1 'no route 198.51.100.0/24' route show 198.51.100.0/24

# ---- usage
bad "add, invalid address" 2 'invalid prefix "300.1.2.0/24"' route add 300.1.2.0/24 blackhole
bad "add, prefix length 33" 2 'invalid prefix length in "192.0.2.0/33"' route add 192.0.2.0/33 blackhole
bad "add ip6, prefix length 129" 2 'invalid prefix length in "2001:db8::/129"' \
	route add 2001:db8::/129 blackhole
bad "add, IPv4 gateway for an IPv6 route" 2 'invalid gateway "10.0.2.2" for an IPv6 route' \
	route add 2001:db8:5::/48 via 10.0.2.2 dev r1
bad "add, IPv6 gateway for an IPv4 route" 2 'invalid gateway "2001:db8:2::2" for an IPv4 route' \
	route add 198.51.100.0/24 via 2001:db8:2::2 dev r1
nine=()
for ((i = 0; i < 9; i++)); do nine+=(via 10.0.2.2 dev r1); done
bad "add, 9 next hops" 2 'at most 8 next hops' route add 198.51.100.0/24 "${nine[@]}"
bad "add, via without dev" 2 '"via" needs "GW dev DEV"' route add 198.51.100.0/24 via 10.0.2.2
bad "add, unknown action" 2 'unknown route word "drop"' route add 198.51.100.0/24 drop
bad "add, words after blackhole" 2 'unexpected "now" after "blackhole"' \
	route add 198.51.100.0/24 blackhole now
bad "add without an action" 2 'a route needs a prefix and an action' route add 198.51.100.0/24
bad "del without a prefix" 2 'expected "route del PREFIX"' route del
bad "flush with an argument" 2 '"route flush" takes no arguments' route flush now
bad "unknown route command" 2 'unknown route command "frobnicate"' route frobnicate

# ---- load: nothing applied on any error
load_file() { # NAME LINE...: a load file in $T_TMP
	local f=$T_TMP/$1
	shift
	printf '%s\n' "$@" >"$f"
	echo "$f"
}
f=$(load_file syntax "# a comment" "198.51.100.0/24 blackhole" "198.51.101.0/24 drop" "198.51.102.0/24 pass")
bad "load, unknown word on line 3" 2 "$f line 3: unknown route word \"drop\" (expected blackhole, pass or via) (nothing applied)" \
	route load "$f"
f=$(load_file hostbits "" "198.51.100.0/24 blackhole   # fine" "198.51.101.1/24 blackhole")
bad "load, host bits on line 3" 2 "$f line 3: host bits set in \"198.51.101.1/24\" (nothing applied)" \
	route load "$f"
f=$(load_file badpfx "198.51.100.0/24 blackhole" "198.51.101.0/33 blackhole")
bad "load, bad prefix length on line 2" 2 "$f line 2: invalid prefix length in \"198.51.101.0/33\"" \
	route load "$f"
f=$(load_file nodev "198.51.100.0/24 blackhole" "# nothing" "" "198.51.101.0/24 via 10.0.2.2 dev nosuch0")
bad "load, unknown device on line 4" 1 "$f line 4: cannot find device \"nosuch0\" (nothing applied)" \
	route load "$f"
f=$(load_file nogw "198.51.100.0/24 blackhole" "198.51.101.0/24 via 10.0.3.2 dev r1")
bad "load, gateway not on the device's network" 1 \
	'route 198.51.101.0/24: gateway 10.0.3.2 is not on a network connected to "r1" (nothing applied)' \
	route load "$f"
like "$ERR" "line 2" "load, gateway not on the device's network: the error names the line (line 2)"
traffic
f=$(load_file dup "198.51.100.0/24 blackhole" "192.0.2.0/24 via 10.0.2.2 dev r1" \
	"198.51.101.0/24 pass" "192.0.2.0/24 blackhole")
bad "load, prefix listed twice" 1 'route 192.0.2.0/24 is already on line 2 (nothing applied)' route load "$f"
like "$ERR" "line 4" "load, prefix listed twice: the error names the line of the second one (line 4)"
traffic
f=$(load_file dup6 "2001:db8:5::/48 blackhole" "2001:db8:5::/48 pass")
bad "load, ip6 prefix listed twice" 1 'route 2001:db8:5::/48 is already on line 1 (nothing applied)' route load "$f"
bad "load of a missing file" 1 "cannot open \"$T_TMP/missing\"" route load "$T_TMP/missing"
bad "load without a file" 2 'expected "route load FILE"' route load

# ---- the table still routes as before
n=$(jq 'map(select(.prefix == "192.0.2.0/24") | .packets)[0]' <<<"$T0")
ok "after all that, ping 192.0.2.1 still works" ping4 "$C" 192.0.2.1 2
is "$(rt_ctr 192.0.2.0/24)" $((n + 2)) "and the route counts on ($n + 2)"

# ---- a good load replaces the table as a whole
f=$(load_file good "# routes for the test" "" "198.51.100.0/24 blackhole" \
	"  192.0.2.0/24   via 10.0.2.2 dev r1	# tabs, spaces, a comment" \
	"2001:db8:5::/48 via 2001:db8:2::2 dev r1 via 2001:db8:3::2 dev r2" "198.51.101.0/24 pass")
cli "$R" route load "$f"
is "$RC/$OUT/$ERR" "0/4 routes loaded/" "load of 4 routes (comments, blank line, tabs): exit 0, '4 routes loaded'"
is "$(xdpr -j route show | jq -c 'map([.prefix, .action, (.nexthops // [] | map(.gateway + "%" + .dev))]) | sort')" \
	'[["192.0.2.0/24","via",["10.0.2.2%r1"]],["198.51.100.0/24","blackhole",[]],["198.51.101.0/24","pass",[]],["2001:db8:5::/48","via",["2001:db8:2::2%r1","2001:db8:3::2%r2"]]]' \
	"the table is exactly the file's 4 routes (the others are gone)"
is "$(xdpr -j route load "$f" | jq -c .)" '{"loaded":4}' "load -j: {\"loaded\":4}"
cli "$R" route load - <<<"203.0.113.0/24 blackhole"
is "$RC/$OUT" "0/1 routes loaded" "load from stdin (-): 1 route"
is "$(xdpr -j route show | jq -r 'map(.prefix) | join(" ")')" "203.0.113.0/24" "the table is that one route"
ok "ping 192.0.2.1 fails now (no route in the map, none in R's kernel)" fails ping4 "$C" 192.0.2.1 1
f=$(load_file empty "# nothing but comments" "")
cli "$R" route load "$f"
is "$RC/$OUT" "0/0 routes loaded" "load of a file with no routes: 0 routes loaded"
is "$(xdpr -j route show)" "[]" "... and the table is empty"
is "$(xdpr route show)" "" "route show of an empty table prints nothing"
ok "route flush of an empty table" xdpr route flush
is "$(xdpr -p route show | jq -c .)" "[]" "route show -p is JSON too"

# ---- no router in the namespace
LONE="xdpr-$T_ID-rc-lone"
ip netns add "$LONE" || bail_out "cannot create namespace $LONE"
T_NS_MADE+=("$LONE")
cli_fails "route show without xdpr attached" 1 "xdpr is not attached" "$LONE" route show
cli_fails "route add without xdpr attached" 1 "xdpr is not attached" "$LONE" route add 192.0.2.0/24 blackhole

done_testing
