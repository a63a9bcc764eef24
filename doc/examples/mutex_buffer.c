// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A bounded buffer guarded by urcu_mutex (urcu/mutex.h), with urcu_cond
 * conditions for "not full" and "not empty". urcu_cond takes any mutex
 * through its lock/unlock callbacks (urcu_cond_wait_ops), so the same
 * condition code serves pthread_mutex_t and urcu_mutex.
 *
 * Three producers each put numbers 1..NR_ITEMS; three consumers take them.
 * Exits 0 when every item was taken exactly once: the count and the sum of
 * what was consumed match what was produced.
 *
 * Build: cc mutex_buffer.c $(pkg-config --cflags --libs liburcu-rseq) -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <urcu/cond.h>
#include <urcu/mutex.h>

#define NR_PRODUCERS	3
#define NR_CONSUMERS	3
#define NR_ITEMS	50000UL
#define CAPACITY	64

struct buffer {
	struct urcu_mutex lock;		/* protects everything below */
	struct urcu_cond not_full, not_empty;
	unsigned long slot[CAPACITY];
	unsigned int head, count;
	unsigned int producers_left;
};

static struct buffer buf = {
	.lock = URCU_MUTEX_INITIALIZER,
	.producers_left = NR_PRODUCERS,
};

static int lock_fn(void *m)
{
	urcu_mutex_lock(m);
	return 0;
}

static int unlock_fn(void *m)
{
	return urcu_mutex_unlock(m);
}

/* Waits on @c, releasing and re-taking the buffer's urcu_mutex. */
static void wait_on(struct urcu_cond *c)
{
	urcu_cond_wait_ops(c, lock_fn, unlock_fn, &buf.lock, NULL);
}

static void *producer(void *arg)
{
	unsigned long i;

	(void) arg;
	for (i = 1; i <= NR_ITEMS; i++) {
		urcu_mutex_lock(&buf.lock);
		while (buf.count == CAPACITY)
			wait_on(&buf.not_full);
		buf.slot[(buf.head + buf.count) % CAPACITY] = i;
		buf.count++;
		urcu_mutex_unlock(&buf.lock);
		urcu_cond_signal(&buf.not_empty);
	}
	urcu_mutex_lock(&buf.lock);
	if (--buf.producers_left == 0)
		urcu_cond_broadcast(&buf.not_empty);	/* consumers may stop */
	urcu_mutex_unlock(&buf.lock);
	return NULL;
}

struct tally {
	unsigned long items, sum;
};

static void *consumer(void *arg)
{
	struct tally *t = arg;

	for (;;) {
		unsigned long v;

		urcu_mutex_lock(&buf.lock);
		while (buf.count == 0 && buf.producers_left)
			wait_on(&buf.not_empty);
		if (buf.count == 0) {
			urcu_mutex_unlock(&buf.lock);
			return NULL;
		}
		v = buf.slot[buf.head];
		buf.head = (buf.head + 1) % CAPACITY;
		buf.count--;
		urcu_mutex_unlock(&buf.lock);
		urcu_cond_signal(&buf.not_full);
		t->items++;
		t->sum += v;
	}
}

int main(void)
{
	pthread_t prod[NR_PRODUCERS], cons[NR_CONSUMERS];
	struct tally tally[NR_CONSUMERS] = { { 0, 0 } };
	unsigned long items = 0, sum = 0;
	unsigned long want_items = NR_PRODUCERS * NR_ITEMS;
	unsigned long want_sum = NR_PRODUCERS * (NR_ITEMS * (NR_ITEMS + 1) / 2);
	int i;

	for (i = 0; i < NR_CONSUMERS; i++)
		if (pthread_create(&cons[i], NULL, consumer, &tally[i]))
			return 1;
	for (i = 0; i < NR_PRODUCERS; i++)
		if (pthread_create(&prod[i], NULL, producer, NULL))
			return 1;
	for (i = 0; i < NR_PRODUCERS; i++)
		pthread_join(prod[i], NULL);
	for (i = 0; i < NR_CONSUMERS; i++) {
		pthread_join(cons[i], NULL);
		items += tally[i].items;
		sum += tally[i].sum;
	}
	printf("consumed %lu items (want %lu), sum %lu (want %lu)\n",
			items, want_items, sum, want_sum);
	if (urcu_mutex_destroy(&buf.lock) || urcu_cond_destroy(&buf.not_full)
			|| urcu_cond_destroy(&buf.not_empty))
		return 1;
	return items == want_items && sum == want_sum ? 0 : 1;
}
