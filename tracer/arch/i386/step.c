/*
 * step.c — the lossy baseline of the seeds on i386 (`probe mechanism
 * step`): an int3 that, when hit, writes the original byte back, sets
 * EFLAGS.TF and returns to the site; the #DB after the one instruction
 * re-inserts the int3. Any CPU that runs the site meanwhile runs the
 * original and is not traced.
 *
 * The fire path (fire.c) hands a step probe's firing here once it is
 * counted or recorded; the #DB hook below finds the thread's probe in its
 * thread slot. step_lock orders these stores with the ones that arm and
 * disarm int3 sites (fbt.c, through i386_step_store), so a re-arm never
 * lands on a site just disarmed.
 */
#include "arch.h"
#include "arch/trapframe.h"
#include "arch/vectors.h"
#include "arch/x86.h"
#include "fire.h"
#include "spinlock.h"
#include "thread.h"
#include "trap.h"
#include "tracer.h"

static spinlock_t step_lock = SPINLOCK_INIT("step-rearm");
/* Per thread (thread.h's slots): the probe it is single-stepping, id + 1. */
static unsigned step_slot;

void i386_step_store(const struct probe *p, uint8_t b)
{
	irqflags_t f = spin_lock_irqsave(&step_lock);
	*(volatile uint8_t *)tracer_text_alias(p->addr) = b;
	spin_unlock_irqrestore(&step_lock, f);
}

/* A step probe's trap at site: the original byte back, and one
 * instruction single-stepped from the site. */
void i386_step_fire(const struct probe *p, struct trapframe *tf, uint32_t site)
{
	spin_lock(&step_lock);
	*(volatile uint8_t *)tracer_text_alias(p->addr) = p->site.insn.orig[0];
	spin_unlock(&step_lock);
	thread_slot_set(thread_current(), step_slot, p->id + 1);
	tf->eip = site;
	tf->eflags |= EFLAGS_TF;
}

/* The #DB hook: the single-step baseline's trap, one instruction after
 * the site, puts the int3 back; any other #DB is declined. */
static int i386_step_trap(struct trapframe *tf)
{
	struct thread *me = thread_current();
	uintptr_t stepping = thread_slot(me, step_slot);
	if (!stepping)
		return TRAP_DECLINED;
	const struct probe *p = &tracer_probes[stepping - 1];
	thread_slot_set(me, step_slot, 0);
	spin_lock(&step_lock);
	if (p->state == PROBE_ENABLED && p->mechanism == MECHANISM_STEP)
		*(volatile uint8_t *)tracer_text_alias(p->addr) = 0xcc;
	spin_unlock(&step_lock);
	tf->eflags &= ~EFLAGS_TF;
	return TRAP_HANDLED;
}

void i386_step_init(void)
{
	step_slot = thread_slot_claim();
	trap_hook_add(VEC_DB, i386_step_trap);
}
