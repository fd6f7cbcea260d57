/*
 * tramp_slots.S — the trampolines of sparc64's trap-free probes (tramp.c):
 * the slots and the template each is copied from. A slot opens a window
 * of its own (`save`: the site's %o are its %i), masks interrupts, and
 * counts a probe that only counts where tracer_fire_count would, with no
 * call and no condition code written; any other firing takes its way into
 * C (below). Then it puts %pstate back, `restore`s into the site's window
 * and runs its tail: for an entry `ba site + 4` with the displaced word in
 * its delay slot; for a return the ret/retl/return and its delay slot. The
 * last two tail words are check mode's (tramp_check.c). The probe's address is
 * the slot's last doubleword, read with `rd %pc`; the way into C is in
 * every slot, its call direct (re-aimed per slot): under TCG each indirect
 * jump is a block lookup, and a shared routine costs two per firing.
 */
#include "arch/sparc64.h"
#include "arch/trapframe.h"
#include "tramp.h"

	.register %g2, #scratch
	.register %g3, #scratch
	.register %g6, #scratch
	.register %g7, #scratch

	.section .text.notrace.tramp, "ax"
	.align	8192
	.global	tramp_slots, tramp_slots_end
tramp_slots:
	.fill	TRAMP_SLOTS * TRAMP_SLOT_WORDS, 4, 0x003fffff
tramp_slots_end:
	.align	8192

	.global	tramp_template, tramp_template_end
	.align	8
tramp_template:
	save	%sp, -(STACK_FRAME + TF_SIZE), %sp
	rd	%pc, %l0
	ldx	[%l0 + (4 * TRAMP_PROBE_WORD - 4)], %l0
	rdpr	%pstate, %l7
	andn	%l7, PSTATE_IE, %l6
	wrpr	%l6, 0, %pstate
	ldub	[%l0 + TRAMP_P_GATED], %l1
	ldub	[%l0 + TRAMP_P_ACTION], %l2
	xor	%l2, TRAMP_ACTION_NULL, %l2
	or	%l1, %l2, %l1
	ldub	[%l0 + TRAMP_P_STATE], %l2
	xor	%l2, TRAMP_ENABLED, %l2
	or	%l1, %l2, %l1
	sethi	%hi(tracer_stamp_cpu), %l3
	lduw	[%l3 + %lo(tracer_stamp_cpu)], %l3
	or	%l1, %l3, %l1
	brnz,pn	%l1, 2f
	 lduw	[%l0 + TRAMP_P_ID], %l4
	sethi	%hi(cpus), %l3
	or	%l3, %lo(cpus), %l3
	lduw	[%l3 + TRAMP_CPU_ID], %l3
	sllx	%l3, TRAMP_HITS_SHIFT, %l5
	sllx	%l4, 3, %l4
	add	%l5, %l4, %l5
	sethi	%hi(tracer_hits), %l4
	or	%l4, %lo(tracer_hits), %l4
	ldx	[%l4 + %l5], %l2
	add	%l2, 1, %l2
	stx	%l2, [%l4 + %l5]
	sllx	%l3, TRAMP_FIRED_SHIFT, %l3
	sethi	%hi(tracer_fired), %l4
	or	%l4, %lo(tracer_fired), %l4
	ldx	[%l4 + %l3], %l2
	add	%l2, 1, %l2
	stx	%l2, [%l4 + %l3]
1:	wrpr	%l7, 0, %pstate
	restore
tramp_t_tail:
	.word	0x003fffff, 0x003fffff, 0x003fffff, 0x003fffff  /* per slot */
	/* The way into C, in the slot's window: %l0 the probe, %l7 PSTATE at
	 * the site. It builds a struct trapframe of the state at the site
	 * (trapframe.h: TPC the site, its %o, %g, %y, CCR and PSTATE in
	 * TSTATE) on the slot's frame for sparc64_tramp_fire, which records
	 * as a trap would; the globals, %y and CCR go back. First, where the
	 * firing reads them (a program, a site whose record does: fire.c's
	 * load_state's test, or check mode), the site's %l and %i into its
	 * window's save area, as trap_entry stores a trapped window's
	 * (trapframe.h: where C reads them, no flushw): a restore into it (a
	 * fill, if an interrupt spilled it), the stores, and the save back
	 * into the slot's window, whose registers the pair leaves as they
	 * were (CLEANWIN is past CANRESTORE: no clean_window). */
