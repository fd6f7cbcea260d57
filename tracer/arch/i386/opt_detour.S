/*
 * opt_detour.S — where a jump-optimized probe (`opt`, opt.c) goes: the
 * detour slots and the code they all call.
 *
 * Each opt probe owns one OPT_DETOUR_BYTES slot of opt_detours, on pages
 * of their own inside the tracer's text (executable, never probed, written
 * through the text alias before the site's jmp points at it; pages of
 * their own so that writing a slot never throws away the translations of
 * the fire path's code). opt.c writes a slot as
 *
 *     pushfl                   eflags as at the site
 *     cli                      one producer per CPU buffer while recording
 *     pushl %cs
 *     pushl $site              the frame's eip: the probed address
 *     pushl $probe             the frame's error slot: the probe
 *     call  opt_common         the frame's vector slot: the way back
 *     leal  12(%esp), %esp     drop error, eip, cs (leal: flags untouched)
 *     popfl                    eflags (and IF) back as they were
 *   copy:
 *     <the displaced instructions, byte for byte>
 *     jmp   site + len
 *
 * so that below opt_common's pushal and segment pushes lies exactly a
 * struct trapframe (trapframe.h) of a ring-0 trap at the site: the stack
 * pointer at the site is the address just above eflags (trapframe_sp),
 * and record_fire and probe programs read it as they read a trap's. The
 * records and programs only read the frame, so opt_common pops the
 * general registers back unchanged, and the displaced instructions then
 * run natively, on exactly the state they would have met at the site.
 *
 * A probe that only counts is counted in opt_common itself (below),
 * with no frame built and no call into C.
 *
 * In check mode (opt_check.c) a slot is written with opt_common_checked
 * in the call, which also keeps the state before and clears IF in the
 * frame, so the copies run with interrupts masked; and after the copy:
 *
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
 * the one above, byte for byte.
 */
#include "opt.h"

	.section .text.notrace.opt, "ax"
	.balign	4096
	.global	opt_detours, opt_detours_end, opt_common
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

/*
 * A probe that counts only (no program, pass or maximum; action null:
 * tracer_counts_only) is counted here, in assembly, when no stage stamps
 * are asked for: its row of tracer_hits and the CPU's tracer_fired, as
 * tracer_fire_count does. Interrupts are masked since the slot's cli, so
 * the thread cannot move to another CPU between reading %fs:id and the
 * increments, and nothing else writes this CPU's row. Every other firing
 * builds the trapframe and goes to i386_opt_fire. At entry: the return
 * into the slot, the probe, the site, %cs, eflags.
 */
opt_common:
	pushl	%eax
	movl	8(%esp), %eax                   /* the probe */
	cmpb	$0, OPT_PROBE_GATED(%eax)
	jne	1f
	cmpb	$OPT_ACTION_NULL, OPT_PROBE_ACTION(%eax)
	jne	1f
	cmpl	$0, tracer_stamp_cpu
	jne	1f
	pushl	%ecx
	movl	OPT_PROBE_ID(%eax), %eax
	movl	%fs:OPT_CPU_ID, %ecx
	imull	$OPT_HITS_ROW, %ecx, %ecx
	incl	tracer_hits(%ecx, %eax, 4)
	movl	%fs:OPT_CPU_ID, %ecx
	shll	$OPT_FIRED_SHIFT, %ecx
	addl	$1, tracer_fired(%ecx)          /* a 64-bit count */
	adcl	$0, tracer_fired+4(%ecx)
	popl	%ecx
	popl	%eax
	ret
1:	popl	%eax
	opt_call i386_opt_fire

opt_common_checked:
	opt_call i386_opt_fire_checked

opt_common_after:
	opt_call i386_opt_after
