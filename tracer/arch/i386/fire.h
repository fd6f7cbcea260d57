/*
 * fire.h — what the files of the i386 probe provider share: fbt.c decodes
 * and arms, fire.c is the fire path, check.c writes check mode's records
 * of an emulation, step.c is the single-step baseline.
 *
 * The emulation of the common entry forms on the trap frame is here,
 * static inline, because two files run it: the fire path inline in its
 * hook, with no call (fire.c), and check mode around it (check.c).
 */
#ifndef I386_FIRE_H
#define I386_FIRE_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/trapframe.h"
#include "emulate.h"
#include "mechanisms.h"
#include "tracer.h"
#include "wire.h"

/* MECHANISM_INT3, _UD, _OPT, _STEP: a probe's mechanism. */
enum { TARCH_MECHANISMS(MECHANISM_ENUM) };

#define STACK_LOW      0x1000u          /* page 0 is unmapped */
#define STACK_HIGH     0x10000000u      /* the identity map: 256 MiB */

static inline bool mapped(uint32_t addr)
{
	return addr >= STACK_LOW && addr <= STACK_HIGH - 4;
}

/* An opt probe jumps at entry sites; its return sites take the int3. */
static inline bool jumps(const struct probe *p)
{
	return p->mechanism == MECHANISM_OPT && p->kind == WIRE_EVENT_ENTRY;
}

/* The one stack word an emulation read or wrote (check.h's record). */
struct access_log {
	uint32_t addr, before, after;
	bool     used;
	bool     store_pending;
};

/* The common entry forms — nop, push %ebp and the fused push %ebp; mov
 * %esp,%ebp — applied to the frame in place: no copy of the registers out
 * and back, no call of the general emulator through its memory callbacks.
 * The push's store is deferred as emulate() defers it (trapframe.h).
 * false for any other form, or a push whose slot is not on the stack (the
 * general path says why, and panics). The differential self-test runs
 * these forms through here, and check mode records them as it records the
 * general path, so unicorn re-runs both. */
static inline __attribute__((always_inline)) bool
emulate_entry(const struct probe *p, struct trapframe *tf)
{
	unsigned k = p->site.insn.kind;
	if (k == I386_NOP) {
		tf->eip = (uint32_t)p->addr + 1;
		return true;
	}
	if (k != I386_PUSH_EBP && k != I386_PUSH_EBP_MOV)
		return false;
	if (p->site.split)      /* the mov is another probe's site: push alone */
		k = I386_PUSH_EBP;
	uint32_t sp = trapframe_sp(tf) - 4;
	if (!mapped(sp))
		return false;
	tf->vector = sp;
	tf->error = tf->ebp;
	tf->resume_esp = sp;
	if (k == I386_PUSH_EBP_MOV)
		tf->ebp = sp;
	tf->eip = (uint32_t)p->addr + (k == I386_PUSH_EBP_MOV ? p->site.insn.len : 1);
	return true;
}

/* fire.c: the #BP and #UD hook (trap.h), registered by tarch_init; the
 * registers of the trapped context, EIP = site. */
int i386_probe_trap(struct trapframe *tf);
void i386_regs_from_frame(const struct trapframe *tf, uint32_t site,
			  struct i386_regs *r);

/* check.c: one register set of a CHECK record; check mode's emulation of
 * an entry form (false, having done nothing, if emulate_entry declines);
 * the record of a general emulation, from the state before (in w), the
 * state after and the stack word it touched. */
void i386_check_regs(const struct i386_regs *r, unsigned long *w);
bool i386_emulate_entry_checked(const struct probe *p, struct trapframe *tf);
void i386_check_emulation(const struct probe *p, const struct i386_regs *after,
			  const struct access_log *log, unsigned long *w);
/* check.c: the record of an emulated indirect call or jmp, in the
 * out-of-line layout (check.h's I386_CHECK_OOL; w holds the registers
 * before and room for I386_CHECK_OOL_WORDS). */
void i386_check_indirect(const struct probe *p, const struct i386_regs *after,
			 const struct access_log *log, unsigned long *w);

/* step.c: byte 0 of an int3 site, stored in order with the baseline's
 * own stores; a step probe's firing; its #DB hook. */
void i386_step_store(const struct probe *p, uint8_t b);
void i386_step_fire(const struct probe *p, struct trapframe *tf, uint32_t site);
void i386_step_init(void);

#endif
