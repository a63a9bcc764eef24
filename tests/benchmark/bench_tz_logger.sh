#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The time-zone preload on a real program: tz_logger (a multi-threaded
# access-log formatter) at 1, 2, 8 and 32 threads, without and with
# liburcu-rseq-tz.so, runs alternating, REPS (default 5; BENCH_FULL=1: 11)
# of MS milliseconds (150; BENCH_FULL=1: 1000) each. Prints the harness's
# rows (name threads ns/op ratio ops/s cpu-ns/op; ns/op is per line per
# thread), appends them to URCU_RSEQ_BENCH_TSV and every run to
# URCU_RSEQ_BENCH_SAMPLES when set, and the median with min-max of lines/s.
set -u
top_builddir=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
PRELOAD=${URCU_RSEQ_TZ_PRELOAD:-$top_builddir/src/.libs/liburcu-rseq-tz.so}
LOGGER=${TZ_LOGGER:-$top_builddir/tests/benchmark/tz_logger}
[ -f "$PRELOAD" ] && [ -x "$LOGGER" ] || { echo "no $PRELOAD or $LOGGER" >&2; exit 1; }
if [ "${BENCH_FULL:-0}" = 1 ]; then REPS=${REPS:-11}; MS=${MS:-1000}; else REPS=${REPS:-5}; MS=${MS:-150}; fi
export TZ=${TZ:-Europe/Paris}
prog=bench_tz_logger
group=tz_logger_lines

median()
{
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

tsv=${URCU_RSEQ_BENCH_TSV:-}
if [ -n "$tsv" ] && [ ! -s "$tsv" ]; then
	printf 'program\tgroup\tcase\tbaseline\tthreads\tns_op\tratio\tops_s\tcpu_ns_op\treps\tms\tpin\n' > "$tsv"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_tz_logger.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "# $prog: TZ=$TZ, $REPS runs of $MS ms per case, alternating"
for n in 1 2 8 32; do
	for r in $(seq "$REPS"); do
		"$LOGGER" "$n" "$MS" >> "$work/glibc.$n" || exit 1
		LD_PRELOAD="$PRELOAD" "$LOGGER" "$n" "$MS" >> "$work/preload.$n" || exit 1
	done
	base_ns=
	for c in glibc preload; do
		f=$work/$c.$n
		ops=$(awk '{ print $3 }' "$f" | median)
		lo=$(awk '{ print $3 }' "$f" | sort -g | head -n 1)
		hi=$(awk '{ print $3 }' "$f" | sort -g | tail -n 1)
		cpu=$(awk '{ print $4 * 1e9 / $1 }' "$f" | median)
		ns=$(awk -v o="$ops" -v n="$n" 'BEGIN { printf "%.3f", n * 1e9 / o }')
		if [ "$c" = glibc ]; then
			base_ns=$ns; ratio=nan; base=-; shown=-
		else
			ratio=$(awk -v b="$base_ns" -v x="$ns" 'BEGIN { printf "%.3f", b / x }')
			base=tz_logger_glibc; shown=$ratio
		fi
		printf '%s %d %s %s %.0f %.3f  (lines/s min-max %s-%s)\n' \
			"tz_logger_$c" "$n" "$ns" "$shown" "$ops" "$cpu" "$lo" "$hi"
		[ -n "$tsv" ] && printf '%s\t%s\t%s\t%s\t%d\t%s\t%s\t%.0f\t%.3f\t%d\t%d\t%s\n' \
			"$prog" "$group" "tz_logger_$c" "$base" "$n" "$ns" "$ratio" \
			"$ops" "$cpu" "$REPS" "$MS" none >> "$tsv"
		if [ -n "${URCU_RSEQ_BENCH_SAMPLES:-}" ]; then
			awk -v p="$prog" -v g="$group" -v c="tz_logger_$c" -v n="$n" \
				'{ printf "%s\t%s\t%s\t%d\t%d\t%.3f\n", p, g, c, n, NR, n * 1e9 / $3 }' \
				"$f" >> "$URCU_RSEQ_BENCH_SAMPLES"
		fi
	done
done
