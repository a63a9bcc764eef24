// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu-rseq call_rcu data, as liburcu documents it: create_call_rcu_data()
 * gives a worker of its own (pinned to its CPU, polling with
 * URCU_CALL_RCU_RT); a thread's data takes its callbacks; per-CPU data for
 * every CPU; call_rcu_data_free() hands pending callbacks to the default
 * data, none lost; free_all_cpu_call_rcu_data(); rcu_barrier() waits for
 * the callbacks of every data; a thread that exits with callbacks pending
 * on its data; fork with callbacks pending on non-default data.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define _LGPL_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urcu-rseq.h>
#include <urcu/uatomic.h>

#include "tap.h"
#include "lifecycle.h"

struct counted {
	struct rcu_head head;
	int *count;
	pthread_t *ran_on;	/* NULL: not recorded */
};

static void counted_cb(struct rcu_head *h)
{
	struct counted *c = caa_container_of(h, struct counted, head);

	if (c->ran_on)
		*c->ran_on = pthread_self();
	uatomic_inc(c->count);
	free(c);
}

static void queue_counted(int *count, pthread_t *ran_on)
{
	struct counted *c = malloc(sizeof(*c));

	if (!c)
		bail_out("malloc failed");
	c->count = count;
	c->ran_on = ran_on;
	call_rcu(&c->head, counted_cb);
}

static void test_own_worker(void)
{
	struct call_rcu_data *d = create_call_rcu_data(0, -1);
	struct call_rcu_data *def = get_default_call_rcu_data();
	pthread_t ran_on;
	int count = 0;

	ok(d != NULL && d != def, "create_call_rcu_data() gives new data");
	ok(d && !pthread_equal(get_call_rcu_thread(d),
			get_call_rcu_thread(def)),
		"with a worker of its own");
	set_thread_call_rcu_data(d);
	ok(get_thread_call_rcu_data() == d && get_call_rcu_data() == d,
		"set_thread_call_rcu_data(): get_thread_ and get_call_rcu_data() "
		"return it");
	queue_counted(&count, &ran_on);
	rcu_barrier();
	ok(count == 1 && pthread_equal(ran_on, get_call_rcu_thread(d)),
		"the thread's callbacks run on its data's worker");
	set_thread_call_rcu_data(NULL);
	ok(get_thread_call_rcu_data() == NULL && get_call_rcu_data() == def,
		"set_thread_call_rcu_data(NULL): back to the default");
	call_rcu_data_free(d);
}

static void test_affinity_and_rt(void)
{
	int cpu = sched_getcpu() < 0 ? 0 : sched_getcpu();
	struct call_rcu_data *d = create_call_rcu_data(0, cpu);
	struct call_rcu_data *rt = create_call_rcu_data(URCU_CALL_RCU_RT, -1);
	pthread_t ran_on;
	cpu_set_t set;
	int count = 0;

	CPU_ZERO(&set);
	ok(d && pthread_getaffinity_np(get_call_rcu_thread(d), sizeof(set),
			&set) == 0 && CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set),
		"create_call_rcu_data(0, %d): its worker runs on that CPU only",
		cpu);
	set_thread_call_rcu_data(rt);
	queue_counted(&count, &ran_on);
	rcu_barrier();
	set_thread_call_rcu_data(NULL);
	ok(rt && count == 1 && pthread_equal(ran_on, get_call_rcu_thread(rt)),
		"URCU_CALL_RCU_RT: a polling worker of its own runs callbacks");
	call_rcu_data_free(d);
	call_rcu_data_free(rt);
}

