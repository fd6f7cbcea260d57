/*
 * tracer_i386.h — the i386 tracer's entry from trap_dispatch (idt.c).
 */
#ifndef TRACER_I386_H
#define TRACER_I386_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/trapframe.h"

/* For #DB, #BP and #UD: *handled says whether it was a probe's trap. The
 * result is 0, or the ESP the interrupted code resumes with, in which case
 * entry.S moves the frame there and makes the deferred store described by
 * tf->vector (address, 0 for none) and tf->error (value). */
uint32_t i386_probe_trap(struct trapframe *tf, bool *handled);

#endif
