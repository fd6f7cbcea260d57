/*
 * ool_check.c — check mode for sparc64's out-of-line sites: the state
 * before and after the copy of the displaced word, for the host to re-run
 * in unicorn (bench/check/sparc64_ool.py).
 *
 * An out-of-line firing emulates nothing: the retry runs a copy of the
 * word from the probe's slot (ool.c). What can be wrong is the copy or its
 * surroundings — a slot holding another word, a register, %y or the CCR
 * the fire path did not give back, a resume at the wrong place — so check
 * mode records what the copy did, and the host runs the site's own word
 * from the same state and compares, as it re-runs the emulations (check.c's
 * sparc64_check_before/after) and i386's out-of-line slots (its
 * ool_check.c, the model here).
 *
 * How. A probe armed while check mode is on gets a checked slot of two
 * words in ool_check_slots: the copy, then `illtrap OOL_CHECK_MARK`.
 * (The plain slot is one word resumed with TNPC = site + 4; a second
 * trap is the cheapest way to stop after the copy, and its frame
 * describes the state after exactly as the first describes the state
 * before. Plain slots and the plain fire path are unchanged.)
 *   - before (ool_check_before, from the fire path after the firing is
 *     recorded): every register — %g and %o from the frame, %l and %i
 *     from the trapped window's save area —, PC/nPC, CCR, %y and %fsr
 *     (sparc64_check_state); TPC = the checked slot, TNPC = its second
 *     word; PSTATE.IE cleared in TSTATE, so no interrupt runs between the
 *     copy and the ILLTRAP after it. For a load or store (op 3), its
 *     effective address rs1 + simm13|rs2, computed from these registers
 *     as the CPU will, and the SPARC64_CHECK_OOL_MEM_WORDS doublewords
 *     from it rounded down to 8 — every access of at most 8 bytes the
 *     word can make — if they lie in mapped pages. Kept in one slot: this
 *     kernel runs on one CPU, and nothing else runs on it meanwhile.
 *   - after (the illegal_instruction hook below, at the mark, after the
 *     probes' own hook has declined it: OOL_CHECK_MARK is no probe's
 *     index): the trapped state is the copy's; IE goes back to what it
 *     was, TPC/TNPC resume at site + 4 and site + 8 (and are recorded so);
 *     the doublewords are read again at the same address, and the CHECK
 *     record of SPARC64_CHECK_OOL_WORDS goes out after the firing's own.
 *
 * What the record cannot carry is refused in check mode when the probe is
 * armed (ool_checkable, naming what): window moves (save/restore not to
 * %sp, flushw: the record holds one window and no spill), FP operates and
 * FP loads/stores (no FP registers recorded), alternate-space accesses
 * (casa/casxa among them: the record holds the primary space's memory),
 * reads of ancillary state other than %y and %ccr (%tick, %asi, %fprs:
 * values the host cannot reproduce) and writes other than %y and %ccr,
 * undefined words. ool.c refuses the rest for every mode.
 *
 * ool_check_broken (0; tests set it through the GDB stub) makes the hook
 * flip bit 0 of %y on the way back from a checked slot: a fire path that
 * does not give %y back, which the host must report. (Harmless where the
 * test uses it: the kernel's only reader of %y is a 32-bit udiv, right
 * after its own `wr %g0, %y`.)
 *
 * The mark is a trap at a PC in the tracer's text, so the kernel's
 * accounting of the tracer's own traps (miss_account.h) counts one per
 * checked firing: a check run's "faults" are its out-of-line records.
 *
 * Cost: with check mode off, nothing here runs; the fire path tests one
 * byte of the probe (site.checked).
 */
#include "arch/sparc64.h"
#include "arch/trapframe.h"
#include "check.h"
#include "console.h"
#include "context.h"
#include "mm.h"
#include "ool.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

extern uint32_t ool_check_slots[], ool_check_slots_end[];

_Static_assert(SPARC64_CHECK_OOL_MEM_WORDS * 8 >= 8 + 8,
	       "ool_check.c: the doublewords cover any access of up to 8 bytes");

static struct {
	const struct probe *probe;      /* 0: nothing kept */
	uint64_t tstate_ie;             /* PSTATE.IE as TSTATE held it */
	unsigned long w[SPARC64_CHECK_OOL_WORDS];
} before;

/* Marks at a checked slot's end with no state kept for its probe (read
 * with gdb): no record goes out, and the host's count of CHECK records
 * per firing shows the gap. */
unsigned long ool_check_unpaired;
volatile unsigned ool_check_broken;

#define TSTATE_IE ((uint64_t)PSTATE_IE << TSTATE_PSTATE_SHIFT)

bool ool_checkable(uint32_t w, const char **why)
{
	unsigned op = w >> 30, op3 = (w >> 19) & 0x3f;
	unsigned rd = (w >> 25) & 0x1f, rs1 = (w >> 14) & 0x1f;

	if (op == 3) {
		if (op3 & 0x10) {
			*why = "check mode: an alternate-space access (casa, casxa): "
			       "not recorded";
			return false;
		}
		if (op3 >= 0x20 && op3 <= 0x27) {
			*why = "check mode: an FP load or store: no FP register is recorded";
			return false;
		}
		if (op3 == 0x0c || (op3 >= 0x28 && op3 != 0x2d)) {
			*why = "check mode: an undefined word";
			return false;
		}
		return true;
	}
	if (op != 2)
		return true;                    /* sethi, nop */
	switch (op3) {
	case 0x3c: case 0x3d: case 0x2b:
		*why = "check mode: save/restore/flushw move register windows: "
		       "one is recorded";
		return false;
	case 0x34: case 0x35: case 0x36: case 0x37:
		*why = "check mode: an FP or impdep operate: no FP register is recorded";
		return false;
	case 0x28:                              /* rd %asr, membar, stbar */
		if (rs1 == 0 || rs1 == 2 || (rs1 == 15 && rd == 0))
			return true;
		*why = "check mode: reads %tick, %asi, %fprs or an ASR not recorded";
		return false;
	case 0x30:                              /* wr %asr */
		if (rd == 0 || rd == 2)
			return true;
		*why = "check mode: writes %asi or %fprs, not recorded";
		return false;
	}
	return true;
}

