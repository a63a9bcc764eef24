#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Guest side of "make vmcheck-gp-cost": the cost of one synchronize_rcu()
# on the CPUs the VM has, from bench_urcu_rseq's synchronize_rcu cells
# (urcu-rseq against urcu-memb and urcu-bp, 10 and 1000 idle threads).
# Run it once with 8 vCPUs and once with 64 to see how a grace period
# grows with the CPU count. Under TCG the absolute times are those of an
# emulated machine: compare the flavors and the two CPU counts, not with
# real hardware.
#
# bench_urcu_rseq is copied into /tests with run-vm.sh --file. Its table
# is passed through as TAP comments; the one check is that it ran.

cd "$(dirname "$0")" || exit 2
echo "1..1"
echo "# CPUs online: $(cat /sys/devices/system/cpu/online)," \
	"possible: $(cat /sys/devices/system/cpu/possible)"
./bench_urcu_rseq "synchronize_rcu, 10 idle" "synchronize_rcu, 1000 idle" \
	>bench.out 2>&1
rc=$?
sed 's/^/# /' bench.out
if [ $rc = 0 ]; then
	echo "ok 1 - bench_urcu_rseq synchronize_rcu cells ran"
else
	echo "not ok 1 - bench_urcu_rseq exited with status $rc"
fi
exit $rc
