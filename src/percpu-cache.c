// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-CPU object cache: the depot, the slabs, spill and refill, drain. The
 * fast paths and the protocol are in include/urcu/percpu/cache.h.
 *
 * Everything here runs under cache->lock except the fast paths' rseq
 * sections on the CPU lists and drain's remote takes (under drain_lock).
 * A chain of free objects moving between a CPU list and the depot is
 * never in a thread's hands with neither lock held: spill pops the CPU
 * list under the lock, refill installs the rest of its batch under it, and
 * taking the CPU lists back at max_objects happens under it. So a fork()
 * (whose prepare hook takes both locks of every cache) sees each free
 * object on a list or in the depot, never lost in transit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdalign.h>
#include <sys/mman.h>
#include <unistd.h>
#include <urcu/arch.h>
#include <urcu/list.h>
#include <urcu/uatomic.h>

#include <urcu/percpu/cache.h>
#include "common.h"
#include "percpu-fork.h"

#define BUSY		((intptr_t) &urcu_percpu_freelist_busy)
#define SLAB_MIN	((size_t) 256 << 10)
#define SLAB_MIN_OBJS	16

typedef struct urcu_percpu_cache_node node_t;

struct slab {
	char *base;
	size_t carved;		/* objects handed out by the bump pointer */
	size_t touched;		/* bytes of pages that may be resident */
	size_t free_count;	/* drain's tally */
};

struct cache_priv {
	struct urcu_percpu_cache pub;	/* first: the public view */
	size_t stride, slab_bytes, objs_per_slab, batch, max_objects;
	pthread_mutex_t lock;		/* the depot and the slabs */
	pthread_mutex_t drain_lock;	/* one drain at a time */
	node_t *batches;		/* full batches, through next_batch */
	node_t *loose;			/* one partial chain, depths correct */
	struct slab *slabs;		/* sorted by base */
	size_t nr_slabs, cap_slabs;
	size_t cur;			/* slab being carved */
	size_t nr_objects;		/* carved, not released */
	struct urcu_percpu_counter *nr_refills, *nr_spills, *resident, *mapped;
	struct cds_list_head registry_node;	/* in caches */
};

/*
 * The live caches, for the fork hooks. caches_lock is never held while
 * another lock is taken, except by the fork prepare hook.
 */
static pthread_mutex_t caches_lock = PTHREAD_MUTEX_INITIALIZER;
static CDS_LIST_HEAD(caches);

static struct cache_priv *priv_of(struct urcu_percpu_cache *c)
{
	return caa_container_of(c, struct cache_priv, pub);
}

/* The list link of @n, NULL for NULL: node is the first member. */
static struct urcu_percpu_freelist_node *link_of(node_t *n)
{
	return (struct urcu_percpu_freelist_node *) n;
}

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static int is_pow2(size_t v)
{
	return v && !(v & (v - 1));
}

