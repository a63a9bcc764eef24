// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Lifecycle, fork and thread-exit tortures of condition variables (and, on
 * the urcu_cond face, of wait queues and event counts), under the stress
 * harness (more threads than CPUs, signal storm, forced migrations).
 *
 * Built twice from this file: stress_cond_destroy on urcu_cond, and with
 * PTHREAD_FACE on the pthread_cond API only, run under LD_PRELOAD of
 * liburcu-rseq-pthread-cond.so (stress_cond_destroy_preload.sh) and, with
 * URCU_RSEQ_TEST_GLIBC=1, against glibc.
 *
 * Phases (URCU_RSEQ_STRESS_MS each):
 * - "after broadcast": one condition in a reused buffer; each round every
 *   waiter waits on it, the broadcaster broadcasts (holding the mutex or
 *   not), destroys (must return 0) and fills the buffer with 0xa5; half
 *   the waiters use deadlines of a few microseconds. A waiter that touched
 *   the condition afterwards changes the pattern, or spins forever on a
 *   "held" queue lock (caught by the round deadline).
 * - "lifecycle": many short-lived heap conditions, each destroyed and
 *   retired to the quarantine (stress_quarantine(), lifecycle.h) by
 *   whichever thread closes it, right after its broadcast, while waiters
 *   with deadlines of a few microseconds time out, and threads cancelled
 *   in urcu_cond_wait() withdraw, racing the destroy. The retired image
 *   looks like a live, empty condition whose queue lock is held, so that a
 *   late unlock store (or any other late write) is counted. On the
 *   urcu_cond face the same for wait queues (freed once a wake-all has
 *   returned and the queue reads empty) and event counts (freed by the
 *   thread that drops the last reference, right after a notify).
 * - "fork": threads wait, time out, signal and broadcast while another
 *   thread forks; the child initializes a new condition, waits on it with
 *   a deadline (sleeping on the futex), signals, broadcasts, wakes a
 *   thread of its own and destroys it, within a deadline.
 * - "exit": short-lived threads wait (some time out, some are woken) and
 *   exit while wakers keep waking; every token produced is consumed once.
 *   On the urcu_cond face, the wait-stack nodes live in heap memory that
 *   the exiting thread retires to the quarantine, looking like a sleeping
 *   node: a waker that touched a dead thread's node is counted.
 */
#ifndef _GNU_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <urcu/uatomic.h>
#include <urcu/cond.h>	/* the layout of the retired images, on both faces */

#include "lifecycle.h"
#include "stress.h"
#include "tap.h"

#ifndef CDS_WFS_END	/* urcu/static/wfstack.h: the empty stack's head */
#define CDS_WFS_END	((void *) 0x1UL)
#endif

#ifdef PTHREAD_FACE
typedef pthread_cond_t cond_t;
#define cond_wait(c, m)		pthread_cond_wait(c, m)
#define cond_timedwait(c, m, t)	pthread_cond_timedwait(c, m, t)
#define cond_broadcast(c)	pthread_cond_broadcast(c)
#define cond_signal(c)		pthread_cond_signal(c)
#define cond_destroy(c)		pthread_cond_destroy(c)
static int cond_init(cond_t *c, clockid_t clock)
{
	pthread_condattr_t a;
	int ret;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, clock);
	ret = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return ret;
}
#else
typedef struct urcu_cond cond_t;
#define cond_wait(c, m)		urcu_cond_wait(c, m)
#define cond_timedwait(c, m, t)	urcu_cond_timedwait(c, m, t)
#define cond_broadcast(c)	urcu_cond_broadcast(c)
#define cond_signal(c)		urcu_cond_signal(c)
#define cond_destroy(c)		urcu_cond_destroy(c)
#define cond_init(c, clock)	urcu_cond_init(c, clock)
#endif

#define NR_WAITERS	6
#define PATTERN		0xa5

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static cond_t start_cv, done_cv;	/* long-lived, zero-filled */
static union {
	cond_t c;
	unsigned char bytes[48];
} *slot;
static clockid_t slot_clock;
static unsigned long gen, rounds, destroy_busy, corrupt, timeouts;
static int done, quit, inside, left;

static void waiter(struct stress_thread *t)
{
	unsigned long my = 0;
	struct timespec ts;
	int timed = t->id & 1;
	int64_t ns;

	pthread_mutex_lock(&mutex);
	for (;;) {
		while (gen == my && !quit)
			cond_wait(&start_cv, &mutex);
		if (quit)
			break;
		my = gen;
		if (++inside == NR_WAITERS)
			cond_signal(&done_cv);
		while (!done) {
			if (!timed) {
				cond_wait(&slot->c, &mutex);
				continue;
			}
			clock_gettime(slot_clock, &ts);
			ns = ts.tv_nsec + 1000 + stress_rand_below(t, 30000);
			ts.tv_sec += ns / 1000000000L;
			ts.tv_nsec = ns % 1000000000L;
			if (cond_timedwait(&slot->c, &mutex, &ts) == ETIMEDOUT)
				timeouts++;
		}
		if (++left == NR_WAITERS)
			cond_signal(&done_cv);
	}
	pthread_mutex_unlock(&mutex);
}

