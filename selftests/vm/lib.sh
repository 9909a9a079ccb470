# SPDX-License-Identifier: GPL-2.0
# lib.sh - host side of xdpr's "real drivers" tier (sourced by selftests/vm/*.t).
#
# A *.t here builds a guest from Debian packages and the project's own build,
# boots it under QEMU (TCG) with two igb ports and one e1000e port, and runs
# one scenario from selftests/vm/guest/ inside it.  The guest's NICs have tap
# backends, each moved into its own host namespace (client, server, peer), so
# the traffic comes from outside the guest.
#
#   vm_init         root, tools, lock, EXIT trap
#   vm_packages     install what is missing (QEMU >= 8 from bookworm-backports,
#                   busybox-static, cpio)
#   vm_kernel       download + unpack the guest kernel (cached)
#   vm_initramfs    busybox init, xdpr (and xdprd) + iproute2 + jq + ethtool with their
#                   libraries, the NIC and 802.1Q modules and their
#                   dependencies, VM_GUEST_ENV as /lib/xdpr/env
#   vm_boot         QEMU in the background, bounded by `timeout`; taps into
#                   the host namespaces
#   vm_run          read the guest's control channel until it is done: TAP
#                   lines are numbered and printed, "@@host" requests run
#                   host_* functions below and are answered
#
# Files: build/vm/cache/ (kernel .deb, vmlinuz, modules; kept between runs),
# build/vm/run/ (console.log, qemu.log, notes; kept for inspection).
# Everything else made here (QEMU, taps, namespaces, captures) is removed by
# the EXIT trap, also on failure.  No network address outside the three
# namespaces is ever used.

VM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VM_SRC=$VM_ROOT/selftests/vm
VM_BUILD=$VM_ROOT/build/vm
VM_CACHE=$VM_BUILD/cache
VM_RUN=$VM_BUILD/run
XDPR=${XDPR:-$VM_ROOT/build/xdpr}
XDPRD=${XDPRD:-$(dirname "$XDPR")/xdprd} # in the guest when built (scenarios that need it say so)
VM_ID=$$
VM_QEMU_TIMEOUT=${XDPR_VM_TIMEOUT:-480} # seconds for the whole guest run (2-4 min usually)
VM_BOOT_TIMEOUT=${XDPR_VM_BOOT_TIMEOUT:-120}
VM_APT_TIMEOUT=600
VM_QEMU=qemu-system-x86_64
VM_KERNEL_MIN=6.3 # netdev genetlink xdp-features (what xdpr's NDO_XMIT probe reads)
VM_MODULES=(dca i2c-algo-bit igb e1000e 8021q) # and what they depend on
VM_PY=/usr/bin/python3 # Debian's (NOTES: a python3 earlier on PATH may not be)
VM_PID=
VM_NS=()
VM_TAPS=()
VM_GUEST_ENV=() # lines "NAME=value" for the scenario (/lib/xdpr/env)
T_N=0
T_FAILED=0

# Host namespace and tap of each role (client: igb 00:03, server: igb 00:05,
# peer: e1000e 00:08).
declare -A VM_ROLE_NS VM_ROLE_TAP
VM_ROLES=(client server peer)

# ---------------------------------------------------------------- TAP

diag() {
	local line
	while IFS= read -r line; do
		printf '# %s\n' "$line"
	done <<<"$*"
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

skip_all() {
	printf '1..0 # SKIP %s\n' "$1"
	exit 0
}

# bail_out REASON: one clear line, non-zero exit (the trap cleans up).
bail_out() {
	printf 'Bail out! %s\n' "$1"
	exit 255
}

done_testing() {
	printf '1..%d\n' "$T_N"
	[ "$T_FAILED" -gt 254 ] && T_FAILED=254
	exit "$T_FAILED"
}

# ---------------------------------------------------------------- clean-up

vm_cleanup() {
	local pid ns tap i
	trap - EXIT
	if [ -n "$VM_PID" ]; then
		# QEMU itself first (its pidfile, if it is still QEMU), then the
		# timeout(1) around it, which ends when QEMU does.
		pid=$(cat "$VM_RUN/qemu.pid" 2>/dev/null)
		[[ "$pid" =~ ^[0-9]+$ ]] && [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == qemu* ]] || pid=
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
		kill "$VM_PID" 2>/dev/null
		for ((i = 0; i < 50; i++)); do
			kill -0 "$VM_PID" 2>/dev/null || break
			sleep 0.1
		done
		[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
		kill -9 "$VM_PID" 2>/dev/null
		wait "$VM_PID" 2>/dev/null
	fi
	# Captures, servers, pings still running (only this shell's live jobs).
	for pid in $(jobs -pr); do
		kill "$pid" 2>/dev/null
	done
	for ns in "${VM_NS[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null
	done
	# A tap that never left the root namespace (boot failed early).
	for tap in "${VM_TAPS[@]}"; do
		ip link del "$tap" 2>/dev/null
	done
	[ -n "$VM_LOCK_FD" ] && exec {VM_LOCK_FD}>&-
	return 0
}

vm_init() {
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (QEMU taps, namespaces, apt)"
	[ "$(uname -m)" = x86_64 ] || skip_all "needs an x86_64 host"
	[ -x "$XDPR" ] || skip_all "$XDPR not built (make all)"
	[ -c /dev/net/tun ] || skip_all "no /dev/net/tun"
	command -v apt-get >/dev/null || skip_all "not a Debian machine (no apt-get)"
	mkdir -p "$VM_CACHE" "$VM_RUN" || bail_out "cannot create $VM_BUILD"
	exec {VM_LOCK_FD}>"$VM_BUILD/lock"
	flock -n "$VM_LOCK_FD" || bail_out "another vmtest holds $VM_BUILD/lock"
	trap vm_cleanup EXIT
	trap 'exit 130' INT TERM HUP
}

# ---------------------------------------------------------------- packages

# The Debian release and the mirror its main suite comes from, read from
# /etc/apt/sources.list and sources.list.d (one-line and deb822 formats).
vm_mirror() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk -v c="$VM_CODENAME" '
			$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				      if ($(i + 1) == c) { print $i; exit } }' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v c="$VM_CODENAME" '
			function flush() { if (deb && uri != "" && (" " suites " ") ~ (" " c " ")) print uri
					   uri = ""; suites = ""; deb = 0 }
			/^[ \t]*$/ { flush(); next }
			tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
			tolower($1) == "uris:" { uri = $2 }
			tolower($1) == "suites:" { suites = ""; for (i = 2; i <= NF; i++) suites = suites " " $i }
			END { flush() }' "$f"
	done
}

