/*
 * dprobes.c — DProbes' five experiments (seed 002, §4), every mechanism of
 * the arch, in one run, the handlers being real probe programs.
 *
 *   1  base:        bench_loop (benchloop.h), three one-cycle instructions
 *                   an iteration, unprobed;
 *   2  M.pair       null probes (action null, no program) under a lossy
 *                   mechanism (single-step in situ, shell game), on
 *                   bench_loop2;
 *   3  M.abort      a probe on the loop's probed instruction, under an
 *                   emulating mechanism, running a program of one `abort`;
 *   4  M.push       as 3, the program pushing a register first;
 *   5  M.log        as 3, the program logging a word and ending by `exit`,
 *                   so every firing writes a LOG record, and the drain
 *                   thread sending it over the serial line: timed from the
 *                   loop's start until the last record is sent.
 * Beside them, on the same probe: M.null, no program and action null —
 * what the fire path costs with nothing to run, held against the bare
 * trap; and M.ops8, M.ops32, programs of 8 and 32 instructions, which
 * with the one of M.abort give the cost of an RPN instruction.
 * (M is a mechanism's name: `int3.null`, `shellgame.pair`.)
 *
 * The host compiles and loads the programs (bench/suite/perf/dprobes.py) and
 * passes their slots; an experiment whose slot is WIRE_PROGRAMS (the
 * default) is left out, so `run dprobes` alone measures 1, 2 and M.null.
 *
 * The lossy baselines cannot be measured alone in that loop (the shell
 * game re-arms a probe when the next one fires), so every mechanism is
 * also measured with a null probe on each of the two sites of
 * bench_loop2 (`M.pair`, against its own unprobed `base2`): the
 * baseline / emulated ratio compares those, one loop, the same firings.
 * Also the bare trap round trip of the arch (tracer_bare_trap, minus its
 * trap-less twin), the reference the emulating probes are held against.
 * Each figure goes out as a TEXT line `dp NAME CYCLES ITERATIONS FIRINGS`
 * (CYCLES of the arch counter, whose rate HELLO gives, for the whole
 * loop); a mechanism that cannot arm the site, or a slot the probe cannot
 * run, gives `dp NAME refused: REASON`; the cycles are the fastest of
 * `tries` runs of the loop, the firings those of one run. The drain is
 * held off except in 5, so the others time the fire path.
 * The result value is n; ok when every emulated loop fired on every
 * iteration (a lossy one may fire fewer: the shell game misses by design).
 */
#include "arch.h"
#include "benchloop.h"
#include "console.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"
#include "workload.h"

enum { DP_PROBE = 4095, DP_PAIR_A = 4093, DP_PAIR_B = 4094 };

static void line(const char *name, const char *suffix, uint64_t cycles,
		 uint64_t iters, uint64_t fired)
{
	kprintf("dp %s%s %llu %llu %llu\n", name, suffix, (unsigned long long)cycles,
		(unsigned long long)iters, (unsigned long long)fired);
}

/* Each loop is timed `tries` times and the fastest kept: a timer tick or
 * the host descheduling the vCPU lands in one try, not in the figure. */
static unsigned tries;

static uint64_t time_loop(void (*loop)(unsigned long), uint64_t n)
{
	uint64_t best = UINT64_MAX;
	for (unsigned t = 0; t < tries; t++) {
		uint64_t t0 = arch_cycles();
		loop((unsigned long)n);
		uint64_t c = arch_cycles() - t0;
		best = c < best ? c : best;
	}
	return best;
}

/* bench_loop2 with a null probe on both sites: its firings, or
 * UINT64_MAX if the mechanism cannot arm them. */
static uint64_t pair(const char *mechanism, uint64_t n)
{
	char why[WIRE_MAX_REASON];
	if (tracer_probe_add(DP_PAIR_A, (uintptr_t)bench_loop2_a, bench_loop_kind, 0,
			     why, sizeof why) != 0 ||
	    tracer_probe_add(DP_PAIR_B, (uintptr_t)bench_loop2_b, bench_loop_kind, 0,
			     why, sizeof why) != 0 ||
	    tracer_probe_set(DP_PAIR_A, true, why, sizeof why) != 0 ||
	    tracer_probe_set(DP_PAIR_B, true, why, sizeof why) != 0) {
		kprintf("dp %s.pair refused: %s\n", mechanism, why);
		tracer_clear();
		return UINT64_MAX;
	}
	tracer_probe_action(DP_PAIR_A, TRACER_ACTION_NULL, why, sizeof why);
	tracer_probe_action(DP_PAIR_B, TRACER_ACTION_NULL, why, sizeof why);
	tracer_settle();
	tracer_drain_pause(true);
	uint64_t fired = tracer_fired_count();
	uint64_t cycles = time_loop(bench_loop2, n);
	fired = (tracer_fired_count() - fired) / tries;
	tracer_drain_pause(false);
	tracer_clear();
	line(mechanism, ".pair", cycles, n, fired);
	return fired;
}

static uint64_t time_calls(uint64_t n, void (*fn)(void))
{
	uint64_t best = UINT64_MAX;
	for (unsigned t = 0; t < tries; t++) {
		uint64_t t0 = arch_cycles();
		for (uint64_t i = 0; i < n; i++)
			fn();
		uint64_t c = arch_cycles() - t0;
		best = c < best ? c : best;
	}
	return best;
}

