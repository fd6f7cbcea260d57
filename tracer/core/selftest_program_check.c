/*
 * selftest_program_check.c — the validator refuses what the interpreter
 * must never see, and says where and why.
 *
 * One program per refusal (program_check.c lists them): each is a few
 * instructions that are good but for the one fault, and the test checks
 * that program_validate refuses it with the expected words in its reason,
 * which is printed. A good program with every operand at its limit is
 * accepted. The header's refusals (its size, instruction and aggregation
 * counts, aggregation kinds) are made from a good program's bytes. And a
 * refused `program check` installs nothing: the slot keeps what it had.
 */
#include "selftest.h"
#include "selftest_programs.h"
#include "tarch/registers.h"

static const uint8_t one_count[] = { WIRE_AGG_COUNT };

/* Pushes past the stack by one. */
static struct wire_rpn_insn overflow[WIRE_PROGRAM_STACK + 2];

struct refusal {
	const char                 *name;
	const struct wire_rpn_insn *insn;
	unsigned                    n;
	const char                 *expect;    /* in the reason */
};

#define REFUSAL(name, expect, ...) { name, (const struct wire_rpn_insn[]){ __VA_ARGS__ }, \
	sizeof((const struct wire_rpn_insn[]){ __VA_ARGS__ }) / sizeof(struct wire_rpn_insn), expect }


static void check_kind(const char *name, const struct wire_rpn_insn *insn,
		       unsigned n, const char *expect, uint8_t kind)
{
	static uint8_t bytes[PROGRAM_MAX_BYTES] __attribute__((aligned(8)));
	char why[WIRE_MAX_REASON] = "(accepted)";
	size_t size = tp_bytes(bytes, insn, n, 1, &kind);
	int rc = program_validate(bytes, size, why, sizeof why);
	report(rc != 0 && contains(why, expect), "refuses %s: %s", name, why);
}

/* Its one aggregation a COUNT. */
static void check(const char *name, const struct wire_rpn_insn *insn, unsigned n,
		  const char *expect)
{
	check_kind(name, insn, n, expect, one_count[0]);
}

/* The header's refusals, from a good program's bytes. */
static void test_header(void)
{
	static const struct wire_rpn_insn good[] = {
		INSN(PUSH, 0, 0, 1), INSN(DROP, 0, 0, 0), INSN(EXIT, 0, 0, 0),
	};
	static uint8_t bytes[PROGRAM_MAX_BYTES + 8] __attribute__((aligned(8)));
	struct wire_program *head = (struct wire_program *)bytes;
	char why[WIRE_MAX_REASON];
	size_t size = tp_bytes(bytes, good, NINSNS(good), 1, one_count);

	report(program_validate(bytes, size, why, sizeof why) == 0,
	       "accepts a good program of %zu bytes", size);
	why[0] = 0;
	report(program_validate(bytes, size - 1, why, sizeof why) != 0 &&
	       contains(why, "a program of 3 instructions is 40"),
	       "refuses its bytes less one: %s", why);
	report(program_validate(bytes, size + 8, why, sizeof why) != 0 &&
	       contains(why, "a program of 3 instructions is 40"),
	       "refuses its bytes and an instruction more: %s", why);
	report(program_validate(bytes, 10, why, sizeof why) != 0 &&
	       contains(why, "shorter than a program's header"),
	       "refuses 10 bytes: %s", why);

	head->ninsns = 0;
	report(program_validate(bytes, sizeof *head, why, sizeof why) != 0 &&
	       contains(why, "0 instructions"), "refuses no instructions: %s", why);
	head->ninsns = WIRE_PROGRAM_MAX_INSNS + 1;
	report(program_validate(bytes, size, why, sizeof why) != 0 &&
	       contains(why, "257 instructions"), "refuses %u instructions: %s",
	       WIRE_PROGRAM_MAX_INSNS + 1, why);
	head->ninsns = NINSNS(good);
	head->naggs = WIRE_PROGRAM_MAX_AGGS + 1;
	report(program_validate(bytes, size, why, sizeof why) != 0 &&
	       contains(why, "9 aggregations: at most 8"),
	       "refuses %u aggregations: %s", WIRE_PROGRAM_MAX_AGGS + 1, why);
	head->naggs = 2;
	head->agg_kind[1] = 0x7f;
	report(program_validate(bytes, size, why, sizeof why) != 0 &&
	       contains(why, "aggregation 1: no kind 127"),
	       "refuses an aggregation of an unknown kind: %s", why);
}

/* A program with every operand at its limit, and unreachable code after a
 * jump, is accepted. */
