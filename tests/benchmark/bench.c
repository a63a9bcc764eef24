// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tests/benchmark/bench.c - the benchmark harness; see bench.h.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <urcu/system.h>
#include <urcu/uatomic.h>

#include "bench.h"

#define BATCH_TARGET_NS		20000	/* one batch: long enough to amortize a clock read */
#define BATCH_MAX		(1ULL << 24)
#define MAX_REPS		64
#define LAT_CAP			4096	/* latencies kept per thread per run */

struct result {
	double ns_op, ops_s, cpu_ns_op;
	double p50, p99, max;		/* ns; has_lat says whether measured */
	double jain, min_share;
	bool has_lat;
	bool done;
};

struct row {
	struct bench_case c;
	struct result res;
	uint64_t batch;			/* carried from one run to the next */
};

struct bench {
	const char *program;
	struct row *rows;
	unsigned int nr_rows, alloc_rows;
	unsigned long ms, warmup_ms;
	unsigned int reps;
	uint64_t iters;			/* 0: timed runs */
	bool pin, list;
	char **filters;
	int nr_filters;
	FILE *tsv;
	FILE *samples;			/* per-repetition values, or NULL */
	const char *last_group;
};

struct worker {
	pthread_t tid;
	struct run *run;
	unsigned int id;
	void *arg;
	uint64_t ops, batch;
	uint64_t start_ns, end_ns;
};

struct run {
	struct row *row;
	pthread_barrier_t barrier;
	int stop;
	uint64_t iters;
};

/*
 * One thread's latencies of one run: the first LAT_CAP, then a uniform
 * sample of all of them (reservoir). Owned by its thread while it lives;
 * the harness reads them once every thread of the run has been joined.
 */
struct lat_buf {
	struct lat_buf *next;
	uint64_t gen;			/* the run its samples belong to */
	uint64_t seen, max, rng;
	unsigned int n;
	bool dead;			/* its thread has exited */
	uint64_t v[LAT_CAP];
};

static pthread_mutex_t lat_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lat_buf *lat_all, *lat_free;	/* under lat_lock */
static pthread_once_t lat_once = PTHREAD_ONCE_INIT;
static pthread_key_t lat_key;
static __thread struct lat_buf *lat_mine;
static uint64_t lat_gen;		/* odd while a run records */

static cpu_set_t usable_cpus;
static int cpu_list[CPU_SETSIZE];
static unsigned int nr_cpus;

static void init_cpus(void)
{
	int cpu;

	if (nr_cpus)
		return;
	if (sched_getaffinity(0, sizeof(usable_cpus), &usable_cpus)) {
		CPU_ZERO(&usable_cpus);
		CPU_SET(0, &usable_cpus);
	}
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &usable_cpus))
			cpu_list[nr_cpus++] = cpu;
	if (!nr_cpus)
		cpu_list[nr_cpus++] = 0;
}

