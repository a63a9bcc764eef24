// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The rseq thread layer and the RSEQ fence.
 *
 * The area: glibc's when glibc registered one (__rseq_size > 0), else our
 * own initial-exec TLS area, registered lazily by the first primitive that
 * needs it and unregistered by a thread-exit destructor. Both live at a
 * constant offset from the thread pointer, which urcu_rseq_offset holds.
 *
 * Which fields are valid: the kernel fills node_id and mm_cid when its
 * feature size (AT_RSEQ_FEATURE_SIZE, absent before Linux 6.3) and the
 * registered length both cover them. glibc 2.35 to 2.39 register 32 bytes
 * but publish __rseq_size = 20, so the registered length of glibc's area is
 * taken as at least the original 32 bytes.
 */
/* This file writes urcu_rseq_offset: see urcu_rseq_area() in urcu/rseq.h. */
#define URCU_RSEQ_OFFSET_WRITER

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <urcu/uatomic.h>
#include <urcu/rseq.h>

#include "common.h"

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE	27
#endif
#ifndef AT_RSEQ_ALIGN
#define AT_RSEQ_ALIGN		28
#endif
#ifndef __NR_rseq
#error "the rseq system call number is unknown for this architecture"
#endif
#ifndef __NR_membarrier
#error "the membarrier system call number is unknown for this architecture"
#endif
/*
 * The time-slice extension (Linux 7.0+, CONFIG_RSEQ_SLICE_EXTENSION): the
 * kernel sets this bit of the area's flags at registration when it will
 * grant extensions to the thread, which it does only for a registration
 * longer than the original 32 bytes (its "v2" mode). The control word
 * follows mm_cid: a request byte the thread sets, a granted byte the
 * kernel sets. The system call number is the same on every architecture.
 */
#define RSEQ_FLAG_SLICE_EXT_AVAILABLE	(1U << 4)
#define SLICE_CTRL_OFF			28
#ifndef PR_RSEQ_SLICE_EXTENSION
#define PR_RSEQ_SLICE_EXTENSION		79
#define PR_RSEQ_SLICE_EXTENSION_SET	2
#define PR_RSEQ_SLICE_EXT_ENABLE	0x01
#endif
#ifndef __NR_rseq_slice_yield
#define __NR_rseq_slice_yield		471
#endif
#if !HAVE_DECL_MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ
#define MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ		(1 << 7)
#define MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ	(1 << 8)
#define MEMBARRIER_CMD_FLAG_CPU				(1 << 0)
#endif

/* glibc >= 2.35 defines these; weak so that other C libraries link too. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

#define OWN_AREA_SIZE	64

/* Our own area, for threads glibc did not register. */
static __thread union {
	struct urcu_rseq_abi abi;
	char bytes[OWN_AREA_SIZE];
} own_area __attribute__((tls_model("initial-exec"), aligned(OWN_AREA_SIZE))) = {
	.abi = { .cpu_id = (uint32_t) URCU_RSEQ_CPU_ID_UNINITIALIZED },
};

URCU_RSEQ_API ptrdiff_t urcu_rseq_offset;
URCU_RSEQ_API unsigned int urcu_rseq_features;
URCU_RSEQ_API int urcu_rseq_fi_loops;

static unsigned int own_area_len = URCU_RSEQ_ORIG_SIZE;
static bool rseq_disabled;	/* URCU_RSEQ_DISABLE=1: every thread takes the fallbacks */
static pthread_key_t exit_key;
static int nr_possible_cpus;

static int sys_rseq(void *area, uint32_t len, int flags, uint32_t sig)
{
	return (int) syscall(__NR_rseq, area, len, flags, sig);
}

static int sys_membarrier(int cmd, unsigned int flags, int cpu)
{
	return (int) syscall(__NR_membarrier, cmd, flags, cpu);
}

static bool using_glibc_area(void)
{
	return urcu_rseq_features & URCU_RSEQ_FEATURE_GLIBC_AREA;
}

