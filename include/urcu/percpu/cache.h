// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/percpu/cache.h - a fixed-size object cache: each CPU (or mm_cid)
 * keeps a bounded LIFO of free objects that alloc pops and free pushes in
 * one rseq critical section each, without atomic instructions; a shared
 * depot of batches refills an empty CPU list and takes the overflow of a
 * full one; slabs mapped with mmap() back it all.
 *
 * Who may call what, concurrently:
 * - alloc, free: any thread, any number. An object may be freed by any
 *   thread on any CPU, whoever allocated it. Not from signal handlers (the
 *   slow paths take a mutex).
 * - drain, stats: any thread, concurrently with alloc and free; drains
 *   serialize among themselves.
 * - create, destroy: destroy once no other call on the cache runs.
 * - fork(): allowed while other threads are in any of these; the child can
 *   use every cache, and every object free in the parent is free there.
 *   Objects other threads held stay allocated (doc/percpu-cache.md).
 *
 * Guarantees:
 * - Every object is handed out by at most one alloc between two frees of
 *   it: the CPU lists are urcu_percpu_freelist lists (urcu/percpu/freelist.h
 *   has the argument why the rseq pop is free of ABA and why a remote take
 *   of a whole list is safe), and the depot is under a mutex.
 * - Objects are aligned to at least alignof(max_align_t), or to attr.align
 *   (a power of two up to the page size; URCU_PERCPU_CACHE_CACHELINE asks for
 *   the cache line), and never share a line with another object then.
 * - alloc returns NULL with errno ENOMEM when mmap fails, or when
 *   attr.max_objects objects are carved from slabs and none is free on any
 *   list (alloc takes the CPU lists back into the depot before failing).
 *   Objects on CPU lists and in the depot count towards max_objects: they
 *   are memory the cache holds.
 * - drain takes every CPU list and the depot, gives fully free slabs back to
 *   the kernel (madvise MADV_DONTNEED: their pages stop being resident) and
 *   keeps the free objects of partly used slabs in the depot. destroy unmaps
 *   everything; it fails with EBUSY (and, in a debug build, complains on
 *   stderr) while objects are still allocated.
 *
 * The bound on a CPU list is approximate: each free node stores its depth
 * (the depth of the node under it plus one), read from the current head
 * just before the push section. The head is read outside the section, so
 * the node may have been taken meanwhile: the depth read is then stale
 * (any value: the section fails and retries if the head changed, but an
 * ABA on the head keeps a stale depth); it only decides when to spill, so a
 * stale depth costs one early or late spill, never correctness. Reading it
 * is safe because slab memory is never unmapped while the cache lives (drain
 * uses MADV_DONTNEED, which keeps the mapping; a read then sees zero).
 * A push that would make the depth exceed attr.cpu_max spills: it pops
 * attr.batch nodes of the CPU's list and moves them, with the freed object,
 * to the depot as one batch. A pop that finds the list empty takes a batch
 * from the depot (or carves one from a slab), keeps one object and installs
 * the rest as the CPU's list in one section, if the list is still empty.
 *
 * Threads that cannot use rseq (urcu_rseq_index() < 0), and caches whose
 * free list is in its locked mode (no RSEQ fence), allocate and free under
 * the depot's mutex: correct, never fast.
 *
 * Memory ordering: an alloc that returns an object freed by another thread
 * sees that thread's writes to the object before the free (the push commit
 * and the pop's load of the head form a release/acquire pair on one CPU,
 * through the depot's mutex across CPUs, or through the remote take's
 * fence). alloc and free order nothing else.
 */
#ifndef _URCU_PERCPU_CACHE_H
#define _URCU_PERCPU_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <urcu/compiler.h>
#include <urcu/rseq.h>
#include <urcu/percpu/common.h>
#include <urcu/percpu/counter.h>
#include <urcu/percpu/freelist.h>

