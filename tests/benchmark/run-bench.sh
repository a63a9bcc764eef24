#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run every benchmark program and write OUT/report.md: a machine
# description, one table per group (baseline first), and with gnuplot per
# program: PROG.png, throughput against threads for the groups run at
# several thread counts; PROG-cases.png, ns/op of the groups run at one
# thread count (bars, each group's baseline hatched); PROG-latency.png, the round-trip
# time of every repetition of the groups whose name says rtt or pingpong.
#
# usage: run-bench.sh [--out DIR] [--gnuplot PATH] -- bench_a bench_b ...
# Environment: BENCH_FULL=1 (longer runs), BENCH_FILTER (passed to each
# program as name filters), URCU_RSEQ_BENCH_* (see bench.h).
set -u

out=bench-results
gnuplot=$(command -v gnuplot 2>/dev/null || true)
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--gnuplot) gnuplot=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "run-bench.sh: no benchmark program given" >&2; exit 2; }

mkdir -p "$out/data" || exit 1
tsv=$out/results.tsv
samples=$out/samples.tsv
rm -f "$tsv" "$samples" "$out"/data/*.dat "$out"/*.png "$out"/*.txt
URCU_RSEQ_BENCH_TSV=$tsv
URCU_RSEQ_BENCH_SAMPLES=$samples
export URCU_RSEQ_BENCH_TSV URCU_RSEQ_BENCH_SAMPLES

nprog=$#
i=0
failed=
start=$(date +%s)
for prog in "$@"; do
	i=$((i + 1))
	name=$(basename "$prog")
	echo "[run-bench] program $i/$nprog: $name" >&2
	case $prog in */*) ;; *) prog=./$prog ;; esac
	# shellcheck disable=SC2086
	if ! "$prog" ${BENCH_FILTER:-} > "$out/$name.txt"; then
		failed="$failed $name"
		echo "[run-bench] $name FAILED" >&2
	fi
	cat "$out/$name.txt"
done
elapsed=$(( $(date +%s) - start ))

cpu_model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
[ -n "$cpu_model" ] || cpu_model=$(uname -m)
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo "?")
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null || echo "unknown")
urcu=$(pkg-config --modversion liburcu 2>/dev/null || echo "unknown")
if [ -n "${BENCH_FULL:-}" ] && [ "${BENCH_FULL}" != 0 ]; then mode="full (BENCH_FULL=1)"; else mode="quick"; fi

# Tables: one per program and group, rows in the order they ran.
tables()
{
	awk -F '\t' '
	NR == 1 { next }
	{
		if ($1 != prog) { printf "\n## %s\n", $1; prog = $1; group = "" }
		if ($2 != group) {
			base = ($4 == "-") ? $3 : $4
			printf "\n### %s (baseline: %s)\n\n", $2, base
			print "| case | threads | ns/op | ops/s | baseline | ratio | CPU ns/op |"
			print "|---|---:|---:|---:|---|---:|---:|"
			group = $2
		}
		ratio = ($7 == "nan") ? "n/a" : sprintf("%.2f", $7)
		printf "| %s | %d | %.2f | %.0f | %s | %s | %.2f |\n", \
			$3, $5, $6, $8, ($4 == "-") ? "(is baseline)" : $4, ratio, $9
	}' "$tsv"
}

# Data files: one per program/group/case, "threads ops_s".
plots()
{
	[ -n "$gnuplot" ] && [ -x "$gnuplot" ] || return 0
	awk -F '\t' -v dir="$out/data" '
	NR == 1 { next }
	{
		f = dir "/" $1 "__" $2 "__" $3 ".dat"
		print $5, $8 >> f
		close(f)
	}' "$tsv"
	for prog in $(awk -F '\t' 'NR > 1 { print $1 }' "$tsv" | uniq); do
		# Groups measured at one thread count have no curve: bars below.
		multi=" $(awk -F '\t' -v p="$prog" 'NR > 1 && $1 == p {
				if (!(($2, $5) in seen)) { seen[$2, $5] = 1; n[$2]++ } }
			END { for (g in n) if (n[g] > 1) print g }' "$tsv" | tr '\n' ' ') "
		plot=
		for f in "$out/data/$prog"__*.dat; do
			[ -f "$f" ] || continue
			series=$(basename "$f" .dat)
			series=${series#"$prog"__}
			group=${series%%__*}
			case_=${series#*__}
			case $multi in *" $group "*) ;; *) continue ;; esac
			if awk -F '\t' -v p="$prog" -v g="$group" -v c="$case_" \
				'$1 == p && $2 == g && $3 == c && $4 == "-" { found = 1 }
				END { exit !found }' "$tsv"; then
				style="with linespoints dashtype 2 linewidth 2"
				title="$group/$case_ (baseline)"
			else
				style="with linespoints linewidth 2"
				title="$group/$case_"
			fi
			plot="$plot${plot:+, }'$f' using 1:2 $style title '$title'"
		done
		[ -n "$plot" ] || continue
		"$gnuplot" <<GNUPLOT 2>/dev/null || echo "[run-bench] gnuplot failed for $prog" >&2
