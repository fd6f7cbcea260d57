/*
 * program_run.c — the interpreter: one firing of a probe program.
 *
 * A switch over the operations on a stack of words, with locals zeroed
 * per run and globals shared by every program and CPU (gset one store,
 * gadd an atomic add). It checks nothing the validator did. What only the
 * run can know ends it like `abort`, as a fault the caller counts: a read
 * that faults (`load`, through peek.c's trap_try), a division by 0, a log
 * past WIRE_PROGRAM_LOG_BYTES, a register, argument or return value the
 * context lacks (none at all at the compiler hooks, nor a stack). `stack`
 * walks the trapped context's stack (the arch's tarch_stack_walk) and
 * pushes the id stacks.c gives it; `strword` reads a string only up to
 * its NUL and the word asked, as `logs` does. In `logm`/`logs` a
 * fault instead logs a FAULT token — the word size, then the first address
 * not read — and the run goes on, as in DProbes. The log buffer is the LOG
 * record being built: data from its DATA word on, in the guest's order.
 * The word is 64 bits on every arch (prog_word): division is div64.c's,
 * never libgcc's, and globals are read and written whole (atomic64_*);
 * an aggregation's value is the word; thread-local words are
 * program_tls.c's.
 */
#include "program.h"
#include "aggregate.h"
#include "stack.h"
#include "arch.h"
#include "atomic.h"
#include "cpu.h"
#include "div64.h"
#include "init.h"
#include "kstring.h"
#include "thread.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

#define WORD_BYTES (sizeof(prog_word))
#define WORD_BITS  (8 * WORD_BYTES)
#define ADDR_BYTES (sizeof(uintptr_t))      /* a fault token's address */

volatile prog_word program_globals[WIRE_PROGRAM_GLOBALS];

/* Nanoseconds since boot from the cycle counter: cycles times ns per
 * cycle in 24 fractional bits, worked out once at init (a division the
 * fire path does not make: on i386 it is libgcc's, which a probe may
 * trap). The counter is split into halves so that no product overflows
 * 64 bits while the clock runs faster than 4 MHz (a cycle under 256 ns:
 * i386's TSC, sparc64's 100 MHz %tick). */
#define NS_SHIFT 24
static uint64_t ns_per_cycle;

static void time_init(void)
{
	ns_per_cycle = (1000000000ull << NS_SHIFT) / arch_cycles_hz();
}
KERNEL_INIT(time_init);

static uint64_t time_ns(void)
{
	uint64_t c = arch_cycles();
	return ((c >> 32) * ns_per_cycle << (32 - NS_SHIFT)) +
	       ((c & 0xffffffffu) * ns_per_cycle >> NS_SHIFT);
}

/* The low `size` bytes of v at out, in the guest's byte order. */
static void put_value(uint8_t *out, prog_word v, unsigned size)
{
	uint8_t b8 = (uint8_t)v;
	uint16_t b16 = (uint16_t)v;
	uint32_t b32 = (uint32_t)v;
	uint64_t b64 = v;
	switch (size) {
	case 1: memcpy(out, &b8, 1); break;
	case 2: memcpy(out, &b16, 2); break;
	case 4: memcpy(out, &b32, 4); break;
	default: memcpy(out, &b64, 8); break;
	}
}

/* A prefix: token byte, then the 16-bit length in the guest's order. */
static void put_prefix(uint8_t *out, unsigned token, unsigned length)
{
	out[0] = (uint8_t)token;
	put_value(out + 1, length, 2);
}

#define LOG_TOKEN(name, token, meaning) LOG_TOKEN_##name = token,
enum { WIRE_LOG_TOKENS(LOG_TOKEN) };
#undef LOG_TOKEN

/* logm (string false) / logs (string true) of length bytes at addr into
 * data + *used. False if the log buffer has no room for what it writes. */
static bool log_memory(uint8_t *data, unsigned *used, prog_word addr,
		       prog_word length, bool string)
{
	unsigned room = WIRE_PROGRAM_LOG_BYTES - *used;
	uint8_t *out = data + *used;
	uintptr_t fault;

	if (room < WIRE_LOG_PREFIX_BYTES || length > room - WIRE_LOG_PREFIX_BYTES)
		return false;
	long got = (uintptr_t)addr != addr ? -1 :   /* past the address space */
		tracer_copy(out + WIRE_LOG_PREFIX_BYTES, (uintptr_t)addr,
			    (unsigned long)length, string, &fault);
	if (got < 0) {
		if ((uintptr_t)addr != addr)
			fault = (uintptr_t)addr;
		if (room - WIRE_LOG_PREFIX_BYTES < ADDR_BYTES)
			return false;
		put_prefix(out, LOG_TOKEN_FAULT, ADDR_BYTES);
		put_value(out + WIRE_LOG_PREFIX_BYTES, fault, ADDR_BYTES);
		*used += WIRE_LOG_PREFIX_BYTES + ADDR_BYTES;
		return true;
	}
	if (string)        /* exactly length bytes: zeros after the NUL */
		memset(out + WIRE_LOG_PREFIX_BYTES + got, 0, length - (unsigned long)got);
	put_prefix(out, string ? LOG_TOKEN_STRING : LOG_TOKEN_DATA, (unsigned)length);
	*used += WIRE_LOG_PREFIX_BYTES + (unsigned)length;
	return true;
}

