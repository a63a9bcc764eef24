// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Benchmarks of wait-stacks, urcu_cond and event counts against
 * pthread_cond and Concurrency Kit's ck_ec, through the shared harness.
 * Hand-off workloads have two roles: the harness threads are the
 * initiators (their ops are what is timed), and setup() starts the other
 * role (responders, pool workers, broadcast waiters), teardown() stops it.
 * - pingpong: one op is a round trip; 1 pair on 2 CPUs, 4 pairs on 2 CPUs
 *   (oversubscribed): urcu_cond, urcu_wait vs pthread_cond;
 * - pool: one op is a ~1 us task handed by the producer to N = 2, 8, 32
 *   workers through a bounded queue: urcu_cond vs pthread_mutex +
 *   pthread_cond (ns/op is the inverse of tasks per second); pool_ceiling
 *   runs the task back to back on every CPU, with no queue: the tasks per
 *   second this machine can give any pool (the producer needs some too);
 *   pool_1us_task_every_Xus: 8 workers, and a producer that does X us of
 *   its own work before each task, so that tasks arrive slower than the
 *   workers can run them (X = 2: close to saturated on 2 CPUs; 32: mostly
 *   idle) and most find their worker asleep. Latency (p50/p99): from a
 *   task's submission to a worker taking it; cpu-ns/op leaves out the
 *   producer's X us of work (its thread's CPU clock around one gap in
 *   16): on a busy machine that work's CPU time alone varied from 45 to
 *   77 us per task between runs (this VM's speed varies: three starts
 *   calibrated the task to 2,450-3,580 loops), and hid what the pool
 *   itself cost;
 *   pool_1us_task_Nk_per_s: 8 workers, and tasks that arrive on a
 *   schedule, N thousand per second, whatever the pool is doing; latency
 *   counts from a task's arrival on it (op_submit_at_rate());
 * - broadcast64: one op is a broadcast to 64 waiters until the last has
 *   run, and their return to waiting;
 * - ec: event-count round trip and notify without waiters, vs ck_ec.
 * Latency of a ping-pong: its round trip. Every group runs again as
 * GROUP_busy with a spinning process on every CPU (BENCH_HOG): servers
 * run on busy machines.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <urcu/uatomic.h>
#include <urcu/cond.h>

#ifdef HAVE_CK
#include <ck_ec.h>
#endif

#include "bench.h"

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % bench_nr_cpus(), &set);
	(void) pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

enum kind { PTHREAD, URCU_COND, URCU_WAIT, URCU_EC, CK_EC };

#define MAX_PAIRS	8

/* Ping-pong: the initiator hands the turn over and waits for it back. */
struct pair {
	pthread_mutex_t lock;
	pthread_cond_t pc[2];
	struct urcu_cond uc[2];
	struct urcu_wait_queue wq[2];
	struct urcu_ec ec[2];
#ifdef HAVE_CK
	struct ck_ec32 ck[2];
#endif
	int turn;	/* 1: the responder's */
	int stop;
	pthread_t responder;
	enum kind kind;
	int cpu;
} __attribute__((aligned(128)));

struct pingpong {
	enum kind kind;
	unsigned int nr;
	struct pair pairs[MAX_PAIRS];
};

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
#endif

/* Give the turn to side @to of @p and wake it. */
static void give_turn(struct pair *p, int to)
{
	switch (p->kind) {
	case PTHREAD:
	case URCU_COND:
		pthread_mutex_lock(&p->lock);
		p->turn = to;
		pthread_mutex_unlock(&p->lock);
		if (p->kind == PTHREAD)
			pthread_cond_signal(&p->pc[to]);
		else
			urcu_cond_signal(&p->uc[to]);
		break;
	case URCU_WAIT:
		uatomic_set(&p->turn, to);
		urcu_wait_wake_one(&p->wq[to]);
		break;
	case URCU_EC:
		uatomic_set(&p->turn, to);
		urcu_ec_notify(&p->ec[to]);
		break;
	case CK_EC:
#ifdef HAVE_CK
		uatomic_set(&p->turn, to);
		ck_ec32_inc(&p->ck[to], &ck_mode);
#endif
		break;
	}
}

