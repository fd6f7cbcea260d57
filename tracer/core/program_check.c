/*
 * program_check.c — the validator: never trust the wire.
 *
 * A program is checked once, when `program check` installs it, so that the
 * interpreter may run it with no check of its own: its size; every
 * operation known and every operand in range; labels strictly later in the
 * program; aggregations of the declared kind, each fed the same number of
 * keys everywhere; the stack depth before each instruction the same on
 * every path, never below what it pops, never above WIRE_PROGRAM_STACK
 * after it pushes (one forward pass: jumps only go forward); and a last
 * instruction that ends the run. Unreachable instructions are checked for
 * their operands only. Every fact about an operation comes from wire.h's
 * WIRE_RPN_OPS; the operand column picks a checker from a table.
 */
#include "program.h"
#include "kstring.h"
#include "console.h"
#include "tarch/registers.h"
#include "tracer.h"
#include "wire.h"

struct op_facts {
	const char *mnemonic;       /* 0: no such operation */
	const char *operands;
	uint8_t     pops, pushes;   /* pops may be WIRE_RPN_POPS_A / _A1 */
};

#define OP_FACTS(name, op, pops, pushes, mnemonic, operands, what) \
	[op] = { mnemonic, operands, pops, pushes },
static const struct op_facts ops[256] = { WIRE_RPN_OPS(OP_FACTS) };
#undef OP_FACTS

/* The aggregation kinds with the mnemonic of the operation that feeds them. */
#define AGG_KIND_ROW(name, value, feeder) { value, feeder },
static const struct { uint8_t kind; const char *feeder; } agg_kinds[] = {
	WIRE_AGG_KINDS(AGG_KIND_ROW)
};
#undef AGG_KIND_ROW
#define NAGG_KINDS (sizeof agg_kinds / sizeof agg_kinds[0])

const char *program_mnemonic(unsigned op)
{
	return op < 256 ? ops[op].mnemonic : 0;
}

/* The kind an operation feeds, or 0 if it feeds none. */
static unsigned kind_fed_by(const char *mnemonic)
{
	for (unsigned k = 0; k < NAGG_KINDS; k++)
		if (strcmp(agg_kinds[k].feeder, mnemonic) == 0)
			return agg_kinds[k].kind;
	return 0;
}

const char *program_agg_kind(unsigned kind)
{
	for (unsigned k = 0; k < NAGG_KINDS; k++)
		if (agg_kinds[k].kind == kind)
			return agg_kinds[k].feeder;
	return 0;
}

/* What the checkers see of the program being checked. */
struct checking {
	const struct wire_program *head;
	unsigned                   ninsns;
	int16_t                    agg_keys[WIRE_PROGRAM_MAX_AGGS];   /* -1: unseen */
	int16_t                    agg_first[WIRE_PROGRAM_MAX_AGGS];
};

/* A checker: true if instruction `at` is good, else false with what set. */
typedef bool (*operand_check)(struct checking *c, const struct wire_rpn_insn *i,
			      unsigned at, char *what, size_t size);

static bool no_operand(struct checking *c, const struct wire_rpn_insn *i,
		       unsigned at, char *what, size_t size)
{
	(void)c, (void)i, (void)at, (void)what, (void)size;
	return true;
}

/* A memory read (`load`) is of the arch's addressable words, at most its
 * own; a log of the VM's words may be of 8 bytes everywhere. */
static bool good_size(unsigned size, unsigned widest)
{
	return size == 1 || size == 2 || size == 4 || (size == 8 && widest == 8);
}

static bool check_reg(struct checking *c, const struct wire_rpn_insn *i,
		      unsigned at, char *what, size_t size)
{
	if (i->a < TARCH_NREGISTERS)
		return true;
	ksnprintf(what, size, "register %u: there are %u", i->a, TARCH_NREGISTERS);
	return false;
}

static bool check_arg(struct checking *c, const struct wire_rpn_insn *i,
		      unsigned at, char *what, size_t size)
{
	/* arg64 reads a second word where the arch's word is 32 bits */
	unsigned last = i->a + (i->op == WIRE_RPN_ARG64 ?
				sizeof(prog_word) / sizeof(unsigned long) - 1 : 0);
	if (last < WIRE_PROGRAM_MAX_ARG)
		return true;
	ksnprintf(what, size, "argument %u: at most %u are read", last,
		  WIRE_PROGRAM_MAX_ARG);
	return false;
}

static bool check_depth(struct checking *c, const struct wire_rpn_insn *i,
			unsigned at, char *what, size_t size)
{
	if (i->a <= WIRE_STACK_MAX_DEPTH)
		return true;
	ksnprintf(what, size, "depth %u: at most %u frames (0: %u)", i->a,
		  WIRE_STACK_MAX_DEPTH, WIRE_STACK_DEPTH);
	return false;
}

static bool check_string_word(struct checking *c, const struct wire_rpn_insn *i,
			      unsigned at, char *what, size_t size)
{
	unsigned words = WIRE_PROGRAM_STRING_BYTES / sizeof(prog_word);
	if (i->a < words)
		return true;
	ksnprintf(what, size, "string word %u: a string is read to %u bytes, %u words",
		  i->a, WIRE_PROGRAM_STRING_BYTES, words);
	return false;
}

