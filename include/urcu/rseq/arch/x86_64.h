// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/rseq/arch/x86_64.h - the operations of urcu/rseq/ops.h in x86_64
 * assembly. Semantics: the pseudocode in urcu/rseq/ops.h.
 *
 * Layout of every section (numeric labels are local to one asm statement):
 *   3: descriptor in __rseq_cs: start 1f, length 2f - 1f, abort 4f
 *   store &3b in rseq_cs, then (_URCU_RSEQ_CS_START ends here)
 *   1: compare the index field of the area with the caller's index
 *      (or, in idx_addv, load the index itself)
 *      ...loads, comparisons, speculative stores...
 *      commit store
 *   2: (post-commit)
 *   4: in __rseq_failure, right after the signature: jump to the C label
 *      "abort".
 * The kernel sets rseq_cs back to 0 when it aborts or when it finds the
 * instruction pointer outside the section, so it is never cleared here.
 */
#ifndef _URCU_RSEQ_ARCH_X86_64_H
#define _URCU_RSEQ_ARCH_X86_64_H

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
	"leaq 3b(%%rip), %%rax\n\t"					\
	"movq %%rax, " _URCU_RSEQ_STR(URCU_RSEQ_OFF_RSEQ_CS) "(%[rs])\n\t" \
	"1:\n\t"

#define _URCU_RSEQ_CS_BEGIN(field)					\
	_URCU_RSEQ_CS_START						\
	"cmpl %[idx], " _URCU_RSEQ_STR(field) "(%[rs])\n\t"		\
	"jnz 4f\n\t"

#define _URCU_RSEQ_CS_END						\
	"2:\n\t"							\
	".pushsection __rseq_failure, \"ax\"\n\t"			\
	/* ud1 <sig>(%rip), %edi: traps if ever executed. */		\
	".byte 0x0f, 0xb9, 0x3d\n\t"					\
	".long " _URCU_RSEQ_STR(URCU_RSEQ_SIG) "\n\t"			\
	"4:\n\t"							\
	"jmp %l[abort]\n\t"						\
	".popsection\n\t"

#if URCU_RSEQ_FI_ENABLED
#define _URCU_RSEQ_INJECT						\
	"movl %[fi], %%ecx\n\t"						\
	"5: testl %%ecx, %%ecx\n\t"					\
	"jz 6f\n\t"							\
	"pause\n\t"							\
	"decl %%ecx\n\t"						\
	"jmp 5b\n\t"							\
	"6:\n\t"
#define _URCU_RSEQ_FI_IN , [fi] "m" (urcu_rseq_fi_loops)
#define _URCU_RSEQ_FI_CLOBBER , "rcx"
#else
#define _URCU_RSEQ_INJECT
#define _URCU_RSEQ_FI_IN
#define _URCU_RSEQ_FI_CLOBBER
#endif

/*
 * The index of the idx_ operations, once cpu_id (in %rax) has shown the
 * area registered: in CPU mode that load is the index already.
 */
#define _URCU_RSEQ_IDX_LOAD_cpu
#define _URCU_RSEQ_IDX_LOAD_mm_cid					\
	"movslq " _URCU_RSEQ_STR(URCU_RSEQ_OFF_MM_CID) "(%[rs]), %%rax\n\t"

/*
 * idx_addv's section, with @scale_insn turning the index in %rax into a
 * byte offset. A stride that is a power of two known at compile time is a
 * shift (one cycle, against three for imul on the path to the add);
 * _URCU_RSEQ_LOG2 is a constant expression even where the optimizer does
 * not run, so the "i" operand compiles at -O0 too (the branch is then
 * never taken).
 */
#define _URCU_RSEQ_POW2(x)						\
	(__builtin_constant_p(x) && (x) > 0 && ((x) & ((x) - 1)) == 0)
#define _URCU_RSEQ_LOG2(x)						\
	(__builtin_constant_p(x) && (x) > 0 ? __builtin_ctzl(x) : 0)

#define _URCU_RSEQ_IDX_ADDV(suffix, scale_insn, scale_op)		\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_START					\
		"movslq " _URCU_RSEQ_STR(URCU_RSEQ_OFF_CPU_ID)		\
			"(%[rs]), %%rax\n\t"				\
		"testq %%rax, %%rax\n\t"				\
		"js %l[cmpfail]\n\t"					\
		_URCU_RSEQ_IDX_LOAD_##suffix				\
		scale_insn						\
		_URCU_RSEQ_INJECT					\
		"addq %[count], (%[base], %%rax)\n\t"			\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [base] "r" (base), scale_op,		\
		  [count] "er" (count)					\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "rax" _URCU_RSEQ_FI_CLOBBER		\
		: abort, cmpfail)

