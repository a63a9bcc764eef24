// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The rseq layer (urcu/rseq.h): where a thread runs, per-CPU counting with
 * one rseq critical section per increment, and the RSEQ fence.
 *
 * Worker threads count events in per-CPU slots of a buffer they reach
 * through a shared pointer, with urcu_rseq_deref_addv(): the pointer is
 * loaded inside the critical section. A collector swaps the pointer to a
 * second buffer and calls urcu_rseq_fence(): when it returns, every
 * increment that loaded the old pointer has committed or been aborted (and
 * will be retried on the new buffer), so the collector can drain the old
 * buffer exactly, with plain loads and stores, while the workers run.
 * Threads that cannot use rseq count on an atomic counter of their own.
 *
 * Exits 0 when the events drained plus those left equal the events counted.
 *
 * Build: cc rseq_cpu.c $(pkg-config --cflags --libs liburcu-rseq) -lpthread
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/rseq.h>

#define NR_THREADS	4
#define NR_EVENTS	500000

struct slot {
	intptr_t count;
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

static struct slot *buffers[2];
static struct slot *active;	/* what the workers add to */
static intptr_t fallback_count;	/* threads without rseq, atomic */
static int nr_cpus;
static int workers_done;

static void count_event(void)
{
	const int mode = URCU_RSEQ_INDEX_CPU;
	int cpu;

	for (;;) {
		cpu = urcu_rseq_index(mode);
		if (cpu < 0)
			break;		/* this thread cannot use rseq */
		if (urcu_rseq_deref_addv(mode, (void *const *) &active,
				(long) (cpu * sizeof(struct slot)), 1, cpu)
				== URCU_RSEQ_COMMITTED)
			return;
		/* Aborted (migrated, preempted, signal or fence): retry. */
	}
	urcu_rseq_atomic_addv(&fallback_count, 1);
}

static void *worker(void *arg)
{
	long i;

	printf("worker %ld starts on cpu %d (mm_cid %d, node %d), rseq %s\n",
			(long) arg, urcu_rseq_cpu(), urcu_rseq_mm_cid(),
			urcu_rseq_node(), urcu_rseq_available() ? "yes" : "no");
	for (i = 0; i < NR_EVENTS; i++)
		count_event();
	uatomic_inc(&workers_done);
	return NULL;
}

/* Swap buffers, fence, and return what the old buffer held (zeroing it). */
static intptr_t drain(void)
{
	struct slot *old = active;
	intptr_t sum = 0;
	int cpu;

	/* The new buffer's zeroes are visible before its pointer. */
	cmm_smp_wmb();
	CMM_STORE_SHARED(active, old == buffers[0] ? buffers[1] : buffers[0]);
	if (urcu_rseq_fence())
		return -1;
	for (cpu = 0; cpu < nr_cpus; cpu++) {
		sum += old[cpu].count;
		old[cpu].count = 0;
	}
	return sum;
}

int main(void)
{
	pthread_t tid[NR_THREADS];
	intptr_t drained = 0, left = 0, d;
	unsigned long rounds = 0;
	int cpu;
	long i;

	nr_cpus = urcu_rseq_nr_cpus();
	printf("main on cpu %d of %d possible; rseq %s, fence %s, mm_cid %s\n",
			urcu_rseq_cpu(), nr_cpus,
			urcu_rseq_available() ? "yes" : "no",
			urcu_rseq_fence_available() ? "yes" : "no",
			urcu_rseq_features & URCU_RSEQ_FEATURE_MM_CID ? "yes" : "no");
	/* struct slot is cache-line aligned: calloc() does not promise that. */
	for (i = 0; i < 2; i++) {
		void *p;

		if (posix_memalign(&p, _Alignof(struct slot),
				(size_t) nr_cpus * sizeof(struct slot)))
			return 1;
		memset(p, 0, (size_t) nr_cpus * sizeof(struct slot));
		buffers[i] = p;
	}
	active = buffers[0];
	for (i = 0; i < NR_THREADS; i++)
		if (pthread_create(&tid[i], NULL, worker, (void *) i))
			return 1;
	/* Without the fence, the buffers are only read after the workers end. */
	while (urcu_rseq_fence_available()
			&& uatomic_read(&workers_done) < NR_THREADS) {
		d = drain();
		if (d < 0) {
			perror("urcu_rseq_fence");
			return 1;
		}
		drained += d;
		rounds++;
	}
	for (i = 0; i < NR_THREADS; i++)
		pthread_join(tid[i], NULL);
	for (cpu = 0; cpu < nr_cpus; cpu++)
		left += buffers[0][cpu].count + buffers[1][cpu].count;
	left += uatomic_read(&fallback_count);
	printf("%ld events: %ld drained in %lu rounds while counting, %ld after\n",
			(long) NR_THREADS * NR_EVENTS, (long) drained, rounds,
			(long) left);
	free(buffers[0]);
	free(buffers[1]);
	return drained + left == (intptr_t) NR_THREADS * NR_EVENTS ? 0 : 1;
}
