#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Model-check every Promela model here exhaustively with spin: each correct
# model (*.pml without _bug in its name) must verify, each mutated model
# (*_bug*.pml, carrying a known bug) must be caught, by an assertion or an
# invalid end state (a thread blocked forever). TAP output.
# Usage: check-models.sh [srcdir]   (needs spin and a C compiler)
# MODELS_FULL=1 also runs wait.pml unbounded (3 waiters, 2 wakers: about
# 32 million states, 3 GB and 2 minutes).
set -u
srcdir=${1:-$(dirname "$0")}
command -v spin >/dev/null 2>&1 || { echo "1..0 # SKIP spin not installed"; exit 0; }
cc=${CC:-cc}
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
cp "$srcdir"/*.pml "$work"/ || exit 1

# check MODEL [SPIN_FLAGS]: 0 verified, 1 violation found, 2 tool failure.
check() {
	cd "$work" || return 2
	rm -f pan pan.* ./*.trail
	spin $2 -a "$1" >spin.log 2>&1 || { cat spin.log; return 2; }
	$cc -O2 -DSAFETY -o pan pan.c >cc.log 2>&1 || { cat cc.log; return 2; }
	./pan -m100000 >pan.log 2>&1
	grep -q "errors: 0" pan.log && ! grep -q "max search depth too small" pan.log \
		&& return 0
	grep -q "errors: [1-9]" pan.log && return 1
	cat pan.log
	return 2
}

models=$(cd "$srcdir" && ls *.pml)
runs=$(echo "$models" | wc -l)
test "${MODELS_FULL:-0}" = 1 && runs=$((runs + 1))
echo "1..$runs"
status=0
n=0
run() {
	n=$((n + 1))
	start=$(date +%s)
	(check "$1" "$2"); r=$?
	t=$(($(date +%s) - start))
	case "$1:$r" in
	*_bug*.pml:1)
		why=$(grep -m1 -o "assertion violated.*\|invalid end state" "$work/pan.log")
		echo "ok $n - $1${2:+ $2}: caught ($why), as it must be (${t}s)" ;;
	*_bug*.pml:*) echo "not ok $n - $1${2:+ $2}: mutant not caught (result $r)"; status=1 ;;
	*:0) echo "ok $n - $1${2:+ $2} verifies: $(grep -m1 -o '[0-9]* states, stored' "$work/pan.log") (${t}s)" ;;
	*) echo "not ok $n - $1${2:+ $2} (result $r)"; grep -m3 "assertion violated\|invalid end state\|error" "$work/pan.log"; status=1 ;;
	esac
}
for m in $models; do
	run "$m" ""
done
test "${MODELS_FULL:-0}" = 1 && run wait.pml "-DNW=3 -DNK=2"
exit $status
