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
 *     cmpb $0, probe.gated     a probe that counts only, and no stage
 *     jne slow                 stamps asked for: counted here, as
 *     cmpb $NULL, probe.action tracer_fire_count does (tracer.h), in its
 *     jne slow                 CPU's row of tracer_hits and the CPU's
 *     cmpl $0, tracer_stamp_cpu  tracer_fired: %fs:id and the increments
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
 *   slow:                      (OPT_SLOW_OFFSET)
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

opt_common_checked:
	opt_call i386_opt_fire_checked

opt_common_after:
	opt_call i386_opt_after
