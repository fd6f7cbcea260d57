/*
 * sparc64.h — SPARC V9 / UltraSPARC IIi names the port uses, once, for C
 * and assembly: PSTATE and TSTATE fields, the ASIs and MMU register
 * addresses, TTE bits, SOFTINT bits, and the physical addresses of the
 * sun4u devices we touch. Names follow the SPARC V9 manual and the
 * UltraSPARC IIi User's Manual. Below the constants, C gets the privileged
 * instructions as inline functions named after the instruction.
 */
#ifndef SPARC64_SPARC64_H
#define SPARC64_SPARC64_H

#ifdef __ASSEMBLY__
#define UL(x) x
/* A global function with an ELF type and size, so the host can name the
 * code behind an address in a trap dump. */
#define FUNC(name) .global name; .type name, #function; name:
#define END(name) .size name, . - name
#else
#define UL(x) x##ul
#endif

/* PSTATE (V9 5.2.1; AG/MG/IG are UltraSPARC's three extra global sets). */
#define PSTATE_AG    0x001
#define PSTATE_IE    0x002
#define PSTATE_PRIV  0x004
#define PSTATE_AM    0x008
#define PSTATE_PEF   0x010
#define PSTATE_RED   0x020
#define PSTATE_MG    0x400
#define PSTATE_IG    0x800

/* TSTATE = CCR<<32 | ASI<<24 | PSTATE<<8 | CWP */
#define TSTATE_PSTATE_SHIFT 8
#define TSTATE_CWP_MASK     0x1f

/* The 64-bit ABI: %sp and %fp point 2047 bytes below the frame; a frame
 * starts with the 16-register save area a spill writes (V9 ABI). */
#define STACK_BIAS   2047
#define STACK_FRAME  176          /* 16 saved registers + 6 argument words */

/* Address space identifiers. */
#define ASI_PHYS_USE_EC        0x14   /* physical, cacheable */
#define ASI_PHYS_BYPASS_EC_E   0x15   /* physical, uncached, side effects */
#define ASI_LSU_CONTROL        0x45
#define ASI_IMMU               0x50
#define ASI_ITLB_DATA_IN       0x54
#define ASI_ITLB_DATA_ACCESS   0x55   /* entry n at VA n << 3 */
#define ASI_ITLB_TAG_READ      0x56
#define ASI_IMMU_DEMAP         0x57
#define ASI_DMMU               0x58
#define ASI_DTLB_DATA_IN       0x5c
#define ASI_DMMU_DEMAP         0x5f
#define ASI_INTR_RECEIVE       0x49   /* interrupt vector receive status (busy) */
#define ASI_INTR_R             0x7f   /* incoming interrupt vector data */
#define INTR_DATA0             0x40   /* its first word: IGN<<6 | INO */

/* Register addresses within ASI_IMMU / ASI_DMMU. */
#define MMU_PRIMARY_CONTEXT    0x08
#define MMU_SECONDARY_CONTEXT  0x10
#define MMU_SFSR               0x18
#define MMU_SFAR               0x20   /* D-MMU only */
#define MMU_TAG_ACCESS         0x30

/* LSU control register: caches and MMUs on. */
#define LSU_IC 0x1
#define LSU_DC 0x2
#define LSU_IM 0x4
#define LSU_DM 0x8

/* Demap address low bits: page demap in the nucleus context. */
#define DEMAP_PAGE_NUCLEUS 0x20

/* Translation table entry (sun4u TTE data word). */
#define TTE_V    (UL(1) << 63)
#define TTE_NFO  (UL(1) << 60)
#define TTE_PA_MASK UL(0x000001ffffffe000)
#define TLB_ENTRIES 64
#define TTE_L    0x40
#define TTE_CP   0x20
#define TTE_CV   0x10
#define TTE_E    0x08
#define TTE_P    0x04
#define TTE_W    0x02
#define TTE_XO   0x80   /* a soft bit (TTE.Soft<12:7>): execute-only, mmu.c */

/* SOFTINT (ASR 22): bit 0 is TICK_INT (%tick reached TICK_CMPR), bits
 * 1..15 are the software interrupt levels. */
#define SOFTINT_TICK_INT 0x1
#define TICK_CMPR_INT_DIS (UL(1) << 63)
#define TICK_NPT          (UL(1) << 63)

/* Trap types several files refer to (trap.c has the named list). */
#define TT_ILLEGAL_INSTRUCTION 0x10
#define TT_INTERRUPT_LEVEL_14 0x4e
/* arch_self_interrupt: software interrupt level 13 (SOFTINT bit 13, trap
 * type 0x40 + 13), just below the tick's 14. */
#define KICK_LEVEL            13
#define TT_INTERRUPT_KICK     (0x40 + KICK_LEVEL)
#define TT_INTERRUPT_VECTOR   0x60

/* sun4u devices: the ebus ISA I/O space starts at physical 0x1fe02000000;
 * the PC-style serial ports sit at their ISA port numbers within it. */
#define SUN4U_ISA_IO     UL(0x1fe02000000)
#define SUN4U_COM1       (SUN4U_ISA_IO + 0x3f8)
#define SUN4U_COM2       (SUN4U_ISA_IO + 0x2f8)

/* The sabre (psycho-class) PCI host bridge's registers: each on-board
 * (OBIO) interrupt has an interrupt map register, whose bit 31 (V) lets it
 * send interrupt vectors, and a clear register that returns it to idle.
 * The 32-bit value sits in the second half of each 8-byte register. The
 * ebus UART (ISA IRQ 4) is OBIO interrupt number 0x2b. */
