/*
 * i386_operand_run.c — check mode's operand decoder (tracer/arch/i386/
 * insn.c's i386_insn_operand) on the host: reads a code file (argv[1]) and
 * offsets into it, one per line on stdin, and prints for each either
 * "ok MEM BASE INDEX SCALE DISP" (base/index -1 if absent, DISP signed) or
 * "no WHY". tests/test_check_ool.py compares the operands with capstone's.
 */
#include <stdio.h>
#include <stdlib.h>
#include "insn.h"

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
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
		const char *why = "";
		struct i386_operand o;
		if (i386_insn_operand(code + off, size - off, &o, &why) != 0)
			printf("no %s\n", why ? why : "");
		else
			printf("ok %u %d %d %u %ld\n", o.mem, o.base, o.index, o.scale,
			       (long)o.disp);
	}
	return 0;
}
