/*
 * opt_return.c — returns with no trap under `opt` (i386), kretprobes' and
 * ftrace function_graph's way. A return probe linked to its function's
 * entry probe (`probe ride ENTRY RETURN`) rides on it: when the entry
 * fires (its detour, or its int3 stage), the return address at [esp] is
 * kept on the thread's shadow stack with the stack slot it came from, and
 * the slot gets opt_return_trampoline (opt_return.S); the function's `ret`
 * goes there, the trampoline records the return under the return probe
 * (eax, edx, sp = the slot, as an int3 at the `ret` would) and returns to
 * the real address. The riding probe's own site is not written.
 *
 * Per thread: a thread slot (thread.h) holds the index + 1 of its shadow
 * stack, claimed on its first trampolined call and kept; a stack whose
 * thread exited (zombie, or its struct reused: the slot word no longer
 * names it) is taken back when another thread needs one, so a thread that
 * exits with calls open leaks nothing. Every push and pop runs with
 * interrupts masked on the thread's own CPU, and an interrupt's probed
 * calls nest above the interrupted ones (last in, first out), so a
 * context switch or an interrupt never sees a half-made frame. A return
 * is matched by its slot; frames below it (deeper stack, a call that
 * never returned through its `ret`) are dropped, counted.
 *
 * A full shadow stack (or no stack left), or a call made while the stack
 * pointer is not on the current thread's own stack (the context switch
 * names the next thread current before it moves to its stack, and
 * returns on the other one), falls back to the return site's int3 for
 * that call: the entry leaves the return address alone and
 * writes the int3 on its riding return probes' sites (kept until they are
 * disarmed), counted in opt_return_fallbacks; that int3 records a call
 * whose slot does not hold the trampoline and lets the trampoline record
 * the others.
 *
 * Disarming while calls are in flight: the trampoline is never freed; a
 * frame keeps its return probe and that probe's address, and the return
 * is recorded only if the probe is still enabled there (after a `probe
 * clear` and new adds, a frame of an old probe returns unrecorded). The
 * real address always goes back.
 */
#include "arch.h"
#include "arch/trapframe.h"
#include "console.h"
#include "cpu.h"
#include "fire.h"
#include "opt.h"
#include "opt_fast.h"
#include "opt_return.h"
#include "record.h"
#include "retaddr.h"
#include "spinlock.h"
#include "stamp.h"
#include "thread.h"
#include "tracer.h"
#include "tracer_arch.h"

_Static_assert(offsetof(struct probe, addr) == 0 &&
	       offsetof(struct probe, kind) == OPT_PROBE_KIND &&
	       offsetof(struct probe, state) == OPT_PROBE_STATE &&
	       offsetof(struct probe, mechanism) == OPT_PROBE_MECHANISM &&
	       OPT_PROBE_STATE == OPT_PROBE_KIND + 2 &&
	       OPT_PROBE_MECHANISM == OPT_PROBE_KIND + 3 &&
	       OPT_PROBE_GATED == OPT_PROBE_ACTION + 1 &&
	       sizeof ((struct probe *)0)->kind == 1 &&
	       sizeof ((struct probe *)0)->state == 1 &&
	       sizeof ((struct probe *)0)->mechanism == 1 &&
	       sizeof ((struct probe *)0)->action == 1 &&
	       sizeof ((struct probe *)0)->gated == 1 &&
	       offsetof(struct probe, site.ride) == OPT_PROBE_RIDE &&
	       sizeof ((struct probe *)0)->site.ride == 2 &&
	       PROBE_ENABLED == OPT_PROBE_ENABLED &&
	       WIRE_EVENT_RETURN == OPT_EVENT_RETURN &&
	       MECHANISM_OPT == OPT_MECHANISM_OPT &&
	       offsetof(struct cpu, current) == OPT_CPU_CURRENT &&
	       offsetof(struct thread, slot) == OPT_THREAD_SLOT &&
	       sizeof ((struct thread *)0)->slot[0] == 4 &&
	       sizeof(struct ret_stack) == OPT_RET_STACK &&
	       offsetof(struct ret_stack, depth) == OPT_RET_DEPTH &&
	       offsetof(struct ret_stack, f) == OPT_RET_FRAMES &&
	       sizeof(struct ret_frame) == OPT_RET_FRAME &&
	       offsetof(struct ret_frame, real) == 0 &&
	       offsetof(struct ret_frame, slot) == OPT_FRAME_SLOT &&
	       offsetof(struct ret_frame, ret) == OPT_FRAME_RET &&
	       offsetof(struct ret_frame, ret_addr) == OPT_FRAME_RET_ADDR &&
	       OPT_HITS_ROW == 4096 * 4 &&
	       OPT_RETURN_DEPTH == OPT_RET_DEPTH_MAX &&
	       offsetof(struct thread, stack) == OPT_THREAD_STACK &&
	       offsetof(struct thread, stack_size) == OPT_THREAD_STACK_SIZE &&
	       sizeof ((struct thread *)0)->stack_size == 4 &&
	       sizeof opt_return_calls[0] == 4,
	       "opt.h: the return trampoline's counting path's numbers are the C structures'");

