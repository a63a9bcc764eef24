// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU pool: every function and every error; layout (stride, packing,
 * alignment, no overlap across chunks); zeroing on reuse; untouched indices
 * not resident; concurrent allocation with ownership tags; per-CPU adds
 * through rseq into pool items sum exactly.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <urcu/arch.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/pool.h>

#include "tap.h"
#include "stress.h"

static void test_errors(void)
{
	struct urcu_percpu_pool_attr attr = { 0, 0 };
	struct urcu_percpu_pool *pool;
	void *p;

	errno = 0;
	ok(!urcu_percpu_pool_create(0, NULL) && errno == EINVAL,
		"item_len 0: EINVAL");
	errno = 0;
	ok(!urcu_percpu_pool_create(URCU_PERCPU_STRIDE + 1, NULL)
		&& errno == EINVAL, "item_len above the stride: EINVAL");
	attr.flags = 1U << 20;
	errno = 0;
	ok(!urcu_percpu_pool_create(8, &attr) && errno == EINVAL,
		"unknown flag: EINVAL");
	attr.flags = URCU_PERCPU_NUMA | URCU_PERCPU_NO_NUMA;
	errno = 0;
	ok(!urcu_percpu_pool_create(8, &attr) && errno == EINVAL,
		"NUMA and NO_NUMA together: EINVAL");
	attr.flags = 0;
	attr.nr_index = -1;
	errno = 0;
	ok(!urcu_percpu_pool_create(8, &attr) && errno == EINVAL,
		"negative nr_index: EINVAL");
	errno = 0;
	ok(urcu_percpu_pool_destroy(NULL) == -1 && errno == EINVAL,
		"destroy(NULL): EINVAL");
	errno = 0;
	ok(!urcu_percpu_zmalloc(NULL) && errno == EINVAL,
		"zmalloc(NULL): EINVAL");
	errno = 0;
	urcu_percpu_free(NULL);
	ok(errno == 0, "free(NULL) is a no-op");

	pool = urcu_percpu_pool_create(URCU_PERCPU_STRIDE, NULL);
	ok(pool != NULL, "item_len equal to the stride is accepted");
	p = urcu_percpu_zmalloc(pool);
	ok(p != NULL, "one stride-sized item");
	errno = 0;
	ok(urcu_percpu_pool_destroy(pool) == -1 && errno == EBUSY,
		"destroy with a live item: EBUSY");
	urcu_percpu_free(p);
	ok(urcu_percpu_pool_destroy(pool) == 0,
		"destroy once the item is freed");
}

static void test_bad_free(void)
{
#ifdef URCU_RSEQ_DEBUG
	skip(5, "debug build: a bad free aborts by design");
#else
	struct urcu_percpu_pool *pool = urcu_percpu_pool_create(16, NULL);
	char *p = (char *) urcu_percpu_zmalloc(pool);
	void *heap = malloc(16);
	int stack;

	errno = 0;
	urcu_percpu_free(&stack);
	ok(errno == EINVAL, "free of a stack address: EINVAL");
	errno = 0;
	urcu_percpu_free(heap);
	ok(errno == EINVAL, "free of a malloc pointer: EINVAL");
	errno = 0;
	urcu_percpu_free(p + 1);
	ok(errno == EINVAL, "free of a misaligned pointer: EINVAL");
	errno = 0;
	urcu_percpu_free(urcu_percpu_ptr(p, 1));
	ok(errno == EINVAL, "free of another index's copy: EINVAL");
	urcu_percpu_free(p);
	errno = 0;
	urcu_percpu_free(p);
	ok(errno == EINVAL, "double free: EINVAL");
	free(heap);
	urcu_percpu_pool_destroy(pool);
#endif
}

