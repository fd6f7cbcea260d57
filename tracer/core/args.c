/*
 * args.c — an entry probe's argument words where the compiler put them.
 *
 * By default an ENTRY record's argument words, and a program's `arg N`,
 * follow the arch's calling convention (tarch_context_arg: i386's stack
 * words above the return address, sparc64's %o0..%o5). Code built at -O2
 * does not always: gcc passes a static function's arguments, and its
 * .part/.isra/.constprop clones', in registers on i386, and a clone may
 * have fewer or other parameters. The host reads each parameter's DWARF
 * location at the function's entry and gives the probe a map (`probe add
 * ID ADDR entry NARGS MAP`, MAP one hex byte per word): byte i says where
 * word i is — WIRE_ARG_REGISTER | r: the trapped register r, numbered as
 * tarch_context_reg numbers them (`reg`); k below that: the convention's
 * word k; WIRE_ARG_NONE: nowhere (a parameter optimized out), recorded as
 * 0, and a fault for `arg`. Without a map a probe reads as before.
 */
#include "console.h"
#include "kstring.h"
#include "tarch/registers.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

int tracer_argmap_parse(const char *hex, unsigned nargs, uint8_t *map, char *why,
			size_t why_size)
{
	if (strlen(hex) != 2 * nargs) {
		ksnprintf(why, why_size, "argument map \"%s\": %u hex bytes, one per "
			  "word, expected", hex, nargs);
		return -1;
	}
	for (unsigned i = 0; i < nargs; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			ksnprintf(why, why_size, "argument map \"%s\": not hex", hex);
			return -1;
		}
		unsigned b = (unsigned)(hi << 4 | lo);
		bool reg = b != WIRE_ARG_NONE && (b & WIRE_ARG_REGISTER);
		if ((reg && (b & ~WIRE_ARG_REGISTER) >= TARCH_NREGISTERS) ||
		    (!reg && b != WIRE_ARG_NONE && b >= WIRE_ARG_WORDS)) {
			ksnprintf(why, why_size, "argument map byte %u (0x%02x): registers "
				  "0x%02x + 0..%u, words 0..%u or 0x%02x (none)", i, b,
				  WIRE_ARG_REGISTER, TARCH_NREGISTERS - 1,
				  WIRE_ARG_WORDS - 1, WIRE_ARG_NONE);
			return -1;
		}
		map[i] = (uint8_t)b;
	}
	return 0;
}

void tracer_probe_argmap(unsigned id, const uint8_t *map, unsigned n)
{
	struct probe *p = &tracer_probes[id];
	memcpy(p->argmap, map, n);
	p->nargmap = (uint8_t)n;
}

bool tracer_arg(const struct tarch_context *ctx, const struct probe *p, unsigned n,
		unsigned long *value)
{
	if (n >= p->nargmap)
		return p->nargmap ? false : tarch_context_arg(ctx, p, n, value);
	uint8_t b = p->argmap[n];
	if (b == WIRE_ARG_NONE || p->kind != WIRE_EVENT_ENTRY)
		return false;
	if (b & WIRE_ARG_REGISTER)
		return tarch_context_reg(ctx, p, b & ~WIRE_ARG_REGISTER, value);
	return tarch_context_arg(ctx, p, b, value);
}
