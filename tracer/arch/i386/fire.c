/*
 * fire.c — the i386 fire path: the #BP and #UD hook (i386_probe_trap), the
 * record of a firing, the emulation of the displaced instruction on the
 * trapped state, and opt's detour's way into C.
 *
 * The fire path is a trap hook (trap.h) on #BP and #UD, registered at
 * init (fbt.c) with the step baseline's on #DB (step.c). It finds the
 * probe by the trapped EIP, counts or records the firing, then resumes by
 * mechanism and site: the step baseline, opt's int3 stage (the detour's
 * copy), an out-of-line slot (ool.c), or the emulation. An opt entry whose
 * return probe rides on it (opt_return.c) trampolines the call wherever
 * it fires (detour or int3 stage); the return site's fallback int3 leaves
 * a trampolined call to the trampoline. The emulating fire path records
 * the event, then applies the displaced instruction to the trapped state
 * (emulate.c) instead of executing it: the probe stays armed and nothing
 * is ever written back. A ring-0 trap frame has no ESP slot — the
 * interrupted stack pointer is the address just above EFLAGS — so an
 * instruction that moves ESP moves the frame: as in the lossless-fbt
 * patent's Figs. 4–6, the hook sets the frame's resume_esp, trap_dispatch
 * hands it to entry.S, and entry.S copies the whole frame down (push,
 * enter) or up (pop, leave, ret) so that IRET pops EIP/CS/EFLAGS just
 * below it. The one stack store push/enter make (the old %ebp at old
 * ESP - 4) lies inside the old frame, so it is deferred too: its address
 * and value travel in the frame's vector/error slots, and entry.S stores
 * it after the copy (trapframe.h).
 *
 * Every stack read the emulation makes is checked against the mapped
 * range first: an instruction whose native execution would fault makes the
 * kernel stop with a message naming the probe, not read garbage. An
 * indirect call's or jmp's target is loaded under trap_try instead (it may
 * lie anywhere): a fault there is the trap the instruction would have
 * raised at the site, and goes to the thread's own trap_try as the
 * kernel would send it (operand_fault); with none, the kernel stops, as
 * it would unprobed, with a message naming the probe.
 *
 * A probe program (program.h) reads the trapped state through the
 * tarch_context the fire path hands tracer_fire: the frame's registers
 * by registers.h's numbers, the arguments on the stack at an entry site
 * (fault-safely: a program may run at a probe whatever the stack), eax as
 * the return value at a return site. It runs before the emulation, which
 * a program's fault does not touch.
 */
#include "arch.h"
#include "arch/trapframe.h"
#include "arch/vectors.h"
#include "check.h"
#include "context.h"
#include "console.h"
#include "cpu.h"
#include "emulate.h"
#include "fire.h"
#include "itrace.h"
#include "ool.h"
#include "opt.h"
#include "opt_return.h"
#include "record.h"
#include "registers.h"
#include "stamp.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

extern const char tracer_bare_int3[];

/* The broken variant of the indirect forms' emulation (0; tests set it
 * through the GDB stub, tests/test_indirect.py): CF comes back flipped
 * after an emulated indirect call or jmp, which check mode must report on
 * every such firing. Harmless to the traced code, whose targets write CF
 * before they read it, as the out-of-line slots' broken variant is. */
volatile unsigned i386_indirect_broken;

/* What the general emulator's accesses (emulate.h's i386_mem) leave: the
 * one stack word touched, for check mode, and the trap a load through an
 * instruction's operand raised. */
struct emulation_memory {
	struct access_log  log;
	bool               load_faulted;
	struct caught_trap load_fault;
};

/* Stack accesses: checked against the mapped range. */
static int log_read(void *ctx, uint32_t addr, uint32_t *value)
{
	struct access_log *log = &((struct emulation_memory *)ctx)->log;
	if (!mapped(addr))
		return -1;
	*value = *(const volatile uint32_t *)addr;
	if (!log->used)
		*log = (struct access_log){ addr, *value, *value, true, false };
	return 0;
}

/* Stores are deferred: entry.S makes them once the frame has moved. */
static int log_write(void *ctx, uint32_t addr, uint32_t value)
{
	struct access_log *log = &((struct emulation_memory *)ctx)->log;
	if (!mapped(addr) || log->store_pending)
		return -1;
	uint32_t before = *(const volatile uint32_t *)addr;
	*log = (struct access_log){ addr, before, value, true, true };
	return 0;
}

