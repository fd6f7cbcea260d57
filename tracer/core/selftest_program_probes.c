/*
 * selftest_program_probes.c — programs at real probes in a running
 * function, under each lossless mechanism of the arch.
 *
 * An entry probe on prog_target runs a program that reads the arguments
 * and then loads from an unmapped address: the fault is taken inside the
 * fire path (i386: a #PF with interrupts masked in the #BP/#UD handler;
 * sparc64: a data fault at TL 0 in the illegal_instruction handler after
 * trap_entry) and recovered by the program's try, nested in the test's
 * own. Every call must still answer right, every run count as a fault, no
 * record be written, and the test's try still catch afterwards. Then a
 * program that logs a FAULT token, every register, the pass count, the
 * maximum hit count and its disarming, and the rules of a slot in use.
 */
#include "cpu.h"
#include "mm.h"
#include "selftest.h"
#include "selftest_programs.h"
#include "tarch/registers.h"
#include "thread.h"
#include "trap.h"
#include "tracer_arch.h"

#define PROBE_ID  (TRACER_MAX_PROBES - 1)
#define P_FAULT   (WIRE_PROGRAMS - 4)
#define P_LOG     (WIRE_PROGRAMS - 5)
#define P_REGS    (WIRE_PROGRAMS - 6)
#define G_ARG0    40
#define G_ARG1    41
#define G_PC      42
#define G_REGS    43
#define CALLS     8

__attribute__((noinline)) unsigned long prog_leaf(unsigned long x);
__attribute__((noinline)) unsigned long prog_leaf(unsigned long x)
{
	__asm__ volatile("" ::: "memory");
	return 2 * x + 1;
}

/* The probed function: not a leaf, so that sparc64 has a save to probe. */
__attribute__((noinline)) unsigned long prog_target(unsigned long a, unsigned long b);
__attribute__((noinline)) unsigned long prog_target(unsigned long a, unsigned long b)
{
	return prog_leaf(a) + 3 * b;
}

struct calls {
	unsigned          n;
	volatile unsigned right;
	volatile bool     finished;
};

/* n calls, then a fault of the test's own (the outer try's to catch). */
static void call_then_fault(void *arg)
{
	struct calls *c = arg;
	for (unsigned i = 0; i < c->n; i++)
		if (prog_target(i, 100 + i) == 2 * i + 1 + 3 * (100 + i))
			c->right++;
	c->finished = true;
	(void)*(volatile unsigned long *)mm_unmapped_probe_addr;
}

/* n calls; how many answered right. */
static unsigned call(unsigned n)
{
	unsigned right = 0;
	for (unsigned i = 0; i < n; i++)
		right += prog_target(i, 100 + i) == 2 * i + 1 + 3 * (100 + i);
	return right;
}

static const struct probe *probe(void)
{
	return &tracer_probes[PROBE_ID];
}

static const struct probe_gate *gate(void)
{
	return &probe_gates[PROBE_ID];
}

/* A fresh probe at prog_target's entry, enabled, running slot (or none). */
static bool arm(int slot)
{
	char why[WIRE_MAX_REASON];
	tracer_clear();
	if (tracer_probe_add(PROBE_ID, (uintptr_t)prog_target, WIRE_EVENT_ENTRY, 2, why,
			     sizeof why) != 0 ||
	    (slot >= 0 && tracer_probe_program(PROBE_ID, slot, why, sizeof why) != 0) ||
	    tracer_probe_set(PROBE_ID, true, why, sizeof why) != 0) {
		report_info("probe at prog_target refused: %s", why);
		return false;
	}
	tracer_settle();
	return true;
}

static void disarm(void)
{
	char why[WIRE_MAX_REASON];
	tracer_probe_set(PROBE_ID, false, why, sizeof why);
	tracer_settle();
}

static void install(unsigned slot, const struct wire_rpn_insn *insn, unsigned n)
{
	char why[WIRE_MAX_REASON];
	if (tp_install(slot, insn, n, 0, 0, why, sizeof why) != 0)
		report_info("slot %u: %s", slot, why);
}

