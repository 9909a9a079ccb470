#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_trace.t - ICMP errors through the NAT: traceroute (UDP, ICMP and TCP
# probes) from an inside host lists every hop behind the NAT (the router,
# the outside router H, the server S), which needs the errors coming back to
# be translated, embedded header included (icmp_errors_in); an error an
# inside host sends about a translated flow reaches the outside server as an
# error the server's stack matches to its socket (icmp_errors_out).
. "$(dirname "$0")/nat_lib.sh"
need traceroute

nat_topo_create tr
leak_start
nat_attach

# hops TRACEROUTE_OUTPUT: the hop addresses, space-separated ("*" for none).
hops() {
	awk 'NR > 1 { a = "*"; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9.]+$/ && $i ~ /\./) { a = $i; break }
		printf "%s%s", sep, a; sep = " " } END { print "" }' <<<"$1"
}

# trace_case DESC MIN_ERRORS TRACEROUTE_OPTIONS...
trace_case() {
	local desc=$1 min=$2 out e0 o0
	shift 2
	e0=$(nat_ctr icmp_errors_in)
	o0=$(nat_ctr translated_out)
	out=$(T_TIMEOUT=30 in_ns "$C1" traceroute -n -q 1 -w 2 -m 6 "$@" 10.0.4.2 2>&1)
	is "$(hops "$out")" "10.0.1.1 10.0.2.2 10.0.4.2" \
		"traceroute $desc from C1: hops 10.0.1.1, 10.0.2.2 (H), 10.0.4.2 (S)" || diag "$out"
	num "$(nat_grown "$e0" icmp_errors_in)" -ge "$min" \
		"traceroute $desc: icmp_errors_in grew by >= $min (ICMP errors translated back)"
	num "$(nat_grown "$o0" translated_out)" -ge 2 "traceroute $desc: probes were translated (translated_out)"
}

# UDP probes: H answers time exceeded, S port unreachable (both errors).
trace_case "(UDP)" 2
# ICMP echo probes: H answers time exceeded, S an echo reply.
trace_case "-I (ICMP echo)" 1 -I
# TCP SYN probes to a closed port: H answers time exceeded, S a RST.
trace_case "-T -p 81 (TCP SYN)" 1 -T -p 81
is "$(ctr "$R" r0 drop_nat_untranslatable)" 0 "r0: nothing dropped as untranslatable"

# ---- an ICMP error from the inside about a translated flow
# S waits for one datagram, then sends two more to its sender from a connected
# socket; C1's socket is gone by then, so C1 answers port unreachable.  The
# error must leave translated (outer source and embedded destination: the
# 10.0.2.1 address and port S knows), else S's stack cannot match it and
# reports no error.
udp "$S" refuse 7100 10 >"$T_TMP/refuse.out" 2>&1 &
refuse=$!
wait_listen "$S" 7100 udp || fail "UDP refuse server on S port 7100 did not start"
eo0=$(nat_ctr icmp_errors_out)
e1=$(snmp "$C1" Icmp OutDestUnreachs)
udp "$C1" ask 41000 0.2 10.0.4.2:7100 >/dev/null
wait "$refuse"
like "$(head -n1 "$T_TMP/refuse.out")" '^from 10\.0\.2\.1:41000$' "S got C1's datagram from 10.0.2.1:41000"
is "$(sed -n 2p "$T_TMP/refuse.out")" "refused" \
	"C1's port unreachable reaches S translated: S's connected socket gets ECONNREFUSED" ||
	diag_file "$T_TMP/refuse.out"
num "$(($(snmp "$C1" Icmp OutDestUnreachs) - e1))" -ge 1 "C1 sent port unreachable"
num "$(nat_grown "$eo0" icmp_errors_out)" -ge 1 "icmp_errors_out grew"

# ---- checksums of everything translated
for ns in C1 S; do
	is "$(csum_errors "${!ns}")/$(snmp "${!ns}" Icmp InCsumErrors)" "0/0/0" \
		"$ns: Tcp/Udp/Icmp InCsumErrors are 0"
done

leak_check "three traceroutes and an inside ICMP error"
done_testing
