// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/percpu/freelist.h - per-CPU free lists: LIFO lists of nodes, one per
 * CPU (or per mm_cid), where push and pop on the current CPU's list are
 * single rseq critical sections, plus a remote operation that takes another
 * CPU's whole list.
 *
 * A node is embedded in the caller's object; the list links it through
 * node->next and owns it from push until a pop returns it. Nodes must be
 * at least pointer-aligned and stay mapped while on a list.
 *
 * Who may call what, concurrently:
 * - push, pop: any thread, also from signal handlers when the thread uses
 *   rseq. pop returns a node of the current CPU's list, or, when that list
 *   is empty, of the shared list (below); NULL when both are empty.
 * - pop_all_cpu(fl, cpu): any thread, not from a signal handler; takes the
 *   whole list of @cpu (a chain through ->next, NULL-terminated), or of the
 *   shared list with cpu == URCU_PERCPU_FREELIST_SHARED. Remote calls
 *   serialize on a mutex of the free list.
 * - create/destroy: destroy once nobody else uses the free list. destroy
 *   does not touch the nodes still on it (they belong to the caller, who
 *   drains them with pop_all_cpu first).
 * - fork(): allowed while other threads are in any of these; the child can
 *   use every free list. Nodes other threads had popped or were pushing
 *   are on no list in the child (doc/percpu-freelist.md).
 *
 * The shared list (a mutex-protected stack) takes the nodes of threads that
 * cannot use rseq, and pushes that land on a CPU whose list is being taken
 * remotely at that moment. Only remote and slow paths touch it.
 *
 * Why the rseq pop is immune to ABA. pop is one critical section
 * (cmpnev_storeoffp_load): head = list[cpu]; if NULL fail; next =
 * head->next; commit list[cpu] = next. ABA needs someone to pop head, change
 * the list and push head back between the load of head and the commit. On
 * this CPU that is impossible: any other thread or signal handler that runs
 * here preempts the section, which the kernel then aborts. From other CPUs,
 * the only writer of list[cpu] is pop_all_cpu, whose protocol below never
 * takes nodes while a section that read them can still commit.
 *
 * How pop_all_cpu(cpu) stays correct against local push and pop. A section
 * on @cpu compares and stores list[cpu] with plain instructions, atomic only
 * against that CPU; a remote atomic exchange could land between a section's
 * load and its commit and hand out nodes the section also hands out. So:
 *
 *   P1  v = list[cpu]; if v == NULL: return NULL
 *   P2  CAS(list[cpu], v, BUSY)	BUSY: a static node whose next is itself
 *   P3  urcu_rseq_fence_cpu(cpu)	every section in flight on @cpu has
 *					committed or aborted (pairs with their
 *					commits; full barrier)
 *   P4  if list[cpu] != BUSY: goto P1	a section committed over BUSY: the
 *					list moved on, nothing was taken
 *   P5  take v; list[cpu] = NULL; fence; repeat while list[cpu] == BUSY
 *
 * After P2, a section that loaded list[cpu] before BUSY was visible commits
 * over it (push: BUSY replaced by n with n->next == v; pop: by v->next), so
 * P4 sees the change and retries; nothing ever stores BUSY except P2 and a
 * pop that read BUSY (it commits BUSY->next == BUSY, unchanged), and no push
 * links a node to BUSY (a pusher that reads BUSY pushes to the shared list
 * instead), so once overwritten, list[cpu] cannot become BUSY again. If
 * P4 still sees BUSY, no section committed after P2 and every later section
 * loads BUSY (the fence orders P2 before them): v is ours. A pop that loads
 * BUSY returns "empty"; it may commit BUSY after P5's store of NULL, which
 * the fence-and-recheck of P5 repairs. Sections on one CPU never interleave,
 * so a push onto the new NULL head cannot be overwritten by such a stale
 * commit.
 *
 * Without the RSEQ fence (urcu_rseq_fence_available() false at create), the
 * free list is "locked": every operation takes a mutex of the index.
 */
#ifndef _URCU_PERCPU_FREELIST_H
#define _URCU_PERCPU_FREELIST_H

#include <stddef.h>
#include <stdint.h>
#include <urcu/compiler.h>
#include <urcu/system.h>
#include <urcu/rseq.h>
#include <urcu/percpu/common.h>
#include <urcu/percpu/pool.h>

