/*
 * selftest_probes.S — code for the differential self-test of the sparc64
 * probe emulator (selftest_probes.c).
 *
 * dt_call(in, out) runs one control-transfer instruction (CTI) from the
 * register state *in and stores the state it leaves into *out. It opens a
 * window, flushes every older window to its frame (so the caller's window
 * is no longer in the register file and nothing the test loads can be
 * spilled over it), saves the caller's %sp, %fp, %i7 and globals in
 * dt_ctx, then loads CCR, optionally %fsr, and every register of the
 * window and the globals from *in — %o6 and %i6 included: %o6 points into
 * the test's scratch stack, where a probe's trap frame goes — and reaches
 * the CTI at dt_site with `ba,a`. The word at dt_site is written at run
 * time through a writable alias of this page.
 *
 * Every path from the site leaves marks in %g4 (xor of a distinct bit per
 * instruction), so PC and nPC after the CTI can be read back from one
 * register: the delay slot, the two fall-through words, and two words at
 * each of three targets (near forward, near backward, and one 64 KiB
 * ahead, far enough to need the high displacement bits, d16hi of BPr
 * included). A wrong PC runs a different word; a wrong nPC skips or
 * repeats one. Every path ends in `ba,a dt_capture`.
 *
 * dt_capture opens a window (the scratch stack has room), reads CCR, and
 * stores the globals and the CTI window's %o (now our %i); `flushw` then
 * puts the CTI window's %l and %i into its save area on the scratch stack,
 * from where they are copied to *out. It restores the caller's globals,
 * goes back into the CTI window (a fill from the scratch stack), gives it
 * its real %sp, %fp and %i7 back, and returns through `ret; restore`,
 * which refills the caller's window from its frame.
 *
 * Nothing between the load of CCR and the capture writes CCR or a register
 * other than the ones the CTI and the marks write; nothing writes memory
 * below the scratch %sp unless a trap is taken there (the test checks
 * that too).
 *
 * The second half is the probe-every-CTI function (tb_fn and its helpers
 * up to tb_end) and its counting twin (tbc_*, every CTI preceded by
 * `add %g5, 1, %g5`), both expanded from one macro.
 */
#include "arch/sparc64.h"

	.register %g2, #scratch
	.register %g3, #scratch
	.register %g6, #scratch
	.register %g7, #scratch

/* struct dt_state (selftest_probes.h): r[32] as an instruction numbers
 * registers (g0-7, o0-7, l0-7, i0-7), then ccr, fsr, use_fsr. */
#define S_G      0
#define S_O      64
#define S_L      128
#define S_I      192
#define S_CCR    256
#define S_FSR    264
#define S_USEFSR 272
#define S_SIZE   288

/* dt_ctx: what dt_call keeps of its caller. */
#define C_SP   0
#define C_FP   8
#define C_I7   16
#define C_OUT  24
#define C_G    32
#define C_SIZE 96

/* The marks (selftest_probes.h; the runner decodes them); the mark
 * register is %g4. */
#define MARK_REG   4
#define M_SLOT     0x001
#define M_FALL0    0x002
#define M_FALL1    0x004
#define M_FWD0     0x008
#define M_FWD1     0x010
#define M_BACK0    0x020
#define M_BACK1    0x040
#define M_FAR0     0x080
#define M_FAR1     0x100

	.section .rodata
	.align	8
/* The constants above, for the C side to check against its own
 * (dt_layout_ok). */
	.global	dt_layout
dt_layout:
	.word	S_O, S_L, S_I, S_CCR, S_FSR, S_USEFSR, S_SIZE, MARK_REG
	.word	M_SLOT, M_FALL0, M_FALL1, M_FWD0, M_FWD1, M_BACK0, M_BACK1
	.word	M_FAR0, M_FAR1

/* Reference encodings by the assembler, checked against the test's own
 * run-time encoder: each branch targets a word relative to itself. */
	.global	dt_ref_words
