// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/percpu/lock.h - per-CPU spinlocks with a remote-access count.
 *
 * What it guarantees
 *
 * One lock per shard; a shard is a CPU number (default) or a concurrency id
 * (URCU_PERCPU_MM_CID). Each shard lock is a mutual-exclusion lock with
 * acquire/release ordering: everything a holder did before
 * urcu_percpu_unlock() is visible to the next holder of that shard after its
 * lock call returns, whatever path either of them took. A thread running on
 * the shard's CPU takes it with no atomic instruction and no barrier on
 * x86 (one rseq critical section); any thread can take any shard (the
 * "remote" path: atomics plus one RSEQ fence).
 *
 * Who may call what, concurrently:
 * - urcu_percpu_lock(): any thread; locks the shard of the CPU it runs on
 *   and returns that shard's index (the thread may have migrated by the
 *   time it uses it: the index, not the current CPU, names what it holds).
 * - urcu_percpu_lock_cpu(), urcu_percpu_trylock_cpu(): any thread, any
 *   shard in [0, urcu_percpu_lock_nr_shards()).
 * - urcu_percpu_unlock(): the holder, from any CPU, however it took it.
 * - urcu_percpu_lock_all() / unlock_all(): any thread holding no shard.
 * - None of them from a signal handler that interrupted a holder. A thread
 *   holds at most one shard, or takes several in increasing index order
 *   (lock_all does): otherwise two threads can deadlock.
 * - urcu_percpu_unlock() may also be called by a thread the holder handed
 *   the shard to: the lock records no owner (a holder may exit holding).
 * - create/destroy: destroy once no lock call runs and every shard has
 *   been unlocked; unlockers may still be returning (destroy waits for
 *   their last access), so the last user may unlock and destroy at once.
 * - fork(): handled by the library (pthread_atfork). In the child a shard
 *   held by another parent thread stays held (destroy does not wait for
 *   it); the forking thread's shards are its own; the requests and
 *   releases other threads had in progress are dropped (doc/percpu-lock.md).
 *
 * The lock words (one cache line per shard):
 *
 *	lock:	0 free
 *		1 held, taken by the local fast path
 *		2 held, taken by compare-and-swap; the holder owns one unit
 *		  of @remote and gives it back in unlock
 *	remote:	number of threads on the compare-and-swap path (waiting or
 *		holding); while it is not 0 the fast path does not commit
 *
 * The protocol
 *
 * Fast path (F), a thread on the shard's CPU, one rseq critical section
 * (idx_cmpeqv_cmpeqv_storev: the shard is the one of the CPU number read
 * inside the section, so the thread runs on the shard's CPU by construction):
 *	if (lock != 0) fail; if (remote != 0) fail; commit: lock = 1;
 *	then the acquire fence A.
 * Compare-and-swap path (C), any thread, any shard:
 *	uatomic_inc(&remote); barrier M1;
 *	fence: RSEQ fence on the shard's CPU (urcu_rseq_fence() for mm_cid
 *	       shards), skipped when the thread now runs on that very CPU;
 *	loop: uatomic_cmpxchg(&lock, 0, 2) (full barrier) with back-off.
 * Unlock (U), the holder: v = lock; release fence R; lock = 0 (plain
 *	store); if (v == 2) { barrier M2; uatomic_dec(&remote); }
 *	(inline when v == 1, urcu_percpu_unlock_slow() otherwise).
 * A thread on the shard's CPU whose F fails on remote != 0 waits a little
 * (remote requests have priority), then takes C itself. Threads without
 * rseq always take C, on the shard of the CPU they run on. Without the RSEQ
 * fence every thread takes C: a plain compare-and-swap spinlock.
 *
 * Why two threads never hold one shard
 *
 * Only three stores ever write @lock: F's commit (0 -> 1, not atomic), C's
 * compare-and-swap (0 -> 2, atomic) and U (held -> 0, by the holder only).
 * While a shard is held nobody else writes @lock (F needs to read 0 inside
 * its section, C needs 0), so U's plain store cannot overwrite anybody, and
 * U never touches another thread's unit of @remote: a remote request is
 * never cleared by a holder that did not make it, whichever CPU the holder
 * migrated to. The only danger is F's read-then-store losing a race:
 *
 * - F against F: both on the shard's CPU (the section compares the CPU
 *   number, or the concurrency id, which no two running threads share);
 *   one CPU runs one section at a time and preemption aborts a section, so
 *   two sections never interleave.
 * - F against C (thread T on C, section S of F): T's unit of @remote is
 *   counted from its increment until its unlock (U gives it back after
 *   releasing @lock, barrier M2). The RSEQ fence makes every section that
 *   was running, or preempted, on the shard's CPU when it started either
 *   committed (its store lock = 1 then visible to T's compare-and-swap,
 *   which fails) or aborted; a section that begins after the fence reads
 *   @remote after T's increment (barrier M1, then the fence's barrier on
 *   that CPU) and sees it non-zero for as long as T is waiting or holding.
 *   So no section reads remote == 0 and commits between T's fence and T's
 *   unlock. When T runs on the shard's CPU itself after its increment (the
 *   CPU number is read after M1), the fence is not needed: any section of
 *   another thread there is preempted, hence will abort, and any section
 *   that committed there before T was scheduled on it is ordered before
 *   T's compare-and-swap by the context switch.
 * - C against C: compare-and-swap.
 *
 * Why C keeps its unit of @remote until unlock (and not only until it has
 * the lock): a section may read lock == 0 just before T's compare-and-swap,
 * then read remote == 0 just after T gave its unit back, and commit lock = 1
 * while T holds the shard: two holders. Holding the unit until after the
 * release store closes that window on every architecture, whatever order
 * the section's two loads are performed in.
 *
 * Barriers, each named where it is used:
 * - A (after F commits): the holder's critical section must not read before
 *   F's load of @lock that saw the previous holder's release. x86 keeps
 *   loads in order and never moves a store before a load: a compiler
 *   barrier. aarch64: cmm_smp_rmb() (DMB ISHLD orders earlier loads before
 *   later loads and stores). Pairs with R.
 * - R (before U's store): the critical section's accesses happen before the
 *   store that frees the lock. x86 (TSO) never reorders a store before
 *   earlier loads or stores: a compiler barrier; elsewhere cmm_smp_mb().
 *   Pairs with A, and with the full barrier of C's compare-and-swap.
 * - M1 (after C's increment): the increment is visible before the fence
 *   begins and before the CPU number is read for the self-fence shortcut
 *   (cmm_smp_mb__after_uatomic_inc()). Pairs with the barrier the RSEQ
 *   fence runs on the target CPU, which precedes every later section there.
 * - M2 (between U's release store and the decrement): a section that sees
 *   the decremented @remote also sees lock == 0 from this holder, not a
 *   value from before this holder let go (cmm_smp_mb__before_uatomic_dec()).
 *   Pairs with the fence argument above.
 * - C's compare-and-swap is a full barrier (liburcu uatomic_cmpxchg): it is
 *   the acquire of the C path and pairs with R.
 */
#ifndef _URCU_PERCPU_LOCK_H
#define _URCU_PERCPU_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <urcu/arch.h>
#include <urcu/compiler.h>
#include <urcu/system.h>
#include <urcu/uatomic.h>
#include <urcu/rseq.h>
#include <urcu/percpu/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Internal layout, visible only for the inline fast paths below. */
struct urcu_percpu_lock_shard {
	intptr_t lock;		/* 0 free, 1 held (fast path), 2 held (CAS) */
	intptr_t remote;	/* threads on the compare-and-swap path;
				   always 1 when the lock has no fast path */
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

#define _URCU_PERCPU_LOCK_FREE	0
#define _URCU_PERCPU_LOCK_LOCAL	1
#define _URCU_PERCPU_LOCK_CAS	2

struct urcu_percpu_lock {
	/*
	 * @shards when the lock is indexed by CPU number, NULL when by
	 * mm_cid: the inline lock chooses its section with this one load
	 * instead of loading @mode and then @shards. Written once at create.
	 */
	struct urcu_percpu_lock_shard *cpu_shards;
	struct urcu_percpu_lock_shard *shards;
	int nr_shards;
	int mode;		/* URCU_RSEQ_INDEX_CPU or _MM_CID */
	int fast;		/* fast path allowed: rseq sections and the fence */
	unsigned int flags;
};

/* Barriers A and R of the header comment. */
#if defined(__x86_64__) || defined(__i386__)
#define _urcu_percpu_lock_acquire_fence()	cmm_barrier()
#define _urcu_percpu_lock_release_fence()	cmm_barrier()
#else
#define _urcu_percpu_lock_acquire_fence()	cmm_smp_rmb()
#define _urcu_percpu_lock_release_fence()	cmm_smp_mb()
#endif

/* NULL with errno EINVAL (bad flags) or ENOMEM. */
URCU_RSEQ_API struct urcu_percpu_lock *urcu_percpu_lock_create(unsigned int flags);
URCU_RSEQ_API void urcu_percpu_lock_destroy(struct urcu_percpu_lock *l);
URCU_RSEQ_API int urcu_percpu_lock_nr_shards(struct urcu_percpu_lock *l);
/* true when taken; false with errno EBUSY (held) or EINVAL (bad shard). */
URCU_RSEQ_API bool urcu_percpu_trylock_cpu(struct urcu_percpu_lock *l, int cpu);
/* A bad shard: aborts with a message in a debug build, else errno EINVAL. */
URCU_RSEQ_API void urcu_percpu_lock_cpu(struct urcu_percpu_lock *l, int cpu);
URCU_RSEQ_API void urcu_percpu_lock_all(struct urcu_percpu_lock *l);
URCU_RSEQ_API void urcu_percpu_unlock_all(struct urcu_percpu_lock *l);

/* Slow paths of the inline functions. */
URCU_RSEQ_API int urcu_percpu_lock_slow(struct urcu_percpu_lock *l);
URCU_RSEQ_API void urcu_percpu_unlock_slow(struct urcu_percpu_lock *l, int cpu);
URCU_RSEQ_API void urcu_percpu_lock_bad_shard(struct urcu_percpu_lock *l,
		int cpu, const char *fn);

/* One fast-path section on @base's shards (F in the header comment). */
#define _URCU_PERCPU_LOCK_TRY(mode, base, idxp)				\
	urcu_rseq_idx_cmpeqv_cmpeqv_storev(mode, base,			\
		(long) sizeof(struct urcu_percpu_lock_shard),		\
		(long) offsetof(struct urcu_percpu_lock_shard, remote),	\
		_URCU_PERCPU_LOCK_FREE, 0, _URCU_PERCPU_LOCK_LOCAL, idxp)

/* Locks the current CPU's shard; returns its index. */
static inline int urcu_percpu_lock(struct urcu_percpu_lock *l)
{
	int idx;

	/*
	 * The section reads the CPU (or mm_cid) itself and finds the shard
	 * from it: no separate index load and check before it. Not
	 * registered yet, aborted, held, a remote request pending, or no
	 * fast path for this lock (@remote is then stuck at 1): the slow
	 * path sorts it out (and registers the thread).
	 */
	struct urcu_percpu_lock_shard *base = l->cpu_shards;
	int r;

	if (caa_likely(base))
		r = _URCU_PERCPU_LOCK_TRY(URCU_RSEQ_INDEX_CPU, base, &idx);
	else
		r = _URCU_PERCPU_LOCK_TRY(URCU_RSEQ_INDEX_MM_CID, l->shards,
				&idx);
	if (caa_likely(r == URCU_RSEQ_COMMITTED)) {
		_urcu_percpu_lock_acquire_fence();	/* A: pairs with R */
		return idx;
	}
	return urcu_percpu_lock_slow(l);
}

/* Releases shard @cpu, whichever path took it and wherever it was taken. */
static inline void urcu_percpu_unlock(struct urcu_percpu_lock *l, int cpu)
{
	struct urcu_percpu_lock_shard *s;

	if (caa_unlikely((unsigned int) cpu >= (unsigned int) l->nr_shards)) {
		urcu_percpu_lock_bad_shard(l, cpu, "urcu_percpu_unlock");
		return;
	}
	s = &l->shards[cpu];
	/*
	 * Ours while we hold it: nobody else writes it. Taken by F (or by
	 * compare-and-swap without the fence): no unit of @remote to give
	 * back. Taken by C, or not held: urcu_percpu_unlock_slow().
	 */
	if (caa_likely(CMM_LOAD_SHARED(s->lock) == _URCU_PERCPU_LOCK_LOCAL)) {
		_urcu_percpu_lock_release_fence(); /* R: pairs with A and C's cmpxchg */
		CMM_STORE_SHARED(s->lock, _URCU_PERCPU_LOCK_FREE);
		return;
	}
	urcu_percpu_unlock_slow(l, cpu);
}

#ifdef __cplusplus
}
#endif

#endif /* _URCU_PERCPU_LOCK_H */
