// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * defer_rcu() for urcu-rseq: per-thread queues drained in batches, one
 * grace period per batch.
 *
 * Each thread that calls defer_rcu() owns a ring of (function, argument)
 * entries, registered on its first call (or by
 * urcu_rseq_defer_register_thread(); registration is never required). The
 * owner is the ring's only producer: it writes an entry, then publishes
 * head. Consumers are serialized by defer_lock: the worker (every
 * BATCH_NS while entries are pending), rcu_defer_barrier(),
 * rcu_defer_barrier_thread(), and the owner itself when its ring is full.
 * A consumer snapshots the head of each queue it drains, waits for one
 * grace period, then runs each queue's entries up to its snapshot.
 *
 * Guarantees:
 * - Every entry runs exactly once, on the consumer's thread, after a grace
 *   period that began after the defer_rcu() call that queued it returned:
 *   an entry is below a snapshot only if its head store came before the
 *   snapshot, and synchronize_rcu() runs a grace period that begins after
 *   its call (its barrier "C").
 * - rcu_defer_barrier() returns after every entry queued before its call
 *   has run (entries of every queue, of exited threads too, whose queuing
 *   happens-before the call). rcu_defer_barrier_thread() does the same for
 *   the calling thread's entries only.
 * - Entries of one thread run in the order they were queued.
 * - Thread exit: a thread's pending entries are left to the worker, which
 *   frees the queue once drained; rcu_defer_unregister_thread() runs them
 *   before it returns, as liburcu's does.
 * - fork: the child keeps the calling thread's queue, and runs the pending
 *   entries of the other threads (which do not exist in the child) as
 *   orphans; its worker starts on the next defer_rcu(). The parent runs
 *   its own. A consumer advances tail before it runs an entry, so an entry
 *   that was running when a thread forked inside a read-side section (the
 *   one case where the fork does not wait for consumers) is the parent's.
 *
 * defer_rcu() must not be called inside a read-side section (it waits for
 * a grace period when the ring is full). A deferred function may call
 * defer_rcu(), but not rcu_defer_barrier() or rcu_defer_barrier_thread().
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu/list.h>

#include <urcu/urcu-rseq.h>
#include <urcu/static/urcu-rseq.h>
#include "common.h"
#include "urcu-rseq-internal.h"

#define PRIMITIVE "urcu-rseq defer"

/* Entries per thread (16 bytes each); a power of two. */
#define DEFER_RING	2048UL
/*
 * The worker lets entries accumulate this long before it drains them, so
 * that one grace period serves many calls (liburcu's waits 100 ms).
 */
#define BATCH_NS	100000000L

struct defer_entry {
	void (*fct)(void *p);
	void *p;
};

struct defer_queue {
	unsigned long head;	/* written by the owner only */
	unsigned long tail;	/* written by consumers only */
	unsigned long snap;	/* a consumer's snapshot of head */
	struct defer_queue *batch_next;	/* a consumer's batch */
	struct cds_list_head node;	/* in registry, under registry_lock */
	bool orphan;		/* owner gone; freed by a consumer */
	struct defer_entry ring[DEFER_RING];
};

/*
 * Lock order: defer_lock, then registry_lock. Queues join the registry
 * under registry_lock alone; only a holder of both removes one, so a
 * consumer may walk its batch without registry_lock.
 */
static pthread_mutex_t defer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static CDS_LIST_HEAD(registry);

static __thread struct defer_queue *defer_q
	__attribute__((tls_model("initial-exec")));
/* This thread holds defer_lock (it is running deferred functions). */
static __thread bool defer_holder
	__attribute__((tls_model("initial-exec")));

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;

static struct {
	int32_t futex;		/* -1: the worker sleeps until woken */
	int32_t flags;		/* URCU_CALL_RCU_STOP / STOPPED */
	int started;
	pthread_t tid;
	pthread_mutex_t lock;	/* start and stop */
} dw = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static void die(const char *msg, int err)
{
	fprintf(stderr, "liburcu-rseq: %s: %s: %s\n", PRIMITIVE, msg,
		strerror(err));
	abort();
}

/*
 * Run @q's entries up to @snap, with defer_lock held. tail moves before an
 * entry runs: the slot is the owner's again once tail passes it (so the
 * entry is read first), and a fork child sees the running entry as done.
 */
static void queue_run(struct defer_queue *q, unsigned long snap)
{
	struct defer_entry e;
	unsigned long t;

	/* tail may move under us: a deferred function drained its own ring. */
	while ((long) (snap - (t = q->tail)) > 0) {
		e = q->ring[t & (DEFER_RING - 1)];
		/* Pairs with the full barrier of the owner's room check. */
		cmm_smp_mb();
		CMM_STORE_SHARED(q->tail, t + 1);
		e.fct(e.p);
	}
}

