/*
 * tramp.c — sparc64 probes with no trap (`probe mechanism tramp`), as
 * illumos' SPARC fbt places them: the site's word becomes one `ba,a` to
 * the probe's trampoline slot (tramp_slots.S), which records and runs the
 * displaced instruction natively. Every instruction is one aligned word,
 * so arming and disarming are one 4-byte store and a `flush`: no thread
 * can decode half a change, and nothing is staged. This file picks the
 * sites (tramp_site), gives each a slot (slot_for: reused only once no
 * thread is inside, tramp_slot_quiet), writes it (write_slot) and refuses what
 * it cannot take with the reason (tramp_can_arm). Other sites take the
 * illtrap and are emulated; check mode writes a checked variant of the
 * slot (tramp_check.c). docs/probes.md has the whole story.
 */
#include "arch/arch_sparc64.h"
#include "arch/sparc64.h"
#include "../../core/buffer_cpu.h"  /* the ring the recording path writes */
#include "console.h"
#include "cpu.h"
#include "fire.h"
#include "kstring.h"
#include "ool.h"
#include "thread.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "tramp.h"
#include "wire.h"

#include <stddef.h>

extern uint32_t tramp_slots[], tramp_slots_end[];
extern const uint32_t tramp_template[], tramp_template_end[];

_Static_assert(offsetof(struct probe, addr) == TRAMP_P_ADDR, "TRAMP_P_ADDR");
_Static_assert(offsetof(struct probe, id) == TRAMP_P_ID, "TRAMP_P_ID");
_Static_assert(offsetof(struct probe, state) == TRAMP_P_STATE, "TRAMP_P_STATE");
_Static_assert(offsetof(struct probe, action) == TRAMP_P_ACTION, "TRAMP_P_ACTION");
_Static_assert(offsetof(struct probe, gated) == TRAMP_P_GATED, "TRAMP_P_GATED");
_Static_assert(offsetof(struct probe, site.window) == TRAMP_P_WINDOW, "TRAMP_P_WINDOW");
_Static_assert(offsetof(struct probe, site.checked) == TRAMP_P_CHECKED, "TRAMP_P_CHECKED");
_Static_assert(TRACER_ACTION_NULL == TRAMP_ACTION_NULL, "TRAMP_ACTION_NULL");
_Static_assert(PROBE_ENABLED == TRAMP_ENABLED, "TRAMP_ENABLED");
_Static_assert(offsetof(struct cpu, id) == TRAMP_CPU_ID, "TRAMP_CPU_ID");
_Static_assert(sizeof tracer_hits[0] == 1ul << TRAMP_HITS_SHIFT, "TRAMP_HITS_SHIFT");
_Static_assert(sizeof tracer_fired[0] == 1ul << TRAMP_FIRED_SHIFT, "TRAMP_FIRED_SHIFT");
_Static_assert(offsetof(struct probe, nargs) == TRAMP_P_NARGS, "TRAMP_P_NARGS");
_Static_assert(offsetof(struct probe, site.fast) == TRAMP_P_FAST, "TRAMP_P_FAST");
_Static_assert(offsetof(struct probe, nargmap) == TRAMP_P_NARGMAP, "TRAMP_P_NARGMAP");
_Static_assert(offsetof(struct tracer_fired, in_fire) == TRAMP_F_IN_FIRE,
	       "TRAMP_F_IN_FIRE");
_Static_assert(offsetof(struct cpu, current) == TRAMP_CPU_CURRENT, "TRAMP_CPU_CURRENT");
_Static_assert(offsetof(struct thread, id) == TRAMP_THREAD_ID, "TRAMP_THREAD_ID");
_Static_assert(sizeof(struct tracer_cpu) == TRAMP_T_BYTES, "TRAMP_T_BYTES");
/* Where the recording path finds a CPU's ring (buffer_cpu.h). */
TRACER_CPU_OFFSETS(TRAMP);
_Static_assert(sizeof(struct wire_event) == 16 && WIRE_ENTRY_PC == 0 &&
	       WIRE_ENTRY_SP == 1 && WIRE_ENTRY_ARG0 == 2 && WIRE_RETURN_PC == 0 &&
	       WIRE_RETURN_SP == 1 && WIRE_RETURN_VALUE == 2,
	       "the record tramp_slots.S writes is put()'s");
