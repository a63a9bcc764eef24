// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU spinlock rows: uncontended local lock+unlock against
 * pthread_spin and pthread_mutex; sharded throughput against one global
 * pthread_spinlock_t and against per-CPU pthread_spinlock_t indexed by
 * sched_getcpu(); the remote path's latency (shard idle, or busy with a
 * local locker on its CPU); and what remote traffic on a shard costs its
 * local lockers.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <urcu/arch.h>
#include <urcu/compiler.h>
#include <urcu/system.h>
#include <urcu/percpu/lock.h>

#include "bench.h"

struct padded_spin {
	pthread_spinlock_t lock;
	unsigned long counter;
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

struct padded_counter {
	unsigned long counter;
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

static struct urcu_percpu_lock *plock;
static struct padded_counter *shard_data;
static struct padded_spin global_spin;
static struct padded_spin *cpu_spin;
static pthread_mutex_t global_mutex = PTHREAD_MUTEX_INITIALIZER;
static int nr_cpus;

static void op_spin(void *arg, uint64_t iters)
{
	while (iters--) {
		pthread_spin_lock(&global_spin.lock);
		global_spin.counter++;
		pthread_spin_unlock(&global_spin.lock);
	}
}

static void op_mutex(void *arg, uint64_t iters)
{
	while (iters--) {
		pthread_mutex_lock(&global_mutex);
		global_spin.counter++;
		pthread_mutex_unlock(&global_mutex);
	}
}

static void op_cpu_spin(void *arg, uint64_t iters)
{
	while (iters--) {
		int cpu = sched_getcpu();
		struct padded_spin *s = &cpu_spin[cpu < 0 ? 0 : cpu];

		pthread_spin_lock(&s->lock);
		s->counter++;
		pthread_spin_unlock(&s->lock);
	}
}

static void op_percpu_lock(void *arg, uint64_t iters)
{
	while (iters--) {
		int idx = urcu_percpu_lock(plock);

		shard_data[idx].counter++;
		urcu_percpu_unlock(plock, idx);
	}
}

/* The shard of the CPU after the caller's: usually another CPU's. */
static void op_lock_cpu_remote(void *arg, uint64_t iters)
{
	int cpu = (urcu_rseq_cpu() + 1) % nr_cpus;

	while (iters--) {
		urcu_percpu_lock_cpu(plock, cpu);
		shard_data[cpu].counter++;
		urcu_percpu_unlock(plock, cpu);
	}
}

/* Background thread pinned to CPU 1: local locker or remote requester. */
static int bg_stop, bg_mode;
static pthread_t bg_thread;
static bool bg_running;

enum { BG_LOCAL, BG_REMOTE };

static void pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *bg_worker(void *arg)
{
	pin_to(1);
	while (!CMM_LOAD_SHARED(bg_stop)) {
		if (bg_mode == BG_LOCAL) {
			op_percpu_lock(NULL, 1000);
		} else {
			int i;

			/* A remote request on shard 0 every few microseconds. */
			urcu_percpu_lock_cpu(plock, 0);
			shard_data[0].counter++;
			urcu_percpu_unlock(plock, 0);
			for (i = 0; i < 2000; i++)
				caa_cpu_relax();
		}
	}
	return NULL;
}

static int bg_setup(void *arg, unsigned int threads)
{
	if (bench_nr_cpus() < 2)
		return 1;
	bg_mode = (int) (intptr_t) arg;
	CMM_STORE_SHARED(bg_stop, 0);
	bg_running = pthread_create(&bg_thread, NULL, bg_worker, NULL) == 0;
	return bg_running ? 0 : 1;
}

static void bg_teardown(void *arg)
{
	CMM_STORE_SHARED(bg_stop, 1);
	if (bg_running)
		pthread_join(bg_thread, NULL);
	bg_running = false;
}

int main(int argc, char **argv)
{
	struct bench *b = bench_init("bench_percpu_lock", argc, argv);
	static const struct bench_def uncontended[] = {
		{ .name = "pthread_spin_lock", .op = op_spin },
		{ .name = "pthread_mutex_lock", .op = op_mutex },
		{ .name = "urcu_percpu_lock_local", .op = op_percpu_lock },
	};
	static const struct bench_def sharded[] = {
		{ .name = "global_pthread_spin", .op = op_spin },
		{ .name = "percpu_pthread_spin_getcpu", .op = op_cpu_spin },
		{ .name = "urcu_percpu_lock", .op = op_percpu_lock },
	};
	static const struct bench_def remote[] = {
		{ .name = "pthread_spin_lock", .op = op_spin },
		{ .name = "urcu_percpu_lock_cpu_remote_idle",
		  .op = op_lock_cpu_remote },
		{ .name = "urcu_percpu_lock_cpu_remote_busy",
		  .op = op_lock_cpu_remote, .arg = (void *) (intptr_t) BG_LOCAL,
		  .setup = bg_setup, .teardown = bg_teardown },
	};
	static const struct bench_def pending[] = {
		{ .name = "urcu_percpu_lock_local", .op = op_percpu_lock },
		{ .name = "urcu_percpu_lock_local_remote_traffic",
		  .op = op_percpu_lock, .arg = (void *) (intptr_t) BG_REMOTE,
		  .setup = bg_setup, .teardown = bg_teardown },
	};
	int i;

	nr_cpus = urcu_rseq_nr_cpus();
	plock = urcu_percpu_lock_create(0);
	shard_data = calloc((size_t) nr_cpus, sizeof(*shard_data));
	cpu_spin = calloc((size_t) nr_cpus, sizeof(*cpu_spin));
	if (!plock || !shard_data || !cpu_spin)
		return 1;
	pthread_spin_init(&global_spin.lock, PTHREAD_PROCESS_PRIVATE);
	for (i = 0; i < nr_cpus; i++)
		pthread_spin_init(&cpu_spin[i].lock, PTHREAD_PROCESS_PRIVATE);
	BENCH_GROUP(b, "uncontended", BENCH_THREADS(1), uncontended);
	BENCH_GROUP(b, "sharded", BENCH_THREADS(2, 8, 32), sharded);
	BENCH_GROUP(b, "remote", BENCH_THREADS(1), remote);
	BENCH_GROUP(b, "remote_pending", BENCH_THREADS(1), pending);
	i = bench_run(b);
	urcu_percpu_lock_destroy(plock);
	free(shard_data);
	free(cpu_spin);
	return i;
}
