/*
 * opt_stage.c — putting an opt probe's jmp in and taking it out (opt_arm,
 * opt_disarm, opt_stage, the slots planned by opt.c).
 *
 * Installation never lets a CPU decode half of the change, and every
 * execution of the site meanwhile is traced. It goes in stages, each
 * made for every probe of a batch at once (a whole `probe enable all`),
 * so a batch costs three rounds of IPIs however many probes it holds:
 *   1. probe_set (tarch_arm): int3 over byte 0. Then the settle's first
 *      sync (tracer_settle): from now on a CPU reaching the site traps,
 *      records, and resumes in the detour's copy (or, before the detour
 *      is written, has the instruction emulated as under int3) — nobody
 *      enters bytes 1..len-1 any more;
 *   2. opt_stage (tarch_stage, from the settle): every other CPU is parked
 *      (smp_stop_others) and every thread's stack is read once from its
 *      saved (or parked) stack pointer up, every nested trap frame
 *      included. No displaced instruction calls, so the only way a thread
 *      can be between them is a trap frame (saved EIP, the kernel's CS,
 *      EFLAGS with its always-one bit 1, side by side): a site whose tail
 *      some frame's EIP lies in is held, the others get their detour (if
 *      not yet written for them, and no frame's EIP is in it) and bytes
 *      1..4 (the rel32) while every CPU is parked; the release syncs them;
 *   3. byte 0 of every site not held becomes the jmp (E9), and the
 *      settle's last sync follows. Held sites are tried again alone
 *      (release, yield, park again; OPT_TRIES times); one that never
 *      clears stays at its int3 stage (lossless, a trap per firing) and
 *      the console says which thread and EIP held it.
 * Removal runs the same stages backwards (int3 over the E9, sync, the
 * original bytes 1..4 with every CPU parked, the original byte 0). The
 * scan matches frames by their three words anywhere from the stack
 * pointer up, so a stale frame left in a gap of a live frame only delays
 * the change: the test errs on the side of waiting. The caller's own
 * stack is not read: it is in the command path, not interrupted inside
 * a site.
 */
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "kstring.h"
#include "opt.h"
#include "opt_slots.h"
#include "thread.h"
#include "tracer.h"

#define OPT_TRIES 200

extern const char boot_stack[], boot_stack_top[];

unsigned long opt_tries;        /* stopped-world scans made (read it with gdb) */
unsigned long opt_stages;       /* opt_stage calls that changed a site (gdb) */
static bool pending;            /* a slot waits at its int3 stage */

/* ---- proving no thread is inside a range ---- */

struct scan {
	uint32_t cs;                  /* the kernel's code selector */
	const struct thread *me;
	uintptr_t lo, hi;             /* every todo slot's ranges lie inside */
};

static bool within(uintptr_t x, uintptr_t lo, uintptr_t hi)
{
	return x >= lo && x < hi;
}

/* The top of the stack holding sp, 0 if none we know. */
static uintptr_t stack_top(const struct thread *t, uintptr_t sp)
{
	if (t->stack && within(sp, (uintptr_t)t->stack,
			       (uintptr_t)t->stack + t->stack_size))
		return (uintptr_t)t->stack + t->stack_size;
	if (within(sp, (uintptr_t)boot_stack, (uintptr_t)boot_stack_top + 1))
		return (uintptr_t)boot_stack_top;
	for (unsigned i = 0; i < cpu_count(); i++)
		if (within(sp, cpus[i].boot_stack_lo, cpus[i].boot_stack_hi + 1))
			return cpus[i].boot_stack_hi;
	return 0;
}

static void hold(struct opt_slot *s, unsigned tid, uint32_t word, const char *what)
{
	if (s->held)
		return;
	s->held = true;
	s->held_tid = tid;
	s->held_word = word;
	s->held_what = what;
}

/* Which todo slots a saved EIP w holds: inside a tail, or inside a
 * detour that is to be (re)written. */
static void hold_at(unsigned tid, uint32_t w)
{
	for (unsigned i = 0; i < OPT_SLOTS; i++) {
		struct opt_slot *s = &opt_slots[i];
		if (!s->todo)
			continue;
		uintptr_t a = s->probe->addr, d = (uintptr_t)slot_code_at(i);
		if (within(w, a + 1, a + s->len))
			hold(s, tid, w, "saved EIP");
		else if (s->want && !current(s) && within(w, d, d + OPT_DETOUR_BYTES))
			hold(s, tid, w, "saved EIP inside the detour slot");
	}
}

static void scan_thread(struct thread *t, void *arg)
{
	const struct scan *j = arg;
	if (t == j->me)
		return;
	uintptr_t sp = 0;
	unsigned self = this_cpu()->id;
	for (unsigned i = 0; i < cpu_count(); i++)
		if (i != self && cpus[i].current == t)
			sp = cpus[i].stopped_sp;
	if (!sp)
		sp = t->ctx.esp;
	uintptr_t top = stack_top(t, sp);
	if (!top) {
		for (unsigned i = 0; i < OPT_SLOTS; i++)
			if (opt_slots[i].todo)
				hold(&opt_slots[i], t->id, (uint32_t)sp,
				     "stack pointer on no stack the tracer knows");
		return;
	}
	for (uintptr_t a = sp & ~(uintptr_t)3; a + 12 <= top; a += 4) {
		const volatile uint32_t *w3 = (const volatile uint32_t *)a;
		uint32_t w = w3[0];
		if (within(w, j->lo, j->hi) && w3[1] == j->cs && (w3[2] & 2))
			hold_at(t->id, w);
	}
}

static uint32_t kernel_cs(void)
{
	uint32_t cs;
	__asm__ volatile("movl %%cs, %0" : "=r"(cs));
	return cs;
}

