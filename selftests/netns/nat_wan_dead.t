#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_wan_dead.t - masquerade through a next hop that never answers ARP.
# R reaches 10.0.4.0/24 via H (10.0.2.2); H's address is removed, so R's
# kernel cannot resolve its next hop.  C1 connects to 10.0.4.2:80 through
# the masquerade: as through a kernel router, connect() must fail with "No
# route to host" within seconds (the kernel's ARP attempts take 3 s; its
# error about the translated SYN would reach only the router itself).
# xdprd marks the next hop that failed; the fast path answers the next SYN
# with ICMP host unreachable from 10.0.1.1 quoting C1's own packet
# (tx_icmp_host_unreach), seen on c1.  Once H answers again, the mark goes
# and connections go through.
. "$(dirname "$0")/nat_lib.sh"
need python3 clang
need_xdprd

nat_topo_create wd
# an answer sent back from XDP (XDP_TX) reaches a veth peer at once only if
# the peer runs an XDP program: otherwise it waits on c1 for the next frame
if ! obj=$(xdp_pass_obj) || ! ip -n "$C1" link set dev c1 xdpdrv obj "$obj" sec xdp; then
	bail_out "cannot attach a pass-all XDP program to c1"
fi
CONF=$T_TMP/xdpr.conf
cat >"$CONF" <<'EOF'
link attach r0 r1 r2
nat add out r1 masquerade
EOF
ip netns exec "$R" "$XDPRD" --foreground --config "$CONF" --metrics none --gc 1 >>"$T_TMP/xdprd.log" 2>&1 &
DAEMON_PID=$!
ok "xdprd applied its file" xdprd_started "$T_TMP/xdprd.log" || diag_file "$T_TMP/xdprd.log"
tcp_echo "$S" 80 || diag "no TCP server on S"
like "$(tcp_ask "$C1" 10.0.4.2 80)" '^10\.0\.2\.1:' "C1 connects to 10.0.4.2:80 through the masquerade"

# H goes deaf: no address on h0, the router forgets its MAC
ip -n "$H" addr del 10.0.2.2/24 dev h0
ip -n "$R" neigh flush dev r1
cap_start wd "$C1" c1 icmp || abort "capture on c1 did not start"
tx0=$(ctr "$R" r0 tx_icmp_host_unreach)

cat >"$T_TMP/conn.py" <<'EOF'
import errno, os, socket, sys, time
s = socket.socket()
s.settimeout(float(sys.argv[3]))
s.bind(("0.0.0.0", int(sys.argv[4])))
t0 = time.monotonic()
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    r = "connected"
except socket.timeout:
    r = "timeout"
except OSError as e:
    r = errno.errorcode.get(e.errno, str(e.errno))
print(r, int((time.monotonic() - t0) * 1000))
EOF
read -r res ms < <(T_TIMEOUT=25 in_ns "$C1" "$NAT_PY" "$T_TMP/conn.py" 10.0.4.2 80 20 40800)
is "$res" EHOSTUNREACH "connect() through the dead next hop fails: No route to host (EHOSTUNREACH)"
num "${ms:-99999}" -lt 8000 "... after ${ms:-?} ms (< 8 s)"
read -r res2 ms2 < <(T_TIMEOUT=25 in_ns "$C1" "$NAT_PY" "$T_TMP/conn.py" 10.0.4.2 80 20 40801)
is "$res2" EHOSTUNREACH "a second connect() while the mark holds fails too"
num "${ms2:-99999}" -lt 1000 "... at once (${ms2:-?} ms)"
num "$(grown "$tx0" "$R" r0 tx_icmp_host_unreach)" -ge 2 "r0 tx_icmp_host_unreach grew"
cap_stop wd || fail "capture on c1 incomplete"
cap=$(cap_json wd)
un=$(jq -c '[.[] | select(.icmp_type == 3) | {src, dst, code: .icmp_code, csum: .icmp_csum_ok,
	q: "\(.q.src):\(.q.sport)>\(.q.dst):\(.q.dport)"}] | unique' <<<"$cap")
is "$un" '[{"src":"10.0.1.1","dst":"10.0.1.2","code":1,"csum":true,"q":"10.0.1.2:40800>10.0.4.2:80"},{"src":"10.0.1.1","dst":"10.0.1.2","code":1,"csum":true,"q":"10.0.1.2:40801>10.0.4.2:80"}]' \
	"c1 capture: host unreachable from 10.0.1.1, quoting C1's own SYNs (its address and ports)"

# H answers again: the mark lifts, connections go through
ip -n "$H" addr add 10.0.2.2/24 dev h0
ip -n "$H" route add 198.51.100.0/24 via 10.0.2.1 2>/dev/null
ping4 "$R" 10.0.2.2 2 || diag "R cannot reach H again"
read -r res3 ms3 < <(T_TIMEOUT=25 in_ns "$C1" "$NAT_PY" "$T_TMP/conn.py" 10.0.4.2 80 10 40802)
is "$res3" connected "H back: C1 connects again (${ms3:-?} ms)"
ok "xdprd still runs" kill -0 "$DAEMON_PID"
kill "$DAEMON_PID"
[ "$T_FAILED" -eq 0 ] || diag_file "$T_TMP/xdprd.log"
done_testing
