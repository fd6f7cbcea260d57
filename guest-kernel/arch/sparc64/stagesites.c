/*
 * stagesites.c — the sparc64 sites of the fire path's stage table
 * (stagesites.h): `ba,pt %xcc` (a CTI on the condition codes, emulated
 * from TSTATE's CCR, as the branch in DProbes' base loop) and `retl` (a
 * return probe: its emulation sets PC/nPC from %o7, and its record
 * carries the value the delay slot leaves in %o0); and `add %o0, 1, %o0`,
 * no CTI: run out of line (ool.c: TPC = the slot, TNPC = site + 4),
 * against the branch's emulation in the same boot (the bench's
 * ool_over_emulated). Leaf routines: no save, no register window.
 */
#include "stagesites.h"
#include "wire.h"

void stage_branch(void);
void stage_retl(void);
void stage_ool(void);

__asm__(
	".text\n"
	".align 4\n"
	".global stage_branch, stage_retl\n"
	".type stage_branch, #function\n"
	"stage_branch:\n"
	"	ba,pt %xcc, 1f\n"
	"	 nop\n"
	"1:	retl\n"
	"	 nop\n"
	".size stage_branch, . - stage_branch\n"
	".type stage_retl, #function\n"
	"stage_retl:\n"
	"	retl\n"
	"	 nop\n"
	".size stage_retl, . - stage_retl\n"
	".global stage_ool\n"
	".type stage_ool, #function\n"
	"stage_ool:\n"
	"	add %o0, 1, %o0\n"
	"	retl\n"
	"	 nop\n"
	".size stage_ool, . - stage_ool\n");

const struct stage_site stage_sites[] = {
	{ "branch", stage_branch, WIRE_EVENT_BRANCH, 0 },
	{ "retl", stage_retl, WIRE_EVENT_RETURN, 0 },
	{ "ool", stage_ool, WIRE_EVENT_ENTRY, 0 },
};
const unsigned stage_nsites = sizeof stage_sites / sizeof stage_sites[0];
