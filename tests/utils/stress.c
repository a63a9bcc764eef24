// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tests/utils/stress.c - the shared stress harness; see stress.h.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <urcu/uatomic.h>

#include "stress.h"
#include "tap.h"

#define DEFAULT_DURATION_MS	300
#define DEFAULT_SIGNAL_US	50
#define DEFAULT_MIGRATE_US	100

struct stress_group {
	struct stress_thread *threads;
	unsigned int nr_threads;
	unsigned int flags;
	int stop;			/* workers: set last */
	int stop_aux;			/* storm and migration threads */
	pthread_t storm, migrator;
	bool have_storm, have_migrator;
	unsigned long migrations;
	struct timespec start;
};

static cpu_set_t start_cpus;
static int start_cpu_list[CPU_SETSIZE];
static int nr_start_cpus;
static unsigned long signals_total;
static __thread unsigned long thread_signals;
static __thread struct stress_thread *self;
static void (*signal_hook)(struct stress_thread *t);

/* Take the CPU list before any test pins the main thread. */
static void __attribute__((constructor)) stress_init_cpus(void)
{
	int cpu;

	if (sched_getaffinity(0, sizeof(start_cpus), &start_cpus)) {
		CPU_ZERO(&start_cpus);
		CPU_SET(0, &start_cpus);
	}
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &start_cpus))
			start_cpu_list[nr_start_cpus++] = cpu;
	if (!nr_start_cpus)
		start_cpu_list[nr_start_cpus++] = 0;
}

static unsigned long env_ulong(const char *name, unsigned long dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0)
		return dflt;
	return v;
}

unsigned long stress_duration_ms(void)
{
	return env_ulong("URCU_RSEQ_STRESS_MS", DEFAULT_DURATION_MS);
}

int stress_nr_cpus(void)
{
	return nr_start_cpus;
}

int stress_cpu_at(int index)
{
	if (index < 0)
		index = -index;
	return start_cpu_list[index % nr_start_cpus];
}

static int pin_thread(pthread_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(tid, sizeof(set), &set);
}

int stress_pin_self(int cpu)
{
	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return EINVAL;
	return pin_thread(pthread_self(), cpu);
}

int stress_unpin_self(void)
{
	return pthread_setaffinity_np(pthread_self(), sizeof(start_cpus),
			&start_cpus);
}

unsigned long stress_signals_total(void)
{
	return uatomic_read(&signals_total);
}

uint64_t stress_seed(uint64_t salt)
{
	struct timespec ts;
	uint64_t s;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	s = (uint64_t) ts.tv_nsec * 0x9E3779B97F4A7C15ULL
		^ (salt + 1) * 0xBF58476D1CE4E5B9ULL ^ (uint64_t) ts.tv_sec;
	return s ? s : 0x853C49E6748FEA9BULL;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t) ts->tv_sec * 1000000000ULL + (uint64_t) ts->tv_nsec;
}

static void ts_add_ns(struct timespec *ts, uint64_t ns)
{
	uint64_t t = ts_ns(ts) + ns;

	ts->tv_sec = (time_t) (t / 1000000000ULL);
	ts->tv_nsec = (long) (t % 1000000000ULL);
}

/* Async-signal-safe: a lock-free add, a thread-local add, the hook. */
static void storm_handler(int sig)
{
	void (*hook)(struct stress_thread *t) = CMM_LOAD_SHARED(signal_hook);
	int saved_errno = errno;

	(void) sig;
	uatomic_inc(&signals_total);
	thread_signals++;
	if (hook && self)
		hook(self);
	errno = saved_errno;
}

void stress_set_signal_hook(void (*hook)(struct stress_thread *t))
{
	CMM_STORE_SHARED(signal_hook, hook);
}

static void install_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = storm_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(STRESS_SIGNAL, &sa, NULL))
		bail_out("stress: sigaction: %s", strerror(errno));
}

static void *worker_main(void *p)
{
	struct stress_thread *t = p;

	self = t;
	t->fn(t);
	/* Signals that land after this are not counted: the run is over. */
	t->signals = thread_signals;
	self = NULL;
	return NULL;
}

/*
 * Sleep until the next absolute deadline @period_ns after the last; when
 * the thread fell behind (preempted), restart from now rather than burst.
 */
static void tick(struct timespec *next, uint64_t period_ns)
{
	struct timespec now;

	ts_add_ns(next, period_ns);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (ts_ns(next) + 10 * period_ns < ts_ns(&now))
		*next = now;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL)
			== EINTR)
		;
}

/*
 * The storm and the migrator must keep their rate while the workers
 * oversubscribe the CPUs: run them SCHED_FIFO when allowed (root, or
 * CAP_SYS_NICE), else at the highest nice level we may take.
 */
static void raise_helper_priority(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
		return;
	(void) setpriority(PRIO_PROCESS, (id_t) syscall(SYS_gettid), -20);
}

