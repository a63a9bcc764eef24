#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Boot a Debian kernel (Debian 12's linux 6.1 unless URCU_RSEQ_VM_SUITE
# names another suite) under QEMU with a busybox initramfs,
# run statically linked test programs inside it and report their TAP output.
#
# Usage: run-vm.sh [options] TEST... 
#        run-vm.sh --setup            (install/fetch everything, boot nothing)
#
# Each TEST is a statically linked executable or a /bin/sh script; it is
# copied into /tests in the guest and run there, in the order given.  See
# extras/vm/README.md for the environment variables and the output format.

set -u
set -o pipefail

ME=${0##*/}

die() { echo "$ME: error: $*" >&2; exit 2; }
note() { echo "# $ME: $*" >&2; }

usage() {
	cat <<EOF
Usage: $ME [options] TEST...
       $ME --setup
Options:
  --file PATH      copy PATH (file or directory) into /tests too, not run
  --env VAR=VALUE  export VAR=VALUE in the guest before the tests run
  --setup          only install packages and fetch kernel/busybox, then exit
  -h, --help       this text
Environment:
  ARCH                        x86_64 (default on amd64 hosts) or aarch64
  URCU_RSEQ_VM_CPUS           vCPUs (default 8 on x86_64, 4 on aarch64)
  URCU_RSEQ_VM_MAXCPUS        possible CPUs (default URCU_RSEQ_VM_CPUS): the
                              others are absent, as hotpluggable CPUs are
  URCU_RSEQ_VM_MEM            guest memory (default 2G)
  URCU_RSEQ_VM_KERNEL_ARGS    extra kernel command line arguments
  URCU_RSEQ_VM_CACHE          download cache (default \$XDG_CACHE_HOME/liburcu-rseq-vm
                              if XDG_CACHE_HOME is set, else ./vm-cache)
  URCU_RSEQ_VM_OUTDIR         initramfs, console log, per-test logs (default ./vm-run-\$ARCH)
  URCU_RSEQ_VM_TEST_TIMEOUT   per-test timeout in seconds (default 600)
  URCU_RSEQ_VM_TIMEOUT        whole-VM timeout in seconds (default 900)
  URCU_RSEQ_VM_KERNEL         use this kernel image instead of the Debian package
  URCU_RSEQ_VM_KERNEL_PKG     Debian kernel package to use (default: what
                              linux-image-<debarch> depends on, a 6.1 kernel)
  URCU_RSEQ_VM_SUITE          take the kernel from this Debian suite instead
                              (trixie: 6.12, sid: 7.x), through an apt index
                              of its own under the cache
  URCU_RSEQ_VM_MIRROR         archive for URCU_RSEQ_VM_SUITE
                              (default http://deb.debian.org/debian)
  URCU_RSEQ_VM_NO_INSTALL=1   never run apt-get install/update (fail instead)
  URCU_RSEQ_VM_VERBOSE=1      echo the serial console to stderr while it runs
EOF
}

# ---------------------------------------------------------------- options

EXTRA_FILES=()
GUEST_ENV=()
TESTS=()
SETUP_ONLY=0
while [ $# -gt 0 ]; do
	case $1 in
	--file) [ $# -ge 2 ] || die "--file needs an argument"; EXTRA_FILES+=("$2"); shift 2 ;;
	--file=*) EXTRA_FILES+=("${1#--file=}"); shift ;;
	--env) [ $# -ge 2 ] || die "--env needs an argument"; GUEST_ENV+=("$2"); shift 2 ;;
	--env=*) GUEST_ENV+=("${1#--env=}"); shift ;;
	--setup) SETUP_ONLY=1; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; TESTS+=("$@"); break ;;
	-*) usage >&2; die "unknown option $1" ;;
	*) TESTS+=("$1"); shift ;;
	esac
