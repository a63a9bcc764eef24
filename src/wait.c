// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * src/wait.c - wait-stacks. The protocol and its argument are in
 * include/urcu/wait.h; the state bits in src/wait-internal.h.
 */
#define _LGPL_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <urcu/wfstack.h>
#include <urcu/mutex.h>	/* urcu_mutex_blocking_begin/end() */

#include "common.h"
#include "wait-internal.h"

/*
 * Adaptive spin budget, per thread, in nanoseconds. After each wait that
 * ended with a wake-up, the budget moves a quarter of the way towards twice
 * the time spinning needed to cover: a budget that covers the waits seen
 * lately ends the next ones in the spin, without a futex on either side.
 * For a wait that slept, that time runs to the moment its waker woke it
 * (the waker notes it in the node), not to the moment it ran again: the
 * futex wake-up latency (tens of microseconds on a VM) is not something
 * spinning would have had to cover. A wait longer than the cap takes an
 * eighth off the budget instead: spinning would not have helped.
 *
 * Why the waker's time matters: when both sides of a hand-off once fell
 * asleep, each wait lasts the other side's wake-up latency plus its own;
 * judged on that total, which exceeded the cap, the budget only shrank and
 * the hand-off stayed asleep for good (ping-pong round trips at
 * pthread_cond's 100 us instead of about 1 us). The time to the waker is
 * one wake-up latency, under the cap: the next waits spin through it, and
 * the hand-off is back to spinning. Event counts have no node to carry the
 * time: a notify that issues a futex wake notes its time in a small table
 * indexed by the event count's address (src/cond.c); a wait of theirs that
 * slept and finds no time there after its start (another event count
 * overwrote it) is judged on its total against the lower cap of the
 * earlier policy.
 *
 * The floor is a few microseconds, the order of what one futex sleep and
 * wake-up costs in CPU time, so spinning that long at most doubles the
 * cost of a wait that had to sleep anyway. Whether spinning steals the CPU
 * from the thread we wait for is judged separately, in the spin loop, by
 * timing sched_yield().
 */
#define WAIT_SPIN_MIN_NS	4000
#define WAIT_SPIN_INIT_NS	8000
#define WAIT_SPIN_MAX_NS	100000
/*
 * The cap itself follows the machine's futex wake-up latency: twice it,
 * between WAIT_SPIN_CAP_MIN_NS and WAIT_SPIN_MAX_NS. Spinning longer than
 * a sleep would have kept the waiter away buys nothing but CPU: a
 * background thread woken a job at a time about 100 us apart spun through
 * nearly every wait under a fixed 100 us cap (redis's lazy-free thread,
 * a third more server CPU than with glibc). Where a wake-up takes 50 us
 * or more (some VMs), the cap stays at 100 us: a hand-off whose two sides
 * both fell asleep must be able to spin through the other side's wake-up
 * to get back to spinning (see above). The latency is measured on each
 * wait that slept, from its waker's time to its own return, a sample
 * taken in at most at WAIT_WAKE_LAT_MAX_NS (a waiter that ran late for
 * other reasons must not raise the cap) and averaged over about 8 waits,
 * process-wide; it starts at WAIT_WAKE_LAT_INIT_NS, the old fixed cap.
 */
#define WAIT_SPIN_CAP_MIN_NS	50000
#define WAIT_WAKE_LAT_MAX_NS	(WAIT_SPIN_MAX_NS / 2)
#define WAIT_WAKE_LAT_INIT_NS	WAIT_WAKE_LAT_MAX_NS
#define WAIT_SLEPT_MAX_NS	40000	/* a slept wait, its waker's time unknown */
#define WAIT_SPIN_YIELD_NS	2000	/* give the CPU away this often while spinning */
#define WAIT_SPIN_YIELD_BUSY_NS	3000	/* a yield this long ran another thread */
#define WAIT_SPIN_CHECK_MASK	31	/* read the clock every 32 pauses */
#define WAIT_RELAYS_MAX		8	/* wake-up relays of a chained broadcast */
/* Probe for a crowded CPU after this many pauses spent over several waits. */
#define WAIT_PROBE_MIN_PAUSES	64
#define WAIT_PROBE_MAX_PAUSES	(64 << 10)
/*
 * A yield that kept us off the CPU this long lost a whole time slice to a
 * thread that never gave it back (another process's CPU hog, not one of
 * the threads we wait for, which block or hand off well before that).
 */
#define WAIT_YIELD_LOST_NS	1000000
#define WAIT_NO_YIELD_MIN	16	/* waits without giving the CPU away */
#define WAIT_NO_YIELD_MAX	65536

/*
 * Per thread: the spin budget; pauses spun since the last probe and the
 * probe interval; whether the last probe found the CPU crowded. Read by
 * every wait that spins: initial-exec, as the library's other per-thread
 * state on fast paths (the dynamic model cost each wait a few
 * calls to __tls_get_addr).
 */
static FAST_TLS int64_t wait_spin_budget_ns = WAIT_SPIN_INIT_NS;
/* Futex wake-up latency, ns (average; racy on purpose: an estimate). */
static int32_t wait_wake_lat_ns = WAIT_WAKE_LAT_INIT_NS;
static FAST_TLS unsigned int wait_spun,
	wait_probe_every = WAIT_PROBE_MIN_PAUSES;
static FAST_TLS bool wait_crowded;
/* After a lost slice: waits left on the plain policy, and the next count. */
static FAST_TLS unsigned int wait_no_yield,
	wait_no_yield_next = WAIT_NO_YIELD_MIN;
/*
 * Hints for the busy-machine rule (WAIT_SPIN_BUSY_NS): the thread woke a
 * waiter since its last wait began; its last urcu_wait_add() found the
 * queue empty. Written on every add and wake: initial-exec.
 */
static FAST_TLS bool wait_woke, wait_first = true;

/*
 * Per CPU (modulo the size; a collision only makes the guess worse): how
 * many waiters are giving that CPU away in the crowded loop right now.
 */