/* A load through an indirect call's or jmp's operand may name any
 * address (a table, a pointer gone bad): made under trap_try, so a fault
 * comes back as the trap the instruction itself would have raised. */
struct operand_load {
	uint32_t addr, value;
};

static void load_word(void *arg)
{
	struct operand_load *l = arg;
	l->value = *(const volatile uint32_t *)l->addr;
}

static int operand_load(void *ctx, uint32_t addr, uint32_t *value)
{
	struct emulation_memory *em = ctx;
	struct operand_load l = { addr, 0 };
	if (trap_try(load_word, &l, &em->load_fault)) {
		em->load_faulted = true;
		return -1;
	}
	*value = l.value;
	return 0;
}

void i386_regs_from_frame(const struct trapframe *tf, uint32_t site,
			  struct i386_regs *r)
{
	*r = (struct i386_regs){
		.eax = tf->eax, .ecx = tf->ecx, .edx = tf->edx, .ebx = tf->ebx,
		.esp = trapframe_sp(tf), .ebp = tf->ebp, .esi = tf->esi,
		.edi = tf->edi, .eip = site, .eflags = tf->eflags,
	};
}

/* ---- a probe program's view ---- */

#define REGISTER_ENUM(name, number, text) TREG_##name = number,
enum { TARCH_REGISTERS(REGISTER_ENUM) };
#undef REGISTER_ENUM

bool tarch_context_reg(const struct tarch_context *ctx, const struct probe *p,
		       unsigned reg, unsigned long *value)
{
	const struct trapframe *tf = ctx->tf;
	switch (reg) {
	case TREG_EAX:    *value = tf->eax; return true;
	case TREG_ECX:    *value = tf->ecx; return true;
	case TREG_EDX:    *value = tf->edx; return true;
	case TREG_EBX:    *value = tf->ebx; return true;
	case TREG_ESP:    *value = trapframe_sp(tf); return true;
	case TREG_EBP:    *value = tf->ebp; return true;
	case TREG_ESI:    *value = tf->esi; return true;
	case TREG_EDI:    *value = tf->edi; return true;
	case TREG_EIP:    /* a watch's and a sample's: where the trap left it */
		*value = p->kind == WIRE_EVENT_WATCH || p->kind == WIRE_EVENT_SAMPLE ?
			 tf->eip : p->addr;
		return true;
	case TREG_EFLAGS: *value = tf->eflags; return true;
	}
	return false;
}

/* At an entry site [esp] is the return address and the arguments follow
 * (cdecl), as i386_record (record.h) reads them — but fault-safely. */
bool tarch_context_arg(const struct tarch_context *ctx, const struct probe *p,
		       unsigned n, unsigned long *value)
{
	if (p->kind == WIRE_EVENT_SAMPLE && n == 0) {
		*value = ctx->tf->eip;                  /* the interrupted PC */
		return true;
	}
	if (p->kind != WIRE_EVENT_ENTRY)
		return false;
	return tracer_read(trapframe_sp(ctx->tf) + 4 + 4 * n, 4, value);
}

/* At every return site (pop %ebp, leave, ret) the value is in eax. */
bool tarch_context_retval(const struct tarch_context *ctx, const struct probe *p,
			  unsigned long *value)
{
	if (p->kind != WIRE_EVENT_RETURN)
		return false;
	*value = ctx->tf->eax;
	return true;
}

/* ---- the firing ---- */

/* The trap hook's record (record.h), out of line: the hook's own frame
 * stays the small one its inline entry forms need. */
static __attribute__((noinline)) void record_fire(const struct probe *p,
						  const struct trapframe *tf)
{
	i386_record(p, tf);
}

static _Noreturn void emulation_fault(const struct probe *p, uint32_t addr)
{
	panic("probe %u at 0x%x (%s): the displaced instruction would fault at "
	      "0x%x", p->id, (unsigned)p->addr,
	      i386_site_kind_names[p->site.insn.kind], addr);
}

