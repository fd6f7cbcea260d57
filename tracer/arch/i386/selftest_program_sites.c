/*
 * selftest_program_sites.c — what a probe program must read at the i386
 * sites of selftest_program_sites.S (tracer_arch.h says how a row is
 * run): at the entry, the registers the caller loaded, eip the site, the
 * stack pointer at the return address with the argument above it, and no
 * return value; at the return, eax and the return value x + 1, the edx
 * the function left, esp at the return address, and no argument.
 */
#include "registers.h"
#include "tracer_arch.h"

extern const char pc_fn[], pc_ret[], tarch_context_back[];

#define TREG(name, number, text) TREG_##name = number,
enum { TARCH_REGISTERS(TREG) };
#undef TREG

#define READ1(op, a) 1, { { WIRE_RPN_##op, a, 0, 0 } }
/* The word at the stack pointer plus off. */
#define STACK(off) 4, { { WIRE_RPN_REG, TREG_ESP, 0, 0 }, { WIRE_RPN_PUSH, 0, 0, off }, \
			{ WIRE_RPN_ADD, 0, 0, 0 }, { WIRE_RPN_LOAD, 4, 0, 0 } }

#define X TARCH_CONTEXT_X
const struct tarch_context_check tarch_context_checks[] = {
	{ "entry: reg ebx", pc_fn, WIRE_EVENT_ENTRY, false, READ1(REG, TREG_EBX), 0x1111 },
	{ "entry: reg esi", pc_fn, WIRE_EVENT_ENTRY, false, READ1(REG, TREG_ESI), 0x2222 },
	{ "entry: reg edi", pc_fn, WIRE_EVENT_ENTRY, false, READ1(REG, TREG_EDI), 0x3333 },
	{ "entry: reg ecx", pc_fn, WIRE_EVENT_ENTRY, false, READ1(REG, TREG_ECX), 0x4444 },
	{ "entry: reg edx", pc_fn, WIRE_EVENT_ENTRY, false, READ1(REG, TREG_EDX), 0x5555 },
	{ "entry: reg eip, the site", pc_fn, WIRE_EVENT_ENTRY, false, READ1(REG, TREG_EIP),
	  (unsigned long)pc_fn },
	{ "entry: the word at reg esp, the return address", pc_fn, WIRE_EVENT_ENTRY,
	  false, STACK(0), (unsigned long)tarch_context_back },
	{ "entry: the word above it, the argument", pc_fn, WIRE_EVENT_ENTRY, false,
	  STACK(4), X },
	{ "entry: arg 0", pc_fn, WIRE_EVENT_ENTRY, false, READ1(ARG, 0), X },
	{ "entry: retval faults", pc_fn, WIRE_EVENT_ENTRY, true, READ1(RETVAL, 0), 0 },
	{ "return: retval", pc_ret, WIRE_EVENT_RETURN, false, READ1(RETVAL, 0), X + 1 },
	{ "return: reg eax", pc_ret, WIRE_EVENT_RETURN, false, READ1(REG, TREG_EAX), X + 1 },
	{ "return: reg edx", pc_ret, WIRE_EVENT_RETURN, false, READ1(REG, TREG_EDX), 0x6666 },
	{ "return: reg ebx", pc_ret, WIRE_EVENT_RETURN, false, READ1(REG, TREG_EBX), 0x1111 },
	{ "return: reg eip, the site", pc_ret, WIRE_EVENT_RETURN, false,
	  READ1(REG, TREG_EIP), (unsigned long)pc_ret },
	{ "return: the word at reg esp, the return address", pc_ret, WIRE_EVENT_RETURN,
	  false, STACK(0), (unsigned long)tarch_context_back },
	{ "return: arg 0 faults", pc_ret, WIRE_EVENT_RETURN, true, READ1(ARG, 0), 0 },
};
const unsigned tarch_ncontext_checks =
	sizeof tarch_context_checks / sizeof tarch_context_checks[0];
const unsigned long tarch_context_answer = X + 1;
