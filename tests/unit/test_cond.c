// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of urcu/cond.h: condition variables (every function and error,
 * both clocks, zero-filled objects, EBUSY, the mutex-agnostic wait) and
 * event counts.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <urcu/uatomic.h>
#include <urcu/cond.h>
#include <urcu/mutex.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tap.h"

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t) ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts_ns(&ts);
}

static struct timespec deadline_in(clockid_t clock, int64_t ns)
{
	int64_t t = now_ns(clock) + ns;
	struct timespec ts = { t / 1000000000LL, t % 1000000000LL };

	return ts;
}

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static struct urcu_cond cond;	/* zero-filled: valid */
static int predicate, nr_waiting, nr_woken;

static void *cond_waiter(void *arg)
{
	pthread_mutex_lock(&mutex);
	nr_waiting++;
	while (!predicate)
		urcu_cond_wait(&cond, &mutex);
	nr_woken++;
	pthread_mutex_unlock(&mutex);
	return NULL;
}

static void wait_count(int *count, int n)
{
	for (;;) {
		pthread_mutex_lock(&mutex);
		if (*count >= n) {
			pthread_mutex_unlock(&mutex);
			return;
		}
		pthread_mutex_unlock(&mutex);
		usleep(200);
	}
}

static void test_errors(void)
{
	struct urcu_cond c = URCU_COND_INITIALIZER;
	struct timespec bad = { 0, 1000000000L }, neg = { 0, -1 };
	pthread_mutexattr_t attr;
	pthread_mutex_t em;

	ok1(sizeof(struct urcu_cond) <= sizeof(pthread_cond_t));
	ok(urcu_cond_init(NULL, CLOCK_MONOTONIC) == EINVAL, "init NULL: EINVAL");
	ok(urcu_cond_init(&c, CLOCK_PROCESS_CPUTIME_ID) == EINVAL,
		"init with an unsupported clock: EINVAL");
	ok(urcu_cond_init(&c, CLOCK_MONOTONIC) == 0, "init CLOCK_MONOTONIC");
	ok(urcu_cond_signal(NULL) == EINVAL && urcu_cond_broadcast(NULL) == EINVAL
		&& urcu_cond_destroy(NULL) == EINVAL,
		"signal, broadcast, destroy of NULL: EINVAL");
	ok(urcu_cond_signal(&c) == 0 && urcu_cond_broadcast(&c) == 0,
		"signal and broadcast without waiters");
	ok(urcu_cond_wait(&c, NULL) == EINVAL && urcu_cond_wait(NULL, &mutex) == EINVAL,
		"wait with NULL: EINVAL");
	pthread_mutex_lock(&mutex);
	ok(urcu_cond_timedwait(&c, &mutex, &bad) == EINVAL
		&& urcu_cond_timedwait(&c, &mutex, &neg) == EINVAL
		&& urcu_cond_timedwait(&c, &mutex, NULL) == EINVAL,
		"timedwait with a bad timespec: EINVAL");
	ok(pthread_mutex_trylock(&mutex) == EBUSY,
		"the mutex is still held after EINVAL");
	pthread_mutex_unlock(&mutex);
	ok(urcu_cond_wait_ops(&c, NULL, NULL, &mutex, NULL) == EINVAL,
		"wait_ops without functions: EINVAL");

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&em, &attr);
	ok(urcu_cond_wait(&c, &em) == EPERM,
		"wait with an unowned error-checking mutex: EPERM");
	ok(urcu_cond_destroy(&c) == 0, "the failed wait left nobody queued");
	pthread_mutex_destroy(&em);
	pthread_mutexattr_destroy(&attr);
}

