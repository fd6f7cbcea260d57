/*
 * tracer.h — probes, as the kernel and the arch's fire path see them.
 *
 * The host finds candidate sites in the ELF and numbers them; `probe add`
 * hands one to the guest as an entry, return or branch probe
 * (WIRE_PROBE_KINDS, wire.h), and the guest decodes the instruction there
 * once (tracer_arch.h) and refuses, with a reason, anything it cannot
 * emulate or must not touch. A probe then moves between DISABLED and
 * ENABLED as the host asks, while threads run: enabling writes the arch's
 * trap over the first byte or word of the site through a writable alias of
 * the read-only text, disabling writes the original back. Probe memory is
 * reused only after `probe clear`, which first makes every CPU pass
 * through an IPI: a CPU inside a fire path has interrupts masked, so once
 * all have answered, none still looks at an old probe.
 *
 * The fire path (the arch's trap hook, trap.h) looks the probe up by
 * address (lock-free: entries are published before the trap is written and
 * removed only by clear), records into this CPU's buffer (buffer.c), and
 * emulates. A probe may instead run a probe program (program.h) on the
 * trapped context, every `pass`th hit, for at most `maxhits` hits (gate.c,
 * struct probe_gate); the fire path tests one field, `gated`, to know
 * whether any of that applies.
 *
 * Everything here is arch-neutral; the arch supplies struct tarch_site and
 * the functions of tracer_arch.h.
 */
#ifndef TRACER_H
#define TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tarch/tracer_site.h"   /* struct tarch_site, from tracer/arch/<arch> */
#include "wire.h"

#define TRACER_MAX_PROBES 4096
#define TRACER_MAX_ARGS   WIRE_MAX_ARGS

enum probe_state { PROBE_FREE, PROBE_DISABLED, PROBE_ENABLED };

struct program;
/* A firing's trapped context as the arch's fire path knows it, opaque to
 * the core: probe programs read registers, arguments and the return value
 * through tracer_arch.h. NULL where there is none (hooks.c). */
struct tarch_context;

/* What a firing without a program does besides being counted and
 * emulated (`probe action`): RECORD appends its record to the CPU's buffer
 * (the default); NULL does nothing more, the fire path's own cost that the
 * bench holds against the bare trap. Anything else a firing does is a
 * probe program's (program.h). */
enum tracer_action { TRACER_ACTION_RECORD, TRACER_ACTION_NULL, TRACER_NACTIONS };
extern const char *const tracer_action_names[TRACER_NACTIONS];

struct probe {
	uintptr_t          addr;
	uint32_t           id;        /* the host's number, = index in the table */
	uint8_t            kind;      /* a WIRE_PROBE_KINDS value (wire.h) */
	uint8_t            nargs;     /* words to record: ENTRY arguments; RETURN
				       * value words (2: i386's edx too) */
	volatile uint8_t   state;     /* enum probe_state */
	uint8_t            mechanism; /* it was armed with: tarch_mechanisms[] index */
	uint8_t            unsettled; /* stored to since tracer_settle() */
	volatile uint8_t   action;    /* enum tracer_action */
	/* Nonzero when its probe_gates[] row has a program or a maxhits:
	 * the fire path's one test before it does the action (gate.c). */
	volatile uint8_t   gated;
	struct tarch_site  site;      /* the decoded original instruction */
	/* Where its argument words are (args.c); nargmap 0: the convention's. */
	uint8_t            argmap[TRACER_MAX_ARGS];
	uint8_t            nargmap;
	/* Its firings are counted per CPU in tracer_hits (below). */
};

/* What a gated probe does at a firing, and what came of it (gate.c;
 * `probe program|pass|maxhits`), in a table beside tracer_probes[] so that
 * a probe with none of it carries no more than `gated`: the program that
 * runs instead of the action (NULL: none), on hits that are multiples of
 * pass (0 and 1: every hit); hits past maxhits (0: no limit) do nothing
 * but count in over. Of the hits: runs of the program, runs a fault
 * ended, hits past maxhits. probe_gates[N] is probe N's. hits counts the
 * firings made while the probe was gated (shared by every CPU: a pass
 * and a maximum need each hit's ordinal), the rest count per CPU. */
struct probe_gate {
	const struct program *volatile program;
	volatile uint32_t      pass;
	volatile unsigned long maxhits;
	volatile unsigned long hits, runs, faults, over;
};

extern struct probe tracer_probes[TRACER_MAX_PROBES];
extern struct probe_gate probe_gates[TRACER_MAX_PROBES];

/* Hit counts (hits.c): tracer_hits[cpu][id] is probe id's ungated
 * firings on that CPU, written only by that CPU's fire path. A probe's
 * hits, since it was added or the last `trace reset`, are the sum of its
 * column and its gate's hits: tracer_probe_hits; the column alone:
 * tracer_probe_hits_ungated. Zeroing races with firings on other CPUs,
 * as any reset of a live count does. */
extern unsigned long tracer_hits[][TRACER_MAX_PROBES];
unsigned long tracer_probe_hits(unsigned id);
/* Each CPU's firings of every probe, gated or not (hits.c; the STATS
 * frame's fired), written only by that CPU's fire path, a line of its own. */
