// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * src/pthread-cond-preload.c - liburcu-rseq-pthread-cond.so: the pthread_cond
 * face of urcu_cond, for LD_PRELOAD into unmodified programs. Each function
 * is a thin shim over the public urcu_cond API of liburcu-rseq.so (one
 * implementation, two faces); doc/pthread-cond-preload.md tells how to use it.
 *
 * Layout of a pthread_cond_t (48 bytes with glibc) under this library:
 *
 *	bytes  0-23  struct urcu_cond: wait-stack head, queue lock, flags,
 *	             clock, reserved; all zero in PTHREAD_COND_INITIALIZER
 *	bytes 24-35  unused, zero
 *	bytes 36-39  glibc's __wrefs: its bit 0 is glibc's "process-shared"
 *	             flag. We never write it; a condition whose bit 0 is set
 *	             was initialized by glibc's pthread_cond_init() for
 *	             PTHREAD_PROCESS_SHARED and every call is forwarded to glibc.
 *	bytes 40-47  unused, zero
 *
 * A zero-filled condition is therefore private and ours, as glibc's own
 * zero-filled condition is private. Process-shared conditions go to glibc
 * because a wait-stack links nodes on the waiters' stacks by address: that
 * cannot work across address spaces.
 *
 * glibc declares the pointer arguments nonnull, so a NULL condition is
 * undefined behaviour here as it is there (the compiler drops NULL tests).
 *
 * The definitions carry no symbol version: a program that references
 * pthread_cond_wait@GLIBC_2.3.2 binds to an unversioned definition in a
 * preloaded object, which the dynamic linker finds before libc.
 */
#ifndef _GNU_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/uatomic.h>
#include <urcu/cond.h>

#define PRELOAD_API	__attribute__((visibility("default")))

/* glibc's process-shared flag in __wrefs (__PTHREAD_COND_SHARED_MASK). */
#define GLIBC_COND_SHARED	1U

/* Our state ends before glibc's flag word, which we must never write. */
typedef char urcu_cond_below_wrefs[sizeof(struct urcu_cond)
	<= offsetof(pthread_cond_t, __data.__wrefs) ? 1 : -1];
typedef char pthread_cond_is_48_bytes[sizeof(pthread_cond_t) == 48 ? 1 : -1];

enum preload_fn {
	FN_INIT,
	FN_DESTROY,
	FN_WAIT,
	FN_TIMEDWAIT,
	FN_CLOCKWAIT,
	FN_SIGNAL,
	FN_BROADCAST,
	NR_FN,
};

static const char *const fn_names[NR_FN] = {
	"pthread_cond_init", "pthread_cond_destroy", "pthread_cond_wait",
	"pthread_cond_timedwait", "pthread_cond_clockwait",
	"pthread_cond_signal", "pthread_cond_broadcast",
};

/*
 * Versions of glibc's current implementation (x86-64: 2.3.2 is the default
 * version, 2.2.5 the old ABI we must not get). Other architectures have one
 * version: plain dlsym() returns the default.
 */
static const char *const fn_versions[NR_FN][2] = {
	{ "GLIBC_2.3.2" }, { "GLIBC_2.3.2" }, { "GLIBC_2.3.2" },
	{ "GLIBC_2.3.2" }, { "GLIBC_2.34", "GLIBC_2.30" },
	{ "GLIBC_2.3.2" }, { "GLIBC_2.3.2" },
};

static void *real_fns[NR_FN];

/* glibc's function @fn, resolved once (idempotent, so races are harmless). */
static void *real_fn(enum preload_fn fn)
{
	void *f = CMM_LOAD_SHARED(real_fns[fn]);
	unsigned int i;

	if (caa_likely(f))
		return f;
	for (i = 0; i < 2 && !f && fn_versions[fn][i]; i++)
		f = dlvsym(RTLD_NEXT, fn_names[fn], fn_versions[fn][i]);
	if (!f)
		f = dlsym(RTLD_NEXT, fn_names[fn]);
	if (!f) {
		fprintf(stderr, "liburcu-rseq-pthread-cond: no %s in libc\n",
			fn_names[fn]);
		abort();
	}
	CMM_STORE_SHARED(real_fns[fn], f);
	return f;
}

/*
 * URCU_RSEQ_PRELOAD_STATS=1: count calls, print the counts at exit. Off,
 * the only cost is one load of a flag that never changes.
 */
static int stats_on;
static int stats_fd = -1;	/* a copy of stderr: programs close theirs */
static unsigned long stats[NR_FN + 1];	/* + forwarded to glibc */

static inline void count(enum preload_fn fn, bool forwarded)
{
	if (caa_likely(!stats_on))
		return;
	uatomic_inc(&stats[fn]);
	if (forwarded)
		uatomic_inc(&stats[NR_FN]);
}

__attribute__((constructor))
static void preload_init(void)
{
	const char *s = getenv("URCU_RSEQ_PRELOAD_STATS");

	stats_on = s && *s && strcmp(s, "0") != 0;
	if (stats_on)
		stats_fd = fcntl(2, F_DUPFD_CLOEXEC, 100);
}