static bool queue_pending(const struct defer_queue *q)
{
	return CMM_LOAD_SHARED(q->head) != CMM_LOAD_SHARED(q->tail);
}

/* Free the drained orphans, with defer_lock held. */
static void reap_orphans(void)
{
	struct defer_queue *q, *tmp;

	pthread_mutex_lock(&registry_lock);
	cds_list_for_each_entry_safe(q, tmp, &registry, node) {
		if (!q->orphan || queue_pending(q))
			continue;
		cds_list_del(&q->node);
		free(q);
	}
	pthread_mutex_unlock(&registry_lock);
}

/* One batch over every queue, with defer_lock held. */
static void drain_all(void)
{
	struct defer_queue *q, *batch = NULL;

	pthread_mutex_lock(&registry_lock);
	cds_list_for_each_entry(q, &registry, node) {
		q->snap = CMM_LOAD_SHARED(q->head);
		if (q->snap == q->tail)
			continue;
		q->batch_next = batch;
		batch = q;
	}
	pthread_mutex_unlock(&registry_lock);
	if (batch) {
		/*
		 * Its barrier "C" orders the snapshots (and the entries
		 * below them, published with the head stores) before the
		 * grace period.
		 */
		urcu_rseq_synchronize_rcu();
		for (q = batch; q; q = q->batch_next)
			queue_run(q, q->snap);
	}
	reap_orphans();
}

static void defer_lock_take(bool *was_holder)
{
	*was_holder = defer_holder;
	if (*was_holder)
		return;
	pthread_mutex_lock(&defer_lock);
	defer_holder = true;
}

static void defer_lock_give(bool was_holder)
{
	if (was_holder)
		return;
	defer_holder = false;
	pthread_mutex_unlock(&defer_lock);
}

/*
 * Run the caller's own pending entries after a grace period. Also from a
 * deferred function whose ring filled up: it already holds defer_lock.
 * The grace period runs before defer_lock is taken, so that it overlaps
 * (or is shared with) the worker's, which holds the lock across its own;
 * the worker may run some of these entries meanwhile, after its grace
 * period: queue_run() starts from tail, so each still runs once.
 */
static void drain_own(struct defer_queue *q)
{
	unsigned long snap = q->head;
	bool held;

	if (snap == CMM_LOAD_SHARED(q->tail))
		return;
	urcu_rseq_synchronize_rcu();
	defer_lock_take(&held);
	queue_run(q, snap);
	defer_lock_give(held);
}

