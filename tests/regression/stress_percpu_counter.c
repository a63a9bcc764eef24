// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU counter stress: 64 adder threads on however few CPUs the machine
 * has, a timer signal storm, workers re-pinned to random CPUs while they
 * count, and one reader calling read_reset in a loop. Each adder counts its
 * own adds in a local variable; at the end the sum of every read_reset plus
 * a final read must equal the sum of those locals exactly.
 *
 * Phases: CPU-indexed, mm_cid-indexed, half of the adders on the fallback
 * path of threads without rseq (the path URCU_RSEQ_DISABLE=1 gives every
 * thread; stress_percpu_counter_norseq.sh runs this whole program so), and
 * the all-atomic mode of a counter created without the RSEQ fence (forced
 * through the counter's mode field, a test hook). Each phase runs
 * stress_duration_ms() (URCU_RSEQ_STRESS_MS; `make regtest` sets 10 s).
 * Adders also add from inside the signal handler's reach: values 0..7,
 * sometimes negative, so a lost or doubled add of any size shows.
 */
#include <stdint.h>
#include <stdlib.h>
#include <urcu/uatomic.h>
#include <urcu/percpu/counter.h>

#include "tap.h"
#include "stress.h"

#define NR_ADDERS	64

enum phase { PH_CPU, PH_MM_CID, PH_FALLBACK, PH_ATOMIC, NR_PHASES };
static const char *phase_name[NR_PHASES] = {
	"cpu", "mm_cid", "half fallback slot", "all-atomic"
};

struct run {
	struct urcu_percpu_counter *c;
	enum phase phase;
	intptr_t added;
	intptr_t reset_sum;
	unsigned long resets, adds;
};

static void worker(struct stress_thread *t)
{
	struct run *r = (struct run *) t->arg;
	intptr_t mine = 0;
	unsigned long n = 0;

	if (t->id == 0) {
		intptr_t sum = 0;

		while (!stress_should_stop(t)) {
			sum += urcu_percpu_counter_read_reset(r->c);
			n++;
		}
		r->reset_sum = sum;
		r->resets = n;
		return;
	}
	while (!stress_should_stop(t)) {
		intptr_t v = (intptr_t) stress_rand_below(t, 8);

		if ((n & 15) == 0)
			v = -v;
		if (r->phase == PH_FALLBACK && (t->id & 1))
			urcu_percpu_counter_add_slow(r->c, v);
		else
			urcu_percpu_counter_add(r->c, v);
		mine += v;
		n++;
	}
	uatomic_add(&r->added, mine);
	uatomic_add(&r->adds, n);
}

int main(void)
{
	int p;

	plan_tests(NR_PHASES);
	diag("rseq %s, fence %s, %d CPUs, %lu ms per phase",
		urcu_rseq_available() ? "available" : "unavailable",
		urcu_rseq_fence_available() ? "available" : "unavailable",
		stress_nr_cpus(), stress_duration_ms());
	for (p = 0; p < NR_PHASES; p++) {
		struct run r = { NULL, (enum phase) p, 0, 0, 0, 0 };
		struct stress_report rep;
		intptr_t total;

		r.c = urcu_percpu_counter_create(p == PH_MM_CID ?
				URCU_PERCPU_MM_CID : 0);
		if (!r.c)
			bail_out("urcu_percpu_counter_create failed");
		if (p == PH_ATOMIC)
			r.c->mode = URCU_PERCPU_COUNTER_ATOMIC;
		stress_run(worker, &r, NR_ADDERS + 1,
				STRESS_SIGNALS | STRESS_MIGRATIONS | STRESS_QUIET,
				&rep);
		total = r.reset_sum + urcu_percpu_counter_read(r.c);
		ok(total == r.added && r.resets > 0,
			"%s: %lu adds summing to %ld, counted %ld over %lu read_resets "
			"(%lu signals, %lu migrations)",
			phase_name[p], r.adds, (long) r.added, (long) total,
			r.resets, rep.signals, rep.migrations);
		urcu_percpu_counter_destroy(r.c);
	}
	return exit_status();
}
