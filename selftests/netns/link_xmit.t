#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# link_xmit.t - whether a port can transmit redirected XDP frames (XMIT) is
# asked again, not only at its first attach.  A veth takes redirected frames
# only while its peer has GRO or XDP, and that changes: r1 is re-created
# with GRO off on its peer, attached (XMIT no: C -> S goes through the
# kernel, pass_egress_no_xmit), then the peer gets GRO.  `link sync` asks
# again: XMIT yes, and C -> S is forwarded by XDP.  An attach of the
# attached r1 asks again too (and still says it is attached).
. "$(dirname "$0")/lib.sh"

topo_create lx

xmit() {
	link_json "$R" | jq -r '.[] | select(.dev == "r1") | .xdp_xmit'
}

# r1/s0 again, as topo_create made them, but with GRO off on s0 (a new veth's default)
ip -n "$R" link del r1
ip -n "$R" link add r1 type veth peer name s0 netns "$S" || bail_out "cannot create veth r1/s0"
ip -n "$R" addr add 10.0.2.1/24 dev r1
ip -n "$R" addr add 2001:db8:2::1/64 dev r1 nodad
ip -n "$S" addr add 10.0.2.2/24 dev s0
ip -n "$S" addr add 2001:db8:2::2/64 dev s0 nodad
in_ns "$S" ethtool -K s0 gro off tx off >/dev/null 2>&1
in_ns "$R" ethtool -K r1 tx off >/dev/null 2>&1
ip -n "$R" link set r1 up
ip -n "$S" link set s0 up
ip -n "$S" route add default via 10.0.2.1
ip -n "$S" -6 route add default via 2001:db8:2::1
ok "C -> S through the kernel before xdpr (r1 re-created)" ping4 "$C" 10.0.2.2 2

cli "$R" link attach r0 r1
is "$RC" 0 "link attach r0 r1"
like "$OUT" 'note: the r1 driver cannot transmit XDP frames now: .*then "xdpr link sync"' \
	"attach says r1 cannot transmit XDP frames and that link sync asks again"
is "$(xmit)" false "link show: r1 XMIT no (its peer has no GRO)"
x0=$(ctr "$R" r0 pass_egress_no_xmit)
ok "ping C -> S" ping4 "$C" 10.0.2.2 3
num "$(grown "$x0" "$R" r0 pass_egress_no_xmit)" -ge 3 "... through the kernel (r0 pass_egress_no_xmit grew)"

# the peer gets GRO: nothing asks by itself
ok "GRO on s0 (r1's peer)" in_ns "$S" ethtool -K s0 gro on
sleep 0.5
is "$(xmit)" false "link show: r1 still XMIT no until something asks again"

cli "$R" link sync
is "$RC:$ERR" "0:" "link sync: exit 0, nothing on stderr"
like "$OUT" '^r1: XDP transmit yes \(probed again\)$' "link sync says r1 can transmit XDP frames now"
is "$(xmit)" true "link show: r1 XMIT yes"
x0=$(ctr "$R" r0 pass_egress_no_xmit)
f0=$(ctr "$R" r0 forwarded)
ok "ping C -> S" ping4 "$C" 10.0.2.2 5
num "$(grown "$f0" "$R" r0 forwarded)" -ge 5 "... forwarded by XDP (r0 forwarded grew by >= 5)"
is "$(grown "$x0" "$R" r0 pass_egress_no_xmit)" 0 "... none through the kernel (r0 pass_egress_no_xmit did not grow)"
cli "$R" -j link sync
is "$(jq -c '{changes, what}' <<<"$OUT" 2>&1)" '{"changes":0,"what":[]}' "link sync again: nothing to change"

# GRO off again: an attach of the attached r1 asks again
ok "GRO off on s0" in_ns "$S" ethtool -K s0 gro off
cli_fails "link attach r1 (attached)" 1 'Error: xdpr is already attached to "r1" (XDP transmit probed again: no)' \
	"$R" link attach r1
is "$(xmit)" false "link show: r1 XMIT no again"
x0=$(ctr "$R" r0 pass_egress_no_xmit)
ok "ping C -> S" ping4 "$C" 10.0.2.2 3
num "$(grown "$x0" "$R" r0 pass_egress_no_xmit)" -ge 3 "... through the kernel again (no frame redirected into a black hole)"

# ---- xdprd asks again at every sweep (the peer's GRO sends the router's namespace nothing)
XDPRD=${XDPRD:-$(dirname "$XDPR")/xdprd}
[ -x "$XDPRD" ] || { fail "$XDPRD not built"; done_testing; }
printf 'link attach r0 r1\n' >"$T_TMP/xdpr.conf"
ip netns exec "$R" "$XDPRD" --foreground --config "$T_TMP/xdpr.conf" --metrics none --gc 1 \
	>>"$T_TMP/xdprd.log" 2>&1 &
DAEMON_PID=$!
ok "xdprd runs" within 5 grep -q 'running' "$T_TMP/xdprd.log"
ok "GRO on s0" in_ns "$S" ethtool -K s0 gro on
ok "xdprd: within 3 s link show says r1 XMIT yes" within 3 bash -c "[ \"\$(ip netns exec '$R' '$XDPR' -j link show | jq -r '.[] | select(.dev == \"r1\") | .xdp_xmit')\" = true ]"
ok "xdprd logs it" within 3 grep -qF "r1: XDP transmit yes (probed again)" "$T_TMP/xdprd.log"
f0=$(ctr "$R" r0 forwarded)
ok "ping C -> S" ping4 "$C" 10.0.2.2 3
num "$(grown "$f0" "$R" r0 forwarded)" -ge 3 "... forwarded by XDP"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"

done_testing
