#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The lost wake-up diagnosis can fail: one signal dropped on purpose under
# the preload must be reported as exactly one lost wake-up.
URCU_RSEQ_LOST_WAKEUP_SELFTEST=1 URCU_RSEQ_LOST_WAKEUP_MS=1000 \
LD_PRELOAD="$top_builddir/src/.libs/liburcu-rseq-pthread-cond.so" \
	exec "$top_builddir/tests/regression/stress_cond_lost_wakeup"
