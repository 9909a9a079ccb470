#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_fwd_diff.t - port forwards (issue 14) against the kernel as the oracle.
# A random (seeded) set of forwards on r1 -- single ports to the same or
# another port, ranges to ranges (in order), ranges to one port; tcp, udp or
# both; to r1's 10.0.2.1 (addr omitted or given) or to the pool address
# 198.51.100.5 (on R's lo; H routes 198.51.100.0/24 to R); to C1 or C2 --
# is built twice on the NAT topology (nat_lib.sh): once as nft `dnat` rules
# in a nat prerouting chain with xdpr not attached, once as `xdpr nat add
# in` forwards.  The same corpus of one-packet inbound flows (a TCP SYN from
# connect(), or one UDP datagram; each from its own client port) goes from
# the outside clients H (10.0.2.2) and S (10.0.4.2) to forwarded ports, the
# ports next to each range, the other address, the other protocol and
# random ports.  Captured at the inside servers (c1, c2): what arrives,
# source and destination address and port per flow -- the same set both
# times, and the set the model predicts.  Captured at the clients (h0, s0):
# every reply about a corpus flow (SYN-ACK, RST, UDP answer with what the
# server saw, ICMP errors with their quoted packet) -- the same set both
# times.  Inside servers listen on the forwards' inside ports except those
# that are 0 mod 7 (those answer RST / port unreachable).  Under xdpr the
# router's kernel forwards none of it (Ip ForwDatagrams flat).
#
# NAT_FWD_DIFF_SEED=N reproduces a run (the seed is printed first),
# NAT_FWD_DIFF_N sets the number of forwards (default 8), NAT_FWD_DIFF_KEEP=DIR
# keeps the forwards, corpus and verdicts.
. "$(dirname "$0")/nat_lib.sh"
need nft

SEED=${NAT_FWD_DIFF_SEED:-$(($(date +%s%N) % 1000000))}
NF=${NAT_FWD_DIFF_N:-8}
diag "seed $SEED: NAT_FWD_DIFF_SEED=$SEED $0 reproduces this run"
PYF=$XDPR_ROOT/selftests/netns/nat_fwd_diff.py
W=$T_TMP/diff
ok "generate $NF forwards and a corpus (seed $SEED)" timeout 60 "$NAT_PY" "$PYF" gen "$SEED" "$NF" "$W" ||
	abort "generator failed"
diag "forwards (xdpr words):"
diag "$(cat "$W/xdpr.txt")"
diag "corpus: $(jq length "$W/corpus.json") flows, $(grep -c . "$W/expect.txt") of them forwarded by the model"

