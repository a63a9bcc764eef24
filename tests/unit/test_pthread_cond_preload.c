// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Condition variables through the pthread_cond API only, run by
 * test_pthread_cond_preload.sh under LD_PRELOAD=liburcu-rseq-pthread-cond.so
 * (and once against glibc, with URCU_RSEQ_TEST_GLIBC=1, to show that the
 * tests hold for the implementation they replace). Checks: the preloaded
 * functions are the ones called; zero-filled conditions; signal and
 * broadcast without lost wake-ups; timedwait and clockwait on both clocks,
 * never early; pthread_condattr_setclock(); cancellation (mutex held in the
 * cleanup handlers, no signal lost to a cancelled waiter); destroy right
 * after broadcast; process-shared conditions across fork() through glibc.
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
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec deadline_in(clockid_t clock, int64_t ns)
{
	int64_t t = now_ns(clock) + ns;
	struct timespec ts = { t / 1000000000LL, t % 1000000000LL };

	return ts;
}

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t) ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int tokens, nr_waiting, nr_done;

/* Wait (with the mutex) until *@v >= @n, for at most 5 s. */
static int wait_for(int *v, int n)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + 5000000000LL;
	int ok = 0;

	for (;;) {
		pthread_mutex_lock(&mutex);
		ok = *v >= n;
		pthread_mutex_unlock(&mutex);
		if (ok || now_ns(CLOCK_MONOTONIC) > end)
			return ok;
		usleep(100);
	}
}

static void test_preloaded(void)
{
	void *marker = dlsym(RTLD_DEFAULT, "urcu_rseq_pthread_cond_preload");
	void *fn = dlsym(RTLD_DEFAULT, "pthread_cond_wait");
	Dl_info info;

	if (getenv("URCU_RSEQ_TEST_GLIBC")) {
		ok(!marker, "glibc run: the preload is not loaded");
		return;
	}
	ok(marker != NULL, "liburcu-rseq-pthread-cond.so is preloaded");
	ok(fn && dladdr(fn, &info) && info.dli_fname
		&& strstr(info.dli_fname, "liburcu-rseq-pthread-cond"),
		"pthread_cond_wait resolves to the preload (%s)",
		fn && dladdr(fn, &info) ? info.dli_fname : "?");
}

/* Consumes one token per wake-up; the cleanup handler checks the mutex. */
static int cleanup_had_mutex;

static void waiter_cleanup(void *arg)
{
	pthread_mutex_t *m = arg;

	/* An error-checking mutex: unlock succeeds only for its owner. */
	cleanup_had_mutex = pthread_mutex_unlock(m) == 0;
}

static void *token_waiter(void *arg)
{
	pthread_mutex_lock(&mutex);
	nr_waiting++;
	while (!tokens)
		pthread_cond_wait(&cond, &mutex);
	tokens--;
	nr_done++;
	pthread_mutex_unlock(&mutex);
	return NULL;
}

static void test_signal_broadcast(void)
{
	pthread_t t[8];
	int i, ok_all = 1;

	ok1(sizeof(pthread_cond_t) == 48);
	/* Static PTHREAD_COND_INITIALIZER (zero-filled) condition. */
	tokens = nr_waiting = nr_done = 0;
	for (i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, token_waiter, NULL);
	ok(wait_for(&nr_waiting, 3), "3 waiters on a static condition");
	for (i = 1; i <= 3; i++) {
		pthread_mutex_lock(&mutex);
		tokens++;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&mutex);
		ok_all &= wait_for(&nr_done, i);
	}
	ok(ok_all && nr_done == 3, "3 signals wake 3 waiters one by one");
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);

	tokens = nr_waiting = nr_done = 0;
	for (i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, token_waiter, NULL);
	ok(wait_for(&nr_waiting, 8), "8 waiters");
	pthread_mutex_lock(&mutex);
	tokens = 8;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&mutex);
	ok(wait_for(&nr_done, 8), "broadcast wakes all 8");
	for (i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	ok(pthread_cond_destroy(&cond) == 0, "destroy once all have left");
	memset(&cond, 0, sizeof(cond));	/* zero-filled is valid again */
}

