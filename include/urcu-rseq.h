// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Compatibility include, as liburcu's <urcu-bp.h>: the urcu-rseq flavor
 * with liburcu's generic names (rcu_read_lock(), synchronize_rcu(),
 * call_rcu(), rcu_flavor ...) mapped onto it. See <urcu/urcu-rseq.h>.
 */
#define URCU_API_MAP
#include <urcu/urcu-rseq.h>
