// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The rseq thread layer, the critical-section operations and the RSEQ
 * fence: registration, CPU numbers against pinning, mm_cid bounds, each
 * operation's semantics, its abort path (forced and under a signal storm),
 * the fence retiring a double buffer under oversubscription, and fork.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <urcu/uatomic.h>
#include <urcu/rseq.h>
#include "tap.h"
#include "stress.h"

#define SLOT_STRIDE	16	/* intptr_t: 128 bytes between CPUs' slots */

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE	27
#endif
#ifndef AT_RSEQ_ALIGN
#define AT_RSEQ_ALIGN		28
#endif

/* glibc >= 2.35; weak, so that the test links with other C libraries. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static int nr_cpus;
/* rseq system calls made through syscall(), that is by the library. */
static volatile int rseq_syscalls;

/* Retry an operation until it commits or fails its comparison. */
#define RSEQ_RETRY(mode, idx, op)					\
	({								\
		int _r;							\
		do {							\
			(idx) = urcu_rseq_index(mode);			\
			_r = (op);					\
		} while (_r == URCU_RSEQ_ABORTED);			\
		_r;							\
	})

static void test_registration(void)
{
	bool glibc = urcu_rseq_features & URCU_RSEQ_FEATURE_GLIBC_AREA;

	diag("rseq area: %s; node_id %s; mm_cid %s",
		glibc ? "glibc's" : "the library's own",
		(urcu_rseq_features & URCU_RSEQ_FEATURE_NODE_ID) ? "valid" : "absent",
		(urcu_rseq_features & URCU_RSEQ_FEATURE_MM_CID) ? "valid" :
			"absent (CPU-number path)");
	ok(urcu_rseq_thread_register() == 0, "register");
	ok(urcu_rseq_thread_register() == 0, "register again is idempotent");
	ok(urcu_rseq_available(), "rseq available to this thread");
	ok(urcu_rseq_thread_unregister() == 0, "unregister");
	ok(urcu_rseq_cpu() >= 0 && urcu_rseq_available(),
		"lazy registration on next use");
	ok(nr_cpus >= 1 && nr_cpus <= 65536, "possible CPUs: %d", nr_cpus);
}

static void test_cpu_numbers(void)
{
	cpu_set_t saved, set;
	int cpu, tried = 0, good = 0;

	sched_getaffinity(0, sizeof(saved), &saved);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &saved))
			continue;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			continue;
		tried++;
		if (urcu_rseq_cpu() == cpu && sched_getcpu() == cpu
				&& urcu_rseq_index(URCU_RSEQ_INDEX_CPU) == cpu)
			good++;
		else
			diag("pinned to %d, urcu_rseq_cpu() says %d", cpu,
				urcu_rseq_cpu());
	}
	sched_setaffinity(0, sizeof(saved), &saved);
	ok(tried > 0 && good == tried,
		"urcu_rseq_cpu() equals the pinned CPU for every CPU (%d/%d)",
		good, tried);
}

static void *mm_cid_thread(void *arg)
{
	int *out = arg;

	*out = urcu_rseq_mm_cid();
	return NULL;
}

static void test_mm_cid(void)
{
	int cids[8], i, bad = 0;
	pthread_t t[8];

	if (!(urcu_rseq_features & URCU_RSEQ_FEATURE_MM_CID)) {
		ok(urcu_rseq_mm_cid() == -1, "mm_cid absent: -1");
		ok(urcu_rseq_index_mode(URCU_RSEQ_INDEX_MM_CID)
				== URCU_RSEQ_INDEX_CPU,
			"mm_cid absent: CPU-number path");
		return;
	}
	for (i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, mm_cid_thread, &cids[i]);
	for (i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		if (cids[i] < 0 || cids[i] >= nr_cpus)
			bad++;
	}
	ok(bad == 0, "mm_cid of 8 threads within [0, %d)", nr_cpus);
	ok(urcu_rseq_index_mode(URCU_RSEQ_INDEX_MM_CID) == URCU_RSEQ_INDEX_MM_CID,
		"mm_cid mode granted");
}

/*
 * The fields the layer calls valid, derived here on its own: the kernel
 * fills node_id (24 bytes) and mm_cid (28) when both its feature size
 * (AT_RSEQ_FEATURE_SIZE: none before Linux 6.3, 28 on 6.3 to 7.0, 33 on
 * 7.1+) and the registered length cover them. glibc 2.41+ publishes its
 * registered feature size in __rseq_size (28 or 33); 2.35 to 2.40 publish
 * 20 for an area of 32 bytes; our own area is registered with the feature
 * size, rounded up to AT_RSEQ_ALIGN.
 */
