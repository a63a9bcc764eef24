// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/static/urcu-rseq.h - the urcu-rseq read side, inline.
 *
 * Include <urcu/urcu-rseq.h> with _LGPL_SOURCE defined to get these inlined
 * under the public names; without it, the same code is called out of line
 * from the library. Everything here is part of the library's ABI: the
 * layout of struct urcu_rseq_gp, struct urcu_rseq_gp_cpu and struct
 * urcu_rseq_reader may change only with the library's major version.
 *
 * The read side keeps two periods of counters, one cache line per CPU:
 * lock[p] counts outermost read_lock() calls that took period p on that
 * CPU, unlock[p] counts the matching read_unlock() calls, which run on
 * whichever CPU the thread has migrated to. Only the totals over all CPUs
 * mean anything. Threads that cannot run rseq critical sections (and every
 * thread where the system has no membarrier) count with atomic additions on
 * one extra slot (index -1 of urcu_rseq_gp.cpus), never on the per-CPU
 * slots, which rseq threads update with plain stores.
 *
 * Who may call what: read_lock/unlock/ongoing from any thread, at any time,
 * without registration, including from signal handlers (a section in a
 * handler that interrupts read_lock() or read_unlock() half-way is counted
 * on its own, see below). The correctness argument, which pairs the
 * compiler barriers here with the grace period's membarrier, is in
 * src/urcu-rseq.c.
 */
#ifndef _URCU_STATIC_URCU_RSEQ_H
#define _URCU_STATIC_URCU_RSEQ_H

