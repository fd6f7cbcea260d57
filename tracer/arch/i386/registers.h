/*
 * registers.h — the i386 registers a probe program reads (`reg NAME`,
 * wire.h's WIRE_RPN_REG): the trapped context's general registers, as they
 * were when the probed instruction was about to run (esp the interrupted
 * stack pointer, eip the probed instruction). The host's compiler reads
 * the names from this table (bench/program/), the guest's fire path the
 * numbers (fire.c).
 *
 * X(NAME, number, "name")
 */
#ifndef I386_REGISTERS_H
#define I386_REGISTERS_H

#define TARCH_REGISTERS(X) \
	X(EAX, 0, "eax") X(ECX, 1, "ecx") X(EDX, 2, "edx") X(EBX, 3, "ebx") \
	X(ESP, 4, "esp") X(EBP, 5, "ebp") X(ESI, 6, "esi") X(EDI, 7, "edi") \
	X(EIP, 8, "eip") X(EFLAGS, 9, "eflags")

#define TARCH_NREGISTERS 10

#endif
