// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * urcu/map/urcu-rseq.h - liburcu's generic RCU names mapped onto the
 * urcu-rseq flavor, so that code written against liburcu's API
 * (rcu_read_lock(), synchronize_rcu(), call_rcu(), rcu_flavor ...) builds
 * unchanged against -lurcu-rseq. Included by urcu/urcu-rseq.h; like
 * liburcu's map headers, the names stay mapped after the flavor header
 * unless urcu/map/clear.h is included (URCU_API_MAP unset).
 */
#ifndef _URCU_MAP_URCU_RSEQ_H
#define _URCU_MAP_URCU_RSEQ_H

#define rcu_read_lock			urcu_rseq_read_lock
#define _rcu_read_lock			_urcu_rseq_read_lock
#define rcu_read_unlock			urcu_rseq_read_unlock
#define _rcu_read_unlock		_urcu_rseq_read_unlock
#define rcu_read_ongoing		urcu_rseq_read_ongoing
#define _rcu_read_ongoing		_urcu_rseq_read_ongoing
#define rcu_quiescent_state		urcu_rseq_quiescent_state
#define _rcu_quiescent_state		_urcu_rseq_quiescent_state
#define rcu_thread_offline		urcu_rseq_thread_offline
#define rcu_thread_online		urcu_rseq_thread_online
#define rcu_register_thread		urcu_rseq_register_thread
#define rcu_unregister_thread		urcu_rseq_unregister_thread
#define rcu_init			urcu_rseq_init
#define rcu_exit			urcu_rseq_exit
#define synchronize_rcu			urcu_rseq_synchronize_rcu
#define start_poll_synchronize_rcu	urcu_rseq_start_poll_synchronize_rcu
#define poll_state_synchronize_rcu	urcu_rseq_poll_state_synchronize_rcu
#define rcu_reader			urcu_rseq_reader
#define rcu_gp				urcu_rseq_gp

#define get_cpu_call_rcu_data		urcu_rseq_get_cpu_call_rcu_data
#define get_call_rcu_thread		urcu_rseq_get_call_rcu_thread
#define create_call_rcu_data		urcu_rseq_create_call_rcu_data
#define set_cpu_call_rcu_data		urcu_rseq_set_cpu_call_rcu_data
#define get_default_call_rcu_data	urcu_rseq_get_default_call_rcu_data
#define get_call_rcu_data		urcu_rseq_get_call_rcu_data
#define get_thread_call_rcu_data	urcu_rseq_get_thread_call_rcu_data
#define set_thread_call_rcu_data	urcu_rseq_set_thread_call_rcu_data
#define create_all_cpu_call_rcu_data	urcu_rseq_create_all_cpu_call_rcu_data
#define free_all_cpu_call_rcu_data	urcu_rseq_free_all_cpu_call_rcu_data
#define call_rcu			urcu_rseq_call_rcu
#define call_rcu_data_free		urcu_rseq_call_rcu_data_free
#define call_rcu_before_fork		urcu_rseq_call_rcu_before_fork
#define call_rcu_after_fork_parent	urcu_rseq_call_rcu_after_fork_parent
#define call_rcu_after_fork_child	urcu_rseq_call_rcu_after_fork_child
#define rcu_barrier			urcu_rseq_barrier

#define defer_rcu			urcu_rseq_defer_rcu
#define rcu_defer_register_thread	urcu_rseq_defer_register_thread
#define rcu_defer_unregister_thread	urcu_rseq_defer_unregister_thread
#define rcu_defer_barrier		urcu_rseq_defer_barrier
#define rcu_defer_barrier_thread	urcu_rseq_defer_barrier_thread
#define rcu_defer_exit			urcu_rseq_defer_exit

#define rcu_flavor			urcu_rseq_flavor

#define urcu_register_rculfhash_atfork		\
		urcu_rseq_register_rculfhash_atfork
#define urcu_unregister_rculfhash_atfork	\
		urcu_rseq_unregister_rculfhash_atfork

#endif /* _URCU_MAP_URCU_RSEQ_H */
