#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vlan.t - VLANs in the fast path on real drivers (issue 13): 255 VLANs on
# an igb trunk, an untagged igb port, an e1000e VLAN parent in generic mode,
# in a QEMU guest (TCG).  The scenario is guest/vlan.sh.
#
# The host kernel has no 802.1Q: vlanhost.py terminates the guest's trunks
# in user space (AF_PACKET on the QEMU tap, tags given back by
# PACKET_AUXDATA): a few VIDs are relayed to untagged taps in namespaces of
# their own (real Linux stacks: ping, TCP), every other VID gets a simulated
# host answering ARP, neighbour solicitations and echo requests, and sweeps
# send one tagged echo per VLAN and check every answer byte-wise.
#
# VLANs created and deleted after the attach are followed without a command:
# by xdprd running in the guest (VID 400), then, without it, by the next
# `xdpr link sync` (VID 401); a second relay on the trunk is their host side.
#
#   XDPR_VM_VLAN=xdpr    (default) xdpr attached: forwarded in XDP, the guest
#                        kernel's forwarding counters stay flat
#   XDPR_VM_VLAN=kernel  no xdpr: the guest kernel forwards the same traffic
#                        and every wire check holds (the baseline that shows
#                        the checks see what they check)
. "$(dirname "$0")/lib.sh"

VLAN_MODE=${XDPR_VM_VLAN:-xdpr}
case "$VLAN_MODE" in
kernel | xdpr) ;;
*) bail_out "XDPR_VM_VLAN=$VLAN_MODE: want xdpr or kernel" ;;
esac
VM_GUEST_ENV=("VLAN_MODE=$VLAN_MODE")
# The xdpr run takes 350-410 s in the guest here (three attaches verified
# under emulation, 9 MB of TCP), 100-140 s more with the VLANs followed
# after attach (each xdpr command seconds under emulation), and up to twice
# as much on a slow shared host (901 s of its 900 on 2026-12-07, when the
# whole `make test` took 42 minutes; 1,023 s later that day, 45 minutes):
# more room than lib.sh's 480 s default.
VM_QEMU_TIMEOUT=${XDPR_VM_TIMEOUT:-1500}

# ---------------------------------------------------------------- host requests

# vlan_up ROLE PFX VIDS TAPVIDS: vlanhost.py relay on ROLE's tap, the host
# side of VLAN index i (position in VIDS, e.g. 100-353,4094) being
# 10.PFX.i.2/24 and 2001:db8:1PFX:i::2/64 (2001:db8:PFX::/64 is the untagged
# port's).  Several relays may share a tap (VIDs of their own, PFX apart:
# each ignores the VIDs it was not given).  Each VID of TAPVIDS (comma list)
# gets a namespace of its own, role R+VID (R: ROLE's first letter, c100),
# on an untagged tap with those addresses; the relay answers for the others.
host_vlan_up() {
	local role=$1 pfx=$2 vids=$3 taps=$4 ns=${VM_ROLE_NS[$1]} tap=${VM_ROLE_TAP[$1]}
	local log=$VM_RUN/relay-$1-$2.log pid i w name vid idx vns vrole n=0
	[ -n "$ns" ] || {
		H_OUT="no role $role"
		return 2
	}
	timeout $((VM_QEMU_TIMEOUT + 15)) ip netns exec "$ns" "$VM_PY" "$VM_SRC/vlanhost.py" relay \
		--dev "$tap" --vids "$vids" --addr4 "10.$pfx.%d.2" --addr6 "2001:db8:1$pfx:%d::2" \
		--taps "$taps" --tap-prefix "xvm$VM_ID${role:0:1}" >"$log" 2>&1 &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		grep -qx ready "$log" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -qx ready "$log" || {
		H_OUT="relay on $role did not start: $(tail -c 300 "$log" | tr '\n' ' ')"
		return 1
	}
	while read -r w name vid idx; do
		[ "$w" = tap ] || continue
		vrole=${role:0:1}$vid
		vns=xdpr-vm-$VM_ID-$vrole
		ip netns add "$vns" || {
			H_OUT="cannot create namespace $vns"
			return 1
		}
		VM_NS+=("$vns")
		VM_ROLE_NS[$vrole]=$vns
		VM_ROLE_TAP[$vrole]=$name
		ip -n "$ns" link set dev "$name" netns "$vns" || {
			H_OUT="cannot move $name into $vns"
			return 1
		}
		ip netns exec "$vns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
			net.ipv6.conf.default.accept_dad=0 >/dev/null
		ip -n "$vns" link set lo up
		ip -n "$vns" addr add "10.$pfx.$idx.2/24" dev "$name"
		ip -n "$vns" addr add "2001:db8:1$pfx:$idx::2/64" dev "$name" nodad
		ip -n "$vns" link set "$name" up
		ip -n "$vns" route add default via "10.$pfx.$idx.1"
		ip -n "$vns" -6 route add default via "2001:db8:1$pfx:$idx::1"
		n=$((n + 1))
	done <"$log"
	H_OUT="relay on $role (pid $pid): VIDs $vids, $n on taps ($taps)"
}

# vlan_py VERB ROLE ARGS...: vlanhost.py VERB on ROLE's tap; its last line.
vlan_py() {
	local verb=$1 role=$2 rc f=$VM_RUN/vlanhost.out
	shift 2
	[ -n "${VM_ROLE_NS[$role]}" ] || {
		H_OUT="no role $role"
		return 2
	}
	timeout 120 ip netns exec "${VM_ROLE_NS[$role]}" "$VM_PY" "$VM_SRC/vlanhost.py" "$verb" \
		--dev "${VM_ROLE_TAP[$role]}" "$@" >"$f" 2>&1
	rc=$?
	H_OUT=$(tail -n 1 "$f")
	return "$rc"
}

# sweep ROLE ARGS...: vlanhost.py sweep (see there); "sent= replies= ..."
host_sweep() { vlan_py sweep "$@"; }

# inject ROLE ARGS...: vlanhost.py inject, echo requests with any tags.
host_inject() { vlan_py inject "$@"; }

vm_init
vm_packages
vm_kernel
vm_initramfs vlan.sh
diag "guest kernel $VM_KVER, $("$VM_QEMU" --version | head -n 1), mode $VLAN_MODE"
vm_boot
vm_run
done_testing
