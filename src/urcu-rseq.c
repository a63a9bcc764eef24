// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The urcu-rseq RCU flavor: grace periods over per-CPU reader counters.
 *
 * Readers (include/urcu/static/urcu-rseq.h): an outermost read_lock()
 * reads the period p, adds 1 to lock[p] of its CPU (one rseq critical
 * section, or an atomic add on the fallback slot), and read_unlock() adds 1
 * to unlock[p] of whatever CPU it runs on then. Between the count and the
 * section's accesses there is only a compiler barrier. With membarrier
 * unavailable, readers find a stand-in rseq area that is never registered
 * (urcu_rseq_reader_offset), so every count takes the atomic path, which
 * puts a full barrier on each side of the addition, and every "membarrier"
 * below is a full barrier of the updater.
 *
 * Correctness argument. The membarrier used here (MEMBARRIER_CMD_PRIVATE_
 * EXPEDITED) gives, for every thread T of the process, a point in T's
 * program order such that T's accesses before it are complete (visible to
 * and ordered before) everything the caller does after the call returns,
 * and T's accesses after it see everything the caller did before the call.
 *
 * Check of period q ("is q idle"):
 *	u = sum of unlock[q] over all slots;	(t1)
 *	membarrier;				(M)
 *	l = sum of lock[q] over all slots;	(t2)
 *	idle when l == u.
 * Each slot only grows, so u counts a set U of unlock increments and l a
 * set L of lock increments. Take a section S of period q, with lock
 * increment I and unlock increment J (J after I in S's program order,
 * possibly on another CPU: only the totals are used).
 *  A. If J is in U, J executed before t1, so S's thread passed J before
 *     its M point: all of S's accesses, which precede J in program order
 *     (read_unlock's compiler barrier), are complete when M returns. And I
 *     precedes J, so I is in L. Hence U maps one-to-one into L.
 *  B. If I is not in L, S's M point came before I (else I would be
 *     visible at t2): S's accesses, which follow I in program order
 *     (read_lock's compiler barrier), see everything the updater stored
 *     before M.
 * If l == u, the map of A is onto L: every section of period q is either
 * finished (A) or saw the updater's stores before M (B). Neither case lets
 * a section reach memory that the caller of synchronize_rcu() unlinked
 * before the call and frees after it. The counters are compared modulo
 * 2^64: wrapping would need 2^64 sections between t1 and t2.
 *
 * A grace period checks both periods, each after it began: that alone is
 * correct. The flip between the two checks is for progress only: new
 * readers take the other period, so the one waited on drains. The first
 * check, on the period that was not current, waits out stragglers (readers
 * that read the period before the previous flip and counted after its
 * check); there are at most as many as there were threads reading then.
 * The period value itself needs no ordering.
 *
 * Sharing grace periods: gp_seq is odd while one runs, under gp_lock. A
 * caller snapshots gp_seq (after a full barrier, "C") and needs a grace
 * period that began after the snapshot: when it gets gp_lock and gp_seq has
 * reached (snap + 3) & ~1, another thread ran one whose membarriers came
 * after its stores, and gp_lock orders that grace period before its return.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <urcu/wfcqueue.h>
#include <urcu/list.h>
#include <sched.h>

/* This file writes urcu_rseq_reader_offset: no const view of it here. */
#define URCU_RSEQ_READER_OFFSET_WRITER
#include <urcu/urcu-rseq.h>
#include <urcu/static/urcu-rseq.h>
#include "common.h"
#include "urcu-rseq-internal.h"

#define PRIMITIVE "urcu-rseq"

struct urcu_rseq_gp urcu_rseq_gp;
DEFINE_URCU_TLS(struct urcu_rseq_reader, urcu_rseq_reader);
ptrdiff_t urcu_rseq_reader_offset;

/*
 * The readers' area where the system has no membarrier: never registered,
 * so every count fails its registration check and takes the atomic path.
 * Sections store their descriptor into it, which nothing reads.
 */
static __thread struct urcu_rseq_abi standin_area
	__attribute__((tls_model("initial-exec"))) = {
	.cpu_id = (uint32_t) URCU_RSEQ_CPU_ID_REGISTRATION_FAILED,
};

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * The counters live until exit; readers hold slots + 1, so keep the start
 * too, or valgrind reports them "possibly lost".
 */
static void *volatile slots_alloc;	/* volatile: stored, never read */
static pthread_mutex_t gp_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long gp_seq;	/* odd while a grace period runs */

static void die(const char *msg, int err)
{
	fprintf(stderr, "liburcu-rseq: %s: %s: %s\n", PRIMITIVE, msg,
		strerror(err));
	abort();
}

static int sys_membarrier(int cmd, unsigned int flags)
{
	return (int) syscall(__NR_membarrier, cmd, flags, 0);
}

static int membarrier_register(void)
{
	return sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0);
}