static void thread_exit(void *arg)
{
	(void) arg;
	(void) urcu_rseq_thread_unregister();
}

int urcu_rseq_thread_register(void)
{
	int32_t cpu;

	if (rseq_disabled) {
		errno = ENOSYS;
		return -1;
	}
	if (using_glibc_area())
		return 0;	/* glibc registered every thread at creation */
	cpu = (int32_t) CMM_LOAD_SHARED(own_area.abi.cpu_id);
	if (cpu >= 0)
		return 0;
	/*
	 * A signal handler may register this thread between the load above
	 * and the system call (the fast paths register lazily and are
	 * async-signal-safe). The kernel then answers EBUSY, which it gives
	 * only when this very area, length and signature are registered: the
	 * area is live and the thread registered, so it is a success, and
	 * "failed" must not be written over the cpu_id the kernel maintains.
	 */
	if (sys_rseq(&own_area.abi, own_area_len, 0, URCU_RSEQ_SIG)
			&& errno != EBUSY) {
		int err = errno;

		/* Remember the failure so that fast paths stop asking. */
		CMM_STORE_SHARED(own_area.abi.cpu_id,
			(uint32_t) URCU_RSEQ_CPU_ID_REGISTRATION_FAILED);
		errno = err;
		return -1;
	}
	/* Unregister at thread exit: the TLS block outlives no thread. */
	(void) pthread_setspecific(exit_key, (void *) 1);
	return 0;
}

int urcu_rseq_thread_unregister(void)
{
	sigset_t all, old;
	int ret = 0, err = 0;

	if (rseq_disabled || using_glibc_area())
		return 0;	/* glibc's area lives and dies with the thread */
	/*
	 * Once the kernel has let go of the area, a handler's lazy
	 * registration would take it again, and the stores below would then
	 * mark a live area unregistered and drop its exit destructor: no
	 * handler runs until the area and the destructor agree.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if ((int32_t) CMM_LOAD_SHARED(own_area.abi.cpu_id) < 0) {
		/* Never registered, or failed: allow a later retry. */
		CMM_STORE_SHARED(own_area.abi.cpu_id,
			(uint32_t) URCU_RSEQ_CPU_ID_UNINITIALIZED);
		goto out;
	}
	if (sys_rseq(&own_area.abi, own_area_len, URCU_RSEQ_FLAG_UNREGISTER,
			URCU_RSEQ_SIG)) {
		err = errno;
		ret = -1;
		goto out;
	}
	CMM_STORE_SHARED(own_area.abi.cpu_id,
		(uint32_t) URCU_RSEQ_CPU_ID_UNINITIALIZED);
	(void) pthread_setspecific(exit_key, NULL);
out:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		errno = err;
	return ret;
}

/*
 * Turn the time-slice extension on for the calling thread (registering its
 * area if needed) and return its request byte, the granted byte next to
 * it; NULL where the kernel offers none: before Linux 7.0, a kernel built
 * without it or booted with rseq_slice_ext=0, a 32-byte registration
 * (glibc 2.36, Debian 12's), or rseq turned off.
 */
uint8_t *urcu_rseq_slice_enable(void)
{
	struct urcu_rseq_abi *rs;

	if (urcu_rseq_thread_register())
		return NULL;
	rs = urcu_rseq_area();
	/*
	 * The kernel's word on all of the above: it writes the flags at
	 * registration, this bit only for a v2 one with the extension on;
	 * older kernels leave the zero that glibc and we register.
	 */
	if (!(CMM_LOAD_SHARED(rs->flags) & RSEQ_FLAG_SLICE_EXT_AVAILABLE))
		return NULL;
	/* 0 as well when another part of the program turned it on already. */
	if (prctl(PR_RSEQ_SLICE_EXTENSION, PR_RSEQ_SLICE_EXTENSION_SET,
			PR_RSEQ_SLICE_EXT_ENABLE, 0, 0))
		return NULL;
	return (uint8_t *) rs + SLICE_CTRL_OFF;
}

