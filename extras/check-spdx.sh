#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# TAP: every file git tracks names its license in an SPDX-License-Identifier
# line within its first 5 lines. Generated files are not tracked, so they
# are not checked; outside a git work tree (a release tarball) the check is
# skipped. Files that cannot carry a comment are listed below.
#
# usage: check-spdx.sh [top_srcdir]
top=${1:-${top_srcdir:-.}}
. "${TAP_SH:-$top/tests/utils/tap.sh}"
# debian/changelog and debian/source/format have no comment syntax;
# debian/copyright is itself the licence statement, like LICENSE.
exempt=" LICENSE ChangeLog m4/.gitkeep debian/changelog debian/copyright debian/source/format "
# Written by abidw (make update-abi): no comment can survive regeneration.
generated="extras/abi/*.xml"

if ! command -v git >/dev/null 2>&1 \
		|| [ "$(git -C "$top" rev-parse --show-toplevel 2>/dev/null)" != "$(cd "$top" && pwd -P)" ]; then
	skip_all "not a git work tree"
fi

missing=$(cd "$top" && git ls-files | while IFS= read -r f; do
	case $exempt in *" $f "*) continue ;; esac
	# shellcheck disable=SC2254
	case $f in $generated) continue ;; esac
	[ -f "$f" ] || continue
	head -n 5 -- "$f" | grep -q 'SPDX-License-Identifier:' || echo "$f"
done)

plan 1
[ -n "$missing" ] && diag "$(echo "$missing" | sed 's/^/no SPDX-License-Identifier: /')"
test -z "$missing"
ok $? "every tracked file has an SPDX-License-Identifier line"
tap_finish
