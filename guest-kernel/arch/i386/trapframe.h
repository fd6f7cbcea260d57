/*
 * trapframe.h — the i386 trap frame as entry.S builds it, lowest address
 * first. The CPU pushed eflags, cs, eip; the stub pushed error and vector;
 * pushal pushed eax..edi (its esp slot is ignored on popal); then the
 * segment registers. A ring-0 trap pushes no ESP: the interrupted ESP is
 * the address just past eflags (trapframe_sp()).
 */
#ifndef I386_TRAPFRAME_H
#define I386_TRAPFRAME_H

#include <stdint.h>

struct trapframe {
	uint32_t gs, fs, es, ds;
	uint32_t edi, esi, ebp, pushal_esp, ebx, edx, ecx, eax;
	uint32_t vector, error;
	uint32_t eip, cs, eflags;
};

_Static_assert(sizeof(struct trapframe) == 17 * 4, "trapframe layout");

static inline uint32_t trapframe_sp(const struct trapframe *tf)
{
	return (uint32_t)(uintptr_t)(&tf->eflags + 1);
}

#endif
