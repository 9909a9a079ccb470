#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nft_late.t - an nftables forward policy added after the attach is not
# bypassed silently.  XDP-forwarded packets never meet netfilter's forward
# hook; the attach-time guard (filter_guard.t) covers rules there before the
# attach.  A policy added later is noticed at the next change made with the
# CLI, or by xdprd within a moment (it follows nftables' notifications): the
# fast path then hands what it would forward to the kernel, where the policy
# applies (pass_nft_policy), translated where NAT applies; link show, stats,
# the metrics and xdprd's log say so.  When the rules go, XDP forwards again.
. "$(dirname "$0")/lib.sh"
need nft curl

topo_create nl

nf() {
	in_ns "$R" "$@" >"$T_TMP/nf.log" 2>&1 && return 0
	fail "set-up: $*"
	diag_file "$T_TMP/nf.log"
	return 1
}
# forwarding: what link show -j says for r0 and r1 ("xdp,xdp", "kernel,kernel").
forwarding() {
	link_json "$R" | jq -r 'map(.forwarding) | join(",")'
}
# nft_packets: the packets the rule of chain inet t f counted.
nft_packets() {
	in_ns "$R" nft -j list chain inet t f 2>/dev/null |
		jq -r '[.nftables[] | .rule? | select(.) | .expr[] | .counter? | select(.) | .packets] | add // "none"'
}
# add_policy POLICY: table inet t, forward chain f with POLICY and one counting rule, in one
# transaction (xdprd looks at each change it is told of: three commands would show it the
# chain without its rule first, and its log would name that)
add_policy() {
	local file="$T_TMP/policy.nft"

	printf 'table inet t {\n\tchain f {\n\t\ttype filter hook forward priority 0; policy %s;\n\t\tcounter\n\t}\n}\n' \
		"$1" >"$file" && nf nft -f "$file"
}
FINDING='table inet t chain f (policy drop, 1 rule)'

ok "link attach r0 r1" xdpr link attach r0 r1 || abort "cannot attach"
f0=$(ctr "$R" r0 forwarded)
ok "ping C -> S" ping4 "$C" 10.0.2.2 3
num "$(grown "$f0" "$R" r0 forwarded)" -ge 3 "... forwarded by XDP (r0 forwarded grew)"
is "$(forwarding)" "xdp,xdp" "link show -j: forwarding xdp on r0 and r1"

# ---- without xdprd: the next change made with the CLI looks
add_policy drop || abort "cannot add the nft forward chain"
ok "xdpr link sync (a change: netfilter is looked at again)" xdpr link sync
p0=$(ctr "$R" r0 pass_nft_policy)
f0=$(ctr "$R" r0 forwarded)
n0=$(nft_packets)
ok "ping C -> S fails: the forward policy drop applies" bash -c "! timeout 10 ip netns exec '$C' ping -q -c 3 -i 0.2 -W 1 10.0.2.2"
num "$(grown "$p0" "$R" r0 pass_nft_policy)" -ge 3 "r0 pass_nft_policy grew by >= 3 (handed to the kernel)"
is "$(grown "$f0" "$R" r0 forwarded)" 0 "r0 forwarded did not grow"
num "$(($(nft_packets) - n0))" -ge 3 "the nft chain counted them (the kernel's forward hook saw them)"
p0=$(ctr "$R" r0 pass_nft_policy)
ok "IPv6: ping C -> S fails too" bash -c "! timeout 10 ip netns exec '$C' ping -6 -q -c 2 -i 0.2 -W 1 2001:db8:2::2"
num "$(grown "$p0" "$R" r0 pass_nft_policy)" -ge 2 "IPv6: r0 pass_nft_policy grew by >= 2"
is "$(forwarding)" "kernel,kernel" "link show -j: forwarding kernel on r0 and r1"
is "$(link_json "$R" | jq -r '.[0].nft_policy | join(";")')" "$FINDING" "link show -j: nft_policy names the chain"
is "$(xdpr link show | tail -n 1)" "forwarded traffic goes through the kernel (pass_nft_policy): netfilter has rules XDP would bypass: $FINDING; XDP forwards again once they are gone" \
	"link show (text) says why, last"
is "$(xdpr -j stats | jq -r '"\(.forwarding) \(.nft_policy | join(";"))"')" "kernel $FINDING" "stats -j: forwarding kernel, the chain named"
is "$(xdpr stats | head -n 1)" "forwarded traffic goes through the kernel (pass_nft_policy): netfilter has rules XDP would bypass: $FINDING" \
	"stats (text) says so first"
like "$(xdpr stats -o prometheus)" $'\nxdpr_nft_policy 1\n' "stats -o prometheus: xdpr_nft_policy 1"

nf nft delete table inet t
ok "xdpr link sync (the policy is gone)" xdpr link sync
f0=$(ctr "$R" r0 forwarded)
ok "ping C -> S" ping4 "$C" 10.0.2.2 3
num "$(grown "$f0" "$R" r0 forwarded)" -ge 3 "... forwarded by XDP again"
is "$(forwarding)" "xdp,xdp" "link show -j: forwarding xdp again"
like "$(xdpr stats -o prometheus)" $'\nxdpr_nft_policy 0\n' "stats -o prometheus: xdpr_nft_policy 0"

