#!/bin/bash
# BPF tier: one case per NAT defect of issue 10, against xdpr_main and the
# real kernel FIB, in a private network namespace that test_nat2 creates.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_nat2
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