/* Decided once, before any reader can count: readers rely on the answer. */
static int membarrier_probe(void)
{
	const char *env = getenv("URCU_RSEQ_NO_MEMBARRIER");
	int ret;

	if (env && *env && strcmp(env, "0") != 0)
		return 0;
	ret = sys_membarrier(MEMBARRIER_CMD_QUERY, 0);
	if (ret < 0 || !(ret & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return 0;
	return membarrier_register() == 0;
}

/* The updater's half of every pairing in the argument above ("M"). */
static void heavy_barrier(void)
{
	if (!urcu_rseq_gp.has_membarrier) {
		/* Pairs with the barriers of urcu_rseq_read_count_slow(). */
		cmm_smp_mb();
		return;
	}
	if (caa_likely(sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0))
		return;
	/* A fork child whose parent skipped the fork hooks: register now. */
	if (errno == EPERM && membarrier_register() == 0
			&& sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0)
		return;
	die("membarrier failed", errno);
}

static struct call_rcu_data *crd_default(void);

void urcu_rseq_init(void)
{
	struct urcu_rseq_gp_cpu *slots;
	int n;

	if (caa_likely(CMM_LOAD_SHARED(urcu_rseq_gp.cpus) != NULL))
		return;
	pthread_mutex_lock(&init_lock);
	if (urcu_rseq_gp.cpus)
		goto out;
	n = urcu_rseq_nr_cpus();
	/* Slot -1 is the fallback readers' (atomic adds only). */
	if (posix_memalign((void **) &slots, CAA_CACHE_LINE_SIZE,
			(size_t) (n + 1) * sizeof(*slots)))
		die("cannot allocate the reader counters", ENOMEM);
	memset(slots, 0, (size_t) (n + 1) * sizeof(*slots));
	slots_alloc = slots;
	urcu_rseq_gp.nr_cpus = n;
	urcu_rseq_gp.has_membarrier = membarrier_probe();
	if (urcu_rseq_gp.has_membarrier)
		urcu_rseq_reader_offset = urcu_rseq_offset;
	else
		urcu_rseq_reader_offset = (char *) &standin_area
			- (char *) urcu_rseq_thread_pointer();
	(void) crd_default();
	/*
	 * Readers reach the zeroed slots through the pointer (address
	 * dependency). Before this constructor no reader can run, so none
	 * reads urcu_rseq_reader_offset or has_membarrier stale.
	 */
	cmm_smp_wmb();
	CMM_STORE_SHARED(urcu_rseq_gp.cpus, slots + 1);
out:
	pthread_mutex_unlock(&init_lock);
}

/*
 * A count whose section found the area unregistered. With membarrier: the
 * thread's first section registers it (then counts per CPU) or finds that
 * it cannot use rseq, and counts on the fallback slot, ordered by the
 * grace period's membarrier like a per-CPU count. Without membarrier (the
 * stand-in area): full barriers on both sides of the addition, so that it
 * serves read_lock() (count, then the section's accesses) and
 * read_unlock() (the accesses, then the count) alike; they pair with the
 * full barrier heavy_barrier() issues in place of membarrier.
 */
void urcu_rseq_read_count_slow(intptr_t *word)
{
	intptr_t *fallback = (intptr_t *)
		((struct urcu_rseq_gp_cpu *) word - 1);

	if (!urcu_rseq_gp.has_membarrier) {
		cmm_smp_mb();
		uatomic_add(fallback, 1);
		cmm_smp_mb();
		return;
	}
	while (urcu_rseq_index(URCU_RSEQ_INDEX_CPU) >= 0) {
		if (_urcu_rseq_idx_addv_cpu(urcu_rseq_area(), word,
				(long) sizeof(struct urcu_rseq_gp_cpu), 1)
				== URCU_RSEQ_COMMITTED)
			return;
	}
	uatomic_add(fallback, 1);
}

void urcu_rseq_read_lock(void)
{
	_urcu_rseq_read_lock();
}

void urcu_rseq_read_unlock(void)
{
	_urcu_rseq_read_unlock();
}

int urcu_rseq_read_ongoing(void)
{
	return _urcu_rseq_read_ongoing();
}

void urcu_rseq_register_thread(void)
{
	urcu_rseq_init();
	/* Only moves the lazy rseq registration out of the first section. */
	(void) urcu_rseq_thread_register();
}

void urcu_rseq_unregister_thread(void)
{
}

/* Sum of counter @word (0,1: lock[p]; 2,3: unlock[p]) over every slot. */
static uintptr_t counter_sum(size_t word)
{
	const struct urcu_rseq_gp_cpu *cpus = urcu_rseq_gp.cpus;
	uintptr_t sum = 0;
	int i;

	for (i = -1; i < urcu_rseq_gp.nr_cpus; i++)
		sum += (uintptr_t) CMM_LOAD_SHARED(
				((const intptr_t *) &cpus[i])[word]);
	return sum;
}

/* The check of the argument above: unlocks (t1), M, locks (t2). */
static bool period_idle(unsigned long q)
{
	uintptr_t unlocks = counter_sum(2 + q);

	urcu_rseq_fi_point();
	/*
	 * Pairs with the compiler barriers (or full barriers) of
	 * _urcu_rseq_read_lock() ("B") and _urcu_rseq_read_unlock() ("A").
	 */
	heavy_barrier();
	urcu_rseq_fi_point();
	return counter_sum(q) == unlocks;
}

/*
 * Between polls for readers: spin a little (a reader running on another
 * CPU leaves its section within microseconds), then sleep. Not
 * sched_yield(): a reader preempted inside its section waits in a CPU's
 * run queue, and an idle CPU pulls it over at once, while a yielding
 * updater keeps its CPU busy and leaves the reader to wait for the end of
 * a time slice (milliseconds on a machine with more threads than CPUs).
 */
#define GP_SPIN_STEPS	8	/* up to 2^8 pauses, then sleep */

static void wait_period_idle(unsigned long q)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;
	uintptr_t unlocks;

	while (!period_idle(q)) {
		/*
		 * Poll without membarrier (no IPIs to every CPU) until the
		 * sums look equal, then check for real.
		 */
		do {
			urcu_rseq_backoff_steps(
				&b, GP_SPIN_STEPS, GP_SPIN_STEPS);
			unlocks = counter_sum(2 + q);
			cmm_smp_rmb();
		} while (counter_sum(q) != unlocks);
	}
}

void urcu_rseq_synchronize_rcu(void)
{
	unsigned long snap, target, period;

	urcu_rseq_debug_check(!_urcu_rseq_read_ongoing(), PRIMITIVE,
		"synchronize_rcu() inside a read-side critical section");
	urcu_rseq_init();
	/*
	 * "C": the caller's stores (the unlink) come before the snapshot.
	 * Pairs with the full barrier after the increment of gp_seq below:
	 * a grace period this caller did not see start ran its membarriers
	 * after its stores.
	 */
	cmm_smp_mb();
	snap = CMM_LOAD_SHARED(gp_seq);
	target = (snap + 3) & ~1UL;
	pthread_mutex_lock(&gp_lock);
	if ((long) (gp_seq - target) >= 0)
		goto out;
	CMM_STORE_SHARED(gp_seq, gp_seq + 1);
	cmm_smp_mb();	/* Pairs with "C". */
	period = urcu_rseq_gp.period;
	wait_period_idle((period & URCU_RSEQ_PERIOD) ^ 1);
	CMM_STORE_SHARED(urcu_rseq_gp.period, period ^ URCU_RSEQ_PERIOD);
	urcu_rseq_fi_point();
	wait_period_idle(period & URCU_RSEQ_PERIOD);
	CMM_STORE_SHARED(gp_seq, gp_seq + 1);
out:
	/* Orders the grace period before the caller's frees (and before
	 * those of callers that share it, who take gp_lock after us). */
	pthread_mutex_unlock(&gp_lock);
}

/*
 * call_rcu. Each call_rcu_data is a queue with a worker thread of its own:
 * the default data (static, its worker started on first use) and those of
 * create_call_rcu_data(). The worker takes its whole queue, waits for a
 * grace period, then runs the batch in order; callbacks queued meanwhile
 * make up the next batch. call_rcu() picks the data as liburcu does: the
 * thread's, else the current CPU's, else the default. It picks and
 * enqueues inside a read-side section, so that a grace period after
 * unpublishing a data (free_all_cpu_call_rcu_data()) leaves no caller
 * about to enqueue on it.
 */
struct call_rcu_data {
	struct cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	int32_t futex;		/* -1: the worker is going to sleep */
	int32_t flags;		/* URCU_CALL_RCU_RT/PAUSE/PAUSED/STOP/STOPPED */
	int cpu_affinity;	/* -1: none */
	int started;
	pthread_t tid;
	struct cds_list_head node;	/* in crd_list, under crd_lock */
};

/* Worker creation, the data list, per-CPU data, fork, exit. */
static pthread_mutex_t crd_lock = PTHREAD_MUTEX_INITIALIZER;
static CDS_LIST_HEAD(crd_list);
static struct call_rcu_data crd = {
	.cpu_affinity = -1,
};
static int crd_ready;
static struct urcu_atfork *lfht_atfork;
/* nr_cpus entries, allocated once (under crd_lock), RCU-published. */
static struct call_rcu_data **cpu_crdp;
static __thread struct call_rcu_data *thread_crdp;
/* The data whose worker this thread is, if any. */
static __thread struct call_rcu_data *worker_of;

/* Called from urcu_rseq_init(), under init_lock. */
static struct call_rcu_data *crd_default(void)
{
	if (!crd_ready) {
		cds_wfcq_init(&crd.head, &crd.tail);
		cds_list_add(&crd.node, &crd_list);
		crd_ready = 1;
	}
	return &crd;
}

static void worker_wake(struct call_rcu_data *d)
{
	/* Pairs with the full barrier in worker_wait(). */
	cmm_smp_mb();
	if (uatomic_read(&d->futex) == -1) {
		uatomic_set(&d->futex, 0);
		urcu_rseq_futex_wake(&d->futex, 1);
	}
}

static void worker_wait(struct call_rcu_data *d)
{
	uatomic_set(&d->futex, -1);
	/*
	 * Pairs with worker_wake(): an enqueuer either sees -1 and wakes us,
	 * or we see its node (or flag) here.
	 */
	cmm_smp_mb();
	if (!cds_wfcq_empty(&d->head, &d->tail)
			|| (uatomic_read(&d->flags)
				& (URCU_CALL_RCU_PAUSE | URCU_CALL_RCU_STOP))) {
		uatomic_set(&d->futex, 0);
		return;
	}
	while (uatomic_read(&d->futex) == -1)
		(void) urcu_rseq_futex_wait(&d->futex, -1, CLOCK_MONOTONIC,
				NULL);
}

static void worker_pause(struct call_rcu_data *d)
{
	int32_t flags;

	uatomic_or(&d->flags, URCU_CALL_RCU_PAUSED);
	while ((flags = uatomic_read(&d->flags)) & URCU_CALL_RCU_PAUSE)
		(void) urcu_rseq_futex_wait(&d->flags, flags,
				CLOCK_MONOTONIC, NULL);
	uatomic_and(&d->flags, ~URCU_CALL_RCU_PAUSED);
}

static void run_batch(struct __cds_wfcq_head *bh, struct cds_wfcq_tail *bt)
{
	struct cds_wfcq_node *node, *next;

	__cds_wfcq_for_each_blocking_safe(bh, bt, node, next) {
		struct rcu_head *head =
			caa_container_of(node, struct rcu_head, next);

		head->func(head);
	}
}

/*
 * After a batch, the worker lets callers queue the next one before it
 * looks again: one grace period (two membarriers, which interrupt every
 * CPU) then serves many callbacks, and callers find the worker awake
 * rather than asleep on the futex, so they rarely pay for a wake-up. The
 * price is up to this much more latency for callbacks and for
 * urcu_rseq_barrier() while callbacks keep coming (liburcu's worker waits
 * 10 ms between batches); an idle worker sleeps on the futex as before.
 * A URCU_CALL_RCU_RT worker is never woken (call_rcu() makes no system
 * call for it): it polls its queue every RT_POLL_NS, as liburcu's does.
 */
#define BATCH_PAUSE_NS	1000000L
#define RT_POLL_NS	10000000L

static void pause_ns(long ns)
{
	struct timespec ts = { 0, ns };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void *worker(void *arg)
{
	struct call_rcu_data *d = arg;
	struct __cds_wfcq_head bh;
	struct cds_wfcq_tail bt;
	int32_t flags;

	worker_of = d;
	for (;;) {
		flags = uatomic_read(&d->flags);
		if (flags & URCU_CALL_RCU_PAUSE) {
			worker_pause(d);
			continue;
		}
		/*
		 * call_rcu_data_free() hands what is left to the default
		 * data; the default's worker stops (urcu_rseq_exit()) idle.
		 */
		if ((flags & URCU_CALL_RCU_STOP) && (d != &crd
				|| cds_wfcq_empty(&d->head, &d->tail)))
			break;
		if (cds_wfcq_empty(&d->head, &d->tail)) {
			if (flags & URCU_CALL_RCU_RT)
				pause_ns(RT_POLL_NS);
			else
				worker_wait(d);
			continue;
		}
		/* The worker is the only dequeuer: no lock needed. */
		__cds_wfcq_init(&bh, &bt);
		(void) __cds_wfcq_splice_blocking(&bh, &bt, &d->head,
				&d->tail);
		urcu_rseq_synchronize_rcu();
		run_batch(&bh, &bt);
		pause_ns(BATCH_PAUSE_NS);
	}
	uatomic_or(&d->flags, URCU_CALL_RCU_STOPPED);
	return NULL;
}

/*
 * With crd_lock held. The worker is created pinned to its CPU, if any; a
 * CPU it may not use (offline, outside the cpuset) leaves it unpinned, as
 * liburcu ignores EINVAL there.
 */
static void worker_start_locked(struct call_rcu_data *d)
{
	pthread_attr_t attr, *attrp = NULL;
	sigset_t all, old;
	cpu_set_t set;
	int ret;

	if (d->started)
		return;
	if (d->cpu_affinity >= 0 && pthread_attr_init(&attr) == 0) {
		CPU_ZERO(&set);
		CPU_SET(d->cpu_affinity, &set);
		if (pthread_attr_setaffinity_np(&attr, sizeof(set), &set) == 0)
			attrp = &attr;
	}
	/* The worker inherits a mask that keeps process signals away. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&d->tid, attrp, worker, d);
	if (ret == EINVAL && attrp)
		ret = pthread_create(&d->tid, NULL, worker, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (d->cpu_affinity >= 0)
		pthread_attr_destroy(&attr);
	if (ret)
		die("cannot create a call_rcu worker", ret);
	CMM_STORE_SHARED(d->started, 1);
}

static bool fork_holds_crd_lock(void);

static void worker_start(struct call_rcu_data *d)
{
	if (caa_likely(CMM_LOAD_SHARED(d->started)))
		return;
	/* Between explicit fork hooks: after_fork_parent() starts it. */
	if (fork_holds_crd_lock())
		return;
	if (_urcu_rseq_read_ongoing()) {
		/*
		 * Inside a section: before_fork() may hold crd_lock while it
		 * waits for workers whose grace period waits for us. If the
		 * lock is busy, its holder is starting the worker, or a fork
		 * is on: the next call_rcu() after it starts the worker.
		 */
		if (pthread_mutex_trylock(&crd_lock))
			return;
	} else {
		pthread_mutex_lock(&crd_lock);
	}
	worker_start_locked(d);
	pthread_mutex_unlock(&crd_lock);
}

/* Inside a read-side section (see call_rcu()). */
static struct call_rcu_data *pick_data(void)
{
	struct call_rcu_data **cpus, *d;
	int cpu;

	if (thread_crdp)
		return thread_crdp;
	/* Address dependencies, as rcu_dereference(). */
	cpus = CMM_LOAD_SHARED(cpu_crdp);
	if (cpus) {
		cpu = urcu_rseq_cpu();
		if (cpu >= 0 && cpu < urcu_rseq_gp.nr_cpus) {
			d = CMM_LOAD_SHARED(cpus[cpu]);
			if (d)
				return d;
		}
	}
	return &crd;
}

/* The default data's worker is started by the callers, not holding
 * crd_lock (worker_start()). */
static void enqueue(struct call_rcu_data *d, struct rcu_head *head)
{
	(void) cds_wfcq_enqueue(&d->head, &d->tail, &head->next);
	if (!(uatomic_read(&d->flags) & URCU_CALL_RCU_RT))
		worker_wake(d);
}

void urcu_rseq_call_rcu(struct rcu_head *head,
		void (*func)(struct rcu_head *head))
{
	struct call_rcu_data *d;

	urcu_rseq_debug_check(head && func, PRIMITIVE,
		"call_rcu() with a NULL head or callback");
	if (caa_unlikely(!head || !func))
		return;
	urcu_rseq_init();
	cds_wfcq_node_init(&head->next);
	head->func = func;
	_urcu_rseq_read_lock();
	d = pick_data();
	enqueue(d, head);
	_urcu_rseq_read_unlock();
	/* Static: safe after the section, unlike the other data. */
	if (caa_unlikely(d == &crd))
		worker_start(d);
}

/* rcu_barrier(): one completion per data, counted down by each. */
struct barrier_state {
	int32_t remaining;
};

struct barrier_completion {
	struct rcu_head head;
	struct barrier_state *state;
};

static void barrier_complete(struct rcu_head *head)
{
	struct barrier_completion *c =
		caa_container_of(head, struct barrier_completion, head);
	struct barrier_state *st = c->state;

	/* A stale address is harmless here: waiters recheck their word. */
	if (uatomic_sub_return(&st->remaining, 1) == 0)
		urcu_rseq_futex_wake(&st->remaining, 1);
}

#define BARRIER_ON_STACK	16

void urcu_rseq_barrier(void)
{
	struct barrier_completion on_stack[BARRIER_ON_STACK], *c = on_stack;
	struct barrier_state st;
	struct call_rcu_data *d;
	int32_t n = 0, v;

	urcu_rseq_debug_check(!_urcu_rseq_read_ongoing(), PRIMITIVE,
		"rcu_barrier() inside a read-side critical section");
	if (worker_of) {
		/* From a callback: it would wait for itself. */
		urcu_rseq_debug_check(0, PRIMITIVE,
			"rcu_barrier() called from a call_rcu callback");
		return;
	}
	urcu_rseq_init();
	worker_start(&crd);
	pthread_mutex_lock(&crd_lock);
	cds_list_for_each_entry(d, &crd_list, node)
		n++;
	if (n > BARRIER_ON_STACK) {
		c = malloc((size_t) n * sizeof(*c));
		if (!c)
			die("cannot allocate the rcu_barrier() completions",
				ENOMEM);
	}
	st.remaining = n;
	n = 0;
	/*
	 * FIFO: every callback queued on a data before its completion has
	 * run when the completion does. A data freed meanwhile hands its
	 * queue, the completion with it, to the default data.
	 */
	cds_list_for_each_entry(d, &crd_list, node) {
		c[n].state = &st;
		cds_wfcq_node_init(&c[n].head.next);
		c[n].head.func = barrier_complete;
		enqueue(d, &c[n].head);
		n++;
	}
	pthread_mutex_unlock(&crd_lock);
	while ((v = uatomic_read(&st.remaining)) != 0)
		(void) urcu_rseq_futex_wait(&st.remaining, v, CLOCK_MONOTONIC,
				NULL);
	if (c != on_stack)
		free(c);
}

/*
 * Grace-period polling. A state is the gp_seq value that
 * urcu_rseq_synchronize_rcu() would wait for if called now: (snap + 3) &
 * ~1, snap read after a full barrier (its "C"). gp_seq reaching it means a
 * whole grace period ran after the snapshot. To make sure one runs, one
 * static callback on the default data, queued at most once at a time,
 * runs after the worker's grace period; it queues itself again while the
 * highest target asked for (poll_target) is not reached. A poll that finds
 * its target unreached and no callback queued queues it too (the callback
 * a fork child lost with its parent's batch).
 */
static struct rcu_head poll_head;
static int32_t poll_pending;
static unsigned long poll_target;

static bool gp_reached(unsigned long target)
{
	return (long) (CMM_LOAD_SHARED(gp_seq) - target) >= 0;
}

static void poll_cb(struct rcu_head *head);

static void poll_kick(void)
{
	/*
	 * Pairs with the full barrier in poll_cb(): either it sees our
	 * target, or we see poll_pending cleared and queue it again.
	 */
	if (uatomic_xchg(&poll_pending, 1))
		return;
	cds_wfcq_node_init(&poll_head.next);
	poll_head.func = poll_cb;
	enqueue(&crd, &poll_head);
	worker_start(&crd);
}

static void poll_cb(struct rcu_head *head)
{
	(void) head;
	uatomic_set(&poll_pending, 0);
	cmm_smp_mb();
	if (!gp_reached(uatomic_read(&poll_target)))
		poll_kick();
}

struct urcu_gp_poll_state urcu_rseq_start_poll_synchronize_rcu(void)
{
	struct urcu_gp_poll_state s;
	unsigned long old, target;

	urcu_rseq_init();
	/* "C", as in urcu_rseq_synchronize_rcu(). */
	cmm_smp_mb();
	target = (CMM_LOAD_SHARED(gp_seq) + 3) & ~1UL;
	s.grace_period_id = target;
	old = uatomic_read(&poll_target);
	while ((long) (target - old) > 0) {
		unsigned long seen = uatomic_cmpxchg(&poll_target, old, target);

		if (seen == old)
			break;
		old = seen;
	}
	cmm_smp_mb();	/* the target before the check of poll_pending */
	poll_kick();
	return s;
}

bool urcu_rseq_poll_state_synchronize_rcu(struct urcu_gp_poll_state state)
{
	if (gp_reached(state.grace_period_id)) {
		/*
		 * The grace period before the caller's frees: pairs with the
		 * full barrier after the grace period's last gp_seq store
		 * (gp_lock's release, and the worker's).
		 */
		cmm_smp_mb();
		return true;
	}
	urcu_rseq_init();
	if (!uatomic_read(&poll_pending))
		poll_kick();
	else
		worker_start(&crd);	/* see worker_start(): a fork */
	return false;
}

/*
 * Fork. The library installs these three with pthread_atfork() (see
 * flavor_init()); programs written for liburcu may call them around fork()
 * too, so they nest: a per-thread depth counts the calls, the outermost
 * before_fork() does the work, the matching after_fork_parent() undoes it,
 * and the first after_fork_child() repairs the child (later ones only
 * count down). Unpaired after_fork calls do nothing.
 *
 * Before fork(), outside a read-side section: every worker is paused
 * between batches, the defer consumers are locked out, and gp_lock is held, so the child inherits no half-run batch and
 * no grace period in progress. Inside a section (fork() called from within
 * rcu_read_lock()), or from a callback, waiting for either could wait for
 * the caller itself (another thread's grace period waits for this
 * section), so nothing is taken: the child repairs whatever it inherited.
 *
 * The child has one thread. Its repair:
 * - gp_lock, crd_lock: reinitialized (their holders, if any, are gone);
 *   gp_seq rounded up to even (a grace period cut off by the fork).
 * - Reader counts: for each period q, sum(lock[q]) - sum(unlock[q]) over
 *   all slots is the number of sections of period q that have counted
 *   their lock and not yet their unlock. In the child only the surviving
 *   thread's own section can be one of them, so the difference must be 1
 *   for its period if it is inside a section (ctr != 0; the lock is
 *   counted before ctr is set) and 0 otherwise. The sections of threads
 *   that do not exist in the child are closed by adding the excess to the
 *   fallback slot's unlock[q]: which slot holds a count does not matter,
 *   only the totals do.
 * - The call_rcu queues: a thread of the parent may have been between the
 *   two steps of an enqueue (tail moved, link not yet written), or a
 *   worker half-way through taking a batch (they are paused only when the
 *   fork waited). Each queue is cut at its first missing link: those
 *   callbacks, and a batch a worker held, are left to the parent, which
 *   runs them; the child does not. The completions of threads waiting in
 *   urcu_rseq_barrier() are dropped too: they are on those threads' stacks,
 *   which the child's new threads reuse.
 * - The workers: gone. As in liburcu's child, the data other than the
 *   default hand their callbacks to the default data and are freed, and
 *   no thread or CPU has data any more. The next call_rcu(), rcu_barrier()
 *   or get_*_call_rcu_data() starts a new default worker, which runs the
 *   callbacks queued before the fork too. (When fork() was called by a
 *   callback, the child's thread is that data's worker, which goes on
 *   with its data.)
 * - The defer queues (urcu-rseq-defer.c): the caller's is kept, those of
 *   the other threads are orphans that the child's next drain runs.
 * - membarrier: registered again (a new mm starts unregistered).
 */
struct fork_state {
	int depth;		/* nesting of before_fork() in this thread */
	bool waited;		/* the outermost call paused and locked */
	bool child_done;	/* the child's repair ran */
};

static __thread struct fork_state fork_state;

static bool fork_holds_crd_lock(void)
{
	return fork_state.depth > 0 && fork_state.waited;
}

void urcu_rseq_call_rcu_before_fork(void)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;
	struct fork_state *fs = &fork_state;
	struct call_rcu_data *d;

	if (fs->depth++ > 0)
		return;
	fs->child_done = false;
	fs->waited = false;
	urcu_rseq_init();
	if (_urcu_rseq_read_ongoing() || worker_of) {
		urcu_rseq_defer_before_fork(true);
		return;
	}
	fs->waited = true;
	pthread_mutex_lock(&crd_lock);
	cds_list_for_each_entry(d, &crd_list, node) {
		if (!d->started)
			continue;
		uatomic_or(&d->flags, URCU_CALL_RCU_PAUSE);
		worker_wake(d);
	}
	/* A worker of a data being freed may have stopped instead. */
	cds_list_for_each_entry(d, &crd_list, node) {
		urcu_rseq_backoff_reset(&b);
		while (d->started && !(uatomic_read(&d->flags)
				& (URCU_CALL_RCU_PAUSED | URCU_CALL_RCU_STOPPED)))
			urcu_rseq_backoff(&b);
	}
	urcu_rseq_defer_before_fork(false);
	if (lfht_atfork)
		lfht_atfork->before_fork(lfht_atfork->priv);
	pthread_mutex_lock(&gp_lock);
}

void urcu_rseq_call_rcu_after_fork_parent(void)
{
	struct fork_state *fs = &fork_state;
	struct call_rcu_data *d;

	if (fs->depth == 0 || --fs->depth > 0)
		return;
	if (!fs->waited) {
		urcu_rseq_defer_after_fork_parent();
		return;
	}
	pthread_mutex_unlock(&gp_lock);
	urcu_rseq_defer_after_fork_parent();
	if (lfht_atfork)
		lfht_atfork->after_fork_parent(lfht_atfork->priv);
	cds_list_for_each_entry(d, &crd_list, node) {
		if (!d->started)
			continue;
		uatomic_and(&d->flags, ~URCU_CALL_RCU_PAUSE);
		urcu_rseq_futex_wake(&d->flags, 1);
		/* The worker clears PAUSED itself once it has seen this. */
	}
	pthread_mutex_unlock(&crd_lock);
	if (!cds_wfcq_empty(&crd.head, &crd.tail))
		worker_start(&crd);	/* queued between the hooks */
}

/* Close the sections of the threads that did not survive the fork. */
static void fork_child_repair_counts(void)
{
	unsigned long ctr = URCU_TLS(urcu_rseq_reader).ctr;
	intptr_t *fallback_unlock = urcu_rseq_gp.cpus[-1].unlock;
	uintptr_t open, own;
	unsigned long q;

	for (q = 0; q < 2; q++) {
		open = counter_sum(q) - counter_sum(URCU_RSEQ_UNLOCK + q);
		own = ctr != 0 && (ctr & URCU_RSEQ_PERIOD) == q;
		fallback_unlock[q] += (intptr_t) (open - own);
	}
}

/*
 * Cut the call_rcu queue at its first missing link, and drop the
 * completions of urcu_rseq_barrier() callers: they live on the stacks of
 * threads that do not exist in the child, which the C library hands to the
 * child's new threads (the worker among them).
 */
static void fork_child_repair_queue(struct call_rcu_data *d)
{
	struct cds_wfcq_node *node = d->head.node.next, *next;
	struct cds_wfcq_node *last = &d->head.node;
	struct rcu_head *head;

	for (; node; node = next) {
		next = node->next;
		head = caa_container_of(node, struct rcu_head, next);
		if (head->func == barrier_complete || head == &poll_head)
			continue;
		last->next = node;
		last = node;
	}
	last->next = NULL;
	d->tail.p = last;
}

/*
 * The child has no worker but, when a callback forked, the forking
 * thread's: the other data hand their callbacks to the default data and
 * are freed, as liburcu's child does; no thread or CPU has data any more.
 */
static void fork_child_repair_data(void)
{
	struct call_rcu_data *d, *tmp, *me = worker_of;
	int i;

	cds_list_for_each_entry_safe(d, tmp, &crd_list, node) {
		fork_child_repair_queue(d);
		if (d == me)
			continue;
		if (d == &crd) {
			d->started = 0;
			d->flags = 0;
			d->futex = 0;
			continue;
		}
		if (!cds_wfcq_empty(&d->head, &d->tail))
			(void) __cds_wfcq_splice_blocking(&crd.head, &crd.tail,
					&d->head, &d->tail);
		cds_list_del(&d->node);
		free(d);
	}
	poll_pending = 0;	/* polls queue the callback again */
	if (thread_crdp != me)
		thread_crdp = NULL;
	if (cpu_crdp)
		for (i = 0; i < urcu_rseq_gp.nr_cpus; i++)
			cpu_crdp[i] = NULL;
}

void urcu_rseq_call_rcu_after_fork_child(void)
{
	struct fork_state *fs = &fork_state;
	sigset_t all, old;
	bool waited = fs->waited;

	if (fs->depth == 0)
		return;
	fs->depth--;
	if (fs->child_done)
		return;
	fs->child_done = true;
	/*
	 * A handler's section between the two sums, or between the sums and
	 * the addition, would be counted half: none runs here.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_mutex_init(&gp_lock, NULL);
	gp_seq = (gp_seq + 1) & ~1UL;
	fork_child_repair_counts();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (urcu_rseq_gp.has_membarrier && membarrier_register())
		die("cannot register membarrier in the fork child", errno);
	urcu_rseq_defer_after_fork_child();
	if (waited && lfht_atfork)
		lfht_atfork->after_fork_child(lfht_atfork->priv);
	pthread_mutex_init(&crd_lock, NULL);
	fs->waited = false;	/* the child holds none of the locks */
	fork_child_repair_data();
}

/* Stops an idle worker so that the process leaves no thread behind. */
void urcu_rseq_exit(void)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;
	int i;

	pthread_mutex_lock(&crd_lock);
	if (!crd.started || worker_of == &crd)
		goto out;
	uatomic_or(&crd.flags, URCU_CALL_RCU_STOP);
	worker_wake(&crd);
	/* Bounded: a reader stuck in a section must not hang exit. */
	for (i = 0; i < 40; i++) {
		if (uatomic_read(&crd.flags) & URCU_CALL_RCU_STOPPED)
			break;
		urcu_rseq_backoff(&b);
	}
	if (uatomic_read(&crd.flags) & URCU_CALL_RCU_STOPPED) {
		pthread_join(crd.tid, NULL);
		crd.started = 0;
		crd.flags = 0;
	} else {
		uatomic_and(&crd.flags, ~URCU_CALL_RCU_STOP);
	}
out:
	pthread_mutex_unlock(&crd_lock);
}