static void test_per_cpu(void)
{
	int nr = urcu_rseq_nr_cpus(), i, distinct = 1, ret, count = 0;
	struct call_rcu_data *d0;

	ret = create_all_cpu_call_rcu_data(0);
	d0 = get_cpu_call_rcu_data(0);
	for (i = 0; i < nr; i++) {
		struct call_rcu_data *d = get_cpu_call_rcu_data(i);

		if (!d || d == get_default_call_rcu_data()
				|| (i > 0 && d == d0))
			distinct = 0;
	}
	ok(ret == 0 && distinct, "create_all_cpu_call_rcu_data(): data of "
		"its own for each of %d CPUs", nr);
	ok(get_cpu_call_rcu_data(nr) == NULL && get_cpu_call_rcu_data(-1)
		== NULL, "get_cpu_call_rcu_data() of a bad CPU is NULL");
	ok(set_cpu_call_rcu_data(0, get_default_call_rcu_data()) < 0
		&& errno == EEXIST, "set_cpu_call_rcu_data() over a set CPU: "
		"EEXIST");
	ok(set_cpu_call_rcu_data(-1, NULL) < 0 && errno == EINVAL,
		"set_cpu_call_rcu_data() of a bad CPU: EINVAL");
	for (i = 0; i < 1000; i++)
		queue_counted(&count, NULL);
	rcu_barrier();
	ok(count == 1000, "rcu_barrier() waits for per-CPU callbacks");
	/* Callbacks in flight while the per-CPU data is freed. */
	for (i = 0; i < 1000; i++)
		queue_counted(&count, NULL);
	free_all_cpu_call_rcu_data();
	ok(get_cpu_call_rcu_data(0) == NULL,
		"free_all_cpu_call_rcu_data() clears every CPU");
	rcu_barrier();
	ok(count == 2000, "no callback lost (%d of 2000)", count);
}

/*
 * call_rcu_data_free() with callbacks pending: the data's worker is kept
 * busy inside a callback while more are queued behind it, so that some are
 * still queued when the worker stops.
 */
static int blocker_in, blocker_release;

static void blocker_cb(struct rcu_head *h)
{
	uatomic_set(&blocker_in, 1);
	while (!uatomic_read(&blocker_release))
		usleep(1000);
	free(h);
}

static void *releaser(void *arg)
{
	(void) arg;
	usleep(100000);
	uatomic_set(&blocker_release, 1);
	return NULL;
}

static void test_free_pending(void)
{
	struct call_rcu_data *d = create_call_rcu_data(0, -1);
	struct rcu_head *b = malloc(sizeof(*b));
	pthread_t rel;
	int i, count = 0;

	set_thread_call_rcu_data(d);
	call_rcu(b, blocker_cb);
	while (!uatomic_read(&blocker_in))
		usleep(1000);
	for (i = 0; i < 1000; i++)
		queue_counted(&count, NULL);
	set_thread_call_rcu_data(NULL);
	pthread_create(&rel, NULL, releaser, NULL);
	call_rcu_data_free(d);
	pthread_join(rel, NULL);
	rcu_barrier();
	ok(count == 1000, "call_rcu_data_free() with callbacks pending: "
		"none lost (%d of 1000)", count);
	call_rcu_data_free(get_default_call_rcu_data());
	call_rcu_data_free(NULL);
	queue_counted(&count, NULL);
	rcu_barrier();
	ok(count == 1001, "freeing the default data or NULL does nothing");
}

/* A thread that exits with callbacks pending on its own data. */
static struct call_rcu_data *exit_data;
static int exit_count;

static void *exiting(void *arg)
{
	int i;

	(void) arg;
	set_thread_call_rcu_data(exit_data);
	for (i = 0; i < 1000; i++)
		queue_counted(&exit_count, NULL);
	return NULL;
}

static void test_thread_exit(void)
{
	pthread_t t;

	exit_data = create_call_rcu_data(0, -1);
	pthread_create(&t, NULL, exiting, NULL);
	pthread_join(t, NULL);
	rcu_barrier();
	ok(exit_count == 1000, "callbacks a thread queued on its data before "
		"exiting all run (%d)", exit_count);
	ok(get_thread_call_rcu_data() == NULL, "the data was that thread's");
	call_rcu_data_free(exit_data);
}

/*
 * fork with callbacks pending on the thread's and the CPUs' data: the
 * child runs them (on its default data), has no thread or CPU data, and
 * can create more.
 */
