// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-CPU free lists: the slow paths, the remote pop_all_cpu protocol and
 * the locked mode. The protocol and its argument are in
 * include/urcu/percpu/freelist.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <urcu/arch.h>
#include <urcu/list.h>
#include <urcu/uatomic.h>

#include <urcu/percpu/freelist.h>
#include "common.h"
#include "percpu-fork.h"

struct urcu_percpu_freelist_node urcu_percpu_freelist_busy = {
	&urcu_percpu_freelist_busy
};

#define BUSY	((intptr_t) &urcu_percpu_freelist_busy)

struct freelist_priv {
	struct urcu_percpu_freelist pub;	/* first: the public view */
	pthread_mutex_t remote_lock;		/* one remote operation at a time */
	pthread_mutex_t shared_lock;
	struct urcu_percpu_freelist_node *shared;
	pthread_mutex_t *index_locks;		/* locked mode: one per index */
	struct cds_list_head registry_node;	/* in freelists */
};

/*
 * freelist_pools_lock protects the two pools and the registry of live free
 * lists, which the fork hooks walk. It is never held while another lock is
 * taken, except by the fork prepare hook.
 */
static pthread_mutex_t freelist_pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urcu_percpu_pool *freelist_pools[2];	/* [0] CPU, [1] mm_cid */
static CDS_LIST_HEAD(freelists);

static struct freelist_priv *priv_of(struct urcu_percpu_freelist *fl)
{
	return caa_container_of(fl, struct freelist_priv, pub);
}

static struct urcu_percpu_pool *freelist_pool(bool mm_cid)
{
	struct urcu_percpu_pool_attr attr = {
		.flags = mm_cid ? URCU_PERCPU_MM_CID : 0,
		.nr_index = 0,
	};
	struct urcu_percpu_pool *pool;

	pthread_mutex_lock(&freelist_pools_lock);
	pool = freelist_pools[mm_cid];
	if (!pool) {
		pool = urcu_percpu_pool_create(sizeof(intptr_t), &attr);
		freelist_pools[mm_cid] = pool;
	}
	pthread_mutex_unlock(&freelist_pools_lock);
	return pool;
}

struct urcu_percpu_freelist *urcu_percpu_freelist_create(unsigned int flags)
{
	struct urcu_percpu_pool *pool;
	struct freelist_priv *p;
	int i;

	urcu_rseq_percpu_fork_register();
	if (flags & ~URCU_PERCPU_MM_CID) {
		errno = EINVAL;
		return NULL;
	}
	pool = freelist_pool(flags & URCU_PERCPU_MM_CID);
	if (!pool)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pub.heads = (intptr_t *) urcu_percpu_zmalloc(pool);
	if (!p->pub.heads)
		goto fail;
	p->pub.nr_index = urcu_percpu_pool_nr_index(pool);
	p->pub.mode = urcu_percpu_pool_index_mode(pool);
	pthread_mutex_init(&p->remote_lock, NULL);
	pthread_mutex_init(&p->shared_lock, NULL);
	/* Always there, so that tests can force the locked mode. */
	p->index_locks = calloc((size_t) p->pub.nr_index,
			sizeof(*p->index_locks));
	if (!p->index_locks)
		goto fail;
	for (i = 0; i < p->pub.nr_index; i++)
		pthread_mutex_init(&p->index_locks[i], NULL);
	/* Without the fence the remote protocol cannot work: lock instead. */
	if (!urcu_rseq_fence_available())
		p->pub.mode = URCU_PERCPU_FREELIST_LOCKED;
	pthread_mutex_lock(&freelist_pools_lock);
	cds_list_add(&p->registry_node, &freelists);
	pthread_mutex_unlock(&freelist_pools_lock);
	return &p->pub;
fail:
	urcu_percpu_free(p->pub.heads);
	free(p);
	errno = ENOMEM;
	return NULL;
}

void urcu_percpu_freelist_destroy(struct urcu_percpu_freelist *fl)
{
	struct freelist_priv *p;
	int i;

	if (!fl)
		return;
	p = priv_of(fl);
	pthread_mutex_lock(&freelist_pools_lock);
	cds_list_del(&p->registry_node);
	pthread_mutex_unlock(&freelist_pools_lock);
	if (p->index_locks) {
		for (i = 0; i < fl->nr_index; i++)
			pthread_mutex_destroy(&p->index_locks[i]);
		free(p->index_locks);
	}
	pthread_mutex_destroy(&p->remote_lock);
	pthread_mutex_destroy(&p->shared_lock);
	urcu_percpu_free(fl->heads);
	free(p);
}

