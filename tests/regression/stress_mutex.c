// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Stress of urcu_mutex with 2, 8 and 64 threads on however few CPUs the
 * machine has, under the signal storm and forced migrations: critical
 * sections that sometimes sleep (nanosleep), trylock and timed locks with
 * random deadlines mixed in. Checks mutual exclusion with a plain counter
 * and an "inside" flag, that every success was counted exactly once, and
 * reports the worst wait of any blocking lock() as a diagnostic (a
 * starved waiter shows as a phase that does not end). Each phase runs URCU_RSEQ_STRESS_MS
 * (300 ms by default under make check, longer under make regtest), once
 * with the default owner-running test and once with it off.
 *
 * Then the lifecycle, fork and exit tortures:
 * - lifecycle: short-lived heap objects that embed a mutex and a reference
 *   count kept under it; the thread that drops the last reference (inside
 *   the lock, the pattern POSIX allows) unlocks, destroys (must be 0) and
 *   frees the object into the quarantine, which counts every write that
 *   lands after the free. Timed waiters that time out leave stale waiter
 *   bits behind for the last unlocks to meet.
 * - fork: threads lock, time out and sleep on two mutexes, short-lived
 *   threads take and return ids, while another thread forks holding one of
 *   the mutexes; the child must unlock it, use it, a new mutex and a new
 *   thread, and finish.
 * - exit: threads lock, unlock and exit while others wait on the same
 *   mutex; then a thread exits holding a mutex, and the threads that
 *   reuse its id must neither own nor unlock that mutex.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu/uatomic.h>
#include <urcu/mutex.h>
#include "tap.h"
#include "stress.h"
#include "lifecycle.h"

#define MAX_THREADS	64
struct per_thread {
	unsigned long locked, timed_ok, timed_out, tried_ok;
	int64_t worst_wait;
} __attribute__((aligned(64)));

static struct {
	struct urcu_mutex m;
	unsigned long counter;
	int inside;
	unsigned long violations, bad_timeouts;
	struct per_thread t[MAX_THREADS];
} s;

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec deadline_in(int64_t ns)
{
	int64_t t = now_ns(CLOCK_REALTIME) + ns;
	struct timespec ts = { (time_t) (t / 1000000000LL),
			(long) (t % 1000000000LL) };

	return ts;
}

