// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu-rseq unit tests: nesting and read_ongoing, a grace period waits for
 * a reader that is inside (and not for one that has left), a section inside
 * a signal handler, call_rcu order and rcu_barrier, fork with pending
 * callbacks, the generic names and the flavor struct, and a cds_lfht built
 * on urcu_rseq_flavor under concurrent add/del/lookup with deferred,
 * poisoned frees.
 */
#define _LGPL_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <urcu-rseq.h>		/* generic names mapped, as <urcu.h> */
#include <urcu/mutex.h>
#include <urcu/percpu/cache.h>
#include <urcu/rculfhash.h>
#include <urcu/uatomic.h>

#include "tap.h"
#include "lifecycle.h"

static int reader_in, reader_release;

static void *long_reader(void *arg)
{
	(void) arg;
	rcu_read_lock();
	uatomic_set(&reader_in, 1);
	while (!uatomic_read(&reader_release))
		usleep(1000);
	rcu_read_unlock();
	return NULL;
}

static int gp_done;

static void *gp_thread(void *arg)
{
	(void) arg;
	synchronize_rcu();
	uatomic_set(&gp_done, 1);
	return NULL;
}

static void test_gp_waits(void)
{
	pthread_t r, g;

	pthread_create(&r, NULL, long_reader, NULL);
	while (!uatomic_read(&reader_in))
		usleep(100);
	pthread_create(&g, NULL, gp_thread, NULL);
	usleep(50000);
	ok(!uatomic_read(&gp_done), "synchronize_rcu waits for a reader inside");
	uatomic_set(&reader_release, 1);
	pthread_join(g, NULL);
	pthread_join(r, NULL);
	ok(uatomic_read(&gp_done), "and returns once it left");
}

static volatile int handler_ongoing_before, handler_ongoing_inside;

static void handler(int sig)
{
	(void) sig;
	handler_ongoing_before = rcu_read_ongoing();
	rcu_read_lock();
	handler_ongoing_inside = rcu_read_ongoing();
	rcu_read_unlock();
}

static void test_nesting_and_signal(void)
{
	ok(!rcu_read_ongoing(), "not ongoing outside");
	rcu_read_lock();
	rcu_read_lock();
	rcu_read_unlock();
	ok(rcu_read_ongoing(), "ongoing after an inner unlock");
	signal(SIGUSR1, handler);
	raise(SIGUSR1);
	ok(handler_ongoing_before && handler_ongoing_inside,
		"a handler nests in the interrupted section");
	rcu_read_unlock();
	ok(!rcu_read_ongoing(), "not ongoing after the outer unlock");
	raise(SIGUSR1);
	ok(!handler_ongoing_before && handler_ongoing_inside,
		"a handler outside any section counts its own");
	synchronize_rcu();	/* the counts balance: this returns */
	ok(1, "grace period after handler sections");
}

#define NR_CB	1000
static int cb_order[NR_CB], cb_next;
static struct rcu_head cb_heads[NR_CB];

static void cb(struct rcu_head *h)
{
	cb_order[cb_next++] = (int) (h - cb_heads);
}

static void test_call_rcu(void)
{
	int i, in_order = 1;

	for (i = 0; i < NR_CB; i++)
		call_rcu(&cb_heads[i], cb);
	rcu_barrier();
	for (i = 0; i < NR_CB; i++)
		if (cb_order[i] != i)
			in_order = 0;
	ok(cb_next == NR_CB, "rcu_barrier waits for every callback");
	ok(in_order, "callbacks run in the order they were queued");
	ok(get_call_rcu_thread(get_default_call_rcu_data()) != pthread_self(),
		"callbacks run on the worker");
	ok(set_cpu_call_rcu_data(-1, NULL) == -EINVAL && errno == EINVAL,
		"set_cpu_call_rcu_data rejects a bad CPU");
}

static int fork_cb_ran;

static void fork_cb(struct rcu_head *h)
{
	(void) h;
	uatomic_set(&fork_cb_ran, 1);
}

