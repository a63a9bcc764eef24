#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Model-check the per-CPU spinlock protocol with spin: the correct model
# must verify, each mutated model (*_bug*.pml) must be caught.
# Usage: check-models.sh [srcdir]   (needs spin and a C compiler)
set -u
srcdir=${1:-$(dirname "$0")}
command -v spin >/dev/null 2>&1 || { echo "1..0 # SKIP spin not installed"; exit 0; }
cc=${CC:-cc}
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT

# 0: no assertion violation, 1: violation found, 2: tool failure.
check() {
	cp "$srcdir"/percpu_lock*.pml "$work"/ && cd "$work" || return 2
	rm -f pan pan.* ./*.trail
	spin -a "$1" >spin.log 2>&1 || { cat spin.log; return 2; }
	$cc -O2 -DSAFETY -o pan pan.c >cc.log 2>&1 || { cat cc.log; return 2; }
	./pan -m100000 >pan.log 2>&1
	grep -q "errors: 0" pan.log && return 0
	grep -q "assertion violated" pan.log && return 1
	cat pan.log
	return 2
}

echo "1..3"
status=0
n=0
for m in percpu_lock.pml percpu_lock_bug.pml percpu_lock_bug_early.pml; do
	n=$((n + 1))
	(check "$m"); r=$?
	case "$m:$r" in
	percpu_lock.pml:0) echo "ok $n - $m verifies" ;;
	*_bug*.pml:1) echo "ok $n - $m: violation found, as it must be" ;;
	*) echo "not ok $n - $m (result $r)"; status=1 ;;
	esac
done
exit $status
