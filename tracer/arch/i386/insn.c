/*
 * insn.c — IA-32 instruction lengths, and which instructions may run out
 * of line (a copy in a tracer-owned slot followed by a jmp back, ool.c).
 *
 * The decoder walks legacy prefixes, the one-, two- (0F) and three-byte
 * (0F 38, 0F 3A) opcode maps, ModRM, SIB, displacement and immediate, in
 * 32-bit protected mode. Operand-size 66 shortens a 32-bit immediate to
 * 16 bits; an address-size 67 prefix (16-bit ModRM) is not decoded: no
 * compiler emits it in 32-bit code, and refusing it costs nothing.
 *
 * IA-32 has no EIP-relative operand, so a copy of an instruction runs the
 * same anywhere unless it is one of these, refused with their reason:
 *   - relative jumps, jcc, loop/jcxz and calls (their target is relative
 *     to where they run), and indirect or far calls (the return address
 *     they push would be the slot's): emulate.c emulates jmp, jcc and
 *     call rel, and the indirect near call and jmp, and those never come
 *     here; but for one emulate.c refuses (an fs/gs override, a 16-bit
 *     form), an indirect near call runs out of line rewritten
 *     (i386_insn_indirect_call: push the return address, then jmp
 *     through the same operand);
 *   - instructions that trap by design (int3, int n, into, bound, ud0/1/2,
 *     icebp): their handlers read the trapping EIP, which would be the
 *     slot's;
 *   - instructions whose effect reaches into the next one: sti, mov/pop
 *     to SS and lss (the one-instruction interrupt shadow would cover the
 *     jmp back, not the instruction after the site), popf and iret (a TF
 *     they set traps one instruction early, after the jmp back);
 *   - privileged and system instructions (cli, hlt, lgdt/lidt and their
 *     group, mov to/from CR/DR, wrmsr/rdmsr, invd/wbinvd, clts, sysenter
 *     and the rest, rsm): the kernel's own trap, interrupt and idle
 *     machinery, where a probe has no business (hlt's wake-up EIP would be
 *     the slot's); segment loads (les/lds/lfs/lgs, mov to a segment
 *     register, pop of one, far jmp and ret) for the same reason; and port
 *     I/O (in/out/ins/outs): an I/O watch's #DB would name the slot.
 * Anything else — ALU, moves, loads and stores through any addressing
 * mode, string instructions, x87/MMX/SSE, locked read-modify-writes,
 * indirect jmp (whose target is absolute; emulate.c takes all but the
 * fs/gs and 16-bit ones), cpuid, rdtsc — runs the same from the slot.
 */
#include "insn.h"

#include <stdbool.h>

enum { IMM_NONE, IMM8, IMM16, IMMZ, IMM_ENTER, IMM_FAR, IMM_MOFFS };

struct shape {
	unsigned len;
	const char *refused;       /* why it cannot run out of line, or 0 */
	/* What check mode's operand decoding needs (i386_insn_operand): */
	int      modrm_at;         /* offset of the ModRM byte, -1 if none */
	unsigned map;              /* 1 one-byte, 2 after 0F, 3 after 0F 38/3A */
	uint8_t  op;               /* the opcode byte in its map */
	bool     moffs;            /* mov to/from moffs32: A0..A3 */
	bool     fs_gs;            /* an fs or gs segment override */
};

static const char REL[] = "a relative jump, call or loop reads EIP (run out of "
			  "line it would go elsewhere); loop and jcxz are not emulated";
static const char CALL[] = "a call pushes its own address + length; out of line "
			   "that would be the slot's";
static const char TRAPS[] = "it traps by design and its handler reads the "
			    "trapping EIP (out of line: the slot's)";
static const char SHADOW[] = "its effect reaches into the next instruction "
			     "(interrupt shadow or TF), which out of line is the jmp back";
static const char SYSTEM[] = "a privileged or system instruction: the kernel's "
			     "own trap, interrupt and idle machinery";
static const char SEGMENT[] = "it loads a segment register (or jumps far)";
static const char PORTIO[] = "port I/O: an I/O watch's #DB would name the slot";
static const char ADDR16[] = "an address-size (67) prefix: 16-bit addressing "
			     "is not decoded";
static const char UNKNOWN[] = "an opcode this decoder does not know";

/* Bytes of ModRM, SIB and displacement at c (c[0] the ModRM byte); 0 if
 * cut off. */