static void test_timeouts(void)
{
	static const clockid_t clocks[2] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	struct urcu_cond c;
	struct timespec dl;
	int i, ret;

	for (i = 0; i < 2; i++) {
		urcu_cond_init(&c, clocks[i]);
		pthread_mutex_lock(&mutex);
		dl = deadline_in(clocks[i], 10000000);
		ret = urcu_cond_timedwait(&c, &mutex, &dl);
		ok(ret == ETIMEDOUT, "%s: ETIMEDOUT",
			i ? "CLOCK_MONOTONIC" : "CLOCK_REALTIME");
		ok(now_ns(clocks[i]) >= ts_ns(&dl), "%s: not early",
			i ? "CLOCK_MONOTONIC" : "CLOCK_REALTIME");
		ok(pthread_mutex_trylock(&mutex) == EBUSY,
			"mutex held again after the timeout");
		pthread_mutex_unlock(&mutex);
		ok(urcu_cond_destroy(&c) == 0, "nobody left queued");
	}
}

static void test_signal_broadcast(void)
{
	pthread_t t[8];
	int i;

	memset(&cond, 0, sizeof(cond));
	predicate = nr_waiting = nr_woken = 0;
	pthread_create(&t[0], NULL, cond_waiter, NULL);
	wait_count(&nr_waiting, 1);
	ok(urcu_cond_destroy(&cond) == EBUSY, "destroy while a thread waits: EBUSY");
	pthread_mutex_lock(&mutex);
	predicate = 1;
	urcu_cond_signal(&cond);
	pthread_mutex_unlock(&mutex);
	pthread_join(t[0], NULL);
	ok(nr_woken == 1, "signal wakes the waiter");
	ok(urcu_cond_destroy(&cond) == 0, "destroy after the waiter left: 0");

	predicate = nr_waiting = nr_woken = 0;
	for (i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, cond_waiter, NULL);
	wait_count(&nr_waiting, 8);
	pthread_mutex_lock(&mutex);
	predicate = 1;
	urcu_cond_broadcast(&cond);
	pthread_mutex_unlock(&mutex);
	for (i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	ok(nr_woken == 8, "broadcast wakes all 8 (%d)", nr_woken);
	ok(urcu_cond_destroy(&cond) == 0, "destroy after broadcast: 0");
}

/* The mutex-agnostic wait, with a plain spinlock. */
static int spin;

static int spin_lock(void *l)
{
	while (uatomic_cmpxchg((int *) l, 0, 1) != 0)
		sched_yield();
	return 0;
}

static int spin_unlock(void *l)
{
	cmm_smp_mb();
	uatomic_set((int *) l, 0);
	return 0;
}

static void *ops_waiter(void *arg)
{
	spin_lock(&spin);
	nr_waiting++;
	while (!predicate)
		urcu_cond_wait_ops(&cond, spin_lock, spin_unlock, &spin, NULL);
	nr_woken++;
	spin_unlock(&spin);
	return NULL;
}

static void test_wait_ops(void)
{
	pthread_t t;
	int waiting = 0;

	memset(&cond, 0, sizeof(cond));
	predicate = nr_waiting = nr_woken = 0;
	pthread_create(&t, NULL, ops_waiter, NULL);
	while (!waiting) {
		spin_lock(&spin);
		waiting = nr_waiting;
		spin_unlock(&spin);
		usleep(200);
	}
	spin_lock(&spin);
	predicate = 1;
	spin_unlock(&spin);
	urcu_cond_signal(&cond);
	pthread_join(t, NULL);
	ok(nr_woken == 1, "wait_ops with a spinlock: woken");
}

static struct urcu_ec ec;
static int ec_flag, ec_seen;

static void *ec_waiter(void *arg)
{
	uint32_t key;

	for (;;) {
		key = urcu_ec_prepare(&ec);
		if (uatomic_read(&ec_flag))
			break;
		urcu_ec_wait(&ec, key, NULL);
	}
	uatomic_set(&ec_seen, 1);
	return NULL;
}

static void test_ec(void)
{
	struct timespec past = { 0, 0 }, bad = { 0, -5 }, dl;
	uint32_t key;
	int32_t before;
	pthread_t t;
	int i;

	urcu_ec_init(&ec);
	before = ec.word;
	urcu_ec_notify(&ec);
	ok(ec.word == before, "notify without prepared consumers stores nothing");
	key = urcu_ec_prepare(&ec);
	ok(urcu_ec_wait(&ec, key, &past) == ETIMEDOUT, "ec_wait: past deadline");
	ok(urcu_ec_wait(&ec, key, &bad) == EINVAL
		&& urcu_ec_wait(NULL, key, NULL) == EINVAL, "ec_wait: EINVAL");
	dl = deadline_in(CLOCK_MONOTONIC, 5000000);
	ok(urcu_ec_wait(&ec, key, &dl) == ETIMEDOUT
		&& now_ns(CLOCK_MONOTONIC) >= ts_ns(&dl), "ec_wait: 5 ms, not early");
	urcu_ec_notify(&ec);
	ok(urcu_ec_wait(&ec, key, NULL) == 0, "a notify after prepare: no sleep");
	ok(urcu_ec_prepare(&ec) != key, "the count moved");

	pthread_create(&t, NULL, ec_waiter, NULL);
	usleep(20000);
	ok(!uatomic_read(&ec_seen), "consumer waits for the flag");
	uatomic_set(&ec_flag, 1);
	urcu_ec_notify(&ec);
	pthread_join(t, NULL);
	ok(ec_seen, "notify wakes the sleeping consumer");
	for (i = 0; i < 4; i++)
		urcu_ec_notify(&ec);
	before = ec.word;
	urcu_ec_notify(&ec);
	ok(ec.word == before, "four notifies after the last prepare, notify "
		"stores nothing again");
	key = urcu_ec_prepare(&ec);
	urcu_ec_notify(&ec);
	ok(urcu_ec_wait(&ec, key, NULL) == 0 && urcu_ec_prepare(&ec) != key,
		"prepare after that stores again, and the next notify counts");
	before = ec.word;
	key = urcu_ec_prepare(&ec);
	ok(ec.word == before, "prepare right after a counted notify stores "
		"nothing");
	urcu_ec_notify(&ec);
	ok(urcu_ec_prepare(&ec) != key, "the next notify still counts");
}

/*
 * A broadcast hands the waiters to one wake-up relay per CPU, cutting the
 * list of waiters into pieces: every size around the cuts, with waiters
 * that timed out (still in the list, to be skipped) mixed in. A lost piece
 * hangs: the join is bounded and fails the test instead.
 */
static int nr_timed_out;

static void *cond_timed_waiter(void *arg)
{
	struct timespec dl = deadline_in(CLOCK_REALTIME, 2000000);

	(void) arg;
	pthread_mutex_lock(&mutex);
	if (urcu_cond_timedwait(&cond, &mutex, &dl) == ETIMEDOUT)
		nr_timed_out++;
	pthread_mutex_unlock(&mutex);
	return NULL;
}

/*
 * Set *@flag under the mutex, broadcast, and join the @n threads within
 * 10 s; returns how many did not return.
 */
static int broadcast_join(int *flag, pthread_t *t, int n)
{
	struct timespec dl;
	int i, hung = 0;

	pthread_mutex_lock(&mutex);
	*flag = 1;
	urcu_cond_broadcast(&cond);
	pthread_mutex_unlock(&mutex);
	dl = deadline_in(CLOCK_REALTIME, 10000000000LL);
	for (i = 0; i < n; i++)
		if (pthread_timedjoin_np(t[i], NULL, &dl))
			hung++;
	return hung;
}

static void test_broadcast_sizes(void)
{
	static const int sizes[] = { 1, 2, 3, 4, 5, 7, 9, 16, 17, 33 };
	pthread_t t[33];
	int s, i, n, timed, bad = 0, hung = 0;

	for (s = 0; s < (int) (sizeof(sizes) / sizeof(sizes[0])); s++) {
		n = sizes[s];
		memset(&cond, 0, sizeof(cond));
		predicate = nr_waiting = nr_woken = nr_timed_out = 0;
		for (i = 0, timed = 0; i < n; i++) {
			bool is_timed = i % 3 == 1;

			timed += is_timed;
			pthread_create(&t[i], NULL, is_timed ? cond_timed_waiter
					: cond_waiter, NULL);
		}
		wait_count(&nr_waiting, n - timed);
		wait_count(&nr_timed_out, timed);
		hung += broadcast_join(&predicate, t, n);
		if (hung)
			break;	/* threads still wait on @cond: keep it */
		if (nr_woken != n - timed || urcu_cond_destroy(&cond) != 0)
			bad++;
	}
	ok(!bad && !hung, "broadcast to 1..33 waiters, some timed out: all "
		"woken, none hung (%d sizes wrong, %d threads hung)", bad, hung);
}

/*
 * Broadcasts on a busy machine: one spinning process pinned to each CPU,
 * so that waiters lose whole time slices while they spin or yield, and
 * the wake-up relays of each broadcast wait for CPUs the spinners hold.
 * 64 waiters, rounds of one broadcast each: every waiter must see every
 * round. A lost wake-up hangs a round: its wait is bounded and fails the
 * test instead.
 */
static int bb_gen, bb_waiting, bb_woken, bb_stop;

static void *bb_waiter(void *arg)
{
	int seen = 0;

	(void) arg;
	pthread_mutex_lock(&mutex);
	for (;;) {
		bb_waiting++;
		while (bb_gen == seen && !bb_stop)
			urcu_cond_wait(&cond, &mutex);
		bb_waiting--;
		if (bb_stop)
			break;
		seen = bb_gen;
		bb_woken++;
	}
	pthread_mutex_unlock(&mutex);
	return NULL;
}

/* Waits up to 10 s for *count to reach n; false if it did not. */
static bool reach_within(int *count, int n)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + 10000000000LL;

	for (;;) {
		pthread_mutex_lock(&mutex);
		if (*count >= n) {
			pthread_mutex_unlock(&mutex);
			return true;
		}
		pthread_mutex_unlock(&mutex);
		if (now_ns(CLOCK_MONOTONIC) > end)
			return false;
		usleep(200);
	}
}