struct urcu_percpu_cache *urcu_percpu_cache_create(size_t obj_size,
		const struct urcu_percpu_cache_attr *attr)
{
	struct urcu_percpu_cache_attr a = { 0 };
	size_t page = (size_t) sysconf(_SC_PAGESIZE), align;
	struct cache_priv *p;

	urcu_rseq_percpu_fork_register();
	if (attr)
		a = *attr;
	align = a.align ? a.align : alignof(max_align_t);
	if (a.flags & URCU_PERCPU_CACHE_CACHELINE && align < CAA_CACHE_LINE_SIZE)
		align = CAA_CACHE_LINE_SIZE;
	if (!a.cpu_max)
		a.cpu_max = 128;
	if (!a.batch)
		a.batch = a.cpu_max / 4 ? a.cpu_max / 4 : 1;
	if (!obj_size || obj_size > ((size_t) 1 << 30)
			|| (a.flags & ~(URCU_PERCPU_MM_CID
				| URCU_PERCPU_CACHE_CACHELINE
				| URCU_PERCPU_CACHE_STATS))
			|| !is_pow2(align) || align > page
			|| a.batch > a.cpu_max || a.cpu_max > ((size_t) 1 << 20)) {
		errno = EINVAL;
		return NULL;
	}
	p = (struct cache_priv *) calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (align < sizeof(node_t) && sizeof(node_t) <= alignof(max_align_t))
		align = alignof(max_align_t);
	p->stride = round_up(obj_size < sizeof(node_t) ? sizeof(node_t)
			: obj_size, align);
	p->slab_bytes = round_up(p->stride * SLAB_MIN_OBJS, page);
	if (p->slab_bytes < SLAB_MIN)
		p->slab_bytes = SLAB_MIN;
	p->objs_per_slab = p->slab_bytes / p->stride;
	p->batch = a.batch;
	p->max_objects = a.max_objects ? a.max_objects : SIZE_MAX;
	p->pub.cpu_max = a.cpu_max;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->drain_lock, NULL);
	p->pub.fl = urcu_percpu_freelist_create(a.flags & URCU_PERCPU_MM_CID);
	if (a.flags & URCU_PERCPU_CACHE_STATS) {
		p->pub.nr_allocs = urcu_percpu_counter_create(
				a.flags & URCU_PERCPU_MM_CID);
		p->pub.nr_frees = urcu_percpu_counter_create(
				a.flags & URCU_PERCPU_MM_CID);
	}
	p->nr_refills = urcu_percpu_counter_create(0);
	p->nr_spills = urcu_percpu_counter_create(0);
	p->resident = urcu_percpu_counter_create(0);
	p->mapped = urcu_percpu_counter_create(0);
	if (!p->pub.fl || (a.flags & URCU_PERCPU_CACHE_STATS
				&& (!p->pub.nr_allocs || !p->pub.nr_frees))
			|| !p->nr_refills || !p->nr_spills || !p->resident
			|| !p->mapped)
		goto fail;
	p->pub.mode = p->pub.fl->mode == URCU_PERCPU_FREELIST_LOCKED ?
		URCU_PERCPU_CACHE_LOCKED : p->pub.fl->mode;
	pthread_mutex_lock(&caches_lock);
	cds_list_add(&p->registry_node, &caches);
	pthread_mutex_unlock(&caches_lock);
	return &p->pub;
fail:
	urcu_percpu_freelist_destroy(p->pub.fl);
	urcu_percpu_counter_destroy(p->pub.nr_allocs);
	urcu_percpu_counter_destroy(p->pub.nr_frees);
	urcu_percpu_counter_destroy(p->nr_refills);
	urcu_percpu_counter_destroy(p->nr_spills);
	urcu_percpu_counter_destroy(p->resident);
	urcu_percpu_counter_destroy(p->mapped);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->drain_lock);
	free(p);
	errno = ENOMEM;
	return NULL;
}

size_t urcu_percpu_cache_obj_size(const struct urcu_percpu_cache *c)
{
	return caa_container_of(c, struct cache_priv, pub)->stride;
}

/* Depot: a loose chain plus full batches; called with p->lock held. */
static void depot_push_one(struct cache_priv *p, node_t *n)
{
	n->node.next = link_of(p->loose);
	n->depth = p->loose ? p->loose->depth + 1 : 1;
	p->loose = n;
	if (n->depth >= p->batch) {
		n->next_batch = p->batches;
		p->batches = n;
		p->loose = NULL;
	}
}

/* A chain whose depths are right: a batch of its own. */
static void depot_push_batch(struct cache_priv *p, node_t *chain)
{
	chain->next_batch = p->batches;
	p->batches = chain;
}

/* A chain whose depths are not trusted, one node at a time. */
static void depot_push_chain(struct cache_priv *p, node_t *chain)
{
	while (chain) {
		node_t *next = (node_t *) chain->node.next;

		depot_push_one(p, chain);
		chain = next;
	}
}

static node_t *depot_pop_chain(struct cache_priv *p)
{
	node_t *n = p->batches;

	if (n) {
		p->batches = n->next_batch;
		return n;
	}
	n = p->loose;
	p->loose = NULL;
	return n;
}

