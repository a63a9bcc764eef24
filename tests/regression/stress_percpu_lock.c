// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU spinlock under oversubscription, the signal storm and forced
 * migrations: 64 local lockers, 4 threads taking random shards remotely
 * (lock_cpu and trylock_cpu), one thread taking every shard now and then.
 * Each shard guards a non-atomic counter and an "inside" word; a second
 * holder would see the word taken or lose an increment. Then a remote
 * locker's worst wait while local lockers saturate its shard.
 * Run with URCU_RSEQ_DISABLE=1 too (every thread on the CAS path).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/lock.h>

#include "tap.h"
#include "stress.h"

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

int main(void)
{
	plan_tests(12);
	diag("%s", getenv("URCU_RSEQ_DISABLE") ? "URCU_RSEQ_DISABLE set" :
		"rseq as available");
	mixed(0, "cpu shards");
	mixed(URCU_PERCPU_MM_CID, "mm_cid shards");
	remote_latency(0);
	remote_latency(1);
	return exit_status();
}
