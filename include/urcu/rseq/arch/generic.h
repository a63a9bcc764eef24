// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/rseq/arch/generic.h - architectures without critical-section
 * assembly. urcu_rseq_index() is always -1 there, so no operation below is
 * ever reached (the idx_ operations, which take no index, answer CMPFAIL, "this
 * thread cannot run sections"): every primitive runs its atomic fallback (see the
 * urcu_rseq_atomic_* forms in urcu/rseq/ops.h). They exist so that code
 * written for the rseq path compiles unchanged.
 */
#ifndef _URCU_RSEQ_ARCH_GENERIC_H
#define _URCU_RSEQ_ARCH_GENERIC_H

#define URCU_RSEQ_ARCH_HAS_CS 0

#define _URCU_RSEQ_DEFINE_OPS(suffix)					\
static inline int _urcu_rseq_cmpeqv_storev_##suffix(			\
		struct urcu_rseq_abi *rs, intptr_t *v, intptr_t expect,	\
		intptr_t newv, int idx)					\
{ return URCU_RSEQ_ABORTED; }						\
static inline int _urcu_rseq_cmpeqv_cmpeqv_storev_##suffix(		\
		struct urcu_rseq_abi *rs, intptr_t *v, intptr_t expect,	\
		intptr_t *v2, intptr_t expect2, intptr_t newv, int idx)	\
{ return URCU_RSEQ_ABORTED; }						\
static inline int _urcu_rseq_cmpnev_storeoffp_load_##suffix(		\
		struct urcu_rseq_abi *rs, intptr_t *v, intptr_t expectnot, \
		long voffp, intptr_t *load, int idx)			\
{ return URCU_RSEQ_ABORTED; }						\
static inline int _urcu_rseq_addv_##suffix(struct urcu_rseq_abi *rs,	\
		intptr_t *v, intptr_t count, int idx)			\
{ return URCU_RSEQ_ABORTED; }						\
static inline int _urcu_rseq_deref_addv_##suffix(			\
		struct urcu_rseq_abi *rs, void *const *ptrp, long off,	\
		intptr_t count, int idx)				\
{ return URCU_RSEQ_ABORTED; }						\
static inline int _urcu_rseq_cmpeqv_trystorev_storev_##suffix(		\
		struct urcu_rseq_abi *rs, intptr_t *v, intptr_t expect,	\
		intptr_t *v2, intptr_t newv2, intptr_t newv, int idx)	\
{ return URCU_RSEQ_ABORTED; }						\
static inline int _urcu_rseq_idx_addv_##suffix(				\
		struct urcu_rseq_abi *rs, void *base, long stride,	\
		intptr_t count)						\
{ return URCU_RSEQ_CMPFAIL; }						\
static inline int _urcu_rseq_idx_cmpeqv_cmpeqv_storev_##suffix(		\
		struct urcu_rseq_abi *rs, void *base, long stride,	\
		long off2, intptr_t expect, intptr_t expect2,		\
		intptr_t newv, int *index)				\
{ return URCU_RSEQ_CMPFAIL; }

_URCU_RSEQ_DEFINE_OPS(cpu)
_URCU_RSEQ_DEFINE_OPS(mm_cid)

#endif /* _URCU_RSEQ_ARCH_GENERIC_H */
