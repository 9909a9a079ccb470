#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# filter_guard.t - no silent bypass: `xdpr link attach` refuses while the
# router's namespace has netfilter rules that forwarded packets would meet in
# the kernel and skip through XDP (nftables forward chains, iptables-nft's and
# iptables-legacy's FORWARD chains, ingress/egress chains of the devices),
# with one Error line naming them and the way on; "force" attaches anyway and
# says what is bypassed (a warning on stderr, and "netfilter_bypassed" in
# JSON).  Rules that XDP does not bypass (input, postrouting NAT) and empty
# accept chains let it attach.  A ruleset that cannot be read is an error.
. "$(dirname "$0")/lib.sh"
need nft setpriv

topo_create gd

# nf CMD...: a netfilter command in the router namespace; its failure is a
# failed test (set-up that did not happen).
nf() {
	local log=$T_TMP/nf.log
	in_ns "$R" "$@" >"$log" 2>&1 && return 0
	fail "set-up: $*"
	diag_file "$log"
	return 1
}

# attached: "r0,r1" style list of what link show lists.
attached() {
	link_json "$R" | jq -r 'map(.dev) | sort | join(",")'
}

# xdp_progs: the XDP program ids of r0 and r1 as ip link shows them ("-": none).
xdp_progs() {
	local d id out=
	for d in r0 r1; do
		id=$(ip -j -n "$R" link show "$d" | jq -r '.[0].xdp.prog.id // .[0].xdp.attached[0].prog.id // "-"')
		out+="${out:+,}$d:$id"
	done
	echo "$out"
}

# refused DESC FINDINGS [HOOKS]: `link attach r0 r1` exits 1 with exactly
# this one Error line, and nothing is attached afterwards (four tests).
refused() {
	local hooks=${3:-"netfilter's forward hook"}
	cli "$R" link attach r0 r1
	is "$RC:$OUT" "1:" "$1: exit 1, nothing on stdout"
	is "$ERR" "Error: packets forwarded by XDP bypass $hooks, and this network namespace has rules there: $2; use \"force\" to attach anyway, or express that policy as \"xdpr filter\" rules" \
		"$1: one Error line naming netfilter, what was found, \"force\" and \"xdpr filter\""
	is "$(attached)" "" "$1: link show lists nothing"
	is "$(xdp_progs)" "r0:-,r1:-" "$1: ip link shows no XDP program on r0 or r1"
	[ -z "$(attached)" ] || xdpr link detach all >/dev/null 2>&1 # keep a failure to itself
}

# attaches DESC: `link attach r0 r1` works, warns about nothing, says
# nothing is bypassed in JSON; then detached again (four tests).
attaches() {
	cli "$R" -j link attach r0 r1
	is "$RC:$ERR" "0:" "$1: link attach r0 r1 exits 0, nothing on stderr"
	is "$(jq -c '[.[].netfilter_bypassed]' <<<"$OUT" 2>&1)" "[[],[]]" \
		"$1: -j: netfilter_bypassed is empty on r0 and r1"
	is "$(attached)" "r0,r1" "$1: link show lists r0 and r1"
	ok "$1: link detach all" xdpr link detach all
}

reset_nft() {
	nf nft flush ruleset
}

FWD_DROP='table inet fw chain forward (policy drop, 0 rules)'

# ---- nothing in netfilter
attaches "no ruleset"
is "$(in_ns "$R" cat /proc/net/ip_tables_names /proc/net/ip6_tables_names | paste -sd,)" "" \
	"the check creates no iptables-legacy table (none loaded before, none after)"

# ---- nftables: inet forward chain, policy drop
nf nft add table inet fw
nf nft add chain inet fw forward '{ type filter hook forward priority 0; policy drop; }' ||
	abort "cannot create an nftables forward chain"
ok "kernel baseline: the forward policy drop stops a ping C -> S" \
	bash -c "! timeout 6 ip netns exec '$C' ping -q -c 2 -W 1 10.0.2.2"
