// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU counters: every function and error, in each of the counter's
 * ways to add (rseq by CPU, rseq by mm_cid, the fallback slot of threads
 * without rseq, the all-atomic mode), and a short exactness check with a
 * concurrent read_reset loop (the long one is
 * tests/regression/stress_percpu_counter.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/counter.h>

#include "tap.h"
#include "stress.h"

enum way { WAY_CPU, WAY_MM_CID, WAY_FALLBACK, WAY_ATOMIC, NR_WAYS };
static const char *way_name[NR_WAYS] = {
	"cpu", "mm_cid", "fallback slot", "all-atomic"
};

static struct urcu_percpu_counter *make(enum way w)
{
	struct urcu_percpu_counter *c = urcu_percpu_counter_create(
			w == WAY_MM_CID ? URCU_PERCPU_MM_CID : 0);

	/* Test hook: the mode is fixed at create and nothing ran yet. */
	if (c && w == WAY_ATOMIC)
		c->mode = URCU_PERCPU_COUNTER_ATOMIC;
	return c;
}

static void add(struct urcu_percpu_counter *c, enum way w, intptr_t v)
{
	if (w == WAY_FALLBACK)
		urcu_percpu_counter_add_slow(c, v);	/* what a thread without rseq runs */
	else
		urcu_percpu_counter_add(c, v);
}

static void test_api(void)
{
	errno = 0;
	ok(!urcu_percpu_counter_create(1U << 9) && errno == EINVAL,
		"unknown flag: EINVAL");
	urcu_percpu_counter_destroy(NULL);
	ok(1, "destroy(NULL) is a no-op");
	ok(!urcu_percpu_counter_is_atomic(NULL), "is_atomic(NULL) is 0");
}

static void test_single(enum way w)
{
	struct urcu_percpu_counter *c = make(w);
	int i;

	ok(c && urcu_percpu_counter_read(c) == 0, "%s: new counter reads 0",
		way_name[w]);
	for (i = 0; i < 1000; i++)
		urcu_percpu_counter_inc(c);
	add(c, w, 500);
	add(c, w, -200);
	ok(urcu_percpu_counter_read(c) == 1300, "%s: read after adds",
		way_name[w]);
	ok(urcu_percpu_counter_read_reset(c) == 1300, "%s: read_reset",
		way_name[w]);
	ok(urcu_percpu_counter_read(c) == 0
		&& urcu_percpu_counter_read_reset(c) == 0,
		"%s: zero after reset", way_name[w]);
	add(c, w, 7);
	urcu_percpu_counter_read_reset(c);
	add(c, w, 5);
	ok(urcu_percpu_counter_read(c) == 5
		&& urcu_percpu_counter_read_reset(c) == 5,
		"%s: both buffers counted after two resets", way_name[w]);
	add(c, w, -3);
	ok(urcu_percpu_counter_read_reset(c) == -3, "%s: negative total",
		way_name[w]);
	urcu_percpu_counter_destroy(c);
}

/* The exact-sum stress runs until the reader has reset this many times. */
#define MIN_RESETS	8

/* Concurrent adds, a read_reset loop, and an exact total at the end. */
struct exact_arg {
	struct urcu_percpu_counter *c;
	enum way way;
	intptr_t added;
	intptr_t reset_sum;
	unsigned long resets;
};

static void exact_worker(struct stress_thread *t)
{
	struct exact_arg *a = (struct exact_arg *) t->arg;
	intptr_t mine = 0;

	if (t->id == 0) {
		/* The reader: drains while the others count. */
		intptr_t sum = 0;
		unsigned long n = 0;

		while (!stress_should_stop(t) || n < MIN_RESETS) {
			sum += urcu_percpu_counter_read_reset(a->c);
			uatomic_set(&a->resets, ++n);
		}
		a->reset_sum = sum;
		return;
	}
	/*
	 * The adders keep going until the reader has reset a few times: on
	 * a loaded machine it may not get a time slice (or through the
	 * fence's system call) within the nominal duration.
	 */
	while (!stress_should_stop(t)
			|| uatomic_read(&a->resets) < MIN_RESETS) {
		intptr_t v = (intptr_t) stress_rand_below(t, 4);

		/* The fallback way mixes both kinds of thread. */
		if (a->way == WAY_FALLBACK && (t->id & 1))
			urcu_percpu_counter_add_slow(a->c, v);
		else
			urcu_percpu_counter_add(a->c, v);
		mine += v;
	}
	uatomic_add(&a->added, mine);
}

static void test_exact(enum way w)
{
	struct exact_arg a = { make(w), w, 0, 0, 0 };
	intptr_t total;

	stress_run_ms(exact_worker, &a, 9, STRESS_QUIET | STRESS_SIGNALS
			| STRESS_MIGRATIONS, 150, NULL);
	total = a.reset_sum + urcu_percpu_counter_read(a.c);
	ok(total == a.added && a.resets >= MIN_RESETS,
		"%s: 8 adders, read_reset loop: %ld added, %ld counted (%lu resets)",
		way_name[w], (long) a.added, (long) total, a.resets);
	urcu_percpu_counter_destroy(a.c);
}

int main(void)
{
	int w;

	plan_tests(3 + NR_WAYS * 7 + 2);
	test_api();
	for (w = 0; w < NR_WAYS; w++) {
		test_single((enum way) w);
		test_exact((enum way) w);
	}
	{
		struct urcu_percpu_counter *c = urcu_percpu_counter_create(0);

		ok(urcu_percpu_counter_is_atomic(c)
			== !urcu_rseq_fence_available(),
			"all-atomic exactly when the fence is unavailable (%s)",
			urcu_rseq_fence_available() ? "available" : "absent");
		urcu_percpu_counter_destroy(c);
	}
	{
		/* Many counters: the pool grows and reuses items. */
		static struct urcu_percpu_counter *cs[20000];
		int i, good = 1;

		for (i = 0; i < 20000; i++) {
			cs[i] = urcu_percpu_counter_create(i & 1 ? URCU_PERCPU_MM_CID : 0);
			if (!cs[i] || urcu_percpu_counter_read(cs[i]) != 0)
				good = 0;
			else
				urcu_percpu_counter_add(cs[i], i);
		}
		for (i = 0; i < 20000; i++)
			if (good && urcu_percpu_counter_read_reset(cs[i]) != i)
				good = 0;
		for (i = 0; i < 20000; i++)
			urcu_percpu_counter_destroy(cs[i]);
		ok(good, "20,000 counters, each with its own value");
	}
	return exit_status();
}
