/*
 * tracer_arch.h — what each arch's tracer provides (tracer/arch/<arch>/).
 *
 * Decode once, emulate by kind: tarch_decode() reads the instruction at a
 * site when the probe is added and classifies it, or refuses with a reason
 * the host prints. A site the arch does not emulate but whose instruction
 * runs the same from a copy takes the out-of-line path instead (tracer/
 * arch/<arch>/ool.c): the fire path records, then resumes at the probe's
 * slot, written by tarch_arm before the trap goes in. tarch_arm()/tarch_disarm() store the trap (or the
 * original) through the text alias: one atomic store, or, for a trap wider
 * than an instruction may be, stores in an order no CPU can fetch half of
 * (i386's ud2, fbt.c). The fire path is the arch's trap hook (trap.h),
 * registered by tarch_init() at boot; it calls back into tracer.h.
 *
 * Mechanisms are the ways of getting control at a site, chosen per run
 * from the arch's table (mechanism.h, tracer/arch/<arch>/mechanisms.h):
 * the emulating ones (int3 and ud2's #UD on i386 — not illumos' LOCK
 * prefix, which QEMU's TCG executes anyway, fbt.c; ILLTRAP on sparc64),
 * i386's jump-optimized one (opt.c: a jmp to a detour that runs copies of
 * the displaced instructions, no trap) and the lossy baselines of the
 * seeds (single-step in situ, shell game).
 *
 * The fire path hands tracer_fire a struct tarch_context of its own
 * making — what it knows of the trapped state — and the tarch_context_*
 * functions read it back for probe programs.
 */
#ifndef TRACER_ARCH_H
#define TRACER_ARCH_H

#include <stdbool.h>
#include <stdint.h>
#include "mechanism.h"    /* tarch_mechanisms[], from the arch's mechanisms.h */
#include "tracer.h"

/* At boot, from tracer_init: claim what the arch needs of the kernel (a
 * thread slot, thread.h) and register its fire paths as trap hooks. */
void tarch_init(void);

/* Seed 003's method 2: the trace buffer written by physical address, so
 * that recording needs no data-TLB entry (buffer.c, `trace physical`).
 * tarch_phys_stores says whether the arch can with its MMU on;
 * tarch_phys_store() stores `bytes` (a multiple of 8) from src to the
 * physical address pa (8-aligned), in the CPU's byte order. */
extern const bool tarch_phys_stores;
void tarch_phys_store(uintptr_t pa, const void *src, unsigned bytes);

/* Seed 003's method 1 from the reader's side: whether a branch record
 * carries the word of its delay slot, read at the firing (`trace bytes`),
 * and how — through the mapping (a miss, or on an execute-only page a
 * fault unless the miss handler serves it: miss_account.h) or by
 * physical address after a walk of the page table that never touches the
 * TLB. NULL, or why the arch cannot. */
enum tarch_code_bytes { TARCH_BYTES_OFF, TARCH_BYTES_MAPPED, TARCH_BYTES_PHYSICAL };
const char *tarch_set_code_bytes(enum tarch_code_bytes how);

/* Classify the instruction at addr as a probe of the given kind
 * (WIRE_PROBE_KINDS: entry, return, branch, insn — an arch may refuse a
 * kind outright, as i386 does branch; entry and insn take any instruction
 * the arch emulates or runs out of line). 0, or -1 with *why set. The address has
 * already been checked to lie in probeable text. */
int tarch_decode(uintptr_t addr, unsigned kind, struct tarch_site *site,
		 const char **why);

/* Whether p's site can take the trap of p->mechanism; if not, *why says why. */
bool tarch_can_arm(const struct probe *p, const char **why);
/* Write the trap of p->mechanism over the site / write the original back.
 * Called from thread context: an arch whose trap is wider than the
 * smallest trap may sync CPUs between its stores (tracer_sync_cpus). */
void tarch_arm(struct probe *p);
void tarch_disarm(struct probe *p);
void tracer_sync_cpus(void);
/* In tracer_settle, after its first sync (so every store of the batch's
 * tarch_arm/tarch_disarm is seen by every CPU): the later stages of an
 * arch whose trap goes in in stages (i386's opt: the tail bytes with
 * every CPU parked, then byte 0), for the whole batch at once. Thread
 * context; may park CPUs. Nothing to do for most. */
void tarch_stage(void);

/* `probe ride ENTRY RETURN`: return probe ret rides on entry probe entry
 * (both added, both disabled): under a mechanism with
 * MECHANISM_RETURN_TRAMPOLINE, entry's firings send the call's return
 * through a trampoline that records it under ret, and ret's own site is
 * not written. -1 with *why where the arch or the mechanism has none. */
int tarch_probe_ride(struct probe *entry, struct probe *ret, const char **why);
/* Since boot: calls trampolined, calls that fell back to the return
 * site's trap, frames abandoned. */
