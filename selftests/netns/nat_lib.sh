# SPDX-License-Identifier: GPL-2.0
# nat_lib.sh - topology and helpers for the NAT end-to-end tests
# (selftests/netns/nat_*.t).  Sources lib.sh (TAP, clean-up, CLI wrappers).
#
#   C1  c1 10.0.1.2/24 ---- r0 10.0.1.1 .
#                                        R   r1 10.0.2.1/24 ---- h0 10.0.2.2/24  H  h1 10.0.4.1/24 ---- s0 10.0.4.2/24  S
#   C2  c2 10.0.3.2/24 ---- r2 10.0.3.1 '
#
# R forwards and is where xdpr runs (r0, r1, r2 attached by nat_attach);
# r1 is the outside (NAT) interface.  H is an outside router and server; S a
# server one hop further.  Neither H nor S has a route to the inside networks
# (10.0.1.0/24, 10.0.3.0/24): a packet that leaves R untranslated gets no
# answer.  H routes 198.51.100.0/24 (pool tests) to R.  R reaches 10.0.4.0/24
# via H.  c1, c2 and h0 (peers of router interfaces) have GRO on; every veth
# where test traffic starts has tx checksum offload off (NOTES.md).  No ICMP
# rate limits (traceroute).  Namespace names carry $$ and a tag.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NAT_PY=/usr/bin/python3
[ -x "$NAT_PY" ] || NAT_PY=$(command -v python3)
[ -n "$NAT_PY" ] || skip_all "python3 not installed"
need tcpdump bpftool

# nat_topo_create TAG: make C1 C2 R H S (names in those variables) and wire them.
nat_topo_create() {
	local tag=$1 ns i q
	C1="xdpr-$T_ID-$tag-c1"
	C2="xdpr-$T_ID-$tag-c2"
	R="xdpr-$T_ID-$tag-r"
	H="xdpr-$T_ID-$tag-h"
	S="xdpr-$T_ID-$tag-s"
	for ns in "$C1" "$C2" "$R" "$H" "$S"; do
		ip netns add "$ns" || bail_out "cannot create namespace $ns"
		T_NS_MADE+=("$ns")
		ip -n "$ns" link set lo up
		in_ns "$ns" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_msgs_per_sec=100000 \
			net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0 >/dev/null
	done
	# the address-change test deletes r1's primary address: keep the secondary
	in_ns "$R" sysctl -qw net.ipv4.conf.all.promote_secondaries=1 \
		net.ipv4.conf.default.promote_secondaries=1 >/dev/null
	# NAT_C1_QUEUES=N: r0/c1 with N queues each way (one NAPI context per queue:
	# senders on different CPUs then run XDP on r0 on their own CPU at once)
	q=${NAT_C1_QUEUES:+numtxqueues $NAT_C1_QUEUES numrxqueues $NAT_C1_QUEUES}
	# shellcheck disable=SC2086 # $q is words or nothing
	ip -n "$R" link add r0 $q type veth peer name c1 $q netns "$C1" || bail_out "cannot create veth r0/c1"
	ip -n "$R" link add r2 type veth peer name c2 netns "$C2" || bail_out "cannot create veth r2/c2"
	ip -n "$R" link add r1 type veth peer name h0 netns "$H" || bail_out "cannot create veth r1/h0"
	ip -n "$H" link add h1 type veth peer name s0 netns "$S" || bail_out "cannot create veth h1/s0"

	ip -n "$C1" addr add 10.0.1.2/24 dev c1
	ip -n "$C2" addr add 10.0.3.2/24 dev c2
	ip -n "$R" addr add 10.0.1.1/24 dev r0
	ip -n "$R" addr add 10.0.3.1/24 dev r2
	ip -n "$R" addr add 10.0.2.1/24 dev r1
	ip -n "$H" addr add 10.0.2.2/24 dev h0
	ip -n "$H" addr add 10.0.4.1/24 dev h1
	ip -n "$S" addr add 10.0.4.2/24 dev s0
	in_ns "$R" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.r1.promote_secondaries=1 >/dev/null
	in_ns "$H" sysctl -qw net.ipv4.ip_forward=1 >/dev/null

	in_ns "$C1" ethtool -K c1 gro on tx off >/dev/null 2>&1 || bail_out "ethtool on c1 failed"
	in_ns "$C2" ethtool -K c2 gro on tx off >/dev/null 2>&1 || bail_out "ethtool on c2 failed"
	in_ns "$H" ethtool -K h0 gro on tx off >/dev/null 2>&1 || bail_out "ethtool on h0 failed"
	in_ns "$H" ethtool -K h1 tx off >/dev/null 2>&1 || bail_out "ethtool on h1 failed"
	in_ns "$S" ethtool -K s0 tx off >/dev/null 2>&1 || bail_out "ethtool on s0 failed"
	for i in r0 r1 r2; do
		in_ns "$R" ethtool -K "$i" tx off >/dev/null 2>&1
		ip -n "$R" link set "$i" up
	done
	ip -n "$C1" link set c1 up
	ip -n "$C2" link set c2 up
	ip -n "$H" link set h0 up
	ip -n "$H" link set h1 up
	ip -n "$S" link set s0 up
	ip -n "$C1" route add default via 10.0.1.1
	ip -n "$C2" route add default via 10.0.3.1
	ip -n "$R" route add 10.0.4.0/24 via 10.0.2.2
	ip -n "$H" route add 198.51.100.0/24 via 10.0.2.1
	ip -n "$S" route add default via 10.0.4.1

	# Every link works and every neighbour on the path is resolved.
	for ((i = 0; i < 10; i++)); do
		T_TIMEOUT=5 in_ns "$C1" ping -c1 -W1 -q 10.0.1.1 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$C2" ping -c1 -W1 -q 10.0.3.1 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$R" ping -c1 -W1 -q 10.0.1.2 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$R" ping -c1 -W1 -q 10.0.3.2 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$R" ping -c1 -W1 -q 10.0.4.2 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$H" ping -c1 -W1 -q 10.0.2.1 >/dev/null 2>&1 &&
			return 0
		sleep 0.5
	done
	bail_out "topology $tag: links or routes do not work"
}

