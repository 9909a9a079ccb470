#!/bin/bash
# BPF tier: IPv4 port forwards (nat add in) in xdpr_main against the real
# kernel FIB, one BPF_PROG_TEST_RUN per frame, in a private network
# namespace that test_natfwd creates for itself.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_natfwd
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
