/*
 * opt_return.S — the return trampoline of `opt` (opt_return.c). A call
 * whose entry probe trampolined it returns here (its `ret` popped our
 * address off the slot that held the real one); esp is slot + 4.
 *
 *     pushl $0                 the slot again: the real address goes here
 *     pushfl                   eflags as the function left them
 *     cli                      one CPU, one producer per CPU buffer
 *     pushl %cs; pushl $opt_return_trampoline; pushl $0
 *     call  opt_return_common  a struct trapframe (opt_detour.S's shape):
 *                              its sp is the slot, as an int3 at the ret's
 *     leal  12(%esp), %esp
 *     popfl
 *     ret                      to the real address, written into the slot
 *
 * It lives in the tracer's text and is never freed: a thread preempted
 * anywhere in it, or holding its address in a slot, finds it again.
 */
	.section .text.notrace, "ax"
	.global	opt_return_trampoline
opt_return_trampoline:
	pushl	$0
	pushfl
	cli
	pushl	%cs
	pushl	$opt_return_trampoline
	pushl	$0
	call	opt_return_common
	leal	12(%esp), %esp
	popfl
	ret

opt_return_common:
	pushal
	pushl	%ds
	pushl	%es
	pushl	%fs
	pushl	%gs
	pushl	%esp
	call	i386_opt_return
	addl	$20, %esp
	popal
	ret
