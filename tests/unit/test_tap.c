// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The test harness itself: the TAP producer's counting, plan checks and
 * thread safety, and the stress harness's storm, migrations and pinning.
 * Every other test trusts these, so they are checked before any primitive.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <urcu/uatomic.h>

#include "tap.h"
#include "stress.h"

#define OK_THREADS	4
#define OK_PER_THREAD	5

/* Run this program again as a child TAP producer; return its output. */
static int run_child(const char *mode, char *out, size_t len, int *status)
{
	char self[PATH_MAX];
	int fd[2];
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	/*
	 * Exec the path /proc/self/exe names, not the link itself: under
	 * valgrind the link is the tool's own binary, while readlink() is
	 * answered with the program's path.
	 */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return -1;
	self[n] = '\0';
	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		close(fd[0]);
		close(fd[1]);
		execl(self, "test_tap", mode, (char *) NULL);
		_exit(127);
	}
	close(fd[1]);
	while (got + 1 < len && (n = read(fd[0], out + got, len - 1 - got)) > 0)
		got += (size_t) n;
	out[got] = '\0';
	close(fd[0]);
	if (pid < 0 || waitpid(pid, status, 0) != pid)
		return -1;
	return 0;
}

static int child(const char *mode)
{
	if (!strcmp(mode, "--fail")) {
		plan_tests(3);
		ok(1, "passes");
		ok(0, "fails");
		return exit_status();	/* 2 of 3 ran: plan mismatch */
	}
	if (!strcmp(mode, "--no-plan")) {
		plan_no_plan();
		ok1(1 + 1 == 2);
		skip(2, "two skipped");
		return exit_status();
	}
	if (!strcmp(mode, "--skip-all"))
		skip_all("nothing to do %d", 42);
	return 99;
}

static void test_tap_children(void)
{
	char out[4096];
	int status = 0;

	ok(run_child("--fail", out, sizeof(out), &status) == 0
		&& strstr(out, "1..3\n") && strstr(out, "ok 1 - passes\n")
		&& strstr(out, "not ok 2 - fails\n")
		&& strstr(out, "planned 3 tests but ran 2"),
		"a failure and a short plan are reported");
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 255,
		"exit_status() is 255 on a plan mismatch (%d)",
		WEXITSTATUS(status));
	ok(run_child("--no-plan", out, sizeof(out), &status) == 0
		&& strstr(out, "ok 1 - 1 + 1 == 2\n")
		&& strstr(out, "ok 3 # SKIP two skipped\n")
		&& strstr(out, "\n1..3\n") && WIFEXITED(status)
		&& WEXITSTATUS(status) == 0,
		"no plan: trailing 1..3, ok1 text, skips count as passes");
	ok(run_child("--skip-all", out, sizeof(out), &status) == 0
		&& !strcmp(out, "1..0 # SKIP nothing to do 42\n")
		&& WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"skip_all prints one line and exits 0");
}

static void *ok_thread(void *arg)
{
	int i;

	(void) arg;
	for (i = 0; i < OK_PER_THREAD; i++)
		ok(1, "from a thread");
	return NULL;
}

static void test_tap_threads(void)
{
	pthread_t tid[OK_THREADS];
	unsigned int before = tap_tests_run();
	int i;

	for (i = 0; i < OK_THREADS; i++)
		pthread_create(&tid[i], NULL, ok_thread, NULL);
	for (i = 0; i < OK_THREADS; i++)
		pthread_join(tid[i], NULL);
	ok(tap_tests_run() - before == OK_THREADS * OK_PER_THREAD,
		"ok() from %d threads counts every result", OK_THREADS);
}

