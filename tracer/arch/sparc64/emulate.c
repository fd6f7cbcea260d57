/*
 * emulate.c — decode and emulate the SPARC V9 control-transfer
 * instructions a probe may displace (emulate.h says what and why).
 *
 * Decoding happens once, when a probe is added: the word is split into
 * class, condition, annul bit, cc selector, displacement or JMPL operands,
 * and anything outside the emulated classes is refused with a reason. The
 * fire path then only evaluates the condition on the trapped state and
 * picks PC/nPC. Displacements are sign-extended word counts (disp30,
 * disp22, disp19, d16hi:d16lo); the target is relative to the CTI's own
 * address, and there is no address masking (PSTATE.AM is never set here).
 */
#include "emulate.h"

#define CLASS_NAME(name, what) what,
const char *const sparc_cti_class_names[SPARC_CTI_CLASS_COUNT] = {
	SPARC_CTI_CLASSES(CLASS_NAME)
};
#undef CLASS_NAME

#define OP(w)      ((w) >> 30)
#define OP2(w)     (((w) >> 22) & 7)
#define OP3(w)     (((w) >> 19) & 0x3f)
#define ANNUL(w)   (((w) >> 29) & 1)
#define COND(w)    (((w) >> 25) & 0xf)
#define RD(w)      (((w) >> 25) & 0x1f)
#define RS1(w)     (((w) >> 14) & 0x1f)
#define RS2(w)     ((w) & 0x1f)
#define IBIT(w)    (((w) >> 13) & 1)

#define OP3_JMPL   0x38
#define OP3_RETURN 0x39
#define OP3_TCC    0x3a
#define OP3_DONE   0x3e      /* DONE and RETRY */

enum { OP2_ILLTRAP, OP2_BPCC, OP2_BICC, OP2_BPR, OP2_SETHI, OP2_FBPFCC,
       OP2_FBFCC, OP2_RESERVED };

static int64_t sext(uint64_t v, unsigned bits)
{
	uint64_t m = 1ull << (bits - 1);
	v &= (m << 1) - 1;
	return (int64_t)((v ^ m) - m);
}

bool sparc_is_cti(uint32_t w)
{
	switch (OP(w)) {
	case 0:
		return OP2(w) == OP2_BPCC || OP2(w) == OP2_BICC || OP2(w) == OP2_BPR ||
		       OP2(w) == OP2_FBPFCC || OP2(w) == OP2_FBFCC;
	case 1:
		return true;
	case 2:
		return OP3(w) == OP3_JMPL || OP3(w) == OP3_RETURN ||
		       OP3(w) == OP3_TCC || OP3(w) == OP3_DONE;
	default:
		return false;
	}
}

