/*
 * arch.c — the i386 side of arch.h that needs no file of its own: bring-up
 * order, UART port access, timer rate, cycle counter, free memory,
 * interrupt masking, and the deliberate crashes the harness uses to test
 * its failure paths.
 */
#include "arch_i386.h"
#include "kstring.h"
#include "mm.h"
#include "wire.h"
#include "notrace.h"
#include "x86.h"

#define COM1 0x3f8

const uint8_t arch_wire_id = WIRE_ARCH_I386;
const uint8_t arch_byte_order = WIRE_ORDER_LITTLE;
const char arch_name[] = "i386";
const unsigned arch_timer_hz_min = 10;
const unsigned arch_timer_hz_max = 50000;

void arch_init(void)
{
	gdt_init();
	gdt_load(0);            /* from here on this_cpu() works */
	idt_init();
	idt_load(0);
	pic_init();
	paging_init();
	gdt_set_df_cr3(paging_root());
	lapic_init(true);
	lapic_calibrate();
}

/*
 * Free memory: the multiboot memory map's available region that holds the
 * kernel, from the end of the image, capped to what paging maps. Without
 * a map, mem_upper (which may include firmware tables at the top of RAM),
 * less 1 MiB for those.
 */
void arch_free_memory(uintptr_t *lo, uintptr_t *hi)
{
	const uint32_t *mbi = (const uint32_t *)multiboot_info;
	uintptr_t start = (uintptr_t)__kernel_end, end = start;

	if (mbi && (mbi[0] & (1u << 6))) {
		uintptr_t p = mbi[12], stop = mbi[12] + mbi[11];
		while (p < stop) {
			const uint32_t *e = (const uint32_t *)p;
			uint64_t base = e[1] | (uint64_t)e[2] << 32;
			uint64_t len = e[3] | (uint64_t)e[4] << 32;
			if (e[5] == 1 && base <= start && base + len > start)
				end = (uintptr_t)(base + len);
			p += e[0] + 4;
		}
	} else if (mbi && (mbi[0] & 1)) {
		end = mbi[2] * 1024;    /* 1 MiB + mem_upper, less 1 MiB */
	}
	if (end > 256u << 20)
		end = 256u << 20;
	*lo = start;
	*hi = end;
}

NOTRACE uint8_t arch_uart_read(unsigned reg)
{
	return inb(COM1 + reg);
}

NOTRACE void arch_uart_write(unsigned reg, uint8_t value)
{
	outb(COM1 + reg, value);
}

void arch_uart_irq_enable(void)
{
	pic_unmask(4);
}

bool arch_timer_set_hz(unsigned hz)
{
	return lapic_timer_set_hz(hz);
}

NOTRACE uint64_t arch_cycles(void)
{
	return rdtsc();
}

uint64_t arch_cycles_hz(void)
{
	return tsc_hz();
}

/* The drain calls these for every frame (spin_lock_irqsave in the link):
 * probed, each frame sent would record two firings more to send, and the
 * drain, which keeps its CPU while it has records, would never let go of
 * it. */
NOTRACE irqflags_t arch_irq_save(void)
{
	irqflags_t flags = read_eflags();
	__asm__ volatile("cli" ::: "memory");
	return flags;
}

NOTRACE void arch_irq_restore(irqflags_t flags)
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
	__asm__ volatile("movl %0, %%ds" : : "r"(0x100));  /* past the GDT limit */
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
