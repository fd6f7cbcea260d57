/*
 * ool.c — the out-of-line path of i386 probes: run the displaced
 * instruction from a copy instead of emulating it, with no second trap.
 *
 * Which sites take it is decided when the probe is added (fbt.c's
 * tarch_decode): a site whose instruction is none of the emulated forms
 * (emulate.c: those are cheaper and the only way for ret and the stack
 * frame moves) but which runs the same at any address (insn.c says which
 * do not, and why). It is a path, not a mechanism: int3 or ud2 (or opt's
 * int3 stage, or an opt return site) still delivers the trap and the fire
 * path records as for any site; then, instead of emulating, it resumes
 * the trapped context at the probe's slot with every register and EFLAGS
 * as they were at the site:
 *
 *     slot:   <the displaced instruction, byte for byte>
 *             jmp  site + len        (rel32, computed for the slot's address)
 *
 * so the instruction runs natively on exactly the state it would have
 * met, and the jmp goes on at the next instruction — Linux's boosted
 * kprobe, without its single-step. An indirect call emulate.c does not
 * take (an fs/gs override, a 16-bit one) has its copy rewritten (insn.c's
 * i386_insn_indirect_call): `pushl $site+len; jmp *operand`, the return
 * address the call itself would push, so the callee returns past the
 * site and the slot's jmp back is never reached.
 *
 * Lossless as emulation is: the site keeps its trap while armed, and a
 * slot is written before its probe is armed and never while it is (one
 * slot per probe id, written when the id's probe is armed and holds other
 * bytes), so every CPU and thread that reaches the site meanwhile traps,
 * is recorded and runs the same copy. A slot is rewritten only when its
 * id is reused for another site after `probe clear`; a thread preempted
 * inside the old copy across that clear would run the new one — the
 * window is one instruction and a jmp, and the probe table is cleared only
 * with every probe disabled, so a caller that clears while threads still
 * run the traced code takes that risk (opt.c's stopped-world scan is the
 * cure, not paid for here).
 *
 * Check mode's slot (ool_check.c) ends the copy with an int3 instead of
 * the jmp: the trap records the state the copy left and resumes at site +
 * len. Which variant a slot holds is fixed when its probe is armed
 * (site.checked); with check mode off the slot is the plain one above.
 *
 * Written through the text alias like a site, so QEMU's TCG drops any
 * translation of the old bytes (the slots have pages of their own,
 * ool_slots.S); the arm that follows syncs every CPU before any can trap
 * into the slot.
 */
#include "ool.h"
#include "insn.h"
#include "kstring.h"
#include "tracer.h"
#include "tracer_arch.h"

extern char ool_slots[], ool_slots_end[];

_Static_assert(OOL_SLOTS >= TRACER_MAX_PROBES, "ool.h: a slot per probe id");
_Static_assert(I386_OOL_COPY_MAX + 5 <= OOL_SLOT_BYTES, "ool.h: a copy and a jmp fit");

uint32_t ool_slot(const struct probe *p)
{
	return (uint32_t)(uintptr_t)(ool_slots + p->id * OOL_SLOT_BYTES);
}

void ool_prepare(const struct probe *p)
{
	uint8_t want[OOL_SLOT_BYTES];
	unsigned len = p->site.insn.len, copy = p->site.copy_len;
	uint32_t slot = ool_slot(p);

	memset(want, 0xcc, sizeof want);
	memcpy(want, p->site.copy, copy);
	if (p->site.checked) {
		ool_check_slot(p, want);        /* the copy, then its int3 */
	} else {
		/* (a rewritten indirect call never gets here: its jmp leaves) */
		want[copy] = 0xe9;                             /* jmp rel32 */
		uint32_t rel = (uint32_t)p->addr + len - (slot + copy + 5);
		memcpy(want + copy + 1, &rel, 4);
	}
	if (memcmp((const void *)slot, want, sizeof want) == 0)
		return;
	uint8_t *alias = tracer_text_alias(slot);
	for (unsigned i = 0; i < sizeof want; i++)
		((volatile uint8_t *)alias)[i] = want[i];
}
