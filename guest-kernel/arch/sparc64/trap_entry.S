/*
 * trap_entry.S — from the trap table to C and back; the double-fault
 * entry; setjmp/longjmp.
 *
 * trap_entry runs at TL 1 in the trapped window, on the trapped stack
 * (this kernel has one address space and always a valid %sp). It stores
 * the trapped %l/%i into that window's register save area (so C can read
 * them without a flushw; trapframe.h), `save`s
 * a new window with room for a struct trapframe (trapframe.h), copies the
 * trap registers and the normal globals into it, and drops to TL 0 before
 * calling trap_dispatch with interrupts off: C then runs with the whole
 * trap stack free, so its own spills, TLB misses and caught faults nest
 * normally. The way back raises TL to 1 again, reloads the trap registers
 * from the (possibly edited) frame, `restore`s into the trapped window
 * (a fill if C flushed it or switched threads) and `retry`s at TPC/TNPC,
 * with TSTATE.CWP made to name that window wherever it now is. Interrupts and
 * faults resume alike; C moves TPC/TNPC where it wants execution to go,
 * and for an emulated `save` asks to stay one window deeper (trapframe.h).
 *
 * double_fault_entry is where every trap at TL > 0 goes that the table
 * does not handle in place. It trusts nothing: it saves the trap
 * registers of every level and the registers it sees with physical stores,
 * then resets the window state (discarding all windows — we never return),
 * takes a stack of its own and calls double_fault() at TL 0.
 */
#include "sparc64.h"
#include "trapframe.h"

	.register %g2, #scratch
	.register %g3, #scratch
	.register %g6, #scratch
	.register %g7, #scratch

	.text
	.align	32
FUNC(trap_entry)
	/* The trapped window's %l and %i into its register save area, where
	 * a spill would put them: C reads them there without a flushw. */
	STORE_WINDOW
	save	%sp, -(STACK_FRAME + TF_SIZE), %sp
	add	%sp, STACK_BIAS + STACK_FRAME, %l7
	rdpr	%tstate, %l0
	stx	%l0, [%l7 + TF_TSTATE]
	rdpr	%tpc, %l0
	stx	%l0, [%l7 + TF_TPC]
	rdpr	%tnpc, %l0
	stx	%l0, [%l7 + TF_TNPC]
	rdpr	%tt, %l0
	stx	%l0, [%l7 + TF_TT]
	rdpr	%tl, %l0
	stx	%l0, [%l7 + TF_TL]
	rd	%y, %l0
	stx	%l0, [%l7 + TF_Y]
	stx	%i0, [%l7 + TF_O + 0x00]
	stx	%i1, [%l7 + TF_O + 0x08]
	stx	%i2, [%l7 + TF_O + 0x10]
	stx	%i3, [%l7 + TF_O + 0x18]
	stx	%i4, [%l7 + TF_O + 0x20]
	stx	%i5, [%l7 + TF_O + 0x28]
	stx	%i6, [%l7 + TF_O + 0x30]
	stx	%i7, [%l7 + TF_O + 0x38]
	stx	%g0, [%l7 + TF_SAVE_SP]
	stx	%g0, [%l7 + TF_RESTORE2]
	wrpr	%g0, PSTATE_PRIV, %pstate    /* normal globals, IE off */
	stx	%g0, [%l7 + TF_G + 0x00]
	stx	%g1, [%l7 + TF_G + 0x08]
	stx	%g2, [%l7 + TF_G + 0x10]
	stx	%g3, [%l7 + TF_G + 0x18]
	stx	%g4, [%l7 + TF_G + 0x20]
	stx	%g5, [%l7 + TF_G + 0x28]
	stx	%g6, [%l7 + TF_G + 0x30]
	stx	%g7, [%l7 + TF_G + 0x38]
	wrpr	%g0, 0, %tl
	/* trap_dispatch's %i7 is this call, and this window's %l7 the frame:
	 * where a stack walk hops to the interrupted code (tracer/arch/
	 * sparc64/stack.c) */
	.globl	trap_dispatch_called
