/*
 * SPDX-License-Identifier: LGPL-2.1-or-later
 * The wait-stack model with a bug: a waiter returns without waiting for
 * TEARDOWN, while the waker that popped its timed-out node may still store
 * into it.
 * check-models.sh expects the model checker to fail this one.
 */
#define BUG_RETURN_BEFORE_TEARDOWN
#include "wait.pml"