/* Wait until the turn is @me's or the pair stops; returns false on stop. */
static bool take_turn(struct pair *p, int me)
{
	static const struct timespec already = { 0, 0 };
	struct urcu_wait_node node;
	uint32_t key;

	switch (p->kind) {
	case PTHREAD:
	case URCU_COND:
		pthread_mutex_lock(&p->lock);
		while (p->turn != me && !p->stop) {
			if (p->kind == PTHREAD)
				pthread_cond_wait(&p->pc[me], &p->lock);
			else
				urcu_cond_wait(&p->uc[me], &p->lock);
		}
		pthread_mutex_unlock(&p->lock);
		break;
	case URCU_WAIT:
		while (uatomic_read(&p->turn) != me && !uatomic_read(&p->stop)) {
			urcu_wait_node_init(&node);
			urcu_wait_add(&p->wq[me], &node);
			/* Queued before looking: the other side's wake finds us. */
			if (uatomic_read(&p->turn) == me || uatomic_read(&p->stop))
				urcu_wait(&node, &already);
			else
				urcu_wait(&node, NULL);
		}
		break;
	case URCU_EC:
		for (;;) {
			key = urcu_ec_prepare(&p->ec[me]);
			if (uatomic_read(&p->turn) == me || uatomic_read(&p->stop))
				break;
			urcu_ec_wait(&p->ec[me], key, NULL);
		}
		break;
	case CK_EC:
#ifdef HAVE_CK
		for (;;) {
			key = ck_ec32_value(&p->ck[me]);
			if (uatomic_read(&p->turn) == me || uatomic_read(&p->stop))
				break;
			ck_ec32_wait(&p->ck[me], &ck_mode, key, NULL);
		}
#endif
		break;
	}
	return !uatomic_read(&p->stop);
}

static void *responder(void *arg)
{
	struct pair *p = (struct pair *) arg;

	pin(p->cpu);
	while (take_turn(p, 1))
		give_turn(p, 0);
	return NULL;
}

static int pingpong_setup(void *arg, unsigned int threads)
{
	struct pingpong *pp = (struct pingpong *) arg;
	unsigned int i;

	if (threads > MAX_PAIRS)
		return 1;
	memset(pp->pairs, 0, sizeof(pp->pairs));
	pp->nr = threads;
	for (i = 0; i < threads; i++) {
		struct pair *p = &pp->pairs[i];

		pthread_mutex_init(&p->lock, NULL);
		pthread_cond_init(&p->pc[0], NULL);
		pthread_cond_init(&p->pc[1], NULL);
		p->kind = pp->kind;
		p->cpu = (int) i + 1;	/* the harness pins initiator i on CPU i */
		pthread_create(&p->responder, NULL, responder, p);
	}
	return 0;
}

static void pingpong_teardown(void *arg)
{
	struct pingpong *pp = (struct pingpong *) arg;
	unsigned int i;

	for (i = 0; i < pp->nr; i++) {
		struct pair *p = &pp->pairs[i];

		pthread_mutex_lock(&p->lock);
		uatomic_set(&p->stop, 1);
		pthread_mutex_unlock(&p->lock);
		give_turn(p, 1);
		pthread_join(p->responder, NULL);
		pthread_cond_destroy(&p->pc[0]);
		pthread_cond_destroy(&p->pc[1]);
	}
}

static void *pingpong_thread_arg(void *arg, unsigned int id)
{
	return &((struct pingpong *) arg)->pairs[id % MAX_PAIRS];
}

static void op_roundtrip(void *arg, uint64_t iters)
{
	struct pair *p = (struct pair *) arg;
	uint64_t t0;

	while (iters--) {
		t0 = bench_now_ns();
		give_turn(p, 1);
		take_turn(p, 0);
		bench_latency(bench_now_ns() - t0);
	}
}

/* Thread pool: the harness thread produces, setup() starts the workers. */
#define POOL_QSIZE	256
#define POOL_MAX	32

struct pool {
	enum kind kind;
	pthread_mutex_t lock;
	pthread_cond_t p_nonempty, p_nonfull;
	struct urcu_cond u_nonempty, u_nonfull;
	unsigned int head, count, nr_workers;
	unsigned int gap;	/* producer's own work per task, in tasks */
	unsigned int gaps;	/* the producer's gaps so far */
	uint64_t period_ns;	/* a fixed arrival rate: one task per period */
	uint64_t due_ns;	/* when the next task of that schedule arrives */
	int tasks[POOL_QSIZE];
	uint64_t queued_ns[POOL_QSIZE];	/* when each task was submitted */
	int done;
	uint64_t submitted, executed;
	pthread_t workers[POOL_MAX];
};

