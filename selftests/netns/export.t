#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# export.t - flow export end to end: xdprd in R with "export ipfix" and
# "export netflow9" lines, the fast path's flow meter on, real collectors
# (nfcapd) in H on the outside link.  A known UDP transfer C1 -> S through
# the masquerade must reach each collector as one flow of exactly the
# packets and L3 bytes sent, with the post-NAT source (10.0.2.1 and the port
# S saw), and leave the meter's table once the inactive timeout reported it.
. "$(dirname "$0")/nat_lib.sh"

XDPRD=${XDPRD:-$(dirname "$XDPR")/xdprd}
[ -x "$XDPRD" ] || skip_all "$XDPRD not built (make all)"
for c in nfcapd nfdump; do
	command -v $c >/dev/null || bail_out "$c missing (package nfdump: make deps)"
done

nat_topo_create ex
nat_attach

# collectors in H (10.0.2.2): IPFIX on 4739, NetFlow v9 on 2055
for f in ipfix:4739 netflow9:2055; do
	mkdir -p "$T_TMP/${f%%:*}"
	timeout 120 ip netns exec "$H" nfcapd -w "$T_TMP/${f%%:*}" -b 10.0.2.2 -p "${f##*:}" \
		>"$T_TMP/nfcapd.${f%%:*}.log" 2>&1 &
	eval "NF_${f%%:*}=$!"
done
for p in 4739 2055; do
	ok "nfcapd listens on 10.0.2.2:$p in H" wait_listen "$H" "$p" udp
done

# the running state, saved, plus the export lines: xdprd changes nothing else
CONF=$T_TMP/xdpr.conf
xdpr save >"$CONF" || abort "xdpr save failed"
cat >>"$CONF" <<EOF
export ipfix 10.0.2.2:4739
export netflow9 10.0.2.2:2055
export inactive-timeout 2
EOF
ip netns exec "$R" "$XDPRD" --foreground --config "$CONF" --metrics none --gc 1 >"$T_TMP/xdprd.log" 2>&1 &
DPID=$!
for ((i = 0; i < 50; i++)); do
	[ "$(xdpr -j flow show 2>/dev/null | jq -r .meter.state)" = on ] && break
	sleep 0.1
done
is "$(xdpr -j flow show | jq -r .meter.state)" "on" "xdprd with export lines turned the flow meter on"

# S counts UDP on 7001 and says which source it saw
timeout 60 ip netns exec "$S" "$NAT_PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 7001))
s.settimeout(20)
n = 0
while True:
    d, a = s.recvfrom(4096)
    if d == b"report":
        open(sys.argv[1], "w").write("%d %s %d\n" % (n, a[0], src[1]))
        break
    n += 1
    src = a' "$T_TMP/s.seen" 2>/dev/null &
SPID=$!
wait_listen "$S" 7001 udp || bail_out "the UDP counter in S never listened on 7001"
# 150 datagrams of 472 bytes from C1:40123 (150 x 500 bytes of IP), then "report" (34)
T_TIMEOUT=20 in_ns "$C1" "$NAT_PY" -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 40123))
for i in range(150):
    s.sendto(b"x" * 472, ("10.0.4.2", 7001))
    if i % 16 == 15:
        time.sleep(0.002)
s.sendto(b"report", ("10.0.4.2", 7001))'
wait "$SPID"
read -r n saddr sport <"$T_TMP/s.seen" 2>/dev/null
is "$n $saddr" "150 10.0.2.1" "S got the 150 datagrams from 10.0.2.1 (masqueraded)"
diag "$(xdpr flow show 2>&1 | head -4)"

# reported after 2 s idle (the tick is 1 s): then gone from the table
for ((i = 0; i < 100; i++)); do
	[ "$(xdpr -j flow show | jq '[.flows[] | select(.sport == 40123)] | length')" = 0 ] && break
	sleep 0.1
done
is "$(xdpr -j flow show | jq '[.flows[] | select(.sport == 40123)] | length')" "0" \
	"the flow left the meter's table once reported (inactive timeout 2 s)"
sleep 0.5
kill -TERM "$DPID" 2>/dev/null
wait "$DPID"
ok "xdprd stopped cleanly" true
for f in ipfix netflow9; do
	eval "kill -TERM \$NF_$f"
	eval "timeout 10 tail --pid=\$NF_$f -f /dev/null"
	got=$(nfdump -R "$T_TMP/$f" -q -o 'fmt:%pr %sa %sp %da %dp %pkt %byt %xsa %xsp' 2>&1 |
		tr -s ' ' | sed 's/^ //; s/ $//' | grep " 40123 ")
	diag "$f: $got"
	is "$got" "UDP 10.0.1.2 40123 10.0.4.2 7001 151 75034 10.0.2.1 $sport" \
		"$f: nfdump: one record C1:40123 -> S:7001, 151 packets, 75034 bytes (150 x 500 + the 34-byte report), post-NAT 10.0.2.1:$sport"
	like "$(cat "$T_TMP/nfcapd.$f.log")" "Sequence Errors: 0" "$f: nfcapd saw no sequence error"
done
grep -i "error" "$T_TMP/xdprd.log" | head -5 | while read -r l; do diag "xdprd: $l"; done

done_testing
