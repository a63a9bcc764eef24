// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Self-test of the VM test runner (extras/vm/run-vm.sh): checks, in TAP,
 * that the guest looks the way the library's tests expect it to.
 *
 *   gcc -static -O2 -pthread -o selftest extras/vm/selftest.c
 *   aarch64-linux-gnu-gcc -static -O2 -pthread -o selftest-aarch64 extras/vm/selftest.c
 *
 * Usage: selftest [EXPECTED_CPUS]   (default: $VM_CPUS, set by the VM's /init)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE 27
#endif
#ifndef MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ
#define MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ (1 << 7)
#define MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ (1 << 8)
#endif
#ifndef MEMBARRIER_CMD_FLAG_CPU
#define MEMBARRIER_CMD_FLAG_CPU (1 << 0)
#endif

static int test_num, failures;

static void check(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++test_num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!cond)
		failures++;
}

static void skip(const char *why, const char *what)
{
	printf("ok %d - %s # SKIP %s\n", ++test_num, what, why);
}

static int membarrier(int cmd, unsigned int flags, int cpu_id)
{
	return syscall(__NR_membarrier, cmd, flags, cpu_id);
}

/* This thread's rseq area, as registered by glibc. */
static volatile struct rseq *rseq_area(void)
{
	return (volatile struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
}

static long ncpus_conf;

/*
 * Is the rseq cpu_id of this thread valid and consistent with
 * sched_getcpu()?  Retries a few times: the thread may migrate between the
 * two reads.
 */
static int rseq_cpu_ok(int *cpu_out)
{
	for (int i = 0; i < 100; i++) {
		int32_t a = (int32_t)rseq_area()->cpu_id;
		int b = sched_getcpu();
		int32_t c = (int32_t)rseq_area()->cpu_id;

		*cpu_out = a;
		if (a < 0 || a >= ncpus_conf)
			return 0;
		if (a == b && b == c)
			return 1;
	}
	return 0;
}

static void *thread_fn(void *arg)
{
	int cpu;

	(void)arg;
	return (void *)(intptr_t)rseq_cpu_ok(&cpu);
}

static int kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return 0;
	return ma > major || (ma == major && mi >= minor);
}

int main(int argc, char **argv)
{
	const char *exp = argc > 1 ? argv[1] : getenv("VM_CPUS");
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	struct utsname u;
	int cpu, ret;

	ncpus_conf = sysconf(_SC_NPROCESSORS_CONF);
	uname(&u);
	printf("1..9\n");
	printf("# kernel %s %s, %ld CPUs online, %ld configured\n",
	       u.release, u.machine, online, ncpus_conf);

	/* 1: CPU count */
	if (exp && *exp)
		check(online == atol(exp), "%ld CPUs online, expected %s", online, exp);
	else
		skip("no expected count given", "CPUs online");

	/* 2-4: glibc registered rseq for the main thread and for new threads */
	check(__rseq_size > 0, "glibc registered rseq (__rseq_size=%u, __rseq_offset=%ld)",
	      __rseq_size, (long)__rseq_offset);
	if (__rseq_size > 0) {
		ret = rseq_cpu_ok(&cpu);
		check(ret, "rseq cpu_id of the main thread is valid (%d) and matches sched_getcpu()",
		      cpu);
		{
			int n = online > 0 ? (int)online : 1, bad = 0;
			pthread_t th[n];

			for (int i = 0; i < n; i++)
				if (pthread_create(&th[i], NULL, thread_fn, NULL))
					bad++, th[i] = 0;
			for (int i = 0; i < n; i++) {
				void *r = NULL;

				if (th[i] && !pthread_join(th[i], &r) && !r)
					bad++;
			}
			check(!bad, "rseq cpu_id valid in %d new threads (%d bad)", n, bad);
		}
	} else {
		skip("rseq not registered", "rseq cpu_id of the main thread");
		skip("rseq not registered", "rseq cpu_id in new threads");
	}

	/* 5: AT_RSEQ_FEATURE_SIZE exists from 6.3 on; 0 (absent) before */
	{
		unsigned long fs = getauxval(AT_RSEQ_FEATURE_SIZE);

		if (kernel_at_least(6, 3))
			check(fs >= 20, "getauxval(AT_RSEQ_FEATURE_SIZE) = %lu (>= 20 on %s)",
			      fs, u.release);
		else
			check(fs == 0, "getauxval(AT_RSEQ_FEATURE_SIZE) = %lu (0 on %s)",
			      fs, u.release);
	}

	/* 6-9: membarrier expedited rseq */
	ret = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	check(ret >= 0 && (ret & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) &&
	      (ret & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ),
	      "membarrier QUERY = %#x has PRIVATE_EXPEDITED_RSEQ and its REGISTER", ret);
	ret = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0);
	check(ret == 0, "membarrier REGISTER_PRIVATE_EXPEDITED_RSEQ = %d (%s)", ret,
	      ret ? strerror(errno) : "ok");
	ret = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0);
	check(ret == 0, "membarrier PRIVATE_EXPEDITED_RSEQ = %d (%s)", ret,
	      ret ? strerror(errno) : "ok");
	ret = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, MEMBARRIER_CMD_FLAG_CPU, 0);
	check(ret == 0, "membarrier PRIVATE_EXPEDITED_RSEQ on CPU 0 = %d (%s)", ret,
	      ret ? strerror(errno) : "ok");

	return failures ? 1 : 0;
}
