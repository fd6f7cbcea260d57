/*
 * idt.c — the IDT and the C side of every trap.
 *
 * Vectors 0..31 and the 16 IRQ vectors are interrupt gates (IF cleared on
 * entry) to the stubs of entry.S; #DF is a task gate to the double-fault
 * task (gdt.c). trap_dispatch sends IRQs to their handlers, offers each
 * exception to trap_try, and dumps anything left over: vector name, error
 * code, EIP/CS/EFLAGS, every GPR, CR2 for #PF, CR0/CR3, and the words at
 * the interrupted stack pointer — then exits with EXIT_UNEXPECTED_TRAP.
 */
#include "arch_i386.h"
#include "console.h"
#include "exit.h"
#include "mm.h"
#include "trap.h"
#include "vectors.h"
#include "x86.h"

struct gate {
	uint16_t offset_low, selector;
	uint8_t  zero, type_attr;
	uint16_t offset_high;
} __attribute__((packed));

#define GATE_INTERRUPT 0x8e    /* present, ring 0, 32-bit interrupt gate */
#define GATE_TASK      0x85    /* present, ring 0, task gate */

static struct gate idt[256];
extern const uint32_t trap_stub_table[NUM_VECTORS];

#define NAME(n, mnemonic, description, err) [n] = { mnemonic, description },
static const struct { const char *mnemonic, *description; } vector_names[] = {
	EXCEPTION_VECTORS(NAME)
};

void idt_init(void)
{
	for (unsigned v = 0; v < NUM_VECTORS; v++) {
		uint32_t stub = trap_stub_table[v];
		idt[v] = (struct gate){ stub & 0xffff, SEL_KERNEL_CS, 0, GATE_INTERRUPT,
					stub >> 16 };
	}
	idt[8] = (struct gate){ 0, SEL_DF_TSS, 0, GATE_TASK, 0 };

	struct { uint16_t limit; uint32_t base; } __attribute__((packed)) idtr = {
		sizeof idt - 1, (uint32_t)idt,
	};
	__asm__ volatile("lidt %0" : : "m"(idtr));
}

static void irq_dispatch(unsigned irq)
{
	if (pic_spurious(irq))
		return;
	switch (irq) {
	case 0:
		timer_tick();
		break;
	case 4:
		uart_interrupt();
		break;
	}
	pic_eoi(irq);
}

static _Noreturn void unexpected_trap(const struct trapframe *tf)
{
	uint32_t sp = trapframe_sp(tf);

	console_panic_mode();
	kprintf("\nUNEXPECTED TRAP on cpu%u: vector %u %s (%s), error code 0x%08x\n",
		arch_cpu_id(), tf->vector, vector_names[tf->vector].mnemonic,
		vector_names[tf->vector].description, tf->error);
	kprintf("  EIP 0x%08x  CS 0x%04x  EFLAGS 0x%08x\n", tf->eip, tf->cs, tf->eflags);
	kprintf("  EAX 0x%08x  EBX 0x%08x  ECX 0x%08x  EDX 0x%08x\n",
		tf->eax, tf->ebx, tf->ecx, tf->edx);
	kprintf("  ESI 0x%08x  EDI 0x%08x  EBP 0x%08x  ESP 0x%08x\n",
		tf->esi, tf->edi, tf->ebp, sp);
	kprintf("  DS 0x%04x  ES 0x%04x  FS 0x%04x  GS 0x%04x\n",
		tf->ds, tf->es, tf->fs, tf->gs);
	if (tf->vector == 14)
		kprintf("  CR2 0x%08x (the faulting address)\n", read_cr2());
	kprintf("  CR0 0x%08x  CR3 0x%08x\n", read_cr0(), read_cr3());
	kprintf("  stack:");
	for (unsigned i = 0; i < 8; i++) {
		const uint32_t *w = (const uint32_t *)(uintptr_t)(sp + 4 * i);
		if (mm_virt_to_phys(w) == (uintptr_t)-1) {
			kprintf(" (unmapped)");
			break;
		}
		kprintf(" %08x", *w);
	}
	kprintf("\n");
	kernel_exit(EXIT_UNEXPECTED_TRAP);
}

void trap_dispatch(struct trapframe *tf)
{
	if (tf->vector >= IRQ_BASE) {
		irq_dispatch(tf->vector - IRQ_BASE);
		return;
	}

	struct caught_trap trap = {
		.vector = tf->vector,
		.name = vector_names[tf->vector].mnemonic,
		.pc = tf->eip,
		.error = tf->error,
		.fault_addr = tf->vector == 14 ? read_cr2() : 0,
	};
	uintptr_t landing = trap_try_intercept(&trap);
	if (landing) {
		tf->eip = landing;
		return;
	}
	unexpected_trap(tf);
}
