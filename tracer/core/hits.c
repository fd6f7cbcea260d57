/*
 * hits.c — each probe's hit count, kept per CPU and summed when read.
 *
 * A firing counts itself in its own CPU's row of tracer_hits (tracer.h):
 * a plain increment, interrupts masked, in a line no other CPU writes, so
 * CPUs firing the same probe do not fight over one cache line as they did
 * over a shared atomic add. A gated probe (program, pass or maximum,
 * gate.c) needs each hit's ordinal across all CPUs for its pass and its
 * maximum, so its firings count in the gate's shared count instead, by an
 * atomic add; a probe's hits are the gate's count plus every CPU's.
 * `probe list`, `watch list`, PROBES frames and the debugger read the sum
 * (the debugger sums the same rows itself, bench/debug/gdbext.py).
 * A hit inside a firing (buffer.c) is also counted in probe_missed.
 * Beside them, each CPU's count of all its firings, tracer_fired: a
 * probe that only counts is counted inline by the arch's trap hook
 * (tracer_fire_count), with no call into the tracer's core. Apart from
 * both, each CPU's late traps (tracer.h's tracer_late): at a probe
 * already disabled, no firing.
 */
#include "tracer.h"
#include "cpu.h"

unsigned long tracer_hits[KERNEL_MAX_CPUS][TRACER_MAX_PROBES]
	__attribute__((aligned(64)));

struct tracer_fired tracer_fired[KERNEL_MAX_CPUS];
volatile unsigned late_broken;

uint64_t tracer_late_count(void)
{
	uint64_t n = 0;
	for (unsigned c = 0; c < cpu_count(); c++)
		n += tracer_fired[c].late;
	return n;
}

/* Hits inside a firing, per probe (rare: one atomic add each). */
static volatile unsigned long probe_missed[TRACER_MAX_PROBES];

void tracer_probe_missed(unsigned id)
{
	__atomic_fetch_add(&probe_missed[id], 1, __ATOMIC_RELAXED);
}

unsigned long tracer_probe_missed_count(unsigned id)
{
	return probe_missed[id];
}

unsigned long tracer_probe_hits_ungated(unsigned id)
{
	unsigned long n = 0;
	for (unsigned c = 0; c < KERNEL_MAX_CPUS; c++)
		n += ((volatile unsigned long *)tracer_hits[c])[id];
	return n;
}

unsigned long tracer_probe_hits(unsigned id)
{
	return probe_gates[id].hits + tracer_probe_hits_ungated(id);
}

void tracer_probe_hits_zero(unsigned id)
{
	for (unsigned c = 0; c < KERNEL_MAX_CPUS; c++)
		((volatile unsigned long *)tracer_hits[c])[id] = 0;
	probe_gates[id].hits = 0;
	probe_missed[id] = 0;
}
