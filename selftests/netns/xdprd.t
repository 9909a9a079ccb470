#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# xdprd.t - issue 12: the daemon.  xdprd applies its file at start (and
# tells systemd READY=1 over $NOTIFY_SOCKET), serves metrics that a real
# Prometheus server scrapes (a query through its HTTP API sees the
# forwarded-packet counter rise; promtool finds the text clean), sweeps
# expired NAT sessions by itself, follows the kernel (an address added inside
# a blackholed map prefix is answered within a second; r1 deleted and
# re-created is attached and NAT-ing again within seconds, its counters and
# filter rule go on, nothing with an inside source on the wire in between; a
# MAC change is written to the fast path; a gateway MAC a route keeps is
# refreshed when the neighbour changes), survives kill -9 and a restart
# under a TCP transfer through the NAT (transfer intact, session kept),
# applies a changed file on SIGHUP (RELOADING=1, READY=1), and on SIGTERM
# (STOPPING=1) leaves the fast path running, or detaches with on-stop detach.
. "$(dirname "$0")/nat_lib.sh"
need python3 curl prometheus promtool
XDPRD=${XDPRD:-$(dirname "$XDPR")/xdprd}
[ -x "$XDPRD" ] || skip_all "$XDPRD not built (make all)"

nat_topo_create dd
MPORT=19477
PPORT=19090

CONF=$T_TMP/xdpr.conf
cat >"$CONF" <<'EOF'
link attach r0 r1 r2
nat timeout udp 2
nat add out r1 masquerade
route add 192.0.2.0/24 blackhole
filter add out r1 proto udp dport 7010 drop
EOF

# notify_listen: a datagram socket standing in for systemd's; each message
# becomes one line of $T_TMP/notify.log (newlines inside shown as '|')
notify_listen() {
	NOTIFY_SOCKET=$T_TMP/notify.sock
	python3 - "$NOTIFY_SOCKET" "$T_TMP/notify.log" <<'PYEOF' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        m = s.recv(4096).decode(errors="replace")
        log.write(m.strip().replace("\n", "|") + "\n")
PYEOF
	NOTIFY_PID=$!
	for ((i = 0; i < 50; i++)); do
		[ -S "$NOTIFY_SOCKET" ] && return 0
		sleep 0.1
	done
	return 1
}

# daemon_start [ARGS...]: xdprd in R, foreground, its log in $T_TMP/xdprd.log
daemon_start() {
	# no timeout wrapper: $DAEMON_PID is xdprd itself (ip netns exec execs it)
	NOTIFY_SOCKET=$NOTIFY_SOCKET ip netns exec "$R" "$XDPRD" --foreground \
		--config "$CONF" --metrics "127.0.0.1:$MPORT" --gc 1 "$@" >>"$T_TMP/xdprd.log" 2>&1 &
	DAEMON_PID=$!
}

# lines_in FILE N TEXT: FILE has at least N lines containing TEXT (waits up to 10 s)
lines_in() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -cF -- "$3" "$1" 2>/dev/null)" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# notified N TEXT: the notify log (systemd's messages); logged N TEXT: the daemon's log
notified() { lines_in "$T_TMP/notify.log" "$@"; }
logged() { lines_in "$T_TMP/xdprd.log" "$@"; }

metrics() {
	T_TIMEOUT=10 in_ns "$R" curl -sf "http://127.0.0.1:$MPORT/metrics$1"
}

# r1_attached IFINDEX: waits up to 5 s for xdpr on r1 with that ifindex; prints the one attached
r1_attached() {
	local att i
	for ((i = 0; i < 50; i++)); do
		att=$(xdpr -j link show | jq -r '.[] | select(.dev == "r1" and .state == "attached") | .ifindex')
		[ "$att" == "$1" ] && break
		sleep 0.1
	done
	echo "$att"
}

ok "a stand-in for systemd's notify socket" notify_listen || abort "no notify socket"

# ---- start: the file applied, READY=1
daemon_start
ok "xdprd tells systemd READY=1" notified 1 "READY=1"
ok "xdprd logs the file applied" logged 1 "start: configuration applied: attached 3"
is "$(xdpr -j link show | jq -r '[.[].dev] | sort | join(" ")')" "r0 r1 r2" "the file's interfaces are attached"
is "$(xdpr -j nat show | jq -r '.[0].dev + " " + .[0].action')" "r1 masquerade" "the file's NAT rule is there"
ok "the daemon is running" kill -0 "$DAEMON_PID"

