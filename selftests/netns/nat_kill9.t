#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_kill9.t - kill -9 during `nat add`, `nat replace` and `nat del` (issue
# 10: "leaves a rule that is listed but not applied ... a re-add says
# overlaps, or creates a duplicate").  The command kills itself at every
# step it passes (XDPR_CRASH_AT, listed in loader/nat.c; iface:written is
# the commit's entry written, its generation not yet moved: loader/core.c
# xdpr_iface_put); then:
#   - `nat show` lists the rule at most once, and exactly as the step says
#     (before the commit: the old state, from it on: the new one);
#   - what is listed is what applies: a new UDP flow from C1 reaches S with
#     the listed rule's pool address as its source, and with no rule listed
#     it is not translated (no answer: S has no route to the inside);
#   - the next locked command leaves no rule slot that `nat show` does not
#     list (other than a retired rule whose replacement is listed);
#   - the change can be made again: no "overlaps", no duplicate.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create k9
ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
udp_echo "$S" 7000 || abort "no UDP server on S"

SRC=10.0.1.0/24
A=198.51.100.1          # the rule nat add writes
B=198.51.100.2          # what nat replace changes it to
PORT=30000

# probe: a new UDP flow C1 -> S; $PROBE is the source S saw ("timeout": none)
probe() {
	PORT=$((PORT + 1))
	PROBE=$(udp "$C1" ask "$PORT" 1 10.0.4.2:7000 | cut -d: -f1)
}

# listed: the pool addresses of the rules for $SRC on r1, comma separated
# (empty: none; "nat show failed: ..." when it cannot be read, never empty)
listed() {
	local j
	j=$(xdpr -j nat show 2>&1) || { echo "nat show failed: $j"; return 1; }
	jq -r '[.[] | select(.dev == "r1" and .src == "10.0.1.0" and .src_len == 24) | .pool_first] | join(",")' \
		<<<"$j" 2>&1
}

# killed STEP WORDS...: `xdpr WORDS` killed at STEP (exit 137: the step was reached).
# At iface:written (the entry written, the generation of the program's
# copies of it not yet moved), ICMP from C2 (never translated, never
# answered) crosses r1 from both CPUs while the command runs, as traffic
# would on a router in service: the CPUs copy r1's settings during the
# command, before the entry is written.
killed() {
	local step=$1 pids=() cpu
	shift
	if [ "$step" = iface:written ]; then
		for cpu in 0 1; do
			in_ns "$C2" taskset -c "$cpu" ping -q -i 0.002 -w 10 10.0.4.2 >/dev/null 2>&1 &
			pids+=($!)
		done
		sleep 0.3
	fi
	XDPR_CRASH_AT=$step cli "$R" "$@"
	is "$RC" 137 "$step: xdpr $* is killed there"
	if [ ${#pids[@]} -gt 0 ]; then
		sleep 0.1
		kill "${pids[@]}" 2>/dev/null
		wait "${pids[@]}" 2>/dev/null
	fi
}

# consistent STEP WANT: what nat show lists is WANT (a pool address or
# empty), once; traffic follows it; after a locked command nothing is left over.
consistent() {
	local step=$1 want=$2 got
	local flow="is not translated"
	[ -n "$want" ] && flow="leaves with $want"
	got=$(listed)
	is "$got" "$want" "$step: nat show lists ${want:-no rule} for src $SRC"
	probe
	is "$PROBE" "${want:-timeout}" "$step: a new flow from C1 $flow"
	ok "$step: a locked command runs" xdpr nat gc
	is "$(listed)" "$got" "$step: its repair changes nothing that nat show lists"
	slots_clean "$step"
}

# ---- nat add: before the commit nothing, from it on the rule
for step in add:prepared add:counters add:slot add:cfg iface:written add:commit add:unmarked; do
	killed "$step" nat add out r1 src "$SRC" to "$A"
	case $step in iface:written | add:commit | add:unmarked) want=$A ;; *) want= ;; esac
	consistent "$step" "$want"
	if [ -n "$(listed)" ]; then
		ok "$step: nat del works" xdpr nat del out r1 src "$SRC"
	fi
	ok "$step: nat add again works" xdpr nat add out r1 src "$SRC" to "$A"
	is "$(listed)" "$A" "$step: one rule, listed once"
	probe
	is "$PROBE" "$A" "$step: and applied"
	ok "$step: nat del (clean-up)" xdpr nat del out r1 src "$SRC"
done

# ---- nat replace: the old rule until the commit, then the new one; the
# replaced rule's flows keep their mapping either way
for step in replace:prepared replace:counters replace:marked replace:slot replace:cfg \
	iface:written replace:commit replace:retired replace:unmarked; do
	ok "$step: nat add out r1 src $SRC to $A" xdpr nat add out r1 src "$SRC" to "$A"
	PORT=$((PORT + 1))
	sticky=$PORT
	is "$(udp "$C1" ask "$sticky" 1 10.0.4.2:7000 | cut -d: -f1)" "$A" "$step: a flow on the rule ($sticky)"
	killed "$step" nat replace out r1 src "$SRC" to "$B"
	case $step in iface:written | replace:commit | replace:retired | replace:unmarked) want=$B ;; *) want=$A ;; esac
	consistent "$step" "$want"
	is "$(udp "$C1" ask "$sticky" 1 10.0.4.2:7000 | cut -d: -f1)" "$A" \
		"$step: the flow from before keeps its mapping"
	ok "$step: nat replace again works" xdpr nat replace out r1 src "$SRC" to "$B"
	is "$(listed)" "$B" "$step: one rule, listed once"
	probe
	is "$PROBE" "$B" "$step: and applied"
	ok "$step: nat del (clean-up)" xdpr nat del out r1 src "$SRC"
	is "$(sessions src 10.0.1.2)" "[]" "$step: nat del ended every flow (the replaced rule's too)"
	slots_clean "$step: after the clean-up"
done

# ---- nat del (of a rule that replaced another, both with flows): the rule
# until the commit, then nothing, and no flow of either rule survives
for step in del:start del:marked iface:written del:commit del:gc del:freed del:orphan-gc del:orphan-freed del:cfg; do
	ok "$step: nat add out r1 src $SRC to $A" xdpr nat add out r1 src "$SRC" to "$A"
	PORT=$((PORT + 1))
	udp "$C1" ask "$PORT" 1 10.0.4.2:7000 >/dev/null
	ok "$step: nat replace to $B" xdpr nat replace out r1 src "$SRC" to "$B"
	probe
	is "$(jq -r 'length' <<<"$(sessions src 10.0.1.2)")" 2 "$step: a flow on each rule"
	killed "$step" nat del out r1 src "$SRC"
	case $step in del:start | del:marked) want=$B ;; *) want= ;; esac
	consistent "$step" "$want"
	if [ -z "$want" ]; then
		is "$(sessions src 10.0.1.2)" "[]" "$step: no flow of the deleted rules is left"
	else
		ok "$step: nat del works" xdpr nat del out r1 src "$SRC"
	fi
	ok "$step: nat add again works" xdpr nat add out r1 src "$SRC" to "$A"
	is "$(listed)" "$A" "$step: one rule, listed once"
	ok "$step: nat del (clean-up)" xdpr nat del out r1 src "$SRC"
done

is "$(xdpr -j nat show | jq -c .)" "[]" "at the end no rule is left"
slots_clean "at the end"
done_testing
