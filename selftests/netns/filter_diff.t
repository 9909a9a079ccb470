#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# filter_diff.t - xdpr's filter against nftables as the oracle.  Random
# first-match rule sets (src/dst prefixes of every length, /0 to /32 and
# /128, and sets of them, overlapping, some with a member of the other
# family; prefixes of the other family, which never match; single ports and
# ranges with their bounds; tcp, udp, icmp, icmpv6 and protocol numbers;
# icmp-type/code; in/out interfaces; accept and drop; both policies) are loaded (a) as an nft forward chain with xdpr not attached,
# the kernel forwarding, and (b) with `xdpr filter load` on the attached
# router.  The same corpus of one-packet flows (TCP SYNs and bare ACKs, UDP
# datagrams, ICMP echo requests, GRE) goes from C through R to S, and the
# flows that reach S must be the same both times -- and what a model of
# "first match wins, else the policy" predicts.  Under xdpr every flow is
# decided in XDP: forwarded + drop_filter + drop_filter_policy grow by the
# corpus size, R's kernel forwards nothing, and each rule's packet counter in
# `filter show -j` is the number of flows it decided.  Then once more with
# 30,000 drop rules in front that match no flow, timing both sides.
#
# FILTER_DIFF_SEED=N reproduces a run (the seed is printed first);
# FILTER_DIFF_ROUNDS (default 6 per family) and FILTER_DIFF_NOISE (default
# 30000, 0: no such round) size it; FILTER_DIFF_KEEP=DIR keeps the rule
# sets, corpora, captures' verdicts and show outputs there.  filter_flows.py makes the rule sets and
# flows, sends them and reads the captures.
. "$(dirname "$0")/filter_lib.sh"

SEED=${FILTER_DIFF_SEED:-$(($(date +%s%N) % 1000000))}
ROUNDS=${FILTER_DIFF_ROUNDS:-6}
NOISE=${FILTER_DIFF_NOISE:-30000}
diag "seed $SEED: FILTER_DIFF_SEED=$SEED $0 reproduces this run"

flt_topo_create fd
W=$T_TMP/diff
ok "generate $ROUNDS IPv4 rule sets and corpora (and one behind $NOISE non-matching rules)" \
	timeout 120 "$FLT_PY" "$FLT_FLOWS" gen "$SEED" 4 "$ROUNDS" "$W/4" "$NOISE" || abort "generator failed"
ok "generate $ROUNDS IPv6 rule sets and corpora" \
	timeout 120 "$FLT_PY" "$FLT_FLOWS" gen "$SEED" 6 "$ROUNDS" "$W/6" 0 || abort "generator failed"
ROUND_LIST=()
for ((k = 0; k < ROUNDS; k++)); do
	ROUND_LIST+=("4/$k")
done
[ "$NOISE" -gt 0 ] && ROUND_LIST+=(4/noise)
for ((k = 0; k < ROUNDS; k++)); do
	ROUND_LIST+=("6/$k")
done
MAC_R0=$(mac "$R" r0)
MAC_R2=$(mac "$R" r2)

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# nflows ROUND: flows in the round's corpus.
nflows() {
	jq length "$W/$1/corpus.json"
}

