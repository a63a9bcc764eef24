#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Unmodified Debian programs with and without liburcu-rseq-pthread-cond.so
# preloaded give identical results:
# - pigz -p 2 and xz -T2 compress a deterministic 100 MB file (size from
#   PRELOAD_DATA_MB) to byte-identical output and decompress it back;
# - redis-server under redis-benchmark on 127.0.0.1: a lazy-free workload
#   (every request frees a 100-member set in the background thread, which
#   redis wakes with pthread_cond_signal: the condition is on the hot path,
#   shown by the preload's call counts), then a deterministic data set whose
#   DEBUG DIGEST must match.
# A program that is not installed is skipped (TAP SKIP).
. "${TAP_SH:-$(dirname "$0")/../utils/tap.sh}"

PRELOAD=${URCU_RSEQ_PRELOAD:-$top_builddir/src/.libs/liburcu-rseq-pthread-cond.so}
[ -f "$PRELOAD" ] || skip_all "no preload library at $PRELOAD"
MB=${PRELOAD_DATA_MB:-100}
T=${PRELOAD_TIMEOUT:-300}	# seconds, per command

work=$(mktemp -d "${TMPDIR:-/tmp}/preload_programs.XXXXXX") || bail_out "mktemp"
redis_pid=
cleanup()
{
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

plan_no_plan

# Lines with a counter: compressible, but not trivially so. Deterministic.
seq -f 'line %.0f of the urcu-rseq preload test, with words that repeat' \
	1 $((MB * 20000)) | head -c $((MB * 1000000)) > "$work/data"
test "$(wc -c < "$work/data")" -eq $((MB * 1000000))
ok $? "generated a $MB MB file"

# Calls counted by the preload in stats file $1 (fields after "name").
calls()
{
	sed -n 's/.*pthread_cond preload: //p' "$1" | tail -n 1 |
		awk -v f="$2" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }'
}

preloaded()
{
	LD_PRELOAD="$PRELOAD" URCU_RSEQ_PRELOAD_STATS=1 "$@"
}

# compressor: name, compress args, decompress args.
check_compressor()
{
	name=$1 c=$2 d=$3
	if ! command -v "$name" >/dev/null 2>&1; then
		skip 4 "$name not installed"
		return
	fi
	timeout "$T" "$name" $c < "$work/data" > "$work/$name.plain"
	timeout "$T" env LD_PRELOAD="$PRELOAD" URCU_RSEQ_PRELOAD_STATS=1 \
		"$name" $c < "$work/data" > "$work/$name.pre" 2> "$work/$name.stats"
	cmp -s "$work/$name.plain" "$work/$name.pre"
	ok $? "$name $c: identical output with the preload ($(wc -c < "$work/$name.pre") bytes)"
	n=$(( $(calls "$work/$name.stats" wait) + $(calls "$work/$name.stats" signal) \
		+ $(calls "$work/$name.stats" broadcast) ))
	test "$n" -gt 0
	ok $? "$name $c: the preload served its condition variables ($(sed -n 's/.*preload: //p' "$work/$name.stats"))"
	timeout "$T" "$name" $d < "$work/$name.pre" | cmp -s - "$work/data"
	ok $? "$name $d: decompresses to the original"
	timeout "$T" env LD_PRELOAD="$PRELOAD" "$name" $d < "$work/$name.plain" |
		cmp -s - "$work/data"
	ok $? "$name $d with the preload: decompresses to the original"
}

check_compressor pigz "-p 2 -c" "-p 2 -dc"
check_compressor xz "-T2 -c" "-T2 -dc"

# redis: $1 = plain|preload; sets redis_pid and port.
redis_start()
{
	port=$(( 20000 + ($$ % 20000) ))
	if [ "$1" = preload ]; then
		set -- env LD_PRELOAD="$PRELOAD" URCU_RSEQ_PRELOAD_STATS=1
	else
		set --
	fi
	"$@" redis-server --bind 127.0.0.1 --port "$port" --save '' \
		--appendonly no --lazyfree-lazy-user-del yes \
		--enable-debug-command local --dir "$work" \
		> "$work/redis.log" 2> "$work/redis.stats" &
	redis_pid=$!
	i=0
	while ! redis-cli -h 127.0.0.1 -p "$port" ping > /dev/null 2>&1; do
		i=$((i + 1))
		[ $i -gt 100 ] && return 1
		sleep 0.1
	done
}

redis_stop()
{
	redis-cli -h 127.0.0.1 -p "$port" shutdown nosave > /dev/null 2>&1
	wait "$redis_pid"
	redis_pid=
}

LAZY_SCRIPT="local k=KEYS[1] for i=1,100 do redis.call('sadd',k,'m'..i) end return redis.call('del',k)"
REDIS_N=${PRELOAD_REDIS_N:-3000}

# Deterministic data set: SET, INCRBY, RPUSH, SADD through redis-cli --pipe.
redis_dataset()
{
	awk 'BEGIN { for (i = 0; i < 20000; i++) {
		printf "SET key:%d value-%d\n", i, i * 7
		printf "INCRBY counter:%d %d\n", i % 97, i
		printf "RPUSH list:%d %d\n", i % 31, i
		printf "SADD set:%d m%d\n", i % 13, i } }' |
		redis-cli -h 127.0.0.1 -p "$port" > /dev/null
	redis-cli -h 127.0.0.1 -p "$port" debug digest
}

if command -v redis-server > /dev/null 2>&1 &&
		command -v redis-benchmark > /dev/null 2>&1 &&
		command -v redis-cli > /dev/null 2>&1; then
	for mode in plain preload; do
		if ! redis_start $mode; then
			ok 1 "redis-server ($mode) started"
			continue
		fi
		out=$(timeout "$T" redis-benchmark -h 127.0.0.1 -p "$port" -q \
			-n "$REDIS_N" -c 8 -r 1000000 eval "$LAZY_SCRIPT" 1 \
			's:__rand_int__' 2>&1 | tr '\r' '\n' | grep 'requests per second' | tail -n 1)
		freed=$(redis-cli -h 127.0.0.1 -p "$port" info memory |
			tr -d '\r' | sed -n 's/^lazyfreed_objects://p')
		keys=$(redis-cli -h 127.0.0.1 -p "$port" dbsize)
		test -n "$out" && test "$keys" = 0 && test "$freed" = "$REDIS_N"
		ok $? "redis ($mode): $REDIS_N lazy-free requests, $freed freed in the background, $keys keys left (${out##*: })"
		eval "digest_$mode=\$(redis_dataset)"
		redis_stop
		if [ $mode = preload ]; then
			n=$(calls "$work/redis.stats" signal)
			test "${n:-0}" -ge "$REDIS_N"
			ok $? "redis: the background thread is woken through the preload ($(sed -n 's/.*preload: //p' "$work/redis.stats"))"
		fi
	done
	test -n "$digest_plain" && test "$digest_plain" = "$digest_preload"
	ok $? "redis: identical data set digest with and without the preload ($digest_preload)"
else
	skip 4 "redis-server, redis-benchmark or redis-cli not installed"
fi

tap_finish