/* Give back the CPU after a granted extension: the kernel expects it. */
void urcu_rseq_slice_yield(void)
{
	(void) syscall(__NR_rseq_slice_yield);
}

/* True when the calling thread's area is registered (registering it if needed). */
static bool thread_registered(void)
{
	int32_t cpu = (int32_t) CMM_LOAD_SHARED(urcu_rseq_area()->cpu_id);

	if (cpu >= 0)
		return true;
	if (cpu == URCU_RSEQ_CPU_ID_REGISTRATION_FAILED || rseq_disabled)
		return false;
	return urcu_rseq_thread_register() == 0;
}

bool urcu_rseq_available(void)
{
	return urcu_rseq_index(URCU_RSEQ_INDEX_CPU) >= 0;
}

int urcu_rseq_index_slow(int mode)
{
	struct urcu_rseq_abi *rs = urcu_rseq_area();

	if (!URCU_RSEQ_ARCH_HAS_CS || !thread_registered())
		return -1;
	if (mode == URCU_RSEQ_INDEX_MM_CID)
		return (int) CMM_LOAD_SHARED(rs->mm_cid);
	return (int) CMM_LOAD_SHARED(rs->cpu_id);
}

int urcu_rseq_cpu_slow(void)
{
	int cpu;

	if (thread_registered())
		return (int) CMM_LOAD_SHARED(urcu_rseq_area()->cpu_id);
	cpu = sched_getcpu();
	return cpu < 0 ? 0 : cpu;
}

int urcu_rseq_mm_cid_slow(void)
{
	if (!(urcu_rseq_features & URCU_RSEQ_FEATURE_MM_CID)
			|| !thread_registered())
		return -1;
	return (int) CMM_LOAD_SHARED(urcu_rseq_area()->mm_cid);
}

int urcu_rseq_node_slow(void)
{
	unsigned int cpu, node;

	if ((urcu_rseq_features & URCU_RSEQ_FEATURE_NODE_ID)
			&& thread_registered())
		return (int) CMM_LOAD_SHARED(urcu_rseq_area()->node_id);
	if (syscall(SYS_getcpu, &cpu, &node, NULL))
		return 0;
	return (int) node;
}

static int read_possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	int max = -1;
	char buf[256], *p;

	if (f) {
		if (fgets(buf, sizeof(buf), f)) {
			/* A list of ranges, "0-3,8-11": the last number is the highest. */
			for (p = buf; *p; p++) {
				if (*p >= '0' && *p <= '9') {
					int n = (int) strtol(p, &p, 10);

					if (n > max)
						max = n;
					p--;
				}
			}
		}
		fclose(f);
	}
	if (max < 0)
		max = get_nprocs_conf() - 1;
	return max < 0 ? 1 : max + 1;
}

int urcu_rseq_nr_cpus(void)
{
	/* Another constructor of the library may ask before ours ran. */
	if (caa_unlikely(CMM_LOAD_SHARED(nr_possible_cpus) <= 0))
		CMM_STORE_SHARED(nr_possible_cpus, read_possible_cpus());
	return nr_possible_cpus;
}

/*
 * The fence. Registration is per process (per mm): once here, and again in
 * a fork() child, whose mm starts unregistered. State: 0 not tried, 1
 * registered, -errno unavailable.
 */
static int fence_state;
static pthread_mutex_t fence_mutex = PTHREAD_MUTEX_INITIALIZER;

static int fence_register(void)
{
	int state = uatomic_read(&fence_state);
	int ret;

	if (caa_likely(state == 1))
		return 0;
	if (state < 0)
		goto fail;
	pthread_mutex_lock(&fence_mutex);
	state = uatomic_read(&fence_state);
	if (state == 0) {
		ret = sys_membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
		if (ret < 0)
			state = -errno;
		else if (!(ret & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ))
			state = -ENOSYS;
		else if (sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ,
				0, 0) < 0)
			state = -errno;
		else
			state = 1;
		uatomic_set(&fence_state, state);
	}
	pthread_mutex_unlock(&fence_mutex);
	if (state == 1)
		return 0;
