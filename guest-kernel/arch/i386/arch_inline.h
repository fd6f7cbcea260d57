/*
 * arch_inline.h — the i386 pieces of arch.h that must be inline: the
 * per-CPU pointer (the GDT gives each CPU a data segment based at its own
 * struct cpu, loaded in %fs, whose first word is the struct's address),
 * compare-and-swap, a full barrier, the spin-wait hint, and the saved
 * context of a switched-out thread (everything else is on its stack).
 * Also ARCH_TRAP_VECTORS, the size of trap.h's per-vector hook table.
 */
#ifndef I386_ARCH_INLINE_H
#define I386_ARCH_INLINE_H

#include <stdint.h>

struct cpu;

#define ARCH_TRAP_VECTORS 256       /* the IDT's vectors */

struct arch_context {
	uint32_t esp;      /* ebp ebx esi edi and the return address are below it */
};

static inline struct cpu *arch_this_cpu(void)
{
	struct cpu *c;
	__asm__ volatile("movl %%fs:0, %0" : "=r"(c));
	return c;
}

static inline unsigned long arch_cas_ulong(volatile unsigned long *p,
					   unsigned long old, unsigned long new)
{
	unsigned long prev;
	__asm__ volatile("lock cmpxchgl %2, %1"
			 : "=a"(prev), "+m"(*p) : "r"(new), "0"(old) : "memory", "cc");
	return prev;
}

/* A 64-bit compare-and-swap: cmpxchg8b (every CPU since the Pentium). */
static inline uint64_t arch_cas_u64(volatile uint64_t *p, uint64_t old, uint64_t new)
{
	uint64_t prev;
	__asm__ volatile("lock cmpxchg8b %1"
			 : "=A"(prev), "+m"(*p)
			 : "b"((uint32_t)new), "c"((uint32_t)(new >> 32)), "0"(old)
			 : "memory", "cc");
	return prev;
}

static inline void arch_barrier(void)
{
	/* i686 has no mfence; a locked add to the stack is a full barrier. */
	__asm__ volatile("lock addl $0, (%%esp)" ::: "memory", "cc");
}

static inline void arch_cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

#endif