# Private apt configuration: the machine's sources plus CODENAME-backports,
# with its own package lists under build/vm/apt.  Nothing in /etc/apt is
# changed, so the suite is gone again as soon as the command ends (also when
# it is interrupted).
vm_apt_setup() {
	local mirror keyring=/usr/share/keyrings/debian-archive-keyring.gpg opt=
	[ -n "$VM_APT" ] && return 0
	VM_CODENAME=$(. /etc/os-release && echo "$VERSION_CODENAME")
	[ -n "$VM_CODENAME" ] || skip_all "cannot tell the Debian release (/etc/os-release)"
	mirror=$(vm_mirror | head -n 1)
	[ -n "$mirror" ] || skip_all "no Debian mirror for $VM_CODENAME in /etc/apt/sources.list*"
	# Fresh lists each time: old ones must not pass for a reachable mirror.
	rm -rf "$VM_BUILD/apt/lists"
	mkdir -p "$VM_BUILD/apt/lists/partial"
	[ -f "$keyring" ] && opt="[signed-by=$keyring] "
	{
		[ -f /etc/apt/sources.list ] && grep -v '^[[:space:]]*#' /etc/apt/sources.list
		echo "deb ${opt}$mirror $VM_CODENAME-backports main"
	} >"$VM_BUILD/apt/sources.list"
	VM_APT=(-o "Dir::Etc::SourceList=$VM_BUILD/apt/sources.list"
		-o "Dir::Etc::SourceParts=/etc/apt/sources.list.d"
		-o "Dir::State::Lists=$VM_BUILD/apt/lists"
		-o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
		-o "APT::Sandbox::User=root" -q)
	# Other sources failing (a third-party repository) are not our business:
	# what counts is whether the Debian suites arrived.
	timeout "$VM_APT_TIMEOUT" apt-get "${VM_APT[@]}" update >"$VM_BUILD/apt/update.log" 2>&1
	compgen -G "$VM_BUILD/apt/lists/*_dists_${VM_CODENAME}_main_binary-amd64_Packages*" >/dev/null ||
		skip_all "Debian mirror $mirror not reachable (see build/vm/apt/update.log)"
	VM_HAVE_BPO=
	compgen -G "$VM_BUILD/apt/lists/*_dists_${VM_CODENAME}-backports_main_binary-amd64_Packages*" \
		>/dev/null && VM_HAVE_BPO=1
}

# vm_apt_install [-t SUITE] PKG...: install with --no-install-recommends.
vm_apt_install() {
	local log=$VM_BUILD/apt/install.log
	vm_apt_setup
	DEBIAN_FRONTEND=noninteractive timeout "$VM_APT_TIMEOUT" \
		apt-get "${VM_APT[@]}" install -y --no-install-recommends "$@" >"$log" 2>&1 && return 0
	diag "$(tail -n 15 "$log")"
	bail_out "apt-get install $* failed (see build/vm/apt/install.log)"
}

vm_qemu_has_igb() {
	command -v "$VM_QEMU" >/dev/null &&
		"$VM_QEMU" -device help 2>/dev/null | grep -q '^name "igb"'
}

