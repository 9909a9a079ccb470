# SPDX-License-Identifier: GPL-2.0
# check_lib.sh - the helpers of the netns tier that must fail when what they
# look at did not happen (sourced by lib.sh; no side effects, so the unit
# tier tests them: selftests/unit/checks.t).
#
#   pcap_read FILE [TCPDUMP ARGS...]  the capture as text (tcpdump -r FILE -n ARGS)
#   pcap_count FILE [FILTER...]       how many frames it holds (that match FILTER)
#   need TOOL...                      the file needs these tools
#   json_of FILTER CMD...             CMD's JSON through jq -S -c FILTER
#
# A capture that is missing, empty (tcpdump never wrote its header: it did
# not start) or unreadable is an error, never "no packets": pcap_read and
# pcap_count print nothing, say why on stderr and return 1, so that
# `is "$(pcap_count F)" 0 ...` fails.  A capture that started and saw
# nothing is a file with a header and no frames: that is 0.

pcap_read() {
	local f=$1 out
	shift
	if [ ! -e "$f" ]; then
		echo "capture $f is missing (the capture did not start)" >&2
		return 1
	fi
	if [ ! -s "$f" ]; then
		echo "capture $f is empty (tcpdump never wrote it: the capture did not start)" >&2
		return 1
	fi
	if ! out=$(timeout 10 tcpdump -r "$f" -n "$@" 2>"$f.rerr"); then
		echo "capture $f cannot be read: $(tail -n 1 "$f.rerr")" >&2
		return 1
	fi
	[ -z "$out" ] || printf '%s\n' "$out"
}

pcap_count() {
	local out
	out=$(pcap_read "$@") || return 1
	grep -c '^[0-9]' <<<"$out" || true
}

# json_of FILTER CMD...: what CMD prints (JSON), through jq -S -c FILTER.
# When CMD fails or prints no JSON: one line "unreadable (TIME): WHY" and
# status 1.  No two calls print that line alike (TIME has microseconds), so
# an "unchanged" check that compares two reads fails when both failed, as
# a check against a value does (two empty reads used to compare equal).
json_of() {
	local f=$1 out e=${T_TMP:-/tmp}/json_of.$BASHPID.err
	shift
	if out=$("$@" 2>"$e") && out=$(jq -S -c "$f" <<<"$out" 2>>"$e") && [ -n "$out" ]; then
		rm -f "$e"
		printf '%s\n' "$out"
		return 0
	fi
	echo "unreadable ($EPOCHREALTIME): $(grep -m1 . "$e" 2>/dev/null || echo "no output")"
	rm -f "$e"
	return 1
}

# The packages the README's set-up installs (scripts/packages.txt), and the
# package of the tools whose name is not their package's.
CHECK_PACKAGES=$(sed 's/#.*//' "$(dirname "${BASH_SOURCE[0]}")/../../scripts/packages.txt" 2>/dev/null)
declare -A CHECK_TOOL_PKG=([nft]=nftables [promtool]=prometheus [ping]=iputils-ping [bird]=bird2
	[birdc]=bird2 [iptables-nft]=iptables [ip6tables-nft]=iptables [iptables-legacy]=iptables
	[ip]=iproute2 [ss]=iproute2 [sha256sum]=coreutils [timeout]=coreutils [setpriv]=util-linux
	[nc]=netcat-openbsd [sysctl]=procps)

# need TOOL...: a tool the set-up installs must be there (missing: the file
# bails out, it is not a skip); any other missing tool skips the file.
need() {
	local tool pkg
	for tool in "$@"; do
		command -v "$tool" >/dev/null && continue
		pkg=${CHECK_TOOL_PKG[$tool]:-$tool}
		# shell only: PATH may be what is broken
		if [[ $'\n'"$CHECK_PACKAGES"$'\n' == *$'\n'"$pkg"$'\n'* ]] || [ "$pkg" = coreutils ] ||
			[ "$pkg" = util-linux ]; then
			bail_out "$tool is not installed, and the set-up installs it (package $pkg): run scripts/deps.sh"
		fi
		skip_all "$tool not installed"
	done
}
