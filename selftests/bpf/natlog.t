#!/bin/bash
# BPF tier: the NAT event log's records on the ring (bpf/natlog.h), against
# xdpr_main and the real kernel FIB, in a private network namespace that
# test_natlog creates.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_natlog
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
