#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_longlived.t - "live flows keep their port" (issue 10): with compressed
# timeouts (`nat timeout udp 3 holddown 2`) a UDP flow from C1 kept alive
# for 20 s (a datagram every 0.5 s, every one echoed by H) is four times
# older than its session timeout plus hold-down.  Meanwhile C2 opens flows
# from the same source port to the same server, and `nat gc` runs.  The
# flow must keep one outside port the whole time (h0 capture) and get every
# reply; C2 must get another outside port and never receive C1's replies.
. "$(dirname "$0")/nat_lib.sh"

PORT=40500
DUR=20

nat_topo_create ll
nat_attach
is "$(xdpr -j nat timeout udp 3 holddown 2 | jq -c '[.udp, .holddown]')" "[3,2]" "nat timeout udp 3 holddown 2"

# ll.py echo PORT                (H) answer each datagram with "ADDR:PORT DATA"
# ll.py keep PORT DUR DST:PORT   (C1) "c1 N" every 0.5 s for DUR s; JSON summary
# ll.py poke PORT TAG DST:PORT   (C2) a new socket on PORT sends "c2 TAG.1",
#                                "c2 TAG.2" 0.3 s apart, collects 1.5 s; JSON
cat >"$T_TMP/ll.py" <<'EOF'
import json, select, socket, sys, time