#define WAIT_YIELD_SLOTS	64
static struct {
	int32_t n;
} __attribute__((aligned(CAA_CACHE_LINE_SIZE))) wait_yielders[WAIT_YIELD_SLOTS];

/*
 * Whether spinning would take a CPU from another process. Spinning, or
 * giving the CPU away and taking it back, pays where a CPU would otherwise
 * idle, and among the process's own threads (a yield hands the CPU to the
 * thread we wait for). Where the CPUs have no idle time left and other
 * processes use a good part of them (a busy server's other programs, a
 * CPU hog), it takes their time, and a yield waits out their time
 * slices: a waiter costs less asleep on the futex. Every
 * WAIT_IDLE_SAMPLE_NS one thread of the process (the first waiter that
 * finds the reading old) reads the machine's CPU time, busy and idle,
 * from /proc/stat, and the process's own from CLOCK_PROCESS_CPUTIME_ID;
 * the rest of the busy time is other processes'. Both are averaged over
 * the last readings, in thousandths of a CPU: the machine's accounting
 * moves by whole clock ticks. While the machine had less than half a CPU
 * idle and others used half a CPU or more, a waiter sleeps at once where
 * it would have spun or yielded past its first pauses, but for a hand-off
 * (below, WAIT_SPIN_BUSY_NS). Without /proc the
 * machine is taken as idle (the policy before). The process's own waiters
 * that spin count as its work, not as idle time: a spinning waiter that
 * crowds out another process's thread hides it (redis's background
 * thread against its client, doc/pthread-cond-preload.md).
 */
#define WAIT_IDLE_SAMPLE_NS	10000000
/*
 * A hand-off on a busy machine: a waiter that woke another thread just
 * before it waits (a request and its answer, a ping-pong), and is the only
 * waiter on its queue, spins up to WAIT_SPIN_BUSY_NS, pausing, never
 * yielding, before it sleeps. The thread it woke is running or about to
 * run, and its answer, if it comes within that run, is caught without a
 * futex on either side; sleeping at once instead made every round trip
 * wait for a wake-up, and a thread woken on a CPU that a hog holds waits
 * for a time slice now and then (milliseconds). Four microseconds are
 * less CPU than a futex sleep and wake-up take (doc/wait.md): a spin that
 * fails costs less than the sleep it precedes. A waiter that woke nobody
 * waits for work that comes from elsewhere (a pool's worker for its next
 * task), and one with others queued before it waits behind them: both
 * still sleep at once, where a spin mostly fails and takes the CPU from
 * the very thread that would end it.
 */
#define WAIT_SPIN_BUSY_NS	4000
static int wait_stat_fd = -2;		/* -2: not opened yet; -1: none */
static int64_t wait_idle_sampled_ns;
/* Others' work, no idle CPU: a hint, read and written without ordering. */
static int32_t wait_busy;
/*
 * The sampling thread's: one at a time, but for a sampler held off the
 * CPU longer than the period (a bad reading then, nothing worse); the
 * next one reads what the last one stored.
 */
static uint64_t wait_stat_busy, wait_stat_idle;	/* clock ticks */
static int64_t wait_cpu_sampled_ns;	/* the process's CPU time */
static long wait_others_avg, wait_idle_avg;
static long wait_tick_ns;

static void wait_idle_sample(int64_t last, int64_t now)
{
	int64_t cpu = urcu_rseq_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	int64_t last_cpu = CMM_LOAD_SHARED(wait_cpu_sampled_ns);
	uint64_t last_busy = CMM_LOAD_SHARED(wait_stat_busy);
	uint64_t last_idle = CMM_LOAD_SHARED(wait_stat_idle);
	unsigned long long v[8] = { 0 };
	long others, idle_cpus, others_avg, idle_avg, tick_ns;
	uint64_t busy, idle;
	char buf[256];
	ssize_t len;
	int fd = CMM_LOAD_SHARED(wait_stat_fd);

	if (fd == -2) {
		int nfd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
		long hz = sysconf(_SC_CLK_TCK);

		if (hz <= 0)
			hz = 100;
		CMM_STORE_SHARED(wait_tick_ns, 1000000000L / hz);
		if (nfd < 0)
			nfd = -1;
		fd = uatomic_cmpxchg(&wait_stat_fd, -2, nfd);
		if (fd == -2)
			fd = nfd;
		else if (nfd >= 0)
			close(nfd);	/* another thread opened it first */
	}
	if (fd < 0)
		return;
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	if (len <= 0)
		return;
	buf[len] = '\0';
	/* "cpu  user nice system idle iowait irq softirq steal ..." */
	if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
			&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			&v[7]) < 4)
		return;
	busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	idle = v[3] + v[4];
	tick_ns = CMM_LOAD_SHARED(wait_tick_ns);
	/*
	 * A reading a second or more after the last (no waits meanwhile)
	 * only starts a new pair: the old state is stale, and the products
	 * below stay far from overflow.
	 */
	if (last && now > last && now - last < 1000000000 && last_busy) {
		others = (long) (((int64_t) (busy - last_busy) * tick_ns
				- (cpu - last_cpu)) * 1000 / (now - last));
		idle_cpus = (long) ((int64_t) (idle - last_idle) * tick_ns
				* 1000 / (now - last));
		if (others < 0)
			others = 0;
		others_avg = CMM_LOAD_SHARED(wait_others_avg);
		idle_avg = CMM_LOAD_SHARED(wait_idle_avg);
		others_avg += (others - others_avg) / 2;
		idle_avg += (idle_cpus - idle_avg) / 2;
		CMM_STORE_SHARED(wait_others_avg, others_avg);
		CMM_STORE_SHARED(wait_idle_avg, idle_avg);
		CMM_STORE_SHARED(wait_busy, others_avg >= 500
				&& idle_avg < 500);
	}
	CMM_STORE_SHARED(wait_stat_busy, busy);
	CMM_STORE_SHARED(wait_stat_idle, idle);
	CMM_STORE_SHARED(wait_cpu_sampled_ns, cpu);
}

