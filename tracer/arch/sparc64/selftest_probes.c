/*
 * selftest_probes.c — differential self-test of the sparc64 probe
 * emulator (tracer/arch/sparc64/emulate.c and the fire path in fire.c).
 *
 * Every CTI the emulator handles is generated at run time into the one
 * site of selftest_probes.S (dt_site, written through a writable alias of
 * its text page), in every condition, annul bit, cc selector and target
 * direction, and run from a set of register states: once unprobed, where
 * the CPU executes it, and once with a branch probe armed there (illtrap
 * const22), where the trap handler emulates it and retries at the PC/nPC
 * it chose. Each run starts from an identical state — all globals, %o,
 * %l, %i (the CTI's window, so the handler must read and write %l/%i
 * through the flushed save area), CCR, and for FP branches %fsr's fcc0..3
 * — and stores all of them back (selftest_probes.S says how). PC and nPC
 * after the CTI are read from marks that the delay slot, the fall-through
 * words and the target words leave in %g4.
 *
 * Per case, three things are checked and counted per group:
 *   - probed equals unprobed: the marks (PC, nPC), CCR, every register,
 *     %fsr for FP branches, and the scratch-stack bytes above %sp;
 *   - unprobed equals an independent model written from the V9 manual's
 *     tables (condition per cond, taken/annulled → PC/nPC), so the test
 *     cannot pass by running the same wrong thing twice, or nothing;
 *   - the probe fired: the site held the illtrap when the probed run
 *     began and the trap frame left bytes below %sp, which the unprobed
 *     run (interrupts off) never does, and the site held the CTI itself
 *     in the unprobed run.
 * A failure is explained in INFO lines (case, state, first fields that
 * differ) before its FAIL line.
 *
 * Then a function with loops, nested conditionals, a switch (jump table),
 * direct, indirect and windowed calls gets a branch probe on every CTI
 * it contains (its words are walked from tb_fn to tb_end) and must give
 * the unprobed results; a counting twin of it says how many CTIs ran, the
 * number of firings that run must cause.
 *
 * Probes use ids from 4000 and are all cleared after each site word
 * (tracer_clear removes every probe: the self-test is not meant to run
 * during a trace); the mechanism in force before is restored.
 *
 * This file is the area: it checks the layout the assembly shares and the
 * encoder, then runs the classes and the every-CTI function. The parts are
 * files of their own: the model (selftest_probes_model.c), the runner
 * (selftest_probes_run.c), each class's words and states
 * (selftest_probes_classes.c), the every-CTI function
 * (selftest_probes_every_cti.c), and what they share (selftest_probes.h).
 */
#include <stdint.h>
#include "arch.h"
#include "selftest.h"
#include "selftest_probes.h"
#include "tracer.h"
#include "tracer_arch.h"

static void selftest_probes(void)
{
	const char *old_mechanism = tarch_mechanisms[tracer_mechanism].name;
	uint64_t t0 = arch_cycles();

	if (!report(dt_layout_ok(), "struct dt_state and the marks match "
		    "selftest_probes.S"))
		return;
	dt_test_encoder();
	if (!report(tracer_set_mechanism("emulate") == 0, "probe mechanism set to emulate "
		    "(no probe may be enabled when the area starts)"))
		return;
	if (!report(dt_site_open(), "writable alias of the site's text page"))
		goto out;
	dt_test_classes();
	dt_site_close();
	dt_test_every_cti();
out:
	tracer_clear();
	if (tracer_set_mechanism(old_mechanism) != 0)
		report(false, "mechanism %s restored", old_mechanism);
	uint64_t us = (arch_cycles() - t0) * 1000000 / arch_cycles_hz();
	report_info("probes area: %lu.%03lu s of guest time", (unsigned long)(us / 1000000),
		    (unsigned long)(us / 1000 % 1000));
}
SELFTEST(400, "probes", selftest_probes);
