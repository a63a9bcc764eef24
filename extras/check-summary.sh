#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The last words of make check: one summary of every test suite it ran
# (each directory's test-suite.log), so that the unit tests' results do
# not scroll away behind the later suites'. Exits non-zero when a suite
# failed.
#
# usage: check-summary.sh DIR...   (directories holding a test-suite.log)
status=0
line="============================================================================"
echo "$line"
echo "make check summary, all suites"
echo "$line"
total_all=0
results="PASS SKIP XFAIL FAIL XPASS ERROR"
for r in $results; do eval "all_$r=0"; done
for dir in "$@"; do
	log=$dir/test-suite.log
	[ -f "$log" ] || continue
	total=$(sed -n 's/^# TOTAL: *//p' "$log" | head -n 1)
	[ -n "$total" ] || continue
	detail=
	for r in $results; do
		n=$(sed -n "s/^# $r: *//p" "$log" | head -n 1)
		n=${n:-0}
		eval "all_$r=\$((all_$r + n))"
		[ "$n" -eq 0 ] || detail="$detail, $r $n"
	done
	total_all=$((total_all + total))
	printf '  %-18s %5d results%s\n' "$dir" "$total" "$detail"
done
echo "$line"
printf '# TOTAL: %d\n' "$total_all"
for r in $results; do
	eval "n=\$all_$r"
	printf '# %-6s %d\n' "$r:" "$n"
done
bad=$((all_FAIL + all_XPASS + all_ERROR))
if [ "$bad" -ne 0 ]; then
	echo "$line"
	for dir in "$@"; do
		[ -f "$dir/test-suite.log" ] || continue
		grep -E '^(FAIL|XPASS|ERROR):' "$dir/test-suite.log" | sed "s|^|  $dir: |"
	done
	echo "See the test-suite.log of each directory named above."
	status=1
fi
echo "$line"
exit "$status"
