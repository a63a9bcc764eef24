// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu-rseq defer_rcu(): a call does not wait for readers, its function
 * runs after a grace period that began after the call; every function runs
 * exactly once (threads that queue more than a ring holds, that exit with
 * entries pending, that unregister); rcu_defer_barrier() runs what every
 * thread queued, rcu_defer_barrier_thread() what the caller queued; a
 * deferred function may queue another; fork with entries pending in the
 * forking thread and in others; readers never see an object retired by a
 * deferred function.
 */
#define _LGPL_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urcu-rseq.h>
#include <urcu/uatomic.h>

#include "tap.h"
#include "lifecycle.h"

#define NR_THREADS	4
#define NR_ITEMS	10000	/* per thread: more than a ring holds */

/* How many times each item's function ran. */
static int runs[NR_THREADS][NR_ITEMS];

static void count_run(void *p)
{
	uatomic_inc((int *) p);
}

static void runs_reset(void)
{
	memset(runs, 0, sizeof(runs));
}

/* Items of threads [0, nr) that did not run exactly once. */
static int runs_wrong(int nr)
{
	int t, i, wrong = 0;

	for (t = 0; t < nr; t++)
		for (i = 0; i < NR_ITEMS; i++)
			if (uatomic_read(&runs[t][i]) != 1)
				wrong++;
	return wrong;
}

/*
 * A reader inside a section: defer_rcu() must not wait for it, and the
 * function must not run until it leaves. The reader leaves by itself after
 * 20 s, so that a defer_rcu() that waits is reported rather than hung.
 */
static int reader_in, reader_release, reader_timed_out;
static int gp_item;

static void *long_reader(void *arg)
{
	int i;

	(void) arg;
	rcu_read_lock();
	uatomic_set(&reader_in, 1);
	for (i = 0; i < 20000 && !uatomic_read(&reader_release); i++)
		usleep(1000);
	if (!uatomic_read(&reader_release))
		uatomic_set(&reader_timed_out, 1);
	rcu_read_unlock();
	return NULL;
}

static void test_after_grace_period(void)
{
	pthread_t r;
	int ran_inside;

	pthread_create(&r, NULL, long_reader, NULL);
	while (!uatomic_read(&reader_in))
		usleep(100);
	defer_rcu(count_run, &gp_item);
	ok(!uatomic_read(&reader_timed_out),
		"defer_rcu() does not wait for a reader inside a section");
	usleep(300000);	/* past the worker's batching delay */
	ran_inside = uatomic_read(&gp_item);
	uatomic_set(&reader_release, 1);
	pthread_join(r, NULL);
	ok(!ran_inside, "the function does not run while that reader is "
		"inside (ran %d times)", ran_inside);
	rcu_defer_barrier();
	ok(uatomic_read(&gp_item) == 1, "rcu_defer_barrier() runs it, once");
}

/* Queuers: each defers NR_ITEMS, then waits for the main thread. */
enum queuer_end { END_WAIT, END_EXIT, END_UNREGISTER, END_BARRIER_THREAD };

struct queuer {
	pthread_t tid;
	int idx;
	enum queuer_end end;
	int done;
	int own_wrong;		/* END_BARRIER_THREAD: own items not run */
};

static int queuers_release;

static void *queuer(void *arg)
{
	struct queuer *qa = arg;
	int i;

	if (qa->end != END_EXIT)
		rcu_defer_register_thread();
	for (i = 0; i < NR_ITEMS; i++)
		defer_rcu(count_run, &runs[qa->idx][i]);
	if (qa->end == END_UNREGISTER)
		rcu_defer_unregister_thread();
	if (qa->end == END_BARRIER_THREAD) {
		rcu_defer_barrier_thread();
		for (i = 0; i < NR_ITEMS; i++)
			if (uatomic_read(&runs[qa->idx][i]) != 1)
				qa->own_wrong++;
	}
	uatomic_set(&qa->done, 1);
	if (qa->end == END_WAIT)
		while (!uatomic_read(&queuers_release))
			usleep(1000);
	return NULL;
}

static void queuers_run(struct queuer *qs, enum queuer_end end)
{
	int t;

	runs_reset();
	uatomic_set(&queuers_release, 0);
	for (t = 0; t < NR_THREADS; t++) {
		qs[t].idx = t;
		qs[t].end = end;
		qs[t].done = 0;
		qs[t].own_wrong = 0;
		if (pthread_create(&qs[t].tid, NULL, queuer, &qs[t]))
			bail_out("pthread_create failed");
	}
	for (t = 0; t < NR_THREADS; t++)
		while (!uatomic_read(&qs[t].done))
			usleep(1000);
}

static void queuers_join(struct queuer *qs)
{
	int t;

	uatomic_set(&queuers_release, 1);
	for (t = 0; t < NR_THREADS; t++)
		pthread_join(qs[t].tid, NULL);
}

static void test_barrier_all(void)
{
	struct queuer qs[NR_THREADS];
	int wrong;

	queuers_run(qs, END_WAIT);
	/* The queuers are alive and have not drained what they queued. */
	rcu_defer_barrier();
	wrong = runs_wrong(NR_THREADS);
	queuers_join(qs);
	ok(wrong == 0, "rcu_defer_barrier() runs every thread's entries "
		"exactly once (%d of %d wrong)", wrong,
		NR_THREADS * NR_ITEMS);
	rcu_defer_barrier();
	ok(runs_wrong(NR_THREADS) == 0, "and none runs twice");
}

static void test_barrier_thread(void)
{
	struct queuer qs[NR_THREADS];
	int t, own_wrong = 0;

	queuers_run(qs, END_BARRIER_THREAD);
	for (t = 0; t < NR_THREADS; t++)
		own_wrong += qs[t].own_wrong;
	queuers_join(qs);
	ok(own_wrong == 0, "rcu_defer_barrier_thread() runs the caller's "
		"entries (%d not run)", own_wrong);
	rcu_defer_barrier();
	ok(runs_wrong(NR_THREADS) == 0, "each exactly once");
}

