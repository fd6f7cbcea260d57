/*
 * vmlayout.h — the sparc64 kernel's virtual address space, for C and for
 * the TLB miss handlers in trap_table.S.
 *
 * One flat page table of 8-byte TTEs covers VA [0, PT_PAGES * 8 KiB); any
 * address above it is unmapped by construction. Inside it:
 *   [0, 8 KiB)                    unmapped, so NULL dereferences fault
 *   [8 KiB, RAM_MAPPED)           RAM, identity-mapped (VA == PA); the
 *                                 kernel image sits at KERNEL_BASE
 *   [ALIAS_BASE, +ALIAS_SLOTS*16K) writable aliases of text pages (mmu.c)
 * The miss handlers read the table with physical loads, which is why it
 * must live in identity-mapped RAM.
 */
#ifndef SPARC64_VMLAYOUT_H
#define SPARC64_VMLAYOUT_H

#define KERNEL_BASE      0x00100000
#define RAM_MAPPED       0x10000000      /* 256 MiB (QEMU gives 128 MiB unless -m says more) */
#define ALIAS_BASE       0x12000000
#define ALIAS_SLOTS      256
#define ALIAS_SLOT_SIZE  0x4000          /* two pages: see mmu.c on D-cache colour */
#define PT_PAGES         40960           /* the table maps VA [0, 320 MiB) */
#define UNMAPPED_PROBE   0xb0000000      /* beyond the table: never mapped */

#endif