int sparc_decode(uint32_t w, struct sparc_cti *c, const char **why)
{
	*c = (struct sparc_cti){ .word = w };
	if (OP(w) == 1) {
		c->cls = SPARC_CALL;
		c->disp = sext(w, 30) * 4;
		return 0;
	}
	if (OP(w) == 2) {
		switch (OP3(w)) {
		case OP3_JMPL:
			c->cls = SPARC_JMPL;
			c->rd = RD(w);
			c->rs1 = RS1(w);
			c->imm = IBIT(w);
			if (c->imm)
				c->simm13 = (int32_t)sext(w, 13);
			else
				c->rs2 = RS2(w);
			return 0;
		case OP3_RETURN:
			*why = "return restores a register window; it is not emulated";
			return -1;
		case OP3_TCC:
			*why = "Tcc is a trap instruction, not an emulated branch";
			return -1;
		case OP3_DONE:
			*why = "done/retry return from a trap; they are not emulated";
			return -1;
		}
		*why = "not a control-transfer instruction (probes sit on CALL, "
		       "JMPL, Bicc, BPcc, BPr, FBfcc, FBPfcc)";
		return -1;
	}
	if (OP(w) == 3) {
		*why = "a load or store, not a control-transfer instruction";
		return -1;
	}
	c->annul = ANNUL(w);
	c->cond = COND(w);
	switch (OP2(w)) {
	case OP2_ILLTRAP:
		*why = "an ILLTRAP/unimp word is already there (a probe, or the "
		       "word a caller of a struct-returning function expects)";
		return -1;
	case OP2_BICC:
		c->cls = SPARC_BICC;
		c->disp = sext(w, 22) * 4;
		return 0;
	case OP2_FBFCC:
		c->cls = SPARC_FBFCC;
		c->disp = sext(w, 22) * 4;
		return 0;
	case OP2_BPCC:
	case OP2_FBPFCC:
		c->cls = OP2(w) == OP2_BPCC ? SPARC_BPCC : SPARC_FBPFCC;
		c->cc = (w >> 20) & 3;
		if (c->cls == SPARC_BPCC && (c->cc & 1)) {
			*why = "BPcc with a reserved cc field (only icc and xcc exist)";
			return -1;
		}
		c->disp = sext(w, 19) * 4;
		return 0;
	case OP2_BPR:
		c->cls = SPARC_BPR;
		c->cond = (w >> 25) & 7;
		c->rs1 = RS1(w);
		if (w & (1u << 28)) {
			*why = "BPr with bit 28 set (reserved)";
			return -1;
		}
		if ((c->cond & 3) == 0) {
			*why = "BPr with a reserved rcond (0 or 4)";
			return -1;
		}
		c->disp = sext(((w >> 20) & 3) << 14 | (w & 0x3fff), 16) * 4;
		return 0;
	case OP2_SETHI:
		*why = "sethi/nop, not a control-transfer instruction";
		return -1;
	default:
		*why = "a reserved op2 (not a V9 instruction)";
		return -1;
	}
}

static uint64_t reg(const struct sparc_regs *r, unsigned n)
{
	return n ? r->r[n] : 0;
}

/* N Z V C in bits 3..0 of cc; cond as in Bicc/BPcc: bit cc of
 * icc_taken[cond] says whether the branch is taken. The table is the
 * V9 manual's conditions, evaluated by the compiler for all 16 values
 * of cc, so a firing looks its answer up instead of switching on cond
 * (a jump table, an indirect jump TCG resolves at run time). */
#define CC_N(cc) (((cc) >> 3) & 1)
#define CC_Z(cc) (((cc) >> 2) & 1)
#define CC_V(cc) (((cc) >> 1) & 1)
#define CC_C(cc) ((cc) & 1)
#define ICC_BASE(cond, cc)                                                 \
	(((cond) & 7) == 0 ? 0 :                             /* n  / a   */ \
	 ((cond) & 7) == 1 ? CC_Z(cc) :                      /* e  / ne  */ \
	 ((cond) & 7) == 2 ? (CC_Z(cc) | (CC_N(cc) ^ CC_V(cc))) : /* le / g */ \
	 ((cond) & 7) == 3 ? (CC_N(cc) ^ CC_V(cc)) :         /* l  / ge  */ \
	 ((cond) & 7) == 4 ? (CC_C(cc) | CC_Z(cc)) :         /* leu / gu */ \
	 ((cond) & 7) == 5 ? CC_C(cc) :                      /* cs / cc  */ \
	 ((cond) & 7) == 6 ? CC_N(cc) : CC_V(cc))            /* neg / pos, vs / vc */
#define ICC_TAKEN(cond, cc) (((cond) & 8 ? !ICC_BASE(cond, cc) : ICC_BASE(cond, cc)) << (cc))
#define ICC_MASK(cond)                                                     \
	(ICC_TAKEN(cond, 0) | ICC_TAKEN(cond, 1) | ICC_TAKEN(cond, 2) |     \
	 ICC_TAKEN(cond, 3) | ICC_TAKEN(cond, 4) | ICC_TAKEN(cond, 5) |     \
	 ICC_TAKEN(cond, 6) | ICC_TAKEN(cond, 7) | ICC_TAKEN(cond, 8) |     \
	 ICC_TAKEN(cond, 9) | ICC_TAKEN(cond, 10) | ICC_TAKEN(cond, 11) |   \
	 ICC_TAKEN(cond, 12) | ICC_TAKEN(cond, 13) | ICC_TAKEN(cond, 14) |  \
	 ICC_TAKEN(cond, 15))
