/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Force-included (gcc -include) in the ThreadSanitizer build of make
 * check-tsan only, after config.h. liburcu 0.13 implements uatomic_*() on
 * x86 with inline assembly and CMM_LOAD_SHARED()/CMM_STORE_SHARED() as
 * volatile accesses: TSan sees the first not at all (neither the access nor
 * the synchronization) and the second as plain racy accesses, so every
 * lock-free protocol would be reported. Here they become GCC __atomic
 * builtins, which TSan instruments, with the ordering x86 gives them in
 * hardware: read-modify-writes are sequentially consistent (lock prefix),
 * shared loads acquire and shared stores release (TSO).
 *
 * What this means for the checks (doc/reliability.md): TSan then verifies
 * the program as run on x86 with the compiler keeping shared accesses in
 * order. It still finds plain accesses with no happens-before chain, memory
 * freed or reused while another thread may use it, lock misuse. It cannot
 * find a missing store-load fence (TSO already orders everything else, and
 * TSan does not model fences at all) nor an ordering bug visible only on
 * aarch64: the Promela models and make vmcheck-aarch64 cover those.
 */
#ifndef URCU_RSEQ_TSAN_URCU_H
#define URCU_RSEQ_TSAN_URCU_H


#include <urcu/arch.h>
#include <urcu/system.h>
#include <urcu/uatomic.h>

#undef _CMM_LOAD_SHARED
#undef CMM_LOAD_SHARED
#undef _CMM_STORE_SHARED
#undef CMM_STORE_SHARED
#define _CMM_LOAD_SHARED(p)	__atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define CMM_LOAD_SHARED(p)	_CMM_LOAD_SHARED(p)
#define _CMM_STORE_SHARED(x, v)						\
	__extension__ ({						\
		__typeof__(x) _tsan_v = (v);				\
		__atomic_store_n(&(x), _tsan_v, __ATOMIC_RELEASE);	\
		_tsan_v;						\
	})
#define CMM_STORE_SHARED(x, v)	_CMM_STORE_SHARED(x, v)

#undef uatomic_read
#undef uatomic_set
#undef uatomic_cmpxchg
#undef uatomic_xchg
#undef uatomic_add_return
#undef uatomic_sub_return
#undef uatomic_add
#undef uatomic_sub
#undef uatomic_inc
#undef uatomic_dec
#undef uatomic_and
#undef uatomic_or
#define uatomic_read(addr)	CMM_LOAD_SHARED(*(addr))
#define uatomic_set(addr, v)	((void) CMM_STORE_SHARED(*(addr), (v)))
#define uatomic_cmpxchg(addr, old, _new)				\
	__extension__ ({						\
		__typeof__(*(addr)) _tsan_old = (old);			\
		(void) __atomic_compare_exchange_n((addr), &_tsan_old,	\
			(_new), 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);	\
		_tsan_old;						\
	})
#define uatomic_xchg(addr, v)	__atomic_exchange_n((addr), (v), __ATOMIC_SEQ_CST)
#define uatomic_add_return(addr, v)	__atomic_add_fetch((addr), (v), __ATOMIC_SEQ_CST)
#define uatomic_sub_return(addr, v)	__atomic_sub_fetch((addr), (v), __ATOMIC_SEQ_CST)
#define uatomic_add(addr, v)	((void) uatomic_add_return((addr), (v)))
#define uatomic_sub(addr, v)	((void) uatomic_sub_return((addr), (v)))
#define uatomic_inc(addr)	uatomic_add((addr), 1)
#define uatomic_dec(addr)	uatomic_sub((addr), 1)
#define uatomic_and(addr, v)	((void) __atomic_and_fetch((addr), (v), __ATOMIC_SEQ_CST))
#define uatomic_or(addr, v)	((void) __atomic_or_fetch((addr), (v), __ATOMIC_SEQ_CST))

/*
 * liburcu's wait-free stack and queue inline (urcu/static/), so that their
 * atomics are the instrumented ones above: called in liburcu-common.so,
 * which is not built with TSan, the hand-offs through them (call_rcu's
 * queue in urcu-rseq.c) are invisible and every callback a reported race.
 * _LGPL_SOURCE is defined only around these two includes (their guards keep
 * the inline mapping for later includes): urcu-rseq.c must not see it.
 */
#ifndef _LGPL_SOURCE
#define _LGPL_SOURCE
#include <urcu/wfstack.h>
#include <urcu/wfcqueue.h>
#undef _LGPL_SOURCE
#else
#include <urcu/wfstack.h>
#include <urcu/wfcqueue.h>
#endif

#endif /* URCU_RSEQ_TSAN_URCU_H */
