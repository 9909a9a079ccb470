#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# cli.t - the `xdpr` command as a user meets it: exit codes and the one-line
# error of every bad input, failed commands changing nothing, JSON output
# (link show, stats, per-CPU stats, intervals), and a foreign XDP program
# that is kept unless "force" is given.
. "$(dirname "$0")/lib.sh"
need clang

topo_create cli

# unchanged BEFORE DESC: `link show` is what it was before the failed command
# (every field but "since", whose stability is a test of its own).  A read
# that failed stays as link_json said it ("unreadable (TIME): ..."): never
# equal to another, where both through jq were one empty string.
unchanged() {
	is "$(sans_since "$(link_json "$R")")" "$(sans_since "$1")" "$2: link show unchanged"
}
sans_since() {
	jq -c "map(del(.since))" <<<"$1" 2>/dev/null || echo "$1"
}

# attached_devs: "r0,r1" style list of attached devices.
attached_devs() {
	link_json "$R" | jq -r 'map(.dev) | sort | join(",")'
}

# ---- nothing attached
cli "$R" -j link show
is "$RC:$(jq -c . <<<"$OUT" 2>&1)" "0:[]" "-j link show with nothing attached: [] and exit 0"
none=$(link_json "$R")

cli_fails "stats with nothing attached" 1 \
	'Error: xdpr is not attached to any interface in this network namespace' "$R" stats
cli_fails "-j stats with nothing attached" 1 \
	'Error: xdpr is not attached to any interface in this network namespace' "$R" -j stats
cli_fails "link detach all with nothing attached" 1 \
	'Error: xdpr is not attached to any interface in this network namespace' "$R" link detach all
cli_fails "link detach r0 with nothing attached" 1 'Error: xdpr is not attached to ' \
	"$R" link detach r0

cli_fails "link attach nosuch" 1 'Error: cannot find device "nosuch"' "$R" link attach nosuch
unchanged "$none" "link attach nosuch"
cli_fails "link attach r0 nosuch" 1 'Error: cannot find device "nosuch"' "$R" link attach r0 nosuch
unchanged "$none" "link attach r0 nosuch (attaches nothing)"
cli_fails "link attach r0 mode turbo (usage)" 2 '"turbo"' "$R" link attach r0 mode turbo
unchanged "$none" "link attach r0 mode turbo"

# ---- usage errors
cli_fails "unknown object (usage)" 2 '"bogus"' "$R" bogus show
cli_fails "unknown link command (usage)" 2 '"frob"' "$R" link frob
cli_fails "link attach without a device (usage)" 2 'Error: ' "$R" link attach
cli_fails "link attach r0 mode (no mode) (usage)" 2 'Error: ' "$R" link attach r0 mode
cli_fails "link detach without a device (usage)" 2 'Error: ' "$R" link detach
cli_fails "stats interval abc (usage)" 2 '"abc"' "$R" stats interval abc
unchanged "$none" "usage errors"

# ---- one interface attached
ok "link attach r0" xdpr link attach r0 || abort "cannot attach r0: the rest depends on it"
one=$(link_json "$R")
is "$(jq -r 'map(.dev + ":" + .mode) | join(",")' <<<"$one")" "r0:native" "link show: r0 native"

cli_fails "link attach r0 twice" 1 'Error: xdpr is already attached to "r0"' "$R" link attach r0
unchanged "$one" "link attach r0 twice"
cli_fails "link attach r1 r0 (r0 attached)" 1 'Error: xdpr is already attached to "r0"' \
	"$R" link attach r1 r0
unchanged "$one" "link attach r1 r0 (attaches nothing)"
cli_fails "link detach r1 (not attached)" 1 'Error: xdpr is not attached to "r1"' "$R" link detach r1
unchanged "$one" "link detach r1"
cli_fails "link detach r0 r1 (r1 not attached)" 1 'Error: xdpr is not attached to "r1"' \
	"$R" link detach r0 r1
unchanged "$one" "link detach r0 r1 (detaches nothing)"
cli_fails "link detach nosuch" 1 'Error: cannot find device "nosuch"' "$R" link detach nosuch
unchanged "$one" "link detach nosuch"
cli_fails "stats dev nosuch" 1 'Error: cannot find device "nosuch"' "$R" stats dev nosuch
cli_fails "stats dev r1 (not attached)" 1 'Error: xdpr is not attached to "r1"' "$R" stats dev r1
cli_fails "link show nosuch" 1 'Error: cannot find device "nosuch"' "$R" link show nosuch

# ---- both attached: JSON output
ok "link attach r1" xdpr link attach r1
ok "IPv4 ping C -> S" ping4 "$C" 10.0.2.2 5
ok "IPv6 ping C -> S" ping6 "$C" 2001:db8:2::2 5