# xdpr_attach ARGS...: `xdpr link attach ARGS` with a longer time limit (the
# verifier takes seconds per program, many more when other loads run at once).
xdpr_attach() {
	T_CLI_TIMEOUT=90 xdpr link attach "$@"
}

# nat_attach: xdpr on r0 r1 r2 plus `nat add out r1 masquerade [WORDS...]`.
# shellcheck disable=SC2120 # the words are optional
nat_attach() {
	ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
	ok "nat add out r1 masquerade $*" xdpr nat add out r1 masquerade "$@" ||
		abort "cannot add the masquerade rule"
}

# ---------------------------------------------------------------- counters

# nat_ctr FIELD [DEV]: a NAT rule counter summed over DEV's rules (default
# r1); "none" when it cannot be read.
nat_ctr() {
	local v
	v=$(xdpr -j nat show 2>/dev/null | jq -r --arg d "${2:-r1}" --arg f "$1" \
		'[.[] | select(.dev == $d) | .counters[$f]] | if length == 0 or any(. == null) then "none" else add end' \
		2>/dev/null)
	echo "${v:-none}"
}

# nat_grown BEFORE FIELD [DEV]
nat_grown() {
	local now
	now=$(nat_ctr "$2" "${3:-r1}")
	if [[ "$1" =~ ^[0-9]+$ && "$now" =~ ^[0-9]+$ ]]; then
		echo $((now - $1))
	else
		echo none
	fi
}

# nat_rules: `-j nat show` without counters and held ports, normalised (for
# "unchanged" checks); "unreadable (TIME): ..." when it fails (json_of:
# never equal to another read).
nat_rules() {
	json_of 'map(del(.counters, .held))' xdpr -j nat show
}

