/*
 * fbt.c — sparc64 probes: decode and arm a site, and the fire path.
 *
 * A probe is the word `illtrap <const22>` over its site, const22 being the
 * probe's index in tracer_probes[] (room for 2^22; the table holds 4096).
 * It traps as illegal_instruction (tt 0x10) with TPC at the site; the
 * fire path, a trap hook on that tt (trap.h) registered at init, reads the
 * const22 back from TPC, so finding the probe is one index and one address
 * compare, no search.
 *
 * Mechanisms (mechanisms.h; chosen per run, `probe mechanism`):
 *   emulate    record, then emulate the displaced instruction on the
 *              trapped state (emulate.c for CTIs; `save` below) and
 *              `retry` at the PC/nPC it chose. The ILLTRAP stays; nothing
 *              is ever written back, so no thread can run past a probe.
 *   shellgame  the lossy baseline of seed 001 (Btrace1): record, store the
 *              original word back and retry it natively; the ILLTRAP goes
 *              back in when the next probe fires. Until then every
 *              execution of the site, by this thread or any other, is lost.
 *              The game can also count one execution twice: an interrupt
 *              due while the probe fired is taken at the retry, before the
 *              original runs; if another thread fires meanwhile, the
 *              ILLTRAP is back when this one resumes. A hook watching
 *              the interrupts tells us (sparc64_probe_interrupted), and
 *              that second trap is not recorded, so the baseline's counts
 *              show its losses alone. (A thread that ran the original
 *              natively and came back to it with no probe in between is
 *              not told apart.)
 *
 * Sites and kinds:
 *   branch  any emulated CTI (emulate.h): records pc, target, taken and
 *           annulled — Btrace's btfrec.
 *   return  `ret` (jmpl %i7+8, %g0), `retl` (jmpl %o7+8, %g0) or the V9
 *           `return %i7+8`: records pc, sp and the value the caller will
 *           see in %o0, which the delay slot often computes (`ret;
 *           restore %g0, 1, %o0`, `retl; sra %o0, 0, %o0`); a slot this
 *           file cannot evaluate leaves the value out of the record (the
 *           host prints "?"). `return` restores the caller's window
 *           itself: trap_entry's way back does one more `restore`.
 *   entry   a function's first instruction: records pc, sp and %o0..%o5
 *           as the arguments. Its `save %rs1, simm13|%rs2, %sp`:
 *           trap_entry's own `save` already opened the callee's window, so
 *           emulating it is resuming there with %sp = rs1 + operand
 *           (trapframe.h); a window overflow it needed was taken by that
 *           save. A leaf function's first word, if not a CTI, runs out of
 *           line (ool.c: TPC = the probe's slot, TNPC = site + 4).
 * Refused: an ILLTRAP/unimp word already there (a probe, or a word a
 * struct-returning call expects), a site in a CTI's delay slot (its PC/nPC
 * pair belongs to the CTI before it), any other instruction, and code of
 * the tracer or trap path (probe.c).
 *
 * The quick path: a firing that only counts (tracer_counts_only) of an
 * emulate probe whose site reads nothing but the frame (site.quick, set
 * when armed: a branch on the CCR, a call, a save reading no %l/%i, an
 * out-of-line word), with check mode off, is counted and resumed right
 * after the lookup (resume_quick), past the tests the full path makes.
 *
 * Check mode (`probe check on`, emulate only): each emulation also writes
 * a CHECK record (check.h) — the state before, and the state after read
 * back from where the way back will take it — for bench/check/sparc64.py;
 * an out-of-line site armed in check mode runs a checked slot whose second
 * trap records the state after the copy (ool_check.c).
 *
 * Registers are read and written where the trapped context keeps them:
 * %g and %o in the trap frame, %l and %i in the trapped window's save area
 * (trap_entry stored them there; a write to one flushes the windows
 * first, trapframe.h). CCR comes from
 * TSTATE, fcc0..3 from %fsr (read with PSTATE.PEF set for that moment).
 * This kernel runs on one CPU (sun4u), so the shell game's pending probe
 * is one variable and a store needs only a `flush` of the site.
 *
 * A probe program (program.h) reads the same trapped registers through the
 * tarch_context the fire path hands tracer_fire, numbered as registers.h
 * numbers them, before any emulation; %o0..%o5 are its arguments at an
 * entry, and its return value is the one the record carries, or the
 * register holding it when the delay slot cannot be evaluated.
 */