/* Wait on done_cv until *@v == NR_WAITERS, at most 10 s; false if not. */
static bool wait_all(int *v)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	while (*v != NR_WAITERS)
		if (cond_timedwait(&done_cv, &mutex, &ts) == ETIMEDOUT)
			return *v == NR_WAITERS;
	return true;
}

static void broadcaster(struct stress_thread *t)
{
	unsigned int i;
	int held;

	pthread_mutex_lock(&mutex);
	/*
	 * At least one round, however late the threads got going: the
	 * checks below mean nothing without one (a loaded machine under
	 * ASan once finished none in 500 ms).
	 */
	while (!stress_should_stop(t) || !rounds) {
		memset(slot, 0, sizeof(*slot));
		slot_clock = stress_rand_below(t, 2) ? CLOCK_MONOTONIC
			: CLOCK_REALTIME;
		if (stress_rand_below(t, 2))
			(void) cond_init(&slot->c, slot_clock);
		else
			slot_clock = CLOCK_REALTIME;	/* zero-filled */
		done = inside = left = 0;
		gen++;
		cond_broadcast(&start_cv);
		if (!wait_all(&inside))
			bail_out("waiters did not all start waiting in 10 s");
		/* Let some deadlines pass while they wait. */
		pthread_mutex_unlock(&mutex);
		for (i = stress_rand_below(t, 2000); i; i--)
			caa_cpu_relax();
		pthread_mutex_lock(&mutex);
		done = 1;
		held = stress_rand_below(t, 2);
		cond_broadcast(&slot->c);
		if (!held)
			pthread_mutex_unlock(&mutex);
		if (cond_destroy(&slot->c))
			destroy_busy++;
		memset(slot, PATTERN, sizeof(*slot));
		if (!held)
			pthread_mutex_lock(&mutex);
		/* The stuck waiters cannot be joined: end the run here. */
		if (!wait_all(&left))
			bail_out("a round did not finish in 10 s: a waiter is "
				"stuck (on the destroyed condition's queue lock?)");
		for (i = 0; i < sizeof(slot->bytes); i++)
			if (slot->bytes[i] != PATTERN) {
				corrupt++;
				break;
			}
		rounds++;
	}
	quit = 1;
	cond_broadcast(&start_cv);
	pthread_mutex_unlock(&mutex);
}

static void worker(struct stress_thread *t)
{
	if (t->id == 0)
		broadcaster(t);
	else
		waiter(t);
}

#define STRESS_FLAGS	(STRESS_SIGNALS | STRESS_MIGRATIONS)

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec deadline_in(clockid_t clock, int64_t ns)
{
	int64_t t = now_ns(clock) + ns;
	struct timespec ts = { t / 1000000000LL, t % 1000000000LL };

	return ts;
}

/* Workers: two per CPU and a few more, so that some are always preempted. */
static unsigned int nr_workers(void)
{
	unsigned int n = 2 * stress_nr_cpus() + 2;

	return n < 6 ? 6 : n;
}

/*
 * Slots of short-lived objects, each reference-counted: the slot holds one
 * reference until a closer takes the object out of it; whoever drops the
 * last reference retires it.
 */
#define LC_SLOTS	4

struct lc_ref {
	int refs;
	void (*release)(struct lc_ref *r);
};

struct lc_slot {
	pthread_mutex_t lock;
	struct lc_ref *obj;
};

static struct lc_ref *lc_get(struct lc_slot *slots, struct stress_thread *t,
		struct lc_ref *(*create)(struct stress_thread *t),
		unsigned int *slot)
{
	struct lc_slot *sl;
	struct lc_ref *r;

	*slot = t ? stress_rand_below(t, LC_SLOTS) : 0;
	sl = &slots[*slot];
	pthread_mutex_lock(&sl->lock);
	r = sl->obj;
	if (!r && t) {
		r = create(t);
		r->refs = 1;	/* the slot's */
		sl->obj = r;
	}
	if (r)
		uatomic_inc(&r->refs);
	pthread_mutex_unlock(&sl->lock);
	return r;
}

static void lc_put(struct lc_ref *r)
{
	if (uatomic_sub_return(&r->refs, 1) == 0)
		r->release(r);
}

/* Take @r out of its slot (once), dropping the slot's reference. */
static void lc_unpublish(struct lc_slot *slots, unsigned int slot,
		struct lc_ref *r)
{
	struct lc_slot *sl = &slots[slot];
	bool drop = false;

	if (slot >= LC_SLOTS)
		return;		/* never published */
	pthread_mutex_lock(&sl->lock);
	if (sl->obj == r) {
		sl->obj = NULL;
		drop = true;
	}
	pthread_mutex_unlock(&sl->lock);
	if (drop)
		lc_put(r);
}

static void lc_slots_init(struct lc_slot *slots)
{
	unsigned int i;

	for (i = 0; i < LC_SLOTS; i++) {
		pthread_mutex_init(&slots[i].lock, NULL);
		slots[i].obj = NULL;
	}
}

