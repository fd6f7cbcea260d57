/*
 * stagesites.c — the i386 sites of the fire path's stage table
 * (stagesites.h): a nop, whose emulation moves EIP alone, and push %ebp,
 * whose emulation moves ESP down a word, so entry.S moves the trap frame
 * and makes the deferred store (trapframe.h). Both are entry forms every
 * emulating mechanism takes (ud2 not on the one-byte nop: it is refused
 * there, and the line says so).
 */
#include "stagesites.h"
#include "wire.h"

void stage_nop(void);
void stage_push(void);

__asm__(
	".text\n"
	".global stage_nop, stage_push\n"
	".type stage_nop, @function\n"
	"stage_nop:\n"
	"	nop\n"
	"	ret\n"
	".size stage_nop, . - stage_nop\n"
	".type stage_push, @function\n"
	"stage_push:\n"
	"	pushl %ebp\n"
	"	popl %ebp\n"
	"	ret\n"
	".size stage_push, . - stage_push\n");

const struct stage_site stage_sites[] = {
	{ "nop", stage_nop, WIRE_EVENT_ENTRY },
	{ "push", stage_push, WIRE_EVENT_ENTRY },
};
const unsigned stage_nsites = sizeof stage_sites / sizeof stage_sites[0];
