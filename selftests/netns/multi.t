#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# multi.t - two routers at once, one per network namespace, with the same
# interface names and (for r0) the same ifindex: each forwards in its fast
# path with one program for all its interfaces (a later attach reuses it),
# each one's stats count only its own traffic, detaching one leaves the
# other alone.  Router A's r1 has ifindex 100 (above 64: no small-array or
# bitmask assumption on ifindexes).  Every CLI call is its own `ip netns exec`.
. "$(dirname "$0")/lib.sh"

topo_create a 100
CA=$C RA=$R SA=$S
topo_create b
CB=$C RB=$R SB=$S

is "$(ip -j -n "$RA" link show r1 | jq -r '.[0].ifindex')" 100 "router A: r1 has ifindex 100"
ok "router A: link attach r0 r1" xdpr_ns "$RA" link attach r0 r1 ||
	abort "cannot attach: nothing else can be tested"
ok "router B: link attach r0 r1" xdpr_ns "$RB" link attach r0 r1 ||
	abort "cannot attach: nothing else can be tested"
la=$(link_json "$RA")
lb=$(link_json "$RB")
is "$(jq -r 'map(.dev + "@" + (.ifindex | tostring)) | sort | join(",")' <<<"$la")" "r0@2,r1@100" \
	"router A: link show has r0 and r1 (ifindex 100)"
is "$(jq -r 'map(.dev) | sort | join(",")' <<<"$lb")" "r0,r1" "router B: link show has r0 and r1"
is "$(jq -r --argjson b "$lb" '[.[].prog_id] - [$b[].prog_id] | length' <<<"$la")" 2 \
	"router A and B run programs of their own"
is "$(jq -r '[.[].prog_id] | unique | length' <<<"$la")" 1 \
	"router A: r0 and r1, attached in one call, run one program (one prog_id)"
is "$(jq -r '[.[].prog_id] | unique | length' <<<"$lb")" 1 "router B: r0 and r1 run one program"

# ---- a third interface attached by a later call gets that same program
ip -n "$RA" link add r2 type veth peer name r2p || bail_out "cannot create veth r2/r2p"
ip -n "$RA" link set r2 up
ip -n "$RA" link set r2p up
sleep 1.1 # "since" has whole seconds
ok "router A: link attach r2 (a later call)" xdpr_ns "$RA" link attach r2
is "$(link_json "$RA" | jq -r 'map({(.dev): .since}) | add | .r2 > .r0')" true \
	"router A: r2's since is its own attach time, later than r0's (not the program's load time)"
is "$(link_json "$RA" | jq -r 'map(.dev + "=" + (.prog_id | tostring)) | sort | join(",")')" \
	"$(jq -r '.[0].prog_id as $p | ["r0", "r1", "r2"] | map(. + "=" + ($p | tostring)) | join(",")' \
		<<<"$la")" "router A: r2 runs the program of r0 and r1 (same prog_id)"
ip -n "$RA" link del r2

# ---- A forwards through ifindex 100 in the fast path
f0=$(ctr "$RA" r0 forwarded)
f1=$(ctr "$RA" r1 forwarded)
ok "router A: IPv4 ping C -> S" ping4 "$CA" 10.0.2.2 5
ok "router A: IPv6 ping C -> S" ping6 "$CA" 2001:db8:2::2 5
num "$(grown "$f0" "$RA" r0 forwarded)" -ge 10 "router A: r0 forwarded grew by >= 10 (to ifindex 100)"
num "$(grown "$f1" "$RA" r1 forwarded)" -ge 10 "router A: r1 (ifindex 100) forwarded grew by >= 10"
make_file "$T_TMP/a" 2
f0=$(ctr "$RA" r0 forwarded)
ok "router A: TCP 2 MB intact" tcp_send "$CA" "$SA" 10.0.2.2 5020 "$T_TMP/a"
num "$(grown "$f0" "$RA" r0 forwarded)" -ge 1000 "router A: r0 forwarded grew by >= 1000"

# ---- traffic through B only: A's counters stand still, and the other way round
snap() { xdpr_ns "$1" -j stats | jq -c '[.interfaces[] | {dev, f: .reasons.forwarded}] | sort_by(.dev)'; }
a0=$(snap "$RA")
like "$a0" '"dev":"r0".*"dev":"r1"' "router A: -j stats reads r0 and r1"
b0=$(ctr "$RB" r0 forwarded)
ok "router B: IPv4 ping C -> S (20 echoes)" ping4 "$CB" 10.0.2.2 20
make_file "$T_TMP/b" 1
ok "router B: TCP 1 MB intact" tcp_send "$CB" "$SB" 10.0.2.2 5021 "$T_TMP/b"
num "$(grown "$b0" "$RB" r0 forwarded)" -ge 500 "router B: r0 forwarded grew by >= 500"
is "$(snap "$RA")" "$a0" "router A's forwarded counters did not see B's traffic"

b1=$(snap "$RB")
like "$b1" '"dev":"r0".*"dev":"r1"' "router B: -j stats reads r0 and r1"
ok "router A: IPv4 ping C -> S (20 echoes)" ping4 "$CA" 10.0.2.2 20
is "$(snap "$RB")" "$b1" "router B's forwarded counters did not see A's traffic"

# ---- detaching A leaves B attached and forwarding
ok "router A: link detach all" xdpr_ns "$RA" link detach all
is "$(link_json "$RA")" "[]" "router A: link show empty"
is "$(link_json "$RB" | jq -c 'map(del(.since))')" "$(jq -c 'map(del(.since))' <<<"$lb")" \
	"router B: link show unchanged"
b0=$(ctr "$RB" r0 forwarded)
ok "router B: IPv4 ping C -> S" ping4 "$CB" 10.0.2.2 5
num "$(grown "$b0" "$RB" r0 forwarded)" -ge 5 "router B: still forwarding in its fast path"
ok "router A: IPv4 ping C -> S (kernel forwarding)" ping4 "$CA" 10.0.2.2 3
cli_fails "router A: stats with nothing attached" 1 \
	'Error: xdpr is not attached to any interface in this network namespace' "$RA" stats

done_testing
