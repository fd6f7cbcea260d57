/*
 * check.c — check mode for emulated sparc64 sites (`probe check on`,
 * emulate only): each emulation also writes a CHECK record (check.h) for
 * bench/check/sparc64.py to re-run in unicorn.
 *
 * The fire path (fire.c) takes the state before from the registers it
 * loaded (with the window: check mode loads everything), and the caller's
 * window for a `return`, which restores it; once it has edited the trap
 * frame for the resume, the state after is read back from where the way
 * back will take it — the frame and the trapped window's save area, with
 * the window the resume switches to (check.h says how a save and a return
 * change windows) — and the record goes out. An out-of-line site armed in
 * check mode runs a checked slot instead, whose second trap records the
 * state after the copy (ool_check.c); that and watch.c's records take
 * their register state from sparc64_check_state too.
 */
#include "arch/arch_sparc64.h"
#include "arch/sparc64.h"
#include "arch/trapframe.h"
#include "check.h"
#include "context.h"
#include "emulate.h"
#include "fire.h"
#include "mm.h"
#include "tracer.h"
#include "wire.h"

void sparc64_check_state(const struct trapframe *tf, const struct sparc_regs *r,
			 unsigned long *w)
{
	w[SPARC64_CHECK_PC] = r->pc;
	w[SPARC64_CHECK_NPC] = r->npc;
	w[SPARC64_CHECK_CCR] = r->ccr;
	w[SPARC64_CHECK_Y] = tf->y;
	w[SPARC64_CHECK_FSR] = sparc64_read_fsr();
	for (unsigned n = 1; n < 32; n++)
		w[SPARC64_CHECK_R0 + n] = r->r[n];
}

/* The %l/%i of the window `return` (or a delay slot's `restore`,
 * tramp_check.c) goes back to: in the caller's save area at our %fp once
 * the windows are flushed. False if it is unmapped. */
bool sparc64_check_caller(const struct sparc_regs *r, unsigned long *w)
{
	uintptr_t area = r->r[30] + STACK_BIAS;
	if ((area & 7) || mm_virt_to_phys((void *)area) == (uintptr_t)-1 ||
	    mm_virt_to_phys((void *)(area + 127)) == (uintptr_t)-1)
		return false;
	flushw();
	for (unsigned n = 0; n < SPARC64_CHECK_CALLER; n++)
		w[n] = ((const uint64_t *)area)[n];
	return true;
}

/* The "before" words from the trapped state r, and the caller's window
 * for a `return`. */
void sparc64_check_before(const struct probe *p, const struct trapframe *tf,
			  const struct sparc_regs *r, unsigned long *w)
{
	unsigned long *caller = w + 2 * SPARC64_CHECK_NREGS;
	sparc64_check_state(tf, r, w);
	for (unsigned n = 0; n < SPARC64_CHECK_CALLER; n++)
		caller[n] = 0;
	if (p->site.what == SPARC_SITE_RETURN && !sparc64_check_caller(r, caller))
		sparc64_fire_failed(p, "the caller's save area is not mapped", r->r[30]);
}

/* The "after" words, read back from where the fire path left the state,
 * with the window the resume switches to (check.h); then the record. */
void sparc64_check_after(const struct probe *p, struct trapframe *tf,
			 unsigned long *w)
{
	struct sparc_regs a;
	unsigned long *after = w + SPARC64_CHECK_NREGS;
	const unsigned long *caller = w + 2 * SPARC64_CHECK_NREGS;
	enum { O = SPARC64_CHECK_O0, L = SPARC64_CHECK_L0, I = SPARC64_CHECK_I0 };

	if (!sparc64_load_regs(tf, &a, true))
		sparc64_fire_failed(p, "the trapped %sp is not mapped", trapframe_sp(tf));
	sparc64_check_state(tf, &a, after);
	for (unsigned n = 0; n < 8; n++) {
		if (p->site.what == SPARC_SITE_SAVE) {
			after[I + n] = a.r[8 + n];
			after[L + n] = 0;
			after[O + n] = n == 6 ? tf->save_sp : 0;
		} else if (p->site.what == SPARC_SITE_RETURN) {
			after[O + n] = a.r[24 + n];
			after[L + n] = caller[n];
			after[I + n] = caller[8 + n];
		}
	}
	tracer_record(p, WIRE_EVENT_CHECK, w, SPARC64_CHECK_WORDS);
}