unsigned int bench_nr_cpus(void)
{
	init_cpus();
	return nr_cpus;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

uint64_t bench_now_ns(void)
{
	return now_ns();
}

/* Thread exit: the buffer's samples stay until the harness has read them. */
static void lat_release(void *p)
{
	struct lat_buf *l = p;

	pthread_mutex_lock(&lat_lock);
	l->dead = true;
	pthread_mutex_unlock(&lat_lock);
}

static void lat_key_init(void)
{
	if (pthread_key_create(&lat_key, lat_release))
		abort();
}

static struct lat_buf *lat_attach(void)
{
	struct lat_buf *l;

	pthread_once(&lat_once, lat_key_init);
	pthread_mutex_lock(&lat_lock);
	l = lat_free;
	if (l)
		lat_free = l->next;
	else
		l = malloc(sizeof(*l));
	if (l) {
		memset(l, 0, offsetof(struct lat_buf, v));
		l->rng = (uint64_t) (uintptr_t) l | 1;
		l->next = lat_all;
		lat_all = l;
	}
	pthread_mutex_unlock(&lat_lock);
	if (l) {
		(void) pthread_setspecific(lat_key, l);
		lat_mine = l;
	}
	return l;
}

void bench_latency(uint64_t ns)
{
	uint64_t gen = CMM_LOAD_SHARED(lat_gen), r;
	struct lat_buf *l = lat_mine;

	if (!(gen & 1))
		return;
	if (!l && !(l = lat_attach()))
		return;
	if (l->gen != gen) {
		l->gen = gen;
		l->n = 0;
		l->seen = l->max = 0;
	}
	if (ns > l->max)
		l->max = ns;
	if (l->n < LAT_CAP) {
		l->v[l->n++] = ns;
		l->seen++;
		return;
	}
	/* Reservoir: the k-th sample stays with probability LAT_CAP / k. */
	r = l->rng;
	r ^= r << 13;
	r ^= r >> 7;
	r ^= r << 17;
	l->rng = r;
	l->seen++;
	r %= l->seen;
	if (r < LAT_CAP)
		l->v[r] = ns;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/*
 * After the run whose generation is @gen, every thread joined: merge its
 * latencies into @res and recycle the buffers of exited threads.
 */
static void lat_collect(uint64_t gen, struct result *res)
{
	struct lat_buf *l, **pp;
	uint64_t *all = NULL, max = 0;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&lat_lock);
	for (l = lat_all; l; l = l->next) {
		if (l->gen != gen || !l->n)
			continue;
		if (n + l->n > cap) {
			cap = 2 * (n + l->n);
			all = realloc(all, cap * sizeof(*all));
			if (!all) {
				perror("bench");
				exit(1);
			}
		}
		memcpy(all + n, l->v, l->n * sizeof(*all));
		n += l->n;
		if (l->max > max)
			max = l->max;
	}
	for (pp = &lat_all; (l = *pp);) {
		if (l->dead) {
			*pp = l->next;
			l->next = lat_free;
			lat_free = l;
		} else {
			pp = &l->next;
		}
	}
	pthread_mutex_unlock(&lat_lock);
	res->has_lat = n > 0;
	if (n) {
		qsort(all, n, sizeof(*all), cmp_u64);
		res->p50 = (double) all[(n - 1) / 2];
		res->p99 = (double) all[(n - 1) * 99 / 100];
		res->max = (double) max;
	}
	free(all);
}

/* Jain's index and the smallest share of the harness threads' operations. */
static void fairness(const struct worker *w, unsigned int n, struct result *res)
{
	double sum = 0, sq = 0, min = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		double x = (double) w[i].ops;

		sum += x;
		sq += x * x;
		if (!i || x < min)
			min = x;
	}
	res->jain = sq > 0 ? sum * sum / (n * sq) : 1;
	res->min_share = sum > 0 ? min * n / sum : 1;
}

/*
 * A busy machine: one process per usable CPU, pinned there, spinning
 * until killed (or until the benchmark dies). Only system calls between
 * fork() and the loop: the parent may have other threads.
 */
static pid_t hogs[CPU_SETSIZE];
static unsigned int nr_hogs;

static void hog_start(void)
{
	unsigned int i;

	for (i = 0; i < nr_cpus; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("bench: fork");
			break;
		}
		if (!pid) {
			cpu_set_t set;

			(void) prctl(PR_SET_PDEATHSIG, SIGKILL);
			CPU_ZERO(&set);
			CPU_SET(cpu_list[i], &set);
			(void) sched_setaffinity(0, sizeof(set), &set);
			for (;;)
				bench_clobber();
		}
		hogs[nr_hogs++] = pid;
	}
}

static void hog_stop(void)
{
	unsigned int i;

	for (i = 0; i < nr_hogs; i++)
		(void) kill(hogs[i], SIGKILL);
	for (i = 0; i < nr_hogs; i++)
		while (waitpid(hogs[i], NULL, 0) < 0 && errno == EINTR)
			;
	nr_hogs = 0;
}

/* CPU time that the running repetition leaves out (bench_cpu_exclude()). */
static uint64_t cpu_excluded;

uint64_t bench_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

void bench_cpu_exclude(uint64_t ns)
{
	if (CMM_LOAD_SHARED(lat_gen) & 1)
		uatomic_add(&cpu_excluded, ns);
}