/* Is any queue pending, or an orphan waiting to be freed? */
static bool work_pending(void)
{
	struct defer_queue *q;
	bool pending = false;

	pthread_mutex_lock(&registry_lock);
	cds_list_for_each_entry(q, &registry, node) {
		if (q->orphan || queue_pending(q)) {
			pending = true;
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	return pending;
}

static void worker_wake(void)
{
	if (uatomic_read(&dw.futex) == -1) {
		uatomic_set(&dw.futex, 0);
		urcu_rseq_futex_wake(&dw.futex, 1);
	}
}

static void worker_wait(void)
{
	uatomic_set(&dw.futex, -1);
	/*
	 * Pairs with the full barrier after defer_rcu()'s head store: a
	 * producer either sees -1 and wakes us, or we see its entry here.
	 */
	cmm_smp_mb();
	if (work_pending() || (uatomic_read(&dw.flags) & URCU_CALL_RCU_STOP)) {
		uatomic_set(&dw.futex, 0);
		return;
	}
	while (uatomic_read(&dw.futex) == -1)
		(void) urcu_rseq_futex_wait(&dw.futex, -1, CLOCK_MONOTONIC,
				NULL);
}

/* Let entries accumulate; a stop request cuts the wait short. */
static void batch_pause(void)
{
	struct timespec ts;
	int64_t deadline = urcu_rseq_now_ns(CLOCK_MONOTONIC) + BATCH_NS;
	int32_t flags;

	ts.tv_sec = deadline / URCU_RSEQ_NSEC_PER_SEC;
	ts.tv_nsec = deadline % URCU_RSEQ_NSEC_PER_SEC;
	while (!((flags = uatomic_read(&dw.flags)) & URCU_CALL_RCU_STOP)) {
		if (urcu_rseq_futex_wait(&dw.flags, flags, CLOCK_MONOTONIC,
				&ts) == ETIMEDOUT)
			break;
	}
}

static void *worker(void *arg)
{
	(void) arg;
	while (!(uatomic_read(&dw.flags) & URCU_CALL_RCU_STOP)) {
		worker_wait();
		if (uatomic_read(&dw.flags) & URCU_CALL_RCU_STOP)
			break;
		batch_pause();
		pthread_mutex_lock(&defer_lock);
		defer_holder = true;
		drain_all();
		defer_holder = false;
		pthread_mutex_unlock(&defer_lock);
	}
	uatomic_or(&dw.flags, URCU_CALL_RCU_STOPPED);
	return NULL;
}

static void worker_start(void)
{
	sigset_t all, old;
	int ret;

	pthread_mutex_lock(&dw.lock);
	if (dw.started)
		goto out;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&dw.tid, NULL, worker, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		die("cannot create the defer worker", ret);
	CMM_STORE_SHARED(dw.started, 1);
out:
	pthread_mutex_unlock(&dw.lock);
}

/* Thread exit: the pending entries are the worker's now. */
static void queue_exit(void *arg)
{
	struct defer_queue *q = arg;

	if (q != defer_q)
		return;
	defer_q = NULL;
	if (!defer_holder && pthread_mutex_trylock(&defer_lock) == 0) {
		if (!queue_pending(q)) {
			pthread_mutex_lock(&registry_lock);
			cds_list_del(&q->node);
			pthread_mutex_unlock(&registry_lock);
			pthread_mutex_unlock(&defer_lock);
			free(q);
			return;
		}
		pthread_mutex_unlock(&defer_lock);
	}
	pthread_mutex_lock(&registry_lock);
	q->orphan = true;
	pthread_mutex_unlock(&registry_lock);
	if (!CMM_LOAD_SHARED(dw.started))
		worker_start();
	/* Pairs with worker_wait(): registry_lock orders the orphan mark. */
	cmm_smp_mb();
	worker_wake();
}

static void key_create(void)
{
	int ret = pthread_key_create(&exit_key, queue_exit);

	if (ret)
		die("cannot create the thread-exit key", ret);
}

static struct defer_queue *queue_register(void)
{
	struct defer_queue *q;

	if (defer_q)
		return defer_q;
	urcu_rseq_init();
	(void) pthread_once(&key_once, key_create);
	if (posix_memalign((void **) &q, CAA_CACHE_LINE_SIZE, sizeof(*q)))
		return NULL;
	memset(q, 0, offsetof(struct defer_queue, ring));
	if (pthread_setspecific(exit_key, q)) {
		free(q);
		return NULL;
	}
	pthread_mutex_lock(&registry_lock);
	cds_list_add(&q->node, &registry);
	pthread_mutex_unlock(&registry_lock);
	defer_q = q;
	if (!CMM_LOAD_SHARED(dw.started))
		worker_start();
	return q;
}

void urcu_rseq_defer_rcu(void (*fct)(void *p), void *p)
{
	struct defer_queue *q = defer_q;
	unsigned long head;

	urcu_rseq_debug_check(fct != NULL, PRIMITIVE,
		"defer_rcu() with a NULL function");
	urcu_rseq_debug_check(!_urcu_rseq_read_ongoing(), PRIMITIVE,
		"defer_rcu() inside a read-side critical section");
	if (caa_unlikely(!fct))
		return;
	if (caa_unlikely(!q)) {
		q = queue_register();
		if (!q) {
			/* No memory for a queue: liburcu's fallback. */
			urcu_rseq_synchronize_rcu();
			fct(p);
			return;
		}
	}
	head = q->head;
	/*
	 * Room check: the load of tail pairs with the full barrier before
	 * queue_run()'s store of it (the slot was read before it was
	 * handed back).
	 */
	if (caa_unlikely(head - CMM_LOAD_SHARED(q->tail) >= DEFER_RING)) {
		cmm_smp_mb();
		drain_own(q);
	}
	q->ring[head & (DEFER_RING - 1)].fct = fct;
	q->ring[head & (DEFER_RING - 1)].p = p;
	/* Publish the entry, and the caller's stores before it (unlink). */
	cmm_smp_wmb();
	CMM_STORE_SHARED(q->head, head + 1);
	/* Pairs with the full barrier in worker_wait(). */
	cmm_smp_mb();
	if (caa_unlikely(uatomic_read(&dw.futex) == -1
			|| !CMM_LOAD_SHARED(dw.started))) {
		if (!CMM_LOAD_SHARED(dw.started))
			worker_start();
		worker_wake();
	}
}

int urcu_rseq_defer_register_thread(void)
{
	return queue_register() ? 0 : -ENOMEM;
}

void urcu_rseq_defer_unregister_thread(void)
{
	struct defer_queue *q = defer_q;
	bool held;

	if (!q)
		return;
	drain_own(q);	/* the owner queues nothing more */
	defer_lock_take(&held);
	pthread_mutex_lock(&registry_lock);
	cds_list_del(&q->node);
	pthread_mutex_unlock(&registry_lock);
	defer_q = NULL;
	(void) pthread_setspecific(exit_key, NULL);
	defer_lock_give(held);
	free(q);
}

void urcu_rseq_defer_barrier(void)
{
	urcu_rseq_debug_check(!_urcu_rseq_read_ongoing(), PRIMITIVE,
		"rcu_defer_barrier() inside a read-side critical section");
	urcu_rseq_debug_check(!defer_holder, PRIMITIVE,
		"rcu_defer_barrier() from a deferred function");
	if (defer_holder)
		return;
	pthread_mutex_lock(&defer_lock);
	defer_holder = true;
	drain_all();
	defer_holder = false;
	pthread_mutex_unlock(&defer_lock);
}

void urcu_rseq_defer_barrier_thread(void)
{
	urcu_rseq_debug_check(!_urcu_rseq_read_ongoing(), PRIMITIVE,
		"rcu_defer_barrier_thread() inside a read-side critical "
		"section");
	urcu_rseq_debug_check(!defer_holder, PRIMITIVE,
		"rcu_defer_barrier_thread() from a deferred function");
	if (defer_q && !defer_holder)
		drain_own(defer_q);
}

/* Stops an idle worker so that the process leaves no thread behind. */
void urcu_rseq_defer_exit(void)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;
	int i;

	pthread_mutex_lock(&dw.lock);
	if (!dw.started || pthread_equal(pthread_self(), dw.tid))
		goto out;
	uatomic_or(&dw.flags, URCU_CALL_RCU_STOP);
	urcu_rseq_futex_wake(&dw.flags, 1);
	uatomic_set(&dw.futex, 0);
	urcu_rseq_futex_wake(&dw.futex, 1);
	/* Bounded: a reader stuck in a section must not hang exit. */
	for (i = 0; i < 40; i++) {
		if (uatomic_read(&dw.flags) & URCU_CALL_RCU_STOPPED)
			break;
		urcu_rseq_backoff(&b);
	}
	if (uatomic_read(&dw.flags) & URCU_CALL_RCU_STOPPED) {
		pthread_join(dw.tid, NULL);
		dw.started = 0;
		dw.flags = 0;
	} else {
		uatomic_and(&dw.flags, ~URCU_CALL_RCU_STOP);
	}
out:
	pthread_mutex_unlock(&dw.lock);
}

static void __attribute__((destructor)) defer_fini(void)
{
	urcu_rseq_defer_exit();
}

/*
 * Fork, called from the outermost call_rcu fork hooks (after the call_rcu
 * worker is paused, before gp_lock is taken: a consumer holds defer_lock
 * across a grace period). With @no_wait (inside a read-side section, or
 * from the call_rcu worker), or from a deferred function, defer_lock is not
 * taken: a consumer's grace period could wait for the caller. registry_lock
 * is always taken: its holders wait for nothing.
 */
static __thread bool fork_took_defer_lock;

void urcu_rseq_defer_before_fork(bool no_wait)
{
	fork_took_defer_lock = !no_wait && !defer_holder;
	if (fork_took_defer_lock)
		pthread_mutex_lock(&defer_lock);
	pthread_mutex_lock(&registry_lock);
}

void urcu_rseq_defer_after_fork_parent(void)
{
	pthread_mutex_unlock(&registry_lock);
	if (fork_took_defer_lock)
		pthread_mutex_unlock(&defer_lock);
}

void urcu_rseq_defer_after_fork_child(void)
{
	struct defer_queue *q;

	/* A consumer that forked goes on holding defer_lock. */
	if (!defer_holder)
		pthread_mutex_init(&defer_lock, NULL);
	pthread_mutex_init(&registry_lock, NULL);
	pthread_mutex_init(&dw.lock, NULL);
	cds_list_for_each_entry(q, &registry, node)
		if (q != defer_q)
			q->orphan = true;
	if (dw.started && pthread_equal(pthread_self(), dw.tid))
		return;	/* forked by the worker: it goes on */
	dw.started = 0;
	dw.flags = 0;
	dw.futex = 0;
}
