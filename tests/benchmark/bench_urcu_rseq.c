// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu-rseq against liburcu's urcu-memb and urcu-bp, in one run, on the
 * shared harness (bench.h):
 * - read: an outermost read_lock()+read_unlock() pair, inline
 *   (_LGPL_SOURCE), 1/2/8 threads; baseline urcu-memb (registered threads);
 * - read side floor, 1 thread: two bare idx_addv sections per operation,
 *   the least urcu-rseq's read side can cost (see op_read_floor());
 * - synchronize_rcu with 10, 1000 and 10000 idle threads that have read in
 *   every flavor (urcu-memb's registered), blocked on a futex; one thread
 *   calls synchronize_rcu(); baseline urcu-bp, which scans its threads;
 * - call_rcu: one call_rcu() of a malloc'ed head freed by the callback per
 *   operation (the worker runs the callbacks meanwhile; the barrier that
 *   drains them is in the teardown, untimed: liburcu's worker sleeps 10 ms
 *   between batches, so a barrier inside the loop would time that sleep);
 *   baseline urcu-memb.
 * The idle threads are created by the groups' setup hook, once per count.
 */
#define _LGPL_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <urcu/urcu-memb.h>
#include <urcu/urcu-bp.h>
#include <urcu/urcu-rseq.h>
#include <urcu/uatomic.h>

#include "bench.h"

/* Read side. */
static void op_read_rseq(void *arg, uint64_t iters)
{
	while (iters--) {
		urcu_rseq_read_lock();
		bench_clobber();
		urcu_rseq_read_unlock();
	}
}

static void op_read_memb(void *arg, uint64_t iters)
{
	while (iters--) {
		urcu_memb_read_lock();
		bench_clobber();
		urcu_memb_read_unlock();
	}
}

static void op_read_bp(void *arg, uint64_t iters)
{
	while (iters--) {
		urcu_bp_read_lock();
		bench_clobber();
		urcu_bp_read_unlock();
	}
}

/*
 * Not a flavor: the floor of urcu-rseq's read side on this machine, the two
 * idx_addv sections that read_lock() and read_unlock() must run at least,
 * with the rseq area in a register and nothing else (no nesting word, no
 * period), on counters of its own. What the flavor's row costs above it is
 * its bookkeeping; what it costs in all is at least this.
 */
static intptr_t *floor_slots;	/* one 128-byte slot per CPU, and slot -1 */

static inline void floor_count(struct urcu_rseq_abi *rs, intptr_t *w)
{
	int r;

	while (caa_unlikely((r = _urcu_rseq_idx_addv_cpu(rs, w, 128, 1))
			!= URCU_RSEQ_COMMITTED)) {
		if (r == URCU_RSEQ_CMPFAIL
				&& urcu_rseq_index(URCU_RSEQ_INDEX_CPU) < 0) {
			uatomic_inc(w - 16);	/* no rseq: slot -1 */
			return;
		}
	}
}

static void op_read_floor(void *arg, uint64_t iters)
{
	struct urcu_rseq_abi *rs = urcu_rseq_area();

	while (iters--) {
		floor_count(rs, floor_slots);
		bench_clobber();
		floor_count(rs, floor_slots + 2);
	}
}

static int floor_setup(void *arg, unsigned int threads)
{
	size_t len = ((size_t) urcu_rseq_nr_cpus() + 1) * 128;
	void *p;

	if (floor_slots)
		return 0;
	if (posix_memalign(&p, 128, len))
		return -1;
	memset(p, 0, len);
	floor_slots = (intptr_t *) p + 16;
	return 0;
}

static void floor_register(void *arg)
{
	(void) urcu_rseq_thread_register();
}

static void memb_register(void *arg)
{
	urcu_memb_register_thread();
}

static void memb_unregister(void *arg)
{
	urcu_memb_unregister_thread();
}

/* Idle threads: they read once in every flavor, then sleep. */
static pthread_t *idle_tids;
static unsigned int idle_nr;
static int32_t idle_release;
static unsigned int idle_ready;

static void *idle_main(void *arg)
{
	urcu_memb_register_thread();
	urcu_memb_read_lock();
	urcu_memb_read_unlock();
	urcu_bp_read_lock();
	urcu_bp_read_unlock();
	urcu_rseq_read_lock();
	urcu_rseq_read_unlock();
	uatomic_inc(&idle_ready);
	while (!uatomic_read(&idle_release))
		syscall(SYS_futex, &idle_release, FUTEX_WAIT_PRIVATE, 0, NULL,
			NULL, 0);
	urcu_memb_unregister_thread();
	return NULL;
}

static void idle_stop(void)
{
	unsigned int i;

	uatomic_set(&idle_release, 1);
	syscall(SYS_futex, &idle_release, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
		NULL, 0);
	for (i = 0; i < idle_nr; i++)
		pthread_join(idle_tids[i], NULL);
	free(idle_tids);
	idle_tids = NULL;
	idle_nr = 0;
}

/* setup hook: @arg points to the idle thread count of the group. */
static int idle_setup(void *arg, unsigned int threads)
{
	unsigned int want = *(const unsigned int *) arg, i;
	pthread_attr_t attr;
	int err = 0;

	if (idle_nr == want)
		return 0;
	idle_stop();
	idle_tids = calloc(want, sizeof(*idle_tids));
	if (!idle_tids)
		return -1;
	idle_release = 0;
	idle_ready = 0;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < want; i++) {
		err = pthread_create(&idle_tids[i], &attr, idle_main, NULL);
		if (err)
			break;
	}
	pthread_attr_destroy(&attr);
	idle_nr = i;
	while (uatomic_read(&idle_ready) < idle_nr)
		usleep(1000);
	if (err) {
		fprintf(stderr, "bench_urcu_rseq: %u idle threads: %s\n",
			want, strerror(err));
		idle_stop();
		return -1;
	}
	return 0;
}