struct ret_stack ret_stacks[OPT_RETURN_STACKS];
static spinlock_t claim_lock = SPINLOCK_INIT("opt-return-claim");
unsigned ret_slot;              /* thread slot: shadow stack index + 1 */
unsigned long opt_return_calls[KERNEL_MAX_CPUS];
static volatile unsigned long fallbacks, dropped_frames;

void tarch_ride_stats(unsigned long n[TARCH_RIDE_STATS])
{
	n[0] = 0;
	for (unsigned c = 0; c < KERNEL_MAX_CPUS; c++)
		n[0] += opt_return_calls[c];
	n[1] = fallbacks;
	n[2] = dropped_frames;
}


/* A stack nobody holds, or whose thread can never return through it. */
static bool orphaned(unsigned i)
{
	const struct thread *o = ret_stacks[i].owner;
	return !o || o->state == THREAD_ZOMBIE || thread_slot(o, ret_slot) != i + 1;
}

struct ret_stack *opt_return_claim(struct thread *me)
{
	struct ret_stack *s = 0;
	spin_lock(&claim_lock);
	for (unsigned i = 0; i < OPT_RETURN_STACKS && !s; i++) {
		if (!orphaned(i))
			continue;
		s = &ret_stacks[i];
		s->owner = me;
		s->depth = 0;
		thread_slot_set(me, ret_slot, i + 1);
	}
	spin_unlock(&claim_lock);
	return s;
}

/* The int3 on every return probe riding on e, for the calls that could
 * not be trampolined. */
void opt_return_fall_back(const struct probe *e)
{
	__atomic_fetch_add(&fallbacks, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
		struct probe *r = &tracer_probes[i];
		if (r->state == PROBE_ENABLED && opt_return_rides(r) &&
		    r->site.ride == e->id + 1 && !r->site.trapping) {
			r->site.trapping = 1;
			i386_step_store(r, 0xcc);
		}
	}
}

/* Where the `ret` after a return site finds its address. */
static uint32_t return_slot(const struct probe *r, const struct trapframe *tf)
{
	switch (r->site.insn.kind) {
	case I386_POP_EBP: return trapframe_sp(tf) + 4;
	case I386_LEAVE:   return tf->ebp + 4;
	default:           return trapframe_sp(tf);   /* ret, ret imm16, nop */
	}
}

bool opt_return_trampolined(const struct probe *r, const struct trapframe *tf)
{
	uint32_t slot = return_slot(r, tf);
	return mapped(slot) && *(const uint32_t *)(uintptr_t)slot ==
	       (uint32_t)(uintptr_t)opt_return_trampoline;
}