/* Zero the last word's unused bytes and fill in the record's head. */
static void finish_log(struct program_log *log, const struct program *prog,
		       const struct probe *p, unsigned used)
{
	uint8_t *data = (uint8_t *)&log->words[WIRE_LOG_DATA];
	unsigned words = (used + sizeof log->words[0] - 1) / sizeof log->words[0];
	memset(data + used, 0, words * sizeof log->words[0] - used);
	log->words[WIRE_LOG_PC] = p->addr;
	log->words[WIRE_LOG_MAJOR] = prog->head.major;
	log->words[WIRE_LOG_MINOR] = prog->head.minor;
	log->words[WIRE_LOG_BYTES] = used;
	log->nwords = WIRE_LOG_DATA + words;
}

enum program_end program_run(const struct program *prog, const struct probe *p,
			     const struct tarch_context *ctx,
			     struct program_log *log)
{
	prog_word st[WIRE_PROGRAM_STACK];
	prog_word local[WIRE_PROGRAM_LOCALS] = { 0 };
	prog_word keys[WIRE_AGG_MAX_KEYS], a, b;
	unsigned long v;                        /* what the context gives */
	uint64_t v64;
	int64_t s64;
	uint8_t *data = (uint8_t *)&log->words[WIRE_LOG_DATA];
	unsigned sp = 0, used = 0;

#define PUSH(x)  (st[sp++] = (x))
#define POP()    (st[--sp])
#define TOP      (st[sp - 1])
#define BINARY(expr) do { b = POP(); a = TOP; TOP = (expr); } while (0)