#include "arch/arch_sparc64.h"
#include "arch/sparc64.h"
#include "arch/trapframe.h"
#include "check.h"
#include "context.h"
#include "console.h"
#include "emulate.h"
#include "mechanisms.h"
#include "mm.h"
#include "ool.h"
#include "physstore.h"
#include "registers.h"
#include "stamp.h"
#include "thread.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

enum { TARCH_MECHANISMS(MECHANISM_ENUM) };
const struct tarch_mechanism tarch_mechanisms[] = { TARCH_MECHANISMS(MECHANISM_ROW) };
const unsigned tarch_nmechanisms = sizeof tarch_mechanisms / sizeof tarch_mechanisms[0];
const unsigned tarch_check_words = SPARC64_CHECK_WORDS;
const unsigned tarch_cost_kind = WIRE_EVENT_RETURN;

extern const char tracer_bare_illtrap[];

#define ILLTRAP(index)  ((uint32_t)(index) & 0x3fffff)
#define OP3_SAVE        0x3c
#define OP3_RESTORE     0x3d
#define OP3_RETURN      0x39
#define REG_SP          14

/* The probe whose original is in the stream (shell game), or 0, and the
 * thread whose trap put it there. */
static struct probe *shell_pending;
static struct thread *shell_thread;
/* Per thread (thread.h's slots): the shell-game probe it was interrupted
 * in front of, id + 1. */
static unsigned shell_slot;

/* Whether a CTI reads a register of the trapped window's %l/%i (jmpl and
 * the register branches read rs1, jmpl an rs2 too; %i7 makes `ret` one),
 * or writes one (jmpl's rd). */
static bool cti_reads_window(const struct sparc_cti *c)
{
	if (c->cls == SPARC_JMPL)
		return c->rs1 >= 16 || (!c->imm && c->rs2 >= 16) || c->rd >= 16;
	return c->cls == SPARC_BPR && c->rs1 >= 16;
}

/* Whether a format-3 word's operands (rs1, and rs2 unless i) include a
 * %l or %i: a delay slot return_value() may evaluate, a save's. */
static bool operands_read_window(uint32_t w)
{
	return ((w >> 14) & 0x1f) >= 16 ||
	       (!((w >> 13) & 1) && (w & 0x1f) >= 16);
}

static bool is_save_to_sp(uint32_t w)
{
	return w >> 30 == 2 && ((w >> 19) & 0x3f) == OP3_SAVE &&
	       ((w >> 25) & 0x1f) == REG_SP;
}

int tarch_decode(uintptr_t addr, unsigned kind, struct tarch_site *site,
		 const char **why)
{
	const uint32_t *code = (const uint32_t *)addr;

	if (addr & 3) {
		*why = "not a word-aligned instruction address";
		return -1;
	}
	uint32_t w = code[0];
	*site = (struct tarch_site){ .insn = w, .window = true };
	if (addr >= (uintptr_t)__text_start + 4 && sparc_is_cti(code[-1])) {
		*why = "in the delay slot of a control transfer";
		return -1;
	}
	if (addr + 8 <= (uintptr_t)__text_end)
		site->slot = code[1];
	bool any = kind == WIRE_EVENT_ENTRY || kind == WIRE_EVENT_INSN;
	if (any && is_save_to_sp(w)) {
		/* save %sp, -N, %sp reads an %o: the trapped window's %l/%i
		 * (in its save area on the stack, checked mapped page by
		 * page) are read only for a program or check mode. */
		site->what = SPARC_SITE_SAVE;
		site->window = operands_read_window(w);
		return 0;
	}
	/* Any other first instruction (a leaf function's) takes the entry
	 * probe too, and an insn probe any word: a CTI or `return` emulated,
	 * else out of line (ool.c). */
	if (any && !sparc_is_cti(w)) {
		if (!sparc_ool_ok(w, why))
			return -1;
		site->what = SPARC_SITE_OOL;
		site->window = false;
		return 0;
	}
	if (w >> 30 == 2 && ((w >> 19) & 0x3f) == OP3_RETURN) {
		bool ret = ((w >> 14) & 0x1f) == SPARC_I7 && ((w >> 13) & 1) &&
			   (w & 0x1fff) == 8;
		if (kind == WIRE_EVENT_RETURN && !ret) {
			*why = "a return probe sits on ret, retl or return %i7+8";
			return -1;
		}
		site->what = SPARC_SITE_RETURN;
		return 0;
	}
	if (sparc_decode(w, &site->cti, why) != 0)
		return -1;
	site->what = SPARC_SITE_CTI;
	const struct sparc_cti *c = &site->cti;
	if (kind == WIRE_EVENT_RETURN) {
		if (c->cls != SPARC_JMPL || c->rd != 0 || !c->imm || c->simm13 != 8 ||
		    (c->rs1 != SPARC_I7 && c->rs1 != SPARC_O7)) {
			*why = "a return probe sits on ret, retl or return %i7+8";
			return -1;
		}
	}
	site->window = cti_reads_window(c) ||
		       (kind == WIRE_EVENT_RETURN && operands_read_window(site->slot));
	return 0;
}

