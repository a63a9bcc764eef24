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
 * Order (outer first): cache, freelist, lock, counter, pool. Each hook
 * takes its primitive's registry lock first, then the locks of each live
 * object. The nestings that exist in the code, all outer to inner in this
 * order:
 * - cache drain_lock -> cache lock (drain);
 * - cache drain_lock -> the cache's free list's remote, index and shared
 *   locks (drain takes every list), and cache lock -> the same (refill at
 *   max_objects takes the CPU lists back);
 * - pool_lock is taken by urcu_percpu_zmalloc()/urcu_percpu_free(), which
 *   the free list and counter call from create/destroy with none of their
 *   own locks held; nothing is taken while pool_lock is held, so it is
 *   innermost.
 * Caches and free lists never call into per-CPU locks or counters while
 * holding a lock, and per-CPU locks and counters never call into caches or
 * free lists: the place of lock and counter between them is free, and the
 * pool stays last for whatever of theirs takes it.
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

/*
 * Registers the hooks once (also done by a constructor); every create
 * function calls it first, before it takes any lock, so that a static
 * link keeps the registration.
 */
__attribute__((visibility("hidden")))
void urcu_rseq_percpu_fork_register(void);

URCU_RSEQ_FORK_HOOKS(cache);
URCU_RSEQ_FORK_HOOKS(freelist);
URCU_RSEQ_FORK_HOOKS(lock);
URCU_RSEQ_FORK_HOOKS(counter);
URCU_RSEQ_FORK_HOOKS(pool);

#endif /* _URCU_RSEQ_PERCPU_FORK_H */