dt_ref_words:
	be,a	.+8                          /* Bicc */
	bvc	.-16
	bleu,a,pn %xcc, .+0x40               /* BPcc */
	bpos,pt	%icc, .-4
	brlz,a,pn %l5, .+12                  /* BPr */
	brgez,pt %i2, .-0x18000              /* d16hi = 2 */
	brnz,pt	%g1, .+0x10010               /* d16hi = 1 */
	fbule,a	.+0x20                       /* FBfcc */
	fbo,a,pt %fcc2, .-8                  /* FBPfcc */
	fbne,pn	%fcc3, .+0x80000 - 4
	call	.+0x100000                   /* CALL */
	call	.-0x200
	jmpl	%l1 + %i3, %g3               /* JMPL */
	jmpl	%i5 - 4096, %i2
	ret
	retl
	.global	dt_ref_end
dt_ref_end:

	.text
	.align	32
/* void dt_call(const struct dt_state *in, struct dt_state *out) */
FUNC(dt_call)
	save	%sp, -STACK_FRAME, %sp
	flushw
	sethi	%hi(dt_ctx), %l0
	or	%l0, %lo(dt_ctx), %l0
	stx	%sp, [%l0 + C_SP]
	stx	%fp, [%l0 + C_FP]
	stx	%i7, [%l0 + C_I7]
	stx	%i1, [%l0 + C_OUT]
	stx	%g1, [%l0 + C_G + 0x08]
	stx	%g2, [%l0 + C_G + 0x10]
	stx	%g3, [%l0 + C_G + 0x18]
	stx	%g4, [%l0 + C_G + 0x20]
	stx	%g5, [%l0 + C_G + 0x28]
	stx	%g6, [%l0 + C_G + 0x30]
	stx	%g7, [%l0 + C_G + 0x38]
	mov	%i0, %g1
	ldx	[%g1 + S_USEFSR], %g2
	brz,pt	%g2, 1f
	 nop
	ldx	[%g1 + S_FSR], %fsr
1:	ldx	[%g1 + S_CCR], %g2
	wr	%g2, 0, %ccr
	ldx	[%g1 + S_O + 0x00], %o0
	ldx	[%g1 + S_O + 0x08], %o1
	ldx	[%g1 + S_O + 0x10], %o2
	ldx	[%g1 + S_O + 0x18], %o3
	ldx	[%g1 + S_O + 0x20], %o4
	ldx	[%g1 + S_O + 0x28], %o5
	ldx	[%g1 + S_O + 0x30], %o6
	ldx	[%g1 + S_O + 0x38], %o7
	ldx	[%g1 + S_L + 0x00], %l0
	ldx	[%g1 + S_L + 0x08], %l1
	ldx	[%g1 + S_L + 0x10], %l2
	ldx	[%g1 + S_L + 0x18], %l3
	ldx	[%g1 + S_L + 0x20], %l4
	ldx	[%g1 + S_L + 0x28], %l5
	ldx	[%g1 + S_L + 0x30], %l6
	ldx	[%g1 + S_L + 0x38], %l7
	ldx	[%g1 + S_I + 0x00], %i0
	ldx	[%g1 + S_I + 0x08], %i1
	ldx	[%g1 + S_I + 0x10], %i2
	ldx	[%g1 + S_I + 0x18], %i3
	ldx	[%g1 + S_I + 0x20], %i4
	ldx	[%g1 + S_I + 0x28], %i5
	ldx	[%g1 + S_I + 0x30], %i6
	ldx	[%g1 + S_I + 0x38], %i7
	ldx	[%g1 + S_G + 0x10], %g2
	ldx	[%g1 + S_G + 0x18], %g3
	ldx	[%g1 + S_G + 0x20], %g4
	ldx	[%g1 + S_G + 0x28], %g5
	ldx	[%g1 + S_G + 0x30], %g6
	ldx	[%g1 + S_G + 0x38], %g7
	ldx	[%g1 + S_G + 0x08], %g1
	ba,a,pt	%xcc, dt_entry
	 nop
	END(dt_call)

