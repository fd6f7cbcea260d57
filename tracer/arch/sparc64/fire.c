/*
 * fire.c — the sparc64 fire path: the illegal_instruction hook
 * (sparc64_probe_trap) and the steps it dispatches to.
 *
 * A firing goes: read the trapped word at TPC (a probe's is `illtrap
 * <index>`, fbt.c), find the probe by that index, and then either the
 * quick path (quick.h: a count-only firing of a site that reads nothing
 * but the frame, counted and resumed inline) or the full one: load the
 * registers the site (or a program, or check mode) reads, take check
 * mode's state before (check.c), hand a shell-game probe to its baseline
 * (shellgame.c), else emulate the site by what it is — a return, an
 * out-of-line word, a save, a CTI — record the firing, and edit the trap
 * frame so that `retry` resumes where the displaced instruction would
 * have left the thread; then check mode's state after.
 *
 * Registers are read and written where the trapped context keeps them:
 * %g and %o in the trap frame, %l and %i in the trapped window's save area
 * (trap_entry stored them there; a write to one flushes the windows
 * first, trapframe.h). CCR comes from TSTATE, fcc0..3 from %fsr (read with
 * PSTATE.PEF set for that moment). The record (sparc64_record_fire) is
 * made from the state before the displaced instruction, which is also
 * what a probe program reads (context.c).
 *
 * Every step below is called once from sparc64_probe_trap and inlined
 * there: the hook is one function with one frame, as the cost of a firing
 * is measured (bench firepath) against the bare trap's.
 */
#include "arch/arch_sparc64.h"
#include "arch/sparc64.h"
#include "arch/trapframe.h"
#include "check.h"
#include "console.h"
#include "context.h"
#include "cpu.h"
#include "emulate.h"
#include "fire.h"
#include "mm.h"
#include "physstore.h"
#include "quick.h"
#include "record.h"
#include "stamp.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

#define always_inline inline __attribute__((always_inline))

extern const char tracer_bare_illtrap[];

/* The trapped registers into r; false if the trapped window's save area
 * is unmapped (the kernel then stops with the trap). Without window,
 * %l and %i are left out (and unset): the caller reads none of them.
 * watch.c's and check.c's too. */
bool sparc64_load_regs(struct trapframe *tf, struct sparc_regs *r, bool window)
{
	r->pc = tf->tpc;
	r->npc = tf->tnpc;
	r->ccr = (uint8_t)(tf->tstate >> 32);
	for (unsigned n = 0; n < 8; n++) {
		r->r[n] = n ? tf->g[n] : 0;
		r->r[n + 8] = tf->o[n];
	}
	if (!window)
		return true;
	const uint64_t *li = trapframe_reg_read(tf, 16);   /* %l0..%l7, %i0..%i7 */
	if (!li)
		return false;
	for (unsigned n = 0; n < 16; n++)
		r->r[n + 16] = li[n];
	return true;
}

/* The record's one copy is record.h's, inlined into the slot's C half
 * (tramp_fire.c) and called here. */
void sparc64_record_fire(const struct probe *p, struct trapframe *tf,
			 const struct sparc_regs *r, const struct sparc_outcome *o)
{
	sparc64_record(p, tf, r, o);
}

_Noreturn void sparc64_fire_failed(const struct probe *p, const char *what,
				   uint64_t value)
{
	panic("probe %u at 0x%lx: %s (0x%llx)", p->id, (unsigned long)p->addr,
	      what, (unsigned long long)value);
}

/* ---- finding the probe ---- */

/* The word at TPC; false if it cannot be read and no probe is there.
 * Reading it is reading code: while any page is execute-only (seed 003's
 * method 1, mm.h), or `trace bytes` asks, it is read as sparc_code_read
 * does — by physical address, or through trap_try, a fault then leaving
 * the probe to be found by its address. */
static always_inline bool trapped_word(const struct trapframe *tf, uint32_t *word)
{
	if (__builtin_expect(!mm_exec_only_pages && sparc_code_bytes == TARCH_BYTES_OFF, 1)) {
		*word = *(const volatile uint32_t *)tf->tpc;
		return true;
	}
	if (sparc_code_read(tf->tpc, word))
		return true;
	const struct probe *q = tracer_lookup(tf->tpc);
	if (!q)
		return false;
	*word = q->id;
	return true;
}

