#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The library's ABI against the reference taken at the last release.
#
# usage: check-abi.sh check  LIB.so INCLUDEDIR ABIDIR
#        check-abi.sh update LIB.so INCLUDEDIR ABIDIR VERSION
#
# check:  compare LIB.so (the build) with ABIDIR/<newest version>/<SONAME>.xml
#         using abidiff; exit non-zero on an incompatible change (a symbol
#         removed, a type or signature changed). Added symbols pass.
# update: write ABIDIR/VERSION/<SONAME>.xml from LIB.so with abidw.
# Only what the public headers in INCLUDEDIR declare is considered.
# Needs abigail-tools (abidw, abidiff) and a library built with -g.
set -u
mode=${1:-}
lib=${2:-}
incdir=${3:-}
abidir=${4:-}
[ -n "$abidir" ] && [ -f "$lib" ] && [ -d "$incdir" ] || {
	echo "usage: $0 check|update LIB.so INCLUDEDIR ABIDIR [VERSION]" >&2
	exit 2
}
for tool in abidw abidiff; do
	command -v $tool >/dev/null 2>&1 || {
		echo "$0: $tool not found (apt-get install abigail-tools)" >&2
		exit 77
	}
done

soname=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ -n "$soname" ] || soname=$(basename "$lib")
abiflags="--headers-dir $incdir --drop-private-types --no-corpus-path --no-comp-dir-path --short-locs"

case $mode in
update)
	version=${5:?"update needs a VERSION"}
	mkdir -p "$abidir/$version" || exit 1
	# shellcheck disable=SC2086
	abidw $abiflags --out-file "$abidir/$version/$soname.xml" "$lib" || exit 1
	echo "wrote $abidir/$version/$soname.xml"
	;;
check)
	ref=
	for dir in $(ls -1 "$abidir" 2>/dev/null | sort -V); do
		[ -f "$abidir/$dir/$soname.xml" ] && ref=$abidir/$dir/$soname.xml
	done
	if [ -z "$ref" ]; then
		echo "$0: no $soname.xml under $abidir (first release? make update-abi)" >&2
		exit 1
	fi
	echo "check-abi: $lib against $ref"
	abidiff --headers-dir2 "$incdir" --drop-private-types "$ref" "$lib"
	status=$?
	# abidiff's status bits: 1 error, 2 usage, 4 change, 8 incompatible change.
	if [ $((status & 11)) -ne 0 ]; then
		echo "check-abi: INCOMPATIBLE ABI change (abidiff status $status): see doc/abi.md" >&2
		exit 1
	fi
	if [ $((status & 4)) -ne 0 ]; then
		echo "check-abi: compatible additions only; run make update-abi at the next release"
	else
		echo "check-abi: no ABI change"
	fi
	;;
*)
	echo "usage: $0 check|update LIB.so INCLUDEDIR ABIDIR [VERSION]" >&2
	exit 2
	;;
esac