static void test_limits(void)
{
	static const uint8_t kinds[WIRE_PROGRAM_MAX_AGGS] = {
		WIRE_AGG_COUNT, WIRE_AGG_SUM, WIRE_AGG_MIN, WIRE_AGG_MAX,
		WIRE_AGG_AVG, WIRE_AGG_QUANTIZE, WIRE_AGG_COUNT, WIRE_AGG_QUANTIZE,
	};
	static const struct wire_rpn_insn insn[] = {
		INSN(REG, TARCH_NREGISTERS - 1, 0, 0),
		INSN(ARG, WIRE_PROGRAM_MAX_ARG - 1, 0, 0),
		INSN(LSET, 0, WIRE_PROGRAM_LOCALS - 1, 0),
		INSN(GSET, 0, WIRE_PROGRAM_GLOBALS - 1, 0),
		INSN(TGET, 0, WIRE_PROGRAM_TLS - 1, 0),
		INSN(TSET, 0, WIRE_PROGRAM_TLS - 1, 0),
		INSN(PUSH, 0, 0, 1), INSN(PUSH, 0, 0, 2), INSN(PUSH, 0, 0, 3),
		INSN(PUSH, 0, 0, 4), INSN(PUSH, 0, 0, 5),
		INSN(QUANTIZE, WIRE_AGG_MAX_KEYS, WIRE_PROGRAM_MAX_AGGS - 1,
		     WIRE_RPN_AGG_UNSIGNED),
		INSN(JMP, 0, 14, 0),
		INSN(ADD, 0, 0, 0),                 /* unreachable: not checked */
		INSN(EXIT, 0, 0, 0),
	};
	static uint8_t bytes[PROGRAM_MAX_BYTES] __attribute__((aligned(8)));
	char why[WIRE_MAX_REASON] = "";
	size_t size = tp_bytes(bytes, insn, NINSNS(insn), WIRE_PROGRAM_MAX_AGGS, kinds);
	int rc = program_validate(bytes, size, why, sizeof why);
	report(rc == 0, "accepts every operand at its limit, and unreachable code%s%s",
	       rc ? ": " : "", why);
}

/* A refused check installs nothing: the slot keeps its program. */
static void test_nothing_installed(void)
{
	static const struct wire_rpn_insn good[] = { INSN(ABORT, 0, 0, 0) };
	static const struct wire_rpn_insn bad[] = { INSN(ADD, 0, 0, 0), INSN(EXIT, 0, 0, 0) };
	const unsigned slot = WIRE_PROGRAMS - 1;
	char why[WIRE_MAX_REASON];

	bool ok = tp_install(slot, good, 1, 0, 0, why, sizeof why) == 0;
	report(ok && programs[slot].installed && programs[slot].head.ninsns == 1,
	       "program check installs a good program in slot %u", slot);
	int rc = tp_install(slot, bad, NINSNS(bad), 0, 0, why, sizeof why);
	report(rc != 0 && programs[slot].installed && programs[slot].head.ninsns == 1 &&
	       programs[slot].insn[0].op == WIRE_RPN_ABORT,
	       "a refused check leaves the slot as it was: %s", why);
	rc = program_install(slot, 16, why, sizeof why);
	report(rc != 0 && contains(why, "byte 0 was not loaded"),
	       "a check of bytes not loaded since the last check is refused: %s", why);
	rc = program_load(slot, 0, "0g", why, sizeof why);
	report(rc != 0 && contains(why, "not a hex digit") && program_staged(slot) == 0,
	       "a load of a non-hex digit writes nothing: %s", why);
	rc = program_load(slot, PROGRAM_MAX_BYTES - 1, "0102", why, sizeof why);
	report(rc != 0 && program_staged(slot) == 0,
	       "a load past the largest program writes nothing: %s", why);
	report(program_clear((int)slot, why, sizeof why) == 0 && !programs[slot].installed,
	       "program clear empties the slot");
}

