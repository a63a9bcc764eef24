// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/rseq/abi.h - the kernel's restartable sequences ABI, as the project
 * uses it.
 *
 * The distribution's <linux/rseq.h> may predate node_id and mm_cid (Debian 12
 * ships the 6.1 UAPI headers), so the layout is carried here. Field offsets
 * are fixed by the kernel ABI and checked at compile time below; the
 * critical-section assembly in urcu/rseq/arch/ uses them as immediates.
 *
 * Which fields the kernel fills is decided at run time by the thread layer
 * (urcu/rseq.h): node_id and mm_cid exist from Linux 6.3 and are valid only
 * when both the kernel's feature size and the registered size cover them.
 */
#ifndef _URCU_RSEQ_ABI_H
#define _URCU_RSEQ_ABI_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Values the cpu_id field holds while no CPU number is valid. */
#define URCU_RSEQ_CPU_ID_UNINITIALIZED		-1
#define URCU_RSEQ_CPU_ID_REGISTRATION_FAILED	-2

/* Flags of the rseq system call. */
#define URCU_RSEQ_FLAG_UNREGISTER		(1 << 0)

/* Size of the original (Linux 4.18) area; the minimum the kernel accepts. */
#define URCU_RSEQ_ORIG_SIZE			32

/*
 * Signature placed before every abort handler; the kernel refuses to jump to
 * an abort address not preceded by it. The same values as glibc's, so an
 * area glibc registered accepts our critical sections.
 */
#if defined(__x86_64__) || defined(__i386__)
#define URCU_RSEQ_SIG	0x53053053
#elif defined(__aarch64__)
#define URCU_RSEQ_SIG	0xd428bc00	/* brk #0x45e0 */
#else
#define URCU_RSEQ_SIG	0x53053053
#endif

/* Describes one critical section: [start_ip, start_ip + post_commit_offset). */
struct urcu_rseq_abi_cs {
	uint32_t version;
	uint32_t flags;
	uint64_t start_ip;
	uint64_t post_commit_offset;
	uint64_t abort_ip;
} __attribute__((aligned(32)));

/* The per-thread area shared with the kernel. */
struct urcu_rseq_abi {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;	/* struct urcu_rseq_abi_cs *, or 0 */
	uint32_t flags;
	uint32_t node_id;	/* Linux >= 6.3 */
	uint32_t mm_cid;	/* Linux >= 6.3 */
} __attribute__((aligned(32)));

/* Offsets used as immediates by the critical-section assembly. */
#define URCU_RSEQ_OFF_CPU_ID_START	0
#define URCU_RSEQ_OFF_CPU_ID		4
#define URCU_RSEQ_OFF_RSEQ_CS		8
#define URCU_RSEQ_OFF_NODE_ID		20
#define URCU_RSEQ_OFF_MM_CID		24
/* Feature size (AT_RSEQ_FEATURE_SIZE) that covers node_id, and mm_cid. */
#define URCU_RSEQ_FEATURE_SIZE_NODE_ID	24
#define URCU_RSEQ_FEATURE_SIZE_MM_CID	28

#if defined(__cplusplus) && __cplusplus >= 201103L
#define _URCU_RSEQ_STATIC_ASSERT(e, m) static_assert(e, m)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define _URCU_RSEQ_STATIC_ASSERT(e, m) _Static_assert(e, m)
#else
#define _URCU_RSEQ_CAT2(a, b) a##b
#define _URCU_RSEQ_CAT(a, b) _URCU_RSEQ_CAT2(a, b)
#define _URCU_RSEQ_STATIC_ASSERT(e, m) \
	typedef char _URCU_RSEQ_CAT(_urcu_rseq_assert_, __LINE__)[(e) ? 1 : -1]
#endif

_URCU_RSEQ_STATIC_ASSERT(offsetof(struct urcu_rseq_abi, cpu_id) == URCU_RSEQ_OFF_CPU_ID, "cpu_id");
_URCU_RSEQ_STATIC_ASSERT(offsetof(struct urcu_rseq_abi, rseq_cs) == URCU_RSEQ_OFF_RSEQ_CS, "rseq_cs");
_URCU_RSEQ_STATIC_ASSERT(offsetof(struct urcu_rseq_abi, node_id) == URCU_RSEQ_OFF_NODE_ID, "node_id");
_URCU_RSEQ_STATIC_ASSERT(offsetof(struct urcu_rseq_abi, mm_cid) == URCU_RSEQ_OFF_MM_CID, "mm_cid");
_URCU_RSEQ_STATIC_ASSERT(sizeof(struct urcu_rseq_abi) == URCU_RSEQ_ORIG_SIZE, "size");

#ifdef __cplusplus
}
#endif

#endif /* _URCU_RSEQ_ABI_H */
