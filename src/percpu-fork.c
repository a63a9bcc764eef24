// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one pthread_atfork() registration of the per-CPU primitives; the
 * order is explained in percpu-fork.h.
 *
 * A static link takes this object from the archive only because the
 * create functions call urcu_rseq_percpu_fork_register(): nothing else
 * refers to it, and without that call its constructor would be left out
 * with it and a child would inherit the parent's locks held.
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

static void fork_register(void)
{
	(void) pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void urcu_rseq_percpu_fork_register(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	(void) pthread_once(&once, fork_register);
}

/*
 * Before the RCU flavor's constructor (102), whose fork handlers must be
 * registered after ours: see flavor_init() in urcu-rseq.c.
 */
static void __attribute__((constructor(101))) percpu_fork_init(void)
{
	urcu_rseq_percpu_fork_register();
}
