// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU free lists: every function and error, then ownership under
 * stress. Every node carries an owner tag: a thread that pops a node must
 * find it FREE and writes its own id; it checks the id again before pushing
 * it back, so a node handed out twice (ABA, a lost race with the remote
 * pop_all_cpu) is caught, and the final count catches a lost node. Threads
 * outnumber the CPUs, under the signal storm and forced migrations, with a
 * remote thread calling pop_all_cpu on random CPUs; in each index mode, with
 * half of the threads on the paths of threads without rseq, and in the
 * locked mode (forced through the mode field, a test hook).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/freelist.h>

#include "tap.h"
#include "stress.h"

#define NR_NODES	4096
#define FREE_TAG	0xffffffffUL
#define HOLD		8

struct obj {
	struct urcu_percpu_freelist_node node;
	unsigned long owner;
};

static struct obj objs[NR_NODES];

enum way { WAY_CPU, WAY_MM_CID, WAY_HALF_SLOW, WAY_LOCKED, NR_WAYS };
static const char *way_name[NR_WAYS] = {
	"cpu", "mm_cid", "half without rseq", "locked"
};

static struct urcu_percpu_freelist *make(enum way w)
{
	struct urcu_percpu_freelist *fl = urcu_percpu_freelist_create(
			w == WAY_MM_CID ? URCU_PERCPU_MM_CID : 0);

	/* Test hook: the mode is fixed at create and nothing ran yet. */
	if (fl && w == WAY_LOCKED)
		fl->mode = URCU_PERCPU_FREELIST_LOCKED;
	return fl;
}

static void test_api(void)
{
	struct urcu_percpu_freelist *fl;
	struct urcu_percpu_freelist_node *n;
	int i, count, ok_order = 1;

	errno = 0;
	ok(!urcu_percpu_freelist_create(1U << 7) && errno == EINVAL,
		"unknown flag: EINVAL");
	urcu_percpu_freelist_destroy(NULL);
	fl = urcu_percpu_freelist_create(0);
	ok(fl && !urcu_percpu_freelist_pop(fl), "new list pops NULL");
	errno = 0;
	ok(!urcu_percpu_freelist_pop_all_cpu(fl, fl->nr_index) && errno == EINVAL,
		"pop_all_cpu beyond the last index: EINVAL");
	errno = 0;
	ok(!urcu_percpu_freelist_pop_all_cpu(fl, -2) && errno == EINVAL,
		"pop_all_cpu(-2): EINVAL");
	errno = 0;
	ok(!urcu_percpu_freelist_pop_all_cpu(NULL, 0) && errno == EINVAL,
		"pop_all_cpu(NULL): EINVAL");
	/* Pinned, so that every push lands on one CPU's list. */
	stress_pin_self(stress_cpu_at(0));
	for (i = 0; i < 10; i++)
		urcu_percpu_freelist_push(fl, &objs[i].node);
	for (i = 9; i >= 5; i--)
		if (urcu_percpu_freelist_pop(fl) != &objs[i].node)
			ok_order = 0;
	ok(ok_order, "pop is LIFO on one CPU");
	count = 0;
	for (i = -1; i < fl->nr_index; i++)
		for (n = urcu_percpu_freelist_pop_all_cpu(fl, i); n; n = n->next)
			count++;
	ok(count == 5, "pop_all_cpu over every index returns the rest (%d)",
		count);
	ok(!urcu_percpu_freelist_pop(fl), "empty afterwards");
	urcu_percpu_freelist_push_slow(fl, &objs[0].node);
	ok(urcu_percpu_freelist_pop(fl) == &objs[0].node,
		"a node of the shared list is popped when the CPU's is empty");
	urcu_percpu_freelist_push(fl, &objs[1].node);
	if (fl->mode == URCU_PERCPU_FREELIST_LOCKED)
		ok(urcu_percpu_freelist_pop_slow(fl) == &objs[1].node,
			"locked mode (no fence): the slow pop takes the CPU's list");
	else if (urcu_rseq_index(fl->mode) < 0)
		ok(urcu_percpu_freelist_pop_slow(fl) == &objs[1].node,
			"a thread without rseq steals from a CPU's list");
	else
		ok(!urcu_percpu_freelist_pop_slow(fl)
			&& urcu_percpu_freelist_pop(fl) == &objs[1].node,
			"an rseq thread's slow pop leaves other lists alone");
	stress_unpin_self();
	urcu_percpu_freelist_destroy(fl);
}

struct run {
	struct urcu_percpu_freelist *fl;
	enum way way;
	unsigned long errors, pops, remote_takes;
	int moved;	/* a node was taken: the phase may end */
};

/* Once per thread: tell the phase that nodes move. */
static void note_moved(struct run *r, bool *noted)
{
	if (!*noted) {
		*noted = true;
		CMM_STORE_SHARED(r->moved, 1);
	}
}

