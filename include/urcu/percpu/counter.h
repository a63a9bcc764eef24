// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/percpu/counter.h - per-CPU counters: increments without atomic
 * instructions, an approximate read, an exact read-and-reset.
 *
 * A counter owns one item of a per-CPU pool (urcu/percpu/pool.h) holding
 * two slots per index, array A and array B, and a shared pointer @active to
 * index 0's slot of one of them. Adders add to their index's slot of the
 * active array; read_reset retires that array and sums it.
 *
 * Who may call what, concurrently:
 * - urcu_percpu_counter_add()/inc(): any thread, any number, also from
 *   signal handlers.
 * - urcu_percpu_counter_read(): any thread. The sum of the active array
 *   and the fallback slot: exact when no add and no read_reset runs,
 *   otherwise some value the counter passed through, give or take the adds
 *   in flight.
 * - urcu_percpu_counter_read_reset(): any thread (read_resets of one
 *   counter serialize on a lock). Returns exactly what was added since the
 *   previous read_reset (or creation): over any run, the sum of every
 *   read_reset plus a final read taken once the adders have stopped equals
 *   the sum of every add. Not from a signal handler.
 * - create/destroy: destroy only once no other call on the counter runs
 *   (no call touches the counter after it returned).
 * - fork(): handled by the library (pthread_atfork): fork waits for the
 *   read_resets and creations in progress; in the child every counter
 *   works, each add in flight in another thread counted wholly or not.
 *
 * Three ways to add, chosen per call (rseq) or per counter (atomic):
 *
 * 1. rseq (the fast path): one critical section, deref_addv, which loads
 *    @active *inside* the section and adds to active[index]: no atomic
 *    instruction, no barrier.
 * 2. A thread that cannot use rseq (urcu_rseq_index() < 0: no rseq, or
 *    URCU_RSEQ_DISABLE=1): uatomic_add() on the counter's fallback slot,
 *    which no rseq thread ever writes.
 * 3. A counter created while the RSEQ fence is unavailable is "atomic":
 *    every add is uatomic_add() on the slot of the caller's current CPU in
 *    array A, and read_reset takes each slot with uatomic_xchg(slot, 0).
 *    Atomic RMWs on one word are totally ordered, so each add lands either
 *    before the xchg that drains its slot (counted now) or after it (counted
 *    by a later read_reset). Exact, without the fence.
 *
 * Why read_reset is exact in the rseq case (steps of read_reset):
 *
 *   R0  invariant on entry: the retired array R (the one @active does not
 *       point to) is all zero.
 *   R1  CMM_STORE_SHARED(active, R)  (R becomes active; old array O retires)
 *   R2  urcu_rseq_fence()
 *   R3  sum = O[0..n-1]; O[k] = 0 for each non-zero slot
 *   R4  cmm_smp_wmb(); sum += uatomic_xchg(&fallback, 0)
 *
 *   An add's section loads @active (L) and commits with one store to
 *   base[index] (C). Take any add that loaded O at L:
 *   - If it was still running when the fence R2 began, the fence either
 *     waits until it has committed (C before R2 returns) or aborts it, and
 *     the retry loads @active afresh, inside its new section.
 *   - A section that starts after R2 reached its CPU loads R: the fence
 *     runs a full barrier on every CPU that runs a thread of the process,
 *     after R1 (membarrier orders the caller's prior stores before it;
 *     pairs with the barrier the kernel puts on every CPU), and a CPU that
 *     switches to one of our threads later goes through a full barrier too.
 *   So every committed add to O happened before R2 returned, and R2 is a
 *   full barrier between those commits and R3's loads (pairs with the
 *   rseq commit C): R3 sees all of them and no add to O follows, which
 *   makes the plain zeroing stores of R3 safe and re-establishes R0 for O.
 *   An add that loaded R counts in the next read_reset, never in this one.
 *   The zero stores of R3 must be visible before a later read_reset
 *   publishes O again (its R1): the wmb in R4 orders them before that store
 *   (pairs with the address dependency from L to C in the adders, and the
 *   lock between read_resets orders the resetters themselves).
 *   The fallback slot is disjoint from both arrays and only touched by
 *   atomics: each fallback add is before or after R4's xchg in that word's
 *   modification order, so it counts exactly once.
 *
 * urcu_percpu_counter_read() takes no lock and runs no fence: reading
 * while adds run is approximate by nature, and a read during a read_reset
 * may miss what that read_reset is about to return.
 *
 * Memory ordering for callers: add orders nothing (no barrier); read_reset
 * is a full barrier (the fence) between the caller and every add it counts.
 */