/*
 * Right after the thread layer's (101): the read side uses the counters
 * without checking for them, and code linked against the library runs its
 * constructors after ours.
 *
 * Also after the mutex's and the per-CPU primitives' constructors (101),
 * which install their fork handlers: fork() runs the prepare handlers last
 * installed first, so ours runs before theirs. It waits for the call_rcu
 * workers to finish their batch, and a callback may take a mutex (a
 * worker's first lock takes the mutex registry's lock) or a per-CPU
 * cache's locks: were they held by the fork already, the fork would wait
 * for ever. It is also the order of a program that calls
 * call_rcu_before_fork() itself, then fork(): the same locks in the same
 * order, so that a thread doing that and another calling fork() alone
 * cannot each hold what the other waits for.
 */
static void __attribute__((constructor(102))) flavor_init(void)
{
	urcu_rseq_init();
	if (pthread_atfork(urcu_rseq_call_rcu_before_fork,
			urcu_rseq_call_rcu_after_fork_parent,
			urcu_rseq_call_rcu_after_fork_child))
		die("cannot install the fork handlers", ENOMEM);
}

static void __attribute__((destructor)) flavor_exit(void)
{
	urcu_rseq_exit();
}

/*
 * The call_rcu data functions, as liburcu documents them. A data's worker
 * starts when it is created (the default's on first use); freeing the
 * default data, or NULL, does nothing.
 */
