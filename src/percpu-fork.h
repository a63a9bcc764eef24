/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork() for the per-CPU primitives: one place that orders their
 * pthread_atfork() work, so that the locks are taken outer to inner
 * before fork() and released inner to outer after it, whatever order the
 * constructors of the library ran in.
 *
 * Each primitive fills in its three hooks; they run with the forking
 * thread as the only caller of this module's hooks:
 * - prepare: take the primitive's internal locks (so the child does not
 *   inherit one held by a thread that does not exist there);
 * - parent: release them, in the reverse order;
 * - child: release or reinitialise them and repair what other threads
 *   left half done (the only thread of the child is the forking one).
 *
 * Order (outer first): cache, freelist, lock, counter, pool. A cache
 * allocates from the pool and may call into a freelist's locks while
 * holding its own; counters and locks take the pool lock for their
 * shards; nothing takes a cache lock while holding a pool lock.
 */
#ifndef _URCU_RSEQ_PERCPU_FORK_H
#define _URCU_RSEQ_PERCPU_FORK_H

#define URCU_RSEQ_FORK_HOOKS(mod)					\
	__attribute__((visibility("hidden")))				\
	void urcu_rseq_##mod##_fork_prepare(void);			\
	__attribute__((visibility("hidden")))				\
	void urcu_rseq_##mod##_fork_parent(void);			\
	__attribute__((visibility("hidden")))				\
	void urcu_rseq_##mod##_fork_child(void)

URCU_RSEQ_FORK_HOOKS(cache);
URCU_RSEQ_FORK_HOOKS(freelist);
URCU_RSEQ_FORK_HOOKS(lock);
URCU_RSEQ_FORK_HOOKS(counter);
URCU_RSEQ_FORK_HOOKS(pool);

#endif /* _URCU_RSEQ_PERCPU_FORK_H */
