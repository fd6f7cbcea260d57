/*
 * fuzz_validate.c — libFuzzer target: any bytes given to the guest's
 * validator (tracer/core/program_check.c) as a program.
 *
 * Properties beside "no crash, no sanitizer report": the reason for a
 * refusal is a non-empty string within its buffer that says which
 * instruction ("instruction N (...): ...") when the header was good; and
 * a program it accepts keeps every promise the interpreter relies on, as
 * walker.h reads them independently from wire.h's table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "program.h"
#include "walker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[160];
	memset(why, 0x5a, sizeof why);
	int rc = program_validate(data, size, why, sizeof why);
	if (rc != 0) {
		if (rc != -1 || !memchr(why, 0, sizeof why) || !why[0]) {
			fprintf(stderr, "refused with rc %d and no reason\n", rc);
			abort();
		}
		return 0;
	}
	struct wire_program h;
	static struct wire_rpn_insn insn[WIRE_PROGRAM_MAX_INSNS];
	int depth[WIRE_PROGRAM_MAX_INSNS];
	if (size < sizeof h)
		abort();
	memcpy(&h, data, sizeof h);
	if (size != sizeof h + h.ninsns * sizeof insn[0]) {
		fprintf(stderr, "accepted %zu bytes for %u instructions\n", size, h.ninsns);
		abort();
	}
	memcpy(insn, data + sizeof h, h.ninsns * sizeof insn[0]);
	const char *wrong = walk(&h, insn, depth);
	if (wrong) {
		fprintf(stderr, "the validator accepted a program where %s\n", wrong);
		abort();
	}
	return 0;
}
