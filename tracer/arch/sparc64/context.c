/*
 * context.c — what a sparc64 firing carries beyond the trap frame's words:
 * the value a return site's caller will see, and a probe program's view
 * of the trapped state (tracer_arch.h's tarch_context_*).
 *
 * The return value. At `ret`/`retl`/`return` the value the caller will see
 * in %o0 is often computed by the delay slot (`ret; restore %g0, 1, %o0`,
 * `retl; sra %o0, 0, %o0`), which has not run when the probe fires: the
 * forms compilers put there (add, restore, and/or/xor, sub, the shifts) are
 * evaluated on the trapped registers; a slot that is none of them leaves
 * the value unknown, and the record (fire.c) carries none.
 *
 * A probe program (program.h) reads the same trapped registers through the
 * tarch_context the fire path hands tracer_fire, numbered as registers.h
 * numbers them, before any emulation; %o0..%o5 are its arguments at an
 * entry, and its return value is the one the record carries, or the
 * register holding it when the delay slot cannot be evaluated.
 */
#include "arch/trapframe.h"
#include "context.h"
#include "emulate.h"
#include "fire.h"
#include "registers.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

/* A format-3 ALU result the delay slot w computes from its operands a
 * (rs1) and b (rs2 or simm13); false if w is not one of the forms
 * compilers put there. */
static bool slot_alu(uint32_t w, uint64_t a, uint64_t b, uint64_t *v)
{
	unsigned op3 = (w >> 19) & 0x3f;
	bool x = (w >> 12) & 1;
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

/* The same, its operands read from r. */
static bool slot_value(uint32_t w, const struct sparc_regs *r, uint64_t *v)
{
	return slot_alu(w, operand1(w, r), operand2(w, r), v);
}

/* Whether a delay-slot word writes register n of the window it runs in. */
bool sparc64_slot_writes(uint32_t w, unsigned n)
{
	unsigned op = w >> 30, rd = (w >> 25) & 0x1f;
	if (op == 0)
		return ((w >> 22) & 7) == 4 && rd == n;        /* sethi */
	if (op == 1)
		return n == SPARC_O7;
	return rd == n;                                        /* ALU, loads */
}

bool sparc64_slot_alu_form(uint32_t w)
{
	uint64_t v;
	return slot_alu(w, 0, 0, &v);   /* the form alone decides */
}

/* The value the caller sees in %o0 after this return; false if unknown. */
bool sparc64_return_value(const struct probe *p, const struct sparc_regs *r,
			  uint64_t *v)
{
	uint32_t slot = p->site.slot;
	if (p->site.what == SPARC_SITE_RETURN) {
		/* The slot runs in the caller's window: its %o are our %i. */
		if (!sparc64_slot_writes(slot, 8)) {
			*v = r->r[24];
			return true;
		}
		unsigned rs1 = (slot >> 14) & 0x1f, rs2 = slot & 0x1f;
		bool imm = (slot >> 13) & 1;
		if ((rs1 >= 16) || (!imm && rs2 >= 16))
			return false;           /* the caller's %l/%i: not loaded */
		/* The caller's %o are our %i (no copy of r: a call of memcpy
		 * and a frame, a register window under every return's record) */
		uint64_t a = rs1 >= 8 ? r->r[rs1 + 16] : r->r[rs1];
		uint64_t b = imm ? operand2(slot, r) : rs2 >= 8 ? r->r[rs2 + 16] : r->r[rs2];
		return slot_alu(slot, a, b, v);
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
	if (!sparc64_slot_writes(slot, vreg)) {
		*v = r->r[vreg];
		return true;
	}
	return !restore && slot_value(slot, r, v);
}

/* ---- a probe program's view ---- */

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
	if (p->kind == WIRE_EVENT_SAMPLE && n == 0) {
		*value = ctx->r->pc;                    /* the interrupted PC */
		return true;
	}
	if (p->kind != WIRE_EVENT_ENTRY)
		return false;
	if (n < 6) {
		*value = ctx->r->r[8 + n];
		return true;
	}
	return tracer_read(ctx->r->r[14] + STACK_BIAS + ARG_HOMES + 8 * n, 8, value);
}

/* The value the caller will see in %o0, as sparc64_return_value()
 * computes it from the delay slot; when it cannot (a slot it does not
 * evaluate), the register the function left the value in before the
 * slot: %i0 at ret and return, %o0 at retl. */
bool tarch_context_retval(const struct tarch_context *ctx, const struct probe *p,
			  unsigned long *value)
{
	uint64_t v;
	if (p->kind != WIRE_EVENT_RETURN)
		return false;
	if (sparc64_return_value(p, ctx->r, &v)) {
		*value = v;
		return true;
	}
	bool leaf = p->site.what == SPARC_SITE_CTI && p->site.cti.rs1 == SPARC_O7;
	*value = ctx->r->r[leaf ? 8 : 24];
	return true;
}
