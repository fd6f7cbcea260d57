/*
 * entry.S — i386 trap entry and exit, and setjmp/longjmp.
 *
 * Every vector gets a stub that makes the stack look the same: the CPU's
 * EIP/CS/EFLAGS (no ESP/SS: all our code runs in ring 0, so the CPU never
 * switches stacks), an error code (the CPU's, or a 0 we push), the vector
 * number. trap_common then saves the segment and general registers, which
 * completes a struct trapframe (trapframe.h), and calls trap_dispatch with
 * a pointer to it. Everything trap_dispatch changes in the frame — EIP for
 * a trap_try landing, the registers a probe's emulation wrote — takes
 * effect at iret; an emulation that moved ESP also moves the frame
 * (move_frame below).
 *
 * The exception stubs are generated from EXCEPTION_VECTORS (vectors.h), the
 * same list that names the vectors in C, so the two cannot drift apart;
 * every other vector gets a generic stub, so even a stray `int $n` arrives
 * in trap_dispatch and is reported rather than triple-faulting.
 */
#include "trapframe.h"
#include "vectors.h"

	.macro EXC_STUB n, err
	.global exception_stub_\n
exception_stub_\n:
	.if \err == 0
	pushl	$0
	.endif
	pushl	$\n
	jmp	trap_common
	.endm

	.macro IRQ_STUB n
irq_stub_\n:
	pushl	$0
	pushl	$\n
	jmp	trap_common
	.endm

	.altmacro
	.text
#define STUB(n, mnemonic, description, err) EXC_STUB n, err ;
	EXCEPTION_VECTORS(STUB)
	.set	vec, NUM_EXCEPTIONS
	.rept	256 - NUM_EXCEPTIONS
	IRQ_STUB %vec
	.set	vec, vec + 1
	.endr

trap_common:
	pushal
	pushl	%ds
	pushl	%es
	pushl	%fs
	pushl	%gs
	movl	$SEL_KERNEL_DS, %eax
	movl	%eax, %ds
	movl	%eax, %es
	cld
	pushl	%esp
	call	trap_dispatch
	/* trap_dispatch's frame returns here, its argument the frame: where
	 * a stack walk hops to the interrupted code (tracer/arch/i386/stack.c) */
	.globl	trap_dispatch_returned
trap_dispatch_returned:
	addl	$4, %esp
	testl	%eax, %eax
	jnz	move_frame
trap_return:
	popl	%gs
	addl	$4, %esp            /* %fs is the CPU's, not the thread's: a thread
				       switched out in this handler may resume here
				       on another CPU, so keep the current one */
	popl	%es
	popl	%ds
	popal
	addl	$8, %esp            /* vector, error code */
	iret

/* The frame's TF_SIZE / 4 words from (%esi) to (%edi), from offset first
 * by step, unrolled: QEMU's TCG ends a translated block at every iteration
 * of a rep movs, and a probed push paid 17 of them per firing. */
	.macro FRAME_COPY first, step
	.set	off, \first
	.rept	TF_SIZE / 4
	movl	off(%esi), %ecx
	movl	%ecx, off(%edi)
	.set	off, off + \step
	.endr
	.endm

/*
 * A probe emulated an instruction that moves ESP (trap_dispatch returned
 * the new ESP in %eax). IRET takes EIP/CS/EFLAGS from just below the ESP it
 * leaves, so the whole frame moves to end at the new ESP: copied downwards
 * for push/enter, upwards for pop/leave/ret, in the direction that never
 * overwrites a word before it is read. Then the one deferred stack store
 * (the pushed %ebp, whose address lay inside the old frame) is made; its
 * address and value came in the vector and error slots. Interrupts stay
 * masked throughout: nothing may push below ESP while the frame is in
 * flight. The interrupted code's IF comes back with EFLAGS at IRET.
 */
move_frame:
	cli
	movl	TF_VECTOR(%esp), %ebx   /* deferred store: address, 0 for none */
	movl	TF_ERROR(%esp), %edx    /* deferred store: value */
	leal	-TF_SIZE(%eax), %edi
	movl	%esp, %esi
	cmpl	%esi, %edi
	jb	1f
	FRAME_COPY (TF_SIZE-4), -4        /* moving up: last word first */
	jmp	2f
1:	FRAME_COPY 0, 4                   /* moving down: first word first */
2:	leal	-TF_SIZE(%eax), %esp
	testl	%ebx, %ebx
	jz	trap_return
	movl	%edx, (%ebx)
	jmp	trap_return

	.section .rodata
	.align 4
	.global trap_stub_table
trap_stub_table:
#define STUB_ADDRESS(n, mnemonic, description, err) .long exception_stub_##n ;
	EXCEPTION_VECTORS(STUB_ADDRESS)
	.macro STUB_POINTER n
	.long	irq_stub_\n
	.endm
	.set	vec, NUM_EXCEPTIONS
	.rept	256 - NUM_EXCEPTIONS
	STUB_POINTER %vec
	.set	vec, vec + 1
	.endr

/*
 * arch_setjmp(buf) saves ebx esi edi ebp, the caller's esp and return
 * address, and EFLAGS (so IF comes back as it was, whatever the trap path
 * left). arch_longjmp(buf, v) restores them and returns v (1 if v == 0)
 * from the arch_setjmp call.
 */
	.text
	.global arch_setjmp, arch_longjmp
arch_setjmp:
	movl	4(%esp), %eax
	movl	%ebx, 0(%eax)
	movl	%esi, 4(%eax)
	movl	%edi, 8(%eax)
	movl	%ebp, 12(%eax)
	leal	4(%esp), %ecx
	movl	%ecx, 16(%eax)
	movl	(%esp), %ecx
	movl	%ecx, 20(%eax)
	pushfl
	popl	%ecx
	movl	%ecx, 24(%eax)
	xorl	%eax, %eax
	ret

arch_longjmp:
	movl	4(%esp), %edx
	movl	8(%esp), %eax
	testl	%eax, %eax
	jnz	1f
	incl	%eax
1:	movl	0(%edx), %ebx
	movl	4(%edx), %esi
	movl	8(%edx), %edi
	movl	12(%edx), %ebp
	movl	16(%edx), %esp
	pushl	24(%edx)
	popfl
	jmp	*20(%edx)
