// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/cond.h - condition variables and event counts built on wait-stacks
 * (urcu/wait.h).
 *
 * Condition variables (urcu_cond_*), POSIX semantics:
 * - A waiter pushes its node on the condition's wait-stack *before* it
 *   releases the mutex, so a signal or broadcast issued after the waiter
 *   released the mutex (or by a thread holding it) always finds it: no
 *   wake-up is lost.
 * - urcu_cond_signal() wakes at least one thread among those blocked when it
 *   was called (the most recent one: LIFO, see urcu/wait.h; while the
 *   machine is busy, the one before it when there are two or more), skipping
 *   waiters that already timed out. urcu_cond_broadcast() wakes all of them.
 *   Spurious wake-ups are possible only when a waiter whose wake-up was
 *   consumed fails to re-lock the mutex (the wake-up is passed on).
 * - Any thread may signal or broadcast, with or without the mutex held.
 *   Waiters on one condition must use the same mutex at a time (POSIX).
 * - Memory ordering: the waker's accesses before the signal happen before
 *   the woken waiter's accesses after it returns (the mutex orders the rest).
 * - A zero-filled struct urcu_cond is valid: initialized, CLOCK_REALTIME.
 *   The structure is at most 48 bytes, the size of glibc's pthread_cond_t,
 *   and keeps its clock inside, so it can live in one.
 * - urcu_cond_destroy() returns EBUSY while a thread is blocked on the
 *   condition (queued). Threads that a broadcast has woken never touch the
 *   condition again once it has returned, even if they have not yet left
 *   their wait, and a waiter that withdrew on its own (deadline,
 *   cancellation) has released the queue lock before destroy returns:
 *   destroying and freeing the condition right after a broadcast is safe,
 *   as with glibc. Not after a signal if a waiter may be cancelled at that
 *   moment: it passes the signal it consumed on through the condition.
 * - urcu_cond_wait(), urcu_cond_timedwait() and urcu_cond_wait_ops() are
 *   cancellation points, as pthread_cond_wait() is: a thread cancelled
 *   while it sleeps in the wait withdraws from the queue, passes on a
 *   wake-up it had consumed, and re-acquires the mutex (@lock_fn) before
 *   its cleanup handlers run. Only the futex sleep is a cancellation point
 *   (a wait that ends while spinning does not act on a pending request).
 *
 * Broadcast without a thundering herd: a broadcast pops every waiter at
 * once (they are no longer waiting: later signals cannot consume them) but
 * wakes only the most recent; each woken waiter, once it holds the mutex
 * again, wakes the next one. At any time at most one woken waiter is
 * competing for the mutex with its holder, instead of all of them; the last
 * one runs after as many mutex hand-offs as a herd would need anyway.
 *
 * The wait is mutex-agnostic: urcu_cond_wait_ops() takes lock and unlock
 * functions and their argument, so that any mutex (urcu_mutex, a spinlock,
 * pthread_mutex_t through urcu_cond_wait()) can be used.
 *
 * Event counts (urcu_ec_*) let a lock-free producer wake consumers waiting
 * for a condition without a mutex and without lost wake-ups:
 *
 *	consumer                          producer
 *	key = urcu_ec_prepare(&ec);       publish (e.g. enqueue);
 *	if (!condition())                 urcu_ec_notify(&ec);
 *		urcu_ec_wait(&ec, key, NULL);
 *
 * The event count is one 32-bit word: bit 0 says "the next notify must
 * count" (a consumer prepared since the last notify, or lately), bit 1 "a
 * consumer sleeps on the futex", bits 2-3 how many notifies after the next
 * keep bit 0 set, bits 4-31 count the notifies that found bit 0 set.
 * urcu_ec_prepare() sets bit 0 (an atomic operation unless it is set
 * already: a consumer that comes back at every notify pays one every fourth
 * round); urcu_ec_notify() is two loads and a full fence when bit 0 is
 * clear (no store: nobody prepared within the last four notifies), else
 * it counts in one CAS, its only barrier, and issues the futex wake only
 * if bit 1 was set (consumers still spinning cost no system call).
 * urcu_ec_wait() returns as soon as the count differs from @key. Prepare
 * and notify are full barriers; a consumer that prepared before a notify
 * sees all the producer did before the notify once urcu_ec_wait() returns.
 * A consumer that is preempted between prepare and wait for 2^28 notifies
 * may miss one (the count wraps).
 */
#ifndef _URCU_COND_H
#define _URCU_COND_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>	/* clockid_t */
#include <time.h>
#include <urcu/arch.h>
#include <urcu/system.h>
#include <urcu/wait.h>
#include <urcu/rseq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct urcu_cond {
	struct urcu_wait_queue queue;
	int32_t clock;		/* clockid_t of timed waits; 0: CLOCK_REALTIME */
	uint32_t reserved;	/* zero */
};

