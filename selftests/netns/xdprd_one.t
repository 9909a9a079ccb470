#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# xdprd_one.t - one xdprd per router.  A second xdprd in the router's
# network namespace (its own `ip netns exec`, so its own mount namespace,
# /run and bpffs; another metrics port, so no port collides) refuses at
# start with one "Error:" line naming the first's pid and exits 1, in the
# foreground and in the background, without touching the first: it keeps
# running, its interfaces, NAT rule and flow meter stay, its metrics
# answer.  An xdprd in another router's namespace starts beside it, and
# once the first is killed (-9) the router takes a new one.
. "$(dirname "$0")/nat_lib.sh"
need curl
need_xdprd

nat_topo_create one
MPORT=19479

CONF=$T_TMP/xdpr.conf
cat >"$CONF" <<'EOF'
link attach r0 r1 r2
nat add out r1 masquerade
export ipfix 10.0.2.2:4739
EOF
ip netns exec "$R" "$XDPRD" --foreground --config "$CONF" --metrics "127.0.0.1:$MPORT" \
	>"$T_TMP/first.log" 2>&1 &
FIRST=$!
ok "the first xdprd applied its file" xdprd_started "$T_TMP/first.log"
for ((i = 0; i < 50; i++)); do
	[ "$(xdpr -j flow show 2>/dev/null | jq -r .meter.state)" = on ] && break
	sleep 0.1
done
is "$(xdpr -j flow show | jq -r .meter.state)" on "the first xdprd turned the flow meter on (export ipfix)"

# state: what the first runs, as a user sees it
state() {
	xdpr -j link show | jq -c '[.[] | {dev, state, prog_id}]'
	xdpr -j nat show | jq -c '[.[] | {dev, action, state}]'
	xdpr -j flow show | jq -r .meter.state
}
before=$(state)
log_before=$(cat "$T_TMP/first.log")

# second ARGS...: another xdprd in R (the same file, another metrics port);
# its exit status, its stderr in $T_TMP/second.err
second() {
	T_TIMEOUT=10 in_ns "$R" "$XDPRD" --config "$CONF" --metrics "127.0.0.1:$((MPORT + 1))" "$@" \
		>/dev/null 2>"$T_TMP/second.err"
}
msg="^Error: another xdprd \\(pid $FIRST\\) runs on this router: one daemon per network namespace\$"

second --foreground
is "$?" 1 "a second xdprd in the foreground: exit 1"
is "$(wc -l <"$T_TMP/second.err")" 1 "one line on stderr"
like "$(cat "$T_TMP/second.err")" "$msg" "Error: another xdprd (pid $FIRST) runs on this router"
second
is "$?" 1 "a second xdprd in the background: exit 1"
like "$(cat "$T_TMP/second.err")" "$msg" "the same one line"
is "$(wc -l <"$T_TMP/second.err")" 1 "and no other"
second --foreground --metrics none
is "$?" 1 "without metrics (nothing to collide on): exit 1 all the same"

sleep 1
ok "the first xdprd still runs" kill -0 "$FIRST"
is "$(state)" "$before" "its interfaces, NAT rule and flow meter are as they were"
ok "its metrics answer" in_ns "$R" curl -sf -o /dev/null "http://127.0.0.1:$MPORT/metrics"
is "$(cat "$T_TMP/first.log")" "$log_before" "its log has no new line"

# another router (namespace): its own daemon starts beside the first
O="xdpr-$T_ID-one-o"
ip netns add "$O" || bail_out "cannot create namespace $O"
T_NS_MADE+=("$O")
: >"$T_TMP/empty.conf"
ip netns exec "$O" "$XDPRD" --foreground --config "$T_TMP/empty.conf" --metrics none \
	>"$T_TMP/other.log" 2>&1 &
OTHER=$!
ok "an xdprd in another router's namespace starts beside it" \
	xdprd_started "$T_TMP/other.log"
kill -TERM "$OTHER"
wait "$OTHER"
is "$?" 0 "and stops cleanly"

# the first killed: the router takes a new one
kill -9 "$FIRST"
wait "$FIRST" 2>/dev/null
ip netns exec "$R" "$XDPRD" --foreground --config "$CONF" --metrics "127.0.0.1:$MPORT" \
	>"$T_TMP/third.log" 2>&1 &
THIRD=$!
ok "after kill -9 of the first, a new xdprd starts" \
	xdprd_started "$T_TMP/third.log"
kill -TERM "$THIRD"
wait "$THIRD"
is "$?" 0 "and stops cleanly"
done_testing