/*
 * Called by a waiter about to spin or yield past its first pauses: false
 * when it should sleep at once instead (see above).
 */
static bool wait_cpu_idle(int64_t now)
{
	int64_t last = CMM_LOAD_SHARED(wait_idle_sampled_ns);

	if (now - last >= WAIT_IDLE_SAMPLE_NS
			&& uatomic_cmpxchg(&wait_idle_sampled_ns, last, now)
				== last)
		wait_idle_sample(last, now);
	return !CMM_LOAD_SHARED(wait_busy);
}

/*
 * The only process-wide state of wait-stacks with a count that a thread
 * holds for a while. A fork child inherits the counts of threads that
 * it does not have (the forking thread is in fork(), not in a wait):
 * they would keep the child's waiters on those CPUs from ever giving the
 * CPU away. Zero is exact there. The child's CPU time starts again from
 * zero: its readings of the machine start afresh (a zero time means
 * none). Nothing else here needs a fork handler: there is no
 * process-wide lock; a queue's own lock held by another
 * thread at the fork stays held in the child, as with any object that
 * other threads were using (doc/wait.md, "fork").
 */
static void wait_fork_child(void)
{
	memset(wait_yielders, 0, sizeof(wait_yielders));
	wait_idle_sampled_ns = 0;
}

__attribute__((constructor))
static void wait_init(void)
{
	(void) pthread_atfork(NULL, NULL, wait_fork_child);
}

/*
 * Give the CPU away once and tell whether another thread ran meanwhile:
 * the yield then took long. Remembers the answer for the next waits, and
 * probes less and less often while the CPU is found free. *@after is the
 * time it returned.
 */
static bool wait_probe(int64_t *after)
{
	int64_t before = urcu_rseq_now_ns(CLOCK_MONOTONIC);

	sched_yield();
	*after = urcu_rseq_now_ns(CLOCK_MONOTONIC);
	wait_spun = 0;
	wait_crowded = *after - before >= WAIT_SPIN_YIELD_BUSY_NS;
	if (wait_crowded)
		wait_probe_every = WAIT_PROBE_MIN_PAUSES;
	else if (wait_probe_every < WAIT_PROBE_MAX_PAUSES)
		wait_probe_every *= 2;
	/*
	 * A yield of 1 ms or more lost a whole time slice to a thread that
	 * never gave the CPU back (another process's), while sleeping on
	 * the futex would have had us woken, and scheduled, as soon as our
	 * waker was done: keep to the plain policy (pause, and sleep when
	 * crowded) for a while, for longer each time it happens again.
	 */
	if (*after - before >= WAIT_YIELD_LOST_NS) {
		wait_no_yield = wait_no_yield_next;
		if (wait_no_yield_next < WAIT_NO_YIELD_MAX)
			wait_no_yield_next *= 2;
	} else if (wait_crowded) {
		wait_no_yield_next = WAIT_NO_YIELD_MIN;
	}
	return wait_crowded;
}

void urcu_wait_note_woke(void)
{
	wait_woke = true;
}

/*
 * The machine has no CPU to spare (wait_cpu_idle() said so): false when
 * the waiter should sleep at once, else true with *@budget cut to the
 * short spin of a hand-off (WAIT_SPIN_BUSY_NS).
 */
static bool busy_spin(bool handoff, int64_t *budget)
{
	if (!handoff)
		return false;
	if (*budget > WAIT_SPIN_BUSY_NS)
		*budget = WAIT_SPIN_BUSY_NS;
	return true;
}