done
[ $SETUP_ONLY = 1 ] || [ ${#TESTS[@]} -gt 0 ] || { usage >&2; die "no test given"; }

ARCH=${ARCH:-$(uname -m)}
case $ARCH in
x86_64|amd64)
	ARCH=x86_64 DEBARCH=amd64 ELF_MACHINE='X86-64'
	QEMU=qemu-system-x86_64 QEMU_PKG=qemu-system-x86
	CONSOLE=ttyS0 DEFAULT_CPUS=8
	;;
aarch64|arm64)
	ARCH=aarch64 DEBARCH=arm64 ELF_MACHINE='AArch64'
	QEMU=qemu-system-aarch64 QEMU_PKG=qemu-system-arm
	CONSOLE=ttyAMA0 DEFAULT_CPUS=4
	;;
*) die "unsupported ARCH=$ARCH (x86_64 or aarch64)" ;;
esac
HOST_DEBARCH=$(dpkg --print-architecture)

CPUS=${URCU_RSEQ_VM_CPUS:-$DEFAULT_CPUS}
MAXCPUS=${URCU_RSEQ_VM_MAXCPUS:-$CPUS}
SUITE=${URCU_RSEQ_VM_SUITE:-}
MEM=${URCU_RSEQ_VM_MEM:-2G}
TEST_TIMEOUT=${URCU_RSEQ_VM_TEST_TIMEOUT:-600}
VM_TIMEOUT=${URCU_RSEQ_VM_TIMEOUT:-900}
if [ -n "${URCU_RSEQ_VM_CACHE:-}" ]; then
	CACHE=$URCU_RSEQ_VM_CACHE
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
	CACHE=$XDG_CACHE_HOME/liburcu-rseq-vm
else
	CACHE=$PWD/vm-cache
fi
OUTDIR=${URCU_RSEQ_VM_OUTDIR:-$PWD/vm-run-$ARCH}
case $CPUS in ''|*[!0-9]*) die "URCU_RSEQ_VM_CPUS must be a number" ;; esac
case $MAXCPUS in ''|*[!0-9]*) die "URCU_RSEQ_VM_MAXCPUS must be a number" ;; esac
[ "$MAXCPUS" -ge "$CPUS" ] || die "URCU_RSEQ_VM_MAXCPUS below URCU_RSEQ_VM_CPUS"
mkdir -p "$CACHE/$DEBARCH" || die "cannot create cache dir $CACHE"
CACHE=$(cd "$CACHE" && pwd)
ACACHE=$CACHE/$DEBARCH

# ---------------------------------------------------------------- packages

is_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

APT_UPDATED=0
apt_update() {
	[ $APT_UPDATED = 1 ] && return 0
	[ "${URCU_RSEQ_VM_NO_INSTALL:-0}" = 1 ] && return 0
	[ "$(id -u)" = 0 ] || return 0
	note "apt-get update"
	apt-get update -qq >&2 || die "apt-get update failed"
	APT_UPDATED=1
}

