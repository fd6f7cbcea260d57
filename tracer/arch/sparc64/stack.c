/*
 * stack.c — the sparc64 stack walk (stack.h's tarch_stack_walk), as
 * illumos' dtrace_getpcstack does it on SPARC.
 *
 * First `flushw`: every window of the thread goes to its save area at
 * %sp + 2047 (the 64-bit ABI's bias), where a window's %i6 (its caller's
 * %sp, the frame pointer) and %i7 (the address of the call that made it)
 * are then read. A frame is the address of its call instruction, as
 * DTrace's SPARC stacks show it. Where the probed code runs in its
 * caller's window — at a function's first instruction (an entry probe, on
 * the `save` or, in a leaf that never saves, anything), at a leaf's
 * `retl` — the caller is %o7, still live in a register (a leaf); past a
 * `save` it is the trapped window's %i7 (a non-leaf). From there the walk
 * follows %i6 from save area to save area, each inside the thread's
 * stack and above the last, to a new thread's zeroed first frame. A
 * window entered from trap_entry's call of trap_dispatch is an interrupt's:
 * the walk hops to the interrupted code, its PC from the trap frame (in
 * the trap window's %l7), then its callers from its %sp on. Where the
 * walk starts or hops at an interrupted PC (a sample, or a probe in an
 * interrupt handler) no probe site's kind tells a leaf: that code's %o7 is
 * its caller if it has not run its `save` yet, else a stale call. It goes
 * in marked WIRE_STACK_LEAF_CALLER, and the host, which holds the
 * function's code, keeps it only if no `save` precedes the PC in its
 * function, as illumos scans a function for its `save`. The trapped
 * window's save area is the one trap_entry filled (trapframe_reg_read), so
 * the tracer's own windows are never in a stack. Each address goes through
 * tracer_real_return.
 */
#include "arch.h"
#include "arch/arch_sparc64.h"
#include "arch/sparc64.h"
#include "arch/trapframe.h"
#include "context.h"
#include "cpu.h"
#include "emulate.h"
#include "stack.h"
#include "stack_walk.h"
#include "thread.h"
#include "tracer.h"

#define SAVE_L7 (8 * 7)         /* offsets in a window's save area */
#define SAVE_I6 (8 * 14)
#define SAVE_I7 (8 * 15)

extern const char trap_dispatch_called[];

static bool add(struct stack_walk *w, uintptr_t pc)
{
	if (!pc || w->n >= w->max)
		return false;
	w->pcs[w->n++] = tracer_real_return(w->thread, 0, pc);   /* no trampolines */
	return true;
}

/* An interrupted PC's %o7: its caller if that code is a leaf (see the top).
 * The first candidate takes none of the frames asked for: the walk may go
 * one frame further (not past WIRE_STACK_MAX_DEPTH), and that frame is
 * marked WIRE_STACK_PAST_LIMIT for the host to keep only where it drops
 * the candidate, so that stack(N) gives N frames either way. */
static bool add_leaf_caller(struct stack_walk *w, uintptr_t o7, unsigned asked)
{
	if (!o7 || w->n >= w->max)
		return o7 == 0;                  /* nothing there: walk on */
	w->pcs[w->n++] = tracer_real_return(w->thread, 0, o7) | WIRE_STACK_LEAF_CALLER;
	if (w->max == asked && asked < WIRE_STACK_MAX_DEPTH)
		w->max++;
	return true;
}

/* Whether the window at fp is a new thread's zeroed first frame
 * (arch_context_init): the %i7 that points at it is no caller's call but
 * the address that makes `ret` land on the thread's entry. */
static bool bottom(const struct stack_walk *w, uintptr_t fp)
{
	uintptr_t i6, i7;
	return stack_word(w, fp + STACK_BIAS + SAVE_I6, &i6) &&
	       stack_word(w, fp + STACK_BIAS + SAVE_I7, &i7) && !i6 && !i7;
}

/* Whether p's code runs in its caller's window (see the top). */
static bool leaf_site(const struct probe *p)
{
	if (p->kind == WIRE_EVENT_ENTRY)
		return true;
	return p->site.what == SPARC_SITE_CTI && p->site.cti.rs1 == SPARC_O7;
}

static void walk(struct stack_walk *w, const struct tarch_context *ctx,
		 const struct probe *p, unsigned asked)
{
	const uint64_t *ins = trapframe_reg_read(ctx->tf, 16);   /* %l0.. %i7 */
	if (!ins)
		return;
	flushw();
	if (p->kind == WIRE_EVENT_SAMPLE && (!add(w, ctx->tf->tpc) ||
					      !add_leaf_caller(w, ctx->tf->o[7], asked)))
		return;                              /* the interrupted PC first */
	if (leaf_site(p) && !add(w, ctx->tf->o[7]))
		return;
	if (bottom(w, ins[14]) || !add(w, ins[15]))            /* %i7 */
		return;
	uintptr_t fp = ins[14], last = trapframe_sp(ctx->tf), ret;
	while (fp > last) {
		uintptr_t area = fp + STACK_BIAS, next;
		if (!stack_word(w, area + SAVE_I7, &ret) ||
		    !stack_word(w, area + SAVE_I6, &next) || bottom(w, next))
			break;
		if (ret == (uintptr_t)trap_dispatch_called) {
			/* the trap's window below holds the frame in %l7; the
			 * interrupted code's %o7 is a candidate caller */
			uintptr_t frame;
			if (!stack_word(w, next + STACK_BIAS + SAVE_L7, &frame))
				break;
			const struct trapframe *tf = (const struct trapframe *)frame;
			if (!add(w, tf->tpc) || !add_leaf_caller(w, tf->o[7], asked))
				break;
			last = next;
			fp = tf->o[6];
			continue;
		}
		if (!add(w, ret))
			break;
		last = fp;
		fp = next;
	}
}

unsigned tarch_stack_walk(const struct tarch_context *ctx, const struct probe *p,
			  uintptr_t *pcs, unsigned max)
{
	const struct thread *t = thread_current();
	struct stack_walk w = { .thread = t, .pcs = pcs, .max = max };
	if (t && t->stack) {
		w.lo = (uintptr_t)t->stack;
		w.hi = w.lo + t->stack_size;
	}
	walk(&w, ctx, p, max);
	if (w.max > max && w.n == w.max)     /* the frame past the limit */
		pcs[w.n - 1] |= WIRE_STACK_PAST_LIMIT;
	return w.n;
}