/* A busy machine: one spinning process pinned to each CPU (up to 64). */
static pid_t hogs[64];
static int nr_hogs;

static void hogs_start(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int i;

	if (cpus < 1)
		cpus = 1;
	for (i = 0; i < cpus && i < 64; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			cpu_set_t set;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			CPU_ZERO(&set);
			CPU_SET(i, &set);
			(void) sched_setaffinity(0, sizeof(set), &set);
			for (;;)
				caa_cpu_relax();
		}
		if (pid > 0)
			hogs[nr_hogs++] = pid;
	}
}

static void hogs_stop(void)
{
	int i;

	for (i = 0; i < nr_hogs; i++) {
		kill(hogs[i], SIGKILL);
		waitpid(hogs[i], NULL, 0);
	}
	nr_hogs = 0;
}

/* The condition can be destroyed after @what, unless threads still wait. */
static void destroy_after(int hung, const char *what)
{
	if (!hung)
		ok(urcu_cond_destroy(&cond) == 0, "destroy after %s", what);
	else
		ok(0, "destroy after %s: threads still wait", what);
}

static void test_broadcast_busy(void)
{
	enum { N = 64, ROUNDS = 40 };
	pthread_t t[N];
	int i, r, hung, rounds_done = 0;

	hogs_start();
	memset(&cond, 0, sizeof(cond));
	bb_gen = bb_waiting = bb_woken = bb_stop = 0;
	for (i = 0; i < N; i++)
		pthread_create(&t[i], NULL, bb_waiter, NULL);
	for (r = 1; r <= ROUNDS; r++) {
		if (!reach_within(&bb_waiting, N))
			break;
		pthread_mutex_lock(&mutex);
		bb_gen = r;
		urcu_cond_broadcast(&cond);
		pthread_mutex_unlock(&mutex);
		if (!reach_within(&bb_woken, N * r))
			break;
		rounds_done = r;
	}
	hung = broadcast_join(&bb_stop, t, N);
	hogs_stop();
	ok(rounds_done == ROUNDS && !hung && bb_woken == N * ROUNDS,
		"%d broadcasts to %d waiters with every CPU busy: every waiter "
		"woken each time (%d rounds done, %d wake-ups, %d hung)",
		ROUNDS, N, rounds_done, bb_woken, hung);
	destroy_after(hung, "the busy rounds");
}