static void test_fork(void)
{
	static struct rcu_head h;
	int status = -1;
	pid_t pid;

	/*
	 * Queued once the worker is paused: still pending at fork. The
	 * explicit hooks nest with the library's pthread_atfork() ones.
	 */
	call_rcu_before_fork();
	call_rcu(&h, fork_cb);
	pid = fork();
	if (pid == 0) {
		call_rcu_after_fork_child();
		rcu_barrier();
		synchronize_rcu();
		_exit(uatomic_read(&fork_cb_ran) ? 0 : 1);
	}
	call_rcu_after_fork_parent();
	rcu_barrier();
	waitpid(pid, &status, 0);
	ok(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"fork child runs the pending callback and has grace periods");
	ok(uatomic_read(&fork_cb_ran), "so does the parent");
}

/*
 * fork() with no hook called, from inside a nested section, while another
 * thread is inside a section and a third waits in synchronize_rcu() for
 * it: the parent must not deadlock (the fork handlers wait for nothing
 * inside a section), and the child, where neither thread exists, must
 * keep its own section open, then run grace periods and callbacks.
 */
static int busy_holder_in, busy_holder_release, busy_syncer_in, busy_child_cb;

static void *busy_holder(void *arg)
{
	(void) arg;
	rcu_read_lock();
	uatomic_set(&busy_holder_in, 1);
	while (!uatomic_read(&busy_holder_release))
		usleep(100);
	rcu_read_unlock();
	return NULL;
}

static void *busy_syncer(void *arg)
{
	(void) arg;
	uatomic_set(&busy_syncer_in, 1);
	synchronize_rcu();
	return NULL;
}

static void busy_child_cb_fn(struct rcu_head *h)
{
	(void) h;
	busy_child_cb++;
}

static int busy_child(void *arg)
{
	static struct rcu_head h;

	(void) arg;
	if (!rcu_read_ongoing())
		return 1;
	rcu_read_unlock();
	if (!rcu_read_ongoing())
		return 2;
	rcu_read_unlock();
	if (rcu_read_ongoing())
		return 3;
	synchronize_rcu();
	call_rcu(&h, busy_child_cb_fn);
	rcu_barrier();
	synchronize_rcu();
	return busy_child_cb == 1 ? 0 : 4;
}

static void test_fork_busy(void)
{
	pthread_t holder, syncer;
	enum stress_fork_result r;

	if (pthread_create(&holder, NULL, busy_holder, NULL))
		bail_out("pthread_create failed");
	while (!uatomic_read(&busy_holder_in))
		usleep(100);
	if (pthread_create(&syncer, NULL, busy_syncer, NULL))
		bail_out("pthread_create failed");
	/*
	 * Past its start-up (under ASan a thread still starting can hold the
	 * allocator lock that the child's call_rcu worker then needs).
	 */
	while (!uatomic_read(&busy_syncer_in))
		usleep(100);
	usleep(10000);	/* most likely waiting in synchronize_rcu() now */
	rcu_read_lock();
	rcu_read_lock();
	r = stress_fork_check(busy_child, NULL, 10000);
	rcu_read_unlock();
	rcu_read_unlock();
	uatomic_set(&busy_holder_release, 1);
	pthread_join(holder, NULL);
	pthread_join(syncer, NULL);
	ok(r == STRESS_FORK_OK, "fork inside a section, with no hook called, "
		"while another thread reads and one waits for a grace period: "
		"the child keeps its section, then has grace periods and "
		"callbacks (%s)", r == STRESS_FORK_OK ? "ok" :
		r == STRESS_FORK_HUNG ? "hung" : "failed");
}

/*
 * A thread waiting in rcu_barrier() when another forks: its completion is
 * queued on its stack, which the child's C library recycles for the
 * child's new threads (the call_rcu worker among them). The child's worker
 * must not run, or walk through, what those threads wrote there.
 */
static int dead_waiter_in, dead_first_ran;

static void dead_first_cb(struct rcu_head *h)
{
	(void) h;
	uatomic_set(&dead_first_ran, 1);
}

static void *dead_waiter(void *arg)
{
	(void) arg;
	uatomic_set(&dead_waiter_in, 1);
	rcu_barrier();
	return NULL;
}

