/*
 * sample.h — a sampling timer beside the scheduler's tick, for profiling
 * (DTrace's profile-N and tick-N; the tracer's sample.c is its client).
 *
 * arch_sample_set(hz, every_cpu) makes each CPU (or the boot CPU alone)
 * interrupt hz times a second on a timer of its own — sun4u's %stick
 * compare, i386's LAPIC timer shared with the tick by deadlines — while
 * the scheduler's tick keeps its rate; hz 0 stops it. Each sample calls
 * sample_hook (set once at init) in the interrupt, interrupts masked,
 * with the interrupted trap frame and how late the interrupt came after
 * its deadline, in cycles of arch_cycles(). A kernel with no client runs
 * no sampling timer.
 */
#ifndef SAMPLE_H
#define SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

struct trapframe;
typedef void (*sample_hook_fn)(const struct trapframe *tf, uint64_t late_cycles);

extern sample_hook_fn sample_hook;

/* Start (hz > 0) or stop (hz 0) sampling; false, nothing changed, if the
 * arch cannot sample at hz. Thread context. */
bool arch_sample_set(unsigned hz, bool every_cpu);
extern const unsigned arch_sample_hz_max;

#endif