2:	ldub	[%l0 + TRAMP_P_GATED], %l1
	ldub	[%l0 + TRAMP_P_WINDOW], %l2
	or	%l1, %l2, %l1
	ldub	[%l0 + TRAMP_P_CHECKED], %l2
	or	%l1, %l2, %l1
	brz,pt	%l1, 3f
	 nop
	restore
	STORE_WINDOW
	save	%sp, -(STACK_FRAME + TF_SIZE), %sp
3:	add	%sp, STACK_BIAS + STACK_FRAME, %l5
	rd	%ccr, %l1
	sllx	%l1, 32, %l1
	sllx	%l7, 8, %l2
	or	%l1, %l2, %l1
	stx	%l1, [%l5 + TF_TSTATE]
	ldx	[%l0 + TRAMP_P_ADDR], %l2
	stx	%l2, [%l5 + TF_TPC]
	add	%l2, 4, %l2
	stx	%l2, [%l5 + TF_TNPC]
	stx	%g0, [%l5 + TF_TT]
	stx	%g0, [%l5 + TF_TL]
	rd	%y, %l2
	stx	%l2, [%l5 + TF_Y]
	stx	%i0, [%l5 + TF_O + 0x00]
	stx	%i1, [%l5 + TF_O + 0x08]
	stx	%i2, [%l5 + TF_O + 0x10]
	stx	%i3, [%l5 + TF_O + 0x18]
	stx	%i4, [%l5 + TF_O + 0x20]
	stx	%i5, [%l5 + TF_O + 0x28]
	stx	%i6, [%l5 + TF_O + 0x30]
	stx	%i7, [%l5 + TF_O + 0x38]
	stx	%g0, [%l5 + TF_G + 0x00]
	stx	%g1, [%l5 + TF_G + 0x08]
	stx	%g2, [%l5 + TF_G + 0x10]
	stx	%g3, [%l5 + TF_G + 0x18]
	stx	%g4, [%l5 + TF_G + 0x20]
	stx	%g5, [%l5 + TF_G + 0x28]
	stx	%g6, [%l5 + TF_G + 0x30]
	stx	%g7, [%l5 + TF_G + 0x38]
	stx	%g0, [%l5 + TF_SAVE_SP]
	stx	%g0, [%l5 + TF_RESTORE2]
	mov	%l0, %o1
tramp_t_call:
	call	sparc64_tramp_fire          /* written per slot: PC-relative */
	 mov	%l5, %o0
	ldx	[%l5 + TF_G + 0x08], %g1
	ldx	[%l5 + TF_G + 0x10], %g2
	ldx	[%l5 + TF_G + 0x18], %g3
	ldx	[%l5 + TF_G + 0x20], %g4
	ldx	[%l5 + TF_G + 0x28], %g5
	ldx	[%l5 + TF_G + 0x30], %g6
	ldx	[%l5 + TF_G + 0x38], %g7
	ldx	[%l5 + TF_Y], %l2
	wr	%l2, 0, %y
	srlx	%l1, 32, %l2
	wr	%l2, 0, %ccr
	/* PSTATE for the slot to put back, as C left it in the frame (check
	 * mode clears IE there until the mark after the displaced word) */
	ldx	[%l5 + TF_TSTATE], %l7
	srlx	%l7, 8, %l7
	and	%l7, 0xfff, %l7
	ba,a	1b
tramp_t_probe:
	.xword	0
tramp_template_end:

	.ifne	(tramp_t_tail - tramp_template) - 4 * TRAMP_TAIL
	.error	"tramp.h: TRAMP_TAIL is not the template's tail"
	.endif
	.ifne	(2b - tramp_template) - 4 * TRAMP_SLOW_WORD
	.error	"tramp.h: TRAMP_SLOW_WORD is not the template's way into C"
	.endif
	.ifne	(tramp_t_call - tramp_template) - 4 * TRAMP_CALL_WORD
	.error	"tramp.h: TRAMP_CALL_WORD is not the template's call"
	.endif
	.ifne	(tramp_t_probe - tramp_template) % 8
	.error	"tramp_slots.S: the probe word must be 8-aligned"
	.endif
	.ifne	(tramp_t_probe - tramp_template) - 4 * TRAMP_PROBE_WORD
	.error	"tramp.h: TRAMP_PROBE_WORD is not the template's probe word"
	.endif
	.ifne	(tramp_template_end - tramp_template) - 4 * TRAMP_SLOT_WORDS
	.error	"tramp.h: TRAMP_SLOT_WORDS is not the template's size"
	.endif
