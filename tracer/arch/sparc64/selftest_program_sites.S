/*
 * selftest_program_sites.S — code whose registers a probe program reads
 * (the self-test of tarch_context_*, tracer/core/
 * selftest_program_context.c; the rows are selftest_program_sites.c).
 *
 * tarch_context_call(x) loads %o1, %o2, %o5, %g1 and %y with known values
 * and calls pc_fn(x) from tarch_context_callsite. pc_fn's save is the
 * entry site; it sets %l5 and CCR (cmp %g0, 1: N and C in icc and xcc)
 * and returns at pc_ret, the return site, with `ret; restore %i0, 1, %o0`:
 * the caller sees x + 1, computed in the delay slot. Then pc_odd(x,
 * &pc_word) returns at pc_odd_ret with `retl; ldx [%o1], %o0`, a delay
 * slot the fire path does not evaluate: the caller sees 1000. The call
 * returns the sum of the two.
 */
#include "arch/sparc64.h"

	.text
	.align	32
FUNC(tarch_context_call)
	save	%sp, -176, %sp
	mov	%i0, %o0
	mov	0x111, %o1
	mov	0x222, %o2
	mov	0x333, %o5
	mov	0x444, %g1
	wr	%g0, 0x55, %y
	.global	tarch_context_callsite
tarch_context_callsite:
	call	pc_fn
	 nop
	mov	%o0, %l0
	mov	%i0, %o0
	sethi	%hi(pc_word), %o1
	call	pc_odd
	 or	%o1, %lo(pc_word), %o1
	add	%o0, %l0, %i0
	ret
	 restore
	END(tarch_context_call)

	.align	32
FUNC(pc_fn)
	save	%sp, -176, %sp		/* the entry site */
	mov	0x777, %l5
	cmp	%g0, 1
	.global	pc_ret
pc_ret:
	ret				/* the return site */
	 restore %i0, 1, %o0
	END(pc_fn)

FUNC(pc_odd)
	.global	pc_odd_ret
pc_odd_ret:
	retl
	 ldx	[%o1], %o0
	END(pc_odd)

	.data
	.align	8
pc_word:
	.xword	1000
