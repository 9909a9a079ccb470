#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_two_cpus.t - "endpoint-independent mapping on both CPUs" (issue 10):
# a UDP socket of C1, shared by two processes pinned to CPU 0 and CPU 1,
# sends to 64 peers at once (32 from each CPU, starting at the same
# instant), so the first packets of one inside endpoint miss the mapping on
# both CPUs together.  The outside link must show exactly one outside source
# port for all 64 peers (RFC 4787 REQ-1), every datagram forwarded, nothing
# dropped.  A round does this for 8 sockets in turn (8 races); `nat flush
# sessions` removes every mapping (and its binding) between rounds,
# so each round races anew.  r0 has two queues and c1 sends from CPU n on
# queue n (XPS), so XDP runs on both CPUs at once; the per-CPU counters
# (`-s -s stats`) must show both CPUs forwarding in every round, or the test
# proves nothing and fails.
# shellcheck disable=SC2034 # read by nat_topo_create
NAT_C1_QUEUES=2
. "$(dirname "$0")/nat_lib.sh"

ROUNDS=5
NSOCK=8
PORT=40800
[ "$(nproc)" -ge 2 ] || bail_out "needs 2 CPUs to run the NAT on two CPUs at once (nproc: $(nproc))"

nat_topo_create tc

# ---- 64 peers on H (10.0.2.10-73), neighbours static on R: no packet waits for ARP
hmac=$(ip -n "$H" -j link show h0 | jq -r '.[0].address')
peers=()
for ((i = 10; i < 74; i++)); do
	ip -n "$H" addr add "10.0.2.$i/24" dev h0 || bail_out "cannot add 10.0.2.$i to h0"
	ip -n "$R" neigh replace "10.0.2.$i" lladdr "$hmac" dev r1 nud permanent ||
		bail_out "cannot add a neighbour for 10.0.2.$i"
	peers+=("10.0.2.$i")
done
is "$(ip -n "$R" -d -j link show r0 | jq -r '.[0].num_rx_queues')" 2 "r0 has 2 receive queues"
ok "c1: XPS sends from CPU 0 on queue 0, from CPU 1 on queue 1" in_ns "$C1" sh -c \
	'echo 1 >/sys/class/net/c1/queues/tx-0/xps_cpus && echo 2 >/sys/class/net/c1/queues/tx-1/xps_cpus' ||
	abort "cannot steer c1's queues to CPUs"

nat_attach
is "$(xdpr -j nat timeout holddown 0 | jq -r .holddown)" 0 "nat timeout holddown 0 (a flushed mapping goes at the next gc)"

# H swallows the datagrams (no answer, no ICMP)
timeout 120 ip netns exec "$H" "$NAT_PY" -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 7000))
while True:
    s.recv(2048)' 2>/dev/null &
for ((i = 0; i < 50; i++)); do
	[ -n "$(in_ns "$H" ss -Huln "sport = :7000" 2>/dev/null)" ] && break
	sleep 0.1
done

# two.py PORT NSOCK ROUND PEER...: bind NSOCK sockets (PORT, PORT+1, ...),
# fork; the parent runs on CPU 0, the child on CPU 1.  For each socket in
# turn both start at the same instant and send "rROUND sK cpuN" to every
# other peer (port 7000) as fast as they can; then two more passes, paced.
cat >"$T_TMP/two.py" <<'EOF'
import os, socket, sys, time
port, nsock, rnd, peers = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
socks = []
for k in range(nsock):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port + k))
    socks.append(s)
start = time.time() + 0.3
pid = os.fork()
cpu = 1 if pid == 0 else 0
os.sched_setaffinity(0, {cpu})
mine, n = peers[cpu::2], 0
for k, s in enumerate(socks):
    msg = ("r%s s%d cpu%d" % (rnd, k, cpu)).encode()
    while time.time() < start + 0.02 * k:
        pass
    for p in mine:
        s.sendto(msg, (p, 7000))
        n += 1
for rep in range(2):
    time.sleep(0.02)
    for k, s in enumerate(socks):
        msg = ("r%s s%d cpu%d" % (rnd, k, cpu)).encode()
        for p in mine:
            s.sendto(msg, (p, 7000))
            n += 1
ran = open("/proc/self/stat").read().rsplit(")", 1)[1].split()[36]  # field 39: last CPU
os.write(1, b"cpu%d on cpu%s sent %d\n" % (cpu, ran.encode(), n))  # one write: lines never mix
if pid:
    _, st = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(st))
os._exit(0)
EOF

# cpu_fwd: r0's forwarded packets per CPU, "N0 N1" (empty if not reported)
cpu_fwd() {
	xdpr -j -s -s stats dev r0 2>/dev/null |
		jq -r '.interfaces[] | select(.dev == "r0") | .reasons.forwarded.cpus // [] | map(.packets) | join(" ")' \
			2>/dev/null
}

