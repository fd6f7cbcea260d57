/*
 * selftest_program_context.c — what a program reads of the trapped
 * context at real probes: registers, arguments, the return value.
 *
 * The values depend on the arch, so the arch gives the rows
 * (tracer_arch.h, tracer/arch/<arch>/selftest_program_sites.*): a site,
 * the kind of probe to put there, instructions that push one word, and
 * the word. For each row this test installs the program "those
 * instructions; gset; abort", puts the probe at the site running it, runs
 * the arch's code once and compares the global — or, for a row that
 * faults, checks that the run ended as a fault. The code must still
 * return its answer.
 */
#include "selftest.h"
#include "selftest_programs.h"
#include "tracer_arch.h"

#define SLOT     (WIRE_PROGRAMS - 7)
#define PROBE_ID (TRACER_MAX_PROBES - 2)
#define G_WORD   44

static void check_row(const struct tarch_context_check *c)
{
	struct wire_rpn_insn insn[8];
	char why[WIRE_MAX_REASON];
	unsigned n = 0;
	for (unsigned i = 0; i < c->nread; i++)
		insn[n++] = c->read[i];
	insn[n++] = INSN(GSET, 0, G_WORD, 0);
	insn[n++] = INSN(ABORT, 0, 0, 0);

	tracer_clear();
	program_globals[G_WORD] = 0x5a5a;
	if (tp_install(SLOT, insn, n, 0, 0, why, sizeof why) != 0 ||
	    tracer_probe_add(PROBE_ID, (uintptr_t)c->site, c->kind, 0, why,
			     sizeof why) != 0 ||
	    tracer_probe_program(PROBE_ID, SLOT, why, sizeof why) != 0 ||
	    tracer_probe_set(PROBE_ID, true, why, sizeof why) != 0) {
		report(false, "%s: refused: %s", c->what, why);
		return;
	}
	tracer_settle();
	unsigned long answer = tarch_context_call(TARCH_CONTEXT_X);
	tracer_probe_set(PROBE_ID, false, why, sizeof why);
	tracer_settle();
	const struct probe_gate *p = &probe_gates[PROBE_ID];
	unsigned long got = program_globals[G_WORD];
	bool ran = answer == tarch_context_answer && p->runs == 1;
	if (c->faults)
		report(ran && p->faults == 1, "%s", c->what);
	else
		report(ran && !p->faults && got == c->want, "%s: 0x%lx (want 0x%lx)",
		       c->what, got, c->want);
}

static void selftest_program_context(void)
{
	char why[WIRE_MAX_REASON];
	report_prefix_push("context");
	for (unsigned i = 0; i < tarch_ncontext_checks; i++)
		check_row(&tarch_context_checks[i]);
	tracer_clear();
	program_clear(SLOT, why, sizeof why);
	program_globals[G_WORD] = 0;
	report_prefix_pop();
}

SELFTEST(450, "programs", selftest_program_context);