#ifndef _URCU_PERCPU_COUNTER_H
#define _URCU_PERCPU_COUNTER_H

#include <stdint.h>
#include <urcu/compiler.h>
#include <urcu/rseq.h>
#include <urcu/percpu/pool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* urcu_percpu_counter_create() flags: URCU_PERCPU_MM_CID (pool.h). */

/* counter->mode: how adds go (see above). */
#define URCU_PERCPU_COUNTER_RSEQ_CPU	URCU_RSEQ_INDEX_CPU
#define URCU_PERCPU_COUNTER_RSEQ_MM_CID	URCU_RSEQ_INDEX_MM_CID
#define URCU_PERCPU_COUNTER_ATOMIC	2

/* Readable, but private to the library: use the functions. */
struct urcu_percpu_counter {
	intptr_t *active;	/* index 0's slot of the active array */
	intptr_t *base;		/* index 0's slots: base[0] array A, base[1] array B */
	int mode;		/* URCU_PERCPU_COUNTER_* */
	int nr_index;		/* slots per array */
	intptr_t fallback;	/* adds of threads without rseq */
};

/* NULL + errno (EINVAL: unknown flag; ENOMEM). */
URCU_RSEQ_API struct urcu_percpu_counter *urcu_percpu_counter_create(
		unsigned int flags);
/* NULL is ignored. */
URCU_RSEQ_API void urcu_percpu_counter_destroy(struct urcu_percpu_counter *c);
URCU_RSEQ_API intptr_t urcu_percpu_counter_read(struct urcu_percpu_counter *c);
URCU_RSEQ_API intptr_t urcu_percpu_counter_read_reset(
		struct urcu_percpu_counter *c);
/* The atomic paths of add (2. and 3. above). */
URCU_RSEQ_API void urcu_percpu_counter_add_slow(struct urcu_percpu_counter *c,
		intptr_t v);
/* 1 when the counter is in the all-atomic mode (no RSEQ fence), else 0. */
URCU_RSEQ_API int urcu_percpu_counter_is_atomic(
		const struct urcu_percpu_counter *c);

/* Inlined even where the compiler's size heuristics would call it. */
#if defined(__GNUC__)
#define URCU_PERCPU_COUNTER_INLINE	inline __attribute__((always_inline))
#else
#define URCU_PERCPU_COUNTER_INLINE	inline
#endif

static URCU_PERCPU_COUNTER_INLINE void urcu_percpu_counter_add(
		struct urcu_percpu_counter *c, intptr_t v)
{
	int mode = c->mode;

	if (caa_likely(mode != URCU_PERCPU_COUNTER_ATOMIC)) {
		for (;;) {
			int idx = urcu_rseq_index(mode);

			if (caa_unlikely(idx < 0))
				break;
			if (caa_likely(urcu_rseq_deref_addv(mode,
					(void *const *) &c->active,
					(long) idx * (long) URCU_PERCPU_STRIDE,
					v, idx) == URCU_RSEQ_COMMITTED))
				return;
		}
	}
	urcu_percpu_counter_add_slow(c, v);
}

static URCU_PERCPU_COUNTER_INLINE void urcu_percpu_counter_inc(
		struct urcu_percpu_counter *c)
{
	urcu_percpu_counter_add(c, 1);
}

#ifdef __cplusplus
}
#endif

#endif /* _URCU_PERCPU_COUNTER_H */
