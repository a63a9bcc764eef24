// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Request objects from a per-CPU object cache (urcu/percpu/cache.h):
 * producers allocate and fill requests, hand them to consumers through a
 * mutex-protected list, and the consumers check and free them, so most
 * objects are freed on another thread (and often another CPU) than the one
 * that allocated them. At the end, drain() gives the memory back.
 *
 * Exits 0 when every request arrived intact exactly once, the statistics
 * count as many allocations as frees, and no slab page stays resident after
 * the drain.
 *
 * Build: cc object_cache.c $(pkg-config --cflags --libs liburcu-rseq) -lpthread
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <urcu/percpu/cache.h>

#define NR_PRODUCERS	2
#define NR_CONSUMERS	2
#define NR_REQUESTS	100000UL	/* per producer */

struct request {
	struct request *next;
	unsigned long id;
	unsigned long check;		/* id * 2654435761, to spot corruption */
	char payload[232];		/* 256 bytes in all */
};

static struct urcu_percpu_cache *cache;
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t list_cond = PTHREAD_COND_INITIALIZER;
static struct request *list;
static unsigned int producers_left = NR_PRODUCERS;

static void *producer(void *arg)
{
	unsigned long base = (uintptr_t) arg * NR_REQUESTS, i;

	for (i = 0; i < NR_REQUESTS; i++) {
		struct request *r = urcu_percpu_cache_alloc(cache);

		if (!r) {
			perror("urcu_percpu_cache_alloc");
			return (void *) 1;
		}
		r->id = base + i;
		r->check = r->id * 2654435761UL;
		pthread_mutex_lock(&list_lock);
		r->next = list;
		list = r;
		pthread_cond_signal(&list_cond);
		pthread_mutex_unlock(&list_lock);
	}
	pthread_mutex_lock(&list_lock);
	if (--producers_left == 0)
		pthread_cond_broadcast(&list_cond);
	pthread_mutex_unlock(&list_lock);
	return NULL;
}

static unsigned char *seen;	/* one byte per request id */

static void *consumer(void *arg)
{
	unsigned long bad = 0;

	(void) arg;
	for (;;) {
		struct request *batch, *next;

		pthread_mutex_lock(&list_lock);
		while (!list && producers_left)
			pthread_cond_wait(&list_cond, &list_lock);
		batch = list;
		list = NULL;
		pthread_mutex_unlock(&list_lock);
		if (!batch)
			break;
		for (; batch; batch = next) {
			next = batch->next;
			if (batch->check != batch->id * 2654435761UL
					|| batch->id >= NR_PRODUCERS * NR_REQUESTS
					|| __atomic_fetch_add(&seen[batch->id], 1,
						__ATOMIC_RELAXED))
				bad++;
			urcu_percpu_cache_free(cache, batch);
		}
	}
	return (void *) bad;
}

int main(void)
{
	static unsigned char seen_ids[NR_PRODUCERS * NR_REQUESTS];
	pthread_t prod[NR_PRODUCERS], cons[NR_CONSUMERS];
	/* Count allocs and frees too: the check below compares them. */
	struct urcu_percpu_cache_attr attr = {
		.flags = URCU_PERCPU_CACHE_STATS,
	};
	struct urcu_percpu_cache_stats st;
	unsigned long bad = 0, missing = 0, i;
	void *ret;

	seen = seen_ids;
	cache = urcu_percpu_cache_create(sizeof(struct request), &attr);
	if (!cache) {
		perror("urcu_percpu_cache_create");
		return 1;
	}
	for (i = 0; i < NR_CONSUMERS; i++)
		pthread_create(&cons[i], NULL, consumer, NULL);
	for (i = 0; i < NR_PRODUCERS; i++)
		pthread_create(&prod[i], NULL, producer, (void *) (uintptr_t) i);
	for (i = 0; i < NR_PRODUCERS; i++) {
		pthread_join(prod[i], &ret);
		bad += (uintptr_t) ret;
	}
	for (i = 0; i < NR_CONSUMERS; i++) {
		pthread_join(cons[i], &ret);
		bad += (uintptr_t) ret;
	}
	for (i = 0; i < NR_PRODUCERS * NR_REQUESTS; i++)
		missing += seen_ids[i] != 1;

	if (urcu_percpu_cache_drain(cache) || urcu_percpu_cache_stats(cache, &st))
		return 1;
	printf("%llu allocs, %llu frees, %llu refills, %llu spills, "
			"%llu bytes resident after drain; %lu bad, %lu missing\n",
			(unsigned long long) st.allocs,
			(unsigned long long) st.frees,
			(unsigned long long) st.refills,
			(unsigned long long) st.spills,
			(unsigned long long) st.resident_bytes, bad, missing);
	if (urcu_percpu_cache_destroy(cache))
		return 1;
	return bad == 0 && missing == 0 && st.allocs == st.frees
		&& st.allocs == NR_PRODUCERS * NR_REQUESTS
		&& st.resident_bytes == 0 ? 0 : 1;
}
