/*
 * itrace.c — sparc64 has no single-step (sun4u: no trace trap, and QEMU
 * implements no VA/PA watchpoint either), so `itrace on` is refused here
 * with the way it is done instead: branch probes on every CTI of the
 * traced functions record each transfer's outcome, and the host
 * rebuilds every instruction between them from the ELF.
 */
#include "tracer.h"
#include "tracer_arch.h"
#include "console.h"

int tarch_itrace_arm(const struct probe *p, unsigned method, unsigned long skip,
		     unsigned long regions, const char **why)
{
	(void)p; (void)method; (void)skip; (void)regions;
	*why = "sun4u has no single-step: trace its instructions with branch "
	       "probes on every CTI (branch:FUNCTION), rebuilt by the host";
	return -1;
}

void tarch_itrace_disarm(void)
{
}

size_t tarch_itrace_stats(char *buf, size_t size)
{
	return ksnprintf(buf, size, "regions=0");
}
