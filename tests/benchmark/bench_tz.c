// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * liburcu-rseq-tz.so against glibc, in one process, on the shared harness
 * (bench.h): the preload is dlopen()ed with RTLD_LOCAL, so that its
 * localtime_r() is called through dlsym() while the program's own
 * localtime_r() stays glibc's (which takes tzset_lock on every call).
 *
 * - localtime_r, TZ=Europe/Paris, times of 2026 that move by 61 s per
 *   call (a logger's): 1, 2, 8, 32 threads; baseline glibc;
 * - localtime_r past the zone file's last transition (year 2100: the
 *   footer rule, which glibc parses again on every call): 1 and 8 threads;
 * - gmtime_r: 1 and 8 threads;
 * - mktime, tm_isdst = -1, wall-clock times of 2026 that move by 61 s per
 *   call (glibc's mktime() takes tzset_lock in tzset() and in each of its
 *   localtime_r() probes): 1, 2, 8, 32 threads.
 *
 * The preload is found at URCU_RSEQ_TZ_PRELOAD or in the build tree.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

typedef struct tm *(*conv_fn)(const time_t *, struct tm *);
typedef time_t (*mk_fn)(struct tm *);

struct conv {
	conv_fn fn;
	time_t base;
};

static void op_conv(void *arg, uint64_t iters)
{
	const struct conv *c = arg;
	time_t t = c->base;
	struct tm tm;

	while (iters--) {
		t += 61;
		c->fn(&t, &tm);
		bench_keep(tm.tm_hour);
	}
}

static void op_mk(void *arg, uint64_t iters)
{
	mk_fn fn = *(mk_fn *)arg;
	unsigned int s = 0;

	while (iters--) {
		struct tm tm = { .tm_year = 126, .tm_isdst = -1 };

		s += 61;
		tm.tm_mday = 1 + s / 86400 % 365;	/* normalized by mktime */
		tm.tm_hour = s / 3600 % 24;
		tm.tm_min = s / 60 % 60;
		tm.tm_sec = s % 60;
		bench_keep(fn(&tm));
	}
}

int main(int argc, char **argv)
{
	struct bench *b = bench_init("bench_tz", argc, argv);
	const char *path = getenv("URCU_RSEQ_TZ_PRELOAD");
	void *h;
	conv_fn pre_local, pre_gm;
	/* 2026-01-01 and 2100-01-01, UTC. */
	static struct conv g_now = { localtime_r, 1767225600 };
	static struct conv g_far = { localtime_r, 4102444800 };
	static struct conv g_gm = { gmtime_r, 1767225600 };
	static struct conv p_now, p_far, p_gm;
	static mk_fn g_mk = mktime, p_mk;

	if (!path)
		path = TZ_PRELOAD_PATH;
	setenv("TZ", "Europe/Paris", 1);
	tzset();
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	pre_local = h ? (conv_fn)dlsym(h, "localtime_r") : NULL;
	pre_gm = h ? (conv_fn)dlsym(h, "gmtime_r") : NULL;
	p_mk = h ? (mk_fn)dlsym(h, "mktime") : NULL;
	if (!pre_local || !pre_gm || !p_mk) {
		fprintf(stderr, "bench_tz: cannot load %s: %s\n", path,
			dlerror());
		return 1;
	}
	p_now = (struct conv){ pre_local, g_now.base };
	p_far = (struct conv){ pre_local, g_far.base };
	p_gm = (struct conv){ pre_gm, g_gm.base };
	{
		const struct bench_def now[] = {
			{ .name = "glibc_localtime_r", .op = op_conv, .arg = &g_now },
			{ .name = "preload_localtime_r", .op = op_conv, .arg = &p_now },
		};
		const struct bench_def far[] = {
			{ .name = "glibc_localtime_r_2100", .op = op_conv, .arg = &g_far },
			{ .name = "preload_localtime_r_2100", .op = op_conv, .arg = &p_far },
		};
		const struct bench_def gm[] = {
			{ .name = "glibc_gmtime_r", .op = op_conv, .arg = &g_gm },
			{ .name = "preload_gmtime_r", .op = op_conv, .arg = &p_gm },
		};

		BENCH_GROUP(b, "localtime_r", BENCH_THREADS(1, 2, 8, 32), now);
		BENCH_GROUP(b, "localtime_r_footer", BENCH_THREADS(1, 8), far);
		const struct bench_def mk[] = {
			{ .name = "glibc_mktime", .op = op_mk, .arg = &g_mk },
			{ .name = "preload_mktime", .op = op_mk, .arg = &p_mk },
		};

		BENCH_GROUP(b, "gmtime_r", BENCH_THREADS(1, 8), gm);
		BENCH_GROUP(b, "mktime", BENCH_THREADS(1, 2, 8, 32), mk);
	}
	return bench_run(b);
}
