# SPDX-License-Identifier: GPL-2.0
# lib.sh - helpers for xdpr's end-to-end tests (sourced by selftests/netns/*.t).
#
# Topology built by topo_create (one set of three namespaces per call):
#
#   client C                router R                         server S
#   c0 10.0.1.2/24  ----  r0 10.0.1.1   r1 10.0.2.1  ----  s0 10.0.2.2/24
#      2001:db8:1::2/64      2001:db8:1::1  2001:db8:2::1      2001:db8:2::2/64
#
# Forwarding is on in R (IPv4 and IPv6), C and S route through it, IPv6
# addresses skip DAD.  c0 and s0 have GRO on (a veth transmits redirected
# frames only when its peer has GRO or XDP) and tx checksum offload off
# (frames redirected by XDP keep the checksum state they left the sender
# with).  Neighbours are resolved by a ping before the test starts.
#
# Namespace names carry the PID of the test ($$) and a per-topology tag, so
# two test runs, or two routers in one test, never collide.  Everything made
# here is removed on exit (trap), including processes left in the namespaces.
#
# $XDPR overrides the CLI (default: build/xdpr of this tree).
#
# TAP: ok/is/num/like print one test line each (cli_fails two);
# done_testing prints the plan and sets the exit status.  Every traffic command and every CLI call runs
# under `timeout`; waits are bounded loops.

XDPR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
XDPR=${XDPR:-$XDPR_ROOT/build/xdpr}
T_ID=$$
T_TMP=
T_CLI_TIMEOUT=20        # seconds for one CLI call
T_NS_MADE=()
T_N=0
T_FAILED=0

# The reasons every `stats` output must carry: the names in bpf/reasons.h
# (the source of truth; the set grows as the datapath does) ...
# shellcheck disable=SC2034 # used by the tests
mapfile -t XDPR_REASONS < <(grep -o '^	X(XDPR_[A-Z0-9_]*, [A-Z]*, "[a-z0-9_]*"' "$XDPR_ROOT/bpf/reasons.h" | cut -d'"' -f2)
# ... which include at least these (the reason set of the first release).
# shellcheck disable=SC2034
XDPR_REASONS_BASE=(forwarded pass_not_ip pass_vlan pass_l2_other pass_ip4_hdr_err pass_ip4_csum
	pass_ip4_options pass_ip4_frag pass_ip6_hdr_err pass_ip6_exthdr pass_martian pass_ttl
	pass_blackhole pass_unreachable pass_prohibit pass_not_fwded pass_fwd_disabled
	pass_unsupp_lwt pass_no_neigh pass_frag_needed pass_fib_other pass_egress_not_xdpr
	pass_egress_no_xmit pass_no_iface drop_short)

# ---------------------------------------------------------------- TAP

diag() {
	local line
	while IFS= read -r line; do
		printf '# %s\n' "$line"
	done <<<"$*"
}

# Show a file's contents as diagnostics (at most 20 lines).
diag_file() {
	[ -s "$1" ] || return 0
	diag "$(head -n 20 "$1")"
}

pass() {
	T_N=$((T_N + 1))
	printf 'ok %d - %s\n' "$T_N" "$1"
}

fail() {
	T_N=$((T_N + 1))
	T_FAILED=$((T_FAILED + 1))
	printf 'not ok %d - %s\n' "$T_N" "$1"
}

# ok DESC CMD [ARGS...]: pass when CMD exits 0.  What CMD prints is shown
# (as diagnostics) only when it fails.
ok() {
	local desc=$1 log=$T_TMP/ok.log
	shift
	if "$@" >"$log" 2>&1; then
		pass "$desc"
	else
		fail "$desc"
		diag "command: $*"
		diag_file "$log"
		return 1
	fi
}

# is GOT WANT DESC: string equality.
is() {
	if [ "$1" == "$2" ]; then
		pass "$3"
	else
		fail "$3"
		diag "got:  '$1'"
		diag "want: '$2'"
		return 1
	fi
}

# num GOT OP WANT DESC: integer comparison, OP one of -eq -ne -lt -le -gt -ge.
num() {
	if [[ "$1" =~ ^-?[0-9]+$ && "$3" =~ ^-?[0-9]+$ ]] && test "$1" "$2" "$3"; then
		pass "$4"
	else
		fail "$4"
		diag "got: '$1', want: $2 '$3'"
		return 1
	fi
}

