#!/bin/bash
# make demo: build a client - router - server namespace topology, attach xdpr
# to the router's interfaces and show it forwarding and NAT-ing live traffic,
# with live per-CPU counters.  Everything it creates is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
XDPR=$PWD/build/xdpr
S=$$
C=xdpr-demo-c$S R=xdpr-demo-r$S V=xdpr-demo-s$S

cleanup() {
	set +e
	jobs -p | xargs -r kill 2>/dev/null
	wait 2>/dev/null
	for n in $C $R $V; do ip netns del $n 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
rtr() { ip netns exec $R "$@"; }

say "topology: client [c0] -- [r0] router [r1] -- [s0] server"
for n in $C $R $V; do ip netns add $n; ip -n $n link set lo up; done
ip -n $R link add r0 type veth peer name c0 netns $C
ip -n $R link add r1 type veth peer name s0 netns $V
ip -n $C addr add 10.0.1.2/24 dev c0; ip -n $C addr add 2001:db8:1::2/64 dev c0 nodad
ip -n $R addr add 10.0.1.1/24 dev r0; ip -n $R addr add 2001:db8:1::1/64 dev r0 nodad
ip -n $R addr add 10.0.2.1/24 dev r1; ip -n $R addr add 2001:db8:2::1/64 dev r1 nodad
ip -n $V addr add 10.0.2.2/24 dev s0; ip -n $V addr add 2001:db8:2::2/64 dev s0 nodad
for p in "$C c0" "$R r0" "$R r1" "$V s0"; do set -- $p; ip -n $1 link set $2 up; done
ip -n $C route add default via 10.0.1.1; ip -n $C -6 route add default via 2001:db8:1::1
# The server has no IPv4 route back to 10.0.1.0/24: IPv4 only works through NAT.
ip -n $V -6 route add default via 2001:db8:2::1
rtr sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
# veth: redirected frames need GRO (or XDP) on the receiving peer; traffic
# from a namespace's own stack needs tx checksum offload off (see README).
ip netns exec $C ethtool -K c0 gro on tx off >/dev/null
ip netns exec $V ethtool -K s0 gro on tx off >/dev/null
echo "client 10.0.1.2, 2001:db8:1::2   router 10.0.1.1 | 10.0.2.1   server 10.0.2.2, 2001:db8:2::2"
echo "(the server has no IPv4 route back to the client's network)"

say "attach the fast path to both router interfaces"
run rtr $XDPR link attach r0 r1
run rtr $XDPR link show

say "IPv6 is routed in XDP; IPv4 cannot come back yet"
ip netns exec $C ping -6 -c 3 -i 0.2 2001:db8:2::2 | tail -2
ip netns exec $C ping -c 2 -i 0.2 -W 1 10.0.2.2 | grep 'packet loss' || true

say "masquerade out of r1, like pf's: match out on r1 nat-to (r1)"
run rtr $XDPR nat add out r1 masquerade
ip netns exec $C ping -c 3 -i 0.2 10.0.2.2 | tail -2
ip netns exec $V timeout 5 socat TCP-LISTEN:7000,reuseaddr SYSTEM:'echo server sees the client as $SOCAT_PEERADDR port $SOCAT_PEERPORT' &
sleep 0.5
ip netns exec $C timeout 3 socat - TCP:10.0.2.2:7000,sourceport=45000 </dev/null | sed 's/^/  /'
wait %% 2>/dev/null || true

say "on the wire at the server: TTL 63 (64 at the client), source the router's address"
ip netns exec $V timeout 5 tcpdump -lni s0 -c 2 -v 'icmp[icmptype] == icmp-echo' 2>/dev/null |
	grep -oE 'ttl [0-9]+|10\.0\.2\.1 > 10\.0\.2\.2' | paste -sd' ' | sed 's/^/  /' &
sleep 1
ip netns exec $C ping -c 2 -i 0.2 10.0.2.2 >/dev/null
wait %% 2>/dev/null || true

say "TCP load through the NAT for 8 s with live per-CPU rates"
ip netns exec $V timeout 15 iperf3 -s -1 >/dev/null 2>&1 &
sleep 0.5
ip netns exec $C timeout 12 iperf3 -c 10.0.2.2 -t 8 -P 2 >/tmp/xdpr-demo-iperf.$S 2>&1 &
rtr $XDPR -s -s stats interval 2 count 4
wait %2 2>/dev/null || true
grep -E 'sender|receiver' /tmp/xdpr-demo-iperf.$S | tail -2 | sed 's/^/  /'
rm -f /tmp/xdpr-demo-iperf.$S

say "totals per interface and reason, NAT counters per rule"
run rtr $XDPR stats
say "NAT sessions"
run rtr $XDPR nat sessions

say "traceroute through the NAT: TTL expiry goes to the kernel (pass_ttl), ICMP errors are translated back"
ip netns exec $C timeout 10 traceroute -n -q1 -w1 -m3 10.0.2.2 || true
rtr $XDPR stats dev r0 | grep -E 'pass_ttl|forwarded'

say "filter: policy drop, accept TCP to port 7000 and pings; replies pass on their state"
run rtr $XDPR filter add proto tcp dport 7000 accept
run rtr $XDPR filter add proto icmp icmp-type 8 accept
run rtr $XDPR filter add proto icmpv6 accept
run rtr $XDPR filter policy drop
ip netns exec $V timeout 5 socat TCP-LISTEN:7000,reuseaddr SYSTEM:'echo allowed by rule 1' &
sleep 0.5
ip netns exec $C timeout 3 socat - TCP:10.0.2.2:7000 </dev/null | sed 's/^/  /'
wait %% 2>/dev/null || true
ip netns exec $C ping -c 2 -i 0.2 10.0.2.2 | tail -1 | sed 's/^/  /'
echo "  UDP to port 9 (no rule): dropped in XDP"
ip netns exec $C sh -c 'for i in 1 2 3; do echo x | timeout 1 socat - UDP:10.0.2.2:9; done' 2>/dev/null || true
run rtr $XDPR filter show
rtr $XDPR stats dev r0 | grep -E 'drop_filter|forwarded' | sed 's/^/  /'
echo "  (NAT-ed flows: the NAT session is the flow's state, so the filter keeps none of its own)"
run rtr $XDPR filter flows
run rtr $XDPR filter flush
run rtr $XDPR filter policy accept

say "detach: the kernel forwards again (NAT rules go with force)"
run rtr $XDPR link detach all force
ip netns exec $C ping -6 -c 2 -i 0.2 2001:db8:2::2 | tail -1
echo
echo "demo done; namespaces removed"
