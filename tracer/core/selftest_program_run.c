/*
 * selftest_program_run.c — the interpreter, operation by operation, on
 * known values.
 *
 * Each case leaves its answer in the log (`log` of a word) and exits; the
 * answer is worked out by hand, so that it holds for 4- and 8-byte words
 * alike. Then stack shuffles, jumps, locals (zero at every run), globals,
 * the firing's own values, `load` of each size and of unmapped memory,
 * `log` of each size in the guest's byte order, `logm`/`logs` that
 * succeed, stop at a NUL, or log a FAULT token with the first address not
 * read — unmapped, or past the end of a mapped page — `strword` that
 * zeroes a string's word from its NUL on and reads no further, and a full
 * log.
 * Direct runs have no trapped context, as at the compiler hooks.
 */
#include "mm.h"
#include "cpu.h"
#include "selftest.h"
#include "selftest_programs.h"
#include "thread.h"

static struct program prog;
static struct program_log log;

/* Run insn; true if it exits with one word logged, put in *value. */
static bool run_word(const struct wire_rpn_insn *insn, unsigned n,
		     unsigned long long *value)
{
	if (!tp_program(&prog, 0, insn, n, 0, 0) || tp_run(&prog, &log) != PROGRAM_EXIT ||
	    log.words[WIRE_LOG_BYTES] != WORD)
		return false;
	memcpy(value, tp_data(&log), WORD);
	return true;
}

struct binary_case {
	uint8_t       op;
	int32_t       a, b;
	unsigned long long want;
};

#define M1 ((unsigned long long)-1)

static const struct binary_case binary_cases[] = {
	{ WIRE_RPN_ADD,  5, 7, 12 },
	{ WIRE_RPN_SUB,  5, 7, (unsigned long long)-2 },
	{ WIRE_RPN_MUL,  6, 7, 42 },
	{ WIRE_RPN_MUL,  -3, 5, (unsigned long long)-15 },
	{ WIRE_RPN_DIVU, 43, 5, 8 },
	{ WIRE_RPN_DIVU, -1, 2, M1 / 2 },
	{ WIRE_RPN_MODU, 43, 5, 3 },
	{ WIRE_RPN_DIVS, -43, 5, (unsigned long long)-8 },   /* toward 0 */
	{ WIRE_RPN_MODS, -43, 5, (unsigned long long)-3 },   /* the sign of a */
	{ WIRE_RPN_DIVS, 43, -5, (unsigned long long)-8 },
	{ WIRE_RPN_DIVU, -43, 5, (unsigned long long)-43 / 5 },  /* 64-bit, by div64 */
	{ WIRE_RPN_MODU, -43, 5, (unsigned long long)-43 % 5 },
	{ WIRE_RPN_AND,  0xf0, 0x3c, 0x30 },
	{ WIRE_RPN_OR,   0xf0, 0x3c, 0xfc },
	{ WIRE_RPN_XOR,  0xf0, 0x3c, 0xcc },
	{ WIRE_RPN_SHL,  3, 4, 48 },
	{ WIRE_RPN_SHL,  1, 64 + 3, 8 },                      /* b modulo 64 */
	{ WIRE_RPN_SHL,  1, 40, 1ull << 40 },                 /* 64 bits everywhere */
	{ WIRE_RPN_SHR,  -16, 2, M1 / 4 - 3 },                /* unsigned */
	{ WIRE_RPN_SAR,  -16, 2, (unsigned long long)-4 },         /* signed */
	{ WIRE_RPN_EQ,   3, 3, 1 },
	{ WIRE_RPN_EQ,   3, 4, 0 },
	{ WIRE_RPN_NE,   3, 3, 0 },
	{ WIRE_RPN_LTU,  -1, 1, 0 },                          /* -1 is the largest */
	{ WIRE_RPN_LT,   -1, 1, 1 },
	{ WIRE_RPN_LEU,  2, 2, 1 },
	{ WIRE_RPN_LE,   -2, -3, 0 },
	{ WIRE_RPN_LE,   -3, -2, 1 },
};