enum urcu_wait_spin_result urcu_wait_spin(int32_t *word, int32_t val,
		clockid_t clock, const struct timespec *abstime,
		int64_t *start_ns, bool first)
{
	int64_t budget = wait_spin_budget_ns, start = 0, last_yield = 0, now;
	int64_t deadline = abstime ? urcu_rseq_ts_to_ns(abstime) : 0;
	bool handoff = first && wait_woke, busy = false;
	unsigned int i;

	*start_ns = 0;
	wait_woke = false;
	/*
	 * A thread that shares its CPU with runnable threads must not spin
	 * where they could run: a producer spinning for a free slot takes
	 * the CPU of a worker that would free it. Short waits never reach
	 * the in-wait yield below, so the CPU is probed across waits too
	 * (after 64 pauses spun since it was last found crowded, doubling
	 * up to 64K while it is found free). While it is crowded, a wait
	 * gives the CPU away first and then between its looks at the word,
	 * instead of pausing: whoever shares the CPU runs, a wake-up that
	 * came meanwhile cost its waker a CAS and no futex, and a producer
	 * so woken finds many free slots at once. The budget still bounds
	 * the wait before it sleeps.
	 */
	if (wait_no_yield) {
		wait_no_yield--;
		goto spin;
	}
	if (!wait_crowded && wait_spun < wait_probe_every)
		goto spin;
crowded:
	for (;;) {
		int32_t *yielders = &wait_yielders[(unsigned int) urcu_rseq_cpu()
				% WAIT_YIELD_SLOTS].n;

		/*
		 * Another waiter already gives this CPU away: yielding to it
		 * would only pass the CPU round among waiters that all stay
		 * runnable (oversubscribed hand-offs). Pause instead, and
		 * sleep if that does not end the wait either.
		 */
		if (CMM_LOAD_SHARED(*yielders) > 0) {
			if (start)
				return URCU_WAIT_SPIN_EXHAUSTED;
			break;
		}
		if (!start && !wait_cpu_idle(urcu_rseq_now_ns(CLOCK_MONOTONIC))) {
			if (!busy_spin(handoff, &budget))
				return URCU_WAIT_SPIN_EXHAUSTED;
			busy = true;
			break;	/* pause, do not yield: the hogs keep the CPU */
		}
		uatomic_inc(yielders);
		(void) wait_probe(&now);
		uatomic_dec(yielders);
		if (!start)
			*start_ns = start = now;
		if (CMM_LOAD_SHARED(*word) != val)
			return URCU_WAIT_SPIN_CHANGED;
		if (abstime && (clock == CLOCK_MONOTONIC ? now :
				urcu_rseq_now_ns(clock)) >= deadline)
			return URCU_WAIT_SPIN_DEADLINE;
		if (now - start >= budget)
			return URCU_WAIT_SPIN_EXHAUSTED;
		if (!wait_crowded)
			break;
	}
	if (start)
		last_yield = now;
spin:
	/*
	 * The clock is first read after a few pauses: a wait that ends
	 * sooner (the common hand-off) costs no clock read at all.
	 */
	for (i = 1; ; i++) {
		if (CMM_LOAD_SHARED(*word) != val) {
			wait_spun += i;
			return URCU_WAIT_SPIN_CHANGED;
		}
		caa_cpu_relax();
		if (i & WAIT_SPIN_CHECK_MASK)
			continue;
		now = urcu_rseq_now_ns(CLOCK_MONOTONIC);
		if (!start) {
			*start_ns = start = last_yield = now;
			if (!busy && !wait_cpu_idle(now)) {
				if (!busy_spin(handoff, &budget))
					return URCU_WAIT_SPIN_EXHAUSTED;
				busy = true;
			}
		}
		if (abstime && (clock == CLOCK_MONOTONIC ? now :
				urcu_rseq_now_ns(clock)) >= deadline)
			return URCU_WAIT_SPIN_DEADLINE;
		if (now - start >= budget)
			return URCU_WAIT_SPIN_EXHAUSTED;
		/*
		 * The thread we wait for may be runnable on this very CPU
		 * (more threads than CPUs): let it run, and if that yield
		 * ran another thread, stop pausing on a crowded CPU. Not on a
		 * busy machine: there a yield waits out another process's
		 * time slice.
		 */
		if (!busy && now - last_yield >= WAIT_SPIN_YIELD_NS) {
			if (wait_probe(&last_yield)) {
				if (wait_no_yield)
					return URCU_WAIT_SPIN_EXHAUSTED;
				goto crowded;
			}
		}
	}
}

/* The budget's cap now: twice the wake-up latency, within its bounds. */
static int64_t spin_cap(void)
{
	int64_t cap = 2 * (int64_t) CMM_LOAD_SHARED(wait_wake_lat_ns);

	return cap < WAIT_SPIN_CAP_MIN_NS ? WAIT_SPIN_CAP_MIN_NS : cap;
}

/* A wait that slept ran again @lat ns after its waker's wake-up. */
static void note_wake_latency(int64_t lat)
{
	int32_t avg = CMM_LOAD_SHARED(wait_wake_lat_ns);

	if (lat < 0)
		lat = 0;
	if (lat > WAIT_WAKE_LAT_MAX_NS)
		lat = WAIT_WAKE_LAT_MAX_NS;
	CMM_STORE_SHARED(wait_wake_lat_ns, avg + (int32_t) ((lat - avg) / 8));
}

static void adapt(int64_t t, int64_t cap)
{
	int64_t b = wait_spin_budget_ns, max = spin_cap();

	if (cap > max)
		cap = max;
	if (t > cap)
		b -= b / 8;
	else
		b += (2 * t - b) / 4;
	if (b < WAIT_SPIN_MIN_NS)
		b = WAIT_SPIN_MIN_NS;
	if (b > max)
		b = max;
	wait_spin_budget_ns = b;
}

void urcu_wait_adapt(int64_t start_ns, bool slept)
{
	if (!start_ns)
		return;	/* ended within the first pauses: the budget covers it */
	adapt(urcu_rseq_now_ns(CLOCK_MONOTONIC) - start_ns,
			slept ? WAIT_SLEPT_MAX_NS : WAIT_SPIN_MAX_NS);
}

void urcu_wait_adapt_waker(int64_t start_ns, int64_t waker_ns)
{
	if (!start_ns)
		return;
	if (waker_ns < start_ns) {
		urcu_wait_adapt(start_ns, true);	/* the waker's time unknown */
		return;
	}
	note_wake_latency(urcu_rseq_now_ns(CLOCK_MONOTONIC) - waker_ns);
	adapt(waker_ns - start_ns, WAIT_SPIN_MAX_NS);
}

/*
 * A wait that was woken: what spinning needed to cover is the time until
 * the waker came (@wake_ns, low 32 bits of its clock; 0 when the wait did
 * not sleep), not that plus the futex wake-up latency (see the budget's
 * comment at the top).
 */
static void adapt_woken(int64_t start_ns, uint32_t wake_ns)
{
	uint32_t t, lat;

	if (!start_ns)
		return;
	if (!wake_ns) {
		urcu_wait_adapt(start_ns, false);	/* did not sleep */
		return;
	}
	t = wake_ns - (uint32_t) start_ns;	/* modulo 2^32 ns: 4 s */
	/* A waker's clock a little behind ours (another CPU) reads as huge. */
	if (t > (uint32_t) INT32_MAX)
		t = 0;
	lat = (uint32_t) urcu_rseq_now_ns(CLOCK_MONOTONIC) - wake_ns;
	note_wake_latency(lat > (uint32_t) INT32_MAX ? 0 : (int64_t) lat);
	adapt((int64_t) t, WAIT_SPIN_MAX_NS);
}

/* The tiny queue lock: held only while nodes are unlinked. */
static void queue_lock(struct urcu_wait_queue *q)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;

	for (;;) {
		/* Implies a full barrier: pairs with queue_unlock(). */
		if (CMM_LOAD_SHARED(q->lock) == 0
				&& uatomic_cmpxchg(&q->lock, 0, 1) == 0)
			return;
		urcu_rseq_backoff(&b);
	}
}

