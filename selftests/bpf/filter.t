#!/bin/bash
# BPF tier: the filter step of xdpr_main (classifier edges, state, reject
# answers, fragments, IPv6 extension headers), one BPF_PROG_TEST_RUN per
# packet, in a private network namespace that test_fltbpf creates for itself.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_fltbpf
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
