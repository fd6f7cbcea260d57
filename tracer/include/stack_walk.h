/*
 * stack_walk.h — what both arches' stack walkers (tracer/arch/<arch>/stack.c)
 * share: a walk's state (the stack's bounds, the thread, the return
 * addresses found so far) and one word of the stack read inside those
 * bounds. A word is the machine's (unsigned long: 4 bytes on i386, 8 on
 * sparc64) and must be aligned to its size; a stack of unknown bounds (the
 * boot CPU's) is read fault-safely (tracer_read) instead.
 */
#ifndef TRACER_STACK_WALK_H
#define TRACER_STACK_WALK_H

#include <stdbool.h>
#include <stdint.h>
#include "tracer.h"

struct thread;

struct stack_walk {
	uintptr_t lo, hi;              /* the stack's bounds, [lo, hi) */
	const struct thread *thread;
	uintptr_t *pcs;
	unsigned n, max;
};

static inline bool stack_word(const struct stack_walk *w, uintptr_t addr,
			      uintptr_t *value)
{
	const uintptr_t size = sizeof(unsigned long);
	unsigned long v;
	if (addr & (size - 1))
		return false;
	if (w->hi > w->lo) {
		if (addr < w->lo || addr > w->hi - size)
			return false;
		*value = *(const volatile unsigned long *)addr;
		return true;
	}
	if (!tracer_read(addr, size, &v))
		return false;
	*value = v;
	return true;
}

#endif
