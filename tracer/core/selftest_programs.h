/*
 * selftest_programs.h — what the probe-program self-tests share: writing
 * a program as an array of instructions, laying it out as the wire's bytes
 * (wire.h struct wire_program, then the instructions), checking and
 * running it directly, and installing it through the same calls as
 * `program load` / `program check`.
 *
 * A program the tests run directly is validated first (program_validate)
 * — the interpreter trusts nothing else — and runs with interrupts masked,
 * as in a fire path, for a fake probe at a made-up address.
 */
#ifndef TRACER_SELFTEST_PROGRAMS_H
#define TRACER_SELFTEST_PROGRAMS_H

#include "arch.h"
#include "console.h"
#include "kstring.h"
#include "program.h"
#include "tracer.h"
#include "wire.h"

#define INSN(op, a, b, imm) \
	((struct wire_rpn_insn){ WIRE_RPN_##op, (uint8_t)(a), (uint16_t)(b), (int32_t)(imm) })
#define NINSNS(array) (sizeof (array) / sizeof (array)[0])
#define WORD ((unsigned)sizeof(prog_word))       /* the VM's word */
#define ADDR ((unsigned)sizeof(unsigned long))   /* the arch's: loads, addresses */

/* The probe direct runs pretend to fire at. */
#define TP_PROBE_ID   1234u
#define TP_PROBE_PC   0x5678u

static inline bool contains(const char *s, const char *part)
{
	size_t n = strlen(part);
	for (; *s; s++)
		if (strncmp(s, part, n) == 0)
			return true;
	return !n;
}

/* The wire's bytes of a program into out (PROGRAM_MAX_BYTES); its size. */
static inline size_t tp_bytes(uint8_t *out, const struct wire_rpn_insn *insn,
			      unsigned n, unsigned naggs, const uint8_t *kinds)
{
	struct wire_program head = {
		.ninsns = (uint16_t)n, .major = 7, .minor = 9, .naggs = (uint8_t)naggs,
	};
	for (unsigned a = 0; a < naggs && a < WIRE_PROGRAM_MAX_AGGS; a++)
		head.agg_kind[a] = kinds[a];
	memcpy(out, &head, sizeof head);
	memcpy(out + sizeof head, insn, n * sizeof *insn);
	return sizeof head + n * sizeof *insn;
}

/* Validate and lay out a program for direct runs, in slot's name (its
 * aggregations are the slot's); false, with an INFO line, if refused. */
static inline bool tp_program(struct program *prog, unsigned slot,
			      const struct wire_rpn_insn *insn, unsigned n,
			      unsigned naggs, const uint8_t *kinds)
{
	static uint8_t bytes[PROGRAM_MAX_BYTES];
	char why[WIRE_MAX_REASON];
	size_t size = tp_bytes(bytes, insn, n, naggs, kinds);
	if (program_validate(bytes, size, why, sizeof why) != 0) {
		report_info("refused: %s", why);
		return false;
	}
	memcpy(&prog->head, bytes, sizeof prog->head);
	memcpy(prog->insn, insn, n * sizeof *insn);
	prog->slot = (uint8_t)slot;
	return true;
}

static inline enum program_end tp_run(const struct program *prog,
				      struct program_log *log)
{
	static const struct probe fake = { .addr = TP_PROBE_PC, .id = TP_PROBE_ID };
	irqflags_t f = arch_irq_save();
	enum program_end end = program_run(prog, &fake, 0, log);
	arch_irq_restore(f);
	return end;
}

/* The log's data bytes. */
static inline const uint8_t *tp_data(const struct program_log *log)
{
	return (const uint8_t *)&log->words[WIRE_LOG_DATA];
}

/* Install a program into slot as the commands do: hex lines into the
 * staging buffer, then the check. 0, or -1 with why. */
static inline int tp_install(unsigned slot, const struct wire_rpn_insn *insn,
			     unsigned n, unsigned naggs, const uint8_t *kinds,
			     char *why, size_t why_size)
{
	static uint8_t bytes[PROGRAM_MAX_BYTES];
	static const char digits[] = "0123456789abcdef";
	char hex[2 * 100 + 1];
	size_t size = tp_bytes(bytes, insn, n, naggs, kinds);
	for (size_t off = 0; off < size; off += 100) {
		size_t len = size - off < 100 ? size - off : 100;
		for (size_t i = 0; i < len; i++) {
			hex[2 * i] = digits[bytes[off + i] >> 4];
			hex[2 * i + 1] = digits[bytes[off + i] & 15];
		}
		hex[2 * len] = 0;
		if (program_load(slot, off, hex, why, why_size) != 0)
			return -1;
	}
	return program_install(slot, size, why, why_size);
}

#endif