trap_dispatch_called:
	call	trap_dispatch
	 mov	%l7, %o0

	wrpr	%g0, PSTATE_PRIV, %pstate
	ldx	[%l7 + TF_G + 0x08], %g1
	ldx	[%l7 + TF_G + 0x10], %g2
	ldx	[%l7 + TF_G + 0x18], %g3
	ldx	[%l7 + TF_G + 0x20], %g4
	ldx	[%l7 + TF_G + 0x28], %g5
	ldx	[%l7 + TF_G + 0x30], %g6
	ldx	[%l7 + TF_G + 0x38], %g7
	ldx	[%l7 + TF_Y], %l0
	wr	%l0, 0, %y
	ldx	[%l7 + TF_O + 0x00], %i0
	ldx	[%l7 + TF_O + 0x08], %i1
	ldx	[%l7 + TF_O + 0x10], %i2
	ldx	[%l7 + TF_O + 0x18], %i3
	ldx	[%l7 + TF_O + 0x20], %i4
	ldx	[%l7 + TF_O + 0x28], %i5
	ldx	[%l7 + TF_O + 0x30], %i6
	ldx	[%l7 + TF_O + 0x38], %i7
	ldx	[%l7 + TF_TSTATE], %l0
	ldx	[%l7 + TF_TPC], %l1
	ldx	[%l7 + TF_TNPC], %l2
	ldx	[%l7 + TF_SAVE_SP], %l4
	brnz,pn	%l4, 2f
	 rdpr	%cwp, %l3
	/* retry sets CWP from TSTATE. If C switched threads, this thread may
	 * be back in a different window than the one it trapped in, so make
	 * TSTATE.CWP the window the restores are about to enter: CWP - 1, or
	 * CWP - 2 after an emulated `return`, mod NWINDOWS (VER.MAXWIN + 1). */
	ldx	[%l7 + TF_RESTORE2], %l5
	add	%l5, 1, %l5                  /* restores: 1 or 2 */
	rdpr	%ver, %l6
	and	%l6, 0x1f, %l6
	add	%l6, 1, %l6                  /* NWINDOWS */
	add	%l3, %l6, %l3
	sub	%l3, %l5, %l3
	cmp	%l3, %l6
	bgeu,a,pt %xcc, 1f
	 sub	%l3, %l6, %l3
1:	andn	%l0, TSTATE_CWP_MASK, %l0
	or	%l0, %l3, %l0
	cmp	%l5, 2
	wrpr	%g0, 1, %tl
	wrpr	%l0, 0, %tstate
	wrpr	%l1, 0, %tpc
	be,pn	%xcc, 3f
	 wrpr	%l2, 0, %tnpc
	restore
	retry
	/* An emulated return: its own restore as well. */
3:	restore
	restore
	retry
	/* An emulated save: resume in this window, the callee's. */
2:	andn	%l0, TSTATE_CWP_MASK, %l0
	or	%l0, %l3, %l0
	wrpr	%g0, 1, %tl
	wrpr	%l0, 0, %tstate
	wrpr	%l1, 0, %tpc
	wrpr	%l2, 0, %tnpc
	mov	%l4, %sp
	retry
	END(trap_entry)

	.align	32
FUNC(double_fault_entry)
	wr	%g0, ASI_PHYS_USE_EC, %asi	/* [reg + imm] takes the ASI from %asi */
	sethi	%hi(df_record), %g1
	or	%g1, %lo(df_record), %g1
	rdpr	%tl, %g2
	stxa	%g2, [%g1 + DF_TL] %asi
	cmp	%g2, DF_MAX_LEVELS
	movgu	%xcc, DF_MAX_LEVELS, %g2