# ---- NAT: what goes to the kernel leaves translated
ok "nat add out r1 masquerade" xdpr nat add out r1 masquerade
add_policy accept || abort "cannot add the nft forward chain"
ok "xdpr link sync (a change)" xdpr link sync
is "$(forwarding)" "kernel,kernel" "an accept chain with a rule: forwarding kernel"
cap_file=$T_TMP/s0.pcap
timeout 60 ip netns exec "$S" tcpdump -Z root -i s0 -n -U --immediate-mode -w "$cap_file" icmp 2>"$T_TMP/s0.err" &
cap=$!
wait_file_line "$T_TMP/s0.err" 'listening on' || fail "tcpdump on s0 starts"
p0=$(ctr "$R" r0 pass_nft_policy)
ok "ping C -> S through the kernel, masqueraded" ping4 "$C" 10.0.2.2 3
num "$(grown "$p0" "$R" r0 pass_nft_policy)" -ge 3 "r0 pass_nft_policy grew by >= 3"
sleep 0.3
kill -INT "$cap"
wait "$cap"
is "$(pcap_count "$cap_file" 'src net 10.0.1.0/24')" 0 "S saw no packet with C's inside source"
num "$(pcap_count "$cap_file" 'src host 10.0.2.1 and icmp[icmptype] == icmp-echo')" -ge 3 "S saw the echo requests from 10.0.2.1 (translated)"
nf nft delete table inet t
ok "nat del out r1" xdpr nat flush

# ---- attached with force: the operator accepted the bypass, XDP goes on forwarding
ok "link detach all" xdpr link detach all
add_policy drop || abort "cannot add the nft forward chain"
ok "link attach r0 r1 force (over the policy)" xdpr link attach r0 r1 force
ok "xdpr link sync (a change)" xdpr link sync
is "$(forwarding)" "xdp,xdp" "attached with force: forwarding xdp"
f0=$(ctr "$R" r0 forwarded)
ok "ping C -> S in spite of the policy drop" ping4 "$C" 10.0.2.2 3
num "$(grown "$f0" "$R" r0 forwarded)" -ge 3 "... forwarded by XDP (the bypass force accepted)"
nf nft delete table inet t
ok "link detach all" xdpr link detach all

# ---- xdprd: it follows nftables by itself
XDPRD=${XDPRD:-$(dirname "$XDPR")/xdprd}
[ -x "$XDPRD" ] || { fail "$XDPRD not built"; done_testing; }
MPORT=19487
printf 'link attach r0 r1\n' >"$T_TMP/xdpr.conf"
ip netns exec "$R" "$XDPRD" --foreground --config "$T_TMP/xdpr.conf" --metrics "127.0.0.1:$MPORT" --gc 3600 \
	>>"$T_TMP/xdprd.log" 2>&1 &
DAEMON_PID=$!
ok "xdprd runs" within 5 grep -q 'running' "$T_TMP/xdprd.log"
add_policy drop || abort "cannot add the nft forward chain"
ok "xdprd: within 3 s link show says forwarding kernel (no CLI change)" within 3 bash -c "[ \"\$(ip netns exec '$R' '$XDPR' -j link show | jq -r 'map(.forwarding) | join(\",\")')\" = kernel,kernel ]"
ok "xdprd logs it" within 3 grep -qF "netfilter has rules XDP would bypass: $FINDING; forwarded traffic goes through the kernel (pass_nft_policy) until they are gone" "$T_TMP/xdprd.log"
like "$(T_TIMEOUT=10 in_ns "$R" curl -sf "http://127.0.0.1:$MPORT/metrics")" $'\nxdpr_nft_policy 1\n' "xdprd metrics: xdpr_nft_policy 1"
p0=$(ctr "$R" r0 pass_nft_policy)
ok "ping C -> S fails (policy drop)" bash -c "! timeout 10 ip netns exec '$C' ping -q -c 2 -i 0.2 -W 1 10.0.2.2"
num "$(grown "$p0" "$R" r0 pass_nft_policy)" -ge 2 "r0 pass_nft_policy grew"
nf nft delete table inet t
ok "xdprd: within 3 s forwarding xdp again" within 3 bash -c "[ \"\$(ip netns exec '$R' '$XDPR' -j link show | jq -r 'map(.forwarding) | join(\",\")')\" = xdp,xdp ]"
ok "xdprd logs that XDP forwards again" within 3 grep -qF "netfilter has no rules XDP would bypass any more: XDP forwards again" "$T_TMP/xdprd.log"
f0=$(ctr "$R" r0 forwarded)
ok "ping C -> S" ping4 "$C" 10.0.2.2 3
num "$(grown "$f0" "$R" r0 forwarded)" -ge 3 "... forwarded by XDP"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"

done_testing
