/*
 * emulate.h — IA-32 probe sites: decode once, emulate by kind.
 *
 * Pure functions over a register struct and a memory accessor, with no
 * kernel dependency, so the very same code runs in the guest's trap
 * handler and in host tests that compare it, state by state, against an
 * independent CPU model (python3-unicorn).
 *
 * i386_decode() reads the bytes at a candidate site and either classifies
 * them (kind, length, immediates, the original bytes) or refuses with a
 * reason a person can act on. i386_emulate() applies a decoded site to a
 * state: the architectural effect of executing the original instruction(s)
 * — registers, EIP, and the stack words written — exactly as the CPU
 * would, or a fault with the address that would have faulted, leaving the
 * state untouched. OOL is no form of i386_decode's: fbt.c marks a site so
 * when its instruction is not emulated but runs the same from a copy
 * (insn.c); i386_emulate refuses it.
 */
#ifndef TRACER_I386_EMULATE_H
#define TRACER_I386_EMULATE_H

#include <stddef.h>
#include <stdint.h>
#include "insn.h"               /* struct i386_operand */

/* X(name, what it emulates) — the emulated forms. */
#define I386_SITE_KINDS(X) \
	X(PUSH_EBP,     "push %ebp") \
	X(PUSH_EBP_MOV, "push %ebp; mov %esp,%ebp (fused prologue)") \
	X(POP_EBP,      "pop %ebp") \
	X(LEAVE,        "leave") \
	X(RET,          "ret") \
	X(RET_IMM,      "ret $imm16") \
	X(ENTER,        "enter $imm16, $0") \
	X(NOP,          "nop") \
	X(JMP_REL,      "jmp rel8/rel32") \
	X(JCC,          "jcc rel8/rel32") \
	X(CALL_REL,     "call rel32") \
	X(CALL_IND,     "call *r/m32 (through a register or memory)") \
	X(JMP_IND,      "jmp *r/m32 (through a register or memory)") \
	X(OOL,          "run out of line (a copy in the probe's slot, ool.c)")

#define I386_KIND_ENUM(name, what) I386_##name,
enum i386_site_kind { I386_SITE_KINDS(I386_KIND_ENUM) I386_SITE_KIND_COUNT };
#undef I386_KIND_ENUM

struct i386_site {
	uint8_t  kind;        /* enum i386_site_kind */
	uint8_t  len;         /* bytes of original code emulated */
	uint16_t imm16;       /* RET_IMM: bytes popped; ENTER: frame size;
			       * JCC: the condition (the opcode's low nibble) */
	uint8_t  orig[4];     /* the original bytes, len of them (4 at most) */
	int32_t  rel;         /* JMP_REL, JCC, CALL_REL: target - (site + len) */
	struct i386_operand operand;   /* CALL_IND, JMP_IND: where the target is */
};

struct i386_regs {
	uint32_t eax, ecx, edx, ebx, esp, ebp, esi, edi;
	uint32_t eip, eflags;
};

/* 32-bit accesses; return 0, or -1 if the access would fault. read32
 * and write32 are the stack's; load32 is a load through an instruction's
 * memory operand (an indirect call's or jmp's target: a table anywhere),
 * which the guest makes fault-safely. */
struct i386_mem {
	int (*read32)(void *ctx, uint32_t addr, uint32_t *value);
	int (*write32)(void *ctx, uint32_t addr, uint32_t value);
	int (*load32)(void *ctx, uint32_t addr, uint32_t *value);
	void *ctx;
};

/* 0 and *site filled, or -1 with *why set (a static string). avail is how
 * many bytes at code may be read. */
int i386_decode(const uint8_t *code, size_t avail, struct i386_site *site,
		const char **why);

/* 0 with *r updated and stores done through m; or -1 with *fault_addr set
 * and nothing changed. */
int i386_emulate(const struct i386_site *site, struct i386_regs *r,
		 const struct i386_mem *m, uint32_t *fault_addr);

extern const char *const i386_site_kind_names[I386_SITE_KIND_COUNT];

/* The forms whose target is a register or a word loaded through their
 * operand: check mode records them as it records an out-of-line site. */
static inline int i386_indirect(unsigned kind)
{
	return kind == I386_CALL_IND || kind == I386_JMP_IND;
}

#endif
