// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tests/utils/stress.h - the shared stress harness: N worker threads that
 * run one function until told to stop, optionally under a signal storm
 * (a no-op SIGUSR1 handler interrupting the workers round-robin every
 * URCU_RSEQ_STRESS_SIGNAL_US, default 50 us) and forced migrations (a
 * thread re-pinning a random worker to a random CPU every
 * URCU_RSEQ_STRESS_MIGRATE_US, default 100 us).
 *
 * Durations: stress_duration_ms() is URCU_RSEQ_STRESS_MS from the
 * environment, or 300 ms, so that `make check` stays short and
 * `make regtest` (URCU_RSEQ_STRESS_MS=10000) runs the same code long.
 *
 * Workers poll stress_should_stop(); they are joined before stress_stop()
 * or stress_run() returns, so everything they wrote is visible then.
 * The harness only fails the test (bail_out) when it cannot create its
 * threads. SIGUSR1 belongs to the harness while a storm runs.
 */
#ifndef URCU_RSEQ_TESTS_STRESS_H
#define URCU_RSEQ_TESTS_STRESS_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <urcu/system.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags for stress_start() and stress_run(). */
#define STRESS_SIGNALS		(1U << 0)	/* signal storm on the workers */
#define STRESS_MIGRATIONS	(1U << 1)	/* random re-pinning of workers */
#define STRESS_PIN		(1U << 2)	/* pin worker i to CPU i mod n first */
#define STRESS_QUIET		(1U << 3)	/* no diag() summary at stop */

#define STRESS_SIGNAL		SIGUSR1

struct stress_group;

/* What a worker is given; it owns everything but @stop. */
struct stress_thread {
	void *arg;			/* as passed to stress_start() */
	unsigned int id;		/* 0 .. nr_threads - 1 */
	unsigned int nr_threads;
	uint64_t rng;			/* xorshift state, distinct per thread */
	const int *stop;		/* read through stress_should_stop() */
	/* Harness-private below. */
	pthread_t tid;
	int last_pin;
	unsigned long signals;
	void (*fn)(struct stress_thread *t);
};

typedef void (*stress_fn)(struct stress_thread *t);

/* Counts for one run, filled in by stress_stop()/stress_run(). */
struct stress_report {
	unsigned int threads;
	unsigned long elapsed_ms;
	unsigned long signals;		/* handler runs in this run's workers */
	unsigned long migrations;	/* re-pins to a different CPU */
};

static inline bool stress_should_stop(const struct stress_thread *t)
{
	return CMM_LOAD_SHARED(*t->stop) != 0;
}

/* xorshift64*: fast, per thread, good enough to pick CPUs and slots. */
static inline uint64_t stress_xorshift(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t stress_rand(struct stress_thread *t)
{
	return stress_xorshift(&t->rng);
}

/* Uniform enough in [0, n) for n far below 2^32. */
static inline uint32_t stress_rand_below(struct stress_thread *t, uint32_t n)
{
	return (uint32_t) (((stress_rand(t) >> 32) * n) >> 32);
}

/* A non-zero seed derived from @salt and the clock. */
uint64_t stress_seed(uint64_t salt);

/* URCU_RSEQ_STRESS_MS, or 300 ms when unset or invalid. */
unsigned long stress_duration_ms(void);
/* CPUs the process was allowed to run on when it started (at least 1). */
int stress_nr_cpus(void);
/* The @index-th of those CPUs (wraps around), for pinning. */
int stress_cpu_at(int index);
/* Pin the calling thread to @cpu; 0 or an errno value. */
int stress_pin_self(int cpu);
#define pin_self(cpu)	stress_pin_self(cpu)
/* Let the calling thread run on every CPU allowed at start again. */
int stress_unpin_self(void);
/* Signals handled by the harness's handler in this process so far. */
unsigned long stress_signals_total(void);
/*
 * Optional work for the storm's handler, run in the interrupted worker
 * (e.g. a read-side section that must nest inside whatever the worker was
 * doing). It must be async-signal-safe (errno is saved around it).
 * NULL: none. Set it before stress_start(); it stays set until changed.
 */
void stress_set_signal_hook(void (*hook)(struct stress_thread *t));

/*
 * Start @nr_threads workers running @fn(t) with t->arg = @arg, plus the
 * storm and migration threads that @flags ask for. Returns at once.
 */
struct stress_group *stress_start(stress_fn fn, void *arg,
		unsigned int nr_threads, unsigned int flags);
/*
 * Stop and join everything; fill @rep (may be NULL) and diag() a summary
 * unless STRESS_QUIET.
 */
void stress_stop(struct stress_group *g, struct stress_report *rep);
/* stress_start(), sleep stress_duration_ms(), stress_stop(). */
void stress_run(stress_fn fn, void *arg, unsigned int nr_threads,
		unsigned int flags, struct stress_report *rep);
/* Same for @ms milliseconds (0: stress_duration_ms()). */
void stress_run_ms(stress_fn fn, void *arg, unsigned int nr_threads,
		unsigned int flags, unsigned long ms,
		struct stress_report *rep);

#ifdef __cplusplus
}
#endif

#endif /* URCU_RSEQ_TESTS_STRESS_H */
