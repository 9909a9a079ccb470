#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# flow.t - the flow meter end to end (`xdpr flow`, issue 15): on the NAT
# topology (nat_lib.sh, masquerade on r1), with the meter on, a known UDP
# transfer from C1 shows in `-j flow show` with exactly the packets sent and
# the L3 bytes the capture on h0 saw, keyed by the inside source and
# showing the post-NAT source it left with; its packets sent half from CPU 0
# and half from CPU 1 (r0 with two queues, XPS) are one flow with both CPUs'
# shares merged; the ICMP echo replies coming back are keyed by the outside
# address and show the inside destination; a TCP transfer ORs SYN, ACK and
# FIN; sample 4 meters about a quarter; meter off meters nothing; flush empties
# the table; bad arguments exit 2 with one Error: line.
# shellcheck disable=SC2034 # read by nat_topo_create
NAT_C1_QUEUES=2
. "$(dirname "$0")/nat_lib.sh"

[ "$(nproc)" -ge 2 ] || bail_out "needs 2 CPUs (nproc: $(nproc))"
nat_topo_create fl
ok "c1: XPS sends from CPU 0 on queue 0, from CPU 1 on queue 1" in_ns "$C1" sh -c \
	'echo 1 >/sys/class/net/c1/queues/tx-0/xps_cpus && echo 2 >/sys/class/net/c1/queues/tx-1/xps_cpus' ||
	abort "cannot steer c1's queues to CPUs"
nat_attach

# ---- usage errors: exit 2, one Error: line, nothing changed
cli_fails "flow meter (no word)" 2 'expected "flow meter on [sample N]"' "$R" flow meter
cli_fails "flow meter maybe" 2 'expected "on" or "off", not "maybe"' "$R" flow meter maybe
cli_fails "flow meter on sample 0" 2 'invalid sample "0"' "$R" flow meter on sample 0
cli_fails "flow meter on sample x" 2 'invalid sample "x"' "$R" flow meter on sample x
cli_fails "flow meter on sample" 2 '"sample" needs a value' "$R" flow meter on sample
cli_fails "flow meter off now" 2 'unexpected "now" after "flow meter off"' "$R" flow meter off now
cli_fails "flow bogus" 2 'unknown flow command "bogus"' "$R" flow bogus
cli_fails "flow show extra" 2 'unexpected "extra" after "flow show"' "$R" flow show extra
cli_fails "flow flush extra" 2 'unexpected "extra" after "flow flush"' "$R" flow flush extra

fshow() { xdpr -j flow show 2>&1; }
# flow_of JQ_SELECT: the metered flows matching, compact JSON array
flow_of() { fshow | jq -c "[.flows[] | select($1)]" 2>&1; }

# the table's size: 64 MiB of 80-byte per-CPU values (and 128 bytes an entry), 16384 to 262144
pc=$(( $(sed 's/.*-//' /sys/devices/system/cpu/possible) + 1 ))
FMAX=$(( 67108864 / (80 * pc + 128) ))
[ "$FMAX" -gt 262144 ] && FMAX=262144
[ "$FMAX" -lt 16384 ] && FMAX=16384
is "$(fshow | jq -r '"\(.meter.state) \(.meter.sample) \(.meter.flows) \(.meter.max)"')" "off 1 0 $FMAX" \
	"-j flow show: meter off, sample 1, 0 flows of $FMAX ($pc possible CPUs)"

# S swallows UDP on 7001 and counts what arrives
timeout 120 ip netns exec "$S" "$NAT_PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 7001))
s.settimeout(60)
n = 0
while True:
    d = s.recv(4096)
    if d == b"report":
        open(sys.argv[1], "w").write("%d\n" % n)
        n = 0
    else:
        n += 1' "$T_TMP/s.count" 2>/dev/null &
wait_listen "$S" 7001 udp || bail_out "the UDP counter on S:7001 did not start"

# send.py SPORT N SIZE CPU: N datagrams of SIZE bytes from C1:SPORT to S:7001, on CPU
cat >"$T_TMP/send.py" <<'EOF'
import os, socket, sys, time
sport, n, size, cpu = (int(a) for a in sys.argv[1:5])
os.sched_setaffinity(0, {cpu})
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", sport))
for i in range(n):
    s.sendto(b"x" * size, ("10.0.4.2", 7001))
    if i % 16 == 15:
        time.sleep(0.002)
ran = open("/proc/self/stat").read().rsplit(")", 1)[1].split()[36]
print("cpu%s sent %d" % (ran, n))
EOF
send() { T_TIMEOUT=20 in_ns "$C1" "$NAT_PY" "$T_TMP/send.py" "$@" 2>&1; }
# s_count: datagrams S received since the last report
s_count() {
	rm -f "$T_TMP/s.count"
	T_TIMEOUT=5 in_ns "$C1" "$NAT_PY" -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"report", ("10.0.4.2", 7001))'
	for ((i = 0; i < 50; i++)); do
		[ -s "$T_TMP/s.count" ] && break
		sleep 0.1
	done
	cat "$T_TMP/s.count" 2>/dev/null || echo none
}

