// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU counter stress: 64 adder threads on however few CPUs the machine
 * has, a timer signal storm, workers re-pinned to random CPUs while they
 * count, and one reader calling read_reset in a loop. Each adder counts its
 * own adds in a local variable; at the end the sum of every read_reset plus
 * a final read must equal the sum of those locals exactly.
 *
 * Phases: CPU-indexed, mm_cid-indexed, half of the adders on the fallback
 * path of threads without rseq (the path URCU_RSEQ_DISABLE=1 gives every
 * thread; stress_percpu_counter_norseq.sh runs this whole program so), and
 * the all-atomic mode of a counter created without the RSEQ fence (forced
 * through the counter's mode field, a test hook). Each phase runs
 * stress_duration_ms() (URCU_RSEQ_STRESS_MS; `make regtest` sets 10 s).
 * Adders also add from inside the signal handler's reach: values 0..7,
 * sometimes negative, so a lost or doubled add of any size shows.
 *
 * Then the fork, lifecycle and thread-exit tortures:
 * - fork: adders, a thread in read_reset (holding its reset lock) and one
 *   creating and destroying counters (the pools lock, the pool's lock)
 *   run while another forks; the child read_resets the busy counter, adds
 *   and resets it exactly, uses new counters, destroys, and must finish
 *   (a hung child is killed by the parent's watchdog: a failure).
 * - lifecycle: short-lived counters shared by a few users that add and
 *   read_reset concurrently; the user that drops the last reference checks
 *   that the read_resets plus a final read equal the adds, destroys the
 *   counter and frees the object into the quarantine. New counters, made
 *   from the pool items just freed, must read zero.
 * - exit: short-lived threads add (their first add registers them) and
 *   exit while another thread read_resets: the total stays exact.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/counter.h>

#include "tap.h"
#include "stress.h"
#include "lifecycle.h"

#define NR_ADDERS	64

enum phase { PH_CPU, PH_MM_CID, PH_FALLBACK, PH_ATOMIC, NR_PHASES };
static const char *phase_name[NR_PHASES] = {
	"cpu", "mm_cid", "half fallback slot", "all-atomic"
};

struct run {
	struct urcu_percpu_counter *c;
	enum phase phase;
	intptr_t added;
	intptr_t reset_sum;
	unsigned long resets, adds;
};

static void worker(struct stress_thread *t)
{
	struct run *r = (struct run *) t->arg;
	intptr_t mine = 0;
	unsigned long n = 0;

	if (t->id == 0) {
		intptr_t sum = 0;

		while (!stress_should_stop(t)) {
			sum += urcu_percpu_counter_read_reset(r->c);
			n++;
		}
		r->reset_sum = sum;
		r->resets = n;
		return;
	}
	while (!stress_should_stop(t)) {
		intptr_t v = (intptr_t) stress_rand_below(t, 8);

		if ((n & 15) == 0)
			v = -v;
		if (r->phase == PH_FALLBACK && (t->id & 1))
			urcu_percpu_counter_add_slow(r->c, v);
		else
			urcu_percpu_counter_add(r->c, v);
		mine += v;
		n++;
	}
	uatomic_add(&r->added, mine);
	uatomic_add(&r->adds, n);
}

/* ---- fork ---- */

#define FK_THREADS	12	/* 0 forks, 1 read_resets, 2 creates, the rest add */

/* What the children found, in memory shared with the parent. */
struct fk_shared {
	unsigned long children;
	unsigned long bad;
};

static struct {
	struct urcu_percpu_counter *c;
	struct fk_shared *sh;
	unsigned long forks, ok, hung, failed, resets, created;
} fk;

/* Every operation on a new counter of the child's own; 0 when exact. */
static unsigned long fk_use_new(unsigned int flags)
{
	struct urcu_percpu_counter *c = urcu_percpu_counter_create(flags);
	unsigned long bad = 0;
	intptr_t i;

	if (!c)
		return 1;
	bad += urcu_percpu_counter_read(c) != 0;
	for (i = 1; i <= 100; i++)
		urcu_percpu_counter_add(c, i);
	bad += urcu_percpu_counter_read(c) != 5050;
	bad += urcu_percpu_counter_read_reset(c) != 5050;
	urcu_percpu_counter_inc(c);
	bad += urcu_percpu_counter_read_reset(c) != 1;
	urcu_percpu_counter_destroy(c);
	return bad;
}

static int fk_child(void *arg)
{
	struct urcu_percpu_counter *c = fk.c;
	unsigned long bad = 0;
	intptr_t i;

	(void) arg;
	/* What the parent's adders left: taken once, then nothing is left. */
	(void) urcu_percpu_counter_read_reset(c);
	bad += urcu_percpu_counter_read(c) != 0;
	bad += urcu_percpu_counter_read_reset(c) != 0;
	for (i = 0; i < 1000; i++)
		urcu_percpu_counter_add(c, i & 7);
	bad += urcu_percpu_counter_read_reset(c) != 3500;
	urcu_percpu_counter_destroy(c);
	bad += fk_use_new(0);
	bad += fk_use_new(URCU_PERCPU_MM_CID);
	uatomic_inc(&fk.sh->children);
	uatomic_add(&fk.sh->bad, bad);
	return bad != 0;
}

/*
 * The forking thread keeps the storm's signal blocked (the others take
 * it): fork() starts over when a signal arrives while it copies the
 * process, and under the storm it would hardly ever finish.
 */
static void fk_block_storm(struct stress_thread *t)
{
	sigset_t set;

	if (t->id != 0)
		return;
	sigemptyset(&set);
	sigaddset(&set, STRESS_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static void fk_worker(struct stress_thread *t)
{
	fk_block_storm(t);
	/* Thread 0 forks at least once, even if it first runs late. */
	while (!stress_should_stop(t) || !uatomic_read(&fk.forks)) {
		if (t->id == 0) {
			switch (stress_fork_check(fk_child, NULL, 10000)) {
			case STRESS_FORK_OK:
				fk.ok++;
				break;
			case STRESS_FORK_HUNG:
				fk.hung++;
				break;
			default:
				fk.failed++;
				break;
			}
			uatomic_set(&fk.forks, fk.forks + 1);
			usleep(stress_rand_below(t, 1000));
		} else if (t->id == 1) {
			(void) urcu_percpu_counter_read_reset(fk.c);
			fk.resets++;
		} else if (t->id == 2 && !STRESS_UNDER_ASAN) {
			/*
			 * The pools lock, the pool's, and other reset locks.
			 * Not under ASan: its allocator has no fork handlers,
			 * and the child allocates (lifecycle.h).
			 */
			struct urcu_percpu_counter *c = urcu_percpu_counter_create(
				stress_rand_below(t, 2) ? URCU_PERCPU_MM_CID : 0);

			if (!c)
				bail_out("urcu_percpu_counter_create failed");
			urcu_percpu_counter_inc(c);
			(void) urcu_percpu_counter_read_reset(c);
			urcu_percpu_counter_destroy(c);
			fk.created++;
		} else {
			urcu_percpu_counter_add(fk.c,
				(intptr_t) stress_rand_below(t, 8));
		}
	}
}

static void test_fork(void)
{
	struct stress_report rep;
	struct fk_shared *sh;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		bail_out("mmap failed");
	memset(sh, 0, sizeof(*sh));
	fk.sh = sh;
	fk.c = urcu_percpu_counter_create(0);
	if (!fk.c)
		bail_out("urcu_percpu_counter_create failed");
	stress_run(fk_worker, NULL, FK_THREADS,
			STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, &rep);
	diag("fork: %lu forks while one thread read_reset (%lu times) and "
		"one created, reset and destroyed counters (%lu); children: "
		"%lu finished, %lu wrong sums", fk.forks, fk.resets, fk.created,
		sh->children, sh->bad);
	ok(fk.forks > 0 && fk.ok == fk.forks,
		"fork: every child read_reset the busy counter, added and "
		"reset exactly, used new counters and finished (%lu failed, "
		"%lu hung)", fk.failed, fk.hung);
	urcu_percpu_counter_destroy(fk.c);
	munmap(sh, sizeof(*sh));
}

/* ---- lifecycle ---- */

#define LC_SLOTS	4
#define LC_MAX_REFS	6
#define LC_THREADS	16

struct lc_obj {
	struct urcu_percpu_counter *c;
	unsigned int planned;
	unsigned int refs;	/* atomic */
	intptr_t added;		/* atomic: what the users added */
	intptr_t reset_sum;	/* atomic: what their read_resets returned */
};

struct lc_slot {
	pthread_mutex_t lock;
	struct lc_obj *obj;
	unsigned int handed;
} __attribute__((aligned(64)));

static struct {
	struct lc_slot slot[LC_SLOTS];
	unsigned long objects, destroyed, resets, bad_sum, bad_new;
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
		o->c = urcu_percpu_counter_create(stress_rand_below(t, 4) ?
				0 : URCU_PERCPU_MM_CID);
		if (!o->c)
			bail_out("urcu_percpu_counter_create failed");
		/* A counter made of reused items starts at zero. */
		if (urcu_percpu_counter_read(o->c) != 0)
			uatomic_inc(&lc.bad_new);
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

/* The last reference is gone: check the sum, destroy and free. */
static void lc_retire(struct lc_obj *o)
{
	intptr_t total = uatomic_read(&o->reset_sum)
		+ urcu_percpu_counter_read(o->c);

	if (total != uatomic_read(&o->added))
		uatomic_inc(&lc.bad_sum);
	urcu_percpu_counter_destroy(o->c);
	stress_quarantine(o, sizeof(*o), NULL);
	uatomic_inc(&lc.destroyed);
}

static void lc_worker(struct stress_thread *t)
{
	while (!stress_should_stop(t)) {
		struct lc_obj *o = lc_get(t);
		unsigned int i, n = stress_rand_below(t, 64);
		intptr_t mine = 0;

		for (i = 0; i < n; i++) {
			intptr_t v = (intptr_t) stress_rand_below(t, 8) - 2;

			urcu_percpu_counter_add(o->c, v);
			mine += v;
		}
		uatomic_add(&o->added, mine);
		/* Reset while the other users of the object add. */
		if (stress_rand_below(t, 2)) {
			uatomic_add(&o->reset_sum,
				urcu_percpu_counter_read_reset(o->c));
			uatomic_inc(&lc.resets);
		}
		if (uatomic_sub_return(&o->refs, 1) == 0)
			lc_retire(o);
	}
}

static void test_lifecycle(void)
{
	struct stress_report rep;
	unsigned long late;
	int i;

	for (i = 0; i < LC_SLOTS; i++)
		pthread_mutex_init(&lc.slot[i].lock, NULL);
	stress_run(lc_worker, NULL, LC_THREADS,
			STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, &rep);
	/* Objects still planned for more references: their users never came. */
	for (i = 0; i < LC_SLOTS; i++) {
		struct lc_obj *o = lc.slot[i].obj;

		if (!o)
			continue;
		if (uatomic_sub_return(&o->refs,
				o->planned - lc.slot[i].handed) == 0)
			lc_retire(o);
		lc.slot[i].obj = NULL;
	}
	late = stress_quarantine_drain();
	diag("lifecycle: %lu counters, %lu destroyed by their last user, "
		"%lu read_resets while others added; %lu signals, %lu "
		"migrations", lc.objects, lc.destroyed, lc.resets, rep.signals,
		rep.migrations);
	ok(lc.objects > 0 && lc.destroyed == lc.objects && lc.bad_sum == 0
		&& lc.bad_new == 0 && late == 0,
		"lifecycle: every counter exact at its last user (%lu wrong), "
		"new counters at zero (%lu not), no late write (%lu)",
		lc.bad_sum, lc.bad_new, late);
}

/* ---- thread exit ---- */

#define EX_SPAWNERS	8

static struct {
	struct urcu_percpu_counter *c;
	intptr_t added;
	intptr_t reset_sum;
	unsigned long exits;
} ex;

static void *ex_thread(void *p)
{
	intptr_t n = (intptr_t) p, i;

	/* Without glibc's rseq area, the first add registers the thread. */
	for (i = 0; i < n; i++)
		urcu_percpu_counter_add(ex.c, i & 3);
	return NULL;
}

static void ex_worker(struct stress_thread *t)
{
	intptr_t mine = 0, sum = 0;

	while (!stress_should_stop(t)) {
		if (t->id == EX_SPAWNERS) {
			sum += urcu_percpu_counter_read_reset(ex.c);
			continue;
		}
		{
			intptr_t n = (intptr_t) stress_rand_below(t, 16), i;
			pthread_t th;

			if (pthread_create(&th, NULL, ex_thread, (void *) n))
				bail_out("pthread_create failed");
			pthread_join(th, NULL);
			for (i = 0; i < n; i++)
				mine += i & 3;
			uatomic_inc(&ex.exits);
		}
	}
	uatomic_add(&ex.added, mine);
	uatomic_add(&ex.reset_sum, sum);
}

static void test_exit(void)
{
	intptr_t total;

	ex.c = urcu_percpu_counter_create(0);
	if (!ex.c)
		bail_out("urcu_percpu_counter_create failed");
	stress_run(ex_worker, NULL, EX_SPAWNERS + 1,
			STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET, NULL);
	total = ex.reset_sum + urcu_percpu_counter_read(ex.c);
	ok(ex.exits > 0 && total == ex.added,
		"exit: %lu threads added and exited while another read_reset: "
		"%ld added, %ld counted", ex.exits, (long) ex.added,
		(long) total);
	urcu_percpu_counter_destroy(ex.c);
}

int main(void)
{
	int p;

	plan_tests(NR_PHASES + 3);
	diag("rseq %s, fence %s, %d CPUs, %lu ms per phase",
		urcu_rseq_available() ? "available" : "unavailable",
		urcu_rseq_fence_available() ? "available" : "unavailable",
		stress_nr_cpus(), stress_duration_ms());
	for (p = 0; p < NR_PHASES; p++) {
		struct run r = { NULL, (enum phase) p, 0, 0, 0, 0 };
		struct stress_report rep;
		intptr_t total;

		r.c = urcu_percpu_counter_create(p == PH_MM_CID ?
				URCU_PERCPU_MM_CID : 0);
		if (!r.c)
			bail_out("urcu_percpu_counter_create failed");
		if (p == PH_ATOMIC)
			r.c->mode = URCU_PERCPU_COUNTER_ATOMIC;
		stress_run(worker, &r, NR_ADDERS + 1,
				STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET,
				&rep);
		total = r.reset_sum + urcu_percpu_counter_read(r.c);
		ok(total == r.added && r.resets > 0,
			"%s: %lu adds summing to %ld, counted %ld over %lu read_resets "
			"(%lu signals, %lu migrations)",
			phase_name[p], r.adds, (long) r.added, (long) total,
			r.resets, rep.signals, rep.migrations);
		urcu_percpu_counter_destroy(r.c);
	}
	test_exit();
	test_lifecycle();
	test_fork();
	return exit_status();
}
