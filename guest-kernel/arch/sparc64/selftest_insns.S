/*
 * selftest_insns.S — instructions the sparc64 self-tests trap on, each at
 * a global label so a test can check the exact TPC the CPU reported.
 * Each is a C function `void st_x(void *arg)`. The .usertext ones run in
 * user mode (entered through st_enter_user), on the one page mapped
 * without TTE.P, to reach the traps only unprivileged code can raise.
 * st_patch_target is the code the alias test rewrites and then runs.
 */
#include "sparc64.h"
#include "selftest_sparc64.h"

	.register %g2, #scratch

	.text
	.align	32
	.global	st_illtrap_insn
FUNC(st_illtrap)
st_illtrap_insn:
	illtrap	ST_ILLTRAP_CONST
	retl
	 nop
	END(st_illtrap)

	.global	st_illtrap_max_insn
FUNC(st_illtrap_max)
	nop
st_illtrap_max_insn:
	illtrap	0x3fffff			/* the largest const22 */
	retl
	 nop
	END(st_illtrap_max)

	.global	st_divzero_insn
FUNC(st_divzero)
	mov	7, %o1
st_divzero_insn:
	udivx	%o1, %g0, %o1
	retl
	 nop
	END(st_divzero)

	.global	st_load64_insn
FUNC(st_load64)
st_load64_insn:
	ldx	[%o0], %o1
	retl
	 nop
	END(st_load64)

	.global	st_load_disp_insn
FUNC(st_load_disp)
st_load_disp_insn:
	ldub	[%o0 + ST_DISP], %o1		/* rs1 + simm13 */
	retl
	 nop
	END(st_load_disp)

	/* rs1 + rs2, both locals: decoding the fault address needs the
	 * trapped window's %l registers, i.e. its flushed save area. */
	.global	st_load_locals_insn
FUNC(st_load_locals)
	save	%sp, -STACK_FRAME, %sp
	mov	%i0, %l3
	mov	ST_DISP, %l5
st_load_locals_insn:
	lduw	[%l3 + %l5], %l0
	ret
	 restore
	END(st_load_locals)

	.global	st_store8_insn
FUNC(st_store8)
	mov	0x5a, %o1
st_store8_insn:
	stb	%o1, [%o0]
	retl
	 nop
	END(st_store8)

	.global	st_store32_insn
FUNC(st_store32)
st_store32_insn:
	st	%g0, [%o0]
	retl
	 nop
	END(st_store32)

	.global	st_ta_insn
FUNC(st_ta)
st_ta_insn:
	ta	ST_SOFTWARE_TRAP
	retl
	 nop
	END(st_ta)

/* st_enter_user(fn): continue at fn in user mode — PSTATE.PRIV and IE
 * clear, same window and stack — by faking a trap return: TL 1 with
 * TSTATE.PSTATE = 0, TPC = fn, then `retry`. fn never returns; it traps. */
FUNC(st_enter_user)
	wrpr	%g0, PSTATE_PRIV, %pstate	/* no interrupt at TL 1 */
	rdpr	%cwp, %g1
	sethi	%hi(0x80000000), %g2		/* TSTATE.ASI = 0x80, ASI_PRIMARY */
	or	%g1, %g2, %g1
	wrpr	%g0, 1, %tl
	wrpr	%g1, 0, %tstate
	wrpr	%o0, 0, %tpc
	add	%o0, 4, %o0
	wrpr	%o0, 0, %tnpc
	retry
	END(st_enter_user)

	.section .usertext, "ax"
	.global	st_user_rdpr_insn
FUNC(st_user_rdpr)
st_user_rdpr_insn:
	rdpr	%pstate, %o0			/* privileged_opcode */
	illtrap	0				/* reached only if it did not trap */
	END(st_user_rdpr)

	.global	st_user_asi_insn
FUNC(st_user_asi)
st_user_asi_insn:
	lduba	[%g0] ASI_PHYS_BYPASS_EC_E, %o0	/* restricted ASI: privileged_action */
	illtrap	0
	END(st_user_asi)

	.text
	.align	8
	.global	st_patch_insn
