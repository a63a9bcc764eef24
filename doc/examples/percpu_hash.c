// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A sharded hash table under per-CPU locks (urcu/percpu/lock.h).
 *
 * Each shard is a small chained hash table counting occurrences of keys.
 * A writer locks the shard of the CPU it runs on and counts there: the lock
 * is taken with one rseq critical section, and the shard's lines stay in
 * that CPU's cache. A key can therefore be counted in several shards; a
 * lookup adds its counts over every shard (locking each remotely), and a
 * consistent snapshot of the whole table takes every shard at once.
 *
 * Exits 0 when every key's total is exactly what the threads counted.
 *
 * Build: cc percpu_hash.c $(pkg-config --cflags --libs liburcu-rseq) -lpthread
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <urcu/percpu/lock.h>

#define NR_BUCKETS	64
#define NR_KEYS		100
#define NR_THREADS	4
#define NR_OPS		200000

struct entry {
	struct entry *next;
	unsigned long key;
	unsigned long count;
};

struct shard {
	struct entry *bucket[NR_BUCKETS];
};

static struct urcu_percpu_lock *lock;
static struct shard *shards;
static int nr_shards;

static struct entry **slot(struct shard *s, unsigned long key)
{
	struct entry **p = &s->bucket[(key * 2654435761UL) % NR_BUCKETS];

	while (*p && (*p)->key != key)
		p = &(*p)->next;
	return p;
}

/* Count one occurrence of @key in the current CPU's shard. */
static int hash_count(unsigned long key)
{
	struct entry **p, *e;
	int s;

	s = urcu_percpu_lock(lock);	/* use s, not the CPU we run on later */
	p = slot(&shards[s], key);
	if (!*p) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			urcu_percpu_unlock(lock, s);
			return -ENOMEM;
		}
		e->key = key;
		*p = e;
	}
	(*p)->count++;
	urcu_percpu_unlock(lock, s);
	return 0;
}

/* Total count of @key: every shard, one at a time. */
static unsigned long hash_lookup(unsigned long key)
{
	unsigned long sum = 0;
	struct entry *e;
	int s;

	for (s = 0; s < nr_shards; s++) {
		urcu_percpu_lock_cpu(lock, s);
		e = *slot(&shards[s], key);
		if (e)
			sum += e->count;
		urcu_percpu_unlock(lock, s);
	}
	return sum;
}

/* Number of entries in the whole table, as of one instant. */
static unsigned long hash_nr_entries(void)
{
	unsigned long n = 0;
	struct entry *e;
	int s, b;

	urcu_percpu_lock_all(lock);
	for (s = 0; s < nr_shards; s++)
		for (b = 0; b < NR_BUCKETS; b++)
			for (e = shards[s].bucket[b]; e; e = e->next)
				n++;
	urcu_percpu_unlock_all(lock);
	return n;
}

static void *writer(void *arg)
{
	unsigned long seed = (unsigned long) arg, i;

	for (i = 0; i < NR_OPS; i++) {
		/* Every thread counts each key NR_OPS / NR_KEYS times. */
		if (hash_count((i + seed) % NR_KEYS))
			return (void *) 1;
	}
	return NULL;
}

int main(void)
{
	pthread_t tid[NR_THREADS];
	unsigned long key, n, bad = 0;
	struct entry *e, *next;
	void *ret;
	int i, s, b, err = 0;

	lock = urcu_percpu_lock_create(0);
	if (!lock) {
		perror("urcu_percpu_lock_create");
		return 1;
	}
	nr_shards = urcu_percpu_lock_nr_shards(lock);
	shards = calloc(nr_shards, sizeof(*shards));
	if (!shards) {
		perror("calloc");
		return 1;
	}
	for (i = 0; i < NR_THREADS; i++)
		if (pthread_create(&tid[i], NULL, writer, (void *) (long) i)) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	n = hash_nr_entries();	/* while the writers run: any value is fine */
	for (i = 0; i < NR_THREADS; i++) {
		pthread_join(tid[i], &ret);
		err |= ret != NULL;
	}
	for (key = 0; key < NR_KEYS; key++)
		if (hash_lookup(key) != (unsigned long) NR_THREADS * NR_OPS / NR_KEYS)
			bad++;
	n = hash_nr_entries();
	printf("%d shards, %lu entries, %lu keys with a wrong total\n",
			nr_shards, n, bad);

	for (s = 0; s < nr_shards; s++)
		for (b = 0; b < NR_BUCKETS; b++)
			for (e = shards[s].bucket[b]; e; e = next) {
				next = e->next;
				free(e);
			}
	free(shards);
	urcu_percpu_lock_destroy(lock);
	return err || bad || n < NR_KEYS ? 1 : 0;
}
