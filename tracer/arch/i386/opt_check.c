/*
 * opt_check.c — check mode for jump-optimized probes: the state before and
 * after the copies of the displaced instructions, for the host to re-run.
 *
 * An opt firing emulates nothing: its detour (opt_detour.S) runs copies of
 * the displaced instructions natively, away from the site. What can be
 * wrong is the relocation — a copy that is not the instruction, a register
 * or flag the detour's head did not put back, a jump back to the wrong
 * place — so check mode records what the copies did, and the host runs the
 * site's own bytes in unicorn from the same state and compares
 * (bench/check/i386.py), as it re-runs int3's emulations.
 *
 * How. Armed while check mode is on, a slot gets check mode's detour: the
 * head's call goes to opt_common_checked, which records the firing as
 * usual and then calls opt_check_before; after the copy a second call
 * (opt_common_after) reaches i386_opt_after. The int3 stage (a firing
 * while the jmp goes in or out) resumes in the same copy, so its trap
 * handler calls opt_check_before on its trap frame first (fire.c): both
 * frames describe the state at the site the same way.
 *   - before: every register from the frame, ESP the address above its
 *     EFLAGS, EIP the site; the stack window (check.h: from ESP - 4 *
 *     I386_CHECK_OPT_BELOW, I386_CHECK_OPT_WINDOW words) read now. Kept in
 *     this CPU's slot. IF is cleared in the frame, so the popfl (or iret)
 *     that leaves for the copy keeps interrupts masked: nothing can run on
 *     this CPU between the copies and the second call, and the state the
 *     second call sees is the copies' own.
 *   - after: the second call's frame is the copies' state (its EIP the
 *     site + len the slot pushed); IF goes back to what it was before, in
 *     the frame and so in the record; the window is read again and the
 *     CHECK record of I386_CHECK_OPT_WORDS goes out after the firing's own
 *     record.
 * The window's words below ESP are the detour's own frame (dead stack),
 * identical before and during the copies; the host compares after-words at
 * or above ESP after only.
 *
 * Cost: with check mode off, nothing here runs and the detour is the plain
 * one byte for byte (opt.c chooses the variant when it writes the slot).
 */
#include "arch.h"
#include "arch/trapframe.h"
#include "arch/x86.h"
#include "check.h"
#include "cpu.h"
#include "opt.h"
#include "tracer.h"
#include "wire.h"

#define STACK_LOW      0x1000u          /* page 0 is unmapped */
#define STACK_HIGH     0x10000000u      /* the identity map: 256 MiB */

struct opt_before {
	const struct probe *probe;      /* 0: nothing kept */
	unsigned long w[I386_CHECK_OPT_WORDS];
};

static struct opt_before before[KERNEL_MAX_CPUS];
/* Second calls that found no state kept for their probe (read with gdb):
 * no record goes out, and the host's count of CHECK records per firing
 * shows the gap. */
unsigned long opt_check_unpaired;

static void window(uint32_t base, unsigned long *w)
{
	for (unsigned i = 0; i < I386_CHECK_OPT_WINDOW; i++) {
		uint32_t a = base + 4 * i;
		w[i] = a >= STACK_LOW && a <= STACK_HIGH - 4 ?
		       *(const volatile uint32_t *)a : 0;
	}
}

void opt_check_before(const struct probe *p, struct trapframe *tf)
{
	struct opt_before *b = &before[this_cpu()->id];
	uint32_t base = trapframe_sp(tf) - 4 * I386_CHECK_OPT_BELOW;
	i386_check_frame(tf, (uint32_t)p->addr, tf->eflags, b->w);
	tf->eflags &= ~(uint32_t)EFLAGS_IF;     /* before the window: it may hold it */
	b->w[I386_CHECK_OPT_WIN] = base;
	window(base, b->w + I386_CHECK_OPT_BEFORE);
	b->probe = p;
}

void i386_opt_after(struct trapframe *tf)
{
	const struct probe *p = (const struct probe *)(uintptr_t)tf->error;
	struct opt_before *b = &before[this_cpu()->id];
	if (b->probe != p) {
		opt_check_unpaired++;
		return;
	}
	b->probe = 0;
	uint32_t in = (uint32_t)b->w[I386_CHECK_EFLAGS];
	tf->eflags = (tf->eflags & ~(uint32_t)EFLAGS_IF) | (in & EFLAGS_IF);
	i386_check_frame(tf, tf->eip, tf->eflags, b->w + I386_CHECK_NREGS);
	b->w[I386_CHECK_OPT_LEN] = tf->eip - (uint32_t)p->addr;
	window((uint32_t)b->w[I386_CHECK_OPT_WIN], b->w + I386_CHECK_OPT_AFTER);
	tracer_record(p, WIRE_EVENT_CHECK, b->w, I386_CHECK_OPT_WORDS);
}