_Static_assert(WIRE_EVENT_ENTRY == TRAMP_FAST_ENTRY &&
	       WIRE_EVENT_RETURN == TRAMP_FAST_RETURN, "TRAMP_FAST_*");
_Static_assert(TRACER_ACTION_RECORD == 0, "the recording path tests action == 0");
_Static_assert(TRAMP_SLOTS < 0xffff, "tramp_slot_by_id holds slot + 1 in 16 bits");

struct tramp_slot {
	uintptr_t site;                 /* the site it was written for, 0: none */
	const struct probe *probe;      /* ... and the probe it records */
	bool broken;                    /* written as tramp_skip_delay_broken's */
	uint8_t fast;                   /* its recording path's kind (tramp_fast.c) */
	bool fast_off, fast_broken;     /* ... written under those switches */
	bool checked;                   /* written as check mode's (tramp_check.c) */
};

static struct tramp_slot slots[TRAMP_SLOTS];
static uint16_t tramp_slot_by_id[TRACER_MAX_PROBES];   /* probe id -> slot + 1 */
unsigned long tramp_held;       /* slots passed over: a thread inside (gdb) */

/* A broken variant for the tests (set through the GDB stub or a
 * self-test): a return's trampoline skips the delay slot (a nop in its
 * place), so the value a `ret; restore %g0, 1, %o0` leaves is wrong. A
 * slot written the other way is rewritten at its next arming (tests only:
 * no quiescence is waited for). */
volatile unsigned tramp_skip_delay_broken;

static uint32_t *slot_code(unsigned i)
{
	return tramp_slots + i * TRAMP_SLOT_WORDS;
}

bool tramp_branch(uintptr_t from, uintptr_t to, bool annul, uint32_t *word)
{
	int64_t disp = ((int64_t)to - (int64_t)from) >> 2;
	if (((to - from) & 3) || disp < -(1l << 21) || disp >= (1l << 21))
		return false;
	*word = (annul ? 0x30800000u : 0x10800000u) | ((uint32_t)disp & 0x3fffff);
	return true;
}

/* An entry's word runs in the delay slot of the slot's `ba site + 4`
 * (a save, or any word that runs from a copy: ool.c's list); a return's
 * ret, retl or `return` runs from the slot with its delay slot. */
bool tramp_slot_restore(const struct probe *p)
{
	uint32_t w = p->site.slot;
	return p->kind == WIRE_EVENT_RETURN && w >> 30 == 2 &&
	       ((w >> 19) & 0x3f) == OP3_RESTORE;
}

bool tramp_slot_checkable(const struct probe *p)
{
	const char *why;
	return p->kind == WIRE_EVENT_RETURN && !tramp_skip_delay_broken &&
	       (tramp_slot_restore(p) || ool_checkable(p->site.slot, &why));
}

bool tramp_site(const struct probe *p)
{
	if (p->kind == WIRE_EVENT_ENTRY)
		return p->site.what == SPARC_SITE_SAVE || p->site.what == SPARC_SITE_OOL;
	return p->kind == WIRE_EVENT_RETURN;
}

const struct probe *tramp_checked_probe(unsigned i)
{
	return i < TRAMP_SLOTS && slots[i].checked ? slots[i].probe : 0;
}

/* ---- proving no thread is inside a slot ----
 *
 * A thread can be inside a slot after its probe was disarmed: it took the
 * `ba,a` before the original word went back and was preempted in the
 * slot's first words or its tail, where interrupts are on. So before a
 * slot is rewritten for another probe, every other thread's stack is read
 * from its saved %sp up (windows are flushed at a switch): a word that
 * points into the slot (an interrupt's trap frame TPC/TNPC, a window's
 * %i7) holds it. The test errs on the side of waiting. */

struct scan {
	const struct thread *me;
	uintptr_t lo, hi;               /* the slot */
	bool held;
};

