#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers.sh - the router on real drivers, run inside the vmtest guest.
#
# The guest has two igb ports (82576, native XDP) and one e1000e port
# (82574L, no native XDP).  Their QEMU tap backends sit in three host
# namespaces; traffic starts there (requests to the host, see lib.sh):
#
#   client 10.0.1.2 --- igb    00:03  10.0.1.1 \
#   server 10.0.2.2 --- igb    00:05  10.0.2.1  > guest: xdpr
#   peer   10.0.3.2 --- e1000e 00:08  10.0.3.1 /
#   (IPv6: 2001:db8:N::2 and 2001:db8:N::1)
#
# xdpr is used as a user would: attach, show, stats, detach.  "@@note" lines
# are measurements the host keeps (docs/vm-notes.md has the matrix).
. /lib/xdpr/lib.sh

note() { printf '@@note %s\n' "$*"; }

# csv WORD...: the words sorted, comma-separated (as links prints them).
csv() { printf '%s\n' "$@" | sort | paste -sd, -; }

IGB0=$(nic igb 03)
IGB1=$(nic igb 05)
E1K=$(nic e1000e 08)
if [ -z "$IGB0" ] || [ -z "$IGB1" ] || [ -z "$E1K" ]; then
	fail "NICs found: igb at 00:03, igb at 00:05, e1000e at 00:08"
	for n in /sys/class/net/*; do
		diag "${n##*/}: $(readlink "$n/device") $(readlink "$n/device/driver")"
	done
	exit 1
fi
pass "NICs found: igb $IGB0 (00:03), igb $IGB1 (00:05), e1000e $E1K (00:08)"

# ---- router set-up (the kernel path works before xdpr is involved)
sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
	net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
$IP link set lo up
n=1
for d in "$IGB0" "$IGB1" "$E1K"; do
	$IP addr add "10.0.$n.1/24" dev "$d"
	$IP addr add "2001:db8:$n::1/64" dev "$d" nodad
	$IP link set "$d" up
	n=$((n + 1))
done
ok "carrier on all three ports" wait_carrier "$IGB0" "$IGB1" "$E1K"
host_ok "kernel path: client pings server" ping client 10.0.2.2 3
host_ok "kernel path: client pings peer" ping client 10.0.3.2 3
host_ok "kernel path: peer pings server" ping peer 10.0.2.2 3
host_ok "kernel path: client pings server over IPv6" ping client 2001:db8:2::2 3

# ---- attach: e1000e has no native XDP; the user asks for skb mode.  Attach
# is all or nothing: the igb ports attached before e1000e is refused are
# rolled back (one program load per port: slow under emulation, so the
# single-device refusal is this same call).
want_err="Error: \"$E1K\" does not support native XDP; use \"mode skb\""
cli link attach "$IGB0" "$IGB1" "$E1K"
is "$RC:$OUT" "1:" "link attach igb igb e1000e (default native mode): exit 1, nothing on stdout"
is "$ERR" "$want_err" "the error names $E1K and skb mode, in one line"
is "$(links)" "" "all or nothing: the igb ports are not left attached"
ok "igb carrier back after the rolled-back attach" wait_carrier "$IGB0" "$IGB1"

carrier_watch "$IGB0" >/tmp/carrier.attach &
cw=$!
t0=$(uptime_ms)
cli_ok "link attach $IGB0 $IGB1 (native)" link attach "$IGB0" "$IGB1"
t1=$(uptime_ms)
ok "igb carrier back after native attach (igb resets the link)" wait_carrier "$IGB0" "$IGB1"
kill "$cw"
note "igb native attach of two ports: command $((t1 - t0)) ms, $IGB0 carrier down" \
	"$(awk 'NF == 2 { printf "%d ms", $2 - $1 }' /tmp/carrier.attach)"
is "$(links)" "$(csv "$IGB0:native:xmit" "$IGB1:native:xmit")" \
	"link show: both igb native, XDP transmit capable"
cli_ok "link attach $E1K mode skb" link attach "$E1K" mode skb
[ "$(cat "/sys/class/net/$E1K/carrier")" = 1 ] && note "e1000e skb attach: carrier stays up"
is "$(links)" "$(csv "$E1K:skb:noxmit" "$IGB0:native:xmit" "$IGB1:native:xmit")" \
	"link show: e1000e in skb mode, not XDP transmit capable"
