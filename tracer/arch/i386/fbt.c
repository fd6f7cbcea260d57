/*
 * fbt.c — i386 probes: decode and arm a site, and the fire path.
 *
 * Mechanisms (mechanisms.h; chosen per run, `probe mechanism`):
 *   int3  0xCC over the site's first byte; #BP arrives with EIP = site + 1.
 *   ud    #UD instead of #BP, so the probe shares nothing with debuggers
 *         (illumos' choice on i386). illumos writes a LOCK prefix (0xF0),
 *         undefined before push/pop/mov-to-register/leave/ret; QEMU 7.2's
 *         TCG ignores LOCK there and runs the instruction (seen: F0 89 E5
 *         executes mov %esp,%ebp, skipping the push, and the guest dies), so
 *         the #UD comes from ud2 (0F 0B). Two bytes fit a site whose
 *         emulated form is at least two bytes long (the fused prologue,
 *         enter, ret imm16), or a ret followed by padding, which no path
 *         runs; other sites are refused under this mechanism. #UD arrives
 *         with EIP = site. No CPU may fetch half of the change: a translator
 *         reading the site byte by byte while one 16-bit store lands can
 *         decode 0F 89 (jns rel32: ud2's first byte, the old mov's second)
 *         or 55 0B; a toggle run on 4 CPUs once died at a wild EIP in just
 *         that window, with the one-store version. So the two bytes
 *         change as in the x86 cross-modifying-code recipe:
 *         int3 over the first byte, sync every CPU, the second byte, sync,
 *         the first byte. Every fetch in between sees int3 or a whole
 *         instruction; an int3 at a ud site fires like a #UD.
 *   opt   jump-optimized (opt.c): an entry site becomes jmp to a detour
 *         that records through record_fire below and runs copies of the
 *         displaced instructions; its int3 stage (while the jmp goes in or
 *         out) records here and resumes in the detour's copy. Its return
 *         sites take the int3 and are emulated as int3's.
 *   step  the lossy baseline of the seeds: an int3 that, when hit, writes the
 *         original byte back, sets EFLAGS.TF and returns to the site; the #DB
 *         after the one instruction re-inserts the int3. Any CPU that runs
 *         the site meanwhile runs the original and is not traced.
 *
 * The fire path is a trap hook (trap.h) on #BP and #UD, registered at
 * init with the step baseline's on #DB. The emulating fire path records
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
 * kernel stop with a message naming the probe, not read garbage.
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
#include "arch/x86.h"
#include "check.h"
#include "context.h"
#include "console.h"
#include "cpu.h"
#include "emulate.h"
#include "itrace.h"
#include "mechanisms.h"
#include "mm.h"
#include "ool.h"
#include "opt.h"
#include "registers.h"
#include "spinlock.h"
#include "stamp.h"
#include "thread.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

enum { TARCH_MECHANISMS(MECHANISM_ENUM) };
const struct tarch_mechanism tarch_mechanisms[] = { TARCH_MECHANISMS(MECHANISM_ROW) };
const unsigned tarch_nmechanisms = sizeof tarch_mechanisms / sizeof tarch_mechanisms[0];
const unsigned tarch_check_words = I386_CHECK_WORDS;
const unsigned tarch_cost_kind = WIRE_EVENT_ENTRY;

#define STACK_LOW      0x1000u          /* page 0 is unmapped */
#define STACK_HIGH     0x10000000u      /* the identity map: 256 MiB */

extern const char tracer_bare_int3[];

static spinlock_t step_lock = SPINLOCK_INIT("step-rearm");
/* Per thread (thread.h's slots): the probe it is single-stepping, id + 1. */
static unsigned step_slot;

/* The bytes gcc and gas pad with after a ret: nop, lea/nopw/nopl forms. */
static bool padding_byte(uint8_t b)
{
	return b == 0x90 || b == 0x8d || b == 0x66 || b == 0x0f || b == 0xcc;
}

