/*
 * timer.c — tick counting over the arch's periodic interrupt.
 */
#include "timer.h"
#include "arch.h"

static volatile uint64_t ticks;
static unsigned hz;

void timer_tick(void)
{
	ticks++;
}

uint64_t timer_ticks(void)
{
	irqflags_t flags = arch_irq_save();   /* 64-bit read on a 32-bit CPU */
	uint64_t t = ticks;
	arch_irq_restore(flags);
	return t;
}

unsigned timer_hz(void)
{
	return hz;
}

bool timer_set_hz(unsigned new_hz)
{
	if (new_hz < arch_timer_hz_min || new_hz > arch_timer_hz_max ||
	    !arch_timer_set_hz(new_hz))
		return false;
	hz = new_hz;
	return true;
}

void timer_wait_ticks(uint64_t n)
{
	uint64_t end = timer_ticks() + n;
	while (timer_ticks() < end)
		arch_wait_for_interrupt();
}