bool tarch_can_arm(const struct probe *p, const char **why)
{
	if (p->site.what == SPARC_SITE_OOL && tracer_check_mode &&
	    p->mechanism == MECHANISM_EMULATE)
		return ool_checkable(p->site.insn, why);
	return true;
}

/* Whether a count-only firing of the site reads nothing but the frame:
 * the quick path of sparc64_probe_trap. */
static bool quick_site(const struct tarch_site *s)
{
	switch (s->what) {
	case SPARC_SITE_OOL:
		return true;
	case SPARC_SITE_SAVE:
		return !s->window;
	case SPARC_SITE_CTI:
		return s->cti.cls == SPARC_BICC || s->cti.cls == SPARC_BPCC ||
		       s->cti.cls == SPARC_CALL;
	}
	return false;
}

static void store_word(const struct probe *p, uint32_t w)
{
	*(volatile uint32_t *)tracer_text_alias(p->addr) = w;
	flush_insn((const void *)p->addr);
}

void tarch_arm(struct probe *p)
{
	if (p->site.what == SPARC_SITE_OOL) {
		/* which slot (ool_check.c), written before the trap can send
		 * anyone there */
		p->site.checked = tracer_check_mode && p->mechanism == MECHANISM_EMULATE;
		if (p->site.checked)
			ool_check_prepare(p);
		else
			ool_prepare(p);
	}
	p->site.quick = p->mechanism == MECHANISM_EMULATE && !p->site.checked &&
			quick_site(&p->site);
	if (shell_pending == p)
		shell_pending = 0;
	store_word(p, ILLTRAP(p->id));
}

void tarch_disarm(struct probe *p)
{
	if (shell_pending == p)
		shell_pending = 0;
	store_word(p, p->site.insn);
}

/* Every sparc64 trap is one word, stored at once: no later stages. */
void tarch_stage(void)
{
}

/* ---- the fire path ---- */

/* %fsr, with the FPU on for the moment it takes: PSTATE.PEF and FPRS.FEF
 * (bit 2) both, as the trapped context may have either off. */
static uint64_t read_fsr(void)
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

/* The trapped registers into r; false if the trapped window's save area
 * is unmapped (the kernel then stops with the trap). Without window,
 * %l and %i are left out (and unset): the caller reads none of them.
 * watch.c's too. */
bool sparc64_load_regs(struct trapframe *tf, struct sparc_regs *r, bool window)
{
	r->pc = tf->tpc;
	r->npc = tf->tnpc;
	r->ccr = (uint8_t)(tf->tstate >> 32);
	for (unsigned n = 0; n < 8; n++) {
		r->r[n] = n ? tf->g[n] : 0;
		r->r[n + 8] = tf->o[n];
	}
	if (!window)
		return true;
	const uint64_t *li = trapframe_reg_read(tf, 16);   /* %l0..%l7, %i0..%i7 */
	if (!li)
		return false;
	for (unsigned n = 0; n < 16; n++)
		r->r[n + 16] = li[n];
	return true;
}

/* A format-3 instruction's operands on r: rs1, and simm13 or rs2. */
static uint64_t operand1(uint32_t w, const struct sparc_regs *r)
{
	return r->r[(w >> 14) & 0x1f];
}

static uint64_t operand2(uint32_t w, const struct sparc_regs *r)
{
	if ((w >> 13) & 1)
		return (uint64_t)((int64_t)((uint64_t)w << 51) >> 51);
	return r->r[w & 0x1f];
}

/* A format-3 ALU result the delay slot computes, from r; false if the
 * slot is not one of the forms compilers put there. */
