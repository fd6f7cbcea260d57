/*
 * stamp.h — where a firing's cycles go: stage stamps on the fire path.
 *
 * The firepath workload times one probed call at a time and asks the fire
 * path to stamp the cycle counter as it passes each stage boundary: the
 * workload stamps START just before the call and END just after it; the
 * arch's trap hook stamps ENTRY as it is entered (the trap taken, entry
 * code and dispatch run), LOOKUP once it holds the probe, FIRE once the
 * firing is counted and its action or program done, and EMULATE once the
 * displaced instruction is applied to the trapped state. Each stage is the
 * interval that ends at its stamp, in the order the stamps were taken
 * (sparc64 emulates a CTI before it records; i386 records first); EXIT,
 * ending at END, holds the hook's return, the frame move and the trap's
 * return. A return that rides on its entry (a return trampoline, no trap)
 * stamps RIDE as the trampoline's C is entered (so the stage holds the
 * entry's way back, the call's body, the function's `ret` into the
 * trampoline and its head) and RIDE_FIRE once the return is counted or
 * recorded and its shadow frame popped; EXIT then holds the trampoline's
 * tail and its `ret` to the caller. Stamps cost cycles of their own; the
 * workload measures one and takes it off each stage.
 *
 * Off (the default), a stamp is one load and a branch not taken. On, only
 * the CPU named in tracer_stamp_cpu (id + 1) stamps, so that probes firing
 * elsewhere leave the figures alone.
 */
#ifndef STAMP_H
#define STAMP_H

#include "arch.h"
#include "cpu.h"

#define TRACER_STAMPS(X) \
	X(START,   "start")   \
	X(ENTRY,   "entry")   \
	X(LOOKUP,  "lookup")  \
	X(FIRE,    "fire")    \
	X(EMULATE, "emulate") \
	X(RIDE,    "ride")    \
	X(RIDE_FIRE, "ride_fire") \
	X(END,     "exit")
#define TRACER_STAMP_ENUM(name, text) TRACER_STAMP_##name,
enum { TRACER_STAMPS(TRACER_STAMP_ENUM) TRACER_NSTAMPS };
#undef TRACER_STAMP_ENUM

extern const char *const tracer_stamp_names[TRACER_NSTAMPS];
extern volatile unsigned tracer_stamp_cpu;
extern volatile unsigned long tracer_stamps[TRACER_NSTAMPS];

static inline void tracer_stamp(unsigned k)
{
	if (__builtin_expect(tracer_stamp_cpu != 0, 0) &&
	    tracer_stamp_cpu == this_cpu()->id + 1)
		tracer_stamps[k] = (unsigned long)arch_cycles();
}

#endif