static void test_timeouts(void)
{
	static const clockid_t clocks[2] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	static const char *const names[2] = { "REALTIME", "MONOTONIC" };
	pthread_condattr_t attr;
	pthread_cond_t c;
	struct timespec dl, bad = { 0, 1000000000L };
	int i, j, ret;

	for (i = 0; i < 2; i++) {
		pthread_condattr_init(&attr);
		ok(pthread_condattr_setclock(&attr, clocks[i]) == 0,
			"setclock %s", names[i]);
		ok(pthread_cond_init(&c, &attr) == 0, "init with CLOCK_%s",
			names[i]);
		pthread_condattr_destroy(&attr);
		pthread_mutex_lock(&mutex);
		/*
		 * A deadline on the other clock would be decades away or in
		 * the past: "not early" and "returns" catch an ignored clock.
		 */
		dl = deadline_in(clocks[i], 20000000);
		ret = pthread_cond_timedwait(&c, &mutex, &dl);
		ok(ret == ETIMEDOUT && now_ns(clocks[i]) >= ts_ns(&dl),
			"timedwait on CLOCK_%s: ETIMEDOUT, not early", names[i]);
		ok(pthread_mutex_trylock(&mutex) == EBUSY,
			"mutex held after the timeout");
		for (j = 0; j < 2; j++) {
			dl = deadline_in(clocks[j], 10000000);
			ret = pthread_cond_clockwait(&c, &mutex, clocks[j], &dl);
			ok(ret == ETIMEDOUT && now_ns(clocks[j]) >= ts_ns(&dl),
				"CLOCK_%s condition, clockwait on CLOCK_%s: "
				"ETIMEDOUT, not early", names[i], names[j]);
		}
		ok(pthread_cond_clockwait(&c, &mutex, CLOCK_PROCESS_CPUTIME_ID,
				&dl) == EINVAL, "clockwait on a CPU clock: EINVAL");
		ok(pthread_cond_timedwait(&c, &mutex, &bad) == EINVAL,
			"timedwait with tv_nsec = 1e9: EINVAL");
		pthread_mutex_unlock(&mutex);
		ok(pthread_cond_destroy(&c) == 0, "destroy");
	}
}

/*
 * Deadlines glibc 2.36 treats specially, checked on both faces (this
 * program also runs against glibc): tv_nsec outside [0, 1e9) is EINVAL
 * before anything else (the mutex is not released); a negative tv_sec is
 * a deadline long passed, not an error: the wait releases and re-acquires
 * the mutex and returns ETIMEDOUT.
 */
static void test_bad_deadlines(void)
{
	static const struct timespec past[] = {
		{ -1, 0 }, { -1, 999999999L }, { -1000000000L, 5 },
	};
	static const struct timespec bad[] = {
		{ 0, -1 }, { 0, 1000000000L }, { -1, -1 }, { -1, 1000000000L },
		{ 1, 2000000000L },
	};
	pthread_mutexattr_t ma;
	pthread_mutex_t em;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	unsigned int i;
	int ret;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&em, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_mutex_lock(&em);
	for (i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
		ret = pthread_cond_timedwait(&c, &em, &past[i]);
		ok(ret == ETIMEDOUT, "timedwait { %lld, %ld }: ETIMEDOUT (%d)",
			(long long) past[i].tv_sec, past[i].tv_nsec, ret);
		ret = pthread_cond_clockwait(&c, &em, CLOCK_MONOTONIC, &past[i]);
		ok(ret == ETIMEDOUT, "clockwait MONOTONIC { %lld, %ld }: "
			"ETIMEDOUT (%d)", (long long) past[i].tv_sec,
			past[i].tv_nsec, ret);
		ok(pthread_mutex_lock(&em) == EDEADLK, "the mutex is held after");
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ret = pthread_cond_timedwait(&c, &em, &bad[i]);
		ok(ret == EINVAL, "timedwait { %lld, %ld }: EINVAL (%d)",
			(long long) bad[i].tv_sec, bad[i].tv_nsec, ret);
		ret = pthread_cond_clockwait(&c, &em, CLOCK_REALTIME, &bad[i]);
		ok(ret == EINVAL, "clockwait REALTIME { %lld, %ld }: EINVAL (%d)",
			(long long) bad[i].tv_sec, bad[i].tv_nsec, ret);
		ok(pthread_mutex_lock(&em) == EDEADLK, "the mutex is held after");
	}
	ok(pthread_cond_clockwait(&c, &em, CLOCK_PROCESS_CPUTIME_ID, &past[0])
		== EINVAL, "clockwait on a CPU clock with a past deadline: EINVAL");
	pthread_mutex_unlock(&em);
	ok(pthread_cond_destroy(&c) == 0, "nobody left on the condition");
	pthread_mutex_destroy(&em);
}

