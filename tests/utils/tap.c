// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tests/utils/tap.c - TAP producer; see tap.h for the contract.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

enum plan_kind { PLAN_NONE, PLAN_FIXED, PLAN_NO_PLAN, PLAN_SKIP_ALL };

static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;
static enum plan_kind plan_kind;
static unsigned int planned;
static unsigned int run;
static unsigned int failed;
static pid_t plan_pid;		/* only this process finishes the plan */

static void tap_at_exit(void)
{
	pthread_mutex_lock(&tap_lock);
	if (getpid() != plan_pid)
		goto out;
	if (plan_kind == PLAN_NO_PLAN) {
		printf("1..%u\n", run);
	} else if (plan_kind == PLAN_FIXED && run != planned) {
		printf("# Looks like you planned %u tests but ran %u.\n",
			planned, run);
	}
	if (failed)
		printf("# Looks like you failed %u test%s of %u.\n", failed,
			failed == 1 ? "" : "s", run);
	fflush(stdout);
out:
	pthread_mutex_unlock(&tap_lock);
}

/* Called with tap_lock held. */
static void set_plan(enum plan_kind kind)
{
	if (plan_kind != PLAN_NONE) {
		printf("Bail out! the plan was set twice\n");
		fflush(stdout);
		_exit(255);
	}
	plan_kind = kind;
	plan_pid = getpid();
	atexit(tap_at_exit);
}

void plan_tests(unsigned int n)
{
	pthread_mutex_lock(&tap_lock);
	set_plan(PLAN_FIXED);
	planned = n;
	printf("1..%u\n", n);
	fflush(stdout);
	pthread_mutex_unlock(&tap_lock);
}

void plan_no_plan(void)
{
	pthread_mutex_lock(&tap_lock);
	set_plan(PLAN_NO_PLAN);
	pthread_mutex_unlock(&tap_lock);
}

/* Called with tap_lock held; a description never spans lines in TAP. */
static void print_oneline(const char *fmt, va_list ap)
{
	char buf[1024];
	char *p;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	for (p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	fputs(buf, stdout);
}

int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&tap_lock);
	run++;
	if (!cond)
		failed++;
	printf("%sok %u - ", cond ? "" : "not ", run);
	va_start(ap, fmt);
	print_oneline(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!cond)
		printf("#   Failed test at %s line %d.\n", file, line);
	fflush(stdout);
	pthread_mutex_unlock(&tap_lock);
	return cond;
}

/* Called with tap_lock held: each line of the message becomes "# line". */
static void vdiag_locked(const char *fmt, va_list ap)
{
	char buf[4096];
	char *line, *next;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	for (line = buf; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (next && !*next)
			next = NULL;
		printf("# %s\n", line);
	}
	fflush(stdout);
}

void diag(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&tap_lock);
	va_start(ap, fmt);
	vdiag_locked(fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&tap_lock);
}

static void vskip_locked(unsigned int n, const char *fmt, va_list ap)
{
	char reason[512];
	char *p;

	vsnprintf(reason, sizeof(reason), fmt, ap);
	for (p = reason; *p; p++)
		if (*p == '\n')
			*p = ' ';
	while (n--)
		printf("ok %u # SKIP %s\n", ++run, reason);
	fflush(stdout);
}

void skip(unsigned int n, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&tap_lock);
	va_start(ap, fmt);
	vskip_locked(n, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&tap_lock);
}

void skip_all(const char *fmt, ...)
{
	va_list ap;
	int status = 0;

	pthread_mutex_lock(&tap_lock);
	va_start(ap, fmt);
	if (run == 0 && plan_kind != PLAN_FIXED) {
		/* Nothing reported yet: the whole program is one skip. */
		printf("1..0 # SKIP ");
		print_oneline(fmt, ap);
		putchar('\n');
		plan_kind = PLAN_SKIP_ALL;
	} else if (plan_kind == PLAN_FIXED) {
		/* "1..n" is out already: skip what is left of it. */
		vskip_locked(planned > run ? planned - run : 0, fmt, ap);
		status = failed ? 1 : 0;
	} else {
		status = failed ? 1 : 0;
	}
	va_end(ap);
	fflush(stdout);
	pthread_mutex_unlock(&tap_lock);
	exit(status);
}

void bail_out(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&tap_lock);
	printf("Bail out! ");
	va_start(ap, fmt);
	print_oneline(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	plan_kind = PLAN_SKIP_ALL;	/* no trailing plan after a bail-out */
	pthread_mutex_unlock(&tap_lock);
	exit(255);
}

int exit_status(void)
{
	int status;

	pthread_mutex_lock(&tap_lock);
	if (plan_kind == PLAN_FIXED && run != planned)
		status = 255;
	else
		status = failed > 254 ? 254 : (int) failed;
	pthread_mutex_unlock(&tap_lock);
	return status;
}

unsigned int tap_tests_run(void)
{
	unsigned int n;

	pthread_mutex_lock(&tap_lock);
	n = run;
	pthread_mutex_unlock(&tap_lock);
	return n;
}

unsigned int tap_tests_failed(void)
{
	unsigned int n;

	pthread_mutex_lock(&tap_lock);
	n = failed;
	pthread_mutex_unlock(&tap_lock);
	return n;
}
