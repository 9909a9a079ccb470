#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# filter_swap.t - "never a half-applied list", with XDP on both CPUs at once.
#
# Part 1: two rule lists A and B are loaded in turn (`filter load`) as fast
# as the command goes while two senders, pinned to CPU 0 and CPU 1, send UDP
# datagrams to H port 9000, every one a new flow (a new source address or
# port), so every one is classified.  Each list decides that traffic with a
# rule of its own, behind or in front of 20,000 rules that never match it
# (all "reject", so a packet judged by a rule of the other list, or by a
# slot half built, is rejected and seen; so is one that slips past A's
# drop rule):
#   A: 20,000 rejects, "proto udp dport 9000 drop", "proto udp reject"
#   B: "proto udp dport 9000 accept", 20,000 other rejects
# both under policy drop.  Under A the classifier walks the whole list for
# each datagram (tens of microseconds, see fill), so at every switch some
# packets are still reading the slot being left: a change that released or
# rebuilt that slot without waiting for them would show.  So no datagram may ever meet the policy, fail
# closed (drop_filter_policy) or be rejected (tx_filter_reject): each one is
# forwarded (B) or dropped by A's rule (drop_filter), exactly once, on the
# CPU that sent it; H receives exactly the forwarded ones; each CPU saw both
# lists decide (forwarded and drop_filter grew on each); `filter show` is the
# last list loaded, word for word.
#
# Part 2: flow states made on two CPUs at once.  Under policy drop and one
# rule "proto udp dport 9100 accept", C1 sends on NFLOWS sockets, each flow
# from CPU 0 and CPU 1 at the same instant, so both CPUs miss the flow state
# together and both accept the first packet; H answers every datagram.
# Every answer must pass on the flow's state (r1: forwarded, no
# drop_filter_policy) and reach C1, and the flow table must hold exactly one
# state per flow (`filter flows`, and the keys in xdpr_flt_flows).
#
# r0 has two queues and c1 sends from CPU n on queue n (XPS), so XDP runs on
# r0 on both CPUs at once; the per-CPU counters (`-s -s stats`) must show it,
# or the test proves nothing and fails.  Neighbours are static.
# shellcheck disable=SC2034 # read by nat_topo_create
NAT_C1_QUEUES=2
. "$(dirname "$0")/nat_lib.sh"

SWAP_SECS=${FSWAP_SECS:-35}    # how long part 1 swaps lists
NFILL=${FSWAP_NFILL:-20000}    # rules of each list that never match the test traffic
NFLOWS=200                     # part 2: flows per round
ROUNDS=4
PORT0=41000                    # part 2: C1's first source port
UDPPY=$XDPR_ROOT/selftests/netns/filter_swap_udp.py
[ "$(nproc)" -ge 2 ] || bail_out "needs 2 CPUs to run XDP on two CPUs at once (nproc: $(nproc))"

nat_topo_create fs

# ---- r1/h0 again, with two queues too: each CPU redirects into a ring of its
# own on h0 (one ring filled from both CPUs overflows: xdp_xmit_errors)
two_queue_r1() {
	ip -n "$R" link del r1 &&
		ip -n "$R" link add r1 numtxqueues 2 numrxqueues 2 type veth peer name h0 \
			numtxqueues 2 numrxqueues 2 netns "$H" &&
		ip -n "$R" addr add 10.0.2.1/24 dev r1 &&
		ip -n "$H" addr add 10.0.2.2/24 dev h0 &&
		in_ns "$H" ethtool -K h0 gro on tx off >/dev/null &&
		in_ns "$R" ethtool -K r1 tx off >/dev/null &&
		ip -n "$R" link set r1 up &&
		ip -n "$H" link set h0 up
}
two_queue_r1 || bail_out "cannot make r1/h0 with two queues"

