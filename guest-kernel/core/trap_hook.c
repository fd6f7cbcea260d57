/*
 * trap_hook.c — the table of trap hooks (trap.h).
 *
 * One row per vector, each a short list of hooks in registration order,
 * ended by the first empty entry: the arch's trap dispatch indexes the row
 * and calls down it (trap_hooks_run, inline in trap.h), so a trap with no
 * hook costs one load. Hooks are added at init, while no trap on those
 * vectors is expected yet; an entry is one pointer store, so a CPU taking
 * a trap meanwhile sees the hook or not, never half of it. Nothing is
 * ever removed. The interrupt hook (irq_hook.h) is one pointer beside
 * them, set the same way.
 */
#include "trap.h"
#include "irq_hook.h"
#include "console.h"

irq_hook_fn irq_hook;

void irq_hook_set(irq_hook_fn fn)
{
	if (irq_hook)
		panic("irq_hook_set: an interrupt hook is set already");
	irq_hook = fn;
}

trap_hook_fn trap_hooks[ARCH_TRAP_VECTORS][TRAP_HOOKS_PER_VECTOR];

int trap_hook_add(unsigned vector, trap_hook_fn fn)
{
	if (vector >= ARCH_TRAP_VECTORS)
		panic("trap_hook_add: vector %u, the arch has %u", vector,
		      ARCH_TRAP_VECTORS);
	for (int i = 0; i < TRAP_HOOKS_PER_VECTOR; i++) {
		if (!trap_hooks[vector][i]) {
			trap_hooks[vector][i] = fn;
			return i;
		}
	}
	panic("trap_hook_add: vector %u has %d hooks already", vector,
	      TRAP_HOOKS_PER_VECTOR);
}
