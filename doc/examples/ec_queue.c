// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A lock-free multi-producer queue (liburcu's wfcqueue) whose consumer
 * sleeps on an event count (urcu_ec in urcu/cond.h) while the queue is
 * empty: no mutex anywhere, and no lost wake-up. The consumer reads the
 * count with urcu_ec_prepare() before it checks the queue; a producer
 * enqueues, then calls urcu_ec_notify(), which costs two loads and a
 * fence, and no store, when nobody waits. A notify between the prepare and
 * the wait makes the wait return at once.
 *
 * Exits 0 when the consumer dequeued every item exactly once.
 *
 * Build: cc ec_queue.c $(pkg-config --cflags --libs liburcu-rseq) -lpthread
 */
#define _LGPL_SOURCE	/* wfcqueue inline: no -lurcu-common needed */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <urcu/cond.h>
#include <urcu/wfcqueue.h>

#define NR_PRODUCERS	3
#define NR_ITEMS	100000UL	/* per producer */

struct item {
	struct cds_wfcq_node node;
	unsigned long value;
};

static struct cds_wfcq_head head;
static struct cds_wfcq_tail tail;
static struct urcu_ec nonempty = URCU_EC_INITIALIZER;

static void *producer(void *arg)
{
	unsigned long i;

	(void) arg;
	for (i = 1; i <= NR_ITEMS; i++) {
		struct item *it = malloc(sizeof(*it));

		if (!it)
			abort();
		cds_wfcq_node_init(&it->node);
		it->value = i;
		cds_wfcq_enqueue(&head, &tail, &it->node);
		urcu_ec_notify(&nonempty);
		if (i % 1000 == 0)
			usleep(100);	/* bursts, so the consumer sleeps */
	}
	return NULL;
}

int main(void)
{
	pthread_t prod[NR_PRODUCERS];
	unsigned long items = 0, sum = 0, sleeps = 0;
	unsigned long want = NR_PRODUCERS * NR_ITEMS;
	int i;

	cds_wfcq_init(&head, &tail);
	for (i = 0; i < NR_PRODUCERS; i++)
		if (pthread_create(&prod[i], NULL, producer, NULL))
			return 1;
	while (items < want) {
		uint32_t key = urcu_ec_prepare(&nonempty);
		struct cds_wfcq_node *n;

		n = __cds_wfcq_dequeue_blocking(&head, &tail);
		if (!n) {
			urcu_ec_wait(&nonempty, key, NULL);
			sleeps++;
			continue;
		}
		items++;
		sum += caa_container_of(n, struct item, node)->value;
		free(caa_container_of(n, struct item, node));
	}
	for (i = 0; i < NR_PRODUCERS; i++)
		pthread_join(prod[i], NULL);
	printf("%lu items, sum %lu (want %lu), %lu waits\n", items, sum,
			NR_PRODUCERS * (NR_ITEMS * (NR_ITEMS + 1) / 2), sleeps);
	return items == want && cds_wfcq_empty(&head, &tail)
		&& sum == NR_PRODUCERS * (NR_ITEMS * (NR_ITEMS + 1) / 2) ? 0 : 1;
}