vm_packages() {
	local pkgs=()
	if ! vm_qemu_has_igb; then
		vm_apt_setup
		[ -n "$VM_HAVE_BPO" ] ||
			skip_all "QEMU >= 8.0 needed (igb) and $VM_CODENAME-backports is not reachable"
		vm_apt_install -t "$VM_CODENAME-backports" qemu-system-x86
		vm_qemu_has_igb ||
			bail_out "$("$VM_QEMU" --version | head -n 1) has no igb device (needs QEMU >= 8.0)"
	fi
	dpkg-query -W -f='${Status}\n' busybox-static 2>/dev/null | grep -q 'install ok installed' ||
		pkgs+=(busybox-static)
	command -v cpio >/dev/null || pkgs+=(cpio)
	command -v tcpdump >/dev/null || pkgs+=(tcpdump)
	command -v jq >/dev/null || pkgs+=(jq)
	command -v socat >/dev/null || pkgs+=(socat)
	command -v xz >/dev/null || pkgs+=(xz-utils)
	command -v ethtool >/dev/null || pkgs+=(ethtool)
	[ -x "$VM_PY" ] || pkgs+=(python3)
	if [ ${#pkgs[@]} -gt 0 ]; then
		vm_apt_setup
		vm_apt_install "${pkgs[@]}"
	fi
	file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' ||
		bail_out "/bin/busybox is not the static one (busybox-static)"
}

# ---------------------------------------------------------------- guest kernel

# mod_file TREE NAME: the module file of NAME (dashes and underscores alike).
mod_file() {
	local a=${2//_/-} b=${2//-/_}
	find "$1" \( -name "$a.ko" -o -name "$a.ko.*" -o -name "$b.ko" -o -name "$b.ko.*" \) \
		-print -quit
}

mod_cat() {
	case "$1" in
	*.xz) xz -dc "$1" ;;
	*.zst) zstd -qdc "$1" ;;
	*.gz) gzip -dc "$1" ;;
	*) cat "$1" ;;
	esac
}