static void test_binary(void)
{
	for (unsigned c = 0; c < sizeof binary_cases / sizeof binary_cases[0]; c++) {
		const struct binary_case *k = &binary_cases[c];
		const struct wire_rpn_insn insn[] = {
			INSN(PUSH, 0, 0, k->a), INSN(PUSH, 0, 0, k->b),
			{ k->op, 0, 0, 0 }, INSN(LOG, 1, WORD, 0), INSN(EXIT, 0, 0, 0),
		};
		unsigned long long v = 0;
		bool ok = run_word(insn, NINSNS(insn), &v);
		report(ok && v == k->want, "%d %d %s: 0x%llx (want 0x%llx)", (int)k->a,
		       (int)k->b, program_mnemonic(k->op), v, k->want);
	}
	static const struct wire_rpn_insn by_zero[][5] = {
		{ INSN(PUSH, 0, 0, 1), INSN(PUSH, 0, 0, 0), INSN(DIVU, 0, 0, 0),
		  INSN(LOG, 1, 4, 0), INSN(EXIT, 0, 0, 0) },
		{ INSN(PUSH, 0, 0, 1), INSN(PUSH, 0, 0, 0), INSN(MODU, 0, 0, 0),
		  INSN(LOG, 1, 4, 0), INSN(EXIT, 0, 0, 0) },
	};
	for (unsigned c = 0; c < 2; c++) {
		bool ok = tp_program(&prog, 0, by_zero[c], 5, 0, 0);
		report(ok && tp_run(&prog, &log) == PROGRAM_FAULT, "1 0 %s: ends the "
		       "run as a fault", program_mnemonic(by_zero[c][2].op));
	}
}

static void test_unary_and_constants(void)
{
	const struct {
		const char           *what;
		struct wire_rpn_insn  insn[2];
		unsigned long long         want;
	} cases[] = {
		{ "push -1 (sign-extended)", { INSN(PUSH, 0, 0, -1), INSN(PUSH, 0, 0, -1) }, M1 },
		{ "0 not", { INSN(PUSH, 0, 0, 0), INSN(NOT, 0, 0, 0) }, M1 },
		{ "5 neg", { INSN(PUSH, 0, 0, 5), INSN(NEG, 0, 0, 0) }, (unsigned long long)-5 },
		{ "1 pushhi 2", { INSN(PUSH, 0, 0, 1), INSN(PUSHHI, 0, 0, 2) },
		  (unsigned long long)(((uint64_t)1 << 32) | 2) },
		{ "-1 pushhi 0x12345678", { INSN(PUSH, 0, 0, -1),
					    INSN(PUSHHI, 0, 0, 0x12345678) },
		  (unsigned long long)0xffffffff12345678ull },
	};
	for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const struct wire_rpn_insn insn[] = {
			cases[c].insn[0], cases[c].insn[1], INSN(LOG, 1, WORD, 0),
			INSN(EXIT, 0, 0, 0),
		};
		unsigned long long v = 0;
		bool ok = run_word(insn, NINSNS(insn), &v);
		report(ok && v == cases[c].want, "%s: 0x%llx (want 0x%llx)", cases[c].what,
		       v, cases[c].want);
	}
}

/* The log's words, as many as logged, the first logged first. */
static bool logged(const unsigned long long *want, unsigned n)
{
	if (log.words[WIRE_LOG_BYTES] != n * WORD)
		return false;
	for (unsigned i = 0; i < n; i++) {
		unsigned long long v;
		memcpy(&v, tp_data(&log) + i * WORD, WORD);
		if (v != want[i])
			return false;
	}
	return true;
}

static void test_stack(void)
{
	const struct {
		const char           *what;
		struct wire_rpn_insn  op;
		unsigned              n;           /* items left, logged */
		unsigned long long         want[3];     /* top first */
	} cases[] = {
		{ "1 2 dup: 1 2 2", INSN(DUP, 0, 0, 0), 3, { 2, 2, 1 } },
		{ "1 2 drop: 1", INSN(DROP, 0, 0, 0), 1, { 1 } },
		{ "1 2 swap: 2 1", INSN(SWAP, 0, 0, 0), 2, { 1, 2 } },
		{ "1 2 over: 1 2 1", INSN(OVER, 0, 0, 0), 3, { 1, 2, 1 } },
	};
	for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const struct wire_rpn_insn insn[] = {
			INSN(PUSH, 0, 0, 1), INSN(PUSH, 0, 0, 2), cases[c].op,
			INSN(LOG, cases[c].n, WORD, 0), INSN(EXIT, 0, 0, 0),
		};
		bool ok = tp_program(&prog, 0, insn, NINSNS(insn), 0, 0) &&
			  tp_run(&prog, &log) == PROGRAM_EXIT && logged(cases[c].want, cases[c].n);
		report(ok, "%s (log writes the top first)", cases[c].what);
	}
}

