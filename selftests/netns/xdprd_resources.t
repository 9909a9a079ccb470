#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# xdprd_resources.t - xdprd holds its resources flat while it works: with
# every periodic path busy (masquerade with new UDP flows all the time, a
# sweep every second that removes them, IPFIX export with NAT events to a
# collector, a DDoS meter's tick, metrics scraped every second, netlink
# notifications from an address added and removed, an interface deleted and
# re-created every 10 s that xdprd attaches again, a reload every 10 s),
# the daemon's open descriptors, counted by kind (bpf-prog, bpf-map, other
# anon inodes, sockets, the rest), are the same at the end as after a
# warm-up, and its resident memory grows by less than a bound.  The metrics
# endpoint still answers at the end and every scrape on the way did.
#
# XDPR_SOAK_S: how long it runs (seconds, default 60); `make soak` runs it
# for ten minutes.  The warm-up is a quarter of that (at most 60 s).
. "$(dirname "$0")/nat_lib.sh"
need curl
need_xdprd
SOAK=${XDPR_SOAK_S:-60}
[[ "$SOAK" =~ ^[0-9]+$ && "$SOAK" -ge 20 ]] || bail_out "XDPR_SOAK_S must be 20 seconds or more, not \"$SOAK\""
WARM=$((SOAK / 4 > 60 ? 60 : SOAK / 4))
RSS_BOUND_KB=${XDPR_SOAK_RSS_KB:-1024}

nat_topo_create rs
MPORT=19478

# the collector in H: counts the IPFIX messages it gets
timeout $((SOAK + 120)) ip netns exec "$H" "$NAT_PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.0.2.2", 4739))
n = 0
while True:
    s.recv(65535)
    n += 1
    open(sys.argv[1] + ".tmp", "w").write("%d\n" % n)
    __import__("os").replace(sys.argv[1] + ".tmp", sys.argv[1])' "$T_TMP/ipfix.count" 2>/dev/null &
ok "an IPFIX collector listens on 10.0.2.2:4739 in H" wait_listen "$H" 4739 udp

CONF=$T_TMP/xdpr.conf
cat >"$CONF" <<'EOF'
link attach r0 r1 r2
nat timeout udp 1
nat add out r1 masquerade
filter add out r1 proto udp dport 7099 drop
export ipfix 10.0.2.2:4739
export nat-events on
export inactive-timeout 1
ddos protect 10.0.4.0/24
ddos threshold pps 1000000
EOF
ip netns exec "$R" "$XDPRD" --foreground --config "$CONF" --metrics "127.0.0.1:$MPORT" --gc 1 \
	>"$T_TMP/xdprd.log" 2>&1 &
DPID=$!
ok "xdprd applied the file" xdprd_started "$T_TMP/xdprd.log"

metrics() {
	T_TIMEOUT=10 in_ns "$R" curl -sf "http://127.0.0.1:$MPORT/metrics"
}
metric() {
	metrics | awk -v m="$1" '$1 == m { print $2; f = 1 } END { if (!f) print "none" }'
}