static void short_sleep(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

static void section(struct stress_thread *t)
{
	unsigned int r = stress_rand_below(t, 1000), i;

	if (CMM_LOAD_SHARED(s.inside))
		uatomic_inc(&s.violations);
	CMM_STORE_SHARED(s.inside, 1);
	s.counter++;
	if (r < 5) {
		struct timespec ts = { 0, 1000 * (long) (1 + r * 10) };

		nanosleep(&ts, NULL);
	} else if (r < 100) {
		for (i = 0; i < r * 4; i++)
			caa_cpu_relax();
	}
	if (CMM_LOAD_SHARED(s.inside) != 1)
		uatomic_inc(&s.violations);
	CMM_STORE_SHARED(s.inside, 0);
}

static void worker(struct stress_thread *t)
{
	struct per_thread *p = &s.t[t->id];
	struct timespec ts;
	int64_t t0, w, dl;
	unsigned int r;
	int ret;

	while (!stress_should_stop(t)) {
		r = stress_rand_below(t, 10);
		if (r == 0) {
			if (!urcu_mutex_trylock(&s.m))
				continue;
			p->tried_ok++;
		} else if (r == 1) {
			dl = now_ns(CLOCK_REALTIME)
				+ (int64_t) stress_rand_below(t, 2000000);
			ts.tv_sec = (time_t) (dl / 1000000000LL);
			ts.tv_nsec = (long) (dl % 1000000000LL);
			ret = urcu_mutex_timedlock(&s.m, &ts);
			if (ret == ETIMEDOUT) {
				/* A timeout before the deadline is a bug. */
				if (now_ns(CLOCK_REALTIME) < dl)
					uatomic_inc(&s.bad_timeouts);
				p->timed_out++;
				continue;
			}
			if (ret)
				uatomic_inc(&s.bad_timeouts);
			p->timed_ok++;
		} else {
			t0 = now_ns(CLOCK_MONOTONIC);
			urcu_mutex_lock(&s.m);
			w = now_ns(CLOCK_MONOTONIC) - t0;
			if (w > p->worst_wait)
				p->worst_wait = w;
			p->locked++;
		}
		section(t);
		urcu_mutex_unlock(&s.m);
	}
}

static void phase(unsigned int threads, unsigned int signals, const char *what)
{
	struct urcu_mutex_attr attr = { signals, 0 };
	unsigned long sum = 0, timed_ok = 0, timed_out = 0, tried = 0;
	unsigned long locked = 0;
	struct stress_report rep;
	int64_t worst = 0;
	unsigned int i;

	memset(&s, 0, sizeof(s));
	urcu_mutex_init(&s.m, &attr);
	stress_run(worker, NULL, threads,
		STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, &rep);
	for (i = 0; i < threads; i++) {
		sum += s.t[i].locked + s.t[i].timed_ok + s.t[i].tried_ok;
		timed_ok += s.t[i].timed_ok;
		timed_out += s.t[i].timed_out;
		tried += s.t[i].tried_ok;
		locked += s.t[i].locked;
		if (s.t[i].worst_wait > worst)
			worst = s.t[i].worst_wait;
	}
	diag("%s, %u threads: %lu sections (%lu trylock, %lu timed, %lu timeouts), "
		"%lu signals, %lu migrations, worst lock() wait %lld us",
		what, threads, sum, tried, timed_ok, timed_out, rep.signals,
		rep.migrations, (long long) worst / 1000);
	ok(s.violations == 0 && s.counter == sum && sum > 0,
		"%s, %u threads: exclusion held, counter exact", what, threads);
	ok(s.bad_timeouts == 0, "%s, %u threads: no early timeout or error",
		what, threads);
	/*
	 * Every lock() returned (the phase ended) and was measured; the
	 * worst wait is in the diag above, not bounded: a starved host
	 * stretches any bound, and latency belongs to the benchmark.
	 */
	ok(locked > 0, "%s, %u threads: lock() returned %lu times, worst "
		"wait %lld us", what, threads, locked, (long long) worst / 1000);
	ok(urcu_mutex_destroy(&s.m) == 0 && s.m.handoff == 0,
		"%s, %u threads: free, hand-off slot empty at the end", what,
		threads);
}

/* ---- lifecycle ---------------------------------------------------------- */

#define LC_SLOTS	8
#define LC_MAX_REFS	8
/*
 * Bits of the lock word (src/mutex.c): owner id in bits 0-27, awake-waiter
 * bit 28, sleepers bit 30. A freed object is filled with a mutex that looks
 * locked with both bits set, so that a late cmpxchg that clears or sets a
 * bit, or releases the lock, succeeds and shows.
 */
#define LC_IMAGE_STATE	((int32_t) (5 | (1 << 28) | (1 << 30)))

struct lc_obj {
	struct urcu_mutex m;
	unsigned int refs;	/* references not dropped yet; under m */
	unsigned int planned;	/* references handed out in its life */
	unsigned long value;	/* one update per reference; under m */
	int inside;
};

/* Where threads take references: the slot hands out planned ones. */
struct lc_slot {
	pthread_mutex_t lock;
	struct lc_obj *obj;
	unsigned int handed;
} __attribute__((aligned(64)));

static struct {
	struct urcu_mutex_attr attr;
	struct lc_slot slot[LC_SLOTS];
	struct lc_obj image;
	unsigned long objects, destroyed, ebusy, bad_unlock, bad_value;
	unsigned long violations, timeouts, bad_timed;
} lc;

static struct lc_obj *lc_get(struct stress_thread *t)
{
	struct lc_slot *sl = &lc.slot[stress_rand_below(t, LC_SLOTS)];
	struct lc_obj *o;

	pthread_mutex_lock(&sl->lock);
	o = sl->obj;
	if (!o) {
		o = (struct lc_obj *) calloc(1, sizeof(*o));
		if (!o)
			bail_out("out of memory");
		urcu_mutex_init(&o->m, &lc.attr);
		o->planned = 2 + stress_rand_below(t, LC_MAX_REFS - 1);
		o->refs = o->planned;
		sl->obj = o;
		sl->handed = 0;
		uatomic_inc(&lc.objects);
	}
	if (++sl->handed == o->planned)
		sl->obj = NULL;
	pthread_mutex_unlock(&sl->lock);
	return o;
}

/* The last reference is gone and the lock released: destroy and free. */
static void lc_retire(struct lc_obj *o)
{
	if (o->value != o->planned)
		uatomic_inc(&lc.bad_value);
	if (urcu_mutex_destroy(&o->m))
		uatomic_inc(&lc.ebusy);
	stress_quarantine(o, sizeof(*o), &lc.image);
	uatomic_inc(&lc.destroyed);
}

static void lc_lock(struct stress_thread *t, struct lc_obj *o)
{
	unsigned int r = stress_rand_below(t, 8);
	struct timespec ts;
	int ret;

	if (r < 3) {
		/* Short deadlines: many time out after they slept. */
		ts = deadline_in((int64_t) stress_rand_below(t, 20000));
		ret = urcu_mutex_timedlock(&o->m, &ts);
		if (!ret)
			return;
		if (ret == ETIMEDOUT)
			uatomic_inc(&lc.timeouts);
		else
			uatomic_inc(&lc.bad_timed);
	} else if (r == 3 && urcu_mutex_trylock(&o->m)) {
		return;
	}
	/* A timed-out holder of a reference still drops it under the lock. */
	urcu_mutex_lock(&o->m);
}

static void lc_worker(struct stress_thread *t)
{
	struct lc_obj *o;
	bool last;

	while (!stress_should_stop(t)) {
		o = lc_get(t);
		lc_lock(t, o);
		if (o->inside)
			uatomic_inc(&lc.violations);
		o->inside = 1;
		o->value++;
		last = --o->refs == 0;
		/* Now and then a long hold, so that waiters go to sleep. */
		if (stress_rand_below(t, 100) < 4)
			short_sleep(1000 + (long) stress_rand_below(t, 20000));
		o->inside = 0;
		if (urcu_mutex_unlock(&o->m))
			uatomic_inc(&lc.bad_unlock);
		if (last)
			lc_retire(o);
	}
}

static void phase_lifecycle(unsigned int signals, const char *what)
{
	unsigned int threads = 4 * (unsigned int) stress_nr_cpus() + 4, i;
	unsigned long late, retired0 = stress_quarantined();
	struct stress_report rep;
	struct lc_obj *o;

	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	memset(&lc, 0, sizeof(lc));
	lc.attr.owner_signals = signals;
	lc.image.m.state = LC_IMAGE_STATE;
	lc.image.m.handoff = 5;
	lc.image.refs = 1;
	for (i = 0; i < LC_SLOTS; i++)
		pthread_mutex_init(&lc.slot[i].lock, NULL);
	stress_run(lc_worker, NULL, threads,
		STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, &rep);
	/* Objects still being handed out: drop the references never taken. */
	for (i = 0; i < LC_SLOTS; i++) {
		o = lc.slot[i].obj;
		if (!o)
			continue;
		urcu_mutex_lock(&o->m);
		o->refs -= o->planned - lc.slot[i].handed;
		o->value += o->planned - lc.slot[i].handed;
		urcu_mutex_unlock(&o->m);
		if (o->refs)
			uatomic_inc(&lc.bad_value);
		lc_retire(o);
		pthread_mutex_destroy(&lc.slot[i].lock);
	}
	late = stress_quarantine_drain();
	diag("lifecycle %s, %u threads: %lu objects, %lu destroyed, %lu "
		"timeouts, %lu EBUSY destroys, %lu late writes (%lu freed in all), "
		"%lu signals, %lu migrations", what, threads, lc.objects,
		lc.destroyed, lc.timeouts, lc.ebusy, late,
		stress_quarantined() - retired0, rep.signals, rep.migrations);
	ok(lc.violations == 0 && lc.bad_value == 0 && lc.objects > 0
		&& lc.destroyed == lc.objects,
		"lifecycle %s: exclusion held, every reference counted", what);
	ok(lc.bad_unlock == 0 && lc.bad_timed == 0,
		"lifecycle %s: every unlock and timedlock returned 0 or ETIMEDOUT",
		what);
	ok(lc.ebusy == 0,
		"lifecycle %s: destroy right after the last unlock returns 0 "
		"(%lu EBUSY)", what, lc.ebusy);
	ok(late == 0, "lifecycle %s: no write after the free (%lu late)", what,
		late);
}

/* ---- fork ---------------------------------------------------------------- */

#define FORK_CHILD_MS	10000

#define FORK_CHILD_LOOPS	200

static struct {
	struct urcu_mutex m[2];
	unsigned long counter[2];	/* under m[i] */
	unsigned long sections[MAX_THREADS][2];
	unsigned long forks, fork_ok, fork_failed, fork_hung, fork_error;
	unsigned long churned;
	int violations;
} fk;

struct fork_child_arg {
	struct urcu_mutex *nm;
	unsigned long done;
};

#define CHILD_NO_THREAD	(STRESS_UNDER_ASAN || STRESS_UNDER_TSAN)

static void *fork_child_thread(void *arg)
{
	struct fork_child_arg *a = (struct fork_child_arg *) arg;
	unsigned int i;

	for (i = 0; i < FORK_CHILD_LOOPS; i++) {
		urcu_mutex_lock(&fk.m[0]);
		fk.counter[0]++;
		if (urcu_mutex_unlock(&fk.m[0]))
			break;
		urcu_mutex_lock(a->nm);
		a->done++;
		if (urcu_mutex_unlock(a->nm))
			break;
	}
	return NULL;
}

/*
 * In the child: the forking thread held m[0] and keeps its id, so it owns
 * it; parent threads that waited on m[0], asleep or in the hand-off slot,
 * are gone. Every operation must work and end.
 */
static int fork_child_steps(void)
{
	struct fork_child_arg a = { NULL, 0 };
	struct urcu_mutex nm;
	struct timespec ts;
	unsigned long before;
	pthread_t th;

	if (!urcu_mutex_is_owner(&fk.m[0]))
		return 1;
	if (urcu_mutex_unlock(&fk.m[0]))
		return 2;
	if (urcu_mutex_init(&nm, NULL))
		return 3;
	urcu_mutex_lock(&nm);
	if (urcu_mutex_trylock(&nm) || urcu_mutex_unlock(&nm))
		return 4;
	ts = deadline_in(FORK_CHILD_MS / 2 * 1000000LL);
	if (urcu_mutex_timedlock(&fk.m[0], &ts))
		return 5;
	before = fk.counter[0];
	if (urcu_mutex_unlock(&fk.m[0]))
		return 6;
	/*
	 * A new thread takes an id in the child: the registry must work.
	 * Not under the sanitizers that cannot follow it (lifecycle.h).
	 */
	a.nm = &nm;
	if (!CHILD_NO_THREAD
			&& pthread_create(&th, NULL, fork_child_thread, &a))
		return 7;
	fork_child_thread(&a);
	if (!CHILD_NO_THREAD)
		pthread_join(th, NULL);
	if (fk.counter[0] != before + (2 - CHILD_NO_THREAD) * FORK_CHILD_LOOPS
			|| a.done != (2 - CHILD_NO_THREAD) * FORK_CHILD_LOOPS)
		return 8;
	if (urcu_mutex_destroy(&nm))
		return 9;
	/* Held by nobody, and its parent waiters do not exist here. */
	if (urcu_mutex_destroy(&fk.m[0]))
		return 10;
	return 0;
}

static int fork_child(void *arg)
{
	int step = fork_child_steps();

	(void) arg;
	if (step)
		dprintf(2, "# fork child: step %d failed\n", step);
	return step;
}

/*
 * The forking thread holds m[0] across fork() only: in the parent it lets
 * it go as soon as fork() returns, not when the child is done.
 */
static __thread bool fork_holding;

static void fork_parent_unlock(void)
{
	if (!fork_holding)
		return;
	fork_holding = false;
	urcu_mutex_unlock(&fk.m[0]);
}

static void *churn_thread(void *arg)
{
	(void) arg;
	urcu_mutex_lock(&fk.m[1]);
	fk.counter[1]++;
	urcu_mutex_unlock(&fk.m[1]);
	return NULL;
}

static void fork_worker(struct stress_thread *t)
{
	enum stress_fork_result res;
	struct timespec ts;
	unsigned int i, r;
	pthread_t th;

	/* Thread 0 forks at least once, even if it first runs late. */
	while (!stress_should_stop(t) || !uatomic_read(&fk.forks)) {
		if (t->id == 0) {
			/* Fork holding m[0], while others wait for it. */
			urcu_mutex_lock(&fk.m[0]);
			fk.counter[0]++;
			fk.sections[0][0]++;
			fork_holding = true;
			res = stress_fork_check(fork_child, NULL, FORK_CHILD_MS);
			if (fork_holding)	/* fork() failed */
				fork_parent_unlock();
			uatomic_set(&fk.forks, fk.forks + 1);
			if (res == STRESS_FORK_OK)
				fk.fork_ok++;
			else if (res == STRESS_FORK_FAILED)
				fk.fork_failed++;
			else if (res == STRESS_FORK_HUNG)
				fk.fork_hung++;
			else
				fk.fork_error++;
			continue;
		}
		if (t->id == 1) {
			/* Ids taken and returned across the forks. */
			if (pthread_create(&th, NULL, churn_thread, NULL))
				continue;
			pthread_join(th, NULL);
			fk.churned++;
			continue;
		}
		i = stress_rand_below(t, 2);
		r = stress_rand_below(t, 8);
		if (r == 0) {
			ts = deadline_in((int64_t) stress_rand_below(t, 50000));
			if (urcu_mutex_timedlock(&fk.m[i], &ts))
				continue;
		} else if (r == 1) {
			if (!urcu_mutex_trylock(&fk.m[i]))
				continue;
		} else {
			urcu_mutex_lock(&fk.m[i]);
		}
		fk.counter[i]++;
		fk.sections[t->id][i]++;
		if (r == 2)
			short_sleep(5000);
		urcu_mutex_unlock(&fk.m[i]);
	}
}

static void phase_fork(void)
{
	unsigned int threads = 2 * (unsigned int) stress_nr_cpus() + 4, i;
	unsigned long sum[2] = { 0, 0 };
	struct stress_report rep;

	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	memset(&fk, 0, sizeof(fk));
	if (pthread_atfork(NULL, fork_parent_unlock, NULL))
		bail_out("pthread_atfork");
	urcu_mutex_init(&fk.m[0], NULL);
	urcu_mutex_init(&fk.m[1], NULL);
	stress_run(fork_worker, NULL, threads,
		STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, &rep);
	for (i = 0; i < threads; i++) {
		sum[0] += fk.sections[i][0];
		sum[1] += fk.sections[i][1];
	}
	diag("fork, %u threads: %lu forks (%lu ok, %lu failed, %lu hung, "
		"%lu errors), %lu short-lived threads, %lu + %lu sections, "
		"%lu signals, %lu migrations", threads, fk.forks, fk.fork_ok,
		fk.fork_failed, fk.fork_hung, fk.fork_error, fk.churned,
		sum[0], sum[1], rep.signals, rep.migrations);
	ok(fk.forks > 0 && fk.fork_ok == fk.forks,
		"fork: every child used the mutexes and finished (%lu/%lu)",
		fk.fork_ok, fk.forks);
	ok(fk.counter[0] == sum[0] && fk.counter[1] == sum[1] + fk.churned,
		"fork: exclusion held in the parent, counters exact");
	ok(urcu_mutex_destroy(&fk.m[0]) == 0
		&& urcu_mutex_destroy(&fk.m[1]) == 0,
		"fork: both mutexes free at the end");
}

/* ---- exit ---------------------------------------------------------------- */

/* The low 20 bits of an owner id name its descriptor (src/mutex.c). */
#define ID_SLOT(id)	((uint32_t) (id) & 0xfffff)
#define OWNER_OF(m)	((uint32_t) CMM_LOAD_SHARED((m)->state) & 0x0fffffff)
#define EXIT_BATCH	4
#define ORPHAN_PROBES	4096

static struct {
	struct urcu_mutex m;
	unsigned long counter;		/* under m */
	unsigned long sections[MAX_THREADS];
	unsigned long exits, exit_sections;
} ex;

static void *exit_thread(void *arg)
{
	struct timespec ts;

	(void) arg;
	if ((uintptr_t) arg & 1) {
		ts = deadline_in(100000);
		if (urcu_mutex_timedlock(&ex.m, &ts))
			return NULL;
	} else {
		urcu_mutex_lock(&ex.m);
	}
	ex.counter++;
	uatomic_inc(&ex.exit_sections);
	urcu_mutex_unlock(&ex.m);
	return NULL;
}

static void exit_worker(struct stress_thread *t)
{
	pthread_t th[EXIT_BATCH];
	unsigned int i, n;

	while (!stress_should_stop(t)) {
		if (t->id < 2) {
			/* Batches of threads that lock once and exit. */
			for (n = 0; n < EXIT_BATCH; n++)
				if (pthread_create(&th[n], NULL, exit_thread,
						(void *) (uintptr_t) n))
					break;
			for (i = 0; i < n; i++)
				pthread_join(th[i], NULL);
			uatomic_add(&ex.exits, n);
			continue;
		}
		urcu_mutex_lock(&ex.m);
		ex.counter++;
		ex.sections[t->id]++;
		if (stress_rand_below(t, 50) == 0)
			short_sleep(2000);
		urcu_mutex_unlock(&ex.m);
	}
}

static struct urcu_mutex orphan = URCU_MUTEX_INITIALIZER;

struct probe {
	uint32_t id;
	bool owner;
	int unlocked;
};

static void *orphan_owner(void *arg)
{
	urcu_mutex_lock(&orphan);
	*(uint32_t *) arg = OWNER_OF(&orphan);
	return NULL;	/* exits holding it */
}

static void *orphan_probe(void *arg)
{
	struct urcu_mutex mine = URCU_MUTEX_INITIALIZER;
	struct probe *p = (struct probe *) arg;

	urcu_mutex_lock(&mine);
	p->id = OWNER_OF(&mine);
	urcu_mutex_unlock(&mine);
	p->owner = urcu_mutex_is_owner(&orphan);
#ifndef URCU_RSEQ_DEBUG
	/* The debug build aborts on an unlock by a non-owner. */
	p->unlocked = urcu_mutex_unlock(&orphan) != EPERM;
#endif
	return NULL;
}

static void phase_exit(void)
{
	unsigned int threads = 2 * (unsigned int) stress_nr_cpus() + 2, i;
	unsigned long sum = 0, probes = 0, recycled = 0, owned = 0;
	unsigned long unlocked = 0;
	struct stress_report rep;
	struct probe p;
	uint32_t dead = 0;
	pthread_t th;

	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	memset(&ex, 0, sizeof(ex));
	urcu_mutex_init(&ex.m, NULL);
	stress_run(exit_worker, NULL, threads,
		STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, &rep);
	for (i = 0; i < threads; i++)
		sum += ex.sections[i];
	diag("exit, %u threads: %lu threads exited after locking, %lu "
		"sections, %lu signals, %lu migrations", threads, ex.exits,
		sum + ex.exit_sections, rep.signals, rep.migrations);
	ok(ex.exits > 0 && ex.counter == sum + ex.exit_sections
		&& urcu_mutex_destroy(&ex.m) == 0,
		"exit: exclusion held across thread exits, counter exact");

	/* A thread exits holding orphan; the next threads reuse its id. */
	if (pthread_create(&th, NULL, orphan_owner, &dead))
		bail_out("pthread_create");
	pthread_join(th, NULL);
	while (probes < ORPHAN_PROBES && recycled < 8) {
		memset(&p, 0, sizeof(p));
		if (pthread_create(&th, NULL, orphan_probe, &p))
			bail_out("pthread_create");
		pthread_join(th, NULL);
		probes++;
		if (ID_SLOT(p.id) == ID_SLOT(dead))
			recycled++;
		if (p.owner)
			owned++;
		if (p.unlocked)
			unlocked++;
	}
	diag("exit: owner id %#x exited holding a mutex; %lu threads after "
		"it, %lu of them on its descriptor; %lu owned it, %lu unlocked it",
		dead, probes, recycled, owned, unlocked);
	ok(recycled > 0 && owned == 0 && unlocked == 0,
		"exit: no thread that reuses a dead owner's id owns or unlocks "
		"its mutex");
}

/* No argument: every phase; else the phases named (main, lifecycle, fork, exit). */
static bool wanted(int argc, char **argv, const char *name)
{
	int i;

	if (argc < 2)
		return true;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	static const unsigned int threads[] = { 2, 8, 64 };
	bool m = wanted(argc, argv, "main"), l = wanted(argc, argv, "lifecycle");
	bool f = wanted(argc, argv, "fork"), e = wanted(argc, argv, "exit");
	unsigned int i;

	plan_tests((m ? 4 * 3 * 2 : 0) + (l ? 4 * 2 : 0) + (f ? 3 : 0)
		+ (e ? 2 : 0));
	diag("%d CPUs, %lu ms per phase, backend %s", stress_nr_cpus(),
		stress_duration_ms(), urcu_mutex_owner_backend());
	for (i = 0; m && i < 3; i++)
		phase(threads[i], URCU_MUTEX_OWNER_DEFAULT, "default");
	for (i = 0; m && i < 3; i++)
		phase(threads[i], URCU_MUTEX_OWNER_NONE, "owner test off");
	if (l) {
		phase_lifecycle(URCU_MUTEX_OWNER_DEFAULT, "default");
		phase_lifecycle(URCU_MUTEX_OWNER_NONE, "owner test off");
	}
	if (f)
		phase_fork();
	if (e)
		phase_exit();
	return exit_status();
}
