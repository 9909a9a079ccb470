#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_fwd_addr.t - a port forward given no addr follows its interface's
# address, as masquerade does, on the NAT topology (nat_lib.sh): r1
# (10.0.2.1) the outside interface, C1 (10.0.1.2) the inside server, H
# (10.0.2.2) the outside client.
#
#   - `nat add in r1 proto tcp dport 8080 to 10.0.1.2:80` (no addr) takes
#     r1's address: `-j nat show` says addr 10.0.2.1 and addr_follows, `save`
#     prints it without addr; a forward with addr 10.0.2.1 does not follow;
#   - without xdprd: r1's address changed (ip addr del OLD; ip addr add NEW),
#     then `xdpr link sync`: H reaches C1 through NEW:8080, OLD:8080 no longer
#     forwards (the kernel gets the packet: no answer), `nat show` says NEW;
#   - with xdprd: the address changed again, the daemon moves the forward by
#     itself within seconds (no xdpr command) and logs it: NEW2:8080 reaches
#     C1, NEW:8080 no longer does.
. "$(dirname "$0")/nat_lib.sh"
XDPRD=${XDPRD:-$(dirname "$XDPR")/xdprd}

nat_topo_create fa

# fwd_json PORT FIELD: one field of the forward whose outside range starts at PORT
fwd_json() {
	xdpr -j nat show 2>/dev/null | jq -r --argjson p "$1" --arg f "$2" \
		'[.[] | select(.action == "forward" and .port_min == $p) | .[$f]][0] | tostring'
}

# reaches ADDR PORT: H's connection to ADDR:PORT is answered by C1 ("10.0.2.2:...")
reaches() {
	[[ "$(tcp_ask "$H" "$1" "$2")" == 10.0.2.2:* ]]
}

# reaches_within SECONDS ADDR PORT: reaches, tried for up to SECONDS
reaches_within() {
	local i
	for ((i = 0; i < $1 * 2; i++)); do
		reaches "$2" "$3" && return 0
		sleep 0.5
	done
	return 1
}

# r1_addr OLD NEW: r1's address changed as an operator or a DHCP client would
r1_addr() {
	ip -n "$R" addr del "$1/24" dev r1 && ip -n "$R" addr add "$2/24" dev r1
}

ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
ok "nat add in r1 proto tcp dport 8080 to 10.0.1.2:80 (no addr)" \
	xdpr nat add in r1 proto tcp dport 8080 to 10.0.1.2:80
ok "nat add in r1 proto tcp addr 10.0.2.1 dport 8081 to 10.0.1.2:80" \
	xdpr nat add in r1 proto tcp addr 10.0.2.1 dport 8081 to 10.0.1.2:80
is "$(fwd_json 8080 addr) $(fwd_json 8080 addr_follows)" "10.0.2.1 true" \
	"-j nat show: the forward without addr is on r1's address and follows it"
is "$(fwd_json 8081 addr) $(fwd_json 8081 addr_follows)" "10.0.2.1 false" \
	"-j nat show: the forward with addr does not follow"
is "$(xdpr save | grep '^nat add in')" \
	"nat add in r1 proto tcp dport 8080 to 10.0.1.2:80
nat add in r1 proto tcp addr 10.0.2.1 dport 8081 to 10.0.1.2:80" \
	"save prints each forward as given (no addr: none)"

tcp_echo "$C1" 80 || abort "no TCP server on C1"
ok "H reaches C1 through 10.0.2.1:8080" reaches 10.0.2.1 8080

# ---- without xdprd: the next xdpr command that syncs moves the forward
r1_addr 10.0.2.1 10.0.2.9 || abort "cannot change r1's address"
cli "$R" link sync
is "$RC" 0 "link sync after r1's address changed: exit 0"
like "$OUT" 'forward [0-9]+ on "r1" follows its address: 10\.0\.2\.1 to 10\.0\.2\.9' \
	"link sync says the forward moved"
is "$(fwd_json 8080 addr)" "10.0.2.9" "-j nat show: the forward is on the new address"
is "$(fwd_json 8081 addr)" "10.0.2.1" "-j nat show: the forward with addr stays on its address"
ok "H reaches C1 through the new address 10.0.2.9:8080" reaches 10.0.2.9 8080
ok "the old address 10.0.2.1:8080 no longer forwards" not reaches 10.0.2.1 8080
is "$(xdpr save | grep -c '^nat add in r1 proto tcp dport 8080 to 10.0.1.2:80$')" 1 \
	"save still prints the forward without addr"

# ---- with xdprd: it follows the kernel, no command needed
if [ ! -x "$XDPRD" ]; then
	skip 4 "$XDPRD not built"
else
	CONF=$T_TMP/xdpr.conf
	cat >"$CONF" <<'EOF'
link attach r0 r1 r2
nat add in r1 proto tcp dport 8080 to 10.0.1.2:80
nat add in r1 proto tcp addr 10.0.2.1 dport 8081 to 10.0.1.2:80
EOF
	: >"$T_TMP/xdprd.log"
	ip netns exec "$R" "$XDPRD" --foreground --config "$CONF" --metrics 127.0.0.1:19478 \
		>>"$T_TMP/xdprd.log" 2>&1 &
	DAEMON_PID=$!
	for ((i = 0; i < 100; i++)); do
		grep -qF "configuration applied" "$T_TMP/xdprd.log" && break
		sleep 0.1
	done
	ok "xdprd applied its file" grep -qF "configuration applied" "$T_TMP/xdprd.log" ||
		diag_file "$T_TMP/xdprd.log"
	r1_addr 10.0.2.9 10.0.2.7 || abort "cannot change r1's address"
	ok "xdprd moves the forward: H reaches C1 through 10.0.2.7:8080 within 5 s" \
		reaches_within 5 10.0.2.7 8080 || diag_file "$T_TMP/xdprd.log"
	ok "10.0.2.9:8080 no longer forwards" not reaches 10.0.2.9 8080
	ok "xdprd logs the move" grep -q 'forward [0-9]* on "r1" follows its address: 10\.0\.2\.9 to 10\.0\.2\.7' \
		"$T_TMP/xdprd.log"
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
fi

done_testing
