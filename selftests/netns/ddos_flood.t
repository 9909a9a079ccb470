#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ddos_flood.t - DDoS detection and mitigation end to end (issue 15): xdprd
# protects 10.0.2.0/24 (H) and 10.0.4.0/24 (S, behind H) with a low packet
# threshold (3,000 pps over 2 s), a 6 s ban, action drop and blackhole.  A
# bounded hping3 flood from C1 to H: xdprd bans H within the window, the
# flood is dropped in XDP (drop_ddos_ban grows by nearly all of what the
# flood sent after the ban), an iperf3 TCP transfer from C2 to S at a fixed
# rate keeps at least 90% of the rate it had without the flood, and the
# blackhole route of H (table 666, proto 252) reaches an upstream BIRD in C1
# over BGP with the BLACKHOLE community (65535,666) (RFC 7999); after the ban
# ends, the ban is gone, the route is withdrawn in R and at the upstream.
. "$(dirname "$0")/nat_lib.sh"
need jq iperf3 hping3 bird birdc curl

XDPRD=${XDPRD:-$(dirname "$XDPR")/xdprd}
[ -x "$XDPRD" ] || skip_all "$XDPRD not built (make all)"
MPORT=9466
BIRDS=()

bird_start() { # NS NAME CONFIG_TEXT: BIRD in NS, files $T_TMP/NAME.{conf,ctl,pid,log}
	printf '%s\n' "$3" >"$T_TMP/$2.conf"
	timeout 200 ip netns exec "$1" bird -f -c "$T_TMP/$2.conf" -s "$T_TMP/$2.ctl" \
		-P "$T_TMP/$2.pid" >"$T_TMP/$2.log" 2>&1 &
	BIRDS+=("$2")
	for ((i = 0; i < 50; i++)); do
		[ -S "$T_TMP/$2.ctl" ] && return 0
		sleep 0.1
	done
	return 1
}
birdc_() { local n=$1; shift; timeout 10 birdc -s "$T_TMP/$n.ctl" "$@"; }
stop_all() {
	local n pid
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	for n in "${BIRDS[@]}"; do
		birdc_ "$n" down >/dev/null 2>&1
		pid=$(cat "$T_TMP/$n.pid" 2>/dev/null)
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
}
trap 'stop_all; t_cleanup' EXIT

nat_topo_create df
# no NAT: H routes the inside networks back through the router
ip -n "$H" route add 10.0.1.0/24 via 10.0.2.1 && ip -n "$H" route add 10.0.3.0/24 via 10.0.2.1 ||
	bail_out "cannot route H back to the inside"

# ---- the upstream: BIRD in C1 peers with BIRD in R over r0/c1 (eBGP) ----
ok "BIRD starts in R (kernel table 666 -> BGP to the upstream)" bird_start "$R" r "$(sed \
	-e 's/@ROUTER_ID@/10.0.1.1/; s/@LOCAL_AS@/64500/; s/@PEER@/10.0.1.2/; s/@PEER_AS@/64501/' \
	-e 's/@TABLE@/666/' "$(dirname "$0")/../../docs/bird-blackhole.conf")"
ok "BIRD starts in C1 (the upstream)" bird_start "$C1" up '
router id 10.0.1.2;
log stderr all;
protocol device { scan time 1; }
protocol bgp customer {
	local 10.0.1.2 as 64501;
	neighbor 10.0.1.1 as 64500;
	hold time 9; keepalive time 3; connect retry time 1;
	ipv4 { import all; export none; };
	ipv6 { import all; export none; };
}'
est=0
for ((i = 0; i < 60; i++)); do
	birdc_ up show protocols customer 2>/dev/null | grep -q Established && est=1 && break
	sleep 0.5
done
is "$est" 1 "the BGP session R - upstream is established" ||
	{ diag_file "$T_TMP/r.log"; diag_file "$T_TMP/up.log"; }

# ---- xdprd ----
CONF=$T_TMP/xdpr.conf
cat >"$CONF" <<EOF
link attach r0 r1 r2
ddos protect 10.0.2.0/24
ddos protect 10.0.4.0/24
ddos threshold pps 3000
ddos window 2
ddos ban-time 6
ddos action both
ddos blackhole-table 666
EOF
ip netns exec "$R" "$XDPRD" --foreground --config "$CONF" --metrics "127.0.0.1:$MPORT" \
	>"$T_TMP/xdprd.log" 2>&1 &
DPID=$!
ok "xdprd applies the ddos lines" wait_file_line "$T_TMP/xdprd.log" "ddos: 2 prefixes protected" ||
	diag_file "$T_TMP/xdprd.log"
is "$(xdpr -j ddos show | jq -c '[.meters, (.protected | sort)]')" '[true,["10.0.2.0/24","10.0.4.0/24"]]' \
	"the meters are on, both prefixes protected"

