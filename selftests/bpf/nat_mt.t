#!/bin/bash
# BPF tier: the source NAT of xdpr_main run on CPU 0 and CPU 1 at once
# (two pinned threads calling BPF_PROG_TEST_RUN), in a private network
# namespace that test_nat_mt creates for itself.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_nat_mt
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 90 "$bin"
