/*
 * arch.c — the sparc64 side of arch.h that needs no file of its own:
 * bring-up order, the 16550 through the physical-bypass ASI, the %tick
 * timer, interrupt masking, and the deliberate crashes.
 *
 * Interrupts are PSTATE.IE alone; PIL stays 0. Two sources:
 *  - the tick compare: TICK_CMPR matches %tick, SOFTINT.TICK_INT is set,
 *    the CPU takes interrupt_level_14; we clear the bit and set the next
 *    compare. The sampling timer (sample.h) is STICK_CMPR against %stick,
 *    SOFTINT.STICK_INT, the same level: the tick keeps its own compare.
 *  - the UART's receive interrupt, routed for real: ISA IRQ 4 on the ebus
 *    reaches the sabre host bridge as OBIO interrupt 0x2b; with its
 *    interrupt map register valid, the bridge sends an interrupt vector
 *    and the CPU takes interrupt_vector (tt 0x60). We acknowledge the
 *    vector (ASI_INTR_RECEIVE), let core drain RX into its ring
 *    (uart_interrupt), and only then set the bridge's clear register to
 *    idle — which re-sends at once if more data arrived meanwhile.
 * sun4u has no instruction that idles the CPU until an interrupt, so
 * arch_wait_for_interrupt spins until the interrupt count moves.
 */
#include "arch_sparc64.h"
#include "console.h"
#include "cpu.h"
#include "kstring.h"
#include "mm.h"
#include "vmlayout.h"
#include "wire.h"
#include "notrace.h"
#include "sample.h"
#include "timer.h"

const uint8_t arch_wire_id = WIRE_ARCH_SPARC64;
const uint8_t arch_byte_order = WIRE_ORDER_BIG;
const char arch_name[] = "sparc64";
const unsigned arch_timer_hz_min = 1;
const unsigned arch_timer_hz_max = 50000;    /* 2000 %tick cycles apart */

static uint64_t tick_period, tick_next;
static volatile unsigned long interrupts_taken;

void arch_init(void)
{
	trap_init();
	mmu_init();
}

NOTRACE uint8_t arch_uart_read(unsigned reg)
{
	return lduba_phys(SUN4U_COM1 + reg);
}

NOTRACE void arch_uart_write(unsigned reg, uint8_t value)
{
	stba_phys(SUN4U_COM1 + reg, value);
}

void arch_uart_irq_enable(void)
{
	stwa_phys(SABRE_OBIO_IMR(INO_SERIAL), SABRE_IMR_V);
}

/* interrupt_vector, from trap_dispatch with interrupts off. */
void vector_interrupt(void)
{
	uint64_t ino = ldxa_asi(INTR_DATA0, ASI_INTR_R) & INTR_INO_MASK;

	stxa_asi(0, 0, ASI_INTR_RECEIVE);     /* the CPU may take the next vector */
	if (ino != INO_SERIAL)
		panic("interrupt vector for INO 0x%lx, which nothing enabled", ino);
	interrupts_taken++;
	uart_interrupt();
	stwa_phys(SABRE_OBIO_ICR(ino), SABRE_ICR_IDLE);
}

bool arch_timer_set_hz(unsigned hz)
{
	if (hz < arch_timer_hz_min || hz > arch_timer_hz_max)
		return false;
	irqflags_t flags = arch_irq_save();
	tick_period = TICK_HZ / hz;
	tick_next = rd_tick() + tick_period;
	wr_tick_cmpr(tick_next);
	arch_irq_restore(flags);
	return true;
}

sample_hook_fn sample_hook;
const unsigned arch_sample_hz_max = 20000;
static uint64_t sample_period, sample_next;    /* %stick cycles; 0: off */

bool arch_sample_set(unsigned hz, bool every_cpu)
{
	(void)every_cpu;                          /* one CPU on sun4u */
	if (hz > arch_sample_hz_max)
		return false;
	irqflags_t flags = arch_irq_save();
	sample_period = hz ? TICK_HZ / hz : 0;
	sample_next = rd_stick() + sample_period;
	wr_stick_cmpr(hz ? sample_next : (1ul << 63));  /* INT_DIS when off */
	arch_irq_restore(flags);
	return true;
}

/* STICK_INT: every deadline passed is a sample, each with its lateness
 * (a vCPU the host did not run takes the ones it missed, up to a bound,
 * as illumos' cyclics fire each pending expiration); the next compare
 * from the last deadline, as the tick's. */
static void sample_interrupt(const struct trapframe *tf)
{
	uint64_t now = rd_stick();
	unsigned n = 0;
	if (!sample_period)
		return;
	while (sample_next <= now && n++ < 1000) {
		if (sample_hook)
			sample_hook(tf, now - sample_next);
		sample_next += sample_period;
	}
	if (sample_next <= now)
		sample_next = now + sample_period;
	wr_stick_cmpr(sample_next);
}

