/*
 * arch_inline.h — the host's stand-in for an arch's inline pieces
 * (guest-kernel/arch/<arch>/arch_inline.h), so that the guest's generic
 * C compiles for the fuzz targets: one CPU, whose struct cpu is a plain
 * global, and compare-and-swap from the compiler's builtins. Nothing here
 * is run by a guest.
 */
#ifndef HOST_ARCH_INLINE_H
#define HOST_ARCH_INLINE_H

#include <stdint.h>

struct cpu;

#define ARCH_TRAP_VECTORS 256

struct arch_context {
	uintptr_t sp;
};

/* The one CPU (stubs.c): cpus[0]. */
struct cpu *host_cpu(void);

static inline struct cpu *arch_this_cpu(void)
{
	return host_cpu();
}

static inline unsigned long arch_cas_ulong(volatile unsigned long *p,
					   unsigned long old, unsigned long new)
{
	return __sync_val_compare_and_swap(p, old, new);
}

static inline uint64_t arch_cas_u64(volatile uint64_t *p, uint64_t old, uint64_t new)
{
	return __sync_val_compare_and_swap(p, old, new);
}

static inline void arch_barrier(void)
{
	__sync_synchronize();
}

static inline void arch_cpu_relax(void)
{
}

#endif
