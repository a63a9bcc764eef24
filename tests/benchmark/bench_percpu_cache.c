// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU object cache rows: alloc+free pairs of 64- and 256-byte objects
 * (each thread allocates a burst of BURST objects, writes them, frees them:
 * one op is one pair) with urcu_percpu_cache against malloc/free (the
 * baseline) and against a simple per-thread cache (a __thread free list
 * bounded at 256 objects, backed by malloc); producer/consumer (one thread
 * allocates and passes objects through a ring, another frees them); and
 * memory rows (peak and after-free resident memory for 200,000 objects).
 *
 * Built twice: bench_percpu_cache against glibc's malloc, and, where
 * configure found it, bench_percpu_cache_tcmalloc with -DBASELINE_TCMALLOC
 * linked with -ltcmalloc_minimal, whose malloc rows are then tcmalloc's and
 * which runs only those and the cache's (the other rows do not depend on
 * the allocator).
 */
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <urcu/arch.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/cache.h>

#include "bench.h"

#ifdef BASELINE_TCMALLOC
#define MALLOC_NAME	"tcmalloc"
#define PROGRAM		"bench_percpu_cache_tcmalloc"
#else
#define MALLOC_NAME	"glibc_malloc"
#define PROGRAM		"bench_percpu_cache"
#endif

#define BURST		8
#define TLS_MAX		256
#define RING		1024
#define NR_MEM		200000

struct size_arg {
	size_t size;
	struct urcu_percpu_cache *cache;
};

static struct size_arg s64 = { 64, NULL }, s256 = { 256, NULL };
/*
 * The same with URCU_PERCPU_CACHE_STATS: what exact alloc/free counts cost.
 * Not in the tcmalloc program, whose rows are its baseline and the cache.
 */
static struct size_arg s64_stats = { 64, NULL }, s256_stats = { 256, NULL };

struct tls_node {
	struct tls_node *next;
};

/* The simple per-thread cache: one list per thread, per size. */
static __thread struct tls_node *tls_list[2];
static __thread unsigned int tls_count[2];

static void *tls_alloc(size_t size)
{
	int k = size > 64;
	struct tls_node *n = tls_list[k];

	if (n) {
		tls_list[k] = n->next;
		tls_count[k]--;
		return n;
	}
	return malloc(size);
}

static void tls_free(size_t size, void *p)
{
	int k = size > 64;
	struct tls_node *n = (struct tls_node *) p;

	if (tls_count[k] >= TLS_MAX) {
		free(p);
		return;
	}
	n->next = tls_list[k];
	tls_list[k] = n;
	tls_count[k]++;
}

static void tls_flush(void *arg)
{
	int k;

	for (k = 0; k < 2; k++) {
		while (tls_list[k]) {
			struct tls_node *n = tls_list[k];

			tls_list[k] = n->next;
			free(n);
		}
		tls_count[k] = 0;
	}
}

static void op_malloc(void *arg, uint64_t iters)
{
	struct size_arg *a = (struct size_arg *) arg;
	void *o[BURST];
	uint64_t done;
	int i;

	for (done = 0; done < iters; done += BURST) {
		for (i = 0; i < BURST; i++) {
			o[i] = malloc(a->size);
			*(volatile char *) o[i] = 1;
		}
		for (i = 0; i < BURST; i++)
			free(o[i]);
	}
}

static void op_cache(void *arg, uint64_t iters)
{
	struct size_arg *a = (struct size_arg *) arg;
	struct urcu_percpu_cache *c = a->cache;
	void *o[BURST];
	uint64_t done;
	int i;

	for (done = 0; done < iters; done += BURST) {
		for (i = 0; i < BURST; i++) {
			o[i] = urcu_percpu_cache_alloc(c);
			*(volatile char *) o[i] = 1;
		}
		for (i = 0; i < BURST; i++)
			urcu_percpu_cache_free(c, o[i]);
	}
}

#ifndef BASELINE_TCMALLOC
static void op_tls(void *arg, uint64_t iters)
{
	struct size_arg *a = (struct size_arg *) arg;
	void *o[BURST];
	uint64_t done;
	int i;

	for (done = 0; done < iters; done += BURST) {
		for (i = 0; i < BURST; i++) {
			o[i] = tls_alloc(a->size);
			*(volatile char *) o[i] = 1;
		}
		for (i = 0; i < BURST; i++)
			tls_free(a->size, o[i]);
	}
}
#endif

/*
 * Producer/consumer: thread 0 allocates and puts objects in a ring,
 * thread 1 takes and frees them. A thread that finds the other gone (its
 * run is over) stops waiting; teardown frees what the ring still holds.
 */
