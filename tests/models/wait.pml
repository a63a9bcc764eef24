/*
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * tests/models/wait.pml - a spin model of the wait-stack handshake
 * (include/urcu/wait.h): waiters that may time out, wakers that pop one node
 * at a time (urcu_wait_wake_one, or the node below the newest as a busy
 * machine's condition signal does) and skip timed-out nodes, the queue lock
 * that poppers and unlinkers share, and the TEARDOWN handshake.
 *
 * Checked: no waker touches a node after its waiter returned (assertions
 * at every waker access to the node's memory; the futex wake that follows
 * the waking CAS of a sleeping waiter names the address only and touches
 * no memory, so it may come after the return: the woken waiter does not
 * wait for it); every successful wake_one woke exactly one waiter
 * and no timed-out waiter counts as woken (assertion at the end); nobody
 * blocks forever (no invalid end state).
 *
 *	spin -a wait.pml && gcc -O2 -o pan pan.c && ./pan
 *
 * make check-models (check-models.sh) runs it bounded to 2 waiters and 2
 * wakers (wait.pml, about 250,000 states) and 3 waiters and 1 waker
 * (wait_3w1k.pml, 1.6 million): the unbounded default below, 3 and 2, is
 * 32 million states and 2 minutes (MODELS_FULL=1 adds it).
 *
 * Mutants (check-models.sh must see each fail):
 * BUG_RETURN_BEFORE_TEARDOWN (wait_bug_teardown.pml): a waiter returns
 * without waiting for the TEARDOWN of the waker that holds its node: a
 * timed-out waiter whose node a waker already popped returns while that
 * waker is still to store TIMEDOUT|TEARDOWN into the node's gone frame.
 * BUG_TIMEOUT_LOAD_STORE (wait_bug_timeout.pml): the timeout is decided by a
 * load and a later store instead of one compare-and-swap, so a wake that
 * lands in between is overwritten and lost.
 * BUG_SECOND_DROPS_NEWEST (wait_bug_second.pml): taking the node below the
 * newest also drops the newest from the stack: its waiter is never woken
 * and, timing out, waits for a waker that does not hold its node.
 *
 * CLOSE (wait_close.pml): the lifecycle of the queue itself. Once every
 * waiter has pushed, one closer wakes them all (wake_one until the queue
 * is empty, with the unlocked empty check of the fast path: the head, then
 * the lock), then destroys the queue as urcu_cond_destroy() does (head
 * empty, then wait for the lock to be free) and frees it. Checked: nobody
 * touches the queue (push, lock, unlink, unlock) after it was freed.
 * BUG_EMPTY_IGNORES_LOCK (wait_bug_close.pml): "empty" looks at the head
 * alone, as the code once did: a waiter that timed out and unlinked its
 * own node, the head, still holds the lock, and its unlock lands in the
 * freed queue.
 *
 * Adds and pops are atomic here (the wfstack's "next not yet written"
 * window is covered by its own blocking traversal), and a sleeping waiter
 * only sees WAKEUP (spurious futex returns re-check the state).
 */
#ifndef NW
#define NW	2	/* waiters */
#endif
#ifndef NK
#define NK	2	/* wakers */
#endif

#define WAITING		0
#define SLEEPING	1
#define WAKEUP		2
#define TIMEDOUT	4
#define TEARDOWN	8
#define LEFT		16	/* a timed-out waiter is done with the queue */

byte state[NW];
bool returned[NW];
byte stk[NW];
byte top;
bool qlock;
byte wakes;	/* wake_one calls that woke someone */
byte woke;	/* waiters that returned 0 */
byte done;
byte pushed;
bool freed;	/* CLOSE: the queue's memory was freed */

inline lock()
{
	atomic { assert(!freed); qlock == 0 -> qlock = 1 }
}

inline unlock()
{
	atomic { assert(!freed); qlock = 0 }
}