static void test_jumps(void)
{
	const struct {
		const char   *what;
		uint8_t       op;
		int32_t       cond;
		unsigned long long want;
	} cases[] = {
		{ "jz on 0 jumps", WIRE_RPN_JZ, 0, 7 },
		{ "jz on 5 goes on", WIRE_RPN_JZ, 5, 99 },
		{ "jnz on 5 jumps", WIRE_RPN_JNZ, 5, 7 },
		{ "jnz on 0 goes on", WIRE_RPN_JNZ, 0, 99 },
	};
	for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const struct wire_rpn_insn insn[] = {
			INSN(PUSH, 0, 0, cases[c].cond),
			{ cases[c].op, 0, 4, 0 },
			INSN(PUSH, 0, 0, 99),
			INSN(JMP, 0, 5, 0),
			INSN(PUSH, 0, 0, 7),                 /* 4: the label */
			INSN(LOG, 1, WORD, 0),
			INSN(EXIT, 0, 0, 0),
		};
		unsigned long long v = 0;
		bool ok = run_word(insn, NINSNS(insn), &v);
		report(ok && v == cases[c].want, "%s: %llu", cases[c].what, v);
	}
	static const struct wire_rpn_insn over[] = {
		INSN(JMP, 0, 2, 0), INSN(PUSH, 0, 0, 99), INSN(PUSH, 0, 0, 7),
		INSN(LOG, 1, WORD, 0), INSN(EXIT, 0, 0, 0),
	};
	unsigned long long v = 0;
	bool ok = run_word(over, NINSNS(over), &v);
	report(ok && v == 7, "jmp jumps over an unreachable push: %llu", v);
}

static void test_variables(void)
{
	static const struct wire_rpn_insn locals[] = {
		INSN(PUSH, 0, 0, 9), INSN(LSET, 0, 3, 0), INSN(LGET, 0, 3, 0),
		INSN(LGET, 0, WIRE_PROGRAM_LOCALS - 1, 0), INSN(LOG, 2, WORD, 0),
		INSN(EXIT, 0, 0, 0),
	};
	const unsigned long long want_locals[] = { 0, 9 };
	bool ok = tp_program(&prog, 0, locals, NINSNS(locals), 0, 0) &&
		  tp_run(&prog, &log) == PROGRAM_EXIT && logged(want_locals, 2);
	report(ok, "lset 3, lget 3 and lget %u (never set: 0)", WIRE_PROGRAM_LOCALS - 1);

	static const struct wire_rpn_insn fresh[] = {
		INSN(LGET, 0, 5, 0), INSN(PUSH, 0, 0, 1), INSN(LSET, 0, 5, 0),
		INSN(LOG, 1, WORD, 0), INSN(EXIT, 0, 0, 0),
	};
	unsigned long long first = 1, second = 1;
	ok = run_word(fresh, NINSNS(fresh), &first) && run_word(fresh, NINSNS(fresh), &second);
	report(ok && !first && !second, "locals are 0 at every run (%llu, %llu)", first,
	       second);

	const unsigned g = WIRE_PROGRAM_GLOBALS - 1;
	static const struct wire_rpn_insn globals[] = {   /* 2^32 + 11: all 64 bits */
		INSN(PUSH, 0, 0, 1), INSN(PUSHHI, 0, 0, 11),
		INSN(GSET, 0, WIRE_PROGRAM_GLOBALS - 1, 0),
		INSN(PUSH, 0, 0, 5), INSN(GADD, 0, WIRE_PROGRAM_GLOBALS - 1, 0),
		INSN(GGET, 0, WIRE_PROGRAM_GLOBALS - 1, 0), INSN(LOG, 1, WORD, 0),
		INSN(EXIT, 0, 0, 0),
	};
	unsigned long long v = 0;
	ok = run_word(globals, NINSNS(globals), &v);
	const unsigned long long want = (1ull << 32) + 16;
	report(ok && v == want && program_globals[g] == want, "gset 2^32 + 11, gadd 5, "
	       "gget: 0x%llx, and global %u holds 0x%llx after the run", v, g,
	       (unsigned long long)program_globals[g]);
	program_globals[g] = 0;
}