enum pc_kind { PC_MALLOC, PC_CACHE, PC_TLS };

struct pc {
	enum pc_kind kind;
	struct urcu_percpu_cache *cache;
	unsigned int id;
};

static struct {
	void *slot[RING];
	unsigned long head __attribute__((aligned(128)));	/* producer */
	unsigned long tail __attribute__((aligned(128)));	/* consumer */
	int gone[2] __attribute__((aligned(128)));
} ring;

static struct pc pc_args[3][2];

static void *pc_alloc(struct pc *p)
{
	switch (p->kind) {
	case PC_CACHE:
		return urcu_percpu_cache_alloc(p->cache);
	case PC_TLS:
		return tls_alloc(64);
	default:
		return malloc(64);
	}
}

static void pc_free(struct pc *p, void *o)
{
	switch (p->kind) {
	case PC_CACHE:
		urcu_percpu_cache_free(p->cache, o);
		break;
	case PC_TLS:
		tls_free(64, o);
		break;
	default:
		free(o);
	}
}

/* Spinning on a shared machine starves the other side: yield. */
static void ring_wait(void)
{
	static __thread unsigned int spins;

	if (++spins % 64)
		caa_cpu_relax();
	else
		sched_yield();
}

static void op_pc(void *arg, uint64_t iters)
{
	struct pc *p = (struct pc *) arg;

	if (p->id == 0) {
		while (iters--) {
			unsigned long h = ring.head;
			void *o = pc_alloc(p);

			*(volatile char *) o = 1;
			while (h - CMM_LOAD_SHARED(ring.tail) >= RING) {
				if (uatomic_read(&ring.gone[1])) {
					pc_free(p, o);
					o = NULL;
					break;
				}
				ring_wait();
			}
			if (!o)
				continue;
			/* The consumer is done with the slot: pairs with its mb. */
			cmm_smp_mb();
			ring.slot[h % RING] = o;
			/* Pairs with the consumer's rmb. */
			cmm_smp_wmb();
			CMM_STORE_SHARED(ring.head, h + 1);
		}
		return;
	}
	while (iters--) {
		unsigned long t = ring.tail;
		void *o;

		while (CMM_LOAD_SHARED(ring.head) == t) {
			if (uatomic_read(&ring.gone[0]))
				return;
			ring_wait();
		}
		/* Pairs with the producer's wmb. */
		cmm_smp_rmb();
		o = ring.slot[t % RING];
		/* Pairs with the producer's mb before it reuses the slot. */
		cmm_smp_mb();
		CMM_STORE_SHARED(ring.tail, t + 1);
		pc_free(p, o);
	}
}

static void *pc_thread_arg(void *arg, unsigned int id)
{
	return &((struct pc *) arg)[id & 1];
}

static int pc_setup(void *arg, unsigned int threads)
{
	ring.head = ring.tail = 0;
	ring.gone[0] = ring.gone[1] = 0;
	return 0;
}

static void pc_thread_fini(void *arg)
{
	struct pc *p = (struct pc *) arg;

	uatomic_set(&ring.gone[p->id], 1);
	if (p->kind == PC_TLS)
		tls_flush(NULL);
}

static void pc_teardown(void *arg)
{
	struct pc *p = (struct pc *) arg;

	while (ring.tail != ring.head)
		pc_free(p, ring.slot[ring.tail++ % RING]);
	if (p->kind == PC_TLS)
		tls_flush(NULL);
}

static long statm_kib(void)
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

