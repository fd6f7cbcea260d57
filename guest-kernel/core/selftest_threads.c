/*
 * selftest_threads.c — threads, locks and the scheduler, on every arch.
 *
 * Each test knows its exact expected outcome: K threads x M increments end
 * at K*M; a thread that never yields still lets another run; a sleep of N
 * ticks lasts N ticks; joined threads give back every page; and with
 * several CPUs, every CPU ran some of the work and answers a cross-CPU
 * call.
 */
#include "atomic.h"
#include "cpu.h"
#include "pages.h"
#include "selftest.h"
#include "thread.h"
#include "timer.h"

#define ITERS 20000

static spinlock_t counter_lock = SPINLOCK_INIT("selftest counter");
static volatile unsigned long locked_counter, atomic_counter;

static void locked_adder(void *arg)
{
	(void)arg;
	for (int i = 0; i < ITERS; i++) {
		irqflags_t f = spin_lock_irqsave(&counter_lock);
		unsigned long v = locked_counter;     /* a wide read-modify-write */
		arch_cpu_relax();
		locked_counter = v + 1;
		spin_unlock_irqrestore(&counter_lock, f);
	}
}

static void atomic_adder(void *arg)
{
	(void)arg;
	for (int i = 0; i < ITERS; i++)
		atomic_fetch_add(&atomic_counter, 1);
}

static unsigned run_threads(void (*fn)(void *), unsigned n, const char *name)
{
	return thread_run_all(name, n, fn, 0, 0, THREAD_ANY_CPU);
}

static void test_counters(void)
{
	unsigned k = 2 * cpu_count() + 1;

	locked_counter = 0;
	unsigned made = run_threads(locked_adder, k, "locked");
	report(made == k && locked_counter == (unsigned long)k * ITERS,
	       "%u threads x %d spinlocked increments = %lu (expected %lu)",
	       made, ITERS, locked_counter, (unsigned long)k * ITERS);

	atomic_counter = 0;
	made = run_threads(atomic_adder, k, "atomic");
	report(made == k && atomic_counter == (unsigned long)k * ITERS,
	       "%u threads x %d atomic increments = %lu (expected %lu)",
	       made, ITERS, atomic_counter, (unsigned long)k * ITERS);
}

static volatile int spinner_stop;
static volatile int spinner_started;

static void spinner(void *arg)
{
	uint64_t limit = arch_cycles() + arch_cycles_hz() * 3;   /* 3 s at most */
	(void)arg;
	spinner_started = 1;
	while (!spinner_stop && arch_cycles() < limit)
		;                                  /* never yields */
}

static void test_preemption(void)
{
	/* Same CPU as this thread, so only preemption lets us run again. */
	spinner_stop = spinner_started = 0;
	struct thread *t = thread_create("spinner", spinner, 0, this_cpu()->id);
	if (!report(t != 0, "spinner created"))
		return;
	while (!spinner_started)
		thread_yield();
	thread_sleep(3);
	bool preempted = !spinner_stop;        /* we ran while it spun */
	spinner_stop = 1;
	thread_join(t);
	report(preempted, "a thread that never yields is preempted");
}

static void test_sleep(void)
{
	uint64_t t0 = timer_ticks();
	thread_sleep(10);
	uint64_t slept = timer_ticks() - t0;
	report(slept >= 10 && slept <= 15, "sleep 10 ticks took %llu ticks",
	       (unsigned long long)slept);
}

static void test_join_frees(void)
{
	size_t before = pages_free_count();
	run_threads(atomic_adder, 20, "join");
	report(pages_free_count() == before, "20 joined threads give back every page "
	       "(%zu free before, %zu after)", before, pages_free_count());
}

/* Where a worker ran, and until when the workers wait for a CPU that has
 * run none yet: a vCPU the host wakes late (a loaded host: 100 ms and
 * more) would otherwise find every worker stolen by the CPUs that were
 * awake, and the test would be about the host, not the scheduler. */
static volatile unsigned char worker_ran[KERNEL_MAX_CPUS];
static uint64_t workers_wait_until;

static bool every_cpu_ran_a_worker(void)
{
	for (unsigned i = 0; i < cpu_count(); i++)
		if (!worker_ran[i])
			return false;
	return true;
}

static void worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 50 || (!every_cpu_ran_a_worker() &&
				   arch_cycles() < workers_wait_until); i++) {
		worker_ran[this_cpu()->id] = 1;
		uint64_t until = arch_cycles() + arch_cycles_hz() / 2000;  /* 0.5 ms */
		while (arch_cycles() < until)
			;
		thread_yield();
	}
}

static void test_every_cpu_runs(void)
{
	unsigned n = cpu_count();
	uint64_t before[KERNEL_MAX_CPUS];
	for (unsigned i = 0; i < n; i++) {
		before[i] = cpus[i].thread_runs;
		worker_ran[i] = 0;
	}
	workers_wait_until = arch_cycles() + 10 * arch_cycles_hz();
	run_threads(worker, 4 * n, "worker");
	for (unsigned i = 0; i < n; i++) {
		uint64_t runs = cpus[i].thread_runs - before[i];
		report_info("cpu%u ran threads %llu times", i, (unsigned long long)runs);
	}
	report(every_cpu_ran_a_worker(), "every one of %u CPUs ran threads", n);
}

static volatile unsigned long called_on[KERNEL_MAX_CPUS];

static void mark_called(void *arg)
{
	called_on[this_cpu()->id] += (unsigned long)arg;
}

static void test_cross_cpu_call(void)
{
	unsigned n = cpu_count(), self = this_cpu()->id;
	for (unsigned i = 0; i < n; i++)
		called_on[i] = 0;
	for (int round = 0; round < 10; round++)
		smp_call_others(mark_called, (void *)1);
	bool all = true;
	for (unsigned i = 0; i < n; i++)
		all = all && called_on[i] == (i == self ? 0u : 10u);
	report(all, "smp_call_others: 10 calls reached each of the other %u CPUs "
	       "exactly once each, and not the caller", n - 1);
}

SELFTEST(200, "threads", test_counters);
SELFTEST(210, "threads", test_preemption);
SELFTEST(220, "threads", test_sleep);
SELFTEST(230, "threads", test_join_frees);
SELFTEST(240, "threads", test_every_cpu_runs);
SELFTEST(250, "threads", test_cross_cpu_call);