static void *storm_main(void *p)
{
	struct stress_group *g = p;
	uint64_t period = env_ulong("URCU_RSEQ_STRESS_SIGNAL_US",
			DEFAULT_SIGNAL_US) * 1000;
	struct timespec next;
	unsigned int i = 0;

	/* Also: the default timer slack (50 us) would halve the rate. */
	raise_helper_priority();
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!CMM_LOAD_SHARED(g->stop_aux)) {
		tick(&next, period);
		/* Workers are joined only after this thread: tids are valid. */
		pthread_kill(g->threads[i].tid, STRESS_SIGNAL);
		if (++i == g->nr_threads)
			i = 0;
	}
	return NULL;
}

static void *migrator_main(void *p)
{
	struct stress_group *g = p;
	uint64_t period = env_ulong("URCU_RSEQ_STRESS_MIGRATE_US",
			DEFAULT_MIGRATE_US) * 1000;
	uint64_t rng = stress_seed((uintptr_t) g);
	struct timespec next;

	raise_helper_priority();
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!CMM_LOAD_SHARED(g->stop_aux)) {
		struct stress_thread *t;
		int cpu;

		tick(&next, period);
		t = &g->threads[(stress_xorshift(&rng) >> 33) % g->nr_threads];
		cpu = start_cpu_list[(stress_xorshift(&rng) >> 33)
				% nr_start_cpus];
		if (pin_thread(t->tid, cpu))
			continue;
		if (cpu != t->last_pin)
			g->migrations++;
		t->last_pin = cpu;
	}
	return NULL;
}

struct stress_group *stress_start(stress_fn fn, void *arg,
		unsigned int nr_threads, unsigned int flags)
{
	struct stress_group *g;
	unsigned int i;
	int err;

	if (nr_threads == 0)
		nr_threads = 1;
	g = calloc(1, sizeof(*g));
	if (!g || !(g->threads = calloc(nr_threads, sizeof(*g->threads))))
		bail_out("stress: out of memory");
	g->nr_threads = nr_threads;
	g->flags = flags;
	if (flags & STRESS_SIGNALS)
		install_handler();
	clock_gettime(CLOCK_MONOTONIC, &g->start);
	for (i = 0; i < nr_threads; i++) {
		struct stress_thread *t = &g->threads[i];

		t->arg = arg;
		t->id = i;
		t->nr_threads = nr_threads;
		t->rng = stress_seed(i);
		t->stop = &g->stop;
		t->fn = fn;
		t->last_pin = -1;
		err = pthread_create(&t->tid, NULL, worker_main, t);
		if (err)
			bail_out("stress: pthread_create: %s", strerror(err));
		if ((flags & STRESS_PIN) && !pin_thread(t->tid, stress_cpu_at(i)))
			t->last_pin = stress_cpu_at(i);
	}
	if ((flags & STRESS_SIGNALS)) {
		err = pthread_create(&g->storm, NULL, storm_main, g);
		if (err)
			bail_out("stress: pthread_create: %s", strerror(err));
		g->have_storm = true;
	}
	if ((flags & STRESS_MIGRATIONS) && nr_start_cpus > 1) {
		err = pthread_create(&g->migrator, NULL, migrator_main, g);
		if (err)
			bail_out("stress: pthread_create: %s", strerror(err));
		g->have_migrator = true;
	}
	return g;
}

void stress_stop(struct stress_group *g, struct stress_report *rep)
{
	struct stress_report r = { .threads = g->nr_threads };
	struct timespec end;
	unsigned int i;

	/* The helpers go first: they use the workers' thread ids. */
	CMM_STORE_SHARED(g->stop_aux, 1);
	if (g->have_storm)
		pthread_join(g->storm, NULL);
	if (g->have_migrator)
		pthread_join(g->migrator, NULL);
	CMM_STORE_SHARED(g->stop, 1);
	for (i = 0; i < g->nr_threads; i++) {
		pthread_join(g->threads[i].tid, NULL);
		r.signals += g->threads[i].signals;
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	r.elapsed_ms = (unsigned long) ((ts_ns(&end) - ts_ns(&g->start))
			/ 1000000);
	r.migrations = g->migrations;
	if (!(g->flags & STRESS_QUIET))
		diag("stress: %u threads on %d CPUs for %lu ms: %lu signals, "
			"%lu migrations%s%s", r.threads, nr_start_cpus,
			r.elapsed_ms, r.signals, r.migrations,
			(g->flags & STRESS_SIGNALS) ? "" : " (no storm)",
			(g->flags & STRESS_MIGRATIONS) ? "" : " (no migrator)");
	if (rep)
		*rep = r;
	free(g->threads);
	free(g);
}

void stress_run_ms(stress_fn fn, void *arg, unsigned int nr_threads,
		unsigned int flags, unsigned long ms,
		struct stress_report *rep)
{
	struct stress_group *g = stress_start(fn, arg, nr_threads, flags);
	struct timespec ts;

	if (!ms)
		ms = stress_duration_ms();
	ts.tv_sec = (time_t) (ms / 1000);
	ts.tv_nsec = (long) (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
	stress_stop(g, rep);
}

void stress_run(stress_fn fn, void *arg, unsigned int nr_threads,
		unsigned int flags, struct stress_report *rep)
{
	stress_run_ms(fn, arg, nr_threads, flags, 0, rep);
}