static void test_fields(void)
{
	unsigned long feat = getauxval(AT_RSEQ_FEATURE_SIZE);
	bool glibc = &__rseq_size && &__rseq_offset && __rseq_size > 0
		&& !getenv("URCU_RSEQ_DISABLE");
	unsigned long align = getauxval(AT_RSEQ_ALIGN), len, covered;
	bool node_valid, cid_valid;
	cpu_set_t saved, set;
	int cpu, tried = 0, good = 0;
	unsigned int gcpu, gnode;

	if (!feat)
		feat = 20;
	if (glibc) {
		len = __rseq_size < 32 ? 32 : __rseq_size;
	} else {
		if (!align)
			align = 32;
		len = feat <= 32 ? 32 : (feat + align - 1) / align * align;
	}
	covered = feat < len ? feat : len;
	node_valid = covered >= URCU_RSEQ_FEATURE_SIZE_NODE_ID;
	cid_valid = covered >= URCU_RSEQ_FEATURE_SIZE_MM_CID;
	diag("AT_RSEQ_FEATURE_SIZE %lu, __rseq_size %u", getauxval(
		AT_RSEQ_FEATURE_SIZE), &__rseq_size ? __rseq_size : 0);
	ok(glibc == !!(urcu_rseq_features & URCU_RSEQ_FEATURE_GLIBC_AREA)
		&& (!glibc || (char *) urcu_rseq_area() == (char *)
			urcu_rseq_thread_pointer() + __rseq_offset),
		"the area is glibc's exactly when glibc registered one");
	ok(node_valid == !!(urcu_rseq_features & URCU_RSEQ_FEATURE_NODE_ID)
		&& cid_valid == !!(urcu_rseq_features & URCU_RSEQ_FEATURE_MM_CID),
		"node_id %s and mm_cid %s, as feature size %lu and registered "
		"length %lu say", node_valid ? "valid" : "absent",
		cid_valid ? "valid" : "absent", feat, len);
	/* The node the layer reports is getcpu()'s, on every CPU. */
	sched_getaffinity(0, sizeof(saved), &saved);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &saved))
			continue;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			continue;
		tried++;
		if (syscall(SYS_getcpu, &gcpu, &gnode, NULL) == 0
				&& (int) gcpu == cpu
				&& urcu_rseq_node() == (int) gnode)
			good++;
	}
	sched_setaffinity(0, sizeof(saved), &saved);
	ok(tried > 0 && good == tried,
		"urcu_rseq_node() equals getcpu()'s node on every CPU (%d/%d)",
		good, tried);
}

static void *no_register_thread(void *arg)
{
	int *bad = arg;

	*bad = urcu_rseq_thread_register() != 0 || urcu_rseq_cpu() < 0
		|| urcu_rseq_index(URCU_RSEQ_INDEX_CPU) < 0
		|| urcu_rseq_thread_unregister() != 0 || !urcu_rseq_available();
	(void) urcu_rseq_mm_cid();
	(void) urcu_rseq_node();
	return NULL;
}

/*
 * Over glibc's registration the library makes no rseq system call of its
 * own, in a thread glibc created either: a second registration would fail
 * (EINVAL, another area) or, worse, unregister glibc's area. glibc's own
 * registration does not go through syscall() and is not counted.
 */
static void test_no_register_over_glibc(void)
{
	pthread_t t;
	int bad = 1, calls;

	if (!(urcu_rseq_features & URCU_RSEQ_FEATURE_GLIBC_AREA)) {
		skip(1, "glibc did not register: the library's own area is used");
		return;
	}
	rseq_syscalls = 0;
	(void) urcu_rseq_thread_register();
	(void) urcu_rseq_thread_unregister();
	(void) urcu_rseq_thread_register();
	if (pthread_create(&t, NULL, no_register_thread, &bad) == 0)
		pthread_join(t, NULL);
	calls = rseq_syscalls;
	ok(calls == 0 && !bad && urcu_rseq_available(),
		"over glibc's area: %d rseq system calls by the library", calls);
}

struct node {
	struct node *next;
	long id;
};

