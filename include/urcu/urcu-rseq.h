// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/urcu-rseq.h - an RCU flavor whose readers count on per-CPU counters
 * with rseq: no thread registration, and a grace period whose cost grows
 * with the number of CPUs, not of threads. It follows liburcu's flavor
 * conventions: the urcu_rseq_* names below, the generic names
 * (rcu_read_lock(), synchronize_rcu(), call_rcu(), rcu_flavor ...) through
 * <urcu/map/urcu-rseq.h>, the read side inline with _LGPL_SOURCE, and
 * urcu_rseq_flavor for liburcu-cds (cds_lfht_new_flavor()).
 *
 * What it guarantees (the same as liburcu's flavors): when
 * urcu_rseq_synchronize_rcu() returns, every read-side section that was
 * running when it was called has ended, and a full memory barrier
 * separates each such section's accesses from the caller's later ones;
 * a section that began after the call sees every store the caller made
 * before the call. urcu_rseq_call_rcu() runs its callback after such a
 * grace period, on a call_rcu worker thread.
 *
 * Who may call what:
 * - read_lock/read_unlock/read_ongoing: any thread, registered or not,
 *   async-signal-safe; sections nest. A thread must not synchronize_rcu()
 *   or barrier() inside a section (it would wait for itself).
 * - synchronize_rcu, call_rcu: any thread; call_rcu also from callbacks.
 *   Concurrent synchronize_rcu() callers share grace periods.
 * - barrier: any thread outside a section, but not from a callback.
 * - register/unregister_thread, thread_offline/online, quiescent_state:
 *   accepted for compatibility, never required.
 * - fork: nothing to call; the library's pthread_atfork() handlers give the
 *   child working grace periods, call_rcu() and rcu_barrier() whatever the
 *   other threads of the parent were doing, fork() inside a read-side
 *   section included (the child's thread stays inside it). Explicit calls
 *   of the call_rcu fork hooks, as liburcu's flavors need, nest with them.
 *   Not covered: children made without the handlers (_Fork(), clone()).
 */
#ifndef _URCU_URCU_RSEQ_H
#define _URCU_URCU_RSEQ_H

#include <stdlib.h>
#include <pthread.h>
#include <urcu/pointer.h>
#include <urcu/rseq.h>
#include <stdbool.h>
#include <urcu/call-rcu.h>
#include <urcu/flavor.h>

/*
 * Grace-period polling: liburcu 0.14's urcu/urcu-poll.h (which its
 * urcu/flavor.h includes) declares the state; with an older liburcu, the
 * same declaration under the same guard, so that either can come first.
 */
#ifndef _URCU_POLL_H
#define _URCU_POLL_H
struct urcu_gp_poll_state {
	unsigned long grace_period_id;
};
#endif

#ifdef __cplusplus
extern "C" {
#endif

#include <urcu/map/urcu-rseq.h>

#ifdef _LGPL_SOURCE

#include <urcu/static/urcu-rseq.h>

#define urcu_rseq_read_lock		_urcu_rseq_read_lock
#define urcu_rseq_read_unlock		_urcu_rseq_read_unlock
#define urcu_rseq_read_ongoing		_urcu_rseq_read_ongoing

#else /* !_LGPL_SOURCE */

URCU_RSEQ_API void urcu_rseq_read_lock(void);
URCU_RSEQ_API void urcu_rseq_read_unlock(void);
URCU_RSEQ_API int urcu_rseq_read_ongoing(void);

#endif /* !_LGPL_SOURCE */

URCU_RSEQ_API void urcu_rseq_synchronize_rcu(void);

/*
 * Grace-period polling, as liburcu 0.14 has it, on every liburcu:
 * start_poll_synchronize_rcu() makes sure a grace period starts after the
 * call (the call_rcu worker runs one) and returns its state, which
 * poll_state_synchronize_rcu() answers true for once that grace period has
 * ended: what was unpublished before the start may be freed then. Neither
 * waits; any thread, the poll also inside a read-side section.
 */
URCU_RSEQ_API struct urcu_gp_poll_state
	urcu_rseq_start_poll_synchronize_rcu(void);
URCU_RSEQ_API bool urcu_rseq_poll_state_synchronize_rcu(
		struct urcu_gp_poll_state state);

/* Optional: registers the thread's rseq area early; never required. */
URCU_RSEQ_API void urcu_rseq_register_thread(void);
URCU_RSEQ_API void urcu_rseq_unregister_thread(void);

/* Idempotent; the library calls it from its constructor. */
URCU_RSEQ_API void urcu_rseq_init(void);
URCU_RSEQ_API void urcu_rseq_exit(void);

/* No quiescent states to announce: readers are counted, not scanned. */
static inline void urcu_rseq_quiescent_state(void)
{
}

static inline void urcu_rseq_thread_offline(void)
{
}

static inline void urcu_rseq_thread_online(void)
{
}

/*
 * call_rcu, with liburcu's call_rcu data. Each data is a queue with a
 * worker thread of its own that runs its callbacks after a grace period,
 * in the order they were queued. call_rcu() uses the calling thread's data
 * (set_thread_call_rcu_data()), else the current CPU's
 * (set_cpu_call_rcu_data(), create_all_cpu_call_rcu_data()), else the
 * default data, whose worker starts on first use.
 * create_call_rcu_data(flags, cpu): a new worker, pinned to @cpu when
 * @cpu >= 0 (unpinned if the CPU cannot be used); with URCU_CALL_RCU_RT
 * the worker polls its queue every 10 ms and call_rcu() never wakes it.
 * call_rcu_data_free(): stops the worker after its current batch and
 * hands the callbacks still queued to the default data; the caller first
 * makes sure no thread or CPU uses the data (the default data and NULL
 * are not freed). free_all_cpu_call_rcu_data() unsets every CPU's data,
 * waits for a grace period, then frees them. barrier() waits for the
 * callbacks queued on every data before it. set_cpu_call_rcu_data()
 * returns 0, or -EINVAL (bad CPU), -EEXIST (CPU already set) or -ENOMEM
 * with errno set. In a fork child, data other than the default are gone
 * (their callbacks moved to the default), as in liburcu.
 */
URCU_RSEQ_API void urcu_rseq_call_rcu(struct rcu_head *head,
		void (*func)(struct rcu_head *head));
URCU_RSEQ_API void urcu_rseq_barrier(void);

URCU_RSEQ_API struct call_rcu_data *urcu_rseq_create_call_rcu_data(
		unsigned long flags, int cpu_affinity);
URCU_RSEQ_API void urcu_rseq_call_rcu_data_free(struct call_rcu_data *crdp);
URCU_RSEQ_API struct call_rcu_data *urcu_rseq_get_default_call_rcu_data(void);
URCU_RSEQ_API struct call_rcu_data *urcu_rseq_get_cpu_call_rcu_data(int cpu);
URCU_RSEQ_API struct call_rcu_data *urcu_rseq_get_thread_call_rcu_data(void);
URCU_RSEQ_API struct call_rcu_data *urcu_rseq_get_call_rcu_data(void);
URCU_RSEQ_API pthread_t urcu_rseq_get_call_rcu_thread(
		struct call_rcu_data *crdp);
URCU_RSEQ_API void urcu_rseq_set_thread_call_rcu_data(
		struct call_rcu_data *crdp);
URCU_RSEQ_API int urcu_rseq_set_cpu_call_rcu_data(int cpu,
		struct call_rcu_data *crdp);
URCU_RSEQ_API int urcu_rseq_create_all_cpu_call_rcu_data(unsigned long flags);
URCU_RSEQ_API void urcu_rseq_free_all_cpu_call_rcu_data(void);

/*
 * Fork hooks, installed by the library with pthread_atfork(); explicit
 * calls nest with those (a per-thread depth; the first after_fork_child()
 * repairs the child, unpaired after_fork calls do nothing). Outside a
 * section before_fork() pauses the worker and holds the grace-period lock
 * across fork(); inside one it takes nothing and the child repairs what it
 * inherited.
 */
URCU_RSEQ_API void urcu_rseq_call_rcu_before_fork(void);
URCU_RSEQ_API void urcu_rseq_call_rcu_after_fork_parent(void);
URCU_RSEQ_API void urcu_rseq_call_rcu_after_fork_child(void);

/*
 * defer_rcu, as liburcu documents it: each thread queues on its own ring
 * (registered on first use; register_thread() only does it early), a
 * worker runs the queued functions in batches, each after a grace period
 * that began after their defer_rcu() calls; a thread whose ring is full
 * drains it itself (one grace period). defer_barrier() returns after every
 * function queued before it by any thread has run, defer_barrier_thread()
 * after those of the calling thread; unregister_thread() runs the thread's
 * own, and a thread that exits without it leaves them to the worker.
 * Not inside a read-side section; a deferred function may call defer_rcu()
 * but not the barriers.
 */
URCU_RSEQ_API void urcu_rseq_defer_rcu(void (*fct)(void *p), void *p);
URCU_RSEQ_API int urcu_rseq_defer_register_thread(void);
URCU_RSEQ_API void urcu_rseq_defer_unregister_thread(void);
URCU_RSEQ_API void urcu_rseq_defer_barrier(void);
URCU_RSEQ_API void urcu_rseq_defer_barrier_thread(void);
URCU_RSEQ_API void urcu_rseq_defer_exit(void);

/* liburcu-cds registers its resize worker's fork hooks here. */
URCU_RSEQ_API void urcu_rseq_register_rculfhash_atfork(
		struct urcu_atfork *atfork);
URCU_RSEQ_API void urcu_rseq_unregister_rculfhash_atfork(
		struct urcu_atfork *atfork);

URCU_RSEQ_API extern const struct rcu_flavor_struct urcu_rseq_flavor;

#ifdef __cplusplus
}
#endif

#ifndef URCU_API_MAP
#include <urcu/map/clear.h>
#endif

#endif /* _URCU_URCU_RSEQ_H */