static long task_loops;	/* calibrated to about 1 us */

/* One paced gap in this many has its CPU time measured (op_submit()). */
#define GAP_SAMPLE	16

static void task(int v)
{
	long x = v, i;

	for (i = 0; i < task_loops; i++) {
		x += i;
		bench_keep(x);	/* a loop the compiler may not fold */
	}
}

static void pool_wait(struct pool *pl, pthread_cond_t *pc, struct urcu_cond *uc)
{
	if (pl->kind == PTHREAD)
		pthread_cond_wait(pc, &pl->lock);
	else
		urcu_cond_wait(uc, &pl->lock);
}

static void pool_signal(struct pool *pl, pthread_cond_t *pc, struct urcu_cond *uc)
{
	if (pl->kind == PTHREAD)
		pthread_cond_signal(pc);
	else
		urcu_cond_signal(uc);
}

static void *pool_worker(void *arg)
{
	struct pool *pl = (struct pool *) arg;
	uint64_t n = 0;
	int v;

	pthread_mutex_lock(&pl->lock);
	for (;;) {
		while (!pl->count && !pl->done)
			pool_wait(pl, &pl->p_nonempty, &pl->u_nonempty);
		if (!pl->count)
			break;
		v = pl->tasks[pl->head];
		/* Latency: from submission to a worker taking the task. */
		bench_latency(bench_now_ns() - pl->queued_ns[pl->head]);
		pl->head = (pl->head + 1) % POOL_QSIZE;
		pl->count--;
		pthread_mutex_unlock(&pl->lock);
		pool_signal(pl, &pl->p_nonfull, &pl->u_nonfull);
		task(v);
		n++;
		pthread_mutex_lock(&pl->lock);
	}
	pl->executed += n;
	pthread_mutex_unlock(&pl->lock);
	return NULL;
}

static int pool_setup(void *arg, unsigned int threads)
{
	struct pool *pl = (struct pool *) arg;
	unsigned int i;

	pl->head = pl->count = 0;
	pl->done = 0;
	pl->submitted = pl->executed = 0;
	pl->due_ns = 0;
	pthread_mutex_init(&pl->lock, NULL);
	pthread_cond_init(&pl->p_nonempty, NULL);
	pthread_cond_init(&pl->p_nonfull, NULL);
	urcu_cond_init(&pl->u_nonempty, CLOCK_REALTIME);
	urcu_cond_init(&pl->u_nonfull, CLOCK_REALTIME);
	for (i = 0; i < pl->nr_workers; i++)
		pthread_create(&pl->workers[i], NULL, pool_worker, pl);
	return 0;
}

static void pool_teardown(void *arg)
{
	struct pool *pl = (struct pool *) arg;
	unsigned int i;

	pthread_mutex_lock(&pl->lock);
	pl->done = 1;
	pthread_mutex_unlock(&pl->lock);
	if (pl->kind == PTHREAD)
		pthread_cond_broadcast(&pl->p_nonempty);
	else
		urcu_cond_broadcast(&pl->u_nonempty);
	for (i = 0; i < pl->nr_workers; i++)
		pthread_join(pl->workers[i], NULL);
	if (pl->executed != pl->submitted) {
		fprintf(stderr, "bench_cond: the pool lost tasks\n");
		exit(1);
	}
	pthread_cond_destroy(&pl->p_nonempty);
	pthread_cond_destroy(&pl->p_nonfull);
}

static void submit(struct pool *pl, int v, uint64_t queued_ns)
{
	unsigned int slot;

	pthread_mutex_lock(&pl->lock);
	while (pl->count == POOL_QSIZE)
		pool_wait(pl, &pl->p_nonfull, &pl->u_nonfull);
	slot = (pl->head + pl->count++) % POOL_QSIZE;
	pl->tasks[slot] = v;
	pl->queued_ns[slot] = queued_ns;
	pl->submitted++;
	pthread_mutex_unlock(&pl->lock);
	pool_signal(pl, &pl->p_nonempty, &pl->u_nonempty);
}