1:	sub	%g2, 1, %g3                  /* level TL..1 into level[TL-1..0] */
	sllx	%g3, 5, %g3
	add	%g3, %g1, %g3
	add	%g3, DF_LEVELS, %g3
	wrpr	%g2, 0, %tl
	rdpr	%tt, %g4
	stxa	%g4, [%g3 + 0x00] %asi
	rdpr	%tpc, %g4
	stxa	%g4, [%g3 + 0x08] %asi
	rdpr	%tnpc, %g4
	stxa	%g4, [%g3 + 0x10] %asi
	rdpr	%tstate, %g4
	stxa	%g4, [%g3 + 0x18] %asi
	subcc	%g2, 1, %g2
	bnz,pt	%xcc, 1b
	 nop
	/* The registers of the window the failure happened in. */
	add	%g1, DF_O, %g3
	stxa	%o0, [%g3 + 0x00] %asi
	stxa	%o1, [%g3 + 0x08] %asi
	stxa	%o2, [%g3 + 0x10] %asi
	stxa	%o3, [%g3 + 0x18] %asi
	stxa	%o4, [%g3 + 0x20] %asi
	stxa	%o5, [%g3 + 0x28] %asi
	stxa	%o6, [%g3 + 0x30] %asi
	stxa	%o7, [%g3 + 0x38] %asi
	stxa	%l0, [%g3 + 0x40] %asi
	stxa	%l1, [%g3 + 0x48] %asi
	stxa	%l2, [%g3 + 0x50] %asi
	stxa	%l3, [%g3 + 0x58] %asi
	stxa	%l4, [%g3 + 0x60] %asi
	stxa	%l5, [%g3 + 0x68] %asi
	stxa	%l6, [%g3 + 0x70] %asi
	stxa	%l7, [%g3 + 0x78] %asi
	stxa	%i0, [%g3 + 0x80] %asi
	stxa	%i1, [%g3 + 0x88] %asi
	stxa	%i2, [%g3 + 0x90] %asi
	stxa	%i3, [%g3 + 0x98] %asi
	stxa	%i4, [%g3 + 0xa0] %asi
	stxa	%i5, [%g3 + 0xa8] %asi
	stxa	%i6, [%g3 + 0xb0] %asi
	stxa	%i7, [%g3 + 0xb8] %asi
	/* The normal globals: switch to them, keeping the pointer in %l0
	 * (already recorded). */
	mov	%g1, %l0
	wrpr	%g0, PSTATE_PRIV, %pstate
	stxa	%g0, [%l0 + DF_G + 0x00] %asi
	stxa	%g1, [%l0 + DF_G + 0x08] %asi
	stxa	%g2, [%l0 + DF_G + 0x10] %asi
	stxa	%g3, [%l0 + DF_G + 0x18] %asi
	stxa	%g4, [%l0 + DF_G + 0x20] %asi
	stxa	%g5, [%l0 + DF_G + 0x28] %asi
	stxa	%g6, [%l0 + DF_G + 0x30] %asi
	stxa	%g7, [%l0 + DF_G + 0x38] %asi
	/* Start over at TL 0 with an empty window file and our own stack. */
	wrpr	%g0, 0, %tl
	rdpr	%ver, %g1
	and	%g1, 0x1f, %g1               /* VER.MAXWIN = NWINDOWS - 1 */
	sub	%g1, 1, %g2
	wrpr	%g2, 0, %cansave
	wrpr	%g0, 0, %canrestore
	wrpr	%g0, 0, %otherwin
	wrpr	%g1, 0, %cleanwin
	wrpr	%g0, 0, %wstate
	sethi	%hi(df_stack_top), %g1
	or	%g1, %lo(df_stack_top), %g1
	sub	%g1, STACK_FRAME + STACK_BIAS, %sp	/* with a frame to spill to */
	clr	%fp
	call	double_fault
	 mov	%l0, %o0
1:	ba,a,pt	%xcc, 1b
	END(double_fault_entry)

/*
 * arch_setjmp(buf) — a leaf, so it runs in its caller's window: it keeps
 * the caller's %sp, its own return address (%o7) and PSTATE (for IE).
 * The caller's %l/%i need no copy: they are in the register file, or in
 * its register save area at %sp + BIAS once spilled.
 *
 * arch_longjmp(buf, v) — also a leaf, in the window of whoever called it.
 * flushw pushes every other window to its save area, so the caller of
 * arch_setjmp has its registers in memory; we point this window's %fp
 * (the next window's %sp) at that caller's frame and its %i7 at the
 * return address, and `restore` — which, with CANRESTORE 0 after flushw,
 * refills the window from that frame. Then return as arch_setjmp would.
 */
FUNC(arch_setjmp)
	stx	%sp, [%o0 + 0x00]
	stx	%o7, [%o0 + 0x08]
	rdpr	%pstate, %o1
	stx	%o1, [%o0 + 0x10]
	retl
	 clr	%o0
	END(arch_setjmp)

FUNC(arch_longjmp)
	flushw
	movrz	%o1, 1, %o1
	ldx	[%o0 + 0x00], %fp
	ldx	[%o0 + 0x08], %i7
	ldx	[%o0 + 0x10], %o2
	mov	%o1, %i0
	wrpr	%o2, 0, %pstate
	restore
	jmp	%o7 + 8
	 nop
	END(arch_longjmp)

	.section .bss
	.balign	64
	.global	df_record
df_record:
	.skip	DF_SIZE
	.balign	16
df_stack:
	.skip	16384
df_stack_top:
