#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Real servers with and without liburcu-rseq-pthread-cond.so, over
# loopback, under wrk (issue 22). Each server hands work to its threads
# through condition variables on its request path:
# - apache2, event MPM, one child of THREADS workers: the listener thread
#   queues each ready connection (keep-alive included) for an idle worker,
#   which waits on the queue's condition (apr_thread_cond_wait);
# - nginx, one worker process with a thread pool and `aio threads`: every
#   file read goes to the pool, whose threads wait on its condition;
# - varnish, synthetic responses (no backend): the acceptor gives each
#   session to an idle worker thread, which waits on a condition of its own.
# Each server is started afresh for every run; runs alternate baseline and
# preload, REPS (default 5) of DUR seconds (default 5) each, wrk with
# WRK_THREADS (2) threads and CONNS (16: as many as apache's workers; more
# make apache close keep-alive connections) connections. Per server and mode:
# median requests/s with min-max, median p99 latency (wrk --latency) with
# min-max, and the server's CPU time per request (all its processes,
# user + system, from /proc). A last run per server without the preload
# counts glibc's pthread_cond calls per request with uprobes (perf probe
# on libc): the condition is on the hot path.
#
# Minutes long and needs root and the Debian packages apache2, nginx,
# varnish and wrk (installed when missing with INSTALL=1), so it is not in
# `make bench` or CI: `make bench-servers`. A server that is missing is
# reported as such and skipped.
# Usage: bench_servers.sh [--out DIR]   (writes DIR/servers.md)
set -u

out=
[ "${1:-}" = --out ] && out=$2
top_builddir=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
PRELOAD=${URCU_RSEQ_PRELOAD:-$top_builddir/src/.libs/liburcu-rseq-pthread-cond.so}
[ -f "$PRELOAD" ] || { echo "no $PRELOAD" >&2; exit 1; }
REPS=${REPS:-5}
DUR=${DUR:-5}
CONNS=${CONNS:-16}
WRK_THREADS=${WRK_THREADS:-2}
THREADS=${THREADS:-16}
SERVERS=${SERVERS:-apache nginx varnish}
[ "$(id -u)" -eq 0 ] || { echo "bench_servers: needs root" >&2; exit 1; }
if [ "${INSTALL:-0}" = 1 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq apache2 nginx \
		varnish wrk > /dev/null || exit 1
fi
command -v wrk > /dev/null || { echo "bench_servers: wrk is not installed" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_servers.XXXXXX")
chmod 755 "$work"
pgid=
stop_server()
{
	[ -n "$pgid" ] || return 0
	kill -TERM -- "-$pgid" 2> /dev/null
	for _ in $(seq 50); do
		kill -0 -- "-$pgid" 2> /dev/null || break
		sleep 0.1
	done
	kill -KILL -- "-$pgid" 2> /dev/null
	wait 2> /dev/null
	pgid=
}
trap 'stop_server; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM

mkdir -p "$work/www"
# A page (apache, 1 KB) and a file that nginx reads through its pool (16 KB).
head -c 1024 /dev/zero | tr '\0' a > "$work/www/index.html"
head -c 16384 /dev/zero | tr '\0' b > "$work/www/file16k"
chmod -R a+rX "$work/www"
port=$(( 20000 + ($$ % 20000) ))

cat > "$work/apache.conf" <<EOF
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
ServerName localhost
Listen 127.0.0.1:$port
DefaultRuntimeDir $work
PidFile $work/apache.pid
ErrorLog $work/apache.err
User www-data
Group www-data
DocumentRoot $work/www
<Directory $work/www>
	Require all granted
</Directory>
StartServers 1
ServerLimit 1
ThreadLimit $THREADS
ThreadsPerChild $THREADS
MaxRequestWorkers $THREADS
MinSpareThreads 1
MaxSpareThreads $THREADS
KeepAlive On
MaxKeepAliveRequests 0
EOF

mkdir -p "$work/nginx-tmp"
cat > "$work/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx.err;
thread_pool default threads=4 max_queue=65536;
events { worker_connections 1024; }
http {
	access_log off;
	sendfile off;
	aio threads;
	client_body_temp_path $work/nginx-tmp/body;
	proxy_temp_path $work/nginx-tmp/proxy;
	fastcgi_temp_path $work/nginx-tmp/fastcgi;
	uwsgi_temp_path $work/nginx-tmp/uwsgi;
	scgi_temp_path $work/nginx-tmp/scgi;
	server {
		listen 127.0.0.1:$port;
		root $work/www;
	}
}
EOF

cat > "$work/synth.vcl" <<'EOF'
vcl 4.1;
backend default none;
sub vcl_recv {
	return (synth(200, "OK"));
}
sub vcl_synth {
	set resp.http.Content-Type = "text/plain";
	set resp.body = "hello from varnish";
	return (deliver);
}
EOF

# start_server NAME MODE: starts it in a session of its own.
start_server()
{
	local name=$1 mode=$2 env=()
	[ "$mode" = preload ] && env=(LD_PRELOAD="$PRELOAD")
	case $name in
	apache)
		env "${env[@]}" setsid /usr/sbin/apache2 -f "$work/apache.conf" \
			-DFOREGROUND > "$work/$name.out" 2>&1 &
		;;
	nginx)
		env "${env[@]}" setsid /usr/sbin/nginx -c "$work/nginx.conf" \
			-p "$work" > "$work/$name.out" 2>&1 &
		;;
	varnish)
		rm -rf "$work/varnish"
		env "${env[@]}" setsid /usr/sbin/varnishd -F -n "$work/varnish" \
			-a "127.0.0.1:$port" -f "$work/synth.vcl" -s malloc,32m \
			-p thread_pools=1 -p thread_pool_min=8 \
			-p thread_pool_max="$THREADS" > "$work/$name.out" 2>&1 &
		;;
	esac
	pgid=$!
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$port/" 2> /dev/null && return 0
		sleep 0.1
	done
	echo "bench_servers: $name did not start:" >&2
	tail -n 5 "$work/$name.out" "$work"/*.err >&2 2> /dev/null
	stop_server
	return 1
}

# CPU seconds (user + system) of every process in the server's session.
server_cpu()
{
	local hz f sum=0
	hz=$(getconf CLK_TCK)
	for f in /proc/[0-9]*/stat; do
		awk -v g="$pgid" -v hz="$hz" '{
			sub(/^[0-9]+ \(.*\) /, "")	# pid and comm
			if ($4 == g) printf "%.2f\n", ($12 + $13) / hz }' "$f" 2> /dev/null
	done | awk '{ s += $1 } END { printf "%.3f\n", s }'
}

