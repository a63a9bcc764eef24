#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every public header compiles alone as strict C99 and as C++11, and every
# name the headers export (URCU_RSEQ_API) links against the built library
# from C and from C++, with and without _LGPL_SOURCE.
#
# The list of public headers is the one in include/Makefile.am
# (nobase_include_HEADERS += ...): a new header is checked as soon as it is
# installed. Environment (set by tests/unit/Makefile.am): CC, CXX, LIBTOOL,
# top_srcdir, top_builddir.
. "${TAP_SH:-$(dirname "$0")/../utils/tap.sh}"

: "${top_srcdir:?}" "${top_builddir:?}" "${CC:=cc}" "${CXX:=c++}" "${LIBTOOL:?}"
headers=$(sed -n 's/^nobase_include_HEADERS += //p' "$top_srcdir/include/Makefile.am")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
inc="-I$top_srcdir/include"
cflags="-std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -pedantic-errors"
cxxflags="-std=c++11 -Wall -Wextra -Werror -pedantic-errors"

# The architecture headers are parts of urcu/rseq/ops.h (which picks one
# and includes it after what they need), not headers of their own.
arch_skip()
{
	case $1 in
	urcu/rseq/arch/*) return 0 ;;
	*) return 1 ;;
	esac
}

# liburcu 0.13's inline wait-free stack (urcu/static/wfstack.h, included by
# urcu/wait.h with _LGPL_SOURCE) converts void * implicitly: not C++.
printf '#define _LGPL_SOURCE\n#include <urcu/wfstack.h>\n' > "$tmp/wfs.cpp"
# shellcheck disable=SC2086
if $CXX $cxxflags -c -o "$tmp/wfs.o" "$tmp/wfs.cpp" >/dev/null 2>&1; then
	lgpl_cxx=yes
else
	lgpl_cxx=
fi

plan_no_plan
for h in $headers; do
	if arch_skip "$h"; then
		skip 2 "$h: part of urcu/rseq/ops.h, not included alone"
		continue
	fi
	printf '#include <%s>\n#include <%s>\nint main(void) { return 0; }\n' \
		"$h" "$h" > "$tmp/one.c"
	cp "$tmp/one.c" "$tmp/one.cpp"
	# shellcheck disable=SC2086
	out=$($CC $cflags $inc -c -o "$tmp/one.o" "$tmp/one.c" 2>&1)
	ok $? "$h: alone, twice, as C99 -pedantic-errors" || diag "$out"
	# shellcheck disable=SC2086
	out=$($CXX $cxxflags $inc -c -o "$tmp/one.o" "$tmp/one.cpp" 2>&1)
	ok $? "$h: alone, twice, as C++11 -pedantic-errors" || diag "$out"
done

# One program taking the address of every exported name.
{
	for h in $headers; do
		arch_skip "$h" || echo "#include <$h>"
	done
	echo "typedef void (*fn_t)(void);"
	echo "int main(void)"
	echo "{"
	echo "	volatile fn_t fns[] = {"
	find "$top_srcdir/include" -name '*.h' -exec cat {} + |
		perl -ne 'print "\t\t(fn_t) $1,\n" if /\bURCU_RSEQ_API\b.*?\b(urcu_\w+)\s*\(/' | sort -u
	echo "	};"
	echo "	const volatile void *vars[] = {"
	find "$top_srcdir/include" -name '*.h' -exec cat {} + |
		perl -ne 'print "\t\t(const void *) &$1,\n" if /\bURCU_RSEQ_API\b.*?\b(urcu_\w+)\s*[;\[]/' | sort -u
	echo "	};"
	echo "	return fns[0] != 0 && vars[0] != 0 ? 0 : 1;"
	echo "}"
} > "$tmp/all.c"
cp "$tmp/all.c" "$tmp/all.cpp"
libs="$top_builddir/src/liburcu-rseq.la -lurcu-common -lpthread"
for lgpl in "" "-D_LGPL_SOURCE"; do
	for lang in c cpp; do
		if [ $lang = c ]; then cc="$CC $cflags"; else cc="$CXX $cxxflags"; fi
		if [ $lang = cpp ] && [ -n "$lgpl" ] && [ -z "$lgpl_cxx" ]; then
			skip 1 "C++ with _LGPL_SOURCE: liburcu's urcu/static/wfstack.h is not C++"
			continue
		fi
		# shellcheck disable=SC2086
		out=$($LIBTOOL --mode=link --tag=CC $cc $lgpl $inc -o "$tmp/all" \
			"$tmp/all.$lang" $libs 2>&1) &&
			out=$($LIBTOOL --mode=execute "$tmp/all" 2>&1)
		ok $? "every exported name links and loads ($lang${lgpl:+ $lgpl})" || diag "$out"
	done
done
tap_finish