/* An opt probe jumps at entry sites; its return sites take the int3. */
static bool jumps(const struct probe *p)
{
	return p->mechanism == MECHANISM_OPT && p->kind == WIRE_EVENT_ENTRY;
}

bool tarch_can_arm(const struct probe *p, const char **why)
{
	const struct probe *cover = opt_covering(p->addr);
	if (cover) {
		*why = "the site is inside the bytes an opt probe's jmp displaces";
		return false;
	}
	if (jumps(p))
		return opt_can_arm(p, why);
	/* Check mode records what an out-of-line copy does (ool_check.c),
	 * unless the record cannot carry it. */
	if (p->site.insn.kind == I386_OOL && tracer_check_mode &&
	    ool_checkable(p, why) != 0)
		return false;
	if (p->mechanism != MECHANISM_UD)
		return true;
	if ((p->addr & (mm_page_size - 1)) == mm_page_size - 1) {
		*why = "ud2 would straddle a page boundary";
		return false;
	}
	if (p->site.insn.len >= 2)
		return true;
	if (p->site.insn.kind != I386_RET || !padding_byte(p->site.next)) {
		*why = "ud2 is two bytes and the next instruction starts after one "
		       "(use int3 here)";
		return false;
	}
	if (tracer_lookup(p->addr + 1)) {
		*why = "the byte after this ret is another probe's site";
		return false;
	}
	return true;
}

/* ud's two bytes, first and second, through an int3 (see the top). */
static void store_two(const struct probe *p, uint8_t first, uint8_t second)
{
	volatile uint8_t *alias = tracer_text_alias(p->addr);
	alias[0] = 0xcc;
	tracer_sync_cpus();
	alias[1] = second;
	tracer_sync_cpus();
	alias[0] = first;
}

static void store_trap(const struct probe *p)
{
	if (p->mechanism == MECHANISM_UD)
		store_two(p, 0x0f, 0x0b);                     /* ud2 */
	else
		*(volatile uint8_t *)tracer_text_alias(p->addr) = 0xcc;
}

static void store_original(const struct probe *p)
{
	if (p->mechanism == MECHANISM_UD)
		store_two(p, p->site.insn.orig[0], p->site.insn.len >= 2 ?
			  p->site.insn.orig[1] : p->site.next);
	else
		*(volatile uint8_t *)tracer_text_alias(p->addr) = p->site.insn.orig[0];
}

int tarch_decode(uintptr_t addr, unsigned kind, struct tarch_site *site,
		 const char **why)
{
	if (kind == WIRE_EVENT_BRANCH) {
		*why = "branch probes are a sparc64 provider; IA-32 probes emulate "
		       "function entry and return forms or run out of line";
		return -1;
	}
	size_t avail = (uintptr_t)__text_end - addr;
	const uint8_t *code = (const uint8_t *)addr;
	if (avail > 16)
		avail = 16;
	*site = (struct tarch_site){ .next = avail > 1 ? code[1] : 0 };
	if (i386_decode(code, avail, &site->insn, why) != 0) {
		/* Not emulated: out of line, if a copy runs the same (ool.c).
		 * An int3 already there keeps the emulator's reason. */
		const char *emulate_why = *why;
		unsigned len = avail && code[0] != 0xcc ?
			i386_insn_relocatable(code, avail, why) : 0;
		if (!len) {
			if (avail && code[0] == 0xcc)
				*why = emulate_why;
			return -1;
		}
		site->insn = (struct i386_site){ .kind = I386_OOL, .len = (uint8_t)len };
		for (unsigned i = 0; i < len; i++)
			site->copy[i] = code[i];
		for (unsigned i = 0; i < sizeof site->insn.orig && i < len; i++)
			site->insn.orig[i] = code[i];
	}
	unsigned k = site->insn.kind;
	bool entry_form = k == I386_PUSH_EBP || k == I386_PUSH_EBP_MOV ||
			  k == I386_ENTER || k == I386_NOP;
	bool return_form = k == I386_POP_EBP || k == I386_LEAVE || k == I386_RET ||
			   k == I386_RET_IMM || k == I386_NOP;
	/* An entry probe takes a function's first instruction, whatever it is
	 * (emulated or out of line); a return probe the forms that leave. */
	if (kind == WIRE_EVENT_RETURN && !return_form) {
		*why = entry_form ? "a return probe needs pop %ebp, leave, ret or nop"
				  : "a return probe needs pop %ebp, leave, ret or nop "
				    "(this instruction would run out of line)";
		return -1;
	}
	return 0;
}