static intptr_t *head_of(struct urcu_percpu_freelist *fl, int idx)
{
	return (intptr_t *) urcu_percpu_ptr(fl->heads, idx);
}

static void shared_push_chain(struct freelist_priv *p,
		struct urcu_percpu_freelist_node *first,
		struct urcu_percpu_freelist_node *last)
{
	pthread_mutex_lock(&p->shared_lock);
	last->next = p->shared;
	CMM_STORE_SHARED(p->shared, first);
	pthread_mutex_unlock(&p->shared_lock);
}

static struct urcu_percpu_freelist_node *shared_pop(struct freelist_priv *p)
{
	struct urcu_percpu_freelist_node *n;

	/* Usually empty: skip the mutex then. */
	if (!CMM_LOAD_SHARED(p->shared))
		return NULL;
	pthread_mutex_lock(&p->shared_lock);
	n = p->shared;
	if (n)
		CMM_STORE_SHARED(p->shared, n->next);
	pthread_mutex_unlock(&p->shared_lock);
	return n;
}

/* Locked mode: the index of the calling thread, always in range. */
static int locked_index(struct urcu_percpu_freelist *fl)
{
	int cpu = urcu_rseq_cpu();

	return cpu < fl->nr_index ? cpu : cpu % fl->nr_index;
}

void urcu_percpu_freelist_push_slow(struct urcu_percpu_freelist *fl,
		struct urcu_percpu_freelist_node *n)
{
	struct freelist_priv *p = priv_of(fl);

	if (fl->mode == URCU_PERCPU_FREELIST_LOCKED) {
		int idx = locked_index(fl);
		intptr_t *head = head_of(fl, idx);

		pthread_mutex_lock(&p->index_locks[idx]);
		n->next = (struct urcu_percpu_freelist_node *) *head;
		*head = (intptr_t) n;
		pthread_mutex_unlock(&p->index_locks[idx]);
		return;
	}
	/* No rseq here, or the CPU's list is being taken: never touch it. */
	shared_push_chain(p, n, n);
}

static void fence_index(struct urcu_percpu_freelist *fl, int idx)
{
	struct urcu_rseq_backoff backoff = URCU_RSEQ_BACKOFF_INIT;

	/* An mm_cid's sections may run on any CPU: fence them all. */
	while ((fl->mode == URCU_RSEQ_INDEX_CPU ? urcu_rseq_fence_cpu(idx)
			: urcu_rseq_fence()) != 0)
		urcu_rseq_backoff(&backoff);
}

/*
 * P5: reopen a list left BUSY. A pop that loaded BUSY before the store of
 * NULL may commit BUSY after it; once a fence has passed with the head not
 * BUSY, every such pop has finished.
 */
static void reopen(struct urcu_percpu_freelist *fl, intptr_t *head, int idx)
{
	do {
		uatomic_cmpxchg(head, BUSY, 0);
		urcu_rseq_fi_point();
		fence_index(fl, idx);
	} while (uatomic_read(head) == BUSY);
}

/* Remote protocol (P1-P5 in the header); called with remote_lock held. */
static struct urcu_percpu_freelist_node *take_remote(
		struct urcu_percpu_freelist *fl, int idx)
{
	intptr_t *head = head_of(fl, idx);
	intptr_t v;

	for (;;) {
		/* P1 */
		v = uatomic_read(head);
		if (!v)
			return NULL;
		if (caa_unlikely(v == BUSY)) {
			/* Not left so by this protocol; repair all the same. */
			reopen(fl, head, idx);
			continue;
		}
		/* P2: atomic against other remote writers. */
		if (uatomic_cmpxchg(head, v, BUSY) != v)
			continue;
		urcu_rseq_fi_point();
		/* P3: pairs with the commit of every section on @idx. */
		fence_index(fl, idx);
		/* P4: still BUSY, so no section committed since P2. */
		if (uatomic_read(head) == BUSY)
			break;
	}
	reopen(fl, head, idx);
	return (struct urcu_percpu_freelist_node *) v;
}

struct urcu_percpu_freelist_node *urcu_percpu_freelist_pop_all_cpu(
		struct urcu_percpu_freelist *fl, int cpu)
{
	struct urcu_percpu_freelist_node *n;
	struct freelist_priv *p;

