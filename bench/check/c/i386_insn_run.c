/*
 * i386_insn_run.c — the guest's IA-32 decoders (tracer/arch/i386/insn.c)
 * on the host: reads a code file (argv[1]) and offsets into it, one per
 * line on stdin, and prints a line for each:
 *   (no argv[2])    "LEN RELOCATABLE": the length decoder, RELOCATABLE 1 if
 *                   the out-of-line path may copy it (tests/test_ool.py
 *                   compares the lengths with capstone's);
 *   argv[2] operand "ok MEM BASE INDEX SCALE DISP" (base/index -1 if absent,
 *                   DISP signed) or "no WHY": check mode's operand decoder,
 *                   i386_insn_operand (tests/test_check_ool.py compares the
 *                   operands with capstone's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "insn.h"

static void length(const uint8_t *code, size_t size)
{
	const char *why = 0;
	unsigned len = i386_insn_length(code, size);
	unsigned ok = i386_insn_relocatable(code, size, &why) != 0;
	printf("%u %u\n", len, ok);
}

static void operand(const uint8_t *code, size_t size)
{
	const char *why = "";
	struct i386_operand o;
	if (i386_insn_operand(code, size, &o, &why) != 0)
		printf("no %s\n", why ? why : "");
	else
		printf("ok %u %d %d %u %ld\n", o.mem, o.base, o.index, o.scale,
		       (long)o.disp);
}

int main(int argc, char **argv)
{
	if (argc != 2 && !(argc == 3 && !strcmp(argv[2], "operand")))
		return 2;
	void (*each)(const uint8_t *, size_t) = argc == 3 ? operand : length;
	FILE *f = fopen(argv[1], "rb");
	if (!f)
		return 2;
	static uint8_t code[1 << 24];
	size_t size = fread(code, 1, sizeof code, f);
	fclose(f);
	unsigned long off;
	while (scanf("%lu", &off) == 1) {
		if (off >= size)
			return 2;
		each(code + off, size - off);
	}
	return 0;
}