per=$((NSOCK * 96))
cap_start two "$H" h0 udp and dst port 7000 || abort "capture on h0 did not start"
n0=$(nat_ctr sessions_new)
ad0=$(nat_ctr adopted)
busy0=$(ctr "$R" r0 drop_nat_busy) noport0=$(ctr "$R" r0 drop_nat_no_port) full0=$(ctr "$R" r0 drop_nat_full)
for ((r = 1; r <= ROUNDS; r++)); do
	read -r c0 c1 _ <<<"$(cpu_fwd)"
	out=$(T_TIMEOUT=15 in_ns "$C1" "$NAT_PY" "$T_TMP/two.py" "$PORT" "$NSOCK" "$r" "${peers[@]}" 2>&1)
	is "$?/$(sort <<<"$out" | tr '\n' ' ')" "0/cpu0 on cpu0 sent $per cpu1 on cpu1 sent $per " \
		"round $r: $NSOCK sockets, each used by a process on CPU 0 and one on CPU 1, $per datagrams from each"
	read -r d0 d1 _ <<<"$(cpu_fwd)"
	if [[ "$c0$c1$d0$d1" =~ ^[0-9]+$ && -n "$c1" && -n "$d1" ]]; then
		ok "round $r: r0 forwarded on both CPUs (cpu0 +$((d0 - c0)), cpu1 +$((d1 - c1)))" \
			test "$((d0 - c0))" -gt 0 -a "$((d1 - c1))" -gt 0
	else
		fail "round $r: per-CPU forwarded counters of r0 not readable from -s -s stats ('$c0 $c1' -> '$d0 $d1')"
		diag "$(xdpr -j -s -s stats dev r0 2>&1 | head -c 600)"
	fi
	s=$(sessions src 10.0.1.2 proto udp)
	is "$(jq -r --argjson lo "$PORT" --argjson n "$NSOCK" '[.[] | select(.inside_port >= $lo and .inside_port < $lo + $n)] |
		group_by(.inside_port) | map("\(length)x\(map(.outside_port) | unique | length)") | unique | join(" ")' <<<"$s")" \
		"64x1" "round $r: nat sessions: each of the $NSOCK inside ports has 64 sessions and one outside port" ||
		diag "$(jq -c --argjson lo "$PORT" '[.[] | select(.inside_port >= $lo)] | group_by(.inside_port) |
			map({inside: .[0].inside_port, outside: (map(.outside_port) | unique)})' <<<"$s")"
	fl=$(xdpr -j nat flush sessions)
	num "$(jq -r .sessions_removed <<<"$fl")" -eq $((NSOCK * 64)) "round $r: nat flush sessions removes $((NSOCK * 64)) ($fl)"
	num "$(jq -r .bindings_freed <<<"$fl")" -ge "$NSOCK" "round $r: nat flush sessions frees the mappings' bindings too"
done
cap_stop two || fail "capture on h0 incomplete"

# ---- the outside link, round by round
cap=$(cap_json two)
num "$(jq length <<<"$cap")" -eq $((ROUNDS * NSOCK * 192)) "h0 capture: all $((ROUNDS * NSOCK * 192)) datagrams arrived"
is "$(jq -r '[.[] | .src] | unique | join(",")' <<<"$cap")" "10.0.2.1" "h0 capture: every datagram comes from 10.0.2.1"
for ((r = 1; r <= ROUNDS; r++)); do
	got=$(jq -r --arg r "r$r " '[.[] | select(.text | startswith($r))] | group_by(.text | split(" ")[1]) |
		map("\(length)/\(map(.dst) | unique | length)/\(map(.sport) | unique | length)") | unique | join(" ")' <<<"$cap")
	is "$got" "192/64/1" \
		"round $r on the wire: each socket's 192 datagrams reach 64 peers from one outside port" ||
		diag "$(jq -c --arg r "r$r " '[.[] | select(.text | startswith($r))] | group_by(.text | split(" ")[1]) |
			map({socket: .[0].text | split(" ")[1], ports: (map(.sport) | unique)})' <<<"$cap")"
done
is "$(jq '[.[] | select(.l4_csum_ok != true)] | length' <<<"$cap")" 0 "h0 capture: every UDP checksum is valid"

num "$(nat_grown "$n0" sessions_new)" -eq $((ROUNDS * NSOCK * 64)) \
	"sessions_new grew by $((ROUNDS * NSOCK * 64)) (one per socket, peer and round)"
diag "adopted (the same session made on both CPUs, one kept): +$(nat_grown "$ad0" adopted)"
is "$(grown "$busy0" "$R" r0 drop_nat_busy)/$(grown "$noport0" "$R" r0 drop_nat_no_port)/$(grown "$full0" "$R" r0 drop_nat_full)" \
	0/0/0 "r0: nothing dropped as busy, no port or table full (drop_nat_busy/no_port/full did not grow)"
done_testing
