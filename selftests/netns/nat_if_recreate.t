#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_if_recreate.t - issue 10: "a NAT interface deleted and re-created
# leaks": after `ip link del r1` and a new r1 (new ifindex), the rule stayed
# bound to the dead ifindex (`nat show` printed "out if4") and traffic left
# the new r1 untranslated, even after `link attach r1`.  The rule follows
# the name: listed as "out r1 ... (waiting for r1)" while r1 is gone or not
# attached, applied again by `link attach r1` (or, if that was killed half
# way, by the next locked command), and deletable while it waits.  Until it
# applies again no inside source may leave r1 (datapath: drop_nat_if_gone).
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create ir
nat_attach
udp_echo "$S" 7000 || abort "no UDP server on S"
RULE="nat rule 1: out r1 src 0.0.0.0/0 masquerade ports 1024-65535 filter apdf"

r1_index() {
	ip -n "$R" -j link show r1 2>/dev/null | jq -r '.[0].ifindex // empty'
}

# rule_ifindex ID: the ifindex rule slot ID holds (bpftool)
rule_ifindex() {
	rule_slots "$T_TMP/slots.json" &&
		"$NAT_PY" -c 'import json, sys
for e in json.load(open(sys.argv[1])):
    if int(e["key"][0], 16) == int(sys.argv[2]):
        print(int.from_bytes(bytes(int(b, 16) for b in e["value"][0:4]), "little"))' "$T_TMP/slots.json" "$1"
}

# shows DESC STATE [SUFFIX]: nat show (text) lists the rule and SUFFIX first
# and names no bare ifindex; -j says rule id 1, dev r1, STATE
shows() {
	cli "$R" nat show
	is "$(grep -m1 '^nat rule' <<<"$OUT")" "$RULE${3:+ $3}" "$1: nat show (text)"
	like "$(grep -c 'if[0-9]' <<<"$OUT")" '^0$' "$1: nat show names no bare ifindex"
	is "$(xdpr -j nat show | jq -r '.[] | "\(.id) \(.dev) \(.state)"')" "1 r1 $2" "$1: -j nat show: rule 1, dev r1, $2"
}

translated() {
	is "$(udp "$C1" ask "$1" 2 10.0.4.2:7000)" "10.0.2.1:$1" "$2: S sees C1's flow from 10.0.2.1 (translated)"
}

translated 33001 "before"
old=$(r1_index)
ip -n "$R" link del r1
shows "r1 deleted" waiting "(waiting for r1)"
ok "r1 deleted: a locked command runs" xdpr nat gc
shows "r1 deleted, after a locked command" waiting "(waiting for r1)"
cli_fails "r1 deleted: nat add out r1" 1 'cannot find device "r1"' "$R" nat add out r1 src 10.9.0.0/16 masquerade

recreate_r1
new=$(r1_index)
num "$new" -ne "$old" "r1 re-created with a new ifindex ($old -> $new)"
ok "r1 re-created: a locked command runs" xdpr nat gc
shows "r1 re-created, not attached" waiting "(waiting for r1)"
cli_fails "r1 not attached: nat add out r1" 1 'xdpr is not attached to "r1"' \
	"$R" nat add out r1 src 10.9.0.0/16 masquerade

# Nothing with an inside source may leave the new r1 before the rule applies
# again: the datapath drops it (drop_nat_if_gone).
leak_start
if0=$(ctr "$R" r0 drop_nat_if_gone)
udp "$C1" ask 33002 1 10.0.4.2:7000 >/dev/null
ping4 "$C1" 10.0.4.2 2
# (leak_check: a capture that died or lost packets is no evidence of no leak either)
leak_check "the new r1 before link attach r1"
num "$(grown "$if0" "$R" r0 drop_nat_if_gone)" -ge 3 "before link attach r1: drop_nat_if_gone counted them on r0"

ok "link attach r1" xdpr_attach r1
shows "r1 attached again" applied
translated 33003 "r1 attached again"
ok "ping C1 -> S through the re-bound rule" ping4 "$C1" 10.0.4.2 2
slots_clean "r1 attached again"

# ---- the same ifindex again, and a link attach killed before its commit
old=$(r1_index)
ip -n "$R" link del r1
recreate_r1 "$old"
is "$(r1_index)" "$old" "r1 re-created with the same ifindex ($old)"
shows "r1 re-created (same ifindex), not attached" waiting "(waiting for r1)"
XDPR_CRASH_AT=attach:rebind-prepared T_CLI_TIMEOUT=90 cli "$R" link attach r1
is "$RC" 137 "link attach r1 killed right before the commit"
shows "killed link attach" waiting "(waiting for r1)"
# issue 12: r1 is attached (a redirect target) but its rule is not bound
# yet: its interface entry says so (XDPR_IF_NAT_PENDING), and inside
# sources are dropped, not forwarded untranslated
leak_start
if0=$(ctr "$R" r0 drop_nat_if_gone)
udp "$C1" ask 33010 1 10.0.4.2:7000 >/dev/null
ping4 "$C1" 10.0.4.2 2
leak_check "r1 attached, its rule not bound yet"
num "$(grown "$if0" "$R" r0 drop_nat_if_gone)" -ge 3 "r1 attached, rule not bound: drop_nat_if_gone counted them on r0"
ok "a locked command runs" xdpr nat gc
shows "after the next locked command" applied
translated 33004 "re-bound by the next locked command"

ip -n "$R" link del r1
recreate_r1
XDPR_CRASH_AT=attach:rebind-commit T_CLI_TIMEOUT=90 cli "$R" link attach r1
is "$RC" 137 "link attach r1 killed right after the commit (the slot still names the old ifindex)"
shows "killed right after the commit" applied
translated 33005 "applied by the killed link attach"
num "$(rule_ifindex 1)" -ne "$(r1_index)" "killed right after the commit: the slot still names the old ifindex"
ok "a locked command runs" xdpr nat gc
slots_clean "after the killed link attaches"
is "$(rule_ifindex 1)" "$(r1_index)" "the rule's slot names the new r1's ifindex"

# ---- a waiting rule can be deleted
ip -n "$R" link del r1
shows "r1 deleted again" waiting "(waiting for r1)"
ok "nat del out r1 (the rule waits)" xdpr nat del out r1
is "$(xdpr -j nat show | jq -c .)" "[]" "the waiting rule is gone"
slots_clean "after deleting the waiting rule"
recreate_r1
ok "link attach r1" xdpr_attach r1
is "$(xdpr -j nat show | jq -c .)" "[]" "attaching r1 brings no rule back"
done_testing
