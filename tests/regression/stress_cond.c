// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Stress of wait-stacks, condition variables and event counts, with more
 * threads than CPUs, a signal storm and forced migrations:
 * - a bounded queue between producers and consumers (urcu_cond): every item
 *   is consumed exactly once (count and sums), and no consumer sleeps past
 *   a 20 s deadline while items are waiting (a lost wake-up);
 * - wait-stack wake-ones against waiters with random short deadlines: the
 *   number of successful wake_one calls equals the number of waits that
 *   returned 0 (a timed-out waiter is never woken, a wake is never lost),
 *   and no ETIMEDOUT comes before its deadline;
 * - timed condition waits with random deadlines on both clocks: never early;
 * - broadcast to 64 waiters wakes all 64; destroy while they wait: EBUSY;
 * - event counts: a lock-free token counter, consumers wait with urcu_ec;
 * - event counts as hand-offs: pairs of threads pass a turn published with
 *   a plain store, one side of every pair waiting on one shared event count
 *   (notifiers race on it): turns strictly alternate, none is lost.
 * Duration: URCU_RSEQ_STRESS_MS per phase (300 ms by default).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <urcu/uatomic.h>
#include <urcu/cond.h>

#include "tap.h"
#include "stress.h"

#define STRESS_FLAGS	(STRESS_SIGNALS | STRESS_MIGRATIONS)
/*
 * A wait this long with work pending: a lost wake-up. A hang detector, not
 * a latency bound: generous, since a starved host can hold a producer off
 * its CPU between its enqueue and its signal for seconds.
 */
#define STUCK_NS	20000000000LL

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec ns_to_ts(int64_t t)
{
	struct timespec ts = { t / 1000000000LL, t % 1000000000LL };

	return ts;
}

/* Phase 1: bounded queue, urcu_cond signal per item. */
#define QSIZE	4

static struct {
	pthread_mutex_t lock;
	struct urcu_cond not_empty, not_full;
	uint64_t items[QSIZE];
	unsigned int head, count;
	int producers_left;
	uint64_t produced, produced_sum, consumed, consumed_sum;
	unsigned long stuck;
} bq = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int bq_wait(struct urcu_cond *c, int *pending)
{
	struct timespec dl = ns_to_ts(now_ns(CLOCK_REALTIME) + STUCK_NS);
	int ret = urcu_cond_timedwait(c, &bq.lock, &dl);

	if (ret == ETIMEDOUT && *pending)
		bq.stuck++;
	return ret;
}

static void bq_worker(struct stress_thread *t)
{
	uint64_t v, seq = 0;
	int not_full_pending, not_empty_pending;

	if (t->id % 2 == 0) {	/* producer */
		while (!stress_should_stop(t)) {
			v = ((uint64_t) t->id << 40) | ++seq;
			pthread_mutex_lock(&bq.lock);
			for (;;) {
				not_full_pending = bq.count < QSIZE;
				if (not_full_pending)
					break;
				bq_wait(&bq.not_full, &not_full_pending);
			}
			bq.items[(bq.head + bq.count++) % QSIZE] = v;
			bq.produced++;
			bq.produced_sum += v;
			pthread_mutex_unlock(&bq.lock);
			urcu_cond_signal(&bq.not_empty);
		}
		pthread_mutex_lock(&bq.lock);
		bq.producers_left--;
		pthread_mutex_unlock(&bq.lock);
		urcu_cond_broadcast(&bq.not_empty);
		return;
	}
	for (;;) {	/* consumer: until the producers are gone and the queue is empty */
		pthread_mutex_lock(&bq.lock);
		for (;;) {
			not_empty_pending = bq.count > 0;
			if (not_empty_pending || !bq.producers_left)
				break;
			bq_wait(&bq.not_empty, &not_empty_pending);
		}
		if (!bq.count) {
			pthread_mutex_unlock(&bq.lock);
			return;
		}
		v = bq.items[bq.head];
		bq.head = (bq.head + 1) % QSIZE;
		bq.count--;
		bq.consumed++;
		bq.consumed_sum += v;
		pthread_mutex_unlock(&bq.lock);
		urcu_cond_signal(&bq.not_full);
	}
}

