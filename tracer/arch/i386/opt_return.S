/*
 * opt_return.S — the return trampoline of `opt` (opt_return.c). A call
 * whose entry probe trampolined it returns here (its `ret` popped our
 * address off the slot that held the real one); esp is slot + 4.
 *
 *     pushl $0                 the slot again: the real address goes here
 *     pushfl                   eflags as the function left them
 *     cli                      one CPU, one producer per CPU buffer
 *   the counting path: a return probe that counts only (no program, no
 *   pass or maximum, the null action), no stage stamps asked for, and
 *   the innermost shadow frame is this slot's, for a probe still enabled
 *   and riding at the address it had: as i386_opt_return would, pop the
 *   frame, count the firing (tracer_fire_count: its CPU's hit row and
 *   fired count), write the real address into the slot, and
 *     popfl; ret               no call, no frame, four registers saved
 *   a plain recording return probe (site.fast, opt_fast.h) whose record
 *   the ring takes as put() or subbuf_put() would: its RETURN record
 *   written here, the frame popped, counted, and popfl; ret as above;
 *   anything else goes to C:
 *     pushl %cs; pushl $opt_return_trampoline; pushl $0; pushl $0
 *     pushal; push the segments   a struct trapframe (opt_detour.S's
 *     call  i386_opt_return    shape, the vector slot a 0 instead of a
 *                              return address: one call and one return
 *                              fewer); its sp is the slot, as an int3's
 *                              at the ret
 *     popal; leal 16(%esp), %esp; popfl
 *     ret                      to the real address, written into the slot
 *
 * Under TCG the call and its return were two block lookups and the frame
 * twenty stores and loads a firing: the counting path is what a return
 * probe's null firing costs beyond the trampoline's own entry, popfl and
 * ret. The numbers it reads are opt.h's, asserted against the C
 * structures in opt_return.c.
 *
 * It lives in the tracer's text and is never freed: a thread preempted
 * anywhere in it, or holding its address in a slot, finds it again. It
 * shares opt's page (OPT_HOT_SECTION, opt.h) with i386_opt_return, so the
 * call is a chained jump under TCG, not a block lookup.
 */
#include "opt_fast.h"

	.section OPT_HOT_SECTION, "ax"
	.global	opt_return_trampoline
opt_return_trampoline:
	pushl	$0
	pushfl
	cli
	pushl	%eax
	pushl	%ebx
	pushl	%ecx
	pushl	%edx               /* the slot is 20(%esp) */
	cmpl	$0, tracer_stamp_cpu
	jne	.Lto_c
	movl	%fs:OPT_CPU_CURRENT, %ecx
	movl	ret_slot, %edx
	movl	OPT_THREAD_SLOT(%ecx,%edx,4), %edx  /* shadow stack index + 1 */
	testl	%edx, %edx
	jz	.Lto_c
	imull	$OPT_RET_STACK, %edx, %edx
	leal	ret_stacks - OPT_RET_STACK(%edx), %edx  /* its ret_stack */
	movl	OPT_RET_DEPTH(%edx), %ecx
	testl	%ecx, %ecx
	jz	.Lto_c
	shll	$4, %ecx           /* OPT_RET_FRAME */
	leal	OPT_RET_FRAMES - OPT_RET_FRAME(%edx,%ecx), %ecx  /* innermost */
	movl	OPT_FRAME_RET(%ecx), %eax           /* the return probe */
	/* Each test is a branch, and under TCG each branch ends a block:
	 * fields side by side are tested together. */
	leal	20(%esp), %ebx
	cmpl	%ebx, OPT_FRAME_SLOT(%ecx)
	jne	.Lto_c              /* frames to drop, or none of ours: C */
	movl	OPT_FRAME_RET_ADDR(%ecx), %ebx
	cmpl	%ebx, (%eax)
	jne	.Lto_c              /* cleared and added again elsewhere */
	OPT_RIDING %eax, %ebx, .Lto_c
	/* The null action and no gate: one word. */
	cmpw	$OPT_ACTION_NULL, OPT_PROBE_ACTION(%eax)
	jne	.Lrecord
	decl	OPT_RET_DEPTH(%edx)                 /* popped */
	movl	(%ecx), %ebx                        /* the real address */
	movl	%ebx, 20(%esp)
	movl	%fs:OPT_CPU_ID, %ecx
	OPT_COUNT_FIRING %eax, %ecx, %edx
	popl	%edx
	popl	%ecx
	popl	%ebx
	popl	%eax
	popfl
	ret
	/* The recording path (opt_fast.h), for a plain probe whose site.fast
	 * says so (tarch_probe_ride): recording, not gated; the RETURN
	 * record (pc, sp = the slot, eax, and edx for a two-word value)
	 * written as i386_opt_return's record, the frame popped and the
	 * real address put back, as it does. Anything the reservation does
	 * not take goes into C with nothing stored. */
.Lrecord:
	cmpw	$0, OPT_PROBE_ACTION(%eax)         /* TRACER_ACTION_RECORD, ungated */
	jne	.Lto_c
	cmpb	$OPT_FAST_RETURN, OPT_PROBE_FAST(%eax)
	jb	.Lto_c
	pushl	%esi
	pushl	%edi
	pushl	%ecx                /* the frame */
	pushl	%edx                /* its stack: the slot is 36(%esp) now */
	movl	%eax, %esi
	xorl	%ecx, %ecx
	cmpb	$2, OPT_PROBE_NARGS(%esi)
	setae	%cl
	addl	$3, %ecx            /* pc, sp, eax, and edx for two value words */
	OPT_FAST_RESERVE %ecx, .Lrecord_no
	movl	(%esi), %eax
	movl	%eax, 16(%edi)      /* pc: the probe's address */
	leal	36(%esp), %eax
	movl	%eax, 20(%edi)      /* sp: the slot */
	movl	28(%esp), %eax      /* the function's eax */
	cmpb	$OPT_FAST_RETURN_BROKEN, OPT_PROBE_FAST(%esi)
	cmove	16(%esp), %eax      /* tests: its edx instead */
	movl	%eax, 24(%edi)
	xorl	%ecx, %ecx
	cmpb	$2, OPT_PROBE_NARGS(%esi)
	setae	%cl
	addl	$3, %ecx
	cmpl	$4, %ecx
	jne	1f
	movl	16(%esp), %eax      /* the function's edx */
	movl	%eax, 28(%edi)
1:	OPT_FAST_COMMIT OPT_EVENT_RETURN
	popl	%edx
	popl	%ecx
	decl	OPT_RET_DEPTH(%edx)                 /* popped */
	movl	(%ecx), %ebx                        /* the real address */
	movl	%ebx, 28(%esp)
	popl	%edi
	popl	%esi
	popl	%edx
	popl	%ecx
	popl	%ebx
	popl	%eax
	popfl
	ret
.Lrecord_no:
	popl	%edx
	popl	%ecx
	popl	%edi
	popl	%esi
	jmp	.Lto_c
	/* Where the way into C falls moves the blocks after its call and its
	 * popfl; QEMU's jump cache (4,096 entries, by address) had the one
	 * after popfl and i386_opt_return's after tracer_fire in one entry,
	 * so every recorded return missed it twice. */
	.balign	16
.Lto_c:
	popl	%edx
	popl	%ecx
	popl	%ebx
	popl	%eax
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