	for (unsigned pc = 0;; pc++) {
		const struct wire_rpn_insn *i = &prog->insn[pc];
		switch (i->op) {
		case WIRE_RPN_PUSH:   PUSH((prog_word)(prog_sword)i->imm); break;
		case WIRE_RPN_PUSHHI:
			TOP = TOP << 32 | (uint32_t)i->imm;
			break;
		case WIRE_RPN_REG:
			if (!ctx || !tarch_context_reg(ctx, p, i->a, &v))
				return PROGRAM_FAULT;
			PUSH(v);
			break;
		case WIRE_RPN_ARG:
			if (!ctx || !tracer_arg(ctx, p, i->a, &v))   /* by its map */
				return PROGRAM_FAULT;
			PUSH(v);
			break;
		case WIRE_RPN_ARG64:
			/* A 64-bit parameter: one word where the arch's has 64
			 * bits, else two, the low one first (both 32-bit arches
			 * here are little-endian in their argument words) */
			if (!ctx || !tracer_arg(ctx, p, i->a, &v))
				return PROGRAM_FAULT;
			a = v;
			if (sizeof(unsigned long) < sizeof(prog_word)) {
				if (!tracer_arg(ctx, p, i->a + 1u, &v))
					return PROGRAM_FAULT;
				a |= (prog_word)v << 32;
			}
			PUSH(a);
			break;
		case WIRE_RPN_RETVAL:
			if (!ctx || !tarch_context_retval(ctx, p, &v))
				return PROGRAM_FAULT;
			PUSH(v);
			break;
		case WIRE_RPN_PROBE:  PUSH(p->id); break;
		case WIRE_RPN_CPU:    PUSH(this_cpu()->id); break;
		case WIRE_RPN_THREAD: PUSH(thread_current()->id); break;
		case WIRE_RPN_TIME:   PUSH(arch_cycles()); break;
		case WIRE_RPN_PC:     PUSH(p->addr); break;
		case WIRE_RPN_TIMENS: PUSH(time_ns()); break;
		case WIRE_RPN_STACK: {
			uintptr_t pcs[WIRE_STACK_MAX_DEPTH];
			if (!ctx)
				return PROGRAM_FAULT;
			unsigned n = tarch_stack_walk(ctx, p, pcs,
						      i->a ? i->a : WIRE_STACK_DEPTH);
			PUSH(stack_intern(pcs, n));
			break;
		}
		case WIRE_RPN_LOAD:
			if ((uintptr_t)TOP != TOP || !tracer_read((uintptr_t)TOP, i->a, &v))
				return PROGRAM_FAULT;
			TOP = v;
			break;
		case WIRE_RPN_STRWORD: {
			/* Up to word a's end, stopping after the NUL; the rest stays 0 */
			prog_word str[WIRE_PROGRAM_STRING_BYTES / WORD_BYTES] = { 0 };
			uintptr_t fault;
			if ((uintptr_t)TOP != TOP ||
			    tracer_copy(str, (uintptr_t)TOP, (i->a + 1u) * WORD_BYTES, true,
					&fault) < 0)
				return PROGRAM_FAULT;
			TOP = str[i->a];
			break;
		}
		case WIRE_RPN_ADD:  BINARY(a + b); break;
		case WIRE_RPN_SUB:  BINARY(a - b); break;
		case WIRE_RPN_MUL:  BINARY(a * b); break;
		case WIRE_RPN_DIVU:
			if (!TOP)
				return PROGRAM_FAULT;
			BINARY(div64_u(a, b, &v64));
			break;
		case WIRE_RPN_MODU:
			if (!TOP)
				return PROGRAM_FAULT;
			BINARY((div64_u(a, b, &v64), v64));
			break;
		case WIRE_RPN_DIVS:
			if (!TOP)
				return PROGRAM_FAULT;
			BINARY((prog_word)div64_s((prog_sword)a, (prog_sword)b, &s64));
			break;
		case WIRE_RPN_MODS:
			if (!TOP)
				return PROGRAM_FAULT;
			BINARY((div64_s((prog_sword)a, (prog_sword)b, &s64), (prog_word)s64));
			break;
		case WIRE_RPN_AND:  BINARY(a & b); break;
		case WIRE_RPN_OR:   BINARY(a | b); break;
		case WIRE_RPN_XOR:  BINARY(a ^ b); break;
		case WIRE_RPN_SHL:  BINARY(a << (b & (WORD_BITS - 1))); break;
		case WIRE_RPN_SHR:  BINARY(a >> (b & (WORD_BITS - 1))); break;
		case WIRE_RPN_SAR:
			BINARY((prog_word)((prog_sword)a >> (b & (WORD_BITS - 1))));
			break;
		case WIRE_RPN_EQ:   BINARY(a == b); break;
		case WIRE_RPN_NE:   BINARY(a != b); break;
		case WIRE_RPN_LTU:  BINARY(a < b); break;
		case WIRE_RPN_LEU:  BINARY(a <= b); break;
		case WIRE_RPN_LT:   BINARY((prog_sword)a < (prog_sword)b); break;
		case WIRE_RPN_LE:   BINARY((prog_sword)a <= (prog_sword)b); break;
		case WIRE_RPN_NOT:  TOP = ~TOP; break;
		case WIRE_RPN_NEG:  TOP = 0 - TOP; break;
		case WIRE_RPN_DUP:  a = TOP; PUSH(a); break;
		case WIRE_RPN_DROP: sp--; break;
		case WIRE_RPN_SWAP:
			a = TOP; TOP = st[sp - 2]; st[sp - 2] = a;
			break;
		case WIRE_RPN_OVER: a = st[sp - 2]; PUSH(a); break;
		case WIRE_RPN_JMP:  pc = i->b - 1u; break;
		case WIRE_RPN_JZ:
			if (!POP())
				pc = i->b - 1u;
			break;
		case WIRE_RPN_JNZ:
			if (POP())
				pc = i->b - 1u;
			break;
		case WIRE_RPN_LGET: PUSH(local[i->b]); break;
		case WIRE_RPN_LSET: local[i->b] = POP(); break;
		case WIRE_RPN_GGET: PUSH(atomic64_read(&program_globals[i->b])); break;
		case WIRE_RPN_GSET: atomic64_set(&program_globals[i->b], POP()); break;
		case WIRE_RPN_GADD: atomic64_fetch_add(&program_globals[i->b], POP()); break;
		case WIRE_RPN_TGET: PUSH(program_tls_get(i->b)); break;
		case WIRE_RPN_TSET: a = POP(); program_tls_set(i->b, a); break;
		case WIRE_RPN_LOG:
			if ((unsigned)i->a * i->b > WIRE_PROGRAM_LOG_BYTES - used)
				return PROGRAM_FAULT;
			for (unsigned k = 0; k < i->a; k++, used += i->b)
				put_value(data + used, POP(), i->b);
			break;
		case WIRE_RPN_LOGM:
		case WIRE_RPN_LOGS:
			a = POP();                      /* the address */
			b = POP();                      /* the length */
			if (!log_memory(data, &used, a, b, i->op == WIRE_RPN_LOGS))
				return PROGRAM_FAULT;
			break;
		case WIRE_RPN_EXIT:
			finish_log(log, prog, p, used);
			return PROGRAM_EXIT;
		case WIRE_RPN_ABORT:
			return PROGRAM_ABORT;
		case WIRE_RPN_COUNT:
		case WIRE_RPN_SUM:
		case WIRE_RPN_MIN:
		case WIRE_RPN_MAX:
		case WIRE_RPN_AVG:
		case WIRE_RPN_QUANTIZE:
		case WIRE_RPN_LQUANTIZE:
			for (unsigned k = 0; k < i->a; k++)
				keys[k] = POP();
			a = i->op == WIRE_RPN_COUNT ? 0 : POP();
			agg_update(prog->slot, i->b, prog->head.agg_kind[i->b], i->a,
				   keys, (int64_t)a);
			break;
		default:
			return PROGRAM_FAULT;           /* the validator let none in */
		}
	}
#undef PUSH
#undef POP
#undef TOP
#undef BINARY
}