# ---- meter off: forwarded, not metered
is "$(send 41000 20 100 0)" "cpu0 sent 20" "meter off: 20 datagrams from C1:41000 (CPU 0)"
is "$(s_count)" 20 "S received the 20"
is "$(fshow | jq -r '.meter.flows, (.flows | length)' | tr '\n' ' ')" "0 0 " "meter off: no flow metered"

# ---- meter on: a known transfer, half from each CPU
ok "flow meter on" xdpr flow meter on
is "$(fshow | jq -r '"\(.meter.state) \(.meter.sample)"')" "on 1" "-j flow show: meter on, sample 1"
cap_start fl "$H" h0 udp and dst port 7001 || abort "capture on h0 did not start"
read -r c0 c1 _ <<<"$(xdpr -j -s -s stats dev r0 | jq -r '.interfaces[] | select(.dev == "r0") |
	.reasons.forwarded.cpus | map(.packets) | join(" ")')"
is "$(send 41001 100 1000 0)" "cpu0 sent 100" "100 datagrams of 1000 bytes from C1:41001 on CPU 0"
is "$(send 41001 100 1000 1)" "cpu1 sent 100" "100 more from the same socket address on CPU 1"
read -r d0 d1 _ <<<"$(xdpr -j -s -s stats dev r0 | jq -r '.interfaces[] | select(.dev == "r0") |
	.reasons.forwarded.cpus | map(.packets) | join(" ")')"
num "$((d0 - c0))" -ge 100 "r0 forwarded >= 100 on CPU 0 ($c0 -> $d0)"
num "$((d1 - c1))" -ge 100 "r0 forwarded >= 100 on CPU 1 ($c1 -> $d1)"
is "$(s_count)" 200 "S received 200 datagrams"
cap_stop fl || fail "capture on h0 incomplete"
cap=$(cap_json fl)
wire=$(jq -r '[.[] | select(.sport == 41001)] | "\(length) \(map(.len) | add) \(map(.src) | unique | join(","))"' <<<"$cap")
is "$wire" "200 205600 10.0.2.1" "h0 saw 200 datagrams, 205600 bytes of IP, from 10.0.2.1"
f=$(flow_of '.proto == "udp" and .sport == 41001')
is "$(jq -r '.[] | "\(.src) \(.dst):\(.dport) \(.in)>\(.out) \(.xsrc):\(.xsport) \(.src_translated) \(.dst_translated)"' <<<"$f")" \
	"10.0.1.2 10.0.4.2:7001 r0>r1 10.0.2.1:41001 true false" \
	"the flow: 10.0.1.2:41001 -> 10.0.4.2:7001, r0 to r1, left as 10.0.2.1:41001 (masqueraded)"
is "$(jq -r '.[] | "\(.packets) \(.bytes)"' <<<"$f")" "${wire% *}" \
	"the flow's packets and bytes are what h0 saw (200, 205600)" || diag "$f"
