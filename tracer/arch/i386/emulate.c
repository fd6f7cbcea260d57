/*
 * emulate.c — decode and emulate the IA-32 instructions probes displace.
 *
 * The forms are the ones a frame-pointer prologue and epilogue are made of
 * (and nop): push %ebp (0x55), the fused prologue push %ebp; mov %esp,%ebp
 * (0x55 0x89 0xe5, or 0x55 0x8b 0xec, the same move encoded the other
 * way), pop %ebp (0x5d), leave (0xc9), ret (0xc3), ret $imm16 (0xc2 iw),
 * enter $imm16, $0 (0xc8 iw 0x00), nop (0x90); and the instructions that
 * read EIP, which no copy can run elsewhere (ool.c): jmp rel8/rel32 (0xeb,
 * 0xe9), jcc rel8/rel32 (0x70-0x7f, 0x0f 0x80-0x8f; the only form that
 * reads EFLAGS, none writes them) and call rel32 (0xe8, which pushes
 * site + 5 as push %ebp pushes, one deferred store below the old ESP).
 * loop/jcxz and the far forms are left out: compilers do not emit them.
 * And the indirect near call and jmp (FF /2, FF /4: `call *%eax`, `call
 * *8(%ebx)`, a switch's `jmp *table(,%eax,4)`): the target is a register
 * or a word loaded through the ModRM/SIB operand (insn.c decodes it), its
 * address computed from the registers before (ESP too: `call *(%esp)`
 * reads the word the call is about to cover); a call pushes site + len.
 * Segment overrides of the flat segments (es cs ss ds, 3e also CET's
 * notrack) change nothing and are taken; fs/gs (a per-CPU base), 66 and
 * 67 are refused here, and such a site runs out of line (ool.c).
 *
 * Refused although decodable: enter with a nesting level (its frame-pointer
 * copying is not emulated) and ret imm16 >= 0x8000, which QEMU's CPU
 * executes with a sign-extended immediate and the SDM with a zero-extended
 * one, so no emulation could match both.
 *
 * Each emulation does every memory read first and every write last, and
 * commits registers only after the writes succeeded: a fault (the stack
 * overflowing into an unmapped page, say) leaves the state as it was, and
 * reports the address the CPU would have reported in CR2.
 */
#include "emulate.h"

#include <stdbool.h>

#define KIND_NAME(name, what) what,
const char *const i386_site_kind_names[I386_SITE_KIND_COUNT] = {
	I386_SITE_KINDS(KIND_NAME)
};

static void fill(struct i386_site *s, enum i386_site_kind kind, const uint8_t *code,
		 uint8_t len, uint16_t imm16)
{
	s->kind = (uint8_t)kind;
	s->len = len;
	s->imm16 = imm16;
	s->rel = 0;
	s->operand = (struct i386_operand){ .base = -1, .index = -1 };
	for (unsigned i = 0; i < sizeof s->orig; i++)
		s->orig[i] = i < len ? code[i] : 0;
}

/* The forms that are one opcode byte and nothing else. */
static const struct { uint8_t opcode, kind; } one_byte_forms[] = {
	{ 0x5d, I386_POP_EBP }, { 0xc9, I386_LEAVE },
	{ 0xc3, I386_RET },     { 0x90, I386_NOP },
};

/* call or jmp through r/m32 (FF /2, FF /4), after the segment overrides
 * that change nothing in a flat model; anything else that starts so is
 * no emulated form, and a prefix that changes the call or jmp is refused
 * with its reason. */