static bool slot_value(uint32_t w, const struct sparc_regs *r, uint64_t *v)
{
	unsigned op3 = (w >> 19) & 0x3f;
	bool x = (w >> 12) & 1;
	uint64_t a = operand1(w, r), b = operand2(w, r);
	unsigned sh = (unsigned)b & (x ? 63 : 31);

	if (w >> 30 != 2)
		return false;
	switch (op3) {
	case 0x00: case OP3_RESTORE: *v = a + b; return true;   /* add, restore */
	case 0x01: *v = a & b; return true;
	case 0x02: *v = a | b; return true;                     /* or, mov */
	case 0x03: *v = a ^ b; return true;
	case 0x04: *v = a - b; return true;
	case 0x25: *v = a << sh; return true;                  /* sll(x) */
	case 0x26: *v = x ? a >> sh : (uint64_t)((uint32_t)a >> sh); return true;
	case 0x27: *v = x ? (uint64_t)((int64_t)a >> sh)
			  : (uint64_t)(int64_t)((int32_t)(uint32_t)a >> sh);
		return true;
	}
	return false;
}

/* Whether a delay-slot word writes register n of the window it runs in. */
static bool slot_writes(uint32_t w, unsigned n)
{
	unsigned op = w >> 30, rd = (w >> 25) & 0x1f;
	if (op == 0)
		return ((w >> 22) & 7) == 4 && rd == n;        /* sethi */
	if (op == 1)
		return n == SPARC_O7;
	return rd == n;                                        /* ALU, loads */
}

/* The value the caller sees in %o0 after this return; false if unknown. */
static bool return_value(const struct probe *p, const struct sparc_regs *r,
			 uint64_t *v)
{
	uint32_t slot = p->site.slot;
	if (p->site.what == SPARC_SITE_RETURN) {
		/* The slot runs in the caller's window: its %o are our %i. */
		if (!slot_writes(slot, 8)) {
			*v = r->r[24];
			return true;
		}
		unsigned rs1 = (slot >> 14) & 0x1f, rs2 = slot & 0x1f;
		bool imm = (slot >> 13) & 1;
		if ((rs1 >= 16) || (!imm && rs2 >= 16))
			return false;           /* the caller's %l/%i: not loaded */
		struct sparc_regs caller = *r;
		for (unsigned n = 8; n < 16; n++)
			caller.r[n] = r->r[n + 16];
		return slot_value(slot, &caller, v);
	}
	bool ret = p->site.cti.rs1 == SPARC_I7;
	unsigned vreg = ret ? 24 : 8;       /* %i0 becomes the caller's %o0 */
	bool restore = slot >> 30 == 2 && ((slot >> 19) & 0x3f) == OP3_RESTORE;

	if (ret && restore) {
		/* restore's rd names the caller's window: %o0 there is ours. */
		if (((slot >> 25) & 0x1f) == 8)
			return slot_value(slot, r, v);
		*v = r->r[vreg];
		return true;
	}
	if (!slot_writes(slot, vreg)) {
		*v = r->r[vreg];
		return true;
	}
	return !restore && slot_value(slot, r, v);
}


#define REGISTER_ENUM(name, number, text) TREG_##name = number,
enum { TARCH_REGISTERS(REGISTER_ENUM) };
#undef REGISTER_ENUM

bool tarch_context_reg(const struct tarch_context *ctx, const struct probe *p,
		       unsigned reg, unsigned long *value)
{
	(void)p;
	if (reg < 32) {
		*value = ctx->r->r[reg];        /* r[0], %g0, is 0 */
		return true;
	}
	switch (reg) {
	case TREG_PC:  *value = ctx->r->pc; return true;
	case TREG_NPC: *value = ctx->r->npc; return true;
	case TREG_CCR: *value = ctx->r->ccr; return true;
	case TREG_Y:   *value = ctx->tf->y; return true;
	}
	return false;
}

/* At a function's save the arguments are the trapped window's %o0..%o5;
 * the V9 ABI passes the 7th on in the caller's frame, after the 16
 * register-save words and the 6 argument homes: at %sp + BIAS + 128 +
 * 8 n (read fault-safely: the stack is the caller's). */
#define ARG_HOMES 128
bool tarch_context_arg(const struct tarch_context *ctx, const struct probe *p,
		       unsigned n, unsigned long *value)
{
	if (p->kind != WIRE_EVENT_ENTRY)
		return false;
	if (n < 6) {
		*value = ctx->r->r[8 + n];
		return true;
	}
	return tracer_read(ctx->r->r[14] + STACK_BIAS + ARG_HOMES + 8 * n, 8, value);
}

/* The value the caller will see in %o0, as return_value() computes it from
 * the delay slot; when it cannot (a slot it does not evaluate), the
 * register the function left the value in before the slot: %i0 at ret
 * and return, %o0 at retl. */
