// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/wait.h - wait-stacks: a lock-free stack of waiting threads, each
 * waiting on a word of its own with an adaptive busy-wait, then a futex.
 *
 * A waiter declares a struct urcu_wait_node on its own stack, pushes it with
 * urcu_wait_add() and blocks in urcu_wait(). A waker pops nodes and wakes
 * their owners with urcu_wait_wake_one() or urcu_wait_wake_all().
 *
 * Who may call what concurrently:
 * - urcu_wait_add(): any thread, any number at once; wait-free (one xchg).
 * - urcu_wait(): only the thread that added the node, once per add.
 * - urcu_wait_wake_one(), urcu_wait_wake_all(): any thread, any number at
 *   once, also concurrently with adds and with waits that time out.
 *   They serialize on a small lock in the queue that is held only while
 *   nodes are unlinked, never while a thread is woken.
 *
 * Guarantees:
 * - Wake-up order is LIFO: wake_one wakes the most recently added waiter
 *   still waiting (it is the one whose stack and data are cache-hot, and
 *   the one most likely to still be spinning rather than asleep).
 *   wake_all wakes from the newest to the oldest. There is no FIFO
 *   fairness: a waiter can be overtaken by later arrivals forever if the
 *   waker only ever calls wake_one and waiters keep arriving.
 * - Memory ordering: everything the waker did before the wake that woke a
 *   waiter happens before everything that waiter does after urcu_wait()
 *   returns 0. urcu_wait_add() is a full barrier.
 * - A node is private to its waiter again when urcu_wait() returns, woken
 *   or timed out: no other thread reads or writes it afterwards (the node
 *   may live on the waiter's stack). This is the TEARDOWN handshake: a waker
 *   that popped a node ends its use of the node with one write that sets
 *   the TEARDOWN bit, and the waiter does not return before it sees that
 *   bit. The one thing that may follow is the futex wake of a waiter that
 *   slept: a private FUTEX_WAKE system call names the address and neither
 *   reads nor writes the memory there, so whatever reuses that memory as a
 *   futex word may see one spurious wake-up (as with glibc's own mutexes
 *   and semaphores; every futex waiter must tolerate those anyway).
 * - A waiter that timed out is never woken later, and a wake_one that pops
 *   it wakes the next waiter instead.
 *
 * The protocol, on the node's 32-bit state word (initially WAITING):
 *
 *   waiter                               waker (holds the node popped)
 *   spin while state == WAITING          WAITING  -CAS-> WAKEUP|TEARDOWN
 *   WAITING -CAS-> SLEEPING, futex wait  SLEEPING -CAS-> WAKEUP|TEARDOWN,
 *                                          then futex wake (no access)
 *   deadline: WAITING|SLEEPING           TIMEDOUT: store TIMEDOUT|TEARDOWN,
 *     -CAS-> TIMEDOUT                      pop the next node
 *
 * A woken waiter thus returns as soon as it sees WAKEUP: it never waits for
 * a waker that may have been preempted between its CAS and its futex call.
 *
 * Exactly one CAS decides the node's fate: the waker's (woken) or the
 * waiter's (timed out). Why a timed-out waiter may return:
 * - it won the CAS to TIMEDOUT, so no waker will ever wake it; but a waker
 *   may hold the node (popped, not yet looked at) or may pop it later, so
 *   the waiter takes the queue lock, which every popper also holds while it
 *   pops. Under the lock, either the node is still linked, the waiter
 *   unlinks it itself, and once the lock is released no waker can reach
 *   it; or a waker already popped it, and that waker will see TIMEDOUT and
 *   end with the TEARDOWN store, which the waiter waits for.
 * - pushers never write a linked node (only their own node's next field),
 *   so unlinking under the lock is safe against concurrent adds.
 *
 * Waiting adapts: a waiter spins for a budget learned from how long its
 * thread's recent waits lasted (moved towards twice the recent wait
 * durations, shrunk by an eighth by waits too long to be worth spinning
 * for, never below about one futex sleep's CPU cost: 4 us), then sleeps
 * on FUTEX_WAIT_PRIVATE. It yields the CPU every 2 us of spinning, counted
 * across its thread's waits so that short waits are covered too; a yield
 * that ran another thread marks the CPU crowded, and on a crowded CPU the
 * waiter gives the CPU away instead of pausing (the threads sharing it,
 * e.g. the workers a producer waits for, run meanwhile), unless another
 * waiter on that CPU does so already: then it sleeps, as yielding round
 * among waiters only keeps them all runnable. A yield that lost a whole
 * time slice (1 ms: another process's thread took the CPU) turns this off
 * for the next 16 waits, doubling up to 64K while it happens again. A
 * waker issues the futex
 * wake only when the waiter announced it sleeps (state SLEEPING); a
 * spinning or yielding waiter costs one CAS.
 *
 * A zero-filled struct urcu_wait_queue is a valid, empty queue.
 */
#ifndef _URCU_WAIT_H
#define _URCU_WAIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>	/* clockid_t */
#include <time.h>
#include <urcu/wfstack.h>
#include <urcu/rseq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct urcu_wait_queue {
	struct __cds_wfs_stack stack;	/* NULL head: empty, as CDS_WFS_END */
	int32_t lock;			/* serializes poppers and unlinkers */
	uint32_t flags;			/* reserved, zero */
};

struct urcu_wait_node {
	struct cds_wfs_node wfs;
	int32_t state;
	uint32_t wake_ns;	/* when a sleeper's waker woke it (low bits) */
	struct urcu_wait_queue *queue;	/* set by urcu_wait_add() */
};

#define URCU_WAIT_QUEUE_INITIALIZER	{ { NULL }, 0, 0 }
#define DEFINE_URCU_WAIT_QUEUE(name)					\
	struct urcu_wait_queue name = URCU_WAIT_QUEUE_INITIALIZER

URCU_RSEQ_API void urcu_wait_queue_init(struct urcu_wait_queue *q);
URCU_RSEQ_API void urcu_wait_node_init(struct urcu_wait_node *n);

/*
 * Push @n (initialized, not on any queue) on @q. Returns true if the queue
 * was empty. Full memory barrier.
 */
URCU_RSEQ_API bool urcu_wait_add(struct urcu_wait_queue *q,
		struct urcu_wait_node *n);

/*
 * Block until a waker wakes @n (returns 0) or the absolute deadline
 * @abstime on CLOCK_MONOTONIC passes (ETIMEDOUT; NULL: no deadline).
 * EINVAL: @n was not added, or @abstime is not a valid timespec (then the
 * node is left on the queue, as if urcu_wait() had not been called).
 * On return the node is off the queue and reinitialized: it may be added
 * again.
 */
URCU_RSEQ_API int urcu_wait(struct urcu_wait_node *n,
		const struct timespec *abstime);

/* As urcu_wait(), with @abstime on @clock (CLOCK_MONOTONIC or CLOCK_REALTIME). */
URCU_RSEQ_API int urcu_wait_clock(struct urcu_wait_node *n, clockid_t clock,
		const struct timespec *abstime);

/* Wake every waiter on @q; returns how many were woken. */
URCU_RSEQ_API int urcu_wait_wake_all(struct urcu_wait_queue *q);

/* Wake the most recent waiter still waiting; false if there was none. */
URCU_RSEQ_API bool urcu_wait_wake_one(struct urcu_wait_queue *q);

/*
 * True if no waiter is on @q and no waiter that withdrew its own node
 * (deadline) still holds the queue lock: a snapshot, and a full barrier.
 * Once no thread will add to @q again and every wake call on it has
 * returned, true means nobody touches @q any more: it may be freed.
 */
URCU_RSEQ_API bool urcu_wait_queue_empty(struct urcu_wait_queue *q);

#ifdef __cplusplus
}
#endif

#endif /* _URCU_WAIT_H */
