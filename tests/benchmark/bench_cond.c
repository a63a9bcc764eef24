// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Benchmarks of wait-stacks, urcu_cond and event counts against
 * pthread_cond and Concurrency Kit's ck_ec, on the same run:
 * - ping-pong round trip, 2 threads on 2 CPUs: urcu_cond, urcu_wait vs
 *   pthread_cond;
 * - 4 ping-pong pairs on 2 CPUs (oversubscribed) vs pthread_cond;
 * - thread-pool dispatch, 1 producer and N workers, ~1 us tasks, N = 2, 8,
 *   32: ns per task, urcu_cond pool vs pthread_mutex + pthread_cond pool;
 * - broadcast to 64 waiters: time until the last one runs;
 * - event counts: ping-pong round trip and notify without waiters, vs ck_ec.
 * BENCH_FULL=1 runs ten times as many operations.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <urcu/uatomic.h>
#include <urcu/cond.h>

#ifdef HAVE_CK
#include <ck_ec.h>
#endif

/*
 * The shared harness (tests/benchmark/bench.h) had not landed when this was
 * written: the few lines below measure the same way it is specified to
 * (warm-up, 5 repetitions, median, baseline from the same run, one row
 * "name threads ns/op ratio") and are to be replaced by it.
 */
#define BENCH_REPS	5

static int bench_nr_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int) n : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

typedef double (*bench_fn)(const void *cfg);

static double bench_median(bench_fn fn, const void *cfg)
{
	double r[BENCH_REPS];
	int i;

	(void) fn(cfg);	/* warm-up */
	for (i = 0; i < BENCH_REPS; i++)
		r[i] = fn(cfg);
	qsort(r, BENCH_REPS, sizeof(r[0]), cmp_double);
	return r[BENCH_REPS / 2];
}

/* One row; @baseline 0 prints the baseline row itself. */
static double bench_row(const char *name, int threads, bench_fn fn,
		const void *cfg, double baseline)
{
	double v = bench_median(fn, cfg);

	if (baseline > 0)
		printf("%-40s %4d %12.1f %8.3f\n", name, threads, v, v / baseline);
	else
		printf("%-40s %4d %12.1f %8s\n", name, threads, v, "base");
	fflush(stdout);
	return v;
}

static unsigned long scale = 1;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % bench_nr_cpus(), &set);
	(void) pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* What a waiting scheme provides to the ping-pong and pool workloads. */
enum kind { PTHREAD, URCU_COND, URCU_WAIT };

/* Ping-pong: two threads pass a turn back and forth. */
struct pair {
	pthread_mutex_t lock;
	pthread_cond_t pc[2];
	struct urcu_cond uc[2];
	struct urcu_wait_queue wq[2];
	int turn;
	enum kind kind;
	long rounds;
	int cpu[2];
} __attribute__((aligned(128)));

struct player {
	struct pair *p;
	int me;
};