static bool check_load_size(struct checking *c, const struct wire_rpn_insn *i,
			    unsigned at, char *what, size_t size)
{
	if (good_size(i->a, sizeof(unsigned long)))
		return true;
	ksnprintf(what, size, "size %u: 1, 2, 4%s bytes", i->a,
		  sizeof(unsigned long) == 8 ? " or 8" : "");
	return false;
}

static bool check_label(struct checking *c, const struct wire_rpn_insn *i,
			unsigned at, char *what, size_t size)
{
	if (i->b <= at) {
		ksnprintf(what, size, "jump back to instruction %u: jumps only go "
			  "forward", i->b);
		return false;
	}
	if (i->b >= c->ninsns) {
		ksnprintf(what, size, "jump to instruction %u: the program has %u",
			  i->b, c->ninsns);
		return false;
	}
	return true;
}

static bool check_local(struct checking *c, const struct wire_rpn_insn *i,
			unsigned at, char *what, size_t size)
{
	if (i->b < WIRE_PROGRAM_LOCALS)
		return true;
	ksnprintf(what, size, "local %u: there are %u", i->b, WIRE_PROGRAM_LOCALS);
	return false;
}

static bool check_global(struct checking *c, const struct wire_rpn_insn *i,
			 unsigned at, char *what, size_t size)
{
	if (i->b < WIRE_PROGRAM_GLOBALS)
		return true;
	ksnprintf(what, size, "global %u: there are %u", i->b, WIRE_PROGRAM_GLOBALS);
	return false;
}

static bool check_tls(struct checking *c, const struct wire_rpn_insn *i,
		      unsigned at, char *what, size_t size)
{
	if (i->b < WIRE_PROGRAM_TLS)
		return true;
	ksnprintf(what, size, "thread-local %u: there are %u", i->b, WIRE_PROGRAM_TLS);
	return false;
}

#define AGG_FLAG_BIT(name, bit, meaning) | bit
#define AGG_FLAGS (0 WIRE_RPN_AGG_FLAGS(AGG_FLAG_BIT))

static bool check_log(struct checking *c, const struct wire_rpn_insn *i,
		      unsigned at, char *what, size_t size)
{
	if (good_size(i->b, sizeof(prog_word)))
		return true;
	ksnprintf(what, size, "size %u: 1, 2, 4 or 8 bytes", i->b);
	return false;
}

static bool check_agg(struct checking *c, const struct wire_rpn_insn *i,
		      unsigned at, char *what, size_t size)
{
	unsigned agg = i->b;
	if (agg >= c->head->naggs) {
		ksnprintf(what, size, "aggregation %u: the program declares %u", agg,
			  c->head->naggs);
		return false;
	}
	unsigned fed = kind_fed_by(ops[i->op].mnemonic);
	if (c->head->agg_kind[agg] != fed) {
		ksnprintf(what, size, "aggregation %u is declared %s", agg,
			  program_agg_kind(c->head->agg_kind[agg]));
		return false;
	}
	if ((uint32_t)i->imm & ~(uint32_t)AGG_FLAGS) {
		ksnprintf(what, size, "flags 0x%x: only 0x%x are known",
			  (unsigned)i->imm, (unsigned)AGG_FLAGS);
		return false;
	}
	if (i->a > WIRE_AGG_MAX_KEYS) {
		ksnprintf(what, size, "%u keys: at most %u", i->a, WIRE_AGG_MAX_KEYS);
		return false;
	}
	if (c->agg_keys[agg] >= 0 && c->agg_keys[agg] != i->a) {
		ksnprintf(what, size, "%u keys for aggregation %u, which instruction "
			  "%d gives %d", i->a, agg, c->agg_first[agg], c->agg_keys[agg]);
		return false;
	}
	c->agg_keys[agg] = i->a;
	c->agg_first[agg] = (int16_t)at;
	return true;
}

/* The operand kinds of WIRE_RPN_OPS' operand column. */
static const struct {
	const char    *operands;
	operand_check  check;
} operand_kinds[] = {
	{ "",       no_operand },
	{ "imm",    no_operand },
	{ "reg",    check_reg },
	{ "n",      check_arg },
	{ "size",   check_load_size },
	{ "depth",  check_depth },
	{ "label",  check_label },
	{ "local",  check_local },
	{ "global", check_global },
	{ "size,n", check_log },
	{ "agg,n",  check_agg },
	{ "tls",    check_tls },
	{ "word",   check_string_word },
};

static operand_check checker_of(const char *operands)
{
	for (unsigned k = 0; k < sizeof operand_kinds / sizeof operand_kinds[0]; k++)
		if (strcmp(operand_kinds[k].operands, operands) == 0)
			return operand_kinds[k].check;
	return 0;
}

static unsigned pops_of(const struct wire_rpn_insn *i)
{
	unsigned pops = ops[i->op].pops;
	if (pops == WIRE_RPN_POPS_A)
		return i->a;
	if (pops == WIRE_RPN_POPS_A1)
		return i->a + 1u;
	return pops;
}

