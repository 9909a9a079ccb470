#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_sessions_unique.t - issue 10: "`nat sessions` walks a hash with
# get_next_key while entries are deleted (duplicates)".  N known UDP flows
# stay put while C2 opens ICMP sessions by the thousand and `nat gc` deletes
# them as they expire: every listing shows each known flow exactly once
# (BPF_MAP_GET_NEXT_KEY restarts from the first bucket when its key is
# deleted; the listing now reads the slots in place and the overflow in
# batches, bucket by bucket).
. "$(dirname "$0")/nat_lib.sh"

N=300
nat_topo_create su
nat_attach
ok "nat timeout icmp 1" xdpr nat timeout icmp 1
ok "nat limit host 60000" xdpr nat limit host 60000
udp_echo "$S" 7000 || abort "no UDP server on S"

# flows SPORT N DST: N UDP flows from ports SPORT.. (one datagram each, answers read)
# churn DST SECS RATE: ICMP echo requests, each with a new id (a new session)
cat >"$T_TMP/su.py" <<'EOF'
import socket, struct, sys, time

def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    return ~(s + (s >> 16)) & 0xffff

if sys.argv[1] == "flows":
    first, n, host, port = int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4].split(":")
    todo = []
    for p in range(first, first + n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", p))
        s.settimeout(1)
        todo.append(s)
    for attempt in range(3):  # a datagram lost on the way is sent again
        for i, s in enumerate(todo):
            s.sendto(b"ping\n", (host, int(port)))
            if i % 50 == 49:
                time.sleep(0.02)  # in bursts the echo server's socket can take
        left = []
        for s in todo:
            try:
                s.recv(100)
            except socket.timeout:
                left.append(s)
        todo = left
    print(n - len(todo))
else:
    dst, secs, rate = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.setblocking(False)
    i, end, sent = 0, time.time() + secs, 0
    while time.time() < end:
        for _ in range(50):
            i = i % 65535 + 1
            body = struct.pack("!HH", i, 1) + b"x" * 8
            s.sendto(struct.pack("!BBH", 8, 0, csum(b"\x08\x00\x00\x00" + body)) + body, (dst, 0))
            sent += 1
        try:
            while s.recv(2048):
                pass
        except BlockingIOError:
            pass
        time.sleep(50.0 / rate)
    print(sent)
EOF

is "$(T_TIMEOUT=30 in_ns "$C1" "$NAT_PY" "$T_TMP/su.py" flows 20000 "$N" 10.0.4.2:7000 2>&1)" "$N" \
	"$N UDP flows from C1 answered"
is "$(sessions proto udp | jq length)" "$N" "nat sessions: $N UDP sessions before the churn"

T_TIMEOUT=40 in_ns "$C2" "$NAT_PY" "$T_TMP/su.py" churn 10.0.4.2 20 40000 >"$T_TMP/churn.out" 2>&1 &
churn=$!
(
	end=$((SECONDS + 20))
	while [ "$SECONDS" -lt "$end" ] && kill -0 "$churn" 2>/dev/null; do
		xdpr nat gc >/dev/null 2>&1
		sleep 0.1
	done
) &
gc=$!
sleep 2
most=0

# the whole table is walked every time; only the UDP sessions are printed
runs=0 wrong=0
while [ "$runs" -lt 200 ] && kill -0 "$churn" 2>/dev/null; do
	got=$(xdpr -j nat sessions proto udp 2>/dev/null |
		jq -r '"\(length) \([.[] | "\(.inside):\(.inside_port) \(.remote):\(.remote_port)"] | unique | length)"')
	if [ "$got" != "$N $N" ]; then
		wrong=$((wrong + 1))
		diag "listing $runs: UDP sessions listed, distinct: $got"
	fi
	runs=$((runs + 1))
	[ $((runs % 10)) -eq 1 ] && total=$(sessions | jq length) && [ "${total:-0}" -gt "$most" ] && most=$total
done
wait "$churn"
wait "$gc"
num "$(cat "$T_TMP/churn.out")" -ge 20000 "C2 opened ICMP sessions by the thousand (echo requests sent)"
num "$most" -gt $((N + 500)) "the table churned under the listings (up to $most sessions listed at once)"
num "$runs" -ge 30 "nat sessions listed the table $runs times during the churn"
is "$wrong" 0 "every listing shows the $N UDP flows, each once"
is "$(sessions proto udp | jq length)" "$N" "after the churn: still $N UDP sessions"
done_testing
