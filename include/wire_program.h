/*
 * wire_program.h — the probe-program part of the wire (wire.h includes it):
 * the RPN instruction set the guest's validator and interpreter and the
 * host's assembler and D compiler share, the aggregations a program keeps
 * and the AGGS frames that carry them, and the call stacks (`stack`) and
 * the STACKS frames. One table each, X-macros as in wire.h, read by the
 * host through bench/wire/cdefs.py (which merges a header's includes from
 * include/ into it, so `include/wire.h` still names every table).
 */
#ifndef WIRE_PROGRAM_H
#define WIRE_PROGRAM_H

#include <stdint.h>
#include "wire.h"

/*
 * Probe programs (seed 002's RPN probe handlers; tracer/core/program.c runs
 * them, bench/program/ compiles them). A program is struct wire_program then
 * `ninsns` struct wire_rpn_insn, in the guest's byte order, loaded with
 * `program load SLOT OFFSET HEX` and checked by `program check SLOT BYTES`
 * before a probe may run it (`probe program ID... SLOT`). It runs on a
 * stack of 64-bit words (prog_word), may only jump forward (it ends in at most
 * `ninsns` steps), and ends with `exit` (its log buffer becomes a LOG
 * record with the program's major/minor) or `abort` (nothing). A fault
 * while it reads memory ends it like `abort`, except in `logm`/`logs`,
 * which log a fault token instead of the data (WIRE_LOG_TOKENS).
 */
/* The VM's word: 64 bits on every arch, so that a program's values —
 * timestamps in ns, 64-bit arguments, globals, thread-locals — are DTrace's
 * whatever the arch's register is (a 32-bit arch's registers, arguments
 * and addresses are zero-extended into it). */
typedef uint64_t prog_word;
typedef int64_t  prog_sword;
#define WIRE_PROGRAM_WORD_BYTES 8

#define WIRE_PROGRAMS           16    /* program slots */
#define WIRE_PROGRAM_MAX_INSNS  256
#define WIRE_PROGRAM_STACK      32    /* words */
#define WIRE_PROGRAM_LOCALS     16    /* per firing, 0 when it starts */
#define WIRE_PROGRAM_GLOBALS    64    /* shared by every program and CPU */
#define WIRE_PROGRAM_LOG_BYTES  192   /* a firing's log buffer */
#define WIRE_PROGRAM_MAX_AGGS   8     /* aggregations one program declares */
#define WIRE_AGG_MAX_KEYS       4     /* 64-bit words each (a stack id is one) */
#define WIRE_PROGRAM_MAX_ARG    16    /* `arg N` reads arguments 0..N-1 (stack-passed too) */
#define WIRE_PROGRAM_TLS        16    /* thread-local words (`tget`/`tset`) per thread */
#define WIRE_PROGRAM_TLS_THREADS 128  /* threads that may hold them at once; a
				       * store past that is counted, not made */
