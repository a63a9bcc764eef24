// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tests/benchmark/bench.h - the one harness every benchmark uses, so that
 * reports compose: same warm-up, same thread placement, same row.
 *
 * A benchmark program declares groups. A group is a baseline (the thing a
 * primitive replaces, e.g. atomic_fetch_add or pthread_mutex) followed by
 * the cases compared to it, all run at each of a list of thread counts.
 * For each case the harness runs @threads threads that call
 * op(arg, n) in batches (n doubles until a batch takes about 20 us) for a
 * fixed time (URCU_RSEQ_BENCH_MS, default 100 ms) after one warm-up run,
 * repeats that URCU_RSEQ_BENCH_REPS times (default 5; BENCH_FULL=1: 1 s
 * and 11 repetitions) and keeps the median of each metric:
 *
 *	ns/op      wall time * threads / operations (cost per op per thread)
 *	ops/s      operations of all threads per second of wall time
 *	cpu-ns/op  user + system CPU time of the process / operations,
 *	           less what the case left out with bench_cpu_exclude()
 *	ratio      baseline ns/op / this case's ns/op at the same thread
 *	           count in the same run (> 1: faster than the baseline)
 *
 * Threads are pinned round-robin over the CPUs the process may use
 * (URCU_RSEQ_BENCH_PIN=none, or --pin=none, leaves placement to the
 * scheduler). URCU_RSEQ_BENCH_ITERS=N runs N operations per thread per
 * repetition instead of a fixed time.
 *
 * Output: one row per case on stdout, `name threads ns/op ratio ops/s
 * cpu-ns/op`; progress on stderr; and, when URCU_RSEQ_BENCH_TSV names a
 * file, one tab-separated line per case appended to it (header written
 * when the file is empty): program group case baseline threads ns_op
 * ratio ops_s cpu_ns_op reps ms pin. When URCU_RSEQ_BENCH_SAMPLES names a
 * file, every repetition's ns/op is appended to it too (program group case
 * threads repetition ns_op): the spread behind each median, e.g. the
 * round-trip latency of each repetition of a ping-pong.
 *
 * Latency and fairness, next to throughput:
 *
 *	p50, p99   percentiles of the latencies that the case's threads
 *	           (any thread: responders and pool workers too) recorded
 *	           with bench_latency() in a repetition (a uniform sample of
 *	           at most 4096 per thread), median of the repetitions
 *	max        the largest recorded latency of any repetition
 *	jain       Jain's fairness index of the operations of the harness
 *	           threads, (sum x)^2 / (n sum x^2): 1 when every thread did
 *	           the same, 1/n when one did everything; median of the reps
 *	min_share  the fewest operations of a thread divided by the mean
 *
 * Rows with BENCH_HOG in their flags run with one busy process per usable
 * CPU, started before the warm-up and killed after the last repetition:
 * a machine whose every CPU has other work. The hogs are separate
 * processes, so cpu-ns/op stays the benchmark's own CPU time.
 *
 * The TSV line then goes on with: p50_ns p99_ns max_ns jain min_share
 * hog ("-" where no latency was recorded); the samples line with the
 * repetition's p99 (or "-").
 */
#ifndef URCU_RSEQ_TESTS_BENCH_H
#define URCU_RSEQ_TESTS_BENCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Perform @iters operations. Called in a loop until the run ends. */
typedef void (*bench_op_fn)(void *arg, uint64_t iters);

/* One row template: what a group runs at each thread count. */
struct bench_def {
	const char *name;
	bench_op_fn op;
	void *arg;
	/* Optional: before each run (warm-up or repetition); non-zero skips the case. */
	int (*setup)(void *arg, unsigned int threads);
	/* Optional: after each run, once every thread has stopped. */
	void (*teardown)(void *arg);
	/* Optional: the argument op() gets in thread @id (default: @arg). */
	void *(*thread_arg)(void *arg, unsigned int id);
	/*
	 * Optional: run by each benchmark thread before its first op() and
	 * after its last (e.g. an RCU flavor's thread registration), with
	 * op()'s argument; not timed.
	 */
	void (*thread_init)(void *arg);
	void (*thread_fini)(void *arg);
};

/* Baseline of a row compared with nothing (a bound): its ratio is n/a. */
#define BENCH_NO_BASELINE	"none"

/* One measured row; bench_group() makes these from bench_defs. */
struct bench_case {
	const char *group;
	const char *name;
	const char *baseline;		/* NULL or "": this row is a baseline */
	unsigned int threads;
	struct bench_def def;		/* def.name is ignored */
	unsigned int flags;		/* BENCH_HOG */
};

/* Run the row with every usable CPU busy with another process. */
#define BENCH_HOG		0x1U

struct bench;

/* Thread counts end with 0; BENCH_CPUS stands for every usable CPU. */
#define BENCH_CPUS		(~0U)
#define BENCH_THREADS(...)	((const unsigned int[]) { __VA_ARGS__, 0 })

/* Read the options (--list, --pin=rr|none, name filters) and environment. */
struct bench *bench_init(const char *program, int argc, char **argv);
/*
 * Add @nr_defs defs as group @group: defs[0] is the baseline of the others.
 * Rows are ordered by thread count, baseline first at each.
 */
void bench_group(struct bench *b, const char *group,
		const unsigned int *threads, const struct bench_def *defs,
		unsigned int nr_defs);
#define BENCH_GROUP(b, group, threads, defs)				\
	bench_group(b, group, threads, defs, sizeof(defs) / sizeof((defs)[0]))
/* bench_group() whose rows carry @flags (BENCH_HOG). */
void bench_group_flags(struct bench *b, const char *group,
		const unsigned int *threads, const struct bench_def *defs,
		unsigned int nr_defs, unsigned int flags);
#define BENCH_GROUP_FLAGS(b, group, threads, defs, flags)		\
	bench_group_flags(b, group, threads, defs,			\
		sizeof(defs) / sizeof((defs)[0]), flags)
/* Add one row; its baseline must have been added before it. */
void bench_add(struct bench *b, const struct bench_case *c);
/* Run every row, print it, free @b; returns the exit status for main(). */
int bench_run(struct bench *b);

/* CPUs the process may run on. */
unsigned int bench_nr_cpus(void);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);
/*
 * Record one latency of the running case (a wait, a round trip), from
 * any thread; outside a repetition it is dropped. Lock-free and
 * per-thread: one clock read per sample is the cost to the measured code,
 * so sample (e.g. every 16th operation) where an operation takes less
 * than a microsecond.
 */
void bench_latency(uint64_t ns);
/*
 * The calling thread's CPU time in nanoseconds (a system call: bracket
 * long stretches only).
 */
uint64_t bench_thread_cpu_ns(void);
/*
 * Leave @ns of CPU time out of the running repetition's cpu-ns/op: work
 * that a case does only to shape its load (a paced producer's own work
 * between tasks), not the work being compared. From any thread; outside
 * a repetition it is dropped.
 */
void bench_cpu_exclude(uint64_t ns);

/* Keep the compiler from dropping or hoisting a benchmarked computation. */
#define bench_keep(x)		__asm__ __volatile__("" : : "g"(x) : "memory")
#define bench_clobber()		__asm__ __volatile__("" : : : "memory")

#ifdef __cplusplus
}
#endif

#endif /* URCU_RSEQ_TESTS_BENCH_H */