__attribute__((destructor))
static void preload_fini(void)
{
	if (!stats_on || stats_fd < 0)
		return;
	dprintf(stats_fd, "urcu-rseq pthread_cond preload: init %lu destroy %lu "
		"wait %lu timedwait %lu clockwait %lu signal %lu broadcast %lu "
		"forwarded %lu\n",
		uatomic_read(&stats[FN_INIT]), uatomic_read(&stats[FN_DESTROY]),
		uatomic_read(&stats[FN_WAIT]), uatomic_read(&stats[FN_TIMEDWAIT]),
		uatomic_read(&stats[FN_CLOCKWAIT]), uatomic_read(&stats[FN_SIGNAL]),
		uatomic_read(&stats[FN_BROADCAST]), uatomic_read(&stats[NR_FN]));
}

/* Tests find this with dlsym() to know the preload is in effect. */
PRELOAD_API const int urcu_rseq_pthread_cond_preload = 1;

static inline bool forwarded(pthread_cond_t *cond)
{
	return CMM_LOAD_SHARED(cond->__data.__wrefs) & GLIBC_COND_SHARED;
}

static inline struct urcu_cond *ucond(pthread_cond_t *cond)
{
	return (struct urcu_cond *) cond;
}

typedef int (*init_fn)(pthread_cond_t *, const pthread_condattr_t *);
typedef int (*cond_fn)(pthread_cond_t *);
typedef int (*wait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*timedwait_fn)(pthread_cond_t *, pthread_mutex_t *,
		const struct timespec *);
typedef int (*clockwait_fn)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
		const struct timespec *);

PRELOAD_API int pthread_cond_init(pthread_cond_t *cond,
		const pthread_condattr_t *attr)
{
	int pshared = PTHREAD_PROCESS_PRIVATE;
	clockid_t clock = CLOCK_REALTIME;

	if (attr && (pthread_condattr_getpshared(attr, &pshared)
			|| pthread_condattr_getclock(attr, &clock)))
		return EINVAL;
	if (pshared == PTHREAD_PROCESS_SHARED) {
		count(FN_INIT, true);
		/* glibc sets the shared flag that forwards later calls. */
		return ((init_fn) real_fn(FN_INIT))(cond, attr);
	}
	count(FN_INIT, false);
	memset(cond, 0, sizeof(*cond));
	return urcu_cond_init(ucond(cond), clock);
}

PRELOAD_API int pthread_cond_destroy(pthread_cond_t *cond)
{
	if (forwarded(cond)) {
		count(FN_DESTROY, true);
		return ((cond_fn) real_fn(FN_DESTROY))(cond);
	}
	count(FN_DESTROY, false);
	return urcu_cond_destroy(ucond(cond));
}

PRELOAD_API int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	if (forwarded(cond)) {
		count(FN_WAIT, true);
		return ((wait_fn) real_fn(FN_WAIT))(cond, mutex);
	}
	count(FN_WAIT, false);
	return urcu_cond_wait(ucond(cond), mutex);
}

/*
 * glibc rejects only a tv_nsec outside [0, 1e9) (EINVAL, the mutex left
 * alone); a negative tv_sec is a deadline that has passed: the wait
 * releases and re-acquires the mutex and returns ETIMEDOUT. urcu_cond
 * calls a negative tv_sec invalid; hand it the clock's epoch instead, a
 * deadline passed on every clock, keeping tv_nsec so that a bad one is
 * still EINVAL.
 */
static inline const struct timespec *glibc_deadline(
		const struct timespec *abstime, struct timespec *tmp)
{
	if (caa_likely(abstime->tv_sec >= 0))
		return abstime;
	tmp->tv_sec = 0;
	tmp->tv_nsec = abstime->tv_nsec;
	return tmp;
}

PRELOAD_API int pthread_cond_timedwait(pthread_cond_t *cond,
		pthread_mutex_t *mutex, const struct timespec *abstime)
{
	struct timespec tmp;

	if (forwarded(cond)) {
		count(FN_TIMEDWAIT, true);
		return ((timedwait_fn) real_fn(FN_TIMEDWAIT))(cond, mutex,
				abstime);
	}
	count(FN_TIMEDWAIT, false);
	return urcu_cond_timedwait(ucond(cond), mutex,
			glibc_deadline(abstime, &tmp));
}

PRELOAD_API int pthread_cond_clockwait(pthread_cond_t *cond,
		pthread_mutex_t *mutex, clockid_t clock,
		const struct timespec *abstime)
{
	struct timespec tmp;

	if (forwarded(cond)) {
		count(FN_CLOCKWAIT, true);
		return ((clockwait_fn) real_fn(FN_CLOCKWAIT))(cond, mutex,
				clock, abstime);
	}
	count(FN_CLOCKWAIT, false);
	return urcu_cond_clockwait(ucond(cond), mutex, clock,
			glibc_deadline(abstime, &tmp));
}

PRELOAD_API int pthread_cond_signal(pthread_cond_t *cond)
{
	if (forwarded(cond)) {
		count(FN_SIGNAL, true);
		return ((cond_fn) real_fn(FN_SIGNAL))(cond);
	}
	count(FN_SIGNAL, false);
	return urcu_cond_signal(ucond(cond));
}

PRELOAD_API int pthread_cond_broadcast(pthread_cond_t *cond)
{
	if (forwarded(cond)) {
		count(FN_BROADCAST, true);
		return ((cond_fn) real_fn(FN_BROADCAST))(cond);
	}
	count(FN_BROADCAST, false);
	return urcu_cond_broadcast(ucond(cond));
}
