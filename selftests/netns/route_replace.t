#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# route_replace.t - live changes under traffic.  `route replace` keeps the
# route's counters; a TCP transfer through a route that is replaced over and
# over (one gateway, the other, both, "pass" to the kernel) completes intact;
# so does one through a table that `route load` swaps again and again.  IPv4
# and IPv6.  S1 answers on two gateway addresses (10.0.2.2, 10.0.2.3), so
# every next hop the route takes leads to the same host.
. "$(dirname "$0")/route_lib.sh"
need python3

rt_topo_create rr
rt_serve "$S1" 192.0.2.1/32 2001:db8:100::1/128
ip -n "$S1" addr add 10.0.2.3/24 dev s1
ip -n "$S1" -6 addr add 2001:db8:2::3/64 dev s1 nodad
# the kernel's own route, for the "pass" phases
ip -n "$R" route add 192.0.2.0/24 via 10.0.2.2
ip -n "$R" -6 route add 2001:db8:100::/48 via 2001:db8:2::2
rt_attach

# ---- replace keeps the counters
ok "route add 192.0.2.0/24 via 10.0.2.2 dev r1" xdpr route add 192.0.2.0/24 via 10.0.2.2 dev r1
ok "ping 192.0.2.1 (5 echoes)" ping4 "$C" 192.0.2.1 5
is "$(rt_ctr 192.0.2.0/24)/$(rt_ctr 192.0.2.0/24 bytes)" 5/490 "the route counted 5 packets, 490 bytes"
ok "route replace 192.0.2.0/24 via 10.0.2.3 dev r1" xdpr route replace 192.0.2.0/24 via 10.0.2.3 dev r1
is "$(xdpr -j route show 192.0.2.0/24 | jq -c '[.[0].nexthops, .[0].packets, .[0].bytes]')" \
	'[[{"gateway":"10.0.2.3","dev":"r1"}],5,490]' "after replace: the new next hop, the same counters"
ok "ping 192.0.2.1 via the new gateway (3 echoes)" ping4 "$C" 192.0.2.1 3
is "$(rt_ctr 192.0.2.0/24)" 8 "the counters go on from there (5 + 3)"
ok "route replace 192.0.2.0/24 pass" xdpr route replace 192.0.2.0/24 pass
is "$(xdpr -j route show 192.0.2.0/24 | jq -c '[.[0].action, .[0].packets]')" '["pass",8]' \
	"replace to another action: counters kept"
is "$(xdpr -j route show | jq length)" 1 "still one route"

