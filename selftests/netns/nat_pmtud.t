#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_pmtud.t - "inbound packets never reach the kernel translated" (issue
# 10), for the two cases where the kernel would answer them:
#  - PMTUD through the NAT: r0 (inside) has MTU 1400, c1 1500, so C1
#    advertises MSS 1460 and H's full-size segments (DF) do not fit r0.
#    The router must answer "fragmentation needed, next-hop MTU 1400" from
#    its outside address, quoting the segment as it arrived (destination
#    10.0.2.1, never 10.0.1.2); H lowers its path MTU and a 2 MB download
#    completes intact.
#  - TTL 1 towards an inside host: H sends a datagram with TTL 1 to the
#    mapped port of a live session; H gets "time exceeded" from 10.0.2.1
#    quoting the outside addresses, C1 gets nothing (a TTL 64 datagram right
#    after does arrive).
# On h0 no frame carries C1's address (10.0.1.2) anywhere.
#
# h0 gets an XDP program that passes everything: a veth sends a frame back
# with XDP_TX into its peer's queue but wakes the peer only if the peer has
# an XDP program (veth_xdp_flush); with GRO alone, the router's ICMP waits
# on h0 until another frame comes along (a lone "time exceeded" was seen to
# arrive seconds late, at the next test's socket).
. "$(dirname "$0")/nat_lib.sh"
need clang

nat_topo_create pm
if ! obj=$(xdp_pass_obj) || ! ip -n "$H" link set dev h0 xdpdrv obj "$obj" sec xdp; then
	bail_out "cannot attach a pass-all XDP program to h0"
fi
ip -n "$R" link set r0 mtu 1400
is "$(ip -n "$R" -j link show r0 | jq -r '.[0].mtu')/$(ip -n "$C1" -j link show c1 | jq -r '.[0].mtu')/$(ip -n "$R" -j link show r1 | jq -r '.[0].mtu')" \
	"1400/1500/1500" "MTUs: r0 1400, c1 1500, r1 1500"
leak_start
nat_attach
# no data segments in this capture: random payload could hold any 4 bytes
cap_start pm "$H" h0 'icmp or (tcp and tcp[tcpflags] & (tcp-syn|tcp-fin|tcp-rst) != 0)' ||
	abort "capture on h0 did not start"

# ---- PMTUD: 2 MB from H to C1 over a connection C1 opened
fr0=$(ctr "$R" r1 tx_icmp_frag)
kdu0=$(snmp "$R" Icmp OutDestUnreachs)
make_file "$T_TMP/down" 2
ok "TCP download: 2 MB from H to C1 (inside MTU 1400) arrive with the same SHA-256" \
	tcp_fetch "$C1" "$H" 10.0.2.2 5000 "$T_TMP/down"
is "$(stat -c %s "$T_TMP/down.recv" 2>/dev/null)" 2097152 "C1 received 2097152 bytes"
num "$(grown "$fr0" "$R" r1 tx_icmp_frag)" -ge 1 "r1 tx_icmp_frag grew (answered from XDP)"
is "$(($(snmp "$R" Icmp OutDestUnreachs) - kdu0))" 0 "the router's kernel sent no destination unreachable of its own"
like "$(in_ns "$H" ip route get 10.0.2.1)" 'mtu 1400' "H's route to 10.0.2.1 learned path MTU 1400"
is "$(snmp "$C1" Tcp InCsumErrors)/$(snmp "$H" Tcp InCsumErrors)" "0/0" "C1, H: TcpInCsumErrors 0/0"

# ---- TTL 1 to a mapped port
# ttl.py server PORT   (H) wait for one datagram, answer it with TTL 1
#                      ("ttl1") and print the ICMP error that comes back
#                      (IP_RECVERR), then with TTL 64 ("ttl64")
# ttl.py client PORT DST:PORT WAIT   (C1) send "hello", print what arrives
cat >"$T_TMP/ttl.py" <<'EOF'
import select, socket, struct, sys, time
IP_RECVERR = 11  # not in python's socket module
mode, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", port))
if mode == "server":
    s.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
    if not select.select([s], [], [], 8)[0]:
        sys.exit("nothing received")
    data, frm = s.recvfrom(2048)
    print("from %s:%d" % frm, flush=True)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 1)
    s.sendto(b"ttl1", frm)
    end, err = time.time() + 2, "no error"
    while time.time() < end:
        try:
            _, anc, _, _ = s.recvmsg(512, 512, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
        except BlockingIOError:
            time.sleep(0.05)
            continue
        for lvl, typ, d in anc:
            if lvl == socket.IPPROTO_IP and typ == IP_RECVERR:
                eno, origin, itype, icode = struct.unpack("=IBBB", d[:7])
                off = socket.inet_ntoa(d[16 + 4:16 + 8])
                err = "icmp %d/%d from %s" % (itype, icode, off)
        break
    print(err, flush=True)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 64)
    s.sendto(b"ttl64", frm)
