#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_resize.t - `nat limit sessions N` (issue 16): the NAT tables take a new
# size live.  A paced TCP stream through the masquerade runs while the size
# goes 65,536 -> 262,144 -> 1,048,576 -> 65,536; it arrives whole, keeps its
# outside port, and the kernel's memory count of the tables follows the size.
# Refusals leave everything as it was: bad words (exit 2), a size the memory
# cgroup of the caller cannot hold, a size smaller than what the tables hold.
# A resize killed at each of its steps leaves the old size or the new one,
# whole; the freeze it leaves ends at its deadline or at the next locked
# command (new flows drop as drop_nat_resizing until then).
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create rs
nat_attach
udp_echo "$S" 7000 || abort "no UDP server on S"

# size: the sessions the tables hold now
size() { xdpr -j nat limit | jq -r '.sessions'; }
# mem FIELD: a field of -j nat limit's "memory"
mem() { xdpr -j nat limit | jq -r --arg f "$1" '.memory[$f]'; }
# port_of PORT: the outside port of C1's TCP session to S:PORT
port_of() {
	sessions proto tcp | jq -r --argjson p "$1" '[.[] | select(.remote_port == $p) | .outside_port] | join(",")'
}

is "$(size)" 65536 "a new router's tables hold 65536 sessions"
like "$(xdpr nat show | head -1)" '^session table: 65536 sessions \([0-9]+ halves in use\), [0-9.]+ MiB in use, up to [0-9.]+ MiB when full$' \
	"nat show starts with the table's size and memory"
full0=$(mem full)
fixed0=$(mem fixed)
num "$fixed0" -gt 0 "-j nat limit: memory.fixed > 0"
num "$full0" -gt "$fixed0" "-j nat limit: memory.full > memory.fixed"

# ---- words
cli_fails "nat limit sessions 10" 2 'invalid sessions "10" (1024 to 16777216)' "$R" nat limit sessions 10
cli_fails "nat limit sessions 99999999" 2 'invalid sessions "99999999" (1024 to 16777216)' "$R" nat limit sessions 99999999
cli_fails "nat limit sessions x" 2 'invalid sessions "x"' "$R" nat limit sessions x
cli_fails "nat limit sessions" 2 '"sessions" needs a value' "$R" nat limit sessions
is "$(size)" 65536 "after the refusals: still 65536"

# ---- live, under a TCP stream
stream_start "$C1" "$S" 10.0.4.2 5100 60 # 60 x 64 KiB over 6 s
sleep 1
p0=$(port_of 5100)
like "$p0" '^[0-9]+$' "the stream has one session (outside port $p0)"
x0=$(nat_ctr translated_out)
for n in 262144 1048576 65536; do
	cli "$R" -j nat limit sessions "$n"
	is "$RC" 0 "nat limit sessions $n: exit 0" || diag "$ERR"
	is "$(jq -r '.sessions' <<<"$OUT")" "$n" "nat limit sessions $n: -j says sessions $n"
	num "$(jq -r '.resized.sessions_moved' <<<"$OUT")" -ge 1 "nat limit sessions $n: the stream's session moved"
	num "$(jq -r '.resized.frozen_ms' <<<"$OUT")" -lt 5000 "nat limit sessions $n: new sessions waited < 5 s"
	is "$(port_of 5100)" "$p0" "after the resize to $n: the stream keeps outside port $p0"
	if [ "$n" = 1048576 ]; then
		num "$(mem fixed)" -gt $((fixed0 * 4)) "1048576 sessions: the empty tables take > 4x the memory of 65536"
		num "$(mem full)" -gt $((full0 * 8)) "1048576 sessions: the full tables would take > 8x the memory of 65536"
	fi
	sleep 0.7
done
stream_check
num "$(nat_grown "$x0" translated_out)" -ge 500 "the stream was translated in XDP throughout"
is "$(mem fixed)" "$fixed0" "back at 65536: the same fixed memory as at the start"
is "$(ctr "$R" r0 drop_nat_resizing)" 0 "no packet of the stream was dropped for a resize"