proctype Waiter(byte n)
{
	byte s, i, j;
	bool found;

	atomic { assert(!freed); stk[top] = n; top++; pushed++ }
	/* The spin may end by announcing the sleep (or not, if woken). */
	if
	:: atomic { state[n] == WAITING -> state[n] = SLEEPING }
	:: skip
	fi;
	if
	:: (state[n] & WAKEUP) -> goto woken
	:: true ->	/* the deadline passed: one CAS decides */
#ifdef BUG_TIMEOUT_LOAD_STORE
		s = state[n];
		if
		:: (s == WAITING || s == SLEEPING) -> state[n] = TIMEDOUT
		:: else -> skip
		fi;
#else
		atomic {
			s = state[n];
			if
			:: (s == WAITING || s == SLEEPING) -> state[n] = TIMEDOUT
			:: else -> skip
			fi
		}
#endif
		if
		:: (s == WAITING || s == SLEEPING) ->
			lock();
			found = false;
			i = 0;
			do
			:: i < top && stk[i] != n -> i++
			:: i < top && stk[i] == n ->
				/*
				 * One atomic step, as the CAS on the head
				 * (retried if a push moved it) or the store
				 * to the predecessor's next.
				 */
				atomic {
					assert(!freed);
					found = true;
					j = i;
					do
					:: j + 1 < top -> stk[j] = stk[j + 1]; j++
					:: else -> break
					od;
					top--
				}
				break
			:: i >= top -> break
			od;
			unlock();
#ifndef BUG_RETURN_BEFORE_TEARDOWN
			if
			:: !found ->	/* a waker holds it: tell it we left */
				state[n] = TIMEDOUT | LEFT;
				(state[n] & TEARDOWN)
			:: else -> skip
			fi;
#endif
			returned[n] = true;
			goto out
		:: else -> goto woken	/* a waker won the CAS */
		fi
	fi;
woken:
#ifndef BUG_RETURN_BEFORE_TEARDOWN
	(state[n] & TEARDOWN);
#endif
	returned[n] = true;
	woke++;
out:
	done++
}

proctype Waker()
{
	byte n, s;

again:
	lock();
	if
	:: top == 0 -> unlock(); goto out
	:: top > 0 -> atomic { top--; n = stk[top] }; unlock()	/* CAS on the head */
	:: top >= 2 ->
		/*
		 * A condition's signal on a busy machine takes the node below
		 * the newest: one store to the newest node's next.
		 */
#ifdef BUG_SECOND_DROPS_NEWEST
		atomic { n = stk[top - 2]; top = top - 2 };
#else
		atomic { n = stk[top - 2]; stk[top - 2] = stk[top - 1]; top-- };
#endif
		unlock()
	fi;
	atomic {
		assert(!returned[n]);
		s = state[n];
		if
		:: (s == WAITING || s == SLEEPING) -> state[n] = WAKEUP | TEARDOWN
		:: else -> skip
		fi
	}
	if
	:: s == WAITING -> wakes++
	:: s == SLEEPING ->
		skip;	/* futex wake: the address only, no memory access */
		wakes++
	:: (s & TIMEDOUT) ->	/* LEFT may already be set */
#ifndef BUG_RETURN_BEFORE_TEARDOWN
		(state[n] & LEFT);	/* it no longer takes the queue lock */
#endif
		atomic {
			assert(!returned[n]);
			state[n] = TIMEDOUT | LEFT | TEARDOWN
		}
		goto again	/* wake another one instead */
	fi;
out:
	done++
}

#ifdef CLOSE
/*
 * wake_one until it finds nobody, then destroy and free. Every waiter has
 * pushed before: as under a condition's mutex, nobody adds after the close.
 */
proctype Closer()
{
	byte n, s, h, l;

	pushed == NW;
again:
	/* The fast path: head, then lock, no lock taken. */
	h = top;
	if
	:: h == 0 ->
#ifdef BUG_EMPTY_IGNORES_LOCK
		goto destroy
#else
		l = qlock;
		if
		:: l == 0 -> goto destroy
		:: else -> skip
		fi
#endif
	:: else -> skip
	fi;
	lock();
	if
	:: top == 0 -> unlock(); goto destroy
	:: else -> atomic { top--; n = stk[top] }; unlock()
	fi;
	atomic {
		assert(!returned[n]);
		s = state[n];
		if
		:: (s == WAITING || s == SLEEPING) -> state[n] = WAKEUP | TEARDOWN
		:: else -> skip
		fi
	}
	if
	:: s == WAITING || s == SLEEPING -> wakes++
	:: (s & TIMEDOUT) ->	/* LEFT may already be set */
		(state[n] & LEFT);
		atomic {
			assert(!returned[n]);
			state[n] = TIMEDOUT | LEFT | TEARDOWN
		}
	fi;
	goto again;
destroy:
	/* urcu_wait_queue_quiesce(): no node, then the lock free. */
	h = top;
	assert(h == 0);
#ifndef BUG_EMPTY_IGNORES_LOCK
	(qlock == 0);
#endif
	freed = true;
	done++
}
#endif

init
{
	byte i;

	atomic {
		for (i : 0 .. NW - 1) {
			run Waiter(i)
		}
		for (i : 0 .. NK - 1) {
			run Waker()
		}
#ifdef CLOSE
		run Closer()
#endif
	}
#ifdef CLOSE
	done == NW + NK + 1;
	assert(freed);
#else
	done == NW + NK;
#endif
	assert(wakes == woke);
	assert(top == 0)
}
