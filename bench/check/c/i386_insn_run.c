/*
 * i386_insn_run.c — the guest's IA-32 length decoder (tracer/arch/i386/
 * insn.c) on the host: reads a code file (argv[1]) and offsets into it, one
 * per line on stdin, and prints for each "LEN RELOCATABLE" (RELOCATABLE 1
 * if the out-of-line path may copy it). tests/test_ool.py compares the
 * lengths with capstone's.
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
		const char *why = 0;
		unsigned len = i386_insn_length(code + off, size - off);
		unsigned ok = i386_insn_relocatable(code + off, size - off, &why) != 0;
		printf("%u %u\n", len, ok);
	}
	return 0;
}
