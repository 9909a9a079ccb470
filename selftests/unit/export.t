#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unit tier: flow export (daemon/export.c) with synthetic flows and a fake
# clock (build/selftests/test_export), decoded by real collectors: nfcapd
# and nfdump (the exact addresses, ports, protocol, packets, bytes, times,
# post-NAT source of each record) and tshark (templates and records decode
# without a malformed packet, the same values), for IPFIX and NetFlow v9.
# Then xdprd refusing bad export lines.  As root it runs in a private
# network namespace (its own lo: fixed ports, a capture that sees only
# this test, 192.0.2.1 unroutable); otherwise on the host's lo without the
# capture.
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
export LC_ALL=C
if [ "$(id -u)" = 0 ] && [ -z "$XDPR_EXPORT_NS" ] && command -v unshare > /dev/null; then
	exec env XDPR_EXPORT_NS=1 timeout 120 unshare --net bash -c 'ip link set lo up && exec "$0"' "$0"
fi
T=$(mktemp -d)
bg=()
trap 'for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done; [ -n "$XDPR_EXPORT_KEEP" ] || rm -rf "$T"' EXIT
i=0
rc=0
. "$(dirname "$0")/tap.sh"

# ---- the program's own checks (cache rules, messages on a socket of its own) ----
if [ -n "$XDPR_EXPORT_NS" ]; then blackhole=192.0.2.1:2055; else blackhole=; fi
"$B/selftests/test_export" $blackhole | sed -n '/^1\.\./!p' > "$T/unit"; urc=${PIPESTATUS[0]}
n=$(grep -c '^\(not \)\?ok' "$T/unit")

bad_conf=(
	"export ipfix 192.0.2.1|invalid collector \"192.0.2.1\" (ADDR:PORT or [ADDR]:PORT, port 1-65535)"
	"export netflow9 192.0.2.1:0|invalid collector \"192.0.2.1:0\""
	"export ipfix 192.0.2.1:70000|invalid collector \"192.0.2.1:70000\""
	"export ipfix collector.example:4739|invalid collector address in \"collector.example:4739\" (an IPv4 or [IPv6] address, not a name)"
	"export ipfix 2001:db8::1:4739|invalid collector address in \"2001:db8::1:4739\""
	"export ipfix 0.0.0.0:4739|invalid collector address in \"0.0.0.0:4739\" (unspecified)"
	"export active-timeout 0|invalid active-timeout \"0\" (seconds, 1 to 86400)"
	"export inactive-timeout 1d|invalid inactive-timeout \"1d\" (seconds, 1 to 86400)"
	"export sample 0|invalid sample \"0\" (1:N sampling, N 1 to 65535)"
	"export sflow 192.0.2.1:6343|expected \"export { ipfix | netflow9 } ADDR:PORT\""
	"export ipfix|expected \"export { ipfix | netflow9 } ADDR:PORT\""
	"export nat-events yes|invalid nat-events \"yes\" (on or off)"
	"export nat-events|expected \"export { ipfix | netflow9 } ADDR:PORT\""
)
twice=(
	"export ipfix [2001:db8::1]:4739|export ipfix [2001:db8::0:1]:4739|export ipfix [2001:db8::1]:4739 is already on line 2"
	"export sample 4|export sample 8|export sample is already given on line 2"
	"export inactive-timeout 5|export inactive-timeout 5|export inactive-timeout is already given on line 2"
	"export nat-events on|export nat-events off|export nat-events is already given on line 2"
)
# unit, 2 formats x (nfdump 3 + tshark 3), bad lines, twice (test_export's first check: a good file)
echo "1..$((n + 1 + 2 * 6 + ${#bad_conf[@]} + ${#twice[@]}))"
cat "$T/unit"
i=$n
tap "$urc" "test_export exits 0" "exit $urc"