static void queue_unlock(struct urcu_wait_queue *q)
{
	cmm_smp_mb();	/* Pairs with the cmpxchg in queue_lock(). */
	CMM_STORE_SHARED(q->lock, 0);
}

/* The head, with the zero-filled NULL read as the empty marker. */
static struct cds_wfs_head *queue_head(struct urcu_wait_queue *q)
{
	struct cds_wfs_head *head = CMM_LOAD_SHARED(q->stack.head);

	return head ? head : (struct cds_wfs_head *) CDS_WFS_END;
}

void urcu_wait_queue_init(struct urcu_wait_queue *q)
{
	__cds_wfs_init(&q->stack);
	q->lock = 0;
	q->flags = 0;
}

void urcu_wait_node_init(struct urcu_wait_node *n)
{
	cds_wfs_node_init(&n->wfs);
	n->state = URCU_WAIT_WAITING;
	n->wake_ns = 0;
	n->queue = NULL;
}

/* No node linked; for lock holders, and for callers that then lock. */
static bool queue_no_node(struct urcu_wait_queue *q)
{
	return queue_head(q) == (struct cds_wfs_head *) CDS_WFS_END;
}

/*
 * No node linked and nobody inside the queue: the head is empty and the
 * lock free. The lock matters because a waiter that withdraws its own node
 * (timeout, cancellation) empties the head with a cmpxchg while it holds
 * the lock, and writes the queue once more to release it: a broadcast or a
 * destroy that saw the empty head alone could return, and its caller free
 * the queue, before that store. So the queue is idle only once that lock
 * is free too, and whoever wants to act on "empty" while it is held takes
 * (or waits for) the lock instead.
 *
 * Why this rather than having the withdrawing waiter touch nothing after
 * its head cmpxchg: the head and the lock are two words, and the waiter
 * must hold the lock while it unlinks (poppers walk the same links), so
 * its last write is the release; making the empty check see it costs the
 * fast paths (signal or broadcast of an empty queue, destroy) one more
 * load of the same cache line, and no atomic instruction.
 *
 * Order: the head, then the lock. The withdrawing waiter took the lock (a
 * cmpxchg, full barrier) before its head cmpxchg: a reader that sees the
 * head that cmpxchg wrote then sees the lock held, or released later
 * (pairs with the cmpxchg in queue_lock()); a lock read free after that is
 * the release (pairs with the barrier in queue_unlock()), after which the
 * waiter does not touch the queue. A caller that then reuses the memory
 * orders its stores after the load of the lock by its dependency on the
 * result, or by the barrier in urcu_wait_queue_empty() and
 * urcu_cond_destroy().
 */
static bool queue_idle(struct urcu_wait_queue *q)
{
	if (!queue_no_node(q))
		return false;
	/*
	 * Head before lock. Pairs with the cmpxchg in queue_lock() (taken
	 * before the withdrawing waiter's head cmpxchg) and with the barrier
	 * in queue_unlock() before its release store.
	 */
	cmm_smp_rmb();
	return CMM_LOAD_SHARED(q->lock) == 0;
}

bool urcu_wait_queue_empty(struct urcu_wait_queue *q)
{
	bool idle = queue_idle(q);

	/*
	 * The caller may free the queue: its stores come after the loads
	 * above. Pairs with the barrier in queue_unlock().
	 */
	cmm_smp_mb();
	return idle;
}

bool urcu_wait_queue_quiesce(struct urcu_wait_queue *q)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;

	for (;;) {
		if (!queue_no_node(q))
			return false;
		if (queue_idle(q))
			break;
		/* A holder of the lock never waits for us: it will let go. */
		urcu_rseq_backoff(&b);
	}
	/* Pairs with the barrier in queue_unlock(): the caller may free. */
	cmm_smp_mb();
	return true;
}

bool urcu_wait_add(struct urcu_wait_queue *q, struct urcu_wait_node *n)
{
	n->queue = q;
	/*
	 * A zero-filled queue has a NULL head; the stack needs its end
	 * marker before the first push so that the bottom node's next is
	 * not NULL (NULL means "push in progress" to the stack).
	 */
	if (caa_unlikely(CMM_LOAD_SHARED(q->stack.head) == NULL))
		(void) uatomic_cmpxchg(&q->stack.head, NULL,
				(struct cds_wfs_head *) CDS_WFS_END);
	/*
	 * Full barrier (xchg): the node's fields are initialized before a
	 * waker can pop it. Pairs with the barrier in the pop (cmpxchg or
	 * xchg on the head).
	 */
	wait_first = !cds_wfs_push(&q->stack, &n->wfs);
	return wait_first;
}

/*
 * Wait until a timed-out waiter whose node we popped has released the
 * queue lock for the last time; returns its state then.
 */
static int32_t wait_left(struct urcu_wait_node *n, int32_t s)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;

	while (!(s & URCU_WAIT_LEFT)) {
		urcu_rseq_backoff(&b);
		s = CMM_LOAD_SHARED(n->state);
	}
	/* Pairs with the barrier before the waiter's LEFT store. */
	cmm_smp_mb();
	return s;
}

/*
 * The waker's side for one popped node; its last access to @n. Returns
 * true if the waiter was woken, false if it had timed out. The node may be
 * WAITING or SLEEPING, DETACHED or not, or TIMEDOUT.
 */