bool tarch_context_retval(const struct tarch_context *ctx, const struct probe *p,
			  unsigned long *value)
{
	uint64_t v;
	if (p->kind != WIRE_EVENT_RETURN)
		return false;
	if (return_value(p, ctx->r, &v)) {
		*value = v;
		return true;
	}
	bool leaf = p->site.what == SPARC_SITE_CTI && p->site.cti.rs1 == SPARC_O7;
	*value = ctx->r->r[leaf ? 8 : 24];
	return true;
}

_Static_assert(WIRE_BRANCH_SLOT < WIRE_ENTRY_ARG0 + TRACER_MAX_ARGS,
	       "record_fire's array holds a BRANCH record too");

static void record_fire(const struct probe *p, struct trapframe *tf,
			const struct sparc_regs *r, const struct sparc_outcome *o)
{
	const struct tarch_context ctx = { tf, r };
	unsigned long w[WIRE_ENTRY_ARG0 + TRACER_MAX_ARGS];
	unsigned n;
	uint64_t v;

	if (tracer_counts_only(p)) {
		tracer_fire_count(p, this_cpu()->id);
		return;
	}
	switch (p->kind) {
	case WIRE_EVENT_INSN:
		w[WIRE_INSN_PC] = tf->tpc;
		w[WIRE_INSN_SP] = trapframe_sp(tf) + STACK_BIAS;
		n = WIRE_INSN_SP + 1;
		break;
	case WIRE_EVENT_ENTRY:
		w[WIRE_ENTRY_PC] = tf->tpc;
		w[WIRE_ENTRY_SP] = trapframe_sp(tf) + STACK_BIAS;
		for (unsigned a = 0; a < p->nargs; a++)
			w[WIRE_ENTRY_ARG0 + a] = tf->o[a];
		n = WIRE_ENTRY_ARG0 + p->nargs;
		break;
	case WIRE_EVENT_RETURN:
		w[WIRE_RETURN_PC] = tf->tpc;
		w[WIRE_RETURN_SP] = trapframe_sp(tf) + STACK_BIAS;
		n = WIRE_RETURN_VALUE;          /* no value word if unknown */
		if (return_value(p, r, &v)) {
			w[WIRE_RETURN_VALUE] = v;
			n = WIRE_RETURN_VALUE + 1;
		}
		break;
	default:
		w[WIRE_BRANCH_PC] = tf->tpc;
		w[WIRE_BRANCH_TARGET] = o->target;
		w[WIRE_BRANCH_FLAGS] = (o->taken ? WIRE_BRANCH_TAKEN : 0) |
				       (o->annulled ? WIRE_BRANCH_ANNULLED : 0);
		n = WIRE_BRANCH_FLAGS + 1;
		if (sparc_code_bytes != TARCH_BYTES_OFF) {
			w[WIRE_BRANCH_SLOT] = sparc_code_word(tf->tpc + 4);
			n = WIRE_BRANCH_SLOT + 1;
		}
		break;
	}
	tracer_fire(p, p->kind, w, n, &ctx);
}

static _Noreturn void fire_failed(const struct probe *p, const char *what,
				  uint64_t value)
{
	panic("probe %u at 0x%lx: %s (0x%llx)", p->id, (unsigned long)p->addr,
	      what, (unsigned long long)value);
}

/* ---- check mode (check.h) ---- */

void sparc64_check_state(const struct trapframe *tf, const struct sparc_regs *r,
			 unsigned long *w)
{
	w[SPARC64_CHECK_PC] = r->pc;
	w[SPARC64_CHECK_NPC] = r->npc;
	w[SPARC64_CHECK_CCR] = r->ccr;
	w[SPARC64_CHECK_Y] = tf->y;
	w[SPARC64_CHECK_FSR] = read_fsr();
	for (unsigned n = 1; n < 32; n++)
		w[SPARC64_CHECK_R0 + n] = r->r[n];
}

/* The %l/%i of the window `return` goes back to: in the caller's save
 * area at our %fp once the windows are flushed. False if it is unmapped. */
static bool caller_window(const struct sparc_regs *r, unsigned long *w)
{
	uintptr_t area = r->r[30] + STACK_BIAS;
	if ((area & 7) || mm_virt_to_phys((void *)area) == (uintptr_t)-1 ||
	    mm_virt_to_phys((void *)(area + 127)) == (uintptr_t)-1)
		return false;
	flushw();
	for (unsigned n = 0; n < SPARC64_CHECK_CALLER; n++)
		w[n] = ((const uint64_t *)area)[n];
	return true;
}

