/*
 * sample.c — a sparc64 sample's probe context (tracer_arch.h's
 * tarch_sample_run): the registers of the interrupted state, loaded from
 * the timer interrupt's trap frame and the trapped window's save area as
 * for a probe's trap, so `stack` (stack.c, from the interrupted %pc) and
 * `arg 0` (that %pc: context.c) read the interrupted code.
 */
#include "arch/trapframe.h"
#include "context.h"
#include "emulate.h"
#include "program.h"
#include "tracer_arch.h"

int tarch_sample_run(const struct trapframe *tf, const struct probe *p,
		     const struct program *prog)
{
	struct sparc_regs r;
	struct program_log log;
	if (!sparc64_load_regs((struct trapframe *)tf, &r, true))
		return PROGRAM_FAULT;
	const struct tarch_context ctx = { tf, &r };
	return program_run(prog, p, &ctx, &log);
}