static int fork_count;

static int fork_child(void *arg)
{
	struct call_rcu_data *d;

	(void) arg;
	rcu_barrier();
	if (fork_count != 2)
		return 1;
	if (get_thread_call_rcu_data() != NULL
			|| get_cpu_call_rcu_data(0) != NULL)
		return 2;
	d = create_call_rcu_data(0, -1);
	set_thread_call_rcu_data(d);
	queue_counted(&fork_count, NULL);
	rcu_barrier();
	set_thread_call_rcu_data(NULL);
	call_rcu_data_free(d);
	return fork_count == 3 ? 0 : 3;
}

static void test_fork(void)
{
	struct call_rcu_data *d = create_call_rcu_data(0, -1);
	enum stress_fork_result r = STRESS_FORK_ERROR;
	int ret;

	ret = create_all_cpu_call_rcu_data(0);
	set_thread_call_rcu_data(d);
	call_rcu_before_fork();
	queue_counted(&fork_count, NULL);	/* paused: pending at fork */
	set_thread_call_rcu_data(NULL);
	queue_counted(&fork_count, NULL);	/* on a CPU's data */
	r = stress_fork_check(fork_child, NULL, 60000);
	call_rcu_after_fork_parent();
	rcu_barrier();
	if (STRESS_UNDER_TSAN)
		skip(1, "ThreadSanitizer: the child's threads reuse the "
			"parent's stacks (%s)", r == STRESS_FORK_OK ? "ok" :
			r == STRESS_FORK_HUNG ? "hung" : "failed");
	else
		ok(ret == 0 && r == STRESS_FORK_OK, "fork child runs callbacks "
			"pending on thread and CPU data, then creates data (%s)",
			r == STRESS_FORK_OK ? "ok" :
			r == STRESS_FORK_HUNG ? "hung" : "failed");
	ok(fork_count == 2, "the parent runs its own (%d)", fork_count);
	free_all_cpu_call_rcu_data();
	call_rcu_data_free(d);
}

/*
 * Threads queue callbacks without pause while the main thread creates and
 * frees every CPU's data, again and again: call_rcu() picks a CPU's data
 * inside a read-side section and free_all_cpu_call_rcu_data() waits for a
 * grace period before it frees, so no callback is queued on freed data,
 * and each runs exactly once.
 */
#define CHURN_THREADS	3
static int churn_stop, churn_count;
static unsigned long churn_queued[CHURN_THREADS];

static void *churner(void *arg)
{
	unsigned long *queued = arg;

	while (!uatomic_read(&churn_stop) && *queued < 200000) {
		queue_counted(&churn_count, NULL);
		(*queued)++;
	}
	return NULL;
}

static void test_churn(void)
{
	pthread_t t[CHURN_THREADS];
	unsigned long total = 0;
	int i, bad = 0;

	for (i = 0; i < CHURN_THREADS; i++)
		pthread_create(&t[i], NULL, churner, &churn_queued[i]);
	for (i = 0; i < 30; i++) {
		if (create_all_cpu_call_rcu_data(i & 1 ? URCU_CALL_RCU_RT : 0))
			bad++;
		usleep(2000);
		free_all_cpu_call_rcu_data();
	}
	uatomic_set(&churn_stop, 1);
	for (i = 0; i < CHURN_THREADS; i++) {
		pthread_join(t[i], NULL);
		total += churn_queued[i];
	}
	rcu_barrier();
	ok(bad == 0 && (unsigned long) uatomic_read(&churn_count) == total,
		"per-CPU data created and freed 30 times under call_rcu() "
		"from %d threads: %lu callbacks, each run once (%d)",
		CHURN_THREADS, total, uatomic_read(&churn_count));
}

int main(void)
{
	plan_tests(21);
	test_own_worker();
	test_affinity_and_rt();
	test_per_cpu();
	test_free_pending();
	test_thread_exit();
	test_fork();
	test_churn();
	return exit_status();
}