# mod_closure TREE BUILTIN NAME: NAME and its dependencies, dependencies
# first (from each module's own .modinfo "depends=").
declare -A VM_MOD_SEEN
mod_closure() {
	local tree=$1 builtin=$2 name=${3//-/_} f dep deps
	[ -n "${VM_MOD_SEEN[$name]}" ] && return 0
	VM_MOD_SEEN[$name]=1
	grep -Eq "/${3//[-_]/[-_]}\.ko(\.[a-z]+)?$" "$builtin" 2>/dev/null && return 0
	f=$(mod_file "$tree" "$name")
	[ -n "$f" ] || bail_out "guest kernel has no module $name"
	deps=$(mod_cat "$f" | tr '\0' '\n' | sed -n 's/^depends=//p' | head -n 1)
	for dep in ${deps//,/ }; do
		mod_closure "$tree" "$builtin" "$dep"
	done
	echo "$name $f"
}

# vm_kernel: build/vm/cache/kernel.KEY/{vmlinuz,VERSION,modules/*.ko,modules/load}.
# KEY is XDPR_VM_KERNEL, a version prefix ("6.1" = the newest
# linux-image-6.1.*-amd64), or "default": the newest Debian kernel in reach
# (on Debian 12: 6.12 from bookworm-security or -backports; the default 6.1
# kernel predates the xdp-features that xdpr's NDO_XMIT probe reads).
# A cached kernel is used as it is; XDPR_VM_REFRESH=1 looks for a newer one.
# When VM_MODULES changed since the cache was made (its MODULES file), the
# cached package is unpacked again, without a download.
vm_kernel() {
	local key=${XDPR_VM_KERNEL:-default} k deb= f
	k=$VM_CACHE/kernel.$key
	VM_KDIR=$k
	if [ -s "$k/vmlinuz" ] && [ -s "$k/modules/load" ] && [ -z "$XDPR_VM_REFRESH" ]; then
		if [ "$(cat "$k/MODULES" 2>/dev/null)" = "${VM_MODULES[*]}" ]; then
			VM_KVER=$(cat "$k/VERSION")
			return 0
		fi
		f=$(cat "$k/DEB" 2>/dev/null)
		[ -n "$f" ] && [ -f "$VM_CACHE/deb/$f" ] && deb=$VM_CACHE/deb/$f
	fi
	[ -z "$deb" ] && vm_kernel_deb "$key"
	vm_kernel_unpack "$k" "$deb"
}

# vm_kernel_deb KEY: find (and download unless cached) the kernel package
# for KEY; sets deb.
vm_kernel_deb() {
	local key=$1 k=$VM_CACHE/kernel.$1 pkg ver f re
	vm_apt_setup
	# Image packages only (6.1.0-50-amd64, 6.12.117+deb12-amd64), no meta packages.
	re="^linux-image-${key//./\\.}(\\.[0-9]+)*(-[0-9]+)?(\\+deb[0-9]+)?-amd64\$"
	[ "$key" = default ] && re='^linux-image-[0-9]+(\.[0-9]+)*(-[0-9]+)?(\+deb[0-9]+)?-amd64$'
	pkg=$(apt-cache "${VM_APT[@]}" search --names-only "$re" | awk '{ print $1 }' |
		grep -E "$re" | grep -E '^linux-image-[0-9]+\.[0-9]+\.[0-9]+' | sort -V | tail -n 1)
	[ -n "$pkg" ] || skip_all "no Debian kernel package matching $re in reach"
	ver=${pkg#linux-image-}
	ver=${ver%%[-+]*}
	if [ "$key" = default ] &&
		[ "$(printf '%s\n' "$VM_KERNEL_MIN" "$ver" | sort -V | head -n 1)" != "$VM_KERNEL_MIN" ]; then
		skip_all "newest Debian kernel in reach is $pkg (needs >= $VM_KERNEL_MIN)"
	fi
	mkdir -p "$VM_CACHE/deb"
	deb=$(ls "$VM_CACHE/deb/${pkg}_"*.deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ]; then
		(cd "$VM_CACHE/deb" &&
			timeout "$VM_APT_TIMEOUT" apt-get "${VM_APT[@]}" download "$pkg") \
			>"$VM_BUILD/apt/download.log" 2>&1 ||
			bail_out "apt-get download $pkg failed (see build/vm/apt/download.log)"
		deb=$(ls "$VM_CACHE/deb/${pkg}_"*.deb 2>/dev/null | head -n 1)
		[ -n "$deb" ] || bail_out "apt-get download $pkg left no .deb"
		# The kernel this key used before is not needed any more.
		f=$(cat "$k/DEB" 2>/dev/null)
		[ -n "$f" ] && [ "$f" != "${deb##*/}" ] && rm -f "$VM_CACHE/deb/$f"
	fi
}

# vm_kernel_unpack DIR DEB: vmlinuz and the modules of VM_MODULES (with their
# dependencies) from the kernel package DEB into the cache directory DIR.
vm_kernel_unpack() {
	local k=$1 deb=$2 tree name f
	tree=$VM_CACHE/unpack
	rm -rf "$tree" "$k"
	dpkg-deb -x "$deb" "$tree" || bail_out "dpkg-deb -x $deb failed"
	mkdir -p "$k/modules"
	f=$(ls "$tree"/boot/vmlinuz-* 2>/dev/null | head -n 1)
	[ -n "$f" ] || bail_out "$deb has no /boot/vmlinuz-*"
	cp "$f" "$k/vmlinuz"
	VM_KVER=${f##*/vmlinuz-}
	VM_MOD_SEEN=()
	for name in "${VM_MODULES[@]}"; do
		mod_closure "$tree" "$(ls "$tree"/lib/modules/*/modules.builtin | head -n 1)" "$name"
	done >"$k/closure" || exit
	# busybox insmod takes plain .ko files: decompress on the host.
	while read -r name f; do
		mod_cat "$f" >"$k/modules/$name.ko" || bail_out "cannot decompress $f"
		echo "$name"
	done <"$k/closure" >"$k/modules/load"
	rm -rf "$tree" "$k/closure"
	echo "$VM_KVER" >"$k/VERSION"
	echo "${deb##*/}" >"$k/DEB"
	echo "${VM_MODULES[*]}" >"$k/MODULES"
}

# ---------------------------------------------------------------- initramfs

# copy_bin DEST FILE PATH: install FILE as DEST/PATH, and the shared
# libraries it needs (ldd) at their own paths under DEST.
copy_bin() {
	local lib
	install -D -m 0755 "$2" "$1$3" || bail_out "cannot copy $2 into the initramfs"
	for lib in $(ldd "$2" 2>/dev/null | grep -Eo '/[^ ]+'); do
		[ -e "$1$lib" ] || install -D -m 0755 "$(readlink -f "$lib")" "$1$lib"
	done
}

# vm_initramfs SCENARIO: build/vm/run/initramfs.gz running guest/SCENARIO.
vm_initramfs() {
	local root=$VM_RUN/root f
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib/modules,lib/xdpr,etc,proc,sys,dev,tmp,run}
	cp /bin/busybox "$root/bin/busybox"
	install -m 0755 "$VM_SRC/guest/init" "$root/init"
	case "$1" in /*) f=$1 ;; *) f=$VM_SRC/guest/$1 ;; esac
	install -m 0755 "$f" "$root/scenario"
	install -m 0644 "$VM_SRC/guest/lib.sh" "$root/lib/xdpr/lib.sh"
	copy_bin "$root" "$XDPR" /usr/bin/xdpr
	[ -x "$XDPRD" ] && copy_bin "$root" "$XDPRD" /usr/sbin/xdprd
	copy_bin "$root" "$(command -v jq)" /usr/bin/jq
	copy_bin "$root" "$(readlink -f "$(command -v ip)")" /usr/sbin/ip
	copy_bin "$root" "$(command -v ethtool)" /usr/sbin/ethtool
	# Settings of this run for the scenario (guest/lib.sh sources them).
	printf '%s\n' "${VM_GUEST_ENV[@]}" >"$root/lib/xdpr/env"
	# libxdp's dispatcher object, where libxdp looks for it.
	for f in /usr/lib/*/bpf/xdp-dispatcher.o; do
		[ -f "$f" ] && install -D -m 0644 "$f" "$root$f"
	done
	cp "$VM_KDIR/modules/"* "$root/lib/modules/"
	(cd "$root" && find . | cpio -o -H newc -R 0:0 --quiet | gzip -1) >"$VM_RUN/initramfs.gz" ||
		bail_out "cannot build the initramfs"
	rm -rf "$root"
}

# ---------------------------------------------------------------- boot

# vm_boot: start QEMU (bounded by VM_QEMU_TIMEOUT) with
#   igb    addr 0x3  tap -> namespace "client"
#   igb    addr 0x5  tap -> namespace "server"
#   e1000e addr 0x8  tap -> namespace "peer"
# Two igb need explicit PCI addresses: each reserves slots for its virtual
# functions, and automatic placement collides.
vm_boot() {
	local role i tap ns n=1
	local -a devs=(igb igb e1000e) addrs=(0x3 0x5 0x8) netargs=()
	for i in 0 1 2; do
		role=${VM_ROLES[$i]}
		tap=xvm$VM_ID${role:0:1}
		VM_ROLE_TAP[$role]=$tap
		VM_TAPS+=("$tap")
		ip link show dev "$tap" >/dev/null 2>&1 && bail_out "tap $tap exists already"
		netargs+=(-netdev "tap,id=n$i,ifname=$tap,script=no,downscript=no,vnet_hdr=off"
			-device "${devs[$i]},netdev=n$i,addr=${addrs[$i]},mac=52:54:00:78:64:1$i")
	done
	rm -f "$VM_RUN"/ctl.* "$VM_RUN"/console.log "$VM_RUN"/qemu.* "$VM_RUN"/notes
	mkfifo "$VM_RUN/ctl.in" "$VM_RUN/ctl.out" || bail_out "mkfifo failed"
	# Both ends read-write: opening never blocks, whatever QEMU does.
	exec {VM_CTL_OUT}<>"$VM_RUN/ctl.out" {VM_CTL_IN}<>"$VM_RUN/ctl.in"
	timeout -k 5 $((VM_QEMU_TIMEOUT + 15)) "$VM_QEMU" -accel tcg -m 512 -smp 1 \
		-nodefaults -no-user-config -display none -no-reboot \
		-pidfile "$VM_RUN/qemu.pid" \
		-kernel "$VM_KDIR/vmlinuz" -initrd "$VM_RUN/initramfs.gz" \
		-append "console=ttyS0 panic=-1 loglevel=7 tsc=reliable" \
		-serial "file:$VM_RUN/console.log" \
		-chardev "pipe,id=ctl,path=$VM_RUN/ctl" -serial chardev:ctl \
		"${netargs[@]}" </dev/null >"$VM_RUN/qemu.log" 2>&1 &
	VM_PID=$!
	VM_T0=$SECONDS

	# QEMU creates the taps while starting; then they move to their namespaces.
	for ((i = 0; i < 100; i++)); do
		n=0
		for tap in "${VM_TAPS[@]}"; do
			ip link show dev "$tap" >/dev/null 2>&1 && n=$((n + 1))
		done
		[ "$n" -eq 3 ] && break
		kill -0 "$VM_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ "$n" -ne 3 ]; then
		diag "$(tail -n 5 "$VM_RUN/qemu.log")"
		bail_out "QEMU did not start (see build/vm/run/qemu.log)"
	fi
	n=1
	for role in "${VM_ROLES[@]}"; do
		ns=xdpr-vm-$VM_ID-$role
		tap=${VM_ROLE_TAP[$role]}
		ip netns add "$ns" || bail_out "cannot create namespace $ns"
		VM_NS+=("$ns")
		VM_ROLE_NS[$role]=$ns
		ip link set dev "$tap" netns "$ns" || bail_out "cannot move $tap into $ns"
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
			net.ipv6.conf.default.accept_dad=0 >/dev/null
		ip -n "$ns" link set lo up
		ip -n "$ns" addr add "10.0.$n.2/24" dev "$tap"
		ip -n "$ns" addr add "2001:db8:$n::2/64" dev "$tap" nodad
		ip -n "$ns" link set "$tap" up
		ip -n "$ns" route add default via "10.0.$n.1"
		ip -n "$ns" -6 route add default via "2001:db8:$n::1"
		n=$((n + 1))
	done
}

# ---------------------------------------------------------------- host requests

# Each host_VERB answers one "@@host VERB ARGS" line from the guest: it sets
# H_OUT (one line) and returns the status sent back.  Roles name namespaces.

in_role() {
	local ns=${VM_ROLE_NS[$1]}
	shift
	[ -n "$ns" ] || return 2
	ip netns exec "$ns" "$@"
}

# ping ROLE DST COUNT: COUNT echoes 0.2 s apart; "tx rx", 0 when all answered.
host_ping() {
	local out tx rx fam=
	[[ "$2" == *:* ]] && fam=-6
	out=$(timeout $(($3 + 15)) ip netns exec "${VM_ROLE_NS[$1]}" \
		ping $fam -n -q -c "$3" -i 0.2 -W 2 "$2" 2>&1)
	tx=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' <<<"$out")
	rx=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' <<<"$out")
	H_OUT="tx=${tx:-0} rx=${rx:-0}"
	[ -n "$tx" ] && [ "$tx" = "$rx" ] && [ "$tx" -eq "$3" ]
}

# cap_start ROLE COUNT FILTER...: capture COUNT frames on ROLE's tap.
host_cap_start() {
	local role=$1 count=$2 i
	shift 2
	rm -f "$VM_RUN/cap.pcap" "$VM_RUN/cap.err"
	timeout 30 ip netns exec "${VM_ROLE_NS[$role]}" tcpdump -Z root -n -U -p \
		-i "${VM_ROLE_TAP[$role]}" -c "$count" -w "$VM_RUN/cap.pcap" "$*" \
		2>"$VM_RUN/cap.err" &
	VM_CAP_PID=$!
	for ((i = 0; i < 50; i++)); do
		grep -q 'listening on' "$VM_RUN/cap.err" 2>/dev/null && return 0
		kill -0 "$VM_CAP_PID" 2>/dev/null || break
		sleep 0.1
	done
	H_OUT="tcpdump did not start: $(head -c 200 "$VM_RUN/cap.err" | tr '\n' ' ')"
	return 1
}

# cap_read: "n=N ttl=T[,T...] src=A[,A...]" of the frames captured (waits
# at most 10 s for the capture to end).
host_cap_read() {
	local i dump
	for ((i = 0; i < 100; i++)); do
		kill -0 "$VM_CAP_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill "$VM_CAP_PID" 2>/dev/null
	wait "$VM_CAP_PID" 2>/dev/null
	# a capture that did not start or cannot be read is never "nothing matched"
	if ! dump=$(tcpdump -r "$VM_RUN/cap.pcap" -n -v 2>"$VM_RUN/cap.err"); then
		H_OUT="capture unreadable: $(head -n 1 "$VM_RUN/cap.err")"
		return 1
	fi
	# IPv4: header fields on the first line, "SRC > DST: ..." on the next;
	# IPv6: all on one line.
	H_OUT=$(awk '
		function ttl(  v) { if (match($0, /(ttl|hlim) [0-9]+/)) { v = substr($0, RSTART, RLENGTH); sub(/^[a-z]+ /, "", v); t[v] = 1 } }
		/^[0-9:.]+ IP6 \(/ {
			n++; ttl()
			if (match($0, /\) [0-9a-fA-F:.]+ > /)) src[substr($0, RSTART + 2, RLENGTH - 5)] = 1
			next
		}
		/^[0-9:.]+ IP \(/ { n++; ttl(); getline l; split(l, w, " "); src[w[1]] = 1 }
		END {
			for (k in t) tl = tl (tl == "" ? "" : ",") k
			for (k in src) sl = sl (sl == "" ? "" : ",") k
			printf "n=%d ttl=%s src=%s\n", n, tl, sl
		}' <<<"$dump")
	[ -n "$dump" ]
}

# wcap_start ROLE: capture every frame on ROLE's tap (headers only) until
# wcap_read ROLE; captures of several roles may run at once.  Tags are read
# from the bytes of the file: on receive the host kernel moves an 802.1Q or
# 802.1ad tag into metadata, libpcap puts it back (PACKET_AUXDATA), so a
# BPF filter would not see it: filtering is wcap_read's.
declare -A VM_WCAP_PID
host_wcap_start() {
	local role=$1 i f=$VM_RUN/wcap-$1
	[ -n "${VM_ROLE_NS[$role]}" ] || {
		H_OUT="no role $role"
		return 2
	}
	rm -f "$f.pcap" "$f.err"
	# --immediate-mode: no frame may wait in a ring block when it stops
	timeout 200 ip netns exec "${VM_ROLE_NS[$role]}" tcpdump -Z root -n -U -p -s 160 \
		--immediate-mode -i "${VM_ROLE_TAP[$role]}" -w "$f.pcap" 2>"$f.err" &
	VM_WCAP_PID[$role]=$!
	for ((i = 0; i < 50; i++)); do
		grep -q 'listening on' "$f.err" 2>/dev/null && return 0
		kill -0 "${VM_WCAP_PID[$role]}" 2>/dev/null || break
		sleep 0.1
	done
	H_OUT="tcpdump on $role did not start: $(head -c 200 "$f.err" | tr '\n' ' ')"
	kill "${VM_WCAP_PID[$role]}" 2>/dev/null
	VM_WCAP_PID[$role]=
	rm -f "$f.err" "$f.pcap"
	return 1
}

# wcap_read ROLE [FILTER...]: stop ROLE's capture (if it still runs);
# "n=N tags=... ttl=... src=... dst=... tos=..." (the sets of values seen, a
# set of more than 4 as "<N values>") of the frames FILTER selects
# (vlanhost.py pcap options: --kind echo|reply|tcp, --src, --dst, --id,
# --from-guest, --to-guest).  Tags: TPID:VID:PCP:DEI outermost first, "-"
# untagged.  Read again with other filters until the next wcap_start.
# Fails when the capture had not started, wrote no file or lost frames.
host_wcap_read() {
	local role=$1 pid=${VM_WCAP_PID[$1]} f=$VM_RUN/wcap-$1 i drop
	shift
	if [ -n "$pid" ]; then
		sleep 0.5 # the last frames through QEMU and the host kernel
		kill -INT "$pid" 2>/dev/null
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		wait "$pid" 2>/dev/null
		VM_WCAP_PID[$role]=
	elif ! grep -q 'listening on' "$f.err" 2>/dev/null; then
		H_OUT="no capture started on $role"
		return 1
	fi
	if [ ! -s "$f.pcap" ]; then
		H_OUT="capture on $role wrote nothing: $(head -c 200 "$f.err" | tr '\n' ' ')"
		return 1
	fi
	drop=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$f.err")
	if [ -n "$drop" ] && [ "$drop" != 0 ]; then
		H_OUT="capture on $role lost $drop frames (tcpdump: dropped by kernel)"
		return 1
	fi
	H_OUT=$("$VM_PY" "$VM_SRC/vlanhost.py" pcap "$f.pcap" "$@" 2>&1)
}

# tcp SRC_ROLE DST_ROLE ADDR PORT MBYTES: one TCP transfer, checked by SHA-256.
host_tcp() {
	local f=$VM_RUN/tcp.data spid rc_c rc_s a b
	head -c "$(($5 * 1024 * 1024))" /dev/urandom >"$f"
	rm -f "$f.recv"
	timeout 90 ip netns exec "${VM_ROLE_NS[$2]}" socat -u "TCP4-LISTEN:$4,reuseaddr" \
		"CREATE:$f.recv" 2>"$f.server.err" &
	spid=$!
	vm_wait_listen "$2" "$4" || {
		H_OUT="server did not listen"
		return 1
	}
	timeout 80 ip netns exec "${VM_ROLE_NS[$1]}" socat -u "OPEN:$f,rdonly" "TCP4:$3:$4" \
		2>"$f.client.err"
	rc_c=$?
	wait "$spid"
	rc_s=$?
	a=$(sha256sum <"$f" | cut -c1-16)
	b=$(sha256sum <"$f.recv" 2>/dev/null | cut -c1-16)
	H_OUT="client exit $rc_c, server exit $rc_s, sent $(stat -c %s "$f") bytes sha $a, received $(stat -c %s "$f.recv" 2>/dev/null || echo 0) sha $b"
	rm -f "$f" "$f.recv"
	[ "$rc_c" -eq 0 ] && [ "$rc_s" -eq 0 ] && [ "$a" = "$b" ]
}

# tcp_peer SRC_ROLE DST_ROLE ADDR PORT: the address a TCP server in DST_ROLE
# sees for a connection from SRC_ROLE.
host_tcp_peer() {
	local spid
	timeout 30 ip netns exec "${VM_ROLE_NS[$2]}" socat "TCP4-LISTEN:$4,reuseaddr" \
		'SYSTEM:echo $SOCAT_PEERADDR' 2>/dev/null &
	spid=$!
	vm_wait_listen "$2" "$4" || {
		H_OUT="server did not listen"
		return 1
	}
	H_OUT=$(timeout 20 ip netns exec "${VM_ROLE_NS[$1]}" socat -T 10 - "TCP4:$3:$4" </dev/null 2>&1)
	wait "$spid"
	[ -n "$H_OUT" ]
}

vm_wait_listen() {
	local i
	for ((i = 0; i < 50; i++)); do
		[ -n "$(in_role "$1" ss -Htln "sport = :$2" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	return 1
}

# pingbg_start ROLE DST: echoes every 0.1 s until pingbg_stop (at most 120 s).
host_pingbg_start() {
	timeout -s INT 120 ip netns exec "${VM_ROLE_NS[$1]}" ping -n -i 0.1 -W 1 "$2" \
		>"$VM_RUN/pingbg.out" 2>&1 &
	VM_PINGBG=$!
	sleep 0.3
	kill -0 "$VM_PINGBG" 2>/dev/null || {
		H_OUT="ping did not start: $(head -c 200 "$VM_RUN/pingbg.out")"
		return 1
	}
}

# pingbg_stop: "tx= rx= lost= runs= tail_lost=": runs lists each stretch of
# lost echoes as COUNT@FIRST_SEQ; tail_lost counts losses in the last 3 s
# (the final echo, possibly still in flight, not counted).
host_pingbg_stop() {
	local i
	kill -INT "$VM_PINGBG" 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		kill -0 "$VM_PINGBG" 2>/dev/null || break
		sleep 0.1
	done
	wait "$VM_PINGBG" 2>/dev/null
	H_OUT=$(awk '
		/icmp_seq=/ { if (match($0, /icmp_seq=[0-9]+/)) got[substr($0, RSTART + 9, RLENGTH - 9) + 0] = 1 }
		/packets transmitted/ { tx = $1; rx = $4 }
		END {
			if (tx == "") { print "tx=0 rx=0 lost=0 runs= tail_lost=x"; exit }
			run = 0; runs = ""; lost = 0; tail = 0
			for (s = 1; s <= tx - 1; s++) {
				if (!(s in got)) { lost++; if (!run) first = s; run++; if (s > tx - 31) tail++ }
				else if (run) { runs = runs (runs == "" ? "" : ",") run "@" first; run = 0 }
			}
			if (run) runs = runs (runs == "" ? "" : ",") run "@" first
			printf "tx=%d rx=%d lost=%d runs=%s tail_lost=%d\n", tx, rx, lost, runs, tail
		}' "$VM_RUN/pingbg.out")
}

# ---------------------------------------------------------------- run

vm_console_tail() {
	[ -s "$VM_RUN/console.log" ] || return 0
	diag "console (last lines):"
	diag "$(tail -n 15 "$VM_RUN/console.log" | tr -d '\r')"
}

# vm_run: follow the control channel until the guest is done; TAP lines
# are numbered, host requests answered.  Boot and run are bounded.
vm_run() {
	local line part="" tag rest verb rc booted="" ready="" done_rc="" left
	local -a args
	while :; do
		if [ -z "$booted" ]; then
			left=$((VM_BOOT_TIMEOUT - (SECONDS - VM_T0)))
		else
			left=$((VM_QEMU_TIMEOUT - (SECONDS - VM_T0)))
		fi
		[ "$left" -gt 0 ] || break
		# Short reads, so that a QEMU that died is noticed; a partial line
		# read before a time-out is kept for the next read.
		if ! IFS= read -r -t 1 -u "$VM_CTL_OUT" line; then
			part+=$line
			kill -0 "$VM_PID" 2>/dev/null || break
			continue
		fi
		line=$part$line
		part=
		line=${line%$'\r'}
		case "$line" in
		'@@boot '*)
			booted=$((SECONDS - VM_T0))
			diag "guest kernel ${line#@@boot } booted in ${booted} s"
			;;
		@@ready)
			ready=1
			pass "guest booted with the NIC modules loaded ($((SECONDS - VM_T0)) s)"
			;;
		'@@fail '*)
			fail "guest set-up"
			diag "${line#@@fail }"
			break
			;;
		'@@note '*)
			echo "${line#@@note }" >>"$VM_RUN/notes"
			diag "measured: ${line#@@note }"
			;;
		'@@host '*)
			read -r -a args <<<"${line#@@host }"
			verb=${args[0]}
			H_OUT=
			if declare -F "host_$verb" >/dev/null; then
				"host_$verb" "${args[@]:1}" >>"$VM_RUN/host.log" 2>&1
				rc=$?
			else
				H_OUT="unknown host request $verb"
				rc=2
			fi
			printf '@@ret %d %s\n' "$rc" "${H_OUT//$'\n'/ }" >&"$VM_CTL_IN"
			;;
		'@@done '*)
			done_rc=${line#@@done }
			break
			;;
		'ok - '* | 'not ok - '*)
			tag=${line%% - *}
			rest=${line#* - }
			T_N=$((T_N + 1))
			[ "$tag" = "not ok" ] && T_FAILED=$((T_FAILED + 1))
			printf '%s %d - %s\n' "$tag" "$T_N" "$rest"
			;;
		'#'*) printf '%s\n' "$line" ;;
		*) diag "guest: $line" ;;
		esac
	done
	if [ -z "$booted" ]; then
		vm_console_tail
		bail_out "guest did not boot within $VM_BOOT_TIMEOUT s (console: build/vm/run/console.log)"
	fi
	if [ -z "$ready" ] && [ -z "$done_rc" ]; then
		vm_console_tail
		bail_out "guest set-up failed (console: build/vm/run/console.log)"
	fi
	if [ -z "$done_rc" ]; then
		if kill -0 "$VM_PID" 2>/dev/null; then
			fail "guest scenario finished within $VM_QEMU_TIMEOUT s"
		else
			fail "guest scenario finished (QEMU exited after $((SECONDS - VM_T0)) s, before the scenario ended)"
		fi
		vm_console_tail
		return 1
	fi
	for ((left = 0; left < 100; left++)); do # QEMU exits after the guest's poweroff
		kill -0 "$VM_PID" 2>/dev/null || break
		sleep 0.1
	done
	diag "guest ran for $((SECONDS - VM_T0)) s"
}
