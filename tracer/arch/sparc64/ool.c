/*
 * ool.c — the out-of-line path of sparc64 probes: run the displaced
 * instruction from a copy instead of emulating it, with no second trap.
 *
 * Which sites take it is decided when the probe is added (fbt.c's
 * tarch_decode): a site that is none of the emulated ones (a CTI,
 * emulate.c; a function's `save`; `return`) and whose word runs the same
 * from another address (sparc_ool_ok below). It is a path, not a
 * mechanism: the ILLTRAP still delivers the trap and the fire path records
 * as for any site; then it resumes with TPC = the probe's slot and TNPC =
 * site + 4, so the `retry` runs the copy on exactly the trapped state and
 * goes on at the original stream — no branch back is needed, as in
 * illumos fasttrap's scratch space for non-CTIs. A trap the copy takes
 * itself (a TLB miss, a window spill) saves that TPC/TNPC pair and its
 * handler's retry comes back to it.
 *
 * Which words cannot run from a copy, and why:
 *   - CTIs (emulated; a CTI's delay slot is refused as a site anyway);
 *   - `rd %pc`: it reads the PC, which would be the slot's (emulating it
 *     is not done);
 *   - ILLTRAP and undefined words, Tcc (a CTI that traps by design):
 *     their handlers read TPC, the slot's;
 *   - rdpr/wrpr, saved/restored and writes to ancillary state registers
 *     other than %y, %ccr, %asi and %fprs (%softint, %tick_cmpr, ...):
 *     privileged state that the kernel's trap, window and timer machinery
 *     owns, where no probe belongs.
 * Every other word — ALU, sethi/nop, loads and stores in any address
 * space (the copy runs at the site's privilege), save/restore not to
 * %sp, FPops, membar, flush — runs the same from the slot.
 *
 * A probe armed in check mode gets a checked slot instead, whose second
 * trap records the state after the copy (ool_check.c).
 *
 * Lossless as emulation is: the ILLTRAP stays while armed, and a slot is
 * written before its probe is armed and never while it is (one slot per
 * probe id, written when that id's probe is armed and holds another
 * word), so every thread that reaches the site meanwhile traps, is
 * recorded and runs the same copy. This kernel runs on one CPU; a slot
 * is rewritten only when its id is reused for another site after `probe
 * clear`, and a thread preempted at a slot across that clear would run
 * the new word (i386's ool.c says the same).
 */
#include "ool.h"
#include "arch/sparc64.h"
#include "tracer.h"
#include "tracer_arch.h"

extern uint32_t ool_slots[], ool_slots_end[];

_Static_assert(OOL_SLOTS >= TRACER_MAX_PROBES, "ool.h: a slot per probe id");

bool sparc_ool_ok(uint32_t w, const char **why)
{
	unsigned op = w >> 30, op2 = (w >> 22) & 7, op3 = (w >> 19) & 0x3f;
	unsigned rd = (w >> 25) & 0x1f, rs1 = (w >> 14) & 0x1f;

	if (op == 0 && op2 != 4) {
		*why = op2 == 0 ? "an ILLTRAP/unimp word (a probe's, or one a "
				  "struct-returning call expects)"
				: "a control transfer or an undefined word";
		return false;
	}
	if (op == 1) {
		*why = "a control transfer";
		return false;
	}
	if (op != 2)
		return true;                            /* loads and stores */
	switch (op3) {
	case 0x28:                                      /* rd %asr */
		if (rs1 == 5) {
			*why = "rd %pc reads the PC (out of line: the slot's)";
			return false;
		}
		return true;
	case 0x29: case 0x2a: case 0x31: case 0x32: case 0x33:
		*why = "privileged state (rdpr/wrpr, saved/restored): the kernel's "
		       "trap and window machinery";
		return false;
	case 0x30:                                      /* wr %asr */
		if (rd == 0 || rd == 2 || rd == 3 || rd == 6)
			return true;
		*why = "writes an ancillary state register the kernel's timer and "
		       "traps own (or sir)";
		return false;
	case 0x38: case 0x39: case 0x3a: case 0x3e:
		*why = "a control transfer (or a trap by design)";
		return false;
	case 0x3f:
		*why = "an undefined word";
		return false;
	}
	return true;
}

uintptr_t ool_slot(const struct probe *p)
{
	return (uintptr_t)&ool_slots[p->id];
}

void ool_prepare(const struct probe *p)
{
	uint32_t *slot = &ool_slots[p->id];
	if (*slot == p->site.insn)
		return;
	*(volatile uint32_t *)tracer_text_alias((uintptr_t)slot) = p->site.insn;
	flush_insn(slot);
}