static uint32_t *checked_slot(const struct probe *p)
{
	return &ool_check_slots[2 * p->id];
}

void ool_check_prepare(const struct probe *p)
{
	uint32_t *slot = checked_slot(p);
	if (slot[0] != p->site.insn) {
		*(volatile uint32_t *)tracer_text_alias((uintptr_t)slot) = p->site.insn;
		flush_insn(slot);
	}
	if (slot[1] != OOL_CHECK_MARK) {
		*(volatile uint32_t *)tracer_text_alias((uintptr_t)&slot[1]) = OOL_CHECK_MARK;
		flush_insn(&slot[1]);
	}
}

static bool mapped(uintptr_t base)
{
	return mm_virt_to_phys((const void *)base) != (uintptr_t)-1 &&
	       mm_virt_to_phys((const void *)(base + 8 * SPARC64_CHECK_OOL_MEM_WORDS - 1)) !=
	       (uintptr_t)-1;
}

/* The doublewords of the memory part, read now: before or after. */
static void memory(unsigned long *w, unsigned at)
{
	uintptr_t base = w[SPARC64_CHECK_OOL_MEM] & ~(uintptr_t)7;
	for (unsigned i = 0; i < SPARC64_CHECK_OOL_MEM_WORDS; i++)
		w[at + i] = w[SPARC64_CHECK_OOL_MEM_STATE] == 1
			    ? ((const volatile uint64_t *)base)[i] : 0;
}

void ool_check_memory(uint32_t insn, const struct sparc_regs *r, unsigned long *w,
		      bool first)
{
	if (!first) {
		memory(w, SPARC64_CHECK_OOL_MEM_AFTER);
		return;
	}
	uint64_t ea = 0, state = 0;
	if (insn >> 30 == 3) {
		uint64_t b = (insn >> 13) & 1 ? (uint64_t)((int64_t)((uint64_t)insn << 51) >> 51)
					      : r->r[insn & 0x1f];
		ea = r->r[(insn >> 14) & 0x1f] + b;
		state = mapped(ea & ~(uint64_t)7) ? 1 : 2;
	}
	w[SPARC64_CHECK_OOL_MEM] = ea;
	w[SPARC64_CHECK_OOL_MEM_STATE] = state;
	memory(w, SPARC64_CHECK_OOL_MEM_BEFORE);
}

void ool_check_before(const struct probe *p, struct trapframe *tf)
{
	struct sparc_regs r;
	unsigned long *w = before.w;

	if (!sparc64_load_regs(tf, &r, true))
		panic("probe %u at 0x%lx: the trapped %%sp is not mapped (0x%lx)",
		      p->id, (unsigned long)p->addr, (unsigned long)trapframe_sp(tf));
	sparc64_check_state(tf, &r, w);
	ool_check_memory(p->site.insn, &r, w, true);
	before.tstate_ie = tf->tstate & TSTATE_IE;
	before.probe = p;
	tf->tstate &= ~TSTATE_IE;
	tf->tpc = (uintptr_t)checked_slot(p);
	tf->tnpc = tf->tpc + 4;
}

/* The illegal_instruction hook: the mark after a checked slot's copy, or
 * declined. */
static int ool_check_trap(struct trapframe *tf)
{
	uintptr_t at = tf->tpc, base = (uintptr_t)ool_check_slots;
	if (at < base || at >= (uintptr_t)ool_check_slots_end || (at - base) % 8 != 4)
		return TRAP_DECLINED;
	unsigned id = (unsigned)((at - base) / 8);
	if (id >= TRACER_MAX_PROBES)
		return TRAP_DECLINED;
	const struct probe *p = &tracer_probes[id];
	if (p->site.what != SPARC_SITE_OOL || !p->site.checked)
		return TRAP_DECLINED;
	tf->tpc = p->addr + 4;
	tf->tnpc = p->addr + 8;
	if (before.probe != p) {
		ool_check_unpaired++;
		return TRAP_HANDLED;
	}
	before.probe = 0;
	tf->tstate = (tf->tstate & ~TSTATE_IE) | before.tstate_ie;
	if (ool_check_broken)
		tf->y ^= 1;
	struct sparc_regs r;
	if (!sparc64_load_regs(tf, &r, true))
		panic("probe %u: the %%sp after its copy is not mapped (0x%lx)",
		      p->id, (unsigned long)trapframe_sp(tf));
	unsigned long *w = before.w;
	sparc64_check_state(tf, &r, w + SPARC64_CHECK_NREGS);
	ool_check_memory(p->site.insn, &r, w, false);
	tracer_record(p, WIRE_EVENT_CHECK, w, SPARC64_CHECK_OOL_WORDS);
	return TRAP_HANDLED;
}

void ool_check_init(void)
{
	trap_hook_add(TT_ILLEGAL_INSTRUCTION, ool_check_trap);
}