/* step_lock orders our stores with the single-step baseline's; ud sites
 * never take that path, and their stores wait for other CPUs (IPIs),
 * which must not happen with interrupts off. */
void tarch_arm(struct probe *p)
{
	/* A fused prologue emulates two instructions; a probe on the second
	 * splits it, before that probe is armed (tracer_site.h). */
	struct probe *before = tracer_lookup(p->addr - 1);
	if (before && before->site.insn.kind == I386_PUSH_EBP_MOV)
		before->site.split = 1;
	struct probe *after = tracer_lookup(p->addr + 1);
	if (p->site.insn.kind == I386_PUSH_EBP_MOV && after &&
	    after->state == PROBE_ENABLED)
		p->site.split = 1;
	if (p->site.insn.kind == I386_OOL) {
		p->site.checked = tracer_check_mode;    /* which slot (ool_check.c) */
		ool_prepare(p);         /* before the trap can send anyone there */
	}
	if (jumps(p)) {
		opt_arm(p);
		return;
	}
	if (p->mechanism == MECHANISM_UD) {
		store_trap(p);
		return;
	}
	irqflags_t f = spin_lock_irqsave(&step_lock);
	store_trap(p);
	spin_unlock_irqrestore(&step_lock, f);
}

void tarch_disarm(struct probe *p)
{
	if (jumps(p)) {
		opt_disarm(p);
		return;
	}
	if (p->mechanism == MECHANISM_UD) {
		store_original(p);
		return;
	}
	irqflags_t f = spin_lock_irqsave(&step_lock);
	store_original(p);
	spin_unlock_irqrestore(&step_lock, f);
}

void tarch_stage(void)
{
	opt_stage();
}

/* ---- the fire path ---- */

struct access_log {
	uint32_t addr, before, after;
	bool     used;
	bool     store_pending;
};

static bool mapped(uint32_t addr)
{
	return addr >= STACK_LOW && addr <= STACK_HIGH - 4;
}

static int log_read(void *ctx, uint32_t addr, uint32_t *value)
{
	struct access_log *log = ctx;
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
	struct access_log *log = ctx;
	if (!mapped(addr) || log->store_pending)
		return -1;
	uint32_t before = *(const volatile uint32_t *)addr;
	*log = (struct access_log){ addr, before, value, true, true };
	return 0;
}

static void regs_from_frame(const struct trapframe *tf, uint32_t site,
			    struct i386_regs *r)
{
	*r = (struct i386_regs){
		.eax = tf->eax, .ecx = tf->ecx, .edx = tf->edx, .ebx = tf->ebx,
		.esp = trapframe_sp(tf), .ebp = tf->ebp, .esi = tf->esi,
		.edi = tf->edi, .eip = site, .eflags = tf->eflags,
	};
}

/* One register set of a CHECK record (check.h). */
static void regs_words(const struct i386_regs *r, unsigned long *w)
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
	regs_from_frame(tf, eip, &r);
	r.eflags = eflags;
	regs_words(&r, w);
}


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
	case TREG_EIP:    /* a watch's is where the trap left it (watch.c) */
		*value = p->kind == WIRE_EVENT_WATCH ? tf->eip : p->addr;
		return true;
	case TREG_EFLAGS: *value = tf->eflags; return true;
	}
	return false;
}

/* At an entry site [esp] is the return address and the arguments follow
 * (cdecl), as record_fire reads them — but fault-safely. */