static void test_layout(void)
{
	static const size_t lens[] = { 1, 3, 8, 24, 64, 100, 4096 };
	static const size_t sizes[] = { 1, 4, 8, 32, 64, 128, 4096 };
	struct urcu_percpu_pool *pool;
	unsigned int i;
	int nr = urcu_percpu_pool_nr_index(NULL);

	ok(nr == 0, "nr_index(NULL) is 0");
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		char *a, *b;

		pool = urcu_percpu_pool_create(lens[i], NULL);
		a = (char *) urcu_percpu_zmalloc(pool);
		b = (char *) urcu_percpu_zmalloc(pool);
		ok(pool && urcu_percpu_pool_item_size(pool) == sizes[i]
			&& ((uintptr_t) a % sizes[i]) == 0
			&& ((uintptr_t) b % sizes[i]) == 0
			&& (a + sizes[i] <= b || b + sizes[i] <= a)
			&& ((uintptr_t) a / CAA_CACHE_LINE_SIZE
			    == ((uintptr_t) a + (sizes[i] < CAA_CACHE_LINE_SIZE
					? sizes[i] : 1) - 1) / CAA_CACHE_LINE_SIZE),
			"item_len %zu: size %zu, aligned, packed, no line straddled",
			lens[i], sizes[i]);
		urcu_percpu_free(a);
		urcu_percpu_free(b);
		urcu_percpu_pool_destroy(pool);
	}
	pool = urcu_percpu_pool_create(8, NULL);
	ok(urcu_percpu_pool_nr_index(pool) == urcu_rseq_nr_cpus(),
		"default nr_index is urcu_rseq_nr_cpus() (%d)",
		urcu_rseq_nr_cpus());
	ok(urcu_percpu_pool_index_mode(pool) == URCU_RSEQ_INDEX_CPU,
		"default index is the CPU number");
	urcu_percpu_pool_destroy(pool);
	{
		struct urcu_percpu_pool_attr attr = { URCU_PERCPU_MM_CID, 0 };

		pool = urcu_percpu_pool_create(8, &attr);
		ok(urcu_percpu_pool_index_mode(pool)
			== urcu_rseq_index_mode(URCU_RSEQ_INDEX_MM_CID),
			"URCU_PERCPU_MM_CID: mm_cid where the kernel has it");
		urcu_percpu_pool_destroy(pool);
	}
}

/* Many items over several chunks: every copy distinct and zero at first. */
#define MANY	10000

static void test_many(void)
{
	struct urcu_percpu_pool_attr attr = { 0, 4 };
	struct urcu_percpu_pool *pool = urcu_percpu_pool_create(16, &attr);
	static uint64_t *items[MANY];
	int i, k, zero = 1, tags = 1, reused_zero = 1;

	for (i = 0; i < MANY; i++) {
		items[i] = (uint64_t *) urcu_percpu_zmalloc(pool);
		if (!items[i])
			break;
		for (k = 0; k < 4; k++) {
			uint64_t *q = (uint64_t *) urcu_percpu_ptr(items[i], k);

			if (q[0] || q[1])
				zero = 0;
			q[0] = (uint64_t) i * 4 + (uint64_t) k;
			q[1] = ~q[0];
		}
	}
	ok(i == MANY, "%d items of 16 bytes on 4 indices (%d chunks)",
		MANY, MANY / (int) (URCU_PERCPU_STRIDE / 16) + 1);
	ok(zero, "every copy of a fresh item is zero");
	for (i = 0; i < MANY; i++) {
		for (k = 0; k < 4; k++) {
			uint64_t *q = (uint64_t *) urcu_percpu_ptr(items[i], k);

			if (q[0] != (uint64_t) i * 4 + (uint64_t) k
					|| q[1] != ~q[0])
				tags = 0;
		}
	}
	ok(tags, "no two copies overlap (tags intact)");
	for (i = 0; i < MANY; i += 2)
		urcu_percpu_free(items[i]);
	for (i = 0; i < MANY; i += 2) {
		items[i] = (uint64_t *) urcu_percpu_zmalloc(pool);
		for (k = 0; k < 4; k++) {
			uint64_t *q = (uint64_t *) urcu_percpu_ptr(items[i], k);

			if (q[0] || q[1])
				reused_zero = 0;
		}
	}
	ok(reused_zero, "reused items are zero again on every index");
	for (i = 0; i < MANY; i++)
		urcu_percpu_free(items[i]);
	ok(urcu_percpu_pool_destroy(pool) == 0, "destroy after freeing all");
}

