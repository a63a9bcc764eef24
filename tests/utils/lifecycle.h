// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tests/utils/lifecycle.h - what the lifecycle, fork and thread-exit
 * tortures share.
 *
 * Quarantine: a torture that destroys and frees an object hands the memory
 * to stress_quarantine() instead of free(). The block is filled with an
 * image (the caller's choice: bytes that look like a live object, so that
 * a late cmpxchg or store of the library succeeds and changes them) and
 * kept in a ring; when it leaves the ring, or at stress_quarantine_drain(),
 * it is compared with the image, and every block that changed counts as a
 * late write. Under AddressSanitizer the block is freed at once instead:
 * ASan's own quarantine then reports any late access, read or write, with
 * its stack.
 *
 * Fork: stress_fork_check() forks, runs a function in the child, which must
 * finish within a deadline, and tells the parent how it ended.
 *
 * Both are thread-safe.
 */
#ifndef URCU_RSEQ_TESTS_LIFECYCLE_H
#define URCU_RSEQ_TESTS_LIFECYCLE_H

#include <stddef.h>

/*
 * STRESS_UNDER_ASAN: 1 in an AddressSanitizer build. GCC 12's ASan takes no
 * allocator locks around fork(), so a fork child that creates a thread can
 * hang inside ASan on a lock another parent thread held: the tortures'
 * children skip that step there.
 */
#if defined(__SANITIZE_ADDRESS__)
#define STRESS_UNDER_ASAN	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRESS_UNDER_ASAN	1
#endif
#endif
#ifndef STRESS_UNDER_ASAN
#define STRESS_UNDER_ASAN	0
#endif

/*
 * Under ThreadSanitizer a fork child of a threaded parent cannot create
 * threads on the stacks of the parent's (glibc hands them out again, and
 * ThreadSanitizer, which still counts the parent's threads, stops on a
 * "dup thread"): tests whose children must do exactly that skip there.
 */
#if defined(__SANITIZE_THREAD__)
#define STRESS_UNDER_TSAN	1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_UNDER_TSAN	1
#endif
#endif
#ifndef STRESS_UNDER_TSAN
#define STRESS_UNDER_TSAN	0
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Retire @p (@size bytes, from malloc): fill it with @image (@size bytes;
 * NULL: 0xa5 in every byte) and keep it for a while, or free it at once
 * under ASan.
 */
void stress_quarantine(void *p, size_t size, const void *image);
/* Check and free every block still kept; returns stress_late_writes(). */
unsigned long stress_quarantine_drain(void);
/* Blocks found changed after they were retired, so far. */
unsigned long stress_late_writes(void);
/* Blocks retired so far. */
unsigned long stress_quarantined(void);

/* How a child of stress_fork_check() ended. */
enum stress_fork_result {
	STRESS_FORK_OK = 0,	/* @fn returned 0 */
	STRESS_FORK_FAILED,	/* @fn returned non-zero, or a signal killed it */
	STRESS_FORK_HUNG,	/* still running at the deadline: killed */
	STRESS_FORK_ERROR,	/* fork() or waitpid() failed */
};

/*
 * fork(); the child runs @fn(@arg) and _exit()s with its result (no atexit
 * handlers: the parent's TAP state is not the child's). The parent waits
 * up to @timeout_ms, then kills the child. Call it while other threads are
 * busy inside the primitive under test.
 */
enum stress_fork_result stress_fork_check(int (*fn)(void *arg), void *arg,
		unsigned long timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* URCU_RSEQ_TESTS_LIFECYCLE_H */
