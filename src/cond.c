// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * src/cond.c - condition variables and event counts on wait-stacks. The
 * guarantees are stated in include/urcu/cond.h.
 */
#define _LGPL_SOURCE
#include <errno.h>
#include <pthread.h>
#include <urcu/cond.h>
#include <urcu/mutex.h>	/* urcu_mutex_blocking_begin/end() */

#include "common.h"
#include "wait-internal.h"

/* The state must fit in glibc's pthread_cond_t (a preload puts it there). */
typedef char urcu_cond_fits_pthread_cond[
	sizeof(struct urcu_cond) <= sizeof(pthread_cond_t) ? 1 : -1];

static bool clock_ok(int32_t clock)
{
	return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC;
}

int urcu_cond_init(struct urcu_cond *c, clockid_t clock)
{
	if (!c || !clock_ok(clock))
		return EINVAL;
	urcu_wait_queue_init(&c->queue);
	c->clock = clock;
	c->reserved = 0;
	return 0;
}

int urcu_cond_destroy(struct urcu_cond *c)
{
	if (!c)
		return EINVAL;
	/*
	 * Waiters that timed out but are still queued are still blocked.
	 * Threads a signal or broadcast popped never touch the condition
	 * once that call returned (TIMEDOUT ones have LEFT, the others are
	 * DETACHED or woken). A waiter that withdrew its own node (timeout,
	 * cancellation) may still be releasing the queue lock after the
	 * queue looks empty: quiesce waits for that store, which comes
	 * without waiting for anything.
	 * Pairs with the full barrier of urcu_wait_add().
	 */
	cmm_smp_mb();
	if (!urcu_wait_queue_quiesce(&c->queue))
		return EBUSY;
	return 0;
}

/*
 * A waiter that consumed a wake-up but will not act on it (its unlock
 * failed, or it was cancelled) passes it on, so that a signal is never
 * lost. A broadcast's wake-up (@consumed 2) is passed on through the
 * nodes of its chain alone, if any are left: the condition itself may be
 * destroyed by now, as a broadcast allows. Only a signal's (@consumed 1)
 * goes back through the queue.
 */
static void pass_on(struct urcu_cond *c, int consumed,
		struct cds_wfs_node *chain)
{
	if (consumed == 2)
		urcu_wait_wake_chain(chain);
	else if (consumed == 1)
		(void) urcu_wait_wake_one(&c->queue);
}

/* What the cancellation cleanup handler of a wait needs. */
struct cond_wait_frame {
	struct urcu_wait_node node;
	struct urcu_cond *c;
	urcu_cond_lock_fn lock_fn;
	void *lock;
};

/*
 * Runs when the thread is cancelled in its futex sleep, before the
 * caller's own cleanup handlers (POSIX: they run with the mutex held):
 * withdraw the wait, re-acquire the mutex, pass on a consumed wake-up.
 */
static void cond_wait_cancelled(void *arg)
{
	struct cond_wait_frame *f = arg;
	struct cds_wfs_node *chain;
	int consumed;

	consumed = urcu_wait_cancel(&f->node, &chain);
	(void) f->lock_fn(f->lock);
	pass_on(f->c, consumed, chain);
}

/*
 * The blocking part, in a frame of its own so that the cancellation
 * buffer's setjmp does not constrain the caller's registers.
 */
static int cond_sleep(struct cond_wait_frame *f, int32_t clock,
		const struct timespec *abstime, struct cds_wfs_node **chain)
{
	int ret;

	pthread_cleanup_push(cond_wait_cancelled, f);
	ret = urcu_wait_chained(&f->node, clock, abstime, chain, true);
	pthread_cleanup_pop(0);
	return ret;
}

/* The one wait behind every face; @clock < 0: the condition's clock. */
static int cond_wait(struct urcu_cond *c, urcu_cond_lock_fn lock_fn,
		urcu_cond_lock_fn unlock_fn, void *lock, int32_t clock,
		const struct timespec *abstime)
{
	struct cond_wait_frame f;
	struct cds_wfs_node *chain;
	int ret, lret;

	if (!c || !lock_fn || !unlock_fn)
		return EINVAL;
	if (clock < 0)
		clock = CMM_LOAD_SHARED(c->clock);
	if (!clock_ok(clock) || (abstime && !urcu_rseq_ts_valid(abstime)))
		return EINVAL;

	urcu_wait_node_init(&f.node);
	f.c = c;
	f.lock_fn = lock_fn;
	f.lock = lock;
	/* Queued before the mutex is released: no lost wake-up. */
	(void) urcu_wait_add(&c->queue, &f.node);
	urcu_rseq_fi_point();
	ret = unlock_fn(lock);
	if (caa_unlikely(ret)) {
		pass_on(c, urcu_wait_cancel(&f.node, &chain), chain);
		return ret;
	}
	ret = cond_sleep(&f, clock, abstime, &chain);
	/*
	 * From here on the condition is not touched: the waker that woke us
	 * was done with it (signal), or detached us (broadcast).
	 *
	 * A broadcast starts one relay of wake-ups per CPU: each woken waiter
	 * wakes the next of its relay before it takes the mutex, so that the
	 * next one's wake-up latency overlaps our critical section, and no
	 * more waiters compete for the mutex than there are relays (no herd).
	 */
	if (chain)
		urcu_wait_wake_chain(chain);
	lret = lock_fn(lock);
	return lret ? lret : ret;
}

