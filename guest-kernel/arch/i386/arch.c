/*
 * arch.c — the i386 side of arch.h that needs no file of its own: bring-up
 * order, UART port access, timer rate, cycle counter, interrupt masking,
 * and the deliberate crashes the harness uses to test its failure paths.
 */
#include "arch_i386.h"
#include "kstring.h"
#include "mm.h"
#include "wire.h"
#include "x86.h"

#define COM1 0x3f8
#define PIT_HZ 1193182u

const uint8_t arch_wire_id = WIRE_ARCH_I386;
const uint8_t arch_byte_order = WIRE_ORDER_LITTLE;
const char arch_name[] = "i386";
const unsigned arch_timer_hz_min = 19;      /* divisor fits 16 bits */
const unsigned arch_timer_hz_max = 50000;

void arch_init(void)
{
	gdt_init();
	idt_init();
	pic_init();
	paging_init();
	gdt_set_df_cr3(read_cr3());
}

uint8_t arch_uart_read(unsigned reg)
{
	return inb(COM1 + reg);
}

void arch_uart_write(unsigned reg, uint8_t value)
{
	outb(COM1 + reg, value);
}

void arch_uart_irq_enable(void)
{
	pic_unmask(4);
}

bool arch_timer_set_hz(unsigned hz)
{
	unsigned divisor = (PIT_HZ + hz / 2) / hz;
	if (divisor == 0 || divisor > 0xffff)
		return false;
	pit_set_divisor((uint16_t)divisor);
	pic_unmask(0);
	return true;
}

uint64_t arch_cycles(void)
{
	return rdtsc();
}

unsigned arch_cpu_id(void)
{
	return 0;
}

unsigned arch_cpu_count(void)
{
	return 1;
}

irqflags_t arch_irq_save(void)
{
	irqflags_t flags = read_eflags();
	__asm__ volatile("cli" ::: "memory");
	return flags;
}

void arch_irq_restore(irqflags_t flags)
{
	if (flags & EFLAGS_IF)
		__asm__ volatile("sti" ::: "memory");
}

void arch_irq_enable(void)
{
	__asm__ volatile("sti" ::: "memory");
}

void arch_wait_for_interrupt(void)
{
	/* sti's one-instruction shadow makes "sti; hlt" atomic: an interrupt
	 * pending now wakes the hlt instead of being taken before it. */
	__asm__ volatile("sti; hlt" ::: "memory");
}

/* ---- deliberate crashes ---- */

static void crash_ud(void) { __asm__ volatile("ud2"); }
static void crash_bp(void) { __asm__ volatile("int3"); }
static void crash_de(void)
{
	__asm__ volatile("xorl %%ecx, %%ecx; divl %%ecx" ::: "eax", "ecx", "edx");
}
static void crash_gp(void)
{
	__asm__ volatile("movl %0, %%ds" : : "r"(0x50));   /* past the GDT limit */
}
static void crash_pf(void)
{
	*(volatile uint32_t *)mm_unmapped_probe_addr = 0xdead;
}
static void crash_df(void)
{
	/* A push onto an unmapped stack faults; delivering that #PF needs the
	 * same stack, so the CPU raises #DF, which the task gate survives. */
	__asm__ volatile("movl %0, %%esp; pushl $0" : : "r"(mm_unmapped_probe_addr));
}

static const struct { const char *kind; void (*fn)(void); } crashes[] = {
	{ "ud", crash_ud }, { "bp", crash_bp }, { "de", crash_de },
	{ "gp", crash_gp }, { "pf", crash_pf }, { "df", crash_df },
};
const char arch_crash_kinds[] = "ud bp de gp pf df";

void arch_crash(const char *kind)
{
	for (unsigned i = 0; i < sizeof crashes / sizeof crashes[0]; i++)
		if (strcmp(kind, crashes[i].kind) == 0)
			crashes[i].fn();
}