/* Peak resident memory: reset with clear_refs 5 (Linux 4.0+), read VmHWM. */
static void reset_peak(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");

	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

static long peak_kib(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static void mem_row(const char *name, size_t size, enum pc_kind kind)
{
	static void *o[NR_MEM];
	struct urcu_percpu_cache *c = NULL;
	long base, peak, after;
	int i;

	if (kind == PC_CACHE)
		c = urcu_percpu_cache_create(size, NULL);
	malloc_trim(0);
	base = statm_kib();
	reset_peak();
	for (i = 0; i < NR_MEM; i++) {
		o[i] = c ? urcu_percpu_cache_alloc(c) : malloc(size);
		memset(o[i], 1, size);
	}
	for (i = 0; i < NR_MEM; i++) {
		if (c)
			urcu_percpu_cache_free(c, o[i]);
		else
			free(o[i]);
	}
	peak = peak_kib() - base;
	if (c)
		urcu_percpu_cache_drain(c);
	else
		malloc_trim(0);
	after = statm_kib() - base;
	printf("memory %-28s %4zu bytes x %d: peak %+7ld KiB (%5.1f bytes/object), "
		"after free+%s %+6ld KiB\n", name, size, NR_MEM, peak,
		peak * 1024.0 / NR_MEM, c ? "drain" : "trim", after);
	if (c)
		urcu_percpu_cache_destroy(c);
}

int main(int argc, char **argv)
{
	struct bench *b;
	static const struct bench_def pair64[] = {
		{ .name = MALLOC_NAME "_free", .op = op_malloc, .arg = &s64 },
		{ .name = "urcu_percpu_cache", .op = op_cache, .arg = &s64 },
#ifndef BASELINE_TCMALLOC
		{ .name = "urcu_percpu_cache_stats", .op = op_cache,
			.arg = &s64_stats },
		{ .name = "thread_local_freelist", .op = op_tls, .arg = &s64,
			.thread_fini = tls_flush },
#endif
	};
	static const struct bench_def pair256[] = {
		{ .name = MALLOC_NAME "_free", .op = op_malloc, .arg = &s256 },
		{ .name = "urcu_percpu_cache", .op = op_cache, .arg = &s256 },
#ifndef BASELINE_TCMALLOC
		{ .name = "urcu_percpu_cache_stats", .op = op_cache,
			.arg = &s256_stats },
		{ .name = "thread_local_freelist", .op = op_tls, .arg = &s256,
			.thread_fini = tls_flush },
#endif
	};
	static const struct bench_def pc[] = {
		{ .name = MALLOC_NAME "_prod_cons", .op = op_pc,
			.arg = pc_args[PC_MALLOC], .setup = pc_setup,
			.teardown = pc_teardown, .thread_arg = pc_thread_arg,
			.thread_fini = pc_thread_fini },
		{ .name = "urcu_percpu_cache_prod_cons", .op = op_pc,
			.arg = pc_args[PC_CACHE], .setup = pc_setup,
			.teardown = pc_teardown, .thread_arg = pc_thread_arg,
			.thread_fini = pc_thread_fini },
#ifndef BASELINE_TCMALLOC
		{ .name = "thread_local_freelist_prod_cons", .op = op_pc,
			.arg = pc_args[PC_TLS], .setup = pc_setup,
			.teardown = pc_teardown, .thread_arg = pc_thread_arg,
			.thread_fini = pc_thread_fini },
#endif
	};
	static const struct urcu_percpu_cache_attr stats_attr = {
		.flags = URCU_PERCPU_CACHE_STATS,
	};
	int k;

	/*
	 * 35 rows (the tcmalloc program: 18, its baseline and the cache; the
	 * stats and free-list rows do not depend on the allocator and run
	 * here only): keep the default run near 15 s.
	 */
	setenv("URCU_RSEQ_BENCH_MS", "70", 0);
	b = bench_init(PROGRAM, argc, argv);
	s64.cache = urcu_percpu_cache_create(64, NULL);
	s256.cache = urcu_percpu_cache_create(256, NULL);
	s64_stats.cache = urcu_percpu_cache_create(64, &stats_attr);
	s256_stats.cache = urcu_percpu_cache_create(256, &stats_attr);
	if (!s64.cache || !s256.cache || !s64_stats.cache || !s256_stats.cache)
		return 1;
	for (k = 0; k < 3; k++) {
		pc_args[k][0] = (struct pc) { (enum pc_kind) k, s64.cache, 0 };
		pc_args[k][1] = (struct pc) { (enum pc_kind) k, s64.cache, 1 };
	}
	printf("# cache mode: %s; malloc: %s; %d-object bursts per thread\n",
		s64.cache->mode == URCU_PERCPU_CACHE_LOCKED ?
			"locked (no RSEQ fence)" : urcu_rseq_available() ?
			"rseq" : "depot mutex (no rseq)", MALLOC_NAME, BURST);
	mem_row(MALLOC_NAME, 64, PC_MALLOC);
	mem_row("urcu_percpu_cache", 64, PC_CACHE);
	mem_row(MALLOC_NAME, 256, PC_MALLOC);
	mem_row("urcu_percpu_cache", 256, PC_CACHE);
	fflush(stdout);
	BENCH_GROUP(b, "pair_64", BENCH_THREADS(1, 2, 8, 32), pair64);
	BENCH_GROUP(b, "pair_256", BENCH_THREADS(1, 2, 8, 32), pair256);
	BENCH_GROUP(b, "prod_cons_64", BENCH_THREADS(2), pc);
	return bench_run(b);
}
