#!/bin/bash
# BPF tier: the flow meter of xdpr_main (bpf/flow.h) and the loader's view
# of it: per-CPU flows keyed as they arrived, counted as they left (UDP, TCP
# flags, ICMP type/code, IPv4 and IPv6, masquerade both ways), meter off,
# sampling, a full table, one BPF_PROG_TEST_RUN per frame in a private
# network namespace test_flow creates for itself.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_flow
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
