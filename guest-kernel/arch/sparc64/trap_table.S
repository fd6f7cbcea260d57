/*
 * trap_table.S — the sparc64 trap table (TBA) and the handlers that live
 * inside it.
 *
 * 1024 entries of 32 bytes, 32 KiB aligned: entries 0x000-0x1ff are taken
 * for traps at TL 0, entries 0x200-0x3ff (TBA + 16 KiB) for traps at TL > 0.
 * Window spill/fill, clean_window and the two fast MMU misses are handled
 * in place (they get four entries, 32 instructions) in both halves,
 * because they legitimately happen inside other trap handlers: a `save` in
 * trap_entry, a spill touching a stack page the DTLB has not seen yet.
 * Every other trap goes to trap_entry (TL 0 half) and on to C, or — taken
 * at TL > 0, where nothing else is expected — to double_fault_entry.
 *
 * The MMU miss handlers walk our flat page table (vmlayout.h) with
 * physical loads, so a miss can never cause another. An unmapped
 * instruction address goes to C as fast_instruction_access_MMU_miss. An
 * unmapped data address gets a no-fault-only TTE instead and the access is
 * retried: a normal load or store to an NFO page raises
 * data_access_exception, for which the D-MMU records SFSR and SFAR — the
 * IIi records neither on a plain miss. trap.c removes that TTE again.
 * The trap table's own pages are locked in the ITLB (mmu.c): fetching a
 * miss handler must not miss. Every miss is counted, and apart those taken
 * at a PC in the code range a client registered (miss_account.h).
 *
 * Spill/fill handle the 64-bit ABI only (%sp biased by 2047); "other"
 * windows would belong to another address space, which this kernel does
 * not have, so they are spilled the same way and merely counted apart.
 */
#include "sparc64.h"
#include "trapframe.h"
#include "vmlayout.h"
#include "miss_account.h"

	.register %g2, #scratch
	.register %g3, #scratch

/* Count an event in a 64-bit counter: 4 instructions, uses %g1 and %g2 of
 * whichever global set the trap selected. */
	.macro COUNT counter
	sethi	%hi(\counter), %g1
	ldx	[%g1 + %lo(\counter)], %g2
	add	%g2, 1, %g2
	stx	%g2, [%g1 + %lo(\counter)]
	.endm

	.macro TRAP_TO label
	ba,pt	%xcc, \label
	 nop
	.balign 32
	.endm

	.macro TRAPS_TO label, count
	.rept \count
	TRAP_TO \label
	.endr
	.endm

/* spill_0_normal / spill_0_other: this window's %l and %i to its save area;
 * window_spill_count counts it (%g1: the counter), then `saved`, `retry`. */
	.macro SPILL_64 counter
	STORE_WINDOW
	sethi	%hi(\counter), %g1
	ba,pt	%xcc, window_spill_count
	 or	%g1, %lo(\counter), %g1
	.balign 32
	.endm

/* fill_0_normal / fill_0_other: the inverse. */
	.macro FILL_64 counter
	ldx	[%sp + STACK_BIAS + 0x00], %l0
	ldx	[%sp + STACK_BIAS + 0x08], %l1
	ldx	[%sp + STACK_BIAS + 0x10], %l2
	ldx	[%sp + STACK_BIAS + 0x18], %l3
	ldx	[%sp + STACK_BIAS + 0x20], %l4
	ldx	[%sp + STACK_BIAS + 0x28], %l5
	ldx	[%sp + STACK_BIAS + 0x30], %l6
	ldx	[%sp + STACK_BIAS + 0x38], %l7
	ldx	[%sp + STACK_BIAS + 0x40], %i0
	ldx	[%sp + STACK_BIAS + 0x48], %i1
	ldx	[%sp + STACK_BIAS + 0x50], %i2
	ldx	[%sp + STACK_BIAS + 0x58], %i3
	ldx	[%sp + STACK_BIAS + 0x60], %i4
	ldx	[%sp + STACK_BIAS + 0x68], %i5
	ldx	[%sp + STACK_BIAS + 0x70], %i6
	ldx	[%sp + STACK_BIAS + 0x78], %i7
	sethi	%hi(\counter), %g1
	ba,pt	%xcc, window_fill_count
	 or	%g1, %lo(\counter), %g1
	.balign 32
	.endm

/* clean_window: a `save` found no clean window (CLEANWIN == CANRESTORE).
 * The trap runs in the window about to be handed out: zero its %l and %o
 * (its %i are the caller's %o), count it clean, and let the save retry. */
	.macro CLEAN_WINDOW
	rdpr	%cleanwin, %l0
	add	%l0, 1, %l0
	wrpr	%l0, 0, %cleanwin
	clr	%l0
	clr	%l1
	clr	%l2
	clr	%l3
	clr	%l4
	clr	%l5
	clr	%l6
	clr	%l7
	clr	%o0
	clr	%o1
	clr	%o2
	clr	%o3
	clr	%o4
	clr	%o5
	clr	%o6
	clr	%o7
	COUNT	window_cleans
	retry
	.balign 32
	.endm