static int refuse(char *why, size_t size, const struct wire_rpn_insn *insn,
		  unsigned at, const char *what)
{
	const char *m = program_mnemonic(insn[at].op);
	if (m)
		ksnprintf(why, size, "instruction %u (%s): %s", at, m, what);
	else
		ksnprintf(why, size, "instruction %u (op 0x%02x): %s", at,
			  insn[at].op, what);
	return -1;
}

/* The depth a path brings to instruction `to`; false if another path
 * brought a different one (what says so). */
static bool join(int16_t *depth, unsigned to, int d, char *what, size_t size)
{
	if (depth[to] < 0) {
		depth[to] = (int16_t)d;
		return true;
	}
	if (depth[to] == d)
		return true;
	ksnprintf(what, size, "paths join with %d and %d words on the stack",
		  depth[to], d);
	return false;
}

int program_validate(const void *bytes, size_t n, char *why, size_t why_size)
{
	static struct wire_rpn_insn insn[WIRE_PROGRAM_MAX_INSNS];  /* aligned copy */
	struct wire_program head;
	struct checking c = { .head = &head };
	int16_t depth[WIRE_PROGRAM_MAX_INSNS];
	char what[96];

	if (n < sizeof head) {
		ksnprintf(why, why_size, "%zu bytes: shorter than a program's "
			  "header (%zu)", n, sizeof head);
		return -1;
	}
	memcpy(&head, bytes, sizeof head);
	if (head.ninsns < 1 || head.ninsns > WIRE_PROGRAM_MAX_INSNS) {
		ksnprintf(why, why_size, "%u instructions: a program has 1 to %u",
			  head.ninsns, WIRE_PROGRAM_MAX_INSNS);
		return -1;
	}
	size_t want = sizeof head + head.ninsns * sizeof insn[0];
	if (n != want) {
		ksnprintf(why, why_size, "%zu bytes: a program of %u instructions "
			  "is %zu", n, head.ninsns, want);
		return -1;
	}
	if (head.naggs > WIRE_PROGRAM_MAX_AGGS) {
		ksnprintf(why, why_size, "%u aggregations: at most %u", head.naggs,
			  WIRE_PROGRAM_MAX_AGGS);
		return -1;
	}
	for (unsigned a = 0; a < head.naggs; a++) {
		if (!program_agg_kind(head.agg_kind[a])) {
			ksnprintf(why, why_size, "aggregation %u: no kind %u", a,
				  head.agg_kind[a]);
			return -1;
		}
		c.agg_keys[a] = -1;
	}
	c.ninsns = head.ninsns;
	memcpy(insn, (const uint8_t *)bytes + sizeof head, head.ninsns * sizeof insn[0]);

	for (unsigned i = 0; i < c.ninsns; i++)
		depth[i] = -1;
	depth[0] = 0;
	for (unsigned at = 0; at < c.ninsns; at++) {
		const struct wire_rpn_insn *i = &insn[at];
		const struct op_facts *f = &ops[i->op];
		if (!f->mnemonic)
			return refuse(why, why_size, insn, at, "unknown operation");
		operand_check check = checker_of(f->operands);
		if (!check) {
			ksnprintf(what, sizeof what, "operands \"%s\" unknown to this "
				  "guest", f->operands);
			return refuse(why, why_size, insn, at, what);
		}
		if (!check(&c, i, at, what, sizeof what))
			return refuse(why, why_size, insn, at, what);
		if (depth[at] < 0)
			continue;                       /* unreachable */

		unsigned pops = pops_of(i);
		int d = depth[at];
		if ((unsigned)d < pops) {
			ksnprintf(what, sizeof what, "stack underflow: pops %u, %d on "
				  "the stack", pops, d);
			return refuse(why, why_size, insn, at, what);
		}
		d = d - (int)pops + f->pushes;
		if (d > WIRE_PROGRAM_STACK) {
			ksnprintf(what, sizeof what, "stack overflow: %d words, at "
				  "most %u", d, WIRE_PROGRAM_STACK);
			return refuse(why, why_size, insn, at, what);
		}
		bool jumps = i->op == WIRE_RPN_JMP || i->op == WIRE_RPN_JZ ||
			     i->op == WIRE_RPN_JNZ;
		bool goes_on = i->op != WIRE_RPN_JMP && i->op != WIRE_RPN_EXIT &&
			       i->op != WIRE_RPN_ABORT;
		if (jumps && !join(depth, i->b, d, what, sizeof what))
			return refuse(why, why_size, insn, i->b, what);
		if (goes_on && at + 1 < c.ninsns && !join(depth, at + 1, d, what,
							   sizeof what))
			return refuse(why, why_size, insn, at + 1, what);
	}
	unsigned last = c.ninsns - 1;
	if (insn[last].op != WIRE_RPN_EXIT && insn[last].op != WIRE_RPN_ABORT)
		return refuse(why, why_size, insn, last, "the last instruction must "
			      "be exit or abort: nothing may fall off the end");
	return 0;
}