# ---- metrics: clean text, and a real Prometheus scrapes them
metrics >"$T_TMP/m1.txt"
is "$?" 0 "GET /metrics: 200"
promtool check metrics <"$T_TMP/m1.txt" >"$T_TMP/promtool.out" 2>&1
is "$?" 0 "promtool check metrics: clean" || diag_file "$T_TMP/promtool.out"
like "$(grep -c '^xdpr_packets_total{dev="r0",reason="forwarded"}' "$T_TMP/m1.txt")" '^1$' \
	"xdpr_packets_total{dev=\"r0\",reason=\"forwarded\"} is served"
like "$(grep '^xdpr_nat_sessions_limit' "$T_TMP/m1.txt")" '^xdpr_nat_sessions_limit 65536$' "xdpr_nat_sessions_limit 65536"
like "$(metrics '?cpu=1' | grep -c '^xdpr_cpu_packets_total')" '^[0-9]+$' "?cpu=1 serves per-CPU counters"
is "$(T_TIMEOUT=5 in_ns "$R" curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/nope")" 404 "another path: 404"
series() { grep '^xdpr_' | sed 's/ [0-9.e+-]*$//' | sort; }
is "$(diff <(xdpr stats -o prometheus | series) <(metrics | grep -v '^xdprd_' | series))" "" \
	"xdpr stats -o prometheus prints the same series (names and labels) as /metrics"

cat >"$T_TMP/prom.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: xdpr
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
EOF
timeout 300 ip netns exec "$R" prometheus --config.file="$T_TMP/prom.yml" \
	--storage.tsdb.path="$T_TMP/prom" --web.listen-address="127.0.0.1:$PPORT" \
	>"$T_TMP/prom.log" 2>&1 &
