// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * rcutorture-style stress of an RCU flavor: urcu-rseq by default, or
 * liburcu's urcu-memb (-DTORTURE_FLAVOR_MEMB) or urcu-bp
 * (-DTORTURE_FLAVOR_BP), built from this one source so the three are
 * tested alike.
 *
 * Elements carry a "pipe" count: 0 while published, 1 once unlinked, +1
 * after each later grace period, poisoned and freed after PIPE_LEN. A
 * reader that holds an element inside one read-side section must never see
 * its pipe count reach 2 (a grace period completed that should have waited
 * for it) nor the poison. Two updaters advance elements, one with
 * synchronize_rcu(), one with chains of call_rcu(); readers (the workers
 * of tests/utils/stress.h, three per CPU) nest sections, yield inside
 * them, run sections from the storm's signal handler and are migrated
 * between CPUs while inside; a spawner creates short-lived reader threads
 * continuously. Duration: URCU_RSEQ_STRESS_MS (default 300 ms) per phase.
 *
 * Phases (all by default, or the ones named on the command line):
 * "torture" the above; "fork" forks while other threads are inside
 * read-side sections, synchronize_rcu(), call_rcu() and rcu_barrier(), and
 * the child must run each of them to the end (stress_fork_check());
 * "exit" runs many short-lived threads that read, queue callbacks and exit
 * right after their last unlock, after which grace periods must still
 * complete and (urcu-rseq) the reader counts must balance; "lifecycle"
 * retires objects with call_rcu() into the quarantine of
 * tests/utils/lifecycle.h while readers write to the objects they hold, so
 * that a grace period that ends early shows up as a late write.
 *
 * Sections in a signal handler: urcu-rseq allows them in any thread;
 * urcu-memb and urcu-bp allow them once the thread is registered (urcu-bp
 * registers on the first read_lock(), which is not async-signal-safe), so
 * the handler reads only in threads that have read once already.
 */
#define _LGPL_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define URCU_API_MAP
#if defined(TORTURE_FLAVOR_MEMB)
#include <urcu/urcu-memb.h>
#define FLAVOR "urcu-memb"
#elif defined(TORTURE_FLAVOR_BP)
#include <urcu/urcu-bp.h>
#define FLAVOR "urcu-bp"
#else
#include <urcu/urcu-rseq.h>
#define FLAVOR "urcu-rseq"
#endif
#include <urcu/uatomic.h>

#include "tap.h"
#include "stress.h"
#include "lifecycle.h"

#define PIPE_LEN	4
#define POISON		0x5a5a5a5a
#define NR_SLOTS	2	/* [0]: synchronize_rcu updater, [1]: call_rcu */

struct elem {
	int pipe;
	int poison;
	int slot;
	struct rcu_head rh;
};

static struct elem *slot[NR_SLOTS];
static int stop;
static unsigned long bad_pipe, bad_poison, reads, handler_reads;
static unsigned long spawned, gps, cbs_started, cbs_done;
static __thread int reader_ready;	/* the handler may read */

static void reader_check(uint64_t *rng)
{
	uint64_t r = stress_xorshift(rng);
	int i = (int) (r >> 40) & 1;
	struct elem *e;
	int pipe, poison;

	rcu_read_lock();
	e = rcu_dereference(slot[i]);
	if (e) {
		if (((r >> 50) & 7) == 0) {
			/* Nested section over a yield: still one reader. */
			rcu_read_lock();
			sched_yield();
			rcu_read_unlock();
		}
		pipe = CMM_LOAD_SHARED(e->pipe);
		poison = CMM_LOAD_SHARED(e->poison);
		if (pipe >= 2 || pipe < 0)
			uatomic_inc(&bad_pipe);
		if (poison == POISON)
			uatomic_inc(&bad_poison);
	}
	rcu_read_unlock();
}

