/*
 * timer.c — tick counting over the arch's periodic interrupt.
 */
#include "timer.h"
#include "arch.h"
#include "cpu.h"
#include "thread.h"

static volatile uint64_t ticks, skipped;
static unsigned hz;

/* On every CPU's tick; the boot CPU's ticks are the kernel's clock. */
void timer_tick(void)
{
	if (this_cpu()->id == 0)
		ticks++;
	sched_tick();
}

void timer_skipped(uint64_t n)
{
	if (this_cpu()->id == 0)
		skipped += n;
}

/* The boot CPU writes both counts; any CPU reads them. On a 32-bit CPU a
 * 64-bit read can tear across a carry, so read until two reads agree. */
static uint64_t read_count(const volatile uint64_t *count)
{
	uint64_t a, b;
	do {
		a = *count;
		b = *count;
	} while (a != b);
	return a;
}

uint64_t timer_ticks(void)
{
	return read_count(&ticks);
}

uint64_t timer_ticks_skipped(void)
{
	return read_count(&skipped);
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
	thread_sleep(n);
}