static void test_helpers(void)
{
	uint64_t s = stress_seed(1), a = stress_xorshift(&s),
		b = stress_xorshift(&s);
	int cpu, i, good = 0, n = stress_nr_cpus();
	const char *env = getenv("URCU_RSEQ_STRESS_MS");

	ok(a != b && s != 0, "xorshift moves and never reaches 0");
	ok(n >= 1, "%d CPUs allowed at start", n);
	if (env && *env)
		ok(stress_duration_ms() == strtoul(env, NULL, 10),
			"URCU_RSEQ_STRESS_MS=%s is obeyed", env);
	else
		ok(stress_duration_ms() == 300, "default stress duration");
	for (i = 0; i < n; i++) {
		cpu = stress_cpu_at(i);
		if (pin_self(cpu) == 0 && sched_getcpu() == cpu)
			good++;
	}
	ok(good == n, "pin_self() moves the thread to each CPU (%d/%d)",
		good, n);
	ok(stress_unpin_self() == 0, "unpin");
	ok(pin_self(-1) == EINVAL, "pin_self(-1) is EINVAL");
}

struct watch {
	unsigned long cpu_changes;
	unsigned long loops;
	unsigned int started;
};

/* Watch our own CPU number and count changes. */
static void watch_worker(struct stress_thread *t)
{
	struct watch *w = t->arg;
	unsigned long changes = 0, loops = 0;
	int last = sched_getcpu(), cpu;

	uatomic_inc(&w->started);
	while (!stress_should_stop(t)) {
		cpu = sched_getcpu();
		if (cpu != last)
			changes++;
		last = cpu;
		loops++;
		if (stress_rand_below(t, 1024) == 0)
			sched_yield();
	}
	uatomic_add(&w->cpu_changes, changes);
	uatomic_add(&w->loops, loops);
}

/*
 * A run may end before a re-pinned worker has run again, or re-pin a
 * worker to the CPU it was on (a slow emulated VM managed 2 migrations in
 * a whole run once, and no worker saw a change), and on a starved host the
 * storm may not get a CPU within one run: run again, up to STORM_RUNS
 * times, until a signal was delivered and a worker has seen its CPU change.
 */
#define STORM_RUNS	5

static void test_storm(void)
{
	struct watch w = { 0 };
	struct stress_report rep;
	unsigned long before = stress_signals_total(), migrations = 0;
	unsigned long signals = 0;
	int ncpu = stress_nr_cpus(), runs = 0;

	do {
		stress_run(watch_worker, &w, 2 * (unsigned int) ncpu + 1,
			STRESS_SIGNALS | STRESS_MIGRATIONS, &rep);
		migrations += rep.migrations;
		signals += rep.signals;
		if (!runs++)
			ok(w.started == rep.threads
				&& rep.threads == 2 * (unsigned int) ncpu + 1,
				"every worker ran (%u)", w.started);
	} while ((!signals || (ncpu >= 2 && !w.cpu_changes))
			&& runs < STORM_RUNS);
	ok(signals > 0, "the storm delivered signals (%lu)", signals);
	ok(stress_signals_total() - before >= signals,
		"the process-wide count covers the runs'");
	diag("watch: %lu loops, %lu CPU changes seen by workers in %d run(s)",
		w.loops, w.cpu_changes, runs);
	if (ncpu < 2) {
		skip(2, "one CPU: nowhere to migrate to");
		return;
	}
	ok(migrations > 0, "the migrator re-pinned workers (%lu)", migrations);
	ok(w.cpu_changes > 0, "workers saw their CPU change (%lu)",
		w.cpu_changes);
}

static void quiet_worker(struct stress_thread *t)
{
	while (!stress_should_stop(t))
		caa_cpu_relax();
}

static void test_start_stop(void)
{
	struct stress_group *g;
	struct stress_report rep;

	g = stress_start(quiet_worker, NULL, 3, STRESS_PIN);
	usleep(20000);
	stress_stop(g, &rep);
	ok(rep.threads == 3 && rep.signals == 0 && rep.migrations == 0,
		"without storm or migrator nothing is counted");
	/*
	 * The run ended and was measured: no upper bound, a starved host
	 * once took 20 s for these 20 ms.
	 */
	ok(rep.elapsed_ms >= 20, "start/stop measures its run (at least "
		"the 20 ms it slept)");
	diag("start/stop: a 20 ms run measured %lu ms", rep.elapsed_ms);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return child(argv[1]);
	plan_no_plan();
	test_tap_children();
	test_tap_threads();
	test_helpers();
	test_storm();
	test_start_stop();
	return exit_status();
}