static void test_thread_exit(void)
{
	struct queuer qs[NR_THREADS];
	int wrong;

	queuers_run(qs, END_EXIT);
	queuers_join(qs);
	rcu_defer_barrier();
	wrong = runs_wrong(NR_THREADS);
	ok(wrong == 0, "entries pending at thread exit run exactly once "
		"(%d wrong)", wrong);
}

static void test_unregister(void)
{
	struct queuer qs[NR_THREADS];
	int wrong;

	queuers_run(qs, END_UNREGISTER);
	/* No barrier: unregistering ran them. */
	wrong = runs_wrong(NR_THREADS);
	queuers_join(qs);
	ok(wrong == 0, "rcu_defer_unregister_thread() runs the thread's "
		"entries exactly once (%d wrong)", wrong);
}

/* A deferred function that queues another, and rcu_defer_barrier(). */
static int chain_first, chain_second;

static void chain_second_fn(void *p)
{
	(void) p;
	uatomic_inc(&chain_second);
}

static void chain_first_fn(void *p)
{
	int i;

	(void) p;
	uatomic_inc(&chain_first);
	/* More than a ring: the worker's own ring fills and drains. */
	for (i = 0; i < 3000; i++)
		defer_rcu(chain_second_fn, NULL);
}

static void test_chain(void)
{
	defer_rcu(chain_first_fn, NULL);
	rcu_defer_barrier();
	rcu_defer_barrier();
	ok(chain_first == 1 && chain_second == 3000, "a deferred function "
		"queues more (%d, %d)", chain_first, chain_second);
}

/*
 * fork with entries pending in the forking thread and in a live other
 * thread: each process runs each entry exactly once.
 */
static int fork_child(void *arg)
{
	static int late;

	(void) arg;
	rcu_defer_barrier();
	if (runs_wrong(2))
		return 1;
	defer_rcu(count_run, &late);
	rcu_defer_barrier();
	if (uatomic_read(&late) != 1)
		return 2;
	rcu_defer_barrier();
	return runs_wrong(2) ? 3 : 0;
}

static void test_fork(void)
{
	struct queuer q1;
	enum stress_fork_result r;
	int i;

	runs_reset();
	uatomic_set(&queuers_release, 0);
	q1.idx = 1;
	q1.end = END_WAIT;
	q1.done = 0;
	q1.own_wrong = 0;
	if (pthread_create(&q1.tid, NULL, queuer, &q1))
		bail_out("pthread_create failed");
	for (i = 0; i < NR_ITEMS; i++)
		defer_rcu(count_run, &runs[0][i]);
	while (!uatomic_read(&q1.done))
		usleep(1000);
	r = stress_fork_check(fork_child, NULL, 60000);
	ok(r == STRESS_FORK_OK, "fork child runs pending entries of its "
		"thread and of threads it does not have exactly once, then "
		"queues more (%s)", r == STRESS_FORK_OK ? "ok" :
		r == STRESS_FORK_HUNG ? "hung" : "failed");
	rcu_defer_barrier();
	ok(runs_wrong(2) == 0, "the parent runs its own, exactly once");
	uatomic_set(&queuers_release, 1);
	pthread_join(q1.tid, NULL);
}

/*
 * Readers dereference a published object and check it is alive; writers
 * replace it and defer its retirement.
 */
#define ALIVE	0x600dcafe
#define DEAD	0xdeadbeef

struct obj {
	unsigned int magic;
};

static struct obj *shared_obj;
static int stress_stop;
static unsigned long dead_seen, retired;

static void obj_retire(void *p)
{
	struct obj *o = p;

	CMM_STORE_SHARED(o->magic, DEAD);
	uatomic_inc(&retired);
	stress_quarantine(o, sizeof(*o), NULL);
}

static void *obj_reader(void *arg)
{
	struct obj *o;

	(void) arg;
	while (!uatomic_read(&stress_stop)) {
		rcu_read_lock();
		o = rcu_dereference(shared_obj);
		if (o && CMM_LOAD_SHARED(o->magic) != ALIVE)
			uatomic_inc(&dead_seen);
		rcu_read_unlock();
	}
	return NULL;
}

static void *obj_writer(void *arg)
{
	struct obj *o, *old;
	int i;

	(void) arg;
	for (i = 0; i < 20000; i++) {
		o = malloc(sizeof(*o));
		o->magic = ALIVE;
		old = rcu_xchg_pointer(&shared_obj, o);
		if (old)
			defer_rcu(obj_retire, old);
	}
	return NULL;
}

static void test_readers(void)
{
	pthread_t r[2], w[2];
	struct obj *last;
	int i;

	for (i = 0; i < 2; i++)
		pthread_create(&r[i], NULL, obj_reader, NULL);
	for (i = 0; i < 2; i++)
		pthread_create(&w[i], NULL, obj_writer, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	uatomic_set(&stress_stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	last = rcu_xchg_pointer(&shared_obj, NULL);
	defer_rcu(obj_retire, last);
	rcu_defer_barrier();
	ok(dead_seen == 0 && retired == 40000, "readers never see a retired "
		"object (%lu seen), every one retired once (%lu of 40000)",
		dead_seen, retired);
	ok(stress_quarantine_drain() == 0, "no write after retirement");
}

int main(void)
{
	plan_tests(14);
	test_after_grace_period();
	test_barrier_all();
	test_barrier_thread();
	test_thread_exit();
	test_unregister();
	test_chain();
	test_fork();
	test_readers();
	return exit_status();
}
