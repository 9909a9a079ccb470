#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_session.t - NAT sessions over time: expiry with a short timeout (gc
# removes the session, the next packet of an expired one makes a new one);
# `nat flush sessions` under a running ping; detaching the NAT interface is
# refused while it has rules, and `force` removes them with their sessions.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create ns
leak_start
nat_attach
udp_echo "$S" 7000 || fail "UDP echo server on S port 7000 did not start"

# ---- session expiry
is "$(xdpr -j nat timeout udp 2 | jq -r .udp)" 2 "nat timeout udp 2"
is "$(udp "$C1" ask 47000 3 10.0.4.2:7000)" "10.0.2.1:47000" "UDP flow from C1 port 47000"
s=$(sessions src 10.0.1.2 proto udp)
is "$(jq -r '.[] | select(.inside_port == 47000) | "\(.remote):\(.remote_port) \(.timeout)"' <<<"$s")" \
	"10.0.4.2:7000 2" "nat sessions lists it, with timeout 2"
ex0=$(nat_ctr sessions_expired)
sleep 3
gc=$(xdpr -j nat gc)
num "$(jq -r .sessions_removed <<<"$gc")" -ge 1 "after 3 s idle, nat gc removes it: $(jq -c . <<<"$gc")"
is "$(sessions src 10.0.1.2 proto udp | jq -r '[.[] | select(.inside_port == 47000)] | length')" 0 \
	"nat sessions no longer lists it"
num "$(nat_grown "$ex0" sessions_expired)" -ge 1 "sessions_expired grew"
# expired but not swept: the next packet replaces it
is "$(udp "$C1" ask 47001 3 10.0.4.2:7000)" "10.0.2.1:47001" "UDP flow from C1 port 47001"
sleep 3
ex0=$(nat_ctr sessions_expired)
ev0=$(nat_ctr sessions_evicted)
n0=$(nat_ctr sessions_new)
is "$(udp "$C1" ask 47001 3 10.0.4.2:7000)" "10.0.2.1:47001" "after 3 s idle the same flow works again"
num "$(nat_grown "$n0" sessions_new)" -ge 1 "... with a new session (sessions_new grew)"
num "$(nat_grown "$ex0" sessions_expired)" -ge 1 "... the expired session is counted in sessions_expired"
is "$(nat_grown "$ev0" sessions_evicted)" 0 "... and not in sessions_evicted (the table is not full)"
is "$(xdpr -j nat timeout udp 300 | jq -r .udp)" 300 "nat timeout udp 300"

# ---- nat flush sessions under a running ping
T_TIMEOUT=20 in_ns "$C1" ping -c 15 -i 0.2 -W 2 10.0.4.2 >"$T_TMP/ping" 2>&1 &
pinger=$!
sleep 2
n0=$(nat_ctr sessions_new)
fl=$(xdpr -j nat flush sessions)
num "$(jq -r .sessions_removed <<<"$fl" 2>/dev/null)" -ge 1 "nat flush sessions under a ping: removes >= 1 ($fl)"
sleep 0.5
is "$(sessions proto icmp | jq -r '[.[] | select(.inside == "10.0.1.2" and .remote == "10.0.4.2")] | length')" 1 \
	"the ping has a new ICMP session right after the flush"
wait "$pinger"
rx=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$T_TMP/ping")
num "${rx:-0}" -ge 14 "the ping keeps working: >= 14 of 15 replies" || diag_file "$T_TMP/ping"
num "$(nat_grown "$n0" sessions_new)" -ge 1 "sessions_new grew after the flush"
is "$(xdpr -j nat show | jq -r 'map(.dev) | join(",")')" "r1" "flush sessions keeps the rules"

leak_check "expiry and flush"

# ---- detach with NAT rules
links=$(link_json "$R")
rules=$(nat_rules)
cli_fails "link detach r1 (has NAT rules)" 1 '"r1" has NAT rules' "$R" link detach r1
like "$ERR" 'or use "force"' "the refusal says how to go on (\"force\")"
is "$(link_json "$R")" "$links" "link show unchanged"
is "$(nat_rules)" "$rules" "nat show unchanged"
cli_fails "link detach all (r1 has NAT rules)" 1 '"r1" has NAT rules' "$R" link detach all
is "$(link_json "$R" | jq -r 'map(.dev) | sort | join(",")')" "r0,r1,r2" "link show: r0, r1, r2 still attached"
is "$(nat_rules)" "$rules" "nat show unchanged"
ok "link detach r1 force" xdpr link detach r1 force
is "$(link_json "$R" | jq -r 'map(.dev) | sort | join(",")')" "r0,r2" "link show: r0, r2"
is "$(xdpr -j nat show | jq -c .)" "[]" "nat show: no rule left"
is "$(sessions)" "[]" "nat sessions: none left"
ok "link attach r1 again" xdpr_attach r1
is "$(xdpr -j nat show | jq -c .)" "[]" "after re-attach: still no rule"

done_testing