/*
 * idx_cmpeqv_cmpeqv_storev's section. Where the compiler takes outputs
 * from asm goto (_URCU_RSEQ_ASM_GOTO_OUTPUT) the index comes back in a
 * register on the commit path; when a comparison fails, the out-of-line
 * label 7 stores it to a local of the operation, which the C code copies
 * to *index: the caller's index never has to live in memory. Elsewhere
 * the section stores it to *index before the comparisons. Either way
 * *index keeps the caller's -1 when cpu_id shows no registration.
 *
 * Either store goes through an address passed in a register, covered by
 * the "memory" clobber: the form GCC documents for leaving a result of
 * asm goto in memory. An "m" input may not be written by GCC's rules, and
 * in the output form it was a local with no value yet, which the compiler
 * could place anywhere; an output operand is not defined on a label's path
 * for every compiler this header supports (clang before 16).
 *
 * The memory the other operations write (*v, *v2, *load) is still an "m"
 * input naming the caller's object, under the "memory" clobber, which
 * makes the compiler reload it after the asm. That is against the letter
 * of the same rule; it is kept because an "r" address would cost an lea
 * wherever the compiler now folds base + index into the operand, and "+m"
 * outputs need asm goto with outputs, which the other form lacks.
 */
#if _URCU_RSEQ_ASM_GOTO_OUTPUT
#define _URCU_RSEQ_IDXO_DECL	long _idx; int _fidx;
#define _URCU_RSEQ_IDXO_LOAD_cpu
#define _URCU_RSEQ_IDXO_LOAD_mm_cid					\
	"movslq " _URCU_RSEQ_STR(URCU_RSEQ_OFF_MM_CID) "(%[rs]), %[i]\n\t"
#define _URCU_RSEQ_IDXO_LOAD(suffix)					\
	"movslq " _URCU_RSEQ_STR(URCU_RSEQ_OFF_CPU_ID) "(%[rs]), %[i]\n\t" \
	"testq %[i], %[i]\n\t"						\
	"js %l[cmpfail]\n\t"						\
	_URCU_RSEQ_IDXO_LOAD_##suffix					\
	"movq %[i], %%rax\n\t"
#define _URCU_RSEQ_IDXO_FAIL	"movl %k[i], (%[fidx])\n\t"
#define _URCU_RSEQ_IDXO_OUT	[i] "=&r" (_idx)
#define _URCU_RSEQ_IDXO_IN	[fidx] "r" (&_fidx)
#define _URCU_RSEQ_IDXO_SET	*index = (int) _idx;
#define _URCU_RSEQ_IDXO_FAILSET	*index = _fidx;
#else
#define _URCU_RSEQ_IDXO_DECL
#define _URCU_RSEQ_IDXO_LOAD(suffix)					\
	"movslq " _URCU_RSEQ_STR(URCU_RSEQ_OFF_CPU_ID) "(%[rs]), %%rax\n\t" \
	"testq %%rax, %%rax\n\t"					\
	"js %l[cmpfail]\n\t"						\
	_URCU_RSEQ_IDX_LOAD_##suffix					\
	"movl %%eax, (%[fidx])\n\t"
#define _URCU_RSEQ_IDXO_FAIL
#define _URCU_RSEQ_IDXO_OUT
#define _URCU_RSEQ_IDXO_IN	[fidx] "r" (index)
#define _URCU_RSEQ_IDXO_SET
#define _URCU_RSEQ_IDXO_FAILSET
#endif

#define _URCU_RSEQ_IDX_CMPEQV2(suffix, scale_insn, scale_op)		\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_START					\
		_URCU_RSEQ_IDXO_LOAD(suffix)				\
		scale_insn						\
		"addq %[base], %%rax\n\t"				\
		"cmpq %[expect], (%%rax)\n\t"				\
		"jnz 7f\n\t"						\
		"cmpq %[expect2], (%%rax, %[off2])\n\t"		\
		"jnz 7f\n\t"						\
		_URCU_RSEQ_INJECT					\
		"movq %[newv], (%%rax)\n\t"				\
		_URCU_RSEQ_CS_END					\
		".pushsection __rseq_failure, \"ax\"\n\t"		\
		"7:\n\t"							\
		_URCU_RSEQ_IDXO_FAIL					\
		"jmp %l[cmpidx]\n\t"					\
		".popsection\n\t"					\
		: _URCU_RSEQ_IDXO_OUT					\
		: [rs] "r" (rs), [base] "r" (base), scale_op,		\
		  [off2] "r" (off2), [expect] "er" (expect),		\
		  [expect2] "er" (expect2), [newv] "r" (newv),		\
		  _URCU_RSEQ_IDXO_IN					\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "rax" _URCU_RSEQ_FI_CLOBBER		\
		: abort, cmpfail, cmpidx)