static void *stack_scribbler(void *arg)
{
	volatile char buf[256 * 1024];
	size_t i;

	(void) arg;
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char) 0xa5;
	return NULL;
}

static int dead_child_cb;

static void dead_child_cb_fn(struct rcu_head *h)
{
	(void) h;
	dead_child_cb++;
}

static int dead_waiter_child(void *arg)
{
	static struct rcu_head h;
	pthread_t t[4];
	int i;

	(void) arg;
	rcu_read_unlock();
	/* New threads take the stacks of the parent's threads. */
	for (i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, stack_scribbler, NULL))
			return 1;
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	call_rcu(&h, dead_child_cb_fn);
	rcu_barrier();
	synchronize_rcu();
	return dead_child_cb == 1 ? 0 : 2;
}

static void test_fork_dead_waiter(void)
{
	static struct rcu_head first;
	enum stress_fork_result r;
	pthread_t waiter;

	/*
	 * This thread's section holds the worker in the grace period of a
	 * first batch, so that the waiter's completion stays queued.
	 */
	rcu_read_lock();
	call_rcu(&first, dead_first_cb);
	usleep(20000);	/* the worker takes the first batch */
	if (pthread_create(&waiter, NULL, dead_waiter, NULL))
		bail_out("pthread_create failed");
	while (!uatomic_read(&dead_waiter_in))
		usleep(100);
	usleep(20000);	/* the waiter queues its completion */
	r = stress_fork_check(dead_waiter_child, NULL, 10000);
	rcu_read_unlock();
	pthread_join(waiter, NULL);
	if (STRESS_UNDER_TSAN) {
		skip(1, "ThreadSanitizer: the child's threads reuse the "
			"parent's stacks (%s)", r == STRESS_FORK_OK ? "ok" :
			r == STRESS_FORK_HUNG ? "hung" : "failed");
		return;
	}
	ok(r == STRESS_FORK_OK && uatomic_read(&dead_first_ran),
		"fork while a thread waits in rcu_barrier(): the child's "
		"worker does not touch the dead waiter's recycled stack (%s)",
		r == STRESS_FORK_OK ? "ok" : r == STRESS_FORK_HUNG ? "hung" :
		"failed");
}

/*
 * fork() from a callback: the fork handlers must not wait for the worker
 * (the caller), and in the child the calling thread stays the worker.
 */
static int cb_fork_result = -1;

static int cb_fork_child(void *arg)
{
	static struct rcu_head h;

	(void) arg;
	synchronize_rcu();
	call_rcu(&h, dead_child_cb_fn);
	synchronize_rcu();
	return 0;
}

static void cb_fork(struct rcu_head *h)
{
	(void) h;
	uatomic_set(&cb_fork_result,
		(int) stress_fork_check(cb_fork_child, NULL, 10000));
}

static void test_fork_from_callback(void)
{
	static struct rcu_head h;

	call_rcu(&h, cb_fork);
	rcu_barrier();
	ok(uatomic_read(&cb_fork_result) == STRESS_FORK_OK,
		"fork from a callback: no deadlock, the child has grace periods "
		"(%d)", uatomic_read(&cb_fork_result));
}

/*
 * fork() while a call_rcu callback takes the library's other locks: the
 * fork's preparation waits for the worker to finish its callback, so it
 * must not hold, meanwhile, a lock that the callback needs. The callback
 * sleeps so that the fork starts during it, then takes the worker's first
 * urcu_mutex (the mutex registry's lock) and frees into a per-CPU cache
 * (the cache's lock, on its slow path). The forking thread runs in a
 * helper: if fork() never returns, the test says so and ends the process.
 */
static struct urcu_mutex cb_locks_mutex = URCU_MUTEX_INITIALIZER;
static struct urcu_percpu_cache *cb_locks_cache;
static int cb_locks_started, cb_locks_done, cb_locks_forked;
static int cb_locks_result = -1;

static void cb_locks_fn(struct rcu_head *h)
{
	int i;

	(void) h;
	uatomic_set(&cb_locks_started, 1);
	usleep(200000);
	urcu_mutex_lock(&cb_locks_mutex);
	urcu_mutex_unlock(&cb_locks_mutex);
	for (i = 0; i < 64; i++)
		urcu_percpu_cache_free(cb_locks_cache,
			urcu_percpu_cache_alloc(cb_locks_cache));
	urcu_percpu_cache_drain(cb_locks_cache);
	uatomic_set(&cb_locks_done, 1);
}

