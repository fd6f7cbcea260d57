/*
 * switch.S — arch_context_switch(save, load) on SPARC V9.
 *
 * A thread's registers live in register windows, so leaving a thread means
 * putting all of its windows on its own stack: flushw spills every window
 * but the current one, and we store the current one by hand into its save
 * area. Then %sp becomes the other thread's, its switch window is loaded
 * from that thread's save area the same way, and `ret; restore` returns
 * into its caller — with CANRESTORE 0 after the flushw, the restore fills
 * that caller's window from the stack, as every later restore does.
 *
 * Interrupts are off throughout (the caller masked them), so no trap can
 * see the window file half switched.
 */
#include "sparc64.h"

	.register %g2, #scratch

#define SAVE_WINDOW(base) \
	stx %l0, [base + STACK_BIAS + 0x00]; stx %l1, [base + STACK_BIAS + 0x08]; \
	stx %l2, [base + STACK_BIAS + 0x10]; stx %l3, [base + STACK_BIAS + 0x18]; \
	stx %l4, [base + STACK_BIAS + 0x20]; stx %l5, [base + STACK_BIAS + 0x28]; \
	stx %l6, [base + STACK_BIAS + 0x30]; stx %l7, [base + STACK_BIAS + 0x38]; \
	stx %i0, [base + STACK_BIAS + 0x40]; stx %i1, [base + STACK_BIAS + 0x48]; \
	stx %i2, [base + STACK_BIAS + 0x50]; stx %i3, [base + STACK_BIAS + 0x58]; \
	stx %i4, [base + STACK_BIAS + 0x60]; stx %i5, [base + STACK_BIAS + 0x68]; \
	stx %i6, [base + STACK_BIAS + 0x70]; stx %i7, [base + STACK_BIAS + 0x78]

#define LOAD_WINDOW(base) \
	ldx [base + STACK_BIAS + 0x00], %l0; ldx [base + STACK_BIAS + 0x08], %l1; \
	ldx [base + STACK_BIAS + 0x10], %l2; ldx [base + STACK_BIAS + 0x18], %l3; \
	ldx [base + STACK_BIAS + 0x20], %l4; ldx [base + STACK_BIAS + 0x28], %l5; \
	ldx [base + STACK_BIAS + 0x30], %l6; ldx [base + STACK_BIAS + 0x38], %l7; \
	ldx [base + STACK_BIAS + 0x40], %i0; ldx [base + STACK_BIAS + 0x48], %i1; \
	ldx [base + STACK_BIAS + 0x50], %i2; ldx [base + STACK_BIAS + 0x58], %i3; \
	ldx [base + STACK_BIAS + 0x60], %i4; ldx [base + STACK_BIAS + 0x68], %i5; \
	ldx [base + STACK_BIAS + 0x70], %i6; ldx [base + STACK_BIAS + 0x78], %i7

	.text
	.align	32
FUNC(arch_context_switch)
	save	%sp, -STACK_FRAME, %sp
	flushw
	SAVE_WINDOW(%sp)
	stx	%sp, [%i0]
	ldx	[%i1], %g2
	mov	%g2, %sp
	LOAD_WINDOW(%sp)
	ret
	 restore
	END(arch_context_switch)