cli "$R" -j link show
is "$RC" 0 "-j link show exits 0"
ok "-j link show: an array of 2 objects with every field and its type" jq -e '
	type == "array" and length == 2 and all(.[];
		(.dev | type) == "string" and (.ifindex | type) == "number" and
		.mode == "native" and (.prog_id | type) == "number" and .prog_id > 0 and
		(.dispatcher | type) == "boolean" and (.xdp_xmit | type) == "boolean" and
		(.since | type) == "string" and
		(.since | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")) and
		(.slot | type) == "number")' <<<"$OUT"
for dev in r0 r1; do
	want=$(ip -j -n "$R" link show "$dev" | jq -c '{ifindex: .[0].ifindex, prog_id: .[0].xdp.prog.id}')
	is "$(jq -c --arg d "$dev" '.[] | select(.dev == $d) | {ifindex, prog_id}' <<<"$OUT")" "$want" \
		"-j link show: $dev's ifindex and prog_id are the kernel's"
done
# which build runs: the kernel's tag, and the build id -V names
build=$("$XDPR" -V | sed -n 's/^datapath build \([0-9a-f]\{16\}\)$/\1/p')
like "$("$XDPR" -V | head -n1)" '^xdpr [0-9][^ ]* \(.+\)$|^xdpr [0-9][^ ]*$' "-V: xdpr VERSION [(git describe)]"
like "$build" '^[0-9a-f]{16}$' "-V: datapath build ID (16 hex digits)"
for dev in r0 r1; do
	id=$(jq -r --arg d "$dev" '.[] | select(.dev == $d) | .prog_id' <<<"$OUT")
	tag=$(in_ns "$R" bpftool -j prog show id "$id" 2>/dev/null | jq -r .tag)
	is "$(jq -c --arg d "$dev" '.[] | select(.dev == $d) | [.prog_tag, .build, .this_build]' <<<"$OUT")" \
		"[\"$tag\",\"$build\",true]" "-j link show: $dev's prog_tag is bpftool's, build is -V's, this_build"
done
id=$(jq -r '.[0].prog_id' <<<"$OUT")
like "$(xdpr link show)" "prog $id: tag $tag, build $build \\(this xdpr's\\)" \
	"link show (text): the program's tag and build, this xdpr's"
is "$(jq -r '[.[].slot] | unique | length' <<<"$OUT")" 2 "-j link show: r0 and r1 have their own slot"
is "$(jq -r '[.[].prog_id] | unique | length' <<<"$OUT")" 1 \
	"-j link show: r0 and r1, attached in two calls, run one program (one prog_id)"
# "since" is a fact about the attachment: the same in every call (sampled
# over 2 s so that a value derived from two clocks' whole seconds shows).
sinces=$(for ((i = 0; i < 10; i++)); do
	link_json "$R" | jq -c 'map({dev, since})'
	sleep 0.2
done | sort -u)
is "$(grep -c '' <<<"$sinces")" 1 "-j link show: since is the same in 10 calls over 2 s" ||
	diag "$sinces"
is "$(xdpr -j link show r1 | jq -r 'map(.dev) | join(",")')" "r1" "-j link show r1: only r1"
out=$(xdpr -j -p link show)
ok "-j -p link show is valid JSON" jq -e 'length == 2' <<<"$out"
num "$(wc -l <<<"$out")" -gt 2 "-j -p link show is spread over lines"
out=$(xdpr link show)
ok "link show (text) names r0 and r1" grep -q 'r1' <<<"$out"
like "$out" 'r0' "link show (text) names r0"

cli "$R" -j stats
is "$RC" 0 "-j stats exits 0"
reasons_want=$(printf '%s\n' "${XDPR_REASONS[@]}" | sort | paste -sd,)
is "$(jq -r '[.interfaces[].dev] | sort | join(",")' <<<"$OUT")" "r0,r1" "-j stats: r0 and r1"
for dev in r0 r1; do
	is "$(jq -r --arg d "$dev" '.interfaces[] | select(.dev == $d) | .reasons | keys | join(",")' \
		<<<"$OUT")" "$reasons_want" "-j stats: $dev has every reason of bpf/reasons.h, and only those"
	is "$(jq -r --arg d "$dev" --args '.interfaces[] | select(.dev == $d) | $ARGS.positional - (.reasons | keys) | join(",")' \
		"${XDPR_REASONS_BASE[@]}" <<<"$OUT")" "" "-j stats: $dev has the 25 reasons of the first release"
done
ok "-j stats: every reason has numeric packets and bytes, interfaces have ifindex and mode" jq -e '
	all(.interfaces[]; (.ifindex | type) == "number" and .mode == "native" and
		all(.reasons[]; (.packets | type) == "number" and (.bytes | type) == "number"))' <<<"$OUT"
num "$(jq -r '.interfaces[] | select(.dev == "r0") | .reasons.forwarded.packets' <<<"$OUT")" \
	-ge 10 "-j stats: r0 forwarded >= 10 after the pings"
is "$(xdpr -j stats dev r1 | jq -r '[.interfaces[].dev] | join(",")')" "r1" "-j stats dev r1: only r1"

cli "$R" -j -s -s stats
is "$RC" 0 "-j -s -s stats exits 0"
ok "-j -s -s stats: every reason has a cpus array" jq -e \
	'all(.interfaces[].reasons[]; (.cpus | type) == "array" and (.cpus | length) > 0 and
		all(.cpus[]; (.cpu | type) == "number"))' <<<"$OUT"
