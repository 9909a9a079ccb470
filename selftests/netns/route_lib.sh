# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# route_lib.sh - topology and helpers for the route map end-to-end tests
# (selftests/netns/route_*.t).  Sources lib.sh (TAP, clean-up, CLI wrappers).
#
#                                   r1 10.0.2.1/24  ----  s1 10.0.2.2/24  S1
#   C  c0 10.0.1.2/24 ---- r0 10.0.1.1  R              2001:db8:2::1/64 / ::2
#      2001:db8:1::2/64      2001:db8:1::1
#                                   r2 10.0.3.1/24  ----  s2 10.0.3.2/24  S2
#                                      2001:db8:3::1/64 / ::2
#
# R forwards; xdpr runs there, attached to r0 r1 r2 by rt_attach.  S1 and S2
# route everything back through R.  Their lo carries the addresses the route
# map sends traffic to (rt_serve); R's kernel has no route to those unless a
# test adds one, so a packet that reaches them went through the route map.
# c0, s1, s2 have GRO on (redirected frames need it) and tx checksum offload
# off (NOTES.md); ICMP rate limits are off everywhere.  Namespace names carry
# $$ and a tag.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RT_PY=/usr/bin/python3
[ -x "$RT_PY" ] || RT_PY=$(command -v python3)

# rt_topo_create TAG: make C R S1 S2 (names in those variables) and wire them.
rt_topo_create() {
	local tag=$1 ns i
	C="xdpr-$T_ID-$tag-c"
	R="xdpr-$T_ID-$tag-r"
	S1="xdpr-$T_ID-$tag-s1"
	S2="xdpr-$T_ID-$tag-s2"
	for ns in "$C" "$R" "$S1" "$S2"; do
		ip netns add "$ns" || bail_out "cannot create namespace $ns"
		T_NS_MADE+=("$ns")
		ip -n "$ns" link set lo up
		in_ns "$ns" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_msgs_per_sec=100000 \
			net.ipv6.icmp.ratelimit=0 \
			net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0 >/dev/null
	done
	ip -n "$R" link add r0 type veth peer name c0 netns "$C" || bail_out "cannot create veth r0/c0"
	ip -n "$R" link add r1 type veth peer name s1 netns "$S1" || bail_out "cannot create veth r1/s1"
	ip -n "$R" link add r2 type veth peer name s2 netns "$S2" || bail_out "cannot create veth r2/s2"

	ip -n "$C" addr add 10.0.1.2/24 dev c0
	ip -n "$C" addr add 2001:db8:1::2/64 dev c0 nodad
	ip -n "$R" addr add 10.0.1.1/24 dev r0
	ip -n "$R" addr add 2001:db8:1::1/64 dev r0 nodad
	ip -n "$R" addr add 10.0.2.1/24 dev r1
	ip -n "$R" addr add 2001:db8:2::1/64 dev r1 nodad
	ip -n "$R" addr add 10.0.3.1/24 dev r2
	ip -n "$R" addr add 2001:db8:3::1/64 dev r2 nodad
	ip -n "$S1" addr add 10.0.2.2/24 dev s1
	ip -n "$S1" addr add 2001:db8:2::2/64 dev s1 nodad
	ip -n "$S2" addr add 10.0.3.2/24 dev s2
	ip -n "$S2" addr add 2001:db8:3::2/64 dev s2 nodad
	in_ns "$R" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 >/dev/null

	in_ns "$C" ethtool -K c0 gro on tx off >/dev/null 2>&1 || bail_out "ethtool on c0 failed"
	in_ns "$S1" ethtool -K s1 gro on tx off >/dev/null 2>&1 || bail_out "ethtool on s1 failed"
	in_ns "$S2" ethtool -K s2 gro on tx off >/dev/null 2>&1 || bail_out "ethtool on s2 failed"
	for i in r0 r1 r2; do
		in_ns "$R" ethtool -K "$i" tx off >/dev/null 2>&1
	done

	ip -n "$C" link set c0 up
	ip -n "$S1" link set s1 up
	ip -n "$S2" link set s2 up
	for i in r0 r1 r2; do
		ip -n "$R" link set "$i" up
	done
	ip -n "$C" route add default via 10.0.1.1
	ip -n "$C" -6 route add default via 2001:db8:1::1
	ip -n "$S1" route add default via 10.0.2.1
	ip -n "$S1" -6 route add default via 2001:db8:2::1
	ip -n "$S2" route add default via 10.0.3.1
	ip -n "$S2" -6 route add default via 2001:db8:3::1

	# Every neighbour on the way resolved, kernel forwarding works (no xdpr yet).
	for ((i = 0; i < 10; i++)); do
		T_TIMEOUT=5 in_ns "$C" ping -c1 -W1 -q 10.0.2.2 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$C" ping -c1 -W1 -q 10.0.3.2 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$C" ping -6 -c1 -W1 -q 2001:db8:2::2 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$C" ping -6 -c1 -W1 -q 2001:db8:3::2 >/dev/null 2>&1 &&
			return 0
		sleep 0.5
	done
	bail_out "topology $tag: no connectivity C->S1/S2 without xdpr"
}