set terminal pngcairo size 960,600 noenhanced
set output '$out/$prog.png'
set title '$prog: throughput against threads (higher is better)'
set xlabel 'threads'
set ylabel 'operations per second, all threads'
set logscale x 2
set logscale y 10
set format y '%.0s%c'
set key below
set grid
plot $plot
GNUPLOT
		cases_plot "$prog" "$multi"
		latency_plot "$prog"
	done
}

# Bars: ns/op of each case of the groups run at a single thread count.
cases_plot()
{
	f=$out/data/$1-cases.dat
	awk -F '\t' -v p="$1" -v multi="$2" 'NR > 1 && $1 == p &&
		index(multi, " " $2 " ") == 0 {
		printf "\"%s/%s (%d thr)\" %s %d\n", $2, $3, $5, $6, ($4 == "-")
	}' "$tsv" > "$f"
	[ -s "$f" ] || return 0
	n=$(wc -l < "$f")
	"$gnuplot" <<GNUPLOT 2>/dev/null || echo "[run-bench] gnuplot failed for $1 (cases)" >&2
set terminal pngcairo size $((640 + 56 * n)),760 noenhanced
set output '$out/$1-cases.png'
set title '$1: cost per operation, groups run at one thread count (lower is better)'
set ylabel 'ns per operation (log scale)'
set logscale y 10
set style fill solid 0.8 border -1
set xrange [-0.7:$n - 0.3]
set boxwidth 0.7
set xtics rotate by -40 left
set bmargin 20
set rmargin 36
set grid ytics
set key top left
plot '$f' using 0:(\$3 == 1 ? \$2 : 1/0):xtic(1) with boxes fill pattern 4 lc rgb '#d95f02' title 'group baseline', \
     '' using 0:(\$3 == 0 ? \$2 : 1/0) with boxes lc rgb '#1b9e77' title 'case compared with it'
GNUPLOT
}

# Points: the mean round-trip time of every repetition, per case.
latency_plot()
{
	f=$out/data/$1-latency.dat
	[ -f "$samples" ] || return 0
	awk -F '\t' -v p="$1" '$1 == p && ($2 ~ /rtt|pingpong/) {
		key = $2 "/" $3 " (" $4 " thr)"
		if (!(key in idx)) { idx[key] = n++; print "# " n - 1, key > "/dev/stderr" }
		printf "%d \"%s\" %s\n", idx[key], key, $6
	}' "$samples" > "$f" 2>/dev/null
	[ -s "$f" ] || return 0
	n=$(awk '{ print $1 }' "$f" | sort -un | wc -l)
	"$gnuplot" <<GNUPLOT 2>/dev/null || echo "[run-bench] gnuplot failed for $1 (latency)" >&2
set terminal pngcairo size $((640 + 70 * n)),760 noenhanced
set output '$out/$1-latency.png'
set title '$1: round-trip time, one point per repetition (lower is better)'
set ylabel 'ns per round trip (log scale)'
set logscale y 10
set xrange [-0.5:$n - 0.5]
set xtics rotate by -40 left
set bmargin 20
set rmargin 36
set grid ytics
unset key
plot '$f' using 1:3:xtic(2) with points pointtype 7 pointsize 1.2 lc rgb '#7570b3'
GNUPLOT
}

plots
{
	echo "# liburcu-rseq benchmark report"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
	echo "| CPU | $cpu_model |"
	echo "| CPUs online | $ncpu |"
	echo "| kernel | $(uname -r) ($(uname -m)) |"
	echo "| glibc | $glibc |"
	echo "| liburcu | $urcu |"
	echo "| run | $mode, ${elapsed} s; threads pinned ${URCU_RSEQ_BENCH_PIN:-round-robin} |"
	echo
	echo "ns/op is wall time x threads / operations (per thread);"
	echo "ratio is the baseline's ns/op over the case's at the same thread"
	echo "count in the same run: above 1 is faster than the baseline."
	echo "Medians of the repetitions; CPU ns/op counts user + system time."
	if [ -n "$failed" ]; then
		echo
		echo "**Failed:**$failed"
	fi
	tables
	for png in "$out"/*.png; do
		[ -f "$png" ] || continue
		echo
		echo "![$(basename "$png" .png)]($(basename "$png"))"
	done
} > "$out/report.md"

echo "[run-bench] report: $out/report.md (${elapsed} s)" >&2
# The quick run must stay short enough to run on every change.
if [ "$mode" = quick ]; then
	if [ "$elapsed" -le 180 ]; then
		echo "[run-bench] total ${elapsed} s: within the 3-minute budget of make bench" >&2
	else
		echo "[run-bench] WARNING: total ${elapsed} s exceeds the 3-minute budget of make bench" >&2
	fi
fi
[ -z "$failed" ]
