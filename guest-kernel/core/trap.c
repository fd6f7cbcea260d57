/*
 * trap.c — trap_try: run a function that is expected to trap, and recover.
 *
 * Tries nest: each thread has a chain of active tries, the innermost in
 * thread->try_ctx, each remembering the one it interrupted. A trap is
 * caught by the innermost; when a try ends (returning or caught) the one
 * outside it is active again. Nesting is what lets the tracer read memory
 * fault-safely from a probe program (tracer/core/peek.c) at a probe that
 * fires inside code which is itself in a try — a self-test's, say. The
 * try belongs to the thread, not the CPU: a thread preempted inside a try
 * may resume on another CPU, and another thread may try meanwhile. The arch
 * handler offers every synchronous exception no trap hook handled (trap.h)
 * to trap_try_intercept(); a match copies the record and returns the
 * landing pad, the arch resumes the interrupted context there, and the pad
 * longjmps back into trap_try — which restores the stack and callee-saved
 * registers as they were at arch_setjmp.
 *
 * All three functions are NOTRACE: the probes' fire path calls them.
 */
#include "trap.h"
#include "arch.h"
#include "notrace.h"
#include "thread.h"

struct try_context {
	arch_jmp_buf        jump;
	struct caught_trap *caught;
	struct try_context *outer;      /* the try this one is nested in, or 0 */
};

static NOTRACE void trap_try_landing(void)
{
	struct try_context *ctx = thread_current()->try_ctx;
	arch_longjmp(ctx->jump, 1);
}

NOTRACE bool trap_try(void (*fn)(void *), void *arg, struct caught_trap *caught)
{
	struct try_context ctx = { .caught = caught };
	struct thread *me = thread_current();

	ctx.outer = me->try_ctx;
	if (arch_setjmp(ctx.jump)) {
		me->try_ctx = ctx.outer;
		return true;
	}
	me->try_ctx = &ctx;
	fn(arg);
	me->try_ctx = ctx.outer;
	return false;
}

NOTRACE uintptr_t trap_try_intercept(const struct caught_trap *trap)
{
	struct try_context *ctx = thread_current()->try_ctx;
	if (!ctx)
		return 0;
	*ctx->caught = *trap;
	return (uintptr_t)trap_try_landing;
}
