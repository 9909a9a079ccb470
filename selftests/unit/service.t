#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unit tier: what ships around the binaries.  The systemd unit (verified by
# systemd-analyze against the built xdprd, its capabilities each explained),
# the bash completion (sourced, its function called as bash would), the three
# man pages (groff warnings), the example configuration (nothing active,
# every command explained), make install / uninstall into a scratch DESTDIR.
# As root, the example's commands are also applied in a scratch network
# namespace.  Nothing here needs a router.
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
i=0
rc=0
. "$(dirname "$0")/tap.sh"

# CASE := LINE|WORDS THAT MUST BE OFFERED|WORDS THAT MUST NOT ("=" alone:
# exactly the words before).  A LINE ending in a space completes a new word.
comp_cases=(
	"xdpr li|link|="
	"xdpr link at|attach|="
	"xdpr |link stats nat route filter set save restore help|"
	"xdpr -|-j --json -p --pretty -s --stats -V --version -h --help|link"
	"xdpr -j n|nat|="
	"xdpr link attach |lo mode force|"
	"xdpr link attach lo |mode force|lo"
	"xdpr link attach lo mode |native skb|="
	"xdpr link detach |all force lo|"
	"xdpr nat |add replace del show sessions flush gc timeout limit|"
	"xdpr nat add |out|="
	"xdpr nat add out |lo|"
	"xdpr nat add out lo |masquerade to src ports filter|"
	"xdpr nat add out lo masquerade |src ports filter|masquerade to"
	"xdpr nat add out lo masquerade filter |apdf eif|="
	"xdpr nat timeout udp 30 |tcp-est tcp-trans icmp holddown|udp"
	"xdpr route add 10.0.0.0/8 |blackhole pass via|="
	"xdpr route add 10.0.0.0/8 via 192.0.2.1 |dev|="
	"xdpr route add 10.0.0.0/8 via 192.0.2.1 dev |lo|"
	"xdpr route add 10.0.0.0/8 via 192.0.2.1 dev lo |via|="
	"xdpr filter add |in out src dst proto sport dport icmp-type icmp-code state accept drop reject|"
	"xdpr filter add in |lo|"
	"xdpr filter add proto |tcp udp icmp icmpv6|="
	"xdpr filter add proto tcp dport 22 |in out src dst sport icmp-type icmp-code state accept drop reject|proto dport"
	"xdpr filter add state new,|new,established new,related new,invalid|new,new"
	"xdpr filter insert 1 |in out src dst proto state accept drop reject|"
	"xdpr filter policy |accept drop|="
	"xdpr stats |show dev interval -o|count"
	"xdpr stats interval 1 |count dev -o|interval"
	"xdpr stats -o |prometheus text|="
	"xdpr restore $T/c|$T/comp.conf|"
	"xdprd |--config --metrics --gc --foreground --version --help|"
	"xdprd --foreground --|--config --metrics --gc --version --help|--foreground"
	"xdprd --config $T/c|$T/comp.conf|"
	"xdprd --metrics |none 127.0.0.1:9477|"
)
touch "$T/comp.conf"
# complete LINE: the words the completion offers, one a line (as bash calls it).
complete_line() {
	bash -c '
		source cli/xdpr.bash-completion || exit 1
		read -r -a COMP_WORDS <<< "$1"
		[[ $1 == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE=$1 COMP_POINT=${#1}
		"_${COMP_WORDS[0]}"
		printf "%s\n" "${COMPREPLY[@]}"' _ "$1"
}

# completion, cases, unit, man pages, example, metrics, install, privileges, restore
echo "1..$((2 + ${#comp_cases[@]} + 8 + 3 + 6 + 1 + 5 + 3 + 1))"

# ---- bash completion ----
out=$(bash -n cli/xdpr.bash-completion 2>&1)
tap $? "bash -n cli/xdpr.bash-completion" "$out"
out=$(bash -c 'source cli/xdpr.bash-completion && complete -p xdpr xdprd' 2>&1)
[ "$(grep -c '^complete -F _xdprd\? xdprd\?$' <<< "$out")" = 2 ]
tap $? "sourcing it registers xdpr and xdprd" "$out"
for c in "${comp_cases[@]}"; do
	IFS='|' read -r line want wont <<< "$c"
	got=$(complete_line "$line")
	bad=
	for w in $want; do
		grep -qxF -- "$w" <<< "$got" || bad="$bad missing \"$w\";"
	done
	if [ "$wont" = "=" ]; then
		[ "$(sort <<< "$got")" = "$(tr ' ' '\n' <<< "$want" | sort)" ] || bad="$bad not exactly \"$want\";"
	else
		for w in $wont; do
			grep -qxF -- "$w" <<< "$got" && bad="$bad offers \"$w\";"
		done
	fi
	[ -z "$bad" ]
	tap $? "completion of \"$line\" offers $want" "$bad got: $(echo $got)"
done

# ---- the systemd unit ----
unit=$T/xdprd.service
BABS=$(cd "$B" 2>/dev/null && pwd || echo "$PWD/$B") # BUILD= may be absolute
sed "s|@SBINDIR@|$BABS|g" daemon/xdprd.service.in > "$unit"
# its Documentation= pages from docs/, as man would find them installed
mkdir -p "$T/man/man5" "$T/man/man8"
ln -s "$PWD/docs/xdpr.conf.5" "$T/man/man5/"
ln -s "$PWD/docs/xdpr.8" "$PWD/docs/xdprd.8" "$T/man/man8/"
if ! command -v systemd-analyze > /dev/null; then
	# the set-up installs systemd (scripts/packages.txt): missing is a failure, not a skip
	tap 1 "systemd-analyze verify on the unit (ExecStart: $B/xdprd)" "no systemd-analyze (package systemd: scripts/deps.sh)"
elif [ ! -x "$B/xdprd" ]; then
	tap 1 "systemd-analyze verify on the unit" "no $B/xdprd: make first"
else
	out=$(MANPATH=$T/man systemd-analyze verify "$unit" 2>&1)
	[ $? = 0 ] && [ -z "$out" ]
	tap $? "systemd-analyze verify on the unit (ExecStart: $B/xdprd): no complaint" "$out"
fi
# key=value lines of [Service]
svc=$(sed -n '/^\[Service\]/,/^\[/{/^[A-Za-z]/p}' "$unit")
grep -qx 'Type=notify' <<< "$svc"
tap $? "the unit is Type=notify (xdprd sends READY, RELOADING, STOPPING)" "$(grep ^Type= <<< "$svc")"
grep -qx "ExecStart=$BABS/xdprd --foreground" <<< "$svc"
tap $? "ExecStart runs xdprd --foreground from the sbin it names" "$(grep ^ExecStart= <<< "$svc")"
grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' <<< "$svc"
tap $? "ExecReload sends SIGHUP" "$(grep ^ExecReload= <<< "$svc")"
caps=$(sed -n 's/^CapabilityBoundingSet=//p' <<< "$svc")
bad=
for c in CAP_SYS_ADMIN CAP_BPF CAP_PERFMON CAP_NET_ADMIN CAP_NET_RAW; do
	[[ " $caps " == *" $c "* ]] || bad="$bad $c"
done
[ -z "$bad" ] && [ "$(wc -w <<< "$caps")" = 5 ]
tap $? "CapabilityBoundingSet is the five it needs" "missing:$bad; set: $caps"
bad=
for c in $caps; do
	grep -q "^#   $c " "$unit" || bad="$bad $c"
done
[ -z "$bad" ] && [ -n "$caps" ]
tap $? "a comment says why each capability is there" "unexplained:$bad"
# /proc/sys/net (accept_local) and /sys/fs/bpf (pins) are written;
# every process's /proc/PID/ns/net is read
grep -qx 'ProtectKernelTunables=no' <<< "$svc" && ! grep -q '^ProtectProc=\|^ProcSubset=' <<< "$svc" &&
	grep -qx 'ProtectSystem=strict' <<< "$svc" && grep -qx 'RuntimeDirectory=xdpr' <<< "$svc" &&
	grep -qx 'RuntimeDirectoryPreserve=yes' <<< "$svc" && grep -qx 'LimitMEMLOCK=infinity' <<< "$svc"
tap $? "the sandbox leaves what xdprd writes writable (ProtectKernelTunables=no, /run/xdpr kept)" "$svc"
# systemd 252 (Debian 12) has no notify-reload; KillMode=process would leave children
! grep -q '^Type=notify-reload\|^KillMode=' <<< "$svc"
tap $? "no Type=notify-reload, no KillMode" "$(grep '^Type=\|^KillMode=' <<< "$svc")"

# ---- man pages ----
for m in docs/xdpr.8 docs/xdprd.8 docs/xdpr.conf.5; do
	out=$(groff -man -ww -z "$m" 2>&1)
	[ $? = 0 ] && [ -z "$out" ]
	tap $? "groff -man -ww: $m has no warning" "$out"
done

# ---- the example configuration ----
# every command the parser knows, from its error message (cli/conf.c)
kinds=$(tr -d '\n\t' < cli/conf.c | sed 's/" *"//g' |
	sed -n 's/.*is not a configuration command (\([^)]*\)).*/\1/p' | sed 's/, /\n/g')
[ "$(wc -l <<< "$kinds")" -ge 9 ]
tap $? "cli/conf.c names the configuration commands" "$kinds"
cmds=$(grep -Ev '^[[:space:]]*(#|$)' daemon/xdpr.conf)
[ -z "$cmds" ]
tap $? "daemon/xdpr.conf configures nothing (every line a comment)" "$cmds"
grep -q '^#.*systemctl enable --now xdprd' daemon/xdpr.conf
tap $? "its header says to edit it, then systemctl enable --now xdprd" "no such line"
bad=
while read -r k; do
	grep -q "^# $k " daemon/xdpr.conf || bad="$bad \"$k\""
done <<< "$kinds"
[ -z "$bad" ]
tap $? "daemon/xdpr.conf explains every command" "not explained:$bad"
bad=
# the tags of the .TP paragraphs (and their .TQ lines), "\-" as "-"
man5=$(sed 's/\\-/-/g' docs/xdpr.conf.5 | awk '/^\.T[PQ]/ { getline; print }')
while read -r k; do
	grep -q "^\.B[IR]* \"\?$k[ \"]" <<< "$man5" || bad="$bad \"$k\""
done <<< "$kinds"
[ -z "$bad" ]
tap $? "xdpr.conf(5) describes every command" "not described:$bad"
# the kinds of "nat add" (cli/conf.c: add_nat, add_npt, binat), each in both
bad=
for k in "nat add out" "nat add in" "nat add binat" "nat add npt"; do
	grep -q "^# $k " daemon/xdpr.conf || bad="$bad \"$k\" (xdpr.conf)"
	grep -q "^\.B[IR]* \"\?$k[ \"]" <<< "$man5" || bad="$bad \"$k\" (xdpr.conf.5)"
done
[ -z "$bad" ]
tap $? "daemon/xdpr.conf and xdpr.conf(5) explain every kind of nat add" "missing:$bad"

# ---- metrics: every name the code writes is in xdprd(8) ----
names=$(sed -n 's/.*head(f, "\(xdpr_[a-z_]*\)".*/\1/p' cli/prom.c
	sed -n 's/.*# TYPE \(xdprd_[a-z_]*\) .*/\1/p' daemon/xdprd.c daemon/ddos.c
	for w in packets bytes; do echo "xdpr_${w}_total"; echo "xdpr_cpu_${w}_total"; done)
bad=
for m in $names; do
	grep -q "^\.B[IR]* .*\b${m}\b" docs/xdprd.8 || bad="$bad $m"
done
[ "$(wc -w <<< "$names")" -ge 20 ] && [ -z "$bad" ]
tap $? "xdprd(8) lists every metric ($(wc -w <<< "$names") names)" "missing:$bad"

# ---- make install / uninstall ----
D=$T/dest
out=$(make -s --no-print-directory install DESTDIR="$D" PREFIX=/usr 2>&1)
tap $? "make install DESTDIR=... PREFIX=/usr" "$out"
want="/etc/xdpr/xdpr.conf
/etc/xdpr/xdpr.conf.example
/usr/lib/systemd/system/xdprd.service
/usr/sbin/xdpr
/usr/sbin/xdprd
/usr/share/bash-completion/completions/xdpr
/usr/share/bash-completion/completions/xdprd
/usr/share/man/man5/xdpr.conf.5
/usr/share/man/man8/xdpr.8
/usr/share/man/man8/xdprd.8"
got=$(cd "$D" && find . ! -type d | sed 's/^\.//' | sort)
[ "$got" = "$want" ] && [ "$(readlink "$D/usr/share/bash-completion/completions/xdprd")" = xdpr ] &&
	grep -qx 'ExecStart=/usr/sbin/xdprd --foreground' "$D/usr/lib/systemd/system/xdprd.service" &&
	cmp -s daemon/xdpr.conf "$D/etc/xdpr/xdpr.conf"
tap $? "it installs the ten files (unit for /usr/sbin, completion for both)" "got: $(echo $got)"
echo "link attach eth0" > "$D/etc/xdpr/xdpr.conf"
out=$(make -s --no-print-directory install DESTDIR="$D" PREFIX=/usr 2>&1)
[ $? = 0 ] && [ "$(cat "$D/etc/xdpr/xdpr.conf")" = "link attach eth0" ]
tap $? "a second install keeps an edited /etc/xdpr/xdpr.conf" "$out $(cat "$D/etc/xdpr/xdpr.conf")"
out=$(make -s --no-print-directory uninstall DESTDIR="$D" PREFIX=/usr 2>&1)
got=$(cd "$D" && find . ! -type d | sed 's/^\.//')
[ "$got" = /etc/xdpr/xdpr.conf ]
tap $? "uninstall removes what install put there, not the edited xdpr.conf" "$out left: $(echo $got)"
rm "$D/etc/xdpr/xdpr.conf"
make -s --no-print-directory install DESTDIR="$D" PREFIX=/usr > /dev/null 2>&1
out=$(make -s --no-print-directory uninstall DESTDIR="$D" PREFIX=/usr 2>&1)
got=$(cd "$D" && find . ! -type d)
[ -z "$got" ] && [ ! -e "$D/etc/xdpr" ]
tap $? "install then uninstall leaves no file (and no /etc/xdpr)" "$out left: $(echo $got)"

# ---- xdprd without its privileges: exit 1, one Error: line naming them ----
# (root drops them with setpriv and capsh; anyone else has none to drop)
chmod 0711 "$T"
: > "$T/plain.conf"
chmod 0644 "$T/plain.conf"
# unpriv CMD...: xdprd run through CMD (a privilege dropper, or nothing)
unpriv() {
	out=$(timeout 10 "$@" "$BABS/xdprd" --foreground --config "$T/plain.conf" --metrics none 2>&1 >/dev/null)
}
if [ ! -x "$B/xdprd" ]; then
	for c in "as nobody" "without CAP_SYS_ADMIN" "without CAP_NET_ADMIN"; do
		skip "xdprd $c exits 1" "no $B/xdprd: make first"
	done
elif [ "$(id -u)" != 0 ]; then
	unpriv env
	r=$?
	[ $r = 1 ] && [ "$out" = "Error: xdprd lacks CAP_SYS_ADMIN and CAP_NET_ADMIN: run it as root" ]
	tap $? "xdprd as a user: exit 1, one line naming CAP_SYS_ADMIN and CAP_NET_ADMIN" "exit $r: $out"
	for c in "without CAP_SYS_ADMIN" "without CAP_NET_ADMIN"; do
		skip "xdprd as root $c exits 1" "needs root"
	done
elif ! command -v setpriv > /dev/null || ! command -v capsh > /dev/null; then
	for c in "as nobody" "without CAP_SYS_ADMIN" "without CAP_NET_ADMIN"; do
		skip "xdprd $c exits 1" "no setpriv or capsh (packages util-linux, libcap2-bin)"
	done
else
	unpriv setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all
	r=$?
	[ $r = 1 ] && [ "$out" = "Error: xdprd lacks CAP_SYS_ADMIN and CAP_NET_ADMIN: run it as root" ]
	tap $? "xdprd as nobody: exit 1, one line naming CAP_SYS_ADMIN and CAP_NET_ADMIN" "exit $r: $out"
	unpriv capsh --drop=cap_sys_admin -- -c 'exec "$@"' _
	r=$?
	[ $r = 1 ] && [ "$out" = "Error: xdprd lacks CAP_SYS_ADMIN: run it as root" ]
	tap $? "xdprd as root without CAP_SYS_ADMIN: exit 1, one line naming it" "exit $r: $out"
	unpriv capsh --drop=cap_net_admin -- -c 'exec "$@"' _
	r=$?
	[ $r = 1 ] && [ "$out" = "Error: xdprd lacks CAP_NET_ADMIN: run it as root" ]
	tap $? "xdprd as root without CAP_NET_ADMIN: exit 1, one line naming it" "exit $r: $out"
fi

# ---- the example's commands apply (root: a scratch network namespace) ----
if [ "$(id -u)" != 0 ] || ! command -v unshare > /dev/null; then
	skip "the example's commands, uncommented, apply and save back" "needs root"
else
	sed -n 's/^#\([a-z-]\{3,\} \)/\1/p' daemon/xdpr.conf > "$T/example.conf"
	# a private /run and bpffs: no lock file or pin outlives the namespace
	out=$(timeout 60 unshare --mount --net bash -c '
		mount -t tmpfs tmpfs /run && mount -t bpf bpf /sys/fs/bpf || exit 9
		ip link set lo up
		ip link add eth0 type veth peer name eth1
		ip link add wlan0 type veth peer name wlan1
		for d in eth0 eth1 wlan0 wlan1; do ip link set "$d" up; done
		ip addr add 203.0.113.10/24 dev eth0
		ip addr add 192.168.1.1/24 dev eth1
		"$1" restore "$2" && "$1" save > "$2.saved" && "$1" link detach all force' \
		_ "$B/xdpr" "$T/example.conf" 2>&1)
	r=$?
	[ $r = 0 ] && [ "$(grep -vc "^on-stop\|^on-reload" "$T/example.conf")" = "$(wc -l < "$T/example.conf.saved")" ]
	tap $? "the example's $(wc -l < "$T/example.conf") commands, uncommented, apply and save back" \
		"exit $r: $out"
fi
exit $rc