refused "inet forward chain, policy drop" "$FWD_DROP"
cli_fails "link attach r0 nosuch: the missing device is the error" 1 \
	'Error: cannot find device "nosuch"' "$R" link attach r0 nosuch

# force: attached, and what it bypasses is said
cli "$R" link attach r0 r1 force
is "$RC" 0 "force: link attach r0 r1 force exits 0"
is "$ERR" "warning: packets forwarded by XDP bypass netfilter's forward hook: $FWD_DROP" \
	"force: one warning line on stderr names what is bypassed"
like "$OUT" '^r0: attached' "force: stdout reports r0 attached"
is "$(attached)" "r0,r1" "force: link show lists r0 and r1"
f0=$(ctr "$R" r0 forwarded)
ok "force: a ping C -> S goes through in spite of the forward policy drop" ping4 "$C" 10.0.2.2 3
num "$(grown "$f0" "$R" r0 forwarded)" -ge 3 "force: ... because XDP forwards it (r0 forwarded)"
# issue 12: the decision is kept: save says force, and that file restores past the guard
is "$(xdpr save)" "link attach r0 r1 force" "save: link attach r0 r1 force"
xdpr save >"$T_TMP/forced.conf"
ok "force: link detach all" xdpr link detach all
cli "$R" restore "$T_TMP/forced.conf"
is "$RC" 0 "restore of that file attaches in spite of the forward policy drop" || diag "$ERR"
is "$(attached)" "r0,r1" "restore: r0 and r1 attached"
sed -i 's/ force$//' "$T_TMP/forced.conf"
ok "link detach all" xdpr link detach all
cli_fails "the same file without force" 1 "packets forwarded by XDP bypass netfilter's forward hook" "$R" restore "$T_TMP/forced.conf"

cli "$R" -j link attach r0 r1 force
is "$RC" 0 "force -j: exits 0"
is "$(jq -c '[.[] | {dev, netfilter_bypassed}]' <<<"$OUT" 2>&1)" \
	"$(jq -nc --arg f "$FWD_DROP" '[{dev: "r0", netfilter_bypassed: [$f]}, {dev: "r1", netfilter_bypassed: [$f]}]')" \
	"force -j: netfilter_bypassed names the chain on r0 and r1"
is "$ERR" "warning: packets forwarded by XDP bypass netfilter's forward hook: $FWD_DROP" \
	"force -j: the same warning on stderr"
ok "force -j: link detach all" xdpr link detach all

# every attach is checked, also with interfaces already attached
ok "link attach r0 force" xdpr link attach r0 force
cli "$R" link attach r1
is "$RC" 1 "r0 attached: link attach r1 without force is refused too"
is "$(attached)" "r0" "r0 attached: r1 was not attached"
ok "link detach all" xdpr link detach all

# ---- a ruleset that cannot be read is an error, never a pass
timeout "$T_CLI_TIMEOUT" ip netns exec "$R" setpriv --bounding-set -net_admin -- \
	"$XDPR" link attach r0 r1 >"$T_TMP/np.out" 2>"$T_TMP/np.err"
is "$?:$(cat "$T_TMP/np.out")" "1:" "without CAP_NET_ADMIN: exit 1, nothing on stdout"
is "$(cat "$T_TMP/np.err")" \
	"Error: cannot read the nftables ruleset: Operation not permitted (CAP_NET_ADMIN needed)" \
	"without CAP_NET_ADMIN: one Error line, the ruleset cannot be read"
is "$(attached)" "" "without CAP_NET_ADMIN: nothing attached"

# ---- policy accept, no rules: nothing is filtered there
reset_nft
nf nft add table inet fw
nf nft add chain inet fw forward '{ type filter hook forward priority 0; policy accept; }'
attaches "forward chain, policy accept, no rules"

# ---- policy accept, one rule
nf nft add rule inet fw forward ip saddr 10.0.1.2 counter
refused "forward chain, policy accept, one rule" \
	'table inet fw chain forward (policy accept, 1 rule)'