# promq EXPR: the value of a one-sample query, or nothing
promq() {
	T_TIMEOUT=5 in_ns "$R" curl -sf "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[0].value[1] // empty'
}
FWD='sum(xdpr_packets_total{dev="r0",reason="forwarded"})'
v0=
for ((i = 0; i < 300 && ${#v0} == 0; i++)); do
	v0=$(promq "$FWD")
	[ -n "$v0" ] || sleep 0.1
done
like "$v0" '^[0-9]+$' "Prometheus scraped xdprd: $FWD = $v0" || diag_file "$T_TMP/prom.log"
ping4 "$C1" 10.0.4.2 5 >/dev/null
v1=$v0
for ((i = 0; i < 100 && v1 < v0 + 5; i++)); do
	sleep 0.2
	v1=$(promq "$FWD")
	v1=${v1:-0}
done
num "$v1" -ge $((v0 + 5)) "through Prometheus's API the forwarded counter rose by the 5 pings ($v0 -> $v1)"
is "$(promq 'up{job="xdpr"}')" 1 "Prometheus: up{job=\"xdpr\"} 1"

# ---- periodic sweep: an expired UDP session goes without nat gc
udp_echo "$S" 7000
like "$(udp "$C1" ask 40001 2 10.0.4.2:7000)" '^10\.0\.2\.1:' "UDP through the NAT"
num "$(sessions | jq length)" -ge 1 "the UDP session exists"
h0=$(xdpr -j nat limit | jq .memory.session_halves)
g0=$(metrics | awk '/^xdprd_gc_removed_total\{table="nat_sessions"\}/ {print $2}')
for ((i = 0; i < 60; i++)); do
	g1=$(metrics | awk '/^xdprd_gc_removed_total\{table="nat_sessions"\}/ {print $2}')
	[ "${g1:-0}" -gt "${g0:-0}" ] && break
	sleep 0.2
done
num "${g1:-0}" -gt "${g0:-0}" "xdprd swept the expired session (xdprd_gc_removed_total{table=\"nat_sessions\"} $g0 -> $g1)"
h1=$(xdpr -j nat limit | jq .memory.session_halves)
num "$h1" -le $((h0 - 2)) "the table holds two halves fewer ($h0 -> $h1): the session is gone, no nat gc run"

# ---- an address added inside a blackholed map prefix is answered within a second
ok "192.0.2.1 is blackholed: no answer" not ping4 "$C1" 192.0.2.1 1
ip -n "$R" addr add 192.0.2.1/32 dev lo
t0=$(date +%s%N)
answered=no
for ((i = 0; i < 20; i++)); do
	if T_TIMEOUT=2 in_ns "$C1" ping -c1 -W0.1 -q 192.0.2.1 >/dev/null 2>&1; then
		answered=yes
		break
	fi
done
ms=$((($(date +%s%N) - t0) / 1000000))
is "$answered" yes "the router answers its new address 192.0.2.1 (after ${ms} ms)"
num "$ms" -le 1500 "answered within a second of the address appearing (plus ping's own 100 ms steps)"

# ---- an interface's MAC changes: written to the fast path, which keeps forwarding
ip -n "$R" link set r0 address 02:00:00:00:aa:01
ip -n "$C1" neigh replace 10.0.1.1 lladdr 02:00:00:00:aa:01 dev c1
ok "xdprd wrote the new MAC of r0 and resolved the neighbours the kernel flushed" logged 1 "1 interface MAC changed: written to the fast path; "
f0=$(ctr "$R" r0 forwarded)
ok "ping C1 -> S to r0's new MAC" ping4 "$C1" 10.0.4.2 3 || { diag "$(xdpr -s stats dev r0)"; diag "$(ip -n "$C1" neigh)"; diag "$(ip -n "$R" link show r0)"; }
num "$(grown "$f0" "$R" r0 forwarded)" -ge 3 "r0 forwards them in XDP (frames to its new MAC are its own)"

# ---- a gateway's MAC changes: a route that keeps it (IPv6 link-local) follows
ll=$(ip -n "$H" -j addr show h0 | jq -r '.[0].addr_info[] | select(.family == "inet6" and .scope == "link") | .local')
hmac=$(ip -n "$H" -j link show h0 | jq -r '.[0].address')
ok "route add 2001:db8:77::/64 via $ll dev r1 (link-local)" xdpr route add 2001:db8:77::/64 via "$ll" dev r1
is "$(xdpr -j route show 2001:db8:77::/64 | jq -r '.[0].nexthops[0].mac')" "$hmac" "the route keeps h0's MAC $hmac"
ip -n "$R" neigh replace "$ll" lladdr 02:00:00:00:77:01 dev r1
m1=
for ((i = 0; i < 30; i++)); do
	m1=$(xdpr -j route show 2001:db8:77::/64 | jq -r '.[0].nexthops[0].mac')
	[ "$m1" == 02:00:00:00:77:01 ] && break
	sleep 0.1
done
is "$m1" 02:00:00:00:77:01 "the neighbour entry changed: xdprd refreshed the route's MAC"
ok "xdprd logged it" logged 1 "1 route with a kept gateway MAC refreshed"
ok "route del 2001:db8:77::/64" xdpr route del 2001:db8:77::/64

# ---- r1 deleted and re-created: attached and NAT-ing again, no inside source on the wire
udp_echo "$S" 7010
f7010=$(xdpr -j filter show | jq '.rules[0].packets')
is "$(udp "$C1" ask 40003 1 10.0.4.2:7010)" timeout "the file's filter rule (out r1 ... dport 7010 drop) drops"
num "$(xdpr -j filter show | jq '.rules[0].packets')" -gt "$f7010" "and counts it"
# spray_start: C1 sends "probe N" to S:7009 every 0.05 s until spray_stop
# (20 s at most); returns once C1 has sent the first (<= 5 s).  A capture
# "no inside source on the wire while ..." also takes the probes (udp dst
# port 7009): the probes that reach S translated after the change are its
# proof that traffic ran through it.
spray_start() {
	local u0 i
	rm -f "$T_TMP/spray.stop"
	u0=$(snmp "$C1" Udp OutDatagrams)
	( for ((i = 0; i < 400; i++)); do [ -e "$T_TMP/spray.stop" ] && break; echo "probe $i"; sleep 0.05; done ) |
		T_TIMEOUT=25 in_ns "$C1" socat -u - UDP4-DATAGRAM:10.0.4.2:7009 2>/dev/null &
	SPRAY=$!
	for ((i = 0; i < 50; i++)); do
		[ "$(snmp "$C1" Udp OutDatagrams)" -gt "$u0" ] 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
spray_stop() {
	touch "$T_TMP/spray.stop"
	wait "$SPRAY"
}
# probes_after FILE T: C1's probes in a capture on S, translated (from
# 10.0.2.1), that arrived after T (date +%s.%N); nothing if unreadable
probes_after() {
	pcap_read "$1" -tt 'src host 10.0.2.1 and udp dst port 7009' | awk -v t="$2" '$1 > t' | grep -c .
}
cap_start leak "$S" s0 "udp dst port 7009 or ($LEAK_FILTER)" || abort "no capture on s0"
spray_start || fail "C1's probes to S:7009 start"
old=$(ip -n "$R" -j link show r1 | jq '.[0].ifindex')
c_before=$(ctr "$R" r1 forwarded)
num "$c_before" -ge 1 "r1 has forwarded packets ($c_before) before it is deleted"
ip -n "$R" link del r1
sleep 0.5
recreate_r1
new=$(ip -n "$R" -j link show r1 | jq '.[0].ifindex')
att=$(r1_attached "$new")
is "$att" "$new" "r1 re-created (ifindex $old -> $new): xdprd attached it again"
ok "xdprd logged it" logged 1 "r1 appeared (ifindex $new): attached in native mode"
like "$(udp "$C1" ask 40002 3 10.0.4.2:7000)" '^10\.0\.2\.1:' "through the new r1 the UDP flow is masqueraded again"
t_back=$(date +%s.%N)
num "$(ctr "$R" r1 forwarded)" -gt "$c_before" "r1's counters went on from $c_before (the same slot)"
f7010=$(xdpr -j filter show | jq '.rules[0].packets')
is "$(udp "$C1" ask 40004 1 10.0.4.2:7010)" timeout "the filter rule follows the name: out the new r1, UDP 7010 still dropped"
num "$(xdpr -j filter show | jq '.rules[0].packets')" -gt "$f7010" "and counted by the same rule"
spray_stop
ok "the capture on S ran to the end, nothing dropped" cap_stop leak
is "$(pcap_count "$T_TMP/leak.pcap" "$LEAK_FILTER")" 0 \
	"capture on S over the re-creation: no packet with an inside source"
num "$(probes_after "$T_TMP/leak.pcap" "$t_back")" -ge 1 \
	"... while C1's probes ran through it: they reach S translated after r1 is back"

# ---- kill -9 and restart under a TCP transfer through the NAT
stream_start "$C1" "$S" 10.0.4.2 5201 60
sleep 1
sess0=$(xdpr -j nat sessions | jq '[.[] | select(.proto == "tcp" and .remote_port == 5201)] | length')
is "$sess0" 1 "the transfer's NAT session exists"
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
ok "xdprd is gone after kill -9" not kill -0 "$DAEMON_PID"
is "$(xdpr -j link show | jq length)" 3 "the fast path keeps running without the daemon"
daemon_start
ok "restarted: READY=1 again" notified 2 "READY=1"
ok "restarted: the router already ran the file" logged 1 "start: configuration applied: the router already ran it"
# ---- SIGHUP with a changed file, still under the transfer
sed -i 's/^nat timeout udp 2$/nat timeout udp 3/' "$CONF"
echo "route add 198.18.5.0/24 blackhole" >>"$CONF"
kill -HUP "$DAEMON_PID"
ok "SIGHUP: RELOADING=1" notified 1 "RELOADING=1"
ok "SIGHUP: READY=1 after it" notified 3 "READY=1"
ok "SIGHUP: logged" logged 1 "reload: configuration applied: attached 0, detached 0; NAT rules added 0, replaced 0, deleted 0; routes changed 1"
is "$(xdpr -j nat timeout | jq .udp)" 3 "the changed timeout is live"
like "$(xdpr route show)" '198\.18\.5\.0/24 blackhole' "the added route is live"
is "$(xdpr -j nat sessions | jq '[.[] | select(.proto == "tcp" and .remote_port == 5201)] | length')" 1 \
	"the transfer's session is still there"
stream_check

# ---- a file that fails on reload keeps the running state
cp "$CONF" "$T_TMP/conf.good"
echo "route add 10.99.0.0/16 blakhole" >>"$CONF"
kill -HUP "$DAEMON_PID"
ok "a bad file on reload is refused, with its line" logged 1 "reload: configuration not applied: $CONF line $(wc -l <"$CONF"): unknown route word"
ok "READY=1 again after the refused reload" notified 4 "READY=1"
like "$(metrics | grep '^xdprd_config_ok')" '^xdprd_config_ok 0$' "xdprd_config_ok 0"
cp "$T_TMP/conf.good" "$CONF"

# ---- SIGTERM: STOPPING=1, the fast path keeps running (on-stop keep)
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"
is "$?" 0 "SIGTERM: exit 0"
ok "SIGTERM: STOPPING=1" notified 1 "STOPPING=1"
is "$(xdpr -j link show | jq length)" 3 "on-stop keep (default): still attached"
echo "on-stop detach" >>"$CONF"
daemon_start
ok "started with on-stop detach" notified 5 "READY=1"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"
is "$(xdpr -j link show | jq length)" 0 "on-stop detach: SIGTERM detached every interface"
ok "logged" logged 1 "stopping (on-stop detach): detached 3 interfaces"

# ---- started while r1 is missing: the rest applies, its NAT rule waits
# (nothing inside leaves untranslated when r1 appears); attached when it does
sed -i '/^on-stop detach$/d' "$CONF"
ip -n "$R" link del r1
daemon_start
ok "started without r1: READY=1" notified 6 "READY=1"
ok "it logs that it waits for r1" logged 1 "waiting for r1"
is "$(xdpr -j link show | jq -r '[.[] | select(.state == "attached") | .dev] | sort | join(" ")')" "r0 r2" \
	"r0 and r2 are attached"
is "$(xdpr -j nat show | jq -r '.[] | "\(.dev) \(.state)"')" "r1 waiting" "the NAT rule waits for r1"
cap_start leak2 "$S" s0 "udp dst port 7009 or ($LEAK_FILTER)" || abort "no capture on s0"
spray_start || fail "C1's probes to S:7009 start"
sleep 0.3
t_back=$(date +%s.%N)
recreate_r1
new=$(ip -n "$R" -j link show r1 | jq '.[0].ifindex')
is "$(r1_attached "$new")" "$new" "r1 appeared: attached"
is "$(xdpr -j nat show | jq -r '.[] | "\(.dev) \(.state)"')" "r1 applied" "its NAT rule is applied"
spray_stop
ok "the capture on S ran to the end, nothing dropped" cap_stop leak2
is "$(pcap_count "$T_TMP/leak2.pcap" "$LEAK_FILTER")" 0 \
	"capture on S while r1 appeared: no packet with an inside source"
num "$(probes_after "$T_TMP/leak2.pcap" "$t_back")" -ge 1 \
	"... while C1's probes ran through it: they reach S translated once r1 is there"
# a manual detach stays (the detach's own link notification is not an interface appearing)
ok "xdpr link detach r2 force (by hand, beside the daemon; r1 masquerades)" xdpr link detach r2 force
sleep 1
is "$(xdpr -j link show | jq -r '[.[] | select(.state == "attached") | .dev] | sort | join(" ")')" "r0 r1" \
	"a second later r2 is still detached"
like "$(udp "$C1" ask 40005 3 10.0.4.2:7000)" '^10\.0\.2\.1:' "UDP from C1 is masqueraded through r1"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"

# ---- bad start: an unknown option, a missing file
T_TIMEOUT=5 in_ns "$R" "$XDPRD" --frob >/dev/null 2>"$T_TMP/e1"
is "$?" 2 "xdprd --frob: exit 2"
like "$(head -n1 "$T_TMP/e1")" '^Error: unknown option "--frob"' "and says so"
T_TIMEOUT=5 in_ns "$R" "$XDPRD" --config "$T_TMP/none.conf" --foreground >/dev/null 2>"$T_TMP/e2"
is "$?" 1 "a missing config file: exit 1"
like "$(cat "$T_TMP/e2")" "^Error: cannot open \"$T_TMP/none.conf\": No such file or directory$" "and says so"
done_testing
