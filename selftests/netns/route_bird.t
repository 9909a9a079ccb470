#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# route_bird.t - routes from a real routing daemon, with no xdpr command.
# BIRD 2 runs in the router R and in its neighbour N (= S1 of route_lib.sh),
# OSPF between them on r1/s1 (point-to-point, 1 s hellos).  N announces
# 203.0.113.0/24, the network of a veth n9 inside N (no dummy driver here);
# R's BIRD installs it in R's kernel FIB.  Then:
#   - traffic from C to 203.0.113.1 is forwarded in the fast path (forwarded
#     grows, TTL 63 at N) while xdpr's route map stays empty;
#   - N withdraws the prefix (n9 down): the route leaves R's FIB and traffic
#     stops (ping fails, pass_not_fwded grows);
#   - N announces it again: fast path again.
# Each BIRD has its own config, control socket and pid file in the test's
# temporary folder, runs in the foreground under `timeout`, and is stopped
# with `birdc down` (or killed) on exit.  Waits are bounded (30 s for OSPF).
. "$(dirname "$0")/route_lib.sh"
need tcpdump

if ! command -v bird >/dev/null || ! command -v birdc >/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	{
		timeout 300 apt-get install -y bird2 ||
			{ timeout 300 apt-get update && timeout 300 apt-get install -y bird2; }
	} >"$T_TMP/apt.log" 2>&1
	if ! command -v bird >/dev/null || ! command -v birdc >/dev/null; then
		diag_file "$T_TMP/apt.log"
		bail_out "bird2 is not installed and cannot be installed; the set-up installs it (scripts/packages.txt)"
	fi
fi

CONVERGE=30
BIRDS=()

bird_start() { # NS NAME CONFIG_TEXT: BIRD in NS, files $T_TMP/NAME.{conf,ctl,pid,log}
	local ns=$1 name=$2
	printf '%s\n' "$3" >"$T_TMP/$name.conf"
	timeout 120 ip netns exec "$ns" bird -f -c "$T_TMP/$name.conf" -s "$T_TMP/$name.ctl" \
		-P "$T_TMP/$name.pid" >"$T_TMP/$name.log" 2>&1 &
	BIRDS+=("$name")
	wait_until 5 test -S "$T_TMP/$name.ctl"
}

birdc_() { # NAME ARGS...: birdc on that BIRD's socket
	local name=$1
	shift
	timeout 10 birdc -s "$T_TMP/$name.ctl" "$@"
}

bird_stop_all() {
	local name pid
	for name in "${BIRDS[@]}"; do
		birdc_ "$name" down >/dev/null 2>&1
	done
	for name in "${BIRDS[@]}"; do
		pid=$(cat "$T_TMP/$name.pid" 2>/dev/null)
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
}
trap 'bird_stop_all; t_cleanup' EXIT

rt_topo_create bd
N=$S1
# N's announced network: a veth pair kept inside N
ip -n "$N" link add n9 type veth peer name n9p || bail_out "cannot create veth n9"
ip -n "$N" addr add 203.0.113.1/24 dev n9
ip -n "$N" link set n9p up
ip -n "$N" link set n9 up
rt_attach

ok "BIRD starts in R" bird_start "$R" r '
router id 10.0.2.1;
log stderr all;
protocol device { scan time 1; }
protocol kernel {
	scan time 1;
	ipv4 { import none; export filter { if net ~ [ 203.0.113.0/24+ ] then accept; reject; }; };
}
protocol ospf v2 ospf1 {
	ipv4 { import all; export none; };
	area 0 { interface "r1" { type ptp; hello 1; dead count 3; }; };
}' || abort "BIRD does not start: $(cat "$T_TMP/r.log")"
ok "BIRD starts in N" bird_start "$N" n '
router id 10.0.2.2;
log stderr all;
protocol device { scan time 1; }
protocol ospf v2 ospf1 {
	ipv4 { import none; export none; };
	area 0 {
		interface "s1" { type ptp; hello 1; dead count 3; };
		interface "n9" { stub yes; };
	};
}' || abort "BIRD does not start: $(cat "$T_TMP/n.log")"

# fib_has: R's kernel FIB routes 203.0.113.0/24 through N (installed by BIRD)
fib_has() { ip -n "$R" route show 203.0.113.0/24 | grep -q 'via 10.0.2.2 dev r1 proto bird'; }
fib_lacks() { [ -z "$(ip -n "$R" route show 203.0.113.0/24)" ]; }

if ! ok "OSPF converges: R's kernel FIB gets 203.0.113.0/24 via 10.0.2.2 from BIRD (<= ${CONVERGE} s)" \
	wait_until "$CONVERGE" fib_has; then
	diag "$(birdc_ r show ospf neighbors 2>&1)"
	diag "$(birdc_ r show route 2>&1)"
	diag_file "$T_TMP/r.log"
	abort "no route from OSPF"
fi
diag "R: $(ip -n "$R" route show 203.0.113.0/24)"

# ---- announced: the fast path follows the kernel FIB
is "$(rt_json)" "[]" "xdpr's route map is empty (no xdpr route command)"
f0=$(ctr "$R" r0 forwarded)
if cap_start "$N" s1 "$T_TMP/bird.pcap" 'icmp and icmp[icmptype] == icmp-echo'; then
	ok "ping 203.0.113.1 (announced by N) from C (10 echoes)" ping4 "$C" 203.0.113.1 10
	cap_stop "$CAP_PID"
	is "$(cap_read "$T_TMP/bird.pcap" | grep -Ec "^[0-9:.]+ $(mac "$R" r1) > $(mac "$N" s1), .*ttl 63,")" 10 \
		"N saw the 10 echo requests from r1's MAC with TTL 63"
else
	fail "tcpdump did not start: the 2 checks of the capture were not made"
fi
num "$(grown "$f0" "$R" r0 forwarded)" -ge 10 "r0 forwarded grew by >= 10 (fast path through BIRD's route)"

# ---- withdrawn
ok "N withdraws 203.0.113.0/24 (n9 down)" ip -n "$N" link set n9 down
if ok "the route leaves R's kernel FIB (<= ${CONVERGE} s)" wait_until "$CONVERGE" fib_lacks; then
	f0=$(ctr "$R" r0 forwarded)
	n0=$(ctr "$R" r0 pass_not_fwded)
	ok "ping 203.0.113.1 fails now (5 echoes)" fails ping4 "$C" 203.0.113.1 5
	is "$(grown "$f0" "$R" r0 forwarded)" 0 "r0 forwarded did not grow"
	num "$(grown "$n0" "$R" r0 pass_not_fwded)" -ge 5 "r0 pass_not_fwded grew by >= 5 (no route: to the kernel)"
else
	diag "R: $(ip -n "$R" route show 203.0.113.0/24)"
	skip 4 "the route was not withdrawn"
fi

# ---- announced again
ok "N announces 203.0.113.0/24 again (n9 up)" ip -n "$N" link set n9 up
if ok "the route is back in R's kernel FIB (<= ${CONVERGE} s)" wait_until "$CONVERGE" fib_has; then
	f0=$(ctr "$R" r0 forwarded)
	ok "ping 203.0.113.1 works again (5 echoes)" ping4 "$C" 203.0.113.1 5
	num "$(grown "$f0" "$R" r0 forwarded)" -ge 5 "r0 forwarded grows again (fast path)"
else
	skip 2 "the route did not come back"
fi
is "$(rt_json)" "[]" "xdpr's route map is still empty"

ok "birdc down stops R's BIRD" birdc_ r down
ok "birdc down stops N's BIRD" birdc_ n down

done_testing
