// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The thread layer where rseq cannot be used: glibc's registration disabled
 * (GLIBC_TUNABLES=glibc.pthread.rseq=0) and the rseq system call denied by a
 * seccomp filter. The program re-executes itself with the tunable set, then
 * installs the filter before the library's first use of rseq, so the lazy
 * registration meets the filter.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <seccomp.h>
#include <urcu/rseq.h>
#include "tap.h"

#define NR_TESTS 9

static int child(void)
{
	scmp_filter_ctx ctx;
	intptr_t slot = 0;
	int cpu, idx;

	plan_tests(NR_TESTS);
	ok(!(urcu_rseq_features & URCU_RSEQ_FEATURE_GLIBC_AREA),
		"glibc's registration is off: the library uses its own area");

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
			SCMP_SYS(rseq), 0) || seccomp_load(ctx)) {
		skip(NR_TESTS - 1, "cannot install a seccomp filter");
		return exit_status();
	}
	seccomp_release(ctx);

	errno = 0;
	ok(urcu_rseq_thread_register() == -1 && errno == ENOSYS,
		"registration denied by seccomp reports ENOSYS");
	ok(!urcu_rseq_available(), "rseq reported unavailable");
	idx = urcu_rseq_index(URCU_RSEQ_INDEX_CPU);
	ok(idx == -1, "urcu_rseq_index() sends callers to their fallback");
	cpu = urcu_rseq_cpu();
	ok(cpu >= 0 && cpu < urcu_rseq_nr_cpus(),
		"urcu_rseq_cpu() still valid through sched_getcpu() (%d)", cpu);
	ok(urcu_rseq_mm_cid() == -1, "no mm_cid without rseq");
	ok(urcu_rseq_node() >= 0, "urcu_rseq_node() still valid");
	ok(urcu_rseq_atomic_cmpeqv_storev(&slot, 0, 5) == URCU_RSEQ_COMMITTED
		&& slot == 5, "atomic fallback form of cmpeqv_storev works");
	/* The fence needs no registered area: membarrier is not denied. */
	errno = 0;
	ok(urcu_rseq_fence() == 0 || errno != 0,
		"the fence works or reports a clear error");
	return exit_status();
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	ssize_t n;

	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child();
	/*
	 * Exec the path /proc/self/exe names, not the link itself: under
	 * valgrind the link is the tool's own binary, while readlink() is
	 * answered with the program's path.
	 */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		perror("readlink");
		return 1;
	}
	self[n] = '\0';
	setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
	execl(self, argv[0], "--child", (char *) NULL);
	perror("execl");
	return 1;
}