/* The "before" words from the trapped state r, and the caller's window
 * for a `return`. */
static void check_before(const struct probe *p, const struct trapframe *tf,
			 const struct sparc_regs *r, unsigned long *w)
{
	unsigned long *caller = w + 2 * SPARC64_CHECK_NREGS;
	sparc64_check_state(tf, r, w);
	for (unsigned n = 0; n < SPARC64_CHECK_CALLER; n++)
		caller[n] = 0;
	if (p->site.what == SPARC_SITE_RETURN && !caller_window(r, caller))
		fire_failed(p, "the caller's save area is not mapped", r->r[30]);
}

/* The "after" words, read back from where the fire path left the state,
 * with the window the resume switches to (check.h); then the record. */
static void check_after(const struct probe *p, struct trapframe *tf,
			unsigned long *w)
{
	struct sparc_regs a;
	unsigned long *after = w + SPARC64_CHECK_NREGS;
	const unsigned long *caller = w + 2 * SPARC64_CHECK_NREGS;
	enum { O = SPARC64_CHECK_O0, L = SPARC64_CHECK_L0, I = SPARC64_CHECK_I0 };

	if (!sparc64_load_regs(tf, &a, true))
		fire_failed(p, "the trapped %sp is not mapped", trapframe_sp(tf));
	sparc64_check_state(tf, &a, after);
	for (unsigned n = 0; n < 8; n++) {
		if (p->site.what == SPARC_SITE_SAVE) {
			after[I + n] = a.r[8 + n];
			after[L + n] = 0;
			after[O + n] = n == 6 ? tf->save_sp : 0;
		} else if (p->site.what == SPARC_SITE_RETURN) {
			after[O + n] = a.r[24 + n];
			after[L + n] = caller[n];
			after[I + n] = caller[8 + n];
		}
	}
	tracer_record(p, WIRE_EVENT_CHECK, w, SPARC64_CHECK_WORDS);
}

/* Whether p's fire path, short of a program, check mode or a window
 * its site reads (those load everything), reads a %g or %o register
 * through the register copy: a return site's target and value, a jmpl's
 * or BPr's rs1/rs2. A branch on the condition codes, a call and an
 * out-of-line site read none, and a save reads its operands from the
 * frame itself (frame_operands): their firing copies no register out of
 * the trap frame. */
static bool reads_globals_outs(const struct probe *p)
{
	switch (p->site.what) {
	case SPARC_SITE_CTI:
		return p->site.cti.cls == SPARC_JMPL || p->site.cti.cls == SPARC_BPR;
	case SPARC_SITE_OOL:
	case SPARC_SITE_SAVE:           /* its operands come from the frame */
		return false;
	default:
		return true;
	}
}

/* A format-3 operand read from the trapped state itself: a %g or %o in
 * the frame, a %l or %i in the trapped window's save area (the site's
 * window says it is read, and the fire path has checked it mapped). */
static uint64_t frame_reg(const struct trapframe *tf, unsigned n)
{
	if (n < 16)
		return n < 8 ? (n ? tf->g[n] : 0) : tf->o[n - 8];
	return *trapframe_reg_read(tf, n);
}

static uint64_t frame_operands(const struct trapframe *tf, uint32_t w)
{
	uint64_t b = (w >> 13) & 1 ? (uint64_t)((int64_t)((uint64_t)w << 51) >> 51)
				   : frame_reg(tf, w & 0x1f);
	return frame_reg(tf, (w >> 14) & 0x1f) + b;
}

/* The resumes that read nothing but the frame, shared by the quick path
 * and the full one. An out-of-line site: the copy, then site + 4. */
static inline void resume_ool(const struct probe *p, struct trapframe *tf)
{
	tf->tnpc = tf->tpc + 4;
	tf->tpc = ool_slot(p);
}

/* A save: resume in the window trap_entry's save opened (trapframe.h). */
static inline void resume_save(const struct probe *p, struct trapframe *tf)
{
	tf->save_sp = frame_operands(tf, p->site.insn);
	tf->tpc = tf->tnpc;
	tf->tnpc += 4;
}

/* A count-only firing of a quick site (tracer_site.h): what the full path
 * does for it, with no register copy and no test of what it cannot be.
 * A branch on the CCR or a call reads the PC, the nPC and the CCR, and a
 * call writes %o7, a frame register. */
