#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# detach.t - detaching and re-attaching under load: a TCP stream that runs
# through `link detach r0` and `link attach r0` completes intact without a
# reset; the fast path picks the traffic up again after re-attach; `link
# detach all` leaves the kernel forwarding on its own.
. "$(dirname "$0")/lib.sh"

topo_create dt
ok "link attach r0 r1" xdpr link attach r0 r1 || abort "cannot attach: nothing else can be tested"

# ~6.5 MB sent in 64 KiB pieces every 0.1 s: a ~11 s stream at ~600 KB/s.
stream_start "$C" "$S" 10.0.2.2 5010 100
client=$STREAM_CLIENT data=$STREAM_DATA

sleep 1
f0=$(ctr "$R" r0 forwarded)
sleep 1
num "$(grown "$f0" "$R" r0 forwarded)" -ge 100 "stream runs through the fast path (r0 forwarded grows)"

ok "link detach r0 during the stream" xdpr link detach r0
is "$(link_json "$R" | jq -r 'map(.dev) | join(",")')" "r1" "link show: only r1 left"
is "$(ip -j -n "$R" link show r0 | jq -r '.[0].xdp.prog.id // "none"')" "none" \
	"r0 has no XDP program"
e0=$(ctr "$R" r1 pass_egress_not_xdpr)
size0=$(stat -c %s "$data.recv" 2>/dev/null || echo 0)
sleep 2
size1=$(stat -c %s "$data.recv" 2>/dev/null || echo 0)
num "$size1" -gt "$size0" "data keeps arriving while r0 is detached (kernel forwarding)"
num "$(grown "$e0" "$R" r1 pass_egress_not_xdpr)" -ge 10 \
	"r1 hands frames for detached r0 to the kernel (pass_egress_not_xdpr grew)"

ok "link attach r0 again during the stream" xdpr link attach r0
is "$(link_json "$R" | jq -r 'map(.dev) | sort | join(",")')" "r0,r1" "link show: r0 and r1"
sleep 0.5
f0=$(ctr "$R" r0 forwarded)
f1=$(ctr "$R" r1 forwarded)
sleep 2
num "$(grown "$f0" "$R" r0 forwarded)" -ge 100 "after re-attach r0 forwarded grows again"
num "$(grown "$f1" "$R" r1 forwarded)" -ge 10 "after re-attach r1 forwards to r0 again"

stream_check
is "$(snmp "$C" Tcp EstabResets)/$(snmp "$S" Tcp EstabResets)" "0/0" \
	"no connection reset on either side (Tcp EstabResets)"
is "$(snmp "$S" Tcp InCsumErrors)" 0 "server: TcpInCsumErrors is 0"

ok "link detach all" xdpr link detach all
is "$(xdpr -j link show 2>&1 | jq -c .)" "[]" "link show: empty JSON array"
is "$(ip -j -n "$R" link show | jq -r '[.[] | select(.xdp)] | length')" 0 \
	"no XDP program left in the router namespace"
ok "IPv4 ping C -> S still works (kernel forwarding)" ping4 "$C" 10.0.2.2 3
ok "IPv6 ping C -> S still works (kernel forwarding)" ping6 "$C" 2001:db8:2::2 3

done_testing