static bool wake_node(struct urcu_wait_node *n, int32_t how)
{
	int32_t old = CMM_LOAD_SHARED(n->state), cur;

	for (;;) {
		if (old & URCU_WAIT_TIMEDOUT) {
			/*
			 * Returning while the waiter may still take the queue
			 * lock would let the caller's caller free the queue
			 * under it (destroy right after signal).
			 */
			(void) wait_left(n, old);
			/* Pairs with the barrier after the waiter's TEARDOWN load. */
			cmm_smp_mb();
			CMM_STORE_SHARED(n->state, URCU_WAIT_TIMEDOUT
					| URCU_WAIT_LEFT | URCU_WAIT_TEARDOWN);
			return false;
		}
		/*
		 * A sleeper learns when it was woken, to tell the wake-up
		 * latency of the futex apart from the time it waited for us
		 * (adapt_woken()). Still ours: the CAS below hands
		 * the node back.
		 */
		if (old & URCU_WAIT_SLEEPING)
			CMM_STORE_SHARED(n->wake_ns, (uint32_t)
					urcu_rseq_now_ns(CLOCK_MONOTONIC));
		/*
		 * One CAS wakes the waiter and ends our access to the node:
		 * it may return at once. Pairs with the barrier after the
		 * waiter's TEARDOWN load.
		 */
		cur = uatomic_cmpxchg(&n->state, old,
				URCU_WAIT_WAKEUP | URCU_WAIT_TEARDOWN | how);
		if (cur != old) {
			old = cur;
			continue;
		}
		wait_woke = true;
		if (!(old & URCU_WAIT_SLEEPING))
			return true;	/* still spinning: no system call */
		urcu_rseq_fi_point();
		/*
		 * The node may be gone by now: a private futex wake names
		 * the address only and reads and writes nothing there. What
		 * lives at that address next may see one spurious wake-up,
		 * which every futex waiter tolerates. Waiting for the waker
		 * to come back from this call instead made the woken thread
		 * depend on a waker that may be preempted right here.
		 */
		urcu_rseq_futex_wake(&n->state, 1);
		return true;
	}
}

/*
 * A chained broadcast popped @n: tell its waiter, before the broadcast
 * returns, that it will be woken by the chain and must not touch the queue
 * again (no deadline, no unlinking). A waiter that timed out first is
 * waited for until it has left the queue; the chain skips it later.
 */
static void detach_node(struct urcu_wait_node *n)
{
	int32_t s = CMM_LOAD_SHARED(n->state), cur;

	for (;;) {
		if (s & URCU_WAIT_TIMEDOUT) {
			(void) wait_left(n, s);
			return;
		}
		cur = uatomic_cmpxchg(&n->state, s, s | URCU_WAIT_DETACHED);
		if (cur == s)
			return;
		s = cur;
	}
}

/* Wait until the waker that holds @n has finished with it. */
static int32_t wait_teardown(struct urcu_wait_node *n)
{
	struct urcu_rseq_backoff b = URCU_RSEQ_BACKOFF_INIT;
	int32_t s;

	while (!((s = CMM_LOAD_SHARED(n->state)) & URCU_WAIT_TEARDOWN))
		urcu_rseq_backoff(&b);
	/* Pairs with the barrier before the waker's TEARDOWN store. */
	cmm_smp_mb();
	return s;
}

/*
 * Unlink @n if it is still on its queue. Returns false if a waker popped it
 * first (that waker will end with a TEARDOWN store).
 */
static bool unlink_node(struct urcu_wait_queue *q, struct urcu_wait_node *n)
{
	struct cds_wfs_head *head;
	struct cds_wfs_node *pred, *cur, *next;
	bool found = false;

	queue_lock(q);
retry:
	head = queue_head(q);
	if (head == (struct cds_wfs_head *) CDS_WFS_END)
		goto out;
	if (&head->node == &n->wfs) {
		next = cds_wfs_next_blocking(&n->wfs);
		if (!next)
			next = (struct cds_wfs_node *) CDS_WFS_END;
		/* A concurrent push moves the head: then walk from it. */
		if (uatomic_cmpxchg(&q->stack.head, head,
				caa_container_of(next, struct cds_wfs_head, node))
				!= head)
			goto retry;
		found = true;
		/* The queue looks empty from here on while we still hold its lock. */
		urcu_rseq_fi_point();
		goto out;
	}
	/*
	 * Linked nodes below the head are written by nobody but lock
	 * holders: pushers only write the node they push.
	 */
	for (pred = &head->node; (cur = cds_wfs_next_blocking(pred)); pred = cur) {
		if (cur != &n->wfs)
			continue;
		next = cds_wfs_next_blocking(cur);
		CMM_STORE_SHARED(pred->next,
				next ? next : (struct cds_wfs_node *) CDS_WFS_END);
		found = true;
		break;
	}
out:
	queue_unlock(q);
	return found;
}

/*
 * The waiter gives up (deadline or cancellation). Returns 0 if it won the
 * node's fate (TIMEDOUT, off the queue); URCU_WAIT_DETACHED if a chained
 * broadcast popped it (it is woken when the chain reaches it and must not
 * touch the queue: the caller keeps waiting); else the woken state, once
 * the waker is done with the node.
 */
static int32_t give_up(struct urcu_wait_node *n)
{
	int32_t s = CMM_LOAD_SHARED(n->state), cur;

	for (;;) {
		if (s & URCU_WAIT_WAKEUP)
			return wait_teardown(n);
		if (s & URCU_WAIT_DETACHED)
			return URCU_WAIT_DETACHED;
		cur = uatomic_cmpxchg(&n->state, s, URCU_WAIT_TIMEDOUT);
		if (cur == s)
			break;
		s = cur;
	}
	urcu_rseq_fi_point();
	if (!unlink_node(n->queue, n)) {
		/*
		 * A waker popped the node and waits for this store before it
		 * goes on: the queue lock above was our last access to the
		 * queue. Pairs with the barrier in wait_left().
		 */
		cmm_smp_mb();
		CMM_STORE_SHARED(n->state, URCU_WAIT_TIMEDOUT | URCU_WAIT_LEFT);
		(void) wait_teardown(n);
	}
	return 0;
}

static struct cds_wfs_node *chain_of(struct urcu_wait_node *n, int32_t state)
{
	struct cds_wfs_node *next;