# ---- static neighbours (no packet waits for ARP), answers from H route back to C1
mac() { ip -n "$1" -j link show "$2" | jq -r '.[0].address'; }
static_neighbours() {
	ip -n "$R" neigh replace 10.0.1.2 lladdr "$(mac "$C1" c1)" dev r0 nud permanent &&
		ip -n "$R" neigh replace 10.0.2.2 lladdr "$(mac "$H" h0)" dev r1 nud permanent &&
		ip -n "$C1" neigh replace 10.0.1.1 lladdr "$(mac "$R" r0)" dev c1 nud permanent &&
		ip -n "$H" neigh replace 10.0.2.1 lladdr "$(mac "$R" r1)" dev h0 nud permanent &&
		ip -n "$H" route add 10.0.1.0/24 via 10.0.2.1
}
static_neighbours || bail_out "cannot set static neighbours and H's route"
is "$(ip -n "$R" -d -j link show r0 | jq -r '.[0].num_rx_queues')/$(ip -n "$H" -d -j link show h0 | jq -r '.[0].num_rx_queues')" \
	2/2 "r0 and h0 have 2 receive queues"
ok "ping C1 -> H over static neighbours" ping4 "$C1" 10.0.2.2 1
ok "c1: XPS sends from CPU 0 on queue 0, from CPU 1 on queue 1" in_ns "$C1" sh -c \
	'echo 1 >/sys/class/net/c1/queues/tx-0/xps_cpus && echo 2 >/sys/class/net/c1/queues/tx-1/xps_cpus' ||
	abort "cannot steer c1's queues to CPUs"

# ---- the two lists, in the words `filter show` prints
# fill TAG: NFILL rules that never match a datagram from 10.0.1.0/24 to
# 10.0.2.2 UDP port 9000 with a source port >= 1024, in on r0 and out on r1,
# and each of them misses it in one field only.  Seven kinds, one for each
# field, take turns: every 64 rules (a word of the classifier's bitmaps)
# hold rules that match the datagram's value of every field, so no word is
# ruled out by the summaries and a datagram that gets past the fillers (to
# A's drop rule) makes the classifier walk the whole list, word by word:
# packets stay long in the filter while the lists swap.  TAG makes A's and
# B's differ.
fill() {
	local i k
	for ((i = 0; i < NFILL; i++)); do
		k=$(((i + $1) % 256))
		case $((i % 7)) in
		0) echo "src 10.0.1.0/24 dst 10.0.2.0/24 proto udp sport $((1 + (i + $1) % 1000))-1023 dport 9000 reject" ;;
		1) echo "src 198.18.$k.0/24 dst 10.0.2.0/24 proto udp dport 9000 reject" ;;
		2) echo "src 10.0.1.0/24 dst 203.0.$1.$k/32 proto udp dport 9000 reject" ;;
		3) echo "in r1 src 10.0.1.0/24 dst 10.0.2.2/32 proto udp dport 9000 reject" ;;
		4) echo "src 10.0.1.0/24 dst 10.0.2.0/24 proto tcp dport 9000 reject" ;;
		5) echo "src 10.0.1.0/24 dst 10.0.2.2/32 proto udp dport $((9001 + (i + $1) % 500)) reject" ;;
		6) echo "out r0 src 10.0.1.0/24 dst 10.0.2.0/24 proto udp dport 9000 reject" ;;
		esac
	done
}
{
	fill 113
	echo "proto udp dport 9000 drop"
	echo "proto udp reject"
} >"$T_TMP/A"
{
	echo "proto udp dport 9000 accept"
	fill 114
} >"$T_TMP/B"
echo "proto udp dport 9100 accept" >"$T_TMP/P2"

diag "set-up: ${SECONDS} s"
ok "link attach r0 r1" xdpr_attach r0 r1 || abort "cannot attach xdpr"
ok "filter policy drop" xdpr filter policy drop
ok "filter load A ($((NFILL + 2)) rules)" xdpr filter load "$T_TMP/A" || abort "cannot load list A"
is "$(xdpr -j filter show | jq -r '.rules[].rule' | sha256sum)" "$(sha256sum <"$T_TMP/A")" \
	"filter show prints list A word for word" || abort "list A is not shown as loaded: the comparisons below would be wrong"

