#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ddos_cli.t - `xdpr ddos` and `xdpr top` end to end (issue 15), on the NAT
# topology without NAT: C1 (10.0.1.2) and C2 (10.0.3.2) ping H (10.0.2.2)
# through the router.  With 10.0.2.0/24 protected and the meters on, the
# echo requests C1 sent show as H's "to" meter and C1's "from" meter, with
# exactly the packets and L3 bytes sent; replies (to an unprotected host)
# are not metered.  A ban to H drops every echo in XDP, counted per ban and
# as drop_ddos_ban on r0, while C2's pings to another host still pass; a
# "from" ban drops only that source; a timed ban ends by itself (listed as
# expired) and traffic passes again; unban and flush remove bans; `top`
# ranks H first by packet rate.  Bad words exit 2 with one Error: line,
# missing bans and duplicate prefixes exit 1, nothing changed.
. "$(dirname "$0")/nat_lib.sh"
need jq

nat_topo_create dd
# no NAT here: H routes the inside networks back through the router
ip -n "$H" route add 10.0.1.0/24 via 10.0.2.1 && ip -n "$H" route add 10.0.3.0/24 via 10.0.2.1 ||
	bail_out "cannot route H back to the inside"
ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"

# ---- usage errors: exit 2, one Error: line
cli_fails "ddos bogus" 2 'unknown ddos command "bogus"' "$R" ddos bogus
cli_fails "ddos on now" 2 'unexpected "now" after "ddos on"' "$R" ddos on now
cli_fails "ddos protect (no word)" 2 'expected "ddos protect add PREFIX"' "$R" ddos protect
cli_fails "ddos protect add (no prefix)" 2 '"protect add" needs a prefix' "$R" ddos protect add
cli_fails "ddos protect add 10.0.2.1/24" 2 'host bits set in "10.0.2.1/24"' "$R" ddos protect add 10.0.2.1/24
cli_fails "ddos protect add 10.0.2.0/33" 2 'invalid prefix length in "10.0.2.0/33"' "$R" ddos protect add 10.0.2.0/33
cli_fails "ddos ban (no address)" 2 '"ban" needs an address' "$R" ddos ban
cli_fails "ddos ban to" 2 '"ban" needs an address' "$R" ddos ban to
cli_fails "ddos ban 10.0.2.300" 2 'invalid address "10.0.2.300"' "$R" ddos ban 10.0.2.300
cli_fails "ddos ban time 0" 2 'invalid ban time "0"' "$R" ddos ban 10.0.2.2 time 0
cli_fails "ddos ban time (no value)" 2 'invalid ban time ""' "$R" ddos ban 10.0.2.2 time
cli_fails "ddos ban twice a time" 2 'the ban time is given twice' "$R" ddos ban 10.0.2.2 time 5 forever
cli_fails "ddos ban loud" 2 'unknown ban argument "loud"' "$R" ddos ban 10.0.2.2 loud
cli_fails "ddos unban ... time" 2 'unexpected "time" after the address' "$R" ddos unban 10.0.2.2 time 5
cli_fails "ddos flush all" 2 'expected "bans" or "hosts", not "all"' "$R" ddos flush all
cli_fails "ddos show extra" 2 'unexpected "extra" after "ddos show"' "$R" ddos show extra
cli_fails "top n 0" 2 'invalid n "0"' "$R" top n 0
cli_fails "top by size" 2 'expected "by pps" or "by bps", not "by size"' "$R" top by size
cli_fails "top interval" 2 '"interval" needs a value' "$R" top interval
cli_fails "top sideways" 2 'unknown top argument "sideways"' "$R" top sideways x
# ---- runtime errors: exit 1
cli_fails "unban what is not banned" 1 '10.0.2.2 is not banned (to)' "$R" ddos unban 10.0.2.2

dshow() { xdpr -j -s ddos show 2>&1; }
is "$(dshow | jq -c '[.meters, .hosts, .protected, (.bans | length), .banned]')" '[false,0,[],0,0]' \
	"-j ddos show: meters off, nothing protected, no ban, no host"
ok "ddos protect add 10.0.2.0/24" xdpr ddos protect add 10.0.2.0/24
cli_fails "ddos protect add 10.0.2.0/24 again" 1 '10.0.2.0/24 is already protected' "$R" ddos protect add 10.0.2.0/24
ok "ddos protect add 2001:db8:2::/64" xdpr ddos protect add 2001:db8:2::/64
ok "ddos on" xdpr ddos on
is "$(dshow | jq -c '[.meters, (.protected | sort)]')" '[true,["10.0.2.0/24","2001:db8:2::/64"]]' \
	"-j ddos show: meters on, both prefixes protected"

# host_of DIR ADDR FIELD: a meter's field, "none" when there is no such meter
host_of() {
	local v
	v=$(dshow | jq -r --arg d "$1" --arg a "$2" --arg f "$3" \
		'[.host_meters[] | select(.dir == $d and .addr == $a) | .[$f]] | if length == 1 then .[0] else "none" end' 2>/dev/null)
	echo "${v:-none}"
}

