// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * urcu_mutex against the locks it replaces, on one contended lock: every
 * thread loops lock, critical section, unlock. Cells: 2, 8 and 32 threads
 * (more threads than CPUs on a small machine) x critical sections of about
 * 15 ns, about 500 ns, and bimodal (99% ~15 ns, 1% ~100 us, a calibrated
 * busy loop, not a sleep). A fourth group adds 400 ns of work outside
 * the lock to 500 ns sections, at 2 and 8 threads: the lock then changes
 * hands at most sections, and a waiter slow to see it free leaves it idle.
 *
 * The server cell looks like a request handler: a section of 1-4 us
 * (uniform) and 10-50 us of work outside the lock, at 2x, 8x and 32x as
 * many threads as CPUs; server_busy runs it again with a spinning process
 * on every CPU (the harness's BENCH_HOG).
 *
 * Rows of each cell: pthread_mutex (normal, the baseline of the ratio
 * column), PTHREAD_MUTEX_ADAPTIVE_NP, pthread_spin, urcu_mutex with the
 * owner-running test off (fixed spin, then sleep: the ablation), and
 * urcu_mutex. The "signals" group then removes one signal of the
 * owner-running test at a time, with the full test as baseline, so each
 * signal shows what it is worth. ops/s is acquisitions per second;
 * cpu-ns/op the CPU time spent per acquisition; p50/p99 the wait to
 * acquire, timed on every 16th acquisition of each thread (two clock
 * reads, the second inside the section, the same for every lock); jain
 * the fairness of the acquisitions over the threads.
 *
 * Default run: 50 ms per repetition (URCU_RSEQ_BENCH_MS overrides;
 * BENCH_FULL=1 runs the harness's long setting).
 */
#include <pthread.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu/compiler.h>
#include <urcu/mutex.h>

#include "bench.h"

enum cs_kind { CS_SHORT, CS_500, CS_BIMODAL, CS_500_OUT, CS_SERVER };

static uint64_t loops_15ns, loops_400ns, loops_500ns, loops_100us, loops_1us;

/* Shared data the critical section writes, on its own cache line. */
static struct {
	uint64_t counter;
	uint64_t x;
} __attribute__((aligned(64))) data;

/* @n steps of a dependent chain from @x: a calibrated busy loop. */
static inline uint64_t chain(uint64_t x, uint64_t n)
{
	while (n--) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		bench_keep(x);
	}
	return x;
}

static inline void busy(uint64_t n)
{
	data.x = chain(data.x, n);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void calibrate(void)
{
	uint64_t n = 1 << 14, t, best = UINT64_MAX;
	int i;

	/* Best of several short runs: preemption only makes a run longer. */
	for (i = 0; i < 20; i++) {
		t = now_ns();
		busy(n);
		t = now_ns() - t;
		if (t < best)
			best = t;
	}
	t = best;
	loops_15ns = n * 15 / t;
	loops_400ns = n * 400 / t;
	loops_500ns = n * 500 / t;
	loops_100us = n * 100000 / t;
	loops_1us = n * 1000 / t;
	if (!loops_15ns)
		loops_15ns = 1;
}

static __thread uint64_t rng = 88172645463325252ULL;

static inline uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static inline void critical_section(enum cs_kind kind)
{
	data.counter++;
	switch (kind) {
	case CS_SHORT:
		busy(loops_15ns);
		break;
	case CS_500:
	case CS_500_OUT:
		busy(loops_500ns);
		break;
	case CS_BIMODAL:
		busy(next_rand() % 100 == 0 ? loops_100us : loops_15ns);
		break;
	case CS_SERVER:
		busy(loops_1us + next_rand() % (3 * loops_1us + 1));
		break;
	}
}

/* Work between two acquisitions, on the thread's own data. */
static __thread uint64_t own_x;

static inline void outside(enum cs_kind kind)
{
	if (kind == CS_500_OUT)
		own_x = chain(own_x, loops_400ns);
	else if (kind == CS_SERVER)
		own_x = chain(own_x, 10 * loops_1us
			+ next_rand() % (40 * loops_1us + 1));
}

/* Every 16th acquisition of a thread is timed: the wait to acquire. */
#define WAIT_SAMPLE_MASK	15
static __thread unsigned int acquisitions;

static inline uint64_t wait_start(void)
{
	return (++acquisitions & WAIT_SAMPLE_MASK) ? 0 : bench_now_ns();
}

static inline void wait_end(uint64_t t0)
{
	if (t0)
		bench_latency(bench_now_ns() - t0);
}

/* ---- The locks ---------------------------------------------------------- */

enum lock_kind { PT_NORMAL, PT_ADAPTIVE, PT_SPIN, URCU, URCU_OFF,
	URCU_NO_SAME_CPU, URCU_NO_HOLD_TIME, URCU_PROC };

struct cell {
	enum lock_kind lock;
	enum cs_kind cs;
};

static pthread_mutex_t pmutex;
static pthread_spinlock_t pspin;
static struct urcu_mutex umutex;

static int lock_setup(void *arg, unsigned int threads)
{
	struct cell *c = (struct cell *) arg;
	struct urcu_mutex_attr ua = URCU_MUTEX_ATTR_INITIALIZER;
	pthread_mutexattr_t pa;

	(void) threads;
	switch (c->lock) {
	case PT_NORMAL:
	case PT_ADAPTIVE:
		pthread_mutexattr_init(&pa);
		pthread_mutexattr_settype(&pa, c->lock == PT_NORMAL ?
			PTHREAD_MUTEX_NORMAL : PTHREAD_MUTEX_ADAPTIVE_NP);
		pthread_mutex_init(&pmutex, &pa);
		pthread_mutexattr_destroy(&pa);
		return 0;
	case PT_SPIN:
		return pthread_spin_init(&pspin, PTHREAD_PROCESS_PRIVATE);
	case URCU:
		break;
	case URCU_OFF:
		ua.owner_signals = URCU_MUTEX_OWNER_NONE;
		break;
	case URCU_NO_SAME_CPU:
		ua.owner_signals &= ~URCU_MUTEX_OWNER_SAME_CPU;
		break;
	case URCU_NO_HOLD_TIME:
		ua.owner_signals &= ~URCU_MUTEX_OWNER_HOLD_TIME;
		break;
	case URCU_PROC:
		ua.owner_signals |= URCU_MUTEX_OWNER_PROC_STAT;
		break;
	}
	return urcu_mutex_init(&umutex, &ua);
}

static void lock_teardown(void *arg)
{
	struct cell *c = (struct cell *) arg;

	if (c->lock == PT_NORMAL || c->lock == PT_ADAPTIVE)
		pthread_mutex_destroy(&pmutex);
	else if (c->lock == PT_SPIN)
		pthread_spin_destroy(&pspin);
	else
		urcu_mutex_destroy(&umutex);
}

static void op(void *arg, uint64_t iters)
{
	struct cell *c = (struct cell *) arg;
	enum cs_kind cs = c->cs;
	uint64_t t0;

	switch (c->lock) {
	case PT_NORMAL:
	case PT_ADAPTIVE:
		while (iters--) {
			t0 = wait_start();
			pthread_mutex_lock(&pmutex);
			wait_end(t0);
			critical_section(cs);
			pthread_mutex_unlock(&pmutex);
			outside(cs);
		}
		break;
	case PT_SPIN:
		while (iters--) {
			t0 = wait_start();
			pthread_spin_lock(&pspin);
			wait_end(t0);
			critical_section(cs);
			pthread_spin_unlock(&pspin);
			outside(cs);
		}
		break;
	default:
		while (iters--) {
			t0 = wait_start();
			urcu_mutex_lock(&umutex);
			wait_end(t0);
			critical_section(cs);
			urcu_mutex_unlock(&umutex);
			outside(cs);
		}
		break;
	}
}

/* The ceiling: the critical sections alone, one thread, no lock. */
static void op_alone(void *arg, uint64_t iters)
{
	enum cs_kind cs = ((struct cell *) arg)->cs;

	while (iters--)
		critical_section(cs);
}

static void add_ceiling(struct bench *b, const char *name, struct cell *cell)
{
	struct bench_case c;

	memset(&c, 0, sizeof(c));
	c.group = "ceiling";
	c.name = name;
	c.baseline = BENCH_NO_BASELINE;
	c.threads = 1;
	c.def.op = op_alone;
	c.def.arg = cell;
	bench_add(b, &c);
}

#define CELL(l, c)	(&(struct cell) { l, c })
#define DEF(n, l, c)	{ .name = n, .op = op, .arg = CELL(l, c),	\
			  .setup = lock_setup, .teardown = lock_teardown }
#define CELL_DEFS(c) {							\
	DEF("pthread_mutex", PT_NORMAL, c),				\
	DEF("pthread_mutex_adaptive_np", PT_ADAPTIVE, c),		\
	DEF("pthread_spin", PT_SPIN, c),				\
	DEF("urcu_mutex_owner_test_off", URCU_OFF, c),			\
	DEF("urcu_mutex", URCU, c),					\
}