# sessions [ARGS...]: `-j nat sessions ARGS`, compact.
# shellcheck disable=SC2120 # the arguments are optional
sessions() {
	xdpr -j nat sessions "$@" 2>&1 | jq -c . 2>&1
}

# csum_errors NS: "Tcp/Udp" InCsumErrors of a namespace, e.g. "0/0".
csum_errors() {
	echo "$(snmp "$1" Tcp InCsumErrors)/$(snmp "$1" Udp InCsumErrors)"
}

# ---------------------------------------------------------------- traffic

# A small UDP tool (one socket per call), run with python3 in a namespace:
#   ask SPORT TIMEOUT DST:PORT [DST:PORT ...]
#       one socket bound to SPORT (0: any) sends "ping" to each DST in turn and
#       prints each answer (or "timeout"); exit 1 if any timed out.
#   hairpin SPORT WAIT DST:PORT
#       like ask for DST, then waits WAIT seconds for one datagram from anyone
#       else, prints "got ADDR:PORT DATA" and answers "c1 saw ADDR:PORT".
#   A DST with more than one ":" is IPv6 (ADDR:PORT, split at the last ":").
#   Environment for ask and hairpin: NAT_UDP_SIZE=N pads the request to N
#   bytes, NAT_UDP_DF=0 clears DF (the kernel may fragment), NAT_UDP_NOCSUM=1
#   sends without UDP checksum (SO_NO_CHECK), NAT_UDP_BIND=ADDR binds the
#   socket to that local address, NAT_UDP_IPOPT=1 adds 4 bytes of
#   IPv4 options (NOPs).
#   serve PORT [6]
#       (server side) answers every datagram with its sender's "ADDR:PORT"
#       ("[ADDR]:PORT" over IPv6, with 6) and outlives senders it cannot
#       answer.  One process, no fork: an answer never waits for a child.
#   refuse PORT WAIT
#       (server side) receives one datagram, connect()s to its sender, sends
#       it two more after 1 s and prints "refused" when an ICMP port
#       unreachable comes back for them (ECONNREFUSED), else "no error".
cat >"$T_TMP/nat_udp.py" <<'EOF'
import os, socket, sys, time, select

SIZE = int(os.environ.get("NAT_UDP_SIZE", "0"))

def v6(dst):
    return dst.count(":") > 1

