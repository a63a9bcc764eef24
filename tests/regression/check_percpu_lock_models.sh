#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every Promela model in tests/models (about 1 min): under make regtest.
exec "$top_srcdir/tests/models/check-models.sh" "$top_srcdir/tests/models"
