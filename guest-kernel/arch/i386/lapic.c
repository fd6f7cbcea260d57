/*
 * lapic.c — the local APIC: per-CPU timer, IPIs, EOI; and clock calibration.
 *
 * At boot the PIT (whose rate is known: 1193182 Hz) is read back while the
 * LAPIC timer counts down and the TSC counts up; 10 ms of PIT counts give
 * both their rates. After that the PIT is left running without an
 * interrupt, and every CPU ticks from its own LAPIC timer in periodic mode.
 *
 * A rate change is published as (count, generation); each CPU reloads its
 * own timer at its next tick when it sees a new generation, so no IPI is
 * needed and no CPU ever runs at a rate it was not told.
 *
 * The sampling timer (sample.h) shares it: while sampling, the timer runs
 * at the higher of the two rates and each interrupt asks which of the
 * tick and the samples are due, each by its own TSC deadlines (met within
 * half an interrupt period), so both keep their rates: an interrupt that
 * comes late (a vCPU the host did not run) takes every sample it missed,
 * up to LAPIC_MAX_PENDING, each with its lateness, as illumos' cyclics
 * fire each pending expiration; with no sampling every interrupt is a
 * tick, as before.
 */
#include "arch_i386.h"
#include "console.h"
#include "cpu.h"
#include "vectors.h"
#include "x86.h"
#include "notrace.h"
#include "sample.h"
#include "timer.h"

#define LAPIC_ID       0x020
#define LAPIC_TPR      0x080
#define LAPIC_EOI      0x0b0
#define LAPIC_SVR      0x0f0
#define LAPIC_ICR_LO   0x300
#define LAPIC_ICR_HI   0x310
#define LAPIC_LVT_TMR  0x320
#define LAPIC_LVT_LINT0 0x350
#define LAPIC_LVT_LINT1 0x360
#define LAPIC_LVT_ERR  0x370
#define LAPIC_TMR_INIT 0x380
#define LAPIC_TMR_CUR  0x390
#define LAPIC_TMR_DIV  0x3e0

#define LVT_MASKED     (1u << 16)
#define LVT_PERIODIC   (1u << 17)
#define LVT_EXTINT     0x700
#define LVT_NMI        0x400
#define SVR_ENABLE     0x100
#define ICR_PENDING    (1u << 12)
#define ICR_ASSERT     (1u << 14)
#define ICR_INIT       0x500
#define ICR_STARTUP    0x600
#define ICR_SELF       (1u << 18)   /* destination shorthand 01: this CPU */

#define PIT_HZ         1193182u
#define LAPIC_DEFAULT_PHYS 0xfee00000u

static volatile uint32_t *lapic;
static uint64_t lapic_hz;                 /* timer ticks per second, divided */
static uint64_t tsc_rate;
static volatile uint32_t timer_count;
static volatile unsigned long timer_gen;
static unsigned long seen_gen[KERNEL_MAX_CPUS];

/* The rates asked for, and each CPU's next deadlines (TSC). */
static volatile unsigned tick_hz, sample_hz;
static volatile bool sample_every;
static uint64_t next_tick[KERNEL_MAX_CPUS], next_sample[KERNEL_MAX_CPUS];
sample_hook_fn sample_hook;
const unsigned arch_sample_hz_max = 20000;
#define LAPIC_MAX_PENDING 1000

static uint32_t rd(unsigned reg) { return lapic[reg / 4]; }
static void wr(unsigned reg, uint32_t v) { lapic[reg / 4] = v; }

void lapic_init(bool boot_cpu)
{
	if (!lapic)
		lapic = mm_map_mmio(LAPIC_DEFAULT_PHYS);
	wr(LAPIC_SVR, SVR_ENABLE | SPURIOUS_VECTOR);
	wr(LAPIC_TPR, 0);
	/* The boot CPU keeps the 8259 reaching it (virtual wire mode): the
	 * UART interrupt still arrives through the PIC. */
	wr(LAPIC_LVT_LINT0, boot_cpu ? LVT_EXTINT : LVT_MASKED);
	wr(LAPIC_LVT_LINT1, boot_cpu ? LVT_NMI : LVT_MASKED);
	wr(LAPIC_LVT_ERR, LVT_MASKED);
	wr(LAPIC_TMR_DIV, 0x3);              /* divide by 16 */
	wr(LAPIC_LVT_TMR, LVT_MASKED | LAPIC_TIMER_VECTOR);
}

unsigned lapic_id(void)
{
	return rd(LAPIC_ID) >> 24;
}

void lapic_eoi(void)
{
	wr(LAPIC_EOI, 0);
}

void lapic_calibrate(void)
{
	const uint32_t window = PIT_HZ / 100;       /* 10 ms */
	pit_set_divisor(0);                         /* 65536: free-running */
	uint16_t prev = pit_read_count();
	uint32_t elapsed = 0;

	wr(LAPIC_TMR_INIT, 0xffffffffu);
	uint64_t tsc0 = rdtsc();
	while (elapsed < window) {
		uint16_t now = pit_read_count();
		elapsed += (uint16_t)(prev - now);
		prev = now;
	}
	uint32_t counted = 0xffffffffu - rd(LAPIC_TMR_CUR);
	uint64_t tsc = rdtsc() - tsc0;
	wr(LAPIC_TMR_INIT, 0);

	lapic_hz = (uint64_t)counted * PIT_HZ / elapsed;
	tsc_rate = tsc * PIT_HZ / elapsed;
	if (!lapic_hz || !tsc_rate)
		panic("clock calibration failed: lapic %u, tsc %llu in %u PIT counts",
		      counted, (unsigned long long)tsc, elapsed);
}

