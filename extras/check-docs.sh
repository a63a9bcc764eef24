#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# TAP: the documentation says what the headers export.
# - Each page of doc/ with an "## API" section lists, in that section,
#   every function and variable its header exports (URCU_RSEQ_API).
# - The README and the pages below quote no measured speed (a ratio such
#   as "1.3x" or "0.6-1.0x", a "median of"): such figures belong to the
#   report of `make bench`, which states the machine, the date and the
#   spread; the pages point to its rows instead.
#
# usage: check-docs.sh [top_srcdir]
top=${1:-${top_srcdir:-.}}
. "${TAP_SH:-$top/tests/utils/tap.sh}"
# Exported only for the inline fast paths (as in check-man.sh), and the
# free list's sentinel node.
internal=" urcu_rseq_offset urcu_rseq_reader_offset urcu_rseq_gp urcu_rseq_fi_loops urcu_percpu_lock_bad_shard urcu_percpu_freelist_busy "
plan_no_plan

# header (under include/urcu) and its page (under doc)
for pair in cond.h:cond.md mutex.h:mutex.md wait.h:wait.md rseq.h:rseq.md \
	urcu-rseq.h:urcu-rseq.md percpu/lock.h:percpu-lock.md \
	percpu/pool.h:percpu-pool.md percpu/counter.h:percpu-counter.md \
	percpu/freelist.h:percpu-freelist.md percpu/cache.h:percpu-cache.md; do
	header=$top/include/urcu/${pair%%:*}
	page=$top/doc/${pair#*:}
	api=$(awk '/^## /{on = ($0 ~ /^## API/)} on' "$page")
	[ -n "$api" ] || continue
	for name in $(perl -ne 'print "$1\n" if /\bURCU_RSEQ_API\b.*?\b(urcu_\w+)\s*[(;\[]/' "$header" | sort -u); do
		case $name in *_slow) continue ;; esac
		case $internal in *" $name "*) continue ;; esac
		printf '%s\n' "$api" | grep -qw "$name"
		ok $? "$name is in the API section of doc/${pair#*:}"
	done
done

for page in README.md doc/cond.md doc/urcu-rseq.md doc/wait.md; do
	figures=$(grep -nE '(^|[^[:alnum:]_.])[0-9]+(\.[0-9]+)?(-[0-9]+(\.[0-9]+)?)?x([^[:alnum:]_]|$)|median of' \
		"$top/$page")
	test -z "$figures"
	ok $? "$page quotes no measured ratio or median (make bench's report does)" ||
		printf '%s\n' "$figures" | sed 's/^/# /'
done

tap_finish
