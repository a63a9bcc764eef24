// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-CPU counters: the slow paths. The protocol and the argument for its
 * exactness are in include/urcu/percpu/counter.h.
 *
 * All counters share two pools (one CPU-indexed, one mm_cid-indexed) of
 * 16-byte items, created on first use: two slots per index, packed, so that
 * 100,000 counters cost 1.6 MB on each index that is actually used.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <urcu/arch.h>
#include <urcu/uatomic.h>

#include <urcu/percpu/counter.h>
#include "common.h"
#include "percpu-fork.h"

static pthread_mutex_t counter_pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urcu_percpu_pool *counter_pools[2];	/* [0] CPU, [1] mm_cid */

/*
 * read_resets of one counter serialize; distinct counters rarely collide.
 * fork()'s prepare hook holds them all at once, with the other primitives'
 * locks: ThreadSanitizer follows at most 64 locks held by one thread, and
 * 64 of these alone (with the pools lock) stopped it in make check-tsan.
 */
#define RESET_LOCKS	32
static pthread_mutex_t reset_locks[RESET_LOCKS] = {
	[0 ... RESET_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER
};

static pthread_mutex_t *reset_lock_of(const struct urcu_percpu_counter *c)
{
	uintptr_t h = (uintptr_t) c;

	h ^= h >> 7;
	h ^= h >> 13;
	return &reset_locks[h % RESET_LOCKS];
}

static struct urcu_percpu_pool *counter_pool(bool mm_cid)
{
	struct urcu_percpu_pool_attr attr = {
		.flags = mm_cid ? URCU_PERCPU_MM_CID : 0,
		.nr_index = 0,
	};
	struct urcu_percpu_pool *pool;

	pthread_mutex_lock(&counter_pools_lock);
	pool = counter_pools[mm_cid];
	if (!pool) {
		pool = urcu_percpu_pool_create(2 * sizeof(intptr_t), &attr);
		counter_pools[mm_cid] = pool;
	}
	pthread_mutex_unlock(&counter_pools_lock);
	return pool;
}

struct urcu_percpu_counter *urcu_percpu_counter_create(unsigned int flags)
{
	struct urcu_percpu_counter *c;
	struct urcu_percpu_pool *pool;
	bool mm_cid = flags & URCU_PERCPU_MM_CID;
	int mode;

	urcu_rseq_percpu_fork_register();
	if (flags & ~URCU_PERCPU_MM_CID) {
		errno = EINVAL;
		return NULL;
	}
	pool = counter_pool(mm_cid);
	if (!pool)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->base = (intptr_t *) urcu_percpu_zmalloc(pool);
	if (!c->base) {
		free(c);
		return NULL;
	}
	mode = urcu_percpu_pool_index_mode(pool);
	/*
	 * Without the fence, read_reset cannot retire an array that rseq
	 * sections may still add to: every add goes atomic instead.
	 */
	if (!urcu_rseq_fence_available())
		mode = URCU_PERCPU_COUNTER_ATOMIC;
	c->mode = mode;
	c->nr_index = urcu_percpu_pool_nr_index(pool);
	c->active = &c->base[0];
	return c;
}

void urcu_percpu_counter_destroy(struct urcu_percpu_counter *c)
{
	if (!c)
		return;
	urcu_percpu_free(c->base);
	free(c);
}

int urcu_percpu_counter_is_atomic(const struct urcu_percpu_counter *c)
{
	return c && c->mode == URCU_PERCPU_COUNTER_ATOMIC;
}

static intptr_t *slot_of(intptr_t *array, int idx)
{
	return (intptr_t *) urcu_percpu_ptr(array, idx);
}

void urcu_percpu_counter_add_slow(struct urcu_percpu_counter *c, intptr_t v)
{
	if (c->mode == URCU_PERCPU_COUNTER_ATOMIC) {
		int cpu = urcu_rseq_cpu();

		/* A CPU numbered above the possible count would be a kernel bug. */
		if (caa_unlikely(cpu >= c->nr_index))
			cpu = 0;
		uatomic_add(slot_of(c->base, cpu), v);
		return;
	}
	/* This thread has no rseq: never plain-store to the arrays. */
	uatomic_add(&c->fallback, v);
}

intptr_t urcu_percpu_counter_read(struct urcu_percpu_counter *c)
{
	intptr_t *array = CMM_LOAD_SHARED(c->active);
	intptr_t sum = 0;
	int k;

	/* Address dependency from the load of active, as in the adders. */
	for (k = 0; k < c->nr_index; k++)
		sum += CMM_LOAD_SHARED(*slot_of(array, k));
	return sum + uatomic_read(&c->fallback);
}

/* Atomic mode: drain each slot in its modification order. */
static intptr_t read_reset_atomic(struct urcu_percpu_counter *c)
{
	intptr_t sum = 0;
	int k;

	for (k = 0; k < c->nr_index; k++) {
		intptr_t *slot = slot_of(c->base, k);

		/* A zero slot needs no xchg, and stays unbacked if unused. */
		if (CMM_LOAD_SHARED(*slot))
			sum += uatomic_xchg(slot, 0);
	}
	return sum + uatomic_xchg(&c->fallback, 0);
}

intptr_t urcu_percpu_counter_read_reset(struct urcu_percpu_counter *c)
{
	pthread_mutex_t *lock = reset_lock_of(c);
	struct urcu_rseq_backoff backoff = URCU_RSEQ_BACKOFF_INIT;
	intptr_t *old, *next, sum = 0;
	int k;

	if (c->mode == URCU_PERCPU_COUNTER_ATOMIC) {
		/* Concurrent xchgs each take a disjoint part: no lock. */
		return read_reset_atomic(c);
	}
	pthread_mutex_lock(lock);
	old = c->active;
	next = old == &c->base[0] ? &c->base[1] : &c->base[0];
	/* R1: retire old. Its slots of @next are zero (R0). */
	CMM_STORE_SHARED(c->active, next);
	urcu_rseq_fi_point();
	/*
	 * R2: every section that loaded @old has committed or been aborted.
	 * Pairs with the commit store of each adder's deref_addv. A failure
	 * here would leave adds in flight on @old: it only happens when the
	 * fence was available at create and then vanished, which the kernel
	 * does not do; take no chance and spin on it.
	 */
	while (urcu_rseq_fence() != 0)
		urcu_rseq_backoff(&backoff);
	/* R3: nobody adds to @old any more. */
	for (k = 0; k < c->nr_index; k++) {
		intptr_t *slot = slot_of(old, k);
		intptr_t v = CMM_LOAD_SHARED(*slot);

		if (v) {
			sum += v;
			CMM_STORE_SHARED(*slot, 0);
		}
	}
	/*
	 * R4: the zeroes above before the store that publishes @old again in
	 * a later read_reset. Pairs with the address dependency from the load
	 * of active to the commit in the adders' deref_addv.
	 */
	cmm_smp_wmb();
	sum += uatomic_xchg(&c->fallback, 0);
	pthread_mutex_unlock(lock);
	return sum;
}

/*
 * fork(): see percpu-fork.h. A child must not inherit a reset lock or the
 * pools lock held by a thread it does not have: take them all, so that
 * fork() waits for the read_resets and the creations in progress. No
 * thread holds one of them while it takes another (create takes the pools
 * lock, then the pool's own lock, which the pool hook takes after us;
 * read_reset holds its reset lock and nothing else), so any order will
 * do; the child, which holds them all, gets them fresh.
 *
 * What the child's counters hold: every add of a parent thread was one
 * rseq commit or one atomic instruction, so each add in flight at fork()
 * is in the child's counter entirely or not at all, and no read_reset is
 * half done (the forking thread waited for it).
 */
void urcu_rseq_counter_fork_prepare(void)
{
	int i;

	pthread_mutex_lock(&counter_pools_lock);
	for (i = 0; i < RESET_LOCKS; i++)
		pthread_mutex_lock(&reset_locks[i]);
}

void urcu_rseq_counter_fork_parent(void)
{
	int i;

	for (i = RESET_LOCKS - 1; i >= 0; i--)
		pthread_mutex_unlock(&reset_locks[i]);
	pthread_mutex_unlock(&counter_pools_lock);
}

void urcu_rseq_counter_fork_child(void)
{
	int i;

	for (i = 0; i < RESET_LOCKS; i++)
		pthread_mutex_init(&reset_locks[i], NULL);
	pthread_mutex_init(&counter_pools_lock, NULL);
}
