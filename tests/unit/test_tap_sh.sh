#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The shell TAP producer, as shell tests use it.
. "${TAP_SH:-$(dirname "$0")/../utils/tap.sh}"

plan 4
true
ok $? "a command's status passes"
out=$( (ok 1 "inner") ; true)
case $out in
"not ok "*" - inner") ok 0 "a non-zero status is reported as not ok" ;;
*) ok 1 "a non-zero status is reported as not ok (got: $out)" ;;
esac
diag "diag lines are comments"
skip 1 "skips count as passes"
out=$(sh -c ". '${TAP_SH:-$(dirname "$0")/../utils/tap.sh}'; plan 2; ok 0 x; tap_finish")
test $? -ne 0 && test -n "$out"
ok $? "tap_finish fails a short plan"
tap_finish