static uint64_t cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t) ru.ru_utime.tv_sec + (uint64_t) ru.ru_stime.tv_sec)
		* 1000000000ULL + ((uint64_t) ru.ru_utime.tv_usec
		+ (uint64_t) ru.ru_stime.tv_usec) * 1000ULL;
}

static unsigned long env_ulong(const char *name, unsigned long dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoul(s, &end, 10);
	return (errno || *end || !v) ? dflt : v;
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p) {
		perror("bench");
		exit(1);
	}
	return p;
}

struct bench *bench_init(const char *program, int argc, char **argv)
{
	struct bench *b = xrealloc(NULL, sizeof(*b));
	const char *pin = getenv("URCU_RSEQ_BENCH_PIN");
	const char *tsv = getenv("URCU_RSEQ_BENCH_TSV");
	const char *samples = getenv("URCU_RSEQ_BENCH_SAMPLES");
	bool full = getenv("BENCH_FULL") && strcmp(getenv("BENCH_FULL"), "0");
	int i;

	memset(b, 0, sizeof(*b));
	init_cpus();
	b->program = program;
	b->ms = env_ulong("URCU_RSEQ_BENCH_MS", full ? 1000 : 100);
	b->reps = (unsigned int) env_ulong("URCU_RSEQ_BENCH_REPS", full ? 11 : 5);
	if (b->reps > MAX_REPS)
		b->reps = MAX_REPS;
	b->warmup_ms = b->ms / 3 < 20 ? 20 : b->ms / 3;
	b->iters = env_ulong("URCU_RSEQ_BENCH_ITERS", 0);
	b->pin = !(pin && !strcmp(pin, "none"));
	b->filters = xrealloc(NULL, sizeof(char *) * (size_t) (argc + 1));
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--list") || !strcmp(argv[i], "-l")) {
			b->list = true;
		} else if (!strcmp(argv[i], "--pin=none")) {
			b->pin = false;
		} else if (!strcmp(argv[i], "--pin=rr")) {
			b->pin = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: %s [--list] [--pin=rr|none] [FILTER...]\n"
				"  FILTER: substring of group/case; env: "
				"URCU_RSEQ_BENCH_MS, _REPS, _ITERS, _PIN, _TSV, _SAMPLES, "
				"BENCH_FULL=1\n", program);
			exit(0);
		} else {
			b->filters[b->nr_filters++] = argv[i];
		}
	}
	if (tsv && *tsv) {
		b->tsv = fopen(tsv, "a");
		if (!b->tsv)
			fprintf(stderr, "[%s] cannot open %s: %s\n", program,
				tsv, strerror(errno));
		else if (ftell(b->tsv) == 0)
			fprintf(b->tsv, "program\tgroup\tcase\tbaseline\tthreads"
				"\tns_op\tratio\tops_s\tcpu_ns_op\treps\tms\tpin"
				"\tp50_ns\tp99_ns\tmax_ns\tjain\tmin_share\thog\n");
	}
	if (samples && *samples) {
		b->samples = fopen(samples, "a");
		if (!b->samples)
			fprintf(stderr, "[%s] cannot open %s: %s\n", program,
				samples, strerror(errno));
	}
	return b;
}

void bench_add(struct bench *b, const struct bench_case *c)
{
	struct row *r;

	if (b->nr_rows == b->alloc_rows) {
		b->alloc_rows = b->alloc_rows ? 2 * b->alloc_rows : 16;
		b->rows = xrealloc(b->rows, b->alloc_rows * sizeof(*b->rows));
	}
	r = &b->rows[b->nr_rows++];
	memset(r, 0, sizeof(*r));
	r->c = *c;
	if (r->c.threads == BENCH_CPUS)
		r->c.threads = nr_cpus;
	if (!r->c.threads)
		r->c.threads = 1;
	r->batch = 1;
}

void bench_group(struct bench *b, const char *group,
		const unsigned int *threads, const struct bench_def *defs,
		unsigned int nr_defs)
{
	bench_group_flags(b, group, threads, defs, nr_defs, 0);
}