static void op_submit(void *arg, uint64_t iters)
{
	struct pool *pl = (struct pool *) arg;
	unsigned int i;

	while (iters--) {
		/*
		 * A paced producer: its own work before each task arrives.
		 * That work only spaces the tasks out: its CPU time is left
		 * out of the cell's cpu-ns/op, which then compares what the
		 * condition and the pool cost (the tasks included). Reading
		 * the thread's CPU clock is a system call (1.6 us here):
		 * every 16th gap is measured and stands for 16.
		 */
		if (pl->gap && !(++pl->gaps % GAP_SAMPLE)) {
			uint64_t t0 = bench_thread_cpu_ns();

			for (i = 0; i < pl->gap; i++)
				task((int) i);
			bench_cpu_exclude((bench_thread_cpu_ns() - t0)
					* GAP_SAMPLE);
		} else {
			for (i = 0; i < pl->gap; i++)
				task((int) i);
		}
		submit(pl, (int) iters, bench_now_ns());
	}
}

/*
 * Tasks that arrive on a fixed schedule, one every period_ns, as a
 * server's requests do whatever its threads are up to: the producer
 * sleeps until the next arrival, then submits every task that is due. A
 * task's latency counts from its arrival on the schedule, so a producer
 * held up (asleep past its time, or blocked in the condition's signal)
 * adds its delay to the tasks behind it instead of slowing the arrivals
 * down. Both conditions then serve the same rate, and the cell compares
 * what each costs in CPU per task and in latency.
 */
static void op_submit_at_rate(void *arg, uint64_t iters)
{
	struct pool *pl = (struct pool *) arg;
	struct timespec ts;
	uint64_t now = bench_now_ns();

	if (!pl->due_ns)
		pl->due_ns = now;
	while (iters) {
		if (now < pl->due_ns) {
			ts.tv_sec = (time_t) (pl->due_ns / 1000000000ULL);
			ts.tv_nsec = (long) (pl->due_ns % 1000000000ULL);
			(void) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
					&ts, NULL);
			now = bench_now_ns();
			continue;
		}
		submit(pl, (int) iters, pl->due_ns);
		pl->due_ns += pl->period_ns;
		iters--;
	}
}

/* Broadcast to 64 waiters that live from setup() to teardown(). */
#define NR_BCAST	64

struct bcast {
	enum kind kind;
	pthread_mutex_t lock;
	pthread_cond_t pc, p_ready;
	struct urcu_cond uc, u_ready;
	int generation, waiting, stop;
	pthread_t t[NR_BCAST];
};

static void bc_wait(struct bcast *bc, pthread_cond_t *pc, struct urcu_cond *uc)
{
	if (bc->kind == PTHREAD)
		pthread_cond_wait(pc, &bc->lock);
	else
		urcu_cond_wait(uc, &bc->lock);
}

static void *bc_waiter(void *arg)
{
	struct bcast *bc = (struct bcast *) arg;
	int gen;

	pthread_mutex_lock(&bc->lock);
	while (!bc->stop) {
		gen = bc->generation;
		/* The last one to wait tells the broadcaster. */
		if (++bc->waiting == NR_BCAST) {
			if (bc->kind == PTHREAD)
				pthread_cond_signal(&bc->p_ready);
			else
				urcu_cond_signal(&bc->u_ready);
		}
		while (bc->generation == gen && !bc->stop)
			bc_wait(bc, &bc->pc, &bc->uc);
	}
	pthread_mutex_unlock(&bc->lock);
	return NULL;
}

static int bcast_setup(void *arg, unsigned int threads)
{
	struct bcast *bc = (struct bcast *) arg;
	int i;

	pthread_mutex_init(&bc->lock, NULL);
	pthread_cond_init(&bc->pc, NULL);
	pthread_cond_init(&bc->p_ready, NULL);
	memset(&bc->uc, 0, sizeof(bc->uc));
	memset(&bc->u_ready, 0, sizeof(bc->u_ready));
	bc->generation = bc->waiting = bc->stop = 0;
	for (i = 0; i < NR_BCAST; i++)
		pthread_create(&bc->t[i], NULL, bc_waiter, bc);
	return 0;
}

static void bcast_teardown(void *arg)
{
	struct bcast *bc = (struct bcast *) arg;
	int i;

	pthread_mutex_lock(&bc->lock);
	bc->stop = 1;
	if (bc->kind == PTHREAD)
		pthread_cond_broadcast(&bc->pc);
	else
		urcu_cond_broadcast(&bc->uc);
	pthread_mutex_unlock(&bc->lock);
	for (i = 0; i < NR_BCAST; i++)
		pthread_join(bc->t[i], NULL);
}

