/*
 * context.h — what a probe program reads of a sparc64 firing (tracer_arch.h):
 * the registers as sparc64_load_regs() found them before any emulation —
 * %g/%o from the frame, %l/%i from the trapped window's save area — and the
 * frame's %y. Both fire paths make one (fire.c, watch.c); watch.c's hook is
 * registered by tarch_init through sparc64_watch_init.
 */
#ifndef SPARC64_CONTEXT_H
#define SPARC64_CONTEXT_H

#include <stdbool.h>
#include "emulate.h"

struct trapframe;

struct tarch_context {
	const struct trapframe  *tf;
	const struct sparc_regs *r;
};

bool sparc64_load_regs(struct trapframe *tf, struct sparc_regs *r, bool window);
void sparc64_watch_init(void);

#endif
