/*
 * atomic.h — atomic operations built on the arch's compare-and-swap
 * (i386: lock cmpxchg; sparc64: casx), which arch_inline.h provides as
 * arch_cas_ulong(), together with arch_barrier() and arch_cpu_relax().
 * Everything else is a CAS loop here, once, for every arch.
 */
#ifndef ATOMIC_H
#define ATOMIC_H

#include "arch.h"

/* Returns the value before; the swap happened iff it equals old. */
static inline unsigned long atomic_cas(volatile unsigned long *p,
				       unsigned long old, unsigned long new)
{
	return arch_cas_ulong(p, old, new);
}

static inline unsigned long atomic_fetch_add(volatile unsigned long *p,
					     unsigned long v)
{
	unsigned long old = *p, seen;
	while ((seen = arch_cas_ulong(p, old, old + v)) != old)
		old = seen;
	return old;
}

static inline unsigned long atomic_xchg(volatile unsigned long *p, unsigned long v)
{
	unsigned long old = *p, seen;
	while ((seen = arch_cas_ulong(p, old, v)) != old)
		old = seen;
	return old;
}

static inline unsigned long atomic_read(const volatile unsigned long *p)
{
	return *p;
}

#endif
