/*
 * sample.c — an i386 sample's probe context (tracer_arch.h's
 * tarch_sample_run): the timer interrupt's trap frame is the context, as
 * a probe's trap frame is, so registers, `stack` (stack.c, from the
 * interrupted EIP) and `arg 0` (that EIP: context reading in fire.c) read
 * the interrupted code.
 */
#include "context.h"
#include "program.h"
#include "tracer_arch.h"

int tarch_sample_run(const struct trapframe *tf, const struct probe *p,
		     const struct program *prog)
{
	const struct tarch_context ctx = { tf };
	struct program_log log;
	return program_run(prog, p, &ctx, &log);
}