/* The storm's hook: a section nested in whatever the reader was doing. */
static void handler_read(struct stress_thread *t)
{
	struct elem *e;

	(void) t;
	if (!reader_ready)
		return;
	rcu_read_lock();
	e = rcu_dereference(slot[0]);
	if (e && (CMM_LOAD_SHARED(e->pipe) >= 2
			|| CMM_LOAD_SHARED(e->poison) == POISON))
		uatomic_inc(&bad_pipe);
	rcu_read_unlock();
	uatomic_inc(&handler_reads);
}

static void reader(struct stress_thread *t)
{
	unsigned long n = 0;

	rcu_register_thread();
	reader_check(&t->rng);
	reader_ready = 1;
	while (!stress_should_stop(t)) {
		reader_check(&t->rng);
		n++;
	}
	reader_ready = 0;
	cmm_barrier();	/* no handler section after unregistering */
	rcu_unregister_thread();
	uatomic_add(&reads, n);
}

static void *short_reader(void *arg)
{
	uint64_t rng = stress_seed((uintptr_t) arg);
	int i;

	rcu_register_thread();
	for (i = 0; i < 50; i++)
		reader_check(&rng);
	rcu_unregister_thread();
	return NULL;
}

static void *spawner(void *arg)
{
	pthread_t t[4];
	int i;

	(void) arg;
	while (!CMM_LOAD_SHARED(stop)) {
		for (i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, short_reader,
					(void *) (uintptr_t) (spawned + i)))
				t[i] = 0;
		for (i = 0; i < 4; i++)
			if (t[i])
				pthread_join(t[i], NULL);
		spawned += 4;
	}
	return NULL;
}

static struct elem *elem_new(int s)
{
	struct elem *e = calloc(1, sizeof(*e));

	if (!e)
		abort();
	e->slot = s;
	return e;
}

static void elem_free(struct elem *e)
{
	CMM_STORE_SHARED(e->poison, POISON);
	free(e);
}

static void *sync_updater(void *arg)
{
	struct elem *old;
	int i;

	(void) arg;
	rcu_register_thread();
	/* At least one grace period, however late the thread starts. */
	while (!CMM_LOAD_SHARED(stop) || !uatomic_read(&gps)) {
		old = rcu_xchg_pointer(&slot[0], elem_new(0));
		if (!old)
			continue;
		CMM_STORE_SHARED(old->pipe, 1);
		for (i = 1; i < PIPE_LEN; i++) {
			synchronize_rcu();
			CMM_STORE_SHARED(old->pipe, i + 1);
			uatomic_inc(&gps);
		}
		synchronize_rcu();
		elem_free(old);
	}
	rcu_unregister_thread();
	return NULL;
}

static void cb_advance(struct rcu_head *rh)
{
	struct elem *e = caa_container_of(rh, struct elem, rh);

	if (e->pipe >= PIPE_LEN) {
		elem_free(e);
		uatomic_inc(&cbs_done);
		return;
	}
	CMM_STORE_SHARED(e->pipe, e->pipe + 1);
	call_rcu(&e->rh, cb_advance);
}

static void *cb_updater(void *arg)
{
	struct elem *old;
	unsigned long n = 0;

	(void) arg;
	rcu_register_thread();
	/* At least one chain, however late the thread starts (emulators). */
	while (!CMM_LOAD_SHARED(stop) || n < 2) {
		old = rcu_xchg_pointer(&slot[1], elem_new(1));
		if (old) {
			CMM_STORE_SHARED(old->pipe, 1);
			uatomic_inc(&cbs_started);
			call_rcu(&old->rh, cb_advance);
		}
		if ((++n & 255) == 0)
			rcu_barrier();	/* keeps the backlog bounded */
		else
			usleep(20);
	}
	rcu_unregister_thread();
	return NULL;
}