# both CPUs' shares: the map itself, per CPU (bpftool)
prog=$(in_ns "$R" bpftool -j net show dev r0 | jq -r '.[0].xdp[0].id')
mid=$(bpftool -j prog show id "$prog" | jq -r '.map_ids[]' | while read -r m; do
	bpftool -j map show id "$m" | jq -r 'select(.name == "xdpr_flows") | .id'
done)
# (no BTF on the loader's maps: raw bytes; key bytes 32-33 sport, value bytes 0-7 packets, LE)
shares=$(bpftool -j map dump id "$mid" | jq -r '
	def hex: ltrimstr("0x") | explode | map(if . >= 97 then . - 87 else . - 48 end) | .[0] * 16 + .[1];
	def u64: to_entries | map((.value | hex) * pow(256; .key)) | add;
	.[] | select((.key[32] | hex) * 256 + (.key[33] | hex) == 41001) |
	.values | map({cpu, p: (.value[0:8] | u64)}) | map(select(.p > 0) | "cpu\(.cpu):\(.p)") | join(" ")' 2>&1)
like "$shares" '^cpu0:[0-9]+ cpu1:[0-9]+$' "bpftool: the flow has packets on CPU 0 and CPU 1 ($shares)" ||
	diag "$(bpftool -j map dump id "$mid" | jq -c '.[0]' 2>&1 | head -c 1500)"
is "$(awk '{ split($1, a, ":"); split($2, b, ":"); print a[2] + b[2] }' <<<"$shares")" 200 \
	"the two shares add up to the 200 that flow show reports"

# ---- ICMP: the replies are keyed by the outside address, leave for the inside host
cap_start ping "$H" h0 icmp || abort "capture on h0 did not start"
T_TIMEOUT=20 in_ns "$C1" ping -q -c 10 -i 0.05 -W 2 -s 100 -e 4343 10.0.4.2 >"$T_TMP/ping" 2>&1
like "$(cat "$T_TMP/ping")" ' 10 received' "ping -c 10 -s 100 C1 -> S: 10 replies" || diag_file "$T_TMP/ping"
cap_stop ping || fail "capture on h0 incomplete"
wire=$(cap_json ping | jq -r '[.[] | select(.icmp_type == 8)] | "\(length) \(map(.len) | add)"')
is "$wire" "10 1280" "h0 saw 10 echo requests, 1280 bytes of IP"
is "$(flow_of '.proto == "icmp" and .icmp_type == 8' | jq -r '.[] | "\(.src)>\(.dst) \(.sport) \(.dport) \(.packets) \(.bytes) \(.xsrc) \(.in)>\(.out)"')" \
	"10.0.1.2>10.0.4.2 0 2048 10 1280 10.0.2.1 r0>r1" "echo requests: one flow, dport 8 << 8, 10 packets, 1280 bytes, left from 10.0.2.1"
is "$(flow_of '.proto == "icmp" and .icmp_type == 0' | jq -r '.[] | "\(.src)>\(.dst) \(.dport) \(.packets) \(.xdst) \(.src_translated) \(.dst_translated) \(.in)>\(.out)"')" \
	"10.0.4.2>10.0.2.1 0 10 10.0.1.2 false true r1>r0" "echo replies: keyed to 10.0.2.1, left for 10.0.1.2 (destination translated)"

# ---- TCP: flags OR-ed over the connection
tcp_echo "$S" 7100 || diag "tcp echo server did not start"
like "$(tcp_ask "$C1" 10.0.4.2 7100)" '^10\.0\.2\.1:[0-9]+$' "TCP C1 -> S:7100 through the NAT"
sleep 0.5
f=$(flow_of '.proto == "tcp" and .dport == 7100')
is "$(jq -r '.[] | "\(.src) \(.xsrc) \(.tcp_flags_text | split(",") | map(select(. == "SYN" or . == "ACK" or . == "FIN")) | sort | join(","))"' <<<"$f")" \
	"10.0.1.2 10.0.2.1 ACK,FIN,SYN" "TCP flow to :7100: SYN, ACK and FIN seen, masqueraded" || diag "$f"
num "$(jq -r '.[0].packets' <<<"$f")" -ge 4 "TCP flow: >= 4 packets (SYN, request, ACKs, FIN)"

# ---- text output: the same flows
txt=$(xdpr flow show)
like "$(head -n 1 <<<"$txt")" "^meter on, sample 1 in 1, [0-9]+ flows of $FMAX, 0 packets unmetered" \
	"flow show: the meter line"
like "$txt" 'udp +10\.0\.1\.2:41001 +10\.0\.4\.2:7001 +r0 +r1 +200 +205600 ' "flow show: the UDP flow's line"
like "$txt" 'left as 10\.0\.2\.1:41001 10\.0\.4\.2:7001' "flow show: how it left"

# ---- flush
n=$(fshow | jq -r .meter.flows)
is "$(xdpr -j flow flush | jq -r .flows_removed)" "$n" "flow flush removes the $n flows"
is "$(fshow | jq -r '.meter.flows, (.flows | length)' | tr '\n' ' ')" "0 0 " "flow show after the flush: empty"

# ---- sample 4: a quarter of 100 datagrams sent on one CPU
ok "flow meter on sample 4" xdpr flow meter on sample 4
is "$(fshow | jq -r '"\(.meter.state) \(.meter.sample)"')" "on 4" "-j flow show: sample 4"
is "$(send 41002 100 200 0)" "cpu0 sent 100" "100 datagrams from C1:41002 on CPU 0"
is "$(s_count)" 100 "S received all 100 (sampling only meters)"
pb=$(flow_of '.sport == 41002' | jq -r '.[] | "\(.packets) \(.bytes)"')
read -r sp sb <<<"$pb"
ok "sample 4: about 25 of the 100 metered, 228 bytes each (random gaps of 1 to 7; got: ${pb:-none})" \
	eval '[ -n "$sp" ] && [ "$sp" -ge 12 ] && [ "$sp" -le 38 ] && [ "$sb" -eq $((sp * 228)) ]'

# ---- off again
ok "flow meter off" xdpr flow meter off
xdpr flow flush >/dev/null
is "$(send 41003 20 100 0)" "cpu0 sent 20" "meter off: 20 datagrams"
is "$(fshow | jq -r '"\(.meter.state) \(.meter.flows)"')" "off 0" "meter off: nothing metered"
done_testing
