// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * urcu_mutex: argument checks, ownership errors, timed locks, mutual
 * exclusion with more threads than CPUs (each owner-running setting), the
 * hand-off that keeps a waiter from starving, a timed waiter leaving
 * the hand-off slot cleanly, destroy right after an unlock that found a
 * stale waiter bit, owner ids recycled at thread exit, a fork child whose
 * parent left a waiter in the hand-off slot, blocking_begin/end in a
 * thread without an id, and the kernel's time-slice extension (Linux 7.0+
 * built with it): asked for while a mutex is held, never left asked for
 * or granted after the last unlock, granted to an owner that a thread on
 * its CPU would preempt, and given back.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <urcu/uatomic.h>
#include <urcu/mutex.h>
#include <urcu/rseq.h>
#include "tap.h"
#include "stress.h"
#include "lifecycle.h"

/*
 * The owner bits of the lock word (src/mutex.c): an unlocked mutex may keep
 * waiter bits that outlived their waiters, so "free" means these are 0.
 */
#define OWNER_OF(m)	((uint32_t) CMM_LOAD_SHARED((m)->state) & 0x0fffffff)
/* ... of which the low 20 bits name the owner's descriptor. */
#define ID_SLOT(id)	((id) & 0xfffff)

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

static void test_args(void)
{
	struct urcu_mutex m = URCU_MUTEX_INITIALIZER;
	struct urcu_mutex_attr attr;
	struct timespec bad[] = { { 0, -1 }, { 0, 1000000000L }, { -1, 0 } };
	unsigned int i;
	int ret;

	ok(urcu_mutex_init(NULL, NULL) == EINVAL, "init(NULL): EINVAL");
	ok(urcu_mutex_attr_init(NULL) == EINVAL, "attr_init(NULL): EINVAL");
	ok(urcu_mutex_attr_init(&attr) == 0
		&& attr.owner_signals == URCU_MUTEX_OWNER_DEFAULT,
		"attr_init gives the default signals");
	attr.owner_signals = 1U << 20;
	ok(urcu_mutex_init(&m, &attr) == EINVAL, "unknown signal bit: EINVAL");
	ok(urcu_mutex_init(&m, NULL) == 0, "init with defaults");
	ok(urcu_mutex_destroy(NULL) == EINVAL, "destroy(NULL): EINVAL");
	ok(urcu_mutex_timedlock(&m, NULL) == EINVAL, "timedlock(NULL): EINVAL");
	ret = 0;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ret |= urcu_mutex_timedlock(&m, &bad[i]) != EINVAL;
	ok(!ret && m.state == 0, "bad timespecs: EINVAL, lock untouched");
	diag("owner-running backend: %s", urcu_mutex_owner_backend());
	ok(strcmp(urcu_mutex_owner_backend(), "userspace") == 0
		|| strcmp(urcu_mutex_owner_backend(), "kernel") == 0,
		"a backend is chosen");
}

static struct urcu_mutex shared = URCU_MUTEX_INITIALIZER;

static void *try_from_other(void *arg)
{
	(void) arg;
	return (void *) (intptr_t) urcu_mutex_trylock(&shared);
}

static void *unlock_from_other(void *arg)
{
	(void) arg;
	return (void *) (intptr_t) urcu_mutex_unlock(&shared);
}

static void *timed_from_other(void *arg)
{
	int64_t ms = *(int64_t *) arg, t0 = now_ns(CLOCK_REALTIME);
	struct timespec ts = deadline_in(ms * 1000000);
	int ret = urcu_mutex_timedlock(&shared, &ts);

	*(int64_t *) arg = now_ns(CLOCK_REALTIME) - t0;
	if (ret == 0)
		urcu_mutex_unlock(&shared);
	return (void *) (intptr_t) ret;
}

static intptr_t run_other(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	void *ret;

	if (pthread_create(&t, NULL, fn, arg))
		bail_out("pthread_create");
	pthread_join(t, &ret);
	return (intptr_t) ret;
}

