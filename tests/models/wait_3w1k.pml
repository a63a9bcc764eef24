/*
 * SPDX-License-Identifier: LGPL-2.1-or-later
 * The wait-stack model with 3 waiters and 1 waker (wait.pml checks 2 and
 * 2): more timed-out nodes for the single waker to skip.
 */
#define NW	3
#define NK	1
#include "wait.pml"
