// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/mutex.h - adaptive mutex: a waiter spins only while the owner is
 * running, and sleeps on a futex as soon as the owner is not.
 *
 * Guarantees:
 * - Mutual exclusion. urcu_mutex_lock(), a successful urcu_mutex_trylock()
 *   and a urcu_mutex_timedlock() that returns 0 are acquire operations;
 *   urcu_mutex_unlock() is a release operation: everything the previous
 *   owner wrote before unlocking is visible to the next owner after it
 *   locks (the same ordering as pthread_mutex).
 * - No waiter starves: a waiter that has waited URCU_MUTEX_HANDOFF_NS
 *   (1 ms) asks for a hand-off; the next unlock then gives the lock
 *   directly to one such waiter instead of letting a newcomer barge in.
 *   See doc/mutex.md for the bound this gives.
 * - Unlock skips the futex wake-up system call when nobody sleeps.
 *
 * Who may call what:
 * - lock, trylock, timedlock: any thread, concurrently. Not recursive: a
 *   thread that locks a mutex it holds deadlocks (the debug build aborts).
 * - unlock: the owner only. Any other thread gets EPERM and the lock is
 *   left as it was (the debug build aborts with a message).
 * - init: before any other use; destroy: when no thread uses the mutex any
 *   more (EBUSY while it is held, or while a waiter sits in its hand-off
 *   slot; the debug build aborts). Destroying it while other threads still
 *   wait for it is undefined, as for pthread_mutex_destroy().
 * - None of them from a signal handler.
 *
 * Lifecycle: once urcu_mutex_unlock() has released the lock it no longer
 * touches the mutex, so the thread that locks it next may unlock, destroy
 * and free it at once (e.g. the memory holding it, when a reference count
 * kept under the mutex drops to zero); destroy then returns 0.
 * urcu_mutex_timedlock() that returns ETIMEDOUT does not touch the mutex
 * after it returns either.
 *
 * Thread exit: a thread that exits while it holds a mutex leaves it locked
 * for ever. Owner ids are recycled, with a new generation each time: a
 * thread that reuses an exited thread's id slot neither owns that mutex
 * (is_owner is false) nor may unlock it (EPERM), until the slot's 8-bit
 * generation wraps: a freed slot is reused, oldest first, only while more
 * than 256 are free, so at least 256 other threads exit between its
 * release and its reuse, and the same id comes back after at least 65536
 * thread exits.
 *
 * fork(): the child's thread keeps its id and owns the mutexes it held in
 * the parent; a mutex held by any other thread of the parent stays held in
 * the child, by nobody (as with a pthread mutex): nobody may unlock it.
 * Parent threads that waited for a mutex are not waiters in the child. All
 * other operations work in the child, in new threads too.
 */
#ifndef _URCU_MUTEX_H
#define _URCU_MUTEX_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <urcu/rseq.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Signals the owner-running test combines (bits of
 * urcu_mutex_attr.owner_signals). A waiter spins while none of the enabled
 * signals says the owner is off its CPU, up to the spin cap.
 */
/* A kernel-provided on-CPU flag for the owner (none on Linux <= 6.18). */
#define URCU_MUTEX_OWNER_KERNEL		(1U << 0)
/* The owner's rseq cpu_id is the waiter's own CPU: it cannot be running. */
#define URCU_MUTEX_OWNER_SAME_CPU	(1U << 1)
/* The owner marked itself blocked in the kernel (futex wait of this API). */
#define URCU_MUTEX_OWNER_BLOCKED	(1U << 2)
/* The owner has held the lock far longer than the holds observed. */
#define URCU_MUTEX_OWNER_HOLD_TIME	(1U << 3)
/* /proc/self/task/<tid>/stat says the owner sleeps (slow: off by default). */
#define URCU_MUTEX_OWNER_PROC_STAT	(1U << 4)