static int decode_indirect(const uint8_t *code, size_t avail, struct i386_site *s,
			   const char **why)
{
	bool fs_gs = false, size16 = false;
	size_t n = 0;
	for (; n < avail && n < I386_INSN_MAX; n++) {
		uint8_t b = code[n];
		if (b == 0x64 || b == 0x65)
			fs_gs = true;
		else if (b == 0x66 || b == 0x67)
			size16 = true;
		else if (!(b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e))
			break;
	}
	if (n + 1 >= avail) {
		*why = "the instruction is cut off: fewer bytes readable than it needs";
		return -1;
	}
	unsigned reg = (code[n + 1] >> 3) & 7;
	if (code[n] != 0xff || (reg != 2 && reg != 4)) {
		*why = "the instruction is not one of the emulated forms (of the FF "
		       "group, call *r/m32 and jmp *r/m32 are)";
		return -1;
	}
	if (fs_gs) {
		*why = "an indirect call or jmp with an fs/gs segment override: its "
		       "per-CPU base is not emulated";
		return -1;
	}
	if (size16) {
		*why = "an indirect call or jmp with an operand- or address-size "
		       "prefix (66/67): a 16-bit target or operand is not emulated";
		return -1;
	}
	unsigned len = i386_insn_length(code, avail);
	if (!len) {
		*why = "the instruction is cut off: fewer bytes readable than it needs";
		return -1;
	}
	fill(s, reg == 2 ? I386_CALL_IND : I386_JMP_IND, code, (uint8_t)len, 0);
	i386_modrm_operand(code + n + 1, &s->operand);
	return 0;
}

int i386_decode(const uint8_t *code, size_t avail, struct i386_site *s,
		const char **why)
{
	if (avail < 1) {
		*why = "no bytes to decode";
		return -1;
	}
	for (unsigned i = 0; i < sizeof one_byte_forms / sizeof one_byte_forms[0]; i++) {
		if (code[0] == one_byte_forms[i].opcode) {
			fill(s, one_byte_forms[i].kind, code, 1, 0);
			return 0;
		}
	}
	if (code[0] == 0xeb || (code[0] >= 0x70 && code[0] <= 0x7f)) {
		if (avail < 2)
			goto cut;
		fill(s, code[0] == 0xeb ? I386_JMP_REL : I386_JCC, code, 2, code[0] & 15);
		s->rel = (int8_t)code[1];
		return 0;
	}
	if (code[0] == 0xe9 || code[0] == 0xe8 ||
	    (code[0] == 0x0f && avail >= 2 && code[1] >= 0x80 && code[1] <= 0x8f)) {
		unsigned len = code[0] == 0x0f ? 6 : 5;
		if (avail < len)
			goto cut;
		fill(s, code[0] == 0xe9 ? I386_JMP_REL : code[0] == 0xe8 ? I386_CALL_REL
			: I386_JCC, code, (uint8_t)len, code[0] == 0x0f ? code[1] & 15 : 0);
		s->rel = (int32_t)((uint32_t)code[len - 4] | (uint32_t)code[len - 3] << 8 |
				   (uint32_t)code[len - 2] << 16 | (uint32_t)code[len - 1] << 24);
		return 0;
	}
	switch (code[0]) {
	case 0x55:
		if (avail >= 3 && ((code[1] == 0x89 && code[2] == 0xe5) ||
				   (code[1] == 0x8b && code[2] == 0xec)))
			fill(s, I386_PUSH_EBP_MOV, code, 3, 0);
		else
			fill(s, I386_PUSH_EBP, code, 1, 0);
		return 0;
	case 0xc2:
		if (avail < 3)
			break;
		if (code[2] & 0x80) {
			/* QEMU sign-extends this immediate where the SDM
			 * zero-extends it; no compiler pops 32 KiB. */
			*why = "ret imm16 of 32 KiB or more is not emulated: QEMU and "
			       "the SDM disagree on it";
			return -1;
		}
		fill(s, I386_RET_IMM, code, 3, (uint16_t)(code[1] | code[2] << 8));
		return 0;
	case 0xc8:
		if (avail < 4)
			break;
		if (code[3] != 0) {
			*why = "enter with a nesting level above 0 is not emulated";
			return -1;
		}
		fill(s, I386_ENTER, code, 4, (uint16_t)(code[1] | code[2] << 8));
		return 0;
	case 0xff:
	case 0x26: case 0x2e: case 0x36: case 0x3e:
	case 0x64: case 0x65: case 0x66: case 0x67:
		return decode_indirect(code, avail, s, why);
	case 0xcc:
		*why = "the site already holds int3 (an armed probe or a breakpoint)";
		return -1;
	case 0xf0:
		*why = "the site starts with a LOCK prefix (an armed #UD probe or a "
		       "locked instruction)";
		return -1;
	default:
		*why = "the instruction is not one of the emulated forms "
		       "(push/pop %ebp, mov %esp,%ebp after push, leave, ret, "
		       "ret imm16, enter imm16,0, nop, jmp/jcc/call rel, "
		       "call/jmp *r/m32)";
		return -1;
	}
cut:
	*why = "the instruction is cut off: fewer bytes readable than it needs";
	return -1;
}