/*
 * Signals on a busy machine, where a signal wakes the waiter below the
 * newest (src/wait.c, urcu_wait_wake_one_signal()) and so unlinks a node
 * from inside the queue: 16 waiters, every other one with deadlines of
 * 0.1-0.5 ms that keep expiring, so that waiters withdraw their own nodes
 * next to the ones signals take. Each signal hands over one token: the
 * tokens taken must add up exactly, and at the end a broadcast must reach
 * every waiter. A node lost from the queue leaves its waiter asleep for
 * good, which the bounded join reports.
 */
static int sb_tokens, sb_taken, sb_stop, sb_timeouts;

static void *sb_waiter(void *arg)
{
	bool timed = (uintptr_t) arg & 1;
	unsigned int seed = (unsigned int) (uintptr_t) arg;
	struct timespec dl;

	pthread_mutex_lock(&mutex);
	for (;;) {
		while (!sb_tokens && !sb_stop) {
			if (!timed) {
				urcu_cond_wait(&cond, &mutex);
				continue;
			}
			dl = deadline_in(CLOCK_REALTIME,
					100000 + rand_r(&seed) % 400000);
			if (urcu_cond_timedwait(&cond, &mutex, &dl) == ETIMEDOUT)
				sb_timeouts++;
		}
		if (!sb_tokens)
			break;
		sb_tokens--;
		sb_taken++;
		/* Let the others queue up meanwhile. */
		pthread_mutex_unlock(&mutex);
		sched_yield();
		pthread_mutex_lock(&mutex);
	}
	pthread_mutex_unlock(&mutex);
	return NULL;
}