static void *cond_player(void *arg)
{
	struct player *pl = (struct player *) arg;
	struct pair *p = pl->p;
	int me = pl->me;
	long i;

	pin(p->cpu[me]);
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->rounds; i++) {
		while (p->turn != me) {
			if (p->kind == PTHREAD)
				pthread_cond_wait(&p->pc[me], &p->lock);
			else
				urcu_cond_wait(&p->uc[me], &p->lock);
		}
		p->turn = !me;
		if (p->kind == PTHREAD)
			pthread_cond_signal(&p->pc[!me]);
		else
			urcu_cond_signal(&p->uc[!me]);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void *wait_player(void *arg)
{
	static const struct timespec already = { 0, 0 };
	struct player *pl = (struct player *) arg;
	struct pair *p = pl->p;
	struct urcu_wait_node node;
	int me = pl->me;
	long i;

	pin(p->cpu[me]);
	for (i = 0; i < p->rounds; i++) {
		urcu_wait_node_init(&node);
		urcu_wait_add(&p->wq[me], &node);
		/* Queued before looking: the other side's wake finds us. */
		if (uatomic_read(&p->turn) != me)
			urcu_wait(&node, NULL);
		else
			urcu_wait(&node, &already);
		while (uatomic_read(&p->turn) != me)
			caa_cpu_relax();
		uatomic_set(&p->turn, !me);
		urcu_wait_wake_one(&p->wq[!me]);
	}
	return NULL;
}

static double run_pingpong(enum kind kind, int pairs, long rounds)
{
	struct pair *p = calloc(pairs, sizeof(*p));
	struct player *pl = calloc(2 * pairs, sizeof(*pl));
	pthread_t *t = calloc(2 * pairs, sizeof(*t));
	int64_t start;
	int i;

	for (i = 0; i < pairs; i++) {
		pthread_mutex_init(&p[i].lock, NULL);
		pthread_cond_init(&p[i].pc[0], NULL);
		pthread_cond_init(&p[i].pc[1], NULL);
		p[i].kind = kind;
		p[i].rounds = rounds;
		p[i].cpu[0] = 0;
		p[i].cpu[1] = 1;
	}
	start = now_ns();
	for (i = 0; i < 2 * pairs; i++) {
		pl[i].p = &p[i / 2];
		pl[i].me = i % 2;
		pthread_create(&t[i], NULL,
			kind == URCU_WAIT ? wait_player : cond_player, &pl[i]);
	}
	for (i = 0; i < 2 * pairs; i++)
		pthread_join(t[i], NULL);
	start = now_ns() - start;
	free(p);
	free(pl);
	free(t);
	return (double) start / rounds;
}

/* Thread pool: one producer, N workers, tasks of about 1 us. */
#define POOL_QSIZE	256

static struct pool {
	pthread_mutex_t lock;
	pthread_cond_t p_nonempty, p_nonfull;
	struct urcu_cond u_nonempty, u_nonfull;
	enum kind kind;
	unsigned int head, count;
	int tasks[POOL_QSIZE];
	int done;
	long executed;
} pool;

static long task_loops;	/* calibrated to ~1 us */

static void task(int v)
{
	volatile long x = v;
	long i;

	for (i = 0; i < task_loops; i++)
		x += i;
}

static void pool_wait(pthread_cond_t *pc, struct urcu_cond *uc)
{
	if (pool.kind == PTHREAD)
		pthread_cond_wait(pc, &pool.lock);
	else
		urcu_cond_wait(uc, &pool.lock);
}

static void pool_signal(pthread_cond_t *pc, struct urcu_cond *uc)
{
	if (pool.kind == PTHREAD)
		pthread_cond_signal(pc);
	else
		urcu_cond_signal(uc);
}

static void *pool_worker(void *arg)
{
	long n = 0;
	int v;

	pthread_mutex_lock(&pool.lock);
	for (;;) {
		while (!pool.count && !pool.done)
			pool_wait(&pool.p_nonempty, &pool.u_nonempty);
		if (!pool.count)
			break;
		v = pool.tasks[pool.head];
		pool.head = (pool.head + 1) % POOL_QSIZE;
		pool.count--;
		pthread_mutex_unlock(&pool.lock);
		pool_signal(&pool.p_nonfull, &pool.u_nonfull);
		task(v);
		n++;
		pthread_mutex_lock(&pool.lock);
	}
	pool.executed += n;
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

static double run_pool(enum kind kind, int workers, long tasks)
{
	pthread_t *t = calloc(workers, sizeof(*t));
	int64_t start;
	long i;

	memset(&pool, 0, sizeof(pool));
	pthread_mutex_init(&pool.lock, NULL);
	pthread_cond_init(&pool.p_nonempty, NULL);
	pthread_cond_init(&pool.p_nonfull, NULL);
	pool.kind = kind;
	for (i = 0; i < workers; i++)
		pthread_create(&t[i], NULL, pool_worker, NULL);
	start = now_ns();
	for (i = 0; i < tasks; i++) {
		pthread_mutex_lock(&pool.lock);
		while (pool.count == POOL_QSIZE)
			pool_wait(&pool.p_nonfull, &pool.u_nonfull);
		pool.tasks[(pool.head + pool.count++) % POOL_QSIZE] = (int) i;
		pthread_mutex_unlock(&pool.lock);
		pool_signal(&pool.p_nonempty, &pool.u_nonempty);
	}
	pthread_mutex_lock(&pool.lock);
	pool.done = 1;
	pthread_mutex_unlock(&pool.lock);
	if (kind == PTHREAD)
		pthread_cond_broadcast(&pool.p_nonempty);
	else
		urcu_cond_broadcast(&pool.u_nonempty);
	for (i = 0; i < workers; i++)
		pthread_join(t[i], NULL);
	start = now_ns() - start;
	free(t);
	if (pool.executed != tasks) {
		fprintf(stderr, "bench_cond: pool lost tasks\n");
		exit(1);
	}
	return (double) start / tasks;
}

/* Broadcast to 64 waiters: from the broadcast until the last one runs. */
#define NR_BCAST	64

static struct {
	pthread_mutex_t lock;
	pthread_cond_t pc;
	struct urcu_cond uc;
	enum kind kind;
	int go, waiting;
	int64_t last;
} bc;

static void *bc_waiter(void *arg)
{
	int64_t t;

	pthread_mutex_lock(&bc.lock);
	bc.waiting++;
	while (!bc.go) {
		if (bc.kind == PTHREAD)
			pthread_cond_wait(&bc.pc, &bc.lock);
		else
			urcu_cond_wait(&bc.uc, &bc.lock);
	}
	t = now_ns();
	if (t > bc.last)
		bc.last = t;
	pthread_mutex_unlock(&bc.lock);
	return NULL;
}

static double run_broadcast(enum kind kind)
{
	pthread_t t[NR_BCAST];
	int64_t start;
	int i, n;

	memset(&bc, 0, sizeof(bc));
	pthread_mutex_init(&bc.lock, NULL);
	pthread_cond_init(&bc.pc, NULL);
	bc.kind = kind;
	for (i = 0; i < NR_BCAST; i++)
		pthread_create(&t[i], NULL, bc_waiter, NULL);
	do {
		usleep(1000);
		pthread_mutex_lock(&bc.lock);
		n = bc.waiting;
		pthread_mutex_unlock(&bc.lock);
	} while (n < NR_BCAST);
	usleep(5000);	/* let the spinners fall asleep */
	pthread_mutex_lock(&bc.lock);
	bc.go = 1;
	start = now_ns();
	if (kind == PTHREAD)
		pthread_cond_broadcast(&bc.pc);
	else
		urcu_cond_broadcast(&bc.uc);
	pthread_mutex_unlock(&bc.lock);
	for (i = 0; i < NR_BCAST; i++)
		pthread_join(t[i], NULL);
	return (double) (bc.last - start);
}

/* Event counts: ping-pong through two counters, and notify without waiters. */
#ifdef HAVE_CK
static int ck_gettime(const struct ck_ec_ops *ops, struct timespec *out)
{
	return clock_gettime(CLOCK_MONOTONIC, out);
}

static void ck_wait32(const struct ck_ec_wait_state *st, const uint32_t *addr,
		uint32_t expected, const struct timespec *deadline)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
		expected, deadline, NULL, FUTEX_BITSET_MATCH_ANY);
}

