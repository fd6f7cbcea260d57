/*
 * gate.c — what a firing of a gated probe does: DProbes' maximum hit count,
 * pass count and probe handler (the program), and the counts they keep.
 *
 * Hits count since the probe was added or the last `trace reset` (as
 * `probe list` shows them; a gated probe's in the gate's shared count,
 * hits.c). A hit past maxhits does nothing but count in
 * `over` (the arch still emulates the displaced instruction, as always); a
 * hit that is not a multiple of pass runs nothing; otherwise the program
 * runs instead of the probe's action: `exit` appends its LOG record through
 * the CPU's buffer (tracer_record: dropped and marked like any record), a
 * fault counts in `faults`. Pass applies to programs only. Spent probes are
 * disarmed soon after by the drain thread (gate_reap), since disarming may
 * need IPIs, which the fire path cannot make.
 */
#include "gate.h"
#include "arch.h"
#include "atomic.h"
#include "console.h"
#include "cpu.h"
#include "kstring.h"
#include "link.h"
#include "program.h"
#include "tracer.h"
#include "wire.h"

#define compiler_barrier() __asm__ volatile("" ::: "memory")

struct probe_gate probe_gates[TRACER_MAX_PROBES];

/* A hit went past a probe's maximum: gate_reap has work. */
static volatile bool spent;
/* Each CPU's log buffer, as DProbes has one per processor. */
static struct program_log logs[KERNEL_MAX_CPUS];

/* Program, pass and maxhits may change while the probe is enabled: a
 * firing reads each once, and a program does not change while a probe
 * that can fire points at it (program.c refuses), so a live probe
 * switches programs between two firings, with no window in which it is
 * disarmed and misses some. */
bool gate_fire(const struct probe *p, const struct tarch_context *ctx)
{
	struct probe_gate *g = &probe_gates[p->id];
	/* This hit's ordinal: the gated hits, shared, and the ungated ones
	 * made before the probe was gated (hits.c). */
	unsigned long hit = atomic_fetch_add(&g->hits, 1) + 1 +
			    tracer_probe_hits_ungated(p->id);
	unsigned long max = g->maxhits;
	if (max && hit > max) {
		atomic_fetch_add(&g->over, 1);
		spent = true;
		return false;
	}
	const struct program *prog = g->program;
	if (!prog)
		return true;                    /* a maximum only: the action */
	uint32_t pass = g->pass;
	if (pass > 1 && hit % pass)
		return false;
	atomic_fetch_add(&g->runs, 1);
	struct program_log *log = &logs[this_cpu()->id];
	switch (program_run(prog, p, ctx, log)) {
	case PROGRAM_EXIT:
		tracer_record(p, WIRE_EVENT_LOG, log->words, log->nwords);
		break;
	case PROGRAM_FAULT:
		atomic_fetch_add(&g->faults, 1);
		break;
	case PROGRAM_ABORT:
		break;
	}
	return false;
}

static void regate(struct probe *p)
{
	const struct probe_gate *g = &probe_gates[p->id];
	p->gated = g->program || g->maxhits;
}

static struct probe *probe_of(unsigned id, char *why, size_t why_size)
{
	if (id >= TRACER_MAX_PROBES || tracer_probes[id].state == PROBE_FREE) {
		ksnprintf(why, why_size, "no probe %u", id);
		return 0;
	}
	return &tracer_probes[id];
}

int tracer_probe_program(unsigned id, int slot, char *why, size_t why_size)
{
	struct probe *p = probe_of(id, why, why_size);
	if (!p)
		return -1;
	if (slot >= WIRE_PROGRAMS || (slot >= 0 && !programs[slot].installed)) {
		ksnprintf(why, why_size, "slot %d holds no program", slot);
		return -1;
	}
	struct probe_gate *g = &probe_gates[id];
	tracer_lock();
	if (slot < 0) {
		p->gated = g->maxhits != 0;     /* the fire path stops asking first */
		compiler_barrier();
		g->program = 0;
	} else {
		g->program = &programs[slot];   /* there before the fire path asks */
		compiler_barrier();
		regate(p);
	}
	tracer_recount_recording();
	tracer_unlock();
	return 0;
}

int tracer_probe_pass(unsigned id, uint32_t pass, char *why, size_t why_size)
{
	struct probe *p = probe_of(id, why, why_size);
	if (!p)
		return -1;
	probe_gates[id].pass = pass;
	return 0;
}

int tracer_probe_maxhits(unsigned id, unsigned long maxhits, char *why,
			 size_t why_size)
{
	struct probe *p = probe_of(id, why, why_size);
	if (!p)
		return -1;
	tracer_lock();
	probe_gates[id].maxhits = maxhits;
	compiler_barrier();
	regate(p);
	tracer_unlock();
	return 0;
}

/* Under the probe table's lock, but only when it can be had without a
 * wait: a command may hold it while it waits for the drain thread. A spent
 * probe enabled again is spent again at its next hit, until `trace reset`
 * zeroes its hits or its maxhits is raised. */
void gate_reap(void)
{
	if (!spent || !tracer_trylock())
		return;
	spent = false;
	unsigned n = 0;
	char why[WIRE_MAX_REASON];
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
		struct probe *p = &tracer_probes[i];
		unsigned long max = probe_gates[i].maxhits;
		if (p->state == PROBE_ENABLED && max && tracer_probe_hits(i) > max &&
		    tracer_probe_set(i, false, why, sizeof why) == 0)
			n++;
	}
	if (n)
		tracer_settle();
	tracer_unlock();
}

void gate_send_counts(void)
{
	static uint8_t frame[WIRE_MAX_PAYLOAD] __attribute__((aligned(8)));
	size_t used = 0;
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
		const struct probe *p = &tracer_probes[i];
		if (p->state == PROBE_FREE)
			continue;
		const struct probe_gate *g = &probe_gates[i];
		struct wire_probe_counts c = {
			.probe = p->id, .hits = tracer_probe_hits(i), .runs = g->runs,
			.faults = g->faults, .over = g->over,
			.missed = (uint32_t)tracer_probe_missed_count(i),
		};
		if (used + sizeof c > WIRE_MAX_PAYLOAD) {
			link_send(WIRE_FRAME_PROBES, frame, used, 0, 0);
			used = 0;
		}
		memcpy(frame + used, &c, sizeof c);
		used += sizeof c;
	}
	if (used)
		link_send(WIRE_FRAME_PROBES, frame, used, 0, 0);
}

void gate_reset_counts(void)
{
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
		struct probe_gate *g = &probe_gates[i];
		tracer_probe_hits_zero(i);
		g->runs = g->faults = g->over = 0;
	}
}

bool gate_runs_program(unsigned id)
{
	return probe_gates[id].program != 0;
}

void gate_detach(unsigned slot)
{
	char why[WIRE_MAX_REASON];
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++)
		if (tracer_probes[i].state != PROBE_FREE &&
		    probe_gates[i].program == &programs[slot])
			tracer_probe_program(i, -1, why, sizeof why);
}