/* The backward target: 6 words before the site. */
	.align	32
	.global	dt_t_back
dt_t_back:
	xor	%g4, M_BACK0, %g4
	xor	%g4, M_BACK1, %g4
	ba,a,pt	%xcc, dt_capture
	 nop
dt_entry:
	nop                             /* the word before the site: no CTI */
	.global	dt_site
dt_site:
	nop                             /* the CTI under test (run time) */
	xor	%g4, M_SLOT, %g4        /* its delay slot */
	xor	%g4, M_FALL0, %g4       /* fall-through */
	xor	%g4, M_FALL1, %g4
	ba,a,pt	%xcc, dt_capture
	 nop
	.global	dt_t_fwd
dt_t_fwd:
	xor	%g4, M_FWD0, %g4
	xor	%g4, M_FWD1, %g4
	ba,a,pt	%xcc, dt_capture
	 nop
	/* 64 KiB of `illtrap 0x3ffff0` (no probe has that index: a stray
	 * jump here traps and is caught), then the far target. */
	.fill	16400, 4, 0x003ffff0
	.global	dt_t_far
dt_t_far:
	xor	%g4, M_FAR0, %g4
	xor	%g4, M_FAR1, %g4
	ba,a,pt	%xcc, dt_capture
	 nop

	.align	32
	.global	dt_capture
dt_capture:
	save	%sp, -STACK_FRAME, %sp  /* scratch stack; CCR untouched */
	rd	%ccr, %l0
	sethi	%hi(dt_ctx), %l1
	or	%l1, %lo(dt_ctx), %l1
	ldx	[%l1 + C_OUT], %l2
	stx	%l0, [%l2 + S_CCR]
	stx	%g0, [%l2 + S_G + 0x00]
	stx	%g1, [%l2 + S_G + 0x08]
	stx	%g2, [%l2 + S_G + 0x10]
	stx	%g3, [%l2 + S_G + 0x18]
	stx	%g4, [%l2 + S_G + 0x20]
	stx	%g5, [%l2 + S_G + 0x28]
	stx	%g6, [%l2 + S_G + 0x30]
	stx	%g7, [%l2 + S_G + 0x38]
	stx	%i0, [%l2 + S_O + 0x00]
	stx	%i1, [%l2 + S_O + 0x08]
	stx	%i2, [%l2 + S_O + 0x10]
	stx	%i3, [%l2 + S_O + 0x18]
	stx	%i4, [%l2 + S_O + 0x20]
	stx	%i5, [%l2 + S_O + 0x28]
	stx	%i6, [%l2 + S_O + 0x30]
	stx	%i7, [%l2 + S_O + 0x38]
	flushw                          /* the CTI window → [its %sp + BIAS] */
	add	%i6, STACK_BIAS, %l3
	mov	0, %l4
1:	ldx	[%l3 + %l4], %l5        /* %l0-7, %i0-7 of the CTI window */
	add	%l2, %l4, %l6
	stx	%l5, [%l6 + S_L]
	add	%l4, 8, %l4
	cmp	%l4, 128
	bl,pt	%xcc, 1b
	 nop
	ldx	[%l1 + C_G + 0x08], %g1
	ldx	[%l1 + C_G + 0x10], %g2
	ldx	[%l1 + C_G + 0x18], %g3
	ldx	[%l1 + C_G + 0x20], %g4
	ldx	[%l1 + C_G + 0x28], %g5
	ldx	[%l1 + C_G + 0x30], %g6
	ldx	[%l1 + C_G + 0x38], %g7
	restore                         /* into the CTI window (a fill) */
	sethi	%hi(dt_ctx), %l0
	or	%l0, %lo(dt_ctx), %l0
	ldx	[%l0 + C_SP], %sp
	ldx	[%l0 + C_FP], %fp
	ldx	[%l0 + C_I7], %i7
	ret
	 restore                        /* into dt_call's caller (a fill) */

