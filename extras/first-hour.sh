#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A new user's first hour, replayed in a fresh Debian root (debootstrap):
# the README's two quick-start commands, make install to /usr/local and a
# program built with the README's pkg-config line that must start (ldconfig
# ran), the same built tree configured again with another prefix and
# installed there, an example built with pkg-config against that prefix,
# man of one page, and git status clean of build products.
#
# usage: extras/first-hour.sh [--suite bookworm] [--root DIR] [--quick]
#   --suite S  Debian suite of the root (default bookworm)
#   --root D   where to build the root (default a temporary directory,
#              removed at the end; an existing root is reused)
#   --quick    skip make bench and make check (the install steps only)
# Needs root, debootstrap and network access to a Debian mirror
# (DEBIAN_MIRROR, default http://deb.debian.org/debian). With make check
# and make bench, 20-40 minutes on 2 cores; --quick, about 10.
set -eu

suite=bookworm
root=
quick=
while [ $# -gt 0 ]; do
	case $1 in
	--suite) suite=$2; shift 2 ;;
	--root) root=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	-h|--help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "first-hour.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "first-hour.sh: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null 2>&1 ||
	{ echo "first-hour.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
temp_root=
if [ -z "$root" ]; then
	root=$(mktemp -d "${TMPDIR:-/tmp}/first-hour.XXXXXX")
	temp_root=1
fi
cleanup()
{
	for m in dev/pts dev proc sys; do
		umount "$root/$m" 2>/dev/null || true
	done
	[ -z "$temp_root" ] || rm -rf "$root"
}
trap cleanup EXIT

step() { echo "=== first-hour: $*" >&2; }

if [ ! -x "$root/bin/sh" ]; then
	step "debootstrap $suite into $root"
	debootstrap --variant=minbase --include=git,ca-certificates,sudo \
		"$suite" "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >/dev/null
fi
for m in proc sys dev dev/pts; do
	mount --bind "/$m" "$root/$m"
done
cp /etc/resolv.conf "$root/etc/resolv.conf"

step "a git checkout of this tree's HEAD in /home/user/liburcu-rseq"
rm -rf "$root/home/user/liburcu-rseq"
mkdir -p "$root/home/user"
git -C "$top" archive --format=tar --prefix=liburcu-rseq/ HEAD | tar -x -C "$root/home/user"
chroot "$root" sh -c 'cd /home/user/liburcu-rseq && git init -q && git add -A &&
	git -c user.name=u -c user.email=u@localhost commit -qm checkout'

in_root()
{
	chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root TERM=dumb sh -ec "cd /home/user/liburcu-rseq && $1"
}

if [ -n "$quick" ]; then
	step "README command 1 without make bench"
	in_root 'extras/install-deps.sh && ./bootstrap && ./configure && make -j2'
else
	step "README command 1"
	in_root 'extras/install-deps.sh && ./bootstrap && ./configure && make -j2 && make bench'
	step "README command 2"
	in_root 'make check'
fi

step "make install to /usr/local, then a program built with pkg-config starts"
in_root 'make install >/dev/null &&
	cc -o /tmp/rseq_cpu doc/examples/rseq_cpu.c $(pkg-config --cflags --libs liburcu-rseq) &&
	/tmp/rseq_cpu'

step "configure the same tree with --prefix=/opt/u, make install"
in_root './configure --quiet --prefix=/opt/u && make install >/dev/null &&
	test -e /opt/u/lib/liburcu-rseq-pthread-cond.so &&
	test -e /opt/u/lib/pkgconfig/liburcu-rseq.pc'

step "an example built with pkg-config against /opt/u"
in_root 'export PKG_CONFIG_PATH=/opt/u/lib/pkgconfig &&
	cc -o /tmp/threadpool doc/examples/threadpool.c $(pkg-config --cflags --libs liburcu-rseq) &&
	LD_LIBRARY_PATH=/opt/u/lib /tmp/threadpool'

step "man urcu_cond_wait"
in_root 'man -P cat urcu_cond_wait | grep -q urcu_cond_wait'

step "git status: no untracked build products"
in_root 'test -z "$(git status --porcelain --untracked-files=all | grep "^??")" ||
	{ git status --short | grep "^??"; exit 1; }'

step "passed"
