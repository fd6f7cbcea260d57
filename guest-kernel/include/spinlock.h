/*
 * spinlock.h — spinlocks that mask interrupts on the CPU holding them.
 *
 * Masking interrupts is what makes a spinlock safe against the timer: a
 * holder can be neither preempted nor re-entered by an interrupt handler on
 * its own CPU, so the other CPUs' wait is bounded. A lock spun on for far
 * too long panics with its name and holder instead of hanging silently.
 */
#ifndef SPINLOCK_H
#define SPINLOCK_H

#include "arch.h"

typedef struct {
	volatile unsigned long locked;
	const char *name;
	volatile unsigned owner;      /* cpu id + 1 of the holder, 0 if free */
} spinlock_t;

#define SPINLOCK_INIT(n) { 0, n, 0 }

irqflags_t spin_lock_irqsave(spinlock_t *lock);
void spin_unlock_irqrestore(spinlock_t *lock, irqflags_t flags);
/* For code that already runs with interrupts masked (trap handlers). */
void spin_lock(spinlock_t *lock);
void spin_unlock(spinlock_t *lock);

#endif