/* The probe an `illtrap <index>` at tpc names; 0 if it names none armed
 * there (not a word we wrote). */
static always_inline struct probe *probe_of(uint32_t index, uint64_t tpc)
{
	if (index >= TRACER_MAX_PROBES)
		return 0;
	struct probe *p = &tracer_probes[index];
	if (p->state == PROBE_FREE || p->addr != tpc)
		return 0;
	return p;
}

/* ---- the full path ---- */

/* Whether p's fire path, short of a program, check mode or a window
 * its site reads (those load everything), reads a %g or %o register
 * through the register copy: a return site's target and value, a jmpl's
 * or BPr's rs1/rs2. A branch on the condition codes, a call and an
 * out-of-line site read none, and a save reads its operands from the
 * frame itself (frame_operands): their firing copies no register out of
 * the trap frame. */
static always_inline bool reads_globals_outs(const struct probe *p)
{
	switch (p->site.what) {
	case SPARC_SITE_CTI:
		return p->site.cti.cls == SPARC_JMPL || p->site.cti.cls == SPARC_BPR;
	case SPARC_SITE_OOL:
	case SPARC_SITE_SAVE:           /* its operands come from the frame */
		return false;
	default:
		return true;
	}
}

/* Into r, what the firing reads: the %l/%i only when the site
 * (tracer_site.h), a program or check mode may read them; %fsr for an
 * FP branch. */
static always_inline void load_state(const struct probe *p, struct trapframe *tf,
				     struct sparc_regs *r, bool check)
{
	const struct sparc_cti *c = &p->site.cti;
	bool window = check || p->gated || p->site.window;
	if (window || reads_globals_outs(p)) {
		if (!sparc64_load_regs(tf, r, window))
			sparc64_fire_failed(p, "the trapped %sp is not mapped",
					    trapframe_sp(tf));
	} else {                /* what a branch or call on the CCR reads */
		r->pc = tf->tpc;
		r->npc = tf->tnpc;
		r->ccr = (uint8_t)(tf->tstate >> 32);
		r->r[0] = r->r[SPARC_O7] = 0;   /* rd, saved and put back below */
	}
	if (p->site.what == SPARC_SITE_CTI &&
	    (c->cls == SPARC_FBFCC || c->cls == SPARC_FBPFCC)) {
		if (!(tf->tstate >> TSTATE_PSTATE_SHIFT & PSTATE_PEF))
			sparc64_fire_failed(p, "an FP branch with PSTATE.PEF clear "
					    "would trap fp_disabled; tstate", tf->tstate);
		r->fsr = sparc64_read_fsr();
	}
}

/* ret, retl, return: record, then resume at the delay slot with the
 * target after it; `return` restores the caller's window on the way back
 * (restore2, trapframe.h). */
static always_inline void emulate_return(const struct probe *p, struct trapframe *tf,
					 const struct sparc_regs *r,
					 const struct sparc_outcome *o)
{
	if (o->target & 3)
		sparc64_fire_failed(p, "return to a misaligned address", o->target);
	sparc64_record_fire(p, tf, r, o);
	tracer_stamp(TRACER_STAMP_FIRE);
	tf->restore2 = 1;
	tf->tpc = tf->tnpc;
	tf->tnpc = o->target;
	tracer_stamp(TRACER_STAMP_EMULATE);
}

/* An out-of-line word: record, then the copy in its slot (ool.c), or
 * check mode's slot (ool_check.c), which records the state itself. */
static always_inline void run_ool(const struct probe *p, struct trapframe *tf,
				  const struct sparc_regs *r,
				  const struct sparc_outcome *o)
{
	sparc64_record_fire(p, tf, r, o);
	tracer_stamp(TRACER_STAMP_FIRE);
	if (__builtin_expect(p->site.checked, 0)) {
		ool_check_before(p, tf);        /* the checked slot */
		return;
	}
	resume_ool(p, tf);
	tracer_stamp(TRACER_STAMP_EMULATE);
}

/* A function's save: record, then resume in the window trap_entry's own
 * save opened (quick.h's resume_save). */
