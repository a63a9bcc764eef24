// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * defer_rcu() of urcu-rseq against liburcu's urcu-memb, in one run, on the
 * shared harness (bench.h):
 * - defer_rcu, no reader: one defer_rcu() of an empty function per
 *   operation, 1 and 2 threads. The cost includes the grace periods of the
 *   threads that drain their own full queue. URCU_RSEQ_BENCH_ITERS=1000
 *   gives the cost of 1,000 calls per thread.
 * - defer_rcu writes, 2 readers: liburcu's test_urcu_defer writer, one
 *   rcu_xchg_pointer() of a new object and one defer_rcu(free) of the old
 *   one per operation, while 2 threads read the pointer in a loop; ops/s
 *   is writes/s.
 * Baseline urcu-memb (registered threads, defer queues registered). What
 * is still queued after a run is drained in the teardown, untimed.
 */
#define _LGPL_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <urcu/urcu-memb.h>
#include <urcu/urcu-rseq.h>
#include <urcu/uatomic.h>

#include "bench.h"

static void noop(void *p)
{
	bench_keep(p);
}

static void op_defer_rseq(void *arg, uint64_t iters)
{
	while (iters--)
		urcu_rseq_defer_rcu(noop, arg);
}

static void op_defer_memb(void *arg, uint64_t iters)
{
	while (iters--)
		urcu_memb_defer_rcu(noop, arg);
}

static void memb_register(void *arg)
{
	urcu_memb_register_thread();
	urcu_memb_defer_register_thread();
}

static void memb_unregister(void *arg)
{
	urcu_memb_defer_unregister_thread();
	urcu_memb_unregister_thread();
}

static void rseq_register(void *arg)
{
	urcu_rseq_defer_register_thread();
}

static void rseq_unregister(void *arg)
{
	urcu_rseq_defer_unregister_thread();
}

/* Writes with readers. */
struct obj {
	unsigned long v;
};

static struct obj *shared_obj;
static int readers_stop;
static pthread_t readers[2];

static void *reader_rseq(void *arg)
{
	struct obj *o;

	while (!uatomic_read(&readers_stop)) {
		urcu_rseq_read_lock();
		o = rcu_dereference(shared_obj);
		if (o)
			bench_keep(o->v);
		urcu_rseq_read_unlock();
	}
	return NULL;
}

static void *reader_memb(void *arg)
{
	struct obj *o;

	urcu_memb_register_thread();
	while (!uatomic_read(&readers_stop)) {
		urcu_memb_read_lock();
		o = rcu_dereference(shared_obj);
		if (o)
			bench_keep(o->v);
		urcu_memb_read_unlock();
	}
	urcu_memb_unregister_thread();
	return NULL;
}

static int readers_setup(void *arg, unsigned int threads)
{
	void *(*fn)(void *) = arg;
	int i;

	uatomic_set(&readers_stop, 0);
	for (i = 0; i < 2; i++)
		if (pthread_create(&readers[i], NULL, fn, NULL))
			return -1;
	return 0;
}

static void readers_stop_join(void)
{
	int i;

	uatomic_set(&readers_stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(readers[i], NULL);
}

static void teardown_rseq(void *arg)
{
	if (arg)
		readers_stop_join();
	urcu_rseq_defer_barrier();
}

static void teardown_memb(void *arg)
{
	if (arg)
		readers_stop_join();
	urcu_memb_defer_barrier();
}

static struct obj *obj_new(void)
{
	struct obj *o = malloc(sizeof(*o));

	if (!o)
		abort();
	o->v = 1;
	return o;
}

static void op_write_rseq(void *arg, uint64_t iters)
{
	struct obj *old;

	while (iters--) {
		old = rcu_xchg_pointer(&shared_obj, obj_new());
		if (old)
			urcu_rseq_defer_rcu(free, old);
	}
}

static void op_write_memb(void *arg, uint64_t iters)
{
	struct obj *old;

	while (iters--) {
		old = rcu_xchg_pointer(&shared_obj, obj_new());
		if (old)
			urcu_memb_defer_rcu(free, old);
	}
}

int main(int argc, char **argv)
{
	struct bench *b = bench_init("bench_urcu_rseq_defer", argc, argv);
	static const struct bench_def defer[] = {
		{ .name = "urcu-memb", .op = op_defer_memb,
		  .thread_init = memb_register,
		  .thread_fini = memb_unregister, .teardown = teardown_memb },
		{ .name = "urcu-rseq", .op = op_defer_rseq,
		  .thread_init = rseq_register,
		  .thread_fini = rseq_unregister, .teardown = teardown_rseq },
	};
	static const struct bench_def writes[] = {
		{ .name = "urcu-memb", .op = op_write_memb,
		  .arg = (void *) reader_memb, .setup = readers_setup,
		  .thread_init = memb_register,
		  .thread_fini = memb_unregister, .teardown = teardown_memb },
		{ .name = "urcu-rseq", .op = op_write_rseq,
		  .arg = (void *) reader_rseq, .setup = readers_setup,
		  .thread_init = rseq_register,
		  .thread_fini = rseq_unregister, .teardown = teardown_rseq },
	};

	BENCH_GROUP(b, "defer_rcu, no reader", BENCH_THREADS(1, 2), defer);
	BENCH_GROUP(b, "defer_rcu writes, 2 readers", BENCH_THREADS(1, 2),
		writes);
	return bench_run(b);
}