# fails CMD...: CMD must fail (for ok).
fails() { ! "$@"; }

# rt_attach: xdpr on r0 r1 r2 (native).  Aborts the file when it fails.
rt_attach() {
	ok "link attach r0 r1 r2" xdpr link attach r0 r1 r2 ||
		abort "cannot attach: nothing else can be tested"
}

# rt_serve NS ADDR/LEN...: addresses on NS's lo (the destinations of the tests).
rt_serve() {
	local ns=$1 a
	shift
	for a in "$@"; do
		if [[ "$a" == *:* ]]; then
			ip -n "$ns" -6 addr add "$a" dev lo nodad || bail_out "cannot add $a in $ns"
		else
			ip -n "$ns" addr add "$a" dev lo || bail_out "cannot add $a in $ns"
		fi
	done
}

# mac NS DEV: the MAC address of DEV in NS.
mac() {
	ip -n "$1" -j link show "$2" | jq -r '.[0].address'
}

# lladdr NS DEV: DEV's IPv6 link-local address.
lladdr() {
	ip -n "$1" -j -6 addr show dev "$2" scope link | jq -r '[.[0].addr_info[] | select(.scope == "link") | .local][0] // empty'
}

# rt_json: `xdpr -j route show` of R, normalised (sorted keys, compact);
# "unreadable (TIME): ..." when it fails (json_of: never equal to another read).
rt_json() {
	json_of . xdpr -j route show
}

# rt_ctr PREFIX [packets|bytes]: one route's counter in R ("none" when absent).
rt_ctr() {
	local v
	v=$(xdpr -j route show "$1" 2>/dev/null |
		jq -r --arg p "$1" --arg f "${2:-packets}" '.[] | select(.prefix == $p) | .[$f]' 2>/dev/null)
	echo "${v:-none}"
}

# rt_grown BEFORE PREFIX [packets|bytes]: growth of a route counter since BEFORE.
rt_grown() {
	local now
	now=$(rt_ctr "$2" "${3:-packets}")
	if [[ "$1" =~ ^[0-9]+$ && "$now" =~ ^[0-9]+$ ]]; then
		echo $((now - $1))
	else
		echo none
	fi
}

# wait_until SECS CMD...: poll CMD every 0.2 s until it succeeds (status 0) or SECS pass.
wait_until() {
	local secs=$1 end
	shift
	end=$((SECONDS + secs))
	while ! "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.2
	done
}

# cap_start NS DEV FILE FILTER...: tcpdump in the background, writing FILE
# (pid in $CAP_PID); returns once it listens.  Stop with cap_stop.
# --immediate-mode: without it the last packets can sit in a capture ring
# block that tcpdump never reads when it is stopped.  In that mode the ring
# holds buffer/snaplen frames: -s 1600 -B 32768 (as nat_lib.sh's captures).
declare -A CAP_FILE
cap_start() {
	local ns=$1 dev=$2 file=$3
	shift 3
	rm -f "$file" "$file.err" "$file.bad"
	timeout 60 ip netns exec "$ns" tcpdump -Z root -i "$dev" -n -U --immediate-mode -s 1600 -B 32768 \
		-w "$file" "$@" 2>"$file.err" &
	# shellcheck disable=SC2034 # read by the tests
	CAP_PID=$!
	CAP_FILE[$CAP_PID]=$file
	wait_file_line "$file.err" 'listening on' || {
		diag_file "$file.err"
		return 1
	}
}