static void scan_thread(struct thread *t, void *arg)
{
	struct scan *j = arg;
	if (t == j->me || j->held)
		return;
	uintptr_t sp = t->ctx.sp + STACK_BIAS, lo, hi;
	if (t->stack) {
		lo = (uintptr_t)t->stack;
		hi = lo + t->stack_size;
	} else {
		lo = (uintptr_t)boot_stack;
		hi = (uintptr_t)boot_stack_top;
	}
	if (sp < lo || sp >= hi) {      /* a stack we do not know: wait */
		j->held = true;
		return;
	}
	for (uintptr_t a = sp & ~(uintptr_t)7; a + 8 <= hi; a += 8) {
		uint64_t w = *(const volatile uint64_t *)a;
		if (w >= j->lo && w < j->hi) {
			j->held = true;
			return;
		}
	}
}

bool tramp_slot_quiet(unsigned i)
{
	struct scan j = { .me = thread_current(), .lo = (uintptr_t)slot_code(i),
			  .hi = (uintptr_t)slot_code(i + 1) };
	sched_for_each_thread(scan_thread, &j);
	if (j.held)
		tramp_held++;
	return !j.held;
}

/* A slot for p, as i386 opt's detours are given: its own; one written
 * for it at this site; one never written; one whose probe is not enabled
 * and no thread is inside. -1 if none. */
static int slot_for(const struct probe *p)
{
	unsigned own = tramp_slot_by_id[p->id];
	if (own && slots[own - 1].probe == p && slots[own - 1].site == p->addr)
		return (int)own - 1;
	int spare = -1;
	for (unsigned i = 0; i < TRAMP_SLOTS; i++) {
		const struct tramp_slot *s = &slots[i];
		if (s->probe == p && s->site == p->addr)
			return (int)i;
		if (!s->probe)
			return (int)i;
		if (spare < 0 && s->probe->state != PROBE_ENABLED && tramp_slot_quiet(i))
			spare = (int)i;
	}
	return spare;
}

static char why_buf[WIRE_MAX_REASON];

/* The four words a slot ends with for p: the displaced word and what
 * follows it (see tramp_slots.S); checked, check mode's (tramp_check.c). */
static bool tail_words(const struct probe *p, uintptr_t tail, bool checked,
		       uint32_t w[4], const char **why)
{
	w[2] = w[3] = 0x003fffff;
	if (p->kind == WIRE_EVENT_ENTRY && checked) {
		w[0] = p->site.insn;
		w[1] = TRAMP_CHECK_MARK;
		return true;
	}
	if (p->kind == WIRE_EVENT_ENTRY) {
		w[1] = p->site.insn;                    /* in the ba's delay slot */
		if (!tramp_branch(tail, p->addr + 4, false, &w[0])) {
			*why = "the site is out of a ba's reach (+-8 MiB) from the "
			       "trampolines";
			return false;
		}
		return true;
	}
	const char *reason = "?";
	if (!sparc_ool_ok(p->site.slot, &reason)) {
		ksnprintf(why_buf, sizeof why_buf, "the delay slot (0x%08x) must run "
			  "from the trampoline, and cannot: %s", p->site.slot, reason);
		*why = why_buf;
		return false;
	}
	uint32_t slot = tramp_skip_delay_broken ? 0x01000000u : p->site.slot;  /* nop */
	w[0] = p->site.insn;
	w[1] = checked ? TRAMP_CHECK_MARK : slot;
	if (checked) {
		w[2] = slot;                    /* the mark resumes there */
		if (tramp_slot_checkable(p))    /* ... and stops after it */
			w[3] = TRAMP_CHECK_SLOT_MARK;
	}
	return true;
}

/* A slot out of a `ba`'s reach (+-8 MiB) is refused: a `call` would
 * reach it but writes %o7, which at an entry is the caller's return
 * address and at a retl the return target: no site could take it
 * unchanged. */
