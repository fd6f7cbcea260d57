/*
 * watch.c — sparc64 watches: none yet, refused with the reason.
 *
 * QEMU's sun4u ignores the UltraSPARC VA/PA watchpoint enables (LSU
 * control register, ASI 0x45): no watchpoint trap ever arrives. Watches
 * here are to be built by trap and emulate — the watched page kept out of
 * the D-TLB, the miss handler firing the watch and emulating the load or
 * store — which this tree does not do yet; until then every `watch add`
 * is refused, nothing is armed, and the host refuses `--watch` on this
 * arch before booting (bench/arches.py).
 */
#include "tracer.h"
#include "tracer_arch.h"

const unsigned tarch_watch_slots = 0;

bool tarch_watch_check(unsigned type, uintptr_t addr, unsigned len,
		       const char **why)
{
	(void)type; (void)addr; (void)len;
	*why = "sparc64 has no watchpoints yet: QEMU's sun4u raises no watchpoint "
	       "trap, and the D-TLB-miss emulation that would stand in is not built";
	return false;
}

void tarch_watch_arm(unsigned slot, const struct probe *p, unsigned type,
		     unsigned len)
{
	(void)slot; (void)p; (void)type; (void)len;
}

void tarch_watch_disarm(unsigned slot)
{
	(void)slot;
}