static struct slab *slab_of(struct cache_priv *p, void *obj)
{
	size_t lo = 0, hi = p->nr_slabs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct slab *s = &p->slabs[mid];

		if ((char *) obj < s->base)
			hi = mid;
		else if ((char *) obj >= s->base + p->slab_bytes)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

/* A slab with room: the current one, a released one, or a new mapping. */
static struct slab *slab_with_room(struct cache_priv *p)
{
	size_t i;
	void *mem;

	if (p->nr_slabs && p->slabs[p->cur].carved < p->objs_per_slab)
		return &p->slabs[p->cur];
	for (i = 0; i < p->nr_slabs; i++) {
		if (!p->slabs[i].carved) {
			p->cur = i;
			return &p->slabs[i];
		}
	}
	if (p->nr_slabs == p->cap_slabs) {
		size_t cap = p->cap_slabs ? 2 * p->cap_slabs : 8;
		struct slab *ns = (struct slab *) realloc(p->slabs,
				cap * sizeof(*ns));

		if (!ns)
			return NULL;
		p->slabs = ns;
		p->cap_slabs = cap;
	}
	mem = mmap(NULL, p->slab_bytes, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	urcu_percpu_counter_add(p->mapped, (intptr_t) p->slab_bytes);
	/* Keep the array sorted by base for slab_of(). */
	for (i = p->nr_slabs; i > 0 && p->slabs[i - 1].base > (char *) mem; i--)
		p->slabs[i] = p->slabs[i - 1];
	memset(&p->slabs[i], 0, sizeof(p->slabs[i]));
	p->slabs[i].base = (char *) mem;
	p->nr_slabs++;
	p->cur = i;
	return &p->slabs[i];
}

/* Up to @want new objects as one chain with right depths; NULL: none. */
static node_t *carve(struct cache_priv *p, size_t want)
{
	size_t page = (size_t) sysconf(_SC_PAGESIZE), n, i, end;
	node_t *chain = NULL;
	struct slab *s;

	if (p->nr_objects >= p->max_objects)
		return NULL;
	if (want > p->max_objects - p->nr_objects)
		want = p->max_objects - p->nr_objects;
	s = slab_with_room(p);
	if (!s)
		return NULL;
	n = p->objs_per_slab - s->carved;
	if (n > want)
		n = want;
	/* Last carved first in the chain: it has the largest depth. */
	for (i = 0; i < n; i++) {
		node_t *o = (node_t *) (s->base + (s->carved + i) * p->stride);

		o->node.next = link_of(chain);
		o->depth = i + 1;
		chain = o;
	}
	s->carved += n;
	p->nr_objects += n;
	end = round_up(s->carved * p->stride, page);
	if (end > s->touched) {
		urcu_percpu_counter_add(p->resident, (intptr_t) (end - s->touched));
		s->touched = end;
	}
	return chain;
}

/*
 * Take every CPU list into the depot (depths not trusted). Called with
 * p->lock held, so that the lists are never in transit at a fork; this
 * runs only at max_objects, where holding the lock across the fences is
 * the price of not failing an alloc while free objects exist.
 */
static void reclaim_cpu_lists(struct cache_priv *p)
{
	struct urcu_percpu_freelist *fl = p->pub.fl;
	int i;

	for (i = 0; i < fl->nr_index; i++) {
		node_t *chain;

		/* A relaxed peek spares empty lists the fences. */
		if (!uatomic_read((intptr_t *) urcu_percpu_ptr(fl->heads, i)))
			continue;
		chain = (node_t *) urcu_percpu_freelist_pop_all_cpu(fl, i);
		if (chain)
			depot_push_chain(p, chain);
	}
}

/*
 * A chain from the depot or a slab, returned with p->lock held: the caller
 * places what it does not keep before letting the lock go. NULL + ENOMEM,
 * with the lock released.
 */
static node_t *get_chain(struct cache_priv *p, size_t want)
{
	node_t *chain;
	int tries;

	pthread_mutex_lock(&p->lock);
	for (tries = 0; tries < 2; tries++) {
		chain = depot_pop_chain(p);
		if (!chain)
			chain = carve(p, want);
		if (chain)
			return chain;
		if (p->nr_objects < p->max_objects
				|| p->pub.mode == URCU_PERCPU_CACHE_LOCKED)
			break;	/* mmap failed, or no CPU list to take back */
		reclaim_cpu_lists(p);
	}
	pthread_mutex_unlock(&p->lock);
	errno = ENOMEM;
	return NULL;
}

/*
 * Install @chain as the list of the caller's index if that list is empty.
 * Returns 0 when installed, -1 when the thread has no rseq or the list is
 * not empty.
 */
static int install(struct cache_priv *p, node_t *chain)
{
	struct urcu_percpu_cache *c = &p->pub;

	for (;;) {
		int idx = urcu_rseq_index(c->mode), ret;

		if (idx < 0)
			return -1;
		ret = urcu_rseq_cmpeqv_storev(c->mode,
			(intptr_t *) urcu_percpu_ptr(c->fl->heads, idx), 0,
			(intptr_t) chain, idx);
		if (ret == URCU_RSEQ_COMMITTED)
			return 0;
		if (ret == URCU_RSEQ_CMPFAIL)
			return -1;
	}
}

void *urcu_percpu_cache_alloc_slow(struct urcu_percpu_cache *c)
{
	struct cache_priv *p = priv_of(c);
	node_t *n, *rest;

	if (c->mode == URCU_PERCPU_CACHE_LOCKED
			|| urcu_rseq_index(c->mode) < 0) {
		/* One object at a time: this thread keeps no list. */
		pthread_mutex_lock(&p->lock);
		n = p->loose;
		if (!n && p->batches) {
			p->loose = p->batches;
			p->batches = p->batches->next_batch;
			n = p->loose;
		}
		if (!n)
			n = carve(p, 1);
		else
			p->loose = (node_t *) n->node.next;
		pthread_mutex_unlock(&p->lock);
		if (!n) {
			n = get_chain(p, 1);
			if (!n)
				return NULL;
			rest = (node_t *) n->node.next;
			if (rest)
				depot_push_chain(p, rest);
			pthread_mutex_unlock(&p->lock);
		}
		if (c->nr_allocs)
			urcu_percpu_counter_inc(c->nr_allocs);
		return n;
	}
	n = get_chain(p, p->batch);
	if (!n)
		return NULL;
	rest = (node_t *) n->node.next;
	if (rest && install(p, rest) < 0)
		depot_push_batch(p, rest);
	pthread_mutex_unlock(&p->lock);
	urcu_percpu_counter_inc(p->nr_refills);
	if (c->nr_allocs)
		urcu_percpu_counter_inc(c->nr_allocs);
	return n;
}

/* Pop one node of the caller's list; NULL when empty, busy or no rseq. */
static node_t *pop_local(struct urcu_percpu_cache *c)
{
	for (;;) {
		int idx = urcu_rseq_index(c->mode), ret;
		intptr_t load;

		if (idx < 0)
			return NULL;
		ret = urcu_rseq_cmpnev_storeoffp_load(c->mode,
			(intptr_t *) urcu_percpu_ptr(c->fl->heads, idx), 0,
			(long) offsetof(struct urcu_percpu_freelist_node, next),
			&load, idx);
		if (ret == URCU_RSEQ_COMMITTED)
			return load == BUSY ? NULL : (node_t *) load;
		if (ret == URCU_RSEQ_CMPFAIL)
			return NULL;
	}
}

void urcu_percpu_cache_free_slow(struct urcu_percpu_cache *c, void *obj)
{
	struct cache_priv *p = priv_of(c);
	node_t *chain = (node_t *) obj, *n;
	size_t len = 1, i;

	chain->node.next = NULL;
	if (c->mode != URCU_PERCPU_CACHE_LOCKED
			&& urcu_rseq_index(c->mode) >= 0) {
		/*
		 * Full list: the freed object and a batch of the list leave,
		 * popped under the lock so that a fork never sees them gone
		 * from the list and not yet in the depot.
		 */
		pthread_mutex_lock(&p->lock);
		while (len < p->batch && (n = pop_local(c)) != NULL) {
			n->node.next = link_of(chain);
			chain = n;
			len++;
		}
		for (n = chain, i = len; n; n = (node_t *) n->node.next, i--)
			n->depth = i;
		if (len >= p->batch)
			depot_push_batch(p, chain);
		else
			depot_push_chain(p, chain);
		pthread_mutex_unlock(&p->lock);
		urcu_percpu_counter_inc(p->nr_spills);
	} else {
		pthread_mutex_lock(&p->lock);
		depot_push_one(p, chain);
		pthread_mutex_unlock(&p->lock);
	}
	if (c->nr_frees)
		urcu_percpu_counter_inc(c->nr_frees);
}

/*
 * Give fully free slabs back; the free objects of the others go back to the
 * depot. Called with p->lock held, @all being every free object the caller
 * could find (CPU lists, depot).
 */
static void release_free_slabs(struct cache_priv *p, node_t *all)
{
	node_t *n, *next, *keep = NULL;
	size_t i;

	for (i = 0; i < p->nr_slabs; i++)
		p->slabs[i].free_count = 0;
	for (n = all; n; n = (node_t *) n->node.next) {
		struct slab *s = slab_of(p, n);

		urcu_rseq_debug_check(s != NULL, "percpu_cache",
				"drain found an object of no slab");
		if (s)
			s->free_count++;
	}
	/*
	 * Unlink first: the links live in the objects, and a released slab's
	 * pages read back as zero.
	 */
	for (n = all; n; n = next) {
		struct slab *s = slab_of(p, n);

		next = (node_t *) n->node.next;
		if (s && s->free_count != s->carved) {
			n->node.next = link_of(keep);
			keep = n;
		}
	}
	for (i = 0; i < p->nr_slabs; i++) {
		struct slab *s = &p->slabs[i];

		urcu_rseq_debug_check(s->free_count <= s->carved, "percpu_cache",
				"an object is free twice");
		if (!s->carved || s->free_count != s->carved)
			continue;
		/*
		 * Not munmap: a free() may still read a depth from this memory
		 * (cache.h); MADV_DONTNEED keeps the mapping and drops the pages.
		 */
		madvise(s->base, p->slab_bytes, MADV_DONTNEED);
		urcu_percpu_counter_add(p->resident, -(intptr_t) s->touched);
		p->nr_objects -= s->carved;
		s->carved = 0;
		s->touched = 0;
	}
	depot_push_chain(p, keep);
}

int urcu_percpu_cache_drain(struct urcu_percpu_cache *c)
{
	struct urcu_percpu_freelist *fl;
	struct cache_priv *p;
	node_t *all = NULL, *chain, *last;
	int i;

	if (!c) {
		errno = EINVAL;
		return -1;
	}
	p = priv_of(c);
	fl = c->fl;
	pthread_mutex_lock(&p->drain_lock);
	for (i = URCU_PERCPU_FREELIST_SHARED; i < fl->nr_index; i++) {
		chain = (node_t *) urcu_percpu_freelist_pop_all_cpu(fl, i);
		if (!chain)
			continue;
		for (last = chain; last->node.next;
				last = (node_t *) last->node.next)
			;
		last->node.next = link_of(all);
		all = chain;
	}
	pthread_mutex_lock(&p->lock);
	while ((chain = depot_pop_chain(p)) != NULL) {
		for (last = chain; last->node.next;
				last = (node_t *) last->node.next)
			;
		last->node.next = link_of(all);
		all = chain;
	}
	release_free_slabs(p, all);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&p->drain_lock);
	return 0;
}

int urcu_percpu_cache_stats(struct urcu_percpu_cache *c,
		struct urcu_percpu_cache_stats *st)
{
	struct cache_priv *p;