#define WIRE_PROGRAM_STRING_BYTES 64   /* `strword` reads at most this much of a
				       * string (and D's printf logs a %s so) */
#define WIRE_LQUANTIZE_MAX      121   /* lquantize's last bucket: 0 counts below
				       * its range, 1..levels in it, levels + 1
				       * above; < WIRE_AGG_MAX_BUCKETS */

/* Call stacks (`stack [N]`; tracer/core/stacks.c): a firing's return
 * addresses, innermost first, the tracer's own frames never among them. Each
 * CPU keeps a table of the distinct stacks it saw; a stack's id (an
 * aggregation key like any other) is WIRE_STACK_ID(cpu, entry), never 0;
 * a stack that finds no room pushes WIRE_STACK_NONE and is counted in the
 * STACKS frame's `dropped`. */
#define WIRE_STACK_DEPTH        16    /* frames of `stack` with no operand */
#define WIRE_STACK_MAX_DEPTH    32    /* and at most */
#define WIRE_STACK_ID(cpu, entry) (((unsigned long)(cpu) << 16) | ((entry) + 1u))
#define WIRE_STACK_NONE         0
/* A frame with this bit set is a candidate the walk could not judge: a
 * sampled PC's caller if the PC's function has not built its frame yet (a
 * SPARC leaf, its caller in %o7). The host keeps it, the bit cleared, only
 * if no frame-building instruction lies between the function's start and
 * the PC (bench/trace/stacks.py settle_leaf_callers); frames are aligned
 * instruction addresses, so the bit is free. */
#define WIRE_STACK_LEAF_CALLER  1ul
/* A candidate takes none of the N frames asked for: a walk that recorded
 * one may go one frame further, that frame marked so, and the host keeps
 * it only where it drops the candidate (bit 1: frames are 4-aligned). */
#define WIRE_STACK_PAST_LIMIT   2ul

/* Stack effects that depend on operand a (WIRE_RPN_OPS' pops column). */
#define WIRE_RPN_POPS_A         100   /* a items */
#define WIRE_RPN_POPS_A1        101   /* a items, then one more */

/* X(NAME, opcode, pops, pushes, "mnemonic", "operands", "what it does").
 * Operands, in struct wire_rpn_insn: imm (a 32-bit constant, sign-extended),
 * reg (a: TARCH_REGISTERS number), n (a: a small number), size (a: 1, 2,
 * 4 or 8 bytes; `load`'s 8 only where the arch's address is 8 bytes), label (b: the index of a later
 * instruction), local / global (b: the variable), size,n (b: size, a:
 * how many items), agg,n (b: the aggregation, a: keys, at most
 * WIRE_AGG_MAX_KEYS; the first key popped, the top, is key[0] of the
 * entry; imm: WIRE_RPN_AGG_FLAGS), tls (b: the thread-local word), word
 * (a: an 8-byte word of a string, below WIRE_PROGRAM_STRING_BYTES / 8: `strword` lets a program compare a string with a constant one
 * word at a time, bounded and fault-safe).
 * Binary operators pop b then a and push a OP b;
 * comparisons push 1 or 0; the *U ones and shr compare and shift unsigned. */
#define WIRE_RPN_OPS(X) \
	X(PUSH,     0x01, 0, 1, "push",     "imm",    "push the constant") \
	X(PUSHHI,   0x02, 1, 1, "pushhi",   "imm",    "top = top << 32 | (imm as 32 unsigned bits): a 64-bit constant") \
	X(REG,      0x03, 0, 1, "reg",      "reg",    "push a register of the trapped context") \
	X(ARG,      0x04, 0, 1, "arg",      "n",      "push argument a as the caller passed it (0 first)") \
	X(ARG64,    0x0e, 0, 1, "arg64",    "n",      "push a 64-bit argument starting at argument word a: on a 32-bit arch words a (low) and a + 1 (high), else word a") \
	X(RETVAL,   0x05, 0, 1, "retval",   "",       "push the value the function returns (at a return probe)") \
	X(PROBE,    0x06, 0, 1, "probe",    "",       "push the probe's id") \
	X(CPU,      0x07, 0, 1, "cpu",      "",       "push this CPU's number") \
	X(THREAD,   0x08, 0, 1, "thread",   "",       "push the thread's id") \
	X(TIME,     0x09, 0, 1, "time",     "",       "push the cycle counter") \
	X(PC,       0x0a, 0, 1, "pc",       "",       "push the probed instruction's address") \
	X(TIMENS,   0x0c, 0, 1, "timens",   "",       "push the time since boot in ns") \
	X(LOAD,     0x0b, 1, 1, "load",     "size",   "replace an address by the a-byte value there (a fault ends the program)") \
	X(STRWORD,  0x43, 1, 1, "strword",  "word",   "replace an address by word a of the string there, its bytes from the NUL on 0 (reads up to the NUL; a fault ends the program)") \
	X(STACK,    0x0d, 0, 1, "stack",    "depth",  "push the id of the firing's call stack, at most a frames (0: WIRE_STACK_DEPTH)") \
	X(ADD,      0x10, 2, 1, "add",      "",       "a + b") \
	X(SUB,      0x11, 2, 1, "sub",      "",       "a - b") \
	X(MUL,      0x12, 2, 1, "mul",      "",       "a * b") \
	X(DIVU,     0x13, 2, 1, "divu",     "",       "a / b, unsigned (b = 0 ends the program)") \
	X(MODU,     0x14, 2, 1, "modu",     "",       "a % b, unsigned (b = 0 ends the program)") \
	X(DIVS,     0x23, 2, 1, "divs",     "",       "a / b, signed, toward 0 (b = 0 ends the program)") \
	X(MODS,     0x24, 2, 1, "mods",     "",       "a % b, signed, a's sign (b = 0 ends the program)") \
	X(AND,      0x15, 2, 1, "and",      "",       "a & b") \
	X(OR,       0x16, 2, 1, "or",       "",       "a | b") \
	X(XOR,      0x17, 2, 1, "xor",      "",       "a ^ b") \
	X(SHL,      0x18, 2, 1, "shl",      "",       "a << b (b modulo 64)") \
	X(SHR,      0x19, 2, 1, "shr",      "",       "a >> b, unsigned") \
	X(SAR,      0x1a, 2, 1, "sar",      "",       "a >> b, signed") \
	X(EQ,       0x1b, 2, 1, "eq",       "",       "a == b") \
	X(NE,       0x1c, 2, 1, "ne",       "",       "a != b") \
	X(LTU,      0x1d, 2, 1, "ltu",      "",       "a < b, unsigned") \
	X(LEU,      0x1e, 2, 1, "leu",      "",       "a <= b, unsigned") \
	X(LT,       0x1f, 2, 1, "lt",       "",       "a < b, signed") \
	X(LE,       0x20, 2, 1, "le",       "",       "a <= b, signed") \
	X(NOT,      0x21, 1, 1, "not",      "",       "~a") \
	X(NEG,      0x22, 1, 1, "neg",      "",       "-a") \
	X(DUP,      0x28, 1, 2, "dup",      "",       "a -- a a") \
	X(DROP,     0x29, 1, 0, "drop",     "",       "a --") \
	X(SWAP,     0x2a, 2, 2, "swap",     "",       "a b -- b a") \
	X(OVER,     0x2b, 2, 3, "over",     "",       "a b -- a b a") \
	X(JMP,      0x30, 0, 0, "jmp",      "label",  "go on at the label") \
	X(JZ,       0x31, 1, 0, "jz",       "label",  "pop; go on at the label if it was 0") \
	X(JNZ,      0x32, 1, 0, "jnz",      "label",  "pop; go on at the label if it was not 0") \
	X(LGET,     0x38, 0, 1, "lget",     "local",  "push local variable b") \
	X(LSET,     0x39, 1, 0, "lset",     "local",  "pop into local variable b") \
	X(GGET,     0x3a, 0, 1, "gget",     "global", "push global variable b") \
	X(GSET,     0x3b, 1, 0, "gset",     "global", "pop into global variable b (one atomic store)") \
	X(GADD,     0x3c, 1, 0, "gadd",     "global", "pop and add to global variable b (atomically)") \
	X(TGET,     0x3d, 0, 1, "tget",     "tls",    "push this thread's thread-local word b (0 if never set)") \
	X(TSET,     0x3e, 1, 0, "tset",     "tls",    "pop into this thread's thread-local word b (no room: counted, not stored)") \
	X(LOG,      0x40, WIRE_RPN_POPS_A, 0, "log", "size,n", "pop a items, the top first, and log b bytes of each") \
	X(LOGM,     0x41, 2, 0, "logm",     "",       "pop an address, then a length: log that memory behind a prefix") \
	X(LOGS,     0x42, 2, 0, "logs",     "",       "pop an address, then a length: log the string there, up to its NUL") \
	X(EXIT,     0x48, 0, 0, "exit",     "",       "emit the log buffer as a LOG record; end") \
	X(ABORT,    0x49, 0, 0, "abort",    "",       "end; emit nothing") \
	X(COUNT,    0x50, WIRE_RPN_POPS_A,  0, "count",    "agg,n", "pop a keys; the aggregation counts one") \
	X(SUM,      0x51, WIRE_RPN_POPS_A1, 0, "sum",      "agg,n", "pop a keys, then a value; add it") \
	X(MIN,      0x52, WIRE_RPN_POPS_A1, 0, "min",      "agg,n", "pop a keys, then a value; keep the least") \
	X(MAX,      0x53, WIRE_RPN_POPS_A1, 0, "max",      "agg,n", "pop a keys, then a value; keep the greatest") \
	X(AVG,      0x54, WIRE_RPN_POPS_A1, 0, "avg",      "agg,n", "pop a keys, then a value; sum and count it") \
	X(QUANTIZE, 0x55, WIRE_RPN_POPS_A1, 0, "quantize", "agg,n", "pop a keys, then a value; count it in its power-of-two bucket") \
	X(LQUANTIZE, 0x56, WIRE_RPN_POPS_A1, 0, "lquantize", "agg,n", "pop a keys, then a bucket the program computed (0 .. WIRE_LQUANTIZE_MAX, clamped); count one there")

/* An aggregation operation's imm: how it took a value narrower than 64
 * bits when the word was the arch's; the word is 64 bits now, so the flag
 * changes nothing, and is kept so that programs that set it still load.
 * X(name, bit, meaning) */
#define WIRE_RPN_AGG_FLAGS(X) \
	X(UNSIGNED, 1, "the value is unsigned: zero-extended, not sign-extended, to 64 bits")

#define WIRE_RPN_AGG_FLAG_ENUM(name, bit, meaning) WIRE_RPN_AGG_##name = bit,
enum wire_rpn_agg_flag { WIRE_RPN_AGG_FLAGS(WIRE_RPN_AGG_FLAG_ENUM) };

#define WIRE_RPN_ENUM(name, op, pops, pushes, mnemonic, operands, what) \
	WIRE_RPN_##name = op,
enum wire_rpn_op { WIRE_RPN_OPS(WIRE_RPN_ENUM) };

/* The kinds of aggregation, as a program declares them (agg_kind[]) and as
 * their entries come home. X(name, value, "the instruction that feeds it") */
#define WIRE_AGG_KINDS(X) \
	X(COUNT,    1, "count") \
	X(SUM,      2, "sum") \
	X(MIN,      3, "min") \
	X(MAX,      4, "max") \
	X(AVG,      5, "avg") \
	X(QUANTIZE, 6, "quantize") \
	X(LQUANTIZE, 7, "lquantize")

#define WIRE_AGG_ENUM(name, value, meaning) WIRE_AGG_##name = value,
enum wire_agg_kind { WIRE_AGG_KINDS(WIRE_AGG_ENUM) };

/* The prefix `logm` and `logs` put before what they log: a token byte and
 * a 16-bit length (guest byte order), then `length` bytes. X(name, token
 * byte, meaning) */
#define WIRE_LOG_TOKENS(X) \
	X(DATA,   0x00, "the memory, length bytes of it") \
	X(STRING, 0x01, "a string of at most length bytes, NUL-terminated inside them if shorter") \
	X(FAULT,  0xff, "-1: reading it faulted; length is the word size, the data the faulting address")

#define WIRE_LOG_PREFIX_BYTES 3

struct wire_program {
	uint16_t ninsns;
	uint16_t major;           /* LOG records carry major/minor: the */
	uint16_t minor;           /* template that formats them on the host */
	uint8_t  naggs;           /* aggregations declared, <= WIRE_PROGRAM_MAX_AGGS */
	uint8_t  reserved;
	uint8_t  agg_kind[8];     /* WIRE_PROGRAM_MAX_AGGS entries of WIRE_AGG_KINDS */
};

struct wire_rpn_insn {
	uint8_t  op;              /* WIRE_RPN_OPS */
	uint8_t  a;
	uint16_t b;
	int32_t  imm;
};

/* AGGS frame: struct wire_aggs, then `count` entries, each a struct
 * wire_agg followed by `nbuckets` struct wire_agg_bucket. One frame per
 * CPU per WIRE_MAX_PAYLOAD (at least one per CPU, for its `dropped`); the
 * host merges the CPUs' entries. An entry keeps at most
 * WIRE_AGG_MAX_BUCKETS buckets, so that it fits a frame whole; a value
 * for a further bucket counts as dropped. */
#define WIRE_AGG_MAX_BUCKETS    122
struct wire_aggs {
	uint16_t cpu;
	uint16_t count;
	uint32_t dropped;         /* updates that found no room on this CPU (the
				     same figure in each of its frames) */
	uint32_t snapshot;        /* which sending of the tables (each `trace
				     aggregations` or flush is one more); a
				     later one replaces an earlier one whole */
	uint32_t tls_dropped;     /* thread-local stores that found no room
				     since the last `program clear` (all CPUs) */
};

struct wire_agg {
	uint8_t  program;         /* the program's slot */
	uint8_t  agg;             /* its aggregation number */
	uint8_t  kind;            /* WIRE_AGG_KINDS */
	uint8_t  nkeys;
	uint16_t nbuckets;        /* QUANTIZE: buckets that follow (non-zero ones) */
	uint16_t reserved;
	uint64_t key[4];          /* the keys, nkeys of them (WIRE_AGG_MAX_KEYS) */
	uint64_t count;           /* values counted (COUNT: firings) */
	int64_t  sum;
	int64_t  min;
	int64_t  max;
};

/* Bucket 0 counts 0; bucket 1 + k counts 2^k <= v < 2^(k+1); bucket 65 + k
 * counts -2^(k+1) < v <= -2^k (values as signed words). */
struct wire_agg_bucket {
	uint32_t index;
	uint32_t reserved;
	uint64_t count;
};

/* STACKS frame: struct wire_stacks, then `count` stacks, each a struct
 * wire_stack followed by `depth` 64-bit program counters, innermost first.
 * One frame per CPU per WIRE_MAX_PAYLOAD (at least one per CPU, for its
 * `dropped`), sent before the AGGS frames whose keys name them. */
struct wire_stacks {
	uint16_t cpu;
	uint16_t count;
	uint32_t dropped;         /* stacks that found no room in this CPU's table */
	uint32_t snapshot;        /* as wire_aggs' */
	uint32_t reserved;
};

struct wire_stack {
	uint32_t id;              /* WIRE_STACK_ID */
	uint16_t depth;
	uint16_t reserved;
	/* followed by depth uint64_t program counters */
};

_Static_assert(sizeof(struct wire_program) == 16, "wire_program has padding");
_Static_assert(sizeof(((struct wire_program *)0)->agg_kind) == WIRE_PROGRAM_MAX_AGGS,
	       "agg_kind holds WIRE_PROGRAM_MAX_AGGS kinds");
_Static_assert(sizeof(struct wire_rpn_insn) == 8, "wire_rpn_insn has padding");
_Static_assert(sizeof(struct wire_aggs) == 16, "wire_aggs has padding");
_Static_assert(sizeof(struct wire_agg) == 72, "wire_agg has padding");
_Static_assert(sizeof(((struct wire_agg *)0)->key) == WIRE_AGG_MAX_KEYS * 8,
	       "wire_agg holds WIRE_AGG_MAX_KEYS keys");
_Static_assert(WIRE_LQUANTIZE_MAX < WIRE_AGG_MAX_BUCKETS,
	       "every lquantize bucket fits an entry");
_Static_assert(sizeof(struct wire_agg_bucket) == 16, "wire_agg_bucket has padding");
_Static_assert(sizeof(struct wire_stacks) == 16, "wire_stacks has padding");
_Static_assert(sizeof(struct wire_stack) == 8, "wire_stack has padding");
_Static_assert(sizeof(struct wire_stacks) + sizeof(struct wire_stack) +
	       WIRE_STACK_MAX_DEPTH * 8 <= WIRE_MAX_PAYLOAD, "a stack fits one frame");
_Static_assert(sizeof(struct wire_aggs) + sizeof(struct wire_agg) +
	       WIRE_AGG_MAX_BUCKETS * sizeof(struct wire_agg_bucket) <= WIRE_MAX_PAYLOAD,
	       "an aggregation entry with all its buckets fits one frame");

#endif
