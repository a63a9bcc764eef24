// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-CPU spinlocks: creation, the compare-and-swap (remote) path and the
 * slow path of the local lock. The protocol and its correctness argument
 * are in include/urcu/percpu/lock.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/list.h>

#include <urcu/percpu/lock.h>
#include "common.h"
#include "percpu-fork.h"

/* The public structure and what only this file sees. */
struct lock_priv {
	struct urcu_percpu_lock pub;
	struct cds_list_head node;	/* in live_locks */
	/*
	 * unlock_all() calls between their first releasing store and their
	 * last access to the lock: destroy waits for them (lock_destroy()).
	 */
	unsigned long releasing;
};

/* Every lock between create and destroy, for the fork hooks. */
static pthread_mutex_t live_locks_lock = PTHREAD_MUTEX_INITIALIZER;
static CDS_LIST_HEAD(live_locks);

static struct lock_priv *priv_of(struct urcu_percpu_lock *l)
{
	return caa_container_of(l, struct lock_priv, pub);
}

/* What @remote rests at with no request: see urcu_percpu_lock_create(). */
static intptr_t remote_rest(struct urcu_percpu_lock *l)
{
	return l->fast ? 0 : 1;
}

struct urcu_percpu_lock *urcu_percpu_lock_create(unsigned int flags)
{
	struct urcu_percpu_lock *l;
	struct lock_priv *lp;
	void *mem;
	int nr, i;

	urcu_rseq_percpu_fork_register();
	if (flags & ~URCU_PERCPU_MM_CID) {
		errno = EINVAL;
		return NULL;
	}
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return NULL;
	l = &lp->pub;
	nr = urcu_rseq_nr_cpus();
	if (posix_memalign(&mem, CAA_CACHE_LINE_SIZE,
			(size_t) nr * sizeof(struct urcu_percpu_lock_shard))) {
		free(lp);
		errno = ENOMEM;
		return NULL;
	}
	memset(mem, 0, (size_t) nr * sizeof(struct urcu_percpu_lock_shard));
	l->shards = (struct urcu_percpu_lock_shard *) mem;
	l->nr_shards = nr;
	l->flags = flags;
	l->mode = urcu_rseq_index_mode((flags & URCU_PERCPU_MM_CID) ?
			URCU_RSEQ_INDEX_MM_CID : URCU_RSEQ_INDEX_CPU);
	if (l->mode == URCU_RSEQ_INDEX_CPU)
		l->cpu_shards = l->shards;
	/*
	 * The fast path is correct only against remote lockers that can fence
	 * it out; without the fence every locker takes compare-and-swap.
	 */
	l->fast = (urcu_rseq_features & URCU_RSEQ_FEATURE_CS)
		&& urcu_rseq_fence_available();
	/*
	 * Without the fast path, @remote is never counted: a permanent 1
	 * there makes the inline section fail its second compare and go to
	 * the slow path, so the inline code needs no test of l->fast.
	 */
	if (!l->fast)
		for (i = 0; i < nr; i++)
			l->shards[i].remote = 1;
	pthread_mutex_lock(&live_locks_lock);
	cds_list_add(&lp->node, &live_locks);
	pthread_mutex_unlock(&live_locks_lock);
	/* Publish the zeroed words before the lock pointer is shared. */
	cmm_smp_wmb();
	return l;
}

/*
 * The last user may destroy the lock as soon as its own unlock returned
 * (it dropped the last reference under the lock), while the thread that
 * held the shard before it is still on its way out of unlock: between its
 * releasing store and the decrement of @remote (urcu_percpu_unlock_slow())
 * or between its first and its last shard (urcu_percpu_unlock_all()).
 * Those late accesses are each the last one of their call, and counted:
 * wait until they are done. A held shard is not waited for: destroying a
 * lock with a holder is a misuse, except in a fork() child, where a shard
 * held by a thread of the parent stays held for ever.
 */
static void wait_releasers(struct urcu_percpu_lock *l)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;
	struct lock_priv *lp = priv_of(l);
	intptr_t rest = remote_rest(l);
	int i;

	while (uatomic_read(&lp->releasing))
		urcu_rseq_backoff(&b);
	for (i = 0; i < l->nr_shards; i++) {
		struct urcu_percpu_lock_shard *s = &l->shards[i];

		while (CMM_LOAD_SHARED(s->lock) == _URCU_PERCPU_LOCK_FREE
				&& uatomic_read(&s->remote) > rest)
			urcu_rseq_backoff(&b);
	}
	/*
	 * Their accesses before the free, and whatever reuses the memory.
	 * Pairs with the barrier before each decrement we waited for.
	 */
	cmm_smp_mb();
}

