/*
 * SPDX-License-Identifier: LGPL-2.1-or-later
 * The wait-stack model with a bug: a timing-out waiter loads its state and
 * stores TIMEDOUT later instead of one compare-and-swap, so a wake-up in
 * between is lost. check-models.sh expects the model checker to fail this
 * one.
 */
#define BUG_TIMEOUT_LOAD_STORE
#include "wait.pml"
