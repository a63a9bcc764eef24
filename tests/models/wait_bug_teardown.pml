/*
 * SPDX-License-Identifier: LGPL-2.1-or-later
 * The wait-stack model with a bug: a woken waiter returns without waiting
 * for TEARDOWN, while its waker may still do the futex wake on the node.
 * check-models.sh expects the model checker to fail this one.
 */
#define BUG_RETURN_BEFORE_TEARDOWN
#include "wait.pml"
