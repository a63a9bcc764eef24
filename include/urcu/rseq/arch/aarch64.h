// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/rseq/arch/aarch64.h - the operations of urcu/rseq/ops.h in AArch64
 * assembly. Semantics: the pseudocode in urcu/rseq/ops.h; section layout as
 * described in urcu/rseq/arch/x86_64.h. x16 and x17 are the scratch
 * registers (the intra-procedure-call registers, free in inline asm).
 * idx_cmpeqv_cmpeqv_storev stores the index through the address of
 * *index passed in a register, under the "memory" clobber, not into an
 * input operand (see the same operation in x86_64.h).
 */
#ifndef _URCU_RSEQ_ARCH_AARCH64_H
#define _URCU_RSEQ_ARCH_AARCH64_H

#define URCU_RSEQ_ARCH_HAS_CS 1

#define _URCU_RSEQ_STR_(x) #x
#define _URCU_RSEQ_STR(x) _URCU_RSEQ_STR_(x)

#define _URCU_RSEQ_CS_START						\
	".pushsection __rseq_cs, \"aw\"\n\t"				\
	".balign 32\n\t"						\
	"3:\n\t"							\
	".long 0x0, 0x0\n\t"						\
	".quad 1f, (2f - 1f), 4f\n\t"					\
	".popsection\n\t"						\
	".pushsection __rseq_cs_ptr_array, \"aw\"\n\t"			\
	".quad 3b\n\t"							\
	".popsection\n\t"						\
	"adrp x16, 3b\n\t"						\
	"add x16, x16, :lo12:3b\n\t"					\
	"str x16, [%[rs], #" _URCU_RSEQ_STR(URCU_RSEQ_OFF_RSEQ_CS) "]\n\t" \
	"1:\n\t"

#define _URCU_RSEQ_CS_BEGIN(field)					\
	_URCU_RSEQ_CS_START						\
	"ldr w17, [%[rs], #" _URCU_RSEQ_STR(field) "]\n\t"		\
	"cmp w17, %w[idx]\n\t"						\
	"b.ne 4f\n\t"

#define _URCU_RSEQ_CS_END						\
	"2:\n\t"							\
	".pushsection __rseq_failure, \"ax\"\n\t"			\
	".inst " _URCU_RSEQ_STR(URCU_RSEQ_SIG) "\n\t"			\
	"4:\n\t"							\
	"b %l[abort]\n\t"						\
	".popsection\n\t"

#if URCU_RSEQ_FI_ENABLED
#define _URCU_RSEQ_INJECT						\
	"ldr w15, %[fi]\n\t"						\
	"5: cbz w15, 6f\n\t"						\
	"yield\n\t"							\
	"sub w15, w15, #1\n\t"						\
	"b 5b\n\t"							\
	"6:\n\t"
#define _URCU_RSEQ_FI_IN , [fi] "m" (urcu_rseq_fi_loops)
#define _URCU_RSEQ_FI_CLOBBER , "x15"
#else
#define _URCU_RSEQ_INJECT
#define _URCU_RSEQ_FI_IN
#define _URCU_RSEQ_FI_CLOBBER
#endif

/*
 * The index of the idx_ operations, once cpu_id (in x17) has shown the
 * area registered: in CPU mode that load is the index already.
 */
#define _URCU_RSEQ_IDX_LOAD_cpu
#define _URCU_RSEQ_IDX_LOAD_mm_cid					\
	"ldr w17, [%[rs], #" _URCU_RSEQ_STR(URCU_RSEQ_OFF_MM_CID) "]\n\t"

#define _URCU_RSEQ_DEFINE_OPS(suffix, field)				\
static inline int _urcu_rseq_cmpeqv_storev_##suffix(			\
		struct urcu_rseq_abi *rs, intptr_t *v, intptr_t expect,	\
		intptr_t newv, int idx)					\
{									\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_BEGIN(field)				\
		"ldr x17, %[v]\n\t"					\
		"cmp x17, %[expect]\n\t"				\
		"b.ne %l[cmpfail]\n\t"					\
		_URCU_RSEQ_INJECT					\
		"str %[newv], %[v]\n\t"					\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [v] "Q" (*v),		\
		  [expect] "r" (expect), [newv] "r" (newv)		\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "x16", "x17" _URCU_RSEQ_FI_CLOBBER	\
		: abort, cmpfail);					\
	return URCU_RSEQ_COMMITTED;					\
abort:									\
	return URCU_RSEQ_ABORTED;					\
cmpfail:								\
	return URCU_RSEQ_CMPFAIL;					\
}									\
									\
static inline int _urcu_rseq_cmpeqv_cmpeqv_storev_##suffix(		\
		struct urcu_rseq_abi *rs, intptr_t *v, intptr_t expect,	\
		intptr_t *v2, intptr_t expect2, intptr_t newv, int idx)	\
{									\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_BEGIN(field)				\
		"ldr x17, %[v]\n\t"					\
		"cmp x17, %[expect]\n\t"				\
		"b.ne %l[cmpfail]\n\t"					\
		"ldr x17, %[v2]\n\t"					\
		"cmp x17, %[expect2]\n\t"				\
		"b.ne %l[cmpfail]\n\t"					\
		_URCU_RSEQ_INJECT					\
		"str %[newv], %[v]\n\t"					\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [v] "Q" (*v),		\
		  [expect] "r" (expect), [v2] "Q" (*v2),		\
		  [expect2] "r" (expect2), [newv] "r" (newv)		\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "x16", "x17" _URCU_RSEQ_FI_CLOBBER	\
		: abort, cmpfail);					\
	return URCU_RSEQ_COMMITTED;					\
abort:									\
	return URCU_RSEQ_ABORTED;					\
cmpfail:								\
	return URCU_RSEQ_CMPFAIL;					\
}									\
									\
static inline int _urcu_rseq_cmpnev_storeoffp_load_##suffix(		\
		struct urcu_rseq_abi *rs, intptr_t *v, intptr_t expectnot, \
		long voffp, intptr_t *load, int idx)			\
{									\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_BEGIN(field)				\
		"ldr x17, %[v]\n\t"					\
		"cmp x17, %[expectnot]\n\t"				\
		"b.eq %l[cmpfail]\n\t"					\
		"str x17, %[load]\n\t"					\
		"ldr x17, [x17, %[voffp]]\n\t"				\
		_URCU_RSEQ_INJECT					\
		"str x17, %[v]\n\t"					\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [v] "Q" (*v),		\
		  [expectnot] "r" (expectnot), [voffp] "r" (voffp),	\
		  [load] "Q" (*load)					\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "x16", "x17" _URCU_RSEQ_FI_CLOBBER	\
		: abort, cmpfail);					\
	return URCU_RSEQ_COMMITTED;					\
abort:									\
	return URCU_RSEQ_ABORTED;					\
cmpfail:								\
	return URCU_RSEQ_CMPFAIL;					\
}									\
									\
static inline int _urcu_rseq_addv_##suffix(struct urcu_rseq_abi *rs,	\
		intptr_t *v, intptr_t count, int idx)			\
{									\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_BEGIN(field)				\
		"ldr x17, %[v]\n\t"					\
		"add x17, x17, %[count]\n\t"				\
		_URCU_RSEQ_INJECT					\
		"str x17, %[v]\n\t"					\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [v] "Q" (*v),		\
		  [count] "r" (count)					\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "x16", "x17" _URCU_RSEQ_FI_CLOBBER	\
		: abort);						\
	return URCU_RSEQ_COMMITTED;					\
abort:									\
	return URCU_RSEQ_ABORTED;					\
}									\
									\
static inline int _urcu_rseq_deref_addv_##suffix(			\
		struct urcu_rseq_abi *rs, void *const *ptrp, long off,	\
		intptr_t count, int idx)				\
{									\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_BEGIN(field)				\
		"ldr x16, %[ptrp]\n\t"					\
		"add x16, x16, %[off]\n\t"				\
		"ldr x17, [x16]\n\t"					\
		"add x17, x17, %[count]\n\t"				\
		_URCU_RSEQ_INJECT					\
		"str x17, [x16]\n\t"					\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [ptrp] "Q" (*ptrp),	\
		  [off] "r" (off), [count] "r" (count)			\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "x16", "x17" _URCU_RSEQ_FI_CLOBBER	\
		: abort);						\
	return URCU_RSEQ_COMMITTED;					\
abort:									\
	return URCU_RSEQ_ABORTED;					\
}									\
									\