/* The fault inside the fire path, and the LOG records of logm's FAULT. */
static void test_faults(const char *mechanism)
{
	struct calls c = { .n = CALLS };
	struct caught_trap t = { 0 };
	unsigned long sum0 = 0, sum1 = 0;
	for (unsigned i = 0; i < CALLS; i++) {
		sum0 += i;
		sum1 += 100 + i;
	}

	program_globals[G_ARG0] = program_globals[G_ARG1] = 0;
	if (!arm(P_FAULT))
		return;
	uint64_t recorded = tracer_recorded_count();
	bool caught = trap_try(call_then_fault, &c, &t);
	recorded = tracer_recorded_count() - recorded;
	disarm();
	report(c.right == CALLS, "%u calls answer right while their probe's program "
	       "faults inside the fire path", c.right);
	report(gate()->runs == CALLS && gate()->faults == CALLS && !recorded,
	       "each run ends as a fault: %lu runs, %lu faults, %llu records",
	       gate()->runs, gate()->faults, (unsigned long long)recorded);
	report(program_globals[G_ARG0] == sum0 && program_globals[G_ARG1] == sum1,
	       "arg 0 and arg 1 read before the fault: sums %lu and %lu",
	       (unsigned long)program_globals[G_ARG0], (unsigned long)program_globals[G_ARG1]);
	report(caught && c.finished && t.fault_addr == mm_unmapped_probe_addr,
	       "the try the calls ran in catches its own fault after them (%s)",
	       mechanism);

	program_globals[G_PC] = 0;
	if (!arm(P_LOG))
		return;
	recorded = tracer_recorded_count();
	unsigned right = call(CALLS);
	recorded = tracer_recorded_count() - recorded;
	disarm();
	report(right == CALLS && gate()->runs == CALLS && !gate()->faults &&
	       recorded == CALLS && program_globals[G_PC] == (uintptr_t)prog_target,
	       "logm of unmapped memory logs a FAULT token and goes on: %llu LOG "
	       "records, no fault, pc the site", (unsigned long long)recorded);

	program_globals[G_REGS] = 0;
	if (!arm(P_REGS))
		return;
	right = call(CALLS);
	disarm();
	report(right == CALLS && gate()->runs == CALLS && !gate()->faults,
	       "every one of the %u registers reads at an entry probe", TARCH_NREGISTERS);
}

static void test_pass_and_maxhits(void)
{
	char why[WIRE_MAX_REASON];
	if (!arm(P_LOG))
		return;
	tracer_probe_pass(PROBE_ID, 3, why, sizeof why);
	uint64_t recorded = tracer_recorded_count();
	unsigned right = call(9);
	recorded = tracer_recorded_count() - recorded;
	disarm();
	report(right == 9 && tracer_probe_hits(PROBE_ID) == 9 && gate()->runs == 3 && recorded == 3,
	       "pass 3: 9 hits run the program 3 times (%lu runs, %llu records)",
	       gate()->runs, (unsigned long long)recorded);

	if (!arm(-1))
		return;
	tracer_probe_maxhits(PROBE_ID, 4, why, sizeof why);
	recorded = tracer_recorded_count();
	right = call(6);
	recorded = tracer_recorded_count() - recorded;
	report(right == 6 && tracer_probe_hits(PROBE_ID) == 6 && gate()->over == 2 && recorded == 4,
	       "maxhits 4, no program: 6 hits, 4 records, 2 over (%u right, %llu hits, "
	       "%llu records, %llu over)", right,
	       (unsigned long long)tracer_probe_hits(PROBE_ID), (unsigned long long)recorded,
	       (unsigned long long)gate()->over);
	unsigned ticks = 0;
	while (probe()->state == PROBE_ENABLED && ticks < 500) {
		thread_sleep(1);
		ticks++;
	}
	unsigned long hits = tracer_probe_hits(PROBE_ID);
	right = call(3);
	report(probe()->state == PROBE_DISABLED && tracer_probe_hits(PROBE_ID) == hits && right == 3,
	       "a spent probe is disarmed soon after, outside the fire path");

	if (!arm(P_LOG))
		return;
	tracer_probe_maxhits(PROBE_ID, 2, why, sizeof why);
	recorded = tracer_recorded_count();
	right = call(5);
	recorded = tracer_recorded_count() - recorded;
	disarm();
	report(right == 5 && gate()->runs == 2 && gate()->over == 3 && recorded == 2,
	       "maxhits 2 with a program: 2 runs, 3 over");
}

