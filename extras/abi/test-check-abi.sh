#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-abi.sh must fail on every break doc/abi.md lists and pass on
# additions: a two-function library is built once as the reference, then
# again with one change at a time, and check-abi.sh judges each build.
# With LIB.so (the real library) and its INCLUDEDIR, its own ABI is also
# checked against references patched to another layout of a public
# structure: a fresh dump, and the stored reference under ABIDIR.
#
# usage: test-check-abi.sh [LIB.so INCLUDEDIR [ABIDIR]]     (TAP on stdout)
#        (or ABI_LIB, ABI_INCLUDE, ABI_DIR in the environment: make check)
set -u
here=$(cd "$(dirname "$0")" && pwd)
check() { sh "$here/check-abi.sh" "$@"; }
cc=${CC:-cc}
for tool in abidw abidiff readelf; do
	command -v $tool >/dev/null 2>&1 || {
		echo "1..0 # SKIP $tool not found (apt-get install abigail-tools)"
		exit 0
	}
done

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
		sed 's/^/# /' "$tmp/out"
	fi
}

# The library, with VARIANT selecting one change; the header of a
# dependency (the role liburcu plays) lives outside the public headers.
mkdir -p "$tmp/inc/t" "$tmp/dep"
cat >"$tmp/dep/dep.h" <<'EOF'
struct dep_ops {
	void (*a)(void);
	void (*b)(void);
#if VARIANT == 10
	void (*c)(void);	/* the dependency grew its own structure */
#endif
};
EOF
cat >"$tmp/inc/t/t.h" <<'EOF'
#include <stdint.h>
#include "dep.h"

struct t_obj {
#if VARIANT == 5
	void *p;		/* members reordered */
	int32_t a;
	int32_t b;
#else
	int32_t a;
#if VARIANT == 4
	uint32_t pad_use;	/* inserted into padding: same size */
#endif
	void *p;
	int32_t b;
#endif
#if VARIANT == 3
	int32_t grown;		/* added at the end: bigger */
#endif
}
#if VARIANT == 11
__attribute__((aligned(64)))
#endif
;

/* Read only by an inline function: no exported function reaches it. */
struct t_inline {
	long x;
#if VARIANT == 9
	long inserted;
#endif
	long y;
};

static inline long t_inline_y(const struct t_inline *i) { return i->y; }

#if VARIANT == 2
struct t_new { int n; };	/* a new public structure */
int t_new_get(struct t_new *n);
#endif

#if VARIANT == 8
int t_get(const struct t_obj *o, int which);	/* a parameter added */
#else
int t_get(const struct t_obj *o);
#endif
#if VARIANT != 7
void t_set(struct t_obj *o, int v);		/* 7: removed */
#endif
#if VARIANT == 1
void t_added(struct t_obj *o);
#endif
extern const struct dep_ops t_ops;
EOF
cat >"$tmp/t.c" <<'EOF'
#include "t.h"

__attribute__((visibility("hidden"))) struct t_inline t_state;
static void nop(void) { }
const struct dep_ops t_ops = { nop, nop };
#if VARIANT == 8
int t_get(const struct t_obj *o, int which) { return which ? o->b : o->a; }
#else
int t_get(const struct t_obj *o) { return o->a + (int) t_state.y; }
#endif
#if VARIANT != 7
void t_set(struct t_obj *o, int v) { o->a = v; }
#endif
#if VARIANT == 1
void t_added(struct t_obj *o) { o->b = 0; }
#endif
#if VARIANT == 2
int t_new_get(struct t_new *n) { return n->n; }
#endif
EOF

build() {
	$cc -g -O2 -shared -fPIC -DVARIANT="$1" -I"$tmp/inc/t" -I"$tmp/dep" \
		-Wl,-soname,libt.so.1 -o "$tmp/libt.so" "$tmp/t.c"
}

judge() {	# VARIANT EXPECTED-STATUS WHAT
	if ! build "$1" >"$tmp/out" 2>&1; then
		ok 1 "variant $1 builds"
		return
	fi
	check check "$tmp/libt.so" "$tmp/inc" "$tmp/abi" >"$tmp/out" 2>&1
	st=$?
	[ "$st" -eq "$2" ]
	ok $? "$3 (check-abi.sh exits $st, expected $2)"
}

build 0 >"$tmp/out" 2>&1
ok $? "reference library builds"
check update "$tmp/libt.so" "$tmp/inc" "$tmp/abi" 1.0 >"$tmp/out" 2>&1
ok $? "check-abi.sh update writes the reference"