static void op_broadcast(void *arg, uint64_t iters)
{
	struct bcast *bc = (struct bcast *) arg;

	pthread_mutex_lock(&bc->lock);
	while (iters--) {
		while (bc->waiting < NR_BCAST)
			bc_wait(bc, &bc->p_ready, &bc->u_ready);
		bc->waiting = 0;
		bc->generation++;
		if (bc->kind == PTHREAD)
			pthread_cond_broadcast(&bc->pc);
		else
			urcu_cond_broadcast(&bc->uc);
	}
	pthread_mutex_unlock(&bc->lock);
}

/*
 * Notify with nobody waiting: the producer's cost when consumers are busy.
 * A row only next to its ck_ec baseline.
 */
#ifdef HAVE_CK
static struct urcu_ec idle_ec;
static struct ck_ec32 idle_ck;

static void op_notify_urcu(void *arg, uint64_t iters)
{
	while (iters--)
		urcu_ec_notify(&idle_ec);
}

static void op_notify_ck(void *arg, uint64_t iters)
{
	while (iters--)
		ck_ec32_inc(&idle_ck, &ck_mode);
}
#endif

static int64_t time_task(void)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	task(0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a.tv_sec) * 1000000000LL + b.tv_nsec - a.tv_nsec;
}

/*
 * The fastest of many timings: on a shared machine one timing that was
 * preempted reads many times too long, and the tasks came out a fraction
 * of a microsecond (cpu-ns/op below 1000 for "1 us" tasks).
 */
static void calibrate_task(void)
{
	int64_t t, best;
	int i;

	task_loops = 1000;
	for (;;) {
		t = time_task();
		if (t >= 20000 || task_loops > (1L << 26))
			break;
		task_loops *= 2;
	}
	best = t;
	for (i = 0; i < 500; i++) {
		t = time_task();
		if (t < best)
			best = t;
	}
	task_loops = task_loops * 1000 / (best ? best : 1);
}

#define PINGPONG_DEF(label, k, pp)					\
	{ .name = label, .op = op_roundtrip, .arg = pp,			\
	  .setup = pingpong_setup, .teardown = pingpong_teardown,	\
	  .thread_arg = pingpong_thread_arg }

/* The pool's ceiling: one op is one task, run where the thread is. */
static void op_task_alone(void *arg, uint64_t iters)
{
	(void) arg;
	while (iters--)
		task((int) iters);
}

/* The producer's thread, once per run, before its first op. */
static void pool_thread_init(void *arg)
{
	struct pool *pl = (struct pool *) arg;

	/* The default 50 us of timer slack would bunch scheduled arrivals. */
	if (pl->period_ns)
		(void) prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
}

#define POOL_DEF(label, pl)						\
	{ .name = label, .arg = pl,					\
	  .op = (pl)->period_ns ? op_submit_at_rate : op_submit,	\
	  .setup = pool_setup, .teardown = pool_teardown,		\
	  .thread_init = pool_thread_init }

/* A name that lives as long as the program (rows keep pointers). */
static char *name_of(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int ret;

	va_start(ap, fmt);
	ret = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (ret < 0) {
		perror("bench_cond");
		exit(1);
	}
	return s;
}

/*
 * Pool rows: pthread_cond, then urcu_cond, with @workers workers and a
 * producer that does @gap tasks' worth of its own work before each task,
 * or (@period_ns not 0) submits one task every @period_ns.
 */
static void add_pool(struct bench *b, const char *group, unsigned int workers,
		unsigned int gap, uint64_t period_ns, unsigned int flags)
{
	struct pool *pl = calloc(2, sizeof(*pl));
	char *names[2];
	int i;

	if (!pl) {
		perror("bench_cond");
		exit(1);
	}
	for (i = 0; i < 2; i++) {
		pl[i].kind = i ? URCU_COND : PTHREAD;
		pl[i].nr_workers = workers;
		pl[i].gap = gap;
		pl[i].period_ns = period_ns;
		names[i] = name_of("%s_N%u", i ? "urcu_cond" : "pthread_cond",
			workers);
	}
	{
		const struct bench_def pool[] = {
			POOL_DEF(names[0], &pl[0]),
			POOL_DEF(names[1], &pl[1]),
		};

		BENCH_GROUP_FLAGS(b, group, BENCH_THREADS(1), pool, flags);
	}
}

