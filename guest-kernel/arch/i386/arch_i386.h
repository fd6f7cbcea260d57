/*
 * arch_i386.h — what the i386 files tell each other (not seen by core/).
 */
#ifndef ARCH_I386_H
#define ARCH_I386_H

#include <stdint.h>
#include "arch.h"
#include "trapframe.h"

void gdt_init(void);
void gdt_set_df_cr3(uint32_t cr3);
void idt_init(void);
void paging_init(void);
void pic_init(void);
void pic_unmask(unsigned irq);
void pic_eoi(unsigned irq);
bool pic_spurious(unsigned irq);
void pit_set_divisor(uint16_t divisor);

void trap_dispatch(struct trapframe *tf);

#endif