/* n: every firing; missed: of them, hits while this CPU was inside
 * tracer_fire already (in_fire), counted and not recorded. late: traps
 * at a probe found no longer enabled (tracer_late), not firings: in
 * neither n nor a probe's hits, never recorded. */
struct tracer_fired {
	volatile uint64_t n;
	volatile uint64_t missed;
	volatile uint64_t late;
	volatile uint8_t  in_fire;
} __attribute__((aligned(64)));
extern struct tracer_fired tracer_fired[];
unsigned long tracer_probe_hits_ungated(unsigned id);
void tracer_probe_hits_zero(unsigned id);

/* Disarming is a quiescence point, as kprobes' synchronize_rcu after a
 * disarm and DTrace's dtrace_sync are. A probe is disabled by storing
 * its state (probe.c, before its bytes), and `probe disable` answers
 * only after tracer_settle's syncs, which return once every other CPU
 * has taken an interrupt: a CPU inside a firing cannot (the fire path
 * runs with interrupts masked from the trap to its return), so every
 * firing that found the probe enabled has ended by then. A trap that
 * finds it no longer enabled — the CPU trapped on bytes it still saw
 * after the disarm: a vCPU held between its trap and its lookup, or
 * QEMU's TCG running a translation made while the original was stored
 * back — is late: not a firing (neither counted as one nor recorded, so
 * the counters `trace flush` sends are final once the disable answered)
 * but counted apart per CPU (`trace stats`); the arch still runs the
 * displaced instruction, as it would for any hit. late_broken (tests,
 * through the GDB stub) records and counts it as a firing, as before. */
extern volatile unsigned late_broken;
static inline bool tracer_late(const struct probe *p, unsigned cpu)
{
	if (__builtin_expect(p->state == PROBE_ENABLED, 1) || late_broken)
		return false;
	tracer_fired[cpu].late++;
	return true;
}
uint64_t tracer_late_count(void);

/* The probe kinds (wire.h WIRE_PROBE_KINDS): a kind's command word, or 0
 * if kind is not one a probe is added as; a word's kind, or -1; and every
 * word into buf, joined by sep (last_sep before the last one), returning
 * the length it needed. */
const char *tracer_probe_kind_word(unsigned kind);
int tracer_probe_kind(const char *word);
size_t tracer_probe_kind_words(char *buf, size_t size, const char *sep,
			       const char *last_sep);

/* Fire path: the probe at addr, or 0. Lock-free: an open-addressing
 * index keyed by address, tracer_hash_slot[] holding probe index + 1 (0:
 * empty), filled by tracer_probe_add and emptied only by tracer_clear
 * (probe.c). Inline, so that a firing finds its probe without a call. */
#define TRACER_HASH_SLOTS (2 * TRACER_MAX_PROBES)   /* a power of two */
extern volatile uint16_t tracer_hash_slot[TRACER_HASH_SLOTS];

static inline unsigned tracer_hash_of(uintptr_t addr)
{
	uint32_t h = (uint32_t)addr * 2654435761u;
	return h & (TRACER_HASH_SLOTS - 1);
}

static inline struct probe *tracer_lookup(uintptr_t addr)
{
	for (unsigned i = tracer_hash_of(addr), n = 0; n < TRACER_HASH_SLOTS;
	     i = (i + 1) & (TRACER_HASH_SLOTS - 1), n++) {
		unsigned slot = tracer_hash_slot[i];
		if (!slot)
			return 0;
		struct probe *p = &tracer_probes[slot - 1];
		if (p->addr == addr)
			return p;
	}
	return 0;
}
/* Fire path, interrupts masked: count a firing of p on this CPU and
 * do its action (append its record, by default) or run its program on
 * ctx; tracer_record appends a further record (CHECK, LOG). */
void tracer_fire(const struct probe *p, unsigned kind,
		 const unsigned long *words, unsigned nwords,
		 const struct tarch_context *ctx);
/* A firing of p is counted and nothing more (action null, no program,
 * no pass or maximum): the arch's fire path need not gather its record's
 * words, and passes tracer_fire none. */
static inline bool tracer_counts_only(const struct probe *p)
{
	return !p->gated && p->action == TRACER_ACTION_NULL;
}
/* The whole fire path of a probe that counts only, on cpu: inline in
 * the arch's trap hook, so the firing makes no call, builds no context
 * and reads no register. What tracer_fire does for such a probe. */
static inline void tracer_fire_count(const struct probe *p, unsigned cpu)
{
	if (tracer_late(p, cpu))
		return;
	tracer_fired[cpu].n++;
	tracer_hits[cpu][p->id]++;
}
void tracer_record(const struct probe *p, unsigned kind,
		   const unsigned long *words, unsigned nwords);