bool tarch_context_arg(const struct tarch_context *ctx, const struct probe *p,
		       unsigned n, unsigned long *value)
{
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

static void record_fire(const struct probe *p, const struct trapframe *tf)
{
	const struct tarch_context ctx = { tf };
	unsigned long w[WIRE_ENTRY_ARG0 + TRACER_MAX_ARGS];
	uint32_t sp = trapframe_sp(tf);
	unsigned n;

	if (tracer_counts_only(p)) {
		tracer_fire_count(p, this_cpu()->id);
		return;
	}
	if (p->kind == WIRE_EVENT_INSN) {
		w[WIRE_INSN_PC] = p->addr;
		w[WIRE_INSN_SP] = sp;
		n = WIRE_INSN_SP + 1;
	} else if (p->kind == WIRE_EVENT_ENTRY) {
		w[WIRE_ENTRY_PC] = p->addr;
		w[WIRE_ENTRY_SP] = sp;
		/* At the first instruction, [sp] is the return address and the
		 * arguments follow (cdecl), as ctrace reads them. */
		for (unsigned i = 0; i < p->nargs; i++) {
			uint32_t a = sp + 4 + 4 * i;
			w[WIRE_ENTRY_ARG0 + i] = mapped(a) ? *(const uint32_t *)a : 0;
		}
		n = WIRE_ENTRY_ARG0 + p->nargs;
	} else {
		w[WIRE_RETURN_PC] = p->addr;
		w[WIRE_RETURN_SP] = sp;
		w[WIRE_RETURN_VALUE] = tf->eax;
		w[WIRE_RETURN_VALUE_HIGH] = tf->edx;     /* a 64-bit value's high half */
		n = p->nargs >= 2 ? WIRE_RETURN_VALUE_HIGH + 1 : WIRE_RETURN_VALUE + 1;
	}
	tracer_fire(p, p->kind, w, n, &ctx);
}

static _Noreturn void emulation_fault(const struct probe *p, uint32_t addr)
{
	panic("probe %u at 0x%x (%s): the displaced instruction would fault at "
	      "0x%x", p->id, (unsigned)p->addr,
	      i386_site_kind_names[p->site.insn.kind], addr);
}

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

/* Check mode around emulate_entry: the same CHECK record as emulate()
 * writes, the state before and after and the one stack word stored. */
static bool emulate_entry_checked(const struct probe *p, struct trapframe *tf)
{
	unsigned long w[I386_CHECK_WORDS];
	struct i386_regs r;
	regs_from_frame(tf, (uint32_t)p->addr, &r);
	regs_words(&r, w);
	uint32_t sp = trapframe_sp(tf) - 4;
	uint32_t before = mapped(sp) ? *(const volatile uint32_t *)sp : 0;
	if (!emulate_entry(p, tf))
		return false;
	regs_from_frame(tf, tf->eip, &r);
	r.esp = tf->resume_esp;
	regs_words(&r, w + I386_CHECK_NREGS);
	bool stored = p->site.insn.kind != I386_NOP;
	w[I386_CHECK_STACK_ADDR] = stored ? sp : 0;
	w[I386_CHECK_STACK_BEFORE] = stored ? before : 0;
	w[I386_CHECK_STACK_AFTER] = stored ? tf->error : 0;
	tracer_record(p, WIRE_EVENT_CHECK, w, I386_CHECK_WORDS);
	return true;
}

/* Emulate p's instruction on the trapped state; an ESP it moved goes to
 * tf->resume_esp, with the deferred stack store (trapframe.h). */
static void emulate(const struct probe *p, struct trapframe *tf)
{
	if (tracer_check_mode && emulate_entry_checked(p, tf))
		return;

	struct i386_regs r;
	struct access_log log = { 0 };
	const struct i386_mem mem = { log_read, log_write, &log };
	uint32_t fault = 0;
	unsigned long w[I386_CHECK_WORDS];

	regs_from_frame(tf, (uint32_t)p->addr, &r);
	if (tracer_check_mode)
		regs_words(&r, w);
	uint32_t old_sp = r.esp;
	struct i386_site push_alone = { .kind = I386_PUSH_EBP, .len = 1 };
	const struct i386_site *insn = p->site.split ? &push_alone : &p->site.insn;
	if (i386_emulate(insn, &r, &mem, &fault) != 0)
		emulation_fault(p, fault);

	if (tracer_check_mode) {
		regs_words(&r, w + I386_CHECK_NREGS);
		w[I386_CHECK_STACK_ADDR] = log.used ? log.addr : 0;
		w[I386_CHECK_STACK_BEFORE] = log.used ? log.before : 0;
		w[I386_CHECK_STACK_AFTER] = log.used ? log.after : 0;
		tracer_record(p, WIRE_EVENT_CHECK, w, I386_CHECK_WORDS);
	}

	tf->eax = r.eax; tf->ecx = r.ecx; tf->edx = r.edx; tf->ebx = r.ebx;
	tf->ebp = r.ebp; tf->esi = r.esi; tf->edi = r.edi;
	tf->eip = r.eip; tf->eflags = r.eflags;
	if (r.esp == old_sp && !log.store_pending)
		return;
	/* push and enter store below the old ESP, inside the frame: only a
	 * move makes the store (entry.S), and every form that stores moves. */
	if (r.esp == old_sp)
		panic("probe %u at 0x%x (%s): a stack store without a move of ESP",
		      p->id, (unsigned)p->addr, i386_site_kind_names[p->site.insn.kind]);
	tf->vector = log.store_pending ? log.addr : 0;
	tf->error = log.after;
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
static int i386_probe_trap(struct trapframe *tf)
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
	if (tracer_counts_only(p))
		tracer_fire_count(p, this_cpu()->id);
	else
		record_fire(p, tf);
	tracer_stamp(TRACER_STAMP_FIRE);

	if (p->mechanism == MECHANISM_STEP) {
		spin_lock(&step_lock);
		*(volatile uint8_t *)tracer_text_alias(p->addr) = p->site.insn.orig[0];
		spin_unlock(&step_lock);
		thread_slot_set(thread_current(), step_slot, p->id + 1);
		tf->eip = site;
		tf->eflags |= EFLAGS_TF;
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
 * instructions run natively after it returns. */
void i386_opt_fire(struct trapframe *tf)
{
	tracer_stamp(TRACER_STAMP_ENTRY);
	const struct probe *p = (const struct probe *)(uintptr_t)tf->error;
	tracer_stamp(TRACER_STAMP_LOOKUP);
	record_fire(p, tf);
	tracer_stamp(TRACER_STAMP_FIRE);
}

/* Check mode's detour: the same, then the state before the copies run
 * (opt_check.c). */
void i386_opt_fire_checked(struct trapframe *tf)
{
	const struct probe *p = (const struct probe *)(uintptr_t)tf->error;
	record_fire(p, tf);
	opt_check_before(p, tf);
}

/* The #DB hook: the single-step baseline's trap, one instruction after
 * the site, puts the int3 back; any other #DB is declined. */
static int i386_step_trap(struct trapframe *tf)
{
	struct thread *me = thread_current();
	uintptr_t stepping = thread_slot(me, step_slot);
	if (!stepping)
		return TRAP_DECLINED;
	const struct probe *p = &tracer_probes[stepping - 1];
	thread_slot_set(me, step_slot, 0);
	spin_lock(&step_lock);
	if (p->state == PROBE_ENABLED && p->mechanism == MECHANISM_STEP)
		*(volatile uint8_t *)tracer_text_alias(p->addr) = 0xcc;
	spin_unlock(&step_lock);
	tf->eflags &= ~EFLAGS_TF;
	return TRAP_HANDLED;
}

void tarch_init(void)
{
	step_slot = thread_slot_claim();
	i386_watch_init();      /* its #DB hook first: a stepped access may hit a watch */
	trap_hook_add(VEC_DB, i386_step_trap);
	i386_itrace_init();     /* its #DB hook after the step baseline's */
	trap_hook_add(VEC_BP, i386_probe_trap);
	trap_hook_add(VEC_UD, i386_probe_trap);
	ool_check_init();       /* the checked slots' int3, after the probes' */
}