/* Run @fn in a child; true if it died of SIGABRT (debug-build checks). */
static bool aborts(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		/* The message is expected; keep the TAP output clean. */
		if (!freopen("/dev/null", "w", stderr))
			_exit(3);
		fn();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void child_unlock_not_owner(void)
{
	struct urcu_mutex m = URCU_MUTEX_INITIALIZER;

	urcu_mutex_unlock(&m);
}

static void child_destroy_held(void)
{
	struct urcu_mutex m = URCU_MUTEX_INITIALIZER;

	urcu_mutex_lock(&m);
	urcu_mutex_destroy(&m);
}

static void test_ownership(void)
{
	int64_t arg;
	int ret;

	urcu_mutex_lock(&shared);
	ok(urcu_mutex_is_owner(&shared), "lock: the caller owns it");
	ok(!urcu_mutex_trylock(&shared), "trylock of a held mutex fails");
	ok(run_other(try_from_other, NULL) == 0, "trylock from another thread fails");
#ifdef URCU_RSEQ_DEBUG
	skip(1, "debug build aborts on unlock by a non-owner (checked below)");
	skip(1, "debug build aborts on destroy while held (checked below)");
#else
	ok(run_other(unlock_from_other, NULL) == EPERM,
		"unlock by a non-owner: EPERM");
	ok(urcu_mutex_destroy(&shared) == EBUSY, "destroy while held: EBUSY");
#endif
	ok(urcu_mutex_is_owner(&shared), "still owned after the failed calls");
	arg = 30;
	ret = (int) run_other(timed_from_other, &arg);
	ok(ret == ETIMEDOUT && arg >= 30000000LL - 1000000,
		"timedlock of a held mutex: ETIMEDOUT after the deadline (%lld us)",
		(long long) arg / 1000);
	ok(urcu_mutex_unlock(&shared) == 0, "unlock by the owner");
	ok(!urcu_mutex_is_owner(&shared), "released");
#ifndef URCU_RSEQ_DEBUG
	ok(urcu_mutex_unlock(&shared) == EPERM, "double unlock: EPERM");
#else
	skip(1, "debug build aborts on double unlock");
#endif
	arg = 30;
	ok(run_other(timed_from_other, &arg) == 0, "timedlock of a free mutex");
	ok(urcu_mutex_trylock(&shared), "trylock of a free mutex");
	ok(urcu_mutex_unlock(&shared) == 0 && OWNER_OF(&shared) == 0,
		"unlock releases the lock word");
	ok(urcu_mutex_destroy(&shared) == 0, "destroy of a free mutex");
#ifdef URCU_RSEQ_DEBUG
	ok(aborts(child_unlock_not_owner), "debug: unlock by non-owner aborts");
	ok(aborts(child_destroy_held), "debug: destroy while held aborts");
#else
	ok(!aborts(child_unlock_not_owner), "unlock by non-owner does not crash");
	ok(!aborts(child_destroy_held), "destroy while held does not crash");
#endif
}

/* Mutual exclusion: a plain counter and an "inside" flag. */
struct excl {
	struct urcu_mutex m;
	unsigned long counter;		/* only touched under the lock */
	int inside;
	unsigned long violations;
	unsigned long per_thread[16];
};

static void excl_worker(struct stress_thread *t)
{
	struct excl *e = (struct excl *) t->arg;
	unsigned long n = 0;

	while (!stress_should_stop(t)) {
		if ((n & 7) == 7) {
			if (!urcu_mutex_trylock(&e->m))
				continue;
		} else {
			urcu_mutex_lock(&e->m);
		}
		if (CMM_LOAD_SHARED(e->inside))
			uatomic_inc(&e->violations);
		CMM_STORE_SHARED(e->inside, 1);
		e->counter++;
		if ((n & 63) == 0)
			caa_cpu_relax();
		CMM_STORE_SHARED(e->inside, 0);
		urcu_mutex_unlock(&e->m);
		n++;
	}
	e->per_thread[t->id] = n;
}

static void test_exclusion(unsigned int signals, const char *what)
{
	struct urcu_mutex_attr attr = { signals, 0 };
	static struct excl e;
	unsigned long sum = 0;
	unsigned int i, threads = 8;

	memset(&e, 0, sizeof(e));
	urcu_mutex_init(&e.m, &attr);
	stress_run_ms(excl_worker, &e, threads, STRESS_QUIET, 200, NULL);
	for (i = 0; i < threads; i++)
		sum += e.per_thread[i];
	ok(e.violations == 0 && e.counter == sum && sum > 0,
		"%s: %u threads, %lu sections, counter exact, never two inside",
		what, threads, sum);
	ok(urcu_mutex_destroy(&e.m) == 0, "%s: free at the end", what);
}

/* A hog re-locks at once after each unlock; the waiter must still get in. */
static struct urcu_mutex hog_m = URCU_MUTEX_INITIALIZER;
static int hog_stop;

static void *hog(void *arg)
{
	unsigned int i;

	(void) arg;
	pin_self(stress_cpu_at(0));
	while (!CMM_LOAD_SHARED(hog_stop)) {
		urcu_mutex_lock(&hog_m);
		for (i = 0; i < 2000; i++)
			caa_cpu_relax();
		urcu_mutex_unlock(&hog_m);
	}
	return NULL;
}

static void test_handoff(void)
{
	pthread_t h[2];
	int64_t worst = 0, t0, w;
	int i, got = 0;

	for (i = 0; i < 2; i++)
		pthread_create(&h[i], NULL, hog, NULL);
	usleep(10000);
	for (i = 0; i < 50; i++) {
		t0 = now_ns(CLOCK_MONOTONIC);
		urcu_mutex_lock(&hog_m);
		w = now_ns(CLOCK_MONOTONIC) - t0;
		urcu_mutex_unlock(&hog_m);
		got++;
		if (w > worst)
			worst = w;
		usleep(1000);
	}
	CMM_STORE_SHARED(hog_stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(h[i], NULL);
	diag("worst wait against two re-locking hogs: %lld us",
		(long long) worst / 1000);
	/*
	 * Starvation would keep a lock() from returning and the test from
	 * ending; how long the worst one took is the diag above, not bounded
	 * (a starved host stretches any bound).
	 */
	ok(got == 50, "a waiter got the lock 50 times against re-locking hogs");
}

static int holding;

static void *hold_50ms(void *arg)
{
	(void) arg;
	urcu_mutex_lock(&hog_m);
	CMM_STORE_SHARED(holding, 1);
	usleep(50000);
	urcu_mutex_unlock(&hog_m);
	return NULL;
}

static void test_handoff_timeout(void)
{
	struct timespec ts;
	pthread_t t;
	int ret;

	pthread_create(&t, NULL, hold_50ms, NULL);
	while (!CMM_LOAD_SHARED(holding))
		usleep(1000);
	ts = deadline_in(10000000);	/* past the 1 ms hand-off point */
	ret = urcu_mutex_timedlock(&hog_m, &ts);
	ok(ret == ETIMEDOUT && hog_m.handoff == 0,
		"timed waiter in the hand-off slot times out and leaves it (%d)",
		ret);
	if (ret == 0)
		urcu_mutex_unlock(&hog_m);
	pthread_join(t, NULL);
	ok(OWNER_OF(&hog_m) == 0 && hog_m.handoff == 0
		&& urcu_mutex_destroy(&hog_m) == 0,
		"the unlock after it leaves the mutex free: destroy returns 0");
	urcu_mutex_lock(&hog_m);
	ok(urcu_mutex_unlock(&hog_m) == 0 && OWNER_OF(&hog_m) == 0
		&& urcu_mutex_destroy(&hog_m) == 0, "still usable");
}

/*
 * A waiter that slept and timed out leaves the sleepers bit; the unlock
 * after it wakes nobody and leaves the awake bit, which it may no longer
 * clear (the mutex may be gone). Destroy must not take that bit for a
 * waiter, and the bit must not keep a later sleeper asleep.
 */
static struct urcu_mutex stale = URCU_MUTEX_INITIALIZER;

static void *stale_timeout(void *arg)
{
	struct timespec ts = deadline_in(20000000);

	(void) arg;
	return (void *) (intptr_t) urcu_mutex_timedlock(&stale, &ts);
}

static void *stale_sleeper(void *arg)
{
	struct timespec ts = deadline_in(10000000000LL);	/* hang detector */
	int ret = urcu_mutex_timedlock(&stale, &ts);

	(void) arg;
	if (!ret)
		urcu_mutex_unlock(&stale);
	return (void *) (intptr_t) ret;
}

static void test_stale_bits(void)
{
	pthread_t t;
	void *ret;

	urcu_mutex_lock(&stale);
	ok(run_other(stale_timeout, NULL) == ETIMEDOUT,
		"a waiter sleeps and times out");
	ok(urcu_mutex_unlock(&stale) == 0, "the unlock after it");
	diag("lock word after that unlock: %#x", (unsigned int) stale.state);
	ok(OWNER_OF(&stale) == 0 && urcu_mutex_destroy(&stale) == 0,
		"destroy right after it: 0, not EBUSY");
	urcu_mutex_init(&stale, NULL);
	/* Bits left over again, then a real sleeper: it must be woken. */
	urcu_mutex_lock(&stale);
	run_other(stale_timeout, NULL);
	urcu_mutex_unlock(&stale);
	urcu_mutex_lock(&stale);
	if (pthread_create(&t, NULL, stale_sleeper, NULL))
		bail_out("pthread_create");
	usleep(50000);		/* let it go to sleep */
	urcu_mutex_unlock(&stale);
	pthread_join(t, &ret);
	ok((intptr_t) ret == 0,
		"a stale waiter bit does not keep a later sleeper asleep");
	ok(urcu_mutex_destroy(&stale) == 0, "free at the end");
}

/*
 * A thread exits holding a mutex; the threads after it recycle descriptors,
 * one of them the dead owner's: none may own or unlock the mutex.
 */
static struct urcu_mutex orphan = URCU_MUTEX_INITIALIZER;

struct probe {
	uint32_t id;
	bool owner;
	int unlock_ret;
};

static void *exit_holding(void *arg)
{
	urcu_mutex_lock(&orphan);
	*(uint32_t *) arg = OWNER_OF(&orphan);
	return NULL;
}

static void *probe_orphan(void *arg)
{
	struct urcu_mutex mine = URCU_MUTEX_INITIALIZER;
	struct probe *p = (struct probe *) arg;

	urcu_mutex_lock(&mine);
	p->id = OWNER_OF(&mine);
	urcu_mutex_unlock(&mine);
	p->owner = urcu_mutex_is_owner(&orphan);
#ifndef URCU_RSEQ_DEBUG
	p->unlock_ret = urcu_mutex_unlock(&orphan);
#else
	p->unlock_ret = EPERM;	/* the debug build would abort */
#endif
	return NULL;
}

static void test_recycled_id(void)
{
	unsigned int n = 0, same = 0, owned = 0, unlocked = 0;
	struct probe p;
	uint32_t dead;

	run_other(exit_holding, &dead);
	while (n < 4096 && same < 2) {
		memset(&p, 0, sizeof(p));
		run_other(probe_orphan, &p);
		n++;
		same += ID_SLOT(p.id) == ID_SLOT(dead);
		owned += p.owner;
		unlocked += p.unlock_ret != EPERM;
	}
	diag("dead owner %#x; %u threads after it, %u on its descriptor",
		dead, n, same);
	ok(same > 0, "a later thread reuses the dead owner's descriptor");
	ok(owned == 0, "no later thread owns its mutex (%u did)", owned);
	ok(unlocked == 0, "no later thread may unlock it: EPERM (%u could)",
		unlocked);
	ok(OWNER_OF(&orphan) == dead, "it stays held by the dead owner");
#ifndef URCU_RSEQ_DEBUG
	ok(urcu_mutex_destroy(&orphan) == EBUSY, "destroy: EBUSY");
#else
	skip(1, "debug build aborts on destroy while held");
#endif
}

/*
 * fork() while a parent thread waits in the hand-off slot of a mutex the
 * forking thread holds: the child owns the mutex, and its unlock must not
 * hand it to the waiter, who does not exist in the child.
 */
static struct urcu_mutex forked = URCU_MUTEX_INITIALIZER;
/* Held by another parent thread at fork(): held by nobody in the child. */
static struct urcu_mutex held_elsewhere = URCU_MUTEX_INITIALIZER;
static int release_held;

static void *hold_elsewhere(void *arg)
{
	(void) arg;
	urcu_mutex_lock(&held_elsewhere);
	while (!CMM_LOAD_SHARED(release_held))
		usleep(1000);
	urcu_mutex_unlock(&held_elsewhere);
	return NULL;
}

static void *fork_waiter(void *arg)
{
	struct timespec ts = deadline_in(10000000000LL);

	(void) arg;
	if (urcu_mutex_timedlock(&forked, &ts) == 0)
		urcu_mutex_unlock(&forked);
	return NULL;
}

static int fork_child(void *arg)
{
	struct timespec ts = deadline_in(2000000000LL);
	struct urcu_mutex m;

	(void) arg;
	if (!urcu_mutex_is_owner(&forked) || urcu_mutex_unlock(&forked))
		return 1;
	if (urcu_mutex_timedlock(&forked, &ts) || urcu_mutex_unlock(&forked))
		return 2;
	if (urcu_mutex_destroy(&forked))
		return 3;
	if (urcu_mutex_init(&m, NULL))
		return 4;
	urcu_mutex_lock(&m);
	if (urcu_mutex_unlock(&m) || urcu_mutex_destroy(&m))
		return 5;
	if (urcu_mutex_trylock(&held_elsewhere)
			|| urcu_mutex_is_owner(&held_elsewhere))
		return 6;
#ifndef URCU_RSEQ_DEBUG
	if (urcu_mutex_unlock(&held_elsewhere) != EPERM
			|| urcu_mutex_destroy(&held_elsewhere) != EBUSY)
		return 7;
#endif
	return 0;
}

static void nop_handler(int sig)
{
	(void) sig;
}

static void test_fork(void)
{
	struct sigaction sa;
	enum stress_fork_result res;
	pthread_t t, h;

	if (pthread_create(&h, NULL, hold_elsewhere, NULL))
		bail_out("pthread_create");
	while (!OWNER_OF(&held_elsewhere))
		usleep(1000);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = nop_handler;	/* no SA_RESTART: the sleep returns */
	sigaction(SIGUSR2, &sa, NULL);
	urcu_mutex_lock(&forked);
	if (pthread_create(&t, NULL, fork_waiter, NULL))
		bail_out("pthread_create");
	/* A sleeping waiter asks for the hand-off when it wakes past 1 ms. */
	while (!CMM_LOAD_SHARED(forked.handoff)) {
		pthread_kill(t, SIGUSR2);
		usleep(2000);
	}
	res = stress_fork_check(fork_child, NULL, 10000);
	ok(res == STRESS_FORK_OK,
		"fork child: owns the mutex its thread held, unlocks, relocks and "
		"destroys it past a parent waiter in the hand-off slot; a mutex "
		"another parent thread held stays held, by nobody (%d)",
		(int) res);
	urcu_mutex_unlock(&forked);
	pthread_join(t, NULL);
	CMM_STORE_SHARED(release_held, 1);
	pthread_join(h, NULL);
	ok(OWNER_OF(&forked) == 0 && urcu_mutex_destroy(&forked) == 0,
		"parent: the waiter got it and let it go");
}

/* blocking_begin/end in a thread that never took an id, and nested. */
static void *blocking_thread(void *arg)
{
	struct urcu_mutex m = URCU_MUTEX_INITIALIZER;
	int i, bad = 0;

	(void) arg;
	for (i = 0; i < 1000; i++) {
		urcu_mutex_blocking_begin();
		urcu_mutex_blocking_begin();
		urcu_mutex_blocking_end();
		urcu_mutex_blocking_end();
	}
	bad |= urcu_mutex_is_owner(&m);
	/* Takes its id inside a bracket. */
	urcu_mutex_blocking_begin();
	urcu_mutex_lock(&m);
	urcu_mutex_blocking_end();
	bad |= !urcu_mutex_is_owner(&m);
	bad |= urcu_mutex_unlock(&m) != 0;
	bad |= urcu_mutex_destroy(&m) != 0;
	return (void *) (intptr_t) bad;
}

static void test_blocking(void)
{
	ok(run_other(blocking_thread, NULL) == 0,
		"blocking_begin/end: nested, without an id, and around the "
		"first lock");
}

/*
 * The time-slice extension's ABI (Linux 7.0+ uapi): the area's flags bit
 * the kernel sets when it offers it to the thread, the prctl that says
 * whether the thread turned it on, and the control word at byte 28 (the
 * request byte, then the granted byte).
 */
#define SLICE_AVAILABLE		(1U << 4)
extern const unsigned int __rseq_size __attribute__((weak));
#define SLICE_PRCTL		79
#define SLICE_PRCTL_GET		1
#define SLICE_CTRL_OFF		28

static volatile uint8_t *slice_ctrl(void)
{
	return (volatile uint8_t *) urcu_rseq_area() + SLICE_CTRL_OFF;
}

/* Request or granted byte set. */
static bool slice_asked(void)
{
	return slice_ctrl()[0] || slice_ctrl()[1];
}

static struct urcu_mutex slice_a = URCU_MUTEX_INITIALIZER;
static struct urcu_mutex slice_b = URCU_MUTEX_INITIALIZER;
static void *slice_holder(void *arg)
{
	(void) arg;
	urcu_mutex_lock(&slice_b);
	while (!CMM_LOAD_SHARED(release_held))
		usleep(1000);
	urcu_mutex_unlock(&slice_b);
	return NULL;
}

static volatile int slice_stop;

static void *slice_hog(void *arg)
{
	cpu_set_t *set = (cpu_set_t *) arg;

	(void) pthread_setaffinity_np(pthread_self(), sizeof(*set), set);
	while (!slice_stop)
		caa_cpu_relax();
	return NULL;
}

/*
 * Holds slice_a in 20 us sections while a thread on the same CPU competes
 * for it: the ticks that would preempt the owner find it holding the lock.
 * Counts the sections in which the kernel granted an extension, and after
 * each unlock checks that nothing is left asked for or granted (the unlock
 * gave a granted extension back: otherwise the granted byte stays until
 * the kernel's timer ends it).
 */
static void slice_grants(unsigned long *grants, unsigned long *sections,
		unsigned long *left)
{
	cpu_set_t set;
	pthread_t hog;
	int64_t end, t;
	int cpu = sched_getcpu();

	CPU_ZERO(&set);
	CPU_SET(cpu < 0 ? 0 : cpu, &set);
	(void) pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	slice_stop = 0;
	if (pthread_create(&hog, NULL, slice_hog, &set))
		bail_out("pthread_create");
	end = now_ns(CLOCK_MONOTONIC) + 3000000000LL;
	*grants = *sections = *left = 0;
	while (*grants < 20 && now_ns(CLOCK_MONOTONIC) < end) {
		bool granted = false;

		urcu_mutex_lock(&slice_a);
		t = now_ns(CLOCK_MONOTONIC) + 20000;
		while (now_ns(CLOCK_MONOTONIC) < t)
			granted |= slice_ctrl()[1] != 0;
		urcu_mutex_unlock(&slice_a);
		if (slice_ctrl()[0] || slice_ctrl()[1])
			(*left)++;
		*grants += granted;
		(*sections)++;
	}
	slice_stop = 1;
	pthread_join(hog, NULL);
	CPU_ZERO(&set);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		CPU_SET(cpu, &set);
	(void) pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static struct urcu_mutex slice_c = URCU_MUTEX_INITIALIZER;

/* Exits holding slice_c: its request byte stays set in its area. */
static void *slice_exit_holding(void *arg)
{
	(void) arg;
	urcu_mutex_lock(&slice_c);
	return NULL;
}

/* A fresh thread: nothing asked before its first lock, nor after it. */
static void *slice_fresh(void *arg)
{
	bool *ok_out = (bool *) arg;
	bool before = slice_asked(), held;

	urcu_mutex_lock(&slice_a);
	held = slice_asked();
	urcu_mutex_unlock(&slice_a);
	*ok_out = !before && held && !slice_asked()
		&& prctl(SLICE_PRCTL, SLICE_PRCTL_GET, 0, 0, 0) == 1;
	return NULL;
}

/*
 * fork() while holding a mutex: the child inherits the registration and
 * the extension's state. The kernel clears the request whenever it puts
 * the thread back on a CPU (it did not run uninterrupted), so after fork()
 * parent and child may find it cleared; either way an unlock leaves
 * nothing asked for, and the child's next lock asks again. A thread that
 * exits holding a mutex leaves its request in an area that the kernel
 * clears when a new thread registers there (glibc reuses a dead thread's
 * descriptor and area). Returns 0, or the first failed step.
 */
static int slice_fork_and_exit(void)
{
	bool fresh_ok = false;
	pthread_t t;
	pid_t pid;
	int status = -1, i, step;

	urcu_mutex_lock(&slice_a);
	pid = fork();
	if (pid < 0)
		bail_out("fork");
	if (!pid) {
		step = prctl(SLICE_PRCTL, SLICE_PRCTL_GET, 0, 0, 0) == 1 ? 0 : 1;
		urcu_mutex_unlock(&slice_a);
		if (!step && slice_asked())
			step = 2;
		urcu_mutex_lock(&slice_b);
		if (!step && !slice_asked())
			step = 3;
		urcu_mutex_unlock(&slice_b);
		if (!step && slice_asked())
			step = 4;
		_exit(step);
	}
	urcu_mutex_unlock(&slice_a);
	step = slice_asked() ? 10 : 0;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		step = step ? step : 20;
	else if (WEXITSTATUS(status))
		step = step ? step : 20 + WEXITSTATUS(status);
	if (step)
		return step;
	if (pthread_create(&t, NULL, slice_exit_holding, NULL))
		bail_out("pthread_create");
	pthread_join(t, NULL);
	for (i = 0; i < 4; i++) {
		fresh_ok = false;
		if (pthread_create(&t, NULL, slice_fresh, &fresh_ok))
			bail_out("pthread_create");
		pthread_join(t, NULL);
		if (!fresh_ok)
			return 30 + i;
	}
	return slice_asked() ? 40 : 0;
}

static void test_slice_extension(void)
{
	struct timespec ts;
	unsigned long grants, sections, left;
	uint32_t flags = 0;
	bool offered, on;
	pthread_t t;
	int ret;

	/* The first lock of this thread turned it on, if offered. */
	urcu_mutex_lock(&slice_a);
	urcu_mutex_unlock(&slice_a);
	if (urcu_rseq_available())
		flags = CMM_LOAD_SHARED(urcu_rseq_area()->flags);
	offered = flags & SLICE_AVAILABLE;
	on = prctl(SLICE_PRCTL, SLICE_PRCTL_GET, 0, 0, 0) == 1;
	diag("time-slice extension: %s by the kernel (rseq flags 0x%x) to "
		"%s area (__rseq_size %u), %s",
		offered ? "offered" : "not offered", flags,
		(urcu_rseq_features & URCU_RSEQ_FEATURE_GLIBC_AREA)
			? "glibc's" : "the library's own",
		&__rseq_size ? __rseq_size : 0, on ? "on" : "off");
	if (!offered) {
		ok(!on, "no time-slice extension offered: none turned on");
		skip(6, "the kernel offers no time-slice extension to this "
			"thread (Linux before 7.0, built without it, or a "
			"32-byte registration)");
		return;
	}
	if (getenv("URCU_MUTEX_SLICE_EXT")
			&& strcmp(getenv("URCU_MUTEX_SLICE_EXT"), "0") == 0) {
		urcu_mutex_lock(&slice_a);
		ret = slice_asked();
		urcu_mutex_unlock(&slice_a);
		ok(!on && !ret, "URCU_MUTEX_SLICE_EXT=0: never turned on nor asked");
		skip(6, "URCU_MUTEX_SLICE_EXT=0");
		return;
	}
	ok(on, "the first lock turned the thread's extension on");

	urcu_mutex_lock(&slice_a);
	ret = slice_asked();
	urcu_mutex_lock(&slice_b);
	urcu_mutex_unlock(&slice_b);
	ret &= slice_asked();
	urcu_mutex_lock(&slice_b);
	urcu_mutex_unlock(&slice_a);	/* not in the order taken */
	ret &= slice_asked();
	urcu_mutex_unlock(&slice_b);
	ok(ret && !slice_asked(),
		"asked for while any mutex is held, nested or not, and no "
		"more after the last unlock");

	ret = urcu_mutex_trylock(&slice_a) && slice_asked();
	urcu_mutex_unlock(&slice_a);
	ts = deadline_in(1000000);
	ret &= urcu_mutex_timedlock(&slice_a, &ts) == 0 && slice_asked();
	urcu_mutex_unlock(&slice_a);
	ret &= !slice_asked();
	/* Failed attempts and a refused unlock change nothing. */
	CMM_STORE_SHARED(release_held, 0);
	if (pthread_create(&t, NULL, slice_holder, NULL))
		bail_out("pthread_create");
	while (!OWNER_OF(&slice_b))
		usleep(1000);
	ret &= !urcu_mutex_trylock(&slice_b) && !slice_asked();
	ts = deadline_in(2000000);
	ret &= urcu_mutex_timedlock(&slice_b, &ts) == ETIMEDOUT && !slice_asked();
	urcu_mutex_lock(&slice_a);
	ret &= urcu_mutex_unlock(&slice_b) == EPERM && slice_asked();
	urcu_mutex_unlock(&slice_a);
	ret &= !slice_asked();
	CMM_STORE_SHARED(release_held, 1);
	pthread_join(t, NULL);
	ok(ret, "trylock and timedlock ask; a failed trylock, a timed-out "
		"timedlock and a refused unlock leave it as it was");

	slice_grants(&grants, &sections, &left);
	diag("time-slice extension: %lu of %lu sections granted", grants,
		sections);
	ok(grants > 0, "the kernel granted extensions to an owner that a "
		"thread on its CPU would preempt (%lu)", grants);
	ok(left == 0, "after every unlock nothing was left asked for or "
		"granted: each grant was given back (%lu)", left);
	ok(prctl(SLICE_PRCTL, SLICE_PRCTL_GET, 0, 0, 0) == 1,
		"still on afterwards");
	ret = slice_fork_and_exit();
	ok(!ret, "fork() while holding a mutex: the child keeps the extension "
		"on, nothing is left asked for after the unlocks of parent and "
		"child; threads created after one exited holding a mutex ask only "
		"while they hold one (failed step %d)", ret);
}

int main(void)
{
	plan_tests(35 + 5 + 5 + 2 + 1 + 7);
	test_args();
	test_ownership();
	test_exclusion(URCU_MUTEX_OWNER_DEFAULT, "default");
	test_exclusion(URCU_MUTEX_OWNER_NONE, "owner test off");
	test_exclusion(URCU_MUTEX_OWNER_ALL, "all signals (proc)");
	test_handoff();
	test_handoff_timeout();
	test_stale_bits();
	test_recycled_id();
	test_fork();
	test_blocking();
	test_slice_extension();
	return exit_status();
}
