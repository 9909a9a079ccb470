#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# vlan.sh - VLANs on real drivers (issue 13), run inside the vmtest guest.
#
#   host (selftests/vm/vlan.t)                guest
#   client: vlanhost.py relay ------ igb 00:03 $IGB0, trunk, 10.0.1.1/24 untagged
#     VLAN index i = 0..254, VID 100+i (i < 254), 4094 (i = 254):
#       $IGB0.VID 10.1.i.1/24 2001:db8:11:i::1/64, the host side 10.1.i.2, ::2
#     c100 c101 c102: namespaces on untagged taps of VIDs 100-102 (real stacks);
#     every other VID: the relay answers for 10.1.i.2 itself
#     c400 c401 c402: namespaces of VIDs 400-402 (a second relay), 10.5.i.2/24,
#       added after attach: $IGB0.40x 10.5.i.1 (i = x), 2001:db8:15:i::1/64
#   server 10.0.2.2 ---------------- igb 00:05 $IGB1, untagged, 10.0.2.1/24
#   peer: relay -------------------- e1000e 00:08 $E1K (generic XDP), 10.0.3.1/24,
#     p100 p300: namespaces          $E1K.100 10.3.0.1/24, $E1K.300 10.3.1.1/24
#                                    (2001:db8:13:0::1/64, 2001:db8:13:1::1/64)
#   (untagged ports: 10.0.N.1/24 and 2001:db8:N::1/64, N = 1, 2, 3)
#
# igb filters VIDs in hardware (rx-vlan-filter on [fixed]): a frame whose VID
# has no VLAN device never reaches the driver, unless the port is
# promiscuous, as it is made for the checks of unknown VIDs.
#
# QoS maps (PCP on the wire as the kernel sets it): VLANs with an even index
# have egress-qos-map $EMAP, with an index divisible by 3 ingress-qos-map
# $IMAP; the sweeps get the same (vlanhost.py computes the PCP each answer
# must carry).  The e1000e VLANs have no maps (PCP 0).
#
# VLAN_MODE (/lib/xdpr/env, XDPR_VM_VLAN of the host): "xdpr" attaches xdpr
# and checks that the traffic is forwarded in XDP (the kernel's forwarding
# counters stay flat, xdpr's per-VLAN counters rise); "kernel" sends the same
# traffic with the guest kernel forwarding and checks the same bytes on the
# wire, to show the checks see what they check.
#
# Round A: rx-vlan-offload on before attach (xdpr turns it off, detach turns
# it back on), with the e1000e, unknown VIDs / QinQ, masquerade out of a VLAN
# and the CLI's VLAN rules.  Round B: offload off before attach, and VLANs
# deleted, added, downed and upped after attach; then new VLANs followed
# with no command run: VID 400 created and deleted with xdprd running, VID
# 401 created without it and enrolled by the next link sync, 401 deleted
# and 402 created while xdprd is stopped, followed at its start.
. /lib/xdpr/lib.sh

MODE=${VLAN_MODE:-xdpr}
xdpr_mode() { [ "$MODE" = xdpr ]; }
note() { printf '@@note %s\n' "$*"; }

VIDS="$(seq 100 353) 4094"
VID_LIST=100-353,4094
NV=255
EMAP="0:1 2:3 4:4 6:5"
IMAP="3:6 5:4"

IGB0=$(nic igb 03)
IGB1=$(nic igb 05)
E1K=$(nic e1000e 08)
if [ -z "$IGB0" ] || [ -z "$IGB1" ] || [ -z "$E1K" ]; then
	fail "NICs found: igb at 00:03, igb at 00:05, e1000e at 00:08"
	exit 1
fi
pass "NICs found: igb $IGB0 (trunk), igb $IGB1 (untagged), e1000e $E1K (mode $MODE)"
GW=$(cat "/sys/class/net/$IGB0/address")
SWEEP="--gw $GW --vids $VID_LIST --addr4 10.1.%d.2 --addr6 2001:db8:11:%d::2
	--egress-map $(echo "$EMAP" | tr ' ' ,) --egress-every 2
	--ingress-map $(echo "$IMAP" | tr ' ' ,) --ingress-every 3"

# ---------------------------------------------------------------- helpers

# epcp I PRIO: the PCP of a frame of skb priority PRIO leaving VLAN index I.
epcp() {
	if [ $(($1 % 2)) -eq 0 ]; then
		for _m in $EMAP; do
			[ "${_m%%:*}" = "$2" ] && echo "${_m#*:}" && return
		done
	fi
	echo 0
}

fwd4() {
	awk '/^Ip:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "ForwDatagrams") c = i; h = 1 }
		      else print $c }' /proc/net/snmp
}
fwd6() { awk '$1 == "Ip6OutForwDatagrams" { print $2 }' /proc/net/snmp6; }
rxpk() { cat "/sys/class/net/$1/statistics/rx_packets"; }

# rxvlan DEV: on|off (ethtool's rx-vlan-offload)
rxvlan() { ethtool -k "$1" 2>/dev/null | awk -F': ' '$1 == "rx-vlan-offload" { split($2, w, " "); print w[1] }'; }

# lshow JQ: xdpr -j link show through a jq program
lshow() { "$XDPR" -j link show 2>/dev/null </dev/null | "$JQ" -r "$1" 2>/dev/null; }

# snap FILE: "DEV FORWARDED" of every interface xdpr counts
snap() {
	"$XDPR" -j stats 2>/dev/null </dev/null |
		"$JQ" -r '.interfaces[] | "\(.dev) \(.reasons.forwarded.packets)"' >"$1" 2>/dev/null
}

# vlans_grown OLD NEW MIN: how many of $IGB0's VLANs forwarded >= MIN more
vlans_grown() {
	awk -v p="$IGB0." -v m="$3" 'NR == FNR { a[$1] = $2; next }
		index($1, p) == 1 && ($1 in a) && $2 - a[$1] >= m { n++ } END { print n + 0 }' "$1" "$2"
}

# sweep DESC ARGS...: one vlanhost.py sweep from the trunk (a test); the
# summary is shown either way
sweep() {
	_d=$1
	shift
	# shellcheck disable=SC2086
	if host sweep client $SWEEP "$@"; then
		pass "$_d"
	else
		fail "$_d"
	fi
	diag "  $H_OUT"
}

