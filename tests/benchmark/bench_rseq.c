// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The thread layer's own rows: reading the CPU number, the RSEQ fence on
 * one CPU and on all of them while the other CPUs run rseq sections, and a
 * per-CPU rseq add against an atomic add on one shared word.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <urcu/arch.h>
#include <urcu/compiler.h>
#include <urcu/system.h>
#include <urcu/rseq.h>

#include "bench.h"

#define SLOT_STRIDE	(CAA_CACHE_LINE_SIZE / sizeof(intptr_t))

static intptr_t *slots;
static _Atomic intptr_t shared_word __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

static void op_sched_getcpu(void *arg, uint64_t iters)
{
	while (iters--)
		bench_keep(sched_getcpu());
}

static void op_rseq_cpu(void *arg, uint64_t iters)
{
	while (iters--)
		bench_keep(urcu_rseq_cpu());
}

static void op_atomic_add(void *arg, uint64_t iters)
{
	while (iters--)
		atomic_fetch_add_explicit(&shared_word, 1, memory_order_relaxed);
}

static void op_rseq_add(void *arg, uint64_t iters)
{
	while (iters--) {
		for (;;) {
			int idx = urcu_rseq_index(URCU_RSEQ_INDEX_CPU);

			if (caa_unlikely(idx < 0)) {
				urcu_rseq_atomic_addv(&slots[0], 1);
				break;
			}
			if (caa_likely(urcu_rseq_addv(URCU_RSEQ_INDEX_CPU,
					&slots[(idx + 1) * SLOT_STRIDE], 1, idx)
					== URCU_RSEQ_COMMITTED))
				break;
		}
	}
}

/* Background sections on every other CPU, so that fences have work to do. */
static int bg_stop;
static pthread_t bg_threads[64];
static int bg_nr;

static void *bg_worker(void *arg)
{
	while (!CMM_LOAD_SHARED(bg_stop))
		op_rseq_add(NULL, 1000);
	return NULL;
}

static int bg_setup(void *arg, unsigned int threads)
{
	int i, n = (int) bench_nr_cpus() - 1;

	CMM_STORE_SHARED(bg_stop, 0);
	for (i = 0; i < n && i < 64; i++)
		if (pthread_create(&bg_threads[bg_nr], NULL, bg_worker, NULL) == 0)
			bg_nr++;
	return 0;
}

static void bg_teardown(void *arg)
{
	CMM_STORE_SHARED(bg_stop, 1);
	while (bg_nr > 0)
		pthread_join(bg_threads[--bg_nr], NULL);
}

static void op_membarrier(void *arg, uint64_t iters)
{
	while (iters--)
		syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

static void op_fence_all(void *arg, uint64_t iters)
{
	while (iters--)
		urcu_rseq_fence();
}

static void op_fence_one(void *arg, uint64_t iters)
{
	int nr = urcu_rseq_nr_cpus();

	while (iters--)
		urcu_rseq_fence_cpu((urcu_rseq_cpu() + 1) % nr);
}

int main(int argc, char **argv)
{
	struct bench *b = bench_init("bench_rseq", argc, argv);
	static const struct bench_def cpu[] = {
		{ .name = "sched_getcpu", .op = op_sched_getcpu },
		{ .name = "urcu_rseq_cpu", .op = op_rseq_cpu },
	};
	static const struct bench_def add[] = {
		{ .name = "atomic_add_shared_word", .op = op_atomic_add },
		{ .name = "urcu_rseq_addv_percpu", .op = op_rseq_add },
	};
	static const struct bench_def fence[] = {
		{ .name = "membarrier_private_expedited", .op = op_membarrier,
		  .setup = bg_setup, .teardown = bg_teardown },
		{ .name = "urcu_rseq_fence_all_cpus", .op = op_fence_all,
		  .setup = bg_setup, .teardown = bg_teardown },
		{ .name = "urcu_rseq_fence_cpu_one", .op = op_fence_one,
		  .setup = bg_setup, .teardown = bg_teardown },
	};

	slots = calloc((size_t) (urcu_rseq_nr_cpus() + 1) * SLOT_STRIDE,
			sizeof(intptr_t));
	syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
	urcu_rseq_fence_available();
	BENCH_GROUP(b, "cpu_id", BENCH_THREADS(1, 2), cpu);
	BENCH_GROUP(b, "add", BENCH_THREADS(1, 2, 8), add);
	BENCH_GROUP(b, "fence", BENCH_THREADS(1), fence);
	return bench_run(b);
}
