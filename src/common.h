// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * src/common.h - what the primitives' slow paths share, written once: the
 * futex wrapper, the spin/back-off policy, debug checks, time arithmetic.
 * Internal to the library (not installed).
 */
#ifndef _URCU_RSEQ_COMMON_H
#define _URCU_RSEQ_COMMON_H

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <urcu/arch.h>
#include <urcu/compiler.h>
#include <urcu/uatomic.h>

#include <urcu/rseq.h>

/*
 * Debug checks (configure --enable-debug): misuse that is too costly to
 * detect on every call stops the program with a message naming the
 * primitive. Without --enable-debug they compile to nothing.
 */
#ifdef URCU_RSEQ_DEBUG
#define urcu_rseq_debug_check(cond, primitive, msg)			\
	do {								\
		if (caa_unlikely(!(cond))) {				\
			fprintf(stderr, "liburcu-rseq: %s: %s (%s:%d)\n", \
				primitive, msg, __FILE__, __LINE__);	\
			abort();					\
		}							\
	} while (0)
#else
#define urcu_rseq_debug_check(cond, primitive, msg)	do { } while (0)
#endif

/*
 * Thread-locals read or written on a fast path are initial-exec, as the
 * library's other hot ones: in a shared library the default model calls
 * __tls_get_addr() for them, again after each atomic instruction.
 */
#define FAST_TLS	__thread __attribute__((tls_model("initial-exec")))

/*
 * The kernel's time-slice extension for the calling thread (src/rseq.c):
 * its request byte (the granted byte follows), or NULL where there is
 * none; and the yield that ends a granted extension.
 */
uint8_t *urcu_rseq_slice_enable(void);
void urcu_rseq_slice_yield(void);

/*
 * Futex on a 32-bit word, private to the process. liburcu's urcu/futex.h
 * provides the raw system call; these add the timeout conventions used by
 * every primitive: @abstime is absolute on @clock (CLOCK_MONOTONIC or
 * CLOCK_REALTIME), NULL waits forever. Returns 0 when woken or when *uaddr
 * no longer held @val, ETIMEDOUT, or EINTR (a signal: the caller rechecks
 * its condition and waits again). Spurious returns happen: callers loop.
 */
static inline int urcu_rseq_futex_wait(int32_t *uaddr, int32_t val,
		clockid_t clock, const struct timespec *abstime)
{
	int op = FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG;
	long ret;

	if (abstime && clock == CLOCK_REALTIME)
		op |= FUTEX_CLOCK_REALTIME;
	ret = syscall(SYS_futex, uaddr, op, val, abstime, NULL,
			FUTEX_BITSET_MATCH_ANY);
	if (ret == 0 || errno == EAGAIN)
		return 0;
	return errno;	/* ETIMEDOUT, EINTR; EINVAL for a bad deadline */
}

/* Wake up to @nr waiters; returns how many were woken. */
static inline int urcu_rseq_futex_wake(int32_t *uaddr, int nr)
{
	long ret = syscall(SYS_futex, uaddr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG,
			nr, NULL, NULL, 0);

	return ret < 0 ? 0 : (int) ret;
}

/*
 * Spin/back-off policy for waits that do not sleep on a futex: pause with a
 * doubling budget, then sched_yield(), then short sleeps, so that a waiter
 * never burns the CPU that the holder needs to finish.
 */
struct urcu_rseq_backoff {
	unsigned int step;
};

#define URCU_RSEQ_BACKOFF_INIT	{ 0 }
#define URCU_RSEQ_BACKOFF_SPIN_STEPS	10	/* up to 2^10 pauses */
#define URCU_RSEQ_BACKOFF_YIELD_STEPS	20
#define URCU_RSEQ_BACKOFF_SLEEP_NS	50000L

/*
 * One step of a back-off: 2^step pauses for steps below @spin_steps, then
 * sched_yield() for steps below @yield_steps, then 50 us sleeps. With
 * @yield_steps equal to @spin_steps it never yields.
 */
static inline void urcu_rseq_backoff_steps(struct urcu_rseq_backoff *b,
	unsigned int spin_steps, unsigned int yield_steps)
{
	unsigned int i;

	if (b->step < spin_steps) {
		for (i = 0; i < (1U << b->step); i++)
			caa_cpu_relax();
	} else if (b->step < yield_steps) {
		sched_yield();
	} else {
		struct timespec ts = { 0, URCU_RSEQ_BACKOFF_SLEEP_NS };

		nanosleep(&ts, NULL);
		return;
	}
	b->step++;
}

static inline void urcu_rseq_backoff(struct urcu_rseq_backoff *b)
{
	urcu_rseq_backoff_steps(
		b, URCU_RSEQ_BACKOFF_SPIN_STEPS, URCU_RSEQ_BACKOFF_YIELD_STEPS);
}

static inline void urcu_rseq_backoff_reset(struct urcu_rseq_backoff *b)
{
	b->step = 0;
}

/*
 * Fault injection (configure --enable-fault-injection): slow-path
 * protocols call urcu_rseq_fi_point() between their atomic steps; with
 * URCU_RSEQ_FI_LOOPS=N in the environment it spins N pauses and now and then
 * yields the CPU, so that other threads run inside the window. Compiles to
 * nothing otherwise.
 */
#ifdef URCU_RSEQ_FAULT_INJECTION
static inline void urcu_rseq_fi_point(void)
{
	static __thread unsigned int seed = 1;
	int i, n = CMM_LOAD_SHARED(urcu_rseq_fi_loops);

	if (caa_likely(n <= 0))
		return;
	for (i = 0; i < n; i++)
		caa_cpu_relax();
	seed = seed * 1103515245U + 12345U;
	if ((seed >> 16) % 8 == 0)
		sched_yield();
}
#else
static inline void urcu_rseq_fi_point(void)
{
}
#endif

/* Time arithmetic. */
#define URCU_RSEQ_NSEC_PER_SEC	1000000000LL

static inline int64_t urcu_rseq_ts_to_ns(const struct timespec *ts)
{
	return (int64_t) ts->tv_sec * URCU_RSEQ_NSEC_PER_SEC + ts->tv_nsec;
}

static inline int64_t urcu_rseq_now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return urcu_rseq_ts_to_ns(&ts);
}

/* A deadline is valid when tv_nsec is in [0, 1e9) and tv_sec >= 0. */
static inline bool urcu_rseq_ts_valid(const struct timespec *ts)
{
	return ts->tv_sec >= 0 && ts->tv_nsec >= 0
		&& ts->tv_nsec < URCU_RSEQ_NSEC_PER_SEC;
}

/* Has the deadline @abstime on @clock passed? */
static inline bool urcu_rseq_ts_passed(clockid_t clock,
		const struct timespec *abstime)
{
	return urcu_rseq_now_ns(clock) >= urcu_rseq_ts_to_ns(abstime);
}

#endif /* _URCU_RSEQ_COMMON_H */
