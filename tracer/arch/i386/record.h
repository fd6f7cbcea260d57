/*
 * record.h — the record of an i386 firing, made from a trap frame (an
 * int3's, or one opt's detour or return trampoline builds): the words of
 * its kind (ENTRY: pc, sp and the arguments at [sp + 4...]; RETURN: pc,
 * sp, eax and edx; INSN: pc, sp) handed to tracer_fire, or the count
 * alone for a probe that only counts.
 *
 * Inline, so that each fire path that records takes it with no call of
 * its own: under TCG every return is a lookup of the next block, and a
 * riding return's trampoline and opt's detour paid one call and one
 * return more for it, per firing, than the C it ran (i386_opt_fire and
 * i386_opt_return, fire.c and opt_return.c). The trap hook keeps it out
 * of line (fire.c's record_fire): its frame stays the small one the
 * inline entry forms need.
 */
#ifndef I386_RECORD_H
#define I386_RECORD_H

#include "arch/trapframe.h"
#include "context.h"
#include "cpu.h"
#include "fire.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

static inline __attribute__((always_inline)) void
i386_record(const struct probe *p, const struct trapframe *tf)
{
	const struct tarch_context ctx = { tf };
	unsigned long w[WIRE_ENTRY_ARG0 + TRACER_MAX_ARGS];
	uint32_t sp = trapframe_sp(tf);
	unsigned n;

	/* Tests joined with & (one branch, not one each) where they read
	 * nothing the other guards: under TCG each branch ends a block. */
	if ((p->gated == 0) & (p->action == TRACER_ACTION_NULL)) {
		tracer_fire_count(p, this_cpu()->id);     /* tracer_counts_only */
		return;
	}
	if (p->kind == WIRE_EVENT_INSN) {
		w[WIRE_INSN_PC] = p->addr;
		w[WIRE_INSN_SP] = sp;
		n = WIRE_INSN_SP + 1;
	} else if (p->kind == WIRE_EVENT_ENTRY) {
		w[WIRE_ENTRY_PC] = p->addr;
		w[WIRE_ENTRY_SP] = sp;
		/* At the first instruction, [sp] is the return address and the
		 * arguments follow (cdecl), as ctrace reads them. The common
		 * case, every argument word on mapped stack, copies all
		 * TRACER_MAX_ARGS of them, unrolled, the record taking nargs:
		 * under TCG each branch of a loop ends a block, three a word. */
		const uint32_t *args = (const uint32_t *)(uintptr_t)(sp + 4);
		_Static_assert(TRACER_MAX_ARGS <= 8, "record.h unrolls 8 at most");
		if ((p->nargmap == 0) & mapped(sp + 4) & mapped(sp + 4 * TRACER_MAX_ARGS)) {
#pragma GCC unroll 8
			for (unsigned i = 0; i < TRACER_MAX_ARGS; i++)
				w[WIRE_ENTRY_ARG0 + i] = args[i];
		} else {
			for (unsigned i = 0; i < p->nargs; i++) {
				uint32_t a = sp + 4 + 4 * i;
				unsigned long v = 0;
				if (p->nargmap)  /* where -O2 put them (core/args.c) */
					tracer_arg(&ctx, p, i, &v);
				else
					v = mapped(a) ? *(const uint32_t *)a : 0;
				w[WIRE_ENTRY_ARG0 + i] = v;
			}
		}
		n = WIRE_ENTRY_ARG0 + p->nargs;
	} else {
		w[WIRE_RETURN_PC] = p->addr;
		w[WIRE_RETURN_SP] = sp;
		w[WIRE_RETURN_VALUE] = tf->eax;
		w[WIRE_RETURN_VALUE_HIGH] = tf->edx;     /* a 64-bit value's high half */
		n = p->nargs >= 2 ? WIRE_RETURN_VALUE_HIGH + 1 : WIRE_RETURN_VALUE + 1;
	}
	tracer_fire(p, p->kind, w, n, &ctx);
}

#endif