url_of()
{
	case $1 in
	apache) echo "http://127.0.0.1:$port/index.html" ;;
	nginx) echo "http://127.0.0.1:$port/file16k" ;;
	varnish) echo "http://127.0.0.1:$port/" ;;
	esac
}

# wrk's p99 ("99%  1.23ms") in microseconds.
p99_us()
{
	awk '$1 == "99%" {
		v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		m = (u == "us") ? 1 : (u == "ms") ? 1000 : (u == "s") ? 1000000 : 0
		printf "%.0f\n", v * m }'
}

# One run: appends "req/s p99_us cpu_us_per_req" to $3.
run_once()
{
	local name=$1 mode=$2 f=$3 c0 c1 log rps p99
	start_server "$name" "$mode" || return 1
	# Warm-up: worker threads and caches.
	wrk -t "$WRK_THREADS" -c "$CONNS" -d 1s "$(url_of "$name")" > /dev/null 2>&1
	c0=$(server_cpu)
	log=$(wrk -t "$WRK_THREADS" -c "$CONNS" -d "${DUR}s" --latency "$(url_of "$name")" 2>&1)
	c1=$(server_cpu)
	stop_server
	rps=$(awk '/^Requests\/sec:/ { print $2 }' <<< "$log")
	p99=$(p99_us <<< "$log")
	if [ -z "$rps" ] || [ -z "$p99" ] || grep -q "Non-2xx" <<< "$log"; then
		echo "bench_servers: $name ($mode): wrk failed:" >&2
		echo "$log" >&2
		return 1
	fi
	awk -v r="$rps" -v p="$p99" -v a="$c0" -v b="$c1" -v d="$DUR" \
		'BEGIN { printf "%s %s %.2f\n", r, p, (b - a) * 1e6 / (r * d) }' >> "$f"
}