# replace_loop PREFIX PID SPEC...: replace PREFIX with each SPEC in turn while
# PID runs (at most 300 times).  Sets REPL (replaces done), REPL_FAIL
# (failed ones) and REPL_BACK (times the packet counter went backwards).
replace_loop() {
	local prefix=$1 pid=$2 last=0 now i=0 spec
	shift 2
	REPL=0 REPL_FAIL=0 REPL_BACK=0
	while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 300 ]; do
		spec=${*:$((i % $# + 1)):1}
		# shellcheck disable=SC2086 # the spec is words
		if xdpr route replace "$prefix" $spec >"$T_TMP/repl.out" 2>&1; then
			REPL=$((REPL + 1))
		else
			REPL_FAIL=$((REPL_FAIL + 1))
			diag "route replace $prefix $spec: $(cat "$T_TMP/repl.out")"
		fi
		now=$(rt_ctr "$prefix")
		if ! [[ "$now" =~ ^[0-9]+$ ]] || [ "$now" -lt "$last" ]; then
			REPL_BACK=$((REPL_BACK + 1))
			diag "counter of $prefix went from $last to $now"
		else
			last=$now
		fi
		i=$((i + 1))
		sleep 0.05
	done
}

# ---- IPv4: replaced again and again under a TCP transfer
make_file "$T_TMP/data4" 16
ok "route replace 192.0.2.0/24 via 10.0.2.2 dev r1" xdpr route replace 192.0.2.0/24 via 10.0.2.2 dev r1
p0=$(rt_ctr 192.0.2.0/24)
tcp_send_paced "$C" "$S1" 192.0.2.1 5001 "$T_TMP/data4" 6 &
tpid=$!
replace_loop 192.0.2.0/24 "$tpid" "via 10.0.2.3 dev r1" "via 10.0.2.2 dev r1 via 10.0.2.3 dev r1" \
	"pass" "via 10.0.2.2 dev r1"
wait "$tpid"
ok "TCP: 16 MB to 192.0.2.1 arrive intact while the route was replaced $REPL times" test $? -eq 0
num "$REPL" -ge 8 "at least 8 replaces happened during the transfer"
is "$REPL_FAIL" 0 "every replace succeeded"
is "$REPL_BACK" 0 "the route's packet counter never went backwards"
num "$(rt_grown "$p0" 192.0.2.0/24)" -ge 10000 "the route counted >= 10000 packets (the data segments)"
is "$(snmp "$S1" Tcp InCsumErrors)" 0 "server: TcpInCsumErrors is 0"
diag "client TCP retransmissions: $(snmp "$C" Tcp RetransSegs)"

# ---- IPv6: the same
make_file "$T_TMP/data6" 8
ok "route add 2001:db8:100::/48 via 2001:db8:2::2 dev r1" \
	xdpr route add 2001:db8:100::/48 via 2001:db8:2::2 dev r1
p0=$(rt_ctr 2001:db8:100::/48)
tcp_send_paced "$C" "$S1" '[2001:db8:100::1]' 5002 "$T_TMP/data6" 4 &
tpid=$!
replace_loop 2001:db8:100::/48 "$tpid" "via 2001:db8:2::3 dev r1" \
	"via 2001:db8:2::2 dev r1 via 2001:db8:2::3 dev r1" "pass" "via 2001:db8:2::2 dev r1"
wait "$tpid"
ok "TCP over IPv6: 8 MB arrive intact while the route was replaced $REPL times" test $? -eq 0
num "$REPL" -ge 5 "at least 5 replaces happened during the transfer"
is "$REPL_FAIL" 0 "every replace succeeded"
is "$REPL_BACK" 0 "the route's packet counter never went backwards"
num "$(rt_grown "$p0" 2001:db8:100::/48)" -ge 5000 "the route counted >= 5000 packets"

# ---- route load swaps whole tables under a TCP transfer
for g in 2 3; do
	{
		echo "# table $g"
		echo "192.0.2.0/24 via 10.0.2.$g dev r1"
		echo "2001:db8:100::/48 via 2001:db8:2::$g dev r1"
		awk 'BEGIN { for (i = 0; i < 2000; i++) printf "100.%d.%d.0/24 blackhole\n", 64 + int(i / 256), i % 256 }'
	} >"$T_TMP/table$g"
done
make_file "$T_TMP/data4b" 8
f0=$(ctr "$R" r0 forwarded)
tcp_send_paced "$C" "$S1" 192.0.2.1 5003 "$T_TMP/data4b" 4 &
tpid=$!
loads=0 load_fail=0
while kill -0 "$tpid" 2>/dev/null && [ "$loads" -lt 100 ]; do
	if xdpr route load "$T_TMP/table$((loads % 2 + 2))" >"$T_TMP/load.out" 2>&1; then
		loads=$((loads + 1))
	else
		load_fail=$((load_fail + 1))
		diag "route load: $(cat "$T_TMP/load.out")"
		break
	fi
done
wait "$tpid"
ok "TCP: 8 MB arrive intact while 'route load' swapped the table $loads times" test $? -eq 0
num "$loads" -ge 3 "at least 3 loads happened during the transfer"
is "$load_fail" 0 "every load succeeded"
num "$(grown "$f0" "$R" r0 forwarded)" -ge 5000 "r0 forwarded grew by >= 5000 (fast path throughout)"
is "$(xdpr -j route show | jq length)" 2002 "the table is one of the loaded ones (2002 routes)"

done_testing
