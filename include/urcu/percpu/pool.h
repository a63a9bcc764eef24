// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/percpu/pool.h - CPU-local memory: one item replicated per CPU (or per
 * concurrency id).
 *
 * Layout. A pool is a list of chunks. A chunk is one private anonymous
 * mapping of nr_index * URCU_PERCPU_STRIDE bytes: index k (a CPU number or
 * an mm_cid) owns the k-th stride, and item i of the chunk sits at the same
 * offset inside every stride. So index k's copy of an item is
 *
 *	urcu_percpu_ptr(item, k) == (char *) item + k * URCU_PERCPU_STRIDE
 *
 * where "item" (what urcu_percpu_zmalloc() returns) is index 0's copy. The
 * stride is the same for every pool, which is what lets urcu_percpu_ptr()
 * work from the pointer alone, in one multiply-add.
 *
 * Guarantees:
 * - Items of one index are packed: 1,000 8-byte items take 8,000 bytes per
 *   used index, not 1,000 cache lines.
 * - No item straddles a cache line (items are aligned to their size rounded
 *   up to a power of two, or to the cache line when larger), and no two
 *   indices share a cache line or a page: URCU_PERCPU_STRIDE is a multiple
 *   of every page size Linux uses for anonymous memory (4, 16, 64 KiB).
 * - Pages are mapped with MAP_NORESERVE and never touched by the pool
 *   itself unless a copy must be cleared, so an index that is never used
 *   (a possible but offline CPU, a concurrency id above the number of
 *   threads that ever ran at once) costs no resident memory. Reading a
 *   never-written copy maps the shared zero page, which costs none either.
 * - urcu_percpu_zmalloc() returns an item whose every copy is zero.
 * - With URCU_PERCPU_NUMA (the default for CPU-indexed pools when the
 *   library was built with libnuma and the machine has several nodes), each
 *   CPU's stride is bound to that CPU's node.
 *
 * Who may call what:
 * - urcu_percpu_pool_create/destroy, urcu_percpu_zmalloc, urcu_percpu_free:
 *   any thread, concurrently (one library-wide mutex: allocation is not a
 *   hot path). Not from a signal handler.
 * - fork(): allowed while other threads are in any of these; the child can
 *   use every pool. Items other threads held stay allocated in the child
 *   (doc/percpu-pool.md, "Lifecycle, thread exit and fork").
 * - urcu_percpu_ptr(): anywhere, including signal handlers; pure arithmetic.
 *   Which accesses to a copy are safe between threads is the caller's
 *   protocol (rseq critical sections, urcu/rseq/ops.h, or atomics).
 *
 * Errors: urcu_percpu_pool_create() fails with EINVAL for item_len 0 or
 * above URCU_PERCPU_STRIDE, or bad attributes; urcu_percpu_zmalloc() with
 * ENOMEM. urcu_percpu_free() of a pointer that is not a live item of a pool
 * (foreign, misaligned, already freed) does nothing and sets errno to
 * EINVAL; a debug build (--enable-debug) aborts with a message instead.
 * urcu_percpu_pool_destroy() of a pool with live items fails with EBUSY and
 * leaves the pool intact.
 */
#ifndef _URCU_PERCPU_POOL_H
#define _URCU_PERCPU_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <urcu/rseq.h>
#include <urcu/percpu/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Distance between two indices' copies of one item. */
#define URCU_PERCPU_STRIDE	((size_t) 1 << 16)	/* 64 KiB */

/*
 * Flags of struct urcu_percpu_pool_attr, besides URCU_PERCPU_MM_CID
 * (urcu/percpu/common.h: index by mm_cid, not CPU number).
 */
#define URCU_PERCPU_NUMA	(1U << 1)	/* bind each CPU's stride to its node */
#define URCU_PERCPU_NO_NUMA	(1U << 2)	/* never bind, even by default */

struct urcu_percpu_pool_attr {
	unsigned int flags;	/* URCU_PERCPU_* above */
	int nr_index;		/* copies per item; 0: urcu_rseq_nr_cpus() */
};

struct urcu_percpu_pool;

/* NULL attr: CPU-indexed, urcu_rseq_nr_cpus() copies. NULL + errno on error. */
URCU_RSEQ_API struct urcu_percpu_pool *urcu_percpu_pool_create(size_t item_len,
		const struct urcu_percpu_pool_attr *attr);
/* 0, or -1 with errno: EINVAL (NULL), EBUSY (items still allocated). */
URCU_RSEQ_API int urcu_percpu_pool_destroy(struct urcu_percpu_pool *pool);
/* One zeroed item on every index; NULL + errno (EINVAL, ENOMEM). */
URCU_RSEQ_API void *urcu_percpu_zmalloc(struct urcu_percpu_pool *pool);
/* NULL is ignored; a pointer that is not a live item sets errno = EINVAL. */
URCU_RSEQ_API void urcu_percpu_free(void *ptr);

/*
 * The index to pass to urcu_rseq_index() for this pool's items:
 * URCU_RSEQ_INDEX_MM_CID only when asked for and the kernel provides it.
 */
URCU_RSEQ_API int urcu_percpu_pool_index_mode(const struct urcu_percpu_pool *pool);
/* Number of copies: valid indices are 0 .. nr_index - 1. */
URCU_RSEQ_API int urcu_percpu_pool_nr_index(const struct urcu_percpu_pool *pool);
/* Item size after rounding for alignment (what each copy occupies). */
URCU_RSEQ_API size_t urcu_percpu_pool_item_size(const struct urcu_percpu_pool *pool);

/* Index @cpu's copy of @ptr (index 0's copy, as urcu_percpu_zmalloc() gave). */
static inline void *urcu_percpu_ptr(void *ptr, int cpu)
{
	return (char *) ptr + (size_t) cpu * URCU_PERCPU_STRIDE;
}

#ifdef __cplusplus
}
#endif

#endif /* _URCU_PERCPU_POOL_H */
