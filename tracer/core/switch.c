/*
 * switch.c — SWITCH and IRQ records: the scheduler's side of a trace.
 *
 * A kernel's call chains are per thread, and a thread's calls are spread
 * over CPUs and cut by switches: arch_context_switch() is entered on one
 * stack and returns on another, a new thread starts in a trampoline with
 * nothing to return to, an exiting thread leaves its calls open for ever.
 * The host can only pair entries with returns across all that if it sees
 * every switch (DTrace's sched on-cpu/off-cpu, ftrace's sched_switch):
 * the kernel's switch hook (switch_hook.h) calls switch_record() right
 * before each switch, which writes a SWITCH record (wire.h
 * WIRE_SWITCH_WORDS) while any enabled probe records its firings
 * (tracer_probes_recording: an aggregation alone sends no record) — one
 * test otherwise. It
 * runs with interrupts masked on the switching CPU, never inside a firing,
 * and its record is counted like any other (recorded, dropped) and in
 * the STATS frame's `switches`, so the host can keep the firings apart.
 * The same goes for the interrupt hook (irq_hook.h): an IRQ record as an
 * interrupt's handler begins and one as it ends, so the host sees the
 * handler's calls as a frame on the interrupted thread's stack, and a
 * preemption at its end as the SWITCH between them.
 */
#include "tracer.h"
#include "init.h"
#include "irq_hook.h"
#include "switch_hook.h"
#include "thread.h"
#include "wire.h"

#define WHY_IS_WIRE(name, value, meaning) \
	_Static_assert((int)SWITCH_##name == (int)WIRE_SWITCH_WHY_##name, \
		       "switch_hook.h's " #name " is the wire's");
WIRE_SWITCH_WHYS(WHY_IS_WIRE)
#undef WHY_IS_WIRE

static void switch_record(const struct thread *from, const struct thread *to,
			  enum switch_why why, bool first)
{
	if (!tracer_probes_recording())
		return;
	unsigned long w[WIRE_SWITCH_NWORDS] = {
		[WIRE_SWITCH_FROM] = from->id, [WIRE_SWITCH_TO] = to->id,
		[WIRE_SWITCH_WHY] = why, [WIRE_SWITCH_FIRST] = first,
	};
	tracer_record_sched(WIRE_EVENT_SWITCH, w, WIRE_SWITCH_NWORDS);
}

static void irq_record(unsigned vector, bool exit)
{
	if (!tracer_probes_recording())
		return;
	unsigned long w[WIRE_IRQ_NWORDS] = {
		[WIRE_IRQ_VECTOR] = vector, [WIRE_IRQ_EXIT] = exit,
	};
	tracer_record_sched(WIRE_EVENT_IRQ, w, WIRE_IRQ_NWORDS);
}

static void switch_init(void)
{
	switch_hook_set(switch_record);
	irq_hook_set(irq_record);
}
KERNEL_INIT(switch_init);