# like STRING ERE DESC
like() {
	if grep -Eq -- "$2" <<<"$1"; then
		pass "$3"
	else
		fail "$3"
		diag "no match for /$2/ in:"
		diag "$1"
		return 1
	fi
}

# skip N REASON: N skipped tests.
skip() {
	local i
	for ((i = 0; i < $1; i++)); do
		T_N=$((T_N + 1))
		printf 'ok %d # SKIP %s\n' "$T_N" "$2"
	done
}

skip_all() {
	printf '1..0 # SKIP %s\n' "$1"
	exit 0
}

# need_xdprd: $XDPRD is the daemon (default: build/xdprd beside $XDPR); the file is skipped without it.
need_xdprd() {
	XDPRD=${XDPRD:-$(dirname "$XDPR")/xdprd}
	[ -x "$XDPRD" ] || skip_all "$XDPRD not built (make all)"
}

# within SECS CMD...: CMD succeeds within SECS seconds (tried every 0.1 s)
within() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do "${@:2}" && return 0; sleep 0.1; done
	return 1
}

# xdprd_started LOG: the daemon logging to LOG applied its file (<= 30 s: the program loads first)
xdprd_started() {
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q "start: configuration applied" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# abort REASON: stop this file here (what follows depends on what failed);
# the tests run so far are the plan, and the file fails.
abort() {
	diag "aborted: $1"
	[ "$T_FAILED" -gt 0 ] || fail "$1"
	done_testing
}

bail_out() {
	printf 'Bail out! %s\n' "$1"
	exit 255
}

done_testing() {
	printf '1..%d\n' "$T_N"
	[ "$T_FAILED" -gt 254 ] && T_FAILED=254
	exit "$T_FAILED"
}

# ---------------------------------------------------------------- set-up / clean-up

t_cleanup() {
	local pid ns i
	trap - EXIT
	for pid in $(jobs -p); do
		kill "$pid" 2>/dev/null
	done
	# Processes still inside our namespaces (servers, captures) were started here.
	for ns in "${T_NS_MADE[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill "$pid" 2>/dev/null
		done
	done
	for ((i = 0; i < 20; i++)); do
		[ -z "$(jobs -pr)" ] && break
		sleep 0.1
	done
	for ns in "${T_NS_MADE[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null
	done
	[ -n "$T_TMP" ] && rm -rf "$T_TMP"
}

t_init() {
	local tool
	[ "$(id -u)" -eq 0 ] || skip_all "needs root"
	[ -x "$XDPR" ] || skip_all "$XDPR not built (make all)"
	need ip ethtool jq timeout ping socat sha256sum ss
	T_TMP=$(mktemp -d "/tmp/xdpr-netns.$T_ID.XXXXXX") || bail_out "mktemp failed"
	trap t_cleanup EXIT
	trap 'exit 130' INT TERM HUP
}

# need TOOL...: check_lib.sh (a tool the set-up installs is never a skip).
# pcap_read, pcap_count: check_lib.sh (a capture that did not start is an error).
# json_of: check_lib.sh (a failed read is never equal to anything).
# shellcheck source=selftests/netns/check_lib.sh
. "$XDPR_ROOT/selftests/netns/check_lib.sh"

# in_ns NS CMD...: run CMD in NS, bounded by $T_TIMEOUT (default 15) seconds.
in_ns() {
	local ns=$1
	shift
	timeout "${T_TIMEOUT:-15}" ip netns exec "$ns" "$@"
}

# topo_create TAG [R1_INDEX]: make C, R, S (names in $C $R $S) and wire them.
# R1_INDEX asks for r1's ifindex in the router namespace.
topo_create() {
	local tag=$1 r1_index=${2:-} ns i
	C="xdpr-$T_ID-$tag-c"
	R="xdpr-$T_ID-$tag-r"
	S="xdpr-$T_ID-$tag-s"
	for ns in "$C" "$R" "$S"; do
		ip netns add "$ns" || bail_out "cannot create namespace $ns"
		T_NS_MADE+=("$ns")
		ip -n "$ns" link set lo up
		# No DAD anywhere: addresses, link-local ones included, are usable at once.
		in_ns "$ns" sysctl -qw net.ipv6.conf.default.accept_dad=0 \
			net.ipv6.conf.all.accept_dad=0 >/dev/null
	done
	ip -n "$R" link add r0 type veth peer name c0 netns "$C" ||
		bail_out "cannot create veth r0/c0"
	ip -n "$R" link add r1 ${r1_index:+index "$r1_index"} type veth peer name s0 netns "$S" ||
		bail_out "cannot create veth r1/s0"

	ip -n "$C" addr add 10.0.1.2/24 dev c0
	ip -n "$C" addr add 2001:db8:1::2/64 dev c0 nodad
	ip -n "$R" addr add 10.0.1.1/24 dev r0
	ip -n "$R" addr add 2001:db8:1::1/64 dev r0 nodad
	ip -n "$R" addr add 10.0.2.1/24 dev r1
	ip -n "$R" addr add 2001:db8:2::1/64 dev r1 nodad
	ip -n "$S" addr add 10.0.2.2/24 dev s0
	ip -n "$S" addr add 2001:db8:2::2/64 dev s0 nodad

	in_ns "$R" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 >/dev/null

	# Redirected frames need GRO on the receiving peer; traffic that starts
	# in C or S must leave with complete checksums (see docs: veth caveat).
	in_ns "$C" ethtool -K c0 gro on tx off >/dev/null 2>&1 || bail_out "ethtool on c0 failed"
	in_ns "$S" ethtool -K s0 gro on tx off >/dev/null 2>&1 || bail_out "ethtool on s0 failed"
	in_ns "$R" ethtool -K r0 tx off >/dev/null 2>&1
	in_ns "$R" ethtool -K r1 tx off >/dev/null 2>&1

	ip -n "$C" link set c0 up
	ip -n "$R" link set r0 up
	ip -n "$R" link set r1 up
	ip -n "$S" link set s0 up
	ip -n "$C" route add default via 10.0.1.1
	ip -n "$C" -6 route add default via 2001:db8:1::1
	ip -n "$S" route add default via 10.0.2.1
	ip -n "$S" -6 route add default via 2001:db8:2::1

	# Kernel forwarding works end to end before any XDP (and every
	# neighbour on the path is resolved).
	for ((i = 0; i < 10; i++)); do
		T_TIMEOUT=5 in_ns "$C" ping -c1 -W1 -q 10.0.2.2 >/dev/null 2>&1 &&
			T_TIMEOUT=5 in_ns "$C" ping -6 -c1 -W1 -q 2001:db8:2::2 >/dev/null 2>&1 &&
			return 0
		sleep 0.5
	done
	bail_out "topology $tag: no connectivity C->S without xdpr"
}

# ---------------------------------------------------------------- xdpr CLI

# xdpr ARGS...: the CLI in router namespace $R, one `ip netns exec` per call.
xdpr() {
	timeout "$T_CLI_TIMEOUT" ip netns exec "$R" "$XDPR" "$@"
}

# xdpr_ns NS ARGS...: the CLI in namespace NS.
xdpr_ns() {
	local ns=$1
	shift
	timeout "$T_CLI_TIMEOUT" ip netns exec "$ns" "$XDPR" "$@"
}

# cli NS ARGS...: run the CLI, keep stdout in $OUT, stderr in $ERR, status in $RC.
cli() {
	local ns=$1
	shift
	xdpr_ns "$ns" "$@" >"$T_TMP/cli.out" 2>"$T_TMP/cli.err"
	RC=$?
	OUT=$(cat "$T_TMP/cli.out")
	ERR=$(cat "$T_TMP/cli.err")
}

# cli_fails DESC RC PHRASE NS ARGS...: two tests.  1) the command exits RC
# and says why on a stderr line that starts with "Error: " and contains
# PHRASE (fixed string);  2) that line is all it prints: stderr is exactly one
# line and stdout is empty.
cli_fails() {
	local desc=$1 want_rc=$2 phrase=$3 err_line r=0
	shift 3
	cli "$@"
	err_line=$(grep -m1 '^Error: ' <<<"$ERR")
	if [ "$RC" -eq "$want_rc" ] && [ -n "$err_line" ] && grep -qF -- "$phrase" <<<"$err_line"; then
		pass "$desc: exit $want_rc, $phrase"
	else
		fail "$desc: exit $want_rc, $phrase"
		diag "command: xdpr ${*:2}"
		diag "want: exit $want_rc and a stderr line starting \"Error: \" containing: $phrase"
		diag "got:  exit $RC, stderr:"
		diag "$ERR"
		r=1
	fi
	if [ "$(printf '%s' "$ERR" | grep -c '')" -eq 1 ] && [[ "$ERR" == "Error: "* ]] &&
		[ -z "$OUT" ]; then
		pass "$desc: the error is the only output (one stderr line)"
	else
		fail "$desc: the error is the only output (one stderr line)"
		diag "command: xdpr ${*:2}"
		diag "stderr ($(printf '%s' "$ERR" | grep -c '') lines):"
		diag "$ERR"
		[ -n "$OUT" ] && diag "stdout:" && diag "$OUT"
		r=1
	fi
	return $r
}

# xdp_pass_obj: build selftests/netns/xdp_pass.bpf.c (a foreign XDP program
# that passes everything) once per test into $T_TMP; prints the object's
# path.  The caller needs clang (`need clang`).
xdp_pass_obj() {
	local obj=$T_TMP/xdp_pass.o
	[ -s "$obj" ] || clang -O2 -g -target bpf -I"/usr/include/$(uname -m)-linux-gnu" \
		-c "$XDPR_ROOT/selftests/netns/xdp_pass.bpf.c" -o "$obj" >&2 || return 1
	echo "$obj"
}

# link_json NS: `xdpr -j link show` normalised (sorted keys, compact);
# "unreadable (TIME): ..." when it fails (json_of: never equal to another read).
link_json() {
	json_of . xdpr_ns "$1" -j link show
}

# ctr NS DEV REASON [packets|bytes]: one counter of one ingress interface
# (prints "none" when it cannot be read, or stats has no such reason: a
# misspelt or renamed reason is never a number, so never "0" nor equal to
# an earlier read).  Compare two reads with grown, never with is.
ctr() {
	local v
	v=$(xdpr_ns "$1" -j stats dev "$2" 2>/dev/null |
		jq -r --arg d "$2" --arg r "$3" --arg f "${4:-packets}" \
			'.interfaces[] | select(.dev == $d) | .reasons[$r][$f] | numbers' 2>/dev/null)
	[[ "$v" =~ ^[0-9]+$ ]] || v=
	echo "${v:-none}"
}

# grown BEFORE NS DEV REASON [packets|bytes]: how much a counter grew since
# BEFORE ("none" when either value is missing: `is "$(grown ...)" 0`, "it
# did not grow", then fails when the counter cannot be read).
grown() {
	local now
	now=$(ctr "$2" "$3" "$4" "${5:-packets}")
	if [[ "$1" =~ ^[0-9]+$ && "$now" =~ ^[0-9]+$ ]]; then
		echo $((now - $1))
	else
		echo none
	fi
}

# ---------------------------------------------------------------- traffic

# ping4 NS DST COUNT [ping options...]: quiet, bounded ping; status of ping.
ping4() {
	local ns=$1 dst=$2 n=$3
	shift 3
	T_TIMEOUT=$((n + 10)) in_ns "$ns" ping -q -c "$n" -i 0.2 -W 1 "$@" "$dst" >/dev/null 2>&1
}

ping6() {
	local ns=$1 dst=$2 n=$3
	shift 3
	T_TIMEOUT=$((n + 10)) in_ns "$ns" ping -6 -q -c "$n" -i 0.2 -W 1 "$@" "$dst" >/dev/null 2>&1
}

# wait_listen NS PORT [udp]: until a TCP (or UDP) socket listens on PORT
# in NS (<= 5 s).
wait_listen() {
	local i opt=-Htln
	[ "${3:-}" = udp ] && opt=-Huln
	for ((i = 0; i < 50; i++)); do
		[ -n "$(in_ns "$1" ss "$opt" "sport = :$2" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	return 1
}

# wait_file_line FILE ERE: until FILE has a line matching ERE (<= 5 s).
wait_file_line() {
	local i
	for ((i = 0; i < 50; i++)); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# make_file PATH MBYTES: random content.
make_file() {
	head -c "$(($2 * 1024 * 1024))" /dev/urandom >"$1"
}

# tcp_send SRC_NS DST_NS DST_ADDR PORT FILE: send FILE over one TCP
# connection, the server writes what arrives to FILE.recv.  0 when both
# sides exit 0 and the received bytes have FILE's SHA-256.
tcp_send() {
	local sns=$1 dns=$2 addr=$3 port=$4 file=$5 spid tcp=TCP4
	[[ "$addr" == *:* ]] && tcp=TCP6
	rm -f "$file.recv"
	timeout 40 ip netns exec "$dns" socat -u "$tcp-LISTEN:$port,reuseaddr" "CREATE:$file.recv" \
		2>"$file.server.err" &
	spid=$!
	if ! wait_listen "$dns" "$port"; then
		diag "server on port $port did not start"
		kill "$spid" 2>/dev/null
		return 1
	fi
	T_TIMEOUT=30 in_ns "$sns" socat -u "OPEN:$file,rdonly" "$tcp:$addr:$port" 2>"$file.client.err"
	transfer_done $? "$spid" "$file"
}

# stream_start CLIENT_NS SERVER_NS ADDR PORT CHUNKS: a paced TCP stream in
# the background, CHUNKS pieces of 64 KiB every 0.1 s from CLIENT_NS to a
# socat on SERVER_NS.  Sets STREAM_DATA, STREAM_CLIENT, STREAM_SERVER.
stream_start() {
	local cns=$1 sns=$2 addr=$3 port=$4 chunks=$5 i
	STREAM_DATA=$T_TMP/stream STREAM_CHUNKS=$chunks
	head -c $((chunks * 65536)) /dev/urandom >"$STREAM_DATA"
	rm -f "$STREAM_DATA.recv"
	timeout 60 ip netns exec "$sns" socat -u "TCP4-LISTEN:$port,reuseaddr" \
		"CREATE:$STREAM_DATA.recv" 2>"$T_TMP/server.err" &
	STREAM_SERVER=$!
	wait_listen "$sns" "$port" || diag "server did not start listening"
	(
		for ((i = 0; i < chunks; i++)); do
			dd if="$STREAM_DATA" bs=65536 skip="$i" count=1 status=none || break
			sleep 0.1
		done | timeout 40 ip netns exec "$cns" socat -u STDIN "TCP4:$addr:$port" \
			2>"$T_TMP/client.err"
		echo "${PIPESTATUS[1]}" >"$T_TMP/client.rc"
	) &
	STREAM_CLIENT=$!
	# the callers measure or change things "while the stream runs": wait for its first bytes
	for ((i = 0; i < 50; i++)); do
		[ -s "$STREAM_DATA.recv" ] && return 0
		sleep 0.1
	done
	diag "stream: nothing arrived at the server within 5 s"
}

# stream_check: wait for the stream; three checks (both ends exit 0, same SHA-256).
stream_check() {
	local server_rc
	wait "$STREAM_CLIENT"
	wait "$STREAM_SERVER"
	server_rc=$?
	is "$(cat "$T_TMP/client.rc" 2>/dev/null)" 0 "stream: client socat exits 0" ||
		diag_file "$T_TMP/client.err"
	is "$server_rc" 0 "stream: server socat exits 0" || diag_file "$T_TMP/server.err"
	ok "stream: all $((STREAM_CHUNKS * 64)) KiB arrive with the same SHA-256" \
		same_sha "$STREAM_DATA" "$STREAM_DATA.recv"
}

# transfer_done CLIENT_RC SERVER_PID FILE: both socat ends exited 0 and
# FILE.recv has FILE's SHA-256 (second half of tcp_send and tcp_fetch).
transfer_done() {
	local rc_c=$1 spid=$2 file=$3 rc_s
	wait "$spid"
	rc_s=$?
	if [ "$rc_c" -ne 0 ] || [ "$rc_s" -ne 0 ]; then
		diag "socat client exit $rc_c, server exit $rc_s"
		diag_file "$file.client.err"
		diag_file "$file.server.err"
		return 1
	fi
	same_sha "$file" "$file.recv"
}

# same_sha A B: both files exist and have one SHA-256.
same_sha() {
	local a b
	a=$(sha256sum <"$1" | cut -d' ' -f1)
	b=$(sha256sum <"$2" 2>/dev/null | cut -d' ' -f1)
	if [ "$a" != "$b" ]; then
		diag "sha256 mismatch: sent $(stat -c %s "$1") bytes, received $(stat -c %s "$2" 2>/dev/null || echo 0)"
		return 1
	fi
}

# snmp NS PROTO FIELD: a counter from /proc/net/snmp in namespace NS
# (PROTO: Ip, Icmp, Tcp, Udp, ...).
snmp() {
	in_ns "$1" cat /proc/net/snmp | awk -v p="$2:" -v f="$3" '
		$1 == p && !h { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
		$1 == p && h  { print $(col[f]); exit }'
}

t_init