def sock(port, six=False):
    s = socket.socket(socket.AF_INET6 if six else socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if os.environ.get("NAT_UDP_DF") == "0":
        s.setsockopt(socket.IPPROTO_IP, 10, 0)     # IP_MTU_DISCOVER = IP_PMTUDISC_DONT
    if os.environ.get("NAT_UDP_NOCSUM") == "1":
        s.setsockopt(socket.SOL_SOCKET, 11, 1)     # SO_NO_CHECK
    if os.environ.get("NAT_UDP_IPOPT") == "1":
        s.setsockopt(socket.IPPROTO_IP, 4, b"\x01\x01\x01\x00")  # IP_OPTIONS: NOP NOP NOP EOL
    s.bind((os.environ.get("NAT_UDP_BIND", "::" if six else "0.0.0.0"), port))
    return s

def who(frm):
    return ("[%s]:%d" if len(frm) == 4 else "%s:%d") % frm[:2]

def ask(s, dst, timeout):
    host, port = dst.rsplit(":", 1)
    peer = (host, int(port))
    fam = socket.AF_INET6 if v6(dst) else socket.AF_INET
    msg = b"ping\n"
    if SIZE > len(msg):
        msg = b"ping" + b"x" * (SIZE - 5) + b"\n"
    s.sendto(msg, peer)
    end = time.time() + timeout
    while True:
        left = end - time.time()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            return None
        data, frm = s.recvfrom(2048)
        if frm[1] == peer[1] and socket.inet_pton(fam, frm[0]) == socket.inet_pton(fam, host):
            return data.decode(errors="replace").strip()

a = sys.argv[1:]
if a[0] == "ask":
    s, rc = sock(int(a[1]), v6(a[3])), 0
    for d in a[3:]:
        r = ask(s, d, float(a[2]))
        print(r if r else "timeout", flush=True)
        rc |= r is None
    sys.exit(rc)
elif a[0] == "hairpin":
    s = sock(int(a[1]), v6(a[3]))
    r = ask(s, a[3], 2.0)
    print(r if r else "timeout", flush=True)
    if not select.select([s], [], [], float(a[2]))[0]:
        print("nothing received", flush=True)
        sys.exit(1)
    data, frm = s.recvfrom(2048)
    print("got %s %s" % (who(frm), data.decode(errors="replace").strip()[:4]), flush=True)
    s.sendto(("c1 saw %s\n" % who(frm)).encode(), frm)
elif a[0] == "serve":
    s = sock(int(a[1]), a[2:3] == ["6"])
    while True:
        data, frm = s.recvfrom(65536)
        try:
            s.sendto(("%s\n" % who(frm)).encode(), frm)
        except OSError:
            pass  # a sender it has no route to (a leak) must not end the server
elif a[0] == "refuse":
    s = sock(int(a[1]))
    if not select.select([s], [], [], float(a[2]))[0]:
        print("nothing received", flush=True)
        sys.exit(1)
    data, frm = s.recvfrom(2048)
    print("from %s:%d" % frm, flush=True)
    s.connect(frm)
    time.sleep(1)
    try:
        for i in range(2):
            s.send(b"are you there\n")
            time.sleep(0.3)
        s.settimeout(2)
        s.recv(2048)
        print("no error: got an answer", flush=True)
    except ConnectionRefusedError:
        print("refused", flush=True)
    except socket.timeout:
        print("no error", flush=True)
EOF

# udp NS ARGS...: the UDP tool in NS (bounded).
udp() {
	local ns=$1
	shift
	T_TIMEOUT=${T_TIMEOUT:-20} in_ns "$ns" "$NAT_PY" "$T_TMP/nat_udp.py" "$@"
}

# udp_spray NS DST:PORT FIRST LAST [SRC...]: one datagram to DST:PORT from
# each source port FIRST..LAST of each source address (default: any), one
# socket each: a flow per port (bounded; 0 when every send worked).
udp_spray() {
	local ns=$1 dst=$2 first=$3 last=$4
	shift 4
	T_TIMEOUT=${T_TIMEOUT:-120} in_ns "$ns" "$NAT_PY" - "$dst" "$first" "$last" "${@:-0.0.0.0}" <<'EOF'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
first, last = int(sys.argv[2]), int(sys.argv[3])
for src in sys.argv[4:]:
    for p in range(first, last + 1):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((src, p))
        s.sendto(b"x", (host, int(port)))
        s.close()
EOF
}

# udp_echo NS PORT [6]: background UDP server answering every datagram with
# the sender's address as it sees it ("ADDR:PORT"; with 6, IPv6: "[ADDR]:PORT").
udp_echo() {
	timeout 300 ip netns exec "$1" "$NAT_PY" "$T_TMP/nat_udp.py" serve "$2" ${3:+"$3"} 2>/dev/null &
	wait_listen "$1" "$2" udp && return 0
	diag "UDP server on port $2 did not start"
	return 1
}

# tcp_echo NS PORT: background TCP server writing the peer's address to every
# connection (socat takes ":" as an address separator: hence the "\:").
tcp_echo() {
	# shellcheck disable=SC2016 # expanded by the shell socat starts
	timeout 300 ip netns exec "$1" socat "TCP4-LISTEN:$2,reuseaddr,fork" \
		SYSTEM:'echo $SOCAT_PEERADDR\:$SOCAT_PEERPORT' 2>/dev/null &
	wait_listen "$1" "$2"
}

# tcp_ask NS ADDR PORT: what a tcp_echo server says to a connection from NS.
tcp_ask() {
	T_TIMEOUT=10 in_ns "$1" socat -t 5 -T 5 - "TCP4:$2:$3" </dev/null 2>/dev/null
}

# tcp_fetch CLIENT_NS SERVER_NS ADDR PORT FILE: the server sends FILE over one
# TCP connection, the client stores it as FILE.recv; 0 when both socats exit
# 0 and the SHA-256 matches.
tcp_fetch() {
	local cns=$1 sns=$2 addr=$3 port=$4 file=$5 spid
	rm -f "$file.recv"
	timeout 40 ip netns exec "$sns" socat -u "OPEN:$file,rdonly" "TCP4-LISTEN:$port,reuseaddr" \
		2>"$file.server.err" &
	spid=$!
	if ! wait_listen "$sns" "$port"; then
		diag "server on port $port did not start"
		kill "$spid" 2>/dev/null
		return 1
	fi
	T_TIMEOUT=30 in_ns "$cns" socat -u "TCP4:$addr:$port" "CREATE:$file.recv" 2>"$file.client.err"
	transfer_done $? "$spid" "$file"
}

# ---------------------------------------------------------------- leak capture

# leak_start: capture, on H's side of the outside link, every IPv4 packet
# whose source is an inside address, and every ICMP error whose embedded
# packet names an inside address.  leak_check (one test) says none was seen.
# --immediate-mode: without it tcpdump hands packets over in blocks (up to
# a second late) and the packets of the last block before the SIGINT are
# never written (seen: "5 packets received by filter, 0 captured").  In that
# mode the ring holds buffer/snaplen frames: -s 1600 -B 32768, or a burst is
# "dropped by kernel" (seen with 192 datagrams at once).
LEAK_FILTER='ip and (src net 10.0.1.0/24 or src net 10.0.3.0/24 or
	((icmp[icmptype] == icmp-unreach or icmp[icmptype] == icmp-timxceed or
	  icmp[icmptype] == icmp-paramprob) and
	 ((icmp[20:4] & 0xffffff00) == 0x0a000100 or (icmp[20:4] & 0xffffff00) == 0x0a000300 or
	  (icmp[24:4] & 0xffffff00) == 0x0a000100 or (icmp[24:4] & 0xffffff00) == 0x0a000300)))'