#define URCU_MUTEX_OWNER_DEFAULT	(URCU_MUTEX_OWNER_KERNEL	\
		| URCU_MUTEX_OWNER_SAME_CPU | URCU_MUTEX_OWNER_BLOCKED	\
		| URCU_MUTEX_OWNER_HOLD_TIME)
#define URCU_MUTEX_OWNER_ALL		(URCU_MUTEX_OWNER_DEFAULT	\
		| URCU_MUTEX_OWNER_PROC_STAT)
/*
 * Owner-running test off: spin a fixed time, then sleep (the ablation).
 * The short cap after a preempted spin (doc/mutex.md) still applies.
 */
#define URCU_MUTEX_OWNER_NONE		0U

/* Waiting time after which a waiter asks for a hand-off. */
#define URCU_MUTEX_HANDOFF_NS		1000000

struct urcu_mutex_attr {
	unsigned int owner_signals;	/* URCU_MUTEX_OWNER_* bits */
	/* Longest spin of one wait before sleeping, ns; 0: the default (100 us). */
	unsigned int spin_ns;
};

#define URCU_MUTEX_ATTR_INITIALIZER	{ URCU_MUTEX_OWNER_DEFAULT, 0 }

/*
 * The lock word holds the owner's thread id (0: unlocked) and the sleeper,
 * awake-waiter and hand-off bits; the rest is slow-path state. All-zero is an unlocked
 * mutex with the default attributes.
 */
struct urcu_mutex {
	int32_t state;
	uint32_t seq;		/* acquisitions, so waiters see each hold */
	int32_t handoff;	/* id of the waiter the next unlock serves */
	uint32_t signals_off;	/* default signals this mutex does not use */
	uint32_t spin_ns;
	uint32_t hold_ns;	/* average hold seen by waiters (EMA) */
};

#define URCU_MUTEX_INITIALIZER		{ 0, 0, 0, 0, 0, 0 }

/* Fill @attr with the defaults. EINVAL for NULL. */
URCU_RSEQ_API int urcu_mutex_attr_init(struct urcu_mutex_attr *attr);
/* @attr NULL: defaults. EINVAL for NULL @m or unknown signal bits. */
URCU_RSEQ_API int urcu_mutex_init(struct urcu_mutex *m,
		const struct urcu_mutex_attr *attr);
URCU_RSEQ_API void urcu_mutex_lock(struct urcu_mutex *m);
URCU_RSEQ_API bool urcu_mutex_trylock(struct urcu_mutex *m);
/*
 * @abstime on CLOCK_REALTIME, like pthread_mutex_timedlock(). 0 (locked),
 * ETIMEDOUT, EINVAL for a bad @abstime (checked before anything else).
 */
URCU_RSEQ_API int urcu_mutex_timedlock(struct urcu_mutex *m,
		const struct timespec *abstime);
/* 0, or EPERM when the calling thread is not the owner. */
URCU_RSEQ_API int urcu_mutex_unlock(struct urcu_mutex *m);
/*
 * 0; EBUSY while held or while a waiter is in the hand-off slot; EINVAL for
 * NULL. 0 right after the last unlock, whatever waiters left before.
 */
URCU_RSEQ_API int urcu_mutex_destroy(struct urcu_mutex *m);

/* Does the calling thread hold @m? (For assertions.) */
URCU_RSEQ_API bool urcu_mutex_is_owner(struct urcu_mutex *m);

/*
 * Other primitives (urcu_cond, wait-stacks) bracket their futex sleeps with
 * these, so that waiters for a mutex the sleeper holds stop spinning.
 * Nestable; a thread-local count and a plain store, no atomic instruction;
 * a thread that never locked a mutex takes no id for them.
 */
URCU_RSEQ_API void urcu_mutex_blocking_begin(void);
URCU_RSEQ_API void urcu_mutex_blocking_end(void);

/* Name of the owner-running backend chosen at run time ("kernel", "userspace"). */
URCU_RSEQ_API const char *urcu_mutex_owner_backend(void);

#ifdef __cplusplus
}
#endif

#endif /* _URCU_MUTEX_H */
