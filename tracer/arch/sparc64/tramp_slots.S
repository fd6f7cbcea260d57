/*
 * tramp_slots.S — the trampolines of sparc64's trap-free probes (tramp.c):
 * the slots and the template each is copied from. A slot opens a window
 * of its own (`save`: the site's %o are its %i), masks interrupts, and
 * counts a probe that only counts where tracer_fire_count would, with no
 * call and no condition code written; a plain probe's ENTRY or RETURN
 * record it writes into the ring itself, as the C writer would (the
 * recording path: tramp_fast.c); any other firing takes its way into C
 * (below). Then it puts %pstate back, `restore`s into the site's window
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
4:	sethi	%hi(cpus), %l3
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
	/* The recording path, for a plain probe (site.fast: its kind, set at
	 * arming; 0 sends every firing to C): no program, no gate, action
	 * RECORD, enabled, argument words where the convention puts them, no
	 * stamps, not inside a firing, this CPU's ring written by virtual
	 * address, nothing lost owed, and room for the record where the C
	 * writer would put it with nothing else to do first: in a byte ring
	 * before its end (no PAD) with no kick of the drain owed (put(),
	 * buffer.c); in the open sub-buffer under the shm channel (no commit,
	 * no open: subbuf_put, ring.h). It writes what they write, then
	 * publishes as they do: a byte ring's head after the record (SPARC's
	 * TSO keeps the stores in order, as the C's compiler barrier does);
	 * a sub-buffer's off and count, which its commit (C, with its release
	 * store) later hands over whole. Then it counts as the counting path.
	 * Registers: the slot's %l and %o; no condition code is written (the
	 * tests are on registers) and the globals are only read. A test that
	 * fails goes into C before anything is stored. */
2:	ldub	[%l0 + TRAMP_P_FAST], %l1
	brz,pn	%l1, 5f
	 ldub	[%l0 + TRAMP_P_GATED], %l2
	ldub	[%l0 + TRAMP_P_ACTION], %l3     /* TRAMP_ACTION_RECORD: 0 */
	or	%l2, %l3, %l2
	ldub	[%l0 + TRAMP_P_STATE], %l3
	xor	%l3, TRAMP_ENABLED, %l3
	or	%l2, %l3, %l2
	ldub	[%l0 + TRAMP_P_NARGMAP], %l3
	or	%l2, %l3, %l2
	sethi	%hi(tracer_stamp_cpu), %l3
	lduw	[%l3 + %lo(tracer_stamp_cpu)], %l3
	or	%l2, %l3, %l2
	sethi	%hi(reentry_test), %l3
	lduw	[%l3 + %lo(reentry_test)], %l3
	or	%l2, %l3, %l2
	sethi	%hi(cpus), %o5                  /* this CPU (arch_this_cpu) */
	or	%o5, %lo(cpus), %o5
	lduw	[%o5 + TRAMP_CPU_ID], %l3
	sllx	%l3, TRAMP_FIRED_SHIFT, %o4
	sethi	%hi(tracer_fired), %o3
	or	%o3, %lo(tracer_fired), %o3
	add	%o3, %o4, %o3
	ldub	[%o3 + TRAMP_F_IN_FIRE], %o4
	or	%l2, %o4, %l2
	mulx	%l3, TRAMP_T_BYTES, %o4
	sethi	%hi(tcpu), %l5
	or	%l5, %lo(tcpu), %l5
	add	%l5, %o4, %l5                   /* t: tcpu[cpu] */
	ldx	[%l5 + TRAMP_T_PHYS], %o4       /* ... the sub-buffers' too */
	or	%l2, %o4, %l2
	lduw	[%l5 + TRAMP_T_LOST], %o4
	or	%l2, %o4, %l2
	ldub	[%l0 + TRAMP_P_NARGS], %o1      /* an entry's argument words */
	sub	%l1, TRAMP_FAST_RETURN, %o4
	movrz	%o4, 1, %o1                     /* a return's one value word */
	sub	%o1, 7, %o4                     /* past %i5: C */
	movrgez	%o4, 1, %l2
	brnz,pn	%l2, 5f
	 add	%o1, 2, %o1                     /* nwords: PC, SP and those */
	sllx	%o1, 3, %o2
	add	%o2, 16, %o2                    /* len, the header's 16 bytes on */
	ldub	[%l5 + TRAMP_T_SB_ON], %l3      /* the ring's form, kept */
	brnz,pt	%l3, 7f
	 ldub	[%l5 + TRAMP_T_SB_OPEN], %o4
	ldx	[%l5 + TRAMP_T_DATA], %o0       /* a byte ring */
	brz,pn	%o0, 5f
	 lduw	[%l5 + TRAMP_T_HEAD], %o3
	lduw	[%l5 + TRAMP_T_SIZE], %l2
	sub	%l2, 1, %o4
	and	%o3, %o4, %o4                   /* off */
	sub	%l2, %o4, %o7                   /* contig: no PAD here, C pads */
	sub	%o7, %o2, %o7
	brlz,pn	%o7, 5f
	 add	%o0, %o4, %o0                   /* the record's address */
	lduw	[%l5 + TRAMP_T_TAIL], %o4
	sub	%o3, %o4, %o4
	srl	%o4, 0, %o4                     /* head - tail, mod 2^32 */
	sub	%l2, %o4, %o7
	sub	%o7, %o2, %o7                   /* room */
	brlz,pn	%o7, 5f
	 add	%o4, %o2, %o4
	srl	%l2, 1, %o7
	sub	%o7, %o4, %o7                   /* < 0: past half full */
	ldub	[%l5 + TRAMP_T_KICKED], %o4
	movrnz	%o4, 0, %o7                     /* ... and the kick done */
	brlz,pn	%o7, 5f
	 nop
	ba,a,pt	%xcc, 8f
