/*
 * arch_inline.h — the sparc64 pieces of arch.h that must be inline.
 *
 * sun4u in QEMU has one CPU, so the per-CPU pointer is a constant. CAS is
 * casx; the barrier orders every pair of access kinds (TSO would need only
 * #StoreLoad, but the kernel does not rely on the memory model's mode).
 * A switched-out thread is its stack pointer: switch.S spills every window
 * of the thread to its stack, the current one included, before leaving it.
 * ARCH_TRAP_VECTORS sizes trap.h's per-vector hook table by trap type.
 */
#ifndef SPARC64_ARCH_INLINE_H
#define SPARC64_ARCH_INLINE_H

#include <stdint.h>

#define ARCH_TRAP_VECTORS 0x200     /* tt of a trap at TL 0: 0x000..0x1ff */

struct cpu;
/* cpus[0] (cpu.h), named without needing struct cpu complete here. */
extern struct cpu arch_cpu0 __asm__("cpus");

struct arch_context {
	uint64_t sp;        /* biased %sp of the window that called the switch */
};

static inline struct cpu *arch_this_cpu(void)
{
	return &arch_cpu0;
}

static inline unsigned long arch_cas_ulong(volatile unsigned long *p,
					   unsigned long old, unsigned long new)
{
	__asm__ volatile("casx [%2], %3, %0"
			 : "=r"(new) : "0"(new), "r"(p), "r"(old) : "memory");
	return new;
}

/* The word is 64 bits: casx again. */
static inline uint64_t arch_cas_u64(volatile uint64_t *p, uint64_t old, uint64_t new)
{
	__asm__ volatile("casx [%2], %3, %0"
			 : "=r"(new) : "0"(new), "r"(p), "r"(old) : "memory");
	return new;
}

static inline void arch_barrier(void)
{
	__asm__ volatile("membar #StoreLoad | #StoreStore | #LoadStore | #LoadLoad"
			 ::: "memory");
}

static inline void arch_cpu_relax(void)
{
	__asm__ volatile("" ::: "memory");
}

#endif