note "link show: $("$XDPR" -j link show 2>/dev/null | "$JQ" -r \
	'map("\(.dev) \(.mode) xdp_xmit=\(.xdp_xmit) dispatcher=\(.dispatcher)") | join("; ")')"

# The link reset flushed the router's neighbours on the igb ports: the first
# packet to each goes through the kernel (pass_no_neigh), which resolves them.
nn0=$(ctr "$IGB0" pass_no_neigh)
nn1=$(ctr "$IGB1" pass_no_neigh)
host ping client 10.0.2.2 2
host ping client 2001:db8:2::2 2
diag "after the link reset: pass_no_neigh +$(grown "$nn0" "$IGB0" pass_no_neigh) on $IGB0, +$(grown "$nn1" "$IGB1" pass_no_neigh) on $IGB1"

# ---- igb -> igb in the fast path
f0=$(ctr "$IGB0" forwarded)
f1=$(ctr "$IGB1" forwarded)
host_ok "igb -> igb: client pings server (10 echoes)" ping client 10.0.2.2 10
num "$(grown "$f0" "$IGB0" forwarded)" -ge 10 "$IGB0 forwarded grew by >= 10 (echo requests)"
num "$(grown "$f1" "$IGB1" forwarded)" -ge 10 "$IGB1 forwarded grew by >= 10 (echo replies)"

if host cap_start server 3 'icmp and icmp[icmptype] == icmp-echo'; then
	host ping client 10.0.2.2 3
	host cap_read
	is "$H_OUT" "n=3 ttl=63 src=10.0.1.2" "on the wire at the server: 3 echo requests, TTL 63"
else
	fail "capture at the server"
	diag "$H_OUT"
fi

f0=$(ctr "$IGB0" forwarded)
if host cap_start server 3 'icmp6 and ip6[40] == 128'; then
	host ping client 2001:db8:2::2 3
	host cap_read
	is "$H_OUT" "n=3 ttl=63 src=2001:db8:1::2" "IPv6 on the wire at the server: hop limit 63"
else
	fail "IPv6 capture at the server"
	diag "$H_OUT"
fi
num "$(grown "$f0" "$IGB0" forwarded)" -ge 3 "$IGB0 forwarded grew by >= 3 (IPv6 echo requests)"

f0=$(ctr "$IGB0" forwarded)
f1=$(ctr "$IGB1" forwarded)
host_ok "igb -> igb: TCP, 2 MB client -> server arrive intact" tcp client server 10.0.2.2 5001 2
num "$(grown "$f0" "$IGB0" forwarded)" -ge 1000 "$IGB0 forwarded grew by >= 1000 (data segments)"
num "$(grown "$f1" "$IGB1" forwarded)" -ge 100 "$IGB1 forwarded grew by >= 100 (ACKs)"

# ---- igb -> e1000e: the fast path cannot transmit there, the kernel does
# (attach turned the e1000e's receive VLAN offload off, which reset its link
# and flushed its neighbours: the first echo resolves the peer again)
host_ok "igb -> e1000e: one echo first (the peer's neighbour entry again)" ping client 10.0.3.2 1
n0=$(ctr "$IGB0" pass_egress_no_xmit)
f0=$(ctr "$IGB0" forwarded)
fe=$(ctr "$E1K" forwarded)
host_ok "igb -> e1000e: client pings peer (10 echoes)" ping client 10.0.3.2 10
num "$(grown "$n0" "$IGB0" pass_egress_no_xmit)" -ge 10 \
	"$IGB0 pass_egress_no_xmit grew by >= 10 (requests handed to the kernel)"
num "$(grown "$f0" "$IGB0" forwarded)" -eq 0 "$IGB0 forwarded did not grow"
num "$(grown "$fe" "$E1K" forwarded)" -ge 10 "$E1K (skb) forwarded grew by >= 10 (replies to igb)"
if host cap_start peer 3 'icmp and icmp[icmptype] == icmp-echo'; then
	host ping client 10.0.3.2 3
	host cap_read
	is "$H_OUT" "n=3 ttl=63 src=10.0.1.2" "on the wire at the peer: 3 echo requests, TTL 63 (kernel path)"