static void phase_torture(void)
{
	unsigned long ms = stress_duration_ms();
	unsigned int nr_readers = 3 * (unsigned int) stress_nr_cpus();
	struct stress_group *g;
	pthread_t upd[2], sp;
	struct timespec ts;
	int i, s;

	diag("torture: flavor %s, %lu ms, %u readers", FLAVOR, ms, nr_readers);
	for (s = 0; s < NR_SLOTS; s++)
		rcu_assign_pointer(slot[s], elem_new(s));
	stress_set_signal_hook(handler_read);
	g = stress_start(reader, NULL, nr_readers,
			STRESS_SIGNALS | STRESS_MIGRATIONS);
	if (pthread_create(&upd[0], NULL, sync_updater, NULL)
			|| pthread_create(&upd[1], NULL, cb_updater, NULL)
			|| pthread_create(&sp, NULL, spawner, NULL))
		bail_out("pthread_create failed");

	ts.tv_sec = (time_t) (ms / 1000);
	ts.tv_nsec = (long) (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	CMM_STORE_SHARED(stop, 1);
	pthread_join(sp, NULL);
	pthread_join(upd[0], NULL);
	pthread_join(upd[1], NULL);
	stress_stop(g, NULL);
	stress_set_signal_hook(NULL);

	rcu_register_thread();
	for (s = 0; s < NR_SLOTS; s++) {
		struct elem *e = rcu_xchg_pointer(&slot[s], NULL);

		synchronize_rcu();
		free(e);
	}
	/* A chain queues its next link from its callback: one barrier a link. */
	for (i = 0; i <= PIPE_LEN; i++)
		rcu_barrier();
	rcu_unregister_thread();

	diag("%lu reads, %lu in handlers, %lu grace periods, %lu call_rcu chains, %lu short-lived threads",
		reads, handler_reads, gps, cbs_done, spawned);
	ok(bad_pipe == 0, "no reader saw an element past a grace period (%lu)", bad_pipe);
	ok(bad_poison == 0, "no reader saw a freed element (%lu)", bad_poison);
	ok(gps > 0 && cbs_started > 0, "both updaters made progress");
	ok(cbs_done == cbs_started, "every call_rcu chain completed (%lu of %lu)",
		cbs_done, cbs_started);
	ok(handler_reads > 0, "read-side sections ran in signal handlers");
	ok(reads > 0, "readers made progress");
}

/*
 * Fork. What each flavor asks of a program that forks: urcu-rseq nothing
 * (the library's pthread_atfork() handlers), though explicit calls of its
 * call_rcu fork hooks must still work; urcu-bp the calls its header names
 * (urcu_bp_before_fork() and call_rcu_before_fork(), then the matching
 * after_fork functions), made here around the fork as liburcu advises for
 * call_rcu's hooks; urcu-memb supports fork() only once every registration
 * is released, which a torture with busy readers cannot do.
 */
enum fork_mode {
	FORK_PLAIN,		/* fork(), nothing else */
	FORK_IN_SECTION,	/* fork() inside a nested read-side section */
	FORK_EXPLICIT,		/* the call_rcu fork hooks called explicitly */
	NR_FORK_MODES
};

static const char *const fork_mode_name[NR_FORK_MODES] = {
	"plain", "inside a read-side section", "explicit hooks",
};

#define FORK_TIMEOUT_MS	5000
#define FORK_MAX_HUNG	3	/* each costs FORK_TIMEOUT_MS: stop there */

static unsigned long fork_sections, fork_syncs, fork_cbs, fork_barriers;
static int fork_child_cbs;

#if defined(TORTURE_FLAVOR_MEMB)
#define FORK_SUPPORTED	0
#else
#define FORK_SUPPORTED	1
#endif

static bool fork_mode_supported(int mode)
{
#if defined(TORTURE_FLAVOR_BP)
	/* urcu_bp_before_fork() waits for grace periods: not in a section. */
	return mode != FORK_IN_SECTION;
#else
	(void) mode;
	return FORK_SUPPORTED;
#endif
}

static void fork_hooks_before(int mode)
{
#if defined(TORTURE_FLAVOR_BP)
	(void) mode;
	call_rcu_before_fork();
	rcu_bp_before_fork();
#else
	if (mode == FORK_EXPLICIT)
		call_rcu_before_fork();
#endif
}

static void fork_hooks_parent(int mode)
{
#if defined(TORTURE_FLAVOR_BP)
	(void) mode;
	rcu_bp_after_fork_parent();
	call_rcu_after_fork_parent();
#else
	if (mode == FORK_EXPLICIT)
		call_rcu_after_fork_parent();
#endif
}

static void fork_hooks_child(int mode)
{
#if defined(TORTURE_FLAVOR_BP)
	(void) mode;
	rcu_bp_after_fork_child();
	call_rcu_after_fork_child();
#else
	if (mode == FORK_EXPLICIT)
		call_rcu_after_fork_child();
#endif
}

/*
 * The callbacks of fork_caller() live in a global ring, not on the heap: a
 * callback that the fork cut from the child's queue (or that the parent's
 * worker held) stays reachable there, so valgrind's leak check in the child
 * does not count it as lost. A barrier every FORK_BARRIER_EVERY callbacks
 * keeps the ring's slots free before they are reused.
 */
#define FORK_BARRIER_EVERY	16
#define FORK_RING		(2 * FORK_BARRIER_EVERY)

static struct rcu_head fork_ring[FORK_RING];

static void fork_free_cb(struct rcu_head *rh)
{
	(void) rh;
}

static void fork_child_cb(struct rcu_head *rh)
{
	free(rh);
	fork_child_cbs++;
}

static void fork_reader(struct stress_thread *t)
{
	unsigned long n = 0;
	struct elem *e;

	rcu_register_thread();
	while (!stress_should_stop(t)) {
		rcu_read_lock();
		e = rcu_dereference(slot[0]);
		if (e && CMM_LOAD_SHARED(e->poison) == POISON)
			uatomic_inc(&bad_poison);
		/* Long sections, so that forks find many readers inside. */
		if ((stress_rand(t) & 3) == 0)
			sched_yield();
		rcu_read_unlock();
		n++;
	}
	rcu_unregister_thread();
	uatomic_add(&fork_sections, n);
}

static void *fork_syncer(void *arg)
{
	(void) arg;
	rcu_register_thread();
	while (!CMM_LOAD_SHARED(stop)) {
		synchronize_rcu();
		uatomic_inc(&fork_syncs);
	}
	rcu_unregister_thread();
	return NULL;
}

static void *fork_caller(void *arg)
{
	struct rcu_head *rh;
	unsigned long n = 0;

	(void) arg;
	rcu_register_thread();
	while (!CMM_LOAD_SHARED(stop)) {
		rh = &fork_ring[n % FORK_RING];
		call_rcu(rh, fork_free_cb);
		if (++n % FORK_BARRIER_EVERY == 0) {
			rcu_barrier();
			uatomic_inc(&fork_barriers);
		}
	}
	uatomic_add(&fork_cbs, n);
	rcu_unregister_thread();
	return NULL;
}

/* In the child: every operation of the flavor must complete. */
static int fork_child(void *arg)
{
	int mode = (int) (intptr_t) arg;
	struct rcu_head *rh;
	struct elem *e;

	fork_hooks_child(mode);
	if (mode == FORK_IN_SECTION) {
		/* The section the parent forked in goes on in the child. */
		if (!rcu_read_ongoing())
			return 2;
		rcu_read_unlock();
		rcu_read_unlock();
		if (rcu_read_ongoing())
			return 3;
	}
	synchronize_rcu();
	rcu_read_lock();
	rcu_read_lock();
	e = rcu_dereference(slot[0]);
	if (e && e->poison == POISON) {
		rcu_read_unlock();
		rcu_read_unlock();
		return 4;
	}
	rcu_read_unlock();
	rcu_read_unlock();
	rh = malloc(sizeof(*rh));
	if (!rh)
		return 5;
	call_rcu(rh, fork_child_cb);
	rcu_barrier();
	if (fork_child_cbs != 1)
		return 6;
	synchronize_rcu();
	rcu_barrier();
	return 0;
}

static void phase_fork(void)
{
	unsigned long ms = stress_duration_ms();
	unsigned int nr_readers = 2 * (unsigned int) stress_nr_cpus();
	unsigned long res[NR_FORK_MODES][STRESS_FORK_ERROR + 1];
	unsigned long forks = 0, hung = 0, bad = 0;
	struct stress_group *g;
	struct timespec start, now;
	pthread_t syncer, caller;
	enum stress_fork_result r;
	int mode;

	if (!FORK_SUPPORTED) {
		skip(1, "fork: %s supports fork() only with no registered "
			"thread", FLAVOR);
		return;
	}
	memset(res, 0, sizeof(res));
	CMM_STORE_SHARED(stop, 0);
	rcu_assign_pointer(slot[0], elem_new(0));
	g = stress_start(fork_reader, NULL, nr_readers,
			STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET);
	if (pthread_create(&syncer, NULL, fork_syncer, NULL)
			|| pthread_create(&caller, NULL, fork_caller, NULL))
		bail_out("pthread_create failed");
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		mode = (int) (forks % NR_FORK_MODES);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (hung >= FORK_MAX_HUNG
				|| ((unsigned long) ((now.tv_sec - start.tv_sec)
					* 1000 + (now.tv_nsec - start.tv_nsec)
					/ 1000000) >= ms
				&& forks >= 2 * NR_FORK_MODES))
			break;
		forks++;
		if (!fork_mode_supported(mode))
			continue;
		/* Let the readers get inside their sections again. */
		usleep(1000);
		fork_hooks_before(mode);
		if (mode == FORK_IN_SECTION) {
			rcu_read_lock();
			rcu_read_lock();
		}
		r = stress_fork_check(fork_child, (void *) (intptr_t) mode,
				FORK_TIMEOUT_MS);
		if (mode == FORK_IN_SECTION) {
			rcu_read_unlock();
			rcu_read_unlock();
		}
		fork_hooks_parent(mode);
		res[mode][r]++;
		if (r == STRESS_FORK_HUNG)
			hung++;
		else if (r != STRESS_FORK_OK)
			bad++;
	}
	CMM_STORE_SHARED(stop, 1);
	pthread_join(syncer, NULL);
	pthread_join(caller, NULL);
	stress_stop(g, NULL);
	rcu_register_thread();
	{
		struct elem *e = rcu_xchg_pointer(&slot[0], NULL);

		synchronize_rcu();
		free(e);
	}
	rcu_barrier();
	rcu_unregister_thread();
	for (mode = 0; mode < NR_FORK_MODES; mode++)
		diag("fork %s: %lu ok, %lu failed, %lu hung, %lu errors",
			fork_mode_name[mode], res[mode][STRESS_FORK_OK],
			res[mode][STRESS_FORK_FAILED],
			res[mode][STRESS_FORK_HUNG],
			res[mode][STRESS_FORK_ERROR]);
	diag("fork: %lu forks; parent: %lu sections, %lu grace periods, "
		"%lu callbacks, %lu barriers", forks, fork_sections, fork_syncs,
		fork_cbs, fork_barriers);
	ok(hung == 0 && bad == 0,
		"fork: every child ran synchronize_rcu, call_rcu, rcu_barrier "
		"and sections to the end (%lu hung, %lu failed)", hung, bad);
}