	if (!c || !st) {
		errno = EINVAL;
		return -1;
	}
	p = priv_of(c);
	st->allocs = c->nr_allocs
		? (uint64_t) urcu_percpu_counter_read(c->nr_allocs) : 0;
	st->frees = c->nr_frees
		? (uint64_t) urcu_percpu_counter_read(c->nr_frees) : 0;
	st->refills = (uint64_t) urcu_percpu_counter_read(p->nr_refills);
	st->spills = (uint64_t) urcu_percpu_counter_read(p->nr_spills);
	st->resident_bytes = (uint64_t) urcu_percpu_counter_read(p->resident);
	st->mapped_bytes = (uint64_t) urcu_percpu_counter_read(p->mapped);
	pthread_mutex_lock(&p->lock);
	st->objects = p->nr_objects;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

int urcu_percpu_cache_destroy(struct urcu_percpu_cache *c)
{
	struct cache_priv *p;
	size_t i;

	if (!c) {
		errno = EINVAL;
		return -1;
	}
	p = priv_of(c);
	urcu_percpu_cache_drain(c);
	if (p->nr_objects) {
		urcu_rseq_debug_check(0, "percpu_cache",
				"destroy with objects still allocated");
		errno = EBUSY;
		return -1;
	}
	pthread_mutex_lock(&caches_lock);
	cds_list_del(&p->registry_node);
	pthread_mutex_unlock(&caches_lock);
	for (i = 0; i < p->nr_slabs; i++)
		munmap(p->slabs[i].base, p->slab_bytes);
	free(p->slabs);
	urcu_percpu_freelist_destroy(c->fl);
	urcu_percpu_counter_destroy(c->nr_allocs);
	urcu_percpu_counter_destroy(c->nr_frees);
	urcu_percpu_counter_destroy(p->nr_refills);
	urcu_percpu_counter_destroy(p->nr_spills);
	urcu_percpu_counter_destroy(p->resident);
	urcu_percpu_counter_destroy(p->mapped);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->drain_lock);
	free(p);
	return 0;
}

/*
 * fork(): see percpu-fork.h. The cache is the outermost of the per-CPU
 * primitives: drain holds drain_lock while it takes the lock and its free
 * list's locks, and the lock is held while the CPU lists are taken back at
 * max_objects. prepare takes caches_lock, then each cache's drain_lock and
 * lock, so that no drain, refill, spill or depot update is half done at
 * the fork; the free list's hook then takes the list's locks.
 *
 * What the child loses: objects other threads held (allocated, or inside
 * an alloc or free fast path whose section had not committed) stay
 * allocated there and are never freed, so urcu_percpu_cache_destroy() of
 * their cache fails with EBUSY in the child. Every object that was free
 * (on a CPU list or in the depot) is free in the child.
 */
void urcu_rseq_cache_fork_prepare(void)
{
	struct cache_priv *p;

	pthread_mutex_lock(&caches_lock);
	cds_list_for_each_entry(p, &caches, registry_node) {
		pthread_mutex_lock(&p->drain_lock);
		pthread_mutex_lock(&p->lock);
	}
}

void urcu_rseq_cache_fork_parent(void)
{
	struct cache_priv *p;

	cds_list_for_each_entry(p, &caches, registry_node) {
		pthread_mutex_unlock(&p->lock);
		pthread_mutex_unlock(&p->drain_lock);
	}
	pthread_mutex_unlock(&caches_lock);
}

void urcu_rseq_cache_fork_child(void)
{
	struct cache_priv *p;

	/* The forking thread holds them all: start them afresh. */
	cds_list_for_each_entry(p, &caches, registry_node) {
		pthread_mutex_init(&p->lock, NULL);
		pthread_mutex_init(&p->drain_lock, NULL);
	}
	pthread_mutex_init(&caches_lock, NULL);
}