static void op_sync_rseq(void *arg, uint64_t iters)
{
	while (iters--)
		urcu_rseq_synchronize_rcu();
}

static void op_sync_memb(void *arg, uint64_t iters)
{
	while (iters--)
		urcu_memb_synchronize_rcu();
}

static void op_sync_bp(void *arg, uint64_t iters)
{
	while (iters--)
		urcu_bp_synchronize_rcu();
}

/* call_rcu. */
static void cb_free(struct rcu_head *h)
{
	free(h);
}

static struct rcu_head *head_new(void)
{
	struct rcu_head *h = malloc(sizeof(*h));

	if (!h)
		abort();
	return h;
}

static void op_call_rcu_rseq(void *arg, uint64_t iters)
{
	while (iters--) {
		urcu_rseq_call_rcu(head_new(), cb_free);
	}
}

static void op_call_rcu_memb(void *arg, uint64_t iters)
{
	while (iters--) {
		urcu_memb_call_rcu(head_new(), cb_free);
	}
}

/* Runs the callbacks still queued, so that no run pays for another's. */
static void rseq_drain(void *arg)
{
	urcu_rseq_barrier();
}

static void memb_drain(void *arg)
{
	urcu_memb_barrier();
}

static const unsigned int idle_counts[] = { 10, 1000, 10000 };
static const unsigned int no_idle;

int main(int argc, char **argv)
{
	struct bench *b = bench_init("bench_urcu_rseq", argc, argv);
	static const struct bench_def read[] = {
		{ .name = "urcu-memb", .op = op_read_memb,
		  .thread_init = memb_register,
		  .thread_fini = memb_unregister },
		{ .name = "urcu-bp", .op = op_read_bp },
		{ .name = "urcu-rseq", .op = op_read_rseq },
	};
	/* Without the idle threads, which would slow urcu-memb's worker. */
	static const struct bench_def call_rcu[] = {
		{ .name = "urcu-memb", .op = op_call_rcu_memb,
		  .arg = (void *) &no_idle, .setup = idle_setup,
		  .thread_init = memb_register,
		  .thread_fini = memb_unregister, .teardown = memb_drain },
		{ .name = "urcu-rseq", .op = op_call_rcu_rseq,
		  .arg = (void *) &no_idle, .setup = idle_setup,
		  .teardown = rseq_drain },
	};
	static const struct bench_def read_floor[] = {
		{ .name = "urcu-memb", .op = op_read_memb,
		  .thread_init = memb_register,
		  .thread_fini = memb_unregister },
		{ .name = "urcu-bp", .op = op_read_bp },
		{ .name = "floor: 2 idx_addv", .op = op_read_floor,
		  .setup = floor_setup, .thread_init = floor_register },
	};
	char group[3][48];
	unsigned int i;
	int ret;

	BENCH_GROUP(b, "read_lock+unlock", BENCH_THREADS(1, 2, 8), read);
	BENCH_GROUP(b, "read side floor", BENCH_THREADS(1), read_floor);
	for (i = 0; i < 3; i++) {
		void *n = (void *) &idle_counts[i];
		const struct bench_def sync[] = {
			{ .name = "urcu-bp", .op = op_sync_bp, .arg = n,
			  .setup = idle_setup },
			{ .name = "urcu-memb", .op = op_sync_memb, .arg = n,
			  .setup = idle_setup },
			{ .name = "urcu-rseq", .op = op_sync_rseq, .arg = n,
			  .setup = idle_setup },
		};

		snprintf(group[i], sizeof(group[i]),
			"synchronize_rcu, %u idle threads", idle_counts[i]);
		BENCH_GROUP(b, group[i], BENCH_THREADS(1), sync);
	}
	BENCH_GROUP(b, "call_rcu", BENCH_THREADS(1), call_rcu);
	ret = bench_run(b);
	idle_stop();
	return ret;
}