static void test_firing_values(void)
{
	static const struct wire_rpn_insn insn[] = {
		INSN(PROBE, 0, 0, 0), INSN(PC, 0, 0, 0), INSN(CPU, 0, 0, 0),
		INSN(THREAD, 0, 0, 0), INSN(TIME, 0, 0, 0), INSN(TIME, 0, 0, 0),
		INSN(LOG, 6, WORD, 0), INSN(EXIT, 0, 0, 0),
	};
	irqflags_t f = arch_irq_save();       /* the same CPU as the run's */
	unsigned long long cpu = this_cpu()->id, thread = thread_current()->id;
	bool ok = tp_program(&prog, 0, insn, NINSNS(insn), 0, 0) &&
		  program_run(&prog, &(const struct probe){ .addr = TP_PROBE_PC,
							     .id = TP_PROBE_ID },
			      0, &log) == PROGRAM_EXIT;
	arch_irq_restore(f);
	unsigned long long w[6] = { 0 };
	if (ok)
		memcpy(w, tp_data(&log), sizeof w);
	report(ok && w[5] == TP_PROBE_ID && w[4] == TP_PROBE_PC,
	       "probe and pc: the firing's probe %llu at 0x%llx", w[5], w[4]);
	report(ok && w[3] == cpu && w[2] == thread, "cpu and thread: %llu and %llu "
	       "(want %llu and %llu)", w[3], w[2], cpu, thread);
	if (!report(ok && w[0] >= w[1] && w[1], "time: the cycle counter, not going "
		    "back"))
		report_info("time read %llu, then %llu", w[1], w[0]);

	static const struct wire_rpn_insn no_context[][3] = {
		{ INSN(REG, 0, 0, 0), INSN(DROP, 0, 0, 0), INSN(EXIT, 0, 0, 0) },
		{ INSN(ARG, 0, 0, 0), INSN(DROP, 0, 0, 0), INSN(EXIT, 0, 0, 0) },
		{ INSN(RETVAL, 0, 0, 0), INSN(DROP, 0, 0, 0), INSN(EXIT, 0, 0, 0) },
	};
	for (unsigned c = 0; c < 3; c++) {
		ok = tp_program(&prog, 0, no_context[c], 3, 0, 0);
		report(ok && tp_run(&prog, &log) == PROGRAM_FAULT, "%s with no trapped "
		       "context (the compiler hooks') ends the run as a fault",
		       program_mnemonic(no_context[c][0].op));
	}
}

/* The two instructions that push a full word. */
static void push_word(struct wire_rpn_insn *insn, unsigned long long v)
{
	insn[0] = INSN(PUSH, 0, 0, (int32_t)(uint32_t)((uint64_t)v >> 32));
	insn[1] = INSN(PUSHHI, 0, 0, (int32_t)(uint32_t)v);
}

static const union {
	uint8_t  b[24];
	uint64_t align;
} memory = { { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	       0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
	       0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78 } };

/* One op on a pushed address (load, strword), its word logged: PROGRAM_EXIT
 * and *value, or how it ended. */
static enum program_end address_op(struct wire_rpn_insn op, uintptr_t addr,
				   unsigned long long *value)
{
	struct wire_rpn_insn insn[5];
	push_word(insn, addr);
	insn[2] = op;
	insn[3] = INSN(LOG, 1, WORD, 0);
	insn[4] = INSN(EXIT, 0, 0, 0);
	if (!tp_program(&prog, 0, insn, 5, 0, 0))
		return PROGRAM_ABORT;
	enum program_end end = tp_run(&prog, &log);
	if (end == PROGRAM_EXIT)
		memcpy(value, tp_data(&log), WORD);
	return end;
}

/* load size at addr. */
static enum program_end load(uintptr_t addr, unsigned size, unsigned long long *value)
{
	return address_op(INSN(LOAD, size, 0, 0), addr, value);
}

