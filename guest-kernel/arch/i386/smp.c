/*
 * smp.c — finding and starting the other CPUs, the way hardware wants it.
 *
 * Discovery reads the ACPI MADT. Every secondary CPU then gets INIT once
 * (all together, so the 10 ms INIT wait is paid once), and each is started
 * in turn with STARTUP IPIs at the trampoline (trampoline.S): one CPU at a
 * time, because the trampoline's data words (stack, entry) are shared. The
 * new CPU loads its own GDT/TSS/per-CPU segment and IDT, enables its LAPIC
 * and timer, and joins the scheduler, which marks it online.
 */
#include "arch_i386.h"
#include "console.h"
#include "cpu.h"
#include "kstring.h"
#include "pages.h"
#include "thread.h"
#include "vectors.h"

extern char trampoline_start[], trampoline_end[];
extern char tramp_gdtr[], tramp_cr3[], tramp_stack[], tramp_entry[];

#define AP_STACK_PAGES 4
#define AP_FIRST_WAIT_US 100000UL   /* after the first STARTUP */
#define AP_WAIT_US     10000000UL   /* after the second */

static struct cpu *volatile booting;

static void *tramp_field(const char *label)
{
	return (char *)TRAMPOLINE_BASE + (label - trampoline_start);
}

unsigned arch_cpu_discover(void)
{
	unsigned ids[KERNEL_MAX_CPUS];
	uint32_t lapic_phys = 0;
	unsigned n = acpi_find_cpus(ids, KERNEL_MAX_CPUS, &lapic_phys);

	if (n == 0) {
		ids[0] = lapic_id();
		n = 1;
	}
	for (unsigned i = 0; i < n; i++)
		cpus[i].hw_id = ids[i];
	if (n > 1) {
		for (unsigned i = 1; i < n; i++)
			lapic_send_init(ids[i]);
		udelay(10000);
	}
	return n;
}

static void ap_main(void)
{
	struct cpu *c = booting;
	gdt_load(c->id);
	idt_load(c->id);
	lapic_init(false);
	lapic_timer_start_here();
	sched_cpu_online();
}

bool arch_cpu_start(struct cpu *c)
{
	void *stack = pages_alloc(AP_STACK_PAGES);
	if (!stack)
		return false;

	memcpy((void *)TRAMPOLINE_BASE, trampoline_start,
	       (size_t)(trampoline_end - trampoline_start));
	uint16_t limit;
	uint32_t base;
	gdt_pointer(&limit, &base);
	memcpy(tramp_field(tramp_gdtr), &limit, 2);
	memcpy(tramp_field(tramp_gdtr) + 2, &base, 4);
	*(uint32_t *)tramp_field(tramp_cr3) = paging_root();
	*(uint32_t *)tramp_field(tramp_stack) =
		(uint32_t)stack + AP_STACK_PAGES * 4096;
	c->boot_stack_lo = (uintptr_t)stack;
	c->boot_stack_hi = (uintptr_t)stack + AP_STACK_PAGES * 4096;
	*(uint32_t *)tramp_field(tramp_entry) = (uint32_t)ap_main;
	booting = c;
	arch_barrier();

	/* Two STARTUPs, as the hardware's protocol has it; then as long as
	 * Linux waits (10 s). Under TCG each vCPU is a host thread: a loaded
	 * host can leave the new one unscheduled for well over the 200 ms
	 * this once allowed (a CI boot panicked so at -smp 2). */
	for (int attempt = 0; attempt < 2 && !c->online; attempt++) {
		lapic_send_startup(c->hw_id, TRAMPOLINE_BASE >> 12);
		unsigned long wait_us = attempt ? AP_WAIT_US : AP_FIRST_WAIT_US;
		for (unsigned long waited = 0; waited < wait_us && !c->online; waited += 10)
			udelay(10);
	}
	return c->online;
}

void arch_send_ipi(unsigned cpu, enum ipi_kind kind)
{
	lapic_send_fixed(cpus[cpu].hw_id,
			 kind == IPI_RESCHEDULE ? IPI_RESCHED_VECTOR : IPI_CALL_VECTOR);
}

void arch_context_init(struct arch_context *ctx, void *stack_top, void (*entry)(void))
{
	uint32_t *sp = stack_top;
	*--sp = 0;                    /* entry's return address: it never returns */
	*--sp = (uint32_t)entry;      /* where arch_context_switch returns to */
	*--sp = 0;                    /* ebp */
	*--sp = 0;                    /* ebx */
	*--sp = 0;                    /* esi */
	*--sp = 0;                    /* edi */
	ctx->esp = (uint32_t)sp;
}
