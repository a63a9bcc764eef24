// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tz_logger - a small multi-threaded logger, the "real program" of the
 * time-zone preload's benchmark (bench_tz_logger.sh runs it with and
 * without liburcu-rseq-tz.so). Each thread formats access-log lines the
 * way servers do, with clock_gettime(), localtime_r() and strftime()
 * ("2026-12-05T09:12:44.123456+0100 CET [3] GET /item/42 200"), gathers
 * them in a 64 KiB buffer and write()s it to a file (default /dev/null).
 *
 * usage: tz_logger THREADS MILLISECONDS [FILE]
 * Prints: lines  seconds  lines/s  cpu-seconds
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static int fd;

struct worker {
	pthread_t th;
	int id;
	unsigned long lines;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	static __thread char buf[65536];
	size_t len = 0;
	unsigned long n = 0;

	while (!stop) {
		struct timespec ts;
		struct tm tm;
		char stamp[64];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		len += snprintf(buf + len, sizeof(buf) - len,
			"%s.%06ld%+03ld%02ld %s [%d] GET /item/%lu 200\n", stamp,
			ts.tv_nsec / 1000, tm.tm_gmtoff / 3600,
			labs(tm.tm_gmtoff / 60 % 60), tm.tm_zone, w->id, n % 1000);
		if (sizeof(buf) - len < 256) {
			if (write(fd, buf, len) < 0)
				break;
			len = 0;
		}
		n++;
	}
	if (len && write(fd, buf, len) < 0)
		n = 0;
	w->lines = n;
	return NULL;
}

int main(int argc, char **argv)
{
	int i, nr = argc > 1 ? atoi(argv[1]) : 1;
	long ms = argc > 2 ? atol(argv[2]) : 300;
	struct worker *w;
	struct timespec a, b, d = { ms / 1000, ms % 1000 * 1000000 };
	struct rusage ru;
	unsigned long total = 0;
	double secs, cpu;

	fd = open(argc > 3 ? argv[3] : "/dev/null",
		O_WRONLY | O_CREAT | O_APPEND, 0644);
	w = calloc(nr, sizeof(*w));
	if (fd < 0 || !w || nr < 1)
		return 1;
	tzset();
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < nr; i++) {
		w[i].id = i;
		pthread_create(&w[i].th, NULL, run, &w[i]);
	}
	nanosleep(&d, NULL);
	stop = 1;
	for (i = 0; i < nr; i++) {
		pthread_join(w[i].th, NULL);
		total += w[i].lines;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	getrusage(RUSAGE_SELF, &ru);
	secs = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6
		+ ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	printf("%lu %.6f %.0f %.6f\n", total, secs, total / secs, cpu);
	return 0;
}
