#!/bin/bash
# BPF tier: the verifier's instruction budget of every xdpr program.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_verifier
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
