/*
 * SPDX-License-Identifier: LGPL-2.1-or-later
 * The wait-stack model with a bug: a signal that takes the node below the
 * newest drops the newest from the stack as well. Its waiter, once its
 * deadline passes, finds no node to unlink, takes it that a waker holds
 * it, and waits for a TEARDOWN that never comes. check-models.sh expects
 * the model checker to fail this one.
 */
#define BUG_SECOND_DROPS_NEWEST
#include "wait.pml"