struct call_rcu_data *urcu_rseq_create_call_rcu_data(unsigned long flags,
		int cpu_affinity)
{
	struct call_rcu_data *d;

	urcu_rseq_init();
	if (posix_memalign((void **) &d, CAA_CACHE_LINE_SIZE, sizeof(*d))) {
		errno = ENOMEM;
		return NULL;
	}
	memset(d, 0, sizeof(*d));
	cds_wfcq_init(&d->head, &d->tail);
	d->flags = (int32_t) (flags & URCU_CALL_RCU_RT);
	d->cpu_affinity = cpu_affinity >= 0 && cpu_affinity < CPU_SETSIZE
		? cpu_affinity : -1;
	pthread_mutex_lock(&crd_lock);
	cds_list_add(&d->node, &crd_list);
	worker_start_locked(d);
	pthread_mutex_unlock(&crd_lock);
	return d;
}

/*
 * Stops @crdp's worker after its current batch, then hands the callbacks
 * still queued to the default data. The caller makes sure that no thread
 * or CPU uses @crdp any more (liburcu's rule).
 */
void urcu_rseq_call_rcu_data_free(struct call_rcu_data *crdp)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;

	if (!crdp || crdp == &crd)
		return;
	urcu_rseq_debug_check(worker_of != crdp, PRIMITIVE,
		"call_rcu_data_free() from a callback of that data");
	if (worker_of == crdp)
		return;
	if (crdp->started) {
		uatomic_or(&crdp->flags, URCU_CALL_RCU_STOP);
		worker_wake(crdp);
		while (!(uatomic_read(&crdp->flags) & URCU_CALL_RCU_STOPPED))
			urcu_rseq_backoff(&b);
		pthread_join(crdp->tid, NULL);
	}
	pthread_mutex_lock(&crd_lock);
	if (!cds_wfcq_empty(&crdp->head, &crdp->tail)) {
		worker_start_locked(&crd);
		(void) __cds_wfcq_splice_blocking(&crd.head, &crd.tail,
				&crdp->head, &crdp->tail);
		worker_wake(&crd);
	}
	cds_list_del(&crdp->node);
	pthread_mutex_unlock(&crd_lock);
	free(crdp);
}

