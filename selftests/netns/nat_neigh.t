#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_neigh.t - inside neighbours the fast path needs, kept by xdprd.
# A reply translated back to an inside host whose MAC the router's kernel
# lacks is dropped (drop_nat_in_no_neigh: handed to the kernel, it could be
# answered with an ICMP error quoting the inside address); xdprd has the
# kernel resolve the host, so the flow goes on within a second:
#   (a) `ip neigh flush dev r0` (twice) in the middle of a paced masqueraded
#       download to C1: it completes, no gap between its chunks reaches 1 s
#       (after the first flush the entry is xdprd's, managed); the same
#       during an upload from C1: every byte is acknowledged, none waits 1 s;
#   (b) a second address of C1 that never talked to the router (10.0.1.3):
#       a UDP query from it, asked again every 0.2 s, gets its reply in < 1 s;
#   (d) when an inside host is gone, xdprd's entry for it, unresolved at two
#       sweeps, is deleted (and not made again by the delete's notification);
#   (c) meanwhile nothing on h0 (the outside) carries an inside address, and
#       the router's kernel sends no destination unreachable.
. "$(dirname "$0")/nat_lib.sh"
need python3
need_xdprd

nat_topo_create nb
CONF=$T_TMP/xdpr.conf
cat >"$CONF" <<'EOF'
link attach r0 r1 r2
nat add out r1 masquerade
EOF
ip netns exec "$R" "$XDPRD" --foreground --config "$CONF" --metrics none --gc 1 >>"$T_TMP/xdprd.log" 2>&1 &
DAEMON_PID=$!
ok "xdprd applied its file" xdprd_started "$T_TMP/xdprd.log" || diag_file "$T_TMP/xdprd.log"
cap_start nb "$H" h0 || abort "capture on h0 did not start"
du0=$(snmp "$R" Icmp OutDestUnreachs)

# ---- (a) a paced download, the router's LAN neighbours flushed twice during it
cat >"$T_TMP/pace.py" <<'EOF'
import fcntl, socket, struct, sys, time
SIOCOUTQ = 0x5411
def paced(c, n):             # n chunks of 1000 bytes, one every 10 ms
    for i in range(n):
        c.sendall(b"%999d\n" % i)
        time.sleep(0.01)
def drain(c):                # the bytes received, the longest gap between them (ms)
    n, last, gap = 0, time.monotonic(), 0.0
    try:
        while True:
            b = c.recv(65536)
            now = time.monotonic()
            if not b:
                break
            gap = max(gap, now - last)
            last, n = now, n + len(b)
    except OSError:          # a stall until the timeout is a gap too
        gap = max(gap, time.monotonic() - last)
    return n, int(gap * 1000)
def listen(port):
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("0.0.0.0", port)); l.listen(1)
    return l.accept()[0]
if sys.argv[1] == "serve":   # serve PORT N: a paced download
    c = listen(int(sys.argv[2])); paced(c, int(sys.argv[3])); c.close(); sys.exit(0)
if sys.argv[1] == "sink":    # sink PORT: takes an upload
    drain(listen(int(sys.argv[2]))); sys.exit(0)
try:
    s = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=10)
except OSError as e:         # fetch, push: no connection at all
    print(-1, 99999, e); sys.exit(0)
if sys.argv[1] == "fetch":   # fetch HOST PORT: prints the bytes received, the longest gap (ms)
    print(*drain(s))
else:                        # push HOST PORT N: a paced upload; every 100 ms, how long until
    worst, pend = 0.0, 0     # all sent is acknowledged: prints what stayed unacknowledged, the worst (ms)
    for i in range(int(sys.argv[4])):
        try:
            s.sendall(b"%999d\n" % i)
        except OSError:
            worst, pend = 99.999, -1
            break
        time.sleep(0.01)
        if i % 10 == 9:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 5:
                pend = struct.unpack("i", fcntl.ioctl(s, SIOCOUTQ, b"\0\0\0\0"))[0]
                if pend == 0:
                    break
                time.sleep(0.002)
            worst = max(worst, time.monotonic() - t0)
            if pend:
                break
    print(pend, int(worst * 1000))
EOF
timeout 60 ip netns exec "$H" "$NAT_PY" "$T_TMP/pace.py" serve 7100 500 &
wait_listen "$H" 7100 || diag "the paced server did not start"
nn0=$(ctr "$R" r1 drop_nat_in_no_neigh)
T_TIMEOUT=40 in_ns "$C1" "$NAT_PY" "$T_TMP/pace.py" fetch 10.0.2.2 7100 >"$T_TMP/fetch.out" 2>&1 &
fpid=$!
sleep 1.5
ip -n "$R" neigh flush dev r0
sleep 1.5
ip -n "$R" neigh show dev r0 >"$T_TMP/neigh1.txt"
ip -n "$R" neigh flush dev r0
wait $fpid
read -r got gap _ <"$T_TMP/fetch.out"
is "$got" 500000 "(a) the download through the NAT completed (500,000 bytes) across two flushes" ||
	diag_file "$T_TMP/fetch.out"