static void test_signal_busy(void)
{
	enum { N = 16 };
	pthread_t t[N];
	int64_t end;
	int i, sent = 0, hung, done;

	hogs_start();
	memset(&cond, 0, sizeof(cond));
	sb_tokens = sb_taken = sb_stop = sb_timeouts = 0;
	for (i = 0; i < N; i++)
		pthread_create(&t[i], NULL, sb_waiter, (void *) (uintptr_t) i);
	/* Long enough for the process to see the machine busy (20-30 ms). */
	end = now_ns(CLOCK_MONOTONIC) + 400000000;
	while (now_ns(CLOCK_MONOTONIC) < end) {
		pthread_mutex_lock(&mutex);
		sb_tokens++;
		pthread_mutex_unlock(&mutex);
		urcu_cond_signal(&cond);
		sent++;
		if (!(sent % 8))
			usleep(50);
	}
	done = reach_within(&sb_taken, sent);
	hung = broadcast_join(&sb_stop, t, N);
	hogs_stop();
	ok(done && !hung && sb_taken == sent && !sb_tokens,
		"%d signals to %d waiters, half of them timing out, with every "
		"CPU busy: each token taken once, every waiter woken at the end "
		"(%d taken, %d timeouts, %d hung)", sent, N, sb_taken,
		sb_timeouts, hung);
	destroy_after(hung, "the busy signals");
}

/*
 * Hand-offs on a busy machine (a hog on every CPU): pairs of threads pass a
 * turn back and forth, through a condition per side or an event count per
 * side. Each waiter has just woken its partner and is alone on its queue,
 * so once the process sees the machine busy its waits take the short
 * spin of a hand-off (src/wait.c, WAIT_SPIN_BUSY_NS), and sleep when that
 * fails; the first waits of a pair, before the machine is seen busy, take
 * the idle machine's policy. Every turn must arrive: each wait is bounded
 * (10 s), so a lost wake-up fails the test instead of hanging it. Four
 * pairs: more threads than CPUs on the machines the suite runs on.
 */
#define HO_PAIRS	4
#define HO_ROUNDS	3000

struct handoff {
	pthread_mutex_t lock;
	struct urcu_cond cond[2];
	struct urcu_ec ec[2];
	int turn;		/* cond: whose turn (0 or 1), under lock */
	int seq;		/* ec: turns taken; side seq % 2 goes next */
	int taken[2];		/* turns each side took */
	int timeouts;		/* waits that ran out: lost wake-ups */
	bool use_ec;
};

