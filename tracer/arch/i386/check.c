/*
 * check.c — check mode for emulated i386 sites (`probe check on`): each
 * emulation also writes a CHECK record (check.h) — the registers before,
 * the registers after and the one stack word the instruction touched — for
 * bench/check/i386.py to re-run the original instruction in unicorn.
 *
 * The fire path (fire.c) calls here only while check mode is on: the
 * entry forms it emulates inline on the frame are emulated the same way
 * here, between the two register sets (i386_emulate_entry_checked); the
 * general emulation hands over its state before, its state after and its
 * access log (i386_check_emulation). Every record kind's register sets —
 * also opt's (opt_check.c) and an out-of-line slot's (ool_check.c) — are
 * written by i386_check_regs, from the frame by i386_check_frame.
 *
 * An emulated indirect call or jmp touches two places, the word its
 * operand names and (a call) the stack word it pushes, more than the one
 * stack word of the record above: it writes the out-of-line layout
 * instead (check.h's I386_CHECK_OOL, i386_check_indirect), whose stack
 * window and operand words the host's re-run of the site's bytes reads
 * (bench/check/i386_ool.py). The push is deferred (entry.S stores it after
 * the frame moved), so the words "after" are the words before with that
 * store put in wherever it falls.
 */
#include "arch/trapframe.h"
#include "check.h"
#include "emulate.h"
#include "fire.h"
#include "ool.h"
#include "tracer.h"
#include "wire.h"

void i386_check_regs(const struct i386_regs *r, unsigned long *w)
{
	w[I386_CHECK_EAX] = r->eax;
	w[I386_CHECK_ECX] = r->ecx;
	w[I386_CHECK_EDX] = r->edx;
	w[I386_CHECK_EBX] = r->ebx;
	w[I386_CHECK_ESP] = r->esp;
	w[I386_CHECK_EBP] = r->ebp;
	w[I386_CHECK_ESI] = r->esi;
	w[I386_CHECK_EDI] = r->edi;
	w[I386_CHECK_EIP] = r->eip;
	w[I386_CHECK_EFLAGS] = r->eflags;
}

void i386_check_frame(const struct trapframe *tf, uint32_t eip, uint32_t eflags,
		      unsigned long *w)
{
	struct i386_regs r;
	i386_regs_from_frame(tf, eip, &r);
	r.eflags = eflags;
	i386_check_regs(&r, w);
}

/* Check mode around emulate_entry: the same CHECK record as the general
 * emulation writes, the state before and after and the one stack word
 * stored. */
bool i386_emulate_entry_checked(const struct probe *p, struct trapframe *tf)
{
	unsigned long w[I386_CHECK_WORDS];
	struct i386_regs r;
	i386_regs_from_frame(tf, (uint32_t)p->addr, &r);
	i386_check_regs(&r, w);
	uint32_t sp = trapframe_sp(tf) - 4;
	uint32_t before = mapped(sp) ? *(const volatile uint32_t *)sp : 0;
	if (!emulate_entry(p, tf))
		return false;
	i386_regs_from_frame(tf, tf->eip, &r);
	r.esp = tf->resume_esp;
	i386_check_regs(&r, w + I386_CHECK_NREGS);
	bool stored = p->site.insn.kind != I386_NOP;
	w[I386_CHECK_STACK_ADDR] = stored ? sp : 0;
	w[I386_CHECK_STACK_BEFORE] = stored ? before : 0;
	w[I386_CHECK_STACK_AFTER] = stored ? tf->error : 0;
	tracer_record(p, WIRE_EVENT_CHECK, w, I386_CHECK_WORDS);
	return true;
}

void i386_check_emulation(const struct probe *p, const struct i386_regs *after,
			  const struct access_log *log, unsigned long *w)
{
	i386_check_regs(after, w + I386_CHECK_NREGS);
	w[I386_CHECK_STACK_ADDR] = log->used ? log->addr : 0;
	w[I386_CHECK_STACK_BEFORE] = log->used ? log->before : 0;
	w[I386_CHECK_STACK_AFTER] = log->used ? log->after : 0;
	tracer_record(p, WIRE_EVENT_CHECK, w, I386_CHECK_WORDS);
}

/* The deferred store into the words "after" of a window that starts at
 * base, n words long. */
static void stored(const struct access_log *log, uint32_t base, unsigned n,
		   unsigned long *after)
{
	if (log->store_pending && log->addr - base < 4 * n && !((log->addr - base) & 3))
		after[(log->addr - base) / 4] = log->after;
}

void i386_check_indirect(const struct probe *p, const struct i386_regs *after,
			 const struct access_log *log, unsigned long *w)
{
	ool_check_operand(w, &p->site.insn.operand, p->site.insn.len);
	i386_check_regs(after, w + I386_CHECK_NREGS);
	for (unsigned i = 0; i < I386_CHECK_OOL_STACK_WORDS; i++)
		w[I386_CHECK_OOL_STACK_AFTER + i] = w[I386_CHECK_OOL_STACK_BEFORE + i];
	for (unsigned i = 0; i < I386_CHECK_OOL_MEM_WORDS; i++)
		w[I386_CHECK_OOL_MEM_AFTER + i] = w[I386_CHECK_OOL_MEM_BEFORE + i];
	stored(log, (uint32_t)w[I386_CHECK_OOL_STACK], I386_CHECK_OOL_STACK_WORDS,
	       w + I386_CHECK_OOL_STACK_AFTER);
	if (w[I386_CHECK_OOL_MEM_STATE] == 1)
		stored(log, (uint32_t)w[I386_CHECK_OOL_MEM], I386_CHECK_OOL_MEM_WORDS,
		       w + I386_CHECK_OOL_MEM_AFTER);
	tracer_record(p, WIRE_EVENT_CHECK, w, I386_CHECK_OOL_WORDS);
}
