#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The object cache stress under `make check`: same program as in
# `make regtest`, at the default short duration (it runs under this name
# because the program's own name belongs to the regtest rule).
exec "${top_builddir:-../..}/tests/regression/stress_percpu_cache"