static void test_bounded_queue(unsigned int nr_threads)
{
	struct stress_report rep;

	bq.producers_left = nr_threads / 2;
	stress_run(bq_worker, NULL, nr_threads, STRESS_FLAGS, &rep);
	ok(bq.produced == bq.consumed && bq.produced_sum == bq.consumed_sum,
		"bounded queue, %u threads: %llu hand-offs, none lost or duplicated",
		nr_threads, (unsigned long long) bq.consumed);
	ok(bq.stuck == 0, "no consumer or producer slept 20 s with work pending (%lu)",
		bq.stuck);
	ok(urcu_cond_destroy(&bq.not_empty) == 0
		&& urcu_cond_destroy(&bq.not_full) == 0, "nobody left waiting");
}

/* Phase 2: raw wait-stack, wake_one against random deadlines. */
static struct {
	struct urcu_wait_queue q;
	unsigned long wakes, woken, timedout, early, errors;
} ws;

static void ws_worker(struct stress_thread *t)
{
	struct urcu_wait_node node;
	struct timespec dl;
	int64_t d;
	int ret;

	while (!stress_should_stop(t)) {
		if (t->id % 3 == 0) {	/* waker */
			if (urcu_wait_wake_one(&ws.q))
				uatomic_inc(&ws.wakes);
			if (stress_rand_below(t, 4) == 0)
				usleep(stress_rand_below(t, 50));
			continue;
		}
		urcu_wait_node_init(&node);
		urcu_wait_add(&ws.q, &node);
		d = now_ns(CLOCK_MONOTONIC) + stress_rand_below(t, 200000);
		dl = ns_to_ts(d);
		ret = urcu_wait(&node, stress_rand_below(t, 8) ? &dl : NULL);
		if (ret == 0) {
			uatomic_inc(&ws.woken);
		} else if (ret == ETIMEDOUT) {
			uatomic_inc(&ws.timedout);
			if (now_ns(CLOCK_MONOTONIC) < d)
				uatomic_inc(&ws.early);
		} else {
			uatomic_inc(&ws.errors);
		}
	}
}

/*
 * Waiters without a deadline may still sleep when the stop comes: this
 * thread keeps waking until the workers are joined.
 */
static int ws_stopping;
static unsigned long ws_extra;

static void *ws_final_waker(void *arg)
{
	while (!uatomic_read(&ws_stopping)) {
		if (urcu_wait_wake_one(&ws.q))
			ws_extra++;
		usleep(100);
	}
	return NULL;
}

static void test_wait_stack(unsigned int nr_threads)
{
	struct stress_group *g;
	pthread_t th;

	g = stress_start(ws_worker, NULL, nr_threads, STRESS_FLAGS);
	usleep(stress_duration_ms() * 1000);
	pthread_create(&th, NULL, ws_final_waker, NULL);
	stress_stop(g, NULL);
	uatomic_set(&ws_stopping, 1);
	pthread_join(th, NULL);
	ok(ws.wakes + ws_extra == ws.woken,
		"wait-stack: %lu wakes, %lu woken, %lu timed out: each wake woke exactly one",
		ws.wakes + ws_extra, ws.woken, ws.timedout);
	ok(ws.early == 0 && ws.errors == 0, "no early timeout (%lu), no error (%lu)",
		ws.early, ws.errors);
	ok(urcu_wait_queue_empty(&ws.q), "wait-stack empty at the end");
}

/* Phase 3: timed condition waits with random deadlines, nobody signals. */
static struct urcu_cond tc[2];	/* zero-filled: CLOCK_REALTIME; [1] set to MONOTONIC */
static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long tc_waits, tc_early, tc_bad;

static void tc_worker(struct stress_thread *t)
{
	struct urcu_cond *c = &tc[t->id % 2];
	clockid_t clock = t->id % 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
	struct timespec dl;
	int64_t d;
	int ret;

	while (!stress_should_stop(t)) {
		d = now_ns(clock) + stress_rand_below(t, 300000);
		dl = ns_to_ts(d);
		pthread_mutex_lock(&tc_lock);
		ret = urcu_cond_timedwait(c, &tc_lock, &dl);
		pthread_mutex_unlock(&tc_lock);
		uatomic_inc(&tc_waits);
		/* Signals come only from the other phase: none here, so 0 is wrong. */
		if (ret != ETIMEDOUT)
			uatomic_inc(&tc_bad);
		else if (now_ns(clock) < d)
			uatomic_inc(&tc_early);
	}
}

