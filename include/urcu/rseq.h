// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/rseq.h - the rseq thread layer and the RSEQ fence.
 *
 * Every thread has one rseq area: glibc's (glibc >= 2.35 registers it at
 * thread creation and exports __rseq_offset/__rseq_size) or, where glibc did
 * not register one, the library's own, registered lazily on first use by any
 * primitive and unregistered at thread exit. Either way the area sits at a
 * fixed offset from the thread pointer, the same for every thread, so the
 * fast paths below reach it with one load of urcu_rseq_offset.
 *
 * Who may call what:
 * - urcu_rseq_cpu(), urcu_rseq_mm_cid(), urcu_rseq_node(): any thread, any
 *   time, async-signal-safe. The answer may be stale as soon as it is
 *   returned (the thread can migrate); only a critical section (urcu/rseq/
 *   ops.h) turns it into a guarantee.
 * - urcu_rseq_thread_register()/unregister(): the calling thread only;
 *   optional, idempotent. Not from a signal handler. The lazy registration
 *   of the functions above may run in a handler, also one that interrupted
 *   the thread's own registration, which then succeeds (EBUSY from the
 *   kernel means this very area is registered).
 * - urcu_rseq_fence(), urcu_rseq_fence_cpu(): any thread, not from a signal
 *   handler. After return, every rseq critical section of this process that
 *   was running (on every CPU, or on @cpu) when the call began has either
 *   committed or been aborted, and a full memory barrier separates the
 *   caller's accesses from theirs. A critical section must load the shared
 *   pointer or flag it depends on *inside* the section to be covered.
 *
 * When rseq cannot be used by a thread (ENOSYS, seccomp, an emulator such as
 * valgrind), urcu_rseq_available() is false for it, urcu_rseq_cpu() falls
 * back to sched_getcpu(), and every primitive takes its atomic fallback.
 */
#ifndef _URCU_RSEQ_H
#define _URCU_RSEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <urcu/compiler.h>
#include <urcu/system.h>
#include <urcu/rseq/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define URCU_RSEQ_API __attribute__((visibility("default")))
#else
#define URCU_RSEQ_API
#endif

/* Where the calling thread's area is: offset from the thread pointer. */
URCU_RSEQ_API extern ptrdiff_t urcu_rseq_offset;

/* Process-wide facts, fixed at library load (bits of urcu_rseq_features). */
#define URCU_RSEQ_FEATURE_NODE_ID	(1U << 0)	/* the kernel fills node_id */
#define URCU_RSEQ_FEATURE_MM_CID	(1U << 1)	/* the kernel fills mm_cid */
#define URCU_RSEQ_FEATURE_GLIBC_AREA	(1U << 2)	/* the area is glibc's */
#define URCU_RSEQ_FEATURE_CS		(1U << 3)	/* critical sections built for this arch */
URCU_RSEQ_API extern unsigned int urcu_rseq_features;

URCU_RSEQ_API int urcu_rseq_thread_register(void);	/* 0, or -1 with errno; idempotent */
URCU_RSEQ_API int urcu_rseq_thread_unregister(void);	/* 0, or -1 with errno */
URCU_RSEQ_API bool urcu_rseq_available(void);	/* rseq usable by the calling thread */
URCU_RSEQ_API int urcu_rseq_fence(void);	/* 0, or -1 with errno */
URCU_RSEQ_API int urcu_rseq_fence_cpu(int cpu);	/* 0, or -1 with errno (EINVAL: bad cpu) */
URCU_RSEQ_API bool urcu_rseq_fence_available(void);
URCU_RSEQ_API int urcu_rseq_nr_cpus(void);	/* possible CPUs: every CPU number and mm_cid is below it */

/* Slow paths of the inline functions below. */
URCU_RSEQ_API int urcu_rseq_cpu_slow(void);
URCU_RSEQ_API int urcu_rseq_mm_cid_slow(void);
URCU_RSEQ_API int urcu_rseq_node_slow(void);

static inline void *urcu_rseq_thread_pointer(void)
{
#if defined(__x86_64__)
	void *tp;

	__asm__ ("movq %%fs:0, %0" : "=r" (tp));
	return tp;
#elif defined(__aarch64__)
	void *tp;

	__asm__ ("mrs %0, tpidr_el0" : "=r" (tp));
	return tp;
#else
	return __builtin_thread_pointer();
#endif
}

/*
 * The calling thread's rseq area (registered or not). urcu_rseq_offset is
 * written once, by the library's first constructor, before any other code
 * can use it; seen here through a const declaration of the same object (and
 * the thread pointer through the compiler's builtin), the area's address is
 * a constant the compiler keeps in a register across a function instead of
 * recomputing it from two dependent loads before each section, whose
 * opening store waits for it. The library's own file that writes the
 * offset defines URCU_RSEQ_OFFSET_WRITER and sees the plain variable.
 */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 \
		&& (defined(__x86_64__) || defined(__aarch64__)) \
		&& !defined(URCU_RSEQ_OFFSET_WRITER)
URCU_RSEQ_API extern const ptrdiff_t _urcu_rseq_offset_fixed
	__asm__("urcu_rseq_offset");

static inline struct urcu_rseq_abi *urcu_rseq_area(void)
{
	return (struct urcu_rseq_abi *) ((char *) __builtin_thread_pointer()
			+ _urcu_rseq_offset_fixed);
}
#else
static inline struct urcu_rseq_abi *urcu_rseq_area(void)
{
	return (struct urcu_rseq_abi *)
		((char *) urcu_rseq_thread_pointer() + urcu_rseq_offset);
}
#endif

/* Current CPU number: always a valid CPU. */
static inline int urcu_rseq_cpu(void)
{
	int cpu = (int) CMM_LOAD_SHARED(urcu_rseq_area()->cpu_id);

	if (caa_likely(cpu >= 0))
		return cpu;
	return urcu_rseq_cpu_slow();
}

/* Concurrency id of the calling thread, or -1 where the kernel has none. */
static inline int urcu_rseq_mm_cid(void)
{
	struct urcu_rseq_abi *rs = urcu_rseq_area();

	if (caa_likely((urcu_rseq_features & URCU_RSEQ_FEATURE_MM_CID)
			&& (int) CMM_LOAD_SHARED(rs->cpu_id) >= 0))
		return (int) CMM_LOAD_SHARED(rs->mm_cid);
	return urcu_rseq_mm_cid_slow();
}

/* NUMA node of the current CPU. */
static inline int urcu_rseq_node(void)
{
	struct urcu_rseq_abi *rs = urcu_rseq_area();

	if (caa_likely((urcu_rseq_features & URCU_RSEQ_FEATURE_NODE_ID)
			&& (int) CMM_LOAD_SHARED(rs->cpu_id) >= 0))
		return (int) CMM_LOAD_SHARED(rs->node_id);
	return urcu_rseq_node_slow();
}

#ifdef __cplusplus
}
#endif

#include <urcu/rseq/ops.h>

#endif /* _URCU_RSEQ_H */
