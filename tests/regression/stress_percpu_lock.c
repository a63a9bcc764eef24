// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU spinlock under oversubscription, the signal storm and forced
 * migrations: 64 local lockers, 4 threads taking random shards remotely
 * (lock_cpu and trylock_cpu), one thread taking every shard now and then.
 * Each shard guards a non-atomic counter and an "inside" word; a second
 * holder would see the word taken or lose an increment. Then a remote
 * locker's worst wait while local lockers saturate its shard.
 * Run with URCU_RSEQ_DISABLE=1 too (every thread on the CAS path).
 *
 * Then the fork, lifecycle and thread-exit tortures:
 * - fork: local lockers, remote lockers (whose requests are pending while
 *   a shard is held), trylockers and lock_all run while one thread forks,
 *   sometimes holding a shard itself. The child unlocks what the forking
 *   thread held, then uses every shard (trylock, lock_cpu, the local lock
 *   pinned on each CPU, which must take the fast path again), lock_all,
 *   destroy, and new locks; a shard held by a parent thread that does not
 *   exist in the child must stay held (trylock EBUSY), every other shard
 *   must be at rest. A hung child is killed by the parent's watchdog and
 *   counts as a failure.
 * - lifecycle: short-lived locks, each with a reference count kept under
 *   the lock itself; the thread that drops the last reference unlocks,
 *   destroys and frees it right away (the pattern where an unlock that
 *   touches the lock after its releasing store writes freed memory). The
 *   destroying thread takes the freed shard array back at once (malloc of
 *   its usable size gets the block just freed) and hands it, poisoned, to
 *   the quarantine, and the next locks reuse freed memory too: a late
 *   decrement shows as a changed quarantined block, as a shard whose
 *   @remote goes below its rest value, or as two holders; under ASan as a
 *   use after free.
 * - exit: short-lived threads take a shard (fast path or remote) and exit,
 *   some while still holding it; the joiner, to whom the holder handed the
 *   shard, unlocks it; counts must stay exact and every shard at rest.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/lock.h>

#include "tap.h"
#include "stress.h"
#include "lifecycle.h"

#define NR_LOCAL	64
#define NR_REMOTE	4
#define NR_THREADS	(NR_LOCAL + NR_REMOTE + 1)