# send_round ROUND SIDE: capture on s0 and s2, send the corpus from C, read
# back what arrived into $W/ROUND/seen.SIDE; sets SEND_MS.  Two tests: the
# captures are complete, and every frame that came is a corpus flow on its
# route, once, with TTL 63.
send_round() {
	local r=$1 side=$2 tag=${1//\//-}-$2 n
	if ! cap_start "$tag-s0" "$S" s0 || ! cap_start "$tag-s2" "$S" s2; then
		fail "$r ($side): captures on s0 and s2 start"
		abort "a capture did not start: the round cannot be judged"
	fi
	SEND_MS=$(T_TIMEOUT=120 in_ns "$C" "$FLT_PY" "$FLT_FLOWS" send "$W/$r/corpus.json" \
		"r0=$MAC_R0" "r2=$MAC_R2" 2>"$T_TMP/send.err") ||
		{ diag "sender failed:"; diag_file "$T_TMP/send.err"; }
	if cap_stop "$tag-s0" && cap_stop "$tag-s2"; then
		pass "$r ($side): captures on s0 and s2 are complete"
	else
		fail "$r ($side): captures on s0 and s2 are complete"
	fi
	timeout 120 "$FLT_PY" "$FLT_FLOWS" seen "$W/$r/corpus.json" \
		"s0=$T_TMP/$tag-s0.pcap" "s2=$T_TMP/$tag-s2.pcap" >"$W/$r/seen.$side" 2>"$T_TMP/seen.err" ||
		diag_file "$T_TMP/seen.err"
	n=$(jq -r '.bad | length' "$W/$r/seen.$side" 2>/dev/null)
	is "${n:-unreadable}" 0 "$r ($side): every frame at S is a corpus flow, once, on its route, TTL 63" ||
		diag "$(jq -r '.bad[]' "$W/$r/seen.$side" 2>/dev/null | head -n 20)"
}

# seen_count ROUND SIDE
seen_count() {
	jq -r '.seen | length' "$W/$1/seen.$2" 2>/dev/null || echo none
}

declare -A NFT_MS NFT_SEND XDPR_MS XDPR_SEND

# ---- (a) the oracle: nft forward chains, the kernel forwards
for r in "${ROUND_LIST[@]}"; do
	n=$(nflows "$r")
	in_ns "$R" nft flush ruleset
	t0=$(now_ms)
	T_TIMEOUT=300 ok "$r (nft): $(grep -c . "$W/$r/rules.txt") rules, policy $(cat "$W/$r/policy"), loaded into an nft forward chain" \
		in_ns "$R" nft -f "$W/$r/rules.nft" || { diag "$(head -n 60 "$W/$r/rules.nft")"; abort "nft refused a rule set"; }
	NFT_MS[$r]=$(($(now_ms) - t0))
	send_round "$r" nft
	NFT_SEND[$r]=$SEND_MS
	in_ns "$R" nft -j list table inet xdpr_diff >"$W/$r/nft.json" 2>"$T_TMP/nft.err" || diag_file "$T_TMP/nft.err"
	timeout 60 "$FLT_PY" "$FLT_FLOWS" check "$W/$r" "nft=$W/$r/seen.nft" "nftctr=$W/$r/nft.json" \
		>"$W/$r/check.nft" 2>&1
	# the oracle's own checks: a failure here is the test's, not xdpr's
	like "$(tail -n 1 "$W/$r/check.nft")" "^END $n flows checked" "$r (nft): the checker read every flow" ||
		diag_file "$W/$r/check.nft"
	is "$(grep -c '^MODEL_NFT' "$W/$r/check.nft")" 0 "$r (nft): the flows that reach S are those the model passes ($(seen_count "$r" nft) of $n)" ||
		diag "$(grep -v '^NFTCTR' "$W/$r/check.nft" | head -n 20)"
	is "$(grep -c '^NFTCTR' "$W/$r/check.nft")" 0 "$r (nft): each rule's nft counter is the number of flows the model says it decided" ||
		diag "$(grep -v '^MODEL' "$W/$r/check.nft" | head -n 20)"
done
in_ns "$R" nft flush ruleset

# ---- (b) xdpr's filter on the attached router
flt_attach
for r in "${ROUND_LIST[@]}"; do
	n=$(nflows "$r")
	policy=$(cat "$W/$r/policy")
	read -r _ want_acc _ want_drop _ want_pol _ _ _ want_bypol _ want_states <<<"$("$FLT_PY" "$FLT_FLOWS" model "$W/$r")"
	while read -r name members; do
		# shellcheck disable=SC2086 # the members are words
		ok "$r (xdpr): set add $name $members" xdpr set add "$name" $members
	done <"$W/$r/sets.txt"
	ok "$r (xdpr): filter policy $policy" xdpr filter policy "$policy"
	t0=$(now_ms)
	T_CLI_TIMEOUT=300 ok "$r (xdpr): filter load of $(grep -c . "$W/$r/rules.txt") rules" \
		xdpr filter load "$W/$r/rules.txt" || continue
	XDPR_MS[$r]=$(($(now_ms) - t0))
	# no flow state left from the rounds before (their flows are other flows: a
	# count of states made by this round only)
	ok "$r (xdpr): filter flows flush" xdpr filter flows flush
	k0=$(kfwd)
	f0=$(rsum forwarded r0 r2)
	d0=$(rsum drop_filter r0 r2)
	p0=$(rsum drop_filter_policy r0 r2)
	s0=$(flt_show)
	b0=$(rsum forwarded r1 r3)
	send_round "$r" xdpr
	XDPR_SEND[$r]=$SEND_MS
	df=$(delta "$f0" "$(rsum forwarded r0 r2)")
	dd=$(delta "$d0" "$(rsum drop_filter r0 r2)")
	dp=$(delta "$p0" "$(rsum drop_filter_policy r0 r2)")
	if [[ "$df$dd$dp" =~ ^[0-9]+$ ]]; then
		is "$((df + dd + dp))" "$n" "$r (xdpr): forwarded + drop_filter + drop_filter_policy on r0, r2 grew by the $n flows sent" ||
			diag "forwarded +$df, drop_filter +$dd, drop_filter_policy +$dp"
	else
		fail "$r (xdpr): forwarded + drop_filter + drop_filter_policy on r0, r2 grew by the $n flows sent"
		diag "counters unreadable: forwarded $df, drop_filter $dd, drop_filter_policy $dp"
	fi
	is "$df" "$(seen_count "$r" xdpr)" "$r (xdpr): forwarded grew by as many flows as reached S"
	is "$dd/$dp" "$want_drop/$want_pol" "$r (xdpr): drop_filter/drop_filter_policy grew as the model says (of $want_acc accepted)"
	is "$(delta "$k0" "$(kfwd)")" 0 "$r (xdpr): R's kernel forwarded nothing (ForwDatagrams flat)"
	is "$(delta "$b0" "$(rsum forwarded r1 r3)")" 0 "$r (xdpr): nothing came back from S (forwarded on r1, r3 flat)"
	xdpr -j filter show >"$W/$r/show.json" 2>"$T_TMP/show.err" || diag_file "$T_TMP/show.err"
	is "$(delta "$(jq -r .packets <<<"$s0")" "$(jq -r .packets "$W/$r/show.json")")" "$want_bypol" \
		"$r (xdpr): the policy's counter grew by the $want_bypol flows no rule matched"
	is "$(jq -r '.flows + .flows_expired' "$W/$r/show.json")" "$want_states" \
		"$r (xdpr): the round made $want_states flow states: one per accepted flow that may start one (SYN, ACK, UDP, echo, ...)"
	timeout 60 "$FLT_PY" "$FLT_FLOWS" check "$W/$r" "nft=$W/$r/seen.nft" "xdpr=$W/$r/seen.xdpr" \
		"show=$W/$r/show.json" >"$W/$r/check" 2>&1
	like "$(tail -n 1 "$W/$r/check")" "^END $n flows checked" "$r (xdpr): the checker read every flow" ||
		diag_file "$W/$r/check"
	is "$(grep -c '^DIFF' "$W/$r/check")" 0 "$r: nft and xdpr let the same $(seen_count "$r" nft) of $n flows through" ||
		{
			diag "$(grep '^DIFF' "$W/$r/check" | head -n 30)"
			diag "rules (policy $policy):"
			diag "$(head -n 80 "$W/$r/rules.txt" | nl -ba)"
		}
	is "$(grep -c '^MODEL_XDPR' "$W/$r/check")" 0 "$r (xdpr): the flows that reach S are those the model passes" ||
		diag "$(grep '^MODEL_XDPR' "$W/$r/check" | head -n 20)"
	is "$(grep -c '^COUNTERS' "$W/$r/check")" 0 "$r (xdpr): filter show -j counts, per rule, the flows it decided" ||
		diag "$(grep '^COUNTERS' "$W/$r/check" | head -n 20)"
done

for r in "${ROUND_LIST[@]}"; do
	diag "$(printf '%-8s %5d rules: nft load %6s ms, traffic %5s ms | xdpr load %6s ms, traffic %5s ms' \
		"$r" "$(grep -c . "$W/$r/rules.txt")" "${NFT_MS[$r]:-?}" "${NFT_SEND[$r]:-?}" \
		"${XDPR_MS[$r]:-?}" "${XDPR_SEND[$r]:-?}")"
done
[ -n "${FILTER_DIFF_KEEP:-}" ] && cp -r "$W" "$FILTER_DIFF_KEEP"
done_testing