#ifdef __cplusplus
extern "C" {
#endif

struct urcu_percpu_freelist_node {
	struct urcu_percpu_freelist_node *next;
};

/* pop_all_cpu() argument naming the shared list. */
#define URCU_PERCPU_FREELIST_SHARED	(-1)

/* freelist->mode besides URCU_RSEQ_INDEX_CPU / _MM_CID. */
#define URCU_PERCPU_FREELIST_LOCKED	2

/* The "being taken" head value; its next points to itself. */
URCU_RSEQ_API extern struct urcu_percpu_freelist_node urcu_percpu_freelist_busy;

/* Readable, but private to the library: use the functions. */
struct urcu_percpu_freelist {
	intptr_t *heads;	/* index 0's head; urcu_percpu_ptr() for others */
	int mode;		/* URCU_RSEQ_INDEX_* or URCU_PERCPU_FREELIST_LOCKED */
	int nr_index;
};

/* flags: 0 or URCU_PERCPU_MM_CID. NULL + errno (EINVAL, ENOMEM). */
URCU_RSEQ_API struct urcu_percpu_freelist *urcu_percpu_freelist_create(
		unsigned int flags);
URCU_RSEQ_API void urcu_percpu_freelist_destroy(struct urcu_percpu_freelist *fl);
/* cpu out of range: NULL with errno = EINVAL (NULL with errno 0: empty). */
URCU_RSEQ_API struct urcu_percpu_freelist_node *urcu_percpu_freelist_pop_all_cpu(
		struct urcu_percpu_freelist *fl, int cpu);
/* The paths of a thread without rseq, of the locked mode, and of BUSY. */
URCU_RSEQ_API void urcu_percpu_freelist_push_slow(struct urcu_percpu_freelist *fl,
		struct urcu_percpu_freelist_node *n);
URCU_RSEQ_API struct urcu_percpu_freelist_node *urcu_percpu_freelist_pop_slow(
		struct urcu_percpu_freelist *fl);

static inline void urcu_percpu_freelist_push(struct urcu_percpu_freelist *fl,
		struct urcu_percpu_freelist_node *n)
{
	int mode = fl->mode;

	if (caa_likely(mode != URCU_PERCPU_FREELIST_LOCKED)) {
		for (;;) {
			int idx = urcu_rseq_index(mode);
			intptr_t *head, h;

			if (caa_unlikely(idx < 0))
				break;
			head = (intptr_t *) urcu_percpu_ptr(fl->heads, idx);
			h = CMM_LOAD_SHARED(*head);
			if (caa_unlikely(h == (intptr_t) &urcu_percpu_freelist_busy))
				break;
			n->next = (struct urcu_percpu_freelist_node *) h;
			if (caa_likely(urcu_rseq_cmpeqv_storev(mode, head, h,
					(intptr_t) n, idx) == URCU_RSEQ_COMMITTED))
				return;
		}
	}
	urcu_percpu_freelist_push_slow(fl, n);
}

#if defined(__GNUC__)
#define URCU_PERCPU_FREELIST_INLINE	inline __attribute__((always_inline))
#else
#define URCU_PERCPU_FREELIST_INLINE	inline
#endif

/*
 * The rseq pop of the calling thread's own list, shared by the free list
 * and the object cache: the node, or NULL when the list is empty, is being
 * taken (BUSY), or the thread has no rseq; the caller's slow path decides
 * what to do then. @mode must not be the locked mode.
 */
static URCU_PERCPU_FREELIST_INLINE struct urcu_percpu_freelist_node *
urcu_percpu_freelist_pop_fast(struct urcu_percpu_freelist *fl, int mode)
{
	for (;;) {
		int idx = urcu_rseq_index(mode);
		intptr_t load;
		int ret;

		if (caa_unlikely(idx < 0))
			return NULL;
		ret = urcu_rseq_cmpnev_storeoffp_load(mode,
			(intptr_t *) urcu_percpu_ptr(fl->heads, idx), 0,
			(long) offsetof(struct urcu_percpu_freelist_node, next),
			&load, idx);
		if (caa_likely(ret == URCU_RSEQ_COMMITTED)) {
			if (caa_unlikely(load
					== (intptr_t) &urcu_percpu_freelist_busy))
				return NULL;	/* being taken: empty for us */
			return (struct urcu_percpu_freelist_node *) load;
		}
		if (ret == URCU_RSEQ_CMPFAIL)
			return NULL;		/* empty */
	}
}

static inline struct urcu_percpu_freelist_node *urcu_percpu_freelist_pop(
		struct urcu_percpu_freelist *fl)
{
	int mode = fl->mode;

	if (caa_likely(mode != URCU_PERCPU_FREELIST_LOCKED)) {
		struct urcu_percpu_freelist_node *n =
			urcu_percpu_freelist_pop_fast(fl, mode);

		if (caa_likely(n))
			return n;
	}
	/* Empty, being taken, no rseq, or locked: the shared list and more. */
	return urcu_percpu_freelist_pop_slow(fl);
}

#ifdef __cplusplus
}
#endif

#endif /* _URCU_PERCPU_FREELIST_H */
