/*
 * hooks.c — the -finstrument-functions baseline of the bench (seed 004).
 *
 * gcc's -finstrument-functions makes every function of an instrumented
 * file call __cyg_profile_func_enter(fn, call_site) on entry and
 * __cyg_profile_func_exit(fn, call_site) before it returns. The bench
 * builds a second image with the workloads so compiled (image.mk's
 * INSTRUMENT), adds the same entry probes as for a trap-based run — added,
 * never enabled, so no trap is written — and turns the hooks on (`probe
 * hooks on`). A hook then finds the probe at fn's address and writes the
 * records a trap would have written for it, into the same per-CPU buffers,
 * through the same tracer_fire: ENTRY pc, sp, then nargs words, and RETURN
 * pc, sp, one word, both under the entry probe's id. The hooks cannot see
 * the arguments or the return value portably, so those words are 0: the
 * records have the same size and count, which is what the bench compares.
 * A function with no probe at its address costs the hook a lookup only.
 * A probe program attached to the probe runs at each of those calls,
 * entry and exit alike, with no trapped context: reading a register, an
 * argument or the return value ends it as a fault (counted in the probe's
 * faults); the rest of the language works.
 *
 * This file is tracer code (never instrumented, never probeable).
 */
#include "arch.h"
#include "tracer.h"
#include "wire.h"

volatile bool tracer_hooks_on;

_Static_assert(WIRE_RETURN_VALUE < WIRE_ENTRY_ARG0 + TRACER_MAX_ARGS,
	       "hook()'s record array holds a RETURN record too");

void __cyg_profile_func_enter(void *fn, void *call_site);
void __cyg_profile_func_exit(void *fn, void *call_site);

static void hook(void *fn, unsigned kind)
{
	if (!tracer_hooks_on)
		return;
	const struct probe *p = tracer_lookup((uintptr_t)fn);
	if (!p)
		return;
	unsigned long pc = (unsigned long)(uintptr_t)fn;
	unsigned long sp = (unsigned long)(uintptr_t)__builtin_frame_address(0);
	unsigned long w[WIRE_ENTRY_ARG0 + TRACER_MAX_ARGS] = { 0 };  /* unseen: 0 */
	unsigned n;
	if (kind == WIRE_EVENT_ENTRY) {
		w[WIRE_ENTRY_PC] = pc;
		w[WIRE_ENTRY_SP] = sp;
		n = WIRE_ENTRY_ARG0 + p->nargs;
	} else {
		w[WIRE_RETURN_PC] = pc;
		w[WIRE_RETURN_SP] = sp;
		n = WIRE_RETURN_VALUE + 1;
	}
	irqflags_t f = arch_irq_save();
	tracer_fire(p, kind, w, n, 0);      /* no trapped context */
	arch_irq_restore(f);
}

void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	hook(fn, WIRE_EVENT_ENTRY);
}

void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)call_site;
	hook(fn, WIRE_EVENT_RETURN);
}
