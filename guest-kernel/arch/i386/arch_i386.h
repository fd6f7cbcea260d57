/*
 * arch_i386.h — what the i386 files tell each other (not seen by core/).
 */
#ifndef ARCH_I386_H
#define ARCH_I386_H

#include <stdint.h>
#include "arch.h"
#include "trapframe.h"

void gdt_init(void);
void gdt_load(unsigned cpu);
void gdt_set_df_cr3(uint32_t cr3);
void gdt_pointer(uint16_t *limit, uint32_t *base);
void idt_init(void);
void idt_load(unsigned cpu);
void paging_init(void);
void *mm_map_mmio(uintptr_t phys);
uint32_t paging_root(void);

void pic_init(void);
void pic_unmask(unsigned irq);
void pic_mask(unsigned irq);
void pic_eoi(unsigned irq);
bool pic_spurious(unsigned irq);
void pit_set_divisor(uint16_t divisor);
uint16_t pit_read_count(void);

/* lapic.c */
void lapic_init(bool boot_cpu);
void lapic_calibrate(void);
void lapic_eoi(void);
/* Whether this timer interrupt is a tick (LAPIC_DUE_TICK), and in
 * *samples how many samples (sample.h) are due, the first *late TSC
 * cycles after its deadline, each later one a sample period less. */
#define LAPIC_DUE_TICK   1u
unsigned lapic_timer_interrupt(uint64_t *late, unsigned *samples);
uint64_t lapic_sample_period(void);
bool lapic_timer_set_hz(unsigned hz);
void lapic_timer_start_here(void);
unsigned lapic_id(void);
void lapic_send_init(unsigned apic_id);
void lapic_send_startup(unsigned apic_id, unsigned vector);
void lapic_send_fixed(unsigned apic_id, unsigned vector);
uint64_t tsc_hz(void);
void udelay(unsigned us);

/* acpi.c: hardware ids of the enabled CPUs, boot CPU first. */
unsigned acpi_find_cpus(unsigned *apic_ids, unsigned max, uint32_t *lapic_phys);

/* firmware/i386/multiboot.S */
extern uint32_t multiboot_info;

/* entry.S's C side: 0, or the ESP to move the frame to (trapframe.h). */
uint32_t trap_dispatch(struct trapframe *tf);

#endif
