#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# TAP: every file git tracks names its license in an SPDX-License-Identifier
# line within its first 5 lines. Generated files are not tracked, so they
# are not checked; outside a git work tree (a release tarball) the check is
# skipped. Files that cannot carry a comment are listed below.
#
# usage: check-spdx.sh [top_srcdir]
set -u
top=${1:-${top_srcdir:-.}}
exempt=" LICENSE ChangeLog m4/.gitkeep "

if ! command -v git >/dev/null 2>&1 \
		|| ! git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1 \
		|| [ "$(cd "$top" && git rev-parse --show-toplevel)" != "$(cd "$top" && pwd -P)" ]; then
	echo "1..0 # SKIP not a git work tree"
	exit 0
fi

missing=$(cd "$top" && git ls-files | while IFS= read -r f; do
	case $exempt in *" $f "*) continue ;; esac
	[ -f "$f" ] || continue
	head -n 5 -- "$f" | grep -q 'SPDX-License-Identifier:' || echo "$f"
done)

echo "1..1"
if [ -z "$missing" ]; then
	echo "ok 1 - every tracked file has an SPDX-License-Identifier line"
	exit 0
fi
echo "$missing" | sed 's/^/# no SPDX-License-Identifier: /'
echo "not ok 1 - tracked files without an SPDX-License-Identifier line"
exit 1
