// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A read-mostly configuration under the urcu-rseq flavor.
 *
 * Readers look the configuration up on every request, with no lock and no
 * thread registration: rcu_read_lock(), rcu_dereference(), use it,
 * rcu_read_unlock(). The updater builds a new copy, publishes it with
 * rcu_assign_pointer() and frees the old copy only after a grace period:
 * with synchronize_rcu() (waits) or call_rcu() (frees later, on the
 * flavor's worker thread).
 *
 * A freed copy is first poisoned, so a reader that still used it after its
 * grace period would see a configuration breaking the invariant
 * (limit == 2 * rate). Exits 0 when no reader ever saw a broken or an older
 * configuration and every copy was freed.
 *
 * <urcu-rseq.h> maps liburcu's generic names (rcu_read_lock(),
 * synchronize_rcu(), call_rcu() ...) onto the flavor; _LGPL_SOURCE inlines
 * the read side.
 *
 * Build: cc rcu_config.c $(pkg-config --cflags --libs liburcu-rseq) -lpthread
 */
#define _LGPL_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <urcu-rseq.h>

#define NR_READERS	4
#define NR_UPDATES	1000

struct config {
	unsigned long version;
	long rate;
	long limit;		/* always 2 * rate */
	struct rcu_head rcu;
};

static struct config *current_config;
static unsigned long nr_freed;	/* uatomic */
static int stop;		/* CMM_LOAD_SHARED/CMM_STORE_SHARED */

static void config_free(struct config *c)
{
	c->rate = -1;		/* poison: breaks limit == 2 * rate */
	c->version = 0;
	free(c);
	uatomic_inc(&nr_freed);
}

static void config_free_rcu(struct rcu_head *head)
{
	config_free(caa_container_of(head, struct config, rcu));
}

static void *reader(void *arg)
{
	unsigned long last = 0, errors = 0, lookups = 0;
	struct config *c;

	while (!CMM_LOAD_SHARED(stop)) {
		rcu_read_lock();
		c = rcu_dereference(current_config);
		if (c->limit != 2 * c->rate || c->version < last)
			errors++;
		last = c->version;
		rcu_read_unlock();
		lookups++;
	}
	printf("reader %ld: %lu lookups, last version %lu\n",
			(long) arg, lookups, last);
	return (void *) errors;
}

/* Single updater: it may read current_config without rcu_dereference. */
static int config_update(unsigned long version, bool wait)
{
	struct config *old = current_config, *c = malloc(sizeof(*c));

	if (!c)
		return -1;
	c->version = version;
	c->rate = (long) version * 3;
	c->limit = 2 * c->rate;
	rcu_assign_pointer(current_config, c);
	if (wait) {
		synchronize_rcu();	/* every reader of old has left */
		config_free(old);
	} else {
		call_rcu(&old->rcu, config_free_rcu);
	}
	return 0;
}

int main(void)
{
	pthread_t tid[NR_READERS];
	unsigned long errors = 0, v;
	void *ret;
	long i;

	current_config = calloc(1, sizeof(*current_config));
	if (!current_config)
		return 1;
	for (i = 0; i < NR_READERS; i++)
		if (pthread_create(&tid[i], NULL, reader, (void *) i))
			return 1;
	for (v = 1; v <= NR_UPDATES; v++)
		if (config_update(v, v % 2 == 0))
			return 1;
	CMM_STORE_SHARED(stop, 1);
	for (i = 0; i < NR_READERS; i++) {
		pthread_join(tid[i], &ret);
		errors += (unsigned long) ret;
	}
	rcu_barrier();		/* every call_rcu callback has run */
	printf("%d updates, %lu copies freed, %lu reader errors\n",
			NR_UPDATES, uatomic_read(&nr_freed), errors);
	v = uatomic_read(&nr_freed);
	free(current_config);
	return errors || v != NR_UPDATES ? 1 : 0;
}
