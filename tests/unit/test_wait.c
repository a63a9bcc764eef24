// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of urcu/wait.h: every function, every error, LIFO order, the
 * skipping of timed-out waiters, and deadlines that are never early.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <urcu/uatomic.h>
#include <urcu/wait.h>

#include "tap.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec deadline_in(int64_t ns)
{
	int64_t t = now_ns() + ns;
	struct timespec ts = { t / 1000000000LL, t % 1000000000LL };

	return ts;
}

struct waiter {
	struct urcu_wait_queue *q;
	int id;
	int64_t timeout_ns;	/* 0: none */
	int ret;
	int added;
	int done;
};

static int order[16];
static int order_len;

static void *waiter_thread(void *arg)
{
	struct waiter *w = (struct waiter *) arg;
	struct urcu_wait_node node;
	struct timespec dl;

	urcu_wait_node_init(&node);
	if (w->timeout_ns)
		dl = deadline_in(w->timeout_ns);
	urcu_wait_add(w->q, &node);
	uatomic_set(&w->added, 1);
	w->ret = urcu_wait(&node, w->timeout_ns ? &dl : NULL);
	order[uatomic_add_return(&order_len, 1) - 1] = w->id;
	uatomic_set(&w->done, 1);
	return NULL;
}

static void wait_flag(int *flag)
{
	while (!uatomic_read(flag))
		usleep(100);
}

static void test_basic(void)
{
	DEFINE_URCU_WAIT_QUEUE(q);
	struct urcu_wait_queue zq;
	struct urcu_wait_node a, b;
	struct timespec bad = { 0, 1000000000L }, neg = { -1, 0 }, past = { 0, 0 };
	int64_t t0;

	ok1(urcu_wait_queue_empty(&q));
	ok(!urcu_wait_wake_one(&q), "wake_one on an empty queue wakes nobody");
	ok(urcu_wait_wake_all(&q) == 0, "wake_all on an empty queue returns 0");

	urcu_wait_node_init(&a);
	ok(urcu_wait(&a, NULL) == EINVAL, "wait on a node never added: EINVAL");
	ok(urcu_wait(NULL, NULL) == EINVAL, "wait on NULL: EINVAL");

	ok(urcu_wait_add(&q, &a), "first add reports an empty queue");
	urcu_wait_node_init(&b);
	ok(!urcu_wait_add(&q, &b), "second add reports a non-empty queue");
	ok(urcu_wait(&b, &bad) == EINVAL, "tv_nsec = 1e9: EINVAL");
	ok(urcu_wait(&b, &neg) == EINVAL, "negative tv_sec: EINVAL");
	ok(urcu_wait_clock(&b, CLOCK_PROCESS_CPUTIME_ID, NULL) == EINVAL,
		"unsupported clock: EINVAL");
	ok(urcu_wait(&b, &past) == ETIMEDOUT, "past deadline: ETIMEDOUT");
	ok(!urcu_wait_queue_empty(&q), "the other node is still queued");
	t0 = now_ns();
	{
		struct timespec dl = deadline_in(20000000);

		ok(urcu_wait(&a, &dl) == ETIMEDOUT, "20 ms deadline: ETIMEDOUT");
		ok(now_ns() >= (int64_t) dl.tv_sec * 1000000000LL + dl.tv_nsec, "not early");
	}
	ok(now_ns() - t0 >= 20000000, "waited at least 20 ms");
	ok(urcu_wait_queue_empty(&q), "timed-out nodes are unlinked");
	ok(!urcu_wait_wake_one(&q), "timed-out waiters are never woken");

	memset(&zq, 0, sizeof(zq));
	urcu_wait_node_init(&a);
	ok(urcu_wait_add(&zq, &a), "zero-filled queue: first add sees it empty");
	ok(urcu_wait(&a, &past) == ETIMEDOUT && urcu_wait_queue_empty(&zq),
		"zero-filled queue: timeout unlinks");
	urcu_wait_queue_init(&zq);
	ok1(urcu_wait_queue_empty(&zq));
}

/* Waiters added in a known order are woken newest first. */
static void test_lifo(void)
{
	DEFINE_URCU_WAIT_QUEUE(q);
	struct waiter w[3];
	pthread_t t[3];
	int i;

	order_len = 0;
	for (i = 0; i < 3; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].q = &q;
		w[i].id = i;
		pthread_create(&t[i], NULL, waiter_thread, &w[i]);
		wait_flag(&w[i].added);
	}
	for (i = 2; i >= 0; i--) {
		ok(urcu_wait_wake_one(&q), "wake_one finds waiter %d", i);
		wait_flag(&w[i].done);
	}
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	ok(order[0] == 2 && order[1] == 1 && order[2] == 0 && w[0].ret == 0,
		"LIFO: woken 2, 1, 0");
	ok(!urcu_wait_wake_one(&q), "queue empty afterwards");
}

/* A wake_one after a waiter timed out wakes the one still waiting. */
static void test_skip_timedout(void)
{
	DEFINE_URCU_WAIT_QUEUE(q);
	struct waiter w[2];
	pthread_t t[2];
	int i;

	order_len = 0;
	for (i = 0; i < 2; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].q = &q;
		w[i].id = i;
		w[i].timeout_ns = i ? 5000000 : 0;	/* the newest times out */
		pthread_create(&t[i], NULL, waiter_thread, &w[i]);
		wait_flag(&w[i].added);
	}
	wait_flag(&w[1].done);
	ok(w[1].ret == ETIMEDOUT, "the newest waiter timed out");
	ok(urcu_wait_wake_one(&q), "wake_one wakes the other waiter");
	wait_flag(&w[0].done);
	ok(w[0].ret == 0, "the older waiter returns 0");
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}

static void test_wake_all(void)
{
	DEFINE_URCU_WAIT_QUEUE(q);
	struct waiter w[8];
	pthread_t t[8];
	int i, woken, all_ok = 1;

	for (i = 0; i < 8; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].q = &q;
		w[i].id = i;
		pthread_create(&t[i], NULL, waiter_thread, &w[i]);
	}
	for (i = 0; i < 8; i++)
		wait_flag(&w[i].added);
	usleep(20000);	/* let some of them fall asleep on the futex */
	woken = urcu_wait_wake_all(&q);
	for (i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		all_ok &= w[i].ret == 0;
	}
	ok(woken == 8, "wake_all reports 8 woken (%d)", woken);
	ok(all_ok, "every waiter returned 0");
	ok1(urcu_wait_queue_empty(&q));
}

int main(void)
{
	plan_tests(31);
	test_basic();
	test_lifo();
	test_skip_timedout();
	test_wake_all();
	return exit_status();
}