# fd_kinds: xdprd's descriptors by kind, one "kind count" a line (every kind)
fd_kinds() {
	local f t
	for f in /proc/"$DPID"/fd/*; do
		t=$(readlink "$f") || continue
		case "$t" in
		anon_inode:bpf-prog) echo bpf-prog ;;
		anon_inode:bpf-map) echo bpf-map ;;
		anon_inode:bpf_link | anon_inode:bpf-link) echo bpf-link ;;
		anon_inode:*) echo anon_inode ;;
		socket:*) echo socket ;;
		*) echo other ;;
		esac
	done | awk '{ n[$1]++ } END { split("bpf-prog bpf-map bpf-link anon_inode socket other", k, " ")
		for (i = 1; i <= 6; i++) print k[i], n[k[i]] + 0 }'
}
# snapshot: the fewest descriptors of each kind over five looks 0.3 s apart
# (a tick holds the router's maps for a moment, a scrape its connection:
# not leaks; a leak only grows), then the resident set (kB)
snapshot() {
	local i
	for ((i = 0; i < 5; i++)); do
		fd_kinds
		sleep 0.3
	done | awk '!($1 in m) || $2 < m[$1] { m[$1] = $2 } END { for (k in m) print k, m[k] }' | sort
	echo "rss $(awk '/^VmRSS:/ { print $2 }' /proc/"$DPID"/status)"
}

export T=$T_TMP
# traffic: C1 sends a datagram from a new port to S every 0.1 s (a new NAT
# session, flow and NAT event each), and one the filter drops every second
timeout $((SOAK + 60)) ip netns exec "$C1" "$NAT_PY" -c '
import os, socket, time
stop = os.path.join(os.environ["T"], "traffic.stop")
i = 0
while not os.path.exists(stop):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"soak", ("10.0.4.2", 7000 if i % 10 else 7099))
    s.close()
    i += 1
    time.sleep(0.1)' &
TRAFFIC=$!

# recreate_r2: r2 (C2's side) deleted and made again: xdprd attaches it again
recreate_r2() {
	ip -n "$R" link del r2
	ip -n "$R" link add r2 type veth peer name c2 netns "$C2" || bail_out "cannot create veth r2/c2"
	ip -n "$R" addr add 10.0.3.1/24 dev r2
	ip -n "$C2" addr add 10.0.3.2/24 dev c2
	in_ns "$C2" ethtool -K c2 gro on tx off >/dev/null 2>&1
	ip -n "$R" link set r2 up
	ip -n "$C2" link set c2 up
	ip -n "$C2" route add default via 10.0.3.1
}

# the run: scrapes every second, an address added and removed every 5 s
# (netlink notifications: the own-address exemptions rebuilt), r2 deleted
# and re-created every 10 s (xdprd attaches it again), a reload every 10 s
recreated=0
reloads=0
t_end=$(($(date +%s) + SOAK))
t_warm=$(($(date +%s) + WARM))
scrapes=0
scrape_fail=0
warm=
declare -A peak
while [ "$(date +%s)" -lt "$t_end" ]; do
	kill -0 "$DPID" 2>/dev/null || break
	if metrics >/dev/null; then scrapes=$((scrapes + 1)); else scrape_fail=$((scrape_fail + 1)); fi
	if ((scrapes % 5 == 0)); then
		ip -n "$R" addr add 192.0.2.77/32 dev lo 2>/dev/null
		ip -n "$R" addr del 192.0.2.77/32 dev lo 2>/dev/null
	fi
	if ((scrapes % 10 == 3)); then
		recreate_r2
		recreated=$((recreated + 1))
	fi
	if ((scrapes % 10 == 7)); then
		kill -HUP "$DPID"
		reloads=$((reloads + 1))
	fi
	if [ -z "$warm" ] && [ "$(date +%s)" -ge "$t_warm" ]; then
		warm=$(snapshot)
		diag "after the ${WARM} s warm-up: $(tr '\n' ' ' <<<"$warm")"
	fi
	sleep 1
done
ok "xdprd ran the whole ${SOAK} s" kill -0 "$DPID"
final=$(snapshot)
diag "after ${SOAK} s: $(tr '\n' ' ' <<<"$final")"
touch "$T_TMP/traffic.stop"
wait "$TRAFFIC" 2>/dev/null

# the periodic paths did run
num "$(metric xdprd_gc_runs_total)" -ge $((SOAK / 2)) "the sweep ran (xdprd_gc_runs_total)"
num "$(metric 'xdprd_gc_removed_total{table="nat_sessions"}')" -ge 10 "the sweeps removed expired NAT sessions"
num "$(metric 'xdprd_export_records_total{format="ipfix",collector="10.0.2.2:4739"}')" -ge 10 \
	"flow records were exported (xdprd_export_records_total)"
num "$(metric 'xdprd_nat_events_sent_total{format="ipfix",collector="10.0.2.2:4739"}')" -ge 10 \
	"NAT events were exported (xdprd_nat_events_sent_total)"
num "$(cat "$T_TMP/ipfix.count" 2>/dev/null)" -ge 10 "the collector got IPFIX messages"
num "$(metric 'xdprd_netlink_events_total{kind="address"}')" -ge 2 "address notifications were followed"
num "$(metric xdprd_reattached_total)" -ge "$recreated" "r2 re-created $recreated times: attached again each time"
num "$(metric xdprd_config_applies_total)" -ge $((reloads + 1)) "the file applied at start and on each of $reloads reloads"
is "$(metric xdprd_config_errors_total)" 0 "none refused"
num "$scrapes" -ge $((SOAK / 2)) "metrics scraped every second ($scrapes times)"
is "$scrape_fail" 0 "every scrape answered"
ok "the metrics endpoint still answers at the end" metrics

# flat: every kind of descriptor as after the warm-up, memory within bounds
[ -n "$warm" ] || fail "a snapshot after the warm-up was taken"
for kind in bpf-prog bpf-map bpf-link anon_inode socket other; do
	w=$(awk -v k="$kind" '$1 == k { print $2 }' <<<"$warm")
	f=$(awk -v k="$kind" '$1 == k { print $2 }' <<<"$final")
	is "${f:-0}" "${w:-0}" "$kind descriptors: ${w:-0} after ${WARM} s, ${f:-0} after ${SOAK} s"
done
w=$(awk '$1 == "rss" { print $2 }' <<<"$warm")
f=$(awk '$1 == "rss" { print $2 }' <<<"$final")
num "$((${f:-0} - ${w:-0}))" -le "$RSS_BOUND_KB" \
	"resident memory grew by at most $RSS_BOUND_KB kB (${w} kB after ${WARM} s, ${f} kB after ${SOAK} s)"

kill -TERM "$DPID"
wait "$DPID"
is "$?" 0 "SIGTERM: xdprd exits 0"
ok "the log never says \"Too many open files\"" not grep -q "Too many open files" "$T_TMP/xdprd.log"
done_testing
