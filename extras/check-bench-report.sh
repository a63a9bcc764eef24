#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# TAP: tests/benchmark/run-bench.sh --report-only on a small made-up run
# (no benchmark runs): the report names its files, carries the programs'
# memory results, gives the spread of each median, and puts each group's
# plot in the group's section; the plots are written (with gnuplot) and
# the bar plots of groups without a baseline name none.
#
# usage: check-bench-report.sh [top_srcdir]
top=${1:-${top_srcdir:-.}}
. "${TAP_SH:-$top/tests/utils/tap.sh}"
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-report.XXXXXX")
trap 'rm -rf "$out"' EXIT
plan_no_plan

t=$(printf '\t')
{
	echo "program${t}group${t}case${t}baseline${t}threads${t}ns_op${t}ratio${t}ops_s${t}cpu_ns_op${t}reps${t}ms${t}pin"
	for th in 1 2 4; do
		echo "bench_x${t}lock${t}pthread${t}-${t}$th${t}10.0${t}1.000${t}100000000${t}9.0${t}3${t}50${t}rr"
		echo "bench_x${t}lock${t}urcu${t}pthread${t}$th${t}5.0${t}2.000${t}200000000${t}4.0${t}3${t}50${t}rr"
	done
	echo "bench_x${t}ceiling${t}no_lock${t}none${t}1${t}2.0${t}nan${t}500000000${t}2.0${t}3${t}50${t}rr"
	echo "bench_x${t}ceiling${t}no_work${t}none${t}1${t}1.0${t}nan${t}900000000${t}1.0${t}3${t}50${t}rr"
	# Newer lines go on with latency, fairness and the busy-machine mark.
	echo "bench_x${t}lock_busy${t}pthread${t}-${t}2${t}20.0${t}1.000${t}50000000${t}9.0${t}3${t}50${t}rr${t}120${t}900${t}5000${t}0.998${t}0.950${t}hog"
	echo "bench_x${t}lock_busy${t}urcu${t}pthread${t}2${t}10.0${t}2.000${t}100000000${t}4.0${t}3${t}50${t}rr${t}-${t}-${t}-${t}0.500${t}0.010${t}hog"
	echo "bench_x${t}lock_busy${t}pthread${t}-${t}4${t}20.0${t}1.000${t}50000000${t}9.0${t}3${t}50${t}rr${t}150${t}990${t}6000${t}0.998${t}0.950${t}hog"
} > "$out/results.tsv"
{
	for th in 1 2 4; do
		for r in 0 1 2; do
			echo "bench_x${t}lock${t}pthread${t}$th${t}$r${t}$((9 + r)).0"
			echo "bench_x${t}lock${t}urcu${t}$th${t}$r${t}$((4 + r)).5"
		done
	done
} > "$out/samples.tsv"
printf '# mode: test\nmemory urcu_x 100 counters 8 KiB resident 88.0 bytes/counter\n' > "$out/bench_x.txt"

gnuplot=$(command -v gnuplot 2>/dev/null || true)
sh "$top/tests/benchmark/run-bench.sh" --out "$out" --gnuplot "$gnuplot" --report-only 2>/dev/null
ok $? "run-bench.sh --report-only succeeds"
report=$out/report.md
for f in results.tsv samples.tsv PROGRAM.txt; do
	grep -q "\`$f\`" "$report"
	ok $? "the report names $f"
done
grep -q '^memory urcu_x 100 counters' "$report"
ok $? "the report carries the memory results"
grep -q '| urcu | 2 | 5.00 | 4.50-6.50 |' "$report"
ok $? "each median comes with the spread of its repetitions"
grep -q '^no baseline' "$report" && ! grep -q 'no_lock (baseline)' "$report"
ok $? "a group whose baseline is none of its cases is said to have none"
grep -q '| pthread (baseline) | 2 | 20.00 | n/a | 50000000 | 1.00 | 9.00 | 120 / 900 / 5000 | 1.00, 0.95 | 3 |' "$report" &&
	grep -q '| urcu | 2 | 10.00 | n/a | 100000000 | 2.00 | 4.00 | - | 0.50, 0.01 | 3 |' "$report"
ok $? "latency percentiles and fairness are in the table, where measured"
awk '/^### lock_busy/ { s = 1; next } /^### / { s = 0 } s && /every CPU busy/ { found = 1 }
	END { exit !found }' "$report"
ok $? "a busy-machine group says so"
grep -q '| pthread (baseline) | 1 | 10.00 | 9.00-11.00 |.* | - | - | 3 |' "$report"
ok $? "lines without the new columns read as not measured"
if [ -n "$gnuplot" ]; then
	# The group's plot comes after its table and before the next section.
	awk '/^### lock/ { s = 1; next } /^#/ { s = 0 } s && /!\[bench_x-lock.png\]/ { found = 1 }
		END { exit !found }' "$report"
	ok $? "the lock group's plot is in its section"
	test -s "$out/bench_x-lock.png" && test -s "$out/bench_x-cases.png"
	ok $? "the plots are written"
	test -s "$out/data/bench_x-cases.dat" &&
		! grep -q 'baseline' "$out/data/bench_x-cases.dat"
	ok $? "a group without a baseline has none in its bars"
else
	skip 3 "gnuplot is not installed"
fi
tap_finish
