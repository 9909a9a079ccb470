#!/bin/bash
# conf_scale.sh - what xdpr restore, xdpr save and a metrics scrape cost at the
# scale of the routers xdpr replaces: 100,000 routes, 30,001 filter rules, a
# 10,000-member set and a NAT rule, in a scratch namespace (as root; the
# binaries of build/).  Prints /usr/bin/time lines and the scrape size.
set -u
B=$(cd "$(dirname "$0")/.." && pwd)/build
X=$B/xdpr; D=$B/xdprd; T=$(mktemp -d)
ip netns del ms 2>/dev/null; ip netns add ms; E="ip netns exec ms"
ip -n ms link set lo up
ip -n ms link add a0 type veth peer name a1; ip -n ms link add b0 type veth peer name b1
for d in a0 a1 b0 b1; do ip -n ms link set $d up; done
ip -n ms addr add 10.9.0.1/24 dev a0; ip -n ms addr add 10.9.1.1/24 dev b0
ip -n ms neigh add 10.9.1.2 lladdr 02:00:00:00:00:02 dev b0
python3 - <<'PY' > $T/big.conf
print("link attach a0 b0")
print("nat add out b0 masquerade src 10.9.0.0/24")
for i in range(100000):
    a = 0x0b000000 + (i << 8)
    print("route add %d.%d.%d.0/24 %s" % (a >> 24, (a >> 16) & 255, (a >> 8) & 255,
          "blackhole" if i % 2 else "via 10.9.1.2 dev b0"))
print("set add big " + " ".join("172.%d.%d.0/24" % (16 + i // 256, i % 256) for i in range(10000)))
print("filter add src @big drop")
for i in range(30000):
    print("filter add proto udp dport %d src 192.168.%d.0/24 drop" % (1 + i % 60000, i % 256))
print("filter add proto tcp accept")
PY
wc -l $T/big.conf
/usr/bin/time -f "restore from nothing: %e s, %M KiB max RSS" $E $X restore $T/big.conf
/usr/bin/time -f "save: %e s" $E $X save > $T/big.save
/usr/bin/time -f "restore of the same file (no change): %e s" $E $X restore $T/big.save
sed -i '0,/blackhole/s/blackhole/pass/' $T/big.save
/usr/bin/time -f "restore with one route changed: %e s" $E $X restore $T/big.save
/usr/bin/time -f "stats -o prometheus: %e s" $E $X stats -o prometheus > $T/big.prom
wc -lc $T/big.prom
$E $D --config $T/big.save --metrics 127.0.0.1:19555 --foreground --gc 10 > $T/big.log 2>&1 &
sleep 8
$E curl -s -o /dev/null -w 'scrape: %{time_total} s, %{size_download} bytes\n' http://127.0.0.1:19555/metrics
$E curl -s http://127.0.0.1:19555/metrics | promtool check metrics && echo promtool-clean
kill %1; wait
cat $T/big.log
$E $X restore /dev/null >/dev/null
ip netns del ms
rm -rf "$T"
