/*
 * selftest_tramp.c — the trap-free mechanism (tramp.c) against the CPU.
 * tramp_outer (save; call; `ret; restore %i0, 7, %o0`) and its leaf
 * tramp_leaf (sllx; `retl; add %o0, 3, %o0`) run for a set of operands
 * unprobed, then with tramp entry and return probes on both, recording
 * (the slot's way into C) and counting only (its own counting path): the
 * results must equal unprobed, each probe fire once a call, each site
 * hold a `ba,a`. Then what must go wrong does: a `retl; rd %pc, %o0` is
 * refused naming its delay slot; a branch 16 MiB away is out of reach; a
 * trampoline that skips the delay slot (tramp_skip_delay_broken, on the
 * leaf's retl) gives results that differ from unprobed; a slot another
 * thread's stack points into is held from reuse. Probe ids 3800 and up;
 * the table is cleared and the mechanism restored at the end.
 */
#include <stdint.h>
#include "kstring.h"
#include "selftest.h"
#include "thread.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "tramp.h"
#include "wire.h"

uint64_t tramp_outer(uint64_t a, uint64_t b);
uint64_t tramp_pc_leaf(void);
extern const uint32_t tramp_outer_ret[], tramp_leaf[], tramp_leaf_retl[],
		      tramp_pc_leaf_retl[];
extern volatile unsigned tramp_skip_delay_broken;

__asm__(
	".text\n"
	".align 4\n"
	".global tramp_outer, tramp_outer_ret, tramp_leaf, tramp_leaf_retl\n"
	".global tramp_pc_leaf, tramp_pc_leaf_retl\n"
	".type tramp_outer, #function\n"
	"tramp_outer:\n"
	"	save %sp, -176, %sp\n"
	"	call tramp_leaf\n"
	"	 mov %i0, %o0\n"
	"	add %o0, %i1, %i0\n"
	"tramp_outer_ret:\n"
	"	ret\n"
	"	 restore %i0, 7, %o0\n"
	".size tramp_outer, . - tramp_outer\n"
	".type tramp_leaf, #function\n"
	"tramp_leaf:\n"
	"	sllx %o0, 1, %o0\n"
	"tramp_leaf_retl:\n"
	"	retl\n"
	"	 add %o0, 3, %o0\n"
	".size tramp_leaf, . - tramp_leaf\n"
	".type tramp_pc_leaf, #function\n"
	"tramp_pc_leaf:\n"
	"	nop\n"
	"tramp_pc_leaf_retl:\n"
	"	retl\n"
	"	 rd %pc, %o0\n"
	".size tramp_pc_leaf, . - tramp_pc_leaf\n");

#define ID_BASE  3800u
#define NSITES   4

static const uint64_t operands[][2] = {
	{ 0, 0 }, { 1, 2 }, { 0xffffffffu, 1 }, { 0x7fffffffffffffffull, 5 },
	{ 0x8000000000000000ull, 0x8000000000000000ull }, { 12345, (uint64_t)-12345 },
};
#define NOPS (sizeof operands / sizeof operands[0])

static const unsigned site_kind[NSITES] = {
	WIRE_EVENT_ENTRY, WIRE_EVENT_RETURN, WIRE_EVENT_ENTRY, WIRE_EVENT_RETURN,
};

/* tramp_outer's save and ret, tramp_leaf's sllx and retl. */
static uintptr_t site_addr(unsigned i)
{
	const uint32_t *at[NSITES] = { (const uint32_t *)(uintptr_t)tramp_outer,
				       tramp_outer_ret, tramp_leaf, tramp_leaf_retl };
	return (uintptr_t)at[i];
}

static bool contains(const char *s, const char *word)
{
	for (size_t n = strlen(word); *s; s++)
		if (strncmp(s, word, n) == 0)
			return true;
	return false;
}

static bool is_ba_a(uint32_t w)
{
	return (w & 0xffc00000u) == 0x30800000u;
}

/* Arm the four probes (action: record or count only); false with a
 * report if one is refused. */
static bool arm_all(unsigned action)
{
	char why[WIRE_MAX_REASON];
	for (unsigned i = 0; i < NSITES; i++) {
		if (tracer_probe_add(ID_BASE + i, site_addr(i), site_kind[i], 0, why,
				     sizeof why) ||
		    tracer_probe_action(ID_BASE + i, action, why, sizeof why) ||
		    tracer_probe_set(ID_BASE + i, true, why, sizeof why)) {
			report(false, "tramp: probe on site %u: %s", i, why);
			return false;
		}
	}
	tracer_settle();
	return true;
}

/* Run every operand pair; how many results differ from want. */
static unsigned run_all(const uint64_t *want, const char *what)
{
	unsigned bad = 0;
	for (unsigned i = 0; i < NOPS; i++) {
		uint64_t got = tramp_outer(operands[i][0], operands[i][1]);
		if (got != want[i] && bad++ < 2 && what)
			report_info("tramp (%s): operands 0x%llx, 0x%llx: unprobed 0x%llx, "
				    "probed 0x%llx", what,
				    (unsigned long long)operands[i][0],
				    (unsigned long long)operands[i][1],
				    (unsigned long long)want[i], (unsigned long long)got);
	}
	return bad;
}