LEAK_PID=
# recreate_r1 [IFINDEX]: r1/h0 again, addressed and routed as nat_topo_create made them.
recreate_r1() {
	local i
	ip -n "$R" link add r1 ${1:+index "$1"} type veth peer name h0 netns "$H" ||
		bail_out "cannot create veth r1/h0"
	ip -n "$R" addr add 10.0.2.1/24 dev r1
	ip -n "$H" addr add 10.0.2.2/24 dev h0
	in_ns "$R" ethtool -K r1 tx off >/dev/null 2>&1
	in_ns "$H" ethtool -K h0 gro on tx off >/dev/null 2>&1
	ip -n "$R" link set r1 up
	ip -n "$H" link set h0 up
	ip -n "$R" route add 10.0.4.0/24 via 10.0.2.2
	ip -n "$H" route add 198.51.100.0/24 via 10.0.2.1
	for ((i = 0; i < 10; i++)); do
		T_TIMEOUT=5 in_ns "$R" ping -c1 -W1 -q 10.0.4.2 >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	bail_out "the new r1 does not reach S"
}

leak_start() {
	timeout 600 ip netns exec "$H" tcpdump -Z root -i h0 -n -U --immediate-mode -s 1600 -B 32768 \
		-w "$T_TMP/leak.pcap" "$LEAK_FILTER" 2>"$T_TMP/leak.err" &
	LEAK_PID=$!
	wait_file_line "$T_TMP/leak.err" 'listening on' ||
		{ diag_file "$T_TMP/leak.err"; abort "tcpdump on h0 did not start"; }
}