/*
 * Whether urcu_mutex owners ask the kernel not to be preempted (Linux 7.0+
 * built with the extension; URCU_MUTEX_SLICE_EXT=0 turns it off): a
 * thread's first lock turns it on, which prctl then reports.
 */
static const char *slice_extension_state(void)
{
	struct urcu_mutex m = URCU_MUTEX_INITIALIZER;
	int on;

	urcu_mutex_lock(&m);
	urcu_mutex_unlock(&m);
	on = prctl(79 /* PR_RSEQ_SLICE_EXTENSION */, 1 /* _GET */, 0, 0, 0);
	return on == 1 ? "on" : on == 0 ? "off (turned off)"
		: "absent (this kernel offers none to this thread)";
}

int main(int argc, char **argv)
{
	struct bench *b;
	const struct bench_def cs15[] = CELL_DEFS(CS_SHORT);
	const struct bench_def cs500[] = CELL_DEFS(CS_500);
	const struct bench_def bimodal[] = CELL_DEFS(CS_BIMODAL);
	const struct bench_def out400[] = CELL_DEFS(CS_500_OUT);
	const struct bench_def server[] = CELL_DEFS(CS_SERVER);
	const unsigned int n = bench_nr_cpus();
	const struct bench_def signals[] = {
		DEF("urcu_mutex", URCU, CS_BIMODAL),
		DEF("urcu_mutex_no_same_cpu", URCU_NO_SAME_CPU, CS_BIMODAL),
		DEF("urcu_mutex_no_hold_time", URCU_NO_HOLD_TIME, CS_BIMODAL),
		DEF("urcu_mutex_plus_proc_stat", URCU_PROC, CS_BIMODAL),
	};

	if (!getenv("BENCH_FULL"))
		setenv("URCU_RSEQ_BENCH_MS", "50", 0);
	b = bench_init("bench_mutex", argc, argv);
	calibrate();
	fprintf(stderr, "bench_mutex: busy loop %llu iterations = 15 ns, "
		"%llu = 500 ns, %llu = 100 us\n",
		(unsigned long long) loops_15ns,
		(unsigned long long) loops_500ns,
		(unsigned long long) loops_100us);
	fprintf(stderr, "bench_mutex: the kernel's time-slice extension: %s\n",
		slice_extension_state());
	BENCH_GROUP(b, "cs_15ns", BENCH_THREADS(2, 8, 32), cs15);
	BENCH_GROUP(b, "cs_500ns", BENCH_THREADS(2, 8, 32), cs500);
	BENCH_GROUP(b, "bimodal", BENCH_THREADS(2, 8, 32), bimodal);
	BENCH_GROUP(b, "cs_500ns_400ns_outside", BENCH_THREADS(2, 8), out400);
	BENCH_GROUP(b, "server_1-4us_in_10-50us_out",
		BENCH_THREADS(2 * n, 8 * n, 32 * n), server);
	BENCH_GROUP_FLAGS(b, "server_1-4us_in_10-50us_out_busy",
		BENCH_THREADS(2 * n, 8 * n, 32 * n), server, BENCH_HOG);
	BENCH_GROUP(b, "signals_bimodal", BENCH_THREADS(8, 32), signals);
	add_ceiling(b, "cs_15ns_no_lock", CELL(PT_NORMAL, CS_SHORT));
	add_ceiling(b, "cs_500ns_no_lock", CELL(PT_NORMAL, CS_500));
	add_ceiling(b, "bimodal_no_lock", CELL(PT_NORMAL, CS_BIMODAL));
	return bench_run(b);
}
