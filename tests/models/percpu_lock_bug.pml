/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 * The per-CPU spinlock model with a bug: the local unlock clears the
 * remote word. check-models.sh expects the model checker to fail this one.
 */
#define BUG_UNLOCK_CLEARS_REMOTE
#include "percpu_lock.pml"
