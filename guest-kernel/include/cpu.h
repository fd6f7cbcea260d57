/*
 * cpu.h — per-CPU state.
 *
 * One struct cpu per processor, indexed by a dense id (0 = the boot CPU).
 * this_cpu() is the arch's fastest way to find it (i386: %fs:0 holds the
 * struct's own address; a single-CPU arch returns &cpus[0]). Fields are
 * written only by their own CPU unless marked otherwise, so reading them
 * needs no lock; counters read from other CPUs are statistics.
 */
#ifndef CPU_H
#define CPU_H

#include <stdbool.h>
#include <stdint.h>
#include "arch.h"
#include "spinlock.h"

struct thread;

struct runqueue {
	spinlock_t     lock;       /* taken by other CPUs too (stealing, wakeups) */
	struct thread *head, *tail;
	unsigned       length;
};

struct cpu {
	struct cpu    *self;       /* first: arch_this_cpu() may load it */
	unsigned       id;         /* dense, 0 = boot CPU */
	unsigned       hw_id;      /* LAPIC id, UPA MID */
	bool           online;
	struct thread *current;
	struct thread *idle;
	struct thread *switched_from;   /* cleared by the thread switched to */
	struct runqueue rq;
	volatile bool  need_resched;    /* set by the tick or by another CPU */
	uint64_t       ticks;           /* timer interrupts taken here */
	uint64_t       slice_end;       /* tick at which current is preempted */
	uint64_t       switches;        /* context switches */
	uint64_t       thread_runs;     /* switches into a non-idle thread */
	void          *arch;            /* arch-private per-CPU data */
	uintptr_t      boot_stack_lo, boot_stack_hi;  /* a secondary's own stack (its idle loop's) */
	volatile uintptr_t stopped_sp;  /* in smp_stop_others: its stack pointer while parked */
	uint64_t       kicks;           /* sched_kick_self interrupts taken here */
};

extern struct cpu cpus[KERNEL_MAX_CPUS];

static inline struct cpu *this_cpu(void)
{
	return arch_this_cpu();
}

/* CPUs online; ids 0..cpu_count()-1 (they come up in id order). */
unsigned cpu_count(void);
/* Fill in cpus[] before anything calls this_cpu(). */
void cpu_init_all(void);
/* Find and start the other CPUs (boot CPU, interrupts on). */
void cpu_start_secondaries(void);
/* Run fn(arg) on every other online CPU, in its IPI handler, and wait until
 * all have returned. The tracer uses it so that every CPU has executed a
 * serialising instruction after code was patched. */
void smp_call_others(void (*fn)(void *), void *arg);
/* Park every other online CPU in its IPI handler (interrupts masked, its
 * stack pointer in cpus[i].stopped_sp, every context it was running saved
 * on a stack above that), run fn(arg) here with interrupts masked, then let
 * them go. fn must not wait for another CPU. The tracer uses it to prove
 * that no thread's saved EIP lies inside code it is about to rewrite. */
void smp_stop_others(void (*fn)(void *), void *arg);

#endif