# ---- ip6 family, two rules
reset_nft
nf nft add table ip6 f6
nf nft add chain ip6 f6 fw6 '{ type filter hook forward priority 10; }'
nf nft add rule ip6 f6 fw6 ip6 saddr 2001:db8:1::2 counter
nf nft add rule ip6 f6 fw6 counter
refused "ip6 forward chain, two rules" 'table ip6 f6 chain fw6 (policy accept, 2 rules)'

# ---- rules XDP does not bypass: input (traffic for the router), NAT postrouting
reset_nft
nf nft add table inet fw
nf nft add chain inet fw input '{ type filter hook input priority 0; policy drop; }'
nf nft add rule inet fw input ct state established,related accept
nf nft add rule inet fw input icmp type echo-request accept
nf nft add chain inet fw post '{ type nat hook postrouting priority srcnat; }'
nf nft add rule inet fw post oifname r1 masquerade
nf nft add chain inet fw forward '{ type filter hook forward priority 0; policy accept; }'
nf nft add chain inet fw regular
nf nft add rule inet fw regular counter drop
attaches "input chain policy drop, NAT postrouting, empty forward chain, a regular chain"

# ---- ingress/egress chains of the devices
reset_nft
nf nft add table netdev nd
nf nft add chain netdev nd e '{ type filter hook egress device r1 priority 0; policy drop; }'
cli "$R" link attach r0 r1
is "$RC:$(attached)" "1:" "netdev egress chain on r1: refused, nothing attached"
like "$ERR" "^Error: packets forwarded by XDP bypass netfilter's ingress/egress hooks of their devices, and this network namespace has rules there: table netdev nd chain e \(egress hook of (r1|devices libnftables does not name), policy drop, 0 rules\); use \"force\"" \
	"netdev egress chain on r1: the Error line names the chain and its hook"

# ---- iptables-nft: an ip-family table that iptables made
reset_nft
if command -v iptables-nft >/dev/null; then
	nf iptables-nft -P FORWARD DROP
	refused "iptables-nft -P FORWARD DROP" 'table ip filter chain FORWARD (policy drop, 0 rules)'
	nf iptables-nft -P FORWARD ACCEPT
	nf iptables-nft -A INPUT -p tcp --dport 22 -j ACCEPT
	attaches "iptables-nft: FORWARD accept and empty, a rule in INPUT"
	nf ip6tables-nft -A FORWARD -s 2001:db8:1::2 -j ACCEPT
	refused "ip6tables-nft -A FORWARD" 'table ip6 filter chain FORWARD (policy accept, 1 rule)'
	reset_nft
else
	fail "iptables-nft not installed: the set-up installs it (Debian package iptables; 12 checks not made)"
fi

# ---- iptables-legacy
if ! command -v iptables-legacy >/dev/null; then
	fail "iptables-legacy not installed: the set-up installs it (Debian package iptables; 13 checks not made)"
elif ! in_ns "$R" iptables-legacy -P FORWARD DROP 2>"$T_TMP/legacy.err" &&
	grep -q 'Table does not exist' "$T_TMP/legacy.err"; then
	skip 13 "this kernel has no iptables-legacy filter table: $(head -n1 "$T_TMP/legacy.err")"
else
	is "$(in_ns "$R" iptables-legacy -S FORWARD | head -n1)" "-P FORWARD DROP" \
		"iptables-legacy -P FORWARD DROP took effect"
	refused "iptables-legacy -P FORWARD DROP" \
		'iptables-legacy table filter chain FORWARD (policy DROP, 0 rules)'
	nf iptables-legacy -P FORWARD ACCEPT
	nf iptables-legacy -t nat -A POSTROUTING -o r1 -j MASQUERADE
	attaches "iptables-legacy: filter FORWARD accept and empty, a nat POSTROUTING rule"
	nf ip6tables-legacy -t mangle -A FORWARD -j ACCEPT
	nf iptables-legacy -A FORWARD -j ACCEPT
	refused "ip6tables-legacy mangle and iptables-legacy filter FORWARD rules" \
		'iptables-legacy table filter chain FORWARD (policy ACCEPT, 1 rule), ip6tables-legacy table mangle chain FORWARD (policy ACCEPT, 1 rule)'
fi

done_testing