static void ck_wake32(const struct ck_ec_ops *ops, const uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT32_MAX,
		NULL, NULL, 0);
}

static const struct ck_ec_ops ck_ops = {
	.gettime = ck_gettime,
	.wait32 = ck_wait32,
	.wake32 = ck_wake32,
};
static const struct ck_ec_mode ck_mode = { .ops = &ck_ops, .single_producer = false };
static struct ck_ec32 ck_ecs[2];
#endif

static struct urcu_ec u_ecs[2];
static int ec_turn;
static long ec_rounds;
static int ec_use_ck;

static void *ec_player(void *arg)
{
	int me = (int) (intptr_t) arg;
	long i;

	pin(me);
	for (i = 0; i < ec_rounds; i++) {
		if (!ec_use_ck) {
			for (;;) {
				uint32_t key = urcu_ec_prepare(&u_ecs[me]);

				if (uatomic_read(&ec_turn) == me)
					break;
				urcu_ec_wait(&u_ecs[me], key, NULL);
			}
			uatomic_set(&ec_turn, !me);
			urcu_ec_notify(&u_ecs[!me]);
#ifdef HAVE_CK
		} else {
			for (;;) {
				uint32_t v = ck_ec32_value(&ck_ecs[me]);

				if (uatomic_read(&ec_turn) == me)
					break;
				ck_ec32_wait(&ck_ecs[me], &ck_mode, v, NULL);
			}
			uatomic_set(&ec_turn, !me);
			ck_ec32_inc(&ck_ecs[!me], &ck_mode);
#endif
		}
	}
	return NULL;
}

static double run_ec_pingpong(int use_ck, long rounds)
{
	pthread_t t[2];
	int64_t start;
	int i;

	memset(u_ecs, 0, sizeof(u_ecs));
#ifdef HAVE_CK
	memset(ck_ecs, 0, sizeof(ck_ecs));
#endif
	ec_turn = 0;
	ec_rounds = rounds;
	ec_use_ck = use_ck;
	start = now_ns();
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, ec_player, (void *) (intptr_t) i);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return (double) (now_ns() - start) / rounds;
}

