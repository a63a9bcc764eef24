#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# A program built without _LGPL_SOURCE, as a non-LGPL user builds one, with
# nothing but what the pkg-config module liburcu-rseq says: it must link
# and run, and must not load liburcu.so or liburcu-memb.so (another flavor,
# with its own constructor). Also linked with the bare
# `-lurcu-rseq -lurcu-common`. The library and its module are installed
# into a private DESTDIR first (a few seconds).
# Environment (set by tests/unit/Makefile.am): CC, top_srcdir, top_builddir,
# and BUILD_CFLAGS, BUILD_LDFLAGS: the library's own (a sanitizer's flags
# must build the program too, or it does not run against the library).
. "${TAP_SH:-$(dirname "$0")/../utils/tap.sh}"

: "${top_srcdir:?}" "${top_builddir:?}" "${CC:=cc}" "${BUILD_CFLAGS=}" "${BUILD_LDFLAGS=}"
command -v pkg-config >/dev/null 2>&1 || skip_all "no pkg-config"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

plan 6
out=$(make -s -C "$top_builddir/src" install DESTDIR="$tmp/dest" 2>&1 &&
	make -s -C "$top_builddir/include" install DESTDIR="$tmp/dest" 2>&1)
ok $? "install into a DESTDIR" || { diag "$out"; bail_out "no install"; }
pc=$(find "$tmp/dest" -name liburcu-rseq.pc | head -n 1)
prefix=$(sed -n 's/^prefix=//p' "$pc")
# The module as installed, moved under DESTDIR (liburcu's stays put).
mkdir "$tmp/pc"
sed "s|^prefix=.*|prefix=$tmp/dest$prefix|" "$pc" > "$tmp/pc/liburcu-rseq.pc"
pkg()
{
	PKG_CONFIG_PATH=$tmp/pc pkg-config "$@" liburcu-rseq
}
libdir=$(pkg --variable=libdir)

cat > "$tmp/prog.c" <<'PROG'
#include <stdio.h>
#include <stdlib.h>
#include <urcu-rseq.h>

struct obj {
	struct rcu_head head;
	int v;
};

static struct obj *shared;
static int freed;

/*
 * liburcu 0.15.7's rcu_dereference() calls this one (with the pointer's
 * address); older headers do not declare it. Called here directly so that
 * every liburcu checks it is exported.
 */
extern void *rcu_dereference_sym2(void **p);

static void obj_free(struct rcu_head *h)
{
	free(caa_container_of(h, struct obj, head));
	freed++;
}

static void obj_free_defer(void *p)
{
	free(p);
	freed++;
}

static struct obj *obj_new(int v)
{
	struct obj *o = malloc(sizeof(*o));

	if (!o)
		exit(2);
	o->v = v;
	return o;
}

int main(void)
{
	struct obj *o, *old;
	int v;

	rcu_assign_pointer(shared, obj_new(1));
	rcu_read_lock();
	o = rcu_dereference(shared);
	v = o->v;
	if (rcu_dereference_sym2((void **) &shared) != o)
		v = -1;
	rcu_read_unlock();
	old = rcu_xchg_pointer(&shared, obj_new(2));
	call_rcu(&old->head, obj_free);
	old = rcu_cmpxchg_pointer(&shared, shared, obj_new(3));
	defer_rcu(obj_free_defer, old);
	old = shared;
	rcu_set_pointer(&shared, NULL);
	synchronize_rcu();
	free(old);
	rcu_barrier();
	rcu_defer_barrier();
	printf("%d %d\n", v, freed);
	return v == 1 && freed == 2 ? 0 : 1;
}
PROG

# shellcheck disable=SC2046
out=$($CC $BUILD_CFLAGS -o "$tmp/prog" "$tmp/prog.c" $(pkg --cflags) \
	$BUILD_LDFLAGS $(pkg --libs) 2>&1)
ok $? "no _LGPL_SOURCE: links with \`pkg-config --cflags --libs" \
	"liburcu-rseq\` ($(pkg --libs))" || diag "$out"
needed=$(readelf -d "$tmp/prog" 2>/dev/null | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p')
case " $(echo $needed) " in
*" liburcu.so."* | *" liburcu-memb.so."*) r=1 ;;
*) r=0 ;;
esac
ok $r "and needs neither liburcu.so nor liburcu-memb.so:" $needed
out=$(LD_LIBRARY_PATH=$libdir "$tmp/prog" 2>&1)
ok $? "and runs: read (both rcu_dereference_sym forms), xchg, cmpxchg, call_rcu, defer_rcu ($out)" ||
	diag "$out"

# shellcheck disable=SC2046
out=$($CC $BUILD_CFLAGS -o "$tmp/prog2" "$tmp/prog.c" $(pkg --cflags) \
	$BUILD_LDFLAGS -L"$libdir" -lurcu-rseq -lurcu-common 2>&1)
ok $? "no _LGPL_SOURCE: links with -lurcu-rseq -lurcu-common" || diag "$out"
out=$(LD_LIBRARY_PATH=$libdir "$tmp/prog2" 2>&1)
ok $? "and runs ($out)" || diag "$out"
tap_finish