#define TARCH_RIDE_STATS 3
void tarch_ride_stats(unsigned long n[TARCH_RIDE_STATS]);

/* What a probe program reads of a firing's trapped context (program_run.c),
 * ctx being what the arch's fire path passed to tracer_fire for p (never
 * NULL here: with no context the program ends as on a fault before asking).
 * reg is a TARCH_REGISTERS number (tarch/registers.h), below
 * TARCH_NREGISTERS; the registers are those of the trapped context as the
 * probed instruction was about to run it. arg n is argument n as the
 * caller passed it, at an entry probe; retval the value the caller will
 * see returned, at a return probe. Each returns false when the context has
 * no such value — an argument away from an entry, a return value away
 * from a return, a stack word that cannot be read — and the program then
 * ends as on a fault. */
bool tarch_context_reg(const struct tarch_context *ctx, const struct probe *p,
		       unsigned reg, unsigned long *value);
bool tarch_context_arg(const struct tarch_context *ctx, const struct probe *p,
		       unsigned n, unsigned long *value);
bool tarch_context_retval(const struct tarch_context *ctx, const struct probe *p,
			  unsigned long *value);

/* A sample (tracer/core/sample.c): run prog for the sampling probe p on
 * the state the timer interrupt's trap frame tf holds (`arg 0` its PC,
 * `stack` its stack), interrupts masked; how it ended (program.h). */
struct trapframe;
struct program;
int tarch_sample_run(const struct trapframe *tf, const struct probe *p,
		     const struct program *prog);

/* For the self-test of what programs read (tracer/core/
 * selftest_program_context.c): tarch_context_call(TARCH_CONTEXT_X) runs
 * the arch's code with probe sites (tracer/arch/<arch>/
 * selftest_program_sites.S), setting registers to known values on the
 * way, and returns tarch_context_answer. Each row of the table puts a
 * probe of its kind at its site and a program that pushes one word with
 * its instructions: the word must be `want` — or, for a row that faults,
 * reading it must end the run as a fault. */
#define TARCH_CONTEXT_X 41
struct tarch_context_check {
	const char          *what;
	const void          *site;
	uint8_t              kind;         /* WIRE_EVENT_ENTRY / RETURN */
	bool                 faults;
	uint8_t              nread;
	struct wire_rpn_insn read[4];
	unsigned long        want;
};
extern const struct tarch_context_check tarch_context_checks[];
extern const unsigned tarch_ncontext_checks;
extern const unsigned long tarch_context_answer;
unsigned long tarch_context_call(unsigned long x);

/* Watchpoints (tracer/core/watch.c checks what is arch-neutral: the id,
 * the type's word, overlaps, the trap path's own memory). The arch holds
 * tarch_watch_slots watches at once (0: it watches nothing) and says
 * whether it can watch type (WIRE_WATCH_TYPES) over len bytes at addr —
 * lengths, alignment, which types — with the reason if not.
 * tarch_watch_arm puts watch p (p->kind WIRE_EVENT_WATCH, p->addr, len
 * and type as checked) in slot on every CPU before it returns, and
 * tarch_watch_disarm takes it off every CPU; both from thread context, the
 * tracer's lock held. From then on the arch's fire path calls tracer_fire
 * with a WIRE_WATCH_WORDS record for each watched access. */
extern const unsigned tarch_watch_slots;
bool tarch_watch_check(unsigned type, uintptr_t addr, unsigned len,
		       const char **why);
void tarch_watch_arm(unsigned slot, const struct probe *p, unsigned type,
		     unsigned len);
void tarch_watch_disarm(unsigned slot);
/* Why slot stopped watching while armed (an access the arch could not
 * handle: its pc and instruction word), or NULL if it watches. */
const char *tarch_watch_stopped(unsigned slot, uintptr_t *pc, uint32_t *word);

/* Words in a CHECK record (0 if the arch has no check mode yet). */
extern const unsigned tarch_check_words;
/* The probe kind the probecost workload measures with (WIRE_EVENT_*). */
extern const unsigned tarch_cost_kind;

/* Instruction tracing (`itrace`, tracer/core/itrace.c; wire.h's ITRACE
 * record). tarch_itrace_arm makes entry probe p start a region in the
 * threads that enter it — after the first `skip` entries, at most
 * `regions` of them (0: every one) — recording by method (a
 * WIRE_ITRACE_METHODS value); 0, or -1 with *why set (an arch that cannot
 * step says so and how it traces instead). tarch_itrace_disarm starts no
 * more regions (running ones run to their end). tarch_itrace_stats prints
 * per-CPU counts of the traps the tracing itself caused and writes the
 * totals as `name=value` words into buf. */
int tarch_itrace_arm(const struct probe *p, unsigned method, unsigned long skip,
		     unsigned long regions, const char **why);
void tarch_itrace_disarm(void);
size_t tarch_itrace_stats(char *buf, size_t size);

#endif