/* Look up the TAG_ACCESS address of MMU \mmu_asi in the page table:
 * %g2 = its TTE, or a branch to local label 1 if it is unmapped. */
	.macro PT_LOOKUP mmu_asi
	mov	MMU_TAG_ACCESS, %g1
	ldxa	[%g1] \mmu_asi, %g1          /* VA<63:13> | context */
	srlx	%g1, PAGE_SHIFT, %g2
	sethi	%hi(PT_PAGES), %g3
	cmp	%g2, %g3
	bgeu,pn	%xcc, 1f
	 sllx	%g2, 3, %g2
	sethi	%hi(page_table), %g3
	or	%g3, %lo(page_table), %g3
	ldxa	[%g3 + %g2] ASI_PHYS_USE_EC, %g2
	brgez,pn %g2, 1f                     /* TTE_V is the sign bit */
	 nop
	.endm

	.macro IMMU_MISS unmapped
	PT_LOOKUP ASI_IMMU
	stxa	%g2, [%g0] ASI_ITLB_DATA_IN  /* tag comes from TAG_ACCESS */
	ba,pt	%xcc, immu_miss_count        /* counts, then retries */
	 nop
1:	ba,pt	%xcc, \unmapped
	 nop
	.balign 32
	.endm

	.macro DMMU_MISS
	PT_LOOKUP ASI_DMMU
	andcc	%g2, TTE_XO, %g0             /* execute-only: served or refused */
	bnz,pn	%xcc, dmmu_miss_xo
	 nop
	stxa	%g2, [%g0] ASI_DTLB_DATA_IN
	ba,pt	%xcc, dmmu_miss_count        /* counts, then retries */
	 nop
1:	sethi	%hi(0x90000000), %g2         /* TTE_V | TTE_NFO, PA 0 */
	sllx	%g2, 32, %g2
	or	%g2, TTE_P, %g2
	stxa	%g2, [%g0] ASI_DTLB_DATA_IN
	ba,pt	%xcc, dmmu_miss_count
	 nop
	.balign 32
	.endm

/* One half of the table; \other is where unhandled traps go. */
	.macro TABLE_HALF base, other
	TRAPS_TO \other, 0x24
	.org	\base + 0x024 * 32
	CLEAN_WINDOW
	.org	\base + 0x028 * 32
	TRAPS_TO \other, 0x64 - 0x28
	.org	\base + 0x064 * 32
	IMMU_MISS \other
	.org	\base + 0x068 * 32
	DMMU_MISS
	.org	\base + 0x06c * 32
	TRAPS_TO \other, 0x80 - 0x6c
	.org	\base + 0x080 * 32
	SPILL_64 window_spills
	.org	\base + 0x084 * 32
	TRAPS_TO \other, 0xa0 - 0x84
	.org	\base + 0x0a0 * 32
	SPILL_64 window_spills_other
	.org	\base + 0x0a4 * 32
	TRAPS_TO \other, 0xc0 - 0xa4
	.org	\base + 0x0c0 * 32
	FILL_64 window_fills
	.org	\base + 0x0c4 * 32
	TRAPS_TO \other, 0xe0 - 0xc4
	.org	\base + 0x0e0 * 32
	FILL_64 window_fills_other
	.org	\base + 0x0e4 * 32
	TRAPS_TO \other, 0x200 - 0xe4
	.org	\base + 0x200 * 32
	.endm

	.section .traptable, "ax"
	.balign	32768
FUNC(trap_table)
	TABLE_HALF trap_table, trap_entry
	END(trap_table)
FUNC(tl1_table)
	TABLE_HALF tl1_table, double_fault_entry
	END(tl1_table)

/* The miss handlers' accounting (miss_account.h), out of the table for
 * room, in the same locked ITLB pages (mmu.c locks up to trap_table_end).
 * Both halves branch here once the TTE is in the TLB. Physical loads and
 * stores of the identity-mapped struct, so counting never misses itself;
 * %asi and the condition codes are the trapped context's, restored from
 * TSTATE by `retry`. sun4u has one CPU: cpu[0]'s counters. %g1-%g5 are
 * the MMU globals, the handler's own. */
	.macro COUNT_PHYS reg, off
	ldxa	[\reg + \off] %asi, %g4
	add	%g4, 1, %g4
	stxa	%g4, [\reg + \off] %asi
	.endm

	/* Branch to \out unless TPC lies in the registered code range. */
	.macro IF_TPC_IN_CODE reg, out
	rdpr	%tpc, %g4
	ldxa	[\reg + MA_CODE_LO] %asi, %g5
	sub	%g4, %g5, %g4
	ldxa	[\reg + MA_CODE_LEN] %asi, %g5
	cmp	%g4, %g5
	bgeu,pt	%xcc, \out
	 nop
	.endm

