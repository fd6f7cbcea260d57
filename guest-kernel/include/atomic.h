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

/* 64-bit words whatever the arch's (the probe-program VM's): a read is a
 * CAS that changes nothing where a plain load of 64 bits is two, so that
 * no reader sees half of a store. */
static inline uint64_t atomic64_read(const volatile uint64_t *p)
{
	if (sizeof(unsigned long) >= sizeof(uint64_t))
		return *p;
	return arch_cas_u64((volatile uint64_t *)p, 0, 0);
}

static inline uint64_t atomic64_xchg(volatile uint64_t *p, uint64_t v)
{
	uint64_t old = atomic64_read(p), seen;
	while ((seen = arch_cas_u64(p, old, v)) != old)
		old = seen;
	return old;
}

static inline void atomic64_set(volatile uint64_t *p, uint64_t v)
{
	if (sizeof(unsigned long) >= sizeof(uint64_t))
		*p = v;
	else
		atomic64_xchg(p, v);
}

static inline uint64_t atomic64_fetch_add(volatile uint64_t *p, uint64_t v)
{
	uint64_t old = atomic64_read(p), seen;
	while ((seen = arch_cas_u64(p, old, old + v)) != old)
		old = seen;
	return old;
}

#endif
