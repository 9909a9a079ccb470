#!/bin/bash
# Unit tier: the route lookup index against a plain longest-prefix match.
cd "$(dirname "$0")/../.." || exit 1
exec "${BUILD:-build}/selftests/test_rtindex"