FUNC(immu_miss_count)
	sethi	%hi(miss_account), %g3
	or	%g3, %lo(miss_account), %g3
	wr	%g0, ASI_PHYS_USE_EC, %asi
	COUNT_PHYS %g3, MA_CPU0 + MC_ITLB_ALL
	IF_TPC_IN_CODE %g3, 9f
	COUNT_PHYS %g3, MA_CPU0 + MC_ITLB
9:	retry
	END(immu_miss_count)

/* %g1 = D-TAG_ACCESS of the miss: the page's VA | context (0). */
FUNC(dmmu_miss_count)
	sethi	%hi(miss_account), %g3
	or	%g3, %lo(miss_account), %g3
	wr	%g0, ASI_PHYS_USE_EC, %asi
	COUNT_PHYS %g3, MA_CPU0 + MC_DTLB_ALL
	IF_TPC_IN_CODE %g3, 9f
	COUNT_PHYS %g3, MA_CPU0 + MC_DTLB
	ldxa	[%g3 + MA_CPU0 + MC_SEEN_N] %asi, %g4   /* the page, into seen[] */
	add	%g4, 1, %g5
	stxa	%g5, [%g3 + MA_CPU0 + MC_SEEN_N] %asi
	and	%g4, MC_SEEN_SLOTS - 1, %g4
	sllx	%g4, 3, %g4
	add	%g4, %g3, %g4
	srlx	%g1, PAGE_SHIFT, %g5
	sllx	%g5, PAGE_SHIFT, %g5
	stxa	%g5, [%g4 + MA_CPU0 + MC_SEEN] %asi
	ldxa	[%g3 + MA_CPU0 + MC_DATA_LO] %asi, %g5
	sub	%g1, %g5, %g4
	ldxa	[%g3 + MA_CPU0 + MC_DATA_LEN] %asi, %g5
	cmp	%g4, %g5
	bgeu,pt	%xcc, 9f
	 nop
	COUNT_PHYS %g3, MA_CPU0 + MC_DTLB_DATA
9:	retry
	END(dmmu_miss_count)

/* A data access to an execute-only page (TTE_XO, %g2 its TTE): the
 * translation is loaded for the registered code range when it asked for
 * that (MA_SERVE_XO: seed 003's Fig. 2 extension, counted in
 * MC_XO_SERVED); any other access gets the no-fault-only TTE of an
 * unmapped page, and so data_access_exception (trap.c takes it out). */
FUNC(dmmu_miss_xo)
	sethi	%hi(miss_account), %g3
	or	%g3, %lo(miss_account), %g3
	wr	%g0, ASI_PHYS_USE_EC, %asi
	ldxa	[%g3 + MA_SERVE_XO] %asi, %g4
	brz,pn	%g4, 8f
	 nop
	IF_TPC_IN_CODE %g3, 8f
	COUNT_PHYS %g3, MA_CPU0 + MC_XO_SERVED
	stxa	%g2, [%g0] ASI_DTLB_DATA_IN
	ba,pt	%xcc, dmmu_miss_count
	 nop
8:	sethi	%hi(0x90000000), %g2         /* TTE_V | TTE_NFO, PA 0 */
	sllx	%g2, 32, %g2
	or	%g2, TTE_P, %g2
	stxa	%g2, [%g0] ASI_DTLB_DATA_IN
	ba,pt	%xcc, dmmu_miss_count
	 nop
	END(dmmu_miss_xo)

/* Spill and fill, after the window moved: count the trap in the counter
 * at %g1 (the self-tests read those) and, if the `save`/`restore` that
 * caused it is in the registered code range, in MC_WINDOW; the alternate
 * globals are the handler's own. */
	.macro WINDOW_COUNT
	ldx	[%g1], %g2
	add	%g2, 1, %g2
	stx	%g2, [%g1]
	sethi	%hi(miss_account), %g3
	or	%g3, %lo(miss_account), %g3
	wr	%g0, ASI_PHYS_USE_EC, %asi
	IF_TPC_IN_CODE %g3, 9f
	COUNT_PHYS %g3, MA_CPU0 + MC_WINDOW
9:
	.endm

FUNC(window_spill_count)
	WINDOW_COUNT
	saved
	retry
	END(window_spill_count)

FUNC(window_fill_count)
	WINDOW_COUNT
	restored
	retry
	END(window_fill_count)
	.global	trap_table_end
trap_table_end:

/* Window trap counters (arch_sparc64.h), read by the self-tests. */
	.section .bss
	.balign	8
	.global	window_spills, window_spills_other, window_fills
	.global	window_fills_other, window_cleans
window_spills:		.skip 8
window_spills_other:	.skip 8
window_fills:		.skip 8
window_fills_other:	.skip 8
window_cleans:		.skip 8
