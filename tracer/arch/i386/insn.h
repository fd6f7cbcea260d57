/*
 * insn.h — the IA-32 length decoder behind the out-of-line path: how long
 * the instruction at a site is, and whether a copy of it can run at
 * another address with the same effect (insn.c says which cannot, and
 * why).
 *
 * Pure C with no kernel dependency, like emulate.c: the host compiles it
 * and compares every length with capstone's over the whole kernel image
 * (tests/test_ool.py).
 */
#ifndef TRACER_I386_INSN_H
#define TRACER_I386_INSN_H

#include <stddef.h>
#include <stdint.h>

#define I386_INSN_MAX 15       /* the architectural limit */
/* An out-of-line copy: the instruction, or an indirect call rewritten
 * (i386_insn_indirect_call: a push, and the jmp 3 bytes longer at most). */
#define I386_OOL_COPY_MAX (I386_INSN_MAX + 5 + 3)

/* The length of the instruction at code (at most avail bytes readable),
 * 1..15, if a copy of it runs the same anywhere; else 0 with *why set to
 * a static string: an instruction that reads or is relative to EIP, one
 * that traps by design, one whose effect depends on the instruction after
 * it, a privileged or segment-loading one, or bytes it cannot decode. */
unsigned i386_insn_relocatable(const uint8_t *code, size_t avail, const char **why);

/* An indirect near call (call *r/m32), which no copy can run as it is
 * (it would push the slot's address): rewritten into out as `pushl $ret;
 * jmp *r/m32`, ret being the address after the original, and an operand
 * based on ESP read 4 bytes higher (past the word the push stored), so
 * the rewritten pair does what the call does. The bytes written (at most
 * I386_OOL_COPY_MAX), or 0: not an indirect near call (*why untouched),
 * or, with *why, a 16-bit one or `call *%esp`. */
unsigned i386_insn_indirect_call(const uint8_t *code, size_t avail, uint32_t ret,
				 uint8_t *out, const char **why);

/* Its length alone, whatever it is (0 if undecodable or cut off): what
 * the host compares with capstone, and what `insn:` boundaries use. */
unsigned i386_insn_length(const uint8_t *code, size_t avail);

/*
 * Check mode (ool_check.c) records the memory an out-of-line instruction
 * reads or writes: its one explicit memory operand, from ModRM/SIB or a
 * moffs32, whose address it computes from the registers before. mem 0:
 * none; base and index are register numbers in ModRM order (eax ecx edx
 * ebx esp ebp esi edi), -1 if absent.
 */
struct i386_operand {
	uint8_t mem;
	int8_t  base, index;
	uint8_t scale;          /* index << scale */
	int32_t disp;
};

/* The operand of a relocatable instruction; -1 with *why set if check
 * mode cannot record what it touches (string instructions, implicit
 * operands, pusha/popa, pushf, indirect jmp, fs/gs operands, more than 16
 * bytes of memory, enter with a nesting level), or it is not relocatable. */
int i386_insn_operand(const uint8_t *code, size_t avail,
		      struct i386_operand *o, const char **why);

/* The operand's effective address, regs in ModRM order. */
uint32_t i386_operand_address(const struct i386_operand *o, const uint32_t regs[8]);

/* The operand a ModRM byte names (m[0], then its SIB and displacement,
 * which must be readable): memory (mem 1, base, index, scale, disp), or
 * for mod 3 a register (mem 0, base its number). Check mode's operands
 * and the emulated indirect call and jmp (emulate.c) read it here. */
void i386_modrm_operand(const uint8_t *m, struct i386_operand *o);

#endif
