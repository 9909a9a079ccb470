#!/bin/bash
# BPF tier: the DDoS meters and bans of xdpr_main (bpf/ddos.h) and the
# loader's view of them: per-host meters of protected prefixes (IPv4 and
# IPv6, prefix edges, two CPUs, a full table), bans to and from a host
# dropped and counted, ending by themselves, one BPF_PROG_TEST_RUN per frame
# in a private network namespace test_ddos creates for itself.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_ddos
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
