/*
 * SPDX-License-Identifier: LGPL-2.1-or-later
 * The wait-stack lifecycle model with a bug: "empty" looks at the head
 * alone, so a waiter that unlinked its own node (the head) after its
 * deadline still holds the queue lock when the closer frees the queue.
 * check-models.sh expects the model checker to fail this one.
 */
#define NW	2
#define NK	0
#define CLOSE
#define BUG_EMPTY_IGNORES_LOCK
#include "wait.pml"
