/*
 * trap.c — trap_try: run a function that is expected to trap, and recover.
 *
 * Each CPU has at most one active try (they do not nest; a self-test that
 * needed nesting would be testing the wrong thing). The arch handler offers
 * every synchronous exception to trap_try_intercept(); a match copies the
 * record and returns the landing pad, the arch resumes the interrupted
 * context there, and the pad longjmps back into trap_try — which restores
 * the stack and callee-saved registers as they were at arch_setjmp.
 */
#include "trap.h"
#include "arch.h"
#include "console.h"

struct try_context {
	arch_jmp_buf        jump;
	struct caught_trap *caught;
};

static struct try_context *volatile active_try[KERNEL_MAX_CPUS];

static void trap_try_landing(void)
{
	arch_longjmp(active_try[arch_cpu_id()]->jump, 1);
}

bool trap_try(void (*fn)(void *), void *arg, struct caught_trap *caught)
{
	struct try_context ctx = { .caught = caught };
	unsigned cpu = arch_cpu_id();

	if (active_try[cpu])
		panic("trap_try: nested try on cpu %u", cpu);
	if (arch_setjmp(ctx.jump)) {
		active_try[cpu] = 0;
		return true;
	}
	active_try[cpu] = &ctx;
	fn(arg);
	active_try[cpu] = 0;
	return false;
}

uintptr_t trap_try_intercept(const struct caught_trap *trap)
{
	struct try_context *ctx = active_try[arch_cpu_id()];
	if (!ctx)
		return 0;
	*ctx->caught = *trap;
	return (uintptr_t)trap_try_landing;
}