struct handoff_side {
	struct handoff *h;
	int side;
};

static void handoff_cond(struct handoff *h, int me)
{
	struct timespec dl;

	pthread_mutex_lock(&h->lock);
	while (h->turn != me) {
		dl = deadline_in(CLOCK_MONOTONIC, 10000000000LL);
		if (urcu_cond_timedwait(&h->cond[me], &h->lock, &dl)
				== ETIMEDOUT) {
			h->timeouts++;
			break;
		}
	}
	h->taken[me]++;
	h->turn = !me;
	urcu_cond_signal(&h->cond[!me]);
	pthread_mutex_unlock(&h->lock);
}

static void handoff_ec(struct handoff *h, int me)
{
	struct timespec dl;
	uint32_t key;

	for (;;) {
		key = urcu_ec_prepare(&h->ec[me]);
		if (uatomic_read(&h->seq) % 2 == me)
			break;
		dl = deadline_in(CLOCK_MONOTONIC, 10000000000LL);
		if (urcu_ec_wait(&h->ec[me], key, &dl) == ETIMEDOUT
				&& uatomic_read(&h->seq) % 2 != me) {
			uatomic_inc(&h->timeouts);
			break;
		}
	}
	h->taken[me]++;
	uatomic_inc(&h->seq);
	urcu_ec_notify(&h->ec[!me]);
}

static void *handoff_thread(void *arg)
{
	struct handoff_side *hs = (struct handoff_side *) arg;
	int i;

	for (i = 0; i < HO_ROUNDS; i++) {
		if (hs->h->use_ec)
			handoff_ec(hs->h, hs->side);
		else
			handoff_cond(hs->h, hs->side);
	}
	return NULL;
}

static void test_handoff_busy(bool use_ec)
{
	struct handoff h[HO_PAIRS];
	struct handoff_side hs[HO_PAIRS][2];
	pthread_t t[HO_PAIRS][2];
	struct timespec dl;
	int p, i, hung = 0, bad = 0;

	hogs_start();
	for (p = 0; p < HO_PAIRS; p++) {
		memset(&h[p], 0, sizeof(h[p]));
		pthread_mutex_init(&h[p].lock, NULL);
		urcu_cond_init(&h[p].cond[0], CLOCK_MONOTONIC);
		urcu_cond_init(&h[p].cond[1], CLOCK_MONOTONIC);
		urcu_ec_init(&h[p].ec[0]);
		urcu_ec_init(&h[p].ec[1]);
		h[p].use_ec = use_ec;
		for (i = 0; i < 2; i++) {
			hs[p][i].h = &h[p];
			hs[p][i].side = i;
			pthread_create(&t[p][i], NULL, handoff_thread, &hs[p][i]);
		}
	}
	dl = deadline_in(CLOCK_REALTIME, 120000000000LL);
	for (p = 0; p < HO_PAIRS; p++)
		for (i = 0; i < 2; i++)
			if (pthread_timedjoin_np(t[p][i], NULL, &dl))
				hung++;
	hogs_stop();
	for (p = 0; p < HO_PAIRS && !hung; p++) {
		if (h[p].timeouts || h[p].taken[0] != HO_ROUNDS
				|| h[p].taken[1] != HO_ROUNDS
				|| (use_ec && h[p].seq != 2 * HO_ROUNDS))
			bad++;
		if (urcu_cond_destroy(&h[p].cond[0])
				|| urcu_cond_destroy(&h[p].cond[1]))
			bad++;
	}
	ok(!hung && !bad, "%d pairs hand %d turns each way through %s with "
		"every CPU busy: every turn arrives (%d pairs wrong, %d "
		"threads hung)", HO_PAIRS, HO_ROUNDS,
		use_ec ? "event counts" : "conditions", bad, hung);
}