void urcu_percpu_lock_destroy(struct urcu_percpu_lock *l)
{
	struct lock_priv *lp;

	if (!l)
		return;
	lp = priv_of(l);
	wait_releasers(l);
	pthread_mutex_lock(&live_locks_lock);
	cds_list_del(&lp->node);
	pthread_mutex_unlock(&live_locks_lock);
	free(l->shards);
	free(lp);
}

int urcu_percpu_lock_nr_shards(struct urcu_percpu_lock *l)
{
	if (!l) {
		errno = EINVAL;
		return -1;
	}
	return l->nr_shards;
}

void urcu_percpu_lock_bad_shard(struct urcu_percpu_lock *l, int cpu,
		const char *fn)
{
	urcu_rseq_debug_check(0, fn, "invalid shard index or shard not held");
	(void) l;
	(void) cpu;
	errno = EINVAL;
}

/* The inline unlock found the shard not taken by the fast path. */
void urcu_percpu_unlock_slow(struct urcu_percpu_lock *l, int cpu)
{
	struct urcu_percpu_lock_shard *s;
	intptr_t v;

	if (!l || cpu < 0 || cpu >= l->nr_shards) {
		urcu_percpu_lock_bad_shard(l, cpu, "urcu_percpu_unlock");
		return;
	}
	s = &l->shards[cpu];
	/* Ours while we hold it: nobody else writes it. */
	v = CMM_LOAD_SHARED(s->lock);
	if (caa_unlikely(v == _URCU_PERCPU_LOCK_FREE)) {
		urcu_percpu_lock_bad_shard(l, cpu,
				"urcu_percpu_unlock: shard not locked");
		return;
	}
	_urcu_percpu_lock_release_fence();	/* R: pairs with A and C's cmpxchg */
	CMM_STORE_SHARED(s->lock, _URCU_PERCPU_LOCK_FREE);
	if (v == _URCU_PERCPU_LOCK_CAS) {
		urcu_rseq_fi_point();
		/*
		 * M2: the release is visible before our unit of @remote goes.
		 * Also: our last access to the lock, which destroy waits for
		 * (wait_releasers()); nothing of @l may be touched after it.
		 */
		cmm_smp_mb__before_uatomic_dec();
		uatomic_dec(&s->remote);
	}
}

static bool valid_shard(struct urcu_percpu_lock *l, int cpu)
{
	return l && cpu >= 0 && cpu < l->nr_shards;
}

/*
 * Step 1 of the C path: count ourselves in @remote and make sure no fast
 * path that missed the count can still commit (header: "F against C").
 */
static void remote_request(struct urcu_percpu_lock *l, int cpu)
{
	struct urcu_percpu_lock_shard *s = &l->shards[cpu];
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;

	if (!l->fast)
		return;
	uatomic_inc(&s->remote);
	/* M1: pairs with the fence's barrier on the shard's CPU. */
	cmm_smp_mb__after_uatomic_inc();
	urcu_rseq_fi_point();
	/*
	 * Running on the shard's CPU now: every other thread's section there
	 * is preempted (it will abort) or committed before we were scheduled.
	 */
	if (l->mode == URCU_RSEQ_INDEX_CPU
			&& urcu_rseq_index(URCU_RSEQ_INDEX_CPU) == cpu)
		return;
	for (;;) {
		int ret = l->mode == URCU_RSEQ_INDEX_CPU ?
			urcu_rseq_fence_cpu(cpu) : urcu_rseq_fence();

		/* A failed targeted fence is covered by the global one. */
		if (ret && l->mode == URCU_RSEQ_INDEX_CPU)
			ret = urcu_rseq_fence();
		if (!ret)
			break;
		urcu_rseq_backoff(&b);
	}
	urcu_rseq_fi_point();
}

/* Gives back the unit of @remote of a request that did not get the lock. */
static void remote_cancel(struct urcu_percpu_lock *l, int cpu)
{
	if (l->fast)
		uatomic_dec(&l->shards[cpu].remote);
}

