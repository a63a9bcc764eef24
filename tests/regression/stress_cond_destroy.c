// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Destroy and overwrite a condition variable right after a broadcast while
 * the woken waiters are still waking, under the stress harness (more
 * threads than CPUs, signal storm, forced migrations). Half the waiters use
 * deadlines of a few microseconds, so timeouts race with the broadcast.
 *
 * Built twice from this file: stress_cond_destroy on urcu_cond, and with
 * PTHREAD_FACE on the pthread_cond API only, run under LD_PRELOAD of
 * liburcu-rseq-pthread-cond.so (stress_cond_destroy_preload.sh).
 *
 * Each round: a fresh condition in a reused buffer, every waiter waits on
 * it for the round's flag; the broadcaster sets the flag, broadcasts
 * (holding the mutex or not), destroys (must return 0) and fills the
 * buffer with 0xa5. A waiter that touched the condition afterwards would
 * change the pattern, or spin forever on a "held" queue lock (caught by the
 * round deadline).
 */
#ifndef _GNU_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stress.h"
#include "tap.h"

#ifdef PTHREAD_FACE
typedef pthread_cond_t cond_t;
#define cond_wait(c, m)		pthread_cond_wait(c, m)
#define cond_timedwait(c, m, t)	pthread_cond_timedwait(c, m, t)
#define cond_broadcast(c)	pthread_cond_broadcast(c)
#define cond_signal(c)		pthread_cond_signal(c)
#define cond_destroy(c)		pthread_cond_destroy(c)
static int cond_init(cond_t *c, clockid_t clock)
{
	pthread_condattr_t a;
	int ret;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, clock);
	ret = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return ret;
}
#else
#include <urcu/cond.h>
typedef struct urcu_cond cond_t;
#define cond_wait(c, m)		urcu_cond_wait(c, m)
#define cond_timedwait(c, m, t)	urcu_cond_timedwait(c, m, t)
#define cond_broadcast(c)	urcu_cond_broadcast(c)
#define cond_signal(c)		urcu_cond_signal(c)
#define cond_destroy(c)		urcu_cond_destroy(c)
#define cond_init(c, clock)	urcu_cond_init(c, clock)
#endif

#define NR_WAITERS	6
#define PATTERN		0xa5

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static cond_t start_cv, done_cv;	/* long-lived, zero-filled */
static union {
	cond_t c;
	unsigned char bytes[48];
} *slot;
static clockid_t slot_clock;
static unsigned long gen, rounds, destroy_busy, corrupt, timeouts;
static int done, quit, inside, left;

static void waiter(struct stress_thread *t)
{
	unsigned long my = 0;
	struct timespec ts;
	int timed = t->id & 1;
	int64_t ns;

	pthread_mutex_lock(&mutex);
	for (;;) {
		while (gen == my && !quit)
			cond_wait(&start_cv, &mutex);
		if (quit)
			break;
		my = gen;
		if (++inside == NR_WAITERS)
			cond_signal(&done_cv);
		while (!done) {
			if (!timed) {
				cond_wait(&slot->c, &mutex);
				continue;
			}
			clock_gettime(slot_clock, &ts);
			ns = ts.tv_nsec + 1000 + stress_rand_below(t, 30000);
			ts.tv_sec += ns / 1000000000L;
			ts.tv_nsec = ns % 1000000000L;
			if (cond_timedwait(&slot->c, &mutex, &ts) == ETIMEDOUT)
				timeouts++;
		}
		if (++left == NR_WAITERS)
			cond_signal(&done_cv);
	}
	pthread_mutex_unlock(&mutex);
}

/* Wait on done_cv until *@v == NR_WAITERS, at most 10 s; false if not. */
static bool wait_all(int *v)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	while (*v != NR_WAITERS)
		if (cond_timedwait(&done_cv, &mutex, &ts) == ETIMEDOUT)
			return *v == NR_WAITERS;
	return true;
}

static void broadcaster(struct stress_thread *t)
{
	unsigned int i;
	int held;

	pthread_mutex_lock(&mutex);
	while (!stress_should_stop(t)) {
		memset(slot, 0, sizeof(*slot));
		slot_clock = stress_rand_below(t, 2) ? CLOCK_MONOTONIC
			: CLOCK_REALTIME;
		if (stress_rand_below(t, 2))
			(void) cond_init(&slot->c, slot_clock);
		else
			slot_clock = CLOCK_REALTIME;	/* zero-filled */
		done = inside = left = 0;
		gen++;
		cond_broadcast(&start_cv);
		if (!wait_all(&inside))
			bail_out("waiters did not all start waiting in 10 s");
		/* Let some deadlines pass while they wait. */
		pthread_mutex_unlock(&mutex);
		for (i = stress_rand_below(t, 2000); i; i--)
			caa_cpu_relax();
		pthread_mutex_lock(&mutex);
		done = 1;
		held = stress_rand_below(t, 2);
		cond_broadcast(&slot->c);
		if (!held)
			pthread_mutex_unlock(&mutex);
		if (cond_destroy(&slot->c))
			destroy_busy++;
		memset(slot, PATTERN, sizeof(*slot));
		if (!held)
			pthread_mutex_lock(&mutex);
		/* The stuck waiters cannot be joined: end the run here. */
		if (!wait_all(&left))
			bail_out("a round did not finish in 10 s: a waiter is "
				"stuck (on the destroyed condition's queue lock?)");
		for (i = 0; i < sizeof(slot->bytes); i++)
			if (slot->bytes[i] != PATTERN) {
				corrupt++;
				break;
			}
		rounds++;
	}
	quit = 1;
	cond_broadcast(&start_cv);
	pthread_mutex_unlock(&mutex);
}

static void worker(struct stress_thread *t)
{
	if (t->id == 0)
		broadcaster(t);
	else
		waiter(t);
}

int main(void)
{
	struct stress_report rep;

	plan_tests(5);
#ifdef PTHREAD_FACE
	if (getenv("URCU_RSEQ_TEST_GLIBC"))
		ok(!dlsym(RTLD_DEFAULT, "urcu_rseq_pthread_cond_preload"),
			"glibc run: the preload is not loaded");
	else
		ok(dlsym(RTLD_DEFAULT, "urcu_rseq_pthread_cond_preload") != NULL,
			"liburcu-rseq-pthread-cond.so is preloaded");
#else
	ok1(sizeof(cond_t) <= 48);
#endif
	slot = malloc(sizeof(*slot));
	if (!slot)
		bail_out("out of memory");
	stress_run(worker, NULL, NR_WAITERS + 1,
		STRESS_SIGNALS | STRESS_MIGRATIONS, &rep);
	diag("%lu rounds, %lu timeouts", rounds, timeouts);
	ok(rounds > 0, "rounds ran (%lu)", rounds);
	ok(destroy_busy == 0, "destroy right after broadcast returned 0 "
		"every time (%lu EBUSY)", destroy_busy);
	ok(corrupt == 0, "no woken waiter wrote the destroyed condition "
		"(%lu rounds corrupted)", corrupt);
	ok(rep.signals > 0 || !rep.threads, "under the signal storm (%lu signals)",
		rep.signals);
	free(slot);
	return exit_status();
}