/*
 * What a destroyed condition is retired as: a live, empty condition whose
 * queue lock is held. A late unlock store (0), a late cmpxchg on the head
 * or any other write changes it.
 */
static void cond_image(void *image, size_t size, clockid_t clock)
{
	struct urcu_cond *c = (struct urcu_cond *) image;

	memset(image, 0, size);
	c->queue.stack.head = (struct cds_wfs_head *) CDS_WFS_END;
	c->queue.lock = 1;
	c->clock = clock;
}

/* ---- Phase "lifecycle": heap conditions ---- */

struct lc_cond {
	struct lc_ref ref;
	pthread_mutex_t m;
	cond_t *c;		/* destroyed and retired by its closer */
	clockid_t clock;
	int done;		/* under m: closed, c is gone */
};

static struct lc_slot lcc_slots[LC_SLOTS];
static unsigned long lcc_objs, lcc_closed, lcc_busy, lcc_timeouts, lcc_waits,
	lcc_cancelled, lcc_victims, lcc_errors;

static void lcc_release(struct lc_ref *r)
{
	struct lc_cond *o = caa_container_of(r, struct lc_cond, ref);

	pthread_mutex_destroy(&o->m);
	stress_quarantine(o, sizeof(*o), NULL);
}

static struct lc_ref *lcc_create(struct stress_thread *t)
{
	struct lc_cond *o = calloc(1, sizeof(*o));

	if (!o || !(o->c = malloc(sizeof(cond_t))))
		bail_out("out of memory");
	pthread_mutex_init(&o->m, NULL);
	o->ref.release = lcc_release;
	if (stress_rand_below(t, 2)) {
		o->clock = stress_rand_below(t, 2) ? CLOCK_MONOTONIC
			: CLOCK_REALTIME;
		if (cond_init(o->c, o->clock))
			uatomic_inc(&lcc_errors);
	} else {
		memset(o->c, 0, sizeof(cond_t));	/* static initializer */
		o->clock = CLOCK_REALTIME;
	}
	uatomic_inc(&lcc_objs);
	return &o->ref;
}

/* Close @o: the one closer broadcasts, destroys and retires the condition. */
static void lcc_close(struct lc_cond *o, unsigned int slot, bool held)
{
	unsigned char image[sizeof(cond_t)];
	bool closing;

	pthread_mutex_lock(&o->m);
	closing = !o->done;
	o->done = 1;
	if (closing && held)
		cond_broadcast(o->c);
	pthread_mutex_unlock(&o->m);
	if (!closing)
		return;
	if (!held)
		cond_broadcast(o->c);
	/* Every waiter was woken, timed out or withdrew: must be 0. */
	if (cond_destroy(o->c))
		uatomic_inc(&lcc_busy);
	cond_image(image, sizeof(image), o->clock);
	stress_quarantine(o->c, sizeof(cond_t), image);
	uatomic_inc(&lcc_closed);
	lc_unpublish(lcc_slots, slot, &o->ref);
}

/* Waits until closed, at most @rounds waits of about @ns each. */
static void lcc_wait(struct lc_cond *o, int64_t ns, unsigned int rounds)
{
	struct timespec ts;
	int ret;

	pthread_mutex_lock(&o->m);
	while (!o->done && rounds--) {
		ts = deadline_in(o->clock, ns);
		ret = cond_timedwait(o->c, &o->m, &ts);
		uatomic_inc(&lcc_waits);
		if (ret == ETIMEDOUT)
			uatomic_inc(&lcc_timeouts);
		else if (ret)
			uatomic_inc(&lcc_errors);
	}
	pthread_mutex_unlock(&o->m);
}

static void lcc_victim_cleanup(void *arg)
{
	/* POSIX: a cancelled wait re-acquired the mutex before we run. */
	pthread_mutex_unlock(&((struct lc_cond *) arg)->m);
}

/* Waits without a deadline until closed or cancelled. */
static void *lcc_victim(void *arg)
{
	struct lc_cond *o = (struct lc_cond *) arg;

	pthread_mutex_lock(&o->m);
	pthread_cleanup_push(lcc_victim_cleanup, o);
	while (!o->done)
		cond_wait(o->c, &o->m);
	pthread_cleanup_pop(1);
	return NULL;
}

/*
 * A thread waits on a condition of its own, is cancelled after a random
 * delay (asleep in the wait or not yet), while we close the condition
 * (broadcast, destroy, retire) at once or a little later, then join it.
 * No signal reaches this condition: a waiter cancelled just as a signal
 * woke it passes that wake-up on through the condition (POSIX: a
 * cancelled waiter consumes no signal), so a destroy right after a signal
 * is not covered (doc/cond.md).
 */
