#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install what liburcu-rseq needs to build, test and benchmark on Debian 12
# (and derivatives). Idempotent: installs only what is missing, runs
# `apt-get update` only then, and prints nothing when all is present.
# Says which packages it installs and why, then shows apt-get's progress.
#
# usage: extras/install-deps.sh [--vm] [--deb] [--list]
#   --vm    also the packages for the VM test runner (qemu, busybox)
#   --deb   also the Debian packaging tools (make deb, lintian, autopkgtest)
#           and debootstrap (extras/first-hour.sh)
#   --list  print the packages (all of them, missing or not) and exit
set -eu

# One group a line: what it is for, then its packages.
groups="build: build-essential autoconf automake libtool pkg-config liburcu-dev libnuma-dev
tests: libseccomp-dev valgrind spin abigail-tools
man pages (make check renders them, man reads them): groff-base man-db
benchmarks: gnuplot-nox libck-dev libgoogle-perftools-dev"
# The kernel itself is fetched by extras/vm/run-vm.sh with apt-get download.
vm_group="VM tests (make vmcheck): qemu-system-x86 busybox-static cpio"
deb_group="Debian packages (make deb) and the first-hour replay: debhelper dpkg-dev lintian autopkgtest debootstrap"

list=no
for arg in "$@"; do
	case $arg in
	--vm) groups="$groups
$vm_group" ;;
	--deb) groups="$groups
$deb_group" ;;
	--list) list=yes ;;
	-h|--help)
		sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'
		exit 0 ;;
	*) echo "install-deps.sh: unknown option $arg" >&2; exit 2 ;;
	esac
done

packages=$(printf '%s\n' "$groups" | sed 's/^[^:]*: //' | tr '\n' ' ')
if [ "$list" = yes ]; then
	printf '%s\n' $packages
	exit 0
fi

command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 || {
	echo "install-deps.sh: needs apt-get and dpkg (Debian or Ubuntu);" \
		"install by hand: $packages" >&2
	exit 1
}

is_installed()
{
	[ "$(dpkg-query -W -f '${db:Status-Status}' "$1" 2>/dev/null || true)" = installed ]
}

# The missing packages, and one line per group saying what they are for.
missing=
plan=
nl='
'
while IFS= read -r line; do
	what=${line%%: *}
	group_missing=
	for p in ${line#*: }; do
		is_installed "$p" || group_missing="$group_missing $p"
	done
	[ -n "$group_missing" ] || continue
	missing="$missing$group_missing"
	plan="$plan  $what:$group_missing$nl"
done <<END
$groups
END
[ -n "$missing" ] || exit 0

if [ "$(id -u)" -eq 0 ]; then
	sudo=
elif command -v sudo >/dev/null 2>&1; then
	sudo=sudo
else
	echo "install-deps.sh: not root and no sudo; install as root:$missing" >&2
	exit 1
fi

printf 'install-deps.sh: installing (with what they depend on)\n%s' "$plan" >&2

# apt-get's own progress (one line per download and per package set up),
# without the fancy progress bar and without debconf's notes on stderr
# ("debconf: delaying package configuration, since apt-utils is not
# installed", its frontend fallbacks): nothing is asked, the defaults are
# taken. The status file carries apt-get's exit status through the pipe.
status_file=$(mktemp)
trap 'rm -f "$status_file"' EXIT
apt()
{
	{ $sudo env DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true \
		apt-get -q -o Dpkg::Progress-Fancy=false -o Dpkg::Use-Pty=false "$@" 2>&1
		echo $? >"$status_file"
	} | grep -v -e '^debconf: ' -e '^dpkg-preconfigure: ' >&2 || true
	return "$(cat "$status_file")"
}
echo "install-deps.sh: apt-get update" >&2
apt update
echo "install-deps.sh: apt-get install" >&2
# shellcheck disable=SC2086
apt install -y --no-install-recommends $missing
echo "install-deps.sh: done" >&2
