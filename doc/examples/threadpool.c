// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A thread pool on urcu_cond (urcu/cond.h): a job queue under a
 * pthread mutex, workers that sleep on one condition while the queue is
 * empty, and a submitter that sleeps on another until every job is done.
 * urcu_cond is a drop-in for pthread_cond_t here; its waiters spin briefly
 * before they sleep, so short hand-offs cost no system call.
 *
 * Exits 0 when every job ran exactly once and the sum of their results is
 * right.
 *
 * Build: cc threadpool.c $(pkg-config --cflags --libs liburcu-rseq) -lpthread
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <urcu/cond.h>

#define NR_WORKERS	4
#define NR_JOBS		20000

struct job {
	struct job *next;
	unsigned long arg;
};

struct pool {
	pthread_mutex_t mutex;		/* protects everything below */
	struct urcu_cond nonempty;	/* queue has a job, or stop */
	struct urcu_cond idle;		/* pending dropped to 0 */
	struct job *head, **tail;
	unsigned long pending;		/* submitted, not finished */
	unsigned long sum;		/* of the jobs' results */
	unsigned long ran;
	bool stop;
	pthread_t workers[NR_WORKERS];
};

static unsigned long work(unsigned long arg)
{
	return arg * arg % 1000;
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	struct job *j;
	unsigned long r;

	pthread_mutex_lock(&p->mutex);
	for (;;) {
		while (!p->head && !p->stop)
			urcu_cond_wait(&p->nonempty, &p->mutex);
		if (!p->head)
			break;		/* stop, and nothing left to do */
		j = p->head;
		p->head = j->next;
		if (!p->head)
			p->tail = &p->head;
		pthread_mutex_unlock(&p->mutex);

		r = work(j->arg);
		free(j);

		pthread_mutex_lock(&p->mutex);
		p->sum += r;
		p->ran++;
		if (--p->pending == 0)
			urcu_cond_broadcast(&p->idle);
	}
	pthread_mutex_unlock(&p->mutex);
	return NULL;
}

static int pool_start(struct pool *p)
{
	int i;

	pthread_mutex_init(&p->mutex, NULL);
	urcu_cond_init(&p->nonempty, CLOCK_MONOTONIC);
	urcu_cond_init(&p->idle, CLOCK_MONOTONIC);
	p->head = NULL;
	p->tail = &p->head;
	p->pending = p->sum = p->ran = 0;
	p->stop = false;
	for (i = 0; i < NR_WORKERS; i++)
		if (pthread_create(&p->workers[i], NULL, worker, p))
			return -1;
	return 0;
}

static int pool_submit(struct pool *p, unsigned long arg)
{
	struct job *j = malloc(sizeof(*j));

	if (!j)
		return -1;
	j->next = NULL;
	j->arg = arg;
	pthread_mutex_lock(&p->mutex);
	*p->tail = j;
	p->tail = &j->next;
	p->pending++;
	pthread_mutex_unlock(&p->mutex);
	/* Signalling after the unlock is allowed, and spares the worker a wait. */
	urcu_cond_signal(&p->nonempty);
	return 0;
}

static void pool_wait_idle(struct pool *p)
{
	pthread_mutex_lock(&p->mutex);
	while (p->pending)
		urcu_cond_wait(&p->idle, &p->mutex);
	pthread_mutex_unlock(&p->mutex);
}

static int pool_stop(struct pool *p)
{
	int i, err;

	pthread_mutex_lock(&p->mutex);
	p->stop = true;
	pthread_mutex_unlock(&p->mutex);
	urcu_cond_broadcast(&p->nonempty);
	for (i = 0; i < NR_WORKERS; i++)
		pthread_join(p->workers[i], NULL);
	/* No thread waits any more: destroy succeeds. */
	err = urcu_cond_destroy(&p->nonempty) | urcu_cond_destroy(&p->idle);
	pthread_mutex_destroy(&p->mutex);
	return err;
}

int main(void)
{
	unsigned long i, expect = 0;
	struct pool p;
	int err;

	if (pool_start(&p)) {
		fprintf(stderr, "pool_start failed\n");
		return 1;
	}
	for (i = 0; i < NR_JOBS; i++) {
		if (pool_submit(&p, i)) {
			fprintf(stderr, "pool_submit failed\n");
			return 1;
		}
		expect += work(i);
	}
	pool_wait_idle(&p);
	err = pool_stop(&p);
	printf("%lu jobs ran, sum %lu (expected %lu)\n", p.ran, p.sum, expect);
	return err || p.ran != NR_JOBS || p.sum != expect ? 1 : 0;
}
