/*
 * waitq.h — block a thread until a condition holds.
 *
 * The condition is tested under wq->lock, and a waker makes it true before
 * taking the same lock to wake, so a wakeup between the test and the sleep
 * cannot be lost. Wakers may run in interrupt handlers.
 */
#ifndef WAITQ_H
#define WAITQ_H

#include <stdbool.h>
#include "spinlock.h"

struct thread;

struct waitq {
	spinlock_t     lock;
	struct thread *head;
};

#define WAITQ_INIT(n) { SPINLOCK_INIT(n), 0 }

void waitq_wait(struct waitq *wq, bool (*cond)(void *), void *arg);
void waitq_wake_all(struct waitq *wq);

#endif