static unsigned modrm_len(const uint8_t *c, size_t avail)
{
	if (avail < 1)
		return 0;
	unsigned mod = c[0] >> 6, rm = c[0] & 7, n = 1;
	if (mod == 3)
		return 1;
	if (rm == 4) {
		if (avail < 2)
			return 0;
		n = 2;
		if (mod == 0 && (c[1] & 7) == 5)
			n += 4;
	} else if (mod == 0 && rm == 5) {
		n += 4;
	}
	if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	return n <= avail ? n : 0;
}

/* The one-byte map: ModRM?, immediate, refusal. */
static void one_byte(uint8_t op, bool *modrm, int *imm, const char **no)
{
	*modrm = false, *imm = IMM_NONE, *no = 0;
	if (op < 0x40) {
		switch (op & 7) {
		case 0: case 1: case 2: case 3: *modrm = true; return;
		case 4: *imm = IMM8; return;
		case 5: *imm = IMMZ; return;
		}
		if (op == 0x07 || op == 0x17 || op == 0x1f)
			*no = op == 0x17 ? SHADOW : SEGMENT;    /* pop es/ss/ds */
		return;         /* push seg, daa/das/aaa/aas */
	}
	if (op < 0x62)
		return;                          /* inc, dec, push, pop, pusha, popa */
	if (op >= 0x70 && op <= 0x7f) {
		*imm = IMM8, *no = REL;
		return;
	}
	if (op >= 0x84 && op <= 0x8f) {
		*modrm = true;
		if (op == 0x8e)
			*no = SEGMENT;                   /* mov to a segment register */
		return;
	}
	if (op >= 0x90 && op <= 0x9f) {
		if (op == 0x9a)
			*imm = IMM_FAR, *no = CALL;
		if (op == 0x9d)
			*no = SHADOW;                    /* popf */
		return;
	}
	if (op >= 0xb0 && op <= 0xbf) {
		*imm = op < 0xb8 ? IMM8 : IMMZ;
		return;
	}
	if (op >= 0xd8 && op <= 0xdf) {
		*modrm = true;                           /* x87 */
		return;
	}
	switch (op) {
	case 0x62: *modrm = true, *no = TRAPS; return;              /* bound */
	case 0x63: *modrm = true, *no = SEGMENT; return;            /* arpl */
	case 0x68: *imm = IMMZ; return;
	case 0x69: *modrm = true, *imm = IMMZ; return;
	case 0x6a: *imm = IMM8; return;
	case 0x6b: *modrm = true, *imm = IMM8; return;
	case 0x6c: case 0x6d: case 0x6e: case 0x6f: *no = PORTIO; return;
	case 0x80: case 0x82: case 0x83: *modrm = true, *imm = IMM8; return;
	case 0x81: *modrm = true, *imm = IMMZ; return;
	case 0xa0: case 0xa1: case 0xa2: case 0xa3: *imm = IMM_MOFFS; return;
	case 0xa4: case 0xa5: case 0xa6: case 0xa7: case 0xaa: case 0xab:
	case 0xac: case 0xad: case 0xae: case 0xaf: return;   /* string ops */
	case 0xa8: *imm = IMM8; return;
	case 0xa9: *imm = IMMZ; return;
	case 0xc0: case 0xc1: *modrm = true, *imm = IMM8; return;
	case 0xc2: *imm = IMM16, *no = REL; return;     /* ret imm16: emulated */
	case 0xc3: *no = REL; return;                   /* ret: emulated */
	case 0xc4: case 0xc5: *modrm = true, *no = SEGMENT; return;
	case 0xc6: *modrm = true, *imm = IMM8; return;
	case 0xc7: *modrm = true, *imm = IMMZ; return;
	case 0xc8: *imm = IMM_ENTER; return;
	case 0xc9: return;                              /* leave */
	case 0xca: *imm = IMM16, *no = SEGMENT; return;
	case 0xcb: *no = SEGMENT; return;
	case 0xcc: case 0xce: case 0xf1: *no = TRAPS; return;
	case 0xcd: *imm = IMM8, *no = TRAPS; return;
	case 0xcf: *no = SHADOW; return;                /* iret */
	case 0xd0: case 0xd1: case 0xd2: case 0xd3: *modrm = true; return;
	case 0xd4: case 0xd5: *imm = IMM8; return;      /* aam, aad */
	case 0xd6: *no = TRAPS; return;                 /* salc: undefined */
	case 0xd7: return;                              /* xlat */
	case 0xe0: case 0xe1: case 0xe2: case 0xe3: case 0xeb:
		*imm = IMM8, *no = REL; return;
	case 0xe4: case 0xe5: case 0xe6: case 0xe7: *imm = IMM8, *no = PORTIO; return;
	case 0xe8: *imm = IMMZ, *no = REL; return;
	case 0xe9: *imm = IMMZ, *no = REL; return;
	case 0xea: *imm = IMM_FAR, *no = SEGMENT; return;
	case 0xec: case 0xed: case 0xee: case 0xef: *no = PORTIO; return;
	case 0xf4: case 0xfa: *no = SYSTEM; return;     /* hlt, cli */
	case 0xfb: *no = SHADOW; return;                /* sti */
	case 0xf5: case 0xf8: case 0xf9: case 0xfc: case 0xfd: return;
	case 0xf6: case 0xf7: case 0xfe: case 0xff: *modrm = true; return;
	}
	*no = UNKNOWN;
}