static int cb_locks_child(void *arg)
{
	(void) arg;
	urcu_mutex_lock(&cb_locks_mutex);
	urcu_mutex_unlock(&cb_locks_mutex);
	urcu_percpu_cache_free(cb_locks_cache,
		urcu_percpu_cache_alloc(cb_locks_cache));
	synchronize_rcu();
	return 0;
}

static void *cb_locks_forker(void *arg)
{
	(void) arg;
	uatomic_set(&cb_locks_result,
		(int) stress_fork_check(cb_locks_child, NULL, 10000));
	uatomic_set(&cb_locks_forked, 1);
	return NULL;
}

static void test_fork_callback_locks(void)
{
	static struct rcu_head h;
	struct call_rcu_data *crd;
	pthread_t t;
	int i;

	cb_locks_cache = urcu_percpu_cache_create(64, NULL);
	if (!cb_locks_cache)
		bail_out("urcu_percpu_cache_create failed");
	/* A worker of its own: its first urcu_mutex is the callback's. */
	crd = create_call_rcu_data(0, -1);
	if (!crd)
		bail_out("create_call_rcu_data failed");
	set_thread_call_rcu_data(crd);
	call_rcu(&h, cb_locks_fn);
	set_thread_call_rcu_data(NULL);
	while (!uatomic_read(&cb_locks_started))
		usleep(1000);
	if (pthread_create(&t, NULL, cb_locks_forker, NULL))
		bail_out("pthread_create failed");
	for (i = 0; i < 3000 && !uatomic_read(&cb_locks_forked); i++)
		usleep(10000);
	if (!uatomic_read(&cb_locks_forked)) {
		ok(0, "fork while a callback takes a mutex and a cache's "
			"locks: fork() has not returned in 30 s (deadlock)");
		fflush(stdout);
		_exit(exit_status());
	}
	pthread_join(t, NULL);
	rcu_barrier();
	ok(uatomic_read(&cb_locks_result) == STRESS_FORK_OK
			&& uatomic_read(&cb_locks_done),
		"fork while a callback takes its worker's first mutex and a "
		"cache's locks: fork() waits for the callback, the child locks, "
		"allocates and has grace periods (%d)",
		uatomic_read(&cb_locks_result));
	urcu_percpu_cache_destroy(cb_locks_cache);
}

static void test_flavor(void)
{
	ok(rcu_flavor.update_synchronize_rcu == urcu_rseq_synchronize_rcu
		&& rcu_flavor.update_call_rcu == urcu_rseq_call_rcu,
		"rcu_flavor is urcu_rseq_flavor");
	urcu_rseq_flavor.read_lock();
	ok(urcu_rseq_flavor.read_ongoing(), "flavor read_lock");
	urcu_rseq_flavor.read_unlock();
	urcu_rseq_flavor.update_synchronize_rcu();
	ok(!urcu_rseq_flavor.read_ongoing(), "flavor read_unlock");
}

/* cds_lfht on urcu_rseq_flavor. */
#define LFHT_KEYS	512
#define LFHT_POISON	0x6b6b6b6bUL

struct lnode {
	struct cds_lfht_node node;
	unsigned long key;
	unsigned long value;	/* key * 3 while live, poison once freed */
	struct rcu_head rh;
};

static struct cds_lfht *ht;
static int lfht_stop;
static unsigned long lfht_bad, lfht_lookups, lfht_frees;

static int match(struct cds_lfht_node *n, const void *key)
{
	return caa_container_of(n, struct lnode, node)->key
		== *(const unsigned long *) key;
}

static unsigned long hash(unsigned long k)
{
	return k * 0x9e3779b97f4a7c15UL;
}

static void lnode_free(struct rcu_head *rh)
{
	struct lnode *n = caa_container_of(rh, struct lnode, rh);

	CMM_STORE_SHARED(n->value, LFHT_POISON);
	free(n);
	uatomic_inc(&lfht_frees);
}