num "${gap:-99999}" -lt 1000 "(a) its longest pause was ${gap:-?} ms (< 1 s)"
like "$(grep 10.0.1.2 "$T_TMP/neigh1.txt")" "managed.*proto 169" \
	"(a) after the first flush, xdprd made C1's entry a managed one of its own" || diag_file "$T_TMP/neigh1.txt"
nn=$(grown "$nn0" "$R" r1 drop_nat_in_no_neigh)
num "$nn" -le 20 "(a) drop_nat_in_no_neigh grew by $nn (a few)"

# the other way: a paced upload from C1; what it waits for is acknowledgements
timeout 60 ip netns exec "$H" "$NAT_PY" "$T_TMP/pace.py" sink 7101 &
wait_listen "$H" 7101 || diag "the sink did not start"
T_TIMEOUT=40 in_ns "$C1" "$NAT_PY" "$T_TMP/pace.py" push 10.0.2.2 7101 400 >"$T_TMP/push.out" 2>&1 &
fpid=$!
sleep 1.5
ip -n "$R" neigh flush dev r0
sleep 1
ip -n "$R" neigh flush dev r0
wait $fpid
read -r pend wait _ <"$T_TMP/push.out"
is "$pend" 0 "(a) the upload through the NAT had every byte acknowledged across two flushes" ||
	diag_file "$T_TMP/push.out"
num "${wait:-99999}" -lt 1000 "(a) its longest wait for acknowledgements was ${wait:-?} ms (< 1 s)"

# ---- (b) an address that never talked to the router
ip -n "$C1" addr add 10.0.1.3/24 dev c1
ip -n "$R" neigh del 10.0.1.3 dev r0 2>/dev/null
is "$(ip -n "$R" neigh show 10.0.1.3 dev r0 | grep -c lladdr)" 0 "(b) the router has no neighbour for 10.0.1.3"
udp_echo "$H" 7200
cat >"$T_TMP/ask.py" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.0.1.3", 0)); s.settimeout(0.2)
t0 = time.monotonic()
while time.monotonic() - t0 < 5:
    s.sendto(b"q", ("10.0.2.2", 7200))
    try:
        print(s.recv(100).decode().strip(), int((time.monotonic() - t0) * 1000)); sys.exit(0)
    except socket.timeout:
        pass
print("none 99999")
EOF
read -r ans ms < <(T_TIMEOUT=10 in_ns "$C1" "$NAT_PY" "$T_TMP/ask.py")
like "$ans" '^10\.0\.2\.1:' "(b) 10.0.1.3's UDP query got its reply (translated: $ans)"
num "${ms:-99999}" -lt 1000 "(b) within ${ms:-?} ms (< 1 s)"

# ---- (d) a host gone: xdprd's entry for it, unresolved, is deleted and stays so
ip -n "$C1" addr add 10.0.1.4/24 dev c1
sed -i 's/"10.0.1.3"/sys.argv[1]/' "$T_TMP/ask.py"
read -r ans _ < <(T_TIMEOUT=10 in_ns "$C1" "$NAT_PY" "$T_TMP/ask.py" 10.0.1.4)
like "$ans" '^10\.0\.2\.1:' "(d) 10.0.1.4's query got its reply"
like "$(ip -n "$R" neigh show 10.0.1.4 dev r0)" "managed.*proto 169" "(d) its entry is xdprd's"
ip -n "$C1" addr del 10.0.1.4/24 dev c1
ip -n "$R" neigh del 10.0.1.4 dev r0
for ((i = 0; i < 60; i++)); do
	[ -z "$(ip -n "$R" neigh show 10.0.1.4 dev r0)" ] && grep -q "1 deleted (unresolved)" "$T_TMP/xdprd.log" && break
	sleep 0.1
done
is "$(ip -n "$R" neigh show 10.0.1.4 dev r0)" "" "(d) 10.0.1.4 gone: its entry (made again after the delete) is deleted when unresolved at two sweeps"
sleep 2
is "$(ip -n "$R" neigh show 10.0.1.4 dev r0)" "" "(d) ... and not made again"
num "$(xdpr -j stats | jq '.neighbours.asked')" -ge 3 "(d) xdpr stats: neighbours asked for $(xdpr -j stats | jq -c '.neighbours')"

# ---- (c) the outside never saw an inside address
sleep 0.5
cap_stop nb || fail "capture on h0 incomplete"
cap=$(cap_json nb)
num "$(jq length <<<"$cap")" -ge 500 "(c) h0 capture has the transfer ($(jq length <<<"$cap") frames)"
is "$(jq '[.[] | select(.raw | test("^(..)*0a00010[23]"))] | length' <<<"$cap")" 0 \
	"(c) h0 capture: no frame carries 10.0.1.2 or 10.0.1.3 in any of its bytes"
is "$(jq -c '[.[] | select(.proto == 1) | [.src, .icmp_type, .icmp_code]]' <<<"$cap")" "[]" \
	"(c) h0 capture: no ICMP at all"
is "$(($(snmp "$R" Icmp OutDestUnreachs) - du0))" 0 "(c) the router's kernel sent no destination unreachable"
ok "xdprd still runs" kill -0 "$DAEMON_PID"
kill "$DAEMON_PID"
[ "$T_FAILED" -eq 0 ] || diag_file "$T_TMP/xdprd.log"
done_testing
