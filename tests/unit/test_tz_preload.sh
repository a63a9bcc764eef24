#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The time-zone differential and lifecycle tests with liburcu-rseq-tz.so
# preloaded (ahead of whatever LD_PRELOAD already holds, e.g. under ASan).
LD_PRELOAD="$top_builddir/src/.libs/liburcu-rseq-tz.so${LD_PRELOAD:+ $LD_PRELOAD}" \
	exec "$top_builddir/tests/unit/test_tz_preload"
