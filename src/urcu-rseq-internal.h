// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Between the urcu-rseq flavor's files: the call_rcu fork hooks call the
 * defer queues' (urcu-rseq-defer.c), in this order: the call_rcu workers
 * paused, then defer_before_fork(), then the grace-period lock.
 */
#ifndef _URCU_RSEQ_INTERNAL_H
#define _URCU_RSEQ_INTERNAL_H

#include <stdbool.h>

void urcu_rseq_defer_before_fork(bool no_wait);
void urcu_rseq_defer_after_fork_parent(void);
void urcu_rseq_defer_after_fork_child(void);

#endif /* _URCU_RSEQ_INTERNAL_H */