/* The two-byte map (after 0F). */
static void two_byte(uint8_t op, bool *modrm, int *imm, const char **no)
{
	*modrm = true, *imm = IMM_NONE, *no = 0;
	if (op >= 0x80 && op <= 0x8f) {
		*modrm = false, *imm = IMMZ, *no = REL;
		return;
	}
	if (op >= 0xc8 && op <= 0xcf) {
		*modrm = false;                          /* bswap */
		return;
	}
	switch (op) {
	case 0x00: case 0x01: case 0x20: case 0x21: case 0x22: case 0x23:
		*no = SYSTEM; return;
	case 0x02: case 0x03: case 0xb2: case 0xb4: case 0xb5:
		*no = op == 0xb2 ? SHADOW : SEGMENT; return;
	case 0x05: case 0x06: case 0x07: case 0x08: case 0x09: case 0x30:
	case 0x32: case 0x33: case 0x34: case 0x35: case 0xaa:
		*modrm = false, *no = SYSTEM; return;
	case 0x0b: case 0xb9: case 0xff: *no = TRAPS; *modrm = op != 0x0b; return;
	case 0x31: case 0x77: case 0xa2: *modrm = false; return;   /* rdtsc, emms, cpuid */
	case 0xa0: case 0xa8: *modrm = false; return;              /* push fs/gs */
	case 0xa1: case 0xa9: *modrm = false, *no = SEGMENT; return;
	case 0x70: case 0x71: case 0x72: case 0x73: case 0xa4: case 0xac:
	case 0xba: case 0xc2: case 0xc4: case 0xc5: case 0xc6:
		*imm = IMM8; return;
	case 0x04: case 0x0a: case 0x0c: case 0x0e: case 0x0f: case 0x24:
	case 0x25: case 0x26: case 0x27: case 0x36: case 0x39: case 0x3b:
	case 0x3c: case 0x3d: case 0x3e: case 0x3f: case 0x7a: case 0x7b:
	case 0xa6: case 0xa7:
		*no = UNKNOWN; return;
	}
}

static struct shape decode(const uint8_t *c, size_t avail)
{
	struct shape s = { .len = 0, .refused = 0, .modrm_at = -1, .map = 1 };
	size_t n = 0;
	bool opsize16 = false;
	if (avail > I386_INSN_MAX)
		avail = I386_INSN_MAX;
	for (;; n++) {
		if (n >= avail) {
			s.refused = "the instruction is cut off";
			return s;
		}
		uint8_t b = c[n];
		if (b == 0x66)
			opsize16 = true;
		else if (b == 0x67)
			s.refused = ADDR16;
		else if (b == 0x64 || b == 0x65)
			s.fs_gs = true;
		else if (!(b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x26 ||
			   b == 0x2e || b == 0x36 || b == 0x3e || b == 0x64 || b == 0x65))
			break;
	}
	if (s.refused)
		return s;
	bool modrm;
	int imm;
	const char *no;
	uint8_t op = c[n++];
	s.op = op;
	if (op != 0x0f) {
		one_byte(op, &modrm, &imm, &no);
	} else {
		if (n >= avail)
			goto cut;
		uint8_t op2 = c[n++];
		s.map = 2, s.op = op2;
		if (op2 == 0x38 || op2 == 0x3a) {
			if (n >= avail)
				goto cut;
			s.map = 3, s.op = c[n];
			n++;                                     /* the third byte */
			modrm = true, imm = op2 == 0x3a ? IMM8 : IMM_NONE, no = 0;
		} else {
			two_byte(op2, &modrm, &imm, &no);
		}
	}
	s.moffs = s.map == 1 && imm == IMM_MOFFS;
	if (modrm) {
		s.modrm_at = (int)n;
		unsigned m = modrm_len(c + n, avail - n);
		if (!m)
			goto cut;
		uint8_t reg = (c[n] >> 3) & 7;
		if (op == 0xf6 && reg <= 1)
			imm = IMM8;                      /* test r/m8, imm8 */
		if (op == 0xf7 && reg <= 1)
			imm = IMMZ;
		if (op == 0xff && (reg == 2 || reg == 3))
			no = CALL;                       /* indirect and far calls */
		if (op == 0xff && reg == 5)
			no = SEGMENT;                    /* far jmp */
		if (op == 0xff && reg == 7)
			no = UNKNOWN;
		n += m;
	}
	switch (imm) {
	case IMM8:      n += 1; break;
	case IMM16:     n += 2; break;
	case IMMZ:      n += opsize16 ? 2 : 4; break;
	case IMM_ENTER: n += 3; break;
	case IMM_FAR:   n += opsize16 ? 4 : 6; break;
	case IMM_MOFFS: n += 4; break;
	}
	if (n > avail)
		goto cut;
	s.len = (unsigned)n;
	s.refused = no;
	return s;
cut:
	s.len = 0;
	s.refused = "the instruction is cut off: fewer bytes readable than it needs";
	return s;
}