static void test_load(void)
{
	for (unsigned size = 1; size <= ADDR; size *= 2) {     /* the arch's widest */
		for (unsigned at = 0; at < 2; at++) {
			uintptr_t addr = (uintptr_t)&memory.b[size + at];
			union { uint8_t b[8]; uint8_t u8; uint16_t u16; uint32_t u32;
				uint64_t u64; } want = { { 0 } };
			memcpy(want.b, (const void *)addr, size);
			unsigned long long w = size == 1 ? want.u8 : size == 2 ? want.u16 :
					  size == 4 ? want.u32 : (unsigned long long)want.u64;
			unsigned long long v = 0;
			enum program_end end = load(addr, size, &v);
			report(end == PROGRAM_EXIT && v == w, "load %u at %s address: "
			       "0x%llx (want 0x%llx)", size, at ? "a misaligned" : "an aligned",
			       v, w);
		}
	}
	unsigned long long v;
	report(load(mm_unmapped_probe_addr, 4, &v) == PROGRAM_FAULT,
	       "load 4 at unmapped 0x%llx ends the run as a fault",
	       (unsigned long long)mm_unmapped_probe_addr);
	report(load(0, 1, &v) == PROGRAM_FAULT, "load 1 at 0 ends the run as a fault");
}

static void test_log_sizes(void)
{
	const unsigned long long v = (unsigned long long)0x1122334455667788ull;
	struct wire_rpn_insn insn[12];
	unsigned n = 0, sizes = 4;               /* the VM's word is 8 bytes */
	push_word(insn, v);
	n = 2;
	for (unsigned s = 1; s < sizes; s++)
		insn[n++] = INSN(DUP, 0, 0, 0);
	for (unsigned s = 0; s < sizes; s++)
		insn[n++] = INSN(LOG, 1, 1u << s, 0);
	insn[n++] = INSN(LOG, 0, 4, 0);          /* no items: nothing */
	insn[n++] = INSN(EXIT, 0, 0, 0);

	uint8_t want[15];
	uint8_t b8 = (uint8_t)v;
	uint16_t b16 = (uint16_t)v;
	uint32_t b32 = (uint32_t)v;
	uint64_t b64 = v;
	memcpy(want, &b8, 1);
	memcpy(want + 1, &b16, 2);
	memcpy(want + 3, &b32, 4);
	memcpy(want + 7, &b64, 8);
	unsigned bytes = sizes == 4 ? 15 : 7;
	bool ok = tp_program(&prog, 0, insn, n, 0, 0) && tp_run(&prog, &log) == PROGRAM_EXIT;
	report(ok && log.words[WIRE_LOG_BYTES] == bytes && !memcmp(tp_data(&log), want, bytes),
	       "log 1, 2, 4%s of 0x%llx: its low bytes in the guest's order, %u bytes",
	       sizes == 4 ? " and 8" : "", v, bytes);
	uint8_t tail[ADDR];                      /* the record's words are the arch's */
	memset(tail, 0, ADDR);
	report(ok && log.nwords == WIRE_LOG_DATA + (bytes + ADDR - 1) / ADDR &&
	       !memcmp(tp_data(&log) + bytes, tail, (ADDR - bytes % ADDR) % ADDR) &&
	       log.words[WIRE_LOG_PC] == TP_PROBE_PC && log.words[WIRE_LOG_MAJOR] == 7 &&
	       log.words[WIRE_LOG_MINOR] == 9,
	       "exit: a LOG record of %u words, pc, major 7, minor 9, its last word "
	       "zero-filled", log.nwords);
}

/* logm (string false) / logs of len at addr, alone in a program. */
static enum program_end log_memory(uintptr_t addr, unsigned long long len, bool string)
{
	struct wire_rpn_insn insn[6];
	insn[0] = INSN(PUSH, 0, 0, (int32_t)len);
	push_word(insn + 1, addr);
	insn[3] = string ? INSN(LOGS, 0, 0, 0) : INSN(LOGM, 0, 0, 0);
	insn[4] = INSN(EXIT, 0, 0, 0);
	if (!tp_program(&prog, 0, insn, 5, 0, 0))
		return PROGRAM_ABORT;
	return tp_run(&prog, &log);
}

/* The log holds one prefix of token and length, then data. */
static bool prefixed(unsigned token, unsigned length, const void *data)
{
	const uint8_t *d = tp_data(&log);
	uint16_t len;
	memcpy(&len, d + 1, 2);
	return log.words[WIRE_LOG_BYTES] == WIRE_LOG_PREFIX_BYTES + length &&
	       d[0] == token && len == length &&
	       !memcmp(d + WIRE_LOG_PREFIX_BYTES, data, length);
}

