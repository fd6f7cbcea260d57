/*
 * switch_hook.h — a hook that sees every context switch.
 *
 * Like the trap hooks (trap.h), the kernel offers and a client registers:
 * the kernel never names the tracer. A client that must see every switch
 * (the tracer: its SWITCH records, DTrace's sched on-cpu/off-cpu, ftrace's
 * sched_switch) registers one function at init (init.h) with
 * switch_hook_set(). schedule() calls it with interrupts masked, after
 * the CPU's current thread has become `to` and right before
 * arch_context_switch() leaves `from`'s stack: the last thing that runs on
 * the outgoing stack is arch_context_switch itself. `why` says why `from`
 * stops running; `first` that `to` has never run (it starts in the arch's
 * trampoline, thread_start, not in a schedule() of its own). One pointer:
 * no hook costs one load and a test per switch.
 */
#ifndef SWITCH_HOOK_H
#define SWITCH_HOOK_H

#include <stdbool.h>

struct thread;

/* Why the outgoing thread stops running; the values are the wire's
 * (include/wire.h WIRE_SWITCH_WHYS asserts them). */
enum switch_why {
	SWITCH_PREEMPTED = 0,   /* still runnable: its slice ended, a yield, a wakeup */
	SWITCH_BLOCKED   = 1,   /* sleeping or waiting */
	SWITCH_EXITED    = 2,   /* a zombie: it never runs again */
};

typedef void (*switch_hook_fn)(const struct thread *from, const struct thread *to,
			       enum switch_why why, bool first);

/* Set (at init) the one hook; a second one panics: a set-up mistake. */
void switch_hook_set(switch_hook_fn fn);

#endif
