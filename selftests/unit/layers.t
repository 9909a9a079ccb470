#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unit tier: the loader's files call each other in one direction only (the
# table in loader/core.h).  Every object of build/loader ($XDPR_BUILD/loader
# or $BUILD/loader when set: make passes BUILD) may use library symbols only from objects of a lower layer; a
# call back up (a cycle) fails here, naming the symbol.
cd "$(dirname "$0")/../.." || exit 1
B=${XDPR_BUILD:-${BUILD:-build}}/loader
declare -A layer=([netdev]=0 [reasons]=0 [nfguard]=0 [vlandev]=0 [nat_ct]=0 [core]=1 [rtindex]=2 [nat]=2 [npt]=2 [route]=3 [nat_tab]=3
	[filter]=3 [binat]=3 [flow]=3 [ddos]=3 [natlog]=3 [nbr]=3 [vlan]=4 [loader]=5)
declare -A owner
i=0 rc=0
command -v nm >/dev/null || { echo "1..0 # SKIP nm not installed"; exit 0; }
objs=()
for c in loader/*.c; do
	objs+=("$B/$(basename "$c" .c).o")
done
[ -e "${objs[0]}" ] || { echo "1..0 # SKIP $B not built (make all)"; exit 0; }
echo "1..$((${#objs[@]} * 2))"
for o in "${objs[@]}"; do
	f=$(basename "$o" .o)
	for s in $(nm --defined-only "$o" | awk '$2 ~ /^[TDRB]$/ { print $3 }'); do
		owner[$s]=$f
	done
done
. "$(dirname "$0")/tap.sh"
for o in "${objs[@]}"; do
	f=$(basename "$o" .o)
	[ -n "${layer[$f]}" ]
	tap $? "loader/$f.c has a layer" "none in layers.t (add it here and to the table in core.h)"
	bad=
	for s in $(nm -u "$o" | awk '{ print $2 }'); do
		d=${owner[$s]}
		[ -z "$d" ] && continue # libc, libbpf, libxdp
		[ "${layer[$d]:-99}" -lt "${layer[$f]:--1}" ] || bad+=" $s ($d.c)"
	done
	[ -z "$bad" ]
	tap $? "loader/$f.c calls only lower layers" "it calls its own layer or one above:$bad"
done
exit $rc