/* The log holds a FAULT token for addr. */
static bool fault_token(uintptr_t addr)
{
	unsigned long a = addr;                  /* an address: the arch's word */
	return prefixed(0xff, ADDR, &a);
}

static char text[] = "hi\0xyz probe programs";
/* A page of each arch's size, aligned so that its sparc64 alias has colour
 * 0 and the other page of its alias slot stays unmapped (mmu.c). */
static uint8_t page[16384] __attribute__((aligned(16384)));

static void test_log_memory(void)
{
	uintptr_t hole = mm_unmapped_probe_addr;
	bool ok = log_memory((uintptr_t)memory.b, 8, false) == PROGRAM_EXIT;
	report(ok && prefixed(0x00, 8, memory.b), "logm 8 bytes: DATA token, length "
	       "8, the bytes");
	ok = log_memory((uintptr_t)memory.b, 0, false) == PROGRAM_EXIT;
	report(ok && prefixed(0x00, 0, ""), "logm 0 bytes: DATA token, length 0");
	ok = log_memory(hole, 8, false) == PROGRAM_EXIT;
	report(ok && fault_token(hole), "logm at unmapped 0x%llx: FAULT token, length "
	       "%u, the address; the run goes on to exit", (unsigned long long)hole, ADDR);

	ok = log_memory((uintptr_t)text, 8, true) == PROGRAM_EXIT;
	report(ok && prefixed(0x01, 8, "hi\0\0\0\0\0\0"), "logs 8 of \"hi\": STRING "
	       "token, length 8, the NUL and zeros after it");
	ok = log_memory((uintptr_t)text + 7, 4, true) == PROGRAM_EXIT;
	report(ok && prefixed(0x01, 4, "prob"), "logs 4 of a longer string: its "
	       "first 4 bytes");
	ok = log_memory(hole, 8, true) == PROGRAM_EXIT;
	report(ok && fault_token(hole), "logs at unmapped 0x%llx: FAULT token",
	       (unsigned long long)hole);

	/* Across the end of a mapped page into an unmapped one: an alias of
	 * the first page, whose next page no alias maps. */
	uint8_t *alias = mm_alias_writable(page);
	uintptr_t end = (uintptr_t)alias + mm_page_size;
	if (!alias || mm_virt_to_phys((void *)end) != (uintptr_t)-1) {
		report(false, "a mapped page followed by an unmapped one (alias %p)",
		       (void *)alias);
	} else {
		memset(alias + mm_page_size - 5, 'x', 5);
		ok = log_memory(end - 5, 10, false) == PROGRAM_EXIT;
		report(ok && fault_token(end), "logm of 10 bytes from 5 before an "
		       "unmapped page: FAULT token with the page's first address 0x%llx",
		       (unsigned long long)end);
		ok = log_memory(end - 5, 10, true) == PROGRAM_EXIT;
		report(ok && fault_token(end), "logs of the same: FAULT token with 0x%llx",
		       (unsigned long long)end);
		alias[mm_page_size - 1] = 0;
		ok = log_memory(end - 5, 10, true) == PROGRAM_EXIT;
		report(ok && prefixed(0x01, 10, "xxxx\0\0\0\0\0\0"), "logs that meets "
		       "its NUL before the unmapped page reads no further");
	}
	if (alias)
		mm_alias_release(alias);
}

/* strword k at addr. */
static enum program_end string_word(uintptr_t addr, unsigned k, unsigned long long *value)
{
	return address_op(INSN(STRWORD, k, 0, 0), addr, value);
}

/* A word of a string as a compare needs it: the bytes in memory order, 0
 * from the NUL on; the reads stop at the NUL (a string that ends just
 * before an unmapped page is read safely) and a fault ends the run. */