fail:
	/* seccomp filters commonly answer EPERM: all mean "no fence here". */
	errno = -state == EINVAL ? ENOSYS : -state;
	return -1;
}

bool urcu_rseq_fence_available(void)
{
	return fence_register() == 0;
}

int urcu_rseq_fence(void)
{
	if (fence_register())
		return -1;
	/*
	 * The system call orders our prior accesses before, and later ones
	 * after, every section it aborts or waits out (a full barrier on each
	 * targeted CPU).
	 */
	return sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0);
}

int urcu_rseq_fence_cpu(int cpu)
{
	if (cpu < 0 || cpu >= nr_possible_cpus) {
		errno = EINVAL;
		return -1;
	}
	if (fence_register())
		return -1;
	return sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
			MEMBARRIER_CMD_FLAG_CPU, cpu);
}

static void fork_child(void)
{
	/* The child's mm starts with no membarrier registration. */
	pthread_mutex_init(&fence_mutex, NULL);
	fence_state = 0;
}

static bool env_true(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

static unsigned int feature_size(void)
{
	unsigned long size = getauxval(AT_RSEQ_FEATURE_SIZE);

	/* Before Linux 6.3 there is no auxv entry: the original 20 bytes. */
	return size ? (unsigned int) size : 20;
}

/* Before the other constructors of the library, which may use the area. */
static void __attribute__((constructor(101))) urcu_rseq_thread_layer_init(void)
{
	unsigned int feat = feature_size(), reg_len;
	unsigned long align = getauxval(AT_RSEQ_ALIGN);
	const char *fi = getenv("URCU_RSEQ_FI_LOOPS");

	nr_possible_cpus = read_possible_cpus();
	rseq_disabled = env_true("URCU_RSEQ_DISABLE");
	if (fi)
		urcu_rseq_fi_loops = atoi(fi);
	(void) pthread_key_create(&exit_key, thread_exit);
	(void) pthread_atfork(NULL, NULL, fork_child);

	if (!rseq_disabled && &__rseq_size && &__rseq_offset && __rseq_size > 0) {
		urcu_rseq_offset = __rseq_offset;
		urcu_rseq_features |= URCU_RSEQ_FEATURE_GLIBC_AREA;
		reg_len = __rseq_size < URCU_RSEQ_ORIG_SIZE ?
			URCU_RSEQ_ORIG_SIZE : __rseq_size;
	} else {
		urcu_rseq_offset = (char *) &own_area.abi
			- (char *) urcu_rseq_thread_pointer();
		/* The original size is always accepted; larger only when asked. */
		reg_len = URCU_RSEQ_ORIG_SIZE;
		if (feat > URCU_RSEQ_ORIG_SIZE && align <= OWN_AREA_SIZE) {
			unsigned long a = align ? align : URCU_RSEQ_ORIG_SIZE;

			reg_len = (unsigned int) ((feat + a - 1) / a * a);
			if (reg_len > OWN_AREA_SIZE)
				reg_len = URCU_RSEQ_ORIG_SIZE;
		}
		own_area_len = reg_len;
	}
	if (feat > reg_len)
		feat = reg_len;
	if (feat >= URCU_RSEQ_FEATURE_SIZE_NODE_ID)
		urcu_rseq_features |= URCU_RSEQ_FEATURE_NODE_ID;
	if (feat >= URCU_RSEQ_FEATURE_SIZE_MM_CID)
		urcu_rseq_features |= URCU_RSEQ_FEATURE_MM_CID;
	if (URCU_RSEQ_ARCH_HAS_CS)
		urcu_rseq_features |= URCU_RSEQ_FEATURE_CS;
}