/* An indirect call's or jmp's target load faulted: the instruction, run
 * natively, would have raised that trap at the site, before changing
 * anything. So it goes where the kernel would send it: to the thread's
 * innermost trap_try (its landing pad, the trap recorded with the site as
 * its PC). With no try active the kernel would stop on that trap; it stops
 * here, the probe saying what happened. */
static void operand_fault(const struct probe *p, struct trapframe *tf,
			  struct caught_trap *trap)
{
	trap->pc = p->addr;
	uintptr_t landing = trap_try_intercept(trap);
	if (!landing)
		panic("probe %u at 0x%x (%s): the load of its target faults at 0x%x "
		      "(%s, error 0x%x) and no trap_try of this thread catches it: "
		      "run unprobed, the instruction stops the kernel on that trap",
		      p->id, (unsigned)p->addr, i386_site_kind_names[p->site.insn.kind],
		      (unsigned)trap->fault_addr, trap->name, (unsigned)trap->error);
	tf->eip = (uint32_t)landing;
}

/* Emulate p's instruction on the trapped state; an ESP it moved goes to
 * tf->resume_esp, with the deferred stack store (trapframe.h). Out of
 * line: the hook's own frame stays the small one its inline entry forms
 * need. */
static __attribute__((noinline)) void emulate(const struct probe *p, struct trapframe *tf)
{
	if (tracer_check_mode && i386_emulate_entry_checked(p, tf))
		return;

	struct i386_regs r;
	struct emulation_memory em = { 0 };
	const struct access_log *log = &em.log;
	const struct i386_mem mem = { log_read, log_write, operand_load, &em };
	uint32_t fault = 0;
	unsigned long w[I386_CHECK_OOL_WORDS];  /* the longer layout: indirect forms' */
	_Static_assert(I386_CHECK_OOL_WORDS >= I386_CHECK_WORDS, "fire.c: w holds either record");

	i386_regs_from_frame(tf, (uint32_t)p->addr, &r);
	if (tracer_check_mode)
		i386_check_regs(&r, w);
	uint32_t old_sp = r.esp;
	struct i386_site push_alone = { .kind = I386_PUSH_EBP, .len = 1 };
	const struct i386_site *insn = p->site.split ? &push_alone : &p->site.insn;
	if (i386_emulate(insn, &r, &mem, &fault) != 0) {
		if (!em.load_faulted)
			emulation_fault(p, fault);
		operand_fault(p, tf, &em.load_fault);
		return;
	}
	if (i386_indirect_broken && i386_indirect(insn->kind))
		r.eflags ^= 1;                  /* CF */

	if (tracer_check_mode && i386_indirect(insn->kind))
		i386_check_indirect(p, &r, log, w);
	else if (tracer_check_mode)
		i386_check_emulation(p, &r, log, w);

	tf->eax = r.eax; tf->ecx = r.ecx; tf->edx = r.edx; tf->ebx = r.ebx;
	tf->ebp = r.ebp; tf->esi = r.esi; tf->edi = r.edi;
	tf->eip = r.eip; tf->eflags = r.eflags;
	if (r.esp == old_sp && !log->store_pending)
		return;
	/* push and enter store below the old ESP, inside the frame: only a
	 * move makes the store (entry.S), and every form that stores moves. */
	if (r.esp == old_sp)
		panic("probe %u at 0x%x (%s): a stack store without a move of ESP",
		      p->id, (unsigned)p->addr, i386_site_kind_names[p->site.insn.kind]);
	tf->vector = log->store_pending ? log->addr : 0;
	tf->error = log->after;
	tf->resume_esp = r.esp;
}

/* A trap at an address no probe holds any more, whose trap byte(s) are
 * gone: the probe was disarmed and cleared after this CPU trapped and
 * before its lookup (a vCPU descheduled in between). Its original is
 * back, so it runs again, as kprobes does with an int3 that vanished. */
static bool site_restored(unsigned vector, uint32_t site)
{
	const volatile uint8_t *b = (const volatile uint8_t *)(uintptr_t)site;
	if (vector == VEC_BP)
		return b[0] != 0xcc;
	return vector == VEC_UD && !(b[0] == 0x0f && b[1] == 0x0b);
}

