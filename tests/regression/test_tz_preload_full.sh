#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# test_tz_preload (tests/unit) in its long mode, under the preload.
URCU_RSEQ_TZ_FULL=1 \
LD_PRELOAD="$top_builddir/src/.libs/liburcu-rseq-tz.so${LD_PRELOAD:+ $LD_PRELOAD}" \
	exec "$top_builddir/tests/unit/test_tz_preload"
