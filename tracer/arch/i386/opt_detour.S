/*
 * opt_detour.S — where a jump-optimized probe (`opt`, opt.c) goes: the
 * detour slots and the code they all call.
 *
 * Each opt probe owns one OPT_DETOUR_BYTES slot of opt_detours, on pages
 * of their own inside the tracer's text (executable, never probed, written
 * through the text alias before the site's jmp points at it; pages of
 * their own so that writing a slot never throws away the translations of
 * the fire path's code). opt.c writes a plain slot as
 *
 *     pushfl                   eflags as at the site
 *     cli                      one CPU, one producer per CPU buffer, from here
 *     cmpl $0, tracer_stamp_cpu  no stage stamps asked for, and a probe
 *     jne C                    that counts only: counted here, as
 *     cmpb $0, probe.gated     tracer_fire_count does (tracer.h), in its
 *     jne C                    CPU's row of tracer_hits and the CPU's
 *     cmpb $NULL, probe.action tracer_fired: %fs:id and the increments
 *     jne slow                 are on one CPU, interrupts being masked
 *     pushl %eax
 *     movl %fs:id, %eax;  imull $row, %eax, %eax;  incl hits[id](%eax)
 *     movl %fs:id, %eax;  shll $6, %eax
 *     addl $1, fired(%eax);  adcl $0, fired+4(%eax)
 *     popl %eax
 *     popfl                    eflags (and IF) back as they were
 *   copy:                      (OPT_COPY_OFFSET)
 *     <the displaced instructions, byte for byte>
 *     jmp   site + len
 *   slow:                      (OPT_SLOW_OFFSET; an entry that takes the
 *     pushl $probe              recording path, opt_fast.h: a plain
 *     call  opt_fast_entry      record written in assembly, ZF set;
 *     leal  4(%esp), %esp       else the tests above jump straight to
 *     jne   C                   C, at OPT_C_OFFSET)
 *     popfl; jmp copy
 *   C:                         (OPT_C_OFFSET)
 *     pushl %cs
 *     pushl $site              the frame's eip: the probed address
 *     pushl $probe             the frame's error slot: the probe
 *     pushl $0                 the frame's vector slot
 *     pushal; pushl %ds, %es, %fs, %gs; pushl %esp
 *     call  i386_opt_fire
 *     addl  $20, %esp; popal
 *     leal  16(%esp), %esp     drop vector, error, eip, cs (flags untouched)
 *     popfl
 *     jmp   copy
 *
 * A counting firing thus makes no call and leaves the slot's page only
 * to go back: under TCG a call to another page and every return are
 * block lookups; a firing that goes to C makes one call (the frame is
 * built in the slot, not in a shared routine). Below the pushal and
 * segment pushes lies exactly a struct trapframe (trapframe.h) of a
 * ring-0 trap at the site: the stack pointer at the site is the address
 * just above eflags (trapframe_sp), and record_fire and probe programs
 * read it as they read a trap's. The records and programs only read the
 * frame (an entry whose return rides on it writes the return address's
 * slot, above the frame: opt_return.c), so the general registers pop back
 * unchanged, and the displaced instructions then run natively, on
 * exactly the state they would have met at the site.
 *
 * In check mode (opt_check.c) a slot is written with opt_common_checked
 * in the call and no counting path, the copy at OPT_COPY_OFFSET_CHECKED:
 *
 *     pushfl; cli; pushl %cs; pushl $site; pushl $probe
 *     call  opt_common_checked records, keeps the state before, clears IF
 *     leal  12(%esp), %esp     in the frame, so the copies run masked
 *     popfl
 *   copy:
 *     <the displaced instructions>
 *     pushfl                   the copies' eflags (IF still clear)
 *     pushl %cs
 *     pushl $site + len        the frame's eip: where the copies ended
 *     pushl $probe
 *     call  opt_common_after   records both states, puts IF back
 *     leal  12(%esp), %esp
 *     popfl
 *     jmp   site + len
 *
 * Only such slots carry the second call: check mode off, the detour is
 * the plain one above.
 *
 * An entry whose return rides on it (opt_return.c) must trampoline its
 * calls, so its slot's counting path begins with a jmp to
 * OPT_RIDE_OFFSET (a record still goes to slow from the tests before
 * it), where opt_detour.c copies opt_ride_template (below) with the two
 * probes' addresses patched in: a null firing, no stamps, the return probe
 * enabled and riding, the thread on its own stack with a shadow stack
 * that has room — then the call is trampolined and the entry counted
 * there, as i386_opt_fire and opt_return_enter would, and the template
 * pops eflags and jumps back to the copy; anything else (a record, a
 * first call that claims a stack, a full one, the boot thread) goes to
 * slow, to C, which does it all. Under TCG that makes a riding null
 * entry cost what a counting one does, plus some twenty instructions:
 * no call, no return, no frame.
 */