# side TAG MODE: one topology, forwards as MODE (kernel or xdpr), the corpus
# sent, verdicts into $W/inside.MODE and $W/replies.MODE.
side() {
	local tag=$1 mode=$2 k0 k1 k c n pids=() line
	nat_topo_create "$tag"
	ip -n "$R" addr add 198.51.100.5/32 dev lo
	for c in C1:10.0.1.2 C2:10.0.3.2; do
		n=${c%%:*}
		rm -f "$W/serving.${c#*:}"
		timeout 300 ip netns exec "${!n}" "$NAT_PY" "$PYF" serve "${c#*:}" "$W" 2>"$T_TMP/serve.$tag.err" &
	done
	if ! wait_file_line "$W/serving.10.0.1.2" udp || ! wait_file_line "$W/serving.10.0.3.2" udp; then
		diag_file "$T_TMP/serve.$tag.err"
		abort "$mode: inside servers did not start"
	fi
	if [ "$mode" = kernel ]; then
		ok "kernel: nft -f the forwards as dnat rules in R" in_ns "$R" nft -f "$W/nft.txt" ||
			abort "nft refused the ruleset"
	else
		ok "xdpr: link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
		c=0
		while read -r line; do
			# shellcheck disable=SC2086 # words
			xdpr nat add in r1 $line >"$T_TMP/add.out" 2>&1 || { diag "nat add in r1 $line:"; diag_file "$T_TMP/add.out"; c=$((c + 1)); }
		done <"$W/xdpr.txt"
		is "$c" 0 "xdpr: every forward added (nat add in r1 ...)" || abort "forwards not added: nothing to compare"
		is "$(xdpr -j nat show | jq '[.[] | select(.action == "forward")] | length')" "$NF" \
			"xdpr: -j nat show lists $NF forwards"
	fi
	if ! cap_start "$tag-c1" "$C1" c1 tcp or udp || ! cap_start "$tag-c2" "$C2" c2 tcp or udp ||
		! cap_start "$tag-h0" "$H" h0 dst host 10.0.2.2 and '(tcp or udp or icmp)' ||
		! cap_start "$tag-s0" "$S" s0 dst host 10.0.4.2 and '(tcp or udp or icmp)'; then
		fail "$mode: the four captures start"
		abort "a capture did not start: the side cannot be judged"
	fi
	k0=$(snmp "$R" Ip ForwDatagrams)
	for c in H:10.0.2.2 S:10.0.4.2; do
		n=${c%%:*}
		T_TIMEOUT=60 in_ns "${!n}" "$NAT_PY" "$PYF" send "$W" "${c#*:}" 2>"$T_TMP/send.$tag.${c%%:*}" &
		pids+=($!)
	done
	c=0
	for k1 in "${pids[@]}"; do
		wait "$k1" || c=$((c + 1))
	done
	is "$c" 0 "$mode: both clients sent their flows" || { diag_file "$T_TMP/send.$tag.H"; diag_file "$T_TMP/send.$tag.S"; }
	sleep 0.5
	k1=$(snmp "$R" Ip ForwDatagrams)
	c=0
	for k in c1 c2 h0 s0; do
		cap_stop "$tag-$k" || c=$((c + 1))
		cap_json "$tag-$k" >"$W/$tag-$k.json" || c=$((c + 1))
	done
	is "$c" 0 "$mode: the four captures are complete and readable"
	"$NAT_PY" "$PYF" inside "$W" "$W/$tag-c1.json" "$W/$tag-c2.json" >"$W/inside.$mode" 2>"$T_TMP/v.err" ||
		diag_file "$T_TMP/v.err"
	"$NAT_PY" "$PYF" replies "$W" "$W/$tag-h0.json" "$W/$tag-s0.json" >"$W/replies.$mode" 2>"$T_TMP/v.err" ||
		diag_file "$T_TMP/v.err"
	num "$(grep -c . "$W/replies.$mode")" -ge "$(jq length "$W/corpus.json")" \
		"$mode: every corpus flow got at least one reply at its client ($(grep -c . "$W/replies.$mode") replies)"
	if [ "$mode" = kernel ]; then
		num "$((k1 - k0))" -ge "$(grep -c . "$W/expect.txt")" "kernel: R's kernel forwarded the flows (Ip ForwDatagrams grew)"
	else
		is "$((k1 - k0))" 0 "xdpr: R's kernel forwarded nothing (Ip ForwDatagrams flat)"
		diag "$(xdpr nat show 2>&1 | head -n 60)"
	fi
}

# keep: copy the work directory to $NAT_FWD_DIFF_KEEP (if set).
keep() {
	[ -z "$NAT_FWD_DIFF_KEEP" ] || { mkdir -p "$NAT_FWD_DIFF_KEEP" && cp -r "$W"/. "$NAT_FWD_DIFF_KEEP"/; }
}

side dk kernel
keep
ok "kernel: the inside servers saw exactly what the model predicts (the oracle does what the forwards say)" \
	diff -u "$W/expect.txt" "$W/inside.kernel" || diag "$(diff "$W/expect.txt" "$W/inside.kernel" | head -n 30)"
side dx xdpr
ok "xdpr: the inside servers saw the same flows as under the kernel (source and destination, address and port)" \
	diff -u "$W/inside.kernel" "$W/inside.xdpr" || diag "$(diff "$W/inside.kernel" "$W/inside.xdpr" | head -n 40)"
ok "xdpr: the outside clients got the same replies as under the kernel" \
	diff -u "$W/replies.kernel" "$W/replies.xdpr" || diag "$(diff "$W/replies.kernel" "$W/replies.xdpr" | head -n 40)"

keep
done_testing
