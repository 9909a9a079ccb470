#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# route_scale.t - 100k routes.  `route load` of 100,000 unique /24s (made with
# awk, alternating between a gateway behind r1 and one behind r2, plus a few
# other lines) succeeds; traffic to a sample of them is forwarded in the fast
# path and counted on the right route; `route show` lists all of them, as
# text and as JSON, and `route show PREFIX` finds one; `route flush` under
# traffic falls back to the kernel FIB without losing a packet.  Times are
# printed as diagnostics, never asserted.
. "$(dirname "$0")/route_lib.sh"

N=100000
# shellcheck disable=SC2034 # read by lib.sh
T_CLI_TIMEOUT=60 # load and show of 100k routes take seconds

rt_topo_create rs
ip -n "$R" route add 192.0.2.0/24 via 10.0.2.2  # the kernel's route, for the flush
rt_serve "$S1" 192.0.2.1/32
rt_attach

# since T0: seconds since $EPOCHREALTIME was T0 (for diagnostics only)
since() {
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'
}

# prefix I: the I-th /24 from 20.0.0.0 (20.0.0.0/24 .. 21.134.159.0/24 for 100k)
prefix() {
	local i=$1
	echo "$((20 + i / 65536)).$((i / 256 % 256)).$((i % 256)).0/24"
}

{
	echo "# $N unique /24s, even ones via S1, odd ones via S2"
	awk -v n="$N" 'BEGIN {
		for (i = 0; i < n; i++)
			printf "%d.%d.%d.0/24 via %s\n", 20 + int(i / 65536), int(i / 256) % 256, i % 256,
				i % 2 ? "10.0.3.2 dev r2" : "10.0.2.2 dev r1"
	}'
	echo ""
	echo "192.0.2.0/24 via 10.0.2.2 dev r1   # also in the kernel FIB"
	echo "2001:db8:100::/48 via 2001:db8:2::2 dev r1"
} >"$T_TMP/routes"
TOTAL=$((N + 2))

# the sample: both ends, around byte boundaries, and a few random ones
sample=(0 1 255 256 65535 65536 $((N - 2)) $((N - 1)))
for ((k = 0; k < 4; k++)); do
	sample+=($(((RANDOM * 32768 + RANDOM) % N)))
done
diag "sampled route indexes: ${sample[*]}"
for i in "${sample[@]}"; do
	p=$(prefix "$i")
	if ((i % 2)); then
		ip -n "$S2" addr replace "${p%.0/24}.1/32" dev lo
	else
		ip -n "$S1" addr replace "${p%.0/24}.1/32" dev lo
	fi
done

t0=$EPOCHREALTIME
cli "$R" route load "$T_TMP/routes"
diag "route load of $TOTAL routes: $(since "$t0") s"
is "$RC" 0 "route load of $TOTAL routes exits 0"
is "$OUT" "$TOTAL routes loaded" "route load says how many routes it loaded"
[ -n "$ERR" ] && diag "$ERR"

# ---- traffic to the sample: forwarded, counted on the right route
f0=$(ctr "$R" r0 forwarded)
lost=()
for i in "${sample[@]}"; do
	p=$(prefix "$i")
	ping4 "$C" "${p%.0/24}.1" 2 || lost+=("${p%.0/24}.1")