#include "opt.h"

	.section .text.notrace.opt, "ax"
	.balign	4096
	.global	opt_detours, opt_detours_end
	.global	opt_common_checked, opt_common_after
opt_detours:
	.fill	OPT_SLOTS * OPT_DETOUR_BYTES, 1, 0xcc
opt_detours_end:
	.balign	4096

/*
 * The riding entry's counting path, copied into a slot at OPT_RIDE_OFFSET
 * (never run here). Entered with eflags pushed and interrupts masked;
 * the stack pointer at the site is 4(%esp), 20(%esp) once the four
 * registers are saved. The immediates ending at opt_ride_entry and
 * opt_ride_return are the entry probe and its riding return probe; the
 * rel32s ending at opt_ride_to_copy and opt_ride_to_slow, the slot's copy
 * and its way into C.
 */
	.section .rodata
	.global	opt_ride_template, opt_ride_template_end
	.global	opt_ride_entry, opt_ride_return, opt_ride_to_copy, opt_ride_to_slow
opt_ride_template:
	pushl	%eax
	pushl	%ebx
	pushl	%ecx
	pushl	%edx
	movl	$0, %edx
opt_ride_entry:
	/* Each test a branch, each branch the end of a block under TCG:
	 * fields side by side are tested together (opt_return.S). The
	 * slot tested gate, action and stamps before it jumped here. */
	cmpb	$OPT_PROBE_ENABLED, OPT_PROBE_STATE(%edx)
	jne	1f                 /* late: C says so */
	movl	$0, %eax
opt_ride_return:
	OPT_RIDING %eax, %ebx, 1f
	/* On the current thread's own stack (opt_return_own_stack: its
	 * pages, or the boot thread's boot stack, mapped either way; a
	 * secondary CPU's idle thread goes to C), with a shadow stack that
	 * has room. */
	movl	%fs:OPT_CPU_CURRENT, %ecx
	leal	20(%esp), %ebx
	cmpl	$0, OPT_THREAD_STACK(%ecx)
	jne	3f
	cmpl	$boot_stack, %ebx  /* the boot thread: the only one with none */
	jb	1f
	cmpl	$boot_stack_top, %ebx
	jae	1f
	jmp	4f
3:	subl	OPT_THREAD_STACK(%ecx), %ebx
	cmpl	OPT_THREAD_STACK_SIZE(%ecx), %ebx
	jae	1f
4:	movl	ret_slot, %ebx
	movl	OPT_THREAD_SLOT(%ecx,%ebx,4), %ebx  /* shadow stack index + 1 */
	testl	%ebx, %ebx
	jz	1f                 /* none yet: C claims one */
	imull	$OPT_RET_STACK, %ebx, %ebx
	leal	ret_stacks - OPT_RET_STACK(%ebx), %ebx
	movl	OPT_RET_DEPTH(%ebx), %ecx
	cmpl	$OPT_RET_DEPTH_MAX, %ecx
	jb	2f                 /* full: C falls back to the int3 */
1:	popl	%edx               /* to C (here: every jump to it is short) */
	popl	%ecx
	popl	%ebx
	popl	%eax
	.byte	0xe9               /* jmp slow */
	.long	0
opt_ride_to_slow:
2:	OPT_RIDE_PUSH %eax, %ebx, %ecx, %eax, 20(%esp)
	OPT_COUNT_FIRING %edx, %ecx, %eax
	popl	%edx
	popl	%ecx
	popl	%ebx
	popl	%eax
	popfl
	.byte	0xe9               /* jmp copy */
	.long	0
opt_ride_to_copy:
opt_ride_template_end:

/* A trapframe below the slot's pushes, fn(frame), every register back. */
.macro	opt_call fn
	pushal
	pushl	%ds
	pushl	%es
	pushl	%fs
	pushl	%gs
	pushl	%esp
	call	\fn
	addl	$20, %esp          /* the argument and the segment registers */
	popal
	ret
.endm

	.section .text.notrace.opt, "ax"
opt_common_checked:
	opt_call i386_opt_fire_checked

opt_common_after:
	opt_call i386_opt_after