# Install the given packages if any is missing (idempotent).
ensure_pkgs() {
	local p missing=()
	for p in "$@"; do is_installed "$p" || missing+=("$p"); done
	[ ${#missing[@]} = 0 ] && return 0
	if [ "${URCU_RSEQ_VM_NO_INSTALL:-0}" = 1 ] || [ "$(id -u)" != 0 ]; then
		die "missing packages: ${missing[*]} (run as root: apt-get install ${missing[*]})"
	fi
	apt_update
	note "apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${missing[@]}" >"$CACHE/apt.log" 2>&1 ||
		{ tail -n 20 "$CACHE/apt.log" >&2; die "apt-get install ${missing[*]} failed"; }
}

# Make the foreign architecture known to dpkg/apt (needed to download
# its packages).
ensure_foreign_arch() {
	[ "$DEBARCH" = "$HOST_DEBARCH" ] && return 0
	dpkg --print-foreign-architectures | grep -qx "$DEBARCH" && return 0
	[ "$(id -u)" = 0 ] && [ "${URCU_RSEQ_VM_NO_INSTALL:-0}" != 1 ] ||
		die "run as root: dpkg --add-architecture $DEBARCH && apt-get update"
	note "dpkg --add-architecture $DEBARCH"
	dpkg --add-architecture "$DEBARCH" || die "dpkg --add-architecture failed"
	APT_UPDATED=0
	apt_update
}

# apt-get download PKG and unpack it (or only the members matching one of
# the tar patterns MEMBERS) under DIR, once.  Usage: fetch_deb PKG DIR
# [MEMBERS...].  FETCH_APT: extra apt options (another suite's index).
FETCH_APT=()
fetch_deb() {
	local pkg=$1 dir=$2 deb
	shift 2
	[ -e "$dir/.unpacked" ] && return 0
	mkdir -p "$ACACHE/debs" && rm -rf "$dir" && mkdir -p "$dir" || die "mkdir $dir"
	deb=$(ls "$ACACHE/debs/${pkg%%:*}"_*"_$DEBARCH.deb" 2>/dev/null | tail -n 1)
	if [ -z "$deb" ]; then
		note "apt-get download $pkg"
		# apt's _apt sandbox user may not write into the cache; fine.
		(cd "$ACACHE/debs" && apt-get "${FETCH_APT[@]}" download -q "$pkg" >&2) ||
			{ [ ${#FETCH_APT[@]} = 0 ] && apt_update &&
			  (cd "$ACACHE/debs" && apt-get download -q "$pkg" >&2); } ||
			die "apt-get download $pkg failed"
		deb=$(ls "$ACACHE/debs/${pkg%%:*}"_*"_$DEBARCH.deb" 2>/dev/null | tail -n 1)
		[ -n "$deb" ] || die "download of $pkg produced no .deb"
	fi
	if [ $# -gt 0 ]; then
		# Only some members (the kernel package is mostly modules,
		# which the VM does not use), found by any of the patterns.
		local members=() m p
		while IFS= read -r m; do
			for p in "$@"; do
				# shellcheck disable=SC2053 # a glob match is wanted
				[[ $m == $p ]] && { members+=("$m"); break; }
			done
		done < <(dpkg-deb --fsys-tarfile "$deb" | tar -t)
		[ ${#members[@]} -gt 0 ] || die "nothing matching $* in $deb"
		dpkg-deb --fsys-tarfile "$deb" | (cd "$dir" && tar -x "${members[@]}") ||
			die "unpacking $* from $deb failed"
	else
		dpkg-deb -x "$deb" "$dir" || die "dpkg-deb -x $deb failed"
	fi
	touch "$dir/.unpacked"
}

# The name of Debian 12's current 6.1 kernel image package for DEBARCH:
# the dependency of the linux-image-<debarch> metapackage.
kernel_pkg_name() {
	local q=linux-image-$DEBARCH name
	[ "$DEBARCH" = "$HOST_DEBARCH" ] || q=$q:$DEBARCH
	name=$(apt-cache depends "$q" 2>/dev/null |
		sed -n "s/^ *Depends: \(linux-image-6\.1\.[^ :]*-$DEBARCH\)\(:$DEBARCH\)\{0,1\}\$/\1/p" | head -n 1)
	if [ -z "$name" ]; then
		name=$(apt-cache search --names-only "^linux-image-6\.1\.[0-9-]*-$DEBARCH\$" 2>/dev/null |
			awk '{print $1}' | sort -V | tail -n 1)
	fi
	echo "$name"
}

setup_host() {
	local pkgs=("$QEMU_PKG" cpio)
	[ "$ARCH" = x86_64 ] && pkgs+=(busybox-static)
	ensure_pkgs "${pkgs[@]}"
	if [ "$ARCH" = aarch64 ]; then
		ensure_foreign_arch
		ensure_pkgs gcc-aarch64-linux-gnu libc6-dev-arm64-cross
		setup_arm64_urcu
	fi
}

# liburcu-dev:arm64 (for cross-building the project's tests).  Installed
# with apt when that co-installs with the host's packages, else unpacked
# into a sysroot under the cache.  Writes $ACACHE/cross.env either way.
setup_arm64_urcu() {
	local sysroot=$ACACHE/sysroot env=$ACACHE/cross.env
	local inc="" lib=""
	if is_installed liburcu-dev:arm64; then
		:
	elif [ "${URCU_RSEQ_VM_NO_INSTALL:-0}" != 1 ] && [ "$(id -u)" = 0 ] &&
	     apt-get install -s liburcu-dev:arm64 2>/dev/null | grep -q '^Inst' &&
	     ! apt-get install -s liburcu-dev:arm64 2>/dev/null | grep -q '^Remv'; then
		ensure_pkgs liburcu-dev:arm64
	else
		note "liburcu-dev:arm64 not co-installable here; unpacking it into $sysroot"
		local p
		for p in liburcu-dev liburcu8; do
			fetch_deb "$p:arm64" "$sysroot.$p"
			mkdir -p "$sysroot" && cp -a "$sysroot.$p/usr" "$sysroot/" || die "sysroot"
		done
		inc="-I$sysroot/usr/include -I$sysroot/usr/include/aarch64-linux-gnu"
		lib="-L$sysroot/usr/lib/aarch64-linux-gnu"
	fi
	cat >"$env.tmp" <<EOF
# Source this to cross-build for the aarch64 VM (written by run-vm.sh)
export CC=aarch64-linux-gnu-gcc
export CPPFLAGS="\${CPPFLAGS:+\$CPPFLAGS }$inc"
export LDFLAGS="\${LDFLAGS:+\$LDFLAGS }$lib"
export CONFIGURE_HOST=aarch64-linux-gnu
EOF
	mv "$env.tmp" "$env"
}

# A Debian suite's own package index, kept under the cache (apt state
# apart from the host's): the kernel of another release is downloaded from
# it without touching the host's sources.  Sets SUITE_APT (apt options).
SUITE_APT=()
suite_apt_setup() {
	local dir=$ACACHE/apt-$SUITE mirror=${URCU_RSEQ_VM_MIRROR:-http://deb.debian.org/debian}
	local keyring=/usr/share/keyrings/debian-archive-keyring.gpg opt=""
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" || die "mkdir $dir"
	[ -r "$keyring" ] && opt="[signed-by=$keyring] "
	echo "deb $opt$mirror $SUITE main" >"$dir/sources.list"
	# A snapshot of sid (or any archive copy) may carry an expired
	# Valid-Until: the kernel is wanted all the same.
	SUITE_APT=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
		-o Dir::State::status=/dev/null -o "APT::Architecture=$DEBARCH"
		-o "APT::Architectures=$DEBARCH" -o Acquire::Check-Valid-Until=false)
	if [ -z "$(find "$dir/lists" -name '*_Packages*' -mmin -1440 2>/dev/null)" ] ||
	   [ "${URCU_RSEQ_VM_REFRESH:-0}" = 1 ]; then
		note "apt-get update ($SUITE)"
		apt-get "${SUITE_APT[@]}" update -qq >&2 ||
			note "apt-get update for $SUITE failed; using what is cached"
	fi
}

# The kernel package of SUITE: what linux-image-<debarch> depends on.  In
# sid (Linux 7.2) linux-image-X is itself no more than a dependency on
# linux-binary-X, which holds the image (as usr/lib/modules/*/vmlinuz).
suite_kernel_pkg() {
	local meta=linux-image-$DEBARCH name binary
	name=$(apt-cache "${SUITE_APT[@]}" depends "$meta" 2>/dev/null |
		sed -n "s/^ *Depends: \(linux-image-[0-9][^ :]*-$DEBARCH\)\(:$DEBARCH\)\{0,1\}\$/\1/p" | head -n 1)
	[ -n "$name" ] || return 0
	binary=$(apt-cache "${SUITE_APT[@]}" depends "$name" 2>/dev/null |
		sed -n "s/^ *Depends: \(linux-binary-[0-9][^ :]*\)\(:$DEBARCH\)\{0,1\}\$/\1/p" | head -n 1)
	echo "${binary:-$name}"
}

# Sets KERNEL (path to the image) and KERNEL_NAME.
setup_kernel() {
	if [ -n "${URCU_RSEQ_VM_KERNEL:-}" ]; then
		KERNEL=$URCU_RSEQ_VM_KERNEL KERNEL_NAME=${KERNEL##*/}
		[ -r "$KERNEL" ] || die "URCU_RSEQ_VM_KERNEL=$KERNEL not readable"
		return 0
	fi
	ensure_foreign_arch
	local pkg=${URCU_RSEQ_VM_KERNEL_PKG:-} memo=$ACACHE/kernel-pkg${SUITE:+-$SUITE}
	[ -z "$SUITE" ] || suite_apt_setup
	# apt-cache is slow: resolve the package name at most once a day.
	if [ -z "$pkg" ] && [ "${URCU_RSEQ_VM_REFRESH:-0}" != 1 ] &&
	   [ -n "$(find "$memo" -mmin -1440 2>/dev/null)" ]; then
		pkg=$(cat "$memo")
	fi
	if [ -z "$pkg" ]; then
		if [ -n "$SUITE" ]; then
			pkg=$(suite_kernel_pkg)
		else
			pkg=$(kernel_pkg_name)
			if [ -z "$pkg" ]; then
				apt_update
				pkg=$(kernel_pkg_name)
			fi
		fi
		[ -n "$pkg" ] && echo "$pkg" >"$memo"
	fi
	if [ -z "$pkg" ]; then
		# Offline and no index: use whatever is cached.
		if [ -n "$SUITE" ]; then
			pkg=$(cat "$memo" 2>/dev/null)
		else
			pkg=$(ls -d "$ACACHE"/kernel/linux-image-6.1.* 2>/dev/null | sort -V | tail -n 1)
			pkg=${pkg##*/}
		fi
		[ -n "$pkg" ] && [ -d "$ACACHE/kernel/$pkg" ] ||
			die "cannot find a kernel package for $DEBARCH${SUITE:+ in $SUITE}"
	fi
	local q=$pkg
	[ "$DEBARCH" = "$HOST_DEBARCH" ] || q=$pkg:$DEBARCH
	FETCH_APT=("${SUITE_APT[@]}")
	fetch_deb "$q" "$ACACHE/kernel/$pkg" './boot/vmlinuz-*' './usr/lib/modules/*/vmlinuz'
	FETCH_APT=()
	KERNEL=$(ls "$ACACHE/kernel/$pkg"/boot/vmlinuz-* \
		"$ACACHE/kernel/$pkg"/usr/lib/modules/*/vmlinuz 2>/dev/null | head -n 1)
	[ -n "$KERNEL" ] || die "no /boot/vmlinuz-* nor /usr/lib/modules/*/vmlinuz in $pkg"
	case $KERNEL in
	*/usr/lib/modules/*) KERNEL_NAME=${KERNEL%/vmlinuz} KERNEL_NAME=${KERNEL_NAME##*/} ;;
	*) KERNEL_NAME=${KERNEL##*/vmlinuz-} ;;
	esac
}

# Sets BUSYBOX (a static busybox for the guest).
setup_busybox() {
	if [ "$DEBARCH" = "$HOST_DEBARCH" ]; then
		BUSYBOX=/bin/busybox
	else
		# busybox-static:arm64 conflicts with the host's busybox-static,
		# so download and unpack it instead of installing it.
		fetch_deb "busybox-static:$DEBARCH" "$ACACHE/busybox-static"
		BUSYBOX=$ACACHE/busybox-static/bin/busybox
	fi
	[ -x "$BUSYBOX" ] || die "no busybox at $BUSYBOX"
	readelf -lW "$BUSYBOX" | grep -q 'INTERP' && die "$BUSYBOX is not static"
	return 0
}

START_TIME=$(date +%s.%N)
setup_host
setup_kernel
setup_busybox
if [ $SETUP_ONLY = 1 ]; then
	echo "# $ARCH ready: kernel $KERNEL, busybox $BUSYBOX, cache $CACHE"
	[ -e "$ACACHE/cross.env" ] && echo "# cross-build settings: . $ACACHE/cross.env"
	exit 0
fi

# ---------------------------------------------------------------- initramfs

mkdir -p "$OUTDIR" || die "cannot create $OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
ROOT=$OUTDIR/root
rm -rf "$ROOT" "$OUTDIR/logs" && mkdir -p "$ROOT" "$OUTDIR/logs" || die "mkdir $ROOT"
mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,etc,tests,root}

cp "$BUSYBOX" "$ROOT/bin/busybox" || die "copy busybox"
# Applet list: ask the guest busybox if it runs here, else the host's one
# (same Debian package version, same configuration).
LISTER=$BUSYBOX
"$LISTER" true 2>/dev/null || LISTER=/bin/busybox
"$LISTER" --list-full >"$OUTDIR/applets" 2>/dev/null && [ -s "$OUTDIR/applets" ] ||
	die "cannot list busybox applets (is busybox-static installed on the host?)"
while read -r applet; do
	[ "$applet" = bin/busybox ] && continue
	mkdir -p "$ROOT/${applet%/*}"
	ln -sf /bin/busybox "$ROOT/$applet"
done <"$OUTDIR/applets"

# Is $1 usable in the guest?  Static ELF of the right machine, or a script.
check_test() {
	local f=$1 hdr
	[ -f "$f" ] || die "test $f: no such file"
	hdr=$(head -c 4 "$f" | od -An -c | tr -d ' ')
	if [ "$hdr" = '177ELF' ]; then
		readelf -hW "$f" | grep -q "Machine:.*$ELF_MACHINE" ||
			die "test $f: not a $ARCH binary ($(readelf -hW "$f" | sed -n 's/^ *Machine: *//p'))"
		readelf -lW "$f" | grep -q 'Requesting program interpreter' &&
			die "test $f: dynamically linked; the VM has no shared libraries (link with -static, see extras/vm/README.md)"
	elif grep -q 'libtool wrapper' "$f" 2>/dev/null; then
		die "test $f: a libtool wrapper script, not the program; build the tests static (see extras/vm/README.md)"
	elif [ "$(head -c 2 "$f")" != '#!' ]; then
		die "test $f: neither an ELF binary nor a script"
	fi
	return 0
}

NAMES=()
for t in "${TESTS[@]}"; do
	check_test "$t"
	name=${t##*/}
	for n in "${NAMES[@]}"; do [ "$n" = "$name" ] && die "two tests named $name"; done
	NAMES+=("$name")
	cp "$t" "$ROOT/tests/$name" && chmod 0755 "$ROOT/tests/$name" || die "copy $t"
done
for f in "${EXTRA_FILES[@]}"; do
	[ -e "$f" ] || die "--file $f: no such file"
	cp -a "$f" "$ROOT/tests/" || die "copy $f"
done
printf '%s\n' "${NAMES[@]}" >"$ROOT/etc/vm-tests"

{
	echo "VM_ARCH='$ARCH'"
	echo "VM_CPUS='$CPUS'"
	echo "VM_TEST_TIMEOUT='$TEST_TIMEOUT'"
	echo "export VM_ARCH VM_CPUS VM_TEST_TIMEOUT"
	for e in "${GUEST_ENV[@]}"; do
		case $e in [A-Za-z_]*=*) ;; *) die "--env $e: not VAR=VALUE" ;; esac
		v=${e#*=}
		printf "export %s='%s'\n" "${e%%=*}" "${v//\'/\'\\\'\'}"
	done
} >"$ROOT/etc/vm.env"

cat >"$ROOT/init" <<'EOF'
#!/bin/busybox sh
# /init of the liburcu-rseq test VM (generated by extras/vm/run-vm.sh)
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TMPDIR=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
. /etc/vm.env
ulimit -c 0
uptime_s() { cut -d' ' -f1 /proc/uptime; }
echo ""
echo "=== VM-START arch=$(uname -m) kernel=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo) uptime=$(uptime_s)"
cd /tests
for t in $(cat /etc/vm-tests); do
	echo "=== BEGIN $t"
	t0=$(uptime_s)
	timeout -s KILL "$VM_TEST_TIMEOUT" "./$t" </dev/null 2>&1
	rc=$?
	t1=$(uptime_s)
	# A newline first: the test's last line may lack one.
	echo ""
	echo "=== END $t rc=$rc time=$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}")"
done
echo "=== VM-DONE uptime=$(uptime_s)"
sync
poweroff -f
echo o >/proc/sysrq-trigger
sleep 10
EOF
chmod 0755 "$ROOT/init"

INITRD=$OUTDIR/initramfs.cpio.gz
(cd "$ROOT" && find . -mindepth 1 | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0 | gzip -1 >"$INITRD") || die "building the initramfs failed"

# ---------------------------------------------------------------- boot

APPEND="console=$CONSOLE quiet panic=-1 rdinit=/init"
# TCG's TSC runs unevenly against the emulated HPET: without tsc=reliable
# the clocksource watchdog of recent kernels (one 7.2 boot) may mark it
# unstable and oops while switching. no_timer_check: on a loaded host the
# boot-time check that the timer interrupt arrives through the IO-APIC may
# see too few ticks and panic ("IO-APIC + timer doesn't work", one 7.2
# boot with 64 possible CPUs).
[ "$ARCH" = x86_64 ] && APPEND="$APPEND tsc=reliable no_timer_check"
APPEND="$APPEND ${URCU_RSEQ_VM_KERNEL_ARGS:-}"
# shellcheck disable=SC2054 # the commas are QEMU option syntax
QEMU_ARGS=(-accel tcg,thread=multi -smp "$CPUS,maxcpus=$MAXCPUS" -m "$MEM" -nographic -no-reboot -nic none
	-kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND")
case $ARCH in
x86_64) QEMU_ARGS+=(-cpu max) ;;
# pauth-impdef: an implementation-defined pointer-authentication algorithm,
# much cheaper to emulate than QARMA; invisible to the tests.
aarch64)
	# shellcheck disable=SC2054
	QEMU_ARGS+=(-M virt -cpu max,pauth-impdef=on) ;;
esac

CONSOLE_LOG=$OUTDIR/console.log
note "booting $ARCH kernel $KERNEL_NAME, $CPUS CPUs, ${#NAMES[@]} test(s); console in $CONSOLE_LOG"
BOOT_T0=$(date +%s.%N)
rm -f "$OUTDIR/booted" "$CONSOLE_LOG"
# Note the host time at which /init starts (boot time as seen from outside).
(
	while sleep 0.25; do
		grep -q '=== VM-START' "$CONSOLE_LOG" 2>/dev/null && { date +%s.%N >"$OUTDIR/booted"; break; }
	done
) &
WATCHER=$!
if [ "${URCU_RSEQ_VM_VERBOSE:-0}" = 1 ]; then
	timeout -k 10 "$VM_TIMEOUT" "$QEMU" "${QEMU_ARGS[@]}" </dev/null 2>&1 |
		tee "$CONSOLE_LOG" >&2
	QEMU_RC=${PIPESTATUS[0]}
else
	timeout -k 10 "$VM_TIMEOUT" "$QEMU" "${QEMU_ARGS[@]}" </dev/null >"$CONSOLE_LOG" 2>&1
	QEMU_RC=$?
fi
END_TIME=$(date +%s.%N)
kill "$WATCHER" 2>/dev/null
wait "$WATCHER" 2>/dev/null

# ---------------------------------------------------------------- report

# Strip CRs and split the console into logs/<name>.log (the test's own
# output; kernel messages found inside become "# kernel:" comments) and
# logs/<name>.rc.  Also logs/kernel.log (console outside the tests).
# Also drop the terminal control sequences the firmware and kernel print.
tr -d '\r' <"$CONSOLE_LOG" | sed 's/\x1b\(\[[0-9;?]*[A-Za-z]\|[c()][0-9A-Za-z]\{0,1\}\)//g' | awk -v dir="$OUTDIR/logs" '
	function flush_partial(s) { if (s != "") print s > cur }
	# Markers may follow firmware output that did not end its line.
	/=== VM-START / { print substr($0, index($0, "=== VM-START ")) > (dir "/vm-start"); next }
	/=== VM-DONE / { print substr($0, index($0, "=== VM-DONE ")) > (dir "/vm-done"); next }
	/=== BEGIN / && cur == "" {
		name = substr($0, index($0, "=== BEGIN ") + 10); cur = dir "/" name ".log"
		printf "" > cur; pending = 0; next
	}
	cur != "" && match($0, /=== END [^ ]+ rc=[0-9]+ time=[0-9.]+$/) {
		flush_partial(substr($0, 1, RSTART - 1))
		split(substr($0, RSTART), f, / /); sub(/^rc=/, "", f[4]); sub(/^time=/, "", f[5])
		print f[4] " " f[5] > (dir "/" f[3] ".rc")
		close(cur); cur = ""; pending = 0; next
	}
	cur != "" && /^\[ *[0-9]+\.[0-9]+\] / { print "# kernel: " $0 > cur; nkern++; print > (dir "/kernel.log"); next }
	cur != "" {
		# Hold back empty lines: the one /init adds before END is not the test'"'"'s.
		if ($0 == "") { pending++; next }
		while (pending > 0) { print "" > cur; pending-- }
		print > cur; next
	}
	{ print > (dir "/kernel.log") }
'

fmt() { awk "BEGIN{printf \"%.1f\", $1}"; }
TOTAL=$(fmt "$END_TIME - $START_TIME")
VM_TIME=$(fmt "$END_TIME - $BOOT_T0")
BOOT="?" GUEST_BOOT="?"
[ -s "$OUTDIR/booted" ] && BOOT=$(fmt "$(cat "$OUTDIR/booted") - $BOOT_T0")
[ -s "$OUTDIR/logs/vm-start" ] && GUEST_BOOT=$(sed -n 's/.* uptime=//p' "$OUTDIR/logs/vm-start")

echo "# VM: arch=$ARCH kernel=$KERNEL_NAME cpus=$CPUS possible=$MAXCPUS mem=$MEM"
echo "1..${#NAMES[@]}"
FAIL=0 I=0 NOK=0 NNOTOK=0
for name in "${NAMES[@]}"; do
	I=$((I + 1))
	log=$OUTDIR/logs/$name.log
	if [ ! -e "$OUTDIR/logs/$name.rc" ]; then
		[ -e "$log" ] && sed 's/^/    /' "$log"
		echo "not ok $I - $name # did not finish (VM crashed or timed out)"
		FAIL=1
		continue
	fi
	read -r rc secs <"$OUTDIR/logs/$name.rc"
	sed 's/^/    /' "$log"
	ok=$(grep -c '^ok' "$log")
	bad=$(grep '^not ok' "$log" | grep -vic '# *todo')
	NOK=$((NOK + ok)) NNOTOK=$((NNOTOK + bad))
	why=""
	[ "$rc" = 0 ] || why="rc=$rc"
	[ "$rc" = 137 ] && why="$why (killed after ${TEST_TIMEOUT}s timeout)"
	[ "$bad" = 0 ] || why="${why:+$why, }$bad not ok"
	grep -q '^Bail out!' "$log" && why="${why:+$why, }bailed out"
	if [ -z "$why" ]; then
		echo "ok $I - $name # ${secs}s, $ok ok"
	else
		echo "not ok $I - $name # $why, ${secs}s"
		FAIL=1
	fi
done

STATUS=ok
if [ "$QEMU_RC" = 124 ] || [ "$QEMU_RC" = 137 ]; then
	STATUS="VM timed out after ${VM_TIMEOUT}s"
	[ -s "$OUTDIR/logs/vm-start" ] || STATUS="$STATUS, before /init ran"
elif [ ! -s "$OUTDIR/logs/vm-start" ]; then
	STATUS="boot failed"
	echo "# console (last lines):"; tail -n 30 "$OUTDIR/logs/kernel.log" 2>/dev/null | sed 's/^/#   /'
elif [ ! -s "$OUTDIR/logs/vm-done" ]; then
	STATUS="VM did not finish (qemu rc=$QEMU_RC)"
	echo "# console (last lines):"; tail -n 30 "$OUTDIR/logs/kernel.log" 2>/dev/null | sed 's/^/#   /'
elif [ "$QEMU_RC" != 0 ]; then
	STATUS="qemu exited with rc=$QEMU_RC"
fi
[ "$STATUS" = ok ] || { FAIL=1; echo "Bail out! $STATUS"; }
if grep -qE 'BUG:|WARNING:|Oops|Call Trace|Kernel panic' "$OUTDIR/logs/kernel.log" 2>/dev/null; then
	echo "# warning: kernel reported problems, see $OUTDIR/logs/kernel.log"
fi
echo "# summary: $ARCH: ${#NAMES[@]} program(s), $NOK ok, $NNOTOK not ok; status: $STATUS;" \
	"boot ${BOOT}s (qemu start to /init; guest uptime ${GUEST_BOOT}s), VM ${VM_TIME}s, total ${TOTAL}s"
echo "# logs: $OUTDIR/logs/<test>.log (raw TAP), console: $CONSOLE_LOG"
exit $FAIL
