#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_add_sysctl_fail.t - issue 10: "nat add makes the rule live before a
# sysctl write that can fail".  With the accept_local write failing
# (XDPR_FAULT=sysctl or sysctl:DEV, loader/nat.c) `nat add` and `nat
# replace` exit 1 with one "Error: " line and change nothing: `nat show` is
# what it was, traffic is translated as before (not at all, or by the old
# rule), no sysctl moved (one written before the failing one is set back).
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create sf
ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
udp_echo "$S" 7000 || abort "no UDP server on S"

# accept_local of every router interface, e.g. "r0=0 r1=0 r2=0"
accept_local() {
	local d out=
	for d in r0 r1 r2; do
		out+="$d=$(in_ns "$R" cat "/proc/sys/net/ipv4/conf/$d/accept_local") "
	done
	echo "${out% }"
}

# from C1 SPORT: the source S saw ("timeout": not translated, no answer)
seen_from() {
	udp "$C1" ask "$1" 1 10.0.4.2:7000 | cut -d: -f1
}

sysctls=$(accept_local)
is "$sysctls" "r0=0 r1=0 r2=0" "accept_local is off before any rule"
XDPR_FAULT=sysctl cli_fails "nat add with the sysctl write failing" 1 \
	'cannot set net.ipv4.conf.r0.accept_local: Read-only file system' \
	"$R" nat add out r1 src 10.0.1.0/24 to 198.51.100.1
is "$(nat_rules)" "[]" "the failed nat add: nat show unchanged (no rule)"
is "$(seen_from 31001)" timeout "the failed nat add: C1's traffic is not translated"
is "$(accept_local)" "$sysctls" "the failed nat add: no sysctl changed"
is "$(sessions)" "[]" "the failed nat add: no session"
# interfaces are prepared in ifindex order (r0, r2, r1): r0's write
# succeeds, r2's fails, and r0's is set back
XDPR_FAULT=sysctl:r2 cli_fails "nat add with r2's sysctl write failing" 1 \
	'cannot set net.ipv4.conf.r2.accept_local: Read-only file system' \
	"$R" nat add out r1 src 10.0.1.0/24 to 198.51.100.1
is "$(accept_local)" "$sysctls" "the failed nat add: r0's accept_local is set back"
is "$(nat_rules)" "[]" "the failed nat add: nat show unchanged (no rule)"

ok "nat add without the fault" xdpr nat add out r1 src 10.0.1.0/24 to 198.51.100.1
is "$(accept_local)" "r0=1 r1=1 r2=1" "accept_local is on everywhere once a rule exists"
is "$(seen_from 31002)" 198.51.100.1 "the rule applies"
rules=$(nat_rules)

# the write is needed again (one interface lost the setting): it fails
in_ns "$R" sysctl -qw net.ipv4.conf.r2.accept_local=0
sysctls=$(accept_local)
XDPR_FAULT=sysctl cli_fails "nat add of a second rule with the sysctl write failing" 1 \
	'cannot set net.ipv4.conf.r2.accept_local: Read-only file system' \
	"$R" nat add out r1 src 10.0.3.0/24 to 198.51.100.3
is "$(nat_rules)" "$rules" "the failed second nat add: nat show unchanged"
is "$(udp "$C2" ask 31003 1 10.0.4.2:7000 | cut -d: -f1)" timeout \
	"the failed second nat add: C2's traffic is not translated"
XDPR_FAULT=sysctl cli_fails "nat replace with the sysctl write failing" 1 \
	'cannot set net.ipv4.conf.r2.accept_local: Read-only file system' \
	"$R" nat replace out r1 src 10.0.1.0/24 to 198.51.100.2
is "$(nat_rules)" "$rules" "the failed nat replace: nat show unchanged"
is "$(seen_from 31004)" 198.51.100.1 "the failed nat replace: the old rule still applies"
is "$(accept_local)" "$sysctls" "the failed nat add and replace: no sysctl changed"
slots_clean "after the failed changes"

ok "nat replace without the fault" xdpr nat replace out r1 src 10.0.1.0/24 to 198.51.100.2
is "$(seen_from 31005)" 198.51.100.2 "the replacement applies"
done_testing
