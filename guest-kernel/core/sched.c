/*
 * sched.c — threads and the preemptive scheduler.
 *
 * Each CPU has a run queue and an idle thread. schedule() runs with
 * interrupts masked: it puts the current thread back on its CPU's queue if
 * it is still runnable (a yield or a preemption), takes the next one from
 * that queue, else steals one from another CPU's queue, else runs idle.
 * The timer tick ends a thread's slice; the arch calls sched_irq_exit() at
 * the end of every interrupt, which switches there and then.
 *
 * The one subtle rule: a thread's stack is in use until the switch away
 * from it has completed, so a thread with on_cpu set is never picked by
 * another CPU even though it may already sit on a queue (a wakeup can
 * enqueue a thread that is still on its way to sleep). The thread switched
 * to clears the flag of the one it replaced (finish_switch).
 *
 * Whoever makes a thread runnable enqueues it exactly once: schedule()
 * requeues only a thread that was running and stays runnable; sleeping,
 * blocking and exiting threads are requeued only by their waker.
 */
#include "thread.h"
#include "atomic.h"
#include "console.h"
#include "cpu.h"
#include "kstring.h"
#include "mm.h"
#include "pages.h"
#include "timer.h"
#include "waitq.h"
#include "notrace.h"
#include "switch_hook.h"

#define SLICE_TICKS  2
#define MAX_THREADS  128

static struct thread thread_pool[MAX_THREADS];
static bool pool_used[MAX_THREADS];
static spinlock_t pool_lock = SPINLOCK_INIT("threads");
static volatile unsigned long next_id = 1;

/* switch_hook.h: the client that sees every switch, if any. */
static switch_hook_fn switch_hook;

void switch_hook_set(switch_hook_fn fn)
{
	if (switch_hook)
		panic("switch_hook_set: a switch hook is set already");
	switch_hook = fn;
}

static enum switch_why switch_why_of(const struct thread *prev, bool requeue)
{
	if (prev->state == THREAD_ZOMBIE)
		return SWITCH_EXITED;
	return requeue || prev->state == THREAD_RUNNABLE ? SWITCH_PREEMPTED
							 : SWITCH_BLOCKED;
}

static struct thread *sleepers;
static spinlock_t sleep_lock = SPINLOCK_INIT("sleepers");
static spinlock_t join_lock = SPINLOCK_INIT("join");

NOTRACE struct thread *thread_current(void)
{
	return this_cpu()->current;
}

/* ---- run queues ---- */

static void rq_push_head(struct runqueue *rq, struct thread *t)
{
	t->next = rq->head;
	rq->head = t;
	if (!rq->tail)
		rq->tail = t;
	rq->length++;
}

static void rq_push(struct runqueue *rq, struct thread *t)
{
	t->next = 0;
	if (rq->tail)
		rq->tail->next = t;
	else
		rq->head = t;
	rq->tail = t;
	rq->length++;
}

/* First thread that may run here: not on another CPU's stack (self may be
 * the caller's own current thread), and not pinned elsewhere when stealing. */
static struct thread *rq_take(struct runqueue *rq, struct thread *self, bool stealing)
{
	struct thread *prev = 0;
	for (struct thread *t = rq->head; t; prev = t, t = t->next) {
		if ((t->on_cpu && t != self) || (stealing && t->pinned))
			continue;
		if (prev)
			prev->next = t->next;
		else
			rq->head = t->next;
		if (rq->tail == t)
			rq->tail = prev;
		rq->length--;
		t->next = 0;
		t->on_cpu = 1;
		return t;
	}
	return 0;
}

static struct thread *steal(struct cpu *c)
{
	unsigned ncpus = cpu_count();
	for (unsigned i = 1; i < ncpus; i++) {
		struct cpu *o = &cpus[(c->id + i) % ncpus];
		if (!o->rq.length)
			continue;
		spin_lock(&o->rq.lock);
		struct thread *t = rq_take(&o->rq, 0, true);
		spin_unlock(&o->rq.lock);
		if (t)
			return t;
	}
	return 0;
}