/*
 * The probe-every-CTI function: uint64_t tb_fn(n, x, hist[8]) runs n
 * rounds of: x = step(x) (a leaf call), hist[x & 7]++, and a switch on
 * x & 7 through a jump table, whose cases hold nested conditionals, an
 * inner loop, an indirect call, a windowed call with its own loop, and
 * every branch class but the FP ones (Bicc, BPcc on icc and xcc, BPr),
 * annulled and not. It returns the accumulator. No CTI sits right after
 * another (the word after a CTI is its delay slot, where a probe may not
 * go), so a probe can go on every one.
 *
 * CNT comes before each CTI. In the counting twin (TB_COUNTING = 1) it
 * adds one to %g5, so tb_count() returns how many CTIs the same inputs execute:
 * the number of probe firings the probed tb_fn must cause.
 */
	.macro	CNT
	.if	TB_COUNTING
	add	%g5, 1, %g5
	.endif
	.endm

	.macro	TB_BODY p
	.pushsection .rodata
	.align	8
\p\()_table:
	.xword	.L\p\()c0, .L\p\()c1, .L\p\()c2, .L\p\()c3
	.xword	.L\p\()c4, .L\p\()c5, .L\p\()c6, .L\p\()c7
	.popsection

	.text
	.align	32
	.global	\p\()_fn
	.type	\p\()_fn, #function
\p\()_fn:
	save	%sp, -STACK_FRAME, %sp
	clr	%l0                     /* acc */
	clr	%l1                     /* i */
	CNT
	brz,pn %i0, .L\p\()done
	 nop
.L\p\()loop:
	CNT
	call	\p\()_step
	 mov	%i1, %o0
	mov	%o0, %i1
	and	%i1, 7, %l2
	sllx	%l2, 3, %l3
	ldx	[%i2 + %l3], %l4
	add	%l4, 1, %l4
	stx	%l4, [%i2 + %l3]
	sethi	%hi(\p\()_table), %l5
	or	%l5, %lo(\p\()_table), %l5
	ldx	[%l5 + %l3], %l5
	CNT
	jmp	%l5                     /* the switch */
	 nop
.L\p\()c0:                              /* acc += x */
	add	%l0, %i1, %l0
	CNT
	ba	.L\p\()next
	 nop
.L\p\()c1:                              /* x < 0 ? acc ^= x : acc -= i */
	CNT
	brlz,a,pt %i1, 1f
	 xor	%l0, %i1, %l0
	sub	%l0, %l1, %l0
1:	CNT
	ba,a,pt %xcc, .L\p\()next
.L\p\()c2:                              /* nested conditionals */
	and	%i1, 0xff, %l4
	cmp	%l4, 0x80
	CNT
	bleu	2f
	 nop
	andcc	%i1, 0x100, %g0
	CNT
	bne,a	%xcc, .L\p\()next
	 add	%l0, 3, %l0
	add	%l0, 5, %l0
	CNT
	ba,a	.L\p\()next
2:	sub	%l4, 0x40, %l6
	CNT
	brgz	%l6, 3f
	 nop
	add	%l0, 7, %l0
3:	sub	%l0, %l6, %l0
	CNT
	ba,pt	%icc, .L\p\()next
	 nop
.L\p\()c3:                              /* for (j = x & 3; j; j--) acc += j + 1 */
	and	%i1, 3, %l4
	CNT
	brz,pn %l4, .L\p\()next
	 nop
4:	add	%l0, %l4, %l0
	subcc	%l4, 1, %l4
	CNT
	bg,pt	%xcc, 4b
	 add	%l0, 1, %l0
	CNT
	ba,a,pt %xcc, .L\p\()next
.L\p\()c4:                              /* acc = mix(acc, x), called indirectly */
	sethi	%hi(\p\()_mix), %g1
	or	%g1, %lo(\p\()_mix), %g1
	mov	%l0, %o0
	CNT
	jmpl	%g1, %o7
	 mov	%i1, %o1
	mov	%o0, %l0
	CNT
	ba	%xcc, .L\p\()next
	 nop
