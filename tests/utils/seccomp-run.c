// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * seccomp-run: run a command with parts of the kernel interface denied, to
 * test the library's fallbacks.
 *
 *   seccomp-run [--deny rseq] [--deny membarrier-rseq] [--] command [args]
 *
 * rseq:            the rseq system call fails with ENOSYS (as on a kernel
 *                  without it). glibc's own registration at startup fails
 *                  too, so the library meets the denial on its own area.
 * membarrier-rseq: the RSEQ fence commands of membarrier fail with EPERM
 *                  (as under a container runtime's filter).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <seccomp.h>

#ifndef MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ
#define MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ		(1 << 7)
#define MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ	(1 << 8)
#endif

static void usage(void)
{
	fprintf(stderr, "usage: seccomp-run [--deny rseq|membarrier-rseq]... "
		"[--] command [args]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int i, rc = 0;

	if (!ctx) {
		fprintf(stderr, "seccomp-run: seccomp_init failed\n");
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (strcmp(argv[i], "--deny") || i + 1 >= argc)
			break;
		i++;
		if (!strcmp(argv[i], "rseq")) {
			rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
					SCMP_SYS(rseq), 0);
		} else if (!strcmp(argv[i], "membarrier-rseq")) {
			rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
				SCMP_SYS(membarrier), 1,
				SCMP_A0(SCMP_CMP_EQ,
					MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ));
			rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
				SCMP_SYS(membarrier), 1,
				SCMP_A0(SCMP_CMP_EQ,
					MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ));
		} else {
			usage();
		}
	}
	if (i >= argc)
		usage();
	if (rc || seccomp_load(ctx)) {
		fprintf(stderr, "seccomp-run: cannot install the filter\n");
		return 2;
	}
	seccomp_release(ctx);
	execvp(argv[i], &argv[i]);
	fprintf(stderr, "seccomp-run: %s: %s\n", argv[i], strerror(errno));
	return 127;
}