# wire DESC ROLE FILTER... WANT: read ROLE's capture through FILTER, compare
# with WANT ("n=N tags=..." exactly, or "n>=MIN tags=...": at least MIN frames,
# the rest exactly)
wire() {
	_d=$1 _r=$2
	shift 2
	_w=
	_a=
	for _x in "$@"; do
		[ -n "$_w" ] && _a="$_a $_w"
		_w=$_x
	done
	# shellcheck disable=SC2086
	if ! host wcap_read "$_r" $_a; then
		fail "$_d"
		diag "capture on $_r: $H_OUT"
	elif [ "${_w#n>=}" != "$_w" ]; then
		_min=${_w%% *}
		_min=${_min#n>=}
		_n=${H_OUT%% *}
		_n=${_n#n=}
		if [ "$_n" -ge "$_min" ] 2>/dev/null && [ "${H_OUT#* }" = "${_w#* }" ]; then
			pass "$_d"
		else
			fail "$_d"
			diag "got:  '$H_OUT'"
			diag "want: '$_w'"
		fi
	else
		is "$H_OUT" "$_w" "$_d"
	fi
}

# cap ROLE: start a capture (a failure is a failed test)
cap() {
	host wcap_start "$1" && return 0
	fail "capture on $1 started"
	diag "$H_OUT"
	return 1
}

# delta4/delta6 OLD: growth of the kernel's forwarding counters
delta4() { echo $(($(fwd4) - $1)); }
delta6() { echo $(($(fwd6) - $1)); }

# kernel_flat DESC OLD4 OLD6 [MIN]: in xdpr mode the kernel forwarded nothing
# since OLD4/OLD6; in kernel mode it forwarded at least MIN (v4 + v6)
kernel_flat() {
	_d4=$(delta4 "$2")
	_d6=$(delta6 "$3")
	if xdpr_mode; then
		is "$_d4 $_d6" "0 0" "$1: the kernel forwarded nothing (ForwDatagrams +$_d4, Ip6OutForwDatagrams +$_d6)"
	else
		num $((_d4 + _d6)) -ge "${4:-1}" "$1: the kernel forwarded it (ForwDatagrams +$_d4, Ip6OutForwDatagrams +$_d6)"
	fi
}

# grew DESC BEFORE DEV REASON MIN: an xdpr counter grew by >= MIN
grew() {
	_g=$(grown "$2" "$3" "$4")
	num "$_g" -ge "$5" "$1 ($3 $4 +$_g)"
}

# ---------------------------------------------------------------- set-up

sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
	net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
# 255 VLANs hold more neighbours than the table keeps by default
# (gc_thresh1 128: entries the kernel itself has not used for 60 s, as XDP's
# lookups leave them, would be collected)
for f in 4 6; do
	sysctl -qw "net.ipv$f.neigh.default.gc_thresh1=2048" "net.ipv$f.neigh.default.gc_thresh2=4096" \
		"net.ipv$f.neigh.default.gc_thresh3=8192"
done
$IP link set lo up
n=1
for d in "$IGB0" "$IGB1" "$E1K"; do
	$IP addr add "10.0.$n.1/24" dev "$d"
	$IP addr add "2001:db8:$n::1/64" dev "$d" nodad
	$IP link set "$d" up
	n=$((n + 1))
done

# vlan_cmds I VID: the ip -batch lines of VLAN index I on the trunk
vlan_cmds() {
	_q=
	[ $(($1 % 2)) -eq 0 ] && _q="egress-qos-map $EMAP"
	[ $(($1 % 3)) -eq 0 ] && _q="$_q ingress-qos-map $IMAP"
	echo "link add link $IGB0 name $IGB0.$2 type vlan id $2 $_q"
	echo "addr add 10.1.$1.1/24 dev $IGB0.$2"
	echo "addr add 2001:db8:11:$1::1/64 dev $IGB0.$2 nodad"
	echo "link set $IGB0.$2 up"
}
i=0
for vid in $VIDS; do
	vlan_cmds "$i" "$vid"
	i=$((i + 1))
done >/tmp/vlans.batch
k=0
for vid in 100 300; do
	echo "link add link $E1K name $E1K.$vid type vlan id $vid"
	echo "addr add 10.3.$k.1/24 dev $E1K.$vid"
	echo "addr add 2001:db8:13:$k::1/64 dev $E1K.$vid nodad"
	echo "link set $E1K.$vid up"
	k=$((k + 1))
done >>/tmp/vlans.batch
t0=$(uptime_ms)
ok "255 VLANs on $IGB0 (VIDs 100-353, 4094), 2 on $E1K (100, 300)" $IP -batch /tmp/vlans.batch
note "ip -batch of 255 + 2 VLANs with addresses: $(($(uptime_ms) - t0)) ms"
is "$(ls -d /sys/class/net/"$IGB0".* | wc -l)" "$NV" "$NV VLAN devices on $IGB0"
is "$($IP -d link show dev "$IGB0.100" | grep -o 'egress-qos-map { [0-9: ]*}')" \
	"egress-qos-map { 0:1 2:3 4:4 6:5 }" "$IGB0.100 has the egress-qos-map"
ok "carrier on all three ports" wait_carrier "$IGB0" "$IGB1" "$E1K"
diag "features: $IGB0 $(ethtool -k "$IGB0" | grep -E '^rx-vlan' | tr '\n' ' ')"
diag "features: $E1K $(ethtool -k "$E1K" | grep -E '^rx-vlan' | tr '\n' ' ')"

host_ok "host side of the igb trunk: relay for 255 VIDs, taps for 100-102" \
	vlan_up client 1 "$VID_LIST" 100,101,102
diag "$H_OUT"
host_ok "host side of the e1000e trunk: taps for VIDs 100 and 300" vlan_up peer 3 100,300 100,300
diag "$H_OUT"

host_ok "kernel path: c100 (VLAN 100) pings server" ping c100 10.0.2.2 3
host_ok "kernel path: c101 pings c102 (VLAN to VLAN)" ping c101 10.1.2.2 3
host_ok "kernel path: c100 pings server over IPv6" ping c100 2001:db8:2::2 3
host_ok "kernel path: p100 (e1000e VLAN 100) pings server" ping p100 10.0.2.2 3

# ---------------------------------------------------------------- attach

# attach_igb RXVLAN: attach both igb ports (xdpr mode), offload RXVLAN before
attach_igb() {
	cli link attach "$IGB0" "$IGB1"
	if [ "$RC" -ne 0 ]; then
		fail "link attach $IGB0 $IGB1 ($NV VLANs on $IGB0, rx-vlan-offload $1)"
		diag "exit $RC: $ERR"
		return 1
	fi
	pass "link attach $IGB0 $IGB1 ($NV VLANs on $IGB0, rx-vlan-offload $1)"
	diag "$OUT"
	[ -n "$ERR" ] && diag "stderr: $ERR"
	# the line of $IGB0 ($IGB1's offload may be on: its own note)
	case "$(printf '%s\n%s\n' "$OUT" "$ERR" | grep "^$IGB0:")" in
	*"receive VLAN offload turned off"*) _note=yes ;;
	*) _note=no ;;
	esac
	if [ "$1" = on ]; then
		is "$_note" yes "attach says \"receive VLAN offload turned off\" for $IGB0 (it was on)"
	else
		is "$_note" no "attach says nothing of receive VLAN offload for $IGB0 (it was off)"
	fi
	is "$(rxvlan "$IGB0")" off "rx-vlan-offload off on $IGB0 after attach"
	ok "igb carrier back after attach" wait_carrier "$IGB0" "$IGB1"
	is "$(lshow ".[] | select(.dev == \"$IGB0\") | \"\(.kind) \(.rx_vlan_offload) \(.vlans | length)\"")" \
		"port $(rxvlan "$IGB0") $NV" "link show -j: $IGB0 kind port, rx_vlan_offload as ethtool says, $NV vlans"
	is "$(lshow ".[] | select(.dev == \"$IGB0\") | .vlans | sort ==
		([range(100; 354) | \"$IGB0.\(.)\"] + [\"$IGB0.4094\"] | sort)")" true \
		"link show -j: $IGB0's vlans are $IGB0.100 ... $IGB0.353, $IGB0.4094"
	is "$(lshow "[.[] | select(.kind == \"vlan\" and .parent == \"$IGB0\")] | length")" "$NV" \
		"link show -j: $NV objects of kind vlan with parent $IGB0"
	is "$(lshow ".[] | select(.dev == \"$IGB0.4094\") | \"\(.kind) \(.parent) \(.vid)\"")" \
		"vlan $IGB0 4094" "link show -j: $IGB0.4094 is kind vlan, parent $IGB0, vid 4094"
	is "$(lshow ".[] | select(.dev == \"$IGB1\") | \"\(.kind) \(.vlans | length)\"")" "port 0" \
		"link show -j: $IGB1 kind port, no vlans"
	_l=$("$XDPR" link show 2>&1 | grep -c "$IGB0\.")
	num "$_l" -ge "$NV" "link show (text) lists the $NV VLANs ($_l lines)"
}

# detach_check DEV RXVLAN: after detach, DEV's offload is RXVLAN again
detach_check() {
	is "$(rxvlan "$1")" "$2" "rx-vlan-offload $2 on $1 after detach (as before attach)"
}

# ---------------------------------------------------------------- the sweeps

# core ROUND MB: the 255-VLAN sweeps, wire checks and a TCP transfer
core() {
	RND=$1
	# Neighbours first: the attach reset the links (and flushed them); the
	# first answer towards each VLAN waits for ARP / ND in the kernel.
	host sweep client $SWEEP --family 4 --mode untagged --dst 10.0.2.2 --id 0x7600 --timeout 20
	diag "warm-up, IPv4: $H_OUT"
	host sweep client $SWEEP --family 6 --mode untagged --dst 2001:db8:2::2 --id 0x7600 --timeout 20
	diag "warm-up, IPv6: $H_OUT"

	f4=$(fwd4)
	f6=$(fwd6)
	xdpr_mode && snap /tmp/snap0
	s1=$(ctr "$IGB1" forwarded)
	cap server
	sweep "$RND: VLAN -> untagged, IPv4: 255 echoes, every reply tagged right, TTL 63" \
		--family 4 --mode untagged --dst 10.0.2.2 --id 0x7611
	wire "$RND: on the wire at the server: 255 requests untagged, TTL 63" server \
		--kind echo --id 0x7611 "n=255 tags=- ttl=63 src=<255 values> dst=10.0.2.2 tos=0x00,0x08,0x11,0x1a"
	sweep "$RND: VLAN -> VLAN on the trunk, IPv4: 255 requests and replies tagged right, TTL 63" \
		--family 4 --mode vlan --id 0x7612
	cap server
	sweep "$RND: VLAN -> untagged, IPv6: 255 echoes, every reply tagged right, hop limit 63" \
		--family 6 --mode untagged --dst 2001:db8:2::2 --id 0x7613
	wire "$RND: IPv6 on the wire at the server: 255 requests untagged, hop limit 63" server \
		--kind echo --id 0x7613 "n=255 tags=- ttl=63 src=<255 values> dst=2001:db8:2::2 tos=0x00,0x08,0x11,0x1a"
	sweep "$RND: VLAN -> VLAN on the trunk, IPv6: PCP from the ingress-qos-map, hop limit 63" \
		--family 6 --mode vlan --id 0x7614
	kernel_flat "$RND: the sweeps" "$f4" "$f6" $((4 * 2 * NV))
	if xdpr_mode; then
		snap /tmp/snap1
		is "$(vlans_grown /tmp/snap0 /tmp/snap1 6)" "$NV" \
			"$RND: forwarded grew by >= 6 on each of the $NV VLANs (their own counters)"
		grew "$RND: forwarded on the untagged port" "$s1" "$IGB1" forwarded $((2 * NV))
	fi

	# one VLAN's traffic as tcpdump sees it on the trunk, TOS 0x10 (priority 6)
	cap client
	host_ok "$RND: server pings c102 (TOS 0x10), 5 echoes" ping server 10.1.2.2 5
	wire "$RND: on the trunk: requests to VLAN 102 tagged 8100:102, PCP $(epcp 2 0), TTL 63" client \
		--kind echo --from-guest --dst 10.1.2.2 "n=5 tags=8100:102:$(epcp 2 0):0 ttl=63 src=10.0.2.2 dst=10.1.2.2 tos=0x00"

	f4=$(fwd4)
	f6=$(fwd6)
	xdpr_mode && a0=$(ctr "$IGB0.100" forwarded)
	cap client
	host_ok "$RND: TCP, $2 MB c100 (VLAN 100) -> server arrive intact" tcp c100 server 10.0.2.2 5001 "$2"
	wire "$RND: on the trunk: the server's ACKs to VLAN 100 tagged 8100:100, PCP $(epcp 0 0), TTL 63" \
		client --kind tcp --from-guest --dst 10.1.0.2 \
		"n>=$(($2 * 100)) tags=8100:100:$(epcp 0 0):0 ttl=63 src=10.0.2.2 dst=10.1.0.2 tos=0x00"
	xdpr_mode && grew "$RND: TCP data forwarded in XDP" "$a0" "$IGB0.100" forwarded $(($2 * 600))
	kernel_flat "$RND: the TCP transfer" "$f4" "$f6" $(($2 * 100)) # GRO: merged segments count once
}

# ================================================================ round A: offload on

ethtool -K "$IGB0" rxvlan on >/dev/null 2>&1
is "$(rxvlan "$IGB0")" on "round A: rx-vlan-offload on on $IGB0 before attach"
E1K_RX=$(rxvlan "$E1K")
if xdpr_mode; then
	attach_igb on
	cli link attach "$E1K" mode skb
	if [ "$RC" -eq 0 ]; then
		pass "link attach $E1K mode skb (2 VLANs, rx-vlan-offload $E1K_RX)"
		diag "$OUT"
	else
		fail "link attach $E1K mode skb (2 VLANs, rx-vlan-offload $E1K_RX)"
		diag "exit $RC: $ERR"
	fi
	is "$(rxvlan "$E1K")" off "rx-vlan-offload off on $E1K after attach"
	is "$(lshow ".[] | select(.dev == \"$E1K\") | \"\(.kind) \(.mode) \(.vlans | sort | join(\",\"))\"")" \
		"port skb $E1K.100,$E1K.300" "link show -j: $E1K kind port, skb, vlans $E1K.100 and $E1K.300"
	is "$(lshow ".[] | select(.dev == \"$E1K.300\") | \"\(.kind) \(.parent) \(.vid)\"")" \
		"vlan $E1K 300" "link show -j: $E1K.300 is kind vlan, parent $E1K, vid 300"
fi

core "A (offload on)" 4

# ---- VLAN to VLAN over the trunk, a real TCP stack at each end
xdpr_mode && a1=$(ctr "$IGB0.101" forwarded)
f4=$(fwd4)
f6=$(fwd6)
cap client
host_ok "TCP, 1 MB c101 (VLAN 101) -> c102 (VLAN 102) arrive intact" tcp c101 c102 10.1.2.2 5002 1
wire "on the trunk: data to VLAN 102 tagged 8100:102, PCP $(epcp 2 0), TTL 63" client \
	--kind tcp --from-guest --src 10.1.1.2 \
	"n>=600 tags=8100:102:$(epcp 2 0):0 ttl=63 src=10.1.1.2 dst=10.1.2.2 tos=0x00"
host wcap_read client --kind tcp --from-guest --src 10.1.1.2 --lens
diag "  $H_OUT"
xdpr_mode && grew "VLAN -> VLAN TCP data forwarded in XDP" "$a1" "$IGB0.101" forwarded 600
kernel_flat "VLAN -> VLAN TCP" "$f4" "$f6" 100

# ---- tags the fast path leaves to the kernel: unknown VID, VID 0 (priority
# tag), 802.1ad outer tags, two 802.1Q tags
$IP link set "$IGB0" promisc on # igb's VLAN filter off: every VID reaches the driver
cap server
# inject_case DESC TAGS SRC ID REASON: 10 echo requests towards the server
inject_case() {
	_rx=$(rxpk "$IGB0")
	xdpr_mode && _p=$(ctr "$IGB0" "$5")
	if host inject client --gw "$GW" --tags "$2" --src "$3" --dst 10.0.2.2 --count 10 --id "$4"; then
		sleep 1
		num $(($(rxpk "$IGB0") - _rx)) -ge 10 "$1: the 10 frames reach the $IGB0 driver"
		xdpr_mode && grew "$1: counted as $5 on $IGB0" "$_p" "$IGB0" "$5" 10
	else
		fail "$1: sent"
		diag "$H_OUT"
	fi
}
inject_case "VID 5 (no such VLAN)" 0x8100:5 10.1.0.2 0x7621 pass_vlan
inject_case "VID 0, PCP 3 (priority tag)" 0x8100:0:3 10.0.1.2 0x7622 pass_vlan
inject_case "802.1ad outer tag 100, 802.1Q 100 inside" 0x88a8:100,0x8100:100 10.1.0.2 0x7623 pass_vlan_qinq
inject_case "802.1ad tag 100 alone" 0x88a8:100 10.1.0.2 0x7624 pass_vlan_qinq
inject_case "two 802.1Q tags, 100 then 101" 0x8100:100,0x8100:101 10.1.0.2 0x7625 pass_vlan_qinq
$IP link set "$IGB0" promisc off
nothing="n=0 tags= ttl= src= dst= tos="
wire "VID 5: nothing reaches the server" server --kind echo --id 0x7621 "$nothing"
wire "VID 0: the kernel forwards it as untagged (TTL 63)" server --kind echo --id 0x7622 \
	"n=10 tags=- ttl=63 src=10.0.1.2 dst=10.0.2.2 tos=0x00"
wire "802.1ad + 802.1Q: nothing reaches the server" server --kind echo --id 0x7623 "$nothing"
wire "802.1ad alone: nothing reaches the server" server --kind echo --id 0x7624 "$nothing"
wire "two 802.1Q tags: nothing reaches the server" server --kind echo --id 0x7625 "$nothing"

# ---- masquerade out of a VLAN interface
if xdpr_mode; then
	cli_ok "nat add out $IGB0.100 masquerade" nat add out "$IGB0.100" masquerade
	msrc=10.1.0.1
	what="masquerade"
	s1=$(ctr "$IGB1" forwarded)
	a0=$(ctr "$IGB0.100" forwarded)
else
	msrc=10.0.2.2
	what="no NAT in the guest kernel (baseline)"
fi
cap client
host_ok "$what: server pings c100 through $IGB0.100 (5 echoes, replies come back)" ping server 10.1.0.2 5
wire "$what: on the trunk, requests to VLAN 100 from $msrc, TTL 63" client \
	--kind echo --from-guest --dst 10.1.0.2 "n=5 tags=8100:100:$(epcp 0 0):0 ttl=63 src=$msrc dst=10.1.0.2 tos=0x00"
wire "$what: on the trunk, c100's replies to $msrc" client \
	--kind reply --to-guest --src 10.1.0.2 "n=5 tags=8100:100:0:0 ttl=64 src=10.1.0.2 dst=$msrc tos=0x00"
host tcp_peer server c100 10.1.0.2 5003
is "$H_OUT" "$msrc" "$what: a TCP server in c100 sees $msrc"
if xdpr_mode; then
	grew "masquerade: requests forwarded in XDP" "$s1" "$IGB1" forwarded 5
	grew "masquerade: replies forwarded in XDP" "$a0" "$IGB0.100" forwarded 5
	cli_ok "nat del out $IGB0.100" nat del out "$IGB0.100"
fi

# ---- e1000e as a VLAN parent (generic XDP): it cannot transmit XDP frames,
# so what goes towards it is the kernel's
xdpr_mode && e0=$(ctr "$E1K.100" forwarded)
cap server
cap peer
host_ok "e1000e VLAN 100 -> untagged igb: p100 pings server (5 echoes)" ping p100 10.0.2.2 5
wire "at the server: TTL 63 from p100" server --kind echo --src 10.3.0.2 \
	"n=5 tags=- ttl=63 src=10.3.0.2 dst=10.0.2.2 tos=0x00"
wire "on the e1000e trunk: replies tagged 8100:100, PCP 0, TTL 63" peer \
	--kind reply --from-guest --dst 10.3.0.2 "n=5 tags=8100:100:0:0 ttl=63 src=10.0.2.2 dst=10.3.0.2 tos=0x00"
xdpr_mode && grew "e1000e VLAN 100 forwarded (its own counters, not $IGB0.100's)" "$e0" "$E1K.100" forwarded 5
xdpr_mode && e3=$(ctr "$E1K.300" forwarded)
cap client
cap peer
host_ok "e1000e VLAN 300 -> igb VLAN 101: p300 pings c101 (5 echoes)" ping p300 10.1.1.2 5
wire "on the igb trunk: requests tagged 8100:101, PCP $(epcp 1 0), TTL 63" client \
	--kind echo --from-guest --src 10.3.1.2 "n=5 tags=8100:101:$(epcp 1 0):0 ttl=63 src=10.3.1.2 dst=10.1.1.2 tos=0x00"
wire "on the e1000e trunk: replies tagged 8100:300, TTL 63" peer \
	--kind reply --from-guest --dst 10.3.1.2 "n=5 tags=8100:300:0:0 ttl=63 src=10.1.1.2 dst=10.3.1.2 tos=0x00"
xdpr_mode && grew "e1000e VLAN 300 forwarded" "$e3" "$E1K.300" forwarded 5
host_ok "e1000e VLAN 100 -> untagged igb over IPv6: p100 pings server" ping p100 2001:db8:2::2 3
xdpr_mode && e0=$(ctr "$E1K.100" forwarded)
host_ok "TCP, 1 MB p100 (e1000e VLAN 100) -> c100 (igb VLAN 100) arrive intact" tcp p100 c100 10.1.0.2 5004 1
xdpr_mode && grew "e1000e VLAN 100: TCP data forwarded" "$e0" "$E1K.100" forwarded 600

# ---- the CLI's rules for VLANs, detach
if xdpr_mode; then
	cli link attach "$IGB0.100"
	is "$RC:$OUT" "1:" "link attach $IGB0.100 (a VLAN): exit 1, nothing on stdout"
	is "$ERR" "Error: \"$IGB0.100\" is a VLAN of \"$IGB0\": attach \"$IGB0\", its VLANs come with it" \
		"the error says to attach $IGB0, in one line"
	cli link detach "$IGB0.100"
	is "$RC" 1 "link detach $IGB0.100 (a VLAN): exit 1"
	case "$ERR" in
	"Error: \"$IGB0.100\" is a VLAN of \"$IGB0\""*) pass "the error says $IGB0.100 is a VLAN of $IGB0" ;;
	*) fail "the error says $IGB0.100 is a VLAN of $IGB0"; diag "got: $ERR" ;;
	esac
	is "$(lshow ".[] | select(.dev == \"$IGB0.100\") | .kind")" vlan "$IGB0.100 still enrolled after the refused detach"
	cli_ok "link detach $IGB0" link detach "$IGB0"
	is "$(lshow "[.[] | select(.dev == \"$IGB0\" or .parent == \"$IGB0\")] | length")" 0 \
		"link show: $IGB0 and its $NV VLANs gone"
	detach_check "$IGB0" on
	ok "igb carrier back after detach" wait_carrier "$IGB0"
	host_ok "kernel path after detach: c100 pings server" ping c100 10.0.2.2 3
	cli_ok "link detach all" link detach all
	detach_check "$E1K" "$E1K_RX"
	is "$(lshow length)" 0 "link show: nothing attached"
fi

# ================================================================ round B: offload off

ethtool -K "$IGB0" rxvlan off >/dev/null 2>&1
is "$(rxvlan "$IGB0")" off "round B: rx-vlan-offload off on $IGB0 before attach"
xdpr_mode && attach_igb off
core "B (offload off)" 2

# sync_says DEV: the output of the last "xdpr link sync" names the change of DEV
sync_says() {
	case "$OUT" in
	*"$1"*) pass "link sync says what it changed: $(echo "$OUT" | head -n 1)" ;;
	*) fail "link sync says what it changed ($1)"; diag "stdout: '$OUT'"; diag "stderr: '$ERR'" ;;
	esac
}