static void test_ops(int mode, const char *name)
{
	intptr_t v = 1, v2 = 2, load = 0, slots[4] = { 0 };
	struct node n2 = { NULL, 2 }, n1 = { &n2, 1 };
	intptr_t head = (intptr_t) &n1;
	void *base = slots;
	int idx, r;

	r = RSEQ_RETRY(mode, idx, urcu_rseq_cmpeqv_storev(mode, &v, 1, 10, idx));
	ok(r == URCU_RSEQ_COMMITTED && v == 10, "%s cmpeqv_storev commits", name);
	r = RSEQ_RETRY(mode, idx, urcu_rseq_cmpeqv_storev(mode, &v, 1, 20, idx));
	ok(r == URCU_RSEQ_CMPFAIL && v == 10, "%s cmpeqv_storev compare fails", name);

	r = RSEQ_RETRY(mode, idx, urcu_rseq_cmpeqv_cmpeqv_storev(mode, &v, 10,
			&v2, 2, 11, idx));
	ok(r == URCU_RSEQ_COMMITTED && v == 11 && v2 == 2,
		"%s cmpeqv_cmpeqv_storev commits", name);
	r = RSEQ_RETRY(mode, idx, urcu_rseq_cmpeqv_cmpeqv_storev(mode, &v, 11,
			&v2, 3, 12, idx));
	ok(r == URCU_RSEQ_CMPFAIL && v == 11,
		"%s cmpeqv_cmpeqv_storev second compare fails", name);

	r = RSEQ_RETRY(mode, idx, urcu_rseq_cmpnev_storeoffp_load(mode, &head, 0,
			offsetof(struct node, next), &load, idx));
	ok(r == URCU_RSEQ_COMMITTED && load == (intptr_t) &n1
		&& head == (intptr_t) &n2, "%s list pop takes the head", name);
	r = RSEQ_RETRY(mode, idx, urcu_rseq_cmpnev_storeoffp_load(mode, &head, 0,
			offsetof(struct node, next), &load, idx));
	ok(r == URCU_RSEQ_COMMITTED && load == (intptr_t) &n2 && head == 0,
		"%s list pop takes the last node", name);
	r = RSEQ_RETRY(mode, idx, urcu_rseq_cmpnev_storeoffp_load(mode, &head, 0,
			offsetof(struct node, next), &load, idx));
	ok(r == URCU_RSEQ_CMPFAIL && head == 0, "%s pop of an empty list", name);

	r = RSEQ_RETRY(mode, idx, urcu_rseq_addv(mode, &v, 5, idx));
	ok(r == URCU_RSEQ_COMMITTED && v == 16, "%s addv", name);

	r = RSEQ_RETRY(mode, idx, urcu_rseq_deref_addv(mode, &base,
			2 * sizeof(intptr_t), 7, idx));
	ok(r == URCU_RSEQ_COMMITTED && slots[2] == 7 && slots[0] == 0
		&& slots[1] == 0 && slots[3] == 0,
		"%s deref_addv adds through the pointer", name);

	r = RSEQ_RETRY(mode, idx, urcu_rseq_cmpeqv_trystorev_storev(mode, &v, 16,
			&v2, 30, 17, idx));
	ok(r == URCU_RSEQ_COMMITTED && v == 17 && v2 == 30,
		"%s cmpeqv_trystorev_storev commits both", name);
	r = RSEQ_RETRY(mode, idx, urcu_rseq_cmpeqv_trystorev_storev(mode, &v, 16,
			&v2, 40, 18, idx));
	ok(r == URCU_RSEQ_CMPFAIL && v == 17 && v2 == 30,
		"%s cmpeqv_trystorev_storev compare fails", name);

	/* idx_addv finds the slot of the index it runs on by itself. */
	{
		intptr_t *sl = calloc((size_t) nr_cpus * SLOT_STRIDE,
				sizeof(intptr_t));
		intptr_t total = 0;
		int i, n = 0;

		while ((r = urcu_rseq_idx_addv(mode, sl + 1,
				(long) (SLOT_STRIDE * sizeof(intptr_t)), 3))
				== URCU_RSEQ_ABORTED)
			;
		for (i = 0; i < nr_cpus * SLOT_STRIDE; i++) {
			total += sl[i];
			n += sl[i] != 0;
		}
		idx = urcu_rseq_index(mode);
		ok(r == URCU_RSEQ_COMMITTED && total == 3 && n == 1
			&& (sl[idx * SLOT_STRIDE + 1] == 3
				|| urcu_rseq_index(mode) != idx),
			"%s idx_addv adds to one slot, at the index", name);
		free(sl);
	}

	/*
	 * idx_cmpeqv_cmpeqv_storev: the per-index lock slot of the index it
	 * runs on, reported through *index; word 0 is the lock, word 1 the
	 * flag that must be clear.
	 */
	{
		intptr_t *sl = calloc((size_t) nr_cpus * SLOT_STRIDE,
				sizeof(intptr_t));
		long stride = (long) (SLOT_STRIDE * sizeof(intptr_t));
		int i, n = 0, changed = 0, got = -5;

		while ((r = urcu_rseq_idx_cmpeqv_cmpeqv_storev(mode, sl, stride,
				(long) sizeof(intptr_t), 0, 0, 7, &got))
				== URCU_RSEQ_ABORTED)
			;
		for (i = 0; i < nr_cpus * SLOT_STRIDE; i++)
			n += sl[i] != 0;
		ok(r == URCU_RSEQ_COMMITTED && got >= 0 && got < nr_cpus
			&& sl[got * SLOT_STRIDE] == 7 && n == 1,
			"%s idx_cmpeqv_cmpeqv_storev stores at the index it "
			"reports (%d)", name, got);
		for (i = 0; i < nr_cpus; i++)
			sl[i * SLOT_STRIDE] = 7;	/* every lock held */
		while ((r = urcu_rseq_idx_cmpeqv_cmpeqv_storev(mode, sl, stride,
				(long) sizeof(intptr_t), 0, 0, 8, &got))
				== URCU_RSEQ_ABORTED)
			;
		for (i = 0; i < nr_cpus; i++)
			changed += sl[i * SLOT_STRIDE] != 7;
		ok(r == URCU_RSEQ_CMPFAIL && got >= 0 && !changed,
			"%s idx_cmpeqv_cmpeqv_storev: first compare fails",
			name);
		for (i = 0; i < nr_cpus; i++) {
			sl[i * SLOT_STRIDE] = 0;
			sl[i * SLOT_STRIDE + 1] = 1;	/* every flag set */
		}
		while ((r = urcu_rseq_idx_cmpeqv_cmpeqv_storev(mode, sl, stride,
				(long) sizeof(intptr_t), 0, 0, 9, &got))
				== URCU_RSEQ_ABORTED)
			;
		for (i = 0; i < nr_cpus; i++)
			changed += sl[i * SLOT_STRIDE] != 0;
		ok(r == URCU_RSEQ_CMPFAIL && got >= 0 && !changed,
			"%s idx_cmpeqv_cmpeqv_storev: second compare fails",
			name);
		free(sl);
	}

	/* An index that is not the current one must take the abort path. */
	idx = urcu_rseq_index(mode);
	r = urcu_rseq_addv(mode, &v, 1, idx + 100000);
	ok(r == URCU_RSEQ_ABORTED && v == 17, "%s wrong index aborts", name);
}

