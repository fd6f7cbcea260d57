/*
 * stagesites.h — the instructions the firepath workload probes, per arch
 * (guest-kernel/arch/<arch>/stagesites.c), to time the fire path stage by
 * stage (stamp.h).
 *
 * Each site is the first instruction of a function of no arguments and no
 * result, fn, that returns at once; calling it unprobed is the loop's
 * baseline. A site is an instruction the arch's emulating mechanisms take
 * and that shows a distinct cost: i386 a nop (the emulation moves EIP
 * only) and a push %ebp (it moves ESP, so the frame moves); sparc64 a
 * taken branch on the condition codes (as DProbes' base loop probes) and
 * a retl (a return probe: its record carries the value). A site may add
 * a return probe on the same function (ret_offset).
 */
#ifndef STAGESITES_H
#define STAGESITES_H

struct stage_site {
	const char *name;
	void      (*fn)(void);
	unsigned    kind;          /* the probe kind to add it as (wire.h) */
	/* Nonzero: a return probe goes at fn + ret_offset too (its return
	 * site), riding on the entry under a mechanism with a return
	 * trampoline (mechanism.h): the table then times a call with both. */
	unsigned    ret_offset;
};

extern const struct stage_site stage_sites[];
extern const unsigned stage_nsites;

#endif