else
	fail "capture at the peer"
	diag "$H_OUT"
fi

# ---- e1000e (generic) -> igb: forwarded
fe=$(ctr "$E1K" forwarded)
n1=$(ctr "$IGB1" pass_egress_no_xmit)
host_ok "e1000e -> igb: peer pings server (10 echoes)" ping peer 10.0.2.2 10
num "$(grown "$fe" "$E1K" forwarded)" -ge 10 "$E1K forwarded grew by >= 10 (echo requests)"
num "$(grown "$n1" "$IGB1" pass_egress_no_xmit)" -ge 10 \
	"$IGB1 pass_egress_no_xmit grew by >= 10 (replies towards e1000e)"
if host cap_start server 3 'icmp and icmp[icmptype] == icmp-echo'; then
	host ping peer 10.0.2.2 3
	host cap_read
	is "$H_OUT" "n=3 ttl=63 src=10.0.3.2" "on the wire at the server: TTL 63 from the peer"
else
	fail "capture at the server"
	diag "$H_OUT"
fi
fe=$(ctr "$E1K" forwarded)
host_ok "e1000e -> igb: TCP, 1 MB peer -> server arrive intact" tcp peer server 10.0.2.2 5002 1
num "$(grown "$fe" "$E1K" forwarded)" -ge 500 "$E1K forwarded grew by >= 500 (data segments)"

# ---- igb in skb mode: no link reset, and not a redirect target for XDP
cli_ok "link detach $IGB1" link detach "$IGB1"
ok "igb carrier back after detach" wait_carrier "$IGB1"
cli_ok "link attach $IGB1 mode skb" link attach "$IGB1" mode skb
[ "$(cat "/sys/class/net/$IGB1/carrier")" = 1 ] && note "igb skb attach: carrier stays up"
is "$(links)" "$(csv "$E1K:skb:noxmit" "$IGB0:native:xmit" "$IGB1:skb:noxmit")" \
	"link show: $IGB1 in skb mode, not XDP transmit capable"
host ping client 10.0.2.2 2 # neighbours again, after the detach's link reset
n0=$(ctr "$IGB0" pass_egress_no_xmit)
f1=$(ctr "$IGB1" forwarded)
host_ok "igb native -> igb skb: client pings server (10 echoes)" ping client 10.0.2.2 10
num "$(grown "$n0" "$IGB0" pass_egress_no_xmit)" -ge 10 \
	"$IGB0 pass_egress_no_xmit grew by >= 10 (an igb without a native program takes no XDP frames)"
num "$(grown "$f1" "$IGB1" forwarded)" -ge 10 "$IGB1 (skb) forwarded grew by >= 10 (replies)"
cli_ok "link detach $IGB1 (skb)" link detach "$IGB1"
cli_ok "link attach $IGB1 (native) again" link attach "$IGB1"
ok "igb carrier back after native attach" wait_carrier "$IGB1"
is "$(links)" "$(csv "$E1K:skb:noxmit" "$IGB0:native:xmit" "$IGB1:native:xmit")" \
	"link show: both igb native again"

# ---- masquerade (once NAT has landed)
cli nat show
case "$RC:$ERR" in
2:*"unknown object"*)
	skip 5 "nat not available"
	;;
*)
	cli_ok "nat add out $IGB1 masquerade" nat add out "$IGB1" masquerade
	f0=$(ctr "$IGB0" forwarded)
	if host cap_start server 3 'icmp and icmp[icmptype] == icmp-echo'; then
		host ping client 10.0.2.2 3
		host cap_read
		is "$H_OUT" "n=3 ttl=63 src=10.0.2.1" "masquerade: the server sees echo requests from 10.0.2.1"
	else
		fail "capture at the server"
		diag "$H_OUT"
	fi
	host tcp_peer client server 10.0.2.2 5003
	is "$H_OUT" "10.0.2.1" "masquerade: a TCP server sees the router's address"
	num "$(grown "$f0" "$IGB0" forwarded)" -ge 6 "masquerade: $IGB0 forwarded grew (fast path)"
	cli_ok "nat del out $IGB1" nat del out "$IGB1"
	;;
esac