# ---- nfcapd / nfdump and tshark ----
# port_up PORT: a UDP socket is bound to it (5 s at most)
port_up() {
	for _ in $(seq 50); do
		ss -Hlun "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}
# the scenario of test_export.c as nfdump prints it (fmt below, spaces squeezed, sorted)
nf_fmt='fmt:%tsr %ter %pr %sa %da %sp %dp %pkt %byt %in %out %flg %xsa %xsp'
nf_want='1767225570.000 1767225630.000 UDP 10.1.0.2 198.51.100.7 5000 53 15 1500 2 3 ........ 0.0.0.0 0
1767225580.000 1767225599.000 TCP 2001:db8:1::2 2001:db8:2::9 40000 443 20 30000 2 3 ...AP... 0.0.0.0 0
1767225595.000 1767225599.000 TCP 192.168.1.10 203.0.113.80 33000 80 7 700 2 3 ...A..SF 198.51.100.1 61000
1767225597.000 1767225599.000 ICMP 10.1.0.2 198.51.100.7 0 8.0 3 252 2 3 ........ 0.0.0.0 0
1767225630.000 1767225640.000 UDP 10.1.0.2 198.51.100.7 5000 53 3 300 2 3 ........ 0.0.0.0 0'
# tshark fields: every value of each over the capture, sorted
ts_fields=(cflow.srcaddr cflow.srcaddrv6 cflow.dstaddr cflow.srcport cflow.dstport cflow.protocol
	cflow.packets cflow.octets cflow.post_natsource_ipv4_address cflow.post_naptsource_transport_port
	cflow.icmp_type_code_ipv4)
ts_want='cflow.srcaddr: 10.1.0.2 10.1.0.2 10.1.0.2 192.168.1.10
cflow.srcaddrv6: 2001:db8:1::2
cflow.dstaddr: 198.51.100.7 198.51.100.7 198.51.100.7 203.0.113.80
cflow.srcport: 0 33000 40000 5000 5000
cflow.dstport: 2048 443 53 53 80
cflow.protocol: 1 17 17 6 6
cflow.packets: 15 20 3 3 7
cflow.octets: 1500 252 300 30000 700
cflow.post_natsource_ipv4_address: 198.51.100.1
cflow.post_naptsource_transport_port: 61000
cflow.icmp_type_code_ipv4: 0x0000 0x0000 0x0000 0x0800'

k=0
for fmt in ipfix netflow9; do
	k=$((k + 1))
	if [ -n "$XDPR_EXPORT_NS" ]; then port=$((4738 + k)); else port=$((20000 + RANDOM % 20000)); fi
	D=$T/$fmt
	mkdir -p "$D/flows"
	if ! command -v nfcapd > /dev/null || ! command -v nfdump > /dev/null || ! command -v tshark > /dev/null; then
		# the set-up installs them (scripts/packages.txt): missing is a failure, not a skip
		for c in sent nfcapd nfdump tshark templates values; do
			tap 1 "$fmt: $c" "no nfcapd, nfdump or tshark (packages nfdump, tshark: make deps)"
		done
		continue
	fi
	nfcapd -w "$D/flows" -b 127.0.0.1 -p "$port" > "$D/nfcapd.log" 2>&1 &
	nfpid=$!
	bg+=("$nfpid")
	cap=
	if [ -n "$XDPR_EXPORT_NS" ] && command -v tcpdump > /dev/null; then
		tcpdump -Z root --immediate-mode -i lo -U -n -w "$D/c.pcap" "udp port $port" 2> "$D/tcpdump.log" &
		cap=$!
		bg+=("$cap")
		for _ in $(seq 50); do grep -q listening "$D/tcpdump.log" && break; sleep 0.1; done
	fi
	port_up "$port" || echo "# nfcapd is not listening on $port: $(cat "$D/nfcapd.log")"
	sent=$(timeout 20 "$B/selftests/test_export" send "$fmt" "127.0.0.1:$port" 2>&1)
	sleep 0.5
	kill -TERM "$nfpid"
	timeout 10 tail --pid="$nfpid" -f /dev/null
	[ -n "$cap" ] && kill -TERM "$cap" && timeout 10 tail --pid="$cap" -f /dev/null
	[ "$sent" = "records 5 messages 3 errors 0" ]
	tap $? "$fmt: test_export sent the scenario to nfcapd on 127.0.0.1:$port (5 records, 3 messages)" "$sent"
	grep -q "Flows: 5, Packets: 48, Bytes: 32752, Sequence Errors: 0, Bad Packets: 0" "$D/nfcapd.log"
	tap $? "$fmt: nfcapd: 5 flows, 48 packets, 32752 bytes, no sequence error, no bad packet" \
		"$(grep -i 'flows:\|error\|exporter' "$D/nfcapd.log" | tr '\n' ' ')"
	got=$(nfdump -R "$D/flows" -q -o "$nf_fmt" 2>&1 | tr -s ' ' | sed 's/^ //; s/ $//' | sort)
	[ "$got" = "$nf_want" ]
	tap $? "$fmt: nfdump shows exactly the 5 records (times, addresses, ports, proto, packets, bytes, flags, post-NAT source)" \
		"got: $(echo "$got" | tr '\n' '|') want: $(echo "$nf_want" | tr '\n' '|')"
	if [ -z "$cap" ]; then
		skip "$fmt: tshark decodes the capture" "no capture (needs root for the private namespace)"
		skip "$fmt: tshark: the templates" "no capture"
		skip "$fmt: tshark: the values" "no capture"
		continue
	fi
	v=$(tshark -r "$D/c.pcap" -d "udp.port==$port,cflow" -V 2>&1)
	frames=$(grep -c '^Frame [0-9]' <<< "$v")
	! grep -qi 'malformed\|\[Expert Info (Error\|\[Expert Info (Warning' <<< "$v" && [ "$frames" = 3 ]
	tap $? "$fmt: tshark -V decodes the 3 messages, no malformed packet, no expert error or warning" \
		"frames $frames: $(grep -i 'malformed\|expert' <<< "$v" | sort -u | head -5 | tr '\n' ' ')"
	tmpl=$(grep -o 'Template (Id = [0-9]*, Count = [0-9]*)' <<< "$v" | tr '\n' ' ')
	[ "$tmpl" = "Template (Id = 256, Count = 13) Template (Id = 257, Count = 13) Template (Id = 258, Count = 17) " ] &&
		grep -q "Version: $([ $fmt = ipfix ] && echo 10 || echo 9)\$" <<< "$v" &&
		grep -q 'Type: POST_NAT_SRC_IPV4_ADDR (225)\|Type: postNATSourceIPv4Address (225)' <<< "$v" &&
		grep -q "Type: $([ $fmt = ipfix ] && echo 'flowStartMilliseconds (152)' || echo 'FIRST_SWITCHED (22)')" <<< "$v"
	tap $? "$fmt: tshark: templates 256 (IPv4), 257 (IPv6), 258 (IPv4 NAT, IE 225-228) with the format's times" \
		"$tmpl $(grep '(225)\|(152)\|(22)' <<< "$v" | sort -u | tr '\n' ' ')"
	got=$(for f in "${ts_fields[@]}"; do
		echo "$f: $(tshark -r "$D/c.pcap" -d "udp.port==$port,cflow" -T fields -E occurrence=a \
			-E aggregator=' ' -e "$f" 2>/dev/null | tr ' \t' '\n\n' | grep . | sort | tr '\n' ' ' | sed 's/ $//')"
	done)
	want=$ts_want
	# v9 times are sysUptime ms; IPFIX's are absolute: the starts, in UTC
	if [ $fmt = ipfix ]; then
		got="$got
starts: $(tshark -r "$D/c.pcap" -d "udp.port==$port,cflow" -t ud -T fields -E occurrence=a -E aggregator='|' \
			-e cflow.abstimestart 2>/dev/null | tr '|' '\n' | grep . | sed 's/\.000000000 UTC//' | sort | tr '\n' '|')"
		want="$want
starts: Dec 31, 2025 23:59:30|Dec 31, 2025 23:59:40|Dec 31, 2025 23:59:55|Dec 31, 2025 23:59:57|Jan  1, 2026 00:00:30|"
	fi
	[ "$got" = "$want" ]
	tap $? "$fmt: tshark: the records' addresses, ports, proto, packets, bytes, post-NAT source, ICMP type$([ $fmt = ipfix ] && echo ', start times')" \
		"$(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"
done

# ---- xdprd refuses bad export lines, naming the line ----
C=$T/x.conf
for c in "${bad_conf[@]}"; do
	IFS='|' read -r line msg <<< "$c"
	printf '# flow export\n%s\n' "$line" > "$C"
	err=$(timeout 10 "$B/xdprd" --foreground --metrics none --config "$C" 2>&1 >/dev/null); got=$?
	[ "$got" = 1 ] && [[ "$err" == "Error: $C line 2: $msg"*"(nothing applied)" ]] && [ "$(wc -l <<< "$err")" = 1 ]
	tap $? "xdprd refuses \"$line\": exit 1, $msg" "exit $got: $err"
done
for c in "${twice[@]}"; do
	IFS='|' read -r l1 l2 msg <<< "$c"
	printf '#\n%s\n%s\n' "$l1" "$l2" > "$C"
	err=$(timeout 10 "$B/xdprd" --foreground --metrics none --config "$C" 2>&1 >/dev/null); got=$?
	[ "$got" = 1 ] && [[ "$err" == "Error: $C line 3: $msg"* ]]
	tap $? "xdprd refuses \"$l2\" after \"$l1\": $msg" "exit $got: $err"
done
exit $rc