# ---- the machine (here: the caller's memory cgroup, v2 or v1) cannot hold it
CG= LIMIT=
if [ -e /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
	CG=/sys/fs/cgroup/xdpr-$T_ID-rs LIMIT=memory.max
elif [ -d /sys/fs/cgroup/memory ]; then
	CG=/sys/fs/cgroup/memory/xdpr-$T_ID-rs LIMIT=memory.limit_in_bytes
fi
if [ -n "$CG" ] && mkdir "$CG" 2>/dev/null; then
	echo $((64 << 20)) >"$CG/$LIMIT"
	# nsenter, not ip netns exec: that one mounts a new /sys, without the cgroup files
	out=$(bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$CG" \
		timeout 30 nsenter --net="/run/netns/$R" "$XDPR" nat limit sessions 4194304 2>&1)
	rc=$?
	is "$rc" 1 "in a 64 MiB memory cgroup: nat limit sessions 4194304 exits 1"
	like "$out" '^Error: 4194304 sessions need up to [0-9.]+ MiB when the tables are full; [0-9.]+ MiB is available' \
		"... and says how much it needs and how much there is"
	have=$(sed -n 's/.* \([0-9.]*\) MiB is available.*/\1/p' <<<"$out")
	num "${have%.*}" -le 128 "... and the room it counts is the cgroup's (${have} MiB: 64 MiB and the old tables)"
	rmdir "$CG" 2>/dev/null
else
	skip 2 "no memory cgroup can be made here"
fi
is "$(size)" 65536 "after the refusal: still 65536"

# ---- smaller than what the tables hold
ok "nat limit host 100000" xdpr nat limit host 100000
T_TIMEOUT=60 udp_spray "$C1" 10.0.4.2:7000 20000 21199 || diag "the sender failed"
sleep 0.5
num "$(mem session_halves)" -ge 2400 "1200 UDP flows: >= 2400 session halves"
cli_fails "nat limit sessions 1024 over 1200 sessions" 1 "holds more than the new size allows" "$R" nat limit sessions 1024
is "$(size)" 65536 "after the refusal: still 65536"
num "$(mem session_halves)" -ge 2400 "the sessions are all still there"
is "$(udp "$C1" ask 20001 2 10.0.4.2:7000)" "10.0.2.1:20001" "an old flow still answers through its session"
ok "nat flush sessions" xdpr nat flush sessions
is "$(xdpr -j nat show | jq -c '[.[].held[]?.ports] | add // 0')" 0 \
	"after nat flush sessions: no port held, none in hold-down"
ok "nat limit sessions 1024 after nat flush sessions (what its refusal advised)" xdpr nat limit sessions 1024
is "$(size)" 1024 "the tables hold 1024 sessions"
ok "nat limit sessions 65536" xdpr nat limit sessions 65536

# ---- the filter's flow states are sized and moved with the sessions (the
# table is a per-CPU LRU: a copy from one CPU would keep half of them, silently)
udp_echo "$C2" 7100 || abort "no UDP server on C2"
ok "filter policy drop" xdpr filter policy drop
ok "filter add in r0 out r2 proto udp dport 7100 accept" xdpr filter add in r0 out r2 proto udp dport 7100 accept
T_TIMEOUT=60 udp_spray "$C1" 10.0.3.2:7100 31000 32999 || diag "the sender failed"
sleep 0.5
nf=$(xdpr -j filter flows | jq '.flows')
num "$nf" -ge 1900 "C1 -> C2:7100 (no NAT) from 2000 ports: $nf flow states"
num "$(xdpr -j filter flows | jq '.flows_max')" -ge 262144 "in a table of >= 262144"
ok "nat limit sessions 1048576" xdpr nat limit sessions 1048576
is "$(xdpr -j filter flows | jq '.flows')" "$nf" "after nat limit sessions 1048576: all $nf flow states moved"
num "$(xdpr -j filter flows | jq '.flows_max')" -ge 1048576 "their table holds >= 1048576"
is "$(udp "$C1" ask 31000 2 10.0.3.2:7100)" "10.0.1.2:31000" "a flow still passes"
ok "nat limit sessions 65536" xdpr nat limit sessions 65536
is "$(xdpr -j filter flows | jq '.flows')" "$nf" "back to 65536 sessions: all $nf flow states kept"
ok "filter flush" xdpr filter flush
ok "filter policy accept" xdpr filter policy accept
ok "filter flows flush" xdpr filter flows flush

# ---- killed at each step
for step in created frozen copied switched; do
	before=$(size)
	[ "$before" = 65536 ] && want=131072 || want=65536
	XDPR_CRASH_AT=limit:$step cli "$R" nat limit sessions "$want"
	is "$RC" 137 "limit:$step: nat limit sessions $want is killed there"
	case $step in switched) exp=$want ;; *) exp=$before ;; esac
	is "$(size)" "$exp" "limit:$step: the tables hold $exp sessions"
	if [ "$step" != created ]; then
		is "$(mem frozen)" true "limit:$step: the tables are frozen"
		d0=$(ctr "$R" r0 drop_nat_resizing)
		udp "$C1" ask 0 1 10.0.4.2:7000 >/dev/null
		num "$(grown "$d0" "$R" r0 drop_nat_resizing)" -ge 1 "limit:$step: a new flow meanwhile drops as drop_nat_resizing"
		if [ "$step" = copied ]; then
			sleep 10.5 # the deadline ends it
		else
			ok "limit:$step: a locked command runs (and lifts the dead freeze)" xdpr nat gc
		fi
	fi
	is "$(mem frozen)" false "limit:$step: no freeze is left"
	like "$(udp "$C1" ask 0 3 10.0.4.2:7000)" '^10\.0\.2\.1:[0-9]+$' "limit:$step: a new flow is translated"
	ok "limit:$step: nat limit sessions $want works" xdpr nat limit sessions "$want"
	is "$(size)" "$want" "limit:$step: the tables hold $want sessions"
done

done_testing
