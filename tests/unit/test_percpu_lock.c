// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU spinlock API: creation and bad input, lock/trylock/unlock on the
 * local and the remote path, lock_all excluding every other locker, and a
 * short mutual-exclusion run with more threads than CPUs; fork() while a
 * remote request of another thread is pending on a shard the forking
 * thread holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/lock.h>

#include "tap.h"
#include "stress.h"
#include "lifecycle.h"

struct trylock_arg {
	struct urcu_percpu_lock *l;
	int cpu;
	bool got;
	int err;
};

static void *trylock_thread(void *p)
{
	struct trylock_arg *a = p;

	errno = 0;
	a->got = urcu_percpu_trylock_cpu(a->l, a->cpu);
	a->err = errno;
	if (a->got)
		urcu_percpu_unlock(a->l, a->cpu);
	return NULL;
}

/* trylock from another thread, so that the caller's own hold is tested. */
static bool other_trylock(struct urcu_percpu_lock *l, int cpu, int *err)
{
	struct trylock_arg a = { l, cpu, false, 0 };
	pthread_t t;

	if (pthread_create(&t, NULL, trylock_thread, &a))
		bail_out("pthread_create");
	pthread_join(t, NULL);
	*err = a.err;
	return a.got;
}

static void test_create(void)
{
	struct urcu_percpu_lock *l;

	errno = 0;
	ok(urcu_percpu_lock_create(1U << 5) == NULL && errno == EINVAL,
		"create with an unknown flag: NULL, EINVAL");
	l = urcu_percpu_lock_create(0);
	ok(l && urcu_percpu_lock_nr_shards(l) == urcu_rseq_nr_cpus(),
		"one shard per possible CPU (%d)", urcu_rseq_nr_cpus());
	urcu_percpu_lock_destroy(l);
	l = urcu_percpu_lock_create(URCU_PERCPU_MM_CID);
	ok(l && urcu_percpu_lock_nr_shards(l) == urcu_rseq_nr_cpus(),
		"mm_cid shards");
	urcu_percpu_lock_destroy(l);
	urcu_percpu_lock_destroy(NULL);
	errno = 0;
	ok(urcu_percpu_lock_nr_shards(NULL) == -1 && errno == EINVAL,
		"nr_shards(NULL): -1, EINVAL");
}

static void test_basic(unsigned int flags, const char *name)
{
	struct urcu_percpu_lock *l = urcu_percpu_lock_create(flags);
	int nr = urcu_percpu_lock_nr_shards(l), idx, err, other;
	/* What @remote rests at: 0, or 1 for a lock without a fast path. */
	intptr_t rest = l->fast ? 0 : 1;
	bool got;

	idx = urcu_percpu_lock(l);
	ok(idx >= 0 && idx < nr, "%s: lock returns a shard (%d)", name, idx);
	got = other_trylock(l, idx, &err);
	ok(!got && err == EBUSY, "%s: held shard: trylock fails, EBUSY", name);
	urcu_percpu_unlock(l, idx);
	ok(l->shards[idx].lock == 0 && l->shards[idx].remote == rest,
		"%s: unlock frees the shard", name);
	got = other_trylock(l, idx, &err);
	ok(got, "%s: free shard: trylock from another thread", name);

	/* Remote path on a shard we are probably not running on. */
	other = (idx + 1) % nr;
	urcu_percpu_lock_cpu(l, other);
	got = other_trylock(l, other, &err);
	ok(!got && err == EBUSY, "%s: lock_cpu(%d) excludes", name, other);
	urcu_percpu_unlock(l, other);
	ok(l->shards[other].lock == 0 && l->shards[other].remote == rest,
		"%s: remote unlock gives back the remote request", name);

	ok(urcu_percpu_trylock_cpu(l, other), "%s: trylock_cpu(%d)", name,
		other);
	urcu_percpu_unlock(l, other);

	urcu_percpu_lock_all(l);
	got = other_trylock(l, nr - 1, &err) || other_trylock(l, 0, &err);
	ok(!got, "%s: lock_all excludes shards 0 and %d", name, nr - 1);
	urcu_percpu_unlock_all(l);
	err = 0;
	for (idx = 0; idx < nr; idx++)
		if (l->shards[idx].lock || l->shards[idx].remote != rest)
			err++;
	ok(err == 0, "%s: unlock_all frees every shard", name);
	urcu_percpu_lock_destroy(l);
}

static void test_bad_index(void)
{
	struct urcu_percpu_lock *l = urcu_percpu_lock_create(0);
	int nr = urcu_percpu_lock_nr_shards(l);

	errno = 0;
	ok(!urcu_percpu_trylock_cpu(l, -1) && errno == EINVAL,
		"trylock_cpu(-1): false, EINVAL");
	errno = 0;
	ok(!urcu_percpu_trylock_cpu(l, nr) && errno == EINVAL,
		"trylock_cpu(nr): false, EINVAL");
	errno = 0;
	ok(!urcu_percpu_trylock_cpu(NULL, 0) && errno == EINVAL,
		"trylock_cpu(NULL): false, EINVAL");
#ifdef URCU_RSEQ_DEBUG
	{
		int status, i;
		pid_t pid;

		for (i = 0; i < 3; i++) {
			pid = fork();
			if (pid == 0) {
				/* Keep the expected abort message off the log. */
				if (!freopen("/dev/null", "w", stderr))
					_exit(1);
				if (i == 0)
					urcu_percpu_lock_cpu(l, nr);
				else if (i == 1)
					urcu_percpu_unlock(l, -1);
				else
					urcu_percpu_unlock(l, 0);
				_exit(0);
			}
			waitpid(pid, &status, 0);
			ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
				"debug build: %s aborts",
				i == 0 ? "lock_cpu(nr)" : i == 1 ?
				"unlock(-1)" : "unlock of a free shard");
		}
	}
