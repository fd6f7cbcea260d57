/*
 * quick.h — the quick path of the sparc64 fire path (fire.c), and the
 * resumes that read nothing but the trap frame, which the full path
 * shares.
 *
 * A firing that only counts (tracer_counts_only) of an emulate probe whose
 * site reads nothing but the frame (site.quick, set when armed, fbt.c: a
 * branch on the CCR, a call, a save reading no %l/%i, an out-of-line
 * word), with check mode off, is counted and resumed right after the
 * lookup, past the tests the full path makes: no register copy, no
 * record, no test of what the site cannot be. Everything here is static
 * inline and included by fire.c alone, so the quick path is a straight
 * run of code inside sparc64_probe_trap with no call in it.
 */
#ifndef SPARC64_QUICK_H
#define SPARC64_QUICK_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/trapframe.h"
#include "cpu.h"
#include "emulate.h"
#include "ool.h"
#include "stamp.h"
#include "tracer.h"

/* A format-3 operand read from the trapped state itself: a %g or %o in
 * the frame, a %l or %i in the trapped window's save area (the site's
 * window says it is read, and the fire path has checked it mapped). */
static inline uint64_t frame_reg(const struct trapframe *tf, unsigned n)
{
	if (n < 16)
		return n < 8 ? (n ? tf->g[n] : 0) : tf->o[n - 8];
	return *trapframe_reg_read(tf, n);
}

static inline uint64_t frame_operands(const struct trapframe *tf, uint32_t w)
{
	uint64_t b = (w >> 13) & 1 ? (uint64_t)((int64_t)((uint64_t)w << 51) >> 51)
				   : frame_reg(tf, w & 0x1f);
	return frame_reg(tf, (w >> 14) & 0x1f) + b;
}

/* The resumes that read nothing but the frame, shared by the quick path
 * and the full one. An out-of-line site: the copy, then site + 4. */
static inline void resume_ool(const struct probe *p, struct trapframe *tf)
{
	tf->tnpc = tf->tpc + 4;
	tf->tpc = ool_slot(p);
}

/* A save: resume in the window trap_entry's save opened (trapframe.h). */
static inline void resume_save(const struct probe *p, struct trapframe *tf)
{
	tf->save_sp = frame_operands(tf, p->site.insn);
	tf->tpc = tf->tnpc;
	tf->tnpc += 4;
}

/* A count-only firing of a quick site (tracer_site.h): what the full path
 * does for it, with no register copy and no test of what it cannot be.
 * A branch on the CCR or a call reads the PC, the nPC and the CCR, and a
 * call writes %o7, a frame register. */
static inline void resume_quick(const struct probe *p, struct trapframe *tf)
{
	if (p->site.what == SPARC_SITE_OOL) {
		resume_ool(p, tf);
		return;
	}
	if (p->site.what == SPARC_SITE_SAVE) {
		resume_save(p, tf);
		return;
	}
	struct sparc_regs r;
	struct sparc_outcome o;
	uint64_t fault;
	r.pc = tf->tpc;
	r.npc = tf->tnpc;
	r.ccr = (uint8_t)(tf->tstate >> 32);
	(void)sparc_emulate(&p->site.cti, &r, &o, &fault);     /* no jmpl: no fault */
	if (p->site.cti.cls == SPARC_CALL)
		tf->o[7] = r.r[SPARC_O7];
	tf->tpc = r.pc;
	tf->tnpc = r.npc;
}

/* The quick path: p's firing counted and resumed if it may take it (the
 * stamps as the full path takes them); false, having done nothing, if
 * not. */
static inline __attribute__((always_inline)) bool
quick_fire(const struct probe *p, struct trapframe *tf)
{
	if (!(__builtin_expect(p->site.quick, 1) && !tracer_check_mode &&
	      tracer_counts_only(p)))
		return false;
	tracer_fire_count(p, this_cpu()->id);
	tracer_stamp(TRACER_STAMP_FIRE);
	resume_quick(p, tf);
	tracer_stamp(TRACER_STAMP_EMULATE);
	return true;
}

#endif
