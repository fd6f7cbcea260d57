/*
 * thread.h — preemptive kernel threads.
 *
 * Threads are created runnable on the least-loaded online CPU, preempted by
 * the timer when their slice ends, and may move between CPUs when an idle
 * CPU steals work. A thread that exits stays a zombie until thread_join
 * reaps it (and frees its stack). All of these may be called from any
 * thread; none may be called from an interrupt handler except
 * sched_wake().
 *
 * Each thread also carries THREAD_SLOTS words for the kernel's clients,
 * which the kernel never looks into: a client claims a slot at init
 * (thread_slot_claim) and keeps its index; every thread then has its own
 * word in that slot, 0 when the thread is created, read and written by
 * the client's code running on that thread (its trap paths included).
 */
#ifndef THREAD_H
#define THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch.h"

struct cpu;

#define THREAD_SLOTS 4

enum thread_state {
	THREAD_RUNNABLE,    /* on a run queue, or running */
	THREAD_SLEEPING,    /* on the sleep list until wake_tick */
	THREAD_BLOCKED,     /* waiting for a join */
	THREAD_ZOMBIE,      /* exited, waiting to be joined */
};

struct thread {
	struct arch_context ctx;        /* saved registers while not running */
	unsigned        id;
	char            name[16];
	volatile enum thread_state state;
	volatile int    on_cpu;         /* its stack is in use: don't run it elsewhere */
	bool            pinned;         /* runs only on cpu */
	bool            prompt;         /* woken, it runs next (thread_set_prompt) */
	unsigned        cpu;            /* CPU it last ran on */
	struct thread  *next;           /* run queue or sleep list link */
	void           *stack;
	size_t          stack_size;
	void          (*fn)(void *);
	void           *arg;
	uint64_t        wake_tick;
	uint64_t        wake_cpu_tick;  /* a prompt pinned thread: its CPU's tick */
	struct thread  *joiner;
	void           *try_ctx;        /* trap_try state (core/trap.c) */
	uintptr_t       slot[THREAD_SLOTS];   /* the clients' words (above) */
	uint64_t        switches_in;
	bool            started;        /* has run: switched to, or a CPU's first */
};

#define THREAD_STACK_SIZE 16384

/* A prompt thread, when woken, goes to the head of its CPU's queue and
 * preempts what runs there: for a thread that sleeps most of the time and
 * must then run at once (the trace drain), taking a CPU only as long as
 * it has work. A prompt thread pinned to a CPU sleeps in that CPU's own
 * ticks and is woken by them, not by the boot CPU's clock: a host that
 * deschedules the boot CPU's vCPU does not hold it asleep. */
void thread_set_prompt(struct thread *t, bool prompt);

/* Wake this CPU's sleeping prompt threads now rather than at its next
 * tick: for a producer whose consumer must not wait for the tick (the
 * trace drain when its CPU's buffer passes half full; ticks come late
 * when QEMU's main loop waits for its lock). Lock-free and NOTRACE, so a
 * trap handler with interrupts masked may call it: it raises an
 * interrupt on this CPU (arch_self_interrupt), which does the waking and
 * the switch once interrupts are enabled again. */
void sched_kick_self(void);

/* NULL if out of memory. cpu = THREAD_ANY_CPU lets the scheduler place it. */
#define THREAD_ANY_CPU (~0u)
struct thread *thread_create(const char *name, void (*fn)(void *), void *arg,
			     unsigned cpu);
_Noreturn void thread_exit(void);

/* Run fn(args + i * stride) for i < n in n threads (on cpu, placed by the
 * scheduler with THREAD_ANY_CPU, or thread i pinned to CPU i mod the CPU
 * count with THREAD_SPREAD) and join them all. Returns how many ran: fewer
 * than n only if threads ran out. n <= THREAD_RUN_MAX. */
#define THREAD_RUN_MAX 32
#define THREAD_SPREAD (~1u)
unsigned thread_run_all(const char *name, unsigned n, void (*fn)(void *),
			void *args, size_t stride, unsigned cpu);
void thread_join(struct thread *t);
void thread_yield(void);
void thread_sleep(uint64_t ticks);
struct thread *thread_current(void);

/* A slot index for a client's per-thread word, once, at init (init.h);
 * panics when all THREAD_SLOTS are claimed. */
unsigned thread_slot_claim(void);

static inline uintptr_t thread_slot(const struct thread *t, unsigned slot)
{
	return t->slot[slot];
}

static inline void thread_slot_set(struct thread *t, unsigned slot, uintptr_t value)
{
	t->slot[slot] = value;
}

/* Scheduler entry points for arch and core. */
void sched_init(void);                 /* boot CPU, before interrupts */
_Noreturn void sched_cpu_online(void); /* a secondary CPU joins; never returns */
void sched_tick(void);                 /* from timer_tick, interrupts masked */
/* (sched_irq_exit is declared in arch.h: the arch calls it.) */
void sched_prepare_cpu(struct cpu *c); /* before arch_cpu_start(c) */
void sched_wake(struct thread *t);
uint64_t sched_total_switches(void);
/* Call fn for every thread that exists (created and not yet reaped, idle
 * threads and the boot thread included), without locks: for a caller that
 * has stopped every other CPU (smp_stop_others). */
void sched_for_each_thread(void (*fn)(struct thread *t, void *arg), void *arg);

#endif