static void lcc_cancel_one(struct stress_thread *t)
{
	struct lc_cond *o;
	unsigned int i;
	pthread_t v;
	void *ret;

	o = caa_container_of(lcc_create(t), struct lc_cond, ref);
	o->ref.refs = 1;
	if (pthread_create(&v, NULL, lcc_victim, o)) {
		lcc_close(o, LC_SLOTS, false);
		lc_put(&o->ref);
		return;
	}
	uatomic_inc(&lcc_victims);
	for (i = stress_rand_below(t, 20000); i; i--)
		caa_cpu_relax();
	pthread_cancel(v);
	for (i = stress_rand_below(t, 2) * stress_rand_below(t, 20000); i; i--)
		caa_cpu_relax();
	/* Not cancelled while spinning: closing it ends it then. */
	lcc_close(o, LC_SLOTS, stress_rand_below(t, 2));
	pthread_join(v, &ret);
	if (ret == PTHREAD_CANCELED)
		uatomic_inc(&lcc_cancelled);
	lc_put(&o->ref);
}

static void lcc_worker(struct stress_thread *t)
{
	struct lc_cond *o;
	struct lc_ref *r;
	unsigned int slot, what;

	while (!stress_should_stop(t)) {
		r = lc_get(lcc_slots, t, lcc_create, &slot);
		o = caa_container_of(r, struct lc_cond, ref);
		what = stress_rand_below(t, 32);
		if (what < 16) {		/* deadlines of 1-30 us */
			lcc_wait(o, 1000 + stress_rand_below(t, 30000), 8);
		} else if (what < 20) {		/* sleeps on the futex */
			lcc_wait(o, 2000000, 2);
		} else if (what < 22) {
			pthread_mutex_lock(&o->m);
			if (!o->done)
				cond_signal(o->c);
			pthread_mutex_unlock(&o->m);
		} else if (what < 30) {
			lcc_close(o, slot, stress_rand_below(t, 2));
		} else if (what < 31) {
			lcc_cancel_one(t);
		} else {
			usleep(stress_rand_below(t, 100));
		}
		lc_put(r);
	}
}

static void lc_close_all_conds(void)
{
	struct lc_ref *r;
	unsigned int i, slot;

	for (i = 0; i < LC_SLOTS; i++) {
		pthread_mutex_lock(&lcc_slots[i].lock);
		r = lcc_slots[i].obj;
		if (r)
			uatomic_inc(&r->refs);
		pthread_mutex_unlock(&lcc_slots[i].lock);
		if (!r)
			continue;
		slot = i;
		lcc_close(caa_container_of(r, struct lc_cond, ref), slot, false);
		lc_put(r);
	}
}

static void test_lifecycle_cond(void)
{
	struct stress_report rep;
	unsigned long late = stress_quarantine_drain();

	lc_slots_init(lcc_slots);
	stress_run(lcc_worker, NULL, nr_workers(), STRESS_FLAGS, &rep);
	lc_close_all_conds();
	late = stress_quarantine_drain() - late;
	diag("lifecycle: %lu conditions, %lu closed, %lu waits, %lu timed out, "
		"%lu waiters cancelled of %lu, %lu signals, %lu migrations",
		lcc_objs, lcc_closed, lcc_waits, lcc_timeouts, lcc_cancelled,
		lcc_victims, rep.signals, rep.migrations);
	ok(lcc_objs > 0 && lcc_closed == lcc_objs && lcc_errors == 0,
		"lifecycle: every condition closed (%lu of %lu), no error (%lu)",
		lcc_closed, lcc_objs, lcc_errors);
	ok(lcc_busy == 0, "lifecycle: destroy right after broadcast returned 0 "
		"every time (%lu EBUSY)", lcc_busy);
	ok(late == 0, "lifecycle: no write to a destroyed condition after its "
		"destroy returned (%lu late writes)", late);
}

#ifndef PTHREAD_FACE
/* ---- Phase "lifecycle": heap wait queues ---- */

struct lc_queue {
	struct lc_ref ref;
	pthread_mutex_t m;		/* orders adds before the close */
	struct urcu_wait_queue *q;	/* retired by its closer */
	int done;
};

static struct lc_slot lcq_slots[LC_SLOTS];
static unsigned long lcq_objs, lcq_closed, lcq_waits, lcq_timeouts,
	lcq_errors;

static void lcq_release(struct lc_ref *r)
{
	struct lc_queue *o = caa_container_of(r, struct lc_queue, ref);

	pthread_mutex_destroy(&o->m);
	stress_quarantine(o, sizeof(*o), NULL);
}

static struct lc_ref *lcq_create(struct stress_thread *t)
{
	struct lc_queue *o = calloc(1, sizeof(*o));

	if (!o || !(o->q = malloc(sizeof(*o->q))))
		bail_out("out of memory");
	pthread_mutex_init(&o->m, NULL);
	o->ref.release = lcq_release;
	if (stress_rand_below(t, 2))
		urcu_wait_queue_init(o->q);
	else
		memset(o->q, 0, sizeof(*o->q));
	uatomic_inc(&lcq_objs);
	return &o->ref;
}

