// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu-rseq grace-period polling (liburcu 0.14's API, provided on every
 * liburcu): a state from start_poll_synchronize_rcu() polls true once a
 * grace period that began after the call has ended, and not while a reader
 * that was inside at the call still is; it completes with nobody else
 * waiting for grace periods, also in a fork child; the flavor struct
 * carries the two functions where liburcu's has the fields.
 */
#define _LGPL_SOURCE
#include <pthread.h>
#include <unistd.h>

#include <urcu-rseq.h>
#include <urcu/uatomic.h>

#include "tap.h"
#include "lifecycle.h"

static int reader_in, reader_release;

static void *long_reader(void *arg)
{
	(void) arg;
	rcu_read_lock();
	uatomic_set(&reader_in, 1);
	while (!uatomic_read(&reader_release))
		usleep(1000);
	rcu_read_unlock();
	return NULL;
}

static void poll_until_done(struct urcu_gp_poll_state s)
{
	while (!poll_state_synchronize_rcu(s))
		usleep(1000);
}

static void test_poll(void)
{
	struct urcu_gp_poll_state s;
	pthread_t r;
	int early;

	s = start_poll_synchronize_rcu();
	poll_until_done(s);
	ok(1, "a started grace period completes with nobody else waiting");
	ok(poll_state_synchronize_rcu(s), "and stays complete");

	s = start_poll_synchronize_rcu();
	synchronize_rcu();
	ok(poll_state_synchronize_rcu(s), "synchronize_rcu() after the start "
		"completes it");

	pthread_create(&r, NULL, long_reader, NULL);
	while (!uatomic_read(&reader_in))
		usleep(100);
	s = start_poll_synchronize_rcu();
	usleep(100000);
	early = poll_state_synchronize_rcu(s);
	uatomic_set(&reader_release, 1);
	pthread_join(r, NULL);
	ok(!early, "not complete while a reader inside at the start is");
	poll_until_done(s);
	ok(1, "complete once it left");
}

static int fork_child(void *arg)
{
	struct urcu_gp_poll_state *s = arg;

	poll_until_done(*s);
	poll_until_done(start_poll_synchronize_rcu());
	return 0;
}

static void test_fork(void)
{
	struct urcu_gp_poll_state s = start_poll_synchronize_rcu();
	enum stress_fork_result r = stress_fork_check(fork_child, &s, 60000);

	ok(r == STRESS_FORK_OK, "a fork child completes the parent's and its "
		"own polls (%s)", r == STRESS_FORK_OK ? "ok" :
		r == STRESS_FORK_HUNG ? "hung" : "failed");
	poll_until_done(s);
}

static void test_flavor(void)
{
#ifdef HAVE_URCU_GP_POLL
	ok(rcu_flavor.update_start_poll_synchronize_rcu
			== urcu_rseq_start_poll_synchronize_rcu
		&& rcu_flavor.update_poll_state_synchronize_rcu
			== urcu_rseq_poll_state_synchronize_rcu,
		"urcu_rseq_flavor has the polling functions (liburcu >= 0.14)");
#else
	skip(1, "liburcu < 0.14: struct rcu_flavor_struct has no polling");
#endif
}

int main(void)
{
	plan_tests(7);
	test_poll();
	test_fork();
	test_flavor();
	return exit_status();
}
