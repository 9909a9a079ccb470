#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# detach_nat.t - detaching one port must not open a way around xdpr's NAT or
# filter.  Off a port, xdpr no longer sees its traffic and the kernel
# forwards it by its own rules: out of the NAT interface untranslated (the
# kernel has none of xdpr's NAT state) and past the filter.  So `link detach
# DEV` refuses, with one Error line, while another attached interface
# translates or the filter is in force; "force" detaches anyway, and then the
# kernel forwards DEV's traffic as it is (what the README and xdpr(8) say).
# A file applied with `restore` (xdprd's reload path) gets the same refusal.
# The check runs with masquerade on r1 and C1 sending through r0 the whole
# time: a capture on H's side of r1 must see no inside source.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create dn
nat_attach

# C1 sends a UDP datagram to S every 50 ms until spray_stop.
spray_start() {
	local u0 i
	rm -f "$T_TMP/spray.stop"
	u0=$(snmp "$C1" Udp OutDatagrams)
	( for ((i = 0; i < 400; i++)); do [ -e "$T_TMP/spray.stop" ] && break; echo "probe $i"; sleep 0.05; done ) |
		T_TIMEOUT=25 in_ns "$C1" socat -u - UDP4-DATAGRAM:10.0.4.2:7009 2>/dev/null &
	SPRAY=$!
	for ((i = 0; i < 50; i++)); do
		[ "$(snmp "$C1" Udp OutDatagrams)" -gt "$u0" ] 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
spray_stop() {
	touch "$T_TMP/spray.stop"
	wait "$SPRAY"
}
# attached: the attached interfaces, sorted, comma-separated.
attached() {
	link_json "$R" | jq -r '[.[] | select(.state == "attached") | .dev] | sort | join(",")'
}

NAT_ERR='Error: without xdpr, "r0"'"'"'s traffic would leave NAT interface "r1" untranslated (the kernel forwards it); detach "r1" first, or every interface ("link detach all"), or use "force"'

# ---- masquerade on r1, C1 sending through r0: detaching r0 is refused
cap_start leak "$H" h0 "udp dst port 7009 or ($LEAK_FILTER)" || abort "no capture on h0"
spray_start || fail "C1's probes to S:7009 start"
sleep 0.5
cli "$R" link detach r0
is "$RC:$OUT" "1:" "link detach r0 (r1 masquerades): exit 1, nothing on stdout"
is "$ERR" "$NAT_ERR" "link detach r0: one Error line: what would happen and the ways out"
is "$(attached)" "r0,r1,r2" "link show: r0, r1, r2 still attached"
cli "$R" link detach r0 r2
is "$RC:$ERR" "1:$NAT_ERR" "link detach r0 r2: the same refusal"
cli "$R" link detach r2
is "$RC" 1 "link detach r2 (no traffic on it): refused too"
like "$ERR" '^Error: without xdpr, "r2"'"'"'s traffic would leave NAT interface "r1" untranslated' \
	"link detach r2: the Error line names r2 and r1"
sleep 1.5
spray_stop
ok "the capture on h0 ran to the end, nothing dropped" cap_stop leak
is "$(pcap_count "$T_TMP/leak.pcap" "$LEAK_FILTER")" 0 \
	"h0 capture during and after the refused detaches: no packet with an inside source"
num "$(pcap_count "$T_TMP/leak.pcap" 'src host 10.0.2.1 and udp dst port 7009')" -ge 20 \
	"... while C1's probes reached H translated (from 10.0.2.1)"

# ---- xdprd's reload path (cli/conf.c, as restore runs it): the same refusal
xdpr save >"$T_TMP/all.conf"
grep -v '^link attach' "$T_TMP/all.conf" >"$T_TMP/no_r0.conf"
echo "link attach r1 r2" >>"$T_TMP/no_r0.conf"
cli "$R" restore "$T_TMP/no_r0.conf"
is "$RC" 1 "restore of a file without r0 (masquerade kept): exit 1"
like "$ERR" '^Error: link detach r0: without xdpr, "r0"'"'"'s traffic would leave NAT interface "r1" untranslated' \
	"restore: the refusal names r0 and r1"
is "$(attached)" "r0,r1,r2" "restore: r0, r1, r2 still attached"

# ---- force: r0 goes; the kernel forwards its traffic as it is (documented)
cap_start forced "$H" h0 "$LEAK_FILTER" || abort "no capture on h0"
spray_start || fail "C1's probes to S:7009 start (force)"
cli "$R" link detach r0 force
is "$RC:$ERR" "0:" "link detach r0 force: exit 0, nothing on stderr"
is "$(attached)" "r1,r2" "link detach r0 force: r1, r2 stay"
is "$(xdpr -j nat show | jq -r '[.[] | .dev] | join(",")')" "r1" "link detach r0 force: r1's rule stays"
sleep 1
spray_stop
ok "the capture on h0 (force) ran to the end" cap_stop forced
num "$(pcap_count "$T_TMP/forced.pcap" 'src net 10.0.1.0/24 and udp dst port 7009')" -ge 5 \
	"force: as documented, the kernel forwards r0's traffic out of r1 untranslated"
ok "link attach r0 again" xdpr_attach r0

# ---- the filter in force: the same for a port with no NAT around
ok "nat flush (the masquerade rule goes)" xdpr nat flush
ok "filter add src 10.0.1.0/24 proto udp dport 7010 drop" xdpr filter add src 10.0.1.0/24 proto udp dport 7010 drop
cli "$R" link detach r0
is "$RC:$OUT" "1:" "link detach r0 (filter in force): exit 1, nothing on stdout"
is "$ERR" 'Error: without xdpr, "r0"'"'"'s traffic would skip the filter (the kernel forwards it); empty the filter first (filter flush, filter policy accept), or detach every interface ("link detach all"), or use "force"' \
	"link detach r0 (filter): one Error line: what would happen and the ways out"
is "$(attached)" "r0,r1,r2" "link show: r0, r1, r2 still attached"
ok "filter flush" xdpr filter flush
ok "link detach r0 (no NAT, no filter): allowed" xdpr link detach r0
is "$(attached)" "r1,r2" "link show: r1, r2"

# ---- every interface: allowed (nothing of xdpr stays to be bypassed)
ok "filter add src 10.0.1.0/24 proto udp dport 7010 drop (again)" xdpr filter add src 10.0.1.0/24 proto udp dport 7010 drop
ok "link detach all (filter in force): allowed" xdpr link detach all
is "$(attached)" "" "link show: nothing attached"

done_testing
