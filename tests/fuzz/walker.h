/*
 * walker.h — a second reading of what the validator promises the
 * interpreter, written from wire.h's WIRE_RPN_OPS alone (its pops, pushes
 * and operand columns: an operation added to the table is walked with no
 * change here): every instruction's depth the same on every path, never
 * below what it pops nor above WIRE_PROGRAM_STACK after it pushes, labels
 * strictly forward and inside the program, and a last instruction that
 * does not go on; and each operand, by its kind in the operands column,
 * inside wire.h's limits (an argument below WIRE_PROGRAM_MAX_ARG, a local,
 * global or thread-local word inside its array, an aggregation declared,
 * with at most WIRE_AGG_MAX_KEYS keys and only WIRE_RPN_AGG_FLAGS' bits),
 * so the interpreter indexes nothing past its arrays. A kind the walker
 * does not know is a promise it cannot check: wrong, until written here.
 * walk() returns 0 if the program keeps every promise,
 * else a message; the targets abort when the validator accepted a program
 * the walker finds wrong. depth[] gets each reachable instruction's depth.
 */
#ifndef FUZZ_WALKER_H
#define FUZZ_WALKER_H

#include <string.h>
#include "wire.h"

struct walk_op { const char *mnemonic, *operands; int pops, pushes; };
#define WALK_ROW(name, op, pops, pushes, mnemonic, operands, what) \
	[op] = { mnemonic, operands, pops, pushes },
static const struct walk_op walk_ops[256] = { WIRE_RPN_OPS(WALK_ROW) };
#undef WALK_ROW

/* Whether an operation goes on to the next instruction: not an
 * unconditional jump nor an end (by mnemonic, as wire.h names them). */
static int walk_goes_on(const struct walk_op *o)
{
	return strcmp(o->mnemonic, "jmp") && strcmp(o->mnemonic, "exit") &&
	       strcmp(o->mnemonic, "abort");
}

#define WALK_FLAG_BIT(name, bit, meaning) | bit
#define WALK_AGG_FLAGS (0 WIRE_RPN_AGG_FLAGS(WALK_FLAG_BIT))

/* The operand's index inside its limit, by the operands column. */
static const char *walk_operand(const struct wire_program *h, const struct walk_op *o,
				const struct wire_rpn_insn *i)
{
	const char *k = o->operands;
	if (!strcmp(k, "n"))                    /* arg and arg64 (one word on a 64-bit host) */
		return i->a < WIRE_PROGRAM_MAX_ARG ? 0 : "argument past WIRE_PROGRAM_MAX_ARG";
	if (!strcmp(k, "local"))
		return i->b < WIRE_PROGRAM_LOCALS ? 0 : "local past WIRE_PROGRAM_LOCALS";
	if (!strcmp(k, "global"))
		return i->b < WIRE_PROGRAM_GLOBALS ? 0 : "global past WIRE_PROGRAM_GLOBALS";
	if (!strcmp(k, "tls"))
		return i->b < WIRE_PROGRAM_TLS ? 0 : "thread-local past WIRE_PROGRAM_TLS";
	if (!strcmp(k, "word"))                 /* strword: a word of a bounded string */
		return i->a < WIRE_PROGRAM_STRING_BYTES / sizeof(prog_word) ? 0 :
			"string word past WIRE_PROGRAM_STRING_BYTES";
	if (!strcmp(k, "depth"))                /* stack's frames, 0: the default */
		return i->a <= WIRE_STACK_MAX_DEPTH ? 0 : "depth past WIRE_STACK_MAX_DEPTH";
	if (!strcmp(k, "agg,n")) {
		if (i->b >= h->naggs || i->b >= WIRE_PROGRAM_MAX_AGGS)
			return "aggregation not declared";
		if (i->a > WIRE_AGG_MAX_KEYS)
			return "keys past WIRE_AGG_MAX_KEYS";
		if ((uint32_t)i->imm & ~(uint32_t)WALK_AGG_FLAGS)
			return "aggregation flags unknown";
		return 0;
	}
	if (!strcmp(k, "") || !strcmp(k, "imm") || !strcmp(k, "reg") ||
	    !strcmp(k, "size") || !strcmp(k, "label") || !strcmp(k, "size,n"))
		return 0;                       /* the runtime's own checks, or none */
	return "an operand kind the walker does not know";
}

static const char *walk(const struct wire_program *h, const struct wire_rpn_insn *insn,
			int *depth)
{
	unsigned n = h->ninsns;
	if (n < 1 || n > WIRE_PROGRAM_MAX_INSNS)
		return "instruction count";
	for (unsigned i = 0; i < n; i++)
		depth[i] = -1;
	depth[0] = 0;
	for (unsigned at = 0; at < n; at++) {
		const struct walk_op *o = &walk_ops[insn[at].op];
		if (!o->mnemonic)
			return "unknown operation";
		const char *bad = walk_operand(h, o, &insn[at]);
		if (bad)
			return bad;
		if (!strcmp(o->operands, "label") &&
		    (insn[at].b <= at || insn[at].b >= n))
			return "label not forward inside the program";
		if (depth[at] < 0)
			continue;
		int pops = o->pops == WIRE_RPN_POPS_A ? insn[at].a :
			   o->pops == WIRE_RPN_POPS_A1 ? insn[at].a + 1 : o->pops;
		if (depth[at] < pops)
			return "pops below the stack";
		int d = depth[at] - pops + o->pushes;
		if (d > WIRE_PROGRAM_STACK)
			return "pushes above WIRE_PROGRAM_STACK";
		unsigned next[2];
		unsigned nn = 0;
		if (!strcmp(o->operands, "label"))
			next[nn++] = insn[at].b;
		if (walk_goes_on(o)) {
			if (at + 1 >= n)
				return "the last instruction goes on";
			next[nn++] = at + 1;
		}
		for (unsigned k = 0; k < nn; k++) {
			if (depth[next[k]] >= 0 && depth[next[k]] != d)
				return "paths join with different depths";
			depth[next[k]] = d;
		}
	}
	if (walk_goes_on(&walk_ops[insn[n - 1].op]))
		return "the last instruction goes on";
	return 0;
}

#endif
