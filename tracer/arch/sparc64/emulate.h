/*
 * emulate.h — SPARC V9 probe sites: decode a control-transfer instruction
 * once, emulate it by class.
 *
 * Pure functions over a register struct, with no kernel dependency, so the
 * very same code runs in the guest's ILLTRAP handler and in host tests that
 * compare it, state by state, against an independent CPU model
 * (python3-unicorn's SPARC64 mode).
 *
 * A CTI's whole architectural effect is the pair (PC, nPC) it leaves and,
 * for CALL and JMPL, the one register it writes. sparc_emulate() computes
 * exactly that from the trapped state (V9 manual, "Control-Transfer
 * Instructions"): with the delay slot at nPC,
 *   taken              → (nPC, target)          the slot executes first
 *   `ba,a` / `fba,a`   → (target, target + 4)   the slot is annulled
 *   untaken            → (nPC, nPC + 4)
 *   untaken, annulled  → (nPC + 4, nPC + 8)     `bn,a` included
 * and the handler resumes with `retry` at that PC/nPC. Conditions come from
 * CCR (icc for Bicc, icc or xcc for BPcc), FSR's fcc0..fcc3, or a register
 * compared with zero (BPr).
 */
#ifndef TRACER_SPARC64_EMULATE_H
#define TRACER_SPARC64_EMULATE_H

#include <stdbool.h>
#include <stdint.h>

/* X(name, what it emulates) — the emulated classes. */
#define SPARC_CTI_CLASSES(X) \
	X(CALL,   "call disp30") \
	X(JMPL,   "jmpl (ret, retl, indirect call or jump)") \
	X(BICC,   "Bicc (icc, disp22)") \
	X(BPCC,   "BPcc (icc or xcc, disp19)") \
	X(BPR,    "BPr (register against zero, disp16)") \
	X(FBFCC,  "FBfcc (fcc0, disp22)") \
	X(FBPFCC, "FBPfcc (fcc0..fcc3, disp19)")

#define SPARC_CLASS_ENUM(name, what) SPARC_##name,
enum sparc_cti_class { SPARC_CTI_CLASSES(SPARC_CLASS_ENUM) SPARC_CTI_CLASS_COUNT };
#undef SPARC_CLASS_ENUM

/* Register numbers as in an instruction: %g0-7 0-7, %o0-7 8-15,
 * %l0-7 16-23, %i0-7 24-31. */
#define SPARC_O7 15
#define SPARC_I7 31

struct sparc_cti {
	uint32_t word;        /* the original instruction */
	uint8_t  cls;         /* enum sparc_cti_class */
	uint8_t  cond;        /* branches: cond (4 bits); BPr: rcond (3 bits) */
	uint8_t  annul;       /* the a bit */
	uint8_t  cc;          /* BPcc: 0 icc, 2 xcc; FB(P)fcc: fcc number */
	uint8_t  rs1, rs2, rd;/* JMPL (rs1 also BPr's register) */
	uint8_t  imm;         /* JMPL: i bit, simm13 instead of rs2 */
	int32_t  simm13;
	int64_t  disp;        /* pc-relative classes: byte displacement */
};

struct sparc_regs {
	uint64_t pc, npc;
	uint64_t r[32];       /* r[0] (%g0) always reads as 0 */
	uint8_t  ccr;         /* xcc << 4 | icc; each N Z V C from bit 3 down */
	uint64_t fsr;         /* fcc0 in bits 11:10, fcc1..3 in 33:32, 35:34, 37:36 */
};

/* What happened, for the branch provider's record. */
struct sparc_outcome {
	uint64_t target;      /* where the CTI transfers to if taken */
	bool     taken;
	bool     annulled;    /* the delay slot does not execute */
};

/* 0 and *c filled, or -1 with *why set (a static string). */
int sparc_decode(uint32_t word, struct sparc_cti *c, const char **why);

/* Any control transfer at all (also those decode refuses: RETURN, Tcc,
 * DONE/RETRY): a probe never sits in the delay slot of one. */
bool sparc_is_cti(uint32_t word);

/* 0 with *r updated (pc, npc, and %o7 or rd) and *o filled; or -1 with
 * *fault set to a misaligned JMPL target, and nothing changed. */
int sparc_emulate(const struct sparc_cti *c, struct sparc_regs *r,
		  struct sparc_outcome *o, uint64_t *fault);

/* The condition of a branch class on a state (CALL and JMPL: true). */
bool sparc_cond(const struct sparc_cti *c, const struct sparc_regs *r);

extern const char *const sparc_cti_class_names[SPARC_CTI_CLASS_COUNT];

#endif
