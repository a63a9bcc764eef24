// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-CPU statistics (urcu/percpu/counter.h): worker threads count packets
 * and bytes with urcu_percpu_counter_inc() and _add(), one rseq critical
 * section each, no atomic instruction. A statistics thread samples the
 * rates with urcu_percpu_counter_read_reset() while they run: each call
 * returns exactly what was added since the previous one, so the samples
 * add up to the totals without stopping the workers.
 *
 * Exits 0 when the samples plus the final read-and-reset equal what the
 * workers counted.
 *
 * Build: cc percpu_stats.c $(pkg-config --cflags --libs liburcu-rseq) -lpthread
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/counter.h>

#define NR_WORKERS	4
#define NR_PACKETS	200000

static struct urcu_percpu_counter *packets, *bytes;
static int workers_done;

static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t) arg;
	long i;

	for (i = 0; i < NR_PACKETS; i++) {
		urcu_percpu_counter_inc(packets);
		/* a packet of 64 to 1563 bytes */
		urcu_percpu_counter_add(bytes, 64 + (intptr_t) ((i + id) % 1500));
	}
	return NULL;
}

static void *stats(void *arg)
{
	intptr_t *sum = arg;	/* sum[0]: packets, sum[1]: bytes */
	long samples = 0;

	while (!uatomic_read(&workers_done)) {
		sum[0] += urcu_percpu_counter_read_reset(packets);
		sum[1] += urcu_percpu_counter_read_reset(bytes);
		samples++;
	}
	printf("%ld samples taken while the workers ran\n", samples);
	return NULL;
}

int main(void)
{
	pthread_t workers[NR_WORKERS], stats_thread;
	intptr_t sum[2] = { 0, 0 }, want_bytes = 0;
	uintptr_t id;
	long i;

	packets = urcu_percpu_counter_create(0);
	bytes = urcu_percpu_counter_create(0);
	if (!packets || !bytes) {
		perror("urcu_percpu_counter_create");
		return 1;
	}
	if (pthread_create(&stats_thread, NULL, stats, sum))
		return 1;
	for (id = 0; id < NR_WORKERS; id++)
		if (pthread_create(&workers[id], NULL, worker, (void *) id))
			return 1;
	for (id = 0; id < NR_WORKERS; id++)
		pthread_join(workers[id], NULL);
	uatomic_set(&workers_done, 1);
	pthread_join(stats_thread, NULL);

	/* What the last sample missed. */
	sum[0] += urcu_percpu_counter_read_reset(packets);
	sum[1] += urcu_percpu_counter_read_reset(bytes);

	for (id = 0; id < NR_WORKERS; id++)
		for (i = 0; i < NR_PACKETS; i++)
			want_bytes += 64 + (intptr_t) ((i + id) % 1500);
	printf("packets %ld (want %ld), bytes %ld (want %ld)%s\n",
		(long) sum[0], (long) NR_WORKERS * NR_PACKETS,
		(long) sum[1], (long) want_bytes,
		urcu_percpu_counter_is_atomic(packets) ?
			" [atomic mode: no RSEQ fence]" : "");

	urcu_percpu_counter_destroy(packets);
	urcu_percpu_counter_destroy(bytes);
	if (sum[0] != (intptr_t) NR_WORKERS * NR_PACKETS || sum[1] != want_bytes) {
		fprintf(stderr, "percpu_stats: the sums do not match\n");
		return 1;
	}
	return 0;
}
