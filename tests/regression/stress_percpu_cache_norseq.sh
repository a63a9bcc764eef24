#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The object cache stress with rseq disabled in every thread: every alloc
# and free goes through the depot's mutex, drain still takes the CPU lists.
URCU_RSEQ_DISABLE=1
export URCU_RSEQ_DISABLE
exec "${top_builddir:-../..}/tests/regression/stress_percpu_cache"
