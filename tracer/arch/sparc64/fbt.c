/*
 * fbt.c — sparc64 probes: decode and arm a site. The provider's other
 * files: the fire path (fire.c, its quick path quick.h), the shell game
 * (shellgame.c), check mode's records (check.c), what a firing carries
 * beyond the frame (context.c), out-of-line sites (ool.c, ool_check.c).
 *
 * A probe is the word `illtrap <const22>` over its site, const22 being the
 * probe's index in tracer_probes[] (room for 2^22; the table holds 4096).
 * It traps as illegal_instruction (tt 0x10) with TPC at the site; the
 * fire path, a trap hook on that tt (trap.h) registered at init, reads the
 * const22 back from TPC, so finding the probe is one index and one address
 * compare, no search.
 *
 * Mechanisms (mechanisms.h; chosen per run, `probe mechanism`):
 *   emulate    record, then emulate the displaced instruction on the
 *              trapped state (emulate.c for CTIs; a save in fire.c) and
 *              `retry` at the PC/nPC it chose. The ILLTRAP stays; nothing
 *              is ever written back, so no thread can run past a probe.
 *   shellgame  the lossy baseline of seed 001 (Btrace1): record, store the
 *              original word back and retry it natively, the ILLTRAP going
 *              back in when the next probe fires (shellgame.c).
 *   tramp      no trap, as illumos' SPARC fbt: an entry or return site
 *              becomes `ba,a` to the probe's trampoline, which records
 *              and runs the displaced word (and a return's delay slot)
 *              natively (tramp.c, tramp_slots.S, tramp_fire.c); other
 *              sites take the ILLTRAP and are emulated as under emulate.
 *
 * Sites and kinds:
 *   branch  any emulated CTI (emulate.h): records pc, target, taken and
 *           annulled — Btrace's btfrec.
 *   return  `ret` (jmpl %i7+8, %g0), `retl` (jmpl %o7+8, %g0) or the V9
 *           `return %i7+8`: records pc, sp and the value the caller will
 *           see in %o0, which the delay slot often computes (`ret;
 *           restore %g0, 1, %o0`, `retl; sra %o0, 0, %o0`; context.c); a
 *           slot it cannot evaluate leaves the value out of the record
 *           (the host prints "?"). `return` restores the caller's window
 *           itself: trap_entry's way back does one more `restore`.
 *   entry   a function's first instruction: records pc, sp and %o0..%o5
 *           as the arguments. Its `save %rs1, simm13|%rs2, %sp`:
 *           trap_entry's own `save` already opened the callee's window, so
 *           emulating it is resuming there with %sp = rs1 + operand
 *           (trapframe.h); a window overflow it needed was taken by that
 *           save. A leaf function's first word, if not a CTI, runs out of
 *           line (ool.c: TPC = the probe's slot, TNPC = site + 4).
 * Refused: an ILLTRAP/unimp word already there (a probe, or a word a
 * struct-returning call expects), a site in a CTI's delay slot (its PC/nPC
 * pair belongs to the CTI before it), any other instruction, and code of
 * the tracer or trap path (probe.c).
 *
 * Arming also decides, once, what the fire path may skip: whether a
 * firing reads the trapped window (site.window, from the decode), and
 * whether a count-only firing may take the quick path (site.quick).
 */
#include "arch/arch_sparc64.h"
#include "check.h"
#include "context.h"
#include "emulate.h"
#include "fire.h"
#include "mechanisms.h"
#include "ool.h"
#include "trap.h"
#include "tracer.h"
#include "tramp.h"
#include "tracer_arch.h"
#include "wire.h"

const struct tarch_mechanism tarch_mechanisms[] = { TARCH_MECHANISMS(MECHANISM_ROW) };
const unsigned tarch_nmechanisms = sizeof tarch_mechanisms / sizeof tarch_mechanisms[0];
const unsigned tarch_check_words = SPARC64_CHECK_WORDS;
const unsigned tarch_cost_kind = WIRE_EVENT_RETURN;

#define OP3_SAVE        0x3c
#define OP3_RETURN      0x39
#define REG_SP          14

/* Whether a CTI reads a register of the trapped window's %l/%i (jmpl and
 * the register branches read rs1, jmpl an rs2 too; %i7 makes `ret` one),
 * or writes one (jmpl's rd). */
static bool cti_reads_window(const struct sparc_cti *c)
{
	if (c->cls == SPARC_JMPL)
		return c->rs1 >= 16 || (!c->imm && c->rs2 >= 16) || c->rd >= 16;
	return c->cls == SPARC_BPR && c->rs1 >= 16;
}

/* Whether a format-3 word's operands (rs1, and rs2 unless i) include a
 * %l or %i: a delay slot return_value() may evaluate, a save's. */
static bool operands_read_window(uint32_t w)
{
	return ((w >> 14) & 0x1f) >= 16 ||
	       (!((w >> 13) & 1) && (w & 0x1f) >= 16);
}

static bool is_save_to_sp(uint32_t w)
{
	return w >> 30 == 2 && ((w >> 19) & 0x3f) == OP3_SAVE &&
	       ((w >> 25) & 0x1f) == REG_SP;
}

/* The word before addr as the code has it: under a probe there, its
 * original (a tramp probe's ba,a is no CTI of the code's). */
static uint32_t word_before(uintptr_t addr)
{
	const struct probe *q = tracer_lookup(addr - 4);
	return q ? q->site.insn : ((const uint32_t *)addr)[-1];
}

