#!/bin/bash
# BPF tier: 802.1Q VLANs of xdpr_main (push, pop, rewrite, PCP, hand-over,
# NAT and filter on VLANs) against the real kernel FIB, one
# BPF_PROG_TEST_RUN per frame, in a private network namespace that test_vlan
# creates for itself (veths stand in for the VLAN devices).
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_vlan
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