/* On opt's page (OPT_HOT) beside the trampoline that calls it, the record
 * inline (record.h): its only call is tracer_fire's, for a record. */
OPT_HOT void i386_opt_return(struct trapframe *tf)
{
	tracer_stamp(TRACER_STAMP_RIDE);
	uint32_t slot = trapframe_sp(tf);
	struct thread *me = this_cpu()->current;
	struct ret_stack *s = opt_return_stack_of(me);
	while (s && s->depth) {
		const struct ret_frame f = s->f[--s->depth];
		if (f.slot == slot) {
			const struct probe *r = f.ret;
			/* Enabled and riding (opt_return_rides) where it was,
			 * one branch (opt_return_enter says why); else
			 * disarmed, or cleared: not recorded. */
			if ((r->state == PROBE_ENABLED) & (r->addr == f.ret_addr) &
			    (r->kind == WIRE_EVENT_RETURN) & (r->site.ride != 0) &
			    (r->mechanism == MECHANISM_OPT))
				i386_record(r, tf);
			*(volatile uint32_t *)(uintptr_t)slot = f.real;
			tracer_stamp(TRACER_STAMP_RIDE_FIRE);
			return;
		}
		if (f.slot > slot) {    /* an outer call's: ours is not there */
			s->depth++;
			break;
		}
		dropped_frames++;       /* a deeper frame that never returned */
	}
	const struct ret_frame *top = s && s->depth ? &s->f[s->depth - 1] : 0;
	panic("opt: thread %u returned through the trampoline at slot 0x%x, "
	      "which its shadow stack does not hold (depth %u; innermost: slot 0x%x, "
	      "return address 0x%x)", me->id, (unsigned)slot, s ? s->depth : 0,
	      top ? (unsigned)top->slot : 0, top ? (unsigned)top->real : 0);
}

uint32_t opt_return_real(const struct thread *t, uint32_t slot, uint32_t value)
{
	if (value != (uint32_t)(uintptr_t)opt_return_trampoline)
		return value;
	const struct ret_stack *s = opt_return_stack_of(t);
	for (unsigned i = s ? s->depth : 0; i-- > 0;)
		if (s->f[i].slot == slot)
			return s->f[i].real;
	return value;
}

/* A function with several return sites has a return probe on each: the
 * first linked is the one the trampoline records under (a call returns
 * once, whichever site it leaves by); every linked one leaves its site
 * unwritten. A riding return probe records the calls its entry
 * trampolined: enabled alone, it records nothing. Not in check mode. */
int tarch_probe_ride(struct probe *entry, struct probe *ret, const char **why)
{
	/* Check mode re-runs every firing's instruction in unicorn; a return
	 * riding on its entry runs none, so a checked run keeps the return
	 * site's int3 (whose `ret` is emulated and checked). */
	if (tracer_check_mode) {
		*why = "check mode: a return riding on its entry emulates nothing to "
		       "check; its site keeps its int3";
		return -1;
	}
	/* An entry opt would refuse would leave its riders unrecorded: they
	 * keep their own trap instead. */
	entry->mechanism = (uint8_t)tracer_mechanism;
	if (!tarch_can_arm(entry, why))
		return -1;
	if (!entry->site.ride)
		entry->site.ride = (uint16_t)(ret->id + 1);
	ret->site.ride = (uint16_t)(entry->id + 1);
	ret->site.trapping = 0;
	ret->site.fast = opt_fast_kind(ret, false);   /* its trampoline's record */
	return 0;
}

/* retaddr.h's filter: an i386 frame's return address is the word above
 * its saved %ebp. */
static uintptr_t real_return(const struct thread *t, const void *frame, uintptr_t value)
{
	return opt_return_real(t, (uint32_t)(uintptr_t)frame + 4, (uint32_t)value);
}

void opt_return_init(void)
{
	ret_slot = thread_slot_claim();
	return_address_set_filter(real_return);
}