static void store_tail(uintptr_t site, const uint8_t *b)
{
	for (unsigned i = 0; i < 4; i++)
		store(site + 1 + i, b[i]);
}

static void rel_bytes(unsigned i, const struct probe *p, uint8_t *b)
{
	uint32_t rel = (uint32_t)((uintptr_t)slot_code_at(i) - (p->addr + 5));
	for (unsigned k = 0; k < 4; k++)
		b[k] = (uint8_t)(rel >> (8 * k));
}

/* On the CPU that stopped the others, while they are parked: every
 * thread's stack is scanned once for every todo slot, and each slot no
 * thread holds gets its tail (and, arming, its detour first). */
static void parked(void *arg)
{
	sched_for_each_thread(scan_thread, arg);
	for (unsigned i = 0; i < OPT_SLOTS; i++) {
		struct opt_slot *s = &opt_slots[i];
		if (!s->todo || s->held)
			continue;
		const struct probe *p = s->probe;
		uint8_t b[4];
		if (s->want) {
			if (!current(s)) {
				opt_write_slot(i, p);
				s->site = p->addr;
			}
			rel_bytes(i, p, b);
		} else {
			memcpy(b, s->bytes + 1, 4);
		}
		store_tail(p->addr, b);
	}
}

/* ---- the stages ---- */

/* Stage 1 (probe_set, through tarch_arm): the int3 over byte 0; the
 * tail and the jmp wait for opt_stage, at the settle after the sync. A
 * site at its jmp only has the same bytes stored again (settle's
 * re-store); one whose tail still holds the rel32 (a disarm not yet
 * staged, or held) gets its jmp back at once. */
void opt_arm(struct probe *p)
{
	struct opt_slot *s = slot(p);
	uintptr_t a = p->addr;
	s->want = true;
	if (s->probe != p) {            /* the detour is written at the stage */
		s->probe = p;
		s->site = 0;
	}
	switch (s->stage) {
	case OPT_JMP: {
		uint8_t b[4];
		rel_bytes((unsigned)(s - opt_slots), p, b);
		store(a, 0xe9);
		store_tail(a, b);
		break;
	}
	case OPT_INT3_REL:
		store(a, 0xe9);
		s->stage = OPT_JMP;
		break;
	default:
		store(a, 0xcc);
		s->stage = OPT_INT3;
		pending = true;
	}
}

/* Stage 1 of removal: int3 over the jmp's E9; a site that never got past
 * its int3 (or is settling) gets its own byte 0 back at once. */
void opt_disarm(struct probe *p)
{
	uintptr_t a = p->addr;
	if (!opt_slot_of[p->id]) {          /* never armed here: its own byte */
		store(a, p->site.insn.orig[0]);
		return;
	}
	struct opt_slot *s = slot(p);
	s->want = false;
	switch (s->stage) {
	case OPT_JMP:
	case OPT_INT3_REL:
		store(a, 0xcc);
		s->stage = OPT_INT3_REL;
		pending = true;
		break;
	default:
		store(a, s->bytes[0]);
		s->stage = OPT_ORIG;
	}
}

static void held(const struct opt_slot *s)
{
	kprintf("opt: probe %u at 0x%lx stays at its int3 stage (%s): thread %u's "
		"%s 0x%x after %u tries\n", s->probe->id, (unsigned long)s->probe->addr,
		s->want ? "arming" : "disarming", s->held_tid, s->held_what,
		(unsigned)s->held_word, OPT_TRIES);
}

/* Stages 2 and 3 for every slot waiting at its int3, all at once, after
 * the settle's first sync (tarch_stage): one stopped world writes every
 * tail no thread holds (the release is the sync), then every such site's
 * byte 0 becomes the jmp or its own byte again; the settle's last sync
 * follows. Slots a thread holds are tried again, alone, OPT_TRIES times. */
void opt_stage(void)
{
	if (!pending)
		return;
	pending = false;
	opt_stages++;
	for (unsigned try = 0; try < OPT_TRIES; try++) {
		struct scan j = { .cs = kernel_cs(), .me = thread_current(),
				  .lo = ~(uintptr_t)0, .hi = 0 };
		unsigned todo = 0;
		for (unsigned i = 0; i < OPT_SLOTS; i++) {
			struct opt_slot *s = &opt_slots[i];
			s->held = false;
			s->todo = s->probe && (s->want ? s->stage == OPT_INT3 :
					       s->stage == OPT_INT3_REL);
			if (!s->todo)
				continue;
			todo++;
			uintptr_t a = s->probe->addr, d = (uintptr_t)slot_code_at(i);
			j.lo = a + 1 < j.lo ? a + 1 : j.lo;
			j.hi = a + s->len > j.hi ? a + s->len : j.hi;
			if (s->want && !current(s)) {
				j.lo = d < j.lo ? d : j.lo;
				j.hi = d + OPT_DETOUR_BYTES > j.hi ? d + OPT_DETOUR_BYTES : j.hi;
			}
		}
		if (!todo)
			return;
		opt_tries++;
		smp_stop_others(parked, &j);
		unsigned left = 0;
		for (unsigned i = 0; i < OPT_SLOTS; i++) {
			struct opt_slot *s = &opt_slots[i];
			if (!s->todo)
				continue;
			if (s->held) {
				left++;
				continue;
			}
			s->todo = false;
			if (s->want) {
				store(s->probe->addr, 0xe9);
				s->stage = OPT_JMP;
			} else {
				store(s->probe->addr, s->bytes[0]);
				s->stage = OPT_ORIG;
			}
		}
		if (!left)
			return;
		thread_yield();
	}
	for (unsigned i = 0; i < OPT_SLOTS; i++)
		if (opt_slots[i].todo && opt_slots[i].held)
			held(&opt_slots[i]);
}
