/*
 * cpu.c — the table of CPUs, secondary CPU start, and cross-CPU calls.
 *
 * CPUs are started one at a time, in id order, and ncpus grows only after a
 * CPU is online, so "ids below cpu_count()" always means "running".
 *
 * smp_call_others: one call at a time machine-wide. The caller waits for
 * the call slot with interrupts ON, so a CPU that wants the slot can still
 * answer the IPI of the CPU that holds it; once it holds the slot it masks
 * interrupts (no preemption while others wait on it), sends IPI_CALL to
 * every other CPU and spins until each has run the function. The spin is
 * bounded (call_wait_seconds of arch_cycles): a CPU that never answers
 * (stuck with interrupts masked, an IPI lost) is a panic naming it, not a
 * machine that hangs in silence until the harness's timeout.
 *
 * smp_stop_others uses the same slot: the function the others run parks
 * them (each notes its stack pointer and spins until released), so the
 * caller's function runs while no other CPU moves.
 */
#include "cpu.h"
#include "atomic.h"
#include "console.h"
#include "thread.h"

struct cpu cpus[KERNEL_MAX_CPUS];
static volatile unsigned ncpus = 1;

static volatile unsigned long call_busy;
static void (*volatile call_fn)(void *);
static void *volatile call_arg;
static volatile unsigned long call_pending;
static volatile unsigned char call_answered[KERNEL_MAX_CPUS];

/* Long enough for a vCPU the host did not run for a while (TCG on a loaded
 * machine), short enough to beat the harness's timeouts. Variables, so
 * that tests/test_smp_call.py can shorten the wait and make one CPU deaf
 * to IPI_CALL (call_deaf_cpu = id + 1) through the GDB stub. */
volatile unsigned call_wait_seconds = 10;
volatile unsigned call_deaf_cpu;

unsigned cpu_count(void)
{
	return ncpus;
}

void cpu_init_all(void)
{
	static const char *const rq_names[KERNEL_MAX_CPUS] = {
		"rq0", "rq1", "rq2", "rq3", "rq4", "rq5", "rq6", "rq7",
	};
	for (unsigned i = 0; i < KERNEL_MAX_CPUS; i++) {
		cpus[i].self = &cpus[i];
		cpus[i].id = i;
		cpus[i].rq.lock = (spinlock_t)SPINLOCK_INIT(rq_names[i]);
	}
	cpus[0].online = true;
}

void cpu_start_secondaries(void)
{
	unsigned n = arch_cpu_discover();
	if (n > KERNEL_MAX_CPUS) {
		kprintf("cpu: %u CPUs found, using the first %d\n", n, KERNEL_MAX_CPUS);
		n = KERNEL_MAX_CPUS;
	}
	for (unsigned i = 1; i < n; i++) {
		sched_prepare_cpu(&cpus[i]);
		if (!arch_cpu_start(&cpus[i]))
			panic("cpu%u (hardware id %u) did not come online", i, cpus[i].hw_id);
		ncpus = i + 1;
	}
}

void ipi_interrupt(enum ipi_kind kind)
{
	if (kind == IPI_RESCHEDULE) {
		this_cpu()->need_resched = true;
	} else if (kind == IPI_CALL) {
		if (__builtin_expect(call_deaf_cpu == this_cpu()->id + 1, 0))
			return;
		call_fn(call_arg);
		call_answered[this_cpu()->id] = 1;
		atomic_fetch_add(&call_pending, (unsigned long)-1);
	}
}

/* Under the call slot: arm the per-CPU answers and send IPI_CALL to every
 * CPU but self. */
static void call_send(unsigned self, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		call_answered[i] = i == self;
	call_pending = n - 1;
	arch_barrier();
	for (unsigned i = 0; i < n; i++)
		if (i != self)
			arch_send_ipi(i, IPI_CALL);
}

/* Spin until *count reaches want, or panic naming the CPUs that did not
 * answer once call_wait_seconds have gone by. */
static void call_wait(volatile unsigned long *count, unsigned long want,
		      const char *what, unsigned n)
{
	uint64_t deadline = arch_cycles() + call_wait_seconds * arch_cycles_hz();
	while (*count != want) {
		arch_cpu_relax();
		if (arch_cycles() < deadline)
			continue;
		char late[8 * KERNEL_MAX_CPUS + 1];     /* " cpuNNN" each */
		unsigned at = 0;
		for (unsigned i = 0; i < n; i++)
			if (!call_answered[i])
				at += (unsigned)ksnprintf(late + at, sizeof late - at, " cpu%u", i);
		late[at] = 0;
		panic("%s: no answer in %u s from%s", what, call_wait_seconds,
		      at ? late : " (each took the call; one has not finished it)");
	}
}

void smp_call_others(void (*fn)(void *), void *arg)
{
	while (atomic_cas(&call_busy, 0, 1) != 0)
		arch_cpu_relax();
	irqflags_t f = arch_irq_save();
	unsigned self = this_cpu()->id, n = cpu_count();

	call_fn = fn;
	call_arg = arg;
	call_send(self, n);
	call_wait(&call_pending, 0, "smp_call_others", n);
	call_busy = 0;
	arch_irq_restore(f);
}

static volatile unsigned long stop_parked, stop_release;

static void park(void *unused)
{
	volatile uintptr_t here = 0;
	(void)unused;
	this_cpu()->stopped_sp = (uintptr_t)&here;
	call_answered[this_cpu()->id] = 1;
	atomic_fetch_add(&stop_parked, 1);
	while (!stop_release)
		arch_cpu_relax();
}

void smp_stop_others(void (*fn)(void *), void *arg)
{
	while (atomic_cas(&call_busy, 0, 1) != 0)
		arch_cpu_relax();
	irqflags_t f = arch_irq_save();
	unsigned self = this_cpu()->id, n = cpu_count();

	stop_parked = 0;
	stop_release = 0;
	call_fn = park;
	call_arg = 0;
	call_send(self, n);
	call_wait(&stop_parked, n - 1, "smp_stop_others", n);
	arch_barrier();
	fn(arg);
	arch_barrier();
	stop_release = 1;
	call_wait(&call_pending, 0, "smp_stop_others (release)", n);
	call_busy = 0;
	arch_irq_restore(f);
}