leak_check() {
	local n dump rc
	sleep 0.3
	kill -INT "$LEAK_PID" 2>/dev/null
	wait "$LEAK_PID"
	rc=$?
	dump=$(pcap_read "$T_TMP/leak.pcap" -v 2>"$T_TMP/leak.rerr") ||
		rc="$rc, reading it: $(tail -n1 "$T_TMP/leak.rerr")"
	n=$(grep -c '^[0-9]' <<<"$dump")
	# a capture that died, cannot be read or lost packets says nothing about leaks
	[ "$rc" == 0 ] || n="no capture (tcpdump exit $rc)"
	grep -q '^0 packets dropped by kernel' "$T_TMP/leak.err" ||
		n="capture incomplete: $(grep 'dropped by kernel' "$T_TMP/leak.err")"
	is "$n" 0 "outside link (h0 capture over ${1:-this file}): no packet with an inside source, no ICMP error embedding an inside address" ||
		diag "$(head -n 20 <<<"$dump")"
}

# not CMD...: succeeds when CMD fails.
not() {
	! "$@"
}

# ---------------------------------------------------------------- captures

# Packet captures a test asserts on (bytes on the wire).  cap_start starts
# tcpdump and fails unless it is listening; cap_stop ends it; cap_json reads
# the capture back as a JSON array, one object per frame, decoded by
# nat_pcap.py (no scapy needed): "src" "dst" "proto" "ttl" "df" "len"
# "ip_csum_ok" "sport" "dport" "tcp_flags" "mss" "payload" (hex) "text" (the
# payload as ASCII, "." for other bytes) "l4_csum_ok"
# (null: not checkable, e.g. UDP checksum 0); ICMP: "icmp_type" "icmp_code"
# "icmp_csum_ok" "icmp_mtu" (next-hop MTU of type 3 code 4) and, for errors,
# "q" (the quoted packet: src dst proto ttl sport dport); "raw" is the whole
# frame in hex (for "this address appears nowhere" checks).
cat >"$T_TMP/nat_pcap.py" <<'EOF'
import json, struct, sys

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s

def ip4(b):
    return "%d.%d.%d.%d" % tuple(b)

def ports(d, l4, proto):
    if proto in (6, 17) and len(l4) >= 4:
        d["sport"], d["dport"] = struct.unpack("!HH", l4[:4])

def ipv4(b, quoted=False):
    d = {}
    if len(b) < 20 or b[0] >> 4 != 4:
        return None
    ihl = (b[0] & 15) * 4
    tot, frag = struct.unpack("!H", b[2:4])[0], struct.unpack("!H", b[6:8])[0]
    d.update(src=ip4(b[12:16]), dst=ip4(b[16:20]), proto=b[9], ttl=b[8], len=tot,
             df=bool(frag & 0x4000), mf=bool(frag & 0x2000), frag_off=(frag & 0x1fff) * 8,
             ip_csum_ok=csum(b[:ihl]) == 0xffff if len(b) >= ihl else None)
    l4 = b[ihl:tot] if not quoted else b[ihl:]
    if d["frag_off"]:
        return d
    ports(d, l4, d["proto"])
    if quoted:
        return d
    whole = len(b) >= tot and not d["mf"]
    pseudo = b[12:20] + struct.pack("!BBH", 0, d["proto"], len(l4))
    if d["proto"] == 17 and len(l4) >= 8:
        d["payload"] = l4[8:].hex()
        c = struct.unpack("!H", l4[6:8])[0]
        d["l4_csum_ok"] = None if c == 0 or not whole else csum(pseudo + l4) == 0xffff
    elif d["proto"] == 6 and len(l4) >= 20:
        off = (l4[12] >> 4) * 4
        d["tcp_flags"] = l4[13]
        d["payload"] = l4[off:].hex()
        opt, i = l4[20:off], 0
        while i < len(opt):
            if opt[i] == 0:
                break
            if opt[i] == 1:
                i += 1
                continue
            if i + 1 >= len(opt) or opt[i + 1] < 2:
                break
            if opt[i] == 2 and opt[i + 1] == 4:
                d["mss"] = struct.unpack("!H", opt[i + 2:i + 4])[0]
            i += opt[i + 1]
        d["l4_csum_ok"] = csum(pseudo + l4) == 0xffff if whole else None
    elif d["proto"] == 1 and len(l4) >= 8:
        d.update(icmp_type=l4[0], icmp_code=l4[1], icmp_csum_ok=csum(l4) == 0xffff if whole else None)
        if l4[0] == 3 and l4[1] == 4:
            d["icmp_mtu"] = struct.unpack("!H", l4[6:8])[0]
        if l4[0] in (3, 11, 12):
            d["q"] = ipv4(l4[8:], quoted=True)
        d["payload"] = l4[8:].hex()
    return d