static void lcq_close(struct stress_thread *t, struct lc_queue *o,
		unsigned int slot)
{
	struct urcu_wait_queue image;
	bool closing;

	pthread_mutex_lock(&o->m);
	closing = !o->done;
	o->done = 1;
	pthread_mutex_unlock(&o->m);
	if (!closing)
		return;
	if (!t || stress_rand_below(t, 2))
		(void) urcu_wait_wake_all(o->q);
	else
		while (urcu_wait_wake_one(o->q))
			;
	/*
	 * Nobody adds any more; waiters that timed out withdraw on their
	 * own. Once the queue reads empty, nobody touches it again.
	 */
	while (!urcu_wait_queue_empty(o->q))
		caa_cpu_relax();
	memset(&image, 0, sizeof(image));
	image.stack.head = (struct cds_wfs_head *) CDS_WFS_END;
	image.lock = 1;
	stress_quarantine(o->q, sizeof(*o->q), &image);
	uatomic_inc(&lcq_closed);
	lc_unpublish(lcq_slots, slot, &o->ref);
}

static void lcq_wait(struct lc_queue *o, int64_t ns, unsigned int rounds)
{
	struct urcu_wait_node n;
	struct timespec ts;
	int ret;

	while (rounds--) {
		pthread_mutex_lock(&o->m);
		if (o->done) {
			pthread_mutex_unlock(&o->m);
			return;
		}
		urcu_wait_node_init(&n);
		(void) urcu_wait_add(o->q, &n);
		pthread_mutex_unlock(&o->m);
		ts = deadline_in(CLOCK_MONOTONIC, ns);
		ret = urcu_wait(&n, &ts);
		uatomic_inc(&lcq_waits);
		if (ret == ETIMEDOUT)
			uatomic_inc(&lcq_timeouts);
		else if (ret)
			uatomic_inc(&lcq_errors);
	}
}

/* A wake before the close: the closer frees the queue after its own. */
static void lcq_wake_one(struct lc_queue *o)
{
	pthread_mutex_lock(&o->m);
	if (!o->done)
		(void) urcu_wait_wake_one(o->q);
	pthread_mutex_unlock(&o->m);
}

static void lcq_worker(struct stress_thread *t)
{
	struct lc_queue *o;
	struct lc_ref *r;
	unsigned int slot, what;

	while (!stress_should_stop(t)) {
		r = lc_get(lcq_slots, t, lcq_create, &slot);
		o = caa_container_of(r, struct lc_queue, ref);
		what = stress_rand_below(t, 16);
		if (what < 8)
			lcq_wait(o, 1000 + stress_rand_below(t, 30000), 4);
		else if (what < 10)
			lcq_wait(o, 2000000, 1);
		else if (what < 11)
			lcq_wake_one(o);
		else
			lcq_close(t, o, slot);
		lc_put(r);
	}
}

/* ---- Phase "lifecycle": heap event counts ---- */

struct lc_ec {
	struct lc_ref ref;
	struct urcu_ec ec;
	int done;
};

static struct lc_slot lce_slots[LC_SLOTS];
static unsigned long lce_objs, lce_closed, lce_waits, lce_timeouts,
	lce_errors;

static void lce_release(struct lc_ref *r)
{
	struct lc_ec *o = caa_container_of(r, struct lc_ec, ref), image;

	/* A live event count with a consumer prepared, none asleep. */
	image = *o;
	image.ec.word = URCU_EC_WAITERS;
	stress_quarantine(o, sizeof(*o), &image);
}

static struct lc_ref *lce_create(struct stress_thread *t)
{
	struct lc_ec *o = calloc(1, sizeof(*o));

	(void) t;
	if (!o)
		bail_out("out of memory");
	o->ref.release = lce_release;
	urcu_ec_init(&o->ec);
	uatomic_inc(&lce_objs);
	return &o->ref;
}

static void lce_wait(struct lc_ec *o, int64_t ns, unsigned int rounds)
{
	struct timespec ts;
	uint32_t key;
	int ret;

	while (rounds--) {
		key = urcu_ec_prepare(&o->ec);
		if (uatomic_read(&o->done))
			return;
		ts = deadline_in(CLOCK_MONOTONIC, ns);
		ret = urcu_ec_wait(&o->ec, key, &ts);
		uatomic_inc(&lce_waits);
		if (ret == ETIMEDOUT)
			uatomic_inc(&lce_timeouts);
		else if (ret)
			uatomic_inc(&lce_errors);
	}
}

static void lce_worker(struct stress_thread *t)
{
	struct lc_ec *o;
	struct lc_ref *r;
	unsigned int slot, what;

	while (!stress_should_stop(t)) {
		r = lc_get(lce_slots, t, lce_create, &slot);
		o = caa_container_of(r, struct lc_ec, ref);
		what = stress_rand_below(t, 16);
		if (what < 8) {
			lce_wait(o, 1000 + stress_rand_below(t, 30000), 4);
		} else if (what < 10) {
			lce_wait(o, 2000000, 1);
		} else if (what < 12) {
			urcu_ec_notify(&o->ec);
		} else if (!uatomic_xchg(&o->done, 1)) {
			/* The notify, then this reference, may be the last. */
			urcu_ec_notify(&o->ec);
			uatomic_inc(&lce_closed);
			lc_unpublish(lce_slots, slot, r);
		}
		lc_put(r);
	}
}