judge 0 0 "the same library passes"
judge 1 0 "an added function passes"
judge 2 0 "an added structure type and function pass"
judge 10 0 "a dependency's own structure grown passes (not ours)"
judge 3 1 "a public structure grown at its end fails"
judge 4 1 "a member inserted into padding (same size) fails"
judge 5 1 "members reordered (offsets moved, same size) fails"
judge 11 1 "a public structure's alignment changed fails"
judge 9 1 "a structure only an inline function reads, changed, fails"
judge 7 1 "a removed function fails"
judge 8 1 "a changed signature fails"

# update: a break of a released reference is refused for the next
# version; the unreleased version's own reference is rewritten.
build 3 >"$tmp/out" 2>&1
check update "$tmp/libt.so" "$tmp/inc" "$tmp/abi" 1.1 >"$tmp/out" 2>&1
[ $? -eq 1 ] && [ ! -e "$tmp/abi/1.1/libt.so.1.xml" ]
ok $? "update refuses to record a break of 1.0 as 1.1 (same soname)"
cp -r "$tmp/abi" "$tmp/abi-rewrite"
check update "$tmp/libt.so" "$tmp/inc" "$tmp/abi-rewrite" 1.0 >"$tmp/out" 2>&1
ok $? "update rewrites the reference of the version being developed"

# A new soname has no reference until one is written on purpose.
$cc -g -O2 -shared -fPIC -DVARIANT=0 -I"$tmp/inc/t" -I"$tmp/dep" \
	-Wl,-soname,libt.so.2 -o "$tmp/libt.so" "$tmp/t.c" >"$tmp/out" 2>&1
check check "$tmp/libt.so" "$tmp/inc" "$tmp/abi" >"$tmp/out" 2>&1
[ $? -eq 1 ]
ok $? "a soname without a reference fails"

# The real library against references of its own ABI with one public
# structure in another layout: another size, one member at another offset.
# First a dump this abidw writes, then the stored reference that make
# check-abi uses (abidiff may read that one another way: an older ABIXML
# format is compared with the library itself).
patch_size() {	# XML: struct urcu_percpu_lock ... size-in-bits='N'
	# Newer abidw also writes a hash of each type, which would hide the
	# change: drop it on the patched line.
	sed "/<class-decl name='urcu_percpu_lock' /{
		s/size-in-bits='[0-9]*'/size-in-bits='4096'/
		s/ hash='[^']*'//
	}" "$1"
}
patch_offset() {	# XML: the last member of struct urcu_wait_node moved
	awk '
		/<class-decl name=.urcu_wait_node. / {
			in_node = 1
			sub(/ hash=.[0-9a-f]*./, "")
		}
		in_node && /<\/class-decl>/ { in_node = 0 }
		in_node && /layout-offset-in-bits/ { last = NR }
		{ line[NR] = $0 }
		END {
			for (i = 1; i <= NR; i++) {
				if (i == last)
					sub(/layout-offset-in-bits=.[0-9]*/,
						"&0", line[i])
				print line[i]
			}
		}' "$1"
}
patched() {	# WHICH XML LABEL
	rm -rf "$tmp/patched"
	mkdir -p "$tmp/patched/0"
	patch_$1 "$2" >"$tmp/patched/0/$soname.xml"
	! cmp -s "$2" "$tmp/patched/0/$soname.xml"
	ok $? "$3: reference patched ($1 of a public structure)"
	check check "$lib" "$inc" "$tmp/patched" >"$tmp/out" 2>&1
	[ $? -eq 1 ]
	ok $? "$3: $soname fails against it"
}

lib=${1:-${ABI_LIB:-}}
inc=${2:-${ABI_INCLUDE:-}}
abidir=${3:-${ABI_DIR:-}}
if [ -n "$lib" ] && [ -f "$lib" ] && [ -n "$inc" ] && [ -d "$inc" ]; then
	soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
	check update "$lib" "$inc" "$tmp/real" 0 >"$tmp/out" 2>&1
	ok $? "dump of $soname"
	check check "$lib" "$inc" "$tmp/real" >"$tmp/out" 2>&1
	ok $? "$soname passes against its own dump"
	patched size "$tmp/real/0/$soname.xml" "dump"
	patched offset "$tmp/real/0/$soname.xml" "dump"

	ref=
	for dir in $(ls -1 "$abidir" 2>/dev/null | sort -V); do
		[ -f "$abidir/$dir/$soname.xml" ] && ref=$abidir/$dir/$soname.xml
	done
	if [ -z "$ref" ]; then
		echo "# no stored reference for $soname under '$abidir'"
	elif ! check check "$lib" "$inc" "$abidir" >"$tmp/out" 2>&1; then
		echo "# $soname differs from $ref already: make check-abi says how"
	else
		patched size "$ref" "stored reference"
		patched offset "$ref" "stored reference"
	fi
fi

echo "1..$n"
[ "$failed" -eq 0 ]
