#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_fwd_kill9.t - kill -9 during `nat add in` and `nat del in` (port
# forwards).  The command kills itself at every step it passes
# (XDPR_CRASH_AT, loader/nat.c); then:
#   - `nat show` lists the forward at most once, as the step says (before
#     the commit: the old state, from it on: the new one);
#   - what is listed is what applies: a new TCP connection from S to the
#     forwarded port reaches C1's server exactly when the forward is listed;
#   - after the next locked command the forward map holds exactly the ports
#     of the listed forwards (none left by a killed add or delete), and every
#     rule slot is a listed rule;
#   - the change can be made again: no "overlaps", no duplicate.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create fk
nat_attach
tcp_echo "$C1" 80 || abort "no TCP server on C1"
FWD=(nat add in r1 proto tcp dport 8080-8089 to 10.0.1.2:80)

# listed: "in r1 tcp 8080-8089" per listed forward (comma separated; empty: none)
listed() {
	local j
	j=$(xdpr -j nat show 2>&1) || { echo "nat show failed: $j"; return 1; }
	jq -r '[.[] | select(.action == "forward") | "in \(.dev) \(.proto) \(.port_min)-\(.port_max)"] | join(",")' \
		<<<"$j" 2>&1
}

# fwd_ports: entries of the router's xdpr_nat_fwd map ("none" if unreadable)
fwd_ports() {
	local prog m
	prog=$(in_ns "$R" bpftool -j net show dev r0 2>/dev/null | jq -r '.[0].xdp[0].id // empty')
	for m in $(bpftool -j prog show id "${prog:-0}" 2>/dev/null | jq -r '.map_ids[]'); do
		if [ "$(bpftool -j map show id "$m" | jq -r .name)" = xdpr_nat_fwd ]; then
			bpftool -j map dump id "$m" | jq length
			return
		fi
	done
	echo none
}

# reach PORT: what C1's server says to a connection from S to 10.0.2.1:PORT ("" when none)
reach() {
	tcp_ask "$S" 10.0.2.1 "$1" 2>/dev/null | head -1
}

killed() {
	local step=$1
	shift
	XDPR_CRASH_AT=$step cli "$R" "$@"
	is "$RC" 137 "$step: xdpr $* is killed there"
}

# consistent STEP WANT(1: listed, 0: not)
consistent() {
	local step=$1 want=$2 got
	got=$(listed)
	if [ "$want" = 1 ]; then
		is "$got" "in r1 tcp 8080-8089" "$step: nat show lists the forward once"
		like "$(reach 8081)" '^10\.0\.4\.2:[0-9]+$' "$step: a new connection to port 8081 is forwarded"
	else
		is "$got" "" "$step: nat show lists no forward"
		is "$(reach 8081)" "" "$step: a new connection to port 8081 is not forwarded"
	fi
	ok "$step: a locked command runs" xdpr nat gc
	is "$(listed)" "$got" "$step: its repair changes nothing that nat show lists"
	is "$(fwd_ports)" "$((want * 10))" "$step: the forward map holds the listed forward's ports only"
	slots_clean "$step"
}

for step in fwd-add:prepared fwd-add:slot fwd-add:mapped fwd-add:flagged fwd-add:commit; do
	killed "$step" "${FWD[@]}"
	case $step in fwd-add:commit) want=1 ;; *) want=0 ;; esac
	consistent "$step" "$want"
	if [ "$want" = 1 ]; then
		ok "$step: nat del in works" xdpr nat del in r1 proto tcp dport 8080-8089
	fi
	ok "$step: nat add in again works" xdpr "${FWD[@]}"
	is "$(listed)" "in r1 tcp 8080-8089" "$step: one forward, listed once"
	like "$(reach 8089)" '^10\.0\.4\.2:[0-9]+$' "$step: and applied (port 8089)"
	ok "$step: nat del in (clean-up)" xdpr nat del in r1 proto tcp dport 8080-8089
	is "$(fwd_ports)" 0 "$step: its ports are gone with it"
done

for step in fwd-del:start fwd-del:commit fwd-del:gc fwd-del:freed; do
	ok "$step: ${FWD[*]}" xdpr "${FWD[@]}"
	killed "$step" nat del in r1 proto tcp dport 8080-8089
	case $step in fwd-del:start) want=1 ;; *) want=0 ;; esac
	consistent "$step" "$want"
	if [ "$want" = 1 ]; then
		ok "$step: nat del in (clean-up)" xdpr nat del in r1 proto tcp dport 8080-8089
	fi
	is "$(fwd_ports)" 0 "$step: no forwarded port left"
done

done_testing