uint64_t tsc_hz(void)
{
	return tsc_rate;
}

void udelay(unsigned us)
{
	uint64_t end = rdtsc() + tsc_rate * us / 1000000;
	while (rdtsc() < end)
		__asm__ volatile("pause");
}

/* This CPU's deadlines, a period from now. */
static void deadlines_start(unsigned id)
{
	uint64_t now = rdtsc();
	if (tick_hz)
		next_tick[id] = now + tsc_rate / tick_hz;
	if (sample_hz)
		next_sample[id] = now + tsc_rate / sample_hz;
}

void lapic_timer_start_here(void)
{
	unsigned id = this_cpu()->id;
	seen_gen[id] = timer_gen;
	deadlines_start(id);
	wr(LAPIC_LVT_TMR, LVT_PERIODIC | LAPIC_TIMER_VECTOR);
	wr(LAPIC_TMR_INIT, timer_count);
}

/* Publish the timer's rate for (tick, sample) rates: the higher. */
static bool timer_rates(unsigned tick, unsigned sample, bool every)
{
	unsigned base = sample > tick ? sample : tick;
	uint64_t count = lapic_hz / base;
	if (count < 16 || count > 0xffffffffu)
		return false;
	tick_hz = tick;
	sample_hz = sample;
	sample_every = every;
	timer_count = (uint32_t)count;
	arch_barrier();
	timer_gen++;
	lapic_timer_start_here();
	return true;
}

bool lapic_timer_set_hz(unsigned hz)
{
	return timer_rates(hz, sample_hz, sample_every);
}

bool arch_sample_set(unsigned hz, bool every_cpu)
{
	if (hz > arch_sample_hz_max)
		return false;
	irqflags_t f = arch_irq_save();
	bool ok = timer_rates(tick_hz, hz, every_cpu);
	arch_irq_restore(f);
	return ok;
}

/* How many deadlines *next, period apart, now has passed, within half of
 * the timer's period: each is due, up to most (a tick skips those it fell
 * behind by, as ever; samples are all taken, as illumos' cyclics fire
 * each pending expiration, up to LAPIC_MAX_PENDING), *late the first
 * one's lateness, *skipped how many passed deadlines were not; *next the
 * one after. */
static unsigned deadlines_met(uint64_t *next, uint64_t period, uint64_t now,
			      uint64_t *late, unsigned most, uint64_t *skipped)
{
	uint64_t base = sample_hz > tick_hz ? sample_hz : tick_hz;
	unsigned n = 0;
	*late = now > *next ? now - *next : 0;
	*skipped = 0;
	while ((int64_t)(now + tsc_rate / base / 2 - *next) >= 0 && n < most) {
		*next += period;
		n++;
	}
	if (*next + period < now) {               /* fell further behind: no burst */
		*skipped = (now - *next) / period + 1;
		*next = now + period;
	}
	return n;
}

uint64_t lapic_sample_period(void)
{
	return sample_hz ? tsc_rate / sample_hz : 0;
}

unsigned lapic_timer_interrupt(uint64_t *late, unsigned *samples)
{
	unsigned id = this_cpu()->id;
	uint64_t now = rdtsc(), tick_late, skipped;
	*samples = 0;
	if (seen_gen[id] != timer_gen) {
		seen_gen[id] = timer_gen;
		wr(LAPIC_TMR_INIT, timer_count);
		deadlines_start(id);
		return sample_hz ? 0 : LAPIC_DUE_TICK;
	}
	if (!sample_hz)
		return LAPIC_DUE_TICK;
	unsigned due = 0;
	if (deadlines_met(&next_tick[id], tsc_rate / tick_hz, now, &tick_late, 1,
			  &skipped))
		due |= LAPIC_DUE_TICK;
	if (skipped)
		timer_skipped(skipped);
	if (sample_every || id == 0)
		*samples = deadlines_met(&next_sample[id], tsc_rate / sample_hz, now, late,
					 LAPIC_MAX_PENDING, &skipped);
	return due;
}

static void send_icr(unsigned apic_id, uint32_t low)
{
	irqflags_t f = arch_irq_save();
	while (rd(LAPIC_ICR_LO) & ICR_PENDING)
		__asm__ volatile("pause");
	wr(LAPIC_ICR_HI, apic_id << 24);
	wr(LAPIC_ICR_LO, low);
	arch_irq_restore(f);
}

void lapic_send_init(unsigned apic_id)
{
	send_icr(apic_id, ICR_ASSERT | ICR_INIT);
}

void lapic_send_startup(unsigned apic_id, unsigned vector)
{
	send_icr(apic_id, ICR_ASSERT | ICR_STARTUP | (vector & 0xff));
}

void lapic_send_fixed(unsigned apic_id, unsigned vector)
{
	send_icr(apic_id, ICR_ASSERT | (vector & 0xff));
}

/* An interrupt to this CPU (ICR shorthand "self": no destination, no wait
 * for a previous IPI's delivery, which on a self-IPI is at once). From
 * trap handlers too, hence NOTRACE and no irq_save: one register write. */
NOTRACE void arch_self_interrupt(void)
{
	lapic[LAPIC_ICR_LO / 4] = ICR_SELF | ICR_ASSERT | KICK_VECTOR;
}