static inline void resume_quick(const struct probe *p, struct trapframe *tf)
{
	if (p->site.what == SPARC_SITE_OOL) {
		resume_ool(p, tf);
		return;
	}
	if (p->site.what == SPARC_SITE_SAVE) {
		resume_save(p, tf);
		return;
	}
	struct sparc_regs r;
	struct sparc_outcome o;
	uint64_t fault;
	r.pc = tf->tpc;
	r.npc = tf->tnpc;
	r.ccr = (uint8_t)(tf->tstate >> 32);
	(void)sparc_emulate(&p->site.cti, &r, &o, &fault);     /* no jmpl: no fault */
	if (p->site.cti.cls == SPARC_CALL)
		tf->o[7] = r.r[SPARC_O7];
	tf->tpc = r.pc;
	tf->tnpc = r.npc;
}

/* The illegal_instruction hook (trap.h): if TPC holds one of our
 * ILLTRAPs, record and emulate (or run the shell game), with tf edited for
 * the retry; else declined. */
static int sparc64_probe_trap(struct trapframe *tf)
{
	tracer_stamp(TRACER_STAMP_ENTRY);
	uint32_t word;
	/* Reading the trapped word is reading code: while any page is
	 * execute-only (seed 003's method 1, mm.h), or `trace bytes` asks,
	 * it is read as sparc_code_read does — by physical address, or
	 * through trap_try, a fault then leaving the probe to be found by its
	 * address. */
	if (__builtin_expect(!mm_exec_only_pages && sparc_code_bytes == TARCH_BYTES_OFF, 1)) {
		word = *(const volatile uint32_t *)tf->tpc;
	} else if (!sparc_code_read(tf->tpc, &word)) {
		const struct probe *q = tracer_lookup(tf->tpc);
		if (!q)
			return TRAP_DECLINED;
		word = q->id;
	}

	if (word >> 22 != 0)
		return TRAP_DECLINED;           /* not an illtrap we wrote */
	if (tf->tpc == (uintptr_t)tracer_bare_illtrap) {
		tf->tpc = tf->tnpc;             /* the bare round trip */
		tf->tnpc += 4;
		return TRAP_HANDLED;
	}
	if (word >= TRACER_MAX_PROBES)
		return TRAP_DECLINED;
	struct probe *p = &tracer_probes[word];
	if (p->state == PROBE_FREE || p->addr != tf->tpc)
		return TRAP_DECLINED;
	tracer_stamp(TRACER_STAMP_LOOKUP);
	if (__builtin_expect(p->site.quick, 1) && !tracer_check_mode &&
	    tracer_counts_only(p)) {
		tracer_fire_count(p, this_cpu()->id);
		tracer_stamp(TRACER_STAMP_FIRE);
		resume_quick(p, tf);
		tracer_stamp(TRACER_STAMP_EMULATE);
		return TRAP_HANDLED;
	}

	struct sparc_regs r;
	struct sparc_outcome o = { 0 };
	const struct sparc_cti *c = &p->site.cti;
	/* (An out-of-line site's check is its slot's: site.checked.) */
	bool check = tracer_check_mode && p->mechanism == MECHANISM_EMULATE &&
		     p->site.what != SPARC_SITE_OOL;
	/* The %l/%i only when the site (tracer_site.h), a program or check
	 * mode may read them. */
	bool window = check || p->gated || p->site.window;
	if (window || reads_globals_outs(p)) {
		if (!sparc64_load_regs(tf, &r, window))
			fire_failed(p, "the trapped %sp is not mapped", trapframe_sp(tf));
	} else {                /* what a branch or call on the CCR reads */
		r.pc = tf->tpc;
		r.npc = tf->tnpc;
		r.ccr = (uint8_t)(tf->tstate >> 32);
		r.r[0] = r.r[SPARC_O7] = 0;     /* rd, saved and put back below */
	}
	if (p->site.what == SPARC_SITE_CTI &&
	    (c->cls == SPARC_FBFCC || c->cls == SPARC_FBPFCC)) {
		if (!(tf->tstate >> TSTATE_PSTATE_SHIFT & PSTATE_PEF))
			fire_failed(p, "an FP branch with PSTATE.PEF clear would "
				    "trap fp_disabled; tstate", tf->tstate);
		r.fsr = read_fsr();
	}
	unsigned long chk[SPARC64_CHECK_WORDS];
	if (check)
		check_before(p, tf, &r, chk);

	if (p->site.what == SPARC_SITE_RETURN) {
		o.target = operand1(p->site.insn, &r) + operand2(p->site.insn, &r);
		o.taken = true;
	}
	if (p->mechanism == MECHANISM_SHELLGAME) {
		struct thread *me = thread_current();
		bool again = thread_slot(me, shell_slot) == p->id + 1;
		thread_slot_set(me, shell_slot, 0);
		if (p->site.what == SPARC_SITE_CTI) {
			struct sparc_regs after = r;   /* the outcome, for the record */
			uint64_t fault;
			(void)sparc_emulate(c, &after, &o, &fault);
		}
		if (!again)                     /* else: the same execution, resumed */
			record_fire(p, tf, &r, &o);
		struct probe *q = shell_pending;
		if (q && q != p && q->state == PROBE_ENABLED)
			store_word(q, ILLTRAP(q->id));
		store_word(p, p->site.insn);
		shell_pending = p;
		shell_thread = me;
		return TRAP_HANDLED;            /* retry runs the original */
	}

	if (p->site.what == SPARC_SITE_RETURN) {
		if (o.target & 3)
			fire_failed(p, "return to a misaligned address", o.target);
		record_fire(p, tf, &r, &o);
		tracer_stamp(TRACER_STAMP_FIRE);
		tf->restore2 = 1;
		tf->tpc = tf->tnpc;
		tf->tnpc = o.target;
		tracer_stamp(TRACER_STAMP_EMULATE);
		if (check)
			check_after(p, tf, chk);
		return TRAP_HANDLED;
	}
	if (p->site.what == SPARC_SITE_OOL) {     /* the copy, then site + 4 */
		record_fire(p, tf, &r, &o);
		tracer_stamp(TRACER_STAMP_FIRE);
		if (__builtin_expect(p->site.checked, 0)) {
			ool_check_before(p, tf);        /* the checked slot */
			return TRAP_HANDLED;
		}
		resume_ool(p, tf);
		tracer_stamp(TRACER_STAMP_EMULATE);
		return TRAP_HANDLED;
	}
	if (p->site.what == SPARC_SITE_SAVE) {
		record_fire(p, tf, &r, &o);
		tracer_stamp(TRACER_STAMP_FIRE);
		resume_save(p, tf);
		tracer_stamp(TRACER_STAMP_EMULATE);
		if (check)
			check_after(p, tf, chk);
		return TRAP_HANDLED;
	}

	/* A CTI writes the PC, the nPC and at most one register (call: %o7,
	 * jmpl: rd), so r is emulated in place and put back as it was for the
	 * record and the program, which see the state before; no copy of the
	 * whole register file is made (gcc makes one a memcpy call). */
	unsigned rd = c->cls == SPARC_CALL ? SPARC_O7 : c->cls == SPARC_JMPL ? c->rd : 0;
	uint64_t pc = r.pc, npc = r.npc, old = r.r[rd], fault;
	if (sparc_emulate(c, &r, &o, &fault) != 0)
		fire_failed(p, "jmpl to a misaligned address", fault);
	uint64_t new_pc = r.pc, new_npc = r.npc, value = r.r[rd];
	r.pc = pc, r.npc = npc, r.r[rd] = old;
	tracer_stamp(TRACER_STAMP_EMULATE);
	record_fire(p, tf, &r, &o);
	tracer_stamp(TRACER_STAMP_FIRE);
	if (rd)
		*trapframe_reg(tf, rd) = value;
	tf->tpc = new_pc;
	tf->tnpc = new_npc;
	if (check)
		check_after(p, tf, chk);
	return TRAP_HANDLED;
}

/* The hook on the tick and UART interrupts, which only observes: an
 * interrupt taken at the retry of a shell-game probe's original, before
 * it ran, marks the thread, so the firing the ILLTRAP (put back by then)
 * causes when the thread resumes is not recorded twice. */
static int sparc64_probe_interrupted(struct trapframe *tf)
{
	struct probe *p = shell_pending;
	if (p && tf->tpc == p->addr && thread_current() == shell_thread)
		thread_slot_set(shell_thread, shell_slot, p->id + 1);
	return TRAP_DECLINED;
}

void tarch_init(void)
{
	shell_slot = thread_slot_claim();
	trap_hook_add(TT_ILLEGAL_INSTRUCTION, sparc64_probe_trap);
	ool_check_init();       /* the checked slots' mark, after the probes' */
	sparc64_watch_init();
	trap_hook_add(TT_INTERRUPT_LEVEL_14, sparc64_probe_interrupted);
	trap_hook_add(TT_INTERRUPT_VECTOR, sparc64_probe_interrupted);
}