#define _URCU_RSEQ_DEFINE_OPS(suffix, field)				\
static inline int _urcu_rseq_cmpeqv_storev_##suffix(			\
		struct urcu_rseq_abi *rs, intptr_t *v, intptr_t expect,	\
		intptr_t newv, int idx)					\
{									\
	__asm__ __volatile__ goto (					\
		_URCU_RSEQ_CS_BEGIN(field)				\
		"cmpq %[v], %[expect]\n\t"				\
		"jnz %l[cmpfail]\n\t"					\
		_URCU_RSEQ_INJECT					\
		"movq %[newv], %[v]\n\t"				\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [v] "m" (*v),		\
		  [expect] "r" (expect), [newv] "r" (newv)		\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "rax" _URCU_RSEQ_FI_CLOBBER		\
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
		"cmpq %[v], %[expect]\n\t"				\
		"jnz %l[cmpfail]\n\t"					\
		"cmpq %[v2], %[expect2]\n\t"				\
		"jnz %l[cmpfail]\n\t"					\
		_URCU_RSEQ_INJECT					\
		"movq %[newv], %[v]\n\t"				\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [v] "m" (*v),		\
		  [expect] "r" (expect), [v2] "m" (*v2),		\
		  [expect2] "r" (expect2), [newv] "r" (newv)		\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "rax" _URCU_RSEQ_FI_CLOBBER		\
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
		"movq %[v], %%rax\n\t"					\
		"cmpq %%rax, %[expectnot]\n\t"				\
		"je %l[cmpfail]\n\t"					\
		"movq %%rax, %[load]\n\t"				\
		"addq %[voffp], %%rax\n\t"				\
		"movq (%%rax), %%rax\n\t"				\
		_URCU_RSEQ_INJECT					\
		"movq %%rax, %[v]\n\t"					\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [v] "m" (*v),		\
		  [expectnot] "r" (expectnot), [voffp] "er" (voffp),	\
		  [load] "m" (*load)					\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "rax" _URCU_RSEQ_FI_CLOBBER		\
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
		_URCU_RSEQ_INJECT					\
		"addq %[count], %[v]\n\t"				\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [v] "m" (*v),		\
		  [count] "er" (count)					\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "rax" _URCU_RSEQ_FI_CLOBBER		\
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
		"movq %[ptrp], %%rax\n\t"				\
		"addq %[off], %%rax\n\t"				\
		_URCU_RSEQ_INJECT					\
		"addq %[count], (%%rax)\n\t"				\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [ptrp] "m" (*ptrp),	\
		  [off] "er" (off), [count] "er" (count)		\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "rax" _URCU_RSEQ_FI_CLOBBER		\
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
		"cmpq %[v], %[expect]\n\t"				\
		"jnz %l[cmpfail]\n\t"					\
		"movq %[newv2], %[v2]\n\t"				\
		_URCU_RSEQ_INJECT					\
		"movq %[newv], %[v]\n\t"				\
		_URCU_RSEQ_CS_END					\
		: /* no outputs */					\
		: [rs] "r" (rs), [idx] "r" (idx), [v] "m" (*v),		\
		  [expect] "r" (expect), [v2] "m" (*v2),		\
		  [newv2] "r" (newv2), [newv] "r" (newv)		\
		  _URCU_RSEQ_FI_IN					\
		: "memory", "cc", "rax" _URCU_RSEQ_FI_CLOBBER		\
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
	if (_URCU_RSEQ_POW2(stride))					\
		_URCU_RSEQ_IDX_ADDV(suffix, "shlq %[scale], %%rax\n\t",	\
			[scale] "i" (_URCU_RSEQ_LOG2(stride)));		\
	else								\
		_URCU_RSEQ_IDX_ADDV(suffix, "imulq %[scale], %%rax\n\t",	\
			[scale] "er" (stride));				\
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
	_URCU_RSEQ_IDXO_DECL						\
									\
	if (_URCU_RSEQ_POW2(stride))					\
		_URCU_RSEQ_IDX_CMPEQV2(suffix, "shlq %[scale], %%rax\n\t", \
			[scale] "i" (_URCU_RSEQ_LOG2(stride)));		\
	else								\
		_URCU_RSEQ_IDX_CMPEQV2(suffix, "imulq %[scale], %%rax\n\t", \
			[scale] "er" (stride));				\
	_URCU_RSEQ_IDXO_SET						\
	return URCU_RSEQ_COMMITTED;					\
abort:									\
	return URCU_RSEQ_ABORTED;					\
cmpidx:									\
	_URCU_RSEQ_IDXO_FAILSET						\
	return URCU_RSEQ_CMPFAIL;					\
cmpfail:								\
	return URCU_RSEQ_CMPFAIL;					\
}

_URCU_RSEQ_DEFINE_OPS(cpu, URCU_RSEQ_OFF_CPU_ID)
_URCU_RSEQ_DEFINE_OPS(mm_cid, URCU_RSEQ_OFF_MM_CID)

#endif /* _URCU_RSEQ_ARCH_X86_64_H */