static void test_string_word(void)
{
	unsigned long long v = 1, want = 0;
	memcpy(&want, text + 7, WORD);
	report(string_word((uintptr_t)text + 7, 0, &v) == PROGRAM_EXIT && v == want,
	       "strword 0 of \"probe programs\": its first %u bytes", WORD);
	want = 0;
	memcpy(&want, "hi", 2);
	report(string_word((uintptr_t)text, 0, &v) == PROGRAM_EXIT && v == want,
	       "strword 0 of \"hi\": zeros from its NUL on, not \"xyz\" after it");
	report(string_word((uintptr_t)text, 1, &v) == PROGRAM_EXIT && v == 0,
	       "strword 1 of \"hi\": 0, past its NUL");
	report(string_word(mm_unmapped_probe_addr, 0, &v) == PROGRAM_FAULT,
	       "strword at unmapped 0x%llx ends the run as a fault",
	       (unsigned long long)mm_unmapped_probe_addr);
	uint8_t *alias = mm_alias_writable(page);
	uintptr_t end = (uintptr_t)alias + mm_page_size;
	if (!alias || mm_virt_to_phys((void *)end) != (uintptr_t)-1) {
		report(false, "a mapped page followed by an unmapped one (alias %p)",
		       (void *)alias);
	} else {
		memset(alias + mm_page_size - 5, 'x', 5);
		report(string_word(end - 5, 1, &v) == PROGRAM_FAULT, "strword 1 of a "
		       "string that runs into an unmapped page: a fault");
		alias[mm_page_size - 2] = 0;
		report(string_word(end - 5, 1, &v) == PROGRAM_EXIT && v == 0, "strword 1 "
		       "of \"xxx\" before an unmapped page: 0, nothing read past the NUL");
	}
	if (alias)
		mm_alias_release(alias);
}

/* A log that would pass WIRE_PROGRAM_LOG_BYTES ends the run as a fault. */
static void test_log_full(void)
{
	const unsigned most = WIRE_PROGRAM_LOG_BYTES - WIRE_LOG_PREFIX_BYTES;
	bool ok = log_memory((uintptr_t)&prog, most, false) == PROGRAM_EXIT;
	report(ok && log.words[WIRE_LOG_BYTES] == WIRE_PROGRAM_LOG_BYTES,
	       "logm of %u bytes fills the log buffer: %lu bytes", most,
	       log.words[WIRE_LOG_BYTES]);
	report(log_memory((uintptr_t)&prog, most + 1, false) == PROGRAM_FAULT,
	       "logm of %u bytes would pass it: the run ends as a fault", most + 1);

	struct wire_rpn_insn insn[8];
	insn[0] = INSN(PUSH, 0, 0, (int32_t)most);
	push_word(insn + 1, (uintptr_t)&prog);
	insn[3] = INSN(LOGM, 0, 0, 0);
	insn[4] = INSN(PUSH, 0, 0, 1);
	insn[5] = INSN(LOG, 1, 1, 0);
	insn[6] = INSN(EXIT, 0, 0, 0);
	ok = tp_program(&prog, 0, insn, 7, 0, 0);
	report(ok && tp_run(&prog, &log) == PROGRAM_FAULT, "log 1 byte into a full "
	       "buffer: the run ends as a fault");

	/* Room for one byte of data, not for a FAULT token's word. */
	insn[0] = INSN(PUSH, 0, 0, (int32_t)(most - WIRE_LOG_PREFIX_BYTES - 1));
	insn[4] = INSN(PUSH, 0, 0, 1);
	push_word(insn + 5, mm_unmapped_probe_addr);
	struct wire_rpn_insn more[] = {
		insn[0], insn[1], insn[2], insn[3], insn[4], insn[5], insn[6],
		INSN(LOGM, 0, 0, 0), INSN(EXIT, 0, 0, 0),
	};
	ok = tp_program(&prog, 0, more, NINSNS(more), 0, 0);
	report(ok && tp_run(&prog, &log) == PROGRAM_FAULT, "a FAULT token that "
	       "would pass the buffer ends the run as a fault");
}

static void test_ends(void)
{
	static const struct wire_rpn_insn aborts[] = {
		INSN(PUSH, 0, 0, 1), INSN(LOG, 1, 1, 0), INSN(ABORT, 0, 0, 0),
	};
	bool ok = tp_program(&prog, 0, aborts, NINSNS(aborts), 0, 0);
	report(ok && tp_run(&prog, &log) == PROGRAM_ABORT, "abort ends the run and "
	       "emits nothing");
}

static void selftest_program_run(void)
{
	report_prefix_push("interpreter");
	test_binary();
	test_unary_and_constants();
	test_stack();
	test_jumps();
	test_variables();
	test_firing_values();
	test_load();
	test_log_sizes();
	test_log_memory();
	test_string_word();
	test_log_full();
	test_ends();
	report_prefix_pop();
}

SELFTEST(420, "programs", selftest_program_run);
