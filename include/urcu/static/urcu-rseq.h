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
 * mean anything. Threads that cannot run rseq critical sections count with
 * atomic additions on one extra slot (index -1 of urcu_rseq_gp.cpus), never on
 * the per-CPU slots, which rseq threads update with plain stores.
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
	unsigned long period;		/* URCU_RSEQ_PERIOD | URCU_RSEQ_FULL_MB */
	struct urcu_rseq_gp_cpu *cpus;	/* slots -1 (fallback) .. nr_cpus - 1 */
	int nr_cpus;
	int has_membarrier;		/* 0: readers issue full barriers */
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

/*
 * urcu_rseq_gp.period holds the word (0..3) of a slot that an outermost
 * read_lock() adds to: URCU_RSEQ_PERIOD selects lock[0] or lock[1], and
 * URCU_RSEQ_FULL_MB says that readers must issue full barriers (no
 * membarrier; set once, before any reader). The reader keeps the word of
 * its read_unlock(), unlock[p] = word 2 + p, in ctr, with the same bits.
 */
#define URCU_RSEQ_PERIOD	1UL
#define URCU_RSEQ_UNLOCK	2UL
#define URCU_RSEQ_FULL_MB	4UL

/*
 * Per-thread reader state in one word, so that a signal handler sees
 * either "not in a section" (0) or a complete (nesting, bits) pair:
 * ctr = (nesting - 1) * URCU_RSEQ_NEST_ONE + URCU_RSEQ_UNLOCK + the
 * period bits of the outermost section. An outermost section is the only
 * one with ctr below URCU_RSEQ_NEST_ONE, and read_unlock() finds the word
 * to count in ctr itself.
 */
struct urcu_rseq_reader {
	unsigned long ctr;
};

#define URCU_RSEQ_NEST_ONE	8UL
#define URCU_RSEQ_WORD_MASK	(URCU_RSEQ_PERIOD | URCU_RSEQ_UNLOCK)

URCU_RSEQ_API extern struct urcu_rseq_gp urcu_rseq_gp;
URCU_RSEQ_API extern DECLARE_URCU_TLS(struct urcu_rseq_reader, urcu_rseq_reader);

/*
 * The calling thread's rseq area, computed so that the compiler may keep
 * it in a register across a function: urcu_rseq_offset is written once, by
 * the library's first constructor, before any code can reach the read side,
 * and the thread pointer of a thread never changes, so both are declared
 * to the compiler as constants here (the same object as urcu_rseq_offset,
 * seen through a const declaration). Why it matters: the store that opens a
 * section, and every later load, wait for the area's address; recomputed
 * from two dependent loads in each section it costs more than the rest of
 * the section (doc/urcu-rseq.md, "What it costs").
 */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 \
		&& (defined(__x86_64__) || defined(__aarch64__))
URCU_RSEQ_API extern const ptrdiff_t _urcu_rseq_offset_fixed
	__asm__("urcu_rseq_offset");

static inline struct urcu_rseq_abi *_urcu_rseq_reader_area(void)
{
	return (struct urcu_rseq_abi *) ((char *) __builtin_thread_pointer()
			+ _urcu_rseq_offset_fixed);
}
#else
static inline struct urcu_rseq_abi *_urcu_rseq_reader_area(void)
{
	return urcu_rseq_area();
}
#endif

/*
 * Replaces the grace period's membarrier where the system has none. Pairs
 * with the full barrier the grace period then issues in its place.
 */
static inline void _urcu_rseq_smp_mb_slave(unsigned long bits)
{
	if (caa_unlikely(bits & URCU_RSEQ_FULL_MB))
		cmm_smp_mb();
	else
		cmm_barrier();
}

/*
 * Adds 1 to word @word & URCU_RSEQ_WORD_MASK of this CPU's slot: one
 * idx_addv section, which reads the CPU number itself. The slots exist
 * from the library's constructor on (it runs before any code that can call
 * the read side), so urcu_rseq_gp.cpus is never NULL here.
 */
static inline void _urcu_rseq_count(struct urcu_rseq_abi *rs,
		unsigned long word)
{
	intptr_t *base = (intptr_t *) urcu_rseq_gp.cpus
		+ (word & URCU_RSEQ_WORD_MASK);
	int r;

	do {
		r = _urcu_rseq_idx_addv_cpu(rs, base,
				(long) sizeof(struct urcu_rseq_gp_cpu), 1);
		if (caa_likely(r == URCU_RSEQ_COMMITTED))
			return;
	} while (r == URCU_RSEQ_ABORTED
			|| urcu_rseq_index(URCU_RSEQ_INDEX_CPU) >= 0);
	/* No rseq for this thread: the fallback slot, atomically. */
	uatomic_add((intptr_t *) ((struct urcu_rseq_gp_cpu *) base - 1), 1);
}

static inline void _urcu_rseq_read_lock(void)
{
	struct urcu_rseq_abi *rs = _urcu_rseq_reader_area();
	unsigned long ctr = CMM_LOAD_SHARED(URCU_TLS(urcu_rseq_reader).ctr);
	unsigned long bits;

	if (caa_unlikely(ctr != 0)) {
		/*
		 * Nested: a handler interrupting between the load and the
		 * store leaves ctr as it found it, so the store is exact.
		 */
		CMM_STORE_SHARED(URCU_TLS(urcu_rseq_reader).ctr,
				ctr + URCU_RSEQ_NEST_ONE);
		return;
	}
	bits = CMM_LOAD_SHARED(urcu_rseq_gp.period);
	_urcu_rseq_count(rs, bits);
	/*
	 * The lock count is in place before any access of the section and
	 * before ctr says "inside": a signal handler that runs before the
	 * store below sees ctr == 0 and counts its own section. Pairs with
	 * the membarrier between the unlock and lock sums of the grace period
	 * (see src/urcu-rseq.c, "B").
	 */
	_urcu_rseq_smp_mb_slave(bits);
	CMM_STORE_SHARED(URCU_TLS(urcu_rseq_reader).ctr,
			bits + URCU_RSEQ_UNLOCK);
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
	 * with the membarrier of the grace period ("A" in src/urcu-rseq.c).
	 * ctr goes to 0 before the count so that a handler running between
	 * the two counts its own section instead of nesting in one that is
	 * about to end.
	 */
	_urcu_rseq_smp_mb_slave(ctr);
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