struct call_rcu_data *urcu_rseq_get_default_call_rcu_data(void)
{
	urcu_rseq_init();
	worker_start(&crd);
	return &crd;
}

struct call_rcu_data *urcu_rseq_get_cpu_call_rcu_data(int cpu)
{
	struct call_rcu_data **cpus = CMM_LOAD_SHARED(cpu_crdp);

	if (!cpus || cpu < 0 || cpu >= urcu_rseq_gp.nr_cpus)
		return NULL;
	/* Address dependency on cpus, as rcu_dereference(). */
	return CMM_LOAD_SHARED(cpus[cpu]);
}

struct call_rcu_data *urcu_rseq_get_thread_call_rcu_data(void)
{
	return thread_crdp;
}

struct call_rcu_data *urcu_rseq_get_call_rcu_data(void)
{
	struct call_rcu_data *d;

	urcu_rseq_init();
	_urcu_rseq_read_lock();
	d = pick_data();
	_urcu_rseq_read_unlock();
	if (d == &crd)
		worker_start(d);
	return d;
}

pthread_t urcu_rseq_get_call_rcu_thread(struct call_rcu_data *crdp)
{
	if (!crdp)
		crdp = urcu_rseq_get_default_call_rcu_data();
	return crdp->tid;
}

void urcu_rseq_set_thread_call_rcu_data(struct call_rcu_data *crdp)
{
	thread_crdp = crdp;
}

