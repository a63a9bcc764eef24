#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The per-CPU counter stress with rseq disabled in every thread: all adds
# take the atomic fallback, read_reset still runs its fence protocol.
URCU_RSEQ_DISABLE=1
export URCU_RSEQ_DISABLE
exec "${top_builddir:-../..}/tests/regression/stress_percpu_counter"