static inline int _urcu_rseq_cmpeqv_trystorev_storev_##suffix(		\
		struct urcu_rseq_abi *rs, intptr_t *v, intptr_t expect,	\
		intptr_t *v2, intptr_t newv2, intptr_t newv, int idx)	\
{									\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_BEGIN(field)				\
		"ldr x17, %[v]\n\t"					\
		"cmp x17, %[expect]\n\t"				\
		"b.ne %l[cmpfail]\n\t"					\
		"str %[newv2], %[v2]\n\t"				\
		_URCU_RSEQ_INJECT					\
		"str %[newv], %[v]\n\t"					\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [v] "Q" (*v),		\
		  [expect] "r" (expect), [v2] "Q" (*v2),		\
		  [newv2] "r" (newv2), [newv] "r" (newv)		\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "x16", "x17" _URCU_RSEQ_FI_CLOBBER	\
		: abort, cmpfail);					\
	return URCU_RSEQ_COMMITTED;					\
abort:									\
	return URCU_RSEQ_ABORTED;					\
cmpfail:								\
	return URCU_RSEQ_CMPFAIL;					\
}									\
									\
static inline int _urcu_rseq_idx_addv_##suffix(				\
		struct urcu_rseq_abi *rs, void *base, long stride,	\
		intptr_t count)						\
{									\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_START					\
		"ldrsw x17, [%[rs], #"					\
			_URCU_RSEQ_STR(URCU_RSEQ_OFF_CPU_ID) "]\n\t"	\
		"tbnz x17, #63, %l[cmpfail]\n\t"			\
		_URCU_RSEQ_IDX_LOAD_##suffix				\
		"madd x17, x17, %[stride], %[base]\n\t"		\
		"ldr x16, [x17]\n\t"					\
		"add x16, x16, %[count]\n\t"				\
		_URCU_RSEQ_INJECT					\
		"str x16, [x17]\n\t"					\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [base] "r" (base),			\
		  [stride] "r" (stride), [count] "r" (count)		\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "x16", "x17" _URCU_RSEQ_FI_CLOBBER	\
		: abort, cmpfail);					\
	return URCU_RSEQ_COMMITTED;					\
abort:									\
	return URCU_RSEQ_ABORTED;					\
cmpfail:								\
	return URCU_RSEQ_CMPFAIL;					\
}									\
									\
static inline int _urcu_rseq_idx_cmpeqv_cmpeqv_storev_##suffix(		\
		struct urcu_rseq_abi *rs, void *base, long stride,	\
		long off2, intptr_t expect, intptr_t expect2,		\
		intptr_t newv, int *index)				\
{									\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_START					\
		"ldrsw x17, [%[rs], #"					\
			_URCU_RSEQ_STR(URCU_RSEQ_OFF_CPU_ID) "]\n\t"	\
		"tbnz x17, #63, %l[cmpfail]\n\t"			\
		_URCU_RSEQ_IDX_LOAD_##suffix				\
		"str w17, [%[index]]\n\t"				\
		"madd x17, x17, %[stride], %[base]\n\t"		\
		"ldr x16, [x17]\n\t"					\
		"cmp x16, %[expect]\n\t"				\
		"b.ne %l[cmpfail]\n\t"					\
		"ldr x16, [x17, %[off2]]\n\t"				\
		"cmp x16, %[expect2]\n\t"				\
		"b.ne %l[cmpfail]\n\t"					\
		_URCU_RSEQ_INJECT					\
		"str %[newv], [x17]\n\t"				\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [base] "r" (base),			\
		  [stride] "r" (stride), [off2] "r" (off2),		\
		  [expect] "r" (expect), [expect2] "r" (expect2),	\
		  [newv] "r" (newv), [index] "r" (index)		\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "x16", "x17" _URCU_RSEQ_FI_CLOBBER	\
		: abort, cmpfail);					\
	return URCU_RSEQ_COMMITTED;					\
abort:									\
	return URCU_RSEQ_ABORTED;					\
cmpfail:								\
	return URCU_RSEQ_CMPFAIL;					\
}

_URCU_RSEQ_DEFINE_OPS(cpu, URCU_RSEQ_OFF_CPU_ID)
_URCU_RSEQ_DEFINE_OPS(mm_cid, URCU_RSEQ_OFF_MM_CID)

#endif /* _URCU_RSEQ_ARCH_AARCH64_H */