static void lc_drop_slots(struct lc_slot *slots)
{
	unsigned int i;

	for (i = 0; i < LC_SLOTS; i++)
		if (slots[i].obj) {
			lc_put(slots[i].obj);
			slots[i].obj = NULL;
		}
}

static void test_lifecycle_queue_ec(void)
{
	struct stress_report rep;
	unsigned long late = stress_quarantine_drain();
	unsigned int i;

	lc_slots_init(lcq_slots);
	stress_run(lcq_worker, NULL, nr_workers(), STRESS_FLAGS, &rep);
	for (i = 0; i < LC_SLOTS; i++)
		if (lcq_slots[i].obj)
			lcq_close(NULL, caa_container_of(lcq_slots[i].obj,
					struct lc_queue, ref), i);
	late = stress_quarantine_drain() - late;
	diag("lifecycle: %lu wait queues, %lu waits, %lu timed out, "
		"%lu signals, %lu migrations", lcq_objs, lcq_waits, lcq_timeouts,
		rep.signals, rep.migrations);
	ok(lcq_objs > 0 && lcq_closed == lcq_objs && lcq_errors == 0 && late == 0,
		"lifecycle: wait queues freed once empty after a wake-all: "
		"%lu late writes, %lu errors", late, lcq_errors);

	late = stress_quarantine_drain();
	lc_slots_init(lce_slots);
	stress_run(lce_worker, NULL, nr_workers(), STRESS_FLAGS, &rep);
	lc_drop_slots(lce_slots);
	late = stress_quarantine_drain() - late;
	diag("lifecycle: %lu event counts, %lu closed by a notify, %lu waits, "
		"%lu timed out", lce_objs, lce_closed, lce_waits, lce_timeouts);
	ok(lce_objs > 0 && lce_errors == 0 && late == 0,
		"lifecycle: event counts freed by the last reference after a "
		"notify: %lu late writes, %lu errors", late, lce_errors);
}
#endif /* !PTHREAD_FACE */

/* ---- Phase "fork" ---- */

static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static cond_t fk_cond;		/* zero-filled: CLOCK_REALTIME */
#ifndef PTHREAD_FACE
static struct urcu_wait_queue fk_queue;
static struct urcu_ec fk_ec;
#endif
static int fk_flag;
static unsigned long fk_forks, fk_ok, fk_failed, fk_hung;

struct fk_child {
	pthread_mutex_t m;
	cond_t *c;
	int flag;
};

static void *fk_child_waiter(void *arg)
{
	struct fk_child *k = (struct fk_child *) arg;
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 5000000000LL);

	pthread_mutex_lock(&k->m);
	while (!k->flag)
		if (cond_timedwait(k->c, &k->m, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&k->m);
	return (void *) (intptr_t) k->flag;
}

/* In the child: every operation on a new condition must work and end. */
static int fk_child_fn(void *arg)
{
	struct fk_child k = { .flag = 0 };
	struct timespec ts;
	pthread_t th;
	void *ret;
	int bad = 0;

	(void) arg;
	pthread_mutex_init(&k.m, NULL);
	k.c = malloc(sizeof(cond_t));
	if (!k.c || cond_init(k.c, CLOCK_MONOTONIC))
		return 1;
	pthread_mutex_lock(&k.m);
	/* 2 ms: longer than any spin, so the wait sleeps on the futex. */
	ts = deadline_in(CLOCK_MONOTONIC, 2000000);
	bad |= cond_timedwait(k.c, &k.m, &ts) != ETIMEDOUT;
	bad |= cond_signal(k.c) != 0;
	bad |= cond_broadcast(k.c) != 0;
	pthread_mutex_unlock(&k.m);
	if (pthread_create(&th, NULL, fk_child_waiter, &k))
		return 1;
	usleep(1000);
	pthread_mutex_lock(&k.m);
	k.flag = 1;
	cond_signal(k.c);
	pthread_mutex_unlock(&k.m);
	pthread_join(th, &ret);
	bad |= ret != (void *) 1;
	bad |= cond_destroy(k.c) != 0;
	free(k.c);
#ifndef PTHREAD_FACE
	{
		struct urcu_wait_queue q = URCU_WAIT_QUEUE_INITIALIZER;
		struct urcu_wait_node n;
		struct urcu_ec ec = URCU_EC_INITIALIZER;
		uint32_t key;

		urcu_wait_node_init(&n);
		(void) urcu_wait_add(&q, &n);
		ts = deadline_in(CLOCK_MONOTONIC, 2000000);
		bad |= urcu_wait(&n, &ts) != ETIMEDOUT;
		bad |= urcu_wait_wake_one(&q);
		bad |= !urcu_wait_queue_empty(&q);
		key = urcu_ec_prepare(&ec);
		ts = deadline_in(CLOCK_MONOTONIC, 2000000);
		bad |= urcu_ec_wait(&ec, key, &ts) != ETIMEDOUT;
		urcu_ec_notify(&ec);
		bad |= urcu_ec_wait(&ec, key, NULL) != 0;
	}
#endif
	return bad;
}

