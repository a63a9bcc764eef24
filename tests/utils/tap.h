// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tests/utils/tap.h - a small producer of the Test Anything Protocol for
 * the C tests, read by automake's tap-driver.sh.
 *
 * Guarantees: every function may be called from any thread (one mutex
 * orders the output and the counters); each result line is flushed before
 * the call returns, so a fork() never duplicates buffered output. With
 * plan_no_plan() the trailing "1..N" is printed at exit by the process that
 * made the plan only (a child that calls exit() prints nothing extra).
 */
#ifndef URCU_RSEQ_TESTS_TAP_H
#define URCU_RSEQ_TESTS_TAP_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TAP_PRINTF(f, a)	__attribute__((format(printf, f, a)))
#define TAP_NORETURN		__attribute__((noreturn))

/* Announce @n tests ("1..n" now); at most one plan per program. */
void plan_tests(unsigned int n);
/* No plan announced up front: "1..N" is printed at exit. */
void plan_no_plan(void);
/* Nothing to test here: prints "1..0 # SKIP reason" and exits 0. */
void skip_all(const char *fmt, ...) TAP_PRINTF(1, 2) TAP_NORETURN;

/* One result; returns @cond (0 or 1) so callers can branch on it. */
int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
	TAP_PRINTF(4, 5);
#define ok(cond, ...)	tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
/* ok() whose description is the condition's source text. */
#define ok1(cond)	tap_ok(!!(cond), __FILE__, __LINE__, "%s", #cond)

/* A comment line ("# ...") that the driver copies to the test's log. */
void diag(const char *fmt, ...) TAP_PRINTF(1, 2);
/* Record @n results as skipped ("ok N # SKIP reason"): they pass. */
void skip(unsigned int n, const char *fmt, ...) TAP_PRINTF(2, 3);
/* Abort the whole run: "Bail out! reason", then exit(255). */
void bail_out(const char *fmt, ...) TAP_PRINTF(1, 2) TAP_NORETURN;

/*
 * 0 when every result passed and the plan (if any) matches the count so
 * far; otherwise non-zero: the number of failures (at most 254), or 255
 * for a plan mismatch. Meant for "return exit_status();" at the end of main.
 */
int exit_status(void);

/* Counters, for tests that report on themselves. */
unsigned int tap_tests_run(void);
unsigned int tap_tests_failed(void);

#ifdef __cplusplus
}
#endif

#endif /* URCU_RSEQ_TESTS_TAP_H */