unsigned i386_insn_length(const uint8_t *code, size_t avail)
{
	struct shape s = decode(code, avail);
	if (s.refused == ADDR16 || s.refused == UNKNOWN)
		return 0;
	return s.len;
}

unsigned i386_insn_relocatable(const uint8_t *code, size_t avail, const char **why)
{
	struct shape s = decode(code, avail);
	if (!s.len || s.refused) {
		*why = s.refused;
		return 0;
	}
	return s.len;
}

unsigned i386_insn_indirect_call(const uint8_t *code, size_t avail, uint32_t ret,
				 uint8_t *out, const char **why)
{
	struct shape s = decode(code, avail);
	if (!s.len || s.refused != CALL || s.map != 1 || s.op != 0xff ||
	    ((code[s.modrm_at] >> 3) & 7) != 2)
		return 0;               /* not one: *why left as it was */
	unsigned at = (unsigned)s.modrm_at, k = 0;
	for (unsigned i = 0; i + 1 < at; i++) {
		if (code[i] == 0x66 || code[i] == 0x67) {
			*why = "a 16-bit indirect call (66/67 prefix) pushes a 16-bit "
			       "return address";
			return 0;
		}
	}
	uint8_t modrm = code[at];
	unsigned mod = modrm >> 6, rm = modrm & 7;
	if (mod == 3 && rm == 4) {
		*why = "call *%esp: out of line the push would move its target";
		return 0;
	}
	out[k++] = 0x68;                                /* pushl $ret */
	for (unsigned i = 0; i < 4; i++)
		out[k++] = (uint8_t)(ret >> (8 * i));
	for (unsigned i = 0; i + 1 < at; i++)           /* the prefixes */
		out[k++] = code[i];
	out[k++] = 0xff;
	bool esp_based = mod != 3 && rm == 4 && (code[at + 1] & 7) == 4;
	if (!esp_based) {                               /* the same operand */
		out[k++] = (uint8_t)((modrm & ~0x38) | (4 << 3));   /* /4: jmp */
		for (unsigned i = at + 1; i < s.len; i++)
			out[k++] = code[i];
		return k;
	}
	/* [esp + disp] after the push is [esp + disp + 4]. */
	int32_t disp = mod == 0 ? 0 : mod == 1 ? (int8_t)code[at + 2] :
		(int32_t)((uint32_t)code[at + 2] | (uint32_t)code[at + 3] << 8 |
			  (uint32_t)code[at + 4] << 16 | (uint32_t)code[at + 5] << 24);
	disp += 4;
	unsigned nmod = disp >= -128 && disp <= 127 ? 1 : 2;
	out[k++] = (uint8_t)((nmod << 6) | (4 << 3) | 4);
	out[k++] = code[at + 1];                        /* the SIB */
	if (nmod == 1) {
		out[k++] = (uint8_t)disp;
	} else {
		for (unsigned i = 0; i < 4; i++)
			out[k++] = (uint8_t)((uint32_t)disp >> (8 * i));
	}
	return k;
}

/* Check mode's refusals (i386_insn_operand), beyond the out-of-line ones. */
static const char STRING[] = "check mode: a string instruction reads and writes "
			     "through ESI/EDI as far as ECX says; the record carries "
			     "one operand";