static void finish_switch(void)
{
	struct cpu *c = this_cpu();
	struct thread *from = c->switched_from;
	c->switched_from = 0;
	if (from) {
		arch_barrier();
		from->on_cpu = 0;
	}
}

/* Interrupts masked. requeue: the current thread stays runnable. */
static void schedule(bool requeue)
{
	struct cpu *c = this_cpu();
	struct thread *prev = c->current, *next;

	c->need_resched = false;
	spin_lock(&c->rq.lock);
	/* A prompt thread keeps the head while it stays runnable: it runs until
	 * it sleeps (the drain: until its CPU's ring is empty). */
	if (requeue && prev != c->idle) {
		if (prev->prompt)
			rq_push_head(&c->rq, prev);
		else
			rq_push(&c->rq, prev);
	}
	next = rq_take(&c->rq, prev, false);
	spin_unlock(&c->rq.lock);
	if (!next)
		next = steal(c);
	if (!next) {
		next = c->idle;
		next->on_cpu = 1;
	}
	c->slice_end = c->ticks + SLICE_TICKS;
	if (next == prev)
		return;

	next->cpu = c->id;
	c->current = next;
	c->switches++;
	if (next != c->idle) {
		c->thread_runs++;
		next->switches_in++;
	}
	c->switched_from = prev;
	bool first = !next->started;
	next->started = true;
	if (switch_hook)
		switch_hook(prev, next, switch_why_of(prev, requeue), first);
	arch_context_switch(&prev->ctx, &next->ctx);
	finish_switch();
}

/* ---- threads ---- */

static struct thread *thread_alloc(void)
{
	irqflags_t f = spin_lock_irqsave(&pool_lock);
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		if (!pool_used[i]) {
			pool_used[i] = true;
			spin_unlock_irqrestore(&pool_lock, f);
			memset(&thread_pool[i], 0, sizeof thread_pool[i]);
			return &thread_pool[i];
		}
	}
	spin_unlock_irqrestore(&pool_lock, f);
	return 0;
}

static void thread_free(struct thread *t)
{
	if (t->stack)
		pages_free(t->stack, t->stack_size / mm_page_size);
	irqflags_t f = spin_lock_irqsave(&pool_lock);
	pool_used[t - thread_pool] = false;
	spin_unlock_irqrestore(&pool_lock, f);
}

static _Noreturn void thread_start(void)
{
	finish_switch();
	arch_irq_enable();
	struct thread *t = thread_current();
	t->fn(t->arg);
	thread_exit();
}

unsigned thread_slot_claim(void)
{
	static unsigned claimed;      /* at init, one claim at a time */
	if (claimed == THREAD_SLOTS)
		panic("thread_slot_claim: all %d thread slots are claimed", THREAD_SLOTS);
	return claimed++;
}

static struct thread *thread_new(const char *name, void (*fn)(void *), void *arg)
{
	struct thread *t = thread_alloc();
	if (!t)
		return 0;
	t->stack_size = (THREAD_STACK_SIZE + mm_page_size - 1) & ~(size_t)(mm_page_size - 1);
	t->stack = pages_alloc(t->stack_size / mm_page_size);
	if (!t->stack) {
		thread_free(t);
		return 0;
	}
	t->id = (unsigned)atomic_fetch_add(&next_id, 1);
	for (unsigned i = 0; i + 1 < sizeof t->name && name[i]; i++)
		t->name[i] = name[i];
	t->fn = fn;
	t->arg = arg;
	t->state = THREAD_RUNNABLE;
	arch_context_init(&t->ctx, (char *)t->stack + t->stack_size, thread_start);
	return t;
}

static unsigned least_loaded_cpu(void)
{
	unsigned best = 0;
	for (unsigned i = 1; i < cpu_count(); i++)
		if (cpus[i].rq.length < cpus[best].rq.length)
			best = i;
	return best;
}