static always_inline void emulate_save(const struct probe *p, struct trapframe *tf,
				       const struct sparc_regs *r,
				       const struct sparc_outcome *o)
{
	sparc64_record_fire(p, tf, r, o);
	tracer_stamp(TRACER_STAMP_FIRE);
	resume_save(p, tf);
	tracer_stamp(TRACER_STAMP_EMULATE);
}

/* A CTI writes the PC, the nPC and at most one register (call: %o7,
 * jmpl: rd), so r is emulated in place and put back as it was for the
 * record and the program, which see the state before; no copy of the
 * whole register file is made (gcc makes one a memcpy call). */
static always_inline void emulate_cti(const struct probe *p, struct trapframe *tf,
				      struct sparc_regs *r, struct sparc_outcome *o)
{
	const struct sparc_cti *c = &p->site.cti;
	unsigned rd = c->cls == SPARC_CALL ? SPARC_O7 : c->cls == SPARC_JMPL ? c->rd : 0;
	uint64_t pc = r->pc, npc = r->npc, old = r->r[rd], fault;
	if (sparc_emulate(c, r, o, &fault) != 0)
		sparc64_fire_failed(p, "jmpl to a misaligned address", fault);
	uint64_t new_pc = r->pc, new_npc = r->npc, value = r->r[rd];
	r->pc = pc, r->npc = npc, r->r[rd] = old;
	tracer_stamp(TRACER_STAMP_EMULATE);
	sparc64_record_fire(p, tf, r, o);
	tracer_stamp(TRACER_STAMP_FIRE);
	if (rd)
		*trapframe_reg(tf, rd) = value;
	tf->tpc = new_pc;
	tf->tnpc = new_npc;
}

/* Every firing the quick path does not take: the registers, check mode's
 * state before, then the mechanism and the site's emulation, with tf
 * edited for the retry; check mode's record last. */
static always_inline void fire_full(struct probe *p, struct trapframe *tf)
{
	struct sparc_regs r;
	struct sparc_outcome o = { 0 };
	/* (An out-of-line site's check is its slot's: site.checked.) */
	bool check = tracer_check_mode && sparc64_emulates(p) &&
		     p->site.what != SPARC_SITE_OOL;
	load_state(p, tf, &r, check);
	unsigned long chk[SPARC64_CHECK_WORDS];
	if (check)
		sparc64_check_before(p, tf, &r, chk);

	if (p->site.what == SPARC_SITE_RETURN) {
		o.target = operand1(p->site.insn, &r) + operand2(p->site.insn, &r);
		o.taken = true;
	}
	if (p->mechanism == MECHANISM_SHELLGAME) {
		sparc64_shellgame_fire(p, tf, &r, &o);  /* retry runs the original */
		return;
	}
	switch (p->site.what) {
	case SPARC_SITE_RETURN:
		emulate_return(p, tf, &r, &o);
		break;
	case SPARC_SITE_OOL:            /* never check: its slot checks */
		run_ool(p, tf, &r, &o);
		return;
	case SPARC_SITE_SAVE:
		emulate_save(p, tf, &r, &o);
		break;
	default:
		emulate_cti(p, tf, &r, &o);
		break;
	}
	if (check)
		sparc64_check_after(p, tf, chk);
}

/* The illegal_instruction hook (trap.h): if TPC holds one of our
 * ILLTRAPs, record and emulate (or run the shell game), with tf edited for
 * the retry; else declined. */
int sparc64_probe_trap(struct trapframe *tf)
{
	tracer_stamp(TRACER_STAMP_ENTRY);
	uint32_t word;
	if (!trapped_word(tf, &word) || word >> 22 != 0)
		return TRAP_DECLINED;           /* not an illtrap we wrote */
	if (tf->tpc == (uintptr_t)tracer_bare_illtrap) {
		tf->tpc = tf->tnpc;             /* the bare round trip */
		tf->tnpc += 4;
		return TRAP_HANDLED;
	}
	struct probe *p = probe_of(word, tf->tpc);
	if (!p)
		return TRAP_DECLINED;
	tracer_stamp(TRACER_STAMP_LOOKUP);
	if (__builtin_expect(quick_fire(p, tf), 1))    /* inline: no call */
		return TRAP_HANDLED;
	fire_full(p, tf);
	return TRAP_HANDLED;
}