static const uint16_t icc_taken[16] = {
	ICC_MASK(0), ICC_MASK(1), ICC_MASK(2), ICC_MASK(3),
	ICC_MASK(4), ICC_MASK(5), ICC_MASK(6), ICC_MASK(7),
	ICC_MASK(8), ICC_MASK(9), ICC_MASK(10), ICC_MASK(11),
	ICC_MASK(12), ICC_MASK(13), ICC_MASK(14), ICC_MASK(15),
};

static bool icc_cond(unsigned cond, unsigned cc)
{
	return icc_taken[cond & 15] >> (cc & 15) & 1;
}

/* fcc: 0 =, 1 <, 2 >, 3 unordered. Bit f of the mask: taken on fcc f. */
static const uint8_t fcc_taken[16] = {
	0x0, 0xe, 0x6, 0xa, 0x2, 0xc, 0x4, 0x8,   /* n ne lg ul l ug g u   */
	0xf, 0x1, 0x9, 0x5, 0xd, 0x3, 0xb, 0x7,   /* a e ue ge uge le ule o */
};

static unsigned fcc_of(uint64_t fsr, unsigned n)
{
	return n == 0 ? (fsr >> 10) & 3 : (fsr >> (30 + 2 * n)) & 3;
}

/* Inline in sparc_emulate, so that the fire path's emulation is a leaf
 * routine: no register window of its own (a save and a restore, each a
 * helper call in TCG, and a spill trap when the windows are full). */
static inline __attribute__((always_inline)) bool
cond_of(const struct sparc_cti *c, const struct sparc_regs *r)
{
	switch (c->cls) {
	case SPARC_BICC:
		return icc_cond(c->cond, r->ccr & 0xf);
	case SPARC_BPCC:
		return icc_cond(c->cond, c->cc == 2 ? r->ccr >> 4 : r->ccr & 0xf);
	case SPARC_FBFCC:
		return fcc_taken[c->cond] >> fcc_of(r->fsr, 0) & 1;
	case SPARC_FBPFCC:
		return fcc_taken[c->cond] >> fcc_of(r->fsr, c->cc) & 1;
	case SPARC_BPR: {
		int64_t v = (int64_t)reg(r, c->rs1);
		switch (c->cond) {
		case 1: return v == 0;
		case 2: return v <= 0;
		case 3: return v < 0;
		case 5: return v != 0;
		case 6: return v > 0;
		default: return v >= 0;
		}
	}
	default:
		return true;
	}
}

bool sparc_cond(const struct sparc_cti *c, const struct sparc_regs *r)
{
	return cond_of(c, r);
}

int sparc_emulate(const struct sparc_cti *c, struct sparc_regs *r,
		  struct sparc_outcome *o, uint64_t *fault)
{
	uint64_t pc = r->pc, npc = r->npc;

	o->annulled = false;
	o->taken = true;
	if (c->cls == SPARC_CALL) {
		o->target = pc + (uint64_t)c->disp;
		r->r[SPARC_O7] = pc;
		r->pc = npc;
		r->npc = o->target;
		return 0;
	}
	if (c->cls == SPARC_JMPL) {
		o->target = reg(r, c->rs1) +
			    (c->imm ? (uint64_t)(int64_t)c->simm13 : reg(r, c->rs2));
		if (o->target & 3) {
			*fault = o->target;
			return -1;
		}
		if (c->rd)
			r->r[c->rd] = pc;
		r->pc = npc;
		r->npc = o->target;
		return 0;
	}

	o->target = pc + (uint64_t)c->disp;
	o->taken = cond_of(c, r);
	bool always = c->cls != SPARC_BPR && c->cond == 8;
	if (o->taken && !(always && c->annul)) {
		r->pc = npc;
		r->npc = o->target;
	} else if (o->taken) {                   /* ba,a: the slot is annulled */
		o->annulled = true;
		r->pc = o->target;
		r->npc = o->target + 4;
	} else if (c->annul) {                   /* untaken, slot annulled */
		o->annulled = true;
		r->pc = npc + 4;
		r->npc = npc + 8;
	} else {
		r->pc = npc;
		r->npc = npc + 4;
	}
	return 0;
}
