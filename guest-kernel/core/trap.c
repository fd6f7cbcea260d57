/*
 * trap.c — trap_try: run a function that is expected to trap, and recover.
 *
 * Each thread has at most one active try (they do not nest; a self-test
 * that needed nesting would be testing the wrong thing). The try belongs to
 * the thread, not the CPU: a thread preempted inside a try may resume on
 * another CPU, and another thread may try meanwhile. The arch handler offers
 * every synchronous exception no trap hook handled (trap.h) to
 * trap_try_intercept(); a match copies the record and returns the landing
 * pad, the arch resumes the interrupted context there, and the pad
 * longjmps back into trap_try — which restores the stack and callee-saved
 * registers as they were at arch_setjmp.
 */
#include "trap.h"
#include "arch.h"
#include "console.h"
#include "thread.h"

struct try_context {
	arch_jmp_buf        jump;
	struct caught_trap *caught;
};

static void trap_try_landing(void)
{
	struct try_context *ctx = thread_current()->try_ctx;
	arch_longjmp(ctx->jump, 1);
}

bool trap_try(void (*fn)(void *), void *arg, struct caught_trap *caught)
{
	struct try_context ctx = { .caught = caught };
	struct thread *me = thread_current();

	if (me->try_ctx)
		panic("trap_try: nested try in thread %u", me->id);
	if (arch_setjmp(ctx.jump)) {
		me->try_ctx = 0;
		return true;
	}
	me->try_ctx = &ctx;
	fn(arg);
	me->try_ctx = 0;
	return false;
}

uintptr_t trap_try_intercept(const struct caught_trap *trap)
{
	struct try_context *ctx = thread_current()->try_ctx;
	if (!ctx)
		return 0;
	*ctx->caught = *trap;
	return (uintptr_t)trap_try_landing;
}