/* Cancellation. */
static pthread_mutex_t emutex;

static void *cancel_waiter(void *arg)
{
	pthread_mutex_lock(&emutex);
	pthread_cleanup_push(waiter_cleanup, &emutex);
	pthread_mutex_lock(&mutex);
	nr_waiting++;
	pthread_mutex_unlock(&mutex);
	for (;;)
		pthread_cond_wait(&cond, &emutex);
	pthread_cleanup_pop(0);
	return NULL;
}

static void unlock_cleanup(void *arg)
{
	pthread_mutex_unlock(arg);
}

static void *token_waiter_em(void *arg)
{
	pthread_mutex_lock(&emutex);
	pthread_cleanup_push(unlock_cleanup, &emutex);
	pthread_mutex_lock(&mutex);
	nr_waiting++;
	pthread_mutex_unlock(&mutex);
	while (!tokens)
		pthread_cond_wait(&cond, &emutex);
	tokens--;
	pthread_mutex_lock(&mutex);
	nr_done++;
	pthread_mutex_unlock(&mutex);
	pthread_cleanup_pop(1);
	return NULL;
}

static void test_cancel(void)
{
	pthread_mutexattr_t ma;
	pthread_t a, b;
	void *res;
	int round, lost = 0, both = 0;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&emutex, &ma);
	pthread_mutexattr_destroy(&ma);
	memset(&cond, 0, sizeof(cond));

	nr_waiting = 0;
	cleanup_had_mutex = 0;
	pthread_create(&a, NULL, cancel_waiter, NULL);
	wait_for(&nr_waiting, 1);
	usleep(20000);	/* asleep on the futex by now */
	pthread_cancel(a);
	pthread_join(a, &res);
	ok(res == PTHREAD_CANCELED, "a waiter is cancelled in pthread_cond_wait");
	ok(cleanup_had_mutex, "its cleanup handler ran with the mutex held");
	ok(pthread_cond_destroy(&cond) == 0, "the cancelled wait was withdrawn");

	/*
	 * A signal sent as a waiter is cancelled is not lost: the other
	 * waiter gets it if the cancelled one consumed it.
	 */
	for (round = 0; round < 40; round++) {
		memset(&cond, 0, sizeof(cond));
		tokens = nr_waiting = nr_done = 0;
		pthread_create(&a, NULL, token_waiter_em, NULL);
		pthread_create(&b, NULL, token_waiter_em, NULL);
		wait_for(&nr_waiting, 2);
		usleep(round & 1 ? 2000 : 50);
		pthread_mutex_lock(&emutex);
		tokens = 1;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&emutex);
		pthread_cancel(a);
		pthread_join(a, &res);
		if (!wait_for(&nr_done, 1))
			lost++;
		if (res != PTHREAD_CANCELED)
			both++;	/* a was woken before the cancel: b remains */
		pthread_mutex_lock(&emutex);
		tokens += 1;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&emutex);
		pthread_join(b, NULL);
	}
	ok(lost == 0, "no signal lost to a cancelled waiter, 40 rounds "
		"(%d lost, %d where the waiter took it first)", lost, both);
	pthread_mutex_destroy(&emutex);
}