/* Per-CPU adds and list pops/pushes from oversubscribed threads, signal storm. */
#define NR_NODES	64

struct ops_stress {
	intptr_t *slots;		/* nr_cpus * SLOT_STRIDE */
	intptr_t *heads;		/* per-CPU list heads, same stride */
	int mode;
	unsigned long aborts;
	unsigned long adds;
	unsigned long idx_fail;		/* idx_addv said "no rseq" */
	intptr_t *locks;		/* { lock, remote, count, inside } per slot */
	unsigned long locked;		/* lock sections committed */
	unsigned long overlaps;		/* a holder found another inside */
	unsigned long bad_idx;		/* committed, yet its slot not locked */
};

/*
 * A per-index lock taken with idx_cmpeqv_cmpeqv_storev and released with a
 * plain store by the holder (from whatever CPU it migrated to): a second
 * holder of one slot would see "inside" set or lose a count.
 */
static void ops_lock_once(struct ops_stress *s, unsigned long *aborts,
		unsigned long *locked)
{
	intptr_t *slot;
	int idx = -1, r;

	for (;;) {
		r = urcu_rseq_idx_cmpeqv_cmpeqv_storev(s->mode, s->locks,
				(long) (SLOT_STRIDE * sizeof(intptr_t)),
				(long) sizeof(intptr_t), 0, 0, 1, &idx);
		if (r == URCU_RSEQ_COMMITTED)
			break;
		if (r == URCU_RSEQ_ABORTED) {
			(*aborts)++;
		} else if (idx < 0) {
			/*
			 * Not registered yet (glibc left rseq to us, or a
			 * fallback): register as the lock's slow path does.
			 */
			if (urcu_rseq_index(s->mode) < 0) {
				uatomic_inc(&s->idx_fail);
				return;
			}
		} else {
			sched_yield();	/* held by a preempted thread */
		}
	}
	cmm_smp_mb();	/* acquire: pairs with the release before unlock */
	if (idx < 0 || idx >= nr_cpus) {
		uatomic_inc(&s->bad_idx);
		return;
	}
	slot = &s->locks[idx * SLOT_STRIDE];
	if (CMM_LOAD_SHARED(slot[0]) != 1)
		uatomic_inc(&s->bad_idx);
	if (CMM_LOAD_SHARED(slot[3]))
		uatomic_inc(&s->overlaps);
	CMM_STORE_SHARED(slot[3], 1);
	slot[2]++;
	caa_cpu_relax();
	CMM_STORE_SHARED(slot[3], 0);
	(*locked)++;
	cmm_smp_mb();	/* release: pairs with the acquire above */
	CMM_STORE_SHARED(slot[0], 0);
}

