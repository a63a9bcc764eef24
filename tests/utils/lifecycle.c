// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tests/utils/lifecycle.c - quarantine of freed objects and fork checks
 * for the tortures; see lifecycle.h.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <urcu/uatomic.h>

#include "lifecycle.h"
#include "tap.h"


/* Blocks kept: long enough for a late write to land, bounded memory. */
#define RING_SIZE	4096
#define POISON		0xa5

struct kept {
	void *p;
	void *image;		/* NULL: POISON in every byte */
	size_t size;
};

static struct kept ring[RING_SIZE];
static unsigned int ring_next;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long late_writes;
static unsigned long retired;

static bool intact(const struct kept *k)
{
	const unsigned char *b = (const unsigned char *) k->p;
	size_t i;

	if (k->image)
		return !memcmp(k->p, k->image, k->size);
	for (i = 0; i < k->size; i++)
		if (b[i] != POISON)
			return false;
	return true;
}

/* Check and free one kept block; ring_lock held. */
static void release(struct kept *k)
{
	if (!k->p)
		return;
	if (!intact(k)) {
		late_writes++;
		diag("quarantine: a block of %zu bytes at %p changed after it "
				"was freed", k->size, k->p);
	}
	free(k->p);
	free(k->image);
	k->p = NULL;
	k->image = NULL;
}

void stress_quarantine(void *p, size_t size, const void *image)
{
	struct kept *k;
	void *copy = NULL;

	if (!p)
		return;
	uatomic_inc(&retired);
	if (STRESS_UNDER_ASAN) {
		free(p);
		return;
	}
	if (image) {
		copy = malloc(size);
		if (!copy)
			bail_out("quarantine: out of memory");
		memcpy(copy, image, size);
		memcpy(p, image, size);
	} else {
		memset(p, POISON, size);
	}
	pthread_mutex_lock(&ring_lock);
	k = &ring[ring_next];
	ring_next = (ring_next + 1) % RING_SIZE;
	release(k);
	k->p = p;
	k->image = copy;
	k->size = size;
	pthread_mutex_unlock(&ring_lock);
}

unsigned long stress_quarantine_drain(void)
{
	unsigned int i;
	unsigned long n;

	pthread_mutex_lock(&ring_lock);
	for (i = 0; i < RING_SIZE; i++)
		release(&ring[i]);
	n = late_writes;
	pthread_mutex_unlock(&ring_lock);
	return n;
}

unsigned long stress_late_writes(void)
{
	unsigned long n;

	pthread_mutex_lock(&ring_lock);
	n = late_writes;
	pthread_mutex_unlock(&ring_lock);
	return n;
}

unsigned long stress_quarantined(void)
{
	return uatomic_read(&retired);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

enum stress_fork_result stress_fork_check(int (*fn)(void *arg), void *arg,
		unsigned long timeout_ms)
{
	int64_t deadline;
	int status;
	pid_t pid, r;

	pid = fork();
	if (pid < 0)
		return STRESS_FORK_ERROR;
	if (pid == 0)
		_exit(fn(arg) ? 1 : 0);
	deadline = mono_ms() + (int64_t) timeout_ms;
	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return STRESS_FORK_ERROR;
		if (mono_ms() > deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return STRESS_FORK_HUNG;
		}
		usleep(1000);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return STRESS_FORK_OK;
	return STRESS_FORK_FAILED;
}
