#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# What a user does after `make install`: configure the source tree with a
# private prefix, install, then build the installed examples with nothing
# but pkg-config (their standalone Makefile) and run them, with glibc's rseq
# registration on and off; read two man pages with man(1); and configure
# the same build tree again with another prefix and install there.
#
# usage: check-install.sh [top_srcdir]      (make check-install)
# About a minute on 2 cores: the library is configured and built afresh.
set -eu
top=$(cd "${1:-${top_srcdir:-.}}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/urcu-rseq-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
start=$(date +%s)

step() { echo "=== check-install: $*"; }

step "configure --prefix=$prefix"
mkdir "$tmp/build"
(cd "$tmp/build" && "$top/configure" --quiet --prefix="$prefix")
step "make install (library, headers, pkg-config, man pages, examples)"
for dir in include src doc; do
	make -s -C "$tmp/build/$dir" -j2 install >/dev/null
done

pkgdir=$prefix/lib/pkgconfig
libdir=$(PKG_CONFIG_PATH=$pkgdir pkg-config --variable=libdir liburcu-rseq)
step "pkg-config --cflags --libs liburcu-rseq: $(PKG_CONFIG_PATH=$pkgdir pkg-config --cflags --libs liburcu-rseq)"

step "build the installed examples with their standalone Makefile"
cp -R "$prefix/share/doc/liburcu-rseq/examples" "$tmp/examples"
PKG_CONFIG_PATH=$pkgdir make -s -C "$tmp/examples" CFLAGS="-O2 -Wall -Wextra -Werror"

step "run them (glibc rseq on)"
PKG_CONFIG_PATH=$pkgdir LD_LIBRARY_PATH=$libdir make -s -C "$tmp/examples" check
step "run them (GLIBC_TUNABLES=glibc.pthread.rseq=0)"
GLIBC_TUNABLES=glibc.pthread.rseq=0 PKG_CONFIG_PATH=$pkgdir LD_LIBRARY_PATH=$libdir \
	make -s -C "$tmp/examples" check

step "run them (URCU_RSEQ_DISABLE=1: every fallback path)"
URCU_RSEQ_DISABLE=1 PKG_CONFIG_PATH=$pkgdir LD_LIBRARY_PATH=$libdir \
	make -s -C "$tmp/examples" check >/dev/null
echo "all examples passed"

step "man pages"
for page in urcu_wait urcu_rseq_fence urcu_percpu_lock_create; do
	MANPATH=$prefix/share/man man -P cat "$page" 2>/dev/null | grep -q . || {
		echo "check-install: man $page shows nothing" >&2
		exit 1
	}
	echo "man $page: ok"
done

# The built tree configured again with another prefix (a user changing
# their mind): libtool refuses .la files linked for the old libdir, so
# they must be relinked, and everything must land in the new prefix.
prefix2=$tmp/prefix2
step "configure --prefix=$prefix2 in the same tree, make install"
(cd "$tmp/build" && "$top/configure" --quiet --prefix="$prefix2")
for dir in include src doc; do
	make -s -C "$tmp/build/$dir" -j2 install >/dev/null
done
for f in lib/liburcu-rseq.so lib/liburcu-rseq-pthread-cond.so \
	lib/pkgconfig/liburcu-rseq.pc include/urcu/cond.h share/man/man3/urcu_wait.3; do
	test -e "$prefix2/$f" || { echo "check-install: $prefix2/$f missing" >&2; exit 1; }
done
grep -q "^libdir='$prefix2/lib'" "$prefix2/lib/liburcu-rseq-pthread-cond.la" || {
	echo "check-install: the preload's .la names another libdir" >&2
	exit 1
}
echo "installed again to another prefix: ok"

echo "check-install: passed in $(( $(date +%s) - start )) s"