# ---- VLANs deleted, added, downed and upped after attach (index 200 is
# VID 300, 201 is VID 301)
$IP link del "$IGB0.300"
if xdpr_mode; then
	cli_ok "link sync after ip link del $IGB0.300" link sync
	sync_says "$IGB0.300"
	# forgotten, or listed as gone (as a deleted port is) until it is back
	is "$(lshow "[.[] | select(.dev == \"$IGB0.300\") | .state // \"\"] | if length == 0 then \"forgotten\"
		elif .[0] == \"gone\" then \"forgotten\" else .[0] end")" forgotten \
		"link show: $IGB0.300 is no longer an active VLAN (absent or gone)"
	p=$(ctr "$IGB0" pass_vlan)
fi
$IP link set "$IGB0" promisc on # VID 300 left igb's VLAN filter with the device
rx=$(rxpk "$IGB0")
sweep "VLAN 300 deleted: its echo is not answered" --family 4 --mode untagged --dst 10.0.2.2 \
	--idx 200 --expect none --timeout 3 --id 0x7631
num $(($(rxpk "$IGB0") - rx)) -ge 1 "VLAN 300 deleted: the frame reaches the $IGB0 driver (promiscuous)"
$IP link set "$IGB0" promisc off
xdpr_mode && grew "VID 300 deleted: the frame goes to the kernel" "$p" "$IGB0" pass_vlan 1

vlan_cmds 200 300 >/tmp/v300.batch
ok "ip link add $IGB0.300 again (with its addresses)" $IP -batch /tmp/v300.batch
if xdpr_mode; then
	cli_ok "nat add out $IGB0.300 masquerade right after (a state-changing command follows VLANs)" \
		nat add out "$IGB0.300" masquerade
	is "$(lshow ".[] | select(.dev == \"$IGB0.300\") | \"\(.kind) \(.parent) \(.vid)\"")" "vlan $IGB0 300" \
		"link show: $IGB0.300 enrolled again"
	cli_ok "nat del out $IGB0.300" nat del out "$IGB0.300"
	a=$(ctr "$IGB0.300" forwarded)
fi
sweep "VLAN 300 added back: answered, tagged right" --family 4 --mode untagged --dst 10.0.2.2 \
	--idx 200 --id 0x7632 --timeout 10
xdpr_mode && grew "VLAN 300 added back: forwarded in XDP" "$a" "$IGB0.300" forwarded 1

$IP link set "$IGB0.301" down
if xdpr_mode; then
	cli_ok "link sync after ip link set $IGB0.301 down" link sync
	sync_says "$IGB0.301"
	p=$(ctr "$IGB0" pass_vlan)
fi
sweep "VLAN 301 down: its echo is not answered" --family 4 --mode untagged --dst 10.0.2.2 \
	--idx 201 --expect none --timeout 3 --id 0x7633
xdpr_mode && grew "VLAN 301 down: the frame goes to the kernel" "$p" "$IGB0" pass_vlan 1
$IP link set "$IGB0.301" up
if xdpr_mode; then
	cli_ok "link sync after ip link set $IGB0.301 up" link sync
	sync_says "$IGB0.301"
	a=$(ctr "$IGB0.301" forwarded)
fi
sweep "VLAN 301 up again: answered, tagged right" --family 4 --mode untagged --dst 10.0.2.2 \
	--idx 201 --id 0x7634 --timeout 10
xdpr_mode && grew "VLAN 301 up again: forwarded in XDP" "$a" "$IGB0.301" forwarded 1

# ---- VLANs followed with no command run: by xdprd (VID 400 created and
# deleted), without it by the next "xdpr link sync" (VID 401), and changes
# made while xdprd was stopped by its next start (401 deleted, 402 created).
# VIDs 400-402 are none of the 255: a second relay on the trunk gives each
# a namespace, c400 c401 c402 (10.5.i.2), the guest's VLANs being 10.5.i.1.
# No command that syncs runs while xdprd is to do it: only commands that
# take the router's lock sync (link sync, attach, nat/route/filter changes,
# restore); link show and stats only read the maps, so the VLAN they show
# enrolled is the daemon's doing.  Each xdpr command costs seconds under
# emulation (256 interfaces): counters are read once before and once after.

# vlan_new VID I: the ip -batch lines of a new VLAN VID (10.5.I.1/24, no QoS maps)
vlan_new() {
	echo "link add link $IGB0 name $IGB0.$1 type vlan id $1"
	echo "addr add 10.5.$2.1/24 dev $IGB0.$1"
	echo "addr add 2001:db8:15:$2::1/64 dev $IGB0.$1 nodad"
	echo "link set $IGB0.$1 up"
}

# vstate DEV: "STATE KIND PARENT VID" of DEV in link show -j ("" if not listed)
vstate() { lshow ".[] | select(.dev == \"$1\") | \"\(.state) \(.kind) \(.parent) \(.vid)\""; }

# stats_to FILE: "DEV REASON PACKETS" of every counter (one xdpr -j stats)
stats_to() {
	"$XDPR" -j stats 2>/dev/null </dev/null | "$JQ" -r '.interfaces[] | .dev as $d |
		.reasons | to_entries[] | "\($d) \(.key) \(.value.packets)"' >"$1" 2>/dev/null
}
# sgrew DESC OLD NEW DEV REASON MIN: the counter grew by >= MIN from file OLD to NEW
# (OLD "-": from 0, a VLAN enrolled since)
sgrew() {
	_o=$2
	[ "$_o" = - ] && _o=/dev/null
	_g=$(awk -v d="$4" -v r="$5" -v z="$2" '$1 == d && $2 == r { v[FILENAME == ARGV[1]] = $3 }
		END { if (z == "-") v[1] = 0; if ((0 in v) && (1 in v)) print v[0] - v[1]; else print "none" }' \
		"$_o" "$3" 2>/dev/null </dev/null)
	num "$_g" -ge "$6" "$1 ($4 $5 +$_g)"
}
# fwd_of FILE: "DEV FORWARDED" lines of a stats_to file (snap's format, for vlans_grown)
fwd_of() { awk '$2 == "forwarded" { print $1, $3 }' "$1"; }

# until_ok CMD...: until CMD succeeds, at most 30 s (prints the ms it took)
until_ok() {
	_t0=$(uptime_ms)
	_i=0
	while [ "$_i" -lt 150 ]; do
		if "$@"; then
			echo $(($(uptime_ms) - _t0))
			return 0
		fi
		sleep 0.2
		_i=$((_i + 1))
	done
	echo $(($(uptime_ms) - _t0))
	return 1
}
# not_running PID: PID has exited (a child not yet waited for is a zombie: kill -0 still finds it)
not_running() { [ ! -e "/proc/$1/stat" ] || [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
# dlog TEXT: the daemon's log lines containing TEXT; dlogged TEXT: there is one
dlog() { grep -F -- "$1" /tmp/xdprd.log 2>/dev/null; }
dlogged() { dlog "$1" >/dev/null; }
# d_routed DEV VID: the daemon enrolled DEV up (in one go, or down first and then up)
d_routed() {
	dlog "$DEV_PFX$1: VLAN $2 of $IGB0 enrolled" | grep -qv '(down' ||
		dlogged "$DEV_PFX$1: up: its frames are routed in XDP"
}

# started_more N: the log says "running" more than N times
started_more() { [ "$(grep -c 'running: config' /tmp/xdprd.log)" -gt "$1" ]; }
# dstart DESC: start xdprd (its file: the state that runs), $DPID; appends to its log
dstart() {
	DPID=
	if [ ! -x "$XDPRD" ]; then
		fail "$1: xdprd is in the guest ($XDPRD: build it on the host, make all)"
		return 1
	fi
	# plain background start, --foreground: $! is xdprd itself
	"$XDPRD" --foreground --config /tmp/xdprd.conf --metrics none --gc 60 \
		>>/tmp/xdprd.log 2>&1 </dev/null &
	DPID=$!
	_n=$(grep -c 'running: config' /tmp/xdprd.log)
	if until_ok started_more "$_n" >/dev/null; then
		pass "$1 (pid $DPID): $(dlog 'running:' | tail -n 1)"
	else
		fail "$1"
		diag "$(tail -n 20 /tmp/xdprd.log)"
	fi
}
# dstop: SIGTERM, exit 0, the fast path kept
dstop() {
	kill -TERM "$DPID"
	until_ok not_running "$DPID" >/dev/null || kill -9 "$DPID"
	wait "$DPID"
	is "$?" 0 "xdprd stops on SIGTERM, exit 0"
	ok "xdprd: the fast path keeps running (on-stop keep)" dlogged "stopping: the fast path keeps running"
	DPID=
}

dt0=$(uptime_ms)
host_ok "host side of new VIDs 400-402 on the trunk: a second relay, namespaces c400 c401 c402" \
	vlan_up client 5 400,401,402 400,401,402
diag "$H_OUT"

DPID=
if xdpr_mode; then
	# the state that runs (what "xdpr save" prints): the start changes nothing
	echo "link attach $IGB0 $IGB1" >/tmp/xdprd.conf
	: >/tmp/xdprd.log
	dstart "xdprd started"
	ok "xdprd: the file is what already runs" dlogged "start: configuration applied: the router already ran it"
fi

vlan_new 400 0 >/tmp/v400.batch
ok "ip link add $IGB0.400 (VID 400, its addresses, up), no xdpr command after it" $IP -batch /tmp/v400.batch
en_ms=
if [ -n "$DPID" ]; then
	# the log first (a grep): link show would take the CPU the daemon needs
	DEV_PFX=
	if en_ms=$(until_ok d_routed "$IGB0.400" 400); then
		pass "xdprd enrolled $IGB0.400 after $en_ms ms: $(dlog "$IGB0.400: VLAN 400" | head -n 1)"
	else
		fail "xdprd logged the enrolment of $IGB0.400, up, within 30 s"
		diag "$(tail -n 20 /tmp/xdprd.log)"
	fi
	is "$(vstate "$IGB0.400")" "attached vlan $IGB0 400" \
		"link show (it does not sync) lists $IGB0.400 as VLAN 400 of $IGB0, attached"
fi
# neighbours (ARP, ND) first: what the kernel resolves is not what is counted
host ping c400 10.0.2.2 1
diag "warm-up c400 -> server: $H_OUT"
host ping c400 2001:db8:2::2 1
diag "warm-up c400 -> server, IPv6: $H_OUT"
host ping c400 10.1.0.2 1
diag "warm-up c400 -> c100: $H_OUT"

f4=$(fwd4)
f6=$(fwd6)
xdpr_mode && stats_to /tmp/st0
cap server
cap client
host_ok "VLAN 400 -> untagged: c400 pings server (5 echoes)" ping c400 10.0.2.2 5
host_ok "VLAN 400 -> untagged, IPv6: c400 pings server (3 echoes)" ping c400 2001:db8:2::2 3
host_ok "VLAN 400 -> VLAN 100 on the trunk: c400 pings c100 (5 echoes)" ping c400 10.1.0.2 5
wire "VLAN 400: at the server, c400's requests untagged, TTL 63" server \
	--kind echo --src 10.5.0.2 "n=5 tags=- ttl=63 src=10.5.0.2 dst=10.0.2.2 tos=0x00"
wire "VLAN 400: at the server, c400's IPv6 requests untagged, hop limit 63" server \
	--kind echo --src 2001:db8:15::2 "n=3 tags=- ttl=63 src=2001:db8:15::2 dst=2001:db8:2::2 tos=0x00"
wire "VLAN 400: on the trunk, the server's replies tagged 8100:400, PCP 0, TTL 63" client \
	--kind reply --from-guest --src 10.0.2.2 --dst 10.5.0.2 \
	"n=5 tags=8100:400:0:0 ttl=63 src=10.0.2.2 dst=10.5.0.2 tos=0x00"
wire "VLAN 400: on the trunk, IPv6 replies tagged 8100:400, hop limit 63" client \
	--kind reply --from-guest --dst 2001:db8:15::2 \
	"n=3 tags=8100:400:0:0 ttl=63 src=2001:db8:2::2 dst=2001:db8:15::2 tos=0x00"
wire "VLAN 400 -> 100: on the trunk, requests tagged 8100:100, PCP $(epcp 0 0), TTL 63" client \
	--kind echo --from-guest --src 10.5.0.2 \
	"n=5 tags=8100:100:$(epcp 0 0):0 ttl=63 src=10.5.0.2 dst=10.1.0.2 tos=0x00"
wire "VLAN 100 -> 400: on the trunk, c100's replies tagged 8100:400, PCP 0, TTL 63" client \
	--kind reply --from-guest --src 10.1.0.2 --dst 10.5.0.2 \
	"n=5 tags=8100:400:0:0 ttl=63 src=10.1.0.2 dst=10.5.0.2 tos=0x00"
kernel_flat "VLAN 400's traffic" "$f4" "$f6" 26
if xdpr_mode; then
	stats_to /tmp/st1
	sgrew "VLAN 400: c400's requests forwarded in XDP, counted as $IGB0.400's" /tmp/st0 /tmp/st1 \
		"$IGB0.400" forwarded 13
	sgrew "VLAN 400: the server's replies forwarded in XDP" /tmp/st0 /tmp/st1 "$IGB1" forwarded 8
	sgrew "VLAN 400: c100's replies forwarded in XDP" /tmp/st0 /tmp/st1 "$IGB0.100" forwarded 5
fi

# ---- VLAN 400 deleted: xdprd takes it out, its VID goes to the kernel
ok "ip link del $IGB0.400, no xdpr command after it" $IP link del "$IGB0.400"
out_ms=
if [ -n "$DPID" ]; then
	if out_ms=$(until_ok dlogged "$IGB0.400: VLAN 400 deleted: taken out"); then
		pass "xdprd took VLAN 400 out after $out_ms ms: $(dlog "$IGB0.400: VLAN 400 deleted" | head -n 1)"
	else
		fail "xdprd logged \"$IGB0.400: VLAN 400 deleted: taken out\" within 30 s"
		diag "$(tail -n 20 /tmp/xdprd.log)"
	fi
	is "$(lshow "([.[] | select(.dev == \"$IGB0.400\") | .state] | join(\",\")) + \" \" +
		([.[] | select(.dev == \"$IGB0\") | .vlans[] | select(. == \"$IGB0.400\")] | length | tostring)")" \
		"gone 0" "link show: $IGB0.400 listed as gone (with its counters), not among $IGB0's vlans"
fi
# VID 400 left igb's VLAN filter with the device: promiscuous, its frames reach the driver
$IP link set "$IGB0" promisc on
rx=$(rxpk "$IGB0")
cap server
host inject client --gw "$GW" --tags 0x8100:400 --src 10.5.0.2 --dst 10.0.2.2 --count 10 --id 0x7641
diag "inject: $H_OUT"
sleep 1
$IP link set "$IGB0" promisc off
num $(($(rxpk "$IGB0") - rx)) -ge 10 "VID 400 deleted: 10 tagged frames reach the $IGB0 driver"
wire "VID 400 deleted: nothing reaches the server" server --kind echo --id 0x7641 "$nothing"
f4=$(fwd4)
f6=$(fwd6)
sweep "VLAN 400 deleted: the 255 other VLANs still answered, tagged right" \
	--family 4 --mode untagged --dst 10.0.2.2 --id 0x7642
kernel_flat "after VLAN 400 deleted: the 255 VLANs' sweep" "$f4" "$f6" $((2 * NV))
if xdpr_mode; then
	stats_to /tmp/st2
	sgrew "VID 400 deleted: its frames go to the kernel, counted on $IGB0" /tmp/st1 /tmp/st2 "$IGB0" pass_vlan 10
	fwd_of /tmp/st1 >/tmp/snap2
	fwd_of /tmp/st2 >/tmp/snap3
	is "$(vlans_grown /tmp/snap2 /tmp/snap3 1)" "$NV" "after VLAN 400 deleted: each of the $NV VLANs forwarded in XDP"
fi
[ -n "$DPID" ] && dstop

# ---- VLAN 401 added without xdprd: the next link sync enrols it
vlan_new 401 1 >/tmp/v401.batch
ok "ip link add $IGB0.401 (VID 401, its addresses, up), xdprd stopped" $IP -batch /tmp/v401.batch
xdpr_mode && is "$(vstate "$IGB0.401")" "" \
	"link show: $IGB0.401 not enrolled (nothing synced: no xdprd, no locked command)"
f4=$(fwd4)
host_ok "VLAN 401 -> untagged: c401 pings server (3 echoes)" ping c401 10.0.2.2 3
sync_ms=
if xdpr_mode; then
	num "$(delta4 "$f4")" -ge 3 "before link sync: the kernel forwarded them (ForwDatagrams +$(delta4 "$f4"))"
	t=$(uptime_ms)
	cli link sync
	sync_ms=$(($(uptime_ms) - t))
	is "$RC:$ERR" "0:" "link sync: exit 0, nothing on stderr ($sync_ms ms)"
	is "$(echo "$OUT" | grep -F "$IGB0.401")" "$IGB0.401: VLAN 401 of $IGB0 enrolled" \
		"link sync says what changed: \"$IGB0.401: VLAN 401 of $IGB0 enrolled\""
	stats_to /tmp/st3
	sgrew "before link sync: VID 401's frames went to the kernel" /tmp/st2 /tmp/st3 "$IGB0" pass_vlan 3
	is "$(vstate "$IGB0.401")" "attached vlan $IGB0 401" "link show: $IGB0.401 is VLAN 401 of $IGB0"
fi
f4=$(fwd4)
f6=$(fwd6)
cap server
cap client
host_ok "VLAN 401 -> untagged: c401 pings server (5 echoes)" ping c401 10.0.2.2 5
wire "VLAN 401: at the server, c401's requests untagged, TTL 63" server \
	--kind echo --src 10.5.1.2 "n=5 tags=- ttl=63 src=10.5.1.2 dst=10.0.2.2 tos=0x00"
wire "VLAN 401: on the trunk, the server's replies tagged 8100:401, PCP 0, TTL 63" client \
	--kind reply --from-guest --dst 10.5.1.2 "n=5 tags=8100:401:0:0 ttl=63 src=10.0.2.2 dst=10.5.1.2 tos=0x00"
kernel_flat "VLAN 401's traffic" "$f4" "$f6" 10
if xdpr_mode; then
	stats_to /tmp/st4
	sgrew "VLAN 401: c401's requests forwarded in XDP" /tmp/st3 /tmp/st4 "$IGB0.401" forwarded 5
	sgrew "VLAN 401: the replies forwarded in XDP" /tmp/st3 /tmp/st4 "$IGB1" forwarded 5
fi

# ---- while xdprd is stopped, 401 deleted and 402 created: its start follows both
$IP link del "$IGB0.401"
vlan_new 402 2 >/tmp/v402.batch
ok "xdprd stopped: ip link del $IGB0.401, ip link add $IGB0.402 (VID 402)" $IP -batch /tmp/v402.batch
if xdpr_mode; then
	dstart "xdprd started again"
	DEV_PFX="start: "
	ok "xdprd's start enrolled $IGB0.402: \"start: $IGB0.402: VLAN 402 of $IGB0 enrolled\"" \
		d_routed "$IGB0.402" 402
	ok "xdprd's start took $IGB0.401 out: \"start: $IGB0.401: VLAN 401 deleted: taken out\"" \
		dlogged "start: $IGB0.401: VLAN 401 deleted: taken out"
	is "$(lshow "[.[] | select(.dev == \"$IGB0.401\" or .dev == \"$IGB0.402\") | \"\(.dev) \(.state)\"] | sort | join(\",\")")" \
		"$IGB0.401 gone,$IGB0.402 attached" "link show: $IGB0.402 attached, $IGB0.401 gone"
fi
host ping c402 10.0.2.2 1
diag "warm-up c402 -> server: $H_OUT"
f4=$(fwd4)
f6=$(fwd6)
host_ok "VLAN 402 -> untagged: c402 pings server (3 echoes)" ping c402 10.0.2.2 3
kernel_flat "VLAN 402's traffic" "$f4" "$f6" 6
if xdpr_mode; then
	stats_to /tmp/st5
	sgrew "VLAN 402: c402's requests forwarded in XDP" - /tmp/st5 "$IGB0.402" forwarded 3
	[ -n "$DPID" ] && dstop
	diag "xdprd's log:"
	diag "$(cat /tmp/xdprd.log)"
fi
note "VLANs followed with no command: xdprd enrolled VID 400 in ${en_ms:--} ms, took it out in ${out_ms:--} ms; link sync ${sync_ms:--} ms; the part $(($(uptime_ms) - dt0)) ms"

if xdpr_mode; then
	cli_ok "link detach all" link detach all
	detach_check "$IGB0" off
	ok "igb carrier back after detach" wait_carrier "$IGB0" "$IGB1"
fi
host_ok "kernel path at the end: c100 pings server" ping c100 10.0.2.2 3

if [ "$T_FAILED" -gt 0 ]; then
	diag "guest dmesg (last 30 lines):"
	diag "$(dmesg | tail -n 30)"
fi
exit "$T_FAILED"
