// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * urcu_mutex: argument checks, ownership errors, timed locks, mutual
 * exclusion with more threads than CPUs (each owner-running setting), the
 * hand-off that keeps a waiter from starving, and a timed waiter leaving
 * the hand-off slot cleanly.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <urcu/uatomic.h>
#include <urcu/mutex.h>
#include "tap.h"
#include "stress.h"

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec deadline_in(int64_t ns)
{
	int64_t t = now_ns(CLOCK_REALTIME) + ns;
	struct timespec ts = { (time_t) (t / 1000000000LL),
			(long) (t % 1000000000LL) };

	return ts;
}

static void test_args(void)
{
	struct urcu_mutex m = URCU_MUTEX_INITIALIZER;
	struct urcu_mutex_attr attr;
	struct timespec bad[] = { { 0, -1 }, { 0, 1000000000L }, { -1, 0 } };
	unsigned int i;
	int ret;

	ok(urcu_mutex_init(NULL, NULL) == EINVAL, "init(NULL): EINVAL");
	ok(urcu_mutex_attr_init(NULL) == EINVAL, "attr_init(NULL): EINVAL");
	ok(urcu_mutex_attr_init(&attr) == 0
		&& attr.owner_signals == URCU_MUTEX_OWNER_DEFAULT,
		"attr_init gives the default signals");
	attr.owner_signals = 1U << 20;
	ok(urcu_mutex_init(&m, &attr) == EINVAL, "unknown signal bit: EINVAL");
	ok(urcu_mutex_init(&m, NULL) == 0, "init with defaults");
	ok(urcu_mutex_destroy(NULL) == EINVAL, "destroy(NULL): EINVAL");
	ok(urcu_mutex_timedlock(&m, NULL) == EINVAL, "timedlock(NULL): EINVAL");
	ret = 0;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ret |= urcu_mutex_timedlock(&m, &bad[i]) != EINVAL;
	ok(!ret && m.state == 0, "bad timespecs: EINVAL, lock untouched");
	diag("owner-running backend: %s", urcu_mutex_owner_backend());
	ok(strcmp(urcu_mutex_owner_backend(), "userspace") == 0
		|| strcmp(urcu_mutex_owner_backend(), "kernel") == 0,
		"a backend is chosen");
}

static struct urcu_mutex shared = URCU_MUTEX_INITIALIZER;

static void *try_from_other(void *arg)
{
	(void) arg;
	return (void *) (intptr_t) urcu_mutex_trylock(&shared);
}

static void *unlock_from_other(void *arg)
{
	(void) arg;
	return (void *) (intptr_t) urcu_mutex_unlock(&shared);
}

static void *timed_from_other(void *arg)
{
	int64_t ms = *(int64_t *) arg, t0 = now_ns(CLOCK_REALTIME);
	struct timespec ts = deadline_in(ms * 1000000);
	int ret = urcu_mutex_timedlock(&shared, &ts);

	*(int64_t *) arg = now_ns(CLOCK_REALTIME) - t0;
	if (ret == 0)
		urcu_mutex_unlock(&shared);
	return (void *) (intptr_t) ret;
}

static intptr_t run_other(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	void *ret;

	if (pthread_create(&t, NULL, fn, arg))
		bail_out("pthread_create");
	pthread_join(t, &ret);
	return (intptr_t) ret;
}