/*
 * Waits up to @ms for synchronize_rcu() in a helper thread: a grace period
 * that never ends (counts left behind) fails the phase instead of hanging
 * the test.
 */
static int sync_done;

static void *sync_once(void *arg)
{
	(void) arg;
	rcu_register_thread();
	synchronize_rcu();
	rcu_unregister_thread();
	uatomic_set(&sync_done, 1);
	return NULL;
}

static bool synchronize_within(unsigned long ms)
{
	pthread_t t;
	unsigned long waited;

	uatomic_set(&sync_done, 0);
	if (pthread_create(&t, NULL, sync_once, NULL))
		bail_out("pthread_create failed");
	for (waited = 0; waited < ms && !uatomic_read(&sync_done); waited++)
		usleep(1000);
	if (!uatomic_read(&sync_done))
		return false;	/* the helper stays stuck: leave it */
	pthread_join(t, NULL);
	return true;
}

/*
 * Exit: short-lived threads run sections (nested, some over a yield) and
 * queue callbacks, and exit right after their last unlock, while another
 * thread runs grace periods and the storm's readers read. Afterwards every
 * callback ran once, a grace period completes, and (urcu-rseq) the reader
 * counts balance exactly: an exit that lost an unlock count, or a count
 * made on behalf of a dead thread, would show there.
 */