/*
 * Every cell, on an otherwise idle machine (flags 0) or with every CPU
 * busy (BENCH_HOG, groups named *_busy).
 */
static void add_groups(struct bench *b, unsigned int flags)
{
	static struct pingpong pp_pthread = { .kind = PTHREAD },
		pp_cond = { .kind = URCU_COND },
		pp_wait = { .kind = URCU_WAIT }, pp_ec = { .kind = URCU_EC },
		pp_ck = { .kind = CK_EC };
	static struct bcast bc_pthread = { .kind = PTHREAD },
		bc_urcu = { .kind = URCU_COND };
	static const unsigned int pool_sizes[3] = { 2, 8, 32 };
	static const unsigned int gaps[3] = { 2, 8, 32 };
	static const unsigned int rates_k[2] = { 10, 40 };
	const char *sfx = flags & BENCH_HOG ? "_busy" : "";
	unsigned int i;

#define GROUP(name)	name_of("%s%s", name, sfx)
	{
		const struct bench_def pingpong[] = {
			PINGPONG_DEF("pthread_cond", PTHREAD, &pp_pthread),
			PINGPONG_DEF("urcu_cond", URCU_COND, &pp_cond),
			PINGPONG_DEF("urcu_wait", URCU_WAIT, &pp_wait),
		};

		/* 1 pair: 2 threads on 2 CPUs; 4 pairs: 8 threads on 2 CPUs. */
		BENCH_GROUP_FLAGS(b, GROUP("pingpong_rtt"), BENCH_THREADS(1, 4),
			pingpong, flags);
	}
	for (i = 0; i < 3; i++)
		add_pool(b, GROUP("pool_1us_task"), pool_sizes[i], 0, 0, flags);
	/* Arrivals slower than the workers: each task finds them waiting. */
	for (i = 0; i < 3; i++)
		add_pool(b, name_of("pool_1us_task_every_%uus%s", gaps[i], sfx),
			8, gaps[i], 0, flags);
	/* Arrivals on a schedule, at a rate both conditions sustain. */
	for (i = 0; i < 2; i++)
		add_pool(b, name_of("pool_1us_task_%uk_per_s%s", rates_k[i],
				sfx), 8, 0, 1000000ULL / rates_k[i], flags);
	{
		const struct bench_case ceiling = {
			.group = GROUP("pool_ceiling"), .name = "tasks_alone",
			.baseline = BENCH_NO_BASELINE, .threads = BENCH_CPUS,
			.def = { .op = op_task_alone }, .flags = flags,
		};

		bench_add(b, &ceiling);
	}
	{
		const struct bench_def bcast[] = {
			{ .name = "pthread_cond", .op = op_broadcast, .arg = &bc_pthread,
			  .setup = bcast_setup, .teardown = bcast_teardown },
			{ .name = "urcu_cond", .op = op_broadcast, .arg = &bc_urcu,
			  .setup = bcast_setup, .teardown = bcast_teardown },
		};

		BENCH_GROUP_FLAGS(b, GROUP("broadcast64"), BENCH_THREADS(1),
			bcast, flags);
	}
#ifdef HAVE_CK
	{
		const struct bench_def ec[] = {
			PINGPONG_DEF("ck_ec", CK_EC, &pp_ck),
			PINGPONG_DEF("urcu_ec", URCU_EC, &pp_ec),
		};
		const struct bench_def notify[] = {
			{ .name = "ck_ec32_inc", .op = op_notify_ck },
			{ .name = "urcu_ec_notify", .op = op_notify_urcu },
		};

		BENCH_GROUP_FLAGS(b, GROUP("ec_rtt"), BENCH_THREADS(1), ec, flags);
		BENCH_GROUP_FLAGS(b, GROUP("ec_notify_no_waiter"),
			BENCH_THREADS(1), notify, flags);
	}
#else
	(void) pp_ec;
	(void) pp_ck;
	if (!flags)
		fprintf(stderr, "bench_cond: ck_ec rows skipped (no libck)\n");
#endif
#undef GROUP
}

int main(int argc, char **argv)
{
	struct bench *b = bench_init("bench_cond", argc, argv);

	calibrate_task();
	fprintf(stderr, "[bench_cond] pool task: %ld loops, about 1 us\n",
		task_loops);
	add_groups(b, 0);
	add_groups(b, BENCH_HOG);
	return bench_run(b);
}
