/*
 * tramp_fast.c — which tramp probes take their slot's recording path
 * (tramp_slots.S), and the words that give a return's value there.
 *
 * A slot writes an ENTRY or RETURN record itself, as put() (buffer.c)
 * would, when the probe is plain; the per-firing tests (gate, action,
 * state, argument map, stamps, the ring's form and room) are the slot's,
 * and what does not change while the probe is armed is decided here, in
 * site.fast: 0 sends every firing into C as before (check mode, a return
 * whose value sparc64_return_value cannot compute or that has none).
 * A return's value is compiled per slot into five words that compute
 * what sparc64_return_value computes from the same registers: the
 * delay slot's own operation, its registers renamed to where the slot
 * sees them (the site's %o are the slot's %i; the site's %l/%i are
 * copied by a restore and a save whose rd is the slot's and operand the
 * site's). The record is then byte for byte the C path's.
 */
#include "arch/arch_sparc64.h"
#include "emulate.h"
#include "fire.h"
#include "tracer.h"
#include "tramp.h"
#include "wire.h"

/* Tests (through the GDB stub): every firing into C (the record the fast
 * path must equal), or a recording path whose return value is wrong (it
 * writes the value's register but records another). Read at arming. */
volatile unsigned tramp_fast_off, tramp_fast_broken;

#define W_NOP      0x01000000u
#define W_RESTORE  0x81e80000u          /* restore %g0, %g0, %g0 */
#define SLOT_L2    18
#define SLOT_O7    15
#define SLOT_L6    22
#define RD(r)      ((uint32_t)(r) << 25)
#define RS1(r)     ((uint32_t)(r) << 14)

/* Register n of the site's window as the slot reads it; a %l or %i is
 * copied into `copy` first (two words at v[*k]). */
static unsigned slot_reg(unsigned n, unsigned copy, uint32_t v[5], unsigned *k)
{
	if (n < 8)
		return n;                       /* a global, or %g0 */
	if (n < 16)
		return n + 16;                  /* the site's %o: our %i */
	v[(*k)++] = W_RESTORE;
	v[(*k)++] = 0x81e00000u | RD(copy) | RS1(n);   /* save %n, %g0, copy */
	return copy;
}

/* The delay slot w's operation into %l6, rs1/rs2 renamed by map (the
 * window w runs in, to the site's). */
static void slot_operation(uint32_t w, const unsigned map[32], uint32_t v[5],
			   unsigned *k)
{
	unsigned op3 = (w >> 19) & 0x3f;
	if (op3 == OP3_RESTORE)
		op3 = 0;                        /* its sum: an add */
	unsigned a = slot_reg(map[(w >> 14) & 0x1f], SLOT_L2, v, k);
	uint32_t x = (w & ~(RD(0x1f) | (0x3fu << 19) | RS1(0x1f))) |
		     RD(SLOT_L6) | op3 << 19 | RS1(a);
	if (!((w >> 13) & 1))
		x = (x & ~0x1fu) | slot_reg(map[w & 0x1f], SLOT_L6, v, k);
	v[4] = x;
}

/* The value as register n of the site's window, into %l6. */
static void slot_register(unsigned n, uint32_t v[5], unsigned *k)
{
	v[4] = 0x80100000u | RD(SLOT_L6) | slot_reg(n, SLOT_L2, v, k); /* or %g0 */
}

/* sparc64_return_value's cases (context.c), compiled; false where it has
 * no value (a form it does not evaluate, a caller's %l/%i). */
static bool value_words(const struct probe *p, uint32_t v[5])
{
	uint32_t slot = p->site.slot;
	unsigned site[32], caller[32], k = 0;
	for (unsigned n = 0; n < 32; n++)
		site[n] = n;
	for (unsigned n = 0; n < 5; n++)
		v[n] = W_NOP;
	if (p->site.what == SPARC_SITE_RETURN) {
		if (!sparc64_slot_writes(slot, 8)) {
			slot_register(24, v, &k);
			return true;
		}
		/* It runs in the caller's window: its %o are the site's %i. */
		unsigned rs1 = (slot >> 14) & 0x1f, rs2 = slot & 0x1f;
		bool imm = (slot >> 13) & 1;
		if (rs1 >= 16 || (!imm && rs2 >= 16) || !sparc64_slot_alu_form(slot))
			return false;
		for (unsigned n = 0; n < 16; n++)
			caller[n] = n < 8 ? n : n + 16;
		slot_operation(slot, caller, v, &k);
		return true;
	}
	bool ret = p->site.cti.rs1 == SPARC_I7;
	unsigned vreg = ret ? 24 : 8;
	bool restore = slot >> 30 == 2 && ((slot >> 19) & 0x3f) == OP3_RESTORE;
	if (ret && restore && ((slot >> 25) & 0x1f) == 8) {
		if (!sparc64_slot_alu_form(slot))
			return false;
		slot_operation(slot, site, v, &k);
		return true;
	}
	if ((ret && restore) || !sparc64_slot_writes(slot, vreg)) {
		slot_register(vreg, v, &k);
		return true;
	}
	if (restore || !sparc64_slot_alu_form(slot))
		return false;
	slot_operation(slot, site, v, &k);
	return true;
}

unsigned tramp_fast_kind(const struct probe *p, bool checked, uint32_t v[5])
{
	for (unsigned n = 0; n < 5; n++)
		v[n] = W_NOP;
	if (checked || tramp_fast_off)
		return 0;
	if (p->kind == WIRE_EVENT_ENTRY)
		return TRAMP_FAST_ENTRY;
	if (p->kind != WIRE_EVENT_RETURN || !value_words(p, v))
		return 0;
	if (tramp_fast_broken)          /* the value into %o7: %l6 is stale */
		v[4] = (v[4] & ~RD(0x1f)) | RD(SLOT_O7);
	return TRAMP_FAST_RETURN;
}
