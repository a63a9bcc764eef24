// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * src/wait-internal.h - what src/wait.c shares with src/cond.c: the adaptive
 * spin policy and the pieces of the wait-stack protocol that condition
 * variables build on (chained broadcast, cancelling a wait). Not installed.
 */
#ifndef _URCU_RSEQ_WAIT_INTERNAL_H
#define _URCU_RSEQ_WAIT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <urcu/wait.h>

/* Node states (bits of urcu_wait_node.state). */
#define URCU_WAIT_WAITING	0
#define URCU_WAIT_SLEEPING	(1 << 0)	/* waiter is in (or entering) futex wait */
#define URCU_WAIT_WAKEUP	(1 << 1)	/* a waker woke it */
#define URCU_WAIT_TIMEDOUT	(1 << 2)	/* the waiter gave up first */
#define URCU_WAIT_TEARDOWN	(1 << 3)	/* the waker's last access is done */
#define URCU_WAIT_CHAIN		(1 << 4)	/* woken by a chained broadcast */
/*
 * Popped by a chained broadcast, to be woken when the chain reaches it:
 * the waiter no longer has a deadline and never touches the queue again.
 */
#define URCU_WAIT_DETACHED	(1 << 5)
/*
 * A timed-out waiter whose node a waker popped has released the queue
 * lock for good: the waker may return, and the queue may be freed.
 */
#define URCU_WAIT_LEFT		(1 << 6)

/* Spin outcome. */
enum urcu_wait_spin_result {
	URCU_WAIT_SPIN_CHANGED,		/* *word != val */
	URCU_WAIT_SPIN_EXHAUSTED,	/* budget spent: go to sleep */
	URCU_WAIT_SPIN_DEADLINE,	/* the deadline passed */
};

/*
 * Spin while *@word == @val for the calling thread's adaptive budget, or
 * until @abstime on @clock (may be NULL) passes. *@start_ns receives the
 * CLOCK_MONOTONIC time the spin first read the clock, for urcu_wait_adapt(),
 * or 0 if the word changed before that (a wait too short to measure).
 * @first: no other waiter waits before this one (the wait's queue was
 * empty when it joined). On a CPU found crowded it gives the CPU away
 * (sched_yield) rather than pausing; the policy is described above
 * urcu_wait_spin() in src/wait.c.
 */
enum urcu_wait_spin_result urcu_wait_spin(int32_t *word, int32_t val,
		clockid_t clock, const struct timespec *abstime,
		int64_t *start_ns, bool first);

/*
 * The calling thread has just woken a waiter. With @first (no other waiter
 * before this one), its next urcu_wait_spin() is a hand-off: on a busy
 * machine it spins a few microseconds instead of sleeping at once.
 */
void urcu_wait_note_woke(void);

/*
 * Feed back the duration of a wait that began at @start_ns and was woken;
 * @slept: it went through a futex sleep (its length then includes the
 * wake-up latency).
 */
void urcu_wait_adapt(int64_t start_ns, bool slept);

/*
 * The same for a wait that slept and whose waker woke it at @waker_ns
 * (CLOCK_MONOTONIC): judged on the time until then, not on the wake-up
 * latency after it. A @waker_ns before @start_ns means unknown.
 */
void urcu_wait_adapt_waker(int64_t start_ns, int64_t waker_ns);

/*
 * urcu_wait_clock() for condition variables: on success *@chain receives
 * the rest of a chained broadcast that this waiter must pass on with
 * urcu_wait_wake_chain() (NULL if none). With @cancellable, the futex sleep
 * is a point where the thread may act on a pthread_cancel() (asynchronous
 * cancel type around the system call only): the caller then has a cleanup
 * handler that calls urcu_wait_cancel().
 */
int urcu_wait_chained(struct urcu_wait_node *n, clockid_t clock,
		const struct timespec *abstime, struct cds_wfs_node **chain,
		bool cancellable);

/*
 * Withdraw @n (added, waited on or not, not returned from a wait) as a
 * timeout would. Returns 0 if the node was withdrawn; 1 if a single wake
 * (urcu_wait_wake_one) had already woken it: the caller owes the queue the
 * wake-up it consumed; 2 if a chained broadcast woke it or had popped it
 * (then it waits until the chain reaches it): *@chain is the rest of the
 * chain to pass on, as after urcu_wait_chained() returning 0, and nothing
 * is owed to the queue (the broadcast woke everyone; the queue may be gone).
 */
int urcu_wait_cancel(struct urcu_wait_node *n, struct cds_wfs_node **chain);

/*
 * For destroy: false if a waiter is queued; else waits until no waiter that
 * withdrew on its own (timeout, cancellation) still holds the queue lock,
 * and returns true: nobody touches @q afterwards, unless a thread adds to
 * it or a wake call is still running. Full barrier.
 */
bool urcu_wait_queue_quiesce(struct urcu_wait_queue *q);

/*
 * urcu_wait_wake_one() for a condition's signal: while the machine is
 * busy, the waiter below the newest when there are two or more.
 */
bool urcu_wait_wake_one_signal(struct urcu_wait_queue *q);

/*
 * Broadcast that wakes one waiter and hands it the rest of the waiters,
 * each woken waiter waking the next when it calls urcu_wait_wake_chain().
 * Every popped waiter is DETACHED (or, if it had timed out, has LEFT the
 * queue) before this returns: none of them touches @q afterwards, so the
 * queue's memory may be reused at once.
 */
void urcu_wait_wake_all_chained(struct urcu_wait_queue *q);
void urcu_wait_wake_chain(struct cds_wfs_node *chain);

#endif /* _URCU_RSEQ_WAIT_INTERNAL_H */