#define EXIT_BATCH	8

static unsigned long exit_threads, exit_cbs_queued, exit_cbs_run;
static unsigned long exit_syncs;

static void exit_cb(struct rcu_head *rh)
{
	free(rh);
	uatomic_inc(&exit_cbs_run);
}

static void *exit_thread(void *arg)
{
	uint64_t rng = stress_seed((uintptr_t) arg);
	struct rcu_head *rh;
	int i, n = 1 + (int) (stress_xorshift(&rng) & 15);

	rcu_register_thread();
	for (i = 0; i < n; i++)
		reader_check(&rng);
	rh = malloc(sizeof(*rh));
	if (!rh)
		abort();
	uatomic_inc(&exit_cbs_queued);
	call_rcu(rh, exit_cb);
	/* Last thing before the exit: an unlock. */
	rcu_read_lock();
	(void) rcu_dereference(slot[0]);
	rcu_read_unlock();
	rcu_unregister_thread();
	return NULL;
}

static void *exit_spawner(void *arg)
{
	pthread_t t[EXIT_BATCH];
	unsigned long n = 0;
	int i;

	(void) arg;
	while (!CMM_LOAD_SHARED(stop) || n == 0) {
		for (i = 0; i < EXIT_BATCH; i++)
			if (pthread_create(&t[i], NULL, exit_thread,
					(void *) (uintptr_t) (n + i)))
				t[i] = 0;
		for (i = 0; i < EXIT_BATCH; i++)
			if (t[i]) {
				pthread_join(t[i], NULL);
				n++;
			}
	}
	uatomic_add(&exit_threads, n);
	return NULL;
}

