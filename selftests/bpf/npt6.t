#!/bin/bash
# BPF tier: NPTv6 (RFC 6296) of xdpr_main, exact bytes in and out for /48,
# /56 and /64 rules, the 0xffff rules, ICMPv6 errors' quoted packets, what
# must stay untouched and the hand-overs, against the real kernel FIB, one
# BPF_PROG_TEST_RUN per frame, in a private network namespace test_npt6
# creates for itself.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_npt6
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
