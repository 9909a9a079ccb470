#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_100k.t - more sessions than the old fixed table (issue 16): with
# `nat limit sessions 131072`, 100,000 UDP flows from C2 (two addresses,
# 50,000 source ports each, each address its own pool address) are held at once, counted one by one in
# `nat sessions`; a paced TCP stream from C1 runs while they are created,
# while the tables are resized with them in (131,072 -> 262,144), while
# they expire (the udp timeout lowered from 120 s to 5 s: a timeout applies
# to the sessions there are) and while `nat gc` removes them, and arrives
# whole.  No packet is dropped for a full table.
. "$(dirname "$0")/nat_lib.sh"

N=50000 # flows per C2 address

nat_topo_create hk
ip -n "$C2" addr add 10.0.3.3/24 dev c2
ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
# an outside address has 64,512 UDP ports: one pool address for each C2 address
ok "nat add out r1 masquerade src 10.0.1.0/24" xdpr nat add out r1 masquerade src 10.0.1.0/24
ok "nat add out r1 src 10.0.3.2/32 to 198.51.100.1" xdpr nat add out r1 src 10.0.3.2/32 to 198.51.100.1
ok "nat add out r1 src 10.0.3.3/32 to 198.51.100.2" xdpr nat add out r1 src 10.0.3.3/32 to 198.51.100.2
udp_echo "$S" 7000 || abort "no UDP server on S"
ok "nat limit sessions 131072 host 131072" xdpr nat limit sessions 131072 host 131072
# (long enough that none expires while they are made and listed: on a busy
# host, 4 passes of 100,000 datagrams left 99,397 unexpired at 5 s)
ok "nat timeout udp 120" xdpr nat timeout udp 120

# count_c2: live sessions of C2's two addresses
count_c2() {
	xdpr -j nat sessions proto udp | jq '[.[] | select(.inside == "10.0.3.2" or .inside == "10.0.3.3")] | length'
}

stream_start "$C1" "$S" 10.0.4.2 5200 250 # 250 x 64 KiB over 25 s
sleep 1
p0=$(sessions proto tcp | jq -r '[.[] | select(.remote_port == 5200) | .outside_port] | join(",")')
like "$p0" '^[0-9]+$' "the stream has its session (outside port $p0)"
full0=$(ctr "$R" r2 drop_nat_full)

# a pass: one datagram from each endpoint; passes until every flow has its
# session (a datagram a full veth ring dropped is sent again; an existing
# flow's only refreshes), 4 at most
for pass in 1 2 3 4; do
	t0=$SECONDS
	udp_spray "$C2" 10.0.4.2:7000 10000 $((10000 + N - 1)) 10.0.3.2 10.0.3.3 || diag "pass $pass: the sender failed"
	c=$(count_c2)
	diag "pass $pass: $c sessions listed $((SECONDS - t0)) s after it began"
	[ "$c" -ge $((2 * N)) ] && break
done
diag "$pass passes for $c sessions"
num "$c" -ge 100000 "100,000 UDP sessions at once (nat sessions lists $c)"
num "$(xdpr -j nat limit | jq '.memory.session_halves')" -ge 200000 "-j nat limit: >= 200,000 halves in use"
is "$(grown "$full0" "$R" r2 drop_nat_full)" 0 "no flow was dropped for a full table (r2 drop_nat_full did not grow)"
is "$(sessions proto tcp | jq -r '[.[] | select(.remote_port == 5200) | .outside_port] | join(",")')" "$p0" \
	"the stream kept its session while they were made"

# the tables take a new size with them all in it
cli "$R" -j nat limit sessions 262144
is "$RC" 0 "nat limit sessions 262144 with $c sessions: exit 0" || diag "$ERR"
num "$(jq '.resized.sessions_moved' <<<"$OUT")" -ge 100000 "the resize moved the >= 100,000 sessions"
diag "resize of $(jq '.resized.sessions_moved' <<<"$OUT") sessions: new sessions waited $(jq '.resized.frozen_ms' <<<"$OUT") ms"
# the table's own count: listing 100k sessions takes seconds, and the first
# ones may pass their 5 s timeout by then (expired is not gone: swept below)
num "$(xdpr -j nat limit | jq '.memory.session_halves')" -ge 200000 \
	"after the resize: the new tables hold the >= 200,000 halves"

ok "nat timeout udp 5" xdpr nat timeout udp 5
sleep 6 # past the UDP timeout
t0=$(date +%s%N)
cli "$R" -j nat gc
t1=$(date +%s%N)
is "$RC" 0 "nat gc after the timeout: exit 0" || diag "$ERR"
diag "nat gc of $(jq '.sessions_removed' <<<"$OUT") expired sessions: $(((t1 - t0) / 1000000)) ms (the command)"
num "$(jq '.sessions_removed' <<<"$OUT")" -ge 100000 "nat gc removed the >= 100,000 expired sessions"
is "$(count_c2)" 0 "no C2 session is left"
is "$(sessions proto tcp | jq -r '[.[] | select(.remote_port == 5200) | .outside_port] | join(",")')" "$p0" \
	"the stream kept its session while they expired"
stream_check

done_testing
