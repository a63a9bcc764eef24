// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pointer functions of <urcu/pointer.h> for code built without
 * _LGPL_SOURCE: rcu_dereference(), rcu_set_pointer(), rcu_xchg_pointer()
 * and rcu_cmpxchg_pointer() call these. Every liburcu flavor library
 * exports them; so does this one, so that such code links with
 * -lurcu-rseq -lurcu-common and loads no other flavor. Each one is the
 * inline version of <urcu/static/pointer.h>, with its ordering.
 *
 * liburcu 0.15.7 (Debian sid) made rcu_dereference() call
 * rcu_dereference_sym2() with the pointer's address, so that the consume
 * load happens on the shared location; rcu_dereference_sym() stays for
 * code built against older headers. Both are exported whatever liburcu
 * this library is built against, so that its ABI does not depend on it.
 */
#include <urcu/static/pointer.h>
#include <urcu/rseq.h>

URCU_RSEQ_API void *rcu_dereference_sym(void *p);
URCU_RSEQ_API void *rcu_dereference_sym2(void **p);
URCU_RSEQ_API void *rcu_set_pointer_sym(void **p, void *v);
URCU_RSEQ_API void *rcu_xchg_pointer_sym(void **p, void *v);
URCU_RSEQ_API void *rcu_cmpxchg_pointer_sym(void **p, void *old,
		void *_new);

void *rcu_dereference_sym(void *p)
{
	return _rcu_dereference(p);
}

void *rcu_dereference_sym2(void **p)
{
	return _rcu_dereference(*p);
}

void *rcu_set_pointer_sym(void **p, void *v)
{
	_rcu_set_pointer(p, v);
	return v;
}

void *rcu_xchg_pointer_sym(void **p, void *v)
{
	return _rcu_xchg_pointer(p, v);
}

void *rcu_cmpxchg_pointer_sym(void **p, void *old, void *_new)
{
	return _rcu_cmpxchg_pointer(p, old, _new);
}