median()
{
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
range()
{
	sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'
}
col()	# file column
{
	cut -d' ' -f"$2" "$1"
}

# glibc's pthread_cond calls per request of the unmodified server: uprobes
# on libc's functions (perf probe), counted system-wide during one wrk run
# (wrk itself waits on no condition). "-" where perf or uprobes are missing.
COND_FNS="pthread_cond_wait pthread_cond_timedwait pthread_cond_clockwait pthread_cond_signal pthread_cond_broadcast"
LIBC=$(ldconfig -p 2> /dev/null | awk '/libc\.so\.6 .*x86-64|libc\.so\.6 .*AArch64/ { print $NF; exit }')
probes=
if command -v perf > /dev/null && [ -n "$LIBC" ]; then
	for fn in $COND_FNS; do
		perf probe -q -x "$LIBC" -a "$fn" > /dev/null 2>&1
		perf probe -l 2> /dev/null | grep -q "probe_libc:$fn " &&
			probes="$probes${probes:+,}probe_libc:$fn"
	done
fi
trap 'stop_server; rm -rf "$work"; [ -n "$probes" ] && perf probe -q -d "probe_libc:pthread_cond_*" > /dev/null 2>&1' EXIT

calls_per_request()
{
	local name=$1 log reqs total
	[ -n "$probes" ] || { printf -- "-"; return; }
	start_server "$name" plain || { printf -- "-"; return; }
	wrk -t "$WRK_THREADS" -c "$CONNS" -d 1s "$(url_of "$name")" > /dev/null 2>&1
	log=$(perf stat -a -x, -e "$probes" -o "$work/perf" -- \
		wrk -t "$WRK_THREADS" -c "$CONNS" -d 2s "$(url_of "$name")" 2>&1)
	stop_server
	reqs=$(awk '/requests in/ { print $1 }' <<< "$log")
	total=$(awk -F, '$3 ~ /probe_libc/ { s += $1 } END { print s + 0 }' "$work/perf")
	awk -v t="$total" -v r="$reqs" 'BEGIN { if (r > 0) printf "%.2f", t / r; else printf "-" }'
}

rows=()
echo "| server | mode | req/s median (min-max) | p99 us median (min-max) | server CPU us/request | glibc cond calls/request |"
echo "|---|---|---|---|---|---|"
for name in $SERVERS; do
	case $name in
	apache) bin=/usr/sbin/apache2 ;;
	nginx) bin=/usr/sbin/nginx ;;
	varnish) bin=/usr/sbin/varnishd ;;
	*) echo "bench_servers: unknown server $name" >&2; continue ;;
	esac
	if [ ! -x "$bin" ]; then
		rows+=("| $name | not installed | | | | |")
		echo "${rows[-1]}"
		continue
	fi
	: > "$work/b"; : > "$work/p"
	fail=0
	for ((i = 0; i < REPS; i++)); do
		run_once "$name" plain "$work/b" || fail=1
		run_once "$name" preload "$work/p" || fail=1
	done
	if [ "$fail" = 1 ] || [ ! -s "$work/b" ] || [ ! -s "$work/p" ]; then
		rows+=("| $name | failed to run | | | | |")
		echo "${rows[-1]}"
		continue
	fi
	cpr=$(calls_per_request "$name")
	for mode in b p; do
		f=$work/$mode
		m=$([ "$mode" = b ] && echo glibc || echo preload)
		rows+=("| $name | $m | $(col "$f" 1 | median) ($(col "$f" 1 | range)) | $(col "$f" 2 | median) ($(col "$f" 2 | range)) | $(col "$f" 3 | median) ($(col "$f" 3 | range)) | $([ "$mode" = b ] && echo "$cpr" || echo -) |")
		echo "${rows[-1]}"
	done
done

if [ -n "$out" ]; then
	mkdir -p "$out"
	{
		echo "## Real servers over loopback, pthread_cond preload"
		echo
		echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r); wrk -t$WRK_THREADS -c$CONNS, $REPS runs of ${DUR} s per mode, alternating; server and client share the CPUs."
		echo
		echo "| server | mode | req/s median (min-max) | p99 us median (min-max) | server CPU us/request | glibc cond calls/request |"
		echo "|---|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
	} > "$out/servers.md"
fi
