#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Unmodified programs with and without liburcu-rseq-pthread-cond.so: wall
# time and CPU time (user + system) of pigz -p 2 and xz -T2 compressing and
# decompressing a deterministic 100 MB file, requests per second of
# redis-server (127.0.0.1) under redis-benchmark on a lazy-free workload
# (background frees woken through pthread_cond_signal) and on plain SET/GET,
# with the server's CPU time. Runs alternate baseline and preload, REPS
# (default 5) each; medians are reported with the ratio preload/baseline.
#
# It takes several minutes, so it is opt-in: BENCH_FULL=1 (or
# `make bench-preload`); otherwise it says so and exits 0.
# Usage: bench_preload_programs.sh [--out DIR]   (writes DIR/preload_programs.md)
set -u

if [ "${BENCH_FULL:-0}" != 1 ]; then
	echo "bench_preload_programs: skipped (several minutes): set BENCH_FULL=1"
	exit 0
fi
out=
[ "${1:-}" = --out ] && out=$2
top_builddir=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
PRELOAD=${URCU_RSEQ_PRELOAD:-$top_builddir/src/.libs/liburcu-rseq-pthread-cond.so}
[ -f "$PRELOAD" ] || { echo "no $PRELOAD" >&2; exit 1; }
REPS=${REPS:-5}
MB=${PRELOAD_DATA_MB:-100}
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_preload.XXXXXX")
redis_pid=
trap '[ -n "$redis_pid" ] && kill $redis_pid 2>/dev/null; rm -rf "$work"' EXIT

seq -f 'line %.0f of the urcu-rseq preload test, with words that repeat' \
	1 $((MB * 20000)) | head -c $((MB * 1000000)) > "$work/data"

median()
{
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

rows=()
row()	# name unit base pre base_cpu pre_cpu
{
	rows+=("$(awk -v n="$1" -v u="$2" -v b="$3" -v p="$4" -v bc="$5" -v pc="$6" \
		'BEGIN { printf "| %s | %s | %.4g | %.4g | %.3f | %.3g | %.3g | %.3f |",
		n, u, b, p, (b > 0 ? p / b : 0), bc, pc, (bc > 0 ? pc / bc : 0) }')")
	echo "${rows[-1]}"
}

# One timed command: appends "wall cpu" to $1; the rest is the command.
timed()
{
	local f=$1
	shift
	/usr/bin/time -f '%e %U %S' -o "$work/t" "$@" || return 1
	awk '{ print $1, $2 + $3 }' "$work/t" >> "$f"
}

bench_cmd()	# name, input, command... (output discarded)
{
	local name=$1 in=$2 i
	shift 2
	command -v "$1" > /dev/null || { echo "| $name | not installed |"; return; }
	: > "$work/b" ; : > "$work/p"
	for ((i = 0; i < REPS; i++)); do
		timed "$work/b" sh -c '"$@" < "$0" > /dev/null' "$in" "$@"
		timed "$work/p" env LD_PRELOAD="$PRELOAD" \
			sh -c '"$@" < "$0" > /dev/null' "$in" "$@"
	done
	row "$name" "wall s" "$(cut -d' ' -f1 "$work/b" | median)" \
		"$(cut -d' ' -f1 "$work/p" | median)" \
		"$(cut -d' ' -f2 "$work/b" | median)" \
		"$(cut -d' ' -f2 "$work/p" | median)"
}

echo "| program | unit | baseline | preload | ratio | CPU s base | CPU s preload | CPU ratio |"
echo "|---|---|---|---|---|---|---|---|"
pigz -p 2 -c < "$work/data" > "$work/data.gz"
xz -T2 -c < "$work/data" > "$work/data.xz"
bench_cmd "pigz -p 2 -c (100 MB)" "$work/data" pigz -p 2 -c
bench_cmd "pigz -p 2 -dc" "$work/data.gz" pigz -p 2 -dc
bench_cmd "xz -T2 -c (100 MB)" "$work/data" xz -T2 -c
bench_cmd "xz -T2 -dc" "$work/data.xz" xz -T2 -dc

# redis: requests per second from redis-benchmark, server CPU from /proc.
port=$(( 20000 + ($$ % 20000) ))
server_cpu()
{
	awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$redis_pid/stat"
}
redis_once()	# mode, results file, benchmark args...
{
	local mode=$1 f=$2 c0 c1 rps
	shift 2
	if [ "$mode" = preload ]; then
		LD_PRELOAD="$PRELOAD" redis-server --bind 127.0.0.1 --port "$port" \
			--save '' --appendonly no --lazyfree-lazy-user-del yes \
			--dir "$work" > /dev/null 2>&1 &
	else
		redis-server --bind 127.0.0.1 --port "$port" --save '' \
			--appendonly no --lazyfree-lazy-user-del yes \
			--dir "$work" > /dev/null 2>&1 &
	fi
	redis_pid=$!
	until redis-cli -h 127.0.0.1 -p "$port" ping > /dev/null 2>&1; do sleep 0.1; done
	c0=$(server_cpu)
	rps=$(timeout 300 redis-benchmark -h 127.0.0.1 -p "$port" -q "$@" 2>&1 |
		tr '\r' '\n' | grep 'requests per second' | tail -n 1 |
		sed 's/.*: \([0-9.]*\) requests per second.*/\1/')
	c1=$(server_cpu)
	redis-cli -h 127.0.0.1 -p "$port" shutdown nosave > /dev/null 2>&1
	wait "$redis_pid"
	redis_pid=
	echo "$rps $(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')" >> "$f"
}
bench_redis()	# name, benchmark args...
{
	local name=$1 i
	shift
	command -v redis-benchmark > /dev/null || { echo "| $name | not installed |"; return; }
	: > "$work/b" ; : > "$work/p"
	for ((i = 0; i < REPS; i++)); do
		redis_once plain "$work/b" "$@"
		redis_once preload "$work/p" "$@"
	done
	row "$name" "req/s" "$(cut -d' ' -f1 "$work/b" | median)" \
		"$(cut -d' ' -f1 "$work/p" | median)" \
		"$(cut -d' ' -f2 "$work/b" | median)" \
		"$(cut -d' ' -f2 "$work/p" | median)"
}
LAZY="local k=KEYS[1] for i=1,100 do redis.call('sadd',k,'m'..i) end return redis.call('del',k)"
bench_redis "redis lazy-free eval, -c 8" -n 10000 -c 8 -r 1000000 eval "$LAZY" 1 's:__rand_int__'
bench_redis "redis SET (cond idle), -c 50" -n 100000 -c 50 -r 100000 -t set

if [ -n "$out" ]; then
	mkdir -p "$out"
	{
		echo "## Unmodified programs, pthread_cond preload (medians of $REPS; ratio = preload / baseline: >1 is better for req/s, worse for seconds)"
		echo
		echo "| program | unit | baseline | preload | ratio | CPU s base | CPU s preload | CPU ratio |"
		echo "|---|---|---|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
	} > "$out/preload_programs.md"
fi
