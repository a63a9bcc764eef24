// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reference rows for every report: what a contended atomic increment
 * costs on this machine, next to the same atomic on a private cache line
 * and a plain thread-local increment (the floor that per-CPU counters
 * aim for).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <urcu/arch.h>
#include <urcu/compiler.h>

#include "bench.h"

#define MAX_SLOTS	1024

struct padded {
	_Atomic uint64_t v;
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

static _Atomic uint64_t shared_word __attribute__((aligned(CAA_CACHE_LINE_SIZE)));
static struct padded private_words[MAX_SLOTS];
static __thread uint64_t tls_word;

static void op_shared_atomic(void *arg, uint64_t iters)
{
	_Atomic uint64_t *w = arg;

	while (iters--)
		atomic_fetch_add_explicit(w, 1, memory_order_relaxed);
}

static void *private_slot(void *arg, unsigned int id)
{
	struct padded *p = arg;

	return &p[id % MAX_SLOTS].v;
}

static void op_tls_plain(void *arg, uint64_t iters)
{
	volatile uint64_t *w = &tls_word;

	while (iters--)
		*w = *w + 1;
}

int main(int argc, char **argv)
{
	struct bench *b = bench_init("bench_baseline", argc, argv);
	static const struct bench_def counter[] = {
		{ .name = "atomic_fetch_add_shared", .op = op_shared_atomic,
		  .arg = &shared_word },
		{ .name = "atomic_fetch_add_private", .op = op_shared_atomic,
		  .arg = private_words, .thread_arg = private_slot },
		{ .name = "tls_plain_increment", .op = op_tls_plain },
	};

	BENCH_GROUP(b, "counter", BENCH_THREADS(1, 2, 8), counter);
	return bench_run(b);
}