/* liburcu's returns: 0, or -EINVAL / -EEXIST / -ENOMEM with errno set. */
int urcu_rseq_set_cpu_call_rcu_data(int cpu, struct call_rcu_data *crdp)
{
	struct call_rcu_data **cpus;
	int ret = 0;

	urcu_rseq_init();
	pthread_mutex_lock(&crd_lock);
	if (cpu < 0 || cpu >= urcu_rseq_gp.nr_cpus) {
		ret = EINVAL;
		goto out;
	}
	cpus = cpu_crdp;
	if (!cpus) {
		cpus = calloc((size_t) urcu_rseq_gp.nr_cpus, sizeof(*cpus));
		if (!cpus) {
			ret = ENOMEM;
			goto out;
		}
		/* Pairs with the address dependency of the readers. */
		cmm_smp_wmb();
		CMM_STORE_SHARED(cpu_crdp, cpus);
	}
	if (crdp && cpus[cpu]) {
		ret = EEXIST;
		goto out;
	}
	/* The data's initialization before its address. */
	cmm_smp_wmb();
	CMM_STORE_SHARED(cpus[cpu], crdp);
out:
	pthread_mutex_unlock(&crd_lock);
	if (ret)
		errno = ret;
	return -ret;
}

int urcu_rseq_create_all_cpu_call_rcu_data(unsigned long flags)
{
	struct call_rcu_data *d;
	int cpu, ret;

	urcu_rseq_init();
	for (cpu = 0; cpu < urcu_rseq_gp.nr_cpus; cpu++) {
		if (urcu_rseq_get_cpu_call_rcu_data(cpu))
			continue;
		d = urcu_rseq_create_call_rcu_data(flags, cpu);
		if (!d)
			return -ENOMEM;
		ret = urcu_rseq_set_cpu_call_rcu_data(cpu, d);
		if (ret) {
			urcu_rseq_call_rcu_data_free(d);
			if (ret == -EEXIST)
				continue;	/* another thread set it */
			return ret;
		}
	}
	return 0;
}