bool tramp_can_arm(const struct probe *p, const char **why)
{
	int i = slot_for(p);
	if (i < 0) {
		ksnprintf(why_buf, sizeof why_buf, "all %u trampoline slots hold "
			  "enabled tramp probes, or a thread still inside", TRAMP_SLOTS);
		*why = why_buf;
		return false;
	}
	uint32_t tail[4], ba;
	uintptr_t code = (uintptr_t)slot_code((unsigned)i);
	if (!tail_words(p, code + 4 * TRAMP_TAIL, tracer_check_mode, tail, why))
		return false;
	if (!tramp_branch(p->addr, code, true, &ba)) {
		*why = "the trampoline is out of a ba,a's reach (+-8 MiB); a call "
		       "would reach it but writes %o7, which the site needs";
		return false;
	}
	/* What a checked entry word's record cannot carry (ool_check.c). */
	if (tracer_check_mode && p->site.what == SPARC_SITE_OOL &&
	    !ool_checkable(p->site.insn, why))
		return false;
	const struct tramp_slot *s = &slots[i];
	if (s->probe == p && s->site == p->addr && s->checked != tracer_check_mode &&
	    !tramp_slot_quiet((unsigned)i)) {
		*why = "check mode changed and a thread is still inside the probe's "
		       "trampoline: try again";
		return false;
	}
	tramp_slot_by_id[p->id] = (uint16_t)(i + 1);
	return true;
}

static void store_code(uint32_t *at, uint32_t w)
{
	*(volatile uint32_t *)tracer_text_alias((uintptr_t)at) = w;
}

/* Slot i's code for p: the template, p's tail, its call and p's address;
 * flushed before anyone can branch to it, never while p is armed. */
static void write_slot(unsigned i, const struct probe *p)
{
	uint32_t *code = slot_code(i), tail[4], always;
	const char *why;
	bool checked = tracer_check_mode;
	if (!tail_words(p, (uintptr_t)&code[TRAMP_TAIL], checked, tail, &why) ||
	    !tramp_branch((uintptr_t)&code[TRAMP_BRANCH_WORD],
			  (uintptr_t)&code[TRAMP_SLOW_WORD], false, &always))
		panic("tramp: probe %u lost its tail: %s", p->id, why);
	for (unsigned k = 0; k < TRAMP_SLOT_WORDS; k++)
		store_code(&code[k], tramp_template[k]);
	/* The call into C is PC-relative (30 bits reach everything). */
	int64_t disp = ((int64_t)(uintptr_t)sparc64_tramp_fire -
			(int64_t)(uintptr_t)&code[TRAMP_CALL_WORD]) >> 2;
	store_code(&code[TRAMP_CALL_WORD], 0x40000000u | ((uint32_t)disp & 0x3fffffff));
	if (checked)            /* every firing to C: ba (its delay slot as before) */
		store_code(&code[TRAMP_BRANCH_WORD], always);
	for (unsigned k = 0; k < 4; k++)
		store_code(&code[TRAMP_TAIL + k], tail[k]);
	uint32_t value[5];
	slots[i].fast = (uint8_t)tramp_fast_kind(p, checked, value);
	for (unsigned k = 0; k < 5; k++)
		store_code(&code[TRAMP_VALUE_WORD + k], value[k]);
	uint64_t a = (uintptr_t)p;
	store_code(&code[TRAMP_PROBE_WORD], (uint32_t)(a >> 32));
	store_code(&code[TRAMP_PROBE_WORD + 1], (uint32_t)a);
	for (unsigned k = 0; k < TRAMP_SLOT_WORDS; k += 2)
		flush_insn(&code[k]);
	slots[i].probe = p;
	slots[i].site = p->addr;
	slots[i].broken = tramp_skip_delay_broken != 0;
	slots[i].checked = checked;
	slots[i].fast_off = tramp_fast_off != 0;
	slots[i].fast_broken = tramp_fast_broken != 0;
}

void tramp_arm(struct probe *p)
{
	unsigned i = tramp_slot_by_id[p->id] - 1u;
	if (slots[i].probe != p || slots[i].site != p->addr ||
	    slots[i].broken != (tramp_skip_delay_broken != 0) ||
	    slots[i].checked != tracer_check_mode ||
	    slots[i].fast_off != (tramp_fast_off != 0) ||
	    slots[i].fast_broken != (tramp_fast_broken != 0))
		write_slot(i, p);
	p->site.checked = tracer_check_mode;
	p->site.fast = slots[i].fast;   /* read by the slot, set before the ba */
	uint32_t ba;
	if (!tramp_branch(p->addr, (uintptr_t)slot_code(i), true, &ba))
		panic("tramp: probe %u's slot out of reach", p->id);
	sparc64_store_word(p, ba);
}

void tramp_disarm(struct probe *p)
{
	sparc64_store_word(p, p->site.insn);
}
