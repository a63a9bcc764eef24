#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The same pthread_cond tests against glibc: the tests hold for the
# implementation the preload replaces.
URCU_RSEQ_TEST_GLIBC=1 exec "$top_builddir/tests/unit/test_pthread_cond_preload"
