/*
 * forms.S — sparc64 functions made of every instruction class the probe
 * emulator handles, so that a traced run of the `forms` workload (forms.c
 * calls them n times and checks each answer against its own C model) and
 * check mode see them all: `save` entries; returns by `ret; restore`,
 * `retl` and the V9 `return`; CALL; JMPL reg+reg and reg+imm; Bicc, BPcc
 * (icc and xcc), BPr, FBfcc and FBPfcc (fcc0..fcc3), taken and untaken,
 * annulled and not. Every branch's outcome depends on the argument, and
 * each path adds a distinct bit to the answer, so a wrong PC, nPC or annul
 * gives a wrong answer as well as a check-mode mismatch.
 *
 * fm_fp turns the FPU on for itself (PSTATE.PEF, FPRS.FEF) and sets the
 * four fcc fields from its argument with `ldx %fsr`; it puts PSTATE and
 * FPRS back before it returns. Nothing else in the kernel keeps FP state,
 * so it is not saved.
 */
#include "sparc64.h"
	.register %g2, #scratch
	.text
	.align	32

/* uint64_t fm_leaf(uint64_t x): x + 1, frameless, `retl`. */
FUNC(fm_leaf)
	retl
	 add	%o0, 1, %o0
END(fm_leaf)

/* uint64_t fm_cti(uint64_t x): the integer CTIs (see forms.c's model). */
FUNC(fm_cti)
	save	%sp, -STACK_FRAME, %sp
	mov	%i0, %l0
	cmp	%i0, 5
	bl,a	1f                      /* Bicc, annulled when untaken */
	 add	%l0, 1, %l0
	add	%l0, 2, %l0
1:	andcc	%i0, 1, %g0
	be,pn	%xcc, 2f                /* BPcc xcc, slot always runs */
	 add	%l0, 4, %l0
	bne,a,pt %icc, 2f               /* BPcc icc, annul */
	 add	%l0, 8, %l0
2:	brz,a,pn %i0, 3f                /* BPr, annul */
	 add	%l0, 16, %l0
	brgez	%i0, 3f                 /* BPr, always taken here */
	 nop
3:	call	fm_leaf                 /* CALL */
	 mov	%l0, %o0
	set	fm_leaf, %l1
	jmpl	%l1 + %g0, %o7          /* JMPL reg+reg */
	 nop
	jmpl	%l1 + 0, %o7            /* JMPL reg+imm */
	 nop
	ret                             /* JMPL %i7+8 */
	 restore %o0, 0, %o0
END(fm_cti)

/* uint64_t fm_fp(uint64_t x): the FP branches on fcc0..3 = x's bit pairs
 * 1:0, 3:2, 5:4, 7:6 (see forms.c's model); returns by `return`. */
FUNC(fm_fp)
	save	%sp, -(STACK_FRAME + 16), %sp
	rdpr	%pstate, %l6
	or	%l6, PSTATE_PEF, %l5
	wrpr	%l5, 0, %pstate
	rd	%fprs, %l7
	or	%l7, 4, %l5                 /* FEF */
	wr	%l5, 0, %fprs
	and	%i0, 3, %l1                 /* fcc0: bits 11:10 */
	sllx	%l1, 10, %l2
	srlx	%i0, 2, %l1                 /* fcc1..3: bits 37:32 */
	and	%l1, 0x3f, %l1
	sllx	%l1, 32, %l1
	or	%l2, %l1, %l2
	stx	%l2, [%sp + STACK_BIAS + STACK_FRAME]
	ldx	[%sp + STACK_BIAS + STACK_FRAME], %fsr
	mov	0, %l0
	fbe,a	1f                      /* FBfcc, annul */
	 add	%l0, 1, %l0
1:	fbul	2f                      /* FBfcc, slot always runs */
	 add	%l0, 2, %l0
	add	%l0, 4, %l0
2:	fbg,a,pt %fcc1, 3f              /* FBPfcc fcc1, annul */
	 add	%l0, 8, %l0
	add	%l0, 16, %l0
3:	fbne,pn	%fcc2, 4f               /* FBPfcc fcc2 */
	 add	%l0, 32, %l0
	add	%l0, 64, %l0
4:	fbuge,a	%fcc3, 5f               /* FBPfcc fcc3, annul */
	 add	%l0, 128, %l0
	add	%l0, 256, %l0
5:	fba,a	6f                      /* taken, slot annulled */
	 add	%l0, 512, %l0
6:	fbn	7f                      /* never taken, slot runs */
	 add	%l0, 1024, %l0
7:	wr	%l7, 0, %fprs
	wrpr	%l6, 0, %pstate
	mov	%l0, %i0
	return	%i7 + 8                 /* V9 return: the caller's window */
	 nop
END(fm_fp)
