/*
 * context.h — what a probe program reads of an i386 firing (tracer_arch.h):
 * the trap frame, its registers, esp the interrupted stack pointer, eip the
 * probed site (whatever EIP the trap left in the frame) or, for a watch,
 * the EIP the #DB left. Both fire paths (fire.c, watch.c) make one, and
 * i386_watch_init (watch.c) registers the watches' #DB hook for tarch_init.
 */
#ifndef I386_CONTEXT_H
#define I386_CONTEXT_H

struct trapframe;

struct tarch_context {
	const struct trapframe *tf;
};

void i386_watch_init(void);

#endif