.L\p\()c5:                              /* unsigned compares, icc and xcc */
	srlx	%i1, 29, %l4
	cmp	%l4, %l1
	CNT
	bgu	%icc, 5f
	 sll	%l4, 1, %l6
	CNT
	bcs,a	.L\p\()next
	 add	%l0, %l6, %l0
	xor	%l0, 0x55, %l0
5:	CNT
	bpos,pn %xcc, 6f
	 nop
	xor	%l0, 1, %l0
6:	addcc	%l0, %l4, %l0
	CNT
	bvs	.L\p\()next
	 nop
	CNT
	bcc,a	%xcc, .L\p\()next
	 add	%l0, 9, %l0
	CNT
	ba	.L\p\()next
	 nop
.L\p\()c6:                              /* signed compares, annulled */
	sra	%i1, 0, %l4
	cmp	%l4, %l1
	CNT
	bl,a	%icc, 7f
	 sub	%l0, %l4, %l0
	add	%l0, %l4, %l0
7:	CNT
	bge	8f
	 srlx	%l0, 1, %l6
	CNT
	bn,a	.L\p\()next
	 add	%l0, 100, %l0
	xor	%l0, %l6, %l0
8:	CNT
	brgez,a,pn %l0, .L\p\()next
	 add	%l0, 1, %l0
	CNT
	ba,a	%xcc, .L\p\()next
.L\p\()c7:                              /* acc = fold(acc, i), a windowed call */
	mov	%l0, %o0
	CNT
	call	\p\()_fold
	 mov	%l1, %o1
	mov	%o0, %l0
.L\p\()next:
	add	%l1, 1, %l1
	cmp	%l1, %i0
	CNT
	bl,pt	%xcc, .L\p\()loop
	 nop
.L\p\()done:
	CNT
	ret
	 restore %l0, %g0, %o0

/* xorshift64 */
\p\()_step:
	sllx	%o0, 13, %o1
	xor	%o0, %o1, %o0
	srlx	%o0, 7, %o1
	xor	%o0, %o1, %o0
	sllx	%o0, 17, %o1
	CNT
	retl
	 xor	%o0, %o1, %o0

\p\()_mix:
	srlx	%o1, 3, %o2
	CNT
	brnz,a,pt %o2, 1f
	 xor	%o0, %o2, %o0
	add	%o0, 11, %o0
1:	sllx	%o0, 1, %o3
	CNT
	retl
	 add	%o0, %o3, %o0

\p\()_fold:
	save	%sp, -STACK_FRAME, %sp
	and	%i1, 3, %l0
	mov	%i0, %l1
1:	subcc	%l0, 1, %l0
	CNT
	bneg,pn %icc, 2f
	 nop
	srlx	%l1, 5, %l2
	xor	%l1, %l2, %l1
	CNT
	ba	1b
	 add	%l1, 3, %l1
2:	CNT
	ret
	 restore %l1, %g0, %o0
	.global	\p\()_end
\p\()_end:
	.size	\p\()_fn, . - \p\()_fn
	.endm

	.set	TB_COUNTING, 0
	TB_BODY	tb
	.set	TB_COUNTING, 1
	TB_BODY	tbc

/* uint64_t tb_count(n, x, hist, uint64_t *ctis): tbc_fn, and the number
 * of CTIs it executed into *ctis. */
	.align	32
FUNC(tb_count)
	save	%sp, -STACK_FRAME, %sp
	mov	%g5, %l0
	clr	%g5
	mov	%i0, %o0
	mov	%i1, %o1
	call	tbc_fn
	 mov	%i2, %o2
	stx	%g5, [%i3]
	mov	%l0, %g5
	ret
	 restore %o0, %g0, %o0
	END(tb_count)

	.section .bss
	.align	8
dt_ctx:
	.skip	C_SIZE