static void test_timed(unsigned int nr_threads)
{
	urcu_cond_init(&tc[1], CLOCK_MONOTONIC);
	stress_run(tc_worker, NULL, nr_threads, STRESS_FLAGS, NULL);
	ok(tc_waits > 0 && tc_early == 0 && tc_bad == 0,
		"%lu timed waits on both clocks: always returned, never early (%lu), "
		"always ETIMEDOUT (%lu not)", tc_waits, tc_early, tc_bad);
}

/* Phase 4: broadcast to 64 waiters. */
#define NR_BCAST	64

static struct urcu_cond bc_cond;
static pthread_mutex_t bc_lock = PTHREAD_MUTEX_INITIALIZER;
static int bc_round, bc_waiting, bc_woken;

static void *bc_waiter(void *arg)
{
	int round = (int) (intptr_t) arg;

	pthread_mutex_lock(&bc_lock);
	bc_waiting++;
	while (bc_round == round)
		urcu_cond_wait(&bc_cond, &bc_lock);
	bc_woken++;
	pthread_mutex_unlock(&bc_lock);
	return NULL;
}

static void test_broadcast(void)
{
	pthread_t t[NR_BCAST];
	int i, round, all = 1, busy = 1;

	for (round = 0; round < 5; round++) {
		bc_waiting = bc_woken = 0;
		for (i = 0; i < NR_BCAST; i++)
			pthread_create(&t[i], NULL, bc_waiter, (void *) (intptr_t) round);
		for (;;) {
			pthread_mutex_lock(&bc_lock);
			i = bc_waiting;
			pthread_mutex_unlock(&bc_lock);
			if (i == NR_BCAST)
				break;
			usleep(1000);
		}
		busy &= urcu_cond_destroy(&bc_cond) == EBUSY;
		pthread_mutex_lock(&bc_lock);
		bc_round++;
		urcu_cond_broadcast(&bc_cond);
		pthread_mutex_unlock(&bc_lock);
		for (i = 0; i < NR_BCAST; i++)
			pthread_join(t[i], NULL);
		all &= bc_woken == NR_BCAST;
	}
	ok(all, "broadcast to %d waiters wakes all of them, 5 rounds", NR_BCAST);
	ok(busy, "destroy while they wait: EBUSY");
	ok(urcu_cond_destroy(&bc_cond) == 0, "destroy afterwards: 0");
}

/* Phase 5: event counts over a lock-free token counter. */
static struct urcu_ec ec;
static long tokens, ec_produced, ec_consumed;
static int ec_producers_left;
static unsigned long ec_stuck;

static bool take_token(void)
{
	long v = uatomic_read(&tokens);

	while (v > 0) {
		long cur = uatomic_cmpxchg(&tokens, v, v - 1);

		if (cur == v)
			return true;
		v = cur;
	}
	return false;
}

static void ec_worker(struct stress_thread *t)
{
	struct timespec dl;
	uint32_t key;

	if (t->id % 2 == 0) {
		while (!stress_should_stop(t)) {
			uatomic_inc(&tokens);
			uatomic_inc(&ec_produced);
			urcu_ec_notify(&ec);
			if (stress_rand_below(t, 8) == 0)
				sched_yield();
		}
		uatomic_dec(&ec_producers_left);
		urcu_ec_notify(&ec);
		return;
	}
	for (;;) {
		if (take_token()) {
			uatomic_inc(&ec_consumed);
			continue;
		}
		key = urcu_ec_prepare(&ec);
		if (take_token()) {
			uatomic_inc(&ec_consumed);
			continue;
		}
		if (!uatomic_read(&ec_producers_left))
			return;
		dl = ns_to_ts(now_ns(CLOCK_MONOTONIC) + STUCK_NS);
		if (urcu_ec_wait(&ec, key, &dl) == ETIMEDOUT
				&& (uatomic_read(&tokens) > 0
					|| !uatomic_read(&ec_producers_left)))
			uatomic_inc(&ec_stuck);
	}
}