static void test_slots(void)
{
	static const struct wire_rpn_insn other[] = { INSN(ABORT, 0, 0, 0) };
	char why[WIRE_MAX_REASON];
	if (!arm(P_LOG))
		return;
	int rc = tp_install(P_LOG, other, 1, 0, 0, why, sizeof why);
	report(rc != 0 && contains(why, "can fire") && programs[P_LOG].insn[0].op !=
	       WIRE_RPN_ABORT, "program check of a slot an enabled probe runs is "
	       "refused: %s", why);
	rc = program_clear(P_LOG, why, sizeof why);
	report(rc != 0 && programs[P_LOG].installed, "so is program clear: %s", why);

	rc = tracer_probe_program(PROBE_ID, P_FAULT, why, sizeof why);
	unsigned right = call(2);
	report(rc == 0 && right == 2 && gate()->faults == 2, "a live probe switches "
	       "programs between two firings");
	tracer_probe_program(PROBE_ID, P_LOG, why, sizeof why);
	disarm();

	rc = program_clear(P_LOG, why, sizeof why);
	report(rc == 0 && !programs[P_LOG].installed && !gate()->program &&
	       !probe()->gated, "once the probe is disabled, program clear empties "
	       "the slot and detaches it");
	rc = tracer_probe_program(PROBE_ID, P_LOG, why, sizeof why);
	report(rc != 0 && contains(why, "holds no program"), "probe program of an "
	       "empty slot is refused: %s", why);
}

static void selftest_program_probes(void)
{
	const char *old = tarch_mechanisms[tracer_mechanism].name;
	const uintptr_t hole = mm_unmapped_probe_addr;
	struct wire_rpn_insn faults[] = {
		INSN(ARG, 0, 0, 0), INSN(GADD, 0, G_ARG0, 0),
		INSN(ARG, 1, 0, 0), INSN(GADD, 0, G_ARG1, 0),
		INSN(PUSH, 0, 0, (int32_t)(uint32_t)((uint64_t)hole >> 32)),
		INSN(PUSHHI, 0, 0, (int32_t)(uint32_t)hole),
		INSN(LOAD, ADDR, 0, 0), INSN(DROP, 0, 0, 0), INSN(EXIT, 0, 0, 0),
	};
	struct wire_rpn_insn logs[] = {
		INSN(PUSH, 0, 0, 16),
		INSN(PUSH, 0, 0, (int32_t)(uint32_t)((uint64_t)hole >> 32)),
		INSN(PUSHHI, 0, 0, (int32_t)(uint32_t)hole),
		INSN(LOGM, 0, 0, 0), INSN(ARG, 0, 0, 0), INSN(LOG, 1, WORD, 0),
		INSN(PC, 0, 0, 0), INSN(GSET, 0, G_PC, 0), INSN(EXIT, 0, 0, 0),
	};
	struct wire_rpn_insn regs[2 * TARCH_NREGISTERS + 1];
	for (unsigned r = 0; r < TARCH_NREGISTERS; r++) {
		regs[2 * r] = INSN(REG, r, 0, 0);
		regs[2 * r + 1] = INSN(GADD, 0, G_REGS, 0);
	}
	regs[2 * TARCH_NREGISTERS] = INSN(ABORT, 0, 0, 0);

	report_prefix_push("probes");
	tracer_flush();             /* room in the buffers for every record counted */
	install(P_FAULT, faults, NINSNS(faults));
	install(P_LOG, logs, NINSNS(logs));
	install(P_REGS, regs, NINSNS(regs));
	for (unsigned m = 0; m < tarch_nmechanisms; m++) {
		if (mechanism_lossy(m))
			continue;
		report_prefix_push(tarch_mechanisms[m].name);
		if (tracer_set_mechanism(tarch_mechanisms[m].name) == 0)
			test_faults(tarch_mechanisms[m].name);
		else
			report(false, "mechanism refused");
		report_prefix_pop();
	}
	tracer_set_mechanism(old);
	test_pass_and_maxhits();
	test_slots();
	tracer_clear();
	char why[WIRE_MAX_REASON];
	program_clear(P_FAULT, why, sizeof why);
	program_clear(P_LOG, why, sizeof why);
	program_clear(P_REGS, why, sizeof why);
	program_globals[G_ARG0] = program_globals[G_ARG1] = 0;
	program_globals[G_PC] = program_globals[G_REGS] = 0;
	report_prefix_pop();
}

SELFTEST(440, "programs", selftest_program_probes);
