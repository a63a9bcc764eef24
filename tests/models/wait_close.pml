/*
 * SPDX-License-Identifier: LGPL-2.1-or-later
 * The wait-stack model with the queue's lifecycle: 3 waiters that may time
 * out, one closer that wakes them all, destroys and frees the queue. No
 * access to the queue after it was freed.
 */
#define NW	3
#define NK	0
#define CLOSE
#include "wait.pml"
