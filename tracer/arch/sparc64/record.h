/*
 * record.h — a sparc64 firing's record (or count), from the state before
 * the displaced instruction: the words of an INSN, ENTRY, RETURN or
 * BRANCH record, then tracer_fire. It is static inline so that the
 * trap-free path (tramp_fire.c) makes its record in its own frame: each
 * frame on the way to the ring is a register window, and at calltree's
 * depth each window more under a firing is a spill trap and, on the way
 * back up the tree, a fill trap (docs/bench.md, "Where a tramp firing's
 * cycles go"). fire.c's sparc64_record_fire is the same record, called.
 */
#ifndef SPARC64_RECORD_H
#define SPARC64_RECORD_H

#include "arch/arch_sparc64.h"
#include "arch/sparc64.h"
#include "arch/trapframe.h"
#include "context.h"
#include "cpu.h"
#include "fire.h"
#include "physstore.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

_Static_assert(WIRE_BRANCH_SLOT < WIRE_ENTRY_ARG0 + TRACER_MAX_ARGS,
	       "sparc64_record's array holds a BRANCH record too");

static inline __attribute__((always_inline)) void
sparc64_record(const struct probe *p, struct trapframe *tf,
	       const struct sparc_regs *r, const struct sparc_outcome *o)
{
	const struct tarch_context ctx = { tf, r };
	unsigned long w[WIRE_ENTRY_ARG0 + TRACER_MAX_ARGS];
	unsigned n;
	uint64_t v;

	if (tracer_counts_only(p)) {
		tracer_fire_count(p, this_cpu()->id);
		return;
	}
	switch (p->kind) {
	case WIRE_EVENT_INSN:
		w[WIRE_INSN_PC] = tf->tpc;
		w[WIRE_INSN_SP] = trapframe_sp(tf) + STACK_BIAS;
		n = WIRE_INSN_SP + 1;
		break;
	case WIRE_EVENT_ENTRY:
		w[WIRE_ENTRY_PC] = tf->tpc;
		w[WIRE_ENTRY_SP] = trapframe_sp(tf) + STACK_BIAS;
		for (unsigned a = 0; a < p->nargs; a++) {
			unsigned long v = 0;
			if (!p->nargmap)
				v = tf->o[a];
			else                    /* where -O2 put them (core/args.c) */
				tracer_arg(&ctx, p, a, &v);
			w[WIRE_ENTRY_ARG0 + a] = v;
		}
		n = WIRE_ENTRY_ARG0 + p->nargs;
		break;
	case WIRE_EVENT_RETURN:
		w[WIRE_RETURN_PC] = tf->tpc;
		w[WIRE_RETURN_SP] = trapframe_sp(tf) + STACK_BIAS;
		n = WIRE_RETURN_VALUE;          /* no value word if unknown */
		if (sparc64_return_value(p, r, &v)) {
			w[WIRE_RETURN_VALUE] = v;
			n = WIRE_RETURN_VALUE + 1;
		}
		break;
	default:
		w[WIRE_BRANCH_PC] = tf->tpc;
		w[WIRE_BRANCH_TARGET] = o->target;
		w[WIRE_BRANCH_FLAGS] = (o->taken ? WIRE_BRANCH_TAKEN : 0) |
				       (o->annulled ? WIRE_BRANCH_ANNULLED : 0);
		n = WIRE_BRANCH_FLAGS + 1;
		if (sparc_code_bytes != TARCH_BYTES_OFF) {
			w[WIRE_BRANCH_SLOT] = sparc_code_word(tf->tpc + 4);
			n = WIRE_BRANCH_SLOT + 1;
		}
		break;
	}
	tracer_fire(p, p->kind, w, n, &ctx);
}

#endif
