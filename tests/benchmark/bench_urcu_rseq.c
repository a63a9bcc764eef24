// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu-rseq against liburcu's urcu-memb and urcu-bp, in one run:
 * - read lock+unlock, inline, 1/2/8 threads (ns per pair);
 * - synchronize_rcu latency with 10, 1000, 10000 threads that have read
 *   and then idle, blocked on a futex (median of the calls);
 * - call_rcu throughput (ns per callback, queue then rcu_barrier).
 * Rows: "name threads ns/op ratio-vs-baseline", median of 5 repetitions.
 * BENCH_FULL=1 runs longer.
 * TODO: move onto tests/benchmark/bench.h once it lands on main.
 */
#define _LGPL_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <urcu/urcu-memb.h>
#include <urcu/urcu-bp.h>
#include <urcu/urcu-rseq.h>
#include <urcu/uatomic.h>

#define REPS	5

enum flavor { RSEQ, MEMB, BP, NR_FLAVORS };
static const char *const names[] = { "urcu-rseq", "urcu-memb", "urcu-bp" };

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void row(const char *what, enum flavor f, int threads, double ns,
		double base)
{
	printf("%-28s %-10s %6d %10.1f ns/op  %5.2fx vs urcu-memb\n",
		what, names[f], threads, ns, ns / base);
}

/* Read side. */
static long read_iters = 2000000;
static pthread_barrier_t read_bar;

struct read_arg {
	enum flavor f;
	double ns;
};

static void *read_thread(void *p)
{
	struct read_arg *a = p;
	double t0;
	long i;

	if (a->f == MEMB)
		urcu_memb_register_thread();
	pthread_barrier_wait(&read_bar);
	t0 = now_ns();
	switch (a->f) {
	case RSEQ:
		for (i = 0; i < read_iters; i++) {
			urcu_rseq_read_lock();
			urcu_rseq_read_unlock();
		}
		break;
	case MEMB:
		for (i = 0; i < read_iters; i++) {
			urcu_memb_read_lock();
			urcu_memb_read_unlock();
		}
		break;
	default:
		for (i = 0; i < read_iters; i++) {
			urcu_bp_read_lock();
			urcu_bp_read_unlock();
		}
		break;
	}
	a->ns = (now_ns() - t0) / read_iters;
	if (a->f == MEMB)
		urcu_memb_unregister_thread();
	return NULL;
}

static double read_once(enum flavor f, int n)
{
	pthread_t t[8];
	struct read_arg a[8];
	double sum = 0;
	int i;

	pthread_barrier_init(&read_bar, NULL, n);
	for (i = 0; i < n; i++) {
		a[i].f = f;
		pthread_create(&t[i], NULL, read_thread, &a[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		sum += a[i].ns;
	}
	pthread_barrier_destroy(&read_bar);
	return sum / n;
}

static void bench_read(void)
{
	static const int counts[] = { 1, 2, 8 };
	double v[REPS], res[NR_FLAVORS];
	int c, f, r;

	for (c = 0; c < 3; c++) {
		for (f = 0; f < NR_FLAVORS; f++) {
			(void) read_once((enum flavor) f, counts[c]);	/* warm-up */
			for (r = 0; r < REPS; r++)
				v[r] = read_once((enum flavor) f, counts[c]);
			res[f] = median(v, REPS);
		}
		for (f = 0; f < NR_FLAVORS; f++)
			row("read_lock+unlock", (enum flavor) f, counts[c],
				res[f], res[MEMB]);
	}
}

/* Grace periods with many idle threads that have read. */
static int32_t idle_release;
static int idle_ready;

static void *idle_thread(void *p)
{
	(void) p;
	urcu_memb_register_thread();
	urcu_memb_read_lock();
	urcu_memb_read_unlock();
	urcu_bp_read_lock();
	urcu_bp_read_unlock();
	urcu_rseq_read_lock();
	urcu_rseq_read_unlock();
	uatomic_inc(&idle_ready);
	while (!uatomic_read(&idle_release))
		syscall(SYS_futex, &idle_release, FUTEX_WAIT_PRIVATE, 0,
			NULL, NULL, 0);
	urcu_memb_unregister_thread();
	return NULL;
}

static double sync_once(enum flavor f, int calls)
{
	double v[64], t0;
	int i, per = calls / REPS, r, k = 0;

	for (r = 0; r < REPS && k < 64; r++, k++) {
		t0 = now_ns();
		for (i = 0; i < per; i++) {
			if (f == RSEQ)
				urcu_rseq_synchronize_rcu();
			else if (f == MEMB)
				urcu_memb_synchronize_rcu();
			else
				urcu_bp_synchronize_rcu();
		}
		v[k] = (now_ns() - t0) / per;
	}
	return median(v, k);
}

static void bench_sync(int full)
{
	static const int counts[] = { 10, 1000, 10000 };
	double res[NR_FLAVORS];
	pthread_attr_t attr;
	pthread_t *t;
	int c, f, i;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (c = 0; c < 3; c++) {
		int n = counts[c];

		t = calloc(n, sizeof(*t));
		idle_release = 0;
		idle_ready = 0;
		for (i = 0; i < n; i++)
			if (pthread_create(&t[i], &attr, idle_thread, NULL))
				break;
		n = i;
		while (uatomic_read(&idle_ready) < n)
			usleep(1000);
		for (f = 0; f < NR_FLAVORS; f++) {
			(void) sync_once((enum flavor) f, 50);
			res[f] = sync_once((enum flavor) f, full ? 5000 : 500);
		}
		for (f = 0; f < NR_FLAVORS; f++)
			printf("%-28s %-10s %6d %10.1f ns/op  %5.2fx vs urcu-bp\n",
				"synchronize_rcu idle-thr", names[f], n, res[f],
				res[f] / res[BP]);
		uatomic_set(&idle_release, 1);
		syscall(SYS_futex, &idle_release, FUTEX_WAKE_PRIVATE, 1 << 30,
			NULL, NULL, 0);
		for (i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		free(t);
	}
	pthread_attr_destroy(&attr);
}

/* call_rcu throughput. */
static void cb_free(struct rcu_head *h)
{
	free(h);
}

static double callrcu_once(enum flavor f, long n)
{
	double t0 = now_ns();
	long i;

	for (i = 0; i < n; i++) {
		struct rcu_head *h = malloc(sizeof(*h));

		if (f == RSEQ)
			urcu_rseq_call_rcu(h, cb_free);
		else
			urcu_memb_call_rcu(h, cb_free);
	}
	if (f == RSEQ)
		urcu_rseq_barrier();
	else
		urcu_memb_barrier();
	return (now_ns() - t0) / n;
}

static void bench_call_rcu(long n)
{
	double v[REPS], res[2];
	int f, r;

	urcu_memb_register_thread();
	for (f = 0; f < 2; f++) {
		(void) callrcu_once((enum flavor) f, n / 10);
		for (r = 0; r < REPS; r++)
			v[r] = callrcu_once((enum flavor) f, n);
		res[f] = median(v, REPS);
	}
	for (f = 0; f < 2; f++)
		row("call_rcu+barrier", (enum flavor) f, 1, res[f], res[MEMB]);
	urcu_memb_unregister_thread();
}

int main(void)
{
	const char *e = getenv("BENCH_FULL");
	int full = e && *e && strcmp(e, "0");

	if (full)
		read_iters *= 10;
	printf("# %-26s %-10s %6s %10s\n", "benchmark", "flavor", "thr", "ns/op");
	bench_read();
	bench_sync(full);
	bench_call_rcu(full ? 2000000 : 200000);
	return 0;
}