# ---- counters
# snap NAME: `-j -s -s stats` (per-CPU reasons of every interface) into $T_TMP/NAME.json
snap() {
	xdpr -j -s -s stats >"$T_TMP/$1.json" 2>"$T_TMP/$1.err" || diag_file "$T_TMP/$1.err"
}

# grew BEFORE AFTER DEV REASON [CPU]: how much a counter grew from snapshot
# BEFORE to AFTER (the sum of the CPUs, or one CPU); "none" if unreadable.
grew() {
	local v
	v=$(jq -n -r --slurpfile a "$T_TMP/$1.json" --slurpfile b "$T_TMP/$2.json" --arg d "$3" \
		--arg r "$4" --arg c "${5:-}" '
		def v(s): [s[0].interfaces[] | select(.dev == $d) | .reasons[$r] |
			if $c == "" then .packets else .cpus[$c | tonumber].packets end] | first;
		v($b) - v($a)' 2>/dev/null)
	[[ "$v" =~ ^-?[0-9]+$ ]] && echo "$v" || echo none
}

# filter_policy_packets: the policy counter of `-j filter show`.
filter_policy_packets() {
	xdpr -j filter show 2>/dev/null | jq -r '.packets // "none"' 2>/dev/null || echo none
}

# ================================================================ part 1

# H counts what arrives on port 9000
rm -f "$T_TMP/count"
timeout 120 ip netns exec "$H" "$NAT_PY" "$UDPPY" count 9000 "$T_TMP/count" 2>"$T_TMP/count.err" &
CPID=$!
for ((i = 0; i < 50; i++)); do
	[ -n "$(in_ns "$H" ss -Huln "sport = :9000" 2>/dev/null)" ] && [ -s "$T_TMP/count" ] && break
	sleep 0.1
done
ok "H listens on UDP port 9000" test -s "$T_TMP/count" || abort "the counting receiver did not start"

# xmit_errors: XDP frames r1 could not hand to h0 (ethtool -S, all queues)
xmit_errors() {
	in_ns "$R" ethtool -S r1 | awk '/xdp_xmit_errors:/ { n += $2 } END { print n + 0 }'
}
udp_snmp0=$(snmp "$H" Udp RcvbufErrors)/$(snmp "$H" Udp InCsumErrors)
udp_in0=$(snmp "$H" Udp InDatagrams)
xerr0=$(xmit_errors)
snap p1a
rm -f "$T_TMP/stop"
for cpu in 0 1; do
	# CPU 0 from 10.0.1.16 up, CPU 1 from 10.0.1.136 up: no flow seen twice
	timeout $((SWAP_SECS + 30)) ip netns exec "$C1" "$NAT_PY" "$UDPPY" flood "$cpu" "10.0.1.$((16 + 120 * cpu))" \
		10.0.2.2 9000 "$T_TMP/stop" $((SWAP_SECS + 20)) >"$T_TMP/flood$cpu.out" 2>"$T_TMP/flood$cpu.err" &
	FPID[cpu]=$!
done

# both senders reach r0 (on their own CPUs) before the first swap
for ((i = 0; i < 50; i++)); do
	snap p1s
	[ "$(grew p1a p1s r0 drop_filter 0)" != none ] && [ "$(grew p1a p1s r0 drop_filter 0)" -gt 0 ] &&
		[ "$(grew p1a p1s r0 drop_filter 1)" -gt 0 ] && break
	sleep 0.1
done
ok "both senders' datagrams meet list A on r0 before the swapping starts (cpu0 +$(grew p1a p1s r0 drop_filter 0), cpu1 +$(grew p1a p1s r0 drop_filter 1))" \
	test "$(grew p1a p1s r0 drop_filter 0)" -gt 0 -a "$(grew p1a p1s r0 drop_filter 1)" -gt 0

# B, A, B, ... for SWAP_SECS, one `ip netns exec` for the loop
# shellcheck disable=SC2016 # expanded by the inner shell
timeout $((SWAP_SECS + 30)) ip netns exec "$R" bash -c '
	xdpr=$1 dir=$2 secs=$3 n=0 bad=0 last=A t0=$(date +%s%N)
	while [ $(( ($(date +%s%N) - t0) / 1000000000 )) -lt "$secs" ]; do
		[ "$last" = A ] && l=B || l=A
		if "$xdpr" filter load "$dir/$l" >/dev/null 2>>"$dir/swap.err"; then
			n=$((n + 1)) last=$l
		else
			bad=$((bad + 1))
			[ "$bad" -lt 5 ] || break
		fi
	done
	echo "$n $bad $last $(( ($(date +%s%N) - t0) / 1000000 ))"' swap "$XDPR" "$T_TMP" "$SWAP_SECS" >"$T_TMP/swap.out"
read -r swaps swap_bad last swap_ms <"$T_TMP/swap.out"
touch "$T_TMP/stop"
for cpu in 0 1; do
	wait "${FPID[cpu]}"
	FRC[cpu]=$?
done
is "$swap_bad" 0 "every filter load succeeded ($swaps swaps in ${swap_ms:-?} ms)" || diag_file "$T_TMP/swap.err"
num "$swaps" -ge 40 "the lists were swapped at least 40 times while both CPUs classified ($swaps)"
diag "swaps: $swaps in $swap_ms ms ($((swaps * 1000 / (swap_ms > 0 ? swap_ms : 1))) a second), last list $last"

sent=0
for cpu in 0 1; do
	out=$(cat "$T_TMP/flood$cpu.out")
	like "${FRC[cpu]}: $out" "^0: cpu$cpu on cpu$cpu sent [0-9]+ from [0-9]+ addresses nobufs [0-9]+ errors 0\$" \
		"sender on CPU $cpu: ran there, exited 0, no send error ($out)" || diag_file "$T_TMP/flood$cpu.err"
	SENT[cpu]=$(awk '{print $5}' <<<"$out")
	[[ "${SENT[cpu]}" =~ ^[0-9]+$ ]] || SENT[cpu]=0
	sent=$((sent + SENT[cpu]))
done
diag "datagrams sent: cpu0 ${SENT[0]}, cpu1 ${SENT[1]}, each a new flow"

snap p1b
fwd=$(grew p1a p1b r0 forwarded)
drp=$(grew p1a p1b r0 drop_filter)
num "$((fwd + drp))" -eq "$sent" "r0: forwarded + drop_filter = the $sent datagrams sent (forwarded $fwd, drop_filter $drp)"
for cpu in 0 1; do
	f=$(grew p1a p1b r0 forwarded "$cpu")
	d=$(grew p1a p1b r0 drop_filter "$cpu")
	num "$((f + d))" -eq "${SENT[cpu]}" "r0 on CPU $cpu: forwarded + drop_filter = what the CPU $cpu sender sent ($f + $d)"
	ok "r0 on CPU $cpu: both lists decided datagrams (forwarded $f by B, drop_filter $d by A)" \
		test "$f" -gt 0 -a "$d" -gt 0
done
is "$(grew p1a p1b r0 drop_filter_policy)/$(grew p1a p1b r0 tx_filter_reject)/$(grew p1a p1b r0 drop_filter_hdr)/$(grew p1a p1b r0 drop_filter_reject_limit)" \
	0/0/0/0 "r0: no datagram met the policy or a half-built slot (drop_filter_policy), none was rejected"
is "$(filter_policy_packets)" 0 "filter show: the policy counter is 0"

# H received exactly the forwarded datagrams, each once (what r1 could not
# hand to h0, a full veth ring, is counted by the veth: xdp_xmit_errors)
xerr=$(($(xmit_errors) - xerr0))
prev="" still=0
for ((i = 0; i < 200 && still < 15; i++)); do
	now=$(cat "$T_TMP/count" 2>/dev/null)
	[[ "$now" == "received $((fwd - xerr)) "* ]] && break
	[ "$now" == "$prev" ] && still=$((still + 1)) || still=0
	prev=$now
	sleep 0.1
done
kill "$CPID" 2>/dev/null
wait "$CPID"
is "$(cat "$T_TMP/count" 2>/dev/null)" "received $((fwd - xerr)) duplicates 0 foreign 0" \
	"H received exactly the $fwd forwarded datagrams, none twice (r1 xdp_xmit_errors: $xerr)" ||
	diag "H Udp InDatagrams +$(($(snmp "$H" Udp InDatagrams) - udp_in0)), RcvbufErrors/InCsumErrors before: $udp_snmp0, now: $(snmp "$H" Udp RcvbufErrors)/$(snmp "$H" Udp InCsumErrors)"
[ "$xerr" -eq 0 ] || diag "r1 could not hand $xerr datagrams to h0 (a full veth ring, not the filter)"

want=$T_TMP/$last
is "$(xdpr -j filter show | jq -r '.rules[].rule' | sha256sum)" "$(sha256sum <"$want")" \
	"filter show is the last list loaded ($last), word for word" ||
	diag "$(xdpr -j filter show | jq -r '.rules[].rule' | diff - "$want" | head -n 10)"
is "$(xdpr -j filter show | jq -r '.policy')" drop "filter show: policy drop"

# ================================================================ part 2
diag "part 1 done: ${SECONDS} s"

ok "filter load: proto udp dport 9100 accept (policy drop)" xdpr filter load "$T_TMP/P2"
udp_echo "$H" 9100 || abort "no UDP server on H"

# flow_keys: the xdpr_flt_flows entries (struct xdpr_flow_key and xdpr_flow,
# bpf/xdpr_shared.h), one a line: "A PORT_A B PORT_B PROTO FAMILY RULE STATE
# ORIG_B IN_IF" (bpftool, the map found through r0's program: the table in
# slot xdpr_cfg.nat_slot, byte 44, of the outer map xdpr_flt_flows).
flow_keys() {
	local prog m outer="" cfgm="" slot id
	prog=$(in_ns "$R" bpftool -j net show dev r0 2>/dev/null | jq -r '.[0].xdp[0].id // empty')
	[ -n "$prog" ] || return 1
	for m in $(bpftool -j prog show id "$prog" 2>/dev/null | jq -r '.map_ids[]'); do
		case $(bpftool -j map show id "$m" | jq -r .name) in
		xdpr_flt_flows) outer=$m ;;
		xdpr_cfg) cfgm=$m ;;
		esac
	done
	[ -n "$outer" ] && [ -n "$cfgm" ] || return 1
	slot=$(bpftool -j map dump id "$cfgm" | jq -r '.[0].value[44] | ltrimstr("0x")') || return 1
	slot=$((16#$slot & 1))
	id=$(bpftool -j map dump id "$outer" |
		jq -r --argjson s "$slot" '.[] | select(.key[0] == "0x0\($s)") | .value | map(ltrimstr("0x")) | reverse | join("")')
	[ -n "$id" ] || return 1
	for m in $((16#$id)); do
		bpftool -j map dump id "$m" >"$T_TMP/flows.json" || return 1
		jq -r '.[] | (.key | map(ltrimstr("0x") | explode | map(if . > 96 then . - 87 else . - 48 end) |
			.[0] * 16 + .[1])) as $k | (.value | map(ltrimstr("0x") | explode |
			map(if . > 96 then . - 87 else . - 48 end) | .[0] * 16 + .[1])) as $v |
			"\($k[0:4] | map(tostring) | join(".")) \($k[32] * 256 + $k[33]) \($k[16:20] | map(tostring) | join("."))" +
			" \($k[34] * 256 + $k[35]) \($k[36]) \($k[37]) \($v[16] + $v[17] * 256 + $v[18] * 65536 + $v[19] * 16777216)" +
			" \($v[20]) \($v[21]) \($v[22] + $v[23] * 256)"' "$T_TMP/flows.json"
		return
	done
	return 1
}
r0_if=$(($(ip -n "$R" -j link show r0 | jq -r '.[0].ifindex') % 65536)) # xdpr_flow keeps 16 bits
rid=$(xdpr -j filter show | jq -r '.rules[0].id')

races=0
for ((r = 1; r <= ROUNDS; r++)); do
	p=$((PORT0 + (r - 1) * NFLOWS))
	fl=$(xdpr -j filter flows flush 2>&1)
	is "$(xdpr -j filter flows | jq -r .flows)" 0 "round $r: filter flows flush leaves no flow state ($(jq -c . <<<"$fl" 2>&1))"
	rule0=$(xdpr -j filter show | jq -r '.rules[0].packets')
	snap "p2a$r"
	out=$(T_TIMEOUT=20 in_ns "$C1" "$NAT_PY" "$UDPPY" race "$NFLOWS" "$p" 10.0.2.2 9100 5 2>&1)
	rc=$?
	snap "p2b$r"
	is "$rc/$(sort <<<"$out" | tr '\n' ' ')" \
		"0/answers $((2 * NFLOWS)) flows $NFLOWS cpu0 on cpu0 sent $NFLOWS cpu1 on cpu1 sent $NFLOWS " \
		"round $r: $NFLOWS flows, each sent from CPU 0 and CPU 1 at once; C1 got both answers on every flow"
	for cpu in 0 1; do
		num "$(grew "p2a$r" "p2b$r" r0 forwarded "$cpu")" -eq "$NFLOWS" \
			"round $r: r0 forwarded the $NFLOWS datagrams of CPU $cpu on CPU $cpu"
	done
	is "$(grew "p2a$r" "p2b$r" r1 forwarded)/$(grew "p2a$r" "p2b$r" r1 drop_filter_policy)/$(grew "p2a$r" "p2b$r" r0 drop_filter_policy)" \
		"$((2 * NFLOWS))/0/0" "round $r: r1 forwarded all $((2 * NFLOWS)) answers on the flows' states, nothing met the policy"
	is "$(xdpr -j filter flows | jq -r .flows)" "$NFLOWS" "round $r: filter flows: exactly one state per flow ($NFLOWS)"
	keys=$(flow_keys)
	is "$(cut -d' ' -f1-6 <<<"$keys" | sort -u | awk -v lo="$p" -v n="$NFLOWS" '
		$1 == "10.0.1.2" && $2 >= lo && $2 < lo + n && $3 == "10.0.2.2" && $4 == 9100 && $5 == 17 && $6 == 4 { ok++ }
		END { printf "%d flows", ok }') / $(grep -c . <<<"$keys") entries" "$NFLOWS flows / $NFLOWS entries" \
		"round $r: xdpr_flt_flows holds one entry for each of the $NFLOWS flows, no other" ||
		diag "$(head -n 5 <<<"$keys")"
	is "$(cut -d' ' -f7- <<<"$keys" | sort | uniq -c | awk '{ $1 = $1 "x"; print }' | paste -sd,)" \
		"${NFLOWS}x $rid 3 0 $r0_if" \
		"round $r: every state: made by the accept rule (id $rid), both directions seen, C1 the originator, in on r0" ||
		diag "$(cut -d' ' -f7- <<<"$keys" | sort | uniq -c | head -n 5)"
	won=$(($(xdpr -j filter show | jq -r '.rules[0].packets') - rule0))
	races=$((races + won - NFLOWS))
	diag "round $r: the accept rule classified $won first packets for $NFLOWS flows (both CPUs missed the state on $((won - NFLOWS)))"
done
# that both CPUs missed a flow's state together is what this part is about
num "$races" -gt 0 "the race was run: on $races of $((ROUNDS * NFLOWS)) flows both CPUs classified the first packet at once"
is "$(filter_policy_packets)" 0 "filter show: the policy counter is still 0"
done_testing