static intptr_t cas_value(struct urcu_percpu_lock *l)
{
	/* Without the fast path there is no unit of @remote to give back. */
	return l->fast ? _URCU_PERCPU_LOCK_CAS : _URCU_PERCPU_LOCK_LOCAL;
}

static bool cas_once(struct urcu_percpu_lock *l, int cpu)
{
	struct urcu_percpu_lock_shard *s = &l->shards[cpu];

	/* The cmpxchg is a full barrier: the C path's acquire, pairs with R. */
	return CMM_LOAD_SHARED(s->lock) == _URCU_PERCPU_LOCK_FREE
		&& uatomic_cmpxchg(&s->lock, _URCU_PERCPU_LOCK_FREE,
				cas_value(l)) == _URCU_PERCPU_LOCK_FREE;
}

/* Steps 2 of the C path, after remote_request(). */
static void cas_lock(struct urcu_percpu_lock *l, int cpu)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;

	while (!cas_once(l, cpu))
		urcu_rseq_backoff(&b);
}

static void lock_remote(struct urcu_percpu_lock *l, int cpu)
{
	remote_request(l, cpu);
	cas_lock(l, cpu);
}

/*
 * Waits for a pending remote request to go away before retrying the fast
 * path, so that remote lockers are not starved; after the spin budget the
 * thread joins the C path itself.
 */
int urcu_percpu_lock_slow(struct urcu_percpu_lock *l)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;
	struct urcu_percpu_lock_shard *s;
	int idx, ret;

	for (;;) {
		if (!l->fast)
			break;
		idx = urcu_rseq_index(l->mode);
		if (idx < 0)
			break;
		s = &l->shards[idx];
		ret = urcu_rseq_cmpeqv_cmpeqv_storev(l->mode, &s->lock,
				_URCU_PERCPU_LOCK_FREE, &s->remote, 0,
				_URCU_PERCPU_LOCK_LOCAL, idx);
		if (ret == URCU_RSEQ_COMMITTED) {
			_urcu_percpu_lock_acquire_fence();	/* A: pairs with R */
			return idx;
		}
		if (ret == URCU_RSEQ_ABORTED)
			continue;
		if (CMM_LOAD_SHARED(s->lock) == _URCU_PERCPU_LOCK_LOCAL
				&& l->mode == URCU_RSEQ_INDEX_CPU
				&& b.step < URCU_RSEQ_BACKOFF_SPIN_STEPS) {
			/*
			 * Taken by a fast path on this CPU: the holder most
			 * likely sits preempted behind us, spinning cannot
			 * help it finish.
			 */
			b.step = URCU_RSEQ_BACKOFF_SPIN_STEPS;
		} else if (CMM_LOAD_SHARED(s->lock) == _URCU_PERCPU_LOCK_FREE
				&& b.step >= URCU_RSEQ_BACKOFF_SPIN_STEPS) {
			/* remote != 0 for a while: compete for it. */
			lock_remote(l, idx);
			return idx;
		}
		urcu_rseq_backoff(&b);
	}
	/* No rseq for this thread, or no fence: the C path on our CPU. */
	idx = urcu_rseq_cpu();
	if (caa_unlikely(idx >= l->nr_shards))
		idx %= l->nr_shards;
	lock_remote(l, idx);
	return idx;
}

/*
 * One attempt at the local fast path for @cpu, for callers that name a
 * shard: it only applies while this thread runs on the shard's CPU (or holds
 * its mm_cid). True when taken; false when the caller must take the remote
 * path (elsewhere, held, or a remote request pending).
 */
static bool try_local(struct urcu_percpu_lock *l, int cpu)
{
	struct urcu_percpu_lock_shard *s = &l->shards[cpu];

	while (l->fast && urcu_rseq_index(l->mode) == cpu) {
		int ret = urcu_rseq_cmpeqv_cmpeqv_storev(l->mode, &s->lock,
				_URCU_PERCPU_LOCK_FREE, &s->remote, 0,
				_URCU_PERCPU_LOCK_LOCAL, cpu);

		if (ret == URCU_RSEQ_COMMITTED) {
			_urcu_percpu_lock_acquire_fence();	/* A: pairs with R */
			return true;
		}
		if (ret == URCU_RSEQ_CMPFAIL)
			break;
	}
	return false;
}