struct thread *thread_create(const char *name, void (*fn)(void *), void *arg,
			     unsigned cpu)
{
	if (cpu != THREAD_ANY_CPU && cpu >= cpu_count())
		return 0;
	struct thread *t = thread_new(name, fn, arg);
	if (!t)
		return 0;
	t->pinned = cpu != THREAD_ANY_CPU;
	t->cpu = t->pinned ? cpu : least_loaded_cpu();
	t->state = THREAD_SLEEPING;       /* sched_wake makes it runnable */
	sched_wake(t);
	return t;
}

void thread_set_prompt(struct thread *t, bool prompt)
{
	t->prompt = prompt;
}

void sched_wake(struct thread *t)
{
	irqflags_t f = arch_irq_save();
	struct cpu *target = &cpus[t->cpu];
	t->state = THREAD_RUNNABLE;
	spin_lock(&target->rq.lock);
	if (t->prompt)
		rq_push_head(&target->rq, t);
	else
		rq_push(&target->rq, t);
	spin_unlock(&target->rq.lock);
	if (target == this_cpu()) {
		if (target->current == target->idle || t->prompt)
			target->need_resched = true;
	} else if (target->current == target->idle || t->prompt) {
		arch_send_ipi(target->id, IPI_RESCHEDULE);
	}
	arch_irq_restore(f);
}

_Noreturn void thread_exit(void)
{
	arch_irq_save();
	struct thread *t = thread_current();
	spin_lock(&join_lock);
	t->state = THREAD_ZOMBIE;
	struct thread *joiner = t->joiner;
	spin_unlock(&join_lock);
	if (joiner)
		sched_wake(joiner);
	schedule(false);
	panic("thread %u (%s) ran after exiting", t->id, t->name);
}

void thread_join(struct thread *t)
{
	struct thread *me = thread_current();
	irqflags_t f = arch_irq_save();
	spin_lock(&join_lock);
	if (t->state != THREAD_ZOMBIE) {
		if (t->joiner)
			panic("thread %u joined twice", t->id);
		t->joiner = me;
		me->state = THREAD_BLOCKED;
		spin_unlock(&join_lock);
		schedule(false);
	} else {
		spin_unlock(&join_lock);
	}
	arch_irq_restore(f);
	while (t->on_cpu)                 /* its CPU may still be switching off it */
		arch_cpu_relax();
	thread_free(t);
}

unsigned thread_run_all(const char *name, unsigned n, void (*fn)(void *),
			void *args, size_t stride, unsigned cpu)
{
	struct thread *t[THREAD_RUN_MAX];
	unsigned made = 0;

	if (n > THREAD_RUN_MAX)
		panic("thread_run_all: %u threads, at most %d", n, THREAD_RUN_MAX);
	for (; made < n; made++) {
		unsigned on = cpu == THREAD_SPREAD ? made % cpu_count() : cpu;
		t[made] = thread_create(name, fn, (char *)args + made * stride, on);
		if (!t[made])
			break;
	}
	for (unsigned i = 0; i < made; i++)
		thread_join(t[i]);
	return made;
}

void thread_yield(void)
{
	irqflags_t f = arch_irq_save();
	schedule(true);
	arch_irq_restore(f);
}

void thread_sleep(uint64_t nticks)
{
	struct thread *me = thread_current();
	irqflags_t f = arch_irq_save();
	me->wake_tick = timer_ticks() + nticks;
	me->wake_cpu_tick = this_cpu()->ticks + nticks;
	spin_lock(&sleep_lock);
	me->state = THREAD_SLEEPING;
	me->next = sleepers;
	sleepers = me;
	spin_unlock(&sleep_lock);
	schedule(false);
	arch_irq_restore(f);
}

/* ---- wait queues ---- */

void waitq_wait(struct waitq *wq, bool (*cond)(void *), void *arg)
{
	struct thread *me = thread_current();
	irqflags_t f = spin_lock_irqsave(&wq->lock);
	while (!cond(arg)) {
		me->state = THREAD_BLOCKED;
		me->next = wq->head;
		wq->head = me;
		spin_unlock(&wq->lock);
		schedule(false);
		spin_lock(&wq->lock);
	}
	spin_unlock_irqrestore(&wq->lock, f);
}