/*
 * A thread that sleeps once in a condition wait and exits: its first sleep
 * and its exit go through the library's per-thread state (the urcu_mutex
 * descriptor that the sleep marks blocked), which a fork may catch busy.
 */
static void *fk_short_thread(void *arg)
{
	struct timespec ts = deadline_in(CLOCK_REALTIME, 300000);

	(void) arg;
	pthread_mutex_lock(&fk_lock);
	(void) cond_timedwait(&fk_cond, &fk_lock, &ts);
	pthread_mutex_unlock(&fk_lock);
	return NULL;
}

static void fk_worker(struct stress_thread *t)
{
	struct timespec ts;
	unsigned int what;

	/* Thread 0 forks at least once, even if it first runs late. */
	while (!stress_should_stop(t) || !uatomic_read(&fk_forks)) {
		if (t->id == 0) {
			switch (stress_fork_check(fk_child_fn, NULL, 10000)) {
			case STRESS_FORK_OK:
				uatomic_inc(&fk_ok);
				break;
			case STRESS_FORK_HUNG:
				uatomic_inc(&fk_hung);
				break;
			default:
				uatomic_inc(&fk_failed);
				break;
			}
			uatomic_inc(&fk_forks);
			usleep(stress_rand_below(t, 2000));
			continue;
		}
		what = stress_rand_below(t, 8);
		if (what < 3) {
			pthread_mutex_lock(&fk_lock);
			ts = deadline_in(CLOCK_REALTIME,
				1000 + stress_rand_below(t, 200000));
			(void) cond_timedwait(&fk_cond, &fk_lock, &ts);
			pthread_mutex_unlock(&fk_lock);
		} else if (what < 4) {
			pthread_mutex_lock(&fk_lock);
			fk_flag++;
			cond_signal(&fk_cond);
			pthread_mutex_unlock(&fk_lock);
		} else if (what < 5) {
			pthread_t th;

			cond_broadcast(&fk_cond);
			if (!pthread_create(&th, NULL, fk_short_thread, NULL))
				pthread_join(th, NULL);
#ifndef PTHREAD_FACE
		} else if (what < 6) {
			struct urcu_wait_node n;

			urcu_wait_node_init(&n);
			(void) urcu_wait_add(&fk_queue, &n);
			ts = deadline_in(CLOCK_MONOTONIC,
				1000 + stress_rand_below(t, 200000));
			(void) urcu_wait(&n, &ts);
		} else if (what < 7) {
			(void) urcu_wait_wake_one(&fk_queue);
			urcu_ec_notify(&fk_ec);
		} else {
			uint32_t key = urcu_ec_prepare(&fk_ec);

			ts = deadline_in(CLOCK_MONOTONIC,
				1000 + stress_rand_below(t, 200000));
			(void) urcu_ec_wait(&fk_ec, key, &ts);
#endif
		}
	}
}


static void test_fork(void)
{
	struct stress_report rep;

#if STRESS_UNDER_ASAN
	/*
	 * gcc 12's AddressSanitizer allocator has no fork handlers: a child
	 * forked while another thread held its lock hangs in its first
	 * malloc or free (seen: a thread the child created, freeing in
	 * pthread_getattr_np()).
	 */
	skip(1, "fork: AddressSanitizer's allocator is not fork-safe");
	return;
#endif
#if STRESS_UNDER_TSAN
	/* The children create threads: see STRESS_UNDER_TSAN. */
	skip(1, "fork: ThreadSanitizer: the child's threads reuse the "
		"parent's stacks");
	return;
#endif

	stress_run(fk_worker, NULL, nr_workers(), STRESS_FLAGS, &rep);
	diag("fork: %lu forks (%lu ok, %lu failed, %lu hung) while %u threads "
		"waited, timed out, signalled and broadcast", fk_forks, fk_ok,
		fk_failed, fk_hung, rep.threads - 1);
	ok(fk_forks > 0 && fk_ok == fk_forks,
		"fork: every child used a new condition and finished (%lu failed, "
		"%lu hung)", fk_failed, fk_hung);
}

/* ---- Phase "exit" ---- */

static pthread_mutex_t ex_lock = PTHREAD_MUTEX_INITIALIZER;
static cond_t ex_cond;
static long ex_tokens;
static unsigned long ex_exits, ex_produced, ex_consumed, ex_timeouts;
#ifndef PTHREAD_FACE
static struct urcu_wait_queue ex_queue;
static unsigned long ex_node_exits, ex_node_woken;
#endif

/* Take one token, waiting with deadlines of 1-50 us, then exit. */
static void *ex_consumer(void *arg)
{
	struct timespec ts;
	int64_t ns = (int64_t) (intptr_t) arg;

	pthread_mutex_lock(&ex_lock);
	while (!ex_tokens) {
		ts = deadline_in(CLOCK_REALTIME, ns);
		if (cond_timedwait(&ex_cond, &ex_lock, &ts) == ETIMEDOUT)
			ex_timeouts++;
	}
	ex_tokens--;
	ex_consumed++;
	pthread_mutex_unlock(&ex_lock);
	return NULL;
}

