#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run every benchmark program and write OUT/report.md: the machine, the
# date and the files written; then per program its notes and memory results
# (from its terminal output), one table per group (baseline first, the
# median and the spread of the repetitions) and, with gnuplot, its plots in
# their sections: PROG-GROUP.png, throughput against threads of a group run
# at several thread counts (under its table); PROG-cases.png, ns/op of the
# groups run at one thread count (bars, baselines hatched);
# PROG-latency.png, the round-trip time of every repetition of the groups
# whose name says rtt or pingpong.
#
# usage: run-bench.sh [--out DIR] [--gnuplot PATH] -- bench_a bench_b ...
#        run-bench.sh [--out DIR] [--gnuplot PATH] --report-only
#   --report-only  write the plots and report.md again from OUT's files
# Environment: BENCH_FULL=1 (longer runs), BENCH_FILTER (passed to each
# program as name filters), URCU_RSEQ_BENCH_* (see bench.h).
set -u

out=bench-results
report_only=
gnuplot=$(command -v gnuplot 2>/dev/null || true)
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--gnuplot) gnuplot=$2; shift 2 ;;
	--report-only) report_only=1; shift ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || [ -n "$report_only" ] ||
	{ echo "run-bench.sh: no benchmark program given" >&2; exit 2; }

mkdir -p "$out/data" || exit 1
tsv=$out/results.tsv
samples=$out/samples.tsv
info=$out/run.info
rm -f "$out"/data/*.dat "$out"/*.png
[ -n "$report_only" ] || rm -f "$tsv" "$samples" "$info" "$out"/*.txt
URCU_RSEQ_BENCH_TSV=$tsv
URCU_RSEQ_BENCH_SAMPLES=$samples
export URCU_RSEQ_BENCH_TSV URCU_RSEQ_BENCH_SAMPLES

nprog=$#
i=0
failed=
start=$(date +%s)
[ -z "$report_only" ] || set --
for prog in "$@"; do
	i=$((i + 1))
	name=$(basename "$prog")
	echo "[run-bench] program $i/$nprog: $name" >&2
	case $prog in */*) ;; *) prog=./$prog ;; esac
	# shellcheck disable=SC2086
	prog_start=$(date +%s)
	if ! "$prog" ${BENCH_FILTER:-} > "$out/$name.txt"; then
		failed="$failed $name"
		echo "[run-bench] $name FAILED" >&2
	fi
	cat "$out/$name.txt"
	echo "[run-bench] $name: $(( $(date +%s) - prog_start )) s" >&2
done
elapsed=$(( $(date +%s) - start ))
if [ -n "$report_only" ]; then
	elapsed=
	date=
	[ -s "$tsv" ] || { echo "run-bench.sh: no $tsv to report on" >&2; exit 2; }
	# shellcheck disable=SC1090
	[ -f "$info" ] && . "$info"
else
	{
		echo "elapsed=$elapsed"
		echo "failed='$failed'"
		echo "date='$(date -u '+%Y-%m-%d %H:%M UTC')'"
	} > "$info"
	date=$(date -u '+%Y-%m-%d %H:%M UTC')
fi

cpu_model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
[ -n "$cpu_model" ] || cpu_model=$(uname -m)
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo "?")
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null || echo "unknown")
urcu=$(pkg-config --modversion liburcu 2>/dev/null || echo "unknown")
if [ -n "${BENCH_FULL:-}" ] && [ "${BENCH_FULL}" != 0 ]; then mode="full (BENCH_FULL=1)"; else mode="quick"; fi

# A name usable in a file name: letters, digits, '_' and '-' only.
file_name()
{
	printf '%s' "$1" | tr -c 'A-Za-z0-9_-' '_'
}

# The groups of program $1 measured at several thread counts, one a line.
multi_groups()
{
	awk -F '\t' -v p="$1" 'NR > 1 && $1 == p {
			if (!(($2, $5) in seen)) { seen[$2, $5] = 1; n[$2]++ } }
		END { for (g in n) if (n[g] > 1) print g }' "$tsv"
}