void waitq_wake_all(struct waitq *wq)
{
	irqflags_t f = spin_lock_irqsave(&wq->lock);
	struct thread *t = wq->head;
	wq->head = 0;
	spin_unlock(&wq->lock);
	while (t) {
		struct thread *next = t->next;
		sched_wake(t);
		t = next;
	}
	arch_irq_restore(f);
}

/* ---- ticks, interrupts, CPUs ---- */

static bool stealable_work(void)
{
	for (unsigned i = 0; i < cpu_count(); i++)
		if (cpus[i].rq.length)
			return true;
	return false;
}

/* Interrupts masked. Wake the sleepers whose time has come on c's tick;
 * kicked (sched_kick_self), every prompt thread pinned to c, now. */
static void wake_sleepers(struct cpu *c, bool kicked)
{
	if (!sleepers)
		return;
	uint64_t now = timer_ticks();
	spin_lock(&sleep_lock);
	struct thread **link = &sleepers;
	while (*link) {
		struct thread *t = *link;
		bool own = t->prompt && t->pinned && t->cpu == c->id;
		if (own ? kicked || t->wake_cpu_tick <= c->ticks
			: !kicked && !(t->prompt && t->pinned) && c->id == 0 &&
			  t->wake_tick <= now) {
			*link = t->next;
			sched_wake(t);
		} else {
			link = &t->next;
		}
	}
	spin_unlock(&sleep_lock);
}

void sched_tick(void)
{
	struct cpu *c = this_cpu();
	c->ticks++;
	wake_sleepers(c, false);
	if (c->current == c->idle ? stealable_work() : c->ticks >= c->slice_end)
		c->need_resched = true;
}

NOTRACE void sched_kick_self(void)
{
	arch_self_interrupt();
}

void sched_kick_interrupt(void)
{
	struct cpu *c = this_cpu();
	c->kicks++;
	wake_sleepers(c, true);
}

void sched_irq_exit(void)
{
	if (this_cpu()->need_resched)
		schedule(true);
}

static void idle_loop(void *unused)
{
	(void)unused;
	for (;;) {
		arch_irq_save();
		struct cpu *c = this_cpu();
		if (c->need_resched || c->rq.length)
			schedule(false);
		else
			arch_wait_for_interrupt();
		arch_irq_enable();
	}
}

static void cpu_setup_idle(struct cpu *c)
{
	c->idle = thread_new("idle", idle_loop, 0);
	if (!c->idle)
		panic("no memory for cpu%u's idle thread", c->id);
	c->idle->pinned = true;
	c->idle->cpu = c->id;
}

static struct thread boot_thread = { .name = "main", .pinned = true };

void sched_for_each_thread(void (*fn)(struct thread *t, void *arg), void *arg)
{
	fn(&boot_thread, arg);
	for (unsigned i = 0; i < MAX_THREADS; i++)
		if (pool_used[i] && thread_pool[i].stack)
			fn(&thread_pool[i], arg);
}

void sched_init(void)
{
	struct cpu *c = this_cpu();

	boot_thread.state = THREAD_RUNNABLE;
	boot_thread.on_cpu = 1;
	boot_thread.started = true;
	c->current = &boot_thread;
	cpu_setup_idle(c);
}

void sched_prepare_cpu(struct cpu *c)
{
	cpu_setup_idle(c);
	c->idle->started = true;        /* it runs from sched_cpu_online, no switch */
	c->current = c->idle;
}

_Noreturn void sched_cpu_online(void)
{
	struct cpu *c = this_cpu();
	c->online = true;
	c->current->on_cpu = 1;
	arch_irq_enable();
	idle_loop(0);
	panic("idle loop returned");
}

uint64_t sched_total_switches(void)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < cpu_count(); i++)
		n += cpus[i].switches;
	return n;
}
