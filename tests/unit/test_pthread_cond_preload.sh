#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The pthread_cond tests with liburcu-rseq-pthread-cond.so preloaded.
LD_PRELOAD="$top_builddir/src/.libs/liburcu-rseq-pthread-cond.so" \
	exec "$top_builddir/tests/unit/test_pthread_cond_preload"