static void ops_stress_worker(struct stress_thread *t)
{
	struct ops_stress *s = t->arg;
	unsigned long adds = 0, aborts = 0, locked = 0;
	int idx, r;

	while (!stress_should_stop(t)) {
		intptr_t node;

		ops_lock_once(s, &aborts, &locked);

		/* Add. */
		for (;;) {
			idx = urcu_rseq_index(s->mode);
			if (urcu_rseq_addv(s->mode, &s->slots[idx * SLOT_STRIDE],
					1, idx) == URCU_RSEQ_COMMITTED)
				break;
			aborts++;
		}
		adds++;
		/* The same add, the index read inside the section. */
		while ((r = urcu_rseq_idx_addv(s->mode, s->slots + 1,
				(long) (SLOT_STRIDE * sizeof(intptr_t)), 1))
				== URCU_RSEQ_ABORTED)
			aborts++;
		if (r != URCU_RSEQ_COMMITTED)
			uatomic_inc(&s->idx_fail);
		/* Pop a node from this CPU's list, push it back where we run. */
		do {
			idx = urcu_rseq_index(s->mode);
			r = urcu_rseq_cmpnev_storeoffp_load(s->mode,
				&s->heads[idx * SLOT_STRIDE], 0,
				offsetof(struct node, next), &node, idx);
		} while (r == URCU_RSEQ_ABORTED);
		if (r != URCU_RSEQ_COMMITTED)
			continue;
		for (;;) {
			intptr_t expect;

			idx = urcu_rseq_index(s->mode);
			expect = CMM_LOAD_SHARED(s->heads[idx * SLOT_STRIDE]);
			((struct node *) node)->next = (struct node *) expect;
			if (urcu_rseq_cmpeqv_storev(s->mode,
					&s->heads[idx * SLOT_STRIDE], expect,
					node, idx) == URCU_RSEQ_COMMITTED)
				break;
		}
	}
	uatomic_add(&s->adds, adds);
	uatomic_add(&s->aborts, aborts);
	uatomic_add(&s->locked, locked);
}

