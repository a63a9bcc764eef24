// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one pthread_atfork() registration of the per-CPU primitives; the
 * order is explained in percpu-fork.h.
 */
#include <pthread.h>

#include "percpu-fork.h"

static void fork_prepare(void)
{
	urcu_rseq_cache_fork_prepare();
	urcu_rseq_freelist_fork_prepare();
	urcu_rseq_lock_fork_prepare();
	urcu_rseq_counter_fork_prepare();
	urcu_rseq_pool_fork_prepare();
}

static void fork_parent(void)
{
	urcu_rseq_pool_fork_parent();
	urcu_rseq_counter_fork_parent();
	urcu_rseq_lock_fork_parent();
	urcu_rseq_freelist_fork_parent();
	urcu_rseq_cache_fork_parent();
}

static void fork_child(void)
{
	urcu_rseq_pool_fork_child();
	urcu_rseq_counter_fork_child();
	urcu_rseq_lock_fork_child();
	urcu_rseq_freelist_fork_child();
	urcu_rseq_cache_fork_child();
}

static void __attribute__((constructor)) percpu_fork_init(void)
{
	(void) pthread_atfork(fork_prepare, fork_parent, fork_child);
}
