/*
 * registers.h — the sparc64 registers a probe program reads (`reg NAME`,
 * wire.h's WIRE_RPN_REG): the trapped window's %g/%o/%l/%i numbered as an
 * instruction names them (%sp and %fp are %o6 and %i6), then PC, nPC,
 * CCR and %y of the trapped context. The host's compiler reads the names
 * from this table (bench/program/), the guest's fire path the numbers
 * (context.c). %g0 reads 0.
 *
 * X(NAME, number, "name")
 */
#ifndef SPARC64_REGISTERS_H
#define SPARC64_REGISTERS_H

#define TARCH_REGISTERS(X) \
	X(G0, 0, "g0") X(G1, 1, "g1") X(G2, 2, "g2") X(G3, 3, "g3") \
	X(G4, 4, "g4") X(G5, 5, "g5") X(G6, 6, "g6") X(G7, 7, "g7") \
	X(O0, 8, "o0") X(O1, 9, "o1") X(O2, 10, "o2") X(O3, 11, "o3") \
	X(O4, 12, "o4") X(O5, 13, "o5") X(O6, 14, "o6") X(O7, 15, "o7") \
	X(L0, 16, "l0") X(L1, 17, "l1") X(L2, 18, "l2") X(L3, 19, "l3") \
	X(L4, 20, "l4") X(L5, 21, "l5") X(L6, 22, "l6") X(L7, 23, "l7") \
	X(I0, 24, "i0") X(I1, 25, "i1") X(I2, 26, "i2") X(I3, 27, "i3") \
	X(I4, 28, "i4") X(I5, 29, "i5") X(I6, 30, "i6") X(I7, 31, "i7") \
	X(SP, 14, "sp") X(FP, 30, "fp") \
	X(PC, 32, "pc") X(NPC, 33, "npc") X(CCR, 34, "ccr") X(Y, 35, "y")

#define TARCH_NREGISTERS 36

#endif