#define URCU_COND_INITIALIZER	{ URCU_WAIT_QUEUE_INITIALIZER, 0, 0 }

/* 0, or EINVAL: NULL, or @clock neither CLOCK_REALTIME nor CLOCK_MONOTONIC. */
URCU_RSEQ_API int urcu_cond_init(struct urcu_cond *c, clockid_t clock);
/* 0, EINVAL, or EBUSY while a thread is blocked on @c. */
URCU_RSEQ_API int urcu_cond_destroy(struct urcu_cond *c);

/*
 * Lock and unlock functions of the mutex a wait releases and re-acquires:
 * they return 0 or an error number.
 */
typedef int (*urcu_cond_lock_fn)(void *lock);

/*
 * The mutex-agnostic wait. The caller holds the mutex @lock; @unlock_fn
 * releases it after the caller is queued, @lock_fn re-acquires it before
 * return (also on ETIMEDOUT). @abstime is absolute on the condition's clock,
 * NULL for no limit. Returns 0 (woken; possibly spuriously), ETIMEDOUT,
 * EINVAL (bad argument or timespec: the mutex was not released), the
 * error of @unlock_fn (the wait is withdrawn, the mutex untouched) or the
 * error of @lock_fn (the mutex is not held).
 */
URCU_RSEQ_API int urcu_cond_wait_ops(struct urcu_cond *c,
		urcu_cond_lock_fn lock_fn, urcu_cond_lock_fn unlock_fn,
		void *lock, const struct timespec *abstime);

URCU_RSEQ_API int urcu_cond_wait(struct urcu_cond *c, pthread_mutex_t *m);
URCU_RSEQ_API int urcu_cond_timedwait(struct urcu_cond *c, pthread_mutex_t *m,
		const struct timespec *abstime);
/* As urcu_cond_timedwait(), @abstime on @clock (REALTIME or MONOTONIC). */
URCU_RSEQ_API int urcu_cond_clockwait(struct urcu_cond *c, pthread_mutex_t *m,
		clockid_t clock, const struct timespec *abstime);
URCU_RSEQ_API int urcu_cond_signal(struct urcu_cond *c);	/* 0 or EINVAL */
URCU_RSEQ_API int urcu_cond_broadcast(struct urcu_cond *c);	/* 0 or EINVAL */

/* Event counts. A zero-filled struct urcu_ec is valid. */
struct urcu_ec {
	int32_t word;
};

#define URCU_EC_INITIALIZER	{ 0 }
#define URCU_EC_WAITERS		1

URCU_RSEQ_API void urcu_ec_init(struct urcu_ec *ec);
/* Read the count before checking the condition; pass it to urcu_ec_wait(). */
URCU_RSEQ_API uint32_t urcu_ec_prepare(struct urcu_ec *ec);
/*
 * Block until a notify after @key's prepare (returns 0 at once if there was
 * one), or until @abstime on CLOCK_MONOTONIC passes (ETIMEDOUT). EINVAL:
 * NULL or a bad timespec. Spurious returns (0) are possible: recheck.
 */
URCU_RSEQ_API int urcu_ec_wait(struct urcu_ec *ec, uint32_t key,
		const struct timespec *abstime);
URCU_RSEQ_API void urcu_ec_notify_slow(struct urcu_ec *ec);

/*
 * A full fence that stores to nothing shared: on x86-64 a locked add of 0
 * to the stack, cheaper than mfence.
 */
static inline void urcu_ec_fence(void)
{
#if defined(__x86_64__)
	__asm__ __volatile__ ("lock; addl $0,0(%%rsp)" : : : "memory", "cc");
#else
	cmm_smp_mb();
#endif
}

/* Wake every consumer that prepared; cheap when none did. */
static inline void urcu_ec_notify(struct urcu_ec *ec)
{
	/*
	 * A consumer prepared: the CAS of urcu_ec_notify_slow() orders the
	 * publication, no fence before it (a hand-off pays one full barrier
	 * per notify, not two). Else the fence orders the producer's
	 * publication before the load of the flag. Both pair with the full
	 * barrier in urcu_ec_prepare().
	 */
	if (CMM_LOAD_SHARED(ec->word) & URCU_EC_WAITERS) {
		urcu_ec_notify_slow(ec);
		return;
	}
	urcu_ec_fence();
	if (caa_unlikely(CMM_LOAD_SHARED(ec->word) & URCU_EC_WAITERS))
		urcu_ec_notify_slow(ec);
}

#ifdef __cplusplus
}
#endif

#endif /* _URCU_COND_H */