# cap_stop PID: stop a capture and wait for it (its buffered packets are
# written: -U).  A capture whose tcpdump did not exit cleanly (it died, or
# its time limit ended it) or lost packets ("dropped by kernel") is marked
# incomplete (FILE.bad): cap_read then refuses it, so no count over it
# passes ("nothing arrived" least of all).  Status 1 then.
cap_stop() {
	local file=${CAP_FILE[$1]} rc why=
	sleep 0.3
	kill -INT "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	rc=$?
	unset "CAP_FILE[$1]"
	[ -n "$file" ] || return 1
	if [ "$rc" -ne 0 ]; then
		why="tcpdump exited $rc: $(tail -n 1 "$file.err" 2>/dev/null)"
	elif ! grep -q '^0 packets dropped by kernel' "$file.err" 2>/dev/null; then
		why="incomplete: $(grep 'dropped by kernel' "$file.err" 2>/dev/null || echo "tcpdump printed no statistics")"
	fi
	[ -z "$why" ] && return 0
	echo "$why" >"$file.bad"
	diag "capture $file: $why"
	return 1
}

# cap_read FILE [tcpdump options]: the capture as text (-n -e -v by default).
# A capture that is missing, empty or unreadable (it did not start), or that
# cap_stop found incomplete, gives one line "capture unreadable: WHY" and
# status 1: the tests count lines with grep, so it counts as a frame no
# pattern allows and never as "no frames".
cap_read() {
	local f=$1 err
	shift
	[ $# -gt 0 ] || set -- -e -v
	if [ -e "$f.bad" ]; then
		err="$f: $(cat "$f.bad")"
	elif pcap_read "$f" "$@" 2>"$f.why"; then
		return 0
	else
		err=$(cat "$f.why")
	fi
	echo "capture unreadable: $err"
	echo "# $err" >&2
	return 1
}

# udp_flows NS DST PORT FLOWS PER_FLOW SPORT0: FLOWS UDP flows from NS to
# DST:PORT, source ports SPORT0.., PER_FLOW datagrams each (round robin over
# the flows), payload "flow N".
udp_flows() {
	T_TIMEOUT=20 in_ns "$1" "$RT_PY" - "$2" "$3" "$4" "$5" "$6" <<'EOF'
import socket, sys, time
dst, port, flows, per, s0 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
fam = socket.AF_INET6 if ':' in dst else socket.AF_INET
socks = []
for i in range(flows):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('::' if fam == socket.AF_INET6 else '0.0.0.0', s0 + i))
    socks.append(s)
for r in range(per):
    for i, s in enumerate(socks):
        s.sendto(b'flow %d' % i, (dst, port))
        time.sleep(0.001)
EOF
}

# tcp_send_paced SRC_NS DST_NS DST_ADDR PORT FILE SECS: like tcp_send (lib.sh),
# but the client spreads FILE over about SECS seconds, so that the test can
# change things while the connection runs.  0 when both sides exit 0 and the
# received bytes have FILE's SHA-256.
tcp_send_paced() {
	local sns=$1 dns=$2 addr=$3 port=$4 file=$5 secs=$6 spid rc_c rc_s tcp=TCP4
	[[ "$addr" == *:* ]] && tcp=TCP6
	rm -f "$file.recv"
	timeout $((secs + 40)) ip netns exec "$dns" socat -u "$tcp-LISTEN:$port,reuseaddr" \
		"CREATE:$file.recv" 2>"$file.server.err" &
	spid=$!
	if ! wait_listen "$dns" "$port"; then
		diag "server on port $port did not start"
		kill "$spid" 2>/dev/null
		return 1
	fi
	T_TIMEOUT=$((secs + 30)) in_ns "$sns" "$RT_PY" - "$addr" "$port" "$file" "$secs" \
		2>"$file.client.err" <<'PY'
import socket, sys, time
addr, port, path, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
data = open(path, 'rb').read()
chunk = 16384
steps = max(1, len(data) // chunk)
fam = socket.AF_INET6 if ':' in addr else socket.AF_INET
s = socket.create_connection((addr.strip('[]'), port), timeout=20)
t0 = time.time()
for i in range(0, len(data), chunk):
    s.sendall(data[i:i + chunk])
    late = t0 + secs * (i // chunk + 1) / steps - time.time()
    if late > 0:
        time.sleep(late)
s.shutdown(socket.SHUT_WR)
s.close()
PY
	rc_c=$?
	wait "$spid"
	rc_s=$?
	if [ "$rc_c" -ne 0 ] || [ "$rc_s" -ne 0 ]; then
		diag "paced client exit $rc_c, server exit $rc_s"
		diag_file "$file.client.err"
		diag_file "$file.server.err"
		return 1
	fi
	same_sha "$file" "$file.recv"
}
