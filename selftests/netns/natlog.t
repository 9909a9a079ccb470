#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# natlog.t - NAT event logging end to end: xdprd in R with "export ipfix"
# to a real collector (nfcapd) in H and "export nat-events on".  Rule 1
# masquerades C1 (10.0.1.0/24) behind 10.0.2.1, rule 2 maps C2
# (10.0.3.0/24) to 198.51.100.9 with two ports (20000-20001).  What the
# collector must get (RFC 8158 natEvent numbers), checked with nfdump and,
# for every record, tshark on a capture of the export traffic:
#   - a UDP and a TCP flow from C1, two UDP flows from C2: one create (4)
#     each, with the inside and post-NAT address and port that the server
#     S saw, and the rule as natPoolId;
#   - C2's third endpoint finds no port: ports exhausted (12), one record
#     per second per CPU however many packets are refused;
#   - C1 at "nat limit host 3": quota exceeded (13), natQuotaExceededEvent 3,
#     maxEntriesPerUser 3;
#   - `xdpr nat flush sessions`: a delete (5) for every session, including
#     one created before xdprd turned logging on (whose create was not
#     logged: logging was off);
#   - xdprd's metrics count the records sent and none lost;
#   - with xdprd stopped (SIGSTOP) and the ring full, sessions are still
#     created for every packet and the records that did not fit are counted
#     (log_lost), never the packets.
. "$(dirname "$0")/nat_lib.sh"

XDPRD=${XDPRD:-$(dirname "$XDPR")/xdprd}
[ -x "$XDPRD" ] || skip_all "$XDPRD not built (make all)"
for c in nfcapd nfdump tshark curl; do
	command -v $c >/dev/null || bail_out "$c missing (packages nfdump, tshark, curl: make deps)"
done
MPORT=9465
COLL=10.0.2.2:4739

nat_topo_create nl
ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
ok "nat add out r1 masquerade src 10.0.1.0/24" xdpr nat add out r1 masquerade src 10.0.1.0/24 ||
	abort "cannot add the masquerade rule"
ok "nat add out r1 src 10.0.3.0/24 to 198.51.100.9 ports 20000-20001" \
	xdpr nat add out r1 src 10.0.3.0/24 to 198.51.100.9 ports 20000-20001 || abort "cannot add the pool rule"
rule_of() { xdpr -j nat show | jq -r --arg s "$1" '.[] | select(.src == $s and .src_len == 24) | .id'; }
R1=$(rule_of 10.0.1.0)
R2=$(rule_of 10.0.3.0)
if [ -z "$R1" ] || [ -z "$R2" ]; then
	abort "cannot read the rule ids: $(xdpr -j nat show)"
fi

udp_echo "$S" 7001 || abort "no UDP server in S"
tcp_echo "$S" 7002 || abort "no TCP server in S"

# a session made before logging is on: its create is never logged, its delete is
before=$(udp "$C1" ask 40000 2 10.0.4.2:7001)
is "$before" "10.0.2.1:40000" "C1:40000 -> S before xdprd: masqueraded to 10.0.2.1:40000"

# the collector in H, and a capture of what reaches it (for tshark)
mkdir -p "$T_TMP/flows"
timeout 200 ip netns exec "$H" nfcapd -w "$T_TMP/flows" -b 10.0.2.2 -p 4739 >"$T_TMP/nfcapd.log" 2>&1 &
NFPID=$!
ok "nfcapd listens on $COLL in H" wait_listen "$H" 4739 udp
ok "capture of the export traffic on h0 starts" cap_start ipfix "$H" h0 udp port 4739

t_start=$(date +%Y-%m-%dT%H:%M:%S)
CONF=$T_TMP/xdpr.conf
xdpr save >"$CONF" || abort "xdpr save failed"
cat >>"$CONF" <<EOF
export ipfix $COLL
export nat-events on
EOF
ip netns exec "$R" "$XDPRD" --foreground --config "$CONF" --metrics "127.0.0.1:$MPORT" --gc 1 \
	>"$T_TMP/xdprd.log" 2>&1 &
DPID=$!
ok "xdprd says NAT event logging is on" wait_file_line "$T_TMP/xdprd.log" "NAT event logging on"
metrics() { T_TIMEOUT=10 in_ns "$R" curl -sf "http://127.0.0.1:$MPORT/metrics"; }
metric() { metrics | awk -v m="$1" '$1 == m { print $2 }'; }