	if (!fl || cpu < URCU_PERCPU_FREELIST_SHARED || cpu >= fl->nr_index) {
		errno = EINVAL;
		return NULL;
	}
	p = priv_of(fl);
	errno = 0;
	if (cpu == URCU_PERCPU_FREELIST_SHARED) {
		pthread_mutex_lock(&p->shared_lock);
		n = p->shared;
		CMM_STORE_SHARED(p->shared, NULL);
		pthread_mutex_unlock(&p->shared_lock);
		return n;
	}
	if (fl->mode == URCU_PERCPU_FREELIST_LOCKED) {
		intptr_t *head = head_of(fl, cpu);

		pthread_mutex_lock(&p->index_locks[cpu]);
		n = (struct urcu_percpu_freelist_node *) *head;
		*head = 0;
		pthread_mutex_unlock(&p->index_locks[cpu]);
		return n;
	}
	pthread_mutex_lock(&p->remote_lock);
	n = take_remote(fl, cpu);
	pthread_mutex_unlock(&p->remote_lock);
	return n;
}

/* A thread without rseq: take a CPU's list, keep one node, share the rest. */
static struct urcu_percpu_freelist_node *steal(struct urcu_percpu_freelist *fl)
{
	struct freelist_priv *p = priv_of(fl);
	struct urcu_percpu_freelist_node *n, *last;
	int start = urcu_rseq_cpu(), i;

	for (i = 0; i < fl->nr_index; i++) {
		int idx = (start + i) % fl->nr_index;

		/* A relaxed peek spares empty lists the fences. */
		if (!uatomic_read(head_of(fl, idx)))
			continue;
		n = urcu_percpu_freelist_pop_all_cpu(fl, idx);
		if (!n)
			continue;
		if (n->next) {
			for (last = n->next; last->next; last = last->next)
				;
			shared_push_chain(p, n->next, last);
		}
		return n;
	}
	return NULL;
}

struct urcu_percpu_freelist_node *urcu_percpu_freelist_pop_slow(
		struct urcu_percpu_freelist *fl)
{
	struct freelist_priv *p = priv_of(fl);
	struct urcu_percpu_freelist_node *n;

	if (fl->mode == URCU_PERCPU_FREELIST_LOCKED) {
		int idx = locked_index(fl);
		intptr_t *head = head_of(fl, idx);

		pthread_mutex_lock(&p->index_locks[idx]);
		n = (struct urcu_percpu_freelist_node *) *head;
		if (n)
			*head = (intptr_t) n->next;
		pthread_mutex_unlock(&p->index_locks[idx]);
		return n ? n : shared_pop(p);
	}
	n = shared_pop(p);
	if (n || urcu_rseq_index(fl->mode) >= 0)
		return n;
	return steal(fl);
}

/*
 * fork(): see percpu-fork.h. prepare takes the registry lock, then every
 * live free list's remote, index and shared locks (no code path holds two
 * of these at once, so their order among themselves is free); a cache's
 * locks, taken by the cache's hook before these, are the only ones held
 * while any of them is taken.
 *
 * With the remote lock held, no pop_all_cpu() is between its P2 and the
 * end of P5, so no head is BUSY at the fork; the mutexes keep the shared
 * list and the locked-mode lists whole. An rseq section of another thread
 * either committed before the fork or never happens in the child. What
 * the child loses: nodes other threads had popped (one node, or a whole
 * list taken by pop_all_cpu()) or were pushing (the section had not
 * committed); they are on no list in the child.
 */
void urcu_rseq_freelist_fork_prepare(void)
{
	struct freelist_priv *p;
	int i;

	pthread_mutex_lock(&freelist_pools_lock);
	cds_list_for_each_entry(p, &freelists, registry_node) {
		pthread_mutex_lock(&p->remote_lock);
		for (i = 0; i < p->pub.nr_index; i++)
			pthread_mutex_lock(&p->index_locks[i]);
		pthread_mutex_lock(&p->shared_lock);
	}
}

void urcu_rseq_freelist_fork_parent(void)
{
	struct freelist_priv *p;
	int i;

	cds_list_for_each_entry(p, &freelists, registry_node) {
		pthread_mutex_unlock(&p->shared_lock);
		for (i = p->pub.nr_index - 1; i >= 0; i--)
			pthread_mutex_unlock(&p->index_locks[i]);
		pthread_mutex_unlock(&p->remote_lock);
	}
	pthread_mutex_unlock(&freelist_pools_lock);
}

void urcu_rseq_freelist_fork_child(void)
{
	struct freelist_priv *p;
	int i;

	/* The forking thread holds them all: start them afresh. */
	cds_list_for_each_entry(p, &freelists, registry_node) {
		pthread_mutex_init(&p->shared_lock, NULL);
		for (i = 0; i < p->pub.nr_index; i++)
			pthread_mutex_init(&p->index_locks[i], NULL);
		pthread_mutex_init(&p->remote_lock, NULL);
	}
	pthread_mutex_init(&freelist_pools_lock, NULL);
}
