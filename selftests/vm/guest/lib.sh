# SPDX-License-Identifier: GPL-2.0
# lib.sh - helpers for scenarios that run inside the vmtest guest (busybox ash).
#
# Output goes to the control channel; the host test (selftests/vm/*.t) reads
# it line by line:
#   ok - DESC / not ok - DESC   a test; the host numbers it and prints the plan
#   # TEXT                      diagnostics, passed through
#   @@host VERB ARGS...         a request for the host, answered on the same
#                               channel with "@@ret RC TEXT" (see host_*
#                               functions in selftests/vm/lib.sh)
# Anything else is shown by the host as "# guest: LINE".
#
# iproute2 is called by its full path: busybox's ash runs its own `ip`
# applet before looking at PATH.
IP=/usr/sbin/ip
XDPR=/usr/bin/xdpr
XDPRD=/usr/sbin/xdprd # when the host had it built
JQ=/usr/bin/jq
T_FAILED=0
# Settings of this run ("NAME=value" lines, VM_GUEST_ENV of the host test).
[ -f /lib/xdpr/env ] && . /lib/xdpr/env

# ---------------------------------------------------------------- TAP

pass() { printf 'ok - %s\n' "$1"; }

fail() {
	T_FAILED=$((T_FAILED + 1))
	printf 'not ok - %s\n' "$1"
}

diag() { printf '%s\n' "$*" | sed 's/^/# /'; }

# ok DESC CMD [ARGS...]: pass when CMD exits 0; its output is shown on failure.
ok() {
	_desc=$1
	shift
	if "$@" >/tmp/ok.log 2>&1 </dev/null; then
		pass "$_desc"
	else
		fail "$_desc"
		diag "command: $*"
		diag "$(head -n 20 /tmp/ok.log)"
		return 1
	fi
}

# is GOT WANT DESC
is() {
	if [ "$1" = "$2" ]; then
		pass "$3"
	else
		fail "$3"
		diag "got:  '$1'"
		diag "want: '$2'"
		return 1
	fi
}

# num GOT OP WANT DESC (OP: -eq -ne -lt -le -gt -ge)
num() {
	case "$1$3" in
	*[!0-9-]* | "") fail "$4"; diag "got: '$1', want: $2 '$3'"; return 1 ;;
	esac
	if test "$1" "$2" "$3"; then
		pass "$4"
	else
		fail "$4"
		diag "got: '$1', want: $2 '$3'"
		return 1
	fi
}

# skip N REASON
skip() {
	_i=0
	while [ "$_i" -lt "$1" ]; do
		printf 'ok - # SKIP %s\n' "$2"
		_i=$((_i + 1))
	done
}

# ---------------------------------------------------------------- host requests

# host VERB ARGS...: ask the host test to do something outside the guest;
# its answer is in $H_OUT, its status is returned.
host() {
	printf '@@host %s\n' "$*" >&3
	H_OUT=
	if ! read -t 180 -r _tag _rc H_OUT <&3; then
		H_OUT="no answer from the host to: $*"
		return 1
	fi
	if [ "$_tag" != "@@ret" ]; then
		H_OUT="bad answer from the host: $_tag $_rc $H_OUT"
		return 1
	fi
	return "$_rc"
}

# host_ok DESC VERB ARGS...: a test that passes when the host request succeeds.
host_ok() {
	_desc=$1
	shift
	if host "$@"; then
		pass "$_desc"
	else
		fail "$_desc"
		diag "host $*: $H_OUT"
		return 1
	fi
}

# ---------------------------------------------------------------- xdpr

# cli ARGS...: run xdpr; stdout in $OUT, stderr in $ERR, status in $RC.
cli() {
	timeout 120 "$XDPR" "$@" >/tmp/cli.out 2>/tmp/cli.err </dev/null
	RC=$?
	OUT=$(cat /tmp/cli.out)
	ERR=$(cat /tmp/cli.err)
}

# cli_ok DESC ARGS...
cli_ok() {
	_desc=$1
	shift
	cli "$@"
	if [ "$RC" -eq 0 ]; then
		pass "$_desc"
	else
		fail "$_desc"
		diag "command: xdpr $*"
		diag "exit $RC: $ERR"
		return 1
	fi
}

# links: "dev:mode:xmit" of every attached device, sorted, comma-separated.
links() {
	"$XDPR" -j link show 2>/dev/null </dev/null |
		"$JQ" -r 'map(.dev + ":" + .mode + ":" + (if .xdp_xmit then "xmit" else "noxmit" end))
			| sort | join(",")' 2>/dev/null
}

# ctr DEV REASON: packets counted for REASON on ingress DEV ("none" if unreadable).
ctr() {
	_v=$("$XDPR" -j stats 2>/dev/null </dev/null |
		"$JQ" -r --arg d "$1" --arg r "$2" \
			'.interfaces[] | select(.dev == $d) | .reasons[$r].packets' 2>/dev/null)
	echo "${_v:-none}"
}

# grown BEFORE DEV REASON: growth of a counter since BEFORE ("none" if unreadable).
grown() {
	_now=$(ctr "$2" "$3")
	case "$1$_now" in
	*[!0-9]* | "") echo none ;;
	*) echo $((_now - $1)) ;;
	esac
}

# ---------------------------------------------------------------- links

# uptime_ms: milliseconds since boot.
uptime_ms() {
	read -r _up _rest </proc/uptime
	_c=${_up#*.}
	echo $((${_up%.*} * 1000 + (1$_c - 100) * 10))
}

# wait_carrier DEV...: until every DEV has carrier (at most 15 s); prints the
# milliseconds it took, fails on timeout.
wait_carrier() {
	_t0=$(uptime_ms)
	_i=0
	while [ "$_i" -lt 150 ]; do
		_all=1
		for _d in "$@"; do
			[ "$(cat "/sys/class/net/$_d/carrier" 2>/dev/null)" = 1 ] || _all=0
		done
		if [ "$_all" = 1 ]; then
			echo $(($(uptime_ms) - _t0))
			return 0
		fi
		sleep 0.1
		_i=$((_i + 1))
	done
	echo $(($(uptime_ms) - _t0))
	return 1
}

# carrier_watch DEV: until killed, one line "DOWN_MS UP_MS" (uptime) for each
# time DEV loses its carrier; run it in the background.
carrier_watch() {
	_last=1
	while :; do
		read -r _c <"/sys/class/net/$1/carrier" 2>/dev/null || _c=0
		if [ "$_c" != "$_last" ]; then
			if [ "$_c" = 0 ]; then
				printf '%s ' "$(uptime_ms)"
			else
				printf '%s\n' "$(uptime_ms)"
			fi
			_last=$_c
		fi
		sleep 0.05
	done
}

# nic DRIVER PCI_SLOT: the interface bound to DRIVER at 0000:00:PCI_SLOT.0.
nic() {
	for _n in /sys/class/net/*; do
		_dev=$(readlink "$_n/device" 2>/dev/null) || continue
		_drv=$(readlink "$_n/device/driver" 2>/dev/null) || continue
		if [ "${_drv##*/}" = "$1" ] && [ "${_dev##*/}" = "0000:00:$2.0" ]; then
			echo "${_n##*/}"
			return 0
		fi
	done
	return 1
}
