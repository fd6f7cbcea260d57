/*
 * program.h — probe programs inside the tracer: seed 002's RPN probe
 * handlers, with wire.h's "Probe programs" section as the contract.
 *
 * A program reaches a probe in three steps: `program load` writes bytes
 * into a slot's staging buffer, `program check` validates them
 * (program_check.c) and installs a copy in the slot (program.c), and
 * `probe program` points probes at the slot (gate.c). An installed
 * program does not change while a probe that can fire points at it (check
 * and clear refuse), so the fire path reads it without a lock, and the
 * interpreter (program_run.c) trusts what the validator let through: every
 * operand in range, the stack depth known at each instruction, only
 * forward jumps, a last instruction that ends the run.
 */
#ifndef TRACER_PROGRAM_H
#define TRACER_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tracer.h"
#include "wire.h"

/* The most bytes a program takes: its header and WIRE_PROGRAM_MAX_INSNS. */
#define PROGRAM_MAX_BYTES (sizeof(struct wire_program) + \
			   WIRE_PROGRAM_MAX_INSNS * sizeof(struct wire_rpn_insn))

struct program {
	struct wire_program  head;
	struct wire_rpn_insn insn[WIRE_PROGRAM_MAX_INSNS];
	uint8_t              slot;          /* its index in programs[] */
	volatile bool        installed;
};

extern struct program programs[WIRE_PROGRAMS];
/* The global variables, shared by every program and CPU: words of the VM
 * (prog_word, wire_program.h), read and written whole (atomic.h's 64-bit
 * operations: on a 32-bit arch two stores would let a reader see half). */
extern volatile prog_word program_globals[WIRE_PROGRAM_GLOBALS];

/* ---- slots (program.c), from the command loop's thread ---- */

/* Write the bytes of hex (two digits each) at offset of slot's staging
 * buffer. 0, or -1 with why (nothing written). */
int program_load(unsigned slot, unsigned long offset, const char *hex,
		 char *why, size_t why_size);
/* Validate the first `bytes` of slot's staging buffer, every one loaded
 * since the slot's last check, and install them. 0, or -1 with why
 * (nothing installed); the staging buffer is empty again either way. */
int program_install(unsigned slot, unsigned long bytes, char *why, size_t why_size);
/* Remove the program of slot (every slot if slot < 0, and zero the
 * globals): detached from the probes that point at it, its aggregations
 * cleared. Refused (-1, why) while a probe that can fire runs it. */
int program_clear(int slot, char *why, size_t why_size);
/* A probe that can fire and runs slot's program — enabled, or merely added
 * while the compiler hooks are on — or -1. */
int program_user(unsigned slot);
/* Staging bytes loaded since the slot's last check. */
unsigned program_staged(unsigned slot);

/* ---- the validator (program_check.c) ---- */

/* 0 if bytes[0..n) is a program the interpreter may run; else -1 with
 * why = "instruction N (mnemonic): what" or, for the header, "what". */
int program_validate(const void *bytes, size_t n, char *why, size_t why_size);
/* An operation's mnemonic (wire.h WIRE_RPN_OPS), or 0 if op is none; an
 * aggregation kind's word (WIRE_AGG_KINDS: its feeding operation's), or 0. */
const char *program_mnemonic(unsigned op);
const char *program_agg_kind(unsigned kind);

/* ---- thread-local words (program_tls.c), from the fire path ---- */

/* This thread's word (< WIRE_PROGRAM_TLS), 0 if never stored. */
prog_word program_tls_get(unsigned word);
/* Store it; a thread's first store of non-zero takes a block of the pool,
 * and one that finds the pool used up is counted and not made. */
void program_tls_set(unsigned word, prog_word value);
/* Stores not made since the last clear; threads holding a block. */
uint32_t program_tls_dropped(void);
unsigned program_tls_threads(void);
/* Every thread's words back to 0, the pool empty (`program clear`). */
void program_tls_clear(void);

/* ---- the interpreter (program_run.c) ---- */

enum program_end {
	PROGRAM_EXIT,        /* `exit`: log holds a LOG record's words */
	PROGRAM_ABORT,       /* `abort`: nothing to emit */
	PROGRAM_FAULT,       /* ended by a fault: a load, a division by 0, a
				full log buffer, a context without the value */
};

#define PROGRAM_LOG_WORDS (WIRE_LOG_DATA + (WIRE_PROGRAM_LOG_BYTES + \
			   sizeof(unsigned long) - 1) / sizeof(unsigned long))

/* A firing's log buffer, as the LOG record it becomes (wire.h
 * WIRE_LOG_WORDS). */
struct program_log {
	unsigned long words[PROGRAM_LOG_WORDS];
	unsigned      nwords;             /* of the record, on PROGRAM_EXIT */
};

/* Run prog for a firing of p with the trapped context ctx (NULL: none),
 * interrupts masked. Locals start at 0; aggregations go to this CPU's
 * table (aggregate.h). */
enum program_end program_run(const struct program *prog, const struct probe *p,
			     const struct tarch_context *ctx,
			     struct program_log *log);

#endif
