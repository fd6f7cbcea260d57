/*
 * gdt.c — our own GDT: flat ring-0 code and data, and for each CPU a TSS,
 * a double-fault TSS and a per-CPU data segment.
 *
 * Ring 0 only, so a TSS carries no stack for privilege changes; it exists
 * because a task switch needs somewhere to save the state that faulted.
 * Each CPU's #DF goes through a task gate (idt.c) to its own double-fault
 * TSS with its own stack: a double fault caused by a bad ESP still runs on
 * good memory, reads the faulting state out of that CPU's TSS, prints it
 * and exits. The per-CPU data segment is based at the CPU's struct cpu and
 * loaded in %fs, so this_cpu() is one instruction (arch_inline.h).
 */
#include <stdint.h>
#include "arch_i386.h"
#include "console.h"
#include "cpu.h"
#include "exit.h"
#include "vectors.h"
#include "x86.h"

_Static_assert(GDT_MAX_CPUS == KERNEL_MAX_CPUS, "vectors.h GDT_MAX_CPUS");

struct tss {
	uint16_t link, r0;
	uint32_t esp0;
	uint16_t ss0, r1;
	uint32_t esp1;
	uint16_t ss1, r2;
	uint32_t esp2;
	uint16_t ss2, r3;
	uint32_t cr3, eip, eflags, eax, ecx, edx, ebx, esp, ebp, esi, edi;
	uint16_t es, r4, cs, r5, ss, r6, ds, r7, fs, r8, gs, r9, ldt, r10;
	uint16_t trap, iomap_base;
} __attribute__((packed));

_Static_assert(sizeof(struct tss) == 104, "TSS layout");

static uint64_t gdt[GDT_ENTRIES];
static struct tss main_tss[KERNEL_MAX_CPUS], df_tss[KERNEL_MAX_CPUS];
static uint8_t df_stack[KERNEL_MAX_CPUS][4096] __attribute__((aligned(16)));

static uint64_t descriptor(uint32_t base, uint32_t limit, uint8_t access, uint8_t flags)
{
	return (uint64_t)(limit & 0xffff) |
	       ((uint64_t)(base & 0xffffff) << 16) |
	       ((uint64_t)access << 40) |
	       ((uint64_t)((limit >> 16) & 0xf) << 48) |
	       ((uint64_t)(flags & 0xf) << 52) |
	       ((uint64_t)(base >> 24) << 56);
}

static _Noreturn void double_fault_task(void)
{
	/* Our TSS's back link names the TSS that faulted, hence the CPU. */
	unsigned cpu = 0;
	for (unsigned i = 0; i < KERNEL_MAX_CPUS; i++)
		if (df_tss[i].link == SEL_TSS(i))
			cpu = i;
	const struct tss *t = &main_tss[cpu];

	console_panic_mode();
	kprintf("\nUNEXPECTED TRAP on cpu%u: vector 8 #DF (double fault)\n"
		"  state at the fault (saved by the task switch):\n"
		"  EIP 0x%08x  CS 0x%04x  EFLAGS 0x%08x\n"
		"  EAX 0x%08x  EBX 0x%08x  ECX 0x%08x  EDX 0x%08x\n"
		"  ESI 0x%08x  EDI 0x%08x  EBP 0x%08x  ESP 0x%08x\n"
		"  CR2 0x%08x  CR3 0x%08x\n",
		cpu, t->eip, t->cs, t->eflags, t->eax, t->ebx, t->ecx, t->edx,
		t->esi, t->edi, t->ebp, t->esp, read_cr2(), read_cr3());
	kernel_exit(EXIT_DOUBLE_FAULT);
}

void gdt_init(void)
{
	gdt[0] = 0;
	gdt[SEL_KERNEL_CS >> 3] = descriptor(0, 0xfffff, 0x9a, 0xc);
	gdt[SEL_KERNEL_DS >> 3] = descriptor(0, 0xfffff, 0x92, 0xc);
	for (unsigned i = 0; i < KERNEL_MAX_CPUS; i++) {
		gdt[SEL_TSS(i) >> 3] = descriptor((uint32_t)&main_tss[i],
						  sizeof main_tss[i] - 1, 0x89, 0);
		gdt[SEL_DF_TSS(i) >> 3] = descriptor((uint32_t)&df_tss[i],
						     sizeof df_tss[i] - 1, 0x89, 0);
		gdt[SEL_PERCPU(i) >> 3] = descriptor((uint32_t)&cpus[i],
						     sizeof cpus[i] - 1, 0x92, 0x4);
		main_tss[i].iomap_base = sizeof main_tss[i];
		struct tss *d = &df_tss[i];
		d->iomap_base = sizeof *d;
		d->eip = (uint32_t)double_fault_task;
		d->esp = (uint32_t)(df_stack[i] + sizeof df_stack[i]);
		d->eflags = 0x2;                 /* interrupts off */
		d->cs = SEL_KERNEL_CS;
		d->ds = d->es = d->ss = d->gs = SEL_KERNEL_DS;
		d->fs = SEL_PERCPU(i);
	}
}

/* Load the GDT on this CPU and take CPU id's TSS and per-CPU segment. */
void gdt_load(unsigned id)
{
	struct { uint16_t limit; uint32_t base; } __attribute__((packed)) gdtr = {
		sizeof gdt - 1, (uint32_t)gdt,
	};
	__asm__ volatile(
		"lgdt %0\n\t"
		"ljmp %1, $1f\n"
		"1:\n\t"
		"mov %2, %%ds\n\t"
		"mov %2, %%es\n\t"
		"mov %2, %%gs\n\t"
		"mov %2, %%ss\n\t"
		"mov %3, %%fs\n\t"
		"ltr %w4"
		: : "m"(gdtr), "i"(SEL_KERNEL_CS), "r"(SEL_KERNEL_DS),
		    "r"(SEL_PERCPU(id)), "r"(SEL_TSS(id))
		: "memory");
}

void gdt_set_df_cr3(uint32_t cr3)
{
	for (unsigned i = 0; i < KERNEL_MAX_CPUS; i++)
		df_tss[i].cr3 = cr3;
}

void gdt_pointer(uint16_t *limit, uint32_t *base)
{
	*limit = sizeof gdt - 1;
	*base = (uint32_t)gdt;
}