/* Whether condition cc (a jcc opcode's low nibble) holds under eflags:
 * pairs of a test and its negation, as the SDM's table lists them. */
static bool condition(unsigned cc, uint32_t eflags)
{
	bool cf = eflags & 0x001, zf = eflags & 0x040, sf = eflags & 0x080,
	     of = eflags & 0x800, pf = eflags & 0x004, t;
	switch (cc >> 1) {
	case 0: t = of; break;                          /* o */
	case 1: t = cf; break;                          /* b */
	case 2: t = zf; break;                          /* e */
	case 3: t = cf || zf; break;                    /* be */
	case 4: t = sf; break;                          /* s */
	case 5: t = pf; break;                          /* p */
	case 6: t = sf != of; break;                    /* l */
	default: t = zf || sf != of; break;             /* le */
	}
	return (cc & 1) ? !t : t;
}

int i386_emulate(const struct i386_site *s, struct i386_regs *r,
		 const struct i386_mem *m, uint32_t *fault_addr)
{
	uint32_t esp = r->esp, word;

	switch ((enum i386_site_kind)s->kind) {
	case I386_PUSH_EBP:
	case I386_PUSH_EBP_MOV:
	case I386_ENTER:
		if (m->write32(m->ctx, esp - 4, r->ebp)) {
			*fault_addr = esp - 4;
			return -1;
		}
		esp -= 4;
		if (s->kind != I386_PUSH_EBP)
			r->ebp = esp;
		if (s->kind == I386_ENTER)
			esp -= s->imm16;
		r->esp = esp;
		r->eip += s->len;
		return 0;
	case I386_POP_EBP:
		if (m->read32(m->ctx, esp, &word)) {
			*fault_addr = esp;
			return -1;
		}
		r->ebp = word;
		r->esp = esp + 4;
		r->eip += s->len;
		return 0;
	case I386_LEAVE:
		if (m->read32(m->ctx, r->ebp, &word)) {
			*fault_addr = r->ebp;
			return -1;
		}
		r->esp = r->ebp + 4;
		r->ebp = word;
		r->eip += s->len;
		return 0;
	case I386_RET:
	case I386_RET_IMM:
		if (m->read32(m->ctx, esp, &word)) {
			*fault_addr = esp;
			return -1;
		}
		r->eip = word;
		r->esp = esp + 4 + s->imm16;
		return 0;
	case I386_NOP:
		r->eip += s->len;
		return 0;
	case I386_JMP_REL:
		r->eip += s->len + (uint32_t)s->rel;
		return 0;
	case I386_JCC:
		r->eip += s->len + (condition(s->imm16, r->eflags) ? (uint32_t)s->rel : 0);
		return 0;
	case I386_CALL_REL:
		if (m->write32(m->ctx, esp - 4, r->eip + s->len)) {
			*fault_addr = esp - 4;
			return -1;
		}
		r->esp = esp - 4;
		r->eip += s->len + (uint32_t)s->rel;
		return 0;
	case I386_CALL_IND:
	case I386_JMP_IND: {
		const struct i386_operand *o = &s->operand;
		const uint32_t regs[8] = { r->eax, r->ecx, r->edx, r->ebx,
					   esp, r->ebp, r->esi, r->edi };
		uint32_t target = regs[o->base & 7];
		if (o->mem) {
			uint32_t at = i386_operand_address(o, regs);
			if (m->load32(m->ctx, at, &target)) {
				*fault_addr = at;
				return -1;
			}
		}
		if (s->kind == I386_CALL_IND) {
			uint32_t back = r->eip + s->len;        /* past the call */
			if (m->write32(m->ctx, esp - 4, back)) {
				*fault_addr = esp - 4;
				return -1;
			}
			r->esp = esp - 4;
		}
		r->eip = target;
		return 0;
	}
	case I386_OOL:                  /* run from its slot, never emulated */
	case I386_SITE_KIND_COUNT:
		break;
	}
	*fault_addr = r->eip;
	return -1;
}
