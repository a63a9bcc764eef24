#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Destroy right after broadcast, pthread_cond face, under the preload.
LD_PRELOAD="$top_builddir/src/.libs/liburcu-rseq-pthread-cond.so" \
	exec "$top_builddir/tests/unit/stress_cond_destroy_pthread"
