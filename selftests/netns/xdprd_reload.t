#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# xdprd_reload.t - a reload never drops NAT or every rule by mistake.  On
# SIGHUP, a file that would detach the NAT interface (its name mistyped in
# the file), delete every NAT rule or every filter rule, or that was emptied,
# is refused with one log line saying what it would do and that nothing
# changed: the interfaces, the NAT rule, the filter rule and the route stay,
# and UDP through the masquerade still works.  With "on-reload force" the
# emptied file applies, and the log counts what went: 3 interfaces detached,
# the NAT rule deleted, the route, the filter.
. "$(dirname "$0")/nat_lib.sh"
need_xdprd

nat_topo_create rl

CONF=$T_TMP/xdpr.conf
cat >"$T_TMP/good.conf" <<'EOF'
link attach r0 r1 r2
nat add out r1 masquerade
route add 192.0.2.0/24 blackhole
filter add out r1 proto udp dport 7010 drop
EOF
cp "$T_TMP/good.conf" "$CONF"
ip netns exec "$R" "$XDPRD" --foreground --config "$CONF" --metrics none --gc 1 \
	>"$T_TMP/xdprd.log" 2>&1 &
DPID=$!
ok "xdprd applied the file" xdprd_started "$T_TMP/xdprd.log"

# state: the router as a user sees it
state() {
	xdpr -j link show | jq -c '[.[] | {dev, state}] | sort_by(.dev)'
	xdpr -j nat show | jq -c '[.[] | {dev, action, state}]'
	xdpr -j filter show | jq -c '[.rules[] | del(.packets, .bytes)]'
	xdpr route show
}
before=$(state)
like "$before" '"dev":"r1","action":"masquerade"' "the state read holds the NAT rule (what the checks below compare)"
like "$before" '192\.0\.2\.0/24 blackhole' "... and the route"
udp_echo "$S" 7000
like "$(udp "$C1" ask 40001 3 10.0.4.2:7000)" '^10\.0\.2\.1:' "UDP from C1 is masqueraded through r1"

# reload FILE LINE: FILE becomes the configuration, SIGHUP; the log's next
# line must be LINE, and the only one (what follows it for a second)
reload() {
	local n0 i new
	cp "$1" "$CONF"
	n0=$(wc -l <"$T_TMP/xdprd.log")
	kill -HUP "$DPID"
	for ((i = 0; i < 50; i++)); do
		[ "$(wc -l <"$T_TMP/xdprd.log")" -gt "$n0" ] && break
		sleep 0.1
	done
	sleep 1
	new=$(tail -n +$((n0 + 1)) "$T_TMP/xdprd.log")
	is "$new" "$2" "$3"
}
REFUSED='xdprd: reload: configuration not applied: the file would'
TAIL=': a mistyped device name or an emptied file? "on-reload force" in the file applies it (nothing changed)'

# ---- the NAT interface's name mistyped (r1 -> r9, which does not exist)
sed 's/r1/r9/g' "$T_TMP/good.conf" >"$T_TMP/typo.conf"
reload "$T_TMP/typo.conf" "$REFUSED detach r1 (an interface with NAT rules)$TAIL" \
	"a mistyped NAT interface: refused, one line says the file would detach r1"
is "$(state)" "$before" "the interfaces, the NAT rule, the filter rule and the route are as they were"
like "$(udp "$C1" ask 40002 3 10.0.4.2:7000)" '^10\.0\.2\.1:' "UDP from C1 is still masqueraded through r1"

reload "$T_TMP/good.conf" "xdprd: reload: configuration applied: the router already ran it" \
	"the good file again: applied, nothing to change"

# ---- every NAT rule gone
grep -v '^nat add' "$T_TMP/good.conf" >"$T_TMP/nonat.conf"
reload "$T_TMP/nonat.conf" "$REFUSED delete every NAT rule (1)$TAIL" \
	"a file without the NAT rule: refused, one line says it would delete every NAT rule"
is "$(state)" "$before" "nothing changed"

# ---- every filter rule gone
grep -v '^filter add' "$T_TMP/good.conf" >"$T_TMP/noflt.conf"
reload "$T_TMP/noflt.conf" "$REFUSED delete every filter rule (1)$TAIL" \
	"a file without the filter rule: refused, one line says it would delete every filter rule"
is "$(state)" "$before" "nothing changed"

# ---- the file emptied
echo "# emptied" >"$T_TMP/empty.conf"
reload "$T_TMP/empty.conf" \
	"$REFUSED detach r1 (an interface with NAT rules), delete every NAT rule (1) and delete every filter rule (1)$TAIL" \
	"an emptied file: refused, one line says all it would do"
is "$(state)" "$before" "nothing changed"
like "$(udp "$C1" ask 40003 3 10.0.4.2:7000)" '^10\.0\.2\.1:' "UDP from C1 is still masqueraded through r1"

# ---- on-reload force: the emptied file applies, and the log counts what went
printf '# emptied, on purpose\non-reload force\n' >"$T_TMP/force.conf"
reload "$T_TMP/force.conf" \
	"xdprd: reload: configuration applied: attached 0, detached 3; NAT rules added 0, replaced 0, deleted 1; routes changed 1; filter changed; NAT tables kept; NAT settings unchanged" \
	"with on-reload force the emptied file applies; the log counts the NAT rule, the route and the filter that went"
is "$(xdpr -j link show | jq length)" 0 "every interface is detached"
ok "xdprd still runs" kill -0 "$DPID"

# ---- a bad on-reload word is a parse error with its line
printf 'link attach r0\non-reload maybe\n' >"$CONF"
kill -HUP "$DPID"
ok "on-reload maybe: refused with its line" wait_file_line "$T_TMP/xdprd.log" \
	"reload: configuration not applied: $CONF line 2: expected \"on-reload \{ guard \| force \}\""
kill -TERM "$DPID"
wait "$DPID"
is "$?" 0 "SIGTERM: exit 0"
done_testing