#else
	errno = 0;
	urcu_percpu_lock_cpu(l, nr);
	ok(errno == EINVAL, "lock_cpu(nr): EINVAL");
	errno = 0;
	urcu_percpu_unlock(l, -1);
	ok(errno == EINVAL, "unlock(-1): EINVAL");
	errno = 0;
	urcu_percpu_unlock(l, 0);
	ok(errno == EINVAL && l->shards[0].lock == 0,
		"unlock of a free shard: EINVAL, nothing changed");
#endif
	urcu_percpu_lock_destroy(l);
}

struct mutex_test {
	struct urcu_percpu_lock *l;
	unsigned long *counter;		/* per shard, non-atomic */
	unsigned long *inside;
	unsigned long total, overlaps;
};

static void mutex_worker(struct stress_thread *t)
{
	struct mutex_test *m = t->arg;
	int nr = urcu_percpu_lock_nr_shards(m->l);
	unsigned long n = 0;

	while (!stress_should_stop(t)) {
		int idx;

		if (t->id == 0) {
			idx = (int) stress_rand_below(t, (uint32_t) nr);
			urcu_percpu_lock_cpu(m->l, idx);
		} else {
			idx = urcu_percpu_lock(m->l);
		}
		if (CMM_LOAD_SHARED(m->inside[idx]))
			uatomic_inc(&m->overlaps);
		CMM_STORE_SHARED(m->inside[idx], 1);
		CMM_STORE_SHARED(m->counter[idx], m->counter[idx] + 1);
		CMM_STORE_SHARED(m->inside[idx], 0);
		urcu_percpu_unlock(m->l, idx);
		n++;
	}
	uatomic_add(&m->total, n);
}

static void test_mutual_exclusion(void)
{
	struct mutex_test m = { 0 };
	unsigned long sum = 0;
	int nr, i;

	m.l = urcu_percpu_lock_create(0);
	nr = urcu_percpu_lock_nr_shards(m.l);
	m.counter = calloc((size_t) nr, sizeof(*m.counter));
	m.inside = calloc((size_t) nr, sizeof(*m.inside));
	if (!m.counter || !m.inside)
		bail_out("out of memory");
	stress_run_ms(mutex_worker, &m, 8, STRESS_MIGRATIONS | STRESS_QUIET,
		200, NULL);
	for (i = 0; i < nr; i++)
		sum += m.counter[i];
	ok(m.overlaps == 0 && sum == m.total && m.total > 0,
		"8 threads on %d CPUs: %lu locks, counters sum exactly, "
		"%lu overlaps", stress_nr_cpus(), m.total, m.overlaps);
	free(m.counter);
	free(m.inside);
	urcu_percpu_lock_destroy(m.l);
}

/*
 * fork() while the forking thread holds shard 0 and another thread waits
 * for it on the remote path: in the child, that request is gone; the
 * forking thread unlocks, and every shard must be back at rest (a
 * leftover remote count would keep the fast path off for good).
 */
static struct urcu_percpu_lock *fp_lock;

static void *fp_waiter(void *arg)
{
	(void) arg;
	urcu_percpu_lock_cpu(fp_lock, 0);
	urcu_percpu_unlock(fp_lock, 0);
	return NULL;
}

static int fp_child(void *arg)
{
	struct urcu_percpu_lock *l = fp_lock;
	intptr_t rest = l->fast ? 0 : 1;
	int i, bad = 0;

	(void) arg;
	urcu_percpu_unlock(l, 0);
	for (i = 0; i < l->nr_shards; i++)
		if (l->shards[i].lock || l->shards[i].remote != rest)
			bad++;
	urcu_percpu_lock_all(l);
	urcu_percpu_unlock_all(l);
	i = urcu_percpu_lock(l);
	urcu_percpu_unlock(l, i);
	urcu_percpu_lock_destroy(l);
	return bad;
}

static void test_fork_pending(void)
{
	enum stress_fork_result r;
	intptr_t want;
	pthread_t t;

	fp_lock = urcu_percpu_lock_create(0);
	if (!fp_lock)
		bail_out("urcu_percpu_lock_create");
	urcu_percpu_lock_cpu(fp_lock, 0);
	/* Our own unit when we took it by compare-and-swap, plus the waiter's. */
	want = (fp_lock->shards[0].lock == _URCU_PERCPU_LOCK_CAS) + 1;
	if (pthread_create(&t, NULL, fp_waiter, NULL))
		bail_out("pthread_create");
	if (fp_lock->fast)
		while (uatomic_read(&fp_lock->shards[0].remote) < want)
			usleep(100);
	else
		usleep(10000);	/* no remote count to see: most likely waiting */
	r = stress_fork_check(fp_child, NULL, 10000);
	urcu_percpu_unlock(fp_lock, 0);
	pthread_join(t, NULL);
	urcu_percpu_lock_destroy(fp_lock);
	ok(r == STRESS_FORK_OK, "fork holding shard 0 while another thread "
		"waits for it remotely: the child unlocks, every shard at rest, "
		"lock_all, lock, destroy (%s)", r == STRESS_FORK_OK ? "ok" :
		r == STRESS_FORK_HUNG ? "hung" : "failed");
}

int main(void)
{
	plan_tests(4 + 9 + 9 + 6 + 1 + 1);
	test_create();
	test_basic(0, "cpu");
	test_basic(URCU_PERCPU_MM_CID, "mm_cid");
	test_bad_index();
	test_mutual_exclusion();
	test_fork_pending();
	return exit_status();
}