f = open(sys.argv[1], "rb")
hdr = f.read(24)
if len(hdr) < 24:
    sys.exit("%s: not a capture (%d bytes)" % (sys.argv[1], len(hdr)))
magic = struct.unpack("<I", hdr[:4])[0]
if magic not in (0xa1b2c3d4, 0xa1b23c4d, 0xd4c3b2a1, 0x4d3cb2a1):
    sys.exit("%s: not a capture (magic %08x)" % (sys.argv[1], magic))
end = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
nsec = magic in (0xa1b23c4d, 0x4d3cb2a1)
link = struct.unpack(end + "I", hdr[20:24])[0]
out = []
while True:
    rh = f.read(16)
    if not rh:
        break
    if len(rh) < 16:
        sys.exit("%s: cut in the header of frame %d" % (sys.argv[1], len(out) + 1))
    sec, frac, incl, orig = struct.unpack(end + "IIII", rh)
    fr = f.read(incl)
    if len(fr) < incl:
        sys.exit("%s: cut in frame %d (%d of %d bytes)" % (sys.argv[1], len(out) + 1, len(fr), incl))
    d = {"t": sec + frac / (1e9 if nsec else 1e6), "raw": fr.hex()}
    if link == 1 and len(fr) >= 14:
        et, l3 = struct.unpack("!H", fr[12:14])[0], fr[14:]
        d["smac"] = fr[6:12].hex(":")
    elif link == 113 and len(fr) >= 16:
        et, l3 = struct.unpack("!H", fr[14:16])[0], fr[16:]
    else:
        et, l3 = 0, b""
    d["ethertype"] = et
    if et == 0x0800:
        d.update(ipv4(l3) or {})
    if "payload" in d:
        d["text"] = "".join(chr(c) if 32 <= c < 127 else "." for c in bytes.fromhex(d["payload"]))
    out.append(d)
json.dump(out, sys.stdout)
EOF

declare -A CAP_PID

# cap_start NAME NS DEV [FILTER...]: capture on DEV in NS into
# $T_TMP/NAME.pcap in the background; 0 once tcpdump listens (<= 5 s).
cap_start() {
	local name=$1 ns=$2 dev=$3
	shift 3
	rm -f "$T_TMP/$name.pcap" "$T_TMP/$name.err"
	timeout 300 ip netns exec "$ns" tcpdump -Z root -i "$dev" -n -U --immediate-mode -s 1600 -B 32768 -w "$T_TMP/$name.pcap" "$@" \
		2>"$T_TMP/$name.err" &
	CAP_PID[$name]=$!
	if ! wait_file_line "$T_TMP/$name.err" 'listening on'; then
		diag "tcpdump $name on $dev did not start:"
		diag_file "$T_TMP/$name.err"
		return 1
	fi
}

# cap_stop NAME: end a capture (what is in flight lands first); 0 when
# tcpdump exited cleanly, left a capture file and lost no packet.
cap_stop() {
	local pid=${CAP_PID[$1]} rc
	[ -n "$pid" ] || return 1
	sleep 0.3
	kill -INT "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	unset "CAP_PID[$1]"
	[ "$rc" -eq 0 ] && [ -s "$T_TMP/$1.pcap" ] &&
		grep -q '^0 packets dropped by kernel' "$T_TMP/$1.err" && return 0
	diag "tcpdump $1 exited $rc:"
	diag_file "$T_TMP/$1.err"
	return 1
}