void bench_group_flags(struct bench *b, const char *group,
		const unsigned int *threads, const struct bench_def *defs,
		unsigned int nr_defs, unsigned int flags)
{
	unsigned int i, j;

	for (i = 0; threads[i]; i++) {
		for (j = 0; j < nr_defs; j++) {
			struct bench_case c = {
				.group = group,
				.name = defs[j].name,
				.baseline = j ? defs[0].name : NULL,
				.threads = threads[i],
				.def = defs[j],
				.flags = flags,
			};

			bench_add(b, &c);
		}
	}
}

static void *worker_main(void *p)
{
	struct worker *w = p;
	struct run *run = w->run;
	bench_op_fn op = run->row->c.def.op;
	const struct bench_def *d = &run->row->c.def;
	uint64_t batch = w->batch, ops = 0, t0, t1;

	if (d->thread_init)
		d->thread_init(w->arg);
	pthread_barrier_wait(&run->barrier);
	t0 = w->start_ns = now_ns();
	do {
		uint64_t n = batch;

		if (run->iters && run->iters - ops < n)
			n = run->iters - ops;
		op(w->arg, n);
		ops += n;
		t1 = now_ns();
		if (t1 - t0 < BATCH_TARGET_NS && batch < BATCH_MAX)
			batch *= 2;
		t0 = t1;
	} while (run->iters ? ops < run->iters : !CMM_LOAD_SHARED(run->stop));
	w->end_ns = t1;
	w->ops = ops;
	w->batch = batch;
	if (d->thread_fini)
		d->thread_fini(w->arg);
	return NULL;
}

/* One run of @ms (or of b->iters operations per thread); 0 on success. */
static int run_once(struct bench *b, struct row *row, unsigned long ms,
		struct result *res)
{
	const struct bench_def *d = &row->c.def;
	unsigned int n = row->c.threads, i;
	struct run run = { .row = row, .iters = b->iters };
	struct worker *w = xrealloc(NULL, n * sizeof(*w));
	uint64_t ops = 0, start = UINT64_MAX, end = 0, cpu0, cpu1, excluded;
	struct timespec ts;
	uint64_t gen;
	int err = 0;