struct guarded {
	unsigned long counter;		/* non-atomic read-modify-write */
	unsigned long inside;		/* holder id + 1, 0 when free */
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

struct test {
	struct urcu_percpu_lock *l;
	int nr;
	struct guarded *g;
	unsigned long *expected;	/* per shard, summed at worker exit */
	unsigned long overlaps;
	unsigned long bad_index;
	unsigned long local_ops, remote_ops, try_ok, try_busy, all_ops;
	int64_t worst_remote_ns;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void critical(struct test *t, int shard, unsigned long me)
{
	struct guarded *g = &t->g[shard];
	unsigned long v;
	int i;

	if (CMM_LOAD_SHARED(g->inside) != 0)
		uatomic_inc(&t->overlaps);
	CMM_STORE_SHARED(g->inside, me);
	v = CMM_LOAD_SHARED(g->counter);
	for (i = 0; i < 32; i++)
		caa_cpu_relax();
	CMM_STORE_SHARED(g->counter, v + 1);
	if (CMM_LOAD_SHARED(g->inside) != me)
		uatomic_inc(&t->overlaps);
	CMM_STORE_SHARED(g->inside, 0);
}

static void max_ns(int64_t *where, int64_t v)
{
	int64_t old = uatomic_read(where);

	while (v > old) {
		int64_t prev = uatomic_cmpxchg(where, old, v);

		if (prev == old)
			break;
		old = prev;
	}
}

static void worker(struct stress_thread *st)
{
	struct test *t = st->arg;
	unsigned long me = st->id + 1, ops = 0, tries = 0, busy = 0;
	unsigned long *mine = calloc((size_t) t->nr, sizeof(*mine));
	int64_t worst = 0;
	int i;

	if (!mine)
		bail_out("out of memory");
	/* Remote and lock_all threads finish one round however late they run. */
	while (!stress_should_stop(st) || (st->id >= NR_LOCAL && ops == 0)) {
		if (st->id < NR_LOCAL) {
			int idx = urcu_percpu_lock(t->l);

			if (idx < 0 || idx >= t->nr) {
				uatomic_inc(&t->bad_index);
				continue;
			}
			critical(t, idx, me);
			mine[idx]++;
			urcu_percpu_unlock(t->l, idx);
			ops++;
		} else if (st->id < NR_LOCAL + NR_REMOTE) {
			int cpu = (int) stress_rand_below(st, (uint32_t) t->nr);
			int64_t t0 = now_ns(), w;

			if (stress_rand_below(st, 4) == 0) {
				tries++;
				if (!urcu_percpu_trylock_cpu(t->l, cpu)) {
					busy++;
					continue;
				}
			} else {
				urcu_percpu_lock_cpu(t->l, cpu);
			}
			w = now_ns() - t0;
			if (w > worst)
				worst = w;
			critical(t, cpu, me);
			mine[cpu]++;
			urcu_percpu_unlock(t->l, cpu);
			ops++;
		} else {
			struct timespec ts = { 0, 1000000 };

			urcu_percpu_lock_all(t->l);
			for (i = 0; i < t->nr; i++) {
				critical(t, i, me);
				mine[i]++;
			}
			urcu_percpu_unlock_all(t->l);
			ops++;
			nanosleep(&ts, NULL);
		}
	}
	for (i = 0; i < t->nr; i++)
		uatomic_add(&t->expected[i], mine[i]);
	if (st->id < NR_LOCAL) {
		uatomic_add(&t->local_ops, ops);
	} else if (st->id < NR_LOCAL + NR_REMOTE) {
		uatomic_add(&t->remote_ops, ops);
		uatomic_add(&t->try_ok, tries - busy);
		uatomic_add(&t->try_busy, busy);
		max_ns(&t->worst_remote_ns, worst);
	} else {
		uatomic_add(&t->all_ops, ops);
	}
	free(mine);
}

static struct test *test_new(unsigned int flags)
{
	struct test *t = calloc(1, sizeof(*t));