# ---- the route map on the real drivers: a via route forwards in XDP and counts,
# a blackhole drops in the driver, a flush gives the traffic back to the FIB
# (the guest kernel builds and maps the route table's inner maps)
rt_pkts() { "$XDPR" -j route show "$1" 2>/dev/null </dev/null | "$JQ" -r '.[0].packets' 2>/dev/null; }
cli_ok "route add 10.0.2.2/32 via 10.0.2.2 dev $IGB1" route add 10.0.2.2/32 via 10.0.2.2 dev "$IGB1"
f0=$(ctr "$IGB0" forwarded)
host_ok "route map: client pings server through the via route (5 echoes)" ping client 10.0.2.2 5
num "$(rt_pkts 10.0.2.2/32)" -ge 5 "route map: the via route counted the 5 echo requests"
num "$(grown "$f0" "$IGB0" forwarded)" -ge 5 "route map: $IGB0 forwarded grew by >= 5 (igb -> igb in XDP)"
cli_ok "route add 10.0.3.2/32 blackhole" route add 10.0.3.2/32 blackhole
d0=$(ctr "$IGB0" drop_blackhole)
if host ping client 10.0.3.2 3; then
	fail "route map: blackholed peer does not answer"
else
	pass "route map: blackholed peer does not answer ($H_OUT)"
fi
num "$(grown "$d0" "$IGB0" drop_blackhole)" -ge 3 "route map: $IGB0 drop_blackhole grew by >= 3"
cli_ok "route flush" route flush
host_ok "route map flushed: client pings peer again (kernel FIB)" ping client 10.0.3.2 3

# ---- detach and re-attach under traffic: a gap while igb resets, then no loss
# (igb resets the link inside the command, after the program is verified)
if host pingbg_start client 10.0.2.2; then
	carrier_watch "$IGB0" >/tmp/carrier.igb0 &
	cw0=$!
	carrier_watch "$IGB1" >/tmp/carrier.igb1 &
	cw1=$!
	sleep 2
	t0=$(uptime_ms)
	cli_ok "link detach all (ping -i 0.1 running)" link detach all
	ok "igb carrier back after detach" wait_carrier "$IGB0" "$IGB1"
	sleep 3
	t1=$(uptime_ms)
	cli_ok "link attach $IGB0 $IGB1 again" link attach "$IGB0" "$IGB1"
	ok "igb carrier back after re-attach" wait_carrier "$IGB0" "$IGB1"
	sleep 1
	f0=$(ctr "$IGB0" forwarded)
	sleep 3
	host pingbg_stop
	kill "$cw0" "$cw1"
	diag "ping during detach/re-attach: $H_OUT"
	eval "$H_OUT" # tx= rx= lost= runs= tail_lost=
	num "${tail_lost:-x}" -eq 0 "no lasting loss: the last 3 s of echoes all answered"
	num "${lost:-x}" -le 80 "loss bounded: ${lost:-?} of ${tx:-?} echoes (0.1 s apart) lost"
	num "$(grown "$f0" "$IGB0" forwarded)" -ge 10 "$IGB0 forwards in XDP again after re-attach"
	for d in 0 1; do
		note "igb link resets of igb$d (detach, re-attach): carrier down at +ms for ms:" \
			"$(awk -v t="$t0" 'NF == 2 { printf "%s+%d for %d", sep, $1 - t, $2 - $1; sep = ", " }' \
				/tmp/carrier.igb$d)"
	done
	note "ping -i 0.1 (seq 1 at -2 s) through detach (at +0 ms) + re-attach (at +$((t1 - t0)) ms):" \
		"lost ${lost:-?} of ${tx:-?} (runs COUNT@SEQ: ${runs:-?})"
else
	fail "background ping from the client"
	diag "$H_OUT"
fi

# ---- detach leaves a working kernel router
cli_ok "link detach all" link detach all
ok "carrier back after detach" wait_carrier "$IGB0" "$IGB1"
is "$(links)" "" "link show: nothing attached"
host_ok "kernel path after detach: client pings server" ping client 10.0.2.2 3

if [ "$T_FAILED" -gt 0 ]; then
	diag "guest dmesg (last 30 lines):"
	diag "$(dmesg | tail -n 30)"
fi
exit "$T_FAILED"