#ifdef __cplusplus
extern "C" {
#endif

/* attr.flags */
/* URCU_PERCPU_MM_CID (common.h): one list per mm_cid instead of per CPU. */
#define URCU_PERCPU_CACHE_CACHELINE	(1U << 8)	/* align to the cache line */
/*
 * Count every alloc and free (stats.allocs, stats.frees): one more rseq
 * section on each fast path, about as much as the alloc or free itself.
 * Without it those two read 0; the batch, memory and object statistics are
 * kept either way (the slow paths count them).
 */
#define URCU_PERCPU_CACHE_STATS		(1U << 9)

/* Zero fields take the defaults named here. */
struct urcu_percpu_cache_attr {
	unsigned int flags;
	size_t align;		/* 0: alignof(max_align_t) */
	size_t cpu_max;		/* objects per CPU list; 0: 128 */
	size_t batch;		/* objects per depot batch; 0: cpu_max / 4 */
	size_t max_objects;	/* 0: unlimited (up to what mmap gives) */
};

struct urcu_percpu_cache_stats {
	uint64_t allocs;	/* successful allocs (URCU_PERCPU_CACHE_STATS) */
	uint64_t frees;		/* (URCU_PERCPU_CACHE_STATS) */
	uint64_t refills;	/* batches moved depot/slab -> CPU list */
	uint64_t spills;	/* batches moved CPU list -> depot */
	uint64_t resident_bytes;	/* slab pages touched and not released */
	uint64_t mapped_bytes;	/* slab address space */
	uint64_t objects;	/* objects carved from slabs (live + cached) */
};

/* What a free object holds; the object's first bytes while it is free. */
struct urcu_percpu_cache_node {
	struct urcu_percpu_freelist_node node;	/* first: the list link */
	uintptr_t depth;	/* nodes from here to the list's end */
	struct urcu_percpu_cache_node *next_batch;	/* depot only */
};

/* cache->mode besides URCU_RSEQ_INDEX_CPU / _MM_CID. */
#define URCU_PERCPU_CACHE_LOCKED	2

/* Readable, but private to the library: use the functions. */
struct urcu_percpu_cache {
	struct urcu_percpu_freelist *fl;
	int mode;		/* URCU_RSEQ_INDEX_* or URCU_PERCPU_CACHE_LOCKED */
	uintptr_t cpu_max;
	struct urcu_percpu_counter *nr_allocs, *nr_frees; /* NULL: not counted */
};

/* NULL + errno: EINVAL (obj_size 0 or too big, bad attr), ENOMEM. */
URCU_RSEQ_API struct urcu_percpu_cache *urcu_percpu_cache_create(
		size_t obj_size, const struct urcu_percpu_cache_attr *attr);
/* 0; -1 + errno EBUSY (objects still allocated) or EINVAL (NULL). */
URCU_RSEQ_API int urcu_percpu_cache_destroy(struct urcu_percpu_cache *c);
/* 0; -1 + errno EINVAL (NULL). */
URCU_RSEQ_API int urcu_percpu_cache_drain(struct urcu_percpu_cache *c);
/* 0; -1 + errno EINVAL. Exact only while no alloc or free runs. */
URCU_RSEQ_API int urcu_percpu_cache_stats(struct urcu_percpu_cache *c,
		struct urcu_percpu_cache_stats *stats);
/* The stride between objects: obj_size rounded up to the alignment. */
URCU_RSEQ_API size_t urcu_percpu_cache_obj_size(const struct urcu_percpu_cache *c);
/* The slow paths: empty or busy list, full list, no rseq, locked mode. */
URCU_RSEQ_API void *urcu_percpu_cache_alloc_slow(struct urcu_percpu_cache *c);
URCU_RSEQ_API void urcu_percpu_cache_free_slow(struct urcu_percpu_cache *c,
		void *obj);

#if defined(__GNUC__)
#define URCU_PERCPU_CACHE_INLINE	inline __attribute__((always_inline))
#else
#define URCU_PERCPU_CACHE_INLINE	inline
#endif

static URCU_PERCPU_CACHE_INLINE void *urcu_percpu_cache_alloc(
		struct urcu_percpu_cache *c)
{
	int mode = c->mode;

	if (caa_likely(mode != URCU_PERCPU_CACHE_LOCKED)) {
		struct urcu_percpu_freelist_node *n =
			urcu_percpu_freelist_pop_fast(c->fl, mode);

		if (caa_likely(n)) {
			if (c->nr_allocs)
				urcu_percpu_counter_inc(c->nr_allocs);
			return n;
		}
	}
	return urcu_percpu_cache_alloc_slow(c);
}

/* NULL is ignored, as by free(). */
static URCU_PERCPU_CACHE_INLINE void urcu_percpu_cache_free(
		struct urcu_percpu_cache *c, void *obj)
{
	struct urcu_percpu_cache_node *n =
		(struct urcu_percpu_cache_node *) obj;
	int mode = c->mode;

	if (caa_unlikely(!n))
		return;
	if (caa_likely(mode != URCU_PERCPU_CACHE_LOCKED)) {
		for (;;) {
			int idx = urcu_rseq_index(mode);
			intptr_t *head, h;
			uintptr_t depth = 1;

			if (caa_unlikely(idx < 0))
				break;
			head = (intptr_t *) urcu_percpu_ptr(c->fl->heads, idx);
			h = CMM_LOAD_SHARED(*head);
			if (caa_unlikely(h == (intptr_t) &urcu_percpu_freelist_busy))
				break;
			if (h)
				depth += CMM_LOAD_SHARED(((struct
					urcu_percpu_cache_node *) h)->depth);
			if (caa_unlikely(depth > c->cpu_max))
				break;	/* spill a batch */
			n->node.next = (struct urcu_percpu_freelist_node *) h;
			n->depth = depth;
			if (caa_likely(urcu_rseq_cmpeqv_storev(mode, head, h,
					(intptr_t) n, idx) == URCU_RSEQ_COMMITTED)) {
				if (c->nr_frees)
					urcu_percpu_counter_inc(c->nr_frees);
				return;
			}
		}
	}
	urcu_percpu_cache_free_slow(c, obj);
}

#ifdef __cplusplus
}
#endif

#endif /* _URCU_PERCPU_CACHE_H */