int urcu_cond_wait_ops(struct urcu_cond *c, urcu_cond_lock_fn lock_fn,
		urcu_cond_lock_fn unlock_fn, void *lock,
		const struct timespec *abstime)
{
	return cond_wait(c, lock_fn, unlock_fn, lock, -1, abstime);
}

static int mutex_lock(void *m)
{
	return pthread_mutex_lock((pthread_mutex_t *) m);
}

static int mutex_unlock(void *m)
{
	return pthread_mutex_unlock((pthread_mutex_t *) m);
}

int urcu_cond_wait(struct urcu_cond *c, pthread_mutex_t *m)
{
	if (!m)
		return EINVAL;
	return urcu_cond_wait_ops(c, mutex_lock, mutex_unlock, m, NULL);
}

int urcu_cond_timedwait(struct urcu_cond *c, pthread_mutex_t *m,
		const struct timespec *abstime)
{
	if (!m || !abstime)
		return EINVAL;
	return urcu_cond_wait_ops(c, mutex_lock, mutex_unlock, m, abstime);
}

int urcu_cond_clockwait(struct urcu_cond *c, pthread_mutex_t *m,
		clockid_t clock, const struct timespec *abstime)
{
	if (!m || !abstime || !clock_ok(clock))
		return EINVAL;
	return cond_wait(c, mutex_lock, mutex_unlock, m, clock, abstime);
}

int urcu_cond_signal(struct urcu_cond *c)
{
	if (!c)
		return EINVAL;
	(void) urcu_wait_wake_one_signal(&c->queue);
	return 0;
}

int urcu_cond_broadcast(struct urcu_cond *c)
{
	if (!c)
		return EINVAL;
	urcu_wait_wake_all_chained(&c->queue);
	return 0;
}

void urcu_ec_init(struct urcu_ec *ec)
{
	ec->word = 0;
}

/*
 * Bit 1 of the word: a consumer sleeps (or is about to) on the futex.
 * Bits 2-3: how many more notifies keep bit 0 set after the one that
 * finds it set. A prepare that finds bit 0 set stores nothing: any notify
 * after its load finds the bit still set and moves the count. So a
 * consumer that comes back at every notify (a hand-off) pays a CAS in
 * prepare once every URCU_EC_KEEP + 1 rounds, not at each; and after the
 * last consumer left, that many notifies still store before they go back
 * to a load alone.
 */
#define URCU_EC_SLEEPING	2
#define URCU_EC_KEEP_SHIFT	2
#define URCU_EC_KEEP_MASK	(3 << URCU_EC_KEEP_SHIFT)
#define URCU_EC_KEEP		3
#define URCU_EC_FLAGS		(URCU_EC_WAITERS | URCU_EC_SLEEPING	\
				 | URCU_EC_KEEP_MASK)
#define URCU_EC_ONE		16	/* the count lives in bits 4-31 */

/*
 * When a notify last issued a futex wake, per event count hashed by
 * address: a woken consumer judges its spin budget on the time until its
 * notifier came, not on the wake-up latency after it (see the budget in
 * src/wait.c). Written only next to a futex wake; a collision between two
 * event counts only leaves the consumer without the time.
 */
#define EC_WAKE_SLOTS		64
static int64_t ec_wake_at[EC_WAKE_SLOTS];

static inline int64_t *ec_wake_slot(const struct urcu_ec *ec)
{
	return &ec_wake_at[((uintptr_t) ec / sizeof(ec->word)) % EC_WAKE_SLOTS];
}

static inline uint32_t ec_count(int32_t w)
{
	return (uint32_t) w & ~(uint32_t) URCU_EC_FLAGS;
}

uint32_t urcu_ec_prepare(struct urcu_ec *ec)
{
	int32_t w = CMM_LOAD_SHARED(ec->word), cur;

	while (!(w & URCU_EC_WAITERS)) {
		cur = uatomic_cmpxchg(&ec->word, w, w | URCU_EC_WAITERS
				| (URCU_EC_KEEP << URCU_EC_KEEP_SHIFT));
		if (cur == w)
			return ec_count(w);	/* the CAS was the barrier below */
		w = cur;
	}
	/*
	 * The flag is visible before the caller reads its condition. Pairs
	 * with the notifier's barrier after its publication: the fence in
	 * urcu_ec_notify(), or the CAS (or fence) in urcu_ec_notify_slow().
	 * The stack-add fence: on x86-64 cheaper than mfence, and a hand-off
	 * pays it in the three rounds of four that set no bit.
	 */
	urcu_ec_fence();
	return ec_count(w);
}