/* Resident pages of the process, from /proc/self/statm. */
static long resident_pages(void)
{
	long size = 0, res = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = -1;
		fclose(f);
	}
	return res;
}

#ifndef __SANITIZE_THREAD__
/*
 * Does a read fault on private anonymous memory map the kernel's zero page?
 * Some virtual machines' kernels are configured not to (Firecracker guests
 * booted with pvm_no_zero_page=1): there every page read becomes resident,
 * in any program, and reading untouched indices costs memory.
 */
static bool kernel_maps_zero_page(void)
{
	long page = sysconf(_SC_PAGESIZE), before, after;
	size_t len = 256 * (size_t) page, off;
	char *p = (char *) mmap(NULL, len, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return true;
	(void) madvise(p, len, MADV_NOHUGEPAGE);
	before = resident_pages();
	for (off = 0; off < len; off += (size_t) page)
		(void) *(volatile char *) (p + off);
	after = resident_pages();
	munmap(p, len);
	return after - before < 128;
}
#endif

/*
 * Pages of an index that nobody writes are not resident; reading them maps
 * the zero page, which costs no resident memory either (where the kernel
 * has a zero page).
 */
static void test_untouched(void)
{
	struct urcu_percpu_pool_attr attr = { 0, 64 };
	struct urcu_percpu_pool *pool = urcu_percpu_pool_create(8, &attr);
	long page = sysconf(_SC_PAGESIZE), before, after;
	size_t npages = URCU_PERCPU_STRIDE / (size_t) page, j;
	unsigned char *vec = (unsigned char *) calloc(npages, 1);
	static uint64_t *items[4096];
	uint64_t sum = 0;
	int i, k, resident0 = 0, resident63 = 0;
	/* The first item of a new pool starts its first chunk. */
	char *start;

	for (i = 0; i < 4096; i++) {
		items[i] = (uint64_t *) urcu_percpu_zmalloc(pool);
		*items[i] = 1;
	}
	start = (char *) items[0];
	if (mincore(start, URCU_PERCPU_STRIDE, vec) == 0)
		for (j = 0; j < npages; j++)
			resident0 += vec[j] & 1;
	if (mincore(urcu_percpu_ptr(start, 63), URCU_PERCPU_STRIDE, vec) == 0)
		for (j = 0; j < npages; j++)
			resident63 += vec[j] & 1;
	ok(resident0 == (int) (4096 * 8 / page) && resident63 == 0,
		"index 0 written: %d resident pages; index 63 untouched: %d",
		resident0, resident63);
	before = resident_pages();
	for (k = 1; k < 64; k++)
		for (i = 0; i < 4096; i++)
			sum += *(volatile uint64_t *) urcu_percpu_ptr(items[i], k);
	after = resident_pages();
#ifdef __SANITIZE_THREAD__
	/* TSan's shadow of every page read is resident in the process too. */
	ok(sum == 0, "reading 63 untouched indices reads zeroes");
	diag("resident pages not checked under ThreadSanitizer (%ld added)",
		after - before);
#else
	if (!kernel_maps_zero_page()) {
		ok(sum == 0, "reading 63 untouched indices reads zeroes");
		diag("resident pages not checked: this kernel maps no zero page on "
		     "a read fault (%ld pages added, as in any program)",
			after - before);
	} else {
		ok(sum == 0 && before > 0 && after - before < (long) npages * 8,
			"reading 63 untouched indices (%zu pages) adds %ld resident pages",
			63 * npages, after - before);
	}
#endif
	for (i = 0; i < 4096; i++)
		urcu_percpu_free(items[i]);
	urcu_percpu_pool_destroy(pool);
	free(vec);
}

/* Concurrent zmalloc/free with tags: an item handed out twice is caught. */
#define OWN_SLOTS	64

struct own_arg {
	struct urcu_percpu_pool *pool;
	unsigned long errors, allocs;
};

static void own_worker(struct stress_thread *t)
{
	struct own_arg *a = (struct own_arg *) t->arg;
	uint64_t *mine[OWN_SLOTS] = { 0 };
	uint64_t tag = ((uint64_t) t->id << 32) | 1;
	int i, nr = urcu_percpu_pool_nr_index(a->pool);
	unsigned long errors = 0, allocs = 0;

	while (!stress_should_stop(t)) {
		i = (int) stress_rand_below(t, OWN_SLOTS);
		if (mine[i]) {
			int k;

			for (k = 0; k < nr; k++)
				if (*(uint64_t *) urcu_percpu_ptr(mine[i], k)
						!= tag + (uint64_t) i)
					errors++;
			urcu_percpu_free(mine[i]);
			mine[i] = NULL;
		} else {
			int k;

			mine[i] = (uint64_t *) urcu_percpu_zmalloc(a->pool);
			if (!mine[i]) {
				errors++;
				continue;
			}
			allocs++;
			for (k = 0; k < nr; k++) {
				uint64_t *q = (uint64_t *) urcu_percpu_ptr(mine[i], k);

				if (*q)
					errors++;
				*q = tag + (uint64_t) i;
			}
		}
	}
	for (i = 0; i < OWN_SLOTS; i++)
		urcu_percpu_free(mine[i]);
	uatomic_add(&a->errors, errors);
	uatomic_add(&a->allocs, allocs);
}

static void test_concurrent(void)
{
	struct own_arg a = { NULL, 0, 0 };

	a.pool = urcu_percpu_pool_create(8, NULL);
	stress_run_ms(own_worker, &a, 8, STRESS_QUIET, 200, NULL);
	ok(a.errors == 0 && a.allocs > 0,
		"8 threads zmalloc/free: %lu allocations, %lu ownership errors",
		a.allocs, a.errors);
	ok(urcu_percpu_pool_destroy(a.pool) == 0, "pool empty afterwards");
}

/* rseq adds into pool items, each thread on its index, sum exact. */
#define ADDS	200000

static struct urcu_percpu_pool *add_pool;
static intptr_t *add_item, add_fallback;

static void add_worker(struct stress_thread *t)
{
	int mode = urcu_percpu_pool_index_mode(add_pool), i;

	for (i = 0; i < ADDS; i++) {
		for (;;) {
			int idx = urcu_rseq_index(mode);

			if (idx < 0) {
				uatomic_add(&add_fallback, 1);
				break;
			}
			if (urcu_rseq_addv(mode, (intptr_t *)
					urcu_percpu_ptr(add_item, idx), 1, idx)
					== URCU_RSEQ_COMMITTED)
				break;
		}
	}
}

static void test_rseq_add(void)
{
	intptr_t sum = add_fallback = 0;
	int k;

	add_pool = urcu_percpu_pool_create(sizeof(intptr_t), NULL);
	add_item = (intptr_t *) urcu_percpu_zmalloc(add_pool);
	stress_run_ms(add_worker, NULL, 4, STRESS_QUIET | STRESS_SIGNALS, 1,
			NULL);
	for (k = 0; k < urcu_percpu_pool_nr_index(add_pool); k++)
		sum += *(intptr_t *) urcu_percpu_ptr(add_item, k);
	sum += add_fallback;
	ok(sum == 4 * ADDS, "rseq adds into per-CPU copies: %ld of %d",
		(long) sum, 4 * ADDS);
	urcu_percpu_free(add_item);
	urcu_percpu_pool_destroy(add_pool);
}

int main(void)
{
	plan_tests(12 + 5 + 11 + 5 + 2 + 2 + 1);
	test_errors();
	test_bad_free();
	test_layout();
	test_many();
	test_untouched();
	test_concurrent();
	test_rseq_add();
	return exit_status();
}