# Table of group $2 of program $1: median ns/op and the spread of the
# repetitions (min-max, from samples.tsv) at each thread count.
table()
{
	awk -F '\t' -v p="$1" -v g="$2" '
	FILENAME == ARGV[1] {
		if ($1 != p || $2 != g) next
		k = $3 SUBSEP $4
		if (!(k in lo) || $6 + 0 < lo[k]) lo[k] = $6 + 0
		if (!(k in hi) || $6 + 0 > hi[k]) hi[k] = $6 + 0
		next
	}
	FNR == 1 { pass++ }
	# The group compares its cases only when the baseline it names is one
	# of them (the "ceiling" groups name "none").
	pass == 1 { if ($1 == p && $2 == g) { is_case[$3] = 1; if ($4 != "-") named = $4 }; next }
	FNR == 1 && pass == 2 { compared = (named in is_case) }
	FNR == 1 || $1 != p || $2 != g { next }
	{
		if (!started) {
			base = ($4 == "-") ? $3 : $4
			if (compared)
				printf "\nbaseline: %s\n\n", base
			else
				printf "\nno baseline: each case stands alone\n\n"
			if ($18 == "hog")
				printf "every CPU busy: one spinning process per CPU next to the benchmark\n\n"
			print "| case | threads | ns/op (median) | spread ns/op (min-max) | ops/s | ratio | CPU ns/op | p50 / p99 / max latency ns | fairness (Jain, min share) | reps |"
			print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
			started = 1
		}
		k = $3 SUBSEP $5
		spread = (k in lo) ? sprintf("%.2f-%.2f", lo[k], hi[k]) : "n/a"
		ratio = ($7 == "nan") ? "n/a" : sprintf("%.2f", $7)
		name = ($4 == "-" && compared) ? $3 " (baseline)" : $3
		# Columns 13-18 (latency, fairness, hog) are absent from older files.
		lat = ($13 == "" || $13 == "-") ? "-" : sprintf("%d / %d / %d", $13, $14, $15)
		fair = ($16 == "") ? "-" : sprintf("%.2f, %.2f", $16, $17)
		printf "| %s | %d | %.2f | %s | %.0f | %s | %.2f | %s | %s | %s |\n", \
			name, $5, $6, spread, $8, ratio, $9, lat, fair, $10
	}' "$samples_or_null" "$tsv" "$tsv"
}

# Throughput against threads of one group: $1 program, $2 group, $3 PNG.
group_plot()
{
	plot=
	for f in "$out/data/$1__$(file_name "$2")"__*.dat; do
		[ -f "$f" ] || continue
		case_=$(sed -n '1s/^# //p' "$f")
		if awk -F '\t' -v p="$1" -v g="$2" -v c="$case_" \
			'$1 == p && $2 == g && $3 == c && $4 == "-" { found = 1 }
			END { exit !found }' "$tsv"; then
			style="with linespoints dashtype 2 linewidth 2"
			title="$case_ (baseline)"
		else
			style="with linespoints linewidth 2"
			title=$case_
		fi
		plot="$plot${plot:+, }'$f' using 1:2 $style title '$title'"
	done
	[ -n "$plot" ] || return 0
	"$gnuplot" <<GNUPLOT 2>/dev/null || echo "[run-bench] gnuplot failed for $1 $2" >&2
set terminal pngcairo size 1100,560 noenhanced
set output '$3'
set title '$1, $2: throughput against threads (higher is better)'
set xlabel 'threads'
set ylabel 'operations per second, all threads'
set logscale x 2
set logscale y 10
set format y '%.0s%c'
set key outside right top vertical
set grid
plot $plot
GNUPLOT
}