static double run_ec_notify(int use_ck, long n)
{
	int64_t start = now_ns();
	long i;

	memset(u_ecs, 0, sizeof(u_ecs));
	for (i = 0; i < n; i++) {
		if (!use_ck)
			urcu_ec_notify(&u_ecs[0]);
#ifdef HAVE_CK
		else
			ck_ec32_inc(&ck_ecs[0], &ck_mode);
#endif
	}
	return (double) (now_ns() - start) / n;
}

static void calibrate_task(void)
{
	int64_t t;

	task_loops = 1000;
	for (;;) {
		t = now_ns();
		task(0);
		t = now_ns() - t;
		if (t >= 1000 || task_loops > (1L << 24))
			break;
		task_loops *= 2;
	}
	task_loops = task_loops * 1000 / (t ? t : 1);
}

/* Adapters: one configuration struct for every row. */
struct cfg {
	enum kind kind;
	int n;		/* pairs, workers */
	long ops;
	int use_ck;
};

static double b_pingpong(const void *c)
{
	const struct cfg *x = (const struct cfg *) c;

	return run_pingpong(x->kind, x->n, x->ops);
}

static double b_pool(const void *c)
{
	const struct cfg *x = (const struct cfg *) c;

	return run_pool(x->kind, x->n, x->ops);
}

static double b_broadcast(const void *c)
{
	return run_broadcast(((const struct cfg *) c)->kind);
}

static double b_ec_pingpong(const void *c)
{
	const struct cfg *x = (const struct cfg *) c;

	return run_ec_pingpong(x->use_ck, x->ops);
}

static double b_ec_notify(const void *c)
{
	const struct cfg *x = (const struct cfg *) c;

	return run_ec_notify(x->use_ck, x->ops);
}

int main(void)
{
	static const int pool_sizes[3] = { 2, 8, 32 };
	struct cfg c;
	double base;
	char name[64];
	int i;

	if (getenv("BENCH_FULL"))
		scale = 10;
	calibrate_task();
	printf("# %-38s %4s %12s %8s\n", "benchmark", "thr", "ns/op", "ratio");

	c = (struct cfg) { PTHREAD, 1, 20000 * scale, 0 };
	base = bench_row("pingpong_rtt pthread_cond", 2, b_pingpong, &c, 0);
	c.kind = URCU_COND;
	c.ops = 200000 * scale;
	bench_row("pingpong_rtt urcu_cond", 2, b_pingpong, &c, base);
	c.kind = URCU_WAIT;
	bench_row("pingpong_rtt urcu_wait", 2, b_pingpong, &c, base);

	c = (struct cfg) { PTHREAD, 4, 10000 * scale, 0 };
	base = bench_row("pingpong_rtt_4pairs pthread_cond", 8, b_pingpong, &c, 0);
	c.kind = URCU_COND;
	bench_row("pingpong_rtt_4pairs urcu_cond", 8, b_pingpong, &c, base);

	for (i = 0; i < 3; i++) {
		c = (struct cfg) { PTHREAD, pool_sizes[i], 100000 * scale, 0 };
		snprintf(name, sizeof(name), "pool_1us_task pthread_cond N=%d",
			pool_sizes[i]);
		base = bench_row(name, pool_sizes[i] + 1, b_pool, &c, 0);
		c.kind = URCU_COND;
		snprintf(name, sizeof(name), "pool_1us_task urcu_cond N=%d",
			pool_sizes[i]);
		bench_row(name, pool_sizes[i] + 1, b_pool, &c, base);
	}

	c = (struct cfg) { PTHREAD, NR_BCAST, 1, 0 };
	base = bench_row("broadcast_64_last_runs pthread_cond", 65, b_broadcast, &c, 0);
	c.kind = URCU_COND;
	bench_row("broadcast_64_last_runs urcu_cond", 65, b_broadcast, &c, base);

#ifdef HAVE_CK
	c = (struct cfg) { PTHREAD, 1, 200000 * scale, 1 };
	base = bench_row("ec_pingpong_rtt ck_ec", 2, b_ec_pingpong, &c, 0);
	c.use_ck = 0;
	bench_row("ec_pingpong_rtt urcu_ec", 2, b_ec_pingpong, &c, base);
	c = (struct cfg) { PTHREAD, 1, 10000000 * scale, 1 };
	base = bench_row("ec_notify_no_waiter ck_ec", 1, b_ec_notify, &c, 0);
	c.use_ck = 0;
	bench_row("ec_notify_no_waiter urcu_ec", 1, b_ec_notify, &c, base);
#else
	printf("# ck_ec rows skipped: configure found no libck\n");
#endif
	return 0;
}
