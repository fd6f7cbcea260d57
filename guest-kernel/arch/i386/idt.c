/*
 * idt.c — the IDT and the C side of every trap.
 *
 * Every vector is an interrupt gate (IF cleared on entry) to its stub in
 * entry.S, except #DF, a task gate to the CPU's double-fault task (gdt.c) —
 * hence one IDT per CPU. trap_dispatch first runs the vector's trap hooks
 * (trap.h), an exception after offering it to the miss accounting
 * (miss_account.h: counted if its EIP is a client's). It sends interrupts to their handlers (8259 lines, the LAPIC
 * timer, IPIs) and ends each with sched_irq_exit(), which may switch
 * threads; an exception no hook handled it offers to trap_try, and dumps
 * anything left over: vector name, error code, EIP/CS/EFLAGS, every GPR,
 * CR2 for #PF, CR0/CR3, and the words at the interrupted stack pointer —
 * then exits with EXIT_UNEXPECTED_TRAP.
 */
#include "arch_i386.h"
#include "sample.h"
#include "console.h"
#include "cpu.h"
#include "exit.h"
#include "irq_hook.h"
#include "miss_account.h"
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

static struct gate idt[KERNEL_MAX_CPUS][256];
extern const uint32_t trap_stub_table[256];

#define NAME(n, mnemonic, description, err) [n] = { mnemonic, description },
static const struct { const char *mnemonic, *description; } vector_names[] = {
	EXCEPTION_VECTORS(NAME)
};

void idt_init(void)
{
	for (unsigned cpu = 0; cpu < KERNEL_MAX_CPUS; cpu++) {
		for (unsigned v = 0; v < 256; v++) {
			uint32_t stub = trap_stub_table[v];
			idt[cpu][v] = (struct gate){ stub & 0xffff, SEL_KERNEL_CS, 0,
						     GATE_INTERRUPT, stub >> 16 };
		}
		idt[cpu][VEC_DF] = (struct gate){ 0, SEL_DF_TSS(cpu), 0, GATE_TASK, 0 };
	}
}

void idt_load(unsigned cpu)
{
	struct { uint16_t limit; uint32_t base; } __attribute__((packed)) idtr = {
		sizeof idt[cpu] - 1, (uint32_t)idt[cpu],
	};
	__asm__ volatile("lidt %0" : : "m"(idtr));
}

/* Returns false for a vector no device or CPU uses. */
static bool interrupt_dispatch(unsigned vector, const struct trapframe *tf)
{
	if (vector >= PIC_VECTOR_BASE && vector < PIC_VECTOR_BASE + 16) {
		unsigned irq = vector - PIC_VECTOR_BASE;
		if (pic_spurious(irq))
			return true;
		if (irq == 4)
			uart_interrupt();
		pic_eoi(irq);
	} else if (vector == LAPIC_TIMER_VECTOR) {
		uint64_t late = 0, period = lapic_sample_period();
		unsigned samples;
		unsigned due = lapic_timer_interrupt(&late, &samples);
		for (unsigned k = 0; k < samples && sample_hook; k++)
			sample_hook(tf, late > k * period ? late - k * period : 0);
		if (due & LAPIC_DUE_TICK)
			timer_tick();
		lapic_eoi();
	} else if (vector == IPI_RESCHED_VECTOR) {
		ipi_interrupt(IPI_RESCHEDULE);
		lapic_eoi();
	} else if (vector == IPI_CALL_VECTOR) {
		ipi_interrupt(IPI_CALL);
		lapic_eoi();
	} else if (vector == KICK_VECTOR) {
		lapic_eoi();
		sched_kick_interrupt();
	} else if (vector == SPURIOUS_VECTOR) {
		return true;                      /* no EOI for a spurious one */
	} else {
		return false;
	}
	sched_irq_exit();
	return true;
}

static _Noreturn void unexpected_trap(const struct trapframe *tf)
{
	uint32_t sp = trapframe_sp(tf);

	const char *mnemonic = "INT", *description = "interrupt nobody handles";
	if (tf->vector < NUM_EXCEPTIONS) {
		mnemonic = vector_names[tf->vector].mnemonic;
		description = vector_names[tf->vector].description;
	}
	console_panic_mode();
	kprintf("\nUNEXPECTED TRAP on cpu%u: vector %u %s (%s), error code 0x%08x\n",
		this_cpu()->id, tf->vector, mnemonic, description, tf->error);
	kprintf("  EIP 0x%08x  CS 0x%04x  EFLAGS 0x%08x\n", tf->eip, tf->cs, tf->eflags);
	kprintf("  EAX 0x%08x  EBX 0x%08x  ECX 0x%08x  EDX 0x%08x\n",
		tf->eax, tf->ebx, tf->ecx, tf->edx);
	kprintf("  ESI 0x%08x  EDI 0x%08x  EBP 0x%08x  ESP 0x%08x\n",
		tf->esi, tf->edi, tf->ebp, sp);
	kprintf("  DS 0x%04x  ES 0x%04x  FS 0x%04x  GS 0x%04x\n",
		tf->ds, tf->es, tf->fs, tf->gs);
	if (tf->vector == VEC_PF)
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

/* Returns 0, or the ESP to resume with when a hook moved the stack
 * pointer (entry.S then moves the frame; trapframe.h). */
uint32_t trap_dispatch(struct trapframe *tf)
{
	unsigned vector = tf->vector;       /* a hook may reuse the slot */
	uint32_t sp = trapframe_sp(tf);

	tf->resume_esp = sp;
	if (vector < NUM_EXCEPTIONS)
		miss_account_fault(this_cpu()->id, tf->eip,
				   vector == VEC_PF ? MISS_FAULT_PAGE :
				   vector == VEC_GP ? MISS_FAULT_PROTECTION :
				   MISS_FAULT_OTHER);
	int hooks = trap_hooks_run(vector, tf);
	if (vector >= NUM_EXCEPTIONS) {
		/* The interrupt's frame on this thread's stack (irq_hook.h): its
		 * end comes after sched_irq_exit, when this thread runs again. */
		irq_hook_run(vector, false);
		if (!interrupt_dispatch(vector, tf))
			unexpected_trap(tf);
		irq_hook_run(vector, true);
		return 0;
	}
	if (hooks == TRAP_HANDLED)
		return tf->resume_esp != sp ? tf->resume_esp : 0;

	struct caught_trap trap = {
		.vector = tf->vector,
		.name = vector_names[tf->vector].mnemonic,
		.pc = tf->eip,
		.error = tf->error,
		.fault_addr = tf->vector == VEC_PF ? read_cr2() : 0,
	};
	uintptr_t landing = trap_try_intercept(&trap);
	if (landing) {
		tf->eip = landing;
		return 0;
	}
	unexpected_trap(tf);
}
