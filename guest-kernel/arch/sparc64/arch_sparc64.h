/*
 * arch_sparc64.h — what the sparc64 files tell each other (not seen by
 * core/).
 */
#ifndef ARCH_SPARC64_H
#define ARCH_SPARC64_H

#include <stdbool.h>
#include <stdint.h>
#include "arch.h"
#include "sparc64.h"
#include "trapframe.h"

/* trap.c */
void trap_init(void);
void trap_dispatch(struct trapframe *tf);
_Noreturn void double_fault(const struct df_record *rec);
const char *trap_name(unsigned tt);
/* Where the trapped context's register r (0-31, as an instruction names
 * it) lives now — the frame for %g/%o, the save area for %l/%i — or NULL
 * if the trapped %sp is not mapped. trapframe_reg flushes the windows
 * first, so that writes through it take effect at retry; %g0 is a slot
 * like any other (tf->g[0]) and is never reloaded. */
uint64_t *trapframe_reg(struct trapframe *tf, unsigned r);
const uint64_t *trapframe_reg_read(const struct trapframe *tf, unsigned r);

/* mmu.c */
void mmu_init(void);
/* The end of identity-mapped RAM: RAM_MAPPED or the RAM QEMU has. */
uintptr_t mmu_ram_top(void);
/* Drop any TLB entry for the page of va (both MMUs). */
void mmu_demap(uintptr_t va);
/* The TTE the page table holds for va, or 0 if none. */
uint64_t mmu_lookup(uintptr_t va);
/* Hide va's page from the MMU (every data access to it traps as
 * data_access_exception) / put its TTE back (mmu.c). */
uint64_t mmu_page_hide(uintptr_t va);
void mmu_page_restore(uintptr_t va, uint64_t tte);

/* arch.c */
void timer_interrupt(const struct trapframe *tf);
void vector_interrupt(void);

/* trap_table.S: window trap counts, for the self-tests. */
extern volatile uint64_t window_spills, window_spills_other, window_fills,
	window_fills_other, window_cleans;
extern char trap_table[];
extern char trap_table_end[];   /* and the miss accounting after it */

/* Linker script. */
extern char __user_text_start[], __user_text_end[], __data_end[];
extern char boot_stack_guard[], boot_stack[], boot_stack_top[];

/* prom.S: RAM size from QEMU's reset state (0 if it gave none). */
extern uint64_t prom_ram_bytes;

#endif
