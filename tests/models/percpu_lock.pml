/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Promela model of the per-CPU spinlock protocol (include/urcu/percpu/
 * lock.h), one shard, sequentially consistent memory: it checks the logic
 * of the protocol (the remote count, the fence, the lock word's three
 * values), not the barriers, which the header argues one by one.
 *
 * Two local threads share the shard's CPU; a rseq critical section is
 * "sec_owner" from its first load to its commit. Another thread starting a
 * section on that CPU (preemption) or an RSEQ fence makes the sec_owner
 * section abort. A remote thread on another CPU announces itself in
 * @remote, fences, then compare-and-swaps. Locals whose fast path fails
 * on a pending request may join the compare-and-swap path; running on the
 * shard's CPU, they do not need the fence (modelled by the same abort).
 *
 * The assertion: never two threads inside the critical section.
 * BUG_UNLOCK_CLEARS_REMOTE (percpu_lock_bug.pml) makes unlock reset the
 * remote count, as a single-word lock with a plain store would.
 * BUG_DROP_REMOTE_EARLY gives the remote unit back as soon as the lock is
 * taken instead of at unlock.
 */
#define ROUNDS	2

byte lock = 0;		/* 0 free, 1 fast path, 2 compare-and-swap */
byte remote = 0;
byte sec_owner = 0;	/* pid of the section in progress on the CPU, 0 none */
byte inside = 0;

#define FENCE	sec_owner = 0

inline cas_path()
{
	remote++;
	FENCE;
	atomic { lock == 0 -> lock = 2 };
#ifdef BUG_DROP_REMOTE_EARLY
	remote--;
#endif
}

inline critical()
{
	inside++;
	assert(inside == 1);
	inside--;
}

inline unlock()
{
	v = lock;
	lock = 0;
#ifdef BUG_UNLOCK_CLEARS_REMOTE
	remote = 0;
#else
#ifndef BUG_DROP_REMOTE_EARLY
	if
	:: v == 2 -> remote--
	:: else -> skip
	fi;
#endif
#endif
}

proctype local_thread()
{
	byte l, r, v, n = 0;

	do
	:: n < ROUNDS ->
retry:
		sec_owner = _pid;		/* starting a section preempts any other */
		l = lock;
		r = remote;
		if
		:: l == 0 && r == 0 ->
			atomic {
				if
				:: sec_owner == _pid -> lock = 1; sec_owner = 0
				:: else -> goto retry	/* aborted */
				fi
			}
		:: l == 0 && r != 0 ->
			if
			:: goto retry		/* remote priority: wait */
			:: cas_path()		/* spin budget spent */
			fi
		:: l != 0 -> goto retry	/* held: back off */
		fi;
		critical();
		unlock();
		n++
	:: n == ROUNDS -> break
	od
}

proctype remote_thread()
{
	byte v, n = 0;

	do
	:: n < ROUNDS ->
		cas_path();
		critical();
		unlock();
		n++
	:: n == ROUNDS -> break
	od
}

init
{
	atomic {
		run local_thread();
		run local_thread();
		run remote_thread();
		run remote_thread()
	}
}