else:
    h, p = sys.argv[3].rsplit(":", 1)
    s.sendto(b"hello", (h, int(p)))
    end = time.time() + float(sys.argv[4])
    while True:
        left = end - time.time()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            break
        data, frm = s.recvfrom(2048)
        print("got %s from %s:%d" % (data.decode(errors="replace"), frm[0], frm[1]), flush=True)
EOF
tt0=$(ctr "$R" r1 tx_icmp_ttl)
kte0=$(snmp "$R" Icmp OutTimeExcds)
T_TIMEOUT=15 in_ns "$H" "$NAT_PY" "$T_TMP/ttl.py" server 7100 >"$T_TMP/ttl_h.out" 2>&1 &
server=$!
for ((i = 0; i < 50; i++)); do
	[ -n "$(in_ns "$H" ss -Huln "sport = :7100" 2>/dev/null)" ] && break
	sleep 0.1
done
c1_out=$(T_TIMEOUT=15 in_ns "$C1" "$NAT_PY" "$T_TMP/ttl.py" client 40600 10.0.2.2:7100 4 2>&1)
wait "$server"
h_out=$(cat "$T_TMP/ttl_h.out")
is "$(sed -n 1p <<<"$h_out")" "from 10.0.2.1:40600" "H: C1's datagram comes from its mapping 10.0.2.1:40600"
is "$(sed -n 2p <<<"$h_out")" "icmp 11/0 from 10.0.2.1" \
	"H: its TTL 1 datagram to 10.0.2.1:40600 gets time exceeded from 10.0.2.1 (IP_RECVERR)"
is "$c1_out" "got ttl64 from 10.0.2.2:7100" "C1 receives the TTL 64 datagram only, not the TTL 1 one"
is "$(grown "$tt0" "$R" r1 tx_icmp_ttl)" 1 "r1 tx_icmp_ttl grew by 1"
is "$(($(snmp "$R" Icmp OutTimeExcds) - kte0))" 0 "the router's kernel sent no time exceeded of its own"
cap_stop pm || fail "capture on h0 incomplete"

# ---- the wire (h0)
cap=$(cap_json pm)
syn=$(jq -c '[.[] | select(.src == "10.0.2.1" and .dport == 5000 and .tcp_flags == 2)]' <<<"$cap")
is "$(jq -r 'map("\(.mss)") | join(",")' <<<"$syn")" "1460" "h0: C1's SYN (one) advertises MSS 1460"
mport=$(jq -r '.[0].sport' <<<"$syn")
frag=$(jq -c '[.[] | select(.icmp_type == 3 and .icmp_code == 4)]' <<<"$cap")
num "$(jq length <<<"$frag")" -ge 1 "h0: fragmentation needed reached H ($(jq length <<<"$frag"))"
is "$(jq -r 'map("\(.src)>\(.dst) mtu \(.icmp_mtu) csum \(.ip_csum_ok)/\(.icmp_csum_ok) quote \(.q.src):\(.q.sport)>\(.q.dst):\(.q.dport) proto \(.q.proto) len \(.q.len) df \(.q.df) ttl \(.q.ttl)") | unique | join("; ")' <<<"$frag")" \
	"10.0.2.1>10.0.2.2 mtu 1400 csum true/true quote 10.0.2.2:5000>10.0.2.1:$mport proto 6 len 1500 df true ttl 64" \
	"h0: each is from 10.0.2.1, MTU 1400, checksums valid, quoting H's 1500-byte DF segment as sent: H:5000 > 10.0.2.1:$mport (the outside address), TTL 64"
te=$(jq -c '[.[] | select(.icmp_type == 11)]' <<<"$cap")
is "$(jq -r 'map("\(.src)>\(.dst) code \(.icmp_code) csum \(.ip_csum_ok)/\(.icmp_csum_ok) quote \(.q.src):\(.q.sport)>\(.q.dst):\(.q.dport) proto \(.q.proto) ttl \(.q.ttl)") | join("; ")' <<<"$te")" \
	"10.0.2.1>10.0.2.2 code 0 csum true/true quote 10.0.2.2:7100>10.0.2.1:40600 proto 17 ttl 1" \
	"h0: one time exceeded from 10.0.2.1, checksums valid, quoting H:7100 > 10.0.2.1:40600 with TTL 1"
is "$(jq '[.[] | select(.raw | test("^(..)*0a000102"))] | length' <<<"$cap")" 0 \
	"h0: no frame (ICMP, SYN, FIN, RST) carries 10.0.1.2 anywhere in its bytes"
leak_check "PMTUD and TTL 1"
done_testing
