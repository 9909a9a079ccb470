#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# link_gone.t - an attached interface deleted with `ip link del` leaves no
# settings behind: the kernel takes its program and its redirect entry,
# and the next command that changes anything (here `nat timeout`, then
# `link attach`) removes its xdpr_ifaces entry (a device created later
# with that ifindex must inherit nothing).  Read-only commands write
# nothing.  The router keeps forwarding on the interfaces that remain.
# Issue 12: `link show` lists a deleted interface as gone (with its slot and
# counters) until it is attached again (the same slot: its counters go on)
# or `link detach NAME` forgets it.
. "$(dirname "$0")/lib.sh"
need bpftool

topo_create gone

# map_keys NS NAME: the keys of one of the router's maps (u32, sorted,
# comma-separated), found through the program on its first interface.
map_keys() {
	local prog m
	prog=$(link_json "$1" | jq -r '.[0].prog_id // empty')
	[ -n "$prog" ] || { echo "no-program"; return; }
	for m in $(bpftool -j prog show id "$prog" | jq -r '.map_ids[]'); do
		[ "$(bpftool -j map show id "$m" | jq -r .name)" == "$2" ] || continue
		bpftool -j map dump id "$m" |
			jq -r '[.[].key | map(ltrimstr("0x")) | reverse | join("")] | map(ascii_downcase) | .[]' |
			while read -r hex; do echo $((16#$hex)); done | sort -n | paste -sd,
		return
	done
	echo "no-map"
}

for d in r2 r3; do
	ip -n "$R" link add "$d" type veth peer name "${d}p" || bail_out "cannot create veth $d"
	ip -n "$R" link set "$d" up
	ip -n "$R" link set "${d}p" up
done
idx() { ip -j -n "$R" link show "$1" | jq -r '.[0].ifindex'; }
keys() { printf '%s\n' "$@" | sort -n | paste -sd,; }
i0=$(idx r0) i1=$(idx r1) i2=$(idx r2) i3=$(idx r3)

ok "link attach r0 r2 r3" xdpr link attach r0 r2 r3 || abort "cannot attach"
is "$(map_keys "$R" xdpr_ifaces)" "$(keys "$i0" "$i2" "$i3")" "xdpr_ifaces holds r0, r2, r3"
is "$(map_keys "$R" xdpr_tx_ports)" "$(keys "$i0" "$i2" "$i3")" "xdpr_tx_ports holds r0, r2, r3"

ok "ip link del r2 (while attached)" ip -n "$R" link del r2
is "$(link_json "$R" | jq -r 'map(select(.state == "attached") | .dev) | sort | join(",")')" "r0,r3" "link show: r0 and r3 attached"
is "$(link_json "$R" | jq -r 'map(select(.state == "gone") | "\(.dev) \(.ifindex) \(.recreated)") | join(",")')" "r2 $i2 false" \
	"link show: r2 listed as gone (its old ifindex, not re-created)"
slot2=$(link_json "$R" | jq -r '.[] | select(.dev == "r2") | .slot')
like "$(xdpr link show)" 'r2 .* gone \(deleted: once it is back, "xdpr link attach r2" continues its counters; "xdpr link detach r2" forgets it\)' \
	"link show (text) says r2 is gone and what to do"
like "$(xdpr -j stats | jq -r '.interfaces[] | select(.dev == "r2") | .state')" '^gone$' "stats keeps r2's counters (state gone)"
is "$(xdpr save)" "link attach r0 r3 r2" "save keeps the gone r2 by name (it is expected back)"
is "$(map_keys "$R" xdpr_tx_ports)" "$(keys "$i0" "$i3")" "the kernel removed r2's redirect entry"
ok "stats (read-only) works" xdpr stats
is "$(map_keys "$R" xdpr_ifaces)" "$(keys "$i0" "$i2" "$i3")" \
	"read-only commands write nothing (r2's entry is still there)"
ok "nat timeout udp 60 (a change: takes the lock)" xdpr nat timeout udp 60
is "$(map_keys "$R" xdpr_ifaces)" "$(keys "$i0" "$i3")" "after nat timeout: r2's entry is gone"

ok "ip link del r3 (while attached)" ip -n "$R" link del r3
ok "link attach r1" xdpr link attach r1
is "$(map_keys "$R" xdpr_ifaces)" "$(keys "$i0" "$i1")" "after link attach r1: r3's entry is gone"
is "$(map_keys "$R" xdpr_tx_ports)" "$(keys "$i0" "$i1")" "xdpr_tx_ports: r0 and r1"

is "$(link_json "$R" | jq -r 'map(select(.state == "gone") | .dev) | sort | join(",")')" "r2,r3" "r2 and r3 are listed as gone"
ip -n "$R" link add r2 type veth peer name r2p && ip -n "$R" link set r2 up && ip -n "$R" link set r2p up
is "$(link_json "$R" | jq -r '.[] | select(.dev == "r2") | "\(.state) \(.recreated)"')" "gone true" "r2 re-created: gone, re-created"
ok "link attach r2 (re-created)" xdpr link attach r2
is "$(link_json "$R" | jq -r '.[] | select(.dev == "r2") | "\(.state) \(.slot)"')" "attached $slot2" "r2 attached again in its old slot $slot2 (its counters go on)"
ok "link detach r3 (gone): forgets it" xdpr link detach r3
is "$(link_json "$R" | jq -r 'map(.dev) | sort | join(",")')" "r0,r1,r2" "r3 is no longer listed"

f0=$(ctr "$R" r0 forwarded)
ok "IPv4 ping C -> S" ping4 "$C" 10.0.2.2 5
num "$(grown "$f0" "$R" r0 forwarded)" -ge 5 "r0 still forwards in the fast path"

done_testing