static void disarm_all(void)
{
	char why[WIRE_MAX_REASON];
	for (unsigned i = 0; i < NSITES; i++)
		tracer_probe_set(ID_BASE + i, false, why, sizeof why);
	tracer_settle();
}

static void check_actions(const uint64_t *want)
{
	static const struct { unsigned action; const char *what; } actions[] = {
		{ TRACER_ACTION_RECORD, "recording" }, { TRACER_ACTION_NULL, "counting" },
	};
	for (unsigned a = 0; a < 2; a++) {
		if (!arm_all(actions[a].action))
			return;
		unsigned jumps = 0;
		for (unsigned i = 0; i < NSITES; i++)
			jumps += is_ba_a(*(const volatile uint32_t *)site_addr(i));
		unsigned bad = run_all(want, actions[a].what);
		disarm_all();
		unsigned fired_ok = 0;
		for (unsigned i = 0; i < NSITES; i++)
			fired_ok += tracer_probe_hits(ID_BASE + i) == NOPS;
		report(!bad && jumps == NSITES && fired_ok == NSITES,
		       "tramp (%s): entry and return of a saving function and a leaf, "
		       "%u operand pairs: results equal unprobed (%u differ), %u of %u "
		       "sites held ba,a, %u of %u probes fired once a call",
		       actions[a].what, (unsigned)NOPS, bad, jumps, NSITES, fired_ok,
		       NSITES);
		tracer_clear();
	}
}

/* What must be refused or caught. */
static void check_failures(const uint64_t *want)
{
	char why[WIRE_MAX_REASON] = "";
	uint32_t w;
	bool added = !tracer_probe_add(ID_BASE + 10, (uintptr_t)tramp_pc_leaf_retl,
				       WIRE_EVENT_RETURN, 0, why, sizeof why);
	bool refused = added && tracer_probe_set(ID_BASE + 10, true, why, sizeof why) != 0;
	report(refused && contains(why, "the delay slot") &&
	       *(const volatile uint32_t *)(uintptr_t)tramp_pc_leaf_retl == 0x81c3e008u,
	       "tramp: a retl whose delay slot reads the PC is refused, the site "
	       "unchanged: %s", why);
	tracer_clear();
	const uintptr_t base = 0x1000000, mib = 1u << 20;
	w = 0;
	report(!tramp_branch(base, base + 16 * mib, true, &w) &&
	       tramp_branch(base, base - 8 * mib, true, &w) && w == 0x30a00000u,
	       "tramp: a ba reaches -8 MiB (0x%08x), not +16 MiB", w);

	/* The leaf's retl alone: skipping outer's `restore` would leave
	 * the window file one window off, which no comparison survives. */
	tramp_skip_delay_broken = 1;
	unsigned bad = 0;
	if (!tracer_probe_add(ID_BASE + 3, site_addr(3), WIRE_EVENT_RETURN, 0, why,
			      sizeof why) &&
	    !tracer_probe_set(ID_BASE + 3, true, why, sizeof why)) {
		tracer_settle();
		bad = run_all(want, 0);
		tracer_probe_set(ID_BASE + 3, false, why, sizeof why);
		tracer_settle();
	}
	tramp_skip_delay_broken = 0;
	tracer_clear();
	report(bad == NOPS, "tramp: a trampoline that skips the delay slot is caught: "
	       "%u of %u results differ from unprobed", bad, (unsigned)NOPS);
}

/* A thread that keeps an address inside a slot on its stack, as one
 * preempted there does (an interrupt's TPC, a window's %i7), until told. */
static volatile unsigned holding;

static void hold_slot(void *at)
{
	volatile uintptr_t inside = (uintptr_t)at;      /* in its frame */
	holding = 1;
	while (holding == 1)
		thread_yield();
	(void)inside;
	holding = 3;
}

/* A slot is not reused while another thread's stack points into it. */
static void check_quiescence(void)
{
	enum { SLOT = 7 };
	uintptr_t at = (uintptr_t)tramp_slots + 4 * (SLOT * TRAMP_SLOT_WORDS + TRAMP_TAIL);
	holding = 0;
	struct thread *t = thread_create("tramp-hold", hold_slot, (void *)at,
					 THREAD_ANY_CPU);
	if (!report(t != 0, "tramp: a thread to hold a slot"))
		return;
	while (holding != 1)
		thread_yield();
	bool held = !tramp_slot_quiet(SLOT), other = tramp_slot_quiet(SLOT + 1);
	holding = 2;
	thread_join(t);
	report(held && other && holding == 3 && tramp_slot_quiet(SLOT),
	       "tramp: a slot a preempted thread points into is held (%s), another "
	       "is not (%s), and once the thread is gone neither is",
	       held ? "held" : "NOT held", other ? "free" : "NOT free");
}

static void selftest_tramp(void)
{
	const char *old_mechanism = tarch_mechanisms[tracer_mechanism].name;
	uint64_t want[NOPS];
	for (unsigned i = 0; i < NOPS; i++)
		want[i] = tramp_outer(operands[i][0], operands[i][1]);
	if (!report(tracer_set_mechanism("tramp") == 0, "probe mechanism set to tramp"))
		return;
	check_actions(want);
	check_failures(want);
	check_quiescence();
	tracer_clear();
	if (tracer_set_mechanism(old_mechanism) != 0)
		report(false, "mechanism %s restored", old_mechanism);
}
SELFTEST(406, "probes", selftest_tramp);
