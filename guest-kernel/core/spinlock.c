/*
 * spinlock.c — test-and-test-and-set spinlocks over the arch's CAS.
 *
 * The waiter spins on a plain read (cheap, cache-local) and only tries the
 * CAS when the lock looks free. A lock held past SPIN_LIMIT iterations is a
 * deadlock or a lost unlock: panic, naming the lock and the holder, which
 * is far easier to debug than a guest that stops answering.
 */
#include "spinlock.h"
#include "atomic.h"
#include "console.h"
#include "cpu.h"

#define SPIN_LIMIT 2000000000ul

void spin_lock(spinlock_t *lock)
{
	unsigned long spins = 0;
	while (atomic_cas(&lock->locked, 0, 1) != 0) {
		while (lock->locked) {
			arch_cpu_relax();
			if (++spins == SPIN_LIMIT)
				panic("spinlock %s: held too long by cpu%d (waiter cpu%u)",
				      lock->name, (int)lock->owner - 1, this_cpu()->id);
		}
	}
	lock->owner = this_cpu()->id + 1;
}

void spin_unlock(spinlock_t *lock)
{
	lock->owner = 0;
	arch_barrier();
	lock->locked = 0;
}

irqflags_t spin_lock_irqsave(spinlock_t *lock)
{
	irqflags_t flags = arch_irq_save();
	spin_lock(lock);
	return flags;
}

void spin_unlock_irqrestore(spinlock_t *lock, irqflags_t flags)
{
	spin_unlock(lock);
	arch_irq_restore(flags);
}