static const char IMPLICIT[] = "check mode: it reads memory through an implicit "
			       "operand (xlat's EBX+AL, maskmov's EDI) the record "
			       "does not carry";
static const char PUSHA[] = "check mode: pusha/popa move eight stack words; the "
			    "record's stack window holds four";
static const char PUSHF[] = "check mode: pushf pushes IF, which check mode clears "
			    "while the copy runs";
static const char LEAVES[] = "check mode: an indirect jmp leaves the slot before "
			     "the trap that records the state after it";
static const char FSGS[] = "check mode: an fs/gs operand's segment base (the "
			   "per-CPU area's) is not in the record";
static const char BIG[] = "check mode: it moves more memory than the record's "
			  "16 bytes (x87 environment or state, fxsave/xsave)";
static const char NESTED[] = "check mode: enter with a nesting level copies outer "
			     "frames; the record's stack window holds four words";

int i386_insn_operand(const uint8_t *code, size_t avail,
		      struct i386_operand *o, const char **why)
{
	struct shape s = decode(code, avail);
	*o = (struct i386_operand){ .base = -1, .index = -1 };
	if (!s.len || s.refused) {
		*why = s.refused;
		return -1;
	}
	const char *no = 0;
	unsigned reg = s.modrm_at >= 0 ? (code[s.modrm_at] >> 3) & 7 : 0;
	bool mem = s.modrm_at >= 0 && code[s.modrm_at] >> 6 != 3;
	if (s.map == 1) {
		uint8_t op = s.op;
		if ((op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf))
			no = STRING;
		else if (op == 0xd7)
			no = IMPLICIT;
		else if (op == 0x60 || op == 0x61)
			no = PUSHA;
		else if (op == 0x9c)
			no = PUSHF;
		else if (op == 0xff && reg == 4)
			no = LEAVES;
		else if (op == 0xc8)
			no = NESTED;    /* level 0 is emulated and never comes here */
		else if (mem && (op == 0xd9 || op == 0xdd) && (reg == 4 || reg == 6))
			no = BIG;
	} else if (s.map == 2) {
		if (s.op == 0xf7)
			no = IMPLICIT;
		else if (s.op == 0xae && mem && reg <= 6 && reg != 2 && reg != 3)
			no = BIG;       /* fxsave, fxrstor, xsave, xrstor, xsaveopt */
	}
	if (!no && s.fs_gs && (mem || s.moffs))
		no = FSGS;
	if (no) {
		*why = no;
		return -1;
	}
	if (s.moffs) {
		o->mem = 1;
		o->disp = (int32_t)((uint32_t)code[s.len - 4] | (uint32_t)code[s.len - 3] << 8 |
				    (uint32_t)code[s.len - 2] << 16 | (uint32_t)code[s.len - 1] << 24);
		return 0;
	}
	if (mem)
		i386_modrm_operand(code + s.modrm_at, o);
	return 0;
}

void i386_modrm_operand(const uint8_t *m, struct i386_operand *o)
{
	unsigned mod = m[0] >> 6, rm = m[0] & 7, at = 1;
	*o = (struct i386_operand){ .base = -1, .index = -1 };
	if (mod == 3) {
		o->base = (int8_t)rm;   /* a register: its number, no memory */
		return;
	}
	o->mem = 1;
	if (rm == 4) {
		unsigned sib = m[1], base = sib & 7, index = (sib >> 3) & 7;
		at = 2;
		o->scale = (uint8_t)(sib >> 6);
		o->index = index == 4 ? -1 : (int8_t)index;
		o->base = mod == 0 && base == 5 ? -1 : (int8_t)base;
		if (mod == 0 && base == 5)
			mod = 2;        /* disp32, no base */
	} else if (mod == 0 && rm == 5) {
		mod = 2;                /* disp32 alone */
	} else {
		o->base = (int8_t)rm;
	}
	if (mod == 1)
		o->disp = (int8_t)m[at];
	else if (mod == 2)
		o->disp = (int32_t)((uint32_t)m[at] | (uint32_t)m[at + 1] << 8 |
				    (uint32_t)m[at + 2] << 16 | (uint32_t)m[at + 3] << 24);
}

uint32_t i386_operand_address(const struct i386_operand *o, const uint32_t regs[8])
{
	uint32_t a = (uint32_t)o->disp;
	if (o->base >= 0)
		a += regs[o->base];
	if (o->index >= 0)
		a += regs[o->index] << o->scale;
	return a;
}