void urcu_percpu_lock_cpu(struct urcu_percpu_lock *l, int cpu)
{
	if (!valid_shard(l, cpu)) {
		urcu_percpu_lock_bad_shard(l, cpu, "urcu_percpu_lock_cpu");
		return;
	}
	if (try_local(l, cpu))
		return;
	lock_remote(l, cpu);
}

bool urcu_percpu_trylock_cpu(struct urcu_percpu_lock *l, int cpu)
{
	struct urcu_percpu_lock_shard *s;

	if (!valid_shard(l, cpu)) {
		errno = EINVAL;
		return false;
	}
	if (try_local(l, cpu))
		return true;
	s = &l->shards[cpu];
	/* Visibly held: fail without paying for a fence. */
	if (CMM_LOAD_SHARED(s->lock) != _URCU_PERCPU_LOCK_FREE)
		goto busy;
	remote_request(l, cpu);
	if (cas_once(l, cpu))
		return true;
	remote_cancel(l, cpu);
busy:
	errno = EBUSY;
	return false;
}

void urcu_percpu_lock_all(struct urcu_percpu_lock *l)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;
	int i;

	if (!l) {
		urcu_percpu_lock_bad_shard(l, -1, "urcu_percpu_lock_all");
		return;
	}
	if (l->fast) {
		/* One global fence instead of one per shard. */
		for (i = 0; i < l->nr_shards; i++)
			uatomic_inc(&l->shards[i].remote);
		/* M1: pairs with the fence's barrier on every CPU. */
		cmm_smp_mb__after_uatomic_inc();
		urcu_rseq_fi_point();
		while (urcu_rseq_fence())
			urcu_rseq_backoff(&b);
		urcu_rseq_fi_point();
	}
	/* Increasing index order, like every other multi-shard holder. */
	for (i = 0; i < l->nr_shards; i++)
		cas_lock(l, i);
}

void urcu_percpu_unlock_all(struct urcu_percpu_lock *l)
{
	struct lock_priv *lp;
	int i;

	if (!l) {
		urcu_percpu_lock_bad_shard(l, -1, "urcu_percpu_unlock_all");
		return;
	}
	lp = priv_of(l);
	/*
	 * Once shard 0 is free, its next holder may be the last user and
	 * destroy the lock while we still release the others: count us, so
	 * that destroy waits (wait_releasers()). The count is visible before
	 * the first release (pairs with the acquire of that next holder).
	 */
	uatomic_inc(&lp->releasing);
	cmm_smp_mb__after_uatomic_inc();
	for (i = 0; i < l->nr_shards; i++)
		urcu_percpu_unlock(l, i);
	urcu_rseq_fi_point();
	/* Our last access to the lock; every release before it. */
	cmm_smp_mb__before_uatomic_dec();
	uatomic_dec(&lp->releasing);
}

/*
 * fork(): see percpu-fork.h. The child has one thread, the forking one;
 * the other threads' requests and releases in flight vanish with them.
 * Their units of @remote would keep the fast path of their shards off
 * for ever, and their unlock_all counts would make destroy wait for ever:
 * the child keeps only what a holder accounts for. A shard taken by
 * compare-and-swap carries its holder's unit; if that holder is the
 * forking thread it gives it back in unlock, and otherwise the shard stays
 * held in the child (its holder is gone, like any lock held by another
 * thread at fork()), its unit with it. Every other shard rests.
 */
void urcu_rseq_lock_fork_prepare(void)
{
	/* No lock is added or removed while the list is copied. */
	pthread_mutex_lock(&live_locks_lock);
}

void urcu_rseq_lock_fork_parent(void)
{
	pthread_mutex_unlock(&live_locks_lock);
}

void urcu_rseq_lock_fork_child(void)
{
	struct lock_priv *lp;
	int i;

	cds_list_for_each_entry(lp, &live_locks, node) {
		struct urcu_percpu_lock *l = &lp->pub;

		lp->releasing = 0;
		if (!l->fast)
			continue;	/* @remote is a constant 1 */
		for (i = 0; i < l->nr_shards; i++) {
			struct urcu_percpu_lock_shard *s = &l->shards[i];

			s->remote = s->lock == _URCU_PERCPU_LOCK_CAS ? 1 : 0;
		}
	}
	pthread_mutex_init(&live_locks_lock, NULL);
}
