#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install what liburcu-rseq needs to build, test and benchmark on Debian 12
# (and derivatives). Idempotent: installs only what is missing, runs
# `apt-get update` only then, and prints nothing when all is present.
#
# usage: extras/install-deps.sh [--vm]
#   --vm   also the packages for the VM test runner (qemu, busybox)
set -eu

packages="build-essential autoconf automake libtool pkg-config
liburcu-dev libseccomp-dev libnuma-dev gnuplot-nox libck-dev valgrind
spin abigail-tools libgoogle-perftools-dev"
# The kernel itself is fetched by extras/vm/run-vm.sh with apt-get download.
vm_packages="qemu-system-x86 busybox-static cpio"

for arg in "$@"; do
	case $arg in
	--vm) packages="$packages $vm_packages" ;;
	-h|--help)
		sed -n '3,8p' "$0" | sed 's/^# \{0,1\}//'
		exit 0 ;;
	*) echo "install-deps.sh: unknown option $arg" >&2; exit 2 ;;
	esac
done

command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 || {
	echo "install-deps.sh: needs apt-get and dpkg (Debian or Ubuntu);" \
		"install by hand: $packages" >&2
	exit 1
}

missing=
for p in $packages; do
	status=$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = installed ] || missing="$missing $p"
done
[ -n "$missing" ] || exit 0

if [ "$(id -u)" -eq 0 ]; then
	sudo=
elif command -v sudo >/dev/null 2>&1; then
	sudo=sudo
else
	echo "install-deps.sh: not root and no sudo; install as root:$missing" >&2
	exit 1
fi

echo "install-deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
