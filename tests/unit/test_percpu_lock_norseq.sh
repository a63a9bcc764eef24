#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The per-CPU spinlock's unit test with every thread on the fallback path.
URCU_RSEQ_DISABLE=1 exec "$top_builddir/tests/unit/test_percpu_lock"
