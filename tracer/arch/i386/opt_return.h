/*
 * opt_return.h — returns with no trap under `opt` (opt_return.c): an entry
 * probe's firing swaps the return address for the return trampoline and
 * keeps the real one on the thread's shadow stack; the trampoline records
 * the return and goes to the real address. What the fire path, the arming
 * and whoever reads return addresses ask of it.
 */
#ifndef I386_OPT_RETURN_H
#define I386_OPT_RETURN_H

#include <stdbool.h>
#include <stdint.h>
#include "cpu.h"
#include "fire.h"
#include "thread.h"
#include "tracer.h"

struct trapframe;

#define OPT_RETURN_STACKS 64    /* threads with a shadow stack at once */
#define OPT_RETURN_DEPTH  64    /* open trampolined calls per thread */

extern char opt_return_trampoline[];

/* Whether return probe p rides on its entry (`probe ride`): under opt its
 * own site is written only when a call could not be trampolined. */
static inline bool opt_return_rides(const struct probe *p)
{
	return p->kind == WIRE_EVENT_RETURN && p->site.ride &&
	       p->mechanism == MECHANISM_OPT;
}
struct ret_frame {
	uint32_t           real;      /* the return address the call pushed */
	uint32_t           slot;      /* where it was on the stack */
	const struct probe *ret;      /* the riding return probe ... */
	uintptr_t          ret_addr;  /* ... at its address then */
};

struct ret_stack {
	struct thread   *owner;
	unsigned         depth;
	struct ret_frame f[OPT_RETURN_DEPTH];
};

extern struct ret_stack ret_stacks[OPT_RETURN_STACKS];
extern unsigned ret_slot;              /* the thread slot: index + 1 */
extern unsigned long opt_return_calls[KERNEL_MAX_CPUS];    /* per CPU */
struct ret_stack *opt_return_claim(struct thread *me);
void opt_return_fall_back(const struct probe *e);

extern const char boot_stack[], boot_stack_top[];

/* Whether sp is on t's own stack: its pages, a secondary CPU's idle
 * thread's boot stack, the boot thread's. The scheduler names the next
 * thread current before the switch moves to its stack, so a call made in
 * between (the switch itself: entered on one stack, returning on another)
 * is not that thread's: it is never trampolined. */
static inline bool opt_return_own_stack(const struct thread *t, uint32_t sp)
{
	if (!t->stack)          /* the boot thread: the only one with none */
		return sp - (uintptr_t)boot_stack <
		       (uintptr_t)(boot_stack_top - boot_stack);
	if (sp - (uintptr_t)t->stack < t->stack_size)
		return true;
	for (unsigned i = 1; i < KERNEL_MAX_CPUS; i++)  /* no call: cheap */
		if (cpus[i].idle == t)
			return sp - cpus[i].boot_stack_lo < cpus[i].boot_stack_hi -
							       cpus[i].boot_stack_lo;
	return false;
}

static inline struct ret_stack *opt_return_stack_of(const struct thread *t)
{
	uintptr_t k = thread_slot(t, ret_slot);
	return k ? &ret_stacks[k - 1] : 0;
}

/* Entry probe e fired with sp its stack pointer at the site ([sp] the
 * return address): trampoline this call, if e has a riding return probe
 * that is enabled. Interrupts masked. Inline in the fire path (always:
 * gcc made it a call, two users being too many): under TCG every return
 * of a call is a block lookup, the most of a firing's cost. */
static inline __attribute__((always_inline)) void
opt_return_enter(const struct probe *e, uint32_t sp)
{
	/* The tests are joined with & where they can be, not && (one branch,
	 * not one each): under TCG every conditional branch ends a block. */
	unsigned ride = e->site.ride;
	if (!((ride != 0) & (e->kind == WIRE_EVENT_ENTRY)))
		return;
	const struct probe *r = &tracer_probes[ride - 1];
	if (!((r->state == PROBE_ENABLED) & (r->kind == WIRE_EVENT_RETURN) &
	      (r->site.ride != 0) & (r->mechanism == MECHANISM_OPT)))
		return;                 /* opt_return_rides(r), enabled */
	struct thread *me = this_cpu()->current;
	struct ret_stack *s = opt_return_stack_of(me);
	if (__builtin_expect(!s, 0))
		s = opt_return_claim(me);
	/* Mid-switch (sp not on me's stack), no stack, a full one: the return
	 * site's int3 records this call. A thread's own pages are the common
	 * case; the boot thread's and idle threads' stacks are asked apart. */
	bool own = (me->stack != 0) & (sp - (uintptr_t)me->stack < me->stack_size);
	if (__builtin_expect(!s || !((s->depth < OPT_RETURN_DEPTH) & mapped(sp) &
				     (own || opt_return_own_stack(me, sp))), 0)) {
		opt_return_fall_back(e);
		return;
	}
	volatile uint32_t *slot = (volatile uint32_t *)(uintptr_t)sp;
	s->f[s->depth] = (struct ret_frame){ *slot, sp, r, r->addr };
	s->depth++;
	*slot = (uint32_t)(uintptr_t)opt_return_trampoline;
	opt_return_calls[this_cpu()->id]++;
}
/* A riding return probe's int3 (the fallback): whether this call's return
 * goes through the trampoline, which records it (so the int3 must not). */
bool opt_return_trampolined(const struct probe *r, const struct trapframe *tf);
/* The trampoline's C half (opt_return.S), interrupts masked: records the
 * return and puts the real return address back in its slot. */
void i386_opt_return(struct trapframe *tf);
/* The return address a thread's stack word at slot stands for: value
 * itself, or, if it is the trampoline, the real address the thread's
 * shadow stack keeps for that slot. For stack walks, `caller`, the
 * debugger and check mode. */
uint32_t opt_return_real(const struct thread *t, uint32_t slot, uint32_t value);
void opt_return_init(void);

#endif