#ifndef PTHREAD_FACE
/*
 * Wait once on the shared queue with a node in heap memory, then retire
 * the node as if it were still asleep on the queue, and exit.
 */
static void *ex_node_waiter(void *arg)
{
	struct urcu_wait_node *n = malloc(sizeof(*n)), image;
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, (intptr_t) arg);

	if (!n)
		bail_out("out of memory");
	urcu_wait_node_init(n);
	(void) urcu_wait_add(&ex_queue, n);
	if (urcu_wait(n, &ts) == 0)
		uatomic_inc(&ex_node_woken);
	image = *n;
	image.wfs.next = (struct cds_wfs_node *) CDS_WFS_END;
	image.state = 1;	/* SLEEPING (src/wait-internal.h) */
	image.queue = &ex_queue;
	stress_quarantine(n, sizeof(*n), &image);
	return NULL;
}
#endif

static void ex_worker(struct stress_thread *t)
{
	intptr_t ns;
	pthread_t th;

	while (!stress_should_stop(t)) {
		ns = 1000 + stress_rand_below(t, 50000);
#ifndef PTHREAD_FACE
		if (t->id % 2) {
			if (pthread_create(&th, NULL, ex_node_waiter, (void *) ns))
				continue;
			if (stress_rand_below(t, 2))
				(void) urcu_wait_wake_all(&ex_queue);
			else
				(void) urcu_wait_wake_one(&ex_queue);
			pthread_join(th, NULL);
			uatomic_inc(&ex_node_exits);
			continue;
		}
#endif
		if (pthread_create(&th, NULL, ex_consumer, (void *) ns))
			continue;
		if (stress_rand_below(t, 2))
			usleep(stress_rand_below(t, 60));
		pthread_mutex_lock(&ex_lock);
		ex_tokens++;
		ex_produced++;
		if (stress_rand_below(t, 2))
			cond_signal(&ex_cond);
		else
			cond_broadcast(&ex_cond);
		pthread_mutex_unlock(&ex_lock);
		pthread_join(th, NULL);
		uatomic_inc(&ex_exits);
	}
}

static void test_exit(void)
{
	struct stress_report rep;
	unsigned long late = stress_quarantine_drain();

	stress_run(ex_worker, NULL, nr_workers(), STRESS_FLAGS, &rep);
	late = stress_quarantine_drain() - late;
	diag("exit: %lu waiter threads exited after their wait (%lu timed out "
		"at least once)", ex_exits, ex_timeouts);
	ok(ex_exits > 0 && ex_produced == ex_consumed && ex_tokens == 0,
		"exit: %lu tokens produced, each consumed once by a thread that "
		"then exited", ex_produced);
	ok(cond_destroy(&ex_cond) == 0, "exit: nobody left on the condition");
#ifndef PTHREAD_FACE
	diag("exit: %lu wait-stack waiters exited (%lu woken), their nodes "
		"retired", ex_node_exits, ex_node_woken);
	ok(ex_node_exits > 0 && late == 0 && urcu_wait_queue_empty(&ex_queue),
		"exit: no waker wrote an exited waiter's node (%lu late writes)",
		late);
#else
	ok(late == 0, "exit: no late write (%lu)", late);
#endif
}

#ifdef PTHREAD_FACE
#define PLAN	(5 + 3 + 1 + 3)
#else
#define PLAN	(5 + 3 + 2 + 1 + 3)
#endif

int main(void)
{
	struct stress_report rep;

	plan_tests(PLAN);
#ifdef PTHREAD_FACE
	if (getenv("URCU_RSEQ_TEST_GLIBC"))
		ok(!dlsym(RTLD_DEFAULT, "urcu_rseq_pthread_cond_preload"),
			"glibc run: the preload is not loaded");
	else
		ok(dlsym(RTLD_DEFAULT, "urcu_rseq_pthread_cond_preload") != NULL,
			"liburcu-rseq-pthread-cond.so is preloaded");
#else
	ok1(sizeof(cond_t) <= 48);
#endif
	slot = malloc(sizeof(*slot));
	if (!slot)
		bail_out("out of memory");
	stress_run(worker, NULL, NR_WAITERS + 1,
		STRESS_SIGNALS | STRESS_MIGRATIONS, &rep);
	diag("after broadcast: %lu rounds, %lu timeouts", rounds, timeouts);
	ok(rounds > 0, "rounds ran (%lu)", rounds);
	ok(destroy_busy == 0, "destroy right after broadcast returned 0 "
		"every time (%lu EBUSY)", destroy_busy);
	ok(corrupt == 0, "no woken waiter wrote the destroyed condition "
		"(%lu rounds corrupted)", corrupt);
	ok(rep.signals > 0 || !rep.threads, "under the signal storm (%lu signals)",
		rep.signals);
	free(slot);
	test_lifecycle_cond();
#ifndef PTHREAD_FACE
	test_lifecycle_queue_ec();
#endif
	test_fork();
	test_exit();
	return exit_status();
}