/*
 * Unpublish every CPU's data, wait for a grace period (call_rcu() picks
 * and enqueues inside a section), then free each: its pending callbacks
 * go to the default data.
 */
void urcu_rseq_free_all_cpu_call_rcu_data(void)
{
	struct call_rcu_data **cpus = CMM_LOAD_SHARED(cpu_crdp), **old;
	int cpu, n = urcu_rseq_gp.nr_cpus;

	if (!cpus)
		return;
	old = calloc((size_t) n, sizeof(*old));
	if (!old)
		return;	/* as liburcu: nothing freed */
	for (cpu = 0; cpu < n; cpu++) {
		old[cpu] = urcu_rseq_get_cpu_call_rcu_data(cpu);
		if (old[cpu])
			(void) urcu_rseq_set_cpu_call_rcu_data(cpu, NULL);
	}
	urcu_rseq_synchronize_rcu();
	for (cpu = 0; cpu < n; cpu++)
		urcu_rseq_call_rcu_data_free(old[cpu]);
	free(old);
}

void urcu_rseq_register_rculfhash_atfork(struct urcu_atfork *atfork)
{
	if (!atfork)
		return;
	pthread_mutex_lock(&crd_lock);
	if (!lfht_atfork)
		lfht_atfork = atfork;
	pthread_mutex_unlock(&crd_lock);
}