static void *exit_syncer(void *arg)
{
	(void) arg;
	rcu_register_thread();
	while (!CMM_LOAD_SHARED(stop)) {
		synchronize_rcu();
		uatomic_inc(&exit_syncs);
	}
	rcu_unregister_thread();
	return NULL;
}

#if !defined(TORTURE_FLAVOR_MEMB) && !defined(TORTURE_FLAVOR_BP)
/* lock[q] - unlock[q] summed over every slot: the sections still open. */
static long rseq_open_sections(unsigned long q)
{
	uintptr_t sum = 0;
	int i;

	for (i = -1; i < urcu_rseq_gp.nr_cpus; i++)
		sum += (uintptr_t) CMM_LOAD_SHARED(urcu_rseq_gp.cpus[i].lock[q])
			- (uintptr_t) CMM_LOAD_SHARED(
				urcu_rseq_gp.cpus[i].unlock[q]);
	return (long) sum;
}
#endif

static void phase_exit(void)
{
	unsigned long ms = stress_duration_ms();
	struct stress_group *g;
	pthread_t sp[2], syncer;
	struct timespec ts;
	bool synced;

	CMM_STORE_SHARED(stop, 0);
	rcu_assign_pointer(slot[0], elem_new(0));
	rcu_assign_pointer(slot[1], elem_new(1));
	g = stress_start(reader, NULL, (unsigned int) stress_nr_cpus(),
			STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET);
	if (pthread_create(&sp[0], NULL, exit_spawner, NULL)
			|| pthread_create(&sp[1], NULL, exit_spawner, NULL)
			|| pthread_create(&syncer, NULL, exit_syncer, NULL))
		bail_out("pthread_create failed");
	ts.tv_sec = (time_t) (ms / 1000);
	ts.tv_nsec = (long) (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	CMM_STORE_SHARED(stop, 1);
	pthread_join(sp[0], NULL);
	pthread_join(sp[1], NULL);
	pthread_join(syncer, NULL);
	stress_stop(g, NULL);

	rcu_register_thread();
	rcu_barrier();
	rcu_unregister_thread();
	synced = synchronize_within(10000);
	diag("exit: %lu short-lived threads exited, %lu callbacks queued by "
		"them, %lu run, %lu grace periods meanwhile", exit_threads,
		exit_cbs_queued, exit_cbs_run, exit_syncs);
	ok(synced, "exit: synchronize_rcu() completes once the threads are "
		"gone");
	ok(exit_cbs_run == exit_cbs_queued && exit_threads > 0,
		"exit: every callback of an exited thread ran once (%lu of %lu)",
		exit_cbs_run, exit_cbs_queued);
#if !defined(TORTURE_FLAVOR_MEMB) && !defined(TORTURE_FLAVOR_BP)
	{
		long open0 = rseq_open_sections(0), open1 = rseq_open_sections(1);

		ok(open0 == 0 && open1 == 0,
			"exit: the reader counts balance (%ld, %ld open)",
			open0, open1);
	}
#endif
	if (synced) {
		rcu_register_thread();
		free(rcu_xchg_pointer(&slot[0], NULL));
		free(rcu_xchg_pointer(&slot[1], NULL));
		rcu_unregister_thread();
	}
	ok(bad_pipe == 0 && bad_poison == 0,
		"exit: no reader saw a freed element");
}

/*
 * Lifecycle: objects in slots, replaced by updaters and retired with
 * call_rcu() (and, by one updater, synchronize_rcu()) into the quarantine
 * of tests/utils/lifecycle.h, which fills each retired object with an image
 * of a live one and checks later that it is unchanged. Readers, also in
 * signal handlers, increment a counter of the object they hold inside
 * their section: an object retired while a reader still held it (a grace
 * period that ended early) takes a late write, and a reader that finds a
 * dead object's magic counts too. Under ASan the quarantine frees at once
 * and ASan reports the late access. Only the default call_rcu data exists
 * (create_call_rcu_data() returns it), so per-thread or per-CPU call_rcu
 * data lifecycles are not tested here.
 */
#define NR_OBJ_SLOTS	16
#define OBJ_LIVE	0x4c495645u

struct obj {
	uint32_t magic;
	uint32_t slot;
	unsigned long hits;
	struct rcu_head rh;
};

static struct obj *obj_slot[NR_OBJ_SLOTS];
static unsigned long obj_created, obj_retired, obj_bad_magic, obj_reads;

static void obj_retire(struct obj *o)
{
	struct obj image;

	if (o->magic != OBJ_LIVE)
		uatomic_inc(&obj_bad_magic);
	memset(&image, 0, sizeof(image));
	image.magic = OBJ_LIVE;
	image.slot = o->slot;
	stress_quarantine(o, sizeof(*o), &image);
	uatomic_inc(&obj_retired);
}

static void obj_free_cb(struct rcu_head *rh)
{
	obj_retire(caa_container_of(rh, struct obj, rh));
}

static struct obj *obj_new(uint32_t s)
{
	struct obj *o = calloc(1, sizeof(*o));

	if (!o)
		abort();
	o->magic = OBJ_LIVE;
	o->slot = s;
	uatomic_inc(&obj_created);
	return o;
}

static void obj_read(uint64_t r)
{
	struct obj *o;

	rcu_read_lock();
	o = rcu_dereference(obj_slot[r % NR_OBJ_SLOTS]);
	if (o) {
		if (CMM_LOAD_SHARED(o->magic) != OBJ_LIVE)
			uatomic_inc(&obj_bad_magic);
		uatomic_inc(&o->hits);
	}
	rcu_read_unlock();
}

static void obj_handler_read(struct stress_thread *t)
{
	if (reader_ready)
		obj_read(stress_rand(t));
}

static void obj_reader(struct stress_thread *t)
{
	unsigned long n = 0;

	rcu_register_thread();
	obj_read(stress_rand(t));
	reader_ready = 1;
	while (!stress_should_stop(t)) {
		uint64_t r = stress_rand(t);

		if ((r & 63) == 0) {
			/* Hold the object over a yield. */
			rcu_read_lock();
			obj_read(r >> 8);
			sched_yield();
			obj_read(r >> 8);
			rcu_read_unlock();
		} else {
			obj_read(r >> 8);
		}
		n++;
	}
	reader_ready = 0;
	cmm_barrier();
	rcu_unregister_thread();
	uatomic_add(&obj_reads, n);
}

static void *obj_updater(void *arg)
{
	uint64_t rng = stress_seed((uintptr_t) arg);
	bool sync = (uintptr_t) arg == 0;
	unsigned long n = 0;
	struct obj *old;
	uint32_t s;

	rcu_register_thread();
	while (!CMM_LOAD_SHARED(stop) || n == 0) {
		s = (uint32_t) (stress_xorshift(&rng) % NR_OBJ_SLOTS);
		old = rcu_xchg_pointer(&obj_slot[s], obj_new(s));
		n++;
		if (!old)
			continue;
		if (sync) {
			synchronize_rcu();
			obj_retire(old);
		} else {
			call_rcu(&old->rh, obj_free_cb);
			if ((n & 255) == 0)
				rcu_barrier();	/* bounds the backlog */
		}
	}
	rcu_unregister_thread();
	return NULL;
}

static void phase_lifecycle(void)
{
	unsigned long ms = stress_duration_ms(), late;
	unsigned int nr_readers = 2 * (unsigned int) stress_nr_cpus();
	struct stress_group *g;
	pthread_t upd[3];
	struct timespec ts;
	int i;

	CMM_STORE_SHARED(stop, 0);
	stress_set_signal_hook(obj_handler_read);
	g = stress_start(obj_reader, NULL, nr_readers,
			STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET);
	for (i = 0; i < 3; i++)
		if (pthread_create(&upd[i], NULL, obj_updater,
				(void *) (uintptr_t) i))
			bail_out("pthread_create failed");
	ts.tv_sec = (time_t) (ms / 1000);
	ts.tv_nsec = (long) (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	CMM_STORE_SHARED(stop, 1);
	for (i = 0; i < 3; i++)
		pthread_join(upd[i], NULL);
	stress_stop(g, NULL);
	stress_set_signal_hook(NULL);

	rcu_register_thread();
	for (i = 0; i < NR_OBJ_SLOTS; i++) {
		struct obj *o = rcu_xchg_pointer(&obj_slot[i], NULL);

		if (o)
			call_rcu(&o->rh, obj_free_cb);
	}
	rcu_barrier();
	rcu_unregister_thread();
	late = stress_quarantine_drain();
	diag("lifecycle: %lu objects created, %lu retired, %lu quarantined, "
		"%lu reads", obj_created, obj_retired, stress_quarantined(),
		obj_reads);
	ok(late == 0, "lifecycle: no write to a retired object (%lu late)",
		late);
	ok(obj_bad_magic == 0, "lifecycle: no reader found a dead object (%lu)",
		obj_bad_magic);
	ok(obj_retired == obj_created && obj_created > 0,
		"lifecycle: every object was retired once (%lu of %lu)",
		obj_retired, obj_created);
}

static bool want(int argc, char **argv, const char *phase)
{
	int i;

	if (argc < 2)
		return true;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], phase))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	plan_no_plan();
	if (want(argc, argv, "torture"))
		phase_torture();
	if (want(argc, argv, "fork"))
		phase_fork();
	if (want(argc, argv, "exit"))
		phase_exit();
	if (want(argc, argv, "lifecycle"))
		phase_lifecycle();
	return exit_status();
}
