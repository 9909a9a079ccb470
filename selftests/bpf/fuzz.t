#!/bin/bash
# BPF tier: the fuzzer's regression table: the seed corpus and every saved
# failure (selftests/fuzz/regress/) through xdpr_main with the fuzzer's
# invariants, in a private network namespace that test_fuzz creates.
cd "$(dirname "$0")/../.." || exit 1
bin=build/selftests/test_fuzz
if [ ! -x "$bin" ]; then
	echo "Bail out! $bin is missing: run make all"
	exit 1
fi
exec timeout 120 "$bin"
