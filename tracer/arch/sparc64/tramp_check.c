/*
 * tramp_check.c — check mode for tramp's trampolines (tramp.c): the state
 * before and after each displaced instruction as the trampoline runs it
 * natively, in the CHECK records the host already re-runs in unicorn
 * (bench/check/sparc64.py): an emulation's (check.h) for `save`, `ret`,
 * `retl`, `return`, an out-of-line copy's (ool_check.c) for any other
 * entry word. A slot armed in check mode sends every firing to C, which
 * keeps the state before (tramp_check_before, IE left clear for the
 * slot), and its tail stops on `illtrap TRAMP_CHECK_MARK` right after the
 * displaced instruction: [word][mark] for an entry; [CTI][mark][delay
 * slot][mark 2] for a return, the mark in the CTI's delay slot with TNPC
 * its target; mark 2 ends the delay slot's copy, an out-of-line record,
 * or for a `restore` (`ret; restore %o0, 0, %o0`) an emulation's: the
 * state before in the function's window with the caller's window the
 * restore goes back to (check.c, as a `return` has it), the state after
 * in that window, which the host re-runs as it does a `return`.
 * tramp_check_broken (tests set it through GDB) flips %y at each mark (1)
 * or only at a restore's second mark (2), which the host must report.
 */
#include "arch/arch_sparc64.h"
#include "arch/sparc64.h"
#include "arch/trapframe.h"
#include "check.h"
#include "console.h"
#include "context.h"
#include "fire.h"
#include "mm.h"
#include "ool.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "tramp.h"
#include "wire.h"

#define TSTATE_IE ((uint64_t)PSTATE_IE << TSTATE_PSTATE_SHIFT)

_Static_assert(SPARC64_CHECK_OOL_WORDS <= SPARC64_CHECK_WORDS,
	       "tramp_check.c: one buffer holds either record");

enum { BROKEN_EVERY_MARK = 1, BROKEN_RESTORE_MARK = 2 };

static struct {
	const struct probe *probe;      /* 0: nothing kept */
	uint64_t tstate_ie;             /* PSTATE.IE as the site had it */
	unsigned long w[SPARC64_CHECK_WORDS];
	/* A return's delay slot, between the marks: its record's words
	 * before (an out-of-line record's, or a restore's emulation record
	 * with the caller's window), and the CTI's target, where the second
	 * mark resumes. */
	const struct probe *slot_probe;
	uint64_t target;
	unsigned long slot_w[SPARC64_CHECK_WORDS];
} before;

/* Marks with no state kept for their probe (read with gdb). */
unsigned long tramp_check_unpaired;
volatile unsigned tramp_check_broken;

static bool ool_form(const struct probe *p)
{
	return p->site.what == SPARC_SITE_OOL;
}

void tramp_check_before(const struct probe *p, struct trapframe *tf,
			const struct sparc_regs *r)
{
	if (ool_form(p)) {
		sparc64_check_state(tf, r, before.w);
		ool_check_memory(p->site.insn, r, before.w, true);
	} else {
		sparc64_check_before(p, tf, r, before.w);
	}
	before.tstate_ie = tf->tstate & TSTATE_IE;
	before.probe = p;
	tf->tstate &= ~TSTATE_IE;
}

/* The probe whose checked slot holds a mark at pc (which: 1 or 2), or 0. */
static const struct probe *marked(uintptr_t pc, unsigned *which)
{
	uintptr_t base = (uintptr_t)tramp_slots, size = 4 * TRAMP_SLOT_WORDS;
	if (pc < base || pc >= (uintptr_t)tramp_slots_end)
		return 0;
	uintptr_t at = (pc - base) % size;
	*which = at == 4 * (TRAMP_TAIL + 1) ? 1 : at == 4 * (TRAMP_TAIL + 3) ? 2 : 0;
	const struct probe *p = *which ? tramp_checked_probe((pc - base) / size) : 0;
	return p && p->site.checked ? p : 0;
}

/* The registers at the trap into a (w's SPARC64_CHECK_REGS) with PC/nPC
 * as the site's own code would have them. */
static void state_at(const struct probe *p, struct trapframe *tf, uint64_t pc,
		     uint64_t npc, struct sparc_regs *a, unsigned long *w,
		     bool restored)
{
	if (tramp_check_broken == BROKEN_EVERY_MARK ||
	    (tramp_check_broken == BROKEN_RESTORE_MARK && restored))
		tf->y ^= 1;
	if (!sparc64_load_regs(tf, a, true))
		panic("probe %u: the %%sp after its trampoline is not mapped (0x%lx)",
		      p->id, (unsigned long)trapframe_sp(tf));
	a->pc = pc;
	a->npc = npc;
	sparc64_check_state(tf, a, w);
}