def sock(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    return s

def peer(a):
    h, p = a.rsplit(":", 1)
    return (h, int(p))

def collect(s, until, got):
    while True:
        left = until - time.time()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            return
        data, frm = s.recvfrom(2048)
        got.append({"t": time.time(), "from": "%s:%d" % frm, "data": data.decode(errors="replace")})

mode, port = sys.argv[1], int(sys.argv[2])
if mode == "echo":
    s = sock(port)
    while True:
        data, frm = s.recvfrom(2048)
        s.sendto(b"%s:%d " % (frm[0].encode(), frm[1]) + data, frm)
elif mode == "keep":
    s, dur, dst = sock(port), float(sys.argv[3]), peer(sys.argv[4])
    got, t0, n = [], time.time(), 0
    while time.time() - t0 < dur:
        n += 1
        s.sendto(b"c1 %d" % n, dst)
        collect(s, t0 + 0.5 * n, got)
    collect(s, time.time() + 1, got)
    times = [g["t"] for g in got] or [t0]
    gaps = [b - a for a, b in zip([t0] + times, times)]
    print(json.dumps({"sent": n, "got": got, "max_gap": round(max(gaps), 2)}))
elif mode == "poke":
    s, tag, dst = sock(port), sys.argv[3], peer(sys.argv[4])
    got = []
    s.sendto(b"c2 %s.1" % tag.encode(), dst)
    collect(s, time.time() + 0.3, got)
    s.sendto(b"c2 %s.2" % tag.encode(), dst)
    collect(s, time.time() + 1.5, got)
    print(json.dumps({"got": got}))
EOF

timeout 120 ip netns exec "$H" "$NAT_PY" "$T_TMP/ll.py" echo 7000 2>/dev/null &
for ((i = 0; i < 50; i++)); do
	[ -n "$(in_ns "$H" ss -Huln "sport = :7000" 2>/dev/null)" ] && break
	sleep 0.1
done
cap_start ll "$H" h0 udp and port 7000 || abort "capture on h0 did not start"
rc0=$(nat_ctr ports_reclaimed)

# ---- C1: one flow for DUR s; C2 (same source port, same server) and nat gc meanwhile
T_TIMEOUT=$((DUR + 10)) in_ns "$C1" "$NAT_PY" "$T_TMP/ll.py" keep "$PORT" "$DUR" 10.0.2.2:7000 \
	>"$T_TMP/c1.json" 2>"$T_TMP/c1.err" &
keeper=$!
start=$SECONDS
c2_ports=()
c2_c1=0
gc_bad=()
for at in 6 9 12 15 18; do
	while ((SECONDS - start < at)); do sleep 0.2; done
	p=$(T_TIMEOUT=10 in_ns "$C2" "$NAT_PY" "$T_TMP/ll.py" poke "$PORT" "$at" 10.0.2.2:7000 2>&1)
	c2_ports+=("$(jq -r '[.got[] | .data | select(test(" c2 ")) | split(" ")[0]] | unique | join(",")' <<<"$p" 2>&1)")
	c2_c1=$((c2_c1 + $(jq '[.got[] | select(.data | test(" c1 "))] | length' <<<"$p" 2>/dev/null || echo 1000)))
	# gc while the flow is live: it must leave the flow alone
	gc=$(xdpr -j nat gc)
	s=$(sessions src 10.0.1.2 proto udp | jq -r --argjson p "$PORT" '[.[] | select(.inside_port == $p)] | .[0] | "\(.outside_port) \(.paired)"')
	[ "$s" == "$PORT true" ] || gc_bad+=("t=${at}s: C1's session after gc: '$s' (gc: $gc)")
done
wait "$keeper"
is "$?" 0 "C1's 20 s flow tool exits 0" || diag_file "$T_TMP/c1.err"
cap_stop ll || fail "capture on h0 incomplete"

# ---- what C1 saw
c1=$(cat "$T_TMP/c1.json")
sent=$(jq -r .sent <<<"$c1")
num "$sent" -ge 38 "C1 sent a datagram every 0.5 s for ${DUR} s ($sent)"
is "$(jq -r '[.got[] | select(.data | test(" c1 "))] | length' <<<"$c1")" "$sent" "C1 got a reply to every one of them"
is "$(jq -r '[.got[] | .data | split(" ")[0]] | unique | join(",")' <<<"$c1")" "10.0.2.1:$PORT" \
	"every reply says H saw C1 as 10.0.2.1:$PORT (port kept the whole time)"
is "$(jq -r '[.got[] | select(.data | test(" c1 ") | not)] | length' <<<"$c1")" 0 "C1 got nothing that was not its own reply"
num "$(jq -r '.max_gap * 100 | floor' <<<"$c1")" -le 150 "no gap over 1.5 s between C1's replies (max $(jq -r .max_gap <<<"$c1") s)"
is "${gc_bad[*]}" "" "after every nat gc during the flow, C1's session is there, paired, on port $PORT"

# ---- what C2 saw
is "${#c2_ports[@]}" 5 "C2 opened 5 flows from port $PORT to 10.0.2.2:7000 (at 6, 9, 12, 15, 18 s)"
bad=
for p in "${c2_ports[@]}"; do
	[[ "$p" =~ ^10\.0\.2\.1:[0-9]+$ && "$p" != "10.0.2.1:$PORT" ]] || bad+="'$p' "
done
is "$bad" "" "each C2 flow got answers, from an outside port other than $PORT (${c2_ports[*]})"
is "$c2_c1" 0 "C2 never received a reply meant for C1"

# ---- the wire (h0)
cap=$(cap_json ll)
num "$(jq '[.[] | select(.text | startswith("c1 "))] | length' <<<"$cap")" -eq "$sent" \
	"h0 capture: all $sent of C1's datagrams"
is "$(jq -r '[.[] | select(.text | startswith("c1 ")) | "\(.src):\(.sport)"] | unique | join(",")' <<<"$cap")" \
	"10.0.2.1:$PORT" "h0 capture: every one of C1's datagrams leaves from 10.0.2.1:$PORT"
is "$(jq -r --argjson p "$PORT" '[.[] | select(.text | startswith("c2 ")) | select(.sport == $p)] | length' <<<"$cap")" 0 \
	"h0 capture: none of C2's datagrams leaves from port $PORT"
num "$(jq '[.[] | select(.text | startswith("c2 "))] | length' <<<"$cap")" -eq 10 "h0 capture: C2's 10 datagrams"
is "$(jq '[.[] | select(.l4_csum_ok != true)] | length' <<<"$cap")" 0 "h0 capture: every UDP checksum is valid"
is "$(nat_grown "$rc0" ports_reclaimed)" 0 "ports_reclaimed did not grow (no port was taken from anyone)"
done_testing