# cap_json NAME: the capture decoded, a JSON array.  A capture that is
# missing, empty, not a capture or cut (it did not start, or died) prints
# nothing, says why on stderr and returns 1: every check over it fails
# (`jq ... <<<""` prints nothing), none reads it as "no frames".
cap_json() {
	local out
	if ! out=$(timeout 30 "$NAT_PY" "$T_TMP/nat_pcap.py" "$T_TMP/$1.pcap" 2>"$T_TMP/$1.pyerr"); then
		echo "# capture $1 unreadable: $(tail -n 1 "$T_TMP/$1.pyerr")" >&2
		return 1
	fi
	printf '%s\n' "$out"
}

# cap_count NAME JQ_SELECT: how many frames of a capture match a jq
# condition (e.g. '.proto == 17 and .dport == 7000'); "unreadable" (status
# 1) when cap_json cannot read the capture.
cap_count() {
	local j
	j=$(cap_json "$1") || { echo unreadable; return 1; }
	jq "[.[] | select($2)] | length" <<<"$j"
}

# ---------------------------------------------------------------- rule slots

# rule_slots FILE: the router's xdpr_nat_rules map as bpftool dumps it (JSON)
# into FILE.  Maps are global objects (bpftool sees those of every
# namespace): the map is found through the program attached to r0.
rule_slots() {
	local prog m
	prog=$(in_ns "$R" bpftool -j net show dev r0 2>/dev/null | jq -r '.[0].xdp[0].id // empty')
	[ -n "$prog" ] || return 1
	for m in $(bpftool -j prog show id "$prog" 2>/dev/null | jq -r '.map_ids[]'); do
		if [ "$(bpftool -j map show id "$m" | jq -r .name)" = xdpr_nat_rules ]; then
			bpftool -j map dump id "$m" >"$1"
			return
		fi
	done
	return 1
}

# Every used rule slot (struct xdpr_nat_rule, bpf/xdpr_shared.h) must be a
# rule `nat show` lists, or a retired rule (XDPR_NAT_RETIRED) whose
# replacement (same interface, same src) is listed; and no change may be in
# flight (pending).  Prints what is wrong.
cat >"$T_TMP/slots.py" <<'EOF_PY'
import ipaddress, json, sys

slots, rules = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
listed = {r["id"] for r in rules}
bad = []
for e in slots:
    v = bytes(int(b, 16) for b in e["value"])
    k = int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little")
    ifindex, flags = int.from_bytes(v[0:4], "little"), int.from_bytes(v[4:8], "little")
    if not ifindex:
        continue
    src = "%s/%d" % (ipaddress.IPv4Address(v[8:12]), bin(int.from_bytes(v[12:16], "big")).count("1"))
    name = v[32:48].split(b"\0")[0].decode()
    pending = int.from_bytes(v[48:52], "little")
    what = "slot %d (ifindex %d %s, src %s, flags %d, pending %d)" % (k, ifindex, name, src, flags, pending)
    if pending:
        bad.append(what + ": a change still in flight")
    elif k in listed:
        continue
    elif flags & 4 and any("%s/%d" % (r["src"], r["src_len"]) == src and r["dev"] == name for r in rules):
        continue
    else:
        bad.append(what + ": used, but nat show does not list it")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF_PY

# slots_clean DESC: one test; every rule slot is listed by `nat show` or is
# a retired rule whose replacement is listed, and no change is in flight.
slots_clean() {
	local out
	if ! rule_slots "$T_TMP/slots.json"; then
		fail "$1: cannot dump xdpr_nat_rules with bpftool"
		return 1
	fi
	xdpr -j nat show >"$T_TMP/rules.json" 2>&1
	if out=$("$NAT_PY" "$T_TMP/slots.py" "$T_TMP/slots.json" "$T_TMP/rules.json" 2>&1); then
		pass "$1: no rule slot left that nat show does not list"
	else
		fail "$1: no rule slot left that nat show does not list"
		diag "$out"
		return 1
	fi
}
