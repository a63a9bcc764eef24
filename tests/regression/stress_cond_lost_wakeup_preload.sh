#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# glibc bug 25847's workload under the pthread_cond preload: no lost wake-up.
LD_PRELOAD="$top_builddir/src/.libs/liburcu-rseq-pthread-cond.so" \
	exec "$top_builddir/tests/regression/stress_cond_lost_wakeup"
