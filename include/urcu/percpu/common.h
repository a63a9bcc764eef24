// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/percpu/common.h - flags shared by the per-CPU primitives.
 */
#ifndef _URCU_PERCPU_COMMON_H
#define _URCU_PERCPU_COMMON_H

/* Index shards by concurrency id (mm_cid) instead of CPU number. */
#define URCU_PERCPU_MM_CID	(1U << 0)

#endif /* _URCU_PERCPU_COMMON_H */
