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
#   the one already detached is attached again, and with "force" the NAT
#   rules of the interfaces stay.
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

# ---- detach, the detach fails
# through_xdp DESC: a ping C -> S is forwarded in XDP both ways: r0 forwards
# the echoes and r1 the replies (redirected to r0: r0 is a redirect target),
# none handed to the kernel for want of one (pass_egress_not_xdpr).
through_xdp() {
	local f0 f1 e1
	f0=$(ctr "$R" r0 forwarded) f1=$(ctr "$R" r1 forwarded) e1=$(ctr "$R" r1 pass_egress_not_xdpr)
	ok "$1: IPv4 ping C -> S" ping4 "$C" 10.0.2.2 5
	num "$(grown "$f0" "$R" r0 forwarded)" -ge 5 "$1: r0 forwards the echoes in XDP"
	num "$(grown "$f1" "$R" r1 forwarded)" -ge 5 "$1: r1 forwards the replies to r0 in XDP"
	is "$(grown "$e1" "$R" r1 pass_egress_not_xdpr)" 0 "$1: none meets r0 as a non-target"
}
before=$(link_json "$R")

XDPR_FAULT=detach cli_fails "detach r0, the detach fails" 1 \
	'Error: cannot detach from "r0": Input/output error' "$R" link detach r0
is "$(link_json "$R")" "$before" "link show unchanged (program, slot, since)"
through_xdp "after the failed detach of r0"

XDPR_FAULT=detach:r1 cli_fails "detach r0 r1, r0 is detached, then r1 fails" 1 \
	'Error: cannot detach from "r1": Input/output error' "$R" link detach r0 r1
is "$(link_json "$R")" "$before" "link show unchanged: r0 is attached again, same program"
is "$(xdp_of r0)/$(xdp_of r1)" "$prog/1/$prog/1" "r0 and r1 run xdpr's program ($prog)"
through_xdp "after the failed detach of r0 r1"

ok "nat add out r1 masquerade" xdpr nat add out r1 masquerade
nat_before=$(xdpr -j nat show)
XDPR_FAULT=detach:r1 cli_fails "detach r0 r1 force (r1 has a NAT rule), r1 fails" 1 \
	'Error: cannot detach from "r1": Input/output error' "$R" link detach r0 r1 force
is "$(xdpr -j nat show)" "$nat_before" "the NAT rule is still there"
is "$(link_json "$R")" "$before" "link show unchanged"

# ---- and detach works when nothing fails
ok "link detach r0 r1 force" xdpr link detach r0 r1 force
is "$(attached)" "" "link show: nothing attached"
is "$(xdp_of r0)/$(xdp_of r1)" "none/none" "no XDP program left on r0 and r1"
ok "IPv4 ping C -> S (kernel forwarding)" ping4 "$C" 10.0.2.2 3

done_testing