done
is "${lost[*]}" "" "ping to an address in each of the ${#sample[@]} sampled prefixes works"
num "$(grown "$f0" "$R" r0 forwarded)" -ge $((2 * ${#sample[@]})) \
	"r0 forwarded grew by >= $((2 * ${#sample[@]})) (fast path)"

t0=$EPOCHREALTIME
xdpr -j route show >"$T_TMP/show.json" 2>"$T_TMP/show.err"
rc=$?
diag "route show -j of $TOTAL routes: $(since "$t0") s"
is "$rc" 0 "route show -j exits 0"
is "$(jq length "$T_TMP/show.json")" "$TOTAL" "route show -j lists $TOTAL routes"
want=""
for i in "${sample[@]}"; do
	if ((i % 2)); then gw="10.0.3.2 r2"; else gw="10.0.2.2 r1"; fi
	want+="$(prefix "$i") $gw 2;"
done
got=$(for i in "${sample[@]}"; do prefix "$i"; done | jq -R . | jq -s . >"$T_TMP/sample.json" &&
	jq -j --slurpfile s "$T_TMP/sample.json" '($s[0] | map({(.): true}) | add) as $want |
		(map(select($want[.prefix])) | map({(.prefix): .}) | add) as $got |
		$s[0][] | $got[.] | "\(.prefix) \(.nexthops[0].gateway) \(.nexthops[0].dev) \(.packets);"' \
		"$T_TMP/show.json")
is "$got" "$want" "each sampled route: its gateway and device, and the 2 echo requests it counted"
is "$(jq '[.[] | select(.packets > 0)] | length' "$T_TMP/show.json")" "${#sample[@]}" \
	"no other route counted anything"

t0=$EPOCHREALTIME
xdpr route show >"$T_TMP/show.txt" 2>"$T_TMP/show.err"
rc=$?
diag "route show (text) of $TOTAL routes: $(since "$t0") s"
is "$rc" 0 "route show (text) exits 0"
is "$(wc -l <"$T_TMP/show.txt")" "$TOTAL" "route show prints one line per route ($TOTAL)"
is "$(cut -d' ' -f1 "$T_TMP/show.txt" | sort -u | wc -l)" "$TOTAL" "... each with its own prefix"
is "$(grep -c '^[0-9a-f.:]*/[0-9]* *via .* dev r[12] *packets [0-9]* bytes [0-9]*$' "$T_TMP/show.txt")" \
	"$TOTAL" "... each in the form 'PREFIX via GW dev DEV  packets N bytes N'"
p=$(prefix $((N - 1)))
t0=$EPOCHREALTIME
one=$(xdpr route show "$p")
diag "route show of one prefix among $TOTAL routes: $(since "$t0") s"
like "$one" "^${p//./\\.} +via 10\.0\.3\.2 dev r2 +packets 2 bytes 196$" \
	"route show $p finds the last route among $TOTAL"

# ---- one change on a full table: the whole table is rebuilt and swapped
ip -n "$S2" addr replace 22.0.0.1/32 dev lo
t0=$EPOCHREALTIME
ok "route add of one more route to $TOTAL routes" xdpr route add 22.0.0.0/24 via 10.0.3.2 dev r2
diag "route add at $TOTAL routes: $(since "$t0") s"
ok "the added route forwards" ping4 "$C" 22.0.0.1 2
is "$(xdpr -j route show 22.0.0.0/24 | jq -r '.[0].packets')" 2 "... and counts its 2 echo requests"
ok "a sampled route still forwards next to it" ping4 "$C" "$(prefix 0 | sed 's|.0/24$|.1|')" 1
t0=$EPOCHREALTIME
ok "route del of it" xdpr route del 22.0.0.0/24
diag "route del at $((TOTAL + 1)) routes: $(since "$t0") s"
is "$(xdpr -j route show | jq length)" "$TOTAL" "the table is back to $TOTAL routes"

# ---- flush under traffic: the kernel FIB takes over, no packet lost
ok "before the flush, 192.0.2.0/24 is in the table" xdpr route show 192.0.2.0/24
T_TIMEOUT=30 in_ns "$C" ping -q -c 100 -i 0.05 -W 1 192.0.2.1 >"$T_TMP/ping.out" 2>&1 &
ppid=$!
sleep 1.5
b0=$(rt_ctr 192.0.2.0/24)
t0=$EPOCHREALTIME
ok "route flush (of $TOTAL routes) while a ping runs" xdpr route flush
diag "route flush: $(since "$t0") s"
f0=$(ctr "$R" r0 forwarded)
wait "$ppid"
num "$b0" -ge 10 "before the flush the ping went through the route 192.0.2.0/24 ($b0 packets)"
like "$(cat "$T_TMP/ping.out")" '100 packets transmitted, 100 received' \
	"the ping lost nothing across the flush (100 of 100 echoes answered)"
num "$(grown "$f0" "$R" r0 forwarded)" -ge 20 "after the flush, r0 forwarded still grows (kernel FIB, fast path)"
is "$(xdpr -j route show)" "[]" "after the flush the table is empty"
cli_fails "route show of a flushed prefix" 1 "no route 192.0.2.0/24" "$R" route show 192.0.2.0/24
p=$(prefix 0)
ok "a sampled prefix (no kernel route) is unreachable after the flush" fails ping4 "$C" "${p%.0/24}.1" 1

done_testing