#include <stdint.h>
#include <urcu/arch.h>
#include <urcu/compiler.h>
#include <urcu/system.h>
#include <urcu/uatomic.h>
#include <urcu/tls-compat.h>
#include <urcu/rseq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One CPU's counters (or the fallback slot): written by that CPU only. */
struct urcu_rseq_gp_cpu {
	intptr_t lock[2];
	intptr_t unlock[2];
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

/*
 * Read-mostly state shared by readers and the grace period: only the
 * period bit changes after initialization (two stores per grace period).
 */
struct urcu_rseq_gp {
	unsigned long period;		/* 0 or URCU_RSEQ_PERIOD */
	struct urcu_rseq_gp_cpu *cpus;	/* slots -1 (fallback) .. nr_cpus - 1 */
	int nr_cpus;
	int has_membarrier;		/* 0: readers take the atomic path */
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

/*
 * Words of a slot, as indexes of intptr_t: an outermost read_lock() adds
 * to word urcu_rseq_gp.period (lock[p]), its read_unlock() to word
 * URCU_RSEQ_UNLOCK + p (unlock[p]).
 */
#define URCU_RSEQ_PERIOD	1UL
#define URCU_RSEQ_UNLOCK	2UL

/*
 * Per-thread reader state in one word, so that a signal handler sees
 * either "not in a section" (0) or a complete (nesting, period) pair:
 * ctr = (nesting - 1) * URCU_RSEQ_NEST_ONE + URCU_RSEQ_UNLOCK + p, the
 * word the outermost read_unlock() adds to. Only an outermost section has
 * ctr below URCU_RSEQ_NEST_ONE.
 */
struct urcu_rseq_reader {
	unsigned long ctr;
};

#define URCU_RSEQ_NEST_ONE	4UL

URCU_RSEQ_API extern struct urcu_rseq_gp urcu_rseq_gp;
URCU_RSEQ_API extern DECLARE_URCU_TLS(struct urcu_rseq_reader, urcu_rseq_reader);

/*
 * Where the read side finds the calling thread's rseq area: an offset from
 * the thread pointer, set by the library's constructor before any reader
 * can run and never changed. It is urcu_rseq_offset, or, where the system
 * has no membarrier, a per-thread stand-in whose cpu_id says "not
 * registered", so that every count takes the atomic path, which issues the
 * full barriers the grace period then relies on.
 */
URCU_RSEQ_API extern ptrdiff_t urcu_rseq_reader_offset;

/*
 * The read side's area, computed so that the compiler may keep it in a
 * register across a function: both the thread pointer and the offset are
 * constants to the compiler here (the offset is the same object as
 * urcu_rseq_reader_offset, seen through a const declaration; the library
 * writes it once, in a constructor). Why it matters: the store that opens
 * a section, and the loads after it, wait for the area's address;
 * recomputed from two dependent loads in each section, it costs more than
 * the rest of the section (doc/urcu-rseq.md, "What it costs").
 */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 \
		&& (defined(__x86_64__) || defined(__aarch64__)) \
		&& !defined(URCU_RSEQ_READER_OFFSET_WRITER)
URCU_RSEQ_API extern const ptrdiff_t _urcu_rseq_reader_offset_fixed
	__asm__("urcu_rseq_reader_offset");

static inline struct urcu_rseq_abi *_urcu_rseq_reader_area(void)
{
	return (struct urcu_rseq_abi *) ((char *) __builtin_thread_pointer()
			+ _urcu_rseq_reader_offset_fixed);
}
#else
static inline struct urcu_rseq_abi *_urcu_rseq_reader_area(void)
{
	return (struct urcu_rseq_abi *) ((char *) urcu_rseq_thread_pointer()
			+ urcu_rseq_reader_offset);
}
#endif

URCU_RSEQ_API void urcu_rseq_read_count_slow(intptr_t *word);

/*
 * Adds 1 to word @word of this CPU's slot: one idx_addv section, which
 * reads the CPU number itself. The slots exist from the library's
 * constructor on (it runs before any code that can call the read side),
 * so urcu_rseq_gp.cpus is never NULL here. CMPFAIL: the area is not
 * registered (not yet, or it is the stand-in); the slow path registers the
 * thread if it can, else counts on the fallback slot.
 */
static inline void _urcu_rseq_count(struct urcu_rseq_abi *rs,
		unsigned long word)
{
	intptr_t *base = (intptr_t *) urcu_rseq_gp.cpus + word;
	int r;

	do {
		r = _urcu_rseq_idx_addv_cpu(rs, base,
				(long) sizeof(struct urcu_rseq_gp_cpu), 1);
		if (caa_likely(r == URCU_RSEQ_COMMITTED))
			return;
	} while (r == URCU_RSEQ_ABORTED);
	urcu_rseq_read_count_slow(base);
}

static inline void _urcu_rseq_read_lock(void)
{
	struct urcu_rseq_abi *rs = _urcu_rseq_reader_area();
	unsigned long ctr = CMM_LOAD_SHARED(URCU_TLS(urcu_rseq_reader).ctr);
	unsigned long p;

	if (caa_unlikely(ctr != 0)) {
		/*
		 * Nested: a handler interrupting between the load and the
		 * store leaves ctr as it found it, so the store is exact.
		 */
		CMM_STORE_SHARED(URCU_TLS(urcu_rseq_reader).ctr,
				ctr + URCU_RSEQ_NEST_ONE);
		return;
	}
	p = CMM_LOAD_SHARED(urcu_rseq_gp.period);
	_urcu_rseq_count(rs, p);
	/*
	 * The lock count is in place before any access of the section and
	 * before ctr says "inside": a signal handler that runs before the
	 * store below sees ctr == 0 and counts its own section. Pairs with
	 * the membarrier between the unlock and lock sums of the grace period
	 * (see src/urcu-rseq.c, "B"); without membarrier, the count took the
	 * atomic path, whose full barrier after the addition pairs with the
	 * grace period's full barrier instead.
	 */
	cmm_barrier();
	CMM_STORE_SHARED(URCU_TLS(urcu_rseq_reader).ctr, URCU_RSEQ_UNLOCK + p);
	cmm_barrier();
}

static inline void _urcu_rseq_read_unlock(void)
{
	struct urcu_rseq_abi *rs = _urcu_rseq_reader_area();
	unsigned long ctr = CMM_LOAD_SHARED(URCU_TLS(urcu_rseq_reader).ctr);

	if (caa_unlikely(ctr >= URCU_RSEQ_NEST_ONE)) {
		CMM_STORE_SHARED(URCU_TLS(urcu_rseq_reader).ctr,
				ctr - URCU_RSEQ_NEST_ONE);
		return;
	}
	/*
	 * Every access of the section comes before the unlock count. Pairs
	 * with the membarrier of the grace period ("A" in src/urcu-rseq.c);
	 * without membarrier, with the full barrier the atomic path issues
	 * before the addition. ctr goes to 0 before the count so that a
	 * handler running between the two counts its own section instead of
	 * nesting in one that is about to end.
	 */
	cmm_barrier();
	CMM_STORE_SHARED(URCU_TLS(urcu_rseq_reader).ctr, 0);
	cmm_barrier();
	_urcu_rseq_count(rs, ctr);
}

static inline int _urcu_rseq_read_ongoing(void)
{
	return CMM_LOAD_SHARED(URCU_TLS(urcu_rseq_reader).ctr) != 0;
}

#ifdef __cplusplus
}
#endif

#endif /* _URCU_STATIC_URCU_RSEQ_H */