static void test_ops_stress(int mode, const char *name)
{
	struct ops_stress s = { .mode = mode };
	struct node *nodes = calloc(NR_NODES, sizeof(*nodes));
	struct stress_report rep;
	intptr_t sum = 0;
	int i, cpu, count = 0, dup = 0;
	char *seen = calloc(NR_NODES, 1);

	s.slots = calloc((size_t) nr_cpus * SLOT_STRIDE, sizeof(intptr_t));
	s.heads = calloc((size_t) nr_cpus * SLOT_STRIDE, sizeof(intptr_t));
	s.locks = calloc((size_t) nr_cpus * SLOT_STRIDE, sizeof(intptr_t));
	for (i = 0; i < NR_NODES; i++) {
		cpu = i % nr_cpus;
		nodes[i].id = i;
		nodes[i].next = (struct node *) s.heads[cpu * SLOT_STRIDE];
		s.heads[cpu * SLOT_STRIDE] = (intptr_t) &nodes[i];
	}
	stress_run(ops_stress_worker, &s, 4 * stress_nr_cpus(),
		STRESS_SIGNALS | STRESS_MIGRATIONS, &rep);
	for (cpu = 0; cpu < nr_cpus; cpu++) {
		struct node *n;

		sum += s.slots[cpu * SLOT_STRIDE];
		for (n = (struct node *) s.heads[cpu * SLOT_STRIDE]; n && count <= NR_NODES;
				n = n->next) {
			count++;
			if (seen[n->id]++)
				dup++;
		}
	}
	diag("%s: %lu adds, %lu aborts, %lu signals, %lu migrations", name,
		s.adds, s.aborts, rep.signals, rep.migrations);
	ok(sum == (intptr_t) s.adds && s.adds > 0,
		"%s: per-CPU adds sum exactly under signals and migrations", name);
	for (cpu = 0, sum = 0; cpu < nr_cpus; cpu++)
		sum += s.slots[cpu * SLOT_STRIDE + 1];
	ok(sum == (intptr_t) s.adds && s.idx_fail == 0,
		"%s: idx_addv adds sum exactly under signals and migrations",
		name);
	for (cpu = 0, sum = 0, i = 0; cpu < nr_cpus; cpu++) {
		sum += s.locks[cpu * SLOT_STRIDE + 2];
		i += s.locks[cpu * SLOT_STRIDE] != 0;
	}
	ok(sum == (intptr_t) s.locked && s.locked > 0 && s.overlaps == 0
		&& s.bad_idx == 0 && i == 0,
		"%s: idx_cmpeqv_cmpeqv_storev locks exclude under signals and "
		"migrations (%lu locks, %lu overlaps, %lu wrong indexes)",
		name, s.locked, s.overlaps, s.bad_idx);
	ok(count == NR_NODES && dup == 0,
		"%s: per-CPU lists keep every node once (%d)", name, count);
	if (rep.signals > 1000)
		ok(s.aborts > 0, "%s: the abort path ran under the storm", name);
	else
		skip(1, "too few signals delivered to expect aborts");
	free(s.slots);
	free(s.heads);
	free(s.locks);
	free(nodes);
	free(seen);
}

/*
 * The fence retires a double buffer: writers add through the shared
 * pointer inside their sections; the updater swaps the pointer and fences,
 * after which the retired buffer must never change again.
 */
struct fence_stress {
	void *active;
	intptr_t *buf[2];
	unsigned long adds;
};

static void fence_writer(struct stress_thread *t)
{
	struct fence_stress *s = t->arg;
	unsigned long adds = 0;
	int idx;

	while (!stress_should_stop(t)) {
		do {
			idx = urcu_rseq_index(URCU_RSEQ_INDEX_CPU);
		} while (urcu_rseq_deref_addv(URCU_RSEQ_INDEX_CPU, &s->active,
				(long) idx * SLOT_STRIDE * sizeof(intptr_t), 1, idx)
			!= URCU_RSEQ_COMMITTED);
		adds++;
	}
	uatomic_add(&s->adds, adds);
}

static intptr_t buf_sum(intptr_t *b)
{
	intptr_t sum = 0;
	int cpu;

	for (cpu = 0; cpu < nr_cpus; cpu++)
		sum += CMM_LOAD_SHARED(b[cpu * SLOT_STRIDE]);
	return sum;
}

static void test_fence(int rounds)
{
	struct fence_stress s = { 0 };
	struct stress_group *g;
	intptr_t total = 0, sum, later;
	int round, late = 0, spin, fence_err = 0, cur = 0;

	s.buf[0] = calloc((size_t) nr_cpus * SLOT_STRIDE, sizeof(intptr_t));
	s.buf[1] = calloc((size_t) nr_cpus * SLOT_STRIDE, sizeof(intptr_t));
	s.active = s.buf[0];
	g = stress_start(fence_writer, &s, 4 * stress_nr_cpus(),
		STRESS_SIGNALS | STRESS_MIGRATIONS);
	for (round = 0; round < rounds; round++) {
		intptr_t *old = s.buf[cur];

		cur ^= 1;
		/* Pairs with the load of s.active inside each writer's section. */
		CMM_STORE_SHARED(s.active, s.buf[cur]);
		if (urcu_rseq_fence())
			fence_err++;
		sum = buf_sum(old);
		for (spin = 0; spin < 2000; spin++)
			caa_cpu_relax();
		if (round % 16 == 0)
			sched_yield();
		later = buf_sum(old);
		if (later != sum)
			late++;
		total += later;
		memset(old, 0, (size_t) nr_cpus * SLOT_STRIDE * sizeof(intptr_t));
	}
	stress_stop(g, NULL);
	total += buf_sum(s.buf[cur]);
	ok(fence_err == 0, "fence: %d rounds, no error", rounds);
	ok(late == 0, "fence: no write to a retired buffer after the fence (%d late)",
		late);
	ok(total == (intptr_t) s.adds,
		"fence: every add counted exactly once (%ld of %lu)",
		(long) total, s.adds);
	free(s.buf[0]);
	free(s.buf[1]);
}

