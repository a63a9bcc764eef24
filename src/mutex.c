// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Adaptive mutex: waiters spin only while the owner is running.
 *
 * Lock word (m->state): owner id in the low bits (0: unlocked), STATE_SLEEPERS
 * (some thread may sleep on the word), STATE_AWAKE (a waiter is awake and
 * watches the word) and STATE_HANDOFF (a waiter that waited too long sits
 * in m->handoff: the next unlock gives it the lock instead of releasing it).
 *
 * Unlock wakes a sleeper only when the sleepers bit is set and the awake
 * bit is not, and then sets the awake bit for the thread it wakes: while a
 * waiter spins, or a woken one is on its way, an owner that keeps taking
 * the lock back pays no system call. Why no wake-up is lost: every change
 * of these bits is a cmpxchg of the whole word, and
 * - a spinning waiter sets the awake bit only while the lock is held, and
 *   re-reads the word before it sleeps: if an unlock skipped the wake-up
 *   for it, it finds the lock free and takes it;
 * - a waiter clears the awake bit in the cmpxchg that takes the lock when
 *   it may be the waiter the bit stands for (it set it, or it slept), and
 *   every waiter clears it in the cmpxchg that sets the sleepers bit before
 *   it sleeps, or that enters the hand-off slot: so the sleepers that a
 *   set awake bit leaves asleep all went to sleep before it was set, and
 *   whoever set it is awake, or was woken for it;
 * - an unlock whose wake-up found nobody asleep leaves the bit set, as it
 *   set it in the release: it stands for nobody then, and the next waiter
 *   that sleeps clears it (a set awake bit with the sleepers bit clear
 *   keeps nobody asleep, since whoever sets the sleepers bit clears it).
 * Clearing the bit is always safe (it only costs a wake-up), so whoever is
 * unsure whether the bit stands for it clears it.
 *
 * Once an unlock has released the word (or named the next owner), it reads
 * and writes nothing in the mutex: the next owner may unlock, destroy and
 * free it at once (POSIX allows destroying an unlocked mutex, and an object
 * whose reference count is kept under its own mutex is freed that way). So
 * a flag bit can outlive the waiters it stood for: a timed-out sleeper
 * leaves the sleepers bit (the next unlock turns it into a stray awake
 * bit), a wake-up that found nobody leaves the awake bit. Both cost at
 * most one wake-up, and destroy judges "held or waited for" by the owner
 * id and the hand-off slot, never by these bits.
 *
 * Owner ids index a registry of per-thread descriptors, allocated on a
 * thread's first lock and recycled at its exit, never freed, so a waiter
 * may read the descriptor of whatever id it saw in the lock word. The
 * descriptor points at the owner's rseq area, whose cpu_id the kernel
 * rewrites each time the owner returns to user space on some CPU: if it
 * names the waiter's own CPU, the owner cannot be running now.
 *
 * An id is a descriptor index (low ID_INDEX_BITS) and a generation (the
 * rest of the 28 owner bits), bumped each time the descriptor is recycled:
 * the thread that reuses a descriptor gets a new id, so it neither owns nor
 * may unlock a mutex that the exited thread left locked, and a waiter sees
 * that such an owner is gone (its descriptor's id changed). A freed
 * descriptor is reused, oldest first, only while more than FREE_RESERVE
 * are free, so at least FREE_RESERVE other threads exit between its
 * release and its reuse, and an id comes back only after 256 generations
 * of its descriptor: 65536 thread exits or more.
 *
 * fork(): the child has only the forking thread. Its handler frees the
 * descriptors of every other thread (new generations, so a mutex one of
 * them held stays held, by nobody, as with a pthread mutex), and the
 * registry lock is held across fork() so that the child finds it free.
 * An unlock that finds a dead thread in the hand-off slot releases the
 * lock instead of naming it.
 */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>

#include <urcu/mutex.h>
#include "common.h"

#define STATE_OWNER_MASK	0x0fffffff
#define STATE_AWAKE		(1 << 28)
#define STATE_HANDOFF		(1 << 29)
#define STATE_SLEEPERS		(1 << 30)

/* Owner id: descriptor index 1 .. MAX_INDEX, then 8 bits of generation. */
#define ID_INDEX_BITS		20
#define ID_INDEX_MASK		((1U << ID_INDEX_BITS) - 1)
#define ID_GENERATION_ONE	(1U << ID_INDEX_BITS)
#define MAX_INDEX		ID_INDEX_MASK	/* threads alive at once */
/* Free descriptors kept unused, so that a recycled id comes back late. */
#define FREE_RESERVE		256

#define CHUNK_SHIFT		8
#define CHUNK_SIZE		(1U << CHUNK_SHIFT)
#define NR_CHUNKS		(1U << (ID_INDEX_BITS - CHUNK_SHIFT))

#define DEFAULT_SPIN_NS		100000
/* Longest hold sample the average takes in, and its clip above 4 x avg. */
#define HOLD_SAMPLE_MAX_NS	80000
#define HOLD_CLIP_SLACK_NS	1000
/*
 * A spin of at least SHARE_MIN_WALL_NS that got less than 3/4 of a CPU
 * (thread CPU time against wall time) was preempted: the CPUs, or this
 * process's share of them, are contended, and spinning now takes time
 * the owner needs. For CONTENDED_NS after that, spins are capped at
 * CONTENDED_SPIN_NS. The measure starts SHARE_DELAY_NS into the spin:
 * reading the thread's CPU time is a system call of about half a
 * microsecond, and a waiter that made it at once would leave a lock
 * freed meanwhile idle that long.
 */
#define SHARE_DELAY_NS		2000
#define SHARE_MIN_WALL_NS	20000
#define CONTENDED_NS		10000000
#define CONTENDED_SPIN_NS	2000
/* A hold is "too long" past max(HOLD_FLOOR_NS, HOLD_FACTOR * average). */
#define HOLD_FLOOR_NS		4000
#define HOLD_FACTOR		8
/* Look at the owner's running state this often while spinning. */
#define OWNER_CHECK_GAP_NS	1000
/*
 * Longest gap between two polls of a spinning waiter, in pauses (about
 * 19 ns each on the machine the report names): POLL_GAP_MAX while one hold
 * lasts, POLL_GAP_PASSED_MAX while other acquisitions pass the waiter by;
 * shorter for a waiter in the hand-off slot, which the lock waits for
 * once named.
 */
#define POLL_GAP_MAX		64
#define POLL_GAP_PASSED_MAX	1024
#define HANDOFF_POLL_GAP_MAX	16
/* A waiter in the hand-off slot re-checks the lock word this often. */
#define HANDOFF_POLL_NS		2000000

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE	27
#endif

/*
 * End offset in struct rseq of a kernel-maintained "this thread is on a
 * CPU" word. No merged kernel defines one (the 2023 sched_state proposal
 * was not merged; Linux 6.18 stops at mm_cid, feature size 28 or 32):
 * 0 keeps the kernel backend absent. When a kernel defines it, set this and
 * the offset below; the probe then checks AT_RSEQ_FEATURE_SIZE covers it.
 */
#define KERNEL_ONCPU_END	0
#define KERNEL_ONCPU_OFF	0

struct urcu_mutex_thread {
	struct urcu_rseq_abi *rseq;	/* NULL: no rseq, or thread gone */
	int32_t blocked;		/* > 0 while in a blocking call */
	int32_t grant;			/* bumped by the unlock that hands off */
	int32_t peekers;		/* waiters reading *rseq right now */
	pid_t tid;
	/* Its thread's id while live; the next generation once freed. */
	uint32_t id;
	bool live;			/* registry_lock */
	struct urcu_mutex_thread *next_free;	/* registry_lock */
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

static struct urcu_mutex_thread *chunks[NR_CHUNKS];
/* All under registry_lock. */
static uint32_t next_index = 1;
static struct urcu_mutex_thread *free_head, *free_tail;
static uint32_t nr_free;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
/* The fast paths' thread-locals are FAST_TLS (src/common.h). */
static FAST_TLS struct urcu_mutex_thread *self;
/*
 * The fast paths read the id from here, not from the descriptor, whose
 * line waiters write (peekers) while they watch the owner.
 */
static FAST_TLS uint32_t self_id;
/*
 * urcu_mutex_blocking_begin() nesting, kept here too so that a thread
 * without a descriptor needs none for it, and gets it right if it takes
 * one inside the bracket.
 */
static __thread int32_t blocking_depth;
/* Until when this thread's spins are capped short (see CONTENDED_NS). */
static __thread int64_t contended_until;
/*
 * The kernel's time-slice extension (Linux 7.0+): the thread's request
 * byte, set while it holds at least one mutex (slice_held counts them),
 * or NULL where the kernel offers none or URCU_MUTEX_SLICE_EXT=0.
 */
static FAST_TLS uint8_t *slice_req;
static FAST_TLS uint32_t slice_held;

static bool kernel_backend;
static bool slice_off;

/* ---- Thread registry ---------------------------------------------------- */

static struct urcu_mutex_thread *desc_of(uint32_t id)
{
	uint32_t index = (id & ID_INDEX_MASK) - 1;
	struct urcu_mutex_thread *c;

	/*
	 * Pairs with the cmm_smp_wmb() publishing the chunk: the id was read
	 * from the lock word, written after the chunk was published.
	 */
	cmm_smp_rmb();
	c = CMM_LOAD_SHARED(chunks[index >> CHUNK_SHIFT]);
	return &c[index & (CHUNK_SIZE - 1)];
}

/*
 * Is @id still its thread's id? False once the thread exited (or, in a
 * fork child, did not come along). A hint for a thread other than the
 * caller: it may exit right after.
 */
static bool id_alive(uint32_t id)
{
	uint32_t index = id & ID_INDEX_MASK;

	/* Read from a mutex's hand-off slot: not trusted to be an id. */
	if (!index || index > MAX_INDEX || (id & ~STATE_OWNER_MASK)
			|| !CMM_LOAD_SHARED(chunks[(index - 1) >> CHUNK_SHIFT]))
		return false;
	return CMM_LOAD_SHARED(desc_of(id)->id) == id;
}

/* registry_lock held. */
static void free_desc(struct urcu_mutex_thread *d)
{
	uint32_t next = (d->id + ID_GENERATION_ONE) & STATE_OWNER_MASK;

	d->live = false;
	/* Never 0: the index bits are not. */
	CMM_STORE_SHARED(d->id, next);
	d->next_free = NULL;
	if (free_tail)
		free_tail->next_free = d;
	else
		free_head = d;
	free_tail = d;
	nr_free++;
}

static void thread_exit(void *arg)
{
	struct urcu_mutex_thread *d = (struct urcu_mutex_thread *) arg;

	CMM_STORE_SHARED(d->rseq, NULL);
	/*
	 * Our rseq area goes away with the thread. Pairs with the barrier
	 * after a waiter's peekers increment: either it sees rseq NULL, or we
	 * see its count and wait until it has read the area.
	 */
	cmm_smp_mb();
	while (CMM_LOAD_SHARED(d->peekers))
		caa_cpu_relax();
	/* Waiters with the /proc signal may still read it: see owner_off_cpu(). */
	CMM_STORE_SHARED(d->tid, 0);
	pthread_mutex_lock(&registry_lock);
	free_desc(d);
	pthread_mutex_unlock(&registry_lock);
	self = NULL;
	self_id = 0;
}

/* A never-used descriptor, or NULL; registry_lock held. */
static struct urcu_mutex_thread *fresh_desc(void)
{
	uint32_t index = next_index;
	struct urcu_mutex_thread *c;
	void *mem;

	if (index > MAX_INDEX)
		return NULL;
	c = chunks[(index - 1) >> CHUNK_SHIFT];
	if (!c) {
		if (posix_memalign(&mem, CAA_CACHE_LINE_SIZE,
				CHUNK_SIZE * sizeof(*c)))
			return NULL;
		memset(mem, 0, CHUNK_SIZE * sizeof(*c));
		c = (struct urcu_mutex_thread *) mem;
		/* Pairs with cmm_smp_rmb() in desc_of(). */
		cmm_smp_wmb();
		CMM_STORE_SHARED(chunks[(index - 1) >> CHUNK_SHIFT], c);
	}
	next_index++;
	c = &c[(index - 1) & (CHUNK_SIZE - 1)];
	CMM_STORE_SHARED(c->id, index);
	return c;
}

static struct urcu_mutex_thread *alloc_desc(void)
{
	struct urcu_mutex_thread *d = NULL;

	pthread_mutex_lock(&registry_lock);
	if (nr_free <= FREE_RESERVE)
		d = fresh_desc();
	if (!d && free_head) {
		d = free_head;
		free_head = d->next_free;
		if (!free_head)
			free_tail = NULL;
		nr_free--;
	}
	if (d)
		d->live = true;
	pthread_mutex_unlock(&registry_lock);
	return d;
}

/*
 * fork(): the registry lock is held across it, so that the child does not
 * inherit it locked by a thread that does not exist there.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&registry_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&registry_lock);
}

/*
 * In the child, the forking thread is the only thread: free the other
 * descriptors (their ids get a new generation, so a mutex their thread
 * held stays held by nobody) and drop the peeks of waiters that stayed
 * behind, which the owner's exit would otherwise wait for.
 */
static void fork_child(void)
{
	struct urcu_mutex_thread *d;
	uint32_t index;

	for (index = 1; index < next_index; index++) {
		d = desc_of(index);
		d->peekers = 0;
		if (d == self) {
			d->tid = (pid_t) syscall(SYS_gettid);
			continue;
		}
		if (!d->live)
			continue;
		d->rseq = NULL;
		d->tid = 0;
		d->blocked = 0;
		free_desc(d);
	}
	pthread_mutex_unlock(&registry_lock);
}

static struct urcu_mutex_thread *self_slow(void)
{
	struct urcu_mutex_thread *d = alloc_desc();

	if (!d) {
		fprintf(stderr, "liburcu-rseq: urcu_mutex: out of thread ids\n");
		abort();
	}
	(void) urcu_rseq_thread_register();
	CMM_STORE_SHARED(d->tid, (pid_t) syscall(SYS_gettid));
	CMM_STORE_SHARED(d->blocked, blocking_depth);
	CMM_STORE_SHARED(d->rseq, urcu_rseq_available() ? urcu_rseq_area() : NULL);
	if (!slice_off)
		slice_req = urcu_rseq_slice_enable();
	(void) pthread_setspecific(exit_key, d);
	self = d;
	self_id = d->id;
	return d;
}

static inline struct urcu_mutex_thread *get_self(void)
{
	struct urcu_mutex_thread *d = self;

	return caa_likely(d) ? d : self_slow();
}

static inline uint32_t get_self_id(void)
{
	uint32_t id = self_id;

	return caa_likely(id) ? id : self_slow()->id;
}

/* ---- Owner-running backends ---------------------------------------------- */

static bool kernel_probe(void)
{
	unsigned long size = getauxval(AT_RSEQ_FEATURE_SIZE);
	unsigned long end = KERNEL_ONCPU_END;

	return end != 0 && size >= end;
}

/*
 * Before the RCU flavor's constructor (102), whose fork handlers must be
 * registered after ours: see flavor_init() in urcu-rseq.c.
 */
static void __attribute__((constructor(101))) mutex_init_once(void)
{
	const char *v = getenv("URCU_MUTEX_SLICE_EXT");

	(void) pthread_key_create(&exit_key, thread_exit);
	(void) pthread_atfork(fork_prepare, fork_parent, fork_child);
	kernel_backend = kernel_probe();
	slice_off = v && strcmp(v, "0") == 0;
}

const char *urcu_mutex_owner_backend(void)
{
	return kernel_backend ? "kernel" : "userspace";
}

/* 1: the owner sleeps according to /proc; 0 otherwise. Costs a few us. */
static int proc_says_sleeping(pid_t tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int) tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	return p[2] == 'S' || p[2] == 'D';
}

/*
 * Is the owner @id certainly or probably off its CPU, by the signals in
 * @sig? Reads the owner's rseq area, which lives in the owner's TLS: the
 * peekers count keeps the owner's exit from freeing it under us.
 */
static bool owner_off_cpu(uint32_t id, unsigned int sig)
{
	struct urcu_mutex_thread *d = desc_of(id);
	struct urcu_rseq_abi *rs;
	int cpu = -1, mine;

	/* An owner that exited holding the lock will not release it soon. */
	if (CMM_LOAD_SHARED(d->id) != id)
		return true;
	if ((sig & URCU_MUTEX_OWNER_BLOCKED) && CMM_LOAD_SHARED(d->blocked) > 0)
		return true;
	if (!(sig & (URCU_MUTEX_OWNER_SAME_CPU | URCU_MUTEX_OWNER_KERNEL)))
		goto proc;
	uatomic_inc(&d->peekers);
	/* Pairs with the cmm_smp_mb() in thread_exit(). */
	cmm_smp_mb__after_uatomic_inc();
	rs = CMM_LOAD_SHARED(d->rseq);
	if (rs) {
		if ((sig & URCU_MUTEX_OWNER_KERNEL) && kernel_backend) {
			uint32_t oncpu = CMM_LOAD_SHARED(*(uint32_t *)
					((char *) rs + KERNEL_ONCPU_OFF));

			cmm_smp_mb__before_uatomic_dec();
			uatomic_dec(&d->peekers);
			return !oncpu;
		}
		cpu = (int) CMM_LOAD_SHARED(rs->cpu_id);
	}
	cmm_smp_mb__before_uatomic_dec();
	uatomic_dec(&d->peekers);
	if ((sig & URCU_MUTEX_OWNER_SAME_CPU) && cpu >= 0) {
		mine = urcu_rseq_cpu();
		if (cpu == mine)
			return true;
	}
proc:
	if (sig & URCU_MUTEX_OWNER_PROC_STAT) {
		/* 0 once the owner exited; a stale id only misleads one look. */
		pid_t tid = CMM_LOAD_SHARED(d->tid);

		if (tid > 0)
			return proc_says_sleeping(tid);
	}
	return false;
}

/* ---- Time-slice extension ------------------------------------------------ */

/*
 * A thread that holds a mutex asks the kernel not to preempt it: a tick or
 * a wake-up that would switch it out lets it run a few microseconds more
 * (5 us by default, Linux's debugfs rseq/slice_ext_nsec), enough for most
 * critical sections to end and unlock, instead of leaving every waiter
 * behind a holder that sits in a run queue. The request goes up with the
 * first mutex the thread takes and down with the last it releases, so
 * that no request outlives the locks; if the kernel granted one meanwhile,
 * the thread gives the CPU back at once, as the kernel requires. Both run
 * after the lock word changed hands: the acquire and release are the
 * cmpxchgs, and the request only covers the section between them.
 * Only the thread reads and writes the count and the byte. The kernel's
 * side pairs with these stores on the thread's own CPU: it reads the
 * request, and sets the granted byte or clears both, only when it
 * interrupts this thread or switches it out, so program order is all the
 * ordering there is, and compiler barriers keep the critical section
 * between the request and its end.
 */
static inline void slice_begin(void)
{
	uint8_t *req = slice_req;
	uint32_t n;

	if (!req)
		return;
	n = slice_held++;
	if (!n)
		CMM_STORE_SHARED(req[0], 1);
	cmm_barrier();
}

static inline void slice_end(void)
{
	uint8_t *req = slice_req;
	uint32_t n;

	if (!req)
		return;
	n = --slice_held;
	if (n)
		return;
	cmm_barrier();
	CMM_STORE_SHARED(req[0], 0);
	cmm_barrier();
	/* Granted (req[1]) while we held the lock: the kernel waits for us. */
	if (CMM_LOAD_SHARED(req[1]))
		urcu_rseq_slice_yield();
}

/* ---- Lock ---------------------------------------------------------------- */

static inline unsigned int mutex_signals(const struct urcu_mutex *m)
{
	return URCU_MUTEX_OWNER_DEFAULT ^ CMM_LOAD_SHARED(m->signals_off);
}

static inline uint32_t owner_of(int32_t s)
{
	return (uint32_t) s & STATE_OWNER_MASK;
}

static inline void note_acquired(struct urcu_mutex *m)
{
	CMM_STORE_SHARED(m->seq, m->seq + 1);
}

/*
 * Try to take an unlocked word @s, adding @extra bits. A waiter that may be
 * the one STATE_AWAKE stands for (@awake) clears it: once it owns the lock
 * it no longer watches the word, so its unlock must wake a sleeper.
 */
static inline bool try_take(struct urcu_mutex *m, int32_t s, uint32_t id,
		int32_t extra, bool awake)
{
	int32_t keep = awake ? STATE_SLEEPERS : STATE_SLEEPERS | STATE_AWAKE;

	/* Full barrier on success: the acquire that pairs with unlock's cmpxchg. */
	if (uatomic_cmpxchg(&m->state, s, (int32_t) id | (s & keep) | extra)
			!= s)
		return false;
	note_acquired(m);
	return true;
}

/* The waiter's running hold average @avg after one more @sample. */
static uint32_t hold_average(uint32_t avg, int64_t sample)
{
	/*
	 * Clipped near the average: a hold stretched by the owner's
	 * preemption, or a rare long section, must not teach waiters to
	 * spin through the next one. A steady longer hold still raises the
	 * average by more than a third per sample.
	 */
	if (sample > (int64_t) avg * 4 + HOLD_CLIP_SLACK_NS)
		sample = (int64_t) avg * 4 + HOLD_CLIP_SLACK_NS;
	if (sample > HOLD_SAMPLE_MAX_NS)
		sample = HOLD_SAMPLE_MAX_NS;
	return (uint32_t) ((int64_t) avg + (sample - (int64_t) avg) / 8);
}

/*
 * Publish a waiter's hold average once, when its spin ends: a store at
 * every poll would take the lock's cache line from the owner each time.
 * Racy on purpose: an estimate; a lost update costs nothing.
 */
static void publish_hold_average(struct urcu_mutex *m, uint32_t avg)
{
	if (avg != CMM_LOAD_SHARED(m->hold_ns))
		CMM_STORE_SHARED(m->hold_ns, avg);
}

static inline int64_t thread_cpu_ns(void)
{
	return urcu_rseq_now_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* After a spin from @start to @end (wall), begun at thread CPU time @cpu0. */
static void note_cpu_share(int64_t start, int64_t end, int64_t cpu0)
{
	int64_t wall = end - start;

	if (wall < SHARE_MIN_WALL_NS)
		return;
	if ((thread_cpu_ns() - cpu0) * 4 < wall * 3)
		contended_until = end + CONTENDED_NS;
}

/*
 * Spin while the owner looks running. Returns true with the lock taken,
 * false when the waiter should sleep. While it spins the waiter keeps
 * STATE_AWAKE set, so that unlock leaves the sleepers alone; *@awake tells
 * the caller it may be the waiter the bit stands for.
 *
 * The waiter polls the lock word with a growing gap. Every poll pulls the
 * line away from the owner, and an owner that takes the lock again right
 * after its unlock then pays a cache miss in both of its atomics; such an
 * owner leaves the lock free only for the few nanoseconds between them,
 * so a poll seldom finds it free. Hence two caps:
 * - while one hold lasts (the acquisition count has not moved since the
 *   last poll), POLL_GAP_MAX pauses: the owner does not touch the line
 *   meanwhile, a poll costs it nothing, and the waiter sees the release
 *   within a microsecond or so;
 * - while acquisitions pass the waiter by (the count moved), up to
 *   POLL_GAP_PASSED_MAX: polling faster would mostly slow the owner down.
 *   The waiter still gets its turn: when it stops spinning and sleeps,
 *   or through the hand-off after URCU_MUTEX_HANDOFF_NS.
 * The count shares the lock word's line, so reading both costs one miss.
 */
static bool spin(struct urcu_mutex *m, uint32_t id, int32_t extra,
		bool *awake)
{
	unsigned int sig = mutex_signals(m), gap = 1, i;
	uint32_t cap = CMM_LOAD_SHARED(m->spin_ns), seq, seen_seq, limit, avg;
	int64_t start, now, seen_at, cpu0 = 0, cpu_at = 0, checked_at;
	bool taken = false;
	int32_t s;

	if (!cap)
		cap = DEFAULT_SPIN_NS;
	avg = CMM_LOAD_SHARED(m->hold_ns);
	limit = avg * HOLD_FACTOR;
	if (limit < HOLD_FLOOR_NS)
		limit = HOLD_FLOOR_NS;
	start = seen_at = now = urcu_rseq_now_ns(CLOCK_MONOTONIC);
	checked_at = start - OWNER_CHECK_GAP_NS;	/* look at the first poll */
	if (start < contended_until && cap > CONTENDED_SPIN_NS)
		cap = CONTENDED_SPIN_NS;
	seen_seq = CMM_LOAD_SHARED(m->seq);
	for (;;) {
		s = CMM_LOAD_SHARED(m->state);
		seq = CMM_LOAD_SHARED(m->seq);
		if (!owner_of(s)) {
			if (try_take(m, s, id, extra, *awake)) {
				taken = true;
				break;
			}
			continue;
		}
		if (s & STATE_HANDOFF)
			break;	/* nobody may barge: no use spinning */
		if (!(s & STATE_AWAKE)) {
			if (uatomic_cmpxchg(&m->state, s, s | STATE_AWAKE) != s)
				continue;
			*awake = true;
		}
		/*
		 * The owner's state changes on the scale of time slices:
		 * look at once (an owner preempted on our CPU ends the spin
		 * before it starts), then every OWNER_CHECK_GAP_NS. A look
		 * takes two atomics on the owner's descriptor, a line every
		 * waiter shares: at each poll, with a short hold and many
		 * waiters, they cost more than the spin saved.
		 */
		if (sig && now - checked_at >= OWNER_CHECK_GAP_NS) {
			checked_at = now;
			if (owner_off_cpu(owner_of(s), sig))
				break;
		}
		if (seq != seen_seq) {
			/* Passed by: a new hold began since the last poll. */
			if (sig && seen_at != start)
				avg = hold_average(avg, now - seen_at);
			seen_seq = seq;
			seen_at = now;
			if (gap < POLL_GAP_PASSED_MAX)
				gap <<= 1;
		} else {
			if ((sig & URCU_MUTEX_OWNER_HOLD_TIME)
					&& now - seen_at > (int64_t) limit)
				break;
			gap = gap < POLL_GAP_MAX ? gap << 1 : POLL_GAP_MAX;
		}
		for (i = 0; i < gap; i++)
			caa_cpu_relax();
		now = urcu_rseq_now_ns(CLOCK_MONOTONIC);
		if (!cpu_at && now - start >= SHARE_DELAY_NS) {
			cpu0 = thread_cpu_ns();
			cpu_at = now;
		}
		if (now - start > (int64_t) cap)
			break;
	}
	publish_hold_average(m, avg);
	if (cpu_at)
		note_cpu_share(cpu_at, now, cpu0);
	return taken;
}

static int futex_sleep(struct urcu_mutex_thread *me, int32_t *word,
		int32_t val, clockid_t clock, const struct timespec *abstime)
{
	int ret;

	uatomic_inc(&me->blocked);
	/*
	 * Pairs with the barrier in unlock_slow() between the grant bump and
	 * its read of blocked: it sees us blocked, or we see the new grant.
	 */
	cmm_smp_mb__after_uatomic_inc();
	ret = urcu_rseq_futex_wait(word, val, clock, abstime);
	uatomic_dec(&me->blocked);
	return ret;
}

/*
 * In the hand-off slot, with the hand-off bit set: wait for an unlock to
 * name us owner while that owner runs, as spin() does, so that the hand-off
 * costs neither a wake-up nor the time the lock would sit idle while we get
 * back on a CPU. True once we own the lock; false when the word changed
 * under us or the owner looks off its CPU, or after the spin cap.
 */
static bool handoff_spin(struct urcu_mutex *m, uint32_t id)
{
	unsigned int sig = mutex_signals(m), gap = 1, i;
	uint32_t cap = CMM_LOAD_SHARED(m->spin_ns);
	int64_t end;
	int32_t s;

	end = urcu_rseq_now_ns(CLOCK_MONOTONIC) + (cap ? cap : DEFAULT_SPIN_NS);
	for (;;) {
		s = CMM_LOAD_SHARED(m->state);
		if (owner_of(s) == id) {
			/* Pairs with the cmpxchg in unlock_slow() naming us. */
			cmm_smp_mb();
			return true;
		}
		if (!owner_of(s) || !(s & STATE_HANDOFF))
			return false;
		if (sig && owner_off_cpu(owner_of(s), sig))
			return false;
		for (i = 0; i < gap; i++)
			caa_cpu_relax();
		if (gap < HANDOFF_POLL_GAP_MAX)
			gap <<= 1;
		if (urcu_rseq_now_ns(CLOCK_MONOTONIC) > end)
			return false;
	}
}

/*
 * The waiter has waited past URCU_MUTEX_HANDOFF_NS: take the hand-off slot
 * and wait, spinning while the owner runs, else asleep on our own grant
 * word, until an unlock names us owner. Returns 0 (locked), ETIMEDOUT, or
 * EAGAIN when the slot is taken by another.
 */
static int handoff_wait(struct urcu_mutex *m, struct urcu_mutex_thread *me,
		const struct timespec *abstime)
{
	uint32_t id = me->id;
	struct timespec ts;
	bool spun = false;
	int64_t poll;
	int32_t g, s;
	int ret;

	g = uatomic_cmpxchg(&m->handoff, 0, (int32_t) id);
	/*
	 * An occupant that is not alive came into a fork child from its
	 * parent and will never leave: take its place.
	 */
	if (g && (id_alive((uint32_t) g)
			|| uatomic_cmpxchg(&m->handoff, g, (int32_t) id) != g))
		return EAGAIN;
	for (;;) {
		g = CMM_LOAD_SHARED(me->grant);
		/* Pairs with the cmpxchg in unlock_slow() before the bump. */
		cmm_smp_mb();
		s = CMM_LOAD_SHARED(m->state);
		if (owner_of(s) == id)
			return 0;
		if (!owner_of(s)) {
			if (try_take(m, s, id, STATE_SLEEPERS, true)) {
				/* Nobody unlocked a word with our bit: still ours. */
				(void) uatomic_cmpxchg(&m->handoff, (int32_t) id, 0);
				return 0;
			}
			continue;
		}
		if ((s & (STATE_HANDOFF | STATE_SLEEPERS | STATE_AWAKE))
				!= (STATE_HANDOFF | STATE_SLEEPERS)) {
			/*
			 * Sleepers too: we may have used up their wake-up.
			 * Awake off: we may be the waiter it stands for.
			 */
			(void) uatomic_cmpxchg(&m->state, s,
					(s | STATE_HANDOFF | STATE_SLEEPERS)
					& ~STATE_AWAKE);
			continue;
		}
		if (!spun) {
			spun = true;
			if (handoff_spin(m, id))
				return 0;
			continue;	/* read grant and word again */
		}
		spun = false;
		urcu_rseq_fi_point();
		/*
		 * The bit we saw may be stale: set by a waiter that has left
		 * the slot, and about to be cleared by an unlock that found
		 * the slot empty before we took it. Poll, so that such a
		 * clear cannot strand us: the loop sets the bit again.
		 */
		poll = urcu_rseq_now_ns(CLOCK_MONOTONIC) + HANDOFF_POLL_NS;
		ts.tv_sec = (time_t) (poll / URCU_RSEQ_NSEC_PER_SEC);
		ts.tv_nsec = (long) (poll % URCU_RSEQ_NSEC_PER_SEC);
		ret = futex_sleep(me, &me->grant, g, CLOCK_MONOTONIC, &ts);
		if (ret != ETIMEDOUT || !abstime
				|| !urcu_rseq_ts_passed(CLOCK_REALTIME, abstime))
			continue;
		if (uatomic_cmpxchg(&m->handoff, (int32_t) id, 0) == (int32_t) id)
			return ETIMEDOUT;
		/* An unlock has claimed us: it is naming us owner right now. */
		while (owner_of(CMM_LOAD_SHARED(m->state)) != id)
			caa_cpu_relax();
		cmm_smp_mb();	/* Pairs with unlock_slow()'s cmpxchg. */
		return 0;
	}
}

static int lock_slow(struct urcu_mutex *m, const struct timespec *abstime)
{
	struct urcu_mutex_thread *me = get_self();
	uint32_t id = me->id;
	int32_t extra = 0, s, want;
	int64_t start = 0;
	bool awake = false;
	int ret;

	for (;;) {
		if (spin(m, id, extra, &awake))
			return 0;
		s = CMM_LOAD_SHARED(m->state);
		if (!owner_of(s)) {
			if (try_take(m, s, id, extra, awake))
				return 0;
			continue;
		}
		urcu_rseq_debug_check(owner_of(s) != id, "urcu_mutex",
				"lock of a mutex the calling thread holds");
		if (!start) {
			start = urcu_rseq_now_ns(CLOCK_MONOTONIC);
		} else if (urcu_rseq_now_ns(CLOCK_MONOTONIC) - start
				> URCU_MUTEX_HANDOFF_NS) {
			ret = handoff_wait(m, me, abstime);
			if (ret != EAGAIN)
				return ret;
		}
		/*
		 * Whoever sleeps clears the awake bit, ours or not: a bit left
		 * by an unlock whose wake-up found nobody must not outlive the
		 * sleepers it would keep asleep. A spinner that still watches
		 * sets it again.
		 */
		want = (s | STATE_SLEEPERS) & ~STATE_AWAKE;
		if (want != s) {
			if (uatomic_cmpxchg(&m->state, s, want) != s)
				continue;
			s = want;
		}
		urcu_rseq_fi_point();
		ret = futex_sleep(me, &m->state, s, CLOCK_REALTIME, abstime);
		/*
		 * Once we slept, others may sleep behind us and the unlock
		 * that woke us cleared the bit: keep it when we take the lock.
		 * That unlock also set the awake bit for us.
		 */
		extra = STATE_SLEEPERS;
		awake = true;
		if (ret == ETIMEDOUT)
			return ETIMEDOUT;
	}
}

static inline bool lock_fast(struct urcu_mutex *m, uint32_t id)
{
	/*
	 * Read first: under contention the free word usually carries the
	 * sleepers or awake bit, and an owner that comes back (whose cache
	 * holds the line) then takes it with one cmpxchg, not a failed one
	 * and a second.
	 */
	int32_t s = CMM_LOAD_SHARED(m->state);

	return caa_likely(!owner_of(s)) && try_take(m, s, id, 0, false);
}

void urcu_mutex_lock(struct urcu_mutex *m)
{
	if (caa_unlikely(!lock_fast(m, get_self_id())))
		(void) lock_slow(m, NULL);
	slice_begin();
}

bool urcu_mutex_trylock(struct urcu_mutex *m)
{
	struct urcu_mutex_thread *me = get_self();
	int32_t s = CMM_LOAD_SHARED(m->state);

	/* A pending hand-off is owned by the lock word: no barging past it. */
	if (owner_of(s) || !try_take(m, s, me->id, 0, false))
		return false;
	slice_begin();
	return true;
}

int urcu_mutex_timedlock(struct urcu_mutex *m, const struct timespec *abstime)
{
	int ret = 0;

	if (!m || !abstime || !urcu_rseq_ts_valid(abstime))
		return EINVAL;
	if (!lock_fast(m, get_self_id()))
		ret = lock_slow(m, abstime);
	if (!ret)
		slice_begin();
	return ret;
}

/* ---- Unlock -------------------------------------------------------------- */

/* @s: the lock word as last read. */
static int unlock_slow(struct urcu_mutex *m, uint32_t id, int32_t s)
{
	struct urcu_mutex_thread *d;
	int32_t old, target, next;

	for (;;) {
		if (owner_of(s) != id) {
			urcu_rseq_debug_check(0, "urcu_mutex",
					"unlock by a thread that does not own the mutex");
			return EPERM;
		}
		if (s & STATE_HANDOFF) {
			target = uatomic_xchg(&m->handoff, 0);
			/*
			 * A waiter cannot leave the slot but by a timeout that
			 * empties it; one that is gone did not come along into
			 * a fork child, and naming it would lock the mutex for
			 * ever.
			 */
			if (target && !id_alive((uint32_t) target))
				target = 0;
			if (target) {
				CMM_STORE_SHARED(m->seq, m->seq + 1);
				for (;;) {
					old = uatomic_cmpxchg(&m->state, s,
						target | (s & STATE_SLEEPERS));
					if (old == s)
						break;
					s = old;
				}
				/*
				 * The target owns the lock now and may free it:
				 * only its descriptor (never freed) is touched
				 * from here. Pairs with the cmm_smp_mb() in
				 * handoff_wait().
				 */
				d = desc_of((uint32_t) target);
				uatomic_inc(&d->grant);
				/*
				 * A target that spins sees the word; one that
				 * sleeps, or is about to, counts itself blocked
				 * first. Pairs with the barrier in futex_sleep().
				 */
				cmm_smp_mb__after_uatomic_inc();
				if (CMM_LOAD_SHARED(d->blocked) > 0)
					urcu_rseq_futex_wake(&d->grant, 1);
				return 0;
			}
		}
		urcu_rseq_fi_point();
		/*
		 * A waiter that watches the word (awake bit) will take the
		 * lock or clear the bit before it sleeps: no wake-up needed,
		 * and the sleepers bit stays for the next unlock. Otherwise
		 * wake one sleeper, and set the awake bit for it so that the
		 * unlocks until it runs do not wake more.
		 */
		if (s & STATE_AWAKE)
			next = s & (STATE_SLEEPERS | STATE_AWAKE);
		else if (s & STATE_SLEEPERS)
			next = STATE_AWAKE;
		else
			next = 0;
		/* Release: pairs with the cmpxchg of the next try_take(). */
		old = uatomic_cmpxchg(&m->state, s, next);
		if (old == s)
			break;
		s = old;
	}
	if ((s & (STATE_SLEEPERS | STATE_AWAKE)) != STATE_SLEEPERS)
		return 0;
	/*
	 * The lock is released: the mutex may be freed by now, and we read
	 * and write nothing in it. FUTEX_WAKE only names the address: on a
	 * private futex the kernel hashes the address with our mm and never
	 * reads or writes user memory, so a freed (even unmapped) word costs
	 * nothing, and a reused one at worst wakes a waiter of another futex
	 * at the same address, which must recheck its condition anyway. If
	 * the wake-up finds nobody, the awake bit set in the release stays,
	 * standing for nobody (see the top of this file).
	 */
	(void) urcu_rseq_futex_wake(&m->state, 1);
	return 0;
}

int urcu_mutex_unlock(struct urcu_mutex *m)
{
	uint32_t id = get_self_id();
	int32_t s = CMM_LOAD_SHARED(m->state);
	int ret = 0;

	/*
	 * No hand-off and no wake-up due (nobody sleeps, or a waiter
	 * watches the word): release, keeping the bits, in one cmpxchg.
	 * Release: pairs with the cmpxchg of the next try_take().
	 */
	if (caa_unlikely(!(owner_of(s) == id && !(s & STATE_HANDOFF)
			&& (s & (STATE_SLEEPERS | STATE_AWAKE)) != STATE_SLEEPERS
			&& uatomic_cmpxchg(&m->state, s,
				s & (STATE_SLEEPERS | STATE_AWAKE)) == s)))
		ret = unlock_slow(m, id, CMM_LOAD_SHARED(m->state));
	if (!ret)
		slice_end();
	return ret;
}

/* ---- Setup --------------------------------------------------------------- */

int urcu_mutex_attr_init(struct urcu_mutex_attr *attr)
{
	if (!attr)
		return EINVAL;
	attr->owner_signals = URCU_MUTEX_OWNER_DEFAULT;
	attr->spin_ns = 0;
	return 0;
}

int urcu_mutex_init(struct urcu_mutex *m, const struct urcu_mutex_attr *attr)
{
	if (!m)
		return EINVAL;
	if (attr && (attr->owner_signals & ~URCU_MUTEX_OWNER_ALL))
		return EINVAL;
	memset(m, 0, sizeof(*m));
	if (attr) {
		m->signals_off = URCU_MUTEX_OWNER_DEFAULT ^ attr->owner_signals;
		m->spin_ns = attr->spin_ns;
	}
	return 0;
}

/*
 * Busy: held (by a live thread or one that exited holding it), or a live
 * waiter sits in the hand-off slot. The sleepers and awake bits are not
 * looked at: they may outlive the waiters they stood for (see the top of
 * this file), and a waiter that has not reached the hand-off slot is not
 * seen; destroying a mutex that threads still wait for is undefined, as
 * for pthread_mutex_destroy().
 */
int urcu_mutex_destroy(struct urcu_mutex *m)
{
	int32_t s, h;
	bool busy;

	if (!m)
		return EINVAL;
	s = CMM_LOAD_SHARED(m->state);
	h = CMM_LOAD_SHARED(m->handoff);
	busy = owner_of(s) || (h && id_alive((uint32_t) h));
	urcu_rseq_debug_check(!busy, "urcu_mutex",
			"destroy of a mutex that is held or waited for");
	return busy ? EBUSY : 0;
}

bool urcu_mutex_is_owner(struct urcu_mutex *m)
{
	uint32_t id = self_id;

	/* A thread that never took an id owns nothing: do not give it one. */
	return id && owner_of(CMM_LOAD_SHARED(m->state)) == id;
}

/*
 * Only the calling thread writes its blocked count (here and in
 * futex_sleep()); waiters only read it, as a hint: plain stores do, with
 * no barrier. A thread without a descriptor holds no mutex, so nobody
 * looks: it only counts, for the descriptor it may take inside.
 */
void urcu_mutex_blocking_begin(void)
{
	struct urcu_mutex_thread *d = self;

	blocking_depth++;
	if (d)
		CMM_STORE_SHARED(d->blocked, d->blocked + 1);
}

void urcu_mutex_blocking_end(void)
{
	struct urcu_mutex_thread *d = self;

	blocking_depth--;
	if (d)
		CMM_STORE_SHARED(d->blocked, d->blocked - 1);
}
