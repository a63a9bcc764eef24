// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fork, lifecycle and thread-exit tortures of the per-CPU pool, free list
 * and object cache (doc/percpu-pool.md, percpu-freelist.md,
 * percpu-cache.md state the guarantees checked here). Each phase runs
 * URCU_RSEQ_STRESS_MS (300 ms by default under make check).
 *
 * - fork: workers allocate and free on a pool (pool lock held), push, pop
 *   and take whole lists of a free list in rseq and in locked mode (remote,
 *   shared and index locks held), allocate and free on a cache with small
 *   CPU lists so that refill, spill and drain run (cache lock, drain lock
 *   held), while the main thread forks. The child allocates, frees,
 *   drains and destroys everything, creates new ones, and must finish: a
 *   child that has not ended after URCU_RSEQ_FORK_WATCHDOG_MS (default
 *   60 s) counts as hung. In the child every free object of the parent's
 *   cache is found exactly once, and no more are missing than the other
 *   threads held (each worker records what it holds); once the child has
 *   freed the workers' recorded objects, all are found but the one each
 *   worker may have had in its hands unrecorded, and destroy succeeds
 *   exactly when none is missing.
 * - lifecycle: short-lived pools, free lists and caches, each shared by
 *   two threads and destroyed by whichever drops the last reference; the
 *   free list's nodes live in the shared box, which goes to the quarantine
 *   so that a late write of the library into a node is counted. Every
 *   destroy must succeed and every node be found exactly once at the end.
 * - exit: short-lived threads allocate from a cache (CPU and mm_cid
 *   indexed), a pool and free lists, free some and exit holding the rest,
 *   which the next wave of threads frees. At the end every object is
 *   accounted for exactly: node counts, and destroy returning 0.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/pool.h>
#include <urcu/percpu/freelist.h>
#include <urcu/percpu/cache.h>
#include "tap.h"
#include "stress.h"
#include "lifecycle.h"

