/*
 * gdt.c — our own GDT: flat ring-0 code and data, the main TSS, and a
 * second TSS for the double-fault task.
 *
 * Ring 0 only, so the main TSS carries no stack for privilege changes; it
 * exists because a task switch needs somewhere to save the state that
 * faulted. #DF goes through a task gate (idt.c) to df_tss, which has its
 * own stack: a double fault caused by a bad ESP still runs on good memory,
 * reads the faulting state out of main_tss, prints it and exits.
 */
#include <stdint.h>
#include "arch_i386.h"
#include "console.h"
#include "exit.h"
#include "vectors.h"
#include "x86.h"

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
static struct tss main_tss, df_tss;
static uint8_t df_stack[8192] __attribute__((aligned(16)));

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
	console_panic_mode();
	kprintf("\nUNEXPECTED TRAP on cpu%u: vector 8 #DF (double fault)\n"
		"  state at the fault (saved by the task switch):\n"
		"  EIP 0x%08x  CS 0x%04x  EFLAGS 0x%08x\n"
		"  EAX 0x%08x  EBX 0x%08x  ECX 0x%08x  EDX 0x%08x\n"
		"  ESI 0x%08x  EDI 0x%08x  EBP 0x%08x  ESP 0x%08x\n"
		"  CR2 0x%08x  CR3 0x%08x\n",
		arch_cpu_id(), main_tss.eip, main_tss.cs, main_tss.eflags,
		main_tss.eax, main_tss.ebx, main_tss.ecx, main_tss.edx,
		main_tss.esi, main_tss.edi, main_tss.ebp, main_tss.esp,
		read_cr2(), read_cr3());
	kernel_exit(EXIT_DOUBLE_FAULT);
}

void gdt_init(void)
{
	gdt[0] = 0;
	gdt[SEL_KERNEL_CS >> 3] = descriptor(0, 0xfffff, 0x9a, 0xc);
	gdt[SEL_KERNEL_DS >> 3] = descriptor(0, 0xfffff, 0x92, 0xc);
	gdt[SEL_TSS >> 3] = descriptor((uint32_t)&main_tss, sizeof main_tss - 1, 0x89, 0);
	gdt[SEL_DF_TSS >> 3] = descriptor((uint32_t)&df_tss, sizeof df_tss - 1, 0x89, 0);

	main_tss.iomap_base = sizeof main_tss;
	df_tss.iomap_base = sizeof df_tss;
	df_tss.eip = (uint32_t)double_fault_task;
	df_tss.esp = (uint32_t)(df_stack + sizeof df_stack);
	df_tss.eflags = 0x2;                 /* interrupts off */
	df_tss.cs = SEL_KERNEL_CS;
	df_tss.ds = df_tss.es = df_tss.ss = df_tss.fs = df_tss.gs = SEL_KERNEL_DS;

	struct { uint16_t limit; uint32_t base; } __attribute__((packed)) gdtr = {
		sizeof gdt - 1, (uint32_t)gdt,
	};
	__asm__ volatile(
		"lgdt %0\n\t"
		"ljmp %1, $1f\n"
		"1:\n\t"
		"mov %2, %%ds\n\t"
		"mov %2, %%es\n\t"
		"mov %2, %%fs\n\t"
		"mov %2, %%gs\n\t"
		"mov %2, %%ss\n\t"
		"ltr %w3"
		: : "m"(gdtr), "i"(SEL_KERNEL_CS), "r"(SEL_KERNEL_DS), "r"(SEL_TSS)
		: "memory");
}

void gdt_set_df_cr3(uint32_t cr3)
{
	df_tss.cr3 = cr3;
}