/*
 * A urcu_mutex owner asleep in a condition wait (or an event-count wait)
 * counts as blocked (urcu_mutex_blocking_begin/end() around the futex
 * sleep): a waiter for that mutex whose only owner-running signal is
 * "blocked" stops spinning and sleeps, long before its 2 s spin cap.
 */
static struct urcu_mutex ob_mutex;
static pthread_mutex_t ob_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urcu_cond ob_cond;
static struct urcu_ec ob_ec;
static int ob_go, ob_use_ec;
static pid_t ob_tid[2];

static void *ob_owner(void *arg)
{
	uint32_t key;

	(void) arg;
	urcu_mutex_lock(&ob_mutex);
	uatomic_set(&ob_tid[0], (pid_t) syscall(SYS_gettid));
	if (ob_use_ec) {
		while (!uatomic_read(&ob_go)) {
			key = urcu_ec_prepare(&ob_ec);
			if (uatomic_read(&ob_go))
				break;
			urcu_ec_wait(&ob_ec, key, NULL);
		}
	} else {
		pthread_mutex_lock(&ob_lock);
		while (!ob_go)
			urcu_cond_wait(&ob_cond, &ob_lock);
		pthread_mutex_unlock(&ob_lock);
	}
	urcu_mutex_unlock(&ob_mutex);
	return NULL;
}

static void *ob_waiter(void *arg)
{
	(void) arg;
	uatomic_set(&ob_tid[1], (pid_t) syscall(SYS_gettid));
	urcu_mutex_lock(&ob_mutex);
	urcu_mutex_unlock(&ob_mutex);
	return NULL;
}

/* Wait up to @ms for thread @tid to be asleep (state S in /proc). */
static bool asleep_within(pid_t tid, int ms)
{
	char path[64], buf[256], *p;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int) tid);
	for (i = 0; i < ms; i++) {
		f = fopen(path, "r");
		if (f) {
			p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
			fclose(f);
			if (p && p[1] == ' ' && p[2] == 'S')
				return true;
		}
		usleep(1000);
	}
	return false;
}

static void test_owner_blocked(int use_ec)
{
	struct urcu_mutex_attr attr;
	pthread_t owner, waiter;
	bool owner_asleep, waiter_asleep;

	urcu_mutex_attr_init(&attr);
	attr.owner_signals = URCU_MUTEX_OWNER_BLOCKED;
	attr.spin_ns = 2000000000U;
	urcu_mutex_init(&ob_mutex, &attr);
	ob_go = 0;
	ob_use_ec = use_ec;
	ob_tid[0] = ob_tid[1] = 0;
	pthread_create(&owner, NULL, ob_owner, NULL);
	while (!uatomic_read(&ob_tid[0]))
		usleep(1000);
	owner_asleep = asleep_within(ob_tid[0], 5000);
	pthread_create(&waiter, NULL, ob_waiter, NULL);
	while (!uatomic_read(&ob_tid[1]))
		usleep(1000);
	/* Half the spin cap: a waiter that spun on would still be running. */
	waiter_asleep = owner_asleep && asleep_within(ob_tid[1], 1000);
	pthread_mutex_lock(&ob_lock);
	uatomic_set(&ob_go, 1);
	urcu_cond_signal(&ob_cond);
	pthread_mutex_unlock(&ob_lock);
	urcu_ec_notify(&ob_ec);
	pthread_join(owner, NULL);
	pthread_join(waiter, NULL);
	ok(waiter_asleep, "a urcu_mutex owner asleep in %s is seen blocked: "
		"its waiter sleeps instead of spinning (owner asleep: %d)",
		use_ec ? "urcu_ec_wait()" : "urcu_cond_wait()", owner_asleep);
	urcu_mutex_destroy(&ob_mutex);
}

int main(void)
{
	plan_tests(47);
	test_errors();
	test_timeouts();
	test_signal_broadcast();
	test_broadcast_sizes();
	test_broadcast_busy();
	test_signal_busy();
	test_handoff_busy(false);
	test_handoff_busy(true);
	test_wait_ops();
	test_ec();
	test_owner_blocked(0);
	test_owner_blocked(1);
	return exit_status();
}