static void test_refusals(void)
{
	/* Automatic: a compound literal's address is no constant. */
	const struct refusal refusals[] = {
		REFUSAL("an unknown operation", "instruction 1 (op 0x77): unknown operation",
			INSN(PUSH, 0, 0, 1), { 0x77, 0, 0, 0 }, INSN(EXIT, 0, 0, 0)),
		REFUSAL("a register past the arch's", "register",
			INSN(REG, TARCH_NREGISTERS, 0, 0), INSN(DROP, 0, 0, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("an argument past the last read", "argument",
			INSN(ARG, WIRE_PROGRAM_MAX_ARG, 0, 0), INSN(DROP, 0, 0, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("a thread-local past the last", "thread-local",
			INSN(TGET, 0, WIRE_PROGRAM_TLS, 0), INSN(DROP, 0, 0, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("a load of 3 bytes", "size 3",
			INSN(PUSH, 0, 0, 0), INSN(LOAD, 3, 0, 0), INSN(DROP, 0, 0, 0),
			INSN(EXIT, 0, 0, 0)),
		REFUSAL("a log of 0 bytes", "size 0",
			INSN(PUSH, 0, 0, 0), INSN(LOG, 1, 0, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("a stack underflow", "instruction 1 (add): stack underflow: pops 2, 1 on the stack",
			INSN(PUSH, 0, 0, 1), INSN(ADD, 0, 0, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("a log of more items than the stack holds", "stack underflow",
			INSN(PUSH, 0, 0, 1), INSN(LOG, 2, 4, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("a backward jump", "jump back to instruction 0",
			INSN(PUSH, 0, 0, 1), INSN(JMP, 0, 0, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("a jump to itself", "jump back to instruction 1",
			INSN(PUSH, 0, 0, 1), INSN(JNZ, 0, 1, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("a jump out of the program", "jump to instruction 3: the program has 3",
			INSN(PUSH, 0, 0, 1), INSN(JZ, 0, 3, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("a local past the last", "local 16",
			INSN(LGET, 0, WIRE_PROGRAM_LOCALS, 0), INSN(DROP, 0, 0, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("a global past the last", "global 64",
			INSN(PUSH, 0, 0, 1), INSN(GSET, 0, WIRE_PROGRAM_GLOBALS, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("an aggregation fed by the wrong kind", "aggregation 0 is declared count",
			INSN(PUSH, 0, 0, 1), INSN(SUM, 0, 0, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("an aggregation not declared", "aggregation 1: the program declares 1",
			INSN(COUNT, 0, 1, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("too many keys", "5 keys: at most 4",
			INSN(PUSH, 0, 0, 1), INSN(DUP, 0, 0, 0), INSN(DUP, 0, 0, 0),
			INSN(DUP, 0, 0, 0), INSN(DUP, 0, 0, 0),
			INSN(COUNT, 5, 0, 0), INSN(EXIT, 0, 0, 0)),
		REFUSAL("an aggregation flag no guest knows", "flags 0x2: only 0x1 are known",
			INSN(COUNT, 0, 0, 2), INSN(EXIT, 0, 0, 0)),
		REFUSAL("one aggregation with two numbers of keys", "1 keys for aggregation 0, which instruction 0 gives 0",
			INSN(COUNT, 0, 0, 0), INSN(PUSH, 0, 0, 1), INSN(COUNT, 1, 0, 0),
			INSN(EXIT, 0, 0, 0)),
		REFUSAL("paths that join at different depths", "instruction 3 (exit): paths join with 0 and 1 words",
			INSN(PUSH, 0, 0, 1), INSN(JZ, 0, 3, 0), INSN(PUSH, 0, 0, 2),
			INSN(EXIT, 0, 0, 0)),
		REFUSAL("no final exit or abort", "instruction 1 (drop): the last instruction must be exit or abort",
			INSN(PUSH, 0, 0, 1), INSN(DROP, 0, 0, 0)),
		REFUSAL("a jump over the end", "the last instruction must be exit or abort",
			INSN(PUSH, 0, 0, 1), INSN(JZ, 0, 2, 0), INSN(PUSH, 0, 0, 2)),
	};
	for (unsigned i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
		check(refusals[i].name, refusals[i].insn, refusals[i].n,
		      refusals[i].expect);
}

static void selftest_program_check(void)
{
	report_prefix_push("validator");
	test_refusals();
	for (unsigned i = 0; i < NINSNS(overflow) - 1; i++)
		overflow[i] = INSN(PUSH, 0, 0, (int32_t)i);
	overflow[NINSNS(overflow) - 1] = INSN(EXIT, 0, 0, 0);
	check("a stack overflow", overflow, NINSNS(overflow),
	      "instruction 32 (push): stack overflow: 33 words, at most 32");
	static const struct wire_rpn_insn sum_no_value[] = {
		INSN(PUSH, 0, 0, 1), INSN(SUM, 1, 0, 0), INSN(EXIT, 0, 0, 0),
	};
	check_kind("a sum with a key and no value under it", sum_no_value,
		   NINSNS(sum_no_value), "instruction 1 (sum): stack underflow: pops 2",
		   WIRE_AGG_SUM);
	test_header();
	test_limits();
	test_nothing_installed();
	report_prefix_pop();
}

SELFTEST(410, "programs", selftest_program_check);