static void test_fence_cpu(void)
{
	int cpu, good = 0;

	errno = 0;
	ok(urcu_rseq_fence_cpu(-1) == -1 && errno == EINVAL,
		"fence_cpu(-1): EINVAL");
	errno = 0;
	ok(urcu_rseq_fence_cpu(nr_cpus) == -1 && errno == EINVAL,
		"fence_cpu(nr_cpus): EINVAL");
	for (cpu = 0; cpu < nr_cpus; cpu++)
		if (urcu_rseq_fence_cpu(cpu) == 0)
			good++;
	ok(good == nr_cpus, "fence_cpu on each possible CPU");
}

static void test_fork(void)
{
	pid_t pid;
	int status = 0;

	pid = fork();
	if (pid == 0) {
		intptr_t v = 0;
		int idx, r;

		if (!urcu_rseq_available()) {
			/* Fallbacks only: the child still gets a valid CPU. */
			_exit(urcu_rseq_cpu() >= 0 ? 0 : 1);
		}
		r = RSEQ_RETRY(URCU_RSEQ_INDEX_CPU, idx,
			urcu_rseq_addv(URCU_RSEQ_INDEX_CPU, &v, 1, idx));
		_exit(urcu_rseq_fence() == 0 && r == URCU_RSEQ_COMMITTED
			&& v == 1 ? 0 : 1);
	}
	ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)
		&& WEXITSTATUS(status) == 0,
		"after fork, the child's fence and sections work");
}

/*
 * Lazy registration interrupted by a handler that registers first. The
 * library registers only its own area lazily (glibc registers its area at
 * thread creation), so this runs in a child executed with glibc's
 * registration turned off. The race is forced, not waited for: this
 * program's syscall() takes the place of the C library's for the library
 * too, and raises the signal right before the registration's system call;
 * the handler's urcu_rseq_cpu() registers lazily, then the interrupted
 * registration makes its own system call.
 */
static volatile sig_atomic_t race_armed;
static volatile int race_handler_cpu = -100;
static volatile int race_handler_available = -1;

/*
 * A static link (make vmcheck) has no RTLD_NEXT: the C library's syscall()
 * is not there beside this one, so system calls go to the kernel directly.
 */
static long raw_syscall(long nr, const long *a)
{
	long ret;

#if defined(__x86_64__)
	register long r10 __asm__("r10") = a[3];
	register long r8 __asm__("r8") = a[4];
	register long r9 __asm__("r9") = a[5];

	__asm__ volatile ("syscall"
		: "=a" (ret)
		: "0" (nr), "D" (a[0]), "S" (a[1]), "d" (a[2]),
		  "r" (r10), "r" (r8), "r" (r9)
		: "rcx", "r11", "memory");
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a[0];
	register long x1 __asm__("x1") = a[1];
	register long x2 __asm__("x2") = a[2];
	register long x3 __asm__("x3") = a[3];
	register long x4 __asm__("x4") = a[4];
	register long x5 __asm__("x5") = a[5];

	__asm__ volatile ("svc #0"
		: "+r" (x0)
		: "r" (x8), "r" (x1), "r" (x2), "r" (x3), "r" (x4), "r" (x5)
		: "memory");
	ret = x0;
#else
	(void) nr;
	(void) a;
	ret = -ENOSYS;
#endif
	if (ret < 0 && ret > -4096) {
		errno = (int) -ret;
		return -1;
	}
	return ret;
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...)) dlsym(RTLD_NEXT, "syscall");
	if (nr == __NR_rseq)
		rseq_syscalls++;
	if (nr == __NR_rseq && race_armed && a[2] == 0) {
		race_armed = 0;
		raise(SIGUSR2);
	}
	if (!real)
		return raw_syscall(nr, a);
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void race_handler(int sig)
{
	int err = errno;

	(void) sig;
	race_handler_cpu = urcu_rseq_cpu();
	race_handler_available = urcu_rseq_available();
	errno = err;
}

