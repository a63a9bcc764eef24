#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The per-CPU spinlock's Promela models (about 10-30 s): under make regtest.
exec "$top_srcdir/tests/models/check-models.sh" "$top_srcdir/tests/models"
