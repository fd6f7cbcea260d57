/*
 * irq_hook.h — a hook that sees every interrupt begin and end.
 *
 * An interrupt's handler runs on the stack of the thread it interrupted,
 * and may end by switching away from it (sched_irq_exit): its calls form a
 * frame of their own on that thread's stack, which the thread leaves only
 * when it runs again and the interrupt returns. A client that follows call
 * stacks (the tracer: its IRQ records) registers one function at init
 * (init.h) with irq_hook_set(); the arch's trap dispatch calls
 * irq_hook_run(vector, false) before an interrupt's handler and
 * irq_hook_run(vector, true) after its sched_irq_exit(), interrupts
 * masked, on the same thread both times. Like the trap and switch hooks
 * (trap.h, switch_hook.h): the kernel offers, the client registers, and no
 * hook costs a load and a test.
 */
#ifndef IRQ_HOOK_H
#define IRQ_HOOK_H

#include <stdbool.h>

typedef void (*irq_hook_fn)(unsigned vector, bool exit);

/* Set (at init) the one hook; a second one panics: a set-up mistake. */
void irq_hook_set(irq_hook_fn fn);

extern irq_hook_fn irq_hook;

static inline void irq_hook_run(unsigned vector, bool exit)
{
	if (irq_hook)
		irq_hook(vector, exit);
}

#endif