static void test_ec(unsigned int nr_threads)
{
	ec_producers_left = nr_threads / 2;
	stress_run(ec_worker, NULL, nr_threads, STRESS_FLAGS, NULL);
	ok(ec_produced == ec_consumed && tokens == 0,
		"event count: %ld tokens produced, all consumed once", ec_produced);
	ok(ec_stuck == 0, "no consumer slept through a notify (%lu)", ec_stuck);
}

/*
 * Phase 6: hand-offs. Each pair passes a turn back and forth; the turn is
 * a plain store, so the notify's own ordering is all that publishes it.
 * Side 0 of each pair waits on its own event count, side 1 of every pair
 * on one shared count that all pairs notify at once, spurious returns
 * included. The holder bumps the pair's count without atomics: two
 * holders at once would lose increments.
 */
#define NR_PAIRS_MAX	16

static struct handoff_pair {
	struct urcu_ec ec;	/* side 0 waits here */
	int turn;		/* the side that holds it */
	int stop;
	long rounds;		/* written by the holder only */
	long done[2];
} __attribute__((aligned(128))) pairs[NR_PAIRS_MAX];
static struct urcu_ec pairs_ec;	/* side 1 of every pair waits here */
static unsigned long handoff_stuck;

static void handoff_worker(struct stress_thread *t)
{
	struct handoff_pair *p = &pairs[t->id / 2];
	int me = t->id % 2;
	struct urcu_ec *mine = me ? &pairs_ec : &p->ec;
	struct urcu_ec *theirs = me ? &p->ec : &pairs_ec;
	struct timespec dl;
	uint32_t key;

	for (;;) {
		key = urcu_ec_prepare(mine);
		if (CMM_LOAD_SHARED(p->stop))
			return;
		if (CMM_LOAD_SHARED(p->turn) != me) {
			dl = ns_to_ts(now_ns(CLOCK_MONOTONIC) + STUCK_NS);
			if (urcu_ec_wait(mine, key, &dl) == ETIMEDOUT
					&& (CMM_LOAD_SHARED(p->turn) == me
						|| CMM_LOAD_SHARED(p->stop)))
				uatomic_inc(&handoff_stuck);
			continue;
		}
		p->rounds++;
		p->done[me]++;
		if (stress_should_stop(t)) {
			CMM_STORE_SHARED(p->stop, 1);
			urcu_ec_notify(theirs);
			return;
		}
		CMM_STORE_SHARED(p->turn, !me);
		urcu_ec_notify(theirs);
	}
}

static void test_handoff(unsigned int nr_threads)
{
	bool alternate = true;
	long rounds = 0;
	unsigned int i;

	nr_threads &= ~1U;
	if (nr_threads > 2 * NR_PAIRS_MAX)
		nr_threads = 2 * NR_PAIRS_MAX;
	stress_run(handoff_worker, NULL, nr_threads, STRESS_FLAGS, NULL);
	for (i = 0; i < nr_threads / 2; i++) {
		rounds += pairs[i].rounds;
		if (pairs[i].rounds != pairs[i].done[0] + pairs[i].done[1]
				|| pairs[i].done[0] - pairs[i].done[1] < 0
				|| pairs[i].done[0] - pairs[i].done[1] > 1)
			alternate = false;
	}
	ok(alternate && rounds > 0, "hand-offs over event counts: %ld turns "
		"in %u pairs, strictly alternating", rounds, nr_threads / 2);
	ok(handoff_stuck == 0, "no side slept through its turn (%lu)",
		handoff_stuck);
}

int main(void)
{
	unsigned int n = 2 * stress_nr_cpus() + 2;

	if (n < 6)
		n = 6;
	plan_tests(14);
	test_bounded_queue(n);
	test_wait_stack(n + 1);
	test_timed(n);
	test_broadcast();
	test_ec(n);
	test_handoff(n);
	return exit_status();
}
