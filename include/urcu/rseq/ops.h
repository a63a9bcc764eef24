// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/rseq/ops.h - per-CPU critical-section operations.
 *
 * Each operation is one rseq critical section. It runs on behalf of one
 * "index": the CPU number or the concurrency id (mm_cid) the caller read with
 * urcu_rseq_index() just before. Inside the section the index is compared
 * with the kernel's current value; preemption, migration or a signal between
 * the start of the section and its final store (the commit) aborts it. The
 * result is one of:
 *
 *   URCU_RSEQ_COMMITTED  the final store happened, on @index;
 *   URCU_RSEQ_CMPFAIL    a comparison failed: nothing was stored to memory
 *                        other than the values documented as speculative;
 *   URCU_RSEQ_ABORTED    the section did not commit (index changed,
 *                        preempted, signal, or an RSEQ fence): reread the
 *                        index and retry.
 *
 * No operation contains an atomic instruction or a memory barrier. Between
 * threads on one CPU, a committed section is atomic; between CPUs it orders
 * nothing: pair it with the RSEQ fence (urcu_rseq_fence()), which aborts any
 * section in progress, or with atomics on the remote side of a protocol.
 *
 * Pseudocode, one description per operation for every architecture (the
 * arch/ files implement exactly this; "commit:" marks the one store that
 * makes the section take effect, everything before it may run several times
 * or be abandoned):
 *
 * cmpeqv_storev(v, expect, newv):
 *	if (*v != expect) return CMPFAIL;
 *	commit: *v = newv;
 *
 * cmpeqv_cmpeqv_storev(v, expect, v2, expect2, newv):
 *	if (*v != expect) return CMPFAIL;
 *	if (*v2 != expect2) return CMPFAIL;
 *	commit: *v = newv;
 *
 * cmpnev_storeoffp_load(v, expectnot, voffp, load):	(list pop)
 *	head = *v;
 *	if (head == expectnot) return CMPFAIL;
 *	*load = head;				(speculative)
 *	commit: *v = *(intptr_t *)(head + voffp);
 *
 * addv(v, count):
 *	commit: *v += count;
 *
 * deref_addv(ptrp, off, count):		(target found through a shared pointer)
 *	base = *ptrp;				(loaded inside the section)
 *	commit: *(intptr_t *)(base + off) += count;
 *
 * cmpeqv_trystorev_storev(v, expect, v2, newv2, newv):
 *	if (*v != expect) return CMPFAIL;
 *	*v2 = newv2;				(speculative)
 *	commit: *v = newv;
 *
 * idx_addv(base, stride, count):		(per-index slot, index read inside)
 *	if (this thread's rseq is not registered) return CMPFAIL;
 *	idx = current index;			(loaded inside the section)
 *	commit: *(intptr_t *)(base + idx * stride) += count;
 *
 * idx_cmpeqv_cmpeqv_storev(base, stride, off2, expect, expect2, newv, index):
 *	*index = -1;				(before the section)
 *	if (this thread's rseq is not registered) return CMPFAIL;
 *	*index = current index;			(loaded inside the section)
 *	v = (intptr_t *)(base + *index * stride);
 *	if (*v != expect) return CMPFAIL;
 *	if (*(intptr_t *)((char *) v + off2) != expect2) return CMPFAIL;
 *	commit: *v = newv;
 *	(a lock word and its flag in a per-index slot: the caller learns the
 *	slot it took from *index, and *index < 0 after CMPFAIL means "no rseq".
 *	x86_64 with asm goto outputs keeps the index in a register and writes
 *	*index after the commit, or on the compare-failure path: the caller
 *	sees the same values.)
 *
 * deref_addv is what lets the RSEQ fence retire a double buffer: an updater
 * swaps *ptrp, then calls urcu_rseq_fence(); a section that loaded the old
 * pointer either committed before the fence returned or is aborted and, on
 * retry, loads the new one. A section that took the pointer from a register
 * loaded before it started would not be covered.
 *
 * Usage:
 *
 *	for (;;) {
 *		int idx = urcu_rseq_index(mode);
 *
 *		if (idx < 0)
 *			break;				// no rseq: take the fallback
 *		if (urcu_rseq_addv(mode, &slot[idx], 1, idx) == URCU_RSEQ_COMMITTED)
 *			return;
 *	}
 *	uatomic_add(&fallback_slot, 1);
 *
 * idx_addv takes no index: it loads it inside the section, where any
 * migration aborts the section, and so saves the caller the load and the
 * comparison of the other operations. CMPFAIL means the thread has no rseq
 * registered (yet): call urcu_rseq_index() once, which registers it
 * lazily, and retry if that gives an index, else take the fallback:
 *
 *	do {
 *		r = urcu_rseq_idx_addv(mode, slots, sizeof(slots[0]), 1);
 *		if (r == URCU_RSEQ_COMMITTED)
 *			return;
 *	} while (r == URCU_RSEQ_ABORTED || urcu_rseq_index(mode) >= 0);
 *	uatomic_add(&fallback_slot, 1);
 *
 * A thread that cannot use rseq (urcu_rseq_index() < 0) must never write with
 * plain stores to what other threads update with critical sections; each
 * primitive gives such threads a path of its own that is correct against the
 * rseq path (atomics on a separate slot, or the remote protocol).
 */
#ifndef _URCU_RSEQ_OPS_H
#define _URCU_RSEQ_OPS_H

#include <stdint.h>
#include <urcu/compiler.h>
#include <urcu/system.h>
#include <urcu/uatomic.h>
#include <urcu/rseq/abi.h>
#include <urcu/rseq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What an index means. */
#define URCU_RSEQ_INDEX_CPU	0	/* the CPU number */
#define URCU_RSEQ_INDEX_MM_CID	1	/* the concurrency id (Linux >= 6.3) */

#define URCU_RSEQ_COMMITTED	0
#define URCU_RSEQ_CMPFAIL	1
#define URCU_RSEQ_ABORTED	-1

/*
 * Fault injection (configure --enable-fault-injection, tests only): every
 * section spins this many pause instructions between its loads and its
 * commit, so that preemption, signals and fences land inside the window.
 */
URCU_RSEQ_API extern int urcu_rseq_fi_loops;

#ifdef URCU_RSEQ_FAULT_INJECTION
#define URCU_RSEQ_FI_ENABLED 1
#else
#define URCU_RSEQ_FI_ENABLED 0
#endif

/*
 * asm goto with output operands (GCC >= 11, clang >= 11): lets
 * idx_cmpeqv_cmpeqv_storev hand its index back in a register on x86_64.
 */
#ifdef _URCU_RSEQ_ASM_GOTO_OUTPUT
/* Set by the includer (the tests build the other form with 0). */
#elif defined(__clang__)
#define _URCU_RSEQ_ASM_GOTO_OUTPUT (__clang_major__ >= 11)
#elif defined(__GNUC__)
#define _URCU_RSEQ_ASM_GOTO_OUTPUT (__GNUC__ >= 11)
#else
#define _URCU_RSEQ_ASM_GOTO_OUTPUT 0
#endif

#ifdef __cplusplus
}
#endif

#if defined(__x86_64__)
#include <urcu/rseq/arch/x86_64.h>
#elif defined(__aarch64__)
#include <urcu/rseq/arch/aarch64.h>
#else
#include <urcu/rseq/arch/generic.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

URCU_RSEQ_API int urcu_rseq_index_slow(int mode);

/*
 * The index the calling thread runs on for @mode, or -1 when this thread
 * cannot run critical sections. Registers the thread lazily. @mode must be
 * URCU_RSEQ_INDEX_MM_CID only where urcu_rseq_index_mode() granted it.
 */
static inline int urcu_rseq_index(int mode)
{
#if URCU_RSEQ_ARCH_HAS_CS
	struct urcu_rseq_abi *rs = urcu_rseq_area();
	int cpu = (int) CMM_LOAD_SHARED(rs->cpu_id);

	if (caa_unlikely(cpu < 0))
		return urcu_rseq_index_slow(mode);
	if (mode == URCU_RSEQ_INDEX_MM_CID)
		return (int) CMM_LOAD_SHARED(rs->mm_cid);
	return cpu;
#else
	(void) mode;
	return -1;
#endif
}

/* The mode to use for @want: mm_cid falls back to CPU numbers where absent. */
static inline int urcu_rseq_index_mode(int want)
{
	if (want == URCU_RSEQ_INDEX_MM_CID
			&& (urcu_rseq_features & URCU_RSEQ_FEATURE_MM_CID))
		return URCU_RSEQ_INDEX_MM_CID;
	return URCU_RSEQ_INDEX_CPU;
}

#define _URCU_RSEQ_DISPATCH(op, mode, ...)				\
	((mode) == URCU_RSEQ_INDEX_MM_CID ?				\
		_urcu_rseq_##op##_mm_cid(urcu_rseq_area(), __VA_ARGS__) : \
		_urcu_rseq_##op##_cpu(urcu_rseq_area(), __VA_ARGS__))

static inline int urcu_rseq_cmpeqv_storev(int mode, intptr_t *v,
		intptr_t expect, intptr_t newv, int index)
{
	return _URCU_RSEQ_DISPATCH(cmpeqv_storev, mode, v, expect, newv, index);
}

static inline int urcu_rseq_cmpeqv_cmpeqv_storev(int mode, intptr_t *v,
		intptr_t expect, intptr_t *v2, intptr_t expect2, intptr_t newv,
		int index)
{
	return _URCU_RSEQ_DISPATCH(cmpeqv_cmpeqv_storev, mode, v, expect, v2,
			expect2, newv, index);
}

static inline int urcu_rseq_cmpnev_storeoffp_load(int mode, intptr_t *v,
		intptr_t expectnot, long voffp, intptr_t *load, int index)
{
	return _URCU_RSEQ_DISPATCH(cmpnev_storeoffp_load, mode, v, expectnot,
			voffp, load, index);
}

static inline int urcu_rseq_addv(int mode, intptr_t *v, intptr_t count,
		int index)
{
	return _URCU_RSEQ_DISPATCH(addv, mode, v, count, index);
}

static inline int urcu_rseq_idx_addv(int mode, void *base, long stride,
		intptr_t count)
{
	return _URCU_RSEQ_DISPATCH(idx_addv, mode, base, stride, count);
}

static inline int urcu_rseq_idx_cmpeqv_cmpeqv_storev(int mode, void *base,
		long stride, long off2, intptr_t expect, intptr_t expect2,
		intptr_t newv, int *index)
{
	*index = -1;
	return _URCU_RSEQ_DISPATCH(idx_cmpeqv_cmpeqv_storev, mode, base,
			stride, off2, expect, expect2, newv, index);
}

static inline int urcu_rseq_deref_addv(int mode, void *const *ptrp, long off,
		intptr_t count, int index)
{
	return _URCU_RSEQ_DISPATCH(deref_addv, mode, ptrp, off, count, index);
}

static inline int urcu_rseq_cmpeqv_trystorev_storev(int mode, intptr_t *v,
		intptr_t expect, intptr_t *v2, intptr_t newv2, intptr_t newv,
		int index)
{
	return _URCU_RSEQ_DISPATCH(cmpeqv_trystorev_storev, mode, v, expect,
			v2, newv2, newv, index);
}

/*
 * Atomic forms, for threads or builds without critical sections. They keep
 * the operation's meaning only when every writer of the word uses them too
 * (or a primitive-specific protocol makes the mix safe). List pop
 * (cmpnev_storeoffp_load) and the two-word operations have no lock-free
 * atomic form free of ABA: primitives guard those with a lock instead.
 */
static inline int urcu_rseq_atomic_cmpeqv_storev(intptr_t *v, intptr_t expect,
		intptr_t newv)
{
	return uatomic_cmpxchg(v, expect, newv) == expect ?
		URCU_RSEQ_COMMITTED : URCU_RSEQ_CMPFAIL;
}

static inline void urcu_rseq_atomic_addv(intptr_t *v, intptr_t count)
{
	uatomic_add(v, count);
}

#ifdef __cplusplus
}
#endif

#endif /* _URCU_RSEQ_OPS_H */