ok "-j -s -s stats: per-CPU packets and bytes add up to the totals" jq -e \
	'all(.interfaces[].reasons[]; ([.cpus[].packets] | add) == .packets and
		([.cpus[].bytes] | add) == .bytes)' <<<"$OUT"
num "$(jq '[.interfaces[].reasons.forwarded.packets] | add' <<<"$OUT")" -gt 0 \
	"-j -s -s stats: the sums are over real traffic"

# A ping at 20 per second runs while the interval stats are taken.
timeout 8 ip netns exec "$C" ping -q -c 70 -i 0.05 -W 1 10.0.2.2 >/dev/null 2>&1 &
pinger=$!
sleep 0.3
T_CLI_TIMEOUT=10 cli "$R" -j stats interval 1 count 2
wait "$pinger"
is "$RC" 0 "-j stats interval 1 count 2 exits 0"
is "$(grep -c '' <<<"$OUT")" 2 "-j stats interval 1 count 2 prints 2 lines"
is "$(jq -c 'type' <<<"$OUT" 2>&1 | paste -sd,)" '"object","object"' \
	"-j stats interval 1 count 2: each line is a JSON object"
ok "-j stats interval: every reason of r0 and r1 has numeric pps and mbps" jq -se '
	all(.[]; ([.interfaces[].dev] | sort) == ["r0", "r1"] and
		all(.interfaces[].reasons[]; (.pps | type) == "number" and (.mbps | type) == "number"))' <<<"$OUT"
num "$(tail -n1 <<<"$OUT" | jq -r '.interfaces[] | select(.dev == "r0") | .reasons.forwarded.pps | floor')" \
	-ge 10 "-j stats interval: r0 forwarded rate shows the 20/s ping"
cli "$R" stats
is "$RC" 0 "stats (text) exits 0"
like "$OUT" 'forwarded' "stats (text) shows the forwarded counter"

# ---- a foreign XDP program
pass_o=$(xdp_pass_obj) || bail_out "cannot build xdp_pass.bpf.c"

ok "link detach all" xdpr link detach all
ok "a foreign program on r1 (ip link set dev r1 xdpgeneric obj pass.o)" \
	ip -n "$R" link set dev r1 xdpgeneric obj "$pass_o" sec xdp
foreign=$(ip -j -n "$R" link show r1 | jq -r '.[0].xdp.prog.id // empty')
num "${foreign:-0}" -gt 0 "the foreign program has an id ($foreign)"

cli_fails "link attach r1 over a foreign program" 1 \
	'Error: "r1" already has an XDP program; use "force" to replace it' "$R" link attach r1
unchanged "$none" "link attach r1 over a foreign program"
cli_fails "link attach r0 r1 over a foreign program on r1" 1 \
	'Error: "r1" already has an XDP program; use "force" to replace it' "$R" link attach r0 r1
unchanged "$none" "link attach r0 r1 (attaches nothing)"
is "$(ip -j -n "$R" link show r1 | jq -r '.[0].xdp.prog.id // empty')" "$foreign" \
	"the foreign program is still on r1"

ok "link attach r0 r1 force" xdpr link attach r0 r1 force
is "$(attached_devs)" "r0,r1" "link show: r0 and r1"
is "$(ip -j -n "$R" link show r1 | jq -c '[.[0].xdp.attached[]?.prog.id // .[0].xdp.prog.id]')" \
	"[$(link_json "$R" | jq -r '.[] | select(.dev == "r1") | .prog_id')]" \
	"r1 carries xdpr's program only (the foreign one is gone)"
f0=$(ctr "$R" r0 forwarded)
ok "IPv4 ping C -> S after force" ping4 "$C" 10.0.2.2 5
num "$(grown "$f0" "$R" r0 forwarded)" -ge 5 "r0 forwarded grew by >= 5 after force"

done_testing