# ---- sessions created: UDP and TCP from C1, two UDP endpoints of C2 ----
u1=$(udp "$C1" ask 40001 2 10.0.4.2:7001)
t1=$(T_TIMEOUT=10 in_ns "$C1" socat -t 5 -T 5 - "TCP4:10.0.4.2:7002,sourceport=40002,reuseaddr" </dev/null 2>/dev/null)
c2a=$(udp "$C2" ask 41001 2 10.0.4.2:7001)
c2b=$(udp "$C2" ask 41002 2 10.0.4.2:7001)
like "$u1" '^10\.0\.2\.1:[0-9]+$' "C1:40001 UDP -> S: S saw $u1"
like "$t1" '^10\.0\.2\.1:[0-9]+$' "C1:40002 TCP -> S: S saw $t1"
like "$c2a $c2b" '^198\.51\.100\.9:2000[01] 198\.51\.100\.9:2000[01]$' "C2:41001, C2:41002 -> S: S saw $c2a, $c2b"

# ---- ports exhausted: C2's third endpoint, 6 packets in one second ----
nop0=$(nat_ctr no_port)
for ((i = 0; i < 6; i++)); do
	udp "$C2" ask 41003 0.1 10.0.4.2:7001 >/dev/null
done
nop=$(( $(nat_ctr no_port) - nop0 ))
num "$nop" -ge 6 "C2:41003 finds no port: $nop packets counted no_port"

# ---- quota: C1 has 3 sessions (40000, 40001, TCP 40002); limit 3 ----
ok "nat limit host 3" xdpr nat limit host 3
hl0=$(nat_ctr host_limit)
is "$(udp "$C1" ask 40003 1 10.0.4.2:7001)" "timeout" "C1:40003 at its limit gets no answer"
num "$(( $(nat_ctr host_limit) - hl0 ))" -ge 1 "C1:40003 counted host_limit"
ok "nat limit host 4096 (the default again)" xdpr nat limit host 4096

# ---- deletes: every session ----
nsess=$(xdpr -j nat sessions | jq length)
is "$nsess" 5 "5 sessions in the table before the flush (C1 x 3, C2 x 2)"
ok "nat flush sessions" xdpr nat flush sessions
is "$(xdpr -j nat sessions | jq length)" 0 "no session left"

# xdprd reads the ring as it fills (its epoll fd): the 4 + 1 + 1 + 5 records are sent within a tick
for ((i = 0; i < 50; i++)); do
	[ "$(metric xdprd_nat_events_read_total)" -ge 11 ] 2>/dev/null && break
	sleep 0.1
done
m=$(metrics)
echo "$m" >"$T_TMP/metrics.txt"
read_n=$(awk '$1 == "xdprd_nat_events_read_total" { print $2 }' <<<"$m")
sent_n=$(awk '/^xdprd_nat_events_sent_total\{/ { print $2 }' <<<"$m")
lost_n=$(awk '$1 == "xdprd_nat_events_lost_total" { print $2 }' <<<"$m")
num "$read_n" -ge 11 "metrics: xdprd read $read_n NAT event records from the ring (>= 11)"
is "$sent_n" "$read_n" "metrics: every record read was sent to $COLL ($sent_n)"
is "$lost_n" 0 "metrics: none lost"
like "$m" 'xdpr_nat_rule_events_total\{rule="'"$R1"'",dev="r1",event="log_lost"\} 0' "metrics: log_lost of rule $R1 is 0"

t_end=$(date +%Y-%m-%dT%H:%M:%S.999)
ok "capture of the export traffic stops cleanly" cap_stop ipfix
sleep 0.5
kill -TERM "$NFPID"
timeout 10 tail --pid="$NFPID" -f /dev/null