/* The #BP and #UD hook (trap.h): a probe's trap, or declined. */
int i386_probe_trap(struct trapframe *tf)
{
	tracer_stamp(TRACER_STAMP_ENTRY);
	uint32_t site = tf->vector == VEC_BP ? tf->eip - 1 : tf->eip;
	if (tf->vector == VEC_BP && site == (uint32_t)tracer_bare_int3)
		return TRAP_HANDLED;    /* the bare round trip: nothing to do */
	struct probe *p = tracer_lookup(site);
	/* #UD only from a ud probe; #BP from any (a ud site passes through
	 * int3 while it changes). */
	if (!p && site_restored(tf->vector, site)) {
		tf->eip = site;         /* run what is there now */
		return TRAP_HANDLED;
	}
	if (!p || (tf->vector == VEC_UD && p->mechanism != MECHANISM_UD))
		return TRAP_DECLINED;   /* not a probe's trap: trap_try's, or a bug */
	tracer_stamp(TRACER_STAMP_LOOKUP);
	if (p->site.ride && opt_return_rides(p) && opt_return_trampolined(p, tf))
		;               /* the fallback's int3: the trampoline records it */
	else if (tracer_counts_only(p))
		tracer_fire_count(p, this_cpu()->id);
	else
		record_fire(p, tf);
	if (p->site.ride)       /* an entry under opt: its return rides on it */
		opt_return_enter(p, trapframe_sp(tf));
	tracer_stamp(TRACER_STAMP_FIRE);

	if (p->mechanism == MECHANISM_STEP) {     /* the lossy baseline (step.c) */
		i386_step_fire(p, tf, site);
		return TRAP_HANDLED;
	}
	if (jumps(p)) {         /* its int3 stage: run the detour's copy */
		uint32_t copy = opt_resume(p);
		if (copy) {
			/* EIP first: the frame's words below ESP are in the
			 * window check mode's detour reads now, and the copy's
			 * address stays there while the copies run. */
			tf->eip = copy;
			if (opt_checked(p))     /* check mode's detour: the state here */
				opt_check_before(p, tf);
			return TRAP_HANDLED;
		}
	}
	if (p->site.insn.kind == I386_OOL) {    /* run the slot's copy (ool.c) */
		tf->eip = ool_slot(p);
		if (p->site.checked)    /* check mode's slot: the state here */
			ool_check_before(p, tf);
		tracer_stamp(TRACER_STAMP_EMULATE);
		return TRAP_HANDLED;
	}
	if (tracer_check_mode || !emulate_entry(p, tf))    /* inline: no call */
		emulate(p, tf);
	tracer_stamp(TRACER_STAMP_EMULATE);
	if (i386_itrace_live)
		i386_itrace_probe(p, site, tf);
	return TRAP_HANDLED;
}

/* An opt probe's detour (opt_detour.S), interrupts masked: tf is a frame
 * of a trap at the site, the probe in its error slot. The displaced
 * instructions run natively after it returns. The record and the
 * trampolining of the call are inline: one call and one return a firing
 * (opt.h's OPT_HOT). */
static inline __attribute__((always_inline)) void
opt_fire(struct trapframe *tf, bool stamping)
{
	if (stamping)
		tracer_stamp(TRACER_STAMP_ENTRY);
	const struct probe *p = (const struct probe *)(uintptr_t)tf->error;
	if (stamping)
		tracer_stamp(TRACER_STAMP_LOOKUP);
	i386_record(p, tf);             /* a riding return's entry counts here */
	opt_return_enter(p, trapframe_sp(tf));
	if (stamping)
		tracer_stamp(TRACER_STAMP_FIRE);
}

static __attribute__((noinline)) void opt_fire_stamped(struct trapframe *tf)
{
	opt_fire(tf, true);
}

/* The stamps asked once, not at each stage: under TCG every conditional
 * branch ends a block. */
OPT_HOT void i386_opt_fire(struct trapframe *tf)
{
	if (__builtin_expect(tracer_stamp_cpu != 0, 0))
		opt_fire_stamped(tf);
	else
		opt_fire(tf, false);
}

/* Check mode's detour: the same, then the state before the copies run
 * (opt_check.c). */
void i386_opt_fire_checked(struct trapframe *tf)
{
	const struct probe *p = (const struct probe *)(uintptr_t)tf->error;
	record_fire(p, tf);
	opt_return_enter(p, trapframe_sp(tf));  /* before the state is kept */
	opt_check_before(p, tf);
}