/* Destroy and overwrite a condition right after broadcast. */
struct bcast {
	pthread_cond_t c;
	int go;
};

static struct bcast *bc;

static void *bcast_waiter(void *arg)
{
	struct timespec dl;
	int timed = (int) (long) arg;

	pthread_mutex_lock(&mutex);
	nr_waiting++;
	while (!bc->go) {
		if (timed) {
			dl = deadline_in(CLOCK_REALTIME, 30000);
			pthread_cond_timedwait(&bc->c, &mutex, &dl);
		} else {
			pthread_cond_wait(&bc->c, &mutex);
		}
	}
	nr_done++;
	pthread_mutex_unlock(&mutex);
	return NULL;
}

static void test_destroy_after_broadcast(void)
{
	pthread_t t[6];
	int round, i, busy = 0, intact = 1;
	unsigned char *p;

	for (round = 0; round < 30; round++) {
		bc = calloc(1, sizeof(*bc));
		nr_waiting = nr_done = 0;
		for (i = 0; i < 6; i++)
			pthread_create(&t[i], NULL, bcast_waiter,
				(void *) (long) (i & 1));
		wait_for(&nr_waiting, 6);
		pthread_mutex_lock(&mutex);
		bc->go = 1;
		pthread_cond_broadcast(&bc->c);
		if (round & 1)
			pthread_mutex_unlock(&mutex);
		busy += pthread_cond_destroy(&bc->c) != 0;
		memset(&bc->c, 0xa5, sizeof(bc->c));
		if (!(round & 1))
			pthread_mutex_unlock(&mutex);
		wait_for(&nr_done, 6);
		for (i = 0; i < 6; i++)
			pthread_join(t[i], NULL);
		for (p = (unsigned char *) &bc->c, i = 0; i < 48; i++)
			intact &= p[i] == 0xa5;
		free(bc);
	}
	ok(busy == 0, "destroy right after broadcast: 0 every time");
	ok(intact, "no woken waiter wrote the condition after destroy");
}

/* Process-shared: forwarded to glibc, works across fork(). */
struct shared {
	pthread_mutex_t m;
	pthread_cond_t c;
	int stage;
};

static void test_pshared(void)
{
	struct shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	int status = -1, ret;
	struct timespec dl;
	pid_t pid;

	if (s == MAP_FAILED) {
		skip(3, "mmap failed");
		return;
	}
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&s->m, &ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	ok(pthread_cond_init(&s->c, &ca) == 0, "init a process-shared condition");
	ok(s->c.__data.__wrefs & 1,
		"it has glibc's layout (process-shared flag set)");
	pid = fork();
	if (pid == 0) {
		pthread_mutex_lock(&s->m);
		s->stage = 1;
		pthread_cond_broadcast(&s->c);
		while (s->stage != 2) {
			dl = deadline_in(CLOCK_MONOTONIC, 5000000000LL);
			if (pthread_cond_timedwait(&s->c, &s->m, &dl) == ETIMEDOUT)
				_exit(2);
		}
		pthread_mutex_unlock(&s->m);
		_exit(0);
	}
	pthread_mutex_lock(&s->m);
	ret = 0;
	while (s->stage != 1 && ret != ETIMEDOUT) {
		dl = deadline_in(CLOCK_MONOTONIC, 5000000000LL);
		ret = pthread_cond_timedwait(&s->c, &s->m, &dl);
	}
	s->stage = 2;
	pthread_cond_signal(&s->c);
	pthread_mutex_unlock(&s->m);
	waitpid(pid, &status, 0);
	ok(ret != ETIMEDOUT && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"parent and child wake each other through it");
	pthread_cond_destroy(&s->c);
	pthread_mutex_destroy(&s->m);
	munmap(s, sizeof(*s));
}

int main(void)
{
	plan_no_plan();
	test_preloaded();
	test_signal_broadcast();
	test_timeouts();
	test_bad_deadlines();
	test_cancel();
	test_destroy_after_broadcast();
	test_pshared();
	return exit_status();
}