/* The programs of the experiments that run one: the slot parameter that
 * names each (dprobes_params, from index SLOT_PARAM), and its name on the line. */
static const struct {
	const char *suffix;
	bool        drained;
} programs[] = {
	{ ".abort", false }, { ".push", false }, { ".ops8", false },
	{ ".ops32", false }, { ".log", true },
};
#define NPROGRAMS (sizeof programs / sizeof programs[0])
#define SLOT_PARAM 4

/* One probed loop, running the program in slot (-1: none, action null);
 * returns its firings, or n if the probe cannot run the slot (the line
 * says why; that is not a miss). With drained, the drain runs and the time
 * includes sending every record. */
static uint64_t probed(const char *mechanism, const char *suffix, int slot,
		       uint64_t n, bool drained)
{
	char why[WIRE_MAX_REASON];
	if (tracer_probe_program(DP_PROBE, slot, why, sizeof why) != 0) {
		kprintf("dp %s%s refused: %s\n", mechanism, suffix, why);
		return n;
	}
	if (!drained)
		tracer_drain_pause(true);
	uint64_t fired = tracer_fired_count(), cycles = UINT64_MAX;
	for (unsigned t = 0; t < tries; t++) {
		uint64_t t0 = arch_cycles();
		bench_loop((unsigned long)n);
		if (drained)
			tracer_flush();
		uint64_t c = arch_cycles() - t0;
		cycles = c < cycles ? c : cycles;
	}
	fired = (tracer_fired_count() - fired) / tries;
	tracer_drain_pause(false);
	tracer_probe_program(DP_PROBE, -1, why, sizeof why);
	line(mechanism, suffix, cycles, n, fired);
	return fired;
}

static void run_dprobes(const uint64_t *v, struct workload_result *res)
{
	uint64_t n = v[0], base_n = n * v[1];
	char why[WIRE_MAX_REASON];

	tries = (unsigned)v[2];
	res->value = n;
	res->ok = true;
	tracer_flush();               /* no earlier record in the drained time */
	line("base", "", time_loop(bench_loop, base_n), base_n, 0);
	line("base2", "", time_loop(bench_loop2, base_n), base_n, 0);
	line("bare_trap", "", time_calls(n, tracer_bare_trap), n, 0);
	line("bare_none", "", time_calls(n, tracer_bare_none), n, 0);

	for (unsigned m = 0; m < tarch_nmechanisms; m++) {
		const char *name = tarch_mechanisms[m].name;
		bool lossy = mechanism_lossy(m);
		if (!(v[3] >> m & 1))
			continue;
		if (tracer_set_mechanism(name) != 0) {
			kprintf("dp %s refused: no such mechanism\n", name);
			continue;
		}
		/* Every firing, two an iteration (the last iteration of the
		 * sparc64 loop leaves by its first branch: one fewer). */
		uint64_t fired = pair(name, n);
		if (!lossy && fired != UINT64_MAX && fired != 2 * n && fired != 2 * n - 1)
			res->ok = false;
		if (lossy)
			continue;
		if (tracer_probe_add(DP_PROBE, (uintptr_t)bench_loop_site,
				     bench_loop_kind, 0, why, sizeof why) != 0 ||
		    tracer_probe_set(DP_PROBE, true, why, sizeof why) != 0) {
			kprintf("dp %s refused: %s\n", name, why);
			tracer_clear();
			continue;
		}
		tracer_probe_action(DP_PROBE, TRACER_ACTION_NULL, why, sizeof why);
		tracer_settle();
		if (probed(name, ".null", -1, n, false) != n)
			res->ok = false;
		for (unsigned k = 0; k < NPROGRAMS; k++) {
			uint64_t slot = v[SLOT_PARAM + k];
			if (slot < WIRE_PROGRAMS &&
			    probed(name, programs[k].suffix, (int)slot, n,
				   programs[k].drained) != n)
				res->ok = false;
		}
		tracer_clear();
	}
	tracer_set_mechanism(tarch_mechanisms[0].name);
}

static const struct workload_param dprobes_params[] = {
	{ "n", 2000, 10, 10000000, "probed iterations per experiment" },
	{ "base", 100, 1, 10000, "the unprobed loop runs n x base iterations" },
	{ "tries", 3, 1, 100, "times each loop runs; the fastest counts" },
	{ "mechanisms", 255, 0, 255, "mechanisms to measure, bit m = tarch_mechanisms[m]" },
	{ "abort", WIRE_PROGRAMS, 0, WIRE_PROGRAMS, "slot of experiment 3's program "
	  "(abort alone); the default leaves the experiment out" },
	{ "push", WIRE_PROGRAMS, 0, WIRE_PROGRAMS, "slot of experiment 4's (push a "
	  "register, abort)" },
	{ "ops8", WIRE_PROGRAMS, 0, WIRE_PROGRAMS, "slot of a program of 8 instructions" },
	{ "ops32", WIRE_PROGRAMS, 0, WIRE_PROGRAMS, "slot of a program of 32 instructions" },
	{ "log", WIRE_PROGRAMS, 0, WIRE_PROGRAMS, "slot of experiment 5's (log a word, "
	  "exit), drained" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(dprobes) = {
	"dprobes", "DProbes' five experiments on bench_loop, every mechanism; "
	"value = n", dprobes_params, run_dprobes,
};