# ---- the transfer's rate without the flood ----
in_ns "$S" iperf3 -s -D -p 5201 --logfile "$T_TMP/iperf3-s.log" || bail_out "iperf3 -s failed"
wait_listen "$S" 5201 || bail_out "iperf3 does not listen in S"
rate() { # the receiver's bits/s of a 6 s, 10 Mbit/s TCP transfer C2 -> S
	T_TIMEOUT=30 in_ns "$C2" iperf3 -c 10.0.4.2 -p 5201 -t 6 -b 10M -J 2>/dev/null |
		jq -r '.end.sum_received.bits_per_second | floor' 2>/dev/null
}
base=$(rate)
num "${base:-0}" -ge 8000000 "without the flood the transfer C2 -> S runs at ${base:-?} bit/s (asked 10 Mbit/s)"

# ---- the flood: C1 -> H, UDP, 60,000 packets at up to 20,000 pps, the transfer at the same time ----
b0=$(ctr "$R" r0 drop_ddos_ban)
T_TIMEOUT=30 in_ns "$C1" hping3 --udp -p 9 -c 60000 -i u50 -q 10.0.2.2 >"$T_TMP/hping3.log" 2>&1 &
FLOOD=$!
during=$(rate)
wait "$FLOOD"
sent=$(grep -oE '^[0-9]+ packets transmitted' "$T_TMP/hping3.log" | grep -oE '^[0-9]+')
dropped=$(grown "$b0" "$R" r0 drop_ddos_ban)
num "${sent:-0}" -ge 50000 "hping3 sent ${sent:-?} packets" || diag_file "$T_TMP/hping3.log"
ok "xdprd logs the ban of 10.0.2.2" grep -q "ddos: banned traffic to 10.0.2.2 for 6 s (drop, blackhole)" \
	"$T_TMP/xdprd.log"
num "${dropped:-0}" -ge $(( ${sent:-0} / 2 )) "the flood was dropped in XDP: drop_ddos_ban +$dropped of $sent sent"
num "${during:-0}" -ge $(( ${base:-0} * 9 / 10 )) \
	"during the flood the transfer C2 -> S runs at ${during:-?} bit/s: >= 90% of ${base:-?}"
ban=$(xdpr -j ddos show | jq -c '.bans[] | select(.addr == "10.0.2.2") | [.dir, .reason, .drop, .blackhole, .dropped_packets > 0]')
is "$ban" '["to","pps",true,true,true]' "the ban: to 10.0.2.2, pps, drop and blackhole, packets dropped"
is "$(xdpr -j ddos show | jq '[.bans[] | select(.addr == "10.0.4.2")] | length')" 0 "S, not flooded, is not banned"

# ---- upstream: the blackhole route with the BLACKHOLE community ----
like "$(ip -n "$R" route show table 666 proto 252)" '^blackhole 10\.0\.2\.2' \
	"R's table 666 has the blackhole route of 10.0.2.2 (proto 252)"
seen=
for ((i = 0; i < 20; i++)); do
	seen=$(birdc_ up show route 10.0.2.2/32 all 2>/dev/null)
	grep -q "(65535,666)" <<<"$seen" && break
	sleep 0.5
done
like "$seen" 'BGP\.community:.*\(65535,666\)' "the upstream BIRD has 10.0.2.2/32 with the community (65535,666)" ||
	diag "$seen"
m=$(T_TIMEOUT=10 in_ns "$R" curl -sf "http://127.0.0.1:$MPORT/metrics")
like "$(awk '$1 == "xdprd_ddos_bans_total{reason=\"pps\"}" { print $2 }' <<<"$m")" '^[1-9]' \
	"metrics: xdprd_ddos_bans_total{reason=\"pps\"} counts it"

# ---- the ban ends: gone from the fast path, the route withdrawn ----
gone=
for ((i = 0; i < 40; i++)); do
	gone=$(xdpr -j ddos show | jq '[.bans[] | select(.addr == "10.0.2.2")] | length')
	[ "$gone" = 0 ] && break
	sleep 0.5
done
is "$gone" 0 "after its 6 s the ban is removed"
ok "xdprd logs its end" grep -q "ddos: ban of traffic to 10.0.2.2 ended" "$T_TMP/xdprd.log"
# the routes follow the bans later in the same tick (daemon/ddos.c): allow two ticks
for ((i = 0; i < 8; i++)); do
	[ -z "$(ip -n "$R" route show table 666 proto 252)" ] && break
	sleep 0.25
done
is "$(ip -n "$R" route show table 666 proto 252)" "" "R's table 666 has no blackhole route left (within 2 s of the ban's end)"
for ((i = 0; i < 20; i++)); do
	birdc_ up show route 10.0.2.2/32 2>/dev/null | grep -q "10.0.2.2/32" || break
	sleep 0.5
done
is "$(birdc_ up show route 10.0.2.2/32 2>/dev/null | grep -c '10\.0\.2\.2/32')" 0 "the upstream no longer has 10.0.2.2/32"
ok "C1 pings H again" ping4 "$C1" 10.0.2.2 3

kill "$DPID"
wait "$DPID"
DPID=
done_testing
