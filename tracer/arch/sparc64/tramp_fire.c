/*
 * tramp_fire.c — the C half of a tramp probe's firing (tramp.c): what a
 * slot's way into C calls for a firing its counting and recording paths
 * do not take (a program, a gate, a probe no longer enabled, stamps asked
 * for, check mode, a record the ring has no room for without a PAD, a
 * commit or a kick).
 *
 * tf is the state at the site as a trap there would have left it
 * (tramp_slots.S builds it: TPC the site, the site's %o, %g, %y, CCR), so
 * the record is made by the same sparc64_record as an illtrap's (record.h,
 * inlined here: one register window less under the record), and
 * a program reads the same context. The slot stored the site's %l/%i
 * in its window's save area, as trap_entry does, which is where
 * trapframe_reg_read looks (a stack walk flushes the rest). Nothing here
 * changes tf but check mode, which clears IE in it (tramp_check.c):
 * the slot runs the displaced instruction itself once this returns, so
 * there is no emulate stage to stamp (as i386's opt).
 */
#include "arch/arch_sparc64.h"
#include "arch/sparc64.h"
#include "arch/trapframe.h"
#include "context.h"
#include "fire.h"
#include "record.h"
#include "stamp.h"
#include "tracer.h"
#include "tramp.h"

void sparc64_tramp_fire(struct trapframe *tf, struct probe *p)
{
	tracer_stamp(TRACER_STAMP_ENTRY);
	tracer_stamp(TRACER_STAMP_LOOKUP);
	struct sparc_regs r;
	struct sparc_outcome o = { 0 };
	bool window = p->site.checked ||
		      (!tracer_counts_only(p) && (p->gated || p->site.window));
	sparc64_load_regs(tf, &r, false);       /* %g, %o: no call, no fail */
	if (window) {
		/* The slot stored the site's %l/%i at its %sp + BIAS just now
		 * (tramp_slots.S), so the area is mapped: they are read here,
		 * not through trapframe_reg_read, whose check of the mapping
		 * walks the page table twice through three frames more, each
		 * a window: at calltree's depth each window beyond the eight
		 * is a spill trap and, on the way back up, a fill trap. */
		const uint64_t *li = (const uint64_t *)(trapframe_sp(tf) + STACK_BIAS);
		for (unsigned n = 0; n < 16; n++)
			r.r[n + 16] = li[n];
	}
	sparc64_record(p, tf, &r, &o);
	tracer_stamp(TRACER_STAMP_FIRE);
	if (p->site.checked)            /* the state before; IE off in tf */
		tramp_check_before(p, tf, &r);
}
