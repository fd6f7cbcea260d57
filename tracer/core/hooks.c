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
 *
 * This file is tracer code (never instrumented, never probeable).
 */
#include "arch.h"
#include "tracer.h"
#include "wire.h"

volatile bool tracer_hooks_on;

void __cyg_profile_func_enter(void *fn, void *call_site);
void __cyg_profile_func_exit(void *fn, void *call_site);

static void hook(void *fn, unsigned kind)
{
	if (!tracer_hooks_on)
		return;
	const struct probe *p = tracer_lookup((uintptr_t)fn);
	if (!p)
		return;
	unsigned long w[2 + TRACER_MAX_ARGS] = {
		(unsigned long)(uintptr_t)fn,
		(unsigned long)(uintptr_t)__builtin_frame_address(0),
	};
	unsigned n = 2 + (kind == WIRE_EVENT_ENTRY ? p->nargs : 1);
	irqflags_t f = arch_irq_save();
	tracer_fire(p, kind, w, n);
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
