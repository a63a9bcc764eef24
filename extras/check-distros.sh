#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The README's quick start on other Debian releases: for each suite, a
# minimal debootstrap root (kept in a cache and reused by later runs), the
# chroot's mounts, a clean clone of the source tree's HEAD, then in the
# chroot `extras/install-deps.sh && ./bootstrap && ./configure && make`
# and `make check`. One line per suite: "SUITE: N passed, N failed,
# N skipped" (the TAP results of its make check), and a last line summing
# them. Needs root, debootstrap (installed when missing) and the Debian
# archive. The mounts live in a mount namespace of their own where
# unshare(1) allows it, and are taken down on any exit in any case.
#
# usage: check-distros.sh SRCDIR CACHEDIR [SUITE...]      (make check-distros)
#   SUITE   a Debian suite debootstrap knows (default: trixie sid)
# Environment:
#   DISTROS_MIRROR     archive to debootstrap from (default http://deb.debian.org/debian)
#   DISTROS_REFRESH=1  debootstrap a suite's root again instead of reusing it
#   DISTROS_JOBS       make -j inside the chroot (default 2)
#   DISTROS_CHECK_ENV  variables for the chroot's make check, e.g.
#                      "URCU_RSEQ_STRESS_MS=100" for a shorter run
#
# Time per suite on 2 quiet cores: 3.5 min in all for trixie, debootstrap
# and the packages of install-deps.sh included (on 2 shared cores at load
# 10-30: debootstrap 3 min, packages 4-6 min, build 5-8 min, make check
# 6-10 min).
set -euo pipefail

me=${0##*/}
die() { echo "$me: $*" >&2; exit 2; }

[ $# -ge 2 ] || die "usage: $me SRCDIR CACHEDIR [SUITE...]"
src=$(cd "$1" && pwd)
mkdir -p "$2"
cache=$(cd "$2" && pwd)
shift 2
[ $# -gt 0 ] || set -- trixie sid
mirror=${DISTROS_MIRROR:-http://deb.debian.org/debian}
jobs=${DISTROS_JOBS:-2}

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts)"
git -C "$src" rev-parse --verify -q HEAD >/dev/null ||
	die "$src is not a git checkout with a commit: nothing to clone"

# A private mount namespace: whatever this script mounts vanishes with it,
# even if it is killed before its trap runs.
if [ -z "${DISTROS_IN_NS:-}" ] && command -v unshare >/dev/null 2>&1 &&
		unshare --mount --propagation private true 2>/dev/null; then
	DISTROS_IN_NS=1 exec unshare --mount --propagation private \
		"$BASH" "$0" "$src" "$cache" "$@"
fi

if ! command -v debootstrap >/dev/null 2>&1; then
	echo "$me: installing debootstrap" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq debootstrap >/dev/null; } ||
		die "cannot install debootstrap"
fi

mounted=()
umount_all()
{
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[i]}" 2>/dev/null || true
	done
	mounted=()
}
trap umount_all EXIT
trap 'exit 130' INT TERM HUP

mount_in()
{
	local dir=$1
	shift
	mkdir -p "$dir"
	mount "$@" "$dir"
	mounted+=("$dir")
}

# What a build and make check need: /proc (the tests read /proc/self),
# /sys (possible CPUs), /dev with its pts and a fresh /dev/shm.
mount_chroot()
{
	local root=$1
	mount_in "$root/proc" -t proc proc
	mount_in "$root/sys" --bind /sys
	mount_in "$root/dev" --bind /dev
	mount_in "$root/dev/pts" --bind /dev/pts
	mount_in "$root/dev/shm" -t tmpfs -o mode=1777 shm
}

# Refuse to delete under a path where something is still mounted (a bind
# of /dev left by a killed run would be emptied through it).
assert_unmounted()
{
	if awk -v p="$1" '$2 == p || index($2, p "/") == 1 { found = 1 } END { exit !found }' \
			/proc/self/mounts; then
		die "something is still mounted under $1: unmount it first"
	fi
}

# A root for SUITE in the cache, made once: apt must accept a snapshot
# whose Release has expired (sid's Valid-Until is a week).
make_root()
{
	local suite=$1 root=$cache/$suite
	if [ -e "$root/.complete" ] && [ "${DISTROS_REFRESH:-0}" != 1 ]; then
		echo "=== $suite: reusing $root" >&2
		return 0
	fi
	echo "=== $suite: debootstrap --variant=minbase into $root" >&2
	assert_unmounted "$root"
	rm -rf "$root"
	debootstrap --variant=minbase "$suite" "$root" "$mirror" \
		>"$cache/$suite-debootstrap.log" 2>&1 || {
		tail -n 20 "$cache/$suite-debootstrap.log" >&2
		return 1
	}
	echo 'Acquire::Check-Valid-Until "false";' \
		>"$root/etc/apt/apt.conf.d/99liburcu-rseq-snapshot"
	touch "$root/.complete"
}

# Sum the :test-result: lines of the .trs files under DIR.
count_trs()
{
	local p=0 f=0 s=0 key result _ trs
	while IFS= read -r -d '' trs; do
		while read -r key result _; do
			[ "$key" = ":test-result:" ] || continue
			case $result in
			PASS|XFAIL) p=$((p + 1)) ;;
			FAIL|XPASS|ERROR) f=$((f + 1)) ;;
			SKIP) s=$((s + 1)) ;;
			esac
		done <"$trs"
	done < <(find "$1" -name '*.trs' -print0)
	echo "$p $f $s"
}

total_p=0 total_f=0 total_s=0 status=0
summary=()
for suite in "$@"; do
	root=$cache/$suite
	log=$cache/$suite.log
	t0=$(date +%s)
	if ! make_root "$suite"; then
		summary+=("$suite: debootstrap failed")
		status=1
		continue
	fi
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	assert_unmounted "$root"
	rm -rf "$root/build"
	mkdir -p "$root/build"
	git clone -q --no-hardlinks "$src" "$root/build/liburcu-rseq"
	mount_chroot "$root"
	echo "=== $suite: quick start and make check in the chroot (log: $log)" >&2
	rc=0
	chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 TERM=dumb JOBS="$jobs" \
		CHECK_ENV="${DISTROS_CHECK_ENV:-}" /bin/sh -ec '
		cd /build/liburcu-rseq
		apt-get update -qq
		extras/install-deps.sh
		./bootstrap
		./configure --quiet
		make -j"$JOBS" >/dev/null
		echo "=== make check"
		env $CHECK_ENV make -j"$JOBS" check
	' >"$log" 2>&1 || rc=$?
	umount_all
	read -r p f s < <(count_trs "$root/build/liburcu-rseq")
	if [ "$rc" -ne 0 ]; then
		status=1
		grep -E '^(FAIL|ERROR|XPASS):' "$log" >&2 || tail -n 40 "$log" >&2
		[ "$f" -gt 0 ] || f=$((f + 1))
	fi
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
	summary+=("$suite: $p passed, $f failed, $s skipped ($(($(date +%s) - t0)) s)")
	echo "${summary[-1]}" >&2
done

printf '%s\n' "${summary[@]}"
echo "distros: $total_p passed, $total_f failed, $total_s skipped"
exit "$status"
