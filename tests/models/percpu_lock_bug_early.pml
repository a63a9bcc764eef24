/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 * The per-CPU spinlock model with a bug: the compare-and-swap path gives
 * its unit of the remote count back as soon as it holds the lock, not at
 * unlock. check-models.sh expects the model checker to fail this one.
 */
#define BUG_DROP_REMOTE_EARLY
#include "percpu_lock.pml"