/* Run @fn in a child; true if it died of SIGABRT (debug-build checks). */
static bool aborts(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		/* The message is expected; keep the TAP output clean. */
		if (!freopen("/dev/null", "w", stderr))
			_exit(3);
		fn();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void child_unlock_not_owner(void)
{
	struct urcu_mutex m = URCU_MUTEX_INITIALIZER;

	urcu_mutex_unlock(&m);
}

static void child_destroy_held(void)
{
	struct urcu_mutex m = URCU_MUTEX_INITIALIZER;

	urcu_mutex_lock(&m);
	urcu_mutex_destroy(&m);
}

static void test_ownership(void)
{
	int64_t arg;
	int ret;

	urcu_mutex_lock(&shared);
	ok(urcu_mutex_is_owner(&shared), "lock: the caller owns it");
	ok(!urcu_mutex_trylock(&shared), "trylock of a held mutex fails");
	ok(run_other(try_from_other, NULL) == 0, "trylock from another thread fails");
#ifdef URCU_RSEQ_DEBUG
	skip(1, "debug build aborts on unlock by a non-owner (checked below)");
	skip(1, "debug build aborts on destroy while held (checked below)");
#else
	ok(run_other(unlock_from_other, NULL) == EPERM,
		"unlock by a non-owner: EPERM");
	ok(urcu_mutex_destroy(&shared) == EBUSY, "destroy while held: EBUSY");
#endif
	ok(urcu_mutex_is_owner(&shared), "still owned after the failed calls");
	arg = 30;
	ret = (int) run_other(timed_from_other, &arg);
	ok(ret == ETIMEDOUT && arg >= 30000000LL - 1000000,
		"timedlock of a held mutex: ETIMEDOUT after the deadline (%lld us)",
		(long long) arg / 1000);
	ok(urcu_mutex_unlock(&shared) == 0, "unlock by the owner");
	ok(!urcu_mutex_is_owner(&shared), "released");
#ifndef URCU_RSEQ_DEBUG
	ok(urcu_mutex_unlock(&shared) == EPERM, "double unlock: EPERM");
#else
	skip(1, "debug build aborts on double unlock");
#endif
	arg = 30;
	ok(run_other(timed_from_other, &arg) == 0, "timedlock of a free mutex");
	ok(urcu_mutex_trylock(&shared), "trylock of a free mutex");
	ok(urcu_mutex_unlock(&shared) == 0 && shared.state == 0,
		"unlock leaves a clean lock word");
	ok(urcu_mutex_destroy(&shared) == 0, "destroy of a free mutex");
#ifdef URCU_RSEQ_DEBUG
	ok(aborts(child_unlock_not_owner), "debug: unlock by non-owner aborts");
	ok(aborts(child_destroy_held), "debug: destroy while held aborts");
#else
	ok(!aborts(child_unlock_not_owner), "unlock by non-owner does not crash");
	ok(!aborts(child_destroy_held), "destroy while held does not crash");
#endif
}

/* Mutual exclusion: a plain counter and an "inside" flag. */
struct excl {
	struct urcu_mutex m;
	unsigned long counter;		/* only touched under the lock */
	int inside;
	unsigned long violations;
	unsigned long per_thread[16];
};

static void excl_worker(struct stress_thread *t)
{
	struct excl *e = (struct excl *) t->arg;
	unsigned long n = 0;

	while (!stress_should_stop(t)) {
		if ((n & 7) == 7) {
			if (!urcu_mutex_trylock(&e->m))
				continue;
		} else {
			urcu_mutex_lock(&e->m);
		}
		if (CMM_LOAD_SHARED(e->inside))
			uatomic_inc(&e->violations);
		CMM_STORE_SHARED(e->inside, 1);
		e->counter++;
		if ((n & 63) == 0)
			caa_cpu_relax();
		CMM_STORE_SHARED(e->inside, 0);
		urcu_mutex_unlock(&e->m);
		n++;
	}
	e->per_thread[t->id] = n;
}

static void test_exclusion(unsigned int signals, const char *what)
{
	struct urcu_mutex_attr attr = { signals, 0 };
	static struct excl e;
	unsigned long sum = 0;
	unsigned int i, threads = 8;

	memset(&e, 0, sizeof(e));
	urcu_mutex_init(&e.m, &attr);
	stress_run_ms(excl_worker, &e, threads, STRESS_QUIET, 200, NULL);
	for (i = 0; i < threads; i++)
		sum += e.per_thread[i];
	ok(e.violations == 0 && e.counter == sum && sum > 0,
		"%s: %u threads, %lu sections, counter exact, never two inside",
		what, threads, sum);
	ok(urcu_mutex_destroy(&e.m) == 0, "%s: free at the end", what);
}

/* A hog re-locks at once after each unlock; the waiter must still get in. */
static struct urcu_mutex hog_m = URCU_MUTEX_INITIALIZER;
static int hog_stop;

static void *hog(void *arg)
{
	unsigned int i;

	(void) arg;
	pin_self(stress_cpu_at(0));
	while (!CMM_LOAD_SHARED(hog_stop)) {
		urcu_mutex_lock(&hog_m);
		for (i = 0; i < 2000; i++)
			caa_cpu_relax();
		urcu_mutex_unlock(&hog_m);
	}
	return NULL;
}

static void test_handoff(void)
{
	pthread_t h[2];
	int64_t worst = 0, t0, w;
	int i;

	for (i = 0; i < 2; i++)
		pthread_create(&h[i], NULL, hog, NULL);
	usleep(10000);
	for (i = 0; i < 50; i++) {
		t0 = now_ns(CLOCK_MONOTONIC);
		urcu_mutex_lock(&hog_m);
		w = now_ns(CLOCK_MONOTONIC) - t0;
		urcu_mutex_unlock(&hog_m);
		if (w > worst)
			worst = w;
		usleep(1000);
	}
	CMM_STORE_SHARED(hog_stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(h[i], NULL);
	diag("worst wait against two re-locking hogs: %lld us",
		(long long) worst / 1000);
	ok(worst < 200000000LL, "a waiter is not starved by re-locking hogs");
}

static int holding;

static void *hold_50ms(void *arg)
{
	(void) arg;
	urcu_mutex_lock(&hog_m);
	CMM_STORE_SHARED(holding, 1);
	usleep(50000);
	urcu_mutex_unlock(&hog_m);
	return NULL;
}

static void test_handoff_timeout(void)
{
	struct timespec ts;
	pthread_t t;
	int ret;

	pthread_create(&t, NULL, hold_50ms, NULL);
	while (!CMM_LOAD_SHARED(holding))
		usleep(1000);
	ts = deadline_in(10000000);	/* past the 1 ms hand-off point */
	ret = urcu_mutex_timedlock(&hog_m, &ts);
	ok(ret == ETIMEDOUT && hog_m.handoff == 0,
		"timed waiter in the hand-off slot times out and leaves it (%d)",
		ret);
	if (ret == 0)
		urcu_mutex_unlock(&hog_m);
	pthread_join(t, NULL);
	ok(hog_m.state == 0, "the unlock after it leaves a clean lock word");
	urcu_mutex_lock(&hog_m);
	ok(urcu_mutex_unlock(&hog_m) == 0 && hog_m.state == 0, "still usable");
}

int main(void)
{
	plan_tests(35);
	test_args();
	test_ownership();
	test_exclusion(URCU_MUTEX_OWNER_DEFAULT, "default");
	test_exclusion(URCU_MUTEX_OWNER_NONE, "owner test off");
	test_exclusion(URCU_MUTEX_OWNER_ALL, "all signals (proc)");
	test_handoff();
	test_handoff_timeout();
	return exit_status();
}
