#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# flows_resize.t - the filter's flow states move whole with `nat limit
# sessions` (issue 16).  Their table is an LRU with a free list per CPU: an
# entry inserted from a syscall takes the calling CPU's, and past that CPU's
# share the LRU evicts without a word.  150,000 flow states made from both
# CPUs (r0 with two queues, one sender pinned to each CPU) are more than one
# CPU's share of the 262,144-entry table; a resize must keep every one.
. "$(dirname "$0")/nat_lib.sh"

NAT_C1_QUEUES=2 nat_topo_create fr
for a in 3 4 5; do ip -n "$C1" addr add "10.0.1.$a/24" dev c1; done
ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
ok "filter policy drop" xdpr filter policy drop
ok "filter add in r0 out r2 proto udp dport 7100 accept" xdpr filter add in r0 out r2 proto udp dport 7100 accept

# CPU 0 sends from 10.0.1.2 and .3, CPU 1 from .4 and .5: 37,500 ports each
T_TIMEOUT=120 in_ns "$C1" "$NAT_PY" - <<'EOF'
import os, socket
pid = os.fork()
cpu = 1 if pid == 0 else 0
os.sched_setaffinity(0, {cpu})
for src in (("10.0.1.2", "10.0.1.3"), ("10.0.1.4", "10.0.1.5"))[cpu]:
    for p in range(10000, 47500):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((src, p))
        s.sendto(b"x", ("10.0.3.2", 7100))
        s.close()
if pid:
    os.waitpid(pid, 0)
EOF
sleep 0.5
nf=$(xdpr -j filter flows | jq '.flows')
num "$nf" -ge 140000 "150,000 flows from both CPUs: $nf flow states (more than one CPU's 131,072)"
cli "$R" -j nat limit sessions 131072
is "$RC" 0 "nat limit sessions 131072: exit 0" || diag "$ERR"
num "$(jq '.resized.sessions_moved' <<<"$OUT")" -ge 0 "nat limit sessions 131072: a resize was made"
is "$(xdpr -j filter flows | jq '.flows')" "$nf" "after the resize: all $nf flow states are in the new table"
ok "nat limit sessions 65536" xdpr nat limit sessions 65536
is "$(xdpr -j filter flows | jq '.flows')" "$nf" "and back: all $nf"

done_testing
