#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vlan_offload.t - what the host can show of VLANs (it has no 802.1Q: VLAN
# devices themselves are the emulated-NIC tier's, selftests/vm/vlan.t):
#  - attach turns receive VLAN offload off where it is on (a NIC that strips
#    tags would hand XDP a VLAN's frame as the port's), says so, and detach
#    turns it on again; a port where it was off stays off;
#  - turned on again behind xdpr's back, `link sync` and any state-changing
#    command turn it off again and say so;
#  - tagged frames of no VLAN xdpr knows go to the kernel, counted as
#    pass_vlan on the port, 802.1ad / stacked tags as pass_vlan_qinq, and are
#    not forwarded (nothing arrives on the other side);
#  - link show -j describes ports ("kind", "vlans", "rx_vlan_offload").
. "$(dirname "$0")/lib.sh"
need ethtool
need python3

topo_create vlo

rxvlan() { in_ns "$1" ethtool -k "$2" 2>/dev/null | awk '$1 == "rx-vlan-offload:" { print $2 }'; }

ok "r0 has receive VLAN offload on (veth default)" in_ns "$R" ethtool -K r0 rxvlan on
ok "r1's is off before the attach" in_ns "$R" ethtool -K r1 rxvlan off
is "$(rxvlan "$R" r0),$(rxvlan "$R" r1)" "on,off" "before: r0 on, r1 off"

cli "$R" -j link attach r0 r1
is "$RC" 0 "link attach r0 r1"
is "$(jq -r 'map("\(.dev)=\(.rx_vlan_offload_turned_off)") | join(",")' <<<"$OUT")" "r0=true,r1=false" \
	"-j: attach says it turned r0's offload off, and not r1's"
is "$(rxvlan "$R" r0),$(rxvlan "$R" r1)" "off,off" "ethtool: both off while attached"
is "$(link_json "$R" | jq -r 'map("\(.dev):\(.kind):\(.rx_vlan_offload):\(.rx_vlan_offload_by_xdpr):\(.vlans|length)") | join(",")')" \
	"r0:port:off:true:0,r1:port:off:false:0" "link show -j: ports, offload off (r0's by xdpr), no VLANs"

# the text form says it too
ok "detach r0" xdpr link detach r0
is "$(rxvlan "$R" r0)" "on" "detach turned r0's offload on again"
cli "$R" link attach r0
like "$OUT" '^r0: attached .*receive VLAN offload turned off \(on again at detach\)' "attach (text) says it"

# behind xdpr's back
ok "ethtool -K r0 rxvlan on (while attached)" in_ns "$R" ethtool -K r0 rxvlan on
cli "$R" link sync
is "$RC" 0 "link sync"
like "$OUT" 'r0: receive VLAN offload was turned on again: off again' "link sync says it turned it off again"
is "$(rxvlan "$R" r0)" "off" "ethtool: r0 off again"
cli "$R" -j link sync
is "$(jq -r '"\(.changes) \(.what|length)"' <<<"$OUT")" "0 0" "link sync -j with nothing to do: no changes"
cli "$R" link sync
is "$OUT" "nothing to change" "link sync (text) with nothing to do"
ok "ethtool -K r0 rxvlan on (again)" in_ns "$R" ethtool -K r0 rxvlan on
cli "$R" nat timeout udp 45
is "$RC" 0 "nat timeout udp 45 (a change: takes the lock)"
like "$ERR" '^note: r0: receive VLAN offload was turned on again: off again' "a state-changing command syncs first and says so"
is "$(rxvlan "$R" r0)" "off" "ethtool: r0 off again"

# tagged frames: no VLAN of r0 has them (the host has no 802.1Q devices)
# send NS DEV HEX: one raw frame from NS out of DEV.
send() {
	in_ns "$1" /usr/bin/python3 - "$2" "$3" <<'PYEOF'
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
s.send(bytes.fromhex(sys.argv[2]))
PYEOF
}
r0mac=$(ip -n "$R" -j link show r0 | jq -r '.[0].address' | tr -d :)
c0mac=$(ip -n "$C" -j link show c0 | jq -r '.[0].address' | tr -d :)
# IPv4 UDP 10.0.1.2 -> 10.0.2.2, TTL 64, valid header checksum
ip4=450000200001000040110000$(printf '0a0001020a000202')
ip4=$(/usr/bin/python3 -c "
import sys
h = bytes.fromhex('$ip4')
s = sum(int.from_bytes(h[i:i+2], 'big') for i in range(0, 20, 2))
s = (s & 0xffff) + (s >> 16); s = (s & 0xffff) + (s >> 16)
print((h[:10] + (0xffff - s).to_bytes(2, 'big') + h[12:]).hex())")
udp=9c4000350000000000000000000000
pv=$(ctr "$R" r0 pass_vlan) pq=$(ctr "$R" r0 pass_vlan_qinq) fw=$(ctr "$R" r0 forwarded)
kf=$(snmp "$R" Ip ForwDatagrams)
for vid in 0064 0fff 0001; do
	ok "send an 802.1Q frame VID 0x$vid from C" send "$C" c0 "$r0mac$c0mac"8100"$vid"0800"$ip4$udp"
done
ok "send an 802.1ad + 802.1Q frame from C" send "$C" c0 "$r0mac$c0mac"88a8000a"81000064"0800"$ip4$udp"
ok "send two 802.1Q tags from C" send "$C" c0 "$r0mac$c0mac"810000648100000a0800"$ip4$udp"
sleep 0.5
is "$(grown "$pv" "$R" r0 pass_vlan)" 3 "three VLAN frames of no known VLAN: pass_vlan on r0"
is "$(grown "$pq" "$R" r0 pass_vlan_qinq)" 2 "the 802.1ad and the stacked tags: pass_vlan_qinq on r0"
is "$(grown "$fw" "$R" r0 forwarded)" 0 "none of them forwarded"
is "$(($(snmp "$R" Ip ForwDatagrams) - kf))" 0 "nor did the kernel forward them (no VLAN device takes them)"

ok "detach all" xdpr link detach all
is "$(rxvlan "$R" r0),$(rxvlan "$R" r1)" "on,off" "after detach: r0 on again, r1 still off (as it was)"

done_testing