ok "C1 pings H 10 times (meters on)" ping4 "$C1" 10.0.2.2 10 -s 56
is "$(host_of to 10.0.2.2 packets)" 10 "H's \"to\" meter: the 10 echo requests"
is "$(host_of to 10.0.2.2 bytes)" 840 "H's \"to\" meter: 10 x 84 L3 bytes"
is "$(host_of from 10.0.1.2 packets)" 10 "C1's \"from\" meter: its 10 echo requests"
is "$(host_of to 10.0.1.2 packets)" none "the replies (to C1, not protected) are not metered"
is "$(dshow | jq -r .metered)" 10 "10 packets metered"

# ---- top: H ranks first by packet rate while C1 pings it fast
T_TIMEOUT=20 in_ns "$C1" ping -q -c 300 -i 0.01 10.0.2.2 >/dev/null 2>&1 &
PING=$!
TOP=$(T_CLI_TIMEOUT=10 xdpr -j top n 5 interval 1 count 2 2>&1)
wait "$PING"
first=$(jq -rs '.[1].to[0] | "\(.addr) \(.pps > 30)"' <<<"$TOP" 2>/dev/null)
is "$first" "10.0.2.2 true" "top: two reports; in the second, H first among protected hosts at > 30 pps" ||
	diag "$TOP"
is "$(jq -rs '.[1].from[0].addr' <<<"$TOP" 2>/dev/null)" 10.0.1.2 "top: C1 first among sources"

# ---- a ban to H: dropped in XDP, counted; another host is not affected
ok "ddos ban 10.0.2.2 (default time)" xdpr ddos ban 10.0.2.2
b0=$(ctr "$R" r0 drop_ddos_ban)
ping4 "$C1" 10.0.2.2 5 -s 56
is "$(grown "$b0" "$R" r0 drop_ddos_ban)" 5 "the 5 echoes to the banned host: drop_ddos_ban on r0"
ok "C2 pings C1 (not banned) through the router" ping4 "$C2" 10.0.1.2 3
ban=$(dshow | jq -c '.bans[] | select(.addr == "10.0.2.2") | [.dir, .reason, .drop, .blackhole, .forever, .left_s > 1890, .dropped_packets, .dropped_bytes]')
is "$ban" '["to","manual",true,false,false,true,5,420]' \
	"the ban: to, manual, drop, ~1900 s left, 5 packets 420 bytes dropped"
ok "ddos unban 10.0.2.2" xdpr ddos unban 10.0.2.2
ok "C1 pings H again after unban" ping4 "$C1" 10.0.2.2 3

# ---- a ban from C1: only C1's packets to protected and other hosts
ok "ddos ban from 10.0.1.2 forever blackhole" xdpr ddos ban from 10.0.1.2 forever blackhole
ok "C2 pings H (C1 is banned, not C2)" ping4 "$C2" 10.0.2.2 3
b0=$(ctr "$R" r0 drop_ddos_ban)
ping4 "$C1" 10.0.2.2 4
is "$(grown "$b0" "$R" r0 drop_ddos_ban)" 4 "C1's 4 echoes dropped as drop_ddos_ban"
is "$(dshow | jq -c '.bans[] | select(.addr == "10.0.1.2") | [.dir, .forever, .blackhole, .dropped_packets]')" \
	'["from",true,true,4]' "the ban: from, forever, blackhole flagged, 4 dropped"
out=$(xdpr ddos show 2>&1)
like "$out" 'from +10\.0\.1\.2 +manual .* forever +drop,blackhole +4 ' "text ddos show lists the ban" || diag "$out"

# ---- a timed ban ends by itself
ok "ddos unban from 10.0.1.2" xdpr ddos unban from 10.0.1.2
ok "ddos ban 10.0.2.2 time 2" xdpr ddos ban 10.0.2.2 time 2
b0=$(ctr "$R" r0 drop_ddos_ban)
ping4 "$C1" 10.0.2.2 2
is "$(grown "$b0" "$R" r0 drop_ddos_ban)" 2 "during the 2 s ban: dropped"
sleep 2.5
ok "after it: C1 pings H" ping4 "$C1" 10.0.2.2 2
is "$(dshow | jq -c '.bans[] | select(.addr == "10.0.2.2") | [.expired, .left_s]')" '[true,0]' \
	"the ended ban is listed as expired until removed"
out=$(xdpr -j ddos flush bans 2>&1)
is "$(jq -r .removed <<<"$out")" 1 "ddos flush bans: 1 removed"
is "$(dshow | jq -c '.bans')" '[]' "no ban left"
ok "ddos flush hosts" xdpr ddos flush hosts
is "$(dshow | jq -r .hosts)" 0 "no host metered after flush hosts"
ok "ddos off" xdpr ddos off
ok "ddos protect del 10.0.2.0/24" xdpr ddos protect del 10.0.2.0/24
cli_fails "ddos protect del 10.0.2.0/24 again" 1 '10.0.2.0/24 is not protected' "$R" ddos protect del 10.0.2.0/24
ping4 "$C1" 10.0.2.2 2
is "$(dshow | jq -r .hosts)" 0 "meters off: nothing metered"

done_testing
