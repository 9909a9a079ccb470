#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nat_pool_addr.t - issue 10: "pool addresses that cannot be sources are
# accepted" (`nat add out r1 to 127.0.0.1`, 224.0.0.1, 255.255.255.255,
# 0.0.0.0).  Such pools, and ranges with such an address inside, are refused
# (exit 1, one "Error: " line naming the pool as written and the address,
# nothing changed), by add and replace alike.  A pool address the router does
# not have is accepted with a warning: nothing answers ARP for it unless the
# upstream routes it to the router.
. "$(dirname "$0")/nat_lib.sh"

nat_topo_create pa
ok "link attach r0 r1 r2" xdpr_attach r0 r1 r2 || abort "cannot attach xdpr"
rules=$(nat_rules)

# refused POOL ADDR WHAT: `nat add ... to POOL` fails naming ADDR as WHAT
refused() {
	cli_fails "nat add to $1" 1 "cannot translate to \"$1\": $2 is $3, never a source address" \
		"$R" nat add out r1 src 10.0.1.0/24 to "$1"
	is "$(nat_rules)" "$rules" "nat add to $1: nat show unchanged"
}

refused 0.0.0.0 0.0.0.0 'a "this network" address (0.0.0.0/8)'
refused 0.1.2.3 0.1.2.3 'a "this network" address (0.0.0.0/8)'
refused 127.0.0.1 127.0.0.1 'a loopback address (127.0.0.0/8)'
refused 224.0.0.1 224.0.0.1 'a multicast address (224.0.0.0/4)'
refused 239.255.255.255 239.255.255.255 'a multicast address (224.0.0.0/4)'
refused 240.0.0.1 240.0.0.1 'a reserved address (240.0.0.0/4)'
refused 255.255.255.255 255.255.255.255 'the limited broadcast address'
# ranges: the first such address inside is named
refused 126.255.255.250-127.0.0.3 127.0.0.0 'a loopback address (127.0.0.0/8)'
refused 223.255.255.200-224.0.0.10 224.0.0.0 'a multicast address (224.0.0.0/4)'
refused 255.255.255.250-255.255.255.255 255.255.255.250 'a reserved address (240.0.0.0/4)'
refused 0.255.255.250-1.0.0.5 0.255.255.250 'a "this network" address (0.0.0.0/8)'

# the edges next to them are fine sources
ok "nat add to 1.0.0.0-1.0.0.3 (right after 0.0.0.0/8)" xdpr nat add out r1 src 10.0.1.0/24 to 1.0.0.0-1.0.0.3
ok "nat replace to 126.255.255.254 (right before 127.0.0.0/8)" \
	xdpr nat replace out r1 src 10.0.1.0/24 to 126.255.255.254
ok "nat replace to 223.255.255.255 (right before 224.0.0.0/4)" \
	xdpr nat replace out r1 src 10.0.1.0/24 to 223.255.255.255
rules=$(nat_rules)
cli_fails "nat replace to 224.0.0.1" 1 'cannot translate to "224.0.0.1": 224.0.0.1 is a multicast address' \
	"$R" nat replace out r1 src 10.0.1.0/24 to 224.0.0.1
is "$(nat_rules)" "$rules" "nat replace to 224.0.0.1: nat show unchanged"
ok "nat del out r1 src 10.0.1.0/24" xdpr nat del out r1 src 10.0.1.0/24

# ---- ownership: a warning after success, none for the router's own address
udp_echo "$S" 7000 || abort "no UDP server on S"
cli "$R" nat add out r1 src 10.0.1.0/24 to 198.51.100.7
is "$RC" 0 "nat add to 198.51.100.7 (not the router's) succeeds"
is "$ERR" "warning: 198.51.100.7 is not an address of this router: nothing answers ARP for it unless the upstream routes it to the router" \
	"nat add to 198.51.100.7: one warning line says nothing answers ARP for it"
# H routes 198.51.100.0/24 to R: here it works without ARP
is "$(udp "$C1" ask 32001 2 10.0.4.2:7000 | cut -d: -f1)" 198.51.100.7 \
	"routed by the upstream, the pool address works"
cli "$R" nat add out r1 src 10.0.3.0/24 to 10.0.2.1
is "$RC:$ERR" "0:" "nat add to 10.0.2.1 (r1's own address): no warning"
cli "$R" nat replace out r1 src 10.0.3.0/24 to 10.0.2.1-10.0.2.4
is "$RC" 0 "nat replace to 10.0.2.1-10.0.2.4 succeeds"
is "$ERR" "warning: 3 of the 4 addresses of 10.0.2.1-10.0.2.4 are not addresses of this router: nothing answers ARP for them unless the upstream routes them to the router" \
	"nat replace to 10.0.2.1-10.0.2.4: the warning counts the 3 the router does not have"
cli "$R" nat add out r1 src 10.0.5.0/24 masquerade
is "$RC:$ERR" "0:" "masquerade: no warning"
done_testing