static void *race_thread(void *arg)
{
	int *bad = arg, ret, err, cpu_id;

	race_armed = 1;
	errno = 0;
	ret = urcu_rseq_thread_register();
	err = errno;
	cpu_id = (int) (int32_t) CMM_LOAD_SHARED(urcu_rseq_area()->cpu_id);
	printf("# register race: handler cpu %d (rseq %s); interrupted "
		"registration: %d (%s); cpu_id afterwards %d; available %d\n",
		race_handler_cpu, race_handler_available == 1 ? "available" :
		"unavailable", ret, ret ? strerror(err) : "ok", cpu_id,
		(int) urcu_rseq_available());
	*bad = race_armed || race_handler_available != 1 || ret != 0
		|| cpu_id < 0 || !urcu_rseq_available()
		|| urcu_rseq_index(URCU_RSEQ_INDEX_CPU) < 0;
	return NULL;
}

/* 0: passed, 1: failed, 77: not testable here. */
static int register_race_child(void)
{
	struct sigaction sa;
	pthread_t t;
	int bad = 1;

	if (urcu_rseq_features & URCU_RSEQ_FEATURE_GLIBC_AREA)
		return 77;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = race_handler;
	sigaction(SIGUSR2, &sa, NULL);
	/* A fresh thread: its area is not registered yet. */
	if (pthread_create(&t, NULL, race_thread, &bad))
		return 1;
	pthread_join(t, NULL);
	if (race_handler_available == 0 && race_handler_cpu >= 0)
		return 77;	/* rseq denied here: nothing to race */
	return bad;
}

static void test_register_race(const char *argv0)
{
	char self[PATH_MAX];
	int status = 0;
	ssize_t n;
	pid_t pid;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		skip(1, "register race: no /proc/self/exe");
		return;
	}
	self[n] = '\0';
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
		execl(self, argv0, "--register-race", (char *) NULL);
		_exit(2);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		ok(0, "register race: the child ran");
		return;
	}
	if (WEXITSTATUS(status) == 77) {
		skip(1, "register race: glibc's area cannot be turned off here");
		return;
	}
	ok(WEXITSTATUS(status) == 0,
		"a registration interrupted by a handler that registers "
		"leaves the area registered and valid");
}

int main(int argc, char **argv)
{
	/* 1000 rounds at the default 300 ms; fewer under emulation (vmcheck). */
	int rounds = (int) (stress_duration_ms() * 10 / 3);

	if (rounds < 100)
		rounds = 100;
	if (rounds > 20000)
		rounds = 20000;

	if (argc > 1 && !strcmp(argv[1], "--register-race"))
		return register_race_child();
	nr_cpus = urcu_rseq_nr_cpus();
	plan_no_plan();
	if (!urcu_rseq_available()) {
		diag("rseq unavailable here: fallback paths only");
		ok(urcu_rseq_cpu() >= 0 && urcu_rseq_cpu() < nr_cpus,
			"urcu_rseq_cpu() valid without rseq");
		ok(urcu_rseq_index(URCU_RSEQ_INDEX_CPU) == -1,
			"index -1 without rseq");
		ok(urcu_rseq_mm_cid() == -1, "mm_cid -1 without rseq");
		{
			intptr_t sl[2] = { 0, 0 };
			int got = 5;

			ok(urcu_rseq_idx_cmpeqv_cmpeqv_storev(
				URCU_RSEQ_INDEX_CPU, sl, 0,
				(long) sizeof(intptr_t), 0, 0, 1, &got)
				== URCU_RSEQ_CMPFAIL && got == -1 && sl[0] == 0,
				"idx_cmpeqv_cmpeqv_storev without rseq: CMPFAIL, "
				"index -1, nothing stored");
		}
		test_fork();
		return exit_status();
	}
	test_registration();
	test_register_race(argv[0]);
	test_cpu_numbers();
	test_mm_cid();
	test_fields();
	test_no_register_over_glibc();
	test_ops(URCU_RSEQ_INDEX_CPU, "cpu");
	if (urcu_rseq_features & URCU_RSEQ_FEATURE_MM_CID)
		test_ops(URCU_RSEQ_INDEX_MM_CID, "mm_cid");
	test_ops_stress(URCU_RSEQ_INDEX_CPU, "cpu");
	test_ops_stress(urcu_rseq_index_mode(URCU_RSEQ_INDEX_MM_CID), "mm_cid");
	if (!urcu_rseq_fence_available()) {
		diag("the RSEQ fence is unavailable here");
		errno = 0;
		ok(urcu_rseq_fence() == -1 && errno != 0,
			"the fence reports a clear error (%s)", strerror(errno));
		errno = 0;
		ok(urcu_rseq_fence_cpu(0) == -1 && errno != 0,
			"fence_cpu reports a clear error");
		return exit_status();
	}
	test_fence(rounds);
	test_fence_cpu();
	test_fork();
	return exit_status();
}
