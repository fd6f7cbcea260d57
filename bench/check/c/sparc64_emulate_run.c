/*
 * sparc64_emulate_run.c — the guest's own tracer/arch/sparc64/emulate.c on
 * the host, in batch, for tests/test_sparc64_emulate.py.
 *
 * stdin:  records of { uint64 pc, npc, r[32], fsr; uint32 word; uint8 ccr;
 *         uint8 pad[3]; } in host byte order (the SPARC target is
 *         big-endian, but nothing here is target memory: these are
 *         register values, packed by the Python side with "<").
 * stdout: per record { int32 status; uint8 taken, annulled, ccr, pad;
 *         uint64 pc, npc, r[32], fsr, target, fault; }
 *         status: 0 emulated, -1 emulation faulted (a misaligned JMPL
 *         target, in fault), -2 decode refused. pc, npc, r, ccr, fsr are
 *         the register state afterwards (the input one unless status 0).
 *
 * sparc64_emulate_run decode HEX: decode the instruction word HEX and
 *         print "class <NAME> <what it emulates>" or "refused <reason>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emulate.h"

#define CLASS_ID(name, what) #name,
static const char *const class_ids[SPARC_CTI_CLASS_COUNT] = {
	SPARC_CTI_CLASSES(CLASS_ID)
};
#undef CLASS_ID

struct in_rec {
	uint64_t pc, npc, r[32], fsr;
	uint32_t word;
	uint8_t  ccr, pad[3];
};

struct out_rec {
	int32_t  status;
	uint8_t  taken, annulled, ccr, pad;
	uint64_t pc, npc, r[32], fsr, target, fault;
};

_Static_assert(sizeof(struct in_rec) == 8 * 35 + 8, "input record layout");
_Static_assert(sizeof(struct out_rec) == 8 + 8 * 37, "output record layout");

static int decode_only(const char *hex)
{
	uint32_t word = (uint32_t)strtoul(hex, 0, 16);
	struct sparc_cti c;
	const char *why;
	if (sparc_decode(word, &c, &why))
		printf("refused %s\n", why);
	else
		printf("class %s %s\n", class_ids[c.cls], sparc_cti_class_names[c.cls]);
	return 0;
}

int main(int argc, char **argv)
{
	struct in_rec in;
	if (argc == 3 && strcmp(argv[1], "decode") == 0)
		return decode_only(argv[2]);
	while (fread(&in, sizeof in, 1, stdin) == 1) {
		struct sparc_regs r = { .pc = in.pc, .npc = in.npc, .ccr = in.ccr,
					.fsr = in.fsr };
		struct sparc_cti c;
		struct sparc_outcome o = { 0 };
		struct out_rec out = { 0 };
		const char *why;
		uint64_t fault = 0;

		memcpy(r.r, in.r, sizeof r.r);
		if (sparc_decode(in.word, &c, &why))
			out.status = -2;
		else
			out.status = sparc_emulate(&c, &r, &o, &fault);
		out.taken = o.taken;
		out.annulled = o.annulled;
		out.ccr = r.ccr;
		out.pc = r.pc;
		out.npc = r.npc;
		memcpy(out.r, r.r, sizeof out.r);
		out.fsr = r.fsr;
		out.target = o.target;
		out.fault = fault;
		fwrite(&out, sizeof out, 1, stdout);
	}
	return 0;
}
