/*
 * fire.h — what the files of the sparc64 probe provider share: the probe
 * word and how it is stored (fbt.c arms, shellgame.c swaps), the trapped
 * state's reads that are no call (%fsr, a format-3 operand), and the steps
 * the fire path (fire.c) hands to the shell game (shellgame.c), to check
 * mode (check.c) and to the return value (context.c).
 *
 * What the fire path may run on a count-only firing is static inline
 * here, so that such a firing makes no call for it (quick.h holds the
 * rest of the quick path).
 */
#ifndef SPARC64_FIRE_H
#define SPARC64_FIRE_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/sparc64.h"
#include "emulate.h"
#include "mechanisms.h"
#include "tracer.h"

/* MECHANISM_EMULATE, MECHANISM_SHELLGAME, MECHANISM_TRAMP: a probe's
 * mechanism. */
enum { TARCH_MECHANISMS(MECHANISM_ENUM) };

/* Whether p's illtrap is emulated (emulate; tramp's sites that take the
 * illtrap, tramp.c), not the shell game's. */
static inline bool sparc64_emulates(const struct probe *p)
{
	return p->mechanism != MECHANISM_SHELLGAME;
}

struct trapframe;

/* `illtrap <const22>`: a probe's word, const22 its index in tracer_probes[]. */
#define ILLTRAP(index)  ((uint32_t)(index) & 0x3fffff)
#define OP3_RESTORE     0x3d

/* A word over p's site, through the text alias, then `flush`: one CPU
 * (sun4u), so no other needs telling. */
static inline void sparc64_store_word(const struct probe *p, uint32_t w)
{
	*(volatile uint32_t *)tracer_text_alias(p->addr) = w;
	flush_insn((const void *)p->addr);
}

/* %fsr, with the FPU on for the moment it takes: PSTATE.PEF and FPRS.FEF
 * (bit 2) both, as the trapped context may have either off. */
static inline uint64_t sparc64_read_fsr(void)
{
	uint64_t fsr, fprs, pstate = rdpr(pstate);
	wrpr(pstate, pstate | PSTATE_PEF);
	__asm__ volatile("rd %%fprs, %0" : "=r"(fprs));
	__asm__ volatile("wr %0, 0, %%fprs" :: "r"(fprs | 4));   /* wr xors */
	__asm__ volatile("stx %%fsr, %0" : "=m"(fsr));
	__asm__ volatile("wr %0, 0, %%fprs" :: "r"(fprs) : "memory");
	wrpr(pstate, pstate);
	return fsr;
}

/* A format-3 instruction's operands on r: rs1, and simm13 or rs2. */
static inline uint64_t operand1(uint32_t w, const struct sparc_regs *r)
{
	return r->r[(w >> 14) & 0x1f];
}

static inline uint64_t operand2(uint32_t w, const struct sparc_regs *r)
{
	if ((w >> 13) & 1)
		return (uint64_t)((int64_t)((uint64_t)w << 51) >> 51);
	return r->r[w & 0x1f];
}

/* fire.c: the illegal_instruction hook (trap.h), registered by tarch_init;
 * a firing's record (or count), from the state before the
 * displaced instruction; and the stop for a firing that cannot go on. */
int sparc64_probe_trap(struct trapframe *tf);
void sparc64_record_fire(const struct probe *p, struct trapframe *tf,
			 const struct sparc_regs *r, const struct sparc_outcome *o);
_Noreturn void sparc64_fire_failed(const struct probe *p, const char *what,
				   uint64_t value);

/* What sparc64_return_value reads of a delay slot w (context.c): whether
 * it writes register n of its window; whether it is a form it evaluates.
 * tramp.c compiles the same value into a slot's words. */
bool sparc64_slot_writes(uint32_t w, unsigned n);
bool sparc64_slot_alu_form(uint32_t w);

/* context.c: the value the caller sees in %o0 after p's return; false if
 * the delay slot is none this file evaluates. */
bool sparc64_return_value(const struct probe *p, const struct sparc_regs *r,
			  uint64_t *v);

/* check.c: an emulation's CHECK record, the state before (into w, from
 * r) and then, once the fire path has edited tf for the resume, the
 * state after and the record. */
void sparc64_check_before(const struct probe *p, const struct trapframe *tf,
			  const struct sparc_regs *r, unsigned long *w);
void sparc64_check_after(const struct probe *p, struct trapframe *tf,
			 unsigned long *w);
/* The SPARC64_CHECK_CALLER words of the window a `return` or `restore`
 * in r's window goes back to (its %l/%i, at r's %fp once the windows are
 * flushed); false if that save area is unmapped (tramp_check.c's restore). */
bool sparc64_check_caller(const struct sparc_regs *r, unsigned long *w);

/* shellgame.c: a shell-game firing (record, swap the words, retry the
 * original); forgetting p when it is armed or disarmed; the hooks. */
void sparc64_shellgame_fire(struct probe *p, struct trapframe *tf,
			    const struct sparc_regs *r, struct sparc_outcome *o);
void sparc64_shellgame_forget(const struct probe *p);
void sparc64_shellgame_init(void);

#endif
