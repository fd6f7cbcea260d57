/*
 * check.h — the words of a sparc64 CHECK record (wire.h), in order: the
 * state before the emulation (SPARC64_CHECK_REGS order), the state after,
 * then the caller's window — %l0..%l7, %i0..%i7 of the window a `return`
 * restores to, as it was before (zeros for every other site).
 *
 * "After" is what the trap's way back will resume with, read back from
 * where the fire path left it: the trap frame and the trapped window's save
 * area, with TPC/TNPC as pc/npc. Where the resume changes windows:
 *   save    the callee's window that trap_entry's own `save` opened: its
 *           %i are the trapped %o and its %sp is the operand sum; its %l and
 *           its other %o are whatever trap_entry left there (architecturally
 *           undefined after a save), recorded as 0 and not compared;
 *   return  the caller's window, as the extra `restore` will fill it: its
 *           %o are the trapped %i, its %l/%i the caller words above.
 * The host (bench/check/sparc64.py) runs the original instruction from the
 * "before" state (and the caller's window) in python3-unicorn and compares
 * with "after", field by field.
 */
#ifndef SPARC64_CHECK_H
#define SPARC64_CHECK_H

/* X(name, index, meaning) */
#define SPARC64_CHECK_REGS(X) \
	X(PC, 0, "pc") X(NPC, 1, "npc") X(CCR, 2, "ccr") X(Y, 3, "y") \
	X(FSR, 4, "fsr") \
	X(G1, 5, "g1") X(G2, 6, "g2") X(G3, 7, "g3") X(G4, 8, "g4") \
	X(G5, 9, "g5") X(G6, 10, "g6") X(G7, 11, "g7") \
	X(O0, 12, "o0") X(O1, 13, "o1") X(O2, 14, "o2") X(O3, 15, "o3") \
	X(O4, 16, "o4") X(O5, 17, "o5") X(O6, 18, "o6") X(O7, 19, "o7") \
	X(L0, 20, "l0") X(L1, 21, "l1") X(L2, 22, "l2") X(L3, 23, "l3") \
	X(L4, 24, "l4") X(L5, 25, "l5") X(L6, 26, "l6") X(L7, 27, "l7") \
	X(I0, 28, "i0") X(I1, 29, "i1") X(I2, 30, "i2") X(I3, 31, "i3") \
	X(I4, 32, "i4") X(I5, 33, "i5") X(I6, 34, "i6") X(I7, 35, "i7")

/* Register r (1..31, as an instruction names it) is word SPARC64_CHECK_R0 + r. */
#define SPARC64_CHECK_R0      4
#define SPARC64_CHECK_NREGS   36
#define SPARC64_CHECK_CALLER  16
#define SPARC64_CHECK_WORDS   88    /* 2 * NREGS + CALLER */

/* The table as a C enum: SPARC64_CHECK_PC .. SPARC64_CHECK_I7 index a
 * state (the before or the after half of a record). */
#define SPARC64_CHECK_ENUM(name, index, meaning) SPARC64_CHECK_##name = index,
enum sparc64_check_reg { SPARC64_CHECK_REGS(SPARC64_CHECK_ENUM) };
#undef SPARC64_CHECK_ENUM

_Static_assert(SPARC64_CHECK_I7 + 1 == SPARC64_CHECK_NREGS,
	       "check.h: SPARC64_CHECK_REGS numbers 0..NREGS-1");
_Static_assert(SPARC64_CHECK_G1 == SPARC64_CHECK_R0 + 1 &&
	       SPARC64_CHECK_I7 == SPARC64_CHECK_R0 + 31,
	       "check.h: register r is word SPARC64_CHECK_R0 + r");
_Static_assert(SPARC64_CHECK_WORDS == 2 * SPARC64_CHECK_NREGS + SPARC64_CHECK_CALLER,
	       "check.h: a record is before, after and the caller's window");

/* A watched access's CHECK record (watch.c), told apart by its probe being
 * a watch: the instruction, its effective address, rs1 and rs2 (the
 * register, even under an immediate), rd and the accessed memory before and
 * after, and %asi. The host runs the instruction from "before" in unicorn
 * and compares rd and the memory with "after".
 * X(name, index, meaning) */
#define SPARC64_WCHECK(X) \
	X(INSN, 0, "the load/store word") X(EA, 1, "its effective address") \
	X(RS1, 2, "rs1 before") X(RS2, 3, "rs2 before") \
	X(RD_BEFORE, 4, "rd before") X(MEM_BEFORE, 5, "memory before, the access's size") \
	X(RD_AFTER, 6, "rd after") X(MEM_AFTER, 7, "memory after") X(ASI, 8, "%asi")
#define SPARC64_WCHECK_ENUM(name, index, meaning) SPARC64_WCHECK_##name = index,
enum sparc64_wcheck_word { SPARC64_WCHECK(SPARC64_WCHECK_ENUM) SPARC64_WCHECK_WORDS };
#undef SPARC64_WCHECK_ENUM

/* An out-of-line site's CHECK record (ool_check.c), told apart by its
 * length: the state before the slot's copy ran and the state after (both
 * SPARC64_CHECK_REGS, as above: "after" with PC/nPC = the resume, site + 4
 * and site + 8), then the memory a load or store touches — its effective
 * address as the CPU computes it (rs1 + simm13 or rs2), whether the
 * doublewords from that address rounded down to 8 were read (1) or lie
 * in no mapped page (2; 0: the word is no load or store), and those
 * SPARC64_CHECK_OOL_MEM_WORDS doublewords before and after.
 * X(name, index, meaning) */
#define SPARC64_CHECK_OOL(X) \
	X(OOL_MEM,        72, "a load/store's effective address") \
	X(OOL_MEM_STATE,  73, "0 no memory operand, 1 its doublewords read, 2 unmapped: not read") \
	X(OOL_MEM_BEFORE, 74, "the doublewords from the address rounded down to 8, before") \
	X(OOL_MEM_AFTER,  76, "the same doublewords after")

#define SPARC64_CHECK_OOL_MEM_WORDS 2
#define SPARC64_CHECK_OOL_WORDS     78

#define SPARC64_CHECK_OOL_ENUM(name, index, meaning) SPARC64_CHECK_##name = index,
enum sparc64_check_ool { SPARC64_CHECK_OOL(SPARC64_CHECK_OOL_ENUM) };
#undef SPARC64_CHECK_OOL_ENUM

_Static_assert(SPARC64_CHECK_OOL_MEM == 2 * SPARC64_CHECK_NREGS &&
	       SPARC64_CHECK_OOL_MEM_BEFORE == SPARC64_CHECK_OOL_MEM_STATE + 1 &&
	       SPARC64_CHECK_OOL_MEM_AFTER == SPARC64_CHECK_OOL_MEM_BEFORE + SPARC64_CHECK_OOL_MEM_WORDS &&
	       SPARC64_CHECK_OOL_WORDS == SPARC64_CHECK_OOL_MEM_AFTER + SPARC64_CHECK_OOL_MEM_WORDS &&
	       SPARC64_CHECK_OOL_WORDS != SPARC64_CHECK_WORDS,
	       "check.h: an out-of-line record is both states and the memory, "
	       "and not as long as an emulation's");

struct trapframe;
struct sparc_regs;
/* One state's SPARC64_CHECK_REGS words from the trapped registers r
 * (sparc64_load_regs with the window) and the frame's %y, with %fsr read
 * now (check.c). */
void sparc64_check_state(const struct trapframe *tf, const struct sparc_regs *r,
			 unsigned long *w);

#endif
