// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Stress of urcu_mutex with 2, 8 and 64 threads on however few CPUs the
 * machine has, under the signal storm and forced migrations: critical
 * sections that sometimes sleep (nanosleep), trylock and timed locks with
 * random deadlines mixed in. Checks mutual exclusion with a plain counter
 * and an "inside" flag, that every success was counted exactly once, and
 * reports the worst wait of any blocking lock(), which must stay under a
 * generous bound (no starvation). Each phase runs URCU_RSEQ_STRESS_MS
 * (300 ms by default under make check, longer under make regtest), once
 * with the default owner-running test and once with it off.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu/uatomic.h>
#include <urcu/mutex.h>
#include "tap.h"
#include "stress.h"

#define MAX_THREADS	64
/*
 * No lock() may wait longer. The hand-off serves starving waiters one at a
 * time, each after one hold plus one wake-up, and a wake-up with 64
 * runnable threads on 2 loaded CPUs can take tens of ms of scheduler
 * latency: the bound grows with the threads (2.08 s was seen at 64
 * threads under make check -j2 on a shared machine). A starved waiter
 * would wait the whole phase (10 s under make regtest).
 */
#define WORST_WAIT_BOUND_NS(threads)	\
	((threads) * 100000000LL < 2000000000LL ? 2000000000LL \
	 : (threads) * 100000000LL)

struct per_thread {
	unsigned long locked, timed_ok, timed_out, tried_ok;
	int64_t worst_wait;
} __attribute__((aligned(64)));

static struct {
	struct urcu_mutex m;
	unsigned long counter;
	int inside;
	unsigned long violations, bad_timeouts;
	struct per_thread t[MAX_THREADS];
} s;

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void section(struct stress_thread *t)
{
	unsigned int r = stress_rand_below(t, 1000), i;

	if (CMM_LOAD_SHARED(s.inside))
		uatomic_inc(&s.violations);
	CMM_STORE_SHARED(s.inside, 1);
	s.counter++;
	if (r < 5) {
		struct timespec ts = { 0, 1000 * (long) (1 + r * 10) };

		nanosleep(&ts, NULL);
	} else if (r < 100) {
		for (i = 0; i < r * 4; i++)
			caa_cpu_relax();
	}
	if (CMM_LOAD_SHARED(s.inside) != 1)
		uatomic_inc(&s.violations);
	CMM_STORE_SHARED(s.inside, 0);
}

static void worker(struct stress_thread *t)
{
	struct per_thread *p = &s.t[t->id];
	struct timespec ts;
	int64_t t0, w, dl;
	unsigned int r;
	int ret;

	while (!stress_should_stop(t)) {
		r = stress_rand_below(t, 10);
		if (r == 0) {
			if (!urcu_mutex_trylock(&s.m))
				continue;
			p->tried_ok++;
		} else if (r == 1) {
			dl = now_ns(CLOCK_REALTIME)
				+ (int64_t) stress_rand_below(t, 2000000);
			ts.tv_sec = (time_t) (dl / 1000000000LL);
			ts.tv_nsec = (long) (dl % 1000000000LL);
			ret = urcu_mutex_timedlock(&s.m, &ts);
			if (ret == ETIMEDOUT) {
				/* A timeout before the deadline is a bug. */
				if (now_ns(CLOCK_REALTIME) < dl)
					uatomic_inc(&s.bad_timeouts);
				p->timed_out++;
				continue;
			}
			if (ret)
				uatomic_inc(&s.bad_timeouts);
			p->timed_ok++;
		} else {
			t0 = now_ns(CLOCK_MONOTONIC);
			urcu_mutex_lock(&s.m);
			w = now_ns(CLOCK_MONOTONIC) - t0;
			if (w > p->worst_wait)
				p->worst_wait = w;
			p->locked++;
		}
		section(t);
		urcu_mutex_unlock(&s.m);
	}
}

static void phase(unsigned int threads, unsigned int signals, const char *what)
{
	struct urcu_mutex_attr attr = { signals, 0 };
	unsigned long sum = 0, timed_ok = 0, timed_out = 0, tried = 0;
	struct stress_report rep;
	int64_t worst = 0;
	unsigned int i;

	memset(&s, 0, sizeof(s));
	urcu_mutex_init(&s.m, &attr);
	stress_run(worker, NULL, threads,
		STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, &rep);
	for (i = 0; i < threads; i++) {
		sum += s.t[i].locked + s.t[i].timed_ok + s.t[i].tried_ok;
		timed_ok += s.t[i].timed_ok;
		timed_out += s.t[i].timed_out;
		tried += s.t[i].tried_ok;
		if (s.t[i].worst_wait > worst)
			worst = s.t[i].worst_wait;
	}
	diag("%s, %u threads: %lu sections (%lu trylock, %lu timed, %lu timeouts), "
		"%lu signals, %lu migrations, worst lock() wait %lld us",
		what, threads, sum, tried, timed_ok, timed_out, rep.signals,
		rep.migrations, (long long) worst / 1000);
	ok(s.violations == 0 && s.counter == sum && sum > 0,
		"%s, %u threads: exclusion held, counter exact", what, threads);
	ok(s.bad_timeouts == 0, "%s, %u threads: no early timeout or error",
		what, threads);
	ok(worst < WORST_WAIT_BOUND_NS(threads),
		"%s, %u threads: worst wait %lld us under %lld us", what, threads,
		(long long) worst / 1000,
		(long long) WORST_WAIT_BOUND_NS(threads) / 1000);
	ok(urcu_mutex_destroy(&s.m) == 0 && s.m.handoff == 0,
		"%s, %u threads: free, hand-off slot empty at the end", what,
		threads);
}

int main(void)
{
	static const unsigned int threads[] = { 2, 8, 64 };
	unsigned int i;

	plan_tests(4 * 3 * 2);
	diag("%d CPUs, %lu ms per phase, backend %s", stress_nr_cpus(),
		stress_duration_ms(), urcu_mutex_owner_backend());
	for (i = 0; i < 3; i++)
		phase(threads[i], URCU_MUTEX_OWNER_DEFAULT, "default");
	for (i = 0; i < 3; i++)
		phase(threads[i], URCU_MUTEX_OWNER_NONE, "owner test off");
	return exit_status();
}
