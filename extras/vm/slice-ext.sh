#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Guest side of "make vmcheck-slice-ext": urcu_mutex with and without the
# kernel's time-slice extension, on a kernel that offers it (built by
# build-slice-kernel.sh; Debian's own are built without it).
#
# 1. test_mutex: the extension turned on by a thread's first lock, asked
#    for while a mutex is held, granted, given back, never left asked for.
# 2. bench_mutex's oversubscribed cells, URCU_MUTEX_SLICE_EXT=0 and the
#    default alternately, SLICE_RUNS (5) times each in this one boot. Each
#    TSV row is echoed as a "# off N" or "# on N" comment for the host.
# 3. If test_mutex.glibc is there (test_mutex linked statically against
#    another glibc, e.g. Debian 13's 2.41 in make check-distros' root), it
#    runs with glibc's own registration: does that glibc register an area
#    the kernel offers the extension to?
#
# test_mutex and bench_mutex are copied into /tests with run-vm.sh --file.

cd "$(dirname "$0")" || exit 2
runs=${SLICE_RUNS:-5}
echo "1..4"
echo "# kernel $(uname -r), CPUs online: $(cat /sys/devices/system/cpu/online)"
mkdir -p /sys/kernel/debug 2>/dev/null
mount -t debugfs none /sys/kernel/debug 2>/dev/null
echo "# slice_ext_nsec: $(cat /sys/kernel/debug/rseq/slice_ext_nsec 2>/dev/null || echo '?')"

./test_mutex >test_mutex.out 2>&1
rc=$?
sed 's/^/# /' test_mutex.out
if [ $rc = 0 ] && grep -q '^ok .* - the kernel granted extensions' test_mutex.out; then
	echo "ok 1 - test_mutex passed, with the extension granted"
else
	echo "not ok 1 - test_mutex (status $rc, or the extension was not tested)"
fi

# The kernel's slice counters (CONFIG_RSEQ_STATS), as "name value" lines.
stats() {
	sed -n 's/^\(s[a-z]*\): *\([0-9]*\)$/\1 \2/p' \
		/sys/kernel/debug/rseq/stats 2>/dev/null
}

cells="cs_15ns/urcu_mutex cs_500ns/urcu_mutex server_1-4us_in_10-50us_out/urcu_mutex
	server_1-4us_in_10-50us_out_busy/urcu_mutex"
bad=0
i=1
while [ $i -le "$runs" ]; do
	for mode in off on; do
		ext=1
		[ $mode = off ] && ext=0
		stats >stats.before
		URCU_MUTEX_SLICE_EXT=$ext URCU_RSEQ_BENCH_TSV=$mode.tsv \
			./bench_mutex $cells >bench.out 2>&1 || bad=1
		stats >stats.after
		grep 'time-slice extension' bench.out | sed "s/^/# $mode $i: /"
		if [ -s stats.after ]; then
			echo "# $mode $i: kernel slice counters over the run:" \
				$(awk 'NR == FNR { b[$1] = $2; next }
					{ printf "%s %d, ", $1, $2 - b[$1] }' \
					stats.before stats.after)
		fi
		sed "s/^/# $mode $i /" $mode.tsv
	done
	i=$((i + 1))
done
if [ $bad = 0 ]; then
	echo "ok 2 - bench_mutex ran $runs times with and without the extension"
else
	echo "not ok 2 - bench_mutex failed"
fi
if grep -q ': on$' bench.out; then
	echo "ok 3 - the benchmark's owners had the extension on"
else
	echo "not ok 3 - the extension was not on in the benchmark"
fi
if [ -x ./test_mutex.glibc ]; then
	GLIBC_TUNABLES= ./test_mutex.glibc >glibc.out 2>&1
	rc=$?
	grep -i 'time-slice\|^not ok\|^ok .*slice\|granted' glibc.out | sed 's/^/# glibc: /'
	if [ $rc = 0 ]; then
		echo "ok 4 - test_mutex.glibc passed with glibc's registration"
	else
		echo "not ok 4 - test_mutex.glibc exited with status $rc"
	fi
else
	echo "ok 4 # SKIP no test_mutex.glibc"
fi