#define SABRE_BASE        UL(0x1fe00000000)
#define SABRE_OBIO_IMR(ino) (SABRE_BASE + 0x1000 + ((ino) & 0x1f) * 8 + 4)
#define SABRE_OBIO_ICR(ino) (SABRE_BASE + 0x1800 + ((ino) & 0x1f) * 8 + 4)
#define SABRE_IMR_V       0x80000000
#define SABRE_ICR_IDLE    0
#define INO_SERIAL        0x2b
#define INTR_INO_MASK     0x3f

/* QEMU's sun4u %tick runs at 100 MHz of guest time (hw/sparc64/sparc64.c). */
#define TICK_HZ UL(100000000)

/* MMU page: the 8 KiB base page of sun4u. */
#define PAGE_SHIFT 13
#define PAGE_SIZE  (UL(1) << PAGE_SHIFT)

#ifdef __ASSEMBLY__
/* This window's %l and %i into its register save area at %sp + BIAS, as
 * a spill stores them (trap_table.S's spill handlers, trap_entry.S). */
	.macro STORE_WINDOW
	stx	%l0, [%sp + STACK_BIAS + 0x00]
	stx	%l1, [%sp + STACK_BIAS + 0x08]
	stx	%l2, [%sp + STACK_BIAS + 0x10]
	stx	%l3, [%sp + STACK_BIAS + 0x18]
	stx	%l4, [%sp + STACK_BIAS + 0x20]
	stx	%l5, [%sp + STACK_BIAS + 0x28]
	stx	%l6, [%sp + STACK_BIAS + 0x30]
	stx	%l7, [%sp + STACK_BIAS + 0x38]
	stx	%i0, [%sp + STACK_BIAS + 0x40]
	stx	%i1, [%sp + STACK_BIAS + 0x48]
	stx	%i2, [%sp + STACK_BIAS + 0x50]
	stx	%i3, [%sp + STACK_BIAS + 0x58]
	stx	%i4, [%sp + STACK_BIAS + 0x60]
	stx	%i5, [%sp + STACK_BIAS + 0x68]
	stx	%i6, [%sp + STACK_BIAS + 0x70]
	stx	%i7, [%sp + STACK_BIAS + 0x78]
	.endm
#endif

#ifndef __ASSEMBLY__
#include <stdint.h>

#define rdpr(reg) ({ uint64_t v__; \
	__asm__ volatile("rdpr %%" #reg ", %0" : "=r"(v__)); v__; })
#define wrpr(reg, val) \
	__asm__ volatile("wrpr %0, 0, %%" #reg : : "r"((uint64_t)(val)) : "memory")

static inline uint64_t rd_tick(void)
{
	uint64_t v;
	__asm__ volatile("rd %%tick, %0" : "=r"(v));
	return v & ~TICK_NPT;
}

static inline void wr_tick_cmpr(uint64_t v)
{
	__asm__ volatile("wr %0, 0, %%asr23" : : "r"(v));
}

/* %stick (ASR 24) and STICK_CMPR (ASR 25): a second clock and compare,
 * whose match sets SOFTINT.STICK_INT (bit 16), also at level 14. */
#define SOFTINT_STICK_INT (1ul << 16)

static inline uint64_t rd_stick(void)
{
	uint64_t v;
	__asm__ volatile("rd %%asr24, %0" : "=r"(v));
	return v & ~TICK_NPT;
}

static inline void wr_stick_cmpr(uint64_t v)
{
	__asm__ volatile("wr %0, 0, %%asr25" : : "r"(v));
}

static inline uint64_t rd_softint(void)
{
	uint64_t v;
	__asm__ volatile("rd %%asr22, %0" : "=r"(v));
	return v;
}

static inline void wr_clear_softint(uint64_t bits)
{
	__asm__ volatile("wr %0, 0, %%asr21" : : "r"(bits));
}

/* SET_SOFTINT (ASR 20): raise software interrupt levels. */
static inline void wr_set_softint(uint64_t bits)
{
	__asm__ volatile("wr %0, 0, %%asr20" : : "r"(bits));
}

static inline uint8_t lduba_phys(uint64_t pa)
{
	uint8_t v;
	__asm__ volatile("lduba [%1] 0x15, %0" : "=r"(v) : "r"(pa) : "memory");
	return v;
}

static inline void stba_phys(uint64_t pa, uint8_t v)
{
	__asm__ volatile("stba %0, [%1] 0x15" : : "r"(v), "r"(pa) : "memory");
}

static inline void stwa_phys(uint64_t pa, uint32_t v)
{
	__asm__ volatile("stwa %0, [%1] 0x15" : : "r"(v), "r"(pa) : "memory");
}

/* MMU registers: ldxa/stxa at a register address within an MMU ASI. A
 * store to an MMU register takes effect at the next membar #Sync. */
#define SPARC_STR_(x) #x
#define SPARC_STR(x) SPARC_STR_(x)
#define ldxa_asi(addr, asi) ({ uint64_t v__; \
	__asm__ volatile("ldxa [%1] " SPARC_STR(asi) ", %0" \
			 : "=r"(v__) : "r"((uint64_t)(addr)) : "memory"); v__; })
#define stxa_asi(val, addr, asi) \
	__asm__ volatile("stxa %0, [%1] " SPARC_STR(asi) "\n\tmembar #Sync" \
			 : : "r"((uint64_t)(val)), "r"((uint64_t)(addr)) : "memory")

/* Make stores to code visible to instruction fetch (V9 FLUSH). */
static inline void flush_insn(const void *va)
{
	__asm__ volatile("flush %0" : : "r"(va) : "memory");
}

static inline void flushw(void)
{
	__asm__ volatile("flushw" ::: "memory");
}
#endif

#endif
