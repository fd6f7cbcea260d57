/*
 * stack.h — call stacks in probe context: the arch's walk (tarch_stack_walk,
 * tracer/arch/<arch>/stack.c) and the per-CPU tables of distinct stacks
 * that `stack [N]` interns them in (tracer/core/stacks.c).
 *
 * A walk starts from the trapped context the fire path made, never from
 * the tracer's own frames, so none of those is ever in a stack (illumos
 * strips them as `aframes`). At a probed site (entry, return, insn) the
 * first frame is the caller's return address, as DTrace's fbt stacks
 * begin; the probed PC itself is the probe's. Each table is written only
 * by its own CPU's fire path, interrupts masked: no lock; a stack that
 * finds no room is counted, never silent (WIRE_STACK_NONE is pushed).
 */
#ifndef TRACER_STACK_H
#define TRACER_STACK_H

#include <stdint.h>
#include "tracer.h"
#include "wire.h"
#include "retaddr.h"

struct thread;

/* Up to max return addresses of the firing of p with context ctx into
 * pcs, innermost first; how many. Fault-safe: a frame pointer outside the
 * thread's stack, or not above the last, ends the walk. */
unsigned tarch_stack_walk(const struct tarch_context *ctx, const struct probe *p,
			  uintptr_t *pcs, unsigned max);

/* The address a frame really returns to: addr, read as the return address
 * of the frame whose frame pointer is frame. A return trampoline (i386's
 * opt, with its shadow stack: opt_return.c) puts its own address there
 * while the call is open; retaddr.h's filter gives back the caller's. */
static inline uintptr_t tracer_real_return(const struct thread *thread,
					   uintptr_t frame, uintptr_t addr)
{
	return return_address_real(thread, (const void *)frame, addr);
}

/* Fire path, interrupts masked: the id of the stack pcs[0..depth) in this
 * CPU's table (a new entry if it is new), or WIRE_STACK_NONE if the table
 * is full (counted). */
unsigned long stack_intern(const uintptr_t *pcs, unsigned depth);
/* Send every CPU's table as STACKS frames; *stacks and *dropped get the
 * totals. Then the same snapshot number as the AGGS frames that follow. */
void stack_send(unsigned *stacks, unsigned long *dropped);
/* Empty every CPU's table and its dropped count (no probe enabled). */
void stack_clear(void);

#endif