void urcu_ec_notify_slow(struct urcu_ec *ec)
{
	int32_t w, cur, next, keep;

	urcu_rseq_fi_point();	/* after the caller's load of bit 0 */
	w = CMM_LOAD_SHARED(ec->word);
	/*
	 * The caller may have skipped the fence because its own load saw
	 * bit 0 set (a consumer prepared): then the CAS below is the full
	 * barrier that orders its publication before the word, and a CAS
	 * that fails orders it just as well. Seen clear now, without a CAS
	 * to come, the word may have been read before the publication is
	 * visible: fence and look again, or a consumer that prepares right
	 * now could miss both the publication and the notify. Pairs with the
	 * full barrier in urcu_ec_prepare().
	 */
	if (!(w & URCU_EC_WAITERS)) {
		urcu_ec_fence();
		w = CMM_LOAD_SHARED(ec->word);
	}
	/*
	 * Count the notify, clear the sleeping bit and spend one of the
	 * notifies that keep bit 0, in one CAS; the futex wake only if a
	 * consumer announced it sleeps. If a concurrent notify cleared bit 0
	 * first, its count and wake cover us.
	 */
	while (w & URCU_EC_WAITERS) {
		keep = (w & URCU_EC_KEEP_MASK) >> URCU_EC_KEEP_SHIFT;
		next = (int32_t) (ec_count(w) + URCU_EC_ONE);
		if (keep)
			next |= URCU_EC_WAITERS
				| ((keep - 1) << URCU_EC_KEEP_SHIFT);
		cur = uatomic_cmpxchg(&ec->word, w, next);
		if (cur == w) {
			urcu_rseq_fi_point();
			/* A consumer prepared: our next wait may be a hand-off. */
			urcu_wait_note_woke();
			if (w & URCU_EC_SLEEPING) {
				CMM_STORE_SHARED(*ec_wake_slot(ec),
					urcu_rseq_now_ns(CLOCK_MONOTONIC));
				urcu_rseq_futex_wake(&ec->word, INT_MAX);
			}
			return;
		}
		w = cur;
	}
}

int urcu_ec_wait(struct urcu_ec *ec, uint32_t key,
		const struct timespec *abstime)
{
	enum urcu_wait_spin_result spin;
	bool slept = false;
	int64_t start = 0;
	int32_t w, cur;
	int ret;

	if (!ec || (abstime && !urcu_rseq_ts_valid(abstime)))
		return EINVAL;
	/*
	 * While the count is @key, bit 0 is set (only a notify clears it,
	 * and that notify moves the count), so the word changes only by a
	 * notify or by a consumer announcing its sleep.
	 */
	w = CMM_LOAD_SHARED(ec->word);
	if (ec_count(w) != key)
		goto out;
	/* First: no consumer sleeps on the word already. */
	spin = urcu_wait_spin(&ec->word, w, CLOCK_MONOTONIC, abstime, &start,
			!(w & URCU_EC_SLEEPING));
	w = CMM_LOAD_SHARED(ec->word);
	if (ec_count(w) != key)
		goto out;
	slept = true;
	if (spin == URCU_WAIT_SPIN_DEADLINE)
		return ETIMEDOUT;
	for (;;) {
		/* Announce the sleep, so that the next notify issues the wake. */
		if (!(w & URCU_EC_SLEEPING)) {
			cur = uatomic_cmpxchg(&ec->word, w, w | URCU_EC_SLEEPING);
			if (cur != w) {
				w = cur;
				if (ec_count(w) != key)
					break;
				continue;
			}
			w |= URCU_EC_SLEEPING;
		}
		/* Seen blocked by spinners on a urcu_mutex we may hold. */
		urcu_mutex_blocking_begin();
		ret = urcu_rseq_futex_wait(&ec->word, w, CLOCK_MONOTONIC,
				abstime);
		urcu_mutex_blocking_end();
		w = CMM_LOAD_SHARED(ec->word);
		if (ec_count(w) != key)
			break;
		if (ret == ETIMEDOUT
				|| (abstime && urcu_rseq_ts_passed(CLOCK_MONOTONIC,
						abstime)))
			return ETIMEDOUT;
	}
out:
	if (slept)
		urcu_wait_adapt_waker(start, CMM_LOAD_SHARED(*ec_wake_slot(ec)));
	else
		urcu_wait_adapt(start, false);
	/*
	 * Acquire: what the notifier did before its CAS is seen after the
	 * load that saw the count move. Pairs with the CAS (full barrier) in
	 * urcu_ec_notify_slow().
	 */
	cmm_smp_rmb();
	return 0;
}
