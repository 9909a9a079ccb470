# SPDX-License-Identifier: GPL-2.0
# tap.sh - TAP lines for the shell tests of this tier (sourced).  The caller
# sets i (checks printed so far) and rc (the exit status, 0 until one fails).

# tap STATUS DESC WHY: one TAP line, a pass when STATUS is 0 (else WHY is shown).
tap() {
	i=$((i + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $i - $2"
	else
		echo "not ok $i - $2: $3"
		rc=1
	fi
}

# skip DESC WHY: one skipped check.
skip() {
	i=$((i + 1))
	echo "ok $i - $1 # SKIP $2"
}
