#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_evict.t - a full session table evicts, and one host's flood does not
# stop another host's new flows (README, nat: "A full table evicts among
# its oldest sessions ... the greediest host's idlest").  NAT topology
# (nat_lib.sh), masquerade on r1, `nat limit sessions 1024`:
#
#   - C2 (10.0.3.2) floods new UDP flows for 3 s (two senders at once, so the
#     datapath creates sessions on both CPUs) while C1 (10.0.1.2) opens TCP
#     connections to S: each is answered within 3 s, one SYN retransmission
#     (the veths drop part of the flood before XDP sees it, and a SYN or its
#     answer may be among what they drop: the counters are read, not
#     assumed);
#   - the counters say what happened: every session beyond the table's 1024
#     evicted one (sessions_new - sessions_evicted = 1024), busy / drop_nat_busy (another CPU holding a
#     claim) did not grow, table_full / drop_nat_full stayed 0 (eviction made
#     room every time);
#   - after the flood, a new connection from C1 is answered too;
#   - the tables full of ports in their hold-down (the flood's sessions
#     expired and swept by nat gc): C1's new connection is answered within
#     1 s, a held port going back to the pool (ports_reclaimed).
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create ev
nat_attach
ok "nat limit sessions 1024" xdpr nat limit sessions 1024
tcp_echo "$S" 7000 || abort "no TCP server on S"

# busy_drops: drop_nat_busy summed over the interfaces
busy_drops() {
	xdpr -j stats 2>/dev/null | jq -r '[.interfaces[].reasons.drop_nat_busy.packets] | add | numbers'
}
# full_drops: drop_nat_full summed over the interfaces
full_drops() {
	xdpr -j stats 2>/dev/null | jq -r '[.interfaces[].reasons.drop_nat_full.packets] | add | numbers'
}

# connect_1s: C1's TCP connection to S answered within 1 s (prints the answer)
connect_1s() {
	T_TIMEOUT=3 in_ns "$C1" socat -t 1 -T 1 - "TCP4:10.0.4.2:7000,connect-timeout=1" </dev/null 2>/dev/null
}
# connect_3s: the same within 3 s, a SYN retransmitted once
connect_3s() {
	T_TIMEOUT=5 in_ns "$C1" socat -t 1 -T 1 - "TCP4:10.0.4.2:7000,connect-timeout=3" </dev/null 2>/dev/null
}
# drops: every drop reason that counted, summed over the interfaces
drops() {
	xdpr -j stats 2>/dev/null |
		jq -c '[.interfaces[].reasons | to_entries[] | select((.key | startswith("drop_")) and .value.packets > 0)
			| {(.key): .value.packets}] | add // {}'
}

ev0=$(nat_ctr sessions_evicted)
busy0=$(nat_ctr busy)
bd0=$(busy_drops)

# flood PORT FIRST LAST: new UDP flows to S:PORT from C2, one source port
# after another from FIRST to LAST and round again, for 3 s (prints how many
# it sent); a port's next flow comes long after its session was evicted
flood() {
	T_TIMEOUT=20 in_ns "$C2" "$NAT_PY" - "$1" "$2" "$3" <<'PYEOF'
import socket, sys, time
port, first, last = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
p, end, n = first, time.time() + 3, 0
while time.time() < end:
    if p > last:
        p = first
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("0.0.0.0", p))
        s.sendto(b"x", ("10.0.4.2", port))
        n += 1
    except OSError:
        pass  # a port in use, a full queue: the next one
    s.close()
    p += 1
print(n)
PYEOF
}

flood 5000 20000 42999 >"$T_TMP/flood1" 2>"$T_TMP/flood1.err" &
sp1=$!
flood 5001 43000 65535 >"$T_TMP/flood2" 2>"$T_TMP/flood2.err" &
sp2=$!
sleep 0.5
good=0 tries=0 during=0 slow= times=
while [ "$tries" -lt 40 ] && { kill -0 "$sp1" || kill -0 "$sp2" || [ "$tries" -lt 3 ]; } 2>/dev/null; do
	tries=$((tries + 1))
	{ kill -0 "$sp1" || kill -0 "$sp2"; } 2>/dev/null && during=$((during + 1))
	t0=$(date +%s%N)
	ans=$(connect_3s)
	ms=$((($(date +%s%N) - t0) / 1000000))
	times+=" ${ms}"
	if [[ "$ans" == 10.0.2.1:* ]]; then
		good=$((good + 1))
		[ "$ms" -lt 1000 ] || slow+=" #$tries(${ms}ms)"
	else
		slow+=" #$tries(${ms}ms, failed)"
	fi
done
wait "$sp1"
r1=$?
wait "$sp2"
r2=$?
is "$r1/$r2" "0/0" "C2 flooded for 3 s: $(cat "$T_TMP/flood1") + $(cat "$T_TMP/flood2") new UDP flows" ||
	diag_file "$T_TMP/flood1.err" "$T_TMP/flood2.err"
ok "C1 connected to S during the flood ($tries tries, $during while it ran)" [ "$during" -ge 2 ] || diag "slow:$slow; drops: $(drops)"
is "$good" "$tries" "every connection from C1 during the flood was answered within 3 s" ||
	diag "failed:$slow; drops: $(drops)"
diag "C1's connections took (ms):$times"
like "$(connect_1s)" '^10\.0\.2\.1:[0-9]+$' "after the flood, C1's new connection is answered"

diag "$(xdpr -j nat show | jq -c '.[0].counters | with_entries(select(.value > 0))')"
diag "$(xdpr -j stats | jq -c "[.interfaces[] | {(.dev): (.reasons | with_entries(select(.value.packets > 0)) | map_values(.packets))}] | add")"
n=$(nat_grown "$ev0" sessions_evicted)
ok "sessions_evicted grew by at least 10,000 (got $n)" [ "${n:-0}" -ge 10000 ] 2>/dev/null
is "$(($(nat_ctr sessions_new) - $(nat_ctr sessions_evicted)))" 1024 \
	"sessions_new - sessions_evicted = 1024: every session beyond the table evicted one"
is "$(nat_grown "$busy0" busy)" 0 "the rule's busy counter did not grow"
bd=$(busy_drops)
is "$((bd - bd0))" 0 "drop_nat_busy did not grow"
is "$(nat_ctr table_full)" 0 "table_full: 0 (eviction made room every time)"
is "$(full_drops)" 0 "drop_nat_full: 0"
is "$(xdpr -j nat show | jq -r '.[0].held[0].ports')" 1024 "the rule holds 1024 ports: one per session, none held down"

# ---- ports in their hold-down fill the tables, no session left to evict
ok "nat flush sessions" xdpr nat flush sessions
ok "nat timeout udp 2" xdpr nat timeout udp 2
flood 5002 20000 21999 >"$T_TMP/flood3" 2>&1
sleep 3
gc=$(xdpr -j nat gc)
num "$(jq -r .sessions_removed <<<"$gc")" -ge 1000 "nat gc removes the flood's expired sessions ($gc)"
is "$(xdpr -j nat show | jq -r '.[0].held[0].holddown')" 1024 "1024 ports in their hold-down: the tables are full"
pr0=$(nat_ctr ports_reclaimed)
like "$(connect_1s)" '^10\.0\.2\.1:[0-9]+$' "C1's new connection is answered within 1 s"
num "$(nat_grown "$pr0" ports_reclaimed)" -ge 1 "ports_reclaimed: a held-down port went back to the pool for it"
is "$(nat_ctr table_full)" 0 "table_full: still 0"
is "$(($(busy_drops) - bd0))" 0 "drop_nat_busy: still no growth"

done_testing