static void check_take(struct obj *o, unsigned long me, unsigned long *errors)
{
	if (uatomic_xchg(&o->owner, me) != FREE_TAG)
		(*errors)++;
}

static void check_give(struct obj *o, unsigned long me, unsigned long *errors)
{
	if (uatomic_xchg(&o->owner, FREE_TAG) != me)
		(*errors)++;
}

static void worker(struct stress_thread *t)
{
	struct run *r = (struct run *) t->arg;
	struct obj *held[HOLD];
	unsigned long me = t->id, errors = 0, pops = 0, takes = 0;
	bool slow = r->way == WAY_HALF_SLOW && (t->id & 1), noted = false;
	int nh = 0, i;

	if (t->id == 0) {
		/* The remote thread: take whole lists, check, give back. */
		while (!stress_should_stop(t)) {
			int cpu = (int) stress_rand_below(t,
					(uint32_t) r->fl->nr_index + 1) - 1;
			struct urcu_percpu_freelist_node *n, *next;

			n = urcu_percpu_freelist_pop_all_cpu(r->fl, cpu);
			for (; n; n = next) {
				struct obj *o = caa_container_of(n, struct obj, node);

				next = n->next;
				check_take(o, me, &errors);
				check_give(o, me, &errors);
				urcu_percpu_freelist_push(r->fl, n);
				takes++;
				note_moved(r, &noted);
			}
		}
		goto out;
	}
	while (!stress_should_stop(t)) {
		if (nh < HOLD && (nh == 0 || stress_rand_below(t, 2))) {
			struct urcu_percpu_freelist_node *n = slow ?
				urcu_percpu_freelist_pop_slow(r->fl) :
				urcu_percpu_freelist_pop(r->fl);

			if (!n)
				continue;
			held[nh] = caa_container_of(n, struct obj, node);
			check_take(held[nh], me, &errors);
			nh++;
			pops++;
			note_moved(r, &noted);
		} else {
			struct obj *o = held[--nh];

			check_give(o, me, &errors);
			if (slow)
				urcu_percpu_freelist_push_slow(r->fl, &o->node);
			else
				urcu_percpu_freelist_push(r->fl, &o->node);
		}
	}
	for (i = 0; i < nh; i++) {
		check_give(held[i], me, &errors);
		urcu_percpu_freelist_push(r->fl, &held[i]->node);
	}
out:
	uatomic_add(&r->errors, errors);
	uatomic_add(&r->pops, pops);
	uatomic_add(&r->remote_takes, takes);
}

static void test_stress(enum way w)
{
	struct run r = { make(w), w, 0, 0, 0, 0 };
	struct stress_group *g;
	int i, count = 0, dup = 0, waited_ms = 0;

	if (!r.fl)
		bail_out("urcu_percpu_freelist_create failed");
	for (i = 0; i < NR_NODES; i++) {
		objs[i].owner = FREE_TAG;
		urcu_percpu_freelist_push(r.fl, &objs[i].node);
	}
	/*
	 * 250 ms, and on until a node has moved: under emulation with many
	 * vCPUs (64 on 2 host cores) no worker had run when 250 ms were up.
	 * The wait for it is bounded (60 s); the check below then fails.
	 */
	g = stress_start(worker, &r, 17, STRESS_QUIET | STRESS_SIGNALS
			| STRESS_MIGRATIONS);
	usleep(250000);
	while (!CMM_LOAD_SHARED(r.moved) && waited_ms < 60000) {
		usleep(10000);
		waited_ms += 10;
	}
	stress_stop(g, NULL);
	for (i = -1; i < r.fl->nr_index; i++) {
		struct urcu_percpu_freelist_node *n;

		for (n = urcu_percpu_freelist_pop_all_cpu(r.fl, i); n; n = n->next) {
			struct obj *o = caa_container_of(n, struct obj, node);

			if (o->owner != FREE_TAG)
				dup++;
			o->owner = 0;
			count++;
		}
	}
	/*
	 * Ownership is the point; under emulation the remote thread can take
	 * every node before a worker pops one, so ask only that nodes moved.
	 */
	ok(r.errors == 0 && dup == 0 && count == NR_NODES
			&& r.pops + r.remote_takes > 0,
		"%s: 16 threads + remote: %lu pops, %lu remote takes, "
		"%lu ownership errors, %d of %d nodes back",
		way_name[w], r.pops, r.remote_takes, r.errors + (unsigned long) dup,
		count, NR_NODES);
	urcu_percpu_freelist_destroy(r.fl);
}

int main(void)
{
	int w;

	plan_tests(10 + NR_WAYS);
	test_api();
	for (w = 0; w < NR_WAYS; w++)
		test_stress((enum way) w);
	return exit_status();
}