# Horizontal bars, one per line of data file $2 ("label" value is_baseline),
# labels on the left (baselines hatched and named so in their label: no
# key): $1 title, $3 PNG, $4 x label.
bars_plot()
{
	n=$(wc -l < "$2")
	maxlen=$(awk -F '"' '{ if (length($2) > m) m = length($2) } END { print m + 0 }' "$2")
	baselines=$(awk '$NF == 1 { n++ } END { print n + 0 }' "$2")
	width=$((760 + 8 * maxlen))
	[ "$width" -ge $((9 * ${#1} + 80)) ] || width=$((9 * ${#1} + 80))
	if [ "$baselines" -gt 0 ]; then
		plot="'$2' using (\$3 == 1 ? sqrt(lo * \$2) : 1/0):0:(lo):2:(\$0 - 0.35):(\$0 + 0.35):ytic(1) with boxxyerror fill pattern 4 lc rgb '#d95f02' notitle, '' using (\$3 == 0 ? sqrt(lo * \$2) : 1/0):0:(lo):2:(\$0 - 0.35):(\$0 + 0.35) with boxxyerror lc rgb '#1b9e77' notitle"
	else
		plot="'$2' using (sqrt(lo * \$2)):0:(lo):2:(\$0 - 0.35):(\$0 + 0.35):ytic(1) with boxxyerror lc rgb '#1b9e77' notitle"
	fi
	lo=$(awk '{ v = $(NF - 1) + 0; if (NR == 1 || v < m) m = v } END { printf "%g", m / 4 }' "$2")
	"$gnuplot" <<GNUPLOT 2>/dev/null || echo "[run-bench] gnuplot failed for $3" >&2
set terminal pngcairo size $width,$((170 + 30 * n)) noenhanced
set output '$3'
# The title over the whole image: gnuplot centres a title over the plot
# area, which the labels on the left push to the right.
set label 1 '$1' at screen 0.5, screen 1 center offset 0, -1.2
set tmargin 3
set xlabel '$4'
lo = $lo
set logscale x 10
set format x '%.0s%c'
set xrange [lo:*]
set yrange [$n - 0.5:-0.5]
set style fill solid 0.8 border -1
set grid xtics
set rmargin 8
unset key
plot $plot
GNUPLOT
}

# Points, one per repetition, labels on the left: $1 title, $2 data file
# (index "label" value), $3 PNG.
points_plot()
{
	n=$(awk '{ print $1 }' "$2" | sort -un | wc -l)
	maxlen=$(awk -F '"' '{ if (length($2) > m) m = length($2) } END { print m + 0 }' "$2")
	width=$((760 + 8 * maxlen))
	[ "$width" -ge $((9 * ${#1} + 80)) ] || width=$((9 * ${#1} + 80))
	"$gnuplot" <<GNUPLOT 2>/dev/null || echo "[run-bench] gnuplot failed for $3" >&2
set terminal pngcairo size $width,$((150 + 30 * n)) noenhanced
set output '$3'
set label 1 '$1' at screen 0.5, screen 1 center offset 0, -1.2
set tmargin 3
set xlabel 'ns per round trip (log scale)'
set logscale x 10
set format x '%.0s%c'
set yrange [$n - 0.5:-0.5]
set grid xtics
set rmargin 8
unset key
plot '$2' using 3:1:ytic(2) with points pointtype 7 pointsize 1.2 lc rgb '#7570b3'
GNUPLOT
}

# The plots of program $1 (none without gnuplot).
plots()
{
	[ -n "$gnuplot" ] && [ -x "$gnuplot" ] || return 0
	multi=" $(multi_groups "$1" | tr '\n' '|')"
	# Data files: one per group and case, "threads ops_s", the case's name
	# on the first line.
	awk -F '\t' -v dir="$out/data" -v p="$1" '
	NR == 1 || $1 != p { next }
	{
		g = $2; c = $3
		gsub(/[^A-Za-z0-9_-]/, "_", g); gsub(/[^A-Za-z0-9_-]/, "_", c)
		f = dir "/" p "__" g "__" c ".dat"
		if (!(f in seen)) { seen[f] = 1; print "# " $3 > f }
		print $5, $8 >> f
		close(f)
	}' "$tsv"
	multi_groups "$1" | while IFS= read -r group; do
		group_plot "$1" "$group" "$out/$1-$(file_name "$group").png"
	done
	f=$out/data/$1-cases.dat
	multi_groups "$1" > "$out/data/$1-multi.txt"
	# A case is a baseline when another case of its group names it (the
	# cases of a group like "ceiling" name "none" and stand alone).
	awk -F '\t' -v p="$1" '
	FILENAME == ARGV[1] { multi[$0] = 1; next }
	FNR == 1 { pass++ }
	pass == 1 { if ($1 == p) { is_case[$2, $3] = 1; if ($4 != "-") named[$2] = $4 }; next }
	FNR > 1 && $1 == p && !($2 in multi) {
		base = ($4 == "-" && ($2 in named) && (($2, named[$2]) in is_case))
		printf "\"%s / %s (%d thr%s)\" %s %d\n", $2, $3, $5, \
			base ? ", baseline" : "", $6, base
	}' "$out/data/$1-multi.txt" "$tsv" "$tsv" > "$f"
	[ -s "$f" ] && bars_plot "$1: ns per operation, groups run at one thread count (lower is better)" \
		"$f" "$out/$1-cases.png" 'ns per operation (log scale)'
	f=$out/data/$1-latency.dat
	if [ -f "$samples" ]; then
		awk -F '\t' -v p="$1" '$1 == p && ($2 ~ /rtt|pingpong/) {
			key = $2 " / " $3 " (" $4 " thr)"
			if (!(key in idx)) idx[key] = n++
			printf "%d \"%s\" %s\n", idx[key], key, $6
		}' "$samples" > "$f"
		[ -s "$f" ] && points_plot "$1: round-trip time, one point per repetition (lower is better)" \
			"$f" "$out/$1-latency.png"
	fi
	return 0
}

# An image line for PNG $1 when it was written.
image()
{
	[ -f "$out/$1" ] || return 0
	echo
	echo "![$1]($1)"
}

samples_or_null=$samples
[ -f "$samples" ] || samples_or_null=/dev/null
programs=$(awk -F '\t' 'NR > 1 { print $1 }' "$tsv" | uniq)
for prog in $programs; do
	plots "$prog"
done

{
	echo "# liburcu-rseq benchmark report"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| date | ${date:-unknown} |"
	echo "| CPU | $cpu_model |"
	echo "| CPUs online | $ncpu |"
	echo "| kernel | $(uname -r) ($(uname -m)) |"
	echo "| glibc | $glibc |"
	echo "| liburcu | $urcu |"
	echo "| run | $mode, ${elapsed:-?} s; threads pinned ${URCU_RSEQ_BENCH_PIN:-round-robin} |"
	echo
	echo "ns/op is wall time x threads / operations (per thread); the median"
	echo "of the repetitions, and their spread (fastest and slowest) next to"
	echo "it. ratio is the baseline's median ns/op over the case's at the same"
	echo "thread count in the same run: above 1 is faster than the baseline."
	echo "CPU ns/op counts user + system time. A spread wider than the gap"
	echo "between two cases means this run cannot tell them apart."
	echo
	echo "Files next to this report:"
	echo
	echo "- \`PROGRAM.txt\`: each program's terminal output (its notes, memory"
	echo "  results and tables as printed);"
	echo "- \`results.tsv\`: one row per case and thread count (program, group,"
	echo "  case, baseline, threads, ns/op, ratio, ops/s, CPU ns/op, repetitions,"
	echo "  ms per repetition, pinning), the tables below;"
	echo "- \`samples.tsv\`: every repetition's ns/op (program, group, case,"
	echo "  threads, repetition, ns/op), the spreads and latency plots;"
	echo "- \`data/\`: the plots' data; \`*.png\`: the plots, also shown below."
	if [ -n "${failed:-}" ]; then
		echo
		echo "**Failed:**$failed"
	fi
	for prog in $programs; do
		echo
		echo "## $prog"
		notes=$(grep -E '^(memory|# )' "$out/$prog.txt" 2>/dev/null)
		if [ -n "$notes" ]; then
			echo
			echo "Notes and memory results:"
			echo
			echo '```'
			printf '%s\n' "$notes"
			echo '```'
		fi
		awk -F '\t' -v p="$prog" 'NR > 1 && $1 == p { print $2 }' "$tsv" | uniq |
		while IFS= read -r group; do
			echo
			echo "### $group"
			table "$prog" "$group"
			image "$prog-$(file_name "$group").png"
		done
		if [ -f "$out/$prog-cases.png" ] || [ -f "$out/$prog-latency.png" ]; then
			echo
			echo "### $prog: plots of the groups above"
			image "$prog-cases.png"
			image "$prog-latency.png"
		fi
	done
} > "$out/report.md"

echo "[run-bench] report: $out/report.md (${elapsed:-?} s)" >&2
[ -z "$report_only" ] || exit 0
# The quick run must stay short enough to run on every change.
if [ "$mode" = quick ]; then
	if [ "$elapsed" -le 180 ]; then
		echo "[run-bench] total ${elapsed} s: within the 3-minute budget of make bench" >&2
	else
		echo "[run-bench] WARNING: total ${elapsed} s exceeds the 3-minute budget of make bench" >&2
	fi
fi
[ -z "$failed" ]
