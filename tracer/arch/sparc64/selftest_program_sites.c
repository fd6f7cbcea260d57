/*
 * selftest_program_sites.c — what a probe program must read at the
 * sparc64 sites of selftest_program_sites.S (tracer_arch.h says how a row
 * is run): at the entry (pc_fn's save), the caller's %o as the arguments
 * and registers, %o7 the call, %g1, %g0, %y, PC the site and nPC the next
 * word; at the return (pc_ret), %i0, %l5 from the trapped window's save
 * area, CCR, %i7, and the return value the delay slot computes; at
 * pc_odd_ret, whose slot is a load the fire path does not evaluate, the
 * %o0 the function left (tracer_arch.h: the fallback). An argument away
 * from an entry and a return value away from a return fault.
 */
#include "registers.h"
#include "tracer_arch.h"

extern const char pc_fn[], pc_ret[], pc_odd_ret[], tarch_context_callsite[];

#define TREG(name, number, text) TREG_##name = number,
enum { TARCH_REGISTERS(TREG) };
#undef TREG

#define READ1(op, a) 1, { { WIRE_RPN_##op, a, 0, 0 } }
#define X TARCH_CONTEXT_X
#define ENTRY(what, op, a, want) { "entry: " what, pc_fn, WIRE_EVENT_ENTRY, false, \
				   READ1(op, a), want }
#define RETURN(what, op, a, want) { "return: " what, pc_ret, WIRE_EVENT_RETURN, false, \
				    READ1(op, a), want }

const struct tarch_context_check tarch_context_checks[] = {
	ENTRY("reg o0", REG, TREG_O0, X),
	ENTRY("reg o1", REG, TREG_O1, 0x111),
	ENTRY("reg o2", REG, TREG_O2, 0x222),
	ENTRY("reg o5", REG, TREG_O5, 0x333),
	ENTRY("reg o7, the call", REG, TREG_O7, (unsigned long)tarch_context_callsite),
	ENTRY("reg g1", REG, TREG_G1, 0x444),
	ENTRY("reg g0", REG, TREG_G0, 0),
	ENTRY("reg y", REG, TREG_Y, 0x55),
	ENTRY("reg pc, the site", REG, TREG_PC, (unsigned long)pc_fn),
	ENTRY("reg npc", REG, TREG_NPC, (unsigned long)pc_fn + 4),
	ENTRY("arg 0", ARG, 0, X),
	ENTRY("arg 1", ARG, 1, 0x111),
	ENTRY("arg 5", ARG, 5, 0x333),
	{ "entry: retval faults", pc_fn, WIRE_EVENT_ENTRY, true, READ1(RETVAL, 0), 0 },
	RETURN("reg i0", REG, TREG_I0, X),
	RETURN("reg l5, from the save area", REG, TREG_L5, 0x777),
	RETURN("reg ccr", REG, TREG_CCR, 0x99),
	RETURN("reg i7, the call", REG, TREG_I7, (unsigned long)tarch_context_callsite),
	RETURN("reg pc, the site", REG, TREG_PC, (unsigned long)pc_ret),
	RETURN("retval, computed from restore %i0, 1, %o0", RETVAL, 0, X + 1),
	{ "return: arg 0 faults", pc_ret, WIRE_EVENT_RETURN, true, READ1(ARG, 0), 0 },
	{ "return: retval past a slot not evaluated, the %o0 left", pc_odd_ret,
	  WIRE_EVENT_RETURN, false, READ1(RETVAL, 0), X },
};
const unsigned tarch_ncontext_checks =
	sizeof tarch_context_checks / sizeof tarch_context_checks[0];
const unsigned long tarch_context_answer = X + 1 + 1000;