/* interrupt_level_14, from trap_dispatch with interrupts off. */
void timer_interrupt(const struct trapframe *tf)
{
	uint64_t softint = rd_softint();

	wr_clear_softint(softint & (SOFTINT_TICK_INT | SOFTINT_STICK_INT | 1u << 14));
	if (softint & SOFTINT_STICK_INT)
		sample_interrupt(tf);
	if (softint & SOFTINT_TICK_INT) {
		/* Next compare from the last one, so the rate does not drift;
		 * if we fell behind by a whole period, skip ahead instead of
		 * delivering a burst of late ticks. */
		uint64_t now = rd_tick();
		tick_next += tick_period;
		if (tick_next <= now) {
			timer_skipped((now - tick_next) / tick_period + 1);
			tick_next = now + tick_period;
		}
		wr_tick_cmpr(tick_next);
		interrupts_taken++;
		timer_tick();
	}
}

NOTRACE uint64_t arch_cycles(void)
{
	return rd_tick();
}

NOTRACE uint64_t arch_cycles_hz(void)
{
	return TICK_HZ;
}

/* sun4u in QEMU: max_cpus = 1. */
unsigned arch_cpu_discover(void)
{
	cpus[0].hw_id = 0;
	return 1;
}

bool arch_cpu_start(struct cpu *c)
{
	(void)c;
	return false;
}

void arch_send_ipi(unsigned cpu, enum ipi_kind kind)
{
	panic("IPI %d to cpu%u on a single-CPU machine", (int)kind, cpu);
}

/* A software interrupt at KICK_LEVEL: taken once PSTATE.IE is set again
 * (PIL stays 0), through trap_dispatch. */
NOTRACE void arch_self_interrupt(void)
{
	wr_set_softint(UL(1) << KICK_LEVEL);
}

void arch_free_memory(uintptr_t *lo, uintptr_t *hi)
{
	*lo = (uintptr_t)__kernel_end;
	*hi = mmu_ram_top();
}

/*
 * A new thread's stack, top down: a zeroed frame for the window entry()
 * will run in (the caller of the switch window), then the switch window's
 * save area, whose %i6 points at that frame and whose %i7 makes
 * `ret` (jmpl %i7 + 8) land on entry. arch_context_switch loads it like
 * any switched-out thread's.
 */
void arch_context_init(struct arch_context *ctx, void *stack_top, void (*entry)(void))
{
	uintptr_t top = (uintptr_t)stack_top & ~(uintptr_t)15;
	uintptr_t caller = top - STACK_FRAME, frame = caller - STACK_FRAME;

	memset((void *)frame, 0, top - frame);
	uint64_t *save_area = (uint64_t *)frame;
	save_area[14] = caller - STACK_BIAS;          /* %i6 */
	save_area[15] = (uintptr_t)entry - 8;         /* %i7 */
	ctx->sp = frame - STACK_BIAS;
}

/* The drain calls these for every frame (spin_lock_irqsave in the link):
 * probed, each frame sent would record two firings more to send, and the
 * drain, which keeps its CPU while it has records, would never let go of
 * it. */
NOTRACE irqflags_t arch_irq_save(void)
{
	irqflags_t pstate = rdpr(pstate);
	wrpr(pstate, pstate & ~PSTATE_IE);
	return pstate;
}

NOTRACE void arch_irq_restore(irqflags_t flags)
{
	if (flags & PSTATE_IE)
		wrpr(pstate, rdpr(pstate) | PSTATE_IE);
}

void arch_irq_enable(void)
{
	wrpr(pstate, rdpr(pstate) | PSTATE_IE);
}

void arch_wait_for_interrupt(void)
{
	unsigned long seen = interrupts_taken;

	arch_irq_enable();
	while (interrupts_taken == seen)
		__asm__ volatile("" ::: "memory");
}

/* ---- deliberate crashes ---- */

extern void st_enter_user(void (*user_fn)(void));
extern void st_user_rdpr(void);

static void crash_illegal(void) { __asm__ volatile("illtrap 0xbad"); }
static void crash_privileged(void) { st_enter_user(st_user_rdpr); }
static void crash_unaligned(void)
{
	__asm__ volatile("ldx [%0], %%g0" : : "r"(boot_stack + 4) : "memory");
}
static void crash_unmapped(void)
{
	(void)*(volatile uint64_t *)mm_unmapped_probe_addr;
}
static void crash_divzero(void)
{
	__asm__ volatile("udivx %0, %%g0, %%g0" : : "r"(1ul));
}
static void crash_protection(void)
{
	*(volatile uint32_t *)(void *)crash_illegal = 0;
}
static void crash_df(void)
{
	/* Point this window's %sp at an unmapped page and flush it: the
	 * spill handler (TL 1) faults on the store, a trap at TL 2. */
	__asm__ volatile("mov %0, %%sp\n\tsave %%sp, -176, %%sp\n\tflushw"
			 : : "r"(mm_unmapped_probe_addr - STACK_BIAS) : "memory");
}

static const struct { const char *kind; void (*fn)(void); } crashes[] = {
	{ "illegal", crash_illegal },     { "privileged", crash_privileged },
	{ "unaligned", crash_unaligned }, { "unmapped", crash_unmapped },
	{ "divzero", crash_divzero },     { "protection", crash_protection },
	{ "df", crash_df },
};
const char arch_crash_kinds[] = "illegal privileged unaligned unmapped divzero protection df";

void arch_crash(const char *kind)
{
	for (unsigned i = 0; i < sizeof crashes / sizeof crashes[0]; i++)
		if (strcmp(kind, crashes[i].kind) == 0) {
			arch_irq_save();
			crashes[i].fn();
		}
}
