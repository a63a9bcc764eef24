#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The same workload against glibc's pthread_cond: lost wake-ups (glibc bug
# 25847, glibc < 2.41) are reported in the log, not judged.
URCU_RSEQ_TEST_GLIBC=1 exec "$top_builddir/tests/regression/stress_cond_lost_wakeup"
