#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# TAP: every function and variable a public header exports (URCU_RSEQ_API)
# has a section 3 man page in doc/man, installed through doc/Makefile.am,
# and every page renders without a groff warning.
#
# usage: check-man.sh [top_srcdir]
# Names that are exported only for the inline fast paths are internal and
# need no page: *_slow, and the list below.
set -u
top=${1:-${top_srcdir:-.}}
internal=" urcu_rseq_offset urcu_rseq_gp urcu_rseq_fi_loops urcu_percpu_lock_bad_shard "

names=$(find "$top/include" -name '*.h' -exec cat {} + |
	perl -ne 'print "$1\n" if /\bURCU_RSEQ_API\b.*?\b(urcu_\w+)\s*[(;\[]/' |
	sort -u)
pages=$(cd "$top/doc/man" && ls -- *.3)
listed=$(sed -n 's|^dist_man3_MANS += man/||p' "$top/doc/Makefile.am")

n=0
for name in $names; do
	case $name in *_slow) continue ;; esac
	case $internal in *" $name "*) continue ;; esac
	n=$((n + 1))
done
for page in $pages; do
	n=$((n + 2))
done
echo "1..$n"

i=0
fail=0
result()	# result OK-OR-NOT description
{
	i=$((i + 1))
	if [ "$1" = ok ]; then
		echo "ok $i - $2"
	else
		echo "not ok $i - $2"
		fail=1
	fi
}

for name in $names; do
	case $name in *_slow) continue ;; esac
	case $internal in *" $name "*) continue ;; esac
	if [ -f "$top/doc/man/$name.3" ]; then r=ok; else r=no; fi
	result $r "$name has a man page (doc/man/$name.3)"
done

for page in $pages; do
	case " $(echo $listed) " in
	*" $page "*) r=ok ;;
	*) r=no ;;
	esac
	result $r "$page is installed (dist_man3_MANS += man/$page in doc/Makefile.am)"
	f=$top/doc/man/$page
	target=$(sed -n 's|^\.so man3/||p' "$f")
	if [ -n "$target" ]; then
		if [ -f "$top/doc/man/$target" ]; then r=ok; else r=no; fi
		result $r "$page links to an existing page ($target)"
	elif ! command -v groff >/dev/null 2>&1; then
		i=$((i + 1))
		echo "ok $i # SKIP groff is not installed"
	else
		out=$(groff -man -Tutf8 -ww -z "$f" 2>&1)
		if [ -z "$out" ]; then r=ok; else r=no; echo "$out" | sed 's/^/# /'; fi
		result $r "$page renders without a groff warning"
	fi
done
exit $fail