static void *lfht_reader(void *arg)
{
	struct cds_lfht_iter it;
	unsigned long k, n = 0, seed = (unsigned long) arg;

	while (!uatomic_read(&lfht_stop)) {
		seed = seed * 6364136223846793005UL + 1;
		k = (seed >> 33) % LFHT_KEYS;
		rcu_read_lock();
		cds_lfht_lookup(ht, hash(k), match, &k, &it);
		if (cds_lfht_iter_get_node(&it)) {
			struct lnode *ln = caa_container_of(
				cds_lfht_iter_get_node(&it), struct lnode, node);

			if (CMM_LOAD_SHARED(ln->value) != k * 3)
				uatomic_inc(&lfht_bad);
		}
		rcu_read_unlock();
		n++;
	}
	uatomic_add(&lfht_lookups, n);
	return NULL;
}

static void *lfht_writer(void *arg)
{
	struct cds_lfht_iter it;
	unsigned long k, seed = (unsigned long) arg;

	while (!uatomic_read(&lfht_stop)) {
		seed = seed * 6364136223846793005UL + 1;
		k = (seed >> 33) % LFHT_KEYS;
		rcu_read_lock();
		if (seed & (1UL << 20)) {
			struct lnode *ln = calloc(1, sizeof(*ln));

			cds_lfht_node_init(&ln->node);
			ln->key = k;
			ln->value = k * 3;
			if (cds_lfht_add_unique(ht, hash(k), match, &k,
					&ln->node) != &ln->node)
				free(ln);
		} else {
			cds_lfht_lookup(ht, hash(k), match, &k, &it);
			if (cds_lfht_iter_get_node(&it)
					&& !cds_lfht_del(ht, cds_lfht_iter_get_node(&it)))
				call_rcu(&caa_container_of(cds_lfht_iter_get_node(&it),
					struct lnode, node)->rh, lnode_free);
		}
		rcu_read_unlock();
	}
	return NULL;
}

static void test_lfht(void)
{
	pthread_t t[6];
	struct cds_lfht_iter it;
	struct lnode *ln;
	int i;

	/*
	 * Sized for every key and resized here, not CDS_LFHT_AUTO_RESIZE:
	 * liburcu-cds (0.13.2 and 0.15 alike) can stop resizing an
	 * auto-resize table for good (doc/urcu-rseq.md). The resizes still
	 * run the flavor's grace periods under the readers and writers.
	 */
	ht = cds_lfht_new_flavor(LFHT_KEYS, 16, 0, CDS_LFHT_ACCOUNTING,
		&urcu_rseq_flavor, NULL);
	ok(ht != NULL, "cds_lfht_new_flavor with urcu_rseq_flavor");
	if (!ht)
		return;
	for (i = 0; i < 6; i++)
		pthread_create(&t[i], NULL, i < 4 ? lfht_reader : lfht_writer,
			(void *) (unsigned long) (i + 1));
	for (i = 0; i < 6; i++) {
		usleep(50000);
		cds_lfht_resize(ht, i & 1 ? LFHT_KEYS : 16);
	}
	uatomic_set(&lfht_stop, 1);
	for (i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	rcu_read_lock();
	cds_lfht_for_each_entry(ht, &it, ln, node) {
		if (!cds_lfht_del(ht, &ln->node))
			call_rcu(&ln->rh, lnode_free);
	}
	rcu_read_unlock();
	rcu_barrier();
	diag("lfht: %lu lookups, %lu deferred frees, 6 resizes", lfht_lookups,
		lfht_frees);
	ok(lfht_bad == 0, "no lookup saw a freed node (%lu)", lfht_bad);
	ok(cds_lfht_destroy(ht, NULL) == 0, "table destroyed empty");
}

int main(void)
{
	plan_tests(24);
	test_nesting_and_signal();
	test_gp_waits();
	test_call_rcu();
	test_fork();
	test_fork_busy();
	test_fork_dead_waiter();
	test_fork_from_callback();
	test_fork_callback_locks();
	test_flavor();
	test_lfht();
	return exit_status();
}
