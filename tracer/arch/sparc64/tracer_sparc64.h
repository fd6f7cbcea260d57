/*
 * tracer_sparc64.h — what the sparc64 trap path calls in the tracer.
 */
#ifndef TRACER_SPARC64_H
#define TRACER_SPARC64_H

#include <stdbool.h>
#include "arch/trapframe.h"

/* An illegal_instruction trap: if TPC holds one of our ILLTRAPs, record and
 * emulate (or run the shell game) and return true with tf edited for
 * retry; false if the trap is not the tracer's. */
bool sparc64_probe_trap(struct trapframe *tf);
/* An interrupt is being taken at tf->tpc (the shell game's bookkeeping). */
void sparc64_probe_interrupted(const struct trapframe *tf);

#endif