7:	brz,pn	%o4, 5f                         /* sub-buffers: none open, C's */
	 lduw	[%l5 + TRAMP_T_SB_OFF], %o3
	lduw	[%l5 + TRAMP_T_SB_SUBBUF], %o7
	sub	%o7, %o3, %o7
	sub	%o7, %o2, %o7
	brlz,pn	%o7, 5f                         /* full: C commits it */
	 ldx	[%l5 + TRAMP_T_SB_CUR], %o0
	add	%o0, %o3, %o0                   /* the record's address */
	/* A return's value into %l6 (tramp_fast.c's words, per slot): the
	 * site's %l/%i copied by a restore/save pair (save's rd is in the
	 * slot's window, its operand in the site's; the pair leaves the
	 * slot's other registers as they were), then the delay slot's
	 * operation on them. An entry's five words are nops. */
8:
tramp_t_value:
	nop
	nop
	nop
	nop
	nop
	rd	%tick, %l2
	sllx	%l2, 1, %l2
	srlx	%l2, 1, %l2                     /* cycles: arch_cycles, NPT off */
	stb	%l1, [%o0]                      /* kind */
	stb	%o1, [%o0 + 1]                  /* nwords */
	ldx	[%o5 + TRAMP_CPU_CURRENT], %o4
	lduw	[%o4 + TRAMP_THREAD_ID], %o4
	sth	%o4, [%o0 + 2]                  /* thread */
	stw	%l4, [%o0 + 4]                  /* probe */
	stx	%l2, [%o0 + 8]
	ldx	[%l0 + TRAMP_P_ADDR], %o4
	stx	%o4, [%o0 + 16]                 /* PC */
	add	%i6, STACK_BIAS, %o4
	stx	%o4, [%o0 + 24]                 /* SP */
	sub	%l1, TRAMP_FAST_RETURN, %o4
	brz,a,pn %o4, 6f
	 stx	%l6, [%o0 + 32]                 /* a return's value */
	sub	%o1, 3, %o4                     /* an entry's arguments, */
	brlz,pn	%o4, 6f                         /* none past the room checked */
	 nop
	stx	%i0, [%o0 + 32]
	brz,pn	%o4, 6f
	 sub	%o4, 1, %o4
	stx	%i1, [%o0 + 40]
	brz,pn	%o4, 6f
	 sub	%o4, 1, %o4
	stx	%i2, [%o0 + 48]
	brz,pn	%o4, 6f
	 sub	%o4, 1, %o4
	stx	%i3, [%o0 + 56]
	brz,pn	%o4, 6f
	 sub	%o4, 1, %o4
	stx	%i4, [%o0 + 64]
	brz,pn	%o4, 6f
	 nop
	stx	%i5, [%o0 + 72]
6:	brnz,pt	%l3, 9f
	 add	%o3, %o2, %o4
	ba,pt	%xcc, 10f
	 stw	%o4, [%l5 + TRAMP_T_HEAD]       /* published */
9:	lduw	[%l5 + TRAMP_T_SB_COUNT], %o7   /* as subbuf_put's tail */
	brz,a,pn %o7, .+8
	 stx	%l2, [%l5 + TRAMP_T_SB_FIRST]   /* its first record */
	add	%o7, 1, %o7
	stw	%o7, [%l5 + TRAMP_T_SB_COUNT]
	stx	%l2, [%l5 + TRAMP_T_SB_LAST]
	stw	%o3, [%l5 + TRAMP_T_SB_LAST_OFF]
	stw	%o4, [%l5 + TRAMP_T_SB_OFF]
10:	ldx	[%l5 + TRAMP_T_RECORDED], %o4
	add	%o4, 1, %o4
	ba,pt	%xcc, 4b                        /* counted as the counting path */
	 stx	%o4, [%l5 + TRAMP_T_RECORDED]
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
5:	ldub	[%l0 + TRAMP_P_GATED], %l1
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
	.ifne	(2b - tramp_template) - 4 * TRAMP_FAST_WORD
	.error	"tramp.h: TRAMP_FAST_WORD is not the template's recording path"
	.endif
	.ifne	(5b - tramp_template) - 4 * TRAMP_SLOW_WORD
	.error	"tramp.h: TRAMP_SLOW_WORD is not the template's way into C"
	.endif
	.ifne	(tramp_t_value - tramp_template) - 4 * TRAMP_VALUE_WORD
	.error	"tramp.h: TRAMP_VALUE_WORD is not the template's value words"
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
