#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# TAP: every function and variable a public header exports (URCU_RSEQ_API)
# has a section 3 man page in doc/man, installed through doc/Makefile.am,
# and every page renders without a groff warning.
#
# usage: check-man.sh [top_srcdir]
# Names exported only for the inline fast paths are internal and need no
# page: *_slow, and the list below.
top=${1:-${top_srcdir:-.}}
. "${TAP_SH:-$top/tests/utils/tap.sh}"
internal=" urcu_rseq_offset urcu_rseq_reader_offset urcu_rseq_gp urcu_rseq_fi_loops urcu_percpu_lock_bad_shard "

names=$(find "$top/include" -name '*.h' -exec cat {} + |
	perl -ne 'print "$1\n" if /\bURCU_RSEQ_API\b.*?\b(urcu_\w+)\s*[(;\[]/' |
	sort -u)
listed=" $(sed -n 's|^dist_man3_MANS += man/||p' "$top/doc/Makefile.am" | tr '\n' ' ') "
plan_no_plan

for name in $names; do
	case $name in *_slow) continue ;; esac
	case $internal in *" $name "*) continue ;; esac
	test -f "$top/doc/man/$name.3"
	ok $? "$name has a man page (doc/man/$name.3)"
done

for f in "$top"/doc/man/*.3; do
	page=$(basename "$f")
	case $listed in *" $page "*) r=0 ;; *) r=1 ;; esac
	ok $r "$page is installed (dist_man3_MANS += man/$page in doc/Makefile.am)"
	target=$(sed -n 's|^\.so man3/||p' "$f")
	if [ -n "$target" ]; then
		test -f "$top/doc/man/$target"
		ok $? "$page links to an existing page ($target)"
	elif ! command -v groff >/dev/null 2>&1; then
		skip 1 "groff is not installed"
	else
		out=$(groff -man -Tutf8 -ww -z "$f" 2>&1)
		[ -n "$out" ] && diag "$out"
		test -z "$out"
		ok $? "$page renders without a groff warning"
	fi
done
tap_finish
