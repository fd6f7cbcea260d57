/*
 * i386_emulate_run.c — the guest's own tracer/arch/i386/emulate.c on the
 * host, in batch, for tests/test_i386_emulate.py.
 *
 * stdin:  records of { uint8 code[8]; uint32 regs[10]; uint32 word; }
 *         (little-endian; regs in struct i386_regs order; word is what
 *         any 32-bit read returns, of the stack or through an operand: an
 *         indirect call's or jmp's target)
 * stdout: per record { int32 status; uint32 regs[10]; uint32 nreads,
 *         read_addr, nwrites, write_addr, write_value, fault_addr; }
 *         status: 0 emulated, -1 emulation faulted, -2 decode refused.
 *
 * i386_emulate_run decode HEX: decode the bytes HEX and print
 *         "kind <what it emulates>" or "refused <decode's reason>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emulate.h"

struct memlog {
	uint32_t word, nreads, read_addr, nwrites, write_addr, write_value;
};

static int rd(void *ctx, uint32_t addr, uint32_t *v)
{
	struct memlog *l = ctx;
	l->nreads++;
	l->read_addr = addr;
	*v = l->word;
	return 0;
}

static int wr(void *ctx, uint32_t addr, uint32_t v)
{
	struct memlog *l = ctx;
	l->nwrites++;
	l->write_addr = addr;
	l->write_value = v;
	return 0;
}

static int decode_only(const char *hex)
{
	uint8_t code[16];
	size_t n = 0;
	for (; n < sizeof code && hex[2 * n] && hex[2 * n + 1]; n++) {
		char byte[3] = { hex[2 * n], hex[2 * n + 1], 0 };
		code[n] = (uint8_t)strtoul(byte, 0, 16);
	}
	struct i386_site site;
	const char *why;
	if (i386_decode(code, n, &site, &why))
		printf("refused %s\n", why);
	else
		printf("kind %s\n", i386_site_kind_names[site.kind]);
	return 0;
}

int main(int argc, char **argv)
{
	uint8_t in[8 + 40 + 4];
	if (argc == 3 && strcmp(argv[1], "decode") == 0)
		return decode_only(argv[2]);
	while (fread(in, sizeof in, 1, stdin) == 1) {
		struct i386_regs r;
		struct i386_site site;
		struct memlog log = { 0 };
		const char *why;
		uint32_t fault = 0;
		int32_t status;

		memcpy(&r, in + 8, sizeof r);
		memcpy(&log.word, in + 48, 4);
		struct i386_mem m = { rd, wr, rd, &log };
		if (i386_decode(in, 8, &site, &why))
			status = -2;
		else
			status = i386_emulate(&site, &r, &m, &fault);
		uint32_t out[1 + 10 + 6];
		out[0] = (uint32_t)status;
		memcpy(&out[1], &r, sizeof r);
		out[11] = log.nreads;
		out[12] = log.read_addr;
		out[13] = log.nwrites;
		out[14] = log.write_addr;
		out[15] = log.write_value;
		out[16] = fault;
		fwrite(out, sizeof out, 1, stdout);
	}
	return 0;
}