void urcu_rseq_unregister_rculfhash_atfork(struct urcu_atfork *atfork)
{
	pthread_mutex_lock(&crd_lock);
	if (lfht_atfork == atfork)
		lfht_atfork = NULL;
	pthread_mutex_unlock(&crd_lock);
}

static void quiescent_state(void)
{
}

const struct rcu_flavor_struct urcu_rseq_flavor = {
	.read_lock = urcu_rseq_read_lock,
	.read_unlock = urcu_rseq_read_unlock,
	.read_ongoing = urcu_rseq_read_ongoing,
	.read_quiescent_state = quiescent_state,
	.update_call_rcu = urcu_rseq_call_rcu,
	.update_synchronize_rcu = urcu_rseq_synchronize_rcu,
	.update_defer_rcu = urcu_rseq_defer_rcu,
	.thread_offline = quiescent_state,
	.thread_online = quiescent_state,
	.register_thread = urcu_rseq_register_thread,
	.unregister_thread = urcu_rseq_unregister_thread,
	.barrier = urcu_rseq_barrier,
	.register_rculfhash_atfork = urcu_rseq_register_rculfhash_atfork,
	.unregister_rculfhash_atfork = urcu_rseq_unregister_rculfhash_atfork,
#ifdef HAVE_URCU_GP_POLL
	.update_start_poll_synchronize_rcu =
		urcu_rseq_start_poll_synchronize_rcu,
	.update_poll_state_synchronize_rcu =
		urcu_rseq_poll_state_synchronize_rcu,
#endif
};
