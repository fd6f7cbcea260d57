/*
 * opt_return.S — the return trampoline of `opt` (opt_return.c). A call
 * whose entry probe trampolined it returns here (its `ret` popped our
 * address off the slot that held the real one); esp is slot + 4.
 *
 *     pushl $0                 the slot again: the real address goes here
 *     pushfl                   eflags as the function left them
 *     cli                      one CPU, one producer per CPU buffer
 *     pushl %cs; pushl $opt_return_trampoline; pushl $0; pushl $0
 *     pushal; push the segments   a struct trapframe (opt_detour.S's
 *     call  i386_opt_return    shape, the vector slot a 0 instead of a
 *                              return address: one call and one return
 *                              fewer); its sp is the slot, as an int3's
 *                              at the ret
 *     popal; leal 16(%esp), %esp; popfl
 *     ret                      to the real address, written into the slot
 *
 * It lives in the tracer's text and is never freed: a thread preempted
 * anywhere in it, or holding its address in a slot, finds it again. It
 * shares opt's page (OPT_HOT_SECTION, opt.h) with i386_opt_return, so the
 * call is a chained jump under TCG, not a block lookup.
 */
#include "opt.h"

	.section OPT_HOT_SECTION, "ax"
	.global	opt_return_trampoline
opt_return_trampoline:
	pushl	$0
	pushfl
	cli
	pushl	%cs
	pushl	$opt_return_trampoline
	pushl	$0
	pushl	$0                 /* the vector slot: no call, one return less */
	pushal
	pushl	%ds
	pushl	%es
	pushl	%fs
	pushl	%gs
	pushl	%esp
	call	i386_opt_return
	addl	$20, %esp          /* the argument and the segment registers */
	popal
	leal	16(%esp), %esp     /* vector, error, eip, cs */
	popfl
	ret