	if (!t)
		bail_out("out of memory");
	t->l = urcu_percpu_lock_create(flags);
	if (!t->l)
		bail_out("urcu_percpu_lock_create: %d", errno);
	t->nr = urcu_percpu_lock_nr_shards(t->l);
	if (posix_memalign((void **) &t->g, CAA_CACHE_LINE_SIZE,
			(size_t) t->nr * sizeof(*t->g)))
		bail_out("out of memory");
	for (int i = 0; i < t->nr; i++)
		t->g[i].counter = t->g[i].inside = 0;
	t->expected = calloc((size_t) t->nr, sizeof(*t->expected));
	if (!t->expected)
		bail_out("out of memory");
	return t;
}

static void test_free(struct test *t)
{
	urcu_percpu_lock_destroy(t->l);
	free(t->g);
	free(t->expected);
	free(t);
}

static void mixed(unsigned int flags, const char *name)
{
	struct test *t = test_new(flags);
	unsigned long wrong = 0, left = 0;
	int i;

	stress_run(worker, t, NR_THREADS, STRESS_SIGNALS | STRESS_MIGRATIONS,
			NULL);
	for (i = 0; i < t->nr; i++)
		if (t->g[i].counter != t->expected[i])
			wrong++;
	/* Everybody is gone: every word must be back to its rest state. */
	for (i = 0; i < t->nr; i++)
		if (t->l->shards[i].lock != 0 || t->l->shards[i].remote
				!= (t->l->fast ? 0 : 1))	/* rest state */
			left++;
	ok(left == 0, "%s: every shard free, no remote request left (%lu)",
		name, left);
	ok(t->overlaps == 0, "%s: no two holders seen (%lu overlaps)", name,
		t->overlaps);
	ok(wrong == 0 && t->bad_index == 0,
		"%s: every shard counter exact (%lu wrong, %lu bad indexes)",
		name, wrong, t->bad_index);
	ok(t->local_ops > 0 && t->remote_ops > 0 && t->all_ops > 0,
		"%s: all roles progressed: local %lu, remote %lu, all %lu",
		name, t->local_ops, t->remote_ops, t->all_ops);
	diag("%s: trylock %lu taken, %lu busy; worst remote wait %.3f ms",
		name, t->try_ok, t->try_busy, t->worst_remote_ns / 1e6);
	test_free(t);
}

/* Remote latency: local lockers saturate shard 0 from its CPU. */
struct latency {
	struct urcu_percpu_lock *l;
	int shard_cpu;
	int remote_cpu;
	int duel;			/* remote locker never sleeps */
	unsigned long samples;
	unsigned long local_ops;
	unsigned long wrong;
	int64_t worst_ns;
	int64_t total_ns;
	unsigned long counter;
};

static void latency_worker(struct stress_thread *st)
{
	struct latency *lt = st->arg;
	unsigned long ops = 0;

	if (st->id == 0) {
		stress_pin_self(lt->remote_cpu);
		while (!stress_should_stop(st)) {
			struct timespec ts = { 0, 200000 };
			int64_t t0 = now_ns(), w;

			urcu_percpu_lock_cpu(lt->l, 0);
			w = now_ns() - t0;
			CMM_STORE_SHARED(lt->counter, lt->counter + 1);
			urcu_percpu_unlock(lt->l, 0);
			lt->samples++;
			lt->total_ns += w;
			if (w > lt->worst_ns)
				lt->worst_ns = w;
			if (!lt->duel)
				nanosleep(&ts, NULL);
		}
		return;
	}
	stress_pin_self(lt->shard_cpu);
	while (!stress_should_stop(st)) {
		int idx = urcu_percpu_lock(lt->l);

		if (idx == 0) {
			CMM_STORE_SHARED(lt->counter, lt->counter + 1);
			ops++;
		}
		urcu_percpu_unlock(lt->l, idx);
	}
	uatomic_add(&lt->local_ops, ops);
}

static void remote_latency(int duel)
{
	struct latency lt = { 0 };
	const char *what = duel ? "duel, 1 local vs 1 remote locker" :
		"8 local lockers saturate the shard, remote every 200 us";

	if (stress_nr_cpus() < 2 || stress_cpu_at(0) != 0) {
		skip(2, "needs CPU 0 and a second CPU");
		return;
	}
	lt.l = urcu_percpu_lock_create(0);
	if (!lt.l)
		bail_out("urcu_percpu_lock_create: %d", errno);
	lt.shard_cpu = 0;
	lt.remote_cpu = stress_cpu_at(1);
	lt.duel = duel;
	stress_run(latency_worker, &lt, duel ? 2 : 9, STRESS_QUIET, NULL);
	ok(lt.counter == lt.samples + lt.local_ops,
		"%s: shard 0 counter exact (%lu)", what, lt.counter);
	diag("%s: %lu remote locks, mean wait %.1f us, worst %.3f ms; "
		"%lu local locks", what, lt.samples, lt.samples ? lt.total_ns / 1e3 / lt.samples : 0.0,
		lt.worst_ns / 1e6, lt.local_ops);
	/*
	 * The remote locker got the shard and the run ended: how long it
	 * waited is the diag above (a starved host stretches any bound).
	 */
	ok(lt.samples > 0, "%s: remote locker got the shard (%lu times)",
		what, lt.samples);
	urcu_percpu_lock_destroy(lt.l);
}

/* ---- Tortures: fork, lifecycle, thread exit ---- */

/* What @remote rests at: 0, or 1 for a lock without a fast path. */
static intptr_t rest_of(struct urcu_percpu_lock *l)
{
	return l->fast ? 0 : 1;
}

static bool shard_at_rest(struct urcu_percpu_lock *l, int i)
{
	return CMM_LOAD_SHARED(l->shards[i].lock) == _URCU_PERCPU_LOCK_FREE
		&& uatomic_read(&l->shards[i].remote) == rest_of(l);
}

static void short_hold(struct stress_thread *st)
{
	unsigned int i, n = stress_rand_below(st, 64);

	for (i = 0; i < n; i++)
		caa_cpu_relax();
}

/* ---- fork ---- */

#define FK_THREADS	16	/* 0 forks, 1 lock_all, 2-5 remote, the rest local */
#define FK_REMOTE	4

/* What the children found, in memory shared with the parent. */
struct fk_shared {
	unsigned long children;
	unsigned long gone_held;	/* shards held by a thread not in the child */
	unsigned long stale;		/* free shards with a remote count left */
	unsigned long slow_local;	/* local lock off the fast path */
	unsigned long lock_all;		/* children that lock_all'ed the busy lock */
	unsigned long bad;		/* wrong results of any other kind */
};

static struct {
	struct urcu_percpu_lock *l;
	int nr;
	int held;			/* the forking thread's shard, or -1 */
	struct fk_shared *sh;
	unsigned long forks, ok, hung, failed, own_held, pending;
} fk;

/* Every operation on a new lock of the child's own. */
static unsigned long fk_use_new(unsigned int flags)
{
	struct urcu_percpu_lock *l = urcu_percpu_lock_create(flags);
	unsigned long bad = 0;
	int nr, i, idx;

	if (!l)
		return 1;
	nr = urcu_percpu_lock_nr_shards(l);
	idx = urcu_percpu_lock(l);
	if (idx < 0 || idx >= nr)
		return bad + 1;
	urcu_percpu_unlock(l, idx);
	for (i = 0; i < nr; i++) {
		urcu_percpu_lock_cpu(l, i);
		urcu_percpu_unlock(l, i);
		if (!urcu_percpu_trylock_cpu(l, i))
			bad++;
		else
			urcu_percpu_unlock(l, i);
	}
	urcu_percpu_lock_all(l);
	urcu_percpu_unlock_all(l);
	for (i = 0; i < nr; i++)
		if (!shard_at_rest(l, i))
			bad++;
	urcu_percpu_lock_destroy(l);
	return bad;
}

static int fk_child(void *arg)
{
	struct urcu_percpu_lock *l = fk.l;
	struct fk_shared *sh = fk.sh;
	unsigned long bad = 0, gone_held = 0, stale = 0, slow = 0;
	char *gone = calloc((size_t) fk.nr, 1);
	int i, k, idx;

	(void) arg;
	if (!gone)
		return 1;
	/* The forking thread's shard is still its own: it gives it back. */
	if (fk.held >= 0)
		urcu_percpu_unlock(l, fk.held);
	for (i = 0; i < fk.nr; i++) {
		if (CMM_LOAD_SHARED(l->shards[i].lock) != _URCU_PERCPU_LOCK_FREE) {
			/* Held by a parent thread the child does not have. */
			errno = 0;
			if (urcu_percpu_trylock_cpu(l, i) || errno != EBUSY)
				bad++;
			gone[i] = 1;
			gone_held++;
			continue;
		}
		if (l->shards[i].remote != rest_of(l))
			stale++;
		if (!urcu_percpu_trylock_cpu(l, i))
			bad++;
		else
			urcu_percpu_unlock(l, i);
		urcu_percpu_lock_cpu(l, i);
		urcu_percpu_unlock(l, i);
	}
	/* The local lock on every CPU whose shard is free: the fast path. */
	for (k = 0; k < stress_nr_cpus(); k++) {
		int cpu = stress_cpu_at(k);

		if (cpu >= fk.nr || gone[cpu] || stress_pin_self(cpu))
			continue;
		idx = urcu_percpu_lock(l);
		if (idx < 0 || idx >= fk.nr) {
			bad++;
			continue;
		}
		if (l->fast && urcu_rseq_index(URCU_RSEQ_INDEX_CPU) >= 0
				&& l->shards[idx].lock != _URCU_PERCPU_LOCK_LOCAL)
			slow++;
		urcu_percpu_unlock(l, idx);
	}
	(void) stress_unpin_self();
	if (!gone_held) {
		urcu_percpu_lock_all(l);
		urcu_percpu_unlock_all(l);
		uatomic_inc(&sh->lock_all);
	}
	for (i = 0; i < fk.nr; i++)
		if (!gone[i] && !shard_at_rest(l, i))
			bad++;
	urcu_percpu_lock_destroy(l);
	bad += fk_use_new(0);
	bad += fk_use_new(URCU_PERCPU_MM_CID);
	free(gone);
	uatomic_inc(&sh->children);
	uatomic_add(&sh->gone_held, gone_held);
	uatomic_add(&sh->stale, stale);
	uatomic_add(&sh->slow_local, slow);
	uatomic_add(&sh->bad, bad);
	return bad || slow;
}

static void fk_fork(struct stress_thread *st)
{
	unsigned int how = stress_rand_below(st, 4);
	unsigned long pending = 0;
	int held = -1, i;

	if (how == 0)
		held = urcu_percpu_lock(fk.l);
	else if (how == 1) {
		held = (int) stress_rand_below(st, (uint32_t) fk.nr);
		urcu_percpu_lock_cpu(fk.l, held);
	}
	fk.held = held;
	if (held >= 0)
		fk.own_held++;
	/* Remote requests of other threads caught by this fork (roughly). */
	for (i = 0; i < fk.nr; i++)
		pending += (unsigned long) (uatomic_read(&fk.l->shards[i].remote)
			- rest_of(fk.l)) - (i == held
			&& uatomic_read(&fk.l->shards[i].lock)
				== _URCU_PERCPU_LOCK_CAS);
	fk.pending += pending;
	switch (stress_fork_check(fk_child, NULL, 10000)) {
	case STRESS_FORK_OK:
		fk.ok++;
		break;
	case STRESS_FORK_HUNG:
		fk.hung++;
		break;
	default:
		fk.failed++;
		break;
	}
	uatomic_set(&fk.forks, fk.forks + 1);
	if (held >= 0)
		urcu_percpu_unlock(fk.l, held);
	usleep(stress_rand_below(st, 1000));
}

/*
 * The forking thread keeps the storm's signal blocked (the others take
 * it): fork() starts over when a signal arrives while it copies the
 * process, and under the storm it would hardly ever finish.
 */
static void fk_block_storm(struct stress_thread *st)
{
	sigset_t set;

	if (st->id != 0)
		return;
	sigemptyset(&set);
	sigaddset(&set, STRESS_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/*
 * The forking thread forks at least once even when it first runs after
 * the phase has ended (a loaded or slow machine, few CPUs online): the
 * others go on until it has.
 */
static void fk_worker(struct stress_thread *st)
{
	fk_block_storm(st);
	while (!stress_should_stop(st) || !uatomic_read(&fk.forks)) {
		if (st->id == 0) {
			fk_fork(st);
		} else if (st->id == 1) {
			urcu_percpu_lock_all(fk.l);
			short_hold(st);
			urcu_percpu_unlock_all(fk.l);
		} else if (st->id < 2 + FK_REMOTE) {
			int cpu = (int) stress_rand_below(st, (uint32_t) fk.nr);

			if (stress_rand_below(st, 4) == 0) {
				if (!urcu_percpu_trylock_cpu(fk.l, cpu))
					continue;
			} else {
				urcu_percpu_lock_cpu(fk.l, cpu);
			}
			short_hold(st);
			urcu_percpu_unlock(fk.l, cpu);
		} else {
			int idx = urcu_percpu_lock(fk.l);

			short_hold(st);
			urcu_percpu_unlock(fk.l, idx);
		}
	}
}

static void test_fork(void)
{
	struct stress_report rep;
	struct fk_shared *sh;
	unsigned long left = 0;
	int i;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		bail_out("mmap: %d", errno);
	memset(sh, 0, sizeof(*sh));
	fk.sh = sh;
	fk.l = urcu_percpu_lock_create(0);
	if (!fk.l)
		bail_out("urcu_percpu_lock_create: %d", errno);
	fk.nr = urcu_percpu_lock_nr_shards(fk.l);
	stress_run(fk_worker, NULL, FK_THREADS,
			STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, &rep);
	for (i = 0; i < fk.nr; i++)
		if (!shard_at_rest(fk.l, i))
			left++;
	diag("fork: %lu forks (%lu holding a shard, ~%lu remote requests "
		"pending at the fork); children: %lu shards held by threads they "
		"do not have, %lu free shards with a remote count left, %lu "
		"lock_all'ed the busy lock, %lu local locks off the fast path, "
		"%lu other errors", fk.forks, fk.own_held, fk.pending,
		sh->gone_held, sh->stale, sh->lock_all, sh->slow_local, sh->bad);
	ok(fk.forks > 0 && fk.ok == fk.forks,
		"fork: every child used every shard, lock_all and new locks, "
		"and finished (%lu failed, %lu hung)", fk.failed, fk.hung);
	ok(left == 0, "fork: the parent's lock at rest after the run (%lu)",
		left);
	urcu_percpu_lock_destroy(fk.l);
	munmap(sh, sizeof(*sh));
}

/* ---- lifecycle ---- */

#define LC_SLOTS	4
#define LC_MAX_REFS	6
#define LC_THREADS	16

struct lc_obj {
	struct urcu_percpu_lock *l;
	int nr;
	int shard;		/* the shard that guards the fields below */
	unsigned int planned;
	unsigned int refs;
	unsigned long value;	/* one update per reference */
	unsigned long inside;
};

struct lc_slot {
	pthread_mutex_t lock;
	struct lc_obj *obj;
	unsigned int handed;
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

static struct {
	struct lc_slot slot[LC_SLOTS];
	unsigned long objects, destroyed, overlaps, bad_value, bad_rest;
	unsigned long bad_new, ways[4], reused;
} lc;

/* A new lock; the thread just freed one, so its memory is likely reused. */
static struct urcu_percpu_lock *lc_new_lock(struct stress_thread *st)
{
	unsigned int flags = stress_rand_below(st, 4) ? 0 : URCU_PERCPU_MM_CID;
	struct urcu_percpu_lock *l = urcu_percpu_lock_create(flags);
	int i;

	if (!l)
		bail_out("urcu_percpu_lock_create: %d", errno);
	for (i = 0; i < l->nr_shards; i++)
		if (!shard_at_rest(l, i))
			uatomic_inc(&lc.bad_new);
	return l;
}

static struct lc_obj *lc_get(struct stress_thread *st,
		struct urcu_percpu_lock **spare)
{
	struct lc_slot *sl = &lc.slot[stress_rand_below(st, LC_SLOTS)];
	struct lc_obj *o;

	pthread_mutex_lock(&sl->lock);
	o = sl->obj;
	if (!o) {
		o = (struct lc_obj *) calloc(1, sizeof(*o));
		if (!o)
			bail_out("out of memory");
		o->l = *spare ? *spare : lc_new_lock(st);
		*spare = NULL;
		o->nr = urcu_percpu_lock_nr_shards(o->l);
		o->shard = (int) stress_rand_below(st, (uint32_t) o->nr);
		o->planned = 2 + stress_rand_below(st, LC_MAX_REFS - 1);
		o->refs = o->planned;
		sl->obj = o;
		sl->handed = 0;
		uatomic_inc(&lc.objects);
	}
	if (++sl->handed == o->planned)
		sl->obj = NULL;
	pthread_mutex_unlock(&sl->lock);
	return o;
}

/* Takes @o's guarding shard (or every shard); true when lock_all. */
static bool lc_lock(struct stress_thread *st, struct lc_obj *o)
{
	unsigned int way = stress_rand_below(st, 4);
	int idx, tries;

	uatomic_inc(&lc.ways[way]);
	switch (way) {
	case 0:
		urcu_percpu_lock_cpu(o->l, o->shard);
		return false;
	case 1:
		for (tries = 0; tries < 100; tries++) {
			if (urcu_percpu_trylock_cpu(o->l, o->shard))
				return false;
			caa_cpu_relax();
		}
		urcu_percpu_lock_cpu(o->l, o->shard);
		return false;
	case 2:
		/* The local lock, when it lands on the guarding shard. */
		idx = urcu_percpu_lock(o->l);
		if (idx == o->shard)
			return false;
		urcu_percpu_unlock(o->l, idx);
		urcu_percpu_lock_cpu(o->l, o->shard);
		return false;
	default:
		urcu_percpu_lock_all(o->l);
		return true;
	}
}

/* The last reference is gone and the lock released: destroy and free. */
static void lc_retire(struct lc_obj *o)
{
	void *shards = o->l->shards, *again;
	size_t size = malloc_usable_size(shards);
	int i;

	if (o->value != o->planned)
		uatomic_inc(&lc.bad_value);
	/*
	 * Other unlockers may still be on their way out of unlock (a shard
	 * still held by an unlock_all past the guarding shard, a remote unit
	 * not yet given back); a late decrement that landed in this lock
	 * while it lived pushed a remote count below its rest value.
	 */
	for (i = 0; i < o->nr; i++)
		if (uatomic_read(&o->l->shards[i].remote) < rest_of(o->l))
			uatomic_inc(&lc.bad_rest);
	urcu_percpu_lock_destroy(o->l);
	/* Most often the very block just freed: poisoned and watched. */
	again = malloc(size);
	if (!again)
		bail_out("out of memory");
	if (again == shards)
		uatomic_inc(&lc.reused);
	stress_quarantine(again, size, NULL);
	stress_quarantine(o, sizeof(*o), NULL);
	uatomic_inc(&lc.destroyed);
}

static void lc_worker(struct stress_thread *st)
{
	struct urcu_percpu_lock *spare = NULL;
	struct lc_obj *o;
	bool all, last;

	while (!stress_should_stop(st)) {
		o = lc_get(st, &spare);
		all = lc_lock(st, o);
		if (CMM_LOAD_SHARED(o->inside))
			uatomic_inc(&lc.overlaps);
		CMM_STORE_SHARED(o->inside, 1);
		o->value++;
		last = --o->refs == 0;
		short_hold(st);
		CMM_STORE_SHARED(o->inside, 0);
		if (all)
			urcu_percpu_unlock_all(o->l);
		else
			urcu_percpu_unlock(o->l, o->shard);
		if (last) {
			lc_retire(o);
			/* Reuse the memory just freed, while unlockers may be late. */
			spare = lc_new_lock(st);
		}
	}
	if (spare)
		urcu_percpu_lock_destroy(spare);
}

static void test_lifecycle(void)
{
	struct stress_report rep;
	unsigned long late, retired0 = stress_quarantined();
	int i;

	for (i = 0; i < LC_SLOTS; i++)
		pthread_mutex_init(&lc.slot[i].lock, NULL);
	stress_run(lc_worker, NULL, LC_THREADS,
			STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, &rep);
	/* Objects still planned for more references: finish them here. */
	for (i = 0; i < LC_SLOTS; i++) {
		struct lc_obj *o = lc.slot[i].obj;

		if (!o)
			continue;
		if (o->value + (o->planned - lc.slot[i].handed) != o->planned)
			uatomic_inc(&lc.bad_value);
		o->value = o->planned;
		lc_retire(o);
		lc.slot[i].obj = NULL;
	}
	late = stress_quarantine_drain();
	diag("lifecycle: %lu locks created, %lu destroyed by their last user "
		"(%lu blocks retired), ways: %lu lock_cpu, %lu trylock, %lu "
		"local, %lu lock_all; the shard array taken back and watched "
		"%lu times; %lu signals, %lu migrations",
		lc.objects, lc.destroyed, stress_quarantined() - retired0,
		lc.ways[0], lc.ways[1], lc.ways[2], lc.ways[3], lc.reused,
		rep.signals,
		rep.migrations);
	ok(lc.objects > 0 && lc.destroyed == lc.objects,
		"lifecycle: every lock destroyed by its last user (%lu of %lu)",
		lc.destroyed, lc.objects);
	ok(lc.overlaps == 0 && lc.bad_value == 0,
		"lifecycle: mutual exclusion and every reference counted "
		"(%lu overlaps, %lu wrong values)", lc.overlaps, lc.bad_value);
	ok(lc.bad_rest == 0 && lc.bad_new == 0 && late == 0,
		"lifecycle: no write into a freed lock: %lu shards below rest "
		"at destroy, %lu new locks not at rest, %lu late writes",
		lc.bad_rest, lc.bad_new, late);
}

/* ---- thread exit ---- */

#define EX_SPAWNERS	6
#define EX_THREADS	(EX_SPAWNERS + 6)	/* then 4 local, 1 remote, 1 all */

struct ex_arg {
	struct test *t;
	unsigned int how;
	unsigned long me;
	int shard;		/* held at exit, or -1 */
	unsigned long *mine;
};

static unsigned long ex_exits, ex_exits_holding;

static void *ex_thread(void *p)
{
	struct ex_arg *a = (struct ex_arg *) p;
	struct test *t = a->t;
	int idx;

	if (a->how & 1)
		idx = urcu_percpu_lock(t->l);
	else {
		idx = (int) (a->me % (unsigned long) t->nr);
		urcu_percpu_lock_cpu(t->l, idx);
	}
	if (idx < 0 || idx >= t->nr) {
		uatomic_inc(&t->bad_index);
		return NULL;
	}
	critical(t, idx, a->me);
	a->mine[idx]++;
	/* Half of them exit holding it: the joiner unlocks it for them. */
	if (a->how & 2)
		a->shard = idx;
	else
		urcu_percpu_unlock(t->l, idx);
	return NULL;
}

static void ex_worker(struct stress_thread *st)
{
	struct test *t = st->arg;
	unsigned long *mine = calloc((size_t) t->nr, sizeof(*mine));
	unsigned long me = st->id + 1, n = 0;
	int i;

	if (!mine)
		bail_out("out of memory");
	while (!stress_should_stop(st)) {
		if (st->id < EX_SPAWNERS) {
			struct ex_arg a = { t, stress_rand_below(st, 4),
				1000 * me + n, -1, mine };
			pthread_t th;

			if (pthread_create(&th, NULL, ex_thread, &a))
				bail_out("pthread_create");
			pthread_join(th, NULL);
			if (a.shard >= 0) {
				urcu_percpu_unlock(t->l, a.shard);
				uatomic_inc(&ex_exits_holding);
			}
			uatomic_inc(&ex_exits);
		} else if (st->id < EX_SPAWNERS + 4) {
			int idx = urcu_percpu_lock(t->l);

			critical(t, idx, me);
			mine[idx]++;
			urcu_percpu_unlock(t->l, idx);
		} else if (st->id == EX_SPAWNERS + 4) {
			int cpu = (int) stress_rand_below(st, (uint32_t) t->nr);

			urcu_percpu_lock_cpu(t->l, cpu);
			critical(t, cpu, me);
			mine[cpu]++;
			urcu_percpu_unlock(t->l, cpu);
		} else {
			urcu_percpu_lock_all(t->l);
			for (i = 0; i < t->nr; i++) {
				critical(t, i, me);
				mine[i]++;
			}
			urcu_percpu_unlock_all(t->l);
		}
		n++;
	}
	for (i = 0; i < t->nr; i++)
		uatomic_add(&t->expected[i], mine[i]);
	free(mine);
}

static void test_exit(unsigned int flags, const char *name)
{
	struct test *t = test_new(flags);
	unsigned long wrong = 0, left = 0;
	int i;

	ex_exits = ex_exits_holding = 0;
	stress_run(ex_worker, t, EX_THREADS,
			STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, NULL);
	for (i = 0; i < t->nr; i++) {
		if (t->g[i].counter != t->expected[i])
			wrong++;
		if (!shard_at_rest(t->l, i))
			left++;
	}
	diag("exit, %s: %lu threads exited after taking a shard, %lu of them "
		"still holding it", name, ex_exits, ex_exits_holding);
	ok(ex_exits > 0 && t->overlaps == 0 && wrong == 0 && t->bad_index == 0,
		"exit, %s: exact counts, no two holders (%lu overlaps, %lu wrong, "
		"%lu bad indexes)", name, t->overlaps, wrong, t->bad_index);
	ok(left == 0, "exit, %s: every shard at rest after the exits (%lu)",
		name, left);
	test_free(t);
}

int main(void)
{
	plan_tests(12 + 2 + 3 + 4);
	diag("%s", getenv("URCU_RSEQ_DISABLE") ? "URCU_RSEQ_DISABLE set" :
		"rseq as available");
	mixed(0, "cpu shards");
	mixed(URCU_PERCPU_MM_CID, "mm_cid shards");
	remote_latency(0);
	remote_latency(1);
	test_exit(0, "cpu shards");
	test_exit(URCU_PERCPU_MM_CID, "mm_cid shards");
	test_lifecycle();
	test_fork();
	return exit_status();
}