/* A SWITCH or IRQ record (switch.c), on this CPU, interrupts masked. */
void tracer_record_sched(unsigned kind, const unsigned long *words, unsigned nwords);
/* Count a hit of probe id missed (inside a firing); its count (PROBES). */
void tracer_probe_missed(unsigned id);
unsigned long tracer_probe_missed_count(unsigned id);
/* A reentrant hit on demand (selftest_reentry.c): with reentry_test set,
 * every recorded firing calls reentry_probe_point, which is outside the
 * tracer's notrace range, so a probe there fires inside the firing;
 * reentry_broken makes such a hit vanish uncounted (the broken variant
 * tests catch). Both 0 but in tests, which set them through the GDB stub. */
extern volatile unsigned reentry_test, reentry_broken;
void reentry_probe_point(void);
/* Probe firings counted so far, and records written for probes (DROPS
 * records not counted), all CPUs (self-tests compare them with the
 * executions they expect). */
uint64_t tracer_fired_count(void);
uint64_t tracer_recorded_count(void);
/* Read size bytes (1, 2, 4 or 8 where a word has 8) at addr into *value,
 * or return false if reading faulted — through trap_try, so any address
 * is safe to try, from the fire path too (peek.c). */
bool tracer_read(uintptr_t addr, unsigned size, unsigned long *value);
/* Copy up to n bytes from src to dst, stopping after a NUL if string;
 * the bytes copied, or -1 with *fault the first address that could not
 * be read (peek.c). */
long tracer_copy(void *dst, uintptr_t src, unsigned long n, bool string,
		 uintptr_t *fault);
/* Check mode is on: the arch records a CHECK event for each emulation. */
extern volatile bool tracer_check_mode;
/* The run's mechanism (index into tarch_mechanisms[], mechanism.h). */
extern volatile unsigned tracer_mechanism;

/* The kernel's own interface (the commands below and in-guest tests). The
 * reason of a refusal goes to why. Every call that changes the probe
 * table takes the table's lock for its duration: changes come from the
 * command loop's thread and from the drain thread, which disables spent
 * probes (gate.c). It is recursive in a thread, never taken by the fire
 * path, and its waiters sleep (holders make IPIs); tracer_trylock takes
 * it only if that needs no wait. */
void tracer_lock(void);
bool tracer_trylock(void);
void tracer_unlock(void);
/* args.c: an entry probe's argument map — parsed (one hex byte per word),
 * set, and read (argument word n of a firing, by the map if it has one). */
int tracer_argmap_parse(const char *hex, unsigned nargs, uint8_t *map, char *why,
			size_t why_size);
void tracer_probe_argmap(unsigned id, const uint8_t *map, unsigned n);
bool tracer_arg(const struct tarch_context *ctx, const struct probe *p, unsigned n,
		unsigned long *value);
int tracer_probe_add(unsigned id, uintptr_t addr, unsigned kind, unsigned nargs,
		     char *why, size_t why_size);
int tracer_probe_set(unsigned id, bool enable, char *why, size_t why_size);
/* After a batch of tracer_probe_set calls: every CPU executes the new
 * bytes from here on (probe.c says why this takes two syncs). */
void tracer_settle(void);
/* Set probe id's action (enum tracer_action); any time, even enabled. */
int tracer_probe_action(unsigned id, unsigned action, char *why, size_t why_size);
/* Probe id runs the program installed in slot (-1: none) / every pass-th
 * hit / at most maxhits hits (0: no limit); any time, even enabled: a
 * firing reads each once (gate.c). */
int tracer_probe_program(unsigned id, int slot, char *why, size_t why_size);
int tracer_probe_pass(unsigned id, uint32_t pass, char *why, size_t why_size);
int tracer_probe_maxhits(unsigned id, unsigned long maxhits, char *why,
			 size_t why_size);
/* Pick the run's mechanism by its name: 0; -1 if there is no such
 * mechanism; -2 while probes are enabled. */
int tracer_set_mechanism(const char *name);
/* Disable and remove every probe; returns how many there were. */
unsigned tracer_clear(void);

/* Probes added (not yet cleared), and of those, enabled. */
unsigned tracer_probes_added(void);
unsigned tracer_probes_enabled(void);
/* Of the enabled, those whose firings write records of their own (action
 * record, no program in its place): while there are any, the scheduler's
 * SWITCH and IRQ records are written too (switch.c), so that the host can
 * pair entries with returns per thread; an aggregation alone sends none. */
unsigned tracer_probes_recording(void);
/* Count them again after a probe's state, action or program changed. */
void tracer_recount_recording(void);

/* The bare trap round trip and its trap-less twin (arch), for costs. */
void tracer_bare_trap(void);
void tracer_bare_none(void);

/* Hold the drain thread off the serial line (measurements), or let it go. */
void tracer_drain_pause(bool pause);
/* Wait until every record written so far has been sent. */
void tracer_flush(void);

/* The -finstrument-functions baseline (hooks.c): while on, the compiler's
 * __cyg_profile_func_enter/exit calls in instrumented code write the ENTRY
 * and RETURN records of the probe added at the function's address (added,
 * not enabled: no trap is written) into the same buffers, with its id. */
extern volatile bool tracer_hooks_on;

/* A writable alias of the kernel text byte at addr (mapped at init). */
uint8_t *tracer_text_alias(uintptr_t addr);

#endif