	if (!(state & URCU_WAIT_CHAIN))
		return NULL;
	/*
	 * Written by our own push, or by an unlinker under the queue lock
	 * before the broadcast popped us: ordered before the TEARDOWN we saw.
	 */
	next = CMM_LOAD_SHARED(n->wfs.next);
	return next == (struct cds_wfs_node *) CDS_WFS_END ? NULL : next;
}

/*
 * The futex sleep, optionally a cancellation point: the asynchronous
 * cancel type covers the system call only, so that a cancellation can
 * only unwind from a state the caller's cleanup handler knows (queued,
 * sleeping or woken), never from the middle of a protocol step.
 */
static void sleep_cancelled(void *arg)
{
	(void) arg;
	urcu_mutex_blocking_end();
}

/*
 * The sleep is bracketed by urcu_mutex_blocking_begin/end(): a thread that
 * holds a urcu_mutex while it sleeps here (urcu_cond_wait_ops() with a
 * mutex other than the one it waits with, a wait-stack waiter holding
 * one) is seen blocked at once by that mutex's spinning waiters. The end
 * also runs when a cancellation unwinds from the sleep.
 */
static int sleep_on(struct urcu_wait_node *n, int32_t val, clockid_t clock,
		const struct timespec *abstime, bool cancellable)
{
	int ret, oldtype;

	urcu_mutex_blocking_begin();
	if (!cancellable) {
		ret = urcu_rseq_futex_wait(&n->state, val, clock, abstime);
		urcu_mutex_blocking_end();
		return ret;
	}
	pthread_cleanup_push(sleep_cancelled, NULL);
	(void) pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &oldtype);
	ret = urcu_rseq_futex_wait(&n->state, val, clock, abstime);
	(void) pthread_setcanceltype(oldtype, NULL);
	pthread_cleanup_pop(1);
	return ret;
}

int urcu_wait_chained(struct urcu_wait_node *n, clockid_t clock,
		const struct timespec *abstime, struct cds_wfs_node **chain,
		bool cancellable)
{
	enum urcu_wait_spin_result spin;
	int32_t expect = URCU_WAIT_WAITING, s;
	int64_t start;
	int ret;

	*chain = NULL;
	if (!n || !n->queue)
		return EINVAL;
	if (abstime && !urcu_rseq_ts_valid(abstime))
		return EINVAL;
	if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME)
		return EINVAL;

	for (;;) {
		spin = urcu_wait_spin(&n->state, expect, clock, abstime, &start,
				wait_first);
		if (spin == URCU_WAIT_SPIN_CHANGED) {
			s = CMM_LOAD_SHARED(n->state);
			if (s & URCU_WAIT_WAKEUP)
				goto woken_teardown;
			/*
			 * Detached by a broadcast: it woke us, the chain
			 * will tell us so. A deadline no longer applies.
			 */
			expect = s;
			abstime = NULL;
			continue;
		}
		if (spin == URCU_WAIT_SPIN_DEADLINE) {
			s = give_up(n);
			if (!s)
				goto timedout;
			if (s != URCU_WAIT_DETACHED)
				goto woken;
			expect = CMM_LOAD_SHARED(n->state);
			if (expect & URCU_WAIT_WAKEUP)
				goto woken_teardown;
			abstime = NULL;
			continue;
		}
		/* Announce the sleep, so that the waker issues the futex wake. */
		s = uatomic_cmpxchg(&n->state, expect, expect | URCU_WAIT_SLEEPING);
		if (s == expect)
			break;
		if (s & URCU_WAIT_WAKEUP)
			goto woken_teardown;
		expect = s;	/* detached meanwhile */
		abstime = NULL;
	}
	expect |= URCU_WAIT_SLEEPING;
	for (;;) {
		urcu_rseq_fi_point();
		ret = sleep_on(n, expect, clock, abstime, cancellable);
		/* Spurious returns and EINTR: look at the state again. */
		s = CMM_LOAD_SHARED(n->state);
		if (s & URCU_WAIT_WAKEUP)
			goto woken_teardown;
		if (s != expect) {
			expect = s;	/* detached: no deadline any more */
			abstime = NULL;
			continue;
		}
		if (ret == ETIMEDOUT
				|| (abstime && urcu_rseq_ts_passed(clock, abstime))) {
			s = give_up(n);
			if (!s)
				goto timedout;
			if (s != URCU_WAIT_DETACHED)
				goto woken;
			expect = URCU_WAIT_SLEEPING | URCU_WAIT_DETACHED;
			abstime = NULL;
		}
	}

woken_teardown:
	s = wait_teardown(n);
woken:
	adapt_woken(start, CMM_LOAD_SHARED(n->wake_ns));
	*chain = chain_of(n, s);
	urcu_wait_node_init(n);
	return 0;
timedout:
	urcu_wait_node_init(n);
	return ETIMEDOUT;
}

int urcu_wait_cancel(struct urcu_wait_node *n, struct cds_wfs_node **chain)
{
	int32_t s;

	*chain = NULL;
	s = give_up(n);
	if (!s) {
		urcu_wait_node_init(n);
		return 0;
	}
	/* Popped by a broadcast: the node is ours once the chain reached it. */
	if (s == URCU_WAIT_DETACHED)
		s = wait_teardown(n);
	*chain = chain_of(n, s);
	urcu_wait_node_init(n);
	return s & URCU_WAIT_CHAIN ? 2 : 1;
}

int urcu_wait_clock(struct urcu_wait_node *n, clockid_t clock,
		const struct timespec *abstime)
{
	struct cds_wfs_node *chain;

	return urcu_wait_chained(n, clock, abstime, &chain, false);
}

int urcu_wait(struct urcu_wait_node *n, const struct timespec *abstime)
{
	return urcu_wait_clock(n, CLOCK_MONOTONIC, abstime);
}

/*
 * For a holder of the lock of a queue with a node: pop the node below the
 * newest, or the newest when it is alone. Linked nodes below the head are
 * written by lock holders only (see unlink_node()), and the newest node's
 * link, once its pusher wrote it, by nobody else either.
 */
