// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU counter rows: urcu_percpu_counter_inc against an atomic add on
 * one shared word (the thing it replaces), against an array of per-CPU
 * atomics indexed by sched_getcpu(), and against a thread-local plain
 * increment (the limit); read and read_reset of one counter; and resident
 * memory for 100,000 counters, printed after the timed rows.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>
#include <unistd.h>
#include <urcu/arch.h>
#include <urcu/compiler.h>
#include <urcu/percpu/counter.h>

#include "bench.h"

#define SLOT_STRIDE	(CAA_CACHE_LINE_SIZE / sizeof(_Atomic intptr_t))
#define NR_MEM_COUNTERS	100000

static struct urcu_percpu_counter *counter;
static _Atomic intptr_t shared_word __attribute__((aligned(CAA_CACHE_LINE_SIZE)));
static _Atomic intptr_t *cpu_slots;	/* one cache line per CPU */
static __thread intptr_t tls_count;

static void op_atomic_shared(void *arg, uint64_t iters)
{
	while (iters--)
		atomic_fetch_add_explicit(&shared_word, 1, memory_order_relaxed);
}

static void op_percpu_inc(void *arg, uint64_t iters)
{
	struct urcu_percpu_counter *c = counter;

	while (iters--)
		urcu_percpu_counter_inc(c);
}

static void op_atomic_getcpu(void *arg, uint64_t iters)
{
	while (iters--)
		atomic_fetch_add_explicit(
			&cpu_slots[(size_t) sched_getcpu() * SLOT_STRIDE], 1,
			memory_order_relaxed);
}

static void op_tls_inc(void *arg, uint64_t iters)
{
	while (iters--) {
		tls_count++;
		bench_clobber();	/* one load, add, store per increment */
	}
}

static void op_read(void *arg, uint64_t iters)
{
	while (iters--)
		bench_keep(urcu_percpu_counter_read(counter));
}

static void op_read_reset(void *arg, uint64_t iters)
{
	while (iters--)
		bench_keep(urcu_percpu_counter_read_reset(counter));
}

static void op_atomic_read(void *arg, uint64_t iters)
{
	while (iters--)
		bench_keep(atomic_load_explicit(&shared_word,
				memory_order_relaxed));
}

static void op_atomic_xchg(void *arg, uint64_t iters)
{
	while (iters--)
		bench_keep(atomic_exchange(&shared_word, 0));
}

static long resident_kib(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/*
 * One thread visits every CPU in turn and increments every counter there:
 * a CPU-indexed counter then has a slot in use on each CPU, an mm_cid one
 * only on concurrency id 0 (one thread running at a time).
 */
static void mem_row(const char *name, unsigned int flags)
{
	static struct urcu_percpu_counter *cs[NR_MEM_COUNTERS];
	long before = resident_kib(), after;
	int cpu, i, ncpu = (int) bench_nr_cpus();
	cpu_set_t set, old;

	sched_getaffinity(0, sizeof(old), &old);
	for (i = 0; i < NR_MEM_COUNTERS; i++)
		cs[i] = urcu_percpu_counter_create(flags);
	for (cpu = 0; cpu < CPU_SETSIZE && ncpu > 0; cpu++) {
		if (!CPU_ISSET(cpu, &old))
			continue;
		ncpu--;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
		for (i = 0; i < NR_MEM_COUNTERS; i++)
			urcu_percpu_counter_inc(cs[i]);
	}
	sched_setaffinity(0, sizeof(old), &old);
	after = resident_kib();
	printf("memory %-34s %6d counters %8ld KiB resident %6.1f bytes/counter\n",
		name, NR_MEM_COUNTERS, after - before,
		(after - before) * 1024.0 / NR_MEM_COUNTERS);
	for (i = 0; i < NR_MEM_COUNTERS; i++)
		urcu_percpu_counter_destroy(cs[i]);
	/* Give the descriptors' pages back, so the next row pays its own. */
	malloc_trim(0);
}

static void mem_row_padded(void)
{
	long before = resident_kib(), after;
	size_t n = (size_t) NR_MEM_COUNTERS * (size_t) urcu_rseq_nr_cpus()
		* SLOT_STRIDE, i;
	_Atomic intptr_t *a = calloc(n, sizeof(*a));

	for (i = 0; i < n; i += SLOT_STRIDE)
		atomic_fetch_add_explicit(&a[i], 1, memory_order_relaxed);
	after = resident_kib();
	printf("memory %-34s %6d counters %8ld KiB resident %6.1f bytes/counter\n",
		"padded_atomic_per_cpu_array", NR_MEM_COUNTERS, after - before,
		(after - before) * 1024.0 / NR_MEM_COUNTERS);
	free(a);
}

int main(int argc, char **argv)
{
	struct bench *b = bench_init("bench_percpu_counter", argc, argv);
	static const struct bench_def vs_atomic[] = {
		{ .name = "atomic_fetch_add_shared_word", .op = op_atomic_shared },
		{ .name = "urcu_percpu_counter_inc", .op = op_percpu_inc },
		{ .name = "atomic_per_cpu_sched_getcpu", .op = op_atomic_getcpu },
	};
	static const struct bench_def vs_local[] = {
		{ .name = "thread_local_plain_inc", .op = op_tls_inc },
		{ .name = "urcu_percpu_counter_inc", .op = op_percpu_inc },
	};
	static const struct bench_def read[] = {
		{ .name = "atomic_load_shared_word", .op = op_atomic_read },
		{ .name = "urcu_percpu_counter_read", .op = op_read },
	};
	static const struct bench_def reset[] = {
		{ .name = "atomic_xchg_shared_word", .op = op_atomic_xchg },
		{ .name = "urcu_percpu_counter_read_reset", .op = op_read_reset },
	};

	cpu_slots = calloc((size_t) urcu_rseq_nr_cpus() * SLOT_STRIDE,
			sizeof(*cpu_slots));
	counter = urcu_percpu_counter_create(0);
	if (!counter || !cpu_slots)
		return 1;
	printf("# counter mode: %s\n", urcu_percpu_counter_is_atomic(counter) ?
			"all-atomic (no RSEQ fence)" : urcu_rseq_available() ?
			"rseq" : "fallback slot (no rseq)");
	mem_row("urcu_percpu_counter_cpu", 0);
	mem_row("urcu_percpu_counter_mm_cid", URCU_PERCPU_MM_CID);
	mem_row_padded();
	fflush(stdout);
	BENCH_GROUP(b, "inc", BENCH_THREADS(1, 2, 8, 32), vs_atomic);
	BENCH_GROUP(b, "inc_vs_local", BENCH_THREADS(1, 2, 8, 32), vs_local);
	BENCH_GROUP(b, "read", BENCH_THREADS(1), read);
	BENCH_GROUP(b, "read_reset", BENCH_THREADS(1), reset);
	return bench_run(b);
}