/* The second mark, after a return's delay slot: its out-of-line record
 * (the state before is the first mark's, PC/nPC site + 4 and + 8), or a
 * restore's, the state after in the window it went back to (the trapped
 * one now); then on to the CTI's target. */
static int slot_done(const struct probe *p, struct trapframe *tf)
{
	tf->tpc = before.target;
	tf->tnpc = before.target + 4;
	tf->tstate = (tf->tstate & ~TSTATE_IE) | before.tstate_ie;
	if (before.slot_probe != p) {
		tramp_check_unpaired++;
		return TRAP_HANDLED;
	}
	before.slot_probe = 0;
	struct sparc_regs a;
	bool restored = tramp_slot_restore(p);
	state_at(p, tf, p->addr + 8, p->addr + 12, &a, before.slot_w + SPARC64_CHECK_NREGS,
		 restored);
	if (restored) {
		tracer_record(p, WIRE_EVENT_CHECK, before.slot_w, SPARC64_CHECK_WORDS);
		return TRAP_HANDLED;
	}
	ool_check_memory(p->site.slot, &a, before.slot_w, false);
	tracer_record(p, WIRE_EVENT_CHECK, before.slot_w, SPARC64_CHECK_OOL_WORDS);
	return TRAP_HANDLED;
}

/* The illegal_instruction hook at a mark: the trapped state is the
 * displaced instruction's, in the window it left (a save's callee, a
 * return's caller), so every register is read as it is; PC/nPC are
 * recorded as the site's own would be (site + 4 and site + 8, or site + 4
 * and the CTI's target: the mark stands for the site's delay slot);
 * check.h's rule for a save applies (the callee's %l and %o but %sp are
 * 0, not compared). It resumes at site + 4, or at the delay slot's copy
 * with TNPC as trapped (or the second mark, the delay slot checked too),
 * IE as it was unless the second mark follows. */
static int tramp_check_trap(struct trapframe *tf)
{
	unsigned which;
	const struct probe *p = marked(tf->tpc, &which);
	if (!p)
		return TRAP_DECLINED;
	if (which == 2)
		return slot_done(p, tf);
	bool entry = p->kind == WIRE_EVENT_ENTRY;
	bool slot = !entry && tramp_slot_checkable(p);
	uint64_t pc = p->addr + 4, npc = entry ? p->addr + 8 : tf->tnpc;
	tf->tpc = entry ? pc : tf->tpc + 4;             /* the delay slot's copy */
	tf->tnpc = slot ? tf->tpc + 4 : npc;            /* the second mark */
	if (before.probe != p) {
		tramp_check_unpaired++;
		if (slot) {                     /* no record; on past the mark */
			tf->tnpc = npc;
			tf->tstate = (tf->tstate & ~TSTATE_IE) | before.tstate_ie;
		}
		return TRAP_HANDLED;
	}
	before.probe = 0;
	struct sparc_regs a;
	unsigned long *after = before.w + SPARC64_CHECK_NREGS;
	state_at(p, tf, pc, npc, &a, after, false);
	if (slot) {
		sparc64_check_state(tf, &a, before.slot_w);
		before.slot_w[SPARC64_CHECK_PC] = pc;
		before.slot_w[SPARC64_CHECK_NPC] = pc + 4;
		if (!tramp_slot_restore(p))
			ool_check_memory(p->site.slot, &a, before.slot_w, true);
		else if (!sparc64_check_caller(&a, before.slot_w + 2 * SPARC64_CHECK_NREGS))
			panic("probe %u: the save area its restore goes back to is not "
			      "mapped (0x%lx)", p->id, (unsigned long)a.r[30]);
		before.target = npc;
		before.slot_probe = p;
	} else {
		tf->tstate = (tf->tstate & ~TSTATE_IE) | before.tstate_ie;
	}
	if (ool_form(p)) {
		ool_check_memory(p->site.insn, &a, before.w, false);
		tracer_record(p, WIRE_EVENT_CHECK, before.w, SPARC64_CHECK_OOL_WORDS);
		return TRAP_HANDLED;
	}
	if (p->site.what == SPARC_SITE_SAVE)
		for (unsigned n = 0; n < 8; n++) {
			after[SPARC64_CHECK_L0 + n] = 0;
			if (n != 6)
				after[SPARC64_CHECK_O0 + n] = 0;
		}
	tracer_record(p, WIRE_EVENT_CHECK, before.w, SPARC64_CHECK_WORDS);
	return TRAP_HANDLED;
}

void tramp_check_init(void)
{
	trap_hook_add(TT_ILLEGAL_INSTRUCTION, tramp_check_trap);
}