	if (d->setup && d->setup(d->arg, n)) {
		free(w);
		return -1;
	}
	pthread_barrier_init(&run.barrier, NULL, n + 1);
	for (i = 0; i < n; i++) {
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		if (b->pin) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(cpu_list[i % nr_cpus], &set);
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		w[i].run = &run;
		w[i].id = i;
		w[i].arg = d->thread_arg ? d->thread_arg(d->arg, i) : d->arg;
		w[i].batch = row->batch;
		err = pthread_create(&w[i].tid, &attr, worker_main, &w[i]);
		pthread_attr_destroy(&attr);
		if (err) {
			fprintf(stderr, "[%s] pthread_create: %s\n", b->program,
				strerror(err));
			exit(1);
		}
	}
	uatomic_set(&cpu_excluded, 0);
	cpu0 = cpu_ns();
	gen = lat_gen + 1;
	uatomic_set(&lat_gen, gen);	/* odd: record */
	pthread_barrier_wait(&run.barrier);
	if (!b->iters) {
		ts.tv_sec = (time_t) (ms / 1000);
		ts.tv_nsec = (long) (ms % 1000) * 1000000L;
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		uatomic_set(&lat_gen, gen + 1);
		CMM_STORE_SHARED(run.stop, 1);
	}
	for (i = 0; i < n; i++) {
		pthread_join(w[i].tid, NULL);
		ops += w[i].ops;
		if (w[i].start_ns < start)
			start = w[i].start_ns;
		if (w[i].end_ns > end)
			end = w[i].end_ns;
		if (w[i].batch > row->batch)
			row->batch = w[i].batch;
	}
	cpu1 = cpu_ns();
	excluded = uatomic_read(&cpu_excluded);
	/* A sampled estimate (bench_cpu_exclude()) may overshoot a little. */
	cpu1 = cpu1 - cpu0 > excluded ? cpu1 - excluded : cpu0;
	uatomic_set(&lat_gen, gen + 1);
	pthread_barrier_destroy(&run.barrier);
	if (d->teardown)
		d->teardown(d->arg);
	lat_collect(gen, res);
	fairness(w, n, res);
	free(w);
	if (!ops || end <= start)
		return -1;
	res->ns_op = (double) (end - start) * n / (double) ops;
	res->ops_s = (double) ops * 1e9 / (double) (end - start);
	res->cpu_ns_op = (double) (cpu1 - cpu0) / (double) ops;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int measure_reps(struct bench *b, struct row *row)
{
	double ns[MAX_REPS], ops[MAX_REPS], cpu[MAX_REPS];
	double p50[MAX_REPS], p99[MAX_REPS], jain[MAX_REPS], share[MAX_REPS];
	unsigned int i, nr_lat = 0;
	struct result r;
	double max = 0;

	memset(&r, 0, sizeof(r));
	if (!b->iters && run_once(b, row, b->warmup_ms, &r))
		return -1;
	for (i = 0; i < b->reps; i++) {
		memset(&r, 0, sizeof(r));
		if (run_once(b, row, b->ms, &r))
			return -1;
		ns[i] = r.ns_op;
		ops[i] = r.ops_s;
		cpu[i] = r.cpu_ns_op;
		jain[i] = r.jain;
		share[i] = r.min_share;
		if (r.has_lat) {
			p50[nr_lat] = r.p50;
			p99[nr_lat++] = r.p99;
			if (r.max > max)
				max = r.max;
		}
		if (b->samples) {
			fprintf(b->samples, "%s\t%s\t%s\t%u\t%u\t%.3f\t",
				b->program, row->c.group ? row->c.group : "",
				row->c.name, row->c.threads, i, r.ns_op);
			if (r.has_lat)
				fprintf(b->samples, "%.0f\n", r.p99);
			else
				fputs("-\n", b->samples);
		}
	}
	row->res.ns_op = median(ns, b->reps);
	row->res.ops_s = median(ops, b->reps);
	row->res.cpu_ns_op = median(cpu, b->reps);
	row->res.jain = median(jain, b->reps);
	row->res.min_share = median(share, b->reps);
	row->res.has_lat = nr_lat > 0;
	if (nr_lat) {
		row->res.p50 = median(p50, nr_lat);
		row->res.p99 = median(p99, nr_lat);
		row->res.max = max;
	}
	row->res.done = true;
	return 0;
}

static int measure(struct bench *b, struct row *row)
{
	int ret;

	if (row->c.flags & BENCH_HOG)
		hog_start();
	ret = measure_reps(b, row);
	if (row->c.flags & BENCH_HOG)
		hog_stop();
	return ret;
}

static bool matches(const struct bench *b, const struct row *row)
{
	char full[256];
	int i;

	if (!b->nr_filters)
		return true;
	snprintf(full, sizeof(full), "%s/%s", row->c.group ? row->c.group : "",
		row->c.name);
	for (i = 0; i < b->nr_filters; i++)
		if (strstr(full, b->filters[i]))
			return true;
	return false;
}

/* A filtered-in row brings its baseline along: a ratio needs both. */
static bool selected(const struct bench *b, const struct row *row)
{
	const char *g = row->c.group ? row->c.group : "";
	unsigned int i;

	if (matches(b, row))
		return true;
	if (row->c.baseline && *row->c.baseline)
		return false;
	for (i = 0; i < b->nr_rows; i++) {
		const struct row *o = &b->rows[i];

		if (o->c.threads == row->c.threads && o->c.baseline
				&& !strcmp(o->c.baseline, row->c.name)
				&& !strcmp(o->c.group ? o->c.group : "", g)
				&& matches(b, o))
			return true;
	}
	return false;
}

static const struct row *find_baseline(const struct bench *b,
		const struct row *row)
{
	const char *g = row->c.group ? row->c.group : "";
	unsigned int i;

	if (!row->c.baseline || !*row->c.baseline)
		return row;
	if (!strcmp(row->c.baseline, BENCH_NO_BASELINE))
		return NULL;
	for (i = 0; i < b->nr_rows; i++) {
		const struct row *o = &b->rows[i];

		if (o->c.threads == row->c.threads && o->res.done
				&& !strcmp(o->c.name, row->c.baseline)
				&& !strcmp(o->c.group ? o->c.group : "", g))
			return o;
	}
	return NULL;
}

static void print_row(struct bench *b, const struct row *row)
{
	const struct row *base = find_baseline(b, row);
	const char *g = row->c.group ? row->c.group : "";
	double ratio = base ? base->res.ns_op / row->res.ns_op : 0;

	char r[16], p50[24] = "-", p99[24] = "-";

	if (!b->last_group || strcmp(b->last_group, g)) {
		printf("\n## %s: %s (baseline: %s)%s\n"
			"%-32s %7s %10s %8s %14s %10s %10s %10s %5s\n",
			b->program, g, row->c.baseline && *row->c.baseline ?
			row->c.baseline : row->c.name,
			row->c.flags & BENCH_HOG ? ", every CPU busy" : "",
			"case", "threads", "ns/op", "ratio", "ops/s", "cpu-ns/op",
			"p50-ns", "p99-ns", "jain");
		b->last_group = g;
	}
	if (base)
		snprintf(r, sizeof(r), "%.2f", ratio);
	else
		snprintf(r, sizeof(r), "n/a");
	if (row->res.has_lat) {
		snprintf(p50, sizeof(p50), "%.0f", row->res.p50);
		snprintf(p99, sizeof(p99), "%.0f", row->res.p99);
	}
	printf("%-32s %7u %10.2f %8s %14.0f %10.2f %10s %10s %5.2f\n",
		row->c.name, row->c.threads, row->res.ns_op, r,
		row->res.ops_s, row->res.cpu_ns_op, p50, p99, row->res.jain);
	fflush(stdout);
	if (b->tsv) {
		fprintf(b->tsv, "%s\t%s\t%s\t%s\t%u\t%.3f\t", b->program, g,
			row->c.name, row->c.baseline && *row->c.baseline ?
			row->c.baseline : "-", row->c.threads, row->res.ns_op);
		if (base)
			fprintf(b->tsv, "%.3f", ratio);
		else
			fputs("nan", b->tsv);
		fprintf(b->tsv, "\t%.0f\t%.3f\t%u\t%lu\t%s", row->res.ops_s,
			row->res.cpu_ns_op, b->reps,
			b->iters ? 0 : b->ms, b->pin ? "rr" : "none");
		if (row->res.has_lat)
			fprintf(b->tsv, "\t%.0f\t%.0f\t%.0f", row->res.p50,
				row->res.p99, row->res.max);
		else
			fputs("\t-\t-\t-", b->tsv);
		fprintf(b->tsv, "\t%.3f\t%.3f\t%s\n", row->res.jain,
			row->res.min_share,
			row->c.flags & BENCH_HOG ? "hog" : "-");
		fflush(b->tsv);
	}
}

int bench_run(struct bench *b)
{
	unsigned int i, nr = 0, k = 0;
	int status = 0;

	for (i = 0; i < b->nr_rows; i++)
		if (selected(b, &b->rows[i]))
			nr++;
	if (b->list) {
		for (i = 0; i < b->nr_rows; i++)
			if (selected(b, &b->rows[i]))
				printf("%s/%s %u\n", b->rows[i].c.group ?
					b->rows[i].c.group : "",
					b->rows[i].c.name, b->rows[i].c.threads);
		goto out;
	}
	fprintf(stderr, "[%s] %u cases, %u x %lu ms after a %lu ms warm-up, "
		"%s pinning, %u CPUs\n", b->program, nr, b->reps,
		b->iters ? 0 : b->ms, b->iters ? 0 : b->warmup_ms,
		b->pin ? "round-robin" : "no", nr_cpus);
	for (i = 0; i < b->nr_rows; i++) {
		struct row *row = &b->rows[i];

		if (!selected(b, row))
			continue;
		fprintf(stderr, "[%s] case %u/%u: %s/%s, %u thread%s\n",
			b->program, ++k, nr, row->c.group ? row->c.group : "",
			row->c.name, row->c.threads,
			row->c.threads == 1 ? "" : "s");
		if (measure(b, row)) {
			fprintf(stderr, "[%s] %s: setup failed or no operation "
				"completed; skipped\n", b->program, row->c.name);
			continue;
		}
		print_row(b, row);
	}
out:
	if (b->tsv)
		fclose(b->tsv);
	if (b->samples)
		fclose(b->samples);
	free(b->filters);
	free(b->rows);
	free(b);
	return status;
}