FUNC(st_patch_target)
	retl
st_patch_insn:
	 mov	1, %o0				/* its simm13 gets patched */
	END(st_patch_target)

/*
 * Register-window tests. Each builds a few windows with known locals and
 * returns their sum; interrupts must be off (the caller masks them), so
 * that nothing else moves windows meanwhile.
 *
 * st_spill_other(&count): three windows deep, reclassify every resident
 * window below as "other" (CANRESTORE -> OTHERWIN) and flushw: each is
 * spilled by spill_0_other. *count = how many. Returning fills them back
 * with fill_0_normal.
 */
FUNC(st_spill_other)
	save	%sp, -STACK_FRAME, %sp
	mov	0xa1, %l0
	mov	0xa7, %l7
	call	1f
	 mov	%i0, %o0
	add	%o0, %l0, %i0
	add	%i0, %l7, %i0
	ret
	 restore
1:	save	%sp, -STACK_FRAME, %sp
	mov	0xb1, %l0
	mov	0xb7, %l7
	call	2f
	 mov	%i0, %o0
	add	%o0, %l0, %i0
	add	%i0, %l7, %i0
	ret
	 restore
2:	save	%sp, -STACK_FRAME, %sp
	rdpr	%canrestore, %l1
	wrpr	%g0, 0, %canrestore
	wrpr	%l1, 0, %otherwin
	flushw
	stx	%l1, [%i0]
	clr	%i0
	ret
	 restore
	END(st_spill_other)

/*
 * st_fill_other(): two windows deep, flushw, then call the caller's window
 * "other" (CANSAVE - 1, OTHERWIN 1): returning into it takes fill_0_other.
 */
FUNC(st_fill_other)
	save	%sp, -STACK_FRAME, %sp
	mov	0xc1, %l0
	mov	0xc7, %l7
	call	1f
	 nop
	add	%o0, %l0, %i0
	add	%i0, %l7, %i0
	ret
	 restore
1:	save	%sp, -STACK_FRAME, %sp
	flushw
	rdpr	%cansave, %l1
	sub	%l1, 1, %l1
	wrpr	%l1, 0, %cansave
	wrpr	%g0, 1, %otherwin
	clr	%i0
	ret
	 restore
	END(st_fill_other)

/*
 * st_clean_window(): fill the next window with ones, come back, set
 * CLEANWIN = CANRESTORE so that no clean window is left, and `save` into it
 * again: clean_window must zero it first. Returns the OR of that window's
 * %l0-%l7, %o0-%o5, %o7 (0 when cleaned); restores CLEANWIN = NWINDOWS-1.
 */
FUNC(st_clean_window)
	save	%sp, -STACK_FRAME, %sp
	save	%sp, -STACK_FRAME, %sp
	mov	-1, %l0
	mov	-1, %l1
	mov	-1, %l2
	mov	-1, %l3
	mov	-1, %l4
	mov	-1, %l5
	mov	-1, %l6
	mov	-1, %l7
	mov	-1, %o0
	mov	-1, %o1
	mov	-1, %o2
	mov	-1, %o3
	mov	-1, %o4
	mov	-1, %o5
	mov	-1, %o7
	restore
	rdpr	%canrestore, %l1
	wrpr	%l1, 0, %cleanwin
	save	%sp, -STACK_FRAME, %sp		/* clean_window, then the save */
	or	%l0, %l1, %g1
	or	%g1, %l2, %g1
	or	%g1, %l3, %g1
	or	%g1, %l4, %g1
	or	%g1, %l5, %g1
	or	%g1, %l6, %g1
	or	%g1, %l7, %g1
	or	%g1, %o0, %g1
	or	%g1, %o1, %g1
	or	%g1, %o2, %g1
	or	%g1, %o3, %g1
	or	%g1, %o4, %g1
	or	%g1, %o5, %g1
	or	%g1, %o7, %g1
	restore
	rdpr	%ver, %l1
	and	%l1, 0x1f, %l1
	wrpr	%l1, 0, %cleanwin
	mov	%g1, %i0
	ret
	 restore
	END(st_clean_window)
