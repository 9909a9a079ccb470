#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# link_atomic.t - a link command that fails changes nothing, shown by making
# it fail where no real failure can be produced on demand: XDPR_FAULT (a
# test-only hook, loader/core.h) makes the attach or detach step fail with
# EIO.
#   attach force over another XDP program: in our mode it is replaced in one
#   step; in another mode it is taken off first.  Either way a failed attach
#   leaves that program on the device, in its mode, also when the failure
#   is on another device of the same call (its one-step replacement is
#   taken back).
#   detach: a failed detach leaves the interface attached and a redirect
#   target (traffic to it keeps being forwarded in XDP); in a detach of two,
#   the one already detached is attached again.
. "$(dirname "$0")/lib.sh"
need clang

topo_create at
pass_o=$(xdp_pass_obj) || bail_out "cannot build xdp_pass.bpf.c"

# xdp_of DEV: "ID/MODE" of the XDP program on DEV in the router (MODE: the
# kernel's number, 1 driver, 2 generic), "none" without one.
xdp_of() {
	ip -j -n "$R" link show "$1" | jq -r '.[0].xdp | if . then "\(.prog.id)/\(.mode)" else "none" end'
}

# attached: "r0,r1" style list of attached devices, "" for none.
attached() {
	link_json "$R" | jq -r 'map(.dev) | sort | join(",")'
}

ok "a foreign program on r1 in generic mode" \
	ip -n "$R" link set dev r1 xdpgeneric obj "$pass_o" sec xdp
ok "a foreign program on r0 in driver mode" ip -n "$R" link set dev r0 xdpdrv obj "$pass_o" sec xdp
f0=$(xdp_of r0) f1=$(xdp_of r1)
like "$f0/$f1" '^[0-9]+/1/[0-9]+/2$' "r0 has one in driver mode ($f0), r1 in generic mode ($f1)"

# ---- attach force, the attach fails
XDPR_FAULT=attach cli_fails "attach force over a generic-mode program, attach fails" 1 \
	'Error: cannot attach to "r1" in native mode: Input/output error' "$R" link attach r1 force
is "$(xdp_of r1)" "$f1" "r1 has its own program back, in generic mode"
is "$(attached)" "" "link show: nothing attached"

XDPR_FAULT=attach cli_fails "attach force over a driver-mode program, replacement fails" 1 \
	'Error: cannot replace the XDP program on "r0": Input/output error' "$R" link attach r0 force
is "$(xdp_of r0)" "$f0" "r0 keeps its own program"
is "$(attached)" "" "link show: nothing attached"

XDPR_FAULT=attach:r1 cli_fails "attach r0 r1 force, r0 replaced, then r1 fails" 1 \
	'Error: cannot attach to "r1" in native mode: Input/output error' \
	"$R" link attach r0 r1 force
is "$(xdp_of r0)" "$f0" "r0's replacement was taken back: its own program, driver mode"
is "$(xdp_of r1)" "$f1" "r1 has its own program back, in generic mode"
is "$(attached)" "" "link show: nothing attached"

# and each way works when nothing fails
cli "$R" -j link attach r0 r1 force
is "$RC" 0 "link attach r0 r1 force"
is "$(jq -r 'map("\(.dev):\(.replaced_foreign)") | join(",")' <<<"$OUT")" "r0:true,r1:true" \
	"both report the replaced program"
is "$(attached)" "r0,r1" "link show: r0 and r1"
prog=$(link_json "$R" | jq -r '.[0].prog_id')
is "$(xdp_of r0)/$(xdp_of r1)" "$prog/1/$prog/1" "r0 and r1 run xdpr's program ($prog) in driver mode"
f0=$(ctr "$R" r0 forwarded)
ok "IPv4 ping C -> S" ping4 "$C" 10.0.2.2 5
num "$(grown "$f0" "$R" r0 forwarded)" -ge 5 "r0 forwards in XDP"

done_testing