struct fnode {
	struct urcu_percpu_freelist_node node;
	unsigned int seen;		/* generation of the last count */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Take every list of @fl (each index, then the shared one) and count the
 * nodes, marking them with @gen; a node met twice counts in *dups.
 */
static unsigned long take_all(struct urcu_percpu_freelist *fl,
		struct urcu_percpu_freelist_node **out, unsigned int gen,
		unsigned long *dups)
{
	struct urcu_percpu_freelist_node *chain, *n, *next;
	unsigned long count = 0;
	int i, nr = fl->nr_index;

	for (i = URCU_PERCPU_FREELIST_SHARED; i < nr; i++) {
		chain = urcu_percpu_freelist_pop_all_cpu(fl, i);
		for (n = chain; n; n = next) {
			struct fnode *f = caa_container_of(n, struct fnode, node);

			next = n->next;
			if (f->seen == gen)
				(*dups)++;
			f->seen = gen;
			count++;
			if (out) {
				n->next = *out;
				*out = n;
			}
		}
	}
	return count;
}

/* ---- fork ---------------------------------------------------------------- */

#define FK_WORKERS	6	/* pool, fl, fl locked, cache, cache locked, fl */
#define FK_HOLD		48	/* objects one worker holds at most */
#define FK_NODES	256
#define FK_CACHE_MAX	1024

enum role { R_POOL, R_FL, R_FL_LOCKED, R_CACHE, R_CACHE_LOCKED, R_FL_REMOTE,
	NR_ROLES };

static struct {
	struct urcu_percpu_pool *pool;
	struct urcu_percpu_freelist *fl[2];		/* rseq, locked */
	struct urcu_percpu_cache *cache[2];		/* rseq, locked */
	struct fnode nodes[2][FK_NODES];
	/* What each worker holds; read by the fork child. */
	void *held[FK_WORKERS][FK_HOLD];
	unsigned long ops[FK_WORKERS];
	unsigned long forks, fork_ok, fork_failed, fork_hung, fork_error;
} fk;

static unsigned long watchdog_ms(void)
{
	const char *s = getenv("URCU_RSEQ_FORK_WATCHDOG_MS");
	long v = s ? atol(s) : 0;

	return v > 0 ? (unsigned long) v : 60000;
}

static bool is_zero(const void *p, size_t len)
{
	const unsigned char *b = (const unsigned char *) p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

static void pool_work(struct stress_thread *t, void **held)
{
	size_t len = urcu_percpu_pool_item_size(fk.pool);
	unsigned int i = stress_rand_below(t, FK_HOLD);
	struct urcu_percpu_pool *tmp;
	void *p;

	if (stress_rand_below(t, 64) == 0) {
		/* create/destroy of a pool of its own takes the lock too */
		tmp = urcu_percpu_pool_create(32, NULL);
		if (!tmp)
			return;
		p = urcu_percpu_zmalloc(tmp);
		urcu_percpu_free(p);
		if (urcu_percpu_pool_destroy(tmp))
			diag("fork: destroy of an empty pool failed");
		return;
	}
	if (held[i]) {
		p = held[i];
		CMM_STORE_SHARED(held[i], NULL);
		urcu_percpu_free(p);
		return;
	}
	p = urcu_percpu_zmalloc(fk.pool);
	if (!p)
		return;
	if (!is_zero(p, len))
		diag("fork: zmalloc returned a non-zero item");
	memset(p, 0x5a, len);
	CMM_STORE_SHARED(held[i], p);
}

static void fl_work(struct stress_thread *t, struct urcu_percpu_freelist *fl,
		void **held, bool remote)
{
	struct urcu_percpu_freelist_node *chain, *n;
	unsigned int i = stress_rand_below(t, FK_HOLD);
	int idx;

	if (remote && stress_rand_below(t, 4) == 0) {
		/* Take a whole list and give it back, part of it the slow way. */
		idx = (int) stress_rand_below(t, (uint32_t) fl->nr_index + 1) - 1;
		chain = urcu_percpu_freelist_pop_all_cpu(fl, idx);
		while (chain) {
			n = chain;
			chain = n->next;
			if (stress_rand_below(t, 2))
				urcu_percpu_freelist_push_slow(fl, n);
			else
				urcu_percpu_freelist_push(fl, n);
		}
		return;
	}
	if (held[i]) {
		n = (struct urcu_percpu_freelist_node *) held[i];
		CMM_STORE_SHARED(held[i], NULL);
		urcu_percpu_freelist_push(fl, n);
		return;
	}
	n = urcu_percpu_freelist_pop(fl);
	if (n)
		CMM_STORE_SHARED(held[i], n);
}

static void cache_work(struct stress_thread *t, struct urcu_percpu_cache *c,
		void **held)
{
	unsigned int i, burst;
	void *p;

	if (stress_rand_below(t, 128) == 0) {
		urcu_percpu_cache_drain(c);
		return;
	}
	/* Bursts empty and overfill the small CPU lists: refill and spill. */
	burst = stress_rand_below(t, 2) ? FK_HOLD : 1;
	for (i = 0; i < burst; i++) {
		unsigned int k = stress_rand_below(t, FK_HOLD);

		if (held[k]) {
			p = held[k];
			CMM_STORE_SHARED(held[k], NULL);
			urcu_percpu_cache_free(c, p);
		} else {
			p = urcu_percpu_cache_alloc(c);
			if (p)
				CMM_STORE_SHARED(held[k], p);
		}
	}
}

static void fork_worker(struct stress_thread *t)
{
	void **held = fk.held[t->id];
	enum role r = (enum role) (t->id % NR_ROLES);
	unsigned int i;

	while (!stress_should_stop(t)) {
		switch (r) {
		case R_POOL:
			pool_work(t, held);
			break;
		case R_FL:
			fl_work(t, fk.fl[0], held, false);
			break;
		case R_FL_REMOTE:
			fl_work(t, fk.fl[0], held, true);
			break;
		case R_FL_LOCKED:
			fl_work(t, fk.fl[1], held, true);
			break;
		case R_CACHE:
			cache_work(t, fk.cache[0], held);
			break;
		case R_CACHE_LOCKED:
			cache_work(t, fk.cache[1], held);
			break;
		default:
			break;
		}
		fk.ops[t->id]++;
	}
	/* Give everything back, so that the parent can count exactly. */
	for (i = 0; i < FK_HOLD; i++) {
		if (!held[i])
			continue;
		if (r == R_POOL)
			urcu_percpu_free(held[i]);
		else if (r == R_FL || r == R_FL_REMOTE)
			urcu_percpu_freelist_push(fk.fl[0], held[i]);
		else if (r == R_FL_LOCKED)
			urcu_percpu_freelist_push(fk.fl[1], held[i]);
		else
			urcu_percpu_cache_free(fk.cache[r == R_CACHE_LOCKED],
					held[i]);
		held[i] = NULL;
	}
}

/* Objects the workers of role @r recorded as held at the fork. */
static unsigned long recorded(enum role r)
{
	unsigned long n = 0;
	unsigned int w, i;

	for (w = r; w < FK_WORKERS; w += NR_ROLES)
		for (i = 0; i < FK_HOLD; i++)
			n += fk.held[w][i] != NULL;
	return n;
}

static unsigned long workers_of(enum role r)
{
	return (FK_WORKERS - (unsigned int) r + NR_ROLES - 1) / NR_ROLES;
}

/*
 * Allocate from @c until ENOMEM into @got (at most FK_CACHE_MAX + 1),
 * marking each object; returns the count, or -1 if one came twice.
 */
static long alloc_all(struct urcu_percpu_cache *c, void **got)
{
	size_t sz = urcu_percpu_cache_obj_size(c);
	unsigned char *o;
	long found = 0;

	while (found <= FK_CACHE_MAX && (o = urcu_percpu_cache_alloc(c))) {
		/* The last byte is not the free list's: mark it. */
		if (o[sz - 1] == 0xc3)
			return -1;
		o[sz - 1] = 0xc3;
		got[found++] = o;
	}
	return found;
}

static void free_all(struct urcu_percpu_cache *c, void **got, long n)
{
	size_t sz = urcu_percpu_cache_obj_size(c);

	while (n > 0) {
		unsigned char *o = (unsigned char *) got[--n];

		o[sz - 1] = 0;
		urcu_percpu_cache_free(c, o);
	}
}

/*
 * The child's cache check. Every object free in the parent is free here:
 * allocating until ENOMEM finds each once, and those plus what the workers
 * recorded as held (each may have had one more in its hands, not recorded
 * yet) make up max_objects. The child then frees the workers' objects,
 * which it knows from their records: allocating until ENOMEM again must
 * find all but the unrecorded ones. destroy must succeed exactly when
 * nothing is missing (a debug build aborts on the EBUSY case: skipped).
 */
static int child_cache(struct urcu_percpu_cache *c, enum role r)
{
	unsigned long held = recorded(r);
	unsigned int w, i;
	long found;
	void **got;
	int ret;

	got = calloc(FK_CACHE_MAX + 1, sizeof(*got));
	if (!got)
		return 10;
	found = alloc_all(c, got);
	if (found < 0 || found > FK_CACHE_MAX) {
		dprintf(2, "# fork child: cache %d: an object handed out "
			"twice or too many (%ld)\n", (int) r, found);
		return 11;
	}
	if ((unsigned long) found + held + workers_of(r) < FK_CACHE_MAX) {
		dprintf(2, "# fork child: cache %d: %ld free + %lu held < %d: "
			"objects lost\n", (int) r, found, held, FK_CACHE_MAX);
		return 12;
	}
	free_all(c, got, found);
	for (w = r; w < FK_WORKERS; w += NR_ROLES)
		for (i = 0; i < FK_HOLD; i++)
			urcu_percpu_cache_free(c, fk.held[w][i]);
	if (urcu_percpu_cache_drain(c))
		return 13;
	found = alloc_all(c, got);
	if (found < 0 || found > FK_CACHE_MAX
			|| (unsigned long) found + workers_of(r) < FK_CACHE_MAX) {
		dprintf(2, "# fork child: cache %d: %ld of %d objects after "
			"the workers' were freed\n", (int) r, found,
			FK_CACHE_MAX);
		return 14;
	}
	free_all(c, got, found);
	free(got);
#ifdef URCU_RSEQ_DEBUG
	if (found < FK_CACHE_MAX)
		return 0;
#endif
	ret = urcu_percpu_cache_destroy(c);
	if (found == FK_CACHE_MAX ? ret != 0 : (ret == 0 || errno != EBUSY))
		return 15;
	return 0;
}

static int child_freelist(struct urcu_percpu_freelist *fl, unsigned int gen)
{
	struct urcu_percpu_freelist_node *all = NULL, *n;
	unsigned long count, again, dups = 0;
	int i;

	count = take_all(fl, &all, gen, &dups);
	if (dups || count > FK_NODES) {
		dprintf(2, "# fork child: free list: %lu nodes twice, %lu "
			"found\n", dups, count);
		return 20;
	}
	/* No list may be left "being taken". */
	for (i = 0; i < fl->nr_index; i++)
		if (uatomic_read((intptr_t *) urcu_percpu_ptr(fl->heads, i)))
			return 21;
	while (all) {
		n = all;
		all = n->next;
		urcu_percpu_freelist_push(fl, n);
	}
	/* Pop them all one by one, then back through the slow path. */
	while ((n = urcu_percpu_freelist_pop(fl)) != NULL) {
		n->next = all;
		all = n;
	}
	while (all) {
		n = all;
		all = n->next;
		urcu_percpu_freelist_push_slow(fl, n);
	}
	again = take_all(fl, NULL, gen + 1, &dups);
	if (again != count || dups)
		return 22;
	urcu_percpu_freelist_destroy(fl);
	return 0;
}

/* What a new pool, free list and cache of the child must do. */
static int child_fresh(void)
{
	struct urcu_percpu_pool *pool = urcu_percpu_pool_create(16, NULL);
	struct urcu_percpu_freelist *fl = urcu_percpu_freelist_create(0);
	struct urcu_percpu_cache *c = urcu_percpu_cache_create(64, NULL);
	struct fnode f;
	void *p, *o;

	if (!pool || !fl || !c)
		return 30;
	p = urcu_percpu_zmalloc(pool);
	if (!p || !is_zero(p, 16))
		return 31;
	urcu_percpu_free(p);
	if (urcu_percpu_pool_destroy(pool))
		return 32;
	urcu_percpu_freelist_push(fl, &f.node);
	if (urcu_percpu_freelist_pop(fl) != &f.node)
		return 33;
	urcu_percpu_freelist_destroy(fl);
	o = urcu_percpu_cache_alloc(c);
	if (!o)
		return 34;
	urcu_percpu_cache_free(c, o);
	if (urcu_percpu_cache_drain(c) || urcu_percpu_cache_destroy(c))
		return 35;
	return 0;
}

static int fork_child(void *arg)
{
	size_t len = urcu_percpu_pool_item_size(fk.pool);
	unsigned int gen = (unsigned int) (uintptr_t) arg, i;
	void *p;
	int step;

	/* The parent's pool: new items are zero, the workers' stay theirs. */
	p = urcu_percpu_zmalloc(fk.pool);
	if (!p || !is_zero(p, len))
		return 1;
	urcu_percpu_free(p);
	/* The worker's items, known from its record, are freed here. */
	for (i = 0; i < FK_HOLD; i++) {
		errno = 0;
		urcu_percpu_free(fk.held[R_POOL][i]);
		if (errno)
			return 2;
	}
	/* EBUSY: the worker had one more in its hands, not recorded. */
	if (urcu_percpu_pool_destroy(fk.pool) && errno != EBUSY)
		return 3;
	step = child_freelist(fk.fl[0], gen);
	if (!step)
		step = child_freelist(fk.fl[1], gen);
	if (!step)
		step = child_cache(fk.cache[0], R_CACHE);
	if (!step)
		step = child_cache(fk.cache[1], R_CACHE_LOCKED);
	if (!step)
		step = child_fresh();
	if (step)
		dprintf(2, "# fork child: step %d failed\n", step);
	return step;
}

static void fork_torture(void)
{
	struct urcu_percpu_cache_attr attr = {
		.cpu_max = 8, .batch = 4, .max_objects = FK_CACHE_MAX,
	};
	unsigned long dups = 0, count, wd = watchdog_ms(), ops = 0;
	struct stress_report rep;
	struct stress_group *g;
	enum stress_fork_result res;
	unsigned int i, k, gen = 1;
	int64_t end;

	memset(&fk, 0, sizeof(fk));
	fk.pool = urcu_percpu_pool_create(24, NULL);
	for (k = 0; k < 2; k++) {
		fk.fl[k] = urcu_percpu_freelist_create(0);
		fk.cache[k] = urcu_percpu_cache_create(48, &attr);
		if (!fk.fl[k] || !fk.cache[k] || !fk.pool)
			bail_out("fork: create failed");
	}
	fk.fl[1]->mode = URCU_PERCPU_FREELIST_LOCKED;
	fk.cache[1]->mode = URCU_PERCPU_CACHE_LOCKED;
	for (k = 0; k < 2; k++)
		for (i = 0; i < FK_NODES; i++)
			urcu_percpu_freelist_push(fk.fl[k], &fk.nodes[k][i].node);

	g = stress_start(fork_worker, NULL, FK_WORKERS,
			STRESS_MIGRATIONS | STRESS_QUIET);
	end = now_ms() + (int64_t) stress_duration_ms();
	do {
		gen += 2;
		res = stress_fork_check(fork_child, (void *) (uintptr_t) gen, wd);
		fk.forks++;
		if (res == STRESS_FORK_OK)
			fk.fork_ok++;
		else if (res == STRESS_FORK_FAILED)
			fk.fork_failed++;
		else if (res == STRESS_FORK_HUNG)
			fk.fork_hung++;
		else
			fk.fork_error++;
	} while (now_ms() < end);
	stress_stop(g, &rep);
	for (i = 0; i < FK_WORKERS; i++)
		ops += fk.ops[i];
	diag("fork: %lu forks (%lu ok, %lu failed, %lu hung, %lu errors), "
		"%lu operations of %d workers, %lu migrations", fk.forks,
		fk.fork_ok, fk.fork_failed, fk.fork_hung, fk.fork_error, ops,
		FK_WORKERS, rep.migrations);
	ok(fk.forks > 0 && fk.fork_ok == fk.forks,
		"fork: every child used the pool, free lists and caches and "
		"finished (%lu/%lu)", fk.fork_ok, fk.forks);
	for (k = 0; k < 2; k++) {
		gen += 2;
		dups = 0;
		count = take_all(fk.fl[k], NULL, gen, &dups);
		ok(count == FK_NODES && !dups,
			"fork: parent's free list %u holds every node once "
			"(%lu of %d)", k, count, FK_NODES);
		urcu_percpu_freelist_destroy(fk.fl[k]);
		ok(urcu_percpu_cache_destroy(fk.cache[k]) == 0,
			"fork: parent's cache %u destroyed: every object back",
			k);
	}
	ok(urcu_percpu_pool_destroy(fk.pool) == 0,
		"fork: parent's pool destroyed: every item back");
}

/* ---- lifecycle ----------------------------------------------------------- */

#define LC_WORKERS	4
#define LC_NODES	64
#define LC_INBOX_MAX	8

enum kind { K_POOL, K_FL, K_FL_LOCKED, K_CACHE, K_CACHE_LOCKED, K_CACHE_CID,
	NR_KINDS };

struct box {
	struct box *next;		/* in an inbox */
	unsigned long refs;
	enum kind kind;
	struct urcu_percpu_pool *pool;
	struct urcu_percpu_freelist *fl;
	struct urcu_percpu_cache *c;
	struct fnode nodes[LC_NODES];
};

static struct {
	pthread_mutex_t lock[LC_WORKERS];
	struct box *inbox[LC_WORKERS];
	unsigned int inbox_len[LC_WORKERS];
	unsigned long created, destroyed, bad_destroy, lost_nodes, ops;
} lc;

static void send_box(unsigned int to, struct box *b)
{
	pthread_mutex_lock(&lc.lock[to]);
	b->next = lc.inbox[to];
	lc.inbox[to] = b;
	/* Read without the lock by senders choosing an inbox. */
	CMM_STORE_SHARED(lc.inbox_len[to], lc.inbox_len[to] + 1);
	pthread_mutex_unlock(&lc.lock[to]);
}

static struct box *take_box(unsigned int me)
{
	struct box *b;

	pthread_mutex_lock(&lc.lock[me]);
	b = lc.inbox[me];
	if (b) {
		lc.inbox[me] = b->next;
		CMM_STORE_SHARED(lc.inbox_len[me], lc.inbox_len[me] - 1);
	}
	pthread_mutex_unlock(&lc.lock[me]);
	return b;
}

static struct box *new_box(enum kind k)
{
	struct urcu_percpu_cache_attr attr = {
		.flags = k == K_CACHE_CID ? URCU_PERCPU_MM_CID : 0,
		.cpu_max = 4, .batch = 2,
	};
	struct box *b = calloc(1, sizeof(*b));
	unsigned int i;

	if (!b)
		bail_out("lifecycle: out of memory");
	b->kind = k;
	b->refs = 2;
	switch (k) {
	case K_POOL:
		b->pool = urcu_percpu_pool_create(8, NULL);
		if (!b->pool)
			bail_out("lifecycle: pool_create failed");
		break;
	case K_FL:
	case K_FL_LOCKED:
		b->fl = urcu_percpu_freelist_create(0);
		if (!b->fl)
			bail_out("lifecycle: freelist_create failed");
		if (k == K_FL_LOCKED)
			b->fl->mode = URCU_PERCPU_FREELIST_LOCKED;
		for (i = 0; i < LC_NODES; i++)
			urcu_percpu_freelist_push(b->fl, &b->nodes[i].node);
		break;
	default:
		b->c = urcu_percpu_cache_create(40, &attr);
		if (!b->c)
			bail_out("lifecycle: cache_create failed");
		if (k == K_CACHE_LOCKED)
			b->c->mode = URCU_PERCPU_CACHE_LOCKED;
		break;
	}
	uatomic_inc(&lc.created);
	return b;
}

/* The last user: everything must be back, then destroy and free. */
static void last_put(struct box *b)
{
	unsigned long dups = 0, count;

	switch (b->kind) {
	case K_POOL:
		if (urcu_percpu_pool_destroy(b->pool))
			uatomic_inc(&lc.bad_destroy);
		break;
	case K_FL:
	case K_FL_LOCKED:
		count = take_all(b->fl, NULL, 1, &dups);
		if (count != LC_NODES || dups)
			uatomic_add(&lc.lost_nodes, LC_NODES - count + dups);
		urcu_percpu_freelist_destroy(b->fl);
		break;
	default:
		if (urcu_percpu_cache_destroy(b->c))
			uatomic_inc(&lc.bad_destroy);
		break;
	}
	uatomic_inc(&lc.destroyed);
	/* Poisoned: a late write into a node or the count is seen. */
	stress_quarantine(b, sizeof(*b), NULL);
}

static void put_box(struct box *b)
{
	if (uatomic_sub_return(&b->refs, 1) == 0)
		last_put(b);
}

/* A few operations that leave nothing held, as a user does before put. */
static void use_box(struct box *b, uint64_t *rng)
{
	void *held[8];
	unsigned int i, n = 1 + (unsigned int) (stress_xorshift(rng) % 8);
	struct urcu_percpu_freelist_node *chain, *next;
	int idx;

	switch (b->kind) {
	case K_POOL:
		for (i = 0; i < n; i++)
			held[i] = urcu_percpu_zmalloc(b->pool);
		for (i = 0; i < n; i++) {
			if (held[i])
				memset(held[i], 0x77, 8);
			urcu_percpu_free(held[i]);
		}
		break;
	case K_FL:
	case K_FL_LOCKED:
		for (i = 0; i < n; i++)
			held[i] = urcu_percpu_freelist_pop(b->fl);
		for (i = 0; i < n; i++)
			if (held[i])
				urcu_percpu_freelist_push(b->fl, held[i]);
		idx = (int) (stress_xorshift(rng)
				% (uint64_t) (b->fl->nr_index + 1)) - 1;
		chain = urcu_percpu_freelist_pop_all_cpu(b->fl, idx);
		for (; chain; chain = next) {
			next = chain->next;
			urcu_percpu_freelist_push_slow(b->fl, chain);
		}
		break;
	default:
		for (i = 0; i < n; i++)
			held[i] = urcu_percpu_cache_alloc(b->c);
		for (i = 0; i < n; i++)
			urcu_percpu_cache_free(b->c, held[i]);
		if (n == 8)
			urcu_percpu_cache_drain(b->c);
		break;
	}
	uatomic_inc(&lc.ops);
}

static void lifecycle_worker(struct stress_thread *t)
{
	struct box *b;

	while (!stress_should_stop(t)) {
		b = take_box(t->id);
		if (!b) {
			unsigned int to = (t->id + 1
				+ stress_rand_below(t, LC_WORKERS - 1))
				% LC_WORKERS;

			if (CMM_LOAD_SHARED(lc.inbox_len[to]) >= LC_INBOX_MAX)
				continue;
			b = new_box((enum kind) stress_rand_below(t, NR_KINDS));
			send_box(to, b);
		}
		use_box(b, &t->rng);
		put_box(b);
	}
}

static void lifecycle_torture(void)
{
	struct stress_report rep;
	unsigned long late, retired0 = stress_quarantined();
	uint64_t rng = stress_seed(7);
	unsigned int i;
	struct box *b;

	memset(&lc, 0, sizeof(lc));
	for (i = 0; i < LC_WORKERS; i++)
		pthread_mutex_init(&lc.lock[i], NULL);
	stress_run(lifecycle_worker, NULL, LC_WORKERS,
			STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, &rep);
	/* Boxes still in inboxes: their second user is this thread. */
	for (i = 0; i < LC_WORKERS; i++) {
		while ((b = take_box(i)) != NULL) {
			use_box(b, &rng);
			put_box(b);
		}
	}
	late = stress_quarantine_drain();
	diag("lifecycle: %lu objects created, %lu destroyed by their last "
		"user, %lu uses, %lu retired, %lu signals, %lu migrations",
		lc.created, lc.destroyed, lc.ops,
		stress_quarantined() - retired0, rep.signals, rep.migrations);
	ok(lc.created > 0 && lc.destroyed == lc.created,
		"lifecycle: every pool, free list and cache destroyed by its "
		"last user");
	ok(lc.bad_destroy == 0,
		"lifecycle: destroy by the last user succeeded (%lu failed)",
		lc.bad_destroy);
	ok(lc.lost_nodes == 0,
		"lifecycle: every free list node found exactly once at the end "
		"(%lu missing or twice)", lc.lost_nodes);
	ok(late == 0, "lifecycle: no write after destroy and free (%lu)",
		late);
}

/* ---- thread exit --------------------------------------------------------- */

#define EX_WAVE		4
#define EX_HOLD		6
#define EX_NODES	512

struct estate {
	void *cache[2][EX_HOLD];	/* CPU, mm_cid */
	void *pool[EX_HOLD];
	struct urcu_percpu_freelist_node *node[2][EX_HOLD];
	uint64_t rng;
};

static struct {
	struct urcu_percpu_cache *cache[2];
	struct urcu_percpu_pool *pool;
	struct urcu_percpu_freelist *fl[2];
	struct fnode nodes[2][EX_NODES];
	unsigned long exits;
} ex;

/*
 * Free what the previous owner left in @e, then allocate, free some, and
 * exit holding the rest.
 */
static void *exit_thread(void *arg)
{
	struct estate *e = (struct estate *) arg;
	unsigned int k, i;

	for (k = 0; k < 2; k++) {
		for (i = 0; i < EX_HOLD; i++) {
			urcu_percpu_cache_free(ex.cache[k], e->cache[k][i]);
			if (e->node[k][i])
				urcu_percpu_freelist_push(ex.fl[k],
						e->node[k][i]);
			e->cache[k][i] = urcu_percpu_cache_alloc(ex.cache[k]);
			e->node[k][i] = urcu_percpu_freelist_pop(ex.fl[k]);
		}
	}
	for (i = 0; i < EX_HOLD; i++) {
		urcu_percpu_free(e->pool[i]);
		e->pool[i] = urcu_percpu_zmalloc(ex.pool);
	}
	/* Free a random part; the rest leaves with the thread. */
	for (k = 0; k < 2; k++) {
		for (i = 0; i < EX_HOLD; i++) {
			if (stress_xorshift(&e->rng) & 1) {
				urcu_percpu_cache_free(ex.cache[k],
						e->cache[k][i]);
				e->cache[k][i] = NULL;
			}
			if (e->node[k][i] && (stress_xorshift(&e->rng) & 1)) {
				urcu_percpu_freelist_push(ex.fl[k],
						e->node[k][i]);
				e->node[k][i] = NULL;
			}
		}
	}
	return NULL;
}

static void exit_torture(void)
{
	struct urcu_percpu_cache_attr attr = { .cpu_max = 8, .batch = 4 };
	struct estate st[EX_WAVE];
	pthread_t th[EX_WAVE];
	unsigned long dups = 0, count;
	unsigned int i, k, n;
	int64_t end;

	memset(&ex, 0, sizeof(ex));
	memset(st, 0, sizeof(st));
	for (k = 0; k < 2; k++) {
		attr.flags = k ? URCU_PERCPU_MM_CID : 0;
		ex.cache[k] = urcu_percpu_cache_create(32, &attr);
		ex.fl[k] = urcu_percpu_freelist_create(attr.flags);
		if (!ex.cache[k] || !ex.fl[k])
			bail_out("exit: create failed");
		for (i = 0; i < EX_NODES; i++)
			urcu_percpu_freelist_push(ex.fl[k],
					&ex.nodes[k][i].node);
	}
	ex.pool = urcu_percpu_pool_create(16, NULL);
	if (!ex.pool)
		bail_out("exit: create failed");
	for (i = 0; i < EX_WAVE; i++)
		st[i].rng = stress_seed(i + 1);
	end = now_ms() + (int64_t) stress_duration_ms();
	do {
		for (n = 0; n < EX_WAVE; n++)
			if (pthread_create(&th[n], NULL, exit_thread, &st[n]))
				break;
		for (i = 0; i < n; i++)
			pthread_join(th[i], NULL);
		ex.exits += n;
	} while (now_ms() < end);
	/* The last owners' estates come back through this thread. */
	for (i = 0; i < EX_WAVE; i++) {
		for (k = 0; k < 2; k++) {
			for (n = 0; n < EX_HOLD; n++) {
				urcu_percpu_cache_free(ex.cache[k],
						st[i].cache[k][n]);
				if (st[i].node[k][n])
					urcu_percpu_freelist_push(ex.fl[k],
							st[i].node[k][n]);
			}
		}
		for (n = 0; n < EX_HOLD; n++)
			urcu_percpu_free(st[i].pool[n]);
	}
	diag("exit: %lu threads exited holding objects", ex.exits);
	for (k = 0; k < 2; k++) {
		dups = 0;
		count = take_all(ex.fl[k], NULL, 1, &dups);
		ok(count == EX_NODES && !dups,
			"exit: free list %s: every node found exactly once "
			"(%lu of %d)", k ? "mm_cid" : "cpu", count, EX_NODES);
		urcu_percpu_freelist_destroy(ex.fl[k]);
		ok(urcu_percpu_cache_destroy(ex.cache[k]) == 0,
			"exit: cache %s: destroy finds every object back",
			k ? "mm_cid" : "cpu");
	}
	ok(urcu_percpu_pool_destroy(ex.pool) == 0,
		"exit: pool: destroy finds every item back");
}

int main(void)
{
	plan_tests(15);
	fork_torture();
	lifecycle_torture();
	exit_torture();
	return exit_status();
}