static struct cds_wfs_node *pop_second(struct urcu_wait_queue *q)
{
	struct cds_wfs_node *top = &queue_head(q)->node, *second, *next;

	second = cds_wfs_next_blocking(top);
	if (!second)
		return __cds_wfs_pop_blocking(&q->stack);
	next = cds_wfs_next_blocking(second);
	/*
	 * Read by the next lock holder only: published by the barrier in
	 * queue_unlock(), which pairs with the cmpxchg in queue_lock().
	 */
	CMM_STORE_SHARED(top->next,
			next ? next : (struct cds_wfs_node *) CDS_WFS_END);
	return second;
}

static bool wake_one(struct urcu_wait_queue *q, bool second)
{
	struct cds_wfs_node *node;

	/* Pairs with the full barrier of urcu_wait_add() (xchg). */
	cmm_smp_mb();
	for (;;) {
		if (queue_idle(q))
			return false;
		queue_lock(q);
		if (queue_no_node(q))
			node = NULL;
		else if (second)
			node = pop_second(q);
		else
			node = __cds_wfs_pop_blocking(&q->stack);
		queue_unlock(q);
		if (!node)
			return false;
		urcu_rseq_fi_point();
		/* A waiter that timed out is skipped: wake another. */
		if (wake_node(caa_container_of(node, struct urcu_wait_node, wfs), 0))
			return true;
	}
}

bool urcu_wait_wake_one(struct urcu_wait_queue *q)
{
	return wake_one(q, false);
}

/*
 * A condition's signal. While the machine is busy its waiters sleep at
 * once (but a hand-off alone on its queue), so the newest one has no
 * edge: it is no likelier to be still spinning. Waking it still ties a
 * pool's work to one thread, and so to the CPU that thread last ran on,
 * where the kernel wakes it. When that is a CPU the signaler does not
 * use, every wake-up there preempts another process through an
 * interrupt, which doubled the woken worker's CPU time per task on the
 * workplace VM (doc/wait.md, "LIFO order"). Taking the waiter below the
 * newest lets two threads take turns, and the kernel then places them
 * as it places pthread_cond's.
 */
bool urcu_wait_wake_one_signal(struct urcu_wait_queue *q)
{
	return wake_one(q, CMM_LOAD_SHARED(wait_busy));
}

static struct cds_wfs_head *pop_all(struct urcu_wait_queue *q)
{
	struct cds_wfs_head *head;

	/* Pairs with the full barrier of urcu_wait_add() (xchg). */
	cmm_smp_mb();
	if (queue_idle(q))
		return NULL;
	/* Empty but locked: the lock waits for a waiter still withdrawing. */
	queue_lock(q);
	head = queue_no_node(q) ? NULL : __cds_wfs_pop_all(&q->stack);
	queue_unlock(q);
	return head;
}

int urcu_wait_wake_all(struct urcu_wait_queue *q)
{
	struct cds_wfs_head *head = pop_all(q);
	struct cds_wfs_node *node, *next;
	int woken = 0;

	if (!head)
		return 0;
	/* Read each next before the node's last access hands it back. */
	cds_wfs_for_each_blocking_safe(head, node, next) {
		if (wake_node(caa_container_of(node, struct urcu_wait_node, wfs), 0))
			woken++;
	}
	return woken;
}

void urcu_wait_wake_chain(struct cds_wfs_node *chain)
{
	struct cds_wfs_node *next;

	for (; chain; chain = next) {
		next = cds_wfs_next_blocking(chain);
		urcu_rseq_fi_point();
		/* The woken waiter passes the rest on itself. */
		if (wake_node(caa_container_of(chain, struct urcu_wait_node, wfs),
				URCU_WAIT_CHAIN))
			return;
	}
}

/* Online CPUs, read once: how many relays a broadcast starts. */
static int relay_count(void)
{
	static int cached;
	int n = CMM_LOAD_SHARED(cached);

	if (caa_unlikely(n <= 0)) {
		long v = sysconf(_SC_NPROCESSORS_ONLN);

		n = v < 1 ? 1 : v > WAIT_RELAYS_MAX ? WAIT_RELAYS_MAX : (int) v;
		CMM_STORE_SHARED(cached, n);
	}
	return n;
}

void urcu_wait_wake_all_chained(struct urcu_wait_queue *q)
{
	struct cds_wfs_head *head = pop_all(q);
	struct cds_wfs_node *first, *node, *heads[WAIT_RELAYS_MAX];
	int count = 0, relays, per, i;

	if (!head)
		return;
	/*
	 * The first is woken at once. The others must learn, before we
	 * return, that they are no longer on the queue: our caller may free
	 * it as soon as we return.
	 */
	first = cds_wfs_first(head);
	for (node = cds_wfs_next_blocking(first); node;
			node = cds_wfs_next_blocking(node)) {
		detach_node(caa_container_of(node, struct urcu_wait_node, wfs));
		count++;
	}
	count++;
	/*
	 * One relay per CPU: the chain is cut into that many pieces, each
	 * passed on from waiter to waiter. Fewer would leave CPUs idle while
	 * a wake-up travels; more would only crowd the CPUs (and the mutex)
	 * with threads that cannot run. The cuts are written before the
	 * wake-ups that publish them (a full barrier each), and no waiter
	 * reads its link before its own wake-up.
	 */
	relays = relay_count();
	if (relays > count)
		relays = count;
	per = (count + relays - 1) / relays;
	relays = (count + per - 1) / per;
	heads[0] = first;
	for (i = 1, node = first, count = 1; i < relays; count++) {
		struct cds_wfs_node *next = cds_wfs_next_blocking(node);

		if (count % per == 0) {
			CMM_STORE_SHARED(node->next,
					(struct cds_wfs_node *) CDS_WFS_END);
			heads[i++] = next;
		}
		node = next;
	}
	for (i = 0; i < relays; i++)
		urcu_wait_wake_chain(heads[i]);
}