int tarch_decode(uintptr_t addr, unsigned kind, struct tarch_site *site,
		 const char **why)
{
	const uint32_t *code = (const uint32_t *)addr;

	if (addr & 3) {
		*why = "not a word-aligned instruction address";
		return -1;
	}
	uint32_t w = code[0];
	*site = (struct tarch_site){ .insn = w, .window = true };
	if (addr >= (uintptr_t)__text_start + 4 && sparc_is_cti(word_before(addr))) {
		*why = "in the delay slot of a control transfer";
		return -1;
	}
	if (addr + 8 <= (uintptr_t)__text_end)
		site->slot = code[1];
	bool any = kind == WIRE_EVENT_ENTRY || kind == WIRE_EVENT_INSN;
	if (any && is_save_to_sp(w)) {
		/* save %sp, -N, %sp reads an %o: the trapped window's %l/%i
		 * (in its save area on the stack, checked mapped page by
		 * page) are read only for a program or check mode. */
		site->what = SPARC_SITE_SAVE;
		site->window = operands_read_window(w);
		return 0;
	}
	/* Any other first instruction (a leaf function's) takes the entry
	 * probe too, and an insn probe any word: a CTI or `return` emulated,
	 * else out of line (ool.c). */
	if (any && !sparc_is_cti(w)) {
		if (!sparc_ool_ok(w, why))
			return -1;
		site->what = SPARC_SITE_OOL;
		site->window = false;
		return 0;
	}
	if (w >> 30 == 2 && ((w >> 19) & 0x3f) == OP3_RETURN) {
		bool ret = ((w >> 14) & 0x1f) == SPARC_I7 && ((w >> 13) & 1) &&
			   (w & 0x1fff) == 8;
		if (kind == WIRE_EVENT_RETURN && !ret) {
			*why = "a return probe sits on ret, retl or return %i7+8";
			return -1;
		}
		site->what = SPARC_SITE_RETURN;
		return 0;
	}
	if (sparc_decode(w, &site->cti, why) != 0)
		return -1;
	site->what = SPARC_SITE_CTI;
	const struct sparc_cti *c = &site->cti;
	if (kind == WIRE_EVENT_RETURN) {
		if (c->cls != SPARC_JMPL || c->rd != 0 || !c->imm || c->simm13 != 8 ||
		    (c->rs1 != SPARC_I7 && c->rs1 != SPARC_O7)) {
			*why = "a return probe sits on ret, retl or return %i7+8";
			return -1;
		}
	}
	site->window = cti_reads_window(c) ||
		       (kind == WIRE_EVENT_RETURN && operands_read_window(site->slot));
	return 0;
}

/* Whether p's site becomes a ba,a to its trampoline (tramp.c). */
static bool jumps(const struct probe *p)
{
	return p->mechanism == MECHANISM_TRAMP && tramp_site(p);
}

bool tarch_can_arm(const struct probe *p, const char **why)
{
	if (jumps(p))
		return tramp_can_arm(p, why);
	if (p->site.what == SPARC_SITE_OOL && tracer_check_mode && sparc64_emulates(p))
		return ool_checkable(p->site.insn, why);
	return true;
}

/* Whether a count-only firing of the site reads nothing but the frame:
 * the quick path (quick.h). */
static bool quick_site(const struct tarch_site *s)
{
	switch (s->what) {
	case SPARC_SITE_OOL:
		return true;
	case SPARC_SITE_SAVE:
		return !s->window;
	case SPARC_SITE_CTI:
		return s->cti.cls == SPARC_BICC || s->cti.cls == SPARC_BPCC ||
		       s->cti.cls == SPARC_CALL;
	}
	return false;
}

void tarch_arm(struct probe *p)
{
	if (jumps(p)) {
		p->site.quick = 0;
		tramp_arm(p);
		return;
	}
	p->site.checked = 0;    /* (a tramp arming's, for any site: its slot's) */
	if (p->site.what == SPARC_SITE_OOL) {
		/* which slot (ool_check.c), written before the trap can send
		 * anyone there */
		p->site.checked = tracer_check_mode && sparc64_emulates(p);
		if (p->site.checked)
			ool_check_prepare(p);
		else
			ool_prepare(p);
	}
	p->site.quick = sparc64_emulates(p) && !p->site.checked &&
			quick_site(&p->site);
	sparc64_shellgame_forget(p);
	sparc64_store_word(p, ILLTRAP(p->id));
}

void tarch_disarm(struct probe *p)
{
	if (jumps(p)) {
		tramp_disarm(p);
		return;
	}
	sparc64_shellgame_forget(p);
	sparc64_store_word(p, p->site.insn);
}

/* Every sparc64 trap is one word, stored at once: no later stages. */
void tarch_stage(void)
{
}

/* No mechanism of sparc64's has a return trampoline (mechanism.h). */
int tarch_probe_ride(struct probe *entry, struct probe *ret, const char **why)
{
	*why = "sparc64 has no return trampoline";
	return -1;
}

void tarch_ride_stats(unsigned long n[TARCH_RIDE_STATS])
{
	(void)n;
}

void tarch_init(void)
{
	trap_hook_add(TT_ILLEGAL_INSTRUCTION, sparc64_probe_trap);
	ool_check_init();       /* the checked slots' mark, after the probes' */
	tramp_check_init();     /* and the checked trampolines' */
	sparc64_watch_init();
	sparc64_shellgame_init();
}
