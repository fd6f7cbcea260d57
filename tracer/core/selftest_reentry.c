/*
 * selftest_reentry.c — a probe hit inside a firing, on demand.
 *
 * A probe hit while its CPU's tracer is already inside a firing (a trap
 * taken in the fire path, a function the fire path calls) must be counted
 * as missed, as kprobes counts nmissed: never recorded (the CPU's buffer
 * is half-written) and never swallowed. The tracer's own code is notrace,
 * so this cannot happen by itself; tests make it happen: with reentry_test
 * set (through the GDB stub), every recorded firing calls
 * reentry_probe_point, which lives here, outside the notrace range (the
 * linker scripts leave the tracer's selftest_* objects probeable), so a
 * probe on it fires inside the firing. reentry_broken turns the count off:
 * the broken variant, whose hits the host's accounting must miss.
 */
#include "tracer.h"

volatile unsigned reentry_test, reentry_broken;
static volatile unsigned long reentry_calls;

/* A real body (not a lone ret): an entry site and a return site apart. */
__attribute__((noinline)) void reentry_probe_point(void)
{
	reentry_calls++;
}
