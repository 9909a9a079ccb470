#!/bin/bash
# BPF tier: the route map (xdpr_rtdir/xdpr_rtrec) in xdpr_main against the real
# kernel FIB, one BPF_PROG_TEST_RUN per case, in a private network namespace
# that test_route creates for itself.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_route
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
