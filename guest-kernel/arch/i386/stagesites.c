/*
 * stagesites.c — the i386 sites of the fire path's stage table
 * (stagesites.h): a nop, whose emulation moves EIP alone, and push %ebp,
 * whose emulation moves ESP down a word, so entry.S moves the trap frame
 * and makes the deferred store (trapframe.h). Both are entry forms every
 * emulating mechanism takes (ud2 not on the one-byte nop: it is refused
 * there, and the line says so); and a whole prologue, push %ebp; mov
 * %esp,%ebp; sub $8,%esp — the fused form int3 and ud emulate, and the
 * five bytes `opt` (opt.c) replaces with its jmp, so that the table holds
 * int3 against opt on one site in one boot (the bench's int3_over_opt);
 * and `addl $1, %eax`, no emulated form: int3 and ud run it out of line
 * (ool.c: the slot's copy and its jmp back), against the nop's emulation
 * in the same boot (the bench's ool_over_emulated); and `return`, the
 * prologue's shape again with a return probe on its leave as well: under
 * int3 the leave traps, under opt it rides on the entry (opt_return.c),
 * so the table holds both ways of recording a return (the bench's
 * int3_over_opt_return).
 */
#include "stagesites.h"
#include "wire.h"

void stage_nop(void);
void stage_push(void);
void stage_prologue(void);
void stage_ool(void);
void stage_return(void);

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
	".size stage_push, . - stage_push\n"
	".global stage_prologue\n"
	".type stage_prologue, @function\n"
	"stage_prologue:\n"
	"	pushl %ebp\n"
	"	movl %esp, %ebp\n"
	"	subl $8, %esp\n"
	"	leave\n"
	"	ret\n"
	".size stage_prologue, . - stage_prologue\n"
	".global stage_ool\n"
	".type stage_ool, @function\n"
	"stage_ool:\n"
	"	addl $1, %eax\n"
	"	ret\n"
	".size stage_ool, . - stage_ool\n"
	".global stage_return\n"
	".type stage_return, @function\n"
	"stage_return:\n"
	"	pushl %ebp\n"
	"	movl %esp, %ebp\n"
	"	subl $8, %esp\n"
	"	leave\n"
	"	ret\n"
	".size stage_return, . - stage_return\n");

const struct stage_site stage_sites[] = {
	{ "nop", stage_nop, WIRE_EVENT_ENTRY, 0 },
	{ "push", stage_push, WIRE_EVENT_ENTRY, 0 },
	{ "prologue", stage_prologue, WIRE_EVENT_ENTRY, 0 },
	{ "ool", stage_ool, WIRE_EVENT_ENTRY, 0 },
	{ "return", stage_return, WIRE_EVENT_ENTRY, 6 },   /* leave: after 1 + 2 + 3 bytes */
};
const unsigned stage_nsites = sizeof stage_sites / sizeof stage_sites[0];