# nfdump (its JSON output): natEvent, protocol, inside, post-NAT, remote of each NAT event record
nfj=$(nfdump -R "$T_TMP/flows" -o json 2>&1)
nf=$(jq -r '.[] | select(.nat_event_id != null) |
	"\(.nat_event_id) \(.proto) \(.src4_addr) \(.src_port) \(.src4_xlt_ip) \(.src_xlt_port) \(.dst4_addr) \(.dst_port)"' \
	<<<"$nfj" | sort)
echo "$nf" >"$T_TMP/nfdump.txt"; [ -n "$NATLOG_KEEP" ] && cp -r "$T_TMP" "$NATLOG_KEEP"
diag_file "$T_TMP/nfdump.txt"
sel() { grep -c -- "$1" <<<"$nf"; }
u1p=${u1##*:}
t1p=${t1##*:}
is "$(sel "^4 17 10.0.1.2 40001 10.0.2.1 $u1p 10.0.4.2 7001\$")" 1 \
	"nfdump: create (4): UDP 10.0.1.2:40001 -> post-NAT $u1 -> 10.0.4.2:7001"
is "$(sel "^4 6 10.0.1.2 40002 10.0.2.1 $t1p 10.0.4.2 7002\$")" 1 \
	"nfdump: create (4): TCP 10.0.1.2:40002 -> post-NAT $t1 -> 10.0.4.2:7002"
is "$(sel "^4 17 10.0.3.2 41001 198.51.100.9 ${c2a##*:} 10.0.4.2 7001\$")" 1 \
	"nfdump: create (4): UDP 10.0.3.2:41001 -> post-NAT $c2a"
is "$(sel "^4 17 10.0.3.2 41002 198.51.100.9 ${c2b##*:} 10.0.4.2 7001\$")" 1 \
	"nfdump: create (4): UDP 10.0.3.2:41002 -> post-NAT $c2b"
is "$(sel "^4 .* 40000 ")" 0 "nfdump: no create for C1:40000 (made while logging was off)"
is "$(sel "^4 ")" 4 "nfdump: 4 creates in all"
nports=$(sel "^12 17 10.0.3.2 41003 198.51.100.9 0 10.0.4.2 7001\$")
ncpu=$(nproc)
num "$nports" -ge 1 "nfdump: ports exhausted (12): UDP 10.0.3.2:41003, 198.51.100.9 had no port"
num "$nports" -le "$ncpu" "nfdump: ... at most one a second per CPU ($nports for $nop refused packets, $ncpu CPUs)"
is "$(sel "^13 17 10.0.1.2 40003 10.0.2.1 0 10.0.4.2 7001\$")" 1 "nfdump: quota exceeded (13): UDP 10.0.1.2:40003"
for s in "17 10.0.1.2 40000 10.0.2.1 40000 10.0.4.2 7001" "17 10.0.1.2 40001 10.0.2.1 $u1p 10.0.4.2 7001" \
	"6 10.0.1.2 40002 10.0.2.1 $t1p 10.0.4.2 7002" \
	"17 10.0.3.2 41001 198.51.100.9 ${c2a##*:} 10.0.4.2 7001" \
	"17 10.0.3.2 41002 198.51.100.9 ${c2b##*:} 10.0.4.2 7001"; do
	is "$(sel "^5 $s\$")" 1 "nfdump: delete (5): $s"
done
nrec=$((4 + nports + 1 + 5))
is "$(wc -l <<<"$nf")" "$nrec" "nfdump: no other NAT event record ($nrec)"
is "$(jq -r '[.[] | select(.nat_event_id != null) | .nat_event] | unique | join(",")' <<<"$nfj")" \
	"NAT ports exhausted,NAT44 session create,NAT44 session delete,Quota Exceeded" \
	"nfdump names the events as RFC 8158 numbers them"
bad_t=$(jq -r --arg a "$t_start" --arg b "$t_end" \
	'[.[] | select(.nat_event_id != null) | select(.t_event < $a or .t_event > $b)] | length' <<<"$nfj")
is "$bad_t" 0 "nfdump: every event time (IE 323) is within the test's run ($t_start - $t_end)"
like "$(cat "$T_TMP/nfcapd.log")" "Sequence Errors: 0" "nfcapd saw no sequence error"

# tshark, a second decoder: the same events, pool ids, quota fields, no malformed packet
ts() {
	tshark -r "$T_TMP/ipfix.pcap" -d udp.port==4739,cflow -T fields -E occurrence=a -E aggregator=' ' \
		-e "$@" 2>/dev/null | tr ' \t' '\n\n' | grep . | sort | uniq -c | tr -s ' ' | sed 's/^ //' | tr '\n' ',' | sed 's/,$//'
}
v=$(tshark -r "$T_TMP/ipfix.pcap" -d udp.port==4739,cflow -V 2>&1)
! grep -qi 'malformed\|\[Expert Info (Error\|\[Expert Info (Warning' <<<"$v"
ok "tshark -V decodes the capture: no malformed packet, no expert error or warning" test $? = 0
like "$v" 'Template \(Id = 259, Count = 10\)' "tshark: template 259 (NAT event, 10 fields)"
like "$v" 'Template \(Id = 260, Count = 12\)' "tshark: template 260 (quota exceeded, 12 fields)"
is "$(ts cflow.nat_event)" "$nports 12,1 13,4 4,5 5" "tshark: natEvent 4 x4, 5 x5, 13 x1, 12 x$nports"
is "$(ts cflow.nat_quota_exceeded_event)" "1 3" "tshark: natQuotaExceededEvent 3 (max entries per user), once"
is "$(ts cflow.max_entries_per_user)" "1 3" "tshark: maxEntriesPerUser 3, once"
is "$(ts cflow.nat_pool_id)" "6 $R1,$((4 + nports)) $R2" \
	"tshark: natPoolId: rule $R1 for C1's 6 records, rule $R2 for C2's $((4 + nports))"
# the create of C1's TCP session, field by field
tc=$(tshark -r "$T_TMP/ipfix.pcap" -d udp.port==4739,cflow -T fields -E occurrence=a -E aggregator=, \
	-e cflow.nat_event -e cflow.protocol -e cflow.srcaddr -e cflow.srcport \
	-e cflow.post_natsource_ipv4_address -e cflow.post_naptsource_transport_port \
	-e cflow.dstaddr -e cflow.dstport 2>/dev/null | "$NAT_PY" -c '
import sys
for line in sys.stdin:
    cols = [c.split(",") for c in line.rstrip("\n").split("\t")]
    for rec in zip(*cols):
        if rec[0] == "4" and rec[1] == "6":
            print(" ".join(rec))')
is "$tc" "4 6 10.0.1.2 40002 10.0.2.1 $t1p 10.0.4.2 7002" "tshark agrees on the TCP create record, field by field"
obs=$(tshark -r "$T_TMP/ipfix.pcap" -d udp.port==4739,cflow -T fields -E occurrence=a -E aggregator='|' \
	-e cflow.observation_time_milliseconds 2>/dev/null | tr '|' '\n' | grep -c .)
is "$obs" "$nrec" "tshark: every record has observationTimeMilliseconds ($nrec)"

# ---- the ring full: xdprd stopped, 24000 new sessions; every one is made, the excess counted ----
for i in $(seq 10 17); do
	ip -n "$C1" addr add "10.0.1.$i/24" dev c1
done
read0=$(metric xdprd_nat_events_read_total)
kill -STOP "$DPID"
new0=$(nat_ctr sessions_new)
lost0=$(nat_ctr log_lost)
gone0=$(( $(nat_ctr sessions_expired) + $(nat_ctr sessions_evicted) ))
# 3000 ports from each of 10.0.1.10-17, each address its own, 1025-25024 (none the router or an
# earlier session holds: all preserved, no port search),
# paced (a burst overflows the veth's backlog, not the ring)
T_TIMEOUT=120 in_ns "$C1" "$NAT_PY" - <<'EOF2'
import socket, time
n = 0
for a in range(10, 18):
    for p in range(1025 + (a - 10) * 3000, 4025 + (a - 10) * 3000):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("10.0.1.%d" % a, p))
        s.sendto(b"x", ("10.0.4.2", 7001))
        s.close()
        n += 1
        if n % 200 == 0:
            time.sleep(0.002)
EOF2
ok "24000 UDP flows from 8 addresses of C1 (3000 ports each) sent" test $? = 0
sleep 0.5
new=$(( $(nat_ctr sessions_new) - new0 ))
lost=$(( $(nat_ctr log_lost) - lost0 ))
gone=$(( $(nat_ctr sessions_expired) + $(nat_ctr sessions_evicted) - gone0 ))
is "$new" 24000 "24000 sessions created while the ring was full (no packet dropped for logging)"
kill -CONT "$DPID"
for ((i = 0; i < 50; i++)); do
	[ "$(metric xdprd_nat_events_lost_total)" = "$lost" ] && [ "$(metric xdprd_nat_events_read_total)" -ge $((read0 + 21845)) ] && break
	sleep 0.1
done
readn=$(( $(metric xdprd_nat_events_read_total) - read0 ))
diag "created $new, removed $gone, read $readn, lost $lost; no_port $(nat_ctr no_port), busy $(nat_ctr busy), table_full $(nat_ctr table_full)"
# 1 MiB of 48-byte slots (40-byte record, 8-byte header): 21845 records fit
is "$readn" 21845 "xdprd read what the ring held once it went on: 21845 records (1 MiB / 48 bytes)"
is "$lost" "$((new + gone - 21845))" "log_lost counts every record that did not fit ($new creates + $gone deletes - 21845)"
is "$(metric xdprd_nat_events_lost_total)" "$lost" "xdprd_nat_events_lost_total: $lost"

# ---- a reload without "export nat-events on": logging off, a new session logs nothing ----
sed -i '/^export nat-events on$/d' "$CONF"
kill -HUP "$DPID"
ok "reload: xdprd says NAT event logging is off" wait_file_line "$T_TMP/xdprd.log" "NAT event logging off"
r0=$(metric xdprd_nat_events_read_total)
l0=$(nat_ctr log_lost)
n0=$(nat_ctr sessions_new)
is "$(udp "$C1" ask 45000 2 10.0.4.2:7001)" "10.0.2.1:45000" "C1:45000 -> S after the reload: translated"
sleep 1.5
is "$(( $(nat_ctr sessions_new) - n0 )) $(metric xdprd_nat_events_read_total) $(nat_ctr log_lost)" "1 $r0 $l0" \
	"its session made, no record read, none lost: the fast path logs nothing"

kill -TERM "$DPID" 2>/dev/null
wait "$DPID"
is "$?" 0 "xdprd stopped cleanly"
like "$(cat "$T_TMP/xdprd.log")" "stopping: the fast path keeps running" "xdprd logged its stop"
grep -i "error" "$T_TMP/xdprd.log" | head -5 | while read -r l; do diag "xdprd: $l"; done

done_testing
